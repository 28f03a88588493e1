"""Tiny checkpoints written by each library's own code on CPU, with that
library's own dequantization as the reference (tests/test_formats_checkpoint_*.py).

Each maker writes a checkpoint directory (config.json and safetensors, as
the library's save path lays them out) and returns the reference weights
{name: torch or numpy array} as the library itself dequantizes them.
GPTQ has no library that imports on CPU (AutoGPTQ fails under
transformers 5, GPTQModel is not installed): its bytes are packed as
QUANT-FORMATS § 2 gives them, and the reference is § 2.4's formula in
torch fp16.
"""
from __future__ import annotations

import json
import logging
import math
import os
import warnings
from typing import Any

import numpy as np

warnings.filterwarnings("ignore")


def _torch():
    import torch

    return torch


# ---- compressed-tensors ---------------------------------------------------------------

def _ct_observe(w, args):
    """min/max per strategy, as llm-compressor's MinMax observer reduces them."""
    torch = _torch()
    st = getattr(args.strategy, "value", args.strategy)
    if st == "tensor":
        return w.amin().reshape(1), w.amax().reshape(1)
    if st == "channel":
        return w.amin(-1, keepdim=True), w.amax(-1, keepdim=True)
    if st in ("group", "tensor_group"):
        g = w.unflatten(-1, (w.shape[-1] // args.group_size, args.group_size))
        return g.amin(-1), g.amax(-1)
    bh, bw = args.block_structure
    R, C = math.ceil(w.shape[0] / bh), math.ceil(w.shape[1] / bw)
    mn, mx = torch.empty(R, C, dtype=w.dtype), torch.empty(R, C, dtype=w.dtype)
    for r in range(R):
        for c in range(C):
            blk = w[r * bh:(r + 1) * bh, c * bw:(c + 1) * bw]
            mn[r, c], mx[r, c] = blk.amin(), blk.amax()
    return mn, mx


def ct_linear(O: int, I: int, args: Any, dtype: Any, fmt: str | None = None, seed: int = 0):
    """(on-disk tensors, CT's own decompressed weight, scheme, format) of one Linear."""
    torch = _torch()
    from loguru import logger
    from compressed_tensors.compressors.base import BaseCompressor
    from compressed_tensors.compressors.format import infer_module_format
    from compressed_tensors.quantization import QuantizationScheme
    from compressed_tensors.quantization.lifecycle.initialize import initialize_module_for_quantization
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam
    from compressed_tensors.utils import get_direct_state_dict

    logger.remove()
    torch.manual_seed(seed)
    lin = torch.nn.Linear(I, O, bias=False, dtype=dtype)
    scheme = QuantizationScheme(targets=["Linear"], weights=args, format=fmt)
    initialize_module_for_quantization(lin, scheme)
    w = lin.weight.data
    mn, mx = _ct_observe(w, args)
    gs = None
    if getattr(args.strategy, "value", args.strategy) == "tensor_group":
        gs = generate_gparam(w.amin(), w.amax())
        lin.weight_global_scale.data.copy_(gs)
    s, z = calculate_qparams(mn, mx, args, global_scale=gs)
    lin.weight_scale.data.copy_(s.to(lin.weight_scale.dtype))
    if hasattr(lin, "weight_zero_point"):
        lin.weight_zero_point.data.copy_(z.reshape(lin.weight_zero_point.shape))
    fmt = fmt or infer_module_format(type(lin), scheme).value
    cls = BaseCompressor.get_value_from_registry(fmt)
    stored = {k: v for k, v in cls.compress(get_direct_state_dict(lin), scheme).items() if v is not None}
    reference = cls.decompress(stored, scheme)["weight"]
    return stored, reference, scheme, fmt


def ct_write(directory: str, modules: dict[str, dict[str, Any]], scheme: Any, fmt: str,
             version: str | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """model.safetensors and config.json as ModelCompressor writes them (its update_config)."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig
    from safetensors.torch import save_file

    tensors = {f"{m}.{k}": v.contiguous() for m, sd in modules.items() for k, v in sd.items()}
    tensors.update(extra or {})
    save_file(tensors, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    qc = QuantizationConfig(config_groups={"group_0": scheme}, format=fmt, quantization_status="compressed")
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump({"model_type": "tiny"}, f)
    ModelCompressor(quantization_config=qc).update_config(directory)
    config = json.load(open(os.path.join(directory, "config.json")))
    if version is not None:
        config["quantization_config"]["version"] = version
        json.dump(config, open(os.path.join(directory, "config.json"), "w"))
    return config


def tiny_llama():
    torch = _torch()
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=64, hidden_size=64, intermediate_size=128, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(1)
    return LlamaForCausalLM(cfg).to(torch.bfloat16)


def ct_llama(directory: str, groups: Any, max_shard_size: str | None = None) -> None:
    """A tiny Llama quantized by compressed-tensors and saved by transformers (save_pretrained + update_config)."""
    from loguru import logger
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.quantization import QuantizationConfig, apply_quantization_config
    from compressed_tensors.quantization.utils.helpers import calculate_qparams, generate_gparam

    logger.remove()
    model = tiny_llama()
    qc = QuantizationConfig(config_groups=groups, ignore=["lm_head"])
    apply_quantization_config(model, qc)
    for _, m in model.named_modules():
        if getattr(m, "quantization_scheme", None) is None:
            continue
        a = m.quantization_scheme.weights
        w = m.weight.data
        mn, mx = _ct_observe(w, a)
        gs = None
        if getattr(a.strategy, "value", a.strategy) == "tensor_group":
            gs = generate_gparam(w.amin(), w.amax())
            m.weight_global_scale.data.copy_(gs)
        s, z = calculate_qparams(mn, mx, a, global_scale=gs)
        m.weight_scale.data.copy_(s.to(m.weight_scale.dtype))
        if hasattr(m, "weight_zero_point"):
            m.weight_zero_point.data.copy_(z.reshape(m.weight_zero_point.shape))
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    kwargs = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.save_pretrained(directory, **kwargs)
    compressor.update_config(directory)


def ct_decompress_file(directory: str, module: str) -> Any:
    """compressed-tensors' own decompression of one module, from the checkpoint's files."""
    from compressed_tensors.compressors.base import BaseCompressor
    from compressed_tensors.quantization import QuantizationConfig
    from safetensors import safe_open

    config = json.load(open(os.path.join(directory, "config.json")))["quantization_config"]
    tensors = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".safetensors"):
            with safe_open(os.path.join(directory, name), "pt") as f:
                for k in f.keys():
                    if k.startswith(module + "."):
                        tensors[k[len(module) + 1:]] = f.get_tensor(k)
    qc = QuantizationConfig.model_validate(config)
    scheme = qc.config_groups["group_0"]
    fmt = config["config_groups"]["group_0"].get("format") or config["format"]
    return BaseCompressor.get_value_from_registry(fmt).decompress(tensors, scheme)["weight"]


# ---- GPTQ (bytes per QUANT-FORMATS § 2; no GPTQ library imports on CPU) ----------------

def pack_dense_lsb(codes: np.ndarray, b: int, axis: int) -> np.ndarray:
    """Unsigned codes -> int32 words, a dense LSB-first bit stream along `axis` (QUANT-FORMATS § 2.2)."""
    c = np.moveaxis(codes, axis, -1).astype(np.uint32)
    bits = ((c[..., None] >> np.arange(b, dtype=np.uint32)) & 1).astype(np.uint8).reshape(*c.shape[:-1], -1)
    pad = (-bits.shape[-1]) % 32
    bits = np.concatenate([bits, np.zeros((*bits.shape[:-1], pad), np.uint8)], -1)
    words = np.packbits(bits, axis=-1, bitorder="little").view("<i4")
    return np.ascontiguousarray(np.moveaxis(words, -1, axis))


def gptq_tensors(O: int, I: int, bits: int, group_size: int, act_order: bool, v1: bool, seed: int = 0,
                 sym: bool = False):
    """(qweight, qzeros, scales, g_idx, reference [O, I] fp16 torch) for one GPTQ layer."""
    torch = _torch()
    rng = np.random.default_rng(seed)
    gs = I if group_size == -1 else group_size
    G = -(-I // gs)
    maxq = (1 << bits) - 1
    q = rng.integers(0, maxq + 1, (I, O))
    zeros = np.full((G, O), 1 << (bits - 1)) if sym else rng.integers(1 if v1 else 0, maxq + 1, (G, O))
    scales = (rng.random((G, O)) * 0.02 + 0.001).astype(np.float16)
    if act_order:
        g_idx = (rng.permutation(I) // gs).astype(np.int32)
    else:
        g_idx = (np.arange(I) // gs).astype(np.int32)
    qweight = pack_dense_lsb(q, bits, 0)
    field = zeros - 1 if v1 else zeros
    qzeros = pack_dense_lsb(field, bits, 1)
    qt, zt = torch.from_numpy(q.astype(np.int16)), torch.from_numpy(zeros.astype(np.int16))
    st, gt = torch.from_numpy(scales), torch.from_numpy(g_idx.astype(np.int64))
    ref_t = (st[gt] * (qt - zt[gt]).to(torch.float16))  # GPTQModel dequantize_weight: [I, O], one fp16 rounding
    return qweight, qzeros, scales, g_idx, ref_t.T.contiguous()


def gptq_write(directory: str, module: str, bits: int, group_size: int, act_order: bool, v1: bool,
               O: int = 64, I: int = 128, seed: int = 0, with_g_idx: bool = True) -> Any:
    from safetensors.numpy import save_file

    qweight, qzeros, scales, g_idx, ref = gptq_tensors(O, I, bits, group_size, act_order, v1, seed)
    tensors = {f"{module}.qweight": qweight, f"{module}.qzeros": qzeros, f"{module}.scales": scales,
               f"{module}.bias": np.zeros(O, np.float16)}
    if with_g_idx:
        tensors[f"{module}.g_idx"] = g_idx
    save_file(tensors, os.path.join(directory, "model.safetensors"), metadata={"format": "pt"})
    fmt = "gptq" if v1 else "gptq_v2"
    qc = {"quant_method": "gptq", "bits": bits, "group_size": group_size, "desc_act": act_order, "sym": False,
          "format": fmt, "checkpoint_format": fmt, "pack_dtype": "int32"}
    json.dump({"model_type": "tiny", "quantization_config": qc}, open(os.path.join(directory, "config.json"), "w"))
    return ref


# ---- AWQ (AutoAWQ's own packing, on CPU) ------------------------------------------------

def _awq_qparams(W: Any, gs: int):
    O, I = W.shape
    g = W.float().reshape(O, I // gs, gs)
    mx, mn = g.amax(-1), g.amin(-1)
    s = (mx - mn).clamp(min=1e-5) / 15
    z = (-(mn / s).round()).clamp(0, 15)
    return s.T.contiguous().half(), z.T.contiguous()


def _awq_fake_quantize_(lin: Any, s: Any, z: Any, gs: int) -> None:
    """What AwqQuantizer hands from_linear: the pseudo-quantized weight (from_linear does not clamp)."""
    torch = _torch()
    W = lin.weight.data.float()
    S = s.float().T.repeat_interleave(gs, 1)
    Z = z.float().T.repeat_interleave(gs, 1)
    lin.weight.data = ((torch.clamp(torch.round(W / S) + Z, 0, 15) - Z) * S).half()


def awq_write(directory: str, module: str, version: str, group_size: int, O: int = 64, I: int = 256,
              seed: int = 0) -> Any:
    """AutoAWQ's WQLinear_GEMM / _GEMV.from_linear, saved with safetensors; reference dequantize_gemm [O, I]."""
    torch = _torch()
    with warnings.catch_warnings():  # AutoAWQ announces its deprecation on import
        warnings.simplefilter("ignore")
        import awq  # noqa: F401
    from awq.modules.linear.gemm import WQLinear_GEMM
    from awq.modules.linear.gemv import WQLinear_GEMV
    from awq.utils.packing_utils import dequantize_gemm
    from safetensors.torch import save_file

    torch.manual_seed(seed)
    lin = torch.nn.Linear(I, O, bias=False).half()
    s, z = _awq_qparams(lin.weight.data, group_size)
    _awq_fake_quantize_(lin, s, z, group_size)
    gemm = WQLinear_GEMM.from_linear(lin, 4, group_size, scales=s, zeros=z)
    ref = dequantize_gemm(gemm.qweight, gemm.qzeros, gemm.scales, 4, group_size).T.contiguous()
    q = gemm if version == "gemm" else WQLinear_GEMV.from_linear(lin, 4, group_size, scales=s.T.contiguous(),
                                                                 zeros=z.T.contiguous())
    save_file({f"{module}.qweight": q.qweight.contiguous(), f"{module}.qzeros": q.qzeros.contiguous(),
               f"{module}.scales": q.scales.contiguous()}, os.path.join(directory, "model.safetensors"))
    qc = {"quant_method": "awq", "bits": 4, "group_size": group_size, "zero_point": True, "version": version}
    json.dump({"model_type": "tiny", "quantization_config": qc}, open(os.path.join(directory, "config.json"), "w"))
    return ref


# ---- bitsandbytes --------------------------------------------------------------------

def bnb_state(O: int, I: int, quant_type: str, nested: bool, blocksize: int, dtype: Any, seed: int = 0,
              storage: Any = None):
    """(Linear4bit-like state dict entries for 'weight', bnb's own dequantize_4bit)."""
    torch = _torch()
    import bitsandbytes.functional as F

    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    torch.manual_seed(seed)
    W = (torch.randn(O, I) * 0.05).to(dtype)
    kwargs = {} if storage is None else {"quant_storage": storage}
    packed, qs = F.quantize_4bit(W, blocksize=blocksize, compress_statistics=nested, quant_type=quant_type, **kwargs)
    ref = F.dequantize_4bit(packed, qs)
    sd = {"weight": packed}
    sd.update({f"weight.{k}": v for k, v in qs.as_dict(packed=True).items()})
    return sd, ref


def bnb_int8(O: int, I: int, seed: int = 0):
    torch = _torch()
    import bitsandbytes as bnb
    import bitsandbytes.functional as F

    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    torch.manual_seed(seed)
    W = (torch.randn(O, I) * 0.05)
    layer = bnb.nn.Linear8bitLt(I, O, bias=False, has_fp16_weights=False, threshold=0.0)
    layer.weight.data = W
    layer = layer.to("cpu")
    ref = F.int8_vectorwise_dequant(layer.weight.data, layer.weight.SCB)
    return {k: v for k, v in layer.state_dict().items()}, ref


def save_torch(directory: str, tensors: dict[str, Any], config: dict[str, Any] | None = None) -> None:
    from safetensors.torch import save_file

    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(directory, "model.safetensors"),
              metadata={"format": "pt"})
    if config is not None:
        json.dump(config, open(os.path.join(directory, "config.json"), "w"))


# ---- DeepSeek FP8 (no CPU oracle exists: DeepSeek's own dequant is a Triton kernel) -------

def fp8_block(O: int, I: int, seed: int = 0):
    """(e4m3 weight, fp32 scale_inv grid, reference bf16) per QUANT-FORMATS § 6.1 / REPORT § 9."""
    torch = _torch()
    torch.manual_seed(seed)
    W = torch.randn(O, I)
    R, C = -(-O // 128), -(-I // 128)
    s = torch.empty(R, C)
    for r in range(R):
        for c in range(C):
            s[r, c] = W[r * 128:(r + 1) * 128, c * 128:(c + 1) * 128].abs().amax() / 448
    full = s.repeat_interleave(128, 0).repeat_interleave(128, 1)[:O, :I]
    q = (W / full).to(torch.float8_e4m3fn)
    ref = (q.float() * full).to(torch.bfloat16)
    return q, s, ref


# ---- mlx-lm ------------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 128,
         "num_attention_heads": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-5, "vocab_size": 64,
         "tie_word_embeddings": False}
QWEN_MOE = {"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 1, "intermediate_size": 128,
            "moe_intermediate_size": 64, "num_attention_heads": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-6,
            "vocab_size": 64, "num_experts": 4, "num_experts_per_tok": 2, "decoder_sparse_step": 1,
            "mlp_only_layers": [], "norm_topk_prob": True, "head_dim": 32, "rope_theta": 10000.0,
            "tie_word_embeddings": False, "max_position_embeddings": 64}


def mlx_model(directory: str, mode: str, gs: Any = None, bits: Any = None, override: bool = True,
              config: dict[str, Any] | None = None, global_scale: bool = False) -> None:
    """A tiny model quantized and saved by mlx-lm (quantize_model, save_model, save_config)."""
    import mlx.core as mx
    from mlx_lm.utils import _get_classes, quantize_model, save_config, save_model

    mx.set_default_device(mx.cpu)
    cfg = dict(config or LLAMA)
    model_cls, args_cls = _get_classes(cfg)
    mx.random.seed(0)
    model = model_cls(args_cls.from_dict(cfg))
    model.set_dtype(mx.bfloat16)
    mx.eval(model.parameters())

    def predicate(path: str, module: Any) -> Any:
        if "embed_tokens" in path:
            return False
        if override and mode == "affine" and path.endswith("down_proj"):
            return {"group_size": 32, "bits": 8, "mode": "affine"}
        return True

    kwargs = {"global_scale": True} if global_scale else {}
    model, qcfg = quantize_model(model, cfg, gs, bits, mode=mode, quant_predicate=predicate, **kwargs)
    save_model(directory, model)
    save_config(qcfg, config_path=os.path.join(directory, "config.json"))


def mlx_reference(directory: str, module: str) -> tuple[np.ndarray, str]:
    """(bits, dtype name) of mx.dequantize of the layer mlx-lm's load_model rebuilds (its own dequantization)."""
    from pathlib import Path

    import mlx.core as mx
    from mlx_lm.utils import load_model

    mx.set_default_device(mx.cpu)
    model, _ = load_model(Path(directory))
    layer = dict(model.named_modules())[module]
    kw = dict(group_size=layer.group_size, bits=layer.bits, mode=layer.mode)
    if "global_scale" in layer:
        outs = [mx.dequantize(layer.weight[e], layer.scales[e], mode=layer.mode, global_scale=layer.global_scale[e])
                for e in range(layer.weight.shape[0])]
        return np.array(mx.stack(outs).view(mx.uint32)), "float32"
    ref = mx.dequantize(layer.weight, layer.scales, layer.get("biases"), **kw)
    wide = ref.dtype == mx.float32
    return np.array(ref.view(mx.uint32 if wide else mx.uint16)), str(ref.dtype).split(".")[-1]
