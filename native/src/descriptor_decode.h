/*
 * descriptor_decode.h -- internal: the two ways decode reads bytes.
 * hurray_descriptor_decode asks the quick path (descriptor_decode.c,
 * ADR-047) first and, when it declines, the full decode
 * (descriptor_decode_full.c). The tests and the fuzzer call each on its own
 * to compare them.
 */
#ifndef HURRAY_DESCRIPTOR_DECODE_INTERNAL_H
#define HURRAY_DESCRIPTOR_DECODE_INTERNAL_H

#include <stdint.h>

#include "descriptor.h"
#include "hurray.h"

/* The descriptor bytes[0 .. len) encode, checked (verdict and facts
 * kept), when they are a plain, affine or GGML encoding of the forms the
 * quick path covers and every rule holds. NULL otherwise: an invalid
 * encoding, a valid one it leaves to the full decode, or no memory; no
 * message is set. Reads nothing outside bytes[0 .. len); bytes is not NULL. */
HurrayDescriptor *hurray__descriptor_decode_quick(const uint8_t *bytes, uint64_t len);

/* hurray_descriptor_decode without the quick path: every byte read into the
 * struct, then the quick acceptance or every rule, with a message naming
 * the first fault. bytes and out are not NULL. */
HurrayStatus hurray__descriptor_decode_full(const uint8_t *bytes, uint64_t len,
                                            HurrayDescriptor **out);

#endif /* HURRAY_DESCRIPTOR_DECODE_INTERNAL_H */
