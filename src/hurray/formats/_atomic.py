"""Atomic replacement of a file, for the GGUF and safetensors writers: C's HurrayAtomicFile.

There is one atomic-replace routine, in C (native/src/io_atomic.c, ADR-056),
and hurray.save, save_gguf and save_safetensors all write through it: a
temporary file beside the target (unnamed where the file system allows, so
a killed writer leaves nothing), synced and renamed over the target; the
path policy (no NUL, only a regular file or nothing, symlinks followed),
modes as open(2) gives them, and the temporary removed on every error path.
A reader that has the old file mapped keeps the old bytes (safetensors #762
wrote zeros into a mapped file by writing in place).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .._ffi import ffi, lib
from ..errors import check
from ..io._path import fs_path

__all__ = ["AtomicFile", "replace_atomically"]


def _destroy(ptr: Any) -> None:
    lib.hurray_atomic_file_destroy(ffi.new("HurrayAtomicFile **", ptr))


class AtomicFile:
    """The temporary file a writer fills: ``write(bytes-like)`` hands the bytes to C as they are (no copy)."""

    __slots__ = ("_ptr", "_path")

    def __init__(self, ptr: Any, path: str) -> None:
        self._ptr = ptr
        self._path = path

    def write(self, data: Any) -> int:
        view = memoryview(data)
        if not view.c_contiguous:
            view = memoryview(view.tobytes())
        nbytes = view.nbytes
        if nbytes:
            check(lib.hurray_atomic_file_write(self._ptr, ffi.from_buffer(view), nbytes), self._path)
        return nbytes


def replace_atomically(path: str | bytes | os.PathLike[str] | os.PathLike[bytes],
                       write: Callable[[AtomicFile], object], what: str) -> None:
    """Call write(AtomicFile) on a temporary file for `path`, then sync it and rename it over `path`.

    Any exception, from `write` or from the file system, leaves `path` as it
    was and no temporary behind; an OS refusal is the HurrayIOError of its
    errno (HurrayFileNotFoundError for a missing directory, ...)."""
    raw, shown = fs_path(path, what)
    box = ffi.new("HurrayAtomicFile **")
    check(lib.hurray_atomic_file_open(raw, box), shown)
    ptr = ffi.gc(box[0], _destroy)
    try:
        write(AtomicFile(ptr, shown))
        check(lib.hurray_atomic_file_finish(ptr), shown)
    finally:
        ffi.release(ptr)  # now: unfinished, this removes the temporary; finished, releases the old file
