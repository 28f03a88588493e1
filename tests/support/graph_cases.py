"""The cases of the graph dequantizer's tests: random graphs and the
formats of v2-spec.md § 6, with their oracle values, and the case file the
C program tests/c/test_dequant_graph.c reads.
"""
from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from .graph_oracle import evaluate, to_16
from .graph_random import byte_reach, encode_codes, packed_case, random_case
from .graph_spec import BITS, Built, Gather, Ggml, Graph, Step, Stored

GGML_SIZES = {"q4_0": (32, 18), "q4_1": (32, 20), "q5_0": (32, 22), "q5_1": (32, 24), "q8_0": (32, 34),
              "q2_k": (256, 84), "q3_k": (256, 110), "q4_k": (256, 144), "q5_k": (256, 176),
              "q6_k": (256, 210), "iq4_nl": (32, 18), "mxfp4": (32, 17), "tq2_0": (256, 66),
              "iq4_xs": (256, 136), "nvfp4": (64, 36)}


@dataclass
class Case:
    graph: Graph
    buffers: list[bytes]
    short_buffer: int | None = None  # a buffer exactly as long as its nodes reach
    bad: tuple[int, int, int] | None = None  # (buffer, byte, value) that puts an index out of range
    _want: np.ndarray | None = None

    @property
    def want(self) -> np.ndarray:
        if self._want is None:
            self._want = evaluate(self.graph, self.buffers)
        return self._want

    @property
    def elements(self) -> int:
        return math.prod(self.graph.shape)


def node_end(node: Stored | Ggml) -> int:
    """The byte after the last one the node reaches in its buffer."""
    if isinstance(node, Ggml):
        elements, nbytes = GGML_SIZES[node.ggml_type]
        return node.offset + math.prod(node.shape) // elements * nbytes
    if math.prod(node.shape) == 0:
        return 0
    return node.offset + byte_reach(node)[1]


def trim(case: Case) -> Case:
    """One buffer cut to exactly what its nodes reach (so that a byte less
    is a refusal), and, where the graph has an index node held in one byte
    per element, a byte that puts it out of range."""
    nodes = case.graph.nodes
    ends: dict[int, int] = {}
    for node in nodes:
        if isinstance(node, (Stored, Ggml)):
            ends[node.buffer] = max(ends.get(node.buffer, 0), node_end(node))
    usable = [b for b, end in ends.items() if end > 0]
    if usable:
        b = usable[len(case.buffers) % len(usable)]
        case.buffers[b] = case.buffers[b][: ends[b]]
        case.short_buffer = b
    for node in nodes:
        ref, bound = None, 0
        if isinstance(node, Step) and node.group_index:
            ref = node.group_index
            scale = nodes[node.scale]
            param = scale if not hasattr(scale, "value_bits") else nodes[node.offset]
            bound = param.shape[node.indexed_axis]  # type: ignore[union-attr]
        elif isinstance(node, Gather):
            ref = node.index
            bound = nodes[node.x].shape[node.axis]  # type: ignore[union-attr]
        if ref is None:
            continue
        index = nodes[ref]
        assert isinstance(index, Stored)
        width = BITS[index.dtype]
        signed = index.dtype.startswith("int")
        # bound itself, or all ones (-1 when signed, the largest code else)
        for bad_code in (bound, (1 << width) - 1):
            if bad_code >= 1 << (width - signed) and bad_code != (1 << width) - 1:
                continue
            if not signed and bad_code < bound:
                continue
            original = bytearray(case.buffers[index.buffer])
            changed = bytearray(original)
            encode_codes(Stored(**{**index.__dict__, "shape": (1,)}), np.array([bad_code]), changed)
            diff = [k for k in range(len(original)) if original[k] != changed[k]]
            if len(diff) == 1:
                case.bad = (index.buffer, diff[0], changed[diff[0]])
                break
        if case.bad is not None:
            break
    return case


def random_cases(count: int, seed: int, packed: int = 0) -> list[Case]:
    cases = []
    for k in range(count):
        graph, buffers = random_case(np.random.default_rng([seed, k]))
        cases.append(trim(Case(graph, buffers)))
    for k in range(packed):
        graph, buffers = packed_case(np.random.default_rng([seed, 1 << 20, k]))
        cases.append(trim(Case(graph, buffers)))
    return cases


def write_case_file(path: Path, cases: Sequence[Case]) -> None:
    parts = [b"HGRC", struct.pack("<I", len(cases))]
    for case in cases:
        with Built(case.graph, case.buffers) as built:
            desc = built.encode()
        flags = (1 if case.short_buffer is not None else 0) | (2 if case.bad is not None else 0)
        bad = case.bad or (0, 0, 0)
        parts.append(struct.pack("<IIIQB", flags, case.short_buffer or 0, bad[0], bad[1], bad[2]))
        parts.append(struct.pack("<I", len(desc)) + desc)
        parts.append(struct.pack("<I", len(case.buffers)))
        for buf in case.buffers:
            parts.append(struct.pack("<Q", len(buf)) + buf)
    path.write_bytes(b"".join(parts))


def split_outputs(data: bytes, cases: Sequence[Case]) -> list[dict[str, np.ndarray]]:
    """The C program's outputs: per case float32 values, float16 and bfloat16 bits."""
    out, at = [], 0
    for case in cases:
        n = case.elements
        f32 = np.frombuffer(data, dtype=np.float32, count=n, offset=at)
        at += 4 * n
        f16 = np.frombuffer(data, dtype=np.uint16, count=n, offset=at)
        at += 2 * n
        bf16 = np.frombuffer(data, dtype=np.uint16, count=n, offset=at)
        at += 2 * n
        out.append({"float32": f32, "float16": f16, "bfloat16": bf16})
    assert at == len(data), f"{len(data) - at} bytes left over"
    return out


def expected(case: Case, out_dtype: str) -> np.ndarray:
    want = case.want.ravel()
    return want if out_dtype == "float32" else to_16(want, out_dtype)
