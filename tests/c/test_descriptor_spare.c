/*
 * test_descriptor_spare.c -- the per-thread spare descriptor block
 * (native/src/descriptor_spare.h, ADR-051), through hurray.h alone.
 *
 * Run with no argument, it checks that a destroyed block of rank <= 4
 * serves the thread's next decode or build with every field right, that
 * no larger block is kept, that blocks move between threads freely and
 * that many threads exit without leaking (the sanitizers' leak check and
 * valgrind's judge that). With "no-spare" (under valgrind, where the
 * library must keep no spare) it checks that no block is ever reused.
 * With "use-after-destroy" it reads a destroyed descriptor, which
 * AddressSanitizer and valgrind must report (tests/test_core_descriptor_spare_c.py).
 */
#include "hurray.h"

#include "check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 24
#define ROUNDS 50

/* Whether destroy is expected to keep a block for the next decode. */
static int spare_expected = 1;

/* A descriptor's encoding. */
typedef struct Encoded {
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t len;
    uint32_t rank;
} Encoded;

/* The encoding of a float32 descriptor of the given rank (dimensions 2, 3,
 * 4, ...); big-endian ones take the full decode instead of the quick one. */
static Encoded encoded(uint32_t rank, uint32_t byte_order)
{
    uint64_t shape[8];
    for (uint32_t k = 0; k < rank; k++) {
        shape[k] = 2 + k;
    }
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, rank, shape, &desc));
    CHECK_OK(hurray_descriptor_set_byte_order(desc, byte_order));
    Encoded e = {.rank = rank};
    CHECK_OK(hurray_descriptor_encode(desc, e.bytes, sizeof e.bytes, &e.len));
    hurray_descriptor_destroy(&desc);
    CHECK(desc == NULL);
    return e;
}

/* A block's address, kept as a number: compared after the block is gone. */
static uintptr_t address(const HurrayDescriptor *desc)
{
    return (uintptr_t)desc;
}

/* `desc` is the descriptor `e` encodes: every field read back, the shape
 * and strides arrays in the block, one after the other, and the same
 * bytes encoded again. */
static void check_is(const HurrayDescriptor *desc, const Encoded *e)
{
    uint32_t rank = 0;
    CHECK_OK(hurray_descriptor_rank(desc, &rank));
    CHECK(rank == e->rank);
    const uint64_t *shape = NULL;
    const int64_t *strides = NULL;
    CHECK_OK(hurray_descriptor_shape(desc, &shape));
    CHECK_OK(hurray_descriptor_strides(desc, &strides));
    CHECK((uintptr_t)shape > address(desc) && (uintptr_t)shape < address(desc) + 1024);
    CHECK((const void *)strides == (const void *)(shape + rank));
    int64_t stride = 1;
    for (uint32_t k = rank; k-- > 0;) {
        CHECK(shape[k] == 2 + k);
        CHECK(strides[k] == stride);
        stride *= (int64_t)shape[k];
    }
    uint32_t dtype = 0;
    CHECK_OK(hurray_descriptor_dtype(desc, &dtype));
    CHECK(dtype == HURRAY_DTYPE_FLOAT32);
    uint32_t scheme = 99, granularity = 99, axis = 99, ggml = 99;
    uint64_t block_size = 99;
    CHECK_OK(hurray_descriptor_quantization(desc, &scheme, &granularity, &axis, &block_size,
                                            &ggml));
    CHECK(scheme == HURRAY_SCHEME_NONE && granularity == HURRAY_GRANULARITY_NONE && axis == 0 &&
          block_size == 0 && ggml == 0);
    uint64_t buffers = 0;
    CHECK_OK(hurray_descriptor_buffer_count(desc, &buffers));
    CHECK(buffers == 1);
    uint8_t again[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t len = 0;
    CHECK_OK(hurray_descriptor_encode(desc, again, sizeof again, &len));
    CHECK(len == e->len && memcmp(again, e->bytes, len) == 0);
}

static HurrayDescriptor *decode(const Encoded *e)
{
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_decode(e->bytes, e->len, &desc));
    CHECK(desc != NULL);
    check_is(desc, e);
    return desc;
}

/* The next block is (or, without a spare, is not) the one destroyed last. */
static void check_reused(const HurrayDescriptor *next, uintptr_t destroyed)
{
    if (spare_expected) {
        CHECK(address(next) == destroyed);
    } else {
        CHECK(address(next) != destroyed);
    }
}

/* ---- one thread ------------------------------------------------------- */

static void reuse_within_a_thread(void)
{
    for (uint32_t order = HURRAY_BYTE_ORDER_LITTLE; order <= HURRAY_BYTE_ORDER_BIG; order++) {
        for (uint32_t rank = 0; rank <= 4; rank++) {
            for (uint32_t next = 0; next <= 4; next++) {
                Encoded a = encoded(rank, order), b = encoded(next, order);
                HurrayDescriptor *desc = decode(&a);
                uintptr_t was = address(desc);
                hurray_descriptor_destroy(&desc);
                CHECK(desc == NULL);
                desc = decode(&b);
                check_reused(desc, was);
                hurray_descriptor_destroy(&desc);
            }
        }
    }
}

/* A built descriptor's block serves a decode of rank 4 (so it was made at
 * the spare size, whatever its rank: ASan sees any write past its end),
 * and a decoded one serves a build. */
static void reuse_between_build_and_decode(void)
{
    const uint64_t shape[1] = {7};
    for (uint32_t order = HURRAY_BYTE_ORDER_LITTLE; order <= HURRAY_BYTE_ORDER_BIG; order++) {
        Encoded four = encoded(4, order);
        HurrayDescriptor *built = NULL;
        CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_UINT8, 1, shape, &built));
        uintptr_t was = address(built);
        hurray_descriptor_destroy(&built);
        HurrayDescriptor *desc = decode(&four);
        check_reused(desc, was);
        was = address(desc);
        hurray_descriptor_destroy(&desc);
        CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_UINT8, 1, shape, &built));
        check_reused(built, was);
        uint32_t rank = 0;
        const uint64_t *got = NULL;
        CHECK_OK(hurray_descriptor_rank(built, &rank));
        CHECK_OK(hurray_descriptor_shape(built, &got));
        CHECK(rank == 1 && got[0] == 7);
        CHECK_OK(hurray_descriptor_validate(built));
        hurray_descriptor_destroy(&built);
    }
}

/* A block of rank 5 or more is freed, never kept: had it been, the next
 * decode (of rank 1) would be handed it. */
static void larger_blocks_are_not_kept(void)
{
    Encoded one = encoded(1, HURRAY_BYTE_ORDER_LITTLE);
    for (uint32_t rank = 5; rank <= 8; rank++) {
        Encoded big = encoded(rank, rank % 2 ? HURRAY_BYTE_ORDER_BIG : HURRAY_BYTE_ORDER_LITTLE);
        /* The spare, if any, is taken first, so that the slot is empty. */
        HurrayDescriptor *small = decode(&one);
        HurrayDescriptor *desc = decode(&big);
        uintptr_t was = address(desc);
        hurray_descriptor_destroy(&desc);
        desc = decode(&one);
        CHECK(address(desc) != was);
        hurray_descriptor_destroy(&desc);
        hurray_descriptor_destroy(&small);
    }
}

/* Only one block is kept: of two destroyed, one is freed, and the next two
 * decodes get the kept one and a new one. */
static void one_block_is_kept(void)
{
    Encoded two = encoded(2, HURRAY_BYTE_ORDER_LITTLE);
    HurrayDescriptor *a = decode(&two), *b = decode(&two);
    uintptr_t was_a = address(a);
    hurray_descriptor_destroy(&a);
    hurray_descriptor_destroy(&b);
    a = decode(&two);
    check_reused(a, was_a);
    b = decode(&two);
    CHECK(address(b) != address(a));
    hurray_descriptor_destroy(&b);
    hurray_descriptor_destroy(&a);
}

/* ---- threads ---------------------------------------------------------- */

typedef struct Handoff {
    const Encoded *encoding;
    HurrayDescriptor *desc; /* handed between the threads */
    uintptr_t was;
} Handoff;

/* Destroys a descriptor another thread made, then decodes one: it gets that
 * block (its own slot was empty), and exits with its own decode's block
 * kept, which the thread's exit must free. */
static void *destroy_foreign(void *arg)
{
    Handoff *h = arg;
    h->was = address(h->desc);
    hurray_descriptor_destroy(&h->desc);
    HurrayDescriptor *desc = decode(h->encoding);
    check_reused(desc, h->was);
    hurray_descriptor_destroy(&desc);
    return NULL;
}

/* Makes a descriptor for another thread to destroy. */
static void *make_for_another(void *arg)
{
    Handoff *h = arg;
    h->desc = decode(h->encoding);
    return NULL;
}

static void threads_hand_descriptors_over(void)
{
    Encoded three = encoded(3, HURRAY_BYTE_ORDER_LITTLE);
    Handoff h = {.encoding = &three};
    h.desc = decode(&three);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, destroy_foreign, &h) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(h.desc == NULL);

    CHECK(pthread_create(&thread, NULL, make_for_another, &h) == 0);
    CHECK(pthread_join(thread, NULL) == 0);
    CHECK(h.desc != NULL);
    check_is(h.desc, &three);
    hurray_descriptor_destroy(&h.desc);
    CHECK(h.desc == NULL);
}

/* Decodes and destroys descriptors of ranks 0 to 6 and exits, most often
 * with a block kept. */
static void *churn(void *arg)
{
    const Encoded *encodings = arg;
    HurrayDescriptor *held[3] = {NULL, NULL, NULL};
    for (int round = 0; round < ROUNDS; round++) {
        for (int k = 0; k < 3; k++) {
            held[k] = decode(&encodings[(round + 2 * k) % 14]);
        }
        for (int k = 0; k < 3; k++) {
            hurray_descriptor_destroy(&held[k]);
        }
    }
    return NULL;
}

static void many_threads_exit(void)
{
    Encoded encodings[14];
    for (uint32_t k = 0; k < 14; k++) {
        encodings[k] = encoded(k % 7, k < 7 ? HURRAY_BYTE_ORDER_LITTLE : HURRAY_BYTE_ORDER_BIG);
    }
    for (int wave = 0; wave < 3; wave++) {
        pthread_t threads[THREADS];
        for (int t = 0; t < THREADS; t++) {
            CHECK(pthread_create(&threads[t], NULL, churn, encodings) == 0);
        }
        for (int t = 0; t < THREADS; t++) {
            CHECK(pthread_join(threads[t], NULL) == 0);
        }
    }
}

/* ---- a use after destroy ---------------------------------------------- */

/* Reads a destroyed descriptor through the library. A defect on purpose:
 * AddressSanitizer (the kept block is poisoned) and valgrind (nothing is
 * kept under it, so the block is freed) must report it. */
static int use_after_destroy(void)
{
    Encoded two = encoded(2, HURRAY_BYTE_ORDER_LITTLE);
    HurrayDescriptor *desc = decode(&two);
    HurrayDescriptor *stale = desc;
    hurray_descriptor_destroy(&desc);
    uint32_t rank = 0;
    HurrayStatus status = hurray_descriptor_rank(stale, &rank);
    printf("read rank %u (status %d) from a destroyed descriptor\n", (unsigned)rank, (int)status);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "use-after-destroy") == 0) {
        return use_after_destroy();
    }
    if (argc > 1 && strcmp(argv[1], "no-spare") == 0) {
        spare_expected = 0;
    } else if (argc > 1) {
        fprintf(stderr, "usage: %s [no-spare | use-after-destroy]\n", argv[0]);
        return 2;
    }
    reuse_within_a_thread();
    reuse_between_build_and_decode();
    larger_blocks_are_not_kept();
    one_block_is_kept();
    threads_hand_descriptors_over();
    many_threads_exit();
    /* The main thread ends with a block kept: it stays reachable from the
     * thread's slot until the library's unload frees it. */
    Encoded one = encoded(1, HURRAY_BYTE_ORDER_LITTLE);
    HurrayDescriptor *last = decode(&one);
    hurray_descriptor_destroy(&last);
    checks_report("test_descriptor_spare");
    return 0;
}
