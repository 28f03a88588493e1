/*
 * hurray_dequantize_rows over a tensor's spans, for the Python side's row
 * reads (formats/checkpoint/_graph.py). The buffer list borrows the spans
 * and lives for the call only. A status other than OK is not turned into
 * an exception here: the caller answers False and the Python path, which
 * makes the same call through cffi, raises the library's error with its
 * message, so every refusal reads as it does there.
 */
#include "_core_dequant.h"

#include "_pyruntime.h"
#include "hurray.h"

const char hurray__core_dequantize_rows_doc[] =
    "dequantize_rows(address, spans, out_dtype, first, count, out, /) -> bool\n"
    "\n"
    "hurray_dequantize_rows of the C descriptor at address (an int) over\n"
    "spans ((address, nbytes) pairs, borrowed) into out (a writable\n"
    "contiguous buffer): True when it returned OK, False for any other\n"
    "status (nothing raised: the caller's checked path says why).";

/* Pushes a borrowed buffer of the span (address, nbytes) onto list; 0 (nothing raised) when
 * the span is not two ints that fit 64 bits or a call fails. */
static int push_span(HurrayBufferList *list, PyObject *span)
{
    if (!PyTuple_CheckExact(span) || PyTuple_GET_SIZE(span) != 2) {
        return 0;
    }
    unsigned long long address = hurray__py_as_u64(PyTuple_GET_ITEM(span, 0));
    unsigned long long nbytes = hurray__py_as_u64(PyTuple_GET_ITEM(span, 1));
    HurrayBuffer *buf = NULL;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (hurray_buffer_from_ptr((void *)(uintptr_t)address, nbytes, NULL, NULL, &buf) != HURRAY_OK) {
        return 0;
    }
    HurrayStatus status = hurray_buffer_list_push(list, &buf);
    hurray_buffer_destroy(&buf); /* no-op once the list took it */
    return status == HURRAY_OK;
}

/* The list borrowing every span, or NULL (nothing raised) when one cannot be pushed. */
static HurrayBufferList *borrow(PyObject *spans)
{
    HurrayBufferList *list = NULL;
    if (hurray_buffer_list_new(&list) != HURRAY_OK) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(spans); i++) {
        if (!push_span(list, PyTuple_GET_ITEM(spans, i))) {
            hurray_buffer_list_destroy(&list);
            return NULL;
        }
    }
    return list;
}

PyObject *hurray__core_dequantize_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6 || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "dequantize_rows(address, spans, out_dtype, first, count, out): "
                        "an int, a tuple of spans, three ints and a buffer");
        return NULL;
    }
    unsigned long long address = hurray__py_as_u64(args[0]);
    unsigned long long code = hurray__py_as_u64(args[2]);
    unsigned long long first = hurray__py_as_u64(args[3]);
    unsigned long long count = hurray__py_as_u64(args[4]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (address == 0 || code > UINT32_MAX) {
        Py_RETURN_FALSE;
    }
    Py_buffer out;
    if (PyObject_GetBuffer(args[5], &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        return NULL;
    }
    HurrayBufferList *list = borrow(args[1]);
    HurrayStatus status = HURRAY_ERROR_INVALID_ARGUMENT;
    if (list != NULL) {
        const HurrayDescriptor *desc = (const HurrayDescriptor *)(uintptr_t)address;
        PyThreadState *saved = PyEval_SaveThread(); /* Py_BEGIN_ALLOW_THREADS, spelt out */
        status = hurray_dequantize_rows(desc, list, (HurrayDtype)code, first, count, out.buf,
                                        (uint64_t)out.len);
        PyEval_RestoreThread(saved);
        hurray_buffer_list_destroy(&list);
    }
    PyBuffer_Release(&out);
    return PyBool_FromLong(status == HURRAY_OK);
}
