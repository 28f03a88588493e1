/*
 * test_core.c -- the hurray-ffi core: status, HurrayBuffer,
 * HurrayBufferList, HurrayTensorContext.
 *
 * Uses only the public header, so it runs both against the installed
 * libhurray and with the library sources compiled in under sanitizers.
 * Set HURRAY_TEST_SCALE=N to divide the loop counts by N (for valgrind).
 */
#include "hurray.h"

#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned long scale = 1;

static unsigned long scaled(unsigned long n)
{
    unsigned long s = n / scale;
    return s == 0 ? 1 : s;
}

/* ---- release callbacks ------------------------------------------------ */

/* Counts calls and remembers the argument it was last called with. */
typedef struct Counter {
    atomic_ulong calls;
    void *_Atomic last_arg;
} Counter;

static void counting_release(void *arg)
{
    Counter *counter = arg;
    atomic_fetch_add(&counter->calls, 1);
    atomic_store(&counter->last_arg, arg);
}

/* Appends its id to a shared log, to observe the order of releases. */
typedef struct OrderLog {
    int ids[16];
    int count;
} OrderLog;

typedef struct OrderEntry {
    OrderLog *log;
    int id;
} OrderEntry;

static void logging_release(void *arg)
{
    OrderEntry *entry = arg;
    entry->log->ids[entry->log->count++] = entry->id;
}

/* Sentinels for "out-parameter untouched on failure". */
#define SENTINEL_U64 0x5151515151515151ull
#define SENTINEL_U32 0x51515151u
static char sentinel_object;
#define SENTINEL_PTR ((void *)&sentinel_object)

/* ---- status ----------------------------------------------------------- */

static void test_status(void)
{
    CHECK(hurray_c_abi_version() == HURRAY_C_ABI_VERSION);
    CHECK(hurray_c_abi_version() == 5);
    CHECK(HURRAY_C_ABI_MIN_VERSION == 4);

    static const struct {
        HurrayStatus status;
        const char *name;
    } names[] = {
        {HURRAY_OK, "HURRAY_OK"},
        {HURRAY_ERROR_NULL_ARGUMENT, "HURRAY_ERROR_NULL_ARGUMENT"},
        {HURRAY_ERROR_INVALID_ARGUMENT, "HURRAY_ERROR_INVALID_ARGUMENT"},
        {HURRAY_ERROR_OUT_OF_RANGE, "HURRAY_ERROR_OUT_OF_RANGE"},
        {HURRAY_ERROR_OVERFLOW, "HURRAY_ERROR_OVERFLOW"},
        {HURRAY_ERROR_NO_MEMORY, "HURRAY_ERROR_NO_MEMORY"},
        {HURRAY_ERROR_NOT_A_CONTEXT, "HURRAY_ERROR_NOT_A_CONTEXT"},
        {HURRAY_ERROR_ABI_VERSION, "HURRAY_ERROR_ABI_VERSION"},
        {HURRAY_ERROR_INVALID_DESCRIPTOR, "HURRAY_ERROR_INVALID_DESCRIPTOR"},
        {HURRAY_ERROR_UNSUPPORTED, "HURRAY_ERROR_UNSUPPORTED"},
        {HURRAY_ERROR_BUFFER_TOO_SMALL, "HURRAY_ERROR_BUFFER_TOO_SMALL"},
        {HURRAY_ERROR_NOT_FOUND, "HURRAY_ERROR_NOT_FOUND"},
        {HURRAY_ERROR_IO, "HURRAY_ERROR_IO"},
        {HURRAY_ERROR_CORRUPT, "HURRAY_ERROR_CORRUPT"},
        {HURRAY_ERROR_CHECKSUM, "HURRAY_ERROR_CHECKSUM"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        CHECK(names[i].status == (HurrayStatus)i); /* codes are 0..14, dense */
        CHECK(strcmp(hurray_status_name(names[i].status), names[i].name) == 0);
    }
    CHECK(strcmp(hurray_status_name((HurrayStatus)15), "HURRAY_ERROR_UNKNOWN") == 0);
    CHECK(strcmp(hurray_status_name((HurrayStatus)1000), "HURRAY_ERROR_UNKNOWN") == 0);
    CHECK(strcmp(hurray_status_name((HurrayStatus)-1), "HURRAY_ERROR_UNKNOWN") == 0);
}

/* ---- HurrayBuffer ----------------------------------------------------- */

static void test_buffer_from_ptr(void)
{
    uint8_t bytes[32];
    for (int i = 0; i < 32; i++) {
        bytes[i] = (uint8_t)i;
    }
    Counter counter = {0};
    HurrayBuffer *buf = NULL;
    CHECK_OK(hurray_buffer_from_ptr(bytes, sizeof bytes, counting_release, &counter, &buf));
    CHECK(buf != NULL);
    void *data = NULL;
    uint64_t len = 0;
    CHECK_OK(hurray_buffer_data(buf, &data, &len));
    CHECK(data == bytes); /* borrowed, not copied */
    CHECK(len == sizeof bytes);
    CHECK(atomic_load(&counter.calls) == 0);
    hurray_buffer_destroy(&buf);
    CHECK(buf == NULL);
    CHECK(atomic_load(&counter.calls) == 1);
    CHECK(atomic_load(&counter.last_arg) == &counter);
    hurray_buffer_destroy(&buf); /* pointer to NULL: no-op, no second release */
    hurray_buffer_destroy(NULL);
    CHECK(atomic_load(&counter.calls) == 1);

    /* An empty buffer may have a NULL pointer; release still runs once. */
    Counter empty = {0};
    CHECK_OK(hurray_buffer_from_ptr(NULL, 0, counting_release, &empty, &buf));
    data = SENTINEL_PTR;
    len = SENTINEL_U64;
    CHECK_OK(hurray_buffer_data(buf, &data, &len));
    CHECK(data == NULL);
    CHECK(len == 0);
    hurray_buffer_destroy(&buf);
    CHECK(buf == NULL);
    CHECK(atomic_load(&empty.calls) == 1);

    /* No release function: nothing to free, still a valid buffer. */
    CHECK_OK(hurray_buffer_from_ptr(bytes, 4, NULL, NULL, &buf));
    CHECK_OK(hurray_buffer_data(buf, &data, &len));
    CHECK(data == bytes && len == 4);
    hurray_buffer_destroy(&buf);
    CHECK(buf == NULL);

    /* Failures: release is never called, out is untouched. */
    Counter refused = {0};
    HurrayBuffer *untouched = SENTINEL_PTR;
    CHECK_FAIL(hurray_buffer_from_ptr(NULL, 1, counting_release, &refused, &untouched),
               HURRAY_ERROR_NULL_ARGUMENT, "ptr");
    CHECK(untouched == SENTINEL_PTR);
    CHECK_FAIL(hurray_buffer_from_ptr(bytes, 4, counting_release, &refused, NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_buffer_from_ptr(bytes, UINT64_MAX, counting_release, &refused, &untouched),
               HURRAY_ERROR_OVERFLOW, "wraps");
    CHECK(untouched == SENTINEL_PTR);
    CHECK(atomic_load(&refused.calls) == 0);

    /* hurray_buffer_data refuses NULLs and leaves the outputs alone. */
    CHECK_OK(hurray_buffer_from_ptr(bytes, 8, NULL, NULL, &buf));
    data = SENTINEL_PTR;
    len = SENTINEL_U64;
    CHECK_FAIL(hurray_buffer_data(NULL, &data, &len), HURRAY_ERROR_NULL_ARGUMENT, "buf");
    CHECK_FAIL(hurray_buffer_data(buf, NULL, &len), HURRAY_ERROR_NULL_ARGUMENT, "out_data");
    CHECK_FAIL(hurray_buffer_data(buf, &data, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out_len");
    CHECK(data == SENTINEL_PTR);
    CHECK(len == SENTINEL_U64);
    hurray_buffer_destroy(&buf);
}

static void test_buffer_new(void)
{
    static const uint64_t lens[] = {0, 1, 3, 100, 4097};
    for (uint64_t alignment = 1; alignment <= 4096; alignment *= 2) {
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            HurrayBuffer *buf = NULL;
            CHECK_OK(hurray_buffer_new(lens[i], alignment, &buf));
            CHECK(buf != NULL);
            void *data = NULL;
            uint64_t len = SENTINEL_U64;
            CHECK_OK(hurray_buffer_data(buf, &data, &len));
            CHECK(len == lens[i]);
            CHECK(data != NULL); /* even when empty */
            CHECK((uintptr_t)data % alignment == 0);
            const uint8_t *bytes = data;
            int all_zero = 1;
            for (uint64_t j = 0; j < len; j++) {
                all_zero &= bytes[j] == 0;
            }
            CHECK(all_zero);
            memset(data, 0xAB, (size_t)len); /* writable over its whole length */
            hurray_buffer_destroy(&buf);
            CHECK(buf == NULL);
        }
    }

    HurrayBuffer *untouched = SENTINEL_PTR;
    static const uint64_t bad_alignments[] = {0, 3, 6, 12, 100, 4095, 4097, UINT64_MAX};
    for (size_t i = 0; i < sizeof bad_alignments / sizeof bad_alignments[0]; i++) {
        CHECK_FAIL(hurray_buffer_new(16, bad_alignments[i], &untouched),
                   HURRAY_ERROR_INVALID_ARGUMENT, "power of two");
    }
    /* Powers of two above the documented maximum of 4096. */
    CHECK_FAIL(hurray_buffer_new(16, 8192, &untouched), HURRAY_ERROR_INVALID_ARGUMENT, "alignment");
    CHECK_FAIL(hurray_buffer_new(16, UINT64_C(1) << 63, &untouched), HURRAY_ERROR_INVALID_ARGUMENT,
               "alignment");
    /* Rounding the length up to the alignment overflows. */
    CHECK_FAIL(hurray_buffer_new(UINT64_MAX, 1, &untouched), HURRAY_ERROR_OVERFLOW, "len");
    CHECK_FAIL(hurray_buffer_new(UINT64_MAX - 10, 64, &untouched), HURRAY_ERROR_OVERFLOW, "len");
    /* Fits the arithmetic but not the address space. */
    CHECK_FAIL(hurray_buffer_new(UINT64_C(1) << 62, 64, &untouched), HURRAY_ERROR_NO_MEMORY,
               "allocate");
    CHECK(untouched == SENTINEL_PTR);
    CHECK_FAIL(hurray_buffer_new(16, 16, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
}

/* ---- HurrayBufferList ------------------------------------------------- */

static void test_buffer_list(void)
{
    HurrayBufferList *list = NULL;
    CHECK_FAIL(hurray_buffer_list_new(NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_OK(hurray_buffer_list_new(&list));
    CHECK(list != NULL);

    uint64_t len = SENTINEL_U64;
    CHECK_OK(hurray_buffer_list_len(list, &len));
    CHECK(len == 0);
    const HurrayBuffer *got = SENTINEL_PTR;
    CHECK_FAIL(hurray_buffer_list_get(list, 0, &got), HURRAY_ERROR_OUT_OF_RANGE, "index 0");
    CHECK(got == SENTINEL_PTR);

    /* Three buffers whose releases log their order. */
    OrderLog log = {{0}, 0};
    OrderEntry entries[3] = {{&log, 0}, {&log, 1}, {&log, 2}};
    uint8_t storage[3][8];
    HurrayBuffer *pushed[3];
    for (int i = 0; i < 3; i++) {
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_from_ptr(storage[i], 8, logging_release, &entries[i], &buf));
        pushed[i] = buf;
        CHECK_OK(hurray_buffer_list_push(list, &buf));
        CHECK(buf == NULL); /* the list took it */
        CHECK_OK(hurray_buffer_list_len(list, &len));
        CHECK(len == (uint64_t)i + 1);
    }
    for (uint64_t i = 0; i < 3; i++) {
        CHECK_OK(hurray_buffer_list_get(list, i, &got));
        CHECK(got == pushed[i]); /* borrowed: the same handle */
        void *data = NULL;
        CHECK_OK(hurray_buffer_data(got, &data, &len));
        CHECK(data == storage[i] && len == 8);
    }
    got = SENTINEL_PTR;
    CHECK_FAIL(hurray_buffer_list_get(list, 3, &got), HURRAY_ERROR_OUT_OF_RANGE, "index 3");
    CHECK_FAIL(hurray_buffer_list_get(list, UINT64_MAX, &got), HURRAY_ERROR_OUT_OF_RANGE,
               "out of range");
    CHECK(got == SENTINEL_PTR);
    CHECK_FAIL(hurray_buffer_list_get(NULL, 0, &got), HURRAY_ERROR_NULL_ARGUMENT, "list");
    CHECK_FAIL(hurray_buffer_list_get(list, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_buffer_list_len(NULL, &len), HURRAY_ERROR_NULL_ARGUMENT, "list");
    CHECK_FAIL(hurray_buffer_list_len(list, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");

    /* A refused push leaves the buffer with the caller, unreleased. */
    Counter kept = {0};
    HurrayBuffer *mine = NULL;
    CHECK_OK(hurray_buffer_from_ptr(storage[0], 4, counting_release, &kept, &mine));
    HurrayBuffer *const mine_before = mine;
    CHECK_FAIL(hurray_buffer_list_push(NULL, &mine), HURRAY_ERROR_NULL_ARGUMENT, "list");
    CHECK(mine == mine_before);
    CHECK_FAIL(hurray_buffer_list_push(list, NULL), HURRAY_ERROR_NULL_ARGUMENT, "buf");
    HurrayBuffer *nothing = NULL;
    CHECK_FAIL(hurray_buffer_list_push(list, &nothing), HURRAY_ERROR_NULL_ARGUMENT, "*buf");
    CHECK_OK(hurray_buffer_list_len(list, &len));
    CHECK(len == 3);
    /* A handle the list already owns is refused (taking it twice would
     * free it twice, which ASan would report at the destroy below). */
    for (int i = 0; i < 3; i++) {
        HurrayBuffer *again = pushed[i];
        CHECK_FAIL(hurray_buffer_list_push(list, &again), HURRAY_ERROR_INVALID_ARGUMENT,
                   "already in the list");
        CHECK(again == pushed[i]);
    }
    CHECK_OK(hurray_buffer_list_len(list, &len));
    CHECK(len == 3);
    void *data = NULL;
    CHECK_OK(hurray_buffer_data(mine, &data, &len)); /* still usable */
    CHECK(data == storage[0] && len == 4);
    CHECK(atomic_load(&kept.calls) == 0);
    hurray_buffer_destroy(&mine);
    CHECK(atomic_load(&kept.calls) == 1);

    CHECK(log.count == 0);
    hurray_buffer_list_destroy(&list);
    CHECK(list == NULL);
    CHECK(log.count == 3);
    CHECK(log.ids[0] == 0 && log.ids[1] == 1 && log.ids[2] == 2); /* push order */
    hurray_buffer_list_destroy(&list);
    hurray_buffer_list_destroy(NULL);
    CHECK(log.count == 3);

    /* An empty list destroys cleanly. */
    CHECK_OK(hurray_buffer_list_new(&list));
    hurray_buffer_list_destroy(&list);
    CHECK(list == NULL);

    /* Growth: many pushes keep every index and release each buffer once. */
    enum { MANY = 10000 };
    Counter many = {0};
    HurrayBuffer **handles = malloc(MANY * sizeof *handles);
    CHECK(handles != NULL);
    CHECK_OK(hurray_buffer_list_new(&list));
    for (int i = 0; i < MANY; i++) {
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_from_ptr(NULL, 0, counting_release, &many, &buf));
        handles[i] = buf;
        CHECK_OK(hurray_buffer_list_push(list, &buf));
    }
    CHECK_OK(hurray_buffer_list_len(list, &len));
    CHECK(len == MANY);
    int same = 1;
    for (int i = 0; i < MANY; i++) {
        CHECK_OK(hurray_buffer_list_get(list, (uint64_t)i, &got));
        same &= got == handles[i];
    }
    CHECK(same);
    free(handles);
    hurray_buffer_list_destroy(&list);
    CHECK(atomic_load(&many.calls) == MANY);
}

/* ---- HurrayTensorContext ---------------------------------------------- */

static void test_tensor_context(void)
{
    uint8_t descriptor[40];
    for (int i = 0; i < 40; i++) {
        descriptor[i] = (uint8_t)(0xC0 + i);
    }
    Counter owner = {0};
    HurrayTensorContext *ctx = NULL;
    CHECK_OK(hurray_tensor_context_new(HURRAY_C_ABI_VERSION, descriptor, sizeof descriptor, &owner,
                                       counting_release, &ctx));
    CHECK(ctx != NULL);

    /* The frozen header: magic then version, in the first 8 bytes. */
    uint32_t header[2];
    memcpy(header, ctx, sizeof header);
    CHECK(header[0] == HURRAY_TENSOR_CONTEXT_MAGIC);
    CHECK(header[1] == HURRAY_C_ABI_VERSION);

    uint32_t version = SENTINEL_U32;
    CHECK_OK(hurray_tensor_context_abi_version(ctx, &version));
    CHECK(version == 5);

    const uint8_t *bytes = NULL;
    uint64_t len = 0;
    CHECK_OK(hurray_tensor_context_descriptor(ctx, &bytes, &len));
    CHECK(len == sizeof descriptor);
    CHECK(bytes != descriptor); /* a private copy */
    CHECK(memcmp(bytes, descriptor, sizeof descriptor) == 0);

    /* Changing the caller's bytes after new changes nothing in the context. */
    memset(descriptor, 0, sizeof descriptor);
    CHECK_OK(hurray_tensor_context_descriptor(ctx, &bytes, &len));
    int copy_intact = 1;
    for (int i = 0; i < 40; i++) {
        copy_intact &= bytes[i] == (uint8_t)(0xC0 + i);
    }
    CHECK(copy_intact);

    CHECK(atomic_load(&owner.calls) == 0);
    hurray_tensor_context_destroy(&ctx);
    CHECK(ctx == NULL);
    CHECK(atomic_load(&owner.calls) == 1);
    CHECK(atomic_load(&owner.last_arg) == &owner); /* called with owner */
    hurray_tensor_context_destroy(&ctx);
    hurray_tensor_context_destroy(NULL);
    CHECK(atomic_load(&owner.calls) == 1);

    /* owner_release may be NULL; a one-byte descriptor is accepted. */
    CHECK_OK(hurray_tensor_context_new(4, descriptor, 1, NULL, NULL, &ctx));
    CHECK_OK(hurray_tensor_context_descriptor(ctx, &bytes, &len));
    CHECK(len == 1 && bytes[0] == 0);
    hurray_tensor_context_destroy(&ctx);
    CHECK(ctx == NULL);

    /* The limit, exactly: 1 MiB is accepted and copied whole. */
    const uint64_t limit = 1024u * 1024u;
    uint8_t *big = malloc((size_t)limit);
    CHECK(big != NULL);
    for (uint64_t i = 0; i < limit; i++) {
        big[i] = (uint8_t)(i * 7u);
    }
    CHECK_OK(hurray_tensor_context_new(4, big, limit, NULL, NULL, &ctx));
    CHECK_OK(hurray_tensor_context_descriptor(ctx, &bytes, &len));
    CHECK(len == limit && memcmp(bytes, big, (size_t)limit) == 0);
    hurray_tensor_context_destroy(&ctx);
    free(big);

    /* Refusals: owner_release never runs, out is untouched. */
    Counter refused = {0};
    HurrayTensorContext *untouched = SENTINEL_PTR;
    static const uint32_t bad_versions[] = {0, 1, 2, 3, 6, 7, UINT32_MAX};
    for (size_t i = 0; i < sizeof bad_versions / sizeof bad_versions[0]; i++) {
        CHECK_FAIL(hurray_tensor_context_new(bad_versions[i], descriptor, 8, &refused,
                                             counting_release, &untouched),
                   HURRAY_ERROR_ABI_VERSION, "abi_version");
    }
    CHECK_FAIL(hurray_tensor_context_new(4, descriptor, 8, &refused, counting_release, NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_tensor_context_new(4, NULL, 8, &refused, counting_release, &untouched),
               HURRAY_ERROR_NULL_ARGUMENT, "descriptor_bytes");
    CHECK_FAIL(hurray_tensor_context_new(4, NULL, 0, &refused, counting_release, &untouched),
               HURRAY_ERROR_INVALID_ARGUMENT, "descriptor_len");
    CHECK_FAIL(hurray_tensor_context_new(4, descriptor, 0, &refused, counting_release, &untouched),
               HURRAY_ERROR_INVALID_ARGUMENT, "descriptor_len");
    /* Over-long lengths are refused before a byte is read: the array is
     * only 40 bytes, which the sanitizer build would catch. */
    CHECK_FAIL(hurray_tensor_context_new(4, descriptor, limit + 1, &refused, counting_release,
                                         &untouched),
               HURRAY_ERROR_INVALID_ARGUMENT, "descriptor_len");
    CHECK_FAIL(hurray_tensor_context_new(4, descriptor, UINT64_MAX, &refused, counting_release,
                                         &untouched),
               HURRAY_ERROR_INVALID_ARGUMENT, "descriptor_len");
    CHECK(untouched == SENTINEL_PTR);
    CHECK(atomic_load(&refused.calls) == 0);

    /* Accessors refuse NULLs and leave outputs alone. */
    CHECK_OK(hurray_tensor_context_new(4, descriptor, 8, NULL, NULL, &ctx));
    version = SENTINEL_U32;
    bytes = SENTINEL_PTR;
    len = SENTINEL_U64;
    CHECK_FAIL(hurray_tensor_context_abi_version(NULL, &version), HURRAY_ERROR_NULL_ARGUMENT,
               "ctx");
    CHECK_FAIL(hurray_tensor_context_abi_version(ctx, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK_FAIL(hurray_tensor_context_descriptor(NULL, &bytes, &len), HURRAY_ERROR_NULL_ARGUMENT,
               "ctx");
    CHECK_FAIL(hurray_tensor_context_descriptor(ctx, NULL, &len), HURRAY_ERROR_NULL_ARGUMENT,
               "out_bytes");
    CHECK_FAIL(hurray_tensor_context_descriptor(ctx, &bytes, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "out_len");
    CHECK(version == SENTINEL_U32 && bytes == SENTINEL_PTR && len == SENTINEL_U64);
    hurray_tensor_context_destroy(&ctx);
}

/* Pointers that are not contexts of this build. Each fake is exactly 8
 * bytes on the heap, so a read past the header is an error under ASan. */
static uint32_t *fake_context(uint32_t magic, uint32_t version)
{
    uint32_t *fake = malloc(2 * sizeof *fake);
    CHECK(fake != NULL);
    fake[0] = magic;
    fake[1] = version;
    return fake;
}

static void test_fake_contexts(void)
{
    /* No magic: refused, not read further, not freed. */
    uint32_t *raw = fake_context(0x12345678u, 4);
    HurrayTensorContext *ctx = (HurrayTensorContext *)(void *)raw;
    uint32_t version = SENTINEL_U32;
    CHECK_FAIL(hurray_tensor_context_abi_version(ctx, &version), HURRAY_ERROR_NOT_A_CONTEXT,
               "not a HurrayTensorContext");
    CHECK(version == SENTINEL_U32);
    const uint8_t *bytes = SENTINEL_PTR;
    uint64_t len = SENTINEL_U64;
    CHECK_FAIL(hurray_tensor_context_descriptor(ctx, &bytes, &len), HURRAY_ERROR_NOT_A_CONTEXT,
               "not a HurrayTensorContext");
    CHECK(bytes == SENTINEL_PTR && len == SENTINEL_U64);
    /* A failure of some other function, only to replace the thread's
     * message: destroy returns nothing, so the message it must leave is the
     * one sign of its refusal, and it must not be a stale one. */
    CHECK_FAIL(hurray_buffer_list_get(NULL, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT, "list");
    hurray_tensor_context_destroy(&ctx); /* refused: left alone, message set */
    CHECK(ctx == (HurrayTensorContext *)(void *)raw);
    CHECK(strstr(hurray_last_error_message(), "hurray_tensor_context_destroy") != NULL);
    CHECK(raw[0] == 0x12345678u && raw[1] == 4);
    free(raw);

    /* The magic with versions this build does not serve: the version is
     * still reported (so the consumer can refuse it), but nothing past the
     * header is read or freed. */
    static const uint32_t foreign[] = {3, 6, 1000};
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        raw = fake_context(HURRAY_TENSOR_CONTEXT_MAGIC, foreign[i]);
        ctx = (HurrayTensorContext *)(void *)raw;
        CHECK_OK(hurray_tensor_context_abi_version(ctx, &version));
        CHECK(version == foreign[i]);
        bytes = SENTINEL_PTR;
        len = SENTINEL_U64;
        CHECK_FAIL(hurray_tensor_context_descriptor(ctx, &bytes, &len), HURRAY_ERROR_ABI_VERSION,
                   "ABI version");
        CHECK(bytes == SENTINEL_PTR && len == SENTINEL_U64);
        /* Reset the message, as above, so destroy's own message is checked. */
        CHECK_FAIL(hurray_buffer_list_get(NULL, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT, "list");
        hurray_tensor_context_destroy(&ctx);
        CHECK(ctx == (HurrayTensorContext *)(void *)raw);
        CHECK(strstr(hurray_last_error_message(), "hurray_tensor_context_destroy") != NULL);
        CHECK(raw[0] == HURRAY_TENSOR_CONTEXT_MAGIC && raw[1] == foreign[i]);
        free(raw);
    }

    /* The header is all abi_version reads: 8 bytes with magic and version 4
     * are enough for it. */
    raw = fake_context(HURRAY_TENSOR_CONTEXT_MAGIC, 4);
    CHECK_OK(hurray_tensor_context_abi_version((HurrayTensorContext *)(void *)raw, &version));
    CHECK(version == 4);
    free(raw);

    /* An unaligned header is read correctly too. */
    unsigned char *block = malloc(9);
    CHECK(block != NULL);
    uint32_t header[2] = {HURRAY_TENSOR_CONTEXT_MAGIC, 7};
    memcpy(block + 1, header, sizeof header);
    CHECK_OK(hurray_tensor_context_abi_version((HurrayTensorContext *)(void *)(block + 1),
                                               &version));
    CHECK(version == 7);
    free(block);
}

/* ---- read-only buffers (ABI 5, ADR-059) -------------------------------- */

static void test_readonly_buffers(void)
{
    static unsigned char memory[16];
    HurrayBuffer *buf = NULL;
    uint32_t flags = SENTINEL_U32;
    CHECK_OK(hurray_buffer_from_ptr(memory, sizeof memory, NULL, NULL, &buf));
    CHECK_OK(hurray_buffer_flags(buf, &flags));
    CHECK(flags == 0);
    CHECK_OK(hurray_buffer_mark_readonly(buf));
    CHECK_OK(hurray_buffer_mark_readonly(buf)); /* twice is once */
    CHECK_OK(hurray_buffer_flags(buf, &flags));
    CHECK(flags == HURRAY_BUFFER_READONLY);
    CHECK_FAIL(hurray_buffer_mark_readonly(NULL), HURRAY_ERROR_NULL_ARGUMENT, "buf");
    flags = SENTINEL_U32;
    CHECK_FAIL(hurray_buffer_flags(NULL, &flags), HURRAY_ERROR_NULL_ARGUMENT, "buf");
    CHECK_FAIL(hurray_buffer_flags(buf, NULL), HURRAY_ERROR_NULL_ARGUMENT, "out");
    CHECK(flags == SENTINEL_U32);
    /* The mark does not change what the buffer holds. */
    void *data = NULL;
    uint64_t len = 0;
    CHECK_OK(hurray_buffer_data(buf, &data, &len));
    CHECK(data == memory && len == sizeof memory);

    HurrayBuffer *owned = NULL;
    CHECK_OK(hurray_buffer_new(8, 8, &owned));
    CHECK_OK(hurray_buffer_flags(owned, &flags));
    CHECK(flags == 0);

    /* A pair: buffer 0 marked, buffer 1 not. */
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    CHECK_OK(hurray_buffer_list_push(list, &buf));
    CHECK_OK(hurray_buffer_list_push(list, &owned));
    static const uint8_t descriptor[8] = {'H', 'R', 'Y', 'D'};
    HurrayTensorContext *v5 = NULL, *v4 = NULL;
    CHECK_OK(hurray_tensor_context_new(5, descriptor, sizeof descriptor, NULL, NULL, &v5));
    CHECK_OK(hurray_tensor_context_new(4, descriptor, sizeof descriptor, NULL, NULL, &v4));
    CHECK_OK(hurray_tensor_context_buffer_flags(v5, list, 0, &flags));
    CHECK(flags == HURRAY_BUFFER_READONLY);
    CHECK_OK(hurray_tensor_context_buffer_flags(v5, list, 1, &flags));
    CHECK(flags == 0);
    /* Version 4 promises writable buffers and has no mark to read: the
     * context answers 0 whatever the buffer says. */
    CHECK_OK(hurray_tensor_context_buffer_flags(v4, list, 0, &flags));
    CHECK(flags == 0);

    flags = SENTINEL_U32;
    CHECK_FAIL(hurray_tensor_context_buffer_flags(v5, list, 2, &flags), HURRAY_ERROR_OUT_OF_RANGE,
               "index 2");
    CHECK_FAIL(hurray_tensor_context_buffer_flags(v4, list, UINT64_MAX, &flags),
               HURRAY_ERROR_OUT_OF_RANGE, "index");
    CHECK_FAIL(hurray_tensor_context_buffer_flags(NULL, list, 0, &flags),
               HURRAY_ERROR_NULL_ARGUMENT, "ctx");
    CHECK_FAIL(hurray_tensor_context_buffer_flags(v5, NULL, 0, &flags), HURRAY_ERROR_NULL_ARGUMENT,
               "list");
    CHECK_FAIL(hurray_tensor_context_buffer_flags(v5, list, 0, NULL), HURRAY_ERROR_NULL_ARGUMENT,
               "out");
    /* Contexts this build cannot read: refused from the header alone (each
     * fake is 8 bytes; the sanitizer build catches a read past them). */
    uint32_t *future = fake_context(HURRAY_TENSOR_CONTEXT_MAGIC, 6);
    CHECK_FAIL(hurray_tensor_context_buffer_flags((HurrayTensorContext *)(void *)future, list, 0,
                                                  &flags),
               HURRAY_ERROR_ABI_VERSION, "ABI version 6");
    free(future);
    uint32_t *nothing = fake_context(0, 5);
    CHECK_FAIL(hurray_tensor_context_buffer_flags((HurrayTensorContext *)(void *)nothing, list, 0,
                                                  &flags),
               HURRAY_ERROR_NOT_A_CONTEXT, "not a HurrayTensorContext");
    free(nothing);
    CHECK(flags == SENTINEL_U32);

    hurray_buffer_list_destroy(&list);
    hurray_tensor_context_destroy(&v5);
    hurray_tensor_context_destroy(&v4);
}

/* ---- messages are per thread ------------------------------------------ */

typedef struct MessageProbe {
    char seen_at_start[64];
    char seen_after_own_failure[512];
} MessageProbe;

static void *message_thread(void *arg)
{
    MessageProbe *probe = arg;
    snprintf(probe->seen_at_start, sizeof probe->seen_at_start, "%s", hurray_last_error_message());
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    const HurrayBuffer *got = NULL;
    CHECK_STATUS(hurray_buffer_list_get(list, 1234, &got), HURRAY_ERROR_OUT_OF_RANGE);
    hurray_buffer_list_destroy(&list);
    snprintf(probe->seen_after_own_failure, sizeof probe->seen_after_own_failure, "%s",
             hurray_last_error_message());
    return NULL;
}

static void test_messages_per_thread(void)
{
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    const HurrayBuffer *got = NULL;
    CHECK_FAIL(hurray_buffer_list_get(list, 777, &got), HURRAY_ERROR_OUT_OF_RANGE, "index 777");

    /* A successful call does not erase the last failure's message. */
    uint64_t len = 0;
    CHECK_OK(hurray_buffer_list_len(list, &len));
    CHECK(strstr(hurray_last_error_message(), "index 777") != NULL);

    MessageProbe probe;
    memset(&probe, 0, sizeof probe);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, message_thread, &probe) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(strcmp(probe.seen_at_start, "") == 0); /* a new thread starts clean */
    CHECK(strstr(probe.seen_after_own_failure, "index 1234") != NULL);
    /* The other thread's failure did not touch this thread's message. */
    CHECK(strstr(hurray_last_error_message(), "index 777") != NULL);
    CHECK(strstr(hurray_last_error_message(), "1234") == NULL);
    hurray_buffer_list_destroy(&list);
}

/* ---- exactly once, many times, on many threads ------------------------ */

static atomic_ulong total_created;
static atomic_ulong total_released;

static void total_release(void *arg)
{
    Counter *counter = arg;
    atomic_fetch_add(&counter->calls, 1);
    atomic_fetch_add(&total_released, 1);
}

/* One producer round: a borrowed buffer, an owned buffer, a list and a
 * context; everything destroyed; every release counted. */
static void cycle(unsigned long i, int thread_id)
{
    uint8_t storage[16];
    uint8_t descriptor[32];
    memset(descriptor, (int)(i & 0xFF), sizeof descriptor);
    Counter buffer_owner = {0};
    Counter context_owner = {0};

    HurrayBuffer *borrowed = NULL;
    CHECK_OK(hurray_buffer_from_ptr(storage, sizeof storage, total_release, &buffer_owner,
                                    &borrowed));
    HurrayBuffer *owned = NULL;
    CHECK_OK(hurray_buffer_new(64 + (i % 64), 64, &owned));
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    CHECK_OK(hurray_buffer_list_push(list, &borrowed));
    CHECK_OK(hurray_buffer_list_push(list, &owned));
    HurrayTensorContext *ctx = NULL;
    CHECK_OK(hurray_tensor_context_new(4, descriptor, sizeof descriptor, &context_owner,
                                       total_release, &ctx));
    atomic_fetch_add(&total_created, 2);

    uint32_t version = 0;
    CHECK_OK(hurray_tensor_context_abi_version(ctx, &version));
    CHECK(version == 4);
    const uint8_t *bytes = NULL;
    uint64_t len = 0;
    CHECK_OK(hurray_tensor_context_descriptor(ctx, &bytes, &len));
    CHECK(len == sizeof descriptor && bytes[31] == (uint8_t)(i & 0xFF));

    /* A failure naming this thread: its message must be this thread's. */
    const HurrayBuffer *got = NULL;
    uint64_t bad_index = 1000000u + (uint64_t)thread_id;
    CHECK_STATUS(hurray_buffer_list_get(list, bad_index, &got), HURRAY_ERROR_OUT_OF_RANGE);
    char expected[64];
    snprintf(expected, sizeof expected, "index %llu ", (unsigned long long)bad_index);
    CHECK(strstr(hurray_last_error_message(), expected) != NULL);

    hurray_tensor_context_destroy(&ctx);
    hurray_buffer_list_destroy(&list);
    CHECK(ctx == NULL && list == NULL);
    CHECK(atomic_load(&buffer_owner.calls) == 1);
    CHECK(atomic_load(&context_owner.calls) == 1);
}

static void test_many_cycles(void)
{
    unsigned long n = scaled(100000);
    for (unsigned long i = 0; i < n; i++) {
        Counter owner = {0};
        HurrayTensorContext *ctx = NULL;
        uint8_t descriptor[8] = {(uint8_t)i};
        CHECK_OK(hurray_tensor_context_new(4, descriptor, sizeof descriptor, &owner,
                                           counting_release, &ctx));
        hurray_tensor_context_destroy(&ctx);
        CHECK(ctx == NULL);
        CHECK(atomic_load(&owner.calls) == 1);

        Counter released = {0};
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_from_ptr(descriptor, sizeof descriptor, counting_release, &released,
                                        &buf));
        hurray_buffer_destroy(&buf);
        CHECK(buf == NULL);
        CHECK(atomic_load(&released.calls) == 1);
    }
}

enum { THREADS = 8 };

typedef struct Worker {
    int id;
    unsigned long cycles;
} Worker;

static void *worker_main(void *arg)
{
    Worker *worker = arg;
    for (unsigned long i = 0; i < worker->cycles; i++) {
        cycle(i, worker->id);
    }
    return NULL;
}

static void test_threads(void)
{
    pthread_t threads[THREADS];
    Worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t].id = t;
        workers[t].cycles = scaled(20000);
        CHECK(pthread_create(&threads[t], NULL, worker_main, &workers[t]) == 0);
    }
    for (int t = 0; t < THREADS; t++) {
        CHECK(pthread_join(threads[t], NULL) == 0);
    }
    CHECK(atomic_load(&total_created) == 2ul * THREADS * scaled(20000));
    CHECK(atomic_load(&total_released) == atomic_load(&total_created));
}

int main(void)
{
    const char *env = getenv("HURRAY_TEST_SCALE");
    if (env != NULL && env[0] != '\0') {
        char *end = NULL;
        unsigned long value = strtoul(env, &end, 10);
        if (*end != '\0' || value == 0) {
            fprintf(stderr, "test_core: HURRAY_TEST_SCALE must be a positive integer\n");
            return 2;
        }
        scale = value;
    }

    /* Before any failure on this thread the message is empty. */
    CHECK(hurray_last_error_message() != NULL);
    CHECK(strcmp(hurray_last_error_message(), "") == 0);

    test_status();
    test_buffer_from_ptr();
    test_buffer_new();
    test_buffer_list();
    test_tensor_context();
    test_fake_contexts();
    test_readonly_buffers();
    test_messages_per_thread();
    test_many_cycles();
    test_threads();

    checks_report("test_core");
    return 0;
}
