"""Descriptor: layers 1-3 and the role-to-buffer map, held as a C HurrayDescriptor.

Every rule lives in the C library: building calls its setters then
``hurray_descriptor_validate`` and ``hurray_descriptor_encode``; decoding calls
``hurray_descriptor_decode``. Python only translates names to codes and
reads the fields back. A Descriptor never changes once made, so its encoding
and its fields are read once and cached. At the end: what a strided layout
reaches (reach) and the proof that spans of memory hold what a descriptor
reaches (check_spans).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Callable, NamedTuple, Optional

from . import dtypes as _dtypes
from . import nodes as _nodes
from ._checks import U32, U64, int64, ints, uint
from ._enums import (
    BYTE_ORDERS, GGML_TYPES, GRANULARITIES, LAYOUTS, PACKINGS, ROLES, SCHEMES, _BYTE_ORDER_CODES, _GRANULARITY_CODES,
    _LAYOUT_CODES, _PACKING_CODES, _ROLE_CODES, _SCHEME_CODES, _GGML_TYPE_CODES, _code, _name,
)
from .._core import add_nodes as _core_add_nodes
from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, check

__all__ = ["Descriptor", "Part"]

# The role codes in the order parts are listed (sorted once, not per descriptor read).
_ROLES_IN_ORDER = sorted(ROLES)
# The longest encoding of either version, from the header.
_MAX_ENCODED_LEN = lib.HURRAY_MAX_DESCRIPTOR_V2_LEN


class Part(NamedTuple):
    """Where one role's elements live: their dtype, buffer, byte offset and layout."""

    dtype: str
    buffer_index: int = 0
    byte_offset: int = 0
    layout: str = "row_major"


def _as_part(role: str, spec: Any, values_dtype: Any) -> tuple[int, int, int, int]:
    """A user's part spec (Part, tuple or dict; the values dtype may be left out) as codes."""
    if isinstance(spec, dict):
        fields = dict(spec)
        if role == "values":
            fields.setdefault("dtype", values_dtype)
        try:
            spec = Part(**fields)
        except TypeError as exc:
            raise InvalidArgumentError(f"part {role!r}: {exc}") from None
    elif isinstance(spec, tuple) and not isinstance(spec, Part):
        try:
            spec = Part(*spec)
        except TypeError as exc:
            raise InvalidArgumentError(f"part {role!r}: {exc}") from None
    elif not isinstance(spec, Part):
        raise InvalidArgumentError(f"part {role!r} must be a Part, tuple or dict, not {type(spec).__name__}")
    return (
        _dtypes.dtype_code(spec.dtype),
        uint(spec.buffer_index, f"part {role!r} buffer_index", U64),
        uint(spec.byte_offset, f"part {role!r} byte_offset", U64),
        _code(_LAYOUT_CODES, spec.layout, f"part {role!r} layout"),
    )


def _byte_order_code(dtype: Any, byte_order: Optional[str | int]) -> int:
    """The byte order code for build(): explicit, or stated by a non-native numpy dtype."""
    stated = _dtypes.stated_byte_order(dtype)
    if byte_order is None:
        return _code(_BYTE_ORDER_CODES, stated or "little", "byte_order")
    code = _code(_BYTE_ORDER_CODES, byte_order, "byte_order")
    if stated is not None and code != _BYTE_ORDER_CODES[stated]:
        raise InvalidArgumentError(
            f"dtype {dtype!s} is {stated}-endian but byte_order is {_name(BYTE_ORDERS, code)!r}"
        )
    return code


# Descriptor.decode's C half (hurray._core.decode; None when decode
# refuses), set by hurray._wiring once hurray._core is set up. Until then,
# and for anything but bytes, decode runs in Python through cffi.
_decode_in_c: Optional[Callable[[bytes], Optional[Descriptor]]] = None


def _destroy(handle: Any, _new: Any = ffi.new, _free: Any = lib.hurray_descriptor_destroy) -> None:
    # ffi and lib bound at definition: at interpreter shutdown a descriptor
    # kept in a module global is freed after that module's names are cleared.
    _free(_new("HurrayDescriptor **", handle))


def _new_graph(shape: list[int]) -> Any:
    """A new C descriptor of `shape` for the graph builder to add nodes to (the caller destroys it)."""
    box = ffi.new("HurrayDescriptor **")
    check(lib.hurray_descriptor_new(lib.HURRAY_DTYPE_FLOAT32, len(shape), shape, box))
    return box[0]


class Descriptor:
    """An immutable, validated tensor descriptor (layers 1-4).

    Make one with :meth:`build` or :meth:`decode`; :meth:`encode` gives its
    canonical bytes. Two descriptors are equal when their encodings are.
    """

    # _box: None when _handle frees itself (ffi.gc); else the object that
    # owns the C descriptor (a consumer's capsule, see _adopt_handed).
    # _address: the C descriptor's address as an int, for hurray._core;
    # None once closed. _handle: the cffi pointer, or None until first asked
    # for when hurray._core made the Descriptor (a cffi cast costs as much
    # as the rest of from_numpy, and most tensors never need one).
    __slots__ = ("_handle", "_bytes", "_fields", "_box", "_address", "__weakref__")
    _handle: Any
    _bytes: Optional[bytes]
    _fields: Optional[dict[str, Any]]
    _box: Any
    _address: Optional[int]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("make a Descriptor with Descriptor.build(...) or Descriptor.decode(bytes)")

    @classmethod
    def _adopt(cls, raw: Any, encoded: Optional[bytes] = None) -> Descriptor:
        """Own the C descriptor `raw`; it is destroyed with the Descriptor (or now, on failure).

        `encoded` is the byte string `raw` was just decoded from, which by the
        codec's contract is its one encoding. Without it `raw` is validated
        (nothing invalid ever becomes a Descriptor) and encoded only when
        the bytes are first asked for: a tensor made by from_numpy often
        never needs them.
        """
        self = object.__new__(cls)
        self._handle = ffi.gc(raw, _destroy)
        self._box = None
        self._address = int(ffi.cast("uintptr_t", raw))
        self._fields = None
        if encoded is None:
            check(lib.hurray_descriptor_validate(raw))
        self._bytes = encoded
        return self

    @classmethod
    def _adopt_handed(cls, address: int, box: Any, encoded: Optional[bytes]) -> Descriptor:
        """A Descriptor over the C descriptor a consumer decoded and checked.

        `box` owns it (hurray._protocol.consume hands over (address, box))
        and is kept for the Descriptor's life; `encoded` is the bytes it was
        decoded from. Nothing is checked again: decode did, in full, and the
        C descriptor carries that fact (ADR-046).
        """
        self = object.__new__(cls)
        self._handle = ffi.cast("HurrayDescriptor *", address)
        self._box = box
        self._address = address
        self._fields = None
        self._bytes = encoded
        return self

    def _encode_in_c(self) -> bytes:
        """Run hurray_descriptor_encode (which validates) and return its bytes."""
        out = ffi.new("uint8_t[]", _MAX_ENCODED_LEN)
        out_len = ffi.new("uint64_t *")
        check(lib.hurray_descriptor_encode(self.handle, out, _MAX_ENCODED_LEN, out_len))
        return bytes(ffi.buffer(out, out_len[0]))

    @classmethod
    def decode(cls, data: Any) -> Descriptor:
        """Decode and validate descriptor bytes (any bytes-like object)."""
        if cls is Descriptor and type(data) is bytes and _decode_in_c is not None:
            decoded = _decode_in_c(data)
            if decoded is not None:
                return decoded
        if type(data) is not bytes:
            try:
                data = memoryview(data).tobytes()
            except TypeError:
                raise InvalidArgumentError(
                    f"descriptor bytes must be bytes-like, not {type(data).__name__}"
                ) from None
        box = ffi.new("HurrayDescriptor **")
        check(lib.hurray_descriptor_decode(ffi.from_buffer("uint8_t[]", data), len(data), box))
        # decode accepts only what encode would write, so `data` is the encoding.
        return cls._adopt(box[0], data)

    @classmethod
    def build(
        cls,
        dtype: Any,
        shape: Any,
        strides: Any = None,
        *,
        byte_order: Optional[str] = None,
        packing: Any = None,
        scheme: Any = "none",
        granularity: Any = "none",
        axis: int = 0,
        block_size: int = 0,
        ggml_type: Any = None,
        parts: Optional[dict[str, Any]] = None,
    ) -> Descriptor:
        """Build and validate a descriptor.

        `dtype` is a Hurray name, code or numpy dtype; `strides` count
        elements (row-major contiguous when None). `byte_order` None means
        the order a non-native numpy dtype states (``np.dtype(">f4")`` is
        big-endian), else little; an explicit order that contradicts the
        dtype's raises InvalidArgumentError. `packing` None keeps the
        C library's default for the dtype (none for whole bytes, lsb_first
        for 1, 2 and 4 bits, padded for fp6). `parts` maps role names
        ("values", "scale", "zero_point", "global_scale") to
        ``Part(dtype, buffer_index, byte_offset, layout)``, a tuple of those
        fields, or a dict of some of them; the values part defaults to the
        tensor's dtype in buffer 0 at byte offset 0.
        """
        dtype_code = _dtypes.dtype_code(dtype)
        order_code = _byte_order_code(dtype, byte_order)
        shape = ints(shape, "shape", uint, U64)
        if strides is not None:
            strides = ints(strides, "strides", int64)
        codes = {}
        for role, spec in (parts or {}).items():
            role_code = _code(_ROLE_CODES, role, "role")
            codes[role_code] = _as_part(_name(ROLES, role_code), spec, dtype_code)
        values = codes.get(lib.HURRAY_ROLE_VALUES)
        if values is not None and values[0] != dtype_code:
            raise InvalidArgumentError(
                f"the values part's dtype {_dtypes.dtype_name(values[0])} differs from the "
                f"tensor's dtype {_dtypes.dtype_name(dtype_code)}"
            )
        return cls._from_codes(
            dtype_code,
            shape,
            strides,
            order_code,
            None if packing is None else _code(_PACKING_CODES, packing, "packing"),
            (
                _code(_SCHEME_CODES, scheme, "scheme"),
                _code(_GRANULARITY_CODES, granularity, "granularity"),
                uint(axis, "axis", U32),
                uint(block_size, "block_size", U64),
                0 if ggml_type is None else _code(_GGML_TYPE_CODES, ggml_type, "ggml_type"),
            ),
            codes,
        )

    @classmethod
    def _from_codes(cls, dtype_code: int, shape: Sequence[int], strides: Optional[Sequence[int]], byte_order: int,
                    packing: Optional[int], quantization: Optional[Sequence[int]],
                    parts: Mapping[int, Sequence[int]]) -> Descriptor:
        """Build from already-checked integers; the fast path for from_numpy."""
        box = ffi.new("HurrayDescriptor **")
        check(lib.hurray_descriptor_new(dtype_code, len(shape), ffi.new("uint64_t[]", shape), box))
        raw = box[0]
        try:
            if strides is not None:
                check(lib.hurray_descriptor_set_strides(raw, len(strides), ffi.new("int64_t[]", strides)))
            if byte_order != lib.HURRAY_BYTE_ORDER_LITTLE:
                check(lib.hurray_descriptor_set_byte_order(raw, byte_order))
            if packing is not None:
                check(lib.hurray_descriptor_set_packing(raw, packing))
            if quantization is not None:
                check(lib.hurray_descriptor_set_quantization(raw, *quantization))
            for role in sorted(parts):
                check(lib.hurray_descriptor_set_part(raw, role, *parts[role]))
        except BaseException:
            _destroy(raw)
            raise
        return cls._adopt(raw)

    @classmethod
    def graph(cls, shape: Any, root: _nodes.Node, *, result_dtype: Any = None) -> Descriptor:
        """Build and validate a descriptor of encoding version 2: the tensor of
        `shape` is the value of `root` (a hurray.nodes node), reshaped row-major.

        The nodes reachable from `root` are numbered in canonical order
        (depth-first, children in field order, a node object used twice is
        one node) and handed to the C builder, which judges every rule.
        `result_dtype` (float16, bfloat16, float32, float64 or None) is the
        dtype the format's own dequantization returns; it changes no value.
        """
        shape = ints(shape, "shape", uint, U64)
        nodes = _nodes.number(root)
        if len(nodes) > lib.HURRAY_MAX_NODES:
            raise InvalidArgumentError(f"{len(nodes)} nodes: a descriptor holds at most {lib.HURRAY_MAX_NODES}")
        raw = _new_graph(shape)
        try:
            if not _core_add_nodes(int(ffi.cast("uintptr_t", raw)), nodes, _nodes.C_TABLES):
                # C adds Stored and Step nodes only, and refuses nothing: anything else (or a
                # refusal) is added in Python, to a new descriptor, which names what is wrong
                fresh = _new_graph(shape)
                _destroy(raw)
                raw = fresh
                _nodes.add_nodes(raw, nodes)
            if result_dtype is not None:
                check(lib.hurray_descriptor_set_result_dtype(raw, _dtypes.dtype_code(result_dtype)))
        except BaseException:
            _destroy(raw)
            raise
        return cls._adopt(raw)

    # ---- the C handle --------------------------------------------------

    @property
    def handle(self) -> Any:
        """The borrowed ``HurrayDescriptor *`` (cffi pointer); valid until close()."""
        handle = self._handle
        if handle is None:
            if self._address is None:
                raise InvalidArgumentError("the descriptor is closed")
            handle = self._handle = ffi.cast("HurrayDescriptor *", self._address)
        return handle

    def close(self) -> None:
        """Free the C descriptor now. Fields and encoding stay readable; close twice is fine."""
        if self._address is None:
            return
        self._graph_fields()  # every field, before the C descriptor goes
        self.encode()
        handle, self._handle = self._handle, None
        if self._box is None:
            ffi.release(handle)
        self._box = self._address = None  # a handed-over descriptor dies with its box

    def __enter__(self) -> Descriptor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- encoding and identity -----------------------------------------

    def encode(self) -> bytes:
        """The canonical descriptor bytes (encoded on first use, then kept)."""
        data = self._bytes
        if data is None:
            data = self._bytes = self._encode_in_c()
        return data

    def __bytes__(self) -> bytes:
        return self.encode()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Descriptor):
            return NotImplemented
        return self.encode() == other.encode()

    def __hash__(self) -> int:
        return hash(self.encode())

    def __reduce__(self) -> tuple[Callable[[Any], Descriptor], tuple[bytes]]:
        return (Descriptor.decode, (self.encode(),))

    # ---- fields --------------------------------------------------------

    def _read_fields(self) -> dict[str, Any]:
        known = self._fields
        if known is not None and "parts" in known:
            return known
        h = self.handle
        u32 = ffi.new("uint32_t[3]")
        u64 = ffi.new("uint64_t[2]")
        check(lib.hurray_descriptor_encoding_version(h, u32))
        version = u32[0]
        result_dtype = None
        if version == 2:
            check(lib.hurray_descriptor_result_dtype(h, u32))
            result_dtype = _dtypes.dtype_name(u32[0]) if u32[0] else None
        check(lib.hurray_descriptor_rank(h, u32))
        rank = u32[0]
        shape_p = ffi.new("const uint64_t **")
        strides_p = ffi.new("const int64_t **")
        check(lib.hurray_descriptor_shape(h, shape_p))
        check(lib.hurray_descriptor_strides(h, strides_p))
        shape = tuple(shape_p[0][0:rank])
        strides = tuple(strides_p[0][0:rank])
        check(lib.hurray_descriptor_byte_order(h, u32))
        byte_order = u32[0]
        check(lib.hurray_descriptor_packing(h, u32))
        packing = u32[0]
        ggml_type = ffi.new("uint32_t *")
        check(lib.hurray_descriptor_quantization(h, u32, u32 + 1, u32 + 2, u64, ggml_type))
        scheme, granularity, axis, block_size = u32[0], u32[1], u32[2], u64[0]
        parts = {}
        for role in _ROLES_IN_ORDER:
            status = lib.hurray_descriptor_part(h, role, u32, u64, u64 + 1, u32 + 1)
            if status == lib.HURRAY_ERROR_NOT_FOUND:
                continue
            check(status)
            parts[_name(ROLES, role)] = Part(
                _dtypes.dtype_name(u32[0]), u64[0], u64[1], _name(LAYOUTS, u32[1])
            )
        check(lib.hurray_descriptor_buffer_count(h, u64))
        fields = {
            "shape": shape,
            "strides": strides,
            "byte_order": _name(BYTE_ORDERS, byte_order),
            "packing": _name(PACKINGS, packing),
            "scheme": _name(SCHEMES, scheme),
            "granularity": _name(GRANULARITIES, granularity),
            "axis": axis,
            "block_size": block_size,
            "ggml_type": None if ggml_type[0] == 0 else _name(GGML_TYPES, ggml_type[0]),
            "parts": parts,
            "buffer_count": u64[0],
            "encoding_version": version,
            "result_dtype": result_dtype,
        }
        if version != 2:
            check(lib.hurray_descriptor_dtype(h, u32))
            fields.update(dtype_code=u32[0], dtype=_dtypes.dtype_name(u32[0]), nodes=())
        self._fields = fields
        return fields

    def _read_shape(self) -> tuple[int, ...]:
        """The shape alone, kept in the fields: a tensor that is only dequantized needs no other field."""
        known = self._fields
        if known is None:
            h = self.handle
            rank = ffi.new("uint32_t *")
            shape_p = ffi.new("const uint64_t **")
            check(lib.hurray_descriptor_rank(h, rank))
            check(lib.hurray_descriptor_shape(h, shape_p))
            known = self._fields = {"shape": tuple(shape_p[0][0:rank[0]])}
        return known["shape"]

    def _graph_fields(self) -> dict[str, Any]:
        """The fields with the nodes and the dtype, which a version-2 descriptor
        reads only when asked for: reading the nodes back as Python objects
        costs more than all the other fields together, and a tensor that is
        only dequantized never needs them."""
        fields = self._read_fields()
        if "nodes" not in fields:
            nodes = _nodes.read_nodes(self.handle)
            dtype = _dtypes.dtype_code(_graph_dtype(nodes[0], fields["result_dtype"]))
            fields.update(dtype_code=dtype, dtype=_dtypes.dtype_name(dtype), nodes=nodes)
        return fields

    @property
    def dtype(self) -> str:
        """The element type's name ("float32", "int4", ...).

        For encoding version 2: node 0's dtype when it is a plain stored node
        (codes that are their values), else the result dtype, float32 when
        unstated: what a dequantization gives.
        """
        return self._graph_fields()["dtype"]

    @property
    def encoding_version(self) -> int:
        """1, or 2 for a graph of nodes (scheme "graph")."""
        return self._read_fields()["encoding_version"]

    @property
    def nodes(self) -> tuple[_nodes.Node, ...]:
        """The nodes of a version-2 descriptor in index order, node 0 the
        tensor (a node named twice is one object); () for version 1."""
        return self._graph_fields()["nodes"]

    @property
    def root(self) -> Optional[_nodes.Node]:
        """Node 0, the tensor, or None for version 1."""
        nodes = self.nodes
        return nodes[0] if nodes else None

    @property
    def result_dtype(self) -> Optional[str]:
        """The dtype the format's own dequantization returns, or None
        (unstated, and always for version 1)."""
        return self._read_fields()["result_dtype"]

    @property
    def dtype_code(self) -> int:
        """The element type's HurrayDtype code."""
        return self._graph_fields()["dtype_code"]

    @property
    def bits(self) -> int:
        """The width of one element in bits."""
        return _dtypes.dtype_bits(self.dtype_code)

    @property
    def shape(self) -> tuple[int, ...]:
        return self._read_shape()

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements (not bytes); may be negative or zero."""
        return self._read_fields()["strides"]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The element count."""
        count = 1
        for n in self.shape:
            count *= n
        return count

    @property
    def byte_order(self) -> str:
        return self._read_fields()["byte_order"]

    @property
    def packing(self) -> str:
        return self._read_fields()["packing"]

    @property
    def scheme(self) -> str:
        return self._read_fields()["scheme"]

    @property
    def granularity(self) -> str:
        return self._read_fields()["granularity"]

    @property
    def axis(self) -> int:
        return self._read_fields()["axis"]

    @property
    def block_size(self) -> int:
        return self._read_fields()["block_size"]

    @property
    def ggml_type(self) -> Optional[str]:
        """The GGML block format ("q4_0", ...) or None."""
        return self._read_fields()["ggml_type"]

    @property
    def parts(self) -> dict[str, Part]:
        """{role name: Part}, in role order; a fresh dict each time."""
        return dict(self._read_fields()["parts"])

    @property
    def byte_offset(self) -> int:
        """Where the values part starts in its buffer (version 2: node 0's,
        when it is a stored node; else 0)."""
        fields = self._graph_fields()
        values = fields["parts"].get("values")
        if values is not None:
            return values.byte_offset
        root = fields["nodes"][0]
        return root.offset if isinstance(root, (_nodes.Stored, _nodes.Ggml)) else 0

    @property
    def buffer_count(self) -> int:
        return self._read_fields()["buffer_count"]

    def __repr__(self) -> str:
        f = self._graph_fields()
        if f["encoding_version"] == 2:
            return (f"Descriptor.graph(shape={f['shape']!r}, nodes={len(f['nodes'])}, "
                    f"result_dtype={f['result_dtype']!r}, root={type(f['nodes'][0]).__name__})")
        items = [f"dtype={f['dtype']!r}", f"shape={f['shape']!r}", f"strides={f['strides']!r}"]
        if f["byte_order"] != "little":
            items.append(f"byte_order={f['byte_order']!r}")
        if f["packing"] != "none":
            items.append(f"packing={f['packing']!r}")
        if f["scheme"] != "none":
            items.append(f"scheme={f['scheme']!r}")
            items.append(f"granularity={f['granularity']!r}")
            if f["granularity"] in ("per_axis", "per_block"):
                items.append(f"axis={f['axis']}")
            if f["granularity"] == "per_block":
                items.append(f"block_size={f['block_size']}")
            if f["ggml_type"] is not None:
                items.append(f"ggml_type={f['ggml_type']!r}")
        default_values = Part(f["dtype"])
        if f["parts"] != {"values": default_values}:
            parts = ", ".join(
                f"{role!r}: Part({p.dtype!r}, {p.buffer_index}, {p.byte_offset}, {p.layout!r})"
                for role, p in f["parts"].items()
            )
            items.append(f"parts={{{parts}}}")
        return f"Descriptor({', '.join(items)})"


# ---- a layout against memory ------------------------------------------

def reach(shape: Iterable[int], byte_strides: Iterable[int]) -> tuple[int, int]:
    """(low, high): the byte offsets from element 0 of the lowest and the
    highest element a non-empty layout reaches; low <= 0 <= high."""
    low = high = 0
    for n, step in zip(shape, byte_strides):
        extent = (n - 1) * step
        if extent < 0:
            low += extent
        else:
            high += extent
    return low, high


@contextmanager
def borrowed_list(spans: Sequence[tuple[int, int]]) -> Iterator[Any]:
    """A HurrayBufferList that borrows `spans` (release NULL: the owner frees
    the memory), destroyed on leaving the block."""
    box = ffi.new("HurrayBufferList **")
    check(lib.hurray_buffer_list_new(box))
    buf = ffi.new("HurrayBuffer **")
    try:
        for address, nbytes in spans:
            check(lib.hurray_buffer_from_ptr(ffi.cast("void *", address), nbytes, ffi.NULL, ffi.NULL, buf))
            status = lib.hurray_buffer_list_push(box[0], buf)
            lib.hurray_buffer_destroy(buf)  # no-op once the list took it
            check(status)
        yield box[0]
    finally:
        lib.hurray_buffer_list_destroy(box)


def check_spans(descriptor: Descriptor, spans: Sequence[tuple[int, int]]) -> None:
    """Run hurray_descriptor_check_buffers over borrowed views of `spans`."""
    handle = descriptor.handle
    with borrowed_list(spans) as buffers:
        check(lib.hurray_descriptor_check_buffers(handle, buffers))


def plain_stored(node: _nodes.Node) -> bool:
    """A stored node whose codes are its values: elements addressing, no
    code offset, codebook or value rule, row-major layout."""
    return (isinstance(node, _nodes.Stored) and not isinstance(node.packing, _nodes.Words)
            and node.codebook is None and node.code_offset == 0 and node.value_rule == "standard"
            and node.layout == "row_major")


def _graph_dtype(root: _nodes.Node, result_dtype: Optional[str]) -> str:
    """Descriptor.dtype of a version-2 descriptor (see there)."""
    if plain_stored(root):
        return root.dtype  # type: ignore[union-attr]
    return result_dtype or "float32"
