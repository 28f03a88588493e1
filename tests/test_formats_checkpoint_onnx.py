"""ONNX models made with onnx's own helpers (numpy_helper.from_array, onnx.save,
external data) and run by onnx's ReferenceEvaluator: each DequantizeLinear
over initializers is one quantized Tensor inside the model's map (or its
external file's), dequantizing bit for bit as the reference does."""
import copy

import ml_dtypes
import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import hurray
from hurray.formats.checkpoint import load_checkpoint
from support.checkpoint_checks import same_values

RNG = np.random.default_rng(0)
CODES = {
    "int8": (np.int8, -128, 128), "uint8": (np.uint8, 0, 256), "int16": (np.int16, -3000, 3000),
    "uint16": (np.uint16, 0, 60000), "int32": (np.int32, -100000, 100000),
    "int4": (ml_dtypes.int4, -8, 8), "uint4": (ml_dtypes.uint4, 0, 16), "int2": (ml_dtypes.int2, -2, 2),
    "uint2": (ml_dtypes.uint2, 0, 4),
}
FLOATS = {"float8_e4m3fn": ml_dtypes.float8_e4m3fn, "float8_e5m2": ml_dtypes.float8_e5m2,
          "float4_e2m1fn": ml_dtypes.float4_e2m1fn, "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
          "float6_e3m2fn": ml_dtypes.float6_e3m2fn}
OUT = {"float32": (TP.FLOAT, np.uint32), "float16": (TP.FLOAT16, np.uint16), "bfloat16": (TP.BFLOAT16, np.uint16)}


def _values(kind, shape):
    if kind in CODES:
        dt, lo, hi = CODES[kind]
        return RNG.integers(lo, hi, shape).astype(dt)
    return (RNG.standard_normal(shape) * 2).astype(FLOATS[kind])


def _model(x, scale, zp, out, **attrs):
    inits = [numpy_helper.from_array(x, "w_q"), numpy_helper.from_array(scale, "w_scale")]
    inputs = ["w_q", "w_scale"]
    if zp is not None:
        inits.append(numpy_helper.from_array(zp, "w_zp"))
        inputs.append("w_zp")
    node = helper.make_node("DequantizeLinear", inputs, ["w"], output_dtype=OUT[out][0], **attrs)
    graph = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("w", OUT[out][0], list(x.shape))],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)])
    model.ir_version = onnx.IR_VERSION
    return model


def _check(tmp_path, model, out, external=False):
    reference = ReferenceEvaluator(model).run(None, {})[0]
    path = tmp_path / "model.onnx"
    if external:
        onnx.save_model(copy.deepcopy(model), path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="weights.bin", size_threshold=0)
    else:
        onnx.save(model, path)
    ck = load_checkpoint(path)
    t = ck["w"]
    assert t.descriptor.scheme == "graph" and t.shape == reference.shape
    assert sorted(ck) == ["w"]
    same_values(t, np.ascontiguousarray(reference).view(OUT[out][1]), out)
    return ck, t


@pytest.mark.parametrize("kind", [*CODES, *FLOATS])
def test_every_element_type_blocked_with_a_ragged_last_block(tmp_path, kind):
    x = _values(kind, (6, 10))
    scale = (RNG.random((6, 3)) * 0.1 + 0.01).astype(np.float16)
    zp = None if kind in FLOATS or kind == "int32" else _values(kind, (6, 3))
    ck, _ = _check(tmp_path, _model(x, scale, zp, "float16", axis=1, block_size=4), "float16")
    assert "blocks of 4 along axis 1" in ck.scheme("w")


@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("how", ["tensor", "axis0", "axis1"])
def test_per_tensor_and_per_axis(tmp_path, out, how):
    x = _values("int4", (7, 9))
    if how == "tensor":
        scale, zp, attrs = np.array(0.05, np.float32), np.array(3, ml_dtypes.int4), {}
    else:
        axis = int(how[-1])
        scale = (RNG.random(x.shape[axis]) * 0.1 + 0.01).astype(np.float32)
        zp, attrs = _values("int4", (x.shape[axis],)), {"axis": axis}
    _check(tmp_path, _model(x, scale, zp, out, **attrs), out)


def test_int32_with_an_int32_zero_point_computes_in_float64(tmp_path):
    x = _values("int32", (4, 8))
    scale = (RNG.random((4, 2)) * 1e-3).astype(np.float32)
    ck, _ = _check(tmp_path, _model(x, scale, _values("int32", (4, 2)), "float32", axis=1, block_size=4), "float32")


def test_external_data_is_read_where_it_lies(tmp_path):
    x = _values("uint4", (16, 32))
    scale = (RNG.random((16, 2)) * 0.1).astype(np.float32)
    ck, t = _check(tmp_path, _model(x, scale, _values("uint4", (16, 2)), "float32", axis=1, block_size=16),
                   "float32", external=True)
    external = np.frombuffer(ck._sources._external["weights.bin"], np.uint8)
    lo = external.__array_interface__["data"][0]
    assert all(lo <= a and a + n <= lo + external.size for a, n in t.buffers)


def test_raw_data_is_read_where_it_lies(tmp_path):
    x = _values("int8", (8, 8))
    ck, t = _check(tmp_path, _model(x, np.float32(0.5), None, "float32"), "float32")
    view = np.frombuffer(ck._sources._map, np.uint8)
    lo = view.__array_interface__["data"][0]
    assert all(lo <= a and a + n <= lo + view.size for a, n in t.buffers)


def test_dequantize_inputs_that_are_not_initializers_are_refused(tmp_path):
    x = helper.make_tensor_value_info("x_in", TP.INT8, [4, 4])
    node = helper.make_node("DequantizeLinear", ["x_in", "s"], ["w"])
    graph = helper.make_graph([node], "dq", [x], [helper.make_tensor_value_info("w", TP.FLOAT, [4, 4])],
                              initializer=[numpy_helper.from_array(np.float32(0.5), "s"),
                                           numpy_helper.from_array(np.ones(3, np.float32), "bias")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    onnx.save(model, tmp_path / "m.onnx")
    ck = load_checkpoint(tmp_path / "m.onnx")
    assert np.array_equal(np.asarray(ck["bias"]), np.ones(3, np.float32))
    with pytest.raises(hurray.HurrayError, match="'w'.*not initializers"):
        ck["w"]


def test_a_scale_that_contradicts_the_block_is_refused(tmp_path):
    model = _model(_values("int8", (4, 8)), np.ones((4, 3), np.float32), None, "float32", axis=1, block_size=4)
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(hurray.HurrayError, match="'w'.*blocked scale.*needs \\[4, 2\\]"):
        load_checkpoint(tmp_path / "m.onnx")["w"]


def test_an_e8m0_scale_without_output_dtype_is_refused(tmp_path):
    x = _values("float4_e2m1fn", (2, 32))
    inits = [numpy_helper.from_array(x, "q"),
             numpy_helper.from_array(np.array([[127], [128]], ml_dtypes.float8_e8m0fnu), "s")]
    node = helper.make_node("DequantizeLinear", ["q", "s"], ["w"], axis=1, block_size=32)
    graph = helper.make_graph([node], "dq", [], [helper.make_tensor_value_info("w", TP.FLOAT, [2, 32])],
                              initializer=inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 28)]), tmp_path / "m.onnx")
    with pytest.raises(hurray.HurrayError, match="'w'.*E8M0 scale without output_dtype"):
        load_checkpoint(tmp_path / "m.onnx")["w"]
