/*
 * descriptor_reach.h -- internal: the size arithmetic of a descriptor,
 * all overflow-checked (descriptor_reach.c).
 *
 * Every product and sum goes through __builtin_*_overflow: the fields come
 * from untrusted bytes, and a wrapped size would turn an out-of-bounds
 * layout into one that looks fine. What validation runs on every decode is
 * inline here, so that it compiles into the validation itself; the rest is
 * in descriptor_reach.c. Includes only descriptor.h and the leaf headers.
 */
#ifndef HURRAY_DESCRIPTOR_REACH_INTERNAL_H
#define HURRAY_DESCRIPTOR_REACH_INTERNAL_H

#include <stdint.h>

#include "descriptor.h"
#include "dtype.h"
#include "hurray.h"
#include "status.h"

/* HurrayDescriptorFacts, what a successful check computed, is in
 * descriptor.h: the descriptor keeps them. */

/* Fail with HURRAY_ERROR_OVERFLOW, naming shape[dim] or the part's role. */
HurrayStatus hurray__descriptor_fail_shape(uint32_t dim);
HurrayStatus hurray__descriptor_fail_reach(uint32_t role);

/* What one walk over the dimensions gives. */
typedef struct HurrayShapeFacts {
    uint64_t element_count;
    /* For a strided values part with elements: the elements from the lowest
     * to the highest it can reach (as numpy bounds an array), and how many
     * of them lie below its first element, through negative strides. Valid
     * only when element_count > 0 and span_overflows is 0. */
    uint64_t span;
    uint64_t backward;
    int span_overflows;
} HurrayShapeFacts;

/* |value| as an unsigned number; -(INT64_MIN) does not exist as int64_t. */
static inline uint64_t hurray__magnitude(int64_t value)
{
    return value < 0 ? (uint64_t)(-(value + 1)) + 1 : (uint64_t)value;
}

/* The element count and the values part's span, from one pass over the
 * dimensions. Fails with HURRAY_ERROR_OVERFLOW when the product of the
 * dimensions, a zero dimension counted as one, exceeds INT64_MAX: that
 * product bounds the row-major strides, which must stay representable even
 * for an empty tensor. A span too large for 64 bits is not a failure here
 * but a flag: the reach rule, judged last, refuses it. */
static inline HurrayStatus hurray__descriptor_walk_shape(const HurrayDescriptor *desc,
                                                         HurrayShapeFacts *out)
{
    uint64_t count = 1, extent = 1, span = 0, backward = 0;
    int overflow = 0;
    for (uint32_t k = 0; k < desc->rank; k++) {
        uint64_t dim = desc->shape[k];
        int64_t stride = desc->strides[k];
        /* extent counts a zero dimension as one. */
        if (__builtin_mul_overflow(extent, dim == 0 ? 1 : dim, &extent) || extent > INT64_MAX) {
            return hurray__descriptor_fail_shape(k);
        }
        count *= dim; /* cannot overflow: bounded by extent */
        /* Every step is non-negative, so the sum of all of them overflows
         * exactly when the backward or forward sum, or the two together,
         * would: one checked sum covers all three. */
        uint64_t step; /* meaningless for dim 0, but then there are no elements */
        if (__builtin_mul_overflow(hurray__magnitude(stride), dim - 1, &step) ||
            __builtin_add_overflow(span, step, &span)) {
            overflow = 1;
        }
        backward += stride < 0 ? step : 0; /* at most span */
    }
    if (__builtin_add_overflow(span, 1, &span)) {
        overflow = 1;
    }
    out->element_count = count;
    out->span = span;
    out->backward = backward;
    out->span_overflows = overflow;
    return HURRAY_OK;
}

/* Row-major contiguous strides for desc->shape into out[0 .. rank-1]; a
 * zero dimension is stepped over as if it were one (as numpy does). Fails
 * like hurray__descriptor_walk_shape. */
HurrayStatus hurray__descriptor_row_major_strides(const HurrayDescriptor *desc, int64_t *out);

/* 1 when desc->strides are exactly the row-major contiguous ones (a zero
 * dimension steps as one). Needs a shape hurray__descriptor_walk_shape
 * accepted: then no product here can overflow, and none is checked. Inline,
 * compared as it goes: GGML descriptors take it on every decode. */
static inline int hurray__descriptor_is_row_major(const HurrayDescriptor *desc)
{
    uint64_t step = 1;
    for (uint32_t k = desc->rank; k-- > 0;) {
        if ((uint64_t)desc->strides[k] != step) {
            return 0;
        }
        uint64_t dim = desc->shape[k];
        step *= dim == 0 ? 1 : dim;
    }
    return 1;
}

static inline uint64_t hurray__bits_to_bytes(uint64_t bits)
{
    return bits / 8 + (bits % 8 != 0);
}

/* Every unit a part's reach counts in is at most UINT8_MAX bits wide (the
 * dtype table keeps widths in a byte; padded storage is 8 bits), so up to
 * this many units the reach fits 63 bits whatever the dtype. Validation,
 * which needs only that it fits, then has no product to check. */
#define HURRAY__REACH_ALWAYS_FITS ((uint64_t)INT64_MAX / UINT8_MAX)

/* The storage width of the values part's elements, in bits. */
static inline uint64_t hurray__descriptor_values_width(const HurrayDescriptor *desc)
{
    if (desc->packing == HURRAY_PACKING_PADDED) {
        return 8;
    }
    return hurray__dtype_bits(desc->parts[HURRAY_ROLE_VALUES - 1].dtype);
}

/* The values part of a strided tensor with elements: its span, from the
 * shape walk, in bits of storage width. The width is looked up where it is
 * used, so that validation, which keeps none of the outputs, skips it for
 * a span that fits whatever the width. */
static inline HurrayStatus hurray__descriptor_values_reach(const HurrayDescriptor *desc,
                                                           const HurrayShapeFacts *shape,
                                                           uint64_t *out_before,
                                                           uint64_t *out_after)
{
    uint64_t span_bits;
    if (shape->span_overflows ||
        (shape->span > HURRAY__REACH_ALWAYS_FITS &&
         (__builtin_mul_overflow(shape->span, hurray__descriptor_values_width(desc), &span_bits) ||
          span_bits > INT64_MAX))) {
        return hurray__descriptor_fail_reach(HURRAY_ROLE_VALUES);
    }
    /* Both below fit: each is at most span * width. */
    uint64_t width = hurray__descriptor_values_width(desc);
    uint64_t forward = shape->span - 1 - shape->backward;
    *out_before = hurray__bits_to_bytes(shape->backward * width);
    *out_after = hurray__bits_to_bytes((forward + 1) * width);
    return HURRAY_OK;
}

/* count units of unit_bits each (a whole number of bytes), back to back
 * from the byte offset; the reach in bits must fit 63 bits. */
static inline HurrayStatus hurray__descriptor_packed_reach(uint32_t role, uint64_t count,
                                                           uint64_t unit_bits, uint64_t *out_after)
{
    uint64_t bits;
    if (__builtin_mul_overflow(count, unit_bits, &bits) || bits > INT64_MAX) {
        return hurray__descriptor_fail_reach(role);
    }
    *out_after = bits / 8;
    return HURRAY_OK;
}

/* GGML values: whole blocks back to back. */
HurrayStatus hurray__descriptor_ggml_reach(const HurrayDescriptor *desc, uint64_t element_count,
                                           uint64_t *out_after);

/* A scale laid out swizzled_128x4 (which validation allows only with rank
 * 2, axis 1 and per-block granularity): a matrix of rows x cols scales
 * padded to whole 128 x 4 tiles. */
HurrayStatus hurray__descriptor_swizzled_reach(const HurrayDescriptor *desc, uint32_t role,
                                               uint64_t *out_after);

/* How many elements a parameter part (scale, zero point, global scale)
 * holds, unless it is swizzled: row-major and contiguous, one per tensor,
 * per index of the axis, or per block. */
static inline uint64_t hurray__descriptor_parameter_count(const HurrayDescriptor *desc,
                                                          uint32_t role, uint64_t element_count)
{
    if (role == HURRAY_ROLE_GLOBAL_SCALE) {
        return 1;
    }
    switch (desc->granularity) {
    case HURRAY_GRANULARITY_PER_AXIS: return desc->shape[desc->axis];
    case HURRAY_GRANULARITY_PER_BLOCK:
        /* block_size divides shape[axis], so this is the product of the
         * shape with that dimension divided. */
        return element_count / desc->block_size;
    default: /* per tensor */ return 1;
    }
}

static inline HurrayStatus hurray__descriptor_parameter_reach(const HurrayDescriptor *desc,
                                                              uint32_t role, uint64_t element_count,
                                                              uint64_t *out_after)
{
    const HurrayDescriptorPart *part = &desc->parts[role - 1];
    if (part->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4 &&
        desc->granularity == HURRAY_GRANULARITY_PER_BLOCK && role != HURRAY_ROLE_GLOBAL_SCALE) {
        uint64_t bytes = 0; /* its own: out_after need not live in memory */
        HurrayStatus status = hurray__descriptor_swizzled_reach(desc, role, &bytes);
        *out_after = bytes;
        return status;
    }
    /* Validation made the parameter parts' elements whole bytes. */
    uint64_t unit_bits = hurray__dtype_bits(part->dtype);
    /* At most one parameter per element (there are elements, so no
     * dimension is zero): a tensor of up to HURRAY__REACH_ALWAYS_FITS
     * elements needs no checked product, and validation, which keeps no
     * outputs, not even the count. */
    if (element_count > HURRAY__REACH_ALWAYS_FITS) {
        return hurray__descriptor_packed_reach(role,
                                               hurray__descriptor_parameter_count(desc, role,
                                                                                  element_count),
                                               unit_bits, out_after);
    }
    *out_after = hurray__descriptor_parameter_count(desc, role, element_count) * unit_bits / 8;
    return HURRAY_OK;
}

/* The bytes the part of this role can reach, relative to its byte offset:
 * [byte_offset - *out_before, byte_offset + *out_after). Both are zero for a
 * tensor with no elements. Needs a descriptor whose codes and cross-field
 * rules already hold; fails with HURRAY_ERROR_OVERFLOW when the reach in
 * bits does not fit 63 bits. */
static inline HurrayStatus hurray__descriptor_part_reach(const HurrayDescriptor *desc,
                                                         uint32_t role,
                                                         const HurrayShapeFacts *shape,
                                                         uint64_t *out_before, uint64_t *out_after)
{
    *out_before = 0;
    *out_after = 0;
    if (shape->element_count == 0) {
        return HURRAY_OK; /* no elements reach no bytes */
    }
    if (role != HURRAY_ROLE_VALUES) {
        return hurray__descriptor_parameter_reach(desc, role, shape->element_count, out_after);
    }
    if (desc->scheme == HURRAY_SCHEME_GGML) {
        uint64_t bytes = 0; /* its own: out_after need not live in memory */
        HurrayStatus status = hurray__descriptor_ggml_reach(desc, shape->element_count, &bytes);
        *out_after = bytes;
        return status;
    }
    return hurray__descriptor_values_reach(desc, shape, out_before, out_after);
}

#endif /* HURRAY_DESCRIPTOR_REACH_INTERNAL_H */
