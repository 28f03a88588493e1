/*
 * hurray._pickle -- pickling a Tensor, in C (ADR-043, ADR-049).
 *
 * Two functions; the reconstructor is published as hurray.pickling's, because
 * its name is written into every pickle:
 *
 * - reduce_ex(tensor, protocol), which becomes Tensor.__reduce_ex__: the
 *   descriptor bytes and each buffer's length (with a hash of its every byte
 *   where two buffers share one) in-band, and each buffer as a
 *   pickle.PickleBuffer over the tensor's own memory (protocol 5), or as
 *   bytes (protocols 0 to 4);
 * - unpickle_tensor(versions, encoded, readonly, nbytes, buffers[, inband_copy]),
 *   which checks everything it is handed before the Tensor exists.
 *
 * The checks are the ones hurray.pickling documents; where a check fails
 * because of a rule another module owns (the versions, the descriptor), the
 * Python function setup() was given raises the error that names the rule,
 * so each message is written once. The descriptor is decoded and the spans
 * proven against it by hurray._core's C functions, also given to setup().
 *
 * A Tensor subclass is read through its attributes, never its slots: a
 * hurray.io LazyTensor verifies its memory when _buffers is read (ADR-040).
 */
#include "_pyruntime.h"
#include "hurray_io.h" /* hurray_io_checksum: the fingerprint */

#include <stdint.h>


/* ---- what setup() was given -------------------------------------------- */

/* One (C ABI version, descriptor encoding version) pair per encoding this
 * build reads, in encoding order: a state carries the pair of its
 * descriptor's version. */
static PyObject *versions;
static PyObject *decode_c;        /* hurray._core.decode: Descriptor, or None to ask Python */
static PyObject *decode_py;       /* Descriptor.decode, which raises what is wrong */
static PyObject *from_spans;      /* hurray._core.tensor_from_spans: checks the spans in C */
static PyObject *refuse_versions; /* pickling._refuse_versions, which raises what is wrong */
static PyObject *corrupt_error;   /* hurray.errors.CorruptError */

static PyObject *unpickle_fn; /* hurray.pickling.unpickle_tensor (made here) */
static PyObject *str_descriptor, *str_buffers, *str_readonly, *str_encode, *str_tobytes;


/* The encoding version of descriptor bytes (the little-endian uint16 at
 * bytes 4-5), or -1 when they are too short to hold one. */
static long encoding_version(PyObject *encoded)
{
    Py_buffer view;
    if (PyObject_GetBuffer(encoded, &view, PyBUF_SIMPLE) != 0) {
        PyErr_Clear(); /* not bytes-like: decode has said so already */
        return -1;
    }
    const unsigned char *p = view.buf;
    long version = view.len < 6 ? -1 : ((long)p[4] | (long)p[5] << 8);
    PyBuffer_Release(&view);
    return version;
}

/* The pair of `versions` whose encoding version is the bytes'; borrowed,
 * or NULL with an error set (the bytes come from Descriptor.encode). */
static PyObject *versions_of(PyObject *encoded)
{
    long version = encoding_version(encoded);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(versions); i++) {
        PyObject *pair = PyTuple_GET_ITEM(versions, i);
        if (PyLong_AsLong(PyTuple_GET_ITEM(pair, 1)) == version) {
            return pair;
        }
    }
    PyErr_Format(PyExc_SystemError, "pickle: no versions pair for descriptor encoding version %ld",
                 version);
    return NULL;
}

/* ---- Span: a buffer over a tensor's memory that keeps the tensor alive -- */

/* Not tracked by the garbage collector: it refers to a Tensor only, and a
 * Tensor's owner is the caller's object, never a Span this module made. */
typedef struct {
    PyObject_HEAD
    PyObject *tensor;
    void *data;
    Py_ssize_t nbytes;
    int readonly;
} Span;

static char no_bytes[1]; /* where an empty span points, rather than NULL */

static int span_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    Span *span = (Span *)self;
    return PyBuffer_FillInfo(view, self, span->data, span->nbytes, span->readonly, flags);
}

static void span_dealloc(PyObject *self)
{
    Py_XDECREF(((Span *)self)->tensor);
    Py_TYPE(self)->tp_free(self);
}

static PyBufferProcs span_as_buffer = {.bf_getbuffer = span_getbuffer};

static PyTypeObject SpanType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hurray._pickle.Span",
    .tp_basicsize = sizeof(Span),
    .tp_dealloc = span_dealloc,
    .tp_as_buffer = &span_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("One buffer of a Tensor, exported for pickle (keeps the tensor alive)."),
};

/* The memory of span (address, nbytes), or -1 with an exception set. */
static int span_memory(PyObject *span, void **data, Py_ssize_t *nbytes)
{
    if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
        PyErr_SetString(PyExc_TypeError, "a Tensor's span is an (address, nbytes) pair");
        return -1;
    }
    unsigned long long address = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(span, 0));
    Py_ssize_t n = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
    if (PyErr_Occurred()) {
        return -1;
    }
    if (address == 0 && n != 0) { /* no Tensor is built so (buffer_from_ptr refuses it) */
        PyErr_SetString(PyExc_ValueError, "a Tensor's span of bytes at address 0");
        return -1;
    }
    *data = address == 0 ? (void *)no_bytes : (void *)(uintptr_t)address;
    *nbytes = n;
    return 0;
}

/* Buffer `span` of tensor as protocol 5 wants it: a PickleBuffer over the
 * tensor's memory. */
static PyObject *pickle_buffer(PyObject *tensor, PyObject *span, int readonly)
{
    Span *export = PyObject_New(Span, &SpanType);
    if (export == NULL) {
        return NULL;
    }
    export->tensor = Py_NewRef(tensor);
    export->readonly = readonly;
    if (span_memory(span, &export->data, &export->nbytes) < 0) {
        Py_DECREF(export);
        return NULL;
    }
    PyObject *buffer = PyPickleBuffer_FromObject((PyObject *)export);
    Py_DECREF(export); /* the PickleBuffer's export holds it */
    return buffer;
}

/* Buffer `span` as protocols 0 to 4 want it: bytes (the one copy). */
static PyObject *inband_bytes(PyObject *span)
{
    void *data;
    Py_ssize_t nbytes;
    if (span_memory(span, &data, &nbytes) < 0) {
        return NULL;
    }
    return PyBytes_FromStringAndSize(data, nbytes);
}


/* ---- telling apart buffers of one length --------------------------------- */

/* A 64-bit hash of every byte of (p, n): the format's xxh3-64 (hurray_io.h).
 * It tells apart buffers of one tensor that have the same length, whatever
 * their contents (ADR-049 § 2, amended): the hash of the first and last 256
 * bytes used before let two buffers with equal edges pass swapped (issue
 * 27). Only buffers whose length another buffer of the tensor shares are
 * hashed; a large one is hashed without the GIL (it is the tensor's own
 * memory, held by the caller). */
static uint64_t fingerprint(const unsigned char *p, size_t n)
{
    uint64_t h = 0;
    if (n >= ((size_t)1 << 20)) {
        Py_BEGIN_ALLOW_THREADS(void) hurray_io_checksum(p, n, &h);
        Py_END_ALLOW_THREADS
    } else {
        (void)hurray_io_checksum(p, n, &h); /* p is never NULL (no_bytes): never refused */
    }
    return h;
}

/* ---- the edge fingerprint of pickles written before the amendment ------- */

/* How many bytes at each end of a buffer the old fingerprint read. */
enum { EDGE = 256 };

static uint64_t mix(uint64_t h, uint64_t word)
{
    h ^= word;
    h *= 0x9E3779B97F4A7C15u;
    return h ^ (h >> 29);
}

static uint64_t mix_bytes(uint64_t h, const unsigned char *p, size_t n)
{
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t word = 0;
        for (int k = 7; k >= 0; k--) { /* little-endian on every host */
            word = word << 8 | p[k];
        }
        h = mix(h, word);
    }
    uint64_t tail = 0;
    for (size_t k = n; k > 0; k--) {
        tail = tail << 8 | p[k - 1];
    }
    return mix(h, tail ^ (uint64_t)n << 56);
}

/* The fingerprint pickles carried before the amendment: a hash of n and of
 * the first and last EDGE bytes. Still accepted when a pickle's number is
 * not the whole buffer's hash, so that those pickles load as they did; a new
 * pickle's number is the whole hash, which a swapped buffer's edge hash
 * matches no more often than any other 64-bit value. */
static uint64_t edge_fingerprint(const unsigned char *p, size_t n)
{
    size_t head = n < EDGE ? n : EDGE;
    size_t tail = n - head < EDGE ? n - head : EDGE; /* never the head's bytes again */
    uint64_t h = mix_bytes(mix(0, n), p, head);
    return mix_bytes(h, p + n - tail, tail);
}

/* The check pickled for buffer i of `spans`: its length, or (length,
 * fingerprint) when another buffer of the tensor has the same length, since
 * lengths alone cannot tell those two apart if they come back swapped. */
static PyObject *length_check(PyObject *spans, Py_ssize_t i)
{
    PyObject *nbytes = PyTuple_GET_ITEM(PyTuple_GET_ITEM(spans, i), 1);
    int shared = 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(spans) && !shared; j++) {
        if (j != i) {
            shared = PyObject_RichCompareBool(nbytes,
                                              PyTuple_GET_ITEM(PyTuple_GET_ITEM(spans, j), 1),
                                              Py_EQ);
            if (shared < 0) {
                return NULL;
            }
        }
    }
    if (!shared) {
        return Py_NewRef(nbytes);
    }
    void *data;
    Py_ssize_t n;
    if (span_memory(PyTuple_GET_ITEM(spans, i), &data, &n) < 0) {
        return NULL;
    }
    return Py_BuildValue("(ON)", nbytes, PyLong_FromUnsignedLongLong(fingerprint(data, (size_t)n)));
}


/* ---- reduce ------------------------------------------------------------ */

PyDoc_STRVAR(reduce_ex_doc,
             "__reduce_ex__(protocol) -> (hurray.pickling.unpickle_tensor, state)\n"
             "\n"
             "Protocol 5: the buffers out-of-band as PickleBuffers over this tensor's\n"
             "memory, zero-copy; protocols 0 to 4: in-band as bytes (see ADR-043).");

static PyObject *pickle_reduce_ex(PyObject *tensor, PyObject *protocol_obj)
{
    long protocol = PyLong_AsLong(protocol_obj);
    if (protocol == -1 && PyErr_Occurred()) {
        return NULL;
    }
    PyObject *descriptor = NULL, *spans = NULL, *readonly = NULL, *encoded = NULL;
    PyObject *sizes = NULL, *buffers = NULL, *state = NULL, *result = NULL;
    /* _buffers first: a LazyTensor verifies its memory there. */
    spans = PyObject_GetAttr(tensor, str_buffers);
    descriptor = spans == NULL ? NULL : PyObject_GetAttr(tensor, str_descriptor);
    readonly = descriptor == NULL ? NULL : PyObject_GetAttr(tensor, str_readonly);
    encoded = readonly == NULL ? NULL : PyObject_CallMethodNoArgs(descriptor, str_encode);
    if (encoded == NULL) {
        goto done;
    }
    if (!PyTuple_CheckExact(spans) || !PyBool_Check(readonly)) {
        PyErr_SetString(PyExc_TypeError, "a Tensor's _buffers is a tuple and _readonly a bool");
        goto done;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(spans);
    sizes = PyTuple_New(n);
    buffers = sizes == NULL ? NULL : PyTuple_New(n);
    if (buffers == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *span = PyTuple_GET_ITEM(spans, i);
        PyObject *buffer = protocol >= 5 ? pickle_buffer(tensor, span, readonly == Py_True)
                                         : inband_bytes(span);
        if (buffer == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(buffers, i, buffer);
        PyObject *check = length_check(spans, i);
        if (check == NULL) {
            goto done;
        }
        PyTuple_SET_ITEM(sizes, i, check);
    }
    /* Protocols 0-4: inband_copy=True, so a writable tensor gets writable
     * copies on arrival (a bytearray here would cost pickle a second copy). */
    PyObject *pair = versions_of(encoded);
    if (pair == NULL) {
        goto done;
    }
    state = protocol >= 5 ? PyTuple_Pack(5, pair, encoded, readonly, sizes, buffers)
                          : PyTuple_Pack(6, pair, encoded, readonly, sizes, buffers, Py_True);
    result = state == NULL ? NULL : PyTuple_Pack(2, unpickle_fn, state);
done:
    Py_XDECREF(state);
    Py_XDECREF(buffers);
    Py_XDECREF(sizes);
    Py_XDECREF(encoded);
    Py_XDECREF(readonly);
    Py_XDECREF(descriptor);
    Py_XDECREF(spans);
    return result;
}

static PyMethodDef reduce_ex_method = {"__reduce_ex__", pickle_reduce_ex, METH_O, reduce_ex_doc};


/* ---- unpickle ------------------------------------------------------------ */

/* Calls a Python function that raises what is wrong; makes sure something
 * is raised even if it returns. Always NULL. */
static PyObject *raise_through(PyObject *function, PyObject *arg, const char *otherwise)
{
    PyObject *result = PyObject_CallOneArg(function, arg);
    if (result != NULL) {
        Py_DECREF(result);
        PyErr_SetString(corrupt_error, otherwise);
    }
    return NULL;
}

/* The descriptor `encoded` decodes to, checked in C; or NULL with the
 * error Descriptor.decode raises. */
static PyObject *decode(PyObject *encoded)
{
    if (PyBytes_CheckExact(encoded)) {
        PyObject *descriptor = PyObject_CallOneArg(decode_c, encoded);
        if (descriptor != Py_None) {
            return descriptor; /* a Descriptor, or NULL */
        }
        Py_DECREF(descriptor);
    }
    return PyObject_CallOneArg(decode_py, encoded); /* raises, or decodes a bytes-like */
}

/* Received buffer i as a C-contiguous memoryview over `obj` (a copy only
 * when obj's memory is not contiguous), or NULL with CorruptError. */
static PyObject *received(Py_ssize_t i, PyObject *obj)
{
    PyObject *view = PyMemoryView_FromObject(obj);
    if (view == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_TypeError) && !PyErr_ExceptionMatches(PyExc_ValueError) &&
            !PyErr_ExceptionMatches(PyExc_BufferError)) {
            return NULL; /* MemoryError and the like stay what they are */
        }
        PyObject *type, *cause, *traceback;
        PyErr_Fetch(&type, &cause, &traceback);
        PyErr_NormalizeException(&type, &cause, &traceback);
        PyErr_Format(corrupt_error,
                     "pickled tensor: buffer %zd is a %.100s, not a usable buffer (missing?): %S",
                     i, Py_TYPE(obj)->tp_name, cause != NULL ? cause : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(cause);
        Py_XDECREF(traceback);
        return NULL;
    }
    if (PyBuffer_IsContiguous(PyMemoryView_GET_BUFFER(view), 'C')) {
        return view;
    }
    /* The one copy on this side: a transport handed back strided memory. */
    PyObject *copy = PyObject_CallMethodNoArgs(view, str_tobytes);
    Py_DECREF(view);
    if (copy == NULL) {
        return NULL;
    }
    view = PyMemoryView_FromObject(copy);
    Py_DECREF(copy);
    return view;
}

/* A writable copy of view's bytes, as a memoryview over a new bytearray. */
static PyObject *writable_copy(PyObject *view)
{
    Py_buffer *b = PyMemoryView_GET_BUFFER(view);
    PyObject *copy = PyByteArray_FromStringAndSize(b->buf, b->len);
    if (copy == NULL) {
        return NULL;
    }
    PyObject *copied = PyMemoryView_FromObject(copy);
    Py_DECREF(copy);
    return copied;
}

/* Buffer i, checked against the nbytes pickled; the span (address, nbytes)
 * goes to *span and the memoryview that keeps it to *out. */
static int take_buffer(Py_ssize_t i, PyObject *obj, PyObject *check, int copy, int *readonly,
                       PyObject **out, PyObject **span)
{
    /* The check is a length, or (length, fingerprint): see length_check. */
    PyObject *pickled_nbytes = check, *pickled_fingerprint = NULL;
    if (PyTuple_CheckExact(check) && PyTuple_GET_SIZE(check) == 2 &&
        PyLong_CheckExact(PyTuple_GET_ITEM(check, 1))) {
        pickled_nbytes = PyTuple_GET_ITEM(check, 0);
        pickled_fingerprint = PyTuple_GET_ITEM(check, 1);
    }
    if (!PyLong_CheckExact(pickled_nbytes)) {
        PyErr_Format(
            corrupt_error,
            "pickled tensor: buffer %zd's check must be a length or (length, fingerprint), "
            "not %.100s",
            i, Py_TYPE(check)->tp_name);
        return -1;
    }
    Py_ssize_t nbytes = PyLong_AsSsize_t(pickled_nbytes);
    if (nbytes < 0) {
        PyErr_Clear();
        PyErr_Format(corrupt_error, "pickled tensor: buffer %zd's length %R is out of range", i,
                     pickled_nbytes);
        return -1;
    }
    PyObject *view = received(i, obj);
    if (view == NULL) {
        return -1;
    }
    Py_ssize_t held = PyMemoryView_GET_BUFFER(view)->len;
    if (held != nbytes) {
        PyErr_Format(corrupt_error,
                     "pickled tensor: buffer %zd holds %zd bytes, but %zd were pickled "
                     "(a buffer is missing, cut short or out of order)",
                     i, held, nbytes);
        Py_DECREF(view);
        return -1;
    }
    if (pickled_fingerprint != NULL) {
        unsigned long long expected = PyLong_AsUnsignedLongLong(pickled_fingerprint);
        int in_range = !(expected == (unsigned long long)-1 && PyErr_Occurred());
        PyErr_Clear(); /* a fingerprint out of range matches nothing */
        const unsigned char *bytes = PyMemoryView_GET_BUFFER(view)->buf;
        if (!in_range || (fingerprint(bytes, (size_t)held) != expected &&
                          edge_fingerprint(bytes, (size_t)held) != expected)) {
            PyErr_Format(corrupt_error,
                         "pickled tensor: buffer %zd does not match the one pickled "
                         "(out of order among buffers of one length, or changed after pickling)",
                         i);
            Py_DECREF(view);
            return -1;
        }
    }
    if (copy) {
        Py_SETREF(view, writable_copy(view));
        if (view == NULL) {
            return -1;
        }
    }
    Py_buffer *b = PyMemoryView_GET_BUFFER(view);
    *readonly = *readonly || b->readonly;
    PyObject *address = PyLong_FromVoidPtr(b->buf);
    *span = address == NULL ? NULL : Py_BuildValue("(Nn)", address, held);
    if (*span == NULL) {
        Py_DECREF(view);
        return -1;
    }
    *out = view;
    return 0;
}

PyDoc_STRVAR(unpickle_doc,
             "unpickle_tensor(versions, encoded, readonly, nbytes, buffers, inband_copy=False, /) "
             "-> Tensor\n"
             "\n"
             "Rebuild a pickled Tensor, checking everything it is handed first: the\n"
             "versions, the descriptor (decoded and validated in C), each buffer's\n"
             "length (and fingerprint, where pickled) against the one pickled, then\n"
             "every span against the descriptor.\n"
             "The Tensor's owner is the tuple of memoryviews over the received buffer\n"
             "objects; it is read-only if it was when pickled or if any buffer arrives\n"
             "read-only. inband_copy (protocols 0 to 4) says the buffers are the\n"
             "pickle's own bytes: a writable tensor then gets writable copies.");

static PyObject *pickle_unpickle(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 5 && nargs != 6) {
        return PyErr_Format(corrupt_error, "pickled tensor: the state has %zd items, not 5 or 6",
                            nargs);
    }
    PyObject *given = args[0];
    if (!PyTuple_CheckExact(given) || PyTuple_GET_SIZE(given) != 2 ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(given, 0)) ||
        !PyLong_CheckExact(PyTuple_GET_ITEM(given, 1))) {
        return raise_through(refuse_versions, given, "pickled tensor: unusable versions");
    }
    int same = PySequence_Contains(versions, given);
    if (same <= 0) {
        return same < 0
                   ? NULL
                   : raise_through(refuse_versions, given, "pickled tensor: unusable versions");
    }
    PyObject *descriptor = decode(args[1]);
    if (descriptor == NULL) {
        return NULL;
    }
    /* decode judged the bytes; the state must name the version they have. */
    long stated = PyLong_AsLong(PyTuple_GET_ITEM(given, 1));
    if (stated != encoding_version(args[1])) {
        Py_DECREF(descriptor);
        return PyErr_Format(corrupt_error,
                            "pickled tensor: the state says descriptor encoding version %ld, the "
                            "descriptor bytes say %ld",
                            stated, encoding_version(args[1]));
    }
    PyObject *readonly_obj = args[2], *sizes = args[3], *buffers = args[4];
    PyObject *inband_copy = nargs == 6 ? args[5] : Py_False;
    PyObject *views = NULL, *spans = NULL, *tensor = NULL;
    if (!PyBool_Check(readonly_obj)) {
        PyErr_Format(corrupt_error, "pickled tensor: readonly must be a bool, not %.100s",
                     Py_TYPE(readonly_obj)->tp_name);
        goto done;
    }
    if (!PyTuple_CheckExact(sizes) || !PyTuple_CheckExact(buffers) ||
        PyTuple_GET_SIZE(sizes) != PyTuple_GET_SIZE(buffers)) {
        PyErr_SetString(corrupt_error,
                        "pickled tensor: the buffer lengths and the buffers do not pair up");
        goto done;
    }
    if (!PyBool_Check(inband_copy)) {
        PyErr_Format(corrupt_error, "pickled tensor: inband_copy must be a bool, not %.100s",
                     Py_TYPE(inband_copy)->tp_name);
        goto done;
    }
    int readonly = readonly_obj == Py_True;
    int copy = inband_copy == Py_True && !readonly;
    Py_ssize_t n = PyTuple_GET_SIZE(buffers);
    views = PyTuple_New(n);
    spans = views == NULL ? NULL : PyTuple_New(n);
    if (spans == NULL) {
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *view, *span;
        if (take_buffer(i, PyTuple_GET_ITEM(buffers, i), PyTuple_GET_ITEM(sizes, i), copy,
                        &readonly, &view, &span) < 0) {
            goto done;
        }
        PyTuple_SET_ITEM(views, i, view);
        PyTuple_SET_ITEM(spans, i, span);
    }
    /* check_buffers in C: every byte the descriptor reaches lies in a span. */
    PyObject *call[4] = {descriptor, spans, views, readonly ? Py_True : Py_False};
    tensor = PyObject_Vectorcall(from_spans, call, 4, NULL);
done:
    Py_XDECREF(spans);
    Py_XDECREF(views);
    Py_DECREF(descriptor);
    return tensor;
}

static PyMethodDef unpickle_def = {"unpickle_tensor", (PyCFunction)(void (*)(void))pickle_unpickle,
                                   METH_FASTCALL, unpickle_doc};


/* ---- setup -------------------------------------------------------------- */

PyDoc_STRVAR(setup_doc, "setup(Tensor, versions, decode, decode_py, tensor_from_spans, "
                        "refuse_versions, CorruptError, /)\n"
                        "    -> Tensor.__reduce_ex__ in C\n"
                        "\n"
                        "Called once by hurray._wiring: the (C ABI, encoding) version pairs a\n"
                        "state may carry, one per descriptor encoding version,\n"
                        "hurray._core's decode and tensor_from_spans, the Python functions that\n"
                        "raise what is wrong, and the error class for a corrupt state.");

static PyObject *pickle_setup(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *tensor, *pair, *dec, *dec_py, *spans_fn, *refuse, *error;
    if (!PyArg_ParseTuple(args, "O!O!OOOOO!:setup", &PyType_Type, &tensor, &PyTuple_Type, &pair,
                          &dec, &dec_py, &spans_fn, &refuse, &PyType_Type, &error)) {
        return NULL;
    }
    Py_XSETREF(versions, Py_NewRef(pair));
    Py_XSETREF(decode_c, Py_NewRef(dec));
    Py_XSETREF(decode_py, Py_NewRef(dec_py));
    Py_XSETREF(from_spans, Py_NewRef(spans_fn));
    Py_XSETREF(refuse_versions, Py_NewRef(refuse));
    Py_XSETREF(corrupt_error, Py_NewRef(error));
    return PyDescr_NewMethod((PyTypeObject *)tensor, &reduce_ex_method);
}

static PyMethodDef pickle_methods[] = {
    {"setup", pickle_setup, METH_VARARGS, setup_doc},
    {NULL, NULL, 0, NULL},
};

HURRAY__PY_MODULE_DEF(pickle_module, "hurray._pickle", "Pickling a Tensor in C (ADR-043, ADR-049).",
                      pickle_methods);

static int intern(PyObject **out, const char *name)
{
    *out = PyUnicode_InternFromString(name);
    return *out == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__pickle(void)
{
    if (intern(&str_descriptor, "_descriptor") < 0 || intern(&str_buffers, "_buffers") < 0 ||
        intern(&str_readonly, "_readonly") < 0 || intern(&str_encode, "encode") < 0 ||
        intern(&str_tobytes, "tobytes") < 0) {
        return NULL;
    }
    /* Named for hurray.pickling, where every pickle finds it. */
    PyObject *home = PyUnicode_FromString("hurray.pickling");
    Py_XSETREF(unpickle_fn, home == NULL ? NULL : PyCFunction_NewEx(&unpickle_def, NULL, home));
    Py_XDECREF(home);
    const HurrayPyItem items[] = {
        HURRAY__PY_TYPE("Span", &SpanType),
        HURRAY__PY_OBJECT("unpickle_tensor", Py_XNewRef(unpickle_fn)),
        HURRAY__PY_END,
    };
    return hurray__py_module_new(&pickle_module, items);
}
