"""Benchmarks for pickling a Tensor (ADR-043, ADR-049), called by bench/run.py.

Two targets, each against numpy measured in the same run:

- pickle.dumps + pickle.loads of a 64 MiB tensor with protocol 5, the
  buffers out-of-band and handed back (what a transport that carries frames
  does), against a numpy array of the same size: at most 1.0x;
- a Dask distributed scatter-then-gather round trip of a 64 MiB quantized
  tensor through a worker process of a LocalCluster on loopback, against the
  numpy array of its values' bytes: at most 1.5x, by the route a user gets
  with plain ``client.scatter(x)`` and ``client.gather(future)``: through
  the scheduler, whose connections speak pickle protocol 4. A Tensor takes
  it as numpy does, with a serializer of distributed's own that sends each
  buffer as a frame (hurray.bridges.dask).

The same round trip with ``direct=True`` (the client talks to the worker)
is measured too, without a target of its own.
"""
import logging
import pickle

import numpy as np

import hurray

SIZE = 64 << 20


def _round_trip(x):
    buffers = []
    data = pickle.dumps(x, protocol=5, buffer_callback=buffers.append)
    return pickle.loads(data, buffers=buffers)


def _quantized(values):
    """A per-row int8 affine tensor over `values` (float32 scales, int8 zero points)."""
    rows = values.shape[0]
    rng = np.random.default_rng(0)
    scale = rng.uniform(0.01, 1.0, rows).astype(np.float32)
    zero = rng.integers(-8, 8, rows, dtype=np.int8)
    descriptor = hurray.Descriptor.build(
        "int8", values.shape, scheme="affine", granularity="per_axis", axis=0,
        parts={"values": ("int8", 0), "scale": ("float32", 1), "zero_point": ("int8", 2)},
    )
    arrays = (values, scale, zero)
    return hurray.Tensor(descriptor, [(a.__array_interface__["data"][0], a.nbytes) for a in arrays], owner=arrays)


def _dask_cases(measure, values, tensor, rounds):
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1",
        dashboard_address=None, silence_logs=logging.ERROR,
    )
    try:
        with Client(cluster, timeout=120) as client:

            def scatter_gather(x, direct):
                # hash=False: no tokenizing, so both cases move bytes only.
                future = client.scatter(x, hash=False, direct=direct)
                out = client.gather(future, direct=direct)
                future.release()
                return out

            for direct in (None, True):
                assert scatter_gather(tensor, direct).dequantize().tobytes() == tensor.dequantize().tobytes()
            cases = {}
            for route, direct in (("via scheduler (default)", None), ("direct", True)):
                cases[f"dask scatter+gather {route}, numpy int8 64 MiB"] = lambda d=direct: scatter_gather(values, d)
                cases[f"dask scatter+gather {route}, Tensor affine int8 64 MiB"] = (
                    lambda d=direct: scatter_gather(tensor, d)
                )
            return measure(cases, max(3, rounds // 4), 1)
    finally:
        cluster.close(timeout=60)


def run(measure, rounds, calls):
    """(name -> ns per call, [(target, measured ratio, at most)]).

    `measure(cases, rounds, calls)` is bench/run.py's: best ns per call of
    each case over interleaved rounds.
    """
    values = np.random.default_rng(1).integers(-128, 128, (8192, SIZE // 8192), dtype=np.int8)
    array = np.ones(SIZE, dtype=np.uint8)
    plain = hurray.from_numpy(np.ones(SIZE, dtype=np.uint8))
    tensor = _quantized(values)
    cases = {
        "pickle 5 out-of-band, numpy 64 MiB": lambda: _round_trip(array),
        "pickle 5 out-of-band, Tensor 64 MiB": lambda: _round_trip(plain),
        "pickle 5 out-of-band, Tensor affine int8 64 MiB (3 buffers)": lambda: _round_trip(tensor),
    }
    ns = measure(cases, rounds, calls)
    ns.update(_dask_cases(measure, values, tensor, rounds))
    rows = [
        ("pickle 5 round trip: Tensor / numpy, 64 MiB",
         ns["pickle 5 out-of-band, Tensor 64 MiB"] / ns["pickle 5 out-of-band, numpy 64 MiB"], 1.0),
        ("dask scatter+gather (default route): quantized Tensor / numpy, 64 MiB",
         ns["dask scatter+gather via scheduler (default), Tensor affine int8 64 MiB"]
         / ns["dask scatter+gather via scheduler (default), numpy int8 64 MiB"], 1.5),
    ]
    return ns, rows

