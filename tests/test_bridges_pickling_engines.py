"""Tensors through real engines on this machine: multiprocessing (spawn and
fork), concurrent.futures.ProcessPoolExecutor, and a Dask distributed
LocalCluster with worker processes over loopback TCP.

Every result must be bit for bit what the same work gives in this process.
Each engine is started once per module and shut down with timeouts.
"""
import logging
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

import hurray
from hurray import Tensor
from support.pickle_samples import (
    assert_same, assert_same_bits, dask_serializer_module, holder_pid, samples, values, work, work_by_name,
)

SAMPLES = samples()
NAMES = ["plain", "plain-readonly", "plain-strided", "affine", "affine-int4-blocks", "mx", "nvfp4-packed", "ggml"]
TIMEOUT = 120  # seconds for any one exchange; a hang fails instead of blocking the suite


def check_round_trips(results, made_there):
    """`results` from work(), `made_there` from work_by_name(), both in NAMES order."""
    for name, (back, dequantized), (theirs, their_values) in zip(NAMES, results, made_there):
        local = SAMPLES[name]
        assert_same(back, local)  # out and back again
        assert_same_bits(dequantized, values(local))  # the worker's work
        assert_same(theirs, local)  # made in the worker, sent here
        assert_same_bits(their_values, values(local))


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_multiprocessing_pool(method):
    with multiprocessing.get_context(method).Pool(1) as pool:
        results = pool.map_async(work, [SAMPLES[n] for n in NAMES]).get(TIMEOUT)
        made_there = pool.starmap_async(work_by_name, [(n,) for n in NAMES]).get(TIMEOUT)
        assert pool.apply_async(os.getpid).get(TIMEOUT) != os.getpid()
    check_round_trips(results, made_there)


def test_process_pool_executor():
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as executor:
        results = list(executor.map(work, [SAMPLES[n] for n in NAMES], timeout=TIMEOUT))
        made_there = list(executor.map(work_by_name, NAMES, timeout=TIMEOUT))
        assert executor.submit(os.getpid).result(TIMEOUT) != os.getpid()
    check_round_trips(results, made_there)


# ---- Dask distributed ----------------------------------------------------------


@pytest.fixture(scope="module")
def dask_client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = Client(cluster, timeout=TIMEOUT)
    try:
        yield client
    finally:
        client.close(timeout=30)
        cluster.close(timeout=30)


def test_dask_sends_each_buffer_as_its_own_frame_without_a_copy():
    from distributed.protocol import deserialize, serialize

    tensor = SAMPLES["affine"]
    # context: what a connection to the scheduler negotiates (pickle protocol 4).
    header, frames = serialize(tensor, context={"pickle-protocol": 4})
    assert header["serializer"] == "dask"  # hurray.bridges.dask's, not pickle's
    assert len(frames) == len(tensor.buffers)
    for frame, (address, nbytes) in zip(frames, tensor.buffers):
        view = memoryview(frame).cast("B")
        assert view.nbytes == nbytes
        assert np.frombuffer(view, np.uint8).__array_interface__["data"][0] == address
    assert_same(deserialize(header, frames), tensor)
    # Asked for pickle only, distributed still gets a working pickle.
    header, frames = serialize(tensor, serializers=["pickle"], context={"pickle-protocol": 4})
    assert header["serializer"] == "pickle" and len(frames) == 1  # in-band: protocol 4
    assert_same(deserialize(header, frames), tensor)


def test_dask_scatter_dequantize_on_a_worker_and_gather(dask_client):
    from distributed import wait

    worker_pids = set(dask_client.run(os.getpid).values())
    assert len(worker_pids) == 2 and os.getpid() not in worker_pids
    # Through the scheduler (the default) and direct to the workers: both with hurray.bridges.dask's serializer,
    # which every worker has registered.
    assert set(dask_client.run(dask_serializer_module).values()) == {"hurray.bridges.dask"}
    for name, direct in [(name, direct) for name in NAMES for direct in (None, True)]:
        local = SAMPLES[name]
        future = dask_client.scatter(local, timeout=TIMEOUT, direct=direct)
        assert dask_client.who_has(future)[future.key]  # it lives on a worker
        dequantized = dask_client.submit(Tensor.dequantize, future, pure=False)
        pid = dask_client.submit(holder_pid, future, pure=False)
        wait([future, dequantized, pid], timeout=TIMEOUT)
        back, result, worker_pid = dask_client.gather([future, dequantized, pid], direct=direct)
        assert worker_pid in worker_pids
        assert_same(back, local)
        assert_same_bits(result, values(local))


def test_dask_tensor_made_on_a_worker_comes_back_whole(dask_client):
    x = np.random.default_rng(7).standard_normal((32, 64)).astype(np.float32)
    future = dask_client.submit(hurray.quantize_mx, x, dtype="float8_e5m2", pure=False)
    received = future.result(timeout=TIMEOUT)
    assert_same(received, hurray.quantize_mx(x, dtype="float8_e5m2"))
