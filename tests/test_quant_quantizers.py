"""quantize_affine / quantize_mx / quantize_nvfp4: layout, rounding rule, round trip.

Each quantizer is checked against a per-element (or per-group) loop written
from its docstring, and its dequantization against torch or a plain loop.
"""
import gc
import math

import ml_dtypes
import numpy as np
import pytest
import torch

from hurray import HurrayError
from hurray.errors import InvalidArgumentError, UnsupportedError
from hurray.quant.quantizers import quantize_affine, quantize_mx, quantize_nvfp4
from support.torch_warnings import QUIET_TORCH

pytestmark = QUIET_TORCH


def data(shape, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * rng.uniform(0.5, 4) + rng.uniform(-1, 1)).astype(np.float32)


def parameter(tensor, role, dtype, count):
    part = tensor.descriptor.parts[role]
    raw = tensor.buffer(part.buffer_index)[part.byte_offset:]
    return raw[: count * np.dtype(dtype).itemsize].view(dtype)


def affine_reference(group, qmin, qmax, symmetric, signed):
    """The docstring's rule for one group of elements, one element at a time."""
    group = [np.float32(v) for v in np.ravel(group)]
    if symmetric:
        amax = max([np.float32(0)] + [abs(v) for v in group])
        scale = np.float32(amax / np.float32(qmax if signed else (qmax - qmin) // 2))
        zero = np.float32(0 if signed else (qmax + 1) // 2)
    else:
        high = max([np.float32(0)] + group)
        low = min([np.float32(0)] + group)
        scale = np.float32((high - low) / np.float32(qmax - qmin))
        if scale == 0:
            scale = np.float32(1)
        zero = np.float32(min(max(np.float32(qmin) - np.rint(low / scale), qmin), qmax))
    if scale == 0:
        scale = np.float32(1)
    q = [int(min(max(np.rint(v / scale) + zero, qmin), qmax)) for v in group]
    return scale, int(zero), q


@pytest.mark.parametrize("symmetric", [False, True])
@pytest.mark.parametrize("name, qmin, qmax", [("int8", -128, 127), ("uint8", 0, 255)])
def test_affine_per_tensor(name, qmin, qmax, symmetric):
    x = data((6, 10), 1)
    tensor = quantize_affine(x, dtype=name, symmetric=symmetric)
    desc = tensor.descriptor
    assert (desc.scheme, desc.granularity, desc.dtype, desc.shape) == ("affine", "per_tensor", name, (6, 10))
    signed = name == "int8"
    scale, zero, q = affine_reference(x, qmin, qmax, symmetric, signed)
    stored = tensor.stored_values()
    assert stored.reshape(-1).tolist() == q
    assert parameter(tensor, "scale", np.float32, 1)[0] == scale
    if symmetric and signed:
        assert "zero_point" not in desc.parts and desc.buffer_count == 2
    else:
        assert parameter(tensor, "zero_point", stored.dtype, 1)[0] == zero
        assert desc.buffer_count == 3
    torch_type = torch.qint8 if signed else torch.quint8
    reference = torch._make_per_tensor_quantized_tensor(torch.from_numpy(stored.copy()), float(scale), zero)
    out = tensor.dequantize()
    assert np.array_equal(out.view(np.uint32), reference.dequantize().numpy().view(np.uint32))
    assert reference.dtype == torch_type
    assert np.max(np.abs(out - x)) <= scale * 0.5 * (1 + 1e-5)


def test_affine_per_axis_against_torch():
    x = data((3, 5, 4), 2)
    tensor = quantize_affine(x, dtype="uint8", axis=1)
    desc = tensor.descriptor
    assert (desc.granularity, desc.axis) == ("per_axis", 1)
    scales = parameter(tensor, "scale", np.float32, 5)
    zeros = parameter(tensor, "zero_point", np.uint8, 5)
    stored = tensor.stored_values()
    for c in range(5):
        scale, zero, q = affine_reference(x[:, c, :], 0, 255, False, False)
        assert (scales[c], zeros[c]) == (scale, zero)
        assert stored[:, c, :].reshape(-1).tolist() == q
    reference = torch._make_per_channel_quantized_tensor(
        torch.from_numpy(stored.copy()), torch.from_numpy(scales.astype(np.float64)),
        torch.from_numpy(zeros.astype(np.int64)), 1)
    out = tensor.dequantize()
    assert np.array_equal(out.view(np.uint32), reference.dequantize().numpy().view(np.uint32))
    assert np.all(np.abs(out - x) <= scales.reshape(1, 5, 1) * 0.5 * (1 + 1e-5))


@pytest.mark.parametrize("name, qmin, qmax", [("int4", -8, 7), ("uint4", 0, 15), ("int16", -32768, 32767)])
def test_affine_per_block(name, qmin, qmax):
    x = data((4, 24), 3)
    tensor = quantize_affine(x, dtype=name, block_size=8)
    desc = tensor.descriptor
    assert (desc.granularity, desc.axis, desc.block_size) == ("per_block", 1, 8)
    assert desc.packing == ("padded" if name.endswith("4") else "none")
    zero_type = {"int4": np.int8, "uint4": np.uint8, "int16": np.int16}[name]
    scales = parameter(tensor, "scale", np.float32, 12).reshape(4, 3)
    zeros = parameter(tensor, "zero_point", zero_type, 12).reshape(4, 3)
    stored = tensor.stored_values().astype(np.int64)
    out = tensor.dequantize()
    for r in range(4):
        for b in range(3):
            block = x[r, 8 * b:8 * b + 8]
            scale, zero, q = affine_reference(block, qmin, qmax, False, name.startswith("int"))
            assert (scales[r, b], zeros[r, b]) == (scale, zero)
            assert stored[r, 8 * b:8 * b + 8].tolist() == q
            expected = [(np.float32(v) - np.float32(zero)) * scale for v in q]
            assert out[r, 8 * b:8 * b + 8].tolist() == [float(e) for e in expected]
            assert np.all(np.abs(out[r, 8 * b:8 * b + 8] - block) <= scale * 0.5 * (1 + 1e-5))


def test_affine_block_along_first_axis_and_negative_axis():
    x = data((8, 3), 4)
    first = quantize_affine(x, axis=0, block_size=4)
    assert first.descriptor.axis == 0
    assert np.max(np.abs(first.dequantize() - x)) < np.ptp(x) / 255
    last = quantize_affine(x, axis=-1)
    assert (last.descriptor.granularity, last.descriptor.axis) == ("per_axis", 1)


def test_affine_zeros_and_empty():
    tensor = quantize_affine(np.zeros((2, 3), np.float32), axis=0)
    assert parameter(tensor, "scale", np.float32, 2).tolist() == [1.0, 1.0]
    assert tensor.dequantize().tolist() == [[0.0] * 3] * 2
    empty = quantize_affine(np.zeros((0, 4), np.float32))
    assert empty.dequantize().shape == (0, 4)


def test_affine_tensor_owns_its_arrays():
    x = data((5, 5), 5)
    tensor = quantize_affine(x, axis=0)
    expected = tensor.dequantize()
    gc.collect()
    assert np.array_equal(tensor.dequantize(), expected)


@pytest.mark.parametrize("kwargs, error", [
    (dict(dtype="float32"), UnsupportedError),
    (dict(dtype="int64"), UnsupportedError),
    (dict(dtype="int1"), UnsupportedError),
    (dict(dtype="nonsense"), HurrayError),
    (dict(block_size=5), InvalidArgumentError),
    (dict(block_size=0), InvalidArgumentError),
    (dict(axis=2), InvalidArgumentError),
    (dict(axis=1.0), InvalidArgumentError),
])
def test_affine_bad_arguments(kwargs, error):
    with pytest.raises(error):
        quantize_affine(data((4, 8)), **kwargs)


@pytest.mark.parametrize("array", [np.array([1.0, np.nan]), np.array([np.inf]), np.array(["a"]),
                                   np.array([1 + 2j]), [[1.0], [2.0, 3.0]]])
def test_affine_bad_arrays(array):
    with pytest.raises(InvalidArgumentError):
        quantize_affine(array)


# ---- microscaling ---------------------------------------------------------

MX = {"float8_e4m3fn": (8, 448.0), "float8_e5m2": (15, 57344.0), "float6_e2m3fn": (2, 7.5),
      "float6_e3m2fn": (4, 28.0), "float4_e2m1fn": (2, 6.0), "int8": (6, 127.0)}


def mx_reference(block, name):
    """OCP MX, one block: the E8M0 code and the element values (as float)."""
    emax, largest = MX[name]
    amax = max(abs(float(v)) for v in block)
    shared = -127 if amax == 0 else math.frexp(amax)[1] - 1 - emax
    shared = min(max(shared, -127), 127)
    values = []
    for v in block:
        y = min(max(float(v) / 2.0 ** shared, -largest), largest)
        if name == "int8":
            values.append(float(min(max(round(y), -127), 127)))  # round() is half to even
        else:
            values.append(float(np.array(y, np.float32).astype(getattr(ml_dtypes, name)).astype(np.float64)))
    return shared + 127, values


@pytest.mark.parametrize("name", list(MX))
@pytest.mark.parametrize("axis", [1, 0])
def test_mx_matches_the_ocp_rule(name, axis):
    x = data((64, 3) if axis == 0 else (3, 64), 6)
    x.reshape(-1)[:32] = 0  # an all-zero block somewhere
    tensor = quantize_mx(x, dtype=name, axis=axis)
    desc = tensor.descriptor
    assert (desc.scheme, desc.granularity, desc.axis, desc.block_size) == ("microscaling", "per_block", axis, 32)
    assert desc.parts["scale"].dtype == "float8_e8m0fnu"
    moved = np.moveaxis(x, axis, -1)
    codes = np.moveaxis(parameter(tensor, "scale", np.uint8, 6).reshape((2, 3) if axis == 0 else (3, 2)), axis, -1)
    values_type = getattr(ml_dtypes, name, np.int8)
    stored = parameter(tensor, "values", values_type, 192).reshape(x.shape).astype(np.float64)
    stored = np.moveaxis(stored, axis, -1)
    out = np.moveaxis(tensor.dequantize(), axis, -1)
    for r in range(3):
        for b in range(2):
            code, values = mx_reference(moved[r, 32 * b:32 * b + 32], name)
            assert codes[r, b] == code
            assert stored[r, 32 * b:32 * b + 32].tolist() == values
            assert out[r, 32 * b:32 * b + 32].tolist() == [v * 2.0 ** (code - 127) for v in values]


def test_mx_bad_arguments():
    with pytest.raises(UnsupportedError):
        quantize_mx(data((2, 32)), dtype="float16")
    with pytest.raises(InvalidArgumentError):
        quantize_mx(data((2, 48)))
    with pytest.raises(InvalidArgumentError):
        quantize_mx(np.float32(1.0))


# ---- NVFP4 ---------------------------------------------------------------

def test_nvfp4_matches_its_rule():
    x = data((4, 32), 7)
    tensor = quantize_nvfp4(x)
    desc = tensor.descriptor
    assert (desc.dtype, desc.block_size, desc.axis, desc.buffer_count) == ("float4_e2m1fn", 16, 1, 3)
    amax = np.float32(np.max(np.abs(x)))
    global_scale = np.float32(amax / np.float32(448.0 * 6.0))
    assert parameter(tensor, "global_scale", np.float32, 1)[0] == global_scale
    scales = parameter(tensor, "scale", ml_dtypes.float8_e4m3fn, 8).reshape(4, 2)
    stored = tensor.stored_values()
    out = tensor.dequantize()
    for r in range(4):
        for b in range(2):
            block = x[r, 16 * b:16 * b + 16]
            want = np.float32(np.max(np.abs(block)) / np.float32(6.0) / global_scale)
            scale = np.array(min(want, 448.0), np.float32).astype(ml_dtypes.float8_e4m3fn)
            assert scales[r, b] == scale
            step = np.float32(scale) * global_scale
            for k in range(16):
                v = np.array(min(max(block[k] / step, -6.0), 6.0), np.float32).astype(ml_dtypes.float4_e2m1fn)
                assert stored[r, 16 * b + k].view(np.uint8) == v.view(np.uint8)
                assert out[r, 16 * b + k] == np.float32(np.float32(v) * np.float32(scale)) * global_scale
    assert np.max(np.abs(out - x)) <= amax / 6  # half the widest E2M1 gap, 2 of 6, at most


def test_nvfp4_layouts_agree():
    x = data((130, 64), 8)
    plain = quantize_nvfp4(x)
    swizzled = quantize_nvfp4(x, swizzled=True)
    packed = quantize_nvfp4(x, swizzled=True, packing="lsb_first")
    assert swizzled.descriptor.parts["scale"].layout == "swizzled_128x4"
    assert packed.descriptor.packing == "lsb_first"
    assert packed.buffer(0).size == 130 * 64 // 2
    assert swizzled.buffer(1).size == 256 * 4  # padded to whole 128x4 tiles
    expected = plain.dequantize()
    assert np.array_equal(swizzled.dequantize(), expected)
    assert np.array_equal(packed.dequantize(), expected)


def test_nvfp4_explicit_global_scale_and_zeros():
    tensor = quantize_nvfp4(np.zeros((1, 16), np.float32), global_scale=0.5)
    assert parameter(tensor, "global_scale", np.float32, 1)[0] == 0.5
    assert tensor.dequantize().tolist() == [[0.0] * 16]


@pytest.mark.parametrize("kwargs, shape", [
    (dict(swizzled=True), (2, 2, 16)),
    (dict(), (2, 24)),
    (dict(packing="ggml_split"), (2, 32)),
    (dict(global_scale=0.0), (2, 16)),
    (dict(global_scale=float("nan")), (2, 16)),
    (dict(), ()),
])
def test_nvfp4_bad_arguments(kwargs, shape):
    with pytest.raises(InvalidArgumentError):
        quantize_nvfp4(np.ones(shape, np.float32), **kwargs)
