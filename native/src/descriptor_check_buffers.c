/*
 * descriptor_check_buffers.c -- hurray_descriptor_check_buffers: the proof
 * that every byte a descriptor's parts can reach lies inside the buffer
 * list. It runs the descriptor check (descriptor_validate.h) and takes the
 * reaches that check computed on the way, instead of working them out again.
 */
#include <inttypes.h>
#include <stddef.h>

#include "descriptor_graph.h"
#include "descriptor_validate.h"
#include "status.h"

/* One part against its buffer: the span [byte_offset - before, byte_offset
 * + after) must lie inside it. */
static HurrayStatus check_part_fits(const HurrayBufferList *list, uint32_t role,
                                    const HurrayDescriptorPart *part, uint64_t before,
                                    uint64_t after)
{
    const HurrayBuffer *buffer = NULL;
    void *data = NULL;
    uint64_t len = 0;
    HURRAY__TRY(hurray_buffer_list_get(list, part->buffer_index, &buffer));
    HURRAY__TRY(hurray_buffer_data(buffer, &data, &len));
    if (before > part->byte_offset) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "descriptor: part %s: negative strides reach %" PRIu64
                            " bytes back from byte offset %" PRIu64
                            ", before the start of buffer %" PRIu64,
                            hurray__role_name(role), before, part->byte_offset, part->buffer_index);
    }
    uint64_t end;
    if (__builtin_add_overflow(part->byte_offset, after, &end) || end > len) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "descriptor: part %s: reaches %" PRIu64
                            " bytes from byte offset %" PRIu64 " of buffer %" PRIu64
                            ", which holds %" PRIu64 " bytes",
                            hurray__role_name(role), after, part->byte_offset, part->buffer_index,
                            len);
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
    HURRAY__TRY(hurray__descriptor_check_facts(desc, &facts));
    return hurray__descriptor_check_buffers_with(desc, list, &facts);
}

HurrayStatus hurray__descriptor_check_buffers_with(const HurrayDescriptor *desc,
                                                   const HurrayBufferList *list,
                                                   const HurrayDescriptorFacts *facts)
{
    if (hurray__descriptor_graph(desc) != NULL) {
        return hurray__graph_check_buffers(desc, list); /* descriptor_graph_reach.c */
    }
    uint64_t list_len = 0;
    HURRAY__TRY(hurray_buffer_list_len(list, &list_len));
    if (list_len != facts->buffer_count) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "descriptor: the buffer list holds %" PRIu64
                            " buffers but the descriptor uses %u",
                            list_len, (unsigned)facts->buffer_count);
    }
    for (uint32_t parts = desc->part_mask; parts != 0; parts &= parts - 1) {
        uint32_t role = hurray__role_of_bit(parts);
        uint64_t before = facts->before[role - 1], after = facts->after[role - 1];
        if (before == 0 && after == 0) {
            continue; /* no elements, no bytes */
        }
        HURRAY__TRY(check_part_fits(list, role, &desc->parts[role - 1], before, after));
    }
    return HURRAY_OK;
}
