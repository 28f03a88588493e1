/* hurray._protocol: the native protocol's C side (capsules, owner release).
 * Filled in by the protocol work; this file starts as the bare module. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "hurray.h"

static struct PyModuleDef protocol_module = {
    PyModuleDef_HEAD_INIT, "hurray._protocol", "The native protocol's C side.", -1, NULL,
};

PyMODINIT_FUNC PyInit__protocol(void)
{
    return PyModule_Create(&protocol_module);
}
