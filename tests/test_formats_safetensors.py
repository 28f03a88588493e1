"""safetensors: files written by safetensors read zero-copy; save_safetensors round-trips every tensor kind
exactly (a plain array's values, safetensors' way, ADR-064; every other tensor with its descriptor, ADR-041)
and writes files safetensors reads unmodified; broken files refused by name."""
import gc
import json
import os
import struct

import gguf
import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
import torch
from gguf import GGMLQuantizationType
from safetensors import safe_open

import hurray
from hurray.errors import CorruptError, HurrayError, InvalidArgumentError, UnsupportedError
from support.tensor_kinds import GGML_NAMES, ggml_blocks, kinds, reached_bytes, same_bits, weights

KINDS = kinds()
# Plain arrays of safetensors dtypes whose layout is not C order little-endian: safetensors states their
# values, so they come back as those values, contiguous and little-endian (ADR-064 § 2).
BY_VALUE = {"big_endian", "strided", "empty"}


def header_of(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    return json.loads(raw[8:8 + n]), 8 + n


# ---- files written by safetensors itself ------------------------------------

def test_numpy_save_file_is_read_exactly_and_without_copies(tmp_path):
    arrays = {
        "f32": weights("a", (3, 64)), "f16": weights("b", (2, 8)).astype(np.float16),
        "f64": np.arange(3.0), "i8": np.arange(-4, 4, dtype=np.int8), "u16": np.arange(5, dtype=np.uint16),
        "i64": np.arange(6, dtype=np.int64).reshape(2, 3), "bool": np.array([True, False]),
        "c64": np.array([1 + 1j], np.complex64), "scalar": np.array(2.5, np.float32),
        "empty": np.zeros((0, 3), np.int32),
    }
    path = tmp_path / "np.safetensors"
    safetensors.numpy.save_file(arrays, str(path), metadata={"format": "np"})
    with hurray.load_safetensors(path) as f:
        assert sorted(f) == sorted(arrays)
        assert f.metadata == {"format": "np"}
        for name, array in arrays.items():
            tensor = f[name]
            assert tensor.readonly and tensor.shape == array.shape
            out = np.asarray(tensor)
            assert out.dtype == array.dtype
            np.testing.assert_array_equal(out, array)
        mapped = np.frombuffer(f._map, np.uint8)
        start = mapped.__array_interface__["data"][0]
        for name in arrays:  # views of the file's memory map, not copies
            address, nbytes = f[name].buffers[0]
            assert nbytes == 0 or start <= address and address + nbytes <= start + mapped.size
        del mapped


def test_torch_save_file_bf16_fp8_fp4_and_e8m0(tmp_path):
    from safetensors.torch import save_file

    x = torch.from_numpy(weights("t", (2, 32)))
    tensors = {"bf16": x.to(torch.bfloat16), "e4m3": x.to(torch.float8_e4m3fn), "e5m2": x.to(torch.float8_e5m2),
               "e8m0": x.abs().to(torch.float8_e8m0fnu),
               "fp4": torch.arange(32, dtype=torch.uint8).reshape(2, 16).view(torch.float4_e2m1fn_x2)}
    path = tmp_path / "pt.safetensors"
    save_file(tensors, str(path))
    f = hurray.load_safetensors(path)
    for name, ml in (("bf16", ml_dtypes.bfloat16), ("e4m3", ml_dtypes.float8_e4m3fn),
                     ("e5m2", ml_dtypes.float8_e5m2), ("e8m0", ml_dtypes.float8_e8m0fnu)):
        ours = np.asarray(f[name])
        assert ours.dtype == np.dtype(ml)
        assert ours.view(np.uint8).tobytes() == tensors[name].view(torch.uint8).numpy().tobytes()
    fp4 = f["fp4"]
    # torch's float4_e2m1fn_x2 holds two elements a byte, the first in the low nibble: so does lsb_first.
    assert fp4.dtype == "float4_e2m1fn" and fp4.shape == (2, 32) and fp4.descriptor.packing == "lsb_first"
    codes = np.arange(32, dtype=np.uint8)
    expected = np.stack([codes & 15, codes >> 4], axis=1).reshape(2, 32)
    np.testing.assert_array_equal(fp4.unpack().view(np.uint8), expected)
    assert fp4.buffer(0).tobytes() == codes.tobytes()


@pytest.mark.parametrize("name", GGML_NAMES)
def test_ggml_blocks_written_by_safetensors_follow_adr_041(tmp_path, name):
    """Another producer writes GGML blocks as U8 plus ADR-041's record; Hurray dequantizes them
    bit for bit as gguf-py does."""
    blocks, shape = ggml_blocks(name)
    desc = hurray.Descriptor.build("uint8", shape, scheme="ggml", ggml_type=name.lower())
    record = {"format": 1, "tensors": {"w": {"descriptor": desc.encode().hex(), "buffers": ["w"]}}}
    path = tmp_path / "q.safetensors"
    safetensors.numpy.save_file({"w": blocks, "bias": np.ones(3, np.float32)}, str(path),
                                metadata={"hurray": json.dumps(record)})
    f = hurray.load_safetensors(path)
    assert sorted(f) == ["bias", "w"] and f.metadata == {}
    tensor = f["w"]
    assert tensor.descriptor == desc
    with np.errstate(over="ignore"):
        reference = gguf.quants.dequantize(blocks, GGMLQuantizationType[name])
    assert same_bits(tensor.dequantize(), reference.reshape(shape))


# ---- hurray -> safetensors -> hurray -----------------------------------------

@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    tensors = {name: make() for name, make in KINDS.items()}
    path = tmp_path_factory.mktemp("st") / "all.safetensors"
    hurray.save_safetensors(path, tensors, metadata={"note": "every kind"})
    return path, tensors


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_round_trip_is_exact(saved, kind):
    path, tensors = saved
    original = tensors[kind]
    f = hurray.load_safetensors(path)
    back = f[kind]
    if kind in BY_VALUE:
        assert back.descriptor == hurray.Descriptor.build(original.dtype, original.shape)
        assert original.descriptor != back.descriptor  # else this kind would not be here
        expected = np.asarray(original)
        assert np.asarray(back).tobytes() == np.ascontiguousarray(expected, expected.dtype.newbyteorder("<")).tobytes()
        return
    assert back.descriptor == original.descriptor
    assert reached_bytes(back) == reached_bytes(original)
    if kind not in ("float6_e2m3fn", "float6_e3m2fn"):  # F6 is a bit stream: Hurray unpacks it (ADR-041)
        mapped = np.frombuffer(f._map, np.uint8)
        start = mapped.__array_interface__["data"][0]
        for address, nbytes in back.buffers:
            assert nbytes == 0 or start <= address and address + nbytes <= start + mapped.size
        del mapped
    try:
        expected = original.dequantize()
    except UnsupportedError:  # complex: no float32 form
        np.testing.assert_array_equal(np.asarray(back), np.asarray(original))
    else:
        assert same_bits(back.dequantize(), expected)


def test_saved_file_keeps_user_metadata_and_hides_the_record(saved):
    path, tensors = saved
    f = hurray.load_safetensors(path)
    assert f.metadata == {"note": "every kind"}
    assert sorted(f) == sorted(tensors)
    header, start = header_of(path)
    assert start % 8 == 0  # the data starts 8-byte aligned, as safetensors lays it out
    record = json.loads(header["__metadata__"]["hurray"])
    assert record["format"] == 1
    assert not BY_VALUE & set(record["tensors"]) and "float32" not in record["tensors"]  # plain: no record
    assert {"nvfp4", "ggml_q4_k", "int4_packed"} <= set(record["tensors"])
    assert header["empty"]["dtype"] == "F32" and header["empty"]["shape"] == [0, 4]
    assert header["big_endian"]["dtype"] == "F32" and header["strided"]["dtype"] == "I16"
    for name, info in header.items():
        if name != "__metadata__":
            itemsize = max(1, {"F64": 8, "I64": 8, "U64": 8, "C64": 8, "F32": 4, "I32": 4, "U32": 4,
                               "F16": 2, "BF16": 2, "I16": 2, "U16": 2}.get(info["dtype"], 1))
            assert info["data_offsets"][0] % itemsize == 0, name


def test_other_readers_see_plain_meaningful_arrays(saved):
    path, tensors = saved
    with safe_open(str(path), "pt") as g:
        keys = set(g.keys())
        every = {k: g.get_tensor(k) for k in keys if not k.startswith(("float6", "mx_fp6"))}
    assert {"nvfp4", "nvfp4.scale", "nvfp4.global_scale", "affine_per_axis.scale",
            "affine_per_axis.zero_point", "affine_shared_buffer.buffer1"} <= keys
    np.testing.assert_array_equal(every["float32"].numpy(), np.asarray(tensors["float32"]))
    assert every["bfloat16"].dtype == torch.bfloat16
    q = tensors["affine_per_axis"]
    np.testing.assert_array_equal(every["affine_per_axis"].numpy(), q.stored_values())
    scale = q.buffer(q.descriptor.parts["scale"].buffer_index).view(np.float32)
    np.testing.assert_array_equal(every["affine_per_axis.scale"].numpy(), scale)
    nv = tensors["nvfp4"]
    assert every["nvfp4.scale"].dtype == torch.float8_e4m3fn and tuple(every["nvfp4.scale"].shape) == (4, 4)
    assert tuple(every["nvfp4.global_scale"].shape) == ()
    assert every["nvfp4.global_scale"].item() == float(nv.buffer(2).view(np.float32)[0])
    blocks, _ = ggml_blocks("Q4_K")
    np.testing.assert_array_equal(every["ggml_q4_k"].numpy(), blocks)
    assert every["mx_fp8"].dtype == torch.float8_e4m3fn and every["mx_fp8.scale"].dtype == torch.float8_e8m0fnu
    assert every["nvfp4_packed_swizzled"].dtype == torch.float4_e2m1fn_x2


def test_numpy_load_file_reads_what_numpy_can_hold(tmp_path):
    plain = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.arange(4, dtype=np.int16)}
    quantized = hurray.quantize_affine(weights("q", (4, 32)), dtype="int8", axis=0)
    path = tmp_path / "np.safetensors"
    hurray.save_safetensors(path, {**plain, "q": quantized})
    loaded = safetensors.numpy.load_file(str(path))
    assert sorted(loaded) == ["a", "b", "q", "q.scale", "q.zero_point"]
    for name, array in plain.items():
        np.testing.assert_array_equal(loaded[name], array)
    np.testing.assert_array_equal(loaded["q"], quantized.stored_values())
    real = (loaded["q"].astype(np.float32) - loaded["q.zero_point"][:, None]) * loaded["q.scale"][:, None]
    assert same_bits(real, quantized.dequantize())


def test_writer_takes_numpy_arrays_and_dlpack_producers(tmp_path):
    path = tmp_path / "mixed.safetensors"
    hurray.save_safetensors(path, {"np": np.arange(3, dtype=np.int32), "pt": torch.arange(4.0)})
    f = hurray.load_safetensors(path)
    assert np.asarray(f["np"]).tolist() == [0, 1, 2] and np.asarray(f["pt"]).tolist() == [0, 1, 2, 3]


def test_writer_refuses_clashing_names_and_bad_metadata(tmp_path):
    path = tmp_path / "x.safetensors"
    path.write_bytes(b"untouched")
    q = hurray.quantize_affine(weights("c", (2, 32)), dtype="int8", axis=0)
    with pytest.raises(InvalidArgumentError, match="'w.scale' is used twice"):
        hurray.save_safetensors(path, {"w": q, "w.scale": np.zeros(2, np.float32)})
    with pytest.raises(InvalidArgumentError, match="reserved"):
        hurray.save_safetensors(path, {"w": q}, metadata={"hurray": "{}"})
    with pytest.raises(InvalidArgumentError, match="strings"):
        hurray.save_safetensors(path, {"w": q}, metadata={"n": 1})
    with pytest.raises(InvalidArgumentError, match="not a usable name"):
        hurray.save_safetensors(path, {"__metadata__": q})
    with pytest.raises(InvalidArgumentError, match="Mapping"):
        hurray.save_safetensors(path, [q])
    with pytest.raises(InvalidArgumentError, match="expected a hurray.Tensor"):
        hurray.save_safetensors(path, {"w": object()})
    assert path.read_bytes() == b"untouched"
    assert os.listdir(tmp_path) == ["x.safetensors"]  # no temporary file left behind


def test_saving_over_a_mapped_file_leaves_its_tensors_intact(tmp_path):
    """safetensors #762: writing in place over a mapped file showed zeros; a rename does not."""
    path = tmp_path / "m.safetensors"
    hurray.save_safetensors(path, {"w": np.full(1000, 7, np.int32)})
    old = hurray.load_safetensors(path)["w"]
    hurray.save_safetensors(path, {"w": np.full(1000, 9, np.int32)})
    gc.collect()
    assert np.asarray(old).tolist() == [7] * 1000
    assert np.asarray(hurray.load_safetensors(path)["w"]).tolist() == [9] * 1000


def test_tensors_outlive_the_closed_file(saved):
    path, tensors = saved
    f = hurray.load_safetensors(path)
    nv = f["nvfp4"]
    f.close()
    with pytest.raises(HurrayError, match="closed"):
        f["nvfp4"]
    del f
    gc.collect()
    assert same_bits(nv.dequantize(), tensors["nvfp4"].dequantize())


def test_fp6_bit_stream_order():
    """F6: element 0 in the low six bits of byte 0, then onwards: four elements in three bytes."""
    from hurray.formats.safetensors_file import _pack6, _unpack6

    codes = np.array([1, 2, 3, 63], np.uint8)
    packed = _pack6(codes)
    assert packed.tolist() == [1 | (2 << 6), (2 >> 2) | (3 << 4), (3 >> 4) | (63 << 2)]
    assert _unpack6(packed, 4).tolist() == codes.tolist()


# ---- broken files --------------------------------------------------------------

def st_file(entries, data, metadata=None, *, raw_header=None):
    header = dict(entries)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = raw_header if raw_header is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


F32x2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
DESC = hurray.Descriptor.build("uint8", (1, 32), scheme="ggml", ggml_type="q8_0").encode().hex()


def record(**tensors):
    return {"hurray": json.dumps({"format": 1, "tensors": tensors})}


BROKEN = {
    "shorter than the length": (b"\x10\x00\x00", "fewer than the 8"),
    "a header that claims gigabytes": (struct.pack("<Q", 5 << 30) + b"{}", "at most 100000000"),
    "a header past the end": (struct.pack("<Q", 64) + b"{}", "truncated"),
    "not UTF-8": (st_file({}, b"", raw_header=b'{"\xff": 1}'), "UTF-8"),
    "not JSON": (st_file({}, b"", raw_header=b"{nope"), "not valid JSON"),
    "not an object": (st_file({}, b"", raw_header=b"[1, 2]"), "not a JSON object"),
    "duplicate name": (st_file({}, bytes(8), raw_header=b'{"a": %s, "a": %s}' % (
        json.dumps(F32x2).encode(), json.dumps(F32x2).encode())), "duplicate name 'a'"),
    "duplicate key in an entry": (st_file({}, bytes(8), raw_header=b'{"a": {"dtype": "F32", "dtype": "F32", '
                                                                   b'"shape": [2], "data_offsets": [0, 8]}}'),
                                  "duplicate name 'dtype'"),
    "duplicate metadata key": (st_file({}, bytes(8), raw_header=b'{"__metadata__": {"k": "v", "k": "w"}, "a": %s}'
                                       % json.dumps(F32x2).encode()), "duplicate name 'k'"),
    "duplicate name, colons in the metadata": (st_file({}, bytes(8), raw_header=b'{"__metadata__": {"k": "a:b"}, '
                                                       b'"a": %s, "a": %s}' % (json.dumps(F32x2).encode(),
                                                                               json.dumps(F32x2).encode())),
                                               "duplicate name 'a'"),
    # Four escaped colons in the metadata would make up for the second "a"'s four keys, were they counted as colons.
    "duplicate name, escaped colons in the metadata": (
        st_file({}, bytes(8), raw_header=b'{"__metadata__": {"k": "\\u003a\\u003a\\u003a\\u003a"}, '
                                         b'"a": %s, "a": %s}' % (json.dumps(F32x2).encode(), json.dumps(F32x2).encode())),
        "duplicate name 'a'"),
    "entry not an object": (st_file({"a": 3}, b""), "not a JSON object"),
    "dtype missing": (st_file({"a": {"shape": [2], "data_offsets": [0, 8]}}, bytes(8)), "dtype"),
    "negative shape": (st_file({"a": {**F32x2, "shape": [-2]}}, bytes(8)), "non-negative"),
    "offsets reversed": (st_file({"a": {**F32x2, "data_offsets": [8, 0]}}, bytes(8)), "begin <= end"),
    "size mismatch": (st_file({"a": {**F32x2, "shape": [3]}}, bytes(8)), "needs 12 bytes"),
    "F4 in half a byte": (st_file({"a": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}}, bytes(2)),
                          "needs 1.5 bytes"),
    "overlap": (st_file({"a": F32x2, "b": {**F32x2, "data_offsets": [4, 12]}}, bytes(12)), "overlaps"),
    "gap": (st_file({"a": {**F32x2, "data_offsets": [4, 12]}}, bytes(12)), "gap"),
    "truncated data": (st_file({"a": F32x2}, bytes(6)), "truncated"),
    "trailing bytes": (st_file({"a": F32x2}, bytes(10)), "trailing"),
    "offsets outside the file": (st_file({"a": {**F32x2, "data_offsets": [1 << 40, (1 << 40) + 8]}}, bytes(8)),
                                 "gap"),
    "metadata not strings": (st_file({"a": F32x2}, bytes(8), {"k": 1}), "strings to strings"),
    "record with a name twice": (st_file({"a": F32x2}, bytes(8), {"hurray": '{"format": 1, "tensors": {}, '
                                                                    '"tensors": {}}'}), "duplicate name 'tensors'"),
    "record names a missing buffer": (
        st_file({"a": F32x2}, bytes(8), record(q={"descriptor": DESC, "buffers": ["nope"]})), "not in the file"),
    "record claims a buffer twice": (
        st_file({"a": F32x2}, bytes(8), record(q={"descriptor": DESC, "buffers": ["a", "a"]})), "claimed twice"),
    "record descriptor not hex": (
        st_file({"a": F32x2}, bytes(8), record(q={"descriptor": "zz", "buffers": ["a"]})), "not hexadecimal"),
    "record name clashes with an entry": (
        st_file({"a": F32x2, "q": {**F32x2, "data_offsets": [8, 16]}}, bytes(16),
                record(q={"descriptor": DESC, "buffers": ["a"]})), "both an entry"),
}


@pytest.mark.parametrize("value", ["{", "not ours", '{"format": "1", "tensors": {}}', '{"format": 1}', "[1, 2]",
                                   '{"format": 1, "tensors": []}', "[" * 100_000])
def test_a_hurray_key_that_is_not_our_record_is_metadata(tmp_path, value):
    """ADR-064 § 3: only a JSON object with an integer format and a tensors object is Hurray's record."""
    path = tmp_path / "foreign.safetensors"
    path.write_bytes(st_file({"a": F32x2}, bytes(8), {"hurray": value}))
    f = hurray.load_safetensors(path)
    assert sorted(f) == ["a"] and f.metadata == {"hurray": value}


def test_a_record_of_another_format_is_refused_by_number(tmp_path):
    path = tmp_path / "future.safetensors"
    path.write_bytes(st_file({"a": F32x2}, bytes(8), {"hurray": '{"format": 2, "tensors": {}}'}))
    with pytest.raises(UnsupportedError, match="format 2; this build reads format 1"):
        hurray.load_safetensors(path)


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_files_are_refused_by_name(tmp_path, case):
    data, words = BROKEN[case]
    path = tmp_path / "broken.safetensors"
    path.write_bytes(data)
    with pytest.raises(CorruptError, match=words):
        hurray.load_safetensors(path)


GOOD_HEADERS = {
    "offsets out of the entries' order": ({"b": {**F32x2, "data_offsets": [8, 16]}, "a": F32x2}, bytes(16), None),
    "empty tensors": ({"a": {"dtype": "F32", "shape": [0, 3], "data_offsets": [0, 0]}, "b": F32x2,
                       "c": {"dtype": "I8", "shape": [0], "data_offsets": [8, 8]}}, bytes(8), None),
    "three metadata keys": ({"a": F32x2}, bytes(8), {"x": "1", "y": "2", "z": "3"}),
    "colons in names and metadata": ({"a:b": F32x2}, bytes(8), {"k:": "v:w"}),
    "an unknown dtype": ({"a": F32x2, "b": {"dtype": "F7", "shape": [2], "data_offsets": [8, 9]}}, bytes(9), None),
    "an entry with a key more": ({"a": {**F32x2, "extra": {"x": 1}}}, bytes(8), None),
    "a scalar": ({"a": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, bytes(4), None),
}


@pytest.mark.parametrize("case", sorted(GOOD_HEADERS))
def test_the_fast_path_reads_what_the_checks_read(case):
    """_well_formed (the one-pass reading of a well-formed header) gives what the checks field by field give,
    or None, when it leaves the file to them."""
    from hurray.formats.safetensors_file import _entries, _header, _user_metadata, _well_formed

    entries, data, metadata = GOOD_HEADERS[case]
    raw = st_file(entries, data, metadata)
    start, header = _header(raw, len(raw), "x")
    meta = _user_metadata(header, "x")
    checked = (meta, _entries(header, start, len(raw), "x"))
    fast = _well_formed(raw, len(raw))
    if case in ("an unknown dtype", "an entry with a key more"):
        assert fast is None  # left to the checks
    else:
        assert fast == checked
    f = hurray.load_safetensors_bytes(raw)
    assert sorted(f) == sorted(entries) and f.metadata == (metadata or {})


# Header texts as JSON allows them, each beside 8 bytes of data: the C reader of the plain form
# (hurray._core.safetensors_header) reads each exactly as json.loads and the checks do, or leaves it
# to them (None); "refused" texts are ones the checks refuse, which the C reader must not accept.
_E = '{"dtype":"F32","shape":[2],"data_offsets":[0,8]}'
HEADER_TEXTS = {
    "plain": ("read", '{"a":' + _E + '}'),
    "white space everywhere": ("read", ' \t{ "a" :\n{ "shape" : [ 2 ] , "dtype" : "F32" , "data_offsets" : [ 0 , 8 ] }'
                                       ' , "__metadata__" : { "k" : "v" } }\r\n   '),
    "empty metadata and a scalar": ("read", '{"__metadata__":{},"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},'
                                            '"t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'),
    "a name in UTF-8": ("read", '{"gewicht.\u00e4":' + _E + '}'),
    "raw UTF-8 in a name and metadata": ("read", '{"w\u00e9ight\u4e2d":' + _E + ',"__metadata__":{"\u00e4":"\u00f6"}}'),
    "an escape in metadata": ("read", '{"a":' + _E + ',"__metadata__":{"k":"a\\"b"}}'),
    "an escaped name": ("read", '{"a\\u0062":' + _E + '}'),
    "entries out of order": ("read", '{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},'
                                     '"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
    "a zero dimension": ("read", '{"z":{"dtype":"F32","shape":[3,0],"data_offsets":[0,0]},"a":' + _E + '}'),
    "a name twice": ("refused", '{"a":' + _E + ',"a":' + _E + '}'),
    "metadata twice": ("refused", '{"__metadata__":{},"a":' + _E + ',"__metadata__":{}}'),
    "a metadata key twice": ("refused", '{"__metadata__":{"k":"1","k":"2"},"a":' + _E + '}'),
    "dtype twice": ("refused", '{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}'),
    "a float count": ("refused", '{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}'),
    "an exponent": ("refused", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8e0]}}'),
    "a negative count": ("refused", '{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}'),
    "a leading zero": ("refused", '{"a":{"dtype":"F32","shape":[02],"data_offsets":[0,8]}}'),
    "a boolean count": ("refused", '{"a":{"dtype":"F32","shape":[true],"data_offsets":[0,8]}}'),
    "a count past 2^63": ("refused", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,9223372036854775816]}}'),
    "a wrong size": ("refused", '{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}'),
    "offsets backwards": ("refused", '{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}'),
    "three offsets": ("refused", '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8,8]}}'),
    "a missing field": ("refused", '{"a":{"dtype":"F32","shape":[2]}}'),
    "metadata not strings": ("refused", '{"__metadata__":{"k":1},"a":' + _E + '}'),
    "a trailing comma": ("refused", '{"a":' + _E + ',}'),
    "text after the object": ("refused", '{"a":' + _E + '} x'),
    "two objects": ("refused", '{"a":' + _E + '}{}'),
    "unterminated": ("refused", '{"a":' + _E),
    "a control character in a name": ("refused", '{"a\x01":' + _E + '}'),
    "a gap": ("refused", '{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}'),
    "not an object": ("refused", '[' + _E + ']'),
}


@pytest.mark.parametrize("case", sorted(HEADER_TEXTS))
def test_the_c_reader_of_a_header_agrees_with_the_checks(case):
    from hurray._core import safetensors_header
    from hurray.formats.safetensors_file import _BITS, _entries, _header, _user_metadata, _well_formed

    want, text = HEADER_TEXTS[case]
    raw = st_file({}, bytes(8), raw_header=text.encode())
    fast = _well_formed(raw, len(raw))
    plain = safetensors_header(text.encode(), 8 + len(text.encode()), _BITS)
    if want == "refused":
        assert fast is None
        with pytest.raises(CorruptError):
            hurray.load_safetensors_bytes(raw)
        return
    start, header = _header(raw, len(raw), "x")
    checked = (_user_metadata(header, "x"), _entries(header, start, len(raw), "x"))
    assert fast == checked
    if "\\" not in text:  # the C reader read it itself, in the entries' order
        assert plain is not None and plain[:2] == checked and list(plain[1]) == list(checked[1])
    else:
        assert plain is None  # an escape: json.loads reads it


def test_the_c_reader_of_a_header_answers_none_at_every_cut():
    """Every prefix of a header text, and every byte of it replaced, is read as the checks read it or left to them."""
    from hurray._core import safetensors_header
    from hurray.formats.safetensors_file import _BITS, _entries, _header, _user_metadata

    text = HEADER_TEXTS["white space everywhere"][1].encode()
    variants = [text[:i] for i in range(len(text))]
    variants += [text[:i] + bytes([c]) + text[i + 1:] for i in range(len(text)) for c in b'"{}[],:0 \\x\xff']
    for variant in variants:
        raw = st_file({}, bytes(8), raw_header=variant)
        plain = safetensors_header(variant, 8 + len(variant), _BITS)
        if plain is None:
            continue
        start, header = _header(raw, len(raw), "x")  # what C accepted, json.loads reads the same
        meta = _user_metadata(header, "x")
        assert plain[0] == meta
        if plain[2] == len(raw) - start or plain[2] < 0:
            try:
                checked = _entries(header, start, len(raw), "x")
            except CorruptError:
                continue  # the data does not tile: _covers refuses it in _well_formed too
            assert plain[1] == checked


def test_safetensors_itself_refuses_the_broken_files_too(tmp_path):
    """The layout checks are safetensors' own: its reader refuses the same files. (A duplicate name it
    takes, the last one winning; Hurray refuses it, as IO.md asks.)"""
    path = tmp_path / "broken.safetensors"
    for case in ("a header that claims gigabytes", "a header past the end", "not JSON", "size mismatch",
                 "overlap", "gap", "truncated data", "trailing bytes", "F4 in half a byte", "not an object"):
        path.write_bytes(BROKEN[case][0])
        with pytest.raises(Exception):
            safe_open(str(path), "np")


def test_record_descriptors_are_checked_when_the_tensor_is_asked_for(tmp_path):
    path = tmp_path / "r.safetensors"
    # A Q8_0 descriptor of 32 elements needs 34 bytes; the buffer holds 8.
    path.write_bytes(st_file({"q": F32x2}, bytes(8), record(q={"descriptor": DESC, "buffers": ["q"]})))
    f = hurray.load_safetensors(path)
    with pytest.raises(CorruptError, match="do not hold"):
        f["q"]
    path.write_bytes(st_file({"q": F32x2}, bytes(8), record(q={"descriptor": "00ff", "buffers": ["q"]})))
    with pytest.raises(HurrayError):
        hurray.load_safetensors(path)["q"]


def test_an_unknown_dtype_is_refused_only_when_asked_for(tmp_path):
    path = tmp_path / "u.safetensors"
    path.write_bytes(st_file({"odd": {"dtype": "F2_NEW", "shape": [8], "data_offsets": [0, 2]},
                              "a": {**F32x2, "data_offsets": [2, 10]}}, bytes(10)))
    f = hurray.load_safetensors(path)
    assert sorted(f) == ["a", "odd"]
    with pytest.raises(UnsupportedError, match="'F2_NEW'"):
        f["odd"]
    assert np.asarray(f["a"]).tolist() == [0, 0]


def test_every_truncation_is_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    hurray.save_safetensors(path, {"a": np.arange(4, dtype=np.float32),
                                   "q": hurray.quantize_affine(weights("t", (2, 32)), axis=0)})
    whole = path.read_bytes()
    for length in range(len(whole)):
        path.write_bytes(whole[:length])
        with pytest.raises(CorruptError):
            hurray.load_safetensors(path)
