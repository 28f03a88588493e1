/*
 * consume.c -- the C peer as a consumer: check the version first, then the
 * descriptor, then walk the buffers the descriptor says it reaches.
 *
 * Only hurray.h is used: the peer knows nothing of how hurray-python or any
 * other producer lays out its handles.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

HurrayStatus peer_check(const HurrayTensorContext *ctx, const HurrayBufferList *list,
                        uint32_t *out_version, HurrayDescriptor **out_desc)
{
    if (ctx == NULL) {
        peer_set_message("the capsule has no context");
        return HURRAY_ERROR_NULL_ARGUMENT;
    }
    /* ADR-034 section 4: the one call that is safe on a context of any
     * version, made before anything else about the context is trusted. */
    uint32_t version = 0;
    HurrayStatus status = hurray_tensor_context_abi_version(ctx, &version);
    if (status != HURRAY_OK) {
        peer_set_message("reading the context's ABI version: %s", hurray_last_error_message());
        return status;
    }
    if (version < PEER_MIN_ABI || version > HURRAY_C_ABI_VERSION) {
        peer_set_message("the context has C ABI version %u; this peer reads versions %u to %u",
                         (unsigned)version, (unsigned)PEER_MIN_ABI, (unsigned)HURRAY_C_ABI_VERSION);
        return HURRAY_ERROR_ABI_VERSION;
    }
    if (list == NULL) {
        peer_set_message("the capsule has no buffer list");
        return HURRAY_ERROR_NULL_ARGUMENT;
    }
    const uint8_t *bytes = NULL;
    uint64_t len = 0;
    status = hurray_tensor_context_descriptor(ctx, &bytes, &len);
    if (status != HURRAY_OK) {
        peer_set_message("reading the descriptor bytes: %s", hurray_last_error_message());
        return status;
    }
    HurrayDescriptor *desc = NULL;
    status = hurray_descriptor_decode(bytes, len, &desc);
    if (status != HURRAY_OK) {
        peer_set_message("decoding the descriptor: %s", hurray_last_error_message());
        return status;
    }
    status = hurray_descriptor_check_buffers(desc, list);
    if (status != HURRAY_OK) {
        peer_set_message("checking the buffers: %s", hurray_last_error_message());
        hurray_descriptor_destroy(&desc);
        return status;
    }
    *out_version = version;
    *out_desc = desc;
    return HURRAY_OK;
}

HurrayStatus peer_buffer_readonly(const HurrayTensorContext *ctx, const HurrayBufferList *list,
                                  uint64_t index, int *out)
{
#if PEER_KNOWS_READONLY
    uint32_t flags = 0;
    HurrayStatus status = hurray_tensor_context_buffer_flags(ctx, list, index, &flags);
    if (status != HURRAY_OK) {
        peer_set_message("reading the flags of buffer %llu: %s", (unsigned long long)index,
                         hurray_last_error_message());
        return status;
    }
    *out = (flags & HURRAY_BUFFER_READONLY) != 0;
#else
    (void)ctx;
    (void)list;
    (void)index;
    *out = 0; /* ABI 4: every buffer is writable by contract */
#endif
    return HURRAY_OK;
}

/* Any accessor failing on a decoded descriptor is a library bug; report it
 * rather than read garbage. */
#define READ(call)                                                          \
    do {                                                                    \
        HurrayStatus s_ = (call);                                           \
        if (s_ != HURRAY_OK) {                                              \
            peer_set_message("%s: %s", #call, hurray_last_error_message()); \
            return s_;                                                      \
        }                                                                   \
    } while (0)

HurrayStatus peer_read_fields(const HurrayDescriptor *desc, PeerFields *f)
{
    memset(f, 0, sizeof *f);
    const uint64_t *shape = NULL;
    const int64_t *strides = NULL;
    READ(hurray_descriptor_dtype(desc, &f->dtype));
    READ(hurray_descriptor_rank(desc, &f->rank));
    READ(hurray_descriptor_shape(desc, &shape));
    READ(hurray_descriptor_strides(desc, &strides));
    if (f->rank > HURRAY_MAX_RANK) {
        peer_set_message("rank %u exceeds HURRAY_MAX_RANK", (unsigned)f->rank);
        return HURRAY_ERROR_INVALID_DESCRIPTOR;
    }
    for (uint32_t i = 0; i < f->rank; i++) {
        f->shape[i] = shape[i];
        f->strides[i] = strides[i];
    }
    READ(hurray_descriptor_byte_order(desc, &f->byte_order));
    READ(hurray_descriptor_packing(desc, &f->packing));
    READ(hurray_descriptor_quantization(desc, &f->scheme, &f->granularity, &f->axis, &f->block_size,
                                        &f->ggml_type));
    for (uint32_t role = HURRAY_ROLE_VALUES; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
        PeerPartSpec *p = &f->parts[role - 1];
        HurrayStatus s = hurray_descriptor_part(desc, role, &p->dtype, &p->buffer_index,
                                                &p->byte_offset, &p->layout);
        if (s == HURRAY_ERROR_NOT_FOUND) {
            continue;
        }
        READ(s);
        p->role = role;
        f->part_present[role - 1] = 1;
    }
    READ(hurray_descriptor_buffer_count(desc, &f->buffer_count));
    return HURRAY_OK;
}

/* GGML blocks (elements, bytes), as GGUF numbers them: the consumer's own
 * knowledge of the formats it reads. */
static int ggml_block(uint32_t type, uint64_t *elements, uint64_t *bytes)
{
    static const struct {
        uint32_t type;
        uint64_t elements, bytes;
    } blocks[] = {
        {HURRAY_GGML_Q4_0, 32, 18},   {HURRAY_GGML_Q4_1, 32, 20},  {HURRAY_GGML_Q5_0, 32, 22},
        {HURRAY_GGML_Q5_1, 32, 24},   {HURRAY_GGML_Q8_0, 32, 34},  {HURRAY_GGML_Q4_K, 256, 144},
        {HURRAY_GGML_Q6_K, 256, 210}, {HURRAY_GGML_MXFP4, 32, 17},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (blocks[i].type == type) {
            *elements = blocks[i].elements;
            *bytes = blocks[i].bytes;
            return 1;
        }
    }
    return 0;
}

static int element_count(const PeerFields *f, uint64_t *out)
{
    uint64_t n = 1;
    for (uint32_t i = 0; i < f->rank; i++) {
        if (__builtin_mul_overflow(n, f->shape[i], &n)) {
            return 0;
        }
    }
    *out = n;
    return 1;
}

static HurrayStatus buffer_of(const HurrayBufferList *list, uint64_t index, const uint8_t **data,
                              uint64_t *len)
{
    const HurrayBuffer *buf = NULL;
    void *ptr = NULL;
    READ(hurray_buffer_list_get(list, index, &buf));
    READ(hurray_buffer_data(buf, &ptr, len));
    *data = ptr;
    return HURRAY_OK;
}

/* A run of bytes starting at the part's offset, copied after a bounds check
 * of the peer's own (check_buffers already proved it; a consumer that walks
 * memory checks anyway). */
static HurrayStatus copy_run(const uint8_t *data, uint64_t len, uint64_t offset, uint64_t count,
                             uint8_t **out, uint64_t *out_len)
{
    uint64_t end;
    if (__builtin_add_overflow(offset, count, &end) || end > len) {
        peer_set_message("a run of %llu bytes at %llu passes the buffer's %llu bytes",
                         (unsigned long long)count, (unsigned long long)offset,
                         (unsigned long long)len);
        return HURRAY_ERROR_BUFFER_TOO_SMALL;
    }
    uint8_t *copy = malloc(count == 0 ? 1 : (size_t)count);
    if (copy == NULL) {
        peer_set_message("cannot allocate %llu bytes", (unsigned long long)count);
        return HURRAY_ERROR_NO_MEMORY;
    }
    if (count != 0) {
        memcpy(copy, data + offset, (size_t)count);
    }
    *out = copy;
    *out_len = count;
    return HURRAY_OK;
}

/* Elements of a scale, zero-point or global-scale part. */
static int parameter_count(const PeerFields *f, uint32_t role, uint64_t elements, uint64_t *out)
{
    if (role == HURRAY_ROLE_GLOBAL_SCALE || f->granularity == HURRAY_GRANULARITY_PER_TENSOR) {
        *out = 1;
        return 1;
    }
    if (f->granularity == HURRAY_GRANULARITY_PER_AXIS && f->axis < f->rank) {
        *out = f->shape[f->axis];
        return 1;
    }
    if (f->granularity == HURRAY_GRANULARITY_PER_BLOCK && f->block_size != 0) {
        const PeerPartSpec *p = &f->parts[role - 1];
        if (p->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4 && f->rank == 2) {
            /* Rows padded to 128, columns to 4: the part covers whole tiles. */
            uint64_t rows = (f->shape[0] + 127) / 128 * 128;
            uint64_t cols = (f->shape[1] / f->block_size + 3) / 4 * 4;
            return !__builtin_mul_overflow(rows, cols, out);
        }
        *out = elements / f->block_size;
        return 1;
    }
    return 0;
}

static HurrayStatus gather_values(const PeerFields *f, const uint8_t *data, uint64_t len,
                                  uint64_t elements, uint8_t **out, uint64_t *out_len)
{
    const PeerPartSpec *p = &f->parts[HURRAY_ROLE_VALUES - 1];
    if (f->scheme == HURRAY_SCHEME_GGML) {
        uint64_t block_elements, block_bytes;
        if (!ggml_block(f->ggml_type, &block_elements, &block_bytes)) {
            peer_set_message("GGML type %u is unknown to this peer", (unsigned)f->ggml_type);
            return HURRAY_ERROR_UNSUPPORTED;
        }
        return copy_run(data, len, p->byte_offset, elements / block_elements * block_bytes, out,
                        out_len);
    }
    uint32_t bits = 0;
    READ(hurray_dtype_bits(f->dtype, &bits));
    uint32_t storage = f->packing == HURRAY_PACKING_PADDED ? 8 : bits;
    uint64_t width = (storage + 7) / 8;
    uint64_t total;
    if (__builtin_mul_overflow(elements, width, &total)) {
        peer_set_message("the element count overflows");
        return HURRAY_ERROR_OVERFLOW;
    }
    uint8_t *copy = malloc(total == 0 ? 1 : (size_t)total);
    if (copy == NULL) {
        peer_set_message("cannot allocate %llu bytes", (unsigned long long)total);
        return HURRAY_ERROR_NO_MEMORY;
    }
    uint64_t index[HURRAY_MAX_RANK] = {0};
    for (uint64_t n = 0; n < elements; n++) {
        /* The element's first bit: 8 * byte_offset + storage * sum(i_k * s_k),
         * or for GGML_SPLIT, by its place in its run of 32. Values in range
         * were proved by check_buffers; the arithmetic is 64-bit signed. */
        int64_t bit;
        if (f->packing == HURRAY_PACKING_GGML_SPLIT) {
            uint64_t j = n % 32;
            bit = (int64_t)(8 * (p->byte_offset + n / 32 * 16 + j % 16) + (j < 16 ? 0 : 4));
        } else {
            int64_t offset = 0;
            for (uint32_t k = 0; k < f->rank; k++) {
                offset += (int64_t)index[k] * f->strides[k];
            }
            bit = (int64_t)(8 * p->byte_offset) + (int64_t)storage * offset;
        }
        uint64_t byte = (uint64_t)bit / 8;
        if (bit < 0 || byte + (storage % 8 == 0 ? width : 1) > len) {
            free(copy);
            peer_set_message("element %llu lies outside its buffer", (unsigned long long)n);
            return HURRAY_ERROR_BUFFER_TOO_SMALL;
        }
        if (storage % 8 == 0) {
            memcpy(copy + n * width, data + byte, (size_t)width);
        } else {
            copy[n] = (uint8_t)((data[byte] >> (bit % 8)) & ((1u << storage) - 1u));
        }
        for (uint32_t k = f->rank; k-- > 0;) { /* row-major: last index fastest */
            if (++index[k] < f->shape[k]) {
                break;
            }
            index[k] = 0;
        }
    }
    *out = copy;
    *out_len = total;
    return HURRAY_OK;
}

HurrayStatus peer_gather(const PeerFields *f, const HurrayBufferList *list, uint32_t role,
                         uint8_t **out, uint64_t *out_len)
{
    if (role < HURRAY_ROLE_VALUES || role > HURRAY_ROLE_GLOBAL_SCALE ||
        !f->part_present[role - 1]) {
        peer_set_message("the descriptor has no part for role %u", (unsigned)role);
        return HURRAY_ERROR_NOT_FOUND;
    }
    const PeerPartSpec *p = &f->parts[role - 1];
    const uint8_t *data = NULL;
    uint64_t len = 0;
    HurrayStatus status = buffer_of(list, p->buffer_index, &data, &len);
    if (status != HURRAY_OK) {
        return status;
    }
    uint64_t elements;
    if (!element_count(f, &elements)) {
        peer_set_message("the element count overflows");
        return HURRAY_ERROR_OVERFLOW;
    }
    if (role == HURRAY_ROLE_VALUES) {
        return gather_values(f, data, len, elements, out, out_len);
    }
    uint64_t count;
    uint32_t bits = 0;
    READ(hurray_dtype_bits(p->dtype, &bits));
    if (!parameter_count(f, role, elements, &count) ||
        __builtin_mul_overflow(count, bits, &count)) {
        peer_set_message("cannot size the part of role %u", (unsigned)role);
        return HURRAY_ERROR_UNSUPPORTED;
    }
    return copy_run(data, len, p->byte_offset, (count + 7) / 8, out, out_len);
}
