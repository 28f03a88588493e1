/*
 * io_format.h -- internal: the hurray-io byte format (docs/impl/io-format.md,
 * ADR-039) shared by the frame, reader and writer code. Not part of the ABI.
 *
 * All integers are little-endian. A frame is
 *
 *   header (48 bytes) | buffer lengths (8 * buffer_count) | name | descriptor
 *   | zero pad to the alignment | each buffer, zero padded to the alignment
 *   | end block: checksum (8) then zero pad to the alignment
 *
 * so its length is a multiple of its alignment and, frame after frame, every
 * buffer starts at a multiple of the alignment from the start of the stream.
 */
#ifndef HURRAY_IO_FORMAT_H
#define HURRAY_IO_FORMAT_H

#include "hurray_io.h"

#include <stddef.h>
#include <stdint.h>

/* ---- constants of format version 1 -------------------------------------- */

#define HURRAY__IO_FORMAT_VERSION 1u

#define HURRAY__FRAME_MAGIC "HRYF" /* 4 bytes */
#define HURRAY__FRAME_HEADER_LEN 48u
#define HURRAY__FRAME_END_LEN 8u               /* the checksum, before its padding */
#define HURRAY__FILE_MAGIC "\x89HRY\r\n\x1a\n" /* 8 bytes; catches text-mode transfers */
#define HURRAY__FILE_HEADER_LEN 64u
#define HURRAY__INDEX_MAGIC "HRYI" /* 4 bytes */
#define HURRAY__INDEX_HEADER_LEN 32u
#define HURRAY__TRAILER_MAGIC "HRYEND\r\n" /* 8 bytes, the last of the file */
#define HURRAY__TRAILER_LEN 64u

/* Alignment is 2^align_log2 bytes: 64 at least, 64 KiB at most (covers every
 * common page size). */
#define HURRAY__ALIGN_LOG2_MIN 6u
#define HURRAY__ALIGN_LOG2_MAX 16u
#define HURRAY__ALIGN_LOG2_DEFAULT 6u

/* Limits a reader enforces before allocating anything a header claims. */
#define HURRAY__MAX_NAME_LEN 65535u
#define HURRAY__MAX_DESCRIPTOR_BYTES 65536u
#define HURRAY__MAX_FRAME_BUFFERS 64u
/* Any descriptor this build writes fits a frame: version 2's longest, and
 * its most buffers (one per node). */
_Static_assert(HURRAY__MAX_DESCRIPTOR_BYTES >= HURRAY_MAX_DESCRIPTOR_V2_LEN &&
                   HURRAY__MAX_FRAME_BUFFERS >= HURRAY_MAX_NODES,
               "hurray-io frames carry version-2 descriptors");
#define HURRAY__MAX_INDEX_LEN (1ull << 30)

/* ---- little-endian access ----------------------------------------------- */

static inline uint64_t hurray__le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static inline uint32_t hurray__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint16_t hurray__le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static inline void hurray__put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline void hurray__put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline void hurray__put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

/* x rounded up to a multiple of 2^log2; 0 when that overflows (callers check
 * x != 0 && result == 0, or use hurray__align_up_checked). */
static inline int hurray__align_up(uint64_t x, uint32_t log2, uint64_t *out)
{
    uint64_t mask = ((uint64_t)1 << log2) - 1;
    if (x > UINT64_MAX - mask) {
        return 0;
    }
    *out = (x + mask) & ~mask;
    return 1;
}

/* ---- checksums: xxh3-64 (io_checksum.c) ----------------------------------- */

/* Every comparison of a stored checksum goes through here. A fuzzing build
 * (fuzz/io_fuzz.c, FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, the libFuzzer
 * convention) accepts any checksum, so that mutated input reaches the
 * parsers behind the checksums instead of stopping at them. */
static inline int hurray__checksum_ok(uint64_t stored, uint64_t computed)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
    (void)stored, (void)computed;
    return 1;
#else
    return stored == computed;
#endif
}

typedef struct HurrayHasher HurrayHasher;

uint64_t hurray__hash(const void *data, size_t len);
HurrayStatus hurray__hasher_new(HurrayHasher **out);
void hurray__hasher_update(HurrayHasher *h, const void *data, size_t len);
uint64_t hurray__hasher_digest(const HurrayHasher *h);
void hurray__hasher_destroy(HurrayHasher **h);

/* ---- a frame's header and where its parts lie (io_frame.c) --------------- */

typedef struct HurrayFrameLayout {
    uint32_t align_log2;
    uint32_t name_len;
    uint32_t descriptor_len;
    uint32_t buffer_count;
    uint64_t frame_len; /* the whole frame, padding included */
    uint64_t header_checksum;
    uint64_t name_offset; /* from the frame's first byte */
    uint64_t descriptor_offset;
    uint64_t data_offset; /* first buffer; a multiple of the alignment */
    uint64_t end_offset;  /* the checksum; a multiple of the alignment */
    uint64_t buffer_len[HURRAY__MAX_FRAME_BUFFERS];
    uint64_t buffer_offset[HURRAY__MAX_FRAME_BUFFERS];
} HurrayFrameLayout;

/* Decodes and checks the fixed header (HURRAY__FRAME_HEADER_LEN bytes): the
 * magic, version, limits and reserved zeros. Fills the counts, frame_len and
 * header_checksum; offsets come from hurray__frame_layout_finish. */
HurrayStatus hurray__frame_header_decode(const uint8_t *header, HurrayFrameLayout *out);

/* Takes the buffer-length table (8 * buffer_count bytes), checks the header
 * checksum over header + table, computes every offset with overflow checks,
 * and requires that they add up to the claimed frame_len exactly. */
HurrayStatus hurray__frame_layout_finish(const uint8_t *header, const uint8_t *table,
                                         HurrayFrameLayout *layout);

/* Fills a layout for writing and encodes header + table into out (capacity
 * at least HURRAY__FRAME_HEADER_LEN + 8 * HURRAY__MAX_FRAME_BUFFERS). */
HurrayStatus hurray__frame_layout_plan(uint32_t align_log2, uint64_t name_len,
                                       uint64_t descriptor_len, const uint64_t *buffer_len,
                                       uint64_t buffer_count, HurrayFrameLayout *layout,
                                       uint8_t *out, uint64_t *out_len);

/* Writes one frame through write(stream, ...); the frame's checksum and
 * length come back for a file index. */
HurrayStatus hurray__frame_write(HurrayWriteFn write, void *stream, uint32_t align_log2,
                                 const char *name, uint64_t name_len,
                                 const HurrayTensorContext *context, const HurrayBufferList *list,
                                 uint64_t *out_checksum, uint64_t *out_frame_len);

/* Reads one frame through read(stream, ...). verify = 0 skips the data
 * checksum (neither computed nor compared). align_log2 is the alignment the
 * frame must state (a file's, so that a frame read with pread is held to the
 * rule the mapped reader applies), or 0 for any (a stream). At a clean end
 * of the stream, before the frame's first byte, it returns HURRAY_OK with
 * the three outs NULL and *out_frame_len 0. */
HurrayStatus hurray__frame_read(HurrayReadFn read, void *stream, int verify, uint32_t align_log2,
                                HurrayBuffer **out_name, HurrayTensorContext **out_context,
                                HurrayBufferList **out_list, uint64_t *out_checksum,
                                uint64_t *out_frame_len);

/* 1 when len bytes at p are all zero. */
int hurray__all_zero(const uint8_t *p, uint64_t len);

/* ---- names and keys (io_names.c) ------------------------------------------ */

/* 1 when bytes are well-formed UTF-8 (no overlongs, surrogates or code
 * points past U+10FFFF). */
int hurray__utf8_valid(const uint8_t *bytes, uint64_t len);

/* A set of byte strings, for refusing duplicate names and keys. Entries are
 * borrowed: the caller keeps the bytes alive as long as the set. */
typedef struct HurrayNameSet HurrayNameSet;

HurrayStatus hurray__name_set_new(HurrayNameSet **out);
/* Adds (bytes, len) with value; returns 1 if added, 0 if an equal entry is
 * present (*out_existing then holds its value), -1 when out of memory. */
int hurray__name_set_add(HurrayNameSet *set, const uint8_t *bytes, uint64_t len, uint64_t value,
                         uint64_t *out_existing);
/* 1 and *out_value when present, else 0. */
int hurray__name_set_find(const HurrayNameSet *set, const uint8_t *bytes, uint64_t len,
                          uint64_t *out_value);
void hurray__name_set_destroy(HurrayNameSet **set);

#endif /* HURRAY_IO_FORMAT_H */
