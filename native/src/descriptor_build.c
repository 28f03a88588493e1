/*
 * descriptor_build.c -- making a HurrayDescriptor field by field, reading it
 * back, and destroying it.
 *
 * Setters refuse codes this build does not know and arguments they cannot
 * store, and nothing else: rules that tie fields together (a scale for an
 * affine scheme, a packing that fits the dtype, ...) can only be judged once
 * every field is set, so hurray_descriptor_validate and encode judge them.
 */
#include <stdlib.h>
#include <string.h>

#include "descriptor.h"
#include "descriptor_graph.h"
#include "descriptor_reach.h"
#include "descriptor_validate.h"
#include "dtype.h"
#include "status.h"

/* The version-1 setters on a descriptor with nodes: its version-1 fields
 * are fixed (ADR-054), what it holds is in its nodes. */
static HurrayStatus refuse_graph(const HurrayDescriptor *desc, const char *fn)
{
    if (hurray__descriptor_graph(desc) != NULL) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: the descriptor has nodes (encoding version 2); state this in "
                            "its nodes",
                            fn);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_new(uint32_t dtype, uint32_t rank, const uint64_t *shape,
                                   HurrayDescriptor **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_new: out is NULL");
    }
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_descriptor_new: rank %u exceeds HURRAY_MAX_RANK (%d)",
                            (unsigned)rank, HURRAY_MAX_RANK);
    }
    if (shape == NULL && rank > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_new: shape is NULL but rank is %u", (unsigned)rank);
    }
    uint32_t bits = hurray__dtype_bits(dtype);
    if (bits == 0) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "hurray_descriptor_new: dtype %u is unknown",
                            (unsigned)dtype);
    }
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "hurray_descriptor_new: out of memory for a descriptor");
    }
    desc->axis = 0;
    desc->ggml_type = 0;
    desc->block_size = 0;
    /* Not needed by the readers (they go by part_mask) but keeps every byte
     * of a built descriptor defined. */
    memset(desc->parts, 0, sizeof desc->parts);
    if (rank > 0) {
        memcpy(desc->shape, shape, sizeof shape[0] * rank);
    }
    HurrayStatus status = hurray__descriptor_row_major_strides(desc, desc->strides);
    if (status != HURRAY_OK) {
        free(desc);
        return status;
    }
    desc->byte_order = HURRAY_BYTE_ORDER_LITTLE;
    desc->packing = (uint8_t)hurray__default_packing(bits);
    desc->scheme = HURRAY_SCHEME_NONE;
    desc->granularity = HURRAY_GRANULARITY_NONE;
    desc->part_mask = (uint8_t)HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES);
    desc->parts[HURRAY_ROLE_VALUES - 1] =
        (HurrayDescriptorPart){.dtype = (uint8_t)dtype,
                               .layout = HURRAY_PART_LAYOUT_ROW_MAJOR,
                               .buffer_index = 0,
                               .byte_offset = 0};
    *out = desc;
    return HURRAY_OK;
}

void hurray_descriptor_destroy(HurrayDescriptor **desc)
{
    if (desc == NULL || *desc == NULL) {
        return;
    }
    /* Nulled before the release, so the free is a tail call. */
    HurrayDescriptor *doomed = *desc;
    *desc = NULL;
    if (doomed->scheme == HURRAY_SCHEME_GRAPH) {
        hurray__graph_free(doomed->graph);
    }
    hurray__descriptor_release(doomed);
}

HurrayStatus hurray_descriptor_set_strides(HurrayDescriptor *desc, uint32_t rank,
                                           const int64_t *strides)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_set_strides: desc is NULL");
    }
    HURRAY__TRY(refuse_graph(desc, "hurray_descriptor_set_strides"));
    if (rank != desc->rank) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_descriptor_set_strides: %u strides given for rank %u",
                            (unsigned)rank, (unsigned)desc->rank);
    }
    if (strides == NULL && rank > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_set_strides: strides is NULL");
    }
    if (rank > 0) {
        memcpy(desc->strides, strides, sizeof strides[0] * rank);
    }
    desc->checked = 0; /* a setter changes the fields: the next check runs */
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_set_byte_order(HurrayDescriptor *desc, uint32_t byte_order)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_set_byte_order: desc is NULL");
    }
    HURRAY__TRY(refuse_graph(desc, "hurray_descriptor_set_byte_order"));
    if (byte_order > HURRAY_BYTE_ORDER_BIG) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_byte_order: byte order %u is unknown",
                            (unsigned)byte_order);
    }
    desc->byte_order = (uint8_t)byte_order;
    desc->checked = 0;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_set_packing(HurrayDescriptor *desc, uint32_t packing)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_set_packing: desc is NULL");
    }
    HURRAY__TRY(refuse_graph(desc, "hurray_descriptor_set_packing"));
    if (packing > HURRAY_PACKING_GGML_SPLIT) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_packing: packing %u is unknown",
                            (unsigned)packing);
    }
    desc->packing = (uint8_t)packing;
    desc->checked = 0;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_set_quantization(HurrayDescriptor *desc, uint32_t scheme,
                                                uint32_t granularity, uint32_t axis,
                                                uint64_t block_size, uint32_t ggml_type)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_set_quantization: desc is NULL");
    }
    HURRAY__TRY(refuse_graph(desc, "hurray_descriptor_set_quantization"));
    if (scheme > HURRAY_SCHEME_GGML) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_quantization: scheme %u is unknown",
                            (unsigned)scheme);
    }
    if (granularity > HURRAY_GRANULARITY_PER_BLOCK) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_quantization: granularity %u is unknown",
                            (unsigned)granularity);
    }
    if (ggml_type != 0 && hurray__ggml_name(ggml_type) == NULL) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_quantization: ggml type %u is unknown",
                            (unsigned)ggml_type);
    }
    desc->scheme = (uint8_t)scheme;
    desc->granularity = (uint8_t)granularity;
    desc->axis = axis;
    desc->block_size = block_size;
    desc->ggml_type = ggml_type;
    desc->checked = 0;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_set_part(HurrayDescriptor *desc, uint32_t role, uint32_t dtype,
                                        uint64_t buffer_index, uint64_t byte_offset,
                                        uint32_t layout)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_set_part: desc is NULL");
    }
    HURRAY__TRY(refuse_graph(desc, "hurray_descriptor_set_part"));
    if (role < HURRAY_ROLE_VALUES || role > HURRAY_ROLE_GLOBAL_SCALE) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_part: role %u is unknown", (unsigned)role);
    }
    if (!hurray__dtype_is_known(dtype)) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_part: part %s: dtype %u is unknown",
                            hurray__role_name(role), (unsigned)dtype);
    }
    if (layout > HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_descriptor_set_part: part %s: layout %u is unknown",
                            hurray__role_name(role), (unsigned)layout);
    }
    desc->part_mask |= (uint8_t)HURRAY__ROLE_BIT(role);
    desc->parts[role - 1] = (HurrayDescriptorPart){.dtype = (uint8_t)dtype,
                                                   .layout = (uint8_t)layout,
                                                   .buffer_index = buffer_index,
                                                   .byte_offset = byte_offset};
    desc->checked = 0;
    return HURRAY_OK;
}

/* ---- accessors ---- */

#define REQUIRE(ptr, fn, what)                                                        \
    do {                                                                              \
        if ((ptr) == NULL) {                                                          \
            return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, fn ": " what " is NULL"); \
        }                                                                             \
    } while (0)

HurrayStatus hurray_descriptor_dtype(const HurrayDescriptor *desc, uint32_t *out)
{
    REQUIRE(desc, "hurray_descriptor_dtype", "desc");
    REQUIRE(out, "hurray_descriptor_dtype", "out");
    if (!(desc->part_mask & HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES))) {
        /* A version-2 descriptor has no parts; a version-1 one always has
         * values (only a decoded or new descriptor is handed out). */
        return hurray__fail(HURRAY_ERROR_NOT_FOUND,
                            hurray__descriptor_graph(desc) != NULL
                                ? "hurray_descriptor_dtype: the descriptor has nodes (encoding "
                                  "version 2) and no values part: its values are node 0's"
                                : "hurray_descriptor_dtype: the descriptor has no values part");
    }
    *out = desc->parts[HURRAY_ROLE_VALUES - 1].dtype;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_rank(const HurrayDescriptor *desc, uint32_t *out)
{
    REQUIRE(desc, "hurray_descriptor_rank", "desc");
    REQUIRE(out, "hurray_descriptor_rank", "out");
    *out = desc->rank;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_shape(const HurrayDescriptor *desc, const uint64_t **out)
{
    REQUIRE(desc, "hurray_descriptor_shape", "desc");
    REQUIRE(out, "hurray_descriptor_shape", "out");
    *out = desc->shape;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_strides(const HurrayDescriptor *desc, const int64_t **out)
{
    REQUIRE(desc, "hurray_descriptor_strides", "desc");
    REQUIRE(out, "hurray_descriptor_strides", "out");
    *out = desc->strides;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_byte_order(const HurrayDescriptor *desc, uint32_t *out)
{
    REQUIRE(desc, "hurray_descriptor_byte_order", "desc");
    REQUIRE(out, "hurray_descriptor_byte_order", "out");
    *out = desc->byte_order;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_packing(const HurrayDescriptor *desc, uint32_t *out)
{
    REQUIRE(desc, "hurray_descriptor_packing", "desc");
    REQUIRE(out, "hurray_descriptor_packing", "out");
    *out = desc->packing;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_quantization(const HurrayDescriptor *desc, uint32_t *out_scheme,
                                            uint32_t *out_granularity, uint32_t *out_axis,
                                            uint64_t *out_block_size, uint32_t *out_ggml_type)
{
    REQUIRE(desc, "hurray_descriptor_quantization", "desc");
    REQUIRE(out_scheme, "hurray_descriptor_quantization", "out_scheme");
    REQUIRE(out_granularity, "hurray_descriptor_quantization", "out_granularity");
    REQUIRE(out_axis, "hurray_descriptor_quantization", "out_axis");
    REQUIRE(out_block_size, "hurray_descriptor_quantization", "out_block_size");
    REQUIRE(out_ggml_type, "hurray_descriptor_quantization", "out_ggml_type");
    *out_scheme = desc->scheme;
    *out_granularity = desc->granularity;
    *out_axis = desc->axis;
    *out_block_size = desc->block_size;
    *out_ggml_type = desc->ggml_type;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_part(const HurrayDescriptor *desc, uint32_t role,
                                    uint32_t *out_dtype, uint64_t *out_buffer_index,
                                    uint64_t *out_byte_offset, uint32_t *out_layout)
{
    REQUIRE(desc, "hurray_descriptor_part", "desc");
    REQUIRE(out_dtype, "hurray_descriptor_part", "out_dtype");
    REQUIRE(out_buffer_index, "hurray_descriptor_part", "out_buffer_index");
    REQUIRE(out_byte_offset, "hurray_descriptor_part", "out_byte_offset");
    REQUIRE(out_layout, "hurray_descriptor_part", "out_layout");
    if (role < HURRAY_ROLE_VALUES || role > HURRAY_ROLE_GLOBAL_SCALE) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "hurray_descriptor_part: role %u is unknown",
                            (unsigned)role);
    }
    if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
        return hurray__fail(HURRAY_ERROR_NOT_FOUND,
                            "hurray_descriptor_part: the descriptor has no %s part",
                            hurray__role_name(role));
    }
    const HurrayDescriptorPart *part = &desc->parts[role - 1];
    *out_dtype = part->dtype;
    *out_buffer_index = part->buffer_index;
    *out_byte_offset = part->byte_offset;
    *out_layout = part->layout;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_buffer_count(const HurrayDescriptor *desc, uint64_t *out)
{
    REQUIRE(desc, "hurray_descriptor_buffer_count", "desc");
    REQUIRE(out, "hurray_descriptor_buffer_count", "out");
    /* Judged by the same rule as validation, so a built descriptor with a
     * gap in its indices gets no count that encode would then refuse. */
    uint32_t count = 0;
    HURRAY__TRY(hurray__descriptor_buffer_indices(desc, &count));
    *out = count;
    return HURRAY_OK;
}
