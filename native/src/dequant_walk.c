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
#include "dequant.h"

/* Runs are cut to this length, so that the schemes' buffers for one run
 * live on the stack. */
#define RUN_MAX 256u

void hurray__dequant_param_layout(HurrayDequantJob *job)
{
    const HurrayDescriptor *desc = job->desc;
    uint32_t rank = desc->rank;
    for (uint32_t k = 0; k < rank; k++) {
        job->param_strides[k] = 0;
        job->param_divs[k] = 1;
    }
    job->param_div = 0;
    job->param_step = 0;
    if (rank == 0 || desc->granularity == HURRAY_GRANULARITY_PER_TENSOR ||
        desc->granularity == HURRAY_GRANULARITY_NONE) {
        return;
    }
    uint32_t axis = desc->axis;
    if (desc->granularity == HURRAY_GRANULARITY_PER_AXIS) {
        job->param_strides[axis] = 1;
    } else {
        /* Per block: the parameters have the tensor's shape with the axis
         * divided by the block size, row-major. */
        job->param_divs[axis] = desc->block_size;
        uint64_t step = 1;
        for (uint32_t k = rank; k-- > 0;) {
            job->param_strides[k] = step;
            uint64_t dim = desc->shape[k] / job->param_divs[k];
            step *= dim == 0 ? 1 : dim;
        }
    }
    if (job->param_strides[rank - 1] != 0) {
        job->param_div = job->param_divs[rank - 1];
        job->param_step = job->param_strides[rank - 1];
    }
}

void hurray__dequant_walk(const HurrayDequantJob *job, uint64_t first, uint64_t count, float *out)
{
    const HurrayDescriptor *desc = job->desc;
    uint32_t rank = desc->rank;
    HurrayRun run = {0};
    if (rank == 0) {
        run.count = 1;
        job->run_fn(job, &run, out);
        return;
    }
    const uint64_t *shape = desc->shape;
    const int64_t *strides = desc->strides;
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
