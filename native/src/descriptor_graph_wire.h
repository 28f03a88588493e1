/*
 * descriptor_graph_wire.h -- internal: the sizes of the version-2 binary
 * form (docs/impl/descriptor-encoding.md, "Version 2"), which the encoder
 * (descriptor_graph_encode.c) and the decoder (descriptor_graph_decode.c)
 * share. Each node starts with kind (u8), rank (u8) and its length (u16),
 * then a fixed part, then its dimensions; every node is a multiple of 8
 * bytes long.
 */
#ifndef HURRAY_DESCRIPTOR_GRAPH_WIRE_INTERNAL_H
#define HURRAY_DESCRIPTOR_GRAPH_WIRE_INTERNAL_H

#include <stdint.h>

#include "descriptor.h"
#include "descriptor_graph.h"
#include "hurray.h"

/* The fixed part of each kind, the 4-byte node header included. */
#define HURRAY__GRAPH_STORED_FIXED 48u
#define HURRAY__GRAPH_CONSTANT_LEN 16u
#define HURRAY__GRAPH_STEP_FIXED 16u
#define HURRAY__GRAPH_GGML_FIXED 24u
#define HURRAY__GRAPH_BITS_FIXED 24u
#define HURRAY__GRAPH_GATHER_FIXED 16u
#define HURRAY__GRAPH_NODE_HEADER 4u

/* The bytes a node of this kind, rank and slot count takes; 0 for an
 * unknown kind. A stored node holds rank dimensions, rank strides and the
 * order rounded up to 8 bytes; a step rank dimensions and rank blocks; the
 * others rank dimensions (a constant none). */
static inline uint64_t hurray__graph_wire_node_len(uint32_t kind, uint32_t rank,
                                                   uint32_t slot_count)
{
    switch (kind) {
    case HURRAY_NODE_STORED:
        return HURRAY__GRAPH_STORED_FIXED + 16 * (uint64_t)rank + ((slot_count + 7u) & ~7u);
    case HURRAY_NODE_CONSTANT: return HURRAY__GRAPH_CONSTANT_LEN;
    case HURRAY_NODE_STEP: return HURRAY__GRAPH_STEP_FIXED + 16 * (uint64_t)rank;
    case HURRAY_NODE_GGML: return HURRAY__GRAPH_GGML_FIXED + 8 * (uint64_t)rank;
    case HURRAY_NODE_BITS: return HURRAY__GRAPH_BITS_FIXED + 8 * (uint64_t)rank;
    case HURRAY_NODE_GATHER: return HURRAY__GRAPH_GATHER_FIXED + 8 * (uint64_t)rank;
    default: return 0;
    }
}

/* The fixed part a kind has before its dimensions; 0 for an unknown kind. */
static inline uint32_t hurray__graph_wire_fixed_len(uint32_t kind)
{
    switch (kind) {
    case HURRAY_NODE_STORED: return HURRAY__GRAPH_STORED_FIXED;
    case HURRAY_NODE_CONSTANT: return HURRAY__GRAPH_CONSTANT_LEN;
    case HURRAY_NODE_STEP: return HURRAY__GRAPH_STEP_FIXED;
    case HURRAY_NODE_GGML: return HURRAY__GRAPH_GGML_FIXED;
    case HURRAY_NODE_BITS: return HURRAY__GRAPH_BITS_FIXED;
    case HURRAY_NODE_GATHER: return HURRAY__GRAPH_GATHER_FIXED;
    default: return 0;
    }
}

/* The longest node, a stored node of rank 64 with 64 slots, bounds the
 * public limit, and the 16-bit length fields hold it. */
#define HURRAY__GRAPH_LONGEST_NODE (HURRAY__GRAPH_STORED_FIXED + 16u * HURRAY_MAX_RANK + 64u)
_Static_assert(HURRAY_MAX_DESCRIPTOR_V2_LEN == HURRAY__DESCRIPTOR_HEADER_LEN +
                                                   8u * HURRAY_MAX_RANK +
                                                   HURRAY_MAX_NODES * HURRAY__GRAPH_LONGEST_NODE,
               "HURRAY_MAX_DESCRIPTOR_V2_LEN is the longest version-2 encoding");
_Static_assert(HURRAY_MAX_DESCRIPTOR_V2_LEN <= UINT16_MAX,
               "the total length field holds any version-2 encoding");
_Static_assert(HURRAY_MAX_DESCRIPTOR_V2_LEN >= HURRAY_MAX_DESCRIPTOR_LEN,
               "a buffer of the version-2 limit holds any version-1 encoding too");

#endif /* HURRAY_DESCRIPTOR_GRAPH_WIRE_INTERNAL_H */
