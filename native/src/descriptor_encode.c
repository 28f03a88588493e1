/*
 * descriptor_encode.c -- hurray_descriptor_encode: a checked descriptor to
 * its one binary form (layer 4). The decoder is descriptor_decode.c; what
 * both read and write is in descriptor_wire.h.
 */
#include <inttypes.h>
#include <string.h>

#include "descriptor_graph.h"
#include "descriptor_validate.h"
#include "descriptor_wire.h"
#include "status.h"

/* Size query: with out == NULL and capacity == 0, *out_len receives the
 * size and the call succeeds. With a non-NULL out whose capacity is too
 * small, *out_len receives the size and the call fails with
 * HURRAY_ERROR_OUT_OF_RANGE, writing nothing to out. On success *out_len is
 * the number of bytes written. An invalid descriptor leaves *out_len alone. */
HurrayStatus hurray_descriptor_encode(const HurrayDescriptor *desc, uint8_t *out, uint64_t capacity,
                                      uint64_t *out_len)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_encode: desc is NULL");
    }
    if (out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_encode: out_len is NULL");
    }
    if (out == NULL && capacity != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_encode: out is NULL but capacity is %" PRIu64
                            " (pass capacity 0 to ask for the size)",
                            capacity);
    }
    HURRAY__TRY(hurray__descriptor_check(desc));
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    uint64_t len = graph == NULL ? hurray__descriptor_encoded_len(desc)
                                 : hurray__graph_encoded_len(desc);
    if (out == NULL) {
        *out_len = len;
        return HURRAY_OK;
    }
    if (capacity < len) {
        *out_len = len;
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_descriptor_encode: capacity %" PRIu64 " is below the %" PRIu64
                            " bytes needed",
                            capacity, len);
    }
    if (graph != NULL) {
        hurray__graph_write(desc, out); /* version 2: descriptor_graph_encode.c */
        *out_len = len;
        return HURRAY_OK;
    }
    memcpy(out, hurray__descriptor_magic, sizeof hurray__descriptor_magic);
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
