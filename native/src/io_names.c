/*
 * io_names.c -- names and metadata keys of hurray-io: UTF-8 validation and a
 * small hash set that refuses duplicates, so a reader and a writer agree on
 * what a name is (docs/impl/io-format.md, "Names").
 */
#include "io_format.h"
#include "status.h"

#include <stdlib.h>
#include <string.h>

int hurray__utf8_valid(const uint8_t *s, uint64_t len)
{
    uint64_t i = 0;
    while (i < len) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i += 1;
            continue;
        }
        uint32_t cp;
        uint64_t n;
        uint32_t min;
        if ((c & 0xE0) == 0xC0) {
            cp = c & 0x1F, n = 2, min = 0x80;
        } else if ((c & 0xF0) == 0xE0) {
            cp = c & 0x0F, n = 3, min = 0x800;
        } else if ((c & 0xF8) == 0xF0) {
            cp = c & 0x07, n = 4, min = 0x10000;
        } else {
            return 0;
        }
        if (len - i < n) {
            return 0;
        }
        for (uint64_t k = 1; k < n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return 0;
        }
        i += n;
    }
    return 1;
}

/* Open addressing, linear probing, at most half full. */
typedef struct Slot {
    const uint8_t *bytes;
    uint64_t len;
    uint64_t value;
    uint64_t hash;
    int used;
} Slot;

struct HurrayNameSet {
    Slot *slots;
    uint64_t capacity; /* a power of two */
    uint64_t count;
};

HurrayStatus hurray__name_set_new(HurrayNameSet **out)
{
    HurrayNameSet *set = malloc(sizeof *set);
    Slot *slots = calloc(16, sizeof *slots);
    if (set == NULL || slots == NULL) {
        free(set);
        free(slots);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "cannot allocate a name set");
    }
    set->slots = slots;
    set->capacity = 16;
    set->count = 0;
    *out = set;
    return HURRAY_OK;
}

static Slot *probe(Slot *slots, uint64_t capacity, const uint8_t *bytes, uint64_t len,
                   uint64_t hash)
{
    uint64_t i = hash & (capacity - 1);
    for (;;) {
        Slot *s = &slots[i];
        if (!s->used) {
            return s;
        }
        if (s->hash == hash && s->len == len && (len == 0 || memcmp(s->bytes, bytes, len) == 0)) {
            return s;
        }
        i = (i + 1) & (capacity - 1);
    }
}

static int grow(HurrayNameSet *set)
{
    uint64_t capacity = set->capacity * 2;
    if (capacity > SIZE_MAX / sizeof(Slot)) {
        return 0;
    }
    Slot *slots = calloc((size_t)capacity, sizeof *slots);
    if (slots == NULL) {
        return 0;
    }
    for (uint64_t i = 0; i < set->capacity; i++) {
        Slot *old = &set->slots[i];
        if (old->used) {
            *probe(slots, capacity, old->bytes, old->len, old->hash) = *old;
        }
    }
    free(set->slots);
    set->slots = slots;
    set->capacity = capacity;
    return 1;
}

int hurray__name_set_add(HurrayNameSet *set, const uint8_t *bytes, uint64_t len, uint64_t value,
                         uint64_t *out_existing)
{
    if ((set->count + 1) * 2 > set->capacity && !grow(set)) {
        return -1;
    }
    uint64_t hash = hurray__hash(bytes, (size_t)len);
    Slot *s = probe(set->slots, set->capacity, bytes, len, hash);
    if (s->used) {
        *out_existing = s->value;
        return 0;
    }
    *s = (Slot){.bytes = bytes, .len = len, .value = value, .hash = hash, .used = 1};
    set->count += 1;
    return 1;
}

int hurray__name_set_find(const HurrayNameSet *set, const uint8_t *bytes, uint64_t len,
                          uint64_t *out_value)
{
    uint64_t hash = hurray__hash(bytes, (size_t)len);
    Slot *s = probe(set->slots, set->capacity, bytes, len, hash);
    if (!s->used) {
        return 0;
    }
    *out_value = s->value;
    return 1;
}

void hurray__name_set_destroy(HurrayNameSet **set)
{
    if (set == NULL || *set == NULL) {
        return;
    }
    free((*set)->slots);
    free(*set);
    *set = NULL;
}
