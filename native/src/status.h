/*
 * status.h -- internal: recording a failure.
 *
 * Not part of the ABI. Every public function that fails calls
 * hurray__fail, which stores a message for hurray_last_error_message on the
 * calling thread and hands the status back, so a failure path is one line:
 *
 *     return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: out is NULL", fn);
 */
#ifndef HURRAY_STATUS_INTERNAL_H
#define HURRAY_STATUS_INTERNAL_H

#include "hurray.h"

/* Failures are rare: marking hurray__fail cold lets the compiler keep the
 * successful path of every check straight, which matters on decode, where
 * every rule is checked on every exchange. */
#if defined(__GNUC__) || defined(__clang__)
#define HURRAY__FAILURE_PATH(fmt_index, first_arg) \
    __attribute__((cold, format(printf, fmt_index, first_arg)))
#else
#define HURRAY__FAILURE_PATH(fmt_index, first_arg)
#endif

/* Size of the per-thread message buffer, terminator included. Longer
 * messages are truncated. */
#define HURRAY__MESSAGE_CAPACITY 512

/* Formats the message (printf-style) into this thread's buffer and returns
 * status unchanged. */
HurrayStatus hurray__fail(HurrayStatus status, const char *fmt, ...) HURRAY__FAILURE_PATH(2, 3);

/* The same, for a refusal by the operating system: also records err (an
 * errno value) for hurray_last_error_errno (hurray_io.h), which bindings
 * turn into their own kind of error (Python: FileNotFoundError, ...). The
 * message should still say strerror(err) in words. */
HurrayStatus hurray__fail_os(HurrayStatus status, int err, const char *fmt, ...)
    HURRAY__FAILURE_PATH(3, 4);

/* Returns the status of `expr` from the enclosing function unless it is
 * HURRAY_OK; the message was already recorded by whoever failed. */
#define HURRAY__TRY(expr)                  \
    do {                                   \
        HurrayStatus try_status_ = (expr); \
        if (try_status_ != HURRAY_OK) {    \
            return try_status_;            \
        }                                  \
    } while (0)

#endif /* HURRAY_STATUS_INTERNAL_H */
