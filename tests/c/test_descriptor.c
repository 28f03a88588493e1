/*
 * test_descriptor.c -- layers 1-4 in C: the dtype table, the descriptor
 * builder and accessors, encode/decode, validation and
 * hurray_descriptor_check_buffers.
 *
 * Uses only hurray.h, so it runs against the installed libhurray and with
 * the library sources compiled in under sanitizers. Every buffer size below
 * is worked out by hand from docs/impl/descriptor-encoding.md, not asked of
 * the library. Set HURRAY_TEST_SCALE=N (N > 1) to skip the byte-value sweep,
 * the slowest part, under valgrind.
 */
#include "hurray.h"

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_ENCODED HURRAY_MAX_DESCRIPTOR_LEN

static int sweep_bytes = 1;

/* ---- helpers ---------------------------------------------------------- */

static HurrayDescriptor *make(uint32_t dtype, uint32_t rank, const uint64_t *shape)
{
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(dtype, rank, shape, &desc));
    CHECK(desc != NULL);
    return desc;
}

static uint64_t encode(const HurrayDescriptor *desc, uint8_t *out)
{
    uint64_t len = 0;
    CHECK_OK(hurray_descriptor_encode(desc, NULL, 0, &len));
    CHECK(len >= 48 && len <= MAX_ENCODED);
    uint64_t written = 0;
    CHECK_OK(hurray_descriptor_encode(desc, out, len, &written));
    CHECK(written == len);
    return len;
}

/* Decodes from an exact-size heap copy, so a sanitizer sees any overread. */
static HurrayStatus decode_exact(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out)
{
    uint8_t *copy = malloc(len == 0 ? 1 : len);
    CHECK(copy != NULL);
    if (len > 0) {
        memcpy(copy, bytes, len);
    }
    HurrayStatus status = hurray_descriptor_decode(copy, len, out);
    free(copy);
    return status;
}

static void check_same(const HurrayDescriptor *a, const HurrayDescriptor *b)
{
    uint32_t ua, ub;
    CHECK_OK(hurray_descriptor_dtype(a, &ua));
    CHECK_OK(hurray_descriptor_dtype(b, &ub));
    CHECK(ua == ub);
    uint32_t rank;
    CHECK_OK(hurray_descriptor_rank(a, &rank));
    CHECK_OK(hurray_descriptor_rank(b, &ub));
    CHECK(rank == ub);
    const uint64_t *sa, *sb;
    const int64_t *ta, *tb;
    CHECK_OK(hurray_descriptor_shape(a, &sa));
    CHECK_OK(hurray_descriptor_shape(b, &sb));
    CHECK_OK(hurray_descriptor_strides(a, &ta));
    CHECK_OK(hurray_descriptor_strides(b, &tb));
    for (uint32_t k = 0; k < rank; k++) {
        CHECK(sa[k] == sb[k]);
        CHECK(ta[k] == tb[k]);
    }
    CHECK_OK(hurray_descriptor_byte_order(a, &ua));
    CHECK_OK(hurray_descriptor_byte_order(b, &ub));
    CHECK(ua == ub);
    CHECK_OK(hurray_descriptor_packing(a, &ua));
    CHECK_OK(hurray_descriptor_packing(b, &ub));
    CHECK(ua == ub);
    uint32_t q1[4], q2[4];
    uint64_t bs1, bs2;
    CHECK_OK(hurray_descriptor_quantization(a, &q1[0], &q1[1], &q1[2], &bs1, &q1[3]));
    CHECK_OK(hurray_descriptor_quantization(b, &q2[0], &q2[1], &q2[2], &bs2, &q2[3]));
    CHECK(memcmp(q1, q2, sizeof q1) == 0 && bs1 == bs2);
    for (uint32_t role = HURRAY_ROLE_VALUES; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
        uint32_t d1, d2, l1, l2;
        uint64_t i1, i2, o1, o2;
        HurrayStatus s1 = hurray_descriptor_part(a, role, &d1, &i1, &o1, &l1);
        HurrayStatus s2 = hurray_descriptor_part(b, role, &d2, &i2, &o2, &l2);
        CHECK(s1 == s2);
        CHECK(s1 == HURRAY_OK || s1 == HURRAY_ERROR_NOT_FOUND);
        if (s1 == HURRAY_OK) {
            CHECK(d1 == d2 && i1 == i2 && o1 == o2 && l1 == l2);
        }
    }
    uint64_t c1, c2;
    CHECK_OK(hurray_descriptor_buffer_count(a, &c1));
    CHECK_OK(hurray_descriptor_buffer_count(b, &c2));
    CHECK(c1 == c2);
}

static HurrayBufferList *make_list(const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    for (size_t i = 0; i < count; i++) {
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_new(sizes[i], 1, &buf));
        CHECK_OK(hurray_buffer_list_push(list, &buf));
        CHECK(buf == NULL);
    }
    return list;
}

static HurrayStatus check_sizes(const HurrayDescriptor *desc, const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = make_list(sizes, count);
    HurrayStatus status = hurray_descriptor_check_buffers(desc, list);
    hurray_buffer_list_destroy(&list);
    CHECK(list == NULL);
    return status;
}

/* Every corruption of a valid encoding is either refused or decodes to a
 * descriptor whose encoding is exactly the corrupted bytes. */
static void check_decodes_canonically(const uint8_t *bytes, uint64_t len)
{
    HurrayDescriptor *desc = NULL;
    HurrayStatus status = decode_exact(bytes, len, &desc);
    if (status != HURRAY_OK) {
        CHECK(desc == NULL);
        CHECK(hurray_last_error_message()[0] != '\0');
        checks_passed++;
        return;
    }
    uint8_t again[MAX_ENCODED];
    uint64_t again_len = encode(desc, again);
    CHECK(again_len == len && memcmp(again, bytes, len) == 0);
    hurray_descriptor_destroy(&desc);
}

static void mutate_encoding(const uint8_t *bytes, uint64_t len)
{
    HurrayDescriptor *desc = NULL;
    for (uint64_t n = 0; n < len; n++) {
        CHECK_STATUS(decode_exact(bytes, n, &desc), HURRAY_ERROR_INVALID_DESCRIPTOR);
        CHECK(desc == NULL);
    }
    uint8_t longer[MAX_ENCODED + 1];
    memcpy(longer, bytes, len);
    longer[len] = 0;
    CHECK_STATUS(decode_exact(longer, len + 1, &desc), HURRAY_ERROR_INVALID_DESCRIPTOR);
    CHECK(desc == NULL);
    uint8_t flipped[MAX_ENCODED];
    for (uint64_t bit = 0; bit < 8 * len; bit++) {
        memcpy(flipped, bytes, len);
        flipped[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        check_decodes_canonically(flipped, len);
    }
}

/* Every value of every byte: reaches the unknown-code and ordering paths
 * that single bit flips may miss. */
static void sweep_encoding(const uint8_t *bytes, uint64_t len)
{
    if (!sweep_bytes) {
        return;
    }
    uint8_t changed[MAX_ENCODED];
    for (uint64_t i = 0; i < len; i++) {
        for (unsigned v = 0; v < 256; v++) {
            memcpy(changed, bytes, len);
            changed[i] = (uint8_t)v;
            check_decodes_canonically(changed, len);
        }
    }
}

/* The common proof for a valid descriptor whose buffers need exactly
 * sizes[0 .. count-1] bytes: it validates, round-trips byte for byte,
 * survives corruption, fits those buffers and no buffer a byte shorter,
 * and refuses a list of the wrong length. Destroys desc. */
static void exercise(HurrayDescriptor *desc, const uint64_t *sizes, size_t count)
{
    CHECK_OK(hurray_descriptor_validate(desc));
    uint64_t buffers = 0;
    CHECK_OK(hurray_descriptor_buffer_count(desc, &buffers));
    CHECK(buffers == count);

    uint8_t bytes[MAX_ENCODED];
    uint64_t len = encode(desc, bytes);
    uint32_t rank;
    CHECK_OK(hurray_descriptor_rank(desc, &rank));
    CHECK(len >= 32 + 16 * (uint64_t)rank + 16 && (len - 32 - 16 * (uint64_t)rank) % 16 == 0);
    CHECK(memcmp(bytes, "HRYD", 4) == 0);
    CHECK(bytes[4] == 1 && bytes[5] == 0);
    CHECK(bytes[6] + 256u * bytes[7] == len);
    CHECK(bytes[8] == rank);

    HurrayDescriptor *decoded = NULL;
    CHECK_OK(decode_exact(bytes, len, &decoded));
    check_same(desc, decoded);
    uint8_t again[MAX_ENCODED];
    CHECK(encode(decoded, again) == len);
    CHECK(memcmp(again, bytes, len) == 0);

    CHECK_OK(check_sizes(desc, sizes, count));
    CHECK_OK(check_sizes(decoded, sizes, count));
    uint64_t shorter[HURRAY_MAX_PARTS];
    for (size_t i = 0; i < count; i++) {
        if (sizes[i] == 0) {
            continue;
        }
        memcpy(shorter, sizes, count * sizeof sizes[0]);
        shorter[i]--;
        CHECK_FAIL(check_sizes(desc, shorter, count), HURRAY_ERROR_BUFFER_TOO_SMALL,
                   "descriptor: part");
    }
    uint64_t more[HURRAY_MAX_PARTS + 1];
    memcpy(more, sizes, count * sizeof sizes[0]);
    more[count] = 64;
    CHECK_FAIL(check_sizes(desc, more, count + 1), HURRAY_ERROR_INVALID_ARGUMENT, "buffer list");
    CHECK_FAIL(check_sizes(desc, sizes, count - 1), HURRAY_ERROR_INVALID_ARGUMENT, "buffer list");

    mutate_encoding(bytes, len);
    hurray_descriptor_destroy(&decoded);
    CHECK(decoded == NULL);
    hurray_descriptor_destroy(&desc);
    CHECK(desc == NULL);
}

static void set_quant(HurrayDescriptor *desc, uint32_t scheme, uint32_t granularity, uint32_t axis,
                      uint64_t block_size, uint32_t ggml_type)
{
    CHECK_OK(hurray_descriptor_set_quantization(desc, scheme, granularity, axis, block_size,
                                                ggml_type));
}

static void set_part(HurrayDescriptor *desc, uint32_t role, uint32_t dtype, uint64_t buffer,
                     uint64_t offset, uint32_t layout)
{
    CHECK_OK(hurray_descriptor_set_part(desc, role, dtype, buffer, offset, layout));
}

/* ---- layer 1: the dtype table ----------------------------------------- */

static const struct {
    uint32_t code;
    const char *name;
    uint32_t bits;
} expected_dtypes[] = {
    {HURRAY_DTYPE_BOOL, "bool", 8},
    {HURRAY_DTYPE_INT8, "int8", 8},
    {HURRAY_DTYPE_INT16, "int16", 16},
    {HURRAY_DTYPE_INT32, "int32", 32},
    {HURRAY_DTYPE_INT64, "int64", 64},
    {HURRAY_DTYPE_UINT8, "uint8", 8},
    {HURRAY_DTYPE_UINT16, "uint16", 16},
    {HURRAY_DTYPE_UINT32, "uint32", 32},
    {HURRAY_DTYPE_UINT64, "uint64", 64},
    {HURRAY_DTYPE_INT1, "int1", 1},
    {HURRAY_DTYPE_INT2, "int2", 2},
    {HURRAY_DTYPE_INT4, "int4", 4},
    {HURRAY_DTYPE_UINT1, "uint1", 1},
    {HURRAY_DTYPE_UINT2, "uint2", 2},
    {HURRAY_DTYPE_UINT4, "uint4", 4},
    {HURRAY_DTYPE_FLOAT16, "float16", 16},
    {HURRAY_DTYPE_FLOAT32, "float32", 32},
    {HURRAY_DTYPE_FLOAT64, "float64", 64},
    {HURRAY_DTYPE_BFLOAT16, "bfloat16", 16},
    {HURRAY_DTYPE_COMPLEX32, "complex32", 32},
    {HURRAY_DTYPE_COMPLEX64, "complex64", 64},
    {HURRAY_DTYPE_COMPLEX128, "complex128", 128},
    {HURRAY_DTYPE_FLOAT8_E3M4, "float8_e3m4", 8},
    {HURRAY_DTYPE_FLOAT8_E4M3, "float8_e4m3", 8},
    {HURRAY_DTYPE_FLOAT8_E4M3B11FNUZ, "float8_e4m3b11fnuz", 8},
    {HURRAY_DTYPE_FLOAT8_E4M3FN, "float8_e4m3fn", 8},
    {HURRAY_DTYPE_FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 8},
    {HURRAY_DTYPE_FLOAT8_E5M2, "float8_e5m2", 8},
    {HURRAY_DTYPE_FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 8},
    {HURRAY_DTYPE_FLOAT8_E8M0FNU, "float8_e8m0fnu", 8},
    {HURRAY_DTYPE_FLOAT6_E2M3FN, "float6_e2m3fn", 6},
    {HURRAY_DTYPE_FLOAT6_E3M2FN, "float6_e3m2fn", 6},
    {HURRAY_DTYPE_FLOAT4_E2M1FN, "float4_e2m1fn", 4},
    {HURRAY_DTYPE_BCOMPLEX32, "bcomplex32", 32},
    {HURRAY_DTYPE_UINT3, "uint3", 3},
    {HURRAY_DTYPE_UINT5, "uint5", 5},
    {HURRAY_DTYPE_UINT6, "uint6", 6},
    {HURRAY_DTYPE_UINT7, "uint7", 7},
    {HURRAY_DTYPE_INT3, "int3", 3},
    {HURRAY_DTYPE_INT5, "int5", 5},
    {HURRAY_DTYPE_INT6, "int6", 6},
    {HURRAY_DTYPE_INT7, "int7", 7},
};

static void test_dtype_table(void)
{
    for (size_t i = 0; i < COUNT(expected_dtypes); i++) {
        uint32_t bits = 0;
        CHECK_OK(hurray_dtype_bits(expected_dtypes[i].code, &bits));
        CHECK(bits == expected_dtypes[i].bits);
        const char *name = hurray_dtype_name(expected_dtypes[i].code);
        CHECK(name != NULL && strcmp(name, expected_dtypes[i].name) == 0);
    }
    /* Every code the table does not list is unknown, and bits is left alone. */
    for (uint32_t code = 0; code < 300; code++) {
        int listed = 0;
        for (size_t i = 0; i < COUNT(expected_dtypes); i++) {
            listed |= expected_dtypes[i].code == code;
        }
        if (listed) {
            continue;
        }
        uint32_t bits = 12345;
        CHECK_FAIL(hurray_dtype_bits(code, &bits), HURRAY_ERROR_UNSUPPORTED, "unknown");
        CHECK(bits == 12345);
        CHECK(hurray_dtype_name(code) == NULL);
    }
    uint32_t bits;
    CHECK_FAIL(hurray_dtype_bits(UINT32_MAX, &bits), HURRAY_ERROR_UNSUPPORTED, "unknown");
    CHECK(hurray_dtype_name(UINT32_MAX) == NULL);
    CHECK_STATUS(hurray_dtype_bits(HURRAY_DTYPE_INT8, NULL), HURRAY_ERROR_NULL_ARGUMENT);
}

/* ---- builder defaults, every dtype ------------------------------------ */

static void test_every_dtype_plain(void)
{
    static const uint64_t shape[3] = {2, 3, 4};
    for (size_t i = 0; i < COUNT(expected_dtypes); i++) {
        uint32_t code = expected_dtypes[i].code;
        uint32_t bits = expected_dtypes[i].bits;
        HurrayDescriptor *desc = make(code, 3, shape);
        uint32_t u;
        CHECK_OK(hurray_descriptor_dtype(desc, &u));
        CHECK(u == code);
        CHECK_OK(hurray_descriptor_rank(desc, &u));
        CHECK(u == 3);
        const uint64_t *got_shape;
        const int64_t *got_strides;
        CHECK_OK(hurray_descriptor_shape(desc, &got_shape));
        CHECK_OK(hurray_descriptor_strides(desc, &got_strides));
        CHECK(got_shape[0] == 2 && got_shape[1] == 3 && got_shape[2] == 4);
        CHECK(got_strides[0] == 12 && got_strides[1] == 4 && got_strides[2] == 1);
        CHECK_OK(hurray_descriptor_byte_order(desc, &u));
        CHECK(u == HURRAY_BYTE_ORDER_LITTLE);
        uint32_t packing;
        CHECK_OK(hurray_descriptor_packing(desc, &packing));
        /* Padded where lsb_first does not fit: fp6 and the 3-, 5-, 6- and 7-bit integers. */
        uint32_t want_packing = bits >= 8                             ? HURRAY_PACKING_NONE
                                : bits == 1 || bits == 2 || bits == 4 ? HURRAY_PACKING_LSB_FIRST
                                                                      : HURRAY_PACKING_PADDED;
        CHECK(packing == want_packing);
        uint32_t scheme = 9, granularity = 9, axis = 9, ggml = 9;
        uint64_t block = 9;
        CHECK_OK(hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block, &ggml));
        CHECK(scheme == 0 && granularity == 0 && axis == 0 && block == 0 && ggml == 0);
        uint32_t dtype, layout;
        uint64_t index = 9, offset = 9;
        CHECK_OK(hurray_descriptor_part(desc, HURRAY_ROLE_VALUES, &dtype, &index, &offset,
                                        &layout));
        CHECK(dtype == code && index == 0 && offset == 0 && layout == HURRAY_PART_LAYOUT_ROW_MAJOR);
        for (uint32_t role = HURRAY_ROLE_SCALE; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
            dtype = 777;
            CHECK_FAIL(hurray_descriptor_part(desc, role, &dtype, &index, &offset, &layout),
                       HURRAY_ERROR_NOT_FOUND, "no");
            CHECK(dtype == 777);
        }
        /* 24 elements at their storage width (a padded one takes a byte). */
        uint64_t width = want_packing == HURRAY_PACKING_PADDED ? 8 : bits;
        uint64_t size = (24 * width + 7) / 8;
        uint64_t sizes[1] = {size};
        exercise(desc, sizes, 1);
    }
}

static void test_scalar_and_max_rank(void)
{
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT64, 0, NULL);
    uint8_t bytes[MAX_ENCODED];
    CHECK(encode(desc, bytes) == 48);
    uint64_t sizes[1] = {8};
    exercise(desc, sizes, 1);

    uint64_t ones[HURRAY_MAX_RANK];
    for (int k = 0; k < HURRAY_MAX_RANK; k++) {
        ones[k] = 1;
    }
    desc = make(HURRAY_DTYPE_FLOAT32, HURRAY_MAX_RANK, ones);
    CHECK(encode(desc, bytes) == 32 + 16 * HURRAY_MAX_RANK + 16);
    sizes[0] = 4;
    exercise(desc, sizes, 1);

    /* Largest legal encoding: rank 64 and three parts. */
    desc = make(HURRAY_DTYPE_INT8, HURRAY_MAX_RANK, ones);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 63, 1, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0);
    CHECK(encode(desc, bytes) == 32 + 16 * HURRAY_MAX_RANK + 48);
    CHECK(32 + 16 * HURRAY_MAX_RANK + 48 <= HURRAY_MAX_DESCRIPTOR_LEN);
    uint64_t three[3] = {1, 4, 1};
    exercise(desc, three, 3);
}

/* ---- layer 3: every scheme -------------------------------------------- */

static void test_affine(void)
{
    /* Parts mostly get a buffer each: a buffer one byte short then proves
     * the reach of exactly one part. */

    /* per tensor */
    uint64_t s48[2] = {4, 8};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_INT8, 2, s48);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0);
    uint64_t sizes_c[3] = {32, 4, 1};
    exercise(desc, sizes_c, 3);

    /* per tensor, scale and zero point sharing buffer 1 */
    desc = make(HURRAY_DTYPE_INT8, 2, s48);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 1, 4, 0);
    uint32_t dtype, layout;
    uint64_t index, offset;
    CHECK_OK(hurray_descriptor_part(desc, HURRAY_ROLE_ZERO_POINT, &dtype, &index, &offset,
                                    &layout));
    CHECK(dtype == HURRAY_DTYPE_INT8 && index == 1 && offset == 4 && layout == 0);
    uint64_t sizes_c2[2] = {32, 5};
    exercise(desc, sizes_c2, 2);

    /* per axis 0 and per axis 1, three buffers */
    uint64_t s35[2] = {3, 5};
    desc = make(HURRAY_DTYPE_UINT8, 2, s35);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_UINT8, 2, 0, 0);
    uint64_t sizes_d[3] = {15, 6, 3};
    exercise(desc, sizes_d, 3);
    desc = make(HURRAY_DTYPE_UINT8, 2, s35);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_UINT8, 2, 0, 0);
    uint64_t sizes_d1[3] = {15, 10, 5};
    exercise(desc, sizes_d1, 3);

    /* per block along the last axis, packed int4 */
    uint64_t s464[2] = {4, 64};
    desc = make(HURRAY_DTYPE_INT4, 2, s464);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0);
    uint32_t scheme, granularity, axis, ggml;
    uint64_t block;
    CHECK_OK(hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block, &ggml));
    CHECK(scheme == HURRAY_SCHEME_AFFINE && granularity == HURRAY_GRANULARITY_PER_BLOCK &&
          axis == 1 && block == 32 && ggml == 0);
    uint64_t sizes_e[3] = {128, 16, 8};
    exercise(desc, sizes_e, 3);

    /* per block along axis 0, padded uint4, scales after the values in one buffer */
    uint64_t s643[2] = {64, 3};
    desc = make(HURRAY_DTYPE_UINT4, 2, s643);
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_PADDED));
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 0, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_BFLOAT16, 0, 192, 0);
    uint64_t sizes_f[1] = {216};
    exercise(desc, sizes_f, 1);

    /* fp8 values, float64 scale, float16 zero point */
    uint64_t s22[2] = {2, 2};
    desc = make(HURRAY_DTYPE_FLOAT8_E4M3FN, 2, s22);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT64, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_FLOAT16, 2, 0, 0);
    uint64_t sizes_g[3] = {4, 16, 4};
    exercise(desc, sizes_g, 3);

    /* values in buffer 1, scale in buffer 0: indices need not follow roles */
    uint64_t s4[1] = {4};
    desc = make(HURRAY_DTYPE_INT8, 1, s4);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT8, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 0, 0, 0);
    uint64_t sizes_u[2] = {4, 4};
    exercise(desc, sizes_u, 2);

    /* big-endian int16 values and float32 scale */
    desc = make(HURRAY_DTYPE_INT16, 1, s4);
    CHECK_OK(hurray_descriptor_set_byte_order(desc, HURRAY_BYTE_ORDER_BIG));
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 0, 8, 0);
    uint64_t sizes_be[1] = {12};
    exercise(desc, sizes_be, 1);
}

static void test_microscaling(void)
{
    /* MXFP8: E4M3 values, E8M0 scales, blocks of 32 along axis 1 */
    uint64_t s864[2] = {8, 64};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT8_E4M3FN, 2, s864);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    uint64_t sizes_h[2] = {512, 16};
    exercise(desc, sizes_h, 2);

    /* MXFP4, packed two per byte */
    uint64_t s464[2] = {4, 64};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s464);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    uint64_t sizes_i[2] = {128, 8};
    exercise(desc, sizes_i, 2);

    /* MXFP6, padded */
    uint64_t s232[2] = {2, 32};
    desc = make(HURRAY_DTYPE_FLOAT6_E3M2FN, 2, s232);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    uint64_t sizes_j[2] = {64, 2};
    exercise(desc, sizes_j, 2);

    /* MXINT8 with a global scale beside the block scale */
    uint64_t s32[1] = {32};
    desc = make(HURRAY_DTYPE_INT8, 1, s32);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 0, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0, 0);
    uint64_t sizes_k[3] = {32, 1, 4};
    exercise(desc, sizes_k, 3);

    /* NVFP4: swizzled E4M3 scales, whole tiles */
    uint64_t s25664[2] = {256, 64};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s25664);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0, 0);
    uint32_t dtype, layout;
    uint64_t index, offset;
    CHECK_OK(hurray_descriptor_part(desc, HURRAY_ROLE_SCALE, &dtype, &index, &offset, &layout));
    CHECK(dtype == HURRAY_DTYPE_FLOAT8_E4M3FN && layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    uint64_t sizes_l[3] = {8192, 1024, 4};
    exercise(desc, sizes_l, 3);

    /* NVFP4 with padding: 130 rows -> 256, 3 scale columns -> 4 */
    uint64_t s13048[2] = {130, 48};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s13048);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0, 0);
    uint64_t sizes_m[3] = {3120, 1024, 4};
    exercise(desc, sizes_m, 3);

    /* NVFP4, one row of one block: a whole 128 x 4 tile of scales */
    uint64_t s116[2] = {1, 16};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s116);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    uint64_t sizes_o[2] = {8, 512};
    exercise(desc, sizes_o, 2);

    /* MXFP8 with swizzled scales: 129 rows -> 256, 5 scale columns -> 8 */
    uint64_t s129160[2] = {129, 160};
    desc = make(HURRAY_DTYPE_FLOAT8_E5M2, 2, s129160);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    uint64_t sizes_p[2] = {129 * 160, 256 * 8};
    exercise(desc, sizes_p, 2);

    /* NVFP4 with row-major scales and no global scale */
    uint64_t s332[2] = {3, 32};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s332);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0, 0);
    uint64_t sizes_n[2] = {48, 6};
    exercise(desc, sizes_n, 2);
}

static void test_ggml(void)
{
    static const struct {
        uint32_t type;
        uint64_t bytes; /* for 2 x 256 elements */
    } cases[] = {
        {HURRAY_GGML_Q4_0, 16 * 18}, {HURRAY_GGML_Q4_1, 16 * 20}, {HURRAY_GGML_Q5_0, 16 * 22},
        {HURRAY_GGML_Q5_1, 16 * 24}, {HURRAY_GGML_Q8_0, 16 * 34}, {HURRAY_GGML_MXFP4, 16 * 17},
        {HURRAY_GGML_Q4_K, 2 * 144}, {HURRAY_GGML_Q6_K, 2 * 210},
    };
    uint64_t shape[2] = {2, 256};
    for (size_t i = 0; i < COUNT(cases); i++) {
        HurrayDescriptor *desc = make(HURRAY_DTYPE_UINT8, 2, shape);
        set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, cases[i].type);
        uint32_t scheme, granularity, axis, ggml;
        uint64_t block;
        CHECK_OK(hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block, &ggml));
        CHECK(scheme == HURRAY_SCHEME_GGML && ggml == cases[i].type);
        uint64_t sizes[1] = {cases[i].bytes};
        exercise(desc, sizes, 1);

        /* the same blocks 16 bytes into the buffer */
        desc = make(HURRAY_DTYPE_UINT8, 2, shape);
        set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, cases[i].type);
        set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_UINT8, 0, 16, 0);
        sizes[0] = cases[i].bytes + 16;
        exercise(desc, sizes, 1);
    }
    /* a 32-element row of Q8_0 in one dimension */
    uint64_t s32[1] = {32};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_UINT8, 1, s32);
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q8_0);
    uint64_t sizes[1] = {34};
    exercise(desc, sizes, 1);
}

/* ---- layer 2: packing, strides, byte order ---------------------------- */

static void test_packing(void)
{
    static const struct {
        uint32_t dtype;
        uint32_t packing;
        uint64_t count;
        uint64_t bytes;
    } cases[] = {
        {HURRAY_DTYPE_INT4, HURRAY_PACKING_PADDED, 64, 64},
        {HURRAY_DTYPE_INT4, HURRAY_PACKING_LSB_FIRST, 64, 32},
        {HURRAY_DTYPE_INT4, HURRAY_PACKING_GGML_SPLIT, 64, 32},
        {HURRAY_DTYPE_UINT4, HURRAY_PACKING_GGML_SPLIT, 32, 16},
        {HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_PACKING_GGML_SPLIT, 96, 48},
        {HURRAY_DTYPE_INT4, HURRAY_PACKING_LSB_FIRST, 5, 3},
        {HURRAY_DTYPE_UINT2, HURRAY_PACKING_LSB_FIRST, 5, 2},
        {HURRAY_DTYPE_UINT2, HURRAY_PACKING_PADDED, 5, 5},
        {HURRAY_DTYPE_INT2, HURRAY_PACKING_LSB_FIRST, 4, 1},
        {HURRAY_DTYPE_INT1, HURRAY_PACKING_LSB_FIRST, 9, 2},
        {HURRAY_DTYPE_UINT1, HURRAY_PACKING_LSB_FIRST, 8, 1},
        {HURRAY_DTYPE_UINT1, HURRAY_PACKING_PADDED, 8, 8},
        {HURRAY_DTYPE_FLOAT6_E2M3FN, HURRAY_PACKING_PADDED, 7, 7},
        {HURRAY_DTYPE_FLOAT4_E2M1FN, HURRAY_PACKING_PADDED, 7, 7},
    };
    for (size_t i = 0; i < COUNT(cases); i++) {
        uint64_t shape[1] = {cases[i].count};
        HurrayDescriptor *desc = make(cases[i].dtype, 1, shape);
        CHECK_OK(hurray_descriptor_set_packing(desc, cases[i].packing));
        uint32_t packing;
        CHECK_OK(hurray_descriptor_packing(desc, &packing));
        CHECK(packing == cases[i].packing);
        uint64_t sizes[1] = {cases[i].bytes};
        exercise(desc, sizes, 1);
    }
    /* ggml_split in two dimensions */
    uint64_t s232[2] = {2, 32};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_INT4, 2, s232);
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_GGML_SPLIT));
    uint64_t sizes[1] = {32};
    exercise(desc, sizes, 1);
}

static void test_strides(void)
{
    uint64_t s34[2] = {3, 4};
    int64_t back_rows[2] = {-4, 1};
    /* rows walk backwards: the first element is row 0, the lowest row 2 */
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT32, 2, s34);
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, back_rows));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 32, 0);
    const int64_t *got;
    CHECK_OK(hurray_descriptor_strides(desc, &got));
    CHECK(got[0] == -4 && got[1] == 1);
    CHECK_OK(check_sizes(desc, (uint64_t[]){48}, 1));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 31, 0);
    CHECK_FAIL(check_sizes(desc, (uint64_t[]){48}, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "before the start");
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 32, 0);
    exercise(desc, (uint64_t[]){48}, 1);

    /* columns walk backwards */
    int64_t back_cols[2] = {4, -1};
    desc = make(HURRAY_DTYPE_FLOAT32, 2, s34);
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, back_cols));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 12, 0);
    exercise(desc, (uint64_t[]){48}, 1);
    desc = make(HURRAY_DTYPE_FLOAT32, 2, s34);
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, back_cols));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 11, 0);
    CHECK_FAIL(check_sizes(desc, (uint64_t[]){48}, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "before the start");
    hurray_descriptor_destroy(&desc);

    /* packed int4 walking backwards: element 3 lies in the high nibble of
     * byte 0 when element 0 starts at byte 2 */
    uint64_t s4[1] = {4};
    int64_t minus_one[1] = {-1};
    desc = make(HURRAY_DTYPE_INT4, 1, s4);
    CHECK_OK(hurray_descriptor_set_strides(desc, 1, minus_one));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT4, 0, 2, 0);
    exercise(desc, (uint64_t[]){3}, 1);
    desc = make(HURRAY_DTYPE_INT4, 1, s4);
    CHECK_OK(hurray_descriptor_set_strides(desc, 1, minus_one));
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT4, 0, 1, 0);
    CHECK_FAIL(check_sizes(desc, (uint64_t[]){3}, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "before the start");
    hurray_descriptor_destroy(&desc);

    /* broadcast (stride 0) and transposed */
    uint64_t s10004[2] = {1000, 4};
    desc = make(HURRAY_DTYPE_FLOAT32, 2, s10004);
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, (int64_t[]){0, 1}));
    exercise(desc, (uint64_t[]){16}, 1);
    desc = make(HURRAY_DTYPE_INT16, 2, s34);
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, (int64_t[]){1, 3}));
    exercise(desc, (uint64_t[]){24}, 1);

    /* big-endian and complex */
    uint64_t s3[1] = {3};
    desc = make(HURRAY_DTYPE_COMPLEX128, 1, s3);
    CHECK_OK(hurray_descriptor_set_byte_order(desc, HURRAY_BYTE_ORDER_BIG));
    uint32_t order;
    CHECK_OK(hurray_descriptor_byte_order(desc, &order));
    CHECK(order == HURRAY_BYTE_ORDER_BIG);
    exercise(desc, (uint64_t[]){48}, 1);
    desc = make(HURRAY_DTYPE_FLOAT32, 2, (uint64_t[]){2, 2});
    CHECK_OK(hurray_descriptor_set_byte_order(desc, HURRAY_BYTE_ORDER_BIG));
    exercise(desc, (uint64_t[]){16}, 1);

    /* an offset so large that offset + reach wraps: refused, not wrapped */
    desc = make(HURRAY_DTYPE_FLOAT32, 1, s4);
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, UINT64_MAX - 7, 0);
    CHECK_OK(hurray_descriptor_validate(desc));
    CHECK_FAIL(check_sizes(desc, (uint64_t[]){16}, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "part values");
    hurray_descriptor_destroy(&desc);
}

static void test_empty_tensors(void)
{
    /* no elements: no bytes reached, whatever the offsets say */
    uint64_t s05[2] = {0, 5};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT32, 2, s05);
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 1000, 0);
    CHECK_OK(check_sizes(desc, (uint64_t[]){0}, 1));
    const int64_t *strides;
    CHECK_OK(hurray_descriptor_strides(desc, &strides));
    CHECK(strides[0] == 5 && strides[1] == 1);
    hurray_descriptor_destroy(&desc);

    desc = make(HURRAY_DTYPE_INT8, 2, s05);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 1, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0);
    exercise(desc, (uint64_t[]){0, 0}, 2);

    uint64_t s064[2] = {0, 64};
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, s064);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    exercise(desc, (uint64_t[]){0, 0}, 2);

    uint64_t s032[2] = {0, 32};
    desc = make(HURRAY_DTYPE_UINT8, 2, s032);
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q4_0);
    exercise(desc, (uint64_t[]){0}, 1);

    /* a zero dimension does not excuse a shape whose other dimensions overflow */
    uint64_t huge_but_empty[3] = {0, UINT64_C(1) << 32, UINT64_C(1) << 32};
    desc = NULL;
    CHECK_FAIL(hurray_descriptor_new(HURRAY_DTYPE_INT8, 3, huge_but_empty, &desc),
               HURRAY_ERROR_OVERFLOW, "element count overflows 63 bits");
    CHECK(desc == NULL);
}

/* ---- refusals: builder and validation --------------------------------- */

/* Expects validate and encode to refuse desc the same way; destroys it. */
static void expect_invalid(HurrayDescriptor *desc, HurrayStatus status, const char *words)
{
    CHECK_FAIL(hurray_descriptor_validate(desc), status, words);
    uint8_t bytes[MAX_ENCODED];
    uint64_t len = 4242;
    CHECK_FAIL(hurray_descriptor_encode(desc, bytes, sizeof bytes, &len), status, words);
    CHECK(len == 4242);
    CHECK_FAIL(hurray_descriptor_encode(desc, NULL, 0, &len), status, words);
    CHECK(len == 4242);
    HurrayBufferList *list = make_list((uint64_t[]){1 << 20, 1 << 20, 1 << 20}, 3);
    CHECK_FAIL(hurray_descriptor_check_buffers(desc, list), status, words);
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
}

static HurrayDescriptor *affine_block(void)
{
    uint64_t s464[2] = {4, 64};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_INT8, 2, s464);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    return desc;
}

static HurrayDescriptor *nvfp4(void)
{
    uint64_t s = 128, shape[2] = {s, 64};
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, shape);
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0, 0);
    return desc;
}

static HurrayDescriptor *ggml_q4_0(void)
{
    HurrayDescriptor *desc = make(HURRAY_DTYPE_UINT8, 2, (uint64_t[]){2, 64});
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q4_0);
    return desc;
}

/* One check per handoff (ADR-046): a descriptor that passed a check keeps
 * the verdict, and every setter forgets it. Each case validates a good
 * descriptor (so it is kept), then breaks it through one setter: validate,
 * encode and check_buffers must all refuse, which they could not if the
 * kept verdict survived the setter. */
static HurrayDescriptor *checked_plain(void)
{
    HurrayDescriptor *desc = make(HURRAY_DTYPE_FLOAT32, 2, (uint64_t[]){4, 8});
    CHECK_STATUS(hurray_descriptor_validate(desc), HURRAY_OK);
    uint8_t bytes[MAX_ENCODED];
    uint64_t len = 0;
    CHECK_STATUS(hurray_descriptor_encode(desc, bytes, sizeof bytes, &len), HURRAY_OK);
    return desc;
}

static void test_setters_forget_the_verdict(void)
{
    HurrayDescriptor *desc = checked_plain();
    CHECK_STATUS(hurray_descriptor_set_packing(desc, HURRAY_PACKING_LSB_FIRST), HURRAY_OK);
    expect_invalid(desc, HURRAY_ERROR_INVALID_DESCRIPTOR, "packing");

    desc = checked_plain();
    CHECK_STATUS(hurray_descriptor_set_byte_order(desc, HURRAY_BYTE_ORDER_BIG), HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_set_quantization(desc, HURRAY_SCHEME_AFFINE,
                                                    HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0),
                 HURRAY_OK);
    expect_invalid(desc, HURRAY_ERROR_INVALID_DESCRIPTOR, "affine");

    desc = checked_plain();
    CHECK_STATUS(hurray_descriptor_set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 1, 0,
                                            HURRAY_PART_LAYOUT_ROW_MAJOR),
                 HURRAY_OK);
    expect_invalid(desc, HURRAY_ERROR_INVALID_DESCRIPTOR, "buffer");

    /* Strides: a valid descriptor again, whose reach grows; the kept facts
     * would let a one-span list through that the new reach overflows. */
    desc = checked_plain();
    HurrayBufferList *list = make_list((uint64_t[]){4 * 8 * 4}, 1);
    CHECK_STATUS(hurray_descriptor_check_buffers(desc, list), HURRAY_OK);
    CHECK_STATUS(hurray_descriptor_set_strides(desc, 2, (int64_t[]){16, 1}), HURRAY_OK);
    CHECK_FAIL(hurray_descriptor_check_buffers(desc, list), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "reaches");
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
}

static void test_builder_refusals(void)
{
    HurrayDescriptor *desc = NULL;
    uint64_t shape[HURRAY_MAX_RANK + 1] = {0};
    CHECK_FAIL(hurray_descriptor_new(HURRAY_DTYPE_INT8, HURRAY_MAX_RANK + 1, shape, &desc),
               HURRAY_ERROR_INVALID_ARGUMENT, "rank 65");
    CHECK_FAIL(hurray_descriptor_new(99, 1, shape, &desc), HURRAY_ERROR_UNSUPPORTED, "dtype 99");
    CHECK_FAIL(hurray_descriptor_new(0, 1, shape, &desc), HURRAY_ERROR_UNSUPPORTED, "dtype 0");
    CHECK_FAIL(hurray_descriptor_new(HURRAY_DTYPE_INT8, 1, NULL, &desc), HURRAY_ERROR_NULL_ARGUMENT,
               "shape");
    CHECK_FAIL(hurray_descriptor_new(HURRAY_DTYPE_INT8, 1, shape, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "out");
    uint64_t big[2] = {UINT64_C(1) << 32, UINT64_C(1) << 31};
    CHECK_FAIL(hurray_descriptor_new(HURRAY_DTYPE_INT8, 2, big, &desc), HURRAY_ERROR_OVERFLOW,
               "descriptor: shape[0]: element count overflows 63 bits");
    CHECK(desc == NULL);
    /* one bit per element: 2^63 - 2^32 elements still fit 63 bits */
    uint64_t just_fits[2] = {UINT64_C(1) << 32, (UINT64_C(1) << 31) - 1};
    desc = make(HURRAY_DTYPE_UINT1, 2, just_fits);
    CHECK_OK(hurray_descriptor_validate(desc));

    CHECK_FAIL(hurray_descriptor_set_strides(desc, 3, (int64_t[]){1, 1, 1}),
               HURRAY_ERROR_INVALID_ARGUMENT, "rank 2");
    CHECK_FAIL(hurray_descriptor_set_strides(desc, 2, NULL), HURRAY_ERROR_NULL_ARGUMENT, "strides");
    CHECK_FAIL(hurray_descriptor_set_strides(NULL, 2, (int64_t[]){1, 1}),
               HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_set_byte_order(desc, 2), HURRAY_ERROR_UNSUPPORTED, "byte order 2");
    CHECK_FAIL(hurray_descriptor_set_packing(desc, 4), HURRAY_ERROR_UNSUPPORTED, "packing 4");
    CHECK_FAIL(hurray_descriptor_set_quantization(desc, 4, 0, 0, 0, 0), HURRAY_ERROR_UNSUPPORTED,
               "scheme 4");
    CHECK_FAIL(hurray_descriptor_set_quantization(desc, 0, 4, 0, 0, 0), HURRAY_ERROR_UNSUPPORTED,
               "granularity 4");
    CHECK_FAIL(hurray_descriptor_set_quantization(desc, 3, 0, 0, 0, 1), HURRAY_ERROR_UNSUPPORTED,
               "ggml type 1");
    CHECK_FAIL(hurray_descriptor_set_part(desc, 0, HURRAY_DTYPE_INT8, 0, 0, 0),
               HURRAY_ERROR_UNSUPPORTED, "role 0");
    CHECK_FAIL(hurray_descriptor_set_part(desc, 5, HURRAY_DTYPE_INT8, 0, 0, 0),
               HURRAY_ERROR_UNSUPPORTED, "role 5");
    CHECK_FAIL(hurray_descriptor_set_part(desc, HURRAY_ROLE_SCALE, 99, 0, 0, 0),
               HURRAY_ERROR_UNSUPPORTED, "part scale: dtype 99 is unknown");
    CHECK_FAIL(hurray_descriptor_set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 0, 0, 2),
               HURRAY_ERROR_UNSUPPORTED, "layout 2");
    /* refused setters changed nothing */
    uint32_t u;
    CHECK_OK(hurray_descriptor_byte_order(desc, &u));
    CHECK(u == HURRAY_BYTE_ORDER_LITTLE);
    CHECK_OK(hurray_descriptor_validate(desc));

    /* accessors */
    uint32_t dtype, layout;
    uint64_t index, offset;
    CHECK_FAIL(hurray_descriptor_part(desc, 0, &dtype, &index, &offset, &layout),
               HURRAY_ERROR_UNSUPPORTED, "role 0");
    CHECK_FAIL(hurray_descriptor_part(desc, 1, NULL, &index, &offset, &layout),
               HURRAY_ERROR_NULL_ARGUMENT, "out_dtype");
    CHECK_FAIL(hurray_descriptor_rank(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_descriptor_rank(NULL, &u), HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_dtype(NULL, &u), HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_shape(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_descriptor_strides(NULL, NULL), HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_packing(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_descriptor_byte_order(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_descriptor_buffer_count(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_descriptor_quantization(desc, &u, &u, &u, NULL, &u),
               HURRAY_ERROR_NULL_ARGUMENT, "out_block_size");
    CHECK_FAIL(hurray_descriptor_validate(NULL), HURRAY_ERROR_NULL_ARGUMENT, "desc");

    /* encode: NULL arguments and the size query */
    uint64_t len = 0;
    uint8_t bytes[MAX_ENCODED];
    CHECK_FAIL(hurray_descriptor_encode(NULL, bytes, sizeof bytes, &len),
               HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_encode(desc, bytes, sizeof bytes, NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "out_len");
    CHECK_FAIL(hurray_descriptor_encode(desc, NULL, 10, &len), HURRAY_ERROR_NULL_ARGUMENT,
               "capacity");
    CHECK_OK(hurray_descriptor_encode(desc, NULL, 0, &len));
    CHECK(len == 32 + 2 * 16 + 16);
    uint64_t need = 0;
    memset(bytes, 0xAB, sizeof bytes);
    CHECK_FAIL(hurray_descriptor_encode(desc, bytes, len - 1, &need), HURRAY_ERROR_OUT_OF_RANGE,
               "capacity");
    CHECK(need == len);
    CHECK(bytes[0] == 0xAB); /* nothing written */
    need = 0;
    CHECK_STATUS(hurray_descriptor_encode(desc, bytes, 0, &need), HURRAY_ERROR_OUT_OF_RANGE);
    CHECK(need == len);
    CHECK_OK(hurray_descriptor_encode(desc, bytes, sizeof bytes, &need));
    CHECK(need == len);

    /* decode and check_buffers: NULL arguments */
    HurrayDescriptor *other = NULL;
    CHECK_FAIL(hurray_descriptor_decode(NULL, 48, &other), HURRAY_ERROR_NULL_ARGUMENT, "bytes");
    CHECK_FAIL(hurray_descriptor_decode(bytes, need, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    HurrayBufferList *list = make_list((uint64_t[]){1}, 1);
    CHECK_FAIL(hurray_descriptor_check_buffers(NULL, list), HURRAY_ERROR_NULL_ARGUMENT, "desc");
    CHECK_FAIL(hurray_descriptor_check_buffers(desc, NULL), HURRAY_ERROR_NULL_ARGUMENT, "list");
    hurray_buffer_list_destroy(&list);

    hurray_descriptor_destroy(&desc);
    CHECK(desc == NULL);
    hurray_descriptor_destroy(&desc);
    hurray_descriptor_destroy(NULL);
    checks_passed++;
}

static void test_validation_refusals(void)
{
    const HurrayStatus BAD = HURRAY_ERROR_INVALID_DESCRIPTOR;
    HurrayDescriptor *desc;

    /* shapes and strides whose reach does not fit 63 bits */
    desc = make(HURRAY_DTYPE_INT8, 2, (uint64_t[]){2, 2});
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, (int64_t[]){INT64_MAX, 1}));
    expect_invalid(desc, HURRAY_ERROR_OVERFLOW, "part values: reach in bits overflows 63 bits");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){3});
    CHECK_OK(hurray_descriptor_set_strides(desc, 1, (int64_t[]){INT64_MIN}));
    expect_invalid(desc, HURRAY_ERROR_OVERFLOW, "reach in bits overflows");
    /* 2^61 int32 elements are 2^63 bytes: 2^66 bits */
    desc = make(HURRAY_DTYPE_INT32, 1, (uint64_t[]){UINT64_C(1) << 61});
    expect_invalid(desc, HURRAY_ERROR_OVERFLOW, "reach in bits overflows");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){UINT64_C(1) << 59});
    CHECK_OK(hurray_descriptor_validate(desc));
    hurray_descriptor_destroy(&desc);

    /* missing or forbidden parts */
    desc = make(HURRAY_DTYPE_INT8, 2, (uint64_t[]){4, 64});
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    expect_invalid(desc, BAD, "part scale: missing");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 1, 64, 0);
    expect_invalid(desc, BAD, "part global_scale: scheme affine has none");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){4});
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0);
    expect_invalid(desc, BAD, "part scale: scheme none has none");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 4, 0);
    expect_invalid(desc, BAD, "part zero_point: scheme microscaling has none");
    desc = ggml_q4_0();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    expect_invalid(desc, BAD, "part scale: scheme ggml has none");

    /* buffer indices */
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 2, 0, 0);
    expect_invalid(desc, BAD, "gap");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 4, 0, 0);
    expect_invalid(desc, BAD, "part scale: buffer index 4 leaves a gap");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT8, 1, 0, 0);
    expect_invalid(desc, BAD, "no part uses buffer 0");
    desc = affine_block();
    uint64_t count = 99;
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, UINT64_MAX, 0, 0);
    CHECK_FAIL(hurray_descriptor_buffer_count(desc, &count), BAD, "buffer index");
    CHECK(count == 99);
    expect_invalid(desc, BAD, "buffer index 18446744073709551615");

    /* granularity, axis, block size */
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 1, 48, 0);
    expect_invalid(desc, BAD, "block size: 48 does not divide shape[1] = 64");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 1, 0, 0);
    expect_invalid(desc, BAD, "block size: is zero");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_BLOCK, 2, 32, 0);
    expect_invalid(desc, BAD, "axis: 2 is not below the rank 2");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 7, 0, 0);
    expect_invalid(desc, BAD, "axis: 7 is not below");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 1, 32, 0);
    expect_invalid(desc, BAD, "block size: must be zero");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_TENSOR, 1, 0, 0);
    expect_invalid(desc, BAD, "axis: must be zero");
    desc = affine_block();
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_NONE, 0, 0, 0);
    expect_invalid(desc, BAD, "granularity: scheme affine needs");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){4});
    set_quant(desc, HURRAY_SCHEME_NONE, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, 0);
    expect_invalid(desc, BAD, "granularity: scheme none");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){4});
    set_quant(desc, HURRAY_SCHEME_NONE, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q8_0);
    expect_invalid(desc, BAD, "ggml type: must be zero");
    desc = make(HURRAY_DTYPE_INT8, 0, NULL);
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 0, 1, 0);
    expect_invalid(desc, BAD, "axis: 0 is not below the rank 0");

    /* dtypes of parts */
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT32, 0, 0, 0);
    expect_invalid(desc, BAD, "part values: dtype float32 cannot be affine-quantized");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_INT32, 1, 0, 0);
    expect_invalid(desc, BAD, "part scale: dtype int32 is not an affine scale type");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_COMPLEX64, 1, 64, 0);
    expect_invalid(desc, BAD, "part zero_point: dtype complex64 is neither");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT4, 1, 64, 0);
    expect_invalid(desc, BAD, "part zero_point: dtype int4 is narrower than a byte");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT16, 2, 0, 0);
    expect_invalid(desc, BAD, "part global_scale: dtype must be float32");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_FLOAT8_E4M3FN, 0, 0, 0);
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_NONE));
    expect_invalid(desc, BAD, "NVFP4 (scale float8_e4m3fn) needs float4_e2m1fn values");
    desc = nvfp4();
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 32, 0);
    expect_invalid(desc, BAD, "NVFP4 (scale float8_e4m3fn) uses blocks of 16");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    expect_invalid(desc, BAD, "OCP microscaling (scale float8_e8m0fnu) uses blocks of 32");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0, 0);
    expect_invalid(desc, BAD, "part scale: dtype float16 is not a microscaling scale type");
    desc = nvfp4();
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_AXIS, 1, 0, 0);
    expect_invalid(desc, BAD, "scheme microscaling needs per_block");
    desc = make(HURRAY_DTYPE_INT16, 1, (uint64_t[]){32});
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 0, 32, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E8M0FNU, 1, 0, 0);
    expect_invalid(desc, BAD, "part values: dtype int16 cannot be microscaled");

    /* layouts */
    desc = nvfp4();
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 0, 16, 0);
    expect_invalid(desc, BAD, "swizzled_128x4 needs rank 2 and axis 1");
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 3, (uint64_t[]){1, 128, 64});
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 2, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    expect_invalid(desc, BAD, "swizzled_128x4 needs rank 2 and axis 1 (rank is 3");
    desc = affine_block();
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT16, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    expect_invalid(desc, BAD, "part scale: layout swizzled_128x4 is only for");
    desc = nvfp4();
    set_part(desc, HURRAY_ROLE_GLOBAL_SCALE, HURRAY_DTYPE_FLOAT32, 2, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    expect_invalid(desc, BAD, "part global_scale: layout swizzled_128x4 is only for");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){4});
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT8, 0, 0, HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    expect_invalid(desc, BAD, "part values: layout must be row_major");

    /* packing */
    desc = make(HURRAY_DTYPE_INT4, 1, (uint64_t[]){32});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_NONE));
    expect_invalid(desc, BAD, "packing: none does not fit dtype int4");
    desc = make(HURRAY_DTYPE_INT8, 1, (uint64_t[]){32});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_PADDED));
    expect_invalid(desc, BAD, "packing: padded does not fit dtype int8");
    desc = make(HURRAY_DTYPE_FLOAT6_E2M3FN, 1, (uint64_t[]){32});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_LSB_FIRST));
    expect_invalid(desc, BAD, "lsb_first needs a width of 1, 2 or 4 bits");
    desc = make(HURRAY_DTYPE_INT2, 1, (uint64_t[]){32});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_GGML_SPLIT));
    expect_invalid(desc, BAD, "ggml_split needs a 4-bit dtype, not int2");
    desc = make(HURRAY_DTYPE_INT4, 1, (uint64_t[]){48});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_GGML_SPLIT));
    expect_invalid(desc, BAD, "multiple of 32");
    desc = make(HURRAY_DTYPE_INT4, 0, NULL);
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_GGML_SPLIT));
    expect_invalid(desc, BAD, "multiple of 32");
    desc = make(HURRAY_DTYPE_INT4, 2, (uint64_t[]){2, 32});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_GGML_SPLIT));
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, (int64_t[]){64, 1}));
    expect_invalid(desc, BAD, "ggml_split needs a row-major contiguous tensor");

    /* GGML */
    desc = ggml_q4_0();
    CHECK_OK(hurray_descriptor_set_strides(desc, 2, (int64_t[]){1, 2}));
    expect_invalid(desc, BAD, "scheme ggml needs a row-major contiguous tensor");
    desc = make(HURRAY_DTYPE_UINT8, 2, (uint64_t[]){2, 48});
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q4_0);
    expect_invalid(desc, BAD, "shape[1]: 48 is not a multiple of the 32 elements of a q4_0 block");
    desc = make(HURRAY_DTYPE_UINT8, 2, (uint64_t[]){2, 64});
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q4_K);
    expect_invalid(desc, BAD, "256 elements of a q4_k block");
    desc = ggml_q4_0();
    CHECK_OK(hurray_descriptor_set_byte_order(desc, HURRAY_BYTE_ORDER_BIG));
    expect_invalid(desc, BAD, "scheme ggml needs little-endian");
    desc = ggml_q4_0();
    set_part(desc, HURRAY_ROLE_VALUES, HURRAY_DTYPE_INT8, 0, 0, 0);
    expect_invalid(desc, BAD, "dtype must be uint8, not int8");
    desc = ggml_q4_0();
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, 0);
    expect_invalid(desc, BAD, "ggml type: missing");
    desc = ggml_q4_0();
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_PER_TENSOR, 0, 0, HURRAY_GGML_Q4_0);
    expect_invalid(desc, BAD, "granularity: scheme ggml takes none");
    desc = make(HURRAY_DTYPE_UINT8, 0, NULL);
    set_quant(desc, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0, HURRAY_GGML_Q8_0);
    expect_invalid(desc, BAD, "scheme ggml needs at least one dimension");

    /* values that fit but parameters that do not: 2^62 one-bit values,
     * one float64 scale each */
    desc = make(HURRAY_DTYPE_INT1, 1, (uint64_t[]){UINT64_C(1) << 62});
    set_quant(desc, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 0, 0, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT64, 1, 0, 0);
    expect_invalid(desc, HURRAY_ERROR_OVERFLOW, "part scale: reach in bits overflows");
    /* padded fp4: 2^62 + 16 elements fit, their 8-bit storage does not */
    desc = make(HURRAY_DTYPE_FLOAT4_E2M1FN, 2, (uint64_t[]){(UINT64_C(1) << 58) + 1, 16});
    CHECK_OK(hurray_descriptor_set_packing(desc, HURRAY_PACKING_PADDED));
    set_quant(desc, HURRAY_SCHEME_MICROSCALING, HURRAY_GRANULARITY_PER_BLOCK, 1, 16, 0);
    set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT8_E4M3FN, 1, 0,
             HURRAY_PART_LAYOUT_SWIZZLED_128X4);
    expect_invalid(desc, HURRAY_ERROR_OVERFLOW, "part values: reach in bits overflows");
}

/* ---- refusals: crafted bytes ------------------------------------------ */

/* base with one byte replaced must decode to exactly status, mentioning words */
static void expect_patched(const uint8_t *base, uint64_t len, uint64_t at, uint8_t value,
                           HurrayStatus status, const char *words)
{
    uint8_t bytes[MAX_ENCODED];
    memcpy(bytes, base, len);
    bytes[at] = value;
    HurrayDescriptor *desc = NULL;
    CHECK_FAIL(decode_exact(bytes, len, &desc), status, words);
    CHECK(desc == NULL);
}

static void test_decode_refusals(void)
{
    const HurrayStatus BAD = HURRAY_ERROR_INVALID_DESCRIPTOR;
    const HurrayStatus UNKNOWN = HURRAY_ERROR_UNSUPPORTED;
    /* affine per block, rank 2, three parts: parts start at 32 + 32 = 64 */
    HurrayDescriptor *desc = affine_block();
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 1, 16, 0);
    uint8_t base[MAX_ENCODED];
    uint64_t len = encode(desc, base);
    hurray_descriptor_destroy(&desc);
    CHECK(len == 32 + 32 + 48);
    const uint64_t values = 64, scale = 80, zero = 96;
    CHECK(base[values] == HURRAY_ROLE_VALUES && base[scale] == HURRAY_ROLE_SCALE &&
          base[zero] == HURRAY_ROLE_ZERO_POINT);

    expect_patched(base, len, 0, 'X', BAD, "magic");
    expect_patched(base, len, 4, 3, UNKNOWN, "encoding version 3 is unsupported");
    /* Read as version 2 (tests/c/test_descriptor_graph.c), these bytes hold no node. */
    expect_patched(base, len, 4, 2, BAD, "node count 0");
    expect_patched(base, len, 5, 1, UNKNOWN, "encoding version 257");
    expect_patched(base, len, 6, (uint8_t)(len + 1), BAD, "total length");
    expect_patched(base, len, 8, 3, BAD, "total length");
    expect_patched(base, len, 9, 2, UNKNOWN, "byte order 2 is unknown");
    expect_patched(base, len, 10, 9, UNKNOWN, "packing 9 is unknown");
    expect_patched(base, len, 11, 4, UNKNOWN, "scheme 4 is unknown");
    expect_patched(base, len, 12, 4, UNKNOWN, "granularity 4 is unknown");
    expect_patched(base, len, 13, 2, BAD, "total length");
    expect_patched(base, len, 13, 0, BAD, "part count 0");
    expect_patched(base, len, 14, 1, BAD, "reserved");
    expect_patched(base, len, 15, 0x80, BAD, "reserved");
    expect_patched(base, len, 16, 5, BAD, "axis: 5 is not below the rank 2");
    expect_patched(base, len, 19, 1, BAD, "axis");
    expect_patched(base, len, 20, HURRAY_GGML_Q8_0, BAD, "ggml type: must be zero");
    expect_patched(base, len, 20, 1, UNKNOWN, "ggml type 1 is unknown");
    expect_patched(base, len, 24, 31, BAD, "block size: 31 does not divide");
    expect_patched(base, len, 24, 0, BAD, "block size: is zero");
    expect_patched(base, len, 32 + 7, 0x80, HURRAY_ERROR_OVERFLOW,
                   "shape[0]: element count overflows 63 bits");
    expect_patched(base, len, 32 + 8 + 7, 0x40, HURRAY_ERROR_OVERFLOW, "overflows 63 bits");
    expect_patched(base, len, 48 + 7, 0x40, HURRAY_ERROR_OVERFLOW, "reach in bits overflows");
    expect_patched(base, len, values + 0, 0, UNKNOWN, "role 0 is unknown");
    expect_patched(base, len, values + 0, 5, UNKNOWN, "role 5 is unknown");
    expect_patched(base, len, values + 0, HURRAY_ROLE_SCALE, BAD, "increasing order");
    expect_patched(base, len, scale + 0, HURRAY_ROLE_VALUES, BAD, "increasing order");
    expect_patched(base, len, zero + 0, HURRAY_ROLE_SCALE, BAD, "increasing order");
    expect_patched(base, len, zero + 0, HURRAY_ROLE_GLOBAL_SCALE, BAD,
                   "part global_scale: scheme affine has none");
    expect_patched(base, len, values + 1, 99, UNKNOWN,
                   "descriptor: part values: dtype 99 is unknown");
    expect_patched(base, len, scale + 1, 99, UNKNOWN,
                   "descriptor: part scale: dtype 99 is unknown");
    expect_patched(base, len, zero + 1, 0, UNKNOWN,
                   "descriptor: part zero_point: dtype 0 is unknown");
    expect_patched(base, len, scale + 2, 2, UNKNOWN, "part scale: layout 2 is unknown");
    expect_patched(base, len, values + 3, 1, BAD, "part values: reserved");
    expect_patched(base, len, zero + 3, 1, BAD, "part zero_point: reserved");
    expect_patched(base, len, scale + 4, 3, BAD, "no part uses buffer 2");
    expect_patched(base, len, scale + 7, 1, BAD, "buffer index 16777217");
    expect_patched(base, len, values + 4, 1, BAD, "no part uses buffer 0");
    expect_patched(base, len, 10, HURRAY_PACKING_LSB_FIRST, BAD, "packing: lsb_first does not fit");

    /* rank 65 with a length that matches it */
    uint8_t big[32 + 16 * 65 + 16];
    memset(big, 0, sizeof big);
    memcpy(big, base, 32);
    big[6] = (uint8_t)(sizeof big);
    big[7] = (uint8_t)(sizeof big >> 8);
    big[8] = 65;
    big[13] = 1;
    big[32 + 16 * 65] = HURRAY_ROLE_VALUES;
    big[32 + 16 * 65 + 1] = HURRAY_DTYPE_INT8;
    HurrayDescriptor *out = NULL;
    CHECK_FAIL(decode_exact(big, sizeof big, &out), BAD, "rank 65");
    CHECK(out == NULL);
    /* five parts with a length that matches */
    uint8_t five[32 + 16 * 5];
    memset(five, 0, sizeof five);
    memcpy(five, base, 32);
    five[6] = sizeof five;
    five[7] = 0;
    five[8] = 0;
    five[13] = 5;
    CHECK_FAIL(decode_exact(five, sizeof five, &out), BAD, "part count 5");
    /* the same bytes cut to one part decode: a scalar int8 */
    five[6] = 48;
    five[11] = five[12] = 0;
    five[13] = 1;
    five[32] = HURRAY_ROLE_VALUES;
    five[33] = HURRAY_DTYPE_INT8;
    memset(five + 16, 0, 16);
    CHECK_OK(decode_exact(five, 48, &out));
    uint32_t rank = 9;
    CHECK_OK(hurray_descriptor_rank(out, &rank));
    CHECK(rank == 0);
    hurray_descriptor_destroy(&out);

    /* a values part missing: the only part is a scale */
    five[32] = HURRAY_ROLE_SCALE;
    CHECK_FAIL(decode_exact(five, 48, &out), BAD, "part values: missing");

    CHECK_FAIL(decode_exact(base, 0, &out), BAD, "truncated");
    CHECK_FAIL(decode_exact(base, 31, &out), BAD, "truncated");
}

/* Byte-value sweeps over a few encodings that between them hold every kind
 * of field. */
static void test_sweeps(void)
{
    uint8_t bytes[MAX_ENCODED];
    HurrayDescriptor *desc = affine_block();
    set_part(desc, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 1, 16, 0);
    uint64_t len = encode(desc, bytes);
    hurray_descriptor_destroy(&desc);
    sweep_encoding(bytes, len);

    desc = nvfp4();
    len = encode(desc, bytes);
    hurray_descriptor_destroy(&desc);
    sweep_encoding(bytes, len);

    desc = ggml_q4_0();
    len = encode(desc, bytes);
    hurray_descriptor_destroy(&desc);
    sweep_encoding(bytes, len);
}

/* The facts bindings read instead of retyping: the GGML block table, row-major
 * strides and the swizzled scale count; out-parameters untouched on failure. */
static void test_layout_and_ggml_facts(void)
{
    const struct {
        uint32_t code;
        const char *name;
        uint64_t elements, bytes;
    } ggml[] = {
        {HURRAY_GGML_Q4_0, "q4_0", 32, 18},   {HURRAY_GGML_Q4_1, "q4_1", 32, 20},
        {HURRAY_GGML_Q5_0, "q5_0", 32, 22},   {HURRAY_GGML_Q5_1, "q5_1", 32, 24},
        {HURRAY_GGML_Q8_0, "q8_0", 32, 34},   {HURRAY_GGML_Q4_K, "q4_k", 256, 144},
        {HURRAY_GGML_Q6_K, "q6_k", 256, 210}, {HURRAY_GGML_MXFP4, "mxfp4", 32, 17},
    };
    for (size_t i = 0; i < sizeof ggml / sizeof ggml[0]; i++) {
        uint64_t elements = 0, bytes = 0;
        CHECK_OK(hurray_ggml_block(ggml[i].code, &elements, &bytes));
        CHECK(elements == ggml[i].elements && bytes == ggml[i].bytes);
        CHECK(strcmp(hurray_ggml_name(ggml[i].code), ggml[i].name) == 0);
    }
    uint64_t kept = 7, also_kept = 9;
    CHECK_FAIL(hurray_ggml_block(0, &kept, &also_kept), HURRAY_ERROR_UNSUPPORTED, "GGML type 0");
    CHECK_FAIL(hurray_ggml_block(1000, &kept, &also_kept), HURRAY_ERROR_UNSUPPORTED, "1000");
    CHECK(kept == 7 && also_kept == 9);
    CHECK_FAIL(hurray_ggml_block(HURRAY_GGML_Q4_0, NULL, &kept), HURRAY_ERROR_NULL_ARGUMENT,
               "out_elements");
    CHECK_FAIL(hurray_ggml_block(HURRAY_GGML_Q4_0, &kept, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "out_bytes");
    CHECK(hurray_ggml_name(0) == NULL && hurray_ggml_name(UINT32_MAX) == NULL);

    const uint64_t shape[4] = {2, 0, 3, 5};
    int64_t strides[4] = {0};
    CHECK_OK(hurray_layout_row_major_strides(4, shape, strides));
    CHECK(strides[0] == 15 && strides[1] == 15 && strides[2] == 5 && strides[3] == 1);
    CHECK_OK(hurray_layout_row_major_strides(0, NULL, NULL)); /* a scalar has none */
    const uint64_t huge[2] = {UINT64_C(1) << 32, UINT64_C(1) << 31};
    int64_t untouched[2] = {-1, -1};
    CHECK_FAIL(hurray_layout_row_major_strides(2, huge, untouched), HURRAY_ERROR_OVERFLOW,
               "shape[0]");
    CHECK(untouched[0] == -1 && untouched[1] == -1);
    CHECK_FAIL(hurray_layout_row_major_strides(HURRAY_MAX_RANK + 1, shape, strides),
               HURRAY_ERROR_INVALID_ARGUMENT, "rank");
    CHECK_FAIL(hurray_layout_row_major_strides(1, NULL, strides), HURRAY_ERROR_NULL_ARGUMENT,
               "shape");
    CHECK_FAIL(hurray_layout_row_major_strides(1, shape, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "out_strides");

    uint64_t count = 0;
    CHECK_OK(hurray_layout_swizzled_128x4_count(1, 1, &count));
    CHECK(count == 512);
    CHECK_OK(hurray_layout_swizzled_128x4_count(129, 5, &count));
    CHECK(count == 256 * 8);
    CHECK_OK(hurray_layout_swizzled_128x4_count(0, 0, &count));
    CHECK(count == 0);
    count = 3;
    CHECK_FAIL(hurray_layout_swizzled_128x4_count(UINT64_MAX, 4, &count), HURRAY_ERROR_OVERFLOW,
               "overflow");
    CHECK_FAIL(hurray_layout_swizzled_128x4_count(UINT64_C(1) << 40, UINT64_C(1) << 30, &count),
               HURRAY_ERROR_OVERFLOW, "overflow");
    CHECK(count == 3);
    CHECK_FAIL(hurray_layout_swizzled_128x4_count(1, 1, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
}

int main(void)
{
    const char *scale = getenv("HURRAY_TEST_SCALE");
    if (scale != NULL && atoi(scale) > 1) {
        sweep_bytes = 0;
    }
    test_dtype_table();
    test_every_dtype_plain();
    test_scalar_and_max_rank();
    test_affine();
    test_microscaling();
    test_ggml();
    test_packing();
    test_strides();
    test_empty_tensors();
    test_builder_refusals();
    test_setters_forget_the_verdict();
    test_validation_refusals();
    test_decode_refusals();
    test_sweeps();
    test_layout_and_ggml_facts();
    checks_report("test_descriptor");
    return 0;
}
