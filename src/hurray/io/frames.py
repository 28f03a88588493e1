"""hurray.write_frame and hurray.read_frame: one named tensor per frame on
any binary file object -- a file, a pipe, ``socket.makefile("rwb")``.

The frame format lives in C (hurray_frame_write / hurray_frame_read); C
reaches the Python file object through the two extern "Python" callbacks
declared in native/cffi_build.py. An exception raised by the file object
inside a callback is kept and re-raised once C has returned.
"""
from typing import Any, BinaryIO, NoReturn, Optional

from .._ffi import ffi, lib
from ..errors import check
from ..core.tensor import Tensor
from ._pairs import as_tensor, borrowed_pair, tensor_from_pair, utf8


class _Stream:
    """The file object and the first exception its methods raised."""

    __slots__ = ("file", "error")

    def __init__(self, file: Any) -> None:
        self.file = file
        self.error: Optional[BaseException] = None


@ffi.def_extern()
def hurray_py_frame_write(stream: Any, data: Any, length: int) -> int:
    state = ffi.from_handle(stream)
    try:
        view = memoryview(ffi.buffer(data, length))
        while view:
            written = state.file.write(view)
            if written is None:  # a non-blocking raw stream that would block
                raise BlockingIOError("the stream would block; hurray frames need a blocking stream")
            view = view[written:]
        return 0
    except BaseException as exc:  # noqa: BLE001 -- re-raised by write_frame
        state.error = exc
        return -1


@ffi.def_extern()
def hurray_py_frame_read(stream: Any, data: Any, length: int, out_read: Any) -> int:
    state = ffi.from_handle(stream)
    try:
        file = state.file
        readinto = getattr(file, "readinto", None)
        if readinto is not None:
            got = readinto(ffi.buffer(data, length))
            if got is None:
                raise BlockingIOError("the stream would block; hurray frames need a blocking stream")
        else:
            chunk = file.read(length)
            got = len(chunk)
            ffi.memmove(data, chunk, got)
        out_read[0] = got
        return 0
    except BaseException as exc:  # noqa: BLE001 -- re-raised by read_frame
        state.error = exc
        return -1


def _reraise(state: _Stream, status: int) -> NoReturn:
    """The file object's own exception if it raised one, else the C status."""
    if state.error is not None:
        error, state.error = state.error, None
        raise error
    check(status)
    raise AssertionError("_reraise needs an exception or a failed status")


def write_frame(file: BinaryIO, tensor: Any, *, name: str = "") -> None:
    """Write `tensor` (a Tensor, numpy array, or anything from_hurray or
    from_dlpack takes) as one frame named `name` to the binary file object
    `file`, then flush it. Every buffer goes out from the tensor's memory,
    hashed on the way: no copy of the tensor is made."""
    encoded = utf8(name, "the frame name")
    tensor = as_tensor(tensor, "the tensor")
    state = _Stream(file)
    handle = ffi.new_handle(state)
    with borrowed_pair(tensor) as (context, buffer_list):
        status = lib.hurray_frame_write(lib.hurray_py_frame_write, handle, encoded, len(encoded), context, buffer_list)
    if status != lib.HURRAY_OK or state.error is not None:
        _reraise(state, status)
    flush = getattr(file, "flush", None)
    if flush is not None:
        flush()


def read_frame(file: BinaryIO, *, verify: bool = True) -> Optional[tuple[str, Tensor]]:
    """Read one frame from the binary file object `file`.

    Returns ``(name, tensor)``, the tensor in owned aligned memory, its
    checksum verified (unless ``verify=False``); or None when the stream
    ends cleanly before a frame. An end inside a frame raises
    :class:`hurray.errors.CorruptError`.
    """
    state = _Stream(file)
    handle = ffi.new_handle(state)
    name = ffi.new("HurrayBuffer **")
    context = ffi.new("HurrayTensorContext **")
    buffers = ffi.new("HurrayBufferList **")
    flags = 0 if verify else lib.HURRAY_READ_NO_VERIFY
    status = lib.hurray_frame_read(lib.hurray_py_frame_read, handle, flags, name, context, buffers)
    if status != lib.HURRAY_OK or state.error is not None:
        lib.hurray_buffer_destroy(name)
        lib.hurray_tensor_context_destroy(context)
        lib.hurray_buffer_list_destroy(buffers)
        _reraise(state, status)
    if context[0] == ffi.NULL:
        return None
    data = ffi.new("void **")
    length = ffi.new("uint64_t *")
    try:
        check(lib.hurray_buffer_data(name[0], data, length))
        text = ffi.buffer(data[0], length[0])[:].decode("utf-8")  # checked UTF-8 in C
    finally:
        lib.hurray_buffer_destroy(name)
    return text, tensor_from_pair(context[0], buffers[0])
