/*
 * graph_text.h -- a version-2 descriptor as text, both ways, through the
 * public API only: graph_text_dump reads every field with the accessors of
 * hurray.h, graph_text_build makes a descriptor from such text with the
 * builder. So build(dump(d)) re-encoding to d's bytes proves the accessors
 * and the builder state the same fields. Used by tests/c/test_descriptor_graph.c,
 * tests/c/vectors_check.c (the golden vectors) and fuzz/descriptor_fuzz.c.
 *
 * The text, one line each (names, not codes; lists comma-separated, empty
 * for none):
 *   tensor shape=16,64 result=float16
 *   node 0 step form=sub_mul arithmetic=float16 shape=16,64 x=1 scale=2
 *     offset=3 blocks=1,0 flags=0 indexed_axis=1 group_index=4
 *   node 1 stored dtype=uint4 shape=16,64 strides=1,16 buffer=0 offset=0
 *     byte_order=little layout=row_major addressing=words packing=dense
 *     container_bits=32 packed_axis=1 chunk_containers=0 slot_flags=0
 *     chunk_stride=0 order= code_offset=0 codebook=0 value_rule=standard
 *   node 2 constant dtype=float32 value=0x45280000
 *   node 3 ggml type=q4_0 shape=2,64 buffer=0 offset=0
 *   node 4 bits shape=16,64 inputs=5,6 shifts=0,4 offset=0
 *   node 5 gather shape=4,3 x=6 index=7 axis=0
 * (each node on one line; result=none when unstated). graph_text_build also
 * takes lines that leave fields out: a missing field keeps the builder's
 * default. Include once, after hurray.h.
 */
#ifndef HURRAY_TESTS_GRAPH_TEXT_H
#define HURRAY_TESTS_GRAPH_TEXT_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const graph_kinds[] = {"?",    "stored", "constant", "step",
                                          "ggml", "bits",   "gather"};
static const char *const graph_forms[] = {"?", "mul", "div", "sub_mul", "mul_add", "mul_sub"};
static const char *const graph_packings[] = {"none",       "padded", "lsb_first",
                                             "ggml_split", "dense",  "slots"};
static const char *const graph_layouts[] = {"row_major", "swizzled_128x4"};
static const char *const graph_orders[] = {"little", "big"};
static const char *const graph_addressings[] = {"elements", "words"};
static const char *const graph_rules[] = {"standard", "e8m0_no_nan"};

#define GRAPH_COUNT(a) (sizeof(a) / sizeof((a)[0]))

static inline const char *graph_name(const char *const *names, size_t count, uint32_t code)
{
    return code < count ? names[code] : "?";
}

/* The code of a name, or -1. */
static inline int64_t graph_code(const char *const *names, size_t count, const char *name)
{
    for (size_t i = 0; i < count; i++) {
        if (strcmp(names[i], name) == 0) {
            return (int64_t)i;
        }
    }
    return -1;
}

static inline int64_t graph_dtype_code(const char *name)
{
    if (strcmp(name, "none") == 0) {
        return 0;
    }
    for (uint32_t code = 1; code < 256; code++) {
        const char *known = hurray_dtype_name(code);
        if (known != NULL && strcmp(known, name) == 0) {
            return code;
        }
    }
    return -1;
}

static inline int64_t graph_ggml_code(const char *name)
{
    for (uint32_t code = 0; code < 256; code++) {
        const char *known = hurray_ggml_name(code);
        if (known != NULL && strcmp(known, name) == 0) {
            return code;
        }
    }
    return -1;
}

/* ---- dump ---- */

typedef struct GraphOut {
    char *at;
    size_t left;
    int overflow;
} GraphOut;

static inline void graph_put(GraphOut *o, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(o->at, o->left, fmt, args);
    va_end(args);
    if (n < 0 || (size_t)n >= o->left) {
        o->overflow = 1;
        o->left = 0;
        return;
    }
    o->at += n;
    o->left -= (size_t)n;
}

static inline void graph_put_u64s(GraphOut *o, const char *key, const uint64_t *v, uint32_t n)
{
    graph_put(o, " %s=", key);
    for (uint32_t k = 0; k < n; k++) {
        graph_put(o, k ? ",%" PRIu64 : "%" PRIu64, v[k]);
    }
}

static inline void graph_put_i64s(GraphOut *o, const char *key, const int64_t *v, uint32_t n)
{
    graph_put(o, " %s=", key);
    for (uint32_t k = 0; k < n; k++) {
        graph_put(o, k ? ",%" PRId64 : "%" PRId64, v[k]);
    }
}

static inline const char *graph_dtype_name(uint32_t code)
{
    const char *name = hurray_dtype_name(code);
    return name != NULL ? name : "?";
}

/* The text of a version-2 descriptor into out; a status other than OK
 * when an accessor fails (or HURRAY_ERROR_OUT_OF_RANGE when out is short). */
static inline HurrayStatus graph_text_dump(const HurrayDescriptor *desc, char *out, size_t cap)
{
    GraphOut o = {out, cap, 0};
    HurrayStatus s;
    uint32_t rank, count, result;
    const uint64_t *shape;
#define GRAPH_TRY(call)       \
    do {                      \
        s = (call);           \
        if (s != HURRAY_OK) { \
            return s;         \
        }                     \
    } while (0)
    GRAPH_TRY(hurray_descriptor_rank(desc, &rank));
    GRAPH_TRY(hurray_descriptor_shape(desc, &shape));
    GRAPH_TRY(hurray_descriptor_node_count(desc, &count));
    GRAPH_TRY(hurray_descriptor_result_dtype(desc, &result));
    graph_put(&o, "tensor");
    graph_put_u64s(&o, "shape", shape, rank);
    graph_put(&o, " result=%s\n", result == 0 ? "none" : graph_dtype_name(result));
    for (uint32_t i = 0; i < count; i++) {
        uint32_t kind, node_rank;
        const uint64_t *node_shape;
        GRAPH_TRY(hurray_descriptor_node_kind(desc, i, &kind));
        GRAPH_TRY(hurray_descriptor_node_shape(desc, i, &node_rank, &node_shape));
        graph_put(&o, "node %u %s", (unsigned)i,
                  graph_name(graph_kinds, GRAPH_COUNT(graph_kinds), kind));
        switch (kind) {
        case HURRAY_NODE_STORED: {
            uint32_t dtype, order, layout, addressing, packing, bits, axis, flags, slots, book,
                rule;
            uint64_t buffer, offset, chunk, stride;
            int32_t code_offset;
            const int64_t *strides;
            const uint8_t *slot_order;
            GRAPH_TRY(hurray_descriptor_stored(desc, i, &dtype, &buffer, &offset, &order, &layout));
            GRAPH_TRY(hurray_descriptor_stored_strides(desc, i, &strides));
            GRAPH_TRY(hurray_descriptor_stored_packing(desc, i, &addressing, &packing, &bits, &axis,
                                                       &chunk, &flags, &stride, &slots,
                                                       &slot_order));
            GRAPH_TRY(hurray_descriptor_stored_codes(desc, i, &code_offset, &book, &rule));
            graph_put(&o, " dtype=%s", graph_dtype_name(dtype));
            graph_put_u64s(&o, "shape", node_shape, node_rank);
            graph_put_i64s(&o, "strides", strides, node_rank);
            graph_put(&o, " buffer=%" PRIu64 " offset=%" PRIu64 " byte_order=%s layout=%s", buffer,
                      offset, graph_name(graph_orders, GRAPH_COUNT(graph_orders), order),
                      graph_name(graph_layouts, GRAPH_COUNT(graph_layouts), layout));
            graph_put(&o, " addressing=%s packing=%s container_bits=%u packed_axis=%u",
                      graph_name(graph_addressings, GRAPH_COUNT(graph_addressings), addressing),
                      graph_name(graph_packings, GRAPH_COUNT(graph_packings), packing),
                      (unsigned)bits, (unsigned)axis);
            graph_put(&o, " chunk_containers=%" PRIu64 " slot_flags=%u chunk_stride=%" PRIu64,
                      chunk, (unsigned)flags, stride);
            graph_put(&o, " order=");
            for (uint32_t k = 0; k < slots; k++) {
                graph_put(&o, k ? ",%u" : "%u", (unsigned)slot_order[k]);
            }
            graph_put(&o, " code_offset=%" PRId32 " codebook=%u value_rule=%s", code_offset,
                      (unsigned)book, graph_name(graph_rules, GRAPH_COUNT(graph_rules), rule));
            break;
        }
        case HURRAY_NODE_CONSTANT: {
            uint32_t dtype;
            uint64_t value;
            GRAPH_TRY(hurray_descriptor_constant(desc, i, &dtype, &value));
            graph_put(&o, " dtype=%s value=0x%" PRIx64, graph_dtype_name(dtype), value);
            break;
        }
        case HURRAY_NODE_STEP: {
            uint32_t form, arithmetic, x, scale, offset, flags, axis, group;
            const uint64_t *blocks;
            GRAPH_TRY(hurray_descriptor_step(desc, i, &form, &arithmetic, &x, &scale, &offset));
            GRAPH_TRY(hurray_descriptor_step_groups(desc, i, &blocks, &flags, &axis, &group));
            graph_put(&o, " form=%s arithmetic=%s",
                      graph_name(graph_forms, GRAPH_COUNT(graph_forms), form),
                      graph_dtype_name(arithmetic));
            graph_put_u64s(&o, "shape", node_shape, node_rank);
            graph_put(&o, " x=%u scale=%u offset=%u", (unsigned)x, (unsigned)scale,
                      (unsigned)offset);
            graph_put_u64s(&o, "blocks", blocks, node_rank);
            graph_put(&o, " flags=%u indexed_axis=%u group_index=%u", (unsigned)flags,
                      (unsigned)axis, (unsigned)group);
            break;
        }
        case HURRAY_NODE_GGML: {
            uint32_t type;
            uint64_t buffer, offset;
            GRAPH_TRY(hurray_descriptor_ggml_node(desc, i, &type, &buffer, &offset));
            const char *name = hurray_ggml_name(type);
            graph_put(&o, " type=%s", name != NULL ? name : "?");
            graph_put_u64s(&o, "shape", node_shape, node_rank);
            graph_put(&o, " buffer=%" PRIu64 " offset=%" PRIu64, buffer, offset);
            break;
        }
        case HURRAY_NODE_BITS: {
            uint32_t n, inputs[4], shifts[4];
            int32_t offset;
            GRAPH_TRY(hurray_descriptor_bits(desc, i, &n, inputs, shifts, &offset));
            graph_put_u64s(&o, "shape", node_shape, node_rank);
            graph_put(&o, " inputs=");
            for (uint32_t k = 0; k < n; k++) {
                graph_put(&o, k ? ",%u" : "%u", (unsigned)inputs[k]);
            }
            graph_put(&o, " shifts=");
            for (uint32_t k = 0; k < n; k++) {
                graph_put(&o, k ? ",%u" : "%u", (unsigned)shifts[k]);
            }
            graph_put(&o, " offset=%" PRId32, offset);
            break;
        }
        default: { /* gather */
            uint32_t x, index, axis;
            GRAPH_TRY(hurray_descriptor_gather(desc, i, &x, &index, &axis));
            graph_put_u64s(&o, "shape", node_shape, node_rank);
            graph_put(&o, " x=%u index=%u axis=%u", (unsigned)x, (unsigned)index, (unsigned)axis);
            break;
        }
        }
        graph_put(&o, "\n");
    }
#undef GRAPH_TRY
    return o.overflow ? HURRAY_ERROR_OUT_OF_RANGE : HURRAY_OK;
}

/* ---- build ---- */

/* One line's "key=value" fields, looked up by key. */
typedef struct GraphFields {
    int count;
    char key[40][24];
    char value[40][2048];
} GraphFields;

static inline const char *graph_field(const GraphFields *f, const char *key)
{
    for (int i = 0; i < f->count; i++) {
        if (strcmp(f->key[i], key) == 0) {
            return f->value[i];
        }
    }
    return NULL;
}

/* A list "1,2,3" (empty for none) into v, at most 64 entries; -1 on a
 * malformed one, else the count. */
static inline int graph_list(const char *text, int is_signed, uint64_t *u, int64_t *s)
{
    int n = 0;
    if (text == NULL) {
        return -1;
    }
    while (*text != '\0') {
        if (n == 64) {
            return -1;
        }
        char *end;
        if (is_signed) {
            s[n++] = strtoll(text, &end, 0);
        } else {
            u[n++] = strtoull(text, &end, 0);
        }
        if (end == text || (*end != ',' && *end != '\0')) {
            return -1;
        }
        text = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* The number under key, or dflt when the key is absent; *bad on a malformed one. */
static inline uint64_t graph_u64d(const GraphFields *f, const char *key, uint64_t dflt, int *bad)
{
    const char *v = graph_field(f, key);
    if (v == NULL) {
        return dflt;
    }
    char *end;
    uint64_t value = strtoull(v, &end, 0);
    if (*v == '\0' || *v == '-' || *end != '\0') {
        *bad = 1;
    }
    return value;
}

static inline int64_t graph_i64d(const GraphFields *f, const char *key, int64_t dflt, int *bad)
{
    const char *v = graph_field(f, key);
    if (v == NULL) {
        return dflt;
    }
    char *end;
    int64_t value = strtoll(v, &end, 0);
    if (*v == '\0' || *end != '\0') {
        *bad = 1;
    }
    return value;
}

static inline uint32_t graph_named(const GraphFields *f, const char *key, const char *const *names,
                                   size_t count, int *bad)
{
    const char *v = graph_field(f, key);
    int64_t code = v == NULL ? -1 : graph_code(names, count, v);
    if (code < 0) {
        *bad = 1;
        return 0;
    }
    return (uint32_t)code;
}

static inline uint32_t graph_dtype(const GraphFields *f, const char *key, int *bad)
{
    const char *v = graph_field(f, key);
    int64_t code = v == NULL ? -1 : graph_dtype_code(v);
    if (code < 0) {
        *bad = 1;
        return 0;
    }
    return (uint32_t)code;
}

/* Splits "word word key=value key=value" after the first `skip` words. */
static inline int graph_split(const char *line, int skip, GraphFields *f, char words[3][24])
{
    f->count = 0;
    int word = 0;
    while (*line != '\0') {
        while (*line == ' ') {
            line++;
        }
        if (*line == '\0') {
            break;
        }
        const char *end = line;
        while (*end != ' ' && *end != '\0') {
            end++;
        }
        size_t n = (size_t)(end - line);
        if (word < skip) {
            if (n >= sizeof words[0]) {
                return -1;
            }
            memcpy(words[word], line, n);
            words[word][n] = '\0';
            word++;
        } else {
            const char *eq = memchr(line, '=', n);
            if (eq == NULL || f->count == 40 || (size_t)(eq - line) >= sizeof f->key[0] ||
                (size_t)(end - eq - 1) >= sizeof f->value[0]) {
                return -1;
            }
            memcpy(f->key[f->count], line, (size_t)(eq - line));
            f->key[f->count][eq - line] = '\0';
            memcpy(f->value[f->count], eq + 1, (size_t)(end - eq - 1));
            f->value[f->count][end - eq - 1] = '\0';
            f->count++;
        }
        line = end;
    }
    return word == skip ? 0 : -1;
}

/* A descriptor from the text; HURRAY_ERROR_INVALID_ARGUMENT (with the
 * thread's message untouched) for text that is not in the format, else the
 * first builder call's status. On failure *out is NULL. */
static inline HurrayStatus graph_text_build(const char *text, HurrayDescriptor **out)
{
    static GraphFields f; /* large: not on the stack */
    char words[3][24];
    char line[8192];
    HurrayDescriptor *desc = NULL;
    HurrayStatus s = HURRAY_OK;
    uint64_t dims[64], extra[64];
    int64_t strides[64];
    uint32_t result_dtype = 0; /* set after the first node: version 1 has no such field */
    *out = NULL;
#define GRAPH_BAD()                           \
    do {                                      \
        hurray_descriptor_destroy(&desc);     \
        return HURRAY_ERROR_INVALID_ARGUMENT; \
    } while (0)
#define GRAPH_CALL(call)                      \
    do {                                      \
        s = (call);                           \
        if (s != HURRAY_OK) {                 \
            hurray_descriptor_destroy(&desc); \
            return s;                         \
        }                                     \
    } while (0)
    int first = 1;
    while (*text != '\0') {
        const char *nl = strchr(text, '\n');
        size_t n = nl != NULL ? (size_t)(nl - text) : strlen(text);
        if (n >= sizeof line) {
            GRAPH_BAD();
        }
        memcpy(line, text, n);
        line[n] = '\0';
        text = nl != NULL ? nl + 1 : text + n;
        if (n == 0) {
            continue;
        }
        int bad = 0;
        if (first) {
            if (graph_split(line, 1, &f, words) != 0 || strcmp(words[0], "tensor") != 0) {
                GRAPH_BAD();
            }
            int rank = graph_list(graph_field(&f, "shape"), 0, dims, NULL);
            uint32_t result = graph_field(&f, "result") == NULL ? 0
                                                                : graph_dtype(&f, "result", &bad);
            if (rank < 0 || bad) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, (uint32_t)rank, dims, &desc));
            result_dtype = result;
            first = 0;
            continue;
        }
        if (graph_split(line, 3, &f, words) != 0 || strcmp(words[0], "node") != 0) {
            GRAPH_BAD();
        }
        int64_t kind = graph_code(graph_kinds, GRAPH_COUNT(graph_kinds), words[2]);
        uint32_t index = 0, want = (uint32_t)strtoul(words[1], NULL, 10);
        int rank = kind == HURRAY_NODE_CONSTANT
                       ? 0
                       : graph_list(graph_field(&f, "shape"), 0, dims, NULL);
        if (rank < 0) {
            GRAPH_BAD();
        }
        switch (kind) {
        case HURRAY_NODE_STORED: {
            uint32_t dtype = graph_dtype(&f, "dtype", &bad);
            uint64_t buffer = graph_u64d(&f, "buffer", 0, &bad);
            uint64_t offset = graph_u64d(&f, "offset", 0, &bad);
            if (bad) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_add_stored(desc, dtype, (uint32_t)rank, dims, buffer,
                                                    offset, &index));
            if (graph_field(&f, "strides") != NULL) {
                if (graph_list(graph_field(&f, "strides"), 1, NULL, strides) != rank) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_stored_set_strides(desc, index, (uint32_t)rank,
                                                                strides));
            }
            if (graph_field(&f, "byte_order") != NULL) {
                uint32_t order = graph_named(&f, "byte_order", graph_orders,
                                             GRAPH_COUNT(graph_orders), &bad);
                if (bad) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_stored_set_byte_order(desc, index, order));
            }
            if (graph_field(&f, "layout") != NULL) {
                uint32_t layout = graph_named(&f, "layout", graph_layouts,
                                              GRAPH_COUNT(graph_layouts), &bad);
                if (bad) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_stored_set_layout(desc, index, layout));
            }
            uint32_t addressing = HURRAY_ADDRESSING_ELEMENTS;
            if (graph_field(&f, "addressing") != NULL) {
                addressing = graph_named(&f, "addressing", graph_addressings,
                                         GRAPH_COUNT(graph_addressings), &bad);
            }
            uint64_t bits = graph_u64d(&f, "container_bits", 0, &bad);
            uint64_t axis = graph_u64d(&f, "packed_axis", 0, &bad);
            uint64_t chunk = graph_u64d(&f, "chunk_containers", 0, &bad);
            uint64_t flags = graph_u64d(&f, "slot_flags", 0, &bad);
            uint64_t cstride = graph_u64d(&f, "chunk_stride", 0, &bad);
            int slots = graph_field(&f, "order") == NULL
                            ? 0
                            : graph_list(graph_field(&f, "order"), 0, extra, NULL);
            if (bad || slots < 0 || bits > UINT32_MAX || axis > UINT32_MAX || flags > UINT32_MAX) {
                GRAPH_BAD();
            }
            uint8_t order_bytes[64];
            for (int k = 0; k < slots; k++) {
                order_bytes[k] = (uint8_t)extra[k];
            }
            if (addressing == HURRAY_ADDRESSING_WORDS) {
                uint32_t packing = graph_named(&f, "packing", graph_packings,
                                               GRAPH_COUNT(graph_packings), &bad);
                if (bad) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_stored_set_words(desc, index, (uint32_t)bits,
                                                              (uint32_t)axis, packing, chunk,
                                                              (uint32_t)flags, cstride,
                                                              (uint32_t)slots, order_bytes));
            } else {
                if (bits != 0 || axis != 0 || chunk != 0 || flags != 0 || cstride != 0 ||
                    slots != 0) {
                    GRAPH_BAD(); /* elements addressing has no such fields */
                }
                if (graph_field(&f, "packing") != NULL) {
                    uint32_t packing = graph_named(&f, "packing", graph_packings,
                                                   GRAPH_COUNT(graph_packings), &bad);
                    if (bad) {
                        GRAPH_BAD();
                    }
                    GRAPH_CALL(hurray_descriptor_stored_set_elements(desc, index, packing));
                }
            }
            if (graph_field(&f, "code_offset") != NULL || graph_field(&f, "codebook") != NULL ||
                graph_field(&f, "value_rule") != NULL) {
                int64_t code_offset = graph_i64d(&f, "code_offset", 0, &bad);
                uint64_t book = graph_u64d(&f, "codebook", 0, &bad);
                uint32_t rule = graph_field(&f, "value_rule") == NULL
                                    ? 0
                                    : graph_named(&f, "value_rule", graph_rules,
                                                  GRAPH_COUNT(graph_rules), &bad);
                if (bad || book > UINT32_MAX || code_offset < INT32_MIN ||
                    code_offset > INT32_MAX) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_stored_set_codes(desc, index, (int32_t)code_offset,
                                                              (uint32_t)book, rule));
            }
            break;
        }
        case HURRAY_NODE_CONSTANT: {
            uint32_t dtype = graph_dtype(&f, "dtype", &bad);
            uint64_t value = graph_u64d(&f, "value", UINT64_MAX, &bad);
            if (bad || graph_field(&f, "value") == NULL) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_add_constant(desc, dtype, value, &index));
            break;
        }
        case HURRAY_NODE_STEP: {
            uint32_t form = graph_named(&f, "form", graph_forms, GRAPH_COUNT(graph_forms), &bad);
            uint32_t arithmetic = graph_dtype(&f, "arithmetic", &bad);
            uint64_t x = graph_u64d(&f, "x", UINT64_MAX, &bad);
            uint64_t scale = graph_u64d(&f, "scale", UINT64_MAX, &bad);
            uint64_t offset = graph_u64d(&f, "offset", 0, &bad);
            if (bad || x > UINT32_MAX || scale > UINT32_MAX || offset > UINT32_MAX) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_add_step(desc, form, arithmetic, (uint32_t)rank, dims,
                                                  (uint32_t)x, (uint32_t)scale, (uint32_t)offset,
                                                  &index));
            if (graph_field(&f, "blocks") != NULL || graph_field(&f, "flags") != NULL ||
                graph_field(&f, "indexed_axis") != NULL || graph_field(&f, "group_index") != NULL) {
                int blocks = rank;
                for (int k = 0; k < rank; k++) {
                    extra[k] = 1;
                }
                if (graph_field(&f, "blocks") != NULL) {
                    blocks = graph_list(graph_field(&f, "blocks"), 0, extra, NULL);
                }
                uint64_t flags = graph_u64d(&f, "flags", 0, &bad);
                uint64_t axis = graph_u64d(&f, "indexed_axis", 0, &bad);
                uint64_t group = graph_u64d(&f, "group_index", 0, &bad);
                if (bad || blocks != rank || flags > UINT32_MAX || axis > UINT32_MAX ||
                    group > UINT32_MAX) {
                    GRAPH_BAD();
                }
                GRAPH_CALL(hurray_descriptor_step_set_groups(desc, index, (uint32_t)rank, extra,
                                                             (uint32_t)flags, (uint32_t)axis,
                                                             (uint32_t)group));
            }
            break;
        }
        case HURRAY_NODE_GGML: {
            const char *name = graph_field(&f, "type");
            int64_t type = name == NULL ? -1 : graph_ggml_code(name);
            uint64_t buffer = graph_u64d(&f, "buffer", 0, &bad);
            uint64_t offset = graph_u64d(&f, "offset", 0, &bad);
            if (bad || type < 0) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_add_ggml(desc, (uint32_t)type, (uint32_t)rank, dims,
                                                  buffer, offset, &index));
            break;
        }
        case HURRAY_NODE_BITS: {
            uint64_t in[64], sh[64];
            int inputs = graph_list(graph_field(&f, "inputs"), 0, in, NULL);
            int shifts = graph_list(graph_field(&f, "shifts"), 0, sh, NULL);
            int64_t offset = graph_i64d(&f, "offset", 0, &bad);
            if (bad || inputs < 1 || inputs > 4 || shifts != inputs || offset < INT32_MIN ||
                offset > INT32_MAX) {
                GRAPH_BAD();
            }
            uint32_t in32[4], sh32[4];
            for (int k = 0; k < inputs; k++) {
                in32[k] = in[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)in[k];
                sh32[k] = sh[k] > UINT32_MAX ? UINT32_MAX : (uint32_t)sh[k];
            }
            GRAPH_CALL(hurray_descriptor_add_bits(desc, (uint32_t)rank, dims, (uint32_t)inputs,
                                                  in32, sh32, (int32_t)offset, &index));
            break;
        }
        case HURRAY_NODE_GATHER: {
            uint64_t x = graph_u64d(&f, "x", UINT64_MAX, &bad);
            uint64_t ix = graph_u64d(&f, "index", UINT64_MAX, &bad);
            uint64_t axis = graph_u64d(&f, "axis", UINT64_MAX, &bad);
            if (bad || x > UINT32_MAX || ix > UINT32_MAX || axis > UINT32_MAX) {
                GRAPH_BAD();
            }
            GRAPH_CALL(hurray_descriptor_add_gather(desc, (uint32_t)rank, dims, (uint32_t)x,
                                                    (uint32_t)ix, (uint32_t)axis, &index));
            break;
        }
        default: GRAPH_BAD();
        }
        if (index != want) {
            GRAPH_BAD(); /* nodes are listed in index order */
        }
    }
    if (desc == NULL) {
        return HURRAY_ERROR_INVALID_ARGUMENT;
    }
    if (result_dtype != 0) {
        GRAPH_CALL(hurray_descriptor_set_result_dtype(desc, result_dtype));
    }
#undef GRAPH_BAD
#undef GRAPH_CALL
    *out = desc;
    return HURRAY_OK;
}

#endif /* HURRAY_TESTS_GRAPH_TEXT_H */
