"""bitsandbytes (its own quantize_4bit / Linear8bitLt on CPU, against its own
dequantize), DeepSeek-style FP8 (no CPU oracle: the formula of
QUANT-FORMATS § 6.1 in torch) and mlx-lm (quantize_model + save_model, against
mx.dequantize of the layers load_model rebuilds) checkpoints."""
import json
import os

import numpy as np
import pytest
import torch

import hurray
from hurray.formats.checkpoint import load_checkpoint
from support.bnb_fp4 import state_table_zero
from support.checkpoint_checks import one_weight, same_values, torch_bits
from support.checkpoint_makers import (QWEN_MOE, bnb_int8, bnb_state, fp8_block, mlx_model, mlx_reference,
                                       save_torch)


# ---- bitsandbytes ---------------------------------------------------------------------
# Shapes with I % 16 == 0 and I % blocksize == 0: bnb's AVX-512 CPU path then dequantizes the
# flat blocks it quantized (REPORT § 3: for I % bs != 0 it indexes absmax per row, a bnb bug).

@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_bnb_4bit(tmp_path, quant_type, nested, dtype):
    sd, ref = bnb_state(32, 128, quant_type, nested, 64, dtype)
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    ck = load_checkpoint(tmp_path / "model.safetensors")
    t = one_weight(ck, "layer.weight", (32, 128))
    if quant_type == "fp4":
        ref = state_table_zero(ref, sd["weight"])  # bnb's kernels differ in code 8's sign (ADR-061)
    same_values(t, *torch_bits(ref))
    assert sorted(ck) == ["layer.weight"]
    assert ck.scheme("layer.weight").startswith(f"{quant_type} codebook, blocks of 64")


@pytest.mark.parametrize("blocksize", [32, 256, 4096])
def test_bnb_4bit_blocksizes_and_a_ragged_last_block(tmp_path, blocksize):
    # 3700 elements: the last block partial; I % 16 != 0 takes bnb's scalar path, which indexes the flat blocks
    sd, ref = bnb_state(37, 100, "nf4", True, blocksize, torch.bfloat16)
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    same_values(load_checkpoint(tmp_path)["layer.weight"], *torch_bits(ref.reshape(37, 100)))


def test_bnb_4bit_bf16_storage(tmp_path):
    sd, ref = bnb_state(16, 128, "nf4", False, 64, torch.bfloat16, storage=torch.bfloat16)
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    same_values(load_checkpoint(tmp_path)["layer.weight"], *torch_bits(ref))


def test_bnb_llm_int8(tmp_path):
    sd, ref = bnb_int8(24, 64)
    save_torch(str(tmp_path), {f"fc.{k}": v for k, v in sd.items()})
    ck = load_checkpoint(tmp_path)
    same_values(one_weight(ck, "fc.weight", (24, 64)), *torch_bits(ref))
    assert "LLM.int8" in ck.scheme("fc.weight")


def _blob(value: bytes):
    return torch.frombuffer(bytearray(value), dtype=torch.uint8)


@pytest.mark.parametrize("blob,match", [
    (b"[" * 100000 + b"]" * 100000, "more than 4096"),
    (b"[" * 2000 + b"]" * 2000, "nested deeper|flat JSON|not a flat"),
    (b'{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [1e999, 2]}', "shape"),
    (b'{"quant_type": "nf4", "blocksize": 63, "dtype": "bfloat16", "shape": [32, 128]}', "blocksize 63"),
    (b'{"quant_type": "nf4", "blocksize": 64, "dtype": "bfloat16", "shape": [32, 256]}', "needs 4096 bytes"),
    (b"\xff\xfe", "UTF-8"),
])
def test_bnb_hostile_quant_state(tmp_path, blob, match):
    sd, _ = bnb_state(32, 128, "nf4", False, 64, torch.bfloat16)
    sd["weight.quant_state.bitsandbytes__nf4"] = _blob(blob)
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    with pytest.raises(hurray.HurrayError, match=f"'layer.weight'.*({match})"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_bnb_missing_absmax(tmp_path):
    sd, _ = bnb_state(32, 128, "nf4", False, 64, torch.bfloat16)
    del sd["weight.absmax"]
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*absmax.*missing"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_bnb_quant_map_that_is_not_bnbs_table(tmp_path):
    sd, _ = bnb_state(32, 128, "nf4", False, 64, torch.bfloat16)
    sd["weight.quant_map"] = sd["weight.quant_map"] * 2
    save_torch(str(tmp_path), {f"layer.{k}": v for k, v in sd.items()})
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*quant_map differs"):
        load_checkpoint(tmp_path)["layer.weight"]


# ---- DeepSeek FP8 ---------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(256, 384), (200, 300), (130, 129)])
def test_deepseek_fp8_blocks_with_ragged_edges(tmp_path, shape):
    q, s, ref = fp8_block(*shape)
    save_torch(str(tmp_path), {"mlp.weight": q, "mlp.weight_scale_inv": s},
               {"quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                        "weight_block_size": [128, 128]}})
    ck = load_checkpoint(tmp_path)
    same_values(one_weight(ck, "mlp.weight", shape), *torch_bits(ref))
    assert ck.scheme("mlp.weight") == "fp8 e4m3, blocks of 128x128, fp32 scales (DeepSeek FP8)"


def test_deepseek_fp8_scale_grid_that_contradicts_the_block(tmp_path):
    q, s, _ = fp8_block(256, 384)
    save_torch(str(tmp_path), {"mlp.weight": q, "mlp.weight_scale_inv": s},
               {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [64, 128]}})
    with pytest.raises(hurray.HurrayError, match="'mlp.weight'.*weight_scale_inv.*shape"):
        load_checkpoint(tmp_path)["mlp.weight"]


# ---- mlx-lm ---------------------------------------------------------------------------

@pytest.mark.parametrize("mode,gs,bits", [("affine", 64, 4), ("affine", 32, 3), ("affine", 64, 6), ("affine", 32, 5),
                                          ("mxfp4", None, None), ("mxfp8", None, None), ("nvfp4", None, None)])
def test_mlx_lm(tmp_path, mode, gs, bits):
    mlx_model(str(tmp_path), mode, gs, bits)
    assert os.path.exists(tmp_path / "model.safetensors.index.json")  # mlx-lm writes one even for one shard
    ck = load_checkpoint(tmp_path)
    for module in ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"):
        t = ck[module + ".weight"]
        assert t.descriptor.scheme == "graph"
        bits_ref, dtype = mlx_reference(str(tmp_path), module)
        same_values(t, bits_ref, dtype)
    assert ck.convention("model.embed_tokens.weight") == "plain"
    if mode == "affine":  # the per-layer override
        assert "uint8 affine" in ck.scheme("model.layers.0.mlp.down_proj.weight")


def test_mlx_lm_moe_nvfp4_with_a_global_scale_per_expert(tmp_path):
    mlx_model(str(tmp_path), "nvfp4", config=QWEN_MOE, global_scale=True)
    ck = load_checkpoint(tmp_path)
    module = "model.layers.0.mlp.switch_mlp.down_proj"
    t = ck[module + ".weight"]
    assert t.shape == (4, 64, 64)
    same_values(t, *mlx_reference(str(tmp_path), module))


def test_mlx_lm_config_that_leaves_a_quantized_module_out(tmp_path):
    mlx_model(str(tmp_path), "affine", 64, 4)
    config = json.load(open(tmp_path / "config.json"))
    config["quantization"]["model.layers.0.self_attn.q_proj"] = False
    json.dump(config, open(tmp_path / "config.json", "w"))
    with pytest.raises(hurray.HurrayError, match="'model.layers.0.self_attn.q_proj.weight'.*unquantized"):
        load_checkpoint(tmp_path)["model.layers.0.self_attn.q_proj.weight"]


def test_mlx_lm_config_with_the_wrong_bits(tmp_path):
    mlx_model(str(tmp_path), "affine", 64, 4, override=False)
    config = json.load(open(tmp_path / "config.json"))
    config["quantization"]["bits"] = 8
    json.dump(config, open(tmp_path / "config.json", "w"))
    with pytest.raises(hurray.HurrayError, match="'model.layers.0.self_attn.q_proj.weight'.*(scales.*shape|columns are not a multiple)"):
        load_checkpoint(tmp_path)["model.layers.0.self_attn.q_proj.weight"]


def test_inside_the_map_for_every_mlx_weight(tmp_path):
    mlx_model(str(tmp_path), "affine", 64, 4)
    ck = load_checkpoint(tmp_path)
    for name in ck:
        if ck.convention(name) == "mlx":
            one_weight(ck, name, ck[name].shape)
    np.asarray(ck["model.norm.weight"])
