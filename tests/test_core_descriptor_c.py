"""The descriptor codec in C (layers 1-4): tests/c/test_descriptor.c and the
golden vectors in tests/vectors/.

test_descriptor.c is built three ways: against the installed library with
the flags `python -m hurray --cflags --libs` prints, with the library
sources compiled in under AddressSanitizer and UBSan, and run under valgrind
memcheck.

Each golden vector is a pair: NAME.hex (the encoding, written out and
checked by hand) and NAME.json (what it means). Both directions are checked
through the C library by tests/c/vectors_check.c -- decoding the bytes gives
the statement, building the statement gives the bytes -- and the bytes are
also read here in Python straight from the tables of
docs/impl/descriptor-encoding.md, so the vectors follow the spec and not
merely the C code.
"""
import json
import struct

import pytest

from support.cbuild import (
    C_TESTS,
    CC,
    NATIVE,
    ROOT,
    assert_checks_passed,
    build_installed,
    build_sanitized,
    library_sources,
    run_checked,
    run_sanitized,
    run_under_valgrind,
)

VECTORS = ROOT / "tests" / "vectors"
STRICT = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-pthread"]
# The sources this test owns; each must compile alone under the strict flags.
CODEC_SOURCES = ["dtype.c", "layout.c", "descriptor_build.c", "descriptor_validate.c",
                 "descriptor_accept.c", "descriptor_encode.c", "descriptor_decode.c",
                 "descriptor_decode_full.c", "descriptor_reach.c", "descriptor_check_buffers.c",
                 "descriptor_spare.c"]
# The bit flips alone make hundreds of thousands of checks; a count this low
# means whole sections stopped running.
MIN_CHECKS = 100_000

# Codes from hurray.h, by name, for reading the bytes in Python.
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "int1",
          "int2", "int4", "uint1", "uint2", "uint4", "float16", "float32", "float64", "bfloat16",
          "complex32", "complex64", "complex128", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
          "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
          "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "bcomplex32"]
DTYPE_NAMES = {code: name for code, name in enumerate(DTYPES, start=1)}
BYTE_ORDERS = ["little", "big"]
PACKINGS = ["none", "padded", "lsb_first", "ggml_split"]
SCHEMES = ["none", "affine", "microscaling", "ggml"]
GRANULARITIES = ["none", "per_tensor", "per_axis", "per_block"]
ROLES = {1: "values", 2: "scale", 3: "zero_point", 4: "global_scale"}
LAYOUTS = ["row_major", "swizzled_128x4"]
GGML_TYPES = {0: None, 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 12: "q4_k", 14: "q6_k",
              39: "mxfp4"}


# ---- test_descriptor.c ---------------------------------------------------

@pytest.fixture(scope="module")
def descriptor_binary(tmp_path_factory):
    """test_descriptor.c linked against the installed libhurray."""
    return build_installed(C_TESTS / "test_descriptor.c", tmp_path_factory.mktemp("c_descriptor") / "test_descriptor",
                           [*STRICT, "-g"])


def test_descriptor_against_installed_library(descriptor_binary):
    assert_checks_passed(run_checked([str(descriptor_binary)], timeout=120), "test_descriptor", MIN_CHECKS)


def test_descriptor_under_address_and_undefined_sanitizers(tmp_path):
    sources = library_sources()
    assert any(p.endswith("descriptor_decode.c") for p in sources)
    exe = build_sanitized(C_TESTS / "test_descriptor.c", tmp_path / "test_descriptor_sanitized", STRICT, sources)
    assert_checks_passed(run_sanitized(exe, "detect_leaks=1"), "test_descriptor", MIN_CHECKS)


def test_descriptor_under_valgrind(descriptor_binary):
    # HURRAY_TEST_SCALE=10 skips the byte-value sweep, the slow part under valgrind.
    result = run_under_valgrind(descriptor_binary, "10", timeout=300)
    assert_checks_passed(result, "test_descriptor", MIN_CHECKS)


@pytest.mark.parametrize("optimization", ["-O0", "-O2"])
def test_codec_sources_compile_cleanly(tmp_path, optimization):
    # -O2 matters: some warnings (maybe-uninitialized) only appear with the optimizer.
    for name in CODEC_SOURCES:
        run_checked([CC, *STRICT, optimization, "-I", str(NATIVE / "include"), "-c",
                     str(NATIVE / "src" / name), "-o", str(tmp_path / (name + ".o"))], timeout=120)


# ---- the quick paths against the full rules --------------------------------

# test_accept.c (the quick acceptance against the full check) and
# test_decode_quick.c (decode's quick path against the full decode) read the
# library's internal headers, so they are built with the sources compiled
# in; at -O2 because the quick paths exist for the optimiser's sake, and
# under the sanitizers. Each prints its tally line and at least a million checks.
ACCEPT_FLAGS = [*STRICT, "-I", str(NATIVE / "src")]
QUICK_SWEEPS = [("test_accept", "quick path:"), ("test_decode_quick", "quick decode:")]
QUICK_MIN_CHECKS = 1_000_000


@pytest.mark.parametrize(("name", "tally"), QUICK_SWEEPS, ids=["accept", "decode"])
def test_quick_path_agrees_with_the_full_rules(tmp_path, name, tally):
    exe = tmp_path / name
    run_checked([CC, *ACCEPT_FLAGS, "-O2", "-I", str(NATIVE / "include"), str(C_TESTS / f"{name}.c"),
                 *library_sources(), "-o", str(exe)], timeout=300)
    result = run_checked([str(exe)], timeout=120)
    assert tally in result.stdout
    assert_checks_passed(result, name, QUICK_MIN_CHECKS)


@pytest.mark.parametrize(("name", "tally"), QUICK_SWEEPS, ids=["accept", "decode"])
def test_quick_path_under_address_and_undefined_sanitizers(tmp_path, name, tally):
    exe = build_sanitized(C_TESTS / f"{name}.c", tmp_path / f"{name}_sanitized", ACCEPT_FLAGS, library_sources())
    result = run_sanitized(exe, "detect_leaks=1")
    assert tally in result.stdout
    assert_checks_passed(result, name, QUICK_MIN_CHECKS)


# ---- golden vectors ------------------------------------------------------

VECTOR_NAMES = sorted(p.stem for p in VECTORS.glob("*.json"))


def load_vector(name):
    statement = json.loads((VECTORS / f"{name}.json").read_text())
    return statement, read_hex(VECTORS / f"{name}.hex")


def read_hex(path):
    """Hex digits; whitespace ignored; '#' comments to the end of the line."""
    digits = "".join(line.split("#", 1)[0] for line in path.read_text().splitlines())
    digits = "".join(digits.split())
    return bytes.fromhex(digits)


@pytest.fixture(scope="module")
def vectors_binary(tmp_path_factory):
    return build_installed(C_TESTS / "vectors_check.c", tmp_path_factory.mktemp("c_vectors") / "vectors_check", STRICT)


def test_vectors_come_in_pairs():
    hex_names = sorted(p.stem for p in VECTORS.glob("*.hex"))
    assert hex_names == VECTOR_NAMES
    assert len(VECTOR_NAMES) >= 15
    schemes = set()
    for name in VECTOR_NAMES:
        statement, _ = load_vector(name)
        schemes.add(statement["scheme"])
        roles = [part["role"] for part in statement["parts"]]
        assert roles[0] == "values", name
        order = list(ROLES.values())
        assert roles == sorted(roles, key=order.index), f"{name}: parts must be listed in role order"
    assert schemes == set(SCHEMES)


def expected_lines(statement):
    ggml = statement["ggml_type"] or "none"
    lines = [
        " ".join(["shape", *map(str, statement["shape"])]),
        " ".join(["strides", *map(str, statement["strides"])]),
        f"dtype {statement['parts'][0]['dtype']}",
        f"byte_order {statement['byte_order']}",
        f"packing {statement['packing']}",
        f"scheme {statement['scheme']}",
        f"granularity {statement['granularity']}",
        f"axis {statement['axis']}",
        f"block_size {statement['block_size']}",
        f"ggml_type {ggml}",
    ]
    for part in statement["parts"]:
        lines.append(f"part {part['role']} {part['dtype']} {part['buffer']} {part['offset']} {part['layout']}")
    lines.append(f"buffer_count {len(statement['buffer_sizes'])}")
    lines.append("reencoded identical")
    return lines


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector_bytes_to_meaning(vectors_binary, name):
    statement, _ = load_vector(name)
    result = run_checked([str(vectors_binary), "decode", str(VECTORS / f"{name}.hex")], timeout=60)
    got = [line.rstrip() for line in result.stdout.splitlines()]
    assert got == expected_lines(statement)


def encode_arguments(statement):
    args = [
        "shape=" + ",".join(map(str, statement["shape"])),
        "strides=" + ",".join(map(str, statement["strides"])),
        f"byte_order={statement['byte_order']}",
        f"packing={statement['packing']}",
        f"scheme={statement['scheme']}",
        f"granularity={statement['granularity']}",
        f"axis={statement['axis']}",
        f"block_size={statement['block_size']}",
        f"ggml_type={statement['ggml_type'] or 'none'}",
    ]
    for part in statement["parts"]:
        args.append(f"part={part['role']}:{part['dtype']}:{part['buffer']}:{part['offset']}:{part['layout']}")
    return args


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector_meaning_to_bytes(vectors_binary, name):
    statement, encoded = load_vector(name)
    result = run_checked([str(vectors_binary), "encode", *encode_arguments(statement)], timeout=60)
    assert result.stdout.strip() == encoded.hex()


def read_by_the_spec(data):
    """The encoding read from the tables of docs/impl/descriptor-encoding.md."""
    assert len(data) >= 32
    magic, version, total, rank, order, packing, scheme, granularity, part_count, reserved, axis, ggml, block = (
        struct.unpack_from("<4sHHBBBBBBHIIQ", data, 0))
    assert magic == b"HRYD" and version == 1 and total == len(data) and reserved == 0
    assert total == 32 + 16 * rank + 16 * part_count
    shape = list(struct.unpack_from(f"<{rank}Q", data, 32))
    strides = list(struct.unpack_from(f"<{rank}q", data, 32 + 8 * rank))
    parts = []
    for i in range(part_count):
        role, dtype, layout, part_reserved, buffer, offset = struct.unpack_from(
            "<BBBBIQ", data, 32 + 16 * rank + 16 * i)
        assert part_reserved == 0
        parts.append({"role": ROLES[role], "dtype": DTYPE_NAMES[dtype], "buffer": buffer, "offset": offset,
                      "layout": LAYOUTS[layout]})
    return {"shape": shape, "strides": strides, "byte_order": BYTE_ORDERS[order], "packing": PACKINGS[packing],
            "scheme": SCHEMES[scheme], "granularity": GRANULARITIES[granularity], "axis": axis,
            "block_size": block, "ggml_type": GGML_TYPES[ggml], "parts": parts}


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector_follows_the_spec_tables(name):
    statement, encoded = load_vector(name)
    read = read_by_the_spec(encoded)
    wanted = {key: value for key, value in statement.items() if key not in ("description", "buffer_sizes")}
    assert read == wanted


@pytest.mark.parametrize("name", VECTOR_NAMES)
def test_vector_buffer_sizes_are_exact(vectors_binary, name):
    statement, _ = load_vector(name)
    sizes = statement["buffer_sizes"]
    hex_path = str(VECTORS / f"{name}.hex")

    def status(buffer_sizes):
        result = run_checked([str(vectors_binary), "buffers", hex_path, *map(str, buffer_sizes)], timeout=60)
        return result.stdout.strip()

    assert status(sizes) == "HURRAY_OK"
    for i, size in enumerate(sizes):
        if size > 0:
            shorter = sizes[:i] + [size - 1] + sizes[i + 1:]
            assert status(shorter) == "HURRAY_ERROR_BUFFER_TOO_SMALL", f"buffer {i} one byte short"
    assert status(sizes + [1]) == "HURRAY_ERROR_INVALID_ARGUMENT"
