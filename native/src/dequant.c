/*
 * dequant.c -- hurray_dequantize and hurray_dequantize_rows: the checks,
 * the row range, the output, and the scheme dispatch (dequant.h).
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
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "dequant.h"
#include "descriptor_validate.h"
#if HURRAY__DEQUANT_AVX2
#include <cpuid.h>
#endif
#include "dtype.h"
#include "status.h"

/* ---- the path: AVX2 or scalar ------------------------------------------- */

/* 0: not known yet; 1: scalar; 2: AVX2. Every thread that finds 0 works
 * out the same answer, so a race to store it is harmless (and atomic). */
static atomic_int cpu_path;
static atomic_int env_path;
static atomic_int forced_path = -1;

/* What the CPU allows: AVX2 with F16C. */
static int cpu_allows(void)
{
    int path = atomic_load_explicit(&cpu_path, memory_order_relaxed);
    if (path == 0) {
#if HURRAY__DEQUANT_AVX2
        /* F16C by CPUID (leaf 1, ECX bit 29): not every compiler's
         * __builtin_cpu_supports knows it; AVX2's check includes the OS's
         * saving of the YMM registers, which F16C needs as well. */
        unsigned eax, ebx, ecx = 0, edx;
        int f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29)) != 0;
        __builtin_cpu_init();
        path = __builtin_cpu_supports("avx2") && f16c ? 2 : 1;
#else
        path = 1;
#endif
        atomic_store_explicit(&cpu_path, path, memory_order_relaxed);
    }
    return path;
}

/* What the CPU allows, unless HURRAY_DEQUANT_PATH=scalar: read once. */
static int env_allows(void)
{
    int path = atomic_load_explicit(&env_path, memory_order_relaxed);
    if (path == 0) {
        const char *env = getenv("HURRAY_DEQUANT_PATH");
        path = env != NULL && strcmp(env, "scalar") == 0 ? 1 : cpu_allows();
        atomic_store_explicit(&env_path, path, memory_order_relaxed);
    }
    return path;
}

int hurray__dequant_simd(void)
{
    int forced = atomic_load_explicit(&forced_path, memory_order_relaxed);
    if (forced == 0) {
        return 0;
    }
    return (forced == 1 ? cpu_allows() : env_allows()) == 2;
}

void hurray__dequant_force_path(int path)
{
    atomic_store_explicit(&forced_path, path, memory_order_relaxed);
}

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

    /* Rows: indices of the first axis; a rank-0 tensor is one row of one
     * element. The descriptor check bounds every product here. */
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
    uint64_t first = first_row * row_elements;
    uint64_t count = row_count * row_elements;
    uint64_t need;
    if (__builtin_mul_overflow(count, (uint64_t)size, &need)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "%s: %" PRIu64 " elements of %u bytes overflow 64 bits", fn, count,
                            (unsigned)size);
    }
    if (out_len < need) {
        return hurray__fail(HURRAY_ERROR_BUFFER_TOO_SMALL,
                            "%s: out_len is %" PRIu64 " bytes, but %" PRIu64 " elements of %s "
                            "need %" PRIu64,
                            fn, out_len, count, hurray__dtype_name(out_dtype), need);
    }
    if (count == 0) {
        return HURRAY_OK;
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
    }
    if ((uintptr_t)out % size != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "%s: out is not aligned to its elements (%u bytes)", fn,
                            (unsigned)size);
    }

    const HurrayDequantScheme *scheme = scheme_of(desc->scheme);
    if (scheme == NULL) { /* the check knows every scheme this build has */
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "%s: scheme %u has no dequantizer", fn,
                            (unsigned)desc->scheme);
    }
    HurrayDequantJob job;
    memset(&job, 0, sizeof job);
    job.desc = desc;
    job.buffers = buffers;
    job.simd = hurray__dequant_simd();
    job.elements = rows * row_elements;
    HURRAY__TRY(locate_parts(&job, buffers));
    HURRAY__TRY(scheme->prepare(&job));

    if (out_dtype == HURRAY_DTYPE_FLOAT32) {
        float *dst = out;
        for (uint64_t done = 0; done < count; done += HURRAY__DEQUANT_TILE) {
            uint64_t n = count - done < HURRAY__DEQUANT_TILE ? count - done : HURRAY__DEQUANT_TILE;
            scheme->run(&job, first + done, n, dst + done);
        }
    } else {
        float tile[HURRAY__DEQUANT_TILE];
        uint16_t *dst = out;
        for (uint64_t done = 0; done < count; done += HURRAY__DEQUANT_TILE) {
            uint64_t n = count - done < HURRAY__DEQUANT_TILE ? count - done : HURRAY__DEQUANT_TILE;
            scheme->run(&job, first + done, n, tile);
            store_16(out_dtype, tile, n, dst + done, job.simd);
        }
    }
    if (scheme->finish != NULL) {
        scheme->finish(&job);
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
