/*
 * io_checksum.c -- xxh3-64 (ADR-039), one-shot and streaming. XXH_INLINE_ALL
 * makes every xxHash function static to this file (and to its AVX2 twin,
 * io_checksum_avx2.c), so none of its symbols can leak from libhurray. The
 * baseline build here runs everywhere; where the CPU has AVX2, the twin does
 * the work, with the same results.
 */
#include "io_checksum_avx2.h"
#include "io_format.h"
#include "status.h"

#define XXH_INLINE_ALL
#include "../third_party/xxhash/xxhash.h"

#if HURRAY__HASH_AVX2
/* A load of a flag that libgcc sets once, when the library is loaded. */
#define HURRAY__USE_AVX2() __builtin_cpu_supports("avx2")
#else
#define HURRAY__USE_AVX2() 0
#endif

struct HurrayHasher {
    XXH3_state_t *state;
};

uint64_t hurray__hash(const void *data, size_t len)
{
#if HURRAY__HASH_AVX2
    if (HURRAY__USE_AVX2()) {
        return hurray__hash_avx2(data, len);
    }
#endif
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
    if (len == 0) {
        return;
    }
#if HURRAY__HASH_AVX2
    if (HURRAY__USE_AVX2()) {
        hurray__hash_update_avx2(h->state, data, len);
        return;
    }
#endif
    XXH3_64bits_update(h->state, data, len);
}

uint64_t hurray__hasher_digest(const HurrayHasher *h)
{
#if HURRAY__HASH_AVX2
    if (HURRAY__USE_AVX2()) {
        return hurray__hash_digest_avx2(h->state);
    }
#endif
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
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "hurray_io_checksum: len does not fit in memory");
    }
    *out = hurray__hash(data, (size_t)len);
    return HURRAY_OK;
}
