/*
 * ggml_grids.h -- internal: the published lookup tables of the GGML block
 * formats (defined in ggml_grids.c, which tools/gen_ggml_grids.py writes
 * from ggml's src/ggml-common.h). Entries are ggml's, in ggml's order:
 *
 *   ksigns: 7 sign bits and an 8th that makes the count of set bits even;
 *   iq4nl_values, fp4_values: the 16 code values of IQ4_NL and of E2M1
 *     doubled (MXFP4, NVFP4), as int8;
 *   iq2*_grid: 8 magnitudes per entry, one per byte (lowest byte first);
 *   iq3*_grid: 4 magnitudes per entry, one per byte;
 *   iq1s_grid: 8 int8 values in {-1, 0, 1} per entry, one per byte.
 *
 * Not part of the ABI.
 */
#ifndef HURRAY_GGML_GRIDS_INTERNAL_H
#define HURRAY_GGML_GRIDS_INTERNAL_H

#include <stdint.h>

extern const uint8_t hurray__ggml_ksigns[128];
extern const int8_t hurray__ggml_iq4nl_values[16];
extern const int8_t hurray__ggml_fp4_values[16];
extern const uint64_t hurray__ggml_iq2xxs_grid[256];
extern const uint64_t hurray__ggml_iq2xs_grid[512];
extern const uint64_t hurray__ggml_iq2s_grid[1024];
extern const uint32_t hurray__ggml_iq3xxs_grid[256];
extern const uint32_t hurray__ggml_iq3s_grid[512];
extern const uint64_t hurray__ggml_iq1s_grid[2048];

#endif /* HURRAY_GGML_GRIDS_INTERNAL_H */
