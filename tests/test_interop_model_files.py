"""Every (route, type) pair of tests/peers/model_files.py, as docs/interop.md lists them.

Each route writes a file with one tensor of the type, made by gguf-py (its
quantizer where it has one, else random blocks with finite scales), and
reads it back; the real values must equal gguf-py's dequantization bit for
bit, and where the route passes through Hurray's writers, the descriptor
and bytes must come back unchanged.
"""
import json

import gguf
import numpy as np
import pytest
import safetensors.numpy
from gguf import GGMLQuantizationType
from safetensors import safe_open

import hurray
from peers.model_files import ROUTE_IDS, TYPES
from support.tensor_kinds import GGML_NAMES, ggml_blocks, same_bits, weights


def made_by_gguf_py(type_name):
    """(array as GGUFWriter takes it, numpy-order shape, gguf-py's real values)."""
    if type_name in ("F32", "F16"):
        array = weights(type_name, (2, 64)).astype(np.float32 if type_name == "F32" else np.float16)
        return array, array.shape, array.astype(np.float32)
    if type_name == "BF16":
        array = gguf.quants.quantize(weights(type_name, (2, 64)), GGMLQuantizationType.BF16)
        shape = (2, 64)
    else:
        array, shape = ggml_blocks(type_name)
    with np.errstate(over="ignore"):
        real = gguf.quants.dequantize(array, GGMLQuantizationType[type_name]).reshape(shape)
    return array, shape, real


def gguf_file(tmp_path, type_name):
    array, shape, real = made_by_gguf_py(type_name)
    path = tmp_path / "one.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    raw = None if type_name in ("F32", "F16") else GGMLQuantizationType[type_name]
    writer.add_tensor("t", array, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path, array, shape, real


def descriptor_for(type_name, shape):
    if type_name in GGML_NAMES:
        return hurray.Descriptor.build("uint8", shape, scheme="ggml", ggml_type=type_name.lower())
    return hurray.Descriptor.build({"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[type_name], shape)


def same_tensor(a, b):
    return a.descriptor == b.descriptor and a.buffer(0).tobytes() == b.buffer(0).tobytes()


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("route", ROUTE_IDS)
def test_route(tmp_path, route, type_name):
    path, array, shape, real = gguf_file(tmp_path, type_name)
    original = hurray.load_gguf(path)["t"]
    assert original.descriptor == descriptor_for(type_name, shape)
    if route == "gguf-writer":
        ref = gguf.GGUFReader(str(path)).tensors[0]
        assert original.buffer(0).tobytes() == np.asarray(ref.data).tobytes()
        tensor = original
    elif route == "safetensors-writer":
        st_path = tmp_path / "one.safetensors"
        if type_name in ("F32", "F16"):
            safetensors.numpy.save_file({"t": array}, str(st_path))
        else:
            record = {"format": 1, "tensors": {"t": {"descriptor": descriptor_for(type_name, shape).encode().hex(),
                                                     "buffers": ["t"]}}}
            safetensors.numpy.save_file({"t": np.ascontiguousarray(array).view(np.uint8)}, str(st_path),
                                        metadata={"hurray": json.dumps(record)})
        tensor = hurray.load_safetensors(st_path)["t"]
        assert same_tensor(tensor, original)
    elif route == "gguf-to-safetensors":
        st_path = tmp_path / "one.safetensors"
        hurray.save_safetensors(st_path, {"t": original})
        with safe_open(str(st_path), "np") as plain:
            assert plain.keys() == ["t"]
        tensor = hurray.load_safetensors(st_path)["t"]
        assert same_tensor(tensor, original)
    elif route == "gguf-to-hurray":
        hurray.save(tmp_path / "one.hurray", {"t": original})
        tensor = hurray.load(tmp_path / "one.hurray")["t"]
        assert same_tensor(tensor, original)
    else:
        hurray.save_gguf(tmp_path / "out.gguf", {"t": original})
        ref = gguf.GGUFReader(str(tmp_path / "out.gguf")).tensors[0]
        assert tuple(reversed(ref.shape.tolist())) == shape
        assert np.asarray(ref.data).tobytes() == original.buffer(0).tobytes()
        tensor = hurray.load_gguf(tmp_path / "out.gguf")["t"]
        assert same_tensor(tensor, original)
    assert same_bits(tensor.dequantize(), real)
