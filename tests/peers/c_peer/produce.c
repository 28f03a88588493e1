/*
 * produce.c -- the C peer as a producer: its tensors live in its own
 * malloc'd memory, and its own release functions free them, counted.
 *
 * Every allocation handed to hurray-ffi gets a slot in a fixed table; the
 * release callback receives the slot number (not a pointer), so a second
 * release of the same slot, or a release of a slot never handed out, is
 * detected and counted instead of freeing twice.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#define SLOT_COUNT 16384
#define MAX_ENCODED (32 + 16 * HURRAY_MAX_RANK + 16 * HURRAY_MAX_PARTS)

enum { SLOT_UNUSED = 0, SLOT_LIVE = 1, SLOT_RELEASED = 2 };
enum { KIND_BUFFER = 1, KIND_OWNER = 2 };

typedef struct Slot {
    atomic_int state;
    int kind;
    void *memory;
} Slot;

static Slot slots[SLOT_COUNT];
static atomic_uint next_slot = 1; /* slot 0 is never used: a NULL context is a bug */
static atomic_ullong counts[5];   /* in PeerCounters order */

enum { BUFFERS_MADE, BUFFERS_RELEASED, OWNERS_MADE, OWNERS_RELEASED, BAD_RELEASES };

static void count(int which)
{
    atomic_fetch_add_explicit(&counts[which], 1, memory_order_relaxed);
}

void peer_counters(PeerCounters *out)
{
    out->buffers_made = atomic_load(&counts[BUFFERS_MADE]);
    out->buffers_released = atomic_load(&counts[BUFFERS_RELEASED]);
    out->owners_made = atomic_load(&counts[OWNERS_MADE]);
    out->owners_released = atomic_load(&counts[OWNERS_RELEASED]);
    out->bad_releases = atomic_load(&counts[BAD_RELEASES]);
}

/* Claims a slot for memory; 0 when the table is full. */
static unsigned claim_slot(int kind, void *memory)
{
    unsigned index = atomic_fetch_add(&next_slot, 1);
    if (index >= SLOT_COUNT) {
        return 0;
    }
    slots[index].kind = kind;
    slots[index].memory = memory;
    atomic_store(&slots[index].state, SLOT_LIVE);
    count(kind == KIND_BUFFER ? BUFFERS_MADE : OWNERS_MADE);
    return index;
}

static void release_slot(void *context, int kind)
{
    uintptr_t index = (uintptr_t)context;
    if (index == 0 || index >= SLOT_COUNT || slots[index].kind != kind) {
        count(BAD_RELEASES);
        return;
    }
    int expected = SLOT_LIVE;
    if (!atomic_compare_exchange_strong(&slots[index].state, &expected, SLOT_RELEASED)) {
        count(BAD_RELEASES); /* released twice */
        return;
    }
    free(slots[index].memory);
    slots[index].memory = NULL;
    count(kind == KIND_BUFFER ? BUFFERS_RELEASED : OWNERS_RELEASED);
}

/* The release handed to hurray_buffer_from_ptr. */
static void peer_release_buffer(void *context)
{
    release_slot(context, KIND_BUFFER);
}

/* The owner_release handed to hurray_tensor_context_new. */
static void peer_release_owner(void *owner)
{
    release_slot(owner, KIND_OWNER);
}

/* What the peer keeps about a tensor it exported: the context's owner. */
typedef struct PeerTensorRecord {
    uint32_t buffer_count;
    uint64_t descriptor_len;
} PeerTensorRecord;

static HurrayStatus build_descriptor(const PeerRecipe *r, uint8_t *encoded, uint64_t *encoded_len)
{
    HurrayDescriptor *desc = NULL;
    HurrayStatus status = hurray_descriptor_new(r->dtype, r->rank, r->shape, &desc);
    if (status == HURRAY_OK && r->strides != NULL) {
        status = hurray_descriptor_set_strides(desc, r->rank, r->strides);
    }
    if (status == HURRAY_OK && r->byte_order != HURRAY_BYTE_ORDER_LITTLE) {
        status = hurray_descriptor_set_byte_order(desc, r->byte_order);
    }
    if (status == HURRAY_OK && r->packing >= 0) {
        status = hurray_descriptor_set_packing(desc, (uint32_t)r->packing);
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_set_quantization(desc, r->scheme, r->granularity, r->axis,
                                                    r->block_size, r->ggml_type);
    }
    for (uint32_t i = 0; status == HURRAY_OK && i < r->part_count; i++) {
        const PeerPartSpec *p = &r->parts[i];
        status = hurray_descriptor_set_part(desc, p->role, p->dtype, p->buffer_index,
                                            p->byte_offset, p->layout);
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_validate(desc);
    }
    if (status == HURRAY_OK) {
        status = hurray_descriptor_encode(desc, encoded, MAX_ENCODED, encoded_len);
    }
    if (status != HURRAY_OK) {
        peer_set_message("building the descriptor: %s", hurray_last_error_message());
    }
    hurray_descriptor_destroy(&desc);
    return status;
}

/* One buffer of the peer's own: malloc'd, filled, wrapped with a counted
 * release. On failure the memory is freed and nothing is counted as made. */
static HurrayStatus wrap_copy(const uint8_t *bytes, uint64_t len, HurrayBuffer **out)
{
    void *memory = malloc(len == 0 ? 1 : (size_t)len);
    if (memory == NULL) {
        peer_set_message("cannot allocate %llu bytes", (unsigned long long)len);
        return HURRAY_ERROR_NO_MEMORY;
    }
    if (len != 0) {
        memcpy(memory, bytes, (size_t)len);
    }
    unsigned slot = claim_slot(KIND_BUFFER, memory);
    if (slot == 0) {
        free(memory);
        peer_set_message("the peer's slot table is full");
        return HURRAY_ERROR_NO_MEMORY;
    }
    HurrayStatus status = hurray_buffer_from_ptr(memory, len, peer_release_buffer,
                                                 (void *)(uintptr_t)slot, out);
    if (status != HURRAY_OK) {
        peer_set_message("wrapping a buffer: %s", hurray_last_error_message());
        peer_release_buffer((void *)(uintptr_t)slot); /* the buffer never took it */
    }
    return status;
}

HurrayStatus peer_produce(const PeerRecipe *r, HurrayBufferList **out_list,
                          HurrayTensorContext **out_ctx)
{
    uint8_t encoded[MAX_ENCODED];
    uint64_t encoded_len = 0;
    HurrayStatus status = build_descriptor(r, encoded, &encoded_len);
    if (status != HURRAY_OK) {
        return status;
    }
    HurrayBufferList *list = NULL;
    status = hurray_buffer_list_new(&list);
    if (status != HURRAY_OK) {
        peer_set_message("making the list: %s", hurray_last_error_message());
        return status;
    }
    for (uint32_t i = 0; i < r->buffer_count; i++) {
        HurrayBuffer *buf = NULL;
        status = wrap_copy(r->buffers[i], r->buffer_lens[i], &buf);
        if (status != HURRAY_OK) {
            hurray_buffer_list_destroy(&list);
            return status;
        }
#if PEER_KNOWS_READONLY
        if (r->readonly) {
            (void)hurray_buffer_mark_readonly(buf);
        }
#else
        if (r->readonly) {
            hurray_buffer_destroy(&buf);
            hurray_buffer_list_destroy(&list);
            peer_set_message("C ABI %d cannot mark a buffer read-only", HURRAY_C_ABI_VERSION);
            return HURRAY_ERROR_UNSUPPORTED;
        }
#endif
        status = hurray_buffer_list_push(list, &buf);
        if (status != HURRAY_OK) {
            peer_set_message("pushing a buffer: %s", hurray_last_error_message());
            hurray_buffer_destroy(&buf);
            hurray_buffer_list_destroy(&list);
            return status;
        }
    }
    PeerTensorRecord *record = malloc(sizeof *record);
    unsigned slot = record == NULL ? 0 : claim_slot(KIND_OWNER, record);
    if (slot == 0) {
        free(record);
        hurray_buffer_list_destroy(&list);
        peer_set_message("cannot allocate the owner record");
        return HURRAY_ERROR_NO_MEMORY;
    }
    record->buffer_count = r->buffer_count;
    record->descriptor_len = encoded_len;
    HurrayTensorContext *ctx = NULL;
    status = hurray_tensor_context_new(HURRAY_C_ABI_VERSION, encoded, encoded_len,
                                       (void *)(uintptr_t)slot, peer_release_owner, &ctx);
    if (status != HURRAY_OK) {
        peer_set_message("making the context: %s", hurray_last_error_message());
        peer_release_owner((void *)(uintptr_t)slot); /* the context never took it */
        hurray_buffer_list_destroy(&list);
        return status;
    }
    *out_list = list;
    *out_ctx = ctx;
    return HURRAY_OK;
}
