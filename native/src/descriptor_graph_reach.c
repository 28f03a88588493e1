/*
 * descriptor_graph_reach.c -- the bytes each node of a version-2
 * descriptor can reach, and check_buffers' proof that they lie in their
 * buffers, followed by the scans of the index nodes: every group-index
 * value below its step's group count, every gather index below its
 * extent, read before anything trusts them.
 *
 * Every product and sum on node fields is overflow-checked: the fields come
 * from untrusted bytes, and a wrapped size would turn an out-of-bounds
 * layout into one that looks fine.
 */
#include <inttypes.h>
#include <stdbool.h>

#include "descriptor_graph.h"
#include "descriptor_graph_codes.h"
#include "descriptor_reach.h"
#include "dtype.h"
#include "layout.h"
#include "status.h"

static HurrayStatus fail_reach(uint32_t i, const HurrayNode *node)
{
    return hurray__fail(HURRAY_ERROR_OVERFLOW,
                        "descriptor: node %u (%s): reach in bits overflows 63 bits", (unsigned)i,
                        hurray__node_kind_name(node->kind));
}

/* Over dims (each >= 1) and strides: the units from the lowest to the
 * highest the node can reach (1 + sum |stride_k| * (dim_k - 1)), and how
 * many of them lie below its first, through negative strides. false when
 * the span does not fit 64 bits. */
static bool walk(uint32_t rank, const uint64_t *dims, const int64_t *strides, uint64_t *out_span,
                 uint64_t *out_backward)
{
    uint64_t span = 0, backward = 0;
    for (uint32_t k = 0; k < rank; k++) {
        uint64_t step;
        if (__builtin_mul_overflow(hurray__magnitude(strides[k]), dims[k] - 1, &step) ||
            __builtin_add_overflow(span, step, &span)) {
            return false;
        }
        backward += strides[k] < 0 ? step : 0; /* at most span */
    }
    if (__builtin_add_overflow(span, 1, &span)) {
        return false;
    }
    *out_span = span;
    *out_backward = backward;
    return true;
}

/* The last container a WORDS node uses along its packed axis, for n >= 1
 * elements there (descriptor_graph.h): dense, the one holding bit n*b - 1;
 * slots, the last container of the last (maybe partial) chunk. */
static bool last_container(const HurrayStoredNode *s, uint64_t n, uint64_t *out)
{
    uint64_t b = hurray__dtype_bits(s->dtype), w = s->container_bits;
    if (s->packing == HURRAY_PACKING_DENSE) {
        uint64_t bits;
        if (__builtin_mul_overflow(n, b, &bits)) {
            return false;
        }
        *out = (bits - 1) / w;
        return true;
    }
    uint64_t per = s->slot_count, k = s->chunk_containers, chunk;
    if (__builtin_mul_overflow(per, k, &chunk)) {
        chunk = UINT64_MAX; /* more than any n: one chunk */
    }
    uint64_t chunks = (n - 1) / chunk + 1;
    uint64_t r = n - (chunks - 1) * chunk; /* the last chunk's elements, 1 .. chunk */
    uint64_t in_chunk = (s->slot_flags & HURRAY_SLOTS_PLANAR) ? (r < k ? r : k) - 1 : (r - 1) / per;
    uint64_t start;
    return !__builtin_mul_overflow(chunks - 1, s->chunk_stride, &start) &&
           !__builtin_add_overflow(start, in_chunk, out);
}

static HurrayStatus stored_reach(uint32_t i, const HurrayNode *node, uint64_t *out_before,
                                 uint64_t *out_after)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint64_t bits = hurray__dtype_bits(s->dtype);
    uint64_t reach_bits;
    if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        uint64_t count;
        if (!hurray__swizzled_128x4_count(node->shape[0], node->shape[1], &count) ||
            __builtin_mul_overflow(count, bits, &reach_bits) || reach_bits > INT64_MAX) {
            return fail_reach(i, node);
        }
        *out_after = reach_bits / 8;
        return HURRAY_OK;
    }
    uint64_t dims[HURRAY_MAX_RANK];
    for (uint32_t k = 0; k < node->rank; k++) {
        dims[k] = node->shape[k];
    }
    uint64_t unit = s->packing == HURRAY_PACKING_PADDED ? 8 : bits;
    if (s->addressing == HURRAY_ADDRESSING_WORDS) {
        uint64_t last;
        if (!last_container(s, dims[s->packed_axis], &last) ||
            __builtin_add_overflow(last, 1, &dims[s->packed_axis])) {
            return fail_reach(i, node);
        }
        unit = s->container_bits;
    }
    uint64_t span, backward;
    if (!walk(node->rank, dims, s->strides, &span, &backward) ||
        __builtin_mul_overflow(span, unit, &reach_bits) || reach_bits > INT64_MAX) {
        return fail_reach(i, node);
    }
    /* Both fit: each is at most span * unit. */
    *out_before = hurray__bits_to_bytes(backward * unit);
    *out_after = hurray__bits_to_bytes((span - backward) * unit);
    return HURRAY_OK;
}

HurrayStatus hurray__graph_node_reach(const HurrayGraph *graph, uint32_t i, uint64_t *out_before,
                                      uint64_t *out_after)
{
    const HurrayNode *node = &graph->nodes[i];
    *out_before = 0;
    *out_after = 0;
    if (node->kind != HURRAY_NODE_STORED && node->kind != HURRAY_NODE_GGML) {
        return HURRAY_OK;
    }
    uint64_t count = 1;
    for (uint32_t k = 0; k < node->rank; k++) {
        count *= node->shape[k]; /* validated: fits 63 bits */
    }
    if (count == 0) {
        return HURRAY_OK; /* no elements reach no bytes */
    }
    if (node->kind == HURRAY_NODE_GGML) {
        uint64_t elements = 0, bytes = 0, bits;
        (void)hurray__ggml_block(node->as.ggml.ggml_type, &elements, &bytes);
        /* the last dimension holds whole blocks: the division is exact */
        if (__builtin_mul_overflow(count / elements, 8 * bytes, &bits) || bits > INT64_MAX) {
            return fail_reach(i, node);
        }
        *out_after = bits / 8;
        return HURRAY_OK;
    }
    return stored_reach(i, node, out_before, out_after);
}

/* ---- check_buffers ---- */

static uint64_t buffer_index_of(const HurrayNode *node)
{
    return node->kind == HURRAY_NODE_STORED ? node->as.stored.buffer_index
                                            : node->as.ggml.buffer_index;
}

static uint64_t byte_offset_of(const HurrayNode *node)
{
    return node->kind == HURRAY_NODE_STORED ? node->as.stored.byte_offset
                                            : node->as.ggml.byte_offset;
}

/* Every value of index node `ref` lies in [0, bound); what it indexes is
 * named in the message. */
static HurrayStatus scan_index(const HurrayGraph *graph, uint32_t ref, const uint8_t *data,
                               uint64_t bound, const char *what, uint32_t user)
{
    const HurrayNode *index = &graph->nodes[ref];
    uint64_t length = index->shape[0];
    for (uint64_t e = 0; e < length; e++) {
        int64_t value = hurray__stored_integer(index, hurray__stored_code(index, data, e));
        if (value < 0 || (uint64_t)value >= bound) {
            return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                                "descriptor: node %u (stored, the %s of node %u): element %" PRIu64
                                " is %" PRId64 ", not in [0, %" PRIu64 ")",
                                (unsigned)ref, what, (unsigned)user, e, value, bound);
        }
    }
    return HURRAY_OK;
}

/* The group count of a checked step with a group index: the indexed-axis
 * extent of its first parameter that is not a constant. */
static uint64_t group_count(const HurrayGraph *graph, const HurrayStepNode *s)
{
    const HurrayNode *scale = &graph->nodes[s->scale];
    const HurrayNode *param = scale->kind != HURRAY_NODE_CONSTANT ? scale
                                                                  : &graph->nodes[s->offset];
    return param->shape[s->indexed_axis];
}

HurrayStatus hurray__graph_check_buffers(const HurrayDescriptor *desc, const HurrayBufferList *list)
{
    const HurrayGraph *graph = desc->graph;
    uint64_t list_len = 0;
    HURRAY__TRY(hurray_buffer_list_len(list, &list_len));
    if (list_len != desc->facts.buffer_count) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "descriptor: the buffer list holds %" PRIu64
                            " buffers but the descriptor uses %u",
                            list_len, (unsigned)desc->facts.buffer_count);
    }
    const uint8_t *data[HURRAY_MAX_NODES] = {0};
    for (uint32_t b = 0; b < desc->facts.buffer_count; b++) {
        const HurrayBuffer *buffer = NULL;
        void *bytes = NULL;
        uint64_t len = 0;
        HURRAY__TRY(hurray_buffer_list_get(list, b, &buffer));
        HURRAY__TRY(hurray_buffer_data(buffer, &bytes, &len));
        data[b] = bytes;
        for (uint32_t i = 0; i < graph->node_count; i++) {
            const HurrayNode *node = &graph->nodes[i];
            uint64_t before = graph->before[i], after = graph->after[i];
            if ((before == 0 && after == 0) || buffer_index_of(node) != b) {
                continue; /* no elements, no bytes; or another buffer */
            }
            uint64_t offset = byte_offset_of(node), end;
            if (before > offset) {
                return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                                    "descriptor: node %u (%s): negative strides reach %" PRIu64
                                    " bytes back from byte offset %" PRIu64
                                    ", before the start of buffer %u",
                                    (unsigned)i, hurray__node_kind_name(node->kind), before, offset,
                                    (unsigned)b);
            }
            if (__builtin_add_overflow(offset, after, &end) || end > len) {
                return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                                    "descriptor: node %u (%s): reaches %" PRIu64
                                    " bytes from byte offset %" PRIu64 " of buffer %u, which "
                                    "holds %" PRIu64 " bytes",
                                    (unsigned)i, hurray__node_kind_name(node->kind), after, offset,
                                    (unsigned)b, len);
            }
        }
    }
    /* Every byte is in place: the index values can be read. */
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        if (node->kind == HURRAY_NODE_STEP && node->as.step.group_index != 0) {
            const HurrayStepNode *s = &node->as.step;
            const HurrayNode *index = &graph->nodes[s->group_index];
            HURRAY__TRY(scan_index(graph, s->group_index, data[index->as.stored.buffer_index],
                                   group_count(graph, s), "group index", i));
        } else if (node->kind == HURRAY_NODE_GATHER) {
            const HurrayGatherNode *g = &node->as.gather;
            const HurrayNode *index = &graph->nodes[g->index];
            HURRAY__TRY(scan_index(graph, g->index, data[index->as.stored.buffer_index],
                                   graph->nodes[g->x].shape[g->axis], "gather index", i));
        }
    }
    return HURRAY_OK;
}
