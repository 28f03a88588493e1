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

#include "hurray.h"

/* The binary form (docs/impl/descriptor-encoding.md). */
#define HURRAY__DESCRIPTOR_VERSION 1u
#define HURRAY__DESCRIPTOR_HEADER_LEN 32u
#define HURRAY__DESCRIPTOR_DIM_LEN 16u  /* one u64 dimension plus one i64 stride */
#define HURRAY__DESCRIPTOR_PART_LEN 16u

/* One role's part. Fields are wide enough to hold anything a setter
 * accepts, so that validation, not truncation, decides what is legal. */
typedef struct HurrayDescriptorPart {
    uint32_t present;      /* 0: the descriptor has no part for this role */
    uint32_t dtype;        /* HurrayDtype */
    uint32_t layout;       /* HurrayPartLayout */
    uint64_t buffer_index; /* index into the tensor's buffer list */
    uint64_t byte_offset;  /* where the part starts in that buffer */
} HurrayDescriptorPart;

struct HurrayDescriptor {
    uint32_t rank;
    uint32_t byte_order;  /* HurrayByteOrder */
    uint32_t packing;     /* HurrayPacking, of the values part */
    uint32_t scheme;      /* HurrayScheme */
    uint32_t granularity; /* HurrayGranularity */
    uint32_t axis;
    uint32_t ggml_type;   /* HurrayGgmlType, or 0 */
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

/* ---- descriptor_build.c ---- */

/* One allocation holding the struct and room for rank dimensions and
 * strides (rank <= HURRAY_MAX_RANK); the shape and strides pointers are set,
 * every other field is left for the caller to fill. NULL when out of
 * memory. Freed with hurray_descriptor_destroy. */
HurrayDescriptor *hurray__descriptor_alloc(uint32_t rank);

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

uint32_t hurray__descriptor_part_count(const HurrayDescriptor *desc);
/* Bytes of the encoding: header, rank dimensions and strides, the parts. */
uint64_t hurray__descriptor_encoded_len(const HurrayDescriptor *desc);

/* ---- descriptor_reach.c: size arithmetic, all overflow-checked ---- */

/* The element count. Fails with HURRAY_ERROR_OVERFLOW when the product of
 * the dimensions, a zero dimension counted as one, exceeds INT64_MAX: that
 * product bounds the row-major strides, which must stay representable even
 * for an empty tensor. */
HurrayStatus hurray__descriptor_element_count(const HurrayDescriptor *desc, uint64_t *out);

/* Row-major contiguous strides for desc->shape into out[0 .. rank-1]; a
 * zero dimension is stepped over as if it were one (as numpy does). Fails
 * like hurray__descriptor_element_count. */
HurrayStatus hurray__descriptor_row_major_strides(const HurrayDescriptor *desc, int64_t *out);

/* 1 when desc->strides are exactly the row-major contiguous ones. Needs a
 * shape hurray__descriptor_element_count accepted. */
int hurray__descriptor_is_row_major(const HurrayDescriptor *desc);

/* The bytes the part of this role can reach, relative to its byte offset:
 * [byte_offset - *out_before, byte_offset + *out_after). Both are zero for a
 * tensor with no elements. element_count is what
 * hurray__descriptor_element_count gave (passed in so that it is counted
 * once per validation, not once per part). Needs a descriptor whose codes
 * and cross-field rules already hold; fails with HURRAY_ERROR_OVERFLOW when
 * the reach in bits does not fit 63 bits. */
HurrayStatus hurray__descriptor_part_reach(const HurrayDescriptor *desc, uint32_t role,
                                           uint64_t element_count, uint64_t *out_before,
                                           uint64_t *out_after);

#endif /* HURRAY_DESCRIPTOR_INTERNAL_H */
