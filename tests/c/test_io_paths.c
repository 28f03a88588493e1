/*
 * test_io_paths.c -- the path policy and HurrayAtomicFile of hurray_io.h
 * (ADR-056, ADR-057): what a path may name for reading and for writing,
 * without ever blocking on a FIFO; symlinks followed, the link kept; modes
 * as open(2) gives them; temporaries removed on every error path and, when
 * a writer died, by the next one (only Hurray's own names, only of writers
 * that are gone); the errno of a refusal; a write the file system refuses
 * (RLIMIT_FSIZE in a child) reported in the operating system's words; a
 * mapped file cut short under its reader refused, not a SIGBUS; a frame
 * read with pread held to the file's alignment as the mapped reader holds it.
 *
 * Usage: test_io_paths DIR (a scratch directory, emptied by the caller).
 * An alarm ends the program if any call blocks.
 */
#define _GNU_SOURCE
#include "hurray_io.h"

#include "check.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;

static char *path_in(const char *name)
{
    static char paths[8][4096];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 4096, "%s/%s", dir, name);
    return p;
}

static void spit(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fputs(text, f) >= 0);
    CHECK(fclose(f) == 0);
}

/* The whole file, NUL-terminated, in a static buffer. */
static const char *slurp(const char *path)
{
    static char text[4096];
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* Names in dir that hold Hurray's temporary mark. */
static int temporaries(const char *in)
{
    DIR *d = opendir(in);
    CHECK(d != NULL);
    int n = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        n += strstr(entry->d_name, ".hurray-tmp-") != NULL;
    }
    closedir(d);
    return n;
}

/* Replaces path with text through a HurrayAtomicFile. */
static HurrayStatus replace(const char *path, const char *text)
{
    HurrayAtomicFile *f = NULL;
    HurrayStatus status = hurray_atomic_file_open(path, &f);
    if (status == HURRAY_OK) status = hurray_atomic_file_write(f, text, strlen(text));
    if (status == HURRAY_OK) status = hurray_atomic_file_finish(f);
    hurray_atomic_file_destroy(&f);
    CHECK(f == NULL);
    return status;
}

/* A 1-D tensor of n elements of dtype in one buffer of `nbytes`, as the pair
 * the writer takes; the caller destroys both. */
typedef struct Pair {
    HurrayTensorContext *context;
    HurrayBufferList *list;
} Pair;

static Pair one_buffer(uint32_t dtype, uint64_t n, uint64_t nbytes)
{
    uint64_t shape[1] = {n};
    HurrayDescriptor *desc = NULL;
    CHECK_OK(hurray_descriptor_new(dtype, 1, shape, &desc));
    uint8_t bytes[HURRAY_MAX_DESCRIPTOR_LEN];
    uint64_t len;
    CHECK_OK(hurray_descriptor_encode(desc, bytes, sizeof bytes, &len));
    hurray_descriptor_destroy(&desc);
    Pair p = {NULL, NULL};
    HurrayBuffer *buf = NULL;
    CHECK_OK(hurray_tensor_context_new(HURRAY_C_ABI_VERSION, bytes, len, NULL, NULL, &p.context));
    CHECK_OK(hurray_buffer_list_new(&p.list));
    CHECK_OK(hurray_buffer_new(nbytes, 64, &buf));
    CHECK_OK(hurray_buffer_list_push(p.list, &buf));
    return p;
}

static void pair_destroy(Pair *p)
{
    hurray_tensor_context_destroy(&p->context);
    hurray_buffer_list_destroy(&p->list);
}

/* ---- reading --------------------------------------------------------------- */

static void test_open_read(void)
{
    const char *plain = path_in("plain.txt");
    spit(plain, "hello");
    int fd = -1;
    uint64_t size = 0;
    CHECK_OK(hurray_io_open_read(plain, &fd, &size));
    CHECK(size == 5);
    CHECK((fcntl(fd, F_GETFL) & O_NONBLOCK) == 0); /* made blocking again */
    CHECK((fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0); /* never leaked to a child */
    close(fd);

    /* A symlink is followed, as open(2) follows it. */
    const char *link = path_in("link.txt");
    CHECK(symlink("plain.txt", link) == 0);
    CHECK_OK(hurray_io_open_read(link, &fd, &size));
    CHECK(size == 5);
    close(fd);

    CHECK_FAIL(hurray_io_open_read(path_in("missing"), &fd, &size), HURRAY_ERROR_IO,
               "No such file");
    CHECK(hurray_last_error_errno() == ENOENT && fd == -1);
    const char *dangling = path_in("dangling");
    CHECK(symlink("nowhere", dangling) == 0);
    CHECK_FAIL(hurray_io_open_read(dangling, &fd, &size), HURRAY_ERROR_IO, "No such file");
    CHECK(hurray_last_error_errno() == ENOENT);
    const char *loop = path_in("loop");
    CHECK(symlink("loop", loop) == 0);
    CHECK_STATUS(hurray_io_open_read(loop, &fd, &size), HURRAY_ERROR_IO);
    CHECK(hurray_last_error_errno() == ELOOP);
    CHECK_FAIL(hurray_io_open_read(dir, &fd, &size), HURRAY_ERROR_IO, "a directory");
    CHECK(hurray_last_error_errno() == EISDIR);
    CHECK_FAIL(hurray_io_open_read("/dev/null", &fd, &size), HURRAY_ERROR_IO, "a character device");
    CHECK(hurray_last_error_errno() == EINVAL);

    /* A FIFO with no writer: open(2) without O_NONBLOCK would wait forever
     * (the alarm would end the program). */
    const char *fifo = path_in("fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_FAIL(hurray_io_open_read(fifo, &fd, &size), HURRAY_ERROR_IO, "a FIFO");
    HurrayReader *r = NULL;
    CHECK_FAIL(hurray_reader_open(fifo, 0, &r), HURRAY_ERROR_IO, "a FIFO");
    CHECK(r == NULL);
    CHECK_FAIL(hurray_reader_open(dir, 0, &r), HURRAY_ERROR_IO, "a directory");
    CHECK_FAIL(hurray_reader_open(path_in("missing"), 0, &r), HURRAY_ERROR_IO, "No such file");
    CHECK(hurray_last_error_errno() == ENOENT);
    /* A refusal that is not the operating system's carries no errno. */
    CHECK_FAIL(hurray_reader_open(plain, 0, &r), HURRAY_ERROR_CORRUPT, "too short");
    CHECK(hurray_last_error_errno() == 0);

    CHECK_FAIL(hurray_io_open_read(NULL, &fd, &size), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_io_open_read(plain, NULL, &size), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_io_open_read(plain, &fd, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
}

/* ---- writing ------------------------------------------------------------------ */

static void test_modes(void)
{
    const char *path = path_in("moded.txt");
    mode_t old = umask(022);
    CHECK_OK(replace(path, "a"));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644);
    CHECK(unlink(path) == 0);
    umask(027);
    CHECK_OK(replace(path, "a"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640);
    /* Replacing keeps the file's own bits, whatever the umask. */
    CHECK(chmod(path, 0604) == 0);
    CHECK_OK(replace(path, "b"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0604);
    CHECK(strcmp(slurp(path), "b") == 0);
    CHECK(chmod(path, 0755) == 0);
    CHECK_OK(replace(path, "c"));
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0755);
    umask(old);
}

static void test_symlinks(void)
{
    /* Writing through a link replaces the file it names; the link stays. */
    CHECK(mkdir(path_in("real"), 0755) == 0);
    const char *target = path_in("real/model.bin");
    spit(target, "old");
    const char *link = path_in("model-link.bin");
    CHECK(symlink("real/model.bin", link) == 0);
    const char *chain = path_in("chain.bin");
    CHECK(symlink("model-link.bin", chain) == 0);
    CHECK_OK(replace(chain, "new"));
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(chain, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(strcmp(slurp(target), "new") == 0);
    CHECK(temporaries(path_in("real")) == 0 && temporaries(dir) == 0);
    /* A dangling link creates the file it names, as open(2) would. */
    const char *dangling = path_in("to-be.bin");
    CHECK(symlink("real/created.bin", dangling) == 0);
    CHECK_OK(replace(dangling, "made"));
    CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(strcmp(slurp(path_in("real/created.bin")), "made") == 0);
    /* A loop is refused, not followed forever. */
    const char *loop = path_in("wloop");
    CHECK(symlink("wloop", loop) == 0);
    CHECK_STATUS(replace(loop, "x"), HURRAY_ERROR_IO);
    CHECK(hurray_last_error_errno() == ELOOP);
}

static void test_refused_targets(void)
{
    HurrayAtomicFile *f = NULL;
    const char *fifo = path_in("wfifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK_FAIL(hurray_atomic_file_open(fifo, &f), HURRAY_ERROR_IO, "a FIFO");
    CHECK(f == NULL);
    CHECK_FAIL(hurray_atomic_file_open(dir, &f), HURRAY_ERROR_IO, "a directory");
    CHECK(hurray_last_error_errno() == EISDIR);
    /* As root a rename over /dev/null would succeed: it is refused first,
     * and nothing is created in /dev. */
    int in_dev = temporaries("/dev");
    CHECK_FAIL(hurray_atomic_file_open("/dev/null", &f), HURRAY_ERROR_IO, "a character device");
    CHECK(temporaries("/dev") == in_dev);
    CHECK_FAIL(hurray_atomic_file_open(path_in("no/such/dir/x"), &f), HURRAY_ERROR_IO,
               "No such file");
    CHECK(hurray_last_error_errno() == ENOENT);
    CHECK_FAIL(hurray_atomic_file_open(NULL, &f), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_atomic_file_write(NULL, "", 0), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_atomic_file_finish(NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_atomic_file_clean(NULL, NULL), HURRAY_ERROR_NULL_ARGUMENT, "NULL");
    CHECK_FAIL(hurray_atomic_file_clean(path_in("missing-dir"), NULL), HURRAY_ERROR_IO,
               "No such file");
    hurray_atomic_file_destroy(NULL);
    hurray_atomic_file_destroy(&f);
}

static void test_temporaries(void)
{
    const char *path = path_in("t.bin");
    HurrayAtomicFile *f = NULL;
    CHECK_OK(hurray_atomic_file_open(path, &f));
    /* Where the file system has O_TMPFILE the temporary has no name until
     * finish (a killed writer leaves nothing); else, and in the build that
     * turns it off (HURRAY_NO_O_TMPFILE), it is BASE.hurray-tmp-PID-N. */
    char expected[128];
    snprintf(expected, sizeof expected, "t.bin.hurray-tmp-%ld-", (long)getpid());
    DIR *d = opendir(dir);
    int named = 0;
    struct dirent *entry;
    while ((entry = readdir(d)) != NULL) {
        named += strncmp(entry->d_name, expected, strlen(expected)) == 0;
    }
    closedir(d);
    CHECK(named == temporaries(dir));
#ifdef HURRAY_NO_O_TMPFILE
    CHECK(named == 1);
#else
    CHECK(named <= 1);
    printf("test_io_paths: the temporary is %s\n", named ? "named (no O_TMPFILE here)" : "unnamed");
#endif
    CHECK_OK(hurray_atomic_file_write(f, "abc", 3));
    hurray_atomic_file_destroy(&f); /* unfinished: removed, the target never made */
    CHECK(temporaries(dir) == 0);
    CHECK(access(path, F_OK) != 0);
    /* Finished: nothing left but the file; more writes are refused. */
    CHECK_OK(hurray_atomic_file_open(path, &f));
    CHECK_OK(hurray_atomic_file_finish(f));
    CHECK(temporaries(dir) == 0);
    CHECK_FAIL(hurray_atomic_file_write(f, "x", 1), HURRAY_ERROR_INVALID_ARGUMENT, "finished");
    CHECK_FAIL(hurray_atomic_file_finish(f), HURRAY_ERROR_INVALID_ARGUMENT, "finished");
    hurray_atomic_file_destroy(&f);
    /* A name longer than the temporary's room (255 bytes in all) still works. */
    char long_name[256];
    memset(long_name, 'n', 250);
    long_name[250] = '\0';
    CHECK_OK(replace(path_in(long_name), "long"));
    CHECK(strcmp(slurp(path_in(long_name)), "long") == 0);
    CHECK(temporaries(dir) == 0);
}

/* A process that has exited: its PID names no process (until reused, which
 * the PID allocator avoids for a long while). */
static long dead_pid(void)
{
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    return (long)child;
}

static void make_file(const char *in, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", in, name);
    spit(path, "stale");
}

static int exists_in(const char *in, const char *name)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", in, name);
    struct stat st;
    return lstat(path, &st) == 0;
}

static void test_clean(void)
{
    const char *in = path_in("cleaning");
    CHECK(mkdir(in, 0755) == 0);
    long dead = dead_pid();
    char stale[128], locked[128], alive[128], own[128], odd[6][128];
    snprintf(stale, sizeof stale, "ckpt.hurray.hurray-tmp-%ld-0", dead);
    snprintf(locked, sizeof locked, "ckpt.hurray.hurray-tmp-%ld-1", dead);
    snprintf(alive, sizeof alive, "ckpt.hurray.hurray-tmp-%ld-2", (long)getppid());
    snprintf(own, sizeof own, "ckpt.hurray.hurray-tmp-%ld-3", (long)getpid());
    snprintf(odd[0], sizeof odd[0], "ckpt.hurray.tmp-%ld-4", dead);         /* the old name */
    snprintf(odd[1], sizeof odd[1], "ckpt.hurray.hurray-tmp-%ld-", dead);   /* no counter */
    snprintf(odd[2], sizeof odd[2], "ckpt.hurray.hurray-tmp-%ldx-5", dead); /* not digits */
    snprintf(odd[3], sizeof odd[3], ".hurray-tmp-%ld-6", dead);             /* no base */
    snprintf(odd[4], sizeof odd[4], "link.hurray-tmp-%ld-7", dead);         /* a symlink */
    snprintf(odd[5], sizeof odd[5], "dir.hurray-tmp-%ld-8", dead);          /* a directory */
    make_file(in, stale);
    make_file(in, locked);
    make_file(in, alive);
    make_file(in, own);
    for (int i = 0; i < 4; i++) {
        make_file(in, odd[i]);
    }
    char at[4200];
    snprintf(at, sizeof at, "%s/%s", in, odd[4]);
    CHECK(symlink(stale, at) == 0);
    snprintf(at, sizeof at, "%s/%s", in, odd[5]);
    CHECK(mkdir(at, 0755) == 0);
    /* A writer in another PID namespace looks dead here; its lock tells. */
    int sync_pipe[2];
    CHECK(pipe(sync_pipe) == 0);
    pid_t holder = fork();
    CHECK(holder >= 0);
    if (holder == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", in, locked);
        int fd = open(path, O_RDONLY);
        char byte = flock(fd, LOCK_EX) == 0 ? 'y' : 'n';
        if (write(sync_pipe[1], &byte, 1) != 1) _exit(1);
        pause(); /* until killed */
        _exit(0);
    }
    char byte = 0;
    CHECK(read(sync_pipe[0], &byte, 1) == 1 && byte == 'y');
    uint64_t removed = 99;
    CHECK_OK(hurray_atomic_file_clean(in, &removed));
    CHECK(removed == 1);
    CHECK(!exists_in(in, stale));
    CHECK(exists_in(in, locked) && exists_in(in, alive) && exists_in(in, own));
    for (int i = 0; i < 6; i++) {
        CHECK(exists_in(in, odd[i]));
    }
    kill(holder, SIGKILL);
    int status;
    CHECK(waitpid(holder, &status, 0) == holder);
    close(sync_pipe[0]);
    close(sync_pipe[1]);
    /* The lock died with its holder: the next writer in the folder removes
     * the file on its way. */
    char target[4200];
    snprintf(target, sizeof target, "%s/ckpt.hurray", in);
    CHECK_OK(replace(target, "saved"));
    CHECK(!exists_in(in, locked));
    CHECK(exists_in(in, alive) && exists_in(in, own));
    CHECK_OK(hurray_atomic_file_clean(in, NULL));
}

/* write(2) refused by the file system (RLIMIT_FSIZE, EFBIG: what a full
 * disk's ENOSPC does without needing one): the operating system's words,
 * its errno, and no temporary left. In a child, since the limit stays. */
static void test_refused_write(void)
{
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        signal(SIGXFSZ, SIG_IGN); /* write(2) then fails with EFBIG */
        struct rlimit limit = {.rlim_cur = 1 << 16, .rlim_max = 1 << 16};
        CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
        static char chunk[4 << 20];
        HurrayAtomicFile *f = NULL;
        CHECK_OK(hurray_atomic_file_open(path_in("big.bin"), &f));
        CHECK_OK(hurray_atomic_file_write(f, chunk, 1 << 15)); /* staged: not yet written */
        CHECK_FAIL(hurray_atomic_file_write(f, chunk, sizeof chunk), HURRAY_ERROR_IO,
                   "File too large");
        CHECK(hurray_last_error_errno() == EFBIG);
        CHECK_FAIL(hurray_atomic_file_finish(f), HURRAY_ERROR_IO, "File too large");
        hurray_atomic_file_destroy(&f);
        CHECK(temporaries(dir) == 0);
        CHECK(access(path_in("big.bin"), F_OK) != 0);
        /* The hurray-io writer says the same, not "the stream refused". */
        Pair big = one_buffer(HURRAY_DTYPE_FLOAT32, 1 << 20, 4 << 20);
        HurrayWriter *w = NULL;
        CHECK_OK(hurray_writer_open(path_in("big.hurray"), 0, &w));
        CHECK_FAIL(hurray_writer_add(w, "t", 1, big.context, big.list), HURRAY_ERROR_IO,
                   "File too large");
        CHECK(hurray_last_error_errno() == EFBIG);
        CHECK_FAIL(hurray_writer_finish(w), HURRAY_ERROR_IO, "File too large");
        hurray_writer_destroy(&w);
        CHECK(temporaries(dir) == 0);
        pair_destroy(&big);
        _exit(0);
    }
    int status;
    CHECK(waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* ---- a mapped file that shrinks, a frame of another alignment ------------- */

static void write_one(const char *path, uint64_t n, uint32_t flags)
{
    Pair p = one_buffer(HURRAY_DTYPE_UINT8, n, n);
    HurrayWriter *w = NULL;
    CHECK_OK(hurray_writer_open(path, flags, &w));
    CHECK_OK(hurray_writer_add(w, "t", 1, p.context, p.list));
    CHECK_OK(hurray_writer_finish(w));
    hurray_writer_destroy(&w);
    pair_destroy(&p);
}

static void test_shrunk_under_the_reader(void)
{
    const char *path = path_in("shrinks.hurray");
    write_one(path, 1 << 20, 0);
    for (int pread_reader = 0; pread_reader < 2; pread_reader++) {
        HurrayReader *r = NULL;
        uint32_t flags = HURRAY_READ_NO_VERIFY | (pread_reader ? HURRAY_READ_NO_MMAP : 0);
        CHECK_OK(hurray_reader_open(path, flags, &r));
        HurrayTensorContext *context = NULL;
        HurrayBufferList *list = NULL;
        if (!pread_reader) {
            CHECK_OK(hurray_reader_tensor(r, 0, &context, &list)); /* handed out, not touched */
        }
        CHECK(truncate(path, 4096) == 0); /* as open(path, "wb") or cp over it would */
        /* Verifying would hash pages the file no longer has: a SIGBUS
         * without the size check. */
        CHECK_FAIL(hurray_reader_verify(r, 0), HURRAY_ERROR_CORRUPT, "truncated");
        HurrayTensorContext *c2 = NULL;
        HurrayBufferList *l2 = NULL;
        CHECK_STATUS(hurray_reader_tensor(r, 0, &c2, &l2), HURRAY_ERROR_CORRUPT);
        CHECK(c2 == NULL && l2 == NULL);
        hurray_tensor_context_destroy(&context);
        hurray_buffer_list_destroy(&list);
        hurray_reader_destroy(&r);
        write_one(path, 1 << 20, 0);
    }
    /* Verifying readers check at hurray_reader_tensor too. */
    HurrayReader *r = NULL;
    CHECK_OK(hurray_reader_open(path, 0, &r));
    CHECK(truncate(path, 4096) == 0);
    HurrayTensorContext *context = NULL;
    HurrayBufferList *list = NULL;
    CHECK_STATUS(hurray_reader_tensor(r, 0, &context, &list), HURRAY_ERROR_CORRUPT);
    hurray_reader_destroy(&r);
}

/* A file of alignment 2^6 whose one frame states 2^12 (a page-aligned
 * frame moved behind a 64-byte header, every checksum right): both readers
 * refuse it; the pread reader used to accept it (issue 27, item 8). */
static void test_frame_of_another_alignment(void)
{
    const char *source = path_in("paged.hurray");
    write_one(source, 16, HURRAY_WRITE_PAGE_ALIGN);
    HurrayTensorContext *context = NULL;
    HurrayBufferList *list = NULL;

    /* Read the page-aligned file: header (4096), frame, index, trailer. */
    static uint8_t in[1 << 16], out[1 << 16];
    FILE *f = fopen(source, "rb");
    CHECK(f != NULL);
    size_t n = fread(in, 1, sizeof in, f);
    fclose(f);
    CHECK(in[10] == 12);
    uint64_t index_offset = 0, index_len = 0;
    for (int i = 7; i >= 0; i--) {
        index_offset = index_offset << 8 | in[n - 64 + i];
        index_len = index_len << 8 | in[n - 64 + 8 + i];
    }
    uint64_t frame_len = index_offset - 4096;
    /* New file: 64-byte header of alignment 2^6, the frame unchanged at 64,
     * the index with the entry's offset moved, a new trailer. */
    memcpy(out, in, 64);
    out[10] = 6;
    memcpy(out + 64, in + 4096, frame_len);
    uint64_t at = 64 + frame_len;
    memcpy(out + at, in + index_offset, index_len);
    uint8_t *entry = out + at + 32;
    for (int i = 0; i < 8; i++) {
        entry[i] = (uint8_t)((uint64_t)64 >> (8 * i));
    }
    uint8_t *t = out + at + index_len;
    memset(t, 0, 64);
    uint64_t fields[4] = {at, index_len, 0, at + index_len + 64};
    CHECK_OK(hurray_io_checksum(out + at, index_len, &fields[2]));
    for (int k = 0; k < 4; k++) {
        for (int i = 0; i < 8; i++) {
            t[8 * k + i] = (uint8_t)(fields[k] >> (8 * i));
        }
    }
    t[32] = 1;
    t[34] = 6;
    uint64_t sealed;
    CHECK_OK(hurray_io_checksum(t, 48, &sealed));
    for (int i = 0; i < 8; i++) {
        t[48 + i] = (uint8_t)(sealed >> (8 * i));
    }
    memcpy(t + 56, "HRYEND\r\n", 8);
    const char *moved = path_in("moved.hurray");
    f = fopen(moved, "wb");
    CHECK(f != NULL && fwrite(out, 1, at + index_len + 64, f) == at + index_len + 64);
    CHECK(fclose(f) == 0);
    static const uint32_t flags[3] = {HURRAY_READ_DEFAULT, HURRAY_READ_NO_MMAP,
                                      HURRAY_READ_NO_MMAP | HURRAY_READ_NO_VERIFY};
    for (int k = 0; k < 3; k++) {
        HurrayReader *r = NULL;
        CHECK_OK(hurray_reader_open(moved, flags[k], &r)); /* the index is fine */
        CHECK_FAIL(hurray_reader_tensor(r, 0, &context, &list), HURRAY_ERROR_CORRUPT, "alignment");
        CHECK_FAIL(hurray_reader_verify(r, 0), HURRAY_ERROR_CORRUPT, "alignment");
        hurray_reader_destroy(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_io_paths DIR\n");
        return 2;
    }
    dir = argv[1];
    alarm(120); /* a call that blocks (a FIFO's open) ends the run, not the suite */
    test_open_read();
    test_modes();
    test_symlinks();
    test_refused_targets();
    test_temporaries();
    test_clean();
    test_refused_write();
    test_shrunk_under_the_reader();
    test_frame_of_another_alignment();
    printf("test_io_paths: %lu checks passed\n", (unsigned long)atomic_load(&checks_passed));
    return 0;
}
