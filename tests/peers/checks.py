"""One producer -> consumer exchange, and everything checked about it."""
import numpy as np

from . import adapters, cases

ABI_VERSION = 5


def run_pair(producer, consumer, case):
    """Produce, consume, check what was seen, release; returns nothing, asserts everything."""
    adapters.settle()
    produced = producer.produce(case)
    source, tracker = produced.source, produced.tracker
    meant_descriptor, meant_buffers = produced.descriptor, produced.buffers
    del produced

    held = consumer.take(source)
    del source  # the producer lets go: only the consumer keeps the memory alive now
    adapters.settle()
    tracker.assert_alive()

    report = consumer.report(held, case)
    check_report(report, case, meant_descriptor, meant_buffers)

    consumer.release(held)
    del held
    adapters.released_once(tracker)


def check_report(report, case, meant_descriptor, meant_buffers):
    meant_fields = cases.parse_descriptor(meant_descriptor)
    expected = cases.expected_fields(case)
    # The producer meant the case ...
    logical = {key: meant_fields[key] for key in expected if key in meant_fields}
    logical["part_kinds"] = {role: (p[0], p[3]) for role, p in meant_fields["parts"].items()}
    assert logical == expected, "the producer's descriptor does not state the case"
    # ... and the consumer saw exactly that.
    assert report.get("abi_version", ABI_VERSION) == ABI_VERSION
    assert report["descriptor"] == meant_descriptor
    assert report["fields"] == meant_fields
    assert report["buffers"] == meant_buffers
    assert report.get("readonly", [False] * len(meant_buffers)) == [False] * len(meant_buffers)
    if "elements" in report:
        assert report["elements"] == case.elements
    if "real" in report:
        assert report["real"].dtype == np.float32
        np.testing.assert_array_equal(report["real"], case.real)
    if "array" in report:
        assert report["array"].dtype == case.array.dtype
        assert report["array"].shape == case.array.shape
        assert report["array"].tobytes() == np.ascontiguousarray(case.array).tobytes()
    # Every consumer walks or reads something beyond the bytes themselves.
    assert {"elements", "real"} & set(report)
