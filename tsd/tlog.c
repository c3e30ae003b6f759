/* tlog.c - leveled stderr logging for the TSD (see tlog.h).
 * Invariant: one write(2) per line, so concurrent lines never interleave. The level is an atomic
 * int (part of the daemon's configuration, STYLE §5). */
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

void tlog_write(enum tlog_level level, const char *fmt, ...)
{
    if (!tlog_enabled(level))
        return;
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
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof(buf) - 2)
        len = sizeof(buf) - 2;
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w; /* nowhere left to report a failed log write */
}
