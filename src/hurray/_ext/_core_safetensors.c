/*
 * The safetensors reader's fast path (formats/safetensors_file.py), in C.
 *
 * safetensors_header reads a header's JSON text itself, for the plain form
 * every writer produces: strings with no escape, counts as bare digits.
 * safetensors_entries reads the entries of a header json.loads has parsed
 * (the path taken when a string holds an escape, as Hurray's own record
 * does). Both answer None at anything they do not expect, and the Python
 * checks then read the header again and raise the error that names the
 * entry: so this code refuses nothing itself, and accepts only what those
 * checks accept, with the same result.
 */
#include "_core_safetensors.h"

#include "_pyruntime.h"

#include <string.h>

#define SAFETENSORS_MAX_ELEMENTS (1ULL << 60) /* safetensors_file.MAX_ELEMENTS */
#define SAFETENSORS_MAX_DIMS 64               /* more dimensions: left to the checks */

static PyObject *entry_keys[3]; /* "dtype", "shape", "data_offsets", interned */

int hurray__core_safetensors_init(void)
{
    static const char *const names[] = {"dtype", "shape", "data_offsets"};
    for (int i = 0; i < 3; i++) {
        if (entry_keys[i] == NULL &&
            (entry_keys[i] = PyUnicode_InternFromString(names[i])) == NULL) {
            return -1;
        }
    }
    return 0;
}

/* ---- an entry's arithmetic, shared by both readers ----------------------- */

/* Multiplies a dimension into the element count: non-zero dimensions multiply
 * to at most SAFETENSORS_MAX_ELEMENTS, a zero one empties the tensor. 0 past that. */
static int st_grow(unsigned long long *count, int *empty, unsigned long long d)
{
    if (d == 0) {
        *empty = 1;
        return 1;
    }
    if (*count > SAFETENSORS_MAX_ELEMENTS / d) {
        return 0;
    }
    *count *= d;
    return 1;
}

/* The entry (dtype, dims, absolute start, nbytes) when `count` elements of
 * dtype fill [begin, end) exactly, else Py_None; NULL with an error set.
 * `dims` is always taken over. */
static PyObject *st_sized(PyObject *dtype, PyObject *bits_of, PyObject *dims,
                          unsigned long long count, unsigned long long begin,
                          unsigned long long end, unsigned long long data_start)
{
    PyObject *bits = PyUnicode_CheckExact(dtype) ? PyDict_GetItemWithError(bits_of, dtype) : NULL;
    if (bits == NULL && PyErr_Occurred()) {
        Py_DECREF(dims);
        return NULL;
    }
    unsigned long long width = 0;
    if (bits != NULL && PyLong_CheckExact(bits)) {
        width = PyLong_AsUnsignedLongLong(bits);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            width = 0;
        }
    }
    if (width == 0 || width > 64 || begin > end || data_start + end < data_start) {
        Py_DECREF(dims);
        Py_RETURN_NONE;
    }
    /* count <= 2^60 and width <= 64: count * width / 8 and count * width for width < 8 fit */
    unsigned long long nbytes = end - begin;
    int sized = width % 8 == 0 ? count * (width / 8) == nbytes
                               : nbytes <= SAFETENSORS_MAX_ELEMENTS && count * width == nbytes * 8;
    if (!sized) {
        Py_DECREF(dims);
        Py_RETURN_NONE;
    }
    PyObject *entry =
        PyTuple_New(4); /* built directly: Py_BuildValue parses its format per entry */
    PyObject *start = entry ? PyLong_FromUnsignedLongLong(data_start + begin) : NULL;
    PyObject *size = start ? PyLong_FromUnsignedLongLong(nbytes) : NULL;
    if (size == NULL) {
        Py_XDECREF(start);
        Py_XDECREF(entry);
        Py_DECREF(dims);
        return NULL;
    }
    Py_INCREF(dtype);
    PyTuple_SET_ITEM(entry, 0, dtype);
    PyTuple_SET_ITEM(entry, 1, dims);
    PyTuple_SET_ITEM(entry, 2, start);
    PyTuple_SET_ITEM(entry, 3, size);
    return entry;
}

/* ---- entries of a parsed header --------------------------------------- */

/* A non-negative int (exactly an int, not a bool) below 2^63 into *out; 0 when it is not one. */
static int st_count(PyObject *v, unsigned long long *out)
{
    if (!PyLong_CheckExact(v)) {
        return 0;
    }
    int overflow = 0;
    long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || n < 0) {
        return 0;
    }
    *out = (unsigned long long)n;
    return 1;
}

/* One parsed entry as st_sized makes it, or Py_None when it is not well
 * formed; `*begin` and `*end` its data offsets. NULL with an error set. */
static PyObject *st_entry(PyObject *info, PyObject *bits_of, unsigned long long data_start,
                          unsigned long long *begin, unsigned long long *end)
{
    if (!PyDict_CheckExact(info) || PyDict_GET_SIZE(info) != 3) {
        Py_RETURN_NONE;
    }
    PyObject *dtype = PyDict_GetItemWithError(info, entry_keys[0]);
    PyObject *shape = dtype ? PyDict_GetItemWithError(info, entry_keys[1]) : NULL;
    PyObject *offsets = shape ? PyDict_GetItemWithError(info, entry_keys[2]) : NULL;
    if (offsets == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    if (!PyList_CheckExact(shape) || !PyList_CheckExact(offsets) || PyList_GET_SIZE(offsets) != 2 ||
        !st_count(PyList_GET_ITEM(offsets, 0), begin) ||
        !st_count(PyList_GET_ITEM(offsets, 1), end)) {
        Py_RETURN_NONE;
    }
    unsigned long long count = 1;
    int empty = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(shape); i++) {
        unsigned long long d;
        if (!st_count(PyList_GET_ITEM(shape, i), &d) || !st_grow(&count, &empty, d)) {
            Py_RETURN_NONE;
        }
    }
    PyObject *dims = PyList_AsTuple(shape);
    if (dims == NULL) {
        return NULL;
    }
    return st_sized(dtype, bits_of, dims, empty ? 0 : count, *begin, *end, data_start);
}

const char hurray__core_safetensors_entries_doc[] =
    "safetensors_entries(header, data_start, bits, /) -> (entries, end) or None\n"
    "\n"
    "The entries of a parsed safetensors header (its __metadata__ taken out):\n"
    "{name: (dtype, shape, absolute start, nbytes)}, each entry a dict of exactly\n"
    "dtype (a key of bits, which maps it to its bits per element), shape (a\n"
    "list of counts) and data_offsets ([begin, end], begin <= end) whose size\n"
    "matches. end is where the data ends when the entries are listed in the\n"
    "order of their bytes, one after the other from 0, else -1. None when any\n"
    "entry is anything else: the Python checks then say what is wrong.";

PyObject *hurray__core_safetensors_entries(PyObject *module, PyObject *const *args,
                                           Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "safetensors_entries(header, data_start, bits): two dicts and an int");
        return NULL;
    }
    unsigned long long data_start = hurray__py_as_u64(args[1]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *entries = PyDict_New();
    if (entries == NULL) {
        return NULL;
    }
    PyObject *name, *info;
    Py_ssize_t pos = 0;
    unsigned long long at = 0;
    int in_order = 1;
    while (PyDict_Next(args[0], &pos, &name, &info)) {
        unsigned long long begin, end;
        PyObject *entry = st_entry(info, args[2], data_start, &begin, &end);
        if (entry == NULL || entry == Py_None || PyDict_SetItem(entries, name, entry) < 0) {
            int failed = entry == NULL || entry != Py_None;
            Py_XDECREF(entry);
            Py_DECREF(entries);
            if (failed) {
                return NULL;
            }
            Py_RETURN_NONE;
        }
        Py_DECREF(entry);
        in_order = in_order && begin == at;
        at = end;
    }
    return Py_BuildValue("(NL)", entries, in_order ? (long long)at : -1LL);
}

/* ---- the header's text, read directly ---------------------------------- */

/* What the text reader returns when it meets anything but the plain form. */
#define ST_UNEXPECTED 0
#define ST_OK 1
#define ST_ERROR (-1) /* a Python error is set (memory) */

typedef struct StText {
    const unsigned char *p, *end;
} StText;

static void st_space(StText *t)
{
    while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r')) {
        t->p++;
    }
}

/* Consumes `c` (after white space): 1, or 0 when the next character is another. */
static int st_take(StText *t, unsigned char c)
{
    st_space(t);
    if (t->p < t->end && *t->p == c) {
        t->p++;
        return 1;
    }
    return 0;
}

/* A string with no escape and no control character: its raw bytes. */
static int st_raw_string(StText *t, const char **at, Py_ssize_t *len)
{
    if (!st_take(t, '"')) {
        return ST_UNEXPECTED;
    }
    const unsigned char *begin = t->p;
    while (t->p < t->end && *t->p != '"') {
        if (*t->p == '\\' || *t->p < 0x20) {
            return ST_UNEXPECTED; /* an escape (json.loads reads it) or what JSON forbids */
        }
        t->p++;
    }
    if (t->p == t->end) {
        return ST_UNEXPECTED;
    }
    *at = (const char *)begin;
    *len = t->p - begin;
    t->p++;
    return ST_OK;
}

/* The dtypes a header has spelt so far, each as one str: a file of a thousand
 * tensors has a handful of dtypes, so each is decoded and hashed once. */
#define ST_DTYPES_SEEN 8
typedef struct StDtypes {
    PyObject *str[ST_DTYPES_SEEN];
    int n;
} StDtypes;

/* A string's raw bytes as a str; UTF-8 that is not valid is left to the checks. */
static int st_decode(const char *at, Py_ssize_t len, PyObject **out)
{
    *out = PyUnicode_DecodeUTF8(at, len, "strict");
    if (*out == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            return ST_ERROR;
        }
        PyErr_Clear();
        return ST_UNEXPECTED;
    }
    return ST_OK;
}

/* A string with no escape as a str. */
static int st_string(StText *t, PyObject **out)
{
    const char *at;
    Py_ssize_t len;
    if (st_raw_string(t, &at, &len) != ST_OK) {
        return ST_UNEXPECTED;
    }
    return st_decode(at, len, out);
}

/* A dtype's string as a str (new reference), the one made for its spelling before if there was one.
 */
static int st_dtype(StText *t, StDtypes *seen, PyObject **out)
{
    const char *at;
    Py_ssize_t len;
    if (st_raw_string(t, &at, &len) != ST_OK) {
        return ST_UNEXPECTED;
    }
    for (int i = 0; i < seen->n; i++) {
        PyObject *s = seen->str[i];
        if (PyUnicode_GET_LENGTH(s) == len && memcmp(PyUnicode_DATA(s), at, (size_t)len) == 0) {
            Py_INCREF(s);
            *out = s;
            return ST_OK;
        }
    }
    int status = st_decode(at, len, out);
    if (status != ST_OK) {
        return status;
    }
    if (seen->n < ST_DTYPES_SEEN &&
        PyUnicode_IS_ASCII(*out)) { /* ASCII: its data are the bytes compared above */
        Py_INCREF(*out);
        seen->str[seen->n++] = *out;
    }
    return ST_OK;
}

/* A count written as bare digits, at most 18 of them (below 2^63), no leading zero. */
static int st_digits(StText *t, unsigned long long *out)
{
    st_space(t);
    const unsigned char *begin = t->p;
    unsigned long long v = 0;
    while (t->p < t->end && *t->p >= '0' && *t->p <= '9') {
        v = v * 10 + (unsigned long long)(*t->p - '0');
        t->p++;
        if (t->p - begin > 18) {
            return ST_UNEXPECTED;
        }
    }
    if (t->p == begin || (*begin == '0' && t->p - begin > 1)) {
        return ST_UNEXPECTED;
    }
    *out = v;
    return ST_OK;
}

/* A list of counts: its values (at most `room`) into out, their number into *n. */
static int st_counts(StText *t, unsigned long long *out, int room, int *n)
{
    *n = 0;
    if (!st_take(t, '[')) {
        return ST_UNEXPECTED;
    }
    if (st_take(t, ']')) {
        return ST_OK;
    }
    do {
        if (*n == room || st_digits(t, &out[*n]) != ST_OK) {
            return ST_UNEXPECTED;
        }
        (*n)++;
    } while (st_take(t, ','));
    return st_take(t, ']') ? ST_OK : ST_UNEXPECTED;
}

/* Does the raw key equal the C string `name`? */
static int st_is(const char *at, Py_ssize_t len, const char *name)
{
    return (size_t)len == strlen(name) && memcmp(at, name, (size_t)len) == 0;
}

/* One tensor's entry: an object of exactly dtype, shape and data_offsets, in any order. */
static int st_text_entry(StText *t, PyObject *bits_of, StDtypes *seen,
                         unsigned long long data_start, PyObject **entry, unsigned long long *begin,
                         unsigned long long *end)
{
    PyObject *dtype = NULL;
    unsigned long long dims[SAFETENSORS_MAX_DIMS], offsets[2];
    int ndim = -1, noffsets = -1, status = ST_UNEXPECTED;
    if (!st_take(t, '{')) {
        return ST_UNEXPECTED;
    }
    do {
        const char *at;
        Py_ssize_t len;
        if (st_raw_string(t, &at, &len) != ST_OK || !st_take(t, ':')) {
            goto done;
        }
        int step;
        if (st_is(at, len, "dtype") && dtype == NULL) {
            step = st_dtype(t, seen, &dtype);
        } else if (st_is(at, len, "shape") && ndim < 0) {
            step = st_counts(t, dims, SAFETENSORS_MAX_DIMS, &ndim);
        } else if (st_is(at, len, "data_offsets") && noffsets < 0) {
            step = st_counts(t, offsets, 2, &noffsets);
        } else {
            goto done; /* a key more, or one listed twice */
        }
        if (step != ST_OK) {
            status = step;
            goto done;
        }
    } while (st_take(t, ','));
    if (!st_take(t, '}') || dtype == NULL || ndim < 0 || noffsets != 2) {
        goto done;
    }
    unsigned long long count = 1;
    int empty = 0;
    for (int i = 0; i < ndim; i++) {
        if (!st_grow(&count, &empty, dims[i])) {
            goto done;
        }
    }
    PyObject *shape = PyTuple_New(ndim);
    if (shape == NULL) {
        status = ST_ERROR;
        goto done;
    }
    for (int i = 0; i < ndim; i++) {
        PyObject *d = PyLong_FromUnsignedLongLong(dims[i]);
        if (d == NULL) {
            Py_DECREF(shape);
            status = ST_ERROR;
            goto done;
        }
        PyTuple_SET_ITEM(shape, i, d);
    }
    *begin = offsets[0];
    *end = offsets[1];
    *entry = st_sized(dtype, bits_of, shape, empty ? 0 : count, *begin, *end, data_start);
    status = *entry == NULL ? ST_ERROR : *entry == Py_None ? ST_UNEXPECTED : ST_OK;
    if (*entry == Py_None) {
        Py_CLEAR(*entry);
    }
done:
    Py_XDECREF(dtype);
    return status;
}

/* Sets key to value in dict unless the key is there already (a name listed twice): one lookup. */
static int st_insert(PyObject *dict, PyObject *key, PyObject *value)
{
    PyObject *held = PyDict_SetDefault(dict, key, value);
    if (held == NULL) {
        return ST_ERROR;
    }
    return held == value ? ST_OK : ST_UNEXPECTED;
}

/* __metadata__: an object of strings. */
static int st_text_metadata(StText *t, PyObject *meta)
{
    if (!st_take(t, '{')) {
        return ST_UNEXPECTED;
    }
    if (st_take(t, '}')) {
        return ST_OK;
    }
    do {
        PyObject *key = NULL, *value = NULL;
        int status = st_string(t, &key);
        if (status == ST_OK) {
            status = st_take(t, ':') ? st_string(t, &value) : ST_UNEXPECTED;
        }
        if (status == ST_OK) {
            status = st_insert(meta, key, value);
        }
        Py_XDECREF(key);
        Py_XDECREF(value);
        if (status != ST_OK) {
            return status;
        }
    } while (st_take(t, ','));
    return st_take(t, '}') ? ST_OK : ST_UNEXPECTED;
}

/* The whole header: an object of __metadata__ (at most once) and entries. */
static int st_text_header(StText *t, PyObject *bits_of, StDtypes *seen,
                          unsigned long long data_start, PyObject *meta, PyObject *entries,
                          long long *data_end)
{
    int has_meta = 0, in_order = 1;
    unsigned long long at = 0;
    if (!st_take(t, '{')) {
        return ST_UNEXPECTED;
    }
    if (!st_take(t, '}')) {
        do {
            const char *key;
            Py_ssize_t len;
            int status;
            if (st_raw_string(t, &key, &len) != ST_OK || !st_take(t, ':')) {
                return ST_UNEXPECTED;
            }
            if (st_is(key, len, "__metadata__")) {
                if (has_meta) {
                    return ST_UNEXPECTED;
                }
                has_meta = 1;
                status = st_text_metadata(t, meta);
            } else {
                PyObject *name = NULL, *entry = NULL;
                unsigned long long begin = 0, end = 0;
                status = st_decode(key, len, &name);
                if (status != ST_OK) {
                    return status;
                }
                status = st_text_entry(t, bits_of, seen, data_start, &entry, &begin, &end);
                if (status == ST_OK) {
                    status = st_insert(entries, name, entry);
                }
                Py_DECREF(name);
                Py_XDECREF(entry);
                in_order = in_order && begin == at;
                at = end;
            }
            if (status != ST_OK) {
                return status;
            }
        } while (st_take(t, ','));
        if (!st_take(t, '}')) {
            return ST_UNEXPECTED;
        }
    }
    st_space(t);
    if (t->p != t->end) {
        return ST_UNEXPECTED;
    }
    *data_end = in_order ? (long long)at : -1LL;
    return ST_OK;
}

const char hurray__core_safetensors_header_doc[] =
    "safetensors_header(text, data_start, bits, /) -> (metadata, entries, end) or None\n"
    "\n"
    "A safetensors header read from its JSON text (bytes), when it is in the\n"
    "plain form: strings with no escape, counts as bare digits, no name listed\n"
    "twice, __metadata__ (if any) an object of strings, and every entry as\n"
    "safetensors_entries reads one. metadata and entries are as there; None at\n"
    "anything else, for the Python checks to read.";

PyObject *hurray__core_safetensors_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyBytes_CheckExact(args[0]) || !PyDict_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError,
                        "safetensors_header(text, data_start, bits): bytes, an int and a dict");
        return NULL;
    }
    unsigned long long data_start = hurray__py_as_u64(args[1]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *meta = PyDict_New(), *entries = PyDict_New();
    if (meta == NULL || entries == NULL) {
        Py_XDECREF(meta);
        Py_XDECREF(entries);
        return NULL;
    }
    const unsigned char *text = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    StText t = {text, text + PyBytes_GET_SIZE(args[0])};
    long long end = -1;
    StDtypes seen = {{NULL}, 0};
    int status = st_text_header(&t, args[2], &seen, data_start, meta, entries, &end);
    for (int i = 0; i < seen.n; i++) {
        Py_DECREF(seen.str[i]);
    }
    if (status != ST_OK) {
        Py_DECREF(meta);
        Py_DECREF(entries);
        if (status == ST_ERROR) {
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(NNL)", meta, entries, end); /* once a file */
}
