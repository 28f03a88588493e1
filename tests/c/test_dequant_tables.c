/*
 * test_dequant_tables.c -- facts of the dequantizer's tables and
 * arithmetic, checked from inside the library (built with its sources
 * compiled in: tests/test_dequant_c.py).
 *
 * - ggml's published grids and tables (native/src/ggml_grids.c): their
 *   sizes, the value set of every grid (QUANT-FORMATS.md § 8.3), the
 *   even-parity rule of the sign table, the IQ4_NL values, and the FP4
 *   values as doubled E2M1 (against the library's own E2M1 code table).
 * - Why no GGML formula can be changed by fusing a product and a sum
 *   into one rounding: every product that a sum follows (d * sc * q - dmin
 *   * m of the K-quants, d * q + m of Q4_1 and Q5_1) is exact in float32,
 *   for every finite fp16 d and every sub-scale and code the formats
 *   allow. Checked exhaustively: float32 product against float64 product.
 * - The scalar and the AVX2 kernels agree, bit for bit, on random blocks of
 *   every GGML type and on the 16-bit stores of random float32 bits.
 */
#include "hurray.h"

#include "check.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dequant_shared.h"
#include "ggml_grids.h"

static unsigned long scale = 1;

static int in_set(unsigned value, const unsigned *set, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (set[i] == value) {
            return 1;
        }
    }
    return 0;
}

/* Every byte of every entry of a grid lies in the set, and no two
 * entries are equal. */
static void check_grid(const void *grid, size_t entries, size_t entry_bytes, const unsigned *set,
                       size_t set_len)
{
    const uint8_t *bytes = grid;
    for (size_t e = 0; e < entries; e++) {
        for (size_t b = 0; b < entry_bytes; b++) {
            CHECK(in_set(bytes[e * entry_bytes + b], set, set_len));
        }
        for (size_t other = 0; other < e; other++) {
            CHECK(memcmp(bytes + e * entry_bytes, bytes + other * entry_bytes, entry_bytes) != 0);
        }
    }
}

static void test_grids(void)
{
    /* Sizes, as the formats index them. */
    CHECK(sizeof hurray__ggml_ksigns == 128);
    CHECK(sizeof hurray__ggml_iq2xxs_grid / 8 == 256);
    CHECK(sizeof hurray__ggml_iq2xs_grid / 8 == 512);
    CHECK(sizeof hurray__ggml_iq2s_grid / 8 == 1024);
    CHECK(sizeof hurray__ggml_iq3xxs_grid / 4 == 256);
    CHECK(sizeof hurray__ggml_iq3s_grid / 4 == 512);
    CHECK(sizeof hurray__ggml_iq1s_grid / 8 == 2048);

    /* Value sets (QUANT-FORMATS.md § 8.3). The grids are stored as
     * little-endian words on a little-endian host. */
    static const unsigned iq2[] = {8, 25, 43};
    static const unsigned iq3xxs[] = {4, 12, 20, 28, 36, 44, 52, 62};
    static const unsigned iq3s[] = {1, 3, 5, 7, 9, 11, 13, 15};
    static const unsigned iq1[] = {0xFF, 0x00, 0x01}; /* int8 -1, 0, 1 */
    check_grid(hurray__ggml_iq2xxs_grid, 256, 8, iq2, 3);
    check_grid(hurray__ggml_iq2xs_grid, 512, 8, iq2, 3);
    check_grid(hurray__ggml_iq2s_grid, 1024, 8, iq2, 3);
    check_grid(hurray__ggml_iq3xxs_grid, 256, 4, iq3xxs, 8);
    check_grid(hurray__ggml_iq3s_grid, 512, 4, iq3s, 8);
    check_grid(hurray__ggml_iq1s_grid, 2048, 8, iq1, 3);
    /* The first entries, read as the formats read them: bytes lowest first. */
    CHECK(hurray__ggml_iq2xxs_grid[0] == 0x0808080808080808u);
    CHECK(hurray__ggml_iq1s_grid[0] == 0xFFFFFFFFFFFFFFFFu);

    /* ksigns: the low 7 bits are the index, the 8th makes the count of
     * set bits (of negative signs) even. */
    for (unsigned i = 0; i < 128; i++) {
        unsigned sign = hurray__ggml_ksigns[i];
        CHECK((sign & 127u) == i);
        CHECK(__builtin_popcount(sign) % 2 == 0);
        CHECK(sign >> 7 == (unsigned)__builtin_popcount(i) % 2);
    }

    static const int iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                  1,    13,   25,  38,  53,  69,  89,  113};
    for (int i = 0; i < 16; i++) {
        CHECK(hurray__ggml_iq4nl_values[i] == iq4nl[i]);
    }
    /* FP4: E2M1 doubled; code 8 (-0) is the integer 0. */
    const float *e2m1 = hurray__code_table(HURRAY_DTYPE_FLOAT4_E2M1FN);
    CHECK(e2m1 != NULL);
    for (int i = 0; i < 16; i++) {
        CHECK((float)hurray__ggml_fp4_values[i] == 2.0f * e2m1[i]);
    }
    CHECK(hurray__ggml_fp4_values[8] == 0);
}

/* ---- no fusing can change a GGML value -------------------------------------- */

/* (d * s) * q, as the decoders evaluate it, equals the exact product for
 * every finite fp16 d, s in [s_low, s_high] and q in [q_low, q_high]. */
static void check_exact_products(int s_low, int s_high, int q_low, int q_high)
{
    unsigned long checked = 0;
    for (uint32_t h = 0; h < 0x10000u; h += (uint32_t)scale) {
        if ((h & 0x7C00u) == 0x7C00u) {
            continue; /* infinities and NaNs: fused or not, the same special value */
        }
        float d = hurray__f16_to_f32((uint16_t)h);
        for (int s = s_low; s <= s_high; s++) {
            float ds = d * (float)s;
            if ((double)ds != (double)d * (double)s) {
                CHECK(0);
            }
            for (int q = q_low; q <= q_high; q++) {
                float p = ds * (float)q;
                if ((double)p != (double)d * (double)s * (double)q) {
                    fprintf(stderr, "inexact: d %04x, s %d, q %d\n", (unsigned)h, s, q);
                    CHECK(0);
                }
                checked++;
            }
        }
    }
    CHECK(checked > 0);
}

static void test_products_are_exact(void)
{
    /* Q2_K: dl = d * (sc & 15), q in 0..3, minus dmin * (sc >> 4). */
    check_exact_products(0, 15, 0, 3);
    /* Q4_K and Q5_K: six-bit scales and mins, codes up to 31. The min's
     * product dmin * m is the same product with q = 1. */
    check_exact_products(0, 63, 0, 31);
    /* Q4_1, Q5_1: d * q + m, q up to 31 (s = 1). */
    check_exact_products(1, 1, 0, 31);
}

/* ---- scalar and AVX2 agree ---------------------------------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static uint64_t next_random(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

static void release_free(void *p)
{
    free(p);
}

static const uint32_t TYPES[] = {
    HURRAY_GGML_Q4_0,    HURRAY_GGML_Q4_1,   HURRAY_GGML_Q5_0,    HURRAY_GGML_Q5_1,
    HURRAY_GGML_Q8_0,    HURRAY_GGML_Q2_K,   HURRAY_GGML_Q3_K,    HURRAY_GGML_Q4_K,
    HURRAY_GGML_Q5_K,    HURRAY_GGML_Q6_K,   HURRAY_GGML_IQ2_XXS, HURRAY_GGML_IQ2_XS,
    HURRAY_GGML_IQ3_XXS, HURRAY_GGML_IQ1_S,  HURRAY_GGML_IQ4_NL,  HURRAY_GGML_IQ3_S,
    HURRAY_GGML_IQ2_S,   HURRAY_GGML_IQ4_XS, HURRAY_GGML_IQ1_M,   HURRAY_GGML_TQ1_0,
    HURRAY_GGML_TQ2_0,   HURRAY_GGML_MXFP4,  HURRAY_GGML_NVFP4,   HURRAY_GGML_Q1_0,
    HURRAY_GGML_Q2_0,
};

static void test_paths_agree(void)
{
    for (size_t t = 0; t < sizeof TYPES / sizeof TYPES[0]; t++) {
        uint64_t elements, bytes;
        CHECK_OK(hurray_ggml_block(TYPES[t], &elements, &bytes));
        uint64_t blocks = 64 / scale + 1;
        uint64_t shape[1] = {blocks * elements};
        uint8_t *data = malloc(blocks * bytes);
        CHECK(data != NULL);
        for (uint64_t i = 0; i < blocks * bytes; i++) {
            data[i] = (uint8_t)(next_random() >> 56);
        }
        HurrayDescriptor *desc = NULL;
        HurrayBufferList *list = NULL;
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_UINT8, 1, shape, &desc));
        CHECK_OK(hurray_descriptor_set_quantization(desc, HURRAY_SCHEME_GGML,
                                                    HURRAY_GRANULARITY_NONE, 0, 0, TYPES[t]));
        CHECK_OK(hurray_buffer_list_new(&list));
        CHECK_OK(hurray_buffer_from_ptr(data, blocks * bytes, release_free, data, &buf));
        CHECK_OK(hurray_buffer_list_push(list, &buf));
        for (int o = 0; o < 3; o++) {
            uint32_t out_dtype = o == 0   ? HURRAY_DTYPE_FLOAT32
                                 : o == 1 ? HURRAY_DTYPE_FLOAT16
                                          : HURRAY_DTYPE_BFLOAT16;
            uint64_t len = shape[0] * (o == 0 ? 4 : 2);
            uint8_t *scalar = malloc(len), *simd = malloc(len);
            CHECK(scalar != NULL && simd != NULL);
            hurray__dequant_force_path(0);
            CHECK_OK(hurray_dequantize(desc, list, out_dtype, scalar, len));
            hurray__dequant_force_path(1);
            CHECK_OK(hurray_dequantize(desc, list, out_dtype, simd, len));
            hurray__dequant_force_path(-1);
            CHECK(memcmp(scalar, simd, len) == 0);
            free(scalar);
            free(simd);
        }
        hurray_descriptor_destroy(&desc);
        hurray_buffer_list_destroy(&list);
    }
}

int main(void)
{
    const char *env = getenv("HURRAY_TEST_SCALE");
    if (env != NULL) {
        scale = strtoul(env, NULL, 10);
        if (scale == 0) {
            fprintf(stderr, "test_dequant_tables: HURRAY_TEST_SCALE must be a positive integer\n");
            return 2;
        }
    }
    test_grids();
    test_products_are_exact();
    test_paths_agree();
    printf("avx2 path available: %s\n", hurray__dequant_simd() ? "yes" : "no");
    checks_report("test_dequant_tables");
    return 0;
}
