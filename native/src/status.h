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

#if defined(__GNUC__) || defined(__clang__)
#define HURRAY__PRINTF_LIKE(fmt_index, first_arg) \
    __attribute__((format(printf, fmt_index, first_arg)))
#else
#define HURRAY__PRINTF_LIKE(fmt_index, first_arg)
#endif

/* Size of the per-thread message buffer, terminator included. Longer
 * messages are truncated. */
#define HURRAY__MESSAGE_CAPACITY 512

/* Formats the message (printf-style) into this thread's buffer and returns
 * status unchanged. */
HurrayStatus hurray__fail(HurrayStatus status, const char *fmt, ...)
    HURRAY__PRINTF_LIKE(2, 3);

#endif /* HURRAY_STATUS_INTERNAL_H */
