"""The native protocol: __hurray__ / from_hurray, the capsule rules (D-NB2), bad input.

Every refusal must be a HurrayError subclass with a message, must leave the
capsule as it was (its owner still frees it), and must not leak: the owner
references a capsule holds are counted with hurray._protocol._owner_counters
and with weak references to the producer.
"""
import ctypes
import datetime
import gc
import struct
import threading
import weakref

import numpy as np
import pytest

import hurray
from hurray import _protocol
from hurray._ffi import ffi, lib
from hurray.errors import (
    AbiVersionError,
    BufferTooSmallError,
    CapsuleError,
    HurrayError,
    InvalidArgumentError,
    InvalidDescriptorError,
    NotAContextError,
    NullArgumentError,
    UnsupportedError,
)
from hurray.bridges.protocol import from_hurray

from support.spec_encoding import row_major, spec_bytes

ABI = 5
MAGIC = 0x48525443  # HURRAY_TENSOR_CONTEXT_MAGIC

# The Python C API on a private handle: ctypes.pythonapi's function objects
# are shared by every module, so restypes set there leak between tests.
_api = ctypes.PyDLL(None)
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
FLOAT32 = 17
UINT8 = 6

# ---- helpers --------------------------------------------------------------


def descriptor_bytes(shape, dtype=FLOAT32, strides=None, buffers=1):
    """Descriptor bytes written by hand from docs/impl/descriptor-encoding.md.

    buffers > 1 adds affine scale / zero point parts in further buffers, so
    that the descriptor's buffer count is `buffers`."""
    parts = [(1, dtype, 0, 0, 0)]
    scheme = granularity = 0
    if buffers > 1:
        scheme, granularity = 1, 1  # affine per tensor
        parts.append((2, FLOAT32, 0, 1, 0))
        if buffers > 2:
            parts.append((3, dtype, 0, 2, 0))
    return spec_bytes(dtype, shape, row_major(shape) if strides is None else strides,
                      scheme=scheme, granularity=granularity, parts=parts)


class Owner:
    """Something whose memory a capsule shares; counts its own deaths."""

    deaths = 0

    def __init__(self, *arrays):
        self.arrays = arrays

    def spans(self):
        return tuple((a.ctypes.data, a.nbytes) for a in self.arrays)

    def __del__(self):
        type(self).deaths += 1


def counters():
    """(released, leaked) owner references so far, after collecting garbage
    that earlier tests may have left in reference cycles."""
    gc.collect()
    return _protocol._owner_counters()


def released_since(before):
    after = counters()
    return after[0] - before[0], after[1] - before[1]


def capsule_name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


# ---- the happy path -------------------------------------------------------


def test_export_consume_round_trip_shares_memory():
    a = np.arange(12, dtype=np.float32)
    owner = Owner(a)
    desc = descriptor_bytes((3, 4))
    capsule = _protocol.export(desc, owner.spans(), owner)
    assert capsule_name(capsule) == "hurray_tensor"
    version, got_desc, spans, holder, (address, box), readonly = _protocol.consume(capsule)
    assert version == ABI
    assert got_desc == desc
    # The descriptor consume decoded and checked, handed over (ADR-046).
    handed = ffi.cast("HurrayDescriptor *", address)
    out = ffi.new("uint8_t[]", len(desc))
    out_len = ffi.new("uint64_t *")
    assert lib.hurray_descriptor_encode(handed, out, len(desc), out_len) == lib.HURRAY_OK
    assert bytes(ffi.buffer(out, out_len[0])) == desc
    assert type(box).__name__ == "PyCapsule" and "hurray_descriptor" in repr(box)
    assert spans == ((a.ctypes.data, a.nbytes),)
    assert capsule_name(capsule) == "used_hurray_tensor"
    assert "1 buffer" in repr(holder)


def test_empty_tensor_with_null_buffer():
    owner = Owner()
    capsule = _protocol.export(descriptor_bytes((0, 3)), ((0, 0),), owner)
    t = from_hurray(capsule)
    assert t.shape == (0, 3) and t.buffers == ((0, 0),)
    assert np.asarray(t).shape == (0, 3)


def test_from_numpy_round_trip_through_public_api():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, ::-1, 1:3]
    t = hurray.from_numpy(a)
    capsule = t.__hurray__()
    assert capsule_name(capsule) == "hurray_tensor"
    u = from_hurray(capsule)
    assert capsule_name(capsule) == "used_hurray_tensor"
    assert isinstance(u, hurray.Tensor)
    assert u.descriptor == t.descriptor
    assert u.shape == (2, 3, 2) and u.dtype == "float32"
    view = np.asarray(u)
    np.testing.assert_array_equal(view, a)
    assert np.shares_memory(view, a)
    a[1, 0, 0] = -7.0
    assert view[1, 0, 0] == -7.0


def test_from_hurray_calls_dunder_and_keeps_the_producer_alive():
    base = np.arange(6, dtype=np.int16)
    t = hurray.from_numpy(base)
    ref = weakref.ref(base)
    del base
    u = hurray.from_hurray(t)
    del t
    gc.collect()
    assert ref() is not None
    view = np.asarray(u)
    del u
    gc.collect()
    assert ref() is not None, "the numpy view must keep the producer alive"
    np.testing.assert_array_equal(view, np.arange(6, dtype=np.int16))
    del view
    gc.collect()
    assert ref() is None


def test_multi_buffer_capsule_holds_one_reference_per_handle():
    values = np.arange(8, dtype=np.uint8)
    scale = np.array([0.5], dtype=np.float32)
    zero = np.array([3], dtype=np.uint8)
    owner = Owner(values, scale, zero)
    before_refs = __import__("sys").getrefcount(owner)
    capsule = _protocol.export(descriptor_bytes((8,), dtype=UINT8, buffers=3), owner.spans(), owner)
    # three buffers plus the context
    assert __import__("sys").getrefcount(owner) == before_refs + 4
    before = counters()
    del capsule
    assert released_since(before) == (4, 0)
    assert __import__("sys").getrefcount(owner) == before_refs


def test_read_only_tensor_goes_out_only_to_an_abi5_consumer():
    # ADR-059: a consumer that names no max_version reads C ABI 4, which
    # cannot mark memory read-only: it is refused, and nothing is made.
    frozen = np.arange(4, dtype=np.float32)
    frozen.flags.writeable = False
    t = hurray.from_numpy(frozen)
    assert t.readonly
    before = counters()
    with pytest.raises(UnsupportedError, match="read-only.*max_version=5"):
        t.__hurray__()
    with pytest.raises(UnsupportedError, match="C ABI 4"):
        t.__hurray__(max_version=4)
    assert released_since(before) == (0, 0)
    # An ABI-5 consumer receives it marked, and the Tensor it makes is read-only.
    u = from_hurray(t.__hurray__(max_version=5))
    view = np.asarray(u)
    assert u.readonly and not view.flags.writeable and np.shares_memory(view, frozen)
    assert from_hurray(t).readonly  # the exchange without a capsule keeps it too


def test_consumed_tensor_reexports():
    a = np.arange(5, dtype=np.float64)
    u = from_hurray(from_hurray(hurray.from_numpy(a)))
    np.testing.assert_array_equal(np.asarray(u), a)
    assert np.shares_memory(np.asarray(u), a)


def test_pending_exception_survives_capsule_destruction():
    # The subscript fails with TypeError, and only then does the interpreter
    # drop the index -- the capsule's last reference -- so its destructor runs
    # while the TypeError is set. A destructor that cleared it and did not put
    # it back would turn it into "SystemError: error return without exception
    # set".
    a = np.zeros(4, dtype=np.float32)
    owner = Owner(a)
    before = counters()
    with pytest.raises(TypeError, match="list indices must be"):
        [][_protocol.export(descriptor_bytes((4,)), owner.spans(), owner)]
    assert released_since(before) == (2, 0)


def test_pending_exception_survives_holder_destruction():
    # The same for a consumed capsule: the consumer tensor, its Holder and
    # the last references to the producer all go while the TypeError is set,
    # so hurray__py_owner_release runs with it pending.
    a = np.zeros(4, dtype=np.float32)
    ref = weakref.ref(a)
    before = counters()
    with pytest.raises(TypeError, match="list indices must be"):
        [][from_hurray(_protocol.export(descriptor_bytes((4,)), ((a.ctypes.data, a.nbytes),), Owner(a)))]
    assert released_since(before) == (2, 0)
    del a
    assert ref() is None


def test_racing_consumers_take_a_capsule_once():
    a = np.arange(16, dtype=np.float32)
    for _ in range(50):
        owner = Owner(a)
        capsule = _protocol.export(descriptor_bytes((16,)), owner.spans(), owner)
        results, barrier = [], threading.Barrier(4)

        def take():
            barrier.wait()
            try:
                results.append(_protocol.consume(capsule))
            except CapsuleError as exc:
                results.append(exc)

        threads = [threading.Thread(target=take) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        taken = [r for r in results if isinstance(r, tuple)]
        refused = [r for r in results if isinstance(r, CapsuleError)]
        assert len(taken) == 1 and len(refused) == 3
        assert all("already consumed" in str(e) for e in refused)


# ---- bad input: every refusal leaves the capsule as it was ---------------


def _refused_capsule_still_frees(make_capsule, exc_type, match):
    """Consume a hurray-python capsule that must be refused; the capsule must
    stay unconsumed and, once dropped, release every reference it held."""
    a = np.arange(4, dtype=np.float32)
    owner = Owner(a)
    ref = weakref.ref(owner)
    capsule, handles = make_capsule(owner)
    del owner
    before = counters()
    with pytest.raises(exc_type, match=match) as info:
        from_hurray(capsule)
    assert isinstance(info.value, HurrayError)
    assert str(info.value)
    assert capsule_name(capsule) == "hurray_tensor", "a refused capsule must not be renamed"
    assert ref() is not None
    del capsule, info
    assert released_since(before) == (handles, 0)
    assert ref() is None


def test_descriptor_that_does_not_decode():
    _refused_capsule_still_frees(
        lambda o: (_protocol.export(b"HRYD not a descriptor", o.spans(), o), 2),
        InvalidDescriptorError, "decoding the capsule's descriptor")


def test_descriptor_with_bad_magic():
    bad = b"XXXX" + descriptor_bytes((4,))[4:]
    _refused_capsule_still_frees(lambda o: (_protocol.export(bad, o.spans(), o), 2),
                                 InvalidDescriptorError, "magic")


def test_buffer_smaller_than_descriptor_claims():
    _refused_capsule_still_frees(
        lambda o: (_protocol.export(descriptor_bytes((5,)), o.spans(), o), 2),
        BufferTooSmallError, "reaches 20 bytes")


def test_more_buffers_than_descriptor_names():
    _refused_capsule_still_frees(
        lambda o: (_protocol.export(descriptor_bytes((4,)), o.spans() * 2, o), 3),
        InvalidArgumentError, "holds 2 buffers but the descriptor uses 1")


def test_fewer_buffers_than_descriptor_names():
    _refused_capsule_still_frees(
        lambda o: (_protocol.export(descriptor_bytes((4,), dtype=UINT8, buffers=2), o.spans(), o), 2),
        InvalidArgumentError, "holds 1 buffers but the descriptor uses 2")


def test_used_capsule_is_refused():
    a = np.arange(4, dtype=np.float32)
    owner = Owner(a)
    capsule = _protocol.export(descriptor_bytes((4,)), owner.spans(), owner)
    t = from_hurray(capsule)
    with pytest.raises(CapsuleError, match="already consumed"):
        from_hurray(capsule)
    with pytest.raises(CapsuleError, match="already consumed"):
        _protocol.consume(capsule)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_wrong_capsule_name_is_refused_and_left_alone():
    capi = datetime.datetime_CAPI  # some other library's capsule
    with pytest.raises(CapsuleError, match="named 'datetime.datetime_CAPI'"):
        from_hurray(capi)
    assert capsule_name(capi) == "datetime.datetime_CAPI"


def test_not_a_capsule():
    with pytest.raises(CapsuleError, match="PyCapsule"):
        _protocol.consume(b"hurray_tensor")
    with pytest.raises(CapsuleError, match="no __hurray__"):
        from_hurray(object())


def test_dunder_raising_is_wrapped_with_cause():
    class Broken:
        def __hurray__(self):
            raise RuntimeError("producer exploded")

    with pytest.raises(HurrayError, match="Broken.__hurray__\\(\\) raised RuntimeError: producer exploded") as info:
        from_hurray(Broken())
    assert isinstance(info.value.__cause__, RuntimeError)


def test_dunder_raising_attribute_error_is_not_mistaken_for_missing():
    class Broken:
        def __hurray__(self):
            raise AttributeError("inner")

    with pytest.raises(HurrayError, match="raised AttributeError: inner") as info:
        from_hurray(Broken())
    assert isinstance(info.value.__cause__, AttributeError)


def test_hurray_error_from_dunder_passes_through():
    class Refuses:
        def __hurray__(self):
            raise InvalidArgumentError("not today")

    with pytest.raises(InvalidArgumentError, match="^not today$"):
        from_hurray(Refuses())


def test_tensor_subclass_dunder_is_called():
    calls = []

    class Logged(hurray.Tensor):
        __slots__ = ()

        def __hurray__(self):
            calls.append(self)
            return super().__hurray__()

    a = np.arange(3, dtype=np.int64)
    base = hurray.from_numpy(a)
    logged = Logged(base.descriptor, base.buffers, owner=a)
    u = from_hurray(logged)
    assert calls == [logged]
    np.testing.assert_array_equal(np.asarray(u), a)


def test_dunder_returning_non_capsule():
    class Liar:
        def __hurray__(self):
            return np.zeros(3)

    with pytest.raises(CapsuleError, match="returned ndarray, not a PyCapsule"):
        from_hurray(Liar())


def test_export_refuses_bad_spans_without_leaking():
    owner = Owner()
    ref = weakref.ref(owner)
    before = counters()
    cases = [
        ((( -1, 4),), InvalidArgumentError, "non-negative"),
        (((1 << 64, 4),), InvalidArgumentError, "non-negative"),
        (((0, 4),), NullArgumentError, "NULL"),
        (([1, 4],), InvalidArgumentError, r"\(address, nbytes\) tuple"),
        ([(1, 4)], InvalidArgumentError, "tuple"),
        (((1, "x"),), InvalidArgumentError, "non-negative"),
    ]
    for spans, exc_type, match in cases:
        with pytest.raises(exc_type, match=match):
            _protocol.export(descriptor_bytes((1,)), spans, owner)
    with pytest.raises(InvalidArgumentError, match="descriptor_bytes must be bytes"):
        _protocol.export("text", (), owner)
    with pytest.raises(InvalidArgumentError, match="descriptor_len is 0"):
        _protocol.export(b"", (), owner)
    with pytest.raises(TypeError):
        _protocol.export(b"x", ())
    # a failure after some buffers were made releases exactly those
    a = np.zeros(4, dtype=np.uint8)
    with pytest.raises(NullArgumentError):
        _protocol.export(descriptor_bytes((4,)), ((a.ctypes.data, 4), (0, 4)), owner)
    assert released_since(before) == (1, 0)
    del owner
    gc.collect()
    assert ref() is None


# ---- forged capsules (made with ctypes, as a foreign producer might) -----

_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_SetContext.restype = ctypes.c_int
_api.PyCapsule_SetContext.argtypes = [ctypes.py_object, ctypes.c_void_p]
_api.PyCapsule_GetContext.restype = ctypes.c_void_p
_api.PyCapsule_GetContext.argtypes = [ctypes.py_object]
# PyCapsule keeps the name pointer: these bytes must outlive every capsule.
_NAME = b"hurray_tensor"


@pytest.fixture
def clib():
    lib = ctypes.CDLL(hurray.get_library())
    lib.hurray_buffer_list_new.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_buffer_from_ptr.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_void_p,
                                           ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_buffer_list_push.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_buffer_list_destroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_buffer_list_destroy.restype = None
    return lib


@pytest.fixture
def forged_list(clib):
    """A real HurrayBufferList over a float32[4] array, freed by the test."""
    a = np.arange(4, dtype=np.float32)
    lst, buf = ctypes.c_void_p(), ctypes.c_void_p()
    assert clib.hurray_buffer_list_new(ctypes.byref(lst)) == 0
    assert clib.hurray_buffer_from_ptr(a.ctypes.data, a.nbytes, None, None, ctypes.byref(buf)) == 0
    assert clib.hurray_buffer_list_push(lst, ctypes.byref(buf)) == 0
    yield lst.value
    clib.hurray_buffer_list_destroy(ctypes.byref(lst))


def _forged_capsule(list_ptr, context):
    capsule = _api.PyCapsule_New(list_ptr, _NAME, None)
    if context is not None:
        assert _api.PyCapsule_SetContext(capsule, ctypes.addressof(context)) == 0
    return capsule


def _assert_untouched(capsule, context):
    assert capsule_name(capsule) == "hurray_tensor"
    expected = None if context is None else ctypes.addressof(context)
    assert _api.PyCapsule_GetContext(capsule) == expected


def test_null_context(forged_list):
    capsule = _forged_capsule(forged_list, None)
    with pytest.raises(NotAContextError, match="has no context"):
        from_hurray(capsule)
    _assert_untouched(capsule, None)


def test_foreign_context_without_magic(forged_list):
    junk = ctypes.create_string_buffer(bytes(range(7, 71)))  # 64 bytes, no magic
    capsule = _forged_capsule(forged_list, junk)
    with pytest.raises(NotAContextError, match="not a HurrayTensorContext"):
        from_hurray(capsule)
    _assert_untouched(capsule, junk)


@pytest.mark.parametrize("version", [3, 6, 0, 0xFFFFFFFF])
def test_other_abi_versions(forged_list, version):
    # Only the frozen header is meaningful; what follows is poison that a
    # consumer must never read once the version is wrong.
    header = ctypes.create_string_buffer(struct.pack("<II", MAGIC, version) + b"\xff" * 56)
    capsule = _forged_capsule(forged_list, header)
    with pytest.raises(AbiVersionError) as info:
        from_hurray(capsule)
    message = str(info.value)
    assert f"version {version}" in message and f"versions 4 to {ABI}" in message
    _assert_untouched(capsule, header)
