/*
 * dtype.h -- internal: facts about element types (layer 1) and GGML block
 * formats.
 *
 * Not part of the ABI. Every function takes any uint32_t code, known or
 * not, and answers "no" (false, 0 or NULL) for an unknown one, so callers
 * can classify codes that came straight from untrusted bytes.
 */
#ifndef HURRAY_DTYPE_INTERNAL_H
#define HURRAY_DTYPE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "hurray.h"

/* Width in bits (1 to 128), or 0 for an unknown code. */
uint32_t hurray__dtype_bits(uint32_t dtype);

/* Lower-case numpy / ml_dtypes spelling ("int4", "float8_e4m3fn"), or NULL. */
const char *hurray__dtype_name(uint32_t dtype);

bool hurray__dtype_is_known(uint32_t dtype);
/* Signed or unsigned integers of any width, sub-byte ones included; not bool. */
bool hurray__dtype_is_integer(uint32_t dtype);
bool hurray__dtype_is_fp8(uint32_t dtype);
bool hurray__dtype_is_fp6(uint32_t dtype);
bool hurray__dtype_is_fp4(uint32_t dtype);
/* float16, float32, float64 and bfloat16: the types a scale may have. */
bool hurray__dtype_is_wide_float(uint32_t dtype);
/* Any real floating type: the wide ones plus the fp8, fp6 and fp4 families. */
bool hurray__dtype_is_float(uint32_t dtype);

/* One GGML block: how many elements it encodes and how many bytes it takes.
 * Returns false (outputs untouched) for an unknown type. */
bool hurray__ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes);

/* Lower-case GGUF spelling ("q4_0", "mxfp4"), or NULL for an unknown type. */
const char *hurray__ggml_name(uint32_t ggml_type);

#endif /* HURRAY_DTYPE_INTERNAL_H */
