"""The dequantizer in C (ADR-055): tests/c/test_dequant.c and tests/c/test_dequant_tables.c.

test_dequant.c runs against the installed library, under AddressSanitizer
and UBSan on both paths (the AVX2 one and HURRAY_DEQUANT_PATH=scalar), under
valgrind, and its threads under ThreadSanitizer; its digest of every scheme
and GGML type must be the same on both paths. test_dequant_tables.c reads the
library's internals (the grids, the kernels of each path). The contraction
probe shows what -ffp-contract=off prevents, and every build of the library
is checked to carry it.
"""
import ast
import re
import subprocess

import pytest

from support.cbuild import (
    C_TESTS,
    CC,
    LIBRARY_FLAGS,
    NATIVE,
    ROOT,
    SANITIZE,
    STRICT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)

SOURCE = C_TESTS / "test_dequant.c"
TABLES = C_TESTS / "test_dequant_tables.c"
NAME = "test_dequant"
# The row splits alone make hundreds of thousands of checks.
MIN_CHECKS = 100_000
INTERNAL = [*STRICT, "-I", str(NATIVE / "src")]


@pytest.fixture(scope="module")
def installed_binary(tmp_path_factory):
    return build_installed(SOURCE, tmp_path_factory.mktemp("c_dequant") / NAME, [*STRICT, "-g"])


@pytest.fixture(scope="module")
def sanitized_binary(tmp_path_factory):
    sources = library_sources()
    assert any(p.endswith("dequant_ggml_avx2.c") for p in sources)
    return build_sanitized(SOURCE, tmp_path_factory.mktemp("c_dequant_asan") / NAME, STRICT, sources)


def test_against_installed_library(installed_binary):
    assert_checks_passed(run_checked([str(installed_binary)], timeout=300), NAME, MIN_CHECKS)


@pytest.mark.parametrize("path", ["best", "scalar"])
def test_under_address_and_undefined_sanitizers(sanitized_binary, path, monkeypatch):
    if path == "scalar":
        monkeypatch.setenv("HURRAY_DEQUANT_PATH", "scalar")
    else:
        monkeypatch.delenv("HURRAY_DEQUANT_PATH", raising=False)
    assert_checks_passed(run_sanitized(sanitized_binary, "detect_leaks=1"), NAME, MIN_CHECKS)


def test_under_valgrind(installed_binary):
    assert_checks_passed(run_under_valgrind(installed_binary, "8", timeout=900), NAME, 10_000)


def test_threads_under_thread_sanitizer(tmp_path):
    # Threads that dequantize rows of one descriptor at once, on a descriptor
    # never validated (each call checks it without recording) and on one
    # validated first: ThreadSanitizer must see no race.
    exe = tmp_path / "test_dequant_tsan"
    result = subprocess.run([CC, *STRICT, *LIBRARY_FLAGS, "-g", "-O1", "-fsanitize=thread",
                             "-I", str(NATIVE / "include"), str(SOURCE), *library_sources(), "-o", str(exe)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (
        "building with -fsanitize=thread failed (ThreadSanitizer needs libtsan: install the "
        f"compiler's tsan runtime, e.g. apt-get install libtsan2):\n{result.stderr}"
    )
    run = subprocess.run([str(exe), "threads"], capture_output=True, text=True, timeout=600,
                         env={"TSAN_OPTIONS": "halt_on_error=1"})
    assert run.returncode == 0 and "ThreadSanitizer" not in run.stderr, run.stdout + run.stderr
    assert_checks_passed(run, NAME, 1000)


def test_scalar_and_vector_paths_give_the_same_bytes(installed_binary):
    best = run_checked([str(installed_binary), "digest"], timeout=120).stdout
    scalar = run_checked([str(installed_binary), "digest"], timeout=120,
                         env={"HURRAY_DEQUANT_PATH": "scalar"}).stdout
    lines = best.splitlines()
    assert len(lines) >= 3 * 45, best  # every case, three output types
    assert any(line.startswith("ggml iq1_m / bfloat16:") for line in lines)
    assert best == scalar


def test_tables_products_and_paths(tmp_path):
    exe = tmp_path / "test_dequant_tables"
    run_checked([CC, *INTERNAL, *LIBRARY_FLAGS, "-O2", "-I", str(NATIVE / "include"), str(TABLES),
                 *library_sources(), "-o", str(exe)], timeout=300)
    result = run_checked([str(exe)], timeout=300)
    # Both paths must have been compared: this machine has AVX2.
    assert "avx2 path available: yes" in result.stdout, "the AVX2 path is not in use on this machine"
    assert_checks_passed(result, "test_dequant_tables", 1_000_000)


def test_tables_under_address_and_undefined_sanitizers(tmp_path):
    exe = build_sanitized(TABLES, tmp_path / "test_dequant_tables_sanitized", INTERNAL, library_sources())
    assert_checks_passed(run_sanitized(exe, "detect_leaks=1", args=()), "test_dequant_tables", 1_000_000)


# ---- no fused multiply-add ------------------------------------------------------

def _setup_c_flags():
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "C_FLAGS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no C_FLAGS")


def test_every_build_of_the_library_forbids_contraction():
    flags = _setup_c_flags()
    assert "-ffp-contract=off" in flags
    assert not any(f in ("-ffast-math", "-Ofast") or f.startswith("-ffp-contract=f") for f in flags)
    assert "-ffp-contract=off" in LIBRARY_FLAGS  # the sanitized and internal builds of the tests
    assert "-ffast-math" not in SANITIZE
    fuzz = (ROOT / "fuzz" / "run.sh").read_text()
    compile_line = re.search(r'"\$clang" -std=c11[^\n]*', fuzz)[0]
    assert "-ffp-contract=off" in compile_line and "fast-math" not in fuzz


def _probe(tmp_path, name, flags):
    exe = tmp_path / name
    run_checked([CC, *flags, "-mfma", str(C_TESTS / "fp_contract_probe.c"), "-o", str(exe)], timeout=120)
    return run_checked([str(exe)], timeout=60).stdout.strip()


def test_the_library_flags_keep_a_product_and_a_difference_apart(tmp_path):
    # With the library's own flags, on a target that has FMA instructions,
    # d * q - m is rounded twice; allowing contraction (as GNU C mode and
    # clang's default do) fuses it and changes the bits: the probe tells
    # the two apart, so a build that contracted would have been caught.
    library = [f for f in _setup_c_flags() if f not in ("-fPIC",)]
    assert _probe(tmp_path, "separate", library) == "separate"
    contracting = [f for f in library if not f.startswith("-ffp-contract")] + ["-ffp-contract=fast"]
    assert _probe(tmp_path, "fused", contracting) == "fused"
