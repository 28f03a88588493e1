"""Every HurrayStatus maps to its own exception class under HurrayError."""
import pytest

import hurray
from hurray import errors
from hurray._ffi import ffi, lib

STATUSES = [
    ("HURRAY_ERROR_NULL_ARGUMENT", errors.NullArgumentError, ValueError),
    ("HURRAY_ERROR_INVALID_ARGUMENT", errors.InvalidArgumentError, ValueError),
    ("HURRAY_ERROR_OUT_OF_RANGE", errors.OutOfRangeError, IndexError),
    ("HURRAY_ERROR_OVERFLOW", errors.HurrayOverflowError, OverflowError),
    ("HURRAY_ERROR_NO_MEMORY", errors.HurrayMemoryError, MemoryError),
    ("HURRAY_ERROR_NOT_A_CONTEXT", errors.NotAContextError, TypeError),
    ("HURRAY_ERROR_ABI_VERSION", errors.AbiVersionError, hurray.HurrayError),
    ("HURRAY_ERROR_INVALID_DESCRIPTOR", errors.InvalidDescriptorError, ValueError),
    ("HURRAY_ERROR_UNSUPPORTED", errors.UnsupportedError, ValueError),
    ("HURRAY_ERROR_BUFFER_TOO_SMALL", errors.BufferTooSmallError, ValueError),
    ("HURRAY_ERROR_NOT_FOUND", errors.NotFoundError, LookupError),
    ("HURRAY_ERROR_IO", errors.HurrayIOError, OSError),
    ("HURRAY_ERROR_CORRUPT", errors.CorruptError, ValueError),
    ("HURRAY_ERROR_CHECKSUM", errors.ChecksumError, errors.CorruptError),
]


def test_every_status_has_a_class():
    assert len({cls for _, cls, _ in STATUSES}) == len(STATUSES) == 14
    assert lib.hurray_status_name(15) != ffi.NULL
    assert ffi.string(lib.hurray_status_name(15)) == b"HURRAY_ERROR_UNKNOWN"


@pytest.mark.parametrize("name, cls, builtin", STATUSES)
def test_status_maps_to_its_class(name, cls, builtin):
    status = getattr(lib, name)
    assert errors.error_class(status) is cls
    assert issubclass(cls, hurray.HurrayError) and issubclass(cls, builtin)
    assert cls.status_name == name


def test_check_raises_with_the_c_message():
    out = ffi.new("HurrayBufferList **")
    with pytest.raises(errors.NullArgumentError) as info:
        errors.check(lib.hurray_buffer_list_len(ffi.NULL, ffi.new("uint64_t *")))
    assert info.value.status == lib.HURRAY_ERROR_NULL_ARGUMENT
    assert str(info.value).startswith("HURRAY_ERROR_NULL_ARGUMENT: ")
    assert len(str(info.value)) > len("HURRAY_ERROR_NULL_ARGUMENT: ")
    errors.check(lib.hurray_buffer_list_new(out))
    lib.hurray_buffer_list_destroy(out)
    assert out[0] == ffi.NULL


def test_ok_does_not_raise():
    errors.check(lib.HURRAY_OK)
