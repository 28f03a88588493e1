/*
 * gguf_index.c -- hurray_gguf.h: the checked index of a GGUF file in memory.
 *
 * Layout (little-endian): "GGUF", u32 version, u64 tensor count, u64
 * key-value count; key-values (string key, u32 value type, value); tensor
 * infos (string name, u32 rank, u64 dims innermost first, u32 ggml type,
 * u64 offset into the data); padding to general.alignment (default 32);
 * the data. A string is a u64 length and that many bytes.
 *
 * Every read goes through cursor_need first, which compares a count with
 * the bytes that remain (never count + at with size, which could wrap).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray_gguf.h"
#include "status.h"

#define CORRUPT HURRAY_ERROR_CORRUPT
#define GGUF_MAX_DIMS 4
#define GGUF_MAX_NESTING 8
#define GGUF_DEFAULT_ALIGNMENT 32u
#define GGUF_TYPE_UINT32 4u
#define GGUF_TYPE_STRING 8u
#define GGUF_TYPE_ARRAY 9u

struct span {
    uint64_t offset;
    uint64_t len;
};

struct HurrayGgufIndex {
    const uint8_t *data;
    uint32_t version;
    uint64_t alignment;
    uint64_t data_start;
    uint64_t n_tensors;
    uint64_t n_kvs;
    struct span *kvs;
    HurrayGgufTensor *tensors;
    struct named *by_name; /* the tensors' names, sorted, for find */
};

struct cursor {
    const uint8_t *data;
    uint64_t size;
    uint64_t at;
};

/* ---- ggml's type table (facts: GGUF type number, name, block) --------- */

struct ggml_type_row {
    uint32_t number;
    const char *name;
    uint32_t elements;
    uint32_t bytes;
};

static const struct ggml_type_row GGML_TYPES[] = {
    {0, "F32", 1, 4},         {1, "F16", 1, 2},         {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},      {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},      {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},   {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},   {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98}, {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},  {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136}, {24, "I8", 1, 1},         {25, "I16", 1, 2},
    {26, "I32", 1, 4},        {27, "I64", 1, 8},        {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},   {30, "BF16", 1, 2},       {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},   {39, "MXFP4", 32, 17},    {40, "NVFP4", 64, 36},
    {41, "Q1_0", 128, 18},    {42, "Q2_0", 64, 18},
};

static const struct ggml_type_row *ggml_type_row(uint32_t number)
{
    for (size_t i = 0; i < sizeof GGML_TYPES / sizeof GGML_TYPES[0]; i++) {
        if (GGML_TYPES[i].number == number) {
            return &GGML_TYPES[i];
        }
    }
    return NULL;
}

const char *hurray_gguf_type_name(uint32_t ggml_type)
{
    const struct ggml_type_row *row = ggml_type_row(ggml_type);
    return row == NULL ? NULL : row->name;
}

/* ---- reading ------------------------------------------------------------ */

static uint64_t read_le(const uint8_t *p, unsigned bytes)
{
    uint64_t value = 0;
    for (unsigned i = bytes; i-- > 0;) {
        value = (value << 8) | p[i];
    }
    return value;
}

static HurrayStatus cursor_need(const struct cursor *c, uint64_t count, const char *what)
{
    if (count > c->size - c->at) {
        return hurray__fail(CORRUPT,
                            "gguf: %s needs %llu bytes at offset %llu, but the file has only %llu "
                            "left (truncated, or a length that claims too much)",
                            what, (unsigned long long)count, (unsigned long long)c->at,
                            (unsigned long long)(c->size - c->at));
    }
    return HURRAY_OK;
}

static HurrayStatus cursor_uint(struct cursor *c, unsigned bytes, const char *what, uint64_t *out)
{
    HURRAY__TRY(cursor_need(c, bytes, what));
    *out = read_le(c->data + c->at, bytes);
    c->at += bytes;
    return HURRAY_OK;
}

/* Strict UTF-8, as Python's decoder: no overlong forms, surrogates or code
 * points past U+10FFFF. */
static int valid_utf8(const uint8_t *s, uint64_t len)
{
    uint64_t i = 0;
    while (i < len) {
        uint8_t b = s[i];
        uint64_t more;
        uint32_t min, cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            more = 1, min = 0x80, cp = b & 0x1F;
        } else if ((b & 0xF0) == 0xE0) {
            more = 2, min = 0x800, cp = b & 0x0F;
        } else if ((b & 0xF8) == 0xF0) {
            more = 3, min = 0x10000, cp = b & 0x07;
        } else {
            return 0;
        }
        if (more > len - i - 1) {
            return 0;
        }
        for (uint64_t k = 1; k <= more; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
            return 0;
        }
        i += more + 1;
    }
    return 1;
}

/* A string's span; its bytes are checked to lie in the file, and to be
 * UTF-8 when utf8 is set. Messages name the string by what, or, when number
 * is not NO_NUMBER, by what as a format with one %llu for number: a label is
 * formatted only for a refusal, since formatting three per tensor cost more
 * than the rest of the parse. */
#define NO_NUMBER UINT64_MAX
static HurrayStatus cursor_string(struct cursor *c, const char *what, uint64_t number, int utf8,
                                  struct span *out)
{
    if (c->size - c->at >= 8) {
        uint64_t len = read_le(c->data + c->at, 8);
        if (len <= c->size - c->at - 8 && (!utf8 || valid_utf8(c->data + c->at + 8, len))) {
            out->offset = c->at + 8;
            out->len = len;
            c->at += 8 + len;
            return HURRAY_OK;
        }
    }
    char name[96], label[192];
    if (number == NO_NUMBER) {
        snprintf(name, sizeof name, "%s", what);
    } else {
        snprintf(name, sizeof name, what, (unsigned long long)number);
    }
    uint64_t len;
    snprintf(label, sizeof label, "the length of %s", name);
    HURRAY__TRY(cursor_uint(c, 8, label, &len));
    snprintf(label, sizeof label, "%s (%llu bytes)", name, (unsigned long long)len);
    HURRAY__TRY(cursor_need(c, len, label));
    return hurray__fail(CORRUPT, "gguf: %s is not valid UTF-8", name);
}

/* Bytes of a fixed-size GGUF value type; 0 for strings, arrays and unknown types. */
static unsigned scalar_size(uint32_t type)
{
    static const unsigned sizes[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    return type < 13 ? sizes[type] : 0;
}

static HurrayStatus skip_value(struct cursor *c, uint32_t type, unsigned depth, const char *what)
{
    unsigned size = scalar_size(type);
    if (size != 0) {
        HURRAY__TRY(cursor_need(c, size, what));
        c->at += size;
        return HURRAY_OK;
    }
    if (type == GGUF_TYPE_STRING) {
        struct span ignored;
        return cursor_string(c, what, NO_NUMBER, 0, &ignored);
    }
    if (type != GGUF_TYPE_ARRAY) {
        return hurray__fail(CORRUPT, "gguf: %s has unknown value type %u", what, (unsigned)type);
    }
    if (depth >= GGUF_MAX_NESTING) {
        return hurray__fail(CORRUPT, "gguf: %s nests arrays more than %d deep", what,
                            GGUF_MAX_NESTING);
    }
    uint64_t inner, count;
    HURRAY__TRY(cursor_uint(c, 4, what, &inner));
    HURRAY__TRY(cursor_uint(c, 8, what, &count));
    unsigned element = scalar_size((uint32_t)inner);
    if (element == 0 && inner != GGUF_TYPE_STRING && inner != GGUF_TYPE_ARRAY) {
        return hurray__fail(CORRUPT, "gguf: %s has unknown element type %llu", what,
                            (unsigned long long)inner);
    }
    /* A string or array element takes at least its 8-byte length. */
    uint64_t least = element != 0 ? element : 8;
    char label[96];
    snprintf(label, sizeof label, "%s (%llu elements)", what, (unsigned long long)count);
    if (count > (c->size - c->at) / least) {
        return cursor_need(c, UINT64_MAX, label);
    }
    if (element != 0) {
        c->at += count * element;
        return HURRAY_OK;
    }
    for (uint64_t k = 0; k < count; k++) {
        HURRAY__TRY(skip_value(c, (uint32_t)inner, depth + 1, what));
    }
    return HURRAY_OK;
}

/* ---- sorting: each item carries what its comparison needs (qsort has no context) ---- */

struct named {
    const uint8_t *bytes;
    uint64_t len;
    uint64_t index;
};

static int compare_named(const void *a, const void *b)
{
    const struct named *x = a, *y = b;
    uint64_t common = x->len < y->len ? x->len : y->len;
    int order = common ? memcmp(x->bytes, y->bytes, (size_t)common) : 0;
    if (order != 0) {
        return order;
    }
    return x->len < y->len ? -1 : x->len > y->len;
}

struct placed {
    uint64_t start;
    uint64_t index;
};

static int compare_placed(const void *a, const void *b)
{
    const struct placed *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- the header ---------------------------------------------------------- */

static HurrayStatus read_preamble(struct cursor *c, HurrayGgufIndex *index)
{
    HURRAY__TRY(cursor_need(c, 4, "the magic"));
    if (memcmp(c->data, "GGUF", 4) != 0) {
        return hurray__fail(CORRUPT, "gguf: not a GGUF file: the magic is not \"GGUF\"");
    }
    c->at = 4;
    uint64_t version;
    HURRAY__TRY(cursor_uint(c, 4, "the version", &version));
    if (version != 2 && version != 3) {
        uint32_t v = (uint32_t)version;
        uint32_t swapped = (v >> 24) | ((v >> 8) & 0xFF00u) | ((v << 8) & 0xFF0000u) | (v << 24);
        if (swapped == 2 || swapped == 3) {
            return hurray__fail(
                HURRAY_ERROR_UNSUPPORTED,
                "gguf: a big-endian GGUF file (version %u); only little-endian files are read",
                (unsigned)swapped);
        }
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                            "gguf: GGUF version %u is not read (only 2 and 3)", (unsigned)v);
    }
    index->version = (uint32_t)version;
    HURRAY__TRY(cursor_uint(c, 8, "the tensor count", &index->n_tensors));
    HURRAY__TRY(cursor_uint(c, 8, "the key-value count", &index->n_kvs));
    return HURRAY_OK;
}

static HurrayStatus read_kvs(struct cursor *c, HurrayGgufIndex *index)
{
    char label[96];
    /* Each key-value takes at least 8 + 4 bytes: refuse a count beyond that before allocating. */
    snprintf(label, sizeof label, "%llu key-values", (unsigned long long)index->n_kvs);
    if (index->n_kvs > (c->size - c->at) / 12) {
        return cursor_need(c, UINT64_MAX, label);
    }
    index->kvs = calloc(index->n_kvs ? (size_t)index->n_kvs : 1, sizeof *index->kvs);
    struct named *keys = calloc(index->n_kvs ? (size_t)index->n_kvs : 1, sizeof *keys);
    if (index->kvs == NULL || keys == NULL) {
        free(keys);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "gguf: no memory for %llu key-values",
                            (unsigned long long)index->n_kvs);
    }
    HurrayStatus status = HURRAY_OK;
    for (uint64_t i = 0; i < index->n_kvs && status == HURRAY_OK; i++) {
        struct span key;
        uint64_t type;
        uint64_t start = c->at;
        status = cursor_string(c, "key %llu", i, 1, &key);
        if (status == HURRAY_OK) {
            if (c->size - c->at < 4) { /* the label is read only by the refusal */
                snprintf(label, sizeof label, "key %llu", (unsigned long long)i);
            }
            status = cursor_uint(c, 4, label, &type);
        }
        if (status != HURRAY_OK) {
            break;
        }
        keys[i] = (struct named){c->data + key.offset, key.len, i};
        int is_alignment = key.len == 17 &&
                           memcmp(c->data + key.offset, "general.alignment", 17) == 0;
        if (is_alignment) {
            uint64_t value;
            if (type != GGUF_TYPE_UINT32) {
                status = hurray__fail(
                    CORRUPT, "gguf: general.alignment must be a uint32, not value type %llu",
                    (unsigned long long)type);
            } else if ((status = cursor_uint(c, 4, "general.alignment", &value)) == HURRAY_OK) {
                if (value == 0 || (value & (value - 1)) != 0) {
                    status = hurray__fail(
                        CORRUPT, "gguf: general.alignment %llu is not a nonzero power of two",
                        (unsigned long long)value);
                }
                index->alignment = value;
            }
        } else {
            snprintf(label, sizeof label, "the value of key %llu", (unsigned long long)i);
            status = skip_value(c, (uint32_t)type, 0, label);
        }
        index->kvs[i] = (struct span){start, c->at - start};
    }
    if (status == HURRAY_OK && index->n_kvs > 1) {
        qsort(keys, (size_t)index->n_kvs, sizeof *keys, compare_named);
        for (uint64_t i = 1; i < index->n_kvs && status == HURRAY_OK; i++) {
            if (compare_named(&keys[i - 1], &keys[i]) == 0) {
                status = hurray__fail(CORRUPT, "gguf: duplicate key '%.*s'",
                                      (int)(keys[i].len > 200 ? 200 : keys[i].len),
                                      (const char *)keys[i].bytes);
            }
        }
    }
    free(keys);
    return status;
}

static HurrayStatus read_tensor_info(struct cursor *c, uint64_t i, HurrayGgufTensor *t)
{
    struct span name;
    HURRAY__TRY(cursor_string(c, "the name of tensor %llu", i, 1, &name));
    t->name_offset = name.offset;
    t->name_len = name.len;
    int shown = (int)(name.len > 200 ? 200 : name.len);
    const char *text = (const char *)c->data + name.offset;
    uint64_t rank;
    HURRAY__TRY(cursor_uint(c, 4, "a tensor's rank", &rank));
    if (rank > GGUF_MAX_DIMS) {
        return hurray__fail(CORRUPT,
                            "gguf: tensor '%.*s' has %llu dimensions; GGUF allows at most %d",
                            shown, text, (unsigned long long)rank, GGUF_MAX_DIMS);
    }
    t->rank = (uint32_t)rank;
    for (uint64_t d = 0; d < rank; d++) { /* innermost first in the file; numpy order here */
        HURRAY__TRY(cursor_uint(c, 8, "a tensor's dimension", &t->shape[rank - 1 - d]));
    }
    uint64_t type;
    HURRAY__TRY(cursor_uint(c, 4, "a tensor's type", &type));
    t->ggml_type = (uint32_t)type;
    HURRAY__TRY(cursor_uint(c, 8, "a tensor's offset", &t->data_offset));
    return HURRAY_OK;
}

/* Checks one tensor's place: aligned, whole blocks, inside the file. data_offset
 * becomes absolute. */
static HurrayStatus place_tensor(const struct cursor *c, const HurrayGgufIndex *index,
                                 HurrayGgufTensor *t)
{
    int shown = (int)(t->name_len > 200 ? 200 : t->name_len);
    const char *text = (const char *)c->data + t->name_offset;
    if (t->data_offset % index->alignment != 0) {
        return hurray__fail(
            CORRUPT, "gguf: tensor '%.*s': offset %llu is not a multiple of the alignment %llu",
            shown, text, (unsigned long long)t->data_offset, (unsigned long long)index->alignment);
    }
    if (t->data_offset > c->size - index->data_start) {
        return hurray__fail(CORRUPT,
                            "gguf: tensor '%.*s': offset %llu lies outside the file of %llu bytes",
                            shown, text, (unsigned long long)t->data_offset,
                            (unsigned long long)c->size);
    }
    t->data_offset += index->data_start;
    const struct ggml_type_row *row = ggml_type_row(t->ggml_type);
    if (row == NULL) {
        t->size_known = 0;
        t->nbytes = 0;
        return HURRAY_OK;
    }
    uint64_t inner = t->rank ? t->shape[t->rank - 1] : 1;
    if (inner % row->elements != 0) {
        return hurray__fail(
            CORRUPT,
            "gguf: tensor '%.*s': its innermost dimension %llu is not whole %s blocks of %u", shown,
            text, (unsigned long long)inner, row->name, (unsigned)row->elements);
    }
    uint64_t count = 1;
    int zero = 0;
    for (uint32_t d = 0; d < t->rank; d++) {
        zero |= t->shape[d] == 0;
    }
    for (uint32_t d = 0; d < t->rank && !zero; d++) {
        if (t->shape[d] > UINT64_MAX / count) {
            return hurray__fail(
                CORRUPT,
                "gguf: tensor '%.*s': its shape has more elements than 64 bits count "
                "(lies outside the file)",
                shown, text);
        }
        count *= t->shape[d];
    }
    uint64_t blocks = zero ? 0 : count / row->elements;
    if (blocks > (c->size - t->data_offset) / row->bytes) {
        return hurray__fail(
            CORRUPT,
            "gguf: tensor '%.*s': %llu blocks of %s from byte %llu lie outside the file "
            "of %llu bytes (truncated, or an offset or shape that claims too much)",
            shown, text, (unsigned long long)blocks, row->name, (unsigned long long)t->data_offset,
            (unsigned long long)c->size);
    }
    t->nbytes = blocks * row->bytes;
    t->size_known = 1;
    return HURRAY_OK;
}

static HurrayStatus read_tensors(struct cursor *c, HurrayGgufIndex *index)
{
    char label[96];
    snprintf(label, sizeof label, "%llu tensor infos", (unsigned long long)index->n_tensors);
    /* Each tensor info takes at least 8 + 4 + 4 + 8 bytes. */
    if (index->n_tensors > (c->size - c->at) / 24) {
        return cursor_need(c, UINT64_MAX, label);
    }
    size_t n = index->n_tensors ? (size_t)index->n_tensors : 1;
    index->tensors = calloc(n, sizeof *index->tensors);
    index->by_name = calloc(n, sizeof *index->by_name);
    struct placed *order = calloc(n, sizeof *order);
    if (index->tensors == NULL || index->by_name == NULL || order == NULL) {
        free(order);
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "gguf: no memory for %llu tensors",
                            (unsigned long long)index->n_tensors);
    }
    HurrayStatus status = HURRAY_OK;
    for (uint64_t i = 0; i < index->n_tensors && status == HURRAY_OK; i++) {
        status = read_tensor_info(c, i, &index->tensors[i]);
    }
    if (status == HURRAY_OK) {
        /* The header ends here: the data starts at the next multiple of the alignment. */
        uint64_t pad = (index->alignment - c->at % index->alignment) % index->alignment;
        index->data_start = c->at + pad;
        if (index->n_tensors != 0 && pad > c->size - c->at) {
            status = hurray__fail(CORRUPT,
                                  "gguf: the data would start at byte %llu, past the end of the "
                                  "%llu-byte file (truncated)",
                                  (unsigned long long)index->data_start,
                                  (unsigned long long)c->size);
        }
    }
    uint64_t sized = 0;
    for (uint64_t i = 0; i < index->n_tensors && status == HURRAY_OK; i++) {
        HurrayGgufTensor *t = &index->tensors[i];
        status = place_tensor(c, index, t);
        index->by_name[i] = (struct named){c->data + t->name_offset, t->name_len, i};
        if (status == HURRAY_OK && t->size_known && t->nbytes != 0) {
            order[sized++] = (struct placed){t->data_offset, i};
        }
    }
    if (status == HURRAY_OK && index->n_tensors > 1) {
        qsort(index->by_name, (size_t)index->n_tensors, sizeof *index->by_name, compare_named);
        for (uint64_t i = 1; i < index->n_tensors && status == HURRAY_OK; i++) {
            if (compare_named(&index->by_name[i - 1], &index->by_name[i]) == 0) {
                const struct named *dup = &index->by_name[i];
                status = hurray__fail(CORRUPT, "gguf: duplicate tensor name '%.*s'",
                                      (int)(dup->len > 200 ? 200 : dup->len),
                                      (const char *)dup->bytes);
            }
        }
    }
    if (status == HURRAY_OK && sized > 1) {
        qsort(order, (size_t)sized, sizeof *order, compare_placed);
        for (uint64_t k = 1; k < sized && status == HURRAY_OK; k++) {
            const HurrayGgufTensor *a = &index->tensors[order[k - 1].index];
            const HurrayGgufTensor *b = &index->tensors[order[k].index];
            if (b->data_offset < a->data_offset + a->nbytes) {
                status = hurray__fail(CORRUPT, "gguf: tensors '%.*s' and '%.*s' overlap",
                                      (int)(a->name_len > 100 ? 100 : a->name_len),
                                      (const char *)c->data + a->name_offset,
                                      (int)(b->name_len > 100 ? 100 : b->name_len),
                                      (const char *)c->data + b->name_offset);
            }
        }
    }
    free(order);
    return status;
}

HurrayStatus hurray_gguf_index_parse(const uint8_t *data, uint64_t size, HurrayGgufIndex **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_gguf_index_parse: out is NULL");
    }
    *out = NULL;
    if (data == NULL && size != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_gguf_index_parse: data is NULL");
    }
    HurrayGgufIndex *index = calloc(1, sizeof *index);
    if (index == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_gguf_index_parse: no memory");
    }
    index->data = data;
    index->alignment = GGUF_DEFAULT_ALIGNMENT;
    struct cursor c = {data, size, 0};
    HurrayStatus status = read_preamble(&c, index);
    if (status == HURRAY_OK) {
        status = read_kvs(&c, index);
    }
    if (status == HURRAY_OK) {
        status = read_tensors(&c, index);
    }
    if (status != HURRAY_OK) {
        hurray_gguf_index_destroy(&index);
        return status;
    }
    *out = index;
    return HURRAY_OK;
}

HurrayStatus hurray_gguf_index_info(const HurrayGgufIndex *index, uint32_t *out_version,
                                    uint64_t *out_alignment, uint64_t *out_data_start,
                                    uint64_t *out_tensor_count, uint64_t *out_kv_count)
{
    if (index == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_gguf_index_info: index is NULL");
    }
    if (out_version != NULL) {
        *out_version = index->version;
    }
    if (out_alignment != NULL) {
        *out_alignment = index->alignment;
    }
    if (out_data_start != NULL) {
        *out_data_start = index->data_start;
    }
    if (out_tensor_count != NULL) {
        *out_tensor_count = index->n_tensors;
    }
    if (out_kv_count != NULL) {
        *out_kv_count = index->n_kvs;
    }
    return HURRAY_OK;
}

HurrayStatus hurray_gguf_index_kv(const HurrayGgufIndex *index, uint64_t i, uint64_t *out_offset,
                                  uint64_t *out_len)
{
    if (index == NULL || out_offset == NULL || out_len == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_gguf_index_kv: index, out_offset or out_len is NULL");
    }
    if (i >= index->n_kvs) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_gguf_index_kv: key-value %llu of %llu", (unsigned long long)i,
                            (unsigned long long)index->n_kvs);
    }
    *out_offset = index->kvs[i].offset;
    *out_len = index->kvs[i].len;
    return HURRAY_OK;
}

HurrayStatus hurray_gguf_index_tensor(const HurrayGgufIndex *index, uint64_t i,
                                      HurrayGgufTensor *out)
{
    if (index == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_gguf_index_tensor: index or out is NULL");
    }
    if (i >= index->n_tensors) {
        return hurray__fail(HURRAY_ERROR_OUT_OF_RANGE,
                            "hurray_gguf_index_tensor: tensor %llu of %llu", (unsigned long long)i,
                            (unsigned long long)index->n_tensors);
    }
    *out = index->tensors[i];
    return HURRAY_OK;
}

HurrayStatus hurray_gguf_index_find(const HurrayGgufIndex *index, const char *name,
                                    uint64_t name_len, uint64_t *out_index)
{
    if (index == NULL || out_index == NULL || (name == NULL && name_len != 0)) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_gguf_index_find: index, name or out_index is NULL");
    }
    struct named key = {(const uint8_t *)name, name_len, 0};
    uint64_t low = 0, high = index->n_tensors;
    while (low < high) {
        uint64_t mid = low + (high - low) / 2;
        int order = compare_named(&index->by_name[mid], &key);
        if (order == 0) {
            *out_index = index->by_name[mid].index;
            return HURRAY_OK;
        }
        if (order < 0) {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    return hurray__fail(HURRAY_ERROR_NOT_FOUND,
                        "hurray_gguf_index_find: no tensor is called '%.*s'",
                        (int)(name_len > 200 ? 200 : name_len), name ? name : "");
}

void hurray_gguf_index_destroy(HurrayGgufIndex **index)
{
    if (index == NULL || *index == NULL) {
        return;
    }
    free((*index)->kvs);
    free((*index)->tensors);
    free((*index)->by_name);
    free(*index);
    *index = NULL;
}
