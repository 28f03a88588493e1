"""Read-only memory across the native protocol (C ABI 5, ADR-059).

A tensor read from a model file is read-only; it crosses ``__hurray__``
without a copy to any consumer that reads C ABI 5, its buffers marked, and
becomes a read-only Tensor whose numpy view is not writable. A consumer that
names no ``max_version`` reads C ABI 4, which cannot say "read-only": it gets
a version-4 context for writable memory and a clear refusal for read-only
memory, never read-only memory it would take for writable. The layer-7 C
consumer of the cookbook (tests/support/layer7.py) reads the same capsules.
"""
import struct

import gguf
import numpy as np
import pytest
import safetensors.numpy

import hurray
from hurray import _protocol
from hurray.errors import AbiVersionError, InvalidArgumentError, UnsupportedError
from support import layer7

MAGIC = 0x48525443


def context_version(capsule):
    import ctypes

    _, context = layer7.handles(capsule)
    magic, version = struct.unpack("=II", ctypes.string_at(context, 8))
    assert magic == MAGIC
    return version


@pytest.fixture
def safetensors_tensor(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.numpy.save_file({"w": np.arange(12, dtype=np.float32).reshape(3, 4)}, str(path))
    return hurray.load_safetensors(path)["w"]


@pytest.fixture
def gguf_tensor(tmp_path):
    path = tmp_path / "q.gguf"
    x = np.random.default_rng(0).standard_normal((2, 64)).astype(np.float32)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("q", gguf.quants.quantize(x, gguf.GGMLQuantizationType.Q8_0),
                      raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return hurray.load_gguf(path)["q"]


@pytest.mark.parametrize("fixture", ["safetensors_tensor", "gguf_tensor"])
def test_a_file_tensor_crosses_read_only_and_without_a_copy(fixture, request):
    t = request.getfixturevalue(fixture)
    assert t.readonly
    capsule = t.__hurray__(max_version=5)
    assert context_version(capsule) == 5
    assert layer7.buffer_addresses(capsule) == list(t.buffers)   # the file's own mapping: no copy
    status, text = layer7.describe(capsule)
    assert status == 0, text
    assert text.count(", read-only\n") == len(t.buffers), text
    u = hurray.from_hurray(capsule)
    assert u.readonly and u.buffers == t.buffers and u.descriptor == t.descriptor
    view = np.asarray(u) if u.descriptor.scheme == "none" else u.buffer(0)
    assert not view.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        view[...] = 0
    np.testing.assert_array_equal(u.dequantize(), t.dequantize())


@pytest.mark.parametrize("fixture", ["safetensors_tensor", "gguf_tensor"])
def test_an_abi4_consumer_is_refused_read_only_memory_clearly(fixture, request):
    t = request.getfixturevalue(fixture)
    for ask in ({}, {"max_version": 4}):
        with pytest.raises(UnsupportedError) as info:
            t.__hurray__(**ask)
        message = str(info.value)
        assert "read-only" in message and "C ABI 4" in message and "max_version=5" in message


def test_writable_memory_goes_to_an_abi4_consumer_with_a_version4_context():
    a = np.arange(6, dtype=np.float32)
    t = hurray.from_numpy(a)
    old = t.__hurray__()
    assert context_version(old) == 4
    status, text = layer7.describe(old)
    assert status == 0 and "read-only" not in text, text
    assert context_version(t.__hurray__(max_version=5)) == 5
    assert context_version(t.__hurray__(max_version=99)) == 5     # capped at this build's version
    u = hurray.from_hurray(t.__hurray__())
    assert not u.readonly and np.asarray(u).flags.writeable and np.shares_memory(np.asarray(u), a)


def test_max_version_is_checked():
    t = hurray.from_numpy(np.zeros(2, np.float32))
    with pytest.raises(AbiVersionError, match="no C ABI before version 4"):
        t.__hurray__(max_version=3)
    for bad in ("5", 5.0, True, (5, 0)):
        with pytest.raises(InvalidArgumentError, match="max_version"):
            t.__hurray__(max_version=bad)
    with pytest.raises(TypeError):
        t.__hurray__(5)  # keyword only, as in DLPack


def test_hurray_load_tensors_are_copy_on_write_and_cross_without_a_copy(tmp_path, safetensors_tensor):
    # hurray-io maps its files private and writable (ADR-040 section 3): its
    # tensors are writable, so they cross to either kind of consumer, unmarked.
    path = tmp_path / "w.hurray"
    hurray.save(path, {"w": safetensors_tensor})
    t = hurray.load(path)["w"]
    assert not t.readonly
    for ask in ({}, {"max_version": 5}):
        capsule = t.__hurray__(**ask)
        assert layer7.buffer_addresses(capsule) == list(t.buffers)
        status, text = layer7.describe(capsule)
        assert status == 0 and "read-only" not in text, text
    assert np.shares_memory(np.asarray(hurray.from_hurray(t)), np.asarray(t))


class OldProducer:
    """A producer written for C ABI 4: its __hurray__ takes no keyword."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.calls = []

    def __hurray__(self):
        self.calls.append(())
        return self.tensor.__hurray__()


class NewProducer(OldProducer):
    def __hurray__(self, *, max_version=None):
        self.calls.append(max_version)
        return self.tensor.__hurray__(max_version=max_version)


def test_from_hurray_asks_for_abi5_and_falls_back_for_an_old_producer(safetensors_tensor):
    new = NewProducer(safetensors_tensor)
    u = hurray.from_hurray(new)
    assert new.calls == [5] and u.readonly and u.buffers == safetensors_tensor.buffers
    old = OldProducer(hurray.from_numpy(np.ones(3)))
    assert not hurray.from_hurray(old).readonly and old.calls == [()]
    # An old producer of read-only memory refuses it for the ABI-4 context it makes.
    with pytest.raises(hurray.HurrayError, match="read-only"):
        hurray.from_hurray(OldProducer(safetensors_tensor))


def test_the_python_route_gives_what_the_c_route_gives(safetensors_tensor):
    # protocol._from_hurray is the Python twin of the C route.
    from hurray.bridges import protocol

    u = protocol._from_hurray(NewProducer(safetensors_tensor))
    assert u.readonly and not np.asarray(u).flags.writeable
    assert not protocol._from_hurray(OldProducer(hurray.from_numpy(np.ones(3)))).readonly


def test_export_refuses_read_only_memory_in_a_version4_context():
    a = np.zeros(4, np.uint8)
    descriptor = hurray.from_numpy(a).descriptor.encode()
    with pytest.raises(UnsupportedError, match="ABI 4 cannot mark"):
        _protocol.export(descriptor, ((a.ctypes.data, a.nbytes),), a, 4, True)
    capsule = _protocol.export(descriptor, ((a.ctypes.data, a.nbytes),), a, 5, True)
    *_, readonly = _protocol.consume(capsule)
    assert readonly is True
    with pytest.raises(AbiVersionError, match="abi_version"):
        _protocol.export(descriptor, ((a.ctypes.data, a.nbytes),), a, 6, False)
