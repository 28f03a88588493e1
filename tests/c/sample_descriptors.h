/* The descriptors the quick-path sweeps start from (test_accept.c,
 * test_decode_quick.c): a plain one, and a quantized one with a scale. A
 * setter that fails ends the test through CHECK_OK (check.h). */
#ifndef HURRAY_TESTS_SAMPLE_DESCRIPTORS_H
#define HURRAY_TESTS_SAMPLE_DESCRIPTORS_H

#include "check.h"
#include "hurray.h"

#include <stdint.h>

static HurrayDescriptor *plain(uint32_t dtype, uint32_t rank, const uint64_t *shape)
{
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(dtype, rank, shape, &desc));
    return desc;
}

static HurrayDescriptor *quantized(uint32_t dtype, uint32_t rank, const uint64_t *shape,
                                   uint32_t scheme, uint32_t granularity, uint32_t axis,
                                   uint64_t block_size, uint32_t scale_dtype)
{
    HurrayDescriptor *desc = plain(dtype, rank, shape);
    CHECK_OK(hurray_descriptor_set_quantization(desc, scheme, granularity, axis, block_size, 0));
    CHECK_OK(hurray_descriptor_set_part(desc, HURRAY_ROLE_SCALE, scale_dtype, 1, 0, 0));
    return desc;
}

#endif
