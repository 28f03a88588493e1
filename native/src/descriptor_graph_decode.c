/*
 * descriptor_graph_decode.c -- version-2 bytes from anyone to a checked
 * descriptor (docs/impl/descriptor-encoding.md, "Version 2").
 * hurray_descriptor_decode's full decode (descriptor_decode_full.c) comes
 * here once the magic, the version and the total length are checked.
 *
 * The sizes first: every node's header, length and fixed part are judged
 * before any field is read, so nothing past the input is touched. Then
 * every byte lands in a field that encode writes back unchanged, reserved
 * bytes must be zero, and the one validation (descriptor_graph_validate.c)
 * judges the fields: a byte string decode accepts re-encodes to itself.
 */
#include <inttypes.h>
#include <string.h>

#include "descriptor_graph.h"
#include "descriptor_graph_wire.h"
#include "descriptor_validate.h"
#include "descriptor_wire.h"
#include "layout.h"
#include "status.h"

#define INVALID HURRAY_ERROR_INVALID_DESCRIPTOR

/* Bytes [from, to) of a node are zero. */
static HurrayStatus reserved_zero(const uint8_t *node, uint32_t index, uint32_t from, uint32_t to)
{
    for (uint32_t at = from; at < to; at++) {
        if (node[at] != 0) {
            return hurray__fail(INVALID, "descriptor: node %u (%s): reserved byte %u is not zero",
                                (unsigned)index, hurray__node_kind_name(node[0]), (unsigned)at);
        }
    }
    return HURRAY_OK;
}

/* Node i's header at p, with `left` bytes of input from p: a known kind, a
 * rank in bounds, a length that is the one kind and rank imply and that
 * fits the input. *out_len is its length; *out_words the pool words its
 * shape, strides and blocks take. */
static HurrayStatus check_node_size(const uint8_t *p, uint64_t left, uint32_t i, uint64_t *out_len,
                                    uint32_t *out_words)
{
    if (left < HURRAY__GRAPH_NODE_HEADER) {
        return hurray__fail(INVALID, "descriptor: node %u: truncated (%" PRIu64 " bytes left)",
                            (unsigned)i, left);
    }
    uint32_t kind = p[0], rank = p[1];
    uint32_t fixed = hurray__graph_wire_fixed_len(kind);
    if (fixed == 0) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: node %u: kind %u is unknown",
                            (unsigned)i, (unsigned)kind);
    }
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(INVALID, "descriptor: node %u (%s): rank %u exceeds %d", (unsigned)i,
                            hurray__node_kind_name(kind), (unsigned)rank, HURRAY_MAX_RANK);
    }
    if (kind == HURRAY_NODE_CONSTANT && rank != 0) {
        return hurray__fail(INVALID,
                            "descriptor: node %u (constant): rank %u, but a constant has "
                            "rank 0",
                            (unsigned)i, (unsigned)rank);
    }
    if (left < fixed) {
        return hurray__fail(INVALID,
                            "descriptor: node %u (%s): truncated (%" PRIu64
                            " bytes left, its fixed part takes %u)",
                            (unsigned)i, hurray__node_kind_name(kind), left, (unsigned)fixed);
    }
    uint32_t slots = kind == HURRAY_NODE_STORED ? p[13] : 0;
    if (slots > HURRAY__MAX_SLOTS) {
        return hurray__fail(INVALID, "descriptor: node %u (stored): slot count %u is above %u",
                            (unsigned)i, (unsigned)slots, HURRAY__MAX_SLOTS);
    }
    uint64_t implied = hurray__graph_wire_node_len(kind, rank, slots);
    uint32_t stated = get16(p + 2);
    if (stated != implied) {
        return hurray__fail(INVALID,
                            "descriptor: node %u (%s): length field says %u bytes, a %s node of "
                            "rank %u takes %" PRIu64,
                            (unsigned)i, hurray__node_kind_name(kind), (unsigned)stated,
                            hurray__node_kind_name(kind), (unsigned)rank, implied);
    }
    if (implied > left) {
        return hurray__fail(INVALID,
                            "descriptor: node %u (%s): truncated (%" PRIu64
                            " bytes left, it takes %" PRIu64 ")",
                            (unsigned)i, hurray__node_kind_name(kind), left, implied);
    }
    *out_len = implied;
    *out_words = (kind == HURRAY_NODE_STORED || kind == HURRAY_NODE_STEP) ? 2 * rank : rank;
    return HURRAY_OK;
}

static const uint8_t *get_dims(const uint8_t *p, uint64_t *out, uint32_t rank)
{
    for (uint32_t k = 0; k < rank; k++, p += 8) {
        out[k] = get64(p);
    }
    return p;
}

/* Node i's fields from its bytes (sizes checked), reserved bytes judged. */
static HurrayStatus read_node(HurrayGraph *graph, uint32_t i, const uint8_t *p)
{
    HurrayNode *node = &graph->nodes[i];
    uint32_t rank = node->rank;
    switch (node->kind) {
    case HURRAY_NODE_STORED: {
        HurrayStoredNode *s = &node->as.stored;
        HURRAY__TRY(reserved_zero(p, i, 15, 16));
        s->dtype = p[4];
        s->byte_order = p[5];
        s->addressing = p[6];
        s->packing = p[7];
        s->layout = p[8];
        s->value_rule = p[9];
        s->codebook = p[10];
        s->container_bits = p[11];
        s->packed_axis = p[12];
        s->slot_count = p[13];
        s->slot_flags = p[14];
        s->code_offset = (int32_t)get32(p + 16);
        s->buffer_index = get32(p + 20);
        s->byte_offset = get64(p + 24);
        s->chunk_containers = get64(p + 32);
        s->chunk_stride = get64(p + 40);
        const uint8_t *q = get_dims(p + HURRAY__GRAPH_STORED_FIXED, node->shape, rank);
        q = get_dims(q, (uint64_t *)s->strides, rank);
        memcpy(s->order, q, s->slot_count);
        uint32_t padded = (s->slot_count + 7u) & ~7u;
        uint32_t at = (uint32_t)(q - p);
        return reserved_zero(p, i, at + s->slot_count, at + padded);
    }
    case HURRAY_NODE_CONSTANT:
        HURRAY__TRY(reserved_zero(p, i, 5, 8));
        node->as.constant.dtype = p[4];
        node->as.constant.value_bits = get64(p + 8);
        return HURRAY_OK;
    case HURRAY_NODE_STEP: {
        HurrayStepNode *s = &node->as.step;
        HURRAY__TRY(reserved_zero(p, i, 12, 16));
        s->form = p[4];
        s->arithmetic = p[5];
        s->x = p[6];
        s->scale = p[7];
        s->offset = p[8];
        s->group_index = p[9];
        s->indexed_axis = p[10];
        s->flags = p[11];
        const uint8_t *q = get_dims(p + HURRAY__GRAPH_STEP_FIXED, node->shape, rank);
        get_dims(q, s->blocks, rank);
        return HURRAY_OK;
    }
    case HURRAY_NODE_GGML:
        HURRAY__TRY(reserved_zero(p, i, 12, 16));
        node->as.ggml.ggml_type = get32(p + 4);
        node->as.ggml.buffer_index = get32(p + 8);
        node->as.ggml.byte_offset = get64(p + 16);
        get_dims(p + HURRAY__GRAPH_GGML_FIXED, node->shape, rank);
        return HURRAY_OK;
    case HURRAY_NODE_BITS:
        HURRAY__TRY(reserved_zero(p, i, 13, 16));
        HURRAY__TRY(reserved_zero(p, i, 20, 24));
        node->as.bits.input_count = p[4];
        memcpy(node->as.bits.inputs, p + 5, 4);
        memcpy(node->as.bits.shifts, p + 9, 4);
        node->as.bits.offset = (int32_t)get32(p + 16);
        get_dims(p + HURRAY__GRAPH_BITS_FIXED, node->shape, rank);
        return HURRAY_OK;
    default: /* HURRAY_NODE_GATHER: check_node_size knows no other kind */
        HURRAY__TRY(reserved_zero(p, i, 7, 16));
        node->as.gather.x = p[4];
        node->as.gather.index = p[5];
        node->as.gather.axis = p[6];
        get_dims(p + HURRAY__GRAPH_GATHER_FIXED, node->shape, rank);
        return HURRAY_OK;
    }
}

HurrayStatus hurray__graph_decode(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out)
{
    uint32_t rank = bytes[8], count = bytes[9];
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(INVALID, "descriptor: rank %u exceeds %d", (unsigned)rank,
                            HURRAY_MAX_RANK);
    }
    if (count < 1 || count > HURRAY_MAX_NODES) {
        return hurray__fail(INVALID, "descriptor: node count %u is not between 1 and %d",
                            (unsigned)count, HURRAY_MAX_NODES);
    }
    for (uint32_t at = 11; at < HURRAY__DESCRIPTOR_HEADER_LEN; at++) {
        if (bytes[at] != 0) {
            return hurray__fail(INVALID, "descriptor: reserved header byte %u is not zero",
                                (unsigned)at);
        }
    }
    uint64_t at = HURRAY__DESCRIPTOR_HEADER_LEN + 8 * (uint64_t)rank;
    if (at > len) {
        return hurray__fail(INVALID,
                            "descriptor: truncated: the shape of rank %u ends at byte %" PRIu64
                            ", the input holds %" PRIu64,
                            (unsigned)rank, at, len);
    }
    /* The sizes of every node, before anything is allocated or read. */
    uint64_t node_at[HURRAY_MAX_NODES];
    uint32_t node_words[HURRAY_MAX_NODES];
    uint64_t words = 0;
    for (uint32_t i = 0; i < count; i++) {
        uint64_t node_len = 0;
        HURRAY__TRY(check_node_size(bytes + at, len - at, i, &node_len, &node_words[i]));
        node_at[i] = at;
        at += node_len;
        words += node_words[i];
    }
    if (at != len) {
        return hurray__fail(INVALID,
                            "descriptor: total length: %u nodes end at byte %" PRIu64
                            ", the input holds %" PRIu64,
                            (unsigned)count, at, len);
    }
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    HurrayGraph *graph = hurray__graph_alloc(count, words);
    if (desc == NULL || graph == NULL) {
        free(desc);
        hurray__graph_free(graph);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_descriptor_decode: out of memory");
    }
    get_dims(bytes + HURRAY__DESCRIPTOR_HEADER_LEN, desc->shape, rank);
    desc->byte_order = HURRAY_BYTE_ORDER_LITTLE;
    desc->packing = HURRAY_PACKING_NONE;
    desc->scheme = HURRAY_SCHEME_GRAPH;
    desc->granularity = HURRAY_GRANULARITY_NONE;
    desc->part_mask = 0;
    desc->axis = 0;
    desc->ggml_type = 0;
    desc->block_size = 0;
    desc->graph = graph;
    graph->result_dtype = bytes[10];
    uint32_t pool = 0;
    for (uint32_t i = 0; i < count; i++) {
        HurrayNode *node = &graph->nodes[i];
        node->kind = bytes[node_at[i]];
        node->rank = bytes[node_at[i] + 1];
        node->shape_at = pool;
        node->extra_at = pool + node->rank;
        pool += node_words[i];
    }
    graph->pool_len = pool;
    hurray__graph_rebase(graph);
    HurrayStatus status = HURRAY_OK;
    uint32_t dim = 0;
    if (!hurray__row_major_strides(rank, desc->shape, desc->strides, &dim)) {
        status = hurray__descriptor_fail_shape(dim);
    }
    for (uint32_t i = 0; i < count && status == HURRAY_OK; i++) {
        status = read_node(graph, i, bytes + node_at[i]);
    }
    if (status == HURRAY_OK) {
        status = hurray__descriptor_check(desc);
    }
    if (status != HURRAY_OK) {
        hurray__graph_free(graph);
        free(desc);
        return status;
    }
    *out = desc;
    return HURRAY_OK;
}
