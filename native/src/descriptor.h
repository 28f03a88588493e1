/*
 * descriptor.h -- internal: the HurrayDescriptor struct, its binary
 * constants, and the small helpers every descriptor_*.c file shares.
 *
 * It declares nothing that a .c file defines: each unit's functions are in
 * its own header, and the units stand in layers, each including only those
 * below it: descriptor_reach.h (size arithmetic), descriptor_accept.h (the
 * quick path), descriptor_validate.h (every rule), then the public entry
 * points (descriptor_build.c, descriptor_encode.c, descriptor_decode.c with
 * descriptor_decode_full.c, descriptor_check_buffers.c). Below them all,
 * descriptor_spare.h keeps a thread's last destroyed block for its next
 * allocation (ADR-051).
 *
 * Not part of the ABI: the struct layout may change at any time; callers
 * outside the library use the accessors in hurray.h. The rules the fields
 * must obey are in docs/impl/descriptor-encoding.md.
 */
#ifndef HURRAY_DESCRIPTOR_INTERNAL_H
#define HURRAY_DESCRIPTOR_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>

#include "descriptor_spare.h"
#include "hurray.h"

/* The binary form (docs/impl/descriptor-encoding.md). */
#define HURRAY__DESCRIPTOR_VERSION 1u
#define HURRAY__DESCRIPTOR_HEADER_LEN 32u
#define HURRAY__DESCRIPTOR_DIM_LEN 16u /* one u64 dimension plus one i64 stride */
#define HURRAY__DESCRIPTOR_PART_LEN 16u

/* One role's part. Codes are bytes, as in the encoding: the setters refuse
 * unknown codes and decode reads bytes, so nothing wider ever needs storing,
 * and a byte indexes the 256-row dtype table without a bounds check. The
 * buffer index is as wide as a setter accepts, so that validation, not
 * truncation, decides whether it is legal. */
typedef struct HurrayDescriptorPart {
    uint8_t dtype;         /* HurrayDtype */
    uint8_t layout;        /* HurrayPartLayout */
    uint64_t buffer_index; /* index into the tensor's buffer list */
    uint64_t byte_offset;  /* where the part starts in that buffer */
} HurrayDescriptorPart;

/* Bit role - 1 of a part mask stands for the part of that role. */
#define HURRAY__ROLE_BIT(role) (1u << ((role) - 1))

/* What a successful check computed on the way: check_buffers needs exactly
 * these, so it takes them from the check instead of working them out again. */
typedef struct HurrayDescriptorFacts {
    uint32_t buffer_count;
    uint64_t before[HURRAY_MAX_PARTS]; /* per role - 1: the part's reach */
    uint64_t after[HURRAY_MAX_PARTS];
} HurrayDescriptorFacts;

struct HurrayDescriptor {
    uint8_t rank;
    uint8_t byte_order;  /* HurrayByteOrder */
    uint8_t packing;     /* HurrayPacking, of the values part */
    uint8_t scheme;      /* HurrayScheme */
    uint8_t granularity; /* HurrayGranularity */
    /* The parts the descriptor has (HURRAY__ROLE_BIT). Only those entries
     * of parts[] are set: decode writes no others, so nothing may read them. */
    uint8_t part_mask;
    uint32_t axis;      /* any value a setter is given; validation judges it */
    uint32_t ggml_type; /* HurrayGgmlType, or 0; as wide as the encoding's field */
    uint64_t block_size;
    /* 1 once a check has proven every rule (decode, validate, or the check
     * encode and check_buffers start with), and facts holds what it found;
     * every setter sets it back to 0. So each descriptor is checked once,
     * however many times it is encoded or checked against buffers (one
     * check per handoff, ADR-046). Written through a const pointer by the
     * check itself: a handle is used by one thread at a time (hurray.h). */
    uint8_t checked;
    HurrayDescriptorFacts facts;
    /* parts[role - 1]; the encoding lists present parts in this order. */
    HurrayDescriptorPart parts[HURRAY_MAX_PARTS];
    uint64_t *shape;  /* rank entries, in storage */
    int64_t *strides; /* rank entries, in elements, in storage after the shape */
    /* The nodes of a version-2 descriptor (descriptor_graph.h), which has
     * scheme GRAPH; read only then (hurray__descriptor_graph), so that a
     * version-1 descriptor never stores it. Freed by destroy. */
    struct HurrayGraph *graph;
    /* Sized for HURRAY__SPARE_RANK up to that rank, so that a destroyed
     * block serves the thread's next decode (ADR-051), and for the rank
     * above it, not for HURRAY_MAX_RANK: a typical descriptor stays small. */
    uint64_t storage[];
};

/* Before a loop over the four roles: unrolled, it is four tests of the part
 * mask, with no loop to run. (GCC only: clang may decline and warn.) */
#if defined(__GNUC__) && !defined(__clang__)
#define HURRAY__UNROLL_ROLES _Pragma("GCC unroll 4")
#else
#define HURRAY__UNROLL_ROLES
#endif

/* The role of the lowest bit set in a non-zero part mask: loops over the
 * parts clear that bit and go on, visiting the parts in role order. */
static inline uint32_t hurray__role_of_bit(uint32_t mask)
{
    return (uint32_t)__builtin_ctz(mask) + 1;
}

/* The bits set in the part mask (at most 4): looked up in a table of 16
 * nibbles, one per mask, since __builtin_popcount without -mpopcnt is a
 * call into libgcc on every encode. */
static inline uint32_t hurray__descriptor_part_count(const HurrayDescriptor *desc)
{
    return (uint32_t)(0x4332322132212110u >> (4 * (desc->part_mask & 0xFu))) & 0xFu;
}

/* The size of every block of rank <= HURRAY__SPARE_RANK: any of them may be
 * parked at destroy and taken for any such rank (descriptor_spare.h). */
#define HURRAY__DESCRIPTOR_SPARE_SIZE \
    (sizeof(HurrayDescriptor) + 2 * sizeof(uint64_t) * HURRAY__SPARE_RANK)

/* One allocation holding the struct and room for rank dimensions and
 * strides (rank <= HURRAY_MAX_RANK): the thread's spare block (ADR-051) or
 * a new one, at the spare size up to rank HURRAY__SPARE_RANK and sized for
 * the rank above it. rank and the shape and strides pointers are set, every
 * other field is left for the caller to fill. NULL when out of memory.
 * Freed with hurray_descriptor_destroy (or free(), by the code that
 * allocated it, when it fails before handing it out). Inline: decode calls
 * it on every exchange. */
static inline __attribute__((always_inline)) HurrayDescriptor *hurray__descriptor_alloc(
    uint32_t rank)
{
    HurrayDescriptor *desc;
    if (rank <= HURRAY__SPARE_RANK) {
        desc = hurray__spare_take(HURRAY__DESCRIPTOR_SPARE_SIZE);
        if (desc == NULL) {
            desc = malloc(HURRAY__DESCRIPTOR_SPARE_SIZE);
        }
    } else {
        /* rank <= 64: the size cannot overflow. */
        desc = malloc(sizeof *desc + 2 * sizeof(uint64_t) * rank);
    }
    if (desc == NULL) {
        return NULL;
    }
    desc->rank = (uint8_t)rank;
    desc->checked = 0;
    desc->shape = desc->storage;
    /* int64_t and uint64_t may alias each other (C11 6.5p7). */
    desc->strides = (int64_t *)(desc->storage + rank);
    return desc;
}

/* Hands a descriptor's block back: parked as the thread's spare when it has
 * the spare size and the slot is free, freed otherwise. */
static inline __attribute__((always_inline)) void hurray__descriptor_release(HurrayDescriptor *desc)
{
    if (desc->rank <= HURRAY__SPARE_RANK &&
        hurray__spare_park(desc, HURRAY__DESCRIPTOR_SPARE_SIZE)) {
        return;
    }
    free(desc);
}

/* "values", "scale", "zero_point", "global_scale", or "?" (for messages). */
static inline const char *hurray__role_name(uint32_t role)
{
    switch (role) {
    case HURRAY_ROLE_VALUES: return "values";
    case HURRAY_ROLE_SCALE: return "scale";
    case HURRAY_ROLE_ZERO_POINT: return "zero_point";
    case HURRAY_ROLE_GLOBAL_SCALE: return "global_scale";
    default: return "?";
    }
}

/* Bytes of the encoding: header, rank dimensions and strides, the parts.
 * rank <= 64 and at most 4 parts: at most 1120, no overflow possible. */
static inline uint64_t hurray__descriptor_encoded_len(const HurrayDescriptor *desc)
{
    return HURRAY__DESCRIPTOR_HEADER_LEN + (uint64_t)HURRAY__DESCRIPTOR_DIM_LEN * desc->rank +
           (uint64_t)HURRAY__DESCRIPTOR_PART_LEN * hurray__descriptor_part_count(desc);
}

#endif /* HURRAY_DESCRIPTOR_INTERNAL_H */
