/*
 * dequant_graph_eval.c -- the values of every node kind of the graph
 * scheme, asked for as a range of flat indices or as points
 * (dequant_graph_shared.h); the stored nodes' own readers are in
 * dequant_graph_read.c, the arithmetic kernels in dequant_graph_kernels.c.
 *
 * A step over a range asks its x for the same range (x is read in
 * row-major order), cuts the range into segments whose elements share one
 * grid cell (a block along the last axis, one row, or one element on an
 * indexed last axis), asks each parameter for the cells' values at once
 * (fetch: one range over the cells' span when it is short, else points),
 * and applies its form segment by segment. A gather along another axis
 * than the last asks its x for whole runs; along the last, for points.
 *
 * The group-index and gather-index values were all proven in range by
 * check_buffers (descriptor_graph_reach.c) through descriptor_graph_codes.c;
 * where they are read here they are clamped into range once more, which
 * never changes a value of a checked descriptor and keeps every parameter
 * read inside its node if a reader here ever disagreed with that proof.
 */
#include "dequant_graph_shared.h"
#include "descriptor_graph_codes.h"
#include "dtype.h"

/* Scratch is carved in 64-byte pieces, so that every array is aligned. */
static inline uint8_t *carve(uint8_t **at, size_t bytes)
{
    uint8_t *p = *at;
    *at += (bytes + 63) & ~(size_t)63;
    return p;
}

/* Bytes of `width`-byte values for the most one request asks of this plan. */
#define REQ_BYTES(width) ((size_t)(width) * plan->req)

size_t hurray__graph_own_scratch(const HurrayGraphPlan *plan, const HurrayNode *node)
{
    size_t slack = 8 * 64;
    switch (node->kind) {
    case HURRAY_NODE_STORED: return REQ_BYTES(8) + slack;
    case HURRAY_NODE_STEP:
        /* x, cells, segment starts, scale, offset, a fetched span, indices */
        return 6 * REQ_BYTES(8) + REQ_BYTES(4) + 4 + slack;
    case HURRAY_NODE_GGML: return REQ_BYTES(4) + 256 * 4 + slack;
    case HURRAY_NODE_BITS: return REQ_BYTES(16) + REQ_BYTES(8) + slack;
    case HURRAY_NODE_GATHER: return 3 * REQ_BYTES(8) + slack;
    default: return 0;
    }
}

/* An index node's value at element e, as check_buffers read it, kept
 * below bound (bound >= 1). */
static uint64_t index_at(const HurrayGraphPlan *plan, uint32_t ref, uint64_t e, uint64_t bound)
{
    const HurrayGraphNodePlan *np = &plan->nodes[ref];
    int64_t v = hurray__stored_integer(np->node, hurray__stored_code(np->node, np->data, e));
    return v < 0 ? 0 : (uint64_t)v >= bound ? bound - 1 : (uint64_t)v;
}

/* The values of index node ref at [first, first + n), kept below bound. */
static void index_range(const HurrayGraphPlan *plan, uint32_t ref, uint64_t first, uint64_t n,
                        uint64_t bound, uint64_t *out)
{
    const HurrayGraphNodePlan *np = &plan->nodes[ref];
    hurray__graph_codes_range(plan, ref, first, n, out);
    for (uint64_t k = 0; k < n; k++) {
        int64_t v = hurray__graph_integer(np, out[k]);
        out[k] = v < 0 ? 0 : (uint64_t)v >= bound ? bound - 1 : (uint64_t)v;
    }
}

/* ---- constants ------------------------------------------------------------ */

/* A constant's value, exactly (an int64 beyond 2^53 rounded once). */
static double constant_value(const HurrayConstantNode *c)
{
    uint64_t bits = c->value_bits;
    switch (c->dtype) {
    case HURRAY_DTYPE_FLOAT16: return hurray__f16_to_f32((uint16_t)bits);
    case HURRAY_DTYPE_BFLOAT16: return hurray__bf16_to_f32((uint16_t)bits);
    case HURRAY_DTYPE_FLOAT32: {
        uint32_t b = (uint32_t)bits;
        float f;
        memcpy(&f, &b, sizeof f);
        return f;
    }
    case HURRAY_DTYPE_FLOAT64: {
        double d;
        memcpy(&d, &bits, sizeof d);
        return d;
    }
    case HURRAY_DTYPE_INT32: return (double)(int32_t)(uint32_t)bits;
    default: /* HURRAY_DTYPE_INT64 */ return (double)(int64_t)bits;
    }
}

/* A constant as type t: a float16, bfloat16 or float32 value from its own
 * bits (exact in a float, NaN payloads kept), the others from float64. */
static void constant_fill(const HurrayConstantNode *c, uint32_t t, uint64_t n, void *out)
{
    if (t == HURRAY__G_F64) {
        double v = constant_value(c);
        double *d = out;
        for (uint64_t k = 0; k < n; k++) {
            d[k] = v;
        }
        return;
    }
    float f;
    switch (c->dtype) {
    case HURRAY_DTYPE_FLOAT16: f = hurray__f16_to_f32((uint16_t)c->value_bits); break;
    case HURRAY_DTYPE_BFLOAT16: f = hurray__bf16_to_f32((uint16_t)c->value_bits); break;
    case HURRAY_DTYPE_FLOAT32: {
        uint32_t b = (uint32_t)c->value_bits;
        memcpy(&f, &b, sizeof f);
        break;
    }
    default: f = hurray__g_round_f64_to(t, constant_value(c)); break;
    }
    f = hurray__g_round_f32_to(t, f); /* exact again for the wide ones */
    float *o = out;
    for (uint64_t k = 0; k < n; k++) {
        o[k] = f;
    }
}

/* ---- fetching parameter values at cells ----------------------------------- */

/* The values of node j as type t at the K flat indices P: one range over
 * their span when it is short (the common grids: a block row, a row, one
 * cell), else points. */
static void fetch(const HurrayGraphPlan *plan, uint32_t j, uint32_t t, const uint64_t *P,
                  uint64_t K, void *out, uint8_t *scratch)
{
    const HurrayNode *node = &plan->graph->nodes[j];
    if (node->kind == HURRAY_NODE_CONSTANT) {
        constant_fill(&node->as.constant, t, K, out);
        return;
    }
    if (K == 0) {
        return;
    }
    uint64_t lo = P[0], hi = P[0];
    int consecutive = 1;
    for (uint64_t k = 1; k < K; k++) {
        lo = P[k] < lo ? P[k] : lo;
        hi = P[k] > hi ? P[k] : hi;
        consecutive &= P[k] == P[k - 1] + 1;
    }
    if (consecutive) {
        hurray__graph_range(plan, j, t, lo, K, out, scratch);
        return;
    }
    uint64_t span = hi - lo + 1;
    if (span > plan->req) {
        hurray__graph_points(plan, j, t, P, K, out, scratch);
        return;
    }
    uint8_t *at = scratch;
    uint8_t *tmp = carve(&at, REQ_BYTES(8));
    hurray__graph_range(plan, j, t, lo, span, tmp, at);
    if (t == HURRAY__G_F64) {
        for (uint64_t k = 0; k < K; k++) {
            ((double *)out)[k] = ((const double *)tmp)[P[k] - lo];
        }
    } else {
        for (uint64_t k = 0; k < K; k++) {
            ((float *)out)[k] = ((const float *)tmp)[P[k] - lo];
        }
    }
}

/* ---- steps ------------------------------------------------------------------ */

/* The grid cell (flat, row-major over the grid) of the step element with
 * multi-index idx, on every axis but the last when `but_last`. */
static uint64_t cell_of(const HurrayGraphPlan *plan, const HurrayGraphNodePlan *np,
                        const uint64_t *idx, uint32_t axes)
{
    const HurrayStepNode *s = &np->node->as.step;
    uint64_t cell = 0;
    for (uint32_t k = 0; k < axes; k++) {
        uint64_t g = s->group_index != 0 && k == s->indexed_axis
                         ? index_at(plan, s->group_index, idx[k], np->group_count)
                         : idx[k] / s->blocks[k];
        cell += g * np->grid_strides[k];
    }
    return cell;
}

/* Cuts [first, first + n) of step np into segments of one cell each:
 * P[k] the cell, start[k] the segment's first element (start[K] = n).
 * Returns K. */
static uint64_t step_segments(const HurrayGraphPlan *plan, const HurrayGraphNodePlan *np,
                              uint64_t first, uint64_t n, uint64_t *P, uint32_t *start,
                              uint64_t *indices)
{
    const HurrayNode *node = np->node;
    const HurrayStepNode *s = &node->as.step;
    uint32_t rank = node->rank;
    uint64_t K = 0;
#define SEGMENT(cell, at)               \
    do {                                \
        uint64_t c_ = (cell);           \
        if (K == 0 || P[K - 1] != c_) { \
            P[K] = c_;                  \
            start[K] = (uint32_t)(at);  \
            K++;                        \
        }                               \
    } while (0)
    if (rank == 0) {
        SEGMENT(0, 0);
        start[K] = (uint32_t)n;
        return K;
    }
    uint32_t last = rank - 1;
    int indexed_last = s->group_index != 0 && s->indexed_axis == last;
    uint64_t idx[HURRAY_MAX_RANK];
    hurray__graph_unflatten(np, first, idx);
    for (uint64_t pos = 0; pos < n;) {
        uint64_t at = idx[last];
        uint64_t len = np->last - at < n - pos ? np->last - at : n - pos;
        uint64_t base = cell_of(plan, np, idx, last);
        if (indexed_last) {
            index_range(plan, s->group_index, at, len, np->group_count, indices);
            for (uint64_t u = 0; u < len; u++) {
                SEGMENT(base + indices[u], pos + u);
            }
        } else {
            uint64_t b = s->blocks[last];
            for (uint64_t u = 0; u < len;) {
                uint64_t g = (at + u) / b;
                uint64_t end = (g + 1) * b - at; /* the block's end, relative to at */
                end = end < len ? end : len;
                SEGMENT(base + g, pos + u);
                u = end;
            }
        }
        pos += len;
        hurray__graph_advance(np, idx, len);
    }
#undef SEGMENT
    start[K] = (uint32_t)n;
    return K;
}

/* Parameters at the cells, the form applied, the result converted. */
static void step_finish(const HurrayGraphPlan *plan, const HurrayGraphNodePlan *np, uint32_t t,
                        void *X, uint64_t n, const uint64_t *P, const uint32_t *start, uint64_t K,
                        void *out, uint8_t *at)
{
    const HurrayStepNode *s = &np->node->as.step;
    uint32_t T = np->arith;
    void *S = carve(&at, REQ_BYTES(8));
    void *O = s->offset != 0 ? carve(&at, REQ_BYTES(8)) : NULL;
    fetch(plan, s->scale, T, P, K, S, at);
    if (O != NULL) {
        fetch(plan, s->offset, T, P, K, O, at);
    }
    hurray__graph_apply(s->form, T, X, n, start, K, S, O, plan->simd);
    if (T != t || X != out) {
        hurray__graph_convert(T, t, X, n, out, plan->simd);
    }
}

static void step_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                       uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayStepNode *s = &np->node->as.step;
    uint8_t *at = scratch;
    /* x straight into out when the arithmetic's values have out's width. */
    void *X = hurray__g_size(np->arith) == hurray__g_size(t) ? out : carve(&at, REQ_BYTES(8));
    uint64_t *P = (uint64_t *)carve(&at, REQ_BYTES(8));
    uint32_t *start = (uint32_t *)carve(&at, REQ_BYTES(4) + 4);
    uint64_t *indices = (uint64_t *)carve(&at, REQ_BYTES(8));
    hurray__graph_range(plan, s->x, np->arith, first, n, X, at);
    uint64_t K = step_segments(plan, np, first, n, P, start, indices);
    step_finish(plan, np, t, X, n, P, start, K, out, at);
}

static void step_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                        uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayStepNode *s = &np->node->as.step;
    uint8_t *at = scratch;
    void *X = hurray__g_size(np->arith) == hurray__g_size(t) ? out : carve(&at, REQ_BYTES(8));
    uint64_t *P = (uint64_t *)carve(&at, REQ_BYTES(8));
    uint32_t *start = (uint32_t *)carve(&at, REQ_BYTES(4) + 4);
    hurray__graph_points(plan, s->x, np->arith, flat, n, X, at);
    uint64_t idx[HURRAY_MAX_RANK];
    for (uint64_t k = 0; k < n; k++) {
        hurray__graph_unflatten(np, flat[k], idx);
        P[k] = cell_of(plan, np, idx, np->node->rank);
        start[k] = (uint32_t)k;
    }
    start[n] = (uint32_t)n;
    step_finish(plan, np, t, X, n, P, start, n, out, at);
}

/* ---- GGML nodes ------------------------------------------------------------ */

static void ggml_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                       uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    uint32_t type = np->node->as.ggml.ggml_type;
    uint64_t elements = 0, bytes = 0;
    (void)hurray__ggml_block(type, &elements, &bytes);
    HurrayGgmlBlockFn block_fn = hurray__ggml_block_decoder(type);
    HurrayGgmlRowFn row_fn = NULL;
#if HURRAY__DEQUANT_AVX2
    if (plan->simd) {
        row_fn = hurray__ggml_row_avx2(type);
    }
#endif
    uint8_t *at = scratch;
    float *dst = t == HURRAY__G_F32 ? out : (float *)carve(&at, REQ_BYTES(4));
    float *block = (float *)carve(&at, 256 * sizeof(float));
    uint64_t u = 0;
    while (u < n) {
        uint64_t flat = first + u, b = flat / elements, within = flat % elements;
        const uint8_t *in = np->base + b * bytes;
        if (within != 0 || n - u < elements) {
            uint64_t take = elements - within < n - u ? elements - within : n - u;
            block_fn(in, block);
            memcpy(dst + u, block + within, take * sizeof(float));
            u += take;
            continue;
        }
        uint64_t whole = (n - u) / elements;
        if (row_fn != NULL) {
            row_fn(in, whole, dst + u);
        } else {
            for (uint64_t k = 0; k < whole; k++) {
                block_fn(in + k * bytes, dst + u + k * elements);
            }
        }
        u += whole * elements;
    }
    if (t != HURRAY__G_F32) {
        hurray__graph_convert(HURRAY__G_F32, t, dst, n, out, plan->simd);
    }
}

static void ggml_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                        uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    uint32_t type = np->node->as.ggml.ggml_type;
    uint64_t elements = 0, bytes = 0;
    (void)hurray__ggml_block(type, &elements, &bytes);
    HurrayGgmlBlockFn block_fn = hurray__ggml_block_decoder(type);
    float *block = (float *)scratch;
    uint64_t decoded = UINT64_MAX;
    for (uint64_t k = 0; k < n; k++) {
        uint64_t b = flat[k] / elements;
        if (b != decoded) {
            block_fn(np->base + b * bytes, block);
            decoded = b;
        }
        float v = block[flat[k] % elements];
        if (t == HURRAY__G_F64) {
            ((double *)out)[k] = v;
        } else {
            ((float *)out)[k] = hurray__g_round_f32_to(t, v);
        }
    }
}

/* ---- bits --------------------------------------------------------------------- */

/* The sum of each element's inputs, shifted, plus the offset, as type t. */
static void bits_finish(const HurrayGraphNodePlan *np, uint32_t t, const uint64_t *sum_lo,
                        const uint64_t *sum_hi, uint64_t n, void *out)
{
    int32_t offset = np->node->as.bits.offset;
    for (uint64_t k = 0; k < n; k++) {
        double v;
#if defined(__SIZEOF_INT128__)
        if (sum_hi != NULL) {
            hurray__u128 s = (hurray__u128)sum_hi[k] << 64 | sum_lo[k];
            v = (double)((hurray__i128)s + offset);
        } else
#endif
        {
            (void)sum_hi;
            v = (double)((int64_t)sum_lo[k] + offset); /* below 2^63 by the plan */
        }
        hurray__g_put(t, out, k, v);
    }
}

/* Adds code << shift to the 128-bit sums (hi may be NULL: the plan proved
 * the sums stay below 2^63). */
static void bits_add(uint64_t *lo, uint64_t *hi, const uint64_t *codes, uint32_t shift, uint64_t n)
{
    for (uint64_t k = 0; k < n; k++) {
        uint64_t add = codes[k] << shift;
        if (hi != NULL) {
            /* shift + bits <= 63: the term fits 64 bits; carry into hi */
            uint64_t before = lo[k];
            lo[k] += add;
            hi[k] += lo[k] < before;
        } else {
            lo[k] += add;
        }
    }
}

/* A bits node's sums, zeroed, and room for one input's codes, carved from
 * scratch: the low words, the high words when the sum is wider than 64
 * bits (else NULL), and the codes. */
static void bits_start(const HurrayGraphPlan *plan, const HurrayGraphNodePlan *np, uint64_t n,
                       uint8_t *scratch, uint64_t **lo, uint64_t **hi, uint64_t **codes)
{
    uint8_t *at = scratch;
    *lo = (uint64_t *)carve(&at, REQ_BYTES(8));
    *hi = np->bits_wide ? (uint64_t *)carve(&at, REQ_BYTES(8)) : NULL;
    *codes = (uint64_t *)carve(&at, REQ_BYTES(8));
    memset(*lo, 0, n * sizeof **lo);
    if (*hi != NULL) {
        memset(*hi, 0, n * sizeof **hi);
    }
}

static void bits_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                       uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayBitsNode *b = &np->node->as.bits;
    uint64_t *lo, *hi, *codes;
    bits_start(plan, np, n, scratch, &lo, &hi, &codes);
    for (uint32_t k = 0; k < b->input_count; k++) {
        hurray__graph_codes_range(plan, b->inputs[k], first, n, codes);
        bits_add(lo, hi, codes, b->shifts[k], n);
    }
    bits_finish(np, t, lo, hi, n, out);
}

static void bits_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                        uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayBitsNode *b = &np->node->as.bits;
    uint64_t *lo, *hi, *codes;
    bits_start(plan, np, n, scratch, &lo, &hi, &codes);
    for (uint32_t k = 0; k < b->input_count; k++) {
        const HurrayGraphNodePlan *in = &plan->nodes[b->inputs[k]];
        for (uint64_t e = 0; e < n; e++) {
            codes[e] = hurray__stored_code(in->node, in->data, flat[e]);
        }
        bits_add(lo, hi, codes, b->shifts[k], n);
    }
    bits_finish(np, t, lo, hi, n, out);
}

/* ---- gathers ------------------------------------------------------------------ */

/* x's flat index of the gather's element idx, the axis coordinate taken
 * as `along`. */
static uint64_t gather_source(const HurrayGraphPlan *plan, const HurrayGraphNodePlan *np,
                              const uint64_t *idx, uint64_t along)
{
    const HurrayGatherNode *g = &np->node->as.gather;
    const uint64_t *xs = plan->nodes[g->x].strides;
    uint64_t flat = 0;
    for (uint32_t k = 0; k < np->node->rank; k++) {
        flat += (k == g->axis ? along : idx[k]) * xs[k];
    }
    return flat;
}

static void gather_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                         uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayGatherNode *g = &np->node->as.gather;
    uint32_t last = np->node->rank - 1, size = hurray__g_size(t);
    uint64_t extent = plan->graph->nodes[g->x].shape[g->axis];
    uint8_t *at = scratch;
    uint64_t *P = (uint64_t *)carve(&at, REQ_BYTES(8));
    uint64_t *indices = (uint64_t *)carve(&at, REQ_BYTES(8));
    uint64_t idx[HURRAY_MAX_RANK];
    hurray__graph_unflatten(np, first, idx);
    for (uint64_t pos = 0; pos < n;) {
        uint64_t from = idx[last];
        uint64_t len = np->last - from < n - pos ? np->last - from : n - pos;
        uint8_t *dst = (uint8_t *)out + pos * size;
        if (g->axis != last) {
            /* A whole run of x: the row the index names. */
            uint64_t along = index_at(plan, g->index, idx[g->axis], extent);
            hurray__graph_range(plan, g->x, t, gather_source(plan, np, idx, along), len, dst, at);
        } else {
            index_range(plan, g->index, from, len, extent, indices);
            uint64_t row = gather_source(plan, np, idx, 0);
            for (uint64_t u = 0; u < len; u++) {
                P[u] = row + indices[u]; /* x's last axis has stride 1 */
            }
            fetch(plan, g->x, t, P, len, dst, at);
        }
        pos += len;
        hurray__graph_advance(np, idx, len);
    }
}

static void gather_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                          uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayGatherNode *g = &np->node->as.gather;
    uint64_t extent = plan->graph->nodes[g->x].shape[g->axis];
    uint8_t *at = scratch;
    uint64_t *P = (uint64_t *)carve(&at, REQ_BYTES(8));
    uint64_t idx[HURRAY_MAX_RANK];
    for (uint64_t k = 0; k < n; k++) {
        hurray__graph_unflatten(np, flat[k], idx);
        P[k] = gather_source(plan, np, idx, index_at(plan, g->index, idx[g->axis], extent));
    }
    fetch(plan, g->x, t, P, n, out, at);
}

/* ---- stored points ---------------------------------------------------------- */

static void stored_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                          uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    uint64_t *codes = (uint64_t *)scratch;
    for (uint64_t k = 0; k < n; k++) {
        codes[k] = hurray__stored_code(np->node, np->data, flat[k]);
    }
    hurray__graph_codes_to_values(plan, i, t, codes, n, out, scratch + REQ_BYTES(8));
}

/* ---- dispatch ------------------------------------------------------------------ */

void hurray__graph_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                         uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayNode *node = &plan->graph->nodes[i];
    switch (node->kind) {
    case HURRAY_NODE_STORED: hurray__graph_stored_range(plan, i, t, first, n, out, scratch); return;
    case HURRAY_NODE_CONSTANT: constant_fill(&node->as.constant, t, n, out); return;
    case HURRAY_NODE_STEP: step_range(plan, i, t, first, n, out, scratch); return;
    case HURRAY_NODE_GGML: ggml_range(plan, i, t, first, n, out, scratch); return;
    case HURRAY_NODE_BITS: bits_range(plan, i, t, first, n, out, scratch); return;
    default: /* HURRAY_NODE_GATHER */ gather_range(plan, i, t, first, n, out, scratch); return;
    }
}

void hurray__graph_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                          uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayNode *node = &plan->graph->nodes[i];
    switch (node->kind) {
    case HURRAY_NODE_STORED: stored_points(plan, i, t, flat, n, out, scratch); return;
    case HURRAY_NODE_CONSTANT: constant_fill(&node->as.constant, t, n, out); return;
    case HURRAY_NODE_STEP: step_points(plan, i, t, flat, n, out, scratch); return;
    case HURRAY_NODE_GGML: ggml_points(plan, i, t, flat, n, out, scratch); return;
    case HURRAY_NODE_BITS: bits_points(plan, i, t, flat, n, out, scratch); return;
    default: /* HURRAY_NODE_GATHER */ gather_points(plan, i, t, flat, n, out, scratch); return;
    }
}
