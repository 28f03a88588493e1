/*
 * dequant_graph_kernels.c -- the arithmetic of a step and the conversions
 * between the four arithmetic types (dequant_graph_shared.h), scalar; the AVX2
 * twins (dequant_graph_avx2.c) give the same bits.
 *
 * A step's form in type T: every operation is a float32 operation (a
 * float64 one for T = float64) whose result is rounded to T, which for
 * float16 and bfloat16 is the correctly rounded result (float32 has more
 * than 2p + 2 bits). Order as written: (x - o) * s, x * s + o, x * s - o;
 * no contraction (the library is built with -ffp-contract=off). Where both
 * operands of a product or a sum may be NaN the first one's NaN is kept
 * (hurray__first_nan), as x86 and numpy give it for operands in this order.
 */
#include "dequant_graph_shared.h"

/* One form over the elements [begin, end) of a segment, with scalar
 * parameters, in a float-held type: ROUND rounds a float32 result to T. */
#define FORM_LOOP(ROUND, FIRST_NAN, V, form, xy, begin, end, sv, ov) \
    do {                                                             \
        switch (form) {                                              \
        case HURRAY_FORM_MUL:                                        \
            for (uint64_t i_ = (begin); i_ < (end); i_++) {          \
                V x_ = (xy)[i_];                                     \
                (xy)[i_] = ROUND(FIRST_NAN(x_, x_ * (sv)));          \
            }                                                        \
            break;                                                   \
        case HURRAY_FORM_DIV:                                        \
            for (uint64_t i_ = (begin); i_ < (end); i_++) {          \
                (xy)[i_] = ROUND((xy)[i_] / (sv));                   \
            }                                                        \
            break;                                                   \
        case HURRAY_FORM_SUB_MUL:                                    \
            for (uint64_t i_ = (begin); i_ < (end); i_++) {          \
                V d_ = ROUND((xy)[i_] - (ov));                       \
                (xy)[i_] = ROUND(FIRST_NAN(d_, d_ * (sv)));          \
            }                                                        \
            break;                                                   \
        case HURRAY_FORM_MUL_ADD:                                    \
            for (uint64_t i_ = (begin); i_ < (end); i_++) {          \
                V x_ = (xy)[i_];                                     \
                V m_ = ROUND(FIRST_NAN(x_, x_ * (sv)));              \
                (xy)[i_] = ROUND(FIRST_NAN(m_, m_ + (ov)));          \
            }                                                        \
            break;                                                   \
        default: /* HURRAY_FORM_MUL_SUB */                           \
            for (uint64_t i_ = (begin); i_ < (end); i_++) {          \
                V x_ = (xy)[i_];                                     \
                V m_ = ROUND(FIRST_NAN(x_, x_ * (sv)));              \
                (xy)[i_] = ROUND(m_ - (ov));                         \
            }                                                        \
            break;                                                   \
        }                                                            \
    } while (0)

#define KEEP(v) (v)

static void apply_f32(uint32_t form, float *xy, const uint32_t *start, uint64_t segments,
                      const float *s, const float *o)
{
    for (uint64_t k = 0; k < segments; k++) {
        float sv = s[k], ov = o != NULL ? o[k] : 0.0f;
        FORM_LOOP(KEEP, hurray__first_nan, float, form, xy, start[k], start[k + 1], sv, ov);
    }
}

static void apply_f16(uint32_t form, float *xy, const uint32_t *start, uint64_t segments,
                      const float *s, const float *o)
{
    for (uint64_t k = 0; k < segments; k++) {
        float sv = s[k], ov = o != NULL ? o[k] : 0.0f;
        FORM_LOOP(hurray__g_round_f16, hurray__first_nan, float, form, xy, start[k], start[k + 1],
                  sv, ov);
    }
}

static void apply_bf16(uint32_t form, float *xy, const uint32_t *start, uint64_t segments,
                       const float *s, const float *o)
{
    for (uint64_t k = 0; k < segments; k++) {
        float sv = s[k], ov = o != NULL ? o[k] : 0.0f;
        FORM_LOOP(hurray__g_round_bf16, hurray__first_nan, float, form, xy, start[k], start[k + 1],
                  sv, ov);
    }
}

static void apply_f64(uint32_t form, double *xy, const uint32_t *start, uint64_t segments,
                      const double *s, const double *o)
{
    for (uint64_t k = 0; k < segments; k++) {
        double sv = s[k], ov = o != NULL ? o[k] : 0.0;
        FORM_LOOP(KEEP, hurray__first_nan_f64, double, form, xy, start[k], start[k + 1], sv, ov);
    }
}

void hurray__graph_apply(uint32_t form, uint32_t t, void *xy, uint64_t n, const uint32_t *start,
                         uint64_t segments, const void *s, const void *o, int simd)
{
#if HURRAY__DEQUANT_AVX2
    if (simd && t != HURRAY__G_F64) {
        hurray__graph_apply_avx2(form, t, xy, n, start, segments, s, o);
        return;
    }
#else
    (void)simd;
#endif
    (void)n;
    switch (t) {
    case HURRAY__G_F32: apply_f32(form, xy, start, segments, s, o); break;
    case HURRAY__G_F16: apply_f16(form, xy, start, segments, s, o); break;
    case HURRAY__G_BF16: apply_bf16(form, xy, start, segments, s, o); break;
    default: apply_f64(form, xy, start, segments, s, o); break;
    }
}

void hurray__graph_convert(uint32_t from, uint32_t to, const void *src, uint64_t n, void *dst,
                           int simd)
{
    if (from == HURRAY__G_F64) {
        const double *d = src;
        if (to == HURRAY__G_F64) {
            if (dst != src) {
                memmove(dst, src, n * sizeof(double));
            }
            return;
        }
        float *f = dst; /* never src: a double is wider */
        for (uint64_t k = 0; k < n; k++) {
            f[k] = hurray__g_round_f64_to(to, d[k]);
        }
        return;
    }
    const float *f = src;
    if (to == HURRAY__G_F64) {
        double *d = dst; /* never src */
        for (uint64_t k = 0; k < n; k++) {
            d[k] = f[k];
        }
        return;
    }
    float *g = dst;
    if (g != f) {
        memmove(g, f, n * sizeof(float));
    }
    /* float16 and bfloat16 values are float32 values: only a narrower
     * type than the source's rounds. */
    if (to == HURRAY__G_F32 || to == from) {
        return;
    }
#if HURRAY__DEQUANT_AVX2
    if (simd) {
        hurray__graph_round_avx2(to, g, n);
        return;
    }
#else
    (void)simd;
#endif
    for (uint64_t k = 0; k < n; k++) {
        g[k] = hurray__g_round_f32_to(to, g[k]);
    }
}
