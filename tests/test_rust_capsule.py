"""A live capsule into Rust: ADR-023's third peer pair, hurray-python ↔ a
binding built on hurray-ffi that is not Python.

bindings/rust/examples/capsule_consumer.rs is a cdylib that reads the
"hurray_tensor" capsule through the CPython C API (declared by hand) and
takes ownership with hurray::Tensor::from_raw: the context's ABI version
first, then the descriptor, then the buffers; only then is the capsule
renamed "used_hurray_tensor" and its context cleared. Its report is compared
with Python's own view of the tensor, the producer's owner is counted
released exactly once, and every bad capsule is refused with an error and
left exactly as it was.
"""
import ctypes
import gc
import struct
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest

import hurray
from hurray import _protocol

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "peers" / "ctypes_binding"))

import hurray_ctypes  # noqa: E402
from support import rust, rust_tensors  # noqa: E402

OK, NULL_ARGUMENT, INVALID_ARGUMENT = 0, 1, 2
NOT_A_CONTEXT, ABI_VERSION, BUFFER_TOO_SMALL = 6, 7, 10
MAGIC = 0x48525443
DEAD = 0x44454144  # what hurray_tensor_context_destroy writes over the magic

# A private handle on the C API (ctypes.pythonapi's function objects are shared).
_api = ctypes.PyDLL(None)
_NAME = ctypes.create_string_buffer(b"hurray_tensor")
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_set_context = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_void_p)(("PyCapsule_SetContext", _api))
_get_context = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object)(("PyCapsule_GetContext", _api))
_get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", _api))


@pytest.fixture(scope="session")
def rust_examples():
    return rust.EXAMPLES


@pytest.fixture(scope="session")
def consumer(rust_examples):
    lib = ctypes.PyDLL(rust_examples.path("capsule_consumer"))  # PyDLL: called with the GIL held
    lib.hurray_rust_take.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p,
                                     ctypes.c_size_t]
    lib.hurray_rust_take.restype = ctypes.c_int
    lib.hurray_rust_describe.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.hurray_rust_describe.restype = ctypes.c_int
    lib.hurray_rust_release.argtypes = [ctypes.c_void_p]
    lib.hurray_rust_release.restype = None
    return lib


def take(consumer, capsule):
    """(status, text, tensor handle or None)."""
    text = ctypes.create_string_buffer(8192)
    handle = ctypes.c_void_p()
    status = consumer.hurray_rust_take(capsule, ctypes.byref(handle), text, len(text))
    return status, text.value.decode(), handle.value


def expected_report(tensor):
    """What the Rust consumer must report, from Python's view of the tensor."""
    d = tensor.descriptor
    lines = [
        "abi 4",
        f"dtype {d.dtype}",
        "shape " + ",".join(map(str, d.shape)),
        "strides " + ",".join(map(str, d.strides)),
        f"byte_order {d.byte_order}",
        f"packing {d.packing}",
        f"scheme {d.scheme} {d.granularity} axis {d.axis} block {d.block_size} ggml {d.ggml_type or 0}",
    ]
    for role, p in d.parts.items():
        lines.append(f"part {role} {p.dtype} buffer {p.buffer_index} offset {p.byte_offset} {p.layout}")
    for i, data in enumerate(rust_tensors.buffer_bytes(tensor)):
        lines.append(f"buffer {i} {len(data)} {rust.fnv1a64(data):016x}")
    return "\n".join(lines) + "\n"


def state(capsule):
    name = _get_name(capsule)
    return [name, _get_pointer(capsule, name), _get_context(capsule)]


@pytest.mark.parametrize("kind", list(rust_tensors.make()))
def test_rust_reads_what_python_produced(consumer, kind):
    tensor = rust_tensors.make()[kind]
    capsule = tensor.__hurray__()
    status, text, handle = take(consumer, capsule)
    assert status == OK, text
    try:
        assert text == expected_report(tensor)
        assert _get_name(capsule) == b"used_hurray_tensor"
        assert _get_context(capsule) is None
        del capsule
        gc.collect()
        again = ctypes.create_string_buffer(8192)
        assert consumer.hurray_rust_describe(handle, again, len(again)) == OK
        assert again.value.decode() == text  # the handles outlive the capsule
    finally:
        consumer.hurray_rust_release(handle)


def test_the_python_producer_lives_until_rust_releases_it(consumer):
    producer = hurray.from_numpy(np.arange(8, dtype=np.float32))
    alive = weakref.ref(producer)
    capsule = producer.__hurray__()
    del producer
    status, text, handle = take(consumer, capsule)
    assert status == OK, text
    del capsule
    gc.collect()
    assert alive() is not None, "the Rust tensor's handles keep the producer alive"
    consumer.hurray_rust_release(handle)
    gc.collect()
    assert alive() is None, "released when the Rust tensor drops"


def test_the_owner_is_released_exactly_once(consumer):
    binding = hurray_ctypes.Binding(hurray.get_library())
    data = np.arange(6, dtype="<f4").tobytes()
    capsule, _ = binding.produce(17, (2, 3), buffers=(data,))  # 17: HURRAY_DTYPE_FLOAT32
    status, text, handle = take(consumer, capsule)
    assert status == OK, text
    del capsule  # renamed: its destructor frees nothing
    gc.collect()
    assert binding.counters["owners_released"] == 0 and binding.counters["buffers_released"] == 0
    consumer.hurray_rust_release(handle)
    assert binding.counters == {"buffers_made": 1, "buffers_released": 1, "owners_made": 1,
                                "owners_released": 1, "bad_releases": 0}


def test_a_capsule_is_taken_once(consumer):
    capsule = hurray.from_numpy(np.ones(4, dtype=np.float32)).__hurray__()
    status, text, handle = take(consumer, capsule)
    assert status == OK, text
    try:
        before = state(capsule)
        status, text, second = take(consumer, capsule)
        assert (status, second) == (INVALID_ARGUMENT, None)
        assert text == ("refused: HURRAY_ERROR_INVALID_ARGUMENT: "
                        "not an unused capsule named 'hurray_tensor'")
        assert state(capsule) == before
    finally:
        consumer.hurray_rust_release(handle)


def test_wrong_objects_are_refused(consumer):
    dl = hurray.from_numpy(np.ones(4, dtype=np.float32)).__dlpack__()
    before = state(dl)
    assert take(consumer, dl)[0] == INVALID_ARGUMENT  # a "dltensor" capsule
    assert state(dl) == before
    assert take(consumer, 42)[0] == INVALID_ARGUMENT  # not a capsule at all
    assert take(consumer, None)[0] == INVALID_ARGUMENT


@pytest.mark.parametrize("magic, version, status, words", [
    (MAGIC, 3, ABI_VERSION, "C ABI version 3; this binding reads versions 4 to 5"),
    (MAGIC, 6, ABI_VERSION, "C ABI version 6; this binding reads versions 4 to 5"),
    (0, 5, NOT_A_CONTEXT, ""),
    (DEAD, 5, NOT_A_CONTEXT, ""),
], ids=["version_3", "version_6", "no_magic", "dead_magic"])
def test_forged_contexts_are_refused_and_left_alone(consumer, magic, version, status, words):
    real = hurray.from_numpy(np.ones(4, dtype=np.float32)).__hurray__()
    header = ctypes.create_string_buffer(struct.pack("=II", magic, version) + bytes(56))
    forged = _capsule_new(_get_pointer(real, b"hurray_tensor"), ctypes.addressof(_NAME), None)
    _set_context(forged, ctypes.addressof(header))
    before = state(forged)
    got, text, handle = take(consumer, forged)
    assert (got, handle) == (status, None), text
    assert text.startswith("refused: ") and words in text
    assert state(forged) == before
    assert state(real)[0] == b"hurray_tensor"  # the real capsule still owns its list


def test_a_capsule_without_a_context_is_refused(consumer):
    real = hurray.from_numpy(np.ones(4, dtype=np.float32)).__hurray__()
    bare = _capsule_new(_get_pointer(real, b"hurray_tensor"), ctypes.addressof(_NAME), None)
    assert take(consumer, bare)[0] == NULL_ARGUMENT
    assert state(bare)[2] is None


def test_buffers_too_small_are_refused(consumer):
    claims = hurray.Descriptor.build("float32", (100,)).encode()  # 400 bytes
    small = np.zeros(4, dtype=np.float32)  # 16 bytes
    alive = weakref.ref(small)
    liar = _protocol.export(claims, ((small.ctypes.data, small.nbytes),), small)
    before = state(liar)
    status, text, handle = take(consumer, liar)
    assert (status, handle) == (BUFFER_TOO_SMALL, None)
    assert text.startswith("refused: HURRAY_ERROR_BUFFER_TOO_SMALL: ") and "16 bytes" in text
    assert state(liar) == before
    del small, liar  # the capsule, left alone, is freed by its producer
    gc.collect()
    assert alive() is None


def test_a_bad_descriptor_is_refused(consumer):
    small = np.zeros(4, dtype=np.float32)
    good = hurray.Descriptor.build("float32", (4,)).encode()
    corrupt = good[:8] + bytes([0xFF]) + good[9:]  # a rank no valid encoding has
    liar = _protocol.export(corrupt, ((small.ctypes.data, small.nbytes),), small)
    before = state(liar)
    status, text, handle = take(consumer, liar)
    assert status != OK and handle is None, text
    assert text.startswith("refused: HURRAY_ERROR_")
    assert state(liar) == before
