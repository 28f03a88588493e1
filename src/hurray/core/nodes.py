"""The nodes of a version-2 descriptor (a graph of nodes, ADR-054), as Python objects.

A tree of these frozen dataclasses states a tensor the way a library stores
it: ``Descriptor.graph(shape, root)`` numbers the nodes in canonical order
(depth-first from the root, children in field order, a node shared by
identity numbered once) and builds the descriptor through the C builder,
which judges every rule; ``Descriptor.nodes`` reads a decoded descriptor
back as the same objects, shared nodes as one object. Nothing here
dequantizes: the dequantizer exists once, in C.

The fields and their meaning are the spec's, docs/impl/descriptor-encoding.md
("Version 2"). Node references are the node objects themselves.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Optional, Union

import ml_dtypes
import numpy as np

from . import dtypes as _dtypes
from ._checks import U32, U64, index, int64, ints, uint
from ._enums import GGML_TYPES, _GGML_TYPE_CODES
from .._ffi import ffi, lib
from ..errors import InvalidArgumentError, check

__all__ = ["Bits", "Constant", "Gather", "Ggml", "Node", "Step", "Stored", "Words"]

PACKINGS = {"none": lib.HURRAY_PACKING_NONE, "padded": lib.HURRAY_PACKING_PADDED,
            "lsb_first": lib.HURRAY_PACKING_LSB_FIRST, "ggml_split": lib.HURRAY_PACKING_GGML_SPLIT,
            "dense": lib.HURRAY_PACKING_DENSE, "slots": lib.HURRAY_PACKING_SLOTS}
FORMS = {"mul": lib.HURRAY_FORM_MUL, "div": lib.HURRAY_FORM_DIV, "sub_mul": lib.HURRAY_FORM_SUB_MUL,
         "mul_add": lib.HURRAY_FORM_MUL_ADD, "mul_sub": lib.HURRAY_FORM_MUL_SUB}
LAYOUTS = {"row_major": lib.HURRAY_PART_LAYOUT_ROW_MAJOR, "swizzled_128x4": lib.HURRAY_PART_LAYOUT_SWIZZLED_128X4}
BYTE_ORDERS = {"little": lib.HURRAY_BYTE_ORDER_LITTLE, "big": lib.HURRAY_BYTE_ORDER_BIG}
VALUE_RULES = {"standard": lib.HURRAY_VALUE_RULE_STANDARD, "e8m0_no_nan": lib.HURRAY_VALUE_RULE_E8M0_NO_NAN}
# The constants' dtypes and their numpy types (the value bytes are the dtype's).
_CONSTANT_TYPES = {"float16": np.dtype(np.float16), "bfloat16": np.dtype(ml_dtypes.bfloat16),
                   "float32": np.dtype(np.float32), "float64": np.dtype(np.float64),
                   "int32": np.dtype(np.int32), "int64": np.dtype(np.int64)}


def _name_of(table: dict[str, int], value: Any, what: str) -> str:
    if type(value) is str and value in table:
        return value  # already the (lower-case) name
    if not isinstance(value, str) or value.lower() not in table:
        known = ", ".join(repr(n) for n in table)
        raise InvalidArgumentError(f"{what} {value!r} is not one of {known}")
    return value.lower()


def _shape(value: Any, what: str) -> tuple[int, ...]:
    return tuple(ints(value, what, uint, U64))


@dataclass(frozen=True)
class Words:
    """Words addressing of a stored node: codes in containers of `container_bits`.

    `packing` is ``"dense"`` (a little-endian bit stream along `packed_axis`)
    or ``"slots"`` (floor(W / b) codes per container at the bit positions
    `order` gives, `chunk_containers` containers per chunk, interleaved or
    `planar`, chunks `chunk_stride` containers apart). :meth:`slots` fills in
    the usual slot defaults.
    """

    container_bits: int
    packed_axis: int = 0
    packing: str = "dense"
    chunk_containers: int = 0
    planar: bool = False
    chunk_stride: int = 0
    order: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "packing", _name_of({"dense": 4, "slots": 5}, self.packing, "words packing"))
        object.__setattr__(self, "order", tuple(ints(self.order, "order", uint, 256)))

    @classmethod
    def slots(cls, container_bits: int, code_bits: int, packed_axis: int = 0, *, chunk_containers: int = 1,
              planar: bool = False, chunk_stride: Optional[int] = None,
              order: Optional[tuple[int, ...]] = None) -> Words:
        """Slots packing of `code_bits`-bit codes: the identity order (LSB-first)
        unless `order` is given, chunks back to back unless `chunk_stride` is."""
        per = index(container_bits, "container_bits") // max(1, index(code_bits, "code_bits"))
        return cls(container_bits, packed_axis, "slots", chunk_containers, planar,
                   chunk_containers if chunk_stride is None else chunk_stride,
                   tuple(range(per)) if order is None else tuple(order))


@dataclass(frozen=True)
class Stored:
    """Codes of `dtype` in buffer `buffer` from byte `offset`.

    `packing` is a version-1 packing name (``"none"``, ``"padded"``,
    ``"lsb_first"``, ``"ggml_split"``; None for the dtype's default) for
    elements addressing, or a :class:`Words` for words addressing. `strides`
    count elements (None: row-major), or containers for words addressing
    (required then). `code_offset` is added to an integer code; `codebook` is
    a node whose value at the code is the element's value.
    """

    dtype: str
    shape: tuple[int, ...]
    buffer: int = 0
    offset: int = 0
    strides: Optional[tuple[int, ...]] = None
    byte_order: str = "little"
    packing: Union[str, Words, None] = None
    layout: str = "row_major"
    code_offset: int = 0
    codebook: Optional[Node] = None
    value_rule: str = "standard"

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", _dtypes.dtype_name(self.dtype))
        object.__setattr__(self, "shape", _shape(self.shape, "stored shape"))
        if self.strides is not None:
            object.__setattr__(self, "strides", tuple(ints(self.strides, "strides", int64)))
        elif isinstance(self.packing, Words):
            raise InvalidArgumentError("a stored node with words addressing needs its strides, counted in containers")
        object.__setattr__(self, "byte_order", _name_of(BYTE_ORDERS, self.byte_order, "byte_order"))
        object.__setattr__(self, "layout", _name_of(LAYOUTS, self.layout, "layout"))
        object.__setattr__(self, "value_rule", _name_of(VALUE_RULES, self.value_rule, "value_rule"))
        if isinstance(self.packing, str):
            object.__setattr__(self, "packing", _name_of(PACKINGS, self.packing, "packing"))
        elif self.packing is not None and not isinstance(self.packing, Words):
            raise InvalidArgumentError(f"packing must be a packing name or a Words, not {type(self.packing).__name__}")


@dataclass(frozen=True)
class Constant:
    """One value of `dtype` (float16, bfloat16, float32, float64, int32 or
    int64), held exactly as that dtype holds it."""

    dtype: str
    value: Union[float, int]

    def __post_init__(self) -> None:
        name = _name_of(_CONSTANT_TYPES, _dtypes.dtype_name(self.dtype), "constant dtype")
        object.__setattr__(self, "dtype", name)
        exact = np.array(self.value, dtype=_CONSTANT_TYPES[name])
        object.__setattr__(self, "value", int(exact) if exact.dtype.kind == "i" else float(exact))

    @property
    def value_bits(self) -> int:
        """The value's little-endian bytes, as the encoding stores them, read as an int."""
        return int.from_bytes(np.array(self.value, dtype=_CONSTANT_TYPES[self.dtype]).tobytes(), sys.byteorder)

    @classmethod
    def from_bits(cls, dtype: str, bits: int) -> Constant:
        """The constant whose little-endian value bytes are `bits`."""
        name = _name_of(_CONSTANT_TYPES, _dtypes.dtype_name(dtype), "constant dtype")
        dt = _CONSTANT_TYPES[name]
        raw = uint(bits, "value_bits", U64).to_bytes(8, "little")[: dt.itemsize]
        value = np.frombuffer(raw if sys.byteorder == "little" else raw[::-1], dtype=dt)[0]
        return cls(name, int(value) if dt.kind == "i" else float(value))


@dataclass(frozen=True)
class Step:
    """`y = form(x, scale, offset)` in `arithmetic`, grouped by `blocks`.

    `blocks` default to 1 along every axis (one parameter per element), with
    0 on `indexed_axis` when `group_index` (a rank-1 integer stored node)
    gives each index's group. `ragged` lets the last block be partial.
    """

    form: str
    arithmetic: str
    shape: tuple[int, ...]
    x: Node
    scale: Node
    offset: Optional[Node] = None
    blocks: Optional[tuple[int, ...]] = None
    ragged: bool = False
    indexed_axis: int = 0
    group_index: Optional[Node] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "form", _name_of(FORMS, self.form, "form"))
        object.__setattr__(self, "arithmetic", _dtypes.dtype_name(self.arithmetic))
        object.__setattr__(self, "shape", _shape(self.shape, "step shape"))
        if self.blocks is None:
            blocks = [1] * len(self.shape)
            if self.group_index is not None and 0 <= self.indexed_axis < len(blocks):
                blocks[self.indexed_axis] = 0
            object.__setattr__(self, "blocks", tuple(blocks))
        else:
            object.__setattr__(self, "blocks", tuple(ints(self.blocks, "blocks", uint, U64)))


@dataclass(frozen=True)
class Ggml:
    """GGML blocks of `ggml_type` ("q4_0", ...) in buffer `buffer` from byte `offset`."""

    ggml_type: str
    shape: tuple[int, ...]
    buffer: int = 0
    offset: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _shape(self.shape, "ggml shape"))


@dataclass(frozen=True)
class Bits:
    """`Σ inputs[k] << shifts[k] + offset`: a code assembled from bit planes."""

    shape: tuple[int, ...]
    inputs: tuple[Node, ...]
    shifts: tuple[int, ...]
    offset: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _shape(self.shape, "bits shape"))
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "shifts", tuple(ints(self.shifts, "shifts", uint, U32)))


@dataclass(frozen=True)
class Gather:
    """`y[..., i, ...] = x[..., index[i], ...]` along `axis`."""

    shape: tuple[int, ...]
    x: Node
    index: Node
    axis: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _shape(self.shape, "gather shape"))


Node = Union[Stored, Constant, Step, Ggml, Bits, Gather]
_KINDS = (Stored, Constant, Step, Ggml, Bits, Gather)
# What hurray._core.add_nodes reads the Stored and Step nodes' fields by (its order is the C code's).
C_TABLES = (Stored, Step, Words, {d.name: d.code for d in _dtypes.DTYPES}, PACKINGS, FORMS, BYTE_ORDERS, LAYOUTS,
            VALUE_RULES)


def _children(node: Node) -> list[Optional[Node]]:
    """The nodes `node` names, in field order (the canonical numbering's order)."""
    if isinstance(node, Stored):
        return [node.codebook]
    if isinstance(node, Step):
        return [node.x, node.scale, node.offset, node.group_index]
    if isinstance(node, Bits):
        return list(node.inputs)
    if isinstance(node, Gather):
        return [node.x, node.index]
    return []


def number(root: Node) -> list[Node]:
    """The nodes reached from `root` in canonical order: depth-first, children
    in field order, each node (by identity) at its first visit."""
    order: list[Node] = []
    seen: dict[int, int] = {}

    def visit(node: Any) -> None:
        if not isinstance(node, _KINDS):
            raise InvalidArgumentError(f"a node must be a hurray.nodes node, not {type(node).__name__}")
        seen[id(node)] = len(order)
        order.append(node)
        for child in _children(node):
            if child is not None and id(child) not in seen:
                visit(child)

    visit(root)
    return order


@dataclass
class _Refs:
    """A node's index by identity, 0 for None."""

    index_of: dict[int, int] = field(default_factory=dict)

    def __call__(self, node: Optional[Node]) -> int:
        return 0 if node is None else self.index_of[id(node)]


def add_nodes(raw: Any, nodes: list[Node]) -> None:
    """Adds `nodes` (canonical order) to the C descriptor `raw` with the builder."""
    ref = _Refs({id(n): i for i, n in enumerate(nodes)})
    out = ffi.new("uint32_t *")
    for node in nodes:
        _add(raw, node, ref, out)


def _add(raw: Any, node: Node, ref: _Refs, out: Any) -> None:
    if isinstance(node, Stored):
        code = _dtypes.dtype_code(node.dtype)
        shape = node.shape
        check(lib.hurray_descriptor_add_stored(raw, code, len(shape), shape,
                                               uint(node.buffer, "buffer", U64), uint(node.offset, "offset", U64),
                                               out))
        i = out[0]
        if node.strides is not None:
            check(lib.hurray_descriptor_stored_set_strides(raw, i, len(node.strides),
                                                           node.strides))
        if node.byte_order != "little":
            check(lib.hurray_descriptor_stored_set_byte_order(raw, i, BYTE_ORDERS[node.byte_order]))
        if node.layout != "row_major":
            check(lib.hurray_descriptor_stored_set_layout(raw, i, LAYOUTS[node.layout]))
        words = node.packing
        if isinstance(words, Words):
            check(lib.hurray_descriptor_stored_set_words(
                raw, i, uint(words.container_bits, "container_bits", U32), uint(words.packed_axis, "packed_axis", U32),
                PACKINGS[words.packing], uint(words.chunk_containers, "chunk_containers", U64),
                lib.HURRAY_SLOTS_PLANAR if words.planar else 0, uint(words.chunk_stride, "chunk_stride", U64),
                len(words.order), ffi.new("uint8_t[]", words.order) if words.order else ffi.NULL))
        elif words is not None:
            check(lib.hurray_descriptor_stored_set_elements(raw, i, PACKINGS[words]))
        if node.code_offset or node.codebook is not None or node.value_rule != "standard":
            offset = index(node.code_offset, "code_offset")
            if not -(1 << 31) <= offset < 1 << 31:
                raise InvalidArgumentError(f"code_offset {offset} does not fit a signed 32-bit integer")
            check(lib.hurray_descriptor_stored_set_codes(raw, i, offset, ref(node.codebook),
                                                         VALUE_RULES[node.value_rule]))
    elif isinstance(node, Constant):
        check(lib.hurray_descriptor_add_constant(raw, _dtypes.dtype_code(node.dtype), node.value_bits, out))
    elif isinstance(node, Step):
        shape = node.shape
        check(lib.hurray_descriptor_add_step(raw, FORMS[node.form], _dtypes.dtype_code(node.arithmetic), len(shape),
                                             shape, ref(node.x), ref(node.scale),
                                             ref(node.offset), out))
        blocks = node.blocks or ()
        check(lib.hurray_descriptor_step_set_groups(
            raw, out[0], len(blocks), blocks, lib.HURRAY_STEP_RAGGED if node.ragged else 0,
            uint(node.indexed_axis, "indexed_axis", U32), ref(node.group_index)))
    elif isinstance(node, Ggml):

        ggml_code = _GGML_TYPE_CODES.get(str(node.ggml_type).lower())
        if ggml_code is None:
            raise InvalidArgumentError(f"ggml_type {node.ggml_type!r} is not one of {', '.join(_GGML_TYPE_CODES)}")
        check(lib.hurray_descriptor_add_ggml(raw, ggml_code, len(node.shape), node.shape,
                                             uint(node.buffer, "buffer", U64), uint(node.offset, "offset", U64), out))
    elif isinstance(node, Bits):
        if not 1 <= len(node.inputs) <= 4 or len(node.shifts) != len(node.inputs):
            raise InvalidArgumentError(
                f"a bits node has 1 to 4 inputs and a shift for each, not {len(node.inputs)} and {len(node.shifts)}")
        inputs = [ref(n) for n in node.inputs]
        offset = index(node.offset, "offset")
        if not -(1 << 31) <= offset < 1 << 31:
            raise InvalidArgumentError(f"offset {offset} does not fit a signed 32-bit integer")
        check(lib.hurray_descriptor_add_bits(raw, len(node.shape), node.shape, len(inputs),
                                             ffi.new("uint32_t[]", inputs), ffi.new("uint32_t[]", node.shifts),
                                             offset, out))
    else:
        check(lib.hurray_descriptor_add_gather(raw, len(node.shape), node.shape,
                                               ref(node.x), ref(node.index), uint(node.axis, "axis", U32), out))


def read_nodes(handle: Any) -> tuple[Node, ...]:
    """The nodes of a C descriptor, built from the last to the first so that
    every reference (always to a later node) is an object already made."""
    count = ffi.new("uint32_t *")
    check(lib.hurray_descriptor_node_count(handle, count))
    made: list[Optional[Node]] = [None] * count[0]
    for i in reversed(range(count[0])):
        made[i] = _read(handle, i, made)
    return tuple(n for n in made if n is not None)


def _read(handle: Any, i: int, made: list[Optional[Node]]) -> Node:

    u = ffi.new("uint32_t[6]")
    q = ffi.new("uint64_t[4]")
    shape_p = ffi.new("const uint64_t **")
    check(lib.hurray_descriptor_node_kind(handle, i, u))
    kind = u[0]
    check(lib.hurray_descriptor_node_shape(handle, i, u + 1, shape_p))
    rank = u[1]
    shape = tuple(shape_p[0][0:rank])

    def node(n: int) -> Any:
        return None if n == 0 else made[n]

    if kind == lib.HURRAY_NODE_STORED:
        strides_p = ffi.new("const int64_t **")
        order_p = ffi.new("const uint8_t **")
        code_offset = ffi.new("int32_t *")
        check(lib.hurray_descriptor_stored(handle, i, u, q, q + 1, u + 1, u + 2))
        dtype, buffer, offset, byte_order, layout = u[0], q[0], q[1], u[1], u[2]
        check(lib.hurray_descriptor_stored_strides(handle, i, strides_p))
        strides = tuple(strides_p[0][0:rank])
        check(lib.hurray_descriptor_stored_packing(handle, i, u, u + 1, u + 2, u + 3, q, u + 4, q + 1, u + 5, order_p))
        addressing, packing = u[0], u[1]
        words = Words(u[2], u[3], _key(PACKINGS, packing), q[0], bool(u[4] & lib.HURRAY_SLOTS_PLANAR), q[1],
                      tuple(order_p[0][0:u[5]])) if addressing == lib.HURRAY_ADDRESSING_WORDS else None
        check(lib.hurray_descriptor_stored_codes(handle, i, code_offset, u, u + 1))
        return Stored(_dtypes.dtype_name(dtype), shape, buffer, offset, strides, _key(BYTE_ORDERS, byte_order),
                      words if words is not None else _key(PACKINGS, packing), _key(LAYOUTS, layout),
                      code_offset[0], node(u[0]), _key(VALUE_RULES, u[1]))
    if kind == lib.HURRAY_NODE_CONSTANT:
        check(lib.hurray_descriptor_constant(handle, i, u, q))
        return Constant.from_bits(_dtypes.dtype_name(u[0]), q[0])
    if kind == lib.HURRAY_NODE_STEP:
        blocks_p = ffi.new("const uint64_t **")
        check(lib.hurray_descriptor_step(handle, i, u, u + 1, u + 2, u + 3, u + 4))
        form, arithmetic, x, scale, offset = u[0], u[1], u[2], u[3], u[4]
        check(lib.hurray_descriptor_step_groups(handle, i, blocks_p, u, u + 1, u + 2))
        return Step(_key(FORMS, form), _dtypes.dtype_name(arithmetic), shape, node(x), node(scale), node(offset),
                    tuple(blocks_p[0][0:rank]), bool(u[0] & lib.HURRAY_STEP_RAGGED), u[1], node(u[2]))
    if kind == lib.HURRAY_NODE_GGML:
        check(lib.hurray_descriptor_ggml_node(handle, i, u, q, q + 1))
        return Ggml(GGML_TYPES.get(u[0], str(u[0])), shape, q[0], q[1])
    if kind == lib.HURRAY_NODE_BITS:
        inputs = ffi.new("uint32_t[4]")
        shifts = ffi.new("uint32_t[4]")
        offset32 = ffi.new("int32_t *")
        check(lib.hurray_descriptor_bits(handle, i, u, inputs, shifts, offset32))
        n = u[0]
        return Bits(shape, tuple(node(inputs[k]) for k in range(n)), tuple(shifts[0:n]), offset32[0])
    check(lib.hurray_descriptor_gather(handle, i, u, u + 1, u + 2))
    return Gather(shape, node(u[0]), node(u[1]), u[2])


def _key(table: dict[str, int], code: int) -> str:
    for name, value in table.items():
        if value == code:
            return name
    return str(code)
