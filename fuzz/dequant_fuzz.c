/*
 * dequant_fuzz.c -- libFuzzer target for the dequantizer
 * (hurray_dequantize_rows, native/src/dequant*.c).
 *
 * Input layout (every field optional; a short input ends the list):
 *   u8   output type: 0 float32, 1 float16, 2 bfloat16, anything else a
 *        code as it is (most are refused);
 *   u16  descriptor length L, then L descriptor bytes (decoded; a refusal
 *        ends the run);
 *   per buffer the descriptor uses: u16 length, then that many bytes (a
 *        short input gives a short buffer);
 *   u64  first row, u64 row count (or the whole tensor), u8 slack: the
 *        output holds the rows' bytes minus (slack & 7).
 *
 * Each buffer and the output are malloc'ed to their exact length, so any
 * read or write past them is an AddressSanitizer report. Properties, each
 * an abort() when broken:
 *  1. no crash, no UB, no leak, no access out of bounds;
 *  2. a refusal leaves a message and writes no byte of the output;
 *  3. the scalar path and the AVX2 path give the same status and, on
 *     success, the same bytes;
 *  4. every row range's bytes are the whole tensor's bytes at that place.
 * Outputs of more than MAX_OUT bytes are only asked for with too small an
 * out_len (a refusal), so that a broadcast descriptor of 2^60 elements over
 * a few bytes costs nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dequant_graph_gen.h" /* the graph case: a generator, a reference */
#include "dequant_shared.h"
#include "hurray.h"

#define REQUIRE(cond)  \
    do {               \
        if (!(cond)) { \
            abort();   \
        }              \
    } while (0)

#define MAX_OUT (1u << 18)

struct input {
    const uint8_t *data;
    size_t size;
    size_t at;
};

static uint64_t take(struct input *in, unsigned bytes, uint64_t otherwise)
{
    if (in->size - in->at < bytes) {
        in->at = in->size;
        return otherwise;
    }
    uint64_t v = 0;
    for (unsigned i = bytes; i-- > 0;) {
        v = (v << 8) | in->data[in->at + i];
    }
    in->at += bytes;
    return v;
}

static void release_free(void *p)
{
    free(p);
}

/* One call on one path into a fresh output of exactly out_len bytes; the
 * output (or NULL) is the caller's to free. */
static uint8_t *call(int path, const HurrayDescriptor *desc, const HurrayBufferList *list,
                     uint32_t out_dtype, uint64_t first, uint64_t count, uint64_t out_len,
                     HurrayStatus *status)
{
    uint8_t *out = malloc(out_len == 0 ? 1 : out_len);
    REQUIRE(out != NULL);
    memset(out, 0x5A, out_len);
    hurray__dequant_force_path(path);
    *status = hurray_dequantize_rows(desc, list, (HurrayDtype)out_dtype, first, count, out,
                                     out_len);
    hurray__dequant_force_path(-1);
    if (*status != HURRAY_OK) {
        REQUIRE(hurray_last_error_message()[0] != '\0');
        for (uint64_t i = 0; i < out_len; i++) {
            REQUIRE(out[i] == 0x5A);
        }
    }
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
#ifdef HURRAY_FUZZ_SELF_TEST
    if (size >= 4 && memcmp(data, "BOOM", 4) == 0) {
        abort(); /* self-test finding */
    }
#endif
    if (size > 0 && data[0] == 'G') {
        return graph_case(data + 1, size - 1); /* version 2: dequant_graph_gen.h */
    }
    struct input in = {data, size, 0};
    uint64_t kind = take(&in, 1, 0);
    uint32_t out_dtype = kind == 0   ? HURRAY_DTYPE_FLOAT32
                         : kind == 1 ? HURRAY_DTYPE_FLOAT16
                         : kind == 2 ? HURRAY_DTYPE_BFLOAT16
                                     : (uint32_t)kind;
    uint64_t desc_len = take(&in, 2, 0);
    if (desc_len > in.size - in.at) {
        desc_len = in.size - in.at;
    }
    HurrayDescriptor *desc = NULL;
    if (hurray_descriptor_decode(in.data + in.at, desc_len, &desc) != HURRAY_OK) {
        return 0;
    }
    in.at += desc_len;
    uint64_t buffers = 0;
    REQUIRE(hurray_descriptor_buffer_count(desc, &buffers) == HURRAY_OK);
    HurrayBufferList *list = NULL;
    REQUIRE(hurray_buffer_list_new(&list) == HURRAY_OK);
    for (uint64_t b = 0; b < buffers; b++) {
        uint64_t len = take(&in, 2, 0);
        if (len > in.size - in.at) {
            len = in.size - in.at;
        }
        uint8_t *bytes = malloc(len == 0 ? 1 : len);
        REQUIRE(bytes != NULL);
        memcpy(bytes, in.data + in.at, len);
        in.at += len;
        HurrayBuffer *buf = NULL;
        REQUIRE(hurray_buffer_from_ptr(bytes, len, release_free, bytes, &buf) == HURRAY_OK);
        REQUIRE(hurray_buffer_list_push(list, &buf) == HURRAY_OK);
    }

    /* The tensor's rows, as the dequantizer counts them. */
    uint32_t rank = 0;
    const uint64_t *shape = NULL;
    REQUIRE(hurray_descriptor_rank(desc, &rank) == HURRAY_OK);
    REQUIRE(hurray_descriptor_shape(desc, &shape) == HURRAY_OK);
    uint64_t rows = rank == 0 ? 1 : shape[0];
    uint64_t row = 1;
    int huge = 0;
    for (uint32_t k = 1; k < rank; k++) {
        huge |= __builtin_mul_overflow(row, shape[k], &row);
    }
    uint64_t first = take(&in, 8, 0);
    uint64_t count = take(&in, 8, rows);
    uint64_t slack = take(&in, 1, 0) & 7;
    uint64_t size_of = out_dtype == HURRAY_DTYPE_FLOAT32 ? 4 : 2;
    uint64_t want;
    int in_range = first <= rows && count <= rows - first;
    if (huge || __builtin_mul_overflow(in_range ? count : 0, row, &want) ||
        __builtin_mul_overflow(want, size_of, &want) || want > MAX_OUT) {
        want = MAX_OUT + 1; /* only asked for with too small an out_len */
    }
    uint64_t out_len = want > MAX_OUT ? 64 : (want > slack ? want - slack : 0);

    HurrayStatus scalar_status, vector_status;
    uint8_t *scalar = call(0, desc, list, out_dtype, first, count, out_len, &scalar_status);
    uint8_t *vector = call(1, desc, list, out_dtype, first, count, out_len, &vector_status);
    REQUIRE(scalar_status == vector_status);
    if (scalar_status == HURRAY_OK) {
        REQUIRE(want <= MAX_OUT && out_len == want);
        REQUIRE(memcmp(scalar, vector, out_len) == 0);
        /* The range is the whole tensor's bytes at its place. */
        uint64_t whole_len = 0;
        if (!__builtin_mul_overflow(rows, row, &whole_len) &&
            !__builtin_mul_overflow(whole_len, size_of, &whole_len) && whole_len <= MAX_OUT) {
            HurrayStatus whole_status;
            uint8_t *whole = call(1, desc, list, out_dtype, 0, rows, whole_len, &whole_status);
            REQUIRE(whole_status == HURRAY_OK);
            REQUIRE(memcmp(whole + first * row * size_of, scalar, out_len) == 0);
            free(whole);
        }
    }
    free(scalar);
    free(vector);
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
    return 0;
}
