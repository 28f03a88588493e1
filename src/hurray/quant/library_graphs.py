"""The frameworks' quantized layouts as version-2 graphs (ADR-054, ADR-061).

Each function states one library's layout over the bytes where the library
keeps them (nothing is repacked) and returns a :class:`Layout`: the
tensor's shape, the root node (a hurray.nodes tree), the dtype the
library's own dequantization returns, and the order of the buffers the
nodes read. The bridges (hurray.bridges.mlx, torchao, bitsandbytes) build
their descriptors from these, and the library proofs
(tests/test_dequant_graph_peers.py, through tests/support/graph_formats.py)
hold each one to the library's own dequantization, bit for bit: one builder
per format. The arithmetic of each is as its docstring says (ADR-061);
docs/cookbook/framework-descriptors.md shows them.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from ..core._facts import row_major_strides as _row_major
from ..core.nodes import Constant, Node, Step, Stored, Words

__all__ = ["FP4", "FP32_ONE_OVER_127", "Layout", "NF4", "bnb_4bit", "llm_int8", "mlx_affine", "mlx_fp", "torch_per_tensor",
           "torchao_float8", "torchao_intx", "torchao_mx", "torchao_nvfp4"]

# bitsandbytes' fp32(7.874015718698502e-3), the bits of LLM.int8's 1/127.
FP32_ONE_OVER_127 = 0x3C010204
# bitsandbytes' 4-bit tables as its functional.get_4bit_type publishes them
# (float32); FP4's code 8 is +0.0, as its QuantState's own table holds it.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], np.float32)
FP4 = (np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, 0, -0.0625, -8, -12, -4, -6, -2, -3], np.float32)
       / np.float32(12)).astype(np.float32)


class Layout(NamedTuple):
    """A format's graph: the tensor's `shape`, its `root` node, the dtype the
    library's dequantization returns (None: float32 unstated), a `name`, and
    the roles of buffers 0, 1, ... in order."""

    shape: tuple[int, ...]
    root: Node
    result_dtype: Optional[str]
    name: str
    buffers: tuple[str, ...]


def _grouped(shape: tuple[int, ...], group: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(blocks, grid) of groups of `group` along the last axis."""
    return (1,) * (len(shape) - 1) + (group,), shape[:-1] + (shape[-1] // group,)


def mlx_affine(shape: tuple[int, ...], bits: int, group_size: int, dtype: str) -> Layout:
    """MLX affine: w uint32 [..., I*b/32] (one dense LSB-first stream per row),
    scales and biases [..., I/gs] in `dtype`; w = (q*s rounded) + b rounded,
    in the scales' dtype, which MLX returns."""
    rank = len(shape)
    words = shape[:-1] + (shape[-1] * bits // 32,)
    blocks, grid = _grouped(shape, group_size)
    codes = Stored(f"uint{bits}", shape, 0, strides=_row_major(words), packing=Words(32, rank - 1, "dense"))
    root = Step("mul_add", dtype, shape, codes, Stored(dtype, grid, 1), Stored(dtype, grid, 2), blocks=blocks)
    return Layout(shape, root, dtype, f"mlx_affine{bits}", ("w", "scales", "biases"))


def mlx_fp(shape: tuple[int, ...], mode: str, dtype: str = "bfloat16", global_scale: bool = False,
           result_dtype: Optional[str] = None) -> Layout:
    """MLX mxfp4 / mxfp8 / nvfp4: w uint32 [..., I/8] (I/4 for mxfp8), element
    k in bits 4k (8k) of its word; scales uint8 [..., I/32] (E8M0, 255 read as
    +inf) or [..., I/16] (nvfp4: E4M3). In `dtype` (mx.dequantize's dtype=,
    bfloat16 by default); nvfp4 with a global scale computes in float32
    with scales times fp32(global / 2688) and returns float32. `result_dtype`
    (default `dtype`) is what the layout says MLX returns."""
    rank = len(shape)
    per = 4 if mode == "mxfp8" else 8
    words = shape[:-1] + (shape[-1] // per,)
    code = "float8_e4m3fn" if mode == "mxfp8" else "float4_e2m1fn"
    x = Stored(code, shape, 0, strides=_row_major(words), packing=Words.slots(32, 32 // per, rank - 1))
    if mode != "nvfp4":
        blocks, grid = _grouped(shape, 32)
        root = Step("mul", dtype, shape, x, Stored("float8_e8m0fnu", grid, 1, value_rule="e8m0_no_nan"),
                    blocks=blocks)
        return Layout(shape, root, result_dtype or dtype, f"mlx_{mode}", ("w", "scales"))
    blocks, grid = _grouped(shape, 16)
    if not global_scale:
        root = Step("mul", dtype, shape, x, Stored("float8_e4m3fn", grid, 1), blocks=blocks)
        return Layout(shape, root, result_dtype or dtype, "mlx_nvfp4", ("w", "scales"))
    one = (1,) * rank
    inverse = Step("div", "float32", one, Stored("float32", one, 2), Constant(dtype, 2688.0))
    scale = Step("mul", "float32", grid, Stored("float8_e4m3fn", grid, 1), inverse, blocks=grid)
    root = Step("mul", "float32", shape, x, scale, blocks=blocks)
    return Layout(shape, root, "float32", "mlx_nvfp4_global", ("w", "scales", "global_scale"))


def bnb_4bit(shape: tuple[int, ...], blocksize: int, nested_offset: Optional[float] = None,
             result_dtype: Optional[str] = None) -> Layout:
    """bitsandbytes NF4/FP4: packed uint8 (flat element 2k in the high nibble
    of byte k), blocks of `blocksize` over the flat index (ragged last), the
    code through the state's 16-entry float32 table, times absmax (float32),
    one fp32 multiply. Nested (compress_statistics): absmax uint8 through
    nested_quant_map times nested_absmax (blocks of 256) plus the offset."""
    n = math.prod(shape)
    nb = -(-n // blocksize)
    table = Stored("float32", (16,), 1)
    x = Stored("uint4", (n,), 0, strides=(1,), packing=Words.slots(8, 4, 0, order=(1, 0)), codebook=table)
    if nested_offset is None:
        absmax: Node = Stored("float32", (nb,), 2)
        roles: tuple[str, ...] = ("packed", "code", "absmax")
    else:
        codes = Stored("uint8", (nb,), 2, codebook=Stored("float32", (256,), 3))
        absmax = Step("mul_add", "float32", (nb,), codes, Stored("float32", (-(-nb // 256),), 4),
                      Constant("float32", nested_offset), blocks=(256,), ragged=nb % 256 != 0)
        roles = ("packed", "code", "absmax", "nested_quant_map", "nested_absmax")
    root = Step("mul", "float32", (n,), x, absmax, blocks=(blocksize,), ragged=n % blocksize != 0)
    return Layout(tuple(shape), root, result_dtype, "bnb4" if nested_offset is None else "bnb4_nested", roles)


def llm_int8(rows: int, cols: int) -> Layout:
    """LLM.int8: fp32(fp32(int8 CB [O, I] * SCB [O]) * fp32(1/127)), float32."""
    shape = (rows, cols)
    product = Step("mul", "float32", shape, Stored("int8", shape, 0), Stored("float32", (rows, 1), 1),
                   blocks=(1, cols))
    root = Step("mul", "float32", shape, product, Constant.from_bits("float32", FP32_ONE_OVER_127), blocks=shape)
    return Layout(shape, root, "float32", "llm_int8", ("CB", "SCB"))


def torchao_float8(shape: tuple[int, ...], qdtype: str, block_size: tuple[int, ...], dtype: str) -> Layout:
    """torchao Float8Tensor: fp8 qdata, float32 scale per block (per tensor,
    per row and per block are block sizes), fp32(f8) * scale, rounded once
    to `dtype`."""
    grid = tuple(n // b for n, b in zip(shape, block_size))
    root = Step("mul", "float32", shape, Stored(qdtype, shape, 0), Stored("float32", grid, 1), blocks=block_size)
    return Layout(shape, root, dtype, "torchao_float8", ("qdata", "scale"))


def torchao_intx(shape: tuple[int, ...], group: int, scale_dtype: str, zero_dtype: Optional[str], dtype: str,
                 target: str = "int8") -> Layout:
    """torchao IntxUnpackedToInt8Tensor / Int8Tensor: codes of `target` (int1 to
    int8) one per int8 byte [.., I], scale and zero point [.., I/group];
    (q - zp) * s in promote(dtype, scale dtype), rounded once to `dtype`."""
    blocks, grid = _grouped(shape, group)
    arithmetic = "float32" if "float32" in (scale_dtype, dtype) else dtype if scale_dtype == dtype else "float32"
    x = Stored(target, shape, 0, packing=None if target == "int8" else "padded")
    s = Stored(scale_dtype, grid, 1)
    if zero_dtype is None:
        root = Step("mul", arithmetic, shape, x, s, blocks=blocks)
        return Layout(shape, root, dtype, "torchao_int8", ("qdata", "scale"))
    root = Step("sub_mul", arithmetic, shape, x, s, Stored(zero_dtype, grid, 2), blocks=blocks)
    return Layout(shape, root, dtype, "torchao_intx", ("qdata", "scale", "zero_point"))


def torchao_mx(shape: tuple[int, ...], elem: str, dtype: str, swizzled: bool = False) -> Layout:
    """torchao MXTensor: fp8 qdata [.., K], fp4 uint8 [.., K/2] (low nibble
    first) or fp6 one code per byte [.., K]; scale float8_e8m0fnu [.., K/32]
    (255 is NaN), row-major or (2-D) swizzled in 128x4 tiles; multiplied in
    the output dtype."""
    if elem == "fp4":
        x = Stored("float4_e2m1fn", shape, 0, packing="lsb_first")
    elif elem.startswith("fp6"):
        x = Stored("float6_e2m3fn" if elem == "fp6_e2m3" else "float6_e3m2fn", shape, 0, packing="padded")
    else:
        x = Stored(elem, shape, 0)
    blocks, grid = _grouped(shape, 32)
    scale = Stored("float8_e8m0fnu", grid, 1, strides=(0, 0) if swizzled else None,
                   layout="swizzled_128x4" if swizzled else "row_major")
    root = Step("mul", dtype, shape, x, scale, blocks=blocks)
    return Layout(shape, root, dtype, f"torchao_mx_{elem}", ("qdata", "scale"))


def torchao_nvfp4(M: int, K: int, swizzled: bool, per_tensor: bool, dtype: Optional[str] = "float32") -> Layout:
    """torchao NVFP4Tensor: uint8 [M, K/2] (low nibble first), E4M3 scales
    [M, K/16] or swizzled in 128x4 tiles, an optional float32 per-tensor
    scale that multiplies them; float32 arithmetic, rounded once to `dtype`."""
    grid = (M, K // 16)
    s = Stored("float8_e4m3fn", grid, 1, strides=(0, 0) if swizzled else None,
               layout="swizzled_128x4" if swizzled else "row_major")
    x = Stored("float4_e2m1fn", (M, K), 0, packing="lsb_first")
    roles: tuple[str, ...] = ("qdata", "scale")
    scale: Node = s
    if per_tensor:
        scale = Step("mul", "float32", grid, s, Stored("float32", (1, 1), 2), blocks=grid)
        roles = ("qdata", "scale", "per_tensor_scale")
    root = Step("mul", "float32", (M, K), x, scale, blocks=(1, 16))
    return Layout((M, K), root, dtype, "torchao_nvfp4_pts" if per_tensor else "torchao_nvfp4", roles)


def torch_per_tensor(shape: tuple[int, ...], qdtype: str, scale: float, zero_point: int,
                     strides: Optional[tuple[int, ...]] = None, offset: int = 0,
                     packing: Optional[str] = None) -> Layout:
    """torch per_tensor_affine with the double scale torch stores:
    fp32(q - zp) * fp32(scale), the step's operands (a float64 and an int64
    constant) converted to float32 first, as torch computes."""
    x = Stored(qdtype, shape, 0, offset, strides, packing=packing)
    root = Step("sub_mul", "float32", shape, x, Constant("float64", scale), Constant("int64", zero_point),
                blocks=shape)
    return Layout(shape, root, "float32", "torch_per_tensor", ("int_repr",))
