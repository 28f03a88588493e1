"""safetensors files: load_safetensors reads them zero-copy, save_safetensors writes them.

Reading validates as safetensors itself does (a header of at most 100 MB,
JSON that parses, offsets that tile the data exactly, sizes that match
dtype x shape, no duplicate names) and names each failure in a
CorruptError. A dtype this build does not know is refused when that tensor
is asked for; the others still load.

Writing follows ADR-064 (amending ADR-041): by default the file is byte for
byte the one ``safetensors.numpy.save_file`` writes for the same dict
(safetensors_layout.py). A plain tensor of a safetensors dtype is an
ordinary entry whatever its layout: its values in C order, little-endian,
empty arrays with their dtype and shape. Only what safetensors cannot state
(quantized tensors, packed sub-byte types it lacks, GGML blocks) is written
as one entry per buffer, the first under the tensor's own name, the rest as
``NAME.scale``, ``NAME.zero_point``, ``NAME.global_scale`` when that buffer
holds just that part, else ``NAME.buffer<i>``, with its descriptor in
``__metadata__["hurray"]``; load_safetensors puts the buffers back under the
descriptor, so the tensor comes back exactly. A ``hurray`` key that is not
such a record is the user's metadata.
"""
from __future__ import annotations

import json
import math
import mmap
import os
import struct
from collections.abc import Callable, Mapping
from typing import Any, Optional

import ml_dtypes
import numpy as np

from ..quant import ggml as _ggml
from . import safetensors_layout as _layout
from ._atomic import AtomicFile, replace_atomically
from ..io._pairs import as_tensor, utf8
from ..io._tensor_map import TensorMap, check_held, close_quietly, corrupt, map_file
from ..quant.dequantizers import parameter_shape, swizzled_count
from ..core.descriptor import Descriptor, Part
from ..errors import CorruptError, HurrayError, InvalidArgumentError, UnsupportedError
from ..bridges.numpy import from_numpy
from ..core.tensor import Tensor
from .._core import safetensors_entries, safetensors_header

__all__ = ["SafetensorsFile", "SAFETENSORS_DTYPES", "load_safetensors", "load_safetensors_bytes", "save_safetensors",
           "save_safetensors_bytes"]

_WHAT = "load_safetensors"
MAX_HEADER = 100_000_000  # safetensors' own limit
MAX_ELEMENTS = 1 << 60  # a shape's dimensions other than zeros multiply to at most this (the GGUF reader's too)
METADATA_KEY = "hurray"
FORMAT = 1

# safetensors dtype -> (Hurray dtype, bits per element). F4 is packed two per
# byte, element 0 in the low nibble; F6 is a bit stream, element 0 in the low bits.
SAFETENSORS_DTYPES = {
    "BOOL": ("bool", 8), "U8": ("uint8", 8), "I8": ("int8", 8),
    "U16": ("uint16", 16), "I16": ("int16", 16), "U32": ("uint32", 32), "I32": ("int32", 32),
    "U64": ("uint64", 64), "I64": ("int64", 64),
    "F16": ("float16", 16), "BF16": ("bfloat16", 16), "F32": ("float32", 32), "F64": ("float64", 64),
    "C64": ("complex64", 64),
    "F8_E5M2": ("float8_e5m2", 8), "F8_E4M3": ("float8_e4m3fn", 8), "F8_E8M0": ("float8_e8m0fnu", 8),
    "F8_E4M3FNUZ": ("float8_e4m3fnuz", 8), "F8_E5M2FNUZ": ("float8_e5m2fnuz", 8),
    "F6_E2M3": ("float6_e2m3fn", 6), "F6_E3M2": ("float6_e3m2fn", 6), "F4": ("float4_e2m1fn", 4),
}
_BY_HURRAY = {hurray: st for st, (hurray, _) in SAFETENSORS_DTYPES.items()}
_BITS = {st: bits for st, (_, bits) in SAFETENSORS_DTYPES.items()}  # for the fast path's C half

# name -> (safetensors dtype, shape, absolute start, nbytes)
_Entries = dict[str, tuple[str, tuple[int, ...], int, int]]
# name -> (descriptor bytes, the entry names of its buffers)
_Composites = dict[str, tuple[bytes, tuple[str, ...]]]
# (entry name, safetensors dtype, shape, uint8 bytes) of one entry to write
_Planned = tuple[str, str, tuple[int, ...], np.ndarray]


# ---- reading -------------------------------------------------------------

def _fail(path: str, message: str) -> CorruptError:
    return corrupt(_WHAT, path, message)


def _no_duplicates(path: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise _fail(path, f"duplicate name {key!r} in the header")
            out[key] = value
        return out
    return pairs


def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _header(data: Any, size: int, path: str) -> tuple[int, dict[str, Any]]:
    if size < 8:
        raise _fail(path, f"the file has {size} bytes, fewer than the 8 of the header length")
    n = struct.unpack_from("<Q", data, 0)[0]
    if n > MAX_HEADER:
        raise _fail(path, f"the header claims {n} bytes; at most {MAX_HEADER} are allowed")
    if 8 + n > size:
        raise _fail(path, f"the header claims {n} bytes, past the end of the {size}-byte file (truncated)")
    try:
        text = bytes(data[8:8 + n]).decode("utf-8")
        header = json.loads(text, object_pairs_hook=_no_duplicates(path))
    except UnicodeDecodeError:
        raise _fail(path, "the header is not valid UTF-8") from None
    except (ValueError, RecursionError) as exc:
        if isinstance(exc, HurrayError):
            raise
        raise _fail(path, f"the header is not valid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise _fail(path, "the header is not a JSON object")
    return 8 + n, header


def _user_metadata(header: dict[str, Any], path: str) -> dict[str, str]:
    meta = header.pop("__metadata__", None)
    if meta is None:
        return {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise _fail(path, "__metadata__ must map strings to strings")
    return meta


def _entries(header: dict[str, Any], data_start: int, size: int, path: str) -> _Entries:
    """name -> (dtype, shape, absolute start, nbytes), checked to tile the data exactly."""
    entries: _Entries = {}
    for name, info in header.items():
        if not isinstance(info, dict):
            raise _fail(path, f"tensor {name!r}: its entry is not a JSON object")
        dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if not isinstance(dtype, str):
            raise _fail(path, f"tensor {name!r}: dtype is missing or not a string")
        if not isinstance(shape, list) or not all(_is_count(d) for d in shape):
            raise _fail(path, f"tensor {name!r}: shape must be a list of non-negative integers")
        if math.prod(d for d in shape if d) > MAX_ELEMENTS:
            # [0, 2**70] holds nothing, but numpy cannot make it (issue 27).
            raise _fail(path, f"tensor {name!r}: shape {shape}: its dimensions multiply past 2^60 elements "
                              f"(no file holds that many; numpy could not index them)")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(o) for o in offsets)
                and offsets[0] <= offsets[1]):
            raise _fail(path, f"tensor {name!r}: data_offsets must be [begin, end] with 0 <= begin <= end")
        begin, end = offsets
        known = SAFETENSORS_DTYPES.get(dtype)
        if known is not None:
            bits = math.prod(shape) * known[1]
            if bits % 8 or bits // 8 != end - begin:
                raise _fail(path, f"tensor {name!r}: shape {shape} of {dtype} needs {bits / 8:g} bytes, "
                                  f"but data_offsets give {end - begin}")
        entries[name] = (dtype, tuple(shape), data_start + begin, end - begin)
    data_size = size - data_start
    at = 0
    for name, (_, _, start, nbytes) in sorted(entries.items(), key=lambda e: (e[1][2], e[1][2] + e[1][3])):
        begin = start - data_start
        if begin != at:
            problem = "overlaps the tensor before it" if begin < at else f"leaves a gap at data byte {at}"
            raise _fail(path, f"tensor {name!r}: data_offsets begin at {begin}, which {problem}")
        at = begin + nbytes
    if at != data_size:
        problem = "past the end of the file (truncated)" if at > data_size else \
            f"short of the data's {data_size} bytes (trailing bytes)"
        raise _fail(path, f"the tensors' data ends at {at}, {problem}")
    return entries


# ---- the fast path: a well-formed header in one pass ------------------------
#
# Most files are well formed, and the checks above cost more than parsing
# the JSON. _well_formed reads such a header in one pass -- its text in C
# (hurray._core.safetensors_header) when no string holds an escape, else
# json.loads and its entries in C -- and answers None at the first thing it
# does not expect; _open then reads the header
# again through the checks above, which raise the exact error (or accept what
# the fast path merely did not expect). So the fast path refuses nothing and
# accepts only what those checks accept.

def _well_formed(data: Any, size: int) -> Optional[tuple[dict[str, str], _Entries]]:
    """(metadata, entries) of a well-formed header with no name listed twice, else None."""
    if size < 8:
        return None
    n = struct.unpack_from("<Q", data, 0)[0]
    if n > MAX_HEADER or 8 + n > size:
        return None
    raw = bytes(data[8:8 + n])
    plain = safetensors_header(raw, 8 + n, _BITS)  # the form writers write, read in C
    if plain is not None:
        meta, entries, end = plain
        return (meta, entries) if _covers(entries, end, 8 + n, size) else None
    try:  # a string with an escape (Hurray's record has them): json.loads, then the entries in C
        header = json.loads(raw.decode("utf-8"))  # no hook: _most_keys rules duplicates out
    except (ValueError, RecursionError):
        return None
    if type(header) is not dict:
        return None
    found = _fast_entries(header, 8 + n, size)
    if found is None:
        return None
    meta, entries, keys = found
    return (meta, entries) if _most_keys(raw, meta) == keys else None


def _most_keys(raw: bytes, meta: dict[str, str]) -> int:
    """The most keys the JSON text `raw` can hold.

    Each key is followed by a colon outside every string, so the colons bound
    them: when the parsed dicts hold that many keys, none was listed twice.
    The metadata's strings (Hurray's record is JSON in one) hold colons that
    are no keys: theirs are left out when no escape can have spelt one."""
    colons = raw.count(b":")
    in_strings = sum(key.count(":") + value.count(":") for key, value in meta.items())
    if in_strings and b"\\u" not in raw:  # with no \u escape, a string's colons are its text's
        colons -= in_strings
    return colons


def _fast_entries(header: dict[str, Any], data_start: int, size: int
                  ) -> Optional[tuple[dict[str, str], _Entries, int]]:
    """(metadata, entries, how many keys the parsed header holds) when every
    entry is well formed and the data tiles exactly, else None.

    The entries are read in C (hurray._core.safetensors_entries), which
    answers None at anything but a well-formed entry."""
    keys = len(header)
    meta = header.pop("__metadata__", {})  # the header is this path's own, thrown away if it fails
    if type(meta) is not dict or not all(type(v) is str for v in meta.values()):
        return None
    found = safetensors_entries(header, data_start, _BITS)
    if found is None:
        return None
    entries, end = found
    if not _covers(entries, end, data_start, size):
        return None
    return meta, entries, keys + len(meta) + 3 * len(entries)


def _covers(entries: _Entries, end: int, data_start: int, size: int) -> bool:
    """True when the entries' bytes tile the data exactly (`end`: where they end when listed in order, else -1)."""
    data_size = size - data_start
    return end == data_size if end >= 0 else _tiles(entries, data_start, data_size)


def _tiles(entries: _Entries, data_start: int, data_size: int) -> bool:
    """True when the entries' bytes, in the order of their offsets, tile the data exactly."""
    at = 0
    for begin, end in sorted((start - data_start, start - data_start + nbytes)
                             for _, _, start, nbytes in entries.values()):
        if begin != at:
            return False
        at = end
    return at == data_size


def _ours(raw: str, path: str) -> Optional[dict[str, Any]]:
    """The record of ADR-041 in ``__metadata__["hurray"]``, or None when the value is someone else's.

    Ours is a JSON object with an integer ``format`` and a ``tensors`` object
    (ADR-064 § 3); any other value is ordinary metadata. A record of a format
    this build does not read is refused rather than shown as loose parts."""
    twice: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                twice.append(key)
            out[key] = value
        return out

    try:
        record = json.loads(raw, object_pairs_hook=pairs)
    except (ValueError, RecursionError):  # 100,000 nested brackets are a RecursionError
        return None
    if not (isinstance(record, dict) and type(record.get("format")) is int
            and isinstance(record.get("tensors"), dict)):
        return None
    if twice:
        raise _fail(path, f"__metadata__[{METADATA_KEY!r}]: duplicate name {twice[0]!r} in Hurray's record")
    if record["format"] != FORMAT:
        raise UnsupportedError(f"{_WHAT}: {path!r}: __metadata__[{METADATA_KEY!r}] is a Hurray record of format "
                               f"{record['format']}; this build reads format {FORMAT}")
    return record


def _composites(meta: dict[str, str], entries: _Entries, path: str) -> _Composites:
    """Tensors written as parts (ADR-041): name -> (descriptor bytes, entry names)."""
    raw = meta.get(METADATA_KEY)
    record = None if raw is None else _ours(raw, path)
    if record is None:
        return {}
    del meta[METADATA_KEY]
    out: _Composites = {}
    claimed: set[str] = set()
    for name, spec in record["tensors"].items():
        ok = isinstance(spec, dict) and isinstance(spec.get("descriptor"), str) and \
            isinstance(spec.get("buffers"), list) and all(isinstance(b, str) for b in spec["buffers"])
        if not ok:
            raise _fail(path, f"tensor {name!r}: its record needs a descriptor string and a list of buffer names")
        try:
            desc = bytes.fromhex(spec["descriptor"])
        except ValueError:
            raise _fail(path, f"tensor {name!r}: its descriptor is not hexadecimal") from None
        for buffer in spec["buffers"]:
            if buffer not in entries:
                raise _fail(path, f"tensor {name!r}: its buffer {buffer!r} is not in the file")
            if buffer in claimed:
                raise _fail(path, f"tensor {name!r}: buffer {buffer!r} is claimed twice")
            claimed.add(buffer)
        out[name] = (desc, tuple(spec["buffers"]))
    for name in out:
        if name in entries and name not in claimed:
            raise _fail(path, f"tensor {name!r} is both an entry and a record of parts")
    return out


def _unpack6(packed: np.ndarray, count: int) -> np.ndarray:
    """`count` 6-bit codes from an lsb-first bit stream (4 codes in 3 bytes), as new uint8."""
    triples = packed.reshape(-1, 3).astype(np.uint32)
    word = triples[:, 0] | (triples[:, 1] << np.uint32(8)) | (triples[:, 2] << np.uint32(16))
    codes = (word[:, None] >> np.array([0, 6, 12, 18], np.uint32)) & np.uint32(63)
    return codes.astype(np.uint8).reshape(-1)[:count]


def _pack6(codes: np.ndarray) -> np.ndarray:
    """6-bit codes (a multiple of 4 of them) as an lsb-first bit stream."""
    c = (codes.reshape(-1, 4) & np.uint8(63)).astype(np.uint32)
    word = c[:, 0] | (c[:, 1] << np.uint32(6)) | (c[:, 2] << np.uint32(12)) | (c[:, 3] << np.uint32(18))
    return np.stack([word & 255, (word >> 8) & 255, word >> 16], axis=1).astype(np.uint8).reshape(-1)


class SafetensorsFile(TensorMap):
    """A safetensors file: a read-only Mapping of names to Tensors, and `.metadata`.

    `metadata` is ``__metadata__`` without the ``hurray`` record of ADR-041.
    Tensors are zero-copy views of the memory map (or of the bytes given to
    load_safetensors_bytes), except F6 ones, which
    Hurray holds one element per byte and so unpacks into new memory.
    """

    _kind = "safetensors file"

    def __init__(self, path: str | os.PathLike[str], mapped: Any, entries: _Entries, composites: _Composites,
                 metadata: dict[str, str]) -> None:
        self._raw = entries
        self._composites = composites
        if composites:  # name -> None for an entry as it is, the composite's record for one of parts
            claimed = {buffer for _, buffers in composites.values() for buffer in buffers}
            visible: dict[str, Any] = {name: None for name in entries if name not in claimed}
            visible.update(composites)
        else:  # the usual file: every entry as it is, the entries themselves, no dict made
            visible = entries
        super().__init__(path, mapped, visible, metadata)
        self._size = 0 if mapped is None else len(mapped)

    def _release(self) -> None:
        if isinstance(self._map, mmap.mmap):
            super()._release()
        self._map = None  # bytes stay alive as long as a tensor views them

    def _bytes(self, start: int, nbytes: int) -> np.ndarray:
        if nbytes == 0 or self._map is None:
            empty = np.zeros(0, np.uint8)
            empty.flags.writeable = False
            return empty
        return np.frombuffer(self._map, np.uint8, nbytes, start)

    def _make(self, name: str, entry: Any) -> Tensor:
        # A tensor of a file that shrank would be a view of pages that are
        # gone: refused here rather than a SIGBUS at first touch (ADR-057).
        check_held(self._map, self._size, _WHAT, self._path)
        if self._composites:
            if name in self._composites:
                return self._composite(name)
            entry = self._raw[name]
        dtype, shape, start, nbytes = entry
        known = SAFETENSORS_DTYPES.get(dtype)
        if known is None:
            raise UnsupportedError(f"tensor {name!r} has safetensors dtype {dtype!r}, which this build does not know")
        hurray_dtype, bits = known
        raw = self._bytes(start, nbytes)
        if bits == 4:
            desc = Descriptor.build(hurray_dtype, shape, packing="lsb_first")
            return Tensor._from_spans(desc, ((_address(raw), nbytes),), raw, readonly=True)
        if bits == 6:
            codes = _unpack6(raw, math.prod(shape))
            return from_numpy(codes.view(getattr(ml_dtypes, hurray_dtype)).reshape(shape))
        numpy_dtype = np.dtype(getattr(ml_dtypes, hurray_dtype, None) or hurray_dtype).newbyteorder("<")
        return from_numpy(raw.view(numpy_dtype).reshape(shape))

    def _composite(self, name: str) -> Tensor:
        encoded, buffers = self._composites[name]
        desc = Descriptor.decode(encoded)
        arrays = tuple(self._bytes(*self._raw[b][2:]) for b in buffers)
        spans = tuple((_address(a), a.size) for a in arrays)
        try:
            return Tensor(desc, spans, owner=arrays, readonly=True)
        except HurrayError as exc:
            raise CorruptError(f"tensor {name!r}: its buffers do not hold what its descriptor says: {exc}") from None


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def _open(where: str, held: Any, size: int) -> SafetensorsFile:
    """The SafetensorsFile over `held` (an mmap, read-only bytes, or None for no bytes)."""
    data = held if held is not None else b""
    try:
        found = _well_formed(data, size)
        if found is None:  # read it again, checked field by field, for the error
            data_start, header = _header(data, size, where)
            meta = _user_metadata(header, where)
            entries = _entries(header, data_start, size, where)
        else:
            meta, entries = found
        composites = _composites(meta, entries, where)
    except BaseException:
        if isinstance(held, mmap.mmap):
            close_quietly(held)
        raise
    return SafetensorsFile(where, held, entries, composites, meta)


def load_safetensors(path: str | os.PathLike[str]) -> SafetensorsFile:
    """Open the safetensors file at `path`: a read-only Mapping of tensor names to Tensors.

    Tensors are zero-copy, read-only views of a memory map that stays alive
    as long as any of them does (F6 tensors excepted: they are unpacked).
    Tensors written by save_safetensors as parts come back whole. A missing
    file is a HurrayFileNotFoundError, a FileNotFoundError.
    """
    mapped, size = map_file(path, _WHAT)
    return _open(os.fspath(path), mapped, size)


def load_safetensors_bytes(data: Any) -> SafetensorsFile:
    """Read the safetensors file held in `data` (bytes or any contiguous bytes-like object).

    As load_safetensors, zero-copy: the tensors are read-only views of
    `data`, which they keep alive; the mapping's path is ``"<bytes>"``.
    """
    try:
        view = memoryview(data)
    except TypeError:
        raise InvalidArgumentError(f"load_safetensors_bytes: expected bytes, not {type(data).__name__}") from None
    if not view.c_contiguous:
        raise InvalidArgumentError("load_safetensors_bytes: the bytes must be contiguous")
    view = view.cast("B").toreadonly()
    return _open("<bytes>", view if view.nbytes else None, view.nbytes)


# ---- writing -------------------------------------------------------------

def _direct(tensor: Tensor) -> Optional[tuple[str, tuple[int, ...], np.ndarray]]:
    """(safetensors dtype, shape, uint8 bytes) when safetensors can state `tensor`'s values, else None.

    A plain tensor of a safetensors dtype is its values in C order,
    little-endian, whatever its strides and byte order (ADR-064 § 2): those
    are layout, which safetensors has no word for. F4 and F6 are packed, so
    only their canonical packing is theirs; any other goes into the record."""
    desc = tensor.descriptor
    st = _BY_HURRAY.get(desc.dtype)
    if st is None or desc.scheme != "none":
        return None
    shape = tuple(desc.shape)
    count = math.prod(shape)
    if count == 0:  # numpy gives empty arrays zero strides: nothing to lay out
        return st, shape, np.zeros(0, np.uint8)
    bits = SAFETENSORS_DTYPES[st][1]
    if bits >= 8:
        try:
            values = np.asarray(tensor)
        except HurrayError:
            return None
        little = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("<"))
        return st, shape, little.reshape(-1).view(np.uint8)
    if count * bits % 8:
        return None
    try:
        canonical = Descriptor.build(desc.dtype, desc.shape, packing="lsb_first" if bits == 4 else "padded")
    except HurrayError:
        return None
    if canonical != desc:
        return None
    if bits == 6:
        return st, shape, _pack6(tensor.buffer(0)[:count])
    return st, shape, tensor.buffer(0)[:count * bits // 8]


def _part_bytes(desc: Descriptor, role: str, part: Part) -> Optional[tuple[int, int]]:
    """(elements, bytes) a row-major part of `role` takes, or None when it cannot say."""
    from ..core.dtypes import dtype_bits

    if role == "values":
        count = math.prod(desc.shape)
        if desc.scheme == "ggml":
            elements, block = _ggml.ggml_block(str(desc.ggml_type))
            return count, count // elements * block
        try:
            if Descriptor.build(desc.dtype, desc.shape, packing=desc.packing) != Descriptor.build(
                    desc.dtype, desc.shape, desc.strides, packing=desc.packing):
                return None
        except HurrayError:
            return None
    elif role == "global_scale":
        count = 1
    else:
        pshape = parameter_shape(desc)
        count = math.prod(pshape)
        if part.layout == "swizzled_128x4":
            count = swizzled_count(*pshape)
        elif part.layout != "row_major":
            return None
    bits = dtype_bits(part.dtype)
    if role == "values" and desc.packing == "padded":
        bits = 8
    return count, -(-count * bits // 8)


def _meaningful(desc: Descriptor, role: str, part: Part, nbytes: int) -> Optional[tuple[str, tuple[int, ...]]]:
    """(safetensors dtype, shape) under which other readers see the part as plain numbers."""
    from ..core.dtypes import dtype_bits

    sized = _part_bytes(desc, role, part)
    if part.byte_offset != 0 or sized is None or sized[1] != nbytes:
        return None
    count = sized[0]
    if role == "values":
        if desc.scheme == "ggml":
            shape: tuple[int, ...] = tuple(desc.shape)
            elements, block = _ggml.ggml_block(str(desc.ggml_type))
            return "U8", shape[:-1] + (shape[-1] // elements * block,)
        shape = tuple(desc.shape)
    elif role == "global_scale":
        shape = ()
    elif part.layout == "row_major":
        shape = tuple(parameter_shape(desc))
    else:
        shape = (count,)
    st = _BY_HURRAY.get(part.dtype)
    bits = dtype_bits(part.dtype)
    one_per_byte = bits == 8 or (role == "values" and desc.packing == "padded")
    if st is not None and bits == 4 and role == "values" and desc.packing == "lsb_first" and count % 2 == 0:
        return st, shape
    if st is not None and (bits == 8 or (bits > 8 and desc.byte_order == "little")):
        return st, shape
    if one_per_byte:
        return "U8", shape  # codes of a type safetensors lacks (int4, float8_e3m4, ...), one per byte
    return None


def _plan_parts(name: str, tensor: Tensor) -> list[_Planned]:
    """[(entry name, safetensors dtype, shape, bytes)] for a tensor written as its buffers."""
    desc = tensor.descriptor
    roles_in: dict[int, list[tuple[str, Part]]] = {}
    for role, part in desc.parts.items():
        roles_in.setdefault(part.buffer_index, []).append((role, part))
    out: list[_Planned] = []
    for i in range(len(tensor.buffers)):
        data = tensor.buffer(i)
        held = roles_in.get(i, [])
        label = f"{name}.{held[0][0]}" if len(held) == 1 and i > 0 else f"{name}.buffer{i}"
        entry = name if i == 0 else label
        stated = _meaningful(desc, held[0][0], held[0][1], data.size) if len(held) == 1 else None
        st, shape = stated or ("U8", (data.size,))
        out.append((entry, st, shape, data))
    return out


def _plan(tensors: Mapping[str, Any], metadata: Optional[Mapping[str, str]],
          alignment: int, what: str) -> tuple[bytes, list[_Planned]]:
    """(header with its length, entries in file order) of the file for `tensors` and `metadata`."""
    if not hasattr(tensors, "items"):
        raise InvalidArgumentError(f"{what}: tensors must be a Mapping, not {type(tensors).__name__}")
    user = None if metadata is None else dict(metadata)
    if user is not None and not all(isinstance(k, str) and isinstance(v, str) for k, v in user.items()):
        raise InvalidArgumentError(f"{what}: metadata must map strings to strings")
    for key, value in (user or {}).items():  # a lone surrogate makes JSON that safetensors itself refuses
        utf8(key, f"{what}: a metadata key")
        utf8(value, f"{what}: metadata value of {key!r}")
    entries: list[_Planned] = []
    records: dict[str, dict[str, Any]] = {}
    for name, given in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise InvalidArgumentError(f"{what}: tensor name {name!r} is not a usable name")
        utf8(name, f"{what}: the tensor name")
        tensor = as_tensor(given, f"{what}: tensor {name!r}")
        direct = _direct(tensor)
        if direct is not None:
            entries.append((name, *direct))
            continue
        parts = _plan_parts(name, tensor)
        entries.extend(parts)
        records[name] = {"descriptor": tensor.descriptor.encode().hex(), "buffers": [p[0] for p in parts]}
    seen: set[str] = set()
    for entry in entries:
        if entry[0] in seen:
            raise InvalidArgumentError(f"{what}: the name {entry[0]!r} is used twice "
                                       "(a tensor's part names follow ADR-041: NAME.scale, NAME.buffer1, ...)")
        seen.add(entry[0])
    if records:
        if user is not None and METADATA_KEY in user:
            raise InvalidArgumentError(f"{what}: metadata key {METADATA_KEY!r} is reserved for ADR-041's record, "
                                       f"which tensor {next(iter(records))!r} needs")
        user = {**(user or {}), METADATA_KEY: json.dumps({"format": FORMAT, "tensors": records}, sort_keys=True,
                                                         separators=(",", ":"))}
    ordered = _layout.order([(name, st, shape, data) for name, st, shape, data in entries])
    text = _layout.header([(name, st, shape, data.size) for name, st, shape, data in ordered], user, alignment)
    return struct.pack("<Q", len(text)) + text, ordered


def save_safetensors(path: str | os.PathLike[str], tensors: Mapping[str, Any], *,
                     metadata: Optional[Mapping[str, str]] = None, alignment: int = 8,
                     progress: Optional[Callable[[int, int], object]] = None) -> None:
    """Write `tensors` (a Mapping of names to Tensors or numpy arrays) as a safetensors file.

    By default the file is byte for byte what ``safetensors.numpy.save_file``
    writes for the same dict (ADR-064); `alignment`, a power of two of 8 or
    more, pads the header so the data starts at a multiple of it. Plain
    tensors of safetensors' dtypes are ordinary entries (C order,
    little-endian); every other tensor is written as its buffers under the
    names of ADR-041, with its descriptor in ``__metadata__["hurray"]``.
    `metadata` is a dict of strings to strings kept in ``__metadata__``. The
    file is written to a temporary file beside `path`, synced, and renamed
    over it. `progress`, if given, is called with (bytes of data written,
    bytes in all) as it goes.
    """
    head, entries = _plan(tensors, metadata, alignment, "save_safetensors")
    total = sum(data.size for _, _, _, data in entries)

    def write(out: AtomicFile) -> None:
        out.write(head)
        done = 0
        for _, _, _, data in entries:
            if data.size:
                out.write(np.ascontiguousarray(data))
                done += data.size
                if progress is not None:
                    progress(done, total)

    replace_atomically(path, write, "save_safetensors")


def save_safetensors_bytes(tensors: Mapping[str, Any], *, metadata: Optional[Mapping[str, str]] = None,
                           alignment: int = 8) -> bytes:
    """The bytes of the safetensors file save_safetensors writes, as ``safetensors.numpy.save`` returns them."""
    head, entries = _plan(tensors, metadata, alignment, "save_safetensors_bytes")
    out = bytearray(len(head) + sum(data.size for _, _, _, data in entries))
    out[:len(head)] = head
    at = len(head)
    for _, _, _, data in entries:
        out[at:at + data.size] = np.ascontiguousarray(data).data
        at += data.size
    return bytes(out)
