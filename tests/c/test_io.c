/*
 * test_io.c -- hurray-io in C: files (writer, reader, metadata, lifetimes),
 * frames over a memory stream and a pipe, and bad input of every kind the
 * format names: truncation at every length, every single-bit flip of a
 * small file, duplicate and non-UTF-8 names, huge claimed lengths, an
 * unfinished writer.
 *
 * Usage: test_io DIR (a scratch directory). Uses only the public headers,
 * so it runs against the installed libhurray and with the library sources
 * compiled in under sanitizers. HURRAY_TEST_SCALE=N tests every N-th byte
 * in the exhaustive loops (for valgrind).
 */
#define _GNU_SOURCE /* memmem */
#include "hurray_io.h"

#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long scale = 1;
static const char *dir;

static char *path_in(const char *name)
{
    static char paths[8][4096];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

/* ---- making tensors --------------------------------------------------- */

typedef struct Pair {
    HurrayTensorContext *context;
    HurrayBufferList *list;
} Pair;

static void pair_destroy(Pair *p)
{
    hurray_tensor_context_destroy(&p->context);
    hurray_buffer_list_destroy(&p->list);
}

static Pair make_pair(HurrayDescriptor *desc, const uint64_t *lens, int count, uint8_t seed)
{
    Pair p = {0};
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t len;
    CHECK_OK(hurray_descriptor_encode(desc, bytes, sizeof bytes, &len));
    CHECK_OK(hurray_tensor_context_new(HURRAY_C_ABI_VERSION, bytes, len, NULL, NULL, &p.context));
    CHECK_OK(hurray_buffer_list_new(&p.list));
    for (int i = 0; i < count; i++) {
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_new(lens[i], 64, &buf));
        void *data;
        uint64_t n;
        CHECK_OK(hurray_buffer_data(buf, &data, &n));
        for (uint64_t k = 0; k < n; k++) {
            ((uint8_t *)data)[k] = (uint8_t)(seed + 31 * i + 7 * k);
        }
        CHECK_OK(hurray_buffer_list_push(p.list, &buf));
    }
    hurray_descriptor_destroy(&desc);
    return p;
}

/* float32 [rows, cols], one buffer. */
static Pair plain(uint64_t rows, uint64_t cols, uint8_t seed)
{
    uint64_t shape[2] = {rows, cols};
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, 2, shape, &desc));
    uint64_t len = rows * cols * 4;
    return make_pair(desc, &len, 1, seed);
}

/* int8 [4, 8] with a float32 scale per row in a second buffer. */
static Pair affine(uint8_t seed)
{
    uint64_t shape[2] = {4, 8};
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_INT8, 2, shape, &desc));
    CHECK_OK(hurray_descriptor_set_quantization(desc, HURRAY_SCHEME_AFFINE,
                                                HURRAY_GRANULARITY_PER_AXIS, 0, 0, 0));
    CHECK_OK(hurray_descriptor_set_part(desc, HURRAY_ROLE_SCALE, HURRAY_DTYPE_FLOAT32, 1, 0,
                                        HURRAY_PART_LAYOUT_ROW_MAJOR));
    uint64_t lens[2] = {32, 16};
    return make_pair(desc, lens, 2, seed);
}

/* Every byte of every buffer of a and b agrees, and so do the descriptors. */
static void check_same(const Pair *a, const Pair *b)
{
    const uint8_t *da, *db;
    uint64_t la, lb;
    CHECK_OK(hurray_tensor_context_descriptor(a->context, &da, &la));
    CHECK_OK(hurray_tensor_context_descriptor(b->context, &db, &lb));
    CHECK(la == lb && memcmp(da, db, la) == 0);
    uint64_t na, nb;
    CHECK_OK(hurray_buffer_list_len(a->list, &na));
    CHECK_OK(hurray_buffer_list_len(b->list, &nb));
    CHECK(na == nb);
    for (uint64_t i = 0; i < na; i++) {
        const HurrayBuffer *ba, *bb;
        void *pa, *pb;
        uint64_t sa, sb;
        CHECK_OK(hurray_buffer_list_get(a->list, i, &ba));
        CHECK_OK(hurray_buffer_list_get(b->list, i, &bb));
        CHECK_OK(hurray_buffer_data(ba, &pa, &sa));
        CHECK_OK(hurray_buffer_data(bb, &pb, &sb));
        CHECK(sa == sb && memcmp(pa, pb, sa) == 0);
    }
}

/* Every buffer starts at a multiple of align (a mapping starts on a page). */
static void check_aligned(const Pair *p, uintptr_t align)
{
    uint64_t n;
    CHECK_OK(hurray_buffer_list_len(p->list, &n));
    for (uint64_t i = 0; i < n; i++) {
        const HurrayBuffer *b;
        void *data;
        uint64_t len;
        CHECK_OK(hurray_buffer_list_get(p->list, i, &b));
        CHECK_OK(hurray_buffer_data(b, &data, &len));
        CHECK(((uintptr_t)data & (align - 1)) == 0);
    }
}

/* ---- files -------------------------------------------------------------- */

static void write_sample(const char *path, uint32_t flags)
{
    Pair a = plain(3, 5, 1), q = affine(2), e = plain(0, 4, 3);
    HurrayWriter *w = NULL;
    CHECK_OK(hurray_writer_open(path, flags, &w));
    CHECK_OK(hurray_writer_set_metadata(w, "format", 6, "test", 4));
    CHECK_OK(hurray_writer_set_metadata(w, "empty", 5, "", 0));
    CHECK_OK(hurray_writer_add(w, "weight", 6, a.context, a.list));
    CHECK_OK(hurray_writer_add(w, "quantized", 9, q.context, q.list));
    CHECK_OK(hurray_writer_add(w, "", 0, e.context, e.list));
    CHECK_OK(hurray_writer_finish(w));
    hurray_writer_destroy(&w);
    CHECK(w == NULL);
    pair_destroy(&a);
    pair_destroy(&q);
    pair_destroy(&e);
}

static void test_round_trip(uint32_t read_flags, uint32_t write_flags)
{
    const char *path = path_in("sample.hurray");
    write_sample(path, write_flags);
    HurrayReader *r = NULL;
    CHECK_OK(hurray_reader_open(path, read_flags, &r));
    uint64_t count;
    CHECK_OK(hurray_reader_count(r, &count));
    CHECK(count == 3);
    const char *name;
    uint64_t len;
    CHECK_OK(hurray_reader_name(r, 1, &name, &len));
    CHECK(len == 9 && memcmp(name, "quantized", 9) == 0);
    CHECK_FAIL(hurray_reader_name(r, 3, &name, &len), HURRAY_ERROR_OUT_OF_RANGE, "out of range");
    uint64_t index;
    CHECK_OK(hurray_reader_find(r, "weight", 6, &index));
    CHECK(index == 0);
    CHECK_OK(hurray_reader_find(r, "", 0, &index));
    CHECK(index == 2);
    CHECK_FAIL(hurray_reader_find(r, "nope", 4, &index), HURRAY_ERROR_NOT_FOUND, "nope");
    uint64_t meta;
    CHECK_OK(hurray_reader_metadata_count(r, &meta));
    CHECK(meta == 2);
    const char *key, *value;
    uint64_t key_len, value_len;
    CHECK_OK(hurray_reader_metadata_get(r, 0, &key, &key_len, &value, &value_len));
    CHECK(key_len == 6 && memcmp(key, "format", 6) == 0 && value_len == 4 &&
          memcmp(value, "test", 4) == 0);
    CHECK_OK(hurray_reader_metadata_get(r, 1, &key, &key_len, &value, &value_len));
    CHECK(key_len == 5 && value_len == 0);
    CHECK_FAIL(hurray_reader_metadata_get(r, 2, &key, &key_len, &value, &value_len),
               HURRAY_ERROR_OUT_OF_RANGE, "out of range");

    Pair want[3] = {plain(3, 5, 1), affine(2), plain(0, 4, 3)};
    Pair got[3] = {{0}};
    for (uint64_t i = 0; i < 3; i++) {
        CHECK_OK(hurray_reader_verify(r, i));
        CHECK_OK(hurray_reader_tensor(r, i, &got[i].context, &got[i].list));
        check_same(&want[i], &got[i]);
        check_aligned(&got[i], write_flags & HURRAY_WRITE_PAGE_ALIGN ? 4096 : 64);
    }
    CHECK_FAIL(hurray_reader_tensor(r, 3, &got[0].context, &got[0].list), HURRAY_ERROR_OUT_OF_RANGE,
               "out of range");
    /* Tensors outlive the reader, and their two halves go in either order. */
    hurray_reader_destroy(&r);
    CHECK(r == NULL);
    for (int i = 0; i < 3; i++) {
        check_same(&want[i], &got[i]);
    }
    hurray_buffer_list_destroy(&got[0].list);
    hurray_tensor_context_destroy(&got[0].context);
    for (int i = 0; i < 3; i++) {
        pair_destroy(&got[i]);
        pair_destroy(&want[i]);
    }
}

/* A file replaced while a reader has it mapped: the reader keeps the old
 * bytes (the writer never writes into the old file). */
static void test_replace_while_mapped(void)
{
    const char *path = path_in("replace.hurray");
    Pair a = plain(4, 4, 10);
    HurrayWriter *w = NULL;
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, a.context, a.list));
    CHECK_OK(hurray_writer_finish(w));
    hurray_writer_destroy(&w);
    HurrayReader *r = NULL;
    Pair old = {0};
    CHECK_OK(hurray_reader_open(path, 0, &r));
    CHECK_OK(hurray_reader_tensor(r, 0, &old.context, &old.list));
    Pair b = plain(4, 4, 99);
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, b.context, b.list));
    CHECK_OK(hurray_writer_finish(w));
    hurray_writer_destroy(&w);
    check_same(&a, &old);
    CHECK_OK(hurray_reader_verify(r, 0));
    hurray_reader_destroy(&r);
    Pair now = {0};
    CHECK_OK(hurray_reader_open(path, 0, &r));
    CHECK_OK(hurray_reader_tensor(r, 0, &now.context, &now.list));
    check_same(&b, &now);
    hurray_reader_destroy(&r);
    pair_destroy(&a);
    pair_destroy(&b);
    pair_destroy(&old);
    pair_destroy(&now);
}

/* How many of this process's descriptors refer to the file (dev, ino). */
static int fds_on(dev_t dev, ino_t ino)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        struct stat st;
        int fd = atoi(ent->d_name);
        if (ent->d_name[0] != '.' && fd != dirfd(d) && fstat(fd, &st) == 0 && st.st_dev == dev &&
            st.st_ino == ino) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static int open_fd_count(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    while (readdir(d) != NULL) {
        n++;
    }
    closedir(d);
    return n;
}

/* finish holds the file it replaced until destroy (ADR-050), exactly once:
 * after destroy no descriptor is left, on success and when the rename fails. */
static void test_replaced_file_released_at_destroy(void)
{
    const char *path = path_in("released.hurray");
    Pair a = plain(4, 4, 21);
    int fds_before = open_fd_count();
    HurrayWriter *w = NULL;
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, a.context, a.list));
    CHECK_OK(hurray_writer_finish(w)); /* nothing replaced: nothing held */
    CHECK(open_fd_count() == fds_before);
    hurray_writer_destroy(&w);
    struct stat old;
    CHECK(stat(path, &old) == 0);
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, a.context, a.list));
    CHECK_OK(hurray_writer_finish(w));
    struct stat now;
    CHECK(stat(path, &now) == 0);
    CHECK(now.st_ino != old.st_ino);
    CHECK(fds_on(old.st_dev, old.st_ino) == 1); /* unlinked, still held */
    hurray_writer_destroy(&w);
    CHECK(fds_on(old.st_dev, old.st_ino) == 0);
    CHECK(open_fd_count() == fds_before);
    /* A rename that fails (the target is a directory) closes what it held. */
    const char *blocked = path_in("blocked.hurray");
    CHECK(mkdir(blocked, 0700) == 0);
    char inside[4200];
    snprintf(inside, sizeof inside, "%s/x", blocked);
    FILE *f = fopen(inside, "w");
    CHECK(f != NULL);
    fclose(f);
    CHECK_OK(hurray_writer_open(blocked, 0, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, a.context, a.list));
    CHECK_FAIL(hurray_writer_finish(w), HURRAY_ERROR_IO, "cannot rename");
    hurray_writer_destroy(&w);
    CHECK(open_fd_count() == fds_before);
    CHECK(unlink(inside) == 0);
    CHECK(rmdir(blocked) == 0);
    pair_destroy(&a);
}

static int temp_files_in_dir(void)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL) {
        if (strstr(ent->d_name, ".tmp-") != NULL) {
            n++;
        }
    }
    closedir(d);
    return n;
}

static void test_writer_refusals(void)
{
    const char *path = path_in("refusals.hurray");
    write_sample(path, 0);
    struct stat before;
    CHECK(stat(path, &before) == 0);
    Pair a = plain(2, 2, 5);
    HurrayWriter *w = NULL;
    CHECK_FAIL(hurray_writer_open(path, 0x80, &w), HURRAY_ERROR_INVALID_ARGUMENT, "flags");
    CHECK_FAIL(hurray_writer_open(NULL, 0, &w), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK(temp_files_in_dir() == 1);
    CHECK_OK(hurray_writer_add(w, "a", 1, a.context, a.list));
    CHECK_FAIL(hurray_writer_add(w, "a", 1, a.context, a.list), HURRAY_ERROR_INVALID_ARGUMENT,
               "already added");
    CHECK_FAIL(hurray_writer_add(w, "\xff", 1, a.context, a.list), HURRAY_ERROR_INVALID_ARGUMENT,
               "UTF-8");
    CHECK_FAIL(hurray_writer_add(w, "\xc0\x80", 2, a.context, a.list),
               HURRAY_ERROR_INVALID_ARGUMENT, "UTF-8");
    CHECK_FAIL(hurray_writer_add(w, "b", 1, NULL, a.list), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_OK(hurray_writer_set_metadata(w, "k", 1, "v", 1));
    CHECK_FAIL(hurray_writer_set_metadata(w, "k", 1, "w", 1), HURRAY_ERROR_INVALID_ARGUMENT,
               "already set");
    CHECK_FAIL(hurray_writer_set_metadata(w, "k2", 2, "\xed\xa0\x80", 3),
               HURRAY_ERROR_INVALID_ARGUMENT, "UTF-8");
    /* A descriptor that reaches past its buffers is refused before a byte
     * is written: the writer stays usable. */
    Pair small = plain(8, 8, 1);
    HurrayBuffer *tiny = NULL;
    HurrayBufferList *short_list = NULL;
    CHECK_OK(hurray_buffer_new(16, 64, &tiny));
    CHECK_OK(hurray_buffer_list_new(&short_list));
    CHECK_OK(hurray_buffer_list_push(short_list, &tiny));
    CHECK_STATUS(hurray_writer_add(w, "short", 5, small.context, short_list),
                 HURRAY_ERROR_BUFFER_TOO_SMALL);
    hurray_buffer_list_destroy(&short_list);
    pair_destroy(&small);
    /* Destroying the unfinished writer removes its temporary; the old file
     * is untouched. */
    hurray_writer_destroy(&w);
    CHECK(temp_files_in_dir() == 0);
    struct stat after;
    CHECK(stat(path, &after) == 0);
    CHECK(after.st_size == before.st_size && after.st_ino == before.st_ino);
    HurrayReader *r = NULL;
    CHECK_OK(hurray_reader_open(path, 0, &r));
    uint64_t count;
    CHECK_OK(hurray_reader_count(r, &count));
    CHECK(count == 3);
    hurray_reader_destroy(&r);
    /* A finished writer refuses more. */
    CHECK_OK(hurray_writer_open(path, 0, &w));
    CHECK_OK(hurray_writer_finish(w));
    CHECK_FAIL(hurray_writer_add(w, "a", 1, a.context, a.list), HURRAY_ERROR_INVALID_ARGUMENT,
               "finished");
    CHECK_FAIL(hurray_writer_finish(w), HURRAY_ERROR_INVALID_ARGUMENT, "finished");
    hurray_writer_destroy(&w);
    CHECK_OK(hurray_reader_open(path, 0, &r));
    CHECK_OK(hurray_reader_count(r, &count));
    CHECK(count == 0);
    hurray_reader_destroy(&r);
    pair_destroy(&a);
    /* No directory to write in. */
    CHECK_FAIL(hurray_writer_open(path_in("missing/x.hurray"), 0, &w), HURRAY_ERROR_IO,
               "cannot create");
}

/* ---- bad files ---------------------------------------------------------- */

static uint8_t *slurp(const char *path, uint64_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t)n + 1);
    CHECK(data != NULL);
    CHECK(fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (uint64_t)n;
    return data;
}

static void spit(const char *path, const uint8_t *data, uint64_t len)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(data, 1, (size_t)len, f) == (size_t)len);
    CHECK(fclose(f) == 0);
}

/* Opens path and reads (verifying) every tensor, with either reader; the
 * first non-OK status, or HURRAY_OK. */
static HurrayStatus read_everything(const char *path, uint32_t flags)
{
    HurrayReader *r = NULL;
    HurrayStatus status = hurray_reader_open(path, flags, &r);
    if (status != HURRAY_OK) {
        CHECK(r == NULL);
        CHECK(hurray_last_error_message()[0] != '\0');
        return status;
    }
    uint64_t count = 0;
    CHECK_OK(hurray_reader_count(r, &count));
    for (uint64_t i = 0; i < count && status == HURRAY_OK; i++) {
        Pair p = {0};
        status = hurray_reader_tensor(r, i, &p.context, &p.list);
        if (status == HURRAY_OK) {
            pair_destroy(&p);
        } else {
            CHECK(p.context == NULL && p.list == NULL);
            CHECK(hurray_last_error_message()[0] != '\0');
        }
    }
    hurray_reader_destroy(&r);
    return status;
}

static void test_truncated_and_flipped(void)
{
    const char *good = path_in("good.hurray");
    const char *bad = path_in("bad.hurray");
    write_sample(good, 0);
    uint64_t len;
    uint8_t *bytes = slurp(good, &len);
    CHECK(read_everything(good, 0) == HURRAY_OK);
    CHECK(read_everything(good, HURRAY_READ_NO_MMAP) == HURRAY_OK);
    /* Every truncation is refused. */
    for (uint64_t cut = 0; cut < len; cut += scale) {
        spit(bad, bytes, cut);
        CHECK(read_everything(bad, 0) != HURRAY_OK);
    }
    /* Every single-bit flip is caught: by a checksum, a zero-padding rule,
     * or a header check. Data flips are checksum errors. */
    for (uint64_t at = 0; at < len; at += scale) {
        for (int bit = 0; bit < 8; bit += (scale > 1 ? 3 : 1)) {
            bytes[at] ^= (uint8_t)(1u << bit);
            spit(bad, bytes, len);
            CHECK(read_everything(bad, 0) != HURRAY_OK);
            CHECK(read_everything(bad, HURRAY_READ_NO_MMAP) != HURRAY_OK);
            bytes[at] ^= (uint8_t)(1u << bit);
        }
    }
    /* A flipped data byte of the first tensor: the index still opens, the
     * tensor is a checksum error, and NO_VERIFY hands it out anyway. */
    Pair first = plain(3, 5, 1);
    const HurrayBuffer *first_buf;
    void *first_data;
    uint64_t first_len;
    CHECK_OK(hurray_buffer_list_get(first.list, 0, &first_buf));
    CHECK_OK(hurray_buffer_data(first_buf, &first_data, &first_len));
    const uint8_t *found = memmem(bytes, (size_t)len, first_data, (size_t)first_len);
    CHECK(found != NULL);
    uint64_t data_at = (uint64_t)(found - bytes) + 5;
    CHECK(data_at % 64 == 5);
    pair_destroy(&first);
    bytes[data_at] ^= 1;
    spit(bad, bytes, len);
    HurrayReader *r = NULL;
    Pair p = {0};
    CHECK_OK(hurray_reader_open(bad, 0, &r));
    CHECK_FAIL(hurray_reader_tensor(r, 0, &p.context, &p.list), HURRAY_ERROR_CHECKSUM, "checksum");
    CHECK_FAIL(hurray_reader_verify(r, 0), HURRAY_ERROR_CHECKSUM, "checksum");
    CHECK_OK(hurray_reader_verify(r, 1));
    hurray_reader_destroy(&r);
    CHECK_OK(hurray_reader_open(bad, HURRAY_READ_NO_MMAP, &r));
    CHECK_FAIL(hurray_reader_tensor(r, 0, &p.context, &p.list), HURRAY_ERROR_CHECKSUM, "checksum");
    hurray_reader_destroy(&r);
    CHECK_OK(hurray_reader_open(bad, HURRAY_READ_NO_VERIFY, &r));
    CHECK_OK(hurray_reader_tensor(r, 0, &p.context, &p.list));
    CHECK_FAIL(hurray_reader_verify(r, 0), HURRAY_ERROR_CHECKSUM, "checksum");
    pair_destroy(&p);
    hurray_reader_destroy(&r);
    bytes[data_at] ^= 1;
    /* A flipped index bit: the index checksum, at open. */
    bytes[len - 64 - 8] ^= 4;
    spit(bad, bytes, len);
    CHECK_FAIL(hurray_reader_open(bad, 0, &r), HURRAY_ERROR_CHECKSUM, "index");
    bytes[len - 64 - 8] ^= 4;
    /* Not a file of ours, or missing. */
    spit(bad, (const uint8_t *)"hello", 5);
    CHECK_FAIL(hurray_reader_open(bad, 0, &r), HURRAY_ERROR_CORRUPT, "too short");
    CHECK_FAIL(hurray_reader_open(path_in("absent"), 0, &r), HURRAY_ERROR_IO, "cannot open");
    CHECK_FAIL(hurray_reader_open(dir, 0, &r), HURRAY_ERROR_IO, "not a regular file");
    CHECK_FAIL(hurray_reader_open(good, 0x40, &r), HURRAY_ERROR_INVALID_ARGUMENT, "flags");
    free(bytes);
}

/* ---- frames --------------------------------------------------------------- */

typedef struct Memory {
    uint8_t *data;
    uint64_t len, cap, pos;
    uint64_t max_read; /* hand out at most this many bytes per read */
} Memory;

static int memory_write(void *stream, const void *data, uint64_t len)
{
    Memory *m = stream;
    if (m->len + len > m->cap) {
        uint64_t cap = (m->len + len) * 2;
        uint8_t *p = realloc(m->data, (size_t)cap);
        if (p == NULL) {
            return -1;
        }
        m->data = p;
        m->cap = cap;
    }
    memcpy(m->data + m->len, data, (size_t)len);
    m->len += len;
    return 0;
}

static int memory_read(void *stream, void *data, uint64_t len, uint64_t *out_read)
{
    Memory *m = stream;
    uint64_t left = m->len - m->pos;
    uint64_t n = len < left ? len : left;
    if (m->max_read != 0 && n > m->max_read) {
        n = m->max_read;
    }
    memcpy(data, m->data + m->pos, (size_t)n);
    m->pos += n;
    *out_read = n;
    return 0;
}

static int failing_write(void *stream, const void *data, uint64_t len)
{
    (void)stream, (void)data, (void)len;
    return -1;
}

static int fd_write(void *stream, const void *data, uint64_t len)
{
    int fd = *(int *)stream;
    const uint8_t *p = data;
    while (len > 0) {
        ssize_t n = write(fd, p, (size_t)len);
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (uint64_t)n;
    }
    return 0;
}

static int fd_read(void *stream, void *data, uint64_t len, uint64_t *out_read)
{
    ssize_t n = read(*(int *)stream, data, (size_t)len);
    if (n < 0) {
        return -1;
    }
    *out_read = (uint64_t)n;
    return 0;
}

static HurrayStatus read_all_frames(Memory *m, int *frames)
{
    *frames = 0;
    for (;;) {
        HurrayBuffer *name = NULL;
        Pair p = {0};
        HurrayStatus status = hurray_frame_read(memory_read, m, 0, &name, &p.context, &p.list);
        if (status != HURRAY_OK) {
            CHECK(name == NULL && p.context == NULL && p.list == NULL);
            return status;
        }
        if (p.context == NULL) {
            CHECK(name == NULL && p.list == NULL);
            return HURRAY_OK;
        }
        *frames += 1;
        hurray_buffer_destroy(&name);
        pair_destroy(&p);
    }
}

static void test_frames(void)
{
    Pair a = plain(3, 7, 4), q = affine(8);
    Memory m = {0};
    CHECK_OK(hurray_frame_write(memory_write, &m, "a", 1, a.context, a.list));
    CHECK(m.len % 64 == 0);
    uint64_t first = m.len;
    CHECK_OK(hurray_frame_write(memory_write, &m, "q\xc3\xa9", 3, q.context, q.list));
    CHECK(m.len % 64 == 0);
    CHECK_FAIL(hurray_frame_write(failing_write, NULL, "a", 1, a.context, a.list), HURRAY_ERROR_IO,
               "refused");
    CHECK_FAIL(hurray_frame_write(memory_write, &m, "\x80", 1, a.context, a.list),
               HURRAY_ERROR_INVALID_ARGUMENT, "UTF-8");
    uint64_t whole = m.len;
    /* Read back, one byte per read call at worst. */
    for (uint64_t max_read = 0; max_read < 3; max_read += 1) {
        m.pos = 0;
        m.max_read = max_read;
        Pair got = {0};
        HurrayBuffer *name = NULL;
        CHECK_OK(hurray_frame_read(memory_read, &m, 0, &name, &got.context, &got.list));
        void *nd;
        uint64_t nl;
        CHECK_OK(hurray_buffer_data(name, &nd, &nl));
        CHECK(nl == 1 && memcmp(nd, "a", 1) == 0);
        check_same(&a, &got);
        check_aligned(&got, 64);
        hurray_buffer_destroy(&name);
        pair_destroy(&got);
        CHECK_OK(hurray_frame_read(memory_read, &m, 0, &name, &got.context, &got.list));
        CHECK_OK(hurray_buffer_data(name, &nd, &nl));
        CHECK(nl == 3 && memcmp(nd, "q\xc3\xa9", 3) == 0);
        check_same(&q, &got);
        hurray_buffer_destroy(&name);
        pair_destroy(&got);
        /* A clean end: OK and three NULLs. */
        CHECK_OK(hurray_frame_read(memory_read, &m, 0, &name, &got.context, &got.list));
        CHECK(name == NULL && got.context == NULL && got.list == NULL);
    }
    m.max_read = 0;
    int frames;
    /* Every truncation inside a frame is CORRUPT; a cut between frames is a
     * clean end after the first. */
    for (uint64_t cut = 1; cut < whole; cut += scale) {
        m.len = cut;
        m.pos = 0;
        HurrayStatus status = read_all_frames(&m, &frames);
        if (cut == first) {
            CHECK(status == HURRAY_OK && frames == 1);
        } else {
            CHECK(status == HURRAY_ERROR_CORRUPT);
            CHECK(strstr(hurray_last_error_message(), "frame") != NULL);
        }
    }
    m.len = whole;
    /* Every bit flip is refused (checksums, padding, header rules). */
    for (uint64_t at = 0; at < whole; at += scale) {
        m.data[at] ^= 0x10;
        m.pos = 0;
        CHECK(read_all_frames(&m, &frames) != HURRAY_OK);
        m.data[at] ^= 0x10;
    }
    /* A huge claimed name, with a correct header checksum, is refused
     * before anything is allocated. */
    m.pos = 0;
    uint8_t saved[48];
    memcpy(saved, m.data, 48);
    m.data[16] = 0xff, m.data[17] = 0xff, m.data[18] = 0xff, m.data[19] = 0x7f;
    CHECK_FAIL(read_all_frames(&m, &frames), HURRAY_ERROR_CORRUPT, "name length");
    memcpy(m.data, saved, 48);
    m.pos = 0;
    CHECK(read_all_frames(&m, &frames) == HURRAY_OK && frames == 2);
    free(m.data);

    /* A header that claims a 32 GiB buffer, correctly checksummed, then
     * nothing: a truncated frame, refused without committing 32 GiB. */
    uint8_t claim[56] = {0};
    memcpy(claim, "HRYF", 4);
    claim[4] = 1;
    claim[6] = 6;
    uint64_t huge = (uint64_t)1 << 35, frame_len = 64 + huge + 64;
    for (int i = 0; i < 8; i++) {
        claim[8 + i] = (uint8_t)(frame_len >> (8 * i));
        claim[48 + i] = (uint8_t)(huge >> (8 * i));
    }
    claim[24] = 1; /* one buffer */
    uint8_t covered[40];
    memcpy(covered, claim, 32);
    memcpy(covered + 32, claim + 48, 8);
    uint64_t header_sum;
    CHECK_OK(hurray_io_checksum(covered, sizeof covered, &header_sum));
    for (int i = 0; i < 8; i++) {
        claim[32 + i] = (uint8_t)(header_sum >> (8 * i));
    }
    Memory short_stream = {.data = claim, .len = sizeof claim, .cap = sizeof claim};
    CHECK_FAIL(read_all_frames(&short_stream, &frames), HURRAY_ERROR_CORRUPT, "ends inside");

    /* Over a real pipe, one frame after the other. */
    int fds[2];
    CHECK(pipe(fds) == 0);
    CHECK_OK(hurray_frame_write(fd_write, &fds[1], "a", 1, a.context, a.list));
    CHECK_OK(hurray_frame_write(fd_write, &fds[1], "q", 1, q.context, q.list));
    close(fds[1]);
    HurrayBuffer *name = NULL;
    Pair got = {0};
    CHECK_OK(hurray_frame_read(fd_read, &fds[0], 0, &name, &got.context, &got.list));
    check_same(&a, &got);
    hurray_buffer_destroy(&name);
    pair_destroy(&got);
    CHECK_OK(hurray_frame_read(fd_read, &fds[0], 0, &name, &got.context, &got.list));
    check_same(&q, &got);
    hurray_buffer_destroy(&name);
    pair_destroy(&got);
    CHECK_OK(hurray_frame_read(fd_read, &fds[0], 0, &name, &got.context, &got.list));
    CHECK(got.context == NULL);
    close(fds[0]);
    pair_destroy(&a);
    pair_destroy(&q);
}

/* The format's checksum is xxh3-64 with seed 0 (known answers), and every
 * entry point refuses NULL where it needs a pointer. */
static void test_checksum_and_null_arguments(void)
{
    uint64_t sum = 0;
    CHECK_OK(hurray_io_checksum(NULL, 0, &sum));
    CHECK(sum == 0x2D06800538D394C2ull);
    CHECK_OK(hurray_io_checksum("a", 1, &sum));
    CHECK(sum == 0xE6C632B61E964E1Full);
    /* Lengths past 240 bytes take xxh3's vector loops, which run as AVX2 on a
     * CPU that has it: the answers, computed with the SSE2 build, must not
     * change. The bytes come from a fixed LCG. */
    static const struct {
        size_t len;
        uint64_t sum;
    } long_answers[] = {
        {129, 0x55964EEC39625032ull},   {240, 0x977B659BDC81FDB1ull},
        {241, 0x2CB1ED4A30C8BDEDull},   {1000, 0x00187EF5AD20CB35ull},
        {1024, 0x5EC111A1E5A293AEull},  {4096, 0xA76570548864595Eull},
        {65536, 0xD062F29C26DA8CF9ull}, {(1u << 20) + 13, 0x6A04B7246E61D533ull},
    };
    size_t lcg_len = (1u << 20) + 13;
    unsigned char *lcg = malloc(lcg_len);
    CHECK(lcg != NULL);
    uint64_t x = 1;
    for (size_t i = 0; lcg != NULL && i < lcg_len; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        lcg[i] = (unsigned char)(x >> 56);
    }
    for (size_t i = 0; lcg != NULL && i < sizeof long_answers / sizeof long_answers[0]; i++) {
        CHECK_OK(hurray_io_checksum(lcg, long_answers[i].len, &sum));
        CHECK(sum == long_answers[i].sum);
    }
    free(lcg);
    CHECK_FAIL(hurray_io_checksum(NULL, 1, &sum), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_io_checksum("a", 1, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");

    const char *path = path_in("nulls.hurray");
    write_sample(path, 0);
    HurrayReader *r = NULL;
    CHECK_FAIL(hurray_reader_open(path, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_OK(hurray_reader_open(path, 0, &r));
    uint64_t n;
    const char *s;
    Pair p = {0};
    CHECK_FAIL(hurray_reader_count(NULL, &n), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_count(r, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_name(r, 0, NULL, &n), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_find(r, NULL, 3, &n), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_tensor(r, 0, NULL, &p.list), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_verify(NULL, 0), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_verify(r, 9), HURRAY_ERROR_OUT_OF_RANGE, "out of range");
    CHECK_FAIL(hurray_reader_metadata_count(r, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_reader_metadata_get(r, 0, &s, &n, NULL, &n), HURRAY_ERROR_NULL_ARGUMENT,
               "NULL");
    hurray_reader_destroy(&r);
    hurray_reader_destroy(&r);
    hurray_reader_destroy(NULL);
    HurrayWriter *w = NULL;
    CHECK_FAIL(hurray_writer_add(NULL, "a", 1, NULL, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_writer_finish(NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_writer_set_metadata(NULL, "k", 1, "v", 1), HURRAY_ERROR_NULL_ARGUMENT,
               "NULL");
    hurray_writer_destroy(&w);
    hurray_writer_destroy(NULL);
    HurrayBuffer *name = NULL;
    CHECK_FAIL(hurray_frame_read(NULL, NULL, 0, &name, &p.context, &p.list),
               HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_frame_read(memory_read, NULL, 0x100, &name, &p.context, &p.list),
               HURRAY_ERROR_INVALID_ARGUMENT, "flags");
    CHECK_FAIL(hurray_frame_write(NULL, NULL, "", 0, NULL, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "NULL");
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_io DIR\n");
        return 2;
    }
    dir = argv[1];
    const char *env = getenv("HURRAY_TEST_SCALE");
    if (env != NULL && atol(env) > 0) {
        scale = (unsigned long)atol(env);
    }
    CHECK(hurray_io_version() == HURRAY_IO_VERSION);
    CHECK(hurray_c_abi_version() == 5); /* ADR-059; hurray-io's own version is apart */
    test_round_trip(HURRAY_READ_DEFAULT, HURRAY_WRITE_DEFAULT);
    test_round_trip(HURRAY_READ_NO_MMAP, HURRAY_WRITE_DEFAULT);
    test_round_trip(HURRAY_READ_NO_VERIFY, HURRAY_WRITE_PAGE_ALIGN);
    test_round_trip(HURRAY_READ_NO_MMAP | HURRAY_READ_NO_VERIFY, HURRAY_WRITE_PAGE_ALIGN);
    test_replace_while_mapped();
    test_replaced_file_released_at_destroy();
    test_writer_refusals();
    test_truncated_and_flipped();
    test_frames();
    test_checksum_and_null_arguments();
    printf("test_io: %lu checks passed\n", (unsigned long)atomic_load(&checks_passed));
    return 0;
}
