"""mlx-lm checkpoints (QUANT-FORMATS § 4): ``config.json`` ``quantization``
(group_size, bits, mode, and per-module overrides keyed by path, ``false``
for a module left as it is), ``__metadata__ {"format": "mlx"}``.

A module is quantized when ``<path>.scales`` is stored (mlx-lm's own rule).
affine: w uint32 [..., O, I*b/32], one dense LSB-first stream per row;
scales and biases [..., O, I/gs] in the model dtype; STEP(MUL_ADD) in the
scale dtype, MLX's two roundings. mxfp4 / mxfp8: STEP(MUL, bf16) by E8M0
scales with 255 as infinity (mx.dequantize's default output, bf16).
nvfp4: STEP(MUL, bf16) by e4m3 scales; with ``global_scale`` (per expert
for switch layers) everything in fp32, the e4m3 scale times
fp32(global / 2688), and the output fp32, as MLX returns it.
"""
from __future__ import annotations

import json
from functools import partial
from typing import Any, Optional

import numpy as np

from ._claims import SHORT, Built, Claim, Stated, contradiction, expect, module_of, refusal, row_major, stored_as, \
    unstatable
from ...core.descriptor import Descriptor
from ...core.nodes import Constant, Node, Step, Stored, Words
from ._graph import container_bits, same_graph
from .sources import Sources

__all__ = ["DEFAULTS", "applies", "claim", "config", "mlx_graph", "state"]

CONVENTION = "mlx"
DEFAULTS = {"affine": (64, 4), "mxfp4": (32, 4), "nvfp4": (16, 4), "mxfp8": (32, 8)}
AFFINE_BITS = (1, 2, 3, 4, 5, 6, 8)
_WIDE = ("float16", "bfloat16", "float32")


def applies(sources: Sources, config: Optional[dict[str, Any]]) -> bool:
    if config is not None and isinstance(config.get("quantization"), dict):
        return True
    return sources.metadata.get("format") == "mlx" and any(n.endswith(".scales") for n in sources)


def claim(sources: Sources, config: Optional[dict[str, Any]]) -> dict[str, Claim]:
    quant = (config or {}).get("quantization")
    out: dict[str, Claim] = {}
    for entry in sources:
        if entry.endswith(".scales"):
            module = entry[: -len(".scales")]
            name = module + ".weight"
            parts = tuple(n for n in (name, entry, f"{module}.biases", f"{module}.global_scale") if n in sources)
            out[name] = Claim(name, CONVENTION, parts, partial(_build, name=name, module=module, quant=quant))
    return out


def _params(name: str, module: str, quant: Any) -> tuple[int, int, str, bool]:
    if not isinstance(quant, dict):
        raise refusal(name, "config.json has no 'quantization' dict to give its group size and bits")
    own = quant.get(module, None)
    if own is False:
        raise contradiction(name, f"config.json leaves module {module!r} unquantized, but {module}.scales is stored")
    source = own if isinstance(own, dict) else quant
    mode = source.get("mode", "affine")
    if not isinstance(mode, str) or mode not in DEFAULTS:
        raise refusal(name, f"MLX mode {mode!r} (this build reads {', '.join(DEFAULTS)})")
    gs, bits = source.get("group_size", DEFAULTS[mode][0]), source.get("bits", DEFAULTS[mode][1])
    if type(gs) is not int or type(bits) is not int:
        raise contradiction(name, f"group_size {gs!r}, bits {bits!r}")
    return gs, bits, mode, bool(source.get("global_scale", False))


def mlx_graph(shape: tuple[int, ...], stored: tuple[int, ...], gs: int, bits: int, mode: str, dtype: str,
              global_scale: bool) -> tuple[Node, str]:
    """(graph, result dtype) of an MLX weight of `shape`, its w stored as uint32 words of shape `stored`."""
    rank = len(shape)
    blocks = (1,) * (rank - 1) + (gs,)
    grid = shape[:-1] + (shape[-1] // gs,)
    if mode == "affine":
        x = Stored(f"uint{bits}", shape, 0, strides=row_major(stored), packing=Words(32, packed_axis=rank - 1))
        return Step("mul_add", dtype, shape, x, Stored(dtype, grid, 1), Stored(dtype, grid, 2), blocks=blocks), dtype
    x = Stored("float8_e4m3fn", shape, 0) if mode == "mxfp8" else Stored("float4_e2m1fn", shape, 0,
                                                                          packing="lsb_first")
    if mode in ("mxfp4", "mxfp8"):
        return Step("mul", "bfloat16", shape, x, Stored("float8_e8m0fnu", grid, 1, value_rule="e8m0_no_nan"),
                    blocks=blocks), "bfloat16"
    if not global_scale:
        return Step("mul", "bfloat16", shape, x, Stored("float8_e4m3fn", grid, 1), blocks=blocks), "bfloat16"
    per = shape[:-2] + (1, 1) if rank >= 3 else (1, 1)
    per_blocks = tuple(g // p for g, p in zip(grid, per))
    factor = Step("div", "float32", per, Stored("float32", per, 2), Constant("float32", 2688.0))
    scale = Step("mul", "float32", grid, Stored("float8_e4m3fn", grid, 1), factor, blocks=per_blocks)
    return Step("mul", "float32", shape, x, scale, blocks=blocks), "float32"


def _build(sources: Sources, name: str, module: str, quant: Any) -> Built:
    gs, bits, mode, global_scale = _params(name, module, quant)
    w = expect(sources, name, name, ("uint32",), None, "weight").shape
    if len(w) < 2:
        raise contradiction(name, f"a quantized MLX weight of shape {list(w)}")
    if mode == "affine":
        if bits not in AFFINE_BITS or gs not in (32, 64, 128):
            raise contradiction(name, f"MLX affine with bits {bits} and group_size {gs}")
        cols = w[-1] * 32 // bits
        if w[-1] * 32 % bits:
            raise contradiction(name, f"{w[-1]} words a row do not hold whole {bits}-bit codes")
    else:
        if (gs, bits) != DEFAULTS[mode]:
            raise contradiction(name, f"MLX {mode} has groups of {DEFAULTS[mode][0]} and {DEFAULTS[mode][1]} bits, "
                                      f"not {gs} and {bits}")
        cols = w[-1] * (4 if mode == "mxfp8" else 8)
    if cols % gs:
        raise contradiction(name, f"{cols} columns are not a multiple of the group size {gs}")
    shape = w[:-1] + (cols,)
    grid = shape[:-1] + (cols // gs,)
    scales = f"{module}.scales"
    if mode == "affine":
        dtype = expect(sources, name, scales, _WIDE, grid, "scales").dtype or "float32"
        expect(sources, name, f"{module}.biases", (dtype,), grid, "biases")
        keys = [name, scales, f"{module}.biases"]
        words = f"uint{bits} affine (q*s+b), groups of {gs}, {SHORT[dtype]} scales and biases (mlx-lm affine)"
    else:
        expect(sources, name, scales, ("uint8", "float8_e8m0fnu", "float8_e4m3fn"), grid, "scales")
        dtype = "bfloat16"
        keys = [name, scales]
        if global_scale:
            gkey = f"{module}.global_scale"
            experts = shape[:-2]
            found = expect(sources, name, gkey, ("float32",), None, "global_scale").shape
            if (found if experts else tuple(d for d in found if d != 1)) != (experts if experts else ()):
                raise contradiction(name, f"global_scale has shape {list(found)}, not {list(experts) or [1]}")
            keys.append(gkey)
        elif f"{module}.global_scale" in sources:
            raise contradiction(name, "global_scale is stored, but the config does not say global_scale")
        scale_words = "e8m0 scales (255 is infinity)" if mode != "nvfp4" else "e4m3 scales"
        words = f"{'fp8 e4m3' if mode == 'mxfp8' else 'fp4 e2m1'}, groups of {gs}, {scale_words}" + \
            (", times fp32(global / 2688), in fp32" if global_scale else ", in bf16") + f" (mlx-lm {mode})"
    root, result = mlx_graph(shape, w, gs, bits, mode, dtype, global_scale)
    return Built(Descriptor.graph(shape, root, result_dtype=result), tuple(sources.data(k) for k in keys), words)


# ---- writing -------------------------------------------------------------------------

def _mode_of(step: Any) -> Optional[tuple[str, int, int, bool]]:
    """(mode, group size, bits, global scale) an MLX graph would have, read from its root and codes."""
    if not isinstance(step, Step) or not isinstance(step.x, Stored) or step.blocks is None:
        return None
    x, gs = step.x, step.blocks[-1]
    if step.form == "mul_add" and x.dtype.startswith("uint") and container_bits(x) == 32:
        return "affine", gs, int(x.dtype[4:]), False
    if x.dtype == "float8_e4m3fn":
        return "mxfp8", gs, 8, False
    if x.dtype == "float4_e2m1fn":
        if gs == 32:
            return "mxfp4", gs, 4, False
        return "nvfp4", gs, 4, isinstance(step.scale, Step)
    return None


def state(name: str, tensor: Any) -> Stated:
    """weight (uint32 words), scales, biases and global_scale of a weight whose graph is an MLX one."""
    module = module_of(name, "MLX")
    desc = tensor.descriptor
    step = desc.root
    shape = tuple(desc.shape)
    found = _mode_of(step)
    if found is None or len(shape) < 2:
        raise unstatable(name, "MLX", "it is not an affine, mxfp4, mxfp8 or nvfp4 graph")
    mode, gs, bits, global_scale = found
    per = 32 // bits if mode == "affine" else (4 if mode == "mxfp8" else 8)
    if mode == "affine" and shape[-1] * bits % 32:
        raise unstatable(name, "MLX", f"rows of {shape[-1]} {bits}-bit codes do not fill whole words")
    stored = shape[:-1] + (shape[-1] * bits // 32 if mode == "affine" else shape[-1] // per,)
    dtype = step.scale.dtype if mode == "affine" and isinstance(step.scale, Stored) else "bfloat16"
    if (mode != "affine" and (gs, bits) != DEFAULTS[mode]) or (mode == "affine" and (
            bits not in AFFINE_BITS or gs not in (32, 64, 128))) or shape[-1] % gs:
        raise unstatable(name, "MLX", f"{mode} with groups of {gs} and {bits} bits")
    if not same_graph(desc, shape, mlx_graph(shape, stored, gs, bits, mode, dtype, global_scale)[0]):
        raise unstatable(name, "MLX", f"its graph is not MLX's {mode} one")
    import ml_dtypes

    grid = shape[:-1] + (shape[-1] // gs,)
    entries = {name: stored_as(tensor, 0, "<u4", stored)}
    if mode == "affine":
        np_dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
        entries[f"{module}.scales"] = stored_as(tensor, 1, np_dtype, grid)
        entries[f"{module}.biases"] = stored_as(tensor, 2, np_dtype, grid)
    else:
        entries[f"{module}.scales"] = stored_as(tensor, 1, np.uint8, grid)
        if global_scale:
            entries[f"{module}.global_scale"] = stored_as(tensor, 2, "<f4", shape[:-2] or (1,))
    params: dict[str, Any] = {"group_size": gs, "bits": bits, "mode": mode}
    if global_scale:
        params["global_scale"] = True
    return Stated(entries, params)


def config(by_module: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """mlx-lm's quantization dict: the most common parameters, and an entry for each module that differs."""
    counts: dict[str, int] = {}
    for p in by_module.values():
        key = json.dumps(p, sort_keys=True)
        counts[key] = counts.get(key, 0) + 1
    default = json.loads(max(counts, key=lambda k: counts[k])) if counts else {"group_size": 64, "bits": 4,
                                                                               "mode": "affine"}
    out: dict[str, Any] = dict(default)
    for module, p in by_module.items():
        if p != default:
            out[module] = p
    return out
