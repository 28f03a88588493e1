/*
 * descriptor_decode.c -- hurray_descriptor_decode: bytes from anyone to a
 * checked descriptor (layer 4), and its quick path (ADR-047): the three
 * encodings most exchanges carry, a plain tensor, an affine-quantized one
 * with row-major parts, and a GGML one, read and checked in one straight
 * pass over the bytes, straight into the descriptor with its verdict and
 * facts.
 *
 * Like the quick acceptance (ADR-038) the quick path only ever says yes:
 * anything it does not recognise, valid or not, it leaves to the full
 * decode (descriptor_decode_full.c), which reads the bytes again and
 * judges them by the one definition of the rules, with its messages. What
 * it does say yes to, the full decode accepts too, with the same fields and
 * facts: the fuzzer compares the two on every input it makes
 * (fuzz/descriptor_fuzz.c, property 6), and tests/c/test_decode_quick.c on
 * a sweep over every byte of a set of encodings (tests/c/decode_compare.h).
 *
 * Why a path of its own: on the full decode's path, bytes go into the
 * struct, and the quick acceptance then reads them back, loops over the
 * roles twice and walks the dimensions once more, about 450 instructions
 * for a three-part descriptor; here each byte is looked at once, most
 * header facts are one compare of a word, and the dimensions are walked as
 * they are copied.
 */
#include "descriptor_decode.h"

#include "descriptor_reach.h"
#include "descriptor_wire.h"
#include "dtype.h"
#include "status.h"

/* Bytes 0-7 of an encoding of len bytes, read as one little-endian word:
 * the magic "HRYD", version 1, and the total length. */
#define FRAME_WORD(len) \
    ((uint64_t)0x44595248u | (uint64_t)HURRAY__DESCRIPTOR_VERSION << 32 | (uint64_t)(len) << 48)

/* In the header's second word (bytes 8-15): byte 13 is the part count,
 * byte 12 the granularity, bytes 14-15 reserved. */
#define HEAD_PART_COUNT(head) ((uint32_t)(uint8_t)((head) >> 40))
#define HEAD_GRANULARITY(head) ((uint32_t)(uint8_t)((head) >> 32))

/* In a part's first word (role, dtype, layout, reserved byte, buffer
 * index): the bits that are all zero exactly when the layout is row_major,
 * the reserved byte is zero and the buffer index is below 4. */
#define PART_ROW_MAJOR_SMALL_INDEX 0xFFFFFFFCFFFF0000u

#define BIT(x) (1u << (x))

/* The quick path's pieces are inlined into hurray_descriptor_decode: a
 * call and its saved registers cost about 1 ns, a tenth of the path. */
#define QUICK static inline __attribute__((always_inline))

/* Kinds as bit sets: kind codes are below 8. */
#define KINDS_AFFINE_VALUES (BIT(HURRAY__KIND_INT) | BIT(HURRAY__KIND_FP8))
#define KINDS_ZERO_POINT                                                       \
    (BIT(HURRAY__KIND_INT) | BIT(HURRAY__KIND_FLOAT) | BIT(HURRAY__KIND_FP8) | \
     BIT(HURRAY__KIND_FP6) | BIT(HURRAY__KIND_FP4))

/* The descriptor with its header fields and dimensions read, and the walk
 * over the dimensions in *shape; NULL (nothing kept) when out of memory or
 * when the product of the dimensions is too large, which the full decode
 * then reports. */
QUICK HurrayDescriptor *read_header_and_dims(const uint8_t *bytes, uint64_t head, uint32_t rank,
                                             HurrayShapeFacts *shape)
{
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    if (desc == NULL) {
        return NULL;
    }
    desc->byte_order = (uint8_t)(head >> 8);
    desc->packing = (uint8_t)(head >> 16);
    desc->scheme = (uint8_t)(head >> 24);
    desc->granularity = (uint8_t)(head >> 32);
    desc->axis = get32(bytes + 16);
    desc->ggml_type = get32(bytes + 20);
    desc->block_size = get64(bytes + 24);
    /* Walked as they are copied: the walk's arithmetic also keeps the copy
     * from becoming a rep movs, slow to start for a few words. */
    const uint8_t *dims = bytes + HURRAY__DESCRIPTOR_HEADER_LEN;
    HurrayWalk walk = hurray__walk_start();
    for (uint32_t k = 0; k < rank; k++) {
        uint64_t dim = get64(dims + 8 * k);
        /* A stride's bits are its int64_t value: exact-width types are
         * two's complement. */
        int64_t stride = (int64_t)get64(dims + 8 * ((uint64_t)rank + k));
        desc->shape[k] = dim;
        desc->strides[k] = stride;
        if (!hurray__walk_step(&walk, dim, stride)) {
            free(desc);
            return NULL;
        }
    }
    hurray__walk_end(&walk, shape);
    return desc;
}

/* The part a word and its byte offset describe, which the caller has
 * proved row-major with a buffer index below 4. */
QUICK void set_part(HurrayDescriptor *desc, uint64_t word, const uint8_t *part)
{
    /* Field by field: a compound literal would also zero the padding. */
    HurrayDescriptorPart *p = &desc->parts[(uint8_t)word - 1];
    p->dtype = (uint8_t)(word >> 8);
    p->layout = HURRAY_PART_LAYOUT_ROW_MAJOR;
    p->buffer_index = word >> 32;
    p->byte_offset = get64(part + 8);
}

/* A strided values part whose reach fits whatever the width, so that no
 * product below can overflow (HURRAY__REACH_ALWAYS_FITS). */
QUICK int span_fits(const HurrayShapeFacts *shape)
{
    return shape->element_count == 0 ||
           (!shape->span_overflows && shape->span <= HURRAY__REACH_ALWAYS_FITS &&
            shape->element_count <= HURRAY__REACH_ALWAYS_FITS);
}

/* The buffer count and the values part's reach. Only the facts of the
 * parts present are written: no one reads the others (check_buffers
 * visits the part mask). The reach in bits fits 63 bits (span_fits), so
 * rounding up to bytes cannot overflow. */
QUICK void values_facts(HurrayDescriptor *desc, const HurrayShapeFacts *shape, uint32_t bits,
                        uint32_t buffer_count)
{
    HurrayDescriptorFacts *facts = &desc->facts;
    facts->buffer_count = buffer_count;
    uint64_t before = 0, after = 0;
    if (shape->element_count != 0) {
        uint64_t width = desc->packing == HURRAY_PACKING_PADDED ? 8 : bits;
        before = (shape->backward * width + 7) / 8;
        after = ((shape->span - shape->backward) * width + 7) / 8;
    }
    facts->before[HURRAY_ROLE_VALUES - 1] = before;
    facts->after[HURRAY_ROLE_VALUES - 1] = after;
}

/* Scheme none: one part, the values, row-major in buffer 0; granularity
 * none and its fields zero. */
QUICK HurrayDescriptor *quick_plain(const uint8_t *bytes, uint64_t head, uint32_t rank)
{
    const uint8_t *part = bytes + HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * rank;
    uint64_t word = get64(part);
    uint32_t byte_order = (uint8_t)(head >> 8);
    const struct hurray__dtype_info *values = hurray__dtype_row((uint8_t)(word >> 8));
    if (HEAD_PART_COUNT(head) != 1 || HEAD_GRANULARITY(head) != HURRAY_GRANULARITY_NONE ||
        byte_order > HURRAY_BYTE_ORDER_BIG || (get64(bytes + 16) | get64(bytes + 24)) != 0 ||
        (word & ~(uint64_t)0xFF00) != HURRAY_ROLE_VALUES || values->kind == HURRAY__KIND_NONE ||
        !hurray__packing_fits_quickly((uint8_t)(head >> 16), values->bits)) {
        return NULL;
    }
    HurrayShapeFacts shape;
    HurrayDescriptor *desc = read_header_and_dims(bytes, head, rank, &shape);
    if (desc == NULL) {
        return NULL;
    }
    if (!span_fits(&shape)) {
        free(desc);
        return NULL;
    }
    desc->part_mask = HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES);
    set_part(desc, word, part);
    values_facts(desc, &shape, values->bits, 1);
    return desc;
}

/* Scheme affine: values of an integer or fp8 type, a float scale, maybe a
 * zero point, no global scale; every part row-major; granularity per
 * tensor, per axis or per block with its fields in range. */
QUICK HurrayDescriptor *quick_affine(const uint8_t *bytes, uint64_t head, uint32_t rank)
{
    uint32_t part_count = HEAD_PART_COUNT(head);
    if (part_count != 2 && part_count != 3) {
        return NULL; /* and the parts below are all inside the input */
    }
    uint32_t granularity = HEAD_GRANULARITY(head);
    uint32_t axis = get32(bytes + 16);
    uint64_t block_size = get64(bytes + 24);
    const uint8_t *parts = bytes + HURRAY__DESCRIPTOR_HEADER_LEN +
                           HURRAY__DESCRIPTOR_DIM_LEN * rank;
    uint64_t values_word = get64(parts);
    uint64_t scale_word = get64(parts + HURRAY__DESCRIPTOR_PART_LEN);
    /* A third part must be the zero point; read the scale's again when
     * there is none, which passes every test a zero point must. */
    uint64_t zero_word = part_count == 3 ? get64(parts + 2 * HURRAY__DESCRIPTOR_PART_LEN)
                                         : (scale_word & ~(uint64_t)0xFF) | HURRAY_ROLE_ZERO_POINT;
    const struct hurray__dtype_info *values = hurray__dtype_row((uint8_t)(values_word >> 8));
    const struct hurray__dtype_info *scale = hurray__dtype_row((uint8_t)(scale_word >> 8));
    const struct hurray__dtype_info *zero = hurray__dtype_row((uint8_t)(zero_word >> 8));
    /* Indices of 4 or more are refused below; masked here only to keep
     * the shifts defined. */
    uint32_t used = BIT((values_word >> 32) & 31) | BIT((scale_word >> 32) & 31) |
                    BIT((zero_word >> 32) & 31);
    int per_tensor = granularity == HURRAY_GRANULARITY_PER_TENSOR;
    if (granularity - HURRAY_GRANULARITY_PER_TENSOR >
            HURRAY_GRANULARITY_PER_BLOCK - HURRAY_GRANULARITY_PER_TENSOR ||
        (uint8_t)(head >> 8) > HURRAY_BYTE_ORDER_BIG || get32(bytes + 20) != 0 ||
        (per_tensor ? axis != 0 : axis >= rank) ||
        (granularity == HURRAY_GRANULARITY_PER_BLOCK) != (block_size != 0) ||
        ((values_word | scale_word | zero_word) & PART_ROW_MAJOR_SMALL_INDEX) != 0 ||
        (uint8_t)values_word != HURRAY_ROLE_VALUES || (uint8_t)scale_word != HURRAY_ROLE_SCALE ||
        (uint8_t)zero_word != HURRAY_ROLE_ZERO_POINT ||
        !((KINDS_AFFINE_VALUES >> values->kind) & 1) ||
        !hurray__packing_fits_quickly((uint8_t)(head >> 16), values->bits) ||
        scale->kind != HURRAY__KIND_FLOAT || scale->bits % 8 != 0 ||
        !((KINDS_ZERO_POINT >> zero->kind) & 1) || zero->bits % 8 != 0 ||
        (used >> __builtin_ctz(~used)) != 0) {
        return NULL;
    }
    HurrayShapeFacts shape;
    HurrayDescriptor *desc = read_header_and_dims(bytes, head, rank, &shape);
    if (desc == NULL) {
        return NULL;
    }
    if (!span_fits(&shape) || (block_size != 0 && desc->shape[axis] % block_size != 0)) {
        free(desc);
        return NULL;
    }
    set_part(desc, values_word, parts);
    set_part(desc, scale_word, parts + HURRAY__DESCRIPTOR_PART_LEN);
    uint32_t mask = HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES) | HURRAY__ROLE_BIT(HURRAY_ROLE_SCALE);
    if (part_count == 3) {
        set_part(desc, zero_word, parts + 2 * HURRAY__DESCRIPTOR_PART_LEN);
        mask |= HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT);
    }
    desc->part_mask = (uint8_t)mask;
    values_facts(desc, &shape, values->bits, (uint32_t)__builtin_ctz(~used));
    /* At most one parameter per element: no product can overflow. */
    uint64_t count = shape.element_count == 0
                         ? 0
                         : hurray__descriptor_parameter_count(desc, HURRAY_ROLE_SCALE,
                                                              shape.element_count);
    desc->facts.before[HURRAY_ROLE_SCALE - 1] = 0;
    desc->facts.after[HURRAY_ROLE_SCALE - 1] = count * (scale->bits / 8);
    if (part_count == 3) {
        desc->facts.before[HURRAY_ROLE_ZERO_POINT - 1] = 0;
        desc->facts.after[HURRAY_ROLE_ZERO_POINT - 1] = count * (zero->bits / 8);
    }
    return desc;
}

/* Scheme ggml: a known block type; one part, uint8 block bytes, row-major
 * in buffer 0; little-endian, packing none, granularity none and its fields
 * zero; a last dimension of whole blocks and row-major strides. */
QUICK HurrayDescriptor *quick_ggml(const uint8_t *bytes, uint64_t head, uint32_t rank)
{
    const uint8_t *part = bytes + HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * rank;
    uint64_t word = get64(part);
    uint64_t block_elements, block_bytes;
    /* Byte order, packing and granularity little, none and none: zero,
     * like bytes 16-19 (axis) and 24-31 (block size). */
    if (HEAD_PART_COUNT(head) != 1 || (head & 0xFF00FFFF00u) != 0 || rank == 0 ||
        (get32(bytes + 16) | get64(bytes + 24)) != 0 ||
        word != (HURRAY_ROLE_VALUES | (uint64_t)HURRAY_DTYPE_UINT8 << 8) ||
        !hurray__ggml_block(get32(bytes + 20), &block_elements, &block_bytes)) {
        return NULL;
    }
    HurrayShapeFacts shape;
    HurrayDescriptor *desc = read_header_and_dims(bytes, head, rank, &shape);
    if (desc == NULL) {
        return NULL;
    }
    if (desc->shape[rank - 1] % block_elements != 0 || !hurray__descriptor_is_row_major(desc) ||
        shape.element_count > HURRAY__REACH_ALWAYS_FITS) {
        free(desc);
        return NULL;
    }
    desc->part_mask = HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES);
    set_part(desc, word, part);
    /* The last dimension holds whole blocks: the division is exact. */
    desc->facts.buffer_count = 1;
    desc->facts.before[HURRAY_ROLE_VALUES - 1] = 0;
    desc->facts.after[HURRAY_ROLE_VALUES - 1] = shape.element_count / block_elements * block_bytes;
    return desc;
}

QUICK HurrayDescriptor *decode_quick(const uint8_t *bytes, uint64_t len)
{
    /* The frame (magic, version, total length), then rank and part count
     * within bounds and together the length, the reserved bytes zero. */
    if (len < HURRAY__DESCRIPTOR_HEADER_LEN || len > HURRAY_MAX_DESCRIPTOR_LEN) {
        return NULL;
    }
    uint64_t head = get64(bytes + 8);
    uint32_t rank = (uint8_t)head;
    uint32_t part_count = HEAD_PART_COUNT(head);
    if (get64(bytes) != FRAME_WORD(len) || rank > HURRAY_MAX_RANK ||
        part_count - 1 >= HURRAY_MAX_PARTS || (head >> 48) != 0 ||
        len != HURRAY__DESCRIPTOR_HEADER_LEN + HURRAY__DESCRIPTOR_DIM_LEN * (uint64_t)rank +
                   HURRAY__DESCRIPTOR_PART_LEN * (uint64_t)part_count) {
        return NULL;
    }
    HurrayDescriptor *desc;
    switch ((uint8_t)(head >> 24)) {
    case HURRAY_SCHEME_NONE: desc = quick_plain(bytes, head, rank); break;
    case HURRAY_SCHEME_AFFINE: desc = quick_affine(bytes, head, rank); break;
    case HURRAY_SCHEME_GGML: desc = quick_ggml(bytes, head, rank); break;
    default: return NULL;
    }
    if (desc != NULL) {
        desc->checked = 1;
    }
    return desc;
}

HurrayDescriptor *hurray__descriptor_decode_quick(const uint8_t *bytes, uint64_t len)
{
    return decode_quick(bytes, len);
}

HurrayStatus hurray_descriptor_decode(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_decode: out is NULL");
    }
    if (bytes == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_decode: bytes is NULL");
    }
    HurrayDescriptor *desc = decode_quick(bytes, len);
    if (desc != NULL) {
        *out = desc;
        return HURRAY_OK;
    }
    return hurray__descriptor_decode_full(bytes, len, out);
}
