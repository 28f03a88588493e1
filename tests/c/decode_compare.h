/*
 * decode_compare.h -- the property decode's quick path
 * (native/src/descriptor_decode.c, ADR-047) must keep, checked on one byte
 * string:
 *
 *  - it never takes bytes the full decode (descriptor_decode_full.c)
 *    refuses;
 *  - what it takes, it reads exactly as the full decode does: every field,
 *    dimension, stride and part, and the kept verdict and facts;
 *  - hurray_descriptor_decode answers as the full decode does, with the
 *    same message when it refuses.
 *
 * Shared by tests/c/test_decode_quick.c (a sweep over every byte of a set
 * of encodings) and fuzz/descriptor_fuzz.c (every input the fuzzer makes).
 * It reads the library's internal headers, so both compile the library
 * sources in. Define DECODE_REQUIRE(cond, what) before including: a failed
 * property must end the program.
 */
#ifndef HURRAY_TESTS_DECODE_COMPARE_H
#define HURRAY_TESTS_DECODE_COMPARE_H

#include <stdint.h>
#include <string.h>

#include "descriptor_decode.h"
#include "descriptor_graph.h"

typedef struct DecodeTally {
    unsigned long quick;      /* the quick path took it */
    unsigned long full_valid; /* valid, left to the full decode */
    unsigned long refused;    /* invalid */
} DecodeTally;

/* Two checked descriptors hold the same fields, parts and facts. */
static int decode_same(const HurrayDescriptor *a, const HurrayDescriptor *b)
{
    if (a->rank != b->rank || a->byte_order != b->byte_order || a->packing != b->packing ||
        a->scheme != b->scheme || a->granularity != b->granularity ||
        a->part_mask != b->part_mask || a->axis != b->axis || a->ggml_type != b->ggml_type ||
        a->block_size != b->block_size || a->checked != 1 || b->checked != 1 ||
        a->facts.buffer_count != b->facts.buffer_count) {
        return 0;
    }
    for (uint32_t k = 0; k < a->rank; k++) {
        if (a->shape[k] != b->shape[k] || a->strides[k] != b->strides[k]) {
            return 0;
        }
    }
    /* Version 2: the same nodes' reaches (the fields are the bytes'; the
     * callers compare re-encodings). */
    if ((a->graph == NULL) != (b->graph == NULL)) {
        return 0;
    }
    if (a->graph != NULL) {
        const HurrayGraph *g = a->graph, *h = b->graph;
        if (g->node_count != h->node_count || g->result_dtype != h->result_dtype ||
            memcmp(g->before, h->before, sizeof g->before) != 0 ||
            memcmp(g->after, h->after, sizeof g->after) != 0) {
            return 0;
        }
    }
    for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
        if (!(a->part_mask & HURRAY__ROLE_BIT(role))) {
            continue; /* never read: decode writes only the parts present */
        }
        const HurrayDescriptorPart *p = &a->parts[role - 1], *q = &b->parts[role - 1];
        if (p->dtype != q->dtype || p->layout != q->layout || p->buffer_index != q->buffer_index ||
            p->byte_offset != q->byte_offset ||
            a->facts.before[role - 1] != b->facts.before[role - 1] ||
            a->facts.after[role - 1] != b->facts.after[role - 1]) {
            return 0;
        }
    }
    return 1;
}

static void decode_compare(const uint8_t *bytes, uint64_t len, DecodeTally *tally)
{
    HurrayDescriptor *quick = hurray__descriptor_decode_quick(bytes, len);
    HurrayDescriptor *full = NULL;
    HurrayStatus full_status = hurray__descriptor_decode_full(bytes, len, &full);
    char full_message[512];
    strncpy(full_message, hurray_last_error_message(), sizeof full_message - 1);
    full_message[sizeof full_message - 1] = '\0';

    if (quick != NULL) {
        DECODE_REQUIRE(full_status == HURRAY_OK,
                       "the quick path takes what the full decode refuses");
        DECODE_REQUIRE(decode_same(quick, full), "the quick path reads other fields or facts");
        tally->quick++;
    } else if (full_status == HURRAY_OK) {
        tally->full_valid++;
    } else {
        tally->refused++;
    }

    HurrayDescriptor *public_desc = NULL;
    HurrayStatus status = hurray_descriptor_decode(bytes, len, &public_desc);
    DECODE_REQUIRE(status == full_status, "decode and the full decode answer differently");
    if (status == HURRAY_OK) {
        DECODE_REQUIRE(decode_same(public_desc, full),
                       "decode and the full decode read differently");
    } else {
        DECODE_REQUIRE(public_desc == NULL, "a refused decode wrote its out-parameter");
        DECODE_REQUIRE(strcmp(hurray_last_error_message(), full_message) == 0,
                       "decode and the full decode give different messages");
    }
    hurray_descriptor_destroy(&public_desc);
    hurray_descriptor_destroy(&full);
    hurray_descriptor_destroy(&quick);
}

#endif /* HURRAY_TESTS_DECODE_COMPARE_H */
