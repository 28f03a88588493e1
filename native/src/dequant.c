/*
 * dequant.c -- hurray_dequantize and hurray_dequantize_rows: the checks,
 * the row range, the output, and the scheme dispatch (dequant_shared.h).
 *
 * One call checks the descriptor against its buffers once (the rules of
 * hurray_descriptor_check_buffers), then walks the requested elements in
 * tiles of HURRAY__DEQUANT_TILE: the scheme writes each tile's float32
 * values straight into the output, or, for a 16-bit output type, into a
 * tile on the stack that is converted while it is still in the cache, so
 * that the output is written in one pass either way.
 *
 * Neither function writes to the descriptor or the buffer list: any number
 * of threads may dequantize rows of one tensor at once (ADR-055).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dequant_shared.h"
#include "descriptor_validate.h"
#include "dtype.h"
#include "status.h"

/* ---- output types ---------------------------------------------------------- */

static void store_16(uint32_t out_dtype, const float *tile, uint64_t n, uint16_t *out, int simd)
{
#if HURRAY__DEQUANT_AVX2
    if (simd) {
        if (out_dtype == HURRAY_DTYPE_FLOAT16) {
            hurray__store_f16_avx2(tile, n, out);
        } else {
            hurray__store_bf16_avx2(tile, n, out);
        }
        return;
    }
#else
    (void)simd;
#endif
    if (out_dtype == HURRAY_DTYPE_FLOAT16) {
        for (uint64_t i = 0; i < n; i++) {
            out[i] = hurray__f32_to_f16(tile[i]);
        }
    } else {
        for (uint64_t i = 0; i < n; i++) {
            out[i] = hurray__f32_to_bf16(tile[i]);
        }
    }
}

/* Bytes of one output element, or 0 for a type that is not an output type. */
static uint32_t output_size(uint32_t out_dtype)
{
    switch (out_dtype) {
    case HURRAY_DTYPE_FLOAT32: return 4;
    case HURRAY_DTYPE_FLOAT16:
    case HURRAY_DTYPE_BFLOAT16: return 2;
    default: return 0;
    }
}

/* ---- dispatch -------------------------------------------------------------- */

/* The scheme of a descriptor: a version-2 scheme is one more entry. */
static const HurrayDequantScheme *scheme_of(uint32_t scheme)
{
    switch (scheme) {
    case HURRAY_SCHEME_NONE: return &hurray__dequant_plain;
    case HURRAY_SCHEME_AFFINE: return &hurray__dequant_affine;
    case HURRAY_SCHEME_MICROSCALING: return &hurray__dequant_mx;
    case HURRAY_SCHEME_GGML: return &hurray__dequant_ggml;
    case HURRAY_SCHEME_GRAPH: return &hurray__dequant_graph;
    default: return NULL;
    }
}

/* The part addresses: each part's byte offset in its buffer. Only for a
 * tensor with elements, whose parts check_buffers proved inside their
 * buffers. */
static HurrayStatus locate_parts(HurrayDequantJob *job, const HurrayBufferList *list)
{
    const HurrayDescriptor *desc = job->desc;
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        job->part[role - 1] = NULL;
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            continue;
        }
        const HurrayDescriptorPart *part = &desc->parts[role - 1];
        const HurrayBuffer *buffer = NULL;
        void *data = NULL;
        uint64_t len = 0;
        HURRAY__TRY(hurray_buffer_list_get(list, part->buffer_index, &buffer));
        HURRAY__TRY(hurray_buffer_data(buffer, &data, &len));
        job->part[role - 1] = (const uint8_t *)data + part->byte_offset;
    }
    return HURRAY_OK;
}

/* The logical elements [*out_first, *out_first + *out_count) of the rows
 * asked for: rows are indices of the first axis, a rank-0 tensor is one row
 * of one element. The descriptor check bounds every product here. */
static HurrayStatus plan_rows(const char *fn, const HurrayDescriptor *desc, int whole,
                              uint64_t first_row, uint64_t row_count, uint64_t *out_first,
                              uint64_t *out_count)
{
    uint64_t rows = desc->rank == 0 ? 1 : desc->shape[0];
    uint64_t row_elements = 1;
    for (uint32_t k = 1; k < desc->rank; k++) {
        row_elements *= desc->shape[k];
    }
    if (whole) {
        first_row = 0;
        row_count = rows;
    } else if (first_row > rows || row_count > rows - first_row) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "%s: first_row %" PRIu64 " and row_count %" PRIu64
                            " reach past the tensor's %" PRIu64 " rows",
                            fn, first_row, row_count, rows);
    }
    *out_first = first_row * row_elements;
    *out_count = row_count * row_elements;
    return HURRAY_OK;
}

/* out holds count elements of `size` bytes, and is aligned to them (it may
 * be NULL when there are none); *out_need gets their bytes. */
static HurrayStatus check_output(const char *fn, uint32_t out_dtype, uint32_t size, uint64_t count,
                                 const void *out, uint64_t out_len, uint64_t *out_need)
{
    if (__builtin_mul_overflow(count, (uint64_t)size, out_need)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "%s: %" PRIu64 " elements of %u bytes overflow 64 bits", fn, count,
                            (unsigned)size);
    }
    if (out_len < *out_need) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "%s: out_len is %" PRIu64 " bytes, but %" PRIu64 " elements of %s "
                            "need %" PRIu64,
                            fn, out_len, count, hurray__dtype_name(out_dtype), *out_need);
    }
    if (count != 0 && out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    if (count != 0 && (uintptr_t)out % size != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: out is not aligned to its elements (%u bytes)", fn,
                            (unsigned)size);
    }
    return HURRAY_OK;
}

/* The scheme's values, tile by tile, into out: float32 straight in, unless
 * the output is large enough to go around the caches (AVX2 path: each tile
 * made in the first-level cache and streamed out), 16-bit types converted
 * while the tile is in the cache. */
static void write_tiles(const HurrayDequantScheme *scheme, const HurrayDequantJob *job,
                        uint32_t out_dtype, uint32_t size, uint64_t first, uint64_t count,
                        uint64_t need, void *out)
{
    int stream = 0;
#if HURRAY__DEQUANT_AVX2
    stream = job->simd && need >= HURRAY__DEQUANT_STREAM_MIN;
#else
    (void)need;
#endif
    if (out_dtype == HURRAY_DTYPE_FLOAT32 && !stream) {
        float *dst = out;
        for (uint64_t done = 0; done < count; done += HURRAY__DEQUANT_TILE) {
            uint64_t n = count - done < HURRAY__DEQUANT_TILE ? count - done : HURRAY__DEQUANT_TILE;
            scheme->run(job, first + done, n, dst + done);
        }
        return;
    }
    float tile[HURRAY__DEQUANT_TILE];
    uint16_t halves[HURRAY__DEQUANT_TILE];
    uint8_t *dst = out;
    for (uint64_t done = 0; done < count; done += HURRAY__DEQUANT_TILE) {
        uint64_t n = count - done < HURRAY__DEQUANT_TILE ? count - done : HURRAY__DEQUANT_TILE;
        scheme->run(job, first + done, n, tile);
        uint8_t *at = dst + done * size;
        if (out_dtype == HURRAY_DTYPE_FLOAT32) {
#if HURRAY__DEQUANT_AVX2
            hurray__stream_bytes_avx2(tile, 4 * n, at);
#endif
        } else if (!stream) {
            store_16(out_dtype, tile, n, (uint16_t *)(void *)at, job->simd);
        } else {
            store_16(out_dtype, tile, n, halves, job->simd);
#if HURRAY__DEQUANT_AVX2
            hurray__stream_bytes_avx2(halves, 2 * n, at);
#endif
        }
    }
#if HURRAY__DEQUANT_AVX2
    if (stream) {
        hurray__stream_fence();
    }
#endif
}

static HurrayStatus dequantize(const char *fn, const HurrayDescriptor *desc,
                               const HurrayBufferList *buffers, uint32_t out_dtype, int whole,
                               uint64_t first_row, uint64_t row_count, void *out, uint64_t out_len)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: desc is NULL", fn);
    }
    if (buffers == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: buffers is NULL", fn);
    }
    uint32_t size = output_size(out_dtype);
    if (size == 0) {
        const char *name = hurray__dtype_name(out_dtype);
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "%s: out_dtype %s is not an output type (float32, float16 or "
                            "bfloat16)",
                            fn, name != NULL ? name : "(unknown code)");
    }
    /* One check: the facts the descriptor keeps, or a check of its own
     * that records nothing, then the buffers against them. */
    if (desc->scheme == HURRAY_SCHEME_GRAPH) {
        HURRAY__TRY(hurray__dequant_graph_check(desc, buffers)); /* its own facts */
    } else {
        HurrayDescriptorFacts facts;
        HURRAY__TRY(hurray__descriptor_check_facts_quietly(desc, &facts));
        HURRAY__TRY(hurray__descriptor_check_buffers_with(desc, buffers, &facts));
    }
    const HurrayDequantScheme *scheme = scheme_of(desc->scheme);
    if (scheme == NULL) { /* the check knows every scheme this build has */
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: scheme %u has no dequantizer", fn,
                            (unsigned)desc->scheme);
    }
    if (scheme->refuse != NULL) {
        HURRAY__TRY(scheme->refuse(desc));
    }
    uint64_t first = 0, count = 0, need = 0;
    HURRAY__TRY(plan_rows(fn, desc, whole, first_row, row_count, &first, &count));
    HURRAY__TRY(check_output(fn, out_dtype, size, count, out, out_len, &need));
    if (count == 0) {
        return HURRAY_OK;
    }
    HurrayDequantJob job;
    memset(&job, 0, sizeof job);
    job.desc = desc;
    job.buffers = buffers;
    job.simd = hurray__dequant_simd();
    HURRAY__TRY(locate_parts(&job, buffers));
    HURRAY__TRY(scheme->prepare(&job));
    write_tiles(scheme, &job, out_dtype, size, first, count, need, out);
    if (job.finish != NULL) {
        job.finish(&job);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_dequantize(const HurrayDescriptor *desc, const HurrayBufferList *buffers,
                               HurrayDtype out_dtype, void *out, uint64_t out_len)
{
    return dequantize("hurray_dequantize", desc, buffers, (uint32_t)out_dtype, 1, 0, 0, out,
                      out_len);
}

HurrayStatus hurray_dequantize_rows(const HurrayDescriptor *desc, const HurrayBufferList *buffers,
                                    HurrayDtype out_dtype, uint64_t first_row, uint64_t row_count,
                                    void *out, uint64_t out_len)
{
    return dequantize("hurray_dequantize_rows", desc, buffers, (uint32_t)out_dtype, 0, first_row,
                      row_count, out, out_len);
}
