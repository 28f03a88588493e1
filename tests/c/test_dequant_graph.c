/*
 * test_dequant_graph.c -- hurray_dequantize and hurray_dequantize_rows on
 * version-2 descriptors (the graph scheme), through hurray.h alone.
 *
 *   test_dequant_graph CASES OUT
 *
 * CASES holds descriptors and buffers that tests/test_dequant_graph_c.py
 * wrote (its random graphs and the formats of v2-spec.md § 6); for each
 * case this program decodes the descriptor, copies every buffer into a
 * malloc'ed block of exactly its length (so that a read past it is an
 * AddressSanitizer report or a valgrind error), and writes to OUT the
 * whole tensor as float32, float16 and bfloat16. On the way it checks what
 * needs no oracle: every row range of the case gives the bytes of the whole
 * at its place, two threads that split the rows give them too, and the
 * refusals (an output one byte short, a buffer one byte short, a group
 * index out of range where the case names one) come back as statuses with
 * messages and write nothing. The driver compares OUT with its numpy
 * oracle bit for bit, on both paths (HURRAY_DEQUANT_PATH=scalar or not).
 *
 * CASES: "HGRC", u32 count, then per case: u32 flags (bit 0: buffer
 * `short_buffer` may be cut by a byte and must then be refused; bit 1: the
 * byte at `bad_at` of buffer `bad_buffer` set to `bad_value` makes an index
 * out of range), u32 short_buffer, u32 bad_buffer, u64 bad_at, u8 bad_value,
 * u32 descriptor length, the descriptor, u32 buffer count, per buffer u64
 * length and bytes. All little-endian.
 */
#include "hurray.h"

#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Reader {
    const uint8_t *p;
    size_t left;
} Reader;

static uint64_t take(Reader *r, unsigned bytes)
{
    CHECK(r->left >= bytes);
    uint64_t v = 0;
    for (unsigned i = bytes; i-- > 0;) {
        v = (v << 8) | r->p[i];
    }
    r->p += bytes;
    r->left -= bytes;
    return v;
}

static void release_free(void *p)
{
    free(p);
}

typedef struct Case {
    HurrayDescriptor *desc;
    HurrayBufferList *list;
    uint32_t nbuf;
    uint8_t *data[HURRAY_MAX_NODES];
    uint64_t len[HURRAY_MAX_NODES];
    uint64_t rows, row_elements, elements;
    uint32_t flags, short_buffer, bad_buffer;
    uint64_t bad_at;
    uint8_t bad_value;
} Case;

static void destroy_case(Case *c)
{
    hurray_buffer_list_destroy(&c->list);
    hurray_descriptor_destroy(&c->desc);
}

/* A list over copies of the case's buffers, buffer `cut` one byte short
 * (UINT32_MAX: none), buffer `bad` with byte `at` set to value. */
static HurrayBufferList *make_list(const Case *c, uint32_t cut, uint32_t bad, uint64_t at,
                                   uint8_t value)
{
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    for (uint32_t b = 0; b < c->nbuf; b++) {
        uint64_t len = c->len[b] - (b == cut && c->len[b] > 0 ? 1 : 0);
        uint8_t *copy = malloc(len == 0 ? 1 : len);
        CHECK(copy != NULL);
        memcpy(copy, c->data[b], len);
        if (b == bad) {
            copy[at] = value;
        }
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_from_ptr(copy, len, release_free, copy, &buf));
        CHECK_OK(hurray_buffer_list_push(list, &buf));
    }
    return list;
}

static void read_case(Reader *r, Case *c)
{
    memset(c, 0, sizeof *c);
    c->flags = (uint32_t)take(r, 4);
    c->short_buffer = (uint32_t)take(r, 4);
    c->bad_buffer = (uint32_t)take(r, 4);
    c->bad_at = take(r, 8);
    c->bad_value = (uint8_t)take(r, 1);
    uint64_t desc_len = take(r, 4);
    CHECK(r->left >= desc_len);
    CHECK_OK(hurray_descriptor_decode(r->p, desc_len, &c->desc));
    r->p += desc_len;
    r->left -= desc_len;
    c->nbuf = (uint32_t)take(r, 4);
    CHECK(c->nbuf <= HURRAY_MAX_NODES);
    for (uint32_t b = 0; b < c->nbuf; b++) {
        c->len[b] = take(r, 8);
        CHECK(r->left >= c->len[b]);
        c->data[b] = (uint8_t *)r->p; /* borrowed from the file's bytes */
        r->p += c->len[b];
        r->left -= c->len[b];
    }
    c->list = make_list(c, UINT32_MAX, UINT32_MAX, 0, 0);
    uint32_t rank = 0;
    const uint64_t *shape = NULL;
    CHECK_OK(hurray_descriptor_rank(c->desc, &rank));
    CHECK_OK(hurray_descriptor_shape(c->desc, &shape));
    c->rows = rank == 0 ? 1 : shape[0];
    c->row_elements = 1;
    for (uint32_t k = 1; k < rank; k++) {
        c->row_elements *= shape[k];
    }
    c->elements = c->rows * c->row_elements;
}

static uint32_t size_of(HurrayDtype dtype)
{
    return dtype == HURRAY_DTYPE_FLOAT32 ? 4 : 2;
}

/* The whole tensor in `dtype`, checked against an exact-length output. */
static uint8_t *whole(const Case *c, HurrayDtype dtype)
{
    uint64_t bytes = c->elements * size_of(dtype);
    uint8_t *out = malloc(bytes == 0 ? 1 : bytes);
    CHECK(out != NULL);
    CHECK_OK(hurray_dequantize(c->desc, c->list, dtype, out, bytes));
    return out;
}

typedef struct Half {
    const Case *c;
    uint64_t first, count;
    uint8_t *out;
    HurrayStatus status;
} Half;

static void *run_half(void *arg)
{
    Half *h = arg;
    h->status = hurray_dequantize_rows(h->c->desc, h->c->list, HURRAY_DTYPE_FLOAT32, h->first,
                                       h->count, h->out, h->count * h->c->row_elements * 4);
    return NULL;
}

/* Row ranges, and two threads, against the whole. */
static void check_rows(const Case *c, const uint8_t *full)
{
    uint64_t row_bytes = c->row_elements * 4;
    uint64_t picks[][2] = {{0, c->rows},
                           {0, c->rows / 2},
                           {c->rows / 2, c->rows - c->rows / 2},
                           {c->rows > 1 ? 1 : 0, c->rows > 2 ? c->rows - 2 : 0},
                           {c->rows - 1, c->rows > 0 ? 1 : 0}};
    for (size_t k = 0; k < sizeof picks / sizeof picks[0]; k++) {
        uint64_t first = picks[k][0], count = picks[k][1];
        uint64_t bytes = count * row_bytes;
        uint8_t *out = malloc(bytes == 0 ? 1 : bytes);
        CHECK(out != NULL);
        CHECK_OK(hurray_dequantize_rows(c->desc, c->list, HURRAY_DTYPE_FLOAT32, first, count, out,
                                        bytes));
        CHECK(memcmp(out, full + first * row_bytes, bytes) == 0);
        free(out);
    }
    uint8_t *split = malloc(c->elements * 4 == 0 ? 1 : c->elements * 4);
    CHECK(split != NULL);
    Half halves[2] = {{c, 0, c->rows / 2, split, HURRAY_OK},
                      {c, c->rows / 2, c->rows - c->rows / 2, split + c->rows / 2 * row_bytes,
                       HURRAY_OK}};
    pthread_t threads[2];
    for (int t = 0; t < 2; t++) {
        CHECK(pthread_create(&threads[t], NULL, run_half, &halves[t]) == 0);
    }
    for (int t = 0; t < 2; t++) {
        CHECK(pthread_join(threads[t], NULL) == 0);
        CHECK_OK(halves[t].status);
    }
    CHECK(memcmp(split, full, c->elements * 4) == 0);
    free(split);
}

/* A refusal writes no byte of the output. */
static void check_refused(const Case *c, const HurrayBufferList *list, uint64_t out_len,
                          HurrayStatus expected, const char *words)
{
    uint8_t *out = malloc(out_len + 1);
    CHECK(out != NULL);
    memset(out, 0x5A, out_len + 1);
    CHECK_FAIL(hurray_dequantize(c->desc, list, HURRAY_DTYPE_FLOAT32, out, out_len), expected,
               words);
    for (uint64_t i = 0; i <= out_len; i++) {
        CHECK(out[i] == 0x5A);
    }
    free(out);
}

static void check_refusals(const Case *c)
{
    if (c->elements > 0) {
        check_refused(c, c->list, c->elements * 4 - 1, HURRAY_ERROR_BUFFER_TOO_SMALL, "out_len");
    }
    if (c->flags & 1u) {
        HurrayBufferList *list = make_list(c, c->short_buffer, UINT32_MAX, 0, 0);
        check_refused(c, list, c->elements * 4, HURRAY_ERROR_BUFFER_TOO_SMALL, "reaches");
        hurray_buffer_list_destroy(&list);
    }
    if (c->flags & 2u) {
        HurrayBufferList *list = make_list(c, UINT32_MAX, c->bad_buffer, c->bad_at, c->bad_value);
        check_refused(c, list, c->elements * 4, HURRAY_ERROR_OUT_OF_RANGE, "not in [0, ");
        hurray_buffer_list_destroy(&list);
    }
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    FILE *in = fopen(argv[1], "rb");
    CHECK(in != NULL);
    CHECK(fseek(in, 0, SEEK_END) == 0);
    long size = ftell(in);
    CHECK(size >= 8);
    rewind(in);
    uint8_t *bytes = malloc((size_t)size);
    CHECK(bytes != NULL);
    CHECK(fread(bytes, 1, (size_t)size, in) == (size_t)size);
    fclose(in);
    FILE *out = fopen(argv[2], "wb");
    CHECK(out != NULL);

    Reader r = {bytes, (size_t)size};
    CHECK(memcmp(r.p, "HGRC", 4) == 0);
    r.p += 4;
    r.left -= 4;
    uint64_t count = take(&r, 4);
    const HurrayDtype types[3] = {HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_FLOAT16,
                                  HURRAY_DTYPE_BFLOAT16};
    for (uint64_t k = 0; k < count; k++) {
        Case c;
        read_case(&r, &c);
        for (int t = 0; t < 3; t++) {
            uint8_t *o = whole(&c, types[t]);
            CHECK(fwrite(o, 1, c.elements * size_of(types[t]), out) ==
                  c.elements * size_of(types[t]));
            if (t == 0) {
                check_rows(&c, o);
            }
            free(o);
        }
        check_refusals(&c);
        destroy_case(&c);
    }
    CHECK(r.left == 0);
    CHECK(fclose(out) == 0);
    free(bytes);
    checks_report("test_dequant_graph");
    return 0;
}
