/*
 * hurray._core's dequantization half (_core_dequant.c): the C dequantizer
 * called over a tensor's spans with no cffi objects made per call,
 * registered in _core.c's method table.
 */
#ifndef HURRAY_CORE_DEQUANT_H
#define HURRAY_CORE_DEQUANT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern const char hurray__core_dequantize_rows_doc[];

PyObject *hurray__core_dequantize_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
