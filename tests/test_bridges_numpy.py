"""from_numpy and np.asarray(tensor): zero-copy both ways, every dtype and layout."""
import gc
import sys
import weakref

import ml_dtypes
import numpy as np
import pytest

import hurray
from hurray import dtypes, from_numpy
from hurray.errors import HurrayError, InvalidArgumentError, UnsupportedError

NUMPY_TYPES = [d for d in dtypes.DTYPES if d.numpy is not None]
RNG = np.random.default_rng(1234)


def random_array(dt, shape):
    """Random bit patterns (NaNs and all) of dtype `dt`; sub-byte types get valid low-bit codes."""
    dt = np.dtype(dt)
    raw = RNG.integers(0, 256, size=int(np.prod(shape)) * dt.itemsize, dtype=np.uint8)
    info = dtypes.dtype_info(dt)
    if info.sub_byte:
        raw &= (1 << info.bits) - 1
    if dt.kind == "b":
        raw &= 1
    return raw.view(dt).reshape(shape)


def round_trip(array):
    t = from_numpy(array)
    back = np.asarray(t)
    assert back.dtype == array.dtype
    assert back.shape == array.shape
    # Bit-exact, NaN payloads included: compare the raw bytes in C order.
    assert back.tobytes() == array.tobytes()
    if array.size:
        assert np.shares_memory(back, array)
        assert back.__array_interface__["data"][0] == array.__array_interface__["data"][0]
    return t, back


@pytest.mark.parametrize("info", NUMPY_TYPES, ids=lambda d: d.name)
def test_every_dtype_round_trips_exactly(info):
    a = random_array(info.numpy, (5, 7))
    t, back = round_trip(a)
    assert t.dtype == info.name
    assert t.descriptor.packing == ("padded" if info.sub_byte else "none")
    assert back.strides == a.strides
    # Transposed, reversed and sliced views of every type as well.
    round_trip(a.T)
    round_trip(a[::-1, ::-2])
    round_trip(a[1:4, 2])


def test_float8_nan_patterns_survive():
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float8_e4m3fnuz", "bfloat16"):
        dt = np.dtype(getattr(ml_dtypes, name))
        a = np.arange(256 ** dt.itemsize, dtype=np.uint64)
        a = a.astype(np.uint8 if dt.itemsize == 1 else np.uint16).view(dt)
        _, back = round_trip(a)
        assert back.view(np.uint8).tobytes() == a.view(np.uint8).tobytes()


@pytest.mark.parametrize(
    "make",
    [
        lambda a: a[::-1],
        lambda a: a[:, ::-1],
        lambda a: a[::-2, ::3],
        lambda a: a.T,
        lambda a: a.transpose(2, 0, 1)[:, ::-1],
        lambda a: a[1:3, :, 2:],
        lambda a: a[..., 1],
        lambda a: a[None, :, None],
        lambda a: np.broadcast_to(a[0, :1, :], (4, 3, 5)),
        lambda a: np.broadcast_to(a[1, 2, 3], (2, 3)),
        lambda a: a[:0],
        lambda a: a[2:2, ::-1],
        lambda a: a[1, 2, 3:4].reshape(()),
        lambda a: a[1, 2, 3:4],
    ],
    ids=["rev0", "rev1", "step", "T", "perm-rev", "slice", "last", "newaxis", "broadcast",
         "broadcast-scalar", "empty", "empty-rev", "0d", "one"],
)
def test_layouts(make):
    base = np.arange(4 * 3 * 5, dtype=np.float64).reshape(4, 3, 5)
    a = make(base)
    t, back = round_trip(a)
    assert back.strides == a.strides or a.size <= 1
    # Element strides are byte strides over the item size.
    assert all(s * 8 == b for s, b, n in zip(t.strides, a.strides, a.shape) if n > 1)
    if a.size:
        low, high = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") else np.byte_bounds(a)
        (address, nbytes), = t.buffers
        assert (address, nbytes) == (low, high - low)
        assert t.descriptor.byte_offset == a.__array_interface__["data"][0] - low
    assert np.array_equal(back, a)


def test_writes_are_shared_both_ways():
    a = np.zeros((3, 4), np.int32)[:, ::-1]
    t = from_numpy(a)
    back = np.asarray(t)
    back[0, 0] = 7
    assert a[0, 0] == 7
    a[2, 3] = -5
    assert back[2, 3] == -5
    assert not t.readonly and back.flags.writeable


def test_readonly_arrays_give_readonly_views():
    a = np.arange(6, dtype=np.uint16)
    a.flags.writeable = False
    t = from_numpy(a)
    assert t.readonly
    back = np.asarray(t)
    assert not back.flags.writeable
    with pytest.raises(ValueError):
        back[0] = 1
    assert not t.buffer(0).flags.writeable
    b = from_numpy(np.broadcast_to(np.arange(3.0), (2, 3)))
    assert b.readonly and b.strides == (0, 1)


@pytest.mark.parametrize("code", ["i2", "u4", "i8", "f2", "f4", "f8", "c8", "c16", "u8"])
def test_big_endian_numpy_types(code):
    other = ">" if sys.byteorder == "little" else "<"
    a = np.arange(12).astype(other + code).reshape(3, 4)[:, ::-1]
    t, back = round_trip(a)
    assert t.descriptor.byte_order == ("big" if other == ">" else "little")
    assert back.dtype == np.dtype(other + code)
    assert np.array_equal(back.astype(code), np.arange(12).reshape(3, 4)[:, ::-1].astype(code))


def test_big_endian_bfloat16():
    dt = np.dtype(ml_dtypes.bfloat16).newbyteorder("S")
    a = np.array([1.5, -3.0, 0.25], ml_dtypes.bfloat16).astype(dt)
    t, back = round_trip(a)
    assert t.descriptor.byte_order != sys.byteorder
    assert back.astype(np.float32).tolist() == [1.5, -3.0, 0.25]


def test_non_native_complex32_is_refused():
    a = np.zeros(3, ml_dtypes.complex32)
    with pytest.raises(UnsupportedError, match="complex32"):
        from_numpy(a.view(a.dtype.newbyteorder("S")))


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 4, 2), (2, 0, 0)])
def test_zero_size(shape):
    a = np.zeros(shape, np.float32)
    t, back = round_trip(a)
    assert t.buffers[0][1] == 0
    assert back.shape == shape


def test_zero_size_sub_byte_and_zero_d():
    round_trip(np.zeros((0, 3), ml_dtypes.int4))
    t, back = round_trip(np.array(3.5, ml_dtypes.float8_e4m3fn))
    assert t.shape == () and back.shape == () and float(back) == 3.5


def test_sub_byte_arrays_are_padded():
    a = np.array([-8, -1, 0, 7], ml_dtypes.int4)
    t, back = round_trip(a)
    assert t.descriptor.packing == "padded"
    assert back.astype(np.int8).tolist() == [-8, -1, 0, 7]


class Owner:
    """Memory whose owner is an ordinary object a weakref can watch."""

    def __init__(self, n):
        self._data = np.arange(n, dtype=np.float32)
        self.__array_interface__ = dict(self._data.__array_interface__)


def test_lifetime_tensor_keeps_owner_alive():
    a = np.asarray(Owner(10))
    ref = weakref.ref(a.base)
    t = from_numpy(a[::-1])
    del a
    gc.collect()
    assert ref() is not None
    assert t.owner is not None
    del t
    gc.collect()
    assert ref() is None


def test_lifetime_view_keeps_tensor_and_owner_alive():
    a = np.asarray(Owner(10))
    ref = weakref.ref(a.base)
    t = from_numpy(a)
    tref = weakref.ref(t)
    view = np.asarray(t)[2:5]
    del a, t
    gc.collect()
    assert ref() is not None and tref() is not None
    assert view.tolist() == [2.0, 3.0, 4.0]
    del view
    gc.collect()
    assert tref() is None
    assert ref() is None


def test_buffer_keeps_tensor_alive():
    a = np.asarray(Owner(4))
    ref = weakref.ref(a.base)
    raw = from_numpy(a).buffer(0)
    del a
    gc.collect()
    assert ref() is not None
    assert raw.view(np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]
    del raw
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize(
    "bad, error",
    [
        (np.array([object(), 1], dtype=object), UnsupportedError),
        (np.zeros(3, dtype=[("a", "f4"), ("b", "u1")]), UnsupportedError),
        (np.array(["ab", "c"]), UnsupportedError),
        (np.array([1, 2], "datetime64[s]"), UnsupportedError),
        (np.zeros(3, "V4"), UnsupportedError),
        ([1.0, 2.0], InvalidArgumentError),
        (None, InvalidArgumentError),
    ],
)
def test_bad_input_raises(bad, error):
    with pytest.raises(error):
        from_numpy(bad)


def test_from_numpy_encodes_only_when_asked():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::-1]
    t = from_numpy(a)
    assert t.descriptor._bytes is None
    assert t.descriptor.encode() == t.descriptor._encode_in_c()
    assert hurray.Descriptor.decode(t.descriptor.encode()) == t.descriptor
    back = hurray.from_hurray(from_numpy(a))  # the protocol asks for the bytes
    assert np.array_equal(np.asarray(back), a)


def test_from_numpy_spans_are_still_checked(monkeypatch):
    from hurray.core import tensor as tensor_module

    calls = []
    real = tensor_module.check_spans
    monkeypatch.setattr(tensor_module, "check_spans", lambda d, spans: calls.append(spans) or real(d, spans))
    from hurray.bridges import numpy as numpy_bridge

    # A dtype from_numpy has not met yet takes the Python path, which checks
    # the spans through check_spans; the C path (hurray._core) runs
    # hurray_descriptor_check_buffers itself (check_one_span in _core.c).
    monkeypatch.setattr(numpy_bridge, "_CODES", numpy_bridge._CODES)
    numpy_bridge._CODES.pop(np.dtype(np.int16), None)
    a = np.zeros(3, np.int16)
    t = from_numpy(a)
    assert calls == [((a.ctypes.data, 6),)]
    assert np.dtype(np.int16) in numpy_bridge._CODES  # the C path serves it from now on
    assert from_numpy(a).buffers == t.buffers == ((a.ctypes.data, 6),)


def test_masked_arrays_are_refused():
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    with pytest.raises(UnsupportedError, match="mask"):
        from_numpy(masked)
    with pytest.raises(UnsupportedError, match="mask"):
        from_numpy(np.ma.masked_array(np.zeros((2, 2), np.int8)))  # even with nothing masked


class Tagged(np.ndarray):
    """An ndarray subclass, standing for np.matrix, np.memmap and friends."""


def test_other_subclasses_are_read_as_plain_arrays(tmp_path):
    base = np.arange(6, dtype=np.int16).reshape(2, 3)
    tagged = base.view(Tagged)
    t = from_numpy(tagged)
    assert t.owner is tagged
    back = np.asarray(t)
    assert type(back) is np.ndarray and np.array_equal(back, base) and np.shares_memory(back, base)

    path = tmp_path / "data.bin"
    np.arange(8, dtype=np.float32).tofile(path)
    mapped = np.memmap(path, dtype=np.float32, mode="r+", shape=(8,))
    t = from_numpy(mapped[::2])
    assert isinstance(t.owner, np.memmap)
    del mapped
    gc.collect()
    assert np.array_equal(np.asarray(t), [0.0, 2.0, 4.0, 6.0])  # the owner keeps the file mapped


def test_strides_must_be_whole_elements():
    raw = np.zeros(64, np.uint8)
    odd = np.lib.stride_tricks.as_strided(raw[1:].view(np.uint8), shape=(5,), strides=(3,)).view(np.uint8)
    odd16 = np.ndarray((5,), np.int16, buffer=raw, offset=0, strides=(3,))
    with pytest.raises(InvalidArgumentError, match="whole number"):
        from_numpy(odd16)
    assert from_numpy(odd).strides == (3,)
    # A length-1 dimension is never stepped along, so its stride may be anything.
    one = np.ndarray((1, 4), np.int16, buffer=raw, offset=0, strides=(3, 2))
    t = from_numpy(one)
    assert np.array_equal(np.asarray(t), one)


def test_misaligned_data_pointer_is_fine():
    raw = np.zeros(40, np.uint8)
    a = raw[1:33].view(np.float64)
    a[:] = [1, 2, 3, 4]
    _, back = round_trip(a)
    assert back.tolist() == [1, 2, 3, 4]


def test_array_dtype_and_copy_arguments():
    a = np.arange(6, dtype=np.int16)
    t = from_numpy(a)
    as_float = np.asarray(t, dtype=np.float32)
    assert as_float.dtype == np.float32 and not np.shares_memory(as_float, a)
    copied = np.array(t, copy=True)
    assert np.array_equal(copied, a) and not np.shares_memory(copied, a)
    same = np.asarray(t, dtype=np.int16)
    assert np.shares_memory(same, a)
    if np.lib.NumpyVersion(np.__version__) >= "2.0.0":
        with pytest.raises(ValueError):
            np.array(t, dtype=np.float32, copy=False)


def test_numpy_scalars_become_0d_tensors():
    t = from_numpy(np.float32(1.5))
    assert t.shape == () and t.dtype == "float32"
    assert np.asarray(t).tolist() == 1.5
    assert from_numpy(ml_dtypes.bfloat16(2.0)).dtype == "bfloat16"


def test_errors_are_hurray_errors():
    with pytest.raises(HurrayError):
        from_numpy(np.zeros(2, object))
    assert hurray.from_numpy is from_numpy
