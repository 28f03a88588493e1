/*
 * descriptor.h -- internal: the HurrayDescriptor struct and the helpers the
 * descriptor_*.c files share.
 *
 * Not part of the ABI: the struct layout may change at any time; callers
 * outside the library use the accessors in hurray.h. The rules the fields
 * must obey are in docs/impl/descriptor-encoding.md.
 */
#ifndef HURRAY_DESCRIPTOR_INTERNAL_H
#define HURRAY_DESCRIPTOR_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "hurray.h"

/* The binary form (docs/impl/descriptor-encoding.md). */
#define HURRAY__DESCRIPTOR_VERSION 1u
#define HURRAY__DESCRIPTOR_HEADER_LEN 32u
#define HURRAY__DESCRIPTOR_DIM_LEN 16u  /* one u64 dimension plus one i64 stride */
#define HURRAY__DESCRIPTOR_PART_LEN 16u

/* One role's part. Codes are bytes, as in the encoding: the setters refuse
 * unknown codes and decode reads bytes, so nothing wider ever needs storing,
 * and a byte indexes the 256-row dtype table without a bounds check. The
 * buffer index is as wide as a setter accepts, so that validation, not
 * truncation, decides whether it is legal. */
typedef struct HurrayDescriptorPart {
    uint8_t dtype;         /* HurrayDtype */
    uint8_t layout;        /* HurrayPartLayout */
    uint64_t buffer_index; /* index into the tensor's buffer list */
    uint64_t byte_offset;  /* where the part starts in that buffer */
} HurrayDescriptorPart;

/* Bit role - 1 of a part mask stands for the part of that role. */
#define HURRAY__ROLE_BIT(role) (1u << ((role) - 1))

struct HurrayDescriptor {
    uint8_t rank;
    uint8_t byte_order;  /* HurrayByteOrder */
    uint8_t packing;     /* HurrayPacking, of the values part */
    uint8_t scheme;      /* HurrayScheme */
    uint8_t granularity; /* HurrayGranularity */
    /* The parts the descriptor has (HURRAY__ROLE_BIT). Only those entries
     * of parts[] are set: decode writes no others, so nothing may read them. */
    uint8_t part_mask;
    uint32_t axis;       /* any value a setter is given; validation judges it */
    uint32_t ggml_type;  /* HurrayGgmlType, or 0; as wide as the encoding's field */
    uint64_t block_size;
    /* parts[role - 1]; the encoding lists present parts in this order. */
    HurrayDescriptorPart parts[HURRAY_MAX_PARTS];
    uint64_t *shape;  /* rank entries, in storage */
    int64_t *strides; /* rank entries, in elements, in storage after the shape */
    /* Sized for the rank, not for HURRAY_MAX_RANK: a typical descriptor then
     * stays small enough for the allocator's fast path, which matters on the
     * decode path of every exchange. */
    uint64_t storage[];
};

/* The role of the lowest bit set in a non-zero part mask: loops over the
 * parts clear that bit and go on, visiting the parts in role order. */
static inline uint32_t hurray__role_of_bit(uint32_t mask)
{
    return (uint32_t)__builtin_ctz(mask) + 1;
}

static inline uint32_t hurray__descriptor_part_count(const HurrayDescriptor *desc)
{
    return (uint32_t)__builtin_popcount(desc->part_mask);
}

/* ---- descriptor_build.c ---- */

/* One allocation holding the struct and room for rank dimensions and
 * strides (rank <= HURRAY_MAX_RANK); rank and the shape and strides
 * pointers are set, every other field is left for the caller to fill. NULL
 * when out of memory. Freed with hurray_descriptor_destroy. Inline: decode
 * calls it on every exchange. */
static inline HurrayDescriptor *hurray__descriptor_alloc(uint32_t rank)
{
    /* rank <= 64: the size cannot overflow. */
    HurrayDescriptor *desc = malloc(sizeof *desc + 2 * sizeof(uint64_t) * rank);
    if (desc == NULL) {
        return NULL;
    }
    desc->rank = (uint8_t)rank;
    desc->shape = desc->storage;
    /* int64_t and uint64_t may alias each other (C11 6.5p7). */
    desc->strides = (int64_t *)(desc->storage + rank);
    return desc;
}

/* ---- descriptor_validate.c ---- */

/* Every semantic rule of the spec, on a non-NULL descriptor; the one check
 * that decode, encode and check_buffers all run. Fails with a message that
 * names the field. */
HurrayStatus hurray__descriptor_check(const HurrayDescriptor *desc);

/* The buffer count k: the parts' buffer indices must be exactly 0 .. k-1.
 * Fails with HURRAY_ERROR_INVALID_DESCRIPTOR on a gap. */
HurrayStatus hurray__descriptor_buffer_indices(const HurrayDescriptor *desc, uint32_t *out_count);

/* "values", "scale", "zero_point", "global_scale", or "?" (for messages). */
const char *hurray__role_name(uint32_t role);

/* Bytes of the encoding: header, rank dimensions and strides, the parts. */
uint64_t hurray__descriptor_encoded_len(const HurrayDescriptor *desc);

/* ---- descriptor_reach.c: size arithmetic, all overflow-checked ---- */

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

/* Fails with HURRAY_ERROR_OVERFLOW, naming shape[dim]. */
HurrayStatus hurray__descriptor_fail_shape(uint32_t dim);

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
 * but a flag: the reach rule, judged last, refuses it. Inline: validation
 * runs it on every decode. */
static inline HurrayStatus hurray__descriptor_walk_shape(const HurrayDescriptor *desc,
                                                         HurrayShapeFacts *out)
{
    uint64_t count = 1;
    uint64_t extent = 1; /* zero dimensions counted as one */
    /* Every step is non-negative, so the sum of all of them overflows
     * exactly when the backward or forward sum, or the two together,
     * would: one checked sum covers all three. */
    uint64_t span = 0;
    uint64_t backward = 0;
    int overflow = 0;
    for (uint32_t k = 0; k < desc->rank; k++) {
        uint64_t dim = desc->shape[k];
        int64_t stride = desc->strides[k];
        if (__builtin_mul_overflow(extent, dim == 0 ? 1 : dim, &extent) || extent > INT64_MAX) {
            return hurray__descriptor_fail_shape(k);
        }
        count *= dim; /* cannot overflow: bounded by extent */
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

/* 1 when desc->strides are exactly the row-major contiguous ones. Needs a
 * shape hurray__descriptor_walk_shape accepted. */
int hurray__descriptor_is_row_major(const HurrayDescriptor *desc);

/* The last rule of validation: the reach in bits of every part fits 63
 * bits (HURRAY_ERROR_OVERFLOW otherwise). Needs the codes and cross-field
 * rules to hold, and the shape hurray__descriptor_walk_shape gave. */
HurrayStatus hurray__descriptor_check_reach(const HurrayDescriptor *desc,
                                            const HurrayShapeFacts *shape);

#endif /* HURRAY_DESCRIPTOR_INTERNAL_H */
