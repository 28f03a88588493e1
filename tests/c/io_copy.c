/*
 * io_copy.c -- reads every tensor of a hurray-io file (checksums verified)
 * and writes them, unchanged pairs, with the same metadata, to another file;
 * prints one line per tensor: the name, the descriptor bytes in hex, then
 * each buffer in hex. tests/test_io_interop.py compares that dump with what
 * Python wrote, and reads the copy back in Python.
 *
 * Usage: io_copy IN OUT [mmap|pread]
 */
#include "hurray_io.h"

#include <stdio.h>
#include <string.h>

static int fail(const char *what, HurrayStatus status)
{
    fprintf(stderr, "io_copy: %s: %s: %s\n", what, hurray_status_name(status),
            hurray_last_error_message());
    return 1;
}

static void hex(const uint8_t *p, uint64_t n)
{
    putchar(' ');
    if (n == 0) {
        putchar('-');
    }
    for (uint64_t i = 0; i < n; i++) {
        printf("%02x", p[i]);
    }
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: io_copy IN OUT [mmap|pread]\n");
        return 2;
    }
    uint32_t flags = argc > 3 && strcmp(argv[3], "pread") == 0 ? HURRAY_READ_NO_MMAP : 0;
    HurrayReader *reader = NULL;
    HurrayWriter *writer = NULL;
    HurrayStatus status = hurray_reader_open(argv[1], flags, &reader);
    if (status != HURRAY_OK) {
        return fail("open", status);
    }
    status = hurray_writer_open(argv[2], HURRAY_WRITE_DEFAULT, &writer);
    if (status != HURRAY_OK) {
        hurray_reader_destroy(&reader);
        return fail("create", status);
    }
    uint64_t meta = 0, count = 0;
    hurray_reader_metadata_count(reader, &meta);
    for (uint64_t i = 0; status == HURRAY_OK && i < meta; i++) {
        const char *key, *value;
        uint64_t key_len, value_len;
        status = hurray_reader_metadata_get(reader, i, &key, &key_len, &value, &value_len);
        if (status == HURRAY_OK) {
            status = hurray_writer_set_metadata(writer, key, key_len, value, value_len);
        }
    }
    hurray_reader_count(reader, &count);
    for (uint64_t i = 0; status == HURRAY_OK && i < count; i++) {
        const char *name;
        uint64_t name_len;
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        hurray_reader_name(reader, i, &name, &name_len);
        status = hurray_reader_tensor(reader, i, &context, &list);
        if (status != HURRAY_OK) {
            break;
        }
        printf("%.*s", (int)name_len, name);
        const uint8_t *desc;
        uint64_t desc_len, buffers = 0;
        hurray_tensor_context_descriptor(context, &desc, &desc_len);
        hex(desc, desc_len);
        hurray_buffer_list_len(list, &buffers);
        for (uint64_t b = 0; b < buffers; b++) {
            const HurrayBuffer *buf;
            void *data;
            uint64_t len;
            hurray_buffer_list_get(list, b, &buf);
            hurray_buffer_data(buf, &data, &len);
            hex(data, len);
        }
        putchar('\n');
        status = hurray_writer_add(writer, name, name_len, context, list);
        hurray_tensor_context_destroy(&context);
        hurray_buffer_list_destroy(&list);
    }
    if (status == HURRAY_OK) {
        status = hurray_writer_finish(writer);
    }
    hurray_writer_destroy(&writer);
    hurray_reader_destroy(&reader);
    return status == HURRAY_OK ? 0 : fail("copy", status);
}
