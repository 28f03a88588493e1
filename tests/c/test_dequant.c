/*
 * test_dequant.c -- hurray_dequantize and hurray_dequantize_rows through
 * hurray.h alone (ADR-055).
 *
 * Run with no argument, it checks every refusal (a status and a message,
 * and nothing written), that any split into row ranges gives the bits of
 * the whole, that 16-bit outputs are the float32 values rounded once as
 * numpy and ml_dtypes round them, the Q1_0 and Q2_0 formulas on blocks
 * made by hand, and threads that dequantize rows of one descriptor at
 * once (tests/test_dequant_c.py runs it under ThreadSanitizer too).
 *
 * With "digest" it prints one line per case and output type, a hash of the
 * output's bytes, for every scheme and GGML type on random bytes: the
 * driver compares the lines of the scalar path (HURRAY_DEQUANT_PATH=scalar)
 * with those of the vectorised one.
 *
 * Every buffer is malloc'ed to its exact length, so that a read past it is
 * an AddressSanitizer report or a valgrind error. HURRAY_TEST_SCALE=N
 * divides the loop counts by N (valgrind).
 */
#include "hurray.h"

#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long scale = 1;

/* ---- random bytes ----------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t next_random(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void fill_random(uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        p[i] = (uint8_t)(next_random() >> 56);
    }
}

/* ---- cases: a descriptor, its buffers, and a name ------------------------- */

typedef struct Case {
    char name[64];
    HurrayDescriptor *desc;
    HurrayBufferList *list;
    uint64_t elements;
    uint64_t rows;
} Case;

static void release_free(void *p)
{
    free(p);
}

/* A buffer of exactly len random bytes, pushed to the list (which frees it). */
static uint8_t *push_random(HurrayBufferList *list, uint64_t len)
{
    uint8_t *p = malloc(len == 0 ? 1 : len);
    CHECK(p != NULL);
    fill_random(p, len);
    HurrayBuffer *buf = NULL;
    CHECK_OK(hurray_buffer_from_ptr(p, len, release_free, p, &buf));
    CHECK_OK(hurray_buffer_list_push(list, &buf));
    return p;
}

static Case begin_case(const char *name, uint32_t dtype, uint32_t rank, const uint64_t *shape)
{
    Case c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    CHECK_OK(hurray_descriptor_new(dtype, rank, shape, &c.desc));
    CHECK_OK(hurray_buffer_list_new(&c.list));
    c.elements = 1;
    for (uint32_t k = 0; k < rank; k++) {
        c.elements *= shape[k];
    }
    c.rows = rank == 0 ? 1 : shape[0];
    return c;
}

static void end_case(Case *c)
{
    hurray_descriptor_destroy(&c->desc);
    hurray_buffer_list_destroy(&c->list);
}

static Case plain_case(const char *name, uint32_t dtype, uint32_t packing, uint32_t order,
                       uint64_t bytes)
{
    uint64_t shape[3] = {6, 5, 64};
    Case c = begin_case(name, dtype, 3, shape);
    CHECK_OK(hurray_descriptor_set_packing(c.desc, packing));
    CHECK_OK(hurray_descriptor_set_byte_order(c.desc, order));
    push_random(c.list, bytes);
    return c;
}

/* float32 values, reversed along every axis, inside a larger buffer. */
static Case strided_case(void)
{
    uint64_t shape[3] = {4, 3, 5};
    Case c = begin_case("plain float32 negative strides", HURRAY_DTYPE_FLOAT32, 3, shape);
    int64_t strides[3] = {-15, -5, -1};
    CHECK_OK(hurray_descriptor_set_strides(c.desc, 3, strides));
    CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0,
                                        4 * 59 + 8, HURRAY_PART_LAYOUT_ROW_MAJOR));
    push_random(c.list, 4 * 60 + 8);
    return c;
}

static Case affine_case(const char *name, uint32_t values, uint32_t packing, uint32_t scale_dtype,
                        uint32_t zero_dtype, uint32_t granularity, uint32_t axis,
                        uint64_t block)
{
    uint64_t shape[3] = {4, 6, 64};
    Case c = begin_case(name, values, 3, shape);
    CHECK_OK(hurray_descriptor_set_packing(c.desc, packing));
    CHECK_OK(hurray_descriptor_set_quantization(c.desc, HURRAY_SCHEME_AFFINE, granularity, axis,
                                                block, 0));
    uint32_t bits = 0;
    CHECK_OK(hurray_dtype_bits(values, &bits));
    uint64_t width = packing == HURRAY_PACKING_PADDED ? 8 : bits;
    push_random(c.list, (c.elements * width + 7) / 8);
    uint64_t count = granularity == HURRAY_GRANULARITY_PER_TENSOR ? 1
                     : granularity == HURRAY_GRANULARITY_PER_AXIS ? shape[axis]
                                                                  : c.elements / block;
    uint32_t scale_bits = 0, zero_bits = 0;
    CHECK_OK(hurray_dtype_bits(scale_dtype, &scale_bits));
    CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_SCALE, scale_dtype, 1, 0,
                                        HURRAY_PART_LAYOUT_ROW_MAJOR));
    push_random(c.list, count * scale_bits / 8);
    if (zero_dtype != 0) {
        CHECK_OK(hurray_dtype_bits(zero_dtype, &zero_bits));
        CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_ZERO_POINT, zero_dtype, 2, 0,
                                            HURRAY_PART_LAYOUT_ROW_MAJOR));
        push_random(c.list, count * zero_bits / 8);
    }
    return c;
}

static Case mx_case(const char *name, uint32_t values, uint32_t packing, uint32_t scale_dtype,
                    uint64_t block, int swizzled, int global)
{
    uint64_t shape[2] = {130, 64};
    Case c = begin_case(name, values, 2, shape);
    CHECK_OK(hurray_descriptor_set_packing(c.desc, packing));
    CHECK_OK(hurray_descriptor_set_quantization(c.desc, HURRAY_SCHEME_MICROSCALING,
                                                HURRAY_GRANULARITY_PER_BLOCK, 1, block, 0));
    uint32_t bits = 0;
    CHECK_OK(hurray_dtype_bits(values, &bits));
    uint64_t width = packing == HURRAY_PACKING_PADDED ? 8 : bits;
    push_random(c.list, (c.elements * width + 7) / 8);
    uint64_t cols = shape[1] / block, count = shape[0] * cols;
    if (swizzled) {
        CHECK_OK(hurray_layout_swizzled_128x4_count(shape[0], cols, &count));
    }
    CHECK_OK(hurray_descriptor_set_part(
        c.desc, HURRAY_ROLE_SCALE, scale_dtype, 1, 0,
        swizzled ? HURRAY_PART_LAYOUT_SWIZZLED_128X4 : HURRAY_PART_LAYOUT_ROW_MAJOR));
    push_random(c.list, count);
    if (global) {
        CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32,
                                            2, 0, HURRAY_PART_LAYOUT_ROW_MAJOR));
        uint8_t *g = push_random(c.list, 4);
        float value = 0.375f;
        memcpy(g, &value, 4);
    }
    return c;
}

static Case ggml_case(uint32_t type, uint64_t rows, uint64_t blocks_per_row)
{
    uint64_t elements = 0, bytes = 0;
    CHECK_OK(hurray_ggml_block(type, &elements, &bytes));
    uint64_t shape[2] = {rows, elements * blocks_per_row};
    char name[64];
    snprintf(name, sizeof name, "ggml %s", hurray_ggml_name(type));
    Case c = begin_case(name, HURRAY_DTYPE_UINT8, 2, shape);
    CHECK_OK(hurray_descriptor_set_quantization(c.desc, HURRAY_SCHEME_GGML,
                                                HURRAY_GRANULARITY_NONE, 0, 0, type));
    push_random(c.list, rows * blocks_per_row * bytes);
    return c;
}

/* Every GGML type the header names. */
static const uint32_t GGML_TYPES[] = {
    HURRAY_GGML_Q4_0,    HURRAY_GGML_Q4_1,   HURRAY_GGML_Q5_0,    HURRAY_GGML_Q5_1,
    HURRAY_GGML_Q8_0,    HURRAY_GGML_Q2_K,   HURRAY_GGML_Q3_K,    HURRAY_GGML_Q4_K,
    HURRAY_GGML_Q5_K,    HURRAY_GGML_Q6_K,   HURRAY_GGML_IQ2_XXS, HURRAY_GGML_IQ2_XS,
    HURRAY_GGML_IQ3_XXS, HURRAY_GGML_IQ1_S,  HURRAY_GGML_IQ4_NL,  HURRAY_GGML_IQ3_S,
    HURRAY_GGML_IQ2_S,   HURRAY_GGML_IQ4_XS, HURRAY_GGML_IQ1_M,   HURRAY_GGML_TQ1_0,
    HURRAY_GGML_TQ2_0,   HURRAY_GGML_MXFP4,  HURRAY_GGML_NVFP4,   HURRAY_GGML_Q1_0,
    HURRAY_GGML_Q2_0,
};
#define GGML_TYPE_COUNT (sizeof GGML_TYPES / sizeof GGML_TYPES[0])

/* Every case the digest and the row checks walk; returns how many. */
static size_t all_cases(Case *out)
{
    size_t n = 0;
    out[n++] = strided_case();
    out[n++] = plain_case("plain float16", HURRAY_DTYPE_FLOAT16, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64 * 2);
    out[n++] = plain_case("plain bfloat16 big-endian", HURRAY_DTYPE_BFLOAT16, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_BIG, 6 * 5 * 64 * 2);
    out[n++] = plain_case("plain float64", HURRAY_DTYPE_FLOAT64, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64 * 8);
    out[n++] = plain_case("plain uint64 big-endian", HURRAY_DTYPE_UINT64, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_BIG, 6 * 5 * 64 * 8);
    out[n++] = plain_case("plain int32", HURRAY_DTYPE_INT32, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64 * 4);
    out[n++] = plain_case("plain float8_e5m2", HURRAY_DTYPE_FLOAT8_E5M2, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64);
    out[n++] = plain_case("plain int4 lsb_first", HURRAY_DTYPE_INT4, HURRAY_PACKING_LSB_FIRST,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 32);
    out[n++] = plain_case("plain uint4 ggml_split", HURRAY_DTYPE_UINT4, HURRAY_PACKING_GGML_SPLIT,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 32);
    out[n++] = plain_case("plain int2 padded", HURRAY_DTYPE_INT2, HURRAY_PACKING_PADDED,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64);
    out[n++] = plain_case("plain float6_e3m2fn padded", HURRAY_DTYPE_FLOAT6_E3M2FN,
                          HURRAY_PACKING_PADDED, HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64);
    out[n++] = plain_case("plain bool", HURRAY_DTYPE_BOOL, HURRAY_PACKING_NONE,
                          HURRAY_BYTE_ORDER_LITTLE, 6 * 5 * 64);
    out[n++] = affine_case("affine int8 per tensor", HURRAY_DTYPE_INT8, HURRAY_PACKING_NONE,
                           HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_INT8, HURRAY_GRANULARITY_PER_TENSOR,
                           0, 0);
    out[n++] = affine_case("affine uint8 per axis float64", HURRAY_DTYPE_UINT8,
                           HURRAY_PACKING_NONE, HURRAY_DTYPE_FLOAT64, HURRAY_DTYPE_INT64,
                           HURRAY_GRANULARITY_PER_AXIS, 1, 0);
    out[n++] = affine_case("affine int8 per last axis", HURRAY_DTYPE_INT8, HURRAY_PACKING_NONE,
                           HURRAY_DTYPE_BFLOAT16, HURRAY_DTYPE_FLOAT32,
                           HURRAY_GRANULARITY_PER_AXIS, 2, 0);
    out[n++] = affine_case("affine int4 per block 32", HURRAY_DTYPE_INT4, HURRAY_PACKING_LSB_FIRST,
                           HURRAY_DTYPE_FLOAT16, HURRAY_DTYPE_INT8, HURRAY_GRANULARITY_PER_BLOCK,
                           2, 32);
    out[n++] = affine_case("affine uint4 per block axis 1", HURRAY_DTYPE_UINT4,
                           HURRAY_PACKING_PADDED, HURRAY_DTYPE_FLOAT32, 0,
                           HURRAY_GRANULARITY_PER_BLOCK, 1, 3);
    out[n++] = affine_case("affine fp8 per axis", HURRAY_DTYPE_FLOAT8_E4M3FN, HURRAY_PACKING_NONE,
                           HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT8_E4M3FN,
                           HURRAY_GRANULARITY_PER_AXIS, 0, 0);
    out[n++] = mx_case("mx fp4 e8m0", HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_PACKING_LSB_FIRST,
                       HURRAY_DTYPE_FLOAT8_E8M0FNU, 32, 0, 0);
    out[n++] = mx_case("mx fp8 e8m0", HURRAY_DTYPE_FLOAT8_E4M3FN, HURRAY_PACKING_NONE,
                       HURRAY_DTYPE_FLOAT8_E8M0FNU, 32, 0, 0);
    out[n++] = mx_case("mx fp6 e8m0 padded", HURRAY_DTYPE_FLOAT6_E2M3FN, HURRAY_PACKING_PADDED,
                       HURRAY_DTYPE_FLOAT8_E8M0FNU, 32, 0, 0);
    out[n++] = mx_case("mx int8 e8m0", HURRAY_DTYPE_INT8, HURRAY_PACKING_NONE,
                       HURRAY_DTYPE_FLOAT8_E8M0FNU, 32, 0, 0);
    out[n++] = mx_case("nvfp4 swizzled", HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_PACKING_LSB_FIRST,
                       HURRAY_DTYPE_FLOAT8_E4M3FN, 16, 1, 1);
    out[n++] = mx_case("nvfp4 row-major padded", HURRAY_DTYPE_FLOAT4_E2M1FN,
                       HURRAY_PACKING_PADDED, HURRAY_DTYPE_FLOAT8_E4M3FN, 16, 0, 1);
    for (size_t i = 0; i < GGML_TYPE_COUNT; i++) {
        out[n++] = ggml_case(GGML_TYPES[i], 5, 3);
    }
    return n;
}

#define MAX_CASES 64

/* ---- helpers ------------------------------------------------------------------ */

static const uint32_t OUTPUTS[3] = {HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT16,
                                    HURRAY_DTYPE_BFLOAT16};

static uint64_t out_size(uint32_t dtype)
{
    return dtype == HURRAY_DTYPE_FLOAT32 ? 4 : 2;
}

/* An output buffer of n bytes with 64 canary bytes after it. */
static uint8_t *new_out(uint64_t n)
{
    uint8_t *p = malloc(n + 64);
    CHECK(p != NULL);
    memset(p, 0xA5, n + 64);
    return p;
}

static void check_canary(const uint8_t *p, uint64_t from, uint64_t to)
{
    for (uint64_t i = from; i < to; i++) {
        CHECK(p[i] == 0xA5);
    }
}

static uint64_t fnv1a(const uint8_t *p, uint64_t n)
{
    uint64_t h = 0xCBF29CE484222325u;
    for (uint64_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 0x100000001B3u;
    }
    return h;
}

static float f32_of(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* ---- the digest ------------------------------------------------------------- */

static void digest(void)
{
    Case cases[MAX_CASES];
    size_t n = all_cases(cases);
    for (size_t i = 0; i < n; i++) {
        for (int o = 0; o < 3; o++) {
            uint64_t bytes = cases[i].elements * out_size(OUTPUTS[o]);
            uint8_t *out = new_out(bytes);
            CHECK_OK(hurray_dequantize(cases[i].desc, cases[i].list, OUTPUTS[o], out, bytes));
            printf("%s / %s: %016llx\n", cases[i].name, hurray_dtype_name(OUTPUTS[o]),
                   (unsigned long long)fnv1a(out, bytes));
            free(out);
        }
        end_case(&cases[i]);
    }
}

/* ---- rows ------------------------------------------------------------------- */

/* Any split of the rows gives the whole's bytes. */
static void test_rows(void)
{
    Case cases[MAX_CASES];
    size_t n = all_cases(cases);
    for (size_t i = 0; i < n; i++) {
        Case *c = &cases[i];
        uint64_t row = c->elements / c->rows;
        for (int o = 0; o < 3; o++) {
            uint64_t size = out_size(OUTPUTS[o]), bytes = c->elements * size;
            uint8_t *whole = new_out(bytes), *pieces = new_out(bytes);
            CHECK_OK(hurray_dequantize(c->desc, c->list, OUTPUTS[o], whole, bytes));
            check_canary(whole, bytes, bytes + 64);
            for (uint64_t first = 0; first < c->rows;) {
                uint64_t count = 1 + next_random() % (c->rows - first);
                uint64_t at = first * row * size, len = count * row * size;
                CHECK_OK(hurray_dequantize_rows(c->desc, c->list, OUTPUTS[o], first, count,
                                                pieces + at, len));
                first += count;
            }
            CHECK(memcmp(whole, pieces, bytes) == 0);
            check_canary(pieces, bytes, bytes + 64);
            /* Zero rows anywhere in range, with no output at all. */
            CHECK_OK(hurray_dequantize_rows(c->desc, c->list, OUTPUTS[o], c->rows, 0, NULL, 0));
            free(whole);
            free(pieces);
        }
        end_case(c);
    }
}

/* ---- refusals ------------------------------------------------------------------ */

static void test_refusals(void)
{
    Case c = ggml_case(HURRAY_GGML_Q4_K, 4, 2);
    uint64_t bytes = c.elements * 4;
    uint8_t *out = new_out(bytes);
    const uint32_t F32 = HURRAY_DTYPE_FLOAT32;

    CHECK_FAIL(hurray_dequantize(NULL, c.list, F32, out, bytes), HURRAY_ERROR_NULL_ARGUMENT,
               "desc is NULL");
    CHECK_FAIL(hurray_dequantize(c.desc, NULL, F32, out, bytes), HURRAY_ERROR_NULL_ARGUMENT,
               "buffers is NULL");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, F32, NULL, bytes), HURRAY_ERROR_NULL_ARGUMENT,
               "out is NULL");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_INT8, out, bytes),
               HURRAY_ERROR_UNSUPPORTED, "out_dtype int8 is not an output type");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_FLOAT64, out, bytes),
               HURRAY_ERROR_UNSUPPORTED, "float64");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, (HurrayDtype)999, out, bytes),
               HURRAY_ERROR_UNSUPPORTED, "(unknown code)");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, F32, out, bytes - 1),
               HURRAY_ERROR_BUFFER_TOO_SMALL, "out_len is");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_FLOAT16, out, c.elements * 2 - 1),
               HURRAY_ERROR_BUFFER_TOO_SMALL, "float16");
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, F32, out + 1, bytes),
               HURRAY_ERROR_INVALID_ARGUMENT, "not aligned");
    /* Rows past the end, and counts that would wrap. */
    CHECK_FAIL(hurray_dequantize_rows(c.desc, c.list, F32, 5, 0, out, bytes),
               HURRAY_ERROR_OUT_OF_RANGE, "reach past the tensor's 4 rows");
    CHECK_FAIL(hurray_dequantize_rows(c.desc, c.list, F32, 2, 3, out, bytes),
               HURRAY_ERROR_OUT_OF_RANGE, "first_row 2 and row_count 3");
    CHECK_FAIL(hurray_dequantize_rows(c.desc, c.list, F32, 1, UINT64_MAX, out, bytes),
               HURRAY_ERROR_OUT_OF_RANGE, "past the tensor");
    CHECK_FAIL(hurray_dequantize_rows(c.desc, c.list, F32, UINT64_MAX, 1, out, bytes),
               HURRAY_ERROR_OUT_OF_RANGE, "past the tensor");
    CHECK_FAIL(hurray_dequantize_rows(c.desc, c.list, F32, 3, 1, out, c.elements - 1),
               HURRAY_ERROR_BUFFER_TOO_SMALL, "out_len is");
    check_canary(out, 0, bytes + 64); /* no refusal wrote a byte */

    /* Every refusal of check_buffers: a buffer too short, a list too long. */
    HurrayBufferList *short_list = NULL;
    CHECK_OK(hurray_buffer_list_new(&short_list));
    push_random(short_list, 4 * 2 * 144 - 1);
    CHECK_FAIL(hurray_dequantize(c.desc, short_list, F32, out, bytes),
               HURRAY_ERROR_BUFFER_TOO_SMALL, "part values");
    push_random(short_list, 16);
    CHECK_FAIL(hurray_dequantize(c.desc, short_list, F32, out, bytes),
               HURRAY_ERROR_INVALID_ARGUMENT, "the buffer list holds 2 buffers");
    hurray_buffer_list_destroy(&short_list);
    /* A part whose byte offset puts its reach past the buffer's end. */
    CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_UINT8, 0, 1,
                                        HURRAY_PART_LAYOUT_ROW_MAJOR));
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, F32, out, bytes), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "byte offset 1");
    /* An invalid descriptor, built but never validated. */
    CHECK_OK(hurray_descriptor_set_part(c.desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT8, 0, 0,
                                        HURRAY_PART_LAYOUT_ROW_MAJOR));
    CHECK_FAIL(hurray_dequantize(c.desc, c.list, F32, out, bytes),
               HURRAY_ERROR_INVALID_DESCRIPTOR, "dtype must be uint8");
    check_canary(out, 0, bytes + 64);
    free(out);
    end_case(&c);

    /* Negative strides reaching before the buffer. */
    uint64_t shape[1] = {4};
    Case s = begin_case("before", HURRAY_DTYPE_FLOAT32, 1, shape);
    int64_t back[1] = {-1};
    CHECK_OK(hurray_descriptor_set_strides(s.desc, 1, back));
    CHECK_OK(hurray_descriptor_set_part(s.desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 8,
                                        HURRAY_PART_LAYOUT_ROW_MAJOR));
    push_random(s.list, 16);
    float small[4];
    CHECK_FAIL(hurray_dequantize(s.desc, s.list, F32, small, sizeof small),
               HURRAY_ERROR_BUFFER_TOO_SMALL, "before the start of buffer 0");
    end_case(&s);

    /* Complex values have no real output. */
    Case z = begin_case("complex", HURRAY_DTYPE_COMPLEX64, 1, shape);
    push_random(z.list, 32);
    CHECK_FAIL(hurray_dequantize(z.desc, z.list, F32, small, sizeof small),
               HURRAY_ERROR_UNSUPPORTED, "imaginary part");
    end_case(&z);

    /* No elements: nothing to write, out may be NULL. */
    uint64_t empty_shape[2] = {0, 32};
    Case e = begin_case("empty", HURRAY_DTYPE_UINT8, 2, empty_shape);
    CHECK_OK(hurray_descriptor_set_quantization(e.desc, HURRAY_SCHEME_GGML,
                                                HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q4_0));
    push_random(e.list, 0);
    CHECK_OK(hurray_dequantize(e.desc, e.list, F32, NULL, 0));
    CHECK_OK(hurray_dequantize_rows(e.desc, e.list, F32, 0, 0, NULL, 0));
    CHECK_FAIL(hurray_dequantize_rows(e.desc, e.list, F32, 0, 1, NULL, 0),
               HURRAY_ERROR_OUT_OF_RANGE, "tensor's 0 rows");
    end_case(&e);

    /* A scalar is one row of one element. */
    Case r0 = begin_case("scalar", HURRAY_DTYPE_FLOAT64, 0, NULL);
    uint8_t *p = push_random(r0.list, 8);
    double value = -2.5;
    memcpy(p, &value, 8);
    float one = 0.0f;
    CHECK_OK(hurray_dequantize_rows(r0.desc, r0.list, F32, 0, 1, &one, 4));
    CHECK(one == -2.5f);
    CHECK_FAIL(hurray_dequantize_rows(r0.desc, r0.list, F32, 1, 1, &one, 4),
               HURRAY_ERROR_OUT_OF_RANGE, "tensor's 1 rows");
    end_case(&r0);
}

/* ---- 16-bit outputs ------------------------------------------------------------ */

/* x rounded to an integer, half to even (x >= 0, below 2^62). */
static double round_even(double x)
{
    double down = (double)(uint64_t)x, rest = x - down;
    if (rest > 0.5 || (rest == 0.5 && ((uint64_t)down & 1u))) {
        return down + 1.0;
    }
    return down;
}

/* numpy's float32 to float16, worked out here through the value rather
 * than the bits: the nearest half, ties to even; NaNs keep their sign and
 * the top of their payload. */
static uint16_t ref_f16(uint32_t f)
{
    uint16_t sign = (uint16_t)((f >> 16) & 0x8000u);
    uint32_t e = (f >> 23) & 0xFFu, m = f & 0x7FFFFFu;
    if (e == 0xFF) {
        if (m == 0) {
            return sign | 0x7C00u;
        }
        uint32_t nan = 0x7C00u | (m >> 13);
        return (uint16_t)(sign | (nan == 0x7C00u ? 0x7C01u : nan));
    }
    double a = (double)(f32_of(f & 0x7FFFFFFFu)); /* exact */
    const double unit = 1.0 / 16777216.0;         /* 2^-24, the half's subnormal step */
    if (a < 1024.0 * unit) {                       /* below 2^-14: subnormal (or the first normal) */
        return (uint16_t)(sign | (uint32_t)round_even(a / unit));
    }
    int p = -14;
    double power = 1.0 / 16384.0; /* 2^p <= a < 2^(p + 1) */
    while (a >= 2.0 * power) {
        power *= 2.0;
        p++;
    }
    double k = round_even(a / power * 1024.0); /* 1024 .. 2048 */
    if (k == 2048.0) {
        k = 1024.0;
        p++;
    }
    if (p > 15) {
        return sign | 0x7C00u;
    }
    return (uint16_t)(sign | (uint32_t)(p + 15) << 10 | ((uint32_t)k - 1024u));
}

/* ml_dtypes' float32 to bfloat16. */
static uint16_t ref_bf16(uint32_t f)
{
    if ((f & 0x7FFFFFFFu) > 0x7F800000u) {
        return (uint16_t)(((f >> 16) & 0x8000u) | 0x7FC0u);
    }
    uint32_t upper = f >> 16, lower = f & 0xFFFFu;
    if (lower > 0x8000u || (lower == 0x8000u && (upper & 1u))) {
        upper++;
    }
    return (uint16_t)upper;
}

static void test_outputs(void)
{
    /* float32 values: every pattern kind -- random bits, near the half's
     * rounding points, subnormals, the largest half and beyond. */
    enum { COUNT = 1 << 16 };
    uint64_t shape[1] = {COUNT};
    Case c = begin_case("float32 bits", HURRAY_DTYPE_FLOAT32, 1, shape);
    uint8_t *values = push_random(c.list, 4 * COUNT);
    for (uint32_t i = 0; i < COUNT; i++) {
        uint32_t bits;
        memcpy(&bits, values + 4 * i, 4);
        switch (i % 4) {
        case 0: break; /* random */
        case 1: bits = (bits & 0x8000FFFFu) | ((0x33u + i % 0x15u) << 23) | (bits & 0x7FE000u); break;
        case 2: bits = (bits & 0x80000000u) | 0x477FE000u | (i & 0x1FFFu); break;
        default: bits = (bits & 0xFFFF0000u) | (i & 1 ? 0x8000u : 0x7FFFu); break;
        }
        memcpy(values + 4 * i, &bits, 4);
    }
    float *f32 = (float *)new_out(4 * COUNT);
    uint16_t *h = (uint16_t *)new_out(2 * COUNT), *b = (uint16_t *)new_out(2 * COUNT);
    CHECK_OK(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_FLOAT32, f32, 4 * COUNT));
    CHECK_OK(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_FLOAT16, h, 2 * COUNT));
    CHECK_OK(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_BFLOAT16, b, 2 * COUNT));
    for (uint32_t i = 0; i < COUNT; i++) {
        uint32_t bits;
        memcpy(&bits, values + 4 * i, 4);
        CHECK(bits_of(f32[i]) == bits); /* float32 to float32: the bits, NaNs too */
        if (h[i] != ref_f16(bits)) {
            fprintf(stderr, "float16 of %08x: %04x, expected %04x\n", (unsigned)bits,
                    (unsigned)h[i], (unsigned)ref_f16(bits));
        }
        CHECK(h[i] == ref_f16(bits));
        CHECK(b[i] == ref_bf16(bits));
    }
    free(f32);
    free(h);
    free(b);
    end_case(&c);
}

/* ---- Q1_0 and Q2_0, by hand --------------------------------------------------- */

static void put_f16(uint8_t *p, uint16_t h)
{
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

static void test_q1_q2_by_hand(void)
{
    /* Q1_0: d = 0.75 (fp16 0x3A00); bit j of byte j / 8, LSB first: +d or -d. */
    uint64_t shape[1] = {128};
    Case c = begin_case("q1_0", HURRAY_DTYPE_UINT8, 1, shape);
    CHECK_OK(hurray_descriptor_set_quantization(c.desc, HURRAY_SCHEME_GGML,
                                                HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q1_0));
    uint8_t *block = push_random(c.list, 18);
    put_f16(block, 0x3A00);
    for (int k = 0; k < 16; k++) {
        block[2 + k] = (uint8_t)(k == 0 ? 0x01 : k == 1 ? 0x80 : k == 15 ? 0xFF : 0x00);
    }
    float y[128];
    CHECK_OK(hurray_dequantize(c.desc, c.list, HURRAY_DTYPE_FLOAT32, y, sizeof y));
    for (int j = 0; j < 128; j++) {
        int set = j == 0 || j == 15 || j >= 120;
        CHECK(y[j] == (set ? 0.75f : -0.75f));
    }
    end_case(&c);

    /* Q2_0: d = -2 (0xC000); two bits per element, LSB first; (q - 1) * d. */
    uint64_t shape2[1] = {64};
    Case q = begin_case("q2_0", HURRAY_DTYPE_UINT8, 1, shape2);
    CHECK_OK(hurray_descriptor_set_quantization(q.desc, HURRAY_SCHEME_GGML,
                                                HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q2_0));
    block = push_random(q.list, 18);
    put_f16(block, 0xC000);
    for (int k = 0; k < 16; k++) {
        block[2 + k] = 0xE4; /* elements 4k .. 4k+3: codes 0, 1, 2, 3 */
    }
    block[2 + 15] = 0x1B; /* the last byte the other way round: 3, 2, 1, 0 */
    float z[64];
    CHECK_OK(hurray_dequantize(q.desc, q.list, HURRAY_DTYPE_FLOAT32, z, sizeof z));
    for (int j = 0; j < 64; j++) {
        int code = j < 60 ? j % 4 : 3 - j % 4;
        CHECK(z[j] == (float)(code - 1) * -2.0f);
    }
    CHECK(z[0] == 2.0f && z[3] == -4.0f && z[60] == -4.0f && z[63] == 2.0f);
    /* A NaN scale: every value NaN; an infinite one: 0 * inf is NaN too. */
    put_f16(block, 0x7C00);
    CHECK_OK(hurray_dequantize(q.desc, q.list, HURRAY_DTYPE_FLOAT32, z, sizeof z));
    CHECK(z[1] != z[1] && z[0] == -__builtin_inff() && z[2] == __builtin_inff());
    end_case(&q);
}

/* ---- threads ------------------------------------------------------------------- */

#define THREADS 4

typedef struct Slice {
    const Case *c;
    uint64_t first;
    uint64_t count;
    float *out;
    HurrayStatus status;
} Slice;

static void *dequantize_slice(void *arg)
{
    Slice *s = arg;
    uint64_t row = s->c->elements / s->c->rows;
    for (int repeat = 0; repeat < 4; repeat++) {
        s->status = hurray_dequantize_rows(s->c->desc, s->c->list, HURRAY_DTYPE_FLOAT32, s->first,
                                           s->count, s->out + s->first * row,
                                           s->count * row * 4);
        if (s->status != HURRAY_OK) {
            break;
        }
    }
    return NULL;
}

/* Threads split each tensor by rows, on one descriptor and one list: a
 * descriptor never validated (each call checks it on its own) and one
 * validated first. */
static void test_threads(void)
{
    Case cases[MAX_CASES];
    size_t n = all_cases(cases);
    for (size_t i = 0; i < n; i++) {
        for (int validated = 0; validated < 2; validated++) {
            Case *c = &cases[i];
            if (validated) {
                CHECK_OK(hurray_descriptor_validate(c->desc));
            }
            uint64_t bytes = c->elements * 4;
            float *whole = (float *)new_out(bytes), *split = (float *)new_out(bytes);
            pthread_t threads[THREADS];
            Slice slices[THREADS];
            uint64_t per = (c->rows + THREADS - 1) / THREADS;
            for (int t = 0; t < THREADS; t++) {
                uint64_t first = per * (uint64_t)t < c->rows ? per * (uint64_t)t : c->rows;
                uint64_t last = first + per < c->rows ? first + per : c->rows;
                slices[t] = (Slice){c, first, last - first, split, HURRAY_OK};
                CHECK(pthread_create(&threads[t], NULL, dequantize_slice, &slices[t]) == 0);
            }
            for (int t = 0; t < THREADS; t++) {
                CHECK(pthread_join(threads[t], NULL) == 0);
                CHECK_OK(slices[t].status);
            }
            /* The whole only now: a call before the threads might have
             * left the descriptor checked, and the threads nothing to race. */
            CHECK_OK(hurray_dequantize(c->desc, c->list, HURRAY_DTYPE_FLOAT32, whole, bytes));
            CHECK(memcmp(whole, split, bytes) == 0);
            free(whole);
            free(split);
        }
        end_case(&cases[i]);
    }
}

int main(int argc, char **argv)
{
    const char *env = getenv("HURRAY_TEST_SCALE");
    if (env != NULL) {
        scale = strtoul(env, NULL, 10);
        if (scale == 0) {
            fprintf(stderr, "test_dequant: HURRAY_TEST_SCALE must be a positive integer\n");
            return 2;
        }
    }
    if (argc > 1 && strcmp(argv[1], "digest") == 0) {
        digest();
        return 0;
    }
    if (argc > 1 && strcmp(argv[1], "threads") == 0) {
        test_threads();
        checks_report("test_dequant");
        return 0;
    }
    test_refusals();
    test_q1_q2_by_hand();
    test_outputs();
    for (unsigned long round = 0; round < 8 / scale + 1; round++) {
        test_rows();
    }
    test_threads();
    checks_report("test_dequant");
    return 0;
}
