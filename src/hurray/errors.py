"""Every exception the package raises: one class per HurrayStatus, all under HurrayError.

DLPackError, which no status stands for, is here too (the DLPack
bridge raises it, hurray.bridges.dlpack).
"""
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
    """The operating system refused a read, write or open of a file or stream."""


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


def check(status: int) -> None:
    """Raise the class of `status`, with the C library's message, unless it is OK."""
    if status != lib.HURRAY_OK:
        raise_status(status)


def raise_status(status: int) -> NoReturn:
    message = ffi.string(lib.hurray_last_error_message()).decode("utf-8", "replace")
    name = ffi.string(lib.hurray_status_name(status)).decode()
    raise error_class(status)(f"{name}: {message}", status)
