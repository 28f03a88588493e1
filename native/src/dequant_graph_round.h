/*
 * dequant_graph_round.h -- internal: the roundings of the graph scheme
 * (dequant_graph_shared.h): a value to one of the four arithmetic types, from
 * float32 or straight from float64, each rounded once, to nearest even.
 *
 * A value of type float16 or bfloat16 is kept in a float (exactly: both
 * are subsets of float32), a float64 value in a double. NaNs follow the
 * rules the scheme's other conversions follow (dequant_shared.h): to float16 a
 * NaN keeps its sign and the top ten bits of its payload, and stays a NaN
 * (numpy's rule, from float32 and from float64 alike); to bfloat16 it
 * becomes the quiet NaN of its sign (ml_dtypes'); float64 to float32 is a
 * C cast.
 */
#ifndef HURRAY_DEQUANT_GRAPH_ROUND_INTERNAL_H
#define HURRAY_DEQUANT_GRAPH_ROUND_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "dequant_shared.h"

/* The arithmetic types, numbered as the plan indexes its tables. */
enum {
    HURRAY__G_F16 = 0,
    HURRAY__G_BF16 = 1,
    HURRAY__G_F32 = 2,
    HURRAY__G_F64 = 3,
    HURRAY__G_TYPES = 4
};

/* Bytes of one value of type t in the scheme's buffers: a double for
 * float64, a float for the other three. */
static inline uint32_t hurray__g_size(uint32_t t)
{
    return t == HURRAY__G_F64 ? 8u : 4u;
}

/* A double to the bits of a float with mant_bits stored significand bits
 * and exp_bits exponent bits (float16: 10, 5; bfloat16: 7, 8), rounded
 * once to nearest even, including into the subnormals and up to infinity.
 * NaNs are the caller's. */
static inline uint16_t hurray__g_f64_to_small(double value, uint32_t mant_bits, uint32_t exp_bits)
{
    uint64_t d;
    memcpy(&d, &value, sizeof d);
    uint16_t sign = (uint16_t)((d >> 63) << (mant_bits + exp_bits));
    int exponent = (int)((d >> 52) & 0x7FF);
    uint64_t significand = d & 0x000FFFFFFFFFFFFFu;
    uint32_t bias = (1u << (exp_bits - 1)) - 1;
    uint32_t top = (1u << exp_bits) - 1; /* the exponent field of infinity */
    uint16_t infinity = (uint16_t)(top << mant_bits);
    if (exponent == 0x7FF) {
        return sign | infinity; /* infinity (a NaN is the caller's) */
    }
    if (exponent == 0) {
        return sign; /* float64 subnormals lie far below both formats' least value */
    }
    significand |= (uint64_t)1 << 52;
    int e = exponent - 1023; /* value = significand * 2^(e - 52) */
    int emin = 1 - (int)bias;
    uint32_t shift = 52 - mant_bits; /* normal: keep mant_bits + 1 bits */
    uint64_t field_base = 0;
    if (e < emin) {
        int extra = emin - e;
        if (extra > 53) {
            return sign; /* far below half the least subnormal */
        }
        shift += (uint32_t)extra;
        if (shift >= 54) {
            return sign; /* half the least subnormal exceeds any significand: zero */
        }
    } else {
        field_base = (uint64_t)(e + (int)bias) << mant_bits;
        if (e + (int)bias >= (int)top) {
            return sign | infinity;
        }
    }
    uint64_t kept = significand >> shift;
    uint64_t rest = significand & (((uint64_t)1 << shift) - 1);
    uint64_t half = (uint64_t)1 << (shift - 1);
    if (rest > half || (rest == half && (kept & 1u))) {
        kept++;
    }
    /* Normal: the implicit bit is in kept, so adding it to the field base
     * minus one unit of the exponent gives the bits, a carry included.
     * Subnormal: kept is the field, a carry making it the least normal. */
    uint64_t bits = e < emin ? kept : field_base + kept - ((uint64_t)1 << mant_bits);
    if (bits >= infinity) {
        return sign | infinity;
    }
    return sign | (uint16_t)bits;
}

/* float64 to float16 bits, rounded once (numpy's npy_double_to_half). */
static inline uint16_t hurray__g_f64_to_f16(double value)
{
    uint64_t d;
    memcpy(&d, &value, sizeof d);
    if ((d & 0x7FFFFFFFFFFFFFFFu) > 0x7FF0000000000000u) {
        uint16_t sign = (uint16_t)((d >> 48) & 0x8000u);
        uint16_t nan = (uint16_t)(0x7C00u | ((d & 0x000FFFFFFFFFFFFFu) >> 42));
        return sign | (nan == 0x7C00u ? 0x7C01u : nan);
    }
    return hurray__g_f64_to_small(value, 10, 5);
}

/* float64 to bfloat16 bits, rounded once (not through float32). */
static inline uint16_t hurray__g_f64_to_bf16(double value)
{
    uint64_t d;
    memcpy(&d, &value, sizeof d);
    if ((d & 0x7FFFFFFFFFFFFFFFu) > 0x7FF0000000000000u) {
        return (uint16_t)((d >> 48) & 0x8000u) | 0x7FC0u;
    }
    return hurray__g_f64_to_small(value, 7, 8);
}

/* A float32 value rounded to float16 or bfloat16, kept as a float. */
static inline float hurray__g_round_f16(float v)
{
    return hurray__f16_to_f32(hurray__f32_to_f16(v));
}

static inline float hurray__g_round_bf16(float v)
{
    return hurray__bf16_to_f32(hurray__f32_to_bf16(v));
}

/* A float32 value as type t (not float64): rounded for the 16-bit types. */
static inline float hurray__g_round_f32_to(uint32_t t, float v)
{
    switch (t) {
    case HURRAY__G_F16: return hurray__g_round_f16(v);
    case HURRAY__G_BF16: return hurray__g_round_bf16(v);
    default: return v;
    }
}

/* A float64 value as type t (not float64), rounded once. */
static inline float hurray__g_round_f64_to(uint32_t t, double v)
{
    switch (t) {
    case HURRAY__G_F16: return hurray__f16_to_f32(hurray__g_f64_to_f16(v));
    case HURRAY__G_BF16: return hurray__bf16_to_f32(hurray__g_f64_to_bf16(v));
    default: return (float)v;
    }
}

/* A float64 value stored as type t at out[i] (a float or a double). */
static inline void hurray__g_put(uint32_t t, void *out, uint64_t i, double v)
{
    if (t == HURRAY__G_F64) {
        ((double *)out)[i] = v;
    } else {
        ((float *)out)[i] = hurray__g_round_f64_to(t, v);
    }
}

#endif /* HURRAY_DEQUANT_GRAPH_ROUND_INTERNAL_H */
