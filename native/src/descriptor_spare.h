/*
 * descriptor_spare.h -- internal: one freed descriptor block kept per thread
 * and handed to that thread's next allocation (ADR-051).
 *
 * An exchange decodes one descriptor and destroys it; the malloc and free of
 * its block were a third of decode plus destroy. hurray_descriptor_destroy
 * parks a block of at most HURRAY__SPARE_RANK dimensions in the thread's
 * slot when the slot is empty, and hurray__descriptor_alloc takes it back:
 * two thread-local loads and stores instead of malloc and free. Every block
 * of rank <= HURRAY__SPARE_RANK is allocated at the one spare size, so any
 * of them fits any such rank. A thread's parked block is freed when the
 * thread exits (a pthread key's destructor, set on the thread's first park)
 * or when the library is unloaded, for the thread that unloads it.
 *
 * Sanitizers keep seeing a use of a destroyed descriptor: under
 * AddressSanitizer the parked block is poisoned until it is taken again,
 * and under valgrind nothing is ever parked, so memcheck sees every free.
 *
 * Generic in the block (void *): this header does not know the
 * descriptor's layout; descriptor.h passes the size.
 */
#ifndef HURRAY_DESCRIPTOR_SPARE_H
#define HURRAY_DESCRIPTOR_SPARE_H

#include <stdbool.h>
#include <stddef.h>

/* Blocks with at most this many dimensions share the spare size. */
#define HURRAY__SPARE_RANK 4u

#if defined(__SANITIZE_ADDRESS__)
#define HURRAY__SPARE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HURRAY__SPARE_ASAN 1
#endif
#endif

#ifdef HURRAY__SPARE_ASAN
#include <sanitizer/asan_interface.h>
/* Under ASan a block too small for the spare size (its end is in the
 * redzone) is reported: unpoisoning the spare size of it at take would
 * hide an overflow past its end. */
#define HURRAY__SPARE_POISON(block, size)                     \
    do {                                                      \
        if (__asan_region_is_poisoned(block, size) != NULL) { \
            hurray__spare_too_small(block, size);             \
        }                                                     \
        ASAN_POISON_MEMORY_REGION(block, size);               \
    } while (0)
#define HURRAY__SPARE_UNPOISON(block, size) ASAN_UNPOISON_MEMORY_REGION(block, size)
__attribute__((visibility("hidden"), noreturn)) void hurray__spare_too_small(const void *block,
                                                                             size_t size);
#else
#define HURRAY__SPARE_POISON(block, size) ((void)(block), (void)(size))
#define HURRAY__SPARE_UNPOISON(block, size) ((void)(block), (void)(size))
#endif

/* initial-exec: an access is one %fs-relative load at an offset read from
 * the GOT, where the default (global-dynamic) calls __tls_get_addr. The
 * library is dlopen'ed (by Python), so its thread-local variables then live
 * in the static TLS surplus glibc reserves for such libraries; they take 16
 * bytes of it. Overridable for measuring (ADR-051). */
#ifndef HURRAY__SPARE_TLS_MODEL
#define HURRAY__SPARE_TLS_MODEL "initial-exec"
#endif
#define HURRAY__SPARE_TLS \
    _Thread_local __attribute__((tls_model(HURRAY__SPARE_TLS_MODEL), visibility("hidden")))

/* A thread's state: whether it may park. */
enum {
    HURRAY__SPARE_NEW = 0, /* nothing parked yet: the first park registers the thread */
    HURRAY__SPARE_ON = 1,  /* registered: its exit frees the parked block */
    HURRAY__SPARE_OFF = 2  /* never park: under valgrind, out of keys, or the thread is exiting */
};

/* The thread's parked block (poisoned under ASan), or NULL. */
extern HURRAY__SPARE_TLS void *hurray__spare_block;
extern HURRAY__SPARE_TLS unsigned char hurray__spare_state;

/* The first park of a thread (state NEW), or a park when the slot is full
 * or the thread may not park: parks `block` if it may and reports whether it
 * did. Out of line: it runs once per thread, or when the fast path says no. */
__attribute__((visibility("hidden"))) bool hurray__spare_park_slow(void *block, size_t size);

/* The thread's parked block, unpoisoned and no longer parked, or NULL (then
 * the caller mallocs `size` bytes). */
static inline __attribute__((always_inline)) void *hurray__spare_take(size_t size)
{
    void *block = hurray__spare_block;
    if (block != NULL) {
        hurray__spare_block = NULL;
        HURRAY__SPARE_UNPOISON(block, size);
    }
    return block;
}

/* Parks `block` (`size` bytes, of at most HURRAY__SPARE_RANK dimensions) in
 * the thread's slot if the slot is empty and the thread may park; true if
 * it did, and false if the caller must free it. */
static inline __attribute__((always_inline)) bool hurray__spare_park(void *block, size_t size)
{
    if (__builtin_expect(hurray__spare_state == HURRAY__SPARE_ON && hurray__spare_block == NULL,
                         1)) {
        HURRAY__SPARE_POISON(block, size);
        hurray__spare_block = block;
        return true;
    }
    return hurray__spare_park_slow(block, size);
}

#endif /* HURRAY_DESCRIPTOR_SPARE_H */
