/* eio.h - the embedded engine's I/O indirection. Every file operation of the engine (log
 * segments, block files, catalog files) goes through these calls, so that tests can inject
 * failures: make the Nth write or sync fail with EIO or ENOSPC, return a short write, or slow a
 * call down (to make group commit observable), on every file or only on files whose path
 * contains a given string.
 *
 * Two layers:
 *   - syscall-shaped wrappers (eio_open ... eio_close): same arguments and return convention as
 *     the POSIX call (-1 and errno on failure), injected failures included;
 *   - ct_err helpers (eio_write_all, eio_pread_all, eio_fsync_dir, eio_read_file,
 *     eio_write_file_atomic): loop over short transfers and fill err with the path, offset and
 *     strerror(errno).
 *
 * Fault injection is process-wide (like SQLite's aSyscall[] table): it is the one piece of
 * global mutable state in the engine, used by tests only, guarded by a mutex, and costs one
 * relaxed atomic load per call when unset.
 *
 * Threading: all functions are thread-safe. */
#ifndef CT_ENGINE_EIO_H
#define CT_ENGINE_EIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/ct_err.h"

/* ---- syscall-shaped wrappers ---------------------------------------------------------- */

int eio_open(const char *path, int flags, mode_t mode);
int eio_close(int fd);
ssize_t eio_pread(int fd, void *buf, size_t n, off_t off);
ssize_t eio_write(int fd, const void *buf, size_t n);
int eio_fsync(int fd);
int eio_fdatasync(int fd);
int eio_rename(const char *from, const char *to);
int eio_unlink(const char *path);
int eio_ftruncate(int fd, off_t len);
/* posix_fallocate-like: reserves [off, off+len) (mode 0). Returns 0 or -1 with errno; counted
 * as an EIO_OP_WRITE call for fault injection (it is where ENOSPC appears). */
int eio_fallocate(int fd, off_t off, off_t len);

/* ---- ct_err helpers ------------------------------------------------------------------- */

/* Writes all n bytes at the current offset (looping over short writes). `path` names the file
 * in the message: "cannot write 4096 bytes to <path>: No space left on device" (CT_EIO). */
CT_MUST_CHECK int eio_write_all(int fd, const void *buf, size_t n, const char *path,
                                struct ct_err *err);
/* Reads exactly n bytes at offset off: CT_EIO if the read fails, CT_ECORRUPT ("<path>: unexpected
 * end of file reading n bytes at offset off") if the file ends first. */
CT_MUST_CHECK int eio_pread_all(int fd, void *buf, size_t n, uint64_t off, const char *path,
                                struct ct_err *err);
/* A read of n bytes at off served from a memory mapping of fd (block files are mapped): no
 * system call, but it counts as one EIO_OP_READ call for fault injection, and an injected
 * failure returns CT_EIO worded like eio_pread_all's. CT_OK otherwise. */
CT_MUST_CHECK int eio_mapped_read(int fd, size_t n, uint64_t off, const char *path,
                                  struct ct_err *err);
/* fsync(fd) (datasync: fdatasync) with "cannot fsync <path>: ..." on failure. */
CT_MUST_CHECK int eio_sync(int fd, bool datasync, const char *path, struct ct_err *err);
/* fsyncs a directory (after creating, renaming or removing an entry in it). */
CT_MUST_CHECK int eio_fsync_dir(const char *dir, struct ct_err *err);
/* Reads a whole file. Returns a new buffer in *out (length in *len; a NUL byte follows the data
 * so text can be parsed in place), freed with free(). CT_NOTFOUND if the file does not exist. */
CT_MUST_CHECK int eio_read_file(const char *path, uint8_t **out, size_t *len, struct ct_err *err);
/* Replaces `path` atomically and durably: writes <path>.tmp, fsyncs it, renames it over path and
 * fsyncs the directory. On error path is unchanged and the temporary file is removed. */
CT_MUST_CHECK int eio_write_file_atomic(const char *path, const void *data, size_t len,
                                        struct ct_err *err);

/* ---- fault injection (tests) ---------------------------------------------------------- */

enum eio_op {
    EIO_OP_OPEN = 0,
    EIO_OP_READ = 1,  /* read, pread */
    EIO_OP_WRITE = 2, /* write, pwrite, fallocate */
    EIO_OP_SYNC = 3,  /* fsync, fdatasync */
    EIO_OP_RENAME = 4,
    EIO_OP_UNLINK = 5,
    EIO_OP_TRUNCATE = 6,
    EIO_OP_COUNT = 7,
};

struct eio_fault {
    enum eio_op op;
    uint64_t nth;     /* 1 = the next matching call fails; 0 = never fail (delay only) */
    int errnum;       /* errno of the failure (EIO, ENOSPC, ...) */
    bool short_write; /* WRITE: transfer half the bytes (at least 1) instead of failing */
    bool repeat;      /* every matching call from the nth on fails, not only the nth */
    /* Only calls on paths containing this (copied; NULL = every file). For fd-based operations
     * it applies to descriptors opened after eio_fault_set(). */
    const char *path_substr;
    uint32_t delay_us; /* sleep this long before every matching call */
};

/* Arms one fault, replacing any previous one, and resets the counters. */
void eio_fault_set(const struct eio_fault *f);
/* Disarms fault injection. */
void eio_fault_clear(void);
/* How many failures (or short writes) have been injected since eio_fault_set(). */
uint64_t eio_fault_injected(void);

#endif
