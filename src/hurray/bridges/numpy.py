"""from_numpy: a zero-copy Tensor over a numpy (or ml_dtypes) array.

The buffer is the span from the lowest to the highest byte the array can
reach, so negative, zero (broadcast) and gapped strides all fit; the values'
byte offset is where element 0 lies in that span. The Tensor holds the array,
which holds whatever owns its memory.
"""
from typing import Any

import numpy as np

from ._names import qualified_name, suggestion
from .._core import from_numpy as _core_from_numpy
from .._ffi import lib
from ..core import dtypes as _dtypes
from ..core import packing as _packing
from ..core.descriptor import Descriptor, reach
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, UnsupportedError

__all__ = ["from_numpy", "pack_tensor"]

# dtype -> (dtype code, byte order code, packing code or None for the C
# default); only dtypes Hurray has get an entry.
_CODES: dict[np.dtype, tuple[int, int, int | None]] = {}


def _codes_of(dt: np.dtype) -> tuple[int, int, int | None]:
    code, byte_order = _dtypes.from_numpy_dtype(dt)
    order = lib.HURRAY_BYTE_ORDER_BIG if byte_order == "big" else lib.HURRAY_BYTE_ORDER_LITTLE
    packing = lib.HURRAY_PACKING_PADDED if _dtypes.dtype_info(code).sub_byte else None
    return code, order, packing


def _from_numpy(array: Any) -> Tensor:
    """A Tensor sharing `array`'s memory; read-only arrays give read-only tensors.

    A numpy scalar becomes a 0-d tensor over a private copy.

    Sub-byte ml_dtypes types (int4, float4_e2m1fn, ...) are stored one per
    byte and so become PADDED tensors. Object, structured and other types
    Hurray lacks raise UnsupportedError, and so do masked arrays (the mask
    would be lost); other ndarray subclasses are read as plain arrays and
    kept alive as the owner. Strides that are not a whole number of
    elements raise InvalidArgumentError.
    """
    if isinstance(array, np.generic):
        array = np.asarray(array)  # a scalar is immutable: its own 0-d copy is as good
    owner = array
    if type(array) is not np.ndarray:
        if not isinstance(array, np.ndarray):
            hint = suggestion(array) if "numpy" not in qualified_name(array) else ""
            raise InvalidArgumentError(
                f"from_numpy takes a numpy.ndarray, not {qualified_name(array)}. "
                + (hint or "Convert it with np.asarray first.")
            )
        if isinstance(array, np.ma.MaskedArray):
            raise UnsupportedError(
                "from_numpy: a masked array's mask has no place in a tensor and would be lost; "
                "pass array.filled(value) or array.data explicitly"
            )
        # A subclass (np.matrix, np.memmap, ...) is read as the plain array it
        # views; the original stays the owner, keeping a memmap's file mapped.
        array = array.view(np.ndarray)
    dt = array.dtype
    codes = _CODES.get(dt)
    if codes is None:
        codes = _CODES[dt] = _codes_of(dt)
    code, order, packing = codes
    itemsize = array.dtype.itemsize
    empty = array.size == 0
    strides = []
    for n, step in zip(array.shape, array.strides):
        elements, rest = divmod(step, itemsize)
        if rest:
            if n > 1 and not empty:
                raise InvalidArgumentError(
                    f"a byte stride of {step} is not a whole number of {array.dtype} elements ({itemsize} bytes)"
                )
            elements = 0  # a dimension never stepped along: its stride is free
        strides.append(elements)
    address = array.__array_interface__["data"][0]
    if empty:
        span, offset = (address, 0), 0
    else:
        low, high = reach(array.shape, array.strides)
        span, offset = (address + low, high - low + itemsize), -low
    # The C default values part is (dtype, buffer 0, offset 0, row-major).
    parts = {lib.HURRAY_ROLE_VALUES: (code, 0, offset, lib.HURRAY_PART_LAYOUT_ROW_MAJOR)} if offset else {}
    desc = Descriptor._from_codes(code, array.shape, strides, order, packing, None, parts)
    return Tensor._from_spans(desc, (span,), owner, not array.flags.writeable)


# The hot path in C (ADR-046): a plain ndarray of a dtype _CODES holds
# becomes a Tensor with no Python running; everything else, and every
# refusal, is _from_numpy's. hurray._wiring hands _core both (and splits
# Tensor.__array__ the same way); import hurray has done so before any call.
from_numpy = _core_from_numpy


def pack_tensor(array: Any, packing: str = "lsb_first") -> Tensor:
    """A new row-major Tensor holding `array`'s sub-byte elements packed (a copy).

    `array` has an ml_dtypes sub-byte dtype (int1/2/4, uint1/2/4,
    float4_e2m1fn); ``Tensor.unpack()`` gives it back.
    """
    array = np.asarray(array)
    info = _dtypes.dtype_info(array.dtype)
    if not info.sub_byte:
        raise InvalidArgumentError(f"{info.name} is {info.bits} bits wide: only sub-byte types are packed")
    packed = _packing.pack(array, info.bits, packing)
    desc = Descriptor.build(info.code, array.shape, packing=packing)
    address = packed.__array_interface__["data"][0]
    return Tensor(desc, ((address, packed.size),), owner=packed)
