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

from functools import partial
from typing import Any, Optional

from ._claims import SHORT, Built, Claim, contradiction, expect, refusal, row_major
from ._graph import Constant, Node, Step, Stored, build, constant_bits
from .sources import Sources

__all__ = ["DEFAULTS", "applies", "claim", "mlx_graph"]

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
    if mode not in DEFAULTS:
        raise refusal(name, f"MLX mode {mode!r} (this build reads {', '.join(DEFAULTS)})")
    gs, bits = source.get("group_size", DEFAULTS[mode][0]), source.get("bits", DEFAULTS[mode][1])
    if type(gs) is not int or type(bits) is not int:
        raise contradiction(name, f"group_size {gs!r}, bits {bits!r}")
    return gs, bits, mode, bool(source.get("global_scale", False))


def mlx_graph(shape: tuple[int, ...], stored: tuple[int, ...], gs: int, bits: int, mode: str, dtype: str,
              global_scale: bool) -> tuple[list[Node], str]:
    """(nodes, result dtype) of an MLX weight of `shape`, its w stored as uint32 words of shape `stored`."""
    rank = len(shape)
    blocks = (1,) * (rank - 1) + (gs,)
    grid = shape[:-1] + (shape[-1] // gs,)
    if mode == "affine":
        x = Stored(f"uint{bits}", shape, 0, container_bits=32, packed_axis=rank - 1, packing="dense",
                   strides=row_major(stored))
        return [Step("mul_add", dtype, shape, 1, 2, 3, blocks=blocks), x, Stored(dtype, grid, 1),
                Stored(dtype, grid, 2)], dtype
    x = Stored("float8_e4m3fn", shape, 0) if mode == "mxfp8" else Stored("float4_e2m1fn", shape, 0,
                                                                          packing="lsb_first")
    if mode in ("mxfp4", "mxfp8"):
        return [Step("mul", "bfloat16", shape, 1, 2, blocks=blocks), x,
                Stored("float8_e8m0fnu", grid, 1, no_nan=True)], "bfloat16"
    if not global_scale:
        return [Step("mul", "bfloat16", shape, 1, 2, blocks=blocks), x, Stored("float8_e4m3fn", grid, 1)], "bfloat16"
    per = shape[:-2] + (1, 1) if rank >= 3 else (1, 1)
    per_blocks = tuple(g // p for g, p in zip(grid, per))
    return [Step("mul", "float32", shape, 1, 2, blocks=blocks), x,
            Step("mul", "float32", grid, 3, 4, blocks=per_blocks), Stored("float8_e4m3fn", grid, 1),
            Step("div", "float32", per, 5, 6), Stored("float32", per, 2),
            Constant("float32", constant_bits("float32", 2688.0))], "float32"


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
    nodes, result = mlx_graph(shape, w, gs, bits, mode, dtype, global_scale)
    return Built(build(shape, nodes, result), tuple(sources.data(k) for k in keys), words)
