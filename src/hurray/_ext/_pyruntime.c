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
     * module teardown sees both; tests/test_bridges_protocol_shutdown.py drops
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

static const char DESCRIPTOR_BOX_NAME[] = "hurray_descriptor";

static void descriptor_box_destructor(PyObject *box)
{
    HurrayDescriptor *desc = PyCapsule_GetPointer(box, DESCRIPTOR_BOX_NAME);
    if (desc == NULL) {
        PyErr_Clear(); /* unreachable: only hurray__py_descriptor_box makes these */
        return;
    }
    hurray_descriptor_destroy(&desc);
}

int hurray__py_descriptor_box(HurrayDescriptor *desc, PyObject **out_box, PyObject **out_address)
{
    PyObject *box = PyCapsule_New(desc, DESCRIPTOR_BOX_NAME, descriptor_box_destructor);
    if (box == NULL) {
        hurray_descriptor_destroy(&desc);
        return -1;
    }
    PyObject *address = PyLong_FromVoidPtr(desc);
    if (address == NULL) {
        Py_DECREF(box); /* destroys desc */
        return -1;
    }
    *out_box = box;
    *out_address = address;
    return 0;
}

/* Adds one item to module; 0, or -1 with an error set. Steals an object item. */
static int add_item(PyObject *module, const HurrayPyItem *item)
{
    switch (item->kind) {
    case HURRAY__PY_TYPE_ITEM:
        return PyModule_AddObjectRef(module, item->name, (PyObject *)item->pointer);
    case HURRAY__PY_OBJECT_ITEM: {
        PyObject *object = item->pointer;
        if (object == NULL) {
            return -1; /* making it failed, and said why */
        }
        int added = PyModule_AddObjectRef(module, item->name, object);
        Py_DECREF(object);
        return added;
    }
    case HURRAY__PY_INT_ITEM: return PyModule_AddIntConstant(module, item->name, item->number);
    case HURRAY__PY_STRING_ITEM:
        return PyModule_AddStringConstant(module, item->name, (const char *)item->pointer);
    case HURRAY__PY_END_ITEM: break;
    }
    PyErr_SetString(PyExc_SystemError, "a module item of no known kind");
    return -1;
}

PyObject *hurray__py_module_new(PyModuleDef *def, const HurrayPyItem *items)
{
    int failed = 0;
    for (const HurrayPyItem *item = items; item->kind != HURRAY__PY_END_ITEM; item++) {
        if (item->kind == HURRAY__PY_TYPE_ITEM && PyType_Ready((PyTypeObject *)item->pointer) < 0) {
            failed = 1;
            break;
        }
    }
    PyObject *module = failed ? NULL : PyModule_Create(def);
    for (const HurrayPyItem *item = items; item->kind != HURRAY__PY_END_ITEM; item++) {
        if (module != NULL && add_item(module, item) < 0) {
            Py_CLEAR(module);
        } else if (module == NULL && item->kind == HURRAY__PY_OBJECT_ITEM) {
            Py_XDECREF((PyObject *)item->pointer); /* stolen, even now */
        }
    }
    return module;
}
