/*
 * hurray._core's graph half (_core_nodes.c): the stored and step nodes of
 * a version-2 descriptor handed to the C builder in one call, registered
 * in _core.c's method table.
 */
#ifndef HURRAY_CORE_NODES_H
#define HURRAY_CORE_NODES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern const char hurray__core_add_nodes_doc[];

PyObject *hurray__core_add_nodes(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
