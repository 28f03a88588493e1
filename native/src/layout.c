/*
 * layout.c -- layout facts the library computes for its own checks, handed
 * to bindings too, so that none of them types the arithmetic again:
 * row-major strides and the size of a swizzled 128x4 scale part.
 */
#include <stddef.h>
#include <string.h>

#include "hurray.h"
#include "layout.h"
#include "status.h"

bool hurray__row_major_strides(uint32_t rank, const uint64_t *shape, int64_t *out,
                               uint32_t *out_dim)
{
    uint64_t step = 1;
    for (uint32_t k = rank; k-- > 0;) {
        out[k] = (int64_t)step;
        uint64_t dim = shape[k];
        if (__builtin_mul_overflow(step, dim == 0 ? 1 : dim, &step) || step > INT64_MAX) {
            *out_dim = k;
            return false;
        }
    }
    return true;
}

bool hurray__swizzled_128x4_count(uint64_t rows, uint64_t cols, uint64_t *out)
{
    uint64_t padded_rows, padded_cols;
    return !__builtin_add_overflow(rows, (128 - rows % 128) % 128, &padded_rows) &&
           !__builtin_add_overflow(cols, (4 - cols % 4) % 4, &padded_cols) &&
           !__builtin_mul_overflow(padded_rows, padded_cols, out);
}

HurrayStatus hurray_layout_row_major_strides(uint32_t rank, const uint64_t *shape,
                                             int64_t *out_strides)
{
    static const char fn[] = "hurray_layout_row_major_strides";
    if (rank > HURRAY_MAX_RANK) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%s: rank %u is above %d", fn,
                            (unsigned)rank, HURRAY_MAX_RANK);
    }
    if (rank > 0 && shape == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: shape is NULL", fn);
    }
    if (rank > 0 && out_strides == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out_strides is NULL", fn);
    }
    int64_t strides[HURRAY_MAX_RANK];
    uint32_t dim = 0;
    if (!hurray__row_major_strides(rank, shape, strides, &dim)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW, "%s: shape[%u]: element count overflows 63 bits",
                            fn, (unsigned)dim);
    }
    if (rank > 0) {
        memcpy(out_strides, strides, sizeof strides[0] * rank);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_layout_swizzled_128x4_count(uint64_t rows, uint64_t cols, uint64_t *out)
{
    static const char fn[] = "hurray_layout_swizzled_128x4_count";
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    uint64_t count;
    if (!hurray__swizzled_128x4_count(rows, cols, &count)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "%s: %llu x %llu scales padded to 128 x 4 tiles overflow 64 bits", fn,
                            (unsigned long long)rows, (unsigned long long)cols);
    }
    *out = count;
    return HURRAY_OK;
}
