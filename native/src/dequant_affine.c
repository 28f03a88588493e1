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

/* The parameter index of run element t. */
static inline uint64_t param_at(const HurrayDequantJob *job, const HurrayRun *run, uint64_t t)
{
    return run->param + (run->inner + t) / job->param_div * job->param_step;
}

/* How many elements from t on share the parameter of element t. */
static inline uint64_t param_span(const HurrayDequantJob *job, const HurrayRun *run, uint64_t t)
{
    if (job->param_div == 0) {
        return run->count - t;
    }
    uint64_t left = job->param_div - (run->inner + t) % job->param_div;
    return left < run->count - t ? left : run->count - t;
}

static int has_zero(const HurrayDequantJob *job)
{
    return job->part[HURRAY_ROLE_ZERO_POINT - 1] != NULL;
}

static void affine_run_f32(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    float q[RUN_MAX];
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, q);
    for (uint64_t t = 0; t < run->count;) {
        uint64_t p = job->param_div == 0 ? run->param : param_at(job, run, t);
        uint64_t span = param_span(job, run, t);
        float s, z = 0.0f;
        hurray__read_f32(&job->scale, (int64_t)p, 1, 1, &s);
        if (has_zero(job)) {
            hurray__read_f32(&job->zero, (int64_t)p, 1, 1, &z);
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = (q[i] - z) * s;
            }
        } else {
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = q[i] * s;
            }
        }
        t += span;
    }
}

static void affine_run_f64(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    double q[RUN_MAX];
    hurray__read_f64(&job->values, run->offset, run->stride, run->count, q);
    for (uint64_t t = 0; t < run->count;) {
        uint64_t p = job->param_div == 0 ? run->param : param_at(job, run, t);
        uint64_t span = param_span(job, run, t);
        double s, z = 0.0;
        hurray__read_f64(&job->scale, (int64_t)p, 1, 1, &s);
        if (has_zero(job)) {
            hurray__read_f64(&job->zero, (int64_t)p, 1, 1, &z);
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = (float)((q[i] - z) * s);
            }
        } else {
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = (float)(q[i] * s);
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
