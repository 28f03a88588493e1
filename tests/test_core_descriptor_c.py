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
merely the C code. Vectors of encoding version 2 (a graph of nodes) say so
("encoding_version": 2) and are stated node by node; the same four checks
hold them.
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
                 "descriptor_spare.c", "descriptor_graph_build.c", "descriptor_graph_encode.c",
                 "descriptor_graph_decode.c", "descriptor_graph_validate.c", "descriptor_graph_reach.c",
                 "descriptor_graph_codes.c", "descriptor_graph_access.c"]
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
GGML_TYPES = {0: None, 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0", 10: "q2_k", 11: "q3_k", 12: "q4_k",
              13: "q5_k", 14: "q6_k", 16: "iq2_xxs", 17: "iq2_xs", 18: "iq3_xxs", 19: "iq1_s", 20: "iq4_nl",
              21: "iq3_s", 22: "iq2_s", 23: "iq4_xs", 29: "iq1_m", 34: "tq1_0", 35: "tq2_0", 39: "mxfp4",
              40: "nvfp4", 41: "q1_0", 42: "q2_0"}
# Version 2 (the "Version 2" section of the spec).
DTYPE_NAMES.update({35: "uint3", 36: "uint5", 37: "uint6", 38: "uint7", 39: "int3", 40: "int5", 41: "int6",
                    42: "int7"})
KINDS = {1: "stored", 2: "constant", 3: "step", 4: "ggml", 5: "bits", 6: "gather"}
FORMS = {1: "mul", 2: "div", 3: "sub_mul", 4: "mul_add", 5: "mul_sub"}
V2_PACKINGS = [*PACKINGS, "dense", "slots"]
ADDRESSINGS = ["elements", "words"]
VALUE_RULES = ["standard", "e8m0_no_nan"]


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


def is_graph(statement):
    return statement.get("encoding_version", 1) == 2


def test_vectors_come_in_pairs():
    hex_names = sorted(p.stem for p in VECTORS.glob("*.hex"))
    assert hex_names == VECTOR_NAMES
    assert len(VECTOR_NAMES) >= 15
    schemes = set()
    graphs = 0
    for name in VECTOR_NAMES:
        statement, encoded = load_vector(name)
        if is_graph(statement):
            graphs += 1
            assert encoded[4:6] == b"\x02\x00", name
            continue
        schemes.add(statement["scheme"])
        roles = [part["role"] for part in statement["parts"]]
        assert roles[0] == "values", name
        order = list(ROLES.values())
        assert roles == sorted(roles, key=order.index), f"{name}: parts must be listed in role order"
    assert schemes == set(SCHEMES)
    assert graphs >= 10


def graph_lines(statement):
    """The text of tests/c/graph_text.h for a version-2 statement."""
    def csv(values):
        return ",".join(map(str, values))

    lines = [f"tensor shape={csv(statement['shape'])} result={statement['result_dtype'] or 'none'}"]
    for i, n in enumerate(statement["nodes"]):
        head = f"node {i} {n['kind']}"
        if n["kind"] == "stored":
            lines.append(
                f"{head} dtype={n['dtype']} shape={csv(n['shape'])} strides={csv(n['strides'])} buffer={n['buffer']} "
                f"offset={n['offset']} byte_order={n['byte_order']} layout={n['layout']} "
                f"addressing={n['addressing']} packing={n['packing']} container_bits={n['container_bits']} "
                f"packed_axis={n['packed_axis']} chunk_containers={n['chunk_containers']} "
                f"slot_flags={n['slot_flags']} chunk_stride={n['chunk_stride']} order={csv(n['order'])} "
                f"code_offset={n['code_offset']} codebook={n['codebook']} value_rule={n['value_rule']}")
        elif n["kind"] == "constant":
            lines.append(f"{head} dtype={n['dtype']} value={n['value']}")
        elif n["kind"] == "step":
            lines.append(
                f"{head} form={n['form']} arithmetic={n['arithmetic']} shape={csv(n['shape'])} x={n['x']} "
                f"scale={n['scale']} offset={n['offset']} blocks={csv(n['blocks'])} flags={n['flags']} "
                f"indexed_axis={n['indexed_axis']} group_index={n['group_index']}")
        elif n["kind"] == "ggml":
            lines.append(f"{head} type={n['type']} shape={csv(n['shape'])} buffer={n['buffer']} offset={n['offset']}")
        elif n["kind"] == "bits":
            lines.append(f"{head} shape={csv(n['shape'])} inputs={csv(n['inputs'])} shifts={csv(n['shifts'])} "
                         f"offset={n['offset']}")
        else:
            lines.append(f"{head} shape={csv(n['shape'])} x={n['x']} index={n['index']} axis={n['axis']}")
    return lines


def expected_lines(statement):
    if is_graph(statement):
        return [*graph_lines(statement), f"buffer_count {len(statement['buffer_sizes'])}", "reencoded identical"]
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
    if is_graph(statement):
        arguments = ["graph", "\n".join(graph_lines(statement))]
    else:
        arguments = ["encode", *encode_arguments(statement)]
    result = run_checked([str(vectors_binary), *arguments], timeout=60)
    assert result.stdout.strip() == encoded.hex()


def read_graph_by_the_spec(data):
    """A version-2 encoding read from the tables of the spec's "Version 2" section."""
    magic, version, total, rank, count, result = struct.unpack_from("<4sHHBBB", data, 0)
    assert magic == b"HRYD" and version == 2 and total == len(data) and data[11:32] == bytes(21)
    shape = list(struct.unpack_from(f"<{rank}Q", data, 32))
    at = 32 + 8 * rank
    nodes = []
    for _ in range(count):
        kind, node_rank, length = struct.unpack_from("<BBH", data, at)
        assert length % 8 == 0
        node = {"kind": KINDS[kind]}
        if kind == 1:
            (dtype, order, addressing, packing, layout, rule, codebook, container_bits, packed_axis, slots, flags,
             reserved, code_offset, buffer, offset, chunk, chunk_stride) = struct.unpack_from(
                "<BBBBBBBBBBBBiIQQQ", data, at + 4)
            assert reserved == 0 and length == 48 + 16 * node_rank + (slots + 7) // 8 * 8
            dims = list(struct.unpack_from(f"<{node_rank}Q", data, at + 48))
            strides = list(struct.unpack_from(f"<{node_rank}q", data, at + 48 + 8 * node_rank))
            order_at = at + 48 + 16 * node_rank
            assert data[order_at + slots:at + length] == bytes(length - 48 - 16 * node_rank - slots)
            node.update(dtype=DTYPE_NAMES[dtype], shape=dims, strides=strides, buffer=buffer, offset=offset,
                        byte_order=BYTE_ORDERS[order], layout=LAYOUTS[layout], addressing=ADDRESSINGS[addressing],
                        packing=V2_PACKINGS[packing], container_bits=container_bits, packed_axis=packed_axis,
                        chunk_containers=chunk, slot_flags=flags, chunk_stride=chunk_stride,
                        order=list(data[order_at:order_at + slots]), code_offset=code_offset, codebook=codebook,
                        value_rule=VALUE_RULES[rule])
        elif kind == 2:
            dtype, value = struct.unpack_from("<B3xQ", data, at + 4)
            assert node_rank == 0 and length == 16 and data[at + 5:at + 8] == bytes(3)
            node.update(dtype=DTYPE_NAMES[dtype], value=hex(value))
        elif kind == 3:
            form, arithmetic, x, scale, offset, group, axis, flags = struct.unpack_from("<8B", data, at + 4)
            assert length == 16 + 16 * node_rank and data[at + 12:at + 16] == bytes(4)
            node.update(form=FORMS[form], arithmetic=DTYPE_NAMES[arithmetic],
                        shape=list(struct.unpack_from(f"<{node_rank}Q", data, at + 16)), x=x, scale=scale,
                        offset=offset,
                        blocks=list(struct.unpack_from(f"<{node_rank}Q", data, at + 16 + 8 * node_rank)),
                        flags=flags, indexed_axis=axis, group_index=group)
        elif kind == 4:
            ggml, buffer, reserved, offset = struct.unpack_from("<IIIQ", data, at + 4)
            assert reserved == 0 and length == 24 + 8 * node_rank
            node.update(type=GGML_TYPES[ggml], shape=list(struct.unpack_from(f"<{node_rank}Q", data, at + 24)),
                        buffer=buffer, offset=offset)
        elif kind == 5:
            count = data[at + 4]
            inputs, shifts = list(data[at + 5:at + 9]), list(data[at + 9:at + 13])
            offset, reserved = struct.unpack_from("<iI", data, at + 16)
            assert data[at + 13:at + 16] == bytes(3) and reserved == 0 and length == 24 + 8 * node_rank
            assert inputs[count:] == [0] * (4 - count) and shifts[count:] == [0] * (4 - count)
            node.update(shape=list(struct.unpack_from(f"<{node_rank}Q", data, at + 24)), inputs=inputs[:count],
                        shifts=shifts[:count], offset=offset)
        else:
            assert kind == 6 and data[at + 7:at + 16] == bytes(9) and length == 16 + 8 * node_rank
            node.update(shape=list(struct.unpack_from(f"<{node_rank}Q", data, at + 16)), x=data[at + 4],
                        index=data[at + 5], axis=data[at + 6])
        nodes.append(node)
        at += length
    assert at == len(data)
    return {"encoding_version": 2, "shape": shape, "result_dtype": DTYPE_NAMES.get(result), "nodes": nodes}


def read_by_the_spec(data):
    """The encoding read from the tables of docs/impl/descriptor-encoding.md."""
    assert len(data) >= 32
    if data[4] == 2:
        return read_graph_by_the_spec(data)
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
