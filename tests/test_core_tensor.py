"""hurray.Tensor: span checking, buffers, numpy views and their refusals."""
import gc
import weakref

import ml_dtypes
import numpy as np
import pytest

from hurray import Descriptor, Part, Tensor, from_hurray, from_numpy
from hurray.errors import (
    BufferTooSmallError,
    HurrayError,
    HurrayOverflowError,
    InvalidArgumentError,
    NullArgumentError,
    OutOfRangeError,
    UnsupportedError,
)


def span(array):
    return (array.__array_interface__["data"][0], array.nbytes)


def test_spans_are_checked_against_the_descriptor():
    data = np.zeros(24, np.uint8)
    d = Descriptor.build("float32", (2, 3))
    t = Tensor(d, [span(data)], owner=data)
    assert t.shape == (2, 3) and t.dtype == "float32" and t.strides == (3, 1)
    assert t.ndim == 2 and t.size == 6 and t.descriptor is d and t.owner is data
    with pytest.raises(BufferTooSmallError):
        Tensor(d, [(span(data)[0], 23)], owner=data)
    moved = Descriptor.build("float32", (2, 3), parts={"values": Part("float32", 0, 4)})
    with pytest.raises(BufferTooSmallError):
        Tensor(moved, [span(data)], owner=data)
    reversed_rows = Descriptor.build("float32", (2, 3), (-3, 1))
    with pytest.raises(BufferTooSmallError):
        Tensor(reversed_rows, [span(data)], owner=data)
    # The same layout fits once element 0 sits in the last row.
    fitted = Descriptor.build("float32", (2, 3), (-3, 1), parts={"values": {"byte_offset": 12}})
    Tensor(fitted, [span(data)], owner=data)


def test_buffer_count_must_match():
    data = np.zeros(64, np.uint8)
    d = Descriptor.build("float32", (4,))
    with pytest.raises(InvalidArgumentError):
        Tensor(d, [], owner=data)
    with pytest.raises(InvalidArgumentError):
        Tensor(d, [span(data), span(data)], owner=data)


@pytest.mark.parametrize(
    "buffers, error",
    [
        ([(0, 16)], NullArgumentError),
        ([(-1, 16)], InvalidArgumentError),
        ([(16, -1)], InvalidArgumentError),
        ([(1 << 64, 16)], HurrayOverflowError),
        ([(1.5, 16)], InvalidArgumentError),
        ([(16,)], InvalidArgumentError),
        ([16], InvalidArgumentError),
        (None, InvalidArgumentError),
        ([((1 << 64) - 8, 16)], HurrayOverflowError),
    ],
)
def test_bad_spans_raise(buffers, error):
    with pytest.raises(error):
        Tensor(Descriptor.build("float32", (4,)), buffers)


def test_spans_may_come_from_an_iterator():
    data = np.arange(4, dtype=np.float32)
    d = Descriptor.build("float32", (4,))
    address, nbytes = span(data)
    # numpy integers take the slow path, which must not find the iterator spent.
    t = Tensor(d, iter([(np.uint64(address), np.int64(nbytes))]), owner=data)
    assert t.buffers == ((address, nbytes),) and type(t.buffers[0][0]) is int
    assert np.shares_memory(np.asarray(t), data)
    with pytest.raises(InvalidArgumentError, match="buffer 0 nbytes must not be negative"):
        Tensor(d, (pair for pair in [(address, -1)]), owner=data)
    with pytest.raises(InvalidArgumentError, match="sequence of"):
        Tensor(d, 5)


def test_descriptor_must_be_a_descriptor():
    with pytest.raises(InvalidArgumentError):
        Tensor(Descriptor.build("float32", (1,)).encode(), [(8, 4)])


def test_empty_tensor_needs_no_memory():
    t = Tensor(Descriptor.build("float64", (0, 5)), [(0, 0)])
    back = np.asarray(t)
    assert back.shape == (0, 5) and back.dtype == np.float64
    assert t.buffer(0).size == 0


def test_buffer_is_zero_copy_and_keeps_tensor_alive():
    a = np.arange(6, dtype=np.int32)
    t = from_numpy(a)
    raw = t.buffer(0)
    assert raw.dtype == np.uint8 and raw.size == 24 and np.shares_memory(raw, a)
    ref = weakref.ref(t)
    del t
    gc.collect()
    assert ref() is not None
    raw[0] = 9
    assert a[0] == 9
    del raw
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("index", [1, -1, 100])
def test_buffer_index_out_of_range(index):
    t = from_numpy(np.zeros(3))
    with pytest.raises(OutOfRangeError):
        t.buffer(index)


def test_buffer_index_must_be_an_integer():
    t = from_numpy(np.zeros(3))
    for bad in ("0", 0.0, True):
        with pytest.raises(InvalidArgumentError):
            t.buffer(bad)


def quantized_per_axis():
    values = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    scales = np.array([0.5, 1.0, 2.0], np.float32)
    store = np.concatenate([values.view(np.uint8).reshape(-1), scales.view(np.uint8)])
    d = Descriptor.build("int8", (3, 4), scheme="affine", granularity="per_axis", axis=0,
                         parts={"scale": Part("float32", 1, 0)})
    base = store.__array_interface__["data"][0]
    return Tensor(d, [(base, 12), (base + 12, 12)], owner=store), values, scales


def test_quantized_asarray_names_what_is_lost():
    t, values, _ = quantized_per_axis()
    with pytest.raises(UnsupportedError, match=r"affine per_axis quantization: use Tensor\.dequantize\(\)"):
        np.asarray(t)
    # The stored codes are still reachable on purpose, without copying.
    stored = t.stored_values()
    assert np.array_equal(stored, values) and stored.dtype == np.int8
    assert np.shares_memory(stored, t.buffer(0))
    assert np.array_equal(t.unpack(), values)


def test_values_in_a_later_buffer_at_an_offset():
    scale = np.array([0.25], np.float32)
    values = np.arange(20, dtype=np.uint8)
    d = Descriptor.build("uint8", (2, 3), (-3, 1), scheme="affine", granularity="per_tensor",
                         parts={"values": Part("uint8", 1, 10), "scale": Part("float32", 0)})
    t = Tensor(d, [span(scale), span(values)], owner=(scale, values))
    assert t.stored_values().tolist() == [[10, 11, 12], [7, 8, 9]]
    assert np.shares_memory(t.stored_values(), values)
    assert np.array_equal(t.buffer(0).view(np.float32), scale)


def test_zero_d_tensor_at_an_offset():
    data = np.arange(4, dtype=np.float32)
    t = Tensor(Descriptor.build("float32", (), parts={"values": {"byte_offset": 8}}), [span(data)], owner=data)
    back = np.asarray(t)
    assert back.shape == () and back.tolist() == 2.0 and np.shares_memory(back, data)


def test_ggml_asarray_names_the_block_format():
    blocks = np.zeros(2 * 18, np.uint8)
    t = Tensor(Descriptor.build("uint8", (2, 32), scheme="ggml", ggml_type="q4_0"), [span(blocks)], owner=blocks)
    with pytest.raises(UnsupportedError, match="ggml q4_0 blocks"):
        np.asarray(t)
    with pytest.raises(UnsupportedError, match="ggml"):
        t.stored_values()
    with pytest.raises(UnsupportedError, match="ggml"):
        t.unpack()


def test_microscaling_asarray_refused():
    values = np.zeros((2, 32), np.uint8)  # float4_e2m1fn padded
    scales = np.zeros(2, np.uint8)
    d = Descriptor.build("float4_e2m1fn", (2, 32), packing="padded", scheme="microscaling",
                         granularity="per_block", axis=1, block_size=32,
                         parts={"scale": Part("float8_e8m0fnu", 1)})
    t = Tensor(d, [span(values), span(scales)], owner=(values, scales))
    with pytest.raises(UnsupportedError, match="microscaling per_block quantization"):
        np.asarray(t)
    assert t.stored_values().dtype == np.dtype(ml_dtypes.float4_e2m1fn)


def test_packed_asarray_names_the_packing():
    data = np.array([0x21, 0x43], np.uint8)
    t = Tensor(Descriptor.build("int4", (4,), packing="lsb_first"), [span(data)], owner=data)
    with pytest.raises(UnsupportedError, match="packed 4-bit lsb_first elements"):
        np.asarray(t)
    with pytest.raises(UnsupportedError, match="packed 4-bit lsb_first"):
        t.stored_values()
    assert t.unpack().astype(np.int8).tolist() == [1, 2, 3, 4]
    data2 = np.array([0b11100100], np.uint8)
    t2 = Tensor(Descriptor.build("int2", (4,)), [span(data2)], owner=data2)
    assert t2.unpack().astype(np.int8).tolist() == [0, 1, -2, -1]


def test_padded_sub_byte_views():
    codes = np.array([[0, 1, 7], [8, 15, 9]], np.uint8)
    t = Tensor(Descriptor.build("int4", (2, 3), packing="padded"), [span(codes)], owner=codes)
    back = np.asarray(t)
    assert back.dtype == np.dtype(ml_dtypes.int4)
    assert back.astype(np.int8).tolist() == [[0, 1, 7], [-8, -1, -7]]
    assert np.shares_memory(back, codes)


def test_big_endian_descriptor_over_raw_bytes():
    raw = np.array([0x3F, 0x80, 0, 0, 0x40, 0, 0, 0], np.uint8)  # 1.0, 2.0 as big-endian float32
    t = Tensor(Descriptor.build("float32", (2,), byte_order="big"), [span(raw)], owner=raw)
    back = np.asarray(t)
    assert back.dtype == np.dtype(">f4") and back.tolist() == [1.0, 2.0]
    c = np.zeros(4, np.uint8)
    tc = Tensor(Descriptor.build("complex32", (1,), byte_order="big"), [span(c)], owner=c)
    with pytest.raises(UnsupportedError, match="big-endian complex32"):
        np.asarray(tc)
    # Every reader refuses it for the same reason: ml_dtypes swaps the pair whole.
    for read in (tc.stored_values, tc.unpack):
        with pytest.raises(UnsupportedError, match="big-endian complex32"):
            read()


def test_views_check_their_reach():
    from hurray.core import _views

    data = np.arange(4, dtype=np.float32)
    t = from_numpy(data)
    f32 = np.dtype(np.float32)
    assert _views.strided(t, 0, 4, f32, (3,), (1,)).tolist() == [1.0, 2.0, 3.0]
    assert _views.strided(t, 0, 12, f32, (4,), (-1,)).tolist() == [3.0, 2.0, 1.0, 0.0]
    for offset, shape, strides in ((0, (5,), (1,)), (4, (4,), (1,)), (8, (4,), (-1,)), (0, (2, 2), (3, 1))):
        with pytest.raises(BufferTooSmallError, match="reaches bytes"):
            _views.strided(t, 0, offset, f32, shape, strides)


def test_readonly_flag():
    data = np.arange(4, dtype=np.uint8)
    t = Tensor(Descriptor.build("uint8", (4,)), [span(data)], owner=data, readonly=True)
    assert t.readonly
    for view in (np.asarray(t), t.buffer(0), t.stored_values()):
        assert not view.flags.writeable


def test_repr():
    t = from_numpy(np.zeros((2, 3), np.float16))
    assert repr(t) == "<hurray.Tensor dtype='float16' shape=(2, 3), buffers=1>"


def test_delegated_methods_reach_their_modules():
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    t = from_numpy(a)
    out = t.dequantize()
    assert out.dtype == np.float32 and np.array_equal(out, a.astype(np.float32))
    assert not np.shares_memory(out, a)
    back = from_hurray(t.__hurray__())  # the capsule carries this very memory
    assert back.descriptor == t.descriptor
    assert np.shares_memory(np.asarray(back), a) and np.array_equal(np.asarray(back), a)


def test_methods_of_other_layers_are_their_functions():
    import hurray._wiring
    from hurray.bridges import dlpack, pickling, protocol
    from hurray.quant import dequantizers, ggml

    # hurray._wiring sets them on the class: each is the function itself, no stand-in.
    assert Tensor.dequantize is dequantizers.dequantize
    assert Tensor.to_ggml is Tensor.to_gguf is ggml.to_ggml
    assert Tensor.__copy__ is pickling.copy_tensor and Tensor.__deepcopy__ is pickling.deepcopy_tensor
    assert hurray._wiring.dlpack_py is dlpack.to_dlpack  # the Python half of __dlpack__
    t = from_numpy(np.arange(4, dtype=np.float32))
    # __dlpack_device__ is hurray._core's, in C (ADR-046): no Python at all.
    assert type(Tensor.__dict__["__dlpack_device__"]).__name__ == "method_descriptor"
    assert t.__dlpack_device__() == dlpack.dlpack_device(t)
    # So is __hurray__ (ADR-048, amended): protocol.to_capsule in C.
    assert type(Tensor.__dict__["__hurray__"]).__name__ == "method_descriptor"
    capsule = t.__hurray__()
    assert protocol.from_hurray(capsule).descriptor == t.descriptor
    # Installing twice changes nothing (the C halves would else wrap themselves).
    hurray._wiring.install()
    assert hurray._wiring.dlpack_py is dlpack.to_dlpack


def test_the_cached_view_keeps_every_refusal():
    values = np.arange(8, dtype=np.int8)
    scale = np.ones(1, np.float32)
    t = Tensor(Descriptor.build("int8", (8,), scheme="affine", granularity="per_tensor",
                                parts={"scale": Part("float32", 1)}),
               [span(values), span(scale)], owner=(values, scale))
    assert np.shares_memory(t.stored_values(), values)  # makes the view once
    for _ in range(2):
        with pytest.raises(UnsupportedError, match="affine per_tensor quantization"):
            np.asarray(t)
    plain = from_numpy(values)
    first, second = np.asarray(plain), np.asarray(plain)
    assert first is not second and np.shares_memory(first, second)
    first[0] = 42  # distinct arrays over the same memory
    assert second[0] == 42 and second.base is not first.base


def test_from_checked_trusts_its_spans():
    data = np.arange(6, dtype=np.float32)
    d = Descriptor.build("float32", (2, 3))
    t = Tensor._from_checked(d, ((data.ctypes.data, data.nbytes),), data)
    assert t.owner is data and not t.readonly
    assert np.array_equal(np.asarray(t), data.reshape(2, 3)) and np.shares_memory(np.asarray(t), data)


def test_errors_share_a_base():
    assert issubclass(UnsupportedError, HurrayError) and issubclass(UnsupportedError, ValueError)
