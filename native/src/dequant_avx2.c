/*
 * dequant_avx2.c -- the AVX2 twins of the output conversions and of the
 * common value readers (dequant_shared.h). Each gives the bits of its scalar
 * original: the same operations, lane by lane, with no fused multiply-add
 * (the target is avx2 alone). dequant.c and dequant_values.c pick them at
 * run time, on CPUs with AVX2 and F16C.
 */
#include "dequant_shared.h"

#if HURRAY__DEQUANT_AVX2

#include <immintrin.h>

/* float32 to float16: F16C rounds to nearest even, as the scalar code does,
 * except for NaNs, whose bits follow numpy's rule there (a group with one
 * is done by the scalar code). */
HURRAY__AVX2_F16C void hurray__store_f16_avx2(const float *in, uint64_t n, uint16_t *out)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i infinity = _mm256_set1_epi32(0x7F800000);
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(in + i);
        __m256i magnitude = _mm256_and_si256(_mm256_castps_si256(v), abs_mask);
        __m256i nan = _mm256_cmpgt_epi32(magnitude, infinity);
        if (!_mm256_testz_si256(nan, nan)) {
            for (uint64_t j = i; j < i + 8; j++) {
                out[j] = hurray__f32_to_f16(in[j]);
            }
            continue;
        }
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        _mm_storeu_si128((__m128i *)(out + i), h);
    }
    for (; i < n; i++) {
        out[i] = hurray__f32_to_f16(in[i]);
    }
}

/* float32 to bfloat16, 8 lanes: (f + 0x7FFF + bit 16) >> 16, a NaN to the
 * quiet NaN of its sign. */
HURRAY__AVX2 static inline __m256i bf16_lanes(__m256 v)
{
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i infinity = _mm256_set1_epi32(0x7F800000);
    __m256i f = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(f, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7FFF)), lsb);
    rounded = _mm256_srli_epi32(rounded, 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(f, abs_mask), infinity);
    __m256i quiet = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(f, 16),
                                                     _mm256_set1_epi32(0x8000)),
                                    _mm256_set1_epi32(0x7FC0));
    return _mm256_blendv_epi8(rounded, quiet, nan);
}

HURRAY__AVX2 void hurray__store_bf16_avx2(const float *in, uint64_t n, uint16_t *out)
{
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = bf16_lanes(_mm256_loadu_ps(in + i));
        __m256i b = bf16_lanes(_mm256_loadu_ps(in + i + 8));
        /* Every lane holds at most 0xFFFF, so the saturating pack is exact;
         * it packs within 128-bit halves, which the permute puts in order. */
        __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(out + i), packed);
    }
    for (; i < n; i++) {
        out[i] = hurray__f32_to_bf16(in[i]);
    }
}

HURRAY__AVX2 void hurray__read_code8_avx2(const uint8_t *codes, const float *table, uint64_t n,
                                          float *out)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i bytes = _mm_loadl_epi64((const __m128i *)(codes + i));
        __m256i index = _mm256_cvtepu8_epi32(bytes);
        _mm256_storeu_ps(out + i, _mm256_i32gather_ps(table, index, 4));
    }
    for (; i < n; i++) {
        out[i] = table[codes[i]];
    }
}

/* The first 16 entries of a code table, looked up by 8 codes of 4 bits. */
HURRAY__AVX2 static inline __m256 lookup16(__m256 low, __m256 high, __m256i index)
{
    __m256 a = _mm256_permutevar8x32_ps(low, index);
    __m256 b = _mm256_permutevar8x32_ps(high, index);
    __m256 pick = _mm256_castsi256_ps(_mm256_slli_epi32(index, 28)); /* bit 3 to the sign */
    return _mm256_blendv_ps(a, b, pick);
}

HURRAY__AVX2 void hurray__read_nibbles_avx2(const uint8_t *bytes, const float *table,
                                            uint64_t pairs, int high_first, float *out)
{
    __m256 low = _mm256_loadu_ps(table), high = _mm256_loadu_ps(table + 8);
    const __m128i nibble = _mm_set1_epi8(0x0F);
    uint64_t k = 0;
    for (; k + 8 <= pairs; k += 8) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(bytes + k));
        __m128i lo = _mm_and_si128(b, nibble);
        __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), nibble);
        /* element order: low, high, low, ... (high, low, ... with high_first) */
        __m128i codes = high_first ? _mm_unpacklo_epi8(hi, lo) : _mm_unpacklo_epi8(lo, hi);
        __m256i first = _mm256_cvtepu8_epi32(codes);
        __m256i second = _mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8));
        _mm256_storeu_ps(out + 2 * k, lookup16(low, high, first));
        _mm256_storeu_ps(out + 2 * k + 8, lookup16(low, high, second));
    }
    const unsigned first = high_first ? 4 : 0, second = high_first ? 0 : 4;
    for (; k < pairs; k++) {
        out[2 * k] = table[bytes[k] >> first & 15];
        out[2 * k + 1] = table[bytes[k] >> second & 15];
    }
}

HURRAY__AVX2_F16C void hurray__read_f16_avx2(const uint8_t *in, uint64_t n, float *out)
{
    /* F16C quiets a signalling NaN; the scalar conversion (and numpy) keep
     * it, so those lanes get their quiet bit cleared again. */
    const __m256i exponent = _mm256_set1_epi32(0x7E00), signalling = _mm256_set1_epi32(0x7C00);
    const __m256i payload = _mm256_set1_epi32(0x03FF), quiet = _mm256_set1_epi32(0x00400000);
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(in + 2 * i));
        __m256 f = _mm256_cvtph_ps(h);
        __m256i wide = _mm256_cvtepu16_epi32(h);
        __m256i snan =
            _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_and_si256(wide, exponent), signalling),
                             _mm256_xor_si256(_mm256_cmpeq_epi32(_mm256_and_si256(wide, payload),
                                                                 _mm256_setzero_si256()),
                                              _mm256_set1_epi32(-1)));
        f = _mm256_xor_ps(f, _mm256_castsi256_ps(_mm256_and_si256(snan, quiet)));
        _mm256_storeu_ps(out + i, f);
    }
    for (; i < n; i++) {
        out[i] = hurray__f16_to_f32(hurray__le16(in + 2 * i));
    }
}

HURRAY__AVX2 void hurray__read_bf16_avx2(const uint8_t *in, uint64_t n, float *out)
{
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(in + 2 * i));
        __m256i f = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
        _mm256_storeu_ps(out + i, _mm256_castsi256_ps(f));
    }
    for (; i < n; i++) {
        out[i] = hurray__bf16_to_f32(hurray__le16(in + 2 * i));
    }
}

/* One segment: (q - z) * s, or q * s without a zero point; the first
 * operand's NaN kept only where the scale is one too (as in fused). */
HURRAY__AVX2 static inline void affine_segment(const float *q, float s, const float *z, uint64_t n,
                                               float *out)
{
    __m256 sv = _mm256_set1_ps(s), zv = _mm256_set1_ps(z != NULL ? *z : 0.0f);
    int scale_nan = s != s;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 d = _mm256_loadu_ps(q + i);
        d = z != NULL ? _mm256_sub_ps(d, zv) : d;
        __m256 y = _mm256_mul_ps(d, sv);
        _mm256_storeu_ps(out + i, scale_nan ? hurray__first_nan_avx2(d, y) : y);
    }
    for (; i < n; i++) {
        float d = z != NULL ? q[i] - *z : q[i];
        out[i] = hurray__first_nan(d, d * s);
    }
}

HURRAY__AVX2 void hurray__affine_segments_avx2(const float *q, const float *s, const float *z,
                                               uint64_t first, uint64_t length, uint64_t n,
                                               float *out)
{
    if (length == 1) { /* a parameter per element: per axis, the last one */
        uint64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            __m256 d = _mm256_loadu_ps(q + i);
            if (z != NULL) {
                d = _mm256_sub_ps(d, _mm256_loadu_ps(z + i));
            }
            _mm256_storeu_ps(out + i,
                             hurray__first_nan_avx2(d, _mm256_mul_ps(d, _mm256_loadu_ps(s + i))));
        }
        for (; i < n; i++) {
            float d = z != NULL ? q[i] - z[i] : q[i];
            out[i] = hurray__first_nan(d, d * s[i]);
        }
        return;
    }
    uint64_t k = 0;
    for (uint64_t start = 0, end = first; start < n; start = end, end += length, k++) {
        uint64_t stop = end < n ? end : n;
        affine_segment(q + start, s[k], z != NULL ? z + k : NULL, stop - start, out + start);
    }
}

/* One segment: (v * s) * g, or v * s without a global scale; the first
 * operand's NaN kept only where the other is one too (as in fused). */
HURRAY__AVX2 static inline void scaled_segment(const float *v, float s, const float *g, uint64_t n,
                                               float *out)
{
    __m256 sv = _mm256_set1_ps(s), gv = _mm256_set1_ps(g != NULL ? *g : 1.0f);
    int scale_nan = s != s, global_nan = g != NULL && *g != *g;
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(v + i);
        __m256 p = _mm256_mul_ps(x, sv);
        p = scale_nan ? hurray__first_nan_avx2(x, p) : p;
        if (g != NULL) {
            __m256 y = _mm256_mul_ps(p, gv);
            p = global_nan ? hurray__first_nan_avx2(p, y) : y;
        }
        _mm256_storeu_ps(out + i, p);
    }
    for (; i < n; i++) {
        float p = hurray__first_nan(v[i], v[i] * s);
        out[i] = g != NULL ? hurray__first_nan(p, p * *g) : p;
    }
}

HURRAY__AVX2 void hurray__scaled_segments_avx2(const float *v, const float *s, const float *g,
                                               uint64_t first, uint64_t length, uint64_t n,
                                               float *out)
{
    uint64_t k = 0;
    for (uint64_t start = 0, end = first; start < n; start = end, end += length, k++) {
        uint64_t stop = end < n ? end : n;
        scaled_segment(v + start, s[k], g, stop - start, out + start);
    }
}

/* ---- fused: codes straight into the arithmetic ---------------------------- */

/* The code of element e: a byte, or a nibble of LSB-first pairs. */
static inline uint32_t code_at(const uint8_t *base, int64_t e, int nibbles)
{
    if (!nibbles) {
        return base[e];
    }
    return (uint32_t)(base[e >> 1] >> (4 * (e & 1))) & 15u; /* >> 1: a floor, for e < 0 too */
}

/* The values of eight elements from element e (even, for nibbles). */
HURRAY__AVX2 static inline __m256 codes8(const uint8_t *base, int64_t e, int nibbles,
                                         const float *table, __m256 low, __m256 high)
{
    if (nibbles) {
        uint32_t word;
        memcpy(&word, base + (e >> 1), sizeof word);
        __m128i b = _mm_cvtsi32_si128((int)word);
        __m128i lo = _mm_and_si128(b, _mm_set1_epi8(0x0F));
        __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), _mm_set1_epi8(0x0F));
        return lookup16(low, high, _mm256_cvtepu8_epi32(_mm_unpacklo_epi8(lo, hi)));
    }
    __m128i bytes = _mm_loadl_epi64((const __m128i *)(base + e));
    return _mm256_i32gather_ps(table, _mm256_cvtepu8_epi32(bytes), 4);
}

/* The formulas of fused, as constants, so that the common case below is
 * compiled once per formula with no test left in its loop. */
enum { AFFINE_ZERO, AFFINE, SCALED_GLOBAL, SCALED };

/* One formula on eight values, for scales that are not NaN: then no lane
 * needs hurray__first_nan, and the operations are fused's own, in its
 * order, so the bits are the same. */
HURRAY__AVX2 static inline __attribute__((always_inline)) __m256 formula8(__m256 v, __m256 sv,
                                                                          __m256 zv, __m256 gv,
                                                                          int kind)
{
    switch (kind) {
    case AFFINE_ZERO: return _mm256_mul_ps(_mm256_sub_ps(v, zv), sv);
    case SCALED_GLOBAL: return _mm256_mul_ps(_mm256_mul_ps(v, sv), gv);
    default: return _mm256_mul_ps(v, sv); /* AFFINE, SCALED: v * s */
    }
}

/* Elements [i, stop) of one segment, sixteen at a time from one load of
 * eight bytes of nibbles (element offset + i even): returns the first
 * element not done (fewer than sixteen remain). Reads bytes of elements
 * before stop only. */
HURRAY__AVX2 static inline __attribute__((always_inline)) uint64_t
nibbles16(const uint8_t *base, int64_t offset, __m256 low, __m256 high, __m256 sv, __m256 zv,
          __m256 gv, int kind, uint64_t i, uint64_t stop, float *out)
{
    const __m128i nibble = _mm_set1_epi8(0x0F);
    for (; i + 16 <= stop; i += 16) {
        __m128i b = _mm_loadl_epi64((const __m128i *)(base + ((offset + (int64_t)i) >> 1)));
        __m128i codes = _mm_unpacklo_epi8(_mm_and_si128(b, nibble),
                                          _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
        __m256 first = lookup16(low, high, _mm256_cvtepu8_epi32(codes));
        __m256 second = lookup16(low, high, _mm256_cvtepu8_epi32(_mm_srli_si128(codes, 8)));
        _mm256_storeu_ps(out + i, formula8(first, sv, zv, gv, kind));
        _mm256_storeu_ps(out + i + 8, formula8(second, sv, zv, gv, kind));
    }
    return i;
}

/* nibbles16 for the formula `kind`, chosen once per segment. */
HURRAY__AVX2 static uint64_t nibbles16_of(const uint8_t *base, int64_t offset, __m256 low,
                                          __m256 high, __m256 sv, __m256 zv, __m256 gv, int kind,
                                          uint64_t i, uint64_t stop, float *out)
{
    switch (kind) {
    case AFFINE_ZERO:
        return nibbles16(base, offset, low, high, sv, zv, gv, AFFINE_ZERO, i, stop, out);
    case SCALED_GLOBAL:
        return nibbles16(base, offset, low, high, sv, zv, gv, SCALED_GLOBAL, i, stop, out);
    default: return nibbles16(base, offset, low, high, sv, zv, gv, SCALED, i, stop, out);
    }
}

/* One formula over the segments of a run, the codes read on the way:
 * affine (q - z[k]) * s[k] (q * s[k] without z), or scaled (v * s[k]) * g
 * (v * s[k] without g). Elements [0, first) are segment 0, then every
 * `length` the next. */
HURRAY__AVX2 static void fused(const uint8_t *base, int64_t offset, int nibbles, const float *table,
                               const float *s, const float *z, const float *g, int affine,
                               uint64_t first, uint64_t length, uint64_t n, float *out)
{
    __m256 low = _mm256_loadu_ps(table), high = _mm256_loadu_ps(table + 8);
    if (length == 1 && affine) { /* a parameter per element: per axis, the last one */
        uint64_t i = 0;
        for (; i + 8 <= n && !(nibbles && (offset & 1)); i += 8) {
            __m256 d = codes8(base, offset + (int64_t)i, nibbles, table, low, high);
            if (z != NULL) {
                d = _mm256_sub_ps(d, _mm256_loadu_ps(z + i));
            }
            __m256 y = hurray__first_nan_avx2(d, _mm256_mul_ps(d, _mm256_loadu_ps(s + i)));
            _mm256_storeu_ps(out + i, y);
        }
        for (; i < n; i++) {
            float v = table[code_at(base, offset + (int64_t)i, nibbles)];
            float d = z != NULL ? v - z[i] : v;
            out[i] = hurray__first_nan(d, d * s[i]);
        }
        return;
    }
    /* The first operand's NaN matters only where the second is a NaN too:
     * with a scale (or global scale) that is not one, the product alone
     * has the right bits, and the lanes skip hurray__first_nan. */
    int global_nan = g != NULL && *g != *g;
    int kind = affine ? (z != NULL ? AFFINE_ZERO : AFFINE) : (g != NULL ? SCALED_GLOBAL : SCALED);
    uint64_t k = 0;
    for (uint64_t start = 0, end = first; start < n; start = end, end += length, k++) {
        uint64_t stop = end < n ? end : n;
        float sk = s[k];
        float zk = z != NULL ? z[k] : 0.0f, gk = g != NULL ? *g : 1.0f;
        __m256 sv = _mm256_set1_ps(sk), zv = _mm256_set1_ps(zk), gv = _mm256_set1_ps(gk);
        int scale_nan = sk != sk;
        uint64_t i = start;
        if (nibbles && !scale_nan && !global_nan && !((offset + (int64_t)i) & 1)) {
            /* The common case: whole pairs of nibbles, ordinary scales. */
            i = nibbles16_of(base, offset, low, high, sv, zv, gv, kind, i, stop, out);
        }
        for (;;) {
            int vector = i + 8 <= stop && !(nibbles && ((offset + (int64_t)i) & 1));
            if (vector) {
                __m256 v = codes8(base, offset + (int64_t)i, nibbles, table, low, high);
                __m256 y;
                if (affine) {
                    __m256 d = z != NULL ? _mm256_sub_ps(v, zv) : v;
                    y = _mm256_mul_ps(d, sv);
                    y = scale_nan ? hurray__first_nan_avx2(d, y) : y;
                } else {
                    __m256 p = _mm256_mul_ps(v, sv);
                    p = scale_nan ? hurray__first_nan_avx2(v, p) : p;
                    if (g != NULL) {
                        y = _mm256_mul_ps(p, gv);
                        y = global_nan ? hurray__first_nan_avx2(p, y) : y;
                    } else {
                        y = p;
                    }
                }
                _mm256_storeu_ps(out + i, y);
                i += 8;
                continue;
            }
            if (i >= stop) {
                break;
            }
            float v = table[code_at(base, offset + (int64_t)i, nibbles)];
            if (affine) {
                float d = z != NULL ? v - zk : v;
                out[i] = hurray__first_nan(d, d * sk);
            } else {
                float p = hurray__first_nan(v, v * sk);
                out[i] = g != NULL ? hurray__first_nan(p, p * gk) : p;
            }
            i++;
        }
    }
}

HURRAY__AVX2 void hurray__affine_codes_avx2(const uint8_t *base, int64_t offset, int nibbles,
                                            const float *table, const float *s, const float *z,
                                            uint64_t first, uint64_t length, uint64_t n, float *out)
{
    fused(base, offset, nibbles, table, s, z, NULL, 1, first, length, n, out);
}

HURRAY__AVX2 void hurray__scaled_codes_avx2(const uint8_t *base, int64_t offset, int nibbles,
                                            const float *table, const float *s, const float *g,
                                            uint64_t first, uint64_t length, uint64_t n, float *out)
{
    fused(base, offset, nibbles, table, s, NULL, g, 0, first, length, n, out);
}

/* ---- non-temporal output --------------------------------------------------- */

HURRAY__AVX2 void hurray__stream_bytes_avx2(const void *src, uint64_t n, void *dst)
{
    const uint8_t *from = src;
    uint8_t *to = dst;
    uint64_t head = (32 - ((uintptr_t)to & 31)) & 31;
    if (head > n) {
        head = n;
    }
    memcpy(to, from, head);
    uint64_t i = head;
    for (; i + 32 <= n; i += 32) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(from + i));
        _mm256_stream_si256((__m256i *)(to + i), v);
    }
    memcpy(to + i, from + i, n - i);
}

void hurray__stream_fence(void)
{
    _mm_sfence();
}

#endif
