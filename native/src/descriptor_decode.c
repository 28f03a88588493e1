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
 * index), every bit but the dtype's: with a part's role, they read exactly
 * that role when the layout is row_major, the reserved byte is zero and
 * the buffer index is below 4. */
#define PART_FIXED_BITS 0xFFFFFFFCFFFF00FFu

/* The quick path's pieces are inlined into hurray_descriptor_decode: a
 * call and its saved registers cost about 1 ns, a tenth of the path. */
#define QUICK static inline __attribute__((always_inline))

/* A compiler barrier, put between the checks and the walk: what follows
 * reads the descriptor's fields back from memory, so the values the checks
 * worked out end there, instead of living across the walk in registers
 * spilled to the stack and back. Measured on the affine path: 17.3 to
 * 16.9 ns (bench/descriptor_bench.c). */
#define END_OF_CHECKS() __asm__ volatile("" ::: "memory")

/* The quick walk's bound, a power of two so that one test checks both a
 * count and a span against it. */
#define QUICK_BOUND_BITS 55
_Static_assert(((uint64_t)1 << QUICK_BOUND_BITS) <= HURRAY__REACH_ALWAYS_FITS,
               "counts and spans below the quick bound fit any reach");

/* A descriptor for rank dimensions with the header's fields set, or NULL
 * when out of memory. */
QUICK HurrayDescriptor *new_with_header(const uint8_t *bytes, uint32_t rank)
{
    HurrayDescriptor *desc = hurray__descriptor_alloc(rank);
    if (desc == NULL) {
        return NULL;
    }
    hurray__descriptor_read_header(desc, bytes);
    return desc;
}

/* The dimensions and strides copied into desc, and the walk over them in
 * *shape; 0 for the rare shapes the full decode then judges: a dimension
 * of zero, or a product or a sum of 2^55 or more. So, unlike the full walk
 * (descriptor_reach.h), this one needs neither a separate product of the
 * dimensions counted as at least one, nor a flag for a span that
 * overflows. Called with a constant rank for the common ranks, so that
 * the loop unrolls into straight code with constant offsets. */
QUICK int walk_dims_of_rank(HurrayDescriptor *desc, const uint8_t *bytes, uint32_t rank,
                            HurrayShapeFacts *shape)
{
    const uint8_t *dims = bytes + HURRAY__DESCRIPTOR_HEADER_LEN;
    uint64_t count = 1, span = 0, backward = 0;
    for (uint32_t k = 0; k < rank; k++) {
        uint64_t dim = get64(dims + 8 * k);
        /* A stride's bits are its int64_t value: exact-width types are
         * two's complement. */
        uint64_t stride = get64(dims + 8 * ((uint64_t)rank + k));
        desc->storage[k] = dim;
        desc->storage[rank + k] = stride;
        /* All ones for a negative stride: its magnitude is then its two's
         * complement, 2^63 for INT64_MIN, and its step counts backward. */
        uint64_t negative = 0 - (stride >> 63);
        uint64_t step;
        if (dim == 0 || __builtin_mul_overflow(count, dim, &count) ||
            __builtin_mul_overflow((stride ^ negative) - negative, dim - 1, &step) ||
            __builtin_add_overflow(span, step, &span)) {
            return 0;
        }
        backward += step & negative; /* at most span */
    }
    /* Below 2^55, under HURRAY__REACH_ALWAYS_FITS, no reach computed from
     * these can overflow, whatever the widths; a power of two is one test. */
    if (((count | span) >> QUICK_BOUND_BITS) != 0) {
        return 0;
    }
    shape->element_count = count;
    shape->span = span + 1;
    shape->backward = backward;
    return 1;
}

QUICK int walk_dims(HurrayDescriptor *desc, const uint8_t *bytes, HurrayShapeFacts *shape)
{
    switch (desc->rank) {
    case 1: return walk_dims_of_rank(desc, bytes, 1, shape);
    case 2: return walk_dims_of_rank(desc, bytes, 2, shape);
    case 3: return walk_dims_of_rank(desc, bytes, 3, shape);
    case 4: return walk_dims_of_rank(desc, bytes, 4, shape);
    default: return walk_dims_of_rank(desc, bytes, desc->rank, shape);
    }
}

/* The part of this role the encoded part at `part` describes, which the
 * caller has proved row-major with a buffer index below 4. */
QUICK void set_part(HurrayDescriptor *desc, uint32_t role, const uint8_t *part)
{
    /* Read from the bytes again, not from the words the checks read: then
     * those need not be kept (spilled) until the descriptor is allocated.
     * Field by field: a compound literal would also zero the padding. */
    HurrayDescriptorPart *p = &desc->parts[role - 1];
    p->dtype = part[1];
    p->layout = HURRAY_PART_LAYOUT_ROW_MAJOR;
    p->buffer_index = get32(part + 4);
    p->byte_offset = get64(part + 8);
}

/* The values part's reach; the walk has elements and sums below
 * HURRAY__REACH_ALWAYS_FITS, so no product here overflows. Only the facts
 * of the parts present are written: no one reads the others (check_buffers
 * visits the part mask). */
QUICK void values_facts(HurrayDescriptor *desc, const HurrayShapeFacts *shape, uint32_t bits)
{
    HurrayDescriptorFacts *facts = &desc->facts;
    uint64_t width = desc->packing == HURRAY_PACKING_PADDED ? 8 : bits;
    facts->before[HURRAY_ROLE_VALUES - 1] = (shape->backward * width + 7) / 8;
    facts->after[HURRAY_ROLE_VALUES - 1] = ((shape->span - shape->backward) * width + 7) / 8;
}

/* A descriptor of one part, the values at `part`, row-major in buffer 0,
 * with its header, dimensions and buffer count set and the walk in *shape;
 * NULL (nothing kept) when out of memory or when the walk declines. The
 * plain and GGML quick paths start so; each then adds its own facts. */
QUICK HurrayDescriptor *new_values_only(const uint8_t *bytes, uint32_t rank, const uint8_t *part,
                                        HurrayShapeFacts *shape)
{
    HurrayDescriptor *desc = new_with_header(bytes, rank);
    if (desc == NULL) {
        return NULL;
    }
    desc->part_mask = HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES);
    set_part(desc, HURRAY_ROLE_VALUES, part);
    desc->facts.buffer_count = 1;
    if (!walk_dims(desc, bytes, shape)) {
        free(desc);
        return NULL;
    }
    return desc;
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
    HurrayDescriptor *desc = new_values_only(bytes, rank, part, &shape);
    if (desc == NULL) {
        return NULL;
    }
    values_facts(desc, &shape, values->bits);
    return desc;
}

/* The affine descriptor's facts, from its fields alone: values read back
 * from memory need not be kept in registers across the walk. */
QUICK void affine_facts(HurrayDescriptor *desc, const HurrayShapeFacts *shape)
{
    values_facts(desc, shape, hurray__dtype_row(desc->parts[HURRAY_ROLE_VALUES - 1].dtype)->bits);
    /* At most one parameter per element, and every dtype at most 128 bits:
     * no product can overflow. */
    uint64_t count = hurray__descriptor_parameter_count(desc, HURRAY_ROLE_SCALE,
                                                        shape->element_count);
    desc->facts.before[HURRAY_ROLE_SCALE - 1] = 0;
    desc->facts.after[HURRAY_ROLE_SCALE - 1] =
        count * (hurray__dtype_row(desc->parts[HURRAY_ROLE_SCALE - 1].dtype)->bits / 8);
    if (desc->part_mask & HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT)) {
        desc->facts.before[HURRAY_ROLE_ZERO_POINT - 1] = 0;
        desc->facts.after[HURRAY_ROLE_ZERO_POINT - 1] =
            count * (hurray__dtype_row(desc->parts[HURRAY_ROLE_ZERO_POINT - 1].dtype)->bits / 8);
    }
}

/* Scheme affine: values of an integer or fp8 type, a float scale, maybe a
 * zero point, no global scale; every part row-major; granularity per
 * tensor, per axis or per block with its fields in range. */
QUICK HurrayDescriptor *quick_affine(const uint8_t *bytes, uint64_t head, uint32_t rank)
{
    /* The header first, so that its fields are done with before the parts
     * are read: fewer values live at once, none spilled. */
    uint32_t part_count = HEAD_PART_COUNT(head);
    uint32_t granularity = HEAD_GRANULARITY(head);
    uint32_t axis = get32(bytes + 16);
    uint64_t block_size = get64(bytes + 24);
    if ((part_count != 2 && part_count != 3) ||
        granularity - HURRAY_GRANULARITY_PER_TENSOR >
            HURRAY_GRANULARITY_PER_BLOCK - HURRAY_GRANULARITY_PER_TENSOR ||
        (uint8_t)(head >> 8) > HURRAY_BYTE_ORDER_BIG || get32(bytes + 20) != 0 ||
        (granularity == HURRAY_GRANULARITY_PER_TENSOR ? axis != 0 : axis >= rank) ||
        (granularity == HURRAY_GRANULARITY_PER_BLOCK) != (block_size != 0)) {
        return NULL; /* and past here the parts are all inside the input */
    }
    const uint8_t *parts = bytes + HURRAY__DESCRIPTOR_HEADER_LEN +
                           HURRAY__DESCRIPTOR_DIM_LEN * rank;
    uint64_t values_word = get64(parts);
    uint64_t scale_word = get64(parts + HURRAY__DESCRIPTOR_PART_LEN);
    /* A third part must be the zero point; read the scale's again when
     * there is none, which passes every test a zero point must. */
    uint64_t zero_word = part_count == 3 ? get64(parts + 2 * HURRAY__DESCRIPTOR_PART_LEN)
                                         : (scale_word & ~(uint64_t)0xFF) | HURRAY_ROLE_ZERO_POINT;
    const struct hurray__dtype_info *values = hurray__dtype_row((uint8_t)(values_word >> 8));
    /* Each part's role where it must be, row-major, in one of buffers 0-3,
     * and of a dtype that role allows. */
    uint64_t misplaced = ((values_word & PART_FIXED_BITS) ^ HURRAY_ROLE_VALUES) |
                         ((scale_word & PART_FIXED_BITS) ^ HURRAY_ROLE_SCALE) |
                         ((zero_word & PART_FIXED_BITS) ^ HURRAY_ROLE_ZERO_POINT);
    uint32_t allowed = (values->affine_roles >> (HURRAY_ROLE_VALUES - 1)) &
                       (hurray__dtype_row((uint8_t)(scale_word >> 8))->affine_roles >>
                        (HURRAY_ROLE_SCALE - 1)) &
                       (hurray__dtype_row((uint8_t)(zero_word >> 8))->affine_roles >>
                        (HURRAY_ROLE_ZERO_POINT - 1)) &
                       1u;
    if (misplaced != 0 || !allowed ||
        !hurray__packing_fits_quickly((uint8_t)(head >> 16), values->bits)) {
        return NULL;
    }
    /* The buffers used are 0 to n - 1 for some n: their bits then read
     * 2^n - 1. The indices are below 4 (misplaced is 0). */
    uint32_t used = 1u << (values_word >> 32) | 1u << (scale_word >> 32) | 1u << (zero_word >> 32);
    if ((used & (used + 1)) != 0) {
        return NULL;
    }
    HurrayDescriptor *desc = new_with_header(bytes, rank);
    if (desc == NULL) {
        return NULL;
    }
    set_part(desc, HURRAY_ROLE_VALUES, parts);
    set_part(desc, HURRAY_ROLE_SCALE, parts + HURRAY__DESCRIPTOR_PART_LEN);
    uint32_t mask = HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES) | HURRAY__ROLE_BIT(HURRAY_ROLE_SCALE);
    if (part_count == 3) {
        set_part(desc, HURRAY_ROLE_ZERO_POINT, parts + 2 * HURRAY__DESCRIPTOR_PART_LEN);
        mask |= HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT);
    }
    desc->part_mask = (uint8_t)mask;
    desc->facts.buffer_count = (uint32_t)__builtin_ctz(~used);
    END_OF_CHECKS();
    HurrayShapeFacts shape;
    if (!walk_dims(desc, bytes, &shape) ||
        (desc->block_size != 0 && desc->shape[desc->axis] % desc->block_size != 0)) {
        free(desc);
        return NULL;
    }
    affine_facts(desc, &shape);
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
    HurrayDescriptor *desc = new_values_only(bytes, rank, part, &shape);
    if (desc == NULL) {
        return NULL;
    }
    if (desc->shape[rank - 1] % block_elements != 0 || !hurray__descriptor_is_row_major(desc)) {
        free(desc);
        return NULL;
    }
    /* The last dimension holds whole blocks: the division is exact. */
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
