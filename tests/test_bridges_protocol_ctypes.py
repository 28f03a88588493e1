"""The native protocol between hurray-python and a consumer or producer that
knows only the C ABI (ADR-023's second and third peer pairs, ADR-034).

Everything on the foreign side here is ctypes over libhurray plus the
CPython capsule API: no hurray internals. hurray itself is used only to find
the library (get_library), to make the producer (from_numpy, __hurray__),
and, in the other direction, as the consumer (from_hurray).
"""
import ctypes
import gc
import struct
import threading
import weakref

import numpy as np
import pytest

import hurray

from support.spec_encoding import spec_bytes

# ABI facts, from hurray.h (C ABI 5; the context of a producer asked
# without max_version is of version 4, for a consumer of ABI 4: ADR-059).
HURRAY_OK = 0
HURRAY_C_ABI_VERSION = 5
CONTEXT_WITHOUT_MAX_VERSION = 4
HURRAY_TENSOR_CONTEXT_MAGIC = 0x48525443
HURRAY_DTYPE_FLOAT32 = 17
HURRAY_DTYPE_INT16 = 3

# PyCapsule keeps pointers to its name: these must outlive every capsule.
NAME = b"hurray_tensor"
USED_NAME = b"used_hurray_tensor"

c_void_p, c_uint32, c_uint64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64
P = ctypes.POINTER
RELEASE = ctypes.CFUNCTYPE(None, c_void_p)
CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)


def load_hurray():
    lib = ctypes.CDLL(hurray.get_library())
    sig = {
        "hurray_c_abi_version": (c_uint32, []),
        "hurray_last_error_message": (ctypes.c_char_p, []),
        "hurray_tensor_context_abi_version": (ctypes.c_int, [c_void_p, P(c_uint32)]),
        "hurray_tensor_context_descriptor": (ctypes.c_int, [c_void_p, P(c_void_p), P(c_uint64)]),
        "hurray_tensor_context_new": (ctypes.c_int, [c_uint32, ctypes.c_char_p, c_uint64, c_void_p,
                                                     RELEASE, P(c_void_p)]),
        "hurray_tensor_context_destroy": (None, [P(c_void_p)]),
        "hurray_descriptor_decode": (ctypes.c_int, [ctypes.c_char_p, c_uint64, P(c_void_p)]),
        "hurray_descriptor_check_buffers": (ctypes.c_int, [c_void_p, c_void_p]),
        "hurray_descriptor_dtype": (ctypes.c_int, [c_void_p, P(c_uint32)]),
        "hurray_descriptor_rank": (ctypes.c_int, [c_void_p, P(c_uint32)]),
        "hurray_descriptor_shape": (ctypes.c_int, [c_void_p, P(P(c_uint64))]),
        "hurray_descriptor_strides": (ctypes.c_int, [c_void_p, P(P(ctypes.c_int64))]),
        "hurray_descriptor_destroy": (None, [P(c_void_p)]),
        "hurray_buffer_list_new": (ctypes.c_int, [P(c_void_p)]),
        "hurray_buffer_list_len": (ctypes.c_int, [c_void_p, P(c_uint64)]),
        "hurray_buffer_list_get": (ctypes.c_int, [c_void_p, c_uint64, P(c_void_p)]),
        "hurray_buffer_list_push": (ctypes.c_int, [c_void_p, P(c_void_p)]),
        "hurray_buffer_list_destroy": (None, [P(c_void_p)]),
        "hurray_buffer_from_ptr": (ctypes.c_int, [c_void_p, c_uint64, RELEASE, c_void_p, P(c_void_p)]),
        "hurray_buffer_data": (ctypes.c_int, [c_void_p, P(c_void_p), P(c_uint64)]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def load_capsule_api():
    api = ctypes.PyDLL(None)  # the interpreter itself; calls keep the GIL
    sig = {
        "PyCapsule_GetName": (ctypes.c_char_p, [ctypes.py_object]),
        "PyCapsule_GetPointer": (c_void_p, [ctypes.py_object, ctypes.c_char_p]),
        "PyCapsule_GetContext": (c_void_p, [ctypes.py_object]),
        "PyCapsule_SetName": (ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]),
        "PyCapsule_New": (ctypes.py_object, [c_void_p, ctypes.c_char_p, CAPSULE_DESTRUCTOR]),
        "PyCapsule_SetContext": (ctypes.c_int, [ctypes.py_object, c_void_p]),
        # The destructor gets a capsule whose refcount is already zero: these
        # take it as a plain address so that ctypes never touches its count.
        "PyCapsule_IsValid": (ctypes.c_int, [c_void_p, ctypes.c_char_p]),
    }
    for name, (restype, argtypes) in sig.items():
        fn = getattr(api, name)
        fn.restype, fn.argtypes = restype, argtypes
    # The same two readers, over a plain address, for the destructor (indexing
    # makes a separate function object, so argtypes do not clash).
    api.pointer_at = api["PyCapsule_GetPointer"]
    api.pointer_at.restype, api.pointer_at.argtypes = c_void_p, [c_void_p, ctypes.c_char_p]
    api.context_at = api["PyCapsule_GetContext"]
    api.context_at.restype, api.context_at.argtypes = c_void_p, [c_void_p]
    return api


@pytest.fixture(scope="module")
def lib():
    lib = load_hurray()
    assert lib.hurray_c_abi_version() == HURRAY_C_ABI_VERSION
    return lib


@pytest.fixture(scope="module")
def api():
    return load_capsule_api()


def ok(status, lib):
    assert status == HURRAY_OK, lib.hurray_last_error_message().decode()


# ---- a C-ABI consumer of a hurray-python capsule ---------------------------


def test_c_abi_consumer_reads_version_descriptor_and_producer_memory(lib, api):
    source = np.arange(12, dtype=np.float32).reshape(3, 4)
    source_ref = weakref.ref(source)
    producer = hurray.from_numpy(source)
    capsule = producer.__hurray__()
    del producer, source  # from here only the capsule keeps the memory alive
    gc.collect()
    assert source_ref() is not None

    assert api.PyCapsule_GetName(capsule) == NAME
    ctx = api.PyCapsule_GetContext(capsule)
    assert ctx, "the capsule context must be set"

    # 1. The ABI version, first, through the C call.
    version = c_uint32(0)
    ok(lib.hurray_tensor_context_abi_version(ctx, ctypes.byref(version)), lib)
    assert version.value == CONTEXT_WITHOUT_MAX_VERSION
    # ... which reads the frozen header: magic, then version.
    assert struct.unpack("<II", ctypes.string_at(ctx, 8)) == (HURRAY_TENSOR_CONTEXT_MAGIC, 4)
    assert struct.unpack("<II", ctypes.string_at(api.PyCapsule_GetContext(hurray.from_numpy(
        np.zeros(1)).__hurray__(max_version=5)), 8)) == (HURRAY_TENSOR_CONTEXT_MAGIC, 5)

    # 2. The descriptor bytes; check them by hand against the layer-4 encoding.
    data, length = c_void_p(), c_uint64()
    ok(lib.hurray_tensor_context_descriptor(ctx, ctypes.byref(data), ctypes.byref(length)), lib)
    raw = ctypes.string_at(data.value, length.value)
    assert raw[:4] == b"HRYD"
    assert struct.unpack_from("<H", raw, 6)[0] == len(raw)
    rank = raw[8]
    assert rank == 2
    assert struct.unpack_from("<2Q", raw, 32) == (3, 4)
    assert struct.unpack_from("<2q", raw, 48) == (4, 1)
    role, dtype = raw[64], raw[65]
    assert (role, dtype) == (1, HURRAY_DTYPE_FLOAT32)

    # ... and decode them with the C library.
    desc = c_void_p()
    ok(lib.hurray_descriptor_decode(raw, len(raw), ctypes.byref(desc)), lib)
    u32 = c_uint32()
    ok(lib.hurray_descriptor_dtype(desc, ctypes.byref(u32)), lib)
    assert u32.value == HURRAY_DTYPE_FLOAT32
    shape = P(c_uint64)()
    ok(lib.hurray_descriptor_shape(desc, ctypes.byref(shape)), lib)
    assert (shape[0], shape[1]) == (3, 4)

    # 3. The buffer list: the capsule pointer.
    lst = api.PyCapsule_GetPointer(capsule, NAME)
    assert lst
    ok(lib.hurray_descriptor_check_buffers(desc, lst), lib)
    lib.hurray_descriptor_destroy(ctypes.byref(desc))
    assert desc.value is None
    count = c_uint64()
    ok(lib.hurray_buffer_list_len(lst, ctypes.byref(count)), lib)
    assert count.value == 1
    buf = c_void_p()
    ok(lib.hurray_buffer_list_get(lst, 0, ctypes.byref(buf)), lib)
    ptr, nbytes = c_void_p(), c_uint64()
    ok(lib.hurray_buffer_data(buf, ctypes.byref(ptr), ctypes.byref(nbytes)), lib)
    alive = source_ref()
    assert ptr.value == alive.ctypes.data, "the buffer must be the producer's own memory"
    assert nbytes.value == alive.nbytes == 48
    seen = (ctypes.c_float * 12).from_address(ptr.value)
    assert list(seen) == list(range(12))
    seen[5] = -1.5  # no copy anywhere: the write shows in the producer
    assert alive[1, 1] == -1.5
    del alive, seen

    # 4. Take ownership as DLPack consumers do: rename, then own both handles.
    assert api.PyCapsule_SetName(capsule, USED_NAME) == 0
    del capsule
    gc.collect()
    assert source_ref() is not None, "the list and context still hold the producer"
    # Destroy from Python threads that do not hold the GIL (ctypes releases
    # it), context first, to show neither handle depends on the other.
    box_ctx = c_void_p(ctx)
    t = threading.Thread(target=lib.hurray_tensor_context_destroy, args=(ctypes.byref(box_ctx),))
    t.start()
    t.join()
    assert box_ctx.value is None
    gc.collect()
    assert source_ref() is not None, "the buffer still holds the producer"
    box_list = c_void_p(lst)
    lib.hurray_buffer_list_destroy(ctypes.byref(box_list))
    assert box_list.value is None
    gc.collect()
    assert source_ref() is None, "every reference the capsule held has been dropped"


def test_c_abi_consumer_can_refuse_and_leave_the_capsule(lib, api):
    source = np.ones(4, dtype=np.int16)
    source_ref = weakref.ref(source)
    capsule = hurray.from_numpy(source).__hurray__()
    del source
    ctx = api.PyCapsule_GetContext(capsule)
    version = c_uint32()
    ok(lib.hurray_tensor_context_abi_version(ctx, ctypes.byref(version)), lib)
    # Refusing means touching nothing: the capsule's own destructor frees it.
    del capsule
    gc.collect()
    assert source_ref() is None


# ---- a C-ABI producer, hurray-python as the consumer ------------------------


class ForeignProducer:
    """A producer that speaks only the C ABI: it builds the buffer list and the
    context with libhurray and hands out a capsule whose destructor follows
    the protocol (free only while the name is still "hurray_tensor")."""

    def __init__(self, lib, api, array, descriptor):
        self.lib, self.api = lib, api
        self.array = array
        self.descriptor = descriptor
        self.releases = []  # one entry per release callback, by handle kind
        self._callbacks = {kind: RELEASE(lambda _owner, kind=kind: self.releases.append(kind))
                           for kind in ("buffer", "context")}
        self._destructor = CAPSULE_DESTRUCTOR(self._destroy_capsule)

    def _destroy_capsule(self, capsule_address):
        if not self.api.PyCapsule_IsValid(capsule_address, NAME):
            return  # consumed: the consumer owns the handles now
        lst = c_void_p(self.api.pointer_at(capsule_address, NAME))
        ctx = c_void_p(self.api.context_at(capsule_address))
        self.lib.hurray_buffer_list_destroy(ctypes.byref(lst))
        self.lib.hurray_tensor_context_destroy(ctypes.byref(ctx))

    def __hurray__(self):
        lib = self.lib
        lst, buf, ctx = c_void_p(), c_void_p(), c_void_p()
        ok(lib.hurray_buffer_list_new(ctypes.byref(lst)), lib)
        ok(lib.hurray_buffer_from_ptr(self.array.ctypes.data, self.array.nbytes,
                                      self._callbacks["buffer"], None, ctypes.byref(buf)), lib)
        ok(lib.hurray_buffer_list_push(lst, ctypes.byref(buf)), lib)
        ok(lib.hurray_tensor_context_new(HURRAY_C_ABI_VERSION, self.descriptor, len(self.descriptor),
                                         None, self._callbacks["context"], ctypes.byref(ctx)), lib)
        capsule = self.api.PyCapsule_New(lst.value, NAME, self._destructor)
        assert self.api.PyCapsule_SetContext(capsule, ctx.value) == 0
        return capsule


def int16_vector_descriptor(n):
    return spec_bytes(HURRAY_DTYPE_INT16, (n,), (1,))


def test_hurray_python_consumes_a_c_abi_producer(lib, api):
    array = np.arange(10, dtype=np.int16)
    producer = ForeignProducer(lib, api, array, int16_vector_descriptor(10))
    tensor = hurray.from_hurray(producer)
    assert tensor.shape == (10,) and tensor.dtype == "int16"
    view = np.asarray(tensor)
    assert view.ctypes.data == array.ctypes.data
    np.testing.assert_array_equal(view, array)
    assert producer.releases == []
    del tensor
    gc.collect()
    assert producer.releases == [], "the numpy view keeps the consumer's handles alive"
    del view
    gc.collect()
    # list first, then context; each exactly once
    assert producer.releases == ["buffer", "context"]


def test_refused_c_abi_capsule_is_freed_by_its_producer(lib, api):
    array = np.arange(4, dtype=np.int16)
    producer = ForeignProducer(lib, api, array, int16_vector_descriptor(5))  # one too many
    capsule = producer.__hurray__()
    with pytest.raises(hurray.HurrayError, match="BUFFER_TOO_SMALL"):
        hurray.from_hurray(capsule)
    assert api.PyCapsule_GetName(capsule) == NAME
    assert producer.releases == []
    del capsule
    gc.collect()
    assert producer.releases == ["buffer", "context"]
