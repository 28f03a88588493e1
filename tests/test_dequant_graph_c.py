"""The graph scheme of the dequantizer in C (ADR-055, "The graph scheme"):
tests/c/test_dequant_graph.c over random version-2 graphs and the formats
of v2-spec.md § 6, compared with the numpy oracle (tests/support/
graph_oracle.py) bit for bit.

The program runs against the installed library on both paths (the AVX2
one and HURRAY_DEQUANT_PATH=scalar), under AddressSanitizer and UBSan on
both paths with every buffer malloc'ed to its exact length, and under
valgrind. Each run also checks row ranges and a two-thread split against
the whole, and the refusals (an output or a buffer one byte short, a group
or gather index out of range) with nothing written.
"""
import pytest

from support.cbuild import (
    C_TESTS,
    STRICT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)
from support.graph_cases import expected, random_cases, split_outputs, write_case_file
from support.graph_formats import format_cases
from support.graph_oracle import mismatches

SOURCE = C_TESTS / "test_dequant_graph.c"
NAME = "test_dequant_graph"
OUT_DTYPES = ("float32", "float16", "bfloat16")


@pytest.fixture(scope="module")
def cases():
    return random_cases(300, seed=2055, packed=150) + format_cases()


@pytest.fixture(scope="module")
def case_file(cases, tmp_path_factory):
    path = tmp_path_factory.mktemp("graph_cases") / "cases.bin"
    write_case_file(path, cases)
    return path


@pytest.fixture(scope="module")
def small_case_file(cases, tmp_path_factory):
    """A fifth of the cases, for valgrind."""
    few = cases[::5]
    path = tmp_path_factory.mktemp("graph_cases_small") / "cases.bin"
    write_case_file(path, few)
    return path, few


@pytest.fixture(scope="module")
def installed_binary(tmp_path_factory):
    return build_installed(SOURCE, tmp_path_factory.mktemp("c_graph") / NAME, [*STRICT, "-g"])


@pytest.fixture(scope="module")
def sanitized_binary(tmp_path_factory):
    return build_sanitized(SOURCE, tmp_path_factory.mktemp("c_graph_asan") / NAME, STRICT,
                           library_sources())


def compare(cases, out_path):
    outputs = split_outputs(out_path.read_bytes(), cases)
    failures = []
    for k, (case, got) in enumerate(zip(cases, outputs)):
        for out_dtype in OUT_DTYPES:
            bad = mismatches(got[out_dtype], expected(case, out_dtype), out_dtype)
            if len(bad):
                failures.append(f"case {k} ({case.graph.name or 'random'}) {out_dtype}: {len(bad)} of "
                                f"{case.elements} differ, first at {bad[0]}")
    assert not failures, "\n".join(failures[:20])


def env_for(path):
    return {"HURRAY_DEQUANT_PATH": "scalar"} if path == "scalar" else {}


@pytest.mark.parametrize("path", ["best", "scalar"])
def test_against_installed_library(installed_binary, case_file, cases, tmp_path, path, monkeypatch):
    monkeypatch.delenv("HURRAY_DEQUANT_PATH", raising=False)
    for key, value in env_for(path).items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out.bin"
    result = run_checked([str(installed_binary), str(case_file), str(out)], timeout=600)
    assert_checks_passed(result, NAME, 10 * len(cases))
    compare(cases, out)


@pytest.mark.parametrize("path", ["best", "scalar"])
def test_under_address_and_undefined_sanitizers(sanitized_binary, case_file, cases, tmp_path, path,
                                                monkeypatch):
    monkeypatch.delenv("HURRAY_DEQUANT_PATH", raising=False)
    for key, value in env_for(path).items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "out.bin"
    result = run_sanitized(sanitized_binary, "detect_leaks=1", args=(case_file, out), timeout=900)
    assert_checks_passed(result, NAME, 10 * len(cases))
    compare(cases, out)


def test_under_valgrind(installed_binary, small_case_file, tmp_path):
    path, few = small_case_file
    out = tmp_path / "out.bin"
    result = run_under_valgrind(installed_binary, "1", timeout=1800, args=(path, out))
    assert_checks_passed(result, NAME, 10 * len(few))
    compare(few, out)


def test_the_cases_reach_every_kind_and_addressing(cases):
    # The random graphs must keep covering what they claim to cover.
    from support.graph_spec import Step, Stored

    seen = set()
    for case in cases:
        for node in case.graph.nodes:
            seen.add(type(node).__name__)
            if isinstance(node, Stored):
                seen.add("words-" + node.packing if node.words else "elements-" + str(node.packing))
                seen.add("planar" if node.planar else "")
                seen |= {"swizzled"} if node.swizzled else set()
                seen |= {"codebook"} if node.codebook else set()
                seen |= {"big"} if node.big_endian else set()
                seen |= {"no_nan"} if node.no_nan else set()
                seen |= {"code_offset"} if node.code_offset else set()
            if isinstance(node, Step):
                seen |= {node.form, node.arithmetic}
                seen |= {"ragged"} if node.ragged else set()
                seen |= {"indexed"} if node.group_index else set()
    for need in ["Stored", "Constant", "Step", "Ggml", "Bits", "Gather", "words-dense", "words-slots",
                 "elements-padded", "elements-lsb_first", "elements-ggml_split", "planar", "swizzled",
                 "codebook", "big", "no_nan", "code_offset", "mul", "div", "sub_mul", "mul_add",
                 "mul_sub", "float16", "bfloat16", "float32", "float64", "ragged", "indexed"]:
        assert need in seen, need
    assert any(c.bad is not None for c in cases) and any(c.short_buffer is not None for c in cases)


def test_a_broken_oracle_comparison_fails(cases, installed_binary, case_file, tmp_path):
    # The comparison can fail: one flipped bit in the C output is found.
    out = tmp_path / "out.bin"
    run_checked([str(installed_binary), str(case_file), str(out)], timeout=600)
    data = bytearray(out.read_bytes())
    data[0] ^= 1
    out.write_bytes(bytes(data))
    with pytest.raises(AssertionError, match="differ"):
        compare(cases, out)
