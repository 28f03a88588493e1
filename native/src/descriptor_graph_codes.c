/*
 * descriptor_graph_codes.c -- reading one code of a stored node, by the
 * addressing rules of descriptor_graph.h (ELEMENTS: version 1's rule and
 * the swizzled layout; WORDS: dense bit streams and slots).
 */
#include "descriptor_graph_codes.h"

#include "dtype.h"

/* bits (1 to 64) set from the bottom. */
static uint64_t low_bits(uint32_t bits)
{
    return bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
}

/* `bytes` bytes (1, 2, 4 or 8) at p as one unsigned number in byte_order. */
static uint64_t read_unit(const uint8_t *p, uint32_t bytes, uint32_t byte_order)
{
    uint64_t v = 0;
    for (uint32_t k = 0; k < bytes; k++) {
        uint32_t at = byte_order == HURRAY_BYTE_ORDER_BIG ? bytes - 1 - k : k;
        v |= (uint64_t)p[at] << (8 * k);
    }
    return v;
}

/* The multi-index of `flat` in row-major order: index[k] for every k. */
static void unflatten(const HurrayNode *node, uint64_t flat, uint64_t *index)
{
    for (uint32_t k = node->rank; k-- > 0;) {
        uint64_t dim = node->shape[k]; /* >= 1: the node has elements */
        index[k] = flat % dim;
        flat /= dim;
    }
}

static uint64_t code_of_elements(const HurrayNode *node, const uint8_t *data, uint64_t flat,
                                 const uint64_t *index)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t bits = hurray__dtype_bits(s->dtype);
    if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
        uint64_t r = index[0], c = index[1];
        uint64_t padded_cols = (node->shape[1] + 3) / 4 * 4;
        uint64_t at = ((r / 128) * (padded_cols / 4) + c / 4) * 512 + (r % 32) * 16 +
                      (r / 32 % 4) * 4 + c % 4;
        return read_unit(data + s->byte_offset + at * (bits / 8), bits / 8, s->byte_order);
    }
    if (s->packing == HURRAY_PACKING_GGML_SPLIT) {
        /* Row-major contiguous: run flat / 32, byte l, nibble h. */
        uint64_t run = flat / 32, r = flat % 32;
        uint8_t byte = data[s->byte_offset + 16 * run + r % 16];
        return (r < 16 ? byte : byte >> 4) & 0xFu;
    }
    int64_t element = 0; /* in range: the node's reach was proven */
    for (uint32_t k = 0; k < node->rank; k++) {
        element += (int64_t)index[k] * s->strides[k];
    }
    if (s->packing == HURRAY_PACKING_PADDED) {
        return data[(int64_t)s->byte_offset + element] & low_bits(bits);
    }
    if (bits >= 8) {
        uint32_t bytes = bits / 8;
        return read_unit(data + (int64_t)s->byte_offset + element * (int64_t)bytes, bytes,
                         s->byte_order);
    }
    /* LSB_FIRST, 1, 2 or 4 bits: never across a byte. */
    int64_t bit = element * (int64_t)bits;
    int64_t byte = bit >= 0 ? bit / 8 : -((-bit + 7) / 8);
    uint32_t shift = (uint32_t)(bit - 8 * byte);
    return (data[(int64_t)s->byte_offset + byte] >> shift) & low_bits(bits);
}

static uint64_t code_of_words(const HurrayNode *node, const uint8_t *data, const uint64_t *index)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t b = hurray__dtype_bits(s->dtype), w = s->container_bits, p = s->packed_axis;
    uint64_t e = index[p];
    uint64_t j, t;
    if (s->packing == HURRAY_PACKING_DENSE) {
        j = e * b / w; /* the reach, e * b, was proven to fit */
        t = e * b % w;
    } else {
        uint64_t per = s->slot_count, k = s->chunk_containers;
        uint64_t n, chunk = 0, r = e;
        if (!__builtin_mul_overflow(per, k, &n)) { /* else one chunk holds every element */
            chunk = e / n;
            r = e % n;
        }
        uint64_t container, slot;
        if (s->slot_flags & HURRAY_SLOTS_PLANAR) {
            container = r % k;
            slot = r / k;
        } else {
            container = r / per;
            slot = r % per;
        }
        j = chunk * s->chunk_stride + container;
        t = (uint64_t)b * s->order[slot];
    }
    int64_t at = 0;
    for (uint32_t k = 0; k < node->rank; k++) {
        at += (k == p ? (int64_t)j : (int64_t)index[k]) * s->strides[k];
    }
    uint32_t bytes = w / 8;
    const uint8_t *container = data + (int64_t)s->byte_offset + at * (int64_t)bytes;
    uint64_t code = read_unit(container, bytes, s->byte_order) >> t;
    if (t + b > w) {
        /* Dense: the high bits are the low bits of the next container along p. */
        uint64_t next = read_unit(container + s->strides[p] * (int64_t)bytes, bytes, s->byte_order);
        code |= next << (w - t);
    }
    return code & low_bits(b);
}

uint64_t hurray__stored_code(const HurrayNode *node, const uint8_t *data, uint64_t flat)
{
    uint64_t index[HURRAY_MAX_RANK];
    unflatten(node, flat, index);
    if (node->as.stored.addressing == HURRAY_ADDRESSING_WORDS) {
        return code_of_words(node, data, index);
    }
    return code_of_elements(node, data, flat, index);
}

int64_t hurray__stored_integer(const HurrayNode *node, uint64_t code)
{
    uint32_t bits = hurray__dtype_bits(node->as.stored.dtype);
    int64_t value;
    if (hurray__dtype_is_signed_int(node->as.stored.dtype)) {
        uint64_t sign = (uint64_t)1 << (bits - 1);
        value = (int64_t)((code ^ sign) - sign); /* two's complement of bits bits */
    } else if (code > INT64_MAX) {
        return INT64_MIN;
    } else {
        value = (int64_t)code;
    }
    /* Wrapping, not overflowing: only a dequantizer's own types are that wide. */
    return (int64_t)((uint64_t)value + (uint64_t)(int64_t)node->as.stored.code_offset);
}
