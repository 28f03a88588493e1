"""One interface over every peer, so the matrix can pair any producer with any consumer.

A peer can:

- ``produce(case)`` -> ``Produced``: an object whose ``__hurray__()`` returns the
  capsule, what the producer meant (its descriptor bytes and buffer bytes), and
  a ``Tracker`` that knows whether the producer's memory and owner are released;
- ``take(source)``: consume the capsule of ``source`` (the consumer now owns it);
- ``report(held, case)``: what the consumer saw, as a dict (see ``REPORT_KEYS``);
- ``release(held)``: let go of everything the consumer took.

Every report holds copies only: nothing in it keeps a producer's memory alive.
"""
import gc
import weakref
from dataclasses import dataclass

import numpy as np

from . import cases

ROLE_NAMES = {code: name for name, code in cases.ROLE.items()}
ABI = 5  # the C ABI every consumer here reads, and asks its producer for (ADR-059)


@dataclass
class Produced:
    source: object
    descriptor: bytes
    buffers: list
    tracker: object


class CapsuleSource:
    """What a foreign producer hands a Python caller: an object with ``__hurray__``."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __hurray__(self, max_version=None):
        # A foreign producer made its capsule before it knew its consumer:
        # it hands over what it has, and the consumer judges the version.
        capsule, self._capsule = self._capsule, None
        if capsule is None:
            raise RuntimeError("this source's capsule was already handed out")
        return capsule


# ---- trackers: is the producer's memory still held, and freed once? -------

class CounterTracker:
    """For a peer that counts its own allocations and releases."""

    def __init__(self, counters, buffer_count):
        self._counters = counters
        self._before = dict(counters())
        self.buffer_count = buffer_count

    def delta(self):
        now = self._counters()
        return {key: now[key] - self._before[key] for key in now}

    def made(self):
        d = self.delta()
        assert d["buffers_made"] == self.buffer_count and d["owners_made"] == 1, d

    def assert_alive(self):
        d = self.delta()
        assert d["buffers_released"] == 0 and d["owners_released"] == 0, f"released too early: {d}"
        assert d["bad_releases"] == 0, d

    def assert_released_once(self):
        d = self.delta()
        expected = {"buffers_made": self.buffer_count, "buffers_released": self.buffer_count,
                    "owners_made": 1, "owners_released": 1, "bad_releases": 0}
        assert d == expected, f"producer counters moved by {d}, expected {expected}"


class PythonTracker:
    """For hurray-python: finalizers on the numpy memory, and the protocol's own
    count of owner references dropped (one per buffer plus one for the context)."""

    def __init__(self, memories, buffer_count):
        from hurray import _protocol

        self._counters = _protocol._owner_counters
        self._before = self._counters()
        self.buffer_count = buffer_count
        self.freed = [0] * len(memories)
        for i, memory in enumerate(memories):
            weakref.finalize(memory, self._free, i)

    def _free(self, i):
        self.freed[i] += 1

    def delta(self):
        now = self._counters()
        return {"owner_refs_released": now[0] - self._before[0], "owner_refs_leaked": now[1] - self._before[1],
                "memories_freed": list(self.freed)}

    def made(self):
        pass

    def assert_alive(self):
        d = self.delta()
        assert d["owner_refs_released"] == 0 and not any(self.freed), f"released too early: {d}"

    def assert_released_once(self):
        d = self.delta()
        expected = {"owner_refs_released": self.buffer_count + 1, "owner_refs_leaked": 0,
                    "memories_freed": [1] * len(self.freed)}
        assert d == expected, f"hurray-python producer: {d}, expected {expected}"


def settle(full=False):
    """Collect garbage so that every release that is due has run.

    The young generations hold whatever one exchange made, and collecting
    them is ~100x cheaper than a full collection; ``full`` collects all.
    """
    gc.collect() if full else gc.collect(1)


def released_once(tracker):
    """tracker.assert_released_once(), after a full collection if a young one was not enough."""
    settle()
    try:
        tracker.assert_released_once()
    except AssertionError:
        settle(full=True)
        tracker.assert_released_once()


# ---- hurray-python ------------------------------------------------------

class PythonPeer:
    name = "hurray-python"

    def __init__(self):
        import hurray
        from hurray.core import descriptor

        self.hurray = hurray
        invert = lambda table: {name: code for code, name in table.items()}  # noqa: E731
        self._codes = {key: invert(getattr(descriptor, table)) for key, table in (
            ("byte_order", "BYTE_ORDERS"), ("packing", "PACKINGS"), ("scheme", "SCHEMES"),
            ("granularity", "GRANULARITIES"), ("role", "ROLES"), ("layout", "LAYOUTS"),
            ("ggml_type", "GGML_TYPES"))}

    def produce(self, case):
        """With the API a user would pick: from_numpy, from_gguf, or Descriptor.build + Tensor."""
        hurray = self.hurray
        memories = [np.frombuffer(bytearray(b), np.uint8) for b in case.buffers]
        if case.python_api == "from_numpy":
            (values,) = [p for p in case.parts if p[0] == "values"]
            npdtype = hurray.numpy_dtype(case.dtype)
            strides = case.strides if case.strides is not None else cases.row_major(case.shape)
            array = np.ndarray(case.shape, npdtype, buffer=memories[0], offset=values[3],
                               strides=tuple(s * npdtype.itemsize for s in strides))
            tensor = hurray.from_numpy(array)
        elif case.python_api == "from_gguf":
            tensor = hurray.from_gguf(memories[0], case.ggml_type, case.shape)
        else:
            desc = hurray.Descriptor.build(
                case.dtype, case.shape, case.strides, packing=case.packing, scheme=case.scheme,
                granularity=case.granularity, axis=case.axis, block_size=case.block_size,
                ggml_type=case.ggml_type,
                parts={role: hurray.Part(dtype, index, offset, layout)
                       for role, dtype, index, offset, layout in case.parts})
            tensor = hurray.Tensor(desc, [(m.ctypes.data, m.size) for m in memories], owner=tuple(memories))
        meant = [tensor.buffer(i).tobytes() for i in range(len(tensor.buffers))]
        tracker = PythonTracker(memories, len(tensor.buffers))
        return Produced(tensor, tensor.descriptor.encode(), meant, tracker)

    def take(self, source):
        return [self.hurray.from_hurray(source)]

    def fields(self, desc):
        c = self._codes
        return {
            "dtype": desc.dtype_code, "shape": tuple(desc.shape), "strides": tuple(desc.strides),
            "byte_order": c["byte_order"][desc.byte_order], "packing": c["packing"][desc.packing],
            "scheme": c["scheme"][desc.scheme], "granularity": c["granularity"][desc.granularity],
            "axis": desc.axis, "block_size": desc.block_size,
            "ggml_type": 0 if desc.ggml_type is None else c["ggml_type"][desc.ggml_type],
            "parts": {c["role"][role]: (self.hurray.dtype_code(p.dtype), p.buffer_index, p.byte_offset,
                                        c["layout"][p.layout]) for role, p in desc.parts.items()},
            "buffer_count": desc.buffer_count,
        }

    def report(self, held, case):
        (tensor,) = held
        report = {
            "descriptor": tensor.descriptor.encode(),
            "fields": self.fields(tensor.descriptor),
            "buffers": [tensor.buffer(i).tobytes() for i in range(len(tensor.buffers))],
            "real": np.array(tensor.dequantize(), dtype=np.float32, copy=True),
            "readonly": [tensor.readonly] * len(tensor.buffers),
        }
        if case.array is not None:
            report["array"] = np.array(np.asarray(tensor), copy=True)
        return report

    def release(self, held):
        held.clear()


# ---- the C peer (either build) ------------------------------------------

class CPeer:
    def __init__(self, module, name):
        self.module = module
        self.name = name

    def produce(self, case):
        c = case.codes()
        tracker = CounterTracker(self.module.counters, len(case.buffers))
        capsule, descriptor = self.module.produce(
            c["dtype"], c["shape"], c["strides"], 0, -1 if c["packing"] is None else c["packing"], c["scheme"],
            c["granularity"], c["axis"], c["block_size"], c["ggml_type"], c["parts"], case.buffers)
        tracker.made()
        return Produced(CapsuleSource(capsule), descriptor, list(case.buffers), tracker)

    def take(self, source):
        return self.module.consume(source.__hurray__(max_version=ABI))

    def report(self, held, case):
        return _named_elements(held.report())

    def release(self, held):
        held.release()


# ---- the ctypes binding -------------------------------------------------

class CtypesPeer:
    name = "ctypes binding"

    def __init__(self, binding):
        self.binding = binding

    def produce(self, case):
        c = case.codes()
        tracker = CounterTracker(lambda: dict(self.binding.counters), len(case.buffers))
        capsule, descriptor = self.binding.produce(
            c["dtype"], c["shape"], c["strides"], buffers=case.buffers, packing=c["packing"], scheme=c["scheme"],
            granularity=c["granularity"], axis=c["axis"], block_size=c["block_size"], ggml_type=c["ggml_type"],
            parts=c["parts"])
        tracker.made()
        return Produced(CapsuleSource(capsule), descriptor, list(case.buffers), tracker)

    def take(self, source):
        return self.binding.consume(source.__hurray__(max_version=ABI))

    def report(self, held, case):
        return _named_elements(held.report())

    def release(self, held):
        held.release()


# ---- the Rust binding (rust-peer) ----------------------------------------

class RustPeer:
    """The crate's safe API in a cdylib; tests/peers/rust_peer.py makes and takes the capsule."""

    name = "rust-peer"

    def __init__(self, peer):
        self.peer = peer

    def produce(self, case):
        c = case.codes()
        tracker = CounterTracker(lambda: self.peer.counters, len(case.buffers))
        capsule, descriptor = self.peer.produce(
            c["dtype"], c["shape"], c["strides"], packing=c["packing"], scheme=c["scheme"],
            granularity=c["granularity"], axis=c["axis"], block_size=c["block_size"], ggml_type=c["ggml_type"],
            parts=c["parts"], buffers=case.buffers)
        tracker.made()
        return Produced(CapsuleSource(capsule), descriptor, list(case.buffers), tracker)

    def take(self, source):
        return self.peer.consume(source.__hurray__(max_version=ABI))

    def report(self, held, case):
        return _named_elements(held.report())

    def release(self, held):
        held.release()


def _named_elements(report):
    report["elements"] = {ROLE_NAMES[role]: data for role, data in report["elements"].items()}
    return report
