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

#include <stdint.h>

#include "hurray.h"

#define HURRAY_PROTOCOL_API "hurray._protocol._C_API"

typedef struct HurrayProtocolApi {
    /* The exchange of a Tensor this package made, which needs no capsule
     * (ADR-048): a new hurray._protocol.Holder taking the buffer_count + 1
     * references to owner that export()'s buffer handles and context would
     * hold (D-NB2, decision 2), and dropping each once, through
     * hurray__py_owner_release, when it dies. No C handle is made: nothing
     * outside this process's Python side could reach one. Returns the
     * Holder (new reference), or NULL with MemoryError set and no reference
     * taken. */
    PyObject *(*hold)(PyObject *owner, uint64_t buffer_count);

    /* What hurray._protocol.consume does, without its tuple: checks capsule
     * in full (name, ABI version first, descriptor decoded, descriptor
     * against the buffers; D-NB2 decision 3), then renames it and moves its
     * list and context into a new Holder, which it returns. Also returns the
     * decoded, checked descriptor (*out_desc, the caller's to destroy or
     * keep), its bytes (*out_bytes and *out_len, borrowed from the context,
     * which the Holder owns: valid while the Holder lives), the (address,
     * nbytes) spans of the buffers (*out_spans, new reference, valid while
     * the Holder lives), the context's ABI version (4 or 5), and whether a
     * buffer is marked read-only (*out_readonly; ADR-059). On a refusal
     * returns NULL with a HurrayError set and leaves the capsule as it was;
     * on NULL nothing is handed out. */
    PyObject *(*take)(PyObject *capsule, HurrayDescriptor **out_desc, const uint8_t **out_bytes,
                      uint64_t *out_len, PyObject **out_spans, uint32_t *out_version,
                      int *out_readonly);

    /* What hurray._protocol.export does: a "hurray_tensor" capsule over
     * spans (a tuple of (address, nbytes)) with descriptor (bytes, exactly)
     * in a context of abi_version (4 or 5), every handle holding a
     * reference to owner (D-NB2), every buffer marked read-only when
     * readonly is set (which a version-4 context refuses; ADR-059). A new
     * reference, or NULL with an error set and no reference taken. */
    PyObject *(*export)(PyObject *descriptor, PyObject *spans, PyObject *owner,
                        uint32_t abi_version, int readonly);

    /* The pair export() puts in a capsule, handed to the caller instead,
     * for a C call that reads the tensor while the caller holds it (the
     * hurray-io writers, io/_pairs.py): *out_ctx and *out_list as export()
     * makes them, except that a NULL owner takes no reference (the caller
     * keeps the memory alive until it destroys both). Returns 0, or -1
     * with an error set and nothing handed out. */
    int (*pair)(PyObject *descriptor, PyObject *spans, PyObject *owner, uint32_t abi_version,
                int readonly, HurrayTensorContext **out_ctx, HurrayBufferList **out_list);
} HurrayProtocolApi;

#endif /* HURRAY_PROTOCOL_API_H */
