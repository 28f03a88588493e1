/*
 * dtype.h -- internal: facts about element types (layer 1) and GGML block
 * formats.
 *
 * Not part of the ABI. Every function takes any uint32_t code, known or
 * not, and answers "no" (false, 0 or NULL) for an unknown one, so callers
 * can classify codes that came straight from untrusted bytes. The dtype
 * queries are inline because validation asks several of them per part on
 * the decode path.
 */
#ifndef HURRAY_DTYPE_INTERNAL_H
#define HURRAY_DTYPE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hurray.h"

enum hurray__dtype_kind {
    HURRAY__KIND_NONE = 0, /* a code no dtype has: unknown */
    HURRAY__KIND_BOOL,
    HURRAY__KIND_INT,      /* signed or unsigned, any width */
    HURRAY__KIND_FLOAT,    /* float16/32/64, bfloat16 */
    HURRAY__KIND_COMPLEX,
    HURRAY__KIND_FP8,
    HURRAY__KIND_FP6,
    HURRAY__KIND_FP4
};

struct hurray__dtype_info {
    const char *name; /* lower-case numpy / ml_dtypes spelling */
    uint8_t bits;     /* 1 to 128 */
    uint8_t kind;     /* enum hurray__dtype_kind */
};

/* Indexed by code (defined in dtype.c). */
extern const struct hurray__dtype_info hurray__dtype_table[];
extern const size_t hurray__dtype_table_len;

static inline const struct hurray__dtype_info *hurray__dtype_info(uint32_t dtype)
{
    if (dtype >= hurray__dtype_table_len || hurray__dtype_table[dtype].kind == HURRAY__KIND_NONE) {
        return NULL;
    }
    return &hurray__dtype_table[dtype];
}

static inline uint8_t hurray__dtype_kind(uint32_t dtype)
{
    const struct hurray__dtype_info *info = hurray__dtype_info(dtype);
    return info == NULL ? HURRAY__KIND_NONE : info->kind;
}

/* Width in bits (1 to 128), or 0 for an unknown code. */
static inline uint32_t hurray__dtype_bits(uint32_t dtype)
{
    const struct hurray__dtype_info *info = hurray__dtype_info(dtype);
    return info == NULL ? 0 : info->bits;
}

/* "int4", "float8_e4m3fn", ..., or NULL. */
static inline const char *hurray__dtype_name(uint32_t dtype)
{
    const struct hurray__dtype_info *info = hurray__dtype_info(dtype);
    return info == NULL ? NULL : info->name;
}

static inline bool hurray__dtype_is_known(uint32_t dtype)
{
    return hurray__dtype_info(dtype) != NULL;
}

/* Signed or unsigned integers of any width, sub-byte ones included; not bool. */
static inline bool hurray__dtype_is_integer(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) == HURRAY__KIND_INT;
}

static inline bool hurray__dtype_is_fp8(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) == HURRAY__KIND_FP8;
}

static inline bool hurray__dtype_is_fp6(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) == HURRAY__KIND_FP6;
}

static inline bool hurray__dtype_is_fp4(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) == HURRAY__KIND_FP4;
}

/* float16, float32, float64 and bfloat16: the types a scale may have. */
static inline bool hurray__dtype_is_wide_float(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) == HURRAY__KIND_FLOAT;
}

/* Any real floating type: the wide ones plus the fp8, fp6 and fp4 families. */
static inline bool hurray__dtype_is_float(uint32_t dtype)
{
    uint8_t kind = hurray__dtype_kind(dtype);
    return kind == HURRAY__KIND_FLOAT || kind == HURRAY__KIND_FP8 || kind == HURRAY__KIND_FP6 ||
           kind == HURRAY__KIND_FP4;
}

/* One GGML block: how many elements it encodes and how many bytes it takes.
 * Returns false (outputs untouched) for an unknown type. */
bool hurray__ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes);

/* Lower-case GGUF spelling ("q4_0", "mxfp4"), or NULL for an unknown type. */
const char *hurray__ggml_name(uint32_t ggml_type);

#endif /* HURRAY_DTYPE_INTERNAL_H */
