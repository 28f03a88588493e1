/*
 * test_adr034_decls.c -- ADR-034 section 1, verbatim.
 *
 * The typedef and the four declarations below are copied exactly as the
 * ADR writes them. Compiling this file after hurray.h (with -Werror)
 * proves the header declares the same types and signatures: any
 * difference is a conflicting-types error.
 */
#include "hurray.h"

/* ---- copied from ADR-034 section 1 ---- */
typedef struct HurrayTensorContext HurrayTensorContext;

HurrayStatus hurray_tensor_context_new(uint32_t abi_version, const uint8_t *descriptor_bytes,
                                       uint64_t descriptor_len, void *owner,
                                       void (*owner_release)(void *owner),
                                       struct HurrayTensorContext **out);

HurrayStatus hurray_tensor_context_abi_version(const struct HurrayTensorContext *ctx,
                                               uint32_t *out);
HurrayStatus hurray_tensor_context_descriptor(const struct HurrayTensorContext *ctx,
                                              const uint8_t **out_bytes, uint64_t *out_len);
void hurray_tensor_context_destroy(struct HurrayTensorContext **ctx);
/* ---- end of copy ---- */

/* ADR-034 section 6 set the version to 4, and ADR-059 moved it to 5; the
 * four functions above are unchanged, and version-4 contexts are still made. */
_Static_assert(HURRAY_C_ABI_VERSION == 5, "ADR-059: HURRAY_C_ABI_VERSION is 5");
_Static_assert(HURRAY_C_ABI_MIN_VERSION == 4, "ADR-059: contexts of version 4 are still made");

/* Taking each function's address with the ADR's exact pointer type fails
 * to compile if the header's type differs in any parameter. */
HurrayStatus (*const adr034_new)(uint32_t, const uint8_t *, uint64_t, void *, void (*)(void *),
                                 struct HurrayTensorContext **) = hurray_tensor_context_new;
HurrayStatus (*const adr034_abi_version)(const struct HurrayTensorContext *,
                                         uint32_t *) = hurray_tensor_context_abi_version;
HurrayStatus (*const adr034_descriptor)(const struct HurrayTensorContext *, const uint8_t **,
                                        uint64_t *) = hurray_tensor_context_descriptor;
void (*const adr034_destroy)(struct HurrayTensorContext **) = hurray_tensor_context_destroy;
