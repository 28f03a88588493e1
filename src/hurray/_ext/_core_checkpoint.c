/*
 * The checkpoint reader's one pass over a checkpoint's names, in C
 * (formats/checkpoint/compressed_tensors.py): a convention that stores a
 * weight as companions `<module>.<suffix>` groups them by module here, and
 * makes its claims from the groups here, so that opening a checkpoint of
 * thousands of tensors runs no Python per name or per weight.
 */
#include "_core_checkpoint.h"

const char hurray__core_companions_doc[] =
    "companions(names, suffixes, /) -> {module: [name or None, ...]}\n"
    "\n"
    "Groups the names whose last dotted part is a key of suffixes (a dict of\n"
    "suffix -> index) by what comes before it, as str.rpartition('.') splits\n"
    "them: each module's list holds, at a suffix's index, the name that ends\n"
    "in it. Modules come in the order their first name does.";

/* The module's list of len(suffixes) slots, made on first sight; borrowed, or NULL with an error
 * set. */
static PyObject *slots_of(PyObject *found, PyObject *module, Py_ssize_t width)
{
    PyObject *slots = PyDict_GetItemWithError(found, module);
    if (slots != NULL || PyErr_Occurred()) {
        return slots;
    }
    slots = PyList_New(width);
    if (slots == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < width; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(slots, i, Py_None);
    }
    int failed = PyDict_SetItem(found, module, slots) < 0;
    Py_DECREF(slots); /* the dict holds it */
    return failed ? NULL : slots;
}

/* Files `name` under its module when its suffix is one of `suffixes`; 0, or -1 with an error set.
 */
static int file_name(PyObject *found, PyObject *name, PyObject *suffixes, Py_ssize_t width)
{
    if (!PyUnicode_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "companions: the names must be strings");
        return -1;
    }
    Py_ssize_t len = PyUnicode_GET_LENGTH(name);
    Py_ssize_t dot = PyUnicode_FindChar(name, '.', 0, len, -1);
    if (dot == -2) {
        return -1;
    }
    PyObject *suffix = PyUnicode_Substring(name, dot + 1, len);
    if (suffix == NULL) {
        return -1;
    }
    PyObject *at = PyDict_GetItemWithError(suffixes, suffix);
    Py_DECREF(suffix);
    if (at == NULL) {
        return PyErr_Occurred() ? -1 : 0;
    }
    Py_ssize_t index = PyLong_AsSsize_t(at);
    if (index == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (index < 0 || index >= width) {
        PyErr_SetString(PyExc_ValueError, "companions: a suffix's index is outside the suffixes");
        return -1;
    }
    PyObject *module = PyUnicode_Substring(name, 0, dot < 0 ? 0 : dot);
    if (module == NULL) {
        return -1;
    }
    PyObject *slots = slots_of(found, module, width);
    Py_DECREF(module);
    if (slots == NULL) {
        return -1;
    }
    Py_INCREF(name);
    return PyList_SetItem(slots, index, name);
}

PyObject *hurray__core_companions(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyDict_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError,
                        "companions(names, suffixes): an iterable of str and a dict");
        return NULL;
    }
    PyObject *names = PyObject_GetIter(args[0]);
    if (names == NULL) {
        return NULL;
    }
    Py_ssize_t width = PyDict_GET_SIZE(args[1]);
    PyObject *found = PyDict_New(), *name;
    while (found != NULL && (name = PyIter_Next(names)) != NULL) {
        int failed = file_name(found, name, args[1], width) < 0;
        Py_DECREF(name);
        if (failed) {
            Py_CLEAR(found);
        }
    }
    Py_DECREF(names);
    if (found != NULL && PyErr_Occurred()) {
        Py_CLEAR(found);
    }
    return found;
}

/* ---- compressed-tensors' claims ------------------------------------------ */

const char hurray__core_anchored_claims_doc[] =
    "anchored_claims(found, claim_type, convention, bind, build, stored, /) -> {name: claim}\n"
    "\n"
    "The claims of the modules companions() found, one per module that has\n"
    "its anchor (slot 0), or its slot 1 and its own `<module>.weight` among\n"
    "stored: claim_type((name, convention, parts, bind(build, name, module)))\n"
    "with name `<module>.weight` and parts the filled slots in order (led by\n"
    "name when there is no anchor). claim_type is a tuple subclass (a\n"
    "NamedTuple); bind is functools.partial.";

/* The filled slots of `slots` as a tuple, led by `lead` when it is not NULL;
 * NULL with an error set. */
static PyObject *filled(PyObject *slots, PyObject *lead)
{
    Py_ssize_t width = PyList_GET_SIZE(slots), n = lead != NULL;
    for (Py_ssize_t i = 0; i < width; i++) {
        n += PyList_GET_ITEM(slots, i) != Py_None;
    }
    PyObject *parts = PyTuple_New(n);
    if (parts == NULL) {
        return NULL;
    }
    Py_ssize_t at = 0;
    if (lead != NULL) {
        Py_INCREF(lead);
        PyTuple_SET_ITEM(parts, at++, lead);
    }
    for (Py_ssize_t i = 0; i < width; i++) {
        PyObject *name = PyList_GET_ITEM(slots, i);
        if (name != Py_None) {
            Py_INCREF(name);
            PyTuple_SET_ITEM(parts, at++, name);
        }
    }
    return parts;
}

/* The claim of one module into claims, or nothing when it has neither anchor nor a stored weight
 * with slot 1; 0, or -1 with an error set. */
static int claim_module(PyObject *claims, PyObject *module, PyObject *slots, PyObject *const *args)
{
    PyObject *claim_type = args[1], *convention = args[2], *bind = args[3], *build = args[4];
    if (!PyList_CheckExact(slots) || PyList_GET_SIZE(slots) < 2) {
        PyErr_SetString(PyExc_TypeError,
                        "anchored_claims: each module's slots must be a list of two or more");
        return -1;
    }
    static PyObject *dot_weight;
    if (dot_weight == NULL && (dot_weight = PyUnicode_InternFromString(".weight")) == NULL) {
        return -1;
    }
    PyObject *name = PyUnicode_Concat(module, dot_weight);
    if (name == NULL) {
        return -1;
    }
    int anchored = PyList_GET_ITEM(slots, 0) != Py_None, status = 0;
    if (!anchored) {
        status = PyList_GET_ITEM(slots, 1) == Py_None ? 0 : PySequence_Contains(args[5], name);
        if (status <= 0) {
            Py_DECREF(name);
            return status;
        }
    }
    PyObject *parts = filled(slots, anchored ? NULL : name);
    PyObject *call[] = {build, name, module};
    PyObject *make = parts ? PyObject_Vectorcall(bind, call, 3, NULL) : NULL;
    /* The NamedTuple made as tuple.__new__ makes a subclass's (its own __new__ is Python) */
    PyTypeObject *type = (PyTypeObject *)claim_type;
    PyObject *claim = make ? type->tp_alloc(type, 4) : NULL;
    if (claim == NULL) {
        Py_XDECREF(make);
        Py_XDECREF(parts);
        Py_DECREF(name);
        return -1;
    }
    Py_INCREF(name);
    Py_INCREF(convention);
    PyTuple_SET_ITEM(claim, 0, name);
    PyTuple_SET_ITEM(claim, 1, convention);
    PyTuple_SET_ITEM(claim, 2, parts); /* the claim takes over parts and make */
    PyTuple_SET_ITEM(claim, 3, make);
    status = PyDict_SetItem(claims, name, claim);
    Py_DECREF(claim);
    Py_DECREF(name);
    return status;
}

PyObject *hurray__core_anchored_claims(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 6 || !PyDict_Check(args[0]) || !PyType_Check(args[1]) ||
        !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "anchored_claims(found, claim_type, convention, bind, build, "
                        "stored): a dict, a tuple subclass and four objects");
        return NULL;
    }
    PyObject *claims = PyDict_New(), *name, *slots;
    Py_ssize_t pos = 0;
    while (claims != NULL && PyDict_Next(args[0], &pos, &name, &slots)) {
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "anchored_claims: the modules must be strings");
            Py_CLEAR(claims);
        } else {
            Py_INCREF(name); /* held: the binding and `stored` run Python */
            Py_INCREF(slots);
            if (claim_module(claims, name, slots, args) < 0) {
                Py_CLEAR(claims);
            }
            Py_DECREF(name);
            Py_DECREF(slots);
        }
    }
    return claims;
}
