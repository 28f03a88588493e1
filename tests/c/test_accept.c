/*
 * test_accept.c -- the quick acceptance against the full check
 * (accept_compare.h), over descriptors made by sweeping every field of a
 * set of base descriptors: each code field through all 256 byte values,
 * every pair of code fields through their known values and a few past
 * them, the part mask through all 16 sets, and the numbers (axis, block
 * size, buffer indices, each dimension and stride) through the edges where
 * arithmetic overflows.
 *
 * Also pins down where the quick path applies: each base is either taken
 * by it or, being valid, left to the full check, as listed below -- so a
 * quick path that always declined (and so could never be wrong) fails too.
 *
 * Compiled with the library sources (it calls internals), at -O2 and under
 * AddressSanitizer and UBSan.
 */
#include "hurray.h"

#include "check.h"
#include "sample_descriptors.h"

#define ACCEPT_REQUIRE(cond, what) CHECK((cond) && (what))
#include "accept_compare.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static AcceptTally tally;

/* ---- the bases -------------------------------------------------------- */

typedef struct Base {
    const char *name;
    int quick; /* 1: the quick path takes it; 0: valid, left to the full check */
    HurrayDescriptor *desc;
} Base;

/* NVFP4: 4-bit values two to a byte, an e4m3 scale per 16 along axis 1. */
static HurrayDescriptor *nvfp4(const uint64_t *matrix)
{
    HurrayDescriptor *desc = quantized(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, matrix,
                                       HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1,
                                       16, HURRAY_DTYPE_FLOAT8_E4M3FN);
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_LSB_FIRST));
    return desc;
}

static size_t make_bases(Base *out)
{
    static const uint64_t matrix[2] = {64, 32};
    static const uint64_t cube[3] = {4, 6, 8};
    static const uint64_t empty[2] = {0, 5};
    static const uint64_t row[1] = {256};
    size_t n = 0;

    out[n++] = (Base){"float32 matrix", 1, plain(HURRAY_DTYPE_FLOAT32, 2, matrix)};
    out[n++] = (Base){"rank 0", 1, plain(HURRAY_DTYPE_FLOAT64, 0, NULL)};
    out[n++] = (Base){"empty", 1, plain(HURRAY_DTYPE_INT16, 2, empty)};

    HurrayDescriptor *d = plain(HURRAY_DTYPE_FLOAT16, 3, cube);
    static const int64_t backwards[3] = {-48, 8, -1};
    CHECK_OK(hurray_descriptor_set_strides(d, 3, backwards));
    CHECK_OK(hurray_descriptor_set_byte_order(d, HURRAY_BYTE_ORDER_BIG));
    out[n++] = (Base){"negative strides, big-endian", 1, d};

    d = plain(HURRAY_DTYPE_INT4, 2, matrix);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_PADDED));
    out[n++] = (Base){"int4 padded", 1, d};

    d = plain(HURRAY_DTYPE_UINT2, 1, row);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_LSB_FIRST));
    out[n++] = (Base){"uint2 lsb_first", 1, d};

    d = quantized(HURRAY_DTYPE_INT8, 2, matrix, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS,
                  0, 0, HURRAY_DTYPE_FLOAT32);
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0));
    out[n++] = (Base){"affine per axis, zero point", 1, d};

    d = quantized(HURRAY_DTYPE_INT4, 2, matrix, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK,
                  1, 16, HURRAY_DTYPE_FLOAT16);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_LSB_FIRST));
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_FLOAT8_E4M3FN, 1,
                                        4096, 0));
    out[n++] = (Base){"affine int4 per block, fp8 zero point", 1, d};

    out[n++] = (Base){"affine fp8 per tensor", 1,
                      quantized(HURRAY_DTYPE_FLOAT8_E4M3FN, 1, row, HURRAY_SCHEME_AFFINE,
                                HURRAY_GRANULARITY_PER_TENSOR, 0, 0, HURRAY_DTYPE_BFLOAT16)};

    out[n++] = (Base){"OCP MX fp8", 1,
                      quantized(HURRAY_DTYPE_FLOAT8_E5M2, 2, matrix, HURRAY_SCHEME_MICROSCALING,
                                HURRAY_GRANULARITY_PER_BLOCK, 0, 32, HURRAY_DTYPE_FLOAT8_E8M0FNU)};

    d = quantized(HURRAY_DTYPE_FLOAT6_E2M3FN, 2, matrix, HURRAY_SCHEME_MICROSCALING,
                  HURRAY_GRANULARITY_PER_BLOCK, 1, 32, HURRAY_DTYPE_FLOAT8_E8M0FNU);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_PADDED));
    out[n++] = (Base){"OCP MX fp6 padded", 1, d};

    d = nvfp4(matrix);
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0,
                                        0));
    out[n++] = (Base){"NVFP4, global scale", 1, d};

    d = plain(HURRAY_DTYPE_UINT8, 2, (const uint64_t[2]){4, 64});
    CHECK_OK(hurray_descriptor_set_quantization(d, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0,
                                                0, HURRAY_GGML_Q4_0));
    out[n++] = (Base){"GGML q4_0", 1, d};

    d = plain(HURRAY_DTYPE_UINT8, 3, (const uint64_t[3]){2, 3, 512});
    CHECK_OK(hurray_descriptor_set_quantization(d, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0,
                                                0, HURRAY_GGML_Q6_K));
    out[n++] = (Base){"GGML q6_k", 1, d};

    /* Valid, but outside the quick path. */
    d = plain(HURRAY_DTYPE_INT4, 2, matrix);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_GGML_SPLIT));
    out[n++] = (Base){"int4 ggml_split", 0, d};

    d = nvfp4(matrix);
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
                                        HURRAY_PART_LAYOUT_SWIZZLED_128X4));
    out[n++] = (Base){"NVFP4, swizzled scale", 0, d};

    d = plain(HURRAY_DTYPE_UINT8, 1, (const uint64_t[1]){(uint64_t)1 << 56});
    out[n++] = (Base){"2^56 bytes", 0, d};
    return n;
}

/* ---- the sweeps ------------------------------------------------------- */

/* Parts the mask leaves out are never read; the mask sweep turns them on,
 * so they hold defined, plausible values first. */
static void fill_absent_parts(HurrayDescriptor *desc)
{
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            desc->parts[role - 1] = (HurrayDescriptorPart){.dtype = HURRAY_DTYPE_FLOAT32,
                                                           .layout = 0,
                                                           .buffer_index = role - 1,
                                                           .byte_offset = 0};
        }
    }
}

/* The one-byte fields, by address, with how far past the known codes the
 * pair sweep goes (the single sweep takes every byte value). */
typedef struct ByteField {
    uint8_t *field;
    uint32_t pair_limit;
} ByteField;

static size_t byte_fields(HurrayDescriptor *desc, ByteField *out)
{
    size_t n = 0;
    out[n++] = (ByteField){&desc->byte_order, 3};
    out[n++] = (ByteField){&desc->packing, 5};
    out[n++] = (ByteField){&desc->scheme, 5};
    out[n++] = (ByteField){&desc->granularity, 5};
    out[n++] = (ByteField){&desc->part_mask, 16};
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        out[n++] = (ByteField){&desc->parts[role - 1].dtype, HURRAY_DTYPE_BCOMPLEX32 + 2};
        out[n++] = (ByteField){&desc->parts[role - 1].layout, 3};
    }
    return n;
}

static void sweep_bytes(HurrayDescriptor *desc)
{
    ByteField fields[16];
    size_t n = byte_fields(desc, fields);
    for (size_t i = 0; i < n; i++) {
        uint8_t saved = *fields[i].field;
        for (uint32_t v = 0; v < 256; v++) {
            *fields[i].field = (uint8_t)v;
            accept_compare(desc, &tally);
        }
        *fields[i].field = saved;
    }
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n; j++) {
            uint8_t saved_i = *fields[i].field, saved_j = *fields[j].field;
            for (uint32_t a = 0; a < fields[i].pair_limit; a++) {
                for (uint32_t b = 0; b < fields[j].pair_limit; b++) {
                    *fields[i].field = (uint8_t)a;
                    *fields[j].field = (uint8_t)b;
                    accept_compare(desc, &tally);
                }
            }
            *fields[i].field = saved_i;
            *fields[j].field = saved_j;
        }
    }
}

static const uint64_t edges[] = {
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    16,
    31,
    32,
    33,
    64,
    128,
    255,
    256,
    (uint64_t)1 << 31,
    (uint64_t)1 << 32,
    (uint64_t)1 << 47,
    (uint64_t)1 << 48,
    (uint64_t)INT64_MAX / 255,
    (uint64_t)INT64_MAX / 255 + 1,
    (uint64_t)1 << 55,
    (uint64_t)1 << 56,
    (uint64_t)1 << 62,
    (uint64_t)INT64_MAX,
    (uint64_t)1 << 63,
    UINT64_MAX - 1,
    UINT64_MAX,
};

/* GGML and ggml_split need row-major strides: a dimension swept alone
 * breaks them, which would hide every rule checked after them. Strides that
 * wrap for huge shapes are refused either way. */
static void with_row_major_strides(HurrayDescriptor *desc)
{
    uint64_t step = 1;
    for (uint32_t k = desc->rank; k-- > 0;) {
        desc->strides[k] = (int64_t)step;
        step *= desc->shape[k] == 0 ? 1 : desc->shape[k];
    }
}

static void restore_strides(HurrayDescriptor *desc, const int64_t *saved)
{
    memcpy(desc->strides, saved, sizeof *saved * desc->rank);
}

static void sweep_numbers(HurrayDescriptor *desc)
{
    int64_t saved[HURRAY_MAX_RANK];
    memcpy(saved, desc->strides, sizeof *saved * desc->rank);
    uint32_t axis = desc->axis;
    uint64_t block_size = desc->block_size;
    uint32_t ggml_type = desc->ggml_type;
    for (size_t i = 0; i < COUNT(edges); i++) {
        desc->axis = (uint32_t)edges[i];
        accept_compare(desc, &tally);
        desc->axis = axis;
        desc->block_size = edges[i];
        accept_compare(desc, &tally);
        desc->block_size = block_size;
        desc->ggml_type = (uint32_t)edges[i];
        accept_compare(desc, &tally);
        desc->ggml_type = ggml_type;
        for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
            HurrayDescriptorPart *part = &desc->parts[role - 1];
            uint64_t index = part->buffer_index;
            part->buffer_index = edges[i];
            accept_compare(desc, &tally);
            part->buffer_index = index;
        }
        for (uint32_t k = 0; k < desc->rank; k++) {
            uint64_t dim = desc->shape[k];
            int64_t stride = desc->strides[k];
            desc->shape[k] = edges[i];
            accept_compare(desc, &tally);
            with_row_major_strides(desc);
            accept_compare(desc, &tally);
            restore_strides(desc, saved);
            for (size_t j = 0; j < COUNT(edges); j++) {
                desc->strides[k] = (int64_t)edges[j]; /* both signs: the edges near 2^64 */
                accept_compare(desc, &tally);
                desc->strides[k] = -(int64_t)(edges[j] >> 1);
                accept_compare(desc, &tally);
            }
            desc->strides[k] = stride;
            desc->shape[k] = dim;
        }
    }
}

int main(void)
{
    Base bases[24];
    size_t n = make_bases(bases);
    for (size_t i = 0; i < n; i++) {
        HurrayDescriptor *desc = bases[i].desc;
        CHECK_OK(hurray_descriptor_validate(desc));
        if (bases[i].quick != (int)hurray__descriptor_accept(desc)) {
            fprintf(stderr, "base \"%s\": the quick path should %s it\n", bases[i].name,
                    bases[i].quick ? "take" : "leave");
            return 1;
        }
        fill_absent_parts(desc);
        sweep_bytes(desc);
        sweep_numbers(desc);
        hurray_descriptor_destroy(&desc);
    }
    printf("quick path: %lu accepted, %lu valid left to the full check, %lu refused\n",
           tally.accepted, tally.declined_valid, tally.refused);
    /* The sweeps stay near valid bases: many variants must still be valid. */
    CHECK(tally.accepted > 10000);
    CHECK(tally.declined_valid > 1000);
    CHECK(tally.refused > 100000);
    checks_report("test_accept");
    return 0;
}
