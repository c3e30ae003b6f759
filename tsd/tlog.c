/* tlog.c - leveled stderr logging for the TSD (see tlog.h).
 * Invariant: one write(2) per line, so concurrent lines never interleave. A rate-limited line
 * (tlog_limited) is written at most once per interval of its limiter; the lines left out in
 * between are counted and the count is appended to the next one written. The level is an atomic
 * int, set from the configuration at start: with the statistics (tstats.h), the daemon's only
 * process-wide state. */
#include "tsd/tlog.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "storage/clock.h"

static atomic_int tlog_level_now = TLOG_INFO;

static const char *const tlog_names[] = {"error", "warn", "info", "debug"};

int tlog_set_level_name(const char *name, struct ct_err *err)
{
    for (int i = 0; i < 4; i++) {
        if (!strcmp(name, tlog_names[i])) {
            atomic_store(&tlog_level_now, i);
            return CT_OK;
        }
    }
    return ct_err_set(err, CT_EINVAL, "unknown log level '%s' (error, warn, info, debug)", name);
}

void tlog_set_level(enum tlog_level level)
{
    atomic_store(&tlog_level_now, (int)level);
}

int tlog_enabled(enum tlog_level level)
{
    return (int)level <= atomic_load_explicit(&tlog_level_now, memory_order_relaxed);
}

static void tlog_vwrite(enum tlog_level level, const char *suffix, const char *fmt, va_list ap)
{
    char buf[2048];
    int64_t now = clock_now_ms();
    time_t s = (time_t)(now / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    int n = snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ %-5s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     (int)(now % 1000), tlog_names[level]);
    if (n < 0)
        return;
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(buf) - 2)
        len = sizeof(buf) - 2;
    if (suffix) {
        size_t sl = strlen(suffix);
        if (sl > sizeof(buf) - 2 - len)
            sl = sizeof(buf) - 2 - len;
        memcpy(buf + len, suffix, sl);
        len += sl;
    }
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w; /* nowhere left to report a failed log write */
}

void tlog_write(enum tlog_level level, const char *fmt, ...)
{
    if (!tlog_enabled(level))
        return;
    va_list ap;
    va_start(ap, fmt);
    tlog_vwrite(level, NULL, fmt, ap);
    va_end(ap);
}

bool tlog_limited(struct tlog_limit *l, int64_t now_ms, enum tlog_level level, const char *fmt, ...)
{
    int64_t next = atomic_load(&l->next_ms);
    /* one thread wins the slot of each interval; the others count themselves as suppressed */
    if (now_ms < next ||
        !atomic_compare_exchange_strong(&l->next_ms, &next, now_ms + l->interval_ms)) {
        atomic_fetch_add(&l->suppressed, 1);
        return false;
    }
    uint64_t quiet = atomic_exchange(&l->suppressed, 0);
    if (!tlog_enabled(level))
        return true;
    char suffix[96] = "";
    if (quiet > 0)
        snprintf(suffix, sizeof(suffix), " (and %llu more like it in the last %lld s)",
                 (unsigned long long)quiet, (long long)(l->interval_ms / 1000));
    va_list ap;
    va_start(ap, fmt);
    tlog_vwrite(level, quiet > 0 ? suffix : NULL, fmt, ap);
    va_end(ap);
    return true;
}
