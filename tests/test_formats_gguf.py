"""load_gguf: files written by gguf-py's GGUFWriter read zero-copy and bit for bit; broken files refused by name."""
import gc
import struct

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType

import hurray
from hurray.errors import CorruptError, HurrayError, HurrayIOError, UnsupportedError
from support import gguf_bytes as gb
from support.tensor_kinds import GGML_NAMES, ggml_blocks, same_bits, weights

PLAIN = {  # ggml name -> numpy array written with GGUFWriter
    "F32": lambda: weights("f32", (3, 64)),
    "F16": lambda: weights("f16", (3, 64)).astype(np.float16),
    "F64": lambda: weights("f64", (2, 5)).astype(np.float64),
    "I8": lambda: np.arange(-6, 6, dtype=np.int8).reshape(3, 4),
    "I16": lambda: np.arange(-6, 6, dtype=np.int16).reshape(2, 6),
    "I32": lambda: np.arange(24, dtype=np.int32).reshape(2, 3, 4),
    "I64": lambda: np.arange(5, dtype=np.int64),
}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """A GGUF file with every type Hurray reads, written by GGUFWriter; and what went in."""
    path = tmp_path_factory.mktemp("gguf") / "model.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_uint32("llama.block_count", 2)
    writer.add_float32("llama.rope.freq_base", 10000.0)
    writer.add_bool("tokenizer.ggml.add_bos_token", True)
    writer.add_string("general.name", "tiny ✓")
    writer.add_array("tokenizer.ggml.tokens", ["<s>", "</s>", "héllo"])
    writer.add_array("tokenizer.ggml.scores", [0.0, -1.5, 2.25])
    expected = {}
    for name, make in PLAIN.items():
        array = make()
        writer.add_tensor(f"plain.{name}", array)
        expected[f"plain.{name}"] = (name, array)
    bf16 = gguf.quants.quantize(weights("bf16", (2, 32)), GGMLQuantizationType.BF16)
    writer.add_tensor("plain.BF16", bf16, raw_dtype=GGMLQuantizationType.BF16)
    expected["plain.BF16"] = ("BF16", bf16)
    for name in GGML_NAMES:
        blocks, shape = ggml_blocks(name)
        writer.add_tensor(f"blk.{name}", blocks, raw_dtype=GGMLQuantizationType[name])
        expected[f"blk.{name}"] = (name, blocks)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, expected


def test_every_tensor_matches_gguf_py(written):
    path, expected = written
    reader = gguf.GGUFReader(str(path))
    theirs = {t.name: t for t in reader.tensors}
    with hurray.load_gguf(path) as f:
        assert sorted(f) == sorted(theirs)
        for name, (type_name, _) in expected.items():
            tensor, ref = f[name], theirs[name]
            assert f.ggml_type(name) == type_name == ref.tensor_type.name
            # GGUF lists dimensions innermost first; Hurray's shapes are numpy order.
            assert tensor.shape == tuple(reversed(ref.shape.tolist()))
            assert tensor.readonly
            raw = np.asarray(ref.data).reshape(-1).view(np.uint8)
            if type_name in GGML_NAMES:
                assert tensor.descriptor.ggml_type == type_name.lower()
                assert tensor.to_gguf().tobytes() == raw.tobytes()
                with np.errstate(over="ignore"):
                    reference = gguf.quants.dequantize(np.asarray(ref.data), ref.tensor_type)
                assert same_bits(tensor.dequantize(), reference.reshape(tensor.shape))
            elif type_name == "BF16":
                assert tensor.dtype == "bfloat16"
                assert np.asarray(tensor).view(np.uint8).tobytes() == raw.tobytes()
                reference = gguf.quants.dequantize(np.asarray(ref.data), ref.tensor_type)
                assert same_bits(tensor.dequantize(), reference.reshape(tensor.shape))
            else:
                np.testing.assert_array_equal(np.asarray(tensor), expected[name][1])
                assert np.asarray(tensor).dtype == expected[name][1].dtype


def test_metadata_is_python_values(written):
    path, _ = written
    meta = hurray.load_gguf(path).metadata
    assert meta["general.architecture"] == "llama"
    assert meta["llama.block_count"] == 2 and type(meta["llama.block_count"]) is int
    assert meta["llama.rope.freq_base"] == 10000.0
    assert meta["tokenizer.ggml.add_bos_token"] is True
    assert meta["general.name"] == "tiny ✓"
    assert meta["tokenizer.ggml.tokens"] == ["<s>", "</s>", "héllo"]
    assert meta["tokenizer.ggml.scores"] == [0.0, -1.5, 2.25]


def test_gguf_to_hurray_is_lossless(written):
    """Each tensor is the very descriptor from_gguf / from_numpy makes of gguf-py's bytes, over the same bytes."""
    path, _ = written
    reader = gguf.GGUFReader(str(path))
    f = hurray.load_gguf(path)
    for ref in reader.tensors:
        tensor = f[ref.name]
        raw = np.asarray(ref.data).reshape(-1).view(np.uint8)
        shape = tuple(reversed(ref.shape.tolist()))
        if ref.tensor_type.name in GGML_NAMES:
            twin = hurray.from_gguf(raw.copy(), ref.tensor_type.name, shape)
        else:
            twin = hurray.from_numpy(np.asarray(tensor).copy())
        assert tensor.descriptor == twin.descriptor
        assert tensor.buffer(0).tobytes() == twin.buffer(0).tobytes() == raw.tobytes()


def test_zero_copy_and_the_map_outlives_the_file(written):
    path, expected = written
    f = hurray.load_gguf(path)
    a, b = f["blk.Q4_K"], f["plain.F32"]
    mapped = np.frombuffer(f._map, np.uint8)
    start, size = mapped.__array_interface__["data"][0], mapped.size
    for tensor in (a, b):  # views of the file's memory map, not copies
        address, nbytes = tensor.buffers[0]
        assert start <= address and address + nbytes <= start + size
    del mapped
    reference = a.dequantize()
    f.close()
    f.close()
    assert f.closed
    with pytest.raises(HurrayError):
        f["plain.F32"]
    del f
    gc.collect()
    assert same_bits(a.dequantize(), reference)
    np.testing.assert_array_equal(np.asarray(b), expected["plain.F32"][1])


def test_a_type_hurray_lacks_is_refused_only_when_asked_for(tmp_path):
    path = tmp_path / "mixed.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("q2k", np.zeros((1, 84), np.uint8), raw_dtype=GGMLQuantizationType.Q2_K)
    writer.add_tensor("ok", np.ones(4, np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    f = hurray.load_gguf(path)
    assert sorted(f) == ["ok", "q2k"]
    assert f.ggml_type("q2k") == "Q2_K"
    with pytest.raises(UnsupportedError, match="Q2_K"):
        f["q2k"]
    assert np.asarray(f["ok"]).tolist() == [1, 1, 1, 1]


def test_an_unknown_type_number_is_refused_by_number(tmp_path):
    path = tmp_path / "t.gguf"
    path.write_bytes(gb.gguf([], [gb.tensor_info("odd", [4], 99, 0), gb.tensor_info("t", [4], 0, 32)],
                             bytes(32) + struct.pack("<4f", 1, 2, 3, 4)))
    f = hurray.load_gguf(path)
    with pytest.raises(UnsupportedError, match="ggml type 99"):
        f["odd"]
    assert np.asarray(f["t"]).tolist() == [1, 2, 3, 4]


def test_the_builder_makes_files_gguf_py_reads(tmp_path):
    """The broken files below differ from this one in one field each."""
    path = tmp_path / "good.gguf"
    path.write_bytes(gb.f32_file())
    ref = gguf.GGUFReader(str(path)).tensors[0]
    assert np.asarray(ref.data).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert np.asarray(hurray.load_gguf(path)["t"]).tolist() == [[0, 1, 2, 3], [4, 5, 6, 7]]


def test_every_truncation_is_refused(tmp_path):
    whole = gb.f32_file()
    path = tmp_path / "cut.gguf"
    for length in range(len(whole)):
        path.write_bytes(whole[:length])
        with pytest.raises(CorruptError):
            hurray.load_gguf(path)


DATA = struct.pack("<8f", *range(8))
ARCH = gb.kv_string("general.architecture", "test")
GIB = 1 << 30

BROKEN = {
    "bad magic": (gb.gguf([ARCH], [], magic=b"GGUX"), CorruptError, "magic"),
    "version 1": (gb.gguf([ARCH], [], version=1), UnsupportedError, "version 1"),
    "big-endian": (gb.gguf([ARCH], [], version=3 << 24), UnsupportedError, "big-endian"),
    "alignment zero": (gb.gguf([gb.kv_u32("general.alignment", 0)], [gb.tensor_info("t", [8], 0, 0)], DATA,
                               alignment=32), CorruptError, "power of two"),
    "alignment not a power of two": (
        gb.gguf([gb.kv_u32("general.alignment", 24)], [gb.tensor_info("t", [8], 0, 0)], DATA, alignment=24),
        CorruptError, "power of two"),
    "alignment of the wrong type": (
        gb.gguf([gb.string("general.alignment") + struct.pack("<IQ", 10, 32)], [], b""),
        CorruptError, "uint32"),
    "misaligned offset": (gb.gguf([ARCH], [gb.tensor_info("t", [4], 0, 4)], DATA), CorruptError,
                          "not a multiple of the alignment"),
    "offset outside the file": (gb.gguf([ARCH], [gb.tensor_info("t", [8], 0, 1 << 40)], DATA), CorruptError,
                                "outside the file"),
    "shape past the end": (gb.gguf([ARCH], [gb.tensor_info("t", [9], 0, 0)], DATA), CorruptError,
                           "outside the file"),
    "overlapping tensors": (
        gb.gguf([ARCH], [gb.tensor_info("a", [8], 0, 0), gb.tensor_info("b", [8], 0, 0)], DATA + DATA),
        CorruptError, "overlap"),
    "duplicate tensor name": (
        gb.gguf([ARCH], [gb.tensor_info("a", [8], 0, 0), gb.tensor_info("a", [8], 0, 32)], DATA + DATA),
        CorruptError, "duplicate tensor name"),
    "duplicate key": (gb.gguf([ARCH, ARCH], []), CorruptError, "duplicate key"),
    "a key length that claims gigabytes": (
        b"GGUF" + struct.pack("<IQQQ", 3, 0, 1, 4 * GIB) + b"general", CorruptError, "claims too much"),
    "a key-value count that claims gigabytes": (gb.gguf([ARCH], [], counts=(0, 1 << 60)), CorruptError,
                                                "key-values"),
    "a tensor count that claims gigabytes": (gb.gguf([ARCH], [], counts=(1 << 62, 1)), CorruptError,
                                             "tensor infos"),
    "an array length that claims gigabytes": (
        gb.gguf([gb.string("arr") + struct.pack("<IIQ", 9, 4, 1 << 61)], []), CorruptError, "elements"),
    "a string array that claims gigabytes": (
        gb.gguf([gb.string("arr") + struct.pack("<IIQ", 9, 8, 1 << 40)], []), CorruptError, "elements"),
    "an unknown value type": (gb.gguf([gb.string("k") + struct.pack("<I", 77)], []), CorruptError,
                              "unknown value type"),
    "rank five": (gb.gguf([ARCH], [gb.tensor_info("t", [1, 1, 1, 1, 8], 0, 0)], DATA), CorruptError,
                  "at most 4"),
    "blocks cut in half": (gb.gguf([ARCH], [gb.tensor_info("q", [16], 8, 0)], bytes(34)), CorruptError,
                           "whole Q8_0 blocks"),
    "a name that is not UTF-8": (gb.gguf([ARCH], [gb.tensor_info(b"\xff\xfe", [8], 0, 0)], DATA), CorruptError,
                                 "UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_files_are_refused_by_name(tmp_path, case):
    data, error, words = BROKEN[case]
    path = tmp_path / "broken.gguf"
    path.write_bytes(data)
    with pytest.raises(error, match=words):
        hurray.load_gguf(path)


def test_files_that_cannot_be_opened(tmp_path):
    with pytest.raises(HurrayIOError, match="cannot open"):
        hurray.load_gguf(tmp_path / "missing.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(CorruptError, match="magic"):
        hurray.load_gguf(tmp_path / "empty.gguf")
    with pytest.raises(HurrayError):
        hurray.load_gguf(42)


def test_the_mapping_is_read_only_and_says_missing_names(written):
    path, _ = written
    f = hurray.load_gguf(path)
    with pytest.raises(KeyError):
        f["no such tensor"]
    with pytest.raises(TypeError):
        f["plain.F32"] = None
    assert "plain.F32" in f and len(f) == len(list(f))
    assert "GGUFFile" in repr(f)


def test_files_dropped_without_close_free_their_index(tmp_path):
    """The C index of a file nobody closes goes when the file is collected: 3000 opens of a
    200-tensor file would leak about 60 MB otherwise."""
    import os

    def resident():  # the current resident set (not the peak, which earlier tests may have raised)
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    path = tmp_path / "many.gguf"
    hurray.save_gguf(path, {f"t{i}": np.zeros(8, np.float32) for i in range(200)})
    for _ in range(300):
        hurray.load_gguf(path)["t5"]
    gc.collect()
    before = resident()
    for _ in range(3000):
        hurray.load_gguf(path)["t5"]
    gc.collect()
    assert resident() - before < 20 << 20
