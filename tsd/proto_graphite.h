/* proto_graphite.h - Graphite plaintext (docs/protocols.md, "Graphite plaintext"): a line
 * `path value timestamp` and the mapping of its dotted path to an OpenTSDB metric and tags by
 * templates, as InfluxDB's Graphite input writes them.
 *
 * Templates: tsd.graphite.templates is a ';'-separated list of entries
 * `[filter ]template[ k=v,k=v]`. The filter is a dotted pattern whose parts are literal or
 * globs with '*' (`servers.*.cpu`); the template is a dotted list of parts, each one of
 * `measurement` (the part joins the metric), `field` (joins the metric after every measurement
 * part), a tag name (the part becomes that tag's value; several parts of one tag join with
 * '.'), or empty (the part is skipped); the last part may end in '*' (`measurement*`,
 * `field*`), taking the path's remaining parts. The first entry whose filter matches the
 * path's start (an entry without filter matches every path) maps it; with none, the whole path
 * is the metric. Parts beyond the template are dropped. The entry's k=v tags are added; a
 * point still without tags gets tsd.graphite.default_tag.
 *
 * Invariants: a compiled map is immutable (shared by every connection of the loop); parsing
 * allocates nothing: names are written into the caller's buffer. */
#ifndef CT_TSD_PROTO_GRAPHITE_H
#define CT_TSD_PROTO_GRAPHITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsd/put.h"

struct graphite_map; /* opaque */

/* Compiles templates (NULL or "" = none) and the default tag ("k=v"). Returns NULL with the
 * reason in msg for a malformed entry or default tag (or out of memory). */
struct graphite_map *graphite_map_new(const char *templates, const char *default_tag, char *msg,
                                      size_t msg_size);
void graphite_map_free(struct graphite_map *m); /* accepts NULL */

/* True if the line (without '\n'; a trailing '\r' is ignored) has Graphite's shape: exactly
 * three space-separated fields, the second a number (decimal or exponent form, or nan/inf, which
 * the checks then refuse) and the third a number. The caller decides a line's command first. */
bool graphite_line_shape(const char *line, size_t len);

/* Maps a Graphite-shaped line into *out (the metric and tag names written into buf, buf_size
 * bytes; tag values that are path parts may point into buf too) and *value (the value text, in
 * the line), for put_check_point(), which the caller runs next. The timestamp is seconds
 * (a fraction is dropped; -1 or a value <= 0 means now_ms). Returns false with the reason in
 * msg. */
bool graphite_map_line(const struct graphite_map *m, const char *line, size_t len, int64_t now_ms,
                       char *buf, size_t buf_size, struct put_point *out, struct put_str *value,
                       char *msg, size_t msg_size);

#endif
