"""The formats of v2-spec.md § 6 as version-2 graphs over the bytes where
each library lays them out (shapes are torch's [O, I]).

Each function takes the library's arrays as they lie (numpy arrays of the
stored dtypes, in the library's own shapes) and returns the Graph and its
buffers, describing the bytes in place: nothing is repacked. The formats the
framework bridges bring in (MLX, bitsandbytes, torchao) are built once, in
the package (hurray.quant.library_graphs); their functions here are thin:
they take the arrays, call the package's builder and convert its node tree
to this module's Graph (as_graph), so the proofs test the bridges' graphs. The library
proofs (tests/test_dequant_graph_peers.py) call them with the libraries'
own tensors; format_cases() calls them with random bytes for the oracle
and sanitizer runs.
"""
from __future__ import annotations

import math

import numpy as np

from hurray import nodes as hn
from hurray.quant import library_graphs as lg

from .graph_spec import Bits, Constant, Gather, Ggml, Graph, Node, Stored, Step

FP32_ONE_OVER_127 = lg.FP32_ONE_OVER_127

NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], dtype=np.float32)


def _b(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).tobytes()


def gptq(qweight: np.ndarray, scales: np.ndarray, qzeros: np.ndarray, g_idx: np.ndarray | None,
         bits: int, O: int, I: int, group_size: int, v1: bool = True) -> tuple[Graph, list[bytes]]:
    """GPTQ: qweight int32 [ceil(I*b/32), O] (dense down the input axis),
    scales f16 [G, O], qzeros int32 [G, ceil(O*b/32)] (dense along the
    output axis; v1 stores zero - 1), g_idx int32 [I] (act-order) or None
    (groups of group_size)."""
    G = scales.shape[0]
    zw = qzeros.shape[1]
    x = Stored(f"uint{bits}", (O, I), 0, container_bits=32, packed_axis=1, packing="dense", strides=(1, O))
    s = Stored("float16", (O, G), 1, strides=(1, O))
    z = Stored(f"uint{bits}", (O, G), 2, container_bits=32, packed_axis=0, packing="dense",
               strides=(1, zw), code_offset=1 if v1 else 0)
    if g_idx is None:
        step = Step("sub_mul", "float16", (O, I), 1, 2, 3, blocks=(1, group_size), ragged=I % group_size != 0)
        nodes: list[Node] = [step, x, s, z]
        buffers = [_b(qweight), _b(scales), _b(qzeros)]
    else:
        step = Step("sub_mul", "float16", (O, I), 1, 2, 3, blocks=(1, 0), indexed_axis=1, group_index=4)
        nodes = [step, x, s, z, Stored("int32", (I,), 3)]
        buffers = [_b(qweight), _b(scales), _b(qzeros), _b(g_idx.astype(np.int32))]
    return Graph((O, I), nodes, "float16", name=f"gptq{bits}"), buffers


# GPTQModel's planes (width, shift) of a planar b-bit code, low to high.
GPTQ_PLANES = {3: ((2, 0), (1, 2)), 5: ((4, 0), (1, 4)), 6: ((4, 0), (2, 4)), 7: ((4, 0), (2, 4), (1, 6))}


def gptq_planar(qweight: np.ndarray, scales: np.ndarray, qzeros: np.ndarray, bits: int, O: int, I: int,
                group_size: int) -> tuple[Graph, list[bytes]]:
    """GPTQModel gptq_p: per 32 codes, `bits` words, the low plane's words
    first (word j of a plane of width w holds codes [32j/w, 32(j+1)/w) at
    shifts w*k), each code the sum of its planes; qweight [I*b/32, O] down
    the input axis, qzeros [G, O*b/32] along the output axis (v2)."""
    G = scales.shape[0]
    zw = qzeros.shape[1]
    planes = GPTQ_PLANES[bits]
    nodes: list[Node] = [Step("sub_mul", "float16", (O, I), 1, 2 + len(planes), 3 + len(planes),
                              blocks=(1, group_size))]
    x_inputs, z_inputs = [], []
    nodes.append(Bits((O, I), (), ()))
    rows = 0
    for width, _ in planes:
        x_inputs.append(len(nodes))
        nodes.append(Stored(f"uint{width}", (O, I), 0, offset=rows * O * 4, container_bits=32, packed_axis=1,
                            packing="slots", chunk_containers=width, chunk_stride=bits,
                            order=tuple(range(32 // width)), strides=(1, O)))
        rows += width
    nodes.append(Stored("float16", (O, G), 2, strides=(1, O)))
    nodes.append(Bits((O, G), (), ()))
    rows = 0
    for width, _ in planes:
        z_inputs.append(len(nodes))
        nodes.append(Stored(f"uint{width}", (O, G), 1, offset=rows * 4, container_bits=32, packed_axis=0,
                            packing="slots", chunk_containers=width, chunk_stride=bits,
                            order=tuple(range(32 // width)), strides=(1, zw)))
        rows += width
    shifts = tuple(shift for _, shift in planes)
    nodes[1] = Bits((O, I), tuple(x_inputs), shifts)
    nodes[3 + len(planes)] = Bits((O, G), tuple(z_inputs), shifts)
    return Graph((O, I), nodes, "float16", name=f"gptq_p{bits}"), [_b(qweight), _b(qzeros), _b(scales)]


AWQ_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)


def awq(qweight: np.ndarray, qzeros: np.ndarray, scales: np.ndarray, O: int, I: int,
        group_size: int) -> tuple[Graph, list[bytes]]:
    """AWQ GEMM: qweight int32 [I, O/8], qzeros int32 [G, O/8] (nibble n of
    word c holds column 8c + [0,2,4,6,1,3,5,7][n]), scales f16 [G, O]."""
    G = scales.shape[0]
    slots = dict(container_bits=32, packed_axis=0, packing="slots", chunk_containers=1, chunk_stride=1,
                 order=AWQ_ORDER)
    nodes: list[Node] = [
        Step("sub_mul", "float16", (O, I), 1, 2, 3, blocks=(1, group_size)),
        Stored("uint4", (O, I), 0, strides=(1, O // 8), **slots),  # type: ignore[arg-type]
        Stored("float16", (O, G), 1, strides=(1, O)),
        Stored("uint4", (O, G), 2, strides=(1, O // 8), **slots),  # type: ignore[arg-type]
    ]
    return Graph((O, I), nodes, "float16", name="awq"), [_b(qweight), _b(scales), _b(qzeros)]


def ct_packed(weight_packed: np.ndarray, weight_scale: np.ndarray, zero_point: np.ndarray | None,
              bits: int, O: int, I: int, group_size: int, dense: bool = True,
              scale_dtype: str = "bfloat16") -> tuple[Graph, list[bytes]]:
    """compressed-tensors pack-quantized: weight_packed int32 [O, W] (a dense
    stream per row from 0.18, floor(32/b) per word before), offset binary;
    weight_scale [O, G]; zero point int32 [ceil(O*b/32), G] packed along
    the output axis (asymmetric), or None."""
    G = weight_scale.shape[1]
    packing = dict(packing="dense") if dense else dict(packing="slots", chunk_containers=1, chunk_stride=1,
                                                       order=tuple(range(32 // bits)))
    x = Stored(f"uint{bits}", (O, I), 0, container_bits=32, packed_axis=1,
               strides=(weight_packed.shape[1], 1), code_offset=-(1 << (bits - 1)), **packing)  # type: ignore
    nodes: list[Node] = [Step("mul" if zero_point is None else "sub_mul", scale_dtype, (O, I), 1, 2,
                              0 if zero_point is None else 3, blocks=(1, group_size), ragged=I % group_size != 0),
                         x, Stored(scale_dtype, (O, G), 1)]
    buffers = [_b(weight_packed), _b(weight_scale)]
    if zero_point is not None:
        nodes.append(Stored(f"uint{bits}", (O, G), 2, container_bits=32, packed_axis=0, strides=(G, 1),
                            code_offset=-(1 << (bits - 1)), **packing))  # type: ignore[arg-type]
        buffers.append(_b(zero_point))
    return Graph((O, I), nodes, scale_dtype, name=f"ct{bits}"), buffers


def ct_nvfp4(weight_packed: np.ndarray, weight_scale: np.ndarray, global_scale: np.ndarray, O: int,
             I: int) -> tuple[Graph, list[bytes]]:
    """compressed-tensors NVFP4: packed uint8 [O, I/2] (low nibble first),
    e4m3 scales [O, I/16], a float32 global scale [1] that divides."""
    nodes: list[Node] = [
        Step("mul", "float32", (O, I), 1, 2, blocks=(1, 16)),
        Stored("float4_e2m1fn", (O, I), 0, packing="lsb_first"),
        Step("div", "float32", (O, I // 16), 3, 4, blocks=(O, I // 16)),
        Stored("float8_e4m3fn", (O, I // 16), 1),
        Stored("float32", (1, 1), 2),
    ]
    return Graph((O, I), nodes, "bfloat16", name="ct_nvfp4"), [
        _b(weight_packed), _b(weight_scale), _b(global_scale.astype(np.float32))]


def ct_mx(weight: np.ndarray, scales: np.ndarray, kind: str, O: int, I: int) -> tuple[Graph, list[bytes]]:
    """compressed-tensors MXFP4 (packed uint8 [O, I/2]), MXFP6 (uint8
    [O, 3I/4], a dense 6-bit stream) or MXFP8 (e4m3 [O, I]); E8M0 scales
    uint8 [O, I/32] decoded as 2^(e-127), 255 as infinity; in bfloat16."""
    if kind == "mxfp4":
        x = Stored("float4_e2m1fn", (O, I), 0, packing="lsb_first")
    elif kind == "mxfp6":
        x = Stored("float6_e2m3fn", (O, I), 0, container_bits=8, packed_axis=1, packing="dense",
                   strides=(weight.shape[1], 1))
    else:
        x = Stored("float8_e4m3fn", (O, I), 0)
    nodes: list[Node] = [Step("mul", "bfloat16", (O, I), 1, 2, blocks=(1, 32)), x,
                         Stored("float8_e8m0fnu", (O, I // 32), 1, no_nan=True)]
    return Graph((O, I), nodes, "bfloat16", name=f"ct_{kind}"), [_b(weight), _b(scales)]


def ct_fp8(weight: np.ndarray, scale: np.ndarray, O: int, I: int, block: tuple[int, int],
           scale_dtype: str) -> tuple[Graph, list[bytes]]:
    """compressed-tensors / DeepSeek FP8: e4m3 [O, I], one scale per block
    (ragged edges); in the scale's dtype (CT) or float32 (DeepSeek)."""
    grid = (-(-O // block[0]), -(-I // block[1]))
    nodes: list[Node] = [Step("mul", scale_dtype, (O, I), 1, 2, blocks=block, ragged=True),
                         Stored("float8_e4m3fn", (O, I), 0), Stored(scale_dtype, grid, 1)]
    return Graph((O, I), nodes, "bfloat16", name="fp8_block"), [_b(weight), _b(scale)]


def torch_per_channel(q: np.ndarray, scales: np.ndarray, zero_points: np.ndarray, axis: int,
                      qdtype: str) -> tuple[Graph, list[bytes]]:
    """torch per_channel_affine: int codes, float64 scales and int64 zero
    points along `axis`, in float64, rounded once to float32."""
    shape = q.shape
    grid = tuple(n if k == axis else 1 for k, n in enumerate(shape))
    blocks = tuple(1 if k == axis else n for k, n in enumerate(shape))
    nodes: list[Node] = [Step("sub_mul", "float64", shape, 1, 2, 3, blocks=blocks),
                         Stored(qdtype, shape, 0), Stored("float64", grid, 1), Stored("int64", grid, 2)]
    return Graph(shape, nodes, "float32", name="torch_per_channel"), [
        _b(q), _b(scales.astype(np.float64)), _b(zero_points.astype(np.int64))]


def torch_per_tensor(q: np.ndarray, scale: float, zero_point: int, qdtype: str) -> tuple[Graph, list[bytes]]:
    """torch per_tensor_affine (lg.torch_per_tensor): the codes, the double scale and the zero point."""
    return as_graph(lg.torch_per_tensor(tuple(q.shape), qdtype, scale, zero_point)), [_b(q)]


def torch_sub_byte(packed: np.ndarray, shape: tuple[int, ...], bits: int, scales: np.ndarray,
                   zero_points: np.ndarray, axis: int) -> tuple[Graph, list[bytes]]:
    """torch quint4x2 / quint2x4 with float qparams per channel: codes LSB
    first over the flattened tensor; (fp32(q) - zp) * s in float32."""
    grid = tuple(n if k == axis else 1 for k, n in enumerate(shape))
    blocks = tuple(1 if k == axis else n for k, n in enumerate(shape))
    nodes: list[Node] = [Step("sub_mul", "float32", shape, 1, 2, 3, blocks=blocks),
                         Stored(f"uint{bits}", shape, 0, packing="lsb_first"),
                         Stored("float32", grid, 1), Stored("float32", grid, 2)]
    return Graph(shape, nodes, "float32", name=f"torch_quint{bits}"), [
        _b(packed), _b(scales.astype(np.float32)), _b(zero_points.astype(np.float32))]


def onnx_blocked(x_raw: bytes, x_dtype: str, shape: tuple[int, int], scale: np.ndarray, zp_raw: bytes | None,
                 block: int, axis: int = 1) -> tuple[Graph, list[bytes]]:
    """ONNX DequantizeLinear, blocked along `axis` (ragged last block): x
    and the zero point packed over their flattened elements (raw_data,
    first element in the low bits); fp32 arithmetic."""
    n = math.prod(shape)
    bits = {"int4": 4, "uint4": 4, "int2": 2, "uint2": 2, "float4_e2m1fn": 4,
            "float6_e2m3fn": 6, "float6_e3m2fn": 6}.get(x_dtype, 8)
    grid = tuple(-(-s // block) if k == axis else s for k, s in enumerate(shape))
    blocks = tuple(block if k == axis else 1 for k in range(2))
    if bits < 8:
        x = Stored(x_dtype, (n,), 0, container_bits=8, packed_axis=0, packing="dense", strides=(1,))
    else:
        x = Stored(x_dtype, (n,), 0)
    form = "mul" if zp_raw is None else "sub_mul"
    nodes: list[Node] = [Step(form, "float32", shape, 1, 2, 0 if zp_raw is None else 3, blocks=blocks,
                              ragged=shape[axis] % block != 0), x, Stored(str(scale.dtype), grid, 1)]
    buffers = [x_raw, _b(scale)]
    if zp_raw is not None:
        zbits = bits
        nodes.append(Stored(x_dtype, grid, 2, strides=(grid[1], 1),
                            packing="lsb_first" if zbits < 8 else None))
        buffers.append(zp_raw)
    return Graph(shape, nodes, name=f"onnx_{x_dtype}"), buffers


def hqq(w_q: np.ndarray, scale: np.ndarray, zero: np.ndarray, bits: int, shape: tuple[int, int],
        R: int, C: int, dtype: str = "float16") -> tuple[Graph, list[bytes]]:
    """HQQ axis=1: W reshaped [R, C] (R = O*I/gs); 4-bit W_q uint8 [R/2, C]
    (the first half of the rows in the high nibble); 3-bit int32
    [ceil(R/10), C] (ten slices, the first at the top bits); scale and zero
    [R, 1]; ((W_q - zero) * scale) in the compute dtype."""
    if bits == 4:
        x = Stored("uint4", (R, C), 0, container_bits=8, packed_axis=0, packing="slots", chunk_containers=R // 2,
                   planar=True, chunk_stride=R // 2, order=(1, 0), strides=(C, 1))
    elif bits == 3:
        k = w_q.shape[0]
        x = Stored("uint3", (R, C), 0, container_bits=32, packed_axis=0, packing="slots", chunk_containers=k,
                   planar=True, chunk_stride=k, order=tuple(9 - s for s in range(10)), strides=(C, 1))
    elif bits == 2:
        x = Stored("uint2", (R, C), 0, container_bits=8, packed_axis=0, packing="slots", chunk_containers=R // 4,
                   planar=True, chunk_stride=R // 4, order=(3, 2, 1, 0), strides=(C, 1))
    else:
        x = Stored("uint8", (R, C), 0)
    nodes: list[Node] = [Step("sub_mul", dtype, (R, C), 1, 2, 3, blocks=(1, C)), x,
                         Stored(dtype, (R, 1), 1), Stored(dtype, (R, 1), 2)]
    return Graph(shape, nodes, dtype, name=f"hqq{bits}"), [_b(w_q), _b(scale), _b(zero)]


def quanto(data: np.ndarray, scale: np.ndarray, shift: np.ndarray, bits: int, shape: tuple[int, int],
           float_shift: bool, dtype: str, shift_dtype: str | None = None) -> tuple[Graph, list[bytes]]:
    """optimum-quanto qbits along axis 0 (groups of rows): _data uint8
    [R/(8/b), C] (row r + k*R/(8/b) in bits k*b, the low bits first),
    scale and shift [R, 1]; scale*(q - shift), or scale*q - shift."""
    R, C = shape
    per = 8 // bits
    x = Stored(f"uint{bits}", (R, C), 0, container_bits=8, packed_axis=0, packing="slots",
               chunk_containers=R // per, planar=True, chunk_stride=R // per, order=tuple(range(per)),
               strides=(C, 1))
    if float_shift:
        nodes: list[Node] = [Step("mul_sub", dtype, (R, C), 1, 2, 3, blocks=(1, C)), x,
                             Stored(dtype, (R, 1), 1), Stored(dtype, (R, 1), 2)]
    else:
        nodes = [Step("sub_mul", dtype, (R, C), 1, 2, 3, blocks=(1, C)), x,
                 Stored(dtype, (R, 1), 1), Stored(shift_dtype or str(shift.dtype), (R, 1), 2)]
    return Graph(shape, nodes, dtype, name=f"quanto{bits}"), [_b(data), _b(scale), _b(shift)]


def ggml(raw: bytes, ggml_type: str, shape: tuple[int, int]) -> tuple[Graph, list[bytes]]:
    return Graph(shape, [Ggml(ggml_type, shape, 0)], "float32", name=f"ggml_{ggml_type}"), [raw]


# ---- the framework bridges' formats: the package's builders -------------------------------


def as_graph(layout: lg.Layout) -> Graph:
    """The package's node tree as this module's Graph (the same nodes in canonical order)."""
    from hurray.core.nodes import number

    order = number(layout.root)
    at = {id(n): i for i, n in enumerate(order)}

    def ref(n: object) -> int:
        return 0 if n is None else at[id(n)]

    out: list[Node] = []
    for n in order:
        if isinstance(n, hn.Stored):
            words = n.packing if isinstance(n.packing, hn.Words) else None
            stored = Stored(n.dtype, n.shape, n.buffer, n.offset, strides=n.strides, big_endian=n.byte_order == "big",
                            swizzled=n.layout == "swizzled_128x4", code_offset=n.code_offset,
                            codebook=ref(n.codebook), no_nan=n.value_rule == "e8m0_no_nan")
            if words is None:
                stored.packing = n.packing
            else:
                stored.packing, stored.container_bits, stored.packed_axis = words.packing, words.container_bits, \
                    words.packed_axis
                stored.chunk_containers, stored.planar, stored.chunk_stride, stored.order = \
                    words.chunk_containers, words.planar, words.chunk_stride, words.order
            out.append(stored)
        elif isinstance(n, hn.Constant):
            out.append(Constant(n.dtype, n.value_bits))
        elif isinstance(n, hn.Step):
            out.append(Step(n.form, n.arithmetic, n.shape, ref(n.x), ref(n.scale), ref(n.offset), n.blocks,
                            n.ragged, n.indexed_axis, ref(n.group_index)))
        elif isinstance(n, hn.Bits):
            out.append(Bits(n.shape, tuple(ref(i) for i in n.inputs), n.shifts, n.offset))
        elif isinstance(n, hn.Gather):
            out.append(Gather(n.shape, ref(n.x), ref(n.index), n.axis))
        else:
            out.append(Ggml(n.ggml_type, n.shape, n.buffer, n.offset))
    return Graph(layout.shape, out, layout.result_dtype, name=layout.name)


def mlx_affine(w_q: np.ndarray, scales: np.ndarray, biases: np.ndarray, bits: int, group_size: int,
               dtype: str) -> tuple[Graph, list[bytes]]:
    """MLX affine (lg.mlx_affine): w_q uint32 [..., I*b/32], scales and biases [..., I/gs]."""
    shape = tuple(w_q.shape[:-1]) + (w_q.shape[-1] * 32 // bits,)
    return as_graph(lg.mlx_affine(shape, bits, group_size, dtype)), [_b(w_q), _b(scales), _b(biases)]


def mlx_fp(w_q: np.ndarray, scales: np.ndarray, mode: str, dtype: str = "bfloat16",
           global_scale: np.ndarray | None = None) -> tuple[Graph, list[bytes]]:
    """MLX mxfp4 / mxfp8 / nvfp4 (lg.mlx_fp): w_q uint32, scales uint8, a float32 global scale."""
    shape = tuple(w_q.shape[:-1]) + (w_q.shape[-1] * (4 if mode == "mxfp8" else 8),)
    buffers = [_b(w_q), _b(scales)]
    if global_scale is not None:
        buffers.append(_b(np.asarray(global_scale, np.float32)))
    return as_graph(lg.mlx_fp(shape, mode, dtype, global_scale is not None)), buffers


def bnb_4bit(packed: np.ndarray, absmax: np.ndarray, code: np.ndarray, blocksize: int, shape: tuple[int, int],
             nested: tuple[np.ndarray, np.ndarray, float] | None = None) -> tuple[Graph, list[bytes]]:
    """bitsandbytes NF4/FP4 (lg.bnb_4bit); nested is (nested_absmax, nested_quant_map, offset)."""
    if nested is None:
        return as_graph(lg.bnb_4bit(shape, blocksize)), [_b(packed), _b(code.astype(np.float32)),
                                                           _b(absmax.astype(np.float32))]
    nested_absmax, nested_map, offset = nested
    return as_graph(lg.bnb_4bit(shape, blocksize, offset)), [
        _b(packed), _b(code.astype(np.float32)), _b(absmax.astype(np.uint8)),
        _b(nested_map.astype(np.float32)), _b(nested_absmax.astype(np.float32))]


def llm_int8(cb: np.ndarray, scb: np.ndarray) -> tuple[Graph, list[bytes]]:
    """LLM.int8 (lg.llm_int8): int8 [O, I] and SCB float32 [O]."""
    return as_graph(lg.llm_int8(*cb.shape)), [_b(cb), _b(scb.astype(np.float32))]


def torchao_float8(qdata: np.ndarray, qdtype: str, scale: np.ndarray, block_size: tuple[int, ...],
                   dtype: str) -> tuple[Graph, list[bytes]]:
    """torchao Float8Tensor (lg.torchao_float8): fp8 qdata (as bytes), float32 scale."""
    return as_graph(lg.torchao_float8(tuple(qdata.shape), qdtype, block_size, dtype)), [
        _b(qdata), _b(scale.astype(np.float32))]


def torchao_intx(qdata: np.ndarray, scale: np.ndarray, scale_dtype: str, zero_point: np.ndarray | None,
                 group: int, dtype: str, target: str = "int8") -> tuple[Graph, list[bytes]]:
    """torchao IntxUnpackedToInt8Tensor / Int8Tensor (lg.torchao_intx)."""
    layout = lg.torchao_intx(tuple(qdata.shape), group, scale_dtype,
                             None if zero_point is None else str(zero_point.dtype), dtype, target)
    return as_graph(layout), [_b(qdata), _b(scale)] + ([] if zero_point is None else [_b(zero_point)])


def torchao_mx(qdata: np.ndarray, scale: np.ndarray, elem: str, dtype: str) -> tuple[Graph, list[bytes]]:
    """torchao MXTensor (lg.torchao_mx): qdata as torchao holds it, E8M0 scale bytes."""
    shape = tuple(qdata.shape[:-1]) + (qdata.shape[-1] * (2 if elem == "fp4" else 1),)
    return as_graph(lg.torchao_mx(shape, elem, dtype)), [_b(qdata), _b(scale)]


def torchao_nvfp4(qdata: np.ndarray, scale: np.ndarray, per_tensor: np.ndarray | None, M: int, K: int,
                  swizzled: bool) -> tuple[Graph, list[bytes]]:
    """torchao NVFP4Tensor (lg.torchao_nvfp4): uint8 [M, K/2], E4M3 scales, a float32 per-tensor scale."""
    buffers = [_b(qdata), _b(scale)] + ([] if per_tensor is None else [_b(np.asarray(per_tensor, np.float32))])
    return as_graph(lg.torchao_nvfp4(M, K, swizzled, per_tensor is not None)), buffers


# ---- random bytes in each layout ----------------------------------------------------------


def format_cases() -> list:
    """Every format above over random bytes (values from random bits: NaN
    and infinite scales included), as test cases for the oracle runs."""
    from .graph_cases import Case, trim

    rng = np.random.default_rng(54)

    def u32(*shape: int) -> np.ndarray:
        return rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)

    def u8(*shape: int) -> np.ndarray:
        return rng.integers(0, 256, shape, dtype=np.uint8)

    def f16(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.05).astype(np.float16)

    out = []
    O, I, gs = 64, 256, 32
    G = I // gs
    for bits in (2, 3, 4, 8):
        qw = u32(-(-I * bits // 32), O)
        qz = u32(G, -(-O * bits // 32))
        g_idx = rng.permutation(np.arange(I) // gs)
        out.append(gptq(qw, f16(G, O), qz, g_idx, bits, O, I, gs))
        out.append(gptq(qw, u8(G, O * 2).view(np.float16), qz, None, bits, O, I, gs, v1=False))
    for bits in (3, 5, 6, 7):
        out.append(gptq_planar(u32(I * bits // 32, O), f16(G, O), u32(G, O * bits // 32), bits, O, I, gs))
    out.append(awq(u32(I, 2 * O // 8), u32(G, 2 * O // 8), f16(G, 2 * O), 2 * O, I, gs))
    for bits in (3, 4, 5, 8):
        for dense in (True, False):
            width = -(-I * bits // 32) if dense else -(-I // (32 // bits))
            zw = -(-O * bits // 32) if dense else -(-O // (32 // bits))
            out.append(ct_packed(u32(O, width), f16(O, G).astype(np.float32).view(np.uint32) >> 16 << 16,
                                 u32(zw, G), bits, O, I, gs, dense=dense, scale_dtype="float32"))
    out.append(ct_packed(u32(O, I * 4 // 32), u8(O, G * 2).view(np.uint16), None, 4, O, I, gs, scale_dtype="bfloat16"))
    out.append(ct_nvfp4(u8(O, I // 2), u8(O, I // 16), np.array([448 * 6 / 3.5], np.float32), O, I))
    out.append(ct_mx(u8(O, I // 2), u8(O, I // 32), "mxfp4", O, I))
    out.append(ct_mx(u8(O, 3 * I // 4), u8(O, I // 32), "mxfp6", O, I))
    out.append(ct_mx(u8(O, I), u8(O, I // 32), "mxfp8", O, I))
    out.append(ct_fp8(u8(200, 300), rng.random((2, 3)).astype(np.float32), 200, 300, (128, 128), "float32"))
    out.append(ct_fp8(u8(130, 129), f16(2, 2), 130, 129, (128, 128), "float16"))
    for bits in (1, 2, 3, 4, 5, 6, 8):
        out.append(mlx_affine(u32(8, I * bits // 32), f16(8, I // 64), f16(8, I // 64), bits, 64, "float16"))
    out.append(mlx_affine(u32(2, 3, 128 * 3 // 32), u8(2, 3, 4).view(np.uint16), u8(2, 3, 4).view(np.uint16),
                          3, 64, "bfloat16"))
    out.append(mlx_fp(u32(O, I // 8), u8(O, I // 32), "mxfp4"))
    out.append(mlx_fp(u32(O, I // 4), u8(O, I // 32), "mxfp8", "float16"))
    out.append(mlx_fp(u32(O, I // 8), u8(O, I // 16), "nvfp4", "bfloat16"))
    out.append(mlx_fp(u32(O, I // 8), u8(O, I // 16), "nvfp4", "bfloat16", np.array([[3.25]], np.float32)))
    n = 37 * 48
    nb = -(-n // 64)
    out.append(bnb_4bit(u8(-(-n // 2)), rng.random(nb).astype(np.float32), NF4, 64, (37, 48)))
    out.append(bnb_4bit(u8(-(-n // 2)), u8(nb), NF4, 64, (37, 48),
                        (rng.random(-(-nb // 256)).astype(np.float32), np.linspace(-1, 1, 256).astype(np.float32),
                         0.0873565673828125)))
    out.append(llm_int8(u8(16, 64).view(np.int8), rng.random(16).astype(np.float32) * 3))
    out.append(torchao_mx(u8(64, 128) & 0x3F, u8(64, 4), "fp6_e2m3", "bfloat16"))
    out.append(torchao_mx(u8(64, 64), u8(64, 4), "fp4", "float32"))
    out.append(torchao_mx(u8(64, 128), u8(64, 4), "float8_e4m3fn", "float16"))
    out.append(torchao_nvfp4(u8(200, 64), u8(2048), np.array([[0.125]], np.float32), 200, 128, swizzled=True))
    out.append(torchao_nvfp4(u8(48, 32), u8(48, 4), None, 48, 64, swizzled=False))
    q = u8(4, 5, 6).view(np.int8)
    for axis in (0, 1, 2):
        grid = tuple(n if k == axis else 1 for k, n in enumerate(q.shape))
        out.append(torch_per_channel(q, rng.random(grid) + 0.01, rng.integers(-3, 3, grid), axis, "int8"))
    out.append(torch_per_tensor(u8(5, 7), 0.1, 3, "uint8"))
    out.append(torch_sub_byte(u8(18), (5, 7), 4, rng.random((5, 1)), rng.random((5, 1)) * 3, 0))
    out.append(torch_sub_byte(u8(9), (5, 7), 2, rng.random((1, 7)), rng.random((1, 7)) * 3, 1))
    out.append(onnx_blocked(u8(-(-10 * 10 // 2)).tobytes(), "int4", (10, 10), rng.random((10, 3)).astype(np.float32),
                            u8(-(-30 // 2)).tobytes(), 4))
    out.append(onnx_blocked(u8(-(-6 * 12 * 6 // 8)).tobytes(), "float6_e2m3fn", (6, 12),
                            rng.random((6, 3)).astype(np.float16), None, 4))
    out.append(onnx_blocked(u8(-(-7 * 9 // 4)).tobytes(), "int2", (7, 9), rng.random((7, 3)).astype(np.float32),
                            u8(-(-21 // 4)).tobytes(), 4))
    R, C = 64, 32
    out.append(hqq(u8(R // 2, C), f16(R, 1), f16(R, 1) * 0 + 7.5, 4, (32, 64), R, C))
    out.append(hqq(u32(-(-R // 10), C), f16(R, 1), f16(R, 1) + 3, 3, (32, 64), R, C))
    out.append(hqq(u8(R // 4, C), f16(R, 1), f16(R, 1) + 1.5, 2, (32, 64), R, C, "bfloat16"))
    out.append(quanto(u8(R // 2, C), f16(R, 1), f16(R, 1), 4, (R, C), True, "float16"))
    out.append(quanto(u8(R // 4, C), f16(R, 1), u8(R, 1), 2, (R, C), False, "float16"))
    for name, (elements, nbytes) in {"q4_k": (256, 144), "q8_0": (32, 34), "iq4_xs": (256, 136)}.items():
        out.append(ggml(u8(4 * 256 // elements * nbytes).tobytes(), name, (4, 256)))
    return [trim(Case(graph, list(buffers))) for graph, buffers in out]
