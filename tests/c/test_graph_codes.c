/*
 * test_graph_codes.c -- where a version-2 stored node's codes lie
 * (native/src/descriptor_graph_codes.c, the reader check_buffers' index
 * scans and a dequantizer use), against a packer written here from the
 * rules of docs/impl/descriptor-encoding.md in the other direction (code
 * to bits), and against bytes the owning libraries write (the facts in
 * shared/QUANT-FORMATS.md: compressed-tensors words, ONNX raw_data).
 *
 * Reads the library's internal headers, so it is built with the sources
 * compiled in (tests/test_core_descriptor_graph_c.py), at -O2 and under ASan and
 * UBSan. Every buffer is exactly as long as check_buffers allows.
 */
#include "hurray.h"

#include "check.h"
#include "graph_text.h"

#include "descriptor_graph.h"
#include "descriptor_graph_codes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rng(void)
{
    uint64_t x = rng_state; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* ---- the packer: code to bits, by the spec's rules -------------------- */

static void set_bits(uint8_t *bytes, int64_t bit, uint64_t value, uint32_t width)
{
    for (uint32_t k = 0; k < width; k++) {
        int64_t at = bit + k;
        uint8_t mask = (uint8_t)(1u << (at % 8));
        bytes[at / 8] = (uint8_t)((value >> k) & 1u ? bytes[at / 8] | mask : bytes[at / 8] & ~mask);
    }
}

/* A container of `bytes` bytes at p, as a number in byte order; and back. */
static uint64_t get_unit(const uint8_t *p, uint32_t bytes, uint32_t big)
{
    uint64_t v = 0;
    for (uint32_t k = 0; k < bytes; k++) {
        v |= (uint64_t)p[big ? bytes - 1 - k : k] << (8 * k);
    }
    return v;
}

static void put_unit(uint8_t *p, uint32_t bytes, uint32_t big, uint64_t v)
{
    for (uint32_t k = 0; k < bytes; k++) {
        p[big ? bytes - 1 - k : k] = (uint8_t)(v >> (8 * k));
    }
}

/* Writes code into the buffer `base` (byte 0 of the buffer) where element
 * index[] of the node lies. */
static void pack(const HurrayNode *node, uint8_t *base, const uint64_t *index, uint64_t flat,
                 uint64_t code)
{
    const HurrayStoredNode *s = &node->as.stored;
    uint32_t b = hurray_dtype_name(s->dtype) != NULL ? 0 : 0;
    CHECK_OK(hurray_dtype_bits(s->dtype, &b));
    if (s->addressing == HURRAY_ADDRESSING_ELEMENTS) {
        if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
            uint64_t r = index[0], c = index[1], cp = (node->shape[1] + 3) / 4 * 4;
            uint64_t at = (r / 128 * (cp / 4) + c / 4) * 512 + r % 32 * 16 + r % 128 / 32 * 4 +
                          c % 4;
            put_unit(base + s->byte_offset + at * (b / 8), b / 8, s->byte_order, code);
            return;
        }
        if (s->packing == HURRAY_PACKING_GGML_SPLIT) {
            uint64_t run = flat / 32, j = flat % 32;
            set_bits(base, (int64_t)(8 * (s->byte_offset + run * 16 + j % 16) + 4 * (j / 16)), code,
                     4);
            return;
        }
        int64_t e = 0;
        for (uint32_t k = 0; k < node->rank; k++) {
            e += (int64_t)index[k] * s->strides[k];
        }
        uint32_t w = s->packing == HURRAY_PACKING_PADDED ? 8 : b;
        if (w >= 8 && b >= 8) {
            put_unit(base + (int64_t)s->byte_offset + e * (w / 8), w / 8, s->byte_order, code);
        } else {
            set_bits(base, 8 * (int64_t)s->byte_offset + (int64_t)w * e, code, b);
        }
        return;
    }
    /* Words: the element's stream position along the packed axis. */
    uint32_t w = s->container_bits, p = s->packed_axis;
    uint64_t e = index[p], j, t;
    if (s->packing == HURRAY_PACKING_DENSE) {
        j = e * b / w;
        t = e * b % w;
    } else {
        uint64_t per = s->slot_count, k = s->chunk_containers, n = per * k;
        uint64_t c = e / n, r = e % n;
        uint64_t cont = (s->slot_flags & HURRAY_SLOTS_PLANAR) ? r % k : r / per;
        uint64_t slot = (s->slot_flags & HURRAY_SLOTS_PLANAR) ? r / k : r % per;
        j = c * s->chunk_stride + cont;
        t = (uint64_t)b * s->order[slot];
    }
    int64_t at = 0;
    for (uint32_t k = 0; k < node->rank; k++) {
        at += (k == p ? (int64_t)j : (int64_t)index[k]) * s->strides[k];
    }
    /* Bit by bit through the containers, so a straddling code lands in two. */
    for (uint32_t bit = 0; bit < b; bit++) {
        uint64_t pos = t + bit;
        int64_t cont = at + (int64_t)(pos / w) * s->strides[p];
        uint8_t *q = base + (int64_t)s->byte_offset + cont * (int64_t)(w / 8);
        uint64_t v = get_unit(q, w / 8, s->byte_order);
        uint64_t m = (uint64_t)1 << (pos % w);
        v = (code >> bit) & 1u ? v | m : v & ~m;
        put_unit(q, w / 8, s->byte_order, v);
    }
}

/* ---- the cases ------------------------------------------------------ */

/* The text's descriptor, node 0 a stored node (node 1 may be its codebook):
 * random codes packed into a buffer of exactly the size check_buffers
 * allows, then each read back by hurray__stored_code. Returns the buffer
 * for the caller to look at (free it). */
static uint8_t *round_trip(const char *text, uint64_t size, uint64_t *codes_out)
{
    HurrayDescriptor *desc = NULL;
    CHECK_OK(graph_text_build(text, &desc));
    CHECK_OK(hurray_descriptor_validate(desc));
    HurrayBufferList *list = NULL;
    HurrayBuffer *buffer = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    CHECK_OK(hurray_buffer_new(size, 1, &buffer));
    void *data = NULL;
    uint64_t len = 0;
    CHECK_OK(hurray_buffer_data(buffer, &data, &len));
    CHECK_OK(hurray_buffer_list_push(list, &buffer));
    CHECK_OK(hurray_descriptor_check_buffers(desc, list)); /* exactly the size */
    const HurrayNode *node = &hurray__descriptor_graph(desc)->nodes[0];
    uint32_t b = 0;
    CHECK_OK(hurray_dtype_bits(node->as.stored.dtype, &b));
    uint64_t count = 1;
    for (uint32_t k = 0; k < node->rank; k++) {
        count *= node->shape[k];
    }
    uint64_t *codes = malloc(sizeof *codes * count);
    CHECK(codes != NULL);
    uint64_t index[HURRAY_MAX_RANK];
    for (uint64_t e = 0; e < count; e++) {
        codes[e] = codes_out != NULL ? codes_out[e]
                                     : rng() & (b >= 64 ? UINT64_MAX : (((uint64_t)1 << b) - 1));
        uint64_t rest = e;
        for (uint32_t k = node->rank; k-- > 0;) {
            index[k] = rest % node->shape[k];
            rest /= node->shape[k];
        }
        pack(node, data, index, e, codes[e]);
    }
    for (uint64_t e = 0; e < count; e++) {
        uint64_t got = hurray__stored_code(node, data, e);
        if (got != codes[e]) {
            fprintf(stderr, "element %llu: read 0x%llx, packed 0x%llx\n%s", (unsigned long long)e,
                    (unsigned long long)got, (unsigned long long)codes[e], text);
        }
        CHECK(got == codes[e]);
    }
    uint8_t *copy = malloc(size ? size : 1);
    CHECK(copy != NULL);
    memcpy(copy, data, size);
    free(codes);
    hurray_buffer_list_destroy(&list);
    hurray_descriptor_destroy(&desc);
    return copy;
}

typedef struct Case {
    const char *text;
    uint64_t size;
} Case;

static const Case cases[] = {
    /* elements: whole bytes in either byte order, negative strides */
    {"tensor shape=3,4\nnode 0 stored dtype=int16 shape=3,4 strides=-4,1 offset=16\n", 24},
    {"tensor shape=3,4\nnode 0 stored dtype=uint32 shape=3,4 strides=1,3 byte_order=big\n", 48},
    {"tensor shape=5\nnode 0 stored dtype=uint64 shape=5 strides=-1 offset=32\n", 40},
    /* elements: padded and lsb_first, across bytes and backwards */
    {"tensor shape=2,5\nnode 0 stored dtype=uint3 shape=2,5 packing=padded\n", 10},
    {"tensor shape=3,5\nnode 0 stored dtype=uint2 shape=3,5 strides=-5,1 offset=3\n", 5},
    {"tensor shape=2,3\nnode 0 stored dtype=int4 shape=2,3\n", 3},
    {"tensor shape=7\nnode 0 stored dtype=bool shape=7\n", 7},
    {"tensor shape=9\nnode 0 stored dtype=uint1 shape=9 strides=-1 offset=1\n", 2},
    /* elements: ggml's split halves, the swizzled layout */
    {"tensor shape=2,64\nnode 0 stored dtype=uint4 shape=2,64 packing=ggml_split\n", 64},
    {"tensor shape=130,6\nnode 0 stored dtype=uint8 shape=130,6 strides=0,0 "
     "layout=swizzled_128x4\n",
     256 * 8},
    {"tensor shape=3,5\nnode 0 stored dtype=float16 shape=3,5 strides=0,0 layout=swizzled_128x4 "
     "byte_order=big\n",
     128 * 8 * 2},
    /* words, dense: along either axis, straddling, every container width */
    {"tensor shape=3,11\nnode 0 stored dtype=uint3 shape=3,11 strides=5,1 addressing=words "
     "packing=dense container_bits=8 packed_axis=1\n",
     15},
    {"tensor shape=11,3\nnode 0 stored dtype=uint5 shape=11,3 strides=1,4 addressing=words "
     "packing=dense container_bits=16 packed_axis=0 byte_order=big\n",
     24},
    {"tensor shape=2,20\nnode 0 stored dtype=uint7 shape=2,20 strides=5,1 addressing=words "
     "packing=dense container_bits=32 packed_axis=1\n",
     40},
    {"tensor shape=2,20\nnode 0 stored dtype=int6 shape=2,20 strides=-2,1 offset=16 "
     "addressing=words packing=dense container_bits=64 packed_axis=1\n",
     32},
    {"tensor shape=2,3\nnode 0 stored dtype=uint64 shape=2,3 strides=3,1 addressing=words "
     "packing=dense container_bits=64 packed_axis=1 byte_order=big\n",
     48},
    /* words, slots: interleaved with an order, planar, chunks with gaps */
    {"tensor shape=16,3\nnode 0 stored dtype=uint4 shape=16,3 strides=1,2 addressing=words "
     "packing=slots container_bits=32 packed_axis=0 chunk_containers=1 chunk_stride=1 "
     "order=0,4,1,5,2,6,3,7\n",
     24},
    {"tensor shape=8,5\nnode 0 stored dtype=uint4 shape=8,5 strides=5,1 addressing=words "
     "packing=slots container_bits=8 packed_axis=0 chunk_containers=4 slot_flags=1 "
     "chunk_stride=4 order=1,0\n",
     20},
    {"tensor shape=23,2\nnode 0 stored dtype=uint3 shape=23,2 strides=2,1 addressing=words "
     "packing=slots container_bits=32 packed_axis=0 chunk_containers=2 slot_flags=1 "
     "chunk_stride=3 order=9,8,7,6,5,4,3,2,1,0\n",
     40},
    {"tensor shape=2,64\nnode 0 stored dtype=uint4 shape=2,64 strides=1,2 addressing=words "
     "packing=slots container_bits=32 packed_axis=1 chunk_containers=4 chunk_stride=5 "
     "order=0,1,2,3,4,5,6,7\n",
     (5 + 3 + 1) * 2 * 4},
    {"tensor shape=70\nnode 0 stored dtype=uint1 shape=70 addressing=words packing=slots "
     "container_bits=64 packed_axis=0 chunk_containers=1 chunk_stride=1 byte_order=big "
     "order=63,62,61,60,59,58,57,56,55,54,53,52,51,50,49,48,47,46,45,44,43,42,41,40,39,38,37,36,"
     "35,34,33,32,31,30,29,28,27,26,25,24,23,22,21,20,19,18,17,16,15,14,13,12,11,10,9,8,7,6,5,4,"
     "3,2,1,0\n",
     16},
    {"tensor shape=7\nnode 0 stored dtype=uint5 shape=7 addressing=words packing=slots "
     "container_bits=16 packed_axis=0 chunk_containers=3 slot_flags=1 chunk_stride=3 "
     "order=2,0,1\n",
     6},
};

/* Bytes the libraries themselves write (shared/QUANT-FORMATS.md). */
static void test_published_bytes(void)
{
    /* compressed-tensors 4-bit: q [-4,-4,-1,-2,3,2,-1,-8] stored + 8 is word 0x07ab6744. */
    uint64_t ct[8] = {4, 4, 7, 6, 11, 10, 7, 0};
    uint8_t *bytes = round_trip("tensor shape=1,8\nnode 0 stored dtype=uint4 shape=1,8 "
                                "addressing=words packing=dense container_bits=32 packed_axis=1 "
                                "code_offset=-8\n",
                                4, ct);
    CHECK(bytes[0] == 0x44 && bytes[1] == 0x67 && bytes[2] == 0xab && bytes[3] == 0x07);
    free(bytes);
    /* its zero points, packed along the rows: [0,-2,-1,0,0,-2,-3,-1] is word 0x75688768. */
    uint64_t zp[8] = {8, 6, 7, 8, 8, 6, 5, 7};
    bytes = round_trip("tensor shape=8,1\nnode 0 stored dtype=uint4 shape=8,1 strides=1,1 "
                       "addressing=words packing=dense container_bits=32 packed_axis=0\n",
                       4, zp);
    CHECK(bytes[0] == 0x68 && bytes[1] == 0x87 && bytes[2] == 0x68 && bytes[3] == 0x75);
    free(bytes);
    /* ONNX raw_data: INT4 [1,2,3,-1,0] -> 21 f3 00, flat, low nibble first. */
    uint64_t int4[5] = {1, 2, 3, 15, 0};
    bytes = round_trip("tensor shape=5\nnode 0 stored dtype=int4 shape=5\n", 3, int4);
    CHECK(bytes[0] == 0x21 && bytes[1] == 0xf3 && bytes[2] == 0x00);
    free(bytes);
    /* INT2 [1,-2,-1,0,1] -> 39 01 */
    uint64_t int2[5] = {1, 2, 3, 0, 1};
    bytes = round_trip("tensor shape=5\nnode 0 stored dtype=int2 shape=5 addressing=words "
                       "packing=dense container_bits=8\n",
                       2, int2);
    CHECK(bytes[0] == 0x39 && bytes[1] == 0x01);
    free(bytes);
    /* FLOAT6E2M3 [1,-0.5,7.5,0,2] -> 08 f9 01 10: codes 0x08, 0x24, 0x1f, 0x00, 0x10. */
    uint64_t fp6[5] = {0x08, 0x24, 0x1f, 0x00, 0x10};
    bytes = round_trip("tensor shape=5\nnode 0 stored dtype=float6_e2m3fn shape=5 "
                       "addressing=words packing=dense container_bits=8\n",
                       4, fp6);
    CHECK(bytes[0] == 0x08 && bytes[1] == 0xf9 && bytes[2] == 0x01 && bytes[3] == 0x10);
    free(bytes);
    /* bitsandbytes 4-bit: flat element 2k in the high nibble: [1, 2, 3] -> 12 30. */
    uint64_t bnb[3] = {1, 2, 3};
    bytes = round_trip("tensor shape=3\nnode 0 stored dtype=uint4 shape=3 addressing=words "
                       "packing=slots container_bits=8 chunk_containers=1 chunk_stride=1 "
                       "order=1,0\n",
                       2, bnb);
    CHECK(bytes[0] == 0x12 && bytes[1] == 0x30);
    free(bytes);
    /* HQQ 4-bit: byte [r, c] = W_q[r, c] << 4 | W_q[r + R/2, c]; R = 4, C = 1. */
    uint64_t hqq[4] = {1, 2, 3, 4};
    bytes = round_trip("tensor shape=4,1\nnode 0 stored dtype=uint4 shape=4,1 strides=1,1 "
                       "addressing=words packing=slots container_bits=8 chunk_containers=2 "
                       "slot_flags=1 chunk_stride=2 order=1,0\n",
                       2, hqq);
    CHECK(bytes[0] == 0x13 && bytes[1] == 0x24);
    free(bytes);
    /* AWQ: nibble n of word c holds column 8c + [0,2,4,6,1,3,5,7][n]. */
    uint64_t awq[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    bytes = round_trip("tensor shape=8\nnode 0 stored dtype=uint4 shape=8 addressing=words "
                       "packing=slots container_bits=32 chunk_containers=1 chunk_stride=1 "
                       "order=0,4,1,5,2,6,3,7\n",
                       4, awq);
    /* nibbles low to high: columns 0 2 4 6 1 3 5 7 */
    CHECK(bytes[0] == 0x20 && bytes[1] == 0x64 && bytes[2] == 0x31 && bytes[3] == 0x75);
    free(bytes);
}

/* Integers: sign extension and the code offset. */
static void test_integers(void)
{
    HurrayDescriptor *desc = NULL;
    CHECK_OK(graph_text_build("tensor shape=1\nnode 0 stored dtype=int3 shape=1 packing=padded "
                              "code_offset=2\n",
                              &desc));
    const HurrayNode *node = &hurray__descriptor_graph(desc)->nodes[0];
    CHECK(hurray__stored_integer(node, 0x7) == -1 + 2);
    CHECK(hurray__stored_integer(node, 0x4) == -4 + 2);
    CHECK(hurray__stored_integer(node, 0x3) == 3 + 2);
    hurray_descriptor_destroy(&desc);
    CHECK_OK(graph_text_build("tensor shape=1\nnode 0 stored dtype=uint64 shape=1\n", &desc));
    node = &hurray__descriptor_graph(desc)->nodes[0];
    CHECK(hurray__stored_integer(node, UINT64_MAX) == INT64_MIN);
    CHECK(hurray__stored_integer(node, INT64_MAX) == INT64_MAX);
    hurray_descriptor_destroy(&desc);
    CHECK_OK(graph_text_build("tensor shape=1\nnode 0 stored dtype=int64 shape=1\n", &desc));
    node = &hurray__descriptor_graph(desc)->nodes[0];
    CHECK(hurray__stored_integer(node, UINT64_MAX) == -1);
    CHECK(hurray__stored_integer(node, (uint64_t)1 << 63) == INT64_MIN);
    hurray_descriptor_destroy(&desc);
}

int main(void)
{
    for (size_t i = 0; i < COUNT(cases); i++) {
        for (int rounds = 0; rounds < 8; rounds++) {
            free(round_trip(cases[i].text, cases[i].size, NULL));
        }
    }
    test_published_bytes();
    test_integers();
    checks_report("test_graph_codes");
    return 0;
}
