/*
 * descriptor_accept.h -- internal: the quick acceptance path
 * (descriptor_accept.c, ADR-038). Below descriptor_validate.h, which falls
 * back to every rule when this path declines.
 */
#ifndef HURRAY_DESCRIPTOR_ACCEPT_INTERNAL_H
#define HURRAY_DESCRIPTOR_ACCEPT_INTERNAL_H

#include <stdbool.h>

#include "descriptor.h"
#include "descriptor_reach.h"

/* true: every rule holds. false: the full check must decide (the
 * descriptor may still be valid), and a message may have been set, which
 * the full check then replaces. */
bool hurray__descriptor_accept(const HurrayDescriptor *desc);

/* The same verdict; on true, *out is what hurray__descriptor_check_facts
 * gives (for absent roles, before and after are zero). */
bool hurray__descriptor_accept_facts(const HurrayDescriptor *desc, HurrayDescriptorFacts *out);

#endif /* HURRAY_DESCRIPTOR_ACCEPT_INTERNAL_H */
