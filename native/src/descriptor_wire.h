/*
 * descriptor_wire.h -- internal: what the encoder and the decoder of the
 * binary form (layer 4, docs/impl/descriptor-encoding.md) share: the magic,
 * the length limits, and little-endian access at any alignment. Each side
 * includes this and neither includes the other.
 */
#ifndef HURRAY_DESCRIPTOR_WIRE_INTERNAL_H
#define HURRAY_DESCRIPTOR_WIRE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "descriptor.h"
#include "hurray.h"

static const uint8_t hurray__descriptor_magic[4] = {0x48, 0x52, 0x59, 0x44}; /* "HRYD" */

/* The public limit is the longest encoding this codec writes; the total
 * length field (16 bits) must hold it. */
_Static_assert(HURRAY_MAX_DESCRIPTOR_LEN == HURRAY__DESCRIPTOR_HEADER_LEN +
                                                HURRAY__DESCRIPTOR_DIM_LEN * HURRAY_MAX_RANK +
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

static inline void put_le(uint8_t *p, uint64_t v, int size)
{
    if (HURRAY__HOST_IS_LITTLE_ENDIAN) {
        memcpy(p, &v, (size_t)size); /* the low bytes come first */
        return;
    }
    for (int i = 0; i < size; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static inline uint64_t get_le(const uint8_t *p, int size)
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

static inline void put16(uint8_t *p, uint16_t v)
{
    put_le(p, v, 2);
}
static inline void put32(uint8_t *p, uint32_t v)
{
    put_le(p, v, 4);
}
static inline void put64(uint8_t *p, uint64_t v)
{
    put_le(p, v, 8);
}
static inline uint16_t get16(const uint8_t *p)
{
    return (uint16_t)get_le(p, 2);
}
static inline uint32_t get32(const uint8_t *p)
{
    return (uint32_t)get_le(p, 4);
}
static inline uint64_t get64(const uint8_t *p)
{
    return get_le(p, 8);
}

/* The struct keeps the header's order where the encoding's fields are one
 * run of bytes, so that a little-endian host copies them in two moves
 * rather than one field at a time. */
_Static_assert(offsetof(HurrayDescriptor, byte_order) == offsetof(HurrayDescriptor, rank) + 1 &&
                   offsetof(HurrayDescriptor, packing) == offsetof(HurrayDescriptor, rank) + 2 &&
                   offsetof(HurrayDescriptor, scheme) == offsetof(HurrayDescriptor, rank) + 3 &&
                   offsetof(HurrayDescriptor, granularity) == offsetof(HurrayDescriptor, rank) + 4,
               "rank, byte order, packing, scheme and granularity are bytes 8-12's order");
_Static_assert(offsetof(HurrayDescriptor, ggml_type) == offsetof(HurrayDescriptor, axis) + 4 &&
                   sizeof(uint32_t) == 4,
               "axis and ggml type are bytes 16-23's order");

/* The header's fields (bytes 8-12 and 16-31) into desc, read as they
 * stand: their values are for the caller to judge. The rank (byte 8) is
 * written again with the value the caller allocated desc for; the part
 * count (byte 13) is not a field. */
static inline void hurray__descriptor_read_header(HurrayDescriptor *desc, const uint8_t *bytes)
{
    if (HURRAY__HOST_IS_LITTLE_ENDIAN) {
        memcpy(&desc->rank, bytes + 8, 5);
        memcpy(&desc->axis, bytes + 16, 8);
    } else {
        desc->byte_order = bytes[9];
        desc->packing = bytes[10];
        desc->scheme = bytes[11];
        desc->granularity = bytes[12];
        desc->axis = get32(bytes + 16);
        desc->ggml_type = get32(bytes + 20);
    }
    desc->block_size = get64(bytes + 24);
}

#endif /* HURRAY_DESCRIPTOR_WIRE_INTERNAL_H */
