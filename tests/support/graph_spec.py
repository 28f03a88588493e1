"""Version-2 descriptors for the tests: a graph written as Python objects,
built through the C builder (hurray.h, via the package's cffi module), and
dequantized with hurray_dequantize / hurray_dequantize_rows.

A Graph is the tensor's shape and its nodes in canonical order (node 0
first, children in field order, depth first), as the builder takes them;
buffers are bytes objects, indexed as the nodes' `buffer` fields say. The
same objects feed the numpy oracle (graph_oracle.py), so a test states a
layout once and gets both the library's values and the oracle's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from hurray._ffi import ffi, lib
from hurray.errors import check

# ---- the vocabulary -------------------------------------------------------------

_DTYPES: dict[str, int] = {}
for _code in range(256):
    _name = lib.hurray_dtype_name(_code)
    if _name != ffi.NULL:
        _DTYPES[ffi.string(_name).decode()] = _code


def dtype_code(name: str) -> int:
    return _DTYPES[name]


FORMS = {"mul": lib.HURRAY_FORM_MUL, "div": lib.HURRAY_FORM_DIV, "sub_mul": lib.HURRAY_FORM_SUB_MUL,
         "mul_add": lib.HURRAY_FORM_MUL_ADD, "mul_sub": lib.HURRAY_FORM_MUL_SUB}
PACKINGS = {"none": lib.HURRAY_PACKING_NONE, "padded": lib.HURRAY_PACKING_PADDED,
            "lsb_first": lib.HURRAY_PACKING_LSB_FIRST, "ggml_split": lib.HURRAY_PACKING_GGML_SPLIT,
            "dense": lib.HURRAY_PACKING_DENSE, "slots": lib.HURRAY_PACKING_SLOTS}
GGML_TYPES = {name: getattr(lib, "HURRAY_GGML_" + name.upper()) for name in (
    "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq2_xxs",
    "iq2_xs", "iq3_xxs", "iq1_s", "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "iq1_m", "tq1_0", "tq2_0",
    "mxfp4", "nvfp4", "q1_0", "q2_0")}
ARITHMETIC = ("float16", "bfloat16", "float32", "float64")

# The widths the dtype table gives (bits per element).
BITS = {"bool": 8, "int8": 8, "int16": 16, "int32": 32, "int64": 64, "uint8": 8, "uint16": 16,
        "uint32": 32, "uint64": 64, "int1": 1, "int2": 2, "int3": 3, "int4": 4, "int5": 5, "int6": 6,
        "int7": 7, "uint1": 1, "uint2": 2, "uint3": 3, "uint4": 4, "uint5": 5, "uint6": 6, "uint7": 7,
        "float16": 16, "bfloat16": 16, "float32": 32, "float64": 64, "float8_e3m4": 8,
        "float8_e4m3": 8, "float8_e4m3b11fnuz": 8, "float8_e4m3fn": 8, "float8_e4m3fnuz": 8,
        "float8_e5m2": 8, "float8_e5m2fnuz": 8, "float8_e8m0fnu": 8, "float6_e2m3fn": 6,
        "float6_e3m2fn": 6, "float4_e2m1fn": 4}


def is_int(dtype: str) -> bool:
    return dtype.startswith("int") or dtype.startswith("uint")


def is_signed(dtype: str) -> bool:
    return dtype.startswith("int")


@dataclass
class Stored:
    dtype: str
    shape: tuple[int, ...]
    buffer: int = 0
    offset: int = 0
    strides: tuple[int, ...] | None = None  # None: row-major (elements addressing only)
    big_endian: bool = False
    # elements addressing: packing none/padded/lsb_first/ggml_split (None: the default)
    packing: str | None = None
    # words addressing (container_bits != 0): dense or slots
    container_bits: int = 0
    packed_axis: int = 0
    chunk_containers: int = 0
    planar: bool = False
    chunk_stride: int = 0
    order: tuple[int, ...] = ()
    swizzled: bool = False
    code_offset: int = 0
    codebook: int = 0
    no_nan: bool = False  # value rule e8m0_no_nan

    @property
    def words(self) -> bool:
        return self.container_bits != 0


@dataclass
class Constant:
    dtype: str
    value_bits: int


@dataclass
class Step:
    form: str
    arithmetic: str
    shape: tuple[int, ...]
    x: int
    scale: int
    offset: int = 0
    blocks: tuple[int, ...] | None = None  # None: every block 1
    ragged: bool = False
    indexed_axis: int = 0
    group_index: int = 0


@dataclass
class Ggml:
    ggml_type: str
    shape: tuple[int, ...]
    buffer: int = 0
    offset: int = 0


@dataclass
class Bits:
    shape: tuple[int, ...]
    inputs: tuple[int, ...]
    shifts: tuple[int, ...]
    offset: int = 0


@dataclass
class Gather:
    shape: tuple[int, ...]
    x: int
    index: int
    axis: int


Node = Stored | Constant | Step | Ggml | Bits | Gather


@dataclass
class Graph:
    shape: tuple[int, ...]
    nodes: list[Node]
    result_dtype: str | None = None
    name: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def constant_bits(dtype: str, value: float | int) -> int:
    """The little-endian bytes of `value` in `dtype`, as the builder takes them."""
    if dtype in ("int32", "int64"):
        return int(np.array(value, dtype=dtype).view(f"uint{np.dtype(dtype).itemsize * 8}"))
    import ml_dtypes

    np_dtype = {"bfloat16": ml_dtypes.bfloat16}.get(dtype, dtype)
    arr = np.array(value, dtype=np.float64).astype(np_dtype)
    return int.from_bytes(arr.tobytes(), "little")


def row_major(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


# ---- building through C -----------------------------------------------------------


class Built:
    """A descriptor handle and buffer list made from a Graph and its buffers
    (the buffers are kept alive here); close() destroys both."""

    def __init__(self, graph: Graph, buffers: Sequence[bytes]) -> None:
        self.graph = graph
        self._keep = [ffi.from_buffer(bytes(b)) if len(b) else ffi.new("uint8_t[1]") for b in buffers]
        self._lens = [len(b) for b in buffers]
        box = ffi.new("HurrayDescriptor **")
        shape = ffi.new("uint64_t[]", list(graph.shape) or [0])
        check(lib.hurray_descriptor_new(dtype_code("float32"), len(graph.shape), shape, box))
        self.desc = box[0]
        try:
            for i, node in enumerate(graph.nodes):
                got = _add(self.desc, node)
                assert got == i, f"node {i} was added as {got}"
            if graph.result_dtype is not None:
                check(lib.hurray_descriptor_set_result_dtype(self.desc, dtype_code(graph.result_dtype)))
            lbox = ffi.new("HurrayBufferList **")
            check(lib.hurray_buffer_list_new(lbox))
            self.list = lbox[0]
            buf = ffi.new("HurrayBuffer **")
            for keep, n in zip(self._keep, self._lens):
                check(lib.hurray_buffer_from_ptr(ffi.cast("void *", keep), n, ffi.NULL, ffi.NULL, buf))
                check(lib.hurray_buffer_list_push(self.list, buf))
        except BaseException:
            lib.hurray_descriptor_destroy(box)
            raise

    def validate(self) -> None:
        check(lib.hurray_descriptor_validate(self.desc))

    def encode(self) -> bytes:
        out = ffi.new("uint8_t[]", lib.HURRAY_MAX_DESCRIPTOR_V2_LEN)
        n = ffi.new("uint64_t *")
        check(lib.hurray_descriptor_encode(self.desc, out, lib.HURRAY_MAX_DESCRIPTOR_V2_LEN, n))
        return bytes(ffi.buffer(out, n[0]))

    def rows(self) -> int:
        return self.graph.shape[0] if self.graph.shape else 1

    def dequantize(self, out_dtype: str = "float32", first_row: int | None = None,
                   row_count: int | None = None, out_len: int | None = None) -> np.ndarray:
        """hurray_dequantize (or _rows); the output as float32 values or the
        16-bit outputs' bits (uint16)."""
        size = 4 if out_dtype == "float32" else 2
        per_row = int(np.prod(self.graph.shape[1:], dtype=np.int64)) if self.graph.shape else 1
        rows = self.rows() if first_row is None else row_count
        count = rows * per_row
        np_out = np.full(count, 0x5A5A5A5A if size == 4 else 0x5A5A, dtype=np.uint32 if size == 4 else np.uint16)
        ptr = ffi.cast("void *", np_out.ctypes.data)
        nbytes = count * size if out_len is None else out_len
        if first_row is None:
            check(lib.hurray_dequantize(self.desc, self.list, dtype_code(out_dtype), ptr, nbytes))
        else:
            check(lib.hurray_dequantize_rows(self.desc, self.list, dtype_code(out_dtype), first_row,
                                             row_count, ptr, nbytes))
        return np_out.view(np.float32) if size == 4 else np_out

    def close(self) -> None:
        box = ffi.new("HurrayDescriptor **", self.desc)
        lib.hurray_descriptor_destroy(box)
        lbox = ffi.new("HurrayBufferList **", self.list)
        lib.hurray_buffer_list_destroy(lbox)

    def __enter__(self) -> Built:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _add(desc: Any, node: Node) -> int:
    out = ffi.new("uint32_t *")
    if isinstance(node, Stored):
        shape = ffi.new("uint64_t[]", list(node.shape) or [0])
        check(lib.hurray_descriptor_add_stored(desc, dtype_code(node.dtype), len(node.shape), shape,
                                               node.buffer, node.offset, out))
        i = out[0]
        if node.big_endian:
            check(lib.hurray_descriptor_stored_set_byte_order(desc, i, lib.HURRAY_BYTE_ORDER_BIG))
        if node.words:
            order = ffi.new("uint8_t[]", list(node.order) or [0])
            packing = PACKINGS[node.packing or "dense"]
            check(lib.hurray_descriptor_stored_set_words(
                desc, i, node.container_bits, node.packed_axis, packing, node.chunk_containers,
                lib.HURRAY_SLOTS_PLANAR if node.planar else 0, node.chunk_stride, len(node.order),
                order if node.order else ffi.NULL))
        elif node.packing is not None:
            check(lib.hurray_descriptor_stored_set_elements(desc, i, PACKINGS[node.packing]))
        if node.strides is not None:
            strides = ffi.new("int64_t[]", list(node.strides) or [0])
            check(lib.hurray_descriptor_stored_set_strides(desc, i, len(node.strides), strides))
        if node.swizzled:
            check(lib.hurray_descriptor_stored_set_layout(desc, i, lib.HURRAY_PART_LAYOUT_SWIZZLED_128X4))
        if node.code_offset or node.codebook or node.no_nan:
            rule = lib.HURRAY_VALUE_RULE_E8M0_NO_NAN if node.no_nan else lib.HURRAY_VALUE_RULE_STANDARD
            check(lib.hurray_descriptor_stored_set_codes(desc, i, node.code_offset, node.codebook, rule))
        return i
    if isinstance(node, Constant):
        check(lib.hurray_descriptor_add_constant(desc, dtype_code(node.dtype), node.value_bits, out))
        return out[0]
    if isinstance(node, Step):
        shape = ffi.new("uint64_t[]", list(node.shape) or [0])
        check(lib.hurray_descriptor_add_step(desc, FORMS[node.form], dtype_code(node.arithmetic),
                                             len(node.shape), shape, node.x, node.scale, node.offset,
                                             out))
        i = out[0]
        blocks = list(node.blocks) if node.blocks is not None else [1] * len(node.shape)
        if node.group_index:
            blocks[node.indexed_axis] = 0
        if node.blocks is not None or node.ragged or node.group_index:
            b = ffi.new("uint64_t[]", blocks or [0])
            check(lib.hurray_descriptor_step_set_groups(
                desc, i, len(node.shape), b, lib.HURRAY_STEP_RAGGED if node.ragged else 0,
                node.indexed_axis, node.group_index))
        return i
    if isinstance(node, Ggml):
        shape = ffi.new("uint64_t[]", list(node.shape))
        check(lib.hurray_descriptor_add_ggml(desc, GGML_TYPES[node.ggml_type], len(node.shape), shape,
                                             node.buffer, node.offset, out))
        return out[0]
    if isinstance(node, Bits):
        shape = ffi.new("uint64_t[]", list(node.shape))
        inputs = ffi.new("uint32_t[]", list(node.inputs))
        shifts = ffi.new("uint32_t[]", list(node.shifts))
        check(lib.hurray_descriptor_add_bits(desc, len(node.shape), shape, len(node.inputs), inputs,
                                             shifts, node.offset, out))
        return out[0]
    assert isinstance(node, Gather)
    shape = ffi.new("uint64_t[]", list(node.shape))
    check(lib.hurray_descriptor_add_gather(desc, len(node.shape), shape, node.x, node.index, node.axis,
                                           out))
    return out[0]
