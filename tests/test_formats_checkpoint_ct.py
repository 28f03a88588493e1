"""compressed-tensors checkpoints: written by compressed-tensors' own compressors
(and a tiny Llama saved by transformers), read by load_checkpoint as one
quantized Tensor per weight inside the file's map, dequantized bit for bit
as compressed-tensors decompresses them; every format and strategy of
QUANT-FORMATS § 1, the packing keyed on the version, and the refusals."""
import json
import os

import numpy as np
import pytest
import torch
from compressed_tensors.compressors.pack_quantized.helpers import unpack_from_int32
from compressed_tensors.quantization import QuantizationArgs
from compressed_tensors.quantization.quant_scheme import preset_name_to_scheme

import hurray
from hurray.formats.checkpoint import load_checkpoint
from support.checkpoint_checks import one_weight, same_values, torch_bits
from support.checkpoint_makers import ct_decompress_file, ct_linear, ct_llama, ct_write

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def _roundtrip(tmp_path, O, I, args, dtype, fmt=None, version=None):
    stored, reference, scheme, fmt = ct_linear(O, I, args, dtype, fmt)
    ct_write(str(tmp_path), {"layer": stored}, scheme, fmt, version)
    ck = load_checkpoint(tmp_path)
    t = one_weight(ck, "layer.weight", (O, I))
    bits, name = torch_bits(reference)
    same_values(t, bits, name)
    return ck, stored


@pytest.mark.parametrize("bits", range(1, 9))
@pytest.mark.parametrize("strategy", ["group", "channel", "tensor"])
@pytest.mark.parametrize("symmetric", [True, False])
def test_pack_quantized_every_width_and_strategy(tmp_path, bits, strategy, symmetric):
    gs = {"group": 32, "channel": -1, "tensor": None}[strategy]
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=symmetric, strategy=strategy, group_size=gs)
    ck, stored = _roundtrip(tmp_path, 13, 96, args, torch.bfloat16)
    assert sorted(ck) == ["layer.weight"]
    words = ck.scheme("layer.weight")
    assert words.startswith(f"int{bits} {'symmetric' if symmetric else 'affine'}") and "0.20.1" in words


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_pack_quantized_in_every_scale_dtype(tmp_path, dtype):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group", group_size=16)
    _roundtrip(tmp_path, 12, 48, args, DTYPES[dtype])


def test_rows_that_do_not_fill_their_last_word(tmp_path):
    args = QuantizationArgs(num_bits=3, type="int", symmetric=True, strategy="channel")
    _roundtrip(tmp_path, 5, 45, args, torch.float16)


@pytest.mark.parametrize("bits", [3, 5, 6, 7])
def test_version_0_17_packs_floor_per_word(tmp_path, bits):
    """≤ 0.17 put floor(32/b) codes in a word (QUANT-FORMATS § 1.3): the same codes repacked that way, under
    version 0.17.1, dequantize to compressed-tensors' values; under 0.20.1 the same bytes would not."""
    args = QuantizationArgs(num_bits=bits, type="int", symmetric=False, strategy="group", group_size=32)
    stored, reference, scheme, fmt = ct_linear(12, 64, args, torch.bfloat16)
    per = 32 // bits

    def repack(packed, rows, cols):
        codes = unpack_from_int32(packed, bits, torch.Size([rows, cols])).numpy().astype(np.int64) + (1 << (bits - 1))
        words = np.zeros((rows, -(-cols // per)), np.uint32)
        for k in range(cols):
            words[:, k // per] |= (codes[:, k].astype(np.uint32) << np.uint32((k % per) * bits))
        return torch.from_numpy(words.view(np.int32))

    old = dict(stored)
    old["weight_packed"] = repack(stored["weight_packed"], 12, 64)
    zp = unpack_from_int32(stored["weight_zero_point"].T, bits, torch.Size([2, 12])).T  # [12, 2] signed zeros
    old["weight_zero_point"] = _repack_zp(zp, bits)
    ct_write(str(tmp_path), {"layer": old}, scheme, fmt, version="0.17.1")
    ck = load_checkpoint(tmp_path)
    same_values(one_weight(ck, "layer.weight", (12, 64)), *torch_bits(reference))
    assert "pack-quantized 0.17.1" in ck.scheme("layer.weight")


def _repack_zp(zp, bits):
    """Signed zeros [O, G] packed floor(32/b) a word down the output axis, as ≤ 0.17 packs them."""
    per = 32 // bits
    codes = zp.numpy().astype(np.int64) + (1 << (bits - 1))
    O, G = codes.shape
    words = np.zeros((-(-O // per), G), np.uint32)
    for o in range(O):
        words[o // per] |= codes[o].astype(np.uint32) << np.uint32((o % per) * bits)
    return torch.from_numpy(words.view(np.int32))


@pytest.mark.parametrize("version", [None, "unknown", "0.21.0"])
def test_a_version_that_does_not_fix_the_packing_is_refused(tmp_path, version):
    args = QuantizationArgs(num_bits=3, type="int", symmetric=True, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16)
    config = ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    if version is None:
        del config["quantization_config"]["version"]
    else:
        config["quantization_config"]["version"] = version
    json.dump(config, open(tmp_path / "config.json", "w"))
    ck = load_checkpoint(tmp_path)
    with pytest.raises(hurray.HurrayError, match="layer.weight.*(version|newer)"):
        ck["layer.weight"]


def test_four_bits_pack_alike_in_every_version(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=32)
    stored, reference, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16)
    config = ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    del config["quantization_config"]["version"]
    json.dump(config, open(tmp_path / "config.json", "w"))
    same_values(load_checkpoint(tmp_path)["layer.weight"], *torch_bits(reference))


@pytest.mark.parametrize("strategy", ["tensor", "channel", "group"])
def test_naive_int8(tmp_path, strategy):
    gs = {"group": 32, "channel": -1, "tensor": None}[strategy]
    args = QuantizationArgs(num_bits=8, type="int", symmetric=False, strategy=strategy, group_size=gs)
    _roundtrip(tmp_path, 16, 64, args, torch.float16, fmt="naive-quantized")


@pytest.mark.parametrize("strategy,shape", [("tensor", (16, 64)), ("channel", (16, 64)), ("group", (16, 64)),
                                            ("block", (200, 300)), ("block", (130, 129))])
def test_float_quantized_fp8(tmp_path, strategy, shape):
    kw = {"group": {"group_size": 32}, "block": {"block_structure": [128, 128]}}.get(strategy, {})
    args = QuantizationArgs(num_bits=8, type="float", symmetric=True, strategy=strategy, **kw)
    ck, _ = _roundtrip(tmp_path, *shape, args, torch.bfloat16, fmt="float-quantized")
    assert ck.scheme("layer.weight").startswith("fp8 e4m3 symmetric")


def test_nvfp4(tmp_path):
    scheme = preset_name_to_scheme("NVFP4A16", ["Linear"])
    ck, _ = _roundtrip(tmp_path, 6, 64, scheme.weights, torch.bfloat16, fmt="nvfp4-pack-quantized")
    assert "global scale" in ck.scheme("layer.weight")


@pytest.mark.parametrize("bits,fmt", [(4, "mxfp4-pack-quantized"), (6, "mxfp6-pack-quantized"),
                                      (8, "mxfp8-quantized")])
def test_mx_formats(tmp_path, bits, fmt):
    args = QuantizationArgs(num_bits=bits, type="float", strategy="group", group_size=32, scale_dtype=torch.uint8)
    _roundtrip(tmp_path, 5, 96, args, torch.bfloat16, fmt=fmt)


def test_a_tiny_llama_saved_by_transformers_in_shards(tmp_path):
    """The whole save path: apply_quantization_config, ModelCompressor, save_pretrained with shards."""
    groups = {"group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "symmetric": False,
                                                             "strategy": "group", "group_size": 32}}}
    ct_llama(str(tmp_path), groups, max_shard_size="8KB")
    assert os.path.exists(tmp_path / "model.safetensors.index.json")
    ck = load_checkpoint(tmp_path)
    module = "model.layers.0.mlp.down_proj"
    t = one_weight(ck, module + ".weight", (64, 128))
    same_values(t, *torch_bits(ct_decompress_file(str(tmp_path), module)))
    assert ck.convention("lm_head.weight") == "plain" and ck.convention(module + ".weight") == CONVENTION
    assert np.array_equal(np.asarray(ck["model.norm.weight"]).view(np.uint16),
                          np.asarray(hurray.load_safetensors(_shard_of(tmp_path, "model.norm.weight"))
                                     ["model.norm.weight"]).view(np.uint16))


CONVENTION = "compressed-tensors"


def _shard_of(directory, name):
    index = json.load(open(directory / "model.safetensors.index.json"))
    return directory / index["weight_map"][name]


def test_a_contradicting_config_names_the_tensor(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16)
    config = ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    for key, value, match in (("num_bits", 8, "words a row"), ("group_size", 16, "weight_scale.*shape")):
        bad = json.loads(json.dumps(config))
        bad["quantization_config"]["config_groups"]["group_0"]["weights"][key] = value
        json.dump(bad, open(tmp_path / "config.json", "w"))
        with pytest.raises(hurray.HurrayError, match=f"'layer.weight'.*{match}"):
            load_checkpoint(tmp_path)["layer.weight"]


def test_weight_shape_that_contradicts_the_packing(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16)
    stored["weight_shape"] = torch.tensor([8, 96])
    ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*words a row"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_a_missing_companion_names_the_tensor(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(16, 64, args, torch.bfloat16)
    del stored["weight_zero_point"]
    ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*weight_zero_point.*missing"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_two_groups_that_may_both_apply_are_ambiguous(tmp_path):
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(8, 64, args, torch.bfloat16)
    config = ct_write(str(tmp_path), {"layer": stored}, scheme, fmt)
    groups = config["quantization_config"]["config_groups"]
    groups["group_1"] = json.loads(json.dumps(groups["group_0"]))
    groups["group_1"]["weights"]["group_size"] = 64
    json.dump(config, open(tmp_path / "config.json", "w"))
    with pytest.raises(hurray.HurrayError, match="'layer.weight'.*ambiguous"):
        load_checkpoint(tmp_path)["layer.weight"]


def test_rows_of_a_weight_dequantize_as_the_whole_does(tmp_path):
    """_graph.dequantize with rows (the C call made in hurray._core, no cffi objects): every range's
    values are the whole dequantization's rows, in each output dtype, and what the library refuses
    is refused with its own message, also once the descriptor is closed."""
    from hurray.formats.checkpoint._graph import dequantize

    args = QuantizationArgs(num_bits=4, type="int", symmetric=False, strategy="group", group_size=16)
    _roundtrip(tmp_path, 12, 48, args, torch.bfloat16)
    with load_checkpoint(tmp_path) as ck:
        t = ck["layer.weight"]
        for dtype in ("float32", "float16", "bfloat16"):
            whole = dequantize(t, dtype)
            for first, count in ((0, 1), (0, 12), (5, 3), (11, 1), (4, 0)):
                part = dequantize(t, dtype, rows=(first, count))
                assert part.dtype == whole.dtype and part.shape == (count, 48)
                assert part.tobytes() == whole[first:first + count].tobytes()
        with pytest.raises(hurray.HurrayError, match="hurray_dequantize_rows"):
            dequantize(t, "float32", rows=(11, 2))  # past the last row: C's refusal, word for word
        t.descriptor.close()
        with pytest.raises(hurray.HurrayError, match="closed"):
            dequantize(t, "float32", rows=(0, 1))
