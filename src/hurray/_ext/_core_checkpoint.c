/*
 * The checkpoint reader's one pass over a checkpoint's names, in C
 * (formats/checkpoint/compressed_tensors.py): a convention that stores a
 * weight as companions `<module>.<suffix>` groups them by module here, so
 * that opening a checkpoint of thousands of tensors runs no Python per name.
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
