"""Reference dequantization: any Tensor to a float32 numpy array.

This is the executable statement of layer 3 (docs/impl/descriptor-encoding.md,
"Quantization"). It favours exactness over speed: every formula is evaluated
in a stated precision and operation order, so that the results equal the
reference implementations bit for bit:

- ``none``: a plain conversion to float32 (round to nearest even for float64
  and wide integers). Complex types are refused: float32 has no room for
  the imaginary part (use ``np.asarray(tensor)`` instead).
- ``affine``: ``(q - zero_point) * scale``, with q, zero point and scale
  each converted to float64 when the scale part is float64 and to float32
  otherwise, then the result rounded to float32. This is what PyTorch does
  (per channel its scales are float64, per tensor float32) and what ONNX
  DequantizeLinear states; the result is not rounded to the scale's own type.
- ``microscaling``: ``(v * block_scale) * global_scale`` in float32; an E8M0
  scale of 0xFF is NaN, and products beyond float32 become infinite.
- ``ggml``: the ggml formulas, as gguf-py evaluates them (see ggml.py).

Strides, byte offsets, byte order and packing are honoured through the same
zero-copy views np.asarray and Tensor.unpack use (``hurray.core._views``); nothing
is copied beyond the result and the temporaries the arithmetic needs.
"""
from __future__ import annotations

import numpy as np

from ..core import _facts
from ..core import _views
from ..core import dtypes as _dtypes
from ..core.descriptor import Descriptor, Part
from ..core.tensor import Tensor
from ..errors import InvalidDescriptorError, UnsupportedError
from .ggml import dequantize_ggml

__all__ = ["dequantize", "parameter_shape", "swizzled_count", "swizzled_index"]

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


def parameter_shape(desc: Descriptor) -> tuple[int, ...]:
    """Shape of the row-major scale (and zero point) array for the granularity."""
    shape = tuple(desc.shape)
    granularity = desc.granularity
    if granularity == "per_tensor":
        return ()
    axis = desc.axis
    if not 0 <= axis < len(shape):
        raise InvalidDescriptorError(f"dequantize: axis {axis} is not below the rank {len(shape)}")
    if granularity == "per_axis":
        return (shape[axis],)
    if granularity == "per_block":
        block = desc.block_size
        if block <= 0 or shape[axis] % block:
            raise InvalidDescriptorError(
                f"dequantize: block size {block} does not divide shape[{axis}] = {shape[axis]}"
            )
        return shape[:axis] + (shape[axis] // block,) + shape[axis + 1:]
    raise InvalidDescriptorError(f"dequantize: granularity {granularity!r} does not fit scheme {desc.scheme}")


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


def swizzled_index(rows: int, cols: int) -> np.ndarray:
    """Element index, in a SWIZZLED_128X4 scale part, of every (row, column).

    Returns an int64 array of shape (rows, cols). The matrix is padded to
    whole tiles of 128 rows by 4 columns; each tile holds 512 scales, with
    row r of the tile at (r % 32) * 16 + (r // 32) * 4 and column c at c % 4.
    """
    padded_cols = -(-cols // 4) * 4
    r = np.arange(rows, dtype=np.int64).reshape(-1, 1)
    c = np.arange(cols, dtype=np.int64).reshape(1, -1)
    tile = (r // 128) * (padded_cols // 4) + c // 4
    return tile * 512 + (r % 32) * 16 + (r // 32 % 4) * 4 + c % 4


def swizzled_count(rows: int, cols: int) -> int:
    """How many scales a SWIZZLED_128X4 part holds: whole padded tiles (the C library's count)."""
    return _facts.swizzled_128x4_count(rows, cols)


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
