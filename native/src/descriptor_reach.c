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
#include "layout.h"
#include "status.h"

HurrayStatus hurray__descriptor_fail_shape(uint32_t dim)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW, "descriptor: shape[%u]: element count overflows 63 bits",
                        (unsigned)dim);
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
    return hurray__fail(HURRAY_ERROR_OVERFLOW, "descriptor: part %s: reach in bits overflows 63 bits",
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
    /* A built descriptor may never have been validated; the reach is only
     * meaningful for one that is, and the check computes it on the way. */
    HurrayDescriptorFacts facts;
    HurrayStatus status = hurray__descriptor_check_facts(desc, &facts);
    if (status != HURRAY_OK) {
        return status;
    }
    uint64_t list_len = 0;
    status = hurray_buffer_list_len(list, &list_len);
    if (status != HURRAY_OK) {
        return status;
    }
    if (list_len != facts.buffer_count) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "descriptor: the buffer list holds %" PRIu64
                            " buffers but the descriptor uses %u",
                            list_len, (unsigned)facts.buffer_count);
    }
    for (uint32_t parts = desc->part_mask; parts != 0; parts &= parts - 1) {
        uint32_t role = hurray__role_of_bit(parts);
        uint64_t before = facts.before[role - 1], after = facts.after[role - 1];
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
