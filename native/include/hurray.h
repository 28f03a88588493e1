/*
 * hurray.h -- the C ABI of hurray-ffi, version 5.
 *
 * Every handle is opaque: its struct is defined in one .c file and its
 * layout is an implementation detail. Functions are named
 * hurray_<type>_<verb>, return a HurrayStatus, and take their out-parameters
 * last. Destroy functions take X **, free, and null the caller's pointer;
 * destroying NULL, or a pointer to NULL, does nothing.
 *
 * Handles are not internally locked: one handle is used by one thread at a
 * time; distinct handles may be used from any threads. The exception is the
 * dequantizer, which only reads: several threads may call
 * hurray_dequantize(_rows) on one descriptor and list at once. Release
 * callbacks run on whichever thread destroys the handle that owns them.
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

#define HURRAY_C_ABI_VERSION 5

/* The oldest ABI version whose contexts this library still makes and reads
 * (4: the first with a HurrayTensorContext). A producer makes a context of
 * this version for a consumer that knows nothing newer (ADR-059). */
#define HURRAY_C_ABI_MIN_VERSION 4

/* hurray_buffer_flags: the buffer's memory may be read and not written
 * (ABI 5, ADR-059). A buffer without it may be written by whoever owns the
 * pair it came in. */
#define HURRAY_BUFFER_READONLY 1

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
/* Descriptor encoding version 2 (a graph of nodes, ADR-054): at most this
 * many nodes, and at most this many bytes: a 32-byte header, 8 per
 * dimension of the tensor, and per node at most a 48-byte stored node of
 * rank HURRAY_MAX_RANK (16 per dimension) with a 64-slot order, so
 * 32 + 8 * HURRAY_MAX_RANK + HURRAY_MAX_NODES * (48 + 16 * HURRAY_MAX_RANK + 64).
 * HURRAY_MAX_DESCRIPTOR_LEN keeps its meaning (the longest version 1); a
 * buffer of this size holds any descriptor of either version. */
#define HURRAY_MAX_NODES 16
#define HURRAY_MAX_DESCRIPTOR_V2_LEN 18720

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
    HURRAY_DTYPE_BCOMPLEX32 = 34, /* two bfloat16 */
    /* torch's uint1..7 / int1..7 widths that were missing (ADR-054): in a
     * version-1 descriptor padded only; in version 2 the codes of a stored
     * node, in any addressing they fit. */
    HURRAY_DTYPE_UINT3 = 35,
    HURRAY_DTYPE_UINT5 = 36,
    HURRAY_DTYPE_UINT6 = 37,
    HURRAY_DTYPE_UINT7 = 38,
    HURRAY_DTYPE_INT3 = 39,
    HURRAY_DTYPE_INT5 = 40,
    HURRAY_DTYPE_INT6 = 41,
    HURRAY_DTYPE_INT7 = 42
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
    HURRAY_PACKING_PADDED = 1,     /* one element per byte, value in the low bits */
    HURRAY_PACKING_LSB_FIRST = 2,  /* element 0 in the lowest bits of byte 0 */
    HURRAY_PACKING_GGML_SPLIT = 3, /* 4-bit only: in each run of 32, byte j holds
                                      element j (low nibble) and j+16 (high) */
    /* Version 2 only, for a stored node's WORDS addressing (ADR-054): */
    HURRAY_PACKING_DENSE = 4, /* a little-endian bit stream along the packed axis */
    HURRAY_PACKING_SLOTS = 5  /* floor(W / b) slots per container, in a stated order */
} HurrayPacking;

/* Layer 3: how stored values map back to real numbers. */
typedef enum HurrayScheme {
    HURRAY_SCHEME_NONE = 0,
    HURRAY_SCHEME_AFFINE = 1,       /* x = (q - zero_point) * scale */
    HURRAY_SCHEME_MICROSCALING = 2, /* x = v * block_scale [* global_scale] */
    HURRAY_SCHEME_GGML = 3,         /* values hold interleaved GGML block structs */
    HURRAY_SCHEME_GRAPH = 4         /* version 2: the value of node 0 (never set directly) */
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

/* GGML block formats, numbered as GGUF numbers them. Every code is a value
 * of the version-1 descriptor's "GGML type" field; a library that predates
 * a code refuses a descriptor holding it (HURRAY_ERROR_UNSUPPORTED). */
typedef enum HurrayGgmlType {
    HURRAY_GGML_Q4_0 = 2,
    HURRAY_GGML_Q4_1 = 3,
    HURRAY_GGML_Q5_0 = 6,
    HURRAY_GGML_Q5_1 = 7,
    HURRAY_GGML_Q8_0 = 8,
    HURRAY_GGML_Q2_K = 10,
    HURRAY_GGML_Q3_K = 11,
    HURRAY_GGML_Q4_K = 12,
    HURRAY_GGML_Q5_K = 13,
    HURRAY_GGML_Q6_K = 14,
    HURRAY_GGML_IQ2_XXS = 16,
    HURRAY_GGML_IQ2_XS = 17,
    HURRAY_GGML_IQ3_XXS = 18,
    HURRAY_GGML_IQ1_S = 19,
    HURRAY_GGML_IQ4_NL = 20,
    HURRAY_GGML_IQ3_S = 21,
    HURRAY_GGML_IQ2_S = 22,
    HURRAY_GGML_IQ4_XS = 23,
    HURRAY_GGML_IQ1_M = 29,
    HURRAY_GGML_TQ1_0 = 34,
    HURRAY_GGML_TQ2_0 = 35,
    HURRAY_GGML_MXFP4 = 39,
    HURRAY_GGML_NVFP4 = 40,
    HURRAY_GGML_Q1_0 = 41,
    HURRAY_GGML_Q2_0 = 42
} HurrayGgmlType;

/* ---- version 2: the vocabulary of a graph of nodes (ADR-054) --------- */

/* What a node is. Node 0 is the tensor; every reference points to a later
 * node. */
typedef enum HurrayNodeKind {
    HURRAY_NODE_STORED = 1,   /* elements in a buffer */
    HURRAY_NODE_CONSTANT = 2, /* one value stated in the descriptor */
    HURRAY_NODE_STEP = 3,     /* y = form(x, scale, offset), in one arithmetic type */
    HURRAY_NODE_GGML = 4,     /* GGML block structs */
    HURRAY_NODE_BITS = 5,     /* an integer assembled from bit planes */
    HURRAY_NODE_GATHER = 6    /* a permutation along one axis */
} HurrayNodeKind;

/* Where a stored node's element i lies. */
typedef enum HurrayAddressing {
    HURRAY_ADDRESSING_ELEMENTS = 0, /* version 1's rule: strides in elements */
    HURRAY_ADDRESSING_WORDS = 1     /* codes in containers; strides in containers */
} HurrayAddressing;

/* A step's formula, x the input, s the scale, o the offset. */
typedef enum HurrayForm {
    HURRAY_FORM_MUL = 1,     /* x * s */
    HURRAY_FORM_DIV = 2,     /* x / s */
    HURRAY_FORM_SUB_MUL = 3, /* (x - o) * s */
    HURRAY_FORM_MUL_ADD = 4, /* x * s + o */
    HURRAY_FORM_MUL_SUB = 5  /* x * s - o */
} HurrayForm;

/* How a stored node's codes read as values. */
typedef enum HurrayValueRule {
    HURRAY_VALUE_RULE_STANDARD = 0,
    HURRAY_VALUE_RULE_E8M0_NO_NAN = 1 /* float8_e8m0fnu only: 255 is 2^128, not NaN */
} HurrayValueRule;

/* A step's flags: the last block along an axis may be partial. */
#define HURRAY_STEP_RAGGED 1
/* A stored node's slot flags (SLOTS packing): a chunk's elements go round
 * its containers (planar) rather than fill one container after another. */
#define HURRAY_SLOTS_PLANAR 1

typedef struct HurrayBuffer HurrayBuffer;
typedef struct HurrayBufferList HurrayBufferList;
typedef struct HurrayDescriptor HurrayDescriptor;
typedef struct HurrayTensorContext HurrayTensorContext;

/* Every function below carries two lines that docs/impl/c-ffi.md repeats
 * and tests/test_docs_c_headers.py holds the two against each other:
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
/* Marks the buffer's memory as not to be written (ABI 5). One-way: no call
 * makes a buffer writable again; marking twice is the same as once.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_buffer_mark_readonly(HurrayBuffer *buf);
/* HURRAY_BUFFER_READONLY for a marked buffer, else 0 (ABI 5). Only for a
 * buffer this library made, or one that came with a context of version 5
 * or later: a buffer made by an ABI-4 library has no flags to read. For a
 * capsule's buffers, ask hurray_tensor_context_buffer_flags, which answers
 * for a context of any version.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_buffer_flags(const HurrayBuffer *buf, uint32_t *out);

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
 * (version 1) or node (version 2) can reach lies inside its buffer. For
 * version 2 it then reads every group-index and gather-index value, which
 * must lie below its bound (else HURRAY_ERROR_OUT_OF_RANGE).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_DESCRIPTOR,
 * HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_OUT_OF_RANGE.
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
/* Version 1 only: a descriptor with nodes refuses this and the next three
 * setters (HURRAY_ERROR_INVALID_ARGUMENT), as set_strides does.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_byte_order(HurrayDescriptor *desc, uint32_t byte_order);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_packing(HurrayDescriptor *desc, uint32_t packing);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_quantization(HurrayDescriptor *desc, uint32_t scheme,
                                                uint32_t granularity, uint32_t axis,
                                                uint64_t block_size, uint32_t ggml_type);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
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

/* Accessors. Borrowed arrays live as long as the descriptor. A version-2
 * descriptor answers them too: its shape, row-major strides, little-endian,
 * packing none, scheme graph and no parts; its dtype is NOT_FOUND (its
 * values are node 0's, hurray_descriptor_node_kind and the like). */
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

/* ---- HurrayDescriptor, version 2: a graph of nodes (ADR-054) ----------
 *
 * A descriptor made by hurray_descriptor_new becomes version 2 with its
 * first added node: it then keeps only the shape given to new (the
 * tensor's logical shape), its scheme reads HURRAY_SCHEME_GRAPH, it has no
 * parts, and the version-1 setters refuse it. The tensor is the value of
 * node 0, reshaped row-major to that shape. Nodes are numbered in the order
 * they are added, which must be the canonical order (depth-first from node
 * 0, children in field order): a parent is added before its children and
 * names them by the indices they will get. Setters refuse codes this build
 * does not know and values their fields cannot hold; validate and encode
 * judge everything else. Arrays the accessors lend live until the
 * descriptor is destroyed or a node is added to it. */

/* A stored node: elements of dtype in buffer buffer_index from byte_offset,
 * row-major strides in elements, little-endian, ELEMENTS addressing with
 * the packing hurray_descriptor_new would choose for the dtype, row-major
 * layout, no code offset, codebook or value rule. *out_node is its index.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: shape is copied; the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_stored(HurrayDescriptor *desc, uint32_t dtype, uint32_t rank,
                                          const uint64_t *shape, uint64_t buffer_index,
                                          uint64_t byte_offset, uint32_t *out_node);
/* Strides of a stored node: in elements (ELEMENTS), in containers (WORDS).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: strides is copied. */
HurrayStatus hurray_descriptor_stored_set_strides(HurrayDescriptor *desc, uint32_t node,
                                                  uint32_t rank, const int64_t *strides);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored_set_byte_order(HurrayDescriptor *desc, uint32_t node,
                                                     uint32_t byte_order);
/* ELEMENTS addressing with this packing (none, padded, lsb_first or
 * ggml_split); the WORDS fields are cleared.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored_set_elements(HurrayDescriptor *desc, uint32_t node,
                                                   uint32_t packing);
/* WORDS addressing: containers of container_bits, packed along packed_axis
 * by packing (dense or slots). For slots: chunk_containers K, slot_flags
 * (HURRAY_SLOTS_PLANAR), chunk_stride, and slot_count bytes of order (slot
 * s at bit b * order[s]); for dense all four are zero and order may be NULL.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED.
 * Ownership: order is copied. */
HurrayStatus hurray_descriptor_stored_set_words(HurrayDescriptor *desc, uint32_t node,
                                                uint32_t container_bits, uint32_t packed_axis,
                                                uint32_t packing, uint64_t chunk_containers,
                                                uint32_t slot_flags, uint64_t chunk_stride,
                                                uint32_t slot_count, const uint8_t *order);
/* HurrayPartLayout: row_major, or swizzled_128x4.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored_set_layout(HurrayDescriptor *desc, uint32_t node,
                                                 uint32_t layout);
/* Code to value: the integer plus code_offset, or codebook[code] (a node
 * index, 0 for none), and the HurrayValueRule.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored_set_codes(HurrayDescriptor *desc, uint32_t node,
                                                int32_t code_offset, uint32_t codebook,
                                                uint32_t value_rule);
/* A constant: one value of dtype, given as its little-endian bytes read as
 * a uint64_t (the bit pattern, zero above the dtype's size).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_constant(HurrayDescriptor *desc, uint32_t dtype,
                                            uint64_t value_bits, uint32_t *out_node);
/* A step y = form(x, scale, offset) in the arithmetic dtype, of this shape;
 * x, scale and offset are node indices (offset 0 for none). Its groups are
 * one element each (every block 1) until hurray_descriptor_step_set_groups.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: shape is copied; the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_step(HurrayDescriptor *desc, uint32_t form, uint32_t arithmetic,
                                        uint32_t rank, const uint64_t *shape, uint32_t x,
                                        uint32_t scale, uint32_t offset, uint32_t *out_node);
/* A step's grouping: blocks[k] elements per group along axis k, or, on
 * indexed_axis when group_index is a node (0 for none), the group of index
 * i is group_index[i] (blocks[indexed_axis] then 0); flags HURRAY_STEP_RAGGED.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: blocks is copied. */
HurrayStatus hurray_descriptor_step_set_groups(HurrayDescriptor *desc, uint32_t node, uint32_t rank,
                                               const uint64_t *blocks, uint32_t flags,
                                               uint32_t indexed_axis, uint32_t group_index);
/* A GGML node: blocks of ggml_type, row-major, in buffer buffer_index from
 * byte_offset.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: shape is copied; the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_ggml(HurrayDescriptor *desc, uint32_t ggml_type, uint32_t rank,
                                        const uint64_t *shape, uint64_t buffer_index,
                                        uint64_t byte_offset, uint32_t *out_node);
/* A bits node: sum of inputs[k] << shifts[k] (input_count of them, 1 to
 * 4, node indices), plus offset.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_NO_MEMORY.
 * Ownership: shape, inputs and shifts are copied; the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_bits(HurrayDescriptor *desc, uint32_t rank,
                                        const uint64_t *shape, uint32_t input_count,
                                        const uint32_t *inputs, const uint32_t *shifts,
                                        int32_t offset, uint32_t *out_node);
/* A gather node: y[..., i, ...] = x[..., index[i], ...] along axis.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_NO_MEMORY.
 * Ownership: shape is copied; the node is the descriptor's. */
HurrayStatus hurray_descriptor_add_gather(HurrayDescriptor *desc, uint32_t rank,
                                          const uint64_t *shape, uint32_t x, uint32_t index,
                                          uint32_t axis, uint32_t *out_node);
/* The dtype the format's own dequantization returns (0 for unstated, or
 * float16, bfloat16, float32, float64); informative. Version 2 only.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_UNSUPPORTED.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_set_result_dtype(HurrayDescriptor *desc, uint32_t dtype);

/* 1, or 2 for a descriptor with nodes.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_encoding_version(const HurrayDescriptor *desc, uint32_t *out);
/* 0 for a version-1 descriptor.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_node_count(const HurrayDescriptor *desc, uint32_t *out);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_node_kind(const HurrayDescriptor *desc, uint32_t node,
                                         uint32_t *out_kind);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: *out_shape is borrowed (see above). */
HurrayStatus hurray_descriptor_node_shape(const HurrayDescriptor *desc, uint32_t node,
                                          uint32_t *out_rank, const uint64_t **out_shape);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored(const HurrayDescriptor *desc, uint32_t node,
                                      uint32_t *out_dtype, uint64_t *out_buffer_index,
                                      uint64_t *out_byte_offset, uint32_t *out_byte_order,
                                      uint32_t *out_layout);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: *out is borrowed (see above). */
HurrayStatus hurray_descriptor_stored_strides(const HurrayDescriptor *desc, uint32_t node,
                                              const int64_t **out);
/* The addressing and, for WORDS, its fields (zero for ELEMENTS); *out_order
 * holds *out_slot_count bytes.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: *out_order is borrowed (see above). */
HurrayStatus hurray_descriptor_stored_packing(const HurrayDescriptor *desc, uint32_t node,
                                              uint32_t *out_addressing, uint32_t *out_packing,
                                              uint32_t *out_container_bits,
                                              uint32_t *out_packed_axis,
                                              uint64_t *out_chunk_containers,
                                              uint32_t *out_slot_flags, uint64_t *out_chunk_stride,
                                              uint32_t *out_slot_count, const uint8_t **out_order);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_stored_codes(const HurrayDescriptor *desc, uint32_t node,
                                            int32_t *out_code_offset, uint32_t *out_codebook,
                                            uint32_t *out_value_rule);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_constant(const HurrayDescriptor *desc, uint32_t node,
                                        uint32_t *out_dtype, uint64_t *out_value_bits);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_step(const HurrayDescriptor *desc, uint32_t node, uint32_t *out_form,
                                    uint32_t *out_arithmetic, uint32_t *out_x, uint32_t *out_scale,
                                    uint32_t *out_offset);
/* *out_blocks holds the node's rank entries.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: *out_blocks is borrowed (see above). */
HurrayStatus hurray_descriptor_step_groups(const HurrayDescriptor *desc, uint32_t node,
                                           const uint64_t **out_blocks, uint32_t *out_flags,
                                           uint32_t *out_indexed_axis, uint32_t *out_group_index);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_ggml_node(const HurrayDescriptor *desc, uint32_t node,
                                         uint32_t *out_ggml_type, uint64_t *out_buffer_index,
                                         uint64_t *out_byte_offset);
/* out_inputs and out_shifts are arrays of 4, zero past *out_input_count.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: out_inputs and out_shifts are the caller's arrays. */
HurrayStatus hurray_descriptor_bits(const HurrayDescriptor *desc, uint32_t node,
                                    uint32_t *out_input_count, uint32_t *out_inputs,
                                    uint32_t *out_shifts, int32_t *out_offset);
/* Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_INVALID_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_gather(const HurrayDescriptor *desc, uint32_t node, uint32_t *out_x,
                                      uint32_t *out_index, uint32_t *out_axis);
/* 0 when unstated, and for a version-1 descriptor.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_descriptor_result_dtype(const HurrayDescriptor *desc, uint32_t *out);

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

/* ---- dequantization: the reference formulas, in C (ADR-055) ----------- */

/* The real values of the tensor `desc` describes over `buffers`, written to
 * out in row-major order of the logical shape, as out_dtype: FLOAT32, or
 * FLOAT16 or BFLOAT16 rounded once, to nearest even, from the float32
 * value (a NaN stays a NaN of its sign). The arithmetic is the scheme's
 * reference arithmetic (docs/impl/descriptor-encoding.md, "Quantization"),
 * bit for bit; NaN and infinite scales are values, not errors. The buffers
 * are checked against the descriptor first, as
 * hurray_descriptor_check_buffers checks them. out_len is in bytes and must
 * hold every element; out must be aligned to its elements. Neither the
 * descriptor nor the list is written: any number of threads may dequantize
 * from the same pair at once. An index value past its table is
 * OUT_OF_RANGE; a graph's plan that cannot be allocated is NO_MEMORY.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_NO_MEMORY.
 * Ownership: out is the caller's; nothing is kept. */
HurrayStatus hurray_dequantize(const HurrayDescriptor *desc, const HurrayBufferList *buffers,
                               HurrayDtype out_dtype, void *out, uint64_t out_len);
/* The same for rows first_row .. first_row + row_count - 1 only: a row is
 * one index of the first axis (the tensor seen as [shape[0], rest]; a
 * rank-0 tensor is one row of one element), and out receives row_count
 * rows. Threads that split a tensor by rows call it on the same
 * descriptor and list at once.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT,
 * HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_NO_MEMORY.
 * Ownership: out is the caller's; nothing is kept. */
HurrayStatus hurray_dequantize_rows(const HurrayDescriptor *desc, const HurrayBufferList *buffers,
                                    HurrayDtype out_dtype, uint64_t first_row, uint64_t row_count,
                                    void *out, uint64_t out_len);

/* ---- HurrayTensorContext: what a capsule carries beside its buffers ---- */

/* Copies the descriptor bytes and takes owner: on success
 * owner_release(owner) runs exactly once, when the context is destroyed
 * (owner_release may be NULL). On failure owner_release is not called and
 * owner is still the caller's. abi_version is HURRAY_C_ABI_MIN_VERSION to
 * HURRAY_C_ABI_VERSION: a producer makes a version-4 context only for a
 * consumer that reads no newer one, and then marks no buffer read-only
 * (ABI 4 has no such mark; ADR-059).
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
/* The flags of buffer index of the list that came with ctx (ABI 5):
 * HURRAY_BUFFER_READONLY when its memory may only be read, else 0. A context
 * of version 4 answers 0 for every buffer (ABI 4's promise: every buffer is
 * writable) without reading the buffer; a context of version 5 answers the
 * buffer's own mark. Call it only after reading the version (rule 1).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_A_CONTEXT, HURRAY_ERROR_ABI_VERSION,
 * HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_tensor_context_buffer_flags(const struct HurrayTensorContext *ctx,
                                                const HurrayBufferList *list, uint64_t index,
                                                uint32_t *out);
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
