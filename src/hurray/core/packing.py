"""Sub-byte elements: between padded codes (one per byte) and packed bytes.

A *code* is an element's bit pattern in the low bits of a uint8, which is how
ml_dtypes stores its sub-byte types (the PADDED packing); ``codes.view(t)``
with an ml_dtypes type ``t`` is then exact. Two packed layouts exist:

- ``lsb_first`` (widths 1, 2, 4): element 0 in the lowest bits of byte 0,
  as DLPack and ONNX store them;
- ``ggml_split`` (width 4): in each run of 32 elements byte ``j`` holds element
  ``j`` in its low nibble and element ``j + 16`` in its high nibble, as GGML
  blocks store them.

Everything here is vectorized numpy and copies.
"""
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["pack", "unpack", "unpack_strided", "packed_nbytes"]

_PACKINGS = ("lsb_first", "ggml_split")
_GGML_RUN = 32


def _check(width: int, packing: str) -> None:
    if packing not in _PACKINGS:
        raise InvalidArgumentError(f"packing must be one of {_PACKINGS}, not {packing!r}")
    if width not in (1, 2, 4):
        raise InvalidArgumentError(f"packed widths are 1, 2 and 4 bits, not {width!r}")
    if packing == "ggml_split" and width != 4:
        raise InvalidArgumentError(f"ggml_split packs 4-bit elements only, not {width}-bit")


def packed_nbytes(count: int, width: int, packing: str = "lsb_first") -> int:
    """Bytes that `count` elements of `width` bits take when packed."""
    _check(width, packing)
    if count < 0:
        raise InvalidArgumentError(f"element count must not be negative (got {count})")
    return (count * width + 7) // 8


def _codes(codes: Any, width: int) -> np.ndarray:
    codes = np.asarray(codes)
    if codes.dtype != np.uint8:
        if codes.dtype.itemsize != 1 or codes.dtype.fields is not None:
            raise InvalidArgumentError(f"codes must be one byte each (uint8 or a sub-byte ml_dtypes type), not {codes.dtype}")
        codes = codes.view(np.uint8)
    return np.ascontiguousarray(codes).reshape(-1) & np.uint8((1 << width) - 1)


def pack(codes: Any, width: int, packing: str = "lsb_first") -> np.ndarray:
    """Pack the low `width` bits of each code (flattened in C order) into a new uint8 array.

    `codes` may be uint8 or an ml_dtypes sub-byte array. Bits past the last
    element are zero. ggml_split needs a multiple of 32 elements.
    """
    _check(width, packing)
    flat = _codes(codes, width)
    if packing == "ggml_split":
        if flat.size % _GGML_RUN:
            raise InvalidArgumentError(f"ggml_split packs runs of 32 elements; got {flat.size}")
        runs = flat.reshape(-1, 2, _GGML_RUN // 2)
        return (runs[:, 0, :] | (runs[:, 1, :] << np.uint8(4))).reshape(-1)
    per_byte = 8 // width
    padded = np.zeros(-(-flat.size // per_byte) * per_byte, np.uint8)
    padded[: flat.size] = flat
    shifts = (np.arange(per_byte, dtype=np.uint8) * np.uint8(width))
    return np.bitwise_or.reduce(padded.reshape(-1, per_byte) << shifts, axis=1).astype(np.uint8)


def _bytes(data: Any) -> np.ndarray:
    data = np.asarray(data)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise InvalidArgumentError(f"packed data must be a 1-D uint8 array, not {data.dtype} of shape {data.shape}")
    return data


def unpack(data: Any, width: int, count: int, packing: str = "lsb_first") -> np.ndarray:
    """The first `count` codes packed in `data` (1-D uint8), as a new uint8 array."""
    _check(width, packing)
    data = _bytes(data)
    need = packed_nbytes(count, width, packing)
    if data.size < need:
        raise InvalidArgumentError(f"{count} {width}-bit elements need {need} bytes; got {data.size}")
    if packing == "ggml_split":
        if count % _GGML_RUN:
            raise InvalidArgumentError(f"ggml_split unpacks runs of 32 elements; got {count}")
        runs = data[:need].reshape(-1, _GGML_RUN // 2)
        return np.stack([runs & np.uint8(0x0F), runs >> np.uint8(4)], axis=1).reshape(-1)
    per_byte = 8 // width
    shifts = np.arange(per_byte, dtype=np.uint8) * np.uint8(width)
    spread = (data[:need, None] >> shifts) & np.uint8((1 << width) - 1)
    return spread.reshape(-1)[:count].copy()


def unpack_strided(data: Any, width: int, byte_offset: int, shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """Codes of an lsb_first tensor with any element strides, as a new C-order array.

    Element ``i`` lies at bit ``8 * byte_offset + width * sum(i[k] * strides[k])``
    of `data`; the caller has proven that every such bit lies inside `data`
    (hurray_descriptor_check_buffers does).
    """
    _check(width, "lsb_first")
    data = _bytes(data)
    shape = tuple(int(n) for n in shape)
    if len(strides) != len(shape):
        raise InvalidArgumentError(f"{len(strides)} strides for {len(shape)} dimensions")
    if 0 in shape:
        return np.zeros(shape, np.uint8)
    index = np.zeros(shape, np.int64)
    for axis, (n, stride) in enumerate(zip(shape, strides)):
        along = np.arange(n, dtype=np.int64) * np.int64(stride)
        index += along.reshape((n,) + (1,) * (len(shape) - axis - 1))
    bit = index * width + 8 * int(byte_offset)
    if bit.min() < 0 or bit.max() // 8 >= data.size:
        raise InvalidArgumentError("the strided elements reach past the packed data")
    return (data[bit >> 3] >> (bit & 7).astype(np.uint8)) & np.uint8((1 << width) - 1)
