/*
 * buffer_list.c -- HurrayBufferList: the buffers of one tensor, in order.
 *
 * The list owns the buffers pushed into it and destroys them, in push
 * order, when it is destroyed. Indices are stable: a buffer's index is the
 * number of buffers pushed before it, which is what descriptor parts refer
 * to.
 */
#include "status.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct HurrayBufferList {
    HurrayBuffer **items;
    uint64_t len;
    uint64_t capacity;
};

HurrayStatus hurray_buffer_list_new(HurrayBufferList **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_new: out is NULL");
    }
    HurrayBufferList *list = malloc(sizeof *list);
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "hurray_buffer_list_new: cannot allocate the list handle");
    }
    list->items = NULL;
    list->len = 0;
    list->capacity = 0;
    *out = list;
    return HURRAY_OK;
}

/* Makes room for one more item, doubling the capacity. Leaves the list
 * unchanged on failure. */
static HurrayStatus grow(HurrayBufferList *list)
{
    uint64_t capacity = list->capacity == 0 ? 4 : list->capacity;
    if (list->capacity != 0 && __builtin_mul_overflow(list->capacity, 2, &capacity)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "hurray_buffer_list_push: the list cannot grow past %llu buffers",
                            (unsigned long long)list->capacity);
    }
    size_t bytes;
    if (capacity > SIZE_MAX ||
        __builtin_mul_overflow((size_t)capacity, sizeof *list->items, &bytes)) {
        return hurray__fail(HURRAY_ERROR_OVERFLOW,
                            "hurray_buffer_list_push: %llu buffer slots do not fit in memory",
                            (unsigned long long)capacity);
    }
    HurrayBuffer **items = realloc(list->items, bytes);
    if (items == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                            "hurray_buffer_list_push: cannot grow the list to %llu buffers",
                            (unsigned long long)capacity);
    }
    list->items = items;
    list->capacity = capacity;
    return HURRAY_OK;
}

/* Takes the buffer: on success the list owns it and *buf is set to NULL.
 * On failure *buf is untouched and the buffer is still the caller's.
 * A handle the list already holds is refused: owning it twice would free
 * it twice. */
HurrayStatus hurray_buffer_list_push(HurrayBufferList *list, HurrayBuffer **buf)
{
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_push: list is NULL");
    }
    if (buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_push: buf is NULL");
    }
    if (*buf == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_buffer_list_push: *buf is NULL (no buffer to push)");
    }
    /* A linear scan: a tensor has a handful of buffers (at most
     * HURRAY_MAX_PARTS in any valid descriptor). */
    for (uint64_t i = 0; i < list->len; i++) {
        if (list->items[i] == *buf) {
            return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                                "hurray_buffer_list_push: *buf is already in the list, at "
                                "index %llu",
                                (unsigned long long)i);
        }
    }
    if (list->len == list->capacity) {
        HURRAY__TRY(grow(list));
    }
    list->items[list->len] = *buf;
    list->len += 1;
    *buf = NULL;
    return HURRAY_OK;
}

HurrayStatus hurray_buffer_list_len(const HurrayBufferList *list, uint64_t *out)
{
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_len: list is NULL");
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_len: out is NULL");
    }
    *out = list->len;
    return HURRAY_OK;
}

/* The buffer is borrowed: it lives as long as the list. */
HurrayStatus hurray_buffer_list_get(const HurrayBufferList *list, uint64_t index,
                                    const HurrayBuffer **out)
{
    if (list == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_get: list is NULL");
    }
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_buffer_list_get: out is NULL");
    }
    if (index >= list->len) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_buffer_list_get: index %llu is out of range for a list of "
                            "%llu buffers",
                            (unsigned long long)index, (unsigned long long)list->len);
    }
    *out = list->items[index];
    return HURRAY_OK;
}

void hurray_buffer_list_destroy(HurrayBufferList **list)
{
    if (list == NULL || *list == NULL) {
        return;
    }
    HurrayBufferList *l = *list;
    *list = NULL;
    for (uint64_t i = 0; i < l->len; i++) {
        hurray_buffer_destroy(&l->items[i]);
    }
    free(l->items);
    free(l);
}
