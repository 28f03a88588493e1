/*
 * The C builder's calls for a graph of hurray.nodes Stored and Step nodes
 * (core/nodes.py's add_nodes), made from the nodes' fields with no cffi
 * object per field. The Python path stays the one that judges: anything
 * this code does not expect -- another kind of node, a field of another
 * type or out of its range, a status other than OK -- answers False, and
 * the caller builds the descriptor again, from a new one, in Python, which
 * raises the error that names the field. So this code refuses nothing.
 */
#include "_core_nodes.h"

#include "hurray.h"

#include <limits.h>
#include <stdint.h>

/* The tables add_nodes is given, in this order (core/nodes.py's C_TABLES). */
enum {
    T_STORED,
    T_STEP,
    T_WORDS,
    T_DTYPES,
    T_PACKINGS,
    T_FORMS,
    T_BYTE_ORDERS,
    T_LAYOUTS,
    T_VALUE_RULES,
    T_COUNT
};

/* The nodes' field names, interned once. */
enum {
    F_DTYPE,
    F_SHAPE,
    F_BUFFER,
    F_OFFSET,
    F_STRIDES,
    F_BYTE_ORDER,
    F_PACKING,
    F_LAYOUT,
    F_CODE_OFFSET,
    F_CODEBOOK,
    F_VALUE_RULE,
    F_FORM,
    F_ARITHMETIC,
    F_X,
    F_SCALE,
    F_BLOCKS,
    F_RAGGED,
    F_INDEXED_AXIS,
    F_GROUP_INDEX,
    F_CONTAINER_BITS,
    F_PACKED_AXIS,
    F_CHUNK_CONTAINERS,
    F_PLANAR,
    F_CHUNK_STRIDE,
    F_ORDER,
    F_COUNT
};
static const char *const field_names[F_COUNT] = {"dtype",       "shape",
                                                 "buffer",      "offset",
                                                 "strides",     "byte_order",
                                                 "packing",     "layout",
                                                 "code_offset", "codebook",
                                                 "value_rule",  "form",
                                                 "arithmetic",  "x",
                                                 "scale",       "blocks",
                                                 "ragged",      "indexed_axis",
                                                 "group_index", "container_bits",
                                                 "packed_axis", "chunk_containers",
                                                 "planar",      "chunk_stride",
                                                 "order"};
static PyObject *fields[F_COUNT];

typedef struct Graph {
    HurrayDescriptor *desc;
    PyObject *nodes; /* the list, in canonical order */
    PyObject *const *tables;
} Graph;

const char hurray__core_add_nodes_doc[] =
    "add_nodes(address, nodes, tables, /) -> bool\n"
    "\n"
    "Adds nodes (hurray.nodes Stored and Step nodes in canonical order) to the\n"
    "C descriptor at address through the C builder: True when every node\n"
    "went in, False at anything else (another kind, a field it does not\n"
    "expect, a status other than OK), the descriptor then half built.";

static int interned(void)
{
    for (int i = 0; i < F_COUNT; i++) {
        if (fields[i] == NULL && (fields[i] = PyUnicode_InternFromString(field_names[i])) == NULL) {
            return 0;
        }
    }
    return 1;
}

/* A field of `node` (new reference), or NULL with nothing raised. */
static PyObject *field(PyObject *node, int f)
{
    PyObject *v = PyObject_GetAttr(node, fields[f]);
    if (v == NULL) {
        PyErr_Clear();
    }
    return v;
}

/* An exact int (not a bool) in 0 .. limit into *out; 0 when it is not one. */
static int unsigned_of(PyObject *v, unsigned long long limit, unsigned long long *out)
{
    if (v == NULL || !PyLong_CheckExact(v)) {
        return 0;
    }
    unsigned long long n = PyLong_AsUnsignedLongLong(v);
    if (n == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    *out = n;
    return n <= limit;
}

/* The unsigned field f of node, at most limit; 0 when it is not one. */
static int unsigned_field(PyObject *node, int f, unsigned long long limit, unsigned long long *out)
{
    PyObject *v = field(node, f);
    int ok = unsigned_of(v, limit, out);
    Py_XDECREF(v);
    return ok;
}

/* The code a table (a dict of names) gives field f's str; 0 when it gives none. */
static int code_field(PyObject *node, int f, PyObject *table, uint32_t *out)
{
    PyObject *v = field(node, f);
    PyObject *code = v != NULL && PyUnicode_CheckExact(v) ? PyDict_GetItemWithError(table, v)
                                                          : NULL;
    unsigned long long n = 0;
    int ok = unsigned_of(code, UINT32_MAX, &n);
    PyErr_Clear();
    Py_XDECREF(v);
    *out = (uint32_t)n;
    return ok;
}

/* Field f as a tuple of at most HURRAY_MAX_RANK ints: unsigned when !is_signed; 0 otherwise. */
static int ints_field(PyObject *node, int f, int is_signed, uint64_t *u, int64_t *s, uint32_t *rank)
{
    PyObject *v = field(node, f);
    int ok = v != NULL && PyTuple_CheckExact(v) && PyTuple_GET_SIZE(v) <= HURRAY_MAX_RANK;
    for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(v); i++) {
        PyObject *item = PyTuple_GET_ITEM(v, i);
        if (!PyLong_CheckExact(item)) {
            ok = 0;
        } else if (is_signed) {
            int overflow = 0;
            s[i] = PyLong_AsLongLongAndOverflow(item, &overflow);
            ok = !overflow && !(s[i] == -1 && PyErr_Occurred());
        } else {
            u[i] = PyLong_AsUnsignedLongLong(item);
            ok = !(u[i] == (unsigned long long)-1 && PyErr_Occurred());
        }
    }
    PyErr_Clear();
    if (ok) {
        *rank = (uint32_t)PyTuple_GET_SIZE(v);
    }
    Py_XDECREF(v);
    return ok;
}

/* The index of node field f among the graph's nodes (by identity), 0 for None; 0 when it is none of
 * them. */
static int ref_field(const Graph *g, PyObject *node, int f, uint32_t *out)
{
    PyObject *v = field(node, f);
    int ok = v != NULL;
    *out = 0;
    if (ok && v != Py_None) {
        ok = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(g->nodes); i++) {
            if (PyList_GET_ITEM(g->nodes, i) == v) {
                *out = (uint32_t)i;
                ok = 1;
                break;
            }
        }
    }
    Py_XDECREF(v);
    return ok;
}

/* Is field f of node the str `name`? */
static int is_name(PyObject *node, int f, const char *name)
{
    PyObject *v = field(node, f);
    int same = v != NULL && PyUnicode_CheckExact(v) &&
               PyUnicode_CompareWithASCIIString(v, name) == 0;
    Py_XDECREF(v);
    return same;
}

/* A Words packing: hurray_descriptor_stored_set_words. */
static int add_words(const Graph *g, uint32_t i, PyObject *words)
{
    unsigned long long bits, axis, chunk, stride;
    uint32_t packing;
    uint8_t order[256];
    PyObject *planar = field(words, F_PLANAR), *slots = field(words, F_ORDER);
    int ok = unsigned_field(words, F_CONTAINER_BITS, UINT32_MAX, &bits) &&
             unsigned_field(words, F_PACKED_AXIS, UINT32_MAX, &axis) &&
             code_field(words, F_PACKING, g->tables[T_PACKINGS], &packing) &&
             unsigned_field(words, F_CHUNK_CONTAINERS, UINT64_MAX, &chunk) &&
             unsigned_field(words, F_CHUNK_STRIDE, UINT64_MAX, &stride) && planar != NULL &&
             PyBool_Check(planar) && slots != NULL && PyTuple_CheckExact(slots) &&
             PyTuple_GET_SIZE(slots) <= 256;
    Py_ssize_t count = ok ? PyTuple_GET_SIZE(slots) : 0;
    for (Py_ssize_t k = 0; ok && k < count; k++) {
        unsigned long long slot;
        ok = unsigned_of(PyTuple_GET_ITEM(slots, k), 255, &slot);
        order[k] = (uint8_t)slot;
    }
    if (ok) {
        ok = hurray_descriptor_stored_set_words(g->desc, i, (uint32_t)bits, (uint32_t)axis, packing,
                                                chunk, planar == Py_True ? HURRAY_SLOTS_PLANAR : 0,
                                                stride, (uint32_t)count,
                                                count ? order : NULL) == HURRAY_OK;
    }
    Py_XDECREF(planar);
    Py_XDECREF(slots);
    return ok;
}

/* The packing of stored node i: Words, a packing name, or None (the dtype's default). */
static int add_packing(const Graph *g, uint32_t i, PyObject *node)
{
    PyObject *packing = field(node, F_PACKING);
    int ok = packing != NULL;
    if (ok && Py_TYPE(packing) == (PyTypeObject *)g->tables[T_WORDS]) {
        ok = add_words(g, i, packing);
    } else if (ok && packing != Py_None) {
        uint32_t code;
        ok = code_field(node, F_PACKING, g->tables[T_PACKINGS], &code) &&
             hurray_descriptor_stored_set_elements(g->desc, i, code) == HURRAY_OK;
    }
    Py_XDECREF(packing);
    return ok;
}

/* A Stored node, as nodes._add adds one. */
static int add_stored(const Graph *g, PyObject *node)
{
    uint64_t shape[HURRAY_MAX_RANK];
    int64_t strides[HURRAY_MAX_RANK];
    uint32_t dtype, rank, i, order, layout, rule, codebook, srank = 0;
    unsigned long long buffer, offset;
    if (!code_field(node, F_DTYPE, g->tables[T_DTYPES], &dtype) ||
        !ints_field(node, F_SHAPE, 0, shape, NULL, &rank) ||
        !unsigned_field(node, F_BUFFER, UINT64_MAX, &buffer) ||
        !unsigned_field(node, F_OFFSET, UINT64_MAX, &offset) ||
        hurray_descriptor_add_stored(g->desc, dtype, rank, shape, buffer, offset, &i) !=
            HURRAY_OK) {
        return 0;
    }
    PyObject *given = field(node, F_STRIDES);
    int ok = given != NULL;
    if (ok && given != Py_None) {
        ok = ints_field(node, F_STRIDES, 1, NULL, strides, &srank) &&
             hurray_descriptor_stored_set_strides(g->desc, i, srank, strides) == HURRAY_OK;
    }
    Py_XDECREF(given);
    if (!ok || !code_field(node, F_BYTE_ORDER, g->tables[T_BYTE_ORDERS], &order) ||
        !code_field(node, F_LAYOUT, g->tables[T_LAYOUTS], &layout) ||
        !code_field(node, F_VALUE_RULE, g->tables[T_VALUE_RULES], &rule) ||
        !ref_field(g, node, F_CODEBOOK, &codebook)) {
        return 0;
    }
    if (!is_name(node, F_BYTE_ORDER, "little") &&
        hurray_descriptor_stored_set_byte_order(g->desc, i, order) != HURRAY_OK) {
        return 0;
    }
    if (!is_name(node, F_LAYOUT, "row_major") &&
        hurray_descriptor_stored_set_layout(g->desc, i, layout) != HURRAY_OK) {
        return 0;
    }
    if (!add_packing(g, i, node)) {
        return 0;
    }
    PyObject *v = field(node, F_CODE_OFFSET);
    int overflow = 0;
    long long code_offset = v != NULL && PyLong_CheckExact(v)
                                ? PyLong_AsLongLongAndOverflow(v, &overflow)
                                : 0;
    ok = v != NULL && PyLong_CheckExact(v) && !overflow && code_offset >= INT32_MIN &&
         code_offset <= INT32_MAX;
    Py_XDECREF(v);
    PyErr_Clear();
    if (!ok) {
        return 0;
    }
    PyObject *book = field(node, F_CODEBOOK);
    int plain = code_offset == 0 && book == Py_None && is_name(node, F_VALUE_RULE, "standard");
    Py_XDECREF(book);
    return plain || hurray_descriptor_stored_set_codes(g->desc, i, (int32_t)code_offset, codebook,
                                                       rule) == HURRAY_OK;
}

/* A Step node, as nodes._add adds one. */
static int add_step(const Graph *g, PyObject *node)
{
    uint64_t shape[HURRAY_MAX_RANK], blocks[HURRAY_MAX_RANK];
    uint32_t form, arithmetic, rank, brank, x, scale, offset, index, i;
    unsigned long long axis;
    if (!code_field(node, F_FORM, g->tables[T_FORMS], &form) ||
        !code_field(node, F_ARITHMETIC, g->tables[T_DTYPES], &arithmetic) ||
        !ints_field(node, F_SHAPE, 0, shape, NULL, &rank) || !ref_field(g, node, F_X, &x) ||
        !ref_field(g, node, F_SCALE, &scale) || !ref_field(g, node, F_OFFSET, &offset) ||
        !ints_field(node, F_BLOCKS, 0, blocks, NULL, &brank) ||
        !unsigned_field(node, F_INDEXED_AXIS, UINT32_MAX, &axis) ||
        !ref_field(g, node, F_GROUP_INDEX, &index)) {
        return 0;
    }
    PyObject *ragged = field(node, F_RAGGED);
    int ok = ragged != NULL && PyBool_Check(ragged);
    uint32_t flags = ragged == Py_True ? HURRAY_STEP_RAGGED : 0;
    Py_XDECREF(ragged);
    return ok &&
           hurray_descriptor_add_step(g->desc, form, arithmetic, rank, shape, x, scale, offset,
                                      &i) == HURRAY_OK &&
           hurray_descriptor_step_set_groups(g->desc, i, brank, blocks, flags, (uint32_t)axis,
                                             index) == HURRAY_OK;
}

PyObject *hurray__core_add_nodes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyLong_CheckExact(args[0]) || !PyList_CheckExact(args[1]) ||
        !PyTuple_CheckExact(args[2]) || PyTuple_GET_SIZE(args[2]) != T_COUNT) {
        PyErr_SetString(PyExc_TypeError,
                        "add_nodes(address, nodes, tables): an int, a list and the tables");
        return NULL;
    }
    if (!interned()) {
        return NULL;
    }
    Graph g = {PyLong_AsVoidPtr(args[0]), args[1], &PyTuple_GET_ITEM(args[2], 0)};
    if (g.desc == NULL) {
        PyErr_Clear();
        Py_RETURN_FALSE;
    }
    for (int t = T_DTYPES; t < T_COUNT; t++) {
        if (!PyDict_CheckExact(g.tables[t])) {
            PyErr_SetString(PyExc_TypeError,
                            "add_nodes: the tables after the node types must be dicts");
            return NULL;
        }
    }
    Py_ssize_t n = PyList_GET_SIZE(g.nodes);
    for (Py_ssize_t k = 0; k < n; k++) { /* every node a kind this code adds, before any is added */
        PyTypeObject *type = Py_TYPE(PyList_GET_ITEM(g.nodes, k));
        if (type != (PyTypeObject *)g.tables[T_STORED] &&
            type != (PyTypeObject *)g.tables[T_STEP]) {
            Py_RETURN_FALSE;
        }
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *node = PyList_GET_ITEM(g.nodes, k);
        int ok = Py_TYPE(node) == (PyTypeObject *)g.tables[T_STORED] ? add_stored(&g, node)
                                                                     : add_step(&g, node);
        if (!ok) {
            Py_RETURN_FALSE;
        }
    }
    Py_RETURN_TRUE;
}
