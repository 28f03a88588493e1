/*
 * dequant_ggml_avx2.c -- AVX2 row decoders of the GGML block formats.
 */
#include "dequant.h"

#if HURRAY__DEQUANT_AVX2

#include <immintrin.h>

HurrayGgmlRowFn hurray__ggml_row_avx2(uint32_t ggml_type)
{
    (void)ggml_type;
    return NULL;
}

#endif
