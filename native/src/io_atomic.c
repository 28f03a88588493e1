/*
 * io_atomic.c -- HurrayAtomicFile: a file replaced whole or not at all, the
 * one routine behind every Hurray writer (hurray_io.h; ADR-039 § 6, ADR-050,
 * ADR-056).
 *
 * The bytes go to a temporary file beside the target: where the file system
 * allows, one with no name (O_TMPFILE), which a writer killed outright
 * cannot leave behind; else BASE.hurray-tmp-PID-N, created O_EXCL. Either
 * is made with mode 0666 (so the umask applies, as for any new file) and
 * locked with flock for as long as it exists. finish fdatasyncs it, names it
 * (BASE.hurray-tmp-PID-N), renames it over the target and fsyncs the
 * directory; until then nothing touches the target, and a reader that has
 * the old file open or mapped keeps the old bytes. A writer that fails, or
 * is destroyed unfinished, removes its temporary; a named one whose writer
 * was killed is removed by the next writer in that directory (or `python -m
 * hurray clean`) once nothing holds its lock and no process PID is left.
 */
#define _GNU_SOURCE
#include "io_path.h"
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

struct HurrayAtomicFile {
    uint8_t *stage;  /* REGION bytes: what has come since the last region boundary */
    size_t staged;   /* bytes in stage; the file itself always ends at a region boundary */
    int fd;          /* the temporary; -1 once finished */
    int replaced_fd; /* the file finish renamed over, held until destroy; -1 if none */
    int named;       /* the temporary has its name on disk (O_TMPFILE's has none until finish) */
    int failed;      /* a write, sync or rename failed: finish refuses */
    int finished;
    int err; /* errno of the first failure, 0 if none */
    uint64_t pos;
    uint64_t flushed; /* bytes before this offset have had their writeback started */
    char *target;     /* the path after its symlinks */
    char *directory;  /* the target's directory, "." for a bare name */
    char *temp;
};

/* The mark of Hurray's temporaries; hurray_atomic_file_clean removes no
 * other names. */
#define TEMP_MARK ".hurray-tmp-"

/* The target's name is cut to this many bytes in the temporary's name, so
 * that name plus mark, PID and counter stay under NAME_MAX (255). */
#define TEMP_BASE_MAX 200

/* Writeback is started every this many bytes (see start_writeback). */
#define WRITEBACK_STEP ((uint64_t)4 << 20)

/* Every write(2) starts and ends at a multiple of this many bytes of the
 * file (but the last): the page cache then holds the file in 2 MiB folios,
 * which a reader's mapping maps with one page-table entry each (a huge
 * page) instead of 512, so taking a 4 MiB tensor from a mapped file costs a
 * few faults instead of a thousand (ADR-058). Small writes gather in a
 * staging buffer of this size; large ones go out from the caller's memory,
 * with the staged bytes in front of them in one writev. */
#define REGION ((size_t)2 << 20)

static HurrayStatus failed_os(HurrayAtomicFile *f, int err, const char *what)
{
    f->failed = 1;
    if (f->err == 0) {
        f->err = err;
    }
    return hurray__fail_os(HURRAY_ERROR_IO, err, "cannot %s the temporary file of '%s': %s", what,
                           f->target, strerror(err));
}

/* ---- the temporary's name ------------------------------------------------ */

/* directory ("." for a bare name) and the start of the last component. */
static HurrayStatus split(HurrayAtomicFile *f, const char **out_base)
{
    const char *slash = strrchr(f->target, '/');
    const char *base = slash == NULL ? f->target : slash + 1;
    size_t dir_len = slash == NULL ? 0 : (size_t)(slash - f->target);
    f->directory = malloc(dir_len + 2);
    if (f->directory == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_atomic_file_open: cannot allocate");
    }
    if (slash == NULL) {
        strcpy(f->directory, ".");
    } else if (dir_len == 0) {
        strcpy(f->directory, "/");
    } else {
        memcpy(f->directory, f->target, dir_len);
        f->directory[dir_len] = '\0';
    }
    *out_base = base;
    return HURRAY_OK;
}

/* The target's name, at most TEMP_BASE_MAX bytes of it and never ending
 * inside a UTF-8 sequence. */
static size_t base_len(const char *base)
{
    size_t n = strlen(base);
    if (n <= TEMP_BASE_MAX) {
        return n;
    }
    n = TEMP_BASE_MAX;
    while (n > 0 && ((unsigned char)base[n] & 0xC0) == 0x80) {
        n--;
    }
    return n;
}

/* The next temporary name, BASE.hurray-tmp-PID-N beside the target, in f->temp. */
static void next_name(HurrayAtomicFile *f, size_t room, const char *base)
{
    static atomic_uint counter;
    size_t prefix = (size_t)(base - f->target);
    snprintf(f->temp, room, "%.*s%.*s%s%ld-%u", (int)prefix, f->target, (int)base_len(base), base,
             TEMP_MARK, (long)getpid(), atomic_fetch_add(&counter, 1));
}

/* Held until the temporary is renamed or removed: a cleaner that can take
 * the lock knows the writer is gone. Where flock is not supported the file
 * is simply not cleaned by others. */
static void lock(int fd)
{
    (void)flock(fd, LOCK_EX | LOCK_NB);
}

static HurrayStatus create_temp(HurrayAtomicFile *f, const char *base)
{
    size_t room = (size_t)(base - f->target) + base_len(base) + sizeof TEMP_MARK + 48;
    f->temp = malloc(room);
    if (f->temp == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_atomic_file_open: cannot allocate");
    }
    next_name(f, room, base);
#if defined(O_TMPFILE) && !defined(HURRAY_NO_O_TMPFILE)
    /* A file with no name in the target's directory: a writer killed
     * before finish leaves nothing behind, the kernel frees it. finish
     * links it under a temporary name and renames that over the target.
     * Where the file system has no O_TMPFILE, a named temporary. */
    f->fd = -1;
    if (access("/proc/self/fd", F_OK) == 0) { /* linking it at finish needs /proc */
        f->fd = open(f->directory, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
    }
    if (f->fd >= 0) {
        lock(f->fd);
        return HURRAY_OK;
    }
#endif
    for (int attempt = 0; attempt < 100; attempt++) {
        f->fd = open(f->temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (f->fd >= 0) {
            f->named = 1;
            lock(f->fd);
            return HURRAY_OK;
        }
        if (errno != EEXIST) {
            int err = errno;
            return hurray__fail_os(HURRAY_ERROR_IO, err,
                                   "hurray_atomic_file_open: cannot create '%s': %s", f->temp,
                                   strerror(err));
        }
        next_name(f, room, base);
    }
    return hurray__fail_os(HURRAY_ERROR_IO, EEXIST,
                           "hurray_atomic_file_open: no free temporary name beside '%s'",
                           f->target);
}

/* Gives an O_TMPFILE temporary its name, so that rename can put it in the
 * target's place: linkat through /proc/self/fd (no privilege needed), else
 * AT_EMPTY_PATH (which needs CAP_DAC_READ_SEARCH). */
static HurrayStatus name_temp(HurrayAtomicFile *f)
{
    if (f->named) {
        return HURRAY_OK;
    }
    const char *base = strrchr(f->target, '/');
    base = base == NULL ? f->target : base + 1;
    size_t room = (size_t)(base - f->target) + base_len(base) + sizeof TEMP_MARK + 48;
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
    int err = 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        int rc = linkat(AT_FDCWD, proc, AT_FDCWD, f->temp, AT_SYMLINK_FOLLOW);
#ifdef AT_EMPTY_PATH
        if (rc != 0 && errno != EEXIST) { /* no /proc: the privileged way */
            rc = linkat(f->fd, "", AT_FDCWD, f->temp, AT_EMPTY_PATH);
        }
#endif
        if (rc == 0) {
            f->named = 1;
            return HURRAY_OK;
        }
        err = errno;
        if (err != EEXIST) {
            break;
        }
        next_name(f, room, base);
    }
    f->failed = 1;
    f->err = f->err ? f->err : err;
    return hurray__fail_os(HURRAY_ERROR_IO, err,
                           "hurray_atomic_file_finish: cannot give the temporary file of '%s' a "
                           "name: %s",
                           f->target, strerror(err));
}

/* ---- cleaning ------------------------------------------------------------ */

/* The PID in a name BASE.hurray-tmp-PID-N, or 0 when name is not of that
 * form. */
static long temp_pid(const char *name)
{
    const char *mark = NULL;
    for (const char *p = strstr(name, TEMP_MARK); p != NULL; p = strstr(p + 1, TEMP_MARK)) {
        mark = p;
    }
    if (mark == NULL || mark == name) {
        return 0;
    }
    const char *p = mark + sizeof TEMP_MARK - 1;
    long pid = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) {
        pid = pid * 10 + (*p - '0');
    }
    if (digits == 0 || *p != '-' || pid <= 0) {
        return 0;
    }
    p++;
    digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 10; p++, digits++) {
    }
    return digits > 0 && *p == '\0' ? pid : 0;
}

/* 1 when the temporary `name` in directory dfd belongs to a writer that is
 * gone: no process has its PID (ESRCH; EPERM means one exists) and nothing
 * holds its lock (which also covers a live writer in another PID namespace). */
static int abandoned(int dfd, const char *name, long pid, struct stat *out_st)
{
    if (pid == (long)getpid() || kill((pid_t)pid, 0) == 0 || errno != ESRCH) {
        return 0;
    }
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    int ok = fstat(fd, out_st) == 0 && S_ISREG(out_st->st_mode) &&
             flock(fd, LOCK_EX | LOCK_NB) == 0;
    close(fd);
    return ok;
}

/* Removes the abandoned temporaries of directory; the number removed, or -1
 * with errno set when the directory cannot be read. Records no message: the
 * writer calls it on the side. */
static long clean_directory(const char *directory)
{
    DIR *d = opendir(directory);
    if (d == NULL) {
        return -1;
    }
    int dfd = dirfd(d);
    long removed = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        long pid = temp_pid(entry->d_name);
        struct stat held, now;
        if (pid == 0 || !abandoned(dfd, entry->d_name, pid, &held)) {
            continue;
        }
        /* The name must still be the file whose lock was free. */
        if (fstatat(dfd, entry->d_name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
            now.st_dev == held.st_dev && now.st_ino == held.st_ino &&
            unlinkat(dfd, entry->d_name, 0) == 0) {
            removed++;
        }
    }
    closedir(d);
    return removed;
}

HurrayStatus hurray_atomic_file_clean(const char *directory, uint64_t *out_removed)
{
    if (directory == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_atomic_file_clean: directory is NULL");
    }
    long removed = clean_directory(directory);
    if (removed < 0) {
        int err = errno;
        return hurray__fail_os(HURRAY_ERROR_IO, err,
                               "hurray_atomic_file_clean: cannot read '%s': %s", directory,
                               strerror(err));
    }
    if (out_removed != NULL) {
        *out_removed = (uint64_t)removed;
    }
    return HURRAY_OK;
}

/* ---- open, write, finish, destroy ---------------------------------------- */

HurrayStatus hurray_atomic_file_open(const char *path, HurrayAtomicFile **out)
{
    if (path == NULL || out == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT,
                            "hurray_atomic_file_open: path or out is NULL");
    }
    *out = NULL;
    HurrayAtomicFile *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return hurray__fail(HURRAY_ERROR_NO_MEMORY, "hurray_atomic_file_open: cannot allocate");
    }
    f->fd = -1;
    f->replaced_fd = -1;
    struct stat st;
    int exists = 0;
    const char *base = NULL;
    HurrayStatus status = hurray__path_resolve_target("hurray_atomic_file_open", path, &f->target,
                                                      &st, &exists);
    if (status == HURRAY_OK) status = split(f, &base);
    if (status == HURRAY_OK) {
        (void)clean_directory(f->directory); /* on the side: a failure here changes nothing */
        status = create_temp(f, base);
    }
    if (status == HURRAY_OK && exists) {
        /* Replacing a file keeps what open(2) would have kept: its owner
         * (where this process may give it) and its permission bits. */
        if (st.st_uid != geteuid() || st.st_gid != getegid()) {
            (void)fchown(f->fd, st.st_uid, st.st_gid);
        }
        (void)fchmod(f->fd, st.st_mode & 07777);
    }
    if (status != HURRAY_OK) {
        hurray_atomic_file_destroy(&f);
        return status;
    }
    *out = f;
    return HURRAY_OK;
}

/* Starts writing what was written since the last call back to the disk,
 * without waiting for it, once WRITEBACK_STEP bytes have gathered: the disk
 * works while the next bytes are written, whatever the tensors' sizes, and
 * the fdatasync in finish has only the tail left to wait for (a 256 MiB
 * save: about a quarter faster; ADR-050). Only a hint: an I/O error still
 * surfaces at fdatasync, and where there is no sync_file_range nothing
 * changes but the speed. */
static void start_writeback(HurrayAtomicFile *f)
{
    /* Whole 4 KiB blocks only: a partly written block would go out twice. */
    uint64_t end = f->pos & ~(uint64_t)4095;
    if (end < f->flushed || end - f->flushed < WRITEBACK_STEP) {
        return;
    }
#ifdef __linux__
    (void)sync_file_range(f->fd, (off_t)f->flushed, (off_t)(end - f->flushed),
                          SYNC_FILE_RANGE_WRITE);
#endif
    f->flushed = end;
}

static HurrayStatus usable(const char *fn, const HurrayAtomicFile *f)
{
    if (f == NULL) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "%s: file is NULL", fn);
    }
    if (f->finished) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT, "%s: the file is already finished", fn);
    }
    if (f->failed) {
        return hurray__fail_os(HURRAY_ERROR_IO, f->err,
                               "%s: an earlier write to '%s' failed (%s); the file cannot be "
                               "finished",
                               fn, f->temp, strerror(f->err));
    }
    return HURRAY_OK;
}

/* Writes the iovecs whole (a short writev continues where it stopped). */
static HurrayStatus write_vectors(HurrayAtomicFile *f, struct iovec *v, int count)
{
    while (count > 0) {
        ssize_t done = writev(f->fd, v, count);
        if (done < 0 && errno == EINTR) {
            continue;
        }
        if (done <= 0) {
            /* write(2) of a regular file returns 0 only for nothing asked;
             * treat it as the disk refusing, never as a reason to spin. */
            return failed_os(f, done < 0 ? errno : EIO, "write");
        }
        f->pos += (uint64_t)done;
        while (count > 0 && (size_t)done >= v->iov_len) {
            done -= (ssize_t)v->iov_len;
            v++;
            count--;
        }
        if (count > 0) {
            v->iov_base = (uint8_t *)v->iov_base + done;
            v->iov_len -= (size_t)done;
        }
        start_writeback(f);
    }
    return HURRAY_OK;
}

HurrayStatus hurray_atomic_file_write(HurrayAtomicFile *file, const void *data, uint64_t len)
{
    HURRAY__TRY(usable("hurray_atomic_file_write", file));
    if (data == NULL && len != 0) {
        return hurray__fail(HURRAY_ERROR_NULL_ARGUMENT, "hurray_atomic_file_write: data is NULL");
    }
    if (len > UINT64_MAX - REGION) {
        return hurray__fail(HURRAY_ERROR_INVALID_ARGUMENT,
                            "hurray_atomic_file_write: %llu bytes is no length of memory",
                            (unsigned long long)len);
    }
    if (file->stage == NULL) {
        file->stage = malloc(REGION);
        if (file->stage == NULL) {
            return hurray__fail(HURRAY_ERROR_NO_MEMORY,
                                "hurray_atomic_file_write: cannot allocate");
        }
    }
    const uint8_t *p = data;
    while (len > 0) {
        if (file->staged + len < REGION) {
            memcpy(file->stage + file->staged, p, (size_t)len);
            file->staged += (size_t)len;
            return HURRAY_OK;
        }
        /* The staged bytes and as much of p as ends on a region boundary,
         * in one call (at most 1 GiB of p at a time). */
        uint64_t whole = ((file->staged + len) / REGION) * REGION;
        if (whole > ((uint64_t)1 << 30)) {
            whole = (uint64_t)1 << 30;
        }
        size_t take = (size_t)(whole - file->staged);
        struct iovec v[2] = {{file->stage, file->staged}, {(void *)p, take}};
        HURRAY__TRY(file->staged ? write_vectors(file, v, 2) : write_vectors(file, v + 1, 1));
        file->staged = 0;
        p += take;
        len -= take;
    }
    return HURRAY_OK;
}

static HurrayStatus sync_directory(HurrayAtomicFile *f)
{
    int fd = open(f->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        return hurray__fail_os(HURRAY_ERROR_IO, err,
                               "hurray_atomic_file_finish: cannot open the directory of '%s': %s",
                               f->target, strerror(err));
    }
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    /* Some file systems cannot sync a directory; the rename is still done. */
    if (rc != 0 && err != EINVAL && err != EROFS) {
        return hurray__fail_os(HURRAY_ERROR_IO, err,
                               "hurray_atomic_file_finish: cannot sync the directory of '%s': %s",
                               f->target, strerror(err));
    }
    return HURRAY_OK;
}

/* A reference to the file at path (if any) that keeps it alive after the
 * rename drops its last name: the kernel then frees its blocks (and, on a
 * file system mounted with discard and no journal, waits for the device to
 * trim them: 40 ms for 256 MiB here) at destroy, not inside the rename.
 * O_PATH needs no permission to read the file; without it, nothing is held
 * and the rename frees the file as before. */
static int hold_replaced(const char *path)
{
#ifdef O_PATH
    return open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
#else
    (void)path;
    return -1;
#endif
}

HurrayStatus hurray_atomic_file_finish(HurrayAtomicFile *file)
{
    HURRAY__TRY(usable("hurray_atomic_file_finish", file));
    if (file->staged > 0) {
        struct iovec tail = {file->stage, file->staged};
        HURRAY__TRY(write_vectors(file, &tail, 1));
        file->staged = 0;
    }
    /* fdatasync writes the data and the metadata needed to read it back
     * (size, block map), which is all the rename needs: the new name must
     * never point at a file whose bytes are not on the disk. Timestamps are
     * not needed. The directory fsync below makes the rename itself last. */
    if (fdatasync(file->fd) != 0) {
        return failed_os(file, errno, "sync");
    }
    HURRAY__TRY(name_temp(file));
    int held = hold_replaced(file->target);
    if (rename(file->temp, file->target) != 0) {
        int err = errno;
        if (held >= 0) {
            close(held);
        }
        file->failed = 1;
        file->err = file->err ? file->err : err;
        return hurray__fail_os(HURRAY_ERROR_IO, err,
                               "hurray_atomic_file_finish: cannot rename '%s' to '%s': %s",
                               file->temp, file->target, strerror(err));
    }
    /* Closed after the rename, so the lock covers the temporary for as long
     * as its name exists. The data is synced: close cannot lose it. */
    close(file->fd);
    file->fd = -1;
    file->replaced_fd = held;
    file->finished = 1;
    return sync_directory(file);
}

void hurray_atomic_file_destroy(HurrayAtomicFile **file)
{
    if (file == NULL || *file == NULL) {
        return;
    }
    HurrayAtomicFile *f = *file;
    *file = NULL;
    if (!f->finished && f->fd >= 0 && f->named) {
        unlink(f->temp); /* while its lock is held: no cleaner can mistake it */
    }
    if (f->fd >= 0) {
        close(f->fd);
    }
    if (f->replaced_fd >= 0) {
        close(f->replaced_fd); /* the last reference: the replaced file is freed now */
    }
    free(f->stage);
    free(f->target);
    free(f->directory);
    free(f->temp);
    free(f);
}

int hurray__atomic_file_errno(const HurrayAtomicFile *file)
{
    return file->err;
}

const char *hurray__atomic_file_target(const HurrayAtomicFile *file)
{
    return file->target;
}
