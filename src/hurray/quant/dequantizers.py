"""Dequantization: a Tensor's real values, computed by the library in C.

`dequantize` (installed as ``Tensor.dequantize``) calls ``hurray_dequantize``
(native/src/dequant*.c, ADR-055), the one implementation of every formula of
layer 3 (docs/impl/descriptor-encoding.md, "Quantization"), which every
binding shares, bit for bit:

- ``none``: a plain conversion (round to nearest even for float64 and wide
  integers), as numpy's and ml_dtypes' astype. Complex types are refused: a
  real output has no room for the imaginary part (use ``np.asarray``).
- ``affine``: ``(q - zero_point) * scale``, q, zero point and scale each
  converted to float64 when the scale part is float64 and to float32
  otherwise, then rounded to float32 (PyTorch, ONNX DequantizeLinear).
- ``microscaling``: ``(v * block_scale) * global_scale`` in float32; an E8M0
  scale of 0xFF is NaN, and products beyond float32 become infinite.
- ``ggml``: ggml's formulas, in gguf-py's float32 operation order.

The result is float32, or float16 or bfloat16 rounded once, to nearest even,
from the float32 value. The call releases the GIL while C works.

`parameter_shape`, `swizzled_index` and `swizzled_count` are the layout facts
of the parameter parts, which the safetensors reader and the quantizers use.
"""
from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from .._ffi import ffi, lib
from ..core import _facts
from ..core.descriptor import Descriptor, borrowed_list
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, InvalidDescriptorError, check

__all__ = ["OUTPUT_DTYPES", "dequantize", "parameter_shape", "swizzled_count", "swizzled_index"]

# Output type name -> (numpy dtype, HurrayDtype code).
OUTPUT_DTYPES: dict[str, tuple[np.dtype, int]] = {
    "float32": (np.dtype(np.float32), lib.HURRAY_DTYPE_FLOAT32),
    "float16": (np.dtype(np.float16), lib.HURRAY_DTYPE_FLOAT16),
    "bfloat16": (np.dtype(ml_dtypes.bfloat16), lib.HURRAY_DTYPE_BFLOAT16),
}


def _output(dtype: Any) -> tuple[np.dtype, int]:
    if isinstance(dtype, str) and dtype in OUTPUT_DTYPES:
        return OUTPUT_DTYPES[dtype]
    try:
        numpy = np.dtype(dtype)
    except TypeError:
        numpy = None
    for pair in OUTPUT_DTYPES.values():
        if numpy == pair[0]:
            return pair
    raise InvalidArgumentError(
        f"dequantize: dtype must be 'float32', 'float16' or 'bfloat16', not {dtype!r}"
    )


def dequantize(tensor: Tensor, dtype: Any = "float32") -> np.ndarray:
    """The real values of `tensor` as a new array of its shape and `dtype`
    ("float32", "float16" or "bfloat16"; ml_dtypes' bfloat16 for the last)."""
    numpy, code = _output(dtype)
    desc = tensor.descriptor
    out = np.empty(tuple(desc.shape), numpy)
    with borrowed_list(tensor.buffers) as buffers:
        address = ffi.cast("void *", out.__array_interface__["data"][0])
        check(lib.hurray_dequantize(desc.handle, buffers, code, address, out.nbytes))
    return out


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
