/*
 * test_decode_quick.c -- decode's quick path against the full decode
 * (decode_compare.h), over byte strings made from a set of valid
 * encodings: every byte through all 256 values, every pair of header code
 * bytes through their known values and a few past them, every 64-bit word
 * past the frame (dimensions, strides, axis and ggml type, block size,
 * buffer indices, byte offsets) through the edges where arithmetic
 * overflows, and the length one byte short and one long.
 *
 * Also pins down where the quick path applies: each base is either taken by
 * it or, being valid, left to the full decode, as listed below -- so a quick
 * path that always declined (and so could never be wrong) fails too.
 *
 * Compiled with the library sources (it calls internals), at -O2 and under
 * AddressSanitizer and UBSan.
 */
#include "hurray.h"

#include "check.h"
#include "sample_descriptors.h"

#define DECODE_REQUIRE(cond, what) CHECK((cond) && (what))
#include "decode_compare.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

static DecodeTally tally;

typedef struct Base {
    const char *name;
    int quick; /* 1: the quick path takes it; 0: valid, left to the full decode */
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t len;
} Base;

/* Encodes desc into the base, and destroys it. */
static void add(Base *bases, size_t *n, const char *name, int quick, HurrayDescriptor *desc)
{
    Base *b = &bases[(*n)++];
    b->name = name;
    b->quick = quick;
    CHECK_OK(hurray_descriptor_encode(desc, b->bytes, sizeof b->bytes, &b->len));
    hurray_descriptor_destroy(&desc);
}

static size_t make_bases(Base *out)
{
    static const uint64_t matrix[2] = {64, 32};
    static const uint64_t cube[3] = {4, 6, 8};
    static const uint64_t empty[2] = {0, 5};
    static const uint64_t row[1] = {256};
    size_t n = 0;

    add(out, &n, "float32 matrix", 1, plain(HURRAY_DTYPE_FLOAT32, 2, matrix));
    add(out, &n, "rank 0", 1, plain(HURRAY_DTYPE_FLOAT64, 0, NULL));

    HurrayDescriptor *d = plain(HURRAY_DTYPE_FLOAT16, 3, cube);
    static const int64_t backwards[3] = {-48, 8, -1};
    CHECK_OK(hurray_descriptor_set_strides(d, 3, backwards));
    CHECK_OK(hurray_descriptor_set_byte_order(d, HURRAY_BYTE_ORDER_BIG));
    add(out, &n, "negative strides, big-endian", 1, d);

    d = plain(HURRAY_DTYPE_INT4, 2, matrix);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_PADDED));
    add(out, &n, "int4 padded", 1, d);

    d = plain(HURRAY_DTYPE_UINT2, 1, row);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_LSB_FIRST));
    add(out, &n, "uint2 lsb_first", 1, d);

    d = quantized(HURRAY_DTYPE_INT8, 2, matrix, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS,
                  0, 0, HURRAY_DTYPE_FLOAT32);
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0));
    add(out, &n, "affine per axis, zero point", 1, d);

    d = quantized(HURRAY_DTYPE_INT4, 2, matrix, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK,
                  1, 16, HURRAY_DTYPE_FLOAT16);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_LSB_FIRST));
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_FLOAT8_E4M3FN, 1,
                                        4096, 0));
    add(out, &n, "affine int4 per block, fp8 zero point", 1, d);

    add(out, &n, "affine fp8 per tensor", 1,
        quantized(HURRAY_DTYPE_FLOAT8_E4M3FN, 1, row, HURRAY_SCHEME_AFFINE,
                  HURRAY_GRANULARITY_PER_TENSOR, 0, 0, HURRAY_DTYPE_BFLOAT16));

    d = quantized(HURRAY_DTYPE_UINT8, 2, matrix, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS,
                  1, 0, HURRAY_DTYPE_FLOAT64);
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_VALUES, HURRAY_DTYPE_UINT8, 1, 8, 0));
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT64, 0, 0, 0));
    add(out, &n, "affine, buffers swapped", 1, d);

    d = plain(HURRAY_DTYPE_UINT8, 2, (const uint64_t[2]){4, 64});
    CHECK_OK(hurray_descriptor_set_quantization(d, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0,
                                                0, HURRAY_GGML_Q4_0));
    add(out, &n, "GGML q4_0", 1, d);

    d = plain(HURRAY_DTYPE_UINT8, 3, (const uint64_t[3]){2, 3, 512});
    CHECK_OK(hurray_descriptor_set_quantization(d, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0,
                                                0, HURRAY_GGML_Q6_K));
    add(out, &n, "GGML q6_k", 1, d);

    /* Valid, but outside the quick path. Tensors without elements are
     * left to the full decode, so that the quick walk needs no product of
     * the dimensions counted as at least one (ADR-047). */
    add(out, &n, "empty", 0, plain(HURRAY_DTYPE_INT16, 2, empty));
    d = quantized(HURRAY_DTYPE_UINT8, 2, empty, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS,
                  1, 0, HURRAY_DTYPE_FLOAT64);
    add(out, &n, "affine empty", 0, d);
    add(out, &n, "OCP MX fp8", 0,
        quantized(HURRAY_DTYPE_FLOAT8_E5M2, 2, matrix, HURRAY_SCHEME_MICROSCALING,
                  HURRAY_GRANULARITY_PER_BLOCK, 0, 32, HURRAY_DTYPE_FLOAT8_E8M0FNU));

    d = quantized(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, matrix, HURRAY_SCHEME_MICROSCALING,
                  HURRAY_GRANULARITY_PER_BLOCK, 1, 16, HURRAY_DTYPE_FLOAT8_E4M3FN);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_LSB_FIRST));
    CHECK_OK(hurray_descriptor_set_part(d, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
                                        HURRAY_PART_LAYOUT_SWIZZLED_128X4));
    add(out, &n, "NVFP4, swizzled scale", 0, d);

    d = plain(HURRAY_DTYPE_INT4, 2, matrix);
    CHECK_OK(hurray_descriptor_set_packing(d, HURRAY_PACKING_GGML_SPLIT));
    add(out, &n, "int4 ggml_split", 0, d);

    add(out, &n, "2^56 bytes", 0,
        plain(HURRAY_DTYPE_UINT8, 1, (const uint64_t[1]){(uint64_t)1 << 56}));
    return n;
}

/* ---- the sweeps ------------------------------------------------------- */

static void sweep_bytes(const Base *base)
{
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    for (uint64_t at = 0; at < base->len; at++) {
        memcpy(bytes, base->bytes, base->len);
        for (uint32_t v = 0; v < 256; v++) {
            bytes[at] = (uint8_t)v;
            decode_compare(bytes, base->len, &tally);
        }
    }
}

/* Header bytes 8-13 (rank, byte order, packing, scheme, granularity, part
 * count) in pairs, through the values around their codes. */
static void sweep_header_pairs(const Base *base)
{
    static const uint8_t values[] = {0, 1, 2, 3, 4, 5, 63, 64, 65, 255};
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    for (uint32_t i = 8; i < 14; i++) {
        for (uint32_t j = i + 1; j < 14; j++) {
            for (size_t a = 0; a < sizeof values; a++) {
                for (size_t b = 0; b < sizeof values; b++) {
                    memcpy(bytes, base->bytes, base->len);
                    bytes[i] = values[a];
                    bytes[j] = values[b];
                    decode_compare(bytes, base->len, &tally);
                }
            }
        }
    }
}

static const uint64_t edges[] = {0,
                                 1,
                                 2,
                                 3,
                                 4,
                                 16,
                                 31,
                                 32,
                                 (uint64_t)1 << 31,
                                 ((uint64_t)1 << 32) - 1,
                                 (uint64_t)1 << 32,
                                 ((uint64_t)1 << 32) + 1,
                                 (uint64_t)1 << 55,
                                 (uint64_t)1 << 56,
                                 ((uint64_t)1 << 62) + 1,
                                 (uint64_t)INT64_MAX,
                                 (uint64_t)INT64_MAX + 1,
                                 UINT64_MAX - 1,
                                 UINT64_MAX};

/* Every 32-bit and 64-bit word past the frame through the edges, little
 * end first as the encoding stores them. */
static void sweep_words(const Base *base)
{
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    for (uint32_t width = 4; width <= 8; width += 4) {
        for (uint64_t at = 16; at + width <= base->len; at += 4) {
            for (size_t e = 0; e < sizeof edges / sizeof edges[0]; e++) {
                memcpy(bytes, base->bytes, base->len);
                for (uint32_t i = 0; i < width; i++) {
                    bytes[at + i] = (uint8_t)(edges[e] >> (8 * i));
                }
                decode_compare(bytes, base->len, &tally);
            }
        }
    }
}

/* One byte short, one byte long, with the length field as it was and as
 * the new length. */
static void sweep_lengths(const Base *base)
{
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN + 1];
    for (int delta = -1; delta <= 1; delta += 2) {
        uint64_t len = base->len + (uint64_t)(int64_t)delta;
        for (int fix = 0; fix <= 1; fix++) {
            memcpy(bytes, base->bytes, base->len);
            bytes[base->len] = 0;
            if (fix) {
                bytes[6] = (uint8_t)len;
                bytes[7] = (uint8_t)(len >> 8);
            }
            decode_compare(bytes, len, &tally);
        }
    }
}

int main(void)
{
    static Base bases[24];
    size_t n = make_bases(bases);
    for (size_t i = 0; i < n; i++) {
        const Base *base = &bases[i];
        HurrayDescriptor *quick = hurray__descriptor_decode_quick(base->bytes, base->len);
        if (base->quick != (quick != NULL)) {
            fprintf(stderr, "base \"%s\": the quick path should %s it\n", base->name,
                    base->quick ? "take" : "leave");
            return 1;
        }
        hurray_descriptor_destroy(&quick);
        sweep_bytes(base);
        sweep_header_pairs(base);
        sweep_words(base);
        sweep_lengths(base);
    }
    printf("quick decode: %lu taken, %lu valid left to the full decode, %lu refused\n", tally.quick,
           tally.full_valid, tally.refused);
    /* The sweeps stay near valid bases: many variants must still be valid. */
    CHECK(tally.quick > 10000);
    CHECK(tally.full_valid > 1000);
    CHECK(tally.refused > 100000);
    checks_report("test_decode_quick");
    return 0;
}
