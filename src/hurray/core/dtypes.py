"""Layer 1 in Python: each element type's code, name, width and numpy dtype.

The codes, names and widths come from the C library (the header's
``HURRAY_DTYPE_*`` constants, ``hurray_dtype_name`` and ``hurray_dtype_bits``),
so this table cannot drift from it. The numpy side is numpy's own type where
numpy has one, else the ml_dtypes type of the same name, else None.
ml_dtypes stores sub-byte types one element per byte, value in the low bits:
the PADDED packing.
"""
import operator
import sys
from typing import Any, NamedTuple, Optional

import ml_dtypes
import numpy as np

from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, UnsupportedError

__all__ = [
    "DTYPES",
    "DtypeInfo",
    "dtype_bits",
    "dtype_code",
    "dtype_info",
    "dtype_name",
    "from_numpy_dtype",
    "numpy_dtype",
    "stated_byte_order",
]

# numpy's own types are mapped by (kind, itemsize); user-defined ones (type
# numbers from NPY_USERDEF up, like every ml_dtypes type, some of which claim
# kind "f") by their scalar type.
_NUMPY_KINDS = "biufc"
_NPY_USERDEF = 256
# ml_dtypes byte-swaps these whole (imaginary part first) instead of swapping
# each float16/bfloat16 half as numpy does for its complex types, so their
# non-native byte order means something else than the descriptor's.
_PAIR_TYPES = ("complex32", "bcomplex32")


def is_builtin(dt: np.dtype) -> bool:
    """True for numpy's own dtypes, False for user-defined ones such as ml_dtypes'."""
    return dt.num < _NPY_USERDEF


class DtypeInfo(NamedTuple):
    """One element type: its stable code, name, width in bits and numpy dtype."""

    code: int
    name: str
    bits: int
    numpy: Optional[np.dtype]  # native byte order; None when numpy and ml_dtypes both lack it

    @property
    def sub_byte(self) -> bool:
        """True for types narrower than a byte, which need a packing."""
        return self.bits < 8


def _numpy_for(name: str, bits: int) -> Optional[np.dtype]:
    candidate = getattr(ml_dtypes, name, None)
    try:
        dt = np.dtype(candidate if candidate is not None else name)
    except TypeError:
        return None
    if candidate is None and dt.kind not in _NUMPY_KINDS:
        return None
    # Guard against a name that numpy reads differently (say "int4" as 4 bytes).
    expected = 1 if bits < 8 else bits // 8
    return dt if dt.itemsize == expected else None


def _load_table() -> tuple[DtypeInfo, ...]:
    codes = sorted(getattr(lib, n) for n in dir(lib) if n.startswith("HURRAY_DTYPE_"))
    bits_out = ffi.new("uint32_t *")
    table = []
    for code in codes:
        name = ffi.string(lib.hurray_dtype_name(code)).decode()
        if lib.hurray_dtype_bits(code, bits_out) != lib.HURRAY_OK:
            raise ImportError(f"libhurray does not know dtype code {code} ({name}) from its header")
        table.append(DtypeInfo(code, name, bits_out[0], _numpy_for(name, bits_out[0])))
    return tuple(table)


DTYPES = _load_table()
_BY_CODE = {d.code: d for d in DTYPES}
_BY_NAME = {d.name: d for d in DTYPES}
_BY_NUMPY_KIND: dict[tuple[str, int], DtypeInfo] = {}
_BY_SCALAR_TYPE: dict[type, DtypeInfo] = {}
for _d in DTYPES:
    if _d.numpy is None:
        continue
    if is_builtin(_d.numpy):
        _BY_NUMPY_KIND[(_d.numpy.kind, _d.numpy.itemsize)] = _d
    else:
        _BY_SCALAR_TYPE[_d.numpy.type] = _d


def _info_from_numpy(dt: np.dtype) -> Optional[DtypeInfo]:
    """The DtypeInfo of a numpy dtype, or None."""
    if dt.fields is not None or dt.subdtype is not None:
        return None
    if is_builtin(dt):
        return _BY_NUMPY_KIND.get((dt.kind, dt.itemsize)) if dt.kind in _NUMPY_KINDS else None
    return _BY_SCALAR_TYPE.get(dt.type)


def dtype_info(dtype: Any) -> DtypeInfo:
    """The DtypeInfo for a code, a Hurray name, or anything numpy takes as a dtype.

    Raises UnsupportedError for a type Hurray has no code for (object,
    structured, string, datetime, longdouble, ...).
    """
    if isinstance(dtype, DtypeInfo):
        return dtype
    if isinstance(dtype, str) and dtype in _BY_NAME:
        return _BY_NAME[dtype]
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, (bool, np.bool_)):
        code = operator.index(dtype)
        if code in _BY_CODE:
            return _BY_CODE[code]
        raise UnsupportedError(f"dtype code {code} is unknown to this build")
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as exc:
        known = ", ".join(sorted(_BY_NAME))
        raise InvalidArgumentError(f"{dtype!r} is not a dtype; Hurray dtypes are: {known}") from exc
    info = _info_from_numpy(dt)
    if info is None:
        raise UnsupportedError(f"numpy dtype {dt} has no Hurray element type")
    return info


def dtype_code(dtype: Any) -> int:
    """The stable HurrayDtype code of `dtype` (a code, a Hurray name or a numpy dtype)."""
    return dtype_info(dtype).code


def dtype_name(dtype: Any) -> str:
    """The Hurray name of `dtype`, as the C library spells it ("float8_e4m3fn", ...)."""
    return dtype_info(dtype).name


def dtype_bits(dtype: Any) -> int:
    """The width of one element in bits (4 for int4, 32 for complex32, ...)."""
    return dtype_info(dtype).bits


def numpy_dtype_or_reason(dtype: Any, byte_order: str = "little") -> tuple[Optional[np.dtype], Optional[str]]:
    """(numpy dtype, None) for `dtype` stored in `byte_order`, or (None, why numpy cannot)."""
    info = dtype_info(dtype)
    if info.numpy is None:
        return None, f"{info.name} has no numpy or ml_dtypes type"
    dt = info.numpy
    if dt.itemsize == 1:
        return dt, None
    if byte_order not in ("little", "big"):
        raise InvalidArgumentError(f"byte order must be 'little' or 'big', not {byte_order!r}")
    if byte_order == sys.byteorder:
        return dt, None
    if info.name in _PAIR_TYPES:
        return None, f"{byte_order}-endian {info.name} (ml_dtypes would swap the whole element, not each half)"
    return dt.newbyteorder(">" if byte_order == "big" else "<"), None


def numpy_dtype(dtype: Any, byte_order: str = "little") -> Optional[np.dtype]:
    """The numpy (or ml_dtypes) dtype for `dtype` stored in `byte_order`, or None.

    None means numpy cannot represent the type in that byte order. Sub-byte
    types map to their one-per-byte ml_dtypes type (the PADDED packing).
    """
    return numpy_dtype_or_reason(dtype, byte_order)[0]


def _foreign_order(dt: np.dtype, info: DtypeInfo) -> Optional[str]:
    """The byte order of a non-native numpy dtype `dt` of element type `info`, else None."""
    if dt.itemsize == 1 or dt.isnative:
        return None
    if info.name in _PAIR_TYPES:
        raise UnsupportedError(
            f"non-native {info.name}: ml_dtypes swaps the whole element, so its halves' "
            "byte order is not the one the dtype claims"
        )
    return "big" if sys.byteorder == "little" else "little"


def from_numpy_dtype(dt: Any) -> tuple[int, str]:
    """(code, byte_order) of a numpy dtype; raises UnsupportedError when Hurray lacks it."""
    dt = np.dtype(dt)
    info = _info_from_numpy(dt)
    if info is None:
        if dt.fields is not None:
            raise UnsupportedError(f"structured dtype {dt} has no Hurray element type")
        if dt.hasobject:
            raise UnsupportedError("object arrays hold Python references, not tensor data")
        raise UnsupportedError(f"numpy dtype {dt} has no Hurray element type")
    order = _foreign_order(dt, info)
    if order is None:
        order = sys.byteorder if dt.itemsize > 1 else "little"
    return info.code, order


def stated_byte_order(dtype: Any) -> Optional[str]:
    """"big" or "little" when `dtype` is a numpy dtype in non-native byte order, else None.

    Hurray names and codes state no byte order, and neither do numpy dtypes
    in native order or one byte wide. Raises UnsupportedError for a
    non-native complex32 or bcomplex32 (see from_numpy_dtype).
    """
    if isinstance(dtype, (DtypeInfo, int, np.integer)) or (isinstance(dtype, str) and dtype in _BY_NAME):
        return None
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        return None  # not a dtype at all: dtype_info says so
    info = _info_from_numpy(dt)
    return None if info is None else _foreign_order(dt, info)
