/*
 * hurray._core's checkpoint half (_core_checkpoint.c), registered in
 * _core.c's method table.
 */
#ifndef HURRAY_CORE_CHECKPOINT_H
#define HURRAY_CORE_CHECKPOINT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern const char hurray__core_companions_doc[];

PyObject *hurray__core_companions(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

extern const char hurray__core_anchored_claims_doc[];

PyObject *hurray__core_anchored_claims(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
