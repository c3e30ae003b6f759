/* qjson.h - a small streaming JSON writer for query answers: bytes go through a fixed buffer to
 * a sink callback (the HTTP layer's chunked body, a FILE, a test buffer), so a large answer is
 * never built whole in memory. Numbers are written as OpenTSDB's Jackson does: integers as
 * integers, doubles as Java's Double.toString ("5.0", "1.0E10", "1.5E-4"), NaN and infinities
 * quoted ("NaN"), or null where the fill policy says so.
 *
 * A writer belongs to one thread. The first sink error is sticky: later writes do nothing and
 * qjson_finish() returns it. */
#ifndef CT_QJSON_H
#define CT_QJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"

/* Receives len bytes; returns CT_OK or an error code (which stops the writer). */
typedef int (*qjson_sink_fn)(void *arg, const char *data, size_t len);

struct qjson; /* opaque */

/* Returns a new writer to sink (arg borrowed until qjson_free), buffering up to buf_bytes
 * (0 = 16 KiB), or NULL when out of memory. */
struct qjson *qjson_new(qjson_sink_fn sink, void *arg, size_t buf_bytes);
void qjson_free(struct qjson *j); /* does not flush; accepts NULL */

void qjson_raw(struct qjson *j, const char *s, size_t len);
void qjson_lit(struct qjson *j, const char *s); /* raw NUL-terminated text */
/* Room for up to n bytes written in place: a pointer into the buffer (flushed first when it has
 * less room), then qjson_commit(j, used) with used <= n. NULL when the buffer is smaller than
 * n or the writer has failed: write through qjson_raw() instead. */
char *qjson_reserve(struct qjson *j, size_t n);
void qjson_commit(struct qjson *j, size_t used);
void qjson_str(struct qjson *j, const char *s); /* quoted and escaped */
void qjson_strn(struct qjson *j, const char *s, size_t len);
void qjson_i64(struct qjson *j, int64_t v);
/* Formats an integer into out (room 21, not NUL-terminated); returns the length. */
size_t qjson_format_i64(int64_t v, char *out);
/* Formats a double as Java's Double.toString into out (room 32); returns the length. */
size_t qjson_format_double(double v, char *out);
/* Flushes the buffer to the sink; returns the first sink error or CT_OK. */
int qjson_flush(struct qjson *j);

#endif
