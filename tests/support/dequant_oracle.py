"""The numpy dequantizer that was the package's reference before the C one: now a test oracle.

The package dequantizes in C (hurray_dequantize, ADR-055). This module keeps
the numpy statement of the same formulas, as the package held it, so that the
tests can hold the C results against it on every case they build, bit for
bit. Nothing in the package imports it.

- ``none``: a plain conversion to float32 (round to nearest even for float64
  and wide integers); complex types are refused.
- ``affine``: ``(q - zero_point) * scale``, q, zero point and scale each
  converted to float64 when the scale part is float64 and to float32
  otherwise, then rounded to float32.
- ``microscaling``: ``(v * block_scale) * global_scale`` in float32; an E8M0
  scale of 0xFF is NaN.
- ``ggml``: the formulas of the 8 types it knew, in gguf-py's float32 order
  (the other types are held against gguf-py itself).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import ml_dtypes
import numpy as np

from hurray.core import _views
from hurray.core import dtypes as _dtypes
from hurray.core import packing as _packing
from hurray.errors import InvalidDescriptorError, UnsupportedError
from hurray.quant.dequantizers import parameter_shape, swizzled_count, swizzled_index
from hurray.quant.ggml import ggml_block

if TYPE_CHECKING:
    from hurray.core.descriptor import Descriptor, Part
    from hurray.core.tensor import Tensor

__all__ = ["dequantize"]

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)


def dequantize(tensor: Tensor) -> np.ndarray:
    """Return the real values of `tensor` as a new float32 array of its shape."""
    desc = tensor.descriptor
    scheme = desc.scheme
    if scheme == "none":
        return _plain(tensor, desc)
    if scheme == "affine":
        return _affine(tensor, desc)
    if scheme == "microscaling":
        return _microscaling(tensor, desc)
    if scheme == "ggml":
        return dequantize_ggml(tensor)
    raise UnsupportedError(f"dequantize: scheme {scheme!r} is not known to this build")


def _plain(tensor: Tensor, desc: Descriptor) -> np.ndarray:
    if _is_complex(desc.dtype):
        raise UnsupportedError(
            f"dequantize: a {desc.dtype} tensor has an imaginary part that float32 cannot hold; "
            "use np.asarray(tensor) to read it"
        )
    with np.errstate(over="ignore"):  # float64 beyond float32's range becomes inf
        return _read_values(tensor).astype(_F32)


def _values_as(tensor: Tensor, desc: Descriptor, precision: np.dtype) -> np.ndarray:
    """The stored values as numbers of `precision`, refusing complex types."""
    if _is_complex(desc.dtype):
        raise UnsupportedError(f"dequantize: values of type {desc.dtype} cannot be quantized values")
    return _read_values(tensor).astype(precision)


def _part(desc: Descriptor, role: str) -> Part:
    part = desc.parts.get(role)
    if part is None:
        raise InvalidDescriptorError(f"dequantize: scheme {desc.scheme} needs a {role} part")
    return part


def _broadcast(params: np.ndarray, desc: Descriptor) -> np.ndarray:
    """Stretch a parameter array of parameter_shape(desc) over the tensor's shape."""
    granularity = desc.granularity
    if granularity == "per_tensor":
        return params.reshape(())
    rank = len(desc.shape)
    if granularity == "per_axis":
        view_shape = [1] * rank
        view_shape[desc.axis] = -1
        return params.reshape(view_shape)
    return np.repeat(params, desc.block_size, axis=desc.axis)


def _affine(tensor: Tensor, desc: Descriptor) -> np.ndarray:
    scale_part = _part(desc, "scale")
    pshape = parameter_shape(desc)
    count = int(np.prod(pshape, dtype=np.int64))
    scale = _read_parameter(tensor, scale_part, count).reshape(pshape)
    # Float64 scales are applied in float64 (PyTorch per channel); every
    # narrower scale type converts exactly to float32, where the rest happens.
    precision = _F64 if scale.dtype == _F64 else _F32
    q = _values_as(tensor, desc, precision)
    scale = _broadcast(scale.astype(precision), desc)
    zero_part = desc.parts.get("zero_point")
    if zero_part is not None:
        zero = _read_parameter(tensor, zero_part, count).reshape(pshape)
        if _is_complex(zero_part.dtype):
            raise UnsupportedError("dequantize: a complex zero point is not meaningful")
        q = q - _broadcast(zero.astype(precision), desc)
    with np.errstate(over="ignore"):  # beyond float32's range is infinite
        return (q * scale).astype(_F32)


def _block_scales(tensor: Tensor, desc: Descriptor, part: Part) -> np.ndarray:
    """The microscaling block scales as an array of parameter_shape(desc)."""
    pshape = parameter_shape(desc)
    if part.layout == "row_major":
        count = int(np.prod(pshape, dtype=np.int64))
        return _read_parameter(tensor, part, count).reshape(pshape)
    if part.layout == "swizzled_128x4":
        if len(desc.shape) != 2 or desc.axis != 1:
            raise InvalidDescriptorError("dequantize: a swizzled_128x4 scale needs rank 2 and axis 1")
        rows, cols = pshape
        stored = _read_parameter(tensor, part, swizzled_count(rows, cols))
        return stored[swizzled_index(rows, cols)]
    raise UnsupportedError(f"dequantize: scale layout {part.layout!r} is not known to this build")


def _microscaling(tensor: Tensor, desc: Descriptor) -> np.ndarray:
    if desc.granularity != "per_block":
        raise InvalidDescriptorError("dequantize: microscaling is per block")
    values = _values_as(tensor, desc, _F32)
    scale = _block_scales(tensor, desc, _part(desc, "scale")).astype(_F32)
    global_part = desc.parts.get("global_scale")
    with np.errstate(over="ignore"):
        out = values * _broadcast(scale, desc)
        if global_part is not None:
            global_scale = _read_parameter(tensor, global_part, 1).astype(_F32)
            out = out * global_scale.reshape(())
    return out


# ---- reading stored elements -------------------------------------------
# Layers 1 and 2 (strides, byte offsets, byte order, packing) are read by
# _views, as np.asarray and Tensor.unpack read them; here the results become
# native numbers.

_COMPLEX = frozenset({"complex32", "bcomplex32", "complex64", "complex128"})
_PURPOSE = "dequantize"


def _is_complex(name: str) -> bool:
    return name in _COMPLEX


def _native(array: np.ndarray) -> np.ndarray:
    """`array` itself when its byte order is the host's, else a native copy."""
    dt = array.dtype
    return array if dt.isnative else array.astype(dt.newbyteorder("="))


def _read_values(tensor: Tensor) -> np.ndarray:
    """The values part as a numpy array of the tensor's shape, in a numeric dtype.

    Sub-byte integers come back as int8/uint8 numbers, fp4/fp6 as their
    ml_dtypes types; everything else in its own numpy dtype, native order.
    """
    desc = tensor.descriptor
    name = desc.dtype
    bits = desc.bits
    if bits >= 8:
        part = desc.parts["values"]
        dt = _views.element_dtype(name, desc.byte_order, _PURPOSE)
        return _native(_views.strided(tensor, part.buffer_index, part.byte_offset, dt, desc.shape,
                                      desc.strides, _PURPOSE))
    codes = _views.codes(tensor, _PURPOSE) & np.uint8((1 << bits) - 1)
    return _interpret_codes(codes, name, bits)


def _read_parameter(tensor: Tensor, part: Part, count: int) -> np.ndarray:
    """`count` contiguous elements of a parameter part, as a 1-D native array."""
    if _dtypes.dtype_bits(part.dtype) < 8:
        raise UnsupportedError(f"dequantize: a {part.dtype} parameter part has no byte-addressable layout")
    dt = _views.element_dtype(part.dtype, tensor.descriptor.byte_order, _PURPOSE)
    return _native(_views.strided(tensor, part.buffer_index, part.byte_offset, dt, (count,), (1,), _PURPOSE))


def _interpret_codes(codes: np.ndarray, name: str, bits: int) -> np.ndarray:
    if name.startswith("float"):
        return codes.view(_dtypes.dtype_info(name).numpy)  # type: ignore[arg-type]  # every float type has one
    if name.startswith("uint"):
        return codes
    # Two's complement at `bits` bits.
    signed = codes.astype(np.int8)
    return np.where(codes >> np.uint8(bits - 1), signed - np.int8(1 << bits), signed).astype(np.int8)


# ---- GGML (the original 8 types) ------------------------------------------

def dequantize_ggml(tensor: Tensor) -> np.ndarray:
    """Decode a GGML tensor's blocks (the original 8 types) to float32 of its shape."""
    desc = tensor.descriptor
    blocks = _block_bytes(tensor, desc)
    return _DECODERS[desc.ggml_type](blocks).reshape(tuple(desc.shape))


def _block_bytes(tensor: Tensor, desc: Descriptor) -> np.ndarray:
    elements, block_bytes = ggml_block(desc.ggml_type)
    count = int(np.prod(desc.shape, dtype=np.int64))
    part = desc.parts["values"]
    buf = tensor.buffer(part.buffer_index)
    return buf[part.byte_offset:part.byte_offset + count // elements * block_bytes].reshape(-1, block_bytes)


def _f16(blocks: np.ndarray, at: int) -> np.ndarray:
    """The little-endian fp16 at byte `at` of every block, as float32 of shape (n, 1)."""
    bits = blocks[:, at].astype(np.uint16) | (blocks[:, at + 1].astype(np.uint16) << np.uint16(8))
    return bits.view(np.float16).astype(np.float32).reshape(-1, 1)


def _u32(blocks: np.ndarray, at: int) -> np.ndarray:
    word = np.zeros(blocks.shape[0], np.uint32)
    for k in range(4):
        word |= blocks[:, at + k].astype(np.uint32) << np.uint32(8 * k)
    return word


def _split_nibbles(qs: np.ndarray) -> np.ndarray:
    """(n, 16) bytes -> (n, 32) codes in ggml's split order (packing "ggml_split")."""
    n = qs.shape[0]
    return _packing.unpack(np.ascontiguousarray(qs).reshape(-1), 4, 32 * n, "ggml_split").reshape(n, 32)


def _fifth_bits(blocks: np.ndarray, at: int) -> np.ndarray:
    """Bit k of the little-endian uint32 at `at`, for k in 0..31, as uint8 (n, 32)."""
    word = _u32(blocks, at).reshape(-1, 1)
    return ((word >> np.arange(32, dtype=np.uint32)) & np.uint32(1)).astype(np.uint8)


def _q4_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    q = _split_nibbles(blocks[:, 2:18]).astype(np.int8) - np.int8(8)
    return d * q.astype(np.float32)


def _q4_1(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    m = _f16(blocks, 2)
    q = _split_nibbles(blocks[:, 4:20]).astype(np.float32)
    return d * q + m


def _q5_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    q = _split_nibbles(blocks[:, 6:22]) | (_fifth_bits(blocks, 2) << np.uint8(4))
    return d * (q.astype(np.int8) - np.int8(16)).astype(np.float32)


def _q5_1(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    m = _f16(blocks, 2)
    q = _split_nibbles(blocks[:, 8:24]) | (_fifth_bits(blocks, 4) << np.uint8(4))
    return d * q.astype(np.float32) + m


def _q8_0(blocks: np.ndarray) -> np.ndarray:
    d = _f16(blocks, 0)
    return d * blocks[:, 2:34].view(np.int8).astype(np.float32)


# E2M1 values doubled, as ggml tabulates them (integers: code 8 is +0).
_E2M1_DOUBLED = (np.arange(16, dtype=np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32) * 2).astype(
    np.int8
).astype(np.float32)


def _e8m0_half(e: np.ndarray) -> np.ndarray:
    """2^(e - 128) as float32, built from bits the way ggml does (e = 0 and 1
    give subnormals; e = 255 gives 2^127, not NaN)."""
    e = e.astype(np.uint32)
    small = np.uint32(0x00200000) << np.minimum(e, 1)
    bits = np.where(e < 2, small, (np.maximum(e, 1) - np.uint32(1)) << np.uint32(23))
    return bits.astype(np.uint32).view(np.float32)


def _mxfp4(blocks: np.ndarray) -> np.ndarray:
    half = _e8m0_half(blocks[:, 0]).reshape(-1, 1)
    with np.errstate(over="ignore"):  # e = 255 times 12 is infinite in ggml too
        return half * _E2M1_DOUBLED[_split_nibbles(blocks[:, 1:17])]


def _q4_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    d = _f16(blocks, 0)
    dmin = _f16(blocks, 2)
    # Eight 6-bit scales and mins: sub-blocks 0-3 in the low 6 bits of bytes
    # 0-3 (scales) and 4-7 (mins); sub-blocks 4-7 take 4 bits from bytes 8-11
    # and their top 2 bits from the spare high bits of bytes 0-7.
    packed = blocks[:, 4:16]
    first, second, third = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    six = np.uint8(63)
    scales = np.concatenate([first & six, (third & np.uint8(15)) | ((first >> np.uint8(6)) << np.uint8(4))], axis=1)
    mins = np.concatenate([second & six, (third >> np.uint8(4)) | ((second >> np.uint8(6)) << np.uint8(4))], axis=1)
    step = (d * scales.astype(np.float32)).reshape(n, 8, 1)
    offset = (dmin * mins.astype(np.float32)).reshape(n, 8, 1)
    # qs: four runs of 32 bytes; run j gives sub-block 2j (low nibbles) and 2j+1 (high).
    runs = blocks[:, 16:144].reshape(n, 4, 1, 32)
    q = ((runs >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1)) & np.uint8(15)).reshape(n, 8, 32)
    return (step * q.astype(np.float32) - offset).reshape(n, 256)


def _q6_k(blocks: np.ndarray) -> np.ndarray:
    n = blocks.shape[0]
    # Two halves of 128 elements; in each, element 32 g + l takes its low
    # nibble from ql byte l (g = 0, 2) or l + 32 (g = 1, 3), low or high by
    # g // 2, and its top two bits from qh byte l at bit 2 g.
    ql = blocks[:, 0:128].reshape(n, 2, 1, 2, 32)
    low = (ql >> np.array([0, 4], np.uint8).reshape(1, 1, 2, 1, 1)) & np.uint8(15)
    low = low.reshape(n, 2, 4, 32)
    qh = blocks[:, 128:192].reshape(n, 2, 1, 32)
    high = (qh >> np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)) & np.uint8(3)
    q = ((low | (high << np.uint8(4))).astype(np.int8) - np.int8(32)).reshape(n, 16, 16)
    scales = blocks[:, 192:208].view(np.int8).astype(np.float32)
    d = _f16(blocks, 208)
    return ((d * scales).reshape(n, 16, 1) * q.astype(np.float32)).reshape(n, 256)


_DECODERS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "q4_0": _q4_0,
    "q4_1": _q4_1,
    "q5_0": _q5_0,
    "q5_1": _q5_1,
    "q8_0": _q8_0,
    "q4_k": _q4_k,
    "q6_k": _q6_k,
    "mxfp4": _mxfp4,
}
