"""DLPack both ways: hurray -> numpy / PyTorch and back, lifetimes, refusals.

Hand-made capsules (built with ctypes below) cover what no real producer
sends: foreign devices, vector lanes, unknown codes, other major versions.
"""
import ctypes
import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import ml_dtypes
import numpy as np
import pytest
import torch

import hurray
from hurray import _dlpack
from hurray.core.descriptor import Descriptor, Part
from hurray.bridges.dlpack import DLPackError, from_dlpack
from hurray.errors import CapsuleError, HurrayError, UnsupportedError
from hurray.bridges.numpy import from_numpy
from hurray.core.tensor import Tensor

# ---- ctypes mirror of the DLPack structs, to read and forge capsules ----


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [
        ("major", ctypes.c_uint32),
        ("minor", ctypes.c_uint32),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
        ("flags", ctypes.c_uint64),
        ("dl_tensor", DLTensor),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


# A private handle: ctypes.pythonapi's function objects are shared by every
# module, and another test's restype would change these.
_api = ctypes.PyDLL(None)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_GetName.restype = ctypes.c_char_p
_api.PyCapsule_GetName.argtypes = [ctypes.py_object]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetPointer.argtypes = [ctypes.py_object, ctypes.c_void_p]

# Capsule names must outlive the capsules: module-level constants.
_VERSIONED = ctypes.c_char_p(b"dltensor_versioned")
_LEGACY = ctypes.c_char_p(b"dltensor")
_OTHER = ctypes.c_char_p(b"not_dlpack")

FLAG_READ_ONLY, FLAG_IS_COPIED, FLAG_PADDED = 1, 2, 4


def capsule_name(capsule):
    return _api.PyCapsule_GetName(capsule).decode()


def read_capsule(capsule):
    """(managed struct or None, DLTensor) of a DLPack capsule, via ctypes."""
    name = capsule_name(capsule)
    ptr = _api.PyCapsule_GetPointer(capsule, name.encode())
    if "versioned" in name:
        managed = DLManagedTensorVersioned.from_address(ptr)
        return managed, managed.dl_tensor
    return None, DLManagedTensor.from_address(ptr).dl_tensor


class Forged:
    """A hand-made DLPack capsule over `memory` (or at address `data`), counting its deleter's calls.

    The capsule has no destructor: only a consumer calls the deleter, so
    `deleted` shows exactly what the consumer did.
    """

    def __init__(self, memory, shape, strides, code, bits, *, lanes=1, device=(1, 0),
                 version=(1, 1), flags=0, byte_offset=0, versioned=True, ndim=None,
                 null_shape=False, name=None, data=None):
        self.memory = memory
        self.deleted = 0
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self.deleter = DELETER(self._delete)
        if versioned:
            self.managed = DLManagedTensorVersioned()
            self.managed.major, self.managed.minor = version
            self.managed.flags = flags
        else:
            self.managed = DLManagedTensor()
        self.managed.deleter = ctypes.cast(self.deleter, ctypes.c_void_p).value
        t = self.managed.dl_tensor
        t.data = data if data is not None else memory.ctypes.data if memory is not None else None
        t.device = DLDevice(*device)
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = DLDataType(code, bits, lanes)
        t.shape = None if null_shape else self.shape
        if self.strides is not None:
            t.strides = self.strides
        t.byte_offset = byte_offset
        label = name if name is not None else (_VERSIONED if versioned else _LEGACY)
        self.capsule = _api.PyCapsule_New(ctypes.addressof(self.managed), label, None)

    def _delete(self, ptr):
        assert ptr == ctypes.addressof(self.managed)
        self.deleted += 1

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (self.managed.dl_tensor.device.device_type, self.managed.dl_tensor.device.device_id)


class Producer:
    """Wraps an object, recording the keywords from_dlpack passes to __dlpack__."""

    def __init__(self, inner, device=(1, 0), accepts_keywords=True):
        self.inner = inner
        self.device = device
        self.accepts_keywords = accepts_keywords
        self.calls = []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        if kwargs and not self.accepts_keywords:
            raise TypeError("__dlpack__() got an unexpected keyword argument")
        return self.inner.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.device


class CapsuleHolder:
    """Hands a ready capsule to a consumer's from_dlpack."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def address(x):
    if isinstance(x, torch.Tensor):
        return x.data_ptr()
    if isinstance(x, np.ndarray):
        return x.__array_interface__["data"][0]
    d = x.descriptor
    return x.buffers[d.parts["values"].buffer_index][0] + d.parts["values"].byte_offset


# ---- the C module alone -------------------------------------------------


def test_c_export_wraps_memory_and_holds_its_owner():
    a = np.arange(6, dtype=np.int32).reshape(2, 3)
    before = sys.getrefcount(a)
    capsule = _dlpack.export(a, a.ctypes.data, 0, 32, (2, 3), (3, 1), 0, True)
    assert capsule_name(capsule) == "dltensor_versioned"
    assert sys.getrefcount(a) == before + 1
    managed, t = read_capsule(capsule)
    assert (managed.major, managed.minor, managed.flags) == (1, 1, 0)
    assert t.data == a.ctypes.data and t.byte_offset == 0
    assert (t.device.device_type, t.device.device_id, t.ndim) == (1, 0, 2)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 32, 1)
    assert list(t.shape[0:2]) == [2, 3] and list(t.strides[0:2]) == [3, 1]
    del managed, t
    del capsule  # never consumed: the capsule's destructor runs the deleter
    assert sys.getrefcount(a) == before


def test_c_export_legacy_form():
    a = np.arange(3, dtype=np.float64)
    capsule = _dlpack.export(a, a.ctypes.data, 2, 64, (3,), (1,), 0, False)
    assert capsule_name(capsule) == "dltensor"
    _, t = read_capsule(capsule)
    assert (t.dtype.code, t.dtype.bits) == (2, 64) and t.data == a.ctypes.data
    with pytest.raises(ValueError, match="legacy DLPack capsule has no flags"):
        _dlpack.export(a, a.ctypes.data, 2, 64, (3,), (1,), 1, False)


def test_c_export_checks_its_arguments():
    a = np.zeros(1)
    with pytest.raises(ValueError, match="strides has 1 entries, shape has 2"):
        _dlpack.export(a, a.ctypes.data, 2, 64, (1, 1), (1,), 0, True)
    with pytest.raises(DLPackError, match="rank 65 is above 64"):
        _dlpack.export(a, a.ctypes.data, 2, 64, (1,) * 65, (1,) * 65, 0, True)


def test_c_inspect_reads_without_taking():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[::-1, ::2]
    capsule = a.__dlpack__(max_version=(1, 0))
    info = _dlpack.inspect(capsule)
    versioned, major, _minor, flags, dev, dev_id, code, bits, lanes, data, offset, shape, strides, managed = info
    assert managed == _api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
    assert versioned and major == 1 and flags == 0 and (dev, dev_id) == (1, 0)
    assert (code, bits, lanes) == (2, 32, 1)
    assert data + offset == address(a)
    assert shape == (3, 2) and strides == (-4, 2)
    assert capsule_name(capsule) == "dltensor_versioned"  # still the producer's


def test_c_take_renames_and_owner_calls_deleter_once():
    forged = Forged(np.arange(4, dtype=np.uint8), (4,), (1,), 1, 8)
    info = _dlpack.inspect(forged.capsule)
    owner = _dlpack.take(forged.capsule, info[13], info[9])
    assert capsule_name(forged.capsule) == "used_dltensor_versioned"
    assert forged.deleted == 0 and not owner.released and owner.versioned
    with pytest.raises(CapsuleError, match="already consumed"):
        _dlpack.take(forged.capsule, info[13], info[9])
    with pytest.raises(CapsuleError, match="already consumed"):
        _dlpack.inspect(forged.capsule)
    ref = weakref.ref(owner)
    del owner
    assert ref() is None and forged.deleted == 1


def test_c_take_refuses_a_changed_capsule():
    forged = Forged(np.arange(4, dtype=np.uint8), (4,), (1,), 1, 8)
    managed = ctypes.addressof(forged.managed)
    with pytest.raises(CapsuleError, match="changed"):
        _dlpack.take(forged.capsule, managed, forged.memory.ctypes.data + 1)
    assert capsule_name(forged.capsule) == "dltensor_versioned" and forged.deleted == 0


def test_c_take_refuses_a_swapped_capsule_pointer():
    # Another managed struct over the same data: the same data address, but
    # not the struct inspect() read, nor its deleter.
    memory = np.arange(4, dtype=np.uint8)
    first, second = Forged(memory, (4,), (1,), 1, 8), Forged(memory, (4,), (1,), 1, 8)
    info = _dlpack.inspect(first.capsule)
    assert _api.PyCapsule_SetPointer(first.capsule, ctypes.addressof(second.managed)) == 0
    with pytest.raises(CapsuleError, match="changed"):
        _dlpack.take(first.capsule, info[13], info[9])
    assert capsule_name(first.capsule) == "dltensor_versioned"
    assert first.deleted == 0 and second.deleted == 0


def test_c_deleter_takes_the_gil_itself():
    """A consumer may call the deleter without the GIL (ctypes releases it)."""
    tensor = from_numpy(np.arange(5, dtype=np.int64))
    before = sys.getrefcount(tensor)
    capsule = tensor.__dlpack__(max_version=(1, 1))
    assert sys.getrefcount(tensor) == before + 1
    ptr = _api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
    managed = DLManagedTensorVersioned.from_address(ptr)
    deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(managed.deleter)
    _api.PyCapsule_SetName(ctypes.py_object(capsule), _USED)  # the consumer took it
    del managed
    released = _dlpack._owner_counters()[0]
    worker = threading.Thread(target=deleter, args=(ptr,))
    worker.start()
    worker.join()
    assert sys.getrefcount(tensor) == before
    del capsule  # renamed: its destructor must not call the deleter again
    assert sys.getrefcount(tensor) == before
    assert _dlpack._owner_counters()[0] == released + 1


_USED = ctypes.c_char_p(b"used_dltensor_versioned")


# ---- Tensor -> numpy ------------------------------------------------------

NUMPY_TYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_numpy_consumes_every_numpy_type(dtype):
    source = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    tensor = from_numpy(source)
    out = np.from_dlpack(tensor)
    assert out.dtype == source.dtype
    np.testing.assert_array_equal(out, source)
    assert address(out) == address(source)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a,
        lambda a: a[:, ::2],
        lambda a: a.T,
        lambda a: a[::-1],
        lambda a: a[::-2, ::-3],
        lambda a: a[:0],
        lambda a: a[1, 2, ...],  # 0-d view
        lambda a: a[:, 1:2],
    ],
    ids=["contiguous", "strided", "transposed", "negative", "negative-both", "zero-size", "0-d", "column"],
)
def test_numpy_consumes_views_zero_copy(view):
    base = np.arange(40, dtype=np.float32).reshape(5, 8)
    source = view(base)
    out = np.from_dlpack(from_numpy(source))
    assert out.shape == source.shape
    np.testing.assert_array_equal(out, source)
    if source.size:
        assert out.strides == source.strides
        assert address(out) == address(source)
        out[(0,) * out.ndim] = -1.0  # the same memory: visible through the source
        assert source[(0,) * source.ndim] == -1.0


def assert_kept_alive_then_let_go(make_tensor, take, check):
    """take(tensor)'s result keeps the tensor alive, and lets it go once dropped.

    The tensor is made here, so that no frame of the caller holds it.
    """
    tensor = make_tensor()
    ref = weakref.ref(tensor)
    out = take(tensor)
    del tensor
    gc.collect()
    assert ref() is not None
    check(out)
    del out
    gc.collect()
    assert ref() is None


def test_numpy_keeps_the_tensor_alive_then_lets_it_go():
    assert_kept_alive_then_let_go(
        lambda: from_numpy(np.arange(8, dtype=np.int16)),
        np.from_dlpack,
        lambda out: np.testing.assert_array_equal(out, np.arange(8, dtype=np.int16)),
    )


def test_unconsumed_capsule_releases_the_tensor():
    tensor = from_numpy(np.arange(3))
    before = sys.getrefcount(tensor)
    for version in (None, (1, 0), (1, 1)):
        capsule = tensor.__dlpack__(max_version=version)
        assert sys.getrefcount(tensor) == before + 1
        del capsule
        assert sys.getrefcount(tensor) == before


@pytest.mark.parametrize("version", [None, (1, 1)], ids=["legacy", "versioned"])
def test_pending_exception_survives_capsule_destruction(version):
    # The failing subscript drops its index -- the capsule's last reference --
    # while the TypeError is set; a destructor that lost it would leave
    # "SystemError: error return without exception set".
    tensor = from_numpy(np.arange(3))
    before = sys.getrefcount(tensor)
    with pytest.raises(TypeError, match="list indices must be"):
        [][tensor.__dlpack__(max_version=version)]
    assert sys.getrefcount(tensor) == before  # and the deleter did run


def test_pending_exception_survives_owner_destruction():
    # The consumer side: the tensor and its Owner go while the TypeError is
    # set, and the Owner calls the producer's deleter.
    forged = Forged(np.arange(4, dtype=np.uint8), (4,), (1,), 1, 8)
    with pytest.raises(TypeError, match="list indices must be"):
        [][from_dlpack(forged)]
    assert forged.deleted == 1


def dl_counters():
    """(released, leaked) owner references of this module's capsules so far."""
    gc.collect()
    return _dlpack._owner_counters()


# The DLPack consumers the lifetime tests hand hurray tensors to, by name.
CONSUMERS = {"numpy": np.from_dlpack, "torch": torch.from_dlpack}


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_each_export_is_released_exactly_once(consumer):
    take = CONSUMERS[consumer]
    tensor = from_numpy(np.arange(6, dtype=np.float32))
    refs = sys.getrefcount(tensor)
    before = dl_counters()
    outs = [take(tensor) for _ in range(5)]
    assert dl_counters() == before  # taken, not released
    assert sys.getrefcount(tensor) == refs + 5
    del outs[:2]
    assert dl_counters() == (before[0] + 2, before[1])
    del outs
    assert dl_counters() == (before[0] + 5, before[1])
    assert sys.getrefcount(tensor) == refs
    # An unconsumed capsule of each form, and a copy, release once too.
    for version in (None, (1, 1)):
        capsule = tensor.__dlpack__(max_version=version)
        del capsule
    take(CapsuleHolder(tensor.__dlpack__(max_version=(1, 1), copy=True)))  # dropped at once
    assert dl_counters() == (before[0] + 8, before[1])
    assert sys.getrefcount(tensor) == refs


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_deleter_keeps_a_pending_exception(consumer):
    # The consumer's tensor, and so the producer's deleter, goes while the
    # subscript's TypeError is set; the deleter drops the last reference to
    # the producer tensor with it pending.
    take = CONSUMERS[consumer]
    tensor = from_numpy(np.arange(6, dtype=np.float32))
    ref = weakref.ref(tensor)
    before = dl_counters()
    with pytest.raises(TypeError, match="(list indices|only integer)"):
        [][take(tensor)]
    assert dl_counters() == (before[0] + 1, before[1])
    del tensor
    assert ref() is None


def test_dlpack_device_is_cpu():
    assert from_numpy(np.zeros(2)).__dlpack_device__() == (1, 0)


def test_version_negotiation():
    tensor = from_numpy(np.arange(4, dtype=np.uint8))
    assert capsule_name(tensor.__dlpack__()) == "dltensor"
    assert capsule_name(tensor.__dlpack__(max_version=(0, 8))) == "dltensor"
    for version in ((1, 0), (1, 1), (1, 5), (2, 0)):
        capsule = tensor.__dlpack__(max_version=version)
        managed, _ = read_capsule(capsule)
        assert capsule_name(capsule) == "dltensor_versioned"
        assert (managed.major, managed.minor) == (1, 1)
    with pytest.raises(DLPackError, match="max_version must be"):
        tensor.__dlpack__(max_version="1.0")


def test_read_only_tensor_sets_the_flag():
    source = np.arange(4.0)
    source.flags.writeable = False
    tensor = from_numpy(source)
    managed, _ = read_capsule(tensor.__dlpack__(max_version=(1, 0)))
    assert managed.flags & FLAG_READ_ONLY
    out = np.from_dlpack(tensor)
    assert not out.flags.writeable
    with pytest.raises(DLPackError, match="read-only tensor in a legacy capsule"):
        tensor.__dlpack__()


def test_copy_true_gives_private_memory():
    source = np.arange(12, dtype=np.int32).reshape(3, 4)[::-1, 1::2]
    tensor = from_numpy(source)
    capsule = tensor.__dlpack__(max_version=(1, 1), copy=True)
    managed, t = read_capsule(capsule)
    assert managed.flags & FLAG_IS_COPIED
    assert t.data != address(source)
    del managed, t
    out = np.from_dlpack(CapsuleHolder(capsule))
    np.testing.assert_array_equal(out, source)
    out[0, 0] = 99
    assert source[0, 0] != 99


def test_stream_and_device_requests():
    tensor = from_numpy(np.zeros(2))
    assert capsule_name(tensor.__dlpack__(stream=None, dl_device=(1, 0), max_version=(1, 0)))
    assert capsule_name(tensor.__dlpack__(stream=-1))
    with pytest.raises(DLPackError, match="stream must be None"):
        tensor.__dlpack__(stream=7)
    with pytest.raises(DLPackError, match=r"\(kDLCUDA, 0\)"):
        tensor.__dlpack__(max_version=(1, 0), dl_device=(2, 0))


class Camera:
    """Owns its frame; its tensor's owner is the Camera itself."""

    def __init__(self):
        self.frame = np.arange(4, dtype=np.float32)
        self.tensor = Tensor(from_numpy(self.frame).descriptor, [(self.frame.ctypes.data, 16)], owner=self)


@pytest.mark.parametrize("kept", ["capsule", "numpy", "torch"])
def test_reference_cycle_through_a_capsule_is_not_collected(kept):
    """As with numpy's DLPack, a deleter's reference is invisible to the
    cycle collector: a producer that keeps a capsule or a consumer of its
    own tensor leaks until that is dropped by hand (D-NB2, decision 11)."""
    camera = Camera()
    if kept == "capsule":
        camera.kept = camera.tensor.__dlpack__(max_version=(1, 1))
    else:
        camera.kept = CONSUMERS[kept](camera.tensor)
    ref = weakref.ref(camera)
    before = dl_counters()
    del camera
    gc.collect()
    assert ref() is not None and dl_counters() == before
    ref().kept = None
    gc.collect()
    assert ref() is None and dl_counters() == (before[0] + 1, before[1])


# ---- Tensor -> PyTorch -------------------------------------------------

TORCH_ML = [
    ("bfloat16", ml_dtypes.bfloat16, torch.bfloat16),
    ("float8_e4m3fn", ml_dtypes.float8_e4m3fn, torch.float8_e4m3fn),
    ("float8_e5m2", ml_dtypes.float8_e5m2, torch.float8_e5m2),
    ("float16", np.float16, torch.float16),
    ("int64", np.int64, torch.int64),
    ("bool", np.bool_, torch.bool),
    ("complex64", np.complex64, torch.complex64),
]


@pytest.mark.parametrize("name,np_type,torch_type", TORCH_ML, ids=[t[0] for t in TORCH_ML])
def test_torch_consumes_hurray(name, np_type, torch_type):
    values = (np.arange(12) % 5).astype(np.float32).reshape(3, 4)
    source = values.astype(np_type)
    tensor = from_numpy(source)
    assert tensor.dtype == name
    out = torch.from_dlpack(tensor)
    assert out.dtype == torch_type and tuple(out.shape) == (3, 4)
    assert out.data_ptr() == address(source)
    if torch_type.is_floating_point:
        np.testing.assert_array_equal(out.to(torch.float64).numpy(), values)
    else:
        np.testing.assert_array_equal(out.numpy(), source)


def test_torch_consumes_strided_views_and_shares_memory():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    source = base[1:, ::2].T
    out = torch.from_dlpack(from_numpy(source))
    assert out.stride() == tuple(s // 4 for s in source.strides)
    assert out.data_ptr() == address(source)
    np.testing.assert_array_equal(out.numpy(), source)
    out[0, 0] = -5
    assert base[1, 0] == -5


def test_torch_consumes_zero_size_and_0d():
    empty = torch.from_dlpack(from_numpy(np.zeros((0, 3), dtype=np.float32)))
    assert tuple(empty.shape) == (0, 3)
    scalar = torch.from_dlpack(from_numpy(np.array(2.5, dtype=ml_dtypes.bfloat16)))
    assert scalar.dim() == 0 and scalar.dtype == torch.bfloat16 and scalar.item() == 2.5


def test_torch_keeps_the_tensor_alive_then_lets_it_go():
    def check(out):
        assert out.to(torch.float32).tolist() == [0, 1, 2, 3, 4, 5]

    assert_kept_alive_then_let_go(
        lambda: from_numpy(np.arange(6, dtype=ml_dtypes.float8_e4m3fn)), torch.from_dlpack, check
    )


# ---- numpy -> hurray -----------------------------------------------------


@pytest.mark.parametrize("dtype", NUMPY_TYPES)
def test_from_numpy_producer_every_type(dtype):
    source = (np.arange(12) % 3).astype(dtype).reshape(3, 4)
    tensor = from_dlpack(source)
    assert isinstance(tensor, Tensor)
    assert tensor.dtype == hurray.dtype_name(source.dtype)
    assert address(tensor) == address(source)
    np.testing.assert_array_equal(np.asarray(tensor), source)


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::2, 1:],
        lambda a: a[::-1],
        lambda a: a[:, ::-3],
        lambda a: a.T[::-1],
        lambda a: a[2:2],
        lambda a: a[3, 4, ...],
    ],
    ids=["strided", "negative", "negative-inner", "transposed-negative", "zero-size", "0-d"],
)
def test_from_numpy_producer_views(view):
    base = np.arange(60, dtype=np.int32).reshape(6, 10)
    source = view(base)
    tensor = from_dlpack(source)
    assert tensor.shape == source.shape
    assert tensor.strides == tuple(s // 4 for s in source.strides)
    back = np.asarray(tensor)
    np.testing.assert_array_equal(back, source)
    if source.size:
        assert address(tensor) == address(source)
        source[(0,) * source.ndim] = -7  # writes through the producer show in the tensor
        assert np.asarray(tensor)[(0,) * source.ndim] == -7


def test_from_numpy_producer_lifetime():
    source = np.arange(10, dtype=np.float64)
    ref = weakref.ref(source)
    tensor = from_dlpack(source)
    owner_ref = weakref.ref(tensor.owner)
    del source
    gc.collect()
    assert ref() is not None  # the producer stays while the tensor lives
    np.testing.assert_array_equal(np.asarray(tensor), np.arange(10.0))
    del tensor
    gc.collect()
    assert owner_ref() is None and ref() is None


def test_from_read_only_numpy_gives_a_read_only_tensor():
    source = np.arange(4, dtype=np.uint8)
    source.flags.writeable = False
    tensor = from_dlpack(source)
    assert tensor.readonly and tensor.owner.readonly
    assert not np.asarray(tensor).flags.writeable


def test_from_dlpack_asks_for_version_1_1_then_falls_back():
    source = np.arange(3, dtype=np.int8)
    modern = Producer(source)
    from_dlpack(modern)
    assert modern.calls == [{"max_version": (1, 1)}]
    old = Producer(source, accepts_keywords=False)
    tensor = from_dlpack(old)
    assert old.calls == [{"max_version": (1, 1)}, {}]
    assert not tensor.owner.versioned  # numpy's no-argument answer is a legacy capsule
    np.testing.assert_array_equal(np.asarray(tensor), source)


def test_from_dlpack_accepts_a_capsule():
    source = np.arange(5, dtype=np.uint16)
    capsule = source.__dlpack__()
    tensor = from_dlpack(capsule)
    assert capsule_name(capsule) == "used_dltensor"
    np.testing.assert_array_equal(np.asarray(tensor), source)
    with pytest.raises(CapsuleError, match="already consumed"):
        from_dlpack(capsule)


# ---- PyTorch -> hurray ---------------------------------------------------

TORCH_IN = [
    (torch.bfloat16, "bfloat16"),
    (torch.float8_e4m3fn, "float8_e4m3fn"),
    (torch.float8_e5m2, "float8_e5m2"),
    (torch.float32, "float32"),
    (torch.int16, "int16"),
    (torch.bool, "bool"),
    (torch.complex128, "complex128"),
]


@pytest.mark.parametrize("torch_type,name", TORCH_IN, ids=[n for _, n in TORCH_IN])
def test_from_torch(torch_type, name):
    values = torch.arange(12, dtype=torch.float32).reshape(3, 4) % 4
    source = values.to(torch_type)
    tensor = from_dlpack(source)
    assert tensor.dtype == name and tensor.shape == (3, 4)
    assert address(tensor) == source.data_ptr()
    expected = values.numpy().astype(hurray.numpy_dtype(name))
    np.testing.assert_array_equal(np.asarray(tensor), expected)


def test_from_torch_strided_zero_size_and_0d():
    base = torch.arange(30, dtype=torch.bfloat16).reshape(5, 6)
    view = base[1:, ::2].t()
    tensor = from_dlpack(view)
    assert tensor.strides == view.stride() and address(tensor) == view.data_ptr()
    np.testing.assert_array_equal(np.asarray(tensor).astype(np.float32), view.float().numpy())
    base[1, 0] = 99  # the same memory
    assert float(np.asarray(tensor)[0, 0]) == 99.0

    empty = from_dlpack(torch.zeros((4, 0), dtype=torch.float8_e5m2))
    assert empty.shape == (4, 0) and np.asarray(empty).shape == (4, 0)
    scalar = from_dlpack(torch.tensor(1.5, dtype=torch.float8_e4m3fn))
    assert scalar.shape == () and float(np.asarray(scalar)) == 1.5


def test_from_torch_lifetime():
    source = torch.arange(8, dtype=torch.float32)
    assert source._use_count() == 1
    tensor = from_dlpack(source)
    assert source._use_count() == 2  # the capsule's hold on the ATen tensor
    owner_ref = weakref.ref(tensor.owner)
    del tensor
    gc.collect()
    assert owner_ref() is None and source._use_count() == 1


def test_round_trip_through_torch_keeps_the_pointer():
    source = np.arange(16, dtype=ml_dtypes.bfloat16).reshape(4, 4)[:, 1::2]
    first = from_numpy(source)
    again = from_dlpack(torch.from_dlpack(first))
    assert again.descriptor == first.descriptor
    assert address(again) == address(source)


# ---- sub-byte elements ---------------------------------------------------


def test_padded_int4_crosses_with_the_padded_flag():
    source = np.array([-8, -1, 0, 7, 3, -2], dtype=ml_dtypes.int4).reshape(2, 3)
    tensor = from_numpy(source)
    assert tensor.descriptor.packing == "padded"
    capsule = tensor.__dlpack__(max_version=(1, 1))
    managed, t = read_capsule(capsule)
    assert managed.flags & FLAG_PADDED and (t.dtype.code, t.dtype.bits) == (0, 4)
    del managed, t
    back = from_dlpack(capsule)
    assert back.descriptor.packing == "padded" and back.dtype == "int4"
    assert address(back) == address(source)
    np.testing.assert_array_equal(np.asarray(back), source)


@pytest.mark.parametrize("version", [None, (1, 0)])
def test_padded_sub_byte_needs_dlpack_1_1(version):
    tensor = from_numpy(np.zeros(4, dtype=ml_dtypes.float4_e2m1fn))
    with pytest.raises(DLPackError, match=r"padded float4_e2m1fn storage .*IS_SUBBYTE_TYPE_PADDED"):
        tensor.__dlpack__(max_version=version)


def test_packed_uint4_uses_dlpack_bit_order():
    # Element 0 in the low nibble of byte 0: DLPack's packed order is lsb_first.
    memory = np.array([0x21, 0x43, 0x65], dtype=np.uint8)
    desc = Descriptor.build("uint4", (6,), packing="lsb_first")
    tensor = Tensor(desc, [(memory.ctypes.data, 3)], owner=memory)
    capsule = tensor.__dlpack__()
    _, t = read_capsule(capsule)
    assert (t.dtype.code, t.dtype.bits, t.data) == (1, 4, memory.ctypes.data)
    del t
    back = from_dlpack(capsule)
    assert back.descriptor.packing == "lsb_first"
    np.testing.assert_array_equal(back.unpack().astype(np.uint8), [1, 2, 3, 4, 5, 6])


def test_import_packed_uint2_with_negative_stride():
    # 2-bit fields from the low bits: byte 0 holds 0, 1, 2, 3; byte 1 holds 3 first.
    memory = np.array([0b11100100, 0b00011011], dtype=np.uint8)
    # Element 0 at bit 0 of byte 1; stride -1 walks down through byte 0.
    forged = Forged(memory, (5,), (-1,), 1, 2, byte_offset=1)
    tensor = from_dlpack(forged)
    assert tensor.descriptor.packing == "lsb_first"
    assert tensor.buffers[0] == (memory.ctypes.data, 2)  # the span starts one byte early
    assert tensor.descriptor.parts["values"].byte_offset == 1
    np.testing.assert_array_equal(tensor.unpack().astype(np.uint8), [3, 3, 2, 1, 0])
    del tensor
    gc.collect()
    assert forged.deleted == 1


def test_import_padded_float6_and_refuse_packed_float6():
    memory = np.arange(4, dtype=np.uint8)
    padded = Forged(memory, (4,), (1,), 15, 6, flags=FLAG_PADDED)
    tensor = from_dlpack(padded)
    assert tensor.dtype == "float6_e2m3fn" and tensor.descriptor.packing == "padded"
    packed = Forged(memory, (4,), (1,), 16, 6)
    with pytest.raises(DLPackError, match="packed 6-bit float6_e3m2fn elements"):
        from_dlpack(packed)
    assert packed.deleted == 0 and capsule_name(packed.capsule) == "dltensor_versioned"


# ---- refusals: export -----------------------------------------------------


def _quantized(scheme, granularity, parts, **kw):
    memory = np.zeros(64, dtype=np.uint8)
    desc = Descriptor.build("int8", (4, 2), scheme=scheme, granularity=granularity, parts=parts, **kw)
    spans = [(memory.ctypes.data, 64)] * desc.buffer_count
    return Tensor(desc, spans, owner=memory)


def test_refuse_affine_per_axis():
    tensor = _quantized(
        "affine", "per_axis",
        {"values": Part("int8", 0, 0), "scale": Part("float32", 1, 0), "zero_point": Part("int8", 2, 0)},
        axis=0,
    )
    for version in (None, (1, 1)):
        with pytest.raises(DLPackError, match=r"affine per_axis quantization \(scale, zero_point buffers\)") as exc:
            tensor.__dlpack__(max_version=version)
        assert isinstance(exc.value, HurrayError) and isinstance(exc.value, BufferError)
    with pytest.raises(DLPackError, match="affine per_axis"):
        torch.from_dlpack(tensor)


def test_refuse_ggml_blocks():
    memory = np.zeros(18, dtype=np.uint8)
    desc = Descriptor.build("uint8", (32,), scheme="ggml", ggml_type="q4_0")
    tensor = Tensor(desc, [(memory.ctypes.data, 18)], owner=memory)
    with pytest.raises(DLPackError, match="ggml q4_0 block quantization"):
        tensor.__dlpack__(max_version=(1, 1))


def test_refuse_ggml_split_packing():
    memory = np.zeros(16, dtype=np.uint8)
    desc = Descriptor.build("int4", (32,), packing="ggml_split")
    tensor = Tensor(desc, [(memory.ctypes.data, 16)], owner=memory)
    with pytest.raises(DLPackError, match="packed 4-bit ggml_split order"):
        tensor.__dlpack__(max_version=(1, 1))


def test_refuse_big_endian():
    tensor = from_numpy(np.arange(3, dtype=">f4"))
    with pytest.raises(DLPackError, match="big-endian byte order"):
        tensor.__dlpack__(max_version=(1, 1))
    with pytest.raises(DLPackError, match="big-endian byte order"):
        np.from_dlpack(tensor)
    # One-byte elements have no byte order to lose.
    memory = np.arange(3, dtype=np.int8)
    desc = Descriptor.build("int8", (3,), byte_order="big")
    np.testing.assert_array_equal(np.from_dlpack(Tensor(desc, [(memory.ctypes.data, 3)], owner=memory)), memory)


def test_refuse_bcomplex32():
    tensor = from_numpy(np.zeros(2, dtype=ml_dtypes.bcomplex32))
    with pytest.raises(DLPackError, match="bcomplex32 elements"):
        tensor.__dlpack__(max_version=(1, 1))


# ---- refusals: import -------------------------------------------------------


def _refused(forged, pattern):
    with pytest.raises(DLPackError, match=pattern):
        from_dlpack(forged.capsule)
    # Refused capsules are left untaken, for their producer to free.
    assert forged.deleted == 0 and capsule_name(forged.capsule) in ("dltensor", "dltensor_versioned")


def test_refuse_non_cpu_device():
    memory = np.zeros(4, dtype=np.float32)
    _refused(Forged(memory, (4,), (1,), 2, 32, device=(2, 0)), r"device \(kDLCUDA, 0\)")
    _refused(Forged(memory, (4,), (1,), 2, 32, device=(10, 1), versioned=False), r"device \(kDLROCM, 1\)")
    # A producer that says where it lives is refused before it is asked.
    producer = Producer(np, device=(2, 0))
    with pytest.raises(DLPackError, match=r"device \(kDLCUDA, 0\).*host memory"):
        from_dlpack(producer)
    assert producer.calls == []


@pytest.mark.parametrize("device", ["cpu", (1,), (1, 0, 0), None, ("one", 0), (1.5, 0), 7],
                         ids=["str", "short", "long", "none", "text-type", "float-type", "int"])
def test_refuse_a_bad_dlpack_device_answer(device):
    producer = Producer(np.arange(3), device=device)
    with pytest.raises(DLPackError, match=r"__dlpack_device__\(\) must return"):
        from_dlpack(producer)
    assert producer.calls == []  # refused before the capsule was asked for


def test_a_raising_dlpack_device_becomes_a_dlpack_error():
    class Broken:
        def __dlpack__(self, **kwargs):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            raise RuntimeError("no device today")

    with pytest.raises(DLPackError, match="__dlpack_device__ refused: no device today") as exc:
        from_dlpack(Broken())
    assert isinstance(exc.value.__cause__, RuntimeError)


def test_refuse_vector_lanes_and_unknown_types():
    memory = np.zeros(16, dtype=np.float32)
    _refused(Forged(memory, (4,), (1,), 2, 32, lanes=4), "4 lanes of kDLFloat 32-bit")
    _refused(Forged(memory, (4,), (1,), 3, 64), "kDLOpaqueHandle with 64 bits")
    _refused(Forged(memory, (4,), (1,), 2, 24), "kDLFloat with 24 bits")
    _refused(Forged(memory, (4,), (1,), 42, 8), "code 42 with 8 bits")
    _refused(Forged(memory, (4,), (1,), 4, 32), "kDLBfloat with 32 bits")


def test_refuse_other_major_version():
    memory = np.zeros(4, dtype=np.float32)
    _refused(Forged(memory, (4,), (1,), 2, 32, version=(2, 0)), "DLPack version 2.0")


def test_refuse_bad_shapes():
    memory = np.zeros(4, dtype=np.float32)
    _refused(Forged(memory, (4,), (1,), 2, 32, ndim=65), "rank 65; Hurray holds ranks 0 to 64")
    _refused(Forged(memory, (4,), (1,), 2, 32, ndim=-1), "rank -1")
    _refused(Forged(memory, (4,), (1,), 2, 32, null_shape=True), "rank 1 and no shape")
    _refused(Forged(memory, (-4,), (1,), 2, 32), "negative dimension")
    _refused(Forged(None, (4,), (1,), 2, 32), "NULL data pointer")


def test_refuse_spans_past_the_address_space_before_taking():
    # Each passes the type and shape checks; the span it would give ends at or
    # past 2**64. It must be refused before the capsule is taken, so the
    # producer's deleter is not called and the capsule keeps its name.
    top = 1 << 64
    _refused(Forged(None, (1,), (1,), 1, 8, data=top - 2, byte_offset=1), "address space")
    _refused(Forged(None, (0,), (1,), 1, 8, data=top - 1, byte_offset=1), "address space")
    _refused(Forged(None, (2,), (1,), 1, 8, data=top - 1), "address space")


def test_empty_tensor_with_null_data_ignores_byte_offset():
    # No element is read, and NULL plus an offset is not an address.
    forged = Forged(None, (0, 3), None, 2, 32, byte_offset=64)
    tensor = from_dlpack(forged)
    assert tensor.shape == (0, 3) and tensor.buffers == ((0, 0),)
    assert np.asarray(tensor).shape == (0, 3)
    del tensor
    gc.collect()
    assert forged.deleted == 1


def test_refuse_bad_capsules():
    with pytest.raises(CapsuleError, match="not_dlpack"):
        from_dlpack(Forged(np.zeros(1), (1,), (1,), 2, 64, name=_OTHER).capsule)
    with pytest.raises(DLPackError, match="int has no __dlpack__"):
        from_dlpack(3)
    assert issubclass(CapsuleError, HurrayError)


def test_producer_refusals_become_hurray_errors():
    with pytest.raises(DLPackError, match=r"ndarray.__dlpack__ refused") as exc:
        from_dlpack(np.zeros(3, dtype=ml_dtypes.bfloat16))  # numpy cannot export ml_dtypes
    assert isinstance(exc.value.__cause__, BufferError)


def test_legacy_strides_null_means_row_major():
    memory = np.arange(6, dtype=np.int16)
    forged = Forged(memory, (2, 3), None, 0, 16, versioned=False)
    tensor = from_dlpack(forged)
    assert tensor.strides == (3, 1)
    np.testing.assert_array_equal(np.asarray(tensor), memory.reshape(2, 3))
    assert not tensor.owner.versioned
    del tensor
    gc.collect()
    assert forged.deleted == 1


def _assert_read_only_array(array):
    assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 1
    with pytest.raises(ValueError, match="WRITEABLE"):
        array.flags.writeable = True  # and no way back to writable
    assert not array.flags.writeable


@pytest.mark.parametrize("source", ["forged", "numpy"])
def test_read_only_flag_is_kept_on_import_and_everywhere_after(source):
    memory = np.arange(4, dtype=np.uint8)
    if source == "forged":
        producer = Forged(memory, (4,), (1,), 1, 8, flags=FLAG_READ_ONLY)
    else:
        producer = memory.view()
        producer.flags.writeable = False
    tensor = from_dlpack(producer)
    assert tensor.readonly and tensor.owner.readonly
    # Every numpy view of it is read-only, for good.
    _assert_read_only_array(np.asarray(tensor))
    _assert_read_only_array(tensor.buffer(0))
    # The native protocol refuses it to a consumer of C ABI 4, which cannot be
    # told; a consumer of C ABI 5 gets it marked, read-only (ADR-059).
    with pytest.raises(UnsupportedError, match="read-only"):
        tensor.__hurray__()
    received = hurray.from_hurray(tensor)
    assert received.readonly
    _assert_read_only_array(np.asarray(received))
    # DLPack: a legacy capsule has no flag, so it is refused; a versioned one sets READ_ONLY.
    with pytest.raises(DLPackError, match="read-only tensor in a legacy capsule"):
        tensor.__dlpack__()
    managed, _ = read_capsule(tensor.__dlpack__(max_version=(1, 0)))
    assert managed.flags & FLAG_READ_ONLY
    del managed
    _assert_read_only_array(np.from_dlpack(tensor))
    again = from_dlpack(tensor)
    assert again.readonly and again.owner.readonly
    assert memory.tolist() == [0, 1, 2, 3]


def test_byte_offset_is_honoured_on_import():
    memory = np.arange(16, dtype=np.uint8)
    forged = Forged(memory, (2, 2), (4, 1), 1, 8, byte_offset=5)
    tensor = from_dlpack(forged)
    np.testing.assert_array_equal(np.asarray(tensor), [[5, 6], [9, 10]])


# ---- interpreter exit ------------------------------------------------------


def test_capsules_and_views_alive_at_exit_do_not_crash():
    script = textwrap.dedent(
        """
        import numpy as np, torch
        from hurray.bridges.numpy import from_numpy
        from hurray.bridges.dlpack import from_dlpack
        t = from_numpy(np.arange(8.0))
        KEEP = [t.__dlpack__(max_version=(1, 1)), t.__dlpack__(), np.from_dlpack(t),
                torch.from_dlpack(t), from_dlpack(torch.arange(3)), from_dlpack(np.arange(3))]
        KEEP.append(KEEP)  # a cycle, freed late in finalization
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


# A global whose finalizer runs during module teardown, when the interpreter
# is finalizing: there the deleters must leak their owner reference (counted)
# rather than touch Python. Everything it calls is bound as a default
# argument, since module globals may already be None.
FINALIZING_SCRIPT = textwrap.dedent(
    """
    import os, sys
    import numpy as np, torch
    from hurray import _dlpack
    from hurray.bridges.numpy import from_numpy

    class DropsAtExit:
        def __init__(self):
            t = from_numpy(np.arange(8.0))
            self.held = [t.__dlpack__(max_version=(1, 1)), t.__dlpack__(),  # unconsumed
                         np.from_dlpack(t), torch.from_dlpack(t)]           # consumed

        def drop(self, counters=_dlpack._owner_counters):
            before = counters()
            self.held = None
            after = counters()
            return after[0] - before[0], after[1] - before[1]

        def __del__(self, write=os.write, finalizing=sys.is_finalizing):
            if self.held is not None:
                released, leaked = self.drop()
                write(1, f"exit finalizing={finalizing()} released={released} leaked={leaked}\\n".encode())

    released, leaked = DropsAtExit().drop()
    os.write(1, f"alive released={released} leaked={leaked}\\n".encode())
    KEPT = DropsAtExit()
    """
)


def test_deleters_leak_during_finalization():
    result = subprocess.run([sys.executable, "-c", FINALIZING_SCRIPT], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.splitlines() == [
        "alive released=4 leaked=0",
        "exit finalizing=True released=0 leaked=4",
    ], result.stdout


def test_package_exports():
    assert hurray.from_dlpack is from_dlpack and hurray.DLPackError is DLPackError
    assert issubclass(DLPackError, HurrayError) and issubclass(DLPackError, BufferError)


# ---- legacy capsules: read-only, because they cannot say otherwise (ADR-037, decision 5) ----


def _legacy_numpy(memory):
    return memory.__dlpack__()  # numpy answers a call without max_version with "dltensor"


def _legacy_torch(memory):
    return torch.utils.dlpack.to_dlpack(torch.from_numpy(memory))  # always "dltensor"


@pytest.mark.parametrize("make_capsule", [_legacy_numpy, _legacy_torch], ids=["numpy", "torch"])
def test_legacy_capsule_of_writable_memory_gives_a_read_only_tensor(make_capsule):
    memory = np.arange(4, dtype=np.int32)
    assert memory.flags.writeable
    capsule = make_capsule(memory)
    assert capsule_name(capsule) == "dltensor"
    tensor = from_dlpack(capsule)
    assert not tensor.owner.versioned and not tensor.owner.readonly  # the producer set no flag...
    assert tensor.readonly  # ...and none could be set, so nothing may write through Hurray
    _assert_read_only_array(np.asarray(tensor))
    _assert_read_only_array(tensor.buffer(0))
    assert np.shares_memory(np.asarray(tensor), memory)  # still zero-copy
    # numpy makes the same choice for the same capsule.
    assert not np.from_dlpack(Producer(memory, accepts_keywords=False)).flags.writeable
    # The producer keeps its own rights; Hurray sees its writes.
    memory[0] = 7
    assert np.asarray(tensor)[0] == 7


def test_old_producer_without_max_version_gives_a_read_only_tensor():
    memory = np.arange(3, dtype=np.float32)
    tensor = from_dlpack(Producer(memory, accepts_keywords=False))
    assert not tensor.owner.versioned and tensor.readonly
    _assert_read_only_array(np.asarray(tensor))


@pytest.mark.parametrize("producer", ["numpy", "torch"])
def test_versioned_capsule_keeps_its_read_only_flag_semantics(producer):
    memory = np.arange(4, dtype=np.int32)
    source = memory if producer == "numpy" else torch.from_numpy(memory)
    writable = from_dlpack(source)  # asks for 1.1: a versioned capsule with no READ_ONLY flag
    assert writable.owner.versioned and not writable.readonly
    view = np.asarray(writable)
    assert view.flags.writeable
    view[1] = 42
    assert memory[1] == 42
    frozen = memory.view()
    frozen.flags.writeable = False
    tensor = from_dlpack(frozen)  # versioned, READ_ONLY set
    assert tensor.owner.versioned and tensor.owner.readonly and tensor.readonly


def test_forged_legacy_and_versioned_capsules_differ_only_by_what_they_can_say():
    memory = np.arange(4, dtype=np.uint8)
    legacy = from_dlpack(Forged(memory, (4,), (1,), 1, 8, versioned=False))
    versioned = from_dlpack(Forged(memory, (4,), (1,), 1, 8, flags=0))
    assert legacy.readonly and not versioned.readonly
    assert not np.asarray(legacy).flags.writeable and np.asarray(versioned).flags.writeable


def test_vendored_dlpack_header_is_whole_licensed_and_described():
    import os
    import re

    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "src", "hurray", "_ext", "third_party", "dlpack")
    with open(os.path.join(folder, "dlpack.h"), encoding="utf-8") as f:
        header = f.read()
    with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    with open(os.path.join(folder, "LICENSE"), encoding="utf-8") as f:
        license_text = f.read()
    major = re.search(r"#define DLPACK_MAJOR_VERSION (\d+)", header).group(1)
    minor = re.search(r"#define DLPACK_MINOR_VERSION (\d+)", header).group(1)
    assert f"version {major}.{minor}" in readme  # the note says which release this is
    assert major == str(_dlpack.DLPACK_MAJOR)
    assert "DLManagedTensorVersioned" in header and header.rstrip().endswith("#endif  // !defined(TORCH_STABLE_ONLY) && !defined(TORCH_TARGET_VERSION)")
    assert "Apache License" in license_text and "Version 2.0" in license_text and "END OF TERMS AND CONDITIONS" in license_text


def test_both_extensions_share_one_runtime():
    from hurray import _protocol

    capsule = np.arange(2).__dlpack__()
    assert _dlpack.CapsuleType is _protocol.CapsuleType is type(capsule)
    # Each extension counts its own releases (the runtime is compiled into each).
    before_dl, before_protocol = _dlpack._owner_counters(), _protocol._owner_counters()
    del capsule
    capsule = _dlpack.export(np.zeros(1), np.zeros(1).ctypes.data, 2, 64, (1,), (1,), 0, True)
    del capsule
    gc.collect()
    assert _dlpack._owner_counters()[0] == before_dl[0] + 1
    assert _protocol._owner_counters() == before_protocol
    # Refusals from C are the package's classes, raised the one way.
    with pytest.raises(DLPackError, match="rank 65 is above 64"):
        _dlpack.export(object(), 0, 2, 32, (1,) * 65, (1,) * 65, 0, True)
    with pytest.raises(CapsuleError, match="not a DLPack capsule"):
        _dlpack.inspect(hurray.from_numpy(np.zeros(1)).__hurray__())
