"""Random version-2 graphs over random bytes, for the dequantizer's tests.

random_case(rng) makes a Graph (graph_spec.py) in canonical order and its
buffers: stored nodes of every dtype in every addressing (elements with
strides that are transposed, negative or gapped; words dense and slots,
planar and interleaved, chunk strides, slot orders, big-endian
containers; the swizzled layout; codebooks, code offsets, the E8M0 value
rules), constants, steps of every form and arithmetic with blocks
(ragged), an indexed axis and nested parameters, bits, gathers and GGML
nodes. Each buffer is exactly as long as its nodes reach, plus a few
bytes, so that the C side reads out of bounds only where it must not.
Index nodes (group indices, gather indices) hold valid values, written
with encode_codes; everything else is random bytes.
"""
from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .graph_spec import (ARITHMETIC, BITS, Bits, Constant, Gather, Ggml, Graph, Node, Stored, Step,
                         constant_bits, is_int)

INT_DTYPES = [f"uint{b}" for b in range(1, 8)] + [f"int{b}" for b in range(1, 8)] + [
    "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2",
                "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e3m4", "float8_e4m3",
                "float8_e4m3b11fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
                "float4_e2m1fn"]
# The GGML types gguf-py dequantizes (the oracle's reference for them).
GGML_ORACLE_TYPES = {"q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24),
                     "q8_0": (32, 34), "q2_k": (256, 84), "q3_k": (256, 110), "q4_k": (256, 144),
                     "q5_k": (256, 176), "q6_k": (256, 210), "iq4_nl": (32, 18), "mxfp4": (32, 17),
                     "tq2_0": (256, 66), "iq4_xs": (256, 136), "nvfp4": (64, 36)}


# ---- where a stored node's codes lie (the inverse of graph_oracle.stored_codes) ----


def _locate(node: Stored, e: int) -> tuple[int, int]:
    b, w = BITS[node.dtype], node.container_bits
    if node.packing == "slots":
        per, k, cs = w // b, node.chunk_containers, node.chunk_stride
        chunk, r = divmod(e, per * k)
        container, slot = (r % k, r // k) if node.planar else (r // per, r % per)
        return chunk * cs + container, b * node.order[slot]
    return e * b // w, e * b % w


def _last_container(node: Stored, n: int) -> int:
    b, w = BITS[node.dtype], node.container_bits
    last = 0
    for e in range(n):
        j, t = _locate(node, e)
        last = max(last, j + (1 if t + b > w else 0))
    return last


def _span(dims: list[int], strides: list[int]) -> tuple[int, int]:
    lo = sum(min(0, (n - 1) * s) for n, s in zip(dims, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(dims, strides))
    return lo, hi


def byte_reach(node: Stored) -> tuple[int, int]:
    """(lo, hi): the bytes the node's codes lie in, [offset + lo, offset + hi)."""
    b, shape = BITS[node.dtype], list(node.shape)
    count = math.prod(shape)
    if count == 0:
        return 0, 0
    if node.words:
        dims = list(shape)
        dims[node.packed_axis] = _last_container(node, shape[node.packed_axis]) + 1
        lo, hi = _span(dims, list(node.strides or ()))
        unit = node.container_bits // 8
        return lo * unit, (hi + 1) * unit
    packing = node.packing or ("none" if b >= 8 else "lsb_first" if b in (1, 2, 4) else "padded")
    if node.swizzled:
        rows, cols = shape
        tiles = -(-rows // 128) * (-(-cols // 4))
        return 0, tiles * 512 * (b // 8)
    if packing == "ggml_split":
        return 0, count // 2
    strides = list(node.strides) if node.strides is not None else _row_major(shape)
    lo, hi = _span(shape, strides)
    if packing == "padded":
        return lo, hi + 1
    if b >= 8:
        return lo * (b // 8), (hi + 1) * (b // 8)
    return (lo * b) // 8, -(-((hi + 1) * b) // 8)


def _row_major(shape: list[int]) -> list[int]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= max(n, 1)
    return list(reversed(out))


def encode_codes(node: Stored, codes: np.ndarray, buf: bytearray) -> None:
    """Writes codes (row-major over the node's shape) into buf where the
    node's addressing puts them (elements addressing without swizzle, or
    words), leaving every other bit as it is."""
    b = BITS[node.dtype]
    shape = list(node.shape)
    flat = codes.ravel().tolist()
    for f, code in enumerate(flat):
        idx = np.unravel_index(f, shape) if shape else ()
        code = int(code) & ((1 << b) - 1)
        if node.words:
            w, p = node.container_bits, node.packed_axis
            j, t = _locate(node, int(idx[p]))
            rest = sum(int(idx[k]) * node.strides[k] for k in range(len(shape)) if k != p)
            unit = w // 8
            pieces = [(node.offset + unit * (rest + j * node.strides[p]), t, min(b, w - t))]
            if t + b > w:
                pieces.append((node.offset + unit * (rest + (j + 1) * node.strides[p]), 0, t + b - w))
            shift = 0
            for at, bit, width in pieces:
                word = int.from_bytes(buf[at:at + unit], "big" if node.big_endian else "little")
                part = (code >> shift) & ((1 << width) - 1)
                word = (word & ~(((1 << width) - 1) << bit)) | (part << bit)
                buf[at:at + unit] = word.to_bytes(unit, "big" if node.big_endian else "little")
                shift += width
            continue
        strides = list(node.strides) if node.strides is not None else _row_major(shape)
        e = sum(int(idx[k]) * strides[k] for k in range(len(shape)))
        packing = node.packing or ("none" if b >= 8 else "lsb_first" if b in (1, 2, 4) else "padded")
        if packing == "padded":
            buf[node.offset + e] = code
        elif b >= 8:
            unit = b // 8
            at = node.offset + e * unit
            buf[at:at + unit] = code.to_bytes(unit, "big" if node.big_endian else "little")
        else:
            bit = 8 * node.offset + e * b
            byte, shift = divmod(bit, 8)
            buf[byte] = (buf[byte] & ~(((1 << b) - 1) << shift)) | (code << shift)


# ---- the builder of random graphs -------------------------------------------------------


class Builder:
    """Nodes in canonical order (a parent reserves its index, then its
    children are emitted in field order) and the buffers they use."""

    def __init__(self, rng: np.random.Generator, allow_ggml: bool = True) -> None:
        self.rng = rng
        self.nodes: list[Node | None] = []
        self.buffers: list[bytearray] = []
        self.allow_ggml = allow_ggml

    def reserve(self) -> int:
        if len(self.nodes) >= 16:
            raise _Retry()
        self.nodes.append(None)
        return len(self.nodes) - 1

    def room(self) -> int:
        return 16 - len(self.nodes)

    def coin(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, items: list[Any]) -> Any:
        return items[int(self.rng.integers(len(items)))]

    # -- stored nodes --

    def layout_strides(self, dims: list[int]) -> list[int]:
        """Strides for dims: a random axis order, sometimes gaps, sometimes negative."""
        rank = len(dims)
        order = list(self.rng.permutation(rank)) if self.coin(0.4) else list(range(rank))
        strides = [0] * rank
        step = 1
        for k in reversed(order):
            strides[k] = step
            step *= max(dims[k], 1) + (int(self.rng.integers(0, 3)) if self.coin(0.25) else 0)
        for k in range(rank):
            if self.coin(0.15):
                strides[k] = -strides[k]
            if dims[k] == 1 and self.coin(0.3):
                strides[k] = int(self.rng.integers(-5, 6))  # any stride for an axis of one
        return strides

    def stored(self, shape: tuple[int, ...], dtype: str | None = None, *, index_values: np.ndarray | None = None,
               plain: bool = False, unsigned_only: bool = False) -> int:
        """A stored node of this shape (emitted at the next index), its
        buffer random bytes, or index_values written where they lie."""
        i = self.reserve()
        rng = self.rng
        if dtype is None:
            pool = [d for d in INT_DTYPES if not unsigned_only or d.startswith("uint")]
            if not unsigned_only:
                pool = pool + FLOAT_DTYPES
            dtype = self.pick(pool)
        b = BITS[dtype]
        node = Stored(dtype, tuple(shape))
        rank = len(shape)
        count = math.prod(shape)
        choice = rng.random()
        if plain or rank == 0:
            node.strides = tuple(self.layout_strides(list(shape))) if rank and not plain else None
            if b < 8 and b not in (1, 2, 4):
                node.packing = "padded"
        elif choice < 0.45 and rank >= 1:
            # words addressing
            w = self.pick([c for c in (8, 16, 32, 64) if c >= b])
            node.container_bits = w
            node.packed_axis = int(rng.integers(rank))
            if self.coin(0.5):
                node.packing = "dense"
            else:
                node.packing = "slots"
                per = w // b
                node.chunk_containers = int(self.pick([1, 1, 2, 3, 4]))
                node.planar = node.chunk_containers > 1 and self.coin(0.5)
                node.chunk_stride = node.chunk_containers + (int(rng.integers(0, 3)) if self.coin(0.3) else 0)
                r = rng.random()
                order = list(range(per))
                if r < 0.3:
                    order = order[::-1]
                elif r < 0.6:
                    order = list(rng.permutation(per))
                node.order = tuple(int(v) for v in order)
            node.big_endian = w > 8 and self.coin(0.2)
            dims = list(shape)
            dims[node.packed_axis] = _last_container(node, shape[node.packed_axis]) + 1
            node.strides = tuple(self.layout_strides(dims))
        elif choice < 0.55 and rank == 2 and b >= 8:
            node.swizzled = True
            node.strides = (0, 0)
        elif choice < 0.6 and b == 4 and shape[-1] % 32 == 0:
            node.packing = "ggml_split"
        else:
            node.strides = tuple(self.layout_strides(list(shape)))
            if b < 8:
                node.packing = "padded" if (b not in (1, 2, 4) or self.coin(0.3)) else "lsb_first"
        if b > 8 and not node.words and not node.swizzled:
            node.big_endian = self.coin(0.15)
        if is_int(dtype) and index_values is None and not unsigned_only and self.coin(0.3):
            node.code_offset = int(rng.integers(-300, 300))
        if dtype == "float8_e8m0fnu":
            node.no_nan = self.coin(0.5)
        self.nodes[i] = node
        # the codebook, a later node
        if (dtype.startswith("uint") and index_values is None and b <= 8 and self.room() >= 2
                and self.coin(0.25) and not unsigned_only):
            node.code_offset = 0
            node.codebook = self.codebook(1 << b)
        lo, hi = byte_reach(node)
        extra = int(rng.integers(0, 3))
        node.offset = -lo + extra
        size = node.offset + hi + int(rng.integers(0, 3))
        data = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
        if index_values is not None:
            encode_codes(node, index_values, data)
        node.buffer = len(self.buffers)
        self.buffers.append(data)
        return i

    def codebook(self, entries: int) -> int:
        n = entries + int(self.rng.integers(0, 3))
        if self.room() >= 3 and self.coin(0.3):
            # a codebook that is itself a step: MUL of a float16 table by a constant
            i = self.reserve()
            x = self.stored((n,), self.pick(["float16", "float32", "int8"]), plain=True)
            s = self.constant()
            self.nodes[i] = Step("mul", self.pick(list(ARITHMETIC)), (n,), x, s)
            return i
        return self.stored((n,), self.pick(["float32", "float16", "bfloat16", "float64", "int8"]), plain=True)

    def constant(self) -> int:
        i = self.reserve()
        dtype = self.pick(["float16", "bfloat16", "float32", "float64", "int32", "int64"])
        if self.coin(0.1):
            bits = int(self.rng.integers(0, 1 << min(BITS[dtype], 63)))
        elif dtype.startswith("int"):
            bits = constant_bits(dtype, int(self.rng.integers(-1000, 1000)))
        else:
            bits = constant_bits(dtype, float(self.rng.standard_normal() * 4))
        self.nodes[i] = Constant(dtype, bits)
        return i

    # -- value nodes --

    def value(self, shape: tuple[int, ...], depth: int) -> int:
        """Any node whose value has this shape's element count and, for
        kinds that need it, this shape."""
        r = self.rng.random()
        count = math.prod(shape)
        if depth > 0 and self.room() >= 4 and r < 0.35:
            return self.step(shape, depth - 1)
        if depth > 0 and self.room() >= 3 and r < 0.45 and len(shape) >= 1 and count > 0:
            return self.gather(shape, depth - 1)
        if self.room() >= 3 and r < 0.52 and count > 0:
            return self.bits(shape)
        if (self.allow_ggml and r < 0.58 and len(shape) >= 1 and shape[-1] % 32 == 0 and count > 0):
            return self.ggml(shape)
        if r < 0.65 and count > 1 and len(shape) >= 1:
            # a reshape: the same elements in another shape
            return self.stored(_reshape(self.rng, shape))
        return self.stored(shape)

    def ggml(self, shape: tuple[int, ...]) -> int:
        names = [n for n, (e, _) in GGML_ORACLE_TYPES.items() if shape[-1] % e == 0]
        if not names:
            return self.stored(shape)
        name = self.pick(names)
        i = self.reserve()
        elements, nbytes = GGML_ORACLE_TYPES[name]
        offset = int(self.rng.integers(0, 4))
        size = offset + math.prod(shape) // elements * nbytes
        data = bytearray(self.rng.integers(0, 256, size + int(self.rng.integers(0, 3)),
                                           dtype=np.uint8).tobytes())
        self.nodes[i] = Ggml(name, shape, buffer=len(self.buffers), offset=offset)
        self.buffers.append(data)
        return i

    def bits(self, shape: tuple[int, ...]) -> int:
        i = self.reserve()
        count = int(self.rng.integers(1, min(4, self.room()) + 1))
        inputs, shifts, at = [], [], 0
        for _ in range(count):
            d = self.pick(["uint1", "uint2", "uint3", "uint4", "uint8", "uint16"])
            inputs.append(self.stored(shape, d, unsigned_only=True))
            if self.coin(0.1) or at + BITS[d] > 63:
                shifts.append(int(self.rng.integers(0, 63 - BITS[d] + 1)))
            else:
                shifts.append(at)
            at += BITS[d]
        self.nodes[i] = Bits(shape, tuple(inputs), tuple(shifts), int(self.rng.integers(-40, 40)))
        return i

    def gather(self, shape: tuple[int, ...], depth: int) -> int:
        i = self.reserve()
        axis = int(self.rng.integers(len(shape)))
        n = int(self.rng.integers(1, shape[axis] + 3))
        xshape = list(shape)
        xshape[axis] = n
        x = self.value_exact(tuple(xshape), depth)
        values = self.rng.integers(0, n, shape[axis])
        holds = [d for d in ("int32", "int64", "uint8", "uint16", "int8", "uint4", "uint7")
                 if (1 << (BITS[d] - (1 if d.startswith("int") else 0))) > n]
        index = self.stored((shape[axis],), self.pick(holds), index_values=values)
        self.nodes[i] = Gather(shape, x, index, axis)
        return i

    def value_exact(self, shape: tuple[int, ...], depth: int) -> int:
        """A node of exactly this shape (a gather's x)."""
        if depth > 0 and self.room() >= 4 and self.coin(0.3):
            return self.step(shape, depth - 1)
        return self.stored(shape)

    def step(self, shape: tuple[int, ...], depth: int) -> int:
        i = self.reserve()
        rng = self.rng
        rank = len(shape)
        form = self.pick(["mul", "div", "sub_mul", "mul_add", "mul_sub"])
        t = self.pick(list(ARITHMETIC))
        blocks, ragged = [], False
        for n in shape:
            r = rng.random()
            if r < 0.3:
                b = 1
            elif r < 0.55:
                b = max(n, 1)
            else:
                b = int(rng.integers(1, max(n, 1) + 2))
            ragged |= n % b != 0
            blocks.append(b)
        ragged |= self.coin(0.1)
        indexed = rank >= 1 and self.coin(0.2) and self.room() >= 5
        axis = int(rng.integers(rank)) if indexed else 0
        groups = int(rng.integers(1, 5))
        grid = [-(-n // b) for n, b in zip(shape, blocks)]
        if indexed:
            grid[axis] = groups
            blocks[axis] = 0
        x = self.value(shape, depth)
        scale = self.parameter(tuple(grid), depth)
        offset = self.parameter(tuple(grid), depth) if form in ("sub_mul", "mul_add", "mul_sub") else 0
        if indexed and all(isinstance(self.nodes[p], Constant) for p in (scale, offset) if p):
            # the group count comes from a parameter with a grid: make the scale one
            pass
        gidx = 0
        if indexed:
            values = rng.integers(0, groups, shape[axis])
            gidx = self.stored((shape[axis],), self.pick(["int32", "int64", "uint8", "int16", "uint2"]),
                               index_values=values)
        step = Step(form, t, tuple(shape), x, scale, offset, tuple(blocks), ragged,
                    axis if indexed else 0, gidx)
        self.nodes[i] = step
        return i

    def parameter(self, grid: tuple[int, ...], depth: int) -> int:
        r = self.rng.random()
        if r < 0.2 or self.room() < 2:
            return self.constant()
        if depth > 0 and self.room() >= 5 and r < 0.4:
            return self.step(grid, depth - 1)
        return self.stored(grid, self.pick(FLOAT_DTYPES + ["int8", "uint4", "int32", "uint8"]))


def _reshape(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    count = math.prod(shape)
    choices = [(count,)]
    for d in range(2, count + 1):
        if count % d == 0:
            choices.append((count // d, d))
    return choices[int(rng.integers(len(choices)))]


def _fix_indexed(b: Builder) -> None:
    """A step with an indexed axis whose parameters are both constants has
    no group count: such a step gets its indexed axis taken away."""
    for node in b.nodes:
        if isinstance(node, Step) and node.group_index:
            params = [node.scale] + ([node.offset] if node.offset else [])
            if all(isinstance(b.nodes[p], Constant) for p in params):
                raise _Retry()


class _Retry(Exception):
    pass


def random_shape(rng: np.random.Generator) -> tuple[int, ...]:
    """Mostly small; one in eight spans several tiles of 4096 elements."""
    rank = int(rng.choice([0, 1, 1, 2, 2, 2, 3, 4]))
    big = rank >= 1 and rng.random() < 0.125
    dims = []
    for _ in range(rank):
        dims.append(int(rng.choice([1, 2, 3, 5, 7, 8, 16, 31, 32, 33, 64])))
    if big:
        dims[-1] = int(rng.choice([256, 512, 1000, 4096, 5000]))
        if rank >= 2:
            dims[0] = int(rng.choice([3, 8, 9]))
    limit = 40000 if big else 3000
    while math.prod(dims) > limit:
        dims[int(np.argmax(dims))] //= 2
    return tuple(dims)


def random_case(rng: np.random.Generator, make: Callable[[Builder, tuple[int, ...]], int] | None = None,
                allow_ggml: bool = True) -> tuple[Graph, list[bytes]]:
    while True:
        shape = random_shape(rng)
        b = Builder(rng, allow_ggml)
        try:
            node0_shape = shape if rng.random() < 0.7 or len(shape) == 0 else _reshape(rng, shape)
            if math.prod(shape) == 0:
                node0_shape = shape
            if make is not None:
                make(b, node0_shape)
            elif rng.random() < 0.85:
                b.step(node0_shape, depth=int(rng.integers(0, 3)))
            else:
                b.value(node0_shape, depth=2)
            _fix_indexed(b)
        except _Retry:
            continue
        nodes = [n for n in b.nodes]
        assert all(n is not None for n in nodes)
        return Graph(shape, nodes), [bytes(x) for x in b.buffers]  # type: ignore[arg-type]


# ---- the common shapes, with their parameters varied --------------------------------


def packed_stored(b: Builder, shape: tuple[int, ...], dtype: str, *, index_values: np.ndarray | None = None
                  ) -> int:
    """A stored node in a packed layout the fast readers serve: words along
    the last axis or another one, dense or slots (interleaved or planar,
    chunk strides), containers contiguous along the packed axis or
    transposed (GPTQ's qweight), or elements (bytes, nibbles)."""
    rng = b.rng
    i = b.reserve()
    bits = BITS[dtype]
    rank = len(shape)
    node = Stored(dtype, shape)
    if rng.random() < 0.8:
        w = b.pick([c for c in (8, 16, 32, 32, 32, 64) if c >= bits])
        node.container_bits = w
        node.packed_axis = rank - 1 if rng.random() < 0.6 else int(rng.integers(rank))
        per = w // bits
        if rng.random() < 0.5:
            node.packing = "dense"
        else:
            node.packing = "slots"
            r = rng.random()
            node.chunk_containers = 1 if r < 0.6 else int(b.pick([2, 4, 16]))
            node.planar = node.chunk_containers > 1 and rng.random() < 0.7
            node.chunk_stride = node.chunk_containers + (int(rng.integers(1, 3)) if rng.random() < 0.2 else 0)
            order = list(range(per))
            r = rng.random()
            if r < 0.3:
                order = order[::-1]
            elif r < 0.5 and per == 8:
                order = [0, 4, 1, 5, 2, 6, 3, 7]
            elif r < 0.6:
                order = list(rng.permutation(per))
            node.order = tuple(int(v) for v in order)
        node.big_endian = w > 8 and rng.random() < 0.1
        dims = list(shape)
        dims[node.packed_axis] = _last_container(node, shape[node.packed_axis]) + 1
        strides = _row_major(dims)
        if rng.random() < 0.4 and rank >= 2:
            # transposed: the packed axis outermost in memory (GPTQ's qweight)
            order_axes = [node.packed_axis] + [k for k in range(rank) if k != node.packed_axis]
            step = 1
            for k in reversed(order_axes):
                strides[k] = step
                step *= dims[k]
        node.strides = tuple(strides)
    else:
        node.strides = tuple(_row_major(list(shape)))
        if bits < 8:
            node.packing = "lsb_first" if bits in (1, 2, 4) and rng.random() < 0.7 else "padded"
    b.nodes[i] = node
    lo, hi = byte_reach(node)
    node.offset = -lo + int(rng.integers(0, 3))
    data = bytearray(rng.integers(0, 256, node.offset + hi + int(rng.integers(0, 2)), dtype=np.uint8).tobytes())
    if index_values is not None:
        encode_codes(node, index_values, data)
    node.buffer = len(b.buffers)
    b.buffers.append(data)
    return i


def packed_case(rng: np.random.Generator) -> tuple[Graph, list[bytes]]:
    """A step over packed codes with per-row parameters blocked along the
    last axis: GPTQ, AWQ, compressed-tensors, MLX, bitsandbytes, FP8 and
    microscaling shapes with their sizes, widths, orders and types varied."""
    while True:
        b = Builder(rng)
        try:
            rows = int(rng.choice([1, 3, 8, 17, 64]))
            gs = int(rng.choice([8, 16, 32, 64, 128]))
            cols = gs * int(rng.choice([1, 2, 3, 8, 33]))
            shape = (rows, cols) if rng.random() < 0.85 else (2, rows, cols)
            if rng.random() < 0.1:
                shape = (rows * cols,)  # bitsandbytes: the flat tensor
            last = len(shape) - 1
            i = b.reserve()
            form = b.pick(["mul", "sub_mul", "mul_add", "sub_mul", "mul"])
            t = b.pick(["float16", "float16", "bfloat16", "float32", "float32", "float64"])
            code = b.pick(["uint4", "uint4", "int4", "uint8", "uint2", "uint3", "uint1", "uint5", "uint6",
                           "int8", "float4_e2m1fn", "float8_e4m3fn", "float6_e2m3fn"])
            x = packed_stored(b, shape, code)
            if code.startswith("uint") and rng.random() < 0.3:
                b.nodes[x].codebook = b.codebook(1 << BITS[code])  # type: ignore[union-attr]
            grid = list(shape)
            grid[last] = -(-shape[last] // gs)
            blocks = [1] * len(shape)
            blocks[last] = gs
            if rng.random() < 0.15:
                blocks[0] = shape[0]
                grid[0] = 1  # per column group over every row
            sdtype = b.pick(["float16", "bfloat16", "float32", "float8_e8m0fnu", "float8_e4m3fn"])
            if rng.random() < 0.2:
                # a nested scale: e4m3 scales times a per-tensor float32 (NVFP4)
                si = b.reserve()
                sx = b.stored(tuple(grid), "float8_e4m3fn", plain=True)
                ss = b.stored(tuple([1] * len(grid)), "float32", plain=True)
                b.nodes[si] = Step(b.pick(["mul", "div"]), "float32", tuple(grid), sx, ss,
                                   blocks=tuple(grid))
                scale = si
            else:
                scale = b.stored(tuple(grid), sdtype, plain=rng.random() < 0.6)
            offset = 0
            if form != "mul":
                if code.startswith("uint") and rng.random() < 0.5:
                    offset = packed_stored(b, tuple(grid), code)
                else:
                    offset = b.stored(tuple(grid), b.pick(["float16", "bfloat16", "float32"]),
                                      plain=rng.random() < 0.6)
            b.nodes[i] = Step(form, t, shape, x, scale, offset, tuple(blocks), False)
        except _Retry:
            continue
        nodes = list(b.nodes)
        return Graph(shape, nodes), [bytes(x) for x in b.buffers]  # type: ignore[arg-type]
