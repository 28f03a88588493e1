/*
 * test_gguf_index.c -- hurray_gguf.h: the GGUF index on good and broken bytes.
 *
 * Every input lives in a buffer malloc'ed to its exact length, so that a
 * read one byte past it is an AddressSanitizer report (or a valgrind error)
 * rather than a silent pass. The exhaustive loops -- every truncation, and
 * every byte of a good file set to each of several values -- check that the
 * parser answers OK or a status with a message, and that whatever it
 * accepts is consistent: every tensor lies inside the data, aligned, and
 * is found by its name. HURRAY_TEST_SCALE=N runs every N-th byte (valgrind).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray_gguf.h"

#include "check.h"

static unsigned long scale = 1;

/* ---- a little GGUF writer -------------------------------------------------- */

struct bytes {
    uint8_t data[4096];
    size_t len;
};

static void put(struct bytes *b, const void *p, size_t n)
{
    CHECK(b->len + n <= sizeof b->data);
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

static void put_u32(struct bytes *b, uint32_t v)
{
    uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(b, le, 4);
}

static void put_u64(struct bytes *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

static void put_string(struct bytes *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void put_header(struct bytes *b, uint32_t version, uint64_t n_tensors, uint64_t n_kvs)
{
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kvs);
}

/* dims in numpy order; written innermost first, as GGUF stores them */
static void put_info(struct bytes *b, const char *name, uint32_t rank, const uint64_t *dims,
                     uint32_t type, uint64_t offset)
{
    put_string(b, name);
    put_u32(b, rank);
    for (uint32_t d = rank; d-- > 0;) {
        put_u64(b, dims[d]);
    }
    put_u32(b, type);
    put_u64(b, offset);
}

static void pad(struct bytes *b, size_t alignment, size_t data_bytes)
{
    while (b->len % alignment) {
        uint8_t zero = 0;
        put(b, &zero, 1);
    }
    for (size_t i = 0; i < data_bytes; i++) {
        uint8_t v = (uint8_t)i;
        put(b, &v, 1);
    }
}

/* The good file: three key-values (a string array among them) and three
 * tensors: F32 (2, 4) at 0, Q8_0 (1, 32) at 32, a type ggml lacks at 96. */
static struct bytes good_file(void)
{
    struct bytes b = {.len = 0};
    uint64_t f32[2] = {2, 4}, q8[2] = {1, 32}, odd[1] = {5};
    put_header(&b, 3, 3, 3);
    put_string(&b, "general.architecture");
    put_u32(&b, 8);
    put_string(&b, "llama");
    put_string(&b, "general.alignment");
    put_u32(&b, 4);
    put_u32(&b, 32);
    put_string(&b, "tokens");
    put_u32(&b, 9);
    put_u32(&b, 8);
    put_u64(&b, 2);
    put_string(&b, "a");
    put_string(&b, "\xc3\xa9");
    put_info(&b, "f32", 2, f32, 0, 0);
    put_info(&b, "q8", 2, q8, 8, 32);
    put_info(&b, "odd", 1, odd, 77, 96);
    pad(&b, 32, 96);
    return b;
}

/* ---- running the parser over exact-size copies ------------------------------ */

/* Parses a copy of b[0 .. len); on success checks what the index claims. */
static HurrayStatus parse(const uint8_t *bytes, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    CHECK(copy != NULL);
    if (len) {
        memcpy(copy, bytes, len);
    }
    HurrayGgufIndex *index = (HurrayGgufIndex *)0x1;
    HurrayStatus status = hurray_gguf_index_parse(copy, len, &index);
    if (status != HURRAY_OK) {
        CHECK(index == NULL);
        CHECK(hurray_last_error_message()[0] != '\0');
        free(copy);
        return status;
    }
    uint64_t alignment, data_start, n_tensors, n_kvs;
    CHECK_OK(hurray_gguf_index_info(index, NULL, &alignment, &data_start, &n_tensors, &n_kvs));
    CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0);
    for (uint64_t i = 0; i < n_kvs; i++) {
        uint64_t offset, kv_len;
        CHECK_OK(hurray_gguf_index_kv(index, i, &offset, &kv_len));
        CHECK(offset <= len && kv_len <= len - offset);
    }
    for (uint64_t i = 0; i < n_tensors; i++) {
        HurrayGgufTensor t;
        uint64_t found;
        CHECK_OK(hurray_gguf_index_tensor(index, i, &t));
        CHECK(t.rank <= 4);
        CHECK(t.name_offset <= len && t.name_len <= len - t.name_offset);
        CHECK(t.data_offset >= data_start && t.data_offset <= len);
        CHECK((t.data_offset - data_start) % alignment == 0);
        if (t.size_known) {
            CHECK(t.nbytes <= len - t.data_offset);
            if (t.nbytes) { /* touch the first and last byte: ASan sees an overrun */
                volatile uint8_t edge = copy[t.data_offset] ^ copy[t.data_offset + t.nbytes - 1];
                (void)edge;
            }
        }
        CHECK_OK(hurray_gguf_index_find(index, (const char *)copy + t.name_offset, t.name_len,
                                        &found));
        CHECK(found == i);
    }
    hurray_gguf_index_destroy(&index);
    CHECK(index == NULL);
    free(copy);
    return HURRAY_OK;
}

static void expect_refused(const struct bytes *b, HurrayStatus expected, const char *words)
{
    CHECK_STATUS(parse(b->data, b->len), expected);
    if (strstr(hurray_last_error_message(), words) == NULL) {
        fprintf(stderr, "message \"%s\" lacks \"%s\"\n", hurray_last_error_message(), words);
        exit(1);
    }
}

/* ---- the tests ------------------------------------------------------------ */

static void test_good_file(void)
{
    struct bytes b = good_file();
    HurrayGgufIndex *index = NULL;
    CHECK_OK(hurray_gguf_index_parse(b.data, b.len, &index));
    uint32_t version;
    uint64_t alignment, data_start, n_tensors, n_kvs;
    CHECK_OK(hurray_gguf_index_info(index, &version, &alignment, &data_start, &n_tensors, &n_kvs));
    CHECK(version == 3 && alignment == 32 && n_tensors == 3 && n_kvs == 3);
    CHECK(data_start % 32 == 0 && data_start + 96 == b.len);

    uint64_t i;
    HurrayGgufTensor t;
    CHECK_OK(hurray_gguf_index_find(index, "q8", 2, &i));
    CHECK(i == 1);
    CHECK_OK(hurray_gguf_index_tensor(index, i, &t));
    CHECK(t.rank == 2 && t.shape[0] == 1 && t.shape[1] == 32 && t.ggml_type == 8);
    CHECK(t.data_offset == data_start + 32 && t.nbytes == 34 && t.size_known == 1);
    CHECK(t.name_len == 2 && memcmp(b.data + t.name_offset, "q8", 2) == 0);
    CHECK_OK(hurray_gguf_index_find(index, "f32", 3, &i));
    CHECK_OK(hurray_gguf_index_tensor(index, i, &t));
    CHECK(t.shape[0] == 2 && t.shape[1] == 4 && t.nbytes == 32 && t.data_offset == data_start);
    CHECK_OK(hurray_gguf_index_find(index, "odd", 3, &i));
    CHECK_OK(hurray_gguf_index_tensor(index, i, &t));
    CHECK(t.size_known == 0 && t.ggml_type == 77);

    uint64_t offset, len;
    CHECK_OK(hurray_gguf_index_kv(index, 1, &offset, &len));
    CHECK(len == 8 + 17 + 4 + 4 && memcmp(b.data + offset + 8, "general.alignment", 17) == 0);

    CHECK_FAIL(hurray_gguf_index_find(index, "q", 1, &i), HURRAY_ERROR_NOT_FOUND, "'q'");
    CHECK_FAIL(hurray_gguf_index_find(index, "q80", 3, &i), HURRAY_ERROR_NOT_FOUND, "'q80'");
    CHECK_FAIL(hurray_gguf_index_tensor(index, 3, &t), HURRAY_ERROR_OUT_OF_RANGE, "tensor 3 of 3");
    CHECK_FAIL(hurray_gguf_index_kv(index, 3, &offset, &len), HURRAY_ERROR_OUT_OF_RANGE, "3 of 3");
    CHECK_FAIL(hurray_gguf_index_tensor(index, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_gguf_index_find(NULL, "q8", 2, &i), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_gguf_index_info(NULL, NULL, NULL, NULL, NULL, NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    hurray_gguf_index_destroy(&index);
    CHECK(index == NULL);
    CHECK_FAIL(hurray_gguf_index_parse(b.data, b.len, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_gguf_index_parse(NULL, 8, &index), HURRAY_ERROR_NULL_ARGUMENT, "data");
    CHECK(index == NULL);
    hurray_gguf_index_destroy(&index);
    hurray_gguf_index_destroy(NULL);
    CHECK(parse(b.data, b.len) == HURRAY_OK);

    CHECK(strcmp(hurray_gguf_type_name(12), "Q4_K") == 0);
    CHECK(strcmp(hurray_gguf_type_name(39), "MXFP4") == 0);
    CHECK(hurray_gguf_type_name(4) == NULL && hurray_gguf_type_name(77) == NULL);
}

static void test_every_truncation(void)
{
    struct bytes b = good_file();
    for (size_t len = 0; len < b.len; len += scale) {
        CHECK_STATUS(parse(b.data, len), HURRAY_ERROR_CORRUPT);
    }
}

static void test_every_byte_changed(void)
{
    static const uint8_t values[] = {0x00, 0x01, 0x03, 0x20, 0x7F, 0x80, 0xC0, 0xFF};
    struct bytes b = good_file();
    for (size_t at = 0; at < b.len; at += scale) {
        uint8_t keep = b.data[at];
        for (size_t v = 0; v < sizeof values; v++) {
            b.data[at] = values[v];
            HurrayStatus status = parse(b.data, b.len);
            CHECK(status == HURRAY_OK || status == HURRAY_ERROR_CORRUPT ||
                  status == HURRAY_ERROR_UNSUPPORTED);
        }
        b.data[at] = keep;
    }
}

static void test_refusals(void)
{
    struct bytes b;
    uint64_t eight[1] = {8}, four[1] = {4}, sixteen[1] = {16}, five[5] = {1, 1, 1, 1, 8};

    b = (struct bytes){.len = 0};
    put(&b, "GGUX", 4);
    put_u32(&b, 3);
    put_u64(&b, 0);
    put_u64(&b, 0);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "magic");

    b = (struct bytes){.len = 0};
    put_header(&b, 1, 0, 0);
    expect_refused(&b, HURRAY_ERROR_UNSUPPORTED, "version 1");
    b = (struct bytes){.len = 0};
    put_header(&b, 3u << 24, 0, 0);
    expect_refused(&b, HURRAY_ERROR_UNSUPPORTED, "big-endian");

    for (uint32_t alignment = 0; alignment < 70; alignment += 3) { /* 0, 3, 6, ... */
        b = (struct bytes){.len = 0};
        put_header(&b, 3, 0, 1);
        put_string(&b, "general.alignment");
        put_u32(&b, 4);
        put_u32(&b, alignment);
        expect_refused(&b, HURRAY_ERROR_CORRUPT, "not a nonzero power of two");
    }
    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, 1);
    put_string(&b, "general.alignment");
    put_u32(&b, 10);
    put_u64(&b, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "must be a uint32");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 1, four, 0, 4);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "not a multiple of the alignment");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 1, eight, 0, (uint64_t)1 << 40);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "outside the file");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 1, (uint64_t[]){9}, 0, 0);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "outside the file");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 2, (uint64_t[]){UINT64_MAX / 2, 4}, 0, 0);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "multiply past 2^60");

    /* Empty, but numpy cannot make a [2^63, 0] array (issue 27): refused
     * here, not as a ValueError later. */
    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 2, (uint64_t[]){0, (uint64_t)1 << 63}, 0, 0);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "multiply past 2^60");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 2, 0);
    put_info(&b, "a", 1, eight, 0, 0);
    put_info(&b, "b", 1, sixteen, 0, 0);
    pad(&b, 32, 64);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "overlap");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 2, 0);
    put_info(&b, "a", 1, eight, 0, 0);
    put_info(&b, "a", 1, eight, 0, 32);
    pad(&b, 32, 64);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "duplicate tensor name 'a'");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, 2);
    put_string(&b, "k");
    put_u32(&b, 4);
    put_u32(&b, 1);
    put_string(&b, "k");
    put_u32(&b, 8);
    put_string(&b, "v");
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "duplicate key 'k'");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, 1);
    put_u64(&b, (uint64_t)4 << 30);
    put(&b, "general", 7);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "claims too much");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, (uint64_t)1 << 60);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "key-values");
    b = (struct bytes){.len = 0};
    put_header(&b, 3, UINT64_MAX, 0);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "tensor infos");

    for (uint32_t inner = 0; inner < 13; inner++) { /* every element type, a count of 2^61 */
        b = (struct bytes){.len = 0};
        put_header(&b, 3, 0, 1);
        put_string(&b, "arr");
        put_u32(&b, 9);
        put_u32(&b, inner);
        put_u64(&b, (uint64_t)1 << 61);
        expect_refused(&b, HURRAY_ERROR_CORRUPT, "elements");
    }

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, 1);
    put_string(&b, "deep");
    put_u32(&b, 9);
    for (int d = 0; d < 10; d++) { /* an array of one array of one array ... */
        put_u32(&b, 9);
        put_u64(&b, 1);
    }
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "nests arrays");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 0, 1);
    put_string(&b, "k");
    put_u32(&b, 77);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "unknown value type 77");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "t", 5, five, 0, 0);
    pad(&b, 32, 32);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "at most 4");

    b = (struct bytes){.len = 0};
    put_header(&b, 3, 1, 0);
    put_info(&b, "q", 1, sixteen, 8, 0);
    pad(&b, 32, 34);
    expect_refused(&b, HURRAY_ERROR_CORRUPT, "whole Q8_0 blocks");

    static const char *not_utf8[] = {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
                                     "\xe2\x82"};
    for (size_t k = 0; k < sizeof not_utf8 / sizeof not_utf8[0]; k++) {
        b = (struct bytes){.len = 0};
        put_header(&b, 3, 1, 0);
        put_info(&b, not_utf8[k], 1, eight, 0, 0);
        pad(&b, 32, 32);
        expect_refused(&b, HURRAY_ERROR_CORRUPT, "UTF-8");
    }

    /* An empty file, and one with no tensors and nothing after the header. */
    CHECK_STATUS(parse((const uint8_t *)"", 0), HURRAY_ERROR_CORRUPT);
    b = (struct bytes){.len = 0};
    put_header(&b, 2, 0, 0);
    CHECK_OK(parse(b.data, b.len));
}

/* ---- bounds on what the key-value store may cost ------------------------- */

/* A file of one key "k" whose value is an array (9) of `count` elements of
 * `element_type`, each written by put_element; no tensors. In exact-length
 * heap memory, as parse() uses. */
static uint8_t *array_file(uint32_t element_type, uint64_t count, size_t element_bytes,
                           const uint8_t *element, size_t *out_len)
{
    struct bytes head = {.len = 0};
    put_header(&head, 3, 0, 1);
    put_string(&head, "k");
    put_u32(&head, 9);
    put_u32(&head, element_type);
    put_u64(&head, count);
    size_t len = head.len + (size_t)count * element_bytes;
    uint8_t *data = malloc(len);
    CHECK(data != NULL);
    memcpy(data, head.data, head.len);
    for (uint64_t i = 0; i < count; i++) {
        memcpy(data + head.len + i * element_bytes, element, element_bytes);
    }
    *out_len = len;
    return data;
}

/* Issue 27: 5 million empty nested arrays or a 64 MB bool array made Python
 * decode for tens of seconds or into half a gigabyte; both are bounded. */
static void test_cost_bounds(void)
{
    static const uint8_t empty_u8_array[12] = {0}; /* element type 0 (u8), count 0 */
    static const uint8_t one_bool[1] = {1};
    size_t len;
    HurrayGgufIndex *index = NULL;
    uint8_t *data = array_file(9, 1u << 16, sizeof empty_u8_array, empty_u8_array, &len);
    CHECK_OK(hurray_gguf_index_parse(data, len, &index)); /* 65536 nested arrays: allowed */
    hurray_gguf_index_destroy(&index);
    free(data);
    data = array_file(9, (1u << 16) + 1, sizeof empty_u8_array, empty_u8_array, &len);
    CHECK_FAIL(hurray_gguf_index_parse(data, len, &index), HURRAY_ERROR_CORRUPT,
               "arrays inside arrays");
    CHECK(index == NULL);
    free(data);
    /* The array and its 2^23 - 1 elements: exactly at the bound. */
    uint64_t most = (1u << 23) - 1;
    data = array_file(7, most, 1, one_bool, &len);
    CHECK_OK(hurray_gguf_index_parse(data, len, &index));
    hurray_gguf_index_destroy(&index);
    free(data);
    data = array_file(7, most + 1, 1, one_bool, &len);
    CHECK_FAIL(hurray_gguf_index_parse(data, len, &index), HURRAY_ERROR_CORRUPT, "values");
    free(data);
    /* Strings cost Python most: 2^21 of them at most. */
    static const uint8_t empty_string[8] = {0};
    data = array_file(8, 1u << 21, sizeof empty_string, empty_string, &len);
    CHECK_OK(hurray_gguf_index_parse(data, len, &index));
    hurray_gguf_index_destroy(&index);
    free(data);
    data = array_file(8, (1u << 21) + 1, sizeof empty_string, empty_string, &len);
    CHECK_FAIL(hurray_gguf_index_parse(data, len, &index), HURRAY_ERROR_CORRUPT, "strings");
    free(data);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    const char *env = getenv("HURRAY_TEST_SCALE");
    if (env != NULL && atol(env) > 0) {
        scale = (unsigned long)atol(env);
    }
    test_good_file();
    test_refusals();
    test_every_truncation();
    test_every_byte_changed();
    test_cost_bounds();
    checks_report("test_gguf_index");
    return 0;
}
