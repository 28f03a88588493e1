/* _pyruntime.c -- see _pyruntime.h. */
#include "_pyruntime.h"

#include <stdarg.h>
#include <stdatomic.h>

/* Relaxed atomics: a leak is counted without the GIL. */
static atomic_ullong owner_releases;
static atomic_ullong owner_leaks;

#if PY_VERSION_HEX >= 0x030C0000
HurrayPySavedError hurray__py_save_error(void)
{
    return PyErr_GetRaisedException();
}
void hurray__py_restore_error(HurrayPySavedError saved)
{
    PyErr_SetRaisedException(saved);
}
#else
HurrayPySavedError hurray__py_save_error(void)
{
    HurrayPySavedError saved;
    PyErr_Fetch(&saved.type, &saved.value, &saved.traceback);
    return saved;
}
void hurray__py_restore_error(HurrayPySavedError saved)
{
    PyErr_Restore(saved.type, saved.value, saved.traceback);
}
#endif

int hurray__py_exiting(void)
{
    /* Py_FinalizeEx marks the runtime finalizing and then, a few statements
     * later, not initialized (CPython 3.11-3.13), so a finalizer run during
     * module teardown sees both; tests/test_protocol_shutdown.py drops
     * handles there. Not initialized alone is what a C library's atexit
     * handler sees, after Py_Finalize. */
#if PY_VERSION_HEX >= 0x030D0000
    int finalizing = Py_IsFinalizing();
#else
    int finalizing = _Py_IsFinalizing();
#endif
    return finalizing || !Py_IsInitialized();
}

/* 1 when the calling thread holds the GIL: its own thread state is the one
 * running. Either read is safe without the GIL; when they differ (another
 * thread runs, or this one has no thread state) the answer is 0 and the
 * caller takes the GIL the long way, which is always correct. */
static int holds_gil(void)
{
    PyThreadState *mine = PyGILState_GetThisThreadState();
#if PY_VERSION_HEX >= 0x030D0000
    PyThreadState *running = PyThreadState_GetUnchecked();
#else
    PyThreadState *running = _PyThreadState_UncheckedGet();
#endif
    return mine != NULL && mine == running;
}

void hurray__py_owner_release(void *owner)
{
    if (owner == NULL) {
        return;
    }
    if (hurray__py_exiting()) {
        atomic_fetch_add_explicit(&owner_leaks, 1, memory_order_relaxed);
        return;
    }
    /* Most releases come from a consumer tensor dying on a Python thread,
     * which holds the GIL already; PyGILState_Ensure and _Release would then
     * only count, at about a third of an exchange's cost per handle. */
    int held = holds_gil();
    if (held && Py_REFCNT((PyObject *)owner) > 1) {
        /* Not the last reference: no finalizer can run, so no exception
         * can be raised or lost; just drop it. */
        Py_DECREF((PyObject *)owner);
        atomic_fetch_add_explicit(&owner_releases, 1, memory_order_relaxed);
        return;
    }
    PyGILState_STATE gil = held ? PyGILState_UNLOCKED : PyGILState_Ensure();
    HurrayPySavedError saved = hurray__py_save_error();
    Py_DECREF((PyObject *)owner);
    atomic_fetch_add_explicit(&owner_releases, 1, memory_order_relaxed);
    PyErr_Clear(); /* a dealloc must not raise; if one did, it is not ours to pass on */
    hurray__py_restore_error(saved);
    if (!held) {
        PyGILState_Release(gil);
    }
}

void hurray__py_owner_release_n(void *owner, uint64_t n)
{
    if (owner == NULL || n == 0) {
        return;
    }
    if (hurray__py_exiting()) {
        atomic_fetch_add_explicit(&owner_leaks, n, memory_order_relaxed);
        return;
    }
    /* All but the last cannot be the object's last reference: drop them
     * directly. The last may run a finalizer, so it goes the careful way. */
    for (uint64_t i = 1; i < n; i++) {
        Py_DECREF((PyObject *)owner);
    }
    atomic_fetch_add_explicit(&owner_releases, n - 1, memory_order_relaxed);
    hurray__py_owner_release(owner);
}

PyObject *hurray__py_owner_counters(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return Py_BuildValue(
        "(KK)", (unsigned long long)atomic_load_explicit(&owner_releases, memory_order_relaxed),
        (unsigned long long)atomic_load_explicit(&owner_leaks, memory_order_relaxed));
}

PyObject *hurray__py_raise_class(PyObject *cls, PyObject *message, long status)
{
    if (message == NULL) {
        return NULL;
    }
    PyObject *exc = status == 0 ? PyObject_CallFunctionObjArgs(cls, message, Py_None, NULL)
                                : PyObject_CallFunction(cls, "Ol", message, status);
    Py_DECREF(message);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

PyObject *hurray__py_raise(const char *module, const char *class_name, long status, const char *fmt,
                           ...)
{
    va_list args;
    va_start(args, fmt);
    PyObject *message = PyUnicode_FromFormatV(fmt, args);
    va_end(args);
    if (message == NULL) {
        return NULL;
    }
    PyObject *mod = PyImport_ImportModule(module);
    PyObject *cls = mod == NULL ? NULL : PyObject_GetAttrString(mod, class_name);
    Py_XDECREF(mod);
    if (cls == NULL) {
        Py_DECREF(message);
        return NULL;
    }
    hurray__py_raise_class(cls, message, status);
    Py_DECREF(cls);
    return NULL;
}

int hurray__py_add_capsule_type(PyObject *module)
{
    return PyModule_AddObjectRef(module, "CapsuleType", (PyObject *)&PyCapsule_Type);
}
