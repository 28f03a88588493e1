"""compressed-tensors checkpoints (QUANT-FORMATS § 1): config.json's
``quantization_config`` with ``quant_method: "compressed-tensors"``.

Recognised per module from its stored names: ``weight_packed`` (pack-,
nvfp4-, mxfp4- and mxfp6-pack-quantized) or ``weight`` with
``weight_scale`` (naive-, int-, float- and mxfp8-quantized). The module's
QuantizationArgs come from the one config group that can apply to it (a
target it names, a ``re:`` pattern that matches it, or a class name, which
may apply to any module); two groups with different args that could both
apply are refused as ambiguous. The sub-byte packing of pack-quantized
3/5/6/7-bit codes is keyed on ``quantization_config.version``: a dense bit
stream per row from 0.18.0, floor(32/b) codes per word before it; an
absent or unreadable version, or one newer than this build knows, is
refused for those widths (1/2/4/8 bits pack alike in every version).

The graphs (v2-spec § 6): STEP(SUB_MUL or MUL) in the scale dtype over the
codes (offset binary: code_offset -2^(b-1)) and the zero points; NVFP4 a
MUL in fp32 by an e4m3 scale divided by the global scale; MXFP4/6/8 a MUL
in bf16 by E8M0 scales with 255 as infinity.
"""
from __future__ import annotations

import math
import json
import re
from functools import partial
from typing import Any, Optional

import numpy as np

from ._claims import SHORT, Built, Claim, Stated, contradiction, expect, module_of, refusal, row_major, small, stored_as, \
    unstatable
from ..._core import anchored_claims as _anchored_claims, companions as _companions
from ...core.descriptor import Descriptor
from ...core.nodes import Node, Step, Stored, Words
from ._graph import container_bits, same_graph
from .sources import Sources

__all__ = ["KNOWN_UP_TO", "affine_graph", "claim", "config", "dense_from", "fp_graph", "packed_codes", "packed_zeros",
           "state", "version_of"]

CONVENTION = "compressed-tensors"
KNOWN_UP_TO = (0, 20)  # the newest minor version whose layouts this build was checked against
DENSE_FROM = (0, 18)
_WIDE = ("float16", "bfloat16", "float32")
_PACKED = ("pack-quantized", "nvfp4-pack-quantized", "mxfp4-pack-quantized", "mxfp6-pack-quantized")
_UNPACKED = ("naive-quantized", "int-quantized", "float-quantized", "mxfp8-quantized")
_SUFFIXES = ("weight_packed", "weight_scale", "weight_zero_point", "weight_global_scale", "weight_shape",
             "weight_g_idx")
_SUFFIX_INDEX = {suffix: i for i, suffix in enumerate(_SUFFIXES)}  # weight_packed 0, weight_scale 1


def version_of(config: dict[str, Any]) -> Optional[tuple[int, int]]:
    """(major, minor) of quantization_config.version, or None when absent or unreadable."""
    value = config.get("version")
    match = re.match(r"^(\d+)\.(\d+)(\.|$)", value) if isinstance(value, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def dense_from(version: tuple[int, int]) -> bool:
    return version >= DENSE_FROM


def _matches(target: Any, module: str) -> Optional[bool]:
    """True/False when `target` names or patterns `module`; None for a class name (may apply to any)."""
    if not isinstance(target, str):
        return False
    if target.startswith("re:"):
        try:
            return re.match(target[3:], module) is not None
        except re.error:
            return False
    if target == module:
        return True
    return None if "." not in target and target[:1].isupper() else False


def _args_for(name: str, module: str, config: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(the weights' QuantizationArgs, the format) of `module`, or a refusal."""
    groups = config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise refusal(name, "quantization_config has no config_groups")
    certain, possible = [], []
    for gname, group in groups.items():
        if not isinstance(group, dict):
            continue
        targets = group.get("targets") or []
        hits = [_matches(t, module) for t in targets] if isinstance(targets, list) else []
        if any(h is True for h in hits):
            certain.append(group)
        elif any(h is None for h in hits):
            possible.append(group)
    chosen = certain or possible
    weights = [g.get("weights") for g in chosen]
    if not chosen or not isinstance(weights[0], dict):
        raise refusal(name, f"no config group of quantization_config targets module {module!r}")
    if any(w != weights[0] for w in weights):
        raise refusal(name, f"{len(chosen)} config groups with different weight args may apply to module "
                            f"{module!r} (their targets are class names): ambiguous")
    fmt = chosen[0].get("format") or config.get("format")
    if not isinstance(fmt, str) or fmt == "mixed-precision":
        raise refusal(name, f"the format of module {module!r} is {fmt!r}: no config group states it")
    return weights[0], fmt


def claim(sources: Sources, config: dict[str, Any]) -> dict[str, Claim]:
    status = config.get("quantization_status")
    for key in ("sparsity_config", "transform_config"):
        if config.get(key):
            return _refuse_all(sources, f"quantization_config.{key} is set: sparse or transformed weights "
                                        "are not elementwise quantization")
    if status not in (None, "compressed"):
        return {}  # frozen or calibrated: dense weights, nothing packed
    # module -> its companions in _SUFFIX_INDEX's order (None where absent), then a claim per module
    # with weight_packed, or with weight_scale beside its own .weight: each in one pass in C
    found = _companions(sources, _SUFFIX_INDEX)
    return _anchored_claims(found, Claim, CONVENTION, partial, partial(_configured, config), sources)


def _refused(sources: Sources, name: str, reason: str) -> Built:
    raise refusal(name, reason)


def _refuse_all(sources: Sources, reason: str) -> dict[str, Claim]:
    out = {}
    for entry in sources:
        if entry.endswith(".weight_packed") or entry.endswith(".weight_scale"):
            module = entry.rsplit(".", 1)[0]
            name = module + ".weight"
            out[name] = Claim(name, CONVENTION, (entry,), partial(_refused, name=name, reason=reason))
    return out


def _configured(config: dict[str, Any], name: str, module: str, sources: Sources) -> Built:
    args, fmt = _args_for(name, module, config)
    return _build(sources, name, module, args, fmt, config)


def _strategy(args: dict[str, Any]) -> str:
    strategy = args.get("strategy")
    if isinstance(strategy, str):
        return strategy
    gs = args.get("group_size")
    return "tensor" if gs is None else ("channel" if gs == -1 else "group")


def _grid(name: str, shape: tuple[int, ...], args: dict[str, Any], strategy: str
          ) -> tuple[tuple[int, ...], tuple[int, ...], bool, str]:
    """(blocks, grid shape, ragged, words) of the strategy over the weight's shape."""
    lead, rows, cols = shape[:-2], shape[-2], shape[-1]
    ones = (1,) * len(lead)
    if strategy == "tensor":
        return shape, (1,) * len(shape), False, "per tensor"
    if strategy == "channel":
        return ones + (1, cols), lead + (rows, 1), False, "per output channel"
    if strategy in ("group", "tensor_group"):
        gs = args.get("group_size")
        if type(gs) is not int or gs <= 0:
            raise refusal(name, f"strategy {strategy!r} with group_size {gs!r}")
        if cols % gs:
            raise contradiction(name, f"group_size {gs} does not divide the {cols} input columns "
                                      "(compressed-tensors refuses ragged groups)")
        return ones + (1, gs), lead + (rows, cols // gs), False, f"groups of {gs}"
    if strategy == "block":
        block = args.get("block_structure")
        if isinstance(block, str) and re.match(r"^\d+x\d+$", block):
            block = [int(v) for v in block.split("x")]
        if not (isinstance(block, list) and len(block) == 2 and all(type(v) is int and v > 0 for v in block)):
            raise refusal(name, f"block strategy with block_structure {block!r}")
        bh, bw = block
        grid = lead + (-(-rows // bh), -(-cols // bw))
        return ones + (bh, bw), grid, rows % bh != 0 or cols % bw != 0, f"blocks of {bh}x{bw}"
    raise refusal(name, f"weight strategy {strategy!r} is not one weights are stored with")


def _logical_shape(sources: Sources, name: str, module: str, packed: tuple[int, ...], per_word: float
                   ) -> tuple[int, ...]:
    """The weight's shape: weight_shape when stored (checked against the packed rows), else from the packing."""
    key = f"{module}.weight_shape"
    if key not in sources:
        width = packed[-1] * per_word
        if width != int(width):
            raise contradiction(name, f"its companion {key!r} is missing, and the packing does not fix the width")
        return packed[:-1] + (int(width),)
    expect(sources, name, key, ("int64", "int32"), (len(packed),), "weight_shape")
    stated = tuple(small(sources, key, sources.entry(key).dtype).tolist())
    if stated[:-1] != packed[:-1] or any(v <= 0 for v in stated):
        raise contradiction(name, f"weight_shape says {list(stated)}, but weight_packed has shape {list(packed)}")
    return stated


def _build(sources: Sources, name: str, module: str, args: dict[str, Any], fmt: str,
           config: dict[str, Any]) -> Built:
    if args.get("dynamic") not in (False, None):
        raise refusal(name, f"weights with dynamic={args.get('dynamic')!r} are quantized at run time, not stored")
    if fmt in ("nvfp4-pack-quantized", "mxfp4-pack-quantized", "mxfp6-pack-quantized", "mxfp8-quantized"):
        return _build_fp(sources, name, module, args, fmt)
    if fmt not in _PACKED + _UNPACKED:
        raise refusal(name, f"compressed-tensors format {fmt!r} is not one this build reads")
    kind, bits = args.get("type", "int"), args.get("num_bits", 8)
    if type(bits) is not int or not 1 <= bits <= 8:
        raise refusal(name, f"num_bits {bits!r}")
    strategy = _strategy(args)
    scale_key, zp_key = f"{module}.weight_scale", f"{module}.weight_zero_point"
    if f"{module}.weight_g_idx" in sources:
        raise refusal(name, "weight_g_idx (the removed 'group' actorder of compressed-tensors <= 0.9) is not read")
    if fmt == "pack-quantized":
        if kind != "int":
            raise contradiction(name, f"pack-quantized with type {kind!r}")
        version = version_of(config)
        if bits not in (1, 2, 4, 8):
            if version is None:
                raise refusal(name, f"{bits}-bit pack-quantized codes: quantization_config.version "
                                    f"{config.get('version')!r} does not say which packing (dense from 0.18, "
                                    "floor(32/b) per word before)")
            if version > KNOWN_UP_TO:
                raise refusal(name, f"compressed-tensors {config.get('version')} is newer than the versions whose "
                                    f"packing this build knows (up to {KNOWN_UP_TO[0]}.{KNOWN_UP_TO[1]})")
        dense = bits in (1, 2, 4, 8) or dense_from(version)  # type: ignore[arg-type]
        packed_key = f"{module}.weight_packed"
        packed = expect(sources, name, packed_key, ("int32",), None, "weight_packed").shape
        if len(packed) < 2:
            raise contradiction(name, f"weight_packed has shape {list(packed)}, not [..., out, words]")
        shape = _logical_shape(sources, name, module, packed, 32 / bits if dense else 32 // bits)
        row_words = -(-shape[-1] * bits // 32) if dense else -(-shape[-1] // (32 // bits))
        if packed[-1] != row_words:
            raise contradiction(name, f"{shape[-1]} columns of {bits}-bit codes need {row_words} words a row, "
                                      f"but weight_packed has {packed[-1]}")
        blocks, grid, ragged, grouping = _grid(name, shape, args, strategy)
        expect(sources, name, scale_key, _WIDE, _squeeze_ok(sources, scale_key, grid), "weight_scale")
        x = packed_codes(shape, bits, dense)
        arrays = [sources.data(packed_key), sources.data(scale_key)]
        zp: Optional[Stored] = None
        if zp_key in sources:
            if args.get("symmetric", True):
                raise contradiction(name, "weight_zero_point is stored, but the config says symmetric")
            if strategy in ("group", "channel"):
                zrows = -(-shape[-2] * bits // 32) if dense else -(-shape[-2] // (32 // bits))
                expect(sources, name, zp_key, ("int32",), grid[:-2] + (zrows, grid[-1]), "weight_zero_point")
                zp = packed_zeros(shape, grid, bits, dense)
            else:
                expect(sources, name, zp_key, ("int8",), _squeeze_ok(sources, zp_key, grid), "weight_zero_point")
                zp = Stored("int8", grid, 2)
            arrays.append(sources.data(zp_key))
        elif not args.get("symmetric", True):
            raise contradiction(name, f"its companion {zp_key!r} is missing (the config says asymmetric)")
        label = f"pack-quantized {config.get('version')}"
        code_words = f"int{bits}"
    else:
        weight = expect(sources, name, name, ("int8",) if kind == "int" else ("float8_e4m3fn",), None, "weight")
        shape = weight.shape
        if kind == "float" and bits != 8:
            raise contradiction(name, f"{fmt} float weights of {bits} bits")
        blocks, grid, ragged, grouping = _grid(name, shape, args, strategy)
        expect(sources, name, scale_key, _WIDE, _squeeze_ok(sources, scale_key, grid), "weight_scale")
        x = Stored(weight.dtype or "int8", shape, 0)
        arrays = [sources.data(name), sources.data(scale_key)]
        zp = None
        if zp_key in sources:
            if kind == "float":
                raise refusal(name, "a zero point for float weights")
            expect(sources, name, zp_key, ("int8",), _squeeze_ok(sources, zp_key, grid), "weight_zero_point")
            zp = Stored("int8", grid, 2)
            arrays.append(sources.data(zp_key))
        elif not args.get("symmetric", True):
            raise contradiction(name, f"its companion {zp_key!r} is missing (the config says asymmetric)")
        label = fmt
        code_words = "fp8 e4m3" if kind == "float" else f"int{bits}"
    t = sources.entry(scale_key).dtype or "float32"
    form = "affine" if zp is not None else "symmetric"
    words = f"{code_words} {form}, {grouping}, {SHORT[t]} scales ({CONVENTION} {label})"
    return Built(Descriptor.graph(shape, affine_graph(shape, x, t, blocks, grid, ragged, zp), result_dtype=t),
                 tuple(arrays), words)


def packed_codes(shape: tuple[int, ...], bits: int, dense: bool) -> Stored:
    """weight_packed (buffer 0): offset-binary b-bit codes in int32 words along the last axis."""
    words = -(-shape[-1] * bits // 32) if dense else -(-shape[-1] // (32 // bits))
    return Stored(f"uint{bits}", shape, 0, strides=row_major(shape[:-1] + (words,)),
                  packing=_words(bits, dense, len(shape) - 1), code_offset=-(1 << (bits - 1)))


def packed_zeros(shape: tuple[int, ...], grid: tuple[int, ...], bits: int, dense: bool) -> Stored:
    """weight_zero_point of group and channel strategies (buffer 2): packed down the output axis."""
    rows = -(-shape[-2] * bits // 32) if dense else -(-shape[-2] // (32 // bits))
    return Stored(f"uint{bits}", grid, 2, strides=row_major(grid[:-2] + (rows, grid[-1])),
                  packing=_words(bits, dense, len(grid) - 2), code_offset=-(1 << (bits - 1)))


def _words(bits: int, dense: bool, axis: int) -> Words:
    """A dense stream from 0.18.0; floor(32/b) codes a word, LSB first, before it."""
    return Words(32, packed_axis=axis) if dense else Words.slots(32, bits, axis)


def affine_graph(shape: tuple[int, ...], x: Stored, t: str, blocks: tuple[int, ...], grid: tuple[int, ...],
                 ragged: bool, zp: Optional[Stored]) -> Node:
    """(q - zp) * s or q * s in the scale dtype t: codes x (buffer 0), scales (1), zero points (2)."""
    s = Stored(t, grid, 1)
    if zp is None:
        return Step("mul", t, shape, x, s, blocks=blocks, ragged=ragged)
    return Step("sub_mul", t, shape, x, s, zp, blocks=blocks, ragged=ragged)


def fp_graph(shape: tuple[int, ...], fmt: str, row_bytes: int = 0) -> Node:
    """nvfp4-, mxfp4-, mxfp6-pack-quantized and mxfp8-quantized: codes (0), scales (1), global scale (2)."""
    rows, cols = shape
    if fmt == "mxfp8-quantized":
        x = Stored("float8_e4m3fn", shape, 0)
    elif fmt == "mxfp6-pack-quantized":
        x = Stored("float6_e2m3fn", shape, 0, strides=(row_bytes or cols * 3 // 4, 1), packing=Words(8, packed_axis=1))
    else:
        x = Stored("float4_e2m1fn", shape, 0, packing="lsb_first")
    if fmt == "nvfp4-pack-quantized":
        grid = (rows, cols // 16)
        scale = Step("div", "float32", grid, Stored("float8_e4m3fn", grid, 1), Stored("float32", (1, 1), 2), blocks=grid)
        return Step("mul", "float32", shape, x, scale, blocks=(1, 16))
    return Step("mul", "bfloat16", shape, x, Stored("float8_e8m0fnu", (rows, cols // 32), 1, value_rule="e8m0_no_nan"),
                blocks=(1, 32))


def _squeeze_ok(sources: Sources, key: str, grid: tuple[int, ...]) -> Optional[tuple[Optional[int], ...]]:
    """The expected shape of a parameter: the grid, or [1] for a per-tensor one (compressed-tensors stores (1,))."""
    if key in sources and math.prod(grid) == 1 and sources.entry(key).shape in ((1,), ()):
        return None
    return grid


def _build_fp(sources: Sources, name: str, module: str, args: dict[str, Any], fmt: str) -> Built:
    scale_key = f"{module}.weight_scale"
    if fmt == "mxfp8-quantized":
        shape = expect(sources, name, name, ("float8_e4m3fn",), None, "weight").shape
        arrays = [sources.data(name)]
        gs, code = 32, "fp8 e4m3"
    else:
        packed_key = f"{module}.weight_packed"
        packed = expect(sources, name, packed_key, ("uint8",), None, "weight_packed").shape
        if len(packed) != 2:
            raise contradiction(name, f"weight_packed has shape {list(packed)}, not [out, bytes]")
        per = 4 / 3 if fmt == "mxfp6-pack-quantized" else 2
        shape = _logical_shape(sources, name, module, packed, per)
        need = shape[1] * 3 // 4 if fmt == "mxfp6-pack-quantized" else -(-shape[1] // 2)
        if packed[1] != need or (fmt == "mxfp6-pack-quantized" and shape[1] % 4):
            raise contradiction(name, f"{shape[1]} columns need {need} bytes a row, but weight_packed has {packed[1]}")
        code = "fp6 e2m3" if fmt == "mxfp6-pack-quantized" else "fp4 e2m1"
        arrays = [sources.data(packed_key)]
        gs = 16 if fmt == "nvfp4-pack-quantized" else 32
    rows, cols = shape
    if cols % gs:
        raise contradiction(name, f"{cols} columns are not a multiple of the group size {gs}")
    grid = (rows, cols // gs)
    if args.get("group_size") not in (None, gs):
        raise contradiction(name, f"{fmt} has groups of {gs}, but the config says group_size {args.get('group_size')}")
    if fmt == "nvfp4-pack-quantized":
        expect(sources, name, scale_key, ("float8_e4m3fn",), grid, "weight_scale")
        gkey = f"{module}.weight_global_scale"
        expect(sources, name, gkey, ("float32",), (1,), "weight_global_scale")
        arrays += [sources.data(scale_key), sources.data(gkey)]
        words = f"{code}, groups of 16, e4m3 scales divided by an fp32 global scale ({CONVENTION} {fmt})"
    else:
        expect(sources, name, scale_key, ("uint8", "float8_e8m0fnu"), grid, "weight_scale")
        arrays.append(sources.data(scale_key))
        words = f"{code}, groups of 32, e8m0 scales (255 is infinity), in bf16 ({CONVENTION} {fmt})"
    return Built(Descriptor.graph(shape, fp_graph(shape, fmt), result_dtype="bfloat16"), tuple(arrays), words)


# ---- writing -------------------------------------------------------------------------

WRITTEN_VERSION = "0.20.1"  # the packing save_checkpoint writes (dense, as every version from 0.18 reads it)
_NP = {"float16": "<f2", "float32": "<f4"}


def _np(dtype: str) -> Any:
    import ml_dtypes

    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(_NP[dtype])


def _strategy_of(shape: tuple[int, ...], blocks: tuple[int, ...], grid: tuple[int, ...], ragged: bool
                 ) -> Optional[dict[str, Any]]:
    """The QuantizationArgs strategy fields that give these groups, or None."""
    rows, cols = shape
    if blocks == shape:
        return {"strategy": "tensor"}
    if blocks == (1, cols):
        return {"strategy": "channel"}
    if blocks[0] == 1 and not ragged and cols % blocks[1] == 0:
        return {"strategy": "group", "group_size": blocks[1]}
    return {"strategy": "block", "block_structure": list(blocks)}


def state(name: str, tensor: Any) -> Stated:
    """The stored tensors and the QuantizationArgs of a weight whose graph is a compressed-tensors one."""
    module = module_of(name, CONVENTION)
    desc = tensor.descriptor
    shape = tuple(desc.shape)
    if len(shape) != 2:
        raise unstatable(name, CONVENTION, f"a weight of rank {len(shape)} (this build writes [out, in] weights)")
    for fmt in ("nvfp4-pack-quantized", "mxfp4-pack-quantized", "mxfp6-pack-quantized", "mxfp8-quantized"):
        if shape[1] % 16 == 0 and same_graph(desc, shape, fp_graph(shape, fmt)):
            return _state_fp(name, module, tensor, shape, fmt)
    step = desc.root
    if not (isinstance(step, Step) and isinstance(step.x, Stored) and isinstance(step.scale, Stored)
            and step.form in ("mul", "sub_mul") and step.arithmetic in _WIDE and step.blocks is not None
            and (step.offset is None) == (step.form == "mul") and step.group_index is None):
        raise unstatable(name, CONVENTION, "it is not q * s or (q - zp) * s in the scale dtype")
    x = step.x
    t = step.arithmetic
    grid = step.scale.shape
    strategy = _strategy_of(shape, step.blocks, grid, step.ragged)
    if strategy is None:
        raise unstatable(name, CONVENTION, "its groups are not a strategy compressed-tensors has")
    zp_node = step.offset
    entries: dict[str, np.ndarray] = {}
    if x.dtype.startswith("uint") and container_bits(x) == 32:
        bits = int(x.dtype[4:])
        fmt, args = "pack-quantized", {"num_bits": bits, "type": "int"}
        xs = packed_codes(shape, bits, True)
        zp: Optional[Stored] = None
        if zp_node is not None:
            zp = packed_zeros(shape, grid, bits, True) if strategy["strategy"] in ("group", "channel") else \
                Stored("int8", grid, 2)
        words = -(-shape[1] * bits // 32)
        entries[f"{module}.weight_packed"] = stored_as(tensor, 0, "<i4", (shape[0], words))
        entries[f"{module}.weight_shape"] = np.array(shape, np.int64)
    elif x.dtype in ("int8", "float8_e4m3fn"):
        kind = "int" if x.dtype == "int8" else "float"
        fmt, args = ("naive-quantized" if kind == "int" else "float-quantized"), {"num_bits": 8, "type": kind}
        xs, zp = Stored(x.dtype, shape, 0), (Stored("int8", grid, 2) if zp_node is not None else None)
        entries[name] = tensor_view(tensor, 0, x.dtype, shape)
    else:
        raise unstatable(name, CONVENTION, f"its codes are {x.dtype}, not packed ints, int8 or e4m3")
    if not same_graph(desc, shape, affine_graph(shape, xs, t, step.blocks, grid, step.ragged, zp)):
        raise unstatable(name, CONVENTION, f"its graph is not compressed-tensors' {fmt} one")
    per_tensor = strategy["strategy"] == "tensor"
    entries[f"{module}.weight_scale"] = stored_as(tensor, 1, _np(t), (1,) if per_tensor else grid)
    if zp is not None:
        if container_bits(zp):
            rows = -(-shape[0] * int(x.dtype[4:]) // 32)
            entries[f"{module}.weight_zero_point"] = stored_as(tensor, 2, "<i4", (rows, grid[1]))
        else:
            entries[f"{module}.weight_zero_point"] = stored_as(tensor, 2, np.int8, (1,) if per_tensor else grid)
    args.update(symmetric=zp is None, dynamic=False, **strategy)
    return Stated(entries, {"format": fmt, "weights": args})


def tensor_view(tensor: Any, index: int, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    import ml_dtypes

    return stored_as(tensor, index, np.int8 if dtype == "int8" else ml_dtypes.float8_e4m3fn, shape)


def _state_fp(name: str, module: str, tensor: Any, shape: tuple[int, ...], fmt: str) -> Stated:
    import ml_dtypes

    rows, cols = shape
    entries: dict[str, np.ndarray] = {}
    if fmt == "mxfp8-quantized":
        entries[name] = stored_as(tensor, 0, ml_dtypes.float8_e4m3fn, shape)
    else:
        per_row = cols * 3 // 4 if fmt == "mxfp6-pack-quantized" else cols // 2
        entries[f"{module}.weight_packed"] = stored_as(tensor, 0, np.uint8, (rows, per_row))
    if fmt == "nvfp4-pack-quantized":
        entries[f"{module}.weight_scale"] = stored_as(tensor, 1, ml_dtypes.float8_e4m3fn, (rows, cols // 16))
        entries[f"{module}.weight_global_scale"] = stored_as(tensor, 2, "<f4", (1,))
        args = {"num_bits": 4, "type": "float", "symmetric": True, "strategy": "tensor_group", "group_size": 16,
                "dynamic": False, "scale_dtype": "torch.float8_e4m3fn"}
    else:
        entries[f"{module}.weight_scale"] = stored_as(tensor, 1, np.uint8, (rows, cols // 32))
        bits = {"mxfp4-pack-quantized": 4, "mxfp6-pack-quantized": 6, "mxfp8-quantized": 8}[fmt]
        args = {"num_bits": bits, "type": "float", "symmetric": True, "strategy": "group", "group_size": 32,
                "dynamic": False, "scale_dtype": "torch.uint8"}
    return Stated(entries, {"format": fmt, "weights": args})


def config(by_module: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """quantization_config: one config group per distinct (format, args), targeting its modules by name."""
    groups: dict[str, dict[str, Any]] = {}
    keys: dict[str, str] = {}
    for module, p in by_module.items():
        key = json.dumps(p, sort_keys=True)
        if key not in keys:
            keys[key] = f"group_{len(keys)}"
            groups[keys[key]] = {"format": p["format"], "input_activations": None, "output_activations": None,
                                 "targets": [], "weights": p["weights"]}
        groups[keys[key]]["targets"].append(module)
    formats = {g["format"] for g in groups.values()}
    return {"config_groups": groups, "format": formats.pop() if len(formats) == 1 else "mixed-precision",
            "global_compression_ratio": None, "ignore": [], "kv_cache_scheme": None, "moe_sparsity_config": None,
            "quant_method": CONVENTION, "quantization_status": "compressed", "sparsity_config": {},
            "transform_config": {}, "version": WRITTEN_VERSION}
