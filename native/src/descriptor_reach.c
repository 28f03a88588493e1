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

static uint64_t magnitude(int64_t value)
{
    /* -(INT64_MIN) does not exist as int64_t; step around it. */
    return value < 0 ? (uint64_t)(-(value + 1)) + 1 : (uint64_t)value;
}

/* The values part of a strided tensor with count > 0 elements: the lowest
 * and highest element it can touch, as a bounding span (as numpy does). */
static HurrayStatus values_reach(const HurrayDescriptor *desc, uint64_t *out_before,
                                 uint64_t *out_after)
{
    const HurrayDescriptorPart *values = &desc->parts[HURRAY_ROLE_VALUES - 1];
    uint64_t width = desc->packing == HURRAY_PACKING_PADDED ? 8 : hurray__dtype_bits(values->dtype);
    /* Every step is non-negative, so the sum of all of them overflows
     * exactly when the backward or forward sum, or the two together, would:
     * one checked sum covers all three. */
    uint64_t span = 0;     /* elements between the lowest and the highest */
    uint64_t backward = 0; /* those below the first, via negative strides */
    for (uint32_t k = 0; k < desc->rank; k++) {
        uint64_t step;
        if (__builtin_mul_overflow(magnitude(desc->strides[k]), desc->shape[k] - 1, &step) ||
            __builtin_add_overflow(span, step, &span)) {
            return fail_reach(HURRAY_ROLE_VALUES);
        }
        backward += desc->strides[k] < 0 ? step : 0; /* at most span */
    }
    uint64_t span_bits;
    if (__builtin_add_overflow(span, 1, &span) ||
        __builtin_mul_overflow(span, width, &span_bits) || span_bits > INT64_MAX) {
        return fail_reach(HURRAY_ROLE_VALUES);
    }
    /* Both below fit: each is at most span_bits. */
    uint64_t forward = span - 1 - backward;
    *out_before = bits_to_bytes(backward * width);
    *out_after = bits_to_bytes((forward + 1) * width);
    return HURRAY_OK;
}

/* How many elements a parameter part holds. */
static HurrayStatus parameter_count(const HurrayDescriptor *desc, uint32_t role,
                                    uint64_t element_count, uint64_t *out)
{
    const HurrayDescriptorPart *part = &desc->parts[role - 1];
    if (role == HURRAY_ROLE_GLOBAL_SCALE) {
        *out = 1;
        return HURRAY_OK;
    }
    switch (desc->granularity) {
    case HURRAY_GRANULARITY_PER_AXIS:
        *out = desc->shape[desc->axis];
        return HURRAY_OK;
    case HURRAY_GRANULARITY_PER_BLOCK:
        if (part->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
            /* rank 2, axis 1: a rows x cols scale matrix padded to whole
             * 128 x 4 tiles. */
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
        /* block_size divides shape[axis], so this is the product of the
         * shape with that dimension divided. */
        *out = element_count / desc->block_size;
        return HURRAY_OK;
    default: /* per tensor */
        *out = 1;
        return HURRAY_OK;
    }
}

/* The bytes the part of this role can reach, relative to its byte offset:
 * [byte_offset - *out_before, byte_offset + *out_after). Both are zero for a
 * tensor with no elements. Needs a descriptor whose codes and cross-field
 * rules already hold; fails with HURRAY_ERROR_OVERFLOW when the reach in
 * bits does not fit 63 bits. */
static inline __attribute__((always_inline)) HurrayStatus part_reach(const HurrayDescriptor *desc, uint32_t role, uint64_t element_count,
                               uint64_t *out_before, uint64_t *out_after)
{
    HurrayStatus status;
    if (element_count == 0) {
        *out_before = 0;
        *out_after = 0;
        return HURRAY_OK;
    }
    if (role == HURRAY_ROLE_VALUES && desc->scheme != HURRAY_SCHEME_GGML) {
        return values_reach(desc, out_before, out_after);
    }
    uint64_t count = 0, unit_bytes = 0;
    if (role == HURRAY_ROLE_VALUES) {
        /* GGML: whole blocks back to back; the last dimension is a multiple
         * of the block's element count, so the division is exact. */
        uint64_t block_elements = 0;
        if (!hurray__ggml_block(desc->ggml_type, &block_elements, &unit_bytes)) {
            return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                                "descriptor: ggml type: %u is not a block format",
                                (unsigned)desc->ggml_type);
        }
        count = element_count / block_elements;
    } else {
        status = parameter_count(desc, role, element_count, &count);
        if (status != HURRAY_OK) {
            return status;
        }
        unit_bytes = hurray__dtype_bits(desc->parts[role - 1].dtype) / 8;
    }
    uint64_t bytes, bits;
    if (__builtin_mul_overflow(count, unit_bytes, &bytes) ||
        __builtin_mul_overflow(bytes, 8, &bits) || bits > INT64_MAX) {
        return fail_reach(role);
    }
    *out_before = 0;
    *out_after = bytes;
    return HURRAY_OK;
}

HurrayStatus hurray__descriptor_check_reach(const HurrayDescriptor *desc, uint64_t element_count)
{
    if (element_count == 0) {
        return HURRAY_OK; /* no elements reach no bytes */
    }
    for (uint32_t parts = desc->part_mask; parts != 0; parts &= parts - 1) {
        uint64_t before, after;
        HurrayStatus status = part_reach(desc, hurray__role_of_bit(parts), element_count, &before, &after);
        if (status != HURRAY_OK) {
            return status;
        }
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
    uint64_t element_count = 0;
    status = hurray__descriptor_element_count(desc, &element_count);
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
        const HurrayDescriptorPart *part = &desc->parts[role - 1];
        uint64_t before = 0, after = 0;
        status = part_reach(desc, role, element_count, &before, &after);
        if (status != HURRAY_OK) {
            return status;
        }
        if (before == 0 && after == 0) {
            continue; /* no elements, no bytes */
        }
        const HurrayBuffer *buffer = NULL;
        void *data = NULL;
        uint64_t len = 0;
        status = hurray_buffer_list_get(list, part->buffer_index, &buffer);
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
    }
    return HURRAY_OK;
}
