/*
 * layout.h -- internal: layout arithmetic that both the descriptor code and
 * the public layout functions (layout.c) use, so it exists once.
 *
 * Not part of the ABI. Neither records a message: the caller knows what
 * was being checked and says so.
 */
#ifndef HURRAY_LAYOUT_INTERNAL_H
#define HURRAY_LAYOUT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* Row-major contiguous strides, in elements, for shape[0 .. rank-1] into
 * out[0 .. rank-1]; a zero dimension is stepped over as if it were one (as
 * numpy does). False when the element count passes INT64_MAX, with
 * *out_dim the dimension where it did; out is then partly written. */
bool hurray__row_major_strides(uint32_t rank, const uint64_t *shape, int64_t *out,
                               uint32_t *out_dim);

/* How many scales a SWIZZLED_128X4 part holds for a rows x cols matrix of
 * scales: the matrix padded to whole tiles of 128 rows by 4 columns. False
 * when that does not fit 64 bits. */
bool hurray__swizzled_128x4_count(uint64_t rows, uint64_t cols, uint64_t *out);

#endif /* HURRAY_LAYOUT_INTERNAL_H */
