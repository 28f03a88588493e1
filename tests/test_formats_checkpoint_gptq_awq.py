"""GPTQ and AWQ checkpoints. AWQ: AutoAWQ's own WQLinear_GEMM / _GEMV packing on
CPU, against its own dequantize_gemm. GPTQ: no GPTQ library imports on CPU
(AutoGPTQ fails under transformers 5; GPTQModel compiles its own extension
and is not a test dependency), so the bytes are packed as QUANT-FORMATS § 2
gives them and the reference is § 2.4's fp16 formula in torch."""
import json

import numpy as np
import pytest

import hurray
from hurray.formats.checkpoint import load_checkpoint
from support.checkpoint_checks import one_weight, same_values, torch_bits
from support.checkpoint_makers import awq_write, gptq_write, pack_dense_lsb


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("act_order", [False, True])
@pytest.mark.parametrize("v1", [True, False])
def test_gptq(tmp_path, bits, act_order, v1):
    ref = gptq_write(str(tmp_path), "model.layers.0.mlp.up_proj", bits, 32, act_order, v1)
    ck = load_checkpoint(tmp_path)
    name = "model.layers.0.mlp.up_proj.weight"
    t = one_weight(ck, name, (64, 128))
    same_values(t, *torch_bits(ref))
    assert sorted(ck) == ["model.layers.0.mlp.up_proj.bias", name]
    words = ck.scheme(name)
    assert words == (f"int{bits} affine, groups of 32, {'act-order, ' if act_order else ''}fp16 scales "
                     f"(GPTQ {'v1' if v1 else 'v2'})")


def test_gptq_one_group_and_no_g_idx(tmp_path):
    ref = gptq_write(str(tmp_path), "proj", 4, -1, False, False, with_g_idx=False)
    same_values(load_checkpoint(tmp_path)["proj.weight"], *torch_bits(ref))


def _config(tmp_path, **changes):
    path = tmp_path / "config.json"
    config = json.load(open(path))
    config["quantization_config"].update(changes)
    json.dump(config, open(path, "w"))


@pytest.mark.parametrize("changes,match", [
    ({"bits": 3}, "rows of qweight"),
    ({"group_size": 64}, "g_idx is not i // 64"),
    ({"checkpoint_format": "gptq_p"}, "gptq_p"),
    ({"bits": 5}, "5-bit GPTQ"),
])
def test_gptq_config_that_contradicts_the_tensors(tmp_path, changes, match):
    gptq_write(str(tmp_path), "proj", 4, 32, False, True)
    _config(tmp_path, **changes)
    with pytest.raises(hurray.HurrayError, match=f"'proj.weight'.*{match}"):
        load_checkpoint(tmp_path)["proj.weight"]


def test_gptq_g_idx_out_of_range(tmp_path):
    from safetensors.numpy import load_file, save_file

    gptq_write(str(tmp_path), "proj", 4, 32, True, False)
    tensors = load_file(tmp_path / "model.safetensors")
    tensors["proj.g_idx"] = tensors["proj.g_idx"].copy()
    tensors["proj.g_idx"][7] = 4  # 128 inputs in groups of 32: groups 0 .. 3
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(hurray.HurrayError, match="'proj.weight'.*g_idx.*outside the 4 groups"):
        load_checkpoint(tmp_path)["proj.weight"]


def test_gptq_v1_zero_that_borrowed_is_refused(tmp_path):
    """A v1 zero of 0 is stored as -1 and borrows: GPTQ's own readers disagree on it."""
    from safetensors.numpy import load_file, save_file

    gptq_write(str(tmp_path), "proj", 4, 32, False, True)
    tensors = load_file(tmp_path / "model.safetensors")
    fields = np.full((4, 64), 7)
    fields[2, 5] = 15  # what 0 - 1 leaves in a 4-bit field
    tensors["proj.qzeros"] = pack_dense_lsb(fields, 4, 1)
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(hurray.HurrayError, match="'proj.weight'.*group 2, output 5.*ambiguous"):
        load_checkpoint(tmp_path)["proj.weight"]


def test_gptq_missing_companion(tmp_path):
    from safetensors.numpy import load_file, save_file

    gptq_write(str(tmp_path), "proj", 4, 32, False, True)
    tensors = load_file(tmp_path / "model.safetensors")
    del tensors["proj.scales"]
    save_file(tensors, tmp_path / "model.safetensors")
    with pytest.raises(hurray.HurrayError, match="'proj.weight'.*'proj.scales' is missing"):
        load_checkpoint(tmp_path)["proj.weight"]


@pytest.mark.parametrize("group_size", [32, 64, 128])
@pytest.mark.parametrize("version", ["gemm", "gemv"])
def test_awq(tmp_path, version, group_size):
    ref = awq_write(str(tmp_path), "layer", version, group_size)
    ck = load_checkpoint(tmp_path)
    t = one_weight(ck, "layer.weight", (64, 256))
    same_values(t, *torch_bits(ref))
    assert ck.scheme("layer.weight") == f"int4 affine, groups of {group_size}, fp16 scales (AWQ {version.upper()})"


def test_awq_gemv_fast_is_refused_by_name(tmp_path):
    awq_write(str(tmp_path), "layer", "gemm", 64)
    _config(tmp_path, version="gemv_fast")
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*gemv_fast.*tile layout"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_awq_wrong_group_size(tmp_path):
    awq_write(str(tmp_path), "layer", "gemm", 64)
    _config(tmp_path, group_size=32)
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*scales.*shape"):
        load_checkpoint(tmp_path)["layer.weight"]
