/* cmd_fsck_files.c - the file pass of `ctsdb fsck` (see cmd_fsck_files.h): every file of the
 * data directory checked against its format, damaged ones named, and with --quarantine set
 * aside in <data>/quarantine/.
 *
 * Formats read: storage/engine/catalog_format.h (CATALOG), sst_format.h through sst_open() and
 * a full iteration (block files), wal_format.h (log segments of wal/ and of the ingest head's
 * head/: framing read here, because the engine's replay cuts a damaged tail off the newest
 * segment instead of reporting it), headlog_format.h (head/released, through
 * headlog_mark_read()).
 *
 * Invariants: (1) without quarantine nothing under the directory is modified (the store is not
 * opened, log segments are only read); (2) a quarantined log segment's original bytes are kept
 * whole in quarantine/ before the live segment is cut; (3) the catalog is only reported, never
 * moved: it lists every other file, and a store without it would look empty. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "schema/headlog.h"
#include "schema/headlog_format.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/catalog_format.h"
#include "storage/engine/sst.h"
#include "storage/engine/wal_format.h"
#include "tools/cmd_fsck_files.h"

/* Reads a whole file (at most `max` bytes accepted). 0, or -1 with errno. */
static int ff_read_all(const char *path, uint8_t **data, size_t *len, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_size > max) {
        int e = errno ? errno : EFBIG;
        close(fd);
        errno = e;
        return -1;
    }
    size_t n = (size_t)st.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    size_t got = 0;
    while (buf && got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (!buf || got != n) {
        free(buf);
        errno = buf ? EIO : ENOMEM;
        return -1;
    }
    *data = buf;
    *len = n;
    return 0;
}

static int ff_write_all(const char *path, const uint8_t *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    size_t put = 0;
    while (put < len) {
        ssize_t w = write(fd, data + put, len - put);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        put += (size_t)w;
    }
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static void ff_damaged(struct fsck_files_result *r, const char *path, const char *why)
{
    printf("fsck: damaged %s: %s\n", path, why);
    r->damaged++;
}

static int ff_quarantine_dir(const char *dir, char *qdir, size_t cap)
{
    snprintf(qdir, cap, "%s/quarantine", dir);
    if (mkdir(qdir, 0700) != 0 && errno != EEXIST) {
        printf("fsck: cannot create %s: %s\n", qdir, strerror(errno));
        return -1;
    }
    return 0;
}

static void ff_check_catalog(const char *dir, struct fsck_files_result *r)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, CATALOG_FILE);
    uint8_t *d;
    size_t n;
    if (ff_read_all(path, &d, &n, (size_t)1 << 30) != 0) {
        if (errno != ENOENT)
            ff_damaged(r, path, strerror(errno));
        return;
    }
    r->files++;
    char why[160] = "";
    if (n < CATALOG_HEADER_BYTES + 4 || memcmp(d, CATALOG_MAGIC, 8) != 0) {
        snprintf(why, sizeof(why), "not a ctsdb catalog (bad magic or size %zu)", n);
    } else if (d[8] != CATALOG_FORMAT_VERSION) {
        snprintf(why, sizeof(why), "unsupported catalog version %d", d[8]);
    } else {
        uint64_t plen = coding_get_be64(d + 9);
        if (plen != n - CATALOG_HEADER_BYTES - 4)
            snprintf(why, sizeof(why), "payload length %llu does not match the file size %zu",
                     (unsigned long long)plen, n);
        else if (crc32c_unmask(coding_get_be32(d + n - 4)) !=
                 crc32c_value(d + CATALOG_HEADER_BYTES, plen))
            snprintf(why, sizeof(why), "checksum mismatch");
    }
    free(d);
    if (why[0])
        ff_damaged(r, path, why);
}

/* Opens a block file and reads every cell: every block's checksum is verified on the way. */
static int ff_verify_sst(const char *path, uint64_t id, char *why, size_t cap)
{
    struct ct_err err = {0};
    struct sst_read_options ro = {false, false};
    struct sst *f = NULL;
    struct sst_iter *it = NULL;
    int rc = sst_open(path, id, NULL, &ro, &f, &err);
    if (rc == CT_OK)
        rc = sst_iter_new(f, &it, &err);
    if (rc == CT_OK)
        rc = sst_iter_seek_first(it, &err);
    while (rc == CT_OK && sst_iter_valid(it))
        rc = sst_iter_next(it, &err);
    sst_iter_free(it);
    sst_unref(f);
    if (rc != CT_OK)
        snprintf(why, cap, "%s", err.msg);
    return rc;
}

static int ff_name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names in `sub` ending with `suffix` (and starting with `prefix`), or NULL when the
 * folder does not exist (*n = 0). */
static char **ff_list(const char *dir, const char *prefix, const char *suffix, size_t *n)
{
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **v = NULL;
    size_t cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t l = strlen(e->d_name), sl = strlen(suffix), pl = strlen(prefix);
        if (l <= sl + pl || strcmp(e->d_name + l - sl, suffix) != 0 ||
            strncmp(e->d_name, prefix, pl) != 0)
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **nv = realloc(v, cap * sizeof(*v));
            if (!nv)
                break;
            v = nv;
        }
        if ((v[*n] = strdup(e->d_name)) != NULL)
            (*n)++;
    }
    closedir(d);
    if (*n)
        qsort(v, *n, sizeof(*v), ff_name_cmp);
    return v;
}

static void ff_free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void ff_check_ssts(const char *dir, bool quarantine, struct fsck_files_result *r)
{
    char sdir[4200];
    snprintf(sdir, sizeof(sdir), "%s/sst", dir);
    size_t n;
    char **names = ff_list(sdir, "", ".sst", &n);
    for (size_t i = 0; i < n; i++) {
        char path[8400], why[CT_ERR_MSG_MAX];
        snprintf(path, sizeof(path), "%s/%s", sdir, names[i]);
        r->files++;
        uint64_t id = strtoull(names[i], NULL, 16);
        if (ff_verify_sst(path, id, why, sizeof(why)) == CT_OK)
            continue;
        ff_damaged(r, path, why);
        char qdir[4300], qpath[12800];
        if (!quarantine || ff_quarantine_dir(dir, qdir, sizeof(qdir)) != 0)
            continue;
        snprintf(qpath, sizeof(qpath), "%s/%s", qdir, names[i]);
        if (rename(path, qpath) != 0) {
            printf("fsck: cannot move %s to %s: %s\n", path, qpath, strerror(errno));
            continue;
        }
        printf("fsck: quarantined %s (now %s): the store drops it from its catalog at its next "
               "open; its cells are lost\n",
               path, qpath);
        r->quarantined++;
    }
    ff_free_list(names, n);
}

/* Whether a whole record with a valid checksum starts after `off` (the engine's rule too,
 * storage/engine/wal.c: then the bad record is damage, not a crash's torn tail). */
static bool ff_records_follow(const uint8_t *d, size_t n, size_t off)
{
    for (size_t p = off + 1; p + WAL_RECORD_HEADER_BYTES <= n; p++) {
        uint32_t len = coding_get_be32(d + p + 4);
        if (len > n - p - WAL_RECORD_HEADER_BYTES || coding_get_be64(d + p + 8) == 0)
            continue;
        uint32_t crc = crc32c_extend(crc32c_value(d + p + 4, WAL_RECORD_HEADER_BYTES - 4),
                                     d + p + WAL_RECORD_HEADER_BYTES, len);
        if (crc32c_mask(crc) == coding_get_be32(d + p))
            return true;
    }
    return false;
}

/* Scans one log segment's bytes. Returns the offset of the first bad byte (== n when the
 * segment is whole) and sets *why; *torn when the bad part is only a torn last record. */
static size_t ff_scan_wal(const uint8_t *d, size_t n, bool is_last, const char **why, bool *torn)
{
    *why = NULL;
    *torn = false;
    if (n < WAL_SEGMENT_HEADER_BYTES) {
        *why = "truncated segment header";
        *torn = is_last;
        return 0;
    }
    if (coding_get_be32(d) != WAL_MAGIC) {
        *why = "bad magic";
        return 0;
    }
    if (d[4] != WAL_VERSION) {
        *why = "unsupported version";
        return 0;
    }
    size_t off = WAL_SEGMENT_HEADER_BYTES;
    while (off < n) {
        bool zero = true; /* a zero-filled tail (preallocated, never written) ends the records */
        for (size_t i = off; i < n && zero; i++)
            zero = d[i] == 0;
        if (zero)
            return n;
        uint32_t len = n - off < WAL_RECORD_HEADER_BYTES ? 0 : coding_get_be32(d + off + 4);
        if (n - off < WAL_RECORD_HEADER_BYTES)
            *why = "truncated record header";
        else if (len > WAL_MAX_RECORD_BYTES)
            *why = "bad record length";
        else if (len > n - off - WAL_RECORD_HEADER_BYTES)
            *why = "truncated record";
        else if (crc32c_mask(crc32c_extend(crc32c_value(d + off + 4, WAL_RECORD_HEADER_BYTES - 4),
                                           d + off + WAL_RECORD_HEADER_BYTES, len)) !=
                 coding_get_be32(d + off))
            *why = "record checksum mismatch";
        if (*why) {
            /* the newest segment's tail is torn (a crash) unless valid records follow it */
            *torn = is_last && !ff_records_follow(d, n, off);
            return off;
        }
        off += WAL_RECORD_HEADER_BYTES + len;
    }
    return n;
}

/* The log segments under dir/sub: the store's write-ahead log (wal/) and the ingest head's log
 * (head/) share the segment format. */
static void ff_check_wal(const char *dir, const char *sub, bool quarantine,
                         struct fsck_files_result *r)
{
    char wdir[4200];
    snprintf(wdir, sizeof(wdir), "%s/%s", dir, sub);
    size_t n;
    char **names = ff_list(wdir, WAL_SEGMENT_PREFIX, WAL_SEGMENT_SUFFIX, &n);
    for (size_t i = 0; i < n; i++) {
        char path[8400];
        snprintf(path, sizeof(path), "%s/%s", wdir, names[i]);
        uint8_t *d;
        size_t len;
        if (ff_read_all(path, &d, &len, (size_t)4 << 30) != 0) {
            ff_damaged(r, path, strerror(errno));
            continue;
        }
        r->files++;
        const char *why;
        bool torn;
        size_t bad = ff_scan_wal(d, len, i + 1 == n, &why, &torn);
        if (!why) {
            free(d);
            continue;
        }
        if (torn) {
            printf("fsck: note: %s ends with a torn record at offset %zu (%s): what a crash "
                   "mid-write leaves; the store cuts it off at its next open\n",
                   path, bad, why);
            r->notes++;
            free(d);
            continue;
        }
        char msg[200];
        snprintf(msg, sizeof(msg), "%s at offset %zu of %zu", why, bad, len);
        ff_damaged(r, path, msg);
        char qdir[4300], qpath[12800];
        if (quarantine && ff_quarantine_dir(dir, qdir, sizeof(qdir)) == 0) {
            snprintf(qpath, sizeof(qpath), "%s/%s%s%s", qdir, strcmp(sub, "wal") ? sub : "",
                     strcmp(sub, "wal") ? "-" : "", names[i]);
            bool ok = ff_write_all(qpath, d, len) == 0;
            if (ok && bad < WAL_SEGMENT_HEADER_BYTES)
                ok = unlink(path) == 0;
            else if (ok)
                ok = truncate(path, (off_t)bad) == 0;
            if (ok) {
                printf("fsck: quarantined %s (a copy is %s): %s; the records after offset %zu "
                       "are lost\n",
                       path, qpath,
                       bad < WAL_SEGMENT_HEADER_BYTES ? "removed" : "cut at its last good record",
                       bad);
                r->quarantined++;
            } else {
                printf("fsck: cannot quarantine %s: %s\n", path, strerror(errno));
            }
        }
        free(d);
    }
    ff_free_list(names, n);
}

/* The head log's released mark (head/released): damaged, it stops the TSD at start. Set aside,
 * the log replays from its first record: points already handed off go into the head again and
 * are merged with the stored ones at the next hand-off, so nothing is lost. */
static void ff_check_head_mark(const char *dir, bool quarantine, struct fsck_files_result *r)
{
    char hdir[4200], path[4300];
    snprintf(hdir, sizeof(hdir), "%s/head", dir);
    snprintf(path, sizeof(path), "%s/%s", hdir, HEADLOG_MARK_FILE);
    struct stat st;
    if (stat(path, &st) != 0)
        return;
    r->files++;
    uint64_t seq;
    struct ct_err err = {0};
    if (headlog_mark_read(hdir, &seq, &err) == CT_OK)
        return;
    ff_damaged(r, path, err.msg);
    char qdir[4300], qpath[8700];
    if (!quarantine || ff_quarantine_dir(dir, qdir, sizeof(qdir)) != 0)
        return;
    snprintf(qpath, sizeof(qpath), "%s/head-%s", qdir, HEADLOG_MARK_FILE);
    if (rename(path, qpath) != 0) {
        printf("fsck: cannot quarantine %s: %s\n", path, strerror(errno));
        return;
    }
    printf("fsck: quarantined %s (now %s): the head log replays from its first record, points "
           "already stored are merged again\n",
           path, qpath);
    r->quarantined++;
}

int fsck_files_check(const char *dir, bool quarantine, struct fsck_files_result *out)
{
    memset(out, 0, sizeof(*out));
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("fsck: cannot read the data directory %s: %s\n", dir,
               errno ? strerror(errno) : "not a directory");
        return -1;
    }
    ff_check_catalog(dir, out);
    ff_check_ssts(dir, quarantine, out);
    ff_check_wal(dir, "wal", quarantine, out);
    ff_check_wal(dir, "head", quarantine, out);
    ff_check_head_mark(dir, quarantine, out);
    printf("fsck: files: %zu checked, %zu damaged, %zu quarantined, %zu torn log tails\n",
           out->files, out->damaged, out->quarantined, out->notes);
    return 0;
}
