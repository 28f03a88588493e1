"""load_gguf: a GGUF file as a read-only Mapping of names to zero-copy Tensors.

The header is walked and checked in C (native/src/gguf_index.c, declared in
hurray_gguf.h): every length and count against the bytes that remain, an
alignment that is a nonzero power of two, tensors inside the file, aligned
and not overlapping, keys and names valid UTF-8 and unique. Each failure is
a CorruptError (or UnsupportedError for a version or byte order we do not
read) that names the problem. Opening a file therefore costs the header's
walk in C, and finding a tensor a binary search, whatever the file's size.

The key-value store is turned into Python values when `metadata` is first
read, from the spans C found (strings are checked to be UTF-8 then).

A tensor whose ggml type Hurray has no descriptor for (Q8_K, Q8_1: ggml's
dot-product intermediates) is listed like any other; asking for it raises UnsupportedError naming the
type, and the other tensors still load. Its bytes are still checked against
the file when ggml's table gives their size.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

import numpy as np

from ..quant import ggml as _ggml
from .._ffi import ffi, lib
from ..io._tensor_map import TensorMap, check_held, close_quietly, corrupt, map_file
from ..errors import UnsupportedError, check, error_class
from ..bridges.numpy import from_numpy
from ..core.tensor import Tensor

__all__ = ["GGUFFile", "load_gguf"]

_WHAT = "load_gguf"
_MAX_NESTING = 8  # arrays of arrays: deeper than any real file needs (the C walk says the same)

# Element types that are plain arrays: ggml name -> numpy dtype (little-endian).
_PLAIN = {
    "F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "bfloat16",
    "I8": "i1", "I16": "<i2", "I32": "<i4", "I64": "<i8",
}

# GGUF value types: number -> (struct code, size); 8 is a string, 9 an array.
_SCALARS = {
    0: ("<B", 1), 1: ("<b", 1), 2: ("<H", 2), 3: ("<h", 2), 4: ("<I", 4), 5: ("<i", 4),
    6: ("<f", 4), 7: ("<?", 1), 10: ("<Q", 8), 11: ("<q", 8), 12: ("<d", 8),
}
_NUMPY_SCALARS = {0: "u1", 1: "i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4",
                  10: "<u8", 11: "<i8", 12: "<f8"}
_STRING, _ARRAY = 8, 9
_LENGTH = struct.Struct("<Q")


class _Cursor:
    """Reads the header front to back; every read is bounds-checked first."""

    def __init__(self, data: Any, size: int, path: str) -> None:
        self.data = data
        self.size = size
        self.at = 0
        self.path = path

    def fail(self, message: str) -> Exception:
        return corrupt(_WHAT, self.path, message)

    def need(self, count: int, what: str) -> None:
        if count > self.size - self.at:
            raise self.fail(
                f"{what} needs {count} bytes at offset {self.at}, but the file has only "
                f"{self.size - self.at} left (truncated, or a length that claims too much)"
            )

    def scalar(self, code: str, size: int, what: str) -> Any:
        self.need(size, what)
        value = struct.unpack_from(code, self.data, self.at)[0]
        self.at += size
        return value

    def u32(self, what: str) -> int:
        return self.scalar("<I", 4, what)

    def u64(self, what: str) -> int:
        return self.scalar("<Q", 8, what)

    def string(self, what: str) -> str:
        length = self.u64(f"the length of {what}")
        self.need(length, f"{what} ({length} bytes)")
        raw = bytes(self.data[self.at:self.at + length])
        self.at += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8") from None

    def value(self, kind: int, what: str, depth: int = 0) -> Any:
        if kind in _SCALARS:
            code, size = _SCALARS[kind]
            return self.scalar(code, size, what)
        if kind == _STRING:
            return self.string(what)
        if kind == _ARRAY:
            return self.array(what, depth)
        raise self.fail(f"{what} has unknown value type {kind}")

    def array(self, what: str, depth: int) -> list[Any]:
        if depth >= _MAX_NESTING:
            raise self.fail(f"{what} nests arrays more than {_MAX_NESTING} deep")
        kind = self.u32(f"the element type of {what}")
        count = self.u64(f"the length of {what}")
        if kind in _NUMPY_SCALARS or kind == 7:
            size = 1 if kind == 7 else _SCALARS[kind][1]
            self.need(count * size, f"{what} ({count} elements)")
            raw = np.frombuffer(self.data, np.dtype(_NUMPY_SCALARS.get(kind, "u1")), count, self.at)
            self.at += count * size
            return (raw != 0).tolist() if kind == 7 else raw.tolist()
        if kind not in (_STRING, _ARRAY):
            raise self.fail(f"{what} has unknown element type {kind}")
        # Each string or array element takes at least 8 bytes (its length):
        # a count beyond that is refused before any list grows. (The C walk
        # has bounded the counts already: ADR-041, docs/security.md.)
        self.need(count * 8, f"{what} ({count} elements)")
        if kind == _STRING:
            return self.strings(count, what)
        return [self.array(f"{what}[{i}]", depth + 1) for i in range(count)]

    def strings(self, count: int, what: str) -> list[str]:
        """`count` strings, in one loop: a vocabulary holds hundreds of thousands."""
        data, at, end = self.data, self.at, self.size
        out: list[str] = []
        append = out.append
        length_at = _LENGTH.unpack_from
        for i in range(count):
            if end - at < 8:
                self.at = at
                self.need(8, f"the length of {what}[{i}]")
            n = length_at(data, at)[0]
            at += 8
            if n > end - at:
                self.at = at
                self.need(n, f"{what}[{i}] ({n} bytes)")
            try:
                append(str(data[at:at + n], "utf-8"))
            except UnicodeDecodeError:
                raise self.fail(f"{what}[{i}] is not valid UTF-8") from None
            at += n
        self.at = at
        return out


class GGUFFile(TensorMap):
    """A GGUF file: a read-only Mapping of names to Tensors, and `.metadata`.

    `metadata` holds the key-value store as Python values (int, float,
    bool, str, and lists of them); `metadata_types` each key's GGUF value
    type. `ggml_type(name)` names a tensor's ggml type without making it.
    """

    _kind = "GGUF file"

    def __init__(self, path: str, index: _Index, size: int) -> None:
        super().__init__(path, index.mapped, {}, None)  # the Mapping is answered by the C index
        self._index: _Index | None = index
        self._size = size
        counts = ffi.new("uint64_t[2]")
        check(lib.hurray_gguf_index_info(index.ptr, ffi.NULL, ffi.NULL, ffi.NULL, counts, counts + 1))
        self._count, self._kv_count = counts[0], counts[1]
        self._names: list[str] | None = None
        self._types: dict[str, int | tuple[int, int]] | None = None

    def _live(self) -> _Index:
        """The index, held by the caller for as long as it reads the map: close()
        only lets go of the file's own reference, so a thread inside a lookup
        keeps the index and the map it reads alive (issue 27: close() used to
        free both under such threads). Refused once closed, or once the file
        has shrunk under the map (its pages would be a SIGBUS, ADR-057)."""
        index = self._index
        if index is None:
            self._check_open()
            raise AssertionError("an open GGUFFile has an index")
        check_held(index.mapped, self._size, _WHAT, self._path)
        return index

    # ---- the Mapping, answered by the C index ------------------------------

    def _find(self, index: _Index, name: object) -> Any:
        if not isinstance(name, str):
            return None
        raw = name.encode("utf-8", "surrogatepass")
        found = ffi.new("uint64_t *")
        status = lib.hurray_gguf_index_find(index.ptr, raw, len(raw), found)
        if status == lib.HURRAY_ERROR_NOT_FOUND:
            return None
        check(status)
        info = ffi.new("HurrayGgufTensor *")  # per call: a file may be shared by threads
        check(lib.hurray_gguf_index_tensor(index.ptr, found[0], info))
        return info

    def __getitem__(self, name: str) -> Tensor:
        index = self._live()
        info = self._find(index, name)
        if info is None:
            raise KeyError(name)
        return self._tensor(index, name, info)

    def __contains__(self, name: object) -> bool:
        return self._find(self._live(), name) is not None

    def __len__(self) -> int:
        return int(self._count)

    def __iter__(self) -> Iterator[str]:
        names = self._names
        if names is None:
            index = self._live()
            info = ffi.new("HurrayGgufTensor *")
            names = []
            for i in range(self._count):
                check(lib.hurray_gguf_index_tensor(index.ptr, i, info))
                names.append(index.mapped[info.name_offset:info.name_offset + info.name_len].decode("utf-8"))
            self._names = names
        return iter(names)

    # ---- metadata, made on first use ---------------------------------------

    @property
    def metadata(self) -> dict[str, Any]:
        self._read_metadata()
        return dict(self._metadata or {})

    @property
    def metadata_types(self) -> dict[str, int | tuple[int, int]]:
        """Each key's GGUF value type number; (9, element type) for an array."""
        self._read_metadata()
        return dict(self._types or {})

    def _read_metadata(self) -> None:
        if self._metadata is not None:
            return
        index = self._live()
        mapped = index.mapped
        cur = _Cursor(mapped, len(mapped), self._path)
        offset, length = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        metadata: dict[str, Any] = {}
        types: dict[str, int | tuple[int, int]] = {}
        for i in range(self._kv_count):
            check(lib.hurray_gguf_index_kv(index.ptr, i, offset, length))
            cur.at = offset[0]
            key = cur.string(f"key {i}")
            kind = cur.u32(f"the type of key {key!r}")
            types[key] = (_ARRAY, struct.unpack_from("<I", mapped, cur.at)[0]) if kind == _ARRAY else kind
            metadata[key] = cur.value(kind, f"the value of key {key!r}")
        self._metadata, self._types = metadata, types

    # ---- tensors -------------------------------------------------------------

    def ggml_type(self, name: str) -> str:
        """The ggml type name of tensor `name` ("Q4_K", ...; "type N" when ggml has no name for it)."""
        info = self._find(self._live(), name)
        if info is None:
            raise KeyError(name)
        return _type_name(info.ggml_type) or f"type {info.ggml_type}"

    def _tensor(self, index: _Index, name: str, info: Any) -> Tensor:
        number = info.ggml_type
        type_name = _type_name(number)
        if type_name is None:
            raise UnsupportedError(f"tensor {name!r} has ggml type {number}, which is unknown")
        block = _ggml.GGML_BLOCKS.get(type_name.lower())
        if type_name not in _PLAIN and block is None:
            raise UnsupportedError(f"tensor {name!r} has ggml type {type_name}, which Hurray has no descriptor for")
        shape = tuple(info.shape[0:info.rank])
        raw = _EMPTY if info.nbytes == 0 else np.frombuffer(index.mapped, np.uint8, info.nbytes, info.data_offset)
        if block is not None:
            return _ggml.from_ggml(raw, type_name, shape)
        return from_numpy(raw.view(np.dtype(_PLAIN[type_name])).reshape(shape))

    def _release(self) -> None:
        # Only the file's own reference goes: the index (and the map it
        # reads) is destroyed when the last thread still inside a lookup has
        # let go of it, and the map when the last tensor has.
        self._index = None
        super()._release()


class _Index:
    """The C index of a file, with the map it reads: the view keeps the map
    open (mmap.close() refuses while a view exists) for as long as the index
    can be used; the index is destroyed when this goes."""

    __slots__ = ("ptr", "view", "mapped")

    def __init__(self, ptr: Any, view: Any, mapped: Any) -> None:
        self.ptr = ffi.gc(ptr, _destroy_index)
        self.view = view
        self.mapped = mapped


def _destroy_index(index: Any) -> None:
    lib.hurray_gguf_index_destroy(ffi.new("HurrayGgufIndex **", index))


def _type_name(number: int) -> str | None:
    name = lib.hurray_gguf_type_name(number)
    return None if name == ffi.NULL else str(ffi.string(name).decode())


_EMPTY = np.zeros(0, np.uint8)
_EMPTY.flags.writeable = False


def load_gguf(path: str | os.PathLike[str]) -> GGUFFile:
    """Open the GGUF file at `path`: a read-only Mapping of tensor names to Tensors.

    Tensors are zero-copy, read-only views of a memory map that stays
    alive as long as any of them does; shapes are in numpy order
    (outermost first). Use it as a context manager, or call close().
    """
    mapped, size = map_file(path, _WHAT)
    where = os.fsdecode(path)
    view = ffi.from_buffer("uint8_t[]", mapped if mapped is not None else b"")
    box = ffi.new("HurrayGgufIndex **")
    status = lib.hurray_gguf_index_parse(view, size, box)
    if status != lib.HURRAY_OK:
        message = ffi.string(lib.hurray_last_error_message()).decode("utf-8", "replace")
        ffi.release(view)
        close_quietly(mapped)
        raise error_class(status)(f"{_WHAT}: {where!r}: {message}", status)
    return GGUFFile(where, _Index(box[0], view, mapped if mapped is not None else b""), size)
