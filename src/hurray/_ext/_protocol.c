/*
 * hurray._protocol -- the native protocol's C side: every capsule is made
 * and read here, against the Python C API and hurray.h.
 *
 * The design is design note D-NB2, docs/impl/d-nb2.md, its one statement;
 * comments below cite its decisions by number. In short: a "hurray_tensor"
 * capsule's pointer is a HurrayBufferList and its context a
 * HurrayTensorContext; every handle holds its own reference to the
 * producer's owner, dropped by hurray__py_owner_release (_pyruntime.c, shared
 * with _dlpack.c) from any thread, leaked at interpreter exit (decisions 2
 * and 5); a consumer checks the name, then the ABI version, then the
 * descriptor, then the buffers, and only then takes the capsule by renaming
 * it (decision 3); lists are destroyed before contexts (decision 4).
 */
#include "_protocol_api.h"
#include "_pyruntime.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hurray.h"

/* Static: PyCapsule keeps the pointer, never a copy of the string. */
static const char CAPSULE_NAME[] = "hurray_tensor";
static const char USED_CAPSULE_NAME[] = "used_hurray_tensor";

/* ---- errors ------------------------------------------------------------ */

/* Raises hurray.errors.<class_name>(message, status); status HURRAY_OK
 * gives None. Always returns NULL. */
#define raise_error(class_name, status, ...) \
    hurray__py_raise("hurray.errors", (class_name), (long)(status), __VA_ARGS__)

/* Raises the class that hurray.errors maps status to, with the C library's
 * message for this thread, prefixed by what was being done. */
static PyObject *raise_status(HurrayStatus status, const char *doing)
{
    /* Copy the message first: importing hurray.errors may run C calls that
     * overwrite this thread's last error. */
    char message[512];
    snprintf(message, sizeof message, "%s", hurray_last_error_message());
    const char *name = hurray_status_name(status);
    PyObject *module = PyImport_ImportModule("hurray.errors");
    PyObject *cls = module == NULL ? NULL
                                   : PyObject_CallMethod(module, "error_class", "l", (long)status);
    Py_XDECREF(module);
    if (cls == NULL) {
        return NULL;
    }
    hurray__py_raise_class(cls, PyUnicode_FromFormat("%s: %s: %s", name, doing, message),
                           (long)status);
    Py_DECREF(cls);
    return NULL;
}

/* ---- Holder: the consumer's ownership of a list and a context ---------- */

/* A Holder either took a capsule's list and context (consume), or, for the
 * exchange of one of this package's Tensors, holds owner_refs references to
 * owner in their place (hold, ADR-048): the same references the handles
 * would hold, dropped the same way. */
typedef struct {
    PyObject_HEAD
    HurrayBufferList *list;
    HurrayTensorContext *ctx;
    uint64_t buffer_count;
    PyObject *weakrefs;
    PyObject *owner;
    uint64_t owner_refs;
} Holder;

static void holder_dealloc(Holder *self)
{
    if (self->weakrefs != NULL) {
        PyObject_ClearWeakRefs((PyObject *)self);
    }
    /* List first, then context (D-NB2); each destroy nulls its pointer, so
     * nothing here can run twice. */
    hurray_buffer_list_destroy(&self->list);
    hurray_tensor_context_destroy(&self->ctx);
    /* The handles' references, as if each were freed (a dealloc holds the GIL). */
    uint64_t refs = self->owner_refs;
    self->owner_refs = 0;
    hurray__py_owner_release_n(self->owner, refs);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *holder_repr(Holder *self)
{
    return PyUnicode_FromFormat("<hurray._protocol.Holder of %llu buffer%s>",
                                (unsigned long long)self->buffer_count,
                                self->buffer_count == 1 ? "" : "s");
}

static PyTypeObject HolderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "hurray._protocol.Holder",
    .tp_doc = PyDoc_STR("Owns the buffer list and tensor context taken from a consumed "
                        "capsule, and frees both, list first, when it dies; or, for a "
                        "Tensor exchanged without a capsule, the owner references their "
                        "handles would hold (ADR-048)."),
    .tp_basicsize = sizeof(Holder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)holder_dealloc,
    .tp_repr = (reprfunc)holder_repr,
    .tp_weaklistoffset = offsetof(Holder, weakrefs),
};

/* ---- export ------------------------------------------------------------ */

/* The capsule's destructor. Frees only an unconsumed capsule: once renamed,
 * the list and context belong to whoever renamed it. Leaves no exception
 * set, and keeps one that was pending. */
static void capsule_destructor(PyObject *capsule)
{
    if (!PyCapsule_IsValid(capsule, CAPSULE_NAME)) {
        return;
    }
    HurrayPySavedError saved = hurray__py_save_error();
    HurrayBufferList *list = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    HurrayTensorContext *ctx = PyCapsule_GetContext(capsule);
    hurray_buffer_list_destroy(&list);
    hurray_tensor_context_destroy(&ctx);
    PyErr_Clear();
    hurray__py_restore_error(saved);
}

/* Reads one (address, nbytes) span. */
static int read_span(PyObject *span, Py_ssize_t index, void **out_ptr, uint64_t *out_len)
{
    if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2) {
        raise_error("InvalidArgumentError", HURRAY_ERROR_INVALID_ARGUMENT,
                    "span %zd must be an (address, nbytes) tuple, not %R", index, span);
        return -1;
    }
    unsigned long long address = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
    if (address == (unsigned long long)-1 && PyErr_Occurred()) {
        goto bad_number;
    }
    unsigned long long nbytes = hurray__py_as_u64(PyTuple_GET_ITEM(span, 1));
    if (nbytes == (unsigned long long)-1 && PyErr_Occurred()) {
        goto bad_number;
    }
    if (address > UINTPTR_MAX) {
        raise_error("InvalidArgumentError", HURRAY_ERROR_INVALID_ARGUMENT,
                    "span %zd: address %llu does not fit a pointer", index, address);
        return -1;
    }
    *out_ptr = (void *)(uintptr_t)address;
    *out_len = (uint64_t)nbytes;
    return 0;

bad_number:
    PyErr_Clear();
    raise_error("InvalidArgumentError", HURRAY_ERROR_INVALID_ARGUMENT,
                "span %zd: address and nbytes must be non-negative integers below 2**64, "
                "got %R",
                index, span);
    return -1;
}

/* Builds the buffer list over spans, one owner reference per buffer, each
 * buffer marked read-only when readonly is set (ABI 5, ADR-059). A NULL
 * owner takes no reference: the caller keeps the memory alive while the
 * list lives. On failure everything made so far is destroyed (dropping its
 * references). */
static HurrayBufferList *make_list(PyObject *spans, PyObject *owner, int readonly)
{
    if (!PyTuple_Check(spans)) {
        raise_error("InvalidArgumentError", HURRAY_ERROR_INVALID_ARGUMENT,
                    "spans must be a tuple of (address, nbytes) tuples, not %.100s",
                    Py_TYPE(spans)->tp_name);
        return NULL;
    }
    HurrayBufferList *list = NULL;
    HurrayStatus status = hurray_buffer_list_new(&list);
    if (status != HURRAY_OK) {
        raise_status(status, "making the buffer list");
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(spans);
    for (Py_ssize_t i = 0; i < count; i++) {
        void *ptr;
        uint64_t len;
        if (read_span(PyTuple_GET_ITEM(spans, i), i, &ptr, &len) < 0) {
            goto fail;
        }
        HurrayBuffer *buf = NULL;
        Py_XINCREF(owner);
        status = hurray_buffer_from_ptr(ptr, len, hurray__py_owner_release, owner, &buf);
        if (status != HURRAY_OK) {
            Py_XDECREF(owner); /* the buffer never took it */
            raise_status(status, "wrapping a span");
            goto fail;
        }
        if (readonly) {
            (void)hurray_buffer_mark_readonly(buf); /* cannot fail on a live buffer */
        }
        status = hurray_buffer_list_push(list, &buf);
        if (status != HURRAY_OK) {
            hurray_buffer_destroy(&buf); /* drops its reference */
            raise_status(status, "adding a buffer to the list");
            goto fail;
        }
    }
    return list;

fail:
    hurray_buffer_list_destroy(&list);
    return NULL;
}

/* The context over descriptor (bytes), of abi_version, holding its own
 * owner reference (none for a NULL owner, as make_list). */
static HurrayTensorContext *make_context(PyObject *descriptor, PyObject *owner,
                                         uint32_t abi_version)
{
    HurrayTensorContext *ctx = NULL;
    Py_XINCREF(owner);
    HurrayStatus status = hurray_tensor_context_new(abi_version,
                                                    (const uint8_t *)PyBytes_AS_STRING(descriptor),
                                                    (uint64_t)PyBytes_GET_SIZE(descriptor), owner,
                                                    hurray__py_owner_release, &ctx);
    if (status != HURRAY_OK) {
        Py_XDECREF(owner); /* the context never took it */
        raise_status(status, "making the tensor context");
        return NULL;
    }
    return ctx;
}

/* HurrayProtocolApi.pair (_protocol_api.h): the list over spans and the
 * context over descriptor (bytes), both or neither. A version-4 context
 * cannot say that memory is read-only, so read-only memory never goes out
 * with one (ADR-059): the callers refuse first, with their own words, and
 * this is the last line. */
static int make_pair(PyObject *descriptor, PyObject *spans, PyObject *owner, uint32_t abi_version,
                     int readonly, HurrayTensorContext **out_ctx, HurrayBufferList **out_list)
{
    if (readonly && abi_version < 5u) {
        raise_error("UnsupportedError", HURRAY_ERROR_UNSUPPORTED,
                    "cannot export read-only memory with a C ABI %u context: ABI %u "
                    "cannot mark a buffer read-only (ABI 5 can)",
                    (unsigned)abi_version, (unsigned)abi_version);
        return -1;
    }
    HurrayBufferList *list = make_list(spans, owner, readonly);
    if (list == NULL) {
        return -1;
    }
    HurrayTensorContext *ctx = make_context(descriptor, owner, abi_version);
    if (ctx == NULL) {
        hurray_buffer_list_destroy(&list);
        return -1;
    }
    *out_ctx = ctx;
    *out_list = list;
    return 0;
}

/* HurrayProtocolApi.export (_protocol_api.h), and export()'s work, once
 * its arguments are known to be bytes and anything: the pair, in a capsule. */
static PyObject *export_capsule(PyObject *descriptor, PyObject *spans, PyObject *owner,
                                uint32_t abi_version, int readonly)
{
    HurrayTensorContext *ctx = NULL;
    HurrayBufferList *list = NULL;
    if (make_pair(descriptor, spans, owner, abi_version, readonly, &ctx, &list) < 0) {
        return NULL;
    }
    PyObject *capsule = PyCapsule_New(list, CAPSULE_NAME, capsule_destructor);
    if (capsule == NULL) {
        hurray_buffer_list_destroy(&list);
        hurray_tensor_context_destroy(&ctx);
        return NULL;
    }
    if (PyCapsule_SetContext(capsule, ctx) != 0) {
        /* Unreachable for a fresh capsule; the destructor would then free
         * the list alone, so free the context here. */
        hurray_tensor_context_destroy(&ctx);
        Py_DECREF(capsule);
        return NULL;
    }
    return capsule;
}

PyDoc_STRVAR(export_doc,
             "export(descriptor_bytes, spans, owner, abi_version=C_ABI_VERSION, "
             "readonly=False, /) -> PyCapsule\n"
             "\n"
             "A \"hurray_tensor\" capsule over spans, a tuple of (address, nbytes):\n"
             "its pointer a HurrayBufferList, its context a HurrayTensorContext of\n"
             "abi_version (4 or 5) holding the descriptor bytes. With readonly, every\n"
             "buffer is marked HURRAY_BUFFER_READONLY (ABI 5 only: a version-4\n"
             "context is refused for read-only memory). Every handle holds a strong\n"
             "reference to owner, which must keep the memory of every span alive. The\n"
             "descriptor is not checked against the spans here; every consumer checks it.");

static PyObject *protocol_export(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs < 3 || nargs > 5) {
        PyErr_Format(PyExc_TypeError, "export() takes 3 to 5 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *descriptor = args[0];
    PyObject *spans = args[1];
    PyObject *owner = args[2];
    if (!PyBytes_Check(descriptor)) {
        return raise_error("InvalidArgumentError", HURRAY_ERROR_INVALID_ARGUMENT,
                           "descriptor_bytes must be bytes, not %.100s",
                           Py_TYPE(descriptor)->tp_name);
    }
    unsigned long abi_version = HURRAY_C_ABI_VERSION;
    if (nargs > 3) {
        abi_version = PyLong_Check(args[3]) ? PyLong_AsUnsignedLong(args[3]) : 0;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            abi_version = 0;
        }
        if (abi_version < HURRAY_C_ABI_MIN_VERSION || abi_version > HURRAY_C_ABI_VERSION) {
            return raise_error("AbiVersionError", HURRAY_ERROR_ABI_VERSION,
                               "abi_version must be %d to %d, not %R", HURRAY_C_ABI_MIN_VERSION,
                               HURRAY_C_ABI_VERSION, args[3]);
        }
    }
    int readonly = nargs > 4 ? PyObject_IsTrue(args[4]) : 0;
    if (readonly < 0) {
        return NULL;
    }
    return export_capsule(descriptor, spans, owner, (uint32_t)abi_version, readonly);
}

/* ---- consume ----------------------------------------------------------- */

/* What check_capsule proved, for the consumer to take. */
typedef struct CheckedCapsule {
    HurrayBufferList *list;
    HurrayTensorContext *ctx;
    uint32_t version;
    const uint8_t *descriptor; /* borrowed from ctx */
    uint64_t descriptor_len;
    uint64_t buffer_count;
    int readonly;           /* some buffer is marked read-only (ABI 5) */
    HurrayDescriptor *desc; /* the decoded, checked descriptor: the caller's */
} CheckedCapsule;

/* Everything a consumer checks before it takes ownership (D-NB2), in
 * order. Touches nothing it has not checked, changes nothing, and
 * allocates no Python object unless it fails. On success out->desc is the
 * descriptor it decoded and checked, which the caller owns: it is handed to
 * the Tensor instead of being decoded again (one check per handoff,
 * ADR-046). */
static int check_capsule(PyObject *capsule, CheckedCapsule *out)
{
    if (!PyCapsule_CheckExact(capsule)) {
        raise_error("CapsuleError", HURRAY_OK, "expected a PyCapsule named '%s', got %.100s",
                    CAPSULE_NAME, Py_TYPE(capsule)->tp_name);
        return -1;
    }
    const char *name = PyCapsule_GetName(capsule);
    if (name == NULL || strcmp(name, CAPSULE_NAME) != 0) {
        if (name != NULL && strcmp(name, USED_CAPSULE_NAME) == 0) {
            raise_error("CapsuleError", HURRAY_OK,
                        "capsule already consumed: it is named '%s'; a Hurray capsule can "
                        "be read once",
                        USED_CAPSULE_NAME);
        } else if (name == NULL) {
            raise_error("CapsuleError", HURRAY_OK,
                        "capsule has no name; a Hurray capsule is named '%s'", CAPSULE_NAME);
        } else {
            raise_error("CapsuleError", HURRAY_OK,
                        "capsule is named '%s'; a Hurray capsule is named '%s'", name,
                        CAPSULE_NAME);
        }
        return -1;
    }
    HurrayTensorContext *ctx = PyCapsule_GetContext(capsule);
    if (ctx == NULL) {
        if (!PyErr_Occurred()) {
            raise_error("NotAContextError", HURRAY_ERROR_NOT_A_CONTEXT,
                        "capsule '%s' has no context; its producer did not attach a "
                        "HurrayTensorContext",
                        CAPSULE_NAME);
        }
        return -1;
    }
    /* The version first, through the one accessor that any context of any
     * ABI version answers (ADR-034 section 4). */
    uint32_t version = 0;
    HurrayStatus status = hurray_tensor_context_abi_version(ctx, &version);
    if (status != HURRAY_OK) {
        raise_status(status, "reading the capsule context's ABI version");
        return -1;
    }
    if (version < HURRAY_C_ABI_MIN_VERSION || version > HURRAY_C_ABI_VERSION) {
        raise_error("AbiVersionError", HURRAY_ERROR_ABI_VERSION,
                    "capsule context has C ABI version %u; this build of hurray reads C ABI "
                    "versions %u to %u",
                    (unsigned)version, (unsigned)HURRAY_C_ABI_MIN_VERSION,
                    (unsigned)HURRAY_C_ABI_VERSION);
        return -1;
    }
    HurrayBufferList *list = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
    if (list == NULL) {
        return -1; /* a valid capsule never has a NULL pointer; GetPointer said why */
    }
    const uint8_t *bytes = NULL;
    uint64_t len = 0;
    status = hurray_tensor_context_descriptor(ctx, &bytes, &len);
    if (status != HURRAY_OK) {
        raise_status(status, "reading the descriptor from the capsule context");
        return -1;
    }
    HurrayDescriptor *desc = NULL;
    status = hurray_descriptor_decode(bytes, len, &desc);
    if (status != HURRAY_OK) {
        raise_status(status, "decoding the capsule's descriptor");
        return -1;
    }
    status = hurray_descriptor_check_buffers(desc, list);
    if (status != HURRAY_OK) {
        hurray_descriptor_destroy(&desc);
        raise_status(status, "checking the capsule's buffers against its descriptor");
        return -1;
    }
    uint64_t count = 0;
    (void)hurray_buffer_list_len(list, &count); /* cannot fail on a checked list */
    /* Whether it may write (ADR-059): through the context, which answers
     * "writable" for a version-4 pair without reading its buffers. */
    int readonly = 0;
    for (uint64_t i = 0; i < count; i++) {
        uint32_t flags = 0;
        status = hurray_tensor_context_buffer_flags(ctx, list, i, &flags);
        if (status != HURRAY_OK) {
            hurray_descriptor_destroy(&desc);
            raise_status(status, "reading the flags of the capsule's buffers");
            return -1;
        }
        readonly |= (flags & HURRAY_BUFFER_READONLY) != 0;
    }
    out->readonly = readonly;
    out->list = list;
    out->ctx = ctx;
    out->version = version;
    out->descriptor = bytes;
    out->descriptor_len = len;
    out->buffer_count = count;
    out->desc = desc;
    return 0;
}

/* ---- the decoded descriptor, handed over ------------------------------- */

/* (address, box): box is a capsule that owns desc and destroys it when it
 * dies; address is desc as an int, for cffi to cast. Whoever keeps box keeps
 * the descriptor. On failure desc is destroyed. */
static PyObject *hand_over_descriptor(HurrayDescriptor *desc)
{
    PyObject *box, *address;
    if (hurray__py_descriptor_box(desc, &box, &address) < 0) {
        return NULL;
    }
    PyObject *pair = PyTuple_Pack(2, address, box);
    Py_DECREF(address);
    Py_DECREF(box);
    return pair;
}

/* (address, nbytes) of every buffer, from the list's own accessors. */
static PyObject *read_spans(const HurrayBufferList *list, uint64_t count)
{
    PyObject *spans = PyTuple_New((Py_ssize_t)count);
    if (spans == NULL) {
        return NULL;
    }
    for (uint64_t i = 0; i < count; i++) {
        const HurrayBuffer *buf = NULL;
        void *data = NULL;
        uint64_t len = 0;
        HurrayStatus status = hurray_buffer_list_get(list, i, &buf);
        if (status == HURRAY_OK) {
            status = hurray_buffer_data(buf, &data, &len);
        }
        if (status != HURRAY_OK) {
            Py_DECREF(spans);
            return raise_status(status, "reading a buffer of the list");
        }
        PyObject *span = PyTuple_New(2);
        if (span == NULL) {
            Py_DECREF(spans);
            return NULL;
        }
        PyTuple_SET_ITEM(spans, (Py_ssize_t)i, span);
        PyObject *address = PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)data);
        if (address == NULL) {
            Py_DECREF(spans);
            return NULL;
        }
        PyTuple_SET_ITEM(span, 0, address);
        PyObject *nbytes = PyLong_FromUnsignedLongLong((unsigned long long)len);
        if (nbytes == NULL) {
            Py_DECREF(spans);
            return NULL;
        }
        PyTuple_SET_ITEM(span, 1, nbytes);
    }
    return spans;
}

PyDoc_STRVAR(consume_doc,
             "consume(capsule, /) -> (abi_version, descriptor_bytes, spans, holder, descriptor, "
             "readonly)\n"
             "\n"
             "Checks a \"hurray_tensor\" capsule -- its name, the context's ABI version\n"
             "(first), the descriptor, the descriptor against the buffers -- and only\n"
             "then takes ownership: renames it \"used_hurray_tensor\" and moves its\n"
             "list and context into holder, which frees them when it dies. spans is a\n"
             "tuple of (address, nbytes) that stays valid while holder lives. On any\n"
             "refusal a HurrayError is raised and the capsule is left as it was. Only a\n"
             "MemoryError can come after the rename; the capsule is then consumed and\n"
             "the handles taken from it are freed. descriptor is (address, box): the\n"
             "HurrayDescriptor it decoded and checked, owned by box (a capsule that\n"
             "destroys it when it dies), for the caller to keep instead of decoding the\n"
             "bytes again. readonly is True when the context (ABI 5) marks any buffer\n"
             "read-only; a version-4 context never does.");

/* HurrayProtocolApi.take (_protocol_api.h), and consume()'s work: checks
 * capsule in full, then takes it into a new Holder. */
static PyObject *take(PyObject *capsule, HurrayDescriptor **out_desc, const uint8_t **out_bytes,
                      uint64_t *out_len, PyObject **out_spans, uint32_t *out_version,
                      int *out_readonly)
{
    /* Allocated before the checks: between the checks and the rename there
     * must be no allocation that could run a collection, a finalizer, and
     * so another thread that takes the same capsule. Holder is not a GC
     * type. */
    Holder *holder = PyObject_New(Holder, &HolderType);
    if (holder == NULL) {
        return NULL;
    }
    holder->list = NULL;
    holder->ctx = NULL;
    holder->buffer_count = 0;
    holder->weakrefs = NULL;
    holder->owner = NULL;
    holder->owner_refs = 0;

    CheckedCapsule checked;
    if (check_capsule(capsule, &checked) < 0) {
        Py_DECREF(holder);
        return NULL;
    }
    /* Take ownership: from here the capsule's destructor frees nothing. */
    if (PyCapsule_SetName(capsule, USED_CAPSULE_NAME) != 0 ||
        PyCapsule_SetContext(capsule, NULL) != 0) {
        hurray_descriptor_destroy(&checked.desc);
        Py_DECREF(holder); /* unreachable for a checked capsule */
        return NULL;
    }
    holder->list = checked.list;
    holder->ctx = checked.ctx;
    holder->buffer_count = checked.buffer_count;

    /* From here a failure just drops holder, which frees both handles. The
     * descriptor bytes are the context's, which holder now keeps alive. */
    PyObject *spans = read_spans(checked.list, checked.buffer_count);
    if (spans == NULL) {
        hurray_descriptor_destroy(&checked.desc);
        Py_DECREF(holder);
        return NULL;
    }
    *out_desc = checked.desc;
    *out_bytes = checked.descriptor;
    *out_len = checked.descriptor_len;
    *out_spans = spans;
    *out_version = checked.version;
    *out_readonly = checked.readonly;
    return (PyObject *)holder;
}

static PyObject *protocol_consume(PyObject *module, PyObject *capsule)
{
    (void)module;
    HurrayDescriptor *desc = NULL;
    const uint8_t *raw = NULL;
    uint64_t len = 0;
    PyObject *spans = NULL;
    uint32_t version = 0;
    int readonly = 0;
    PyObject *holder = take(capsule, &desc, &raw, &len, &spans, &version, &readonly);
    if (holder == NULL) {
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)raw, (Py_ssize_t)len);
    if (bytes == NULL) {
        hurray_descriptor_destroy(&desc);
        Py_DECREF(spans);
        Py_DECREF(holder);
        return NULL;
    }
    PyObject *decoded = hand_over_descriptor(desc); /* destroys it on failure */
    PyObject *abi = decoded == NULL ? NULL : PyLong_FromUnsignedLong(version);
    PyObject *result = abi == NULL ? NULL : PyTuple_New(6);
    if (result == NULL) {
        Py_XDECREF(abi);
        Py_XDECREF(decoded);
        Py_DECREF(spans);
        Py_DECREF(bytes);
        Py_DECREF(holder);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, abi);
    PyTuple_SET_ITEM(result, 1, bytes);
    PyTuple_SET_ITEM(result, 2, spans);
    PyTuple_SET_ITEM(result, 3, holder);
    PyTuple_SET_ITEM(result, 4, decoded);
    PyTuple_SET_ITEM(result, 5, Py_NewRef(readonly ? Py_True : Py_False));
    return result;
}

/* ---- the exchange of a Tensor, without a capsule (ADR-048) ------------- */

/* HurrayProtocolApi.hold (_protocol_api.h). export() followed at once by
 * consume() would make a list, a handle per buffer and a context, decode
 * the descriptor the producer already holds checked, prove spans the
 * producer's constructor already proved, and hand the handles to a Holder
 * that nothing ever asks for them: what is left of all that is who holds
 * which references, and that is what this Holder keeps. */
static PyObject *hold(PyObject *owner, uint64_t buffer_count)
{
    Holder *holder = PyObject_New(Holder, &HolderType);
    if (holder == NULL) {
        return NULL;
    }
    holder->list = NULL;
    holder->ctx = NULL;
    holder->buffer_count = buffer_count;
    holder->weakrefs = NULL;
    holder->owner = owner;
    holder->owner_refs = buffer_count + 1; /* one per buffer, one for the context */
    for (uint64_t i = 0; i < holder->owner_refs; i++) {
        Py_INCREF(owner);
    }
    return (PyObject *)holder;
}

static HurrayProtocolApi protocol_api = {.hold = hold,
                                         .take = take,
                                         .export = export_capsule,
                                         .pair = make_pair};

/* ---- module ------------------------------------------------------------ */

static PyMethodDef protocol_methods[] = {
    {"export", (PyCFunction)(void (*)(void))protocol_export, METH_FASTCALL, export_doc},
    {"consume", protocol_consume, METH_O, consume_doc},
    HURRAY__PY_OWNER_COUNTERS_METHOD,
    {NULL, NULL, 0, NULL},
};

HURRAY__PY_MODULE_DEF(
    protocol_module, "hurray._protocol",
    "The native protocol's C side: making and consuming 'hurray_tensor' capsules.",
    protocol_methods);

PyMODINIT_FUNC PyInit__protocol(void)
{
    const HurrayPyItem items[] = {
        HURRAY__PY_TYPE("Holder", &HolderType),
        HURRAY__PY_CAPSULE_TYPE,
        HURRAY__PY_OBJECT("_C_API", PyCapsule_New(&protocol_api, HURRAY_PROTOCOL_API, NULL)),
        HURRAY__PY_STRING("CAPSULE_NAME", CAPSULE_NAME),
        HURRAY__PY_STRING("USED_CAPSULE_NAME", USED_CAPSULE_NAME),
        HURRAY__PY_INT("C_ABI_VERSION", HURRAY_C_ABI_VERSION),
        HURRAY__PY_INT("C_ABI_MIN_VERSION", HURRAY_C_ABI_MIN_VERSION),
        HURRAY__PY_END,
    };
    return hurray__py_module_new(&protocol_module, items);
}
