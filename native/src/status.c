/*
 * status.c -- status names, the library's ABI version, and the per-thread
 * message that explains the last failure.
 */
#include "status.h"

#include "hurray_io.h" /* hurray_last_error_errno */

#include <stdarg.h>
#include <stdio.h>

/* One buffer per thread: a failure on one thread never overwrites the
 * message another thread is about to read. Zero-initialised, so it reads as
 * "" until the thread's first failure. Successful calls leave it alone: it
 * describes the last failure, not the last call. */
static _Thread_local char last_message[HURRAY__MESSAGE_CAPACITY];

/* The errno behind the last failure when the operating system refused
 * something (hurray__fail_os); every other failure sets it to 0, so it never
 * describes an older failure than the message does. */
static _Thread_local int last_errno;

static void record(HurrayStatus status, const char *fmt, va_list args)
{
    int written = vsnprintf(last_message, sizeof last_message, fmt, args);
    if (written < 0) {
        /* An encoding error must still leave a non-empty message behind. */
        snprintf(last_message, sizeof last_message, "%s (message could not be formatted)",
                 hurray_status_name(status));
    }
}

HurrayStatus hurray__fail(HurrayStatus status, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    record(status, fmt, args);
    va_end(args);
    last_errno = 0;
    return status;
}

HurrayStatus hurray__fail_os(HurrayStatus status, int err, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    record(status, fmt, args);
    va_end(args);
    last_errno = err;
    return status;
}

int hurray_last_error_errno(void)
{
    return last_errno;
}

const char *hurray_last_error_message(void)
{
    return last_message;
}

uint32_t hurray_c_abi_version(void)
{
    return HURRAY_C_ABI_VERSION;
}

const char *hurray_status_name(HurrayStatus status)
{
    /* A switch over the value, not a table index: a value from a newer
     * library (or garbage) must not index past anything. */
    switch (status) {
    case HURRAY_OK: return "HURRAY_OK";
    case HURRAY_ERROR_NULL_ARGUMENT: return "HURRAY_ERROR_NULL_ARGUMENT";
    case HURRAY_ERROR_INVALID_ARGUMENT: return "HURRAY_ERROR_INVALID_ARGUMENT";
    case HURRAY_ERROR_OUT_OF_RANGE: return "HURRAY_ERROR_OUT_OF_RANGE";
    case HURRAY_ERROR_OVERFLOW: return "HURRAY_ERROR_OVERFLOW";
    case HURRAY_ERROR_NO_MEMORY: return "HURRAY_ERROR_NO_MEMORY";
    case HURRAY_ERROR_NOT_A_CONTEXT: return "HURRAY_ERROR_NOT_A_CONTEXT";
    case HURRAY_ERROR_ABI_VERSION: return "HURRAY_ERROR_ABI_VERSION";
    case HURRAY_ERROR_INVALID_DESCRIPTOR: return "HURRAY_ERROR_INVALID_DESCRIPTOR";
    case HURRAY_ERROR_UNSUPPORTED: return "HURRAY_ERROR_UNSUPPORTED";
    case HURRAY_ERROR_BUFFER_TOO_SMALL: return "HURRAY_ERROR_BUFFER_TOO_SMALL";
    case HURRAY_ERROR_NOT_FOUND: return "HURRAY_ERROR_NOT_FOUND";
    case HURRAY_ERROR_IO: return "HURRAY_ERROR_IO";
    case HURRAY_ERROR_CORRUPT: return "HURRAY_ERROR_CORRUPT";
    case HURRAY_ERROR_CHECKSUM: return "HURRAY_ERROR_CHECKSUM";
    }
    return "HURRAY_ERROR_UNKNOWN";
}
