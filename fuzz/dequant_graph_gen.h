/*
 * dequant_graph_gen.h -- the graph case of fuzz/dequant_fuzz.c: a small
 * generator of version-2 descriptors, driven by the fuzzer's bytes, and a
 * reference evaluator of one element at a time to check them against.
 *
 * Input (after the marker byte 'G'): the bytes choose, in order, the
 * tensor's shape, a tree of nodes (stored nodes of any dtype in any
 * addressing, constants, steps of every form and arithmetic with blocks,
 * ragged blocks and indexed axes, GGML, bits and gather nodes), then the
 * output type, the row range and whether a buffer is one byte short or an
 * index out of range; a short input reads as zeros. The nodes are built
 * through hurray.h's builder (node 0 first, children in field order), each
 * stored or GGML node in a buffer of its own, malloc'ed to exactly the
 * bytes check_buffers proves it reaches (its byte offset leaves room for
 * negative strides), filled from a generator the input seeds; index nodes
 * hold valid values unless the input asks for one out of range.
 *
 * Properties, each an abort() when broken:
 *  1. no crash, no undefined behaviour, no access out of bounds, no leak;
 *  2. a refusal leaves a message and writes nothing; a short buffer is
 *     BUFFER_TOO_SMALL and a bad index OUT_OF_RANGE;
 *  3. the scalar and AVX2 paths give the same bytes;
 *  4. a row range gives the whole tensor's bytes at its place;
 *  5. the float32 values are the reference's (ref_value below), which
 *     reads each code with descriptor_graph_codes.h and evaluates the spec's
 *     arithmetic element by element, with nothing of the plan: the first
 *     and last elements and a sample of 46 others per case.
 */
#ifndef HURRAY_FUZZ_DEQUANT_GRAPH_GEN_H
#define HURRAY_FUZZ_DEQUANT_GRAPH_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant_graph_round.h"
#include "dequant_shared.h"
#include "descriptor_graph.h"
#include "descriptor_graph_codes.h"
#include "dtype.h"
#include "hurray.h"

#define GEN_MAX_ELEMENTS 1024u

/* The generator and the reference are the harness, not the code under
 * test: their comparisons would swamp the coverage libFuzzer steers by. */
#if defined(__clang__) && __clang_major__ >= 13
#define GEN_HARNESS __attribute__((no_sanitize("coverage")))
#else
#define GEN_HARNESS
#endif

/* ---- the bytes that drive the generator ----------------------------------- */

typedef struct GenInput {
    const uint8_t *data;
    size_t size, at;
    uint64_t rng; /* fills buffers: seeded from the input */
} GenInput;

GEN_HARNESS static uint32_t gen_byte(GenInput *in)
{
    return in->at < in->size ? in->data[in->at++] : 0;
}

/* A choice in [0, n). */
GEN_HARNESS static uint32_t gen_pick(GenInput *in, uint32_t n)
{
    return n <= 1 ? 0 : gen_byte(in) % n;
}

GEN_HARNESS static uint64_t gen_random(GenInput *in)
{
    uint64_t x = in->rng;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return in->rng = x;
}

/* ---- the tree, planned before it is built --------------------------------- */

typedef struct GenNode {
    uint32_t kind;
    uint32_t rank;
    uint64_t shape[4];
    /* stored */
    uint32_t dtype, words, packing, container_bits, packed_axis, planar, slot_count, big, swizzled;
    uint64_t chunk_containers, chunk_stride;
    uint8_t order[64];
    int64_t strides[4];
    int32_t code_offset;
    uint32_t codebook, no_nan, index_node;
    uint64_t byte_offset;
    /* constant */
    uint64_t value_bits;
    /* step */
    uint32_t form, arithmetic, x, scale, offset, group_index, indexed_axis, ragged;
    uint64_t blocks[4];
    /* ggml */
    uint32_t ggml_type;
    /* bits */
    uint32_t inputs[4], shifts[4], input_count;
    int32_t bits_offset;
    /* gather */
    uint32_t axis, index;
    uint64_t bound; /* index nodes: values in [0, bound) */
} GenNode;

typedef struct GenTree {
    GenNode nodes[HURRAY_MAX_NODES];
    uint32_t count;
    int full; /* a node was refused for want of room */
} GenTree;

GEN_HARNESS static uint64_t gen_count(const uint64_t *shape, uint32_t rank)
{
    uint64_t n = 1;
    for (uint32_t k = 0; k < rank; k++) {
        n *= shape[k];
    }
    return n;
}

GEN_HARNESS static uint32_t gen_reserve(GenTree *t)
{
    if (t->count == HURRAY_MAX_NODES) {
        t->full = 1;
        return HURRAY_MAX_NODES - 1; /* overwritten: the case is dropped */
    }
    memset(&t->nodes[t->count], 0, sizeof t->nodes[0]);
    return t->count++;
}

static const uint32_t GEN_DTYPES[] = {HURRAY_DTYPE_UINT1,
                                      HURRAY_DTYPE_UINT2,
                                      HURRAY_DTYPE_UINT3,
                                      HURRAY_DTYPE_UINT4,
                                      HURRAY_DTYPE_UINT5,
                                      HURRAY_DTYPE_UINT6,
                                      HURRAY_DTYPE_UINT7,
                                      HURRAY_DTYPE_UINT8,
                                      HURRAY_DTYPE_INT2,
                                      HURRAY_DTYPE_INT3,
                                      HURRAY_DTYPE_INT4,
                                      HURRAY_DTYPE_INT8,
                                      HURRAY_DTYPE_INT16,
                                      HURRAY_DTYPE_UINT16,
                                      HURRAY_DTYPE_INT32,
                                      HURRAY_DTYPE_UINT32,
                                      HURRAY_DTYPE_INT64,
                                      HURRAY_DTYPE_UINT64,
                                      HURRAY_DTYPE_FLOAT16,
                                      HURRAY_DTYPE_BFLOAT16,
                                      HURRAY_DTYPE_FLOAT32,
                                      HURRAY_DTYPE_FLOAT64,
                                      HURRAY_DTYPE_FLOAT8_E4M3FN,
                                      HURRAY_DTYPE_FLOAT8_E5M2,
                                      HURRAY_DTYPE_FLOAT8_E8M0FNU,
                                      HURRAY_DTYPE_FLOAT6_E2M3FN,
                                      HURRAY_DTYPE_FLOAT4_E2M1FN,
                                      HURRAY_DTYPE_FLOAT8_E4M3FNUZ,
                                      HURRAY_DTYPE_BOOL};
#define GEN_DTYPE_COUNT (sizeof GEN_DTYPES / sizeof GEN_DTYPES[0])

static const uint32_t GEN_GGML[] = {HURRAY_GGML_Q4_0,  HURRAY_GGML_Q8_0,   HURRAY_GGML_Q4_K,
                                    HURRAY_GGML_MXFP4, HURRAY_GGML_IQ4_NL, HURRAY_GGML_Q6_K,
                                    HURRAY_GGML_Q5_1,  HURRAY_GGML_TQ2_0,  HURRAY_GGML_NVFP4};

static const uint32_t GEN_ARITH[] = {HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_BFLOAT16,
                                     HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT64};

/* Strides (in elements or containers) for dims: an axis order, gaps,
 * negative steps. */
GEN_HARNESS static void gen_strides(GenInput *in, uint32_t rank, const uint64_t *dims, int64_t *out)
{
    uint32_t order[4] = {0, 1, 2, 3};
    if (rank > 1 && gen_pick(in, 3) == 0) {
        for (uint32_t k = rank; k-- > 1;) {
            uint32_t j = gen_pick(in, k + 1), tmp = order[k];
            order[k] = order[j];
            order[j] = tmp;
        }
    }
    int64_t step = 1;
    for (uint32_t k = rank; k-- > 0;) {
        uint32_t axis = order[k];
        out[axis] = step;
        step *= (int64_t)dims[axis] + (gen_pick(in, 4) == 0 ? (int64_t)gen_pick(in, 3) : 0);
    }
    for (uint32_t k = 0; k < rank; k++) {
        if (gen_pick(in, 6) == 0) {
            out[k] = -out[k];
        }
    }
}

/* The last container a words node uses along its packed axis for n >= 1
 * elements (descriptor_graph.h's rule, worked out element by element). */
GEN_HARNESS static uint64_t gen_last_container(const GenNode *g, uint64_t n)
{
    uint32_t b = hurray__dtype_bits(g->dtype), w = g->container_bits;
    uint64_t last = 0;
    for (uint64_t e = 0; e < n; e++) {
        uint64_t j;
        uint32_t t;
        if (g->packing == HURRAY_PACKING_DENSE) {
            j = e * b / w;
            t = (uint32_t)(e * b % w);
        } else {
            uint64_t per = g->slot_count, k = g->chunk_containers, chunk = e / (per * k),
                     r = e % (per * k);
            j = chunk * g->chunk_stride + (g->planar ? r % k : r / per);
            t = 0;
        }
        uint64_t end = j + (t + b > w ? 1 : 0);
        last = end > last ? end : last;
    }
    return last;
}

static uint32_t gen_stored(GenTree *t, GenInput *in, uint32_t rank, const uint64_t *shape,
                           uint32_t dtype, int plain);

GEN_HARNESS static uint32_t gen_codebook(GenTree *t, GenInput *in, uint32_t entries)
{
    uint64_t shape[1] = {entries + gen_pick(in, 3)};
    static const uint32_t kinds[] = {HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT16,
                                     HURRAY_DTYPE_BFLOAT16, HURRAY_DTYPE_INT8};
    return gen_stored(t, in, 1, shape, kinds[gen_pick(in, 4)], 1);
}

/* A stored node of dtype (0: any) and shape; plain: row-major elements. */
GEN_HARNESS static uint32_t gen_stored(GenTree *t, GenInput *in, uint32_t rank,
                                       const uint64_t *shape, uint32_t dtype, int plain)
{
    uint32_t i = gen_reserve(t);
    GenNode *g = &t->nodes[i];
    g->kind = HURRAY_NODE_STORED;
    g->rank = rank;
    memcpy(g->shape, shape, sizeof(uint64_t) * rank);
    g->dtype = dtype != 0 ? dtype : GEN_DTYPES[gen_pick(in, GEN_DTYPE_COUNT)];
    uint32_t b = hurray__dtype_bits(g->dtype);
    uint32_t choice = plain ? 9 : gen_pick(in, 10);
    if (rank >= 1 && choice < 5) {
        static const uint32_t widths[] = {8, 16, 32, 64};
        uint32_t least = b <= 8 ? 0 : b <= 16 ? 1 : b <= 32 ? 2 : 3; /* the narrowest that fits */
        uint32_t w = widths[least + gen_pick(in, 4 - least)];
        g->words = 1;
        g->container_bits = w;
        g->packed_axis = gen_pick(in, rank);
        g->packing = gen_pick(in, 2) ? HURRAY_PACKING_DENSE : HURRAY_PACKING_SLOTS;
        if (g->packing == HURRAY_PACKING_SLOTS) {
            uint32_t per = w / b;
            g->slot_count = per;
            g->chunk_containers = 1 + gen_pick(in, 4);
            g->planar = g->chunk_containers > 1 && gen_pick(in, 2);
            g->chunk_stride = g->chunk_containers + gen_pick(in, 3);
            for (uint32_t s = 0; s < per; s++) {
                g->order[s] = (uint8_t)s;
            }
            uint32_t how = gen_pick(in, 3);
            if (how == 1) { /* reversed: the first slot highest (high nibble first) */
                for (uint32_t s = 0; s < per; s++) {
                    g->order[s] = (uint8_t)(per - 1 - s);
                }
            } else if (how == 2) { /* any permutation */
                for (uint32_t s = per; s-- > 1;) {
                    uint32_t j = gen_pick(in, s + 1);
                    uint8_t tmp = g->order[s];
                    g->order[s] = g->order[j];
                    g->order[j] = tmp;
                }
            }
        }
        g->big = w > 8 && gen_pick(in, 5) == 0;
        uint64_t dims[4];
        memcpy(dims, shape, sizeof(uint64_t) * rank);
        dims[g->packed_axis] = gen_last_container(g, shape[g->packed_axis]) + 1;
        gen_strides(in, rank, dims, g->strides);
    } else if (rank == 2 && b >= 8 && choice == 5) {
        g->swizzled = 1;
    } else if (b == 4 && rank >= 1 && shape[rank - 1] % 32 == 0 && choice == 6) {
        g->packing = HURRAY_PACKING_GGML_SPLIT;
        int64_t step = 1;
        for (uint32_t k = rank; k-- > 0;) {
            g->strides[k] = step;
            step *= (int64_t)shape[k];
        }
    } else {
        if (plain) {
            int64_t step = 1;
            for (uint32_t k = rank; k-- > 0;) {
                g->strides[k] = step;
                step *= (int64_t)shape[k];
            }
        } else {
            gen_strides(in, rank, shape, g->strides);
        }
        g->packing = b >= 8                                             ? HURRAY_PACKING_NONE
                     : (b == 1 || b == 2 || b == 4) && !gen_pick(in, 3) ? HURRAY_PACKING_LSB_FIRST
                                                                        : HURRAY_PACKING_PADDED;
        g->big = b > 8 && gen_pick(in, 5) == 0;
    }
    if (hurray__dtype_is_signed_int(g->dtype) || hurray__dtype_is_unsigned_int(g->dtype)) {
        if (!plain && gen_pick(in, 3) == 0) {
            g->code_offset = (int32_t)gen_byte(in) - 128;
        }
    }
    g->no_nan = g->dtype == HURRAY_DTYPE_FLOAT8_E8M0FNU && gen_pick(in, 2);
    if (hurray__dtype_is_unsigned_int(g->dtype) && b <= 8 && !plain && gen_pick(in, 4) == 0) {
        g->code_offset = 0;
        g->codebook = gen_codebook(t, in, 1u << b);
    }
    return i;
}

/* An index node: rank 1, plain integer elements, values below bound. */
GEN_HARNESS static uint32_t gen_index(GenTree *t, GenInput *in, uint64_t length, uint64_t bound)
{
    /* dtypes that hold every value up to the bound itself (the bad one) */
    static const uint32_t kinds[] = {HURRAY_DTYPE_INT32, HURRAY_DTYPE_INT64, HURRAY_DTYPE_INT16,
                                     HURRAY_DTYPE_UINT8, HURRAY_DTYPE_INT8};
    uint32_t usable = bound < 127 ? 5 : bound < 255 ? 4 : 3;
    uint64_t shape[1] = {length};
    uint32_t i = gen_stored(t, in, 1, shape, kinds[gen_pick(in, usable)], 1);
    t->nodes[i].index_node = 1;
    t->nodes[i].big = 0; /* gen_write_index writes little-endian values */
    t->nodes[i].bound = bound;
    return i;
}

GEN_HARNESS static uint32_t gen_constant(GenTree *t, GenInput *in)
{
    uint32_t i = gen_reserve(t);
    GenNode *g = &t->nodes[i];
    static const uint32_t kinds[] = {HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_BFLOAT16,
                                     HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT64,
                                     HURRAY_DTYPE_INT32,   HURRAY_DTYPE_INT64};
    g->kind = HURRAY_NODE_CONSTANT;
    g->dtype = kinds[gen_pick(in, 6)];
    uint32_t bits = hurray__dtype_bits(g->dtype);
    uint64_t v = gen_random(in);
    g->value_bits = bits >= 64 ? v : v & (((uint64_t)1 << bits) - 1);
    return i;
}

static uint32_t gen_value(GenTree *t, GenInput *in, uint32_t rank, const uint64_t *shape,
                          uint32_t depth);

GEN_HARNESS static uint32_t gen_step(GenTree *t, GenInput *in, uint32_t rank, const uint64_t *shape,
                                     uint32_t depth)
{
    uint32_t i = gen_reserve(t);
    GenNode *g = &t->nodes[i];
    g->kind = HURRAY_NODE_STEP;
    g->rank = rank;
    memcpy(g->shape, shape, sizeof(uint64_t) * rank);
    g->form = 1 + gen_pick(in, 5);
    g->arithmetic = GEN_ARITH[gen_pick(in, 4)];
    uint64_t grid[4];
    for (uint32_t k = 0; k < rank; k++) {
        uint32_t how = gen_pick(in, 3);
        g->blocks[k] = how == 0   ? 1
                       : how == 1 ? shape[k]
                                  : 1 + gen_pick(in, (uint32_t)shape[k] + 1);
        g->ragged |= shape[k] % g->blocks[k] != 0;
        grid[k] = (shape[k] + g->blocks[k] - 1) / g->blocks[k];
    }
    g->ragged |= gen_pick(in, 8) == 0;
    int indexed = rank >= 1 && gen_pick(in, 4) == 0;
    if (indexed) {
        g->indexed_axis = gen_pick(in, rank);
        grid[g->indexed_axis] = 1 + gen_pick(in, 4);
        g->blocks[g->indexed_axis] = 0;
    }
    uint32_t x = gen_value(t, in, rank, shape, depth);
    /* the scale has a grid when the axis is indexed (the group count's source) */
    uint32_t scale = !indexed && gen_pick(in, 4) == 0
                         ? gen_constant(t, in)
                         : (depth > 0 && gen_pick(in, 4) == 0
                                ? gen_step(t, in, rank, grid, depth - 1)
                                : gen_stored(t, in, rank, grid, 0, 0));
    uint32_t offset = 0;
    if (g->form == HURRAY_FORM_SUB_MUL || g->form == HURRAY_FORM_MUL_ADD ||
        g->form == HURRAY_FORM_MUL_SUB) {
        offset = gen_pick(in, 3) == 0 ? gen_constant(t, in) : gen_stored(t, in, rank, grid, 0, 0);
    }
    uint32_t gidx = indexed ? gen_index(t, in, shape[g->indexed_axis], grid[g->indexed_axis]) : 0;
    g = &t->nodes[i];
    g->x = x;
    g->scale = scale;
    g->offset = offset;
    g->group_index = gidx;
    return i;
}

GEN_HARNESS static uint32_t gen_value(GenTree *t, GenInput *in, uint32_t rank,
                                      const uint64_t *shape, uint32_t depth)
{
    uint64_t count = gen_count(shape, rank);
    uint32_t kind = gen_pick(in, 10);
    if (depth > 0 && kind < 3) {
        return gen_step(t, in, rank, shape, depth - 1);
    }
    if (kind == 3 && rank >= 1 && shape[rank - 1] % 32 == 0) {
        uint32_t type = GEN_GGML[gen_pick(in, sizeof GEN_GGML / sizeof GEN_GGML[0])];
        uint64_t elements = 0, bytes = 0;
        (void)hurray__ggml_block(type, &elements, &bytes);
        if (shape[rank - 1] % elements == 0) {
            uint32_t i = gen_reserve(t);
            GenNode *g = &t->nodes[i];
            g->kind = HURRAY_NODE_GGML;
            g->rank = rank;
            memcpy(g->shape, shape, sizeof(uint64_t) * rank);
            g->ggml_type = type;
            return i;
        }
    }
    if (kind == 4 && count > 0) {
        uint32_t i = gen_reserve(t);
        uint32_t n = 1 + gen_pick(in, 3), inputs[4], shifts[4], at = 0;
        static const uint32_t kinds[] = {HURRAY_DTYPE_UINT1, HURRAY_DTYPE_UINT2, HURRAY_DTYPE_UINT4,
                                         HURRAY_DTYPE_UINT8, HURRAY_DTYPE_UINT16};
        for (uint32_t k = 0; k < n; k++) {
            uint32_t d = kinds[gen_pick(in, 5)];
            uint32_t j = gen_reserve(t);
            GenNode *s = &t->nodes[j];
            s->kind = HURRAY_NODE_STORED;
            s->rank = rank;
            memcpy(s->shape, shape, sizeof(uint64_t) * rank);
            s->dtype = d;
            uint32_t b = hurray__dtype_bits(d);
            s->packing = b >= 8 ? HURRAY_PACKING_NONE : HURRAY_PACKING_LSB_FIRST;
            gen_strides(in, rank, shape, s->strides);
            inputs[k] = j;
            shifts[k] = gen_pick(in, 6) == 0 ? gen_pick(in, 64 - b) : at;
            at += b;
            if (shifts[k] + b > 63) {
                shifts[k] = 0;
            }
        }
        GenNode *g = &t->nodes[i];
        g->kind = HURRAY_NODE_BITS;
        g->rank = rank;
        memcpy(g->shape, shape, sizeof(uint64_t) * rank);
        g->input_count = n;
        memcpy(g->inputs, inputs, sizeof inputs);
        memcpy(g->shifts, shifts, sizeof shifts);
        g->bits_offset = (int32_t)gen_byte(in) - 128;
        return i;
    }
    if (kind == 5 && rank >= 1 && count > 0) {
        uint32_t i = gen_reserve(t);
        uint32_t axis = gen_pick(in, rank);
        uint64_t xshape[4];
        memcpy(xshape, shape, sizeof(uint64_t) * rank);
        xshape[axis] = 1 + gen_pick(in, (uint32_t)shape[axis] + 2);
        uint32_t x = depth > 0 && gen_pick(in, 3) == 0 ? gen_step(t, in, rank, xshape, depth - 1)
                                                       : gen_stored(t, in, rank, xshape, 0, 0);
        uint32_t index = gen_index(t, in, shape[axis], xshape[axis]);
        GenNode *g = &t->nodes[i];
        g->kind = HURRAY_NODE_GATHER;
        g->rank = rank;
        memcpy(g->shape, shape, sizeof(uint64_t) * rank);
        g->axis = axis;
        g->x = x;
        g->index = index;
        return i;
    }
    if (kind == 6 && count > 1) {
        uint64_t flat[1] = {count}; /* a reshape */
        return gen_stored(t, in, 1, flat, 0, 0);
    }
    return gen_stored(t, in, rank, shape, 0, 0);
}

/* ---- building and the buffers ---------------------------------------------- */

#define GEN_TRY(call)              \
    do {                           \
        if ((call) != HURRAY_OK) { \
            return 0;              \
        }                          \
    } while (0)

/* The descriptor of the tree; 0 when the builder refuses it. */
GEN_HARNESS static int gen_build(const GenTree *t, uint32_t rank, const uint64_t *shape,
                                 HurrayDescriptor **out)
{
    HurrayDescriptor *desc = NULL;
    GEN_TRY(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, rank, shape, &desc));
    *out = desc;
    uint32_t buffer = 0;
    for (uint32_t i = 0; i < t->count; i++) {
        const GenNode *g = &t->nodes[i];
        uint32_t got = 0;
        switch (g->kind) {
        case HURRAY_NODE_STORED:
            GEN_TRY(hurray_descriptor_add_stored(desc, g->dtype, g->rank, g->shape, buffer++,
                                                 g->byte_offset, &got));
            if (g->words) {
                GEN_TRY(hurray_descriptor_stored_set_words(
                    desc, got, g->container_bits, g->packed_axis, g->packing, g->chunk_containers,
                    g->planar ? HURRAY_SLOTS_PLANAR : 0, g->chunk_stride, g->slot_count,
                    g->slot_count ? g->order : NULL));
            } else if (!g->swizzled) {
                GEN_TRY(hurray_descriptor_stored_set_elements(desc, got, g->packing));
            }
            if (g->swizzled) {
                GEN_TRY(hurray_descriptor_stored_set_layout(desc, got,
                                                            HURRAY_PART_LAYOUT_SWIZZLED_128X4));
                int64_t zero[2] = {0, 0};
                GEN_TRY(hurray_descriptor_stored_set_strides(desc, got, 2, zero));
            } else {
                GEN_TRY(hurray_descriptor_stored_set_strides(desc, got, g->rank, g->strides));
            }
            if (g->big) {
                GEN_TRY(hurray_descriptor_stored_set_byte_order(desc, got, HURRAY_BYTE_ORDER_BIG));
            }
            GEN_TRY(hurray_descriptor_stored_set_codes(desc, got, g->code_offset, g->codebook,
                                                       g->no_nan ? HURRAY_VALUE_RULE_E8M0_NO_NAN
                                                                 : HURRAY_VALUE_RULE_STANDARD));
            break;
        case HURRAY_NODE_CONSTANT:
            GEN_TRY(hurray_descriptor_add_constant(desc, g->dtype, g->value_bits, &got));
            break;
        case HURRAY_NODE_STEP:
            GEN_TRY(hurray_descriptor_add_step(desc, g->form, g->arithmetic, g->rank, g->shape,
                                               g->x, g->scale, g->offset, &got));
            GEN_TRY(hurray_descriptor_step_set_groups(desc, got, g->rank, g->blocks,
                                                      g->ragged ? HURRAY_STEP_RAGGED : 0,
                                                      g->indexed_axis, g->group_index));
            break;
        case HURRAY_NODE_GGML:
            GEN_TRY(hurray_descriptor_add_ggml(desc, g->ggml_type, g->rank, g->shape, buffer++,
                                               g->byte_offset, &got));
            break;
        case HURRAY_NODE_BITS:
            GEN_TRY(hurray_descriptor_add_bits(desc, g->rank, g->shape, g->input_count, g->inputs,
                                               g->shifts, g->bits_offset, &got));
            break;
        default:
            GEN_TRY(hurray_descriptor_add_gather(desc, g->rank, g->shape, g->x, g->index, g->axis,
                                                 &got));
            break;
        }
        if (got != i) {
            return 0;
        }
    }
    return 1;
}

static void gen_release(void *p)
{
    free(p);
}

/* Writes valid index values (or one bad value at element `bad` when bad
 * is below the length) into an index node's buffer. */
GEN_HARNESS static void gen_write_index(const HurrayNode *node, uint8_t *data, uint64_t bound,
                                        GenInput *in, uint64_t bad)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t bytes = hurray__dtype_bits(s->dtype) / 8;
    for (uint64_t e = 0; e < node->shape[0]; e++) {
        uint64_t v = gen_random(in) % bound;
        if (e == bad) {
            v = hurray__dtype_is_signed_int(s->dtype) ? UINT64_MAX : bound; /* -1, or the bound */
        }
        uint8_t *at = data + (int64_t)s->byte_offset + (int64_t)e * s->strides[0] * (int64_t)bytes;
        for (uint32_t k = 0; k < bytes; k++) {
            at[k] = (uint8_t)(v >> (8 * k));
        }
    }
}


/* ---- the reference: one element at a time ------------------------------------- */

typedef struct RefCtx {
    const HurrayGraph *graph;
    const uint8_t *data[HURRAY_MAX_NODES]; /* per buffer index */
} RefCtx;

/* A value rounded once to type t, as a double. */
GEN_HARNESS static double ref_round(uint32_t t, double v)
{
    return t == HURRAY__G_F64 ? v : (double)hurray__g_round_f64_to(t, v);
}

GEN_HARNESS static uint32_t ref_type(uint32_t dtype)
{
    switch (dtype) {
    case HURRAY_DTYPE_FLOAT16: return HURRAY__G_F16;
    case HURRAY_DTYPE_BFLOAT16: return HURRAY__G_BF16;
    case HURRAY_DTYPE_FLOAT32: return HURRAY__G_F32;
    default: return HURRAY__G_F64;
    }
}

/* One operation of a step in type T on values of T. */
GEN_HARNESS static double ref_op(uint32_t T, char op, double a, double b)
{
    if (T == HURRAY__G_F64) {
        double r = op == '*' ? a * b : op == '/' ? a / b : op == '+' ? a + b : a - b;
        return op == '*' || op == '+' ? hurray__first_nan_f64(a, r) : r;
    }
    float x = (float)a, y = (float)b;
    float r = op == '*' ? x * y : op == '/' ? x / y : op == '+' ? x + y : x - y;
    r = op == '*' || op == '+' ? hurray__first_nan(x, r) : r;
    return hurray__g_round_f32_to(T, r);
}

GEN_HARNESS static void ref_unflatten(const HurrayNode *node, uint64_t flat, uint64_t *idx)
{
    for (uint32_t k = node->rank; k-- > 0;) {
        idx[k] = flat % node->shape[k];
        flat /= node->shape[k];
    }
}

GEN_HARNESS static int64_t ref_index(const RefCtx *c, uint32_t ref, uint64_t e)
{
    const HurrayNode *node = &c->graph->nodes[ref];
    return hurray__stored_integer(node,
                                  hurray__stored_code(node, c->data[node->as.stored.buffer_index],
                                                      e));
}

GEN_HARNESS static double ref_value(const RefCtx *c, uint32_t i, uint64_t flat, uint32_t t)
{
    const HurrayNode *node = &c->graph->nodes[i];
    uint64_t idx[HURRAY_MAX_RANK];
    switch (node->kind) {
    case HURRAY_NODE_STORED: {
        const HurrayStoredNode *s = &node->as.stored;
        uint64_t code = hurray__stored_code(node, c->data[s->buffer_index], flat);
        uint32_t bits = hurray__dtype_bits(s->dtype);
        if (s->codebook != 0) {
            return ref_value(c, s->codebook, code, t);
        }
        if (hurray__dtype_is_signed_int(s->dtype) || hurray__dtype_is_unsigned_int(s->dtype)) {
            __int128 v = (__int128)code;
            if (hurray__dtype_is_signed_int(s->dtype) && (code >> (bits - 1)) & 1u) {
                v -= (__int128)1 << bits;
            }
            return ref_round(t, (double)(v + s->code_offset));
        }
        double v;
        if (s->dtype == HURRAY_DTYPE_FLOAT16) {
            v = hurray__f16_to_f32((uint16_t)code);
        } else if (s->dtype == HURRAY_DTYPE_BFLOAT16) {
            v = hurray__bf16_to_f32((uint16_t)code);
        } else if (s->dtype == HURRAY_DTYPE_FLOAT32) {
            uint32_t b32 = (uint32_t)code;
            float f;
            memcpy(&f, &b32, sizeof f);
            v = f;
        } else if (s->dtype == HURRAY_DTYPE_FLOAT64) {
            memcpy(&v, &code, sizeof v);
        } else if (s->value_rule == HURRAY_VALUE_RULE_E8M0_NO_NAN && code == 255) {
            v = 0x1p128;
        } else {
            v = hurray__code_table(s->dtype)[code];
        }
        return ref_round(t, v);
    }
    case HURRAY_NODE_CONSTANT: {
        const HurrayConstantNode *k = &node->as.constant;
        double v;
        if (k->dtype == HURRAY_DTYPE_FLOAT16) {
            v = hurray__f16_to_f32((uint16_t)k->value_bits);
        } else if (k->dtype == HURRAY_DTYPE_BFLOAT16) {
            v = hurray__bf16_to_f32((uint16_t)k->value_bits);
        } else if (k->dtype == HURRAY_DTYPE_FLOAT32) {
            uint32_t b32 = (uint32_t)k->value_bits;
            float f;
            memcpy(&f, &b32, sizeof f);
            v = f;
        } else if (k->dtype == HURRAY_DTYPE_FLOAT64) {
            memcpy(&v, &k->value_bits, sizeof v);
        } else if (k->dtype == HURRAY_DTYPE_INT32) {
            v = (int32_t)(uint32_t)k->value_bits;
        } else {
            v = (double)(int64_t)k->value_bits;
        }
        return ref_round(t, v);
    }
    case HURRAY_NODE_STEP: {
        const HurrayStepNode *s = &node->as.step;
        uint32_t T = ref_type(s->arithmetic);
        double x = ref_value(c, s->x, flat, T);
        ref_unflatten(node, flat, idx);
        double p[2] = {0, 0};
        uint32_t refs[2] = {s->scale, s->offset};
        for (int k = 0; k < 2; k++) {
            if (refs[k] == 0) {
                continue;
            }
            const HurrayNode *param = &c->graph->nodes[refs[k]];
            uint64_t cell = 0;
            if (param->kind != HURRAY_NODE_CONSTANT) {
                for (uint32_t a = 0; a < node->rank; a++) {
                    uint64_t g = s->group_index != 0 && a == s->indexed_axis
                                     ? (uint64_t)ref_index(c, s->group_index, idx[a])
                                     : idx[a] / s->blocks[a];
                    cell = cell * param->shape[a] + g;
                }
            }
            p[k] = ref_value(c, refs[k], cell, T);
        }
        double y, m;
        switch (s->form) {
        case HURRAY_FORM_MUL: y = ref_op(T, '*', x, p[0]); break;
        case HURRAY_FORM_DIV: y = ref_op(T, '/', x, p[0]); break;
        case HURRAY_FORM_SUB_MUL: y = ref_op(T, '*', ref_op(T, '-', x, p[1]), p[0]); break;
        case HURRAY_FORM_MUL_ADD:
            m = ref_op(T, '*', x, p[0]);
            y = ref_op(T, '+', m, p[1]);
            break;
        default:
            m = ref_op(T, '*', x, p[0]);
            y = ref_op(T, '-', m, p[1]);
            break;
        }
        return ref_round(t, y);
    }
    case HURRAY_NODE_GGML: {
        uint64_t elements = 0, bytes = 0;
        (void)hurray__ggml_block(node->as.ggml.ggml_type, &elements, &bytes);
        float block[256];
        const uint8_t *base = c->data[node->as.ggml.buffer_index] + node->as.ggml.byte_offset;
        hurray__ggml_block_decoder(node->as.ggml.ggml_type)(base + flat / elements * bytes, block);
        return ref_round(t, block[flat % elements]);
    }
    case HURRAY_NODE_BITS: {
        const HurrayBitsNode *b = &node->as.bits;
        __int128 sum = 0;
        for (uint32_t k = 0; k < b->input_count; k++) {
            const HurrayNode *in = &c->graph->nodes[b->inputs[k]];
            uint64_t code = hurray__stored_code(in, c->data[in->as.stored.buffer_index], flat);
            sum += (__int128)(code << b->shifts[k]);
        }
        return ref_round(t, (double)(sum + b->offset));
    }
    default: { /* GATHER */
        const HurrayGatherNode *g = &node->as.gather;
        const HurrayNode *x = &c->graph->nodes[g->x];
        ref_unflatten(node, flat, idx);
        idx[g->axis] = (uint64_t)ref_index(c, g->index, idx[g->axis]);
        uint64_t xflat = 0;
        for (uint32_t k = 0; k < node->rank; k++) {
            xflat = xflat * x->shape[k] + idx[k];
        }
        return ref_value(c, g->x, xflat, t);
    }
    }
}

/* ---- the case -------------------------------------------------------------------- */

/* A broken property aborts, saying which and the last error. */
#define GEN_REQUIRE(cond)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
                    hurray_last_error_message());                                      \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* One call on one path into a fresh output of exactly out_len bytes,
 * checked to write nothing when it refuses; the caller frees it. */
static uint8_t *gen_call(int path, const HurrayDescriptor *desc, const HurrayBufferList *list,
                         uint32_t out_dtype, int whole, uint64_t first, uint64_t count,
                         uint64_t out_len, HurrayStatus *status)
{
    uint8_t *out = malloc(out_len == 0 ? 1 : out_len);
    GEN_REQUIRE(out != NULL);
    memset(out, 0x5A, out_len);
    hurray__dequant_force_path(path);
    *status = whole ? hurray_dequantize(desc, list, (HurrayDtype)out_dtype, out, out_len)
                    : hurray_dequantize_rows(desc, list, (HurrayDtype)out_dtype, first, count, out,
                                             out_len);
    hurray__dequant_force_path(-1);
    if (*status != HURRAY_OK) {
        GEN_REQUIRE(hurray_last_error_message()[0] != '\0');
        for (uint64_t i = 0; i < out_len; i++) {
            GEN_REQUIRE(out[i] == 0x5A);
        }
    }
    return out;
}

/* Both NaNs (any bits), or the same bits. */
GEN_HARNESS static int gen_same_f32(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y || (a != a && b != b);
}

static int graph_case(const uint8_t *data, size_t size)
{
    GenInput in = {data, size, 0, 0x9E3779B97F4A7C15u};
    for (size_t k = 0; k < size && k < 16; k++) {
        in.rng = (in.rng ^ data[k]) * 0x100000001B3u;
    }
    in.rng |= 1;
    /* the tensor */
    uint32_t rank = gen_pick(&in, 4);
    uint64_t shape[4] = {1, 1, 1, 1};
    static const uint64_t dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 32, 33, 64, 96, 256};
    for (uint32_t k = 0; k < rank; k++) {
        shape[k] = dims[gen_pick(&in, sizeof dims / sizeof dims[0])];
    }
    while (gen_count(shape, rank) > GEN_MAX_ELEMENTS) {
        uint32_t big = 0;
        for (uint32_t k = 1; k < rank; k++) {
            big = shape[k] > shape[big] ? k : big;
        }
        shape[big] /= 2;
    }
    uint64_t count = gen_count(shape, rank);
    GenTree tree;
    memset(&tree, 0, sizeof tree);
    uint64_t flat[1] = {count};
    int reshaped = rank >= 2 && gen_pick(&in, 5) == 0;
    uint32_t depth = gen_pick(&in, 3);
    if (gen_pick(&in, 5) != 0) {
        (void)gen_step(&tree, &in, reshaped ? 1 : rank, reshaped ? flat : shape, depth);
    } else {
        (void)gen_value(&tree, &in, reshaped ? 1 : rank, reshaped ? flat : shape, depth);
    }
    if (tree.full) {
        return 0;
    }
    /* Built once to learn each node's reach, then again with room for it. */
    HurrayDescriptor *desc = NULL;
    if (!gen_build(&tree, rank, shape, &desc) || hurray_descriptor_validate(desc) != HURRAY_OK) {
        hurray_descriptor_destroy(&desc);
        return 0;
    }
    uint64_t len[HURRAY_MAX_NODES] = {0};
    uint32_t buffers = 0, owner[HURRAY_MAX_NODES];
    for (uint32_t i = 0; i < tree.count; i++) {
        GenNode *g = &tree.nodes[i];
        if (g->kind != HURRAY_NODE_STORED && g->kind != HURRAY_NODE_GGML) {
            continue;
        }
        g->byte_offset = desc->graph->before[i] + gen_pick(&in, 3);
        len[buffers] = g->byte_offset + desc->graph->after[i] + gen_pick(&in, 2);
        owner[buffers++] = i;
    }
    hurray_descriptor_destroy(&desc);
    GEN_REQUIRE(gen_build(&tree, rank, shape, &desc));
    GEN_REQUIRE(hurray_descriptor_validate(desc) == HURRAY_OK);

    /* What the case asks for. */
    uint32_t kind = gen_pick(&in, 3);
    uint32_t out_dtype = kind == 0   ? HURRAY_DTYPE_FLOAT32
                         : kind == 1 ? HURRAY_DTYPE_FLOAT16
                                     : HURRAY_DTYPE_BFLOAT16;
    uint32_t trouble = gen_pick(&in, 8); /* 0: a short buffer; 1: a bad index */
    uint32_t victim = buffers > 0 ? gen_pick(&in, buffers) : 0;
    uint64_t rows = rank == 0 ? 1 : shape[0];
    uint64_t first = gen_pick(&in, (uint32_t)rows + 1);
    uint64_t take = gen_pick(&in, (uint32_t)(rows - first) + 1);

    /* The buffers. */
    HurrayBufferList *list = NULL;
    GEN_REQUIRE(hurray_buffer_list_new(&list) == HURRAY_OK);
    RefCtx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.graph = desc->graph;
    int expect_short = 0, expect_bad = 0;
    for (uint32_t b = 0; b < buffers; b++) {
        const GenNode *g = &tree.nodes[owner[b]];
        uint64_t n = len[b];
        if (trouble == 0 && b == victim && n > 0 &&
            n == g->byte_offset + desc->graph->after[owner[b]] &&
            desc->graph->after[owner[b]] > 0) {
            n--;
            expect_short = 1;
        }
        uint8_t *bytes = malloc(n == 0 ? 1 : n);
        GEN_REQUIRE(bytes != NULL);
        for (uint64_t k = 0; k < n; k++) {
            bytes[k] = (uint8_t)(gen_random(&in) >> 56);
        }
        if (g->index_node && !expect_short) {
            uint64_t bad = trouble == 1 ? 0 : UINT64_MAX;
            expect_bad |= trouble == 1;
            gen_write_index(&desc->graph->nodes[owner[b]], bytes, g->bound, &in, bad);
        }
        ctx.data[b] = bytes;
        HurrayBuffer *buf = NULL;
        GEN_REQUIRE(hurray_buffer_from_ptr(bytes, n, gen_release, bytes, &buf) == HURRAY_OK);
        GEN_REQUIRE(hurray_buffer_list_push(list, &buf) == HURRAY_OK);
    }
    expect_bad &= !expect_short;

    uint64_t size_of = out_dtype == HURRAY_DTYPE_FLOAT32 ? 4 : 2;
    uint64_t row = rows == 0 ? 0 : count / rows;
    uint64_t want = take * row * size_of;
    HurrayStatus scalar_status, vector_status;
    uint8_t *scalar = gen_call(0, desc, list, out_dtype, 0, first, take, want, &scalar_status);
    uint8_t *vector = gen_call(1, desc, list, out_dtype, 0, first, take, want, &vector_status);
    GEN_REQUIRE(scalar_status == vector_status);
    if (expect_short) {
        GEN_REQUIRE(scalar_status == HURRAY_ERROR_BUFFER_TOO_SMALL);
    } else if (expect_bad) {
        GEN_REQUIRE(scalar_status == HURRAY_ERROR_OUT_OF_RANGE);
    } else {
        GEN_REQUIRE(scalar_status == HURRAY_OK);
    }
    if (scalar_status == HURRAY_OK && !expect_short && !expect_bad) {
        GEN_REQUIRE(memcmp(scalar, vector, want) == 0);
        HurrayStatus status;
        uint8_t *whole = gen_call(1, desc, list, out_dtype, 1, 0, 0, count * size_of, &status);
        GEN_REQUIRE(status == HURRAY_OK);
        GEN_REQUIRE(memcmp(whole + first * row * size_of, scalar, want) == 0);
        free(whole);
        /* float32 against the reference: the first and last elements and
         * a sample of the others (the reference is slow by design) */
        float *f32 = (float *)gen_call(0, desc, list, HURRAY_DTYPE_FLOAT32, 1, 0, 0, count * 4,
                                       &status);
        GEN_REQUIRE(status == HURRAY_OK);
        for (uint64_t k = 0; k < count && k < 48; k++) {
            uint64_t e = k == 0 ? 0 : k == 1 ? count - 1 : gen_random(&in) % count;
            float r = (float)ref_value(&ctx, 0, e, HURRAY__G_F32);
            GEN_REQUIRE(gen_same_f32(f32[e], r));
        }
        free(f32);
        /* one element short of the output is refused */
        if (want > 0) {
            uint8_t *none = gen_call(1, desc, list, out_dtype, 0, first, take, want - 1, &status);
            GEN_REQUIRE(status == HURRAY_ERROR_BUFFER_TOO_SMALL);
            free(none);
        }
    }
    free(scalar);
    free(vector);
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
    return 0;
}

#endif /* HURRAY_FUZZ_DEQUANT_GRAPH_GEN_H */
