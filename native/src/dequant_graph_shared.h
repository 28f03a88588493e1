/*
 * dequant_graph_shared.h -- internal: the graph scheme of the dequantizer
 * (ADR-055, "The graph scheme"): the value of node 0 of a version-2
 * descriptor (descriptor_graph.h), written as float32 in row-major order.
 *
 * A call compiles the checked graph into a plan once (dequant_graph_plan.c):
 * per node its row-major strides, per stored node where its bytes lie and,
 * for codes of at most 8 bits, a table from code to value in each
 * arithmetic type some consumer asks for; per step its grid. The tiles of
 * the call then evaluate node 0 through the plan.
 *
 * Values. A node's value is asked for in one of the four arithmetic types
 * (dequant_graph_round.h) and comes back converted to it: that is where the
 * conversions of spec § 2 happen. A step asks its x, scale and offset for
 * its own arithmetic type T, evaluates its form in T (every operation
 * rounded to T) and converts the result to what it was asked for; node 0 is
 * asked for float32. An integer goes to the type through float64 (exact
 * below 2^53, so rounded once); a float64 value is rounded once, straight
 * to the type; every other value is exact in float32 and rounded from it.
 *
 * Two ways to ask: a range of flat indices (row-major over the node's
 * shape), which the common layouts serve run by run along the last axis;
 * and a list of points, which every node serves one element at a time (the
 * general evaluator for rare shapes). A request asks for at most
 * plan->req values. Every evaluation takes its scratch from an arena
 * the plan sized for the deepest chain of requests below the node, and
 * writes nothing else: tiles of one call may run in any order, and calls
 * on other threads have plans of their own.
 *
 * Not part of the ABI.
 */
#ifndef HURRAY_DEQUANT_GRAPH_INTERNAL_H
#define HURRAY_DEQUANT_GRAPH_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "dequant_graph_round.h"
#include "dequant_shared.h"
#include "descriptor_graph.h"

/* The most values one request asks for: a tile. A plan asks for at most
 * plan->req (the tile, or the tensor's elements when fewer, and at least
 * a code table's 256), and sizes its arena for that. */
#define HURRAY__G_REQ HURRAY__DEQUANT_TILE

/* How the codes of a stored node become values. */
enum {
    HURRAY__G_VALUE_TABLE = 0, /* at most 8 bits: table[type][code] */
    HURRAY__G_VALUE_INT,       /* a wider integer, plus the code offset, through float64 */
    HURRAY__G_VALUE_F16,
    HURRAY__G_VALUE_BF16,
    HURRAY__G_VALUE_F32,
    HURRAY__G_VALUE_F64,
    HURRAY__G_VALUE_BOOK /* a codebook indexed by codes wider than 8 bits */
};

/* The codes of every slot of a run of containers, kept between runs: a
 * words node packed along another axis than the last (AWQ's qweight,
 * packed along the output axis) has `per` consecutive rows in each
 * container, so the run of one row decodes the next per - 1 rows' too.
 * Mutable scratch of one call, like the arena. */
#if defined(__SIZEOF_INT128__)
/* gcc's and clang's 128-bit integers, for sums of codes of 64 bits;
   __extension__ keeps builds with -pedantic quiet. */
__extension__ typedef __int128 hurray__i128;
__extension__ typedef unsigned __int128 hurray__u128;
#endif

typedef struct HurrayGraphRowCache {
    int valid;
    int64_t rest;       /* the key: the run's containers, */
    uint64_t j;         /* the container along the packed axis, */
    uint64_t len;       /* the run's length */
    const float *table; /* and the values' table */
    float values[];     /* per rows of len values, slot by slot */
} HurrayGraphRowCache;

typedef struct HurrayGraphNodePlan {
    const HurrayNode *node;
    uint64_t count;          /* elements */
    uint64_t last;           /* the extent of the last axis; 1 for rank 0 */
    const uint64_t *strides; /* rank entries: row-major strides of the shape */
    size_t scratch;          /* arena bytes an evaluation of this node may use */
    uint8_t demand;          /* bit t: some consumer asks for type t */
    /* STORED */
    const uint8_t *data; /* the buffer's first byte (descriptor_graph_codes.h) */
    const uint8_t *base; /* data + byte_offset */
    uint32_t bits;       /* b */
    uint32_t unit;       /* bytes of a container (WORDS) or element (>= 8 bits) */
    uint8_t value;       /* HURRAY__G_VALUE_* */
    uint8_t is_signed;   /* a signed integer dtype */
    uint8_t swap;        /* big-endian units */
    uint8_t fp8;         /* 1: e4m3fn, 2: e5m2 without a codebook (decoded by arithmetic) */
    uint64_t code_mask;  /* the low b bits */
    const void *table[HURRAY__G_TYPES]; /* 256 values of each type asked for, or NULL */
    HurrayGraphRowCache *cache;         /* words packed along another axis, or NULL */
    uint32_t cache_per;         /* consecutive elements along the packed axis per container */
    const uint8_t *cache_order; /* their slots' order */
    /* STEP */
    uint8_t arith;                /* HURRAY__G_*: the step's arithmetic */
    const uint64_t *grid_strides; /* rank entries: row-major strides of the grid */
    uint64_t group_count;         /* G on the indexed axis */
    /* BITS */
    uint8_t bits_wide; /* the sum may pass 2^63: summed in 128 bits */
} HurrayGraphNodePlan;

typedef struct HurrayGraphPlan {
    const HurrayGraph *graph;
    int simd;       /* the AVX2 kernels may be used */
    uint64_t req;   /* the most values a request asks for, <= HURRAY__G_REQ */
    uint8_t *arena; /* scratch, nodes[0].scratch bytes */
    HurrayGraphNodePlan nodes[HURRAY_MAX_NODES];
} HurrayGraphPlan;

/* ---- the plan (dequant_graph_plan.c) ------------------------------------ */

/* The plan of a checked graph whose buffers check_buffers has proven, over
 * the list's buffers, for a call on a tensor of `elements` elements;
 * NO_MEMORY when it cannot be allocated. Freed with hurray__graph_plan_free. */
HurrayStatus hurray__graph_plan_new(const HurrayDescriptor *desc, const HurrayBufferList *list,
                                    int simd, uint64_t elements, HurrayGraphPlan **out);
void hurray__graph_plan_free(HurrayGraphPlan *plan);

/* ---- evaluation (dequant_graph_eval.c) ---------------------------------- */

/* The values of node i, as type t, at flat indices [first, first + n),
 * n <= plan->req, into out (n floats, or doubles for float64). */
void hurray__graph_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                         uint64_t n, void *out, uint8_t *scratch);
/* The same at n flat indices in any order (repeats allowed). */
void hurray__graph_points(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, const uint64_t *flat,
                          uint64_t n, void *out, uint8_t *scratch);
/* Bytes of scratch an evaluation of a node of this kind needs for itself,
 * below what the nodes it asks need (plan->req set). */
size_t hurray__graph_own_scratch(const HurrayGraphPlan *plan, const HurrayNode *node);

/* ---- stored nodes (dequant_graph_read.c) -------------------------------- */

/* The codes (b bits, zero-extended) of stored node i at flat indices
 * [first, first + n), n <= plan->req. */
void hurray__graph_codes_range(const HurrayGraphPlan *plan, uint32_t i, uint64_t first, uint64_t n,
                               uint64_t *codes);
/* The value of stored node i, as type t, at flat indices [first,
 * first + n); the fast readers of the common layouts decode straight to
 * values. */
void hurray__graph_stored_range(const HurrayGraphPlan *plan, uint32_t i, uint32_t t, uint64_t first,
                                uint64_t n, void *out, uint8_t *scratch);
/* Codes of stored node i to values of type t (n <= plan->req). */
void hurray__graph_codes_to_values(const HurrayGraphPlan *plan, uint32_t i, uint32_t t,
                                   const uint64_t *codes, uint64_t n, void *out, uint8_t *scratch);
/* A code of an integer stored node as its integer (sign-extended, plus the
 * code offset), as descriptor_graph_codes.h reads it. */
static inline int64_t hurray__graph_integer(const HurrayGraphNodePlan *np, uint64_t code)
{
    uint64_t value = code;
    if (np->is_signed) {
        uint64_t sign = (uint64_t)1 << (np->bits - 1);
        value = (code ^ sign) - sign;
    }
    return (int64_t)(value + (uint64_t)(int64_t)np->node->as.stored.code_offset);
}

/* The multi-index of `flat` in node np's shape (its row-major strides). */
static inline void hurray__graph_unflatten(const HurrayGraphNodePlan *np, uint64_t flat,
                                           uint64_t *idx)
{
    for (uint32_t k = 0; k < np->node->rank; k++) {
        idx[k] = flat / np->strides[k];
        flat %= np->strides[k];
    }
}

/* The index after a run of `len` along the last axis: the next row's start
 * (or the same row further on). */
static inline void hurray__graph_advance(const HurrayGraphNodePlan *np, uint64_t *idx, uint64_t len)
{
    uint32_t rank = np->node->rank;
    if (rank == 0) {
        return;
    }
    idx[rank - 1] += len;
    for (uint32_t k = rank - 1; k > 0 && idx[k] == np->node->shape[k]; k--) {
        idx[k] = 0;
        idx[k - 1]++;
    }
}

/* ---- kernels (dequant_graph_kernels.c, dequant_graph_avx2.c) ------------ */

/* y = form(x, s, o) in type t over n values, in place over xy: segment k
 * is elements [start[k], start[k + 1]) and takes s[k] and o[k] (o NULL for
 * the forms without an offset). */
void hurray__graph_apply(uint32_t form, uint32_t t, void *xy, uint64_t n, const uint32_t *start,
                         uint64_t segments, const void *s, const void *o, int simd);
/* n values of type `from` to type `to` (dst may be src when both are
 * floats). */
void hurray__graph_convert(uint32_t from, uint32_t to, const void *src, uint64_t n, void *dst,
                           int simd);

#if HURRAY__DEQUANT_AVX2
/* The AVX2 twins of the kernels for the three float-held types, bit for bit. */
void hurray__graph_apply_avx2(uint32_t form, uint32_t t, float *xy, uint64_t n,
                              const uint32_t *start, uint64_t segments, const float *s,
                              const float *o);
void hurray__graph_round_avx2(uint32_t t, float *v, uint64_t n);
/* A row cache's fill (dequant_graph_read.c cached_run): n containers of
 * 32 bits `stride` bytes apart, each holding per codes of b <= 4 bits at
 * bits b * order[k]; code k of container u to values[k * len + u]. */
void hurray__graph_fill_rows_avx2(const uint8_t *first, int64_t stride, uint32_t b, uint32_t per,
                                  const uint8_t *order, const float *table, uint64_t n,
                                  uint64_t len, float *values);
/* float8_e4m3fn (e5m2 0) or float8_e5m2 (1) bytes to their float32 values. */
void hurray__graph_fp8_avx2(const uint8_t *bytes, int e5m2, uint64_t n, float *out);
/* n containers of 32 bits (little-endian, `stride` bytes apart) with
 * eight 4-bit codes each, slot k at bit 4 * order[k], through a table. */
void hurray__graph_words4_avx2(const uint8_t *first, int64_t stride, const uint8_t *order,
                               const float *table, uint64_t n, float *out);
/* n codes at one shift of containers `stride` bytes apart (8 or 32 bits,
 * little-endian), masked to the low bits, through the 256-entry table. */
void hurray__graph_shifted_avx2(const uint8_t *first, int64_t stride, uint32_t container_bytes,
                                uint32_t shift, uint32_t mask, const float *table, uint64_t n,
                                float *out);
#endif

#endif /* HURRAY_DEQUANT_GRAPH_INTERNAL_H */
