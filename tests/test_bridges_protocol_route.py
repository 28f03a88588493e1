"""from_hurray of a producer that is not one of the package's Tensors, in C.

ADR-048 (amended): the object's __hurray__ is called from hurray._core, its
capsule taken through hurray._protocol's C API and checked in full there --
the name, the context's ABI version, the descriptor decoded, the descriptor
against the buffers -- before anything is renamed or read (D-NB2, decision
3). These tests hold that route to the rules the Python route kept: every
bad capsule is refused with a HurrayError and left as it was, every owner
reference is taken and dropped exactly once, and every failure of a
producer's __hurray__ is the error protocol._refuse states once.
"""
import ctypes
import gc
import sys
import weakref

import numpy as np
import pytest

import hurray
from hurray import _protocol
from hurray.bridges import protocol
from hurray.errors import (
    BufferTooSmallError,
    CapsuleError,
    HurrayError,
    InvalidArgumentError,
    InvalidDescriptorError,
    UnsupportedError,
)
from hurray.quant.quantizers import quantize_affine
from support.watched_tensor import watched_arange
from hurray.core.tensor import Tensor

_api = ctypes.PyDLL(None)
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_OTHER_NAME = ctypes.c_char_p(b"not_hurray")  # kept alive: the capsule keeps its pointer
_SOMETHING = ctypes.c_int(0)  # what that capsule points to (never read)


class Producer:
    """Another library's producer: __hurray__ hands out whatever it is given."""

    def __init__(self, make):
        self.make = make
        self.calls = 0

    def __hurray__(self):
        self.calls += 1
        return self.make()


def _counters():
    gc.collect()
    return _protocol._owner_counters()


def _name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


def _tensor(buffers):
    weights = np.arange(32, dtype=np.float32).reshape(4, 8)
    return hurray.from_numpy(weights) if buffers == 1 else quantize_affine(weights, dtype="int8", axis=0)


@pytest.mark.parametrize("buffers", [1, 3])
def test_a_producer_s_capsule_is_taken_into_a_holder_of_its_handles(buffers):
    t = _tensor(buffers)
    refs, (released, _) = sys.getrefcount(t), _counters()
    capsules = []
    p = Producer(lambda: capsules.append(t.__hurray__()) or capsules[-1])
    u = hurray.from_hurray(p)
    assert p.calls == 1, "__hurray__ is called once"
    assert _name(capsules[0]) == protocol.USED_CAPSULE_NAME
    holder = u.owner
    assert type(holder) is _protocol.Holder
    assert repr(holder) == f"<hurray._protocol.Holder of {buffers} buffer{'s' if buffers > 1 else ''}>"
    # One reference per handle and one for the context (D-NB2, decision 2),
    # now the Holder's; the used capsule frees nothing.
    assert sys.getrefcount(t) == refs + buffers + 1
    del capsules[:]
    assert _counters()[0] == released
    assert u.descriptor == t.descriptor and u.buffers == t.buffers
    assert all(np.shares_memory(u.buffer(i), t.buffer(i)) for i in range(buffers))
    if buffers == 1:
        assert np.array_equal(np.asarray(u), np.asarray(t))
    holder_ref = weakref.ref(holder)
    del u, holder
    assert holder_ref() is None
    assert _counters()[0] == released + buffers + 1
    assert sys.getrefcount(t) == refs


def test_the_c_route_gives_what_the_python_route_gives():
    t = _tensor(3)
    p = Producer(t.__hurray__)
    by_c, by_python = hurray.from_hurray(p), protocol._from_hurray(p)
    assert by_c.descriptor == by_python.descriptor and by_c.buffers == by_python.buffers
    assert type(by_c.owner) is type(by_python.owner) is _protocol.Holder


def _bad_capsules():
    """The array the spans point into, and per case: (make a capsule over it
    for an owner, the error, its message, the owner references the capsule
    holds)."""
    a = np.arange(4, dtype=np.float32)
    good = hurray.from_numpy(a).descriptor.encode()
    longer = hurray.from_numpy(np.arange(5, dtype=np.float32)).descriptor.encode()
    span = ((a.ctypes.data, a.nbytes),)
    return a, {
        "does not decode": (lambda o: _protocol.export(b"HRYD not a descriptor", span, o),
                            InvalidDescriptorError, "decoding the capsule's descriptor", 2),
        "bad magic": (lambda o: _protocol.export(b"XXXX" + good[4:], span, o),
                      InvalidDescriptorError, "magic", 2),
        "buffer too small": (lambda o: _protocol.export(longer, span, o),
                             BufferTooSmallError, "reaches 20 bytes", 2),
        "too many buffers": (lambda o: _protocol.export(good, span * 2, o),
                             InvalidArgumentError, "holds 2 buffers but the descriptor uses 1", 3),
    }


@pytest.mark.parametrize("case", ["does not decode", "bad magic", "buffer too small", "too many buffers"])
def test_a_bad_capsule_from_a_producer_is_refused_and_left_as_it_was(case):
    a, cases = _bad_capsules()
    make, error, match, handles = cases[case]

    class Owner:
        pass

    owner = Owner()
    owner_ref = weakref.ref(owner)
    capsule = make(owner)
    del owner
    before = _counters()
    handed = [capsule]
    p = Producer(lambda: handed[0])
    with pytest.raises(error, match=match) as info:
        hurray.from_hurray(p)
    assert isinstance(info.value, HurrayError)
    assert _name(capsule) == protocol.CAPSULE_NAME, "a refused capsule is not renamed"
    assert _counters() == before, "a refusal takes and drops nothing"
    del capsule, handed[:], info, p, make, cases
    gc.collect()
    assert _counters()[0] == before[0] + handles, "the producer's capsule still frees its handles"
    assert owner_ref() is None


def test_a_capsule_handed_out_twice_is_taken_once():
    t = _tensor(1)
    capsule = t.__hurray__()
    p = Producer(lambda: capsule)
    u = hurray.from_hurray(p)
    with pytest.raises(CapsuleError, match="already consumed"):
        hurray.from_hurray(p)
    assert np.array_equal(np.asarray(u), np.asarray(t))


def test_a_capsule_with_another_name_is_refused_and_left_alone():
    other = _api.PyCapsule_New(ctypes.addressof(_SOMETHING), _OTHER_NAME, None)
    with pytest.raises(CapsuleError, match="named 'not_hurray'"):
        hurray.from_hurray(Producer(lambda: other))
    assert _name(other) == "not_hurray"


class _Raises:
    def __init__(self, exc):
        self.exc = exc

    def __hurray__(self):
        raise self.exc


class _Missing:
    @property
    def __hurray__(self):
        raise AttributeError("not here")


@pytest.mark.parametrize("route", ["c", "python"])
def test_a_producer_s_failures_are_the_same_errors_on_both_routes(route):
    call = hurray.from_hurray if route == "c" else protocol._from_hurray
    with pytest.raises(CapsuleError, match=r"object does not support the Hurray protocol \(no __hurray__"):
        call(object())
    with pytest.raises(CapsuleError, match="no __hurray__"):
        call(_Missing())
    with pytest.raises(HurrayError, match=r"_Raises.__hurray__\(\) raised ValueError: boom") as info:
        call(_Raises(ValueError("boom")))
    assert type(info.value) is HurrayError and isinstance(info.value.__cause__, ValueError)
    # An AttributeError from inside __hurray__ is a failure, not a missing method.
    with pytest.raises(HurrayError, match=r"raised AttributeError: inner"):
        call(_Raises(AttributeError("inner")))
    own = UnsupportedError("the producer's own words")
    with pytest.raises(UnsupportedError) as info:
        call(_Raises(own))
    assert info.value is own
    with pytest.raises(CapsuleError, match=r"returned bytes, not a PyCapsule named 'hurray_tensor'"):
        call(Producer(lambda: b"hurray_tensor"))
    # Not the producer's refusal: passes through unwrapped.
    with pytest.raises(KeyboardInterrupt):
        call(_Raises(KeyboardInterrupt()))


def test_tensor_hurray_in_c_is_to_capsule():
    assert type(Tensor.__dict__["__hurray__"]).__name__ == "method_descriptor"
    t = _tensor(3)
    refs = sys.getrefcount(t)
    for export in (Tensor.__hurray__, protocol.to_capsule):
        capsule = export(t)
        assert _name(capsule) == protocol.CAPSULE_NAME
        assert sys.getrefcount(t) == refs + 4  # three buffers and the context
        held = _protocol.consume(capsule)
        assert held[1] == t.descriptor.encode() and held[2] == t.buffers
        del capsule, held
        assert sys.getrefcount(t) == refs
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    with pytest.raises(UnsupportedError, match="read-only"):
        hurray.from_numpy(frozen).__hurray__()


def test_a_kept_descriptor_is_reused_only_while_it_is_open():
    t = hurray.from_numpy(np.arange(6, dtype=np.float32))
    other = hurray.from_numpy(np.arange(3, dtype=np.int8))
    first = hurray.from_hurray(Producer(t.__hurray__)).descriptor
    assert hurray.from_hurray(Producer(t.__hurray__)).descriptor is first
    assert hurray.from_hurray(Producer(other.__hurray__)).descriptor == other.descriptor
    assert hurray.from_hurray(Producer(t.__hurray__)).descriptor is first
    # A user may close a descriptor the consumer route kept: it is not
    # handed out again, and the new one is open.
    first.close()
    again = hurray.from_hurray(Producer(t.__hurray__))
    assert again.descriptor is not first and again.descriptor._address is not None
    assert np.array_equal(np.asarray(again), np.arange(6, dtype=np.float32))


def test_a_tensor_subclass_is_exported_by_python_through_its_buffers():
    w, reads = watched_arange()
    u = hurray.from_hurray(Producer(w.__hurray__))
    assert reads
    assert np.array_equal(np.asarray(u), np.arange(6, dtype=np.float32))
