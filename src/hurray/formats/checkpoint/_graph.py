"""Version-2 descriptors (v2-spec, ADR-054) for the checkpoint readers and writers.

A convention states a weight as a list of nodes in canonical order (node 0
first, children in field order, depth first), exactly as the C builder in
hurray.h takes them; build() runs the builder and returns a validated
Descriptor, and read() gives the nodes of a descriptor back, so that a
writer can recognise the graph a reader made. make_tensor() puts a descriptor
over zero-copy numpy views of the file's map.

This is the one module of the checkpoint package that speaks C; when the
package's own Python face for graphs (hurray.nodes, Descriptor.graph) is
merged, build() and read() become calls to it.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import ml_dtypes
import numpy as np

from ...core import dtypes as _dtypes
from ...core.descriptor import Descriptor
from ...core.tensor import Tensor
from ..._ffi import ffi, lib
from ...errors import HurrayError, check

__all__ = ["Constant", "Node", "Step", "Stored", "build", "constant_bits", "dequantize", "graph_of", "same_graph",
           "make_tensor", "read"]

FORMS = {"mul": lib.HURRAY_FORM_MUL, "div": lib.HURRAY_FORM_DIV, "sub_mul": lib.HURRAY_FORM_SUB_MUL,
         "mul_add": lib.HURRAY_FORM_MUL_ADD, "mul_sub": lib.HURRAY_FORM_MUL_SUB}
_FORM_NAMES = {code: name for name, code in FORMS.items()}
PACKINGS = {"none": lib.HURRAY_PACKING_NONE, "padded": lib.HURRAY_PACKING_PADDED,
            "lsb_first": lib.HURRAY_PACKING_LSB_FIRST, "dense": lib.HURRAY_PACKING_DENSE,
            "slots": lib.HURRAY_PACKING_SLOTS}
_PACKING_NAMES = {code: name for name, code in PACKINGS.items()}


@dataclass(frozen=True)
class Stored:
    """Elements in buffer `buffer` from byte `offset`.

    ELEMENTS addressing (container_bits 0): `strides` in elements (None:
    row-major), `packing` None for the dtype's default. WORDS addressing:
    codes in containers of `container_bits` packed along `packed_axis`,
    `packing` "dense" or "slots" (with chunk_containers, chunk_stride and
    the slot `order`), `strides` in containers.
    """

    dtype: str
    shape: tuple[int, ...]
    buffer: int = 0
    offset: int = 0
    strides: Optional[tuple[int, ...]] = None
    packing: Optional[str] = None
    container_bits: int = 0
    packed_axis: int = 0
    chunk_containers: int = 0
    chunk_stride: int = 0
    order: tuple[int, ...] = ()
    code_offset: int = 0
    codebook: int = 0
    no_nan: bool = False  # float8_e8m0fnu: 255 is 2^128 (compressed-tensors, MLX), not NaN


@dataclass(frozen=True)
class Constant:
    """One value (`bits`: its little-endian bit pattern) of a float or int dtype."""

    dtype: str
    bits: int


@dataclass(frozen=True)
class Step:
    """y = form(x, scale, offset) in `arithmetic`, over `shape`, grouped by
    `blocks` (None: every block 1) or, on `indexed_axis`, by `group_index`."""

    form: str
    arithmetic: str
    shape: tuple[int, ...]
    x: int
    scale: int
    offset: int = 0
    blocks: Optional[tuple[int, ...]] = None
    ragged: bool = False
    indexed_axis: int = 0
    group_index: int = 0


Node = Union[Stored, Constant, Step]


def constant_bits(dtype: str, value: float) -> int:
    """The bit pattern of `value` rounded to `dtype` (float16, bfloat16, float32, float64)."""
    np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    return int.from_bytes(np.array(value, np.float64).astype(np_dtype).tobytes(), "little")


def _u64s(values: Sequence[int]) -> Any:
    return ffi.new("uint64_t[]", list(values) or [0])


def _add(raw: Any, node: Node) -> int:
    out = ffi.new("uint32_t *")
    if isinstance(node, Stored):
        check(lib.hurray_descriptor_add_stored(raw, _dtypes.dtype_code(node.dtype), len(node.shape),
                                               _u64s(node.shape), node.buffer, node.offset, out))
        i = out[0]
        if node.container_bits:
            order = ffi.new("uint8_t[]", list(node.order) or [0])
            check(lib.hurray_descriptor_stored_set_words(
                raw, i, node.container_bits, node.packed_axis, PACKINGS[node.packing or "dense"],
                node.chunk_containers, 0, node.chunk_stride, len(node.order), order if node.order else ffi.NULL))
        elif node.packing is not None:
            check(lib.hurray_descriptor_stored_set_elements(raw, i, PACKINGS[node.packing]))
        if node.strides is not None:
            check(lib.hurray_descriptor_stored_set_strides(raw, i, len(node.strides),
                                                           ffi.new("int64_t[]", list(node.strides) or [0])))
        if node.code_offset or node.codebook or node.no_nan:
            rule = lib.HURRAY_VALUE_RULE_E8M0_NO_NAN if node.no_nan else lib.HURRAY_VALUE_RULE_STANDARD
            check(lib.hurray_descriptor_stored_set_codes(raw, i, node.code_offset, node.codebook, rule))
        return int(i)
    if isinstance(node, Constant):
        check(lib.hurray_descriptor_add_constant(raw, _dtypes.dtype_code(node.dtype), node.bits, out))
        return int(out[0])
    check(lib.hurray_descriptor_add_step(raw, FORMS[node.form], _dtypes.dtype_code(node.arithmetic),
                                         len(node.shape), _u64s(node.shape), node.x, node.scale, node.offset, out))
    i = out[0]
    if node.blocks is not None or node.ragged or node.group_index:
        blocks = list(node.blocks) if node.blocks is not None else [1] * len(node.shape)
        if node.group_index:
            blocks[node.indexed_axis] = 0
        check(lib.hurray_descriptor_step_set_groups(raw, i, len(node.shape), _u64s(blocks),
                                                    lib.HURRAY_STEP_RAGGED if node.ragged else 0,
                                                    node.indexed_axis, node.group_index))
    return int(i)


def _destroy(raw: Any) -> None:
    lib.hurray_descriptor_destroy(ffi.new("HurrayDescriptor **", raw))


def build(shape: Sequence[int], nodes: Sequence[Node], result_dtype: Optional[str] = None) -> Descriptor:
    """A validated version-2 Descriptor: the tensor of `shape` is the value of nodes[0]."""
    box = ffi.new("HurrayDescriptor **")
    check(lib.hurray_descriptor_new(_dtypes.dtype_code("float32"), len(shape), _u64s(shape), box))
    raw = box[0]
    try:
        for expected, node in enumerate(nodes):
            got = _add(raw, node)
            if got != expected:  # pragma: no cover - the builder numbers nodes in order
                raise AssertionError(f"node {expected} was added as {got}")
        if result_dtype is not None:
            check(lib.hurray_descriptor_set_result_dtype(raw, _dtypes.dtype_code(result_dtype)))
    except BaseException:
        _destroy(raw)
        raise
    return Descriptor._adopt(raw)


def graph_of(desc: Descriptor) -> bool:
    """True for a version-2 descriptor (a graph of nodes)."""
    out = ffi.new("uint32_t *")
    check(lib.hurray_descriptor_encoding_version(desc.handle, out))
    return bool(out[0] == 2)


def read(desc: Descriptor) -> tuple[list[Node], Optional[str]]:
    """(the nodes, the result dtype or None) of a version-2 descriptor, as build() takes them."""
    h = desc.handle
    u32 = ffi.new("uint32_t[8]")
    u64 = ffi.new("uint64_t[4]")
    i32 = ffi.new("int32_t *")
    check(lib.hurray_descriptor_node_count(h, u32))
    count = u32[0]
    nodes: list[Node] = []
    for i in range(count):
        check(lib.hurray_descriptor_node_kind(h, i, u32))
        kind = u32[0]
        shape_p = ffi.new("const uint64_t **")
        check(lib.hurray_descriptor_node_shape(h, i, u32 + 1, shape_p))
        shape = tuple(int(shape_p[0][k]) for k in range(u32[1]))
        if kind == lib.HURRAY_NODE_STORED:
            check(lib.hurray_descriptor_stored(h, i, u32, u64, u64 + 1, u32 + 2, u32 + 3))
            dtype, buffer, offset = _dtypes.dtype_name(u32[0]), int(u64[0]), int(u64[1])
            strides_p = ffi.new("const int64_t **")
            check(lib.hurray_descriptor_stored_strides(h, i, strides_p))
            strides = tuple(int(strides_p[0][k]) for k in range(len(shape)))
            order_p = ffi.new("const uint8_t **")
            flags = ffi.new("uint32_t[6]")
            check(lib.hurray_descriptor_stored_packing(h, i, flags, flags + 1, flags + 2, flags + 3, u64 + 2,
                                                       flags + 4, u64 + 3, flags + 5, order_p))
            check(lib.hurray_descriptor_stored_codes(h, i, i32, u32 + 4, u32 + 5))
            words = flags[0] == lib.HURRAY_ADDRESSING_WORDS
            nodes.append(Stored(
                dtype, shape, buffer, offset, strides, _PACKING_NAMES.get(flags[1], str(flags[1])),
                int(flags[2]) if words else 0, int(flags[3]) if words else 0, int(u64[2]), int(u64[3]),
                tuple(int(order_p[0][k]) for k in range(flags[5])), int(i32[0]), int(u32[4]),
                u32[5] == lib.HURRAY_VALUE_RULE_E8M0_NO_NAN))
        elif kind == lib.HURRAY_NODE_CONSTANT:
            check(lib.hurray_descriptor_constant(h, i, u32, u64))
            nodes.append(Constant(_dtypes.dtype_name(u32[0]), int(u64[0])))
        elif kind == lib.HURRAY_NODE_STEP:
            check(lib.hurray_descriptor_step(h, i, u32, u32 + 1, u32 + 2, u32 + 3, u32 + 4))
            form, arithmetic, x, scale, offset = (int(u32[k]) for k in range(5))
            blocks_p = ffi.new("const uint64_t **")
            check(lib.hurray_descriptor_step_groups(h, i, blocks_p, u32 + 5, u32 + 6, u32 + 7))
            blocks = tuple(int(blocks_p[0][k]) for k in range(len(shape)))
            nodes.append(Step(_FORM_NAMES.get(form, str(form)), _dtypes.dtype_name(arithmetic), shape, x, scale,
                              offset, blocks, bool(u32[5] & lib.HURRAY_STEP_RAGGED), int(u32[6]), int(u32[7])))
        else:
            raise NotImplementedError(f"node {i} is of kind {kind}, which the checkpoint conventions never make")
    check(lib.hurray_descriptor_result_dtype(h, u32))
    return nodes, (None if u32[0] == 0 else _dtypes.dtype_name(u32[0]))


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def make_tensor(desc: Descriptor, arrays: Sequence[np.ndarray]) -> Tensor:
    """A read-only Tensor of `desc` over `arrays` (buffer i = arrays[i], zero-copy; they keep the map alive)."""
    views = tuple(np.ascontiguousarray(a).reshape(-1).view(np.uint8) for a in arrays)
    spans = tuple((_address(v), int(v.size)) for v in views)
    return Tensor._from_spans(desc, spans, views, readonly=True)


def _buffer_list(t: Tensor) -> Any:
    box = ffi.new("HurrayBufferList **")
    check(lib.hurray_buffer_list_new(box))
    buf = ffi.new("HurrayBuffer **")
    for address, nbytes in t.buffers:
        check(lib.hurray_buffer_from_ptr(ffi.cast("void *", address), nbytes, ffi.NULL, ffi.NULL, buf))
        status = lib.hurray_buffer_list_push(box[0], buf)
        lib.hurray_buffer_destroy(buf)
        check(status)
    return box


def dequantize(t: Tensor, dtype: str = "float32", rows: Optional[tuple[int, int]] = None) -> np.ndarray:
    """The C dequantizer (hurray_dequantize, ADR-055) on `t`: float32, float16 or bfloat16 values of its shape.

    `rows` (first, count) dequantizes those rows of the first axis only.
    """
    out_dtype = {"float32": np.dtype(np.float32), "float16": np.dtype(np.float16),
                 "bfloat16": np.dtype(ml_dtypes.bfloat16)}[dtype]
    shape = t.shape
    if rows is not None:
        shape = (rows[1],) + tuple(shape[1:])
    out = np.empty(shape, out_dtype)
    box = _buffer_list(t)
    try:
        ptr = ffi.cast("void *", out.ctypes.data)
        code = _dtypes.dtype_code(dtype)
        if rows is None:
            check(lib.hurray_dequantize(t.descriptor.handle, box[0], code, ptr, out.nbytes))
        else:
            check(lib.hurray_dequantize_rows(t.descriptor.handle, box[0], code, rows[0], rows[1], ptr, out.nbytes))
    finally:
        lib.hurray_buffer_list_destroy(box)
    return out


def same_graph(desc: Descriptor, shape: Sequence[int], nodes: Sequence[Node]) -> bool:
    """True when `desc` is the graph `nodes` over `shape` (its result dtype aside, which is informative)."""
    if not graph_of(desc) or tuple(desc.shape) != tuple(shape):
        return False
    try:
        expected = build(shape, nodes)
    except HurrayError:
        return False
    return read(expected)[0] == read(desc)[0]
