"""Simple quantizers that produce multi-buffer Tensors.

They exist to make quantized tensors to exchange and test with, not to
compete with calibrated quantizers: each uses the plainest rule, stated in
its docstring. Every result keeps its arrays in separate buffers (values 0,
scale 1, then zero point or global scale 2), all owned by the Tensor, and
``tensor.dequantize()`` inverts it up to the rounding described.
"""
from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import ml_dtypes
import numpy as np

from ..core import dtypes as _dtypes
from ..core import packing as _packing
from ..core.descriptor import Descriptor, Part
from ..core.dtypes import DtypeInfo
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, UnsupportedError
from .dequantizers import swizzled_count, swizzled_index

__all__ = ["quantize_affine", "quantize_mx", "quantize_nvfp4"]

_F32 = np.dtype(np.float32)


def quantize_affine(array: Any, *, dtype: Any = "int8", axis: Optional[int] = None, block_size: Optional[int] = None,
                    symmetric: bool = False) -> Tensor:
    """Quantize `array` to ``x ~ (q - zero_point) * scale`` with float32 scales.

    Granularity: per tensor when `axis` and `block_size` are both None; per
    axis (one scale per index along `axis`) when only `axis` is given; per
    block of `block_size` consecutive elements along `axis` (default: the
    last axis) when `block_size` is given.

    `dtype` is an integer type of 2 to 32 bits (sub-byte types are stored one
    per byte, the padded packing). The ranges are taken including zero;
    asymmetric: ``scale = (max - min) / (qmax - qmin)``, ``zero_point = qmin -
    round(min / scale)``; symmetric: ``scale = max|x| / qmax`` and no zero
    point (signed) or the mid-range zero point (unsigned). A zero range gets
    scale 1. Then ``q = clip(round(x / scale) + zero_point, qmin, qmax)``,
    computed in float32 with round half to even (as torch.quantize_per_tensor
    does). Zero points have the values' type, or int8/uint8 for sub-byte values.
    """
    info = _integer_type(dtype)
    x = _finite_float32(array, "quantize_affine")
    granularity, axis, block_size = _granularity(x, axis, block_size)
    signed = info.name.startswith("int")
    qmin = -(1 << (info.bits - 1)) if signed else 0
    qmax = (1 << (info.bits - 1)) - 1 if signed else (1 << info.bits) - 1

    grouped, reduce_axes = _groups(x, granularity, axis, block_size)
    if symmetric:
        amax = np.max(np.abs(grouped), axis=reduce_axes, initial=0, keepdims=True).astype(_F32)
        half_range = qmax if signed else (qmax - qmin) // 2
        scale = _nonzero(amax / np.float32(half_range))
        zero = np.zeros_like(scale) if signed else np.full_like(scale, (qmax + 1) // 2)
    else:
        high = np.max(grouped, axis=reduce_axes, initial=0, keepdims=True).astype(_F32)
        low = np.min(grouped, axis=reduce_axes, initial=0, keepdims=True).astype(_F32)
        scale = _nonzero((high - low) / np.float32(qmax - qmin))
        zero = np.clip(np.float32(qmin) - np.rint(low / scale), qmin, qmax)
    q = np.clip(np.rint(grouped / scale) + zero, qmin, qmax).reshape(x.shape)

    values = np.ascontiguousarray(q.astype(info.numpy))
    arrays = [values, np.ascontiguousarray(_squeeze_groups(scale, granularity, axis), _F32)]
    parts = {"values": _dtypes.dtype_name(info.code), "scale": "float32"}
    if not (symmetric and signed):
        zero_type = info.name if info.bits >= 8 else ("int8" if signed else "uint8")
        arrays.append(np.ascontiguousarray(_squeeze_groups(zero, granularity, axis).astype(zero_type)))
        parts["zero_point"] = zero_type
    packing = "padded" if info.bits < 8 else None
    return _tensor(
        info.name, x.shape, arrays, parts, packing=packing, scheme="affine",
        granularity=granularity, axis=axis, block_size=block_size,
    )


# name -> (largest power of two not above the type's largest finite value, largest value)
_MX_TYPES = {
    "float8_e4m3fn": (8, 448.0),
    "float8_e5m2": (15, 57344.0),
    "float6_e2m3fn": (2, 7.5),
    "float6_e3m2fn": (4, 28.0),
    "float4_e2m1fn": (2, 6.0),
    "int8": (6, 127.0),
}


def quantize_mx(array: Any, *, dtype: Any = "float8_e4m3fn", axis: int = -1, block_size: int = 32) -> Tensor:
    """OCP microscaling: blocks of `block_size` along `axis`, one E8M0 scale each.

    The scale of a block is ``2^(floor(log2(amax)) - emax)``, emax being the
    exponent of the element type's largest power of two (OCP MX v1.0, 6.3),
    clamped to E8M0's range; an all-zero block gets 2^-127. Values are
    ``x / scale`` clipped to the type's largest finite value and rounded to
    nearest even (int8: rounded, then clipped to +-127). Sub-byte values are
    stored one per byte (padded). For int8 values the descriptor's formula
    ``v * scale`` uses the integer itself, so MXINT8's fixed point is in the scale.
    """
    if dtype not in _MX_TYPES:
        raise UnsupportedError(f"quantize_mx: values type {dtype!r} is not one of {', '.join(_MX_TYPES)}")
    emax, largest = _MX_TYPES[dtype]
    x = _finite_float32(array, "quantize_mx")
    _, axis, block_size = _granularity(x, axis, block_size)
    grouped, reduce_axes = _groups(x, "per_block", axis, block_size)
    amax = np.max(np.abs(grouped), axis=reduce_axes, initial=0, keepdims=True)
    _, exponent = np.frexp(amax)  # amax = m * 2^exponent, 0.5 <= m < 1: floor(log2) = exponent - 1
    shared = np.where(amax > 0, exponent - 1 - emax, -127).clip(-127, 127).astype(np.int32)
    scaled = np.clip(np.ldexp(grouped, -shared), -largest, largest)
    if dtype == "int8":
        values = np.clip(np.rint(scaled), -127, 127).astype(np.int8)
    else:
        values = scaled.astype(getattr(ml_dtypes, dtype))
    codes = (shared + 127).astype(np.uint8).view(ml_dtypes.float8_e8m0fnu)
    arrays = [
        np.ascontiguousarray(values.reshape(x.shape)),
        np.ascontiguousarray(_squeeze_groups(codes, "per_block", axis)),
    ]
    packing = "padded" if _dtypes.dtype_bits(dtype) < 8 else None
    return _tensor(
        dtype, x.shape, arrays, {"values": dtype, "scale": "float8_e8m0fnu"}, packing=packing,
        scheme="microscaling", granularity="per_block", axis=axis, block_size=block_size,
    )


def quantize_nvfp4(array: Any, *, global_scale: Optional[float] = None, swizzled: bool = False,
                   packing: str = "padded") -> Tensor:
    """NVFP4: E2M1 values, one E4M3 scale per 16 elements of the last axis, one float32 global scale.

    The global scale defaults to ``amax / (448 * 6)`` (1 for an all-zero
    array), so that block scales ``amax_block / 6 / global_scale`` fit E4M3;
    both are rounded to nearest even. Values are ``x / (block_scale *
    global_scale)`` clipped to +-6, rounded to nearest even E2M1 (a block
    whose scale rounds to zero stores zeros). `swizzled` stores the scales in
    the SWIZZLED_128X4 layout (rank 2 only); `packing` is "padded" or
    "lsb_first" for the values.
    """
    if packing not in ("padded", "lsb_first"):
        raise InvalidArgumentError(f"quantize_nvfp4: packing must be 'padded' or 'lsb_first', not {packing!r}")
    x = _finite_float32(array, "quantize_nvfp4")
    if x.ndim < 1:
        raise InvalidArgumentError("quantize_nvfp4: the array needs rank 1 or more")
    if swizzled and x.ndim != 2:
        raise InvalidArgumentError(f"quantize_nvfp4: the swizzled scale layout needs rank 2, not {x.ndim}")
    axis = x.ndim - 1
    _granularity(x, axis, 16)
    if global_scale is None:
        amax = np.float32(np.max(np.abs(x), initial=0))
        global_scale = amax / np.float32(448.0 * 6.0) if amax > 0 else np.float32(1.0)
    global_scale = np.float32(global_scale)
    if not np.isfinite(global_scale) or global_scale <= 0:
        raise InvalidArgumentError(f"quantize_nvfp4: global_scale must be positive and finite, not {global_scale}")

    grouped, reduce_axes = _groups(x, "per_block", axis, 16)
    amax = np.max(np.abs(grouped), axis=reduce_axes, initial=0, keepdims=True)
    block = np.clip(amax / np.float32(6.0) / global_scale, 0, 448.0).astype(ml_dtypes.float8_e4m3fn)
    step = block.astype(_F32) * global_scale
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(step > 0, grouped / step, np.float32(0))
    values = np.clip(scaled, -6.0, 6.0).astype(ml_dtypes.float4_e2m1fn).reshape(x.shape)
    if packing == "lsb_first":
        values = _packing.pack(values, 4, "lsb_first")
    scales = _squeeze_groups(block, "per_block", axis)
    layout = "row_major"
    if swizzled:
        rows, cols = scales.shape
        stored = np.zeros(swizzled_count(rows, cols), ml_dtypes.float8_e4m3fn)
        stored[swizzled_index(rows, cols)] = scales
        scales, layout = stored, "swizzled_128x4"
    arrays = [np.ascontiguousarray(values), np.ascontiguousarray(scales), np.array([global_scale], _F32)]
    parts = {
        "values": "float4_e2m1fn",
        "scale": ("float8_e4m3fn", 1, 0, layout),
        "global_scale": "float32",
    }
    return _tensor(
        "float4_e2m1fn", x.shape, arrays, parts, packing=packing, scheme="microscaling",
        granularity="per_block", axis=axis, block_size=16,
    )


# ---- shared steps ------------------------------------------------------

def _integer_type(dtype: Any) -> DtypeInfo:
    info = _dtypes.dtype_info(dtype)
    if not (info.name.startswith("int") or info.name.startswith("uint")) or not 2 <= info.bits <= 32:
        raise UnsupportedError(f"quantize_affine: dtype must be an integer type of 2 to 32 bits, not {info.name}")
    return info


def _finite_float32(array: Any, who: str) -> np.ndarray:
    try:
        x = np.asarray(array)
    except Exception as exc:  # numpy raises many types for unconvertible input
        raise InvalidArgumentError(f"{who}: cannot read {type(array).__name__} as an array: {exc}") from None
    if x.dtype.kind not in "biuf" and not (x.dtype.kind == "V" and _is_ml_float(x.dtype)):
        raise InvalidArgumentError(f"{who}: needs real numbers, not {x.dtype}")
    x = x.astype(_F32)
    if not np.all(np.isfinite(x)):
        raise InvalidArgumentError(f"{who}: the array holds NaN or infinity (or values beyond float32)")
    return x


def _is_ml_float(dtype: Any) -> bool:
    try:
        ml_dtypes.finfo(dtype)
    except (TypeError, ValueError):
        return False
    return True


def _granularity(x: np.ndarray, axis: Optional[int], block_size: Optional[int]) -> tuple[str, int, int]:
    """(granularity, normalized axis, block size) for the arguments, validated."""
    if axis is None and block_size is None:
        return "per_tensor", 0, 0
    if axis is None:
        axis = -1
    if x.ndim == 0:
        raise InvalidArgumentError("a scalar has no axis to quantize along")
    try:
        axis = operator.index(axis)
    except TypeError:
        raise InvalidArgumentError(f"axis must be an integer, not {type(axis).__name__}") from None
    if not -x.ndim <= axis < x.ndim:
        raise InvalidArgumentError(f"axis {axis} is out of range for rank {x.ndim}")
    axis %= x.ndim
    if block_size is None:
        return "per_axis", axis, 0
    try:
        block_size = operator.index(block_size)
    except TypeError:
        raise InvalidArgumentError(f"block_size must be an integer, not {type(block_size).__name__}") from None
    if block_size <= 0 or x.shape[axis] % block_size:
        raise InvalidArgumentError(
            f"block_size {block_size} must be positive and divide shape[{axis}] = {x.shape[axis]}"
        )
    return "per_block", axis, block_size


def _groups(x: np.ndarray, granularity: str, axis: int, block_size: int) -> tuple[np.ndarray, Optional[tuple[int, ...]]]:
    """`x` reshaped so each group's elements lie along the returned reduce axes."""
    if granularity == "per_tensor":
        return x, None
    if granularity == "per_axis":
        return x, tuple(k for k in range(x.ndim) if k != axis)
    shape = x.shape[:axis] + (x.shape[axis] // block_size, block_size) + x.shape[axis + 1:]
    return x.reshape(shape), (axis + 1,)


def _squeeze_groups(params: np.ndarray, granularity: str, axis: int) -> np.ndarray:
    """Per-group parameters (keepdims shape) as the descriptor's row-major parameter array."""
    if granularity == "per_tensor":
        return params.reshape(1)
    if granularity == "per_axis":
        return params.reshape(-1)
    return np.squeeze(params, axis=axis + 1)


def _nonzero(scale: np.ndarray) -> np.ndarray:
    return np.where(scale > 0, scale, np.float32(1)).astype(_F32)


def _tensor(dtype: Any, shape: Sequence[int], arrays: Sequence[np.ndarray], parts: Mapping[str, Any],
            **layout: Any) -> Tensor:
    """A Tensor over `arrays` (buffer i is arrays[i]); `parts` maps role -> dtype or Part fields."""
    specs = {}
    for index, (role, spec) in enumerate(parts.items()):
        if isinstance(spec, str):
            spec = (spec, index, 0)
        specs[role] = Part(*spec)
    descriptor = Descriptor.build(dtype, shape, parts=specs, **layout)
    buffers = tuple((a.__array_interface__["data"][0], a.nbytes) for a in arrays)
    return Tensor(descriptor, buffers=buffers, owner=tuple(arrays))
