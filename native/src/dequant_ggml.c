/*
 * dequant_ggml.c -- scheme ggml: the block formats of ggml, one decoder per
 * type (layouts in QUANT-FORMATS.md § 8.2 and ADR-055).
 *
 * Each decoder evaluates its formula in float32 in the operation order of
 * gguf-py's gguf.quants (the reference the tests compare with), which for
 * every type but one is also ggml's dequantize_row order; the products are
 * never fused. Where they differ is recorded in ADR-055. Grids and tables
 * are ggml's published values (ggml_grids.c).
 *
 * In the 32-element formats byte j of the nibbles holds element j (low
 * nibble) and element j + 16 (high nibble): "split halves".
 */
#include "dequant_ggml_shared.h"
#include "dtype.h"
#include "ggml_grids.h"
#include "status.h"

/* IQ1's shift of the grid values, by its sign bit (again a load). */
static const float DELTA[2] = {0.125f, -0.125f};

/* ---- 32-element formats ------------------------------------------------- */

static void q4_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)((qs[j] & 15) - 8);
        y[j + 16] = d * (float)((qs[j] >> 4) - 8);
    }
}

static void q4_1(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b), m = hurray__ggml_f16_at(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        float lo = d * (float)(qs[j] & 15), hi = d * (float)(qs[j] >> 4);
        y[j] = hurray__first_nan(lo, lo + m);
        y[j + 16] = hurray__first_nan(hi, hi + m);
    }
}

static void q5_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    uint32_t qh = hurray__le32(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 15) | (int)((qh >> j) & 1u) << 4;
        int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
        y[j] = d * (float)(lo - 16);
        y[j + 16] = d * (float)(hi - 16);
    }
}

static void q5_1(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b), m = hurray__ggml_f16_at(b + 2);
    uint32_t qh = hurray__le32(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        int lo = (qs[j] & 15) | (int)((qh >> j) & 1u) << 4;
        int hi = (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1u) << 4;
        float a = d * (float)lo, b = d * (float)hi;
        y[j] = hurray__first_nan(a, a + m);
        y[j + 16] = hurray__first_nan(b, b + m);
    }
}

static void q8_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    for (int j = 0; j < 32; j++) {
        y[j] = (float)(int8_t)b[2 + j] * d;
    }
}

static void iq4_nl(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)hurray__ggml_iq4nl_values[qs[j] & 15];
        y[j + 16] = d * (float)hurray__ggml_iq4nl_values[qs[j] >> 4];
    }
}

static void mxfp4(const uint8_t *b, float *y)
{
    float d = hurray__ggml_e8m0_half(b[0]);
    const uint8_t *qs = b + 1;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)hurray__ggml_fp4_values[qs[j] & 15];
        y[j + 16] = d * (float)hurray__ggml_fp4_values[qs[j] >> 4];
    }
}

static void nvfp4(const uint8_t *b, float *y)
{
    const uint8_t *qs = b + 4;
    for (int s = 0; s < 4; s++) {
        float d = hurray__ggml_ue4m3_half(b[s]);
        for (int j = 0; j < 8; j++) {
            uint8_t q = qs[8 * s + j];
            y[16 * s + j] = d * (float)hurray__ggml_fp4_values[q & 15];
            y[16 * s + 8 + j] = d * (float)hurray__ggml_fp4_values[q >> 4];
        }
    }
}

/* Q1_0 (128 elements): bit j of the 16 bytes, LSB first, is +d or -d. */
static void q1_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const float value[2] = {-d, d}; /* a load, not a branch on random bits */
    for (int k = 0; k < 16; k++) {
        uint8_t bits = b[2 + k];
        for (int j = 0; j < 8; j++) {
            y[8 * k + j] = value[(bits >> j) & 1];
        }
    }
}

/* Q2_0 (64 elements): two bits per element, LSB first; (q - 1) * d. */
static void q2_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    for (int k = 0; k < 16; k++) {
        uint8_t bits = b[2 + k];
        for (int j = 0; j < 4; j++) {
            y[4 * k + j] = (float)(((bits >> (2 * j)) & 3) - 1) * d;
        }
    }
}

/* ---- K-quants (256 elements) -------------------------------------------- */

/* Q2_K: 16 sub-blocks of 16; element 128h + 32j + 16part + l takes bits
 * 2j of byte 32h + 16part + l and the scale byte 8h + 2j + part. */
static void q2_k(const uint8_t *b, float *y)
{
    const uint8_t *scales = b, *qs = b + 16;
    float d = hurray__ggml_f16_at(b + 80), dmin = hurray__ggml_f16_at(b + 82);
    for (int k = 0; k < 16; k++) {
        float dl = d * (float)(scales[k] & 15);
        float ml = dmin * (float)(scales[k] >> 4);
        int h = k / 8, j = (k % 8) / 2, part = k % 2;
        const uint8_t *q = qs + 32 * h + 16 * part;
        for (int l = 0; l < 16; l++) {
            y[16 * k + l] = dl * (float)((q[l] >> (2 * j)) & 3) - ml;
        }
    }
}

/* Q3_K: as Q2_K's layout, 6-bit signed scales, the third bit in hmask
 * (clear means minus 4). */
static void q3_k(const uint8_t *b, float *y)
{
    const uint8_t *hmask = b, *qs = b + 32, *packed = b + 96;
    float d = hurray__ggml_f16_at(b + 108);
    for (int k = 0; k < 16; k++) {
        float dl = d * (float)hurray__ggml_k3_scale(packed, k);
        int h = k / 8, j = (k % 8) / 2, part = k % 2;
        const uint8_t *q = qs + 32 * h + 16 * part;
        const uint8_t *hm = hmask + 16 * part;
        uint8_t bit = (uint8_t)(1u << (4 * h + j));
        for (int l = 0; l < 16; l++) {
            int v = ((q[l] >> (2 * j)) & 3) - ((hm[l] & bit) ? 0 : 4);
            y[16 * k + l] = dl * (float)v;
        }
    }
}

static void q4_k(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b), dmin = hurray__ggml_f16_at(b + 2);
    const uint8_t *packed = b + 4, *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        uint8_t sc, m;
        hurray__ggml_k4_scale_min(packed, 2 * c, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        hurray__ggml_k4_scale_min(packed, 2 * c + 1, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        const uint8_t *q = qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d1 * (float)(q[l] & 15) - m1;
            y[64 * c + 32 + l] = d2 * (float)(q[l] >> 4) - m2;
        }
    }
}

static void q5_k(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b), dmin = hurray__ggml_f16_at(b + 2);
    const uint8_t *packed = b + 4, *qh = b + 16, *qs = b + 48;
    for (int c = 0; c < 4; c++) {
        uint8_t sc, m;
        hurray__ggml_k4_scale_min(packed, 2 * c, &sc, &m);
        float d1 = d * (float)sc, m1 = dmin * (float)m;
        hurray__ggml_k4_scale_min(packed, 2 * c + 1, &sc, &m);
        float d2 = d * (float)sc, m2 = dmin * (float)m;
        const uint8_t *q = qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            int lo = (q[l] & 15) | ((qh[l] >> (2 * c)) & 1) << 4;
            int hi = (q[l] >> 4) | ((qh[l] >> (2 * c + 1)) & 1) << 4;
            y[64 * c + l] = d1 * (float)lo - m1;
            y[64 * c + 32 + l] = d2 * (float)hi - m2;
        }
    }
}

static void q6_k(const uint8_t *b, float *y)
{
    const uint8_t *ql = b, *qh = b + 128;
    const int8_t *scales = (const int8_t *)(b + 192);
    float d = hurray__ggml_f16_at(b + 208);
    for (int n = 0; n < 2; n++) {
        const uint8_t *l4 = ql + 64 * n, *h2 = qh + 32 * n;
        for (int g = 0; g < 4; g++) {
            const uint8_t *lo = l4 + 32 * (g % 2);
            int shift = 4 * (g / 2);
            for (int half = 0; half < 2; half++) {
                float ds = d * (float)scales[8 * n + 2 * g + half];
                for (int l = 16 * half; l < 16 * half + 16; l++) {
                    int q = ((lo[l] >> shift) & 15) | ((h2[l] >> (2 * g)) & 3) << 4;
                    y[128 * n + 32 * g + l] = ds * (float)(q - 32);
                }
            }
        }
    }
}

/* ---- ternary (256 elements) --------------------------------------------- */

/* Trit n of a byte that packs five (or four) base-3 digits scaled to
 * 0..255: ((q * 3^n mod 256) * 3) >> 8. */
static inline int trit(uint8_t q, uint8_t pow3)
{
    uint8_t shifted = (uint8_t)(q * pow3);
    return (int)(((uint16_t)shifted * 3) >> 8);
}

static void tq1_0(const uint8_t *b, float *y)
{
    static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t *qs = b, *qh = b + 48;
    float d = hurray__ggml_f16_at(b + 52);
    int e = 0;
    for (int n = 0; n < 5; n++) {
        for (int m = 0; m < 32; m++) {
            y[e++] = d * (float)(trit(qs[m], pow3[n]) - 1);
        }
    }
    for (int n = 0; n < 5; n++) {
        for (int m = 0; m < 16; m++) {
            y[e++] = d * (float)(trit(qs[32 + m], pow3[n]) - 1);
        }
    }
    for (int n = 0; n < 4; n++) {
        for (int m = 0; m < 4; m++) {
            y[e++] = d * (float)(trit(qh[m], pow3[n]) - 1);
        }
    }
}

static void tq2_0(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b + 64);
    for (int c = 0; c < 2; c++) {
        for (int l = 0; l < 4; l++) {
            for (int m = 0; m < 32; m++) {
                int q = (b[32 * c + m] >> (2 * l)) & 3;
                y[128 * c + 32 * l + m] = d * (float)(q - 1);
            }
        }
    }
}

/* ---- IQ types (256 elements, 8 sub-blocks of 32) ------------------------- */

/* Eight magnitudes of a grid entry (one per byte, lowest first), each
 * times db, then times -1 where its bit of `signs` is set. */
static inline void grid8(float db, uint64_t entry, uint8_t signs, float *y)
{
    for (int j = 0; j < 8; j++) {
        y[j] = hurray__ggml_signed(db * (float)((entry >> (8 * j)) & 0xFF), (signs >> j) & 1u);
    }
}

static void iq2_xxs(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *q = b + 2 + 8 * ib;
        uint32_t aux = hurray__le32(q + 4);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++) {
            uint8_t signs = hurray__ggml_ksigns[(aux >> (7 * l)) & 127];
            grid8(db, hurray__ggml_iq2xxs_grid[q[l]], signs, y + 32 * ib + 8 * l);
        }
    }
}

static void iq2_xs(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *scales = b + 66;
    for (int ib = 0; ib < 8; ib++) {
        float db[2] = {d * (0.5f + (float)(scales[ib] & 15)) * 0.25f,
                       d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++) {
            uint16_t q = hurray__le16(b + 2 + 2 * (4 * ib + l));
            grid8(db[l / 2], hurray__ggml_iq2xs_grid[q & 511], hurray__ggml_ksigns[q >> 9],
                  y + 32 * ib + 8 * l);
        }
    }
}

static void iq2_s(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
    for (int ib = 0; ib < 8; ib++) {
        float db[2] = {d * (0.5f + (float)(scales[ib] & 15)) * 0.25f,
                       d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f};
        for (int l = 0; l < 4; l++) {
            uint32_t index = qs[4 * ib + l] | ((uint32_t)(qh[ib] >> (2 * l)) & 3u) << 8;
            grid8(db[l / 2], hurray__ggml_iq2s_grid[index], signs[4 * ib + l], y + 32 * ib + 8 * l);
        }
    }
}

/* Four magnitudes of a 3-bit grid entry, with sign bits 0-3 of `signs`. */
static inline void grid4(float db, uint32_t entry, uint32_t signs, float *y)
{
    for (int j = 0; j < 4; j++) {
        y[j] = hurray__ggml_signed(db * (float)((entry >> (8 * j)) & 0xFF), (signs >> j) & 1u);
    }
}

static void iq3_xxs(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2, *packed = b + 66;
    for (int ib = 0; ib < 8; ib++) {
        uint32_t aux = hurray__le32(packed + 4 * ib);
        float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++) {
            uint8_t signs = hurray__ggml_ksigns[(aux >> (7 * l)) & 127];
            float *out = y + 32 * ib + 8 * l;
            grid4(db, hurray__ggml_iq3xxs_grid[qs[8 * ib + 2 * l]], signs, out);
            grid4(db, hurray__ggml_iq3xxs_grid[qs[8 * ib + 2 * l + 1]], (uint32_t)signs >> 4,
                  out + 4);
        }
    }
}

static void iq3_s(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
    for (int ib = 0; ib < 8; ib++) {
        float db = d * (float)(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 15));
        for (int l = 0; l < 4; l++) {
            uint8_t s = signs[4 * ib + l];
            float *out = y + 32 * ib + 8 * l;
            for (int half = 0; half < 2; half++) {
                int k = 2 * l + half; /* 0..7 within the sub-block */
                uint32_t index = qs[8 * ib + k] | ((uint32_t)(qh[ib] >> k) & 1u) << 8;
                grid4(db, hurray__ggml_iq3s_grid[index], (uint32_t)s >> (4 * half), out + 4 * half);
            }
        }
    }
}

/* Eight values of an IQ1 grid entry (int8 in {-1, 0, 1}), each plus delta,
 * times dl. */
static inline void grid1(float dl, uint64_t entry, float delta, float *y)
{
    for (int j = 0; j < 8; j++) {
        y[j] = dl * ((float)(int8_t)((entry >> (8 * j)) & 0xFF) + delta);
    }
}

static void iq1_s(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    const uint8_t *qs = b + 2, *qh = b + 34;
    for (int ib = 0; ib < 8; ib++) {
        uint16_t h = hurray__le16(qh + 2 * ib);
        float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
        float delta = DELTA[h >> 15];
        for (int l = 0; l < 4; l++) {
            uint32_t index = qs[4 * ib + l] | ((uint32_t)(h >> (3 * l)) & 7u) << 8;
            grid1(dl, hurray__ggml_iq1s_grid[index], delta, y + 32 * ib + 8 * l);
        }
    }
}

static void iq1_m(const uint8_t *b, float *y)
{
    const uint8_t *qs = b, *qh = b + 32, *packed = b + 48;
    uint16_t sc[4];
    for (int i = 0; i < 4; i++) {
        sc[i] = hurray__le16(packed + 2 * i);
    }
    /* The fp16 super-scale is the top nibbles of the four scale words. */
    uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                (sc[3] & 0xF000));
    float d = hurray__f16_to_f32(dbits);
    for (int ib = 0; ib < 8; ib++) {
        int shift = 6 * (ib % 2);
        float dl[2] = {d * (float)(2 * ((sc[ib / 2] >> shift) & 7) + 1),
                       d * (float)(2 * ((sc[ib / 2] >> (shift + 3)) & 7) + 1)};
        for (int l = 0; l < 4; l++) {
            uint8_t h = (uint8_t)(qh[2 * ib + l / 2] >> (4 * (l % 2)));
            uint32_t index = qs[4 * ib + l] | (uint32_t)(h & 7) << 8;
            float delta = DELTA[(h >> 3) & 1];
            grid1(dl[l / 2], hurray__ggml_iq1s_grid[index], delta, y + 32 * ib + 8 * l);
        }
    }
}

static void iq4_xs(const uint8_t *b, float *y)
{
    float d = hurray__ggml_f16_at(b);
    uint16_t scales_h = hurray__le16(b + 2);
    const uint8_t *scales_l = b + 4, *qs = b + 8;
    for (int ib = 0; ib < 8; ib++) {
        int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 15) | ((scales_h >> (2 * ib)) & 3) << 4;
        float dl = d * (float)(ls - 32);
        for (int j = 0; j < 16; j++) {
            uint8_t q = qs[16 * ib + j];
            y[32 * ib + j] = dl * (float)hurray__ggml_iq4nl_values[q & 15];
            y[32 * ib + 16 + j] = dl * (float)hurray__ggml_iq4nl_values[q >> 4];
        }
    }
}

/* ---- the scheme ----------------------------------------------------------- */

static HurrayGgmlBlockFn block_decoder(uint32_t ggml_type)
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

HurrayGgmlBlockFn hurray__ggml_block_decoder(uint32_t ggml_type)
{
    return block_decoder(ggml_type); /* the graph scheme's GGML nodes */
}

static HurrayStatus ggml_prepare(HurrayDequantJob *job)
{
    uint32_t type = job->desc->ggml_type;
    job->block_fn = block_decoder(type);
    if (job->block_fn == NULL ||
        !hurray__ggml_block(type, &job->block_elements, &job->block_bytes)) {
        /* The descriptor check knows every type the table does; a type
         * without a decoder would be a build missing one. */
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_dequantize: GGML type %s has no decoder in this build",
                            hurray__ggml_name(type) ? hurray__ggml_name(type) : "?");
    }
    job->row_fn = NULL;
#if HURRAY__DEQUANT_AVX2
    if (job->simd) {
        job->row_fn = hurray__ggml_row_avx2(type);
    }
#endif
    return HURRAY_OK;
}

/* Rows are whole blocks and tiles are whole blocks, so first and count are
 * multiples of the block's elements. */
static void ggml_run(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out)
{
    uint64_t blocks = count / job->block_elements;
    const uint8_t *in = job->part[HURRAY_ROLE_VALUES - 1] +
                        first / job->block_elements * job->block_bytes;
    if (job->row_fn != NULL) {
        job->row_fn(in, blocks, out);
        return;
    }
    for (uint64_t i = 0; i < blocks; i++) {
        job->block_fn(in + i * job->block_bytes, out + i * job->block_elements);
    }
}

const HurrayDequantScheme hurray__dequant_ggml = {NULL, ggml_prepare, ggml_run};
