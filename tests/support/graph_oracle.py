"""An independent numpy model of what a version-2 descriptor means
(v2-spec.md § 2, "What a value is"), written from the spec and not from
the C code: the test oracle of the graph dequantizer (not part of the
package).

Every value is held as a float64 (exact for every stored, constant and
step value, since each is a float16, bfloat16, float32, float64, small
float or an integer that goes through float64 by the spec's own rule).
The roundings to float16 and bfloat16 are computed here from float64
directly (scaling by a power of two and numpy's round-half-even), not by
the bit manipulation the C code uses; the small floats are decoded by
ml_dtypes, GGML blocks by gguf-py. NaN results follow the x86 rule (the
first operand's NaN, else the second's, else the negative default NaN);
comparisons take a NaN as a NaN of its sign (the C tests compare the NaN
payloads of the scalar and vector paths with each other).
"""
from __future__ import annotations

import math
from typing import Sequence

import ml_dtypes
import numpy as np

from .graph_spec import BITS, Bits, Constant, Gather, Ggml, Graph, Stored, Step, is_int, is_signed

_FLOATS = {
    "float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64,
    "float8_e3m4": ml_dtypes.float8_e3m4, "float8_e4m3": ml_dtypes.float8_e4m3,
    "float8_e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
    "float8_e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "float8_e5m2": ml_dtypes.float8_e5m2,
    "float8_e5m2fnuz": ml_dtypes.float8_e5m2fnuz, "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn, "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
}
_CODE_VIEW = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

# (stored significand bits, exponent bits) of the 16-bit types.
_FORMAT = {"float16": (10, 5), "bfloat16": (7, 8)}


def round_to(t: str, x: np.ndarray) -> np.ndarray:
    """float64 values rounded once, to nearest even, to type t (held as float64)."""
    x = np.asarray(x, dtype=np.float64)
    if t == "float64":
        return x
    if t == "float32":
        return x.astype(np.float32).astype(np.float64)
    mant, exp = _FORMAT[t]
    bias = (1 << (exp - 1)) - 1
    emin = 1 - bias
    with np.errstate(all="ignore"):
        a = np.abs(x)
        _, e = np.frexp(a)  # a = m * 2^e, m in [0.5, 1): the exponent is e - 1
        e = np.maximum(e.astype(np.int64) - 1, emin)
        quantum = np.ldexp(1.0, e - mant)
        r = np.round(a / quantum) * quantum  # exact division; round half to even
        r = np.where(r >= 2.0 ** (bias + 1), np.inf, r)
        r = np.where(np.isfinite(a), r, a)
    return np.copysign(r, x)


def _nan_first(a: np.ndarray, b: np.ndarray, r: np.ndarray) -> np.ndarray:
    """r with the x86 NaN rule made explicit: a's NaN, else b's."""
    r = np.where(np.isnan(b), np.copysign(np.nan, b), r)
    return np.where(np.isnan(a), np.copysign(np.nan, a), r)


def _op(t: str, op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a op b in arithmetic t: a float32 (float64) operation rounded to t."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
    work = np.float64 if t == "float64" else np.float32
    x, y = a.astype(work), b.astype(work)
    with np.errstate(all="ignore"):
        r = {"mul": x * y, "div": x / y, "add": x + y, "sub": x - y}[op].astype(np.float64)
    return round_to(t, _nan_first(a, b, r))


def form(name: str, t: str, x: np.ndarray, s: np.ndarray, o: np.ndarray | None) -> np.ndarray:
    if name == "mul":
        return _op(t, "mul", x, s)
    if name == "div":
        return _op(t, "div", x, s)
    if name == "sub_mul":
        return _op(t, "mul", _op(t, "sub", x, o), s)
    m = _op(t, "mul", x, s)
    return _op(t, "add" if name == "mul_add" else "sub", m, o)


# ---- stored codes, from the addressing rules ------------------------------------


def _units(buf: np.ndarray, at: np.ndarray, nbytes: int, big: bool) -> np.ndarray:
    """nbytes bytes at each byte offset, as unsigned numbers (uint64)."""
    v = np.zeros(at.shape, dtype=np.uint64)
    for k in range(nbytes):
        byte = buf[at + k].astype(np.uint64)
        shift = 8 * (nbytes - 1 - k) if big else 8 * k
        v |= byte << np.uint64(shift)
    return v


def _swizzled(r: np.ndarray, c: np.ndarray, cols: int) -> np.ndarray:
    padded = (cols + 3) // 4 * 4
    return ((r // 128) * (padded // 4) + c // 4) * 512 + (r % 32) * 16 + ((r // 32) % 4) * 4 + c % 4


def stored_codes(node: Stored, buf: bytes) -> np.ndarray:
    """The b-bit codes of every element, row-major over the node's shape (uint64)."""
    data = np.frombuffer(buf, dtype=np.uint8)
    b = BITS[node.dtype]
    shape = node.shape
    count = math.prod(shape)
    idx = np.indices(shape, dtype=np.int64).reshape(len(shape), count)
    mask = np.uint64((1 << b) - 1) if b < 64 else np.uint64(0xFFFFFFFFFFFFFFFF)
    if not node.words:
        packing = node.packing or ("none" if b >= 8 else "lsb_first" if b in (1, 2, 4) else "padded")
        if node.swizzled:
            at = node.offset + _swizzled(idx[0], idx[1], shape[1]) * (b // 8)
            return _units(data, at, b // 8, node.big_endian)
        if packing == "ggml_split":
            f = np.arange(count, dtype=np.int64)
            byte = data[node.offset + 16 * (f // 32) + f % 16].astype(np.uint64)
            return (byte >> (4 * ((f % 32) // 16)).astype(np.uint64)) & mask
        strides = node.strides if node.strides is not None else _row_major(shape)
        e = sum((idx[k] * strides[k] for k in range(len(shape))), np.zeros(count, dtype=np.int64))
        if packing == "padded":
            return data[node.offset + e].astype(np.uint64) & mask
        if b >= 8:
            return _units(data, node.offset + e * (b // 8), b // 8, node.big_endian)
        bit = 8 * node.offset + e * b
        return (data[bit // 8].astype(np.uint64) >> (bit % 8).astype(np.uint64)) & mask
    w, p = node.container_bits, node.packed_axis
    strides = node.strides
    assert strides is not None, "words addressing needs strides"
    e = idx[p]
    if node.packing == "slots":
        per, kk, cs = w // b, node.chunk_containers, node.chunk_stride
        chunk, r = e // (per * kk), e % (per * kk)
        if node.planar:
            container, slot = r % kk, r // kk
        else:
            container, slot = r // per, r % per
        j = chunk * cs + container
        t = b * np.asarray(node.order, dtype=np.int64)[slot]
    else:
        j, t = (e * b) // w, (e * b) % w
    rest = sum((idx[k] * strides[k] for k in range(len(shape)) if k != p), np.zeros(count, dtype=np.int64))
    at = node.offset + (w // 8) * (rest + j * strides[p])
    word = _units(data, at, w // 8, node.big_endian)
    code = word >> t.astype(np.uint64)
    straddle = t + b > w
    if straddle.any():
        nxt = _units(data, at[straddle] + (w // 8) * strides[p], w // 8, node.big_endian)
        code[straddle] |= nxt << (w - t[straddle]).astype(np.uint64)
    return code & mask


def _row_major(shape: Sequence[int]) -> tuple[int, ...]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return tuple(reversed(out))


def _integers(dtype: str, codes: np.ndarray, offset: int) -> list[int]:
    """Codes of an integer dtype as Python ints: sign-extended, plus the offset."""
    b = BITS[dtype]
    out = []
    for c in codes.tolist():
        v = int(c)
        if is_signed(dtype) and v >> (b - 1):
            v -= 1 << b
        out.append(v + offset)
    return out


def _to_float64(ints: list[int]) -> np.ndarray:
    """Python ints to float64, each rounded once (Python's int -> float)."""
    return np.array([float(v) for v in ints], dtype=np.float64)


# ---- the evaluator -----------------------------------------------------------------


class Oracle:
    def __init__(self, graph: Graph, buffers: Sequence[bytes]) -> None:
        self.graph = graph
        self.buffers = buffers
        self.memo: dict[int, np.ndarray] = {}

    def shape(self, i: int) -> tuple[int, ...]:
        node = self.graph.nodes[i]
        return () if isinstance(node, Constant) else tuple(node.shape)

    def codes(self, i: int) -> np.ndarray:
        node = self.graph.nodes[i]
        assert isinstance(node, Stored)
        return stored_codes(node, self.buffers[node.buffer]).reshape(node.shape)

    def integers(self, i: int) -> np.ndarray:
        """An index node's values (int64)."""
        node = self.graph.nodes[i]
        assert isinstance(node, Stored) and is_int(node.dtype)
        return np.array(_integers(node.dtype, self.codes(i).ravel(), node.code_offset), dtype=np.int64)

    def value(self, i: int) -> np.ndarray:
        """Node i's values (float64), in its own shape."""
        if i not in self.memo:
            self.memo[i] = self._value(i)
        return self.memo[i]

    def _value(self, i: int) -> np.ndarray:
        node = self.graph.nodes[i]
        if isinstance(node, Stored):
            return self._stored(node, self.codes(i))
        if isinstance(node, Constant):
            return np.asarray(constant_value(node), dtype=np.float64)
        if isinstance(node, Step):
            return self._step(node)
        if isinstance(node, Ggml):
            return self._ggml(node)
        if isinstance(node, Bits):
            total = np.zeros(int(np.prod(node.shape, dtype=np.int64)), dtype=object)
            for inp, shift in zip(node.inputs, node.shifts):
                total = total + np.array([int(c) << shift for c in self.codes(inp).ravel().tolist()],
                                         dtype=object)
            return _to_float64([int(v) + node.offset for v in total]).reshape(node.shape)
        assert isinstance(node, Gather)
        index = self.integers(node.index)
        return np.take(self.value(node.x), index, axis=node.axis)

    def _stored(self, node: Stored, codes: np.ndarray) -> np.ndarray:
        flat = codes.ravel()
        if node.codebook:
            book = self.value(node.codebook)
            return book[flat.astype(np.int64)].reshape(codes.shape)
        if is_int(node.dtype):
            return _to_float64(_integers(node.dtype, flat, node.code_offset)).reshape(codes.shape)
        if node.dtype == "bool":
            return (flat != 0).astype(np.float64).reshape(codes.shape)
        b = BITS[node.dtype]
        raw = flat.astype(_CODE_VIEW[max(b, 8) // 8])
        values = raw.view(_FLOATS[node.dtype]).astype(np.float64)
        if node.dtype == "float8_e8m0fnu" and node.no_nan:
            values = np.where(flat == 255, 2.0 ** 128, values)
        return values.reshape(codes.shape)

    def _param(self, ref: int, step: Step, t: str, cells: list[np.ndarray]) -> np.ndarray:
        node = self.graph.nodes[ref]
        value = round_to(t, self.value(ref))
        if isinstance(node, Constant):
            return value
        return value[tuple(cells)]

    def _step(self, step: Step) -> np.ndarray:
        t = step.arithmetic
        x = round_to(t, self.value(step.x)).reshape(step.shape)
        rank = len(step.shape)
        idx = np.indices(step.shape, dtype=np.int64)
        blocks = step.blocks or (1,) * rank
        cells = []
        for k in range(rank):
            if step.group_index and k == step.indexed_axis:
                cells.append(self.integers(step.group_index)[idx[k]])
            else:
                cells.append(idx[k] // blocks[k])
        s = self._param(step.scale, step, t, cells)
        o = self._param(step.offset, step, t, cells) if step.offset else None
        return form(step.form, t, x, s, o)

    def _ggml(self, node: Ggml) -> np.ndarray:
        from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, quants

        qtype = GGMLQuantizationType[node.ggml_type.upper()]
        elements, nbytes = GGML_QUANT_SIZES[qtype]
        count = int(np.prod(node.shape, dtype=np.int64))
        raw = np.frombuffer(self.buffers[node.buffer], dtype=np.uint8)
        blocks = raw[node.offset:node.offset + count // elements * nbytes].reshape(-1, nbytes)
        return quants.dequantize(blocks, qtype).astype(np.float64).reshape(node.shape)


def constant_value(node: Constant) -> float:
    raw = node.value_bits.to_bytes(8, "little")
    if node.dtype in ("int32", "int64"):
        return float(int.from_bytes(raw[: BITS[node.dtype] // 8], "little", signed=True))
    return float(np.frombuffer(raw[: BITS[node.dtype] // 8], dtype=_FLOATS[node.dtype])[0])


def evaluate(graph: Graph, buffers: Sequence[bytes]) -> np.ndarray:
    """The tensor's float32 values (spec § 2: node 0 as float32, a float64
    value rounded once), in the tensor's shape."""
    with np.errstate(all="ignore"):
        value = Oracle(graph, buffers).value(0)
        return value.astype(np.float32).reshape(graph.shape)


def to_16(values: np.ndarray, out_dtype: str) -> np.ndarray:
    """float32 values rounded once to float16 or bfloat16: their bits (uint16)."""
    rounded = round_to(out_dtype, values.astype(np.float64))
    np_dtype = np.float16 if out_dtype == "float16" else ml_dtypes.bfloat16
    return rounded.astype(np_dtype).view(np.uint16)


def mismatches(got: np.ndarray, want: np.ndarray, out_dtype: str = "float32") -> np.ndarray:
    """Indices where two outputs (float32 values, or the bits of float16 or
    bfloat16) differ: different bits, unless both are NaNs of one sign."""
    got, want = np.ascontiguousarray(got).ravel(), np.ascontiguousarray(want).ravel()
    if out_dtype == "float32":
        gb, wb = got.view(np.uint32), want.view(np.uint32)
        magnitude, infinity, sign = 0x7FFFFFFF, 0x7F800000, 0x80000000
    else:
        gb, wb = got.view(np.uint16), want.view(np.uint16)
        infinity = 0x7C00 if out_dtype == "float16" else 0x7F80
        magnitude, sign = 0x7FFF, 0x8000
    gnan, wnan = (gb & magnitude) > infinity, (wb & magnitude) > infinity
    same = (gb == wb) | (gnan & wnan & ((gb & sign) == (wb & sign)))
    return np.flatnonzero(~same)
