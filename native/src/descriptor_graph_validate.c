/*
 * descriptor_graph_validate.c -- every rule of a version-2 descriptor
 * (docs/impl/descriptor-encoding.md, "Version 2"; ADR-054), the one check
 * decode, validate, encode and check_buffers run on a descriptor with
 * nodes (hurray__descriptor_check_facts sends it here).
 *
 * In passes, each relying on the ones before: the header; each node's own
 * fields (codes known before they index a table, references in range and
 * after the node); the canonical order of the nodes; the rules between a
 * node and the nodes it names (element counts, grids, codebook lengths,
 * kinds of index nodes); node 0 against the tensor; buffer indices; and
 * last the reach of every stored and GGML node. Every refusal names the
 * node and the field.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>

#include "descriptor_graph.h"
#include "descriptor_reach.h"
#include "dtype.h"
#include "status.h"

#define INVALID HURRAY_ERROR_INVALID_DESCRIPTOR
#define UNSUPPORTED HURRAY_ERROR_UNSUPPORTED

static const char *form_name(uint32_t form)
{
    switch (form) {
    case HURRAY_FORM_MUL: return "mul";
    case HURRAY_FORM_DIV: return "div";
    case HURRAY_FORM_SUB_MUL: return "sub_mul";
    case HURRAY_FORM_MUL_ADD: return "mul_add";
    default: return "mul_sub";
    }
}

static const char *packing_name(uint32_t packing)
{
    switch (packing) {
    case HURRAY_PACKING_NONE: return "none";
    case HURRAY_PACKING_PADDED: return "padded";
    case HURRAY_PACKING_LSB_FIRST: return "lsb_first";
    case HURRAY_PACKING_GGML_SPLIT: return "ggml_split";
    case HURRAY_PACKING_DENSE: return "dense";
    default: return "slots";
    }
}

/* Every refusal of a node starts "descriptor: node I (KIND): ". */
#define NODE_FMT "descriptor: node %u (%s): "
#define NODE_ARGS(i, node) (unsigned)(i), hurray__node_kind_name((node)->kind)

/* A dtype of float16, bfloat16, float32 or float64: the arithmetic and
 * result types. */
static bool is_wide_float(uint32_t dtype)
{
    return dtype == HURRAY_DTYPE_FLOAT16 || dtype == HURRAY_DTYPE_BFLOAT16 ||
           dtype == HURRAY_DTYPE_FLOAT32 || dtype == HURRAY_DTYPE_FLOAT64;
}

static bool is_integer(uint32_t dtype)
{
    return hurray__dtype_is_signed_int(dtype) || hurray__dtype_is_unsigned_int(dtype);
}

/* A reference field of node i: 0 where allowed (not required), else a
 * later node that exists. */
static HurrayStatus check_reference(const HurrayGraph *graph, uint32_t i, const char *field,
                                    uint32_t value, bool required)
{
    const HurrayNode *node = &graph->nodes[i];
    if (value == 0 && !required) {
        return HURRAY_OK;
    }
    if (value <= i) {
        return hurray__fail(INVALID,
                            NODE_FMT "%s refers to node %u, which is not after it: a chain of "
                                     "nodes may not loop (and a node named twice comes after "
                                     "both that name it)",
                            NODE_ARGS(i, node), field, (unsigned)value);
    }
    if (value >= graph->node_count) {
        return hurray__fail(INVALID, NODE_FMT "%s refers to node %u, past the last node (%u)",
                            NODE_ARGS(i, node), field, (unsigned)value,
                            (unsigned)graph->node_count - 1);
    }
    return HURRAY_OK;
}

/* The node's element count into *out; OVERFLOW when the product of its
 * dimensions, a zero counted as one, exceeds INT64_MAX (as for version 1's
 * shape). */
static HurrayStatus node_element_count(const HurrayNode *node, uint32_t i, uint64_t *out)
{
    uint64_t count = 1, extent = 1;
    for (uint32_t k = 0; k < node->rank; k++) {
        uint64_t dim = node->shape[k];
        if (__builtin_mul_overflow(extent, dim == 0 ? 1 : dim, &extent) || extent > INT64_MAX) {
            return hurray__fail(HURRAY_ERROR_OVERFLOW,
                                NODE_FMT "shape[%u]: element count overflows 63 bits",
                                NODE_ARGS(i, node), (unsigned)k);
        }
        count *= dim; /* bounded by extent */
    }
    *out = count;
    return HURRAY_OK;
}

/* ---- each node's own fields ---- */

static HurrayStatus zero_field(uint32_t i, const HurrayNode *node, const char *field,
                               uint64_t value, const char *why)
{
    if (value != 0) {
        return hurray__fail(INVALID, NODE_FMT "%s must be 0 %s, not %" PRIu64, NODE_ARGS(i, node),
                            field, why, value);
    }
    return HURRAY_OK;
}

/* ELEMENTS addressing: version 1's packing rules for the node's dtype. */
static HurrayStatus check_elements(uint32_t i, const HurrayNode *node,
                                   const struct hurray__dtype_info *dtype)
{
    const HurrayStoredNode *s = &node->as.stored;
    static const char why[] = "with elements addressing";
    HURRAY__TRY(zero_field(i, node, "container bits", s->container_bits, why));
    HURRAY__TRY(zero_field(i, node, "packed axis", s->packed_axis, why));
    HURRAY__TRY(zero_field(i, node, "slot count", s->slot_count, why));
    HURRAY__TRY(zero_field(i, node, "slot flags", s->slot_flags, why));
    HURRAY__TRY(zero_field(i, node, "chunk containers", s->chunk_containers, why));
    HURRAY__TRY(zero_field(i, node, "chunk stride", s->chunk_stride, why));
    uint32_t bits = dtype->bits;
    if (s->packing == HURRAY_PACKING_DENSE || s->packing == HURRAY_PACKING_SLOTS) {
        return hurray__fail(INVALID, NODE_FMT "packing %s needs words addressing",
                            NODE_ARGS(i, node), packing_name(s->packing));
    }
    if (bits >= 8 && s->packing != HURRAY_PACKING_NONE) {
        return hurray__fail(INVALID,
                            NODE_FMT "packing %s does not fit dtype %s (a type of 8 bits or more "
                                     "takes packing none)",
                            NODE_ARGS(i, node), packing_name(s->packing), dtype->name);
    }
    if (bits < 8) {
        if (s->packing == HURRAY_PACKING_NONE) {
            return hurray__fail(INVALID,
                                NODE_FMT "packing none does not fit dtype %s, which is %u bits "
                                         "wide",
                                NODE_ARGS(i, node), dtype->name, (unsigned)bits);
        }
        if (s->packing == HURRAY_PACKING_LSB_FIRST && bits != 1 && bits != 2 && bits != 4) {
            return hurray__fail(INVALID,
                                NODE_FMT "packing lsb_first needs a width of 1, 2 or 4 bits; "
                                         "dtype %s is %u bits wide (say padded, or words)",
                                NODE_ARGS(i, node), dtype->name, (unsigned)bits);
        }
        if (s->packing == HURRAY_PACKING_GGML_SPLIT) {
            if (bits != 4) {
                return hurray__fail(INVALID,
                                    NODE_FMT "packing ggml_split needs a 4-bit dtype, "
                                             "not %s",
                                    NODE_ARGS(i, node), dtype->name);
            }
            if (node->rank == 0 || node->shape[node->rank - 1] % 32 != 0) {
                return hurray__fail(INVALID,
                                    NODE_FMT "packing ggml_split needs a last dimension that is a "
                                             "multiple of 32",
                                    NODE_ARGS(i, node));
            }
            uint64_t step = 1;
            for (uint32_t k = node->rank; k-- > 0;) {
                if ((uint64_t)s->strides[k] != step) {
                    return hurray__fail(INVALID,
                                        NODE_FMT "packing ggml_split needs row-major contiguous "
                                                 "strides",
                                        NODE_ARGS(i, node));
                }
                step *= node->shape[k] == 0 ? 1 : node->shape[k]; /* bounded: count checked */
            }
        }
    }
    if (s->byte_order != HURRAY_BYTE_ORDER_LITTLE && bits <= 8) {
        return hurray__fail(INVALID,
                            NODE_FMT "byte order big needs elements wider than 8 bits (dtype %s)",
                            NODE_ARGS(i, node), dtype->name);
    }
    if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        if (node->rank != 2 || bits < 8) {
            return hurray__fail(INVALID,
                                NODE_FMT "layout swizzled_128x4 needs rank 2 and a dtype of 8 "
                                         "bits or more",
                                NODE_ARGS(i, node));
        }
        for (uint32_t k = 0; k < 2; k++) {
            if (s->strides[k] != 0) {
                return hurray__fail(INVALID,
                                    NODE_FMT "strides[%u] must be 0 with layout swizzled_128x4 "
                                             "(the layout places every element)",
                                    NODE_ARGS(i, node), (unsigned)k);
            }
        }
    }
    return HURRAY_OK;
}

/* WORDS addressing: containers, the packed axis, and the slots. */
static HurrayStatus check_words(uint32_t i, const HurrayNode *node,
                                const struct hurray__dtype_info *dtype)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t w = s->container_bits, b = dtype->bits;
    if (s->packing != HURRAY_PACKING_DENSE && s->packing != HURRAY_PACKING_SLOTS) {
        return hurray__fail(INVALID, NODE_FMT "words addressing packs dense or slots, not %s",
                            NODE_ARGS(i, node), packing_name(s->packing));
    }
    if (s->layout != HURRAY_PART_LAYOUT_ROW_MAJOR) {
        return hurray__fail(INVALID, NODE_FMT "layout swizzled_128x4 needs elements addressing",
                            NODE_ARGS(i, node));
    }
    if (w != 8 && w != 16 && w != 32 && w != 64) {
        return hurray__fail(INVALID, NODE_FMT "container bits %u is not 8, 16, 32 or 64",
                            NODE_ARGS(i, node), (unsigned)w);
    }
    if (b > w) {
        return hurray__fail(INVALID,
                            NODE_FMT "a packing that overruns its words: dtype %s of %u bits does "
                                     "not fit a %u-bit container",
                            NODE_ARGS(i, node), dtype->name, (unsigned)b, (unsigned)w);
    }
    if (node->rank == 0 || s->packed_axis >= node->rank) {
        return hurray__fail(INVALID, NODE_FMT "packed axis %u is not below the rank %u",
                            NODE_ARGS(i, node), (unsigned)s->packed_axis, (unsigned)node->rank);
    }
    if (s->byte_order != HURRAY_BYTE_ORDER_LITTLE && w <= 8) {
        return hurray__fail(INVALID, NODE_FMT "byte order big needs containers wider than 8 bits",
                            NODE_ARGS(i, node));
    }
    if (s->packing == HURRAY_PACKING_DENSE) {
        static const char why[] = "with dense packing";
        HURRAY__TRY(zero_field(i, node, "slot count", s->slot_count, why));
        HURRAY__TRY(zero_field(i, node, "slot flags", s->slot_flags, why));
        HURRAY__TRY(zero_field(i, node, "chunk containers", s->chunk_containers, why));
        return zero_field(i, node, "chunk stride", s->chunk_stride, why);
    }
    uint32_t per = w / b;
    if (s->slot_count != per) {
        return hurray__fail(INVALID,
                            NODE_FMT "slot count %u is not floor(%u / %u) = %u, the slots of a "
                                     "container",
                            NODE_ARGS(i, node), (unsigned)s->slot_count, (unsigned)w, (unsigned)b,
                            (unsigned)per);
    }
    uint64_t seen = 0;
    for (uint32_t slot = 0; slot < HURRAY__MAX_SLOTS; slot++) {
        uint32_t at = s->order[slot];
        if (slot >= per) {
            if (at != 0) {
                return hurray__fail(INVALID, NODE_FMT "order[%u] past the slot count is not 0",
                                    NODE_ARGS(i, node), (unsigned)slot);
            }
            continue;
        }
        if (at >= per || (seen >> at) & 1u) {
            return hurray__fail(INVALID,
                                NODE_FMT "order is not a permutation of 0 .. %u (order[%u] is %u)",
                                NODE_ARGS(i, node), (unsigned)per - 1, (unsigned)slot,
                                (unsigned)at);
        }
        seen |= (uint64_t)1 << at;
    }
    if (s->chunk_containers == 0) {
        return hurray__fail(INVALID, NODE_FMT "chunk containers is 0 (slots need at least 1)",
                            NODE_ARGS(i, node));
    }
    if (s->chunk_stride < s->chunk_containers) {
        return hurray__fail(INVALID,
                            NODE_FMT "chunk stride %" PRIu64 " is below the chunk's %" PRIu64
                                     " containers",
                            NODE_ARGS(i, node), s->chunk_stride, s->chunk_containers);
    }
    if ((s->slot_flags & ~(uint32_t)HURRAY_SLOTS_PLANAR) != 0) {
        return hurray__fail(INVALID, NODE_FMT "slot flags 0x%x hold unknown bits",
                            NODE_ARGS(i, node), (unsigned)s->slot_flags);
    }
    if (s->chunk_containers == 1 && s->slot_flags != 0) {
        return hurray__fail(INVALID,
                            NODE_FMT "slot flags: planar with one container per chunk is the "
                                     "interleaved order; leave the flag clear",
                            NODE_ARGS(i, node));
    }
    return HURRAY_OK;
}

static HurrayStatus check_stored(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayStoredNode *s = &node->as.stored;
    const struct hurray__dtype_info *dtype = hurray__dtype_row(s->dtype);
    if (dtype->kind == HURRAY__KIND_NONE) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "dtype %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->dtype);
    }
    if (s->byte_order > HURRAY_BYTE_ORDER_BIG) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "byte order %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->byte_order);
    }
    if (s->addressing > HURRAY_ADDRESSING_WORDS) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "addressing %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->addressing);
    }
    if (s->packing > HURRAY_PACKING_SLOTS) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "packing %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->packing);
    }
    if (s->layout > HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "layout %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->layout);
    }
    if (s->value_rule > HURRAY_VALUE_RULE_E8M0_NO_NAN) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "value rule %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->value_rule);
    }
    if (dtype->kind == HURRAY__KIND_COMPLEX) {
        return hurray__fail(INVALID,
                            NODE_FMT "dtype %s is complex; a stored node holds real values",
                            NODE_ARGS(i, node), dtype->name);
    }
    if (s->value_rule == HURRAY_VALUE_RULE_E8M0_NO_NAN && s->dtype != HURRAY_DTYPE_FLOAT8_E8M0FNU) {
        return hurray__fail(INVALID,
                            NODE_FMT "value rule e8m0_no_nan is for float8_e8m0fnu, not %s",
                            NODE_ARGS(i, node), dtype->name);
    }
    HURRAY__TRY(check_reference(graph, i, "codebook", s->codebook, false));
    if (s->code_offset != 0 && !is_integer(s->dtype)) {
        return hurray__fail(INVALID,
                            NODE_FMT "code offset %" PRId32 " needs an integer dtype, not %s",
                            NODE_ARGS(i, node), s->code_offset, dtype->name);
    }
    if (s->codebook != 0) {
        if (!hurray__dtype_is_unsigned_int(s->dtype)) {
            return hurray__fail(INVALID,
                                NODE_FMT "a codebook is indexed by unsigned codes; dtype %s is "
                                         "not an unsigned integer type",
                                NODE_ARGS(i, node), dtype->name);
        }
        if (s->code_offset != 0) {
            return hurray__fail(INVALID,
                                NODE_FMT "code offset must be 0 with a codebook, not %" PRId32,
                                NODE_ARGS(i, node), s->code_offset);
        }
    }
    if (s->addressing == HURRAY_ADDRESSING_ELEMENTS) {
        return check_elements(i, node, dtype);
    }
    return check_words(i, node, dtype);
}

static HurrayStatus check_constant(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayConstantNode *c = &node->as.constant;
    if (!hurray__dtype_is_known(c->dtype)) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "dtype %u is unknown", NODE_ARGS(i, node),
                            (unsigned)c->dtype);
    }
    if (!is_wide_float(c->dtype) && c->dtype != HURRAY_DTYPE_INT32 &&
        c->dtype != HURRAY_DTYPE_INT64) {
        return hurray__fail(INVALID,
                            NODE_FMT "dtype %s: a constant is float16, bfloat16, float32, "
                                     "float64, int32 or int64",
                            NODE_ARGS(i, node), hurray__dtype_name(c->dtype));
    }
    uint32_t bits = hurray__dtype_bits(c->dtype);
    if (bits < 64 && (c->value_bits >> bits) != 0) {
        return hurray__fail(INVALID, NODE_FMT "value bytes past the %u bytes of %s are not zero",
                            NODE_ARGS(i, node), (unsigned)bits / 8, hurray__dtype_name(c->dtype));
    }
    return HURRAY_OK;
}

static HurrayStatus check_step(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayStepNode *s = &node->as.step;
    if (s->form < HURRAY_FORM_MUL || s->form > HURRAY_FORM_MUL_SUB) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "form %u is unknown", NODE_ARGS(i, node),
                            (unsigned)s->form);
    }
    if (!hurray__dtype_is_known(s->arithmetic)) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "arithmetic dtype %u is unknown",
                            NODE_ARGS(i, node), (unsigned)s->arithmetic);
    }
    if (!is_wide_float(s->arithmetic)) {
        return hurray__fail(INVALID,
                            NODE_FMT "arithmetic %s: a step computes in float16, bfloat16, "
                                     "float32 or float64",
                            NODE_ARGS(i, node), hurray__dtype_name(s->arithmetic));
    }
    HURRAY__TRY(check_reference(graph, i, "x", s->x, true));
    HURRAY__TRY(check_reference(graph, i, "scale", s->scale, true));
    bool takes_offset = s->form == HURRAY_FORM_SUB_MUL || s->form == HURRAY_FORM_MUL_ADD ||
                        s->form == HURRAY_FORM_MUL_SUB;
    if (takes_offset) {
        HURRAY__TRY(check_reference(graph, i, "offset", s->offset, true));
    } else if (s->offset != 0) {
        return hurray__fail(INVALID, NODE_FMT "offset must be 0: form %s has none, not node %u",
                            NODE_ARGS(i, node), form_name(s->form), (unsigned)s->offset);
    }
    if ((s->flags & ~(uint32_t)HURRAY_STEP_RAGGED) != 0) {
        return hurray__fail(INVALID, NODE_FMT "flags 0x%x hold unknown bits", NODE_ARGS(i, node),
                            (unsigned)s->flags);
    }
    HURRAY__TRY(check_reference(graph, i, "group index", s->group_index, false));
    if (s->group_index == 0) {
        HURRAY__TRY(zero_field(i, node, "indexed axis", s->indexed_axis, "without a group index"));
    } else if (s->indexed_axis >= node->rank) {
        return hurray__fail(INVALID, NODE_FMT "indexed axis %u is not below the rank %u",
                            NODE_ARGS(i, node), (unsigned)s->indexed_axis, (unsigned)node->rank);
    }
    for (uint32_t k = 0; k < node->rank; k++) {
        uint64_t block = s->blocks[k];
        if (s->group_index != 0 && k == s->indexed_axis) {
            if (block != 0) {
                return hurray__fail(INVALID,
                                    NODE_FMT
                                    "blocks[%u] must be 0 on the indexed axis, not %" PRIu64,
                                    NODE_ARGS(i, node), (unsigned)k, block);
            }
            continue;
        }
        if (block == 0) {
            return hurray__fail(INVALID,
                                NODE_FMT "blocks[%u] is 0 (a group holds at least one "
                                         "element)",
                                NODE_ARGS(i, node), (unsigned)k);
        }
        if (!(s->flags & HURRAY_STEP_RAGGED) && node->shape[k] % block != 0) {
            return hurray__fail(INVALID,
                                NODE_FMT "blocks[%u] = %" PRIu64
                                         " does not tile shape[%u] = %" PRIu64
                                         " (a partial last block needs the ragged flag)",
                                NODE_ARGS(i, node), (unsigned)k, block, (unsigned)k,
                                node->shape[k]);
        }
    }
    return HURRAY_OK;
}

static HurrayStatus check_ggml(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    uint64_t elements = 0, bytes = 0;
    if (!hurray__ggml_block(node->as.ggml.ggml_type, &elements, &bytes)) {
        return hurray__fail(UNSUPPORTED, NODE_FMT "ggml type %u is unknown", NODE_ARGS(i, node),
                            (unsigned)node->as.ggml.ggml_type);
    }
    if (node->rank == 0) {
        return hurray__fail(INVALID, NODE_FMT "rank 0: GGML blocks need at least one dimension",
                            NODE_ARGS(i, node));
    }
    uint64_t last = node->shape[node->rank - 1];
    if (last % elements != 0) {
        return hurray__fail(INVALID,
                            NODE_FMT "shape[%u] = %" PRIu64 " is not a multiple of the %" PRIu64
                                     " elements of a %s block",
                            NODE_ARGS(i, node), (unsigned)node->rank - 1, last, elements,
                            hurray__ggml_name(node->as.ggml.ggml_type));
    }
    return HURRAY_OK;
}

static HurrayStatus check_bits(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayBitsNode *b = &node->as.bits;
    if (b->input_count < 1 || b->input_count > 4) {
        return hurray__fail(INVALID, NODE_FMT "input count %u is not between 1 and 4",
                            NODE_ARGS(i, node), (unsigned)b->input_count);
    }
    for (uint32_t k = 0; k < 4; k++) {
        if (k < b->input_count) {
            char field[16];
            snprintf(field, sizeof field, "input %u", (unsigned)k);
            HURRAY__TRY(check_reference(graph, i, field, b->inputs[k], true));
        } else if (b->inputs[k] != 0 || b->shifts[k] != 0) {
            return hurray__fail(INVALID,
                                NODE_FMT "input %u and its shift past the input count must be 0",
                                NODE_ARGS(i, node), (unsigned)k);
        }
    }
    return HURRAY_OK;
}

static HurrayStatus check_gather(const HurrayGraph *graph, uint32_t i)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayGatherNode *g = &node->as.gather;
    HURRAY__TRY(check_reference(graph, i, "x", g->x, true));
    HURRAY__TRY(check_reference(graph, i, "index", g->index, true));
    if (node->rank == 0 || g->axis >= node->rank) {
        return hurray__fail(INVALID, NODE_FMT "axis %u is not below the rank %u",
                            NODE_ARGS(i, node), (unsigned)g->axis, (unsigned)node->rank);
    }
    return HURRAY_OK;
}

static HurrayStatus check_own_fields(const HurrayGraph *graph, uint32_t i)
{
    switch (graph->nodes[i].kind) {
    case HURRAY_NODE_STORED: return check_stored(graph, i);
    case HURRAY_NODE_CONSTANT: return check_constant(graph, i);
    case HURRAY_NODE_STEP: return check_step(graph, i);
    case HURRAY_NODE_GGML: return check_ggml(graph, i);
    case HURRAY_NODE_BITS: return check_bits(graph, i);
    case HURRAY_NODE_GATHER: return check_gather(graph, i);
    default:
        return hurray__fail(UNSUPPORTED, "descriptor: node %u: kind %u is unknown", (unsigned)i,
                            (unsigned)graph->nodes[i].kind);
    }
}

/* ---- the canonical order ---- */

/* The nodes node i names, in field order, into out (at most 4); 0 = none. */
static uint32_t children(const HurrayNode *node, uint32_t out[4])
{
    switch (node->kind) {
    case HURRAY_NODE_STORED: out[0] = node->as.stored.codebook; return 1;
    case HURRAY_NODE_STEP:
        out[0] = node->as.step.x;
        out[1] = node->as.step.scale;
        out[2] = node->as.step.offset;
        out[3] = node->as.step.group_index;
        return 4;
    case HURRAY_NODE_BITS:
        for (uint32_t k = 0; k < node->as.bits.input_count; k++) {
            out[k] = node->as.bits.inputs[k];
        }
        return node->as.bits.input_count;
    case HURRAY_NODE_GATHER:
        out[0] = node->as.gather.x;
        out[1] = node->as.gather.index;
        return 2;
    default: return 0;
    }
}

/* A depth-first walk from node i, children in field order: each node not
 * seen before must be the next index. References point to later nodes
 * (checked before), so the walk ends, at most 16 deep. */
static HurrayStatus walk_in_order(const HurrayGraph *graph, uint32_t i, uint8_t *seen,
                                  uint32_t *next)
{
    uint32_t named[4];
    uint32_t count = children(&graph->nodes[i], named);
    for (uint32_t k = 0; k < count; k++) {
        uint32_t child = named[k];
        if (child == 0 || seen[child]) {
            continue;
        }
        if (child != *next) {
            return hurray__fail(INVALID,
                                "descriptor: node order: a depth-first walk from node 0 "
                                "(children in field order) meets node %u where node %u must "
                                "come (nodes are numbered in that order)",
                                (unsigned)child, (unsigned)*next);
        }
        seen[child] = 1;
        (*next)++;
        HURRAY__TRY(walk_in_order(graph, child, seen, next));
    }
    return HURRAY_OK;
}

static HurrayStatus check_order(const HurrayGraph *graph)
{
    uint8_t seen[HURRAY_MAX_NODES] = {1};
    uint32_t next = 1;
    HURRAY__TRY(walk_in_order(graph, 0, seen, &next));
    if (next != graph->node_count) {
        return hurray__fail(INVALID, "descriptor: node %u (%s) is not reached from node 0",
                            (unsigned)next, hurray__node_kind_name(graph->nodes[next].kind));
    }
    return HURRAY_OK;
}

/* ---- rules between nodes ---- */

/* An index node (a group index, a gather index): a rank-1 integer stored
 * node with no codebook and no code offset, of `length` elements. */
static HurrayStatus check_index_node(const HurrayGraph *graph, uint32_t i, const char *field,
                                     uint32_t ref, uint64_t length, uint32_t axis)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayNode *index = &graph->nodes[ref];
    if (index->kind != HURRAY_NODE_STORED || !is_integer(index->as.stored.dtype) ||
        index->as.stored.codebook != 0 || index->as.stored.code_offset != 0) {
        return hurray__fail(INVALID,
                            NODE_FMT "%s (node %u) must be a stored node of an integer dtype "
                                     "with no codebook or code offset",
                            NODE_ARGS(i, node), field, (unsigned)ref);
    }
    if (index->rank != 1 || index->shape[0] != length) {
        return hurray__fail(INVALID,
                            NODE_FMT "%s (node %u) must be rank 1 of length shape[%u] = %" PRIu64,
                            NODE_ARGS(i, node), field, (unsigned)ref, (unsigned)axis, length);
    }
    return HURRAY_OK;
}

/* A step's parameter (scale or offset): a constant, or the grid's shape;
 * on the indexed axis the first parameter with a grid sets the group count
 * (*group_count, UINT64_MAX while unset). */
static HurrayStatus check_parameter(const HurrayGraph *graph, uint32_t i, const char *field,
                                    uint32_t ref, uint64_t *group_count)
{
    const HurrayNode *node = &graph->nodes[i];
    const HurrayStepNode *s = &node->as.step;
    const HurrayNode *param = &graph->nodes[ref];
    if (param->kind == HURRAY_NODE_CONSTANT) {
        return HURRAY_OK;
    }
    if (param->rank != node->rank) {
        return hurray__fail(INVALID,
                            NODE_FMT "%s (node %u) has rank %u; it must be a constant or have the "
                                     "step's grid, of rank %u",
                            NODE_ARGS(i, node), field, (unsigned)ref, (unsigned)param->rank,
                            (unsigned)node->rank);
    }
    for (uint32_t k = 0; k < node->rank; k++) {
        uint64_t want;
        if (s->group_index != 0 && k == s->indexed_axis) {
            if (*group_count == UINT64_MAX) {
                *group_count = param->shape[k];
            }
            want = *group_count;
        } else {
            /* blocks[k] >= 1: ceil without overflow */
            want = node->shape[k] / s->blocks[k] + (node->shape[k] % s->blocks[k] != 0);
        }
        if (param->shape[k] != want) {
            return hurray__fail(INVALID,
                                NODE_FMT "%s (node %u): shape[%u] is %" PRIu64
                                         ", the step's grid has %" PRIu64 " there",
                                NODE_ARGS(i, node), field, (unsigned)ref, (unsigned)k,
                                param->shape[k], want);
        }
    }
    return HURRAY_OK;
}

static HurrayStatus check_links(const HurrayGraph *graph, uint32_t i, const uint64_t *counts)
{
    const HurrayNode *node = &graph->nodes[i];
    switch (node->kind) {
    case HURRAY_NODE_STORED: {
        uint32_t book = node->as.stored.codebook;
        if (book == 0) {
            return HURRAY_OK;
        }
        uint32_t b = hurray__dtype_bits(node->as.stored.dtype);
        const HurrayNode *codebook = &graph->nodes[book];
        if (codebook->rank != 1) {
            return hurray__fail(INVALID, NODE_FMT "codebook (node %u) has rank %u, not 1",
                                NODE_ARGS(i, node), (unsigned)book, (unsigned)codebook->rank);
        }
        /* Counts are below 2^63, so a code of 63 bits or more always needs more. */
        if (b >= 63 || counts[book] < ((uint64_t)1 << b)) {
            return hurray__fail(INVALID,
                                NODE_FMT "a codebook shorter than its code width needs: codebook "
                                         "(node %u) has %" PRIu64
                                         " entries, %u-bit codes need %" PRIu64,
                                NODE_ARGS(i, node), (unsigned)book, counts[book], (unsigned)b,
                                b >= 63 ? UINT64_MAX : (uint64_t)1 << b);
        }
        return HURRAY_OK;
    }
    case HURRAY_NODE_STEP: {
        const HurrayStepNode *s = &node->as.step;
        if (counts[s->x] != counts[i]) {
            return hurray__fail(INVALID,
                                NODE_FMT "x (node %u) has %" PRIu64 " elements, the step %" PRIu64,
                                NODE_ARGS(i, node), (unsigned)s->x, counts[s->x], counts[i]);
        }
        uint64_t group_count = UINT64_MAX;
        HURRAY__TRY(check_parameter(graph, i, "scale", s->scale, &group_count));
        if (s->offset != 0) {
            HURRAY__TRY(check_parameter(graph, i, "offset", s->offset, &group_count));
        }
        if (s->group_index != 0) {
            if (group_count == UINT64_MAX) {
                return hurray__fail(INVALID,
                                    NODE_FMT "the indexed axis needs a scale or offset with a "
                                             "grid; both are constants",
                                    NODE_ARGS(i, node));
            }
            return check_index_node(graph, i, "group index", s->group_index,
                                    node->shape[s->indexed_axis], s->indexed_axis);
        }
        return HURRAY_OK;
    }
    case HURRAY_NODE_BITS: {
        const HurrayBitsNode *b = &node->as.bits;
        for (uint32_t k = 0; k < b->input_count; k++) {
            const HurrayNode *input = &graph->nodes[b->inputs[k]];
            if (input->kind != HURRAY_NODE_STORED ||
                !hurray__dtype_is_unsigned_int(input->as.stored.dtype) ||
                input->as.stored.codebook != 0 || input->as.stored.code_offset != 0) {
                return hurray__fail(INVALID,
                                    NODE_FMT "input %u (node %u) must be a stored node of an "
                                             "unsigned integer dtype with no codebook or code "
                                             "offset",
                                    NODE_ARGS(i, node), (unsigned)k, (unsigned)b->inputs[k]);
            }
            bool same = input->rank == node->rank;
            for (uint32_t d = 0; same && d < node->rank; d++) {
                same = input->shape[d] == node->shape[d];
            }
            if (!same) {
                return hurray__fail(INVALID, NODE_FMT "input %u (node %u) must have its shape",
                                    NODE_ARGS(i, node), (unsigned)k, (unsigned)b->inputs[k]);
            }
            uint32_t bits = hurray__dtype_bits(input->as.stored.dtype);
            if (b->shifts[k] + bits > 63) {
                return hurray__fail(INVALID,
                                    NODE_FMT "shift %u of input %u (%u bits) reaches past bit 62",
                                    NODE_ARGS(i, node), (unsigned)b->shifts[k], (unsigned)k,
                                    (unsigned)bits);
            }
        }
        return HURRAY_OK;
    }
    case HURRAY_NODE_GATHER: {
        const HurrayGatherNode *g = &node->as.gather;
        const HurrayNode *x = &graph->nodes[g->x];
        bool same = x->rank == node->rank;
        for (uint32_t d = 0; same && d < node->rank; d++) {
            same = d == g->axis || x->shape[d] == node->shape[d];
        }
        if (!same) {
            return hurray__fail(INVALID,
                                NODE_FMT "x (node %u) must have its shape except along axis %u",
                                NODE_ARGS(i, node), (unsigned)g->x, (unsigned)g->axis);
        }
        return check_index_node(graph, i, "index", g->index, node->shape[g->axis], g->axis);
    }
    default: return HURRAY_OK;
    }
}

/* ---- buffers and the whole ---- */

HurrayStatus hurray__graph_buffer_indices(const HurrayGraph *graph, uint32_t *out_count)
{
    uint32_t used = 0; /* bit b: some node lives in buffer b */
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        uint64_t index;
        if (node->kind == HURRAY_NODE_STORED) {
            index = node->as.stored.buffer_index;
        } else if (node->kind == HURRAY_NODE_GGML) {
            index = node->as.ggml.buffer_index;
        } else {
            continue;
        }
        /* At most 16 nodes hold buffers, so an index of 16 or more leaves a gap. */
        if (index >= HURRAY_MAX_NODES) {
            return hurray__fail(INVALID,
                                NODE_FMT "buffer index %" PRIu64
                                         " leaves a gap (buffer indices must be exactly 0 .. k-1)",
                                NODE_ARGS(i, node), index);
        }
        used |= 1u << index;
    }
    uint32_t count = (uint32_t)__builtin_ctz(~used);
    if ((used >> count) != 0) {
        return hurray__fail(INVALID,
                            "descriptor: buffer indices leave a gap: no node uses buffer %u "
                            "(buffer indices must be exactly 0 .. k-1)",
                            (unsigned)count);
    }
    *out_count = count;
    return HURRAY_OK;
}

HurrayStatus hurray__graph_check_rules(const HurrayDescriptor *desc)
{
    /* Not a const object, only a const view (as hurray__descriptor_check_facts). */
    HurrayGraph *graph = desc->graph;
    if (graph->node_count < 1 || graph->node_count > HURRAY_MAX_NODES) {
        return hurray__fail(INVALID, "descriptor: node count %u is not between 1 and %d",
                            (unsigned)graph->node_count, HURRAY_MAX_NODES);
    }
    if (graph->result_dtype != 0) {
        if (!hurray__dtype_is_known(graph->result_dtype)) {
            return hurray__fail(UNSUPPORTED, "descriptor: result dtype %u is unknown",
                                (unsigned)graph->result_dtype);
        }
        if (!is_wide_float(graph->result_dtype)) {
            return hurray__fail(INVALID,
                                "descriptor: result dtype %s is not float16, bfloat16, float32 "
                                "or float64",
                                hurray__dtype_name(graph->result_dtype));
        }
    }
    uint64_t tensor_count = 1;
    for (uint32_t k = 0; k < desc->rank; k++) {
        tensor_count *= desc->shape[k]; /* bounded: the row-major strides exist */
    }
    uint64_t counts[HURRAY_MAX_NODES];
    for (uint32_t i = 0; i < graph->node_count; i++) {
        HURRAY__TRY(node_element_count(&graph->nodes[i], i, &counts[i]));
        HURRAY__TRY(check_own_fields(graph, i));
    }
    HURRAY__TRY(check_order(graph));
    for (uint32_t i = 0; i < graph->node_count; i++) {
        HURRAY__TRY(check_links(graph, i, counts));
    }
    if (counts[0] != tensor_count) {
        return hurray__fail(INVALID,
                            "descriptor: node 0 (%s) has %" PRIu64
                            " elements, the tensor's shape %" PRIu64,
                            hurray__node_kind_name(graph->nodes[0].kind), counts[0], tensor_count);
    }
    uint32_t buffer_count = 0;
    HURRAY__TRY(hurray__graph_buffer_indices(graph, &buffer_count));
    for (uint32_t i = 0; i < graph->node_count; i++) {
        HURRAY__TRY(hurray__graph_node_reach(graph, i, &graph->before[i], &graph->after[i]));
    }
    /* Written through the const view: see hurray__descriptor_check_facts. */
    ((HurrayDescriptor *)desc)->facts.buffer_count = buffer_count;
    return HURRAY_OK;
}
