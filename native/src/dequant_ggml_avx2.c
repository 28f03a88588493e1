/*
 * dequant_ggml_avx2.c -- AVX2 row decoders of the GGML block formats:
 * eight elements per instruction, the same operations as the scalar
 * decoders of dequant_ggml.c in the same order (a product and a difference
 * stay two roundings; the target has no FMA), so that the two paths give
 * the same bits, which the tests compare.
 *
 * Each decoder reads exactly its blocks' bytes: no load reaches past the
 * last block, since the last block may end the buffer.
 */
#include "dequant_ggml_shared.h"

#if HURRAY__DEQUANT_AVX2

#include <immintrin.h>

#include "ggml_grids.h"

#define AVX2 HURRAY__AVX2

/* IQ1's shift of the grid values, by its sign bit: a load, not a branch. */
static const float DELTA[2] = {0.125f, -0.125f};

/* Eight signed bytes (the low 8 of v) as floats. */
AVX2 static inline __m256 i8_to_ps(__m128i v)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

/* Sixteen signed bytes times d, as two groups of 8: y = d * q. */
AVX2 static inline void store16_scaled(__m256 d, __m128i q, float *y)
{
    _mm256_storeu_ps(y, _mm256_mul_ps(d, i8_to_ps(q)));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(d, i8_to_ps(_mm_srli_si128(q, 8))));
}

/* y = d * q - m for sixteen unsigned bytes. */
AVX2 static inline void store16_affine(__m256 d, __m256 m, __m128i q, float *y)
{
    __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q));
    __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8)));
    _mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, a), m));
    _mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(d, b), m));
}

/* y = d * q + m for sixteen unsigned bytes, the product's NaN first where
 * m is a NaN too (`m_nan`; elsewhere the sum alone has the right bits). */
AVX2 static inline void store16_plus(__m256 d, __m256 m, int m_nan, __m128i q, float *y)
{
    __m256 a = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)));
    __m256 b = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(q, 8))));
    __m256 ya = _mm256_add_ps(a, m), yb = _mm256_add_ps(b, m);
    _mm256_storeu_ps(y, m_nan ? hurray__first_nan_avx2(a, ya) : ya);
    _mm256_storeu_ps(y + 8, m_nan ? hurray__first_nan_avx2(b, yb) : yb);
}

AVX2 static inline __m128i load16(const uint8_t *p)
{
    return _mm_loadu_si128((const __m128i *)p);
}

AVX2 static inline __m128i low_nibbles(__m128i b)
{
    return _mm_and_si128(b, _mm_set1_epi8(0x0F));
}

AVX2 static inline __m128i high_nibbles(__m128i b)
{
    return _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
}

/* The fifth bits of 16 elements: bit (first + i) of qh, moved to bit 4 of
 * byte i. */
AVX2 static inline __m128i fifth_bits(uint32_t qh, int first)
{
    uint32_t bits = (qh >> first) & 0xFFFFu;
    /* Spread bit i of `bits` to byte i: broadcast the two bytes, pick the
     * byte that holds each bit, and test it against its mask. */
    const __m128i pick = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    const __m128i masks = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
    __m128i spread = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)bits), pick);
    __m128i set = _mm_cmpeq_epi8(_mm_and_si128(spread, masks), masks);
    return _mm_and_si128(set, _mm_set1_epi8(0x10));
}

/* ---- 32-element formats ------------------------------------------------- */

AVX2 static void q4_0(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i eight = _mm_set1_epi8(8);
    for (uint64_t i = 0; i < n; i++, b += 18, y += 32) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b));
        __m128i qs = load16(b + 2);
        store16_scaled(d, _mm_sub_epi8(low_nibbles(qs), eight), y);
        store16_scaled(d, _mm_sub_epi8(high_nibbles(qs), eight), y + 16);
    }
}

AVX2 static void q4_1(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 20, y += 32) {
        float mf = hurray__ggml_f16_at(b + 2);
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b)), m = _mm256_set1_ps(mf);
        __m128i qs = load16(b + 4);
        store16_plus(d, m, mf != mf, low_nibbles(qs), y);
        store16_plus(d, m, mf != mf, high_nibbles(qs), y + 16);
    }
}

AVX2 static void q5_0(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i sixteen = _mm_set1_epi8(16);
    for (uint64_t i = 0; i < n; i++, b += 22, y += 32) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b));
        uint32_t qh = hurray__le32(b + 2);
        __m128i qs = load16(b + 6);
        __m128i lo = _mm_or_si128(low_nibbles(qs), fifth_bits(qh, 0));
        __m128i hi = _mm_or_si128(high_nibbles(qs), fifth_bits(qh, 16));
        store16_scaled(d, _mm_sub_epi8(lo, sixteen), y);
        store16_scaled(d, _mm_sub_epi8(hi, sixteen), y + 16);
    }
}

AVX2 static void q5_1(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 24, y += 32) {
        float mf = hurray__ggml_f16_at(b + 2);
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b)), m = _mm256_set1_ps(mf);
        uint32_t qh = hurray__le32(b + 4);
        __m128i qs = load16(b + 8);
        store16_plus(d, m, mf != mf, _mm_or_si128(low_nibbles(qs), fifth_bits(qh, 0)), y);
        store16_plus(d, m, mf != mf, _mm_or_si128(high_nibbles(qs), fifth_bits(qh, 16)), y + 16);
    }
}

AVX2 static void q8_0(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 34, y += 32) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b));
        for (int k = 0; k < 2; k++) {
            __m128i q = load16(b + 2 + 16 * k);
            /* y = q * d: the scalar order, kept for a NaN's sake */
            _mm256_storeu_ps(y + 16 * k, _mm256_mul_ps(i8_to_ps(q), d));
            _mm256_storeu_ps(y + 16 * k + 8, _mm256_mul_ps(i8_to_ps(_mm_srli_si128(q, 8)), d));
        }
    }
}

/* Sixteen 4-bit codes through a 16-entry int8 table, then times d. */
AVX2 static inline void store16_table(__m256 d, __m128i table, __m128i codes, float *y)
{
    store16_scaled(d, _mm_shuffle_epi8(table, codes), y);
}

AVX2 static void iq4_nl(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)hurray__ggml_iq4nl_values);
    for (uint64_t i = 0; i < n; i++, b += 18, y += 32) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b));
        __m128i qs = load16(b + 2);
        store16_table(d, table, low_nibbles(qs), y);
        store16_table(d, table, high_nibbles(qs), y + 16);
    }
}

AVX2 static void mxfp4(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)hurray__ggml_fp4_values);
    for (uint64_t i = 0; i < n; i++, b += 17, y += 32) {
        __m256 d = _mm256_set1_ps(hurray__ggml_e8m0_half(b[0]));
        __m128i qs = load16(b + 1);
        store16_table(d, table, low_nibbles(qs), y);
        store16_table(d, table, high_nibbles(qs), y + 16);
    }
}

AVX2 static void nvfp4(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)hurray__ggml_fp4_values);
    for (uint64_t i = 0; i < n; i++, b += 36, y += 64) {
        for (int s = 0; s < 4; s += 2) {
            /* Sub-blocks s and s + 1: bytes 8s .. 8s + 15 of the codes. */
            __m128i qs = load16(b + 4 + 8 * s);
            __m128i lo = _mm_shuffle_epi8(table, low_nibbles(qs));
            __m128i hi = _mm_shuffle_epi8(table, high_nibbles(qs));
            __m256 d0 = _mm256_set1_ps(hurray__ggml_ue4m3_half(b[s])),
                   d1 = _mm256_set1_ps(hurray__ggml_ue4m3_half(b[s + 1]));
            float *out = y + 16 * s;
            _mm256_storeu_ps(out, _mm256_mul_ps(d0, i8_to_ps(lo)));
            _mm256_storeu_ps(out + 8, _mm256_mul_ps(d0, i8_to_ps(hi)));
            _mm256_storeu_ps(out + 16, _mm256_mul_ps(d1, i8_to_ps(_mm_srli_si128(lo, 8))));
            _mm256_storeu_ps(out + 24, _mm256_mul_ps(d1, i8_to_ps(_mm_srli_si128(hi, 8))));
        }
    }
}

/* Eight bits of `bits` (the low byte) as lane masks: lane j all ones when
 * bit j is set. */
AVX2 static inline __m256i bit_lanes(uint32_t bits)
{
    const __m256i masks = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    __m256i spread = _mm256_set1_epi32((int)bits);
    return _mm256_cmpeq_epi32(_mm256_and_si256(spread, masks), masks);
}

AVX2 static void q1_0(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 18, y += 128) {
        float d = hurray__ggml_f16_at(b);
        __m256 plus = _mm256_set1_ps(d), minus = _mm256_set1_ps(-d);
        for (int k = 0; k < 16; k++) {
            __m256 pick = _mm256_castsi256_ps(bit_lanes(b[2 + k]));
            _mm256_storeu_ps(y + 8 * k, _mm256_blendv_ps(minus, plus, pick));
        }
    }
}

/* ---- K-quants ------------------------------------------------------------ */

/* Bits 2j, 2j + 1 of sixteen bytes. */
AVX2 static inline __m128i crumbs(__m128i b, int j)
{
    return _mm_and_si128(_mm_srl_epi16(b, _mm_cvtsi32_si128(2 * j)), _mm_set1_epi8(3));
}

AVX2 static void q2_k(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 84, y += 256) {
        const uint8_t *scales = b, *qs = b + 16;
        float d = hurray__ggml_f16_at(b + 80), dmin = hurray__ggml_f16_at(b + 82);
        for (int k = 0; k < 16; k++) {
            __m256 dl = _mm256_set1_ps(d * (float)(scales[k] & 15));
            __m256 ml = _mm256_set1_ps(dmin * (float)(scales[k] >> 4));
            int h = k / 8, j = (k % 8) / 2, part = k % 2;
            store16_affine(dl, ml, crumbs(load16(qs + 32 * h + 16 * part), j), y + 16 * k);
        }
    }
}

AVX2 static void q3_k(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i four = _mm_set1_epi8(4);
    for (uint64_t i = 0; i < n; i++, b += 110, y += 256) {
        const uint8_t *hmask = b, *qs = b + 32, *packed = b + 96;
        float d = hurray__ggml_f16_at(b + 108);
        for (int k = 0; k < 16; k++) {
            __m256 dl = _mm256_set1_ps(d * (float)hurray__ggml_k3_scale(packed, k));
            int h = k / 8, j = (k % 8) / 2, part = k % 2;
            __m128i q2 = crumbs(load16(qs + 32 * h + 16 * part), j);
            __m128i bit = _mm_set1_epi8((char)(1u << (4 * h + j)));
            __m128i clear = _mm_cmpeq_epi8(_mm_and_si128(load16(hmask + 16 * part), bit),
                                           _mm_setzero_si128());
            store16_scaled(dl, _mm_sub_epi8(q2, _mm_and_si128(clear, four)), y + 16 * k);
        }
    }
}

AVX2 static void q4_k(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 144, y += 256) {
        float d = hurray__ggml_f16_at(b), dmin = hurray__ggml_f16_at(b + 2);
        const uint8_t *packed = b + 4, *qs = b + 16;
        for (int c = 0; c < 4; c++) {
            uint8_t sc, m;
            hurray__ggml_k4_scale_min(packed, 2 * c, &sc, &m);
            __m256 d1 = _mm256_set1_ps(d * (float)sc), m1 = _mm256_set1_ps(dmin * (float)m);
            hurray__ggml_k4_scale_min(packed, 2 * c + 1, &sc, &m);
            __m256 d2 = _mm256_set1_ps(d * (float)sc), m2 = _mm256_set1_ps(dmin * (float)m);
            for (int half = 0; half < 2; half++) {
                __m128i q = load16(qs + 32 * c + 16 * half);
                store16_affine(d1, m1, low_nibbles(q), y + 64 * c + 16 * half);
                store16_affine(d2, m2, high_nibbles(q), y + 64 * c + 32 + 16 * half);
            }
        }
    }
}

/* Bit `bit` of sixteen bytes, moved to bit 4. */
AVX2 static inline __m128i bit_to_16(__m128i b, int bit)
{
    __m128i shifted = _mm_srl_epi16(b, _mm_cvtsi32_si128(bit));
    return _mm_slli_epi16(_mm_and_si128(shifted, _mm_set1_epi8(1)), 4);
}

AVX2 static void q5_k(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 176, y += 256) {
        float d = hurray__ggml_f16_at(b), dmin = hurray__ggml_f16_at(b + 2);
        const uint8_t *packed = b + 4, *qh = b + 16, *qs = b + 48;
        for (int c = 0; c < 4; c++) {
            uint8_t sc, m;
            hurray__ggml_k4_scale_min(packed, 2 * c, &sc, &m);
            __m256 d1 = _mm256_set1_ps(d * (float)sc), m1 = _mm256_set1_ps(dmin * (float)m);
            hurray__ggml_k4_scale_min(packed, 2 * c + 1, &sc, &m);
            __m256 d2 = _mm256_set1_ps(d * (float)sc), m2 = _mm256_set1_ps(dmin * (float)m);
            for (int half = 0; half < 2; half++) {
                __m128i q = load16(qs + 32 * c + 16 * half);
                __m128i h = load16(qh + 16 * half);
                __m128i lo = _mm_or_si128(low_nibbles(q), bit_to_16(h, 2 * c));
                __m128i hi = _mm_or_si128(high_nibbles(q), bit_to_16(h, 2 * c + 1));
                store16_affine(d1, m1, lo, y + 64 * c + 16 * half);
                store16_affine(d2, m2, hi, y + 64 * c + 32 + 16 * half);
            }
        }
    }
}

AVX2 static void q6_k(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i thirty_two = _mm_set1_epi8(32);
    for (uint64_t i = 0; i < n; i++, b += 210, y += 256) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *scales = (const int8_t *)(b + 192);
        float d = hurray__ggml_f16_at(b + 208);
        for (int half_block = 0; half_block < 2; half_block++) {
            const uint8_t *l4 = ql + 64 * half_block, *h2 = qh + 32 * half_block;
            for (int g = 0; g < 4; g++) {
                for (int half = 0; half < 2; half++) {
                    __m128i lo = load16(l4 + 32 * (g % 2) + 16 * half);
                    lo = g < 2 ? low_nibbles(lo) : high_nibbles(lo);
                    __m128i hi = crumbs(load16(h2 + 16 * half), g);
                    __m128i q = _mm_sub_epi8(_mm_or_si128(lo, _mm_slli_epi16(hi, 4)), thirty_two);
                    __m256 ds = _mm256_set1_ps(d * (float)scales[8 * half_block + 2 * g + half]);
                    store16_scaled(ds, q, y + 128 * half_block + 32 * g + 16 * half);
                }
            }
        }
    }
}

/* ---- IQ types -------------------------------------------------------------- */

/* Eight grid bytes (unsigned magnitudes) as floats. */
AVX2 static inline __m256 grid_u8(uint64_t entry)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128((long long)entry)));
}

/* y = (db * grid) * -1 where a bit of `signs` is set: the sign flipped
 * unless the product is a NaN (hurray__ggml_signed, lane by lane). */
AVX2 static inline void store8_signed(__m256 db, __m256 grid, uint32_t signs, float *y)
{
    __m256i product = _mm256_castps_si256(_mm256_mul_ps(db, grid));
    __m256i magnitude = _mm256_and_si256(product, _mm256_set1_epi32(0x7FFFFFFF));
    __m256i nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7F800000));
    __m256i flip = _mm256_andnot_si256(nan, bit_lanes(signs));
    flip = _mm256_and_si256(flip, _mm256_set1_epi32((int)0x80000000u));
    _mm256_storeu_ps(y, _mm256_castsi256_ps(_mm256_xor_si256(product, flip)));
}

AVX2 static void iq2_xxs(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 66, y += 256) {
        float d = hurray__ggml_f16_at(b);
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *q = b + 2 + 8 * ib;
            uint32_t aux = hurray__le32(q + 4);
            __m256 db = _mm256_set1_ps(d * (0.5f + (float)(aux >> 28)) * 0.25f);
            for (int l = 0; l < 4; l++) {
                uint8_t signs = hurray__ggml_ksigns[(aux >> (7 * l)) & 127];
                store8_signed(db, grid_u8(hurray__ggml_iq2xxs_grid[q[l]]), signs,
                              y + 32 * ib + 8 * l);
            }
        }
    }
}

AVX2 static void iq2_xs(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 74, y += 256) {
        float d = hurray__ggml_f16_at(b);
        const uint8_t *scales = b + 66;
        for (int ib = 0; ib < 8; ib++) {
            __m256 db[2] = {_mm256_set1_ps(d * (0.5f + (float)(scales[ib] & 15)) * 0.25f),
                            _mm256_set1_ps(d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f)};
            for (int l = 0; l < 4; l++) {
                uint16_t q = hurray__le16(b + 2 + 2 * (4 * ib + l));
                store8_signed(db[l / 2], grid_u8(hurray__ggml_iq2xs_grid[q & 511]),
                              hurray__ggml_ksigns[q >> 9], y + 32 * ib + 8 * l);
            }
        }
    }
}

AVX2 static void iq2_s(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 82, y += 256) {
        float d = hurray__ggml_f16_at(b);
        const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
        for (int ib = 0; ib < 8; ib++) {
            __m256 db[2] = {_mm256_set1_ps(d * (0.5f + (float)(scales[ib] & 15)) * 0.25f),
                            _mm256_set1_ps(d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f)};
            for (int l = 0; l < 4; l++) {
                uint32_t index = qs[4 * ib + l] | ((uint32_t)(qh[ib] >> (2 * l)) & 3u) << 8;
                store8_signed(db[l / 2], grid_u8(hurray__ggml_iq2s_grid[index]), signs[4 * ib + l],
                              y + 32 * ib + 8 * l);
            }
        }
    }
}

/* Two 4-byte grid entries as the eight bytes of one. */
static inline uint64_t pair(uint32_t first, uint32_t second)
{
    return (uint64_t)first | (uint64_t)second << 32;
}

AVX2 static void iq3_xxs(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 98, y += 256) {
        float d = hurray__ggml_f16_at(b);
        const uint8_t *qs = b + 2, *packed = b + 66;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux = hurray__le32(packed + 4 * ib);
            __m256 db = _mm256_set1_ps(d * (0.5f + (float)(aux >> 28)) * 0.5f);
            for (int l = 0; l < 4; l++) {
                uint8_t signs = hurray__ggml_ksigns[(aux >> (7 * l)) & 127];
                uint64_t entry = pair(hurray__ggml_iq3xxs_grid[qs[8 * ib + 2 * l]],
                                      hurray__ggml_iq3xxs_grid[qs[8 * ib + 2 * l + 1]]);
                store8_signed(db, grid_u8(entry), signs, y + 32 * ib + 8 * l);
            }
        }
    }
}

AVX2 static void iq3_s(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 110, y += 256) {
        float d = hurray__ggml_f16_at(b);
        const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
        for (int ib = 0; ib < 8; ib++) {
            __m256 db = _mm256_set1_ps(d *
                                       (float)(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 15)));
            for (int l = 0; l < 4; l++) {
                int k = 2 * l;
                uint32_t first = qs[8 * ib + k] | ((uint32_t)(qh[ib] >> k) & 1u) << 8;
                uint32_t second = qs[8 * ib + k + 1] | ((uint32_t)(qh[ib] >> (k + 1)) & 1u) << 8;
                uint64_t entry = pair(hurray__ggml_iq3s_grid[first],
                                      hurray__ggml_iq3s_grid[second]);
                store8_signed(db, grid_u8(entry), signs[4 * ib + l], y + 32 * ib + 8 * l);
            }
        }
    }
}

/* y = dl * (grid + delta) for eight int8 grid values. */
AVX2 static inline void store8_grid1(__m256 dl, uint64_t entry, __m256 delta, float *y)
{
    __m256 grid = i8_to_ps(_mm_cvtsi64_si128((long long)entry));
    _mm256_storeu_ps(y, _mm256_mul_ps(dl, _mm256_add_ps(grid, delta)));
}

AVX2 static void iq1_s(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 50, y += 256) {
        float d = hurray__ggml_f16_at(b);
        const uint8_t *qs = b + 2, *qh = b + 34;
        for (int ib = 0; ib < 8; ib++) {
            uint16_t h = hurray__le16(qh + 2 * ib);
            __m256 dl = _mm256_set1_ps(d * (float)(2 * ((h >> 12) & 7) + 1));
            __m256 delta = _mm256_set1_ps(DELTA[h >> 15]);
            for (int l = 0; l < 4; l++) {
                uint32_t index = qs[4 * ib + l] | ((uint32_t)(h >> (3 * l)) & 7u) << 8;
                store8_grid1(dl, hurray__ggml_iq1s_grid[index], delta, y + 32 * ib + 8 * l);
            }
        }
    }
}

AVX2 static void iq1_m(const uint8_t *b, uint64_t n, float *y)
{
    for (uint64_t i = 0; i < n; i++, b += 56, y += 256) {
        const uint8_t *qs = b, *qh = b + 32, *packed = b + 48;
        uint16_t sc[4];
        for (int k = 0; k < 4; k++) {
            sc[k] = hurray__le16(packed + 2 * k);
        }
        uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
                                    ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        float d = hurray__f16_to_f32(dbits);
        for (int ib = 0; ib < 8; ib++) {
            int shift = 6 * (ib % 2);
            __m256 dl[2] = {_mm256_set1_ps(d * (float)(2 * ((sc[ib / 2] >> shift) & 7) + 1)),
                            _mm256_set1_ps(d * (float)(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1))};
            for (int l = 0; l < 4; l++) {
                uint8_t h = (uint8_t)(qh[2 * ib + l / 2] >> (4 * (l % 2)));
                uint32_t index = qs[4 * ib + l] | (uint32_t)(h & 7) << 8;
                __m256 delta = _mm256_set1_ps(DELTA[(h >> 3) & 1]);
                store8_grid1(dl[l / 2], hurray__ggml_iq1s_grid[index], delta, y + 32 * ib + 8 * l);
            }
        }
    }
}

AVX2 static void iq4_xs(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i table = _mm_loadu_si128((const __m128i *)hurray__ggml_iq4nl_values);
    for (uint64_t i = 0; i < n; i++, b += 136, y += 256) {
        float d = hurray__ggml_f16_at(b);
        uint16_t scales_h = hurray__le16(b + 2);
        const uint8_t *scales_l = b + 4, *qs = b + 8;
        for (int ib = 0; ib < 8; ib++) {
            int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | ((scales_h >> (2 * ib)) & 3)
                                                                       << 4;
            __m256 dl = _mm256_set1_ps(d * (float)(ls - 32));
            __m128i q = load16(qs + 16 * ib);
            store16_table(dl, table, low_nibbles(q), y + 32 * ib);
            store16_table(dl, table, high_nibbles(q), y + 32 * ib + 16);
        }
    }
}

/* ---- ternary --------------------------------------------------------------- */

AVX2 static void tq2_0(const uint8_t *b, uint64_t n, float *y)
{
    const __m128i one = _mm_set1_epi8(1);
    for (uint64_t i = 0; i < n; i++, b += 66, y += 256) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b + 64));
        for (int c = 0; c < 2; c++) {
            for (int l = 0; l < 4; l++) {
                for (int half = 0; half < 2; half++) {
                    __m128i q = crumbs(load16(b + 32 * c + 16 * half), l);
                    store16_scaled(d, _mm_sub_epi8(q, one), y + 128 * c + 32 * l + 16 * half);
                }
            }
        }
    }
}

/* Sixteen bytes of five trits each (scaled to 0..255): trit n of each,
 * ((q * 3^n mod 256) * 3) >> 8, minus one, times d. */
AVX2 static inline void store16_trits(__m256 d, __m128i bytes, int pow3, float *y)
{
    __m256i q = _mm256_cvtepu8_epi16(bytes);
    q = _mm256_and_si256(_mm256_mullo_epi16(q, _mm256_set1_epi16((short)pow3)),
                         _mm256_set1_epi16(0xFF));
    __m256i t = _mm256_srli_epi16(_mm256_mullo_epi16(q, _mm256_set1_epi16(3)), 8);
    t = _mm256_sub_epi16(t, _mm256_set1_epi16(1));
    __m256 a = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(t)));
    __m256 b = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(_mm256_extracti128_si256(t, 1)));
    _mm256_storeu_ps(y, _mm256_mul_ps(d, a));
    _mm256_storeu_ps(y + 8, _mm256_mul_ps(d, b));
}

AVX2 static void tq1_0(const uint8_t *b, uint64_t n, float *y)
{
    static const int pow3[5] = {1, 3, 9, 27, 81};
    for (uint64_t i = 0; i < n; i++, b += 54, y += 256) {
        float d = hurray__ggml_f16_at(b + 52);
        __m256 dv = _mm256_set1_ps(d);
        for (int k = 0; k < 5; k++) {
            store16_trits(dv, load16(b), pow3[k], y + 32 * k);
            store16_trits(dv, load16(b + 16), pow3[k], y + 32 * k + 16);
        }
        for (int k = 0; k < 5; k++) {
            store16_trits(dv, load16(b + 32), pow3[k], y + 160 + 16 * k);
        }
        /* The last 16 elements: four trits of each of the 4 bytes of qh. */
        for (int k = 0; k < 4; k++) {
            for (int m = 0; m < 4; m++) {
                uint8_t q = (uint8_t)(b[48 + m] * pow3[k]);
                y[240 + 4 * k + m] = d * (float)((((uint16_t)q * 3) >> 8) - 1);
            }
        }
    }
}

AVX2 static void q2_0(const uint8_t *b, uint64_t n, float *y)
{
    const __m256i shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i three = _mm256_set1_epi32(3), one = _mm256_set1_epi32(1);
    for (uint64_t i = 0; i < n; i++, b += 18, y += 64) {
        __m256 d = _mm256_set1_ps(hurray__ggml_f16_at(b));
        for (int k = 0; k < 8; k++) {
            /* Two bytes, eight elements: (q - 1) * d, the scalar order. */
            __m256i v = _mm256_set1_epi32(hurray__le16(b + 2 + 2 * k));
            __m256i q = _mm256_and_si256(_mm256_srlv_epi32(v, shifts), three);
            __m256 f = _mm256_cvtepi32_ps(_mm256_sub_epi32(q, one));
            _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(f, d));
        }
    }
}

HurrayGgmlRowFn hurray__ggml_row_avx2(uint32_t ggml_type)
{
    switch (ggml_type) {
    case HURRAY_GGML_Q4_0: return q4_0;
    case HURRAY_GGML_Q4_1: return q4_1;
    case HURRAY_GGML_Q5_0: return q5_0;
    case HURRAY_GGML_Q5_1: return q5_1;
    case HURRAY_GGML_Q8_0: return q8_0;
    case HURRAY_GGML_Q2_K: return q2_k;
    case HURRAY_GGML_Q3_K: return q3_k;
    case HURRAY_GGML_Q4_K: return q4_k;
    case HURRAY_GGML_Q5_K: return q5_k;
    case HURRAY_GGML_Q6_K: return q6_k;
    case HURRAY_GGML_IQ2_XXS: return iq2_xxs;
    case HURRAY_GGML_IQ2_XS: return iq2_xs;
    case HURRAY_GGML_IQ3_XXS: return iq3_xxs;
    case HURRAY_GGML_IQ1_S: return iq1_s;
    case HURRAY_GGML_IQ4_NL: return iq4_nl;
    case HURRAY_GGML_IQ3_S: return iq3_s;
    case HURRAY_GGML_IQ2_S: return iq2_s;
    case HURRAY_GGML_IQ4_XS: return iq4_xs;
    case HURRAY_GGML_IQ1_M: return iq1_m;
    case HURRAY_GGML_TQ1_0: return tq1_0;
    case HURRAY_GGML_TQ2_0: return tq2_0;
    case HURRAY_GGML_MXFP4: return mxfp4;
    case HURRAY_GGML_NVFP4: return nvfp4;
    case HURRAY_GGML_Q1_0: return q1_0;
    case HURRAY_GGML_Q2_0: return q2_0;
    default: return NULL;
    }
}

#endif
