"""Read-only memory between peers, and a consumer built for C ABI 4 (ADR-059).

c-peer-abi4 is the C peer compiled against the frozen header of ABI 4
(tests/peers/abi4/hurray.h) and linked to the package's ABI-5 libhurray: a
consumer that was never rebuilt. It asks ``__hurray__()`` with no
``max_version``, reads version-4 contexts only and knows no read-only mark.
It must keep working with writable tensors, and be refused read-only ones
clearly -- never receive read-only memory it would take for writable. The
ABI-5 peers ask ``__hurray__(max_version=5)`` and read the marks through
``hurray_tensor_context_buffer_flags``.
"""
import sys
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy

sys.path.insert(0, str(Path(__file__).resolve().parent))

import hurray  # noqa: E402
from peers import adapters, cases, checks, session  # noqa: E402

ABI4_CASES = ("float32", "strided", "int4_lsb_first", "ggml_q8_0", "affine_per_axis")


class Abi4Peer(adapters.CPeer):
    """The C peer built for ABI 4: it names no max_version (the keyword did not exist)."""

    def take(self, source):
        return self.module.consume(source.__hurray__())


@pytest.fixture(scope="module")
def abi4():
    return Abi4Peer(session.c_peer_abi4_module(), "c-peer-abi4")


@pytest.fixture
def file_tensor(tmp_path):
    path = tmp_path / "w.safetensors"
    safetensors.numpy.save_file({"w": np.arange(12, dtype=np.float32).reshape(3, 4)}, str(path))
    return hurray.load_safetensors(path)["w"]


def test_the_abi4_peer_is_built_against_abi4_and_runs_on_abi5(abi4):
    assert abi4.module.HEADER_ABI_VERSION == 4
    assert abi4.module.linked_abi_version() == hurray.C_ABI_VERSION == 5


@pytest.mark.parametrize("case_id", ABI4_CASES)
def test_an_abi4_consumer_keeps_reading_writable_tensors(abi4, case_id):
    case = cases.BY_ID[case_id]
    python = session.peers()["hurray-python"]
    produced = python.produce(case)
    held = abi4.take(produced.source)
    report = abi4.report(held, case)
    assert report["abi_version"] == 4  # hurray-python made the context an ABI-4 consumer reads
    assert report["descriptor"] == produced.descriptor and report["buffers"] == produced.buffers
    assert report["elements"] == case.elements
    assert report["readonly"] == [False] * len(case.buffers)
    abi4.release(held)


def test_an_abi4_consumer_is_refused_read_only_memory_clearly(abi4, file_tensor):
    with pytest.raises(hurray.errors.UnsupportedError) as info:
        abi4.take(file_tensor)
    assert "read-only" in str(info.value) and "C ABI 4" in str(info.value)


def test_an_abi4_consumer_refuses_a_version5_context_by_its_version(abi4):
    c_peer = session.peers()["c-peer"]
    case = cases.BY_ID["float32"]
    produced = c_peer.produce(case)
    with pytest.raises(abi4.module.PeerError) as info:
        abi4.take(produced.source)
    status, message = info.value.args
    assert status == 7 and "version 5" in message and "versions 4 to 4" in message


@pytest.mark.parametrize("consumer", ["hurray-python", "c-peer", "ctypes-binding", "rust-peer"])
def test_abi5_consumers_read_an_abi4_producer(abi4, consumer):
    case = cases.BY_ID["affine_per_axis"]
    peer = session.peers()[consumer]
    produced = abi4.produce(case)
    held = peer.take(produced.source)
    report = peer.report(held, case)
    assert report.get("abi_version", 4) == 4
    assert report["descriptor"] == produced.descriptor and report["buffers"] == produced.buffers
    assert report.get("readonly", [False]) == [False] * len(report.get("readonly", [False]))
    peer.release(held)


def test_the_abi4_peer_cannot_mark_read_only_memory(abi4):
    c = cases.BY_ID["float32"].codes()
    with pytest.raises(abi4.module.PeerError, match="cannot mark a buffer read-only"):
        abi4.module.produce(c["dtype"], c["shape"], c["strides"], 0, -1, c["scheme"], c["granularity"], c["axis"],
                            c["block_size"], c["ggml_type"], c["parts"], cases.BY_ID["float32"].buffers, True)


@pytest.mark.parametrize("consumer", ["c-peer", "ctypes-binding"])
def test_abi5_peers_see_read_only_marks_of_a_file_tensor(consumer, file_tensor):
    peer = session.peers()[consumer]
    held = peer.take(file_tensor)
    report = held.report()
    assert report["abi_version"] == 5 and report["readonly"] == [True]
    assert report["buffers"] == [file_tensor.buffer(0).tobytes()]
    peer.release(held)


def test_the_rust_peer_takes_a_read_only_file_tensor(file_tensor):
    peer = session.peers()["rust-peer"]
    held = peer.take(file_tensor)
    assert held.report()["abi_version"] == 5
    peer.release(held)


def test_a_c_producer_of_read_only_memory_gives_a_read_only_tensor():
    module = session.c_peer_module()
    case = cases.BY_ID["float32"]
    c = case.codes()
    capsule, _ = module.produce(c["dtype"], c["shape"], c["strides"], 0, -1, c["scheme"], c["granularity"],
                                c["axis"], c["block_size"], c["ggml_type"], c["parts"], case.buffers, True)
    t = hurray.from_hurray(capsule)
    assert t.readonly and not np.asarray(t).flags.writeable
    np.testing.assert_array_equal(np.asarray(t), case.array)
    # Writable C memory stays writable on this side.
    capsule, _ = module.produce(c["dtype"], c["shape"], c["strides"], 0, -1, c["scheme"], c["granularity"],
                                c["axis"], c["block_size"], c["ggml_type"], c["parts"], case.buffers)
    assert not hurray.from_hurray(capsule).readonly


def test_checks_expect_the_abi_every_peer_asks_for():
    assert checks.ABI_VERSION == adapters.ABI == hurray.C_ABI_VERSION
