"""load_gguf: a GGUF file as a read-only Mapping of names to zero-copy Tensors.

The reader is our own and trusts nothing: every length and count is checked
against the bytes that remain before anything is read or allocated, so a
header that claims gigabytes is refused at once; the alignment must be a
nonzero power of two (as ggml requires; a zero one divided by zero in
other parsers); every tensor's bytes must lie inside the file, start at a
multiple of the alignment and overlap no other tensor's; names and keys
must be unique. Each failure is a CorruptError (or UnsupportedError for a
version or byte order we do not read) that names the problem.

Layout (little-endian): "GGUF", u32 version (2 or 3), u64 tensor count,
u64 key-value count, the key-values, the tensor infos (name, u32 rank,
u64 dims innermost first, u32 ggml type, u64 offset into the data), padding
to ``general.alignment`` (default 32), then the data.

A tensor whose ggml type Hurray has no descriptor for (Q2_K, IQ4_NL, ...)
is listed like any other; asking for it raises UnsupportedError naming the
type, and the other tensors still load. Its bytes are still checked against
the file when ggml's table gives their size.
"""
import os
import struct

import numpy as np

from . import gguf as _gguf
from ._tensor_map import TensorMap, close_quietly, corrupt, map_file
from .errors import UnsupportedError
from .numpy_bridge import from_numpy

__all__ = ["GGUFFile", "GGML_TYPE_NAMES", "load_gguf"]

_WHAT = "load_gguf"
_MAGIC = b"GGUF"
_VERSIONS = (2, 3)
_DEFAULT_ALIGNMENT = 32
_MAX_DIMS = 4
_MAX_NESTING = 8  # arrays of arrays: deeper than any real file needs

# ggml type number -> (name, elements per block, bytes per block): ggml's own
# table, so that tensors of types Hurray cannot read are still bounds-checked.
_GGML = {
    0: ("F32", 1, 4), 1: ("F16", 1, 2), 2: ("Q4_0", 32, 18), 3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 8: ("Q8_0", 32, 34), 9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84), 11: ("Q3_K", 256, 110), 12: ("Q4_K", 256, 144), 13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210), 15: ("Q8_K", 256, 292), 16: ("IQ2_XXS", 256, 66), 17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98), 19: ("IQ1_S", 256, 50), 20: ("IQ4_NL", 32, 18), 21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82), 23: ("IQ4_XS", 256, 136), 24: ("I8", 1, 1), 25: ("I16", 1, 2),
    26: ("I32", 1, 4), 27: ("I64", 1, 8), 28: ("F64", 1, 8), 29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2), 34: ("TQ1_0", 256, 54), 35: ("TQ2_0", 256, 66), 39: ("MXFP4", 32, 17),
}
GGML_TYPE_NAMES = {number: row[0] for number, row in _GGML.items()}

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


class _Cursor:
    """Reads the header front to back; every read is bounds-checked first."""

    def __init__(self, data, size, path):
        self.data = data
        self.size = size
        self.at = 0
        self.path = path

    def fail(self, message):
        return corrupt(_WHAT, self.path, message)

    def need(self, count, what):
        if count > self.size - self.at:
            raise self.fail(
                f"{what} needs {count} bytes at offset {self.at}, but the file has only "
                f"{self.size - self.at} left (truncated, or a length that claims too much)"
            )

    def scalar(self, code, size, what):
        self.need(size, what)
        value = struct.unpack_from(code, self.data, self.at)[0]
        self.at += size
        return value

    def u32(self, what):
        return self.scalar("<I", 4, what)

    def u64(self, what):
        return self.scalar("<Q", 8, what)

    def string(self, what):
        length = self.u64(f"the length of {what}")
        self.need(length, f"{what} ({length} bytes)")
        raw = bytes(self.data[self.at:self.at + length])
        self.at += length
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"{what} is not valid UTF-8") from None

    def value(self, kind, what, depth=0):
        if kind in _SCALARS:
            code, size = _SCALARS[kind]
            return self.scalar(code, size, what)
        if kind == _STRING:
            return self.string(what)
        if kind == _ARRAY:
            return self.array(what, depth)
        raise self.fail(f"{what} has unknown value type {kind}")

    def array(self, what, depth):
        if depth >= _MAX_NESTING:
            raise self.fail(f"{what} nests arrays more than {_MAX_NESTING} deep")
        kind = self.u32(f"the element type of {what}")
        count = self.u64(f"the length of {what}")
        if kind in _NUMPY_SCALARS or kind == 7:
            size = 1 if kind == 7 else _SCALARS[kind][1]
            self.need(count * size, f"{what} ({count} elements)")
            raw = np.frombuffer(self.data, np.dtype(_NUMPY_SCALARS.get(kind, "u1")), count, self.at)
            self.at += count * size
            return [bool(v) for v in raw] if kind == 7 else raw.tolist()
        if kind not in (_STRING, _ARRAY):
            raise self.fail(f"{what} has unknown element type {kind}")
        # Each string or array element takes at least 8 bytes (its length):
        # a count beyond that is refused before any list grows.
        self.need(count * 8, f"{what} ({count} elements)")
        return [self.value(kind, f"{what}[{i}]", depth + 1) for i in range(count)]


def _parse(data, size, path):
    cur = _Cursor(data, size, path)
    cur.need(4, "the magic")
    if bytes(data[0:4]) != _MAGIC:
        raise cur.fail(f"not a GGUF file: the magic is {bytes(data[0:4])!r}, not {_MAGIC!r}")
    cur.at = 4
    version = cur.u32("the version")
    if version not in _VERSIONS:
        swapped = struct.unpack("<I", struct.pack(">I", version))[0]
        if swapped in _VERSIONS:
            raise UnsupportedError(f"{_WHAT}: {path!r} is a big-endian GGUF file (version {swapped}); "
                                   "only little-endian files are read")
        raise UnsupportedError(f"{_WHAT}: {path!r}: GGUF version {version} is not read (only 2 and 3)")
    n_tensors = cur.u64("the tensor count")
    n_kv = cur.u64("the key-value count")
    # Each key-value takes at least 8 + 4 bytes, each tensor info 8 + 4 + 4 + 8.
    cur.need(n_kv * 12, f"{n_kv} key-values")
    metadata = {}
    types = {}
    for i in range(n_kv):
        key = cur.string(f"key {i}")
        kind = cur.u32(f"the type of key {key!r}")
        if kind == _ARRAY:
            cur.need(4, f"the element type of key {key!r}")
            types[key] = (_ARRAY, struct.unpack_from("<I", data, cur.at)[0])
        else:
            types[key] = kind
        value = cur.value(kind, f"the value of key {key!r}")
        if key in metadata:
            raise cur.fail(f"duplicate key {key!r}")
        metadata[key] = value
        if key == "general.alignment" and kind != 4:
            raise cur.fail(f"general.alignment must be a uint32, not value type {kind}")
    alignment = metadata.get("general.alignment", _DEFAULT_ALIGNMENT)
    if alignment == 0 or alignment & (alignment - 1):
        raise cur.fail(f"general.alignment {alignment} is not a nonzero power of two")
    cur.need(n_tensors * 24, f"{n_tensors} tensor infos")
    infos = {}
    for i in range(n_tensors):
        name = cur.string(f"the name of tensor {i}")
        rank = cur.u32(f"the rank of tensor {name!r}")
        if rank > _MAX_DIMS:
            raise cur.fail(f"tensor {name!r} has {rank} dimensions; GGUF allows at most {_MAX_DIMS}")
        dims = [cur.u64(f"dimension {d} of tensor {name!r}") for d in range(rank)]
        ggml_type = cur.u32(f"the type of tensor {name!r}")
        offset = cur.u64(f"the offset of tensor {name!r}")
        if name in infos:
            raise cur.fail(f"duplicate tensor name {name!r}")
        infos[name] = (tuple(reversed(dims)), ggml_type, offset)
    data_start = -(-cur.at // alignment) * alignment
    return metadata, types, _placed(cur, infos, alignment, data_start)


def _placed(cur, infos, alignment, data_start):
    """name -> (shape, ggml type, absolute start, nbytes or None), every span checked."""
    entries = {}
    spans = []
    for name, (shape, ggml_type, offset) in infos.items():
        if offset % alignment:
            raise cur.fail(f"tensor {name!r}: offset {offset} is not a multiple of the alignment {alignment}")
        row = _GGML.get(ggml_type)
        nbytes = None
        if row is not None:
            type_name, elements, block_bytes = row
            inner = shape[-1] if shape else 1
            if inner % elements:
                raise cur.fail(f"tensor {name!r}: its innermost dimension {inner} is not whole "
                               f"{type_name} blocks of {elements}")
            count = 1
            for dim in shape:
                count *= dim
            nbytes = count // elements * block_bytes
        start = data_start + offset
        end = start + (nbytes or 0)
        if end > cur.size:
            raise cur.fail(f"tensor {name!r}: bytes {start}..{end} lie outside the file of {cur.size} bytes "
                           "(truncated, or an offset or shape that claims too much)")
        if nbytes:
            spans.append((start, end, name))
        entries[name] = (shape, ggml_type, start, nbytes)
    spans.sort()
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise cur.fail(f"tensors {first!r} and {second!r} overlap")
    return entries


_EMPTY = np.zeros(0, np.uint8)
_EMPTY.flags.writeable = False


class GGUFFile(TensorMap):
    """A GGUF file: a read-only Mapping of names to Tensors, and `.metadata`.

    `metadata` holds the key-value store as Python values (int, float,
    bool, str, and lists of them). `ggml_type(name)` names a tensor's ggml
    type without making the tensor.
    """

    _kind = "GGUF file"

    _types = {}

    @property
    def metadata_types(self):
        """Each key's GGUF value type number; (9, element type) for an array."""
        return dict(self._types)

    def ggml_type(self, name):
        """The ggml type name of tensor `name` ("Q4_K", ...; "type N" when ggml has no name for it)."""
        _, number, _, _ = self._entries[name]
        return GGML_TYPE_NAMES.get(number, f"type {number}")

    def _make(self, name, entry):
        shape, number, start, nbytes = entry
        type_name = GGML_TYPE_NAMES.get(number)
        if type_name is None:
            raise UnsupportedError(f"tensor {name!r} has ggml type {number}, which is unknown")
        block = _gguf.GGML_TYPES.get(type_name.lower())
        if type_name not in _PLAIN and block is None:
            raise UnsupportedError(f"tensor {name!r} has ggml type {type_name}, which Hurray has no descriptor for")
        raw = self._bytes(start, nbytes)
        if block is not None:
            return _gguf.from_gguf(raw, type_name, shape)
        return from_numpy(raw.view(np.dtype(_PLAIN[type_name])).reshape(shape))

    def _bytes(self, start, nbytes):
        if nbytes == 0 or self._map is None:
            return _EMPTY
        return np.frombuffer(self._map, np.uint8, nbytes, start)


def load_gguf(path):
    """Open the GGUF file at `path`: a read-only Mapping of tensor names to Tensors.

    Tensors are zero-copy, read-only views of a memory map that stays
    alive as long as any of them does; shapes are in numpy order
    (outermost first). Use it as a context manager, or call close().
    """
    mapped, size = map_file(path, _WHAT)
    data = mapped if mapped is not None else b""
    try:
        metadata, types, entries = _parse(data, size, os.fspath(path))
    except BaseException:
        close_quietly(mapped)
        raise
    f = GGUFFile(path, mapped, entries, metadata)
    f._types = types
    return f
