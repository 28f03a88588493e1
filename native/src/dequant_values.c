/*
 * dequant_values.c -- reading stored elements as numbers: the code tables
 * of every type of at most 8 bits, and the readers of layers 1 and 2
 * (strides, byte order, packing) that the plain, affine and microscaling
 * schemes share.
 *
 * Conversions are the ones numpy and ml_dtypes make with astype: integers
 * round once to nearest even (a C cast), float16 and bfloat16 widen
 * exactly with their NaN payloads, float64 narrows as a C cast does, and
 * the 8-, 6- and 4-bit floats take the value their format defines, every
 * NaN code becoming the quiet NaN of its sign (0x7FC00000, 0xFFC00000).
 */
#include <pthread.h>
#include <stddef.h>

#include "dequant_shared.h"
#include "dtype.h"

/* ---- code tables -------------------------------------------------------- */

/* A small float format: exponent and mantissa widths, the exponent bias,
 * and what its top codes mean. */
enum minifloat_kind {
    MINI_IEEE, /* the top exponent is infinity (mantissa 0) and NaN */
    MINI_FN,   /* finite only; S.1...1.1...1 is NaN (float8_e4m3fn) */
    MINI_FNUZ, /* finite only, no negative zero: the code 0x80 is NaN */
    MINI_FINITE,
    MINI_E8M0 /* unsigned powers of two; 0xFF is NaN */
};

struct minifloat {
    uint8_t exponent_bits;
    uint8_t mantissa_bits;
    int8_t bias;
    uint8_t kind;
};

static float quiet_nan(int negative)
{
    uint32_t bits = negative ? 0xFFC00000u : 0x7FC00000u;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* 2^e for the exponents small floats reach (|e| < 1000), from its bits:
 * no libm. */
static double pow2(int e)
{
    uint64_t bits = (uint64_t)(e + 1023) << 52;
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

static float minifloat_value(struct minifloat fmt, uint32_t code)
{
    uint32_t width = fmt.exponent_bits + fmt.mantissa_bits + (fmt.kind == MINI_E8M0 ? 0u : 1u);
    if (fmt.kind == MINI_E8M0) {
        return code == 0xFF ? quiet_nan(0) : (float)pow2((int)code - 127);
    }
    uint32_t sign = (code >> (width - 1)) & 1u;
    uint32_t exponent = (code >> fmt.mantissa_bits) & ((1u << fmt.exponent_bits) - 1);
    uint32_t mantissa = code & ((1u << fmt.mantissa_bits) - 1);
    uint32_t top = (1u << fmt.exponent_bits) - 1;
    if (fmt.kind == MINI_FNUZ && code == 1u << (width - 1)) {
        return quiet_nan(1);
    }
    if (fmt.kind == MINI_FN && exponent == top && mantissa == (1u << fmt.mantissa_bits) - 1) {
        return quiet_nan((int)sign);
    }
    if (fmt.kind == MINI_IEEE && exponent == top) {
        return mantissa != 0 ? quiet_nan((int)sign) : (sign ? -__builtin_inff() : __builtin_inff());
    }
    double magnitude;
    if (exponent == 0) {
        magnitude = (double)mantissa * pow2(1 - fmt.bias - fmt.mantissa_bits);
    } else {
        magnitude = (1.0 + (double)mantissa * pow2(-fmt.mantissa_bits)) *
                    pow2((int)exponent - fmt.bias);
    }
    return (float)(sign ? -magnitude : magnitude); /* exact: every value fits float32 */
}

static struct minifloat minifloat_of(uint32_t dtype)
{
    switch (dtype) {
    case HURRAY_DTYPE_FLOAT8_E3M4: return (struct minifloat){3, 4, 3, MINI_IEEE};
    case HURRAY_DTYPE_FLOAT8_E4M3: return (struct minifloat){4, 3, 7, MINI_IEEE};
    case HURRAY_DTYPE_FLOAT8_E4M3B11FNUZ: return (struct minifloat){4, 3, 11, MINI_FNUZ};
    case HURRAY_DTYPE_FLOAT8_E4M3FN: return (struct minifloat){4, 3, 7, MINI_FN};
    case HURRAY_DTYPE_FLOAT8_E4M3FNUZ: return (struct minifloat){4, 3, 8, MINI_FNUZ};
    case HURRAY_DTYPE_FLOAT8_E5M2: return (struct minifloat){5, 2, 15, MINI_IEEE};
    case HURRAY_DTYPE_FLOAT8_E5M2FNUZ: return (struct minifloat){5, 2, 16, MINI_FNUZ};
    case HURRAY_DTYPE_FLOAT8_E8M0FNU: return (struct minifloat){8, 0, 127, MINI_E8M0};
    case HURRAY_DTYPE_FLOAT6_E2M3FN: return (struct minifloat){2, 3, 1, MINI_FINITE};
    case HURRAY_DTYPE_FLOAT6_E3M2FN: return (struct minifloat){3, 2, 3, MINI_FINITE};
    default: /* HURRAY_DTYPE_FLOAT4_E2M1FN */ return (struct minifloat){2, 1, 1, MINI_FINITE};
    }
}

/* Indexed by dtype code; filled once, on the first call that needs one. */
static float code_tables[HURRAY__DTYPE_TABLE_LEN][256];
static pthread_once_t code_tables_once = PTHREAD_ONCE_INIT;

static void build_code_tables(void)
{
    for (uint32_t dtype = 0; dtype < HURRAY__DTYPE_TABLE_LEN; dtype++) {
        const struct hurray__dtype_info *info = hurray__dtype_row(dtype);
        if (info->bits == 0 || info->bits > 8) {
            continue;
        }
        float *table = code_tables[dtype];
        uint32_t codes = 1u << info->bits;
        for (uint32_t code = 0; code < 256; code++) {
            uint32_t c = code % codes;
            float value;
            switch (info->kind) {
            case HURRAY__KIND_BOOL: value = code != 0 ? 1.0f : 0.0f; break;
            case HURRAY__KIND_INT: {
                int is_signed = dtype == HURRAY_DTYPE_INT8 || dtype == HURRAY_DTYPE_INT1 ||
                                dtype == HURRAY_DTYPE_INT2 || dtype == HURRAY_DTYPE_INT4;
                int32_t v = (int32_t)c;
                if (is_signed && (c >> (info->bits - 1)) != 0) {
                    v -= (int32_t)codes; /* two's complement at the type's width */
                }
                value = (float)v;
                break;
            }
            default: value = minifloat_value(minifloat_of(dtype), c); break;
            }
            table[code] = value;
        }
    }
}

const float *hurray__code_table(uint32_t dtype)
{
    uint32_t bits = hurray__dtype_bits(dtype);
    if (bits == 0 || bits > 8) {
        return NULL;
    }
    pthread_once(&code_tables_once, build_code_tables);
    return code_tables[dtype];
}

/* ---- readers ------------------------------------------------------------ */

void hurray__reader_init(HurrayReader *r, const uint8_t *base, uint32_t dtype, uint32_t packing,
                         uint32_t byte_order)
{
    uint32_t bits = hurray__dtype_bits(dtype);
    r->base = base;
    r->table = hurray__code_table(dtype);
    /* Swap when the elements' byte order is not the host's. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    r->swap = byte_order != HURRAY_BYTE_ORDER_BIG;
#else
    r->swap = byte_order == HURRAY_BYTE_ORDER_BIG;
#endif
    r->width = (uint8_t)bits;
    r->mask = bits < 8 ? (uint8_t)((1u << bits) - 1) : 0xFF;
    if (bits <= 8) {
        switch (packing) {
        case HURRAY_PACKING_PADDED: r->kind = HURRAY__READ_PADDED; break;
        case HURRAY_PACKING_LSB_FIRST: r->kind = HURRAY__READ_LSB; break;
        case HURRAY_PACKING_GGML_SPLIT: r->kind = HURRAY__READ_SPLIT; break;
        default: r->kind = HURRAY__READ_CODE8; break;
        }
        return;
    }
    switch (dtype) {
    case HURRAY_DTYPE_INT16: r->kind = HURRAY__READ_I16; break;
    case HURRAY_DTYPE_INT32: r->kind = HURRAY__READ_I32; break;
    case HURRAY_DTYPE_INT64: r->kind = HURRAY__READ_I64; break;
    case HURRAY_DTYPE_UINT16: r->kind = HURRAY__READ_U16; break;
    case HURRAY_DTYPE_UINT32: r->kind = HURRAY__READ_U32; break;
    case HURRAY_DTYPE_UINT64: r->kind = HURRAY__READ_U64; break;
    case HURRAY_DTYPE_FLOAT16: r->kind = HURRAY__READ_F16; break;
    case HURRAY_DTYPE_BFLOAT16: r->kind = HURRAY__READ_BF16; break;
    case HURRAY_DTYPE_FLOAT32: r->kind = HURRAY__READ_F32; break;
    default: /* HURRAY_DTYPE_FLOAT64; complex types never get here */
        r->kind = HURRAY__READ_F64;
        break;
    }
}

/* The code of element `offset` of a part stored in 1, 2 or 4 bits per
 * element, LSB first: its bit position may lie before the part's byte
 * offset (negative strides), as the descriptor check allowed. */
static inline uint32_t lsb_code(const HurrayReader *r, int64_t offset)
{
    int64_t bit = offset * (int64_t)r->width;
    const uint8_t *byte = r->base + (bit >> 3); /* an arithmetic shift: floor */
    return (uint32_t)(*byte >> (bit & 7)) & r->mask;
}

/* GGML split halves: in each run of 32 elements, byte j holds element j
 * (low nibble) and element j + 16 (high nibble). The part is row-major
 * contiguous, so the offset is the element's logical index. */
static inline uint32_t split_code(const HurrayReader *r, int64_t offset)
{
    uint64_t e = (uint64_t)offset;
    uint8_t byte = r->base[(e >> 5) * 16 + (e & 15)];
    return (uint32_t)(byte >> ((e & 16) >> 2)) & 0x0Fu;
}

/* An element of 2, 4 or 8 bytes at any address, in the host's byte order
 * or (swap) the other. */
static inline uint64_t load_bytes(const uint8_t *p, unsigned n, int swap)
{
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (n) {
    case 2: memcpy(&v16, p, 2); return swap ? __builtin_bswap16(v16) : v16;
    case 4: memcpy(&v32, p, 4); return swap ? __builtin_bswap32(v32) : v32;
    default: memcpy(&v64, p, 8); return swap ? __builtin_bswap64(v64) : v64;
    }
}

/* One reader loop per kind, converting to the output type with `CONVERT`
 * (a C cast for the numeric kinds, exact for the table kinds). */
#define READ_LOOP(OUT_T, r, offset, stride, n, out)                                        \
    do {                                                                                   \
        const uint8_t *base_ = (r)->base;                                                  \
        int swap_ = (r)->swap;                                                             \
        /* Stepped unsigned: the step after the last element may pass 63                   \
         * bits, while every element's own offset fits (the check). */                     \
        uint64_t u_ = (uint64_t)(offset);                                                  \
        switch ((r)->kind) {                                                               \
        case HURRAY__READ_CODE8:                                                           \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(r)->table[base_[(int64_t)u_]];                          \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_PADDED:                                                          \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(r)->table[base_[(int64_t)u_] & (r)->mask];              \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_LSB:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(r)->table[lsb_code((r), (int64_t)u_)];                  \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_SPLIT:                                                           \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(r)->table[split_code((r), (int64_t)u_)];                \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_I16:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(int16_t)load_bytes(base_ + (int64_t)u_ * 2, 2, swap_);  \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_I32:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(int32_t)load_bytes(base_ + (int64_t)u_ * 4, 4, swap_);  \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_I64:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(int64_t)load_bytes(base_ + (int64_t)u_ * 8, 8, swap_);  \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_U16:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(uint16_t)load_bytes(base_ + (int64_t)u_ * 2, 2, swap_); \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_U32:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)(uint32_t)load_bytes(base_ + (int64_t)u_ * 4, 4, swap_); \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_U64:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                (out)[t] = (OUT_T)load_bytes(base_ + (int64_t)u_ * 8, 8, swap_);           \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_F16:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                uint16_t h_ = (uint16_t)load_bytes(base_ + (int64_t)u_ * 2, 2, swap_);     \
                (out)[t] = (OUT_T)hurray__f16_to_f32(h_);                                  \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_BF16:                                                            \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                uint16_t h_ = (uint16_t)load_bytes(base_ + (int64_t)u_ * 2, 2, swap_);     \
                (out)[t] = (OUT_T)hurray__bf16_to_f32(h_);                                 \
            }                                                                              \
            break;                                                                         \
        case HURRAY__READ_F32:                                                             \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                uint32_t b_ = (uint32_t)load_bytes(base_ + (int64_t)u_ * 4, 4, swap_);     \
                float f_;                                                                  \
                memcpy(&f_, &b_, sizeof f_);                                               \
                (out)[t] = (OUT_T)f_;                                                      \
            }                                                                              \
            break;                                                                         \
        default: /* HURRAY__READ_F64 */                                                    \
            for (uint64_t t = 0; t < (n); t++, u_ += (uint64_t)(stride)) {                 \
                uint64_t b_ = load_bytes(base_ + (int64_t)u_ * 8, 8, swap_);               \
                double f_;                                                                 \
                memcpy(&f_, &b_, sizeof f_);                                               \
                (out)[t] = (OUT_T)f_;                                                      \
            }                                                                              \
            break;                                                                         \
        }                                                                                  \
    } while (0)

void hurray__read_f32(const HurrayReader *r, int64_t offset, int64_t stride, uint64_t n, float *out)
{
    if (stride == 1 && !r->swap && r->kind == HURRAY__READ_F32) {
        memcpy(out, r->base + 4 * offset, 4 * n); /* the bits as they are */
        return;
    }
#if HURRAY__DEQUANT_AVX2
    if (stride == 1 && n >= 16 && hurray__dequant_simd()) {
        if (!r->swap && r->kind == HURRAY__READ_F16) {
            hurray__read_f16_avx2(r->base + 2 * offset, n, out);
            return;
        }
        if (!r->swap && r->kind == HURRAY__READ_BF16) {
            hurray__read_bf16_avx2(r->base + 2 * offset, n, out);
            return;
        }
        if (r->kind == HURRAY__READ_CODE8) {
            hurray__read_code8_avx2(r->base + offset, r->table, n, out);
            return;
        }
        /* 4-bit codes LSB first from a whole byte: element 2k in the low
         * nibble of byte k, 2k + 1 in the high one. */
        if (r->kind == HURRAY__READ_LSB && r->width == 4 && offset % 2 == 0) {
            uint64_t pairs = n / 2;
            hurray__read_nibbles_avx2(r->base + offset / 2, r->table, pairs, 0, out);
            offset += (int64_t)(2 * pairs);
            out += 2 * pairs;
            n -= 2 * pairs;
        }
    }
#endif
    READ_LOOP(float, r, offset, stride, n, out);
}

void hurray__read_f64(const HurrayReader *r, int64_t offset, int64_t stride, uint64_t n,
                      double *out)
{
    READ_LOOP(double, r, offset, stride, n, out);
}
