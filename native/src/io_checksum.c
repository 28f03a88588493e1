/*
 * io_checksum.c -- the one place that includes xxHash (ADR-039): xxh3-64,
 * one-shot and streaming. XXH_INLINE_ALL makes every xxHash function static
 * to this file, so none of its symbols can leak from libhurray.
 */
#include "io_format.h"
#include "status.h"

#define XXH_INLINE_ALL
#include "../third_party/xxhash/xxhash.h"

struct HurrayHasher {
    XXH3_state_t *state;
};

uint64_t hurray__hash(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

HurrayStatus hurray__hasher_new(HurrayHasher **out)
{
    HurrayHasher *h = malloc(sizeof *h);
    if (h == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "cannot allocate a checksum state");
    }
    h->state = XXH3_createState();
    if (h->state == NULL) {
        free(h);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "cannot allocate a checksum state");
    }
    XXH3_64bits_reset(h->state);
    *out = h;
    return HURRAY_OK;
}

void hurray__hasher_update(HurrayHasher *h, const void *data, size_t len)
{
    if (len != 0) {
        XXH3_64bits_update(h->state, data, len);
    }
}

uint64_t hurray__hasher_digest(const HurrayHasher *h)
{
    return (uint64_t)XXH3_64bits_digest(h->state);
}

void hurray__hasher_destroy(HurrayHasher **h)
{
    if (h == NULL || *h == NULL) {
        return;
    }
    XXH3_freeState((*h)->state);
    free(*h);
    *h = NULL;
}

HurrayStatus hurray_io_checksum(const void *data, uint64_t len, uint64_t *out)
{
    if (out == NULL || (data == NULL && len != 0)) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_io_checksum: data or out is NULL");
    }
    if (len > SIZE_MAX) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW, "hurray_io_checksum: len does not fit in memory");
    }
    *out = hurray__hash(data, (size_t)len);
    return HURRAY_OK;
}
