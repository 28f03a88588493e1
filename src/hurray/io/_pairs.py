"""Between Tensors and the C pair (HurrayTensorContext, HurrayBufferList), and what writers take.

A pair from the C reader becomes a Tensor whose owner destroys both halves
exactly once, when the last user of the tensor is gone (the context's own
owner keeps a file mapping alive). A Tensor becomes a borrowed pair for the
C writer: the pair points into the tensor's memory and is destroyed before
the call that used it returns.

hurray.save, write_frame, save_safetensors and save_gguf all take their
tensors through :func:`as_tensor`, so they accept and refuse alike.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, Optional

import numpy as np

from .._core import keep, kept, pair
from .._ffi import ffi, lib
from ..bridges.dlpack import from_dlpack
from ..bridges.numpy import from_numpy
from ..bridges.protocol import from_hurray
from ..core.descriptor import Descriptor
from ..core.tensor import Tensor
from ..errors import InvalidArgumentError, check

_ABI = lib.HURRAY_C_ABI_VERSION


def _destroy_context(ptr: Any) -> None:
    lib.hurray_tensor_context_destroy(ffi.new("HurrayTensorContext **", ptr))


def _destroy_list(ptr: Any) -> None:
    lib.hurray_buffer_list_destroy(ffi.new("HurrayBufferList **", ptr))


class PairOwner:
    """Owns one C pair; each half is destroyed exactly once, by ffi.gc.

    `verifier` is a callable that checks the tensor's checksum, or None once
    there is nothing left to check (see lazy.py).
    """

    __slots__ = ("context", "list", "verifier", "__weakref__")

    def __init__(self, context: Any, buffer_list: Any, verifier: Optional[Callable[[], None]] = None) -> None:
        self.context = ffi.gc(context, _destroy_context)
        self.list = ffi.gc(buffer_list, _destroy_list)
        self.verifier = verifier


def _descriptor_of(context: Any) -> Descriptor:
    """The context's Descriptor, from the package's one cache of decoded
    descriptors (hurray._core): the tensors of a file often share a handful
    of shapes and types."""
    data = ffi.new("const uint8_t **")
    length = ffi.new("uint64_t *")
    check(lib.hurray_tensor_context_descriptor(context, data, length))
    raw = ffi.buffer(data[0], length[0])[:]
    desc = kept(raw)
    if desc is None:
        desc = keep(Descriptor.decode(raw))
    return desc


def spans_of(buffer_list: Any) -> tuple[tuple[int, int], ...]:
    count = ffi.new("uint64_t *")
    check(lib.hurray_buffer_list_len(buffer_list, count))
    buf = ffi.new("const HurrayBuffer **")
    data = ffi.new("void **")
    length = ffi.new("uint64_t *")
    spans = []
    for i in range(count[0]):
        check(lib.hurray_buffer_list_get(buffer_list, i, buf))
        check(lib.hurray_buffer_data(buf[0], data, length))
        spans.append((int(ffi.cast("uintptr_t", data[0])), length[0]))
    return tuple(spans)


def tensor_from_pair(context: Any, buffer_list: Any, cls: type[Tensor] = Tensor,
                     verifier: Optional[Callable[[], None]] = None) -> Tensor:
    """A Tensor over a pair the C library just handed out (and checked:
    every reader and frame function runs hurray_descriptor_check_buffers
    before it returns a pair). The Tensor owns the pair from here on."""
    owner = PairOwner(context, buffer_list, verifier)
    desc = _descriptor_of(context)
    spans = spans_of(buffer_list)
    if cls is Tensor:
        return Tensor._from_checked(desc, spans, owner)
    return cls._from_pair(desc, spans, owner)  # type: ignore[attr-defined]  # lazy.LazyTensor's


@contextlib.contextmanager
def borrowed_pair(tensor: Tensor) -> Iterator[tuple[Any, Any]]:
    """A C pair pointing into `tensor`'s memory, for the duration of the block.

    A plain Tensor's pair is made in C (hurray._core.pair); any other's
    here, from ``tensor.buffers``, whose reading runs a pending checksum
    verification first (lazy.py), so a tensor from a damaged file is never
    written out.
    """
    made = pair(tensor)
    if made is None:
        made = _pair_in_python(tensor)
    context = ffi.cast("HurrayTensorContext *", made[0])
    buffer_list = ffi.cast("HurrayBufferList *", made[1])
    try:
        yield context, buffer_list
    finally:
        lib.hurray_buffer_list_destroy(ffi.new("HurrayBufferList **", buffer_list))
        lib.hurray_tensor_context_destroy(ffi.new("HurrayTensorContext **", context))


def _pair_in_python(tensor: Tensor) -> tuple[int, int]:
    """borrowed_pair's (context, list) addresses, made through cffi."""
    spans = tensor.buffers
    encoded = tensor.descriptor.encode()
    context = ffi.new("HurrayTensorContext **")
    check(lib.hurray_tensor_context_new(_ABI, encoded, len(encoded), ffi.NULL, ffi.NULL, context))
    box = ffi.new("HurrayBufferList **")
    try:
        check(lib.hurray_buffer_list_new(box))
        buf = ffi.new("HurrayBuffer **")
        for address, nbytes in spans:
            check(lib.hurray_buffer_from_ptr(ffi.cast("void *", address), nbytes, ffi.NULL, ffi.NULL, buf))
            status = lib.hurray_buffer_list_push(box[0], buf)
            if status != lib.HURRAY_OK:
                lib.hurray_buffer_destroy(buf)
                check(status)
    except BaseException:
        lib.hurray_buffer_list_destroy(box)
        lib.hurray_tensor_context_destroy(context)
        raise
    return _address(context[0]), _address(box[0])


def _address(pointer: Any) -> int:
    return int(ffi.cast("uintptr_t", pointer))


def utf8(text: object, what: str) -> bytes:
    """`text` (a str) as UTF-8 bytes; anything else is an InvalidArgumentError."""
    if not isinstance(text, str):
        raise InvalidArgumentError(f"{what} must be a str, not {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"{what} {text!r} cannot be encoded as UTF-8: {exc.reason}") from None


def as_tensor(value: Any, what: str) -> Tensor:
    """`value` as a Tensor, zero-copy: a Tensor itself, a numpy array, or anything
    hurray.from_hurray or hurray.from_dlpack takes (a torch tensor, say).
    `what` names the value in the refusal of anything else."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return from_numpy(value)
    if hasattr(value, "__hurray__"):
        return from_hurray(value)
    if hasattr(value, "__dlpack__"):
        return from_dlpack(value)
    raise InvalidArgumentError(
        f"{what} is a {type(value).__name__}: expected a hurray.Tensor, a numpy array, "
        f"or an object with __hurray__ or __dlpack__"
    )
