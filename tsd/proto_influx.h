/* proto_influx.h - the InfluxDB 1.x line protocol parser (docs/protocols.md, "InfluxDB line
 * protocol"): one line `measurement[,tag=v...] field=value[,field=value...] [timestamp]` into
 * its parts, and each field into an OpenTSDB datapoint (struct put_point) whose metric is
 * measurement + separator + field key.
 *
 * Invariants: nothing allocates; the parser unescapes backslash escapes ("\,", "\ ", "\=",
 * "\\") in place in the caller's mutable line (an unescaped name is never longer), so every
 * put_str of a parsed line points into that line. String fields are refused (the store holds
 * numbers only); the whole line is refused on the first error, with a message naming it. */
#ifndef CT_TSD_PROTO_INFLUX_H
#define CT_TSD_PROTO_INFLUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsd/put.h"

/* Most fields kept per line. */
#define INFLUX_MAX_FIELDS 64

enum influx_precision {
    INFLUX_NS = 0, /* the default when no precision is given */
    INFLUX_US = 1,
    INFLUX_MS = 2,
    INFLUX_S = 3,
    INFLUX_M = 4,
    INFLUX_H = 5,
};

enum influx_ftype {
    INFLUX_FLOAT = 0, /* 1.5, 1e3, 7 */
    INFLUX_INT = 1,   /* 7i (and unsigned 7u when it fits a signed 64-bit integer) */
    INFLUX_BOOL = 2,  /* t T true True TRUE f F false False FALSE: 1 or 0 */
};

struct influx_field {
    struct put_str key;
    enum influx_ftype type;
    struct put_str text; /* the number's text without its i/u suffix; "1" or "0" for a bool */
};

struct influx_line {
    struct put_str measurement;
    size_t ntags;
    struct put_str tagk[PUT_MAX_TAGS];
    struct put_str tagv[PUT_MAX_TAGS];
    size_t nfields;
    struct influx_field field[INFLUX_MAX_FIELDS];
    bool has_ts;
    int64_t ts; /* in the request's precision units */
};

/* "ns", "u", "us", "ms", "s", "m", "h" (InfluxDB's names; "n" too); NULL or "" is ns. Returns
 * false for anything else. */
bool influx_precision_parse(const char *s, enum influx_precision *out);

/* Parses one line (without its '\n'; a trailing '\r' is ignored) in place. Returns true and
 * fills *out, or false with the reason in msg (NUL-terminated, msg_size > 0). Empty lines and
 * comment lines ('#') are the caller's to skip. */
bool influx_parse_line(char *line, size_t len, struct influx_line *out, char *msg, size_t msg_size);

/* Builds the datapoint of field fi of l: metric = measurement + sep + field key written into
 * metric_buf (false with a message if it does not fit), the line's tags, the timestamp in
 * milliseconds (floor of finer precisions; now_ms when the line has none; the point counts as
 * given in milliseconds unless the precision is s, m or h). *value gets the value text for
 * put_check_point(), which the caller runs next. */
bool influx_field_point(const struct influx_line *l, size_t fi, const char *sep,
                        enum influx_precision prec, int64_t now_ms, char *metric_buf,
                        size_t metric_size, struct put_point *out, struct put_str *value, char *msg,
                        size_t msg_size);

#endif
