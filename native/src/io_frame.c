/*
 * io_frame.c -- one named tensor as a self-delimiting frame on a byte stream
 * (docs/impl/io-format.md, "Frames"): the header codec and layout, shared by
 * the file reader and writer, and frame writing and reading over callbacks.
 *
 * A writer needs no look-ahead: every length is known from the buffer list
 * before the first byte goes out, and buffers are written from the caller's
 * memory in chunks, hashed as they pass. A reader checks the header (with its
 * own checksum) before allocating what it claims.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include "io_format.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Buffers are hashed (or read and hashed) this many bytes at a time, and
 * written WRITE_SPAN bytes at a time, so the write finds the bytes the hash
 * just read in cache while each write is large enough for a file writer to
 * lay whole 2 MiB regions out in one call (io_atomic.c, ADR-058). */
#define CHUNK ((uint64_t)1 << 20)
#define WRITE_SPAN ((uint64_t)8 << 20)

static const uint8_t zeros[4096];

int hurray__all_zero(const uint8_t *p, uint64_t len)
{
    for (uint64_t i = 0; i < len; i++) {
        if (p[i] != 0) {
            return 0;
        }
    }
    return 1;
}

/* ---- header codec and layout ------------------------------------------- */

HurrayStatus hurray__frame_header_decode(const uint8_t *h, HurrayFrameLayout *out)
{
    if (memcmp(h, HURRAY__FRAME_MAGIC, 4) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "frame: bad magic %02x %02x %02x %02x (not a hurray-io frame)", h[0],
                            h[1], h[2], h[3]);
    }
    uint16_t version = hurray__le16(h + 4);
    if (version != HURRAY__IO_FORMAT_VERSION) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "frame: format version %u, this build reads version %u", version,
                            HURRAY__IO_FORMAT_VERSION);
    }
    uint32_t align_log2 = h[6];
    if (align_log2 < HURRAY__ALIGN_LOG2_MIN || align_log2 > HURRAY__ALIGN_LOG2_MAX) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: alignment 2^%u is outside 2^%u .. 2^%u",
                            align_log2, HURRAY__ALIGN_LOG2_MIN, HURRAY__ALIGN_LOG2_MAX);
    }
    if (h[7] != 0 || hurray__le32(h + 28) != 0 || hurray__le64(h + 40) != 0) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: reserved header bytes are not zero");
    }
    out->align_log2 = align_log2;
    out->frame_len = hurray__le64(h + 8);
    out->name_len = hurray__le32(h + 16);
    out->descriptor_len = hurray__le32(h + 20);
    out->buffer_count = hurray__le32(h + 24);
    out->header_checksum = hurray__le64(h + 32);
    if (out->name_len > HURRAY__MAX_NAME_LEN) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: claimed name length %u exceeds %u",
                            out->name_len, HURRAY__MAX_NAME_LEN);
    }
    if (out->descriptor_len > HURRAY__MAX_DESCRIPTOR_BYTES) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: claimed descriptor length %u exceeds %u",
                            out->descriptor_len, HURRAY__MAX_DESCRIPTOR_BYTES);
    }
    if (out->buffer_count > HURRAY__MAX_FRAME_BUFFERS) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: claimed %u buffers, at most %u",
                            out->buffer_count, HURRAY__MAX_FRAME_BUFFERS);
    }
    return HURRAY_OK;
}

static uint64_t header_checksum(const uint8_t *header, const uint8_t *table, uint32_t count)
{
    /* Bytes 0..32 (everything before the checksum) and the length table. */
    uint8_t scratch[32 + 8 * HURRAY__MAX_FRAME_BUFFERS];
    memcpy(scratch, header, 32);
    memcpy(scratch + 32, table, 8 * (size_t)count);
    return hurray__hash(scratch, 32 + 8 * (size_t)count);
}

/* Offsets of every part, from the lengths; 0 when the arithmetic overflows. */
static int compute_offsets(HurrayFrameLayout *l, uint64_t *out_frame_len)
{
    uint64_t pos = HURRAY__FRAME_HEADER_LEN + 8 * (uint64_t)l->buffer_count;
    l->name_offset = pos;
    pos += l->name_len;
    l->descriptor_offset = pos;
    pos += l->descriptor_len;
    if (!hurray__align_up(pos, l->align_log2, &pos)) {
        return 0;
    }
    l->data_offset = pos;
    for (uint32_t i = 0; i < l->buffer_count; i++) {
        l->buffer_offset[i] = pos;
        if (__builtin_add_overflow(pos, l->buffer_len[i], &pos) ||
            !hurray__align_up(pos, l->align_log2, &pos)) {
            return 0;
        }
    }
    l->end_offset = pos;
    if (__builtin_add_overflow(pos, (uint64_t)HURRAY__FRAME_END_LEN, &pos) ||
        !hurray__align_up(pos, l->align_log2, &pos)) {
        return 0;
    }
    *out_frame_len = pos;
    return 1;
}

HurrayStatus hurray__frame_layout_finish(const uint8_t *header, const uint8_t *table,
                                         HurrayFrameLayout *l)
{
    uint64_t want = header_checksum(header, table, l->buffer_count);
    if (!hurray__checksum_ok(l->header_checksum, want)) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM,
                            "frame: header checksum %016llx does not match its bytes (%016llx)",
                            (unsigned long long)l->header_checksum, (unsigned long long)want);
    }
    for (uint32_t i = 0; i < l->buffer_count; i++) {
        l->buffer_len[i] = hurray__le64(table + 8 * (size_t)i);
    }
    uint64_t frame_len;
    if (!compute_offsets(l, &frame_len)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: buffer lengths overflow 64-bit offsets");
    }
    if (frame_len != l->frame_len) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "frame: claims %llu bytes but its parts add up to %llu",
                            (unsigned long long)l->frame_len, (unsigned long long)frame_len);
    }
    return HURRAY_OK;
}

HurrayStatus hurray__frame_layout_plan(uint32_t align_log2, uint64_t name_len,
                                       uint64_t descriptor_len, const uint64_t *buffer_len,
                                       uint64_t buffer_count, HurrayFrameLayout *l, uint8_t *out,
                                       uint64_t *out_len)
{
    if (name_len > HURRAY__MAX_NAME_LEN) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "name is %llu bytes long, at most %u are allowed",
                            (unsigned long long)name_len, HURRAY__MAX_NAME_LEN);
    }
    if (descriptor_len > HURRAY__MAX_DESCRIPTOR_BYTES) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "descriptor is %llu bytes long, at most %u are allowed",
                            (unsigned long long)descriptor_len, HURRAY__MAX_DESCRIPTOR_BYTES);
    }
    if (buffer_count > HURRAY__MAX_FRAME_BUFFERS) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%llu buffers, a frame holds at most %u",
                            (unsigned long long)buffer_count, HURRAY__MAX_FRAME_BUFFERS);
    }
    memset(l, 0, sizeof *l);
    l->align_log2 = align_log2;
    l->name_len = (uint32_t)name_len;
    l->descriptor_len = (uint32_t)descriptor_len;
    l->buffer_count = (uint32_t)buffer_count;
    for (uint64_t i = 0; i < buffer_count; i++) {
        l->buffer_len[i] = buffer_len[i];
    }
    if (!compute_offsets(l, &l->frame_len)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW, "buffer lengths overflow 64-bit offsets");
    }
    memset(out, 0, HURRAY__FRAME_HEADER_LEN);
    memcpy(out, HURRAY__FRAME_MAGIC, 4);
    hurray__put16(out + 4, HURRAY__IO_FORMAT_VERSION);
    out[6] = (uint8_t)align_log2;
    hurray__put64(out + 8, l->frame_len);
    hurray__put32(out + 16, l->name_len);
    hurray__put32(out + 20, l->descriptor_len);
    hurray__put32(out + 24, l->buffer_count);
    uint8_t *table = out + HURRAY__FRAME_HEADER_LEN;
    for (uint64_t i = 0; i < buffer_count; i++) {
        hurray__put64(table + 8 * i, buffer_len[i]);
    }
    l->header_checksum = header_checksum(out, table, l->buffer_count);
    hurray__put64(out + 32, l->header_checksum);
    *out_len = HURRAY__FRAME_HEADER_LEN + 8 * buffer_count;
    return HURRAY_OK;
}

/* ---- writing ------------------------------------------------------------ */

typedef struct Sink {
    HurrayWriteFn write;
    void *stream;
    HurrayHasher *hasher;
} Sink;

static HurrayStatus emit(Sink *s, const void *data, uint64_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        uint64_t n = len < WRITE_SPAN ? len : WRITE_SPAN;
        for (uint64_t at = 0; at < n; at += CHUNK) {
            hurray__hasher_update(s->hasher, p + at, (size_t)(n - at < CHUNK ? n - at : CHUNK));
        }
        if (s->write(s->stream, p, n) != 0) {
            return hurray__fail(HURRAY_ERROR_IO, "frame: the stream refused a write of %llu bytes",
                                (unsigned long long)n);
        }
        p += n;
        len -= n;
    }
    return HURRAY_OK;
}

static HurrayStatus emit_zeros(Sink *s, uint64_t len)
{
    while (len > 0) {
        uint64_t n = len < sizeof zeros ? len : sizeof zeros;
        HURRAY__TRY(emit(s, zeros, n));
        len -= n;
    }
    return HURRAY_OK;
}

/* The descriptor must decode and fit the list: a writer never stores a
 * tensor a reader would refuse. */
static HurrayStatus check_pair(const char *fn, const HurrayTensorContext *context,
                               const HurrayBufferList *list, const uint8_t **out_bytes,
                               uint64_t *out_len)
{
    if (context == NULL || list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: context or list is NULL", fn);
    }
    HURRAY__TRY(hurray_tensor_context_descriptor(context, out_bytes, out_len));
    HurrayDescriptor *desc = NULL;
    HURRAY__TRY(hurray_descriptor_decode(*out_bytes, *out_len, &desc));
    HurrayStatus status = hurray_descriptor_check_buffers(desc, list);
    hurray_descriptor_destroy(&desc);
    return status;
}

HurrayStatus hurray__frame_write(HurrayWriteFn write, void *stream, uint32_t align_log2,
                                 const char *name, uint64_t name_len,
                                 const HurrayTensorContext *context, const HurrayBufferList *list,
                                 uint64_t *out_checksum, uint64_t *out_frame_len)
{
    if (write == NULL || (name == NULL && name_len != 0)) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "frame write: write or name is NULL");
    }
    if (!hurray__utf8_valid((const uint8_t *)name, name_len)) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "frame write: the name is not UTF-8");
    }
    const uint8_t *desc_bytes;
    uint64_t desc_len;
    HURRAY__TRY(check_pair("frame write", context, list, &desc_bytes, &desc_len));
    uint64_t count;
    HURRAY__TRY(hurray_buffer_list_len(list, &count));
    if (count > HURRAY__MAX_FRAME_BUFFERS) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "frame write: %llu buffers, a frame holds at most %u",
                            (unsigned long long)count, HURRAY__MAX_FRAME_BUFFERS);
    }
    uint64_t lens[HURRAY__MAX_FRAME_BUFFERS];
    void *datas[HURRAY__MAX_FRAME_BUFFERS];
    for (uint64_t i = 0; i < count; i++) {
        const HurrayBuffer *buf;
        HURRAY__TRY(hurray_buffer_list_get(list, i, &buf));
        HURRAY__TRY(hurray_buffer_data(buf, &datas[i], &lens[i]));
    }
    HurrayFrameLayout l;
    uint8_t head[HURRAY__FRAME_HEADER_LEN + 8 * HURRAY__MAX_FRAME_BUFFERS];
    uint64_t head_len;
    HURRAY__TRY(hurray__frame_layout_plan(align_log2, name_len, desc_len, lens, count, &l, head,
                                          &head_len));

    Sink s = {.write = write, .stream = stream, .hasher = NULL};
    HURRAY__TRY(hurray__hasher_new(&s.hasher));
    HurrayStatus status = emit(&s, head, head_len);
    if (status == HURRAY_OK) status = emit(&s, name, name_len);
    if (status == HURRAY_OK) status = emit(&s, desc_bytes, desc_len);
    if (status == HURRAY_OK)
        status = emit_zeros(&s, l.data_offset - l.descriptor_offset - desc_len);
    for (uint64_t i = 0; status == HURRAY_OK && i < count; i++) {
        status = emit(&s, datas[i], lens[i]);
        uint64_t next = i + 1 < count ? l.buffer_offset[i + 1] : l.end_offset;
        if (status == HURRAY_OK) status = emit_zeros(&s, next - l.buffer_offset[i] - lens[i]);
    }
    if (status == HURRAY_OK) {
        uint64_t checksum = hurray__hasher_digest(s.hasher);
        uint8_t end[8];
        hurray__put64(end, checksum);
        /* The end block is not part of what the checksum covers. */
        if (write(stream, end, 8) != 0) {
            status = hurray__fail(HURRAY_ERROR_IO, "frame: the stream refused a write of 8 bytes");
        }
        uint64_t pad = l.frame_len - l.end_offset - 8;
        while (status == HURRAY_OK && pad > 0) {
            uint64_t n = pad < sizeof zeros ? pad : sizeof zeros;
            if (write(stream, zeros, n) != 0) {
                status = hurray__fail(HURRAY_ERROR_IO, "frame: the stream refused a write");
            }
            pad -= n;
        }
        if (out_checksum != NULL) *out_checksum = checksum;
        if (out_frame_len != NULL) *out_frame_len = l.frame_len;
    }
    hurray__hasher_destroy(&s.hasher);
    return status;
}

HurrayStatus hurray_frame_write(HurrayWriteFn write, void *stream, const char *name,
                                uint64_t name_len, const HurrayTensorContext *context,
                                const HurrayBufferList *list)
{
    return hurray__frame_write(write, stream, HURRAY__ALIGN_LOG2_DEFAULT, name, name_len, context,
                               list, NULL, NULL);
}

/* ---- reading ------------------------------------------------------------ */

typedef struct Source {
    HurrayReadFn read;
    void *stream;
    HurrayHasher *hasher; /* NULL when not verifying */
    uint64_t consumed;
} Source;

/* Reads exactly len bytes; an early end is CORRUPT (a truncated frame). */
static HurrayStatus take(Source *s, void *data, uint64_t len, const char *what)
{
    uint8_t *p = data;
    uint64_t want = len;
    while (len > 0) {
        uint64_t got = 0;
        if (s->read(s->stream, p, len, &got) != 0) {
            return hurray__fail(HURRAY_ERROR_IO, "frame: the stream refused a read (in the %s)",
                                what);
        }
        if (got == 0) {
            return hurray__fail(HURRAY_ERROR_CORRUPT,
                                "frame: the stream ends inside the %s (%llu of %llu bytes; a "
                                "truncated frame)",
                                what, (unsigned long long)(want - len), (unsigned long long)want);
        }
        if (got > len) {
            return hurray__fail(HURRAY_ERROR_IO, "frame: the read function claims more bytes "
                                                 "than asked for");
        }
        if (s->hasher != NULL) {
            hurray__hasher_update(s->hasher, p, (size_t)got);
        }
        p += got;
        len -= got;
        s->consumed += got;
    }
    return HURRAY_OK;
}

static HurrayStatus take_zeros(Source *s, uint64_t len, const char *what)
{
    uint8_t scratch[512];
    while (len > 0) {
        uint64_t n = len < sizeof scratch ? len : sizeof scratch;
        HURRAY__TRY(take(s, scratch, n, what));
        if (!hurray__all_zero(scratch, n)) {
            return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: padding after the %s is not zero",
                                what);
        }
        len -= n;
    }
    return HURRAY_OK;
}

static void free_release(void *p)
{
    free(p);
}

/* Buffers this large are mapped, not allocated. Below it the allocator's
 * reuse of freed memory is worth having: a stream of 4 MiB tensors then
 * touches the same pages again instead of faulting in fresh ones. */
#define MAPPED_FROM ((uint64_t)1 << 28)

typedef struct Mapped {
    void *base;
    size_t len;
} Mapped;

static void unmap_release(void *p)
{
    Mapped *m = p;
    munmap(m->base, m->len);
    free(m);
}

/* A large buffer is anonymous memory mapped with MAP_NORESERVE: address
 * space only, committed page by page as the bytes arrive. A stranger's
 * header that claims 32 GiB and sends 100 bytes costs 100 bytes, not an
 * allocation of 32 GiB (which could fail, or be granted by overcommit and
 * count against the process), and a claim beyond the address space is a
 * clean HURRAY_ERROR_NO_MEMORY. Page-aligned, which covers every alignment. */
static HurrayStatus mapped_buffer(uint64_t len, HurrayBuffer **out)
{
    if (len > SIZE_MAX) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "frame: a %llu-byte buffer does not fit in "
                            "memory",
                            (unsigned long long)len);
    }
    Mapped *m = malloc(sizeof *m);
    if (m == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "frame: cannot allocate");
    }
    m->len = (size_t)len;
    m->base = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m->base == MAP_FAILED) {
        free(m);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "frame: cannot map a %llu-byte buffer",
                            (unsigned long long)len);
    }
    HurrayStatus status = hurray_buffer_from_ptr(m->base, len, unmap_release, m, out);
    if (status != HURRAY_OK) {
        unmap_release(m);
    }
    return status;
}

/* An owned buffer aligned like the format (page alignment is capped at the
 * 4096 that suffices for every element type and mapping). Not zeroed: every
 * byte is read into it. */
static HurrayStatus owned_buffer(uint64_t len, uint32_t align_log2, HurrayBuffer **out)
{
    if (len >= MAPPED_FROM) {
        return mapped_buffer(len, out);
    }
    size_t align = (size_t)1 << (align_log2 < 12 ? align_log2 : 12);
    uint64_t size = len == 0 ? align : len;
    size = (size + align - 1) & ~(uint64_t)(align - 1);
    void *data = aligned_alloc(align, (size_t)size);
    if (data == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "frame: cannot allocate a %llu-byte buffer",
                            (unsigned long long)len);
    }
    HurrayStatus status = hurray_buffer_from_ptr(data, len, free_release, data, out);
    if (status != HURRAY_OK) {
        free(data);
    }
    return status;
}

/* Keeps the message of a failure, prefixed with where it happened. */
static HurrayStatus prefixed(HurrayStatus status, const char *where)
{
    char message[HURRAY__MESSAGE_CAPACITY];
    strncpy(message, hurray_last_error_message(), sizeof message - 1);
    message[sizeof message - 1] = '\0';
    return hurray__fail(status, "%s: %s", where, message);
}

static HurrayStatus read_body(Source *s, const uint8_t *header, HurrayFrameLayout *l,
                              HurrayBuffer **name, uint8_t **desc_bytes, HurrayBufferList **list,
                              uint64_t *out_checksum, int verify)
{
    uint8_t table[8 * HURRAY__MAX_FRAME_BUFFERS];
    HURRAY__TRY(take(s, table, 8 * (uint64_t)l->buffer_count, "buffer length table"));
    HURRAY__TRY(hurray__frame_layout_finish(header, table, l));

    HURRAY__TRY(owned_buffer(l->name_len, HURRAY__ALIGN_LOG2_MIN, name));
    void *name_data;
    uint64_t name_len;
    HURRAY__TRY(hurray_buffer_data(*name, &name_data, &name_len));
    HURRAY__TRY(take(s, name_data, name_len, "name"));
    if (!hurray__utf8_valid(name_data, name_len)) {
        return hurray__fail(HURRAY_ERROR_CORRUPT, "frame: the name is not UTF-8");
    }
    *desc_bytes = malloc(l->descriptor_len == 0 ? 1 : l->descriptor_len);
    if (*desc_bytes == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "frame: cannot allocate the descriptor");
    }
    HURRAY__TRY(take(s, *desc_bytes, l->descriptor_len, "descriptor"));
    HURRAY__TRY(take_zeros(s, l->data_offset - l->descriptor_offset - l->descriptor_len,
                           "descriptor"));
    HURRAY__TRY(hurray_buffer_list_new(list));
    for (uint32_t i = 0; i < l->buffer_count; i++) {
        HurrayBuffer *buf = NULL;
        HURRAY__TRY(owned_buffer(l->buffer_len[i], l->align_log2, &buf));
        HurrayStatus status = hurray_buffer_list_push(*list, &buf);
        if (status != HURRAY_OK) {
            hurray_buffer_destroy(&buf);
            return status;
        }
        const HurrayBuffer *pushed;
        void *data;
        uint64_t len;
        HURRAY__TRY(hurray_buffer_list_get(*list, i, &pushed));
        HURRAY__TRY(hurray_buffer_data(pushed, &data, &len));
        HURRAY__TRY(take(s, data, len, "buffer"));
        uint64_t next = i + 1 < l->buffer_count ? l->buffer_offset[i + 1] : l->end_offset;
        HURRAY__TRY(take_zeros(s, next - l->buffer_offset[i] - len, "buffer"));
    }
    uint64_t computed = s->hasher != NULL ? hurray__hasher_digest(s->hasher) : 0;
    /* The end block is not covered: read it without hashing. */
    Source end_source = *s;
    end_source.hasher = NULL;
    uint8_t end[8];
    HURRAY__TRY(take(&end_source, end, 8, "end block"));
    HURRAY__TRY(take_zeros(&end_source, l->frame_len - l->end_offset - 8, "end block"));
    s->consumed = end_source.consumed;
    uint64_t stored = hurray__le64(end);
    if (verify && !hurray__checksum_ok(stored, computed)) {
        return hurray__fail(HURRAY_ERROR_CHECKSUM,
                            "frame: checksum %016llx does not match its bytes (%016llx)",
                            (unsigned long long)stored, (unsigned long long)computed);
    }
    *out_checksum = stored;
    return HURRAY_OK;
}

HurrayStatus hurray__frame_read(HurrayReadFn read, void *stream, int verify, uint32_t align_log2,
                                HurrayBuffer **out_name, HurrayTensorContext **out_context,
                                HurrayBufferList **out_list, uint64_t *out_checksum,
                                uint64_t *out_frame_len)
{
    *out_name = NULL;
    *out_context = NULL;
    *out_list = NULL;
    Source s = {.read = read, .stream = stream, .hasher = NULL, .consumed = 0};
    uint8_t header[HURRAY__FRAME_HEADER_LEN];
    /* The first read tells a clean end (no byte at all) from a short one. */
    uint64_t got = 0;
    if (read(stream, header, sizeof header, &got) != 0) {
        return hurray__fail(HURRAY_ERROR_IO, "frame: the stream refused a read (in the header)");
    }
    if (got == 0) {
        if (out_frame_len != NULL) *out_frame_len = 0;
        return HURRAY_OK;
    }
    if (got > sizeof header) {
        return hurray__fail(HURRAY_ERROR_IO, "frame: the read function claims more bytes than "
                                             "asked for");
    }
    s.consumed = got;
    HURRAY__TRY(take(&s, header + got, sizeof header - got, "header"));
    HurrayFrameLayout l;
    HURRAY__TRY(hurray__frame_header_decode(header, &l));
    if (align_log2 != 0 && l.align_log2 != align_log2) {
        return hurray__fail(HURRAY_ERROR_CORRUPT,
                            "frame: states alignment 2^%u where its file has 2^%u", l.align_log2,
                            align_log2);
    }
    if (verify) {
        HURRAY__TRY(hurray__hasher_new(&s.hasher));
        hurray__hasher_update(s.hasher, header, sizeof header);
    }
    HurrayBuffer *name = NULL;
    uint8_t *desc_bytes = NULL;
    HurrayBufferList *list = NULL;
    HurrayTensorContext *context = NULL;
    HurrayDescriptor *desc = NULL;
    uint64_t checksum = 0;
    HurrayStatus status = read_body(&s, header, &l, &name, &desc_bytes, &list, &checksum, verify);
    hurray__hasher_destroy(&s.hasher);
    if (status == HURRAY_OK) {
        status = hurray_descriptor_decode(desc_bytes, l.descriptor_len, &desc);
        if (status != HURRAY_OK) {
            status = prefixed(status, "frame: the descriptor does not decode");
        }
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_check_buffers(desc, list);
        if (status != HURRAY_OK) {
            status = prefixed(status, "frame: the descriptor does not fit its buffers");
        }
    }
    if (status == HURRAY_OK) {
        status = hurray_tensor_context_new(HURRAY_C_ABI_VERSION, desc_bytes, l.descriptor_len, NULL,
                                           NULL, &context);
    }
    hurray_descriptor_destroy(&desc);
    free(desc_bytes);
    if (status != HURRAY_OK) {
        hurray_buffer_destroy(&name);
        hurray_buffer_list_destroy(&list);
        return status;
    }
    *out_name = name;
    *out_context = context;
    *out_list = list;
    if (out_checksum != NULL) *out_checksum = checksum;
    if (out_frame_len != NULL) *out_frame_len = s.consumed;
    return HURRAY_OK;
}

HurrayStatus hurray_frame_read(HurrayReadFn read, void *stream, uint32_t flags,
                               HurrayBuffer **out_name, HurrayTensorContext **out_context,
                               HurrayBufferList **out_list)
{
    if (read == NULL || out_name == NULL || out_context == NULL || out_list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_frame_read: read or an out-parameter is NULL");
    }
    if ((flags & ~(HURRAY_READ_NO_VERIFY | HURRAY_READ_NO_MMAP)) != 0) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "hurray_frame_read: unknown flags %#x",
                            flags);
    }
    return hurray__frame_read(read, stream, !(flags & HURRAY_READ_NO_VERIFY), 0, out_name,
                              out_context, out_list, NULL, NULL);
}
