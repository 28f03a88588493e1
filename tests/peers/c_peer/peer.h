/*
 * peer.h -- the C peer: a small program's worth of C that speaks the native
 * protocol through hurray-ffi alone (ADR-023's "hurray-ffi consumer").
 *
 * produce.c and consume.c are plain C against hurray.h; module.c is the thin
 * Python C-API layer that moves handles in and out of "hurray_tensor"
 * capsules, as any C extension built on hurray-ffi would.
 */
#ifndef HURRAY_C_PEER_H
#define HURRAY_C_PEER_H

#include <stdint.h>

#include "hurray.h"

/* The peer is built against the current header (an ABI-5 peer) or against
 * the frozen header of ABI 4 (tests/peers/abi4/, the c-peer-abi4 build): it
 * reads the context versions its header knows, and read-only marks only
 * where its header has them (ADR-059). */
#if HURRAY_C_ABI_VERSION >= 5
#define PEER_MIN_ABI HURRAY_C_ABI_MIN_VERSION
#define PEER_KNOWS_READONLY 1
#else
#define PEER_MIN_ABI HURRAY_C_ABI_VERSION
#define PEER_KNOWS_READONLY 0
#endif

/* ---- producing (produce.c) --------------------------------------------- */

typedef struct PeerPartSpec {
    uint32_t role;
    uint32_t dtype;
    uint64_t buffer_index;
    uint64_t byte_offset;
    uint32_t layout;
} PeerPartSpec;

/* A tensor as the peer's own caller describes it. Buffer bytes are copied
 * into memory the peer allocates and owns; the caller keeps its arrays. */
typedef struct PeerRecipe {
    uint32_t dtype;
    uint32_t rank;
    const uint64_t *shape;
    const int64_t *strides; /* NULL: row-major contiguous */
    uint32_t byte_order;
    int32_t packing; /* -1: the library's default for the dtype */
    uint32_t scheme;
    uint32_t granularity;
    uint32_t axis;
    uint64_t block_size;
    uint32_t ggml_type;
    uint32_t part_count;
    PeerPartSpec parts[HURRAY_MAX_PARTS];
    uint32_t buffer_count;
    const uint8_t *const *buffers;
    const uint64_t *buffer_lens;
    int readonly; /* mark every buffer read-only (ABI 5 only) */
} PeerRecipe;

/* Builds the descriptor with the hurray-ffi builder, copies every buffer
 * into malloc'd memory wrapped by hurray_buffer_from_ptr (with a counted
 * release), and makes a context whose owner is a record of the peer's own
 * (with a counted owner_release). On failure nothing is left allocated. */
HurrayStatus peer_produce(const PeerRecipe *recipe, HurrayBufferList **out_list,
                          HurrayTensorContext **out_ctx);

/* How many of each kind of allocation the peer made and how many its
 * release functions freed; bad_releases counts a release of something
 * already released or never made (it must stay 0). */
typedef struct PeerCounters {
    uint64_t buffers_made;
    uint64_t buffers_released;
    uint64_t owners_made;
    uint64_t owners_released;
    uint64_t bad_releases;
} PeerCounters;

void peer_counters(PeerCounters *out);

/* ---- consuming (consume.c) --------------------------------------------- */

/* What the peer read through the accessors. */
typedef struct PeerFields {
    uint32_t dtype;
    uint32_t rank;
    uint64_t shape[HURRAY_MAX_RANK];
    int64_t strides[HURRAY_MAX_RANK];
    uint32_t byte_order;
    uint32_t packing;
    uint32_t scheme;
    uint32_t granularity;
    uint32_t axis;
    uint64_t block_size;
    uint32_t ggml_type;
    uint32_t part_present[HURRAY_MAX_PARTS]; /* indexed by role - 1 */
    PeerPartSpec parts[HURRAY_MAX_PARTS];    /* indexed by role - 1 */
    uint64_t buffer_count;
} PeerFields;

/* The checks a consumer makes before it may take a capsule, in the order
 * ADR-034 section 4 demands: the ABI version first (and nothing else read
 * before it is judged), then the descriptor bytes, decoded, then the
 * descriptor against the buffer list. Reads, never changes. On success
 * *out_desc is the decoded descriptor (the caller destroys it). */
HurrayStatus peer_check(const HurrayTensorContext *ctx, const HurrayBufferList *list,
                        uint32_t *out_version, HurrayDescriptor **out_desc);

HurrayStatus peer_read_fields(const HurrayDescriptor *desc, PeerFields *out);

/* Whether buffer index of a checked pair may only be read: through the
 * context (ABI 5), which answers "writable" for a version-4 pair; a peer
 * built for ABI 4 knows no other answer. */
HurrayStatus peer_buffer_readonly(const HurrayTensorContext *ctx, const HurrayBufferList *list,
                                  uint64_t index, int *out);

/* Copies the elements of one role out of the buffers, in logical row-major
 * order: for the values part each element takes ceil(storage bits / 8)
 * bytes (sub-byte elements land in the low bits of their own byte); GGML
 * values are copied as their block bytes; scale, zero-point and global-scale
 * parts as stored. *out is malloc'd (the caller frees it). */
HurrayStatus peer_gather(const PeerFields *fields, const HurrayBufferList *list, uint32_t role,
                         uint8_t **out, uint64_t *out_len);

/* The failure message of the last peer_* call on this thread: the peer's
 * own words, or hurray-ffi's (hurray_last_error_message) when the library
 * refused. */
const char *peer_last_message(void);
void peer_set_message(const char *fmt, ...);

#endif /* HURRAY_C_PEER_H */
