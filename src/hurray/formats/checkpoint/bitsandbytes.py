"""bitsandbytes state dicts (QUANT-FORMATS § 5): self-describing, whatever the config says.

4-bit (NF4 / FP4): ``<m>.weight`` (the codes, two a byte, the high nibble
first, blocks over the flattened tensor), ``weight.absmax``,
``weight.quant_map``, nested ``weight.nested_absmax`` and
``weight.nested_quant_map``, and ``weight.quant_state.bitsandbytes__<type>``,
a uint8 tensor of UTF-8 JSON (quant_type, blocksize, dtype, shape, nested_*)
read with a size cap of 4 KiB, no nesting, and every field checked. The
codebook is the stored quant_map, which must equal bnb's own table (bnb
dequantizes with its table, not the stored map): for FP4 the stored map
holds +0.0 at code 8, the sign bnb's CPU paths for rows of a multiple of 16
give (QUANT-FORMATS and REPORT: CUDA and bnb's scalar C path give -0.0).

LLM.int8: ``<m>.weight`` int8 [O, I], ``<m>.SCB`` float32 [O] and
``weight_format`` 0 (row): fp32((q * SCB) * fp32(1/127)), two roundings.
"""
from __future__ import annotations

from functools import partial
import json
import math
from typing import Any

import numpy as np

from ._claims import SHORT, Built, Claim, Stated, contradiction, expect, refusal, small, stored_as, unstatable
from ...core.descriptor import Descriptor
from ...core.nodes import Constant, Node, Step, Stored, Words
from ._graph import same_graph
from ...quant.library_graphs import FP4, FP32_ONE_OVER_127, NF4
from .sources import Sources, parse_json

__all__ = ["MAX_BLOB", "claim", "config", "four_bit_graph", "int8_graph", "state"]

CONVENTION = "bitsandbytes"
MAX_BLOB = 4096
BLOCKSIZES = (32, 64, 128, 256, 512, 1024, 2048, 4096)
_BLOB = ".weight.quant_state.bitsandbytes__"
_DTYPES = ("float16", "bfloat16", "float32")


def claim(sources: Sources) -> dict[str, Claim]:
    out: dict[str, Claim] = {}
    listed = "\n".join(sources) + "\n"
    if _BLOB not in listed and ".SCB\n" not in listed:
        return out  # no name of either kind: one search of all the names rather than two per name
    for entry in sources:
        if _BLOB in entry:
            module, kind = entry.split(_BLOB, 1)
            name = module + ".weight"
            parts = tuple(n for n in (name, f"{name}.absmax", f"{name}.quant_map", f"{name}.nested_absmax",
                                      f"{name}.nested_quant_map", entry) if n in sources)
            out[name] = Claim(name, CONVENTION, parts, partial(_four_bit, name=name, blob=entry, kind=kind))
        elif entry.endswith(".SCB"):
            module = entry[: -len(".SCB")]
            name = module + ".weight"
            if name in sources and sources.entry(name).dtype == "int8":
                parts = tuple(n for n in (name, entry, f"{module}.weight_format") if n in sources)
                out[name] = Claim(name, CONVENTION, parts, partial(_int8, name=name, module=module))
    return out


def quant_state(sources: Sources, name: str, blob: str) -> dict[str, Any]:
    """The quant_state JSON, bounded and checked field by field."""
    entry = sources.entry(blob)
    if entry.dtype != "uint8" or len(entry.shape) != 1:
        raise contradiction(name, f"its quant_state {blob!r} is {entry.stored} {list(entry.shape)}, not uint8 bytes")
    if entry.shape[0] > MAX_BLOB:
        raise contradiction(name, f"its quant_state {blob!r} holds {entry.shape[0]} bytes, more than {MAX_BLOB}")
    state = parse_json(sources.data(blob).tobytes(), f"load_checkpoint: tensor {name!r}: quant_state", MAX_BLOB)
    if not isinstance(state, dict) or any(isinstance(v, (dict, list)) for k, v in state.items() if k != "shape"):
        raise contradiction(name, "its quant_state is not a flat JSON object")
    return state


def _same_table(stored: np.ndarray, table: np.ndarray, quant_type: str) -> bool:
    """The stored quant_map is bnb's table bit for bit (FP4's code 8 may be either zero: the file states which)."""
    same = stored.view(np.uint32) == table.view(np.uint32)
    if quant_type == "fp4":
        same[8] = bool(stored[8] == 0.0)
    return bool(same.all())


def four_bit_graph(n: int, bs: int, nested: bool, offset: float = 0.0) -> Node:
    """NF4/FP4 over n flattened elements: codes (buffer 0, high nibble first) through the stored
    quant_map (1) times absmax (2, fp32), or, nested, absmax (2, uint8) through nested_quant_map (3)
    times nested_absmax (4) plus the nested offset."""
    codes = Stored("uint4", (n,), 0, packing=Words.slots(8, 4, 0, order=(1, 0)), strides=(1,),
                   codebook=Stored("float32", (16,), 1))
    blocks = -(-n // bs)
    absmax: Node = Stored("float32", (blocks,), 2)
    if nested:
        absmax = Step("mul_add", "float32", (blocks,), Stored("uint8", (blocks,), 2, codebook=Stored("float32", (256,), 3)),
                      Stored("float32", (-(-blocks // 256),), 4), Constant("float32", offset), blocks=(256,),
                      ragged=blocks % 256 != 0)
    return Step("mul", "float32", (n,), codes, absmax, blocks=(bs,), ragged=n % bs != 0)


def int8_graph(O: int, I: int) -> Node:
    """LLM.int8: fp32((q * SCB) * fp32(1/127)): codes (buffer 0), SCB (1)."""
    rows = Step("mul", "float32", (O, I), Stored("int8", (O, I), 0), Stored("float32", (O, 1), 1), blocks=(1, I))
    return Step("mul", "float32", (O, I), rows, Constant.from_bits("float32", FP32_ONE_OVER_127), blocks=(O, I))


def _four_bit(sources: Sources, name: str, blob: str, kind: str) -> Built:
    state = quant_state(sources, name, blob)
    quant_type = state.get("quant_type")
    if quant_type != kind or quant_type not in ("nf4", "fp4"):
        raise contradiction(name, f"quant_state says quant_type {quant_type!r} under the name bitsandbytes__{kind}")
    bs, dtype, shape = state.get("blocksize"), state.get("dtype"), state.get("shape")
    if bs not in BLOCKSIZES:
        raise contradiction(name, f"quant_state blocksize {bs!r} is not one of bnb's {BLOCKSIZES}")
    if dtype not in _DTYPES:
        raise contradiction(name, f"quant_state dtype {dtype!r}")
    if not (isinstance(shape, list) and 1 <= len(shape) <= 8 and all(type(d) is int and d > 0 for d in shape)):
        raise contradiction(name, f"quant_state shape {shape!r}")
    n = math.prod(shape)
    if n >= 1 << 50:
        raise contradiction(name, f"quant_state shape {shape} is too large")
    weight = expect(sources, name, name, ("uint8", "bfloat16", "float16", "float32", "int8"), None, "weight")
    if sources.data(name).size != -(-n // 2):
        raise contradiction(name, f"a {shape} weight needs {-(-n // 2)} bytes of 4-bit codes; "
                                  f"the stored weight ({weight.stored} {list(weight.shape)}) has {sources.data(name).size}")
    blocks = -(-n // bs)
    table = NF4 if quant_type == "nf4" else FP4
    expect(sources, name, f"{name}.quant_map", ("float32",), (16,), "quant_map")
    stored = small(sources, f"{name}.quant_map", np.float32)
    if not _same_table(stored, table, quant_type):
        raise refusal(name, f"its quant_map differs from bnb's {quant_type} table, which bnb dequantizes with")
    arrays = [sources.data(name), sources.data(f"{name}.quant_map")]
    nested = "nested_offset" in state or f"{name}.nested_absmax" in sources
    offset = 0.0
    if nested:
        nbs, nested_offset = state.get("nested_blocksize"), state.get("nested_offset")
        if nbs != 256 or state.get("nested_dtype", "float32") != "float32":
            raise contradiction(name, f"nested_blocksize {nbs!r}, nested_dtype {state.get('nested_dtype')!r}")
        if not isinstance(nested_offset, (int, float)) or isinstance(nested_offset, bool) or \
                not math.isfinite(nested_offset):
            raise contradiction(name, f"nested_offset {nested_offset!r}")
        expect(sources, name, f"{name}.absmax", ("uint8",), (blocks,), "absmax")
        expect(sources, name, f"{name}.nested_quant_map", ("float32",), (256,), "nested_quant_map")
        expect(sources, name, f"{name}.nested_absmax", ("float32",), (-(-blocks // 256),), "nested_absmax")
        offset = float(nested_offset)
        arrays += [sources.data(f"{name}.absmax"), sources.data(f"{name}.nested_quant_map"),
                   sources.data(f"{name}.nested_absmax")]
    else:
        expect(sources, name, f"{name}.absmax", ("float32",), (blocks,), "absmax")
        arrays.append(sources.data(f"{name}.absmax"))
    words = (f"{quant_type} codebook, blocks of {bs} over the flattened tensor, "
             f"{'nested (uint8, 256) ' if nested else ''}fp32 absmax, {SHORT[dtype]} result (bitsandbytes)")
    return Built(Descriptor.graph(tuple(shape), four_bit_graph(n, bs, nested, offset), result_dtype=dtype),
                 tuple(arrays), words)


def _int8(sources: Sources, name: str, module: str) -> Built:
    weight = expect(sources, name, name, ("int8",), None, "weight").shape
    if len(weight) != 2:
        raise contradiction(name, f"an LLM.int8 weight of shape {list(weight)}, not [out, in]")
    O, I = weight
    expect(sources, name, f"{module}.SCB", ("float32",), (O,), "SCB")
    fmt_key = f"{module}.weight_format"
    if fmt_key in sources:
        expect(sources, name, fmt_key, ("uint8", "int64", "int32"), None, "weight_format")
        value = small(sources, fmt_key, sources.entry(fmt_key).dtype).reshape(-1)
        if value.size != 1 or int(value[0]) != 0:
            raise refusal(name, f"LLM.int8 weight_format {value.tolist()} (only 0, row, is loadable)")
    arrays = (sources.data(name), sources.data(f"{module}.SCB"))
    return Built(Descriptor.graph((O, I), int8_graph(O, I), result_dtype="float32"), arrays,
                 "int8 symmetric, per output row, fp32 scales times fp32(1/127) (bitsandbytes LLM.int8)")


# ---- writing -------------------------------------------------------------------------

def state(name: str, tensor: Any) -> Stated:
    """A Linear4bit or Linear8bitLt state dict's entries for a weight whose graph is bnb's."""
    if not name.endswith(".weight"):
        raise unstatable(name, "bitsandbytes", "a quantized weight's name must end in '.weight'")
    desc = tensor.descriptor
    step, result = desc.root, desc.result_dtype
    shape = tuple(desc.shape)
    if len(shape) == 2 and same_graph(desc, shape, int8_graph(*shape)):
        O, I = shape
        return Stated({name: stored_as(tensor, 0, np.int8, shape), f"{name[:-7]}.SCB": stored_as(tensor, 1, "<f4", (O,)),
                       f"{name[:-7]}.weight_format": np.zeros((), np.uint8)}, {"kind": "int8"})
    if not (isinstance(step, Step) and len(step.shape) == 1 and step.blocks is not None):
        raise unstatable(name, "bitsandbytes", "it is not NF4/FP4 codes times a block absmax, nor LLM.int8")
    n, bs = step.shape[0], step.blocks[0]
    scale = step.scale
    nested = isinstance(scale, Step)
    offset = scale.offset.value if isinstance(scale, Step) and isinstance(scale.offset, Constant) else 0.0
    if bs not in BLOCKSIZES or n != math.prod(shape) or not same_graph(desc, shape,
                                                                       four_bit_graph(n, bs, nested, offset)):
        raise unstatable(name, "bitsandbytes", "its graph is not bnb's 4-bit one")
    table = stored_as(tensor, 1, "<f4", (16,))
    kinds = [k for k, ref in (("nf4", NF4), ("fp4", FP4)) if _same_table(table, ref, k)]
    if not kinds or result not in _DTYPES:
        raise unstatable(name, "bitsandbytes", "its codebook is not bnb's NF4 or FP4 table, or its result dtype "
                                               f"{result} is not one bnb restores")
    blocks = -(-n // bs)
    entries = {name: stored_as(tensor, 0, np.uint8, (-(-n // 2), 1)), f"{name}.quant_map": table}
    blob: dict[str, Any] = {"quant_type": kinds[0], "blocksize": bs, "dtype": result, "shape": list(shape)}
    if nested:
        entries[f"{name}.absmax"] = stored_as(tensor, 2, np.uint8, (blocks,))
        entries[f"{name}.nested_absmax"] = stored_as(tensor, 4, "<f4", (-(-blocks // 256),))
        entries[f"{name}.nested_quant_map"] = stored_as(tensor, 3, "<f4", (256,))
        blob.update({"nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": offset})
    else:
        entries[f"{name}.absmax"] = stored_as(tensor, 2, "<f4", (blocks,))
    text = json.dumps(blob).encode("utf-8")
    entries[f"{name}.quant_state.bitsandbytes__{kinds[0]}"] = np.frombuffer(text, np.uint8).copy()
    return Stated(entries, {"kind": kinds[0], "nested": nested, "dtype": result})


def config(params: list[dict[str, Any]]) -> dict[str, Any]:
    """transformers' BitsAndBytesConfig fields (bnb itself reads the quant_state entries)."""
    four = [p for p in params if p["kind"] != "int8"]
    if four and len(four) != len(params):
        raise unstatable("(several)", "bitsandbytes", "4-bit and LLM.int8 weights in one checkpoint")
    if not four:
        return {"quant_method": "bitsandbytes", "load_in_8bit": True, "load_in_4bit": False,
                "llm_int8_threshold": 0.0, "llm_int8_has_fp16_weight": False}
    return {"quant_method": "bitsandbytes", "load_in_4bit": True, "load_in_8bit": False,
            "bnb_4bit_quant_type": four[0]["kind"], "bnb_4bit_use_double_quant": four[0]["nested"],
            "bnb_4bit_compute_dtype": four[0]["dtype"], "bnb_4bit_quant_storage": "uint8"}
