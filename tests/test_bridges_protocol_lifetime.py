"""Lifetimes across the native protocol (D-NB2).

The producer must live exactly as long as something needs its memory -- an
unconsumed capsule, the handles a consumer took, a consumer Tensor, a numpy
view of it -- and then die; every owner reference a capsule hands out must be
dropped exactly once, on whichever thread lets go, including a thread that
Python never saw.
"""
import collections
import ctypes
import gc
import queue
import threading
import weakref

import numpy as np
import pytest

import hurray
from hurray import _protocol
from hurray.bridges.protocol import from_hurray
from support.cbuild import build_installed

DEATHS = []  # one entry per Source that died; list.append is atomic
_DESCRIPTORS = {}  # descriptor bytes of C-contiguous arrays, by (dtype, shape)


class Source:
    """A producer that owns its memory and counts its own death."""

    __slots__ = ("array", "__weakref__")

    def __init__(self, array):
        self.array = array

    def __hurray__(self):
        # The capsule's owner is this object itself: one reference per
        # buffer and one for the context.
        a = self.array
        key = (a.dtype.str, a.shape)
        descriptor = _DESCRIPTORS.get(key)
        if descriptor is None:
            descriptor = _DESCRIPTORS[key] = hurray.from_numpy(a).descriptor.encode()
        return _protocol.export(descriptor, ((a.ctypes.data, a.nbytes),), self)

    def __del__(self):
        DEATHS.append(None)


def collected_counters():
    gc.collect()
    return _protocol._owner_counters()


def test_source_lives_exactly_as_long_as_it_is_needed():
    source = Source(np.arange(8, dtype=np.int32))
    ref = weakref.ref(source)
    array_ref = weakref.ref(source.array)
    capsule = source.__hurray__()
    del source
    gc.collect()
    assert ref() is not None, "an unconsumed capsule keeps the source"

    tensor = from_hurray(capsule)
    del capsule
    gc.collect()
    assert ref() is not None, "the consumer tensor keeps the source"

    view = np.asarray(tensor)
    part = tensor.buffer(0)[4:8]
    del tensor
    gc.collect()
    assert ref() is not None, "a numpy view keeps the source"
    np.testing.assert_array_equal(view, np.arange(8))
    del view
    gc.collect()
    assert ref() is not None, "a view of one buffer keeps the source"
    assert part.tolist() == [1, 0, 0, 0]
    del part
    gc.collect()
    assert ref() is None and array_ref() is None


def test_reference_cycle_through_a_consumer_is_collected():
    source = Source(np.zeros(3, dtype=np.float64))
    ref = weakref.ref(source)
    box = [from_hurray(source)]
    box.append(box)  # a cycle that holds the consumer tensor
    del source, box
    assert ref() is not None
    gc.collect()
    assert ref() is None


class KeepsThings(Source):
    """A Source that can keep what it hands out (its capsules hold it)."""

    __slots__ = ("kept",)


@pytest.mark.parametrize("kept", ["its own capsule", "a tensor consumed from it"])
def test_reference_cycle_through_a_capsule_is_not_collected(kept):
    """The known limitation of D-NB2 (decision 11): capsules and Holders are
    not tracked by the cycle collector, so a cycle through one leaks until
    it is broken by hand."""
    source = KeepsThings(np.zeros(3, dtype=np.float64))
    source.kept = source.__hurray__() if kept == "its own capsule" else from_hurray(source)
    ref = weakref.ref(source)
    before = collected_counters()
    del source
    gc.collect()
    assert ref() is not None, "the cycle is invisible to the collector"
    assert collected_counters() == before
    ref().kept = None  # broken by hand: everything is released, once
    gc.collect()
    assert ref() is None
    assert collected_counters() == (before[0] + 2, before[1])


def test_each_reference_released_exactly_once_by_each_handle():
    before = collected_counters()
    source = Source(np.ones(2, dtype=np.int8))
    capsule = source.__hurray__()
    assert collected_counters() == before
    del capsule  # unconsumed: the capsule destructor frees list then context
    assert collected_counters() == (before[0] + 2, before[1])
    t = from_hurray(source)
    assert collected_counters() == (before[0] + 2, before[1])
    holder = t.owner
    assert isinstance(holder, _protocol.Holder)
    holder_ref = weakref.ref(holder)
    del t, holder
    assert holder_ref() is None
    assert collected_counters() == (before[0] + 4, before[1])
    deaths = len(DEATHS)
    del source
    gc.collect()
    assert len(DEATHS) == deaths + 1


def test_many_threads_export_and_import_without_losing_a_release():
    threads, trips = 8, 10_000
    handoff = queue.Queue()  # tensors made on one thread, dropped on another
    errors = []
    start = threading.Barrier(threads)
    before = collected_counters()
    deaths_before = len(DEATHS)
    made = collections.Counter()

    def work(index):
        try:
            start.wait()
            for trip in range(trips):
                value = (index * trips + trip) % 120
                array = np.full(4, value, dtype=np.int8)
                source = Source(array)
                if trip % 10 == 9:
                    capsule = source.__hurray__()  # made, never consumed
                    del capsule, source
                    made[index] += 1
                    continue
                tensor = from_hurray(source)
                del source
                if np.asarray(tensor)[3] != value:
                    raise AssertionError(f"thread {index} trip {trip}: wrong memory")
                made[index] += 1
                handoff.put(tensor)
                del tensor
                try:
                    handoff.get_nowait()
                except queue.Empty:
                    pass
        except BaseException as exc:  # reported after the join
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[0]
    while not handoff.empty():
        handoff.get_nowait()
    total = threads * trips
    assert sum(made.values()) == total
    after = collected_counters()
    assert after[1] == before[1], "nothing may leak while the interpreter runs"
    # one buffer and one context per capsule, each released once
    assert after[0] - before[0] == 2 * total
    assert len(DEATHS) - deaths_before == total


# ---- release on a thread Python never saw ----------------------------------

HELPER_C = r"""
#include <pthread.h>
#include "hurray.h"

struct job { HurrayBufferList *list; HurrayTensorContext *ctx; };

static void *destroy_both(void *arg)
{
    struct job *job = arg;
    hurray_buffer_list_destroy(&job->list);
    hurray_tensor_context_destroy(&job->ctx);
    return job->list == NULL && job->ctx == NULL ? NULL : arg;
}

/* Destroys the handles on a new native thread; 0 when both were nulled. */
int destroy_on_native_thread(HurrayBufferList *list, HurrayTensorContext *ctx)
{
    struct job job = {list, ctx};
    pthread_t thread;
    void *result = &job;
    if (pthread_create(&thread, NULL, destroy_both, &job) != 0) return -1;
    if (pthread_join(thread, &result) != 0) return -2;
    return result == NULL ? 0 : -3;
}
"""


@pytest.fixture(scope="module")
def native_helper(tmp_path_factory):
    out = tmp_path_factory.mktemp("native")
    source = out / "helper.c"
    source.write_text(HELPER_C)
    library = build_installed(source, out / "libhelper.so",
                              ["-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC", "-pthread"])
    lib = ctypes.CDLL(str(library))  # CDLL: the GIL is released during the call
    lib.destroy_on_native_thread.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    lib.destroy_on_native_thread.restype = ctypes.c_int
    return lib


def test_owner_released_on_a_native_thread(native_helper):
    api = ctypes.PyDLL(None)  # private: ctypes.pythonapi's restypes are shared by every module
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_GetContext.restype = ctypes.c_void_p
    api.PyCapsule_GetContext.argtypes = [ctypes.py_object]
    api.PyCapsule_SetName.restype = ctypes.c_int
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    before = collected_counters()
    refs = []
    for i in range(50):
        source = Source(np.full(16, i, dtype=np.uint8))
        refs.append(weakref.ref(source))
        capsule = source.__hurray__()
        del source
        lst = api.PyCapsule_GetPointer(capsule, b"hurray_tensor")
        ctx = api.PyCapsule_GetContext(capsule)
        assert api.PyCapsule_SetName(capsule, USED_NAME) == 0  # taken
        del capsule
        assert native_helper.destroy_on_native_thread(lst, ctx) == 0
    gc.collect()
    assert all(r() is None for r in refs)
    assert collected_counters() == (before[0] + 100, before[1])


USED_NAME = b"used_hurray_tensor"  # PyCapsule keeps the pointer: module lifetime
