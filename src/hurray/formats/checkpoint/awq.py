"""AWQ checkpoints (QUANT-FORMATS § 3; AutoAWQ 0.2.9): ``quant_method: "awq"``,
4-bit, ``version`` gemm or gemv.

GEMM: qweight int32 [I, O/8] and qzeros int32 [G, O/8], nibble n of word c
holding output 8c + [0, 2, 4, 6, 1, 3, 5, 7][n] (slot order
[0, 4, 1, 5, 2, 6, 3, 7] in the graph); scales fp16 [G, O]; zeros stored as
they are. GEMV: qweight int32 [O, I/8] and qzeros int32 [O, Wz] in natural
order (a dense stream along the input axis), scales fp16 [O, Wz*8], zero
padded past the G real groups. Both: STEP(SUB_MUL, fp16, groups along the
input axis), AutoAWQ's dequantize_gemm arithmetic. (GEMV has no CPU
dequantization of its own: its arithmetic is GEMM's, over the same codes,
scales and zeros, which the proof test checks against AutoAWQ's own GEMV
packing.) gemv_fast and marlin are kernel tile layouts (ADR-054 leaves
them out) and are refused by name.
"""
from __future__ import annotations

from functools import partial
from typing import Any

from ._claims import Built, Claim, Stated, config_int, contradiction, expect, module_of, refusal, stored_as, unstatable
from ...core.descriptor import Descriptor
from ...core.nodes import Node, Step, Stored, Words
from ._graph import same_graph
from .sources import Sources

__all__ = ["AWQ_ORDER", "claim", "config", "gemm_graph", "gemv_graph", "state", "zeros_width"]

CONVENTION = "awq"
AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)


def claim(sources: Sources, config: dict[str, Any]) -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    for entry in sources:
        if entry.endswith(".qweight"):
            module = entry[: -len(".qweight")]
            name = module + ".weight"
            parts = tuple(f"{module}.{s}" for s in ("qweight", "qzeros", "scales") if f"{module}.{s}" in sources)
            out[name] = Claim(name, CONVENTION, parts, partial(_build, name=name, module=module, config=config))
    return out


def zeros_width(I: int, gs: int) -> int:
    """AutoAWQ's calculate_zeros_width: words of 8 zeros a row, rounded up to 1, 2 or 4 by group size."""
    pack = 1 if gs >= 128 else (2 if gs == 64 else 4)
    return -(-(-(-(I // gs) // 8)) // pack) * pack


def gemm_graph(O: int, I: int, gs: int) -> Node:
    slots = Words.slots(32, 4, 0, order=AWQ_ORDER)
    return Step("sub_mul", "float16", (O, I), Stored("uint4", (O, I), 0, strides=(1, O // 8), packing=slots),
                Stored("float16", (O, I // gs), 1, strides=(1, O)),
                Stored("uint4", (O, I // gs), 2, strides=(1, O // 8), packing=slots), blocks=(1, gs))


def gemv_graph(O: int, I: int, gs: int, wz: int) -> Node:
    G = I // gs
    return Step("sub_mul", "float16", (O, I), Stored("uint4", (O, I), 0, strides=(I // 8, 1),
                                                     packing=Words(32, packed_axis=1)),
                Stored("float16", (O, G), 1, strides=(wz * 8, 1)),
                Stored("uint4", (O, G), 2, strides=(wz, 1), packing=Words(32, packed_axis=1)), blocks=(1, gs))


def _build(sources: Sources, name: str, module: str, config: dict[str, Any]) -> Built:
    version = str(config.get("version", "gemm")).lower()
    bits = config_int(name, config, "bits", "quantization_config", config.get("w_bit"))
    gs = config_int(name, config, "group_size", "quantization_config", config.get("q_group_size"))
    if bits != 4:
        raise refusal(name, f"{bits}-bit AWQ (AutoAWQ packs 4 bits only)")
    if version not in ("gemm", "gemv"):
        raise refusal(name, f"AWQ version {version!r} is a kernel tile layout this build does not read "
                            "(gemm and gemv are)")
    if not config.get("zero_point", True):
        raise refusal(name, "AWQ without zero points (zero_point false)")
    qweight = expect(sources, name, f"{module}.qweight", ("int32",), None, "qweight").shape
    if len(qweight) != 2 or gs <= 0:
        raise contradiction(name, f"qweight has shape {list(qweight)}; group_size {gs}")
    if version == "gemm":
        I, O = qweight[0], qweight[1] * 8
        if I % gs:
            raise contradiction(name, f"group_size {gs} does not divide the {I} inputs")
        expect(sources, name, f"{module}.scales", ("float16",), (I // gs, O), "scales")
        expect(sources, name, f"{module}.qzeros", ("int32",), (I // gs, O // 8), "qzeros")
        root = gemm_graph(O, I, gs)
    else:
        O, I = qweight[0], qweight[1] * 8
        if I % gs:
            raise contradiction(name, f"group_size {gs} does not divide the {I} inputs")
        wz = zeros_width(I, gs)
        expect(sources, name, f"{module}.scales", ("float16",), (O, wz * 8), "scales")
        expect(sources, name, f"{module}.qzeros", ("int32",), (O, wz), "qzeros")
        root = gemv_graph(O, I, gs, wz)
    arrays = tuple(sources.data(f"{module}.{s}") for s in ("qweight", "scales", "qzeros"))
    words = f"int4 affine, groups of {gs}, fp16 scales (AWQ {version.upper()})"
    return Built(Descriptor.graph((O, I), root, result_dtype="float16"), arrays, words)


# ---- writing -------------------------------------------------------------------------

def state(name: str, tensor: Any) -> Stated:
    """qweight, qzeros and scales of a weight whose graph is AWQ's GEMM or GEMV one."""
    module = module_of(name, "AWQ")
    step = tensor.descriptor.root
    if not (isinstance(step, Step) and isinstance(step.x, Stored) and isinstance(step.x.packing, Words)
            and len(step.shape) == 2 and step.blocks is not None):
        raise unstatable(name, "AWQ", "it is not (q - z) * s in fp16 over 4-bit codes")
    O, I = step.shape
    gs = step.blocks[1]
    if step.x.packing.packed_axis == 0 and O % 8 == 0 and gs and I % gs == 0 and same_graph(
            tensor.descriptor, (O, I), gemm_graph(O, I, gs)):
        G = I // gs
        entries = {f"{module}.qweight": stored_as(tensor, 0, "<i4", (I, O // 8)),
                   f"{module}.qzeros": stored_as(tensor, 2, "<i4", (G, O // 8)),
                   f"{module}.scales": stored_as(tensor, 1, "<f2", (G, O))}
        return Stated(entries, {"version": "gemm", "group_size": gs})
    wz = zeros_width(I, gs) if gs and I % gs == 0 else 0
    if wz and I % 8 == 0 and same_graph(tensor.descriptor, (O, I), gemv_graph(O, I, gs, wz)):
        entries = {f"{module}.qweight": stored_as(tensor, 0, "<i4", (O, I // 8)),
                   f"{module}.qzeros": stored_as(tensor, 2, "<i4", (O, wz)),
                   f"{module}.scales": stored_as(tensor, 1, "<f2", (O, wz * 8))}
        return Stated(entries, {"version": "gemv", "group_size": gs})
    raise unstatable(name, "AWQ", "its graph is neither AWQ's GEMM nor its GEMV one")


def config(params: list[dict[str, Any]]) -> dict[str, Any]:
    first = params[0]
    if any(p != first for p in params[1:]):
        raise unstatable("(several)", "AWQ", "its weights differ in version or group size; an AWQ config states one")
    return {"quant_method": "awq", "bits": 4, "group_size": first["group_size"], "zero_point": True,
            "version": first["version"], "modules_to_not_convert": None}
