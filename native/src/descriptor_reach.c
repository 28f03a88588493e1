/*
 * descriptor_reach.c -- the size arithmetic of a descriptor: element counts,
 * row-major strides, the bytes each part can reach, and the proof that
 * those bytes lie inside the buffers (hurray_descriptor_check_buffers).
 *
 * Every product and sum goes through __builtin_*_overflow: the fields come
 * from untrusted bytes, and a wrapped size would turn an out-of-bounds
 * layout into one that looks fine.
 */
#include <inttypes.h>
#include <stddef.h>

#include "descriptor.h"
#include "dtype.h"
#include "status.h"

HurrayStatus hurray__descriptor_fail_shape(uint32_t dim)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW, "descriptor: shape[%u]: element count overflows 63 bits",
                        (unsigned)dim);
}

HurrayStatus hurray__descriptor_row_major_strides(const HurrayDescriptor *desc, int64_t *out)
{
    uint64_t step = 1;
    for (uint32_t k = desc->rank; k-- > 0;) {
        out[k] = (int64_t)step;
        uint64_t dim = desc->shape[k];
        if (__builtin_mul_overflow(step, dim == 0 ? 1 : dim, &step) || step > INT64_MAX) {
            return hurray__descriptor_fail_shape(k);
        }
    }
    return HURRAY_OK;
}

int hurray__descriptor_is_row_major(const HurrayDescriptor *desc)
{
    int64_t expected[HURRAY_MAX_RANK];
    if (hurray__descriptor_row_major_strides(desc, expected) != HURRAY_OK) {
        return 0;
    }
    for (uint32_t k = 0; k < desc->rank; k++) {
        if (desc->strides[k] != expected[k]) {
            return 0;
        }
    }
    return 1;
}

static HurrayStatus fail_reach(uint32_t role)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW, "descriptor: part %s: reach in bits overflows 63 bits",
                        hurray__role_name(role));
}

static uint64_t bits_to_bytes(uint64_t bits)
{
    return bits / 8 + (bits % 8 != 0);
}

/* The values part of a strided tensor with elements: its span, from the
 * shape walk, in bits of storage width. */
static inline HurrayStatus values_reach(const HurrayDescriptor *desc,
                                        const HurrayShapeFacts *shape, uint64_t *out_before,
                                        uint64_t *out_after)
{
    const HurrayDescriptorPart *values = &desc->parts[HURRAY_ROLE_VALUES - 1];
    uint64_t width = desc->packing == HURRAY_PACKING_PADDED ? 8 : hurray__dtype_bits(values->dtype);
    uint64_t span_bits;
    if (shape->span_overflows || __builtin_mul_overflow(shape->span, width, &span_bits) ||
        span_bits > INT64_MAX) {
        return fail_reach(HURRAY_ROLE_VALUES);
    }
    /* Both below fit: each is at most span_bits. */
    uint64_t forward = shape->span - 1 - shape->backward;
    *out_before = bits_to_bytes(shape->backward * width);
    *out_after = bits_to_bytes((forward + 1) * width);
    return HURRAY_OK;
}

/* count units of unit_bytes each, back to back from the byte offset; the
 * reach in bits, eight times the bytes, must fit 63 bits. */
static inline HurrayStatus packed_reach(uint32_t role, uint64_t count, uint64_t unit_bytes,
                                        uint64_t *out_after)
{
    uint64_t bytes;
    if (__builtin_mul_overflow(count, unit_bytes, &bytes) || bytes > INT64_MAX / 8) {
        return fail_reach(role);
    }
    *out_after = bytes;
    return HURRAY_OK;
}

/* GGML values: whole blocks back to back; the last dimension is a multiple
 * of the block's element count, so the division is exact. */
static HurrayStatus ggml_reach(const HurrayDescriptor *desc, uint64_t element_count,
                               uint64_t *out_after)
{
    uint64_t block_elements = 0, block_bytes = 0;
    if (!hurray__ggml_block(desc->ggml_type, &block_elements, &block_bytes)) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: ggml type: %u is not a block format",
                            (unsigned)desc->ggml_type);
    }
    return packed_reach(HURRAY_ROLE_VALUES, element_count / block_elements, block_bytes, out_after);
}

/* A scale matrix of rows x cols padded to whole 128 x 4 tiles (layout
 * swizzled_128x4, which validation allows only with rank 2, axis 1 and
 * per-block granularity). */
static HurrayStatus swizzled_count(const HurrayDescriptor *desc, uint32_t role, uint64_t *out)
{
    uint64_t rows = desc->shape[0];
    uint64_t cols = desc->shape[1] / desc->block_size;
    uint64_t padded_rows, padded_cols;
    if (__builtin_add_overflow(rows, (128 - rows % 128) % 128, &padded_rows) ||
        __builtin_add_overflow(cols, (4 - cols % 4) % 4, &padded_cols) ||
        __builtin_mul_overflow(padded_rows, padded_cols, out)) {
        return fail_reach(role);
    }
    return HURRAY_OK;
}

/* A parameter part (scale, zero point, global scale): row-major and
 * contiguous, one element per tensor, per index of the axis, or per block. */
static inline HurrayStatus parameter_reach(const HurrayDescriptor *desc, uint32_t role,
                                           uint64_t element_count, uint64_t *out_after)
{
    const HurrayDescriptorPart *part = &desc->parts[role - 1];
    uint64_t count = 1; /* per tensor, and the global scale */
    if (part->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        HurrayStatus status = swizzled_count(desc, role, &count);
        if (status != HURRAY_OK) {
            return status;
        }
    } else if (role != HURRAY_ROLE_GLOBAL_SCALE) {
        if (desc->granularity == HURRAY_GRANULARITY_PER_AXIS) {
            count = desc->shape[desc->axis];
        } else if (desc->granularity == HURRAY_GRANULARITY_PER_BLOCK) {
            /* block_size divides shape[axis], so this is the product of the
             * shape with that dimension divided. */
            count = element_count / desc->block_size;
        }
    }
    return packed_reach(role, count, hurray__dtype_bits(part->dtype) / 8, out_after);
}

/* The bytes the part of this role can reach, relative to its byte offset:
 * [byte_offset - *out_before, byte_offset + *out_after). Both are zero for a
 * tensor with no elements. Needs a descriptor whose codes and cross-field
 * rules already hold; fails with HURRAY_ERROR_OVERFLOW when the reach in
 * bits does not fit 63 bits. */
static inline HurrayStatus part_reach(const HurrayDescriptor *desc, uint32_t role,
                                      const HurrayShapeFacts *shape, uint64_t *out_before,
                                      uint64_t *out_after)
{
    *out_before = 0;
    *out_after = 0;
    if (shape->element_count == 0) {
        return HURRAY_OK; /* no elements reach no bytes */
    }
    if (role != HURRAY_ROLE_VALUES) {
        return parameter_reach(desc, role, shape->element_count, out_after);
    }
    if (desc->scheme == HURRAY_SCHEME_GGML) {
        return ggml_reach(desc, shape->element_count, out_after);
    }
    return values_reach(desc, shape, out_before, out_after);
}

HurrayStatus hurray__descriptor_check_reach(const HurrayDescriptor *desc,
                                            const HurrayShapeFacts *shape)
{
#pragma GCC unroll 4
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            continue;
        }
        uint64_t before, after; /* what check_buffers needs; the rule is that they exist */
        HurrayStatus status = part_reach(desc, role, shape, &before, &after);
        if (status != HURRAY_OK) {
            return status;
        }
    }
    return HURRAY_OK;
}

/* One part against its buffer: the span [byte_offset - before, byte_offset
 * + after) must lie inside it. */
static HurrayStatus check_part_fits(const HurrayBufferList *list, uint32_t role,
                                    const HurrayDescriptorPart *part, uint64_t before,
                                    uint64_t after)
{
    const HurrayBuffer *buffer = NULL;
    void *data = NULL;
    uint64_t len = 0;
    HurrayStatus status = hurray_buffer_list_get(list, part->buffer_index, &buffer);
    if (status == HURRAY_OK) {
        status = hurray_buffer_data(buffer, &data, &len);
    }
    if (status != HURRAY_OK) {
        return status;
    }
    if (before > part->byte_offset) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "descriptor: part %s: negative strides reach %" PRIu64
                            " bytes back from byte offset %" PRIu64
                            ", before the start of buffer %" PRIu64,
                            hurray__role_name(role), before, part->byte_offset,
                            part->buffer_index);
    }
    uint64_t end;
    if (__builtin_add_overflow(part->byte_offset, after, &end) || end > len) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "descriptor: part %s: reaches %" PRIu64
                            " bytes from byte offset %" PRIu64 " of buffer %" PRIu64
                            ", which holds %" PRIu64 " bytes",
                            hurray__role_name(role), after, part->byte_offset,
                            part->buffer_index, len);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_check_buffers(const HurrayDescriptor *desc,
                                             const HurrayBufferList *list)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_check_buffers: desc is NULL");
    }
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_descriptor_check_buffers: list is NULL");
    }
    /* A built descriptor may never have been validated; the reach below
     * is only meaningful for one that is. */
    HurrayStatus status = hurray__descriptor_check(desc);
    if (status != HURRAY_OK) {
        return status;
    }
    uint32_t buffer_count = 0;
    status = hurray__descriptor_buffer_indices(desc, &buffer_count);
    if (status != HURRAY_OK) {
        return status;
    }
    HurrayShapeFacts shape = {0};
    status = hurray__descriptor_walk_shape(desc, &shape);
    if (status != HURRAY_OK) {
        return status;
    }
    uint64_t list_len = 0;
    status = hurray_buffer_list_len(list, &list_len);
    if (status != HURRAY_OK) {
        return status;
    }
    if (list_len != buffer_count) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "descriptor: the buffer list holds %" PRIu64
                            " buffers but the descriptor uses %u",
                            list_len, (unsigned)buffer_count);
    }
    for (uint32_t parts = desc->part_mask; parts != 0; parts &= parts - 1) {
        uint32_t role = hurray__role_of_bit(parts);
        uint64_t before = 0, after = 0;
        status = part_reach(desc, role, &shape, &before, &after);
        if (status != HURRAY_OK) {
            return status;
        }
        if (before == 0 && after == 0) {
            continue; /* no elements, no bytes */
        }
        status = check_part_fits(list, role, &desc->parts[role - 1], before, after);
        if (status != HURRAY_OK) {
            return status;
        }
    }
    return HURRAY_OK;
}
