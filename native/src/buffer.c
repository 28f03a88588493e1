/*
 * buffer.c -- HurrayBuffer: one span of bytes and who frees it.
 *
 * A buffer either borrows foreign memory (hurray_buffer_from_ptr: the
 * producer's release callback frees it) or owns memory this library
 * allocated (hurray_buffer_new: freed here). Either way destroy runs the
 * cleanup exactly once.
 */
#include "status.h"

#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* hurray_buffer_new accepts power-of-two alignments from 1 to this (one
 * page). Larger requests are refused rather than silently weakened; a
 * caller that needs huge-page alignment can allocate itself and use
 * hurray_buffer_from_ptr. */
#define HURRAY__BUFFER_MAX_ALIGNMENT 4096u

/* The first five fields are ABI 4's, at ABI 4's offsets, and stay there:
 * a pair sent with a version-4 context (ADR-059) is read and destroyed by
 * an ABI-4 library, which knows only them. ABI 5 appends flags; whatever a
 * later version adds goes after it. */
struct HurrayBuffer {
    void *data;
    uint64_t len;
    void (*release)(void *release_context); /* NULL: nothing foreign to free */
    void *release_context;
    void *owned; /* memory from hurray_buffer_new, or NULL */
    /* ---- ABI 5 ---- */
    uint32_t flags; /* HURRAY_BUFFER_READONLY, or 0 */
};

_Static_assert(offsetof(struct HurrayBuffer, owned) == 32,
               "the fields of ABI 4 keep their offsets (an ABI-4 library reads them)");

/* Puts the fields in a new handle. On failure nothing changes hands: the
 * caller still owns what the fields point to. */
static HurrayStatus new_handle(const char *fn, HurrayBuffer fields, HurrayBuffer **out)
{
    HurrayBuffer *buf = malloc(sizeof *buf);
    if (buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "%s: cannot allocate the buffer handle", fn);
    }
    *buf = fields;
    *out = buf;
    return HURRAY_OK;
}

/* Ownership of ptr and release passes to the buffer only when this returns
 * HURRAY_OK. On any failure release is not called and the caller still owns
 * both. ptr may be NULL only when len is 0. */
HurrayStatus hurray_buffer_from_ptr(void *ptr, uint64_t len, void (*release)(void *release_context),
                                    void *release_context, HurrayBuffer **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_from_ptr: out is NULL");
    }
    if (ptr == NULL && len != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_buffer_from_ptr: ptr is NULL but len is %llu (NULL is "
                            "allowed only for an empty buffer)",
                            (unsigned long long)len);
    }
    /* A span that wraps around the address space cannot be real memory; a
     * consumer computing data + len would overflow. */
    if (ptr != NULL && len > (uint64_t)(UINTPTR_MAX - (uintptr_t)ptr)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "hurray_buffer_from_ptr: ptr + len (%llu) wraps around the "
                            "address space",
                            (unsigned long long)len);
    }
    return new_handle("hurray_buffer_from_ptr",
                      (HurrayBuffer){.data = ptr,
                                     .len = len,
                                     .release = release,
                                     .release_context = release_context,
                                     .owned = NULL,
                                     .flags = 0},
                      out);
}

/* Owns len zeroed bytes aligned to alignment (a power of two, 1 to 4096).
 * len 0 is allowed; the data pointer is then still non-NULL and aligned,
 * so callers never need a special case for empty tensors. */
HurrayStatus hurray_buffer_new(uint64_t len, uint64_t alignment, HurrayBuffer **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_new: out is NULL");
    }
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_buffer_new: alignment %llu is not a power of two",
                            (unsigned long long)alignment);
    }
    if (alignment > HURRAY__BUFFER_MAX_ALIGNMENT) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_buffer_new: alignment %llu exceeds the maximum of %u",
                            (unsigned long long)alignment, HURRAY__BUFFER_MAX_ALIGNMENT);
    }
    /* aligned_alloc wants a fundamental alignment at least, and a size that
     * is a multiple of the alignment. */
    size_t align = (size_t)alignment;
    if (align < alignof(max_align_t)) {
        align = alignof(max_align_t);
    }
    uint64_t want = len == 0 ? 1 : len;
    if (want > (uint64_t)(SIZE_MAX - (align - 1))) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "hurray_buffer_new: len %llu rounded up to alignment %zu does "
                            "not fit in size_t",
                            (unsigned long long)len, align);
    }
    size_t size = ((size_t)want + (align - 1)) & ~(align - 1);

    /* calloc when the alignment allows it: large zeroed blocks then come
     * from fresh pages without touching every byte. */
    void *data;
    if (align == alignof(max_align_t)) {
        data = calloc(1, size);
    } else {
        data = aligned_alloc(align, size);
        if (data != NULL) {
            memset(data, 0, size);
        }
    }
    if (data == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_buffer_new: cannot allocate %zu bytes",
                            size);
    }
    HurrayStatus status = new_handle("hurray_buffer_new",
                                     (HurrayBuffer){.data = data,
                                                    .len = len,
                                                    .release = NULL,
                                                    .release_context = NULL,
                                                    .owned = data,
                                                    .flags = 0},
                                     out);
    if (status != HURRAY_OK) {
        free(data);
    }
    return status;
}

/* The data pointer may be written unless the buffer is marked read-only
 * (hurray_buffer_flags; ABI 5): constness of the handle does not extend to
 * the bytes, which belong to the producer. On failure the out-parameters are
 * untouched. */
HurrayStatus hurray_buffer_data(const HurrayBuffer *buf, void **out_data, uint64_t *out_len)
{
    if (buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_data: buf is NULL");
    }
    if (out_data == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_data: out_data is NULL");
    }
    if (out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_data: out_len is NULL");
    }
    *out_data = buf->data;
    *out_len = buf->len;
    return HURRAY_OK;
}

void hurray_buffer_destroy(HurrayBuffer **buf)
{
    if (buf == NULL || *buf == NULL) {
        return;
    }
    HurrayBuffer *b = *buf;
    /* Null the caller's pointer first, so a release callback that looks at
     * it cannot see a handle that is being torn down. */
    *buf = NULL;
    if (b->release != NULL) {
        b->release(b->release_context);
    }
    free(b->owned);
    free(b);
}

/* One-way, so that a consumer that read the mark once can rely on it for
 * as long as it holds the buffer. */
HurrayStatus hurray_buffer_mark_readonly(HurrayBuffer *buf)
{
    if (buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_mark_readonly: buf is NULL");
    }
    buf->flags |= HURRAY_BUFFER_READONLY;
    return HURRAY_OK;
}

HurrayStatus hurray_buffer_flags(const HurrayBuffer *buf, uint32_t *out)
{
    if (buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_flags: buf is NULL");
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_flags: out is NULL");
    }
    *out = buf->flags;
    return HURRAY_OK;
}
