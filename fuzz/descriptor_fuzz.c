/*
 * descriptor_fuzz.c -- libFuzzer target for the descriptor codec and the
 * bounds proof (hurray_descriptor_decode, _encode, _check_buffers).
 *
 * Input: descriptor bytes, then an optional tail that shapes the buffers.
 * The descriptor's own length field (bytes 6-7) says where it ends; when
 * that is not a usable split the whole input is the descriptor and the
 * tail is empty, so the seed vectors decode as they are.
 *
 * Properties, each an abort() (or a sanitizer report) when broken:
 *  1. decode never reads outside its input (ASan) and never hits UB (UBSan);
 *  2. a decoded descriptor re-encodes to exactly its input (canonical form),
 *     and so does one rebuilt from its accessors through the builder;
 *  3. check_buffers says OK exactly when every buffer is at least as long
 *     as the bytes this file computes, by its own simpler arithmetic, that
 *     the parts reach -- and when it says OK, the first and last byte of
 *     every part are read, in buffers malloc'ed to their exact length so
 *     that ASan sees a one-byte overrun;
 *  4. the context version check reads 8 bytes and nothing more, and every
 *     other context call refuses a foreign header without reading on;
 *  5. the quick acceptance (native/src/descriptor_accept.c) never says
 *     valid where the full check refuses, and agrees with it on the facts
 *     (tests/c/accept_compare.h), for a descriptor struct filled straight
 *     from the input's header, dimension and part fields -- before any of
 *     decode's own checks, so every field value reaches both;
 *  6. decode's quick path (native/src/descriptor_decode.c) never takes
 *     bytes the full decode refuses, reads what it takes exactly as the
 *     full decode does, and decode answers as the full decode does
 *     (tests/c/decode_compare.h), on the whole input and on the split
 *     descriptor, each in a buffer of exactly its length.
 *
 *  7. for version 2 (a graph of nodes), properties G1 and G2 of
 *     fuzz/descriptor_fuzz_graph.h: canonical through encode and through
 *     the accessors and builder; check_buffers against buffers sized by
 *     this fuzzer's own reach arithmetic and filled from the tail, with
 *     every code read after an OK and the index scans held to the values.
 *
 * Tail layout: tail[0] bits 0-1 pick the buffer-list length (0/3 exact, 1
 * one short, 2 one extra); tail[1 + i] sizes buffer i: low 2 bits 0 exact,
 * 1 short by 1 + (t >> 2), 2 long by t >> 2, 3 a raw length of t >> 2.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hurray.h"

/* Buffers longer than this are not allocated: their length falls back to
 * the raw small form, which check_buffers must then refuse. */
#define FUZZ_MAX_BUFFER (1u << 20)

typedef __int128 wide;

#define REQUIRE(cond, ...)                                                       \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "descriptor_fuzz: " __VA_ARGS__);                    \
            fprintf(stderr, " [last error: %s]\n", hurray_last_error_message()); \
            abort();                                                             \
        }                                                                        \
    } while (0)

/* Property 5 reads the library's internal header (-Inative/src). */
#define ACCEPT_REQUIRE(cond, what) REQUIRE(cond, "%s", what)
#include "../tests/c/accept_compare.h"
/* Property 6 likewise. */
#define DECODE_REQUIRE(cond, what) REQUIRE(cond, "%s", what)
#include "../tests/c/decode_compare.h"

/* Element count and byte size of one GGML block, from ggml-common.h; kept
 * here rather than asked of the library, so the reach below is checked
 * against an independent table. */
static int ggml_block(uint32_t type, uint64_t *elements, uint64_t *bytes)
{
    /* {code, elements, bytes}, as QUANT-FORMATS.md § 8.2 lists them. */
    static const uint16_t blocks[][3] = {
        {HURRAY_GGML_Q4_0, 32, 18},     {HURRAY_GGML_Q4_1, 32, 20},
        {HURRAY_GGML_Q5_0, 32, 22},     {HURRAY_GGML_Q5_1, 32, 24},
        {HURRAY_GGML_Q8_0, 32, 34},     {HURRAY_GGML_Q2_K, 256, 84},
        {HURRAY_GGML_Q3_K, 256, 110},   {HURRAY_GGML_Q4_K, 256, 144},
        {HURRAY_GGML_Q5_K, 256, 176},   {HURRAY_GGML_Q6_K, 256, 210},
        {HURRAY_GGML_IQ2_XXS, 256, 66}, {HURRAY_GGML_IQ2_XS, 256, 74},
        {HURRAY_GGML_IQ3_XXS, 256, 98}, {HURRAY_GGML_IQ1_S, 256, 50},
        {HURRAY_GGML_IQ4_NL, 32, 18},   {HURRAY_GGML_IQ3_S, 256, 110},
        {HURRAY_GGML_IQ2_S, 256, 82},   {HURRAY_GGML_IQ4_XS, 256, 136},
        {HURRAY_GGML_IQ1_M, 256, 56},   {HURRAY_GGML_TQ1_0, 256, 54},
        {HURRAY_GGML_TQ2_0, 256, 66},   {HURRAY_GGML_MXFP4, 32, 17},
        {HURRAY_GGML_NVFP4, 64, 36},    {HURRAY_GGML_Q1_0, 128, 18},
        {HURRAY_GGML_Q2_0, 64, 18},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        if (blocks[i][0] == type) {
            *elements = blocks[i][1];
            *bytes = blocks[i][2];
            return 1;
        }
    }
    return 0;
}

/* Everything the accessors say, read once. */
typedef struct Fields {
    uint32_t dtype, rank, byte_order, packing;
    uint32_t scheme, granularity, axis, ggml_type;
    uint64_t block_size, buffer_count;
    uint64_t shape[HURRAY_MAX_RANK];
    int64_t strides[HURRAY_MAX_RANK];
    int present[HURRAY_MAX_PARTS + 1]; /* by role */
    uint32_t part_dtype[HURRAY_MAX_PARTS + 1];
    uint64_t part_buffer[HURRAY_MAX_PARTS + 1];
    uint64_t part_offset[HURRAY_MAX_PARTS + 1];
    uint32_t part_layout[HURRAY_MAX_PARTS + 1];
} Fields;

static void read_fields(const HurrayDescriptor *desc, Fields *f)
{
    const uint64_t *shape;
    const int64_t *strides;
    REQUIRE(hurray_descriptor_dtype(desc, &f->dtype) == HURRAY_OK, "dtype accessor failed");
    REQUIRE(hurray_descriptor_rank(desc, &f->rank) == HURRAY_OK, "rank accessor failed");
    REQUIRE(f->rank <= HURRAY_MAX_RANK, "rank %u above the maximum", f->rank);
    REQUIRE(hurray_descriptor_shape(desc, &shape) == HURRAY_OK, "shape accessor failed");
    REQUIRE(hurray_descriptor_strides(desc, &strides) == HURRAY_OK, "strides accessor failed");
    /* Reading every entry lets ASan check the borrowed arrays' extent. */
    for (uint32_t k = 0; k < f->rank; k++) {
        f->shape[k] = shape[k];
        f->strides[k] = strides[k];
    }
    REQUIRE(hurray_descriptor_byte_order(desc, &f->byte_order) == HURRAY_OK, "byte order failed");
    REQUIRE(hurray_descriptor_packing(desc, &f->packing) == HURRAY_OK, "packing failed");
    REQUIRE(hurray_descriptor_quantization(desc, &f->scheme, &f->granularity, &f->axis,
                                           &f->block_size, &f->ggml_type) == HURRAY_OK,
            "quantization accessor failed");
    REQUIRE(hurray_descriptor_buffer_count(desc, &f->buffer_count) == HURRAY_OK,
            "buffer count accessor failed");
    REQUIRE(f->buffer_count >= 1 && f->buffer_count <= HURRAY_MAX_PARTS,
            "buffer count %llu out of range", (unsigned long long)f->buffer_count);
    REQUIRE(hurray_dtype_bits(f->dtype, &(uint32_t){0}) == HURRAY_OK, "values dtype unknown");
    REQUIRE(hurray_dtype_name(f->dtype) != NULL, "values dtype has no name");

    uint32_t d, l;
    uint64_t b, o;
    /* Roles outside 1..4 must be refused, not indexed. */
    REQUIRE(hurray_descriptor_part(desc, 0, &d, &b, &o, &l) != HURRAY_OK, "role 0 accepted");
    REQUIRE(hurray_descriptor_part(desc, HURRAY_MAX_PARTS + 1, &d, &b, &o, &l) != HURRAY_OK,
            "role 5 accepted");
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        HurrayStatus s = hurray_descriptor_part(desc, role, &f->part_dtype[role],
                                                &f->part_buffer[role], &f->part_offset[role],
                                                &f->part_layout[role]);
        REQUIRE(s == HURRAY_OK || s == HURRAY_ERROR_NOT_FOUND, "part %u: status %d", role, s);
        f->present[role] = s == HURRAY_OK;
        if (f->present[role]) {
            REQUIRE(f->part_buffer[role] < f->buffer_count, "part %u: buffer index %llu past %llu",
                    role, (unsigned long long)f->part_buffer[role],
                    (unsigned long long)f->buffer_count);
        }
    }
    REQUIRE(f->present[HURRAY_ROLE_VALUES], "no values part");
    REQUIRE(f->part_dtype[HURRAY_ROLE_VALUES] == f->dtype, "values dtype differs from dtype");
}

static uint8_t encoded[HURRAY_MAX_DESCRIPTOR_V2_LEN];

/* Property 2: encode, and a rebuild from the accessors, give the input. */
static void check_canonical(const HurrayDescriptor *desc, const Fields *f, const uint8_t *data,
                            size_t len)
{
    uint64_t n = 0;
    REQUIRE(hurray_descriptor_validate(desc) == HURRAY_OK, "decoded descriptor fails validate");
    REQUIRE(hurray_descriptor_encode(desc, NULL, 0, &n) == HURRAY_OK && n == len,
            "size query says %llu for a %zu-byte input", (unsigned long long)n, len);
    REQUIRE(hurray_descriptor_encode(desc, encoded, sizeof encoded, &n) == HURRAY_OK,
            "re-encode failed");
    REQUIRE(n == len && memcmp(encoded, data, len) == 0, "re-encoding differs from the input");

    HurrayDescriptor *built = NULL;
    REQUIRE(hurray_descriptor_new(f->dtype, f->rank, f->shape, &built) == HURRAY_OK,
            "builder refused a decoded shape");
    REQUIRE(hurray_descriptor_set_strides(built, f->rank, f->strides) == HURRAY_OK,
            "builder refused decoded strides");
    REQUIRE(hurray_descriptor_set_byte_order(built, f->byte_order) == HURRAY_OK, "byte order");
    REQUIRE(hurray_descriptor_set_packing(built, f->packing) == HURRAY_OK, "packing");
    REQUIRE(hurray_descriptor_set_quantization(built, f->scheme, f->granularity, f->axis,
                                               f->block_size, f->ggml_type) == HURRAY_OK,
            "builder refused decoded quantization");
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (f->present[role]) {
            REQUIRE(hurray_descriptor_set_part(built, role, f->part_dtype[role],
                                               f->part_buffer[role], f->part_offset[role],
                                               f->part_layout[role]) == HURRAY_OK,
                    "builder refused decoded part %u", role);
        }
    }
    REQUIRE(hurray_descriptor_encode(built, encoded, sizeof encoded, &n) == HURRAY_OK,
            "rebuilt descriptor does not encode");
    REQUIRE(n == len && memcmp(encoded, data, len) == 0, "rebuilt descriptor encodes differently");
    hurray_descriptor_destroy(&built);
    REQUIRE(built == NULL, "destroy did not null the pointer");
}

/* The byte range [first, last] one part can reach, or empty. Computed in
 * 128-bit arithmetic so that nothing here can wrap. */
typedef struct Reach {
    int empty;
    wide first, last;
} Reach;

static wide element_count(const Fields *f)
{
    wide count = 1;
    for (uint32_t k = 0; k < f->rank; k++) {
        count *= f->shape[k];
        if (count == 0) {
            return 0;
        }
        /* decode refuses counts above 2^63, so this stays far from 2^127 */
        REQUIRE(count <= ((wide)1 << 64), "element count above 2^64 survived decode");
    }
    return count;
}

static uint32_t bits_of(uint32_t dtype)
{
    uint32_t bits = 0;
    REQUIRE(hurray_dtype_bits(dtype, &bits) == HURRAY_OK, "dtype %u has no width", dtype);
    return bits;
}

static Reach part_reach(const Fields *f, uint32_t role)
{
    Reach r = {1, 0, 0};
    wide count = element_count(f);
    if (count == 0) {
        return r;
    }
    wide offset = f->part_offset[role];
    wide bytes;
    if (role == HURRAY_ROLE_VALUES && f->scheme != HURRAY_SCHEME_GGML) {
        /* Lowest and highest element index, then bits. */
        wide width = f->packing == HURRAY_PACKING_PADDED ? 8 : bits_of(f->dtype);
        wide lo = 0, hi = 0;
        for (uint32_t k = 0; k < f->rank; k++) {
            wide step = (wide)f->strides[k] * (wide)(f->shape[k] - 1);
            if (step < 0) {
                lo += step;
            } else {
                hi += step;
            }
        }
        wide first_bit = 8 * offset + width * lo;
        wide last_bit = 8 * offset + width * hi + width - 1;
        r.empty = 0;
        /* floor division, also for a negative first bit */
        r.first = first_bit >= 0 ? first_bit / 8 : -((-first_bit + 7) / 8);
        r.last = last_bit / 8;
        return r;
    }
    if (role == HURRAY_ROLE_VALUES) {
        uint64_t block_elements, block_bytes;
        REQUIRE(ggml_block(f->ggml_type, &block_elements, &block_bytes),
                "ggml type %u decoded but unknown here", f->ggml_type);
        REQUIRE(count % block_elements == 0, "ggml tensor not whole blocks");
        bytes = count / block_elements * block_bytes;
    } else {
        wide n;
        if (role == HURRAY_ROLE_GLOBAL_SCALE || f->granularity == HURRAY_GRANULARITY_PER_TENSOR) {
            n = 1;
        } else if (f->granularity == HURRAY_GRANULARITY_PER_AXIS) {
            n = f->shape[f->axis];
        } else if (f->part_layout[role] == HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
            wide rows = f->shape[0], cols = f->shape[1] / f->block_size;
            n = (rows + 127) / 128 * 128 * ((cols + 3) / 4 * 4);
        } else {
            n = count / f->block_size;
        }
        uint32_t bits = bits_of(f->part_dtype[role]);
        REQUIRE(bits % 8 == 0, "parameter part %u has a sub-byte dtype", role);
        bytes = n * (bits / 8);
    }
    if (bytes == 0) {
        return r;
    }
    r.empty = 0;
    r.first = offset;
    r.last = offset + bytes - 1;
    return r;
}

static void release_free(void *p)
{
    free(p);
}

/* Property 3. What every buffer must hold, from this file's own reach. */
typedef struct Need {
    Reach reach[HURRAY_MAX_PARTS + 1]; /* by role */
    wide bytes[HURRAY_MAX_PARTS];      /* by buffer */
    int impossible;                    /* a part starts before its buffer */
} Need;

static void compute_need(const Fields *f, Need *n)
{
    memset(n, 0, sizeof *n);
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        n->reach[role].empty = 1;
        if (!f->present[role]) {
            continue;
        }
        n->reach[role] = part_reach(f, role);
        if (n->reach[role].empty) {
            continue;
        }
        if (n->reach[role].first < 0) {
            n->impossible = 1;
        }
        uint64_t b = f->part_buffer[role];
        if (n->reach[role].last + 1 > n->bytes[b]) {
            n->bytes[b] = n->reach[role].last + 1;
        }
    }
}

/* One buffer list of list_len buffers of these sizes, and what
 * check_buffers must answer for it. */
static void check_plan(const HurrayDescriptor *desc, const Fields *f, const Need *n,
                       uint64_t list_len, const uint64_t *sizes)
{
    HurrayBufferList *list = NULL;
    REQUIRE(hurray_buffer_list_new(&list) == HURRAY_OK, "buffer list");
    int fits = 1;
    for (uint64_t i = 0; i < list_len; i++) {
        if (i < f->buffer_count && sizes[i] < n->bytes[i]) {
            fits = 0;
        }
        /* Exactly sizes[i] bytes (malloc(0) included), so ASan's redzone
         * starts at the first byte past the buffer. hurray_buffer_new
         * would round the allocation up to its alignment. */
        uint8_t *data = malloc((size_t)sizes[i]);
        REQUIRE(data != NULL || sizes[i] == 0, "malloc");
        HurrayBuffer *buf = NULL;
        REQUIRE(hurray_buffer_from_ptr(data, sizes[i], release_free, data, &buf) == HURRAY_OK,
                "buffer_from_ptr");
        REQUIRE(hurray_buffer_list_push(list, &buf) == HURRAY_OK && buf == NULL, "push");
    }

    HurrayStatus s = hurray_descriptor_check_buffers(desc, list);
    if (list_len != f->buffer_count) {
        REQUIRE(s == HURRAY_ERROR_INVALID_ARGUMENT,
                "a list of %llu buffers for %llu was answered with %d",
                (unsigned long long)list_len, (unsigned long long)f->buffer_count, s);
    } else if (n->impossible || !fits) {
        REQUIRE(s == HURRAY_ERROR_BUFFER_TOO_SMALL,
                "check_buffers answered %d for buffers that cannot hold the parts", s);
    } else {
        REQUIRE(s == HURRAY_OK, "check_buffers refused (%d) buffers that hold every part", s);
    }
    if (s == HURRAY_OK) {
        /* Touch what an OK promises: after a wrong OK, ASan reports here. */
        volatile uint8_t sink = 0;
        for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
            if (!f->present[role] || n->reach[role].empty) {
                continue;
            }
            const HurrayBuffer *buf;
            void *data;
            uint64_t len;
            REQUIRE(hurray_buffer_list_get(list, f->part_buffer[role], &buf) == HURRAY_OK, "get");
            REQUIRE(hurray_buffer_data(buf, &data, &len) == HURRAY_OK, "data");
            sink ^= ((const uint8_t *)data)[(size_t)n->reach[role].first];
            sink ^= ((const uint8_t *)data)[(size_t)n->reach[role].last];
        }
        (void)sink;
    }
    hurray_buffer_list_destroy(&list);
    REQUIRE(list == NULL, "list destroy did not null the pointer");
}

/* Three kinds of buffer lists: exactly the bytes needed (must pass), each
 * buffer one byte short in turn (must fail), and one shaped by the tail. */
static void check_bounds(const HurrayDescriptor *desc, const Fields *f, const uint8_t *tail,
                         size_t tail_len)
{
    Need n;
    compute_need(f, &n);
    uint64_t sizes[HURRAY_MAX_PARTS + 1] = {0};
    int small = 1;
    for (uint64_t i = 0; i < f->buffer_count; i++) {
        small &= n.bytes[i] <= FUZZ_MAX_BUFFER;
        sizes[i] = small ? (uint64_t)n.bytes[i] : 0;
    }
    if (small) {
        check_plan(desc, f, &n, f->buffer_count, sizes);
        for (uint64_t i = 0; i < f->buffer_count; i++) {
            if (sizes[i] > 0) {
                sizes[i]--;
                check_plan(desc, f, &n, f->buffer_count, sizes);
                sizes[i]++;
            }
        }
    }

    uint8_t flags = tail_len > 0 ? tail[0] : 0;
    uint64_t list_len = f->buffer_count;
    if ((flags & 3) == 1) {
        list_len -= 1;
    } else if ((flags & 3) == 2) {
        list_len += 1;
    }
    for (uint64_t i = 0; i < list_len; i++) {
        uint8_t t = 1 + i < tail_len ? tail[1 + i] : 0;
        wide want = i < f->buffer_count ? n.bytes[i] : 0;
        wide size;
        switch (t & 3) {
        case 0: size = want; break;
        case 1: size = want - 1 - (t >> 2); break;
        case 2: size = want + (t >> 2); break;
        default: size = t >> 2; break;
        }
        if (size < 0 || size > FUZZ_MAX_BUFFER) {
            size = t >> 2;
        }
        sizes[i] = (uint64_t)size;
    }
    check_plan(desc, f, &n, list_len, sizes);
}

/* Property 4: the frozen context header is all the version check reads. */
static void check_context_header(const uint8_t *data, size_t len)
{
    if (len < 8) {
        return;
    }
    /* A private 8-byte copy: reading a 9th byte is an ASan report. */
    uint8_t *header = malloc(8);
    REQUIRE(header != NULL, "malloc");
    memcpy(header, data, 8);
    uint32_t magic, version, out = 0;
    memcpy(&magic, header, 4);
    memcpy(&version, header + 4, 4);
    HurrayStatus s = hurray_tensor_context_abi_version((const HurrayTensorContext *)(void *)header,
                                                       &out);
    if (magic != HURRAY_TENSOR_CONTEXT_MAGIC) {
        REQUIRE(s == HURRAY_ERROR_NOT_A_CONTEXT, "no magic, yet status %d", s);
    } else {
        /* Any version is reported: judging it is the consumer's job. */
        REQUIRE(s == HURRAY_OK && out == version, "a context header was refused (%d)", s);
    }
    if (magic != HURRAY_TENSOR_CONTEXT_MAGIC || version != HURRAY_C_ABI_VERSION) {
        /* The other accessors and destroy must stop at the header too. */
        const uint8_t *bytes = NULL;
        uint64_t n = 0;
        s = hurray_tensor_context_descriptor((const HurrayTensorContext *)(void *)header, &bytes,
                                             &n);
        REQUIRE(s == (magic != HURRAY_TENSOR_CONTEXT_MAGIC ? HURRAY_ERROR_NOT_A_CONTEXT
                                                           : HURRAY_ERROR_ABI_VERSION),
                "a foreign context header gave status %d", s);
        REQUIRE(bytes == NULL && n == 0, "a refused context wrote its out-parameters");
        HurrayTensorContext *ctx = (HurrayTensorContext *)(void *)header;
        hurray_tensor_context_destroy(&ctx); /* must leave foreign memory alone */
        REQUIRE(ctx == (HurrayTensorContext *)(void *)header, "destroy took a foreign context");
    }
    free(header);
}

static uint64_t get_le(const uint8_t *p, int n);

/* Property 5: the input laid into a descriptor struct as decode lays it
 * (header fields, then rank dimensions and strides, then part records
 * whose role byte picks the slot), but with none of decode's checks: the
 * rank is taken modulo 65, unknown roles are skipped, and input too short
 * reads as zeros. */
static void check_quick_acceptance(const uint8_t *data, size_t size)
{
    uint8_t b[HURRAY_MAX_DESCRIPTOR_LEN];
    memset(b, 0, sizeof b);
    memcpy(b, data, size < sizeof b ? size : sizeof b);
    uint32_t rank = b[8] % (HURRAY_MAX_RANK + 1);
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    REQUIRE(desc != NULL, "malloc");
    desc->byte_order = b[9];
    desc->packing = b[10];
    desc->scheme = b[11];
    desc->granularity = b[12];
    desc->axis = (uint32_t)get_le(b + 16, 4);
    desc->ggml_type = (uint32_t)get_le(b + 20, 4);
    desc->block_size = get_le(b + 24, 8);
    for (uint32_t k = 0; k < rank; k++) {
        desc->shape[k] = get_le(b + 32 + 8 * k, 8);
        desc->strides[k] = (int64_t)get_le(b + 32 + 8 * (rank + k), 8);
    }
    desc->part_mask = 0;
    const uint8_t *p = b + 32 + 16 * rank; /* four records fit: 32 + 16 * 64 + 64 = 1120 */
    for (uint32_t i = 0; i < HURRAY_MAX_PARTS && i < b[13]; i++, p += 16) {
        uint32_t role = p[0];
        if (role < HURRAY_ROLE_VALUES || role > HURRAY_ROLE_GLOBAL_SCALE) {
            continue;
        }
        desc->part_mask |= (uint8_t)HURRAY__ROLE_BIT(role);
        desc->parts[role - 1] = (HurrayDescriptorPart){.dtype = p[1],
                                                       .layout = p[2],
                                                       .buffer_index = get_le(p + 4, 4),
                                                       .byte_offset = get_le(p + 8, 8)};
    }
    AcceptTally tally = {0, 0, 0};
    accept_compare(desc, &tally);
    hurray_descriptor_destroy(&desc);
}

/* Property 2, for the context: it keeps an exact copy of the bytes. */
static void check_context_copy(const uint8_t *data, size_t len)
{
    HurrayTensorContext *ctx = NULL;
    REQUIRE(hurray_tensor_context_new(HURRAY_C_ABI_VERSION, data, len, NULL, NULL, &ctx) ==
                HURRAY_OK,
            "context_new refused a valid descriptor");
    uint32_t version = 0;
    const uint8_t *bytes = NULL;
    uint64_t n = 0;
    REQUIRE(hurray_tensor_context_abi_version(ctx, &version) == HURRAY_OK &&
                version == HURRAY_C_ABI_VERSION,
            "context version");
    REQUIRE(hurray_tensor_context_descriptor(ctx, &bytes, &n) == HURRAY_OK && n == len &&
                memcmp(bytes, data, len) == 0,
            "context descriptor copy differs");
    hurray_tensor_context_destroy(&ctx);
    REQUIRE(ctx == NULL, "context destroy did not null the pointer");
}

/* Version 2's properties and mutator (G1, G2). */
#include "descriptor_fuzz_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_context_header(data, size);
    check_quick_acceptance(data, size);
    DecodeTally decode_tally = {0, 0, 0};
    decode_compare(data, size, &decode_tally);

    /* The whole input: decode must refuse anything with a tail, and accept
     * only what re-encodes to the input. */
    HurrayDescriptor *whole = NULL;
    if (hurray_descriptor_decode(data, size, &whole) == HURRAY_OK) {
        uint64_t n = 0;
        REQUIRE(hurray_descriptor_encode(whole, encoded, sizeof encoded, &n) == HURRAY_OK &&
                    n == size && memcmp(encoded, data, size) == 0,
                "whole input decodes but does not re-encode to itself");
        hurray_descriptor_destroy(&whole);
    } else {
        REQUIRE(whole == NULL, "failed decode wrote its out-parameter");
    }

    size_t desc_len = size;
    if (size >= 8) {
        size_t field = (size_t)data[6] | (size_t)data[7] << 8;
        if (field <= size) {
            desc_len = field;
        }
    }
    /* A private copy of exactly desc_len bytes: the split leaves no slack
     * after the descriptor for an overread to land in unnoticed. */
    uint8_t *bytes = malloc(desc_len ? desc_len : 1);
    REQUIRE(bytes != NULL, "malloc");
    memcpy(bytes, data, desc_len);
    decode_compare(bytes, desc_len, &decode_tally);
    HurrayDescriptor *desc = NULL;
    HurrayStatus s = hurray_descriptor_decode(bytes, desc_len, &desc);
    if (s != HURRAY_OK) {
        REQUIRE(desc == NULL, "failed decode wrote its out-parameter");
        REQUIRE(hurray_last_error_message() != NULL && hurray_last_error_message()[0] != '\0',
                "decode failed (%d) without a message", s);
        free(bytes);
        return 0;
    }
    uint32_t version = 0;
    REQUIRE(hurray_descriptor_encoding_version(desc, &version) == HURRAY_OK, "version");
    if (version == 2) {
        graph_check_canonical(desc, bytes, desc_len);
        check_context_copy(bytes, desc_len);
        graph_check_bounds(desc, data + desc_len, size - desc_len);
        hurray_descriptor_destroy(&desc);
        free(bytes);
        return 0;
    }
    Fields f;
    memset(&f, 0, sizeof f);
    read_fields(desc, &f);
#ifdef HURRAY_FUZZ_SELF_TEST
    /* Proves the harness reports findings: any rank-2 descriptor "fails". */
    REQUIRE(f.rank != 2, "self-test finding (HURRAY_FUZZ_SELF_TEST)");
#endif
    check_canonical(desc, &f, bytes, desc_len);
    check_context_copy(bytes, desc_len);
    check_bounds(desc, &f, data + desc_len, size - desc_len);
    hurray_descriptor_destroy(&desc);
    REQUIRE(desc == NULL, "destroy did not null the pointer");
    hurray_descriptor_destroy(&desc); /* destroying a nulled pointer is a no-op */
    free(bytes);
    return 0;
}

/* ---- structure-aware mutation ----------------------------------------
 *
 * Byte-level mutations almost never keep the length field, the rank and
 * the part count in agreement, so on their own they stay in the header
 * checks. One input in eight keeps the plain mutation; the rest are
 * re-laid as a descriptor: the fields are read where the (mutated) rank
 * and part count put them, one structural change is made (a dimension or
 * a part added or removed, row-major strides), and the bytes are written
 * back with a length field that fits. Refusals stay reachable: the
 * reserved bytes and the role order are only usually repaired.
 */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Under MemorySanitizer (HURRAY_FUZZ_SANITIZE=memory) the bytes libFuzzer's
 * uninstrumented mutators wrote look uninitialised to this code. */
#if defined(__has_feature)
#if __has_feature(memory_sanitizer)
#include <sanitizer/msan_interface.h>
#define FUZZ_MUTATED(data, size) __msan_unpoison((data), (size))
#endif
#endif
#ifndef FUZZ_MUTATED
#define FUZZ_MUTATED(data, size) ((void)0)
#endif

static uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static uint64_t pick(uint64_t *state, uint64_t n)
{
    return rng_next(state) % n;
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++, v >>= 8) {
        p[i] = (uint8_t)v;
    }
}

static const uint64_t fuzz_dims[] = {0,  1,  2,  3,  4,   5,   7,   8,  16,
                                     31, 32, 33, 64, 127, 128, 129, 256};

static uint8_t relaid[4096];

static size_t relay(uint8_t *data, size_t size, size_t max_size, uint64_t *rng)
{
    uint8_t header[32] = {0};
    memcpy(header, data, size < 32 ? size : 32);
    uint32_t rank = header[8] % (HURRAY_MAX_RANK + 1);
    uint32_t parts = header[13];
    if (parts < 1 || parts > HURRAY_MAX_PARTS) {
        parts = 1 + parts % HURRAY_MAX_PARTS;
    }
    uint64_t shape[HURRAY_MAX_RANK + 1], strides[HURRAY_MAX_RANK + 1];
    uint8_t part[HURRAY_MAX_PARTS + 1][16];
    size_t at = 32;
    for (uint32_t k = 0; k < rank; k++, at += 8) {
        shape[k] = at + 8 <= size ? get_le(data + at, 8) : fuzz_dims[pick(rng, 17)];
    }
    for (uint32_t k = 0; k < rank; k++, at += 8) {
        strides[k] = at + 8 <= size ? get_le(data + at, 8) : 1;
    }
    for (uint32_t i = 0; i < parts; i++, at += 16) {
        if (at + 16 <= size) {
            memcpy(part[i], data + at, 16);
        } else {
            memset(part[i], 0, 16);
            part[i][0] = (uint8_t)(i + 1);
            part[i][1] = HURRAY_DTYPE_FLOAT32;
        }
    }
    size_t tail_at = at < size ? at : size;

    switch (pick(rng, 8)) {
    case 0: /* insert a dimension */
        if (rank < HURRAY_MAX_RANK) {
            uint32_t j = (uint32_t)pick(rng, rank + 1);
            memmove(shape + j + 1, shape + j, (rank - j) * sizeof shape[0]);
            memmove(strides + j + 1, strides + j, (rank - j) * sizeof strides[0]);
            shape[j] = fuzz_dims[pick(rng, 17)];
            strides[j] = (uint64_t)((int64_t)pick(rng, 67) - 3);
            rank++;
        }
        break;
    case 1: /* delete a dimension */
        if (rank > 0) {
            uint32_t j = (uint32_t)pick(rng, rank);
            memmove(shape + j, shape + j + 1, (rank - j - 1) * sizeof shape[0]);
            memmove(strides + j, strides + j + 1, (rank - j - 1) * sizeof strides[0]);
            rank--;
        }
        break;
    case 2: /* add a part */
        if (parts < HURRAY_MAX_PARTS) {
            memset(part[parts], 0, 16);
            part[parts][0] = (uint8_t)(1 + pick(rng, HURRAY_MAX_PARTS));
            part[parts][1] = (uint8_t)(1 + pick(rng, 42));
            part[parts][2] = (uint8_t)pick(rng, 2);
            part[parts][4] = (uint8_t)pick(rng, 4);
            parts++;
        }
        break;
    case 3: /* remove a part */
        if (parts > 1) {
            uint32_t j = (uint32_t)pick(rng, parts);
            memmove(part[j], part[j + 1], (parts - j - 1) * sizeof part[0]);
            parts--;
        }
        break;
    case 4: /* row-major strides (wrapping: these are only bytes) */
    case 5: {
        uint64_t step = 1;
        for (uint32_t k = rank; k-- > 0;) {
            strides[k] = step;
            step *= shape[k] == 0 ? 1 : shape[k];
        }
        break;
    }
    default: break;
    }

    if (pick(rng, 4) != 0) {
        /* Repair what decode refuses first: reserved bytes, role order. */
        header[14] = header[15] = 0;
        for (uint32_t i = 0; i < parts; i++) {
            part[i][3] = 0;
        }
        for (uint32_t i = 0; i < parts; i++) { /* sort by role, then renumber duplicates */
            for (uint32_t j = i + 1; j < parts; j++) {
                if (part[j][0] < part[i][0]) {
                    uint8_t t[16];
                    memcpy(t, part[i], 16);
                    memcpy(part[i], part[j], 16);
                    memcpy(part[j], t, 16);
                }
            }
        }
        for (uint32_t i = 0; i < parts; i++) {
            uint8_t lowest = (uint8_t)(i == 0 ? 1 : part[i - 1][0] + 1);
            if (part[i][0] < lowest || part[i][0] > HURRAY_MAX_PARTS) {
                part[i][0] = lowest;
            }
        }
    }

    size_t len = 32 + 16 * (size_t)rank + 16 * (size_t)parts;
    size_t tail = size - tail_at;
    if (len > max_size) {
        return size;
    }
    if (len + tail > max_size) {
        tail = max_size - len;
    }
    memcpy(header, "HRYD", 4);
    if (pick(rng, 16) != 0) {
        put_le(header + 4, 1, 2);
    }
    put_le(header + 6, len, 2);
    header[8] = (uint8_t)rank;
    header[13] = (uint8_t)parts;
    uint8_t *p = relaid;
    memcpy(p, header, 32);
    p += 32;
    for (uint32_t k = 0; k < rank; k++, p += 8) {
        put_le(p, shape[k], 8);
    }
    for (uint32_t k = 0; k < rank; k++, p += 8) {
        put_le(p, strides[k], 8);
    }
    for (uint32_t i = 0; i < parts; i++, p += 16) {
        memcpy(p, part[i], 16);
    }
    memcpy(p, data + tail_at, tail);
    memcpy(data, relaid, len + tail);
    return len + tail;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull | 1;
    size = LLVMFuzzerMutate(data, size, max_size);
    FUZZ_MUTATED(data, size);
    if (pick(&rng, 8) == 0) {
        return size;
    }
    /* Version 2 inputs are mostly re-laid as version 2, and a few inputs of
     * either version as the other. */
    int graph = size >= 6 && data[4] == 2 && data[5] == 0;
    if (pick(&rng, 16) == 0) {
        graph = !graph;
    }
    if (graph) {
        return graph_relay(data, size, max_size, &rng);
    }
    return relay(data, size, max_size, &rng);
}
