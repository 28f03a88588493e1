/*
 * dequant_plain.c -- scheme none: every real dtype converted to float32,
 * as numpy's and ml_dtypes' astype convert it (dequant_values.c), through
 * any strides, byte offset, byte order and packing. Complex types are
 * refused: float32 has no room for the imaginary part.
 */
#include "dequant_shared.h"
#include "dtype.h"
#include "status.h"

static void plain_run(const HurrayDequantJob *job, const HurrayRun *run, float *out)
{
    hurray__read_f32(&job->values, run->offset, run->stride, run->count, out);
}

static HurrayStatus plain_refuse(const HurrayDescriptor *desc)
{
    uint32_t dtype = desc->parts[HURRAY_ROLE_VALUES - 1].dtype;
    if (hurray__dtype_kind(dtype) == HURRAY__KIND_COMPLEX) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "hurray_dequantize: a %s tensor has an imaginary part that a real "
                            "output type cannot hold",
                            hurray__dtype_name(dtype));
    }
    return HURRAY_OK;
}

static HurrayStatus plain_prepare(HurrayDequantJob *job)
{
    const HurrayDescriptor *desc = job->desc;
    hurray__reader_init(&job->values, job->part[HURRAY_ROLE_VALUES - 1],
                        desc->parts[HURRAY_ROLE_VALUES - 1].dtype, desc->packing, desc->byte_order);
    job->run_fn = plain_run;
    hurray__dequant_param_layout(job); /* none: the walk computes no parameter */
    return HURRAY_OK;
}

const HurrayDequantScheme hurray__dequant_plain = {plain_refuse, plain_prepare,
                                                   hurray__dequant_walk};
