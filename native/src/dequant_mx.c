/*
 * dequant_mx.c -- scheme microscaling: x = (v * block_scale) * global_scale
 * in float32 (OCP MX with E8M0 scales, NVFP4 with E4M3 scales and a float32
 * global scale), with row-major or SWIZZLED_128X4 scales.
 *
 * An E8M0 scale of 0xFF is NaN and an E4M3 NaN is NaN (the code tables of
 * dequant_values.c); products beyond float32's range are infinite. Both
 * are values, not errors.
 */
#include "dequant.h"
#include "dtype.h"
#include "status.h"

#define RUN_MAX 256u

static inline uint64_t param_span(const HurrayDequantJob *job, const HurrayRun *run, uint64_t t)
{
    if (job->param_div == 0) {
        return run->count - t;
    }
    uint64_t left = job->param_div - (run->inner + t) % job->param_div;
    return left < run->count - t ? left : run->count - t;
}

/* The element of the scale part that holds parameter p (row-major index
 * into the scale matrix). */
static inline int64_t scale_element(const HurrayDequantJob *job, uint64_t p)
{
    if (job->swizzle_cols == 0) {
        return (int64_t)p;
    }
    uint64_t cols = job->swizzle_cols;
    return (int64_t)hurray__swizzled_index(p / cols, p % cols, cols);
}

static void mx_run(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    float v[RUN_MAX];
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, v);
    for (uint64_t t = 0; t < run->count;) {
        uint64_t p = run->param;
        if (job->param_div != 0) {
            p += (run->inner + t) / job->param_div * job->param_step;
        }
        uint64_t span = param_span(job, run, t);
        float s;
        hurray__read_f32(&job->scale, scale_element(job, p), 1, 1, &s);
        if (job->has_global) {
            float g = job->global_scale;
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = (v[i] * s) * g;
            }
        } else {
            for (uint64_t i = t; i < t + span; i++) {
                out[i] = v[i] * s;
            }
        }
        t += span;
    }
}

static HurrayStatus mx_prepare(HurrayDequantJob *job)
{
    const HurrayDescriptor *desc = job->desc;
    const HurrayDescriptorPart *values = &desc->parts[HURRAY_ROLE_VALUES - 1];
    const HurrayDescriptorPart *scale = &desc->parts[HURRAY_ROLE_SCALE - 1];
    hurray__reader_init(&job->values, job->part[HURRAY_ROLE_VALUES - 1], values->dtype,
                        desc->packing, desc->byte_order);
    hurray__reader_init(&job->scale, job->part[HURRAY_ROLE_SCALE - 1], scale->dtype,
                        HURRAY_PACKING_NONE, desc->byte_order);
    job->has_global = job->part[HURRAY_ROLE_GLOBAL_SCALE - 1] != NULL;
    job->global_scale = 1.0f;
    if (job->has_global) {
        HurrayReader global;
        hurray__reader_init(&global, job->part[HURRAY_ROLE_GLOBAL_SCALE - 1], HURRAY_DTYPE_FLOAT32,
                            HURRAY_PACKING_NONE, desc->byte_order);
        hurray__read_f32(&global, 0, 1, 1, &job->global_scale);
    }
    /* Validation allows the swizzled layout with rank 2 and axis 1 only. */
    job->swizzle_cols = scale->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4
                            ? desc->shape[1] / desc->block_size
                            : 0;
    job->run_fn = mx_run;
    hurray__dequant_param_layout(job);
    return HURRAY_OK;
}

const HurrayDequantScheme hurray__dequant_mx = {mx_prepare, hurray__dequant_walk};
