"""The header's enumerations by name: each HURRAY_<KIND>_<NAME> constant as a lowercase name and back.

Read once from the cffi library, for the descriptor (descriptor.py) and its
graph nodes (nodes.py) alike.
"""
from typing import Any

from ._checks import U32, uint
from .._ffi import lib
from ..errors import InvalidArgumentError


def _enum(prefix: str) -> tuple[dict[int, str], dict[str, int]]:
    """({code: lowercase name}, {lowercase name: code}) for the header's constants prefix + NAME."""
    by_code = {getattr(lib, n): n[len(prefix):].lower() for n in dir(lib) if n.startswith(prefix)}
    return by_code, {name: code for code, name in by_code.items()}


BYTE_ORDERS, _BYTE_ORDER_CODES = _enum("HURRAY_BYTE_ORDER_")
PACKINGS, _PACKING_CODES = _enum("HURRAY_PACKING_")
SCHEMES, _SCHEME_CODES = _enum("HURRAY_SCHEME_")
GRANULARITIES, _GRANULARITY_CODES = _enum("HURRAY_GRANULARITY_")
ROLES, _ROLE_CODES = _enum("HURRAY_ROLE_")
LAYOUTS, _LAYOUT_CODES = _enum("HURRAY_PART_LAYOUT_")
GGML_TYPES, _GGML_TYPE_CODES = _enum("HURRAY_GGML_")


def _code(codes: dict[str, int], value: Any, field: str) -> int:
    """The code for a lowercase name (looked up in `codes`), or an integer code passed through for C to judge."""
    if isinstance(value, str):
        code = codes.get(value.lower())
        if code is None:
            known = ", ".join(repr(n) for n in codes)
            raise InvalidArgumentError(f"{field} {value!r} is not one of {known}")
        return code
    return uint(value, field, U32)


def _name(table: dict[int, str], code: int) -> Any:  # the name, or the code a table lacks
    return table.get(code, code)
