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
#include "dequant_shared.h"
#include "dtype.h"
#include "status.h"

#define RUN_MAX 256u

static void affine_segments(const float *q, const float *s, const float *z, HurraySegments seg,
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

static void affine_run_f32(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    float q[RUN_MAX], s[RUN_MAX], z[RUN_MAX];
    int zero = job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL;
    /* The run's parameters, one per segment, read as a run of their own. */
    HurraySegments seg = hurray__run_segments(job, run);
    int64_t first = (int64_t)seg.param, step = (int64_t)job->param_step;
    hurray__read_f32(&job->scale, first, step, seg.count, s);
    if (zero) {
        hurray__read_f32(&job->zero, first, step, seg.count, z);
    }
#if HURRAY__DEQUANT_AVX2
    int codes = hurray__fused_codes(&job->values);
    if (job->simd && run->stride == 1 && codes != 0) {
        /* Contiguous bytes or nibbles: decoded inside the arithmetic. */
        hurray__affine_codes_avx2(job->values.base, run->offset, codes == 2, job->values.table, s,
                                  zero ? z : NULL, seg.first, seg.length, run->count, out);
        return;
    }
#endif
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, q);
    affine_segments(q, s, zero ? z : NULL, seg, run->count, out, job->simd);
}

/* Float64 scales: the whole formula in float64, rounded once at the end. */
static void affine_run_f64(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    double q[RUN_MAX];
    int zero = job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL;
    hurray__read_f64(&job->values, run->offset, run->stride, run->count, q);
    HurraySegments seg = hurray__run_segments(job, run);
    uint64_t k = 0;
    for (uint64_t start = 0, end = seg.first; start < run->count;
         start = end, end += seg.length, k++) {
        uint64_t stop = end < run->count ? end : run->count;
        int64_t p = (int64_t)(seg.param + k * job->param_step);
        double s, z = 0.0;
        hurray__read_f64(&job->scale, p, 1, 1, &s);
        if (zero) {
            hurray__read_f64(&job->zero, p, 1, 1, &z);
            for (uint64_t i = start; i < stop; i++) {
                double d = q[i] - z;
                out[i] = (float)hurray__first_nan_f64(d, d * s);
            }
        } else {
            for (uint64_t i = start; i < stop; i++) {
                out[i] = (float)hurray__first_nan_f64(q[i], q[i] * s);
            }
        }
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
    job->run_fn = scale->dtype == HURRAY_DTYPE_FLOAT64 ? affine_run_f64 : affine_run_f32;
    hurray__dequant_param_layout(job);
    return HURRAY_OK;
}

const HurrayDequantScheme hurray__dequant_affine = {NULL, affine_prepare, hurray__dequant_walk};
