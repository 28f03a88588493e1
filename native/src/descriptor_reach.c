/*
 * descriptor_reach.c -- the size arithmetic of a descriptor: element counts,
 * row-major strides and the bytes each part can reach (descriptor_reach.h).
 * The proof that those bytes lie inside the buffers is
 * descriptor_check_buffers.c.
 *
 * Every product and sum goes through __builtin_*_overflow: the fields come
 * from untrusted bytes, and a wrapped size would turn an out-of-bounds
 * layout into one that looks fine.
 */
#include <inttypes.h>
#include <stddef.h>

#include "descriptor_reach.h"
#include "dtype.h"
#include "layout.h"
#include "status.h"

HurrayStatus hurray__descriptor_fail_shape(uint32_t dim)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW,
                        "descriptor: shape[%u]: element count overflows 63 bits", (unsigned)dim);
}

HurrayStatus hurray__descriptor_row_major_strides(const HurrayDescriptor *desc, int64_t *out)
{
    uint32_t dim = 0;
    if (!hurray__row_major_strides(desc->rank, desc->shape, out, &dim)) {
        return hurray__descriptor_fail_shape(dim);
    }
    return HURRAY_OK;
}

HurrayStatus hurray__descriptor_fail_reach(uint32_t role)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW,
                        "descriptor: part %s: reach in bits overflows 63 bits",
                        hurray__role_name(role));
}

HurrayStatus hurray__descriptor_ggml_reach(const HurrayDescriptor *desc, uint64_t element_count,
                                           uint64_t *out_after)
{
    uint64_t block_elements = 0, block_bytes = 0;
    if (!hurray__ggml_block(desc->ggml_type, &block_elements, &block_bytes)) {
        return hurray__fail(HURRAY_ERROR_INVALID_DESCRIPTOR,
                            "descriptor: ggml type: %u is not a block format",
                            (unsigned)desc->ggml_type);
    }
    /* The last dimension is a multiple of the block's element count, so
     * the division is exact. */
    return hurray__descriptor_packed_reach(HURRAY_ROLE_VALUES, element_count / block_elements,
                                           8 * block_bytes, out_after);
}

HurrayStatus hurray__descriptor_swizzled_reach(const HurrayDescriptor *desc, uint32_t role,
                                               uint64_t *out_after)
{
    uint64_t rows = desc->shape[0];
    uint64_t cols = desc->shape[1] / desc->block_size;
    uint64_t count;
    if (!hurray__swizzled_128x4_count(rows, cols, &count)) {
        return hurray__descriptor_fail_reach(role);
    }
    return hurray__descriptor_packed_reach(role, count,
                                           hurray__dtype_bits(desc->parts[role - 1].dtype),
                                           out_after);
}
