"""The graph dequantizer against the libraries that own the formats.

Each test makes a tensor with the library's own quantizer, describes its
bytes where they lie as a version-2 graph (tests/support/graph_formats.py),
dequantizes it with hurray_dequantize, and compares with the library's own
dequantization, bit for bit (a NaN as a NaN: torch and MLX give every
bfloat16 NaN a positive sign, which the descriptor cannot state). The libraries run on CPU at the versions of
pyproject's test extra; ADR-061 and docs/cookbook/quantized-formats.md say
what each one's arithmetic is and where its CPU kernels disagree with
themselves.
"""
from __future__ import annotations

import importlib
import logging
import math
import warnings
import zlib
from typing import Any

import numpy as np
import pytest

from support.graph_formats import (
    AWQ_ORDER,
    NF4,
    awq,
    bnb_4bit,
    ct_fp8,
    ct_mx,
    ct_nvfp4,
    ct_packed,
    gptq,
    gptq_planar,
    hqq,
    llm_int8,
    mlx_affine,
    mlx_fp,
    onnx_blocked,
    quanto,
    torch_per_channel,
    torch_per_tensor,
    torch_sub_byte,
    torchao_float8,
    torchao_intx,
    torchao_mx,
    torchao_nvfp4,
)
from support.graph_oracle import mismatches
from support.graph_spec import Built, Constant, Ggml, Graph, Stored, Step, constant_bits

warnings.filterwarnings("ignore")
logging.getLogger("bitsandbytes").setLevel(logging.ERROR)


def need(module: str) -> Any:
    """The library, or a failure that says what to install (never a skip)."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:  # pragma: no cover - the message is the point
        pytest.fail(f"{module} is needed for this proof: pip install '.[test]' ({exc})")


def np_of(t: Any) -> np.ndarray:
    """A torch or mlx array as numpy, with 16-bit floats as their bits (uint16)."""
    mod = type(t).__module__
    if mod.startswith("torch"):
        import torch

        t = t.detach().cpu().contiguous()
        if t.dtype in (torch.bfloat16, torch.float16):
            return t.view(torch.int16).numpy().view(np.uint16)
        if t.dtype in (torch.float8_e4m3fn, torch.float8_e5m2, torch.float8_e8m0fnu, torch.float4_e2m1fn_x2):
            return t.view(torch.uint8).numpy()
        return t.numpy()
    if mod.startswith("mlx"):
        import mlx.core as mx

        if t.dtype in (mx.bfloat16, mx.float16):
            return np.array(t.view(mx.uint16))
        return np.array(t)
    return np.asarray(t)


OUT_OF = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16"}


def torch_dtype_name(t: Any) -> str:
    return str(t.dtype).split(".")[-1]


def prove(graph: Graph, buffers: list[bytes], reference: Any, out_dtype: str | None = None) -> None:
    """hurray_dequantize of the graph (in the reference's dtype) gives the
    reference's bits."""
    want = np_of(reference)
    if out_dtype is None:
        out_dtype = {np.dtype(np.float32): "float32"}.get(want.dtype, None) or _name_of(reference)
    with Built(graph, buffers) as built:
        built.validate()
        got = built.dequantize(out_dtype)
    want = np.ascontiguousarray(want).ravel()
    if out_dtype == "float32":
        want = want.astype(np.float32)
    assert got.size == want.size, (got.size, want.size)
    # A NaN the arithmetic makes (0 times infinity) has the sign x86 gives
    # it and keeps it (ml_dtypes' rule); torch and MLX make every bfloat16
    # NaN positive. Only there may the sign differ.
    bad = mismatches(got, want, out_dtype, nan_sign=False)
    assert len(bad) == 0, (f"{graph.name}: {len(bad)} of {want.size} elements differ; first at {bad[0]}: "
                           f"got {got[bad[0]]!r}, want {want[bad[0]]!r}")


def _name_of(reference: Any) -> str:
    mod = type(reference).__module__
    if mod.startswith("torch"):
        return torch_dtype_name(reference)
    if mod.startswith("mlx"):
        return str(reference.dtype).split(".")[-1]
    return str(np.asarray(reference).dtype)


# ---- compressed-tensors 0.20.1 -----------------------------------------------------------


def ct_quantize(O: int, I: int, args: Any, dtype: Any, fmt: str | None = None) -> tuple[dict, Any]:
    """The recipe: calibrate as the MinMax observer does, then the
    format's compressor; its decompress is the reference."""
    torch = need("torch")
    from compressed_tensors.compressors.base import BaseCompressor
    from compressed_tensors.compressors.format import infer_module_format
    from compressed_tensors.quantization import QuantizationScheme
    from compressed_tensors.quantization.lifecycle.initialize import initialize_module_for_quantization
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam
    from compressed_tensors.utils import get_direct_state_dict
    from loguru import logger

    logger.remove()
    lin = torch.nn.Linear(I, O, bias=False, dtype=dtype)
    scheme = QuantizationScheme(targets=["Linear"], weights=args, format=fmt)
    initialize_module_for_quantization(lin, scheme)
    w, st = lin.weight.data, getattr(args.strategy, "value", args.strategy)
    if st == "tensor":
        mn, mx = w.amin().reshape(1), w.amax().reshape(1)
    elif st == "channel":
        mn, mx = w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
    elif st in ("group", "tensor_group"):
        g = w.unflatten(-1, (I // args.group_size, args.group_size))
        mn, mx = g.amin(-1), g.amax(-1)
    else:
        bh, bw = args.block_structure
        R, C = math.ceil(O / bh), math.ceil(I / bw)
        mn = torch.stack([torch.stack([w[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw].amin() for c in range(C)])
                          for r in range(R)])
        mx = torch.stack([torch.stack([w[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw].amax() for c in range(C)])
                          for r in range(R)])
    gs = None
    if st == "tensor_group":
        gs = generate_gparam(w.amin(), w.amax())
        lin.weight_global_scale.data.copy_(gs)
    s, z = calculate_qparams(mn, mx, args, global_scale=gs)
    lin.weight_scale.data.copy_(s.to(lin.weight_scale.dtype))
    if hasattr(lin, "weight_zero_point"):
        lin.weight_zero_point.data.copy_(z.reshape(lin.weight_zero_point.shape))
    fmt = fmt or infer_module_format(type(lin), scheme).value
    cls = BaseCompressor.get_value_from_registry(fmt)
    stored = cls.compress(get_direct_state_dict(lin), scheme)
    return stored, cls.decompress(stored, scheme)["weight"]


@pytest.mark.parametrize("bits", [2, 3, 4, 5, 6, 7, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_compressed_tensors_pack_quantized(bits, symmetric, dtype):
    torch = need("torch")
    from compressed_tensors.quantization import QuantizationArgs

    torch.manual_seed(bits * 10 + symmetric)
    O, I, gs = 12, 96, 32
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=symmetric, strategy="group", group_size=gs)
    stored, ref = ct_quantize(O, I, args, getattr(torch, dtype))
    packed = np_of(stored["weight_packed"]).view(np.uint32)
    scale = np_of(stored["weight_scale"])
    zp = np_of(stored["weight_zero_point"]).view(np.uint32) if "weight_zero_point" in stored else None
    assert (zp is None) == symmetric
    graph, buffers = ct_packed(packed, scale, zp, bits, O, I, gs, dense=True, scale_dtype=dtype)
    prove(graph, buffers, ref)


def test_compressed_tensors_pack_quantized_before_0_18_is_slots():
    # The 0.17 layout (floor(32/b) codes per word) of the same codes: the
    # graph states it with slots; the values are 0.20.1's decompression.
    torch = need("torch")
    from compressed_tensors.quantization import QuantizationArgs

    torch.manual_seed(3)
    O, I, gs, bits = 12, 96, 32, 3
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=False, strategy="group", group_size=gs)
    stored, ref = ct_quantize(O, I, args, torch.bfloat16)
    # repack the 0.20 dense stream into 0.17's words (10 codes of 3 bits per int32, low first)
    dense = np_of(stored["weight_packed"]).view(np.uint32)
    codes = np.unpackbits(dense.view(np.uint8), axis=1, bitorder="little")[:, : I * bits].reshape(O, I, bits)
    codes = (codes * (1 << np.arange(bits))).sum(-1).astype(np.uint32)
    per = 32 // bits
    words = np.zeros((O, -(-I // per)), np.uint32)
    for k in range(I):
        words[:, k // per] |= codes[:, k] << np.uint32(bits * (k % per))
    zd = np_of(stored["weight_zero_point"]).view(np.uint32)  # [ceil(O*b/32), G], dense down dim 0
    zbits = np.unpackbits(zd.T.copy().view(np.uint8), axis=1, bitorder="little")[:, : O * bits].reshape(-1, O, bits)
    zc = (zbits * (1 << np.arange(bits))).sum(-1).astype(np.uint32)  # [G, O]
    zw = np.zeros((-(-O // per), zc.shape[0]), np.uint32)
    for o in range(O):
        zw[o // per] |= zc[:, o] << np.uint32(bits * (o % per))
    graph, buffers = ct_packed(words, np_of(stored["weight_scale"]), zw, bits, O, I, gs, dense=False,
                               scale_dtype="bfloat16")
    prove(graph, buffers, ref)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_compressed_tensors_nvfp4(dtype):
    torch = need("torch")
    from compressed_tensors.quantization import QuantizationArgs

    torch.manual_seed(5)
    O, I = 6, 64
    args = QuantizationArgs(num_bits=4, type="float", strategy="tensor_group", group_size=16,
                            scale_dtype=torch.float8_e4m3fn)
    stored, ref = ct_quantize(O, I, args, getattr(torch, dtype))
    graph, buffers = ct_nvfp4(np_of(stored["weight_packed"]), np_of(stored["weight_scale"]),
                              np_of(stored["weight_global_scale"]), O, I)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("kind", ["mxfp4", "mxfp6", "mxfp8"])
def test_compressed_tensors_mx(kind):
    torch = need("torch")
    from compressed_tensors.quantization import QuantizationArgs

    torch.manual_seed(7)
    O, I = 5, 96
    bits = {"mxfp4": 4, "mxfp6": 6, "mxfp8": 8}[kind]
    args = QuantizationArgs(num_bits=bits, type="float", strategy="group", group_size=32, scale_dtype=torch.uint8)
    fmt = {"mxfp4": "mxfp4-pack-quantized", "mxfp6": "mxfp6-pack-quantized", "mxfp8": "mxfp8-quantized"}[kind]
    stored, ref = ct_quantize(O, I, args, torch.bfloat16, fmt=fmt)
    weight = np_of(stored["weight_packed" if "weight_packed" in stored else "weight"])
    graph, buffers = ct_mx(weight, np_of(stored["weight_scale"]), kind, O, I)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("shape", [(200, 300), (130, 129), (256, 128)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_compressed_tensors_fp8_block_ragged(shape, dtype):
    torch = need("torch")
    from compressed_tensors.quantization import QuantizationArgs

    torch.manual_seed(11)
    O, I = shape
    args = QuantizationArgs(num_bits=8, type="float", strategy="block", block_structure=[128, 128])
    stored, ref = ct_quantize(O, I, args, getattr(torch, dtype), fmt="float-quantized")
    graph, buffers = ct_fp8(np_of(stored["weight"]), np_of(stored["weight_scale"]), O, I, (128, 128), dtype)
    prove(graph, buffers, ref)


# ---- MLX 0.32.4 (CPU) --------------------------------------------------------------------------


def mlx() -> Any:
    mx = need("mlx.core")
    mx.set_default_device(mx.cpu)
    return mx


@pytest.mark.parametrize("bits", [1, 2, 3, 4, 5, 6, 8])
@pytest.mark.parametrize("group_size", [32, 64, 128])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_mlx_affine(bits, group_size, dtype):
    mx = mlx()
    w = mx.array(np.random.default_rng(bits * 7 + group_size).standard_normal((8, 256)).astype(np.float32))
    w = w.astype(getattr(mx, dtype))
    w_q, scales, biases = mx.quantize(w, group_size=group_size, bits=bits)
    ref = mx.dequantize(w_q, scales, biases, group_size=group_size, bits=bits)
    graph, buffers = mlx_affine(np.array(w_q), np_of(scales), np_of(biases), bits, group_size, dtype)
    prove(graph, buffers, ref)


def test_mlx_affine_3d():
    mx = mlx()
    w = mx.array(np.random.default_rng(1).standard_normal((2, 3, 384)).astype(np.float32)).astype(mx.float16)
    w_q, scales, biases = mx.quantize(w, group_size=64, bits=3)
    ref = mx.dequantize(w_q, scales, biases, group_size=64, bits=3)
    graph, buffers = mlx_affine(np.array(w_q), np_of(scales), np_of(biases), 3, 64, "float16")
    prove(graph, buffers, ref)


@pytest.mark.parametrize("mode", ["mxfp4", "mxfp8"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_mlx_mx(mode, dtype):
    mx = mlx()
    w = mx.array(np.random.default_rng(2).standard_normal((8, 128)).astype(np.float32)).astype(mx.bfloat16)
    w_q, scales = mx.quantize(w, mode=mode)
    ref = mx.dequantize(w_q, scales, mode=mode, dtype=getattr(mx, dtype))
    graph, buffers = mlx_fp(np.array(w_q), np.array(scales), mode, dtype)
    prove(graph, buffers, ref)


def test_mlx_mx_every_scale_byte():
    # Every E8M0 byte (0: 2^-127, 255: infinity) times every code, in bfloat16.
    mx = mlx()
    O = 256
    codes = np.tile(np.arange(16, dtype=np.uint32), 2)
    words = np.zeros((O, 4), np.uint32)
    for k in range(32):
        words[:, k // 8] |= codes[k] << np.uint32(4 * (k % 8))
    scales = np.arange(256, dtype=np.uint8).reshape(O, 1)
    ref = mx.dequantize(mx.array(words), mx.array(scales), mode="mxfp4", group_size=32, bits=4)
    graph, buffers = mlx_fp(words, scales, "mxfp4", "bfloat16")
    prove(graph, buffers, ref)


@pytest.mark.parametrize("with_global", [False, True])
def test_mlx_nvfp4(with_global):
    mx = mlx()
    w = mx.array(np.random.default_rng(3).standard_normal((8, 128)).astype(np.float32)).astype(mx.float16)
    if with_global:
        g = mx.max(mx.abs(w.astype(mx.float32)))
        w_q, scales = mx.quantize(w, mode="nvfp4", global_scale=g)
        ref = mx.dequantize(w_q, scales, mode="nvfp4", global_scale=g)
        graph, buffers = mlx_fp(np.array(w_q), np.array(scales), "nvfp4", "bfloat16",
                                np.array(g).reshape(1, 1))
    else:
        w_q, scales = mx.quantize(w, mode="nvfp4")
        ref = mx.dequantize(w_q, scales, mode="nvfp4")
        graph, buffers = mlx_fp(np.array(w_q), np.array(scales), "nvfp4", "bfloat16")
    prove(graph, buffers, ref)


# ---- bitsandbytes 0.50.2 (CPU) ---------------------------------------------------------------

# bnb's FP4 table, by the CPU path that dequantizes (ADR-061): the
# scalar C kernel (I % 16 != 0 and I even) gives -0.0 at code 8, the AVX-512
# one and the Python fallback +0.0.
FP4 = np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, -0.0, -0.0625, -8, -12, -4, -6, -2, -3], np.float32) / np.float32(12)


def bnb_code(quant_type: str, shape: tuple[int, ...], blocksize: int) -> np.ndarray:
    torch = need("torch")
    if quant_type == "nf4":
        return NF4
    table = FP4.copy()
    I = shape[-1]
    avx512 = torch.backends.cpu.get_cpu_capability() == "AVX512"
    if (avx512 and blocksize >= 2048) or I % 2 != 0 or (avx512 and I % 16 == 0):
        table[8] = 0.0
    return table


# Shapes whose bnb CPU result is the flat-block meaning: I % 16 != 0 (the
# scalar kernel), or I % 16 == 0 with I % blocksize == 0 (the AVX-512 one
# then agrees), or odd I (the Python fallback); never the AVX-512 kernel's
# per-row absmax bug (I % 16 == 0, I % blocksize != 0).
BNB_SHAPES = [(7, 50, 64), (16, 128, 64), (5, 9, 32), (6, 100, 128), (3, 256, 256), (300, 1000, 1024)]


@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
@pytest.mark.parametrize("case", BNB_SHAPES, ids=lambda c: f"{c[0]}x{c[1]}-bs{c[2]}")
def test_bitsandbytes_4bit(quant_type, nested, dtype, case):
    torch = need("torch")
    F = need("bitsandbytes.functional")
    O, I, bs = case
    torch.manual_seed(O * I)
    W = (torch.randn(O, I) * 0.05).to(getattr(torch, dtype))
    packed, qs = F.quantize_4bit(W, blocksize=bs, compress_statistics=nested, quant_type=quant_type)
    ref = F.dequantize_4bit(packed, qs)
    nested_parts = None
    if nested:
        nested_parts = (np_of(qs.state2.absmax), np_of(qs.state2.code), float(qs.offset))
    graph, buffers = bnb_4bit(np_of(packed.view(torch.uint8)).ravel(), np_of(qs.absmax), bnb_code(quant_type, (O, I), bs),
                              bs, (O, I), nested_parts)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_bitsandbytes_llm_int8(dtype):
    torch = need("torch")
    bnb = need("bitsandbytes")
    F = need("bitsandbytes.functional")
    torch.manual_seed(1)
    W = (torch.randn(32, 128) * 0.05).to(getattr(torch, dtype))
    lin = bnb.nn.Linear8bitLt(128, 32, bias=False, has_fp16_weights=False, threshold=0.0)
    lin.weight.data = W.float()
    lin = lin.to("cpu")
    cb, scb = lin.weight.data, lin.weight.SCB
    ref = F.int8_vectorwise_dequant(cb, scb)
    graph, buffers = llm_int8(np_of(cb), np_of(scb))
    prove(graph, buffers, ref)


# ---- torchao 0.18.0 (CPU) -------------------------------------------------------------------


@pytest.mark.parametrize("granularity", ["tensor", "row", "block128", "block1x128"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_torchao_float8(granularity, dtype):
    torch = need("torch")
    need("torchao")
    from torchao.quantization.granularity import PerBlock, PerRow, PerTensor
    from torchao.quantization.quantize_.workflows.float8.float8_tensor import Float8Tensor

    torch.manual_seed(2)
    O, I = 256, 384
    hp = torch.randn(O, I, dtype=getattr(torch, dtype))
    gran = {"tensor": PerTensor(), "row": PerRow(), "block128": PerBlock([128, 128]),
            "block1x128": PerBlock([1, 128])}[granularity]
    t = Float8Tensor.from_hp(hp, granularity=gran)
    ref = t.dequantize()
    block = {"tensor": (O, I), "row": (1, I), "block128": (128, 128), "block1x128": (1, 128)}[granularity]
    graph, buffers = torchao_float8(np_of(t.qdata), "float8_e4m3fn", np_of(t.scale), block, dtype)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("elem", ["float8_e4m3fn", "float8_e5m2", "fp6_e2m3", "fp6_e3m2", "fp4"])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_torchao_mx(elem, dtype):
    torch = need("torch")
    need("torchao")
    from torchao.prototype.mx_formats.mx_tensor import MXTensor

    torch.manual_seed(3)
    hp = torch.randn(64, 128, dtype=getattr(torch, dtype))
    elem_dtype = {"float8_e4m3fn": torch.float8_e4m3fn, "float8_e5m2": torch.float8_e5m2, "fp6_e2m3": "fp6_e2m3",
                  "fp6_e3m2": "fp6_e3m2", "fp4": torch.float4_e2m1fn_x2}[elem]
    t = MXTensor.to_mx(hp, elem_dtype, block_size=32)
    ref = t.dequantize(getattr(torch, dtype))
    graph, buffers = torchao_mx(np_of(t.qdata), np_of(t.scale), elem, dtype)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("per_tensor", [False, True])
@pytest.mark.parametrize("swizzled", [False, True])
@pytest.mark.parametrize("M", [128, 200])
def test_torchao_nvfp4(per_tensor, swizzled, M):
    torch = need("torch")
    need("torchao")
    from torchao.prototype.mx_formats.nvfp4_tensor import NVFP4Tensor, per_tensor_amax_to_scale

    torch.manual_seed(4)
    K = 128
    hp = torch.randn(M, K, dtype=torch.bfloat16)
    pts = per_tensor_amax_to_scale(hp.abs().amax()) if per_tensor else None
    t = NVFP4Tensor.to_nvfp4(hp, per_tensor_scale=pts, is_swizzled_scales=swizzled)
    ref = t.dequantize(torch.bfloat16)
    graph, buffers = torchao_nvfp4(np_of(t.qdata), np_of(t.scale).ravel(),
                                   None if pts is None else np_of(t.per_tensor_scale).reshape(1, 1), M, K, swizzled)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("weight_dtype", ["int2", "int3", "int4", "int8"])
def test_torchao_intx_unpacked_to_int8(weight_dtype):
    torch = need("torch")
    need("torchao")
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup

    torch.manual_seed(5)
    m = torch.nn.Sequential(torch.nn.Linear(128, 24, bias=False, dtype=torch.bfloat16))
    quantize_(m, IntxWeightOnlyConfig(weight_dtype=getattr(torch, weight_dtype), granularity=PerGroup(32)))
    t = m[0].weight
    ref = t.dequantize()
    graph, buffers = torchao_intx(np_of(t.qdata), np_of(t.scale), torch_dtype_name(t.scale), np_of(t.zero_point), 32,
                                  "bfloat16", weight_dtype)
    prove(graph, buffers, ref)


# ---- torch 2.13 legacy quantized tensors ---------------------------------------------------------


def storage_bytes(q: Any, nbytes: int) -> bytes:
    """A quantized tensor's code bytes, as its storage holds them."""
    torch = need("torch")
    st = q.untyped_storage()
    raw = torch.empty(0, dtype=torch.uint8).set_(st, 0, (st.nbytes(),), (1,))
    return raw.numpy()[:nbytes].tobytes()


@pytest.mark.parametrize("qdtype", ["qint8", "quint8", "qint32"])
def test_torch_per_tensor(qdtype):
    torch = need("torch")
    torch.manual_seed(6)
    x = torch.randn(5, 7) * 3
    q = torch.quantize_per_tensor(x, 0.1, 3 if qdtype != "qint32" else -7, getattr(torch, qdtype))
    code = {"qint8": "int8", "quint8": "uint8", "qint32": "int32"}[qdtype]
    graph, buffers = torch_per_tensor(np.frombuffer(storage_bytes(q, q.numel() * q.element_size()),
                                                    dtype=code).reshape(5, 7), q.q_scale(), q.q_zero_point(), code)
    prove(graph, buffers, q.dequantize())


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("qdtype", ["qint8", "quint8", "qint32"])
def test_torch_per_channel(axis, qdtype):
    torch = need("torch")
    torch.manual_seed(7 + axis)
    x = torch.randn(4, 5, 6) * 2
    n = x.shape[axis]
    zp = torch.randint(-3, 3, (n,)) if qdtype != "quint8" else torch.randint(0, 6, (n,))
    q = torch.quantize_per_channel(x, torch.rand(n, dtype=torch.float64) * 0.1 + 0.01, zp, axis,
                                   getattr(torch, qdtype))
    code = {"qint8": "int8", "quint8": "uint8", "qint32": "int32"}[qdtype]
    grid = tuple(s if k == axis else 1 for k, s in enumerate(x.shape))
    codes = np.frombuffer(storage_bytes(q, q.numel() * q.element_size()), dtype=code).reshape(x.shape)
    graph, buffers = torch_per_channel(codes, q.q_per_channel_scales().numpy().reshape(grid),
                                       q.q_per_channel_zero_points().numpy().reshape(grid), axis, code)
    prove(graph, buffers, q.dequantize())


@pytest.mark.parametrize("qdtype", ["quint8", "quint4x2", "quint2x4"])
@pytest.mark.parametrize("axis", [0, 1])
def test_torch_float_qparams(qdtype, axis):
    torch = need("torch")
    torch.manual_seed(8)
    x = torch.rand(5, 7) * 4
    n = x.shape[axis]
    scales = torch.rand(n) * 0.3 + 0.05
    zps = torch.rand(n) * 2
    q = torch.quantize_per_channel(x, scales, zps, axis, getattr(torch, qdtype))
    grid = tuple(s if k == axis else 1 for k, s in enumerate(x.shape))
    bits = {"quint4x2": 4, "quint2x4": 2}.get(qdtype, 8)
    nbytes = -(-x.numel() * bits // 8)
    if bits == 8:
        graph = Graph(x.shape, [Step("sub_mul", "float32", x.shape, 1, 2, 3,
                                     blocks=tuple(1 if k == axis else s for k, s in enumerate(x.shape))),
                                Stored("uint8", x.shape, 0), Stored("float32", grid, 1), Stored("float32", grid, 2)],
                      name="torch_float_qparams")
        buffers = [storage_bytes(q, nbytes), scales.numpy().tobytes(), zps.numpy().tobytes()]
    else:
        graph, buffers = torch_sub_byte(np.frombuffer(storage_bytes(q, nbytes), np.uint8), tuple(x.shape), bits,
                                        q.q_per_channel_scales().float().numpy().reshape(grid),
                                        q.q_per_channel_zero_points().float().numpy().reshape(grid), axis)
    prove(graph, buffers, q.dequantize())


# ---- onnx 1.23.2: the DequantizeLinear reference ------------------------------------------------


def onnx_dequantize(x: np.ndarray, scale: np.ndarray, zp: np.ndarray | None, axis: int, block: int,
                    output_dtype: int | None) -> tuple[Any, Any, np.ndarray]:
    """The model's x and zero point initializers (their raw_data is what the
    graph reads) and the reference's output."""
    onnx = need("onnx")
    from onnx import helper, numpy_helper
    from onnx.reference import ReferenceEvaluator

    inits = [numpy_helper.from_array(x, "x"), numpy_helper.from_array(scale, "s")]
    inputs = ["x", "s"]
    if zp is not None:
        inits.append(numpy_helper.from_array(zp, "zp"))
        inputs.append("zp")
    attrs: dict[str, Any] = {"axis": axis}
    if block:
        attrs["block_size"] = block
    if output_dtype is not None:
        attrs["output_dtype"] = output_dtype
    node = helper.make_node("DequantizeLinear", inputs, ["y"], **attrs)
    out_type = output_dtype if output_dtype is not None else helper.np_dtype_to_tensor_dtype(scale.dtype)
    g = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("y", out_type, list(x.shape))],
                          initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 28)])
    m.ir_version = onnx.IR_VERSION
    y = ReferenceEvaluator(m).run(None, {})[0]
    return inits[0], inits[2] if zp is not None else None, y


@pytest.mark.parametrize("x_dtype", ["int8", "uint8", "int16", "uint16", "int4", "uint4", "int2", "uint2",
                                     "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float6_e2m3fn",
                                     "float6_e3m2fn"])
@pytest.mark.parametrize("mode", ["tensor", "axis0", "axis1", "blocked"])
@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_onnx_dequantize_linear(x_dtype, mode, out):
    import ml_dtypes

    from onnx import TensorProto as TP

    rng = np.random.default_rng(zlib.crc32(f"{x_dtype} {mode} {out}".encode()))
    shape = (10, 10)
    np_dtype = getattr(ml_dtypes, x_dtype, None) or np.dtype(x_dtype)
    if x_dtype.startswith(("int", "uint")):
        info = ml_dtypes.iinfo(np_dtype) if hasattr(ml_dtypes, x_dtype) else np.iinfo(np_dtype)
        x = rng.integers(info.min, info.max + 1, shape).astype(np_dtype)
    else:
        x = (rng.standard_normal(shape) * 2).astype(np_dtype)
    axis, block = (1, 4) if mode == "blocked" else (0 if mode == "axis0" else 1, 0)
    if mode == "tensor":
        sshape: tuple[int, ...] = ()
    elif mode == "blocked":
        sshape = (10, 3)
    else:
        sshape = (10,)
    scale = (rng.random(sshape) * 0.1 + 0.01).astype(np.float32)
    has_zp = x_dtype.startswith(("int", "uint"))
    zp = None
    if has_zp:
        info = ml_dtypes.iinfo(np_dtype) if hasattr(ml_dtypes, x_dtype) else np.iinfo(np_dtype)
        zp = rng.integers(info.min, info.max + 1, sshape).astype(np_dtype)
    out_code = {"float32": TP.FLOAT, "float16": TP.FLOAT16, "bfloat16": TP.BFLOAT16}[out]
    x_init, zp_init, y = onnx_dequantize(x, scale, zp, axis, block, out_code)
    # the graph: the step's grid is (rows, cols / block), (rows, 1), (1, cols) or (1, 1)
    if mode == "blocked":
        graph, buffers = onnx_blocked(x_init.raw_data, x_dtype, shape, scale,
                                      None if zp_init is None else zp_init.raw_data, block)
    else:
        grid = {"tensor": (1, 1), "axis0": (10, 1), "axis1": (1, 10)}[mode]
        graph, buffers = onnx_blocked(x_init.raw_data, x_dtype, shape, scale.reshape(grid),
                                      None if zp_init is None else zp_init.raw_data, 1)
        step = graph.nodes[0]
        assert isinstance(step, Step)
        step.blocks = tuple(1 if g > 1 else s for g, s in zip(grid, shape))
        step.ragged = False
        if zp_init is not None:
            zpn = graph.nodes[3]
            assert isinstance(zpn, Stored)
            zpn.shape, zpn.strides = grid, (grid[1], 1)
        graph.nodes[2] = Stored("float32", grid, 1)
    if y.dtype == ml_dtypes.bfloat16 or y.dtype == np.float16:
        y = y.view(np.uint16)
    prove(graph, buffers, y, out)


def test_onnx_int32_with_an_int32_zero_point_computes_in_float64():
    # The reference rounds x to float32 first (x.astype(float32)), and numpy
    # promotes float32 - int32 to float64: a float32 step that rounds x (a
    # product with 1), under a float64 step rounded once to float32.
    rng = np.random.default_rng(9)
    x = rng.integers(-2**31, 2**31, (6, 5)).astype(np.int32)
    scale = (rng.random(6) * 1e-3).astype(np.float32)
    zp = rng.integers(-2**20, 2**20, 6).astype(np.int32)
    x_init, zp_init, y = onnx_dequantize(x, scale, zp, 0, 0, None)
    graph = Graph((6, 5), [Step("sub_mul", "float64", (6, 5), 1, 4, 5, blocks=(1, 5)),
                           Step("mul", "float32", (6, 5), 2, 3, blocks=(6, 5)), Stored("int32", (6, 5), 0),
                           Constant("float32", constant_bits("float32", 1.0)),
                           Stored("float32", (6, 1), 1), Stored("int32", (6, 1), 2)],
                  name="onnx_int32")
    prove(graph, [x_init.raw_data, scale.tobytes(), zp_init.raw_data], y, "float32")


# ---- HQQ 0.2.8 (CPU) --------------------------------------------------------------------------------


@pytest.mark.parametrize("nbits", [8, 4, 3, 2, 1])
@pytest.mark.parametrize("axis", [1, 0])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_hqq(nbits, axis, dtype):
    torch = need("torch")
    quantize = need("hqq.core.quantize")
    torch.manual_seed(nbits + axis)
    lin = torch.nn.Linear(128, 48, bias=False)
    gs = 64
    h = quantize.HQQLinear(lin, quant_config=quantize.BaseQuantizeConfig(nbits=nbits, group_size=gs, axis=axis),
                           compute_dtype=getattr(torch, dtype), device="cpu")
    ref = h.dequantize()
    meta = h.meta
    O, I = meta["shape"]
    R, C = (O * I // gs, gs) if axis == 1 else (gs, O * I // gs)
    w_q = np_of(h.W_q)
    scale, zero = np_of(meta["scale"]), np_of(meta["zero"])
    graph, buffers = hqq_graph(w_q, scale, zero, nbits, (O, I), R, C, axis, dtype)
    prove(graph, buffers, ref)


def hqq_graph(w_q, scale, zero, nbits, shape, R, C, axis, dtype):
    if nbits == 1:
        x = Stored("uint1", (R, C), 0, container_bits=8, packed_axis=0, packing="slots", chunk_containers=R // 8,
                   planar=True, chunk_stride=R // 8, order=tuple(7 - s for s in range(8)), strides=(C, 1))
        graph, buffers = hqq(w_q, scale, zero, 8, shape, R, C, dtype)
        graph.nodes[1] = x
    else:
        graph, buffers = hqq(w_q, scale, zero, nbits, shape, R, C, dtype)
    if axis == 0:
        step = graph.nodes[0]
        assert isinstance(step, Step)
        step.blocks = (R, 1)
        graph.nodes[2] = Stored(dtype, (1, C), 1)
        graph.nodes[3] = Stored(dtype, (1, C), 2)
    return graph, buffers


# ---- optimum-quanto 0.2.7 ------------------------------------------------------------------------


@pytest.mark.parametrize("qtype", ["qint4", "qint2"])
@pytest.mark.parametrize("zeropoint", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("shape", [(64, 128), (96, 32)])
def test_optimum_quanto(qtype, zeropoint, dtype, shape):
    torch = need("torch")
    quanto_mod = need("optimum.quanto")
    from optimum.quanto.tensor.optimizers import MaxOptimizer
    from optimum.quanto.tensor.weights import quantize_weight

    torch.manual_seed(10)
    qt = getattr(quanto_mod, qtype)
    W = (torch.randn(shape) * 0.1).to(getattr(torch, dtype))
    gs = 32
    scale, shift = MaxOptimizer()(W, qt, 0, group_size=gs, zeropoint=zeropoint)
    t = quantize_weight(W, qt, 0, scale, shift, group_size=gs, optimized=False)
    ref = t.dequantize()
    bits = t._data._bits
    R = W.numel() // gs
    data = np_of(t._data._data)
    assert data.shape == (R // (8 // bits), gs)
    float_shift = t._shift.dtype.is_floating_point
    shift = np_of(t._shift).reshape(R, 1)
    graph, buffers = quanto(data, np_of(t._scale).reshape(R, 1), shift, bits, (R, gs), float_shift, dtype,
                            shift_dtype=dtype if float_shift else torch_dtype_name(t._shift))
    graph.shape = tuple(shape)
    prove(graph, buffers, ref)


# ---- GPTQ (GPTQModel 7.6 TorchLinear) and AWQ (AutoAWQ 0.2.9) --------------------------------------


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("act_order", [False, True])
@pytest.mark.parametrize("sym", [True, False])
def test_gptq(bits, act_order, sym):
    torch = need("torch")
    need("gptqmodel")
    from gptqmodel.nn_modules.qlinear.torch import TorchLinear

    torch.manual_seed(bits * 4 + act_order * 2 + sym)
    I, O, gs = 128, 64, 32
    G = I // gs
    maxq = (1 << bits) - 1
    lin = torch.nn.Linear(I, O, bias=False).to(torch.float16)
    scales = (torch.rand(O, G) * 0.02 + 0.005).to(torch.float16)
    zeros = torch.full((O, G), float(1 << (bits - 1))) if sym else torch.randint(1, maxq + 1, (O, G)).float()
    if act_order:
        perm = torch.randperm(I)
        g_idx = torch.empty(I, dtype=torch.int32)
        g_idx[perm] = (torch.arange(I) // gs).to(torch.int32)
    else:
        g_idx = (torch.arange(I) // gs).to(torch.int32)
    layer = TorchLinear(bits=bits, group_size=gs, sym=sym, desc_act=act_order, in_features=I, out_features=O,
                        bias=False, pack_dtype=torch.int32)
    layer.pack_block(lin, scales, zeros, g_idx)
    layer.post_init()
    ref = layer.dequantize_weight().T  # [I, O] -> [O, I]
    qw, qz = np_of(layer.qweight).view(np.uint32), np_of(layer.qzeros).view(np.uint32)
    sc, gi = np_of(layer.scales).view(np.float16), np_of(layer.g_idx)
    graph, buffers = gptq(qw, sc, qz, gi if act_order else None, bits, O, I, gs, v1=False)
    prove(graph, buffers, ref)
    if bits in (2, 4, 8):
        # the v1 checkpoint (zero - 1 in each field; no zero is 0 here, so no
        # borrow crosses fields): code offset +1 over the exported bytes
        from gptqmodel.utils.model import convert_gptq_v2_to_v1_format_module

        convert_gptq_v2_to_v1_format_module(layer, type("C", (), {"bits": bits, "pack_dtype": torch.int32})())
        graph, buffers = gptq(qw, sc, np_of(layer.qzeros).view(np.uint32), gi if act_order else None, bits, O, I,
                              gs, v1=True)
        prove(graph, buffers, ref)


@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_awq_gemm(group_size):
    torch = need("torch")
    need("awq")
    from awq.modules.linear.gemm import WQLinear_GEMM
    from awq.utils.packing_utils import dequantize_gemm

    torch.manual_seed(group_size)
    I, O = 256, 64
    lin = torch.nn.Linear(I, O, bias=True).half()
    W = lin.weight.data.float()
    g = W.reshape(O, I // group_size, group_size)
    mx, mn = g.amax(-1), g.amin(-1)
    s = ((mx - mn).clamp(min=1e-5) / 15)
    z = (-torch.round(mn / s)).clamp(0, 15)
    S = s.repeat_interleave(group_size, 1)
    Z = z.repeat_interleave(group_size, 1)
    lin.weight.data = ((torch.clamp(torch.round(W / S) + Z, 0, 15) - Z) * S).half()
    q = WQLinear_GEMM.from_linear(lin, 4, group_size, scales=s.T.contiguous().half(), zeros=z.T.contiguous())
    ref = dequantize_gemm(q.qweight, q.qzeros, q.scales, 4, group_size).T  # [I, O] -> [O, I]
    graph, buffers = awq(np_of(q.qweight).view(np.uint32), np_of(q.qzeros).view(np.uint32),
                         np_of(q.scales).view(np.float16), O, I, group_size)
    assert AWQ_ORDER == (0, 4, 1, 5, 2, 6, 3, 7)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("bits", [3, 5, 6, 7])
def test_gptq_planar(bits):
    # GPTQModel's gptq_p: a code split into word-aligned bit planes, one
    # bits node over a stored node per plane.
    torch = need("torch")
    need("gptqmodel")
    from gptqmodel.nn_modules.qlinear.torch import TorchLinear

    torch.manual_seed(bits)
    I, O, gs = 128, 64, 32
    G = I // gs
    lin = torch.nn.Linear(I, O, bias=False).to(torch.float16)
    scales = (torch.rand(O, G) * 0.02 + 0.005).to(torch.float16)
    zeros = torch.randint(0, (1 << bits), (O, G)).float()
    g_idx = (torch.arange(I) // gs).to(torch.int32)
    layer = TorchLinear(bits=bits, group_size=gs, sym=False, desc_act=False, in_features=I, out_features=O,
                        bias=False, pack_dtype=torch.int32)
    layer.planar = True
    layer.pack_block(lin, scales, zeros, g_idx)
    layer.post_init()
    assert layer.planar
    ref = layer.dequantize_weight().T
    graph, buffers = gptq_planar(np_of(layer.qweight).view(np.uint32), np_of(layer.scales).view(np.float16),
                                 np_of(layer.qzeros).view(np.uint32), bits, O, I, gs)
    prove(graph, buffers, ref)


@pytest.mark.parametrize("qtype", ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "TQ1_0", "TQ2_0", "MXFP4"])
def test_gguf_node_in_a_graph(qtype):
    # A GGML node is version 1's GGML scheme inside a graph: gguf-py's own
    # quantizer and dequantizer, through node 0 and under a step.
    gguf = need("gguf")
    from gguf import GGMLQuantizationType as QT

    x = np.random.default_rng(0).standard_normal((4, 256)).astype(np.float32)
    q = gguf.quants.quantize(x, QT[qtype])
    ref = gguf.quants.dequantize(q, QT[qtype])
    graph = Graph((4, 256), [Ggml(qtype.lower(), (4, 256), 0)], name=f"gguf_{qtype}")
    prove(graph, [q.tobytes()], ref)
    # under a float32 step multiplying by one: the same values
    graph = Graph((4, 256), [Step("mul", "float32", (4, 256), 1, 2), Ggml(qtype.lower(), (4, 256), 0),
                             Constant("float32", constant_bits("float32", 1.0))], name=f"gguf_{qtype}_step")
    prove(graph, [q.tobytes()], ref)
