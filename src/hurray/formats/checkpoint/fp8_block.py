"""DeepSeek-style FP8 checkpoints (QUANT-FORMATS § 6): ``quant_method: "fp8"``.

A weight is FP8 when it is float8_e4m3fn and ``<name>_scale_inv`` exists
(DeepSeek's fp8_cast_bf16 rule). With ``weight_block_size [bh, bw]`` the
scale is float32 [ceil(O/bh), ceil(I/bw)], one cell per block, the edge
cells covering the partial blocks (the weight is not padded); without it,
``<name>_scale`` or ``_scale_inv`` of one element scales the whole tensor.
Graph: STEP(MUL, fp32, blocks (bh, bw), RAGGED) over e4m3 codes; the
result is bf16 (DeepSeek's fp32 multiply rounded once). E8M0 scales
(``scale_fmt: ue8m0``) are refused: whether 255 is NaN for weights is not
settled (QUANT-FORMATS § 6.1 marks it UNVERIFIED).
"""
from __future__ import annotations

from functools import partial
from typing import Any

from ._claims import Built, Claim, Stated, contradiction, expect, refusal, stored_as, unstatable
from ...core.descriptor import Descriptor
from ...core.nodes import Node, Step, Stored
from ._graph import same_graph
from .sources import Sources

__all__ = ["claim", "config", "fp8_graph", "state"]

CONVENTION = "fp8"


def claim(sources: Sources, config: dict[str, Any]) -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    for entry in sources:
        for suffix in ("_scale_inv", "_scale"):
            if entry.endswith(suffix) and entry[: -len(suffix)] in sources:
                name = entry[: -len(suffix)]
                if sources.entry(name).dtype == "float8_e4m3fn":
                    out[name] = Claim(name, CONVENTION, (name, entry),
                                      partial(_build, name=name, scale_key=entry, config=config))
    return out


def fp8_graph(O: int, I: int, block: tuple[int, int]) -> Node:
    grid = (-(-O // block[0]), -(-I // block[1]))
    return Step("mul", "float32", (O, I), Stored("float8_e4m3fn", (O, I), 0), Stored("float32", grid, 1),
                blocks=block, ragged=O % block[0] != 0 or I % block[1] != 0)


def _build(sources: Sources, name: str, scale_key: str, config: dict[str, Any]) -> Built:
    if config.get("fmt", "e4m3") != "e4m3":
        raise refusal(name, f"FP8 fmt {config.get('fmt')!r} (e4m3 is read)")
    if config.get("scale_fmt") not in (None, "float32"):
        raise refusal(name, f"scale_fmt {config.get('scale_fmt')!r}: E8M0 weight scales are not settled")
    weight = expect(sources, name, name, ("float8_e4m3fn",), None, "weight").shape
    if len(weight) != 2:
        raise contradiction(name, f"weight has shape {list(weight)}, not [out, in]")
    O, I = weight
    block = config.get("weight_block_size")
    if block is None:
        found = expect(sources, name, scale_key, ("float32",), None, "scale")
        if found.shape not in ((), (1,), (1, 1)):
            raise contradiction(name, f"a per-tensor FP8 scale of shape {list(found.shape)} (no weight_block_size)")
        root: Node = Step("mul", "float32", (O, I), Stored("float8_e4m3fn", (O, I), 0), Stored("float32", (1, 1), 1),
                          blocks=(O, I))
        words = "fp8 e4m3, per tensor, fp32 scale (FP8)"
    else:
        if not (isinstance(block, list) and len(block) == 2 and all(type(v) is int and v > 0 for v in block)):
            raise refusal(name, f"weight_block_size {block!r}")
        bh, bw = block
        expect(sources, name, scale_key, ("float32",), (-(-O // bh), -(-I // bw)), "weight_scale_inv")
        root = fp8_graph(O, I, (bh, bw))
        words = f"fp8 e4m3, blocks of {bh}x{bw}, fp32 scales (DeepSeek FP8)"
    return Built(Descriptor.graph((O, I), root, result_dtype="bfloat16"), (sources.data(name), sources.data(scale_key)),
                 words)


# ---- writing -------------------------------------------------------------------------

def state(name: str, tensor: Any) -> Stated:
    """The e4m3 weight and its weight_scale_inv grid of a block-scaled FP8 weight."""
    step = tensor.descriptor.root
    if not (isinstance(step, Step) and len(step.shape) == 2 and step.blocks is not None and all(step.blocks)):
        raise unstatable(name, "FP8", "it is not e4m3 codes times one fp32 scale per block")
    O, I = step.shape
    block = (step.blocks[0], step.blocks[1])
    if not same_graph(tensor.descriptor, (O, I), fp8_graph(O, I, block)):
        raise unstatable(name, "FP8", "it is not e4m3 codes times one fp32 scale per block, in fp32")
    import ml_dtypes

    grid = (-(-O // block[0]), -(-I // block[1]))
    return Stated({name: stored_as(tensor, 0, ml_dtypes.float8_e4m3fn, (O, I)),
                   f"{name}_scale_inv": stored_as(tensor, 1, "<f4", grid)}, {"weight_block_size": list(block)})


def config(params: list[dict[str, Any]]) -> dict[str, Any]:
    first = params[0]
    if any(p != first for p in params[1:]):
        raise unstatable("(several)", "FP8", "its weights differ in block size; weight_block_size is one")
    return {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", **first}
