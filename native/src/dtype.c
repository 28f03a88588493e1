/*
 * dtype.c -- the element-type table and the GGML block table.
 */
#include "dtype.h"

#include "status.h"

/* Kinds as bit sets (kind codes are below 8, so one shift tests
 * membership): the kinds the affine scheme takes for its values and for
 * its zero point (docs/impl/descriptor-encoding.md). The full rules, with
 * their messages, are in descriptor_validate.c. */
#define KIND_SET(kind) (1u << (kind))
#define KINDS_AFFINE_VALUES (KIND_SET(HURRAY__KIND_INT) | KIND_SET(HURRAY__KIND_FP8))
#define KINDS_ZERO_POINT                                                                      \
    (KIND_SET(HURRAY__KIND_INT) | KIND_SET(HURRAY__KIND_FLOAT) | KIND_SET(HURRAY__KIND_FP8) | \
     KIND_SET(HURRAY__KIND_FP6) | KIND_SET(HURRAY__KIND_FP4))

/* affine_roles for a dtype of these bits and kind: values of an affine
 * kind; a scale of a float kind (all whole bytes); a zero point of a zero
 * point kind in whole bytes. Bit role - 1, as HURRAY__ROLE_BIT
 * (descriptor.h) has it. */
#define AFFINE_ROLES(bits, kind)                                             \
    ((((KINDS_AFFINE_VALUES >> (kind)) & 1u) << (HURRAY_ROLE_VALUES - 1)) |  \
     (((kind) == HURRAY__KIND_FLOAT ? 1u : 0u) << (HURRAY_ROLE_SCALE - 1)) | \
     ((((KINDS_ZERO_POINT >> (kind)) & 1u) && (bits) % 8 == 0 ? 1u : 0u)     \
      << (HURRAY_ROLE_ZERO_POINT - 1)))

/* A row: name, bits and kind, and what follows from bits and kind. */
#define ROW(name, bits, kind) {name, bits, kind, AFFINE_ROLES(bits, kind)}

/* Indexed by code. Rows without an entry (0, and past the last code) stay
 * all zero: they answer for every unknown code. */
const struct hurray__dtype_info hurray__dtype_table[HURRAY__DTYPE_TABLE_LEN] = {
    [HURRAY_DTYPE_BOOL] = ROW("bool", 8, HURRAY__KIND_BOOL),
    [HURRAY_DTYPE_INT8] = ROW("int8", 8, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT16] = ROW("int16", 16, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT32] = ROW("int32", 32, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT64] = ROW("int64", 64, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT8] = ROW("uint8", 8, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT16] = ROW("uint16", 16, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT32] = ROW("uint32", 32, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT64] = ROW("uint64", 64, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT1] = ROW("int1", 1, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT2] = ROW("int2", 2, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT4] = ROW("int4", 4, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT1] = ROW("uint1", 1, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT2] = ROW("uint2", 2, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT4] = ROW("uint4", 4, HURRAY__KIND_INT),
    [HURRAY_DTYPE_FLOAT16] = ROW("float16", 16, HURRAY__KIND_FLOAT),
    [HURRAY_DTYPE_FLOAT32] = ROW("float32", 32, HURRAY__KIND_FLOAT),
    [HURRAY_DTYPE_FLOAT64] = ROW("float64", 64, HURRAY__KIND_FLOAT),
    [HURRAY_DTYPE_BFLOAT16] = ROW("bfloat16", 16, HURRAY__KIND_FLOAT),
    [HURRAY_DTYPE_COMPLEX32] = ROW("complex32", 32, HURRAY__KIND_COMPLEX),
    [HURRAY_DTYPE_COMPLEX64] = ROW("complex64", 64, HURRAY__KIND_COMPLEX),
    [HURRAY_DTYPE_COMPLEX128] = ROW("complex128", 128, HURRAY__KIND_COMPLEX),
    [HURRAY_DTYPE_FLOAT8_E3M4] = ROW("float8_e3m4", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E4M3] = ROW("float8_e4m3", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E4M3B11FNUZ] = ROW("float8_e4m3b11fnuz", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E4M3FN] = ROW("float8_e4m3fn", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E4M3FNUZ] = ROW("float8_e4m3fnuz", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E5M2] = ROW("float8_e5m2", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E5M2FNUZ] = ROW("float8_e5m2fnuz", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT8_E8M0FNU] = ROW("float8_e8m0fnu", 8, HURRAY__KIND_FP8),
    [HURRAY_DTYPE_FLOAT6_E2M3FN] = ROW("float6_e2m3fn", 6, HURRAY__KIND_FP6),
    [HURRAY_DTYPE_FLOAT6_E3M2FN] = ROW("float6_e3m2fn", 6, HURRAY__KIND_FP6),
    [HURRAY_DTYPE_FLOAT4_E2M1FN] = ROW("float4_e2m1fn", 4, HURRAY__KIND_FP4),
    [HURRAY_DTYPE_BCOMPLEX32] = ROW("bcomplex32", 32, HURRAY__KIND_COMPLEX),
    /* The widths torch has and the table lacked (ADR-054). */
    [HURRAY_DTYPE_UINT3] = ROW("uint3", 3, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT5] = ROW("uint5", 5, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT6] = ROW("uint6", 6, HURRAY__KIND_INT),
    [HURRAY_DTYPE_UINT7] = ROW("uint7", 7, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT3] = ROW("int3", 3, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT5] = ROW("int5", 5, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT6] = ROW("int6", 6, HURRAY__KIND_INT),
    [HURRAY_DTYPE_INT7] = ROW("int7", 7, HURRAY__KIND_INT),
};


HurrayStatus hurray_dtype_bits(uint32_t dtype, uint32_t *out)
{
    if (out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_dtype_bits: out is NULL");
    }
    uint32_t bits = hurray__dtype_bits(dtype);
    if (bits == 0) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "hurray_dtype_bits: dtype %u is unknown",
                            (unsigned)dtype);
    }
    *out = bits;
    return HURRAY_OK;
}

const char *hurray_dtype_name(uint32_t dtype)
{
    return hurray__dtype_name(dtype);
}

/* Indexed by GGUF type number: rows without an entry (numbers GGUF never
 * gave a block format, or gave to a plain type) stay all zero and answer
 * for every unknown code, as the dtype table does. One load, no search:
 * the quick GGML decode asks on every exchange. */
struct ggml_info {
    const char *name;
    uint16_t elements;
    uint16_t bytes;
};

#define GGML_TABLE_LEN 43u

static const struct ggml_info ggml_table[GGML_TABLE_LEN] = {
    [HURRAY_GGML_Q4_0] = {"q4_0", 32, 18},        [HURRAY_GGML_Q4_1] = {"q4_1", 32, 20},
    [HURRAY_GGML_Q5_0] = {"q5_0", 32, 22},        [HURRAY_GGML_Q5_1] = {"q5_1", 32, 24},
    [HURRAY_GGML_Q8_0] = {"q8_0", 32, 34},        [HURRAY_GGML_Q2_K] = {"q2_k", 256, 84},
    [HURRAY_GGML_Q3_K] = {"q3_k", 256, 110},      [HURRAY_GGML_Q4_K] = {"q4_k", 256, 144},
    [HURRAY_GGML_Q5_K] = {"q5_k", 256, 176},      [HURRAY_GGML_Q6_K] = {"q6_k", 256, 210},
    [HURRAY_GGML_IQ2_XXS] = {"iq2_xxs", 256, 66}, [HURRAY_GGML_IQ2_XS] = {"iq2_xs", 256, 74},
    [HURRAY_GGML_IQ3_XXS] = {"iq3_xxs", 256, 98}, [HURRAY_GGML_IQ1_S] = {"iq1_s", 256, 50},
    [HURRAY_GGML_IQ4_NL] = {"iq4_nl", 32, 18},    [HURRAY_GGML_IQ3_S] = {"iq3_s", 256, 110},
    [HURRAY_GGML_IQ2_S] = {"iq2_s", 256, 82},     [HURRAY_GGML_IQ4_XS] = {"iq4_xs", 256, 136},
    [HURRAY_GGML_IQ1_M] = {"iq1_m", 256, 56},     [HURRAY_GGML_TQ1_0] = {"tq1_0", 256, 54},
    [HURRAY_GGML_TQ2_0] = {"tq2_0", 256, 66},     [HURRAY_GGML_MXFP4] = {"mxfp4", 32, 17},
    [HURRAY_GGML_NVFP4] = {"nvfp4", 64, 36},      [HURRAY_GGML_Q1_0] = {"q1_0", 128, 18},
    [HURRAY_GGML_Q2_0] = {"q2_0", 64, 18},
};

static const struct ggml_info *ggml_lookup(uint32_t ggml_type)
{
    const struct ggml_info *info = &ggml_table[ggml_type < GGML_TABLE_LEN ? ggml_type : 0];
    return info->name == NULL ? NULL : info;
}

bool hurray__ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes)
{
    const struct ggml_info *info = ggml_lookup(ggml_type);
    if (info == NULL) {
        return false;
    }
    *out_elements = info->elements;
    *out_bytes = info->bytes;
    return true;
}

const char *hurray__ggml_name(uint32_t ggml_type)
{
    const struct ggml_info *info = ggml_lookup(ggml_type);
    return info == NULL ? NULL : info->name;
}

HurrayStatus hurray_ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes)
{
    if (out_elements == NULL || out_bytes == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_ggml_block: %s is NULL",
                            out_elements == NULL ? "out_elements" : "out_bytes");
    }
    if (!hurray__ggml_block(ggml_type, out_elements, out_bytes)) {
        return hurray__fail(HURRAY_ERROR_UNSUPPORTED, "hurray_ggml_block: GGML type %u is unknown",
                            (unsigned)ggml_type);
    }
    return HURRAY_OK;
}

const char *hurray_ggml_name(uint32_t ggml_type)
{
    return hurray__ggml_name(ggml_type);
}
