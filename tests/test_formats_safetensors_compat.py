"""safetensors without surprises (ADR-064): what Hurray writes is, by default, the
very bytes safetensors.numpy writes for the same dict, and what it reads it
reads as safetensors does. These are the cases of safetensors' own Python
tests (bindings/python/tests/test_simple.py), stated again as facts about
behaviour and checked against the installed safetensors itself, plus the
ones a cross-check found: empty arrays, big-endian and non-contiguous
arrays, a foreign "hurray" metadata key, bytes in and out, a missing file.
"""
import errno

import ml_dtypes
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save
from safetensors.numpy import save_file as st_save_file

import hurray
from hurray import load_safetensors_bytes, save_safetensors_bytes

NUMPY_DTYPES = ["float64", "float32", "float16", "int64", "uint64", "int32", "uint32", "int16", "uint16", "int8",
                "uint8", "bool", "complex64"]


def _same_as_safetensors(tmp_path, tensors, metadata=None):
    ours = tmp_path / "ours.safetensors"
    theirs = tmp_path / "theirs.safetensors"
    hurray.save_safetensors(ours, tensors, metadata=metadata)
    st_save_file(tensors, str(theirs), metadata=metadata)
    assert ours.read_bytes() == theirs.read_bytes()
    assert save_safetensors_bytes(tensors, metadata=metadata) == st_save(tensors, metadata=metadata)


def test_one_tensor_byte_for_byte(tmp_path):
    data = np.zeros((2, 2), dtype=np.int32)
    _same_as_safetensors(tmp_path, {"test": data})
    data[1, 1] = 1
    _same_as_safetensors(tmp_path, {"test": data})
    # the header is padded with spaces to a multiple of 8, the data follows it
    raw = save_safetensors_bytes({"test": data})
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0 and raw[8 + n:] == data.tobytes()


def test_order_of_the_dict_does_not_matter_and_wider_types_come_first(tmp_path):
    a, b = np.zeros((2, 2), np.int32), np.zeros((2, 2), np.float16)
    assert save_safetensors_bytes({"test1": a, "test2": b}) == save_safetensors_bytes({"test2": b, "test1": a})
    _same_as_safetensors(tmp_path, {"test2": b, "test1": a})


def test_metadata(tmp_path):
    _same_as_safetensors(tmp_path, {"test1": np.zeros((2, 2), np.int32)}, metadata={"framework": "pt"})


def test_big_endian_is_written_little_endian(tmp_path):
    data = np.arange(4, dtype=">i4").reshape(2, 2)
    _same_as_safetensors(tmp_path, {"test1": data}, metadata={"framework": "pt"})
    back = load_safetensors_bytes(save_safetensors_bytes({"test1": data}))
    assert back.metadata == {} and np.asarray(back["test1"]).dtype == np.dtype("<i4")
    assert np.array_equal(np.asarray(back["test1"]), data)


def test_non_contiguous_arrays_are_written_in_c_order(tmp_path):
    data = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::-3]
    raw = save_safetensors_bytes({"v": data})
    assert raw == st_save({"v": np.ascontiguousarray(data)})
    assert np.array_equal(np.asarray(load_safetensors_bytes(raw)["v"]), data)


@pytest.mark.parametrize("shape", [(0,), (2, 0), (0, 3, 4), (5, 0, 0)])
@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "float16"])
def test_empty_arrays_keep_their_dtype_and_shape(tmp_path, shape, dtype):
    data = np.zeros(shape, dtype)
    _same_as_safetensors(tmp_path, {"e": data, "x": np.ones(3, np.float32)})
    back = load_safetensors_bytes(save_safetensors_bytes({"e": data}))["e"]
    assert back.dtype == dtype and back.shape == shape


def test_bool_and_scalars(tmp_path):
    _same_as_safetensors(tmp_path, {"a": np.asarray(False), "b": np.array(3.5, np.float64)})


def test_every_numpy_dtype_safetensors_writes(tmp_path):
    tensors = {d: (np.arange(6) % 2).astype(d).reshape(2, 3) for d in NUMPY_DTYPES}
    _same_as_safetensors(tmp_path, tensors)
    loaded = st_load(save_safetensors_bytes(tensors))
    for name, value in tensors.items():
        assert np.array_equal(loaded[name], value)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "__metadata__"),
                       st.tuples(st.sampled_from(NUMPY_DTYPES), st.lists(st.integers(0, 3), max_size=3)),
                       max_size=5),
       st.one_of(st.none(), st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=1)))
def test_any_dict_is_written_as_safetensors_writes_it(specs, metadata):
    assume(specs or metadata != {})  # no tensors and empty metadata: see the next test
    rng = np.random.default_rng(0)
    tensors = {k: np.asarray(rng.integers(0, 100, shape) % 7).astype(d) for k, (d, shape) in specs.items()}
    assert save_safetensors_bytes(tensors, metadata=metadata) == st_save(tensors, metadata=metadata)


def test_empty_metadata_without_tensors_is_json(tmp_path):
    """For no tensors and metadata {}, safetensors 0.8 writes '{},"__metadata__":{}}', which its own reader
    refuses (ADR-064): Hurray writes the header that means what was asked, and safetensors reads it."""
    theirs = st_save({}, metadata={})
    with pytest.raises(Exception, match="JSON"):
        st_load(theirs)
    ours = save_safetensors_bytes({}, metadata={})
    assert ours[8:].rstrip(b" ") == b'{"__metadata__":{}}'
    assert st_load(ours) == {} and load_safetensors_bytes(ours).metadata == {}
    # with a key, the two agree again
    assert save_safetensors_bytes({}, metadata={"k": "v"}) == st_save({}, metadata={"k": "v"})


def test_a_larger_alignment_is_an_option(tmp_path):
    raw = save_safetensors_bytes({"a": np.ones(3, np.float32), "b": np.ones(5, np.int8)}, alignment=64)
    n = int.from_bytes(raw[:8], "little")
    assert (8 + n) % 64 == 0
    assert sorted(st_load(raw)) == ["a", "b"]
    with pytest.raises(hurray.HurrayError, match="alignment"):
        save_safetensors_bytes({}, alignment=12)


def test_a_foreign_hurray_key_is_ignored(tmp_path):
    path = tmp_path / "foreign.safetensors"
    st_save_file({"w": np.ones(2, np.float32)}, str(path), metadata={"hurray": "not ours", "x": "y"})
    f = hurray.load_safetensors(path)
    assert sorted(f) == ["w"] and f.metadata == {"hurray": "not ours", "x": "y"}
    # written back, it is the user's metadata still (one key: safetensors' own key order is a hash map's)
    one = {"hurray": "not ours"}
    assert save_safetensors_bytes({"w": f["w"]}, metadata=one) == st_save({"w": np.ones(2, np.float32)}, metadata=one)
    q = hurray.quantize_affine(np.ones((2, 32), np.float32), dtype="int8", axis=0)
    with pytest.raises(hurray.HurrayError, match="reserved"):  # unless a tensor needs Hurray's record
        save_safetensors_bytes({"q": q}, metadata=one)


def test_hurrays_own_record_only_for_what_safetensors_cannot_state(tmp_path):
    raw = save_safetensors_bytes({"a": np.ones((2, 2), ml_dtypes.bfloat16), "b": np.ones(4, ml_dtypes.float8_e4m3fn)})
    n = int.from_bytes(raw[:8], "little")
    assert b"__metadata__" not in raw[8:8 + n]
    q = hurray.quantize_affine(np.ones((2, 32), np.float32), dtype="int8", axis=0)
    back = load_safetensors_bytes(save_safetensors_bytes({"q": q}))
    assert back["q"].descriptor == q.descriptor


def test_bytes_in_and_out():
    tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros((2, 3), np.uint8)}
    back = load_safetensors_bytes(st_save(tensors))
    assert sorted(back) == ["a", "b"]
    for k, v in tensors.items():
        assert np.array_equal(np.asarray(back[k]), v)
    assert st_load(save_safetensors_bytes(tensors)).keys() == tensors.keys()
    with pytest.raises(hurray.HurrayError):
        load_safetensors_bytes(b"\x05\x00\x00")
    with pytest.raises(hurray.HurrayError, match="expected bytes"):
        load_safetensors_bytes("not bytes")


def test_bytes_are_read_zero_copy_and_kept_alive():
    raw = bytearray(save_safetensors_bytes({"a": np.arange(4, dtype=np.float32)}))
    with load_safetensors_bytes(memoryview(raw)) as f:
        assert f.path == "<bytes>"
        a = f["a"]
    del f
    assert a.readonly and np.asarray(a).tolist() == [0, 1, 2, 3]
    address, nbytes = a.buffers[0]
    start = np.frombuffer(raw, np.uint8).__array_interface__["data"][0]
    assert start <= address and address + nbytes <= start + len(raw)  # a view of the caller's bytes


def test_a_missing_file_is_a_file_not_found_error(tmp_path):
    for reader in (hurray.load_safetensors, hurray.load_gguf, hurray.load, hurray.load_checkpoint, hurray.File):
        with pytest.raises(FileNotFoundError) as caught:
            reader(tmp_path / "notafile.safetensors")
        assert caught.value.errno == errno.ENOENT
        assert isinstance(caught.value, hurray.errors.HurrayFileNotFoundError)  # one mechanism: the path policy's
