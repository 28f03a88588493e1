"""Hypothesis mutates valid checkpoints (an ONNX model, a compressed-tensors
directory's config and shard, a bitsandbytes quant_state, a GPTQ config) and
raw protobuf bytes: load_checkpoint answers with a mapping or a HurrayError,
every weight it hands out is a HurrayError or a Tensor whose every buffer
can be read and which the C dequantizer dequantizes or refuses; never a
crash, a hang or another exception. Each example runs in this process, so a
read outside a map would end the run. HURRAY_FUZZ_EXAMPLES raises the count.
"""
import json
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from hurray import HurrayError
from hurray.formats.checkpoint import load_checkpoint
from hurray.formats.checkpoint._graph import dequantize
from hurray.formats.checkpoint.onnx_wire import parse_model

EXAMPLES = int(os.environ.get("HURRAY_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def mutated(draw, seed: bytes):
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif how == "set" and data:
            width = draw(st.sampled_from([1, 2, 4, 8]))
            value = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0x7FFFFFFF, 0xFFFFFFFF, (1 << 64) - 1]))
            data[at:at + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        else:
            del data[at:at + draw(st.integers(1, 16))]
    return bytes(data)


def _touch(mapping):
    for name in mapping:
        try:
            t = mapping[name]
        except HurrayError:
            continue
        for i in range(len(t.buffers)):
            t.buffer(i).tobytes()
        if t.descriptor.scheme == "graph":
            try:
                dequantize(t)
            except HurrayError:
                pass
        try:
            mapping.scheme(name)
        except HurrayError:
            pass


def _onnx_seed() -> bytes:
    x = (np.arange(60).reshape(6, 10) % 16 - 8).astype(ml_dtypes.int4)
    inits = [numpy_helper.from_array(x, "q"), numpy_helper.from_array(np.full((6, 3), 0.5, np.float16), "s"),
             numpy_helper.from_array(np.zeros((6, 3), ml_dtypes.int4), "z"),
             numpy_helper.from_array(np.arange(4, dtype=np.float32), "plain")]
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["w"], axis=1, block_size=4,
                              output_dtype=TP.FLOAT16)]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("w", TP.FLOAT16, [6, 10])],
                              initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)]).SerializeToString()


def _check_onnx(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "m.onnx"
    path.write_bytes(data)
    try:
        ck = load_checkpoint(path)
    except HurrayError:
        return
    with ck:
        _touch(ck)


def test_the_seeds_load(tmp_path_factory, ct_seed):
    path = tmp_path_factory.mktemp("seed") / "m.onnx"
    path.write_bytes(_onnx_seed())
    assert sorted(load_checkpoint(path)) == ["plain", "w"]
    directory = _write_dir(tmp_path_factory, ct_seed, {})
    assert "layer.weight" in load_checkpoint(directory)


@FUZZ
@given(data=mutated(_onnx_seed()))
def test_onnx_models_never_crash_the_reader(tmp_path_factory, data):
    _check_onnx(tmp_path_factory, data)


@FUZZ
@given(data=st.binary(max_size=512))
def test_any_bytes_are_a_model_or_a_corrupt_error(data):
    try:
        parse_model(data)
    except HurrayError:
        pass


@pytest.fixture(scope="module")
def ct_seed(tmp_path_factory):
    """The files of a compressed-tensors checkpoint and a bitsandbytes one, written by their libraries."""
    import torch
    from compressed_tensors.quantization import QuantizationArgs

    from support.checkpoint_makers import bnb_state, ct_linear, ct_write, save_torch

    d = tmp_path_factory.mktemp("ct")
    args = QuantizationArgs(num_bits=3, type="int", symmetric=False, strategy="group", group_size=32)
    stored, _, scheme, fmt = ct_linear(16, 64, args, torch.bfloat16)
    ct_write(str(d), {"layer": stored}, scheme, fmt)
    b = tmp_path_factory.mktemp("bnb")
    sd, _ = bnb_state(16, 64, "nf4", True, 64, torch.bfloat16)
    save_torch(str(b), {f"m.{k}": v for k, v in sd.items()})
    return {"config.json": (d / "config.json").read_bytes(), "model.safetensors": (d / "model.safetensors").read_bytes(),
            "bnb.safetensors": (b / "model.safetensors").read_bytes()}


def _write_dir(tmp_path_factory, seed, replaced):
    d = tmp_path_factory.mktemp("fuzz")
    for name in ("config.json", "model.safetensors"):
        (d / name).write_bytes(replaced.get(name, seed[name]))
    return d


@FUZZ
@given(data=st.data())
def test_mutated_configs_and_shards_never_crash_the_reader(tmp_path_factory, ct_seed, data):
    which = data.draw(st.sampled_from(["config.json", "model.safetensors"]))
    directory = _write_dir(tmp_path_factory, ct_seed, {which: data.draw(mutated(ct_seed[which]))})
    try:
        ck = load_checkpoint(directory)
    except HurrayError:
        return
    with ck:
        _touch(ck)


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.floats(allow_nan=True),
                    st.text(max_size=6), st.lists(st.integers(-1, 130), max_size=3))


@FUZZ
@given(data=st.data())
def test_config_fields_of_any_type_never_crash_the_reader(tmp_path_factory, ct_seed, data):
    config = json.loads(ct_seed["config.json"])
    weights = config["quantization_config"]["config_groups"]["group_0"]["weights"]
    for key in data.draw(st.lists(st.sampled_from(["num_bits", "group_size", "strategy", "symmetric", "type",
                                                   "block_structure", "dynamic"]), min_size=1, max_size=3)):
        weights[key] = data.draw(_VALUES)
    if data.draw(st.booleans()):
        config["quantization_config"][data.draw(st.sampled_from(["version", "format", "quantization_status"]))] = \
            data.draw(_VALUES)
    directory = _write_dir(tmp_path_factory, ct_seed, {"config.json": json.dumps(config).encode()})
    try:
        ck = load_checkpoint(directory)
    except HurrayError:
        return
    with ck:
        _touch(ck)


@FUZZ
@given(data=st.data())
def test_gptq_awq_fp8_mlx_configs_of_any_type_never_crash_the_reader(tmp_path_factory, ct_seed, data):
    method = data.draw(st.sampled_from(["gptq", "awq", "fp8", None]))
    fields = {"gptq": ["bits", "group_size", "desc_act", "checkpoint_format", "pack_dtype"],
              "awq": ["bits", "group_size", "version", "zero_point"], "fp8": ["weight_block_size", "fmt", "scale_fmt"],
              None: ["group_size", "bits", "mode", "layer"]}[method]
    quant = {k: data.draw(_VALUES) for k in data.draw(st.lists(st.sampled_from(fields), max_size=4))}
    config = {"quantization": quant} if method is None else {"quantization_config": {"quant_method": method, **quant}}
    # a shard whose names fit every convention: qweight/qzeros/scales/g_idx, weight_scale_inv, scales/biases
    from safetensors.numpy import save_file

    d = tmp_path_factory.mktemp("fuzz")
    shapes = data.draw(st.lists(st.integers(0, 9), min_size=6, max_size=6))
    save_file({"a.qweight": np.zeros((shapes[0], shapes[1]), np.int32), "a.qzeros": np.zeros((1, shapes[2]), np.int32),
               "a.scales": np.zeros((shapes[3], shapes[1]), np.float16), "a.g_idx": np.zeros(shapes[4], np.int32),
               "a.weight": np.zeros((shapes[5], 4), np.uint32), "a.biases": np.zeros((shapes[5], 1), np.float16),
               "b.weight": np.zeros((2, 2), np.uint8), "b.weight_scale_inv": np.ones((1, 1), np.float32)},
              d / "model.safetensors")
    (d / "config.json").write_text(json.dumps(config))
    try:
        ck = load_checkpoint(d)
    except HurrayError:
        return
    with ck:
        _touch(ck)


@FUZZ
@given(data=st.data())
def test_mutated_bitsandbytes_quant_states_never_crash_the_reader(tmp_path_factory, ct_seed, data):
    d = tmp_path_factory.mktemp("fuzz")
    (d / "model.safetensors").write_bytes(data.draw(mutated(ct_seed["bnb.safetensors"])))
    try:
        ck = load_checkpoint(d / "model.safetensors")
    except HurrayError:
        return
    with ck:
        _touch(ck)
