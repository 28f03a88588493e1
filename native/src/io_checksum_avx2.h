/*
 * io_checksum_avx2.h -- the AVX2 build of xxh3-64 (io_checksum_avx2.c),
 * declared for io_checksum.c, the only caller. The state is an
 * XXH3_state_t made by the baseline build: both builds share its layout.
 */
#ifndef HURRAY_IO_CHECKSUM_AVX2_H
#define HURRAY_IO_CHECKSUM_AVX2_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HURRAY__HASH_AVX2 1
uint64_t hurray__hash_avx2(const void *data, size_t len);
void hurray__hash_update_avx2(void *xxh3_state, const void *data, size_t len);
uint64_t hurray__hash_digest_avx2(const void *xxh3_state);
#else
#define HURRAY__HASH_AVX2 0
#endif

#endif /* HURRAY_IO_CHECKSUM_AVX2_H */
