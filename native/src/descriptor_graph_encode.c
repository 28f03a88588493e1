/*
 * descriptor_graph_encode.c -- the one binary form of a version-2
 * descriptor (docs/impl/descriptor-encoding.md, "Version 2"): lengths, and
 * the bytes of a checked descriptor. hurray_descriptor_encode
 * (descriptor_encode.c) comes here for a descriptor with nodes; the decoder
 * is descriptor_graph_decode.c, and both follow the tables in
 * descriptor_graph_wire.h.
 */
#include <string.h>

#include "descriptor_graph.h"
#include "descriptor_graph_wire.h"
#include "descriptor_wire.h"

uint64_t hurray__graph_node_len(const HurrayNode *node)
{
    return hurray__graph_wire_node_len(node->kind, node->rank,
                                       node->kind == HURRAY_NODE_STORED ? node->as.stored.slot_count
                                                                        : 0);
}

uint64_t hurray__graph_encoded_len(const HurrayDescriptor *desc)
{
    const HurrayGraph *graph = desc->graph;
    uint64_t len = HURRAY__DESCRIPTOR_HEADER_LEN + 8 * (uint64_t)desc->rank;
    for (uint32_t i = 0; i < graph->node_count; i++) {
        len += hurray__graph_node_len(&graph->nodes[i]);
    }
    return len;
}

static uint8_t *put_dims(uint8_t *p, const uint64_t *values, uint32_t rank)
{
    for (uint32_t k = 0; k < rank; k++, p += 8) {
        put64(p, values[k]);
    }
    return p;
}

/* One node at p, every byte written (reserved ones zero); returns the end. */
static uint8_t *put_node(uint8_t *p, const HurrayNode *node)
{
    uint64_t len = hurray__graph_node_len(node);
    memset(p, 0, (size_t)len);
    p[0] = node->kind;
    p[1] = node->rank;
    put16(p + 2, (uint16_t)len); /* at most 1136 (descriptor_graph_wire.h) */
    uint8_t *end = p + len;
    switch (node->kind) {
    case HURRAY_NODE_STORED: {
        const HurrayStoredNode *s = &node->as.stored;
        p[4] = s->dtype;
        p[5] = s->byte_order;
        p[6] = s->addressing;
        p[7] = s->packing;
        p[8] = s->layout;
        p[9] = s->value_rule;
        p[10] = s->codebook;
        p[11] = s->container_bits;
        p[12] = s->packed_axis;
        p[13] = s->slot_count;
        p[14] = s->slot_flags;
        put32(p + 16, (uint32_t)s->code_offset);
        put32(p + 20, (uint32_t)s->buffer_index); /* checked below HURRAY_MAX_NODES */
        put64(p + 24, s->byte_offset);
        put64(p + 32, s->chunk_containers);
        put64(p + 40, s->chunk_stride);
        uint8_t *q = put_dims(p + HURRAY__GRAPH_STORED_FIXED, node->shape, node->rank);
        q = put_dims(q, (const uint64_t *)s->strides, node->rank);
        memcpy(q, s->order, s->slot_count);
        break;
    }
    case HURRAY_NODE_CONSTANT:
        p[4] = node->as.constant.dtype;
        put64(p + 8, node->as.constant.value_bits);
        break;
    case HURRAY_NODE_STEP: {
        const HurrayStepNode *s = &node->as.step;
        p[4] = s->form;
        p[5] = s->arithmetic;
        p[6] = s->x;
        p[7] = s->scale;
        p[8] = s->offset;
        p[9] = s->group_index;
        p[10] = s->indexed_axis;
        p[11] = s->flags;
        uint8_t *q = put_dims(p + HURRAY__GRAPH_STEP_FIXED, node->shape, node->rank);
        put_dims(q, s->blocks, node->rank);
        break;
    }
    case HURRAY_NODE_GGML:
        put32(p + 4, node->as.ggml.ggml_type);
        put32(p + 8, (uint32_t)node->as.ggml.buffer_index);
        put64(p + 16, node->as.ggml.byte_offset);
        put_dims(p + HURRAY__GRAPH_GGML_FIXED, node->shape, node->rank);
        break;
    case HURRAY_NODE_BITS: {
        const HurrayBitsNode *b = &node->as.bits;
        p[4] = b->input_count;
        memcpy(p + 5, b->inputs, 4);
        memcpy(p + 9, b->shifts, 4);
        put32(p + 16, (uint32_t)b->offset);
        put_dims(p + HURRAY__GRAPH_BITS_FIXED, node->shape, node->rank);
        break;
    }
    default: /* HURRAY_NODE_GATHER: the kinds were checked */
        p[4] = node->as.gather.x;
        p[5] = node->as.gather.index;
        p[6] = node->as.gather.axis;
        put_dims(p + HURRAY__GRAPH_GATHER_FIXED, node->shape, node->rank);
        break;
    }
    return end;
}

void hurray__graph_write(const HurrayDescriptor *desc, uint8_t *out)
{
    const HurrayGraph *graph = desc->graph;
    uint64_t len = hurray__graph_encoded_len(desc);
    memset(out, 0, HURRAY__DESCRIPTOR_HEADER_LEN);
    memcpy(out, hurray__descriptor_magic, sizeof hurray__descriptor_magic);
    put16(out + 4, HURRAY__DESCRIPTOR_VERSION_GRAPH);
    put16(out + 6, (uint16_t)len); /* at most HURRAY_MAX_DESCRIPTOR_V2_LEN */
    out[8] = desc->rank;
    out[9] = graph->node_count;
    out[10] = graph->result_dtype;
    uint8_t *p = put_dims(out + HURRAY__DESCRIPTOR_HEADER_LEN, desc->shape, desc->rank);
    for (uint32_t i = 0; i < graph->node_count; i++) {
        p = put_node(p, &graph->nodes[i]);
    }
}
