"""The path policy on the Python side (ADR-056): what every function that takes a path does first.

A path is a str, bytes or os.PathLike; one that holds a NUL byte is refused
(C would read it only up to the NUL: ``"config.json\\0.hurray"`` would name
``config.json``). The rest of the policy -- a regular file only, a FIFO
refused without blocking, symlinks followed, modes as open(2) gives them --
is C's (native/src/io_path.c), so every reader and writer, in every
binding, applies the same one. A refusal by the operating system becomes
the HurrayIOError subclass of its errno (a missing file is a
HurrayFileNotFoundError, a FileNotFoundError).
"""
from __future__ import annotations

import os
from typing import Any

from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, check

__all__ = ["fs_path", "open_regular"]

PathArg = str | bytes | os.PathLike[str] | os.PathLike[bytes]


def fs_path(path: Any, what: str) -> tuple[bytes, str]:
    """`path` as (bytes for C, str for messages), or InvalidArgumentError."""
    try:
        raw = os.fsencode(path)
    except TypeError:
        raise InvalidArgumentError(f"{what}: a path must be a str, bytes or os.PathLike, "
                                   f"not {type(path).__name__}") from None
    shown = os.fsdecode(raw)
    if b"\0" in raw:
        raise InvalidArgumentError(f"{what}: the path {shown!r} holds a NUL byte; no file is named so "
                                   f"(C would read the name only up to it)")
    return raw, shown


def open_regular(path: Any, what: str) -> tuple[int, int, str]:
    """(descriptor, size, the path in words) of the regular file at `path`, opened for reading.

    The caller owns the descriptor and closes it."""
    raw, shown = fs_path(path, what)
    fd = ffi.new("int *")
    size = ffi.new("uint64_t *")
    check(lib.hurray_io_open_read(raw, fd, size), shown)
    return int(fd[0]), int(size[0]), shown
