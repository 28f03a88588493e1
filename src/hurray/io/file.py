"""hurray.load and hurray.File: a hurray-io file as a read-only Mapping of Tensors."""
from __future__ import annotations

import os
from collections.abc import Iterator, KeysView
from typing import Any

from .._ffi import ffi, lib
from ._tensor_map import FileMapping
from ..errors import check
from ..core.tensor import Tensor
from ._pairs import tensor_from_pair
from ._path import fs_path
from .lazy import LazyTensor


def _destroy_reader(ptr: Any) -> None:
    lib.hurray_reader_destroy(ffi.new("HurrayReader **", ptr))


class _Reader:
    """The C reader, destroyed exactly once, when the File and every tensor
    still waiting for verification have let go of it."""

    __slots__ = ("ptr", "__weakref__")

    def __init__(self, path: bytes, shown: str, flags: int) -> None:
        box = ffi.new("HurrayReader **")
        check(lib.hurray_reader_open(path, flags, box), shown)
        self.ptr = ffi.gc(box[0], _destroy_reader)

    def verify(self, index: int) -> None:
        check(lib.hurray_reader_verify(self.ptr, index))


class _Verifier:
    """Verifies one tensor of a reader; held by the tensor until it has."""

    __slots__ = ("reader", "index")

    def __init__(self, reader: _Reader, index: int) -> None:
        self.reader = reader
        self.index = index

    def __call__(self) -> None:
        self.reader.verify(self.index)


class File(FileMapping):
    """A hurray-io file: a read-only Mapping of names to :class:`hurray.Tensor`.

    Made by :func:`load`. ``metadata`` is the file's string -> string map.
    ``close()`` (or leaving a ``with`` block) releases the File; tensors
    already taken stay valid, and keep what backs them alive.
    """

    _kind = "hurray.File"

    def __init__(self, path: str | bytes | os.PathLike[str] | os.PathLike[bytes], *, mmap: bool = True,
                 verify: bool = True) -> None:
        raw, self._path = fs_path(path, "hurray.load")
        self._mmap = bool(mmap)
        self._verify = bool(verify)
        flags = 0 if self._mmap else lib.HURRAY_READ_NO_MMAP
        if self._mmap or not self._verify:
            # Mapped tensors are verified on first use (lazy.py), not here.
            flags |= lib.HURRAY_READ_NO_VERIFY
        self._reader: _Reader | None = _Reader(raw, self._path, flags)
        count = ffi.new("uint64_t *")
        check(lib.hurray_reader_count(self._reader.ptr, count))
        self._count = count[0]
        # Names and metadata are decoded on first need: taking one tensor
        # by name is a lookup in C, whatever the number of tensors.
        self._names: dict[str, int] | None = None
        self._metadata: dict[str, str] | None = None

    def _all_names(self) -> dict[str, int]:
        names = self._names
        if names is None:
            ptr = self._live_reader().ptr
            name = ffi.new("const char **")
            length = ffi.new("uint64_t *")

            def name_at(i: int) -> str:
                check(lib.hurray_reader_name(ptr, i, name, length))
                return ffi.buffer(name[0], length[0])[:].decode("utf-8")  # UTF-8 checked in C

            names = self._names = {name_at(i): i for i in range(self._count)}
        return names

    def _index_of(self, name: object) -> int:
        """The index of tensor `name`; KeyError when there is none."""
        if self._names is not None:
            return self._names[name]  # type: ignore[index]  # KeyError for a non-str, as for any Mapping
        if not isinstance(name, str):
            raise KeyError(name)
        try:
            encoded = name.encode("utf-8")
        except UnicodeEncodeError:
            raise KeyError(name) from None
        found = ffi.new("uint64_t *")  # per call: a File may be shared by threads
        status = lib.hurray_reader_find(self._live_reader().ptr, encoded, len(encoded), found)
        if status == lib.HURRAY_ERROR_NOT_FOUND:
            raise KeyError(name)
        check(status)
        return found[0]

    @property
    def metadata(self) -> dict[str, str]:
        """The file's metadata, as a new dict[str, str]."""
        if self._metadata is None:
            ptr = self._live_reader().ptr
            count = ffi.new("uint64_t *")
            check(lib.hurray_reader_metadata_count(ptr, count))
            key, value = ffi.new("const char **"), ffi.new("const char **")
            key_len, value_len = ffi.new("uint64_t *"), ffi.new("uint64_t *")
            pairs = {}
            for i in range(count[0]):
                check(lib.hurray_reader_metadata_get(ptr, i, key, key_len, value, value_len))
                pairs[ffi.buffer(key[0], key_len[0])[:].decode("utf-8")] = (
                    ffi.buffer(value[0], value_len[0])[:].decode("utf-8"))
            self._metadata = pairs
        return dict(self._metadata)

    def _live_reader(self) -> _Reader:
        self._check_open()
        assert self._reader is not None  # cleared only by close()
        return self._reader

    def __getitem__(self, name: str) -> Tensor:
        reader = self._live_reader()
        index = self._index_of(name)  # KeyError, as for any Mapping
        context = ffi.new("HurrayTensorContext **")
        buffers = ffi.new("HurrayBufferList **")
        check(lib.hurray_reader_tensor(reader.ptr, index, context, buffers))
        if self._mmap and self._verify:
            return tensor_from_pair(context[0], buffers[0], LazyTensor, _Verifier(reader, index))
        return tensor_from_pair(context[0], buffers[0])

    def verify(self, name: str) -> None:
        """Check tensor `name`'s checksum now; raises ChecksumError on a mismatch."""
        self._live_reader().verify(self._index_of(name))

    def __iter__(self) -> Iterator[str]:
        return iter(self._all_names())

    def __len__(self) -> int:
        return int(self._count)

    def __contains__(self, name: object) -> bool:
        try:
            self._index_of(name)
        except KeyError:
            return False
        return True

    def keys(self) -> KeysView[str]:
        return self._all_names().keys()

    def _release(self) -> None:
        self._reader = None  # destroyed once the tensors still waiting for verification let go


def load(path: str | bytes | os.PathLike[str] | os.PathLike[bytes], *, mmap: bool = True,
         verify: bool = True) -> File:
    """Open the hurray-io file at `path` as a :class:`File`.

    Opening reads only the trailer and the index, whatever the file's size.
    With ``mmap=True`` tensors are zero-copy, copy-on-write views of a
    private mapping that lives as long as any tensor using it; writing into
    one never reaches the file. ``mmap=False`` reads each tensor with pread
    into owned aligned memory (for network file systems). Unless
    ``verify=False``, a tensor's checksum is verified the first time its
    memory is used (mapped), or as it is read (``mmap=False``); a mismatch
    raises :class:`hurray.errors.ChecksumError`.
    """
    return File(path, mmap=mmap, verify=verify)
