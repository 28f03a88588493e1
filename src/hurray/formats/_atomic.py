"""Atomic replacement of a file: write a temporary file beside it, sync, rename over it.

A reader that has the old file mapped keeps seeing the old bytes (the rename
gives the path a new inode; safetensors #762 wrote zeros into a mapped file by
writing in place), and a failure part-way leaves the path untouched.
"""
import os
import tempfile
from collections.abc import Callable
from typing import IO

from ..errors import HurrayIOError

__all__ = ["replace_atomically"]


def replace_atomically(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], what: str) -> None:
    """Call write(binary file) on a temporary file beside `path`, sync it, rename it over `path`."""
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    try:
        fd, temp = tempfile.mkstemp(prefix=".hurray-", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise HurrayIOError(f"{what}: cannot create a file in {directory!r}: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            write(out)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, target)
    except BaseException as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise HurrayIOError(f"{what}: cannot write {target!r}: {exc.strerror}") from None
        raise
    _sync_directory(directory)


def _sync_directory(directory: str) -> None:
    """Make the rename itself durable (where the platform lets a directory be synced)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
