/*
 * test_descriptor_graph.c -- descriptor encoding version 2 (a graph of
 * nodes, ADR-054) in C: every example of the design (the formats of
 * shared/QUANT-FORMATS.md as nodes) built, encoded, decoded, read back and
 * checked against buffers of exactly the size worked out by hand; every
 * refusal; the reach at its edges; the index scans of check_buffers; and
 * version 1 beside it, unchanged.
 *
 * Uses only hurray.h (and tests/c/graph_text.h, which is built on it), so
 * it runs against the installed libhurray and with the library sources
 * compiled in under sanitizers. Buffer sizes below are worked out from
 * docs/impl/descriptor-encoding.md, not asked of the library; the working
 * is in the comment above each. HURRAY_TEST_SCALE=N (N > 1) skips the byte
 * sweep, the slow part under valgrind.
 */
#include "hurray.h"

#include "check.h"
#include "graph_text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))
#define MAX_ENCODED HURRAY_MAX_DESCRIPTOR_V2_LEN

static int sweep_bytes = 1;

typedef struct Example {
    const char *name;
    const char *text;
    uint64_t sizes[8]; /* every buffer's exact size */
    size_t buffers;
} Example;

/* The examples of the design (v2-spec § 6, ADR-054), shapes torch's [O, I]. */
static const Example examples[] = {
    /* qweight [I*4/32, O] int32 = 8 x 16 x 4 = 512; scales [G, O] f16 = 2 x 16 x 2 = 64;
     * qzeros [G, O*4/32] int32 = 2 x 2 x 4 = 16; g_idx [I] int32 = 256. */
    {"gptq_v1_act_order_4bit",
     "tensor shape=16,64 result=float16\n"
     "node 0 step form=sub_mul arithmetic=float16 shape=16,64 x=1 scale=2 offset=3 blocks=1,0 "
     "indexed_axis=1 group_index=4\n"
     "node 1 stored dtype=uint4 shape=16,64 strides=1,16 addressing=words packing=dense "
     "container_bits=32 packed_axis=1\n"
     "node 2 stored dtype=float16 shape=16,2 strides=1,16 buffer=1\n"
     "node 3 stored dtype=uint4 shape=16,2 strides=1,2 buffer=2 addressing=words packing=dense "
     "container_bits=32 packed_axis=0 code_offset=1\n"
     "node 4 stored dtype=int32 shape=64 buffer=3\n",
     {512, 64, 16, 256},
     4},
    /* qweight [I, O/8] int32 = 64 x 4 x 4 = 1024; scales [G, O] f16 = 128; qzeros [G, O/8] = 32. */
    {"awq_gemm",
     "tensor shape=32,64 result=float16\n"
     "node 0 step form=sub_mul arithmetic=float16 shape=32,64 x=1 scale=2 offset=3 blocks=1,32\n"
     "node 1 stored dtype=uint4 shape=32,64 strides=1,4 addressing=words packing=slots "
     "container_bits=32 packed_axis=0 chunk_containers=1 chunk_stride=1 order=0,4,1,5,2,6,3,7\n"
     "node 2 stored dtype=float16 shape=32,2 strides=1,32 buffer=1\n"
     "node 3 stored dtype=uint4 shape=32,2 strides=1,4 buffer=2 addressing=words packing=slots "
     "container_bits=32 packed_axis=0 chunk_containers=1 chunk_stride=1 order=0,4,1,5,2,6,3,7\n",
     {1024, 128, 32},
     3},
    /* weight_packed [O, ceil(64*3/32) = 6] int32 = 96; scale [O, G] bf16 = 16;
     * zero point packed along O: [ceil(4*3/32) = 1, G] int32 = 8. */
    {"compressed_tensors_pack_3bit_dense",
     "tensor shape=4,64 result=bfloat16\n"
     "node 0 step form=sub_mul arithmetic=bfloat16 shape=4,64 x=1 scale=2 offset=3 blocks=1,32\n"
     "node 1 stored dtype=uint3 shape=4,64 strides=6,1 addressing=words packing=dense "
     "container_bits=32 packed_axis=1 code_offset=-4\n"
     "node 2 stored dtype=bfloat16 shape=4,2 buffer=1\n"
     "node 3 stored dtype=uint3 shape=4,2 strides=2,1 buffer=2 addressing=words packing=dense "
     "container_bits=32 packed_axis=0 code_offset=-4\n",
     {96, 16, 8},
     3},
    /* <= 0.17: floor(32/3) = 10 per word, weight_packed [O, ceil(64/10) = 7] int32 = 112. */
    {"compressed_tensors_pack_3bit_slots",
     "tensor shape=4,64 result=bfloat16\n"
     "node 0 step form=mul arithmetic=bfloat16 shape=4,64 x=1 scale=2 blocks=1,32\n"
     "node 1 stored dtype=uint3 shape=4,64 strides=7,1 addressing=words packing=slots "
     "container_bits=32 packed_axis=1 chunk_containers=1 chunk_stride=1 "
     "order=0,1,2,3,4,5,6,7,8,9 code_offset=-4\n"
     "node 2 stored dtype=bfloat16 shape=4,2 buffer=1\n",
     {112, 16},
     2},
    /* weight_packed [O, I/2] = 64; weight_scale e4m3 [O, I/16] = 8; global f32 = 4. */
    {"compressed_tensors_nvfp4",
     "tensor shape=4,32 result=bfloat16\n"
     "node 0 step form=mul arithmetic=float32 shape=4,32 x=1 scale=2 blocks=1,16\n"
     "node 1 stored dtype=float4_e2m1fn shape=4,32\n"
     "node 2 step form=div arithmetic=float32 shape=4,2 x=3 scale=4 blocks=4,2\n"
     "node 3 stored dtype=float8_e4m3fn shape=4,2 buffer=1\n"
     "node 4 stored dtype=float32 shape=1,1 buffer=2\n",
     {64, 8, 4},
     3},
    /* block [128, 128] in the scale dtype: [130, 128] e4m3 = 16640; scale [2, 1] bf16 = 4. */
    {"compressed_tensors_fp8_block",
     "tensor shape=130,128 result=bfloat16\n"
     "node 0 step form=mul arithmetic=bfloat16 shape=130,128 x=1 scale=2 blocks=128,128 flags=1\n"
     "node 1 stored dtype=float8_e4m3fn shape=130,128\n"
     "node 2 stored dtype=bfloat16 shape=2,1 buffer=1\n",
     {16640, 4},
     2},
    /* w_q [O, 64*3/32 = 6] uint32 = 48; scales, biases [O, I/gs] f16 = 8 each. */
    {"mlx_affine_3bit",
     "tensor shape=2,64 result=float16\n"
     "node 0 step form=mul_add arithmetic=float16 shape=2,64 x=1 scale=2 offset=3 blocks=1,32\n"
     "node 1 stored dtype=uint3 shape=2,64 strides=6,1 addressing=words packing=dense "
     "container_bits=32 packed_axis=1\n"
     "node 2 stored dtype=float16 shape=2,2 buffer=1\n"
     "node 3 stored dtype=float16 shape=2,2 buffer=2\n",
     {48, 8, 8},
     3},
    /* w_q [O, I/8] uint32 = 32; scales e4m3 [O, I/16] = 4; global_scale f32 = 4; s = e4m3 *
     * (global / 2688), fp32. */
    {"mlx_nvfp4_global_scale",
     "tensor shape=2,32 result=float32\n"
     "node 0 step form=mul arithmetic=float32 shape=2,32 x=1 scale=2 blocks=1,16\n"
     "node 1 stored dtype=float4_e2m1fn shape=2,32 strides=4,1 addressing=words packing=dense "
     "container_bits=32 packed_axis=1\n"
     "node 2 step form=mul arithmetic=float32 shape=2,2 x=3 scale=4 blocks=2,2\n"
     "node 3 stored dtype=float8_e4m3fn shape=2,2 buffer=1\n"
     "node 4 step form=div arithmetic=float32 shape=1,1 x=5 scale=6\n"
     "node 5 stored dtype=float32 shape=1,1 buffer=2\n"
     "node 6 constant dtype=float32 value=0x45280000\n",
     {32, 4, 4},
     3},
    /* w_q [O, I/8] uint32 = 64; scales e8m0 [O, I/32] = 4 (255 is 2^128: inf in bf16). */
    {"mlx_mxfp4",
     "tensor shape=2,64 result=bfloat16\n"
     "node 0 step form=mul arithmetic=bfloat16 shape=2,64 x=1 scale=2 blocks=1,32\n"
     "node 1 stored dtype=float4_e2m1fn shape=2,64 strides=8,1 addressing=words packing=dense "
     "container_bits=32 packed_axis=1\n"
     "node 2 stored dtype=float8_e8m0fnu shape=2,2 buffer=1 value_rule=e8m0_no_nan\n",
     {64, 4},
     2},
    /* n = 200 codes, high nibble first: 100 bytes; NF4 table 64; 4 blocks of 64 (the last
     * ragged): absmax u8 [4] = 4; nested_quant_map f32 [256] = 1024; nested_absmax f32 [1] = 4. */
    {"bitsandbytes_nf4_nested",
     "tensor shape=10,20 result=bfloat16\n"
     "node 0 step form=mul arithmetic=float32 shape=200 x=1 scale=3 blocks=64 flags=1\n"
     "node 1 stored dtype=uint4 shape=200 addressing=words packing=slots container_bits=8 "
     "packed_axis=0 chunk_containers=1 chunk_stride=1 order=1,0 codebook=2\n"
     "node 2 stored dtype=float32 shape=16 buffer=1\n"
     "node 3 step form=mul_add arithmetic=float32 shape=4 x=4 scale=6 offset=7 blocks=256 "
     "flags=1\n"
     "node 4 stored dtype=uint8 shape=4 buffer=2 codebook=5\n"
     "node 5 stored dtype=float32 shape=256 buffer=3\n"
     "node 6 stored dtype=float32 shape=1 buffer=4\n"
     "node 7 constant dtype=float32 value=0x3db2e800\n",
     {100, 64, 4, 1024, 4},
     5},
    /* int8 [O, I] = 12; SCB f32 [O] = 12; then times fp32(1/127). */
    {"bitsandbytes_llm_int8",
     "tensor shape=3,4 result=float16\n"
     "node 0 step form=mul arithmetic=float32 shape=3,4 x=1 scale=4 blocks=3,4\n"
     "node 1 step form=mul arithmetic=float32 shape=3,4 x=2 scale=3 blocks=1,4\n"
     "node 2 stored dtype=int8 shape=3,4\n"
     "node 3 stored dtype=float32 shape=3,1 buffer=1\n"
     "node 4 constant dtype=float32 value=0x3c010204\n",
     {12, 12},
     2},
    /* e4m3 [200, 300] = 60000; weight_scale_inv f32 [2, 3] = 24. */
    {"deepseek_fp8_ragged",
     "tensor shape=200,300 result=bfloat16\n"
     "node 0 step form=mul arithmetic=float32 shape=200,300 x=1 scale=2 blocks=128,128 flags=1\n"
     "node 1 stored dtype=float8_e4m3fn shape=200,300\n"
     "node 2 stored dtype=float32 shape=2,3 buffer=1\n",
     {60000, 24},
     2},
    /* qdata [M, K/2] = 128; scales [4, 4] swizzled: 128 x 4 = 512; per_tensor_scale = 4. */
    {"torchao_nvfp4_swizzled",
     "tensor shape=4,64 result=bfloat16\n"
     "node 0 step form=mul arithmetic=float32 shape=4,64 x=1 scale=2 blocks=1,16\n"
     "node 1 stored dtype=float4_e2m1fn shape=4,64\n"
     "node 2 step form=mul arithmetic=float32 shape=4,4 x=3 scale=4 blocks=4,4\n"
     "node 3 stored dtype=float8_e4m3fn shape=4,4 strides=0,0 buffer=1 layout=swizzled_128x4\n"
     "node 4 stored dtype=float32 shape=1,1 buffer=2\n",
     {128, 512, 4},
     3},
    /* fp6 one per byte = 128; e8m0 [O, K/32] = 4 (NaN at 255, as torchao). */
    {"torchao_mx_fp6_padded",
     "tensor shape=2,64 result=bfloat16\n"
     "node 0 step form=mul arithmetic=bfloat16 shape=2,64 x=1 scale=2 blocks=1,32\n"
     "node 1 stored dtype=float6_e2m3fn shape=2,64 packing=padded\n"
     "node 2 stored dtype=float8_e8m0fnu shape=2,2 buffer=1\n",
     {128, 4},
     2},
    /* int4 [N, K/2] = 64; scale, zero [K/gs, N] bf16 = 8 each, read transposed. */
    {"torchao_int4_plain",
     "tensor shape=2,64 result=bfloat16\n"
     "node 0 step form=mul_add arithmetic=bfloat16 shape=2,64 x=1 scale=2 offset=3 blocks=1,32\n"
     "node 1 stored dtype=int4 shape=2,64\n"
     "node 2 stored dtype=bfloat16 shape=2,2 strides=1,2 buffer=1\n"
     "node 3 stored dtype=bfloat16 shape=2,2 strides=1,2 buffer=2\n",
     {64, 8, 8},
     3},
    /* int8 [3, 5] = 15; scales f64 [3] = 24; zero points int64 [3] = 24. */
    {"torch_per_channel_affine",
     "tensor shape=3,5 result=float32\n"
     "node 0 step form=sub_mul arithmetic=float64 shape=3,5 x=1 scale=2 offset=3 blocks=1,5\n"
     "node 1 stored dtype=int8 shape=3,5\n"
     "node 2 stored dtype=float64 shape=3,1 buffer=1\n"
     "node 3 stored dtype=int64 shape=3,1 buffer=2\n",
     {15, 24, 24},
     3},
    /* quint4x2 [2, 3]: 6 nibbles over the flat tensor = 3 bytes; f32 scales, zeros [2] = 8. */
    {"torch_quint4x2_float_qparams",
     "tensor shape=2,3 result=float32\n"
     "node 0 step form=sub_mul arithmetic=float32 shape=2,3 x=1 scale=2 offset=3 blocks=1,3\n"
     "node 1 stored dtype=uint4 shape=2,3\n"
     "node 2 stored dtype=float32 shape=2,1 buffer=1\n"
     "node 3 stored dtype=float32 shape=2,1 buffer=2\n",
     {3, 8, 8},
     3},
    /* raw_data of 15 int4 over the flat tensor = 8 bytes; scale f32 [3, 3] = 36; zero point
     * int4 [3, 3] flat = 5 bytes. */
    {"onnx_blocked_int4",
     "tensor shape=3,5 result=float32\n"
     "node 0 step form=sub_mul arithmetic=float32 shape=3,5 x=1 scale=2 offset=3 blocks=1,2 "
     "flags=1\n"
     "node 1 stored dtype=int4 shape=15 addressing=words packing=dense container_bits=8 "
     "packed_axis=0\n"
     "node 2 stored dtype=float32 shape=3,3 buffer=1\n"
     "node 3 stored dtype=int4 shape=3,3 buffer=2\n",
     {8, 36, 5},
     3},
    /* 5 fp6 as a 30-bit stream = 4 bytes; scale f32 = 4. */
    {"onnx_fp6",
     "tensor shape=5 result=float32\n"
     "node 0 step form=mul arithmetic=float32 shape=5 x=1 scale=2 blocks=5\n"
     "node 1 stored dtype=float6_e2m3fn shape=5 addressing=words packing=dense container_bits=8 "
     "packed_axis=0\n"
     "node 2 stored dtype=float32 shape=1 buffer=1\n",
     {4, 4},
     2},
    /* W [4, 64] as [R = 8, C = 32]: W_q [R/2, C] = 128, rows r and r + 4 in one byte
     * (high nibble first); scale, zero f16 [8, 1] = 16 each. */
    {"hqq_4bit_axis1",
     "tensor shape=4,64 result=float16\n"
     "node 0 step form=sub_mul arithmetic=float16 shape=8,32 x=1 scale=2 offset=3 blocks=1,32\n"
     "node 1 stored dtype=uint4 shape=8,32 strides=32,1 addressing=words packing=slots "
     "container_bits=8 packed_axis=0 chunk_containers=4 slot_flags=1 chunk_stride=4 order=1,0\n"
     "node 2 stored dtype=float16 shape=8,1 buffer=1\n"
     "node 3 stored dtype=float16 shape=8,1 buffer=2\n",
     {128, 16, 16},
     3},
    /* W [2, 64] as [R = 16, C = 8]: W_q int32 [ceil(16/10) = 2, 8] = 64, slice s at shift
     * 27 - 3s; scale, zero f16 [16, 1] = 32 each. */
    {"hqq_3bit",
     "tensor shape=2,64 result=float16\n"
     "node 0 step form=sub_mul arithmetic=float16 shape=16,8 x=1 scale=2 offset=3 blocks=1,8\n"
     "node 1 stored dtype=uint3 shape=16,8 strides=8,1 addressing=words packing=slots "
     "container_bits=32 packed_axis=0 chunk_containers=2 slot_flags=1 chunk_stride=2 "
     "order=9,8,7,6,5,4,3,2,1,0\n"
     "node 2 stored dtype=float16 shape=16,1 buffer=1\n"
     "node 3 stored dtype=float16 shape=16,1 buffer=2\n",
     {64, 32, 32},
     3},
    /* weight uint8 [O/4, I] = 8, plane i in bits 2i, field - 1; weight_scale f32 = 4. */
    {"bitnet",
     "tensor shape=8,4 result=bfloat16\n"
     "node 0 step form=div arithmetic=float32 shape=8,4 x=1 scale=2 blocks=8,4\n"
     "node 1 stored dtype=uint2 shape=8,4 strides=4,1 addressing=words packing=slots "
     "container_bits=8 packed_axis=0 chunk_containers=2 slot_flags=1 chunk_stride=2 "
     "order=0,1,2,3 code_offset=-1\n"
     "node 2 stored dtype=float32 shape=1,1 buffer=1\n",
     {8, 4},
     2},
    /* q4_0 [2, 64]: 4 blocks of 18 = 72. */
    {"gguf_q4_0_node",
     "tensor shape=2,64 result=none\n"
     "node 0 ggml type=q4_0 shape=2,64\n",
     {72},
     1},
    /* qweight [64*5/32 = 10, 32] int32 = 1280: per 32 inputs 4 low-plane rows then 1 high-plane
     * row (the high plane from byte 4 x 32 x 4 = 512); scales f16 [1, 32] = 64; qzeros
     * [1, 32*5/32 = 5] int32 = 20 (the high plane from byte 16). */
    {"gptq_p_5bit",
     "tensor shape=32,64 result=float16\n"
     "node 0 step form=sub_mul arithmetic=float16 shape=32,64 x=1 scale=4 offset=5 blocks=1,64\n"
     "node 1 bits shape=32,64 inputs=2,3 shifts=0,4\n"
     "node 2 stored dtype=uint4 shape=32,64 strides=1,32 addressing=words packing=slots "
     "container_bits=32 packed_axis=1 chunk_containers=4 chunk_stride=5 order=0,1,2,3,4,5,6,7\n"
     "node 3 stored dtype=uint1 shape=32,64 strides=1,32 offset=512 addressing=words "
     "packing=slots container_bits=32 packed_axis=1 chunk_containers=1 chunk_stride=5 "
     "order=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,"
     "31\n"
     "node 4 stored dtype=float16 shape=32,1 buffer=1\n"
     "node 5 bits shape=32,1 inputs=6,7 shifts=0,4\n"
     "node 6 stored dtype=uint4 shape=32,1 strides=1,5 buffer=2 addressing=words packing=slots "
     "container_bits=32 packed_axis=0 chunk_containers=4 chunk_stride=5 order=0,1,2,3,4,5,6,7\n"
     "node 7 stored dtype=uint1 shape=32,1 strides=1,5 buffer=2 offset=16 addressing=words "
     "packing=slots container_bits=32 packed_axis=0 chunk_containers=1 chunk_stride=5 "
     "order=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,"
     "31\n",
     {1280, 64, 20},
     3},
    /* ONNX DequantizeLinear, block 2 along axis 0 (the last block partial): int8 [5, 3] = 15;
     * scale f32 [3, 3] = 36. */
    {"onnx_blocked_axis0",
     "tensor shape=5,3 result=float32\n"
     "node 0 step form=mul arithmetic=float32 shape=5,3 x=1 scale=2 blocks=2,1 flags=1\n"
     "node 1 stored dtype=int8 shape=5,3\n"
     "node 2 stored dtype=float32 shape=3,3 buffer=1\n",
     {15, 36},
     2},
    /* bitsandbytes FP4, an odd count: 199 codes over the flat tensor, high nibble first,
     * padded to 100 bytes; the FP4 table (with -0.0 at code 8) f32 [16] = 64; absmax f32 [4]. */
    {"bitsandbytes_fp4_odd",
     "tensor shape=199 result=float16\n"
     "node 0 step form=mul arithmetic=float32 shape=199 x=1 scale=3 blocks=64 flags=1\n"
     "node 1 stored dtype=uint4 shape=199 addressing=words packing=slots container_bits=8 "
     "packed_axis=0 chunk_containers=1 chunk_stride=1 order=1,0 codebook=2\n"
     "node 2 stored dtype=float32 shape=16 buffer=1\n"
     "node 3 stored dtype=float32 shape=4 buffer=2\n",
     {100, 64, 16},
     3},
    /* optimum-quanto int4 with a float shift, s*q - shift: rows [0, R/2) in the low nibble,
     * [R/2, R) in the high one; _data [2, 3] = 6; scale, shift f16 [4, 1] = 8 each. */
    {"optimum_quanto_float_shift",
     "tensor shape=4,3 result=float16\n"
     "node 0 step form=mul_sub arithmetic=float16 shape=4,3 x=1 scale=2 offset=3 blocks=1,3\n"
     "node 1 stored dtype=uint4 shape=4,3 strides=3,1 addressing=words packing=slots "
     "container_bits=8 packed_axis=0 chunk_containers=2 slot_flags=1 chunk_stride=2 order=0,1\n"
     "node 2 stored dtype=float16 shape=4,1 buffer=1\n"
     "node 3 stored dtype=float16 shape=4,1 buffer=2\n",
     {6, 8, 8},
     3},
    /* x f32 [5, 3] = 60; index int64 [4] = 32. */
    {"gather_rows",
     "tensor shape=4,3 result=none\n"
     "node 0 gather shape=4,3 x=1 index=2 axis=0\n"
     "node 1 stored dtype=float32 shape=5,3\n"
     "node 2 stored dtype=int64 shape=4 buffer=1\n",
     {60, 32},
     2},
};

/* ---- helpers ---------------------------------------------------------- */

static HurrayDescriptor *build(const char *text)
{
    HurrayDescriptor *desc = NULL;
    HurrayStatus status = graph_text_build(text, &desc);
    if (status != HURRAY_OK) {
        fprintf(stderr, "could not build:\n%s\n", text);
    }
    CHECK_OK(status);
    CHECK(desc != NULL);
    return desc;
}

static uint64_t encode(const HurrayDescriptor *desc, uint8_t *out)
{
    uint64_t len = 0;
    CHECK_OK(hurray_descriptor_encode(desc, NULL, 0, &len));
    CHECK(len >= 48 && len <= MAX_ENCODED && len % 8 == 0);
    uint64_t written = 0;
    CHECK_OK(hurray_descriptor_encode(desc, out, len, &written));
    CHECK(written == len);
    return len;
}

/* Decodes from an exact-size heap copy, so a sanitizer sees any overread. */
static HurrayStatus decode_exact(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out)
{
    uint8_t *copy = malloc(len == 0 ? 1 : len);
    CHECK(copy != NULL);
    if (len > 0) {
        memcpy(copy, bytes, len);
    }
    HurrayStatus status = hurray_descriptor_decode(copy, len, out);
    free(copy);
    return status;
}

static char *dump(const HurrayDescriptor *desc)
{
    static char text[2][1 << 16];
    static int which;
    which ^= 1;
    CHECK_OK(graph_text_dump(desc, text[which], sizeof text[which]));
    return text[which];
}

static HurrayBufferList *make_list(const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    for (size_t i = 0; i < count; i++) {
        HurrayBuffer *buf = NULL;
        CHECK_OK(hurray_buffer_new(sizes[i], 1, &buf));
        CHECK_OK(hurray_buffer_list_push(list, &buf));
    }
    return list;
}

static HurrayStatus check_sizes(const HurrayDescriptor *desc, const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = make_list(sizes, count);
    HurrayStatus status = hurray_descriptor_check_buffers(desc, list);
    hurray_buffer_list_destroy(&list);
    return status;
}

/* Buffers of exactly the sizes fit; each one byte short, and a list one
 * longer or one shorter, do not. */
static void check_exact_sizes(const HurrayDescriptor *desc, const uint64_t *sizes, size_t count)
{
    CHECK_OK(check_sizes(desc, sizes, count));
    uint64_t changed[9];
    for (size_t i = 0; i < count; i++) {
        if (sizes[i] == 0) {
            continue;
        }
        memcpy(changed, sizes, count * sizeof sizes[0]);
        changed[i]--;
        CHECK_FAIL(check_sizes(desc, changed, count), HURRAY_ERROR_BUFFER_TOO_SMALL, "node");
    }
    memcpy(changed, sizes, count * sizeof sizes[0]);
    changed[count] = 1;
    CHECK_FAIL(check_sizes(desc, changed, count + 1), HURRAY_ERROR_INVALID_ARGUMENT, "buffer list");
    if (count > 0) {
        CHECK_FAIL(check_sizes(desc, sizes, count - 1), HURRAY_ERROR_INVALID_ARGUMENT,
                   "buffer list");
    }
}

/* Decode accepts exactly what encode writes: every byte through every
 * value (and every truncation) either is refused with a message or decodes
 * to a descriptor that re-encodes to exactly those bytes, and whose text
 * builds back to them; check_buffers on it never reads out of bounds. */
static void sweep_encoding(const uint8_t *bytes, uint64_t len)
{
    static uint8_t changed[MAX_ENCODED], again[MAX_ENCODED];
    for (uint64_t cut = 0; cut < len; cut++) {
        HurrayDescriptor *desc = NULL;
        CHECK(decode_exact(bytes, cut, &desc) != HURRAY_OK && desc == NULL);
    }
    if (!sweep_bytes) {
        return;
    }
    for (uint64_t at = 0; at < len; at++) {
        for (uint32_t v = 0; v < 256; v++) {
            if (v == bytes[at]) {
                continue;
            }
            memcpy(changed, bytes, len);
            changed[at] = (uint8_t)v;
            HurrayDescriptor *desc = NULL;
            HurrayStatus status = decode_exact(changed, len, &desc);
            if (status != HURRAY_OK) {
                CHECK(desc == NULL && hurray_last_error_message()[0] != '\0');
                continue;
            }
            uint64_t n = 0;
            CHECK_OK(hurray_descriptor_encode(desc, again, sizeof again, &n));
            CHECK(n == len && memcmp(again, changed, len) == 0);
            hurray_descriptor_destroy(&desc);
        }
    }
}

/* ---- every example --------------------------------------------------- */

static void check_example(const Example *ex)
{
    HurrayDescriptor *built = build(ex->text);
    CHECK_OK(hurray_descriptor_validate(built));
    static uint8_t bytes[MAX_ENCODED], again[MAX_ENCODED];
    uint64_t len = encode(built, bytes);
    /* The fields, as the header and the node headers state them. */
    CHECK(memcmp(bytes, "HRYD", 4) == 0 && bytes[4] == 2 && bytes[5] == 0);
    CHECK((bytes[6] | (uint64_t)bytes[7] << 8) == len);
    HurrayDescriptor *decoded = NULL;
    CHECK_OK(decode_exact(bytes, len, &decoded));
    uint64_t again_len = encode(decoded, again);
    CHECK(again_len == len && memcmp(again, bytes, len) == 0);
    /* The accessors say what the builder was told. */
    char *text = dump(decoded);
    CHECK(strcmp(text, dump(built)) == 0);
    HurrayDescriptor *rebuilt = build(text);
    again_len = encode(rebuilt, again);
    CHECK(again_len == len && memcmp(again, bytes, len) == 0);
    /* The version-1 accessors on a version-2 descriptor. */
    uint32_t u, scheme, granularity, axis, ggml;
    uint64_t block, count;
    CHECK_OK(hurray_descriptor_encoding_version(decoded, &u));
    CHECK(u == 2);
    CHECK_OK(hurray_descriptor_quantization(decoded, &scheme, &granularity, &axis, &block, &ggml));
    CHECK(scheme == HURRAY_SCHEME_GRAPH && granularity == 0 && axis == 0 && block == 0 &&
          ggml == 0);
    CHECK_FAIL(hurray_descriptor_dtype(decoded, &u), HURRAY_ERROR_NOT_FOUND, "node 0");
    uint64_t index, offset;
    uint32_t dtype, layout;
    for (uint32_t role = HURRAY_ROLE_VALUES; role <= HURRAY_ROLE_GLOBAL_SCALE; role++) {
        CHECK_STATUS(hurray_descriptor_part(decoded, role, &dtype, &index, &offset, &layout),
                     HURRAY_ERROR_NOT_FOUND);
    }
    CHECK_OK(hurray_descriptor_buffer_count(decoded, &count));
    CHECK(count == ex->buffers);
    /* Strides: row-major over the tensor's shape. */
    uint32_t rank;
    const uint64_t *shape;
    const int64_t *strides;
    CHECK_OK(hurray_descriptor_rank(decoded, &rank));
    CHECK_OK(hurray_descriptor_shape(decoded, &shape));
    CHECK_OK(hurray_descriptor_strides(decoded, &strides));
    int64_t step = 1;
    for (uint32_t k = rank; k-- > 0;) {
        CHECK(strides[k] == step);
        step *= (int64_t)(shape[k] == 0 ? 1 : shape[k]);
    }
    check_exact_sizes(decoded, ex->sizes, ex->buffers);
    check_exact_sizes(built, ex->sizes, ex->buffers);
    sweep_encoding(bytes, len);
    hurray_descriptor_destroy(&rebuilt);
    hurray_descriptor_destroy(&decoded);
    hurray_descriptor_destroy(&built);
    CHECK(built == NULL && decoded == NULL);
}

static void test_examples(void)
{
    for (size_t i = 0; i < COUNT(examples); i++) {
        check_example(&examples[i]);
    }
}

static const Example *example(const char *name)
{
    for (size_t i = 0; i < COUNT(examples); i++) {
        if (strcmp(examples[i].name, name) == 0) {
            return &examples[i];
        }
    }
    fprintf(stderr, "no example %s\n", name);
    exit(1);
}

/* ---- refusals ------------------------------------------------------- */

/* Marks an entry that is valid (a control for its neighbours). */
#define HURRAY_ERROR_OK_SENTINEL HURRAY_OK

typedef struct Refusal {
    const char *text;
    HurrayStatus status;
    const char *words; /* in the message: the node and the field */
} Refusal;

/* Each is built, then validated; the first failure must be this one. */
static const Refusal refusals[] = {
    /* a codebook shorter than its code width needs */
    {"tensor shape=8\n"
     "node 0 stored dtype=uint4 shape=8 codebook=1\n"
     "node 1 stored dtype=float32 shape=15 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (stored): a codebook shorter than its code width "
     "needs: codebook (node 1) has 15 entries, 4-bit codes need 16"},
    {"tensor shape=8\n"
     "node 0 stored dtype=uint4 shape=8 codebook=1\n"
     "node 1 stored dtype=float32 shape=4,4 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "codebook (node 1) has rank 2, not 1"},
    {"tensor shape=8\n"
     "node 0 stored dtype=int4 shape=8 codebook=1\n"
     "node 1 stored dtype=float32 shape=16 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (stored): a codebook is indexed by unsigned codes"},
    {"tensor shape=8\n"
     "node 0 stored dtype=uint4 shape=8 codebook=1 code_offset=2\n"
     "node 1 stored dtype=float32 shape=16 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "code offset must be 0 with a codebook"},
    /* a block shape that does not tile its axes without RAGGED */
    {"tensor shape=200,300\n"
     "node 0 step form=mul arithmetic=float32 shape=200,300 x=1 scale=2 blocks=128,128\n"
     "node 1 stored dtype=float8_e4m3fn shape=200,300\n"
     "node 2 stored dtype=float32 shape=2,3 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (step): blocks[0] = 128 does not tile shape[0] = 200"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=0,8\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,1 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (step): blocks[0] is 0"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,8 flags=2\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,1 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (step): flags 0x2 hold unknown bits"},
    /* a packing that overruns its words */
    {"tensor shape=4\n"
     "node 0 stored dtype=float16 shape=4 addressing=words packing=dense container_bits=8\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (stored): a packing that overruns its words: dtype float16 of 16 bits does not fit "
     "a 8-bit container"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint3 shape=4 addressing=words packing=slots container_bits=32 "
     "chunk_containers=1 chunk_stride=1 order=0,1,2,3,4,5,6,7,8\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "slot count 9 is not floor(32 / 3) = 10"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_containers=1 chunk_stride=1 order=1,1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "order is not a permutation of 0 .. 1 (order[1] is 1)"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_containers=1 chunk_stride=1 order=0,2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "order is not a permutation"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_stride=1 order=0,1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "chunk containers is 0"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_containers=2 chunk_stride=1 order=0,1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "chunk stride 1 is below the chunk's 2 containers"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_containers=1 chunk_stride=1 slot_flags=1 order=0,1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "planar with one container per chunk"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots container_bits=8 "
     "chunk_containers=2 chunk_stride=2 slot_flags=3 order=0,1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "slot flags 0x3 hold unknown bits"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=dense container_bits=12\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "container bits 12 is not 8, 16, 32 or 64"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=dense container_bits=8 "
     "packed_axis=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "packed axis 1 is not below the rank 1"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=dense container_bits=8 "
     "chunk_stride=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "chunk stride must be 0 with dense packing"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=lsb_first container_bits=8\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "words addressing packs dense or slots, not lsb_first"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 addressing=words packing=dense container_bits=8 "
     "byte_order=big\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "byte order big needs containers wider than 8 bits"},
    {"tensor shape=4,4\n"
     "node 0 stored dtype=uint8 shape=4,4 addressing=words packing=dense container_bits=8 "
     "layout=swizzled_128x4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "layout swizzled_128x4 needs elements addressing"},
    /* elements addressing keeps version 1's packing rules */
    {"tensor shape=4\n"
     "node 0 stored dtype=uint3 shape=4 packing=lsb_first\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (stored): packing lsb_first needs a width of 1, 2 or 4"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 packing=dense\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "packing dense needs words addressing"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint8 shape=4 packing=padded\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "packing padded does not fit dtype uint8"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint4 shape=4 packing=none\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "packing none does not fit dtype uint4"},
    {"tensor shape=2,32\n"
     "node 0 stored dtype=uint4 shape=2,32 strides=1,2 packing=ggml_split\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "packing ggml_split needs row-major contiguous strides"},
    {"tensor shape=2,16\n"
     "node 0 stored dtype=uint4 shape=2,16 packing=ggml_split\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "a last dimension that is a multiple of 32"},
    {"tensor shape=4\n"
     "node 0 stored dtype=int8 shape=4 byte_order=big\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "byte order big needs elements wider than 8 bits"},
    {"tensor shape=4,4\n"
     "node 0 stored dtype=uint8 shape=4,4 layout=swizzled_128x4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "strides[0] must be 0 with layout swizzled_128x4"},
    {"tensor shape=4,4,1\n"
     "node 0 stored dtype=uint8 shape=4,4,1 strides=0,0,0 layout=swizzled_128x4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "layout swizzled_128x4 needs rank 2"},
    {"tensor shape=4\n"
     "node 0 stored dtype=complex64 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "dtype complex64 is complex"},
    {"tensor shape=4\n"
     "node 0 stored dtype=uint8 shape=4 value_rule=e8m0_no_nan\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "value rule e8m0_no_nan is for float8_e8m0fnu, not uint8"},
    {"tensor shape=4\n"
     "node 0 stored dtype=float16 shape=4 code_offset=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "code offset 1 needs an integer dtype, not float16"},
    /* a nested chain that loops: every reference points to a later node */
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 1 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 1 (step): x refers to node 1, which is not after it: a chain of nodes may not loop"},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 1 stored dtype=float32 shape=4\n"
     "node 2 step form=mul arithmetic=float32 shape=1 x=3 scale=1\n"
     "node 3 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 2 (step): scale refers to node 1, which is not after it"},
    {"tensor shape=8\n"
     "node 0 stored dtype=uint4 shape=8 codebook=0\n",
     HURRAY_ERROR_OK_SENTINEL, ""},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=5\n"
     "node 1 stored dtype=float32 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (step): scale refers to node 5, past the last node (1)"},
    /* canonical order: depth-first from node 0, children in field order */
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=2 scale=1\n"
     "node 1 constant dtype=float32 value=0x3f800000\n"
     "node 2 stored dtype=float32 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "meets node 2 where node 1 must come"},
    {"tensor shape=4\n"
     "node 0 stored dtype=float32 shape=4\n"
     "node 1 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 1 (constant) is not reached from node 0"},
    /* steps: operands, grids, forms */
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,4\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,3 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR,
     "node 0 (step): scale (node 2): shape[1] is 3, the step's grid has 2 there"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,4\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=8 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "scale (node 2) has rank 1; it must be a constant or have"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2\n"
     "node 1 stored dtype=int8 shape=4,4\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (step): x (node 1) has 16 elements, the step 32"},
    {"tensor shape=4\n"
     "node 0 step form=sub_mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 1 stored dtype=int8 shape=4\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (step): offset refers to node 0"},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2 offset=3\n"
     "node 1 stored dtype=int8 shape=4\n"
     "node 2 constant dtype=float32 value=0x3f800000\n"
     "node 3 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "offset must be 0: form mul has none, not node 3"},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=int32 shape=4 x=1 scale=2\n"
     "node 1 stored dtype=int8 shape=4\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "arithmetic int32: a step computes in float16"},
    /* a group index of the wrong kind, shape or dtype */
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,0 indexed_axis=1 "
     "group_index=3\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,2 buffer=1\n"
     "node 3 stored dtype=float32 shape=8 buffer=2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "group index (node 3) must be a stored node of an integer"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,0 indexed_axis=1 "
     "group_index=3\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,2 buffer=1\n"
     "node 3 stored dtype=int32 shape=4 buffer=2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "group index (node 3) must be rank 1 of length shape[1] = 8"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,1 indexed_axis=1 "
     "group_index=3\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,2 buffer=1\n"
     "node 3 stored dtype=int32 shape=8 buffer=2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "blocks[1] must be 0 on the indexed axis"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,0 indexed_axis=2 "
     "group_index=3\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 stored dtype=float32 shape=4,2 buffer=1\n"
     "node 3 stored dtype=int32 shape=8 buffer=2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "indexed axis 2 is not below the rank 2"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 indexed_axis=1\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "indexed axis must be 0 without a group index"},
    {"tensor shape=4,8\n"
     "node 0 step form=mul arithmetic=float32 shape=4,8 x=1 scale=2 blocks=1,0 indexed_axis=1 "
     "group_index=3\n"
     "node 1 stored dtype=int8 shape=4,8\n"
     "node 2 constant dtype=float32 value=0x3f800000\n"
     "node 3 stored dtype=int32 shape=8 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "the indexed axis needs a scale or offset with a grid"},
    /* bits and gather */
    {"tensor shape=4\n"
     "node 0 bits shape=4 inputs=1 shifts=0\n"
     "node 1 stored dtype=int4 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "input 0 (node 1) must be a stored node of an unsigned"},
    {"tensor shape=4\n"
     "node 0 bits shape=4 inputs=1 shifts=60\n"
     "node 1 stored dtype=uint4 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "shift 60 of input 0 (4 bits) reaches past bit 62"},
    {"tensor shape=4\n"
     "node 0 bits shape=4 inputs=1 shifts=0\n"
     "node 1 stored dtype=uint4 shape=2,2\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "input 0 (node 1) must have its shape"},
    {"tensor shape=4,3\n"
     "node 0 gather shape=4,3 x=1 index=2 axis=0\n"
     "node 1 stored dtype=float32 shape=5,2\n"
     "node 2 stored dtype=int64 shape=4 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "x (node 1) must have its shape except along axis 0"},
    {"tensor shape=4,3\n"
     "node 0 gather shape=4,3 x=1 index=2 axis=0\n"
     "node 1 stored dtype=float32 shape=5,3\n"
     "node 2 stored dtype=int64 shape=3 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "index (node 2) must be rank 1 of length shape[0] = 4"},
    {"tensor shape=4,3\n"
     "node 0 gather shape=4,3 x=1 index=2 axis=2\n"
     "node 1 stored dtype=float32 shape=5,3\n"
     "node 2 stored dtype=int64 shape=4 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "axis 2 is not below the rank 2"},
    /* constants, ggml, the header, buffers, counts */
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 1 stored dtype=int8 shape=4\n"
     "node 2 constant dtype=uint8 value=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 2 (constant): dtype uint8: a constant is"},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
     "node 1 stored dtype=int8 shape=4\n"
     "node 2 constant dtype=float16 value=0x13c00\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "value bytes past the 2 bytes of float16 are not zero"},
    {"tensor shape=2,48\n"
     "node 0 ggml type=q4_0 shape=2,48\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "shape[1] = 48 is not a multiple of the 32 elements"},
    {"tensor shape=5\n"
     "node 0 stored dtype=float32 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (stored) has 4 elements, the tensor's shape 5"},
    {"tensor shape=4\n"
     "node 0 stored dtype=float32 shape=4 buffer=1\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "no node uses buffer 0"},
    {"tensor shape=4\n"
     "node 0 stored dtype=float32 shape=4 buffer=16\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (stored): buffer index 16 leaves a gap"},
    {"tensor shape=4 result=int8\n"
     "node 0 stored dtype=float32 shape=4\n",
     HURRAY_ERROR_INVALID_DESCRIPTOR, "result dtype int8 is not float16"},
    {"tensor shape=4\n"
     "node 0 step form=mul arithmetic=float32 shape=4294967296,4294967296 x=1 scale=2\n"
     "node 1 stored dtype=float32 shape=4\n"
     "node 2 constant dtype=float32 value=0x3f800000\n",
     HURRAY_ERROR_OVERFLOW, "node 0 (step): shape[1]: element count overflows 63 bits"},
    {"tensor shape=4\n"
     "node 0 stored dtype=float32 shape=4294967296,4294967296\n",
     HURRAY_ERROR_OVERFLOW, "hurray_descriptor_add_stored: shape[0]: element count overflows"},
    {"tensor shape=2,2\n"
     "node 0 stored dtype=float32 shape=2,2 strides=4611686018427387904,1\n",
     HURRAY_ERROR_OVERFLOW, "node 0 (stored): reach in bits overflows 63 bits"},
    {"tensor shape=2,64\n"
     "node 0 stored dtype=uint4 shape=2,64 strides=4611686018427387904,1 addressing=words "
     "packing=dense container_bits=8 packed_axis=1\n",
     HURRAY_ERROR_OVERFLOW, "node 0 (stored): reach in bits overflows 63 bits"},
    /* setters: codes they cannot know, values their fields cannot hold */
    {"tensor shape=4\n"
     "node 0 step form=mul_sub arithmetic=float32 shape=4 x=1 scale=2 offset=16\n",
     HURRAY_ERROR_INVALID_ARGUMENT, "offset 16 is not a node index"},
};

static void test_refusals(void)
{
    for (size_t i = 0; i < COUNT(refusals); i++) {
        HurrayDescriptor *desc = NULL;
        HurrayStatus status = graph_text_build(refusals[i].text, &desc);
        if (status == HURRAY_OK) {
            status = hurray_descriptor_validate(desc);
            /* encode and check_buffers refuse it the same way */
            uint64_t len = 0;
            if (status != HURRAY_OK) {
                CHECK(hurray_descriptor_encode(desc, NULL, 0, &len) == status);
            }
        }
        if (status != refusals[i].status ||
            strstr(hurray_last_error_message(), refusals[i].words) == NULL) {
            fprintf(stderr, "refusal %zu: %s, \"%s\"; expected %s, \"%s\"\n%s", i,
                    hurray_status_name(status), hurray_last_error_message(),
                    hurray_status_name(refusals[i].status), refusals[i].words, refusals[i].text);
            exit(1);
        }
        CHECK(1);
        hurray_descriptor_destroy(&desc);
    }
}

/* ---- the index scans of check_buffers ------------------------------- */

/* A list of buffers holding these bytes (copied). */
static HurrayBufferList *list_of(const uint8_t *const *data, const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = NULL;
    CHECK_OK(hurray_buffer_list_new(&list));
    for (size_t i = 0; i < count; i++) {
        HurrayBuffer *buf = NULL;
        void *bytes = NULL;
        uint64_t len = 0;
        CHECK_OK(hurray_buffer_new(sizes[i], 1, &buf));
        CHECK_OK(hurray_buffer_data(buf, &bytes, &len));
        if (data[i] != NULL) {
            memcpy(bytes, data[i], sizes[i]);
        }
        CHECK_OK(hurray_buffer_list_push(list, &buf));
    }
    return list;
}

static HurrayStatus check_data(const HurrayDescriptor *desc, const uint8_t *const *data,
                               const uint64_t *sizes, size_t count)
{
    HurrayBufferList *list = list_of(data, sizes, count);
    HurrayStatus status = hurray_descriptor_check_buffers(desc, list);
    hurray_buffer_list_destroy(&list);
    return status;
}

static void put_i32(uint8_t *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int k = 0; k < 4; k++) {
        p[k] = (uint8_t)(u >> (8 * k));
    }
}

/* GPTQ's g_idx: every value must be a group (0 or 1 here) before anything
 * trusts it; -1 and 2 are refused, naming the element. */
static void test_group_index_scan(void)
{
    const Example *ex = example("gptq_v1_act_order_4bit");
    HurrayDescriptor *desc = build(ex->text);
    static uint8_t g_idx[256];
    const uint8_t *data[4] = {NULL, NULL, NULL, g_idx};
    for (int i = 0; i < 64; i++) {
        put_i32(g_idx + 4 * i, (i * 7) % 2); /* act-order: not monotonic */
    }
    CHECK_OK(check_data(desc, data, ex->sizes, 4));
    put_i32(g_idx + 4 * 37, 1); /* the last group */
    CHECK_OK(check_data(desc, data, ex->sizes, 4));
    put_i32(g_idx + 4 * 37, 2);
    CHECK_FAIL(check_data(desc, data, ex->sizes, 4), HURRAY_ERROR_OUT_OF_RANGE,
               "node 4 (stored, the group index of node 0): element 37 is 2, not in [0, 2)");
    put_i32(g_idx + 4 * 37, -1);
    CHECK_FAIL(check_data(desc, data, ex->sizes, 4), HURRAY_ERROR_OUT_OF_RANGE, "element 37 is -1");
    put_i32(g_idx + 4 * 37, 0);
    put_i32(g_idx + 4 * 63, INT32_MIN);
    CHECK_FAIL(check_data(desc, data, ex->sizes, 4), HURRAY_ERROR_OUT_OF_RANGE, "element 63 is");
    hurray_descriptor_destroy(&desc);

    /* A group index stored as packed uint4 (words, dense, in bytes): element
     * 5 is the high nibble of byte 2. Group count 3. */
    desc = build("tensor shape=2,6\n"
                 "node 0 step form=mul arithmetic=float32 shape=2,6 x=1 scale=2 blocks=1,0 "
                 "indexed_axis=1 group_index=3\n"
                 "node 1 stored dtype=int8 shape=2,6\n"
                 "node 2 stored dtype=float32 shape=2,3 buffer=1\n"
                 "node 3 stored dtype=uint4 shape=6 buffer=2 addressing=words packing=dense "
                 "container_bits=8\n");
    uint8_t packed[3] = {0x10, 0x02, 0x21};
    const uint64_t sizes[3] = {12, 24, 3};
    const uint8_t *with[3] = {NULL, NULL, packed};
    CHECK_OK(check_data(desc, with, sizes, 3));
    packed[2] = 0x31;
    CHECK_FAIL(check_data(desc, with, sizes, 3), HURRAY_ERROR_OUT_OF_RANGE, "element 5 is 3");
    packed[2] = 0x23;
    CHECK_FAIL(check_data(desc, with, sizes, 3), HURRAY_ERROR_OUT_OF_RANGE, "element 4 is 3");
    hurray_descriptor_destroy(&desc);
}

/* A gather index must lie below x's extent along the axis (5 here). */
static void test_gather_scan(void)
{
    const Example *ex = example("gather_rows");
    HurrayDescriptor *desc = build(ex->text);
    static uint8_t index[32];
    const uint8_t *data[2] = {NULL, index};
    const int64_t values[4] = {4, 0, 3, 1};
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 8; k++) {
            index[8 * i + k] = (uint8_t)((uint64_t)values[i] >> (8 * k));
        }
    }
    CHECK_OK(check_data(desc, data, ex->sizes, 2));
    index[16] = 5;
    CHECK_FAIL(check_data(desc, data, ex->sizes, 2), HURRAY_ERROR_OUT_OF_RANGE,
               "node 2 (stored, the gather index of node 0): element 2 is 5, not in [0, 5)");
    index[16] = 3;
    index[31] = 0x80; /* element 3 negative */
    CHECK_FAIL(check_data(desc, data, ex->sizes, 2), HURRAY_ERROR_OUT_OF_RANGE, "element 3 is -");
    hurray_descriptor_destroy(&desc);
    /* An index node of uint64 with a value past INT64_MAX is out of range too. */
    desc = build("tensor shape=2\n"
                 "node 0 gather shape=2 x=1 index=2 axis=0\n"
                 "node 1 stored dtype=float32 shape=3\n"
                 "node 2 stored dtype=uint64 shape=2 buffer=1\n");
    static uint8_t big[16];
    memset(big + 8, 0xFF, 8);
    const uint8_t *bigs[2] = {NULL, big};
    const uint64_t sizes[2] = {12, 16};
    CHECK_FAIL(check_data(desc, bigs, sizes, 2), HURRAY_ERROR_OUT_OF_RANGE, "element 1 is");
    hurray_descriptor_destroy(&desc);
}

/* ---- reach at the edges ----------------------------------------------- */

static void test_reach_edges(void)
{
    /* Negative strides reach back from the byte offset: 2 elements of 4 bytes. */
    HurrayDescriptor *desc = build("tensor shape=3\n"
                                   "node 0 stored dtype=float32 shape=3 strides=-1 offset=8\n");
    uint64_t twelve = 12, eleven = 11;
    CHECK_OK(check_sizes(desc, &twelve, 1));
    CHECK_FAIL(check_sizes(desc, &eleven, 1), HURRAY_ERROR_BUFFER_TOO_SMALL, "node 0 (stored)");
    hurray_descriptor_destroy(&desc);
    desc = build("tensor shape=3\n"
                 "node 0 stored dtype=float32 shape=3 strides=-1 offset=4\n");
    CHECK_FAIL(check_sizes(desc, &twelve, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "negative strides reach 8 bytes back from byte offset 4");
    hurray_descriptor_destroy(&desc);
    /* Words with negative strides: containers count back. */
    desc = build("tensor shape=2,8\n"
                 "node 0 stored dtype=uint4 shape=2,8 strides=-1,2 offset=4 addressing=words "
                 "packing=dense container_bits=16 packed_axis=1\n");
    /* 8 codes of 4 bits along p: 2 containers of 16 bits; rows 1 back: 2 bytes before,
     * after: (1 + 1*2) containers = 6 bytes. */
    uint64_t ten = 10, nine = 9;
    CHECK_OK(check_sizes(desc, &ten, 1));
    CHECK_FAIL(check_sizes(desc, &nine, 1), HURRAY_ERROR_BUFFER_TOO_SMALL, "reaches 6 bytes");
    hurray_descriptor_destroy(&desc);
    /* A node without elements reaches nothing, wherever it says it is. */
    desc = build("tensor shape=0,4\n"
                 "node 0 stored dtype=float32 shape=0,4 offset=1000000\n");
    uint64_t none = 0;
    CHECK_OK(check_sizes(desc, &none, 1));
    hurray_descriptor_destroy(&desc);
    /* Slots: the last, partial chunk. 10 codes of 3 bits, planar K = 2 per
     * chunk of 20: containers 0 and 1; with 1 code only container 0. */
    desc = build("tensor shape=1,3\n"
                 "node 0 stored dtype=uint3 shape=1,3 addressing=words packing=slots "
                 "container_bits=32 packed_axis=1 chunk_containers=2 slot_flags=1 chunk_stride=3 "
                 "order=0,1,2,3,4,5,6,7,8,9 strides=1,1\n");
    uint64_t eight = 8, seven = 7;
    CHECK_OK(check_sizes(desc, &eight, 1)); /* 3 codes: containers 0, 1 */
    CHECK_FAIL(check_sizes(desc, &seven, 1), HURRAY_ERROR_BUFFER_TOO_SMALL, "reaches 8 bytes");
    hurray_descriptor_destroy(&desc);
    desc = build("tensor shape=1,21\n"
                 "node 0 stored dtype=uint3 shape=1,21 addressing=words packing=slots "
                 "container_bits=32 packed_axis=1 chunk_containers=2 slot_flags=1 chunk_stride=3 "
                 "order=0,1,2,3,4,5,6,7,8,9 strides=1,1\n");
    /* 21 codes: chunk 0 (containers 0, 1), chunk 1 from container 3 with 1 code: 4 containers. */
    uint64_t sixteen = 16, fifteen = 15;
    CHECK_OK(check_sizes(desc, &sixteen, 1));
    CHECK_FAIL(check_sizes(desc, &fifteen, 1), HURRAY_ERROR_BUFFER_TOO_SMALL, "reaches 16 bytes");
    hurray_descriptor_destroy(&desc);
    /* The same interleaved: 21 codes, 10 per container, K = 2: chunk 1 uses container 3 only. */
    desc = build("tensor shape=1,21\n"
                 "node 0 stored dtype=uint3 shape=1,21 addressing=words packing=slots "
                 "container_bits=32 packed_axis=1 chunk_containers=2 chunk_stride=3 "
                 "order=0,1,2,3,4,5,6,7,8,9 strides=1,1\n");
    CHECK_OK(check_sizes(desc, &sixteen, 1));
    hurray_descriptor_destroy(&desc);
    /* Dense: the last code straddles into a second container. */
    desc = build("tensor shape=3\n"
                 "node 0 stored dtype=uint3 shape=3 addressing=words packing=dense "
                 "container_bits=8\n");
    uint64_t two = 2, one = 1;
    CHECK_OK(check_sizes(desc, &two, 1));
    CHECK_FAIL(check_sizes(desc, &one, 1), HURRAY_ERROR_BUFFER_TOO_SMALL, "reaches 2 bytes");
    hurray_descriptor_destroy(&desc);
}

/* ---- decode refusals -------------------------------------------------- */

/* The bytes of `text`, then one byte changed: decode must refuse so. */
static void expect_patched(const char *text, uint64_t at, uint8_t value, HurrayStatus status,
                           const char *words)
{
    HurrayDescriptor *desc = build(text);
    static uint8_t bytes[MAX_ENCODED];
    uint64_t len = encode(desc, bytes);
    hurray_descriptor_destroy(&desc);
    CHECK(at < len);
    bytes[at] = value;
    CHECK_FAIL(decode_exact(bytes, len, &desc), status, words);
    CHECK(desc == NULL);
}

static void test_decode_refusals(void)
{
    /* 32 header + 8 shape; node 0 stored (48 + 16 + 8 for 2 slots) at 40. */
    const char *stored = "tensor shape=4\n"
                         "node 0 stored dtype=uint4 shape=4 addressing=words packing=slots "
                         "container_bits=8 chunk_containers=1 chunk_stride=1 order=1,0\n";
    expect_patched(stored, 4, 3, HURRAY_ERROR_UNSUPPORTED,
                   "encoding version 3 is unsupported (this build reads 1 and 2)");
    expect_patched(stored, 9, 0, HURRAY_ERROR_INVALID_DESCRIPTOR, "node count 0");
    expect_patched(stored, 9, 17, HURRAY_ERROR_INVALID_DESCRIPTOR, "node count 17");
    expect_patched(stored, 11, 1, HURRAY_ERROR_INVALID_DESCRIPTOR, "reserved header byte 11");
    expect_patched(stored, 31, 1, HURRAY_ERROR_INVALID_DESCRIPTOR, "reserved header byte 31");
    expect_patched(stored, 8, 65, HURRAY_ERROR_INVALID_DESCRIPTOR, "rank 65 exceeds 64");
    expect_patched(stored, 40, 7, HURRAY_ERROR_UNSUPPORTED, "node 0: kind 7 is unknown");
    expect_patched(stored, 40, 0, HURRAY_ERROR_UNSUPPORTED, "node 0: kind 0 is unknown");
    expect_patched(stored, 41, 2, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (stored): length field says 72 bytes, a stored node of rank 2 takes 88");
    expect_patched(stored, 42, 80, HURRAY_ERROR_INVALID_DESCRIPTOR, "length field says 80");
    expect_patched(stored, 40 + 15, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (stored): reserved byte 15 is not zero");
    expect_patched(stored, 40 + 48 + 16 + 2, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (stored): reserved byte 66 is not zero");
    expect_patched(stored, 40 + 13, 65, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "slot count 65 is above 64");
    expect_patched(stored, 40 + 13, 9, HURRAY_ERROR_INVALID_DESCRIPTOR, "length field says 72");
    expect_patched(stored, 40 + 4, 200, HURRAY_ERROR_UNSUPPORTED,
                   "node 0 (stored): dtype 200 is unknown");
    expect_patched(stored, 40 + 5, 2, HURRAY_ERROR_UNSUPPORTED, "byte order 2 is unknown");
    expect_patched(stored, 40 + 6, 2, HURRAY_ERROR_UNSUPPORTED, "addressing 2 is unknown");
    expect_patched(stored, 40 + 7, 6, HURRAY_ERROR_UNSUPPORTED, "packing 6 is unknown");
    expect_patched(stored, 40 + 8, 2, HURRAY_ERROR_UNSUPPORTED, "layout 2 is unknown");
    expect_patched(stored, 40 + 9, 2, HURRAY_ERROR_UNSUPPORTED, "value rule 2 is unknown");
    expect_patched(stored, 40 + 10, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "codebook refers to node 1, past the last node (0)");
    expect_patched(stored, 10, 2, HURRAY_ERROR_INVALID_DESCRIPTOR, "result dtype int8 is not");
    expect_patched(stored, 10, 201, HURRAY_ERROR_UNSUPPORTED, "result dtype 201 is unknown");
    expect_patched(stored, 6, 111, HURRAY_ERROR_INVALID_DESCRIPTOR, "total length");
    /* 32 + 8; node 0 step (16 + 16) at 40; node 1 stored (48 + 16) at 72; node 2 constant at 136.
     */
    const char *step = "tensor shape=4\n"
                       "node 0 step form=mul arithmetic=float32 shape=4 x=1 scale=2\n"
                       "node 1 stored dtype=int8 shape=4\n"
                       "node 2 constant dtype=float32 value=0x3f800000\n";
    expect_patched(step, 40 + 4, 6, HURRAY_ERROR_UNSUPPORTED, "node 0 (step): form 6 is unknown");
    expect_patched(step, 40 + 4, 0, HURRAY_ERROR_UNSUPPORTED, "form 0 is unknown");
    expect_patched(step, 40 + 5, 250, HURRAY_ERROR_UNSUPPORTED, "arithmetic dtype 250 is unknown");
    expect_patched(step, 40 + 6, 0, HURRAY_ERROR_INVALID_DESCRIPTOR, "x refers to node 0");
    expect_patched(step, 40 + 12, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (step): reserved byte 12");
    expect_patched(step, 40 + 15, 1, HURRAY_ERROR_INVALID_DESCRIPTOR, "reserved byte 15");
    expect_patched(step, 136 + 1, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 2 (constant): rank 1, but a constant has rank 0");
    expect_patched(step, 136 + 5, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 2 (constant): reserved byte 5");
    expect_patched(step, 136 + 4, 250, HURRAY_ERROR_UNSUPPORTED, "node 2 (constant): dtype 250");
    expect_patched(step, 136 + 13, 1, HURRAY_ERROR_INVALID_DESCRIPTOR, "value bytes past the 4");
    /* Trailing bytes after the last node, and nodes past the end. */
    HurrayDescriptor *desc = build(step);
    static uint8_t bytes[MAX_ENCODED + 8];
    uint64_t len = encode(desc, bytes);
    hurray_descriptor_destroy(&desc);
    memset(bytes + len, 0, 8);
    bytes[6] = (uint8_t)(len + 8);
    CHECK_FAIL(decode_exact(bytes, len + 8, &desc), HURRAY_ERROR_INVALID_DESCRIPTOR,
               "3 nodes end at byte 152, the input holds 160");
    bytes[6] = (uint8_t)len;
    bytes[9] = 4;
    CHECK_FAIL(decode_exact(bytes, len, &desc), HURRAY_ERROR_INVALID_DESCRIPTOR,
               "node 3: truncated (0 bytes left)");
    bytes[6] = (uint8_t)(len - 8);
    bytes[9] = 3;
    CHECK_FAIL(decode_exact(bytes, len - 8, &desc), HURRAY_ERROR_INVALID_DESCRIPTOR,
               "node 2 (constant): truncated (8 bytes left, its fixed part takes 16)");
    /* ggml, bits and gather reserved bytes */
    expect_patched("tensor shape=2,64\nnode 0 ggml type=q4_0 shape=2,64\n", 48 + 12, 1,
                   HURRAY_ERROR_INVALID_DESCRIPTOR, "node 0 (ggml): reserved byte 12");
    expect_patched("tensor shape=2,64\nnode 0 ggml type=q4_0 shape=2,64\n", 48 + 4, 99,
                   HURRAY_ERROR_UNSUPPORTED, "node 0 (ggml): ggml type 99 is unknown");
    const char *bits = "tensor shape=4\n"
                       "node 0 bits shape=4 inputs=1 shifts=0\n"
                       "node 1 stored dtype=uint4 shape=4\n";
    expect_patched(bits, 40 + 13, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (bits): reserved byte 13");
    expect_patched(bits, 40 + 20, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (bits): reserved byte 20");
    expect_patched(bits, 40 + 4, 0, HURRAY_ERROR_INVALID_DESCRIPTOR, "input count 0");
    expect_patched(bits, 40 + 4, 5, HURRAY_ERROR_INVALID_DESCRIPTOR, "input count 5");
    expect_patched(bits, 40 + 6, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "input 1 and its shift past the input count must be 0");
    const char *gather = "tensor shape=4\n"
                         "node 0 gather shape=4 x=1 index=2 axis=0\n"
                         "node 1 stored dtype=float32 shape=4\n"
                         "node 2 stored dtype=int32 shape=4 buffer=1\n";
    expect_patched(gather, 40 + 7, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 0 (gather): reserved byte 7");
    expect_patched(gather, 40 + 5, 1, HURRAY_ERROR_INVALID_DESCRIPTOR,
                   "node 2 (stored) is not reached");
}

/* ---- version 1 beside version 2 -------------------------------------- */

static void test_version_one_beside(void)
{
    static const uint64_t shape[2] = {2, 3};
    HurrayDescriptor *v1 = NULL;
    CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, 2, shape, &v1));
    uint32_t u, rank;
    uint64_t u64;
    const uint64_t *dims;
    CHECK_OK(hurray_descriptor_encoding_version(v1, &u));
    CHECK(u == 1);
    CHECK_OK(hurray_descriptor_node_count(v1, &u));
    CHECK(u == 0);
    CHECK_OK(hurray_descriptor_result_dtype(v1, &u));
    CHECK(u == 0);
    CHECK_FAIL(hurray_descriptor_node_kind(v1, 0, &u), HURRAY_ERROR_OUT_OF_RANGE, "0 nodes");
    CHECK_FAIL(hurray_descriptor_node_shape(v1, 0, &rank, &dims), HURRAY_ERROR_OUT_OF_RANGE,
               "node 0");
    CHECK_FAIL(hurray_descriptor_constant(v1, 0, &u, &u64), HURRAY_ERROR_OUT_OF_RANGE, "node 0");
    CHECK_FAIL(hurray_descriptor_set_result_dtype(v1, HURRAY_DTYPE_FLOAT16),
               HURRAY_ERROR_INVALID_ARGUMENT, "add its nodes first");
    CHECK_FAIL(hurray_descriptor_stored_set_codes(v1, 0, 0, 0, 0), HURRAY_ERROR_OUT_OF_RANGE,
               "node 0");
    static uint8_t bytes[MAX_ENCODED];
    uint64_t len = encode(v1, bytes);
    CHECK(len == 32 + 2 * 16 + 16 && bytes[4] == 1); /* version 1, as before */
    /* The first node makes it version 2, keeping only the shape. */
    CHECK_OK(hurray_descriptor_set_packing(v1, HURRAY_PACKING_NONE));
    CHECK_OK(hurray_descriptor_add_stored(v1, HURRAY_DTYPE_FLOAT32, 2, shape, 0, 0, &u));
    CHECK(u == 0);
    CHECK_OK(hurray_descriptor_encoding_version(v1, &u));
    CHECK(u == 2);
    const int64_t strides[2] = {3, 1};
    CHECK_FAIL(hurray_descriptor_set_strides(v1, 2, strides), HURRAY_ERROR_INVALID_ARGUMENT,
               "hurray_descriptor_set_strides: the descriptor has nodes");
    CHECK_FAIL(hurray_descriptor_set_byte_order(v1, 0), HURRAY_ERROR_INVALID_ARGUMENT, "has nodes");
    CHECK_FAIL(hurray_descriptor_set_packing(v1, 0), HURRAY_ERROR_INVALID_ARGUMENT, "has nodes");
    CHECK_FAIL(hurray_descriptor_set_quantization(v1, 0, 0, 0, 0, 0), HURRAY_ERROR_INVALID_ARGUMENT,
               "has nodes");
    CHECK_FAIL(hurray_descriptor_set_part(v1, 1, HURRAY_DTYPE_FLOAT32, 0, 0, 0),
               HURRAY_ERROR_INVALID_ARGUMENT, "has nodes");
    CHECK_FAIL(hurray_descriptor_dtype(v1, &u), HURRAY_ERROR_NOT_FOUND, "its values are node 0's");
    len = encode(v1, bytes);
    CHECK(len == 32 + 16 + 48 + 32 && bytes[4] == 2);
    hurray_descriptor_destroy(&v1);

    /* The new widths in version 1: padded, and nothing else. */
    static const uint32_t widths[] = {HURRAY_DTYPE_UINT3, HURRAY_DTYPE_UINT5, HURRAY_DTYPE_UINT6,
                                      HURRAY_DTYPE_UINT7, HURRAY_DTYPE_INT3,  HURRAY_DTYPE_INT5,
                                      HURRAY_DTYPE_INT6,  HURRAY_DTYPE_INT7};
    static const char *const names[] = {"uint3", "uint5", "uint6", "uint7",
                                        "int3",  "int5",  "int6",  "int7"};
    static const uint32_t bits[] = {3, 5, 6, 7, 3, 5, 6, 7};
    for (size_t i = 0; i < COUNT(widths); i++) {
        CHECK_OK(hurray_dtype_bits(widths[i], &u));
        CHECK(u == bits[i] && strcmp(hurray_dtype_name(widths[i]), names[i]) == 0);
        CHECK_OK(hurray_descriptor_new(widths[i], 2, shape, &v1));
        CHECK_OK(hurray_descriptor_packing(v1, &u));
        CHECK(u == HURRAY_PACKING_PADDED);
        CHECK_OK(hurray_descriptor_validate(v1));
        uint64_t six = 6;
        CHECK_OK(check_sizes(v1, &six, 1));
        CHECK_OK(hurray_descriptor_set_packing(v1, HURRAY_PACKING_LSB_FIRST));
        CHECK_FAIL(hurray_descriptor_validate(v1), HURRAY_ERROR_INVALID_DESCRIPTOR, "lsb_first");
        CHECK_FAIL(hurray_descriptor_set_packing(v1, HURRAY_PACKING_DENSE),
                   HURRAY_ERROR_UNSUPPORTED, "packing 4 is unknown");
        hurray_descriptor_destroy(&v1);
    }
    CHECK_FAIL(hurray_dtype_bits(43, &u), HURRAY_ERROR_UNSUPPORTED, "unknown");
}

/* ---- the builder ------------------------------------------------------ */

static void test_builder(void)
{
    static const uint64_t shape[1] = {4};
    HurrayDescriptor *desc = NULL;
    uint32_t n;
    uint64_t none = 0;
    CHECK_OK(hurray_descriptor_new(HURRAY_DTYPE_FLOAT32, 1, shape, &desc));
    CHECK_FAIL(hurray_descriptor_add_stored(NULL, HURRAY_DTYPE_FLOAT32, 1, shape, 0, 0, &n),
               HURRAY_ERROR_NULL_ARGUMENT, "desc is NULL");
    CHECK_FAIL(hurray_descriptor_add_stored(desc, HURRAY_DTYPE_FLOAT32, 1, shape, 0, 0, NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "out_node is NULL");
    CHECK_FAIL(hurray_descriptor_add_stored(desc, HURRAY_DTYPE_FLOAT32, 1, NULL, 0, 0, &n),
               HURRAY_ERROR_NULL_ARGUMENT, "shape is NULL");
    CHECK_FAIL(hurray_descriptor_add_stored(desc, 99, 1, shape, 0, 0, &n), HURRAY_ERROR_UNSUPPORTED,
               "dtype 99 is unknown");
    CHECK_FAIL(hurray_descriptor_add_stored(desc, HURRAY_DTYPE_FLOAT32, 65, shape, 0, 0, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "rank 65 exceeds");
    CHECK_FAIL(hurray_descriptor_add_step(desc, 0, HURRAY_DTYPE_FLOAT32, 1, shape, 1, 2, 0, &n),
               HURRAY_ERROR_UNSUPPORTED, "form 0 is unknown");
    CHECK_FAIL(hurray_descriptor_add_step(desc, 1, 99, 1, shape, 1, 2, 0, &n),
               HURRAY_ERROR_UNSUPPORTED, "arithmetic dtype 99");
    CHECK_FAIL(hurray_descriptor_add_step(desc, 1, HURRAY_DTYPE_FLOAT32, 1, shape, 16, 2, 0, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "x 16 is not a node index");
    CHECK_FAIL(hurray_descriptor_add_ggml(desc, 99, 1, shape, 0, 0, &n), HURRAY_ERROR_UNSUPPORTED,
               "ggml type 99");
    const uint32_t ins[4] = {1, 2, 3, 4}, shifts[4] = {0, 0, 0, 256};
    CHECK_FAIL(hurray_descriptor_add_bits(desc, 1, shape, 5, ins, shifts, 0, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "input_count 5");
    CHECK_FAIL(hurray_descriptor_add_bits(desc, 1, shape, 4, ins, shifts, 0, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "shift 256 does not fit");
    CHECK_FAIL(hurray_descriptor_add_bits(desc, 1, shape, 1, NULL, shifts, 0, &n),
               HURRAY_ERROR_NULL_ARGUMENT, "inputs is NULL");
    CHECK_FAIL(hurray_descriptor_add_gather(desc, 1, shape, 1, 2, 300, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "axis 300");
    CHECK_FAIL(hurray_descriptor_add_constant(desc, 0, 0, &n), HURRAY_ERROR_UNSUPPORTED, "dtype 0");
    /* None of those added a node: the descriptor is still version 1. */
    CHECK_OK(hurray_descriptor_node_count(desc, &n));
    CHECK(n == 0);
    CHECK_OK(hurray_descriptor_add_stored(desc, HURRAY_DTYPE_UINT4, 1, shape, 0, 0, &n));
    CHECK(n == 0);
    CHECK_FAIL(hurray_descriptor_stored_set_strides(desc, 1, 1, (const int64_t[]){1}),
               HURRAY_ERROR_OUT_OF_RANGE, "node 1 is past the last (1 nodes)");
    CHECK_FAIL(hurray_descriptor_stored_set_strides(desc, 0, 2, (const int64_t[]){1, 1}),
               HURRAY_ERROR_INVALID_ARGUMENT, "2 strides given for node 0 of rank 1");
    CHECK_FAIL(hurray_descriptor_step_set_groups(desc, 0, 1, (const uint64_t[]){1}, 0, 0, 0),
               HURRAY_ERROR_INVALID_ARGUMENT, "node 0 is a stored node, not step");
    CHECK_FAIL(hurray_descriptor_stored_set_byte_order(desc, 0, 2), HURRAY_ERROR_UNSUPPORTED,
               "byte order 2");
    CHECK_FAIL(hurray_descriptor_stored_set_layout(desc, 0, 2), HURRAY_ERROR_UNSUPPORTED,
               "layout 2");
    CHECK_FAIL(hurray_descriptor_stored_set_elements(desc, 0, 6), HURRAY_ERROR_UNSUPPORTED,
               "packing 6");
    CHECK_FAIL(hurray_descriptor_stored_set_codes(desc, 0, 0, 0, 2), HURRAY_ERROR_UNSUPPORTED,
               "value rule 2");
    CHECK_FAIL(hurray_descriptor_stored_set_codes(desc, 0, 0, 16, 0), HURRAY_ERROR_INVALID_ARGUMENT,
               "codebook 16");
    uint8_t order[65] = {0};
    CHECK_FAIL(hurray_descriptor_stored_set_words(desc, 0, 8, 0, HURRAY_PACKING_SLOTS, 1, 0, 1, 65,
                                                  order),
               HURRAY_ERROR_INVALID_ARGUMENT, "slot_count 65");
    CHECK_FAIL(hurray_descriptor_stored_set_words(desc, 0, 8, 0, HURRAY_PACKING_SLOTS, 1, 0, 1, 2,
                                                  NULL),
               HURRAY_ERROR_NULL_ARGUMENT, "order is NULL");
    CHECK_FAIL(hurray_descriptor_stored_set_words(desc, 0, 256, 0, HURRAY_PACKING_DENSE, 0, 0, 0, 0,
                                                  NULL),
               HURRAY_ERROR_INVALID_ARGUMENT, "container_bits 256");
    CHECK_FAIL(hurray_descriptor_set_result_dtype(desc, 99), HURRAY_ERROR_UNSUPPORTED, "dtype 99");
    /* A checked descriptor forgets its verdict when a node changes. */
    CHECK_OK(check_sizes(desc, (const uint64_t[]){2}, 1));
    CHECK_OK(hurray_descriptor_stored_set_elements(desc, 0, HURRAY_PACKING_PADDED));
    CHECK_FAIL(check_sizes(desc, (const uint64_t[]){2}, 1), HURRAY_ERROR_BUFFER_TOO_SMALL,
               "node 0");
    CHECK_OK(hurray_descriptor_stored_set_elements(desc, 0, HURRAY_PACKING_NONE));
    CHECK_FAIL(hurray_descriptor_validate(desc), HURRAY_ERROR_INVALID_DESCRIPTOR, "packing none");
    CHECK_OK(hurray_descriptor_stored_set_elements(desc, 0, HURRAY_PACKING_LSB_FIRST));
    CHECK_OK(hurray_descriptor_validate(desc));
    CHECK_OK(hurray_descriptor_set_result_dtype(desc, HURRAY_DTYPE_INT8));
    CHECK_FAIL(hurray_descriptor_validate(desc), HURRAY_ERROR_INVALID_DESCRIPTOR, "result dtype");
    CHECK_OK(hurray_descriptor_set_result_dtype(desc, 0));
    /* At most 16 nodes: a chain of steps, each a constant's product. */
    for (uint32_t i = 1; i < HURRAY_MAX_NODES; i++) {
        CHECK_OK(hurray_descriptor_add_constant(desc, HURRAY_DTYPE_FLOAT32, 0, &n));
        CHECK(n == i);
    }
    CHECK_FAIL(hurray_descriptor_add_constant(desc, HURRAY_DTYPE_FLOAT32, 0, &n),
               HURRAY_ERROR_INVALID_ARGUMENT, "HURRAY_MAX_NODES (16) nodes already");
    CHECK_FAIL(hurray_descriptor_validate(desc), HURRAY_ERROR_INVALID_DESCRIPTOR,
               "node 1 (constant) is not reached from node 0");
    (void)none;
    hurray_descriptor_destroy(&desc);

    /* Accessors: NULL outputs, kinds, ranges. */
    const Example *ex = example("gptq_p_5bit");
    desc = build(ex->text);
    uint32_t a, b, c, d, e;
    uint64_t x, y;
    int32_t i32;
    const uint64_t *blocks;
    CHECK_FAIL(hurray_descriptor_step(desc, 1, &a, &b, &c, &d, &e), HURRAY_ERROR_INVALID_ARGUMENT,
               "node 1 is a bits node, not step");
    CHECK_FAIL(hurray_descriptor_step(desc, 0, NULL, &b, &c, &d, &e), HURRAY_ERROR_NULL_ARGUMENT,
               "out_form is NULL");
    CHECK_FAIL(hurray_descriptor_step_groups(NULL, 0, &blocks, &a, &b, &c),
               HURRAY_ERROR_NULL_ARGUMENT, "desc is NULL");
    CHECK_FAIL(hurray_descriptor_ggml_node(desc, 2, &a, &x, &y), HURRAY_ERROR_INVALID_ARGUMENT,
               "not ggml");
    CHECK_FAIL(hurray_descriptor_gather(desc, 2, &a, &b, &c), HURRAY_ERROR_INVALID_ARGUMENT,
               "not gather");
    CHECK_FAIL(hurray_descriptor_stored_codes(desc, 8, &i32, &a, &b), HURRAY_ERROR_OUT_OF_RANGE,
               "node 8 is past the last (8 nodes)");
    uint32_t inputs[4], shifts_out[4];
    CHECK_OK(hurray_descriptor_bits(desc, 1, &a, inputs, shifts_out, &i32));
    CHECK(a == 2 && inputs[0] == 2 && inputs[1] == 3 && inputs[2] == 0 && shifts_out[1] == 4 &&
          shifts_out[3] == 0 && i32 == 0);
    CHECK_OK(hurray_descriptor_node_count(desc, &a));
    CHECK(a == 8);
    CHECK_OK(hurray_descriptor_result_dtype(desc, &a));
    CHECK(a == HURRAY_DTYPE_FLOAT16);
    hurray_descriptor_destroy(&desc);
    CHECK(desc == NULL);
    hurray_descriptor_destroy(&desc); /* a nulled pointer: a no-op */
    hurray_descriptor_destroy(NULL);
}

int main(void)
{
    const char *scale = getenv("HURRAY_TEST_SCALE");
    if (scale != NULL && atoi(scale) > 1) {
        sweep_bytes = 0;
    }
    test_examples();
    test_refusals();
    test_group_index_scan();
    test_gather_scan();
    test_reach_edges();
    test_decode_refusals();
    test_version_one_beside();
    test_builder();
    checks_report("test_descriptor_graph");
    return 0;
}
