"""dequantize() for every scheme, against independent references.

References: ml_dtypes conversions (plain types), torch's quantized tensors
(affine per tensor and per channel), and plain per-element loops written
from the formulas in docs/impl/descriptor-encoding.md (ONNX blocked affine,
microscaling, NVFP4, the swizzled scale layout).
"""
import warnings

import ml_dtypes
import numpy as np
import pytest
import torch

import hurray
from hurray import Descriptor, Part, Tensor
from hurray.dtypes import DTYPES
from hurray.errors import HurrayError, UnsupportedError
from hurray.bridges.numpy import pack_tensor
from hurray.core.packing import pack
from support.torch_warnings import QUIET_TORCH

pytestmark = QUIET_TORCH


def make(dtype, shape, arrays, parts, **layout):
    """A Tensor whose buffer i is arrays[i]; parts maps role -> Part fields."""
    arrays = [np.ascontiguousarray(a) for a in arrays]
    desc = Descriptor.build(dtype, shape, parts={r: Part(*p) for r, p in parts.items()}, **layout)
    return Tensor(desc, tuple((a.__array_interface__["data"][0], a.nbytes) for a in arrays), owner=arrays)


def assert_same(ours, expected):
    """Equal float32 arrays: same shape, same bits, NaN where NaN."""
    expected = np.asarray(expected, np.float32)
    assert ours.dtype == np.float32
    assert ours.shape == expected.shape
    nan = np.isnan(expected)
    assert np.array_equal(np.isnan(ours), nan)
    assert np.array_equal(ours[~nan].view(np.uint32), expected[~nan].view(np.uint32))


def random_of(rng, name, shape):
    """Random bit patterns of a type (all codes, NaNs included), as its numpy dtype."""
    info = hurray.dtypes.dtype_info(name)
    if name == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if info.bits < 8:
        return (rng.integers(0, 1 << info.bits, shape, dtype=np.uint8)).view(info.numpy)
    raw = rng.integers(0, 256, shape + (info.numpy.itemsize,), dtype=np.uint8)
    return raw.view(info.numpy).reshape(shape)


# ---- scheme none ---------------------------------------------------------

REAL_TYPES = [d.name for d in DTYPES if d.numpy is not None and not d.name.startswith(("complex", "bcomplex"))]


@pytest.mark.parametrize("name", REAL_TYPES)
def test_plain_types_convert_like_ml_dtypes(name):
    rng = np.random.default_rng(len(name))
    array = random_of(rng, name, (5, 7))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # float64 -> float32 overflow to inf
        expected = array.astype(np.float32)
    out = hurray.from_numpy(array).dequantize()
    assert_same(out, expected)
    assert not np.shares_memory(out, array)


def test_plain_strided_and_negative_strides():
    base = np.random.default_rng(0).standard_normal((5, 6, 7)).astype(ml_dtypes.bfloat16)
    view = base[::-1, 1::2, ::-3]
    assert_same(hurray.from_numpy(view).dequantize(), view.astype(np.float32))


@pytest.mark.parametrize("code", [">f4", ">i2", ">f8", ">u4", "<f2"])
def test_plain_byte_orders(code):
    array = (np.random.default_rng(1).standard_normal((4, 3)) * 1000).astype(code)
    assert_same(hurray.from_numpy(array).dequantize(), array.astype(np.float32))


@pytest.mark.parametrize("name", ["bfloat16", "float16", "int32"])
def test_plain_big_endian_built_by_hand(name):
    dtype = hurray.dtypes.dtype_info(name).numpy
    array = (np.random.default_rng(2).standard_normal(9) * 100).astype(dtype)
    swapped = array.view(f"u{dtype.itemsize}").byteswap()
    tensor = make(name, (3, 3), [swapped], {"values": (name, 0, 0)}, byte_order="big")
    assert_same(tensor.dequantize(), array.astype(np.float32).reshape(3, 3))


SUB_BYTE = [d.name for d in DTYPES if d.bits < 8]


@pytest.mark.parametrize("name", SUB_BYTE)
def test_sub_byte_padded(name):
    array = random_of(np.random.default_rng(3), name, (4, 32))
    assert_same(hurray.from_numpy(array).dequantize(), array.astype(np.float32))


def test_padded_ignores_the_spare_high_bits():
    codes = np.array([0x0F, 0xF7, 0xA8, 0x51], np.uint8)  # int4 -1, 7, -8, 1 under junk
    tensor = make("int4", (4,), [codes], {"values": ("int4", 0, 0)}, packing="padded")
    assert tensor.dequantize().tolist() == [-1.0, 7.0, -8.0, 1.0]


PACKED = [(n, "lsb_first") for n in SUB_BYTE if hurray.dtypes.dtype_bits(n) in (1, 2, 4)]
PACKED += [(n, "ggml_split") for n in SUB_BYTE if hurray.dtypes.dtype_bits(n) == 4]


@pytest.mark.parametrize("name, packing", PACKED)
def test_sub_byte_packed(name, packing):
    array = random_of(np.random.default_rng(4), name, (3, 64))
    tensor = pack_tensor(array, packing)
    assert tensor.descriptor.packing == packing
    assert_same(tensor.dequantize(), array.astype(np.float32))


def test_lsb_first_with_strides_and_offset():
    full = np.random.default_rng(5).integers(0, 4, (6, 8), dtype=np.uint8).view(ml_dtypes.int2)
    packed = pack(full, 2)
    # Rows 5, 3, 1 and columns 0, 3, 6: element (5, 0) is element 40, bit 80, byte 10.
    tensor = make("int2", (3, 3), [packed], {"values": ("int2", 0, 10)}, strides=(-16, 3), packing="lsb_first")
    assert_same(tensor.dequantize(), full[5::-2, 0::3].astype(np.float32))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_is_refused(dtype):
    with pytest.raises(UnsupportedError, match="imaginary"):
        hurray.from_numpy(np.ones(3, dtype)).dequantize()


# ---- affine: PyTorch -----------------------------------------------------

TORCH_TYPES = {"int8": torch.qint8, "uint8": torch.quint8, "int32": torch.qint32}


@pytest.mark.parametrize("name", TORCH_TYPES)
def test_affine_per_tensor_matches_torch(name):
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((7, 33)) * 5).astype(np.float32)
    for scale, zero in [(0.037, 3), (0.5, 0), (1e-3, 11)]:
        qt = torch.quantize_per_tensor(torch.from_numpy(x), scale, zero, TORCH_TYPES[name])
        q = qt.int_repr().numpy()
        scale32 = np.array([qt.q_scale()], np.float32)
        tensor = make(name, x.shape, [q, scale32, np.array([zero], np.int64)],
                      {"values": (name, 0, 0), "scale": ("float32", 1, 0), "zero_point": ("int64", 2, 0)},
                      scheme="affine", granularity="per_tensor")
        assert_same(tensor.dequantize(), qt.dequantize().numpy())


@pytest.mark.parametrize("scale_type", ["float64", "float32"])
@pytest.mark.parametrize("name", ["int8", "uint8"])
def test_affine_per_channel_matches_torch(name, scale_type):
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((4, 5, 6)) * 3).astype(np.float32)
    scales = rng.uniform(1e-3, 0.2, 5).astype(scale_type)
    zeros = rng.integers(0, 20, 5) if name == "uint8" else rng.integers(-10, 10, 5)
    qt = torch.quantize_per_channel(torch.from_numpy(x), torch.from_numpy(scales.astype(np.float64)),
                                    torch.from_numpy(zeros), 1, TORCH_TYPES[name])
    tensor = make(name, x.shape, [qt.int_repr().numpy(), scales, zeros.astype(np.int64)],
                  {"values": (name, 0, 0), "scale": (scale_type, 1, 0), "zero_point": ("int64", 2, 0)},
                  scheme="affine", granularity="per_axis", axis=1)
    assert_same(tensor.dequantize(), qt.dequantize().numpy())


def test_affine_per_channel_int32_matches_torch():
    rng = np.random.default_rng(12)
    q = rng.integers(-(2**31), 2**31 - 1, (3, 50)).astype(np.int32)
    scales = rng.uniform(1e-6, 1e-3, 3).astype(np.float32)
    zeros = rng.integers(-1000, 1000, 3)
    qt = torch._make_per_channel_quantized_tensor(torch.from_numpy(q), torch.from_numpy(scales.astype(np.float64)),
                                                  torch.from_numpy(zeros), 0)
    tensor = make("int32", q.shape, [q, scales, zeros.astype(np.int32)],
                  {"values": ("int32", 0, 0), "scale": ("float32", 1, 0), "zero_point": ("int32", 2, 0)},
                  scheme="affine", granularity="per_axis", axis=0)
    assert_same(tensor.dequantize(), qt.dequantize().numpy())


# ---- affine: ONNX DequantizeLinear, blocked --------------------------------

def onnx_blocked(q, scale, zero, axis, block):
    """y[i] = (x[i] - zero[j]) * scale[j], j = i with i[axis] // block; float32."""
    out = np.empty(q.shape, np.float32)
    for index in np.ndindex(*q.shape):
        j = list(index)
        j[axis] //= block
        j = tuple(j)
        z = np.float32(0) if zero is None else np.float32(zero[j])
        out[index] = (np.float32(q[index]) - z) * np.float32(scale[j])
    return out


@pytest.mark.parametrize("name, packing", [("int8", None), ("uint8", None), ("int4", "padded"),
                                           ("uint4", "lsb_first"), ("int16", None)])
@pytest.mark.parametrize("scale_type", ["float32", "float16", "bfloat16"])
def test_affine_blocked_matches_onnx_formula(name, packing, scale_type):
    rng = np.random.default_rng(13)
    shape, axis, block = (6, 2, 12), 2, 4
    q = random_of(rng, name, shape)
    pshape = (6, 2, 3)
    scale = rng.uniform(0.01, 2, pshape).astype(hurray.dtypes.dtype_info(scale_type).numpy)
    zero_type = name if hurray.dtypes.dtype_bits(name) >= 8 else "int8"
    zero = random_of(rng, zero_type, pshape)
    if zero_type == "int8" and name.startswith("int"):
        zero = (zero.astype(np.int16) % 8).astype(np.int8)
    values = pack(q, 4) if packing == "lsb_first" else q
    tensor = make(name, shape, [values, scale, zero],
                  {"values": (name, 0, 0), "scale": (scale_type, 1, 0), "zero_point": (zero_type, 2, 0)},
                  packing=packing, scheme="affine", granularity="per_block", axis=axis, block_size=block)
    assert_same(tensor.dequantize(), onnx_blocked(q.astype(np.int64), scale, zero, axis, block))


def test_affine_blocked_first_axis_without_zero_point():
    rng = np.random.default_rng(14)
    q = random_of(rng, "int8", (6, 5))
    scale = rng.uniform(0.1, 1, (2, 5)).astype(np.float32)
    tensor = make("int8", q.shape, [q, scale], {"values": ("int8", 0, 0), "scale": ("float32", 1, 0)},
                  scheme="affine", granularity="per_block", axis=0, block_size=3)
    assert_same(tensor.dequantize(), onnx_blocked(q, scale, None, 0, 3))


def test_affine_fp8_values_per_axis():
    rng = np.random.default_rng(15)
    q = (rng.standard_normal((4, 8)) * 20).astype(ml_dtypes.float8_e4m3fn)
    scale = rng.uniform(0.1, 1, 8).astype(np.float32)
    tensor = make("float8_e4m3fn", q.shape, [q, scale], {"values": ("float8_e4m3fn", 0, 0), "scale": ("float32", 1, 0)},
                  scheme="affine", granularity="per_axis", axis=1)
    expected = [[np.float32(q[i, j]) * scale[j] for j in range(8)] for i in range(4)]
    assert_same(tensor.dequantize(), expected)


def test_affine_strided_values_and_big_endian_parameters():
    rng = np.random.default_rng(16)
    q = rng.integers(-300, 300, (5, 8)).astype(np.int16)
    scale = rng.uniform(0.1, 1, 8).astype(np.float32)
    zero = rng.integers(-5, 5, 8).astype(np.int16)
    # Values big-endian and column-reversed inside a larger buffer; parameters share buffer 1.
    big = q[:, ::-1].astype(">i2")
    params = np.concatenate([scale.astype(">f4").view(np.uint8), zero.astype(">i2").view(np.uint8)])
    tensor = make("int16", (5, 8), [big, params],
                  {"values": ("int16", 0, 14), "scale": ("float32", 1, 0), "zero_point": ("int16", 1, 32)},
                  strides=(8, -1), byte_order="big", scheme="affine", granularity="per_axis", axis=1)
    expected = (q.astype(np.float32) - zero.astype(np.float32)) * scale
    assert_same(tensor.dequantize(), expected)


# ---- microscaling ---------------------------------------------------------

def scaled_loop(values, scales, axis, block, global_scale=None):
    """(v * scale[block]) * global_scale, element by element in float32."""
    out = np.empty(values.shape, np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        for index in np.ndindex(*values.shape):
            j = list(index)
            j[axis] //= block
            y = np.float32(values[index]) * np.float32(scales[tuple(j)])
            if global_scale is not None:
                y = y * np.float32(global_scale)
            out[index] = y
    return out


MX_VALUES = ["float8_e4m3fn", "float8_e5m2", "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "int8"]


@pytest.mark.parametrize("name", MX_VALUES)
@pytest.mark.parametrize("axis", [0, 1])
def test_mx_matches_per_element_loop(name, axis):
    rng = np.random.default_rng(20 + axis)
    shape = (64, 3) if axis == 0 else (3, 64)
    values = random_of(rng, name, shape)
    pshape = (2, 3) if axis == 0 else (3, 2)
    scales = rng.integers(0, 256, pshape, dtype=np.uint8).view(ml_dtypes.float8_e8m0fnu)
    scales.view(np.uint8).reshape(-1)[:3] = [0, 254, 255]  # 2^-127, 2^127, NaN
    packing = "padded" if hurray.dtypes.dtype_bits(name) < 8 else None
    tensor = make(name, shape, [values, scales], {"values": (name, 0, 0), "scale": ("float8_e8m0fnu", 1, 0)},
                  packing=packing, scheme="microscaling", granularity="per_block", axis=axis, block_size=32)
    with np.errstate(over="ignore", invalid="ignore"):
        out = tensor.dequantize()
    assert_same(out, scaled_loop(values, scales, axis, 32))


@pytest.mark.parametrize("packing", ["padded", "lsb_first"])
def test_nvfp4_matches_per_element_loop(packing):
    rng = np.random.default_rng(30)
    values = random_of(rng, "float4_e2m1fn", (32, 64))
    scales = rng.integers(0, 0x7F, (32, 4), dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    global_scale = np.array([0.012345679], np.float32)
    stored = pack(values, 4) if packing == "lsb_first" else values
    tensor = make("float4_e2m1fn", values.shape, [stored, scales, global_scale],
                  {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e4m3fn", 1, 0),
                   "global_scale": ("float32", 2, 0)},
                  packing=packing, scheme="microscaling", granularity="per_block", axis=1, block_size=16)
    assert_same(tensor.dequantize(), scaled_loop(values, scales, 1, 16, global_scale[0]))


def swizzle_by_formula(scales):
    """Scatter an R x C scale matrix into padded 128x4 tiles, one element at a time."""
    rows, cols = scales.shape
    padded_rows = (rows + 127) // 128 * 128
    padded_cols = (cols + 3) // 4 * 4
    out = np.zeros(padded_rows * padded_cols, scales.dtype)
    for r in range(rows):
        for c in range(cols):
            at = ((r // 128) * (padded_cols // 4) + c // 4) * 512 + (r % 32) * 16 + (r // 32 % 4) * 4 + c % 4
            out[at] = scales[r, c]
    return out


@pytest.mark.parametrize("rows, cols", [(130, 96), (128, 64), (3, 16)])
def test_swizzled_scales_match_the_formula(rows, cols):
    rng = np.random.default_rng(31)
    values = random_of(rng, "float4_e2m1fn", (rows, cols))
    scales = rng.integers(1, 0x7F, (rows, cols // 16), dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)
    global_scale = np.array([3.5], np.float32)
    layout = dict(packing="padded", scheme="microscaling", granularity="per_block", axis=1, block_size=16)
    row_major = make("float4_e2m1fn", values.shape, [values, scales, global_scale],
                     {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e4m3fn", 1, 0),
                      "global_scale": ("float32", 2, 0)}, **layout)
    swizzled = make("float4_e2m1fn", values.shape, [values, swizzle_by_formula(scales), global_scale],
                    {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e4m3fn", 1, 0, "swizzled_128x4"),
                     "global_scale": ("float32", 2, 0)}, **layout)
    expected = scaled_loop(values, scales, 1, 16, global_scale[0])
    assert_same(row_major.dequantize(), expected)
    assert_same(swizzled.dequantize(), expected)


def test_swizzled_part_must_cover_its_padding():
    values = np.zeros((3, 16), ml_dtypes.float4_e2m1fn)
    short = np.zeros(128 * 4 - 1, ml_dtypes.float8_e4m3fn)
    with pytest.raises(HurrayError):
        make("float4_e2m1fn", values.shape, [values, short],
             {"values": ("float4_e2m1fn", 0, 0), "scale": ("float8_e4m3fn", 1, 0, "swizzled_128x4")},
             packing="padded", scheme="microscaling", granularity="per_block", axis=1, block_size=16)


def test_dequantize_is_the_tensor_method():
    q = np.arange(-4, 4, dtype=np.int8)
    tensor = make("int8", (8,), [q, np.array([0.5], np.float32)],
                  {"values": ("int8", 0, 0), "scale": ("float32", 1, 0)}, scheme="affine", granularity="per_tensor")
    assert tensor.dequantize().tolist() == [0.5 * v for v in range(-4, 4)]
    from hurray.quant.dequantizers import dequantize

    assert dequantize(tensor).tolist() == tensor.dequantize().tolist()
