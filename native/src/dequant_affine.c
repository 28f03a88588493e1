/*
 * dequant_affine.c -- scheme affine: x = (q - zero_point) * scale, per
 * tensor, per index of an axis, or per block along an axis.
 *
 * The arithmetic is PyTorch's and ONNX DequantizeLinear's: q, the zero
 * point and the scale are each converted to float64 when the scale part is
 * float64 (PyTorch's per-channel scales are), and to float32 otherwise;
 * then (q - z) * s is evaluated in that precision and rounded once to
 * float32. Nothing is rounded to the scale's own type.
 */
#include "dequant.h"
#include "dtype.h"
#include "status.h"

#define RUN_MAX 256u

/* How many elements from t on share the parameter of element t (all of
 * them when the parameter does not change along the last axis). */
static inline uint64_t param_span(const HurrayDequantJob *job, const HurrayRun *run, uint64_t t)
{
    if (job->param_div == 0) {
        return run->count - t;
    }
    uint64_t left = job->param_div - (run->inner + t) % job->param_div;
    return left < run->count - t ? left : run->count - t;
}

/* The parameter index of run element t. */
static inline uint64_t param_at(const HurrayDequantJob *job, const HurrayRun *run, uint64_t t)
{
    if (job->param_div == 0) {
        return run->param;
    }
    return run->param + (run->inner + t) / job->param_div * job->param_step;
}

/* Parameter segments: elements [0, first) take parameter 0, then every
 * `length` elements the next one (the last segment may be short). */
typedef struct Segments {
    uint64_t first;
    uint64_t length;
} Segments;

static void affine_segments(const float *q, const float *s, const float *z, Segments seg,
                            uint64_t n, float *out, int simd)
{
#if HURRAY__DEQUANT_AVX2
    if (simd) {
        hurray__affine_segments_avx2(q, s, z, seg.first, seg.length, n, out);
        return;
    }
#else
    (void)simd;
#endif
    uint64_t k = 0;
    for (uint64_t start = 0, end = seg.first; start < n; start = end, end += seg.length, k++) {
        uint64_t stop = end < n ? end : n;
        if (z != NULL) {
            for (uint64_t i = start; i < stop; i++) {
                float d = q[i] - z[k];
                out[i] = hurray__first_nan(d, d * s[k]);
            }
        } else {
            for (uint64_t i = start; i < stop; i++) {
                out[i] = hurray__first_nan(q[i], q[i] * s[k]);
            }
        }
    }
}

/* The parameters of a run: one per segment, consecutive in the parameter
 * part at param_step apart; read as a run of their own. */
static Segments run_segments(const HurrayDequantJob *job, const HurrayRun *run, uint64_t *count)
{
    Segments seg;
    if (job->param_div == 0) {
        seg.first = seg.length = run->count;
    } else {
        seg.first = param_span(job, run, 0);
        seg.length = job->param_div;
    }
    *count = seg.first >= run->count ? 1
                                     : 1 + (run->count - seg.first + seg.length - 1) / seg.length;
    return seg;
}

static void affine_run_f32(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    float q[RUN_MAX], s[RUN_MAX], z[RUN_MAX];
    int zero = job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL;
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, q);
    uint64_t segments;
    Segments seg = run_segments(job, run, &segments);
    int64_t first = (int64_t)param_at(job, run, 0), step = (int64_t)job->param_step;
    hurray__read_f32(&job->scale, first, step, segments, s);
    if (zero) {
        hurray__read_f32(&job->zero, first, step, segments, z);
    }
    affine_segments(q, s, zero ? z : NULL, seg, run->count, out, job->simd);
}

/* Float64 scales: the whole formula in float64, rounded once at the end. */
static void affine_run_f64(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    double q[RUN_MAX];
    int zero = job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL;
    hurray__read_f64(&job->values, run->offset, run->stride, run->count, q);
    for (uint64_t t = 0; t < run->count;) {
        int64_t p = (int64_t)param_at(job, run, t);
        uint64_t span = param_span(job, run, t);
        double s, z = 0.0;
        hurray__read_f64(&job->scale, p, 1, 1, &s);
        if (zero) {
            hurray__read_f64(&job->zero, p, 1, 1, &z);
            for (uint64_t i = t; i < t + span; i++) {
                double d = q[i] - z;
                out[i] = (float)hurray__first_nan_f64(d, d * s);
            }
        } else {
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = (float)hurray__first_nan_f64(q[i], q[i] * s);
            }
        }
        t += span;
    }
}

static HurrayStatus affine_prepare(HurrayDequantJob *job)
{
    const HurrayDescriptor *desc = job->desc;
    const HurrayDescriptorPart *values = &desc->parts[HURRAY_ROLE_VALUES - 1];
    const HurrayDescriptorPart *scale = &desc->parts[HURRAY_ROLE_SCALE - 1];
    hurray__reader_init(&job->values, job->part[HURRAY_ROLE_VALUES - 1], values->dtype,
                        desc->packing, desc->byte_order);
    hurray__reader_init(&job->scale, job->part[HURRAY_ROLE_SCALE - 1], scale->dtype,
                        HURRAY_PACKING_NONE, desc->byte_order);
    if (job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL) {
        const HurrayDescriptorPart *zero = &desc->parts[HURRAY_ROLE_ZERO_POINT - 1];
        hurray__reader_init(&job->zero, job->part[HURRAY_ROLE_ZERO_POINT - 1], zero->dtype,
                            HURRAY_PACKING_NONE, desc->byte_order);
    }
    job->use_f64 = scale->dtype == HURRAY_DTYPE_FLOAT64;
    job->run_fn = job->use_f64 ? affine_run_f64 : affine_run_f32;
    hurray__dequant_param_layout(job);
    return HURRAY_OK;
}

const HurrayDequantScheme hurray__dequant_affine = {affine_prepare, hurray__dequant_walk};
