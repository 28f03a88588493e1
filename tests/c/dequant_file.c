/*
 * dequant_file.c -- a C consumer of the dequantizer: reads a descriptor and
 * its buffers from files, calls hurray_dequantize, writes the output's bytes
 * to a file. tests/test_quant_dequant_c.py builds it with `python -m hurray
 * --cflags --libs` and compares what it writes with Tensor.dequantize().
 *
 * Usage: dequant_file float32|float16|bfloat16 DESCRIPTOR OUT BUFFER...
 */
#include "hurray.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, HurrayStatus status)
{
    fprintf(stderr, "dequant_file: %s: %s: %s\n", what, hurray_status_name(status),
            hurray_last_error_message());
    return 1;
}

/* The whole file, malloc'ed to its exact length (at least 1 byte). */
static uint8_t *read_file(const char *path, uint64_t *out_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL || fseek(f, 0, SEEK_END) != 0) {
        return NULL;
    }
    long size = ftell(f);
    uint8_t *bytes = size >= 0 ? malloc(size == 0 ? 1 : (size_t)size) : NULL;
    if (bytes == NULL || fseek(f, 0, SEEK_SET) != 0 ||
        fread(bytes, 1, (size_t)size, f) != (size_t)size) {
        free(bytes);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *out_len = (uint64_t)size;
    return bytes;
}

static void release_free(void *p)
{
    free(p);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: dequant_file DTYPE DESCRIPTOR OUT BUFFER...\n");
        return 2;
    }
    uint32_t dtype = strcmp(argv[1], "float16") == 0    ? HURRAY_DTYPE_FLOAT16
                     : strcmp(argv[1], "bfloat16") == 0 ? HURRAY_DTYPE_BFLOAT16
                                                        : HURRAY_DTYPE_FLOAT32;
    uint64_t len = 0;
    uint8_t *bytes = read_file(argv[2], &len);
    if (bytes == NULL) {
        fprintf(stderr, "dequant_file: cannot read %s\n", argv[2]);
        return 1;
    }
    HurrayDescriptor *desc = NULL;
    HurrayStatus status = hurray_descriptor_decode(bytes, len, &desc);
    free(bytes);
    if (status != HURRAY_OK) {
        return fail("decode", status);
    }
    HurrayBufferList *list = NULL;
    if ((status = hurray_buffer_list_new(&list)) != HURRAY_OK) {
        return fail("list", status);
    }
    for (int i = 4; i < argc; i++) {
        uint8_t *data = read_file(argv[i], &len);
        HurrayBuffer *buf = NULL;
        if (data == NULL) {
            fprintf(stderr, "dequant_file: cannot read %s\n", argv[i]);
            return 1;
        }
        if ((status = hurray_buffer_from_ptr(data, len, release_free, data, &buf)) != HURRAY_OK ||
            (status = hurray_buffer_list_push(list, &buf)) != HURRAY_OK) {
            return fail("buffer", status);
        }
    }
    uint32_t rank = 0;
    const uint64_t *shape = NULL;
    hurray_descriptor_rank(desc, &rank);
    hurray_descriptor_shape(desc, &shape);
    uint64_t count = 1;
    for (uint32_t k = 0; k < rank; k++) {
        count *= shape[k];
    }
    uint64_t size = count * (dtype == HURRAY_DTYPE_FLOAT32 ? 4 : 2);
    void *out = malloc(size == 0 ? 1 : size);
    if (out == NULL) {
        return 1;
    }
    if ((status = hurray_dequantize(desc, list, dtype, out, size)) != HURRAY_OK) {
        return fail("dequantize", status);
    }
    FILE *f = fopen(argv[3], "wb");
    if (f == NULL || fwrite(out, 1, size, f) != size || fclose(f) != 0) {
        fprintf(stderr, "dequant_file: cannot write %s\n", argv[3]);
        return 1;
    }
    free(out);
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
    return 0;
}
