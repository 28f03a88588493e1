/*
 * descriptor_decode_full.c -- the full decode: bytes from anyone to a
 * checked descriptor (layer 4), any encoding, with a message naming the
 * first fault. hurray_descriptor_decode (descriptor_decode.c) comes here
 * when its quick path declines. The encoder is descriptor_encode.c; what
 * both read and write is in descriptor_wire.h.
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

#include "descriptor_decode.h"
#include "descriptor_graph.h"
#include "descriptor_validate.h"
#include "descriptor_wire.h"
#include "status.h"

static HurrayStatus refuse(const char *what)
{
    return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR, "descriptor: %s", what);
}

/* Magic, version and total length: what must hold before any other field
 * means anything. len is at least the header's length. */
static HurrayStatus check_frame(const uint8_t *bytes, uint64_t len)
{
    if (memcmp(bytes, hurray__descriptor_magic, sizeof hurray__descriptor_magic) != 0) {
        return refuse("magic: the first 4 bytes are not \"HRYD\"");
    }
    uint16_t version = get16(bytes + 4);
    if (version != HURRAY__DESCRIPTOR_VERSION && version != HURRAY__DESCRIPTOR_VERSION_GRAPH) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "descriptor: encoding version %u is unsupported (this build reads %u "
                            "and %u)",
                            (unsigned)version, HURRAY__DESCRIPTOR_VERSION,
                            HURRAY__DESCRIPTOR_VERSION_GRAPH);
    }
    uint16_t total = get16(bytes + 6);
    if (total != len) {
        return hurray__fail(
            HURRAY_ERROR_INVALID_DESCRIPTOR,
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
        desc->parts[role - 1] = (HurrayDescriptorPart){.dtype = p[1],
                                                       .layout = p[2],
                                                       .buffer_index = get32(p + 4),
                                                       .byte_offset = get64(p + 8)};
    }
    desc->part_mask = (uint8_t)mask;
    return HURRAY_OK;
}

/* The header's fields and the dimensions, from bytes whose sizes are
 * settled. Their values are judged afterwards, by hurray__descriptor_check. */
static void read_fields(HurrayDescriptor *desc, const uint8_t *bytes)
{
    uint32_t rank = desc->rank;
    hurray__descriptor_read_header(desc, bytes);
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

HurrayStatus hurray__descriptor_decode_full(const uint8_t *bytes, uint64_t len,
                                            HurrayDescriptor **out)
{
    if (len < HURRAY__DESCRIPTOR_HEADER_LEN) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: truncated: %" PRIu64 " bytes, the header alone takes %u",
                            len, HURRAY__DESCRIPTOR_HEADER_LEN);
    }
    HURRAY__TRY(check_frame(bytes, len));
    if (get16(bytes + 4) == HURRAY__DESCRIPTOR_VERSION_GRAPH) {
        return hurray__graph_decode(bytes, len, out); /* descriptor_graph_decode.c */
    }
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
