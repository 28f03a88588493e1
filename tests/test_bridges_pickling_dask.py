"""Dask distributed's own serializer for a Tensor (hurray.bridges.dask, ADR-049):
registered whenever distributed is loaded, before or after hurray, without
hurray importing it; buffers as frames without a copy, whatever the pickle
protocol of the connection; and every kind of bad frame list refused with a
HurrayError. (tests/test_bridges_pickling_engines.py runs it in a real cluster.)"""
import subprocess
import sys

import numpy as np
import pytest

from hurray import Tensor
from hurray.errors import AbiVersionError, BufferTooSmallError, CorruptError, HurrayError, InvalidDescriptorError
from hurray.pickling import ENCODING_VERSION
from support.pickle_samples import assert_same, samples

distributed_serialize = pytest.importorskip("distributed.protocol.serialize")
serialize, deserialize = distributed_serialize.serialize, distributed_serialize.deserialize

SAMPLES = samples()


def address(buffer):
    return np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8).__array_interface__["data"][0]


def run_fresh(code):
    """Run `code` in a new interpreter; its stdout."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_import_hurray_imports_neither_dask_nor_distributed():
    out = run_fresh("import sys, hurray; print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    assert out.strip() == "[]"


@pytest.mark.parametrize("order", ["hurray first", "distributed first"])
def test_registered_whichever_is_imported_first(order):
    imports = "import hurray; import distributed" if order == "hurray first" else "import distributed; import hurray"
    out = run_fresh(
        f"{imports}\n"
        "import sys\n"
        "from distributed.protocol.serialize import dask_serialize, dask_deserialize\n"
        "from dask.sizeof import sizeof\n"
        "from hurray.bridges.dask import _Watcher\n"
        "print(dask_serialize.dispatch(hurray.Tensor).__qualname__, dask_deserialize.dispatch(hurray.Tensor).__qualname__)\n"
        "print(sizeof(hurray.from_numpy(__import__('numpy').zeros(1000, 'float32'))))\n"
        "print(any(isinstance(f, _Watcher) for f in sys.meta_path))\n"
    )
    assert out.split("\n")[:3] == ["dask_serialize dask_deserialize", "4000", "False"]  # the watcher is gone


@pytest.mark.parametrize("name", SAMPLES)
@pytest.mark.parametrize("protocol", [4, 5])
def test_buffers_are_frames_without_a_copy_whatever_the_protocol(name, protocol):
    tensor = SAMPLES[name]
    header, frames = serialize(tensor, context={"pickle-protocol": protocol})  # 4: what the scheduler speaks
    assert header["serializer"] == "dask"
    assert len(frames) == len(tensor.buffers)
    for frame, (addr, nbytes) in zip(frames, tensor.buffers):
        assert memoryview(frame).nbytes == nbytes and memoryview(frame).readonly == tensor.readonly
        if nbytes:
            assert address(frame) == addr
    received = deserialize(header, frames)
    assert_same(received, tensor)


def test_writability_follows_distributed_numpy_rule():
    writable, frozen = SAMPLES["plain"], SAMPLES["plain-readonly"]
    for tensor in (writable, frozen):
        header, frames = serialize(tensor)
        as_bytes = [bytes(f) for f in frames]  # read-only frames, as some transports deliver
        received = deserialize(header, as_bytes)
        # distributed copies a writable numpy array's read-only frame; so does a Tensor's.
        assert received.readonly == tensor.readonly
        array = np.asarray(tensor)
        np_header, np_frames = serialize(array)
        assert deserialize(np_header, [bytes(f) for f in np_frames]).flags.writeable == (not tensor.readonly)
        # Writable frames are used in place.
        in_place = [bytearray(f) for f in frames]
        received = deserialize(header, in_place)
        assert [a for a, _ in received.buffers] == [address(f) for f in in_place]


def test_a_tensor_inside_a_container_is_its_own_frames():
    tensor = SAMPLES["affine"]
    header, frames = serialize({"weights": tensor, "step": 3})
    back = deserialize(header, frames)
    assert back["step"] == 3
    assert_same(back["weights"], tensor)


# ---- bad input -------------------------------------------------------------------


def sub(header):
    """The header hurray wrote, inside distributed's."""
    return header["sub-header"]


def test_missing_extra_or_short_frames():
    tensor = SAMPLES["affine"]
    header, frames = serialize(tensor)
    for wrong in (frames[:2], [], frames + [b"x"]):
        with pytest.raises(CorruptError, match=f"{len(wrong)} frames for 3 buffers"):
            deserialize(header, wrong)
    for i in range(3):
        cut = list(frames)
        cut[i] = bytes(cut[i])[:-1]
        with pytest.raises(CorruptError, match=f"buffer {i} holds"):
            deserialize(header, cut)
    with pytest.raises(CorruptError, match="buffer 0 holds"):
        deserialize(header, frames[::-1])
    with pytest.raises(CorruptError, match="buffer 1 is a NoneType"):
        deserialize(header, [frames[0], None, frames[2]])


def test_broken_headers():
    tensor = SAMPLES["mx"]
    header, frames = serialize(tensor)
    for key in ("hurray", "descriptor", "readonly", "nbytes"):
        broken = {**header, "sub-header": {k: v for k, v in sub(header).items() if k != key}}
        with pytest.raises(CorruptError, match="the header is not one hurray wrote"):
            deserialize(broken, frames)
    for key, value, error in (
        ("hurray", [3, 1], AbiVersionError),
        ("hurray", [4, 1, 0], CorruptError),
        ("hurray", None, CorruptError),
        ("descriptor", b"HRYD" + ENCODING_VERSION.to_bytes(2, "little") + bytes(38), InvalidDescriptorError),
        ("descriptor", None, HurrayError),
        ("readonly", 0, CorruptError),
        ("nbytes", None, CorruptError),
        ("nbytes", [1, 1], CorruptError),
    ):
        broken = {**header, "sub-header": {**sub(header), key: value}}
        with pytest.raises(error):
            deserialize(broken, frames)
    # Lengths that match short frames: the spans are still proven against the descriptor.
    short = [bytes(f)[: len(bytes(f)) // 2] for f in frames]
    broken = {**header, "sub-header": {**sub(header), "nbytes": [len(f) for f in short]}}
    with pytest.raises(BufferTooSmallError):
        deserialize(broken, short)
    assert isinstance(deserialize(header, frames), Tensor)  # the intact header still works
