/*
 * message.c -- the C peer's own failure message, per thread, beside
 * hurray-ffi's (which the peer quotes when the library refused).
 */
#include <stdarg.h>
#include <stdio.h>

#include "peer.h"

static _Thread_local char message[512];

void peer_set_message(const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
}

const char *peer_last_message(void)
{
    return message;
}
