/*
 * dequant_graph_avx2.c -- the AVX2 twins of the graph scheme's kernels
 * (dequant_graph_shared.h): the step arithmetic in float32, float16 and bfloat16,
 * the roundings to the 16-bit types, and the code readers of the common
 * packed layouts. Each gives its scalar original's bits (dequant_graph_kernels.c,
 * dequant_graph_read.c): the same operations in the same order, lane by
 * lane, with no fused multiply-add (the target is avx2 and f16c alone).
 * A group of eight with a NaN in a float16 rounding is done by the scalar
 * code, whose NaN bits (numpy's rule) F16C does not give for every NaN.
 */
#include "dequant_graph_shared.h"

#if HURRAY__DEQUANT_AVX2

#include <immintrin.h>

/* ---- roundings --------------------------------------------------------------- */

HURRAY__AVX2 static inline __m256i nan_lanes(__m256 v)
{
    __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(v), _mm256_set1_epi32(0x7FFFFFFF));
    return _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
}

HURRAY__AVX2 static inline int any_nan(__m256 v)
{
    __m256i nan = nan_lanes(v);
    return !_mm256_testz_si256(nan, nan);
}

/* float32 to float16 and back, for lanes without a NaN. */
HURRAY__AVX2_F16C static inline __m256 round_f16(__m256 v)
{
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

/* float32 to bfloat16 and back, every lane: (f + 0x7FFF + bit 16) with the
 * low half cleared, a NaN to the quiet NaN of its sign. */
HURRAY__AVX2 static inline __m256 round_bf16(__m256 v)
{
    __m256i f = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7FFF)), lsb);
    rounded = _mm256_and_si256(rounded, _mm256_set1_epi32((int)0xFFFF0000u));
    __m256i quiet = _mm256_or_si256(_mm256_and_si256(f, _mm256_set1_epi32((int)0x80000000u)),
                                    _mm256_set1_epi32(0x7FC00000));
    return _mm256_castsi256_ps(_mm256_blendv_epi8(rounded, quiet, nan_lanes(v)));
}

HURRAY__AVX2_F16C void hurray__graph_round_avx2(uint32_t t, float *v, uint64_t n)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(v + i);
        if (t == HURRAY__G_BF16) {
            _mm256_storeu_ps(v + i, round_bf16(x));
        } else if (!any_nan(x)) {
            _mm256_storeu_ps(v + i, round_f16(x));
        } else {
            for (uint64_t j = i; j < i + 8; j++) {
                v[j] = hurray__g_round_f16(v[j]);
            }
        }
    }
    for (; i < n; i++) {
        v[i] = hurray__g_round_f32_to(t, v[i]);
    }
}

/* ---- the step's arithmetic ------------------------------------------------------ */

/* The scalar form of one element (dequant_graph_kernels.c's order). */
static inline float form1(uint32_t form, uint32_t t, float x, float s, float o)
{
    float m;
    switch (form) {
    case HURRAY_FORM_MUL: return hurray__g_round_f32_to(t, hurray__first_nan(x, x * s));
    case HURRAY_FORM_DIV: return hurray__g_round_f32_to(t, x / s);
    case HURRAY_FORM_SUB_MUL:
        m = hurray__g_round_f32_to(t, x - o);
        return hurray__g_round_f32_to(t, hurray__first_nan(m, m * s));
    case HURRAY_FORM_MUL_ADD:
        m = hurray__g_round_f32_to(t, hurray__first_nan(x, x * s));
        return hurray__g_round_f32_to(t, hurray__first_nan(m, m + o));
    default:
        m = hurray__g_round_f32_to(t, hurray__first_nan(x, x * s));
        return hurray__g_round_f32_to(t, m - o);
    }
}

/* The roundings of the three float-held types, eight lanes. A float16
 * chain with a NaN anywhere ends in a NaN (every operation and rounding
 * keeps one), so its result alone is checked: those lanes are redone by
 * form1, whose NaN bits F16C does not always give. */
#define R_F32(v) (v)
#define R_BF16(v) round_bf16(v)
#define R_F16(v) round_f16(v)
#define NO_CHECK(y) 0
#define F16_CHECK(y) any_nan(y)

/* The forms, eight lanes (x, s, o the lanes; R the rounding). */
#define F_MUL(R, x, s, o) ((void)(o), R(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s))))
#define F_DIV(R, x, s, o) ((void)(o), R(_mm256_div_ps(x, s)))
#define F_SUB_MUL(R, x, s, o) \
    (m_ = R(_mm256_sub_ps(x, o)), R(hurray__first_nan_avx2(m_, _mm256_mul_ps(m_, s))))
#define F_MUL_ADD(R, x, s, o)                                \
    (m_ = R(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s))), \
     R(hurray__first_nan_avx2(m_, _mm256_add_ps(m_, o))))
#define F_MUL_SUB(R, x, s, o) \
    (m_ = R(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s))), R(_mm256_sub_ps(m_, o)))

/* Every segment of one form in one type: broadcast parameters, or (one
 * cell per element) parameter arrays. Eight lanes a time, the tails and
 * the float16 lanes with a NaN by form1. */
#define APPLY_LOOPS(FORM, R, CHECK, form, t)                                          \
    do {                                                                              \
        __m256 m_;                                                                    \
        (void)m_;                                                                     \
        if (segments == n) {                                                          \
            uint64_t i = 0;                                                           \
            for (; i + 8 <= n; i += 8) {                                              \
                __m256 x = _mm256_loadu_ps(xy + i), sv = _mm256_loadu_ps(s + i);      \
                __m256 ov = o != NULL ? _mm256_loadu_ps(o + i) : zero;                \
                __m256 y = FORM(R, x, sv, ov);                                        \
                int nan_ = CHECK(y);                                                  \
                if (nan_) {                                                           \
                    for (uint64_t j = i; j < i + 8; j++) {                            \
                        xy[j] = form1(form, t, xy[j], s[j], o != NULL ? o[j] : 0.0f); \
                    }                                                                 \
                } else {                                                              \
                    _mm256_storeu_ps(xy + i, y);                                      \
                }                                                                     \
            }                                                                         \
            for (; i < n; i++) {                                                      \
                xy[i] = form1(form, t, xy[i], s[i], o != NULL ? o[i] : 0.0f);         \
            }                                                                         \
            break;                                                                    \
        }                                                                             \
        for (uint64_t k = 0; k < segments; k++) {                                     \
            float sk = s[k], ok = o != NULL ? o[k] : 0.0f;                            \
            __m256 sv = _mm256_set1_ps(sk), ov = _mm256_set1_ps(ok);                  \
            uint64_t i = start[k], end = start[k + 1];                                \
            for (; i + 8 <= end; i += 8) {                                            \
                __m256 x = _mm256_loadu_ps(xy + i);                                   \
                __m256 y = FORM(R, x, sv, ov);                                        \
                int nan_ = CHECK(y);                                                  \
                if (nan_) {                                                           \
                    for (uint64_t j = i; j < i + 8; j++) {                            \
                        xy[j] = form1(form, t, xy[j], sk, ok);                        \
                    }                                                                 \
                } else {                                                              \
                    _mm256_storeu_ps(xy + i, y);                                      \
                }                                                                     \
            }                                                                         \
            for (; i < end; i++) {                                                    \
                xy[i] = form1(form, t, xy[i], sk, ok);                                \
            }                                                                         \
        }                                                                             \
    } while (0)

#define APPLY_FORMS(R, CHECK, form, t)                                              \
    do {                                                                            \
        switch (form) {                                                             \
        case HURRAY_FORM_MUL: APPLY_LOOPS(F_MUL, R, CHECK, form, t); break;         \
        case HURRAY_FORM_DIV: APPLY_LOOPS(F_DIV, R, CHECK, form, t); break;         \
        case HURRAY_FORM_SUB_MUL: APPLY_LOOPS(F_SUB_MUL, R, CHECK, form, t); break; \
        case HURRAY_FORM_MUL_ADD: APPLY_LOOPS(F_MUL_ADD, R, CHECK, form, t); break; \
        default: APPLY_LOOPS(F_MUL_SUB, R, CHECK, form, t); break;                  \
        }                                                                           \
    } while (0)

HURRAY__AVX2_F16C void hurray__graph_apply_avx2(uint32_t form, uint32_t t, float *xy, uint64_t n,
                                                const uint32_t *start, uint64_t segments,
                                                const float *s, const float *o)
{
    const __m256 zero = _mm256_setzero_ps();
    switch (t) {
    case HURRAY__G_F32: APPLY_FORMS(R_F32, NO_CHECK, form, HURRAY__G_F32); break;
    case HURRAY__G_BF16: APPLY_FORMS(R_BF16, NO_CHECK, form, HURRAY__G_BF16); break;
    default: APPLY_FORMS(R_F16, F16_CHECK, form, HURRAY__G_F16); break;
    }
}

/* ---- code readers ------------------------------------------------------------ */

/* The first 16 entries of a table, looked up by 8 codes of 4 bits. */
HURRAY__AVX2 static inline __m256 lookup16(__m256 low, __m256 high, __m256i index)
{
    __m256 a = _mm256_permutevar8x32_ps(low, index);
    __m256 b = _mm256_permutevar8x32_ps(high, index);
    __m256 pick = _mm256_castsi256_ps(_mm256_slli_epi32(index, 28)); /* bit 3 to the sign */
    return _mm256_blendv_ps(a, b, pick);
}

HURRAY__AVX2 void hurray__graph_words4_avx2(const uint8_t *first, int64_t stride,
                                            const uint8_t *order, const float *table, uint64_t n,
                                            float *out)
{
    __m256 low = _mm256_loadu_ps(table), high = _mm256_loadu_ps(table + 8);
    __m256i shifts = _mm256_setr_epi32(4 * order[0], 4 * order[1], 4 * order[2], 4 * order[3],
                                       4 * order[4], 4 * order[5], 4 * order[6], 4 * order[7]);
    const __m256i nibble = _mm256_set1_epi32(15);
    for (uint64_t k = 0; k < n; k++) {
        const uint8_t *c = first + (int64_t)k * stride;
        uint32_t word;
        memcpy(&word, c, sizeof word);
        __m256i codes = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32((int)word), shifts),
                                         nibble);
        _mm256_storeu_ps(out + 8 * k, lookup16(low, high, codes));
    }
}

HURRAY__AVX2 void hurray__graph_shifted_avx2(const uint8_t *first, int64_t stride,
                                             uint32_t container_bytes, uint32_t shift,
                                             uint32_t mask, const float *table, uint64_t n,
                                             float *out)
{
    const __m128i count = _mm_cvtsi32_si128((int)shift);
    const __m256i bits = _mm256_set1_epi32((int)mask);
    /* A gather of 32-bit containers by byte offsets needs 7 * stride in
     * 32 bits; bytes are loaded one by one (a 4-byte gather would read
     * past the last one). */
    int gather = container_bytes == 4 && stride > -(INT32_MAX / 8) && stride < INT32_MAX / 8;
    __m256i offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(gather ? (int)stride : 0));
    for (uint64_t k = 0; k + 8 <= n; k += 8) {
        const uint8_t *c = first + (int64_t)k * stride;
        __m256i words;
        if (container_bytes == 1 && stride == 1) {
            words = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)c));
        } else if (container_bytes == 1) {
            words = _mm256_setr_epi32(c[0], c[stride], c[2 * stride], c[3 * stride], c[4 * stride],
                                      c[5 * stride], c[6 * stride], c[7 * stride]);
        } else if (gather) {
            words = _mm256_i32gather_epi32((const int *)(const void *)c, offsets, 1);
        } else {
            uint32_t w[8];
            for (int j = 0; j < 8; j++) {
                memcpy(&w[j], c + j * stride, sizeof w[j]);
            }
            words = _mm256_loadu_si256((const __m256i *)w);
        }
        __m256i codes = _mm256_and_si256(_mm256_srl_epi32(words, count), bits);
        _mm256_storeu_ps(out + k, _mm256_i32gather_ps(table, codes, 4));
    }
}

HURRAY__AVX2 void hurray__graph_fill_rows_avx2(const uint8_t *first, int64_t stride, uint32_t b,
                                               uint32_t per, const uint8_t *order,
                                               const float *table, uint64_t n, uint64_t len,
                                               float *values)
{
    __m256 low = _mm256_loadu_ps(table), high = _mm256_loadu_ps(table + 8);
    const __m256i mask = _mm256_set1_epi32((int)((1u << b) - 1));
    int gather = stride > -(INT32_MAX / 8) && stride < INT32_MAX / 8;
    __m256i offsets = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                         _mm256_set1_epi32(gather ? (int)stride : 0));
    for (uint64_t u = 0; u + 8 <= n; u += 8) {
        const uint8_t *c = first + (int64_t)u * stride;
        __m256i words;
        if (gather) {
            words = _mm256_i32gather_epi32((const int *)(const void *)c, offsets, 1);
        } else {
            uint32_t w[8];
            for (int k = 0; k < 8; k++) {
                memcpy(&w[k], c + k * stride, sizeof w[k]);
            }
            words = _mm256_loadu_si256((const __m256i *)w);
        }
        for (uint32_t k = 0; k < per; k++) {
            __m128i count = _mm_cvtsi32_si128((int)(b * order[k]));
            __m256i codes = _mm256_and_si256(_mm256_srl_epi32(words, count), mask);
            _mm256_storeu_ps(values + k * len + u, lookup16(low, high, codes));
        }
    }
}

/* float8_e4m3fn and float8_e5m2 bytes to float32, arithmetically (the
 * table's values, which a gather would look up more slowly): e5m2 is the
 * top byte of a float16; e4m3fn's seven low bits, placed where a float16
 * keeps them, are its magnitude over 256 (normal and subnormal alike). A
 * NaN code becomes the quiet NaN of its sign, as the table has it. */
HURRAY__AVX2_F16C void hurray__graph_fp8_avx2(const uint8_t *bytes, int e5m2, uint64_t n,
                                              float *out)
{
    const __m256i sign_bit = _mm256_set1_epi32((int)0x80000000u);
    const __m256i quiet = _mm256_set1_epi32(0x7FC00000);
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i w = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(bytes + i)));
        __m256i sign = _mm256_and_si256(_mm256_slli_epi32(w, 24), sign_bit);
        __m256i mag = _mm256_and_si256(w, _mm256_set1_epi32(0x7F));
        __m256 f;
        __m256i nan;
        if (e5m2) {
            __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(mag),
                                         _mm256_extracti128_si256(mag, 1));
            f = _mm256_cvtph_ps(_mm_slli_epi16(h, 8));
            nan = _mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7C));
        } else {
            __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(mag),
                                         _mm256_extracti128_si256(mag, 1));
            f = _mm256_mul_ps(_mm256_cvtph_ps(_mm_slli_epi16(h, 7)), _mm256_set1_ps(256.0f));
            nan = _mm256_cmpeq_epi32(mag, _mm256_set1_epi32(0x7F));
        }
        __m256i bits = _mm256_or_si256(_mm256_castps_si256(f), sign);
        bits = _mm256_blendv_epi8(bits, _mm256_or_si256(quiet, sign), nan);
        _mm256_storeu_si256((__m256i *)(out + i), bits);
    }
    const float *table = hurray__code_table(e5m2 ? HURRAY_DTYPE_FLOAT8_E5M2
                                                 : HURRAY_DTYPE_FLOAT8_E4M3FN);
    for (; i < n; i++) {
        out[i] = table[bytes[i]];
    }
}

#endif
