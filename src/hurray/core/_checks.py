"""Checks of integer arguments, shared by several modules.

Each returns the value as a plain int or raises a HurrayError subclass that
names the field: InvalidArgumentError for the wrong type or sign,
HurrayOverflowError for a value past the C field's width. (What a layout
reaches and whether spans hold it are the descriptor's: see descriptor.py.)
"""
import operator
from collections.abc import Callable
from typing import Any

from ..errors import HurrayOverflowError, InvalidArgumentError

U32 = 1 << 32
U64 = 1 << 64
I64 = 1 << 63


def index(value: Any, field: str) -> int:
    """`value` as an int: anything with __index__ except a bool."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{field} must be an integer, not a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise InvalidArgumentError(f"{field} must be an integer, not {type(value).__name__}") from None


def uint(value: Any, field: str, limit: int) -> int:
    """`value` as an int in 0 .. limit - 1."""
    value = index(value, field)
    if value < 0:
        raise InvalidArgumentError(f"{field} must not be negative (got {value})")
    if value >= limit:
        raise HurrayOverflowError(f"{field} {value} does not fit in {limit.bit_length() - 1} bits")
    return value


def int64(value: Any, field: str) -> int:
    """`value` as an int that fits a signed 64-bit integer."""
    value = index(value, field)
    if not -I64 <= value < I64:
        raise HurrayOverflowError(f"{field} {value} does not fit in a signed 64-bit integer")
    return value


def ints(values: Any, field: str, convert: Callable[..., int], *args: Any) -> list[int]:
    """A list of ints from a sequence (or one bare integer), each through `convert`."""
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError(f"{field} must be a sequence of integers, not {type(values).__name__}")
    try:
        items = list(values)
    except TypeError:
        items = [values]  # a bare integer: one dimension
    bounds = (0, args[0]) if convert is uint else (-I64, I64) if convert is int64 else None
    if bounds is not None and _plain_ints_within(items, *bounds):
        return items  # what convert gives each of them, without naming each field
    return [convert(v, f"{field}[{i}]", *args) for i, v in enumerate(items)]


def _plain_ints_within(items: list[Any], low: int, high: int) -> bool:
    """True when every item is an int (not a bool or another integer type) in low .. high - 1."""
    for v in items:
        if type(v) is not int or not low <= v < high:
            return False
    return True
