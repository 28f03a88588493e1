/*
 * frame_stream_fuzz.c -- libFuzzer target for the frame-stream callback
 * path: hurray_frame_read and hurray_frame_write driven by callbacks that
 * behave as a peer or a file object may (issue 27): short reads of any
 * length, a count of more bytes than asked for (the lie that overflowed
 * Python's callback), zero in the middle of a frame, errors at any call,
 * writes refused at any call.
 *
 * The input is a script and a stream. Byte 0 is the script's length (0 to
 * 63), then that many script bytes, then the stream's bytes. Each callback
 * call takes the next script byte, cyclically (all "whole" without one):
 *
 *   read:  0-3  up to (byte + 1) * 13 bytes      4  every byte asked for
 *          5    a count larger than asked (only len bytes are stored)
 *          6    an error                         7  zero bytes (end)
 *   write: the low bit of byte >> 3 refuses that write (returns nonzero).
 *
 * Built with FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION, as the io target, so
 * that mutations reach the parsers behind the checksums.
 *
 * Properties, each an abort() (or a sanitizer report) when broken:
 *  1. nothing is read or written outside the callbacks' buffers (ASan: the
 *     reader hands its callback exactly `len` bytes of room, the fuzzer's
 *     read stores at most that), no UB, no leak, however the callbacks lie;
 *  2. a refusal leaves the three outs NULL and a message; a count larger
 *     than asked, or a callback error, is HURRAY_ERROR_IO and ends the read
 *     at once;
 *  3. every frame read is consistent (its pair passes check_buffers, both
 *     ends of each buffer are read) and, written again through a writer
 *     that refuses nothing, reads back to the same name, descriptor and
 *     bytes; written through the scripted writer, a refusal is
 *     HURRAY_ERROR_IO with a message.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray_io.h"

#define REQUIRE(cond)                                                                            \
    do {                                                                                         \
        if (!(cond)) {                                                                           \
            fprintf(stderr, "frame_stream_fuzz: property broken: %s (%s:%d)\n", #cond, __FILE__, \
                    __LINE__);                                                                   \
            abort();                                                                             \
        }                                                                                        \
    } while (0)

static volatile uint8_t sink;

typedef struct Script {
    const uint8_t *steps;
    size_t count, next;
} Script;

static uint8_t step(Script *s)
{
    if (s->count == 0) {
        return 4;
    }
    uint8_t b = s->steps[s->next];
    s->next = (s->next + 1) % s->count;
    return b;
}

typedef struct Peer {
    Script script;
    const uint8_t *data;
    size_t len, pos;
    int lied, failed; /* set when a read returned a lie or an error */
} Peer;

static int peer_read(void *stream, void *data, uint64_t len, uint64_t *out_read)
{
    Peer *p = stream;
    REQUIRE(len > 0); /* the reader never asks for nothing */
    uint8_t b = step(&p->script);
    size_t left = p->len - p->pos;
    size_t n = len < left ? (size_t)len : left;
    switch (b & 7) {
    case 0:
    case 1:
    case 2:
    case 3:
        if (n > (size_t)((b & 3) + 1) * 13) {
            n = (size_t)((b & 3) + 1) * 13;
        }
        break;
    case 4: break;
    case 5:
        /* Stores what fits, claims more: the reader must not believe it. */
        memcpy(data, p->data + p->pos, n);
        p->pos += n;
        *out_read = len + 1 + (b >> 3);
        p->lied = 1;
        return 0;
    case 6: p->failed = 1; return -1;
    case 7: *out_read = 0; return 0;
    }
    memcpy(data, p->data + p->pos, n);
    p->pos += n;
    *out_read = n;
    return 0;
}

/* A growing memory stream that takes every write. */
typedef struct Sink {
    uint8_t *data;
    size_t len, capacity;
} Sink;

static int sink_write(void *stream, const void *data, uint64_t len)
{
    Sink *s = stream;
    REQUIRE(len <= SIZE_MAX - s->len);
    if (s->len + len > s->capacity) {
        size_t capacity = s->capacity ? s->capacity : 4096;
        while (capacity < s->len + len) {
            capacity *= 2;
        }
        uint8_t *grown = realloc(s->data, capacity);
        REQUIRE(grown != NULL);
        s->data = grown;
        s->capacity = capacity;
    }
    memcpy(s->data + s->len, data, (size_t)len);
    s->len += (size_t)len;
    return 0;
}

typedef struct Refuser {
    Script script;
    int refused;
} Refuser;

static int refuser_write(void *stream, const void *data, uint64_t len)
{
    Refuser *r = stream;
    if (len > 0) {
        sink ^= ((const uint8_t *)data)[len - 1];
    }
    if ((step(&r->script) >> 3) & 1) {
        r->refused = 1;
        return -1;
    }
    return 0;
}

static void outs_null(HurrayBuffer *name, HurrayTensorContext *context, HurrayBufferList *list)
{
    REQUIRE(name == NULL && context == NULL && list == NULL);
    REQUIRE(hurray_last_error_message()[0] != '\0');
}

static void touch(const HurrayBufferList *list)
{
    uint64_t count;
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

static int same_buffers(const HurrayBufferList *a, const HurrayBufferList *b)
{
    uint64_t na, nb;
    REQUIRE(hurray_buffer_list_len(a, &na) == HURRAY_OK);
    REQUIRE(hurray_buffer_list_len(b, &nb) == HURRAY_OK);
    if (na != nb) {
        return 0;
    }
    for (uint64_t i = 0; i < na; i++) {
        const HurrayBuffer *x, *y;
        void *dx, *dy;
        uint64_t lx, ly;
        REQUIRE(hurray_buffer_list_get(a, i, &x) == HURRAY_OK);
        REQUIRE(hurray_buffer_list_get(b, i, &y) == HURRAY_OK);
        REQUIRE(hurray_buffer_data(x, &dx, &lx) == HURRAY_OK);
        REQUIRE(hurray_buffer_data(y, &dy, &ly) == HURRAY_OK);
        if (lx != ly || (lx != 0 && memcmp(dx, dy, (size_t)lx) != 0)) {
            return 0;
        }
    }
    return 1;
}

/* Writes the frame again, whole, and reads it back: the same name,
 * descriptor and bytes. Then through the scripted writer. */
static void rewrite(Script script, const HurrayBuffer *name, const HurrayTensorContext *context,
                    const HurrayBufferList *list)
{
    void *name_data;
    uint64_t name_len;
    REQUIRE(hurray_buffer_data(name, &name_data, &name_len) == HURRAY_OK);
    Sink s = {0};
    REQUIRE(hurray_frame_write(sink_write, &s, name_data, name_len, context, list) == HURRAY_OK);
    REQUIRE(s.len % 64 == 0);
    Peer again = {.script = {0}, .data = s.data, .len = s.len};
    HurrayBuffer *name2 = NULL;
    HurrayTensorContext *context2 = NULL;
    HurrayBufferList *list2 = NULL;
    REQUIRE(hurray_frame_read(peer_read, &again, 0, &name2, &context2, &list2) == HURRAY_OK);
    REQUIRE(context2 != NULL && again.pos == s.len);
    void *n2;
    uint64_t l2;
    REQUIRE(hurray_buffer_data(name2, &n2, &l2) == HURRAY_OK);
    REQUIRE(l2 == name_len && (l2 == 0 || memcmp(n2, name_data, (size_t)l2) == 0));
    const uint8_t *d1, *d2;
    uint64_t dl1, dl2;
    REQUIRE(hurray_tensor_context_descriptor(context, &d1, &dl1) == HURRAY_OK);
    REQUIRE(hurray_tensor_context_descriptor(context2, &d2, &dl2) == HURRAY_OK);
    REQUIRE(dl1 == dl2 && memcmp(d1, d2, (size_t)dl1) == 0);
    REQUIRE(same_buffers(list, list2));
    hurray_buffer_destroy(&name2);
    hurray_tensor_context_destroy(&context2);
    hurray_buffer_list_destroy(&list2);
    free(s.data);

    Refuser r = {.script = script, .refused = 0};
    HurrayStatus status = hurray_frame_write(refuser_write, &r, name_data, name_len, context, list);
    if (r.refused) {
        REQUIRE(status == HURRAY_ERROR_IO);
        REQUIRE(hurray_last_error_message()[0] != '\0');
    } else {
        REQUIRE(status == HURRAY_OK);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    size_t script_len = data[0] & 63;
    if (script_len > size - 1) {
        script_len = size - 1;
    }
    Script script = {.steps = data + 1, .count = script_len, .next = 0};
    Peer p = {.script = script, .data = data + 1 + script_len, .len = size - 1 - script_len};
    uint32_t flags = (data[0] & 64) ? HURRAY_READ_NO_VERIFY : HURRAY_READ_DEFAULT;
    for (int frame = 0; frame < 8; frame++) {
        HurrayBuffer *name = NULL;
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        p.lied = p.failed = 0;
        HurrayStatus status = hurray_frame_read(peer_read, &p, flags, &name, &context, &list);
        if (p.lied || p.failed) {
            REQUIRE(status == HURRAY_ERROR_IO); /* the first lie or error ends the read */
        }
        if (status != HURRAY_OK) {
            outs_null(name, context, list);
            return 0;
        }
        if (context == NULL) { /* a clean end */
            REQUIRE(name == NULL && list == NULL);
            return 0;
        }
        const uint8_t *bytes;
        uint64_t len;
        REQUIRE(hurray_tensor_context_descriptor(context, &bytes, &len) == HURRAY_OK);
        HurrayDescriptor *desc = NULL;
        REQUIRE(hurray_descriptor_decode(bytes, len, &desc) == HURRAY_OK);
        REQUIRE(hurray_descriptor_check_buffers(desc, list) == HURRAY_OK);
        hurray_descriptor_destroy(&desc);
        touch(list);
        rewrite(script, name, context, list);
        hurray_buffer_destroy(&name);
        hurray_tensor_context_destroy(&context);
        hurray_buffer_list_destroy(&list);
    }
    return 0;
}
