/*
 * dequant_mx.c -- scheme microscaling: x = (v * block_scale) * global_scale
 * in float32 (OCP MX with E8M0 scales, NVFP4 with E4M3 scales and a float32
 * global scale), with row-major or SWIZZLED_128X4 scales.
 *
 * An E8M0 scale of 0xFF is NaN and an E4M3 NaN is NaN (the code tables of
 * dequant_values.c); products beyond float32's range are infinite. Both
 * are values, not errors.
 */
#include "dequant_shared.h"
#include "dtype.h"
#include "status.h"

#define RUN_MAX 256u

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

/* Elements [0, first) take scale 0, then every `length` elements the next
 * (the last segment may be short). */
static void scaled_segments(const float *v, const float *s, const float *g, uint64_t first,
                            uint64_t length, uint64_t n, float *out, int simd)
{
#if HURRAY__DEQUANT_AVX2
    if (simd) {
        hurray__scaled_segments_avx2(v, s, g, first, length, n, out);
        return;
    }
#else
    (void)simd;
#endif
    uint64_t k = 0;
    for (uint64_t start = 0, end = first; start < n; start = end, end += length, k++) {
        uint64_t stop = end < n ? end : n;
        for (uint64_t i = start; i < stop; i++) {
            float p = hurray__first_nan(v[i], v[i] * s[k]);
            out[i] = g != NULL ? hurray__first_nan(p, p * *g) : p;
        }
    }
}

static void mx_run(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    float v[RUN_MAX], s[RUN_MAX];
    const float *g = job->has_global ? &job->global_scale : NULL;
    /* The scales of the run's segments: p, p + param_step, ... */
    HurraySegments seg = hurray__run_segments(job, run);
    if (job->swizzle_cols == 0) {
        hurray__read_f32(&job->scale, (int64_t)seg.param, (int64_t)job->param_step, seg.count, s);
    } else {
        for (uint64_t k = 0; k < seg.count; k++) {
            int64_t at = scale_element(job, seg.param + k * job->param_step);
            hurray__read_f32(&job->scale, at, 1, 1, s + k);
        }
    }
#if HURRAY__DEQUANT_AVX2
    int codes = hurray__fused_codes(&job->values);
    if (job->simd && run->stride == 1 && codes != 0) {
        hurray__scaled_codes_avx2(job->values.base, run->offset, codes == 2, job->values.table, s,
                                  g, seg.first, seg.length, run->count, out);
        return;
    }
#endif
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, v);
    scaled_segments(v, s, g, seg.first, seg.length, run->count, out, job->simd);
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

const HurrayDequantScheme hurray__dequant_mx = {NULL, mx_prepare, hurray__dequant_walk};
