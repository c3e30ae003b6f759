/* cmd_import.c - `ctsdb import FILE...`: bulk-loads OpenTSDB import files (one datapoint per
 * line, `metric timestamp value tagk=tagv ...`, plain or gzip, detected by content) into the
 * store, through the same parser (tsd/put.h) and write path (tsd/ingest.h + tsd/store.h) as
 * the TSD. A bad line is reported as FILE:LINE: message and the import goes on. A progress bar
 * on stderr shows bytes, points, rate and ETA (redrawn in place on a terminal, a line every 5 s
 * otherwise). Exit status: 0 all lines imported, 1 some lines were bad or failed to store (the
 * rest is imported), 2 usage or configuration error, 3 the store could not be opened or a file
 * read.
 * Ownership: batches carry owner = file index << 40 | line number, so a point the store
 * rejects is reported with its file and line. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "storage/clock.h"
#include "tools/tool.h"
#include "tsd/conf.h"
#include "tsd/ingest.h"
#include "tsd/put.h"
#include "tsd/store.h"
#include "tsd/tlog.h"

#define IMPORT_MAX_FILES 4096
#define IMPORT_LINE_MAX  (64u << 10)

struct import_state {
    struct ingest *ingest;
    char **files;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t inflight;  /* [mu] */
    uint64_t written; /* [mu] */
    uint64_t failed;  /* [mu] */
};

static void import_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb import [--data DIR] [--config FILE] [--key=value ...] FILE...\n\n"
            "Loads OpenTSDB import files (lines `metric timestamp value tagk=tagv ...`, plain or\n"
            "gzip) into the store in DIR (default ./data; do not run a TSD on it at the same\n"
            "time). Bad lines are reported as FILE:LINE: message and skipped. Exit status 0 if\n"
            "every line was imported, 1 if some were bad. --key=value sets any configuration\n"
            "key (docs/tsd.md), as for the TSD; --set KEY=VALUE is the same.\n");
}

static void import_warn(void *arg, const char *msg)
{
    (void)arg;
    fprintf(stderr, "ctsdb import: warning: %s\n", msg);
}

static void import_done(void *arg, struct ingest_batch *b)
{
    struct import_state *s = arg;
    size_t n = ingest_batch_count(b), ok = 0, bad = 0;
    for (size_t i = 0; i < n; i++) {
        const char *msg;
        enum ingest_outcome o = ingest_batch_outcome(b, i, &msg);
        if (o == INGEST_WRITTEN) {
            ok++;
            continue;
        }
        bad++;
        struct ingest_point p;
        ingest_batch_point(b, i, &p);
        fprintf(stderr, "\n%s:%llu: %s\n", s->files[p.owner >> 40],
                (unsigned long long)(p.owner & ((1ULL << 40) - 1)), msg);
    }
    ingest_batch_release(s->ingest, b);
    pthread_mutex_lock(&s->mu);
    s->written += ok;
    s->failed += bad;
    s->inflight--;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void import_submit(struct import_state *s, struct ingest_batch *b)
{
    if (ingest_batch_count(b) == 0) {
        ingest_batch_release(s->ingest, b);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->inflight++;
    pthread_mutex_unlock(&s->mu);
    ingest_submit(s->ingest, b, import_done, s);
}

static void import_fmt_dur(double s, char *buf, size_t n)
{
    if (s < 0 || s > 360000)
        snprintf(buf, n, "--:--");
    else
        snprintf(buf, n, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
}

static void import_progress(bool tty, uint64_t done_bytes, uint64_t total_bytes, uint64_t points,
                            uint64_t bad, double elapsed, bool final)
{
    double frac = total_bytes ? (double)done_bytes / (double)total_bytes : 1.0;
    if (frac > 1)
        frac = 1;
    double rate = elapsed > 0 ? (double)points / elapsed : 0;
    char eta[32], el[32];
    import_fmt_dur(frac > 0 ? elapsed / frac - elapsed : -1, eta, sizeof(eta));
    import_fmt_dur(elapsed, el, sizeof(el));
    char bar[31];
    int filled = (int)(frac * 30);
    for (int i = 0; i < 30; i++)
        bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    fprintf(stderr, "%s[%s] %5.1f%% %llu points %.0f points/s elapsed %s ETA %s bad %llu%s",
            tty ? "\r" : "", bar, frac * 100, (unsigned long long)points, rate, el,
            final ? "0:00:00" : eta, (unsigned long long)bad, tty && !final ? "" : "\n");
}

static int import_run(int argc, char **argv)
{
    struct ct_err err = {0};
    struct conf *c = NULL;
    if (conf_new(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb import: %s\n", err.msg);
        return 3;
    }
    int *ops = calloc(IMPORT_MAX_FILES, sizeof(int));
    int nops = 0, status = 2;
    bool help = false;
    struct tsdstore *st = NULL;
    struct import_state s;
    memset(&s, 0, sizeof(s));
    pthread_mutex_init(&s.mu, NULL);
    pthread_cond_init(&s.cv, NULL);
    char *line = malloc(IMPORT_LINE_MAX + 8);
    struct put_point *pt = malloc(sizeof(*pt));
    s.files = calloc(IMPORT_MAX_FILES, sizeof(char *));
    if (!ops || !line || !pt || !s.files) {
        fprintf(stderr, "ctsdb import: out of memory\n");
        status = 3;
        goto out;
    }
    if (conf_apply_argv(c, argc, argv, ops, IMPORT_MAX_FILES, &nops, &help, import_warn, NULL,
                        &err) != CT_OK) {
        fprintf(stderr, "ctsdb import: %s (see ctsdb import --help)\n", err.msg);
        goto out;
    }
    if (help) {
        import_usage(stdout);
        status = 0;
        goto out;
    }
    if (nops == 0) {
        fprintf(stderr, "ctsdb import: no input files (see ctsdb import --help)\n");
        goto out;
    }
    uint64_t total = 0;
    for (int i = 0; i < nops; i++) {
        s.files[i] = argv[ops[i]];
        struct stat sb;
        if (stat(s.files[i], &sb) != 0) {
            fprintf(stderr, "ctsdb import: cannot read %s: %s\n", s.files[i], strerror(errno));
            status = 3;
            goto out;
        }
        total += (uint64_t)sb.st_size;
    }
    tlog_set_level(TLOG_WARN);
    if (tsdstore_open(c, TSDSTORE_CREATE, &st, &err) != CT_OK) {
        fprintf(stderr, "ctsdb import: %s\n", err.msg);
        status = 3;
        goto out;
    }
    struct ingest_options io;
    ingest_options_init(&io);
    io.writers = (int)conf_get_int(c, "tsd.storage.write_threads");
    if (ingest_new(&io, tsdstore_write, st, &s.ingest, &err) != CT_OK) {
        fprintf(stderr, "ctsdb import: %s\n", err.msg);
        status = 3;
        goto out;
    }
    struct put_rules rules = {(int)conf_get_int(c, "tsd.storage.max_tags"),
                              conf_get_str(c, "tsd.core.tag.allow_specialchars")};
    bool tty = isatty(STDERR_FILENO);
    uint64_t t0 = clock_mono_ns(), last_draw = 0, done_before = 0, parsed_ok = 0, bad = 0;
    bool read_error = false;
    char msg[1200];
    for (int f = 0; f < nops && !read_error; f++) {
        gzFile gz = gzopen(s.files[f], "rb");
        if (!gz) {
            fprintf(stderr, "\nctsdb import: cannot open %s: %s\n", s.files[f], strerror(errno));
            read_error = true;
            break;
        }
        gzbuffer(gz, 1u << 17);
        struct ingest_batch *b = NULL;
        uint64_t lineno = 0;
        memcpy(line, "put ", 4);
        while (gzgets(gz, line + 4, IMPORT_LINE_MAX)) {
            lineno++;
            size_t len = strlen(line);
            bool whole = len > 4 && line[len - 1] == '\n';
            if (!whole && !gzeof(gz)) {
                /* longer than the buffer: report and skip the rest of it */
                int ch;
                while ((ch = gzgetc(gz)) != -1 && ch != '\n') {
                }
                fprintf(stderr, "%s%s:%llu: line longer than %u bytes\n", tty ? "\n" : "",
                        s.files[f], (unsigned long long)lineno, IMPORT_LINE_MAX);
                bad++;
                continue;
            }
            if (whole)
                line[--len] = '\0';
            if (len > 4 && line[len - 1] == '\r')
                line[--len] = '\0';
            if (len == 4 || line[4] == '#')
                continue; /* blank and comment lines */
            enum put_status ps = put_parse_line(line, len, &rules, pt, msg, sizeof(msg));
            if (ps != PUT_OK) {
                fprintf(stderr, "%s%s:%llu: %s\n", tty ? "\n" : "", s.files[f],
                        (unsigned long long)lineno, msg + 5 /* without "put: " */);
                bad++;
                continue;
            }
            uint64_t owner = (uint64_t)f << 40 | lineno;
            if (!b)
                b = ingest_batch_get(s.ingest);
            if (!ingest_batch_add(b, pt, owner)) {
                import_submit(&s, b);
                b = ingest_batch_get(s.ingest);
                if (!ingest_batch_add(b, pt, owner)) {
                    fprintf(stderr, "%s:%llu: datapoint too large\n", s.files[f],
                            (unsigned long long)lineno);
                    bad++;
                    continue;
                }
            }
            parsed_ok++;
            if ((parsed_ok & 4095) == 0) {
                uint64_t now = clock_mono_ns();
                if (now - last_draw > (tty ? 200000000ULL : 5000000000ULL)) {
                    last_draw = now;
                    pthread_mutex_lock(&s.mu);
                    uint64_t w = s.written, fl = s.failed;
                    pthread_mutex_unlock(&s.mu);
                    import_progress(tty, done_before + (uint64_t)gzoffset(gz), total, w, bad + fl,
                                    (double)(now - t0) / 1e9, false);
                }
            }
        }
        int zerr = 0;
        const char *zmsg = gzerror(gz, &zerr);
        if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
            fprintf(stderr, "\nctsdb import: error reading %s: %s\n", s.files[f], zmsg);
            read_error = true;
        }
        if (b)
            import_submit(&s, b);
        struct stat sb;
        done_before += stat(s.files[f], &sb) == 0 ? (uint64_t)sb.st_size : 0;
        gzclose(gz);
    }
    pthread_mutex_lock(&s.mu);
    while (s.inflight > 0)
        pthread_cond_wait(&s.cv, &s.mu);
    uint64_t written = s.written, failed = s.failed;
    pthread_mutex_unlock(&s.mu);
    double secs = (double)(clock_mono_ns() - t0) / 1e9;
    import_progress(tty, total, total, written, bad + failed, secs, true);
    printf("imported %llu datapoints from %d file%s in %.2f s (%.0f points/s); %llu bad line%s\n",
           (unsigned long long)written, nops, nops == 1 ? "" : "s", secs,
           secs > 0 ? (double)written / secs : 0.0, (unsigned long long)(bad + failed),
           bad + failed == 1 ? "" : "s");
    status = read_error ? 3 : (bad + failed > 0 ? 1 : 0);
out:
    ingest_free(s.ingest);
    tsdstore_close(st);
    pthread_mutex_destroy(&s.mu);
    pthread_cond_destroy(&s.cv);
    free(s.files);
    free(line);
    free(pt);
    free(ops);
    conf_free(c);
    return status;
}

const struct tool_command tool_cmd_import = {
    "import", "bulk-load OpenTSDB import files (plain or gzip)", import_run};
