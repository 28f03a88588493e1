/*
 * descriptor_validate.c -- every semantic rule of a descriptor, in one
 * function that decode, encode, check_buffers and hurray_descriptor_validate
 * share, so a descriptor one of them accepts the others accept too.
 *
 * The order of the checks matters only in that later ones may rely on
 * earlier ones: codes are known before they index a table, the element count
 * fits before strides are compared, and the cross-field rules hold before
 * the reach of each part is computed.
 *
 * Decode runs this on every exchange, so the checks share what they work
 * out (which parts exist, the element count) instead of each finding it
 * again. Most descriptors do not get this far: the quick acceptance in
 * descriptor_accept.c says "valid" first, and this full check, the one
 * definition of the rules, decides the rest (docs/adr/ADR-038).
 */
#include <inttypes.h>
#include <stddef.h>

#include "descriptor_graph.h"
#include "descriptor_validate.h"
#include "dtype.h"
#include "status.h"

#define INVALID HURRAY_ERROR_INVALID_DESCRIPTOR

static const char *packing_name(uint32_t packing)
{
    switch (packing) {
    case HURRAY_PACKING_NONE: return "none";
    case HURRAY_PACKING_PADDED: return "padded";
    case HURRAY_PACKING_LSB_FIRST: return "lsb_first";
    case HURRAY_PACKING_GGML_SPLIT: return "ggml_split";
    default: return "?";
    }
}

static const char *scheme_name(uint32_t scheme)
{
    switch (scheme) {
    case HURRAY_SCHEME_NONE: return "none";
    case HURRAY_SCHEME_AFFINE: return "affine";
    case HURRAY_SCHEME_MICROSCALING: return "microscaling";
    case HURRAY_SCHEME_GGML: return "ggml";
    default: return "?";
    }
}

static const char *granularity_name(uint32_t granularity)
{
    switch (granularity) {
    case HURRAY_GRANULARITY_NONE: return "none";
    case HURRAY_GRANULARITY_PER_TENSOR: return "per_tensor";
    case HURRAY_GRANULARITY_PER_AXIS: return "per_axis";
    case HURRAY_GRANULARITY_PER_BLOCK: return "per_block";
    default: return "?";
    }
}

/* The part of a role the check has proved present. */
static const HurrayDescriptorPart *part_of(const HurrayDescriptor *desc, uint32_t role)
{
    return &desc->parts[role - 1];
}

/* The dtype row of a part, once check_codes has proved the code known. */
static const struct hurray__dtype_info *dtype_of(const HurrayDescriptor *desc, uint32_t role)
{
    return hurray__dtype_row(part_of(desc, role)->dtype);
}

/* Codes first: every later rule may use them as table keys. */
static HurrayStatus check_codes(const HurrayDescriptor *desc)
{
    if (desc->rank > HURRAY_MAX_RANK) {
        return hurray__fail(INVALID, "descriptor: rank %u exceeds %d", (unsigned)desc->rank,
                            HURRAY_MAX_RANK);
    }
    if (desc->byte_order > HURRAY_BYTE_ORDER_BIG) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: byte order %u is unknown",
                            (unsigned)desc->byte_order);
    }
    if (desc->packing > HURRAY_PACKING_GGML_SPLIT) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: packing %u is unknown",
                            (unsigned)desc->packing);
    }
    if (desc->scheme > HURRAY_SCHEME_GGML) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: scheme %u is unknown",
                            (unsigned)desc->scheme);
    }
    if (desc->granularity > HURRAY_GRANULARITY_PER_BLOCK) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: granularity %u is unknown",
                            (unsigned)desc->granularity);
    }
    if (desc->ggml_type != 0 && hurray__ggml_name(desc->ggml_type) == NULL) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "descriptor: ggml type %u is unknown",
                            (unsigned)desc->ggml_type);
    }
    HURRAY__UNROLL_ROLES
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            continue;
        }
        const HurrayDescriptorPart *p = part_of(desc, role);
        if (!hurray__dtype_is_known(p->dtype)) {
            return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                                "descriptor: part %s: dtype %u is unknown", hurray__role_name(role),
                                (unsigned)p->dtype);
        }
        if (p->layout > HURRAY_PART_LAYOUT_SWIZZLED_128X4) {
            return hurray__fail(HURRAY_ERROR_UNSUPPORTED,
                                "descriptor: part %s: layout %u is unknown",
                                hurray__role_name(role), (unsigned)p->layout);
        }
    }
    return HURRAY_OK;
}

static inline HurrayStatus buffer_indices(const HurrayDescriptor *desc, uint32_t *out_count)
{
    uint32_t used = 0; /* bit i: some part lives in buffer i */
    HURRAY__UNROLL_ROLES
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            continue;
        }
        uint64_t index = part_of(desc, role)->buffer_index;
        /* At most 4 parts, so any index of 4 or more must leave a gap. */
        if (index >= HURRAY_MAX_PARTS) {
            return hurray__fail(INVALID,
                                "descriptor: part %s: buffer index %" PRIu64
                                " leaves a gap (buffer indices must be exactly 0 .. k-1)",
                                hurray__role_name(role), index);
        }
        used |= 1u << index;
    }
    /* The lowest unused buffer; any used one above it is a gap. */
    uint32_t count = (uint32_t)__builtin_ctz(~used);
    if ((used >> count) != 0) {
        return hurray__fail(INVALID,
                            "descriptor: buffer indices leave a gap: no part uses buffer %u "
                            "(buffer indices must be exactly 0 .. k-1)",
                            (unsigned)count);
    }
    *out_count = count;
    return HURRAY_OK;
}

HurrayStatus hurray__descriptor_buffer_indices(const HurrayDescriptor *desc, uint32_t *out_count)
{
    const HurrayGraph *graph = hurray__descriptor_graph(desc);
    if (graph != NULL) {
        return hurray__graph_buffer_indices(graph, out_count);
    }
    return buffer_indices(desc, out_count);
}

/* Layer 2: the values part and how its elements are stored. */
static HurrayStatus check_values(const HurrayDescriptor *desc)
{
    const HurrayDescriptorPart *values = part_of(desc, HURRAY_ROLE_VALUES);
    if (values->layout != HURRAY_PART_LAYOUT_ROW_MAJOR) {
        return hurray__fail(INVALID,
                            "descriptor: part values: layout must be row_major (0), not %u",
                            (unsigned)values->layout);
    }
    const struct hurray__dtype_info *dtype = hurray__dtype_row(values->dtype);
    uint32_t bits = dtype->bits;
    if (bits >= 8) {
        if (desc->packing != HURRAY_PACKING_NONE) {
            return hurray__fail(INVALID,
                                "descriptor: packing: %s does not fit dtype %s (a type of 8 bits "
                                "or more takes packing none)",
                                packing_name(desc->packing), dtype->name);
        }
        return HURRAY_OK;
    }
    switch (desc->packing) {
    case HURRAY_PACKING_NONE:
        return hurray__fail(INVALID,
                            "descriptor: packing: none does not fit dtype %s, which is %u bits "
                            "wide (say padded, lsb_first or ggml_split)",
                            dtype->name, (unsigned)bits);
    case HURRAY_PACKING_PADDED: return HURRAY_OK;
    case HURRAY_PACKING_LSB_FIRST:
        if (bits != 1 && bits != 2 && bits != 4) {
            return hurray__fail(INVALID,
                                "descriptor: packing: lsb_first needs a width of 1, 2 or 4 bits; "
                                "dtype %s is %u bits wide",
                                dtype->name, (unsigned)bits);
        }
        return HURRAY_OK;
    default: /* HURRAY_PACKING_GGML_SPLIT; codes were checked first */
        if (bits != 4) {
            return hurray__fail(INVALID,
                                "descriptor: packing: ggml_split needs a 4-bit dtype, not %s",
                                dtype->name);
        }
        if (desc->rank == 0 || desc->shape[desc->rank - 1] % 32 != 0) {
            return hurray__fail(INVALID,
                                "descriptor: packing: ggml_split needs a last dimension that is "
                                "a multiple of 32");
        }
        if (!hurray__descriptor_is_row_major(desc)) {
            return hurray__fail(INVALID,
                                "descriptor: strides: packing ggml_split needs a row-major "
                                "contiguous tensor");
        }
        return HURRAY_OK;
    }
}

/* Fields that must be zero when what they describe is absent. */
static HurrayStatus check_zero_fields(const HurrayDescriptor *desc)
{
    if (desc->ggml_type != 0 && desc->scheme != HURRAY_SCHEME_GGML) {
        return hurray__fail(INVALID,
                            "descriptor: ggml type: must be zero unless the scheme is ggml "
                            "(scheme is %s)",
                            scheme_name(desc->scheme));
    }
    if (desc->block_size != 0 && desc->granularity != HURRAY_GRANULARITY_PER_BLOCK) {
        return hurray__fail(INVALID,
                            "descriptor: block size: must be zero unless the granularity is "
                            "per_block (granularity is %s)",
                            granularity_name(desc->granularity));
    }
    if (desc->axis != 0 && desc->granularity != HURRAY_GRANULARITY_PER_AXIS &&
        desc->granularity != HURRAY_GRANULARITY_PER_BLOCK) {
        return hurray__fail(INVALID,
                            "descriptor: axis: must be zero when the granularity has no axis "
                            "(granularity is %s)",
                            granularity_name(desc->granularity));
    }
    return HURRAY_OK;
}

/* The axis and block size of a per-axis or per-block granularity. */
static inline HurrayStatus check_axis(const HurrayDescriptor *desc)
{
    if (desc->granularity != HURRAY_GRANULARITY_PER_AXIS &&
        desc->granularity != HURRAY_GRANULARITY_PER_BLOCK) {
        return HURRAY_OK;
    }
    if (desc->axis >= desc->rank) {
        return hurray__fail(INVALID, "descriptor: axis: %u is not below the rank %u",
                            (unsigned)desc->axis, (unsigned)desc->rank);
    }
    if (desc->granularity == HURRAY_GRANULARITY_PER_BLOCK) {
        if (desc->block_size == 0) {
            return hurray__fail(INVALID, "descriptor: block size: is zero");
        }
        uint64_t extent = desc->shape[desc->axis];
        if (extent % desc->block_size != 0) {
            return hurray__fail(INVALID,
                                "descriptor: block size: %" PRIu64
                                " does not divide shape[%u] = %" PRIu64,
                                desc->block_size, (unsigned)desc->axis, extent);
        }
    }
    return HURRAY_OK;
}

/* The scheme has no part of these roles (a mask of HURRAY__ROLE_BIT); the
 * lowest present one is named, as if each role were checked in turn. */
static inline HurrayStatus forbid_parts(const HurrayDescriptor *desc, uint32_t roles)
{
    uint32_t present = desc->part_mask & roles;
    if (present != 0) {
        return hurray__fail(INVALID, "descriptor: part %s: scheme %s has none",
                            hurray__role_name(hurray__role_of_bit(present)),
                            scheme_name(desc->scheme));
    }
    return HURRAY_OK;
}

static inline HurrayStatus require_part(const HurrayDescriptor *desc, uint32_t role)
{
    if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
        return hurray__fail(INVALID, "descriptor: part %s: missing (scheme %s needs one)",
                            hurray__role_name(role), scheme_name(desc->scheme));
    }
    return HURRAY_OK;
}

/* Rules every parameter part (scale, zero point, global scale) obeys. */
static HurrayStatus check_parameter_parts(const HurrayDescriptor *desc)
{
    HURRAY__UNROLL_ROLES
    for (uint32_t role = HURRAY_ROLE_SCALE; role <= HURRAY_MAX_PARTS; role++) {
        if (!(desc->part_mask & HURRAY__ROLE_BIT(role))) {
            continue;
        }
        const HurrayDescriptorPart *p = part_of(desc, role);
        /* A parameter part has no packing field of its own, so its
         * elements must be whole bytes to have one meaning. */
        if (hurray__dtype_bits(p->dtype) % 8 != 0) {
            return hurray__fail(INVALID,
                                "descriptor: part %s: dtype %s is narrower than a byte "
                                "(parameter parts hold whole-byte elements)",
                                hurray__role_name(role), hurray__dtype_name(p->dtype));
        }
        int swizzle_allowed = role == HURRAY_ROLE_SCALE &&
                              desc->scheme == HURRAY_SCHEME_MICROSCALING;
        if (p->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4 && !swizzle_allowed) {
            return hurray__fail(INVALID,
                                "descriptor: part %s: layout swizzled_128x4 is only for the scale "
                                "of a microscaling scheme",
                                hurray__role_name(role));
        }
    }
    return HURRAY_OK;
}

#define PARAMETER_ROLES                                                               \
    (HURRAY__ROLE_BIT(HURRAY_ROLE_SCALE) | HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT) | \
     HURRAY__ROLE_BIT(HURRAY_ROLE_GLOBAL_SCALE))

static HurrayStatus check_scheme_none(const HurrayDescriptor *desc)
{
    if (desc->granularity != HURRAY_GRANULARITY_NONE) {
        return hurray__fail(INVALID, "descriptor: granularity: scheme none takes none, not %s",
                            granularity_name(desc->granularity));
    }
    return forbid_parts(desc, PARAMETER_ROLES);
}

static HurrayStatus check_scheme_affine(const HurrayDescriptor *desc)
{
    if (desc->granularity == HURRAY_GRANULARITY_NONE) {
        return hurray__fail(INVALID,
                            "descriptor: granularity: scheme affine needs per_tensor, per_axis "
                            "or per_block, not none");
    }
    const struct hurray__dtype_info *values = dtype_of(desc, HURRAY_ROLE_VALUES);
    if (values->kind != HURRAY__KIND_INT && values->kind != HURRAY__KIND_FP8) {
        return hurray__fail(INVALID,
                            "descriptor: part values: dtype %s cannot be affine-quantized "
                            "(needs an integer or fp8 type)",
                            values->name);
    }
    HURRAY__TRY(require_part(desc, HURRAY_ROLE_SCALE));
    HURRAY__TRY(forbid_parts(desc, HURRAY__ROLE_BIT(HURRAY_ROLE_GLOBAL_SCALE)));
    const struct hurray__dtype_info *scale = dtype_of(desc, HURRAY_ROLE_SCALE);
    if (scale->kind != HURRAY__KIND_FLOAT) {
        return hurray__fail(INVALID,
                            "descriptor: part scale: dtype %s is not an affine scale type "
                            "(float16, float32, float64 or bfloat16)",
                            scale->name);
    }
    if (desc->part_mask & HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT)) {
        const struct hurray__dtype_info *zero_point = dtype_of(desc, HURRAY_ROLE_ZERO_POINT);
        if (zero_point->kind != HURRAY__KIND_INT &&
            !hurray__dtype_kind_is_float(zero_point->kind)) {
            return hurray__fail(INVALID,
                                "descriptor: part zero_point: dtype %s is neither an integer nor "
                                "a float type",
                                zero_point->name);
        }
    }
    return check_axis(desc);
}

static HurrayStatus check_scheme_microscaling(const HurrayDescriptor *desc)
{
    if (desc->granularity != HURRAY_GRANULARITY_PER_BLOCK) {
        return hurray__fail(INVALID,
                            "descriptor: granularity: scheme microscaling needs per_block, not %s",
                            granularity_name(desc->granularity));
    }
    uint32_t values = part_of(desc, HURRAY_ROLE_VALUES)->dtype;
    if (!hurray__dtype_is_fp8(values) && !hurray__dtype_is_fp6(values) &&
        !hurray__dtype_is_fp4(values) && values != HURRAY_DTYPE_INT8) {
        return hurray__fail(INVALID,
                            "descriptor: part values: dtype %s cannot be microscaled (needs an "
                            "fp8, fp6, fp4 or int8 type)",
                            hurray__dtype_name(values));
    }
    HURRAY__TRY(require_part(desc, HURRAY_ROLE_SCALE));
    HURRAY__TRY(forbid_parts(desc, HURRAY__ROLE_BIT(HURRAY_ROLE_ZERO_POINT)));
    HURRAY__TRY(check_axis(desc));
    const HurrayDescriptorPart *scale = part_of(desc, HURRAY_ROLE_SCALE);
    if (scale->dtype == HURRAY_DTYPE_FLOAT8_E8M0FNU) {
        /* OCP Microscaling v1.0 */
        if (desc->block_size != 32) {
            return hurray__fail(INVALID,
                                "descriptor: block size: OCP microscaling (scale float8_e8m0fnu) "
                                "uses blocks of 32, not %" PRIu64,
                                desc->block_size);
        }
    } else if (scale->dtype == HURRAY_DTYPE_FLOAT8_E4M3FN) {
        /* NVFP4 */
        if (desc->block_size != 16) {
            return hurray__fail(INVALID,
                                "descriptor: block size: NVFP4 (scale float8_e4m3fn) uses blocks "
                                "of 16, not %" PRIu64,
                                desc->block_size);
        }
        if (values != HURRAY_DTYPE_FLOAT4_E2M1FN) {
            return hurray__fail(INVALID,
                                "descriptor: part values: NVFP4 (scale float8_e4m3fn) needs "
                                "float4_e2m1fn values, not %s",
                                hurray__dtype_name(values));
        }
    } else {
        return hurray__fail(INVALID,
                            "descriptor: part scale: dtype %s is not a microscaling scale type "
                            "(float8_e8m0fnu or float8_e4m3fn)",
                            hurray__dtype_name(scale->dtype));
    }
    if (scale->layout == HURRAY_PART_LAYOUT_SWIZZLED_128X4 &&
        (desc->rank != 2 || desc->axis != 1)) {
        return hurray__fail(INVALID,
                            "descriptor: part scale: layout swizzled_128x4 needs rank 2 and axis "
                            "1 (rank is %u, axis %u)",
                            (unsigned)desc->rank, (unsigned)desc->axis);
    }
    if (desc->part_mask & HURRAY__ROLE_BIT(HURRAY_ROLE_GLOBAL_SCALE)) {
        uint32_t global = part_of(desc, HURRAY_ROLE_GLOBAL_SCALE)->dtype;
        if (global != HURRAY_DTYPE_FLOAT32) {
            return hurray__fail(INVALID,
                                "descriptor: part global_scale: dtype must be float32, not %s",
                                hurray__dtype_name(global));
        }
    }
    return HURRAY_OK;
}

static HurrayStatus check_scheme_ggml(const HurrayDescriptor *desc)
{
    if (desc->granularity != HURRAY_GRANULARITY_NONE) {
        return hurray__fail(INVALID, "descriptor: granularity: scheme ggml takes none, not %s",
                            granularity_name(desc->granularity));
    }
    uint64_t block_elements, block_bytes;
    if (!hurray__ggml_block(desc->ggml_type, &block_elements, &block_bytes)) {
        return hurray__fail(INVALID, "descriptor: ggml type: missing (scheme ggml needs one)");
    }
    HURRAY__TRY(forbid_parts(desc, PARAMETER_ROLES));
    uint32_t values = part_of(desc, HURRAY_ROLE_VALUES)->dtype;
    if (values != HURRAY_DTYPE_UINT8) {
        return hurray__fail(INVALID,
                            "descriptor: part values: scheme ggml holds block bytes, so its "
                            "dtype must be uint8, not %s",
                            hurray__dtype_name(values));
    }
    if (desc->byte_order != HURRAY_BYTE_ORDER_LITTLE) {
        return hurray__fail(INVALID, "descriptor: byte order: scheme ggml needs little-endian");
    }
    if (desc->rank == 0) {
        return hurray__fail(INVALID, "descriptor: rank: scheme ggml needs at least one dimension");
    }
    uint64_t last = desc->shape[desc->rank - 1];
    if (last % block_elements != 0) {
        return hurray__fail(INVALID,
                            "descriptor: shape[%u]: %" PRIu64 " is not a multiple of the %" PRIu64
                            " elements of a %s block",
                            (unsigned)(desc->rank - 1), last, block_elements,
                            hurray__ggml_name(desc->ggml_type));
    }
    if (!hurray__descriptor_is_row_major(desc)) {
        return hurray__fail(INVALID,
                            "descriptor: strides: scheme ggml needs a row-major contiguous tensor");
    }
    return HURRAY_OK;
}

HurrayStatus hurray__descriptor_check_facts(const HurrayDescriptor *desc,
                                            HurrayDescriptorFacts *out)
{
    /* The verdict is a fact about the fields, which only the setters
     * change (and they clear it): the descriptor keeps it, and the check
     * writes its facts where they are kept. Not a const object, only a
     * const view: every descriptor is malloc'ed. Written in place, not
     * through a copy on the stack: the copy's wide loads of fields just
     * stored narrow stall on store forwarding (about 1 ns of every decode). */
    HurrayDescriptor *kept = (HurrayDescriptor *)desc;
    if (!desc->checked) {
        if (hurray__descriptor_graph(desc) != NULL) {
            /* Version 2: its own rules (descriptor_graph_validate.c). */
            HURRAY__TRY(hurray__graph_check_rules(desc));
        } else if (!hurray__descriptor_accept_facts(desc, &kept->facts)) {
            HURRAY__TRY(hurray__descriptor_check_rules(desc, &kept->facts));
        }
        kept->checked = 1;
    }
    if (out != NULL) {
        *out = desc->facts;
    }
    return HURRAY_OK;
}

HurrayStatus hurray__descriptor_check_facts_quietly(const HurrayDescriptor *desc,
                                                    HurrayDescriptorFacts *out)
{
    if (desc->checked) {
        *out = desc->facts;
        return HURRAY_OK;
    }
    if (hurray__descriptor_accept_facts(desc, out)) {
        return HURRAY_OK;
    }
    return hurray__descriptor_check_rules(desc, out);
}

HurrayStatus hurray__descriptor_check_rules(const HurrayDescriptor *desc,
                                            HurrayDescriptorFacts *out)
{
    HURRAY__TRY(check_codes(desc));
    if (!(desc->part_mask & HURRAY__ROLE_BIT(HURRAY_ROLE_VALUES))) {
        return hurray__fail(INVALID, "descriptor: part values: missing");
    }
    HURRAY__TRY(buffer_indices(desc, &out->buffer_count));
    HurrayShapeFacts shape = {0}; /* set by the walk; zeroed for the compiler's sake */
    HURRAY__TRY(hurray__descriptor_walk_shape(desc, &shape));
    HURRAY__TRY(check_values(desc));
    HURRAY__TRY(check_zero_fields(desc));
    HURRAY__TRY(check_parameter_parts(desc));
    switch (desc->scheme) {
    case HURRAY_SCHEME_NONE: HURRAY__TRY(check_scheme_none(desc)); break;
    case HURRAY_SCHEME_AFFINE: HURRAY__TRY(check_scheme_affine(desc)); break;
    case HURRAY_SCHEME_MICROSCALING: HURRAY__TRY(check_scheme_microscaling(desc)); break;
    default: HURRAY__TRY(check_scheme_ggml(desc)); break;
    }
    /* Last: the reach of each part, which the rules above make well
     * defined. The bytes themselves are for check_buffers. */
    HURRAY__UNROLL_ROLES
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (desc->part_mask & HURRAY__ROLE_BIT(role)) {
            HURRAY__TRY(hurray__descriptor_part_reach(desc, role, &shape, &out->before[role - 1],
                                                      &out->after[role - 1]));
        }
    }
    return HURRAY_OK;
}

HurrayStatus hurray_descriptor_validate(const HurrayDescriptor *desc)
{
    if (desc == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_descriptor_validate: desc is NULL");
    }
    return hurray__descriptor_check(desc);
}
