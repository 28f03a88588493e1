/*
 * descriptor_graph_codes.h -- internal: where a stored node's codes lie and
 * how to read one (descriptor_graph_codes.c), by the addressing rules of
 * descriptor_graph.h. check_buffers reads group-index and gather-index
 * values with it; a dequantizer reads every code with it.
 *
 * Every function here trusts its node: it must have passed the check, and
 * its bytes must have been proven inside `data`'s buffer
 * (hurray_descriptor_check_buffers), so that no position computed here
 * lies outside the buffer or overflows.
 */
#ifndef HURRAY_DESCRIPTOR_GRAPH_CODES_INTERNAL_H
#define HURRAY_DESCRIPTOR_GRAPH_CODES_INTERNAL_H

#include <stdint.h>

#include "descriptor_graph.h"

/* The code of element `flat` (its index in row-major order over the node's
 * shape) of a stored node whose buffer starts at data: its b bits,
 * zero-extended. */
uint64_t hurray__stored_code(const HurrayNode *node, const uint8_t *data, uint64_t flat);

/* A code of an integer dtype as its integer: sign-extended from its b bits
 * for a signed dtype, plus the node's code offset; for an unsigned dtype of
 * 64 bits a code of 2^63 or more does not fit and reads as INT64_MIN (no
 * index is that large). */
int64_t hurray__stored_integer(const HurrayNode *node, uint64_t code);

#endif /* HURRAY_DESCRIPTOR_GRAPH_CODES_INTERNAL_H */
