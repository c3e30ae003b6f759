/* tlog.h - the TSD's log: leveled lines on stderr, safe from any thread.
 *
 * Each line is `YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL message`, written with one write() so lines
 * from different threads never interleave. The level is set once at start (config key
 * tsd.logging.level) and may be changed later; messages above it are dropped cheaply. */
#ifndef CT_TSD_TLOG_H
#define CT_TSD_TLOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

enum tlog_level {
    TLOG_ERROR = 0,
    TLOG_WARN = 1,
    TLOG_INFO = 2,
    TLOG_DEBUG = 3,
};

/* Sets the level; returns CT_EINVAL (and leaves it) for an unknown name. Names: error, warn,
 * info, debug. */
CT_MUST_CHECK int tlog_set_level_name(const char *name, struct ct_err *err);
void tlog_set_level(enum tlog_level level);
/* True if messages of this level are written (to skip building expensive messages). */
int tlog_enabled(enum tlog_level level);
void tlog_write(enum tlog_level level, const char *fmt, ...) CT_PRINTF(2, 3);

/* A limiter for a line that may repeat at a high rate (one per failed batch, say): at most one
 * line per interval_ms; the lines left out are counted and named in the next one written, e.g.
 * "... (and 8123 more like it in the last 10 s)". Define one per call site:
 *   static struct tlog_limit lim = TLOG_LIMIT_INIT(10000); */
struct tlog_limit {
    int64_t interval_ms;
    _Atomic int64_t next_ms; /* monotonic ms before which lines are counted, not written */
    _Atomic uint64_t suppressed;
};
#define TLOG_LIMIT_INIT(interval)                                                                  \
    {                                                                                              \
        (interval), 0, 0                                                                           \
    }

/* Writes the line unless the limiter's interval since its last line has not passed (now_ms:
 * milliseconds, clock_mono_ns() / 1000000, passed in so tests can drive it); returns whether this call took the
 * limiter's slot (the line was written, if the level lets it through). Thread-safe. */
bool tlog_limited(struct tlog_limit *l, int64_t now_ms, enum tlog_level level, const char *fmt, ...)
    CT_PRINTF(4, 5);

#define tlog_error(...) tlog_write(TLOG_ERROR, __VA_ARGS__)
#define tlog_warn(...)  tlog_write(TLOG_WARN, __VA_ARGS__)
#define tlog_info(...)  tlog_write(TLOG_INFO, __VA_ARGS__)
#define tlog_debug(...)                                                                            \
    do {                                                                                           \
        if (tlog_enabled(TLOG_DEBUG))                                                              \
            tlog_write(TLOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif
