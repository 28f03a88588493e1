/*
 * module.c -- the C peer's Python face: "hurray_tensor" capsules made and
 * taken with the Python C API, the handles inside them used only through
 * hurray.h. This is what a C extension built on hurray-ffi does; it never
 * imports the hurray package.
 *
 * Capsule rules (D-NB2, ADR-023 section 5 as amended by ADR-034): the name
 * is "hurray_tensor"; the pointer is a HurrayBufferList, the context a
 * HurrayTensorContext. A consumer checks everything first and only then
 * takes ownership by renaming the capsule "used_hurray_tensor" (and clearing
 * its context); from then on it destroys the list, then the context. The
 * producer's capsule destructor destroys them, in the same order, only while
 * the name still stands.
 *
 * Built twice by the tests: linked to the package's libhurray, and as
 * c_peer_static with its own hidden copy of native/src compiled in
 * (PEER_MODULE names the module).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#ifndef PEER_MODULE
#define PEER_MODULE c_peer
#endif
#define PEER_STRINGIFY_(x) #x
#define PEER_STRINGIFY(x) PEER_STRINGIFY_(x)
#define PEER_CONCAT_(a, b) a##b
#define PEER_CONCAT(a, b) PEER_CONCAT_(a, b)
#define PEER_NAME PEER_STRINGIFY(PEER_MODULE)

static const char CAPSULE_NAME[] = "hurray_tensor";
static const char USED_CAPSULE_NAME[] = "used_hurray_tensor";

static PyObject *PeerError; /* args: (status, message) */

static PyObject *raise_peer(HurrayStatus status)
{
    PyObject *args = Py_BuildValue("(is)", (int)status, peer_last_message());
    if (args != NULL) {
        PyErr_SetObject(PeerError, args);
        Py_DECREF(args);
    }
    return NULL;
}

/* ---- producing --------------------------------------------------------- */

/* Frees an unconsumed capsule's handles: list first, then context. */
static void capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
        return; /* renamed: the consumer owns the handles */
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    HurrayBufferList *list = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    HurrayTensorContext *ctx = PyCapsule_GetContext(capsule);
    hurray_buffer_list_destroy(&list);
    hurray_tensor_context_destroy(&ctx);
    PyErr_Clear();
    PyErr_Restore(type, value, traceback);
}

/* Reads a sequence of at most HURRAY_MAX_RANK ints into unsigned_out, or,
 * when that is NULL, into signed_out. */
static int read_ints(PyObject *seq, const char *what, uint64_t *unsigned_out, int64_t *signed_out,
                     uint32_t *count)
{
    PyObject *fast = PySequence_Fast(seq, what);
    if (fast == NULL) {
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > HURRAY_MAX_RANK) {
        Py_DECREF(fast);
        PyErr_Format(PyExc_ValueError, "%s: more than %d entries", what, HURRAY_MAX_RANK);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(fast, i);
        if (unsigned_out != NULL) {
            unsigned_out[i] = PyLong_AsUnsignedLongLong(item);
        } else {
            signed_out[i] = PyLong_AsLongLong(item);
        }
        if (PyErr_Occurred()) {
            Py_DECREF(fast);
            return -1;
        }
    }
    *count = (uint32_t)n;
    Py_DECREF(fast);
    return 0;
}

PyDoc_STRVAR(produce_doc,
             "produce(dtype, shape, strides, byte_order, packing, scheme, granularity, axis,\n"
             "        block_size, ggml_type, parts, buffers, readonly=False)\n"
             "    -> (capsule, descriptor_bytes)\n"
             "\n"
             "A \"hurray_tensor\" capsule over the peer's own copies of buffers (bytes-like),\n"
             "with a descriptor built by the hurray-ffi builder. strides None means\n"
             "row-major; packing -1 the default; parts a sequence of (role, dtype,\n"
             "buffer_index, byte_offset, layout); readonly marks every buffer read-only\n"
             "(an ABI-5 build; the ABI-4 build refuses it).");

static PyObject *peer_produce_py(PyObject *module, PyObject *args)
{
    (void)module;
    PeerRecipe r;
    memset(&r, 0, sizeof r);
    PyObject *shape_obj, *strides_obj, *parts_obj, *buffers_obj;
    if (!PyArg_ParseTuple(args, "IOOIiIIIKIOO|p:produce", &r.dtype, &shape_obj, &strides_obj,
                          &r.byte_order, &r.packing, &r.scheme, &r.granularity, &r.axis,
                          &r.block_size, &r.ggml_type, &parts_obj, &buffers_obj, &r.readonly)) {
        return NULL;
    }
    uint64_t shape[HURRAY_MAX_RANK];
    int64_t strides[HURRAY_MAX_RANK];
    if (read_ints(shape_obj, "shape", shape, NULL, &r.rank) < 0) {
        return NULL;
    }
    r.shape = shape;
    if (strides_obj != Py_None) {
        uint32_t n = 0;
        if (read_ints(strides_obj, "strides", NULL, strides, &n) < 0) {
            return NULL;
        }
        if (n != r.rank) {
            PyErr_SetString(PyExc_ValueError, "strides and shape differ in length");
            return NULL;
        }
        r.strides = strides;
    }
    PyObject *parts = PySequence_Fast(parts_obj, "parts");
    if (parts == NULL) {
        return NULL;
    }
    if (PySequence_Fast_GET_SIZE(parts) > HURRAY_MAX_PARTS) {
        Py_DECREF(parts);
        PyErr_SetString(PyExc_ValueError, "too many parts");
        return NULL;
    }
    r.part_count = (uint32_t)PySequence_Fast_GET_SIZE(parts);
    for (uint32_t i = 0; i < r.part_count; i++) {
        PeerPartSpec *p = &r.parts[i];
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(parts, i), "IIKKI:part", &p->role, &p->dtype,
                              &p->buffer_index, &p->byte_offset, &p->layout)) {
            Py_DECREF(parts);
            return NULL;
        }
    }
    Py_DECREF(parts);

    PyObject *buffers = PySequence_Fast(buffers_obj, "buffers");
    if (buffers == NULL) {
        return NULL;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(buffers);
    Py_buffer *views = PyMem_Calloc((size_t)count + 1, sizeof *views);
    const uint8_t **data = PyMem_Calloc((size_t)count + 1, sizeof *data);
    uint64_t *lens = PyMem_Calloc((size_t)count + 1, sizeof *lens);
    PyObject *capsule = NULL;
    PyObject *result = NULL;
    Py_ssize_t taken = 0;
    if (views == NULL || data == NULL || lens == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; taken < count; taken++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(buffers, taken), &views[taken],
                               PyBUF_SIMPLE) < 0) {
            goto done;
        }
        data[taken] = views[taken].buf;
        lens[taken] = (uint64_t)views[taken].len;
    }
    r.buffer_count = (uint32_t)count;
    r.buffers = data;
    r.buffer_lens = lens;

    HurrayBufferList *list = NULL;
    HurrayTensorContext *ctx = NULL;
    HurrayStatus status = peer_produce(&r, &list, &ctx);
    if (status != HURRAY_OK) {
        raise_peer(status);
        goto done;
    }
    capsule = PyCapsule_New(list, CAPSULE_NAME, capsule_destructor);
    if (capsule == NULL) {
        hurray_buffer_list_destroy(&list);
        hurray_tensor_context_destroy(&ctx);
        goto done;
    }
    if (PyCapsule_SetContext(capsule, ctx) != 0) {
        hurray_tensor_context_destroy(&ctx); /* the destructor frees the list */
        Py_CLEAR(capsule);
        goto done;
    }
    /* What the producer meant: the descriptor it put in its own context. */
    const uint8_t *encoded = NULL;
    uint64_t encoded_len = 0;
    if (hurray_tensor_context_descriptor(ctx, &encoded, &encoded_len) != HURRAY_OK) {
        peer_set_message("reading back the descriptor: %s", hurray_last_error_message());
        Py_CLEAR(capsule);
        raise_peer(HURRAY_ERROR_NOT_A_CONTEXT);
        goto done;
    }
    result = Py_BuildValue("(Oy#)", capsule, (const char *)encoded, (Py_ssize_t)encoded_len);
done:
    for (Py_ssize_t i = 0; i < taken; i++) {
        PyBuffer_Release(&views[i]);
    }
    PyMem_Free(views);
    PyMem_Free(data);
    PyMem_Free(lens);
    Py_DECREF(buffers);
    Py_XDECREF(capsule);
    return result;
}

/* ---- consuming --------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    HurrayBufferList *list;
    HurrayTensorContext *ctx;
    HurrayDescriptor *desc;
    uint32_t version;
} Taken;

static void taken_release_handles(Taken *self)
{
    hurray_descriptor_destroy(&self->desc);
    hurray_buffer_list_destroy(&self->list); /* the list first, then the context */
    hurray_tensor_context_destroy(&self->ctx);
}

static void taken_dealloc(Taken *self)
{
    taken_release_handles(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *taken_release(Taken *self, PyObject *unused)
{
    (void)unused;
    taken_release_handles(self);
    Py_RETURN_NONE;
}

static PyObject *fields_dict(const PeerFields *f)
{
    PyObject *shape = PyTuple_New(f->rank);
    PyObject *strides = PyTuple_New(f->rank);
    PyObject *parts = PyDict_New();
    PyObject *result = NULL;
    if (shape == NULL || strides == NULL || parts == NULL) {
        goto done;
    }
    for (uint32_t i = 0; i < f->rank; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromUnsignedLongLong(f->shape[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(f->strides[i]));
    }
    for (uint32_t role = HURRAY_ROLE_VALUES; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
        if (!f->part_present[role - 1]) {
            continue;
        }
        const PeerPartSpec *p = &f->parts[role - 1];
        PyObject *key = PyLong_FromUnsignedLong(role);
        PyObject *item = Py_BuildValue("(IKKI)", p->dtype, (unsigned long long)p->buffer_index,
                                       (unsigned long long)p->byte_offset, p->layout);
        int failed = key == NULL || item == NULL || PyDict_SetItem(parts, key, item) < 0;
        Py_XDECREF(key);
        Py_XDECREF(item);
        if (failed) {
            goto done;
        }
    }
    result = Py_BuildValue("{s:I,s:O,s:O,s:I,s:I,s:I,s:I,s:I,s:K,s:I,s:O,s:K}", "dtype", f->dtype,
                           "shape", shape, "strides", strides, "byte_order", f->byte_order,
                           "packing", f->packing, "scheme", f->scheme, "granularity",
                           f->granularity, "axis", f->axis, "block_size",
                           (unsigned long long)f->block_size, "ggml_type", f->ggml_type, "parts",
                           parts, "buffer_count", (unsigned long long)f->buffer_count);
done:
    Py_XDECREF(shape);
    Py_XDECREF(strides);
    Py_XDECREF(parts);
    return result;
}

static PyObject *buffers_list(const HurrayBufferList *list, uint64_t count)
{
    PyObject *result = PyList_New(0);
    for (uint64_t i = 0; result != NULL && i < count; i++) {
        const HurrayBuffer *buf = NULL;
        void *data = NULL;
        uint64_t len = 0;
        if (hurray_buffer_list_get(list, i, &buf) != HURRAY_OK ||
            hurray_buffer_data(buf, &data, &len) != HURRAY_OK) {
            peer_set_message("reading buffer %llu: %s", (unsigned long long)i,
                             hurray_last_error_message());
            Py_DECREF(result);
            return raise_peer(HURRAY_ERROR_OUT_OF_RANGE);
        }
        PyObject *copy = PyBytes_FromStringAndSize(data, (Py_ssize_t)len);
        if (copy == NULL || PyList_Append(result, copy) < 0) {
            Py_XDECREF(copy);
            Py_CLEAR(result);
            break;
        }
        Py_DECREF(copy);
    }
    return result;
}

static PyObject *readonly_list(const Taken *self, uint64_t count)
{
    PyObject *result = PyList_New(0);
    for (uint64_t i = 0; result != NULL && i < count; i++) {
        int readonly = 0;
        HurrayStatus status = peer_buffer_readonly(self->ctx, self->list, i, &readonly);
        if (status != HURRAY_OK) {
            Py_DECREF(result);
            return raise_peer(status);
        }
        if (PyList_Append(result, readonly ? Py_True : Py_False) < 0) {
            Py_CLEAR(result);
        }
    }
    return result;
}

static PyObject *elements_dict(const Taken *self, const PeerFields *f)
{
    PyObject *result = PyDict_New();
    for (uint32_t role = HURRAY_ROLE_VALUES; result != NULL && role <= HURRAY_ROLE_GLOBAL_SCALE;
         role++) {
        if (!f->part_present[role - 1]) {
            continue;
        }
        uint8_t *data = NULL;
        uint64_t len = 0;
        HurrayStatus status = peer_gather(f, self->list, role, &data, &len);
        if (status != HURRAY_OK) {
            Py_DECREF(result);
            return raise_peer(status);
        }
        PyObject *key = PyLong_FromUnsignedLong(role);
        PyObject *value = PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
        free(data);
        int failed = key == NULL || value == NULL || PyDict_SetItem(result, key, value) < 0;
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (failed) {
            Py_CLEAR(result);
        }
    }
    return result;
}

static PyObject *taken_report(Taken *self, PyObject *unused)
{
    (void)unused;
    if (self->list == NULL) {
        peer_set_message("the tensor was released");
        return raise_peer(HURRAY_ERROR_NULL_ARGUMENT);
    }
    PeerFields f;
    HurrayStatus status = peer_read_fields(self->desc, &f);
    if (status != HURRAY_OK) {
        return raise_peer(status);
    }
    const uint8_t *bytes = NULL;
    uint64_t len = 0;
    if (hurray_tensor_context_descriptor(self->ctx, &bytes, &len) != HURRAY_OK) {
        peer_set_message("reading the descriptor: %s", hurray_last_error_message());
        return raise_peer(HURRAY_ERROR_NOT_A_CONTEXT);
    }
    PyObject *fields = fields_dict(&f);
    PyObject *buffers = fields == NULL ? NULL : buffers_list(self->list, f.buffer_count);
    PyObject *elements = buffers == NULL ? NULL : elements_dict(self, &f);
    PyObject *readonly = elements == NULL ? NULL : readonly_list(self, f.buffer_count);
    PyObject *result = NULL;
    if (readonly != NULL) {
        result = Py_BuildValue("{s:I,s:y#,s:O,s:O,s:O,s:O}", "abi_version", self->version,
                               "descriptor", (const char *)bytes, (Py_ssize_t)len, "fields", fields,
                               "buffers", buffers, "elements", elements, "readonly", readonly);
    }
    Py_XDECREF(readonly);
    Py_XDECREF(fields);
    Py_XDECREF(buffers);
    Py_XDECREF(elements);
    return result;
}

static PyMethodDef taken_methods[] = {
    {"report", (PyCFunction)taken_report, METH_NOARGS,
     "What the peer saw: version, descriptor bytes and fields, buffers, elements by role."},
    {"release", (PyCFunction)taken_release, METH_NOARGS,
     "Destroy the list, then the context (once; later calls do nothing)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject TakenType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = PEER_NAME ".Taken",
    .tp_doc = "A tensor the C peer took from a capsule; it owns the list and the context.",
    .tp_basicsize = sizeof(Taken),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)taken_dealloc,
    .tp_methods = taken_methods,
};

PyDoc_STRVAR(consume_doc,
             "consume(capsule) -> Taken\n"
             "\n"
             "Checks the capsule (name, ABI version first, descriptor, buffers) and only\n"
             "then takes it. On refusal raises PeerError(status, message) and leaves the\n"
             "capsule exactly as it was.");

static PyObject *peer_consume_py(PyObject *module, PyObject *capsule)
{
    (void)module;
    Taken *taken = PyObject_New(Taken, &TakenType);
    if (taken == NULL) {
        return NULL;
    }
    taken->list = NULL;
    taken->ctx = NULL;
    taken->desc = NULL;
    taken->version = 0;
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
        Py_DECREF(taken);
        peer_set_message("not an unused capsule named '%s'", CAPSULE_NAME);
        return raise_peer(HURRAY_ERROR_INVALID_ARGUMENT);
    }
    /* Neither call dereferences anything: they hand back stored pointers. */
    HurrayBufferList *list = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    HurrayTensorContext *ctx = PyCapsule_GetContext(capsule);
    if (PyErr_Occurred()) {
        Py_DECREF(taken);
        return NULL;
    }
    HurrayStatus status = peer_check(ctx, list, &taken->version, &taken->desc);
    if (status != HURRAY_OK) {
        Py_DECREF(taken);
        return raise_peer(status);
    }
    if (PyCapsule_SetName(capsule, USED_CAPSULE_NAME) != 0 ||
        PyCapsule_SetContext(capsule, NULL) != 0) {
        Py_DECREF(taken);
        return NULL;
    }
    taken->list = list;
    taken->ctx = ctx;
    return (PyObject *)taken;
}

/* ---- counters and facts ------------------------------------------------ */

static PyObject *peer_counters_py(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PeerCounters c;
    peer_counters(&c);
    return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "buffers_made",
                         (unsigned long long)c.buffers_made, "buffers_released",
                         (unsigned long long)c.buffers_released, "owners_made",
                         (unsigned long long)c.owners_made, "owners_released",
                         (unsigned long long)c.owners_released, "bad_releases",
                         (unsigned long long)c.bad_releases);
}

static PyObject *peer_linked_abi_py(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return PyLong_FromUnsignedLong(hurray_c_abi_version());
}

/* The address of the hurray_c_abi_version this module calls: the package's
 * libhurray, or the module's own hidden copy. */
static PyObject *peer_library_address_py(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    uint32_t (*fn)(void) = hurray_c_abi_version;
    uintptr_t address;
    memcpy(&address, &fn, sizeof address);
    return PyLong_FromUnsignedLongLong((unsigned long long)address);
}

static PyMethodDef peer_methods[] = {
    {"produce", peer_produce_py, METH_VARARGS, produce_doc},
    {"consume", peer_consume_py, METH_O, consume_doc},
    {"counters", peer_counters_py, METH_NOARGS, "Allocations made and released, counted."},
    {"linked_abi_version", peer_linked_abi_py, METH_NOARGS,
     "hurray_c_abi_version() of the library this module calls."},
    {"library_address", peer_library_address_py, METH_NOARGS,
     "Address of the hurray_c_abi_version this module calls."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef peer_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = PEER_NAME,
    .m_doc = "A C peer of the native protocol, built on hurray-ffi alone.",
    .m_size = -1,
    .m_methods = peer_methods,
};

PyMODINIT_FUNC PEER_CONCAT(PyInit_, PEER_MODULE)(void)
{
    /* A library serves every ABI version up to its own: a peer built for
     * an older header runs against a newer library, never the reverse. */
    if (hurray_c_abi_version() < HURRAY_C_ABI_VERSION) {
        PyErr_Format(PyExc_ImportError, "%s was compiled for C ABI %d but the library has %u",
                     PEER_NAME, HURRAY_C_ABI_VERSION, (unsigned)hurray_c_abi_version());
        return NULL;
    }
    if (PyType_Ready(&TakenType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&peer_module);
    if (module == NULL) {
        return NULL;
    }
    PeerError = PyErr_NewException(PEER_NAME ".PeerError", NULL, NULL);
    if (PeerError == NULL || PyModule_AddObjectRef(module, "PeerError", PeerError) < 0 ||
        PyModule_AddIntConstant(module, "HEADER_ABI_VERSION", HURRAY_C_ABI_VERSION) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
