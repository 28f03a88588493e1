/*
 * descriptor_spare.c -- the slow half of the per-thread spare descriptor
 * block (descriptor_spare.h, ADR-051): a thread's first park, its exit, and
 * the library's unload.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "descriptor_spare.h"

/* Under valgrind nothing is parked, so memcheck sees every descriptor's
 * free and reports a use after destroy (as CPython turns off its own small
 * object allocator there). Without the header the spare stays on. */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define UNDER_VALGRIND() (RUNNING_ON_VALGRIND != 0)
#endif
#endif
#ifndef UNDER_VALGRIND
#define UNDER_VALGRIND() 0
#endif

HURRAY__SPARE_TLS void *hurray__spare_block;
HURRAY__SPARE_TLS unsigned char hurray__spare_state;

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_made; /* written once, under key_once */

/* Frees the calling thread's parked block, if any, and stops it parking:
 * a destroy after this (another library's exit code) frees at once. */
static void release_this_thread(void)
{
    hurray__spare_state = HURRAY__SPARE_OFF;
    void *block = hurray__spare_block;
    hurray__spare_block = NULL;
    /* Poisoned under ASan, which frees it as any other block. */
    free(block);
}

/* The key's destructor: runs in a thread that exits having registered
 * (glibc runs it only for a non-NULL value, and the value is never reset). */
static void release_at_thread_exit(void *unused)
{
    (void)unused;
    release_this_thread();
}

static void make_key(void)
{
    key_made = pthread_key_create(&key, release_at_thread_exit) == 0;
}

/* Whether the calling thread may park: not under valgrind, and only once
 * its exit is sure to free what it parks. */
static int register_thread(void)
{
    if (UNDER_VALGRIND()) {
        return 0;
    }
    if (pthread_once(&key_once, make_key) != 0 || !key_made) {
        return 0;
    }
    /* Any non-NULL value: the key's destructor runs only for those. */
    return pthread_setspecific(key, &key) == 0;
}

bool hurray__spare_park_slow(void *block, size_t size)
{
    if (hurray__spare_state == HURRAY__SPARE_NEW) {
        hurray__spare_state = register_thread() ? HURRAY__SPARE_ON : HURRAY__SPARE_OFF;
    }
    if (hurray__spare_state != HURRAY__SPARE_ON || hurray__spare_block != NULL) {
        return false;
    }
    HURRAY__SPARE_POISON(block, size);
    hurray__spare_block = block;
    return true;
}

#ifdef HURRAY__SPARE_ASAN
void hurray__spare_too_small(const void *block, size_t size)
{
    fprintf(stderr,
            "hurray: internal error: descriptor block %p parked as a spare is smaller than the "
            "spare size (%zu bytes)\n",
            block, size);
    abort();
}
#endif

/* At unload (dlclose, or exit): the key goes, so no thread's exit calls
 * into unmapped code; the unloading thread's block is freed. Blocks parked
 * by other threads still alive then are lost: a few hundred bytes each, in
 * a process that unloads the library while its threads still run. */
__attribute__((destructor)) static void release_at_unload(void)
{
    if (key_made) {
        pthread_key_delete(key);
        key_made = 0;
    }
    release_this_thread();
}
