/*
 * check.h -- the assertion macros of the C test programs in tests/c/.
 *
 * A failed check prints where it failed and the thread's last error message,
 * then exits with status 1. Every passed check is counted (atomically: the
 * checks may run on several threads); checks_report() prints the count as
 * the program's last line, "NAME: N checks passed", which the Python side
 * (tests/support/cbuild.py) reads. Include it once, from the program's one
 * source file, after hurray.h.
 */
#ifndef HURRAY_TESTS_CHECK_H
#define HURRAY_TESTS_CHECK_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_ulong checks_passed;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n  last error: \"%s\"\n", __FILE__, __LINE__, \
                    #cond, hurray_last_error_message());                                           \
            exit(1);                                                                               \
        }                                                                                          \
        atomic_fetch_add(&checks_passed, 1);                                                       \
    } while (0)

/* The call returns the expected status. */
#define CHECK_STATUS(call, expected)                                            \
    do {                                                                        \
        HurrayStatus got_ = (call);                                             \
        if (got_ != (expected)) {                                               \
            fprintf(stderr,                                                     \
                    "%s:%d: %s returned %s, expected %s\n  last error: "        \
                    "\"%s\"\n",                                                 \
                    __FILE__, __LINE__, #call, hurray_status_name(got_),        \
                    hurray_status_name(expected), hurray_last_error_message()); \
            exit(1);                                                            \
        }                                                                       \
        atomic_fetch_add(&checks_passed, 1);                                    \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, HURRAY_OK)

/* The call fails with the expected status and leaves a message that
 * contains the given words (typically the offending argument's name). */
#define CHECK_FAIL(call, expected, words)                                               \
    do {                                                                                \
        CHECK_STATUS(call, expected);                                                   \
        CHECK(hurray_last_error_message() != NULL);                                     \
        CHECK(hurray_last_error_message()[0] != '\0');                                  \
        if (strstr(hurray_last_error_message(), (words)) == NULL) {                     \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, \
                    hurray_last_error_message(), (words));                              \
            exit(1);                                                                    \
        }                                                                               \
        atomic_fetch_add(&checks_passed, 1);                                            \
    } while (0)

/* The program's last line of output. */
static inline void checks_report(const char *program)
{
    printf("%s: %lu checks passed\n", program, atomic_load(&checks_passed));
}

#endif
