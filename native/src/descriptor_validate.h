/*
 * descriptor_validate.h -- internal: every semantic rule of a descriptor
 * (descriptor_validate.c), and the one check decode, encode and
 * check_buffers run: the quick path (descriptor_accept.h) first, then, if it
 * declines, every rule.
 */
#ifndef HURRAY_DESCRIPTOR_VALIDATE_INTERNAL_H
#define HURRAY_DESCRIPTOR_VALIDATE_INTERNAL_H

#include <stdint.h>

#include "descriptor.h"
#include "descriptor_accept.h"
#include "descriptor_reach.h"
#include "hurray.h"

/* hurray__descriptor_check, giving the facts: those the descriptor keeps
 * when it is checked already; else the quick path first, then, if it
 * declines, the full check, and on success the descriptor keeps the
 * verdict and the facts (desc->facts). out may be NULL: the facts are then
 * only kept, which is what decode wants. */
HurrayStatus hurray__descriptor_check_facts(const HurrayDescriptor *desc,
                                            HurrayDescriptorFacts *out);

/* The same check, every rule in the spec's order, without first asking
 * hurray__descriptor_accept: what check_facts falls back to, and what the
 * tests compare the quick answer with. */
HurrayStatus hurray__descriptor_check_rules(const HurrayDescriptor *desc,
                                            HurrayDescriptorFacts *out);

/* The same facts, without recording anything in the descriptor: those it
 * keeps when it is checked already, else a check of its own. Any number of
 * threads may run it at once on one descriptor (hurray_dequantize_rows
 * does), as long as none changes or checks the descriptor meanwhile. */
HurrayStatus hurray__descriptor_check_facts_quietly(const HurrayDescriptor *desc,
                                                    HurrayDescriptorFacts *out);

/* hurray_descriptor_check_buffers on facts already found. */
HurrayStatus hurray__descriptor_check_buffers_with(const HurrayDescriptor *desc,
                                                   const HurrayBufferList *list,
                                                   const HurrayDescriptorFacts *facts);

/* Every semantic rule of the spec, on a non-NULL descriptor; the one check
 * that decode, validate, encode and check_buffers all run. Fails with a
 * message that names the field. A descriptor that passed once carries the
 * fact (desc->checked) until a setter changes it, and is not checked again.
 * Inline, so that the answer for a checked descriptor costs one load. */
static inline HurrayStatus hurray__descriptor_check(const HurrayDescriptor *desc)
{
    if (desc->checked) {
        return HURRAY_OK;
    }
    return hurray__descriptor_check_facts(desc, NULL);
}

/* The buffer count k: the parts' buffer indices must be exactly 0 .. k-1.
 * Fails with HURRAY_ERROR_INVALID_DESCRIPTOR on a gap. */
HurrayStatus hurray__descriptor_buffer_indices(const HurrayDescriptor *desc, uint32_t *out_count);

#endif /* HURRAY_DESCRIPTOR_VALIDATE_INTERNAL_H */
