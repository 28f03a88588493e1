/*
 * dequant_ggml_shared.h -- internal: what the scalar and the AVX2 GGML decoders
 * share (dequant_ggml.c, dequant_ggml_avx2.c): the scale encodings.
 */
#ifndef HURRAY_DEQUANT_GGML_INTERNAL_H
#define HURRAY_DEQUANT_GGML_INTERNAL_H

#include "dequant_shared.h"

static inline float hurray__ggml_f16_at(const uint8_t *p)
{
    return hurray__f16_to_f32(hurray__le16(p));
}

/* E8M0 halved (MXFP4's scale): 2^(e - 128), built from bits as ggml builds
 * it; e = 0 and 1 are subnormal, and 255 is 2^127 (no NaN). */
static inline float hurray__ggml_e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* UE4M3 halved (NVFP4's scale): bit 7 is ignored, 0x00 and 0x7F are zero;
 * every other value is exact in float32. */
static inline float hurray__ggml_ue4m3_half(uint8_t x)
{
    if (x == 0 || x == 0x7F) {
        return 0.0f;
    }
    uint32_t exponent = (x >> 3) & 15u, mantissa = x & 7u;
    float raw = exponent == 0 ? (float)mantissa * 0x1p-9f
                              : (1.0f + (float)mantissa / 8.0f) * (float)(1u << exponent) / 128.0f;
    return raw * 0.5f;
}

/* Scale and min j (0..7) of the 12 packed bytes of Q4_K and Q5_K: six bits
 * each; 0-3 in the low bits of bytes 0-7, 4-7 split over bytes 8-11 and
 * the top bits of bytes 0-7. */
static inline void hurray__ggml_k4_scale_min(const uint8_t *q, int j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 15) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* Q3_K's scale k (0..15): six bits, four from bytes 0-7 and two from bytes
 * 8-11 of its 12 packed bytes, minus 32. */
static inline int hurray__ggml_k3_scale(const uint8_t *packed, int k)
{
    int low = k < 8 ? packed[k] & 15 : packed[k - 8] >> 4;
    int high = (packed[8 + k % 4] >> (2 * (k / 4))) & 3;
    return (high << 4 | low) - 32;
}

/* x times -1 when `negative` is 1, as numpy's multiply gives it on x86: a
 * NaN comes back as it is (the multiply returns its NaN operand), anything
 * else with its sign flipped. Written as bit operations, because compilers
 * may turn a product with a chosen +-1 into a sign flip, which would flip a
 * NaN's sign too (clang does). */
static inline float hurray__ggml_signed(float x, uint32_t negative)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    uint32_t is_nan = (bits & 0x7FFFFFFFu) > 0x7F800000u;
    bits ^= (negative & (is_nan ^ 1u)) << 31;
    memcpy(&x, &bits, sizeof x);
    return x;
}

#endif /* HURRAY_DEQUANT_GGML_INTERNAL_H */
