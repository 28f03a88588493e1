/* Descriptor decode + destroy in C, against a baseline of allocating,
 * filling and freeing a DLManagedTensor-sized header (what a DLPack
 * producer does per exchange). Prints "name ns_per_call" lines. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hurray.h"

/* The size of DLManagedTensorVersioned on LP64: version, manager_ctx,
 * deleter, flags, then a DLTensor (data, device, ndim, dtype, shape,
 * strides, byte_offset). */
#define DL_MANAGED_TENSOR_VERSIONED_SIZE 80

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile uint64_t sink;

static double baseline_ns(long n)
{
    int64_t shape[2] = {1024, 1024};
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        unsigned char *m = malloc(DL_MANAGED_TENSOR_VERSIONED_SIZE + sizeof shape);
        memset(m, 0, DL_MANAGED_TENSOR_VERSIONED_SIZE);
        memcpy(m + DL_MANAGED_TENSOR_VERSIONED_SIZE, shape, sizeof shape);
        m[0] = 1;
        sink += m[3];
        free(m);
    }
    return (now_ns() - t0) / (double)n;
}

static int encode_example(uint8_t *out, uint64_t cap, uint64_t *len, int quantized)
{
    uint64_t shape[2] = {1024, 1024};
    HurrayDescriptor *d = NULL;
    if (hurray_descriptor_new(quantized ? HURRAY_DTYPE_INT8 : HURRAY_DTYPE_FLOAT32, 2, shape, &d))
        return 1;
    if (quantized
        && (hurray_descriptor_set_quantization(d, HURRAY_SCHEME_AFFINE, HURRAY_GRANULARITY_PER_AXIS,
                                               0, 0, 0)
            || hurray_descriptor_set_part(d, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0, 0)
            || hurray_descriptor_set_part(d, HURRAY_ROLE_ZERO_POINT, HURRAY_DTYPE_INT8, 2, 0, 0)))
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
    uint8_t out[2048];
    uint64_t out_len = 0;
    if (hurray_descriptor_decode(bytes, len, &d) != HURRAY_OK)
        exit(1);
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        if (hurray_descriptor_encode(d, out, sizeof out, &out_len) != HURRAY_OK)
            exit(1);
        sink += out[7];
    }
    double t = (now_ns() - t0) / (double)n;
    hurray_descriptor_destroy(&d);
    return t;
}

static double best(double (*f)(const uint8_t *, uint64_t, long), const uint8_t *b, uint64_t l, long n)
{
    double m = 1e30;
    for (int r = 0; r < 9; r++) {
        double t = f(b, l, n);
        if (t < m)
            m = t;
    }
    return m;
}

int main(void)
{
    const long n = 200000;
    uint8_t plain[2048], quant[2048];
    uint64_t plain_len = 0, quant_len = 0;
    if (encode_example(plain, sizeof plain, &plain_len, 0) || encode_example(quant, sizeof quant, &quant_len, 1)) {
        fprintf(stderr, "encode failed: %s\n", hurray_last_error_message());
        return 1;
    }
    double base = 1e30;
    for (int r = 0; r < 9; r++) {
        double t = baseline_ns(n);
        if (t < base)
            base = t;
    }
    printf("dlmanaged_tensor_baseline %.1f\n", base);
    printf("decode_destroy_plain %.1f\n", best(decode_ns, plain, plain_len, n));
    printf("decode_destroy_quantized %.1f\n", best(decode_ns, quant, quant_len, n));
    printf("encode_plain %.1f\n", best(encode_ns, plain, plain_len, n));
    printf("encode_quantized %.1f\n", best(encode_ns, quant, quant_len, n));
    return 0;
}
