"""ONNX models (QUANT-FORMATS § 9): initializers, and the DequantizeLinear
nodes that turn them into weights.

The model file is memory-mapped and walked by onnx_wire (our own protobuf
reader: onnx is a test dependency only). Each initializer's bytes are
raw_data where it lies in the map, or external data (a plain file name
beside the model, mapped once, offset and length checked); values kept in
float_data / int32_data are refused when asked for. A DequantizeLinear
whose x, scale and zero point are all initializers becomes one quantized
Tensor named by the node's output, of x's shape, and those initializers
leave the mapping; any other DequantizeLinear output is refused by name.

Graph: STEP(SUB_MUL, or MUL without a zero point and for FLOAT4E2M1, whose
zero point the reference ignores) in fp32 (fp64 for an int32 x with an
int32 zero point: numpy's promotion in the reference), per tensor, per
axis, or blocked along `axis` with a ragged last block; the result dtype
is output_dtype or the scale's type. Sub-byte x and zero points are packed
over the flattened tensor (the v1 lsb_first rule for 2- and 4-bit, a dense
6-bit stream for FLOAT6); an fp8 zero point must be zero, and an E8M0
scale needs output_dtype, or the weight is refused.
"""
from __future__ import annotations

from functools import partial
import math
import os
from typing import Any, Optional

import numpy as np

from ...core.descriptor import Descriptor
from ...core.tensor import Tensor
from ...errors import CorruptError, UnsupportedError
from ...io._tensor_map import close_quietly, map_file
from ._claims import SHORT, Built, Claim, contradiction, refusal
from ...core.nodes import Step, Stored, Words
from ._graph import make_tensor
from .onnx_wire import Initializer, Model, OnnxNode, parse_model
from .reader import Checkpoint
from .sources import Entry

__all__ = ["ONNX_TYPES", "load_onnx"]

CONVENTION = "onnx"
# ONNX TensorProto.DataType -> (Hurray dtype, bits)
ONNX_TYPES: dict[int, tuple[str, int]] = {
    1: ("float32", 32), 2: ("uint8", 8), 3: ("int8", 8), 4: ("uint16", 16), 5: ("int16", 16), 6: ("int32", 32),
    7: ("int64", 64), 9: ("bool", 8), 10: ("float16", 16), 11: ("float64", 64), 12: ("uint32", 32),
    13: ("uint64", 64), 16: ("bfloat16", 16), 17: ("float8_e4m3fn", 8), 18: ("float8_e4m3fnuz", 8),
    19: ("float8_e5m2", 8), 20: ("float8_e5m2fnuz", 8), 21: ("uint4", 4), 22: ("int4", 4),
    23: ("float4_e2m1fn", 4), 24: ("float8_e8m0fnu", 8), 25: ("uint2", 2), 26: ("int2", 2),
    27: ("float6_e2m3fn", 6), 28: ("float6_e3m2fn", 6),
}
_OUTPUTS = {1: "float32", 10: "float16", 16: "bfloat16"}
_X_TYPES = {"int8", "uint8", "int16", "uint16", "int32", "int4", "uint4", "int2", "uint2", "float8_e4m3fn",
            "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"}
_SCALE_TYPES = {"float32", "float16", "bfloat16", "float8_e8m0fnu"}


def _stored(dtype: str, shape: tuple[int, ...], buffer: int) -> Stored:
    """A node over ONNX's packing: over the flattened tensor, element 0 in the lowest bits."""
    bits = ONNX_BITS[dtype]
    if bits == 6:
        return Stored(dtype, (math.prod(shape),), buffer, strides=(1,), packing=Words(8))
    if bits < 8:
        return Stored(dtype, shape, buffer, packing="lsb_first")
    return Stored(dtype, shape, buffer)


ONNX_BITS = {name: bits for name, bits in ONNX_TYPES.values()}


class OnnxSources:
    """An ONNX model's initializers, by name, over the mapped model and its external-data files."""

    def __init__(self, path: str, mapped: Any, model: Model) -> None:
        self.path = path
        self.metadata: dict[str, str] = {}
        self._map = mapped
        self._external: dict[str, Any] = {}
        self._init: dict[str, Initializer] = {}
        for t in model.initializers:
            if t.name in self._init:
                raise CorruptError(f"load_checkpoint: {path!r}: initializer {t.name!r} is listed twice")
            self._init[t.name] = t

    def __iter__(self) -> Any:
        return iter(self._init)

    def __contains__(self, name: object) -> bool:
        return name in self._init

    def visible(self) -> Any:
        return iter(self._init)

    def files_by_name(self) -> dict[str, Any]:
        return {}

    def entry(self, name: str) -> Entry:
        t = self._init[name]
        known = ONNX_TYPES.get(t.data_type)
        return Entry(None if known is None else known[0], tuple(t.dims), f"ONNX type {t.data_type}")

    def _nbytes(self, name: str, t: Initializer) -> int:
        known = ONNX_TYPES.get(t.data_type)
        if known is None:
            raise UnsupportedError(f"load_checkpoint: initializer {name!r} has ONNX data type {t.data_type}, "
                                   "which this build does not read")
        if any(d < 0 for d in t.dims):
            raise CorruptError(f"load_checkpoint: initializer {name!r} has dims {t.dims}")
        count = math.prod(t.dims)
        if count >= 1 << 56:
            raise CorruptError(f"load_checkpoint: initializer {name!r} has dims {t.dims}, too many elements")
        return -(-count * known[1] // 8)

    def data(self, name: str) -> np.ndarray:
        """The initializer's bytes, zero-copy from the model's map or its external file's."""
        t = self._init[name]
        need = self._nbytes(name, t)
        if t.location == 1:
            return self._external_bytes(name, t, need)
        if t.raw is None:
            if t.other_data or need:
                raise UnsupportedError(f"load_checkpoint: initializer {name!r} keeps its values in a typed field "
                                       "(float_data, int32_data, ...), not raw_data: only raw_data and external "
                                       "data are read without a copy")
            return np.zeros(0, np.uint8)
        at, length = t.raw
        if length != need:
            raise CorruptError(f"load_checkpoint: initializer {name!r}: dims {t.dims} of ONNX type {t.data_type} "
                               f"need {need} bytes of raw_data, it holds {length}")
        return np.frombuffer(self._map, np.uint8, length, at) if length and self._map is not None \
            else np.zeros(0, np.uint8)

    def _external_bytes(self, name: str, t: Initializer, need: int) -> np.ndarray:
        location = t.external.get("location", "")
        if not location or os.path.basename(location) != location or location in (".", "..") or "\0" in location:
            raise CorruptError(f"load_checkpoint: initializer {name!r}: external data location {location!r} "
                               "is not a file name beside the model")
        try:
            offset = int(t.external.get("offset", "0"))
            length = int(t.external.get("length", str(need)))
        except ValueError:
            raise CorruptError(f"load_checkpoint: initializer {name!r}: external data offset or length is not "
                               "an integer") from None
        if length != need or offset < 0:
            raise CorruptError(f"load_checkpoint: initializer {name!r}: external data of {length} bytes at offset "
                               f"{offset}; dims {t.dims} need {need}")
        mapped = self._external.get(location)
        if mapped is None:
            full = os.path.join(os.path.dirname(os.path.abspath(self.path)), location)
            if not os.path.isfile(full):
                raise CorruptError(f"load_checkpoint: initializer {name!r}: external data file {location!r} "
                                   "is not beside the model")
            mapped = self._external[location] = map_file(full, "load_checkpoint")[0]
        size = 0 if mapped is None else len(mapped)
        if offset + length > size:
            raise CorruptError(f"load_checkpoint: initializer {name!r}: external data ends at byte "
                               f"{offset + length}, past the end of {location!r} ({size} bytes)")
        if not length or mapped is None:
            return np.zeros(0, np.uint8)
        return np.frombuffer(mapped, np.uint8, length, offset)

    def plain(self, name: str) -> Tensor:
        entry = self.entry(name)
        raw = self.data(name)
        bits = ONNX_BITS[str(entry.dtype)]
        if bits == 6:
            desc = Descriptor.graph(entry.shape, _stored(entry.dtype or "", entry.shape, 0))
        else:
            desc = Descriptor.build(entry.dtype, entry.shape, packing="lsb_first" if bits < 8 else None)
        return make_tensor(desc, (raw,))

    def close(self) -> None:
        for mapped in (self._map, *self._external.values()):
            close_quietly(mapped)
        self._map = None
        self._external = {}


def _attr(node: OnnxNode, key: str, default: int) -> int:
    a = node.attributes.get(key)
    return default if a is None or a.i is None else a.i


def _dequantize_claims(sources: OnnxSources, model: Model) -> dict[str, Claim]:
    produced = {out for n in model.nodes for out in n.outputs}
    out: dict[str, Claim] = {}
    for node in model.nodes:
        if node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx") or not node.outputs:
            continue
        name = node.outputs[0]
        inputs = [i for i in node.inputs[:3]]
        present = [i for i in inputs if i]
        missing = [i for i in present if i not in sources or i in produced or i in model.graph_inputs]
        if missing or len(present) < 2:
            reason = (f"its DequantizeLinear inputs {missing} are not initializers (a graph input or another "
                      "node's output), so its values are not in the file") if missing else \
                "its DequantizeLinear has fewer than two inputs"
            out[name] = Claim(name, CONVENTION, (), partial(_refuse, name=name, reason=reason))
            continue
        if name in sources:
            raise CorruptError(f"load_checkpoint: {sources.path!r}: {name!r} is both an initializer and a "
                               "DequantizeLinear output")
        out[name] = Claim(name, CONVENTION, tuple(present), partial(_build, name=name, node=node))
    return out


def _refuse(sources: OnnxSources, name: str, reason: str) -> Built:
    raise contradiction(name, reason)


def _build(sources: OnnxSources, name: str, node: OnnxNode) -> Built:
    x_name, s_name = node.inputs[0], node.inputs[1]
    z_name = node.inputs[2] if len(node.inputs) > 2 and node.inputs[2] else None
    x, s = sources.entry(x_name), sources.entry(s_name)
    if x.dtype not in _X_TYPES:
        raise refusal(name, f"DequantizeLinear x {x_name!r} of {x.stored} ({x.dtype})")
    if s.dtype not in _SCALE_TYPES:
        raise refusal(name, f"DequantizeLinear scale {s_name!r} of {s.stored} ({s.dtype})")
    shape, rank = x.shape, len(x.shape)
    axis, block = _attr(node, "axis", 1), _attr(node, "block_size", 0)
    if rank and axis < 0:
        axis += rank
    output = _attr(node, "output_dtype", 0)
    if output:
        result = _OUTPUTS.get(output)
        if result is None:
            raise refusal(name, f"DequantizeLinear output_dtype {output}")
    elif s.dtype == "float8_e8m0fnu":
        raise refusal(name, "an E8M0 scale without output_dtype (the reference then casts the product to E8M0)")
    else:
        result = str(s.dtype)
    if s.shape in ((), (1,)) and block == 0:
        blocks, grid, ragged, words = shape, (1,) * rank, False, "per tensor"
    elif block == 0:
        if not (0 <= axis < rank) or s.shape != (shape[axis],):
            raise contradiction(name, f"a per-axis scale {s_name!r} of shape {list(s.shape)} for x {list(shape)} "
                                      f"and axis {axis}")
        blocks = tuple(1 if k == axis else n for k, n in enumerate(shape))
        grid = tuple(n if k == axis else 1 for k, n in enumerate(shape))
        ragged, words = False, f"per axis {axis}"
    else:
        if not (0 <= axis < rank) or block < 1:
            raise contradiction(name, f"block_size {block} along axis {axis} of x {list(shape)}")
        grid = tuple(-(-n // block) if k == axis else n for k, n in enumerate(shape))
        if s.shape != grid:
            raise contradiction(name, f"a blocked scale {s_name!r} of shape {list(s.shape)}; x {list(shape)} in "
                                      f"blocks of {block} along axis {axis} needs {list(grid)}")
        blocks = tuple(block if k == axis else 1 for k in range(rank))
        ragged, words = shape[axis] % block != 0, f"blocks of {block} along axis {axis}"
    arrays = [sources.data(x_name), sources.data(s_name)]
    xs = _stored(str(x.dtype), shape, 0)
    ss = Stored(str(s.dtype), grid, 1)
    arithmetic = "float32"
    zp: Optional[Stored] = None
    if z_name is not None and x.dtype != "float4_e2m1fn":
        z = sources.entry(z_name)
        if z.dtype != x.dtype or math.prod(z.shape) != math.prod(grid):
            raise contradiction(name, f"zero point {z_name!r} of {z.stored} {list(z.shape)}; x is {x.stored} and "
                                      f"the scale {list(s.shape)}")
        if str(x.dtype).startswith("float8"):
            if sources.data(z_name).any():
                raise refusal(name, "a nonzero fp8 zero point (the reference refuses it)")
        else:
            zp = _stored(str(x.dtype), grid, 2)
            arrays.append(sources.data(z_name))
            if x.dtype == "int32":
                arithmetic = "float64"
    root = Step("mul" if zp is None else "sub_mul", arithmetic, shape, xs, ss, zp, blocks=blocks, ragged=ragged)
    form = "affine" if zp is not None else "symmetric"
    text = f"{x.dtype} {form}, {words}, {SHORT.get(str(s.dtype), s.dtype)} scales, {SHORT[result]} out " \
           f"(ONNX DequantizeLinear)"
    return Built(Descriptor.graph(shape, root, result_dtype=result), tuple(arrays), text)


def load_onnx(path: str) -> Checkpoint:
    """An ONNX model as a Checkpoint: its DequantizeLinear weights and its other initializers."""
    mapped, size = map_file(path, "load_checkpoint")
    try:
        model = parse_model(mapped if mapped is not None else b"")
        sources = OnnxSources(path, mapped, model)
    except BaseException:
        close_quietly(mapped)
        raise
    try:
        claims = _dequantize_claims(sources, model)
    except BaseException:
        sources.close()
        raise
    consumed = {p for c in claims.values() for p in c.parts}
    plain = [n for n in sources if n not in consumed]
    return Checkpoint(path, sources, None, claims, plain)
