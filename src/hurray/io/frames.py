"""hurray.write_frame and hurray.read_frame: one named tensor per frame on
any binary file object -- a file, a pipe, ``socket.makefile("rwb")``.

The frame format lives in C (hurray_frame_write / hurray_frame_read); C
reaches the Python file object through the two extern "Python" callbacks
declared in native/cffi_build.py. The file object is a stranger's code (a
peer's socket wrapper, say), so the callbacks believe nothing it returns:
a read() that returns more bytes than asked for, or a write() that claims
to have written nothing, less than nothing or more than it was given, is a
FrameStreamError, never a copy past a buffer or a loop that spins (issue
27). An exception the file object raises is kept and re-raised, as the
cause of a FrameStreamError, once C has returned; every error says how far
into the frame the stream got.
"""
import io
import select
import time
from typing import Any, BinaryIO, NoReturn, Optional

from .._ffi import ffi, lib
from ..core.tensor import Tensor
from ..errors import FrameStreamError, FrameTimeoutError, HurrayError, InvalidArgumentError, error_class
from ._pairs import as_tensor, borrowed_pair, tensor_from_pair, utf8


class _Stream:
    """The file object, what went through it, and the first failure."""

    __slots__ = ("file", "error", "done", "deadline", "read", "poll_fd")

    def __init__(self, file: Any, timeout: Optional[float] = None) -> None:
        self.file = file
        self.error: Optional[BaseException] = None
        self.done = 0  # bytes of the frame read or written so far
        self.deadline = None if timeout is None else time.monotonic() + timeout
        # Reads take one raw read at most (readinto1), so a peer that
        # trickles bytes cannot keep one call going past the deadline.
        self.read = getattr(file, "readinto1", None) or getattr(file, "readinto", None)
        # A raw stream has no buffer between it and its descriptor: waiting
        # on the descriptor is then exact (a buffered one may hold bytes the
        # descriptor does not show).
        self.poll_fd = _descriptor(file) if self.deadline is not None and isinstance(file, io.RawIOBase) else None


def _descriptor(file: Any) -> Optional[int]:
    try:
        return int(file.fileno())
    except (AttributeError, OSError, ValueError):
        return None


def _wait_for_bytes(state: _Stream) -> None:
    """Raises FrameTimeoutError once the deadline has passed, or when it
    passes with no byte arriving on a raw stream's descriptor."""
    if state.deadline is None:
        return
    left = state.deadline - time.monotonic()
    if left > 0 and state.poll_fd is not None:
        poller = select.poll()
        poller.register(state.poll_fd, select.POLLIN | select.POLLPRI)
        if poller.poll(max(1, int(left * 1000))):  # readable, at its end, or broken: the read will say
            return
        left = 0
    if left <= 0:
        raise FrameTimeoutError("the frame did not arrive within the timeout")


def _count(value: Any, most: int, what: str) -> int:
    """A count a file object returned, checked to be an int from 0 to `most`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FrameStreamError(f"the stream's {what} returned {type(value).__name__}, not a count of bytes")
    if not 0 <= value <= most:
        raise FrameStreamError(f"the stream's {what} returned {value} for a buffer of {most} bytes")
    return value


@ffi.def_extern()
def hurray_py_frame_write(stream: Any, data: Any, length: int) -> int:
    state = ffi.from_handle(stream)
    try:
        view = memoryview(ffi.buffer(data, length))
        while view:
            written = state.file.write(view)
            if written is None:  # a non-blocking raw stream that would block
                raise FrameStreamError("the stream would block; hurray frames need a blocking stream")
            # 0 would loop forever, a negative count or more than was given
            # is a lie: either way the stream is broken.
            written = _count(written, len(view), "write()")
            if written == 0:
                raise FrameStreamError("the stream's write() wrote nothing (it accepts no more bytes)")
            view = view[written:]
            state.done += written
        return 0
    except BaseException as exc:  # noqa: BLE001 -- re-raised by write_frame
        state.error = exc
        return -1


@ffi.def_extern()
def hurray_py_frame_read(stream: Any, data: Any, length: int, out_read: Any) -> int:
    state = ffi.from_handle(stream)
    try:
        _wait_for_bytes(state)
        if state.read is not None:
            got = state.read(ffi.buffer(data, length))
            if got is None:
                raise FrameStreamError("the stream would block; hurray frames need a blocking stream")
            got = _count(got, length, "readinto()")
        else:
            chunk = state.file.read(length)
            if chunk is None:
                raise FrameStreamError("the stream would block; hurray frames need a blocking stream")
            try:
                got = memoryview(chunk).nbytes
            except TypeError:
                raise FrameStreamError(f"the stream's read() returned {type(chunk).__name__}, not bytes") from None
            if got > length:
                # A thin socket wrapper's recv(65536) answering read(48):
                # nothing is copied, the peer chose those bytes.
                raise FrameStreamError(f"the stream's read({length}) returned {got} bytes, more than asked for")
            ffi.memmove(data, chunk, got)
        state.done += got
        out_read[0] = got
        return 0
    except BaseException as exc:  # noqa: BLE001 -- re-raised by read_frame
        state.error = exc
        return -1


def _where(state: _Stream, verb: str) -> str:
    if state.done == 0:
        return f"no byte of the frame was {verb}: the stream is where it was"
    return (f"{state.done} bytes of the frame were {verb}: the stream stands inside a frame and "
            f"cannot be used for frames any more; close it")


def _reraise(state: _Stream, status: int, what: str, verb: str) -> NoReturn:
    """A HurrayError that says what failed and where the stream stands, with
    the file object's own exception (if it raised one) as the cause.
    KeyboardInterrupt and the like go through as they are."""
    where = _where(state, verb)
    error, state.error = state.error, None
    if error is not None and not isinstance(error, Exception):
        raise error  # KeyboardInterrupt, SystemExit: not the stream's failure
    io_status = lib.HURRAY_ERROR_IO
    cause: Optional[BaseException] = error
    raised: HurrayError
    if isinstance(error, FrameStreamError):  # raised by a callback above
        raised = type(error)(f"{what}: {error}; {where}", io_status)
        cause = None
    elif isinstance(error, TimeoutError):  # a socket's own timeout
        raised = FrameTimeoutError(f"{what}: the stream timed out ({error}); {where}", io_status)
    elif error is not None:
        raised = FrameStreamError(f"{what}: the stream raised {type(error).__name__}: {error}; {where}", io_status)
    else:  # C refused the bytes themselves (a truncated or corrupt frame, ...)
        message = ffi.string(lib.hurray_last_error_message()).decode("utf-8", "replace")
        name = ffi.string(lib.hurray_status_name(status)).decode()
        cls = FrameStreamError if status == io_status else error_class(status)
        raised = cls(f"{name}: {message}; {where}", status)
    if isinstance(raised, FrameStreamError):
        raised.frame_bytes = state.done
    raise raised from cause


def write_frame(file: BinaryIO, tensor: Any, *, name: str = "") -> None:
    """Write `tensor` (a Tensor, numpy array, or anything from_hurray or
    from_dlpack takes) as one frame named `name` to the binary file object
    `file`, then flush it. Every buffer goes out from the tensor's memory,
    hashed on the way: no copy of the tensor is made.

    A stream that fails (its exception is the cause) or whose write()
    returns something other than a count of the bytes it took raises
    :class:`hurray.errors.FrameStreamError`, whose ``frame_bytes`` says how
    much of the frame went out.
    """
    encoded = utf8(name, "the frame name")
    tensor = as_tensor(tensor, "the tensor")
    state = _Stream(file)
    handle = ffi.new_handle(state)
    with borrowed_pair(tensor) as (context, buffer_list):
        status = lib.hurray_frame_write(lib.hurray_py_frame_write, handle, encoded, len(encoded), context, buffer_list)
    if status != lib.HURRAY_OK or state.error is not None:
        _reraise(state, status, "write_frame", "written")
    flush = getattr(file, "flush", None)
    if flush is not None:
        try:
            flush()
        except Exception as exc:
            raise FrameStreamError(f"write_frame: the stream's flush() raised {type(exc).__name__}: {exc}; "
                                   f"the whole frame was written to it, but not all of it may have left") from exc


def read_frame(file: BinaryIO, *, verify: bool = True, timeout: Optional[float] = None
               ) -> Optional[tuple[str, Tensor]]:
    """Read one frame from the binary file object `file`.

    Returns ``(name, tensor)``, the tensor in owned aligned memory, its
    checksum verified (unless ``verify=False``); or None when the stream
    ends cleanly before a frame. An end inside a frame raises
    :class:`hurray.errors.CorruptError`.

    ``timeout`` (seconds) bounds the whole frame: each read is one read of
    the stream at most (``readinto1``), and once the time is up the next one
    is not made; :class:`hurray.errors.FrameTimeoutError` is raised. On a
    raw stream (``sock.makefile("rb", buffering=0)``, ``open(path, "rb",
    buffering=0)``) a read also waits no longer than the time left; a
    buffered one waits as long as its own reads do (a socket's
    ``settimeout``, whose TimeoutError also becomes a FrameTimeoutError).
    Every failure of the stream is a :class:`hurray.errors.FrameStreamError`
    (the stream's own exception as its cause) whose message and
    ``frame_bytes`` say where the stream now stands.
    """
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not timeout > 0):
        raise InvalidArgumentError(f"read_frame: timeout must be None or a number of seconds > 0, not {timeout!r}")
    state = _Stream(file, timeout)
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
        _reraise(state, status, "read_frame", "read")
    if context[0] == ffi.NULL:
        return None
    data = ffi.new("void **")
    length = ffi.new("uint64_t *")
    try:
        if lib.hurray_buffer_data(name[0], data, length) != lib.HURRAY_OK:
            _reraise(state, lib.HURRAY_ERROR_NULL_ARGUMENT, "read_frame", "read")
        text = ffi.buffer(data[0], length[0])[:].decode("utf-8")  # checked UTF-8 in C
    finally:
        lib.hurray_buffer_destroy(name)
    return text, tensor_from_pair(context[0], buffers[0])
