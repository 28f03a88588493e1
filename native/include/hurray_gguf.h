/*
 * hurray_gguf.h -- the index of a GGUF file (llama.cpp's model format), read
 * from bytes in memory, typically a read-only memory map of the file.
 *
 * Beside hurray.h, in the same library (libhurray); the flags from
 * `python -m hurray --cflags --libs` cover it. ADR-041 records the design.
 *
 * hurray_gguf_index_parse walks the header once and trusts nothing: every
 * length and count is checked against the bytes that remain before it is
 * used, so a header that claims gigabytes fails at once; the alignment must
 * be a nonzero power of two; every tensor must lie inside the data, start at
 * a multiple of the alignment and overlap no other; keys and tensor names
 * must be valid UTF-8 and unique. A failure is HURRAY_ERROR_CORRUPT with a
 * message that names the problem, or HURRAY_ERROR_UNSUPPORTED for a version
 * other than 2 and 3 or a big-endian file.
 *
 * The index borrows `data`: the bytes must stay valid and unchanged until
 * hurray_gguf_index_destroy. Names and key-values are returned as spans
 * (offset, length) into `data`. Conventions are hurray.h's: status returns
 * with the thread's message set on failure, out-parameters last, destroy
 * takes X ** and nulls it.
 */
#ifndef HURRAY_GGUF_H
#define HURRAY_GGUF_H

#include "hurray.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HURRAY_CDEF_BEGIN */

typedef struct HurrayGgufIndex HurrayGgufIndex;

/* One tensor of the index. */
typedef struct HurrayGgufTensor {
    uint64_t name_offset; /* the name's bytes in data (UTF-8, not NUL-terminated) */
    uint64_t name_len;
    uint32_t rank;        /* 0 to 4 */
    uint32_t ggml_type;   /* GGUF's type number, known to ggml or not */
    uint64_t shape[4];    /* numpy order, outermost first (GGUF stores innermost first) */
    uint64_t data_offset; /* the tensor's first byte in data: a multiple of the alignment */
    uint64_t nbytes;      /* its size, when size_known; then data_offset + nbytes <= size */
    uint32_t size_known;  /* 0 for a type number ggml's table lacks: only the offset was checked */
} HurrayGgufTensor;

/* Every function below carries the two lines hurray.h's do, which
 * docs/impl/c-gguf.md repeats (tests/test_docs_c_headers.py holds the two
 * against each other):
 *   Statuses:  every non-OK status it can return ("none" when it returns
 *              no status);
 *   Ownership: what the caller keeps, lends or hands over. */

/* Walk and check the header of the GGUF file held in data[0 .. size).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_CORRUPT, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out, which borrows data until hurray_gguf_index_destroy. */
HurrayStatus hurray_gguf_index_parse(const uint8_t *data, uint64_t size, HurrayGgufIndex **out);

/* The file's version, alignment, where its data starts, and how many
 * tensors and key-values it has. Any out-pointer may be NULL.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_gguf_index_info(const HurrayGgufIndex *index, uint32_t *out_version,
                                    uint64_t *out_alignment, uint64_t *out_data_start,
                                    uint64_t *out_tensor_count, uint64_t *out_kv_count);

/* The span of key-value i: its key, value type and value, as GGUF stores them.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: nothing changes hands; the span lies in the caller's data. */
HurrayStatus hurray_gguf_index_kv(const HurrayGgufIndex *index, uint64_t i, uint64_t *out_offset,
                                  uint64_t *out_len);

/* Tensor i, in the file's order.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: *out is the caller's copy; its name span lies in the caller's data. */
HurrayStatus hurray_gguf_index_tensor(const HurrayGgufIndex *index, uint64_t i,
                                      HurrayGgufTensor *out);

/* The index of the tensor called name[0 .. name_len); HURRAY_ERROR_NOT_FOUND if none is.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_FOUND.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_gguf_index_find(const HurrayGgufIndex *index, const char *name,
                                    uint64_t name_len, uint64_t *out_index);

/* Statuses: none.
 * Ownership: frees the index and nulls *index; data stays the caller's. */
void hurray_gguf_index_destroy(HurrayGgufIndex **index);

/* ggml's name of a GGUF type number ("Q4_K", "F32", ...), or NULL when ggml
 * has none.
 * Statuses: none.
 * Ownership: a static string; never free it. */
const char *hurray_gguf_type_name(uint32_t ggml_type);

/* HURRAY_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* HURRAY_GGUF_H */
