/*
 * descriptor_graph_access.c -- reading a version-2 descriptor's nodes back
 * (the accessors of hurray.h), one per setter, plus the version and the
 * node count, which a version-1 descriptor answers too (1 and 0).
 */
#include "descriptor_graph.h"
#include "status.h"

const char *hurray__node_kind_name(uint32_t kind)
{
    switch (kind) {
    case HURRAY_NODE_STORED: return "stored";
    case HURRAY_NODE_CONSTANT: return "constant";
    case HURRAY_NODE_STEP: return "step";
    case HURRAY_NODE_GGML: return "ggml";
    case HURRAY_NODE_BITS: return "bits";
    case HURRAY_NODE_GATHER: return "gather";
    default: return "?";
    }
}

#define REQUIRE(ptr, fn, what)                                                           \
    do {                                                                                 \
        if ((ptr) == NULL) {                                                             \
            return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: %s is NULL", fn, what); \
        }                                                                                \
    } while (0)

HurrayStatus hurray__graph_find_node(const HurrayDescriptor *desc, const char *fn, uint32_t index,
                                     uint32_t kind, const HurrayNode **out)
{
    REQUIRE(desc, fn, "desc");
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    uint32_t count = graph == NULL ? 0 : graph->node_count;
    if (index >= count) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE, "%s: node %u is past the last (%u nodes)",
                            fn, (unsigned)index, (unsigned)count);
    }
    const HurrayNode *node = &graph->nodes[index];
    if (kind != 0 && node->kind != kind) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%s: node %u is a %s node, not %s", fn,
                            (unsigned)index, hurray__node_kind_name(node->kind),
                            hurray__node_kind_name(kind));
    }
    *out = node;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_encoding_version(const HurrayDescriptor *desc, uint32_t *out)
{
    static const char fn[] = "hurray_descriptor_encoding_version";
    REQUIRE(desc, fn, "desc");
    REQUIRE(out, fn, "out");
    *out = hurray__descriptor_graph(desc) != NULL ? HURRAY__DESCRIPTOR_VERSION_GRAPH
                                                  : HURRAY__DESCRIPTOR_VERSION;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_node_count(const HurrayDescriptor *desc, uint32_t *out)
{
    static const char fn[] = "hurray_descriptor_node_count";
    REQUIRE(desc, fn, "desc");
    REQUIRE(out, fn, "out");
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    *out = graph == NULL ? 0 : graph->node_count;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_result_dtype(const HurrayDescriptor *desc, uint32_t *out)
{
    static const char fn[] = "hurray_descriptor_result_dtype";
    REQUIRE(desc, fn, "desc");
    REQUIRE(out, fn, "out");
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    *out = graph == NULL ? 0 : graph->result_dtype;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_node_kind(const HurrayDescriptor *desc, uint32_t node,
                                         uint32_t *out_kind)
{
    static const char fn[] = "hurray_descriptor_node_kind";
    const HurrayNode *n = NULL;
    REQUIRE(out_kind, fn, "out_kind");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, 0, &n));
    *out_kind = n->kind;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_node_shape(const HurrayDescriptor *desc, uint32_t node,
                                          uint32_t *out_rank, const uint64_t **out_shape)
{
    static const char fn[] = "hurray_descriptor_node_shape";
    const HurrayNode *n = NULL;
    REQUIRE(out_rank, fn, "out_rank");
    REQUIRE(out_shape, fn, "out_shape");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, 0, &n));
    *out_rank = n->rank;
    *out_shape = n->shape;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored(const HurrayDescriptor *desc, uint32_t node,
                                      uint32_t *out_dtype, uint64_t *out_buffer_index,
                                      uint64_t *out_byte_offset, uint32_t *out_byte_order,
                                      uint32_t *out_layout)
{
    static const char fn[] = "hurray_descriptor_stored";
    const HurrayNode *n = NULL;
    REQUIRE(out_dtype, fn, "out_dtype");
    REQUIRE(out_buffer_index, fn, "out_buffer_index");
    REQUIRE(out_byte_offset, fn, "out_byte_offset");
    REQUIRE(out_byte_order, fn, "out_byte_order");
    REQUIRE(out_layout, fn, "out_layout");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STORED, &n));
    const HurrayStoredNode *s = &n->as.stored;
    *out_dtype = s->dtype;
    *out_buffer_index = s->buffer_index;
    *out_byte_offset = s->byte_offset;
    *out_byte_order = s->byte_order;
    *out_layout = s->layout;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_strides(const HurrayDescriptor *desc, uint32_t node,
                                              const int64_t **out)
{
    static const char fn[] = "hurray_descriptor_stored_strides";
    const HurrayNode *n = NULL;
    REQUIRE(out, fn, "out");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STORED, &n));
    *out = n->as.stored.strides;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_packing(const HurrayDescriptor *desc, uint32_t node,
                                              uint32_t *out_addressing, uint32_t *out_packing,
                                              uint32_t *out_container_bits,
                                              uint32_t *out_packed_axis,
                                              uint64_t *out_chunk_containers,
                                              uint32_t *out_slot_flags, uint64_t *out_chunk_stride,
                                              uint32_t *out_slot_count, const uint8_t **out_order)
{
    static const char fn[] = "hurray_descriptor_stored_packing";
    const HurrayNode *n = NULL;
    REQUIRE(out_addressing, fn, "out_addressing");
    REQUIRE(out_packing, fn, "out_packing");
    REQUIRE(out_container_bits, fn, "out_container_bits");
    REQUIRE(out_packed_axis, fn, "out_packed_axis");
    REQUIRE(out_chunk_containers, fn, "out_chunk_containers");
    REQUIRE(out_slot_flags, fn, "out_slot_flags");
    REQUIRE(out_chunk_stride, fn, "out_chunk_stride");
    REQUIRE(out_slot_count, fn, "out_slot_count");
    REQUIRE(out_order, fn, "out_order");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STORED, &n));
    const HurrayStoredNode *s = &n->as.stored;
    *out_addressing = s->addressing;
    *out_packing = s->packing;
    *out_container_bits = s->container_bits;
    *out_packed_axis = s->packed_axis;
    *out_chunk_containers = s->chunk_containers;
    *out_slot_flags = s->slot_flags;
    *out_chunk_stride = s->chunk_stride;
    *out_slot_count = s->slot_count;
    *out_order = s->order;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_stored_codes(const HurrayDescriptor *desc, uint32_t node,
                                            int32_t *out_code_offset, uint32_t *out_codebook,
                                            uint32_t *out_value_rule)
{
    static const char fn[] = "hurray_descriptor_stored_codes";
    const HurrayNode *n = NULL;
    REQUIRE(out_code_offset, fn, "out_code_offset");
    REQUIRE(out_codebook, fn, "out_codebook");
    REQUIRE(out_value_rule, fn, "out_value_rule");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STORED, &n));
    *out_code_offset = n->as.stored.code_offset;
    *out_codebook = n->as.stored.codebook;
    *out_value_rule = n->as.stored.value_rule;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_constant(const HurrayDescriptor *desc, uint32_t node,
                                        uint32_t *out_dtype, uint64_t *out_value_bits)
{
    static const char fn[] = "hurray_descriptor_constant";
    const HurrayNode *n = NULL;
    REQUIRE(out_dtype, fn, "out_dtype");
    REQUIRE(out_value_bits, fn, "out_value_bits");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_CONSTANT, &n));
    *out_dtype = n->as.constant.dtype;
    *out_value_bits = n->as.constant.value_bits;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_step(const HurrayDescriptor *desc, uint32_t node, uint32_t *out_form,
                                    uint32_t *out_arithmetic, uint32_t *out_x, uint32_t *out_scale,
                                    uint32_t *out_offset)
{
    static const char fn[] = "hurray_descriptor_step";
    const HurrayNode *n = NULL;
    REQUIRE(out_form, fn, "out_form");
    REQUIRE(out_arithmetic, fn, "out_arithmetic");
    REQUIRE(out_x, fn, "out_x");
    REQUIRE(out_scale, fn, "out_scale");
    REQUIRE(out_offset, fn, "out_offset");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STEP, &n));
    const HurrayStepNode *s = &n->as.step;
    *out_form = s->form;
    *out_arithmetic = s->arithmetic;
    *out_x = s->x;
    *out_scale = s->scale;
    *out_offset = s->offset;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_step_groups(const HurrayDescriptor *desc, uint32_t node,
                                           const uint64_t **out_blocks, uint32_t *out_flags,
                                           uint32_t *out_indexed_axis, uint32_t *out_group_index)
{
    static const char fn[] = "hurray_descriptor_step_groups";
    const HurrayNode *n = NULL;
    REQUIRE(out_blocks, fn, "out_blocks");
    REQUIRE(out_flags, fn, "out_flags");
    REQUIRE(out_indexed_axis, fn, "out_indexed_axis");
    REQUIRE(out_group_index, fn, "out_group_index");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_STEP, &n));
    const HurrayStepNode *s = &n->as.step;
    *out_blocks = s->blocks;
    *out_flags = s->flags;
    *out_indexed_axis = s->indexed_axis;
    *out_group_index = s->group_index;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_ggml_node(const HurrayDescriptor *desc, uint32_t node,
                                         uint32_t *out_ggml_type, uint64_t *out_buffer_index,
                                         uint64_t *out_byte_offset)
{
    static const char fn[] = "hurray_descriptor_ggml_node";
    const HurrayNode *n = NULL;
    REQUIRE(out_ggml_type, fn, "out_ggml_type");
    REQUIRE(out_buffer_index, fn, "out_buffer_index");
    REQUIRE(out_byte_offset, fn, "out_byte_offset");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_GGML, &n));
    *out_ggml_type = n->as.ggml.ggml_type;
    *out_buffer_index = n->as.ggml.buffer_index;
    *out_byte_offset = n->as.ggml.byte_offset;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_bits(const HurrayDescriptor *desc, uint32_t node,
                                    uint32_t *out_input_count, uint32_t *out_inputs,
                                    uint32_t *out_shifts, int32_t *out_offset)
{
    static const char fn[] = "hurray_descriptor_bits";
    const HurrayNode *n = NULL;
    REQUIRE(out_input_count, fn, "out_input_count");
    REQUIRE(out_inputs, fn, "out_inputs");
    REQUIRE(out_shifts, fn, "out_shifts");
    REQUIRE(out_offset, fn, "out_offset");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_BITS, &n));
    const HurrayBitsNode *b = &n->as.bits;
    *out_input_count = b->input_count;
    for (uint32_t k = 0; k < 4; k++) {
        out_inputs[k] = b->inputs[k];
        out_shifts[k] = b->shifts[k];
    }
    *out_offset = b->offset;
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_gather(const HurrayDescriptor *desc, uint32_t node, uint32_t *out_x,
                                      uint32_t *out_index, uint32_t *out_axis)
{
    static const char fn[] = "hurray_descriptor_gather";
    const HurrayNode *n = NULL;
    REQUIRE(out_x, fn, "out_x");
    REQUIRE(out_index, fn, "out_index");
    REQUIRE(out_axis, fn, "out_axis");
    HURRAY__TRY(hurray__graph_find_node(desc, fn, node, HURRAY_NODE_GATHER, &n));
    *out_x = n->as.gather.x;
    *out_index = n->as.gather.index;
    *out_axis = n->as.gather.axis;
    return HURRAY_OK;
}
