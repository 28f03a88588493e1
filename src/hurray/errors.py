"""Every exception the package raises: one class per HurrayStatus, all under HurrayError.

DLPackError, which no status stands for, is here too (the DLPack
bridge raises it, hurray.bridges.dlpack). HURRAY_ERROR_IO also carries the
operating system's errno (hurray_last_error_errno), which picks the
matching OSError subclass: a missing file is a HurrayFileNotFoundError,
which is a FileNotFoundError. FrameStreamError and FrameTimeoutError are
the stream failures of hurray.read_frame and hurray.write_frame.
"""
import errno as _errno
import os
from typing import NoReturn, Optional

from ._ffi import ffi, lib


class HurrayError(Exception):
    """The base of every error the package raises on bad input."""

    status_name: Optional[str] = None

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.status = status


class NullArgumentError(HurrayError, ValueError):
    """A required handle or pointer was missing."""


class InvalidArgumentError(HurrayError, ValueError):
    """A value lies outside its documented domain."""


class OutOfRangeError(HurrayError, IndexError):
    """An index lies past the end."""


class HurrayOverflowError(HurrayError, OverflowError):
    """Size arithmetic does not fit in 64 bits."""


class HurrayMemoryError(HurrayError, MemoryError):
    """The native library could not allocate."""


class NotAContextError(HurrayError, TypeError):
    """A capsule context is not a HurrayTensorContext."""


class AbiVersionError(HurrayError):
    """A C ABI version this build cannot read."""


class InvalidDescriptorError(HurrayError, ValueError):
    """Descriptor bytes or fields are malformed."""


class UnsupportedError(HurrayError, ValueError):
    """A well-formed code or feature this build does not know."""


class BufferTooSmallError(HurrayError, ValueError):
    """A layout reaches past its buffer."""


class NotFoundError(HurrayError, LookupError):
    """A role the descriptor does not have."""


class CapsuleError(HurrayError, TypeError):
    """An object is not a usable Hurray capsule (wrong name, already used, not a capsule)."""


class HurrayIOError(HurrayError, OSError):
    """The operating system refused a read, write or open of a file or stream.

    ``errno``, ``strerror`` and ``filename`` are set when the operating
    system said why (``errno.ENOSPC``, ...); the message stays Hurray's.
    """

    __str__ = Exception.__str__  # the message, not OSError's "[Errno N] ..." once errno is set


class HurrayFileNotFoundError(HurrayIOError, FileNotFoundError):
    """A path names no file (ENOENT): ``except FileNotFoundError`` catches it."""


class HurrayPermissionError(HurrayIOError, PermissionError):
    """The operating system did not allow the open, write or rename (EACCES, EPERM)."""


class HurrayIsADirectoryError(HurrayIOError, IsADirectoryError):
    """A path names a directory where a file was needed (EISDIR)."""


class HurrayNotADirectoryError(HurrayIOError, NotADirectoryError):
    """A component of a path is not a directory (ENOTDIR)."""


class FrameStreamError(HurrayIOError):
    """A stream failed, lied or timed out while a frame was read or written.

    The stream's own exception, if it raised one, is the ``__cause__``.
    ``frame_bytes`` is how many bytes of the frame went through the stream
    before the failure: 0 means the stream is where it was, anything else
    that it stands inside a frame and cannot be read (or written) further as
    frames -- close it. The message says the same in words.
    """

    frame_bytes: int = 0


class FrameTimeoutError(FrameStreamError, TimeoutError):
    """A frame did not arrive within ``read_frame``'s ``timeout`` (or the stream's own)."""


class CorruptError(HurrayError, ValueError):
    """A file or frame is malformed or truncated."""


class ChecksumError(CorruptError):
    """Stored bytes do not match their checksum."""


class MissingPackageError(UnsupportedError, ImportError):
    """A framework bridge's package (torch, mlx, ...) is not installed; the message names what to install.

    Also an ImportError, so ``except ImportError`` catches it (ADR-061).
    """


class DLPackError(HurrayError, BufferError):
    """A tensor DLPack cannot carry exactly, or a DLPack tensor Hurray cannot hold.

    A BufferError too, which is what the DLPack Python specification asks
    producers to raise.
    """


_BY_STATUS = {
    lib.HURRAY_ERROR_NULL_ARGUMENT: NullArgumentError,
    lib.HURRAY_ERROR_INVALID_ARGUMENT: InvalidArgumentError,
    lib.HURRAY_ERROR_OUT_OF_RANGE: OutOfRangeError,
    lib.HURRAY_ERROR_OVERFLOW: HurrayOverflowError,
    lib.HURRAY_ERROR_NO_MEMORY: HurrayMemoryError,
    lib.HURRAY_ERROR_NOT_A_CONTEXT: NotAContextError,
    lib.HURRAY_ERROR_ABI_VERSION: AbiVersionError,
    lib.HURRAY_ERROR_INVALID_DESCRIPTOR: InvalidDescriptorError,
    lib.HURRAY_ERROR_UNSUPPORTED: UnsupportedError,
    lib.HURRAY_ERROR_BUFFER_TOO_SMALL: BufferTooSmallError,
    lib.HURRAY_ERROR_NOT_FOUND: NotFoundError,
    lib.HURRAY_ERROR_IO: HurrayIOError,
    lib.HURRAY_ERROR_CORRUPT: CorruptError,
    lib.HURRAY_ERROR_CHECKSUM: ChecksumError,
}
for _status, _cls in _BY_STATUS.items():
    _cls.status_name = ffi.string(lib.hurray_status_name(_status)).decode()


def error_class(status: int) -> type[HurrayError]:
    """The exception class that stands for a non-OK HurrayStatus."""
    return _BY_STATUS.get(status, HurrayError)


def check(status: int, filename: Optional[str] = None) -> None:
    """Raise the class of `status`, with the C library's message, unless it is OK.

    `filename` (the path the call was given) is kept on an I/O error."""
    if status != lib.HURRAY_OK:
        raise_status(status, filename)


_BY_ERRNO: dict[int, type[HurrayIOError]] = {
    _errno.ENOENT: HurrayFileNotFoundError,
    _errno.EACCES: HurrayPermissionError,
    _errno.EPERM: HurrayPermissionError,
    _errno.EISDIR: HurrayIsADirectoryError,
    _errno.ENOTDIR: HurrayNotADirectoryError,
}


def io_error(message: str, err: int, filename: Optional[str] = None,
             status: Optional[int] = None) -> HurrayIOError:
    """The HurrayIOError (or the subclass for `err`: HurrayFileNotFoundError, ...) for an OS refusal."""
    exc = _BY_ERRNO.get(err, HurrayIOError)(message, status if status is not None else lib.HURRAY_ERROR_IO)
    if err:
        exc.errno = err
        exc.strerror = os.strerror(err)
    if filename is not None:
        exc.filename = filename
    return exc


def raise_status(status: int, filename: Optional[str] = None) -> NoReturn:
    """Raise the exception for a non-OK status, with this thread's C message (and errno, for I/O)."""
    message = ffi.string(lib.hurray_last_error_message()).decode("utf-8", "replace")
    name = ffi.string(lib.hurray_status_name(status)).decode()
    if status == lib.HURRAY_ERROR_IO:
        raise io_error(f"{name}: {message}", lib.hurray_last_error_errno(), filename, status)
    raise error_class(status)(f"{name}: {message}", status)
