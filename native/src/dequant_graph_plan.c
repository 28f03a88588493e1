/*
 * dequant_graph_plan.c -- the plan of a version-2 descriptor's graph, made
 * once per dequantize call (dequant_graph_shared.h): per node its row-major
 * strides and the scratch its evaluation needs, per stored node its bytes'
 * address and code tables, per step its grid.
 *
 * Which types a node is asked for follows from the graph: node 0 is asked
 * for float32; a step asks its x, scale and offset for its arithmetic; a
 * gather asks its x, and a stored node its codebook, for whatever they are
 * asked for themselves. Group indices, gather indices and the inputs of a
 * bits node are read as codes, never as values. Because every reference
 * points to a later node, one pass in index order sees every consumer of a
 * node before the node, and one pass backwards builds a codebook's values
 * before the table that looks them up.
 */
#include <stdlib.h>

#include "dequant_graph_shared.h"
#include "dtype.h"
#include "status.h"

static uint32_t arithmetic_type(uint32_t dtype)
{
    switch (dtype) {
    case HURRAY_DTYPE_FLOAT16: return HURRAY__G_F16;
    case HURRAY_DTYPE_BFLOAT16: return HURRAY__G_BF16;
    case HURRAY_DTYPE_FLOAT32: return HURRAY__G_F32;
    default: /* HURRAY_DTYPE_FLOAT64: the check allows no other */ return HURRAY__G_F64;
    }
}

/* The value kind of a stored node's codes. */
static uint8_t value_kind(const HurrayStoredNode *s, uint32_t bits)
{
    if (bits <= 8) {
        return HURRAY__G_VALUE_TABLE;
    }
    if (s->codebook != 0) {
        return HURRAY__G_VALUE_BOOK;
    }
    switch (s->dtype) {
    case HURRAY_DTYPE_FLOAT16: return HURRAY__G_VALUE_F16;
    case HURRAY_DTYPE_BFLOAT16: return HURRAY__G_VALUE_BF16;
    case HURRAY_DTYPE_FLOAT32: return HURRAY__G_VALUE_F32;
    case HURRAY_DTYPE_FLOAT64: return HURRAY__G_VALUE_F64;
    default: return HURRAY__G_VALUE_INT;
    }
}

/* The nodes whose evaluation an evaluation of node i may start (and so
 * whose scratch lies below its own), into out; their count. */
static uint32_t evaluated_children(const HurrayNode *node, uint32_t out[3])
{
    switch (node->kind) {
    case HURRAY_NODE_STORED: out[0] = node->as.stored.codebook; return out[0] != 0;
    case HURRAY_NODE_STEP: {
        uint32_t count = 0;
        out[count++] = node->as.step.x;
        out[count++] = node->as.step.scale;
        if (node->as.step.offset != 0) {
            out[count++] = node->as.step.offset;
        }
        return count;
    }
    case HURRAY_NODE_GATHER: out[0] = node->as.gather.x; return 1;
    default: return 0;
    }
}

/* Which types each node is asked for (bit t of demand[i]). */
static void find_demand(const HurrayGraph *graph, uint8_t *demand)
{
    memset(demand, 0, HURRAY_MAX_NODES);
    demand[0] = 1u << HURRAY__G_F32;
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        if (demand[i] == 0) {
            continue;
        }
        switch (node->kind) {
        case HURRAY_NODE_STORED:
            if (node->as.stored.codebook != 0) {
                demand[node->as.stored.codebook] |= demand[i];
            }
            break;
        case HURRAY_NODE_STEP: {
            uint8_t bit = (uint8_t)(1u << arithmetic_type(node->as.step.arithmetic));
            demand[node->as.step.x] |= bit;
            demand[node->as.step.scale] |= bit;
            if (node->as.step.offset != 0) {
                demand[node->as.step.offset] |= bit;
            }
            break;
        }
        case HURRAY_NODE_GATHER: demand[node->as.gather.x] |= demand[i]; break;
        default: break;
        }
    }
}

/* A bits node whose sum might pass 2^63 (with its offset): summed in 128
 * bits. */
static uint8_t bits_wide(const HurrayGraph *graph, const HurrayBitsNode *b)
{
    /* Each term is below 2^(shift + width) <= 2^63. */
    double bound = b->offset < 0 ? -(double)b->offset : (double)b->offset;
    for (uint32_t k = 0; k < b->input_count; k++) {
        uint32_t width = hurray__dtype_bits(graph->nodes[b->inputs[k]].as.stored.dtype);
        bound += (double)((uint64_t)1 << (b->shifts[k] + width - 1)) * 2.0;
    }
    return bound >= 0x1p63;
}

/* The value of code c (below 2^b) of a stored node of at most 8 bits and
 * no codebook, exactly. */
static double code_value(const HurrayGraphNodePlan *np, uint32_t c)
{
    const HurrayStoredNode *s = &np->node->as.stored;
    if (hurray__dtype_is_signed_int(s->dtype) || hurray__dtype_is_unsigned_int(s->dtype)) {
        return (double)hurray__graph_integer(np, c);
    }
    if (s->value_rule == HURRAY_VALUE_RULE_E8M0_NO_NAN && c == 255) {
        return 0x1p128; /* +inf in every type narrower than float64 */
    }
    return hurray__code_table(s->dtype)[c]; /* bool, and the 8-, 6- and 4-bit floats */
}

/* The tables of node i, one per type asked for: entry c is the value of
 * code c & mask, so that a byte of a padded element indexes it as it is. */
static void build_tables(HurrayGraphPlan *plan, uint32_t i, uint8_t **at)
{
    HurrayGraphNodePlan *np = &plan->nodes[i];
    uint32_t codes = 1u << np->bits;
    for (uint32_t t = 0; t < HURRAY__G_TYPES; t++) {
        if (!(np->demand & (1u << t))) {
            continue;
        }
        uint8_t *table = *at;
        *at += 256 * (size_t)hurray__g_size(t);
        if (np->node->as.stored.codebook != 0) {
            /* The codebook's first 2^b values (it has at least that many). */
            hurray__graph_range(plan, np->node->as.stored.codebook, t, 0, codes, table,
                                plan->arena);
        } else {
            for (uint32_t c = 0; c < codes; c++) {
                hurray__g_put(t, table, c, code_value(np, c));
            }
        }
        uint32_t size = hurray__g_size(t);
        for (uint32_t c = codes; c < 256; c++) {
            memcpy(table + (size_t)c * size, table + (size_t)(c & (codes - 1)) * size, size);
        }
        np->table[t] = table;
    }
}

/* Per-node facts that need no memory of their own. */
static HurrayStatus plan_node(HurrayGraphPlan *plan, uint32_t i, const HurrayBufferList *list)
{
    const HurrayGraph *graph = plan->graph;
    const HurrayNode *node = &graph->nodes[i];
    HurrayGraphNodePlan *np = &plan->nodes[i];
    np->node = node;
    np->last = node->rank == 0 ? 1 : node->shape[node->rank - 1];
    np->count = 1;
    for (uint32_t k = 0; k < node->rank; k++) {
        np->count *= node->shape[k]; /* checked: fits 63 bits */
    }
    if (node->kind == HURRAY_NODE_STORED || node->kind == HURRAY_NODE_GGML) {
        uint64_t index = node->kind == HURRAY_NODE_STORED ? node->as.stored.buffer_index
                                                          : node->as.ggml.buffer_index;
        uint64_t offset = node->kind == HURRAY_NODE_STORED ? node->as.stored.byte_offset
                                                           : node->as.ggml.byte_offset;
        const HurrayBuffer *buffer = NULL;
        void *data = NULL;
        uint64_t len = 0;
        HURRAY__TRY(hurray_buffer_list_get(list, index, &buffer));
        HURRAY__TRY(hurray_buffer_data(buffer, &data, &len));
        np->data = data;
        /* Only formed for a node with elements, whose reach check_buffers
         * proved inside the buffer. */
        np->base = np->count != 0 ? np->data + offset : np->data;
    }
    if (node->kind == HURRAY_NODE_STORED) {
        const HurrayStoredNode *s = &node->as.stored;
        np->bits = hurray__dtype_bits(s->dtype);
        np->unit = s->addressing == HURRAY_ADDRESSING_WORDS ? s->container_bits / 8u
                   : np->bits >= 8                          ? np->bits / 8u
                                                            : 1u;
        np->value = value_kind(s, np->bits);
        np->is_signed = hurray__dtype_is_signed_int(s->dtype);
        np->swap = s->byte_order == HURRAY_BYTE_ORDER_BIG;
        np->code_mask = np->bits >= 64 ? UINT64_MAX : ((uint64_t)1 << np->bits) - 1;
        if (s->codebook == 0) { /* the table's values, by arithmetic (dequant_graph_avx2.c) */
            np->fp8 = s->dtype == HURRAY_DTYPE_FLOAT8_E4M3FN ? 1
                      : s->dtype == HURRAY_DTYPE_FLOAT8_E5M2 ? 2
                                                             : 0;
        }
    } else if (node->kind == HURRAY_NODE_STEP) {
        const HurrayStepNode *s = &node->as.step;
        np->arith = (uint8_t)arithmetic_type(s->arithmetic);
        if (s->group_index != 0) {
            /* The group count: the indexed extent of the first parameter
             * that is not a constant (the check found one). */
            const HurrayNode *scale = &graph->nodes[s->scale];
            const HurrayNode *param = scale->kind != HURRAY_NODE_CONSTANT
                                          ? scale
                                          : &graph->nodes[s->offset];
            np->group_count = param->shape[s->indexed_axis];
        }
    } else if (node->kind == HURRAY_NODE_BITS) {
        np->bits_wide = bits_wide(graph, &node->as.bits);
    }
    return HURRAY_OK;
}

static const uint8_t IDENTITY_ORDER[HURRAY__MAX_SLOTS] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
    44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};

/* The bytes of a node's row cache (dequant_graph_shared.h), or 0 when it gets
 * none: a words node of codes of at most 8 bits asked for as values,
 * packed along another axis than the last, whose consecutive elements
 * along that axis fill a container slot after slot (dense codes that
 * never straddle, interleaved slots whose chunks follow each other). */
static size_t cache_bytes(const HurrayNode *node, uint8_t demand, uint64_t req)
{
    if (node->kind != HURRAY_NODE_STORED || demand == 0) {
        return 0;
    }
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t b = hurray__dtype_bits(s->dtype);
    if (s->addressing != HURRAY_ADDRESSING_WORDS || b > 8 || node->rank < 2 ||
        s->packed_axis == node->rank - 1) {
        return 0;
    }
    uint32_t per;
    if (s->packing == HURRAY_PACKING_DENSE) {
        if (s->container_bits % b != 0) {
            return 0;
        }
        per = s->container_bits / b;
    } else {
        if ((s->slot_flags & HURRAY_SLOTS_PLANAR) || s->chunk_stride != s->chunk_containers) {
            return 0;
        }
        per = s->slot_count;
    }
    size_t bytes = (size_t)per * req * sizeof(float);
    return bytes > ((size_t)1 << 18) ? 0 : sizeof(HurrayGraphRowCache) + bytes;
}

/* Row-major strides of `shape`, in elements (each product bounded by an
 * element count the check proved to fit 63 bits, zeros counted as ones). */
static void row_major(uint32_t rank, const uint64_t *shape, uint64_t *out)
{
    uint64_t step = 1;
    for (uint32_t k = rank; k-- > 0;) {
        out[k] = step;
        step *= shape[k] == 0 ? 1 : shape[k];
    }
}

HurrayStatus hurray__graph_plan_new(const HurrayDescriptor *desc, const HurrayBufferList *list,
                                    int simd, uint64_t elements, HurrayGraphPlan **out)
{
    const HurrayGraph *graph = desc->graph;
    /* A tile is at most the tensor; a code table asks for 256 values. */
    HurrayGraphPlan sizing;
    sizing.req = elements < HURRAY__G_REQ ? (elements < 256 ? 256 : elements) : HURRAY__G_REQ;
    uint8_t demand[HURRAY_MAX_NODES];
    find_demand(graph, demand);
    size_t scratch[HURRAY_MAX_NODES];
    size_t words = 0, tables = 0;
    for (uint32_t i = graph->node_count; i-- > 0;) {
        const HurrayNode *node = &graph->nodes[i];
        uint32_t children[3];
        uint32_t count = evaluated_children(node, children);
        size_t below = 0;
        for (uint32_t k = 0; k < count; k++) {
            below = scratch[children[k]] > below ? scratch[children[k]] : below;
        }
        scratch[i] = hurray__graph_own_scratch(&sizing, node) + below;
        words += 2u * node->rank; /* strides, and a step's grid strides */
        if (node->kind == HURRAY_NODE_STORED && hurray__dtype_bits(node->as.stored.dtype) <= 8) {
            for (uint32_t t = 0; t < HURRAY__G_TYPES; t++) {
                tables += (demand[i] >> t & 1u) * 256u * hurray__g_size(t);
            }
        }
    }
    /* Each piece a multiple of 64 bytes: the arena's arrays, the tables
     * and the pool of strides stay aligned. */
    size_t caches = 0;
    for (uint32_t i = 0; i < graph->node_count; i++) {
        caches += (cache_bytes(&graph->nodes[i], demand[i], sizing.req) + 63) & ~(size_t)63;
    }
    size_t head = (sizeof(HurrayGraphPlan) + 63) & ~(size_t)63;
    size_t arena = (scratch[0] + 63) & ~(size_t)63;
    tables = (tables + 63) & ~(size_t)63;
    size_t size = head + arena + tables + caches + 8 * words;
    uint8_t *block = malloc(size);
    if (block == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "hurray_dequantize: out of memory for the plan of a graph (%zu bytes)",
                            size);
    }
    HurrayGraphPlan *plan = (HurrayGraphPlan *)(void *)block;
    memset(plan, 0, sizeof *plan);
    plan->graph = graph;
    plan->simd = simd;
    plan->req = sizing.req;
    plan->arena = block + head;
    uint8_t *at = plan->arena + arena;
    uint8_t *cache_at = at + tables;
    uint64_t *pool = (uint64_t *)(void *)(cache_at + caches);
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        HurrayGraphNodePlan *np = &plan->nodes[i];
        HurrayStatus status = plan_node(plan, i, list);
        if (status != HURRAY_OK) {
            free(block);
            return status;
        }
        np->demand = demand[i];
        np->scratch = scratch[i];
        size_t cache = cache_bytes(node, demand[i], plan->req);
        if (cache != 0) {
            np->cache = (HurrayGraphRowCache *)(void *)cache_at;
            np->cache->valid = 0;
            cache_at += (cache + 63) & ~(size_t)63;
            const HurrayStoredNode *s = &node->as.stored;
            np->cache_per = s->packing == HURRAY_PACKING_DENSE ? s->container_bits / np->bits
                                                               : s->slot_count;
            np->cache_order = s->packing == HURRAY_PACKING_DENSE ? IDENTITY_ORDER : s->order;
        }
        row_major(node->rank, node->shape, pool);
        np->strides = pool;
        pool += node->rank;
        if (node->kind == HURRAY_NODE_STEP) {
            uint64_t grid[HURRAY_MAX_RANK];
            const HurrayStepNode *s = &node->as.step;
            for (uint32_t k = 0; k < node->rank; k++) {
                uint64_t b = s->blocks[k];
                grid[k] = s->group_index != 0 && k == s->indexed_axis
                              ? np->group_count
                              : node->shape[k] / b + (node->shape[k] % b != 0);
            }
            row_major(node->rank, grid, pool);
            np->grid_strides = pool;
            pool += node->rank;
        }
    }
    /* Tables last to first: a codebook (a later node) is ready before the
     * table that looks it up is built from it. */
    for (uint32_t i = graph->node_count; i-- > 0;) {
        const HurrayGraphNodePlan *np = &plan->nodes[i];
        if (np->node->kind == HURRAY_NODE_STORED && np->value == HURRAY__G_VALUE_TABLE &&
            np->count != 0) {
            build_tables(plan, i, &at);
        }
    }
    *out = plan;
    return HURRAY_OK;
}

void hurray__graph_plan_free(HurrayGraphPlan *plan)
{
    free(plan);
}
