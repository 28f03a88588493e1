/*
 * dequant_graph_avx2.c -- the AVX2 twins of the graph scheme's kernels
 * (dequant_graph.h): the step arithmetic in float32, float16 and bfloat16,
 * the roundings to the 16-bit types, and the code readers of the common
 * packed layouts. Each gives its scalar original's bits (dequant_graph_kernels.c,
 * dequant_graph_read.c): the same operations in the same order, lane by
 * lane, with no fused multiply-add (the target is avx2 and f16c alone).
 * A group of eight with a NaN in a float16 rounding is done by the scalar
 * code, whose NaN bits (numpy's rule) F16C does not give for every NaN.
 */
#include "dequant_graph.h"

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

/* Eight lanes of one form; *nan set when a float16 rounding met a NaN (the
 * caller then does the lanes with the scalar code). */
HURRAY__AVX2_F16C static inline __m256 form8(uint32_t form, uint32_t t, __m256 x, __m256 s,
                                             __m256 o, int *nan)
{
#define ROUND8(v)                          \
    (t == HURRAY__G_F32    ? (v)           \
     : t == HURRAY__G_BF16 ? round_bf16(v) \
                           : (*nan |= any_nan(v), round_f16(v)))
    __m256 m;
    switch (form) {
    case HURRAY_FORM_MUL: return ROUND8(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s)));
    case HURRAY_FORM_DIV: return ROUND8(_mm256_div_ps(x, s));
    case HURRAY_FORM_SUB_MUL:
        m = ROUND8(_mm256_sub_ps(x, o));
        return ROUND8(hurray__first_nan_avx2(m, _mm256_mul_ps(m, s)));
    case HURRAY_FORM_MUL_ADD:
        m = ROUND8(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s)));
        return ROUND8(hurray__first_nan_avx2(m, _mm256_add_ps(m, o)));
    default: /* HURRAY_FORM_MUL_SUB */
        m = ROUND8(hurray__first_nan_avx2(x, _mm256_mul_ps(x, s)));
        return ROUND8(_mm256_sub_ps(m, o));
    }
#undef ROUND8
}

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

HURRAY__AVX2_F16C void hurray__graph_apply_avx2(uint32_t form, uint32_t t, float *xy, uint64_t n,
                                                const uint32_t *start, uint64_t segments,
                                                const float *s, const float *o)
{
    const __m256 zero = _mm256_setzero_ps();
    if (segments == n) {
        /* One cell per element: the parameters are arrays. */
        uint64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            int nan = 0;
            __m256 ov = o != NULL ? _mm256_loadu_ps(o + i) : zero;
            __m256 y = form8(form, t, _mm256_loadu_ps(xy + i), _mm256_loadu_ps(s + i), ov, &nan);
            if (nan) {
                for (uint64_t j = i; j < i + 8; j++) {
                    xy[j] = form1(form, t, xy[j], s[j], o != NULL ? o[j] : 0.0f);
                }
            } else {
                _mm256_storeu_ps(xy + i, y);
            }
        }
        for (; i < n; i++) {
            xy[i] = form1(form, t, xy[i], s[i], o != NULL ? o[i] : 0.0f);
        }
        return;
    }
    for (uint64_t k = 0; k < segments; k++) {
        float sk = s[k], ok = o != NULL ? o[k] : 0.0f;
        __m256 sv = _mm256_set1_ps(sk), ov = _mm256_set1_ps(ok);
        uint64_t i = start[k], end = start[k + 1];
        for (; i + 8 <= end; i += 8) {
            int nan = 0;
            __m256 y = form8(form, t, _mm256_loadu_ps(xy + i), sv, ov, &nan);
            if (nan) {
                for (uint64_t j = i; j < i + 8; j++) {
                    xy[j] = form1(form, t, xy[j], sk, ok);
                }
            } else {
                _mm256_storeu_ps(xy + i, y);
            }
        }
        for (; i < end; i++) {
            xy[i] = form1(form, t, xy[i], sk, ok);
        }
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

HURRAY__AVX2 void hurray__graph_nibbles_high_first_avx2(const uint8_t *bytes, const float *table,
                                                        uint64_t pairs, float *out)
{
    __m256 low = _mm256_loadu_ps(table), high = _mm256_loadu_ps(table + 8);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    uint64_t k = 0;
    for (; k + 8 <= pairs; k += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(bytes + k));
        __m128i lo = _mm_and_si128(b, nibble);
        __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), nibble);
        __m128i codes = _mm_unpacklo_epi8(hi, lo); /* element order: high, low, high, ... */
        _mm256_storeu_ps(out + 2 * k, lookup16(low, high, _mm256_cvtepu8_epi32(codes)));
        _mm256_storeu_ps(out + 2 * k + 8,
                         lookup16(low, high, _mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8))));
    }
    for (; k < pairs; k++) {
        out[2 * k] = table[bytes[k] >> 4];
        out[2 * k + 1] = table[bytes[k] & 15];
    }
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

#endif
