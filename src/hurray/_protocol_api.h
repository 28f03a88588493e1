/*
 * _protocol_api.h -- what hurray._protocol offers hurray._core in C, through
 * a capsule (the CPython way for one extension to call another).
 *
 * hurray._core imports it once (PyCapsule_Import of HURRAY_PROTOCOL_API),
 * in setup_protocol, after hurray._protocol has loaded.
 */
#ifndef HURRAY_PROTOCOL_API_H
#define HURRAY_PROTOCOL_API_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "hurray.h"

#define HURRAY_PROTOCOL_API "hurray._protocol._C_API"

typedef struct HurrayProtocolApi {
    /* The exchange of a Tensor this package made, without a capsule (ADR-048):
     * the buffer list over spans and the context over descriptor_bytes that
     * export() would make, the owner references they take (D-NB2), proved
     * with hurray_descriptor_check_buffers against desc, and moved into a
     * new hurray._protocol.Holder, as consume() does after its checks.
     * desc (borrowed) is the producer's checked descriptor and
     * descriptor_bytes its encoding. Returns the Holder (new reference), or
     * NULL with a HurrayError (or MemoryError) set and nothing kept. */
    PyObject *(*hold)(const HurrayDescriptor *desc, PyObject *descriptor_bytes, PyObject *spans,
                      PyObject *owner);
} HurrayProtocolApi;

#endif /* HURRAY_PROTOCOL_API_H */
