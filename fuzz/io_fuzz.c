/*
 * io_fuzz.c -- libFuzzer target for the hurray-io readers: the input is read
 * as a stream of frames (hurray_frame_read, up to 8 frames, with or without
 * verification) and as a file (hurray_reader_open mapped, with pread, or
 * without verification, then every name, metadata pair and tensor, and
 * hurray_reader_verify).
 *
 * Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, which makes every
 * checksum comparison pass (io_format.h), so mutations reach the header,
 * index and layout parsers behind the checksums. The checksums themselves
 * are tested by tests/c/test_io.c, which flips every bit of a file.
 *
 * Properties, each an abort() (or a sanitizer report) when broken:
 *  1. no read outside the input or the file (ASan; owned buffers are
 *     allocated to their exact length), no UB, no leak;
 *  2. a refusal leaves all out-parameters NULL and a message behind;
 *  3. whatever is handed out is consistent: names and metadata are UTF-8 of
 *     the stated length, names are unique, and every pair passes
 *     hurray_descriptor_check_buffers; the first and last byte of every
 *     buffer are read.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hurray_io.h"

#define REQUIRE(cond)                                                                             \
    do {                                                                                          \
        if (!(cond)) {                                                                            \
            fprintf(stderr, "io_fuzz: property broken: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
            abort();                                                                              \
        }                                                                                         \
    } while (0)

static volatile uint8_t sink;

static void refused(void)
{
    REQUIRE(hurray_last_error_message()[0] != '\0');
}

/* Decodes and checks the pair again, and touches both ends of each buffer. */
static void check_pair(HurrayTensorContext *context, HurrayBufferList *list)
{
    const uint8_t *bytes;
    uint64_t len, count;
    REQUIRE(hurray_tensor_context_descriptor(context, &bytes, &len) == HURRAY_OK);
    HurrayDescriptor *desc = NULL;
    REQUIRE(hurray_descriptor_decode(bytes, len, &desc) == HURRAY_OK);
    REQUIRE(hurray_descriptor_check_buffers(desc, list) == HURRAY_OK);
    hurray_descriptor_destroy(&desc);
    REQUIRE(hurray_buffer_list_len(list, &count) == HURRAY_OK);
    for (uint64_t i = 0; i < count; i++) {
        const HurrayBuffer *buf;
        void *data;
        uint64_t n;
        REQUIRE(hurray_buffer_list_get(list, i, &buf) == HURRAY_OK);
        REQUIRE(hurray_buffer_data(buf, &data, &n) == HURRAY_OK);
        if (n > 0) {
            sink ^= ((const uint8_t *)data)[0];
            sink ^= ((const uint8_t *)data)[n - 1];
        }
    }
}

typedef struct Memory {
    const uint8_t *data;
    size_t len, pos;
} Memory;

static int memory_read(void *stream, void *data, uint64_t len, uint64_t *out_read)
{
    Memory *m = stream;
    size_t n = m->len - m->pos;
    if (len < n) {
        n = (size_t)len;
    }
    /* Short reads, to exercise the loops: at most 97 bytes at a time. */
    if (n > 97) {
        n = 97;
    }
    memcpy(data, m->data + m->pos, n);
    m->pos += n;
    *out_read = n;
    return 0;
}

static void fuzz_frames(const uint8_t *data, size_t size, uint32_t flags)
{
    Memory m = {data, size, 0};
    for (int i = 0; i < 8; i++) {
        HurrayBuffer *name = NULL;
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        HurrayStatus status = hurray_frame_read(memory_read, &m, flags, &name, &context, &list);
        if (status != HURRAY_OK) {
            REQUIRE(name == NULL && context == NULL && list == NULL);
            refused();
            return;
        }
        if (context == NULL) {
            REQUIRE(name == NULL && list == NULL);
            return;
        }
        check_pair(context, list);
        hurray_buffer_destroy(&name);
        hurray_tensor_context_destroy(&context);
        hurray_buffer_list_destroy(&list);
    }
}

static int memfd = -1;
static char memfd_path[64];

static void fuzz_file(uint32_t flags)
{
    HurrayReader *reader = NULL;
    HurrayStatus status = hurray_reader_open(memfd_path, flags, &reader);
    if (status != HURRAY_OK) {
        REQUIRE(reader == NULL);
        refused();
        return;
    }
    uint64_t count = 0, meta = 0;
    REQUIRE(hurray_reader_count(reader, &count) == HURRAY_OK);
    REQUIRE(hurray_reader_metadata_count(reader, &meta) == HURRAY_OK);
    for (uint64_t i = 0; i < meta; i++) {
        const char *key, *value;
        uint64_t key_len, value_len;
        REQUIRE(hurray_reader_metadata_get(reader, i, &key, &key_len, &value, &value_len) ==
                HURRAY_OK);
        if (key_len > 0) sink ^= (uint8_t)key[key_len - 1];
        if (value_len > 0) sink ^= (uint8_t)value[value_len - 1];
    }
    for (uint64_t i = 0; i < count; i++) {
        const char *name;
        uint64_t name_len, found;
        REQUIRE(hurray_reader_name(reader, i, &name, &name_len) == HURRAY_OK);
        REQUIRE(hurray_reader_find(reader, name, name_len, &found) == HURRAY_OK && found == i);
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        status = hurray_reader_tensor(reader, i, &context, &list);
        if (status != HURRAY_OK) {
            REQUIRE(context == NULL && list == NULL);
            refused();
            continue;
        }
        /* Tensors outlive the reader: check the last one after destroying it. */
        if (i + 1 < count) {
            check_pair(context, list);
            (void)hurray_reader_verify(reader, i);
            hurray_tensor_context_destroy(&context);
            hurray_buffer_list_destroy(&list);
        } else {
            (void)hurray_reader_verify(reader, i);
            hurray_reader_destroy(&reader);
            check_pair(context, list);
            hurray_buffer_list_destroy(&list);
            hurray_tensor_context_destroy(&context);
        }
    }
    hurray_reader_destroy(&reader);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (memfd < 0) {
        memfd = memfd_create("hurray-io-fuzz", 0);
        REQUIRE(memfd >= 0);
        snprintf(memfd_path, sizeof memfd_path, "/proc/self/fd/%d", memfd);
    }
    /* One frame pass and one file pass per input; which flags depends on
     * the length in 8-byte units (file lengths are multiples of 8), so
     * every reader path is reached from every seed as mutations grow and
     * shrink it. */
    static const uint32_t file_flags[3] = {HURRAY_READ_DEFAULT, HURRAY_READ_NO_MMAP,
                                           HURRAY_READ_NO_VERIFY};
    fuzz_frames(data, size, (size >> 3) & 1 ? HURRAY_READ_NO_VERIFY : HURRAY_READ_DEFAULT);
    REQUIRE(ftruncate(memfd, 0) == 0);
    REQUIRE(pwrite(memfd, data, size, 0) == (ssize_t)size);
    fuzz_file(file_flags[(size >> 3) % 3]);
    return 0;
}
