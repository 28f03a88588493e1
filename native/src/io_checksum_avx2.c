/*
 * io_checksum_avx2.c -- xxh3-64 compiled for AVX2, which io_checksum.c
 * picks at run time on CPUs that have it. The algorithm and its results are
 * the same as the baseline build's (ADR-039 section 3); only the speed
 * differs, about three times on the development machine. GCC only: other
 * compilers (clang, for the fuzzers) get the baseline build alone.
 */
#include "io_checksum_avx2.h"

#if HURRAY__HASH_AVX2

#pragma GCC target("avx2")
#define XXH_INLINE_ALL
#define XXH_VECTOR XXH_AVX2
#include "../third_party/xxhash/xxhash.h"

uint64_t hurray__hash_avx2(const void *data, size_t len)
{
    return (uint64_t)XXH3_64bits(data, len);
}

void hurray__hash_update_avx2(void *xxh3_state, const void *data, size_t len)
{
    XXH3_64bits_update((XXH3_state_t *)xxh3_state, data, len);
}

uint64_t hurray__hash_digest_avx2(const void *xxh3_state)
{
    return (uint64_t)XXH3_64bits_digest((const XXH3_state_t *)xxh3_state);
}

#endif
