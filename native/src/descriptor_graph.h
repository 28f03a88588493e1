/*
 * descriptor_graph.h -- internal: the nodes of a version-2 descriptor
 * (docs/impl/descriptor-encoding.md, "Version 2"; ADR-054), as the library
 * holds them. Readable on its own: a dequantizer walks these structs.
 *
 * The model. A version-2 descriptor is the tensor's logical shape (in the
 * HurrayDescriptor: rank, shape; its strides are the row-major ones) and a
 * HurrayGraph of 1 to HURRAY_MAX_NODES nodes. Each node is a logical array
 * (a rank and a shape) that gives a value for each of its elements; the
 * tensor is the value of node 0 read in row-major order and reshaped to the
 * tensor's shape (the element counts are equal). A node names other nodes by
 * index, and every such reference points to a later node, so the nodes form
 * a DAG that cannot loop; index 0 can never be referenced, so 0 means "none".
 *
 * Which fields hold. The builder (descriptor_graph_build.c) stores what it
 * is given; decode (descriptor_graph_decode.c) stores what the bytes say;
 * neither judges. After a successful check (desc->checked, set by decode,
 * validate, encode or check_buffers; descriptor_graph_validate.c) every
 * rule of the spec holds, in particular:
 *   - every kind, dtype, form, packing, layout and rule code is known;
 *   - every reference is 0 ("none", where allowed) or a later node, of the
 *     kind, dtype and shape the referring field needs (below);
 *   - every element count, and every reach in bits, fits 63 bits;
 *   - graph->before[i] / graph->after[i] are the bytes stored or GGML node
 *     i can reach around its byte offset, and desc->facts.buffer_count is
 *     the buffer count; the data-dependent facts (group-index and gather
 *     index values in range) hold only once check_buffers has passed
 *     against the buffers at hand.
 * Fields a kind or an addressing does not use are zero.
 *
 * Not part of the ABI: the layout may change; callers outside the library
 * use the accessors in hurray.h.
 */
#ifndef HURRAY_DESCRIPTOR_GRAPH_INTERNAL_H
#define HURRAY_DESCRIPTOR_GRAPH_INTERNAL_H

#include <stdint.h>

#include "descriptor.h"
#include "hurray.h"

#define HURRAY__DESCRIPTOR_VERSION_GRAPH 2u
/* The most slots a container can have: 64 one-bit codes in 64 bits. */
#define HURRAY__MAX_SLOTS 64u

/* STORED: elements in a buffer.
 *
 * Where the code of element (i_0, ..., i_{r-1}) lies:
 *   ELEMENTS addressing (version 1's rule): at bit
 *     8 * byte_offset + w * sum_k i_k * strides[k], w the storage width (8
 *     for PADDED, else the dtype's bits); packing NONE (>= 8 bits), PADDED,
 *     LSB_FIRST (1, 2, 4 bits) or GGML_SPLIT (4 bits, row-major contiguous,
 *     a last dimension of whole runs of 32: in run j, element 16h + l sits
 *     in byte 16j + l, low nibble for h = 0, high for h = 1). Layout
 *     SWIZZLED_128X4 (rank 2, >= 8-bit dtype, strides zero): element (r, c)
 *     is element ((r/128)*(Cp/4) + c/4)*512 + (r%32)*16 + (r/32%4)*4 + c%4
 *     counted from byte_offset, Cp = shape[1] rounded up to a multiple of 4.
 *   WORDS addressing: codes of b = dtype bits in containers of W =
 *     container_bits (8, 16, 32, 64; byte_order applies to a container), one
 *     axis p = packed_axis packed. strides[k] count containers, for every
 *     axis including p (there: the step from one container along p to the
 *     next). Element e = i_p along p lies in container j(e), at bit
 *     position t(e) of it, and the container is at byte
 *       byte_offset + (W/8) * (sum_{k != p} i_k * strides[k] + j * strides[p]).
 *     DENSE: j = e*b / W, t = e*b % W; a code may straddle into container
 *       j + 1 (its high bits are then the low bits of that container).
 *     SLOTS: per = slot_count = floor(W / b) slots per container (bits above
 *       per*b unused); chunks of n = per*K elements, K = chunk_containers,
 *       chunk c = e / n starting at container c * chunk_stride; r = e % n;
 *       interleaved (slot_flags 0): container r / per, slot r % per;
 *       planar (HURRAY_SLOTS_PLANAR): container r % K, slot r / K;
 *       j = c * chunk_stride + that container, t = b * order[slot].
 *
 * Code to value: a code is read as a b-bit integer, two's complement for a
 * signed integer dtype. Integer dtypes: value = code + code_offset. With a
 * codebook (a node index; the dtype is then an unsigned integer type and
 * code_offset 0): value = codebook's value at the code, read unsigned. Float
 * dtypes: the dtype's value, except value_rule E8M0_NO_NAN (float8_e8m0fnu
 * only), where code 255 is 2^128 rather than NaN. */
typedef struct HurrayStoredNode {
    uint8_t dtype;          /* HurrayDtype (not complex) */
    uint8_t byte_order;     /* HurrayByteOrder; big only for units wider than 8 bits */
    uint8_t addressing;     /* HurrayAddressing */
    uint8_t packing;        /* ELEMENTS: NONE/PADDED/LSB_FIRST/GGML_SPLIT; WORDS: DENSE/SLOTS */
    uint8_t layout;         /* HurrayPartLayout */
    uint8_t value_rule;     /* HurrayValueRule */
    uint8_t codebook;       /* node index, 0 for none; a rank-1 node of >= 2^b elements */
    uint8_t container_bits; /* W (WORDS), else 0 */
    uint8_t packed_axis;    /* p < rank (WORDS), else 0 */
    uint8_t slot_count;     /* per (SLOTS), else 0 */
    uint8_t slot_flags;     /* HURRAY_SLOTS_PLANAR (SLOTS, K > 1), else 0 */
    int32_t code_offset;    /* integer dtypes without codebook; else 0 */
    uint64_t buffer_index;  /* below the descriptor's buffer count */
    uint64_t byte_offset;
    uint64_t chunk_containers;        /* K >= 1 (SLOTS), else 0 */
    uint64_t chunk_stride;            /* cs >= K (SLOTS), else 0 */
    int64_t *strides;                 /* rank entries (see above) */
    uint8_t order[HURRAY__MAX_SLOTS]; /* a permutation of 0 .. slot_count-1; zero past it */
} HurrayStoredNode;

/* CONSTANT: one value, rank 0, stated in the descriptor; it stands for any
 * parameter grid (broadcast). dtype float16, bfloat16, float32, float64,
 * int32 or int64; value_bits its little-endian bytes as a uint64_t, zero
 * above the dtype's size. */
typedef struct HurrayConstantNode {
    uint8_t dtype;
    uint64_t value_bits;
} HurrayConstantNode;

/* STEP: y = form(x, s, o) in the arithmetic dtype T (float16, bfloat16,
 * float32, float64): every operand is converted to T (round to nearest
 * even; an integer through float64), every operation's result is rounded
 * to T.
 *
 * x has the step's element count and is read in row-major order. Element i
 * (a multi-index of the step's shape) takes its parameters from the grid
 * cell g: g_k = i_k / blocks[k] on each blocked axis, and on indexed_axis
 * (when group_index != 0) g_k = the value of node group_index at i_k. The
 * grid's extent is ceil(shape[k] / blocks[k]) on a blocked axis, and on
 * the indexed axis the group count G, the extent there of the first
 * parameter that is not a CONSTANT (scale, else offset). scale and offset
 * either have exactly the grid's shape (and the step's rank) or are
 * CONSTANT nodes. Without HURRAY_STEP_RAGGED every block divides its axis. */
typedef struct HurrayStepNode {
    uint8_t form;       /* HurrayForm */
    uint8_t arithmetic; /* HurrayDtype: float16, bfloat16, float32, float64 */
    uint8_t x;          /* node index, required */
    uint8_t scale;      /* node index, required */
    uint8_t offset;     /* node index; required by SUB_MUL, MUL_ADD, MUL_SUB, else 0 */
    uint8_t
        group_index; /* node index or 0: a rank-1 integer STORED node, length shape[indexed_axis] */
    uint8_t indexed_axis; /* < rank with a group index, else 0 */
    uint8_t flags;        /* HURRAY_STEP_RAGGED */
    uint64_t *blocks;     /* rank entries, >= 1; 0 on the indexed axis */
} HurrayStepNode;

/* GGML: GGML block structs of ggml_type, row-major and contiguous, from
 * byte_offset; the last dimension a multiple of the block's elements. The
 * value of each element is GGML's formula in float32. */
typedef struct HurrayGgmlNode {
    uint32_t ggml_type; /* HurrayGgmlType */
    uint64_t buffer_index;
    uint64_t byte_offset;
} HurrayGgmlNode;

/* BITS: value = sum_k (value of inputs[k]) << shifts[k], plus offset, for
 * k < input_count (1 to 4); the inputs are STORED nodes of an unsigned
 * integer dtype with no codebook and no code offset, each of this node's
 * shape, and shifts[k] + their bits <= 63. Unused entries are zero. */
typedef struct HurrayBitsNode {
    uint8_t input_count;
    uint8_t inputs[4];
    uint8_t shifts[4];
    int32_t offset;
} HurrayBitsNode;

/* GATHER: y[..., i, ...] = x[..., index[i], ...] along axis. x has this
 * node's rank and shape except along axis (any extent n there); index is a
 * rank-1 integer STORED node (no codebook, no code offset) of length
 * shape[axis], and every index value lies in [0, n) once check_buffers has
 * passed. */
typedef struct HurrayGatherNode {
    uint8_t x;
    uint8_t index;
    uint8_t axis;
} HurrayGatherNode;

typedef struct HurrayNode {
    uint8_t kind;    /* HurrayNodeKind */
    uint8_t rank;    /* <= HURRAY_MAX_RANK; 0 for a CONSTANT */
    uint64_t *shape; /* rank entries */
    union {
        HurrayStoredNode stored;
        HurrayConstantNode constant;
        HurrayStepNode step;
        HurrayGgmlNode ggml;
        HurrayBitsNode bits;
        HurrayGatherNode gather;
    } as;
    /* Where shape (and strides or blocks) start in graph->pool: the
     * pointers above are rebuilt from these when the pool moves. */
    uint32_t shape_at;
    uint32_t extra_at; /* stored: strides; step: blocks; else unused */
} HurrayNode;

typedef struct HurrayGraph {
    uint8_t node_count;   /* 1 .. HURRAY_MAX_NODES once valid */
    uint8_t result_dtype; /* 0, or float16, bfloat16, float32, float64: informative */
    /* Facts of the last passed check (valid while desc->checked): the
     * bytes stored or GGML node i reaches, [byte_offset - before[i],
     * byte_offset + after[i]); both 0 for other kinds and empty nodes. */
    uint64_t before[HURRAY_MAX_NODES];
    uint64_t after[HURRAY_MAX_NODES];
    HurrayNode nodes[HURRAY_MAX_NODES];
    uint32_t pool_len; /* words of pool in use */
    uint32_t pool_cap; /* words of pool allocated */
    uint64_t pool[];   /* every node's shape, strides and blocks */
} HurrayGraph;

/* The graph of a version-2 descriptor, NULL for version 1. The scheme is
 * the mark: only a descriptor with nodes has scheme GRAPH (the version-1
 * setters cannot set it), so desc->graph is read only then and a version-1
 * descriptor never has to store it. */
static inline HurrayGraph *hurray__descriptor_graph(const HurrayDescriptor *desc)
{
    return desc->scheme == HURRAY_SCHEME_GRAPH ? desc->graph : NULL;
}

/* The node at `index` in *out, of this kind (0 for any kind): OUT_OF_RANGE
 * past the last node (a version-1 descriptor has none), INVALID_ARGUMENT for
 * another kind, NULL_ARGUMENT for no desc; messages start with fn. */
HurrayStatus hurray__graph_find_node(const HurrayDescriptor *desc, const char *fn, uint32_t index,
                                     uint32_t kind, const HurrayNode **out);

/* Kinds as the messages name them: "stored", "constant", ... or "?". */
const char *hurray__node_kind_name(uint32_t kind);

/* A graph for `node_count` nodes whose shapes, strides and blocks take
 * `pool_words` words in all; every node zeroed. NULL when out of memory.
 * Freed with hurray__graph_free. */
HurrayGraph *hurray__graph_alloc(uint32_t node_count, uint64_t pool_words);
void hurray__graph_free(HurrayGraph *graph);
/* Points every node's shape, strides and blocks into graph->pool again. */
void hurray__graph_rebase(HurrayGraph *graph);

/* Encoding: the node's length in bytes, and the whole descriptor's. */
uint64_t hurray__graph_node_len(const HurrayNode *node);
uint64_t hurray__graph_encoded_len(const HurrayDescriptor *desc);
/* The encoding, into out (at least hurray__graph_encoded_len bytes), of a
 * checked version-2 descriptor. */
void hurray__graph_write(const HurrayDescriptor *desc, uint8_t *out);
/* Decode of version-2 bytes (magic, version and total length already
 * checked by the caller). */
HurrayStatus hurray__graph_decode(const uint8_t *bytes, uint64_t len, HurrayDescriptor **out);

/* Every rule of version 2 on a descriptor with a graph; on success the
 * facts (desc->facts.buffer_count, graph->before/after) are set. */
HurrayStatus hurray__graph_check_rules(const HurrayDescriptor *desc);
/* The buffer count k (buffer indices exactly 0 .. k-1 over the stored and
 * GGML nodes), or INVALID_DESCRIPTOR naming the gap. */
HurrayStatus hurray__graph_buffer_indices(const HurrayGraph *graph, uint32_t *out_count);
/* The bytes one stored or GGML node reaches (HURRAY_ERROR_OVERFLOW when
 * the reach in bits does not fit 63 bits), for a node that passed its own
 * rules. */
HurrayStatus hurray__graph_node_reach(const HurrayGraph *graph, uint32_t i, uint64_t *out_before,
                                      uint64_t *out_after);
/* check_buffers for a checked version-2 descriptor: every node's bytes in
 * its buffer, then every group-index and gather value in range. */
HurrayStatus hurray__graph_check_buffers(const HurrayDescriptor *desc,
                                         const HurrayBufferList *list);

#endif /* HURRAY_DESCRIPTOR_GRAPH_INTERNAL_H */
