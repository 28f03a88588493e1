/*
 * io_path.h -- internal: the path policy (io_path.c) and the atomic file
 * (io_atomic.c) as the reader and writer use them. Not part of the ABI.
 */
#ifndef HURRAY_IO_PATH_H
#define HURRAY_IO_PATH_H

#include "hurray_io.h"

#include <stdint.h>
#include <sys/stat.h>

/* open(2) of path for reading under the policy: a regular file, opened
 * without blocking on a FIFO, then made blocking. fn names the caller in a
 * refusal. */
HurrayStatus hurray__path_open_read(const char *fn, const char *path, int *out_fd,
                                    uint64_t *out_size);

/* What writing `path` replaces: the path after its symlinks (each followed
 * as open(2) would, relative ones from the link's directory), in new memory
 * for the caller to free. *out_exists is 1 and *out_st its lstat when a
 * regular file is there, 0 when nothing is; anything else is refused. */
HurrayStatus hurray__path_resolve_target(const char *fn, const char *path, char **out_target,
                                         struct stat *out_st, int *out_exists);

/* A malloc'd copy of s, or NULL. */
char *hurray__path_copy(const char *s);

/* The errno of the atomic file's first failed write, sync or rename (0 if
 * none), so that a caller who wrote through a callback can repeat what the
 * operating system said. */
int hurray__atomic_file_errno(const HurrayAtomicFile *file);

/* The path the file replaces, after its symlinks (for messages). */
const char *hurray__atomic_file_target(const HurrayAtomicFile *file);

#endif /* HURRAY_IO_PATH_H */
