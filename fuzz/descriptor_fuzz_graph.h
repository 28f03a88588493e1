/*
 * descriptor_fuzz_graph.h -- the descriptor fuzzer's properties and
 * mutator for encoding version 2 (a graph of nodes, ADR-054), included once
 * by fuzz/descriptor_fuzz.c after its own helpers (REQUIRE, wide, encoded,
 * release_free, rng) and the library's internal headers.
 *
 * Properties, for every input that decodes as version 2:
 *  G1. it re-encodes to exactly its bytes, and so does the descriptor
 *      rebuilt from its accessors through the builder (tests/c/graph_text.h):
 *      canonical;
 *  G2. check_buffers, given buffers sized from this file's own reach
 *      arithmetic (128-bit, from the spec's formulas) and filled from the
 *      input's tail, says OK or OUT_OF_RANGE (an index value out of range)
 *      exactly when every buffer holds its nodes' bytes, BUFFER_TOO_SMALL
 *      when one is a byte short, INVALID_ARGUMENT for a list of the wrong
 *      length; after an OK, every code of every stored node is read (in
 *      buffers malloc'ed to their exact length, so ASan sees a one-byte
 *      overrun) and every group-index and gather-index value is below its
 *      bound; after OUT_OF_RANGE some index value is not.
 */
#ifndef HURRAY_FUZZ_DESCRIPTOR_GRAPH_H
#define HURRAY_FUZZ_DESCRIPTOR_GRAPH_H

#include "../tests/c/graph_text.h"
#include "descriptor_graph.h"
#include "descriptor_graph_codes.h"
#include "descriptor_graph_wire.h"

/* Reading every code is linear in the elements: nodes past this many are
 * read at their first and last elements only. */
#define FUZZ_GRAPH_MAX_READ 4096u

typedef struct GraphNeed {
    int empty[HURRAY_MAX_NODES];
    wide first[HURRAY_MAX_NODES], last[HURRAY_MAX_NODES]; /* bytes, in the node's buffer */
    wide bytes[HURRAY_MAX_NODES];                         /* by buffer */
    int impossible;                                       /* a node starts before its buffer */
} GraphNeed;

static wide graph_count(const HurrayNode *node)
{
    wide count = 1;
    for (uint32_t k = 0; k < node->rank; k++) {
        count *= node->shape[k];
        if (count == 0) {
            return 0;
        }
    }
    return count;
}

/* The last container along a words node's packed axis, n >= 1 codes there:
 * by walking the chunks' arithmetic again, in 128 bits. */
static wide graph_last_container(const HurrayStoredNode *s, wide n)
{
    wide b = bits_of(s->dtype), w = s->container_bits;
    if (s->packing == HURRAY_PACKING_DENSE) {
        return (n * b - 1) / w;
    }
    wide per = s->slot_count, k = s->chunk_containers, chunk = per * k;
    wide last_chunk = (n - 1) / chunk;
    wide left = n - last_chunk * chunk; /* 1 .. chunk codes in the last chunk */
    wide used = (s->slot_flags & HURRAY_SLOTS_PLANAR) ? (left < k ? left : k)
                                                      : (left + per - 1) / per;
    return last_chunk * (wide)s->chunk_stride + used - 1;
}

static void graph_compute_need(const HurrayGraph *graph, GraphNeed *need)
{
    memset(need, 0, sizeof *need);
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        need->empty[i] = 1;
        wide count = graph_count(node);
        if ((node->kind != HURRAY_NODE_STORED && node->kind != HURRAY_NODE_GGML) || count == 0) {
            continue;
        }
        wide first, last;
        uint64_t buffer;
        if (node->kind == HURRAY_NODE_GGML) {
            uint64_t elements, bytes;
            REQUIRE(ggml_block(node->as.ggml.ggml_type, &elements, &bytes),
                    "ggml type %u decoded but unknown here", node->as.ggml.ggml_type);
            first = node->as.ggml.byte_offset;
            last = first + count / elements * bytes - 1;
            buffer = node->as.ggml.buffer_index;
        } else {
            const HurrayStoredNode *s = &node->as.stored;
            wide b = bits_of(s->dtype), offset = s->byte_offset;
            buffer = s->buffer_index;
            if (s->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
                wide rows = node->shape[0], cols = node->shape[1];
                first = offset;
                last = offset + (rows + 127) / 128 * 128 * ((cols + 3) / 4 * 4) * (b / 8) - 1;
            } else {
                wide lo = 0, hi = 0;
                for (uint32_t k = 0; k < node->rank; k++) {
                    wide extent = node->shape[k];
                    if (s->addressing == HURRAY_ADDRESSING_WORDS && k == s->packed_axis) {
                        extent = graph_last_container(s, extent) + 1;
                    }
                    wide step = (wide)s->strides[k] * (extent - 1);
                    if (step < 0) {
                        lo += step;
                    } else {
                        hi += step;
                    }
                }
                if (s->addressing == HURRAY_ADDRESSING_WORDS) {
                    wide unit = s->container_bits / 8;
                    first = offset + lo * unit;
                    last = offset + hi * unit + unit - 1;
                } else {
                    wide width = s->packing == HURRAY_PACKING_PADDED ? 8 : b;
                    wide first_bit = 8 * offset + width * lo;
                    wide last_bit = 8 * offset + width * hi + width - 1;
                    first = first_bit >= 0 ? first_bit / 8 : -((-first_bit + 7) / 8);
                    last = last_bit / 8;
                }
            }
        }
        need->empty[i] = 0;
        need->first[i] = first;
        need->last[i] = last;
        if (first < 0) {
            need->impossible = 1;
        }
        if (last + 1 > need->bytes[buffer]) {
            need->bytes[buffer] = last + 1;
        }
    }
}

/* Whether every index value of every step's group index and every gather
 * lies below its bound, by the library's reader (proved correct against a
 * packer of its own in tests/c/test_graph_codes.c). */
static int graph_indices_fit(const HurrayGraph *graph, const uint8_t *const *data)
{
    for (uint32_t i = 0; i < graph->node_count; i++) {
        const HurrayNode *node = &graph->nodes[i];
        uint32_t ref;
        wide bound;
        if (node->kind == HURRAY_NODE_STEP && node->as.step.group_index != 0) {
            const HurrayStepNode *s = &node->as.step;
            const HurrayNode *param = &graph->nodes[s->scale];
            if (param->kind == HURRAY_NODE_CONSTANT) {
                param = &graph->nodes[s->offset];
            }
            ref = s->group_index;
            bound = param->shape[s->indexed_axis];
        } else if (node->kind == HURRAY_NODE_GATHER) {
            ref = node->as.gather.index;
            bound = graph->nodes[node->as.gather.x].shape[node->as.gather.axis];
        } else {
            continue;
        }
        const HurrayNode *index = &graph->nodes[ref];
        for (uint64_t e = 0; e < index->shape[0]; e++) {
            int64_t v = hurray__stored_integer(
                index, hurray__stored_code(index, data[index->as.stored.buffer_index], e));
            if (v < 0 || (wide)v >= bound) {
                return 0;
            }
        }
    }
    return 1;
}

static void graph_check_plan(const HurrayDescriptor *desc, const GraphNeed *need, uint64_t list_len,
                             const uint64_t *sizes, const uint8_t *fill, size_t fill_len)
{
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    uint32_t buffer_count = desc->facts.buffer_count;
    HurrayBufferList *list = NULL;
    REQUIRE(hurray_buffer_list_new(&list) == HURRAY_OK, "buffer list");
    const uint8_t *data[HURRAY_MAX_NODES] = {0};
    int fits = 1;
    for (uint64_t i = 0; i < list_len; i++) {
        if (i < buffer_count && sizes[i] < need->bytes[i]) {
            fits = 0;
        }
        /* Exactly sizes[i] bytes, filled from the input's tail (or zeros):
         * index values then come from the input too. */
        uint8_t *bytes = malloc((size_t)sizes[i] ? (size_t)sizes[i] : 1);
        REQUIRE(bytes != NULL, "malloc");
        for (uint64_t k = 0; k < sizes[i]; k++) {
            bytes[k] = fill_len > 0 ? fill[(k + 7 * i) % fill_len] : 0;
        }
        if (i < HURRAY_MAX_NODES) {
            data[i] = bytes;
        }
        HurrayBuffer *buf = NULL;
        REQUIRE(hurray_buffer_from_ptr(bytes, sizes[i], release_free, bytes, &buf) == HURRAY_OK,
                "buffer_from_ptr");
        REQUIRE(hurray_buffer_list_push(list, &buf) == HURRAY_OK && buf == NULL, "push");
    }
    HurrayStatus s = hurray_descriptor_check_buffers(desc, list);
    if (list_len != buffer_count) {
        REQUIRE(s == HURRAY_ERROR_INVALID_ARGUMENT, "a list of %llu buffers for %u answered %d",
                (unsigned long long)list_len, buffer_count, s);
    } else if (need->impossible || !fits) {
        REQUIRE(s == HURRAY_ERROR_BUFFER_TOO_SMALL,
                "check_buffers answered %d for buffers that cannot hold the nodes", s);
    } else {
        REQUIRE(s == HURRAY_OK || s == HURRAY_ERROR_OUT_OF_RANGE,
                "check_buffers refused (%d) buffers that hold every node", s);
        REQUIRE((s == HURRAY_OK) == graph_indices_fit(graph, data),
                "check_buffers answered %d, but the index values say otherwise", s);
    }
    if (s == HURRAY_OK) {
        /* Touch what an OK promises: every code (or the first and last of a
         * big node) and the first and last byte of every reach. */
        volatile uint64_t sink = 0;
        for (uint32_t i = 0; i < graph->node_count; i++) {
            const HurrayNode *node = &graph->nodes[i];
            if (need->empty[i]) {
                continue;
            }
            uint64_t buffer = node->kind == HURRAY_NODE_STORED ? node->as.stored.buffer_index
                                                               : node->as.ggml.buffer_index;
            sink ^= data[buffer][(size_t)need->first[i]];
            sink ^= data[buffer][(size_t)need->last[i]];
            if (node->kind != HURRAY_NODE_STORED) {
                continue;
            }
            uint64_t count = (uint64_t)graph_count(node);
            for (uint64_t e = 0; e < count; e++) {
                if (count > FUZZ_GRAPH_MAX_READ && e == 1) {
                    e = count - 1;
                }
                sink ^= hurray__stored_code(node, data[buffer], e);
            }
        }
        (void)sink;
    }
    hurray_buffer_list_destroy(&list);
}

/* G2: exact sizes, each buffer a byte short, and a list shaped by the tail. */
static void graph_check_bounds(const HurrayDescriptor *desc, const uint8_t *tail, size_t tail_len)
{
    GraphNeed need;
    graph_compute_need(hurray__descriptor_graph(desc), &need);
    uint32_t count = desc->facts.buffer_count;
    uint64_t sizes[HURRAY_MAX_NODES + 1] = {0};
    int small = 1;
    for (uint32_t i = 0; i < count; i++) {
        small &= need.bytes[i] <= FUZZ_MAX_BUFFER;
        sizes[i] = small ? (uint64_t)need.bytes[i] : 0;
    }
    const uint8_t *fill = tail_len > 1 ? tail + 1 : NULL;
    size_t fill_len = tail_len > 1 ? tail_len - 1 : 0;
    if (small) {
        graph_check_plan(desc, &need, count, sizes, fill, fill_len);
        graph_check_plan(desc, &need, count, sizes, NULL, 0); /* zeros: every index is 0 */
        for (uint32_t i = 0; i < count; i++) {
            if (sizes[i] > 0) {
                sizes[i]--;
                graph_check_plan(desc, &need, count, sizes, fill, fill_len);
                sizes[i]++;
            }
        }
        uint8_t flags = tail_len > 0 ? tail[0] : 0;
        if ((flags & 3) == 1 && count > 0) {
            graph_check_plan(desc, &need, count - 1, sizes, fill, fill_len);
        } else if ((flags & 3) == 2) {
            sizes[count] = flags >> 2;
            graph_check_plan(desc, &need, count + 1, sizes, fill, fill_len);
        }
    }
}

/* G1: canonical, through encode and through the accessors and builder. */
static void graph_check_canonical(const HurrayDescriptor *desc, const uint8_t *data, size_t len)
{
    static char text[1 << 16];
    uint64_t n = 0;
    REQUIRE(hurray_descriptor_validate(desc) == HURRAY_OK, "decoded descriptor fails validate");
    REQUIRE(hurray_descriptor_encode(desc, NULL, 0, &n) == HURRAY_OK && n == len,
            "size query says %llu for a %zu-byte input", (unsigned long long)n, len);
    REQUIRE(hurray_descriptor_encode(desc, encoded, sizeof encoded, &n) == HURRAY_OK && n == len &&
                memcmp(encoded, data, len) == 0,
            "re-encoding differs from the input");
    REQUIRE(graph_text_dump(desc, text, sizeof text) == HURRAY_OK, "the accessors failed");
    HurrayDescriptor *built = NULL;
    REQUIRE(graph_text_build(text, &built) == HURRAY_OK, "the builder refused the accessors' text");
    REQUIRE(hurray_descriptor_encode(built, encoded, sizeof encoded, &n) == HURRAY_OK && n == len &&
                memcmp(encoded, data, len) == 0,
            "the descriptor rebuilt from its accessors encodes differently");
    hurray_descriptor_destroy(&built);
}

/* ---- structure-aware mutation of version 2 ---------------------------
 *
 * Byte mutations rarely keep a node's length field, its rank and its slot
 * count in agreement, or the total length with the nodes. This reads the
 * input as version-2 nodes where it can, makes one change (a node added,
 * removed or retyped, a dimension added or removed, references renumbered
 * in canonical order, a field set to a value the rules care about), and
 * writes the nodes back with lengths that fit. Reserved bytes, references
 * and every field's value stay as mutated, so refusals stay reachable.
 */
/* Defined with the byte-level mutator in descriptor_fuzz.c. */
static uint64_t get_le(const uint8_t *p, int n);
static void put_le(uint8_t *p, uint64_t v, int n);
static uint64_t pick(uint64_t *state, uint64_t n);

static const uint8_t graph_good_bytes[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  15, 16, 17,
                                           18, 19, 26, 30, 33, 35, 37, 39, 32, 64, 255};

static size_t graph_relay(uint8_t *data, size_t size, size_t max_size, uint64_t *rng)
{
    static uint8_t out[HURRAY_MAX_DESCRIPTOR_V2_LEN + 4096];
    static uint8_t nodes[HURRAY_MAX_NODES + 1][1200];
    uint32_t lens[HURRAY_MAX_NODES + 1];
    uint8_t header[32] = {0};
    memcpy(header, data, size < 32 ? size : 32);
    uint32_t rank = header[8] % 5; /* small tensors: the nodes are what is fuzzed */
    uint32_t count = 1 + header[9] % HURRAY_MAX_NODES;
    size_t at = 32 + 8 * (size_t)(header[8] % (HURRAY_MAX_RANK + 1));
    uint64_t shape[4];
    for (uint32_t k = 0; k < rank; k++) {
        shape[k] = 32 + 8 * k + 8 <= size ? get_le(data + 32 + 8 * k, 8) : 1 + pick(rng, 64);
    }
    for (uint32_t i = 0; i < count; i++) {
        uint8_t *node = nodes[i];
        memset(node, 0, sizeof nodes[i]);
        if (at + 4 <= size) {
            size_t take = size - at < sizeof nodes[i] ? size - at : sizeof nodes[i];
            memcpy(node, data + at, take);
        } else {
            node[0] = HURRAY_NODE_STORED;
            node[1] = 1;
            node[4] = HURRAY_DTYPE_FLOAT32;
        }
        if (pick(rng, 8) != 0) {
            node[0] = (uint8_t)(1 + (node[0] + 5) % 6); /* a known kind, mostly */
        }
        if (node[1] > 4 && pick(rng, 4) != 0) {
            node[1] %= 5;
        }
        node[13] %= 65;
        uint64_t len = hurray__graph_wire_node_len(node[0], node[1], node[13]);
        if (len == 0 || len > sizeof nodes[i]) {
            node[0] = HURRAY_NODE_CONSTANT;
            node[1] = 0;
            len = hurray__graph_wire_node_len(node[0], 0, 0);
        }
        lens[i] = (uint32_t)len;
        at += len;
    }
    size_t tail_at = at < size ? at : size;
    uint32_t j = (uint32_t)pick(rng, count);
    uint8_t *node = nodes[j];
    switch (pick(rng, 7)) {
    case 0: /* add a node, a copy of another with its references moved on */
        if (count < HURRAY_MAX_NODES) {
            memcpy(nodes[count], node, sizeof nodes[count]);
            lens[count] = lens[j];
            count++;
        }
        break;
    case 1: /* remove the last node */
        if (count > 1) {
            count--;
        }
        break;
    case 2: /* one more or one fewer dimension */
        if (node[0] != HURRAY_NODE_CONSTANT) {
            node[1] = (uint8_t)(node[1] == 0 || pick(rng, 2) ? node[1] + 1 : node[1] - 1) % 5;
            node[13] = 0;
        }
        break;
    case 3: /* references renumbered: children j + 1, j + 2, ... in field order */
        for (uint32_t k = 0; k < 4; k++) {
            uint32_t field = node[0] == HURRAY_NODE_STEP     ? 6 + k
                             : node[0] == HURRAY_NODE_BITS   ? 5 + k
                             : node[0] == HURRAY_NODE_GATHER ? 4 + k
                                                             : 10;
            if (node[0] == HURRAY_NODE_GATHER && k > 1) {
                break;
            }
            node[field] = (uint8_t)(j + 1 + k);
        }
        break;
    case 4: /* a field byte of the fixed part set to a value the rules test */
    case 5: node[4 + pick(rng, 12)] = graph_good_bytes[pick(rng, sizeof graph_good_bytes)]; break;
    default: break;
    }
    for (uint32_t i = 0; i < count; i++) {
        uint64_t len = hurray__graph_wire_node_len(nodes[i][0], nodes[i][1], nodes[i][13]);
        if (len == 0 || len > sizeof nodes[i]) {
            nodes[i][0] = HURRAY_NODE_CONSTANT;
            nodes[i][1] = 0;
            len = 16;
        }
        lens[i] = (uint32_t)len;
        put_le(nodes[i] + 2, len, 2);
    }
    size_t len = 32 + 8 * (size_t)rank;
    for (uint32_t i = 0; i < count; i++) {
        len += lens[i];
    }
    size_t tail = size - tail_at;
    if (len > max_size || len > HURRAY_MAX_DESCRIPTOR_V2_LEN) {
        return size;
    }
    if (len + tail > max_size) {
        tail = max_size - len;
    }
    memcpy(header, "HRYD", 4);
    put_le(header + 4, 2, 2);
    put_le(header + 6, len, 2);
    header[8] = (uint8_t)rank;
    header[9] = (uint8_t)count;
    if (pick(rng, 4) != 0) {
        memset(header + 11, 0, 21);
    }
    uint8_t *p = out;
    memcpy(p, header, 32);
    p += 32;
    for (uint32_t k = 0; k < rank; k++, p += 8) {
        put_le(p, shape[k], 8);
    }
    for (uint32_t i = 0; i < count; i++) {
        memcpy(p, nodes[i], lens[i]);
        p += lens[i];
    }
    memcpy(p, data + tail_at, tail);
    memcpy(data, out, len + tail);
    return len + tail;
}

#endif /* HURRAY_FUZZ_DESCRIPTOR_GRAPH_H */
