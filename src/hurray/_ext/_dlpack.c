/* hurray._dlpack: the C side of the DLPack bridge.
 *
 * export()  wraps a strided view of host memory in a "dltensor" or
 *           "dltensor_versioned" capsule whose deleter drops a strong
 *           reference to the exporting object.
 * inspect() reads a producer's capsule without taking it.
 * take()    takes ownership (renames the capsule to its "used_" name) and
 *           returns an Owner whose deallocation calls the producer's deleter
 *           exactly once.
 * _owner_counters()  how many owner references this module's deleters
 *           dropped and leaked, for tests.
 *
 * Which element types and layouts may cross is decided in dlpack.py; this
 * file only moves validated facts in and out of the DLPack structs, and
 * refuses what it cannot read safely (bad names, a foreign major version,
 * a rank it cannot hold).
 *
 * The lifetime rules, and their limits (deleters on any thread, a
 * reference leaked at interpreter exit, cycles through a capsule never
 * collected, one interpreter lifetime), are those of design note D-NB2,
 * docs/impl/d-nb2.md, decisions 5, 11 and 12; the code that keeps them is
 * _pyruntime.c, shared with _protocol.c.
 */
#include "_pyruntime.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "third_party/dlpack/dlpack.h"

/* The version this bridge writes. A capsule with another major version may
 * only have its deleter called; a higher minor version only adds codes. */
#define HURRAY_DLPACK_MAJOR 1
#define HURRAY_DLPACK_MINOR 1

/* Capsule names. A consumer renames a capsule to the "used_" form when it
 * takes ownership; PyCapsule keeps the pointer, so they are static strings. */
#define HURRAY_DLPACK_NAME "dltensor"
#define HURRAY_DLPACK_USED_NAME "used_dltensor"
#define HURRAY_DLPACK_VERSIONED_NAME "dltensor_versioned"
#define HURRAY_DLPACK_VERSIONED_USED_NAME "used_dltensor_versioned"

/* The layouts every DLPack 1.x producer and consumer relies on; a vendored
 * header that moved one of these fails to build. */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(DLDataType) == 4, "DLDataType is 4 bytes");
_Static_assert(sizeof(DLTensor) == 48, "DLTensor is 48 bytes on 64-bit targets");
_Static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype offset");
_Static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset offset");
_Static_assert(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor.deleter offset");
_Static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "versioned deleter offset");
_Static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "versioned flags offset");
_Static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "versioned dl_tensor offset");
#endif
_Static_assert(DLPACK_MAJOR_VERSION == HURRAY_DLPACK_MAJOR,
               "the vendored dlpack.h is major version 1");

/* A DLTensor's rank is an int32; a Hurray descriptor's is at most this. */
#define DLPACK_BRIDGE_MAX_RANK 64

/* The two errors this module raises: a tensor DLPack cannot carry or Hurray
 * cannot hold (hurray.dlpack.DLPackError), and an unusable capsule
 * (hurray.errors.CapsuleError). Always return NULL. */
#define refuse(...) hurray__py_raise("hurray.errors", "DLPackError", 0, __VA_ARGS__)
#define capsule_error(...) hurray__py_raise("hurray.errors", "CapsuleError", 0, __VA_ARGS__)

/* ---- the producer side ----------------------------------------------- */

/* The deleters of export()'s capsules: the managed struct and its arrays
 * are one malloc block, and manager_ctx is the owner. */
static void free_export(void *block, void *owner)
{
    free(block);
    hurray__py_owner_release(owner);
}

static void legacy_deleter(DLManagedTensor *self)
{
    if (self != NULL) {
        free_export(self, self->manager_ctx);
    }
}

static void versioned_deleter(DLManagedTensorVersioned *self)
{
    if (self != NULL) {
        free_export(self, self->manager_ctx);
    }
}

/* Calls the deleter of a DLManagedTensor (or, when versioned, a
 * DLManagedTensorVersioned), if it has one. */
static void call_deleter(void *managed, int versioned)
{
    if (versioned) {
        DLManagedTensorVersioned *m = managed;
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    } else {
        DLManagedTensor *m = managed;
        if (m->deleter != NULL) {
            m->deleter(m);
        }
    }
}

/* Capsule destructors: the deleter runs only while the capsule still bears
 * its producer name, i.e. no consumer has taken it. They must leave any
 * exception that is being raised untouched. */
static void destroy_untaken(PyObject *capsule, int versioned)
{
    const char *name = versioned ? HURRAY_DLPACK_VERSIONED_NAME : HURRAY_DLPACK_NAME;
    if (!PyCapsule_IsValid(capsule, name)) {
        return;
    }
    HurrayPySavedError saved = hurray__py_save_error();
    void *managed = PyCapsule_GetPointer(capsule, name);
    if (managed != NULL) {
        call_deleter(managed, versioned);
    }
    hurray__py_restore_error(saved);
}

static void legacy_capsule_destructor(PyObject *capsule)
{
    destroy_untaken(capsule, 0);
}

static void versioned_capsule_destructor(PyObject *capsule)
{
    destroy_untaken(capsule, 1);
}

/* Copies a sequence of Python ints into out[0..n); n must match. */
static int read_int64s(PyObject *seq, const char *what, Py_ssize_t n, int64_t *out)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) {
        return -1;
    }
    if (PySequence_Fast_GET_SIZE(fast) != n) {
        PyErr_Format(PyExc_ValueError, "%s has %zd entries, shape has %zd", what,
                     PySequence_Fast_GET_SIZE(fast), n);
        Py_DECREF(fast);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(items[i]);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
        out[i] = (int64_t)v;
    }
    Py_DECREF(fast);
    return 0;
}

PyDoc_STRVAR(export_doc,
             "export(owner, data, code, bits, shape, strides, flags, versioned) -> capsule\n\n"
             "Wrap host memory in a DLPack capsule. `data` is the address of element 0,\n"
             "`strides` count elements. The capsule's deleter holds a strong reference\n"
             "to `owner` and drops it once. With `versioned` false the legacy\n"
             "\"dltensor\" form is made and `flags` must be 0.");

/* An int in 0 .. 255 (as PyArg_ParseTuple's "b" reads it). */
static int read_byte(PyObject *obj, const char *what, unsigned char *out)
{
    long v = PyLong_AsLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || v > 255) {
        PyErr_Format(PyExc_OverflowError, "%s %ld is outside 0 .. 255", what, v);
        return -1;
    }
    *out = (unsigned char)v;
    return 0;
}

/* Fast-call: the bridge exports on every np.from_dlpack(t), and parsing a
 * format string cost as much as the rest of the export. */
static PyObject *dlpack_export(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 8) {
        return PyErr_Format(PyExc_TypeError, "export() takes 8 arguments (%zd given)", nargs);
    }
    PyObject *owner = args[0], *shape_seq = args[4], *strides_seq = args[5];
    unsigned char code, bits;
    unsigned long long data = PyLong_AsUnsignedLongLongMask(args[1]);
    if (data == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    unsigned long long flags = PyLong_AsUnsignedLongLongMask(args[6]);
    if (flags == (unsigned long long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    int versioned = PyObject_IsTrue(args[7]);
    if (versioned < 0 || read_byte(args[2], "code", &code) < 0 ||
        read_byte(args[3], "bits", &bits) < 0) {
        return NULL;
    }
    Py_ssize_t ndim = PySequence_Size(shape_seq);
    if (ndim < 0) {
        return NULL;
    }
    if (ndim > DLPACK_BRIDGE_MAX_RANK) {
        return refuse("rank %zd is above %d", ndim, DLPACK_BRIDGE_MAX_RANK);
    }
    if (!versioned && flags != 0) {
        return PyErr_Format(PyExc_ValueError, "a legacy DLPack capsule has no flags");
    }
    int64_t dims[DLPACK_BRIDGE_MAX_RANK], steps[DLPACK_BRIDGE_MAX_RANK];
    if (read_int64s(shape_seq, "shape", ndim, dims) < 0 ||
        read_int64s(strides_seq, "strides", ndim, steps) < 0) {
        return NULL;
    }

    /* One allocation: the managed struct, then shape, then strides. Both
     * managed structs are a multiple of 8 bytes, so the arrays are aligned. */
    size_t head = versioned ? sizeof(DLManagedTensorVersioned) : sizeof(DLManagedTensor);
    size_t arrays = 2 * (size_t)ndim * sizeof(int64_t);
    unsigned char *block = malloc(head + arrays);
    if (block == NULL) {
        return PyErr_NoMemory();
    }
    int64_t *shape = (int64_t *)(block + head);
    int64_t *strides = shape + ndim;
    if (ndim > 0) {
        memcpy(shape, dims, (size_t)ndim * sizeof(int64_t));
        memcpy(strides, steps, (size_t)ndim * sizeof(int64_t));
    }

    DLTensor *t;
    if (versioned) {
        DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)block;
        m->version.major = HURRAY_DLPACK_MAJOR;
        m->version.minor = HURRAY_DLPACK_MINOR;
        m->manager_ctx = owner;
        m->deleter = versioned_deleter;
        m->flags = flags;
        t = &m->dl_tensor;
    } else {
        DLManagedTensor *m = (DLManagedTensor *)block;
        m->manager_ctx = owner;
        m->deleter = legacy_deleter;
        t = &m->dl_tensor;
    }
    t->data = (void *)(uintptr_t)data;
    t->device.device_type = kDLCPU;
    t->device.device_id = 0;
    t->ndim = (int32_t)ndim;
    t->dtype.code = code;
    t->dtype.bits = bits;
    t->dtype.lanes = 1;
    t->shape = shape;
    t->strides = strides;
    t->byte_offset = 0;

    Py_INCREF(owner);
    PyObject *capsule = versioned
                            ? PyCapsule_New(block, HURRAY_DLPACK_VERSIONED_NAME,
                                            versioned_capsule_destructor)
                            : PyCapsule_New(block, HURRAY_DLPACK_NAME, legacy_capsule_destructor);
    if (capsule == NULL) {
        free(block);
        Py_DECREF(owner);
    }
    return capsule;
}

/* ---- the consumer side ----------------------------------------------- */

/* Which name a capsule bears: 1 versioned, 0 legacy, -1 (error set) neither. */
static int capsule_kind(PyObject *capsule)
{
    if (!PyCapsule_CheckExact(capsule)) {
        capsule_error("expected a DLPack capsule, got %.200s", Py_TYPE(capsule)->tp_name);
        return -1;
    }
    const char *name = PyCapsule_GetName(capsule);
    if (name == NULL && PyErr_Occurred()) {
        return -1;
    }
    if (name != NULL && strcmp(name, HURRAY_DLPACK_VERSIONED_NAME) == 0) {
        return 1;
    }
    if (name != NULL && strcmp(name, HURRAY_DLPACK_NAME) == 0) {
        return 0;
    }
    if (name != NULL && (strcmp(name, HURRAY_DLPACK_USED_NAME) == 0 ||
                         strcmp(name, HURRAY_DLPACK_VERSIONED_USED_NAME) == 0)) {
        capsule_error("this DLPack capsule was already consumed (its name is \"%s\")", name);
        return -1;
    }
    capsule_error("a capsule named \"%.200s\" is not a DLPack capsule "
                  "(\"dltensor\" or \"dltensor_versioned\")",
                  name != NULL ? name : "(null)");
    return -1;
}

/* The managed-tensor struct of a producer's capsule, and whether it is the
 * versioned kind; NULL (error set) for anything else. */
static void *capsule_pointer(PyObject *capsule, int *versioned)
{
    *versioned = capsule_kind(capsule);
    if (*versioned < 0) {
        return NULL;
    }
    const char *name = *versioned ? HURRAY_DLPACK_VERSIONED_NAME : HURRAY_DLPACK_NAME;
    void *ptr = PyCapsule_GetPointer(capsule, name);
    if (ptr == NULL && !PyErr_Occurred()) {
        capsule_error("the DLPack capsule holds a NULL pointer");
    }
    return ptr;
}

static PyObject *int64_tuple(const int64_t *values, int32_t n)
{
    PyObject *tuple = PyTuple_New(n);
    if (tuple == NULL) {
        return NULL;
    }
    for (int32_t i = 0; i < n; i++) {
        PyObject *v = PyLong_FromLongLong(values[i]);
        if (v == NULL) {
            Py_DECREF(tuple);
            return NULL;
        }
        PyTuple_SET_ITEM(tuple, i, v);
    }
    return tuple;
}

PyDoc_STRVAR(inspect_doc,
             "inspect(capsule) -> tuple\n\n"
             "Read a producer's DLPack capsule without taking it. Returns\n"
             "(versioned, major, minor) when a versioned capsule has a major version\n"
             "other than 1 (nothing else may be read then), otherwise\n"
             "(versioned, major, minor, flags, device_type, device_id, code, bits, lanes,\n"
             " data, byte_offset, shape, strides, managed), where strides is None when\n"
             "the producer gave none and managed is the address of the managed-tensor\n"
             "struct, for take(). A legacy capsule reports version (0, 0) and flags 0.");

static PyObject *dlpack_inspect(PyObject *module, PyObject *capsule)
{
    (void)module;
    int versioned;
    void *ptr = capsule_pointer(capsule, &versioned);
    if (ptr == NULL) {
        return NULL;
    }
    const DLTensor *t;
    unsigned long major = 0, minor = 0;
    unsigned long long flags = 0;
    if (versioned) {
        const DLManagedTensorVersioned *m = ptr;
        major = m->version.major;
        minor = m->version.minor;
        if (major != HURRAY_DLPACK_MAJOR) {
            return Py_BuildValue("(Okk)", Py_True, major, minor);
        }
        flags = m->flags;
        t = &m->dl_tensor;
    } else {
        t = &((const DLManagedTensor *)ptr)->dl_tensor;
    }
    if (t->ndim < 0 || t->ndim > DLPACK_BRIDGE_MAX_RANK) {
        return refuse("the DLPack tensor has rank %d; Hurray holds ranks 0 to %d", (int)t->ndim,
                      DLPACK_BRIDGE_MAX_RANK);
    }
    if (t->ndim > 0 && t->shape == NULL) {
        return refuse("the DLPack tensor has rank %d and no shape", (int)t->ndim);
    }
    PyObject *shape = int64_tuple(t->shape, t->ndim);
    if (shape == NULL) {
        return NULL;
    }
    PyObject *strides;
    if (t->strides != NULL || t->ndim == 0) {
        strides = int64_tuple(t->strides, t->ndim);
        if (strides == NULL) {
            Py_DECREF(shape);
            return NULL;
        }
    } else {
        strides = Py_NewRef(Py_None);
    }
    return Py_BuildValue("(OkkKiiiiiKKNNK)", versioned ? Py_True : Py_False, major, minor, flags,
                         (int)t->device.device_type, (int)t->device.device_id, (int)t->dtype.code,
                         (int)t->dtype.bits, (int)t->dtype.lanes,
                         (unsigned long long)(uintptr_t)t->data, (unsigned long long)t->byte_offset,
                         shape, strides, (unsigned long long)(uintptr_t)ptr);
}

/* The consumer's hold on a producer's tensor: deallocating it calls the
 * producer's deleter, once. */
typedef struct {
    PyObject_HEAD
    void *managed; /* DLManagedTensor or DLManagedTensorVersioned; NULL once released */
    int versioned;
    uint64_t flags;
    PyObject *weakrefs;
} OwnerObject;

static void owner_release(OwnerObject *self)
{
    void *managed = self->managed;
    self->managed = NULL;
    if (managed == NULL) {
        return;
    }
    call_deleter(managed, self->versioned);
}

static void owner_dealloc(OwnerObject *self)
{
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    HurrayPySavedError saved = hurray__py_save_error();
    owner_release(self);
    hurray__py_restore_error(saved);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *owner_get_readonly(OwnerObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong((self->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0);
}

static PyObject *owner_get_versioned(OwnerObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->versioned);
}

static PyObject *owner_get_flags(OwnerObject *self, void *closure)
{
    (void)closure;
    return PyLong_FromUnsignedLongLong(self->flags);
}

static PyObject *owner_get_released(OwnerObject *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->managed == NULL);
}

static PyGetSetDef owner_getset[] = {
    {"readonly", (getter)owner_get_readonly, NULL,
     "True when the producer marked the memory read-only.", NULL},
    {"versioned", (getter)owner_get_versioned, NULL, "True for a \"dltensor_versioned\" capsule.",
     NULL},
    {"flags", (getter)owner_get_flags, NULL, "The producer's DLPack flags (0 for legacy).", NULL},
    {"released", (getter)owner_get_released, NULL,
     "True once the producer's deleter has been called.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyObject *owner_repr(OwnerObject *self)
{
    return PyUnicode_FromFormat("<hurray DLPack owner (%s%s)>",
                                self->versioned ? "versioned" : "legacy",
                                self->managed == NULL ? ", released" : "");
}

static PyTypeObject OwnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hurray._dlpack.Owner",
    .tp_doc = "Holds a producer's DLPack tensor; its deleter runs when this object goes.",
    .tp_basicsize = sizeof(OwnerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)owner_dealloc,
    .tp_repr = (reprfunc)owner_repr,
    .tp_getset = owner_getset,
    .tp_weaklistoffset = offsetof(OwnerObject, weakrefs),
};

PyDoc_STRVAR(take_doc, "take(capsule, managed, data) -> Owner\n\n"
                       "Take ownership of a DLPack capsule that inspect() read: the capsule is\n"
                       "renamed to its \"used_\" name and the returned Owner calls the producer's\n"
                       "deleter when it is deallocated. `managed` and `data` must be the\n"
                       "managed-tensor and data addresses inspect() returned, so that a capsule\n"
                       "whose pointer or tensor changed in between is refused.");

static PyObject *dlpack_take(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *capsule;
    unsigned long long managed, data;
    if (!PyArg_ParseTuple(args, "OKK:take", &capsule, &managed, &data)) {
        return NULL;
    }
    int versioned;
    void *ptr = capsule_pointer(capsule, &versioned);
    if (ptr == NULL) {
        return NULL;
    }
    /* The struct inspect() read, not merely one with the same data: the
     * deleter this Owner will call is the one of the struct that was checked. */
    if ((unsigned long long)(uintptr_t)ptr != managed) {
        return capsule_error("the DLPack capsule changed while it was read");
    }
    uint64_t flags = 0;
    const DLTensor *t;
    if (versioned) {
        const DLManagedTensorVersioned *m = ptr;
        if (m->version.major != HURRAY_DLPACK_MAJOR) {
            return refuse("DLPack major version %lu is not %d", (unsigned long)m->version.major,
                          HURRAY_DLPACK_MAJOR);
        }
        flags = m->flags;
        t = &m->dl_tensor;
    } else {
        t = &((const DLManagedTensor *)ptr)->dl_tensor;
    }
    if ((unsigned long long)(uintptr_t)t->data != data) {
        return capsule_error("the DLPack capsule changed while it was read");
    }
    OwnerObject *owner = PyObject_New(OwnerObject, &OwnerType);
    if (owner == NULL) {
        return NULL;
    }
    owner->managed = NULL;
    owner->versioned = versioned;
    owner->flags = flags;
    owner->weakrefs = NULL;
    const char *used = versioned ? HURRAY_DLPACK_VERSIONED_USED_NAME : HURRAY_DLPACK_USED_NAME;
    if (PyCapsule_SetName(capsule, used) < 0) {
        Py_DECREF(owner);
        return NULL;
    }
    owner->managed = ptr;
    return (PyObject *)owner;
}

static PyMethodDef dlpack_methods[] = {
    {"export", (PyCFunction)(void (*)(void))dlpack_export, METH_FASTCALL, export_doc},
    {"inspect", dlpack_inspect, METH_O, inspect_doc},
    {"take", dlpack_take, METH_VARARGS, take_doc},
    HURRAY__PY_OWNER_COUNTERS_METHOD,
    {NULL, NULL, 0, NULL},
};

HURRAY__PY_MODULE_DEF(dlpack_module, "hurray._dlpack", "The DLPack bridge's C side.",
                      dlpack_methods);

PyMODINIT_FUNC PyInit__dlpack(void)
{
    const HurrayPyItem items[] = {
        HURRAY__PY_TYPE("Owner", &OwnerType),
        HURRAY__PY_CAPSULE_TYPE,
        HURRAY__PY_INT("DLPACK_MAJOR", HURRAY_DLPACK_MAJOR),
        HURRAY__PY_INT("DLPACK_MINOR", HURRAY_DLPACK_MINOR),
        HURRAY__PY_END,
    };
    return hurray__py_module_new(&dlpack_module, items);
}
