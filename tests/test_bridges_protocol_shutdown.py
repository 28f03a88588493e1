"""Interpreter exit with the native protocol in flight (D-NB2: leak rather than crash).

One hundred interpreters, four at a time, each exiting while capsules,
consumer tensors and numpy views sit in module globals and in reference
cycles, while daemon threads keep exporting, importing and releasing
handles (some with the GIL dropped, through ctypes), and while atexit
handlers do the same. Every exit must be clean: status 0, nothing on
stderr.

Some of those cycles run through a capsule and can never be collected
(D-NB2, decision 11): they are leaked at exit, by design, and are here
because an exit with them must be clean too. The globals, on the other
hand, are really torn down while the interpreter finalizes, their owner
references leaked rather than dropped; a sentinel global checks that.
"""
import concurrent.futures
import subprocess
import sys
import textwrap

import pytest

from support.cbuild import build_installed

SCRIPT = textwrap.dedent(
    r'''
    import atexit
    import ctypes
    import os
    import random
    import sys
    import threading
    import time

    import numpy as np

    import hurray
    from hurray import _protocol

    kind, seed, helper_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    rng = random.Random(seed)
    KEEP = []

    # Source is defined in a namespace of its own. Defined in this module,
    # its methods would hold this module's globals; every capsule over a
    # Source would then hold them all, through references the cycle
    # collector cannot see (D-NB2, decision 11), and no global below would
    # ever be torn down at exit.
    SOURCE = """
    import numpy as np

    import hurray
    from hurray import _protocol


    class Source:
        # A producer that owns its memory and is the owner of its capsules.

        def __init__(self, n):
            self.array = np.arange(n, dtype=np.float32)
            self.descriptor = hurray.from_numpy(self.array).descriptor.encode()

        def __hurray__(self):
            a = self.array
            return _protocol.export(self.descriptor, ((a.ctypes.data, a.nbytes),), self)

        def __del__(self):
            # Python work in a finalizer that may run at any point of exit.
            self.array.sum()
    """
    source_namespace = {}
    exec(SOURCE, source_namespace)
    Source = source_namespace["Source"]


    def trip(i):
        source = Source(4 + i % 5)
        if i % 3 == 0:
            return source.__hurray__()                 # an unconsumed capsule
        tensor = hurray.from_hurray(source)
        return np.asarray(tensor) if i % 3 == 1 else tensor


    lib = ctypes.CDLL(hurray.get_library())
    lib.hurray_buffer_list_destroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.hurray_tensor_context_destroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    api = ctypes.PyDLL(None)  # private: ctypes.pythonapi's restypes are shared by every module
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    api.PyCapsule_GetContext.restype = ctypes.c_void_p
    api.PyCapsule_GetContext.argtypes = [ctypes.py_object]
    api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    USED = b"used_hurray_tensor"


    def c_consume(capsule):
        """Take a capsule as a C consumer would and destroy its handles with
        the GIL released (ctypes drops it around each call)."""
        lst = ctypes.c_void_p(api.PyCapsule_GetPointer(capsule, b"hurray_tensor"))
        ctx = ctypes.c_void_p(api.PyCapsule_GetContext(capsule))
        api.PyCapsule_SetName(capsule, USED)
        lib.hurray_buffer_list_destroy(ctypes.byref(lst))
        lib.hurray_tensor_context_destroy(ctypes.byref(ctx))


    def give_to_c_library(capsule):
        """Take a capsule as a C consumer would and keep its handles until
        the C library's own atexit handler, which runs after Py_Finalize."""
        lst = api.PyCapsule_GetPointer(capsule, b"hurray_tensor")
        ctx = api.PyCapsule_GetContext(capsule)
        api.PyCapsule_SetName(capsule, USED)
        assert helper.destroy_at_exit(lst, ctx) == 0


    helper = ctypes.CDLL(helper_path)
    helper.destroy_at_exit.argtypes = [ctypes.c_void_p, ctypes.c_void_p]


    def churn(stop_at=None):
        i = 0
        local = []
        while stop_at is None or i < stop_at:
            local.append(trip(i))
            if len(local) > 8:
                local.pop(rng.randrange(len(local)))
            if i % 7 == 0:
                c_consume(Source(3).__hurray__())
            i += 1


    def make_cycles(n):
        for i in range(n):
            # Uncollectable (D-NB2, decision 11): the source holds a capsule
            # that holds the source, through references the collector cannot
            # see. It lives until exit and is leaked there -- on purpose: an
            # exit with such leaks must be clean too.
            s = Source(2)
            s.own_capsule = s.__hurray__()
            # An ordinary cycle holding consumer tensors and capsules: the
            # collector frees it (and so them), now or at exit.
            box = [hurray.from_hurray(Source(3)), trip(i)]
            box.append(box)


    if kind in ("globals", "mixed"):
        KEEP.extend(trip(i) for i in range(60))
        make_cycles(20)
        GLOBAL_CAPSULE = Source(6).__hurray__()
        GLOBAL_TENSOR = hurray.from_hurray(Source(7))
        GLOBAL_VIEW = np.asarray(hurray.from_hurray(Source(8)))

    if kind in ("daemons", "mixed"):
        for _ in range(3):
            threading.Thread(target=churn, daemon=True).start()
        time.sleep(rng.uniform(0.0, 0.05))

    if kind in ("atexit", "mixed"):
        def at_exit_work():
            churn(100)
            KEEP.extend(trip(i) for i in range(30))
            make_cycles(5)

        def at_exit_drop():
            del KEEP[: len(KEEP) // 2]

        atexit.register(at_exit_drop)
        atexit.register(at_exit_work)
        if kind == "atexit":
            threading.Thread(target=churn, daemon=True).start()

    if kind in ("c_atexit", "mixed"):
        for i in range(20):
            give_to_c_library(Source(4 + i % 3).__hurray__())

    class Sentinel:
        # The last global: when module teardown reaches it, the globals above
        # have been dropped while the interpreter was finalizing.

        def __del__(self, write=os.write, counters=_protocol._owner_counters,
                    finalizing=sys.is_finalizing):
            write(1, f"sentinel finalizing={finalizing()} leaked={counters()[1]}\n".encode())


    # the protocol still works at this point
    assert float(np.asarray(hurray.from_hurray(Source(5)))[4]) == 4.0
    os.write(1, f"running leaked={_protocol._owner_counters()[1]}\n".encode())
    SENTINEL = Sentinel()
    if rng.random() < 0.5:
        sys.exit(0)
    '''
)

KINDS = ("globals", "daemons", "atexit", "c_atexit", "mixed")
RUNS = 100


# A C library that holds handles and frees them from a libc atexit handler.
HELPER_C = r"""
#include <stdlib.h>
#include "hurray.h"

#define MAX_HELD 64
static HurrayBufferList *lists[MAX_HELD];
static HurrayTensorContext *contexts[MAX_HELD];
static int held;

static void destroy_all(void)
{
    for (int i = 0; i < held; i++) {
        hurray_buffer_list_destroy(&lists[i]);
        hurray_tensor_context_destroy(&contexts[i]);
    }
}

int destroy_at_exit(HurrayBufferList *list, HurrayTensorContext *ctx)
{
    if (held == MAX_HELD) return -1;
    if (held == 0 && atexit(destroy_all) != 0) return -2;
    lists[held] = list;
    contexts[held] = ctx;
    held++;
    return 0;
}
"""


@pytest.fixture(scope="module")
def helper(tmp_path_factory):
    out = tmp_path_factory.mktemp("shutdown")
    (out / "helper.c").write_text(HELPER_C)
    library = build_installed(out / "helper.c", out / "libholder.so",
                              ["-std=c11", "-Wall", "-Wextra", "-Werror", "-shared", "-fPIC"])
    return str(library)


def run_one(script, index, helper):
    kind = KINDS[index % len(KINDS)]
    result = subprocess.run(
        [sys.executable, "-c", script, kind, str(index), helper],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return kind, index, result


def test_hundred_interpreter_exits_are_clean(helper):
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda i: run_one(SCRIPT, i, helper), range(RUNS)))
    failures = [
        f"run {index} ({kind}): exit status {r.returncode}\n{r.stderr[-2000:]}"
        for kind, index, r in results
        if r.returncode != 0 or r.stderr
    ]
    assert not failures, f"{len(failures)} of {RUNS} exits were not clean:\n" + "\n".join(failures[:3])
    # Where no daemon thread's frame holds the globals, module teardown must
    # reach the sentinel after dropping the globals above it, each owner
    # reference leaked (the interpreter is finalizing), none dropped.
    for kind, index, r in results:
        if kind == "globals":
            sentinel = [line for line in r.stdout.splitlines() if line.startswith("sentinel")]
            assert len(sentinel) == 1, f"run {index}: {r.stdout!r}"
            assert sentinel[0].startswith("sentinel finalizing=True leaked="), sentinel
            assert int(sentinel[0].rsplit("=", 1)[1]) > 0, f"run {index}: no global was torn down"


def test_the_scenario_really_runs(helper):
    """The script checks the protocol before it exits; a broken check must
    show as a failed run, so a clean exit above means the scenario ran."""
    broken = SCRIPT.replace("== 4.0", "== -1.0")
    _, _, result = run_one(broken, KINDS.index("mixed"), helper)
    assert result.returncode != 0 and "AssertionError" in result.stderr


# A global whose finalizer runs while the interpreter tears its modules down
# (Py_FinalizeEx has already marked the runtime as finalizing). It drops an
# unconsumed capsule and a consumer tensor there, and writes what the owner
# counters did with os.write, which needs no module state. What it calls is
# bound as default arguments: module globals may already be None by then.
#
# Its capsules' owners are hurray Tensors, not instances of a class defined
# here: an object of this script held through a capsule would keep the
# script's globals -- and so this global -- alive for ever (a capsule's
# references are invisible to the cycle collector; see D-NB2), and the
# finalizer would never run.
FINALIZING_SCRIPT = textwrap.dedent(
    r'''
    import os
    import sys

    import numpy as np

    import hurray
    from hurray import _protocol


    class DropsAtExit:
        def __init__(self):
            producer = hurray.from_numpy(np.arange(4, dtype=np.float32))
            self.capsule = producer.__hurray__()         # two owner references
            self.tensor = hurray.from_hurray(producer)   # two more, in its Holder

        def drop(self, counters=_protocol._owner_counters):
            before = counters()
            self.capsule = self.tensor = None
            after = counters()
            return after[0] - before[0], after[1] - before[1]

        def __del__(self, write=os.write, finalizing=sys.is_finalizing):
            if self.capsule is None:
                return  # dropped already, while the interpreter ran
            released, leaked = self.drop()
            write(1, f"exit finalizing={finalizing()} released={released} leaked={leaked}\n".encode())


    # While the interpreter runs, the same drop releases every reference.
    released, leaked = DropsAtExit().drop()
    os.write(1, f"alive released={released} leaked={leaked}\n".encode())
    KEPT = DropsAtExit()
    '''
)


def test_release_during_finalization_leaks_instead_of_touching_python():
    """The exit half of hurray__py_owner_release's check (D-NB2, decision 5): a
    handle destroyed while the interpreter finalizes leaks its owner
    reference, counted, and the exit stays clean."""
    result = subprocess.run([sys.executable, "-c", FINALIZING_SCRIPT],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    lines = result.stdout.splitlines()
    assert lines == [
        "alive released=4 leaked=0",
        "exit finalizing=True released=0 leaked=4",
    ], result.stdout
