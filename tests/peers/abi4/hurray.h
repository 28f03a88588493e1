/*
 * hurray.h -- the C ABI of hurray-ffi, version 4.
 *
 * Every handle is opaque: its struct is defined in one .c file and its
 * layout is an implementation detail. Functions are named
 * hurray_<type>_<verb>, return a HurrayStatus, and take their out-parameters
 * last. Destroy functions take X **, free, and null the caller's pointer;
 * destroying NULL, or a pointer to NULL, does nothing.
 *
 * Handles are not internally locked: one handle is used by one thread at a
 * time; distinct handles may be used from any threads. Release callbacks run
 * on whichever thread destroys the handle that owns them.
 *
 * The declarations between HURRAY_CDEF_BEGIN and HURRAY_CDEF_END are also
 * read by the Python package's cffi build; keep them free of preprocessor
 * logic other than integer #defines.
 */
#ifndef HURRAY_H
#define HURRAY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* HURRAY_CDEF_BEGIN */

#define HURRAY_C_ABI_VERSION 4

/* The first 8 bytes of every HurrayTensorContext, in every ABI version, are
 * a uint32_t magic followed by a uint32_t ABI version (ADR-034 section 4).
 * Every function that takes a context checks them before reading anything
 * else; hurray_tensor_context_abi_version reads nothing else. */
#define HURRAY_TENSOR_CONTEXT_MAGIC 0x48525443

/* Limits of a descriptor (layer 4). */
#define HURRAY_MAX_RANK 64
#define HURRAY_MAX_PARTS 4
/* The largest encoding of descriptor encoding version 1, in bytes: a
 * 32-byte header, 16 per dimension and 16 per part, so
 * 32 + 16 * HURRAY_MAX_RANK + 16 * HURRAY_MAX_PARTS. A buffer this large
 * holds any descriptor hurray_descriptor_encode writes. */
#define HURRAY_MAX_DESCRIPTOR_LEN 1120

typedef enum HurrayStatus {
    HURRAY_OK = 0,
    HURRAY_ERROR_NULL_ARGUMENT = 1,      /* a required pointer was NULL */
    HURRAY_ERROR_INVALID_ARGUMENT = 2,   /* a value outside its documented domain */
    HURRAY_ERROR_OUT_OF_RANGE = 3,       /* an index past the end */
    HURRAY_ERROR_OVERFLOW = 4,           /* size arithmetic does not fit 64 bits */
    HURRAY_ERROR_NO_MEMORY = 5,          /* an allocation failed */
    HURRAY_ERROR_NOT_A_CONTEXT = 6,      /* the pointer lacks the context magic */
    HURRAY_ERROR_ABI_VERSION = 7,        /* an ABI version this build cannot serve */
    HURRAY_ERROR_INVALID_DESCRIPTOR = 8, /* descriptor bytes or fields are malformed */
    HURRAY_ERROR_UNSUPPORTED = 9,        /* a well-formed code this build does not know */
    HURRAY_ERROR_BUFFER_TOO_SMALL = 10,  /* a layout reaches past its buffer */
    HURRAY_ERROR_NOT_FOUND = 11,         /* a role, name or key that is not there */
    HURRAY_ERROR_IO = 12,                /* the operating system refused a read, write or open */
    HURRAY_ERROR_CORRUPT = 13,           /* a file or frame is malformed or truncated (layer 5) */
    HURRAY_ERROR_CHECKSUM = 14           /* stored bytes do not match their checksum (layer 5) */
} HurrayStatus;

/* Layer 1: element types. Codes are stable and never reused. */
typedef enum HurrayDtype {
    HURRAY_DTYPE_BOOL = 1,
    HURRAY_DTYPE_INT8 = 2,
    HURRAY_DTYPE_INT16 = 3,
    HURRAY_DTYPE_INT32 = 4,
    HURRAY_DTYPE_INT64 = 5,
    HURRAY_DTYPE_UINT8 = 6,
    HURRAY_DTYPE_UINT16 = 7,
    HURRAY_DTYPE_UINT32 = 8,
    HURRAY_DTYPE_UINT64 = 9,
    HURRAY_DTYPE_INT1 = 10,
    HURRAY_DTYPE_INT2 = 11,
    HURRAY_DTYPE_INT4 = 12,
    HURRAY_DTYPE_UINT1 = 13,
    HURRAY_DTYPE_UINT2 = 14,
    HURRAY_DTYPE_UINT4 = 15,
    HURRAY_DTYPE_FLOAT16 = 16,
    HURRAY_DTYPE_FLOAT32 = 17,
    HURRAY_DTYPE_FLOAT64 = 18,
    HURRAY_DTYPE_BFLOAT16 = 19,
    HURRAY_DTYPE_COMPLEX32 = 20, /* two float16 */
    HURRAY_DTYPE_COMPLEX64 = 21,
    HURRAY_DTYPE_COMPLEX128 = 22,
    HURRAY_DTYPE_FLOAT8_E3M4 = 23,
    HURRAY_DTYPE_FLOAT8_E4M3 = 24,
    HURRAY_DTYPE_FLOAT8_E4M3B11FNUZ = 25,
    HURRAY_DTYPE_FLOAT8_E4M3FN = 26,
    HURRAY_DTYPE_FLOAT8_E4M3FNUZ = 27,
    HURRAY_DTYPE_FLOAT8_E5M2 = 28,
    HURRAY_DTYPE_FLOAT8_E5M2FNUZ = 29,
    HURRAY_DTYPE_FLOAT8_E8M0FNU = 30,
    HURRAY_DTYPE_FLOAT6_E2M3FN = 31,
    HURRAY_DTYPE_FLOAT6_E3M2FN = 32,
    HURRAY_DTYPE_FLOAT4_E2M1FN = 33,
    HURRAY_DTYPE_BCOMPLEX32 = 34 /* two bfloat16 */
} HurrayDtype;

/* Layer 2: byte order of multi-byte elements. */
typedef enum HurrayByteOrder {
    HURRAY_BYTE_ORDER_LITTLE = 0,
    HURRAY_BYTE_ORDER_BIG = 1
} HurrayByteOrder;

/* Layer 2: how elements narrower than a byte are stored. Types of 8 bits or
 * more use HURRAY_PACKING_NONE and no other. */
typedef enum HurrayPacking {
    HURRAY_PACKING_NONE = 0,
    HURRAY_PACKING_PADDED = 1,    /* one element per byte, value in the low bits */
    HURRAY_PACKING_LSB_FIRST = 2, /* element 0 in the lowest bits of byte 0 */
    HURRAY_PACKING_GGML_SPLIT = 3 /* 4-bit only: in each run of 32, byte j holds
                                     element j (low nibble) and j+16 (high) */
} HurrayPacking;

/* Layer 3: how stored values map back to real numbers. */
typedef enum HurrayScheme {
    HURRAY_SCHEME_NONE = 0,
    HURRAY_SCHEME_AFFINE = 1,       /* x = (q - zero_point) * scale */
    HURRAY_SCHEME_MICROSCALING = 2, /* x = v * block_scale [* global_scale] */
    HURRAY_SCHEME_GGML = 3          /* values hold interleaved GGML block structs */
} HurrayScheme;

typedef enum HurrayGranularity {
    HURRAY_GRANULARITY_NONE = 0,
    HURRAY_GRANULARITY_PER_TENSOR = 1,
    HURRAY_GRANULARITY_PER_AXIS = 2,
    HURRAY_GRANULARITY_PER_BLOCK = 3 /* block_size elements along axis */
} HurrayGranularity;

/* Layer 4: what a buffer holds for the tensor. */
typedef enum HurrayRole {
    HURRAY_ROLE_VALUES = 1,
    HURRAY_ROLE_SCALE = 2,
    HURRAY_ROLE_ZERO_POINT = 3,
    HURRAY_ROLE_GLOBAL_SCALE = 4
} HurrayRole;

/* How a parameter part (scales, zero points) is laid out in its buffer. */
typedef enum HurrayPartLayout {
    HURRAY_PART_LAYOUT_ROW_MAJOR = 0,
    HURRAY_PART_LAYOUT_SWIZZLED_128X4 = 1 /* cuBLAS/cuDNN block-scale tiles */
} HurrayPartLayout;

/* GGML block formats, numbered as GGUF numbers them. */
typedef enum HurrayGgmlType {
    HURRAY_GGML_Q4_0 = 2,
    HURRAY_GGML_Q4_1 = 3,
    HURRAY_GGML_Q5_0 = 6,
    HURRAY_GGML_Q5_1 = 7,
    HURRAY_GGML_Q8_0 = 8,
    HURRAY_GGML_Q4_K = 12,
    HURRAY_GGML_Q6_K = 14,
    HURRAY_GGML_MXFP4 = 39
} HurrayGgmlType;

typedef struct HurrayBuffer HurrayBuffer;
typedef struct HurrayBufferList HurrayBufferList;
typedef struct HurrayDescriptor HurrayDescriptor;
typedef struct HurrayTensorContext HurrayTensorContext;

/* Every function below carries two lines that docs/impl/c-ffi.md repeats
 * and tests/test_c_ffi_doc.py holds the two against each other:
 *   Statuses:  every non-OK status it can return ("none" when it returns
 *              no status);
 *   Ownership: what the caller keeps, lends or hands over. */

/* ---- library ---------------------------------------------------------- */

/* The ABI version of the linked library, to compare with HURRAY_C_ABI_VERSION.
 * Statuses: none.
 * Ownership: nothing is allocated. */
uint32_t hurray_c_abi_version(void);
/* "HURRAY_OK", "HURRAY_ERROR_...", or "HURRAY_ERROR_UNKNOWN"; never NULL.
 * Statuses: none.
 * Ownership: a static string; never free it. */
const char *hurray_status_name(HurrayStatus status);
/* The calling thread's message for its last failure; "" before the first.
 * Statuses: none.
 * Ownership: the library's, overwritten by the thread's next failure. */
const char *hurray_last_error_message(void);

/* ---- HurrayBuffer: one span of bytes and who frees it ------------------ */

/* Wraps memory the caller owns. On success the buffer takes ptr and release:
 * release(release_context) runs exactly once, when the buffer is destroyed
 * (release may be NULL for memory that needs no freeing). On failure
 * release is not called and ptr is still the caller's.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: on success the buffer owns ptr and release; the caller owns *out. */
HurrayStatus hurray_buffer_from_ptr(void *ptr, uint64_t len, void (*release)(void *release_context),
                                    void *release_context, HurrayBuffer **out);
/* len zeroed bytes aligned to alignment (a power of two, 1 to 4096).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the buffer owns its bytes; the caller owns *out. */
HurrayStatus hurray_buffer_new(uint64_t len, uint64_t alignment, HurrayBuffer **out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: *out_data is borrowed for the buffer's life. */
HurrayStatus hurray_buffer_data(const HurrayBuffer *buf, void **out_data, uint64_t *out_len);
/* Statuses: none.
 * Ownership: frees the buffer, runs its release once, and nulls *buf. */
void hurray_buffer_destroy(HurrayBuffer **buf);

/* ---- HurrayBufferList: the buffers of one tensor ----------------------- */

/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out. */
HurrayStatus hurray_buffer_list_new(HurrayBufferList **out);
/* Takes the buffer: on success the list owns it and *buf is set to NULL. On
 * failure *buf is untouched and the buffer is still the caller's. A buffer
 * already in the list is refused (HURRAY_ERROR_INVALID_ARGUMENT).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: on success the list owns the buffer and *buf is NULL. */
HurrayStatus hurray_buffer_list_push(HurrayBufferList *list, HurrayBuffer **buf);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_buffer_list_len(const HurrayBufferList *list, uint64_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: *out is borrowed for the list's life; never destroy it. */
HurrayStatus hurray_buffer_list_get(const HurrayBufferList *list, uint64_t index,
                                    const HurrayBuffer **out);
/* Statuses: none.
 * Ownership: destroys every buffer in push order, then the list; nulls *list. */
void hurray_buffer_list_destroy(HurrayBufferList **list);

/* ---- HurrayDescriptor: layers 1-3, encoded and decoded (layer 4) ------- */

/* Every rule is checked; the bytes are not retained.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out; the bytes stay the caller's. */
HurrayStatus hurray_descriptor_decode(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out);
/* The list holds exactly the descriptor's buffers, and every byte each part
 * can reach lies inside its buffer.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_BUFFER_TOO_SMALL.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_check_buffers(const HurrayDescriptor *desc,
                                             const HurrayBufferList *list);
/* Statuses: none.
 * Ownership: frees the descriptor, however it was made, and nulls *desc. */
void hurray_descriptor_destroy(HurrayDescriptor **desc);

/* Builder: a new descriptor is a row-major contiguous tensor, little-endian,
 * values in buffer 0 at byte offset 0, no quantization.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out; shape is copied. */
HurrayStatus hurray_descriptor_new(uint32_t dtype, uint32_t rank, const uint64_t *shape,
                                   HurrayDescriptor **out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: strides is copied. */
HurrayStatus hurray_descriptor_set_strides(HurrayDescriptor *desc, uint32_t rank,
                                           const int64_t *strides);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_byte_order(HurrayDescriptor *desc, uint32_t byte_order);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_packing(HurrayDescriptor *desc, uint32_t packing);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_quantization(HurrayDescriptor *desc, uint32_t scheme,
                                                uint32_t granularity, uint32_t axis,
                                                uint64_t block_size, uint32_t ggml_type);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_part(HurrayDescriptor *desc, uint32_t role, uint32_t dtype,
                                        uint64_t buffer_index, uint64_t byte_offset,
                                        uint32_t layout);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_validate(const HurrayDescriptor *desc);
/* With out NULL and capacity 0, a size query; with too small a capacity,
 * *out_len gets the size and HURRAY_ERROR_OUT_OF_RANGE is returned.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: out is the caller's; nothing is allocated. */
HurrayStatus hurray_descriptor_encode(const HurrayDescriptor *desc, uint8_t *out, uint64_t capacity,
                                      uint64_t *out_len);

/* Accessors. Borrowed arrays live as long as the descriptor. */
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_FOUND.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_dtype(const HurrayDescriptor *desc, uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_rank(const HurrayDescriptor *desc, uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: *out is borrowed for the descriptor's life. */
HurrayStatus hurray_descriptor_shape(const HurrayDescriptor *desc, const uint64_t **out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: *out is borrowed for the descriptor's life. */
HurrayStatus hurray_descriptor_strides(const HurrayDescriptor *desc, const int64_t **out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_byte_order(const HurrayDescriptor *desc, uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_packing(const HurrayDescriptor *desc, uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_quantization(const HurrayDescriptor *desc, uint32_t *out_scheme,
                                            uint32_t *out_granularity, uint32_t *out_axis,
                                            uint64_t *out_block_size, uint32_t *out_ggml_type);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_NOT_FOUND.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_part(const HurrayDescriptor *desc, uint32_t role,
                                    uint32_t *out_dtype, uint64_t *out_buffer_index,
                                    uint64_t *out_byte_offset, uint32_t *out_layout);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_buffer_count(const HurrayDescriptor *desc, uint64_t *out);

/* Element type facts. */
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_dtype_bits(uint32_t dtype, uint32_t *out);
/* The lower-case name, or NULL for an unknown code.
 * Statuses: none.
 * Ownership: a static string; never free it. */
const char *hurray_dtype_name(uint32_t dtype);

/* GGML block facts, by HurrayGgmlType code: elements and bytes of one block.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_ggml_block(uint32_t ggml_type, uint64_t *out_elements, uint64_t *out_bytes);
/* The lower-case GGUF spelling ("q4_0"), or NULL for an unknown code.
 * Statuses: none.
 * Ownership: a static string; never free it. */
const char *hurray_ggml_name(uint32_t ggml_type);

/* Layout facts. Row-major contiguous strides, in elements, for shape[0 ..
 * rank-1] into out_strides[0 .. rank-1]; a zero dimension steps as one.
 * Statuses: HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OVERFLOW.
 * Ownership: out_strides is the caller's array; nothing is allocated. */
HurrayStatus hurray_layout_row_major_strides(uint32_t rank, const uint64_t *shape,
                                             int64_t *out_strides);
/* How many scales a HURRAY_PART_LAYOUT_SWIZZLED_128X4 part holds for rows x
 * cols scales: the matrix padded to whole 128 x 4 tiles.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OVERFLOW.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_layout_swizzled_128x4_count(uint64_t rows, uint64_t cols, uint64_t *out);

/* ---- HurrayTensorContext: what a capsule carries beside its buffers ---- */

/* Copies the descriptor bytes and takes owner: on success
 * owner_release(owner) runs exactly once, when the context is destroyed
 * (owner_release may be NULL). On failure owner_release is not called and
 * owner is still the caller's.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_ABI_VERSION,
 * HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: on success the context owns owner and a copy of the bytes; the caller owns *out. */
HurrayStatus hurray_tensor_context_new(uint32_t abi_version, const uint8_t *descriptor_bytes,
                                       uint64_t descriptor_len, void *owner,
                                       void (*owner_release)(void *owner),
                                       struct HurrayTensorContext **out);
/* Reads the frozen header only; any context of any ABI version answers.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_A_CONTEXT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_tensor_context_abi_version(const struct HurrayTensorContext *ctx,
                                               uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_A_CONTEXT, HURRAY_ERROR_ABI_VERSION.
 * Ownership: *out_bytes is borrowed for the context's life. */
HurrayStatus hurray_tensor_context_descriptor(const struct HurrayTensorContext *ctx,
                                              const uint8_t **out_bytes, uint64_t *out_len);
/* A pointer that is not a context this build can free (no magic, or an ABI
 * version it does not serve) is left alone: nothing is freed or released,
 * *ctx keeps its value, and the thread's message says why.
 * Statuses: none.
 * Ownership: frees the context, runs owner_release once, and nulls *ctx. */
void hurray_tensor_context_destroy(struct HurrayTensorContext **ctx);

/* HURRAY_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* HURRAY_H */
