/*
 * hurray._core's safetensors half (_core_safetensors.c): the reader's fast
 * path over a header (formats/safetensors_file.py), registered in _core.c's
 * method table.
 */
#ifndef HURRAY_CORE_SAFETENSORS_H
#define HURRAY_CORE_SAFETENSORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

extern const char hurray__core_safetensors_entries_doc[];
extern const char hurray__core_safetensors_header_doc[];

PyObject *hurray__core_safetensors_entries(PyObject *module, PyObject *const *args,
                                           Py_ssize_t nargs);
PyObject *hurray__core_safetensors_header(PyObject *module, PyObject *const *args,
                                          Py_ssize_t nargs);

/* Interns the names the entries are read by; 0, or -1 with an error set. */
int hurray__core_safetensors_init(void);

#endif
