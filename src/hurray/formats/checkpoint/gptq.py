"""GPTQ checkpoints (QUANT-FORMATS § 2): ``quant_method: "gptq"``, AutoGPTQ's
and GPTQModel's ``qweight`` / ``qzeros`` / ``scales`` / ``g_idx``.

``checkpoint_format`` (or ``format``) ``gptq`` is v1: a zero is stored as
zero - 1, and the graph adds 1 back (code_offset +1). A v1 field of
2^b - 1 can only come from a zero of 0 whose -1 borrowed into the next
field; AutoGPTQ's kernels read it as 2^b, GPTQModel's conversion carries
it into the neighbour: the readers disagree, so such a weight is refused.
``gptq_v2`` stores the zero itself. Other formats (marlin, gptq_p,
bitblas, ...) are refused by name. A ``g_idx`` that is i // group_size is
plain grouping; any other (act-order) is the step's group index, checked
in range by the descriptor before anything reads it.

Graph (v2-spec § 6): STEP(SUB_MUL, fp16, blocks (1, gs) or indexed axis 1)
over qweight as uint<b> words of 32 bits, a dense stream down the input
axis (strides (1, O)); scales fp16 [G, O] read as [O, G] (strides (1, O));
qzeros uint<b> dense along the output axis.
"""
from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from ._claims import Built, Claim, Stated, config_int, contradiction, expect, module_of, refusal, small, stored_as, \
    unstatable
from ...core.descriptor import Descriptor
from ...core.nodes import Node, Step, Stored, Words
from ._graph import container_bits, same_graph
from .sources import Sources

__all__ = ["claim", "config", "gptq_graph", "state"]

CONVENTION = "gptq"
BITS = (2, 3, 4, 8)


def claim(sources: Sources, config: dict[str, Any]) -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    for entry in sources:
        if entry.endswith(".qweight"):
            module = entry[: -len(".qweight")]
            name = module + ".weight"
            parts = tuple(f"{module}.{s}" for s in ("qweight", "qzeros", "scales", "g_idx")
                          if f"{module}.{s}" in sources)
            out[name] = Claim(name, CONVENTION, parts, partial(_build, name=name, module=module, config=config))
    return out


def _format(name: str, config: dict[str, Any]) -> str:
    fmt = config.get("checkpoint_format", config.get("format", "gptq"))
    if config.get("is_marlin_format"):
        fmt = "marlin"
    if fmt not in ("gptq", "gptq_v2"):
        raise refusal(name, f"GPTQ checkpoint_format {fmt!r} is not one this build reads (gptq, gptq_v2)")
    return str(fmt)


def gptq_graph(O: int, I: int, bits: int, G: int, zwords: int, group_size: int, act_order: bool,
               v1: bool) -> tuple[Node, str]:
    """The graph of a GPTQ weight [O, I] (buffers: qweight, scales, qzeros[, g_idx]) and its grouping in words."""
    x = Stored(f"uint{bits}", (O, I), 0, strides=(1, O), packing=Words(32, packed_axis=1))
    s = Stored("float16", (O, G), 1, strides=(1, O))
    z = Stored(f"uint{bits}", (O, G), 2, strides=(1, zwords), packing=Words(32, packed_axis=0),
               code_offset=1 if v1 else 0)
    if act_order:
        return Step("sub_mul", "float16", (O, I), x, s, z, blocks=(1, 0), indexed_axis=1,
                    group_index=Stored("int32", (I,), 3)), "act-order"
    return Step("sub_mul", "float16", (O, I), x, s, z, blocks=(1, group_size), ragged=I % group_size != 0), \
        f"groups of {group_size}"


def _build(sources: Sources, name: str, module: str, config: dict[str, Any]) -> Built:
    fmt = _format(name, config)
    bits = config_int(name, config, "bits", "quantization_config")
    if bits not in BITS:
        raise refusal(name, f"{bits}-bit GPTQ (this build reads {', '.join(map(str, BITS))})")
    if config.get("pack_dtype", "int32") != "int32":
        raise refusal(name, f"pack_dtype {config.get('pack_dtype')!r} (only int32 words are read)")
    if config.get("dynamic"):
        raise refusal(name, "GPTQModel's per-module 'dynamic' overrides are not read")
    qweight = expect(sources, name, f"{module}.qweight", ("int32",), None, "qweight").shape
    scales = expect(sources, name, f"{module}.scales", ("float16",), None, "scales").shape
    if len(qweight) != 2 or len(scales) != 2 or scales[1] != qweight[1]:
        raise contradiction(name, f"qweight {list(qweight)} and scales {list(scales)} are not "
                                  "[in*bits/32, out] and [groups, out]")
    O, G = qweight[1], scales[0]
    gs_config = config_int(name, config, "group_size", "quantization_config")
    g_idx_key = f"{module}.g_idx"
    if g_idx_key in sources:
        I = expect(sources, name, g_idx_key, ("int32", "int64"), None, "g_idx").shape[0]
    else:
        I = qweight[0] * 32 // bits
    if -(-I * bits // 32) != qweight[0]:
        raise contradiction(name, f"{I} inputs of {bits} bits need {-(-I * bits // 32)} rows of qweight, "
                                  f"it has {qweight[0]} (bits {bits} in the config)")
    gs = I if gs_config == -1 else gs_config
    if gs <= 0:
        raise contradiction(name, f"group_size {gs_config}")
    zwords = -(-O * bits // 32)
    expect(sources, name, f"{module}.qzeros", ("int32",), (G, zwords), "qzeros")
    act_order = False
    if g_idx_key in sources:
        expect(sources, name, g_idx_key, ("int32",), (I,), "g_idx")
        g_idx = small(sources, g_idx_key, np.int32)
        if not np.array_equal(g_idx, np.arange(I, dtype=np.int32) // gs):
            if not config.get("desc_act", False):
                raise contradiction(name, f"g_idx is not i // {gs} (group_size {gs_config} in the config), "
                                          "and desc_act is not set")
            act_order = True
            if g_idx.size and (int(g_idx.min()) < 0 or int(g_idx.max()) >= G):
                raise contradiction(name, f"g_idx holds {int(g_idx.min())} .. {int(g_idx.max())}, "
                                          f"outside the {G} groups of scales")
    if not act_order and G != -(-I // gs):
        raise contradiction(name, f"{I} inputs in groups of {gs} make {-(-I // gs)} groups, "
                                  f"but scales has {G} (group_size {gs_config} in the config)")
    v1 = fmt == "gptq"
    if v1:
        _refuse_borrowed_zeros(sources, name, f"{module}.qzeros", bits, O)
    root, grouping = gptq_graph(O, I, bits, G, zwords, gs, act_order, v1)
    arrays = [sources.data(f"{module}.{s}") for s in ("qweight", "scales", "qzeros")]
    if act_order:
        arrays.append(sources.data(g_idx_key))
    version = "v1" if v1 else "v2"
    words = f"int{bits} affine, {grouping}, fp16 scales (GPTQ {version})"
    if act_order:
        words = f"int{bits} affine, groups of {gs}, act-order, fp16 scales (GPTQ {version})"
    return Built(Descriptor.graph((O, I), root, result_dtype="float16"), tuple(arrays), words)


def _refuse_borrowed_zeros(sources: Sources, name: str, key: str, bits: int, O: int) -> None:
    """A v1 zero field of all ones (a zero of 0 minus 1) is read two ways by GPTQ's own readers: refuse it."""
    words = small(sources, key, np.uint32)
    stream = np.unpackbits(np.ascontiguousarray(words).view(np.uint8), axis=-1, bitorder="little")
    fields = stream[:, : O * bits].reshape(words.shape[0], O, bits)
    all_ones = fields.all(axis=-1)
    if all_ones.any():
        g, o = (int(v[0]) for v in np.nonzero(all_ones))
        raise refusal(name, f"qzeros of group {g}, output {o} is {(1 << bits) - 1}: a GPTQ v1 zero of 0 stored as "
                            "-1, which AutoGPTQ reads as a zero of 2^bits and GPTQModel carries into the next field "
                            "(ambiguous; re-export it as gptq_v2)")


# ---- writing -------------------------------------------------------------------------

def state(name: str, tensor: Any) -> Stated:
    """qweight, qzeros, scales and g_idx of a weight whose graph is a GPTQ one (v1 or v2, act-order or not)."""
    module = module_of(name, "GPTQ")
    step = tensor.descriptor.root
    if not (isinstance(step, Step) and step.form == "sub_mul" and step.arithmetic == "float16"
            and isinstance(step.x, Stored) and step.x.dtype.startswith("uint") and container_bits(step.x) == 32
            and len(step.x.shape) == 2 and isinstance(step.scale, Stored) and isinstance(step.offset, Stored)
            and len(step.scale.shape) == 2):
        raise unstatable(name, "GPTQ", "it is not (q - z) * s in fp16 over 32-bit words of codes")
    bits = int(step.x.dtype[4:])
    O, I = step.x.shape
    G = step.scale.shape[1]
    act = step.group_index is not None
    gs = (-(-I // G) if G else 0) if act else (step.blocks or (1, 1))[1]
    zwords = -(-O * bits // 32)
    v1 = step.offset.code_offset == 1
    if bits not in BITS or not gs or not same_graph(tensor.descriptor, (O, I),
                                                    gptq_graph(O, I, bits, G, zwords, gs, act, v1)[0]):
        raise unstatable(name, "GPTQ", f"its graph is not GPTQ's for {bits} bits, groups of {gs}")
    entries = {f"{module}.qweight": stored_as(tensor, 0, "<i4", (-(-I * bits // 32), O)),
               f"{module}.qzeros": stored_as(tensor, 2, "<i4", (G, zwords)),
               f"{module}.scales": stored_as(tensor, 1, "<f2", (G, O)),
               f"{module}.g_idx": stored_as(tensor, 3, "<i4", (I,)) if act else
               (np.arange(I, dtype=np.int32) // gs).astype(np.int32)}
    return Stated(entries, {"bits": bits, "group_size": gs, "desc_act": act, "format": "gptq" if v1 else "gptq_v2"})


def config(params: list[dict[str, Any]]) -> dict[str, Any]:
    """quantization_config for GPTQ weights that share bits, group size and format (GPTQ states one of each)."""
    first = params[0]
    for p in params[1:]:
        if (p["bits"], p["group_size"], p["format"]) != (first["bits"], first["group_size"], first["format"]):
            raise unstatable("(several)", "GPTQ", "its weights differ in bits, group size or format; a GPTQ "
                                                  "config states one of each")
    return {"quant_method": "gptq", "bits": first["bits"], "group_size": first["group_size"],
            "desc_act": any(p["desc_act"] for p in params), "sym": False, "static_groups": False,
            "format": first["format"], "checkpoint_format": first["format"], "pack_dtype": "int32"}
