/*
 * dequant_graph_read.c -- the stored nodes of the graph scheme: their codes
 * and values, run by run along the last axis (dequant_graph_shared.h).
 *
 * Where a code lies is descriptor_graph.h's rule, the one check_buffers
 * proved every element's bytes against; the readers here compute the same
 * positions run by run, so they touch exactly the bytes the proof covers
 * (descriptor_graph_codes.c computes them one element at a time, for the
 * points and for the index scans of check_buffers). A run of the last axis
 * falls into one of these cases:
 *   - slotted: the packed axis is the last one and consecutive elements
 *     fill a container slot after slot before the next container (dense
 *     packing whose codes never straddle, b dividing W; interleaved slots
 *     whose chunks follow each other, chunk stride = chunk containers): one
 *     container load per `per` codes;
 *   - shifted: the packed axis is another one: every code of the run sits
 *     at the same bit of a container, the containers `stride` apart;
 *   - elements: version 1's addressing, contiguous byte codes, nibbles or
 *     wide floats read by the kernels of dequant_avx2.c;
 *   - anything else (dense codes that straddle containers, planar slots,
 *     the swizzled layout, ...): one element at a time.
 * The first three decode codes of at most 8 bits straight to values
 * through the node's table; the last reads codes, then maps them.
 */
#include <inttypes.h>

#include "dequant_graph_shared.h"
#include "descriptor_graph_codes.h"
#include "dtype.h"

/* `bytes` bytes (1, 2, 4 or 8) at p as one unsigned number, in the node's
 * byte order. */
static inline uint64_t load_unit(const uint8_t *p, uint32_t bytes, int swap)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (!swap) { /* one load */
        switch (bytes) {
        case 1: return p[0];
        case 2: {
            uint16_t h;
            memcpy(&h, p, sizeof h);
            return h;
        }
        case 4: {
            uint32_t w;
            memcpy(&w, p, sizeof w);
            return w;
        }
        default: memcpy(&v, p, sizeof v); return v;
        }
    }
#endif
    if (swap) {
        for (uint32_t k = 0; k < bytes; k++) {
            v = (v << 8) | p[k];
        }
    } else {
        for (uint32_t k = bytes; k-- > 0;) {
            v = (v << 8) | p[k];
        }
    }
    return v;
}

/* floor(bit / 8) for a bit position that may be negative (negative strides). */
static inline int64_t floor_div8(int64_t bit)
{
    return bit >= 0 ? bit / 8 : -((-bit + 7) / 8);
}

/* Where element e along the packed axis lies: container j along it, bit t. */
static inline void locate(const HurrayStoredNode *s, uint32_t b, uint64_t e, uint64_t *j,
                          uint32_t *t)
{
    if (s->packing == HURRAY_PACKING_DENSE) {
        *j = e * b / s->container_bits;
        *t = (uint32_t)(e * b % s->container_bits);
        return;
    }
    uint64_t per = s->slot_count, k = s->chunk_containers, n, chunk = 0, r = e;
    if (!__builtin_mul_overflow(per, k, &n)) { /* else one chunk holds every element */
        chunk = e / n;
        r = e % n;
    }
    uint64_t container, slot;
    if (s->slot_flags & HURRAY_SLOTS_PLANAR) {
        container = r % k;
        slot = r / k;
    } else {
        container = r / per;
        slot = r % per;
    }
    *j = chunk * s->chunk_stride + container;
    *t = b * s->order[slot];
}

/* ---- one run, as codes ---------------------------------------------------- */

static void elements_run_codes(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                               uint64_t *codes)
{
    const HurrayNode *node = np->node;
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t rank = node->rank, b = np->bits;
    if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        for (uint64_t u = 0; u < len; u++) {
            uint64_t at = hurray__swizzled_index(idx[0], idx[1] + u, node->shape[1]);
            codes[u] = load_unit(np->base + at * np->unit, np->unit, np->swap);
        }
        return;
    }
    if (s->packing == HURRAY_PACKING_GGML_SPLIT) {
        /* Row-major contiguous: the flat index places the code. */
        uint64_t flat = 0;
        for (uint32_t k = 0; k < rank; k++) {
            flat += idx[k] * np->strides[k];
        }
        for (uint64_t u = 0; u < len; u++, flat++) {
            uint8_t byte = np->base[16 * (flat / 32) + flat % 16];
            codes[u] = (flat % 32 < 16 ? byte : byte >> 4) & 0xFu;
        }
        return;
    }
    int64_t e = 0, step = rank == 0 ? 0 : s->strides[rank - 1];
    for (uint32_t k = 0; k < rank; k++) {
        e += (int64_t)idx[k] * s->strides[k];
    }
    if (s->packing == HURRAY_PACKING_PADDED) {
        for (uint64_t u = 0; u < len; u++, e += step) {
            codes[u] = np->base[e] & np->code_mask;
        }
    } else if (b >= 8) {
        for (uint64_t u = 0; u < len; u++, e += step) {
            codes[u] = load_unit(np->base + e * (int64_t)np->unit, np->unit, np->swap);
        }
    } else { /* LSB_FIRST, 1, 2 or 4 bits: never across a byte */
        for (uint64_t u = 0; u < len; u++, e += step) {
            int64_t bit = e * (int64_t)b;
            int64_t byte = floor_div8(bit);
            codes[u] = (uint64_t)(np->base[byte] >> (bit - 8 * byte)) & np->code_mask;
        }
    }
}

/* The container offset (in containers) of the run's start, leaving out the
 * packed axis. */
static int64_t words_rest(const HurrayGraphNodePlan *np, const uint64_t *idx)
{
    const HurrayStoredNode *s = &np->node->as.stored;
    int64_t rest = 0;
    for (uint32_t k = 0; k < np->node->rank; k++) {
        if (k != s->packed_axis) {
            rest += (int64_t)idx[k] * s->strides[k];
        }
    }
    return rest;
}

static void words_run_codes(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                            uint64_t *codes)
{
    const HurrayNode *node = np->node;
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t b = np->bits, w = s->container_bits, last = node->rank - 1, p = s->packed_axis;
    int64_t unit = np->unit, sp = s->strides[p];
    int64_t rest = words_rest(np, idx);
    int64_t step = p == last ? 0 : s->strides[last];
    for (uint64_t u = 0; u < len; u++) {
        uint64_t e = idx[p] + (p == last ? u : 0), j;
        uint32_t t;
        locate(s, b, e, &j, &t);
        const uint8_t *c = np->base + (rest + (int64_t)u * step + (int64_t)j * sp) * unit;
        uint64_t code = load_unit(c, np->unit, np->swap) >> t;
        if (t + b > w) { /* dense: the high bits open the next container along p */
            code |= load_unit(c + sp * unit, np->unit, np->swap) << (w - t);
        }
        codes[u] = code & np->code_mask;
    }
}

static void run_codes(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                      uint64_t *codes)
{
    if (np->node->as.stored.addressing == HURRAY_ADDRESSING_WORDS) {
        words_run_codes(np, idx, len, codes);
    } else {
        elements_run_codes(np, idx, len, codes);
    }
}

void hurray__graph_codes_range(const HurrayGraphPlan *plan, uint32_t i, uint64_t first, uint64_t n,
                               uint64_t *codes)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    uint64_t idx[HURRAY_MAX_RANK];
    hurray__graph_unflatten(np, first, idx);
    uint32_t rank = np->node->rank;
    for (uint64_t done = 0; done < n;) {
        uint64_t at = rank == 0 ? 0 : idx[rank - 1];
        uint64_t len = np->last - at < n - done ? np->last - at : n - done;
        run_codes(np, idx, len, codes + done);
        done += len;
        hurray__graph_advance(np, idx, len);
    }
}

/* ---- codes to values ------------------------------------------------------ */

/* A wide integer code plus the code offset, as a float64 rounded once. */
static double integer_value(const HurrayGraphNodePlan *np, uint64_t code)
{
    int32_t offset = np->node->as.stored.code_offset;
    if (np->bits < 64) {
        return (double)hurray__graph_integer(np, code); /* exact in int64 */
    }
#if defined(__SIZEOF_INT128__)
    hurray__i128 v = np->is_signed ? (hurray__i128)(int64_t)code : (hurray__i128)code;
    return (double)(v + offset);
#else
    return (np->is_signed ? (double)(int64_t)code : (double)code) + (double)offset;
#endif
}

void hurray__graph_codes_to_values(const HurrayGraphPlan *plan, uint32_t i, uint32_t t,
                                   const uint64_t *codes, uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    float *f = out;
    double *d = out;
    switch (np->value) {
    case HURRAY__G_VALUE_TABLE:
        if (t == HURRAY__G_F64) {
            const double *table = np->table[t];
            for (uint64_t k = 0; k < n; k++) {
                d[k] = table[codes[k]];
            }
        } else {
            const float *table = np->table[t];
            for (uint64_t k = 0; k < n; k++) {
                f[k] = table[codes[k]];
            }
        }
        return;
    case HURRAY__G_VALUE_BOOK:
        /* A codebook of rank 1: the code is its flat index (check_links
         * proved it has an entry for every code). */
        hurray__graph_points(plan, np->node->as.stored.codebook, t, codes, n, out, scratch);
        return;
    case HURRAY__G_VALUE_INT:
        for (uint64_t k = 0; k < n; k++) {
            hurray__g_put(t, out, k, integer_value(np, codes[k]));
        }
        return;
    case HURRAY__G_VALUE_F16:
        for (uint64_t k = 0; k < n; k++) {
            float v = hurray__f16_to_f32((uint16_t)codes[k]);
            if (t == HURRAY__G_F64) {
                d[k] = v;
            } else {
                f[k] = t == HURRAY__G_F16 ? v : hurray__g_round_f32_to(t, v);
            }
        }
        return;
    case HURRAY__G_VALUE_BF16:
        for (uint64_t k = 0; k < n; k++) {
            float v = hurray__bf16_to_f32((uint16_t)codes[k]);
            if (t == HURRAY__G_F64) {
                d[k] = v;
            } else {
                f[k] = t == HURRAY__G_BF16 ? v : hurray__g_round_f32_to(t, v);
            }
        }
        return;
    case HURRAY__G_VALUE_F32:
        for (uint64_t k = 0; k < n; k++) {
            uint32_t bits = (uint32_t)codes[k];
            float v;
            memcpy(&v, &bits, sizeof v);
            if (t == HURRAY__G_F64) {
                d[k] = v;
            } else {
                f[k] = hurray__g_round_f32_to(t, v);
            }
        }
        return;
    default: /* HURRAY__G_VALUE_F64 */
        for (uint64_t k = 0; k < n; k++) {
            double v;
            memcpy(&v, &codes[k], sizeof v);
            hurray__g_put(t, out, k, v);
        }
        return;
    }
}

/* ---- one run, straight to values (codes of at most 8 bits) --------------- */

static int order_is_identity(const uint8_t *order, uint32_t per)
{
    for (uint32_t s = 0; s < per; s++) {
        if (order[s] != s) {
            return 0;
        }
    }
    return 1;
}

/* A slotted run: element u in slot (slot + u) % per of container
 * (slot + u) / per, the containers `stride` bytes apart from c, slot s at
 * bit b * order[s]; through the float table. */
static void slotted_run(const HurrayGraphNodePlan *np, const uint8_t *c, int64_t stride,
                        uint32_t slot, const uint8_t *order, uint32_t per, const float *table,
                        uint64_t len, float *out, int simd)
{
    uint32_t b = np->bits;
    uint64_t u = 0, k = 0; /* u: elements done; k: containers passed */
    /* The first container's remaining slots. */
    if (slot != 0) {
        uint64_t word = load_unit(c, np->unit, np->swap);
        for (; slot < per && u < len; slot++, u++) {
            out[u] = table[(word >> (b * order[slot])) & np->code_mask];
        }
        k = 1;
    }
    uint64_t whole = (len - u) / per;
#if HURRAY__DEQUANT_AVX2
    if (simd && !np->swap && whole > 0) {
        const uint8_t *at = c + (int64_t)k * stride;
        int done = 1;
        if (np->unit == 4 && b == 4) {
            hurray__graph_words4_avx2(at, stride, order, table, whole, out + u);
        } else if (np->unit == 1 && b == 4 && stride == 1) { /* order [0, 1] or [1, 0] */
            hurray__read_nibbles_avx2(at, table, whole, order[0] == 1, out + u);
        } else if (b == 8 && stride == np->unit && order_is_identity(order, per)) {
            /* Whole bytes in memory order (little-endian containers). */
            if (np->fp8 != 0) {
                hurray__graph_fp8_avx2(at, np->fp8 == 2, whole * per, out + u);
            } else {
                hurray__read_code8_avx2(at, table, whole * per, out + u);
            }
        } else {
            done = 0;
        }
        if (done) {
            u += whole * per;
            k += whole;
            whole = 0;
        }
    }
#else
    (void)simd;
#endif
    for (uint64_t w = 0; w < whole; w++, k++) {
        uint64_t word = load_unit(c + (int64_t)k * stride, np->unit, np->swap);
        for (uint32_t s = 0; s < per; s++) {
            out[u++] = table[(word >> (b * order[s])) & np->code_mask];
        }
    }
    if (u < len) {
        uint64_t word = load_unit(c + (int64_t)k * stride, np->unit, np->swap);
        for (uint32_t s = 0; u < len; s++, u++) {
            out[u] = table[(word >> (b * order[s])) & np->code_mask];
        }
    }
}

/* Every code of the run at bit `shift` of containers `stride` bytes apart. */
static void shifted_run(const HurrayGraphNodePlan *np, const uint8_t *c, int64_t stride,
                        uint32_t shift, const float *table, uint64_t len, float *out, int simd)
{
    uint64_t u = 0;
#if HURRAY__DEQUANT_AVX2
    if (simd && !np->swap && (np->unit == 1 || np->unit == 4) && len >= 8) {
        u = len / 8 * 8;
        hurray__graph_shifted_avx2(c, stride, np->unit, shift, (uint32_t)np->code_mask, table, u,
                                   out);
    }
#else
    (void)simd;
#endif
    for (; u < len; u++) {
        uint64_t word = load_unit(c + (int64_t)u * stride, np->unit, np->swap);
        out[u] = table[(word >> shift) & np->code_mask];
    }
}

/* A shifted run through the node's row cache: the run's containers
 * (keyed by rest, j, len and the table) are decoded once for all their
 * slots, and the run's own slot is copied out. The containers lie where
 * shifted_run would read them; only the order of the reads differs. */
static void cached_run(const HurrayGraphNodePlan *np, const uint8_t *c, int64_t stride,
                       int64_t rest, uint64_t j, uint32_t slot, const float *table, uint64_t len,
                       float *out, int simd)
{
    HurrayGraphRowCache *cache = np->cache;
    uint32_t per = np->cache_per, b = np->bits;
    if (!cache->valid || cache->rest != rest || cache->j != j || cache->len != len ||
        cache->table != table) {
        uint64_t u = 0;
#if HURRAY__DEQUANT_AVX2
        if (simd && !np->swap && np->unit == 4 && b <= 4) {
            u = len / 8 * 8;
            hurray__graph_fill_rows_avx2(c, stride, b, per, np->cache_order, table, u, len,
                                         cache->values);
        }
#else
        (void)simd;
#endif
        for (; u < len; u++) {
            uint64_t word = load_unit(c + (int64_t)u * stride, np->unit, np->swap);
            for (uint32_t k = 0; k < per; k++) {
                cache->values[k * len + u] =
                    table[(word >> (b * np->cache_order[k])) & np->code_mask];
            }
        }
        cache->valid = 1;
        cache->rest = rest;
        cache->j = j;
        cache->len = len;
        cache->table = table;
    }
    memcpy(out, cache->values + (uint64_t)slot * len, len * sizeof(float));
}

static const uint8_t IDENTITY[HURRAY__MAX_SLOTS] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10,
                                                    11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
                                                    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
                                                    33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
                                                    44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54,
                                                    55, 56, 57, 58, 59, 60, 61, 62, 63};

/* A words run through the table when its case is slotted or shifted; 0
 * when it is neither. */
static int words_run_table(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                           const float *table, float *out, int simd)
{
    const HurrayStoredNode *s = &np->node->as.stored;
    uint32_t b = np->bits, w = s->container_bits, last = np->node->rank - 1, p = s->packed_axis;
    int64_t unit = np->unit, sp = s->strides[p];
    int64_t rest = words_rest(np, idx);
    if (p != last) {
        uint64_t j;
        uint32_t t;
        locate(s, b, idx[p], &j, &t);
        if (t + b > w) {
            return 0; /* a straddling code */
        }
        const uint8_t *c = np->base + (rest + (int64_t)j * sp) * unit;
        int64_t stride = s->strides[last] * unit;
        if (np->cache != NULL && len >= 64 && (stride >= 64 || stride <= -64)) {
            cached_run(np, c, stride, rest, j, (uint32_t)(idx[p] % np->cache_per), table, len, out,
                       simd);
        } else {
            shifted_run(np, c, stride, t, table, len, out, simd);
        }
        return 1;
    }
    uint32_t per;
    const uint8_t *order;
    if (s->packing == HURRAY_PACKING_DENSE) {
        if (w % b != 0) {
            return 0;
        }
        per = w / b;
        order = IDENTITY;
    } else {
        if ((s->slot_flags & HURRAY_SLOTS_PLANAR) || s->chunk_stride != s->chunk_containers) {
            return 0;
        }
        per = s->slot_count;
        order = s->order;
    }
    /* Slotted: element e in container e / per, slot e % per. */
    uint64_t e = idx[p];
    const uint8_t *c = np->base + (rest + (int64_t)(e / per) * sp) * unit;
    slotted_run(np, c, sp * unit, (uint32_t)(e % per), order, per, table, len, out, simd);
    return 1;
}

/* An elements run through the table when it is contiguous; 0 otherwise. */
static int elements_run_table(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                              const float *table, float *out, int simd)
{
    const HurrayStoredNode *s = &np->node->as.stored;
    uint32_t rank = np->node->rank;
    if (s->layout != HURRAY_PART_LAYOUT_ROW_MAJOR || s->packing == HURRAY_PACKING_GGML_SPLIT ||
        rank == 0 || s->strides[rank - 1] != 1) {
        return 0;
    }
    int64_t e = 0;
    for (uint32_t k = 0; k < rank; k++) {
        e += (int64_t)idx[k] * s->strides[k];
    }
    uint64_t u = 0;
    if (np->bits == 8 || s->packing == HURRAY_PACKING_PADDED) {
        /* One code per byte: the table is indexed by the whole byte. */
        const uint8_t *c = np->base + e;
#if HURRAY__DEQUANT_AVX2
        if (simd) {
            if (np->fp8 != 0) {
                hurray__graph_fp8_avx2(c, np->fp8 == 2, len, out);
            } else {
                hurray__read_code8_avx2(c, table, len, out);
            }
            return 1;
        }
#endif
        for (; u < len; u++) {
            out[u] = table[c[u]];
        }
        return 1;
    }
    if (np->bits != 4) {
        return 0;
    }
    /* LSB-first nibbles from element e. */
    if (e & 1) {
        out[u++] = table[np->base[floor_div8(4 * e)] >> 4];
        e++;
    }
    const uint8_t *c = np->base + e / 2;
    uint64_t pairs = (len - u) / 2;
#if HURRAY__DEQUANT_AVX2
    if (simd) {
        hurray__read_nibbles_avx2(c, table, pairs, 0, out + u);
        u += 2 * pairs;
        c += pairs;
        pairs = 0;
    }
#endif
    for (uint64_t k = 0; k < pairs; k++, c++) {
        out[u++] = table[*c & 15];
        out[u++] = table[*c >> 4];
    }
    if (u < len) {
        out[u] = table[*c & 15];
    }
    (void)simd;
    return 1;
}

/* Contiguous little-endian float16, bfloat16 or float32 elements, as type t
 * (not float64); 0 when the run is not such. */
static int elements_run_floats(const HurrayGraphNodePlan *np, const uint64_t *idx, uint64_t len,
                               uint32_t t, float *out, int simd)
{
    const HurrayStoredNode *s = &np->node->as.stored;
    uint32_t rank = np->node->rank;
    if (np->swap || s->layout != HURRAY_PART_LAYOUT_ROW_MAJOR || rank == 0 ||
        s->strides[rank - 1] != 1) {
        return 0;
    }
    int64_t e = 0;
    for (uint32_t k = 0; k < rank; k++) {
        e += (int64_t)idx[k] * s->strides[k];
    }
    const uint8_t *c = np->base + e * (int64_t)np->unit;
    uint32_t from;
    if (np->value == HURRAY__G_VALUE_F32) {
        memcpy(out, c, 4 * len); /* the bits as they are */
        from = HURRAY__G_F32;
    } else if (np->value == HURRAY__G_VALUE_F16 || np->value == HURRAY__G_VALUE_BF16) {
        int half = np->value == HURRAY__G_VALUE_F16;
        from = half ? HURRAY__G_F16 : HURRAY__G_BF16;
#if HURRAY__DEQUANT_AVX2
        if (simd) {
            if (half) {
                hurray__read_f16_avx2(c, len, out);
            } else {
                hurray__read_bf16_avx2(c, len, out);
            }
        } else
#endif
        {
            for (uint64_t u = 0; u < len; u++) {
                uint16_t h = hurray__le16(c + 2 * u);
                out[u] = half ? hurray__f16_to_f32(h) : hurray__bf16_to_f32(h);
            }
        }
    } else {
        return 0;
    }
    if (from != t) {
        hurray__graph_convert(from, t, out, len, out, simd);
    }
    return 1;
}

void hurray__graph_stored_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                                uint64_t n, void *out, uint8_t *scratch)
{
    const HurrayGraphNodePlan *np = &plan->nodes[i];
    const HurrayStoredNode *s = &np->node->as.stored;
    uint64_t *codes = (uint64_t *)scratch; /* plan->req codes */
    uint8_t *below = scratch + 8 * (size_t)plan->req;
    uint32_t size = hurray__g_size(t);
    uint32_t rank = np->node->rank;
    int tabled = np->value == HURRAY__G_VALUE_TABLE && t != HURRAY__G_F64;
    int floats = t != HURRAY__G_F64 && s->addressing == HURRAY_ADDRESSING_ELEMENTS &&
                 (np->value == HURRAY__G_VALUE_F16 || np->value == HURRAY__G_VALUE_BF16 ||
                  np->value == HURRAY__G_VALUE_F32);
    uint64_t idx[HURRAY_MAX_RANK];
    hurray__graph_unflatten(np, first, idx);
    for (uint64_t done = 0; done < n;) {
        uint64_t at = rank == 0 ? 0 : idx[rank - 1];
        uint64_t len = np->last - at < n - done ? np->last - at : n - done;
        uint8_t *dst = (uint8_t *)out + done * size;
        int fast = 0;
        if (tabled) {
            const float *table = np->table[t];
            fast = s->addressing == HURRAY_ADDRESSING_WORDS
                       ? words_run_table(np, idx, len, table, (float *)dst, plan->simd)
                       : elements_run_table(np, idx, len, table, (float *)dst, plan->simd);
        } else if (floats) {
            fast = elements_run_floats(np, idx, len, t, (float *)dst, plan->simd);
        }
        if (!fast) {
            run_codes(np, idx, len, codes);
            hurray__graph_codes_to_values(plan, i, t, codes, len, dst, below);
        }
        done += len;
        hurray__graph_advance(np, idx, len);
    }
}
