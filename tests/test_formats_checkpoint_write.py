"""save_checkpoint: what load_checkpoint read, written back in a convention, loads in
that library to the same values (compressed-tensors' own decompress, mlx-lm's
load_model + mx.dequantize, bitsandbytes' from_prequantized, AutoAWQ's
dequantize_gemm), byte for byte the same stored tensors; what a convention
cannot state is refused by name and nothing is written."""
import json
import os

import numpy as np
import pytest
import torch
from compressed_tensors.quantization import QuantizationArgs
from compressed_tensors.quantization.quant_scheme import preset_name_to_scheme
from safetensors import safe_open

import hurray
from hurray.formats.checkpoint import load_checkpoint, save_checkpoint
from support.checkpoint_checks import same_values, torch_bits
from support.checkpoint_makers import (awq_write, bnb_state, ct_decompress_file, ct_linear, ct_write, fp8_block,
                                       gptq_write, mlx_model, mlx_reference, save_torch)


def _stored(directory):
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".safetensors"):
            with safe_open(os.path.join(directory, name), "pt") as f:
                out.update({k: f.get_tensor(k) for k in f.keys()})
    return out


def _same_stored(a, b):
    """The same stored tensors: names, dtypes, shapes and bytes."""
    sa, sb = _stored(a), _stored(b)
    assert sorted(sa) == sorted(sb)
    for k in sa:
        assert sa[k].dtype == sb[k].dtype and sa[k].shape == sb[k].shape, k
        assert torch.equal(sa[k].reshape(-1).view(torch.uint8), sb[k].reshape(-1).view(torch.uint8)), k


@pytest.mark.parametrize("case", ["int4-group-asym", "int3-channel", "int8-tensor-asym", "naive", "fp8-block",
                                  "nvfp4", "mxfp4", "mxfp6", "mxfp8"])
def test_compressed_tensors_reads_back_what_save_checkpoint_writes(tmp_path, case):
    args, fmt = {
        "int4-group-asym": (QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group",
                                             group_size=32), None),
        "int3-channel": (QuantizationArgs(num_bits=3, type="int", symmetric=True, strategy="channel"), None),
        "int8-tensor-asym": (QuantizationArgs(num_bits=8, type="int", symmetric=False, strategy="tensor"), None),
        "naive": (QuantizationArgs(num_bits=8, type="int", symmetric=False, strategy="channel"), "naive-quantized"),
        "fp8-block": (QuantizationArgs(num_bits=8, type="float", strategy="block", block_structure=[128, 128]),
                      "float-quantized"),
        "nvfp4": (preset_name_to_scheme("NVFP4A16", ["Linear"]).weights, "nvfp4-pack-quantized"),
        "mxfp4": (QuantizationArgs(num_bits=4, type="float", strategy="group", group_size=32,
                                   scale_dtype=torch.uint8), "mxfp4-pack-quantized"),
        "mxfp6": (QuantizationArgs(num_bits=6, type="float", strategy="group", group_size=32,
                                   scale_dtype=torch.uint8), "mxfp6-pack-quantized"),
        "mxfp8": (QuantizationArgs(num_bits=8, type="float", strategy="group", group_size=32,
                                   scale_dtype=torch.uint8), "mxfp8-quantized"),
    }[case]
    O, I = (200, 300) if case == "fp8-block" else (16, 96)
    stored, reference, scheme, fmt = ct_linear(O, I, args, torch.bfloat16, fmt)
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    ct_write(str(src), {"layer": stored}, scheme, fmt)
    with load_checkpoint(src) as ck:
        save_checkpoint(ck, out, "compressed-tensors", config=ck.config)
    written = json.load(open(out / "config.json"))["quantization_config"]
    assert written["config_groups"]["group_0"]["targets"] == ["layer"]
    same_values(load_checkpoint(out)["layer.weight"], *torch_bits(reference))
    decompressed = ct_decompress_file(str(out), "layer")  # compressed-tensors' own reading of what we wrote
    assert torch.equal(decompressed.view(torch.int16), reference.view(torch.int16))


@pytest.mark.parametrize("mode,gs,bits", [("affine", 64, 4), ("affine", 32, 3), ("mxfp4", None, None),
                                          ("nvfp4", None, None), ("mxfp8", None, None)])
def test_mlx_lm_reads_back_what_save_checkpoint_writes(tmp_path, mode, gs, bits):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    mlx_model(str(src), mode, gs, bits)
    with load_checkpoint(src) as ck:
        save_checkpoint(ck, out, "mlx", config=ck.config)
    assert os.path.exists(out / "model.safetensors.index.json")
    for module in ("model.layers.0.mlp.down_proj", "model.layers.0.self_attn.q_proj"):
        ref = mlx_reference(str(src), module)
        back = mlx_reference(str(out), module)  # mlx-lm's load_model of what save_checkpoint wrote
        assert back[1] == ref[1] and np.array_equal(back[0], ref[0])
    _same_stored(src, out)


def test_compressed_tensors_mxfp4_written_as_mlx_is_the_same_bytes(tmp_path):
    """MX FP4 has one graph in both conventions: the same codes and E8M0 scales, bf16 arithmetic."""
    args = QuantizationArgs(num_bits=4, type="float", strategy="group", group_size=32, scale_dtype=torch.uint8)
    stored, reference, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16, "mxfp4-pack-quantized")
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    ct_write(str(src), {"layer": stored}, scheme, fmt)
    save_checkpoint(load_checkpoint(src), out, "mlx")
    import mlx.core as mx

    arrays = mx.load(str(out / "model.safetensors"))
    mine = mx.dequantize(arrays["layer.weight"], arrays["layer.scales"], mode="mxfp4")
    assert np.array_equal(np.array(mine.view(mx.uint16)), torch_bits(reference)[0])


@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("quant_type", ["nf4", "fp4"])
def test_bitsandbytes_reads_back_what_save_checkpoint_writes(tmp_path, quant_type, nested):
    import bitsandbytes as bnb
    import bitsandbytes.functional as F
    from safetensors.torch import load_file

    sd, ref = bnb_state(32, 128, quant_type, nested, 64, torch.bfloat16)
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    save_torch(str(src), {f"layer.{k}": v for k, v in sd.items()})
    save_checkpoint(load_checkpoint(src), out, "bitsandbytes")
    back = {k[len("layer."):]: v for k, v in load_file(out / "model.safetensors").items()}
    p = bnb.nn.Params4bit.from_prequantized(back["weight"], {k[7:]: v for k, v in back.items() if k != "weight"},
                                            device="cpu")
    assert torch.equal(F.dequantize_4bit(p.data, p.quant_state).view(torch.int16), ref.view(torch.int16))
    assert json.load(open(out / "config.json"))["quantization_config"]["bnb_4bit_quant_type"] == quant_type


@pytest.mark.parametrize("act_order", [False, True])
def test_gptq_writes_its_own_tensors_back(tmp_path, act_order):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    ref = gptq_write(str(src), "proj", 4, 32, act_order, True)
    save_checkpoint(load_checkpoint(src), out, "gptq")
    _same_stored(src, out)
    same_values(load_checkpoint(out)["proj.weight"], *torch_bits(ref))


@pytest.mark.parametrize("version", ["gemm", "gemv"])
def test_awq_writes_its_own_tensors_back(tmp_path, version):
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    awq_write(str(src), "layer", version, 64)
    save_checkpoint(load_checkpoint(src), out, "awq")
    _same_stored(src, out)
    if version == "gemm":
        from awq.utils.packing_utils import dequantize_gemm
        from safetensors.torch import load_file

        t = load_file(out / "model.safetensors")
        back = dequantize_gemm(t["layer.qweight"], t["layer.qzeros"], t["layer.scales"], 4, 64).T.contiguous()
        same_values(load_checkpoint(src)["layer.weight"], *torch_bits(back))


def test_fp8_writes_its_own_tensors_back(tmp_path):
    q, s, ref = fp8_block(200, 300)
    src, out = tmp_path / "src", tmp_path / "out"
    src.mkdir()
    save_torch(str(src), {"mlp.weight": q, "mlp.weight_scale_inv": s},
               {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128],
                                        "activation_scheme": "dynamic"}})
    save_checkpoint(load_checkpoint(src), out, "fp8")
    _same_stored(src, out)


def test_what_a_convention_cannot_state_is_refused_by_name(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    gptq_write(str(src), "proj", 4, 32, True, True)
    ck = load_checkpoint(src)
    for fmt in ("mlx", "compressed-tensors", "awq", "bitsandbytes", "fp8"):
        with pytest.raises(hurray.HurrayError, match="'proj.weight'.*cannot state it"):
            save_checkpoint(ck, tmp_path / fmt, fmt)
        assert not os.path.exists(tmp_path / fmt / "model.safetensors")
    affine = hurray.quantize_affine(np.ones((4, 32), np.float32), dtype="int8", axis=0)
    with pytest.raises(hurray.HurrayError, match="'w'.*cannot state it"):
        save_checkpoint({"w": affine}, tmp_path / "x", "gptq")
    with pytest.raises(hurray.HurrayError, match="format 'nope'"):
        save_checkpoint({}, tmp_path / "y", "nope")
