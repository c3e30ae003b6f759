/* eio.c - the engine's I/O indirection and its test fault injection (see eio.h).
 *
 * Invariants: (1) when no fault is armed (`eio_armed` false) every wrapper is the plain system
 * call plus one relaxed atomic load; (2) the fault's counter counts only calls that match its
 * operation and path filter, so "the 3rd write to a wal segment" means exactly that;
 * (3) eio_fd_match[fd] is set only for descriptors opened through eio_open() while a fault with
 * a path filter was armed and the path matched, and is cleared by eio_close().
 * Locking: eio_mu guards the fault description and counters; eio_armed is the fast-path flag. */
#include "storage/engine/eio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EIO_MAX_FD 65536

static pthread_mutex_t eio_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool eio_armed;
static struct eio_fault eio_cur;  /* guarded by eio_mu */
static char eio_substr[PATH_MAX]; /* guarded by eio_mu */
static uint64_t eio_calls;        /* matching calls so far; guarded by eio_mu */
static atomic_uint_fast64_t eio_injected;
static atomic_uchar eio_fd_match[EIO_MAX_FD];

enum eio_verdict {
    EIO_PASS = 0,
    EIO_FAIL = 1,
    EIO_SHORT = 2,
};

static void eio_sleep_us(uint32_t us)
{
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Decides the fate of one call: op, and either a path or an fd (fd < 0 for path calls). */
static enum eio_verdict eio_check(enum eio_op op, const char *path, int fd, int *errnum)
{
    if (!atomic_load_explicit(&eio_armed, memory_order_relaxed))
        return EIO_PASS;
    pthread_mutex_lock(&eio_mu);
    if (!atomic_load_explicit(&eio_armed, memory_order_relaxed) || eio_cur.op != op) {
        pthread_mutex_unlock(&eio_mu);
        return EIO_PASS;
    }
    if (eio_substr[0]) {
        bool match;
        if (path)
            match = strstr(path, eio_substr) != NULL;
        else
            match = fd >= 0 && fd < EIO_MAX_FD && atomic_load(&eio_fd_match[fd]);
        if (!match) {
            pthread_mutex_unlock(&eio_mu);
            return EIO_PASS;
        }
    }
    uint64_t n = ++eio_calls;
    uint32_t delay = eio_cur.delay_us;
    enum eio_verdict v = EIO_PASS;
    if (eio_cur.nth && (n == eio_cur.nth || (eio_cur.repeat && n > eio_cur.nth))) {
        v = eio_cur.short_write && op == EIO_OP_WRITE ? EIO_SHORT : EIO_FAIL;
        *errnum = eio_cur.errnum ? eio_cur.errnum : EIO;
        atomic_fetch_add(&eio_injected, 1);
    }
    pthread_mutex_unlock(&eio_mu);
    if (delay)
        eio_sleep_us(delay);
    return v;
}

void eio_fault_set(const struct eio_fault *f)
{
    pthread_mutex_lock(&eio_mu);
    eio_cur = *f;
    eio_cur.path_substr = NULL;
    eio_substr[0] = '\0';
    if (f->path_substr)
        snprintf(eio_substr, sizeof(eio_substr), "%s", f->path_substr);
    eio_calls = 0;
    atomic_store(&eio_injected, 0);
    for (int i = 0; i < EIO_MAX_FD; i++)
        atomic_store_explicit(&eio_fd_match[i], 0, memory_order_relaxed);
    atomic_store(&eio_armed, true);
    pthread_mutex_unlock(&eio_mu);
}

void eio_fault_clear(void)
{
    pthread_mutex_lock(&eio_mu);
    atomic_store(&eio_armed, false);
    eio_substr[0] = '\0';
    eio_calls = 0;
    pthread_mutex_unlock(&eio_mu);
}

uint64_t eio_fault_injected(void)
{
    return atomic_load(&eio_injected);
}

/* ---- wrappers --------------------------------------------------------------------------- */

int eio_open(const char *path, int flags, mode_t mode)
{
    int e = 0;
    if (eio_check(EIO_OP_OPEN, path, -1, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    int fd;
    do
        fd = open(path, flags | O_CLOEXEC, mode);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0 && fd < EIO_MAX_FD && atomic_load_explicit(&eio_armed, memory_order_relaxed)) {
        pthread_mutex_lock(&eio_mu);
        bool match = eio_substr[0] && strstr(path, eio_substr) != NULL;
        pthread_mutex_unlock(&eio_mu);
        atomic_store(&eio_fd_match[fd], match ? 1 : 0);
    }
    return fd;
}

int eio_close(int fd)
{
    if (fd >= 0 && fd < EIO_MAX_FD)
        atomic_store_explicit(&eio_fd_match[fd], 0, memory_order_relaxed);
    return close(fd);
}

ssize_t eio_pread(int fd, void *buf, size_t n, off_t off)
{
    int e = 0;
    if (eio_check(EIO_OP_READ, NULL, fd, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    ssize_t r;
    do
        r = pread(fd, buf, n, off);
    while (r < 0 && errno == EINTR);
    return r;
}

ssize_t eio_write(int fd, const void *buf, size_t n)
{
    int e = 0;
    enum eio_verdict v = eio_check(EIO_OP_WRITE, NULL, fd, &e);
    if (v == EIO_FAIL) {
        errno = e;
        return -1;
    }
    if (v == EIO_SHORT && n > 1)
        n /= 2;
    ssize_t r;
    do
        r = write(fd, buf, n);
    while (r < 0 && errno == EINTR);
    return r;
}

int eio_fsync(int fd)
{
    int e = 0;
    if (eio_check(EIO_OP_SYNC, NULL, fd, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    return fsync(fd);
}

int eio_fdatasync(int fd)
{
    int e = 0;
    if (eio_check(EIO_OP_SYNC, NULL, fd, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    return fdatasync(fd);
}

int eio_rename(const char *from, const char *to)
{
    int e = 0;
    if (eio_check(EIO_OP_RENAME, to, -1, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    return rename(from, to);
}

int eio_unlink(const char *path)
{
    int e = 0;
    if (eio_check(EIO_OP_UNLINK, path, -1, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    return unlink(path);
}

int eio_ftruncate(int fd, off_t len)
{
    int e = 0;
    if (eio_check(EIO_OP_TRUNCATE, NULL, fd, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    return ftruncate(fd, len);
}

int eio_fallocate(int fd, off_t off, off_t len)
{
    int e = 0;
    if (eio_check(EIO_OP_WRITE, NULL, fd, &e) != EIO_PASS) {
        errno = e;
        return -1;
    }
    int r;
    do
        r = fallocate(fd, 0, off, len);
    while (r != 0 && errno == EINTR);
    if (r != 0 && errno == EOPNOTSUPP) { /* a filesystem without it: glibc writes zeros */
        int rc = posix_fallocate(fd, off, len);
        if (rc != 0) {
            errno = rc;
            return -1;
        }
        return 0;
    }
    return r;
}

/* ---- ct_err helpers --------------------------------------------------------------------- */

int eio_write_all(int fd, const void *buf, size_t n, const char *path, struct ct_err *err)
{
    const uint8_t *p = buf;
    size_t left = n;
    while (left > 0) {
        ssize_t r = eio_write(fd, p, left);
        if (r < 0)
            return ct_err_errno(err, CT_EIO, errno, "cannot write %zu bytes to %s", n, path);
        if (r == 0)
            return ct_err_set(err, CT_EIO, "cannot write %zu bytes to %s: write returned 0", n,
                              path);
        p += r;
        left -= (size_t)r;
    }
    return CT_OK;
}

int eio_pread_all(int fd, void *buf, size_t n, uint64_t off, const char *path, struct ct_err *err)
{
    uint8_t *p = buf;
    size_t done = 0;
    while (done < n) {
        ssize_t r = eio_pread(fd, p + done, n - done, (off_t)(off + done));
        if (r < 0)
            return ct_err_errno(err, CT_EIO, errno, "cannot read %zu bytes at offset %llu of %s", n,
                                (unsigned long long)off, path);
        if (r == 0)
            return ct_err_set(err, CT_ECORRUPT,
                              "%s: unexpected end of file reading %zu bytes at offset %llu", path,
                              n, (unsigned long long)off);
        done += (size_t)r;
    }
    return CT_OK;
}

int eio_mapped_read(int fd, size_t n, uint64_t off, const char *path, struct ct_err *err)
{
    int e = 0;
    if (eio_check(EIO_OP_READ, NULL, fd, &e) == EIO_PASS)
        return CT_OK;
    return ct_err_errno(err, CT_EIO, e, "cannot read %zu bytes at offset %llu of %s", n,
                        (unsigned long long)off, path);
}

int eio_sync(int fd, bool datasync, const char *path, struct ct_err *err)
{
    int r = datasync ? eio_fdatasync(fd) : eio_fsync(fd);
    if (r != 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot fsync %s", path);
    return CT_OK;
}

int eio_fsync_dir(const char *dir, struct ct_err *err)
{
    int fd = eio_open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot open directory %s", dir);
    int rc = eio_sync(fd, false, dir, err);
    eio_close(fd);
    return rc;
}

int eio_read_file(const char *path, uint8_t **out, size_t *len, struct ct_err *err)
{
    int fd = eio_open(path, O_RDONLY, 0);
    if (fd < 0) {
        if (errno == ENOENT)
            return ct_err_set(err, CT_NOTFOUND, "%s does not exist", path);
        return ct_err_errno(err, CT_EIO, errno, "cannot open %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        eio_close(fd);
        return ct_err_errno(err, CT_EIO, e, "cannot stat %s", path);
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n + 1);
    if (!buf) {
        eio_close(fd);
        return ct_err_set(err, CT_ENOMEM, "cannot allocate %zu bytes to read %s", n, path);
    }
    int rc = n ? eio_pread_all(fd, buf, n, 0, path, err) : CT_OK;
    eio_close(fd);
    if (rc != CT_OK) {
        free(buf);
        return rc;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return CT_OK;
}

int eio_write_file_atomic(const char *path, const void *data, size_t len, struct ct_err *err)
{
    char tmp[PATH_MAX];
    char dir[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return ct_err_set(err, CT_EINVAL, "path too long: %s", path);
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir)
        dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof(dir), ".");
    int fd = eio_open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return ct_err_errno(err, CT_EIO, errno, "cannot create %s", tmp);
    int rc = eio_write_all(fd, data, len, tmp, err);
    if (rc == CT_OK)
        rc = eio_sync(fd, false, tmp, err);
    if (eio_close(fd) != 0 && rc == CT_OK)
        rc = ct_err_errno(err, CT_EIO, errno, "cannot close %s", tmp);
    if (rc == CT_OK && eio_rename(tmp, path) != 0)
        rc = ct_err_errno(err, CT_EIO, errno, "cannot rename %s to %s", tmp, path);
    if (rc != CT_OK) {
        if (unlink(tmp) != 0) { /* best effort: the error being reported is the first one */
        }
        return rc;
    }
    return eio_fsync_dir(dir, err);
}
