/*
 * io_path.c -- the one path policy of every Hurray function that takes a
 * path (hurray_io.h, "paths"; docs/security.md; ADR-056).
 *
 * Reading: symlinks are followed, as open(2) follows them; anything but a
 * regular file is refused, and refused without blocking: a FIFO's open(2)
 * waits for a writer, so every path is opened O_NONBLOCK, checked with
 * fstat, and only then made blocking again. Writing: the target is what the
 * path names after its symlinks (resolve_target below), a regular file or
 * nothing yet; its directory gets the temporary file (io_atomic.c).
 */
#define _GNU_SOURCE
#include "io_path.h"
#include "status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a path names, in words, for a refusal. */
static const char *kind_of(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

/* The errno a refusal of a non-regular file carries: a directory is EISDIR,
 * as open(2) would say for writing; the rest have no errno of their own. */
static int errno_of(mode_t mode)
{
    return S_ISDIR(mode) ? EISDIR : EINVAL;
}

HurrayStatus hurray__path_open_read(const char *fn, const char *path, int *out_fd,
                                    uint64_t *out_size)
{
    *out_fd = -1;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return hurray__fail_os(HURRAY_ERROR_IO, err, "%s: cannot open '%s': %s", fn, path,
                               strerror(err));
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int err = errno;
        close(fd);
        return hurray__fail_os(HURRAY_ERROR_IO, err, "%s: cannot stat '%s': %s", fn, path,
                               strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return hurray__fail_os(HURRAY_ERROR_IO, errno_of(st.st_mode),
                               "%s: '%s' is %s, not a regular file", fn, path, kind_of(st.st_mode));
    }
    /* A regular file never blocks, but the descriptor is handed on (to
     * Python's mmap, pread loops): it behaves as any other. */
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int err = errno;
        close(fd);
        return hurray__fail_os(HURRAY_ERROR_IO, err, "%s: cannot use '%s': %s", fn, path,
                               strerror(err));
    }
    *out_fd = fd;
    *out_size = (uint64_t)st.st_size;
    return HURRAY_OK;
}

HurrayStatus hurray_io_open_read(const char *path, int *out_fd, uint64_t *out_size)
{
    if (path == NULL || out_fd == NULL || out_size == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_io_open_read: path, out_fd or out_size is NULL");
    }
    return hurray__path_open_read("hurray_io_open_read", path, out_fd, out_size);
}

char *hurray__path_copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (c != NULL) {
        memcpy(c, s, n);
    }
    return c;
}

/* link's target, read with readlink and, when relative, taken from the
 * directory that holds link; NULL with errno set on failure. */
static char *follow(const char *link)
{
    char target[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0) {
        return NULL;
    }
    if (n == (ssize_t)sizeof target - 1) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    target[n] = '\0';
    if (target[0] == '/') {
        return hurray__path_copy(target);
    }
    const char *slash = strrchr(link, '/');
    size_t dir_len = slash == NULL ? 0 : (size_t)(slash - link) + 1;
    char *joined = malloc(dir_len + (size_t)n + 1);
    if (joined == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    memcpy(joined, link, dir_len);
    memcpy(joined + dir_len, target, (size_t)n + 1);
    return joined;
}

/* Symlinks followed at most this many times, as the kernel's own limit
 * (MAXSYMLINKS) for a path: a loop is ELOOP, not a hang. */
#define MAX_LINKS 40

HurrayStatus hurray__path_resolve_target(const char *fn, const char *path, char **out_target,
                                         struct stat *out_st, int *out_exists)
{
    *out_target = NULL;
    *out_exists = 0;
    char *current = hurray__path_copy(path);
    if (current == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "%s: cannot allocate", fn);
    }
    for (int links = 0;; links++) {
        struct stat st;
        if (lstat(current, &st) != 0) {
            int err = errno;
            if (err == ENOENT) { /* nothing there yet: the file is created, as open(2) would */
                *out_target = current;
                return HURRAY_OK;
            }
            free(current);
            return hurray__fail_os(HURRAY_ERROR_IO, err, "%s: cannot look at '%s': %s", fn, path,
                                   strerror(err));
        }
        if (!S_ISLNK(st.st_mode)) {
            if (!S_ISREG(st.st_mode)) {
                HurrayStatus status =
                    hurray__fail_os(HURRAY_ERROR_IO, errno_of(st.st_mode),
                                    "%s: '%s' is %s; only a regular file is replaced", fn, current,
                                    kind_of(st.st_mode));
                free(current);
                return status;
            }
            *out_target = current;
            *out_st = st;
            *out_exists = 1;
            return HURRAY_OK;
        }
        if (links == MAX_LINKS) {
            free(current);
            return hurray__fail_os(HURRAY_ERROR_IO, ELOOP, "%s: '%s': %s", fn, path,
                                   strerror(ELOOP));
        }
        char *next = follow(current);
        if (next == NULL) {
            int err = errno;
            free(current);
            return hurray__fail_os(HURRAY_ERROR_IO, err, "%s: cannot follow the link '%s': %s", fn,
                                   path, strerror(err));
        }
        free(current);
        current = next;
    }
}
