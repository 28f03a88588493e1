/*
 * io_writer.c -- HurrayWriter: a hurray-io file, written frame by frame
 * through a HurrayAtomicFile (io_atomic.c): to a temporary file beside the
 * target, then synced and renamed over it (docs/impl/io-format.md, "Writing
 * a file").
 *
 * Nothing is written to the target path until hurray_writer_finish: a
 * reader that has the old file open or mapped keeps its old bytes (the
 * rename only unlinks the old name), and a writer killed midway leaves the
 * old file whole and a temporary file behind, which the next writer in that
 * directory removes (ADR-056).
 */
#define _GNU_SOURCE
#include "io_format.h"
#include "io_path.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct WEntry {
    uint64_t offset;
    uint64_t frame_len;
    uint64_t checksum;
    uint8_t *name; /* owned copy */
    uint32_t name_len;
} WEntry;

typedef struct WMeta {
    uint8_t *key;
    uint8_t *value;
    uint32_t key_len;
    uint32_t value_len;
} WMeta;

struct HurrayWriter {
    HurrayAtomicFile *file;
    int failed; /* a write failed: the file is unusable, finish refuses */
    int finished;
    uint32_t align_log2;
    uint64_t pos;
    WEntry *entries;
    uint64_t count, capacity;
    WMeta *meta;
    uint64_t meta_count, meta_capacity;
    HurrayNameSet *names;
    HurrayNameSet *keys;
};

static HurrayStatus write_all(HurrayWriter *w, const void *data, uint64_t len)
{
    HurrayStatus status = hurray_atomic_file_write(w->file, data, len);
    if (status != HURRAY_OK) {
        w->failed = 1;
        return status;
    }
    w->pos += len;
    return HURRAY_OK;
}

static int write_callback(void *stream, const void *data, uint64_t len)
{
    return write_all(stream, data, len) == HURRAY_OK ? 0 : -1;
}

HurrayStatus hurray_writer_open(const char *path, uint32_t flags, HurrayWriter **out)
{
    if (path == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_writer_open: path or out is NULL");
    }
    if ((flags & ~HURRAY_WRITE_PAGE_ALIGN) != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "hurray_writer_open: unknown flags %#x",
                            flags);
    }
    HurrayWriter *w = calloc(1, sizeof *w);
    if (w == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_open: cannot allocate");
    }
    w->align_log2 = HURRAY__ALIGN_LOG2_DEFAULT;
    if (flags & HURRAY_WRITE_PAGE_ALIGN) {
        long page = sysconf(_SC_PAGESIZE);
        uint32_t log2 = 12; /* at least 4 KiB, whatever the writer's page */
        while (log2 < HURRAY__ALIGN_LOG2_MAX && ((long)1 << log2) < page) {
            log2++;
        }
        w->align_log2 = log2;
    }
    HurrayStatus status = hurray__name_set_new(&w->names);
    if (status == HURRAY_OK) status = hurray__name_set_new(&w->keys);
    if (status == HURRAY_OK) status = hurray_atomic_file_open(path, &w->file);
    if (status == HURRAY_OK) {
        uint8_t header[HURRAY__FILE_HEADER_LEN] = {0};
        memcpy(header, HURRAY__FILE_MAGIC, 8);
        hurray__put16(header + 8, HURRAY__IO_FORMAT_VERSION);
        header[10] = (uint8_t)w->align_log2;
        status = write_all(w, header, sizeof header);
        uint64_t first;
        hurray__align_up(HURRAY__FILE_HEADER_LEN, w->align_log2, &first);
        static const uint8_t zeros[4096];
        while (status == HURRAY_OK && w->pos < first) {
            uint64_t n = first - w->pos < sizeof zeros ? first - w->pos : sizeof zeros;
            status = write_all(w, zeros, n);
        }
    }
    if (status != HURRAY_OK) {
        hurray_writer_destroy(&w);
        return status;
    }
    *out = w;
    return HURRAY_OK;
}

static HurrayStatus usable(const char *fn, const HurrayWriter *w)
{
    if (w == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: writer is NULL", fn);
    }
    if (w->finished) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%s: the writer is already finished",
                            fn);
    }
    if (w->failed) {
        int err = hurray__atomic_file_errno(w->file);
        return hurray__fail_os(HURRAY_ERROR_IO, err,
                               "%s: an earlier write failed (%s); the file cannot be finished", fn,
                               err ? strerror(err) : "see the error it gave");
    }
    return HURRAY_OK;
}

static uint8_t *copy_bytes(const char *s, uint64_t n)
{
    uint8_t *c = malloc(n == 0 ? 1 : (size_t)n);
    if (c != NULL && n != 0) {
        memcpy(c, s, (size_t)n);
    }
    return c;
}

/* `items` (an array of *capacity items of item_size bytes) reallocated to
 * twice the capacity, or to `first` items; NULL, with items and *capacity
 * unchanged, when that does not fit in memory. */
static void *grown(void *items, uint64_t *capacity, size_t item_size, uint64_t first)
{
    uint64_t cap = *capacity == 0 ? first : *capacity * 2;
    size_t bytes;
    if (cap < *capacity || cap > SIZE_MAX ||
        __builtin_mul_overflow((size_t)cap, item_size, &bytes)) {
        return NULL;
    }
    void *p = realloc(items, bytes);
    if (p != NULL) {
        *capacity = cap;
    }
    return p;
}

HurrayStatus hurray_writer_set_metadata(HurrayWriter *writer, const char *key, uint64_t key_len,
                                        const char *value, uint64_t value_len)
{
    HURRAY__TRY(usable("hurray_writer_set_metadata", writer));
    if ((key == NULL && key_len != 0) || (value == NULL && value_len != 0)) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_writer_set_metadata: key or value "
                                                        "is NULL");
    }
    if (key_len > UINT32_MAX || value_len > UINT32_MAX) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "hurray_writer_set_metadata: a key or "
                                                           "value longer than 4 GiB");
    }
    if (!hurray__utf8_valid((const uint8_t *)key, key_len) ||
        !hurray__utf8_valid((const uint8_t *)value, value_len)) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "hurray_writer_set_metadata: key and "
                                                           "value must be UTF-8");
    }
    if (writer->meta_count == writer->meta_capacity) {
        WMeta *m = grown(writer->meta, &writer->meta_capacity, sizeof *m, 8);
        if (m == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_set_metadata: cannot grow");
        }
        writer->meta = m;
    }
    WMeta m = {copy_bytes(key, key_len), copy_bytes(value, value_len), (uint32_t)key_len,
               (uint32_t)value_len};
    if (m.key == NULL || m.value == NULL) {
        free(m.key);
        free(m.value);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_set_metadata: cannot allocate");
    }
    uint64_t existing;
    int added = hurray__name_set_add(writer->keys, m.key, m.key_len, writer->meta_count, &existing);
    if (added != 1) {
        free(m.key);
        free(m.value);
        if (added < 0) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_set_metadata: cannot grow");
        }
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_writer_set_metadata: key "
                            "'%.*s' is already set",
                            (int)(key_len > 200 ? 200 : key_len), key);
    }
    writer->meta[writer->meta_count++] = m;
    return HURRAY_OK;
}

HurrayStatus hurray_writer_add(HurrayWriter *writer, const char *name, uint64_t name_len,
                               const HurrayTensorContext *context, const HurrayBufferList *list)
{
    HURRAY__TRY(usable("hurray_writer_add", writer));
    if (name == NULL && name_len != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_writer_add: name is NULL");
    }
    if (name_len > HURRAY__MAX_NAME_LEN) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_writer_add: name is %llu "
                            "bytes, at most %u",
                            (unsigned long long)name_len, HURRAY__MAX_NAME_LEN);
    }
    if (writer->count == writer->capacity) {
        WEntry *e = grown(writer->entries, &writer->capacity, sizeof *e, 16);
        if (e == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_add: cannot grow the index");
        }
        writer->entries = e;
    }
    WEntry e = {.offset = writer->pos,
                .name = copy_bytes(name, name_len),
                .name_len = (uint32_t)name_len};
    if (e.name == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_add: cannot allocate");
    }
    uint64_t existing;
    if (hurray__name_set_find(writer->names, e.name, e.name_len, &existing)) {
        free(e.name);
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_writer_add: a tensor named "
                            "'%.*s' was already added",
                            (int)(name_len > 200 ? 200 : name_len), name);
    }
    /* The frame writer checks the name, the descriptor and the buffers
     * before its first byte, so a refused tensor leaves the file usable. */
    uint64_t pos_before = writer->pos;
    HurrayStatus status = hurray__frame_write(write_callback, writer, writer->align_log2, name,
                                              name_len, context, list, &e.checksum, &e.frame_len);
    if (status != HURRAY_OK) {
        if (writer->pos != pos_before) {
            writer->failed = 1;
        }
        free(e.name);
        int err = writer->failed ? hurray__atomic_file_errno(writer->file) : 0;
        if (err != 0) {
            /* The frame writer only saw the callback fail; say what the
             * operating system said (No space left on device, ...). */
            return hurray__fail_os(HURRAY_ERROR_IO, err,
                                   "hurray_writer_add: cannot write the temporary file of '%s': %s",
                                   hurray__atomic_file_target(writer->file), strerror(err));
        }
        return status;
    }
    if (hurray__name_set_add(writer->names, e.name, e.name_len, writer->count, &existing) != 1) {
        free(e.name);
        writer->failed = 1;
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_add: cannot grow the names");
    }
    writer->entries[writer->count++] = e;
    return HURRAY_OK;
}

static HurrayStatus write_index(HurrayWriter *w)
{
    uint64_t len = HURRAY__INDEX_HEADER_LEN;
    for (uint64_t i = 0; i < w->count; i++) {
        len += 32 + ((w->entries[i].name_len + 7ull) & ~7ull);
    }
    for (uint64_t i = 0; i < w->meta_count; i++) {
        len += (8 + (uint64_t)w->meta[i].key_len + w->meta[i].value_len + 7) & ~7ull;
    }
    if (len > HURRAY__MAX_INDEX_LEN) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_writer_finish: the index would "
                            "take %llu bytes, more than a reader accepts",
                            (unsigned long long)len);
    }
    uint8_t *ix = calloc(1, (size_t)len);
    if (ix == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_finish: cannot allocate");
    }
    memcpy(ix, HURRAY__INDEX_MAGIC, 4);
    hurray__put16(ix + 4, HURRAY__IO_FORMAT_VERSION);
    hurray__put64(ix + 8, w->count);
    hurray__put64(ix + 16, w->meta_count);
    uint64_t pos = HURRAY__INDEX_HEADER_LEN;
    for (uint64_t i = 0; i < w->count; i++) {
        const WEntry *e = &w->entries[i];
        hurray__put64(ix + pos, e->offset);
        hurray__put64(ix + pos + 8, e->frame_len);
        hurray__put64(ix + pos + 16, e->checksum);
        hurray__put32(ix + pos + 24, e->name_len);
        memcpy(ix + pos + 32, e->name, e->name_len);
        pos += 32 + ((e->name_len + 7ull) & ~7ull);
    }
    for (uint64_t i = 0; i < w->meta_count; i++) {
        const WMeta *m = &w->meta[i];
        hurray__put32(ix + pos, m->key_len);
        hurray__put32(ix + pos + 4, m->value_len);
        memcpy(ix + pos + 8, m->key, m->key_len);
        memcpy(ix + pos + 8 + m->key_len, m->value, m->value_len);
        pos += (8 + (uint64_t)m->key_len + m->value_len + 7) & ~7ull;
    }
    uint64_t index_offset = w->pos;
    uint8_t t[HURRAY__TRAILER_LEN] = {0};
    hurray__put64(t, index_offset);
    hurray__put64(t + 8, len);
    hurray__put64(t + 16, hurray__hash(ix, (size_t)len));
    hurray__put64(t + 24, index_offset + len + HURRAY__TRAILER_LEN);
    hurray__put16(t + 32, HURRAY__IO_FORMAT_VERSION);
    t[34] = (uint8_t)w->align_log2;
    hurray__put64(t + 48, hurray__hash(t, 48));
    memcpy(t + 56, HURRAY__TRAILER_MAGIC, 8);
    HurrayStatus status = write_all(w, ix, len);
    free(ix);
    HURRAY__TRY(status);
    return write_all(w, t, sizeof t);
}

HurrayStatus hurray_writer_finish(HurrayWriter *writer)
{
    HURRAY__TRY(usable("hurray_writer_finish", writer));
    HurrayStatus status = write_index(writer);
    if (status == HURRAY_OK) {
        status = hurray_atomic_file_finish(writer->file);
    }
    if (status != HURRAY_OK) {
        writer->failed = 1;
        return status;
    }
    writer->finished = 1;
    return HURRAY_OK;
}

void hurray_writer_destroy(HurrayWriter **writer)
{
    if (writer == NULL || *writer == NULL) {
        return;
    }
    HurrayWriter *w = *writer;
    *writer = NULL;
    /* Unfinished: removes the temporary; finished: releases the replaced file. */
    hurray_atomic_file_destroy(&w->file);
    for (uint64_t i = 0; i < w->count; i++) {
        free(w->entries[i].name);
    }
    for (uint64_t i = 0; i < w->meta_count; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->entries);
    free(w->meta);
    hurray__name_set_destroy(&w->names);
    hurray__name_set_destroy(&w->keys);
    free(w);
}
