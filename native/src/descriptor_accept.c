/*
 * descriptor_accept.c -- a quick "valid" for the descriptors most exchanges
 * carry: plain, affine, microscaling and GGML tensors whose parts are
 * row-major.
 *
 * hurray__descriptor_check_facts asks this first. It answers true only when
 * every rule of descriptor_validate.c holds, and false for anything else:
 * an invalid descriptor, and also a valid one outside its reach (ggml_split
 * packing, a swizzled scale, a reach near 2^63). The full check then
 * decides, and names the first broken rule. The messages therefore come
 * from one place, and a wrong "true" is what the tests hunt:
 * tests/c/test_accept.c compares the two answers over every field, and the
 * fuzzer on every input it makes (docs/adr/ADR-038-quick-acceptance.md).
 *
 * It is quicker than the full check because it asks fewer questions: bit
 * sets of kinds instead of chains of compares, one test for all layouts,
 * and one for the granularity's fields, where the full check has a branch
 * and a message for each rule.
 */
#include "descriptor_accept.h"
#include "dtype.h"

#define BIT(x) (1u << (x))
#define VALUES_ONLY HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES)

/* Kinds as bit sets: kind codes are below 8, so one shift tests membership. */
#define KINDS_MICROSCALED_VALUES \
    (BIT(HURRAY__KIND_FP8) | BIT(HURRAY__KIND_FP6) | BIT(HURRAY__KIND_FP4))

static inline const struct hurray__dtype_info *row_of(const HurrayDescriptor *desc, uint32_t role)
{
    return hurray__dtype_row(desc->parts[role - 1].dtype);
}

static inline int has(const HurrayDescriptor *desc, uint32_t role)
{
    return (desc->part_mask & HURRAY__ROLE_BIT(role)) != 0;
}

/* The last dimension is a whole number of units (rank 0 has none). */
static inline int last_dimension_divides(const HurrayDescriptor *desc, uint64_t unit)
{
    return desc->rank > 0 && desc->shape[desc->rank - 1] % unit == 0;
}

/* The scheme's parts, their dtypes and its granularity. */
static inline __attribute__((always_inline)) int scheme_holds(
    const HurrayDescriptor *desc, const struct hurray__dtype_info *values)
{
    uint32_t mask = desc->part_mask;
    uint32_t granularity = desc->granularity;
    switch (desc->scheme) {
    case HURRAY_SCHEME_NONE: return granularity == HURRAY_GRANULARITY_NONE && mask == VALUES_ONLY;
    case HURRAY_SCHEME_AFFINE: {
        if (granularity == HURRAY_GRANULARITY_NONE || !has(desc, HURRAY_ROLE_SCALE) ||
            has(desc, HURRAY_ROLE_GLOBAL_SCALE)) {
            return 0;
        }
        /* Each part of a dtype its role allows (dtype.h, affine_roles). */
        int ok = (values->affine_roles & HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES)) != 0;
        ok &= (row_of(desc, HURRAY_ROLE_SCALE)->affine_roles &
               HURRAY__ROLE_BIT(HURRAY_ROLE_SCALE)) != 0;
        if (has(desc, HURRAY_ROLE_ZERO_POINT)) {
            ok &= (row_of(desc, HURRAY_ROLE_ZERO_POINT)->affine_roles &
                   HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT)) != 0;
        }
        return ok;
    }
    case HURRAY_SCHEME_MICROSCALING: {
        if (granularity != HURRAY_GRANULARITY_PER_BLOCK || !has(desc, HURRAY_ROLE_SCALE) ||
            has(desc, HURRAY_ROLE_ZERO_POINT)) {
            return 0;
        }
        uint32_t values_dtype = desc->parts[HURRAY_ROLE_VALUES - 1].dtype;
        uint32_t scale_dtype = desc->parts[HURRAY_ROLE_SCALE - 1].dtype;
        int ok = ((KINDS_MICROSCALED_VALUES >> values->kind) & 1) ||
                 values_dtype == HURRAY_DTYPE_INT8;
        /* OCP MX, or NVFP4 */
        ok &= (scale_dtype == HURRAY_DTYPE_FLOAT8_E8M0FNU && desc->block_size == 32) ||
              (scale_dtype == HURRAY_DTYPE_FLOAT8_E4M3FN && desc->block_size == 16 &&
               values_dtype == HURRAY_DTYPE_FLOAT4_E2M1FN);
        if (has(desc, HURRAY_ROLE_GLOBAL_SCALE)) {
            ok &= desc->parts[HURRAY_ROLE_GLOBAL_SCALE - 1].dtype == HURRAY_DTYPE_FLOAT32;
        }
        return ok;
    }
    default: /* GGML (see accept_ggml), or an unknown scheme */ return 0;
    }
}

/* Axis and block size: set exactly when the granularity has them, and
 * in range. */
static inline int granularity_fields_hold(const HurrayDescriptor *desc)
{
    uint32_t granularity = desc->granularity;
    if (granularity != HURRAY_GRANULARITY_PER_AXIS && granularity != HURRAY_GRANULARITY_PER_BLOCK) {
        return desc->axis == 0 && desc->block_size == 0;
    }
    if (desc->axis >= desc->rank) {
        return 0;
    }
    if (granularity == HURRAY_GRANULARITY_PER_AXIS) {
        return desc->block_size == 0;
    }
    return desc->block_size != 0 && desc->shape[desc->axis] % desc->block_size == 0;
}

/* Scheme ggml: whole blocks of uint8, one part, row-major. Its own
 * function, asked only after accept has said no, so that its rules (a call
 * of hurray__ggml_block, the row-major test) cost the other schemes
 * nothing: accept turns GGML away at its first tests. */
static __attribute__((noinline)) bool accept_ggml(const HurrayDescriptor *desc,
                                                  HurrayDescriptorFacts *out)
{
    const HurrayDescriptorPart *values = &desc->parts[HURRAY_ROLE_VALUES - 1];
    uint64_t block_elements, block_bytes;
    if (desc->scheme != HURRAY_SCHEME_GGML || desc->part_mask != VALUES_ONLY ||
        values->dtype != HURRAY_DTYPE_UINT8 || values->layout != HURRAY_PART_LAYOUT_ROW_MAJOR ||
        values->buffer_index != 0 || desc->packing != HURRAY_PACKING_NONE ||
        desc->byte_order != HURRAY_BYTE_ORDER_LITTLE ||
        desc->granularity != HURRAY_GRANULARITY_NONE || desc->axis != 0 || desc->block_size != 0 ||
        desc->rank > HURRAY_MAX_RANK ||
        !hurray__ggml_block(desc->ggml_type, &block_elements, &block_bytes) ||
        !last_dimension_divides(desc, block_elements)) {
        return false;
    }
    HurrayShapeFacts shape = {0}; /* set by the walk; zeroed for the compiler's sake */
    if (hurray__descriptor_walk_shape(desc, &shape) != HURRAY_OK ||
        !hurray__descriptor_is_row_major(desc) || shape.element_count > HURRAY__REACH_ALWAYS_FITS) {
        return false;
    }
    if (out != NULL) {
        out->buffer_count = 1;
        HURRAY__UNROLL_ROLES
        for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
            out->before[role - 1] = 0;
            out->after[role - 1] = 0;
        }
        /* The last dimension holds whole blocks: the division is exact. */
        out->after[HURRAY_ROLE_VALUES - 1] = shape.element_count / block_elements * block_bytes;
    }
    return true;
}

/* The verdict for every scheme but GGML, and with out != NULL the facts
 * too. Always inlined into the two entry points below, so the verdict alone
 * (what decode and encode ask) compiles without the facts' arithmetic. */
static inline __attribute__((always_inline)) bool accept(const HurrayDescriptor *desc,
                                                         HurrayDescriptorFacts *out)
{
    if (!(desc->part_mask & VALUES_ONLY) || desc->rank > HURRAY_MAX_RANK ||
        desc->byte_order > HURRAY_BYTE_ORDER_BIG ||
        desc->granularity > HURRAY_GRANULARITY_PER_BLOCK || desc->ggml_type != 0) {
        return false;
    }
    /* Every part row-major, and the buffer indices exactly 0 .. k-1. */
    uint32_t layouts = 0;
    uint32_t used = 0;
    HURRAY__UNROLL_ROLES
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (has(desc, role)) {
            const HurrayDescriptorPart *part = &desc->parts[role - 1];
            /* An index past the parts leaves a gap: bit 31 stands for it. */
            layouts |= part->layout;
            used |= part->buffer_index < HURRAY_MAX_PARTS ? BIT(part->buffer_index) : BIT(31);
        }
    }
    uint32_t buffer_count = (uint32_t)__builtin_ctz(~used);
    const struct hurray__dtype_info *values = row_of(desc, HURRAY_ROLE_VALUES);
    if (layouts != 0 || (used >> buffer_count) != 0 || values->kind == HURRAY__KIND_NONE ||
        !hurray__packing_fits_quickly(desc->packing, values->bits) || !scheme_holds(desc, values) ||
        !granularity_fields_hold(desc)) {
        return false;
    }
    HurrayShapeFacts shape = {0}; /* set by the walk; zeroed for the compiler's sake */
    if (hurray__descriptor_walk_shape(desc, &shape) != HURRAY_OK) {
        return false;
    }
    /* Reaches that fit whatever the widths (HURRAY__REACH_ALWAYS_FITS):
     * no product below can overflow. */
    if (shape.element_count != 0 &&
        (shape.span_overflows || shape.span > HURRAY__REACH_ALWAYS_FITS ||
         shape.element_count > HURRAY__REACH_ALWAYS_FITS)) {
        return false;
    }
    if (out == NULL) {
        return true;
    }
    out->buffer_count = buffer_count;
    uint64_t width = desc->packing == HURRAY_PACKING_PADDED ? 8 : values->bits;
    HURRAY__UNROLL_ROLES
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        uint64_t before = 0, after = 0;
        if (shape.element_count == 0 || !has(desc, role)) {
            /* no elements reach no bytes */
        } else if (role == HURRAY_ROLE_VALUES) {
            before = hurray__bits_to_bytes(shape.backward * width);
            after = hurray__bits_to_bytes((shape.span - shape.backward) * width);
        } else {
            uint64_t count = hurray__descriptor_parameter_count(desc, role, shape.element_count);
            after = count * row_of(desc, role)->bits / 8;
        }
        out->before[role - 1] = before;
        out->after[role - 1] = after;
    }
    return true;
}

bool hurray__descriptor_accept(const HurrayDescriptor *desc)
{
    return accept(desc, NULL) || accept_ggml(desc, NULL);
}

bool hurray__descriptor_accept_facts(const HurrayDescriptor *desc, HurrayDescriptorFacts *out)
{
    return accept(desc, out) || accept_ggml(desc, out);
}
