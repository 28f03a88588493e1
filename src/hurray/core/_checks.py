"""Checks shared by several modules: integer arguments, and memory spans.

Each integer check returns the value as a plain int or raises a HurrayError
subclass that names the field: InvalidArgumentError for the wrong type or
sign, HurrayOverflowError for a value past the C field's width.
check_spans proves in C that spans hold what a descriptor reaches; reach
gives the bytes a strided layout spans.
"""
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ._ffi import ffi, lib
from .errors import HurrayOverflowError, InvalidArgumentError, check

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
    return [convert(v, f"{field}[{i}]", *args) for i, v in enumerate(items)]


def reach(shape: Iterable[int], byte_strides: Iterable[int]) -> tuple[int, int]:
    """(low, high): the byte offsets from element 0 of the lowest and the
    highest element a non-empty layout reaches; low <= 0 <= high."""
    low = high = 0
    for n, step in zip(shape, byte_strides):
        extent = (n - 1) * step
        if extent < 0:
            low += extent
        else:
            high += extent
    return low, high


def check_spans(descriptor: Any, spans: Sequence[tuple[int, int]]) -> None:
    """Run hurray_descriptor_check_buffers over borrowed views of `spans`."""
    handle = descriptor.handle
    box = ffi.new("HurrayBufferList **")
    check(lib.hurray_buffer_list_new(box))
    buf = ffi.new("HurrayBuffer **")
    try:
        for address, nbytes in spans:
            # release NULL: the list only borrows; the owner frees the memory.
            check(lib.hurray_buffer_from_ptr(ffi.cast("void *", address), nbytes, ffi.NULL, ffi.NULL, buf))
            status = lib.hurray_buffer_list_push(box[0], buf)
            lib.hurray_buffer_destroy(buf)  # no-op once the list took it
            check(status)
        check(lib.hurray_descriptor_check_buffers(handle, box[0]))
    finally:
        lib.hurray_buffer_list_destroy(box)
