/*
 * descriptor_codec.c -- the binary form of a descriptor (layer 4):
 * hurray_descriptor_encode and hurray_descriptor_decode.
 *
 * One descriptor has one encoding. Every byte decode reads lands in a field
 * that encode writes back unchanged, and decode ends with the same
 * validation encode starts with, so a byte string decode accepts re-encodes
 * to itself. Decode is on the path of every tensor exchange: it reads each
 * byte once, with bounds known before the first read, and allocates once.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "descriptor.h"
#include "status.h"

static const uint8_t magic[4] = {0x48, 0x52, 0x59, 0x44}; /* "HRYD" */

/* The public limit is the longest encoding this codec writes; the total
 * length field (16 bits) must hold it. */
_Static_assert(HURRAY_MAX_DESCRIPTOR_LEN ==
                   HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * HURRAY_MAX_RANK +
                       HURRAY__DESCRIPTOR_PART_LEN * HURRAY_MAX_PARTS,
               "HURRAY_MAX_DESCRIPTOR_LEN is the longest version-1 encoding");
_Static_assert(HURRAY_MAX_DESCRIPTOR_LEN <= UINT16_MAX,
               "the total length field holds any encoding");

/* Little-endian access at any alignment. On a little-endian host that is a
 * plain (unaligned-safe) memcpy, which compilers turn into one load or
 * store; elsewhere the bytes are assembled one by one. */
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HURRAY__HOST_IS_LITTLE_ENDIAN 1
#else
#define HURRAY__HOST_IS_LITTLE_ENDIAN 0
#endif

static void put_le(uint8_t *p, uint64_t v, int size)
{
    if (HURRAY__HOST_IS_LITTLE_ENDIAN) {
        memcpy(p, &v, (size_t)size); /* the low bytes come first */
        return;
    }
    for (int i = 0; i < size; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint64_t get_le(const uint8_t *p, int size)
{
    uint64_t v = 0;
    if (HURRAY__HOST_IS_LITTLE_ENDIAN) {
        memcpy(&v, p, (size_t)size);
        return v;
    }
    for (int i = 0; i < size; i++) {
        v |= (uint64_t)p[i] << (8 * i);
    }
    return v;
}

static void put16(uint8_t *p, uint16_t v) { put_le(p, v, 2); }
static void put32(uint8_t *p, uint32_t v) { put_le(p, v, 4); }
static void put64(uint8_t *p, uint64_t v) { put_le(p, v, 8); }
static uint16_t get16(const uint8_t *p) { return (uint16_t)get_le(p, 2); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get_le(p, 4); }
static uint64_t get64(const uint8_t *p) { return get_le(p, 8); }

/* Size query: with out == NULL and capacity == 0, *out_len receives the
 * size and the call succeeds. With a non-NULL out whose capacity is too
 * small, *out_len receives the size and the call fails with
 * HURRAY_ERROR_OUT_OF_RANGE, writing nothing to out. On success *out_len is
 * the number of bytes written. An invalid descriptor leaves *out_len alone. */
HurrayStatus hurray_descriptor_encode(const HurrayDescriptor *desc, uint8_t *out,
                                      uint64_t capacity, uint64_t *out_len)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_encode: desc is NULL");
    }
    if (out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_encode: out_len is NULL");
    }
    if (out == NULL && capacity != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_encode: out is NULL but capacity is %" PRIu64
                            " (pass capacity 0 to ask for the size)",
                            capacity);
    }
    HurrayStatus status = hurray__descriptor_check(desc);
    if (status != HURRAY_OK) {
        return status;
    }
    uint64_t len = hurray__descriptor_encoded_len(desc);
    if (out == NULL) {
        *out_len = len;
        return HURRAY_OK;
    }
    if (capacity < len) {
        *out_len = len;
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_descriptor_encode: capacity %" PRIu64
                            " is below the %" PRIu64 " bytes needed",
                            capacity, len);
    }
    memcpy(out, magic, sizeof magic);
    put16(out + 4, HURRAY__DESCRIPTOR_VERSION);
    put16(out + 6, (uint16_t)len); /* at most HURRAY_MAX_DESCRIPTOR_LEN */
    out[8] = (uint8_t)desc->rank;
    out[9] = (uint8_t)desc->byte_order;
    out[10] = (uint8_t)desc->packing;
    out[11] = (uint8_t)desc->scheme;
    out[12] = (uint8_t)desc->granularity;
    out[13] = (uint8_t)hurray__descriptor_part_count(desc);
    out[14] = 0;
    out[15] = 0;
    put32(out + 16, desc->axis);
    put32(out + 20, desc->ggml_type);
    put64(out + 24, desc->block_size);
    uint8_t *p = out + HURRAY__DESCRIPTOR_HEADER_LEN;
    /* The shape then the strides, as in storage (see read_fields). */
    for (uint32_t i = 0; i < 2u * desc->rank; i++, p += 8) {
        put64(p, desc->storage[i]);
    }
    for (uint32_t parts = desc->part_mask; parts != 0; parts &= parts - 1) {
        uint32_t role = hurray__role_of_bit(parts);
        const HurrayDescriptorPart *part = &desc->parts[role - 1];
        /* Validation bounded dtype, layout and buffer index. */
        p[0] = (uint8_t)role;
        p[1] = (uint8_t)part->dtype;
        p[2] = (uint8_t)part->layout;
        p[3] = 0;
        put32(p + 4, (uint32_t)part->buffer_index);
        put64(p + 8, part->byte_offset);
        p += HURRAY__DESCRIPTOR_PART_LEN;
    }
    *out_len = len;
    return HURRAY_OK;
}

static HurrayStatus refuse(const char *what)
{
    return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR, "descriptor: %s", what);
}

/* Magic, version and total length: what must hold before any other field
 * means anything. len is at least the header's length. */
static HurrayStatus check_frame(const uint8_t *bytes, uint64_t len)
{
    if (memcmp(bytes, magic, sizeof magic) != 0) {
        return refuse("magic: the first 4 bytes are not \"HRYD\"");
    }
    uint16_t version = get16(bytes + 4);
    if (version != HURRAY__DESCRIPTOR_VERSION) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "descriptor: encoding version %u is unsupported (this build reads %u)",
                            (unsigned)version, HURRAY__DESCRIPTOR_VERSION);
    }
    uint16_t total = get16(bytes + 6);
    if (total != len) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: total length: the field says %u bytes, the input holds %" PRIu64,
                            (unsigned)total, len);
    }
    return HURRAY_OK;
}

/* Rank and part count within bounds, and together exactly the input's
 * length; the reserved header bytes zero. */
static HurrayStatus check_sizes(const uint8_t *bytes, uint64_t len)
{
    uint32_t rank = bytes[8];
    uint32_t part_count = bytes[13];
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR, "descriptor: rank %u exceeds %d",
                            (unsigned)rank, HURRAY_MAX_RANK);
    }
    if (part_count < 1 || part_count > HURRAY_MAX_PARTS) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: part count %u is not between 1 and %d",
                            (unsigned)part_count, HURRAY_MAX_PARTS);
    }
    uint64_t expected = HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * rank +
                        HURRAY__DESCRIPTOR_PART_LEN * part_count;
    if (expected != len) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: total length: rank %u and %u parts take %" PRIu64
                            " bytes, not %" PRIu64,
                            (unsigned)rank, (unsigned)part_count, expected, len);
    }
    if (bytes[14] != 0 || bytes[15] != 0) {
        return refuse("reserved header bytes 14-15 are not zero");
    }
    return HURRAY_OK;
}

/* The parts, in encoding order: each role known and greater than the one
 * before (so none twice), its reserved byte zero. Sets part_mask and the
 * parts it names; no other part is written. */
static HurrayStatus read_parts(HurrayDescriptor *desc, const uint8_t *p, uint32_t part_count)
{
    uint32_t previous_role = 0;
    uint32_t mask = 0;
    for (uint32_t i = 0; i < part_count; i++, p += HURRAY__DESCRIPTOR_PART_LEN) {
        uint32_t role = p[0];
        if (role < HURRAY_ROLE_VALUES || role > HURRAY_ROLE_GLOBAL_SCALE) {
            return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: part %u: role %u is unknown",
                                (unsigned)i, (unsigned)role);
        }
        if (role <= previous_role) {
            return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                                "descriptor: part %u: role %s comes after %s (roles must be in "
                                "increasing order, each at most once)",
                                (unsigned)i, hurray__role_name(role),
                                hurray__role_name(previous_role));
        }
        if (p[3] != 0) {
            return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                                "descriptor: part %s: reserved byte 3 is not zero",
                                hurray__role_name(role));
        }
        previous_role = role;
        mask |= HURRAY__ROLE_BIT(role);
        desc->parts[role - 1] = (HurrayDescriptorPart){
            .dtype = p[1], .layout = p[2], .buffer_index = get32(p + 4), .byte_offset = get64(p + 8)};
    }
    desc->part_mask = (uint8_t)mask;
    return HURRAY_OK;
}

/* The header's fields and the dimensions, from bytes whose sizes are
 * settled. Their values are judged afterwards, by hurray__descriptor_check. */
static void read_fields(HurrayDescriptor *desc, const uint8_t *bytes)
{
    uint32_t rank = desc->rank;
    desc->byte_order = bytes[9];
    desc->packing = bytes[10];
    desc->scheme = bytes[11];
    desc->granularity = bytes[12];
    desc->axis = get32(bytes + 16);
    desc->ggml_type = get32(bytes + 20);
    desc->block_size = get64(bytes + 24);
    /* A stride's bits read as uint64_t are its int64_t value: exact-width
     * types are two's complement, and may alias each other. Element by
     * element through the two pointers: a copy the compiler recognises
     * (memcpy, or a loop over storage) becomes rep movs, slow to start for a
     * few words. */
    const uint8_t *dims = bytes + HURRAY__DESCRIPTOR_HEADER_LEN;
    uint64_t *strides = (uint64_t *)desc->strides;
    for (uint32_t k = 0; k < rank; k++) {
        desc->shape[k] = get64(dims + 8 * k);
        strides[k] = get64(dims + 8 * (rank + k));
    }
}

HurrayStatus hurray_descriptor_decode(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_decode: out is NULL");
    }
    if (bytes == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_decode: bytes is NULL");
    }
    /* Everything about the size is settled before anything past the
     * header is read. */
    if (len < HURRAY__DESCRIPTOR_HEADER_LEN) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: truncated: %" PRIu64 " bytes, the header alone takes %u",
                            len, HURRAY__DESCRIPTOR_HEADER_LEN);
    }
    HURRAY__TRY(check_frame(bytes, len));
    HURRAY__TRY(check_sizes(bytes, len));
    uint32_t rank = bytes[8];
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_descriptor_decode: out of memory");
    }
    /* The roles before the other fields, as the spec orders the checks. */
    HurrayStatus status = read_parts(
        desc, bytes + HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * rank, bytes[13]);
    if (status == HURRAY_OK) {
        read_fields(desc, bytes);
        status = hurray__descriptor_check(desc);
    }
    if (status != HURRAY_OK) {
        free(desc);
        return status;
    }
    *out = desc;
    return HURRAY_OK;
}
