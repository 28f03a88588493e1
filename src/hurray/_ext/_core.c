/*
 * hurray._core -- the hot path in C (ADR-046): from_numpy, a Tensor's numpy
 * view (Tensor.__array__), and making Tensor and Descriptor objects, with no
 * per-call Python.
 *
 * The Python classes stay the API: Tensor (core/tensor.py) and Descriptor
 * (core/descriptor.py) keep their __slots__, and this module reads and writes
 * those slots at the offsets their member descriptors give (setup()). It
 * handles only the common cases and hands everything else -- a subclass, a
 * dtype it has not been told, a quantized or packed tensor, a dtype or copy
 * argument, a failure -- to the Python implementation it was given, which
 * raises the documented errors. So every documented behaviour has exactly
 * one Python statement; this file only skips the interpreter when the
 * answer is already known to be the plain one.
 *
 * A Tensor subclass is never served here (ADR-040: hurray.io's LazyTensor
 * verifies its memory when its _buffers is read, through a property this
 * code would bypass), and neither is a descriptor that has been closed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "_core_checkpoint.h"
#include "_core_dequant.h"
#include "_core_nodes.h"
#include "_core_safetensors.h"
#include "_protocol_api.h"
#include "_pyruntime.h"
#include "hurray.h"


/* ---- what setup() was given -------------------------------------------- */

typedef struct Slots {
    Py_ssize_t descriptor, buffers, owner, readonly, view; /* Tensor */
    Py_ssize_t handle, bytes, fields, box, address;        /* Descriptor */
} Slots;

static Slots slot;
static PyTypeObject *tensor_type;     /* hurray.Tensor, exactly */
static PyTypeObject *descriptor_type; /* hurray.Descriptor, exactly */
static PyObject *numpy_codes;         /* {np.dtype: (code, byte order, packing or None)} */
static PyObject *numpy_dtypes;        /* {code * 2 + byte order: builtin np.dtype} */
static PyObject *from_numpy_py;       /* the Python from_numpy */
static PyObject *array_py;            /* the Python Tensor.__array__ */
static PyObject *from_hurray_py;      /* the Python from_hurray */
static PyObject *refuse_py;           /* protocol._refuse: raises what __hurray__ did wrong */
static PyObject *to_capsule_py;       /* protocol.to_capsule: Tensor.__hurray__ in Python */
static PyObject *hurray_name;         /* "__hurray__", interned (module init) */
static PyObject *max_version_kw;      /* ("max_version",): __hurray__'s keyword (module init) */
static PyObject *this_abi;            /* HURRAY_C_ABI_VERSION as an int (module init) */
static PyObject *descriptors;         /* the descriptor cache: {bytes: Descriptor} (module init) */
static PyObject *dlpack_py;           /* the Python Tensor.__dlpack__ */
static PyObject *dlpack_export;       /* hurray._dlpack.export */
static PyObject *dlpack_plans;        /* dlpack._PLANS: {descriptor bytes: _Plan} */
static PyObject *cpu_device;          /* (kDLCPU, 0) */
static PyObject *buffer_py;           /* the Python Tensor.buffer */
static PyObject *stored_values_py;    /* the Python Tensor.stored_values */
static PyObject *check_spans_py;      /* descriptor.check_spans, which raises what is wrong */
static const HurrayProtocolApi *protocol_api; /* hurray._protocol's C half */
static PyObject *array_names[2];              /* "dtype", "copy", interned (module init) */
static PyObject *dlpack_names[4];             /* "stream", "max_version", "dl_device", "copy" */

#define SLOT(obj, offset) (*(PyObject **)((char *)(obj) + (offset)))

/* Sets an empty slot (a new object's): steals value. */
static void fill(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    SLOT(obj, offset) = value;
}

/* ---- the C descriptor, owned by a capsule ------------------------------ */

/* The C descriptor a Descriptor owns, or NULL with no exception set when it
 * has been closed (its _address is None; Python then says so). */
static const HurrayDescriptor *c_descriptor(PyObject *descriptor)
{
    PyObject *address = SLOT(descriptor, slot.address);
    if (address == NULL || !PyLong_CheckExact(address)) {
        return NULL;
    }
    const HurrayDescriptor *desc = PyLong_AsVoidPtr(address);
    if (desc == NULL) {
        PyErr_Clear();
    }
    return desc;
}

/* (address, nbytes) as a new tuple. */
static PyObject *span_tuple(uint64_t address, uint64_t nbytes)
{
    PyObject *a = PyLong_FromUnsignedLongLong(address);
    PyObject *n = a == NULL ? NULL : PyLong_FromUnsignedLongLong(nbytes);
    PyObject *span = n == NULL ? NULL : PyTuple_New(2);
    if (span == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(n);
        return NULL;
    }
    PyTuple_SET_ITEM(span, 0, a);
    PyTuple_SET_ITEM(span, 1, n);
    return span;
}

/* A hurray.Descriptor owning desc (checked already); destroys desc on
 * failure. The same fields Descriptor._adopt_handed sets, but the cffi
 * handle is left None for Descriptor.handle to make on first use. */
static PyObject *new_descriptor(HurrayDescriptor *desc)
{
    PyObject *box, *address;
    if (hurray__py_descriptor_box(desc, &box, &address) < 0) {
        return NULL;
    }
    PyObject *self = descriptor_type->tp_alloc(descriptor_type, 0);
    if (self == NULL) {
        Py_DECREF(address);
        Py_DECREF(box);
        return NULL;
    }
    fill(self, slot.handle, Py_NewRef(Py_None));
    fill(self, slot.box, box);
    fill(self, slot.address, address);
    fill(self, slot.fields, Py_NewRef(Py_None));
    fill(self, slot.bytes, Py_NewRef(Py_None));
    return self;
}

/* A hurray.Tensor over spans that were checked against descriptor. */
static PyObject *new_tensor(PyObject *descriptor, PyObject *spans, PyObject *owner, int readonly)
{
    PyObject *self = tensor_type->tp_alloc(tensor_type, 0);
    if (self == NULL) {
        return NULL;
    }
    fill(self, slot.descriptor, Py_NewRef(descriptor));
    fill(self, slot.buffers, Py_NewRef(spans));
    fill(self, slot.owner, Py_NewRef(owner));
    fill(self, slot.readonly, Py_NewRef(readonly ? Py_True : Py_False));
    fill(self, slot.view, Py_NewRef(Py_None));
    return self;
}

/* hurray_descriptor_check_buffers over one borrowed span. */
static HurrayStatus check_one_span(const HurrayDescriptor *desc, void *data, uint64_t nbytes)
{
    HurrayBufferList *list = NULL;
    HurrayBuffer *buf = NULL;
    HurrayStatus status = hurray_buffer_list_new(&list);
    if (status == HURRAY_OK) {
        status = hurray_buffer_from_ptr(data, nbytes, NULL, NULL, &buf);
    }
    if (status == HURRAY_OK) {
        status = hurray_buffer_list_push(list, &buf);
        hurray_buffer_destroy(&buf); /* no-op once the list took it */
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_check_buffers(desc, list);
    }
    hurray_buffer_list_destroy(&list);
    return status;
}

/* ---- from_numpy -------------------------------------------------------- */

/* The descriptor from_numpy builds (bridges/numpy.py states the
 * rules), or NULL with no exception set when the Python path must decide. */
static HurrayDescriptor *describe_array(PyArrayObject *arr, PyObject *codes, uint64_t *out_low,
                                        uint64_t *out_span)
{
    long code = PyLong_AsLong(PyTuple_GET_ITEM(codes, 0));
    long order = PyLong_AsLong(PyTuple_GET_ITEM(codes, 1));
    PyObject *packing = PyTuple_GET_ITEM(codes, 2);
    int nd = PyArray_NDIM(arr);
    npy_intp *dims = PyArray_DIMS(arr);
    npy_intp *byte_strides = PyArray_STRIDES(arr);
    npy_intp itemsize = PyArray_ITEMSIZE(arr);
    int empty = PyArray_SIZE(arr) == 0;
    uint64_t shape[HURRAY_MAX_RANK];
    int64_t strides[HURRAY_MAX_RANK];
    int64_t low = 0, high = 0;
    if (nd > HURRAY_MAX_RANK || itemsize <= 0) {
        return NULL;
    }
    for (int i = 0; i < nd; i++) {
        shape[i] = (uint64_t)dims[i];
        npy_intp step = byte_strides[i];
        if (step % itemsize != 0) {
            if (dims[i] > 1 && !empty) {
                return NULL; /* the Python path names the stride */
            }
            strides[i] = 0; /* a dimension never stepped along */
        } else {
            strides[i] = (int64_t)(step / itemsize);
        }
        int64_t extent = (int64_t)(dims[i] - 1) * (int64_t)step;
        if (!empty) {
            if (extent < 0) {
                low += extent;
            } else {
                high += extent;
            }
        }
    }
    HurrayDescriptor *desc = NULL;
    if (hurray_descriptor_new((uint32_t)code, (uint32_t)nd, shape, &desc) != HURRAY_OK) {
        return NULL;
    }
    HurrayStatus status = hurray_descriptor_set_strides(desc, (uint32_t)nd, strides);
    if (status == HURRAY_OK && order != HURRAY_BYTE_ORDER_LITTLE) {
        status = hurray_descriptor_set_byte_order(desc, (uint32_t)order);
    }
    if (status == HURRAY_OK && packing != Py_None) {
        status = hurray_descriptor_set_packing(desc, (uint32_t)PyLong_AsLong(packing));
    }
    if (status == HURRAY_OK && low != 0) {
        status = hurray_descriptor_set_part(desc, HURRAY_ROLE_VALUES, (uint32_t)code, 0,
                                            (uint64_t)-low, HURRAY_PART_LAYOUT_ROW_MAJOR);
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_validate(desc); /* the one check; desc keeps it */
    }
    if (status != HURRAY_OK) {
        hurray_descriptor_destroy(&desc);
        return NULL;
    }
    *out_low = (uint64_t)low;
    *out_span = empty ? 0 : (uint64_t)(high - low + itemsize);
    return desc;
}

PyDoc_STRVAR(from_numpy_doc,
             "from_numpy(array, /) -> Tensor\n"
             "\n"
             "hurray.from_numpy's common case in C: a plain ndarray of a dtype the\n"
             "Python implementation has seen. Anything else goes to that implementation.");

static PyObject *core_from_numpy(PyObject *module, PyObject *array)
{
    (void)module;
    if (Py_TYPE(array) != &PyArray_Type) {
        return PyObject_CallOneArg(from_numpy_py, array);
    }
    PyArrayObject *arr = (PyArrayObject *)array;
    PyObject *codes = PyDict_GetItemWithError(numpy_codes, (PyObject *)PyArray_DESCR(arr));
    if (codes == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_CallOneArg(from_numpy_py, array);
    }
    uint64_t low = 0, nbytes = 0;
    HurrayDescriptor *desc = describe_array(arr, codes, &low, &nbytes);
    if (desc == NULL) {
        return PyErr_Occurred() ? NULL : PyObject_CallOneArg(from_numpy_py, array);
    }
    char *address = (char *)PyArray_DATA(arr) + (int64_t)low;
    if (check_one_span(desc, address, nbytes) != HURRAY_OK) {
        hurray_descriptor_destroy(&desc);
        return PyObject_CallOneArg(from_numpy_py, array); /* raises what is wrong */
    }
    PyObject *descriptor = new_descriptor(desc); /* owns desc now, or freed it */
    if (descriptor == NULL) {
        return NULL;
    }
    PyObject *span = span_tuple((uint64_t)(uintptr_t)address, nbytes);
    PyObject *spans = span == NULL ? NULL : PyTuple_Pack(1, span);
    Py_XDECREF(span);
    PyObject *tensor = spans == NULL
                           ? NULL
                           : new_tensor(descriptor, spans, array, !PyArray_ISWRITEABLE(arr));
    Py_XDECREF(spans);
    Py_DECREF(descriptor);
    return tensor;
}

/* ---- from_hurray --------------------------------------------------------- */

/* descriptor's encoding: its _bytes, encoded here and kept there if it has
 * none yet (as Descriptor.encode does), or NULL with no exception set when
 * the Python path must decide. Borrowed. */
static PyObject *encoding_of(PyObject *descriptor)
{
    PyObject *bytes = SLOT(descriptor, slot.bytes);
    if (bytes != NULL && PyBytes_CheckExact(bytes)) {
        return bytes;
    }
    const HurrayDescriptor *desc = bytes == NULL ? NULL : c_descriptor(descriptor);
    if (desc == NULL) {
        return NULL;
    }
    /* The size first (a checked descriptor answers at once), then the bytes
     * straight into the object: any encoding version, any length. */
    uint64_t len = 0;
    if (hurray_descriptor_encode(desc, NULL, 0, &len) != HURRAY_OK ||
        len > HURRAY_MAX_DESCRIPTOR_V2_LEN) {
        PyErr_Clear();
        return NULL;
    }
    bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (bytes == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (hurray_descriptor_encode(desc, (uint8_t *)PyBytes_AS_STRING(bytes), len, &len) !=
        HURRAY_OK) {
        Py_DECREF(bytes);
        PyErr_Clear();
        return NULL;
    }
    Py_SETREF(SLOT(descriptor, slot.bytes), bytes);
    return bytes;
}

/* ---- the descriptor cache ---------------------------------------------- */

/* Decoded descriptors by their canonical bytes: the package's one cache of
 * them, for this file's hot paths and for the Python ones (protocol.py and
 * io/_pairs.py, through kept() and keep()). A Descriptor is immutable and
 * equal bytes are an equal descriptor, so tensors of one shape and type share
 * one; decoding again each time would cost more than a whole capsule
 * exchange. Bounded by clearing when full, which only costs re-decoding. */
#define DESCRIPTOR_CACHE_SIZE 256

/* The descriptor this path kept last (strong), compared by its bytes before
 * the dict is asked: a stream of capsules of one shape then needs no bytes
 * object and no hash. A Descriptor is immutable and equal bytes are an equal
 * descriptor, as for the dict. */
static PyObject *last_kept;

/* A kept Descriptor equal to bytes[0:len] and still open, borrowed; or NULL
 * (with an error set only if the dict lookup failed). */
static PyObject *kept_descriptor(const uint8_t *raw, uint64_t len)
{
    if (last_kept != NULL) {
        PyObject *bytes = SLOT(last_kept, slot.bytes);
        if (bytes != NULL && PyBytes_CheckExact(bytes) &&
            (uint64_t)PyBytes_GET_SIZE(bytes) == len &&
            memcmp(PyBytes_AS_STRING(bytes), raw, (size_t)len) == 0 &&
            c_descriptor(last_kept) != NULL) {
            return last_kept;
        }
    }
    PyObject *key = PyBytes_FromStringAndSize((const char *)raw, (Py_ssize_t)len);
    if (key == NULL) {
        return NULL;
    }
    PyObject *descriptor = PyDict_GetItemWithError(descriptors, key);
    Py_DECREF(key);
    if (descriptor == NULL || Py_TYPE(descriptor) != descriptor_type ||
        c_descriptor(descriptor) == NULL) {
        return NULL; /* not kept, or closed by its user: keep the new one */
    }
    Py_XSETREF(last_kept, Py_NewRef(descriptor));
    return descriptor;
}

/* Keeps descriptor under bytes, in the dict and as last_kept: the cache's
 * one rule (a full cache is cleared first). 0, or -1 with an error set. */
static int keep_as(PyObject *bytes, PyObject *descriptor)
{
    if (PyDict_GET_SIZE(descriptors) >= DESCRIPTOR_CACHE_SIZE) {
        PyDict_Clear(descriptors);
    }
    if (PyDict_SetItem(descriptors, bytes, descriptor) < 0) {
        return -1;
    }
    Py_XSETREF(last_kept, Py_NewRef(descriptor));
    return 0;
}

/* A new Descriptor owning desc (decoded and checked: ADR-046), its bytes
 * set, kept in the cache; destroys desc on failure. */
static PyObject *keep_descriptor(HurrayDescriptor *desc, const uint8_t *raw, uint64_t len)
{
    PyObject *descriptor = new_descriptor(desc); /* destroys desc on failure */
    if (descriptor == NULL) {
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)raw, (Py_ssize_t)len);
    if (bytes == NULL) {
        Py_DECREF(descriptor);
        return NULL;
    }
    Py_SETREF(SLOT(descriptor, slot.bytes), bytes);
    if (keep_as(bytes, descriptor) < 0) {
        Py_DECREF(descriptor);
        return NULL;
    }
    return descriptor;
}

PyDoc_STRVAR(kept_doc, "kept(data, /) -> Descriptor or None\n"
                       "\n"
                       "The open Descriptor the cache keeps for the bytes data, or None.");

static PyObject *core_kept(PyObject *module, PyObject *data)
{
    (void)module;
    if (!PyBytes_CheckExact(data)) {
        return PyErr_Format(PyExc_TypeError, "kept() takes bytes, not %s", Py_TYPE(data)->tp_name);
    }
    PyObject *descriptor = descriptor_type == NULL
                               ? NULL
                               : kept_descriptor((const uint8_t *)PyBytes_AS_STRING(data),
                                                 (uint64_t)PyBytes_GET_SIZE(data));
    if (descriptor == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return Py_NewRef(descriptor);
}

PyDoc_STRVAR(keep_doc, "keep(descriptor, /) -> descriptor\n"
                       "\n"
                       "Keeps descriptor in the cache under its encoding, and returns it.");

static PyObject *core_keep(PyObject *module, PyObject *descriptor)
{
    (void)module;
    PyObject *bytes = PyObject_CallMethod(descriptor, "encode", NULL);
    if (bytes == NULL) {
        return NULL;
    }
    if (!PyBytes_CheckExact(bytes)) {
        Py_DECREF(bytes);
        return PyErr_Format(PyExc_TypeError, "keep(): %s.encode() did not return bytes",
                            Py_TYPE(descriptor)->tp_name);
    }
    int kept = keep_as(bytes, descriptor);
    Py_DECREF(bytes);
    return kept < 0 ? NULL : Py_NewRef(descriptor);
}

/* The consumer's half of from_hurray for a capsule: take it (checked in
 * full, D-NB2 decision 3, through hurray._protocol's C API), keep (or find)
 * its descriptor, make the Tensor. As protocol._from_hurray, with no
 * Python object made beyond the ones the Tensor keeps. */
static PyObject *consume_to_tensor(PyObject *capsule)
{
    HurrayDescriptor *desc = NULL;
    const uint8_t *raw = NULL; /* the context's, which holder owns */
    uint64_t len = 0;
    PyObject *spans = NULL;
    uint32_t version = 0;
    int readonly = 0;
    PyObject *holder = protocol_api->take(capsule, &desc, &raw, &len, &spans, &version, &readonly);
    if (holder == NULL) {
        return NULL;
    }
    PyObject *tensor = NULL;
    PyObject *descriptor = kept_descriptor(raw, len);
    if (descriptor != NULL) {
        /* An equal descriptor is kept already; this one was decoded and
         * checked all the same (the capsule is from outside). */
        hurray_descriptor_destroy(&desc);
        Py_INCREF(descriptor);
    } else if (PyErr_Occurred()) {
        hurray_descriptor_destroy(&desc);
        goto done;
    } else if ((descriptor = keep_descriptor(desc, raw, len)) == NULL) {
        goto done;
    }
    /* Read-only when the context (ABI 5) marks any buffer so (ADR-059). */
    tensor = new_tensor(descriptor, spans, holder, readonly);
    Py_DECREF(descriptor);
done:
    Py_DECREF(spans);
    Py_DECREF(holder);
    return tensor;
}

/* obj.__hurray__(max_version=HURRAY_C_ABI_VERSION), for any producer that
 * is neither a plain Tensor nor a capsule; a producer that does not take the
 * keyword (TypeError) is asked again without it, and so gives the context
 * of an ABI-4 consumer (ADR-059, as numpy does for __dlpack__'s
 * max_version). Every other failure goes to protocol._refuse, which raises
 * the documented error. A capsule, new reference, or NULL. */
static PyObject *capsule_of(PyObject *obj)
{
    PyObject *method = PyObject_GetAttr(obj, hurray_name);
    if (method == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL; /* as Python's getattr: only AttributeError is "no method" */
        }
        PyErr_Clear();
        return PyObject_CallFunction(refuse_py, "OiO", obj, 0, Py_None);
    }
    PyObject *capsule = PyObject_Vectorcall(method, &this_abi, 0, max_version_kw);
    if (capsule == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
        PyErr_Clear();
        capsule = PyObject_CallNoArgs(method);
    }
    Py_DECREF(method);
    if (capsule == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return NULL; /* KeyboardInterrupt, SystemExit: not the producer's refusal */
        }
        PyObject *type, *value, *traceback;
        PyErr_Fetch(&type, &value, &traceback);
        PyErr_NormalizeException(&type, &value, &traceback);
        if (traceback != NULL) {
            PyException_SetTraceback(value, traceback);
        }
        Py_XDECREF(type);
        Py_XDECREF(traceback);
        PyObject *raised = PyObject_CallFunction(refuse_py, "OiO", obj, 1, value);
        Py_DECREF(value);
        return raised; /* NULL: _refuse always raises */
    }
    if (!PyCapsule_CheckExact(capsule)) {
        PyObject *raised = PyObject_CallFunction(refuse_py, "OiO", obj, 2, capsule);
        Py_DECREF(capsule);
        return raised;
    }
    return capsule;
}

PyDoc_STRVAR(hurray_doc, "__hurray__(*, max_version=None) -> PyCapsule\n"
                         "\n"
                         "A \"hurray_tensor\" capsule sharing this tensor's memory, with a\n"
                         "context of the newest C ABI version up to max_version (see\n"
                         "hurray.bridges.protocol.to_capsule); the plain case in C.");

static int read_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const char *const *names, PyObject **interned, int npos, int n,
                     PyObject **out);
static PyObject *call_python_half(PyObject *python, PyObject *self, PyObject *const *args,
                                  size_t nargsf, PyObject *kwnames);

/* The context version for max_version: None is an ABI-4 consumer, an int
 * at least 4 is capped at this build's version. 0 for anything else, which
 * to_capsule refuses with its own words. */
static uint32_t context_version_for(PyObject *max_version)
{
    if (max_version == Py_None) {
        return HURRAY_C_ABI_MIN_VERSION;
    }
    if (!PyLong_CheckExact(max_version)) {
        return 0;
    }
    int overflow = 0;
    long long wanted = PyLong_AsLongLongAndOverflow(max_version, &overflow);
    if (overflow > 0 || (overflow == 0 && wanted >= HURRAY_C_ABI_VERSION)) {
        return HURRAY_C_ABI_VERSION;
    }
    if (overflow < 0 || wanted < HURRAY_C_ABI_MIN_VERSION) {
        return 0;
    }
    return (uint32_t)wanted;
}

/* Tensor.__hurray__: protocol.to_capsule without its Python frames, for an
 * exact Tensor whose descriptor has its bytes (or can encode them), whose
 * memory the context's version can describe (read-only memory needs ABI 5,
 * ADR-059). A subclass, a read-only tensor for an ABI-4 consumer (refused),
 * odd arguments and anything odd go to to_capsule. */
static PyObject *core_hurray(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    static const char *const names[] = {"max_version"};
    PyObject *given[1];
    if (Py_TYPE(self) == tensor_type && read_args(args, PyVectorcall_NARGS(nargsf), kwnames, names,
                                                  &dlpack_names[1], 0, 1, given) == 0) {
        uint32_t version = context_version_for(given[0]);
        PyObject *readonly_obj = SLOT(self, slot.readonly);
        int readonly = readonly_obj != Py_False;
        PyObject *descriptor = SLOT(self, slot.descriptor);
        PyObject *spans = SLOT(self, slot.buffers);
        if (version != 0 && (readonly_obj == Py_False || readonly_obj == Py_True) &&
            (!readonly || version >= 5u) && descriptor != NULL &&
            Py_TYPE(descriptor) == descriptor_type && spans != NULL && PyTuple_CheckExact(spans)) {
            PyObject *bytes = encoding_of(descriptor); /* borrowed */
            if (bytes != NULL) {
                return protocol_api->export(bytes, spans, self, version, readonly);
            }
        }
    }
    return call_python_half(to_capsule_py, self, args, nargsf, kwnames);
}

static PyMethodDef hurray_method = {"__hurray__", (PyCFunction)(void (*)(void))core_hurray,
                                    METH_FASTCALL | METH_KEYWORDS, hurray_doc};

PyDoc_STRVAR(pair_doc, "pair(tensor, /) -> (context address, buffer list address) or None\n"
                       "\n"
                       "io/_pairs.borrowed_pair's work in C for an exact Tensor: a\n"
                       "HurrayTensorContext (this build's ABI) over its descriptor's bytes and a\n"
                       "HurrayBufferList over its spans, borrowing its memory (no reference is\n"
                       "taken: the caller holds the tensor until it has destroyed both, which\n"
                       "are its to destroy). None for anything else -- a subclass (a LazyTensor\n"
                       "verifies when its buffers are read), a descriptor closed before it was\n"
                       "encoded -- which the Python half serves.");

static PyObject *core_pair(PyObject *module, PyObject *tensor)
{
    (void)module;
    if (Py_TYPE(tensor) != tensor_type || protocol_api == NULL) {
        Py_RETURN_NONE;
    }
    PyObject *descriptor = SLOT(tensor, slot.descriptor);
    PyObject *spans = SLOT(tensor, slot.buffers);
    if (descriptor == NULL || Py_TYPE(descriptor) != descriptor_type || spans == NULL ||
        !PyTuple_CheckExact(spans)) {
        Py_RETURN_NONE;
    }
    PyObject *bytes = encoding_of(descriptor); /* borrowed */
    if (bytes == NULL) {
        Py_RETURN_NONE;
    }
    HurrayTensorContext *ctx = NULL;
    HurrayBufferList *list = NULL;
    if (protocol_api->pair(bytes, spans, NULL, HURRAY_C_ABI_VERSION, 0, &ctx, &list) < 0) {
        return NULL;
    }
    PyObject *addresses = Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)ctx,
                                        (unsigned long long)(uintptr_t)list);
    if (addresses == NULL) {
        hurray_buffer_list_destroy(&list);
        hurray_tensor_context_destroy(&ctx);
    }
    return addresses;
}

PyDoc_STRVAR(from_hurray_doc,
             "from_hurray(obj, /) -> Tensor\n"
             "\n"
             "hurray.from_hurray in C: a plain writable Tensor (exchanged without a\n"
             "capsule, ADR-048), a PyCapsule, and any object with __hurray__ (its\n"
             "capsule checked in full). Any other Tensor goes to the Python\n"
             "implementation, and protocol._refuse raises what a producer got wrong.");

static PyObject *core_from_hurray(PyObject *module, PyObject *obj)
{
    (void)module;
    if (Py_TYPE(obj) == tensor_type) {
        PyObject *descriptor = SLOT(obj, slot.descriptor);
        PyObject *spans = SLOT(obj, slot.buffers);
        PyObject *readonly = SLOT(obj, slot.readonly);
        if ((readonly != Py_False && readonly != Py_True) || spans == NULL ||
            !PyTuple_CheckExact(spans) || descriptor == NULL ||
            Py_TYPE(descriptor) != descriptor_type || c_descriptor(descriptor) == NULL) {
            return PyObject_CallOneArg(from_hurray_py, obj); /* closed, odd */
        }
        /* No capsule (ADR-048): the tensor's descriptor and spans were
         * proved against each other when it was made, so the consumer
         * shares both (immutable), and a Holder keeps the references the
         * capsule's handles would have kept. */
        PyObject *holder = protocol_api->hold(obj, (uint64_t)PyTuple_GET_SIZE(spans));
        if (holder == NULL) {
            return NULL;
        }
        /* A read-only producer gives a read-only consumer (ADR-059). */
        PyObject *tensor = new_tensor(descriptor, spans, holder, readonly == Py_True);
        Py_DECREF(holder);
        return tensor;
    }
    if (PyCapsule_CheckExact(obj)) {
        return consume_to_tensor(obj);
    }
    /* Any other producer, a Tensor subclass included: its capsule is from
     * outside, and goes through the same full check. */
    PyObject *capsule = capsule_of(obj);
    if (capsule == NULL) {
        return NULL;
    }
    PyObject *tensor = consume_to_tensor(capsule);
    Py_DECREF(capsule);
    return tensor;
}

/* ---- arguments of the methods that have a Python half ------------------- */

/* The arguments of a call as names[0..n) (positional ones first, at most
 * npos of them), each Py_None when not given. 0 when they are exactly that;
 * -1 (no exception set) for anything else -- an unknown or repeated
 * keyword, too many positionals -- which the Python half then parses and
 * refuses with its own message. */
static int read_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                     const char *const *names, PyObject **interned, int npos, int n, PyObject **out)
{
    for (int i = 0; i < n; i++) {
        out[i] = NULL;
    }
    if (nargs > npos) {
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        out[i] = args[i];
    }
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, k);
        /* Keyword names from a call site are interned: try identity first,
         * which saves a string comparison per name per call. */
        int j = 0;
        while (j < n && name != interned[j]) {
            j++;
        }
        if (j == n) {
            j = 0;
            while (j < n && PyUnicode_CompareWithASCIIString(name, names[j]) != 0) {
                j++;
            }
        }
        if (j == n || out[j] != NULL) {
            return -1;
        }
        out[j] = args[nargs + k];
    }
    for (int i = 0; i < n; i++) {
        if (out[i] == NULL) {
            out[i] = Py_None;
        }
    }
    return 0;
}

/* python(self, *args, **kwargs), passed on as they came. */
static PyObject *call_python_half(PyObject *python, PyObject *self, PyObject *const *args,
                                  size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    PyObject *stack[16];
    if (nargs + nkw + 1 > (Py_ssize_t)(sizeof stack / sizeof stack[0])) {
        PyErr_SetString(PyExc_TypeError, "too many arguments");
        return NULL;
    }
    stack[0] = self;
    for (Py_ssize_t i = 0; i < nargs + nkw; i++) {
        stack[i + 1] = args[i];
    }
    return PyObject_Vectorcall(python, stack, (size_t)nargs + 1, kwnames);
}

/* ---- Tensor.__array__ --------------------------------------------------- */

/* What a numpy view keeps alive: the tensor. One per view, so that two
 * views of a tensor have distinct bases, as numpy's own views do. */
typedef struct ViewBase {
    PyObject_HEAD
    PyObject *tensor;
} ViewBase;

static void view_base_dealloc(ViewBase *self)
{
    Py_XDECREF(self->tensor);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef view_base_members[] = {
    {"tensor", T_OBJECT, offsetof(ViewBase, tensor), READONLY, "the tensor the view is of"},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject ViewBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hurray._core.ViewBase",
    .tp_basicsize = sizeof(ViewBase),
    .tp_dealloc = (destructor)view_base_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("Keeps a tensor alive for as long as a numpy view of it lives."),
    .tp_members = view_base_members,
};

/* The values view of a plain tensor, or with `codes` also the stored codes
 * of an affine or microscaling one (Tensor.stored_values); NULL with no
 * exception set when the Python path must decide (and so say why, if it
 * refuses). */
static PyObject *values_view(PyObject *self, int codes)
{
    PyObject *descriptor = SLOT(self, slot.descriptor);
    PyObject *spans = SLOT(self, slot.buffers);
    PyObject *readonly_obj = SLOT(self, slot.readonly);
    if (descriptor == NULL || spans == NULL || readonly_obj == NULL ||
        Py_TYPE(descriptor) != descriptor_type || !PyTuple_CheckExact(spans)) {
        return NULL;
    }
    const HurrayDescriptor *desc = c_descriptor(descriptor);
    if (desc == NULL) {
        return NULL; /* closed: the Python path says so */
    }
    uint32_t dtype = 0, rank = 0, byte_order = 0, packing = 0;
    uint32_t scheme = 0, granularity = 0, axis = 0, ggml = 0, layout = 0, part_dtype = 0;
    uint64_t block_size = 0, buffer_index = 0, byte_offset = 0;
    const uint64_t *shape = NULL;
    const int64_t *strides = NULL;
    if (hurray_descriptor_dtype(desc, &dtype) != HURRAY_OK ||
        hurray_descriptor_rank(desc, &rank) != HURRAY_OK ||
        hurray_descriptor_shape(desc, &shape) != HURRAY_OK ||
        hurray_descriptor_strides(desc, &strides) != HURRAY_OK ||
        hurray_descriptor_byte_order(desc, &byte_order) != HURRAY_OK ||
        hurray_descriptor_packing(desc, &packing) != HURRAY_OK ||
        hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block_size, &ggml) !=
            HURRAY_OK ||
        hurray_descriptor_part(desc, HURRAY_ROLE_VALUES, &part_dtype, &buffer_index, &byte_offset,
                               &layout) != HURRAY_OK) {
        return NULL;
    }
    int viewable = scheme == HURRAY_SCHEME_NONE ||
                   (codes &&
                    (scheme == HURRAY_SCHEME_AFFINE || scheme == HURRAY_SCHEME_MICROSCALING));
    if (!viewable || packing != HURRAY_PACKING_NONE ||
        buffer_index >= (uint64_t)PyTuple_GET_SIZE(spans)) {
        return NULL; /* quantized (for a view), packed or padded: the Python path */
    }
    PyObject *key = PyLong_FromUnsignedLong(dtype * 2u + byte_order);
    if (key == NULL) {
        return NULL;
    }
    PyArray_Descr *dt = (PyArray_Descr *)PyDict_GetItemWithError(numpy_dtypes, key);
    Py_DECREF(key);
    if (dt == NULL) {
        return NULL; /* not yet seen, or not a builtin numpy type */
    }
    PyObject *span = PyTuple_GET_ITEM(spans, (Py_ssize_t)buffer_index);
    if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
        return NULL;
    }
    unsigned long long base_address = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
    unsigned long long nbytes = hurray__py_as_u64(PyTuple_GET_ITEM(span, 1));
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    /* The reach, checked against the span as _views.strided_interface does;
     * an empty tensor (whose address may be NULL) is the Python path's. */
    int64_t itemsize = (int64_t)PyDataType_ELSIZE(dt);
    npy_intp dims[HURRAY_MAX_RANK], steps[HURRAY_MAX_RANK];
    int64_t low = 0, high = 0;
    for (uint32_t i = 0; i < rank; i++) {
        int64_t step;
        if (shape[i] == 0 || shape[i] > (uint64_t)INT64_MAX ||
            __builtin_mul_overflow(strides[i], itemsize, &step)) {
            return NULL;
        }
        int64_t extent;
        if (__builtin_mul_overflow((int64_t)(shape[i] - 1), step, &extent)) {
            return NULL;
        }
        if (extent < 0) {
            low += extent;
        } else {
            high += extent;
        }
        dims[i] = (npy_intp)shape[i];
        steps[i] = (npy_intp)step;
    }
    if (byte_offset > (uint64_t)INT64_MAX || (int64_t)byte_offset + low < 0 ||
        (uint64_t)((int64_t)byte_offset + high + itemsize) > nbytes) {
        return NULL; /* the Python path raises BufferTooSmallError */
    }
    int readonly = PyObject_IsTrue(readonly_obj);
    if (readonly < 0) {
        PyErr_Clear();
        return NULL;
    }
    Py_INCREF(dt); /* PyArray_NewFromDescr steals it */
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, dt, (int)rank, dims, steps,
                                           (void *)(uintptr_t)(base_address + byte_offset),
                                           readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (array == NULL) {
        PyErr_Clear();
        return NULL;
    }
    ViewBase *base = PyObject_New(ViewBase, &ViewBaseType);
    if (base == NULL) {
        Py_DECREF(array);
        return NULL;
    }
    base->tensor = Py_NewRef(self);
    if (PyArray_SetBaseObject((PyArrayObject *)array, (PyObject *)base) < 0) { /* steals base */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

PyDoc_STRVAR(array_doc,
             "__array__(dtype=None, copy=None) -> numpy.ndarray\n"
             "\n"
             "A zero-copy view of the values (see Tensor.__array__); the plain case in C.");

static PyObject *core_array(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    static const char *const names[] = {"dtype", "copy"};
    PyObject *given[2];
    if (Py_TYPE(self) == tensor_type &&
        read_args(args, PyVectorcall_NARGS(nargsf), kwnames, names, array_names, 2, 2, given) ==
            0 &&
        given[0] == Py_None && (given[1] == Py_None || given[1] == Py_False)) {
        PyObject *view = values_view(self, 0);
        if (view != NULL || PyErr_Occurred()) {
            return view;
        }
    }
    return call_python_half(array_py, self, args, nargsf, kwnames);
}

static PyMethodDef array_method = {"__array__", (PyCFunction)(void (*)(void))core_array,
                                   METH_FASTCALL | METH_KEYWORDS, array_doc};

PyDoc_STRVAR(stored_values_doc,
             "stored_values() -> numpy.ndarray\n"
             "\n"
             "The stored values as a zero-copy array (see Tensor.stored_values); in C\n"
             "for an exact Tensor, unpacked, plain, affine or microscaling, of a builtin\n"
             "numpy type already viewed once.");

static PyObject *core_stored_values(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (Py_TYPE(self) == tensor_type) {
        PyObject *view = values_view(self, 1);
        if (view != NULL || PyErr_Occurred()) {
            return view;
        }
    }
    return PyObject_CallOneArg(stored_values_py, self);
}

static PyMethodDef stored_values_method = {"stored_values", core_stored_values, METH_NOARGS,
                                           stored_values_doc};

/* ---- Descriptor.decode -------------------------------------------------- */

PyDoc_STRVAR(decode_doc,
             "decode(data, /) -> Descriptor or None\n"
             "\n"
             "Descriptor.decode for a bytes object, in C: hurray_descriptor_decode (which\n"
             "checks every rule), and a Descriptor owning the result, its encoding the\n"
             "bytes given. None when decode refuses: Descriptor.decode then decodes in\n"
             "Python to raise the error that names the rule.");

static PyObject *core_decode(PyObject *module, PyObject *data)
{
    (void)module;
    if (!PyBytes_CheckExact(data) || descriptor_type == NULL) {
        Py_RETURN_NONE;
    }
    HurrayDescriptor *desc = NULL;
    if (hurray_descriptor_decode((const uint8_t *)PyBytes_AS_STRING(data),
                                 (uint64_t)PyBytes_GET_SIZE(data), &desc) != HURRAY_OK) {
        Py_RETURN_NONE;
    }
    PyObject *descriptor = new_descriptor(desc); /* owns desc now, or freed it */
    if (descriptor != NULL) {
        /* decode accepts only what encode would write: data is the encoding. */
        Py_SETREF(SLOT(descriptor, slot.bytes), Py_NewRef(data));
    }
    return descriptor;
}

/* ---- Tensor.buffer and checked construction ------------------------------ */

/* Buffer i of a plain tensor as a 1-D uint8 array whose base keeps the
 * tensor alive, or NULL with no exception set when the Python path must
 * decide (an index to check, an empty span, a subclass). */
static PyObject *plain_buffer(PyObject *self, PyObject *index)
{
    PyObject *spans = SLOT(self, slot.buffers);
    PyObject *readonly_obj = SLOT(self, slot.readonly);
    if (!PyLong_CheckExact(index) || spans == NULL || !PyTuple_CheckExact(spans) ||
        readonly_obj == NULL) {
        return NULL;
    }
    Py_ssize_t i = PyLong_AsSsize_t(index);
    if (i < 0 || i >= PyTuple_GET_SIZE(spans)) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *span = PyTuple_GET_ITEM(spans, i);
    if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
        return NULL;
    }
    unsigned long long address = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
    unsigned long long nbytes = hurray__py_as_u64(PyTuple_GET_ITEM(span, 1));
    if (PyErr_Occurred() || nbytes == 0 || address == 0 ||
        nbytes > (unsigned long long)NPY_MAX_INTP) {
        PyErr_Clear();
        return NULL; /* numpy would allocate for a NULL or empty span */
    }
    int readonly = PyObject_IsTrue(readonly_obj);
    if (readonly < 0) {
        PyErr_Clear();
        return NULL;
    }
    npy_intp dims[1] = {(npy_intp)nbytes};
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_UINT8), 1, dims,
                                           NULL, (void *)(uintptr_t)address,
                                           readonly ? 0 : NPY_ARRAY_WRITEABLE, NULL);
    if (array == NULL) {
        return NULL;
    }
    ViewBase *base = PyObject_New(ViewBase, &ViewBaseType);
    if (base == NULL) {
        Py_DECREF(array);
        return NULL;
    }
    base->tensor = Py_NewRef(self);
    if (PyArray_SetBaseObject((PyArrayObject *)array, (PyObject *)base) < 0) {
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

static PyObject *core_buffer(PyObject *self, PyObject *index)
{
    if (Py_TYPE(self) == tensor_type) {
        PyObject *array = plain_buffer(self, index);
        if (array != NULL || PyErr_Occurred()) {
            return array;
        }
    }
    return PyObject_CallFunctionObjArgs(buffer_py, self, index, NULL);
}

static PyMethodDef buffer_method = {
    "buffer", core_buffer, METH_O,
    PyDoc_STR("buffer(i) -> a zero-copy 1-D uint8 array of buffer i that keeps this tensor "
              "alive (read-only when the tensor is).")};

PyDoc_STRVAR(tensor_from_spans_doc,
             "tensor_from_spans(descriptor, spans, owner, readonly, /) -> Tensor\n"
             "\n"
             "Tensor._from_spans in C: spans, a tuple of (address, nbytes) int pairs this\n"
             "package made, are proven against descriptor by\n"
             "hurray_descriptor_check_buffers before the Tensor exists.");

static PyObject *core_tensor_from_spans(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || Py_TYPE(args[0]) != descriptor_type || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "tensor_from_spans(descriptor, spans, owner, readonly): a Descriptor "
                        "and a tuple of spans");
        return NULL;
    }
    PyObject *descriptor = args[0], *spans = args[1];
    int readonly = PyObject_IsTrue(args[3]);
    if (readonly < 0) {
        return NULL;
    }
    const HurrayDescriptor *desc = c_descriptor(descriptor);
    if (desc == NULL) {
        PyErr_SetString(PyExc_ValueError, "the descriptor is closed");
        return NULL;
    }
    HurrayBufferList *list = NULL;
    HurrayStatus status = hurray_buffer_list_new(&list);
    for (Py_ssize_t i = 0; status == HURRAY_OK && i < PyTuple_GET_SIZE(spans); i++) {
        PyObject *span = PyTuple_GET_ITEM(spans, i);
        if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
            hurray_buffer_list_destroy(&list);
            PyErr_SetString(PyExc_TypeError, "a span is an (address, nbytes) pair");
            return NULL;
        }
        unsigned long long data = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
        unsigned long long nbytes = hurray__py_as_u64(PyTuple_GET_ITEM(span, 1));
        if (PyErr_Occurred()) {
            hurray_buffer_list_destroy(&list);
            return NULL;
        }
        HurrayBuffer *buf = NULL;
        status = hurray_buffer_from_ptr((void *)(uintptr_t)data, nbytes, NULL, NULL, &buf);
        if (status == HURRAY_OK) {
            status = hurray_buffer_list_push(list, &buf);
            hurray_buffer_destroy(&buf); /* no-op once the list took it */
        }
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_check_buffers(desc, list);
    }
    hurray_buffer_list_destroy(&list);
    if (status != HURRAY_OK) {
        /* The Python check names the class and message the same way. */
        return PyObject_CallFunctionObjArgs(check_spans_py, descriptor, spans, NULL);
    }
    return new_tensor(descriptor, spans, args[2], readonly);
}

/* ---- Tensor.__dlpack__ and __dlpack_device__ ------------------------------ */

/* A zero-copy versioned capsule for a plain writable tensor whose plan
 * hurray.bridges.dlpack has made (dlpack._PLANS), or NULL with no exception set
 * when the Python path must decide. */
static PyObject *plain_dlpack(PyObject *self, PyObject *max_version)
{
    PyObject *descriptor = SLOT(self, slot.descriptor);
    PyObject *spans = SLOT(self, slot.buffers);
    if (SLOT(self, slot.readonly) != Py_False || descriptor == NULL || spans == NULL ||
        Py_TYPE(descriptor) != descriptor_type || !PyTuple_CheckExact(spans) ||
        !PyTuple_CheckExact(max_version) || PyTuple_GET_SIZE(max_version) != 2) {
        return NULL;
    }
    long major = PyLong_AsLong(PyTuple_GET_ITEM(max_version, 0));
    if (major < 1) {
        PyErr_Clear();
        return NULL; /* legacy, or not a number: the Python path */
    }
    PyObject *bytes = encoding_of(descriptor);
    PyObject *plan = bytes == NULL ? NULL : PyDict_GetItemWithError(dlpack_plans, bytes);
    /* _Plan(refusal, code, bits, padded, width, shape, strides, buffer_index, byte_offset) */
    if (plan == NULL || !PyTuple_Check(plan) || PyTuple_GET_SIZE(plan) != 9 ||
        PyTuple_GET_ITEM(plan, 0) != Py_None || PyTuple_GET_ITEM(plan, 3) != Py_False) {
        PyErr_Clear();
        return NULL;
    }
    Py_ssize_t index = PyLong_AsSsize_t(PyTuple_GET_ITEM(plan, 7));
    if (index < 0 || index >= PyTuple_GET_SIZE(spans)) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *span = PyTuple_GET_ITEM(spans, index);
    if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
        return NULL;
    }
    unsigned long long base = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
    unsigned long long offset = hurray__py_as_u64(PyTuple_GET_ITEM(plan, 8));
    unsigned long long sum;
    if (PyErr_Occurred() || __builtin_add_overflow(base, offset, &sum)) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *data = PyLong_FromUnsignedLongLong(sum);
    if (data == NULL) {
        return NULL;
    }
    PyObject *args[8] = {self,
                         data,
                         PyTuple_GET_ITEM(plan, 1),
                         PyTuple_GET_ITEM(plan, 2),
                         PyTuple_GET_ITEM(plan, 5),
                         PyTuple_GET_ITEM(plan, 6),
                         NULL,
                         Py_True};
    PyObject *flags = PyLong_FromLong(0);
    if (flags == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    args[6] = flags;
    PyObject *capsule = PyObject_Vectorcall(dlpack_export, args, 8, NULL);
    Py_DECREF(flags);
    Py_DECREF(data);
    return capsule;
}

PyDoc_STRVAR(dlpack_doc,
             "__dlpack__(stream=None, *, max_version=None, dl_device=None, copy=None)\n"
             "\n"
             "A DLPack capsule sharing the tensor's memory (see hurray.bridges.dlpack); the plain\n"
             "zero-copy versioned case in C.");

static PyObject *core_dlpack(PyObject *self, PyObject *const *args, size_t nargsf,
                             PyObject *kwnames)
{
    static const char *const names[] = {"stream", "max_version", "dl_device", "copy"};
    PyObject *given[4];
    if (Py_TYPE(self) == tensor_type &&
        read_args(args, PyVectorcall_NARGS(nargsf), kwnames, names, dlpack_names, 1, 4, given) ==
            0 &&
        given[0] == Py_None && (given[3] == Py_None || given[3] == Py_False) &&
        (given[2] == Py_None || PyObject_RichCompareBool(given[2], cpu_device, Py_EQ) == 1)) {
        PyObject *capsule = plain_dlpack(self, given[1]);
        if (capsule != NULL || PyErr_Occurred()) {
            return capsule;
        }
    }
    PyErr_Clear(); /* a comparison that raised: the Python half says what is wrong */
    return call_python_half(dlpack_py, self, args, nargsf, kwnames);
}

static PyObject *core_dlpack_device(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return Py_NewRef(cpu_device); /* host memory, whatever the tensor */
}

static PyMethodDef dlpack_method = {"__dlpack__", (PyCFunction)(void (*)(void))core_dlpack,
                                    METH_FASTCALL | METH_KEYWORDS, dlpack_doc};
static PyMethodDef dlpack_device_method = {
    "__dlpack_device__", core_dlpack_device, METH_NOARGS,
    PyDoc_STR("__dlpack_device__() -> (kDLCPU, 0): Hurray tensors live in host memory.")};

/* 0 with RuntimeError when `what` (a later setup function) runs before
 * setup() has given the Tensor type it installs methods on. */
static int after_setup(const char *what)
{
    if (tensor_type == NULL) {
        PyErr_Format(PyExc_RuntimeError, "%s() before setup()", what);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(
    setup_dlpack_doc,
    "setup_dlpack(dlpack, export, plans, cpu_device, /) -> (__dlpack__, __dlpack_device__)\n"
    "\n"
    "Called once by hurray._wiring (after setup()): the Python Tensor.__dlpack__,\n"
    "hurray._dlpack.export, the plan cache, and (kDLCPU, 0).");

static PyObject *core_setup_dlpack(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *dlpack, *export, *plans, *device;
    if (!after_setup("setup_dlpack")) {
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOO!O!:setup_dlpack", &dlpack, &export, &PyDict_Type, &plans,
                          &PyTuple_Type, &device)) {
        return NULL;
    }
    Py_XSETREF(dlpack_py, Py_NewRef(dlpack));
    Py_XSETREF(dlpack_export, Py_NewRef(export));
    Py_XSETREF(dlpack_plans, Py_NewRef(plans));
    Py_XSETREF(cpu_device, Py_NewRef(device));
    PyObject *method = PyDescr_NewMethod(tensor_type, &dlpack_method);
    PyObject *device_method = PyDescr_NewMethod(tensor_type, &dlpack_device_method);
    if (method == NULL || device_method == NULL) {
        Py_XDECREF(method);
        Py_XDECREF(device_method);
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, method, device_method);
    Py_DECREF(method);
    Py_DECREF(device_method);
    return pair;
}

/* ---- setup ---------------------------------------------------------------- */

/* The offset of slot `name` of `type`, from its member descriptor. */
static int offset_of(PyTypeObject *type, const char *name, Py_ssize_t *out)
{
    PyObject *member = PyDict_GetItemString(type->tp_dict, name);
    if (member == NULL || Py_TYPE(member) != &PyMemberDescr_Type) {
        PyErr_Format(PyExc_TypeError, "%s has no slot %s", type->tp_name, name);
        return -1;
    }
    PyMemberDef *def = ((PyMemberDescrObject *)member)->d_member;
    if (def->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not an object slot", type->tp_name, name);
        return -1;
    }
    *out = def->offset;
    return 0;
}

PyDoc_STRVAR(setup_doc,
             "setup(Tensor, Descriptor, numpy_codes, numpy_dtypes, from_numpy, array, /)\n"
             "\n"
             "Called once by hurray._wiring: the classes whose slots this module fills,\n"
             "the two lookup tables the Python side fills as it meets dtypes, the\n"
             "Python implementations everything else goes to. Returns Tensor.__array__\n"
             "in C.");

static PyObject *core_setup(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *tensor, *descriptor, *codes, *dtypes, *from_numpy, *array;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OO:setup", &PyType_Type, &tensor, &PyType_Type,
                          &descriptor, &PyDict_Type, &codes, &PyDict_Type, &dtypes, &from_numpy,
                          &array)) {
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)tensor, *d = (PyTypeObject *)descriptor;
    Slots s;
    if (offset_of(t, "_descriptor", &s.descriptor) < 0 ||
        offset_of(t, "_buffers", &s.buffers) < 0 || offset_of(t, "_owner", &s.owner) < 0 ||
        offset_of(t, "_readonly", &s.readonly) < 0 || offset_of(t, "_view", &s.view) < 0 ||
        offset_of(d, "_handle", &s.handle) < 0 || offset_of(d, "_bytes", &s.bytes) < 0 ||
        offset_of(d, "_fields", &s.fields) < 0 || offset_of(d, "_box", &s.box) < 0 ||
        offset_of(d, "_address", &s.address) < 0) {
        return NULL;
    }
    slot = s;
    Py_XSETREF(tensor_type, (PyTypeObject *)Py_NewRef(tensor));
    Py_XSETREF(descriptor_type, (PyTypeObject *)Py_NewRef(descriptor));
    Py_XSETREF(numpy_codes, Py_NewRef(codes));
    Py_XSETREF(numpy_dtypes, Py_NewRef(dtypes));
    Py_XSETREF(from_numpy_py, Py_NewRef(from_numpy));
    Py_XSETREF(array_py, Py_NewRef(array));
    return PyDescr_NewMethod(tensor_type, &array_method);
}

PyDoc_STRVAR(setup_protocol_doc,
             "setup_protocol(from_hurray, refuse, to_capsule, /) -> __hurray__\n"
             "\n"
             "Called once by hurray._wiring (after setup()): the Python from_hurray,\n"
             "protocol._refuse (the errors of a producer's __hurray__), and\n"
             "protocol.to_capsule; hurray._protocol's C API (the\n"
             "Holder of a Tensor's exchange, ADR-048, taking a capsule, making one) is\n"
             "imported here. Returns Tensor.__hurray__ in C.");

static PyObject *core_setup_protocol(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *from_hurray, *refuse, *to_capsule;
    if (!after_setup("setup_protocol")) {
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOO:setup_protocol", &from_hurray, &refuse, &to_capsule)) {
        return NULL;
    }
    const HurrayProtocolApi *api = PyCapsule_Import(HURRAY_PROTOCOL_API, 0);
    if (api == NULL) {
        return NULL;
    }
    protocol_api = api;
    Py_XSETREF(from_hurray_py, Py_NewRef(from_hurray));
    Py_XSETREF(refuse_py, Py_NewRef(refuse));
    Py_XSETREF(to_capsule_py, Py_NewRef(to_capsule));
    return PyDescr_NewMethod(tensor_type, &hurray_method);
}

PyDoc_STRVAR(setup_memory_doc,
             "setup_memory(buffer, stored_values, check_spans, /)\n"
             "    -> (Tensor.buffer, Tensor.stored_values) in C\n"
             "\n"
             "Called once by hurray._wiring (after setup()): the Python Tensor.buffer,\n"
             "Tensor.stored_values and descriptor.check_spans, which the C halves fall\n"
             "back to.");

static PyObject *core_setup_memory(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *buffer, *stored_values, *check;
    if (!after_setup("setup_memory")) {
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOO:setup_memory", &buffer, &stored_values, &check)) {
        return NULL;
    }
    Py_XSETREF(buffer_py, Py_NewRef(buffer));
    Py_XSETREF(stored_values_py, Py_NewRef(stored_values));
    Py_XSETREF(check_spans_py, Py_NewRef(check));
    PyObject *methods = PyTuple_New(2);
    if (methods == NULL) {
        return NULL;
    }
    PyTuple_SET_ITEM(methods, 0, PyDescr_NewMethod(tensor_type, &buffer_method));
    PyTuple_SET_ITEM(methods, 1, PyDescr_NewMethod(tensor_type, &stored_values_method));
    if (PyTuple_GET_ITEM(methods, 0) == NULL || PyTuple_GET_ITEM(methods, 1) == NULL) {
        Py_DECREF(methods); /* drops whichever was made */
        return NULL;
    }
    return methods;
}

static PyMethodDef core_methods[] = {
    {"setup_memory", core_setup_memory, METH_VARARGS, setup_memory_doc},
    {"tensor_from_spans", (PyCFunction)(void (*)(void))core_tensor_from_spans, METH_FASTCALL,
     tensor_from_spans_doc},
    {"setup", core_setup, METH_VARARGS, setup_doc},
    {"from_numpy", core_from_numpy, METH_O, from_numpy_doc},
    {"from_hurray", core_from_hurray, METH_O, from_hurray_doc},
    {"decode", core_decode, METH_O, decode_doc},
    {"setup_protocol", core_setup_protocol, METH_VARARGS, setup_protocol_doc},
    {"setup_dlpack", core_setup_dlpack, METH_VARARGS, setup_dlpack_doc},
    {"kept", core_kept, METH_O, kept_doc},
    {"pair", core_pair, METH_O, pair_doc},
    {"keep", core_keep, METH_O, keep_doc},
    {"safetensors_entries", (PyCFunction)(void (*)(void))hurray__core_safetensors_entries,
     METH_FASTCALL, hurray__core_safetensors_entries_doc},
    {"companions", (PyCFunction)(void (*)(void))hurray__core_companions, METH_FASTCALL,
     hurray__core_companions_doc},
    {"add_nodes", (PyCFunction)(void (*)(void))hurray__core_add_nodes, METH_FASTCALL,
     hurray__core_add_nodes_doc},
    {"dequantize_rows", (PyCFunction)(void (*)(void))hurray__core_dequantize_rows, METH_FASTCALL,
     hurray__core_dequantize_rows_doc},
    {"anchored_claims", (PyCFunction)(void (*)(void))hurray__core_anchored_claims, METH_FASTCALL,
     hurray__core_anchored_claims_doc},
    {"safetensors_header", (PyCFunction)(void (*)(void))hurray__core_safetensors_header,
     METH_FASTCALL, hurray__core_safetensors_header_doc},
    {NULL, NULL, 0, NULL},
};

HURRAY__PY_MODULE_DEF(core_module, "hurray._core",
                      "The hot path in C: from_numpy and a Tensor's numpy view (ADR-046).",
                      core_methods);

/* Interns each of names into out; 0, or -1 with an error set. */
static int intern_names(const char *const *names, int n, PyObject **out)
{
    for (int i = 0; i < n; i++) {
        if (out[i] == NULL && (out[i] = PyUnicode_InternFromString(names[i])) == NULL) {
            return -1;
        }
    }
    return 0;
}

PyMODINIT_FUNC PyInit__core(void)
{
    static const char *const array_keys[] = {"dtype", "copy"};
    static const char *const dlpack_keys[] = {"stream", "max_version", "dl_device", "copy"};
    if (intern_names(array_keys, 2, array_names) < 0 ||
        intern_names(dlpack_keys, 4, dlpack_names) < 0 || hurray__core_safetensors_init() < 0 ||
        (hurray_name == NULL && (hurray_name = PyUnicode_InternFromString("__hurray__")) == NULL) ||
        (max_version_kw == NULL && (max_version_kw = PyTuple_Pack(1, dlpack_names[1])) == NULL) ||
        (this_abi == NULL && (this_abi = PyLong_FromLong(HURRAY_C_ABI_VERSION)) == NULL)) {
        return NULL;
    }
    import_array();
    if (descriptors == NULL && (descriptors = PyDict_New()) == NULL) {
        return NULL;
    }
    const HurrayPyItem items[] = {
        HURRAY__PY_TYPE("ViewBase", &ViewBaseType),
        /* For inspection and the tests; kept() and keep() are the way in. */
        HURRAY__PY_OBJECT("descriptors", Py_NewRef(descriptors)),
        HURRAY__PY_INT("DESCRIPTOR_CACHE_SIZE", DESCRIPTOR_CACHE_SIZE),
        HURRAY__PY_END,
    };
    return hurray__py_module_new(&core_module, items);
}
