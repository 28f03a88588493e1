/*
 * dequant_walk.c -- the logical elements of a strided tensor, in row-major
 * order, as runs along the last axis: what the plain, affine and
 * microscaling schemes walk. GGML tensors are row-major contiguous and
 * need no walk.
 *
 * A range of elements starts anywhere (a tile of a row range); its first
 * element's index is worked out once, by division, and every later run
 * follows by carrying the index like an odometer. Each run's element
 * offset, and the parameter index of its coordinates but the last, are
 * sums over the dimensions: no product here can overflow, because the
 * descriptor check proved the reach of every element fits 63 bits.
 */
#include "dequant_shared.h"

/* Runs are cut to this length, so that the schemes' buffers for one run
 * live on the stack. */
#define RUN_MAX 256u

void hurray__dequant_param_layout(HurrayDequantJob *job)
{
    const HurrayDescriptor *desc = job->desc;
    uint32_t rank = desc->rank;
    uint64_t strides[HURRAY_MAX_RANK], divs[HURRAY_MAX_RANK];
    for (uint32_t k = 0; k < rank; k++) {
        strides[k] = 0;
        divs[k] = 1;
    }
    if (desc->granularity == HURRAY_GRANULARITY_PER_AXIS) {
        strides[desc->axis] = 1;
    } else if (desc->granularity == HURRAY_GRANULARITY_PER_BLOCK) {
        /* Per block: the parameters have the tensor's shape with the axis
         * divided by the block size, row-major. */
        divs[desc->axis] = desc->block_size;
        uint64_t step = 1;
        for (uint32_t k = rank; k-- > 0;) {
            strides[k] = step;
            uint64_t dim = desc->shape[k] / divs[k];
            step *= dim == 0 ? 1 : dim;
        }
    }
    /* The walk's dimensions, from the last: a dimension of one element
     * steps nowhere; one whose values and parameters step as a continuation
     * of the dimension after it joins it. */
    uint32_t n = 0; /* built innermost first, reversed below */
    for (uint32_t k = rank; k-- > 0;) {
        uint64_t dim = desc->shape[k];
        int64_t stride = desc->strides[k];
        if (dim == 1) {
            continue;
        }
        if (n > 0) {
            uint32_t in = n - 1;
            int64_t follows;
            int joins = divs[k] == 1 && job->param_divs[in] == 1 &&
                        !__builtin_mul_overflow(job->walk_strides[in], (int64_t)job->walk_shape[in],
                                                &follows) &&
                        stride == follows &&
                        strides[k] == job->param_strides[in] * job->walk_shape[in];
            if (joins) {
                job->walk_shape[in] *= dim; /* at most the element count: no overflow */
                continue;
            }
        }
        job->walk_shape[n] = dim;
        job->walk_strides[n] = stride;
        job->param_strides[n] = strides[k];
        job->param_divs[n] = divs[k];
        n++;
    }
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t j = n - 1 - i;
        uint64_t shape = job->walk_shape[i], pstride = job->param_strides[i];
        uint64_t pdiv = job->param_divs[i];
        int64_t stride = job->walk_strides[i];
        job->walk_shape[i] = job->walk_shape[j];
        job->walk_strides[i] = job->walk_strides[j];
        job->param_strides[i] = job->param_strides[j];
        job->param_divs[i] = job->param_divs[j];
        job->walk_shape[j] = shape;
        job->walk_strides[j] = stride;
        job->param_strides[j] = pstride;
        job->param_divs[j] = pdiv;
    }
    job->walk_rank = n;
    job->param_div = 0;
    job->param_step = 0;
    if (n > 0 && job->param_strides[n - 1] != 0) {
        job->param_div = job->param_divs[n - 1];
        job->param_step = job->param_strides[n - 1];
    }
}

HurraySegments hurray__run_segments(const HurrayDequantJob *job, const HurrayRun *run)
{
    HurraySegments seg = {run->param, run->count, run->count, 1};
    if (job->param_div != 0) {
        seg.param += run->inner / job->param_div * job->param_step;
        seg.first = job->param_div - run->inner % job->param_div;
        seg.length = job->param_div;
        if (seg.first < run->count) {
            seg.count = 1 + (run->count - seg.first + seg.length - 1) / seg.length;
        } else {
            seg.first = run->count;
        }
    }
    return seg;
}

void hurray__dequant_walk(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out)
{
    uint32_t rank = job->walk_rank;
    HurrayRun run = {0};
    if (rank == 0) { /* one element: every dimension of the shape is 1 */
        run.count = 1;
        job->run_fn(job, &run, out);
        return;
    }
    const uint64_t *shape = job->walk_shape;
    const int64_t *strides = job->walk_strides;
    uint32_t last = rank - 1;
    uint64_t index[HURRAY_MAX_RANK];
    uint64_t rest = first;
    for (uint32_t k = rank; k-- > 0;) {
        index[k] = rest % shape[k]; /* the range lies inside the tensor: no dimension is 0 */
        rest /= shape[k];
    }
    uint64_t done = 0;
    while (done < count) {
        int64_t offset = 0;
        uint64_t param = 0;
        for (uint32_t k = 0; k < last; k++) {
            offset += (int64_t)index[k] * strides[k];
            param += index[k] / job->param_divs[k] * job->param_strides[k];
        }
        uint64_t inner = index[last];
        uint64_t length = shape[last] - inner;
        if (length > count - done) {
            length = count - done;
        }
        /* The run, in pieces of at most RUN_MAX elements. */
        for (uint64_t piece = 0; piece < length; piece += RUN_MAX) {
            run.count = length - piece < RUN_MAX ? length - piece : RUN_MAX;
            run.inner = inner + piece;
            run.offset = offset + (int64_t)run.inner * strides[last];
            run.stride = strides[last];
            run.param = param;
            job->run_fn(job, &run, out + done + piece);
        }
        done += length;
        /* Carry: the last axis is done; step the ones before it. */
        index[last] = 0;
        for (uint32_t k = last; k-- > 0;) {
            if (++index[k] < shape[k]) {
                break;
            }
            index[k] = 0;
        }
    }
}
