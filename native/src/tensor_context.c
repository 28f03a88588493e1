/*
 * tensor_context.c -- HurrayTensorContext: what a capsule carries beside its
 * buffers (ADR-034): the producer's ABI version, a private copy of the
 * descriptor bytes, and an owner kept alive until the context is destroyed.
 *
 * FROZEN HEADER. The first 8 bytes of this struct -- uint32_t magic
 * (HURRAY_TENSOR_CONTEXT_MAGIC) then uint32_t abi_version -- are part of
 * the ABI in every version, forever (ADR-034 section 4): a consumer linked
 * to any build of the library must be able to read the version of a context
 * made by any other build. No later version may move, resize, reorder or
 * reinterpret them. Everything after them is private to the ABI version
 * named in the header and is reached only through accessors.
 */
#include "status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The first ABI version that has contexts at all. */
#define HURRAY__TENSOR_CONTEXT_FIRST_ABI ((uint32_t)HURRAY_C_ABI_MIN_VERSION)

/* Written over the magic by destroy. Best effort only: reading a context
 * after destroy is undefined behaviour (its memory is freed), but while the
 * memory still holds this value, such a misuse is refused as NOT_A_CONTEXT
 * rather than served. */
#define HURRAY__TENSOR_CONTEXT_DEAD 0x44454144u

/* Descriptor bytes are small (at most HURRAY_MAX_DESCRIPTOR_LEN); a length
 * far beyond that is a caller bug, refused before it becomes a huge copy.
 * Not the exact limit: a context carries bytes of encoding versions this
 * build may not know, which the consumer's decode judges. */
#define HURRAY__TENSOR_CONTEXT_MAX_DESCRIPTOR (1024u * 1024u)

struct HurrayTensorContext {
    uint32_t magic;       /* frozen: offset 0 */
    uint32_t abi_version; /* frozen: offset 4 */
    /* ---- private to ABI versions 4 and 5 (5 added no field here: its
     * read-only marks live on the buffers, ADR-059) ---- */
    void *owner;
    void (*owner_release)(void *owner);
    uint64_t descriptor_len;
    uint8_t descriptor[]; /* the private copy, in the same allocation */
};

_Static_assert(offsetof(struct HurrayTensorContext, magic) == 0,
               "the context magic is frozen at offset 0");
_Static_assert(offsetof(struct HurrayTensorContext, abi_version) == 4,
               "the context ABI version is frozen at offset 4");

/* Reads the frozen header and nothing else, and checks its magic. memcpy,
 * not a member access: the pointer may come from another build whose struct
 * type differs, and may not even be aligned. */
static HurrayStatus read_header(const void *ctx, const char *fn, uint32_t *abi_version)
{
    const unsigned char *bytes = ctx;
    uint32_t magic;
    memcpy(&magic, bytes, sizeof magic);
    memcpy(abi_version, bytes + sizeof magic, sizeof *abi_version);
    if (magic != HURRAY_TENSOR_CONTEXT_MAGIC) {
        return hurray__fail(HURRAY_ERROR_NOT_A_CONTEXT,
                            "%s: ctx is not a HurrayTensorContext (magic 0x%08lx, expected "
                            "0x%08lx); it may have been destroyed already",
                            fn, (unsigned long)magic, (unsigned long)HURRAY_TENSOR_CONTEXT_MAGIC);
    }
    return HURRAY_OK;
}

static int abi_version_served(uint32_t abi_version)
{
    return abi_version >= HURRAY__TENSOR_CONTEXT_FIRST_ABI && abi_version <= HURRAY_C_ABI_VERSION;
}

/* Checks the header before anything past it is read: the magic, then that
 * this build knows the layout of that version. */
static HurrayStatus check_context(const void *ctx, const char *fn)
{
    uint32_t abi_version;
    HURRAY__TRY(read_header(ctx, fn, &abi_version));
    if (!abi_version_served(abi_version)) {
        return hurray__fail(HURRAY_ERROR_ABI_VERSION,
                            "%s: the context has ABI version %lu; this library serves "
                            "versions %u to %u",
                            fn, (unsigned long)abi_version, HURRAY__TENSOR_CONTEXT_FIRST_ABI,
                            (unsigned)HURRAY_C_ABI_VERSION);
    }
    return HURRAY_OK;
}

/* Ownership of owner passes to the context only when this returns
 * HURRAY_OK; on any failure owner_release is not called and the caller
 * still owns owner. owner_release may be NULL (nothing to release). */
HurrayStatus hurray_tensor_context_new(uint32_t abi_version, const uint8_t *descriptor_bytes,
                                       uint64_t descriptor_len, void *owner,
                                       void (*owner_release)(void *owner),
                                       struct HurrayTensorContext **out)
{
    static const char fn[] = "hurray_tensor_context_new";
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    /* A library can only vouch for layouts it implements. */
    if (!abi_version_served(abi_version)) {
        return hurray__fail(HURRAY_ERROR_ABI_VERSION,
                            "%s: abi_version %lu is not served; this library makes contexts "
                            "for versions %u to %u",
                            fn, (unsigned long)abi_version, HURRAY__TENSOR_CONTEXT_FIRST_ABI,
                            (unsigned)HURRAY_C_ABI_VERSION);
    }
    if (descriptor_bytes == NULL && descriptor_len != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "%s: descriptor_bytes is NULL but descriptor_len is %llu", fn,
                            (unsigned long long)descriptor_len);
    }
    if (descriptor_len == 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: descriptor_len is 0; every descriptor has a header", fn);
    }
    if (descriptor_len > HURRAY__TENSOR_CONTEXT_MAX_DESCRIPTOR) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: descriptor_len %llu exceeds the limit of %u bytes", fn,
                            (unsigned long long)descriptor_len,
                            HURRAY__TENSOR_CONTEXT_MAX_DESCRIPTOR);
    }
    size_t size;
    if (__builtin_add_overflow(sizeof(struct HurrayTensorContext), (size_t)descriptor_len, &size)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW, "%s: context size overflows", fn);
    }
    struct HurrayTensorContext *ctx = malloc(size);
    if (ctx == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "%s: cannot allocate %zu bytes", fn, size);
    }
    ctx->magic = HURRAY_TENSOR_CONTEXT_MAGIC;
    ctx->abi_version = abi_version;
    ctx->owner = owner;
    ctx->owner_release = owner_release;
    ctx->descriptor_len = descriptor_len;
    memcpy(ctx->descriptor, descriptor_bytes, (size_t)descriptor_len);
    *out = ctx;
    return HURRAY_OK;
}

/* Works on a context from any ABI version: it reads the 8-byte header and
 * nothing else, so a consumer can refuse a version it does not know. A
 * version outside what this library serves is still reported with
 * HURRAY_OK -- judging it is the caller's job. */
HurrayStatus hurray_tensor_context_abi_version(const struct HurrayTensorContext *ctx, uint32_t *out)
{
    static const char fn[] = "hurray_tensor_context_abi_version";
    if (ctx == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: ctx is NULL", fn);
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    uint32_t abi_version;
    HURRAY__TRY(read_header(ctx, fn, &abi_version));
    *out = abi_version;
    return HURRAY_OK;
}

/* The bytes are borrowed: valid until the context is destroyed. */
HurrayStatus hurray_tensor_context_descriptor(const struct HurrayTensorContext *ctx,
                                              const uint8_t **out_bytes, uint64_t *out_len)
{
    static const char fn[] = "hurray_tensor_context_descriptor";
    if (ctx == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: ctx is NULL", fn);
    }
    if (out_bytes == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out_bytes is NULL", fn);
    }
    if (out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out_len is NULL", fn);
    }
    HURRAY__TRY(check_context(ctx, fn));
    *out_bytes = ctx->descriptor;
    *out_len = ctx->descriptor_len;
    return HURRAY_OK;
}

/* A pointer that is not a context this build can free (wrong magic, or a
 * version it does not serve) is left alone: freeing memory of unknown
 * provenance would be worse than leaking it. The refusal is reported
 * through hurray_last_error_message and *ctx is left as it was. */
void hurray_tensor_context_destroy(struct HurrayTensorContext **ctx)
{
    if (ctx == NULL || *ctx == NULL) {
        return;
    }
    if (check_context(*ctx, "hurray_tensor_context_destroy") != HURRAY_OK) {
        return;
    }
    struct HurrayTensorContext *c = *ctx;
    *ctx = NULL;
    c->magic = HURRAY__TENSOR_CONTEXT_DEAD;
    if (c->owner_release != NULL) {
        c->owner_release(c->owner);
    }
    free(c);
}

/* ABI 5. The version decides what may be read: a version-4 pair was made
 * under ABI 4's promise that every buffer is writable, and its buffers may
 * come from an ABI-4 library whose HurrayBuffer has no flags field, so
 * none is read; from version 5 on every buffer has its mark. */
HurrayStatus hurray_tensor_context_buffer_flags(const struct HurrayTensorContext *ctx,
                                                const HurrayBufferList *list, uint64_t index,
                                                uint32_t *out)
{
    static const char fn[] = "hurray_tensor_context_buffer_flags";
    if (ctx == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: ctx is NULL", fn);
    }
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: list is NULL", fn);
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    HURRAY__TRY(check_context(ctx, fn));
    const HurrayBuffer *buf = NULL;
    if (hurray_buffer_list_get(list, index, &buf) != HURRAY_OK) {
        uint64_t len = 0;
        (void)hurray_buffer_list_len(list, &len);
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "%s: index %llu is past the list's %llu buffers", fn,
                            (unsigned long long)index, (unsigned long long)len);
    }
    uint32_t flags = 0;
    if (ctx->abi_version >= 5u) {
        HURRAY__TRY(hurray_buffer_flags(buf, &flags));
    }
    *out = flags;
    return HURRAY_OK;
}
