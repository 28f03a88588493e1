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
    HURRAY__KIND_INT,   /* signed or unsigned, any width */
    HURRAY__KIND_FLOAT, /* float16/32/64, bfloat16 */
    HURRAY__KIND_COMPLEX,
    HURRAY__KIND_FP8,
    HURRAY__KIND_FP6,
    HURRAY__KIND_FP4
};

struct hurray__dtype_info {
    const char *name; /* lower-case numpy / ml_dtypes spelling */
    uint8_t bits;     /* 1 to 128 */
    uint8_t kind;     /* enum hurray__dtype_kind */
    /* The affine scheme's parts this dtype may be, as role bits
     * (HURRAY__ROLE_BIT): worked out from bits and kind where the table is
     * defined (dtype.c), so that the quick decode tests three
     * parts' dtypes with three loads and two ands (ADR-047). */
    uint8_t affine_roles;
};

/* One row for every byte value, so that a code stored in a byte (as
 * descriptors store them) indexes the table with no bounds check; the rows
 * of codes no dtype has are all zero. */
#define HURRAY__DTYPE_TABLE_LEN 256

/* Hidden: the table is internal, so code in the library reaches it
 * directly rather than through the GOT. */
#if defined(__GNUC__) || defined(__clang__)
#define HURRAY__DTYPE_HIDDEN __attribute__((visibility("hidden")))
#else
#define HURRAY__DTYPE_HIDDEN
#endif

/* Indexed by code (defined in dtype.c). */
extern const struct hurray__dtype_info
    hurray__dtype_table[HURRAY__DTYPE_TABLE_LEN] HURRAY__DTYPE_HIDDEN;

/* The row of any code. An unknown one gets an all-zero row (no name, 0
 * bits, HURRAY__KIND_NONE): row 0 for a code past the table, which needs
 * no branch, and never a read outside the table. For a uint8_t argument
 * the compiler drops the compare. */
static inline const struct hurray__dtype_info *hurray__dtype_row(uint32_t dtype)
{
    return &hurray__dtype_table[dtype < HURRAY__DTYPE_TABLE_LEN ? dtype : 0];
}

static inline uint8_t hurray__dtype_kind(uint32_t dtype)
{
    return hurray__dtype_row(dtype)->kind;
}

/* Width in bits (1 to 128), or 0 for an unknown code. */
static inline uint32_t hurray__dtype_bits(uint32_t dtype)
{
    return hurray__dtype_row(dtype)->bits;
}

/* "int4", "float8_e4m3fn", ..., or NULL. */
static inline const char *hurray__dtype_name(uint32_t dtype)
{
    return hurray__dtype_row(dtype)->name;
}

static inline bool hurray__dtype_is_known(uint32_t dtype)
{
    return hurray__dtype_kind(dtype) != HURRAY__KIND_NONE;
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

/* A kind that is a real floating type: the wide floats plus the fp8, fp6
 * and fp4 families. One test of a bit set of kinds rather than four
 * compares. */
static inline bool hurray__dtype_kind_is_float(uint8_t kind)
{
    const uint32_t floats = 1u << HURRAY__KIND_FLOAT | 1u << HURRAY__KIND_FP8 |
                            1u << HURRAY__KIND_FP6 | 1u << HURRAY__KIND_FP4;
    return (floats >> kind) & 1u;
}

/* The packing fits a values part of `bits` bits per element, as the quick
 * paths judge it (ggml_split, and every packing they do not take, is left
 * to the full rules): none for 8 bits and wider; padded, or lsb_first for
 * 1, 2 and 4 bits. */
static inline bool hurray__packing_fits_quickly(uint32_t packing, uint32_t bits)
{
    if (bits >= 8) {
        return packing == HURRAY_PACKING_NONE;
    }
    return packing == HURRAY_PACKING_PADDED ||
           (packing == HURRAY_PACKING_LSB_FIRST && (bits == 1 || bits == 2 || bits == 4));
}

/* The packing a new values part or stored node gets for a dtype of `bits`
 * bits: none for whole bytes; packed at their own width where that is
 * allowed (1, 2, 4 bits); one per byte otherwise (fp6, 3, 5, 6 and 7 bits). */
static inline uint32_t hurray__default_packing(uint32_t bits)
{
    if (bits >= 8) {
        return HURRAY_PACKING_NONE;
    }
    if (bits == 1 || bits == 2 || bits == 4) {
        return HURRAY_PACKING_LSB_FIRST;
    }
    return HURRAY_PACKING_PADDED;
}

/* Integer dtypes by sign: every code below 64 as one bit of a mask. */
#define HURRAY__SIGNED_INTS                                                                      \
    ((1ull << HURRAY_DTYPE_INT8) | (1ull << HURRAY_DTYPE_INT16) | (1ull << HURRAY_DTYPE_INT32) | \
     (1ull << HURRAY_DTYPE_INT64) | (1ull << HURRAY_DTYPE_INT1) | (1ull << HURRAY_DTYPE_INT2) |  \
     (1ull << HURRAY_DTYPE_INT4) | (1ull << HURRAY_DTYPE_INT3) | (1ull << HURRAY_DTYPE_INT5) |   \
     (1ull << HURRAY_DTYPE_INT6) | (1ull << HURRAY_DTYPE_INT7))
#define HURRAY__UNSIGNED_INTS                                                                     \
    ((1ull << HURRAY_DTYPE_UINT8) | (1ull << HURRAY_DTYPE_UINT16) |                               \
     (1ull << HURRAY_DTYPE_UINT32) | (1ull << HURRAY_DTYPE_UINT64) |                              \
     (1ull << HURRAY_DTYPE_UINT1) | (1ull << HURRAY_DTYPE_UINT2) | (1ull << HURRAY_DTYPE_UINT4) | \
     (1ull << HURRAY_DTYPE_UINT3) | (1ull << HURRAY_DTYPE_UINT5) | (1ull << HURRAY_DTYPE_UINT6) | \
     (1ull << HURRAY_DTYPE_UINT7))

static inline bool hurray__dtype_is_signed_int(uint32_t dtype)
{
    return dtype < 64 && ((HURRAY__SIGNED_INTS >> dtype) & 1u);
}

static inline bool hurray__dtype_is_unsigned_int(uint32_t dtype)
{
    return dtype < 64 && ((HURRAY__UNSIGNED_INTS >> dtype) & 1u);
}

/* One GGML block: how many elements it encodes and how many bytes it takes.
 * Returns false (outputs untouched) for an unknown type. */
bool hurray__ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes);

/* Lower-case GGUF spelling ("q4_0", "mxfp4"), or NULL for an unknown type. */
const char *hurray__ggml_name(uint32_t ggml_type);

#endif /* HURRAY_DTYPE_INTERNAL_H */
