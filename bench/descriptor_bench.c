/* Descriptor decode + destroy in C, against a baseline of what a DLPack
 * producer does per exchange: allocate a DLManagedTensorVersioned, fill it,
 * and free it through its deleter. Prints "name ns_per_call" lines.
 *
 * The cases run interleaved, a short batch of each per round, and each
 * keeps its best round: on a shared, noisy machine every case then meets
 * the same noise, and a ratio between two cases compares like with like. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hurray.h"

/* DLPack's own header (vendored whole), so the baseline writes exactly the
 * struct a real producer writes. */
#include "../src/hurray/_ext/third_party/dlpack/dlpack.h"

#define ROUNDS 40
#define CALLS 40000 /* per case and round */

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint64_t sink;

/* ---- the baseline ---------------------------------------------------- */

static void free_managed(DLManagedTensorVersioned *self)
{
    free(self);
}

/* Read through a volatile pointer: the compiler cannot see which deleter
 * runs, so it cannot drop the stores as dead, which a consumer would read. */
static void (*volatile managed_deleter)(DLManagedTensorVersioned *) = free_managed;

static float tensor_data[16];

/* One exchange of a rank-2 float32 tensor: the least a producer does,
 * one allocation holding the header with its shape and strides arrays,
 * every field set one by one, and the consumer's call of the deleter, which
 * frees it. A real producer does more (numpy, for one, also takes a
 * reference on the array and turns its byte strides into element strides),
 * and a consumer checks the fields; none of that is counted. */
static double baseline_ns(long n)
{
    const int64_t shape[2] = {1024, 1024};
    const int64_t strides[2] = {1024, 1};
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        DLManagedTensorVersioned *m = malloc(sizeof *m + 2 * sizeof shape);
        if (m == NULL) {
            exit(1);
        }
        int64_t *dims = (int64_t *)(m + 1);
        m->version = (DLPackVersion){1, 1};
        m->manager_ctx = tensor_data;
        m->deleter = managed_deleter;
        m->flags = 0;
        m->dl_tensor.data = tensor_data;
        m->dl_tensor.device = (DLDevice){kDLCPU, 0};
        m->dl_tensor.ndim = 2;
        m->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1}; /* float32 */
        for (int k = 0; k < 2; k++) {
            dims[k] = shape[k];
            dims[2 + k] = strides[k];
        }
        m->dl_tensor.shape = dims;
        m->dl_tensor.strides = dims + 2;
        m->dl_tensor.byte_offset = 0;
        m->deleter(m);
    }
    return (now_ns() - t0) / (double)n;
}

/* ---- the descriptor ---------------------------------------------------- */

enum example { PLAIN, AFFINE, GGML };

/* A 1024 x 1024 tensor: float32; int8 with a per-axis scale and zero
 * point; or GGML q4_0 blocks. The first two take validation's quick path,
 * GGML the full check (docs/adr/ADR-038-quick-acceptance.md). */
static int encode_example(uint8_t *out, uint64_t cap, uint64_t *len, enum example kind)
{
    uint64_t shape[2] = {1024, 1024};
    static const uint32_t dtypes[] = {HURRAY_DTYPE_FLOAT32, HURRAY_DTYPE_INT8, HURRAY_DTYPE_UINT8};
    HurrayDescriptor *d = NULL;
    if (hurray_descriptor_new(dtypes[kind], 2, shape, &d)) return 1;
    if (kind == AFFINE &&
        (hurray_descriptor_set_quantization(d, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS, 0,
                                            0, 0) ||
         hurray_descriptor_set_part(d, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0) ||
         hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0)))
        return 1;
    if (kind == GGML &&
        hurray_descriptor_set_quantization(d, HURRAY_SCHEME_GGML, HURRAY_GRANULARITY_NONE, 0, 0,
                                           HURRAY_GGML_Q4_0))
        return 1;
    HurrayStatus s = hurray_descriptor_encode(d, out, cap, len);
    hurray_descriptor_destroy(&d);
    return s != HURRAY_OK;
}

static double decode_ns(const uint8_t *bytes, uint64_t len, long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        HurrayDescriptor *d = NULL;
        if (hurray_descriptor_decode(bytes, len, &d) != HURRAY_OK) {
            fprintf(stderr, "decode failed: %s\n", hurray_last_error_message());
            exit(1);
        }
        hurray_descriptor_destroy(&d);
    }
    return (now_ns() - t0) / (double)n;
}

static double encode_ns(const uint8_t *bytes, uint64_t len, long n)
{
    HurrayDescriptor *d = NULL;
    uint8_t out[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t out_len = 0;
    if (hurray_descriptor_decode(bytes, len, &d) != HURRAY_OK) exit(1);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (hurray_descriptor_encode(d, out, sizeof out, &out_len) != HURRAY_OK) exit(1);
        sink += out[7];
    }
    double t = (now_ns() - t0) / (double)n;
    hurray_descriptor_destroy(&d);
    return t;
}

int main(void)
{
    uint8_t plain[HURRAY_MAX_DESCRIPTOR_LEN], quant[HURRAY_MAX_DESCRIPTOR_LEN],
        ggml[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t plain_len = 0, quant_len = 0, ggml_len = 0;
    if (encode_example(plain, sizeof plain, &plain_len, PLAIN) ||
        encode_example(quant, sizeof quant, &quant_len, AFFINE) ||
        encode_example(ggml, sizeof ggml, &ggml_len, GGML)) {
        fprintf(stderr, "encode failed: %s\n", hurray_last_error_message());
        return 1;
    }
    enum { BASE, DECODE_PLAIN, DECODE_QUANT, DECODE_GGML, ENCODE_PLAIN, ENCODE_QUANT, CASES };
    static const char *const names[CASES] = {
        "dlmanaged_tensor_baseline", "decode_destroy_plain", "decode_destroy_quantized",
        "decode_destroy_ggml_q4_0",  "encode_plain",         "encode_quantized"};
    double best[CASES];
    for (int c = 0; c < CASES; c++) {
        best[c] = 1e30;
    }
    for (int r = 0; r < ROUNDS; r++) {
        double t[CASES] = {
            baseline_ns(CALLS),
            decode_ns(plain, plain_len, CALLS),
            decode_ns(quant, quant_len, CALLS),
            decode_ns(ggml, ggml_len, CALLS),
            encode_ns(plain, plain_len, CALLS),
            encode_ns(quant, quant_len, CALLS),
        };
        for (int c = 0; c < CASES; c++) {
            if (t[c] < best[c]) {
                best[c] = t[c];
            }
        }
    }
    for (int c = 0; c < CASES; c++) {
        printf("%s %.1f\n", names[c], best[c]);
    }
    return 0;
}
