"""Reading a Tensor's parts with numpy: strided zero-copy views and sub-byte codes.

One implementation for everything that reads stored elements: np.asarray,
Tensor.stored_values and Tensor.unpack (tensor.py), and the reference
dequantization (dequantize.py).

Views keep the tensor alive (their base is a Memory holding it) and are
read-only when the tensor is. Elements wider than a byte are viewed in the
descriptor's byte order; complex32 and bcomplex32 in a foreign byte order
are refused everywhere, because ml_dtypes would swap each element whole
rather than each half.
"""
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import _checks
from .descriptor import reach
from . import dtypes as _dtypes
from . import packing as _packing
from ..errors import BufferTooSmallError, InvalidDescriptorError, UnsupportedError

__all__ = ["Memory", "codes", "element_dtype", "strided", "strided_interface", "view"]


class Memory:
    """An array interface over tensor memory; arrays made from it keep the tensor alive."""

    __slots__ = ("tensor", "__array_interface__")

    def __init__(self, tensor: Any, interface: dict[str, Any]) -> None:
        self.tensor = tensor
        self.__array_interface__ = interface


def over(tensor: Any, interface: dict[str, Any]) -> np.ndarray:
    """The ndarray of `interface`, keeping `tensor` alive."""
    if interface["data"][0] == 0 and 0 in interface["shape"]:
        # Nothing over no memory: numpy before 2.3 refuses a NULL data pointer
        # in an interface, and there is no byte to share.
        return np.empty(interface["shape"], np.dtype(interface["typestr"]))
    return np.asarray(Memory(tensor, interface))


def element_dtype(name: str, byte_order: str, purpose: str) -> np.dtype:
    """The numpy (or ml_dtypes) dtype of Hurray dtype `name` stored in `byte_order`.

    Raises UnsupportedError, prefixed with `purpose`, when numpy has none.
    """
    dt, why = _dtypes.numpy_dtype_or_reason(name, byte_order)
    if dt is None:
        raise UnsupportedError(f"{purpose}: {why}")
    return dt


# `tensor` is a hurray.Tensor throughout (not imported: tensor.py imports this module).
def strided_interface(tensor: Any, buffer_index: int, byte_offset: int, dt: np.dtype, shape: Sequence[int],
                      strides: Sequence[int]) -> dict[str, Any]:
    """The array interface of `shape` elements of `dt` at element `strides` from `byte_offset`.

    The reach of the layout is checked against the buffer's span here too,
    so a caller's miscounted shape is a BufferTooSmallError, never a read
    outside the span. The interface may be kept and viewed again (view()).
    """
    address, nbytes = tensor.buffers[buffer_index]
    itemsize = dt.itemsize
    empty = 0 in shape
    byte_strides = []
    for stride in strides:
        step = stride * itemsize
        if not -_checks.I64 <= step < _checks.I64:
            # Only a dimension of length 0 or 1 (or an empty tensor) can carry
            # a stride this large past the checks; it is never stepped along.
            step = 0
        byte_strides.append(step)
    if not empty:
        low, high = reach(shape, byte_strides)
        if byte_offset + low < 0 or byte_offset + high + itemsize > nbytes:
            raise BufferTooSmallError(
                f"{len(shape)}-d layout of {dt} at byte offset {byte_offset} reaches bytes "
                f"{byte_offset + low} .. {byte_offset + high + itemsize} of buffer {buffer_index}, "
                f"which holds {nbytes}"
            )
    return {
        "version": 3,
        "shape": tuple(shape),
        "strides": tuple(byte_strides),
        # numpy cannot name a user-defined type in an interface: read raw
        # bytes of the same size, then view them as the type.
        "typestr": dt.str if _dtypes.is_builtin(dt) else f"|V{itemsize}",
        "data": (address if empty else address + byte_offset, tensor.readonly),
    }


def view(tensor: Any, interface: dict[str, Any], dt: np.dtype, purpose: str = "view") -> np.ndarray:
    """The ndarray an interface from strided_interface() describes, as `dt`."""
    try:
        array = over(tensor, interface)
    except (ValueError, TypeError) as exc:
        raise UnsupportedError(f"{purpose}: numpy cannot view this layout: {exc}") from None
    if not _dtypes.is_builtin(dt):
        array = array.view(dt)  # same item size: any strides are fine
    if tensor.readonly:
        array.flags.writeable = False  # numpy ignores the interface's flag for a NULL empty span
    return array


def strided(tensor: Any, buffer_index: int, byte_offset: int, dt: np.dtype, shape: Sequence[int],
            strides: Sequence[int], purpose: str = "view") -> np.ndarray:
    """A zero-copy view of whole-byte elements: strided_interface() then view()."""
    return view(tensor, strided_interface(tensor, buffer_index, byte_offset, dt, shape, strides), dt, purpose)


def codes(tensor: Any, purpose: str) -> np.ndarray:
    """The values part's sub-byte codes: one uint8 per element, in the tensor's shape.

    PADDED gives a zero-copy view of the stored bytes, high bits as stored;
    LSB_FIRST and GGML_SPLIT give new arrays holding just the element bits.
    """
    desc = tensor.descriptor
    values = desc.parts["values"]
    shape, strides, bits, packing = desc.shape, desc.strides, desc.bits, desc.packing
    if packing == "padded":
        return strided(tensor, values.buffer_index, values.byte_offset, np.dtype(np.uint8), shape, strides, purpose)
    if packing == "lsb_first":
        return _packing.unpack_strided(tensor.buffer(values.buffer_index), bits, values.byte_offset, shape, strides)
    if packing == "ggml_split":
        # Row-major contiguous: the C library refuses any other layout.
        data = tensor.buffer(values.buffer_index)
        start = values.byte_offset
        count = desc.size
        span = data[start : start + _packing.packed_nbytes(count, bits, packing)]
        return _packing.unpack(span, bits, count, packing).reshape(shape)
    raise InvalidDescriptorError(f"{purpose}: packing {packing!r} does not fit a {bits}-bit type")
