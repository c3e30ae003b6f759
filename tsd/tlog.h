/* tlog.h - the TSD's log: leveled lines on stderr, safe from any thread.
 *
 * Each line is `YYYY-MM-DDTHH:MM:SS.mmmZ LEVEL message`, written with one write() so lines
 * from different threads never interleave. The level is set once at start (config key
 * tsd.logging.level) and may be changed later; messages above it are dropped cheaply. */
#ifndef CT_TSD_TLOG_H
#define CT_TSD_TLOG_H

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

#define tlog_error(...) tlog_write(TLOG_ERROR, __VA_ARGS__)
#define tlog_warn(...)  tlog_write(TLOG_WARN, __VA_ARGS__)
#define tlog_info(...)  tlog_write(TLOG_INFO, __VA_ARGS__)
#define tlog_debug(...)                                                                            \
    do {                                                                                           \
        if (tlog_enabled(TLOG_DEBUG))                                                              \
            tlog_write(TLOG_DEBUG, __VA_ARGS__);                                                   \
    } while (0)

#endif
