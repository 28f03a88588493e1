/*
 * descriptor_graph_build.c -- making the nodes of a version-2 descriptor
 * (ADR-054) one at a time: the graph's memory, the hurray_descriptor_add_*
 * calls and the setters of a node's fields.
 *
 * As for version 1 (descriptor_build.c), setters refuse codes this build
 * does not know and values their fields cannot hold, and nothing else:
 * whether a node's fields fit together, and the nodes each other, is for
 * validation (descriptor_graph_validate.c), once every node is there.
 */
#include <string.h>

#include "descriptor_graph.h"
#include "dtype.h"
#include "layout.h"
#include "status.h"

/* The first pool of a graph: room for a few small nodes before it grows. */
#define FIRST_POOL_WORDS 64u

HurrayGraph *hurray__graph_alloc(uint32_t node_count, uint64_t pool_words)
{
    /* pool_words is at most 16 nodes of 2 * 64 words: no overflow. */
    HurrayGraph *graph = calloc(1, sizeof *graph + sizeof(uint64_t) * pool_words);
    if (graph == NULL) {
        return NULL;
    }
    graph->node_count = (uint8_t)node_count;
    graph->pool_cap = (uint32_t)pool_words;
    return graph;
}

void hurray__graph_free(HurrayGraph *graph)
{
    free(graph);
}

void hurray__graph_rebase(HurrayGraph *graph)
{
    for (uint32_t i = 0; i < graph->node_count; i++) {
        HurrayNode *node = &graph->nodes[i];
        node->shape = graph->pool + node->shape_at;
        if (node->kind == HURRAY_NODE_STORED) {
            /* int64_t and uint64_t may alias each other (C11 6.5p7). */
            node->as.stored.strides = (int64_t *)(graph->pool + node->extra_at);
        } else if (node->kind == HURRAY_NODE_STEP) {
            node->as.step.blocks = graph->pool + node->extra_at;
        }
    }
}

/* The descriptor's graph with room for one more node of `words` pool
 * words in *out; a version-1 descriptor becomes version 2 here, keeping
 * only its shape. */
static HurrayStatus graph_with_room(HurrayDescriptor *desc, const char *fn, uint32_t words,
                                    HurrayGraph **out)
{
    HurrayGraph *graph = hurray__descriptor_graph(desc);
    if (graph != NULL && graph->node_count == HURRAY_MAX_NODES) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: the descriptor has HURRAY_MAX_NODES (%d) nodes already", fn,
                            HURRAY_MAX_NODES);
    }
    if (graph == NULL) {
        graph = hurray__graph_alloc(0, words > FIRST_POOL_WORDS ? words : FIRST_POOL_WORDS);
        if (graph == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "%s: out of memory for the nodes", fn);
        }
        /* The shape was accepted by hurray_descriptor_new, so its row-major
         * strides exist; they are what a version-2 descriptor reports. */
        uint32_t dim = 0;
        (void)hurray__row_major_strides(desc->rank, desc->shape, desc->strides, &dim);
        desc->byte_order = HURRAY_BYTE_ORDER_LITTLE;
        desc->packing = HURRAY_PACKING_NONE;
        desc->granularity = HURRAY_GRANULARITY_NONE;
        desc->part_mask = 0;
        desc->axis = 0;
        desc->ggml_type = 0;
        desc->block_size = 0;
        desc->graph = graph;
        desc->scheme = HURRAY_SCHEME_GRAPH;
    } else if (graph->pool_cap - graph->pool_len < words) {
        uint64_t cap = 2 * (uint64_t)graph->pool_cap;
        if (cap < (uint64_t)graph->pool_len + words) {
            cap = (uint64_t)graph->pool_len + words;
        }
        HurrayGraph *grown = realloc(graph, sizeof *graph + sizeof(uint64_t) * cap);
        if (grown == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "%s: out of memory for the nodes", fn);
        }
        grown->pool_cap = (uint32_t)cap;
        hurray__graph_rebase(grown);
        desc->graph = graph = grown;
    }
    *out = graph;
    return HURRAY_OK;
}

/* A new node of this kind and shape in *out, with `extra` more words of
 * pool (strides or blocks) and every other field zero; *out_node its index.
 * On failure nothing changes but, perhaps, the descriptor's version. */
static HurrayStatus add_node(HurrayDescriptor *desc, const char *fn, uint32_t kind, uint32_t rank,
                             const uint64_t *shape, uint32_t extra, uint32_t *out_node,
                             HurrayNode **out)
{
    if (desc == NULL || out_node == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: %s is NULL", fn,
                            desc == NULL ? "desc" : "out_node");
    }
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: rank %u exceeds HURRAY_MAX_RANK (%d)", fn, (unsigned)rank,
                            HURRAY_MAX_RANK);
    }
    if (shape == NULL && rank > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: shape is NULL but rank is %u", fn,
                            (unsigned)rank);
    }
    HurrayGraph *graph = NULL;
    HURRAY__TRY(graph_with_room(desc, fn, rank + extra, &graph));
    uint32_t index = graph->node_count++;
    HurrayNode *node = &graph->nodes[index];
    memset(node, 0, sizeof *node);
    node->kind = (uint8_t)kind;
    node->rank = (uint8_t)rank;
    node->shape_at = graph->pool_len;
    node->extra_at = graph->pool_len + rank;
    graph->pool_len += rank + extra;
    hurray__graph_rebase(graph);
    if (rank > 0) {
        memcpy(node->shape, shape, sizeof shape[0] * rank);
    }
    desc->checked = 0;
    *out_node = index;
    *out = node;
    return HURRAY_OK;
}

/* The node of this kind at `index` in *out, for a setter: the lookup the
 * accessors use, and the verdict forgotten. */
static HurrayStatus node_of_kind(HurrayDescriptor *desc, const char *fn, uint32_t index,
                                 uint32_t kind, HurrayNode **out)
{
    const HurrayNode *node = NULL;
    HURRAY__TRY(hurray__graph_find_node(desc, fn, index, kind, &node));
    desc->checked = 0; /* a setter changes the fields: the next check runs */
    /* Not a const object: every graph is malloc'ed, and desc is the caller's. */
    *out = (HurrayNode *)node;
    return HURRAY_OK;
}

/* A node index a field of one byte can hold (validation judges whether it
 * names a node, and one after the referring node). */
static HurrayStatus check_reference(const char *fn, const char *field, uint32_t value)
{
    if (value >= HURRAY_MAX_NODES) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: %s %u is not a node index (at most %d nodes)", fn, field,
                            (unsigned)value, HURRAY_MAX_NODES);
    }
    return HURRAY_OK;
}

/* A value a field of one byte can hold. */
static HurrayStatus check_byte(const char *fn, const char *field, uint32_t value)
{
    if (value > UINT8_MAX) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%s: %s %u does not fit its byte", fn,
                            field, (unsigned)value);
    }
    return HURRAY_OK;
}

static HurrayStatus check_dtype(const char *fn, const char *field, uint32_t dtype)
{
    if (!hurray__dtype_is_known(dtype)) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: %s %u is unknown", fn, field,
                            (unsigned)dtype);
    }
    return HURRAY_OK;
}

/* ---- stored ---- */

HurrayStatus hurray_descriptor_add_stored(HurrayDescriptor *desc, uint32_t dtype, uint32_t rank,
                                          const uint64_t *shape, uint64_t buffer_index,
                                          uint64_t byte_offset, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_stored";
    HURRAY__TRY(check_dtype(fn, "dtype", dtype));
    int64_t strides[HURRAY_MAX_RANK];
    if (rank <= HURRAY_MAX_RANK && (shape != NULL || rank == 0)) {
        uint32_t dim = 0;
        if (!hurray__row_major_strides(rank, shape, strides, &dim)) {
            return hurray__fail(HURRAY_ERROR_OVERFLOW,
                                "%s: shape[%u]: element count overflows 63 bits", fn,
                                (unsigned)dim);
        }
    }
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_STORED, rank, shape, rank, out_node, &node));
    HurrayStoredNode *stored = &node->as.stored;
    stored->dtype = (uint8_t)dtype;
    stored->packing = (uint8_t)hurray__default_packing(hurray__dtype_bits(dtype));
    stored->buffer_index = buffer_index;
    stored->byte_offset = byte_offset;
    if (rank > 0) {
        memcpy(stored->strides, strides, sizeof strides[0] * rank);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_strides(HurrayDescriptor *desc, uint32_t node,
                                                  uint32_t rank, const int64_t *strides)
{
    static const char fn[] = "hurray_descriptor_stored_set_strides";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    if (rank != n->rank) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: %u strides given for node %u of rank %u", fn, (unsigned)rank,
                            (unsigned)node, (unsigned)n->rank);
    }
    if (strides == NULL && rank > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: strides is NULL", fn);
    }
    if (rank > 0) {
        memcpy(n->as.stored.strides, strides, sizeof strides[0] * rank);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_byte_order(HurrayDescriptor *desc, uint32_t node,
                                                     uint32_t byte_order)
{
    static const char fn[] = "hurray_descriptor_stored_set_byte_order";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    if (byte_order > HURRAY_BYTE_ORDER_BIG) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: byte order %u is unknown", fn,
                            (unsigned)byte_order);
    }
    n->as.stored.byte_order = (uint8_t)byte_order;
    return HURRAY_OK;
}

static HurrayStatus check_packing(const char *fn, uint32_t packing)
{
    if (packing > HURRAY_PACKING_SLOTS) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: packing %u is unknown", fn,
                            (unsigned)packing);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_elements(HurrayDescriptor *desc, uint32_t node,
                                                   uint32_t packing)
{
    static const char fn[] = "hurray_descriptor_stored_set_elements";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    HURRAY__TRY(check_packing(fn, packing));
    HurrayStoredNode *s = &n->as.stored;
    s->addressing = HURRAY_ADDRESSING_ELEMENTS;
    s->packing = (uint8_t)packing;
    s->container_bits = 0;
    s->packed_axis = 0;
    s->slot_count = 0;
    s->slot_flags = 0;
    s->chunk_containers = 0;
    s->chunk_stride = 0;
    memset(s->order, 0, sizeof s->order);
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_words(HurrayDescriptor *desc, uint32_t node,
                                                uint32_t container_bits, uint32_t packed_axis,
                                                uint32_t packing, uint64_t chunk_containers,
                                                uint32_t slot_flags, uint64_t chunk_stride,
                                                uint32_t slot_count, const uint8_t *order)
{
    static const char fn[] = "hurray_descriptor_stored_set_words";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    HURRAY__TRY(check_packing(fn, packing));
    HURRAY__TRY(check_byte(fn, "container_bits", container_bits));
    HURRAY__TRY(check_byte(fn, "packed_axis", packed_axis));
    HURRAY__TRY(check_byte(fn, "slot_flags", slot_flags));
    if (slot_count > HURRAY__MAX_SLOTS) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: slot_count %u is above %u (64 one-bit slots in 64 bits)", fn,
                            (unsigned)slot_count, HURRAY__MAX_SLOTS);
    }
    if (order == NULL && slot_count > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: order is NULL but slot_count is %u",
                            fn, (unsigned)slot_count);
    }
    HurrayStoredNode *s = &n->as.stored;
    s->addressing = HURRAY_ADDRESSING_WORDS;
    s->packing = (uint8_t)packing;
    s->container_bits = (uint8_t)container_bits;
    s->packed_axis = (uint8_t)packed_axis;
    s->slot_count = (uint8_t)slot_count;
    s->slot_flags = (uint8_t)slot_flags;
    s->chunk_containers = chunk_containers;
    s->chunk_stride = chunk_stride;
    memset(s->order, 0, sizeof s->order);
    if (slot_count > 0) {
        memcpy(s->order, order, slot_count);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_layout(HurrayDescriptor *desc, uint32_t node,
                                                 uint32_t layout)
{
    static const char fn[] = "hurray_descriptor_stored_set_layout";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    if (layout > HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: layout %u is unknown", fn,
                            (unsigned)layout);
    }
    n->as.stored.layout = (uint8_t)layout;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_set_codes(HurrayDescriptor *desc, uint32_t node,
                                                int32_t code_offset, uint32_t codebook,
                                                uint32_t value_rule)
{
    static const char fn[] = "hurray_descriptor_stored_set_codes";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STORED, &n));
    HURRAY__TRY(check_reference(fn, "codebook", codebook));
    if (value_rule > HURRAY_VALUE_RULE_E8M0_NO_NAN) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: value rule %u is unknown", fn,
                            (unsigned)value_rule);
    }
    n->as.stored.code_offset = code_offset;
    n->as.stored.codebook = (uint8_t)codebook;
    n->as.stored.value_rule = (uint8_t)value_rule;
    return HURRAY_OK;
}

/* ---- the other kinds ---- */

HurrayStatus hurray_descriptor_add_constant(HurrayDescriptor *desc, uint32_t dtype,
                                            uint64_t value_bits, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_constant";
    HURRAY__TRY(check_dtype(fn, "dtype", dtype));
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_CONSTANT, 0, NULL, 0, out_node, &node));
    node->as.constant.dtype = (uint8_t)dtype;
    node->as.constant.value_bits = value_bits;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_add_step(HurrayDescriptor *desc, uint32_t form, uint32_t arithmetic,
                                        uint32_t rank, const uint64_t *shape, uint32_t x,
                                        uint32_t scale, uint32_t offset, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_step";
    if (form < HURRAY_FORM_MUL || form > HURRAY_FORM_MUL_SUB) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: form %u is unknown", fn, (unsigned)form);
    }
    HURRAY__TRY(check_dtype(fn, "arithmetic dtype", arithmetic));
    HURRAY__TRY(check_reference(fn, "x", x));
    HURRAY__TRY(check_reference(fn, "scale", scale));
    HURRAY__TRY(check_reference(fn, "offset", offset));
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_STEP, rank, shape, rank, out_node, &node));
    HurrayStepNode *step = &node->as.step;
    step->form = (uint8_t)form;
    step->arithmetic = (uint8_t)arithmetic;
    step->x = (uint8_t)x;
    step->scale = (uint8_t)scale;
    step->offset = (uint8_t)offset;
    for (uint32_t k = 0; k < rank; k++) {
        step->blocks[k] = 1;
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_step_set_groups(HurrayDescriptor *desc, uint32_t node, uint32_t rank,
                                               const uint64_t *blocks, uint32_t flags,
                                               uint32_t indexed_axis, uint32_t group_index)
{
    static const char fn[] = "hurray_descriptor_step_set_groups";
    HurrayNode *n = NULL;
    HURRAY__TRY(node_of_kind(desc, fn, node, HURRAY_NODE_STEP, &n));
    if (rank != n->rank) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: %u blocks given for node %u of rank %u", fn, (unsigned)rank,
                            (unsigned)node, (unsigned)n->rank);
    }
    if (blocks == NULL && rank > 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: blocks is NULL", fn);
    }
    HURRAY__TRY(check_byte(fn, "flags", flags));
    HURRAY__TRY(check_byte(fn, "indexed_axis", indexed_axis));
    HURRAY__TRY(check_reference(fn, "group_index", group_index));
    HurrayStepNode *step = &n->as.step;
    if (rank > 0) {
        memcpy(step->blocks, blocks, sizeof blocks[0] * rank);
    }
    step->flags = (uint8_t)flags;
    step->indexed_axis = (uint8_t)indexed_axis;
    step->group_index = (uint8_t)group_index;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_add_ggml(HurrayDescriptor *desc, uint32_t ggml_type, uint32_t rank,
                                        const uint64_t *shape, uint64_t buffer_index,
                                        uint64_t byte_offset, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_ggml";
    if (hurray__ggml_name(ggml_type) == NULL) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: ggml type %u is unknown", fn,
                            (unsigned)ggml_type);
    }
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_GGML, rank, shape, 0, out_node, &node));
    node->as.ggml.ggml_type = ggml_type;
    node->as.ggml.buffer_index = buffer_index;
    node->as.ggml.byte_offset = byte_offset;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_add_bits(HurrayDescriptor *desc, uint32_t rank,
                                        const uint64_t *shape, uint32_t input_count,
                                        const uint32_t *inputs, const uint32_t *shifts,
                                        int32_t offset, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_bits";
    if (input_count < 1 || input_count > 4) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: input_count %u is not between 1 and 4", fn, (unsigned)input_count);
    }
    if (inputs == NULL || shifts == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: %s is NULL", fn,
                            inputs == NULL ? "inputs" : "shifts");
    }
    for (uint32_t k = 0; k < input_count; k++) {
        HURRAY__TRY(check_reference(fn, "input", inputs[k]));
        HURRAY__TRY(check_byte(fn, "shift", shifts[k]));
    }
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_BITS, rank, shape, 0, out_node, &node));
    HurrayBitsNode *bits = &node->as.bits;
    bits->input_count = (uint8_t)input_count;
    for (uint32_t k = 0; k < input_count; k++) {
        bits->inputs[k] = (uint8_t)inputs[k];
        bits->shifts[k] = (uint8_t)shifts[k];
    }
    bits->offset = offset;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_add_gather(HurrayDescriptor *desc, uint32_t rank,
                                          const uint64_t *shape, uint32_t x, uint32_t index,
                                          uint32_t axis, uint32_t *out_node)
{
    static const char fn[] = "hurray_descriptor_add_gather";
    HURRAY__TRY(check_reference(fn, "x", x));
    HURRAY__TRY(check_reference(fn, "index", index));
    HURRAY__TRY(check_byte(fn, "axis", axis));
    HurrayNode *node = NULL;
    HURRAY__TRY(add_node(desc, fn, HURRAY_NODE_GATHER, rank, shape, 0, out_node, &node));
    node->as.gather.x = (uint8_t)x;
    node->as.gather.index = (uint8_t)index;
    node->as.gather.axis = (uint8_t)axis;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_set_result_dtype(HurrayDescriptor *desc, uint32_t dtype)
{
    static const char fn[] = "hurray_descriptor_set_result_dtype";
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: desc is NULL", fn);
    }
    HurrayGraph *graph = hurray__descriptor_graph(desc);
    if (graph == NULL) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: the descriptor has no nodes (a result dtype is a field of "
                            "encoding version 2; add its nodes first)",
                            fn);
    }
    if (dtype != 0) {
        HURRAY__TRY(check_dtype(fn, "dtype", dtype));
    }
    graph->result_dtype = (uint8_t)dtype;
    desc->checked = 0;
    return HURRAY_OK;
}
