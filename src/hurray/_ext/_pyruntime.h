/*
 * _pyruntime.h -- the CPython runtime every extension of the package shares
 * (hurray._core, _protocol, _pickle, _dlpack): the module set-up, keeping a
 * pending exception aside, the exit check, dropping an owner reference from
 * any thread (design note D-NB2, docs/impl/d-nb2.md), the counters that
 * prove each reference is dropped once, raising a hurray.HurrayError
 * subclass, and the capsule that owns a C descriptor for a Descriptor.
 *
 * _pyruntime.c is compiled into each extension, so each has its own
 * counters; its symbols are hidden, so the copies never meet.
 */
#ifndef HURRAY_PYRUNTIME_H
#define HURRAY_PYRUNTIME_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <limits.h>
#include <stdint.h>

#include "hurray.h"

#if defined(__GNUC__)
#define HURRAY__PY_INTERNAL __attribute__((visibility("hidden")))
#else
#define HURRAY__PY_INTERNAL
#endif

/* An int as unsigned 64 bits (an address or a length): PyLong_AsUnsignedLong
 * where it is 64 bits wide, since on CPython 3.11 PyLong_AsUnsignedLongLong
 * goes through a byte array for any int above 2**30 (every address).
 * Inline: hurray._core uses it without the rest of this runtime. */
static inline unsigned long long hurray__py_as_u64(PyObject *v)
{
#if ULONG_MAX >= UINT64_MAX
    return PyLong_AsUnsignedLong(v);
#else
    return PyLong_AsUnsignedLongLong(v);
#endif
}

/* Destructors and release callbacks may run while an exception is
 * propagating; they keep it aside and put it back, neither losing it nor
 * leaving one of their own. */
#if PY_VERSION_HEX >= 0x030C0000
typedef PyObject *HurrayPySavedError;
#else
typedef struct {
    PyObject *type, *value, *traceback;
} HurrayPySavedError;
#endif
HURRAY__PY_INTERNAL HurrayPySavedError hurray__py_save_error(void);
HURRAY__PY_INTERNAL void hurray__py_restore_error(HurrayPySavedError saved);

/* 1 once the interpreter is finalizing or no longer initialized: then
 * taking the GIL can hang and touching an object can crash. Racy by nature;
 * callers check it last, right before they would take the GIL. */
HURRAY__PY_INTERNAL int hurray__py_exiting(void);

/* Drops one strong reference to owner (a PyObject *, or NULL). Any thread,
 * any time: takes the GIL itself, keeps a pending exception, and once the
 * interpreter is exiting leaks the reference instead (counted). The
 * release callback of every handle and capsule these extensions make. */
HURRAY__PY_INTERNAL void hurray__py_owner_release(void *owner);

/* Drops n strong references to owner (a PyObject *, or NULL) at once, as n
 * calls of hurray__py_owner_release would, counted the same way; for a
 * caller that holds the GIL (a deallocator). ADR-048. */
HURRAY__PY_INTERNAL void hurray__py_owner_release_n(void *owner, uint64_t n);

/* _owner_counters() -> (released, leaked), as a METH_NOARGS method: how
 * many references hurray__py_owner_release dropped and leaked in this
 * extension since it loaded. */
HURRAY__PY_INTERNAL PyObject *hurray__py_owner_counters(PyObject *module, PyObject *unused);
#define HURRAY__PY_OWNER_COUNTERS_DOC                                                 \
    "_owner_counters() -> (released, leaked)\n\n"                                     \
    "How many owner references this extension's handles and capsules have dropped,\n" \
    "and how many they leaked because the interpreter was exiting, since it loaded."

/* Raises module.class_name(message, status) -- status None when it is 0
 * (no HurrayStatus applies) -- with a printf-style message
 * (PyUnicode_FromFormat). The module is imported on the first error, never
 * at extension import (hurray.errors imports the cffi module, which the
 * package may still be importing). Always returns NULL. */
HURRAY__PY_INTERNAL PyObject *hurray__py_raise(const char *module, const char *class_name,
                                               long status, const char *fmt, ...);

/* Raises cls(message, status): the one place that makes and sets the
 * exception. Steals message. Always returns NULL. */
HURRAY__PY_INTERNAL PyObject *hurray__py_raise_class(PyObject *cls, PyObject *message, long status);

/* Puts desc in a capsule that destroys it when the capsule dies (named
 * "hurray_descriptor"), and its address in an int for cffi to cast: the
 * box and address a hurray.Descriptor keeps for a C descriptor it did not
 * make through cffi (ADR-046). Whoever keeps the box keeps desc. 0 with
 * new references in *out_box and *out_address, or -1 with an error set and
 * desc destroyed. */
HURRAY__PY_INTERNAL int hurray__py_descriptor_box(HurrayDescriptor *desc, PyObject **out_box,
                                                  PyObject **out_address);

/* ---- module set-up: written once, here ---- */

/* What a module adds to itself at set-up, one item each: a type (readied
 * first), an object (stolen), an int or a string constant. A list of them
 * ends with HURRAY__PY_END. */
typedef enum HurrayPyItemKind {
    HURRAY__PY_END_ITEM,
    HURRAY__PY_TYPE_ITEM,
    HURRAY__PY_OBJECT_ITEM,
    HURRAY__PY_INT_ITEM,
    HURRAY__PY_STRING_ITEM,
} HurrayPyItemKind;

typedef struct HurrayPyItem {
    HurrayPyItemKind kind;
    const char *name;
    void *pointer; /* the PyTypeObject, the PyObject (NULL if making it failed) or the string */
    long number;
} HurrayPyItem;

#define HURRAY__PY_TYPE(name, type) {HURRAY__PY_TYPE_ITEM, (name), (type), 0}
#define HURRAY__PY_OBJECT(name, object) {HURRAY__PY_OBJECT_ITEM, (name), (object), 0}
#define HURRAY__PY_INT(name, value) {HURRAY__PY_INT_ITEM, (name), NULL, (value)}
#define HURRAY__PY_STRING(name, value) {HURRAY__PY_STRING_ITEM, (name), (void *)(value), 0}
#define HURRAY__PY_END {HURRAY__PY_END_ITEM, NULL, NULL, 0}
/* The capsule type as module.CapsuleType, so Python code tells a capsule by
 * type from the extension itself. */
#define HURRAY__PY_CAPSULE_TYPE HURRAY__PY_TYPE("CapsuleType", &PyCapsule_Type)

/* A module's definition: single-phase initialization, no per-module state. */
#define HURRAY__PY_MODULE_DEF(variable, name, doc, methods)                                        \
    static struct PyModuleDef variable = {PyModuleDef_HEAD_INIT, .m_name = (name), .m_doc = (doc), \
                                          .m_size = -1, .m_methods = (methods)}

/* The method table entry of _owner_counters (below). */
#define HURRAY__PY_OWNER_COUNTERS_METHOD                        \
    {"_owner_counters", hurray__py_owner_counters, METH_NOARGS, \
     PyDoc_STR(HURRAY__PY_OWNER_COUNTERS_DOC)}

/* The one module set-up of the extensions (their PyInit_ functions call
 * it): readies the types among items, creates the module of def and adds
 * each item under its name. Every object item is stolen, whatever happens.
 * The module (a new reference), or NULL with an error set. */
HURRAY__PY_INTERNAL PyObject *hurray__py_module_new(PyModuleDef *def, const HurrayPyItem *items);

#endif /* HURRAY_PYRUNTIME_H */
