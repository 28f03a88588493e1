/*
 * io_reader.c -- HurrayReader: a hurray-io file opened for random access
 * (docs/impl/io-format.md, "Files").
 *
 * Opening reads the fixed-size trailer and the index it points to, and
 * checks them whole: O(1) in the file's size, O(n) in its tensors. Frames
 * are parsed only when asked for, so any tensor is reachable without reading
 * the others. A mapped file is shared through a reference count: the
 * reader, every context and every buffer made from it each hold one, so
 * tensors outlive the reader and the mapping outlives them all.
 */
#define _GNU_SOURCE
#include "io_format.h"
#include "io_path.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct Mapping {
    atomic_uint_fast64_t refs;
    void *base;
    size_t len;
} Mapping;

typedef struct Entry {
    uint64_t offset;
    uint64_t frame_len;
    uint64_t checksum;
    const uint8_t *name; /* into the reader's copy of the index */
    uint32_t name_len;
} Entry;

typedef struct Meta {
    const uint8_t *key;
    const uint8_t *value;
    uint32_t key_len;
    uint32_t value_len;
} Meta;

struct HurrayReader {
    int fd;
    uint32_t flags;
    uint32_t align_log2;
    uint64_t file_len;
    Mapping *map; /* NULL with HURRAY_READ_NO_MMAP */
    uint8_t *index;
    uint64_t count;
    Entry *entries;
    uint64_t meta_count;
    Meta *meta;
    HurrayNameSet *names;
};

static void mapping_unref(void *p)
{
    Mapping *m = p;
    if (atomic_fetch_sub(&m->refs, 1) == 1) {
        munmap(m->base, m->len);
        free(m);
    }
}

static void mapping_ref(Mapping *m)
{
    atomic_fetch_add(&m->refs, 1);
}

static HurrayStatus read_at(int fd, void *data, uint64_t len, uint64_t offset, const char *what)
{
    uint8_t *p = data;
    while (len > 0) {
        size_t n = len > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)len;
        ssize_t got = pread(fd, p, n, (off_t)offset);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            int err = errno;
            return hurray__fail_os(HURRAY_ERROR_IO, err, "reader: cannot read the %s: %s", what,
                                   strerror(err));
        }
        if (got == 0) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "reader: the file ends inside the %s "
                                "(truncated)",
                                what);
        }
        p += got;
        len -= (uint64_t)got;
        offset += (uint64_t)got;
    }
    return HURRAY_OK;
}

/* ---- open: header, trailer, index -------------------------------------- */

static HurrayStatus check_header(HurrayReader *r, const uint8_t *h)
{
    if (memcmp(h, HURRAY__FILE_MAGIC, 8) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: not a hurray-io file (bad magic)");
    }
    uint16_t version = hurray__le16(h + 8);
    if (version != HURRAY__IO_FORMAT_VERSION) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "reader: format version %u, this build reads version %u", version,
                            HURRAY__IO_FORMAT_VERSION);
    }
    r->align_log2 = h[10];
    if (r->align_log2 < HURRAY__ALIGN_LOG2_MIN || r->align_log2 > HURRAY__ALIGN_LOG2_MAX) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: alignment 2^%u is outside 2^%u .. 2^%u",
                            r->align_log2, HURRAY__ALIGN_LOG2_MIN, HURRAY__ALIGN_LOG2_MAX);
    }
    if (h[11] != 0 || !hurray__all_zero(h + 12, HURRAY__FILE_HEADER_LEN - 12)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: reserved header bytes are not zero");
    }
    return HURRAY_OK;
}

static HurrayStatus check_trailer(HurrayReader *r, const uint8_t *t, uint64_t *index_offset,
                                  uint64_t *index_len, uint64_t *index_checksum)
{
    if (memcmp(t + 56, HURRAY__TRAILER_MAGIC, 8) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: no trailer at the end of the file "
                                                  "(truncated, or not a finished hurray-io file)");
    }
    uint64_t want = hurray__hash(t, 48);
    if (!hurray__checksum_ok(hurray__le64(t + 48), want)) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM, "reader: the trailer's checksum does not "
                                                   "match its bytes");
    }
    if (hurray__le16(t + 32) != HURRAY__IO_FORMAT_VERSION) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "reader: trailer format version %u, this "
                            "build reads version %u",
                            hurray__le16(t + 32), HURRAY__IO_FORMAT_VERSION);
    }
    if (t[34] != r->align_log2 || t[35] != 0 || hurray__le32(t + 36) != 0 ||
        hurray__le64(t + 40) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: the trailer disagrees with the header");
    }
    if (hurray__le64(t + 24) != r->file_len) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the trailer says the file has %llu "
                            "bytes, it has %llu",
                            (unsigned long long)hurray__le64(t + 24),
                            (unsigned long long)r->file_len);
    }
    *index_offset = hurray__le64(t);
    *index_len = hurray__le64(t + 8);
    *index_checksum = hurray__le64(t + 16);
    uint64_t first;
    hurray__align_up(HURRAY__FILE_HEADER_LEN, r->align_log2, &first);
    uint64_t end;
    if (*index_len < HURRAY__INDEX_HEADER_LEN || *index_len % 8 != 0 ||
        *index_len > HURRAY__MAX_INDEX_LEN || *index_offset < first ||
        (*index_offset & (((uint64_t)1 << r->align_log2) - 1)) != 0 ||
        __builtin_add_overflow(*index_offset, *index_len, &end) ||
        end != r->file_len - HURRAY__TRAILER_LEN) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the index (offset %llu, %llu bytes) "
                            "does not lie between the frames and the trailer",
                            (unsigned long long)*index_offset, (unsigned long long)*index_len);
    }
    return HURRAY_OK;
}

/* A length-prefixed string of the index, then its padding to 8. */
static HurrayStatus index_string(const uint8_t *ix, uint64_t len, uint64_t *pos, uint32_t n,
                                 const uint8_t **out, const char *what)
{
    if (n > len - *pos) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: a %s runs past the index", what);
    }
    *out = ix + *pos;
    *pos += n;
    if (!hurray__utf8_valid(*out, n)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: a %s is not UTF-8", what);
    }
    return HURRAY_OK;
}

static HurrayStatus pad8(const uint8_t *ix, uint64_t len, uint64_t *pos)
{
    uint64_t next = (*pos + 7) & ~(uint64_t)7;
    if (next > len || !hurray__all_zero(ix + *pos, next - *pos)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: index padding is missing or not zero");
    }
    *pos = next;
    return HURRAY_OK;
}

static HurrayStatus parse_index(HurrayReader *r, uint64_t index_offset, uint64_t len)
{
    const uint8_t *ix = r->index;
    if (memcmp(ix, HURRAY__INDEX_MAGIC, 4) == 0 &&
        hurray__le16(ix + 4) != HURRAY__IO_FORMAT_VERSION) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "reader: index format version %u, this build "
                            "reads version %u",
                            hurray__le16(ix + 4), HURRAY__IO_FORMAT_VERSION);
    }
    if (memcmp(ix, HURRAY__INDEX_MAGIC, 4) != 0 || hurray__le16(ix + 6) != 0 ||
        hurray__le64(ix + 24) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: bad index header");
    }
    uint64_t count = hurray__le64(ix + 8);
    uint64_t meta_count = hurray__le64(ix + 16);
    /* Every entry takes at least 32 bytes and every metadata pair 8: a
     * count the index cannot hold is refused before anything is allocated. */
    uint64_t room = (len - HURRAY__INDEX_HEADER_LEN);
    if (count > room / 32 || meta_count > room / 8) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the index claims %llu tensors and %llu "
                            "metadata pairs, more than its %llu bytes can hold",
                            (unsigned long long)count, (unsigned long long)meta_count,
                            (unsigned long long)len);
    }
    r->entries = calloc(count == 0 ? 1 : (size_t)count, sizeof *r->entries);
    r->meta = calloc(meta_count == 0 ? 1 : (size_t)meta_count, sizeof *r->meta);
    if (r->entries == NULL || r->meta == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot allocate the index");
    }
    HURRAY__TRY(hurray__name_set_new(&r->names));
    uint64_t pos = HURRAY__INDEX_HEADER_LEN;
    uint64_t expected;
    hurray__align_up(HURRAY__FILE_HEADER_LEN, r->align_log2, &expected);
    uint64_t align_mask = ((uint64_t)1 << r->align_log2) - 1;
    uint64_t min_frame;
    hurray__align_up(HURRAY__FRAME_HEADER_LEN + HURRAY__FRAME_END_LEN, r->align_log2, &min_frame);
    for (uint64_t i = 0; i < count; i++) {
        if (len - pos < 32) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "reader: tensor entry %llu runs past the "
                                "index",
                                (unsigned long long)i);
        }
        Entry *e = &r->entries[i];
        e->offset = hurray__le64(ix + pos);
        e->frame_len = hurray__le64(ix + pos + 8);
        e->checksum = hurray__le64(ix + pos + 16);
        e->name_len = hurray__le32(ix + pos + 24);
        if (hurray__le32(ix + pos + 28) != 0) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "reader: reserved bytes of tensor entry "
                                "%llu are not zero",
                                (unsigned long long)i);
        }
        pos += 32;
        /* Frames tile the space between the header and the index exactly,
         * in index order: no gaps, no overlaps, nothing past the index. */
        if (e->offset != expected || e->frame_len < min_frame || (e->frame_len & align_mask) != 0 ||
            e->frame_len > index_offset - expected) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "reader: tensor entry %llu (offset %llu, "
                                "%llu bytes) does not follow the previous frame inside the file",
                                (unsigned long long)i, (unsigned long long)e->offset,
                                (unsigned long long)e->frame_len);
        }
        expected += e->frame_len;
        if (e->name_len > HURRAY__MAX_NAME_LEN) {
            return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: name of tensor %llu is too long",
                                (unsigned long long)i);
        }
        HURRAY__TRY(index_string(ix, len, &pos, e->name_len, &e->name, "tensor name"));
        HURRAY__TRY(pad8(ix, len, &pos));
        uint64_t existing;
        int added = hurray__name_set_add(r->names, e->name, e->name_len, i, &existing);
        if (added < 0) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot index the names");
        }
        if (added == 0) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "reader: tensors %llu and %llu have the "
                                "same name '%.*s'",
                                (unsigned long long)existing, (unsigned long long)i,
                                (int)(e->name_len > 200 ? 200 : e->name_len),
                                (const char *)e->name);
        }
    }
    if (expected != index_offset) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the frames end at %llu but the index "
                            "starts at %llu",
                            (unsigned long long)expected, (unsigned long long)index_offset);
    }
    HurrayNameSet *keys = NULL;
    HURRAY__TRY(hurray__name_set_new(&keys));
    HurrayStatus status = HURRAY_OK;
    for (uint64_t i = 0; status == HURRAY_OK && i < meta_count; i++) {
        Meta *m = &r->meta[i];
        if (len - pos < 8) {
            status = hurray__fail(HURRAY_ERROR_CORRUPT,
                                  "reader: metadata pair %llu runs past "
                                  "the index",
                                  (unsigned long long)i);
            break;
        }
        m->key_len = hurray__le32(ix + pos);
        m->value_len = hurray__le32(ix + pos + 4);
        pos += 8;
        status = index_string(ix, len, &pos, m->key_len, &m->key, "metadata key");
        if (status == HURRAY_OK)
            status = index_string(ix, len, &pos, m->value_len, &m->value, "metadata value");
        if (status == HURRAY_OK) status = pad8(ix, len, &pos);
        uint64_t existing;
        if (status == HURRAY_OK) {
            int added = hurray__name_set_add(keys, m->key, m->key_len, i, &existing);
            if (added < 0) {
                status = hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot index the keys");
            } else if (added == 0) {
                status = hurray__fail(HURRAY_ERROR_CORRUPT,
                                      "reader: metadata key '%.*s' appears "
                                      "twice",
                                      (int)(m->key_len > 200 ? 200 : m->key_len),
                                      (const char *)m->key);
            }
        }
    }
    hurray__name_set_destroy(&keys);
    HURRAY__TRY(status);
    if (pos != len) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: %llu unexplained bytes at the end of "
                            "the index",
                            (unsigned long long)(len - pos));
    }
    r->count = count;
    r->meta_count = meta_count;
    return HURRAY_OK;
}

static HurrayStatus open_reader(HurrayReader *r, const char *path)
{
    /* The path policy (io_path.c): a regular file, a FIFO refused without
     * blocking. */
    HURRAY__TRY(hurray__path_open_read("hurray_reader_open", path, &r->fd, &r->file_len));
    if (r->file_len < HURRAY__FILE_HEADER_LEN + HURRAY__INDEX_HEADER_LEN + HURRAY__TRAILER_LEN) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: '%s' is %llu bytes, too short for a "
                            "hurray-io file (truncated?)",
                            path, (unsigned long long)r->file_len);
    }
    uint8_t header[HURRAY__FILE_HEADER_LEN];
    uint8_t trailer[HURRAY__TRAILER_LEN];
    HURRAY__TRY(read_at(r->fd, header, sizeof header, 0, "file header"));
    HURRAY__TRY(check_header(r, header));
    HURRAY__TRY(read_at(r->fd, trailer, sizeof trailer, r->file_len - HURRAY__TRAILER_LEN,
                        "trailer"));
    uint64_t index_offset = 0, index_len = 0, index_checksum = 0;
    HURRAY__TRY(check_trailer(r, trailer, &index_offset, &index_len, &index_checksum));
    /* The header's padding, up to the first frame, must be zero. */
    uint64_t first;
    hurray__align_up(HURRAY__FILE_HEADER_LEN, r->align_log2, &first);
    if (first > HURRAY__FILE_HEADER_LEN) {
        uint8_t *pad = malloc((size_t)(first - HURRAY__FILE_HEADER_LEN));
        if (pad == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot allocate");
        }
        HurrayStatus status = read_at(r->fd, pad, first - HURRAY__FILE_HEADER_LEN,
                                      HURRAY__FILE_HEADER_LEN, "header padding");
        if (status == HURRAY_OK && !hurray__all_zero(pad, first - HURRAY__FILE_HEADER_LEN)) {
            status = hurray__fail(HURRAY_ERROR_CORRUPT, "reader: header padding is not zero");
        }
        free(pad);
        HURRAY__TRY(status);
    }
    r->index = malloc((size_t)index_len);
    if (r->index == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot allocate %llu bytes of index",
                            (unsigned long long)index_len);
    }
    HURRAY__TRY(read_at(r->fd, r->index, index_len, index_offset, "index"));
    if (!hurray__checksum_ok(index_checksum, hurray__hash(r->index, (size_t)index_len))) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM, "reader: the index's checksum does not match "
                                                   "its bytes");
    }
    HURRAY__TRY(parse_index(r, index_offset, index_len));
    if (!(r->flags & HURRAY_READ_NO_MMAP)) {
        if (r->file_len > SIZE_MAX) {
            return hurray__fail(HURRAY_ERROR_OVERFLOW, "reader: the file is too large to map");
        }
        /* Private and writable: pages are shared with the page cache until
         * someone writes one, and a write (a consumer scaling weights in
         * place, say) gets a private copy and never reaches the file. */
        void *base = mmap(NULL, (size_t)r->file_len, PROT_READ | PROT_WRITE, MAP_PRIVATE, r->fd, 0);
        if (base == MAP_FAILED) {
            return hurray__fail(HURRAY_ERROR_IO,
                                "hurray_reader_open: cannot map '%s': %s "
                                "(HURRAY_READ_NO_MMAP reads without mapping)",
                                path, strerror(errno));
        }
#ifdef MADV_HUGEPAGE
        /* Page faults then map the page cache's 2 MiB folios whole (one
         * entry for 512 pages), and a fault on a file not yet in the cache
         * reads 2 MiB folios ahead: a 4 MiB tensor costs a few faults, warm
         * or cold, instead of a thousand (ADR-058). Only advice: where
         * transparent huge pages are off, nothing changes. */
        (void)madvise(base, (size_t)r->file_len, MADV_HUGEPAGE);
#endif
        r->map = malloc(sizeof *r->map);
        if (r->map == NULL) {
            munmap(base, (size_t)r->file_len);
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot allocate");
        }
        atomic_init(&r->map->refs, 1);
        r->map->base = base;
        r->map->len = (size_t)r->file_len;
    }
    return HURRAY_OK;
}

HurrayStatus hurray_reader_open(const char *path, uint32_t flags, HurrayReader **out)
{
    if (path == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_reader_open: path or out is NULL");
    }
    if ((flags & ~(HURRAY_READ_NO_VERIFY | HURRAY_READ_NO_MMAP)) != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "hurray_reader_open: unknown flags %#x",
                            flags);
    }
    HurrayReader *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_reader_open: cannot allocate");
    }
    r->fd = -1;
    r->flags = flags;
    HurrayStatus status = open_reader(r, path);
    if (status != HURRAY_OK) {
        hurray_reader_destroy(&r);
        return status;
    }
    *out = r;
    return HURRAY_OK;
}

void hurray_reader_destroy(HurrayReader **reader)
{
    if (reader == NULL || *reader == NULL) {
        return;
    }
    HurrayReader *r = *reader;
    *reader = NULL;
    if (r->map != NULL) {
        mapping_unref(r->map);
    }
    if (r->fd >= 0) {
        close(r->fd);
    }
    hurray__name_set_destroy(&r->names);
    free(r->entries);
    free(r->meta);
    free(r->index);
    free(r);
}

/* ---- the index ---------------------------------------------------------- */

HurrayStatus hurray_reader_count(const HurrayReader *reader, uint64_t *out)
{
    if (reader == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_reader_count: reader or out is NULL");
    }
    *out = reader->count;
    return HURRAY_OK;
}

static HurrayStatus entry_of(const char *fn, const HurrayReader *r, uint64_t index)
{
    if (r == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: reader is NULL", fn);
    }
    if (index >= r->count) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "%s: index %llu is out of range for %llu "
                            "tensors",
                            fn, (unsigned long long)index, (unsigned long long)r->count);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_reader_name(const HurrayReader *reader, uint64_t index, const char **out_name,
                                uint64_t *out_len)
{
    HURRAY__TRY(entry_of("hurray_reader_name", reader, index));
    if (out_name == NULL || out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_reader_name: an out is NULL");
    }
    *out_name = (const char *)reader->entries[index].name;
    *out_len = reader->entries[index].name_len;
    return HURRAY_OK;
}

HurrayStatus hurray_reader_find(const HurrayReader *reader, const char *name, uint64_t name_len,
                                uint64_t *out_index)
{
    if (reader == NULL || out_index == NULL || (name == NULL && name_len != 0)) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_reader_find: an argument is NULL");
    }
    if (!hurray__name_set_find(reader->names, (const uint8_t *)name, name_len, out_index)) {
        return hurray__fail(HURRAY_ERROR_NOT_FOUND, "hurray_reader_find: no tensor named '%.*s'",
                            (int)(name_len > 200 ? 200 : name_len), name == NULL ? "" : name);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_reader_metadata_count(const HurrayReader *reader, uint64_t *out)
{
    if (reader == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_reader_metadata_count: reader or out is NULL");
    }
    *out = reader->meta_count;
    return HURRAY_OK;
}

HurrayStatus hurray_reader_metadata_get(const HurrayReader *reader, uint64_t index,
                                        const char **out_key, uint64_t *out_key_len,
                                        const char **out_value, uint64_t *out_value_len)
{
    if (reader == NULL || out_key == NULL || out_key_len == NULL || out_value == NULL ||
        out_value_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_reader_metadata_get: an argument is NULL");
    }
    if (index >= reader->meta_count) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_reader_metadata_get: index %llu "
                            "is out of range for %llu pairs",
                            (unsigned long long)index, (unsigned long long)reader->meta_count);
    }
    const Meta *m = &reader->meta[index];
    *out_key = (const char *)m->key;
    *out_key_len = m->key_len;
    *out_value = (const char *)m->value;
    *out_value_len = m->value_len;
    return HURRAY_OK;
}

/* ---- tensors ------------------------------------------------------------ */

/* Zero bytes at [offset, offset + len) of the file, read with pread. */
static HurrayStatus check_zero_at(const HurrayReader *r, uint64_t offset, uint64_t len,
                                  const char *what)
{
    uint8_t chunk[4096];
    while (len > 0) {
        uint64_t n = len < sizeof chunk ? len : sizeof chunk;
        HURRAY__TRY(read_at(r->fd, chunk, n, offset, what));
        if (!hurray__all_zero(chunk, n)) {
            return hurray__fail(HURRAY_ERROR_CORRUPT, "reader: %s at %llu is not zero", what,
                                (unsigned long long)offset);
        }
        offset += n;
        len -= n;
    }
    return HURRAY_OK;
}

/* The frame of entry e, with everything outside its buffers checked:
 * header, layout, name, padding, stored checksum. These parts are read with
 * pread, not through the mapping: a small read costs less than the page
 * faults (and the unmapping of faulted pages), and taking one tensor then
 * maps no page of it until its memory is used. *prefix gets the frame's
 * first data_offset bytes (header to descriptor padding), in the caller's
 * stack buffer when they fit, else in memory to free. */
static HurrayStatus map_frame(const HurrayReader *r, const Entry *e, HurrayFrameLayout *l,
                              uint8_t *stack, size_t stack_len, uint8_t **prefix)
{
    uint64_t first = e->frame_len < stack_len ? e->frame_len : stack_len;
    HURRAY__TRY(read_at(r->fd, stack, first, e->offset, "frame"));
    *prefix = stack;
    HURRAY__TRY(hurray__frame_header_decode(stack, l));
    if (l->frame_len != e->frame_len || l->align_log2 != r->align_log2) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the frame at %llu disagrees with the "
                            "index about its length or alignment",
                            (unsigned long long)e->offset);
    }
    if (HURRAY__FRAME_HEADER_LEN + 8 * (uint64_t)l->buffer_count > first) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the frame at %llu is shorter than its "
                            "header",
                            (unsigned long long)e->offset);
    }
    HURRAY__TRY(hurray__frame_layout_finish(stack, stack + HURRAY__FRAME_HEADER_LEN, l));
    if (l->data_offset > first) {
        /* A long name or descriptor: the prefix, whole, on the heap. */
        uint8_t *heap = malloc((size_t)l->data_offset);
        if (heap == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY, "reader: cannot allocate");
        }
        *prefix = heap;
        HURRAY__TRY(read_at(r->fd, heap, l->data_offset, e->offset, "frame"));
    }
    const uint8_t *p = *prefix;
    if (l->name_len != e->name_len || memcmp(p + l->name_offset, e->name, e->name_len) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the frame at %llu carries another name "
                            "than the index",
                            (unsigned long long)e->offset);
    }
    uint64_t desc_end = l->descriptor_offset + l->descriptor_len;
    if (!hurray__all_zero(p + desc_end, l->data_offset - desc_end)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: padding in the frame at %llu is not "
                            "zero",
                            (unsigned long long)e->offset);
    }
    for (uint32_t i = 0; i < l->buffer_count; i++) {
        uint64_t end = l->buffer_offset[i] + l->buffer_len[i];
        uint64_t next = i + 1 < l->buffer_count ? l->buffer_offset[i + 1] : l->end_offset;
        HURRAY__TRY(check_zero_at(r, e->offset + end, next - end, "padding after a buffer"));
    }
    uint8_t end_block[8];
    HURRAY__TRY(read_at(r->fd, end_block, 8, e->offset + l->end_offset, "frame checksum"));
    HURRAY__TRY(check_zero_at(r, e->offset + l->end_offset + 8, l->frame_len - l->end_offset - 8,
                              "padding after the frame checksum"));
    if (!hurray__checksum_ok(e->checksum, hurray__le64(end_block))) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM,
                            "reader: the frame at %llu and the index "
                            "disagree about its checksum",
                            (unsigned long long)e->offset);
    }
    return HURRAY_OK;
}

/* The mapping is touched only where the file still holds its bytes: a file
 * cut short under a mapping (truncated, or rewritten by open(path, "wb") or
 * cp) makes a touch of the lost pages a SIGBUS, which would end the process
 * inside Hurray's own code. So the size is checked first, and a frame the
 * file no longer holds is CORRUPT (ADR-057). What the caller does with the
 * memory afterwards is the caller's; a file that shrinks between a check
 * and the end of the hashing step after it can still fault. */
static HurrayStatus still_held(const HurrayReader *r, const Entry *e)
{
    struct stat st;
    if (fstat(r->fd, &st) != 0) {
        int err = errno;
        return hurray__fail_os(HURRAY_ERROR_IO, err, "reader: cannot stat the file: %s",
                               strerror(err));
    }
    if ((uint64_t)st.st_size < e->offset + e->frame_len) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "reader: the file shrank to %llu bytes after it was opened (truncated "
                            "or rewritten in place); tensor '%.*s' needs its bytes up to %llu",
                            (unsigned long long)st.st_size,
                            (int)(e->name_len > 200 ? 200 : e->name_len), (const char *)e->name,
                            (unsigned long long)(e->offset + e->frame_len));
    }
    return HURRAY_OK;
}

/* Hashes the frame through the mapping a mebibyte at a time, the file's size
 * checked before each: a file that shrinks while a large tensor is hashed
 * is found at the next step, and the window in which a truncation can still
 * fault is one step's hash (tens of microseconds), not the whole tensor's. */
#define VERIFY_STEP ((uint64_t)1 << 20)

static HurrayStatus verify_mapped(const HurrayReader *r, const Entry *e, const HurrayFrameLayout *l)
{
    const uint8_t *p = (const uint8_t *)r->map->base + e->offset;
    uint64_t got;
    if (l->end_offset <= VERIFY_STEP) {
        HURRAY__TRY(still_held(r, e));
        got = hurray__hash(p, (size_t)l->end_offset);
    } else {
        HurrayHasher *h = NULL;
        HURRAY__TRY(hurray__hasher_new(&h));
        HurrayStatus status = HURRAY_OK;
        for (uint64_t at = 0; at < l->end_offset && status == HURRAY_OK; at += VERIFY_STEP) {
            status = still_held(r, e);
            uint64_t n = l->end_offset - at < VERIFY_STEP ? l->end_offset - at : VERIFY_STEP;
            if (status == HURRAY_OK) hurray__hasher_update(h, p + at, (size_t)n);
        }
        got = hurray__hasher_digest(h);
        hurray__hasher_destroy(&h);
        HURRAY__TRY(status);
    }
    if (!hurray__checksum_ok(e->checksum, got)) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM,
                            "reader: tensor '%.*s' does not match its "
                            "checksum (stored %016llx, computed %016llx)",
                            (int)(e->name_len > 200 ? 200 : e->name_len), (const char *)e->name,
                            (unsigned long long)e->checksum, (unsigned long long)got);
    }
    return HURRAY_OK;
}

/* A read function over pread, confined to one frame. */
typedef struct FrameCursor {
    int fd;
    uint64_t pos;
    uint64_t end;
} FrameCursor;

static int cursor_read(void *stream, void *data, uint64_t len, uint64_t *out_read)
{
    FrameCursor *c = stream;
    uint64_t left = c->end - c->pos;
    if (len > left) {
        len = left;
    }
    if (len == 0) {
        *out_read = 0;
        return 0;
    }
    for (;;) {
        ssize_t got = pread(c->fd, data, len > ((size_t)1 << 30) ? ((size_t)1 << 30) : (size_t)len,
                            (off_t)c->pos);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            return -1;
        }
        c->pos += (uint64_t)got;
        *out_read = (uint64_t)got;
        return 0;
    }
}

static HurrayStatus read_frame_at(const HurrayReader *r, const Entry *e, int verify,
                                  HurrayTensorContext **out_context, HurrayBufferList **out_list)
{
    FrameCursor c = {.fd = r->fd, .pos = e->offset, .end = e->offset + e->frame_len};
    HurrayBuffer *name = NULL;
    uint64_t checksum = 0, consumed = 0;
    HURRAY__TRY(hurray__frame_read(cursor_read, &c, verify, r->align_log2, &name, out_context,
                                   out_list, &checksum, &consumed));
    HurrayStatus status = HURRAY_OK;
    void *name_data = NULL;
    uint64_t name_len = 0;
    if (name != NULL) {
        hurray_buffer_data(name, &name_data, &name_len);
    }
    if (*out_context == NULL) {
        status = hurray__fail(HURRAY_ERROR_CORRUPT, "reader: the frame at %llu is empty",
                              (unsigned long long)e->offset);
    } else if (consumed != e->frame_len) {
        status = hurray__fail(HURRAY_ERROR_CORRUPT,
                              "reader: the frame at %llu disagrees with the "
                              "index about its length",
                              (unsigned long long)e->offset);
    } else if (name_len != e->name_len || memcmp(name_data, e->name, e->name_len) != 0) {
        status = hurray__fail(HURRAY_ERROR_CORRUPT,
                              "reader: the frame at %llu carries another "
                              "name than the index",
                              (unsigned long long)e->offset);
    } else if (!hurray__checksum_ok(e->checksum, checksum)) {
        status = hurray__fail(HURRAY_ERROR_CHECKSUM,
                              "reader: the frame at %llu and the index "
                              "disagree about its checksum",
                              (unsigned long long)e->offset);
    }
    hurray_buffer_destroy(&name);
    if (status != HURRAY_OK) {
        hurray_tensor_context_destroy(out_context);
        hurray_buffer_list_destroy(out_list);
    }
    return status;
}

static HurrayStatus mapped_pair(const HurrayReader *r, const Entry *e, const HurrayFrameLayout *l,
                                const uint8_t *prefix, HurrayTensorContext **out_context,
                                HurrayBufferList **out_list)
{
    const uint8_t *p = (const uint8_t *)r->map->base + e->offset;
    const uint8_t *desc_bytes = prefix + l->descriptor_offset;
    HurrayDescriptor *desc = NULL;
    HurrayStatus status = hurray_descriptor_decode(desc_bytes, l->descriptor_len, &desc);
    if (status != HURRAY_OK) {
        return status;
    }
    HurrayBufferList *list = NULL;
    status = hurray_buffer_list_new(&list);
    for (uint32_t i = 0; status == HURRAY_OK && i < l->buffer_count; i++) {
        HurrayBuffer *buf = NULL;
        status = hurray_buffer_from_ptr((void *)(p + l->buffer_offset[i]), l->buffer_len[i],
                                        mapping_unref, r->map, &buf);
        if (status == HURRAY_OK) {
            mapping_ref(r->map);
            status = hurray_buffer_list_push(list, &buf);
            hurray_buffer_destroy(&buf); /* only non-NULL when the push failed */
        }
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_check_buffers(desc, list);
    }
    HurrayTensorContext *context = NULL;
    if (status == HURRAY_OK) {
        mapping_ref(r->map);
        status = hurray_tensor_context_new(HURRAY_C_ABI_VERSION, desc_bytes, l->descriptor_len,
                                           r->map, mapping_unref, &context);
        if (status != HURRAY_OK) {
            mapping_unref(r->map);
        }
    }
    hurray_descriptor_destroy(&desc);
    if (status != HURRAY_OK) {
        hurray_buffer_list_destroy(&list);
        return status;
    }
    *out_context = context;
    *out_list = list;
    return HURRAY_OK;
}

HurrayStatus hurray_reader_tensor(const HurrayReader *reader, uint64_t index,
                                  HurrayTensorContext **out_context, HurrayBufferList **out_list)
{
    HURRAY__TRY(entry_of("hurray_reader_tensor", reader, index));
    if (out_context == NULL || out_list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_reader_tensor: an out is NULL");
    }
    const Entry *e = &reader->entries[index];
    int verify = !(reader->flags & HURRAY_READ_NO_VERIFY);
    if (reader->map == NULL) {
        return read_frame_at(reader, e, verify, out_context, out_list);
    }
    HurrayFrameLayout l;
    uint8_t stack[4096];
    uint8_t *prefix = stack;
    HurrayStatus status = map_frame(reader, e, &l, stack, sizeof stack, &prefix);
    if (status == HURRAY_OK && verify) {
        status = verify_mapped(reader, e, &l);
    }
    if (status == HURRAY_OK) {
        status = mapped_pair(reader, e, &l, prefix, out_context, out_list);
    }
    if (prefix != stack) {
        free(prefix);
    }
    return status;
}

HurrayStatus hurray_reader_verify(const HurrayReader *reader, uint64_t index)
{
    HURRAY__TRY(entry_of("hurray_reader_verify", reader, index));
    const Entry *e = &reader->entries[index];
    if (reader->map == NULL) {
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        HURRAY__TRY(read_frame_at(reader, e, 1, &context, &list));
        hurray_tensor_context_destroy(&context);
        hurray_buffer_list_destroy(&list);
        return HURRAY_OK;
    }
    HurrayFrameLayout l;
    uint8_t stack[4096];
    uint8_t *prefix = stack;
    HurrayStatus status = map_frame(reader, e, &l, stack, sizeof stack, &prefix);
    if (prefix != stack) {
        free(prefix);
    }
    return status == HURRAY_OK ? verify_mapped(reader, e, &l) : status;
}

uint32_t hurray_io_version(void)
{
    return HURRAY_IO_VERSION;
}
