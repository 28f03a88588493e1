/*
 * accept_compare.h -- the property the quick acceptance
 * (native/src/descriptor_accept.c) must keep, checked on one descriptor:
 *
 *  - it never says "valid" where the full check, every rule in the spec's
 *    order, refuses;
 *  - when it says "valid", its facts (buffer count, each part's reach) are
 *    the full check's;
 *  - the check decode and encode run (quick path first) answers exactly as
 *    the full check does, with the same message.
 *
 * Shared by tests/c/test_accept.c (a sweep over every field) and
 * fuzz/descriptor_fuzz.c (every input the fuzzer makes). It reads the
 * library's internal header, so both compile the library sources in.
 * Define ACCEPT_REQUIRE(cond, what) before including: a failed property
 * must end the program.
 */
#ifndef HURRAY_TESTS_ACCEPT_COMPARE_H
#define HURRAY_TESTS_ACCEPT_COMPARE_H

#include <string.h>

#include "descriptor_validate.h"

typedef struct AcceptTally {
    unsigned long accepted;       /* the quick path said valid */
    unsigned long declined_valid; /* it left a valid one to the full check */
    unsigned long refused;        /* invalid */
} AcceptTally;

static void accept_compare(const HurrayDescriptor *desc, AcceptTally *tally)
{
    /* The sweep writes fields directly, past the setters that would clear
     * the kept verdict: forget it, so that every answer below is worked out. */
    ((HurrayDescriptor *)desc)->checked = 0;
    HurrayDescriptorFacts quick, full;
    memset(&quick, 0xA5, sizeof quick);
    memset(&full, 0x5A, sizeof full);
    bool verdict = hurray__descriptor_accept(desc);
    bool with_facts = hurray__descriptor_accept_facts(desc, &quick);
    ACCEPT_REQUIRE(verdict == with_facts, "the two quick entry points disagree");

    HurrayStatus rules = hurray__descriptor_check_rules(desc, &full);
    char rules_message[512];
    strncpy(rules_message, hurray_last_error_message(), sizeof rules_message - 1);
    rules_message[sizeof rules_message - 1] = '\0';

    if (verdict) {
        ACCEPT_REQUIRE(rules == HURRAY_OK, "quick path accepts what the full check refuses");
        ACCEPT_REQUIRE(quick.buffer_count == full.buffer_count, "buffer counts differ");
        for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
            if (desc->part_mask & HURRAY__ROLE_BIT(role)) {
                ACCEPT_REQUIRE(quick.before[role - 1] == full.before[role - 1] &&
                                   quick.after[role - 1] == full.after[role - 1],
                               "a part's reach differs");
            }
        }
        tally->accepted++;
    } else if (rules == HURRAY_OK) {
        tally->declined_valid++;
    } else {
        tally->refused++;
    }

    HurrayStatus combined = hurray__descriptor_check(desc);
    ACCEPT_REQUIRE(combined == rules, "check and the full check answer differently");
    if (combined != HURRAY_OK) {
        ACCEPT_REQUIRE(strcmp(hurray_last_error_message(), rules_message) == 0,
                       "check and the full check give different messages");
    }
    ((HurrayDescriptor *)desc)->checked = 0;
    HurrayDescriptorFacts facts;
    ACCEPT_REQUIRE(hurray__descriptor_check_facts(desc, &facts) == rules,
                   "check_facts and the full check answer differently");
    /* A descriptor that passed keeps the verdict and the facts; asked
     * again, it answers from them, and they are the full check's. */
    ACCEPT_REQUIRE((desc->checked != 0) == (rules == HURRAY_OK),
                   "the kept verdict is not the full check's");
    if (rules == HURRAY_OK) {
        HurrayDescriptorFacts kept;
        memset(&kept, 0x3C, sizeof kept);
        ACCEPT_REQUIRE(hurray__descriptor_check_facts(desc, &kept) == HURRAY_OK,
                       "a checked descriptor is refused when asked again");
        ACCEPT_REQUIRE(kept.buffer_count == full.buffer_count, "kept buffer count differs");
        for (uint32_t role = 1; role <= HURRAY_MAX_PARTS; role++) {
            if (desc->part_mask & HURRAY__ROLE_BIT(role)) {
                ACCEPT_REQUIRE(kept.before[role - 1] == full.before[role - 1] &&
                                   kept.after[role - 1] == full.after[role - 1],
                               "a kept reach differs");
            }
        }
    }
}

#endif /* HURRAY_TESTS_ACCEPT_COMPARE_H */
