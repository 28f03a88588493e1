/*
 * dequant_shared.h -- internal: the reference dequantizer's parts (ADR-055).
 *
 * hurray_dequantize and hurray_dequantize_rows (dequant.c) check the
 * descriptor against its buffers, then hand a job to the scheme the
 * descriptor states. A scheme is one file with one HurrayDequantScheme:
 *
 *   refuse   refuses what the descriptor check allows but the scheme cannot
 *            dequantize (a complex values part), from the descriptor alone;
 *   prepare  fills the job's scheme fields;
 *   run      writes the float32 values of the logical elements [first,
 *            first + count) in row-major order, count at most
 *            HURRAY__DEQUANT_TILE, reading nothing outside the reach the
 *            descriptor check proved.
 *
 * dequant.c owns the rest: the row range, the output buffer, and the
 * conversion of each tile of float32 values into the output type while the
 * tile is still in the first-level cache. A new scheme is a new file and one
 * entry in hurray__dequant_scheme (dequant.c).
 *
 * Every kernel evaluates its formula in a stated order, with no contraction
 * into fused multiply-adds (the library is built with -ffp-contract=off),
 * so that its float32 bits are the format reference's bits. The AVX2
 * kernels evaluate the same operations in the same order, lane by lane.
 *
 * Not part of the ABI.
 */
#ifndef HURRAY_DEQUANT_INTERNAL_H
#define HURRAY_DEQUANT_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "descriptor.h"
#include "hurray.h"

/* Elements per call of a scheme's run: whole blocks of every GGML type (at
 * most 256 elements), and 16 KiB of float32, which stays in the first-level
 * cache until dequant.c has converted it. */
#define HURRAY__DEQUANT_TILE 4096u

/* The x86-64 AVX2 kernels: compiled with a target attribute, so the rest of
 * the library keeps the baseline instruction set; chosen at run time. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HURRAY__DEQUANT_AVX2 1
#define HURRAY__AVX2 __attribute__((target("avx2")))
#define HURRAY__AVX2_F16C __attribute__((target("avx2,f16c")))
#else
#define HURRAY__DEQUANT_AVX2 0
#endif

/* How stored elements of the values part are read (dequant_values.c). */
typedef enum HurrayReadKind {
    HURRAY__READ_CODE8,  /* one byte per element, looked up in the code table */
    HURRAY__READ_PADDED, /* one byte per element, its low bits looked up */
    HURRAY__READ_LSB,    /* 1, 2 or 4 bits per element, LSB first, looked up */
    HURRAY__READ_SPLIT,  /* 4 bits, GGML split halves, looked up */
    HURRAY__READ_I16,
    HURRAY__READ_I32,
    HURRAY__READ_I64,
    HURRAY__READ_U16,
    HURRAY__READ_U32,
    HURRAY__READ_U64,
    HURRAY__READ_F16,
    HURRAY__READ_BF16,
    HURRAY__READ_F32,
    HURRAY__READ_F64
} HurrayReadKind;

/* A reader of one part's elements: its address, how its elements are
 * stored, and for types of at most 8 bits the value of every code. */
typedef struct HurrayReader {
    const uint8_t *base; /* the part's byte offset in its buffer */
    const float *table;  /* code -> float32 value (256 entries), or NULL */
    uint8_t kind;        /* HurrayReadKind */
    uint8_t swap;        /* elements wider than a byte not in the host's byte order */
    uint8_t width;       /* bits per element (LSB) */
    uint8_t mask;        /* code mask (PADDED, LSB, SPLIT) */
} HurrayReader;

/* One run of elements along the last axis of the logical shape. */
typedef struct HurrayRun {
    int64_t offset; /* the values part: element offset of the run's first element */
    int64_t stride; /* the values part: element step along the run */
    uint64_t count; /* elements in the run */
    uint64_t inner; /* index of the first element along the last axis */
    uint64_t param; /* parameter index of the run's coordinates but the last */
} HurrayRun;

typedef struct HurrayDequantJob HurrayDequantJob;

/* A GGML block decoder: one block's bytes to its float32 values. */
typedef void (*HurrayGgmlBlockFn)(const uint8_t *block, float *out);
/* An AVX2 decoder of `blocks` consecutive blocks. */
typedef void (*HurrayGgmlRowFn)(const uint8_t *blocks, uint64_t count, float *out);
/* One run of a strided scheme (dequant_walk.c calls it). */
typedef void (*HurrayRunFn)(const HurrayDequantJob *job, const HurrayRun *run, float *out);

struct HurrayDequantJob {
    const HurrayDescriptor *desc;
    const HurrayBufferList *buffers; /* checked against desc */
    /* A prepare that keeps memory of its own (the graph scheme: its plan)
     * sets both; dequant.c calls finish once after the last run. */
    void *scheme_state;
    void (*finish)(HurrayDequantJob *job);
    /* per role - 1: the address of the part's byte offset, NULL if absent */
    const uint8_t *part[HURRAY_MAX_PARTS];
    int simd; /* the AVX2 kernels may be used */

    /* Set by the scheme's prepare. */
    HurrayReader values;
    HurrayReader scale;
    HurrayReader zero;
    HurrayRunFn run_fn;
    /* Parameters (affine, microscaling): the parameter index of an element
     * is param (of its run) + (inner / param_div) * param_step along the
     * last axis; param_div 0 means the parameter is the same along it. */
    uint64_t param_div;
    uint64_t param_step;
    /* The dimensions the walk steps through (hurray__dequant_param_layout):
     * the shape's, without those of one element, and with neighbours merged
     * wherever the values and the parameters step through them as through
     * one dimension. Per walk dimension: its length, the values' stride,
     * and the parameter index's stride and divisor (0 and 1 when the
     * parameter does not follow it). */
    uint32_t walk_rank;
    uint64_t walk_shape[HURRAY_MAX_RANK];
    int64_t walk_strides[HURRAY_MAX_RANK];
    uint64_t param_strides[HURRAY_MAX_RANK];
    uint64_t param_divs[HURRAY_MAX_RANK];
    /* Microscaling: the global scale (1 when there is none, multiplied or not). */
    float global_scale;
    int has_global;
    uint64_t swizzle_cols; /* SWIZZLED_128X4: scale columns, 0 for row-major */
    /* GGML */
    HurrayGgmlBlockFn block_fn;
    HurrayGgmlRowFn row_fn;
    uint64_t block_elements;
    uint64_t block_bytes;
};

typedef struct HurrayDequantScheme {
    /* What the scheme refuses that the descriptor check allows, judged
     * from the descriptor alone, for every call, even one that writes no
     * element (NULL: nothing). */
    HurrayStatus (*refuse)(const HurrayDescriptor *desc);
    HurrayStatus (*prepare)(HurrayDequantJob *job);
    void (*run)(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out);
} HurrayDequantScheme;

extern const HurrayDequantScheme hurray__dequant_plain;
extern const HurrayDequantScheme hurray__dequant_affine;
extern const HurrayDequantScheme hurray__dequant_mx;
extern const HurrayDequantScheme hurray__dequant_ggml;
extern const HurrayDequantScheme hurray__dequant_graph;

/* The check of a version-2 descriptor against its buffers, recording
 * nothing in it (dequant_graph.c). */
HurrayStatus hurray__dequant_graph_check(const HurrayDescriptor *desc,
                                         const HurrayBufferList *list);
/* The scalar decoder of one block of a GGML type, or NULL (dequant_ggml.c). */
HurrayGgmlBlockFn hurray__ggml_block_decoder(uint32_t ggml_type);

/* ---- shared by the schemes (dequant_values.c, dequant_walk.c) ---------- */

/* The reader of a part of dtype `dtype`, stored with `packing` (values
 * part) or none (parameters), at `base`. Complex types have no reader:
 * the caller refuses them first. */
void hurray__reader_init(HurrayReader *r, const uint8_t *base, uint32_t dtype, uint32_t packing,
                         uint32_t byte_order);

/* n elements from element offset `offset`, stepping `stride`, as float32
 * (each value rounded once, to nearest even, as a C cast does) or as
 * float64 (exactly, except 64-bit integers beyond 2^53: rounded once). */
void hurray__read_f32(const HurrayReader *r, int64_t offset, int64_t stride, uint64_t n,
                      float *out);
void hurray__read_f64(const HurrayReader *r, int64_t offset, int64_t stride, uint64_t n,
                      double *out);

/* The float32 value of every code of a dtype of at most 8 bits (256
 * entries, indexed by the stored byte: for a sub-byte type, entry i is the
 * value of code i mod 2^bits), or NULL for a wider type. Built once. */
const float *hurray__code_table(uint32_t dtype);

/* IEEE half and bfloat16 bits to float32 bits, exactly: NaN payloads are
 * kept, signalling ones too (as numpy and ml_dtypes convert). */
static inline float hurray__f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exponent = (h >> 10) & 0x1Fu;
    uint32_t mantissa = h & 0x3FFu;
    uint32_t bits;
    float f;
    if (exponent == 0x1F) {
        bits = sign | 0x7F800000u | (mantissa << 13);
    } else if (exponent != 0) {
        bits = sign | ((exponent + 112u) << 23) | (mantissa << 13);
    } else {
        /* zero or subnormal: mantissa * 2^-24, a product that is exact */
        f = (float)mantissa * 0x1p-24f;
        memcpy(&bits, &f, sizeof bits);
        bits |= sign;
    }
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline float hurray__bf16_to_f32(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* float32 to float16 bits, rounded to nearest even; a NaN keeps its sign
 * and the top ten bits of its payload, and stays a NaN (numpy's rule). */
static inline uint16_t hurray__f32_to_f16(float value)
{
    uint32_t f;
    memcpy(&f, &value, sizeof f);
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    uint32_t exponent = f & 0x7F800000u, mantissa = f & 0x007FFFFFu;
    if (exponent == 0x7F800000u) {
        if (mantissa == 0) {
            return sign | 0x7C00u;
        }
        uint16_t nan = (uint16_t)(0x7C00u | (mantissa >> 13));
        return sign | (nan == 0x7C00u ? 0x7C01u : nan);
    }
    if (exponent >= 0x47800000u) { /* 2^16 and up: beyond the largest half */
        return sign | 0x7C00u;
    }
    if (exponent <= 0x38000000u) { /* below 2^-14: a subnormal half or zero */
        if (exponent < 0x33000000u) {
            return sign;
        }
        uint32_t e = exponent >> 23;
        uint32_t significand = 0x00800000u | mantissa;
        uint32_t shift = 126 - e; /* 14 to 24 */
        uint32_t half = significand >> shift;
        uint32_t rest = significand & ((1u << shift) - 1);
        uint32_t midpoint = 1u << (shift - 1);
        if (rest > midpoint || (rest == midpoint && (half & 1u))) {
            half++;
        }
        return sign | (uint16_t)half;
    }
    uint32_t half = ((exponent - 0x38000000u) >> 13) | (mantissa >> 13);
    uint32_t rest = mantissa & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) {
        half++; /* may carry into the exponent, up to infinity: correct */
    }
    return sign | (uint16_t)half;
}

/* float32 to bfloat16 bits, rounded to nearest even; a NaN becomes the
 * quiet NaN of its sign (ml_dtypes' rule). */
static inline uint16_t hurray__f32_to_bf16(float value)
{
    uint32_t f;
    memcpy(&f, &value, sizeof f);
    if ((f & 0x7FFFFFFFu) > 0x7F800000u) {
        return (uint16_t)((f >> 16) & 0x8000u) | 0x7FC0u;
    }
    return (uint16_t)((f + 0x7FFFu + ((f >> 16) & 1u)) >> 16);
}

/* r = a op b, for a commutative op whose operands may both be NaN: the
 * result x86 gives for the operands in this order, the first one's NaN
 * (quieted). numpy evaluates its formulas so; compilers may swap the
 * operands of a commutative op (clang does), which picks the other NaN.
 * Bit operations, which no compiler reorders. */
static inline float hurray__first_nan(float a, float r)
{
    uint32_t ab, rb;
    memcpy(&ab, &a, sizeof ab);
    memcpy(&rb, &r, sizeof rb);
    uint32_t mask = 0u - (uint32_t)((ab & 0x7FFFFFFFu) > 0x7F800000u);
    rb = (rb & ~mask) | ((ab | 0x00400000u) & mask);
    memcpy(&r, &rb, sizeof r);
    return r;
}

static inline double hurray__first_nan_f64(double a, double r)
{
    uint64_t ab, rb;
    memcpy(&ab, &a, sizeof ab);
    memcpy(&rb, &r, sizeof rb);
    uint64_t mask = 0u - (uint64_t)((ab & 0x7FFFFFFFFFFFFFFFu) > 0x7FF0000000000000u);
    rb = (rb & ~mask) | ((ab | 0x0008000000000000u) & mask);
    memcpy(&r, &rb, sizeof r);
    return r;
}

static inline uint16_t hurray__le16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t hurray__le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The runs of logical elements [first, first + count) of a strided tensor,
 * handed to job->run_fn in order, each at most 256 elements long; every
 * run's parameter index is worked out when job->param_strides says so. */
void hurray__dequant_walk(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out);

/* The parameters of a run, as segments: elements [0, first) take
 * parameter `param`, and every `length` elements after them the next one,
 * param_step further on in the parameter part; `count` segments in all (the
 * last may be short). A parameter that does not change along the run is one
 * segment of the whole run. */
typedef struct HurraySegments {
    uint64_t param;
    uint64_t first;
    uint64_t length;
    uint64_t count;
} HurraySegments;

HurraySegments hurray__run_segments(const HurrayDequantJob *job, const HurrayRun *run);

/* The walk's dimensions and the parameter rules of the descriptor, as the
 * schemes use them: param_strides and param_divs for the granularity
 * (row-major parameters, one per tensor, per index of the axis, or per block
 * along the axis), param_div and param_step for the last walk dimension. */
void hurray__dequant_param_layout(HurrayDequantJob *job);

/* The element index, in a SWIZZLED_128X4 part, of scale (row, col) of a
 * matrix with `cols` columns (docs/impl/descriptor-encoding.md). */
static inline uint64_t hurray__swizzled_index(uint64_t row, uint64_t col, uint64_t cols)
{
    uint64_t padded_cols = (cols + 3) / 4 * 4;
    uint64_t tile = (row / 128) * (padded_cols / 4) + col / 4;
    return tile * 512 + (row % 32) * 16 + (row / 32 % 4) * 4 + col % 4;
}

/* 0: the reader's codes cannot be read by the fused AVX2 kernels; 1:
 * bytes; 2: LSB-first nibbles. For a contiguous run (stride 1). */
static inline int hurray__fused_codes(const HurrayReader *r)
{
    if (r->table == NULL) {
        return 0;
    }
    if (r->kind == HURRAY__READ_CODE8) {
        return 1;
    }
    return r->kind == HURRAY__READ_LSB && r->width == 4 ? 2 : 0;
}

/* ---- AVX2 kernels (dequant_*_avx2.c) ------------------------------------ */

#if HURRAY__DEQUANT_AVX2
#include <immintrin.h>

/* hurray__first_nan, eight lanes. */
HURRAY__AVX2 static inline __m256 hurray__first_nan_avx2(__m256 a, __m256 r)
{
    __m256i bits = _mm256_castps_si256(a);
    __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
    __m256i quiet = _mm256_or_si256(bits, _mm256_set1_epi32(0x00400000));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(_mm256_castps_si256(r), quiet, nan));
}

/* The AVX2 row decoder of a GGML type, or NULL when it has none. */
HurrayGgmlRowFn hurray__ggml_row_avx2(uint32_t ggml_type);
/* float32 to float16 or bfloat16, n values, bit for bit as the scalar code. */
void hurray__store_f16_avx2(const float *in, uint64_t n, uint16_t *out);
void hurray__store_bf16_avx2(const float *in, uint64_t n, uint16_t *out);
/* Contiguous runs of byte codes through a table (the common affine and
 * microscaling values), 8 at a time. */
void hurray__read_code8_avx2(const uint8_t *codes, const float *table, uint64_t n, float *out);
/* Codes of 4 bits, two per byte: the first in the low nibble, or with
 * high_first in the high one. */
void hurray__read_nibbles_avx2(const uint8_t *bytes, const float *table, uint64_t pairs,
                               int high_first, float *out);
/* Contiguous little-endian float16 or bfloat16, widened exactly (a
 * signalling NaN stays signalling, as hurray__f16_to_f32 keeps it). */
void hurray__read_f16_avx2(const uint8_t *in, uint64_t n, float *out);
void hurray__read_bf16_avx2(const uint8_t *in, uint64_t n, float *out);
/* The arithmetic of one run, 8 lanes at a time (dequant_affine.c and
 * dequant_mx.c hold the scalar originals): elements [0, first) take
 * parameter 0, and every `length` elements after them the next. */
void hurray__affine_segments_avx2(const float *q, const float *s, const float *z, uint64_t first,
                                  uint64_t length, uint64_t n, float *out);
void hurray__scaled_segments_avx2(const float *v, const float *s, const float *g, uint64_t first,
                                  uint64_t length, uint64_t n, float *out);
/* The same with the values read on the way, for a contiguous run of byte
 * codes (nibbles 0) or 4-bit LSB-first codes (nibbles 1) from element
 * `offset` of base, through their code table. */
void hurray__affine_codes_avx2(const uint8_t *base, int64_t offset, int nibbles, const float *table,
                               const float *s, const float *z, uint64_t first, uint64_t length,
                               uint64_t n, float *out);
void hurray__scaled_codes_avx2(const uint8_t *base, int64_t offset, int nibbles, const float *table,
                               const float *s, const float *g, uint64_t first, uint64_t length,
                               uint64_t n, float *out);
#endif

#if HURRAY__DEQUANT_AVX2
/* n bytes to dst with non-temporal stores where dst is 32-byte aligned
 * (the rest with ordinary ones): output too large for the caches skips
 * their read-for-ownership. hurray__stream_fence orders them before the
 * call returns. */
void hurray__stream_bytes_avx2(const void *src, uint64_t n, void *dst);
void hurray__stream_fence(void);
#endif

/* Outputs at least this large are written around the caches (AVX2 path). */
#define HURRAY__DEQUANT_STREAM_MIN ((uint64_t)8 << 20)

/* 1 when the AVX2 kernels are in use for this process: the CPU has AVX2
 * and F16C and HURRAY_DEQUANT_PATH is not "scalar" (read at the first
 * call), unless a test forced a path. */
int hurray__dequant_simd(void);
/* Tests and the fuzzer: 0 forces the scalar path, 1 the best one, -1 goes
 * back to the environment's choice. */
void hurray__dequant_force_path(int path);

#endif /* HURRAY_DEQUANT_INTERNAL_H */
