/*
 * io_writer.c -- HurrayWriter: a hurray-io file, written frame by frame to a
 * temporary file beside the target, then synced and renamed over it
 * (docs/impl/io-format.md, "Writing a file").
 *
 * Nothing is written to the target path until hurray_writer_finish: a
 * reader that has the old file open or mapped keeps its old bytes (the
 * rename only unlinks the old name), and a writer killed midway leaves the
 * old file whole and a temporary file behind.
 *
 * What syncs when (ADR-050): writeback is started every few MiB as the
 * file is written; finish fdatasyncs the file, renames it, fsyncs the
 * directory. The replaced file is held open across the rename and released
 * by hurray_writer_destroy, so the cost of freeing its blocks (a synchronous
 * trim on some file systems) is not part of finish.
 */
#define _GNU_SOURCE
#include "io_format.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    int fd;
    int replaced_fd; /* the file finish renamed over, held until destroy; -1 if none */
    int failed;      /* a write failed: the file is unusable, finish refuses */
    int finished;
    uint32_t align_log2;
    uint64_t pos;
    uint64_t flushed; /* bytes before this offset have had their writeback started */
    char *path;
    char *tmp_path;
    WEntry *entries;
    uint64_t count, capacity;
    WMeta *meta;
    uint64_t meta_count, meta_capacity;
    HurrayNameSet *names;
    HurrayNameSet *keys;
};

/* Writeback is started every this many bytes (see start_writeback). */
#define WRITEBACK_STEP ((uint64_t)4 << 20)

/* Starts writing what was written since the last call back to the disk,
 * without waiting for it, once WRITEBACK_STEP bytes have gathered: the disk
 * works while the next bytes are written, whatever the tensors' sizes, and
 * the fdatasync in hurray_writer_finish has only the tail left to wait for
 * (a 256 MiB save: about a quarter faster). Only a hint: an I/O error still
 * surfaces at fdatasync, and where there is no sync_file_range nothing
 * changes but the speed. */
static void start_writeback(HurrayWriter *w)
{
    /* Whole 4 KiB blocks only: a partly written block would go out twice. */
    uint64_t end = w->pos & ~(uint64_t)4095;
    if (end < w->flushed || end - w->flushed < WRITEBACK_STEP) {
        return;
    }
#ifdef __linux__
    (void)sync_file_range(w->fd, (off_t)w->flushed, (off_t)(end - w->flushed),
                          SYNC_FILE_RANGE_WRITE);
#endif
    w->flushed = end;
}

static HurrayStatus write_all(HurrayWriter *w, const void *data, uint64_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        size_t n = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)len;
        ssize_t done = write(w->fd, p, n);
        if (done < 0) {
            if (errno == EINTR) {
                continue;
            }
            w->failed = 1;
            return hurray__fail(HURRAY_ERROR_IO, "writer: cannot write '%s': %s", w->tmp_path,
                                strerror(errno));
        }
        p += done;
        len -= (uint64_t)done;
        w->pos += (uint64_t)done;
        start_writeback(w);
    }
    return HURRAY_OK;
}

static int write_callback(void *stream, const void *data, uint64_t len)
{
    return write_all(stream, data, len) == HURRAY_OK ? 0 : -1;
}

static char *copy_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c != NULL) {
        memcpy(c, s, n);
    }
    return c;
}

/* A fresh temporary name in the target's directory, opened O_EXCL with mode
 * 0666 so the process umask applies as for any new file. */
static HurrayStatus open_temp(HurrayWriter *w)
{
    static atomic_uint counter;
    size_t room = strlen(w->path) + 64;
    w->tmp_path = malloc(room);
    if (w->tmp_path == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_open: cannot allocate");
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        snprintf(w->tmp_path, room, "%s.tmp-%ld-%u", w->path, (long)getpid(),
                 atomic_fetch_add(&counter, 1));
        w->fd = open(w->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (w->fd >= 0) {
            break;
        }
        if (errno != EEXIST) {
            return hurray__fail(HURRAY_ERROR_IO, "hurray_writer_open: cannot create '%s': %s",
                                w->tmp_path, strerror(errno));
        }
    }
    if (w->fd < 0) {
        return hurray__fail(HURRAY_ERROR_IO,
                            "hurray_writer_open: no free temporary name beside "
                            "'%s'",
                            w->path);
    }
    /* Replacing a file keeps its permission bits. */
    struct stat st;
    if (stat(w->path, &st) == 0 && S_ISREG(st.st_mode)) {
        (void)fchmod(w->fd, st.st_mode & 07777);
    }
    return HURRAY_OK;
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
    w->fd = -1;
    w->replaced_fd = -1;
    w->align_log2 = HURRAY__ALIGN_LOG2_DEFAULT;
    if (flags & HURRAY_WRITE_PAGE_ALIGN) {
        long page = sysconf(_SC_PAGESIZE);
        uint32_t log2 = 12; /* at least 4 KiB, whatever the writer's page */
        while (log2 < HURRAY__ALIGN_LOG2_MAX && ((long)1 << log2) < page) {
            log2++;
        }
        w->align_log2 = log2;
    }
    HurrayStatus status = HURRAY_OK;
    w->path = copy_string(path);
    if (w->path == NULL) {
        status = hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_open: cannot allocate");
    }
    if (status == HURRAY_OK) status = hurray__name_set_new(&w->names);
    if (status == HURRAY_OK) status = hurray__name_set_new(&w->keys);
    if (status == HURRAY_OK) status = open_temp(w);
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
        return hurray__fail(HURRAY_ERROR_IO,
                            "%s: an earlier write failed; the file cannot be "
                            "finished",
                            fn);
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

static HurrayStatus sync_directory(const char *path)
{
    char *copy = copy_string(path);
    if (copy == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_writer_finish: cannot allocate");
    }
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(copy);
    if (fd < 0) {
        return hurray__fail(HURRAY_ERROR_IO,
                            "hurray_writer_finish: cannot open the directory of "
                            "'%s': %s",
                            path, strerror(errno));
    }
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* Some file systems cannot sync a directory; the rename is still done. */
    if (rc != 0 && err != EINVAL && err != EROFS) {
        return hurray__fail(HURRAY_ERROR_IO,
                            "hurray_writer_finish: cannot sync the directory of "
                            "'%s': %s",
                            path, strerror(err));
    }
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

/* A reference to the file at path (if any) that keeps it alive after the
 * rename drops its last name: the kernel then frees its blocks (and, on a
 * file system mounted with discard and no journal, waits for the device to
 * trim them: 40 ms for 256 MiB here) at destroy, not inside the rename.
 * O_PATH needs no permission to read the file; without it, nothing is held
 * and the rename frees the file as before. */
static int hold_replaced(const char *path)
{
#ifdef O_PATH
    return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
    (void)path;
    return -1;
#endif
}

HurrayStatus hurray_writer_finish(HurrayWriter *writer)
{
    HURRAY__TRY(usable("hurray_writer_finish", writer));
    HurrayStatus status = write_index(writer);
    if (status != HURRAY_OK) {
        writer->failed = 1;
        return status;
    }
    /* fdatasync writes the data and the metadata needed to read it back
     * (size, block map), which is all the rename needs: the new name must
     * never point at a file whose bytes are not on the disk. Timestamps are
     * not needed. The directory fsync below makes the rename itself last. */
    if (fdatasync(writer->fd) != 0) {
        writer->failed = 1;
        return hurray__fail(HURRAY_ERROR_IO, "hurray_writer_finish: cannot sync '%s': %s",
                            writer->tmp_path, strerror(errno));
    }
    int rc = close(writer->fd);
    writer->fd = -1;
    if (rc != 0) {
        writer->failed = 1;
        return hurray__fail(HURRAY_ERROR_IO, "hurray_writer_finish: cannot close '%s': %s",
                            writer->tmp_path, strerror(errno));
    }
    int held = hold_replaced(writer->path);
    if (rename(writer->tmp_path, writer->path) != 0) {
        int err = errno;
        if (held >= 0) {
            close(held);
        }
        writer->failed = 1;
        return hurray__fail(HURRAY_ERROR_IO, "hurray_writer_finish: cannot rename '%s' to '%s': %s",
                            writer->tmp_path, writer->path, strerror(err));
    }
    writer->replaced_fd = held;
    writer->finished = 1;
    return sync_directory(writer->path);
}

void hurray_writer_destroy(HurrayWriter **writer)
{
    if (writer == NULL || *writer == NULL) {
        return;
    }
    HurrayWriter *w = *writer;
    *writer = NULL;
    if (w->fd >= 0) {
        close(w->fd);
    }
    if (w->replaced_fd >= 0) {
        close(w->replaced_fd); /* the last reference: the replaced file is freed now */
    }
    if (!w->finished && w->tmp_path != NULL) {
        unlink(w->tmp_path);
    }
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
    free(w->path);
    free(w->tmp_path);
    free(w);
}
