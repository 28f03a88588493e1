"""hurray.save: named tensors to a hurray-io file, replaced atomically."""
import collections.abc
import os
import threading
from typing import Any, Optional

from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, check
from ._pairs import as_tensor, borrowed_pair, utf8
from ._path import fs_path


def _destroy_writer(ptr: Any) -> None:
    lib.hurray_writer_destroy(ffi.new("HurrayWriter **", ptr))


def _release(writer: Any) -> None:
    """Destroys a finished writer, which closes the file it replaced: the
    kernel frees that file's blocks then. Done on a thread so the caller
    does not wait for it (ADR-050); a thread that cannot start is not
    needed, the release then runs here."""
    try:
        threading.Thread(target=ffi.release, args=(writer,), name="hurray-save-release").start()
    except RuntimeError:
        ffi.release(writer)


def save(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], tensors: collections.abc.Mapping[str, Any], *,
         metadata: Optional[collections.abc.Mapping[str, str]] = None, page_align: bool = False) -> None:
    """Write `tensors` (a Mapping of str names to Tensors, numpy arrays, or
    anything :func:`hurray.from_hurray` / :func:`hurray.from_dlpack` takes,
    a torch ``state_dict`` say) to `path`.

    The file is written to a temporary beside `path`, synced and renamed
    over it: `path` holds either the old file or the whole new one, and a
    reader that still has the old file mapped keeps the old bytes. The new
    file is on the disk when this returns; the file it replaced is released
    (its blocks freed) by a short-lived thread just after (ADR-050).
    `metadata` is an optional Mapping of str to str. Buffers start at
    multiples of 64 bytes, or of the page size with ``page_align=True``.
    """
    raw, shown = fs_path(path, "hurray.save")  # the path policy first: no NUL (ADR-056)
    if not isinstance(tensors, collections.abc.Mapping):
        raise InvalidArgumentError(f"tensors must be a Mapping of names to tensors, not {type(tensors).__name__}")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, collections.abc.Mapping):
        raise InvalidArgumentError(f"metadata must be a Mapping of str to str, not {type(metadata).__name__}")
    # Everything is converted and checked before the first byte is written.
    entries = [(utf8(name, "a tensor name"), as_tensor(value, f"tensor {name!r}")) for name, value in tensors.items()]
    pairs = [(utf8(k, "a metadata key"), utf8(v, f"metadata value of {k!r}")) for k, v in metadata.items()]
    box = ffi.new("HurrayWriter **")
    flags = lib.HURRAY_WRITE_PAGE_ALIGN if page_align else lib.HURRAY_WRITE_DEFAULT
    check(lib.hurray_writer_open(raw, flags, box), shown)
    writer = ffi.gc(box[0], _destroy_writer)
    finished = False
    try:
        for key, value in pairs:
            check(lib.hurray_writer_set_metadata(writer, key, len(key), value, len(value)))
        for name, tensor in entries:
            with borrowed_pair(tensor) as (context, buffer_list):
                check(lib.hurray_writer_add(writer, name, len(name), context, buffer_list), shown)
        check(lib.hurray_writer_finish(writer), shown)
        finished = True
    finally:
        if finished:
            _release(writer)
        else:
            ffi.release(writer)  # now, not at collection: an unfinished writer removes its temporary
