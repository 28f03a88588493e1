/*
 * hurray_io.h -- layer 5, hurray-io: named tensors in files and as frames on
 * byte streams. Beside hurray.h, in the same library (libhurray); the flags
 * from `python -m hurray --cflags --libs` cover both headers.
 *
 * A tensor read from a file or a stream comes out as the pair a capsule
 * carries (ADR-034): a HurrayTensorContext and a HurrayBufferList. Both are
 * the caller's, to destroy in either order, before or after the reader: the
 * context's owner keeps whatever backs the buffers (a memory map, owned
 * aligned memory) alive. hurray_writer_add and hurray_frame_write take
 * exactly that pair, so a C program that receives a capsule can write it
 * unchanged.
 *
 * The format is specified in docs/impl/io-format.md. hurray-io has a version
 * of its own (HURRAY_IO_VERSION); hurray.h's HURRAY_C_ABI_VERSION does not
 * change with it.
 *
 * Conventions are hurray.h's: status returns with the thread's message set
 * on failure, out-parameters last, destroy takes X ** and nulls it.
 */
#ifndef HURRAY_IO_H
#define HURRAY_IO_H

#include "hurray.h"

#ifdef __cplusplus
extern "C" {
#endif

/* HURRAY_CDEF_BEGIN */

#define HURRAY_IO_VERSION 1

/* Reader flags. */
#define HURRAY_READ_DEFAULT 0u
#define HURRAY_READ_NO_VERIFY 1u /* skip data checksums (the index is still checked) */
#define HURRAY_READ_NO_MMAP 2u   /* read into owned aligned buffers instead of mapping */

/* Writer flags. */
#define HURRAY_WRITE_DEFAULT 0u
#define HURRAY_WRITE_PAGE_ALIGN 1u /* buffers start at page-size multiples, not 64 */

typedef struct HurrayReader HurrayReader;
typedef struct HurrayWriter HurrayWriter;

/* Every function below carries the two lines hurray.h's do, which
 * docs/impl/c-io.md repeats (tests/test_docs_c_headers.py holds the two
 * against each other):
 *   Statuses:  every non-OK status it can return ("none" when it returns
 *              no status);
 *   Ownership: what the caller keeps, lends or hands over. */

/* The hurray-io version of the linked library.
 * Statuses: none.
 * Ownership: nothing is allocated. */
uint32_t hurray_io_version(void);

/* The checksum the format uses (xxh3-64, seed 0) of len bytes at data, for
 * tools and other implementations that check or build files themselves.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OVERFLOW.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_io_checksum(const void *data, uint64_t len, uint64_t *out);

/* ---- paths and the operating system --------------------------------------
 *
 * One policy for every function that takes a path (docs/security.md, "Paths";
 * ADR-056). A path is a NUL-terminated string: a binding must refuse a path
 * that holds a NUL before it gets here (Python raises InvalidArgumentError),
 * since C cannot see past the first one. Symlinks are followed, as open(2)
 * follows them. Reading refuses anything but a regular file, without
 * blocking: a FIFO or device is opened O_NONBLOCK and refused after fstat.
 * Writing replaces the file a path names (through its symlinks; the links
 * stay) atomically, by a temporary file beside it (HurrayAtomicFile): a new
 * file gets the mode open(2) would give it (0666 less the umask), a replaced
 * one keeps its permission bits and, where allowed, its owner.
 */

/* The errno behind this thread's last failure when the operating system
 * refused an open, read, write, sync or rename (HURRAY_ERROR_IO), which a
 * binding turns into its own kind of error (Python: FileNotFoundError for
 * ENOENT, ...); 0 when the last failure was not the operating system's.
 * Statuses: none.
 * Ownership: nothing is allocated. */
int hurray_last_error_errno(void);

/* Opens the regular file at path for reading, under the path policy above:
 * *out_fd is a blocking, close-on-exec descriptor, *out_size the file's size.
 * A missing file, a directory, FIFO, device or socket is HURRAY_ERROR_IO with
 * hurray_last_error_errno() set (ENOENT, EISDIR; EINVAL for the others).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_IO.
 * Ownership: the caller owns *out_fd and closes it; path stays the caller's. */
HurrayStatus hurray_io_open_read(const char *path, int *out_fd, uint64_t *out_size);

/* ---- HurrayAtomicFile: a file replaced whole, or not at all --------------
 *
 * Every Hurray writer (hurray_writer_*, and Python's save_gguf and
 * save_safetensors) writes through one (ADR-056): the bytes go to a
 * temporary file in the target's directory -- with no name where the file
 * system has O_TMPFILE, so a writer killed outright leaves nothing; else
 * named BASE.hurray-tmp-PID-N -- which finish syncs, names, renames over
 * the target, and whose directory it syncs (ADR-039 § 6, ADR-050). Until
 * then the target is untouched; a writer that fails or is destroyed
 * unfinished removes its temporary. The temporary is locked (flock) while
 * it exists, so hurray_atomic_file_clean can tell the temporaries of dead
 * writers from live ones. Writes reach the file in whole 2 MiB regions
 * (ADR-058). */
typedef struct HurrayAtomicFile HurrayAtomicFile;

/* Creates the temporary file for replacing path, first removing stale
 * temporaries of dead writers in that directory (hurray_atomic_file_clean).
 * path must name a regular file or nothing yet (after its symlinks).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_IO, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out, freed by hurray_atomic_file_destroy; path stays the
 * caller's. */
HurrayStatus hurray_atomic_file_open(const char *path, HurrayAtomicFile **out);

/* Appends len bytes to the temporary file (small writes are gathered and
 * may reach the file only at a later call). A failed write makes the file
 * unusable: later writes and finish fail, with the operating system's errno.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: data is only read, during the call. */
HurrayStatus hurray_atomic_file_write(HurrayAtomicFile *file, const void *data, uint64_t len);

/* Writes what is gathered, fdatasyncs the temporary file, renames it over
 * the target and syncs the directory. The file it replaced is held open
 * until destroy (ADR-050).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO.
 * Ownership: nothing changes hands; the file still needs hurray_atomic_file_destroy. */
HurrayStatus hurray_atomic_file_finish(HurrayAtomicFile *file);

/* Frees the file: unfinished, its temporary is removed and the target left
 * as it was; finished, the file it replaced is released (its blocks freed).
 * Statuses: none.
 * Ownership: frees the file and nulls *file; NULL is a no-op. */
void hurray_atomic_file_destroy(HurrayAtomicFile **file);

/* Removes the temporaries that dead writers left in directory: only names
 * of the form BASE.hurray-tmp-PID-N, only regular files, only when no
 * process PID exists and no writer holds the file's lock. *out_removed
 * (may be NULL) gets how many were removed.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_IO.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_atomic_file_clean(const char *directory, uint64_t *out_removed);

/* ---- HurrayReader: a .hurray file, opened for random access ------------ */

/* Opens the file at path (NUL-terminated; the path policy above) with flags
 * HURRAY_READ_*, and checks its header, trailer and index before it returns.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_CORRUPT, HURRAY_ERROR_CHECKSUM, HURRAY_ERROR_UNSUPPORTED, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out; path stays the caller's. */
HurrayStatus hurray_reader_open(const char *path, uint32_t flags, HurrayReader **out);
/* How many tensors the file holds.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_reader_count(const HurrayReader *reader, uint64_t *out);
/* The name of tensor index, not NUL-terminated.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: *out_name is borrowed for the reader's life. */
HurrayStatus hurray_reader_name(const HurrayReader *reader, uint64_t index, const char **out_name,
                                uint64_t *out_len);
/* The index of the tensor called name[0 .. name_len).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_NOT_FOUND.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_reader_find(const HurrayReader *reader, const char *name, uint64_t name_len,
                                uint64_t *out_index);
/* The same pair a capsule carries. Both are the caller's to destroy, in either
 * order, before or after the reader. Unless the reader was opened with
 * HURRAY_READ_NO_VERIFY, the tensor's checksum is verified first.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_IO,
 * HURRAY_ERROR_CORRUPT, HURRAY_ERROR_CHECKSUM, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_BUFFER_TOO_SMALL,
 * HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out_context and *out_list. */
HurrayStatus hurray_reader_tensor(const HurrayReader *reader, uint64_t index,
                                  HurrayTensorContext **out_context, HurrayBufferList **out_list);
/* Verifies tensor index's checksum now, whatever the reader's flags.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE, HURRAY_ERROR_IO,
 * HURRAY_ERROR_CORRUPT, HURRAY_ERROR_CHECKSUM, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_BUFFER_TOO_SMALL,
 * HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_reader_verify(const HurrayReader *reader, uint64_t index);
/* How many entries the file-level string -> string metadata map holds.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT.
 * Ownership: nothing changes hands. */
HurrayStatus hurray_reader_metadata_count(const HurrayReader *reader, uint64_t *out);
/* Metadata entry index: its key and value, not NUL-terminated.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_OUT_OF_RANGE.
 * Ownership: *out_key and *out_value are borrowed for the reader's life. */
HurrayStatus hurray_reader_metadata_get(const HurrayReader *reader, uint64_t index,
                                        const char **out_key, uint64_t *out_key_len,
                                        const char **out_value, uint64_t *out_value_len);
/* Statuses: none.
 * Ownership: frees the reader and nulls *reader; the pairs it handed out stay valid. */
void hurray_reader_destroy(HurrayReader **reader);

/* ---- HurrayWriter: a .hurray file, written to a temporary and renamed -- */

/* Starts a file that will replace path (NUL-terminated) when finished, with
 * flags HURRAY_WRITE_*: a temporary beside it is created now.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out; path stays the caller's. */
HurrayStatus hurray_writer_open(const char *path, uint32_t flags, HurrayWriter **out);
/* Sets metadata key to value (both UTF-8); a key may be set once.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the writer keeps copies; key and value stay the caller's. */
HurrayStatus hurray_writer_set_metadata(HurrayWriter *writer, const char *key, uint64_t key_len,
                                        const char *value, uint64_t value_len);
/* Writes the tensor of the pair (context, list) under name, which must be new
 * to the file. A refused tensor leaves the writer usable.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_NOT_A_CONTEXT,
 * HURRAY_ERROR_ABI_VERSION, HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_IO, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: the writer keeps a copy of name; the pair stays the caller's (its bytes are written
 * before this returns). */
HurrayStatus hurray_writer_add(HurrayWriter *writer, const char *name, uint64_t name_len,
                               const HurrayTensorContext *context, const HurrayBufferList *list);
/* Writes the index and trailer, fdatasyncs, renames over path, syncs the
 * directory. The file it replaced is held open until destroy (ADR-050).
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: nothing changes hands; the writer still needs hurray_writer_destroy. */
HurrayStatus hurray_writer_finish(HurrayWriter *writer);
/* Destroying an unfinished writer removes its temporary file; path is
 * untouched. Destroying a finished one releases the file it replaced.
 * Statuses: none.
 * Ownership: frees the writer and nulls *writer. */
void hurray_writer_destroy(HurrayWriter **writer);

/* ---- frames: one named tensor on a byte stream ------------------------- */

/* Writes all len bytes of data to stream; returns 0 on success. */
typedef int (*HurrayWriteFn)(void *stream, const void *data, uint64_t len);
/* Reads up to len bytes into data and stores how many in *out_read, 0 only
 * at the end of the stream; returns 0 on success. */
typedef int (*HurrayReadFn)(void *stream, void *data, uint64_t len, uint64_t *out_read);

/* Writes the tensor of the pair (context, list) as one frame named name,
 * through write(stream, ...); everything is checked before the first byte.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_NOT_A_CONTEXT,
 * HURRAY_ERROR_ABI_VERSION, HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_IO, HURRAY_ERROR_OVERFLOW, HURRAY_ERROR_NO_MEMORY.
 * Ownership: nothing changes hands; name, context, list and stream stay the caller's. */
HurrayStatus hurray_frame_write(HurrayWriteFn write, void *stream, const char *name,
                                uint64_t name_len, const HurrayTensorContext *context,
                                const HurrayBufferList *list);
/* Reads one frame into owned aligned buffers and verifies its checksum. The
 * name comes out as a buffer of its bytes. At a clean end of the stream
 * (no byte before the frame) it returns HURRAY_OK and sets all three outs to
 * NULL; an end inside a frame is HURRAY_ERROR_CORRUPT.
 * Statuses: HURRAY_ERROR_NULL_ARGUMENT, HURRAY_ERROR_INVALID_ARGUMENT, HURRAY_ERROR_IO,
 * HURRAY_ERROR_CORRUPT, HURRAY_ERROR_CHECKSUM, HURRAY_ERROR_UNSUPPORTED,
 * HURRAY_ERROR_INVALID_DESCRIPTOR, HURRAY_ERROR_BUFFER_TOO_SMALL, HURRAY_ERROR_OVERFLOW,
 * HURRAY_ERROR_NO_MEMORY.
 * Ownership: the caller owns *out_name, *out_context and *out_list. */
HurrayStatus hurray_frame_read(HurrayReadFn read, void *stream, uint32_t flags,
                               HurrayBuffer **out_name, HurrayTensorContext **out_context,
                               HurrayBufferList **out_list);

/* HURRAY_CDEF_END */

#ifdef __cplusplus
}
#endif

#endif /* HURRAY_IO_H */
