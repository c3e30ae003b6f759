/* proto_influx.c - the InfluxDB 1.x line protocol parser (see proto_influx.h). Scans the line
 * once, left to right: measurement up to an unescaped ',' or ' ', tags up to the first unescaped
 * ' ', fields up to the next ' ', then an optional integer timestamp. Unescaping compacts each
 * name in place, so the spans stay inside the line. */
#include "tsd/proto_influx.h"

#include <stdio.h>
#include <string.h>

bool influx_precision_parse(const char *s, enum influx_precision *out)
{
    static const struct {
        const char *name;
        enum influx_precision p;
    } names[] = {{"", INFLUX_NS},  {"n", INFLUX_NS},  {"ns", INFLUX_NS},
                 {"u", INFLUX_US}, {"us", INFLUX_US}, {"ms", INFLUX_MS},
                 {"s", INFLUX_S},  {"m", INFLUX_M},   {"h", INFLUX_H}};
    if (s == NULL)
        s = "";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].p;
            return true;
        }
    return false;
}

/* Reads a name from line[*i] up to an unescaped byte of stops, unescaping in place. */
static struct put_str scan_name(char *line, size_t len, size_t *i, const char *stops)
{
    char *w = line + *i;
    struct put_str s = {w, 0};
    while (*i < len && strchr(stops, line[*i]) == NULL) {
        if (line[*i] == '\\' && *i + 1 < len && strchr(",= \\", line[*i + 1]) != NULL)
            (*i)++;
        w[s.len++] = line[(*i)++];
    }
    return s;
}

static bool fail(char *msg, size_t n, const char *what)
{
    snprintf(msg, n, "unable to parse: %s", what);
    return false;
}

static bool parse_value(struct put_str raw, struct influx_field *f, char *msg, size_t n)
{
    static const char *const yes[] = {"t", "T", "true", "True", "TRUE"};
    static const char *const no[] = {"f", "F", "false", "False", "FALSE"};
    if (raw.len == 0)
        return fail(msg, n, "missing field value");
    if (raw.p[0] == '"')
        return fail(msg, n, "string field values are not stored (numbers only)");
    for (size_t k = 0; k < 5; k++) {
        if (raw.len == strlen(yes[k]) && memcmp(raw.p, yes[k], raw.len) == 0) {
            f->type = INFLUX_BOOL;
            f->text = (struct put_str){"1", 1};
            return true;
        }
        if (raw.len == strlen(no[k]) && memcmp(raw.p, no[k], raw.len) == 0) {
            f->type = INFLUX_BOOL;
            f->text = (struct put_str){"0", 1};
            return true;
        }
    }
    char last = raw.p[raw.len - 1];
    if (last == 'i' || last == 'u') {
        if (raw.len == 1 || (last == 'u' && raw.p[0] == '-'))
            return fail(msg, n, "invalid integer field value");
        for (size_t k = (raw.p[0] == '-' ? 1 : 0); k + 1 < raw.len; k++)
            if (raw.p[k] < '0' || raw.p[k] > '9')
                return fail(msg, n, "invalid integer field value");
        f->type = INFLUX_INT;
        f->text = (struct put_str){raw.p, raw.len - 1};
        return true;
    }
    for (size_t k = 0; k < raw.len; k++)
        if (strchr("0123456789+-.eE", raw.p[k]) == NULL)
            return fail(msg, n, "invalid field value");
    f->type = INFLUX_FLOAT;
    f->text = raw;
    return true;
}

bool influx_parse_line(char *line, size_t len, struct influx_line *out, char *msg, size_t msg_size)
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    size_t i = 0;
    out->ntags = 0;
    out->nfields = 0;
    out->has_ts = false;
    out->measurement = scan_name(line, len, &i, ", ");
    if (out->measurement.len == 0)
        return fail(msg, msg_size, "missing measurement");
    while (i < len && line[i] == ',') {
        i++;
        struct put_str k = scan_name(line, len, &i, "=, ");
        if (i >= len || line[i] != '=' || k.len == 0)
            return fail(msg, msg_size, "missing tag key");
        i++;
        struct put_str v = scan_name(line, len, &i, ", ");
        if (v.len == 0)
            return fail(msg, msg_size, "missing tag value");
        if (out->ntags == PUT_MAX_TAGS)
            return fail(msg, msg_size, "too many tags");
        out->tagk[out->ntags] = k;
        out->tagv[out->ntags++] = v;
    }
    if (i >= len || line[i] != ' ')
        return fail(msg, msg_size, "missing fields");
    i++;
    for (;;) {
        struct put_str k = scan_name(line, len, &i, "=, ");
        if (i >= len || line[i] != '=' || k.len == 0)
            return fail(msg, msg_size, "missing field key");
        i++;
        struct put_str raw = {line + i, 0};
        while (i < len && line[i] != ',' && line[i] != ' ')
            raw.len++, i++;
        if (out->nfields == INFLUX_MAX_FIELDS)
            return fail(msg, msg_size, "too many fields");
        struct influx_field *f = &out->field[out->nfields];
        f->key = k;
        if (!parse_value(raw, f, msg, msg_size))
            return false;
        out->nfields++;
        if (i < len && line[i] == ',') {
            i++;
            continue;
        }
        break;
    }
    if (i < len) {
        i++; /* the space */
        char t[32];
        size_t tl = len - i;
        if (tl == 0 || tl >= sizeof(t))
            return fail(msg, msg_size, "bad timestamp");
        memcpy(t, line + i, tl);
        t[tl] = '\0';
        char m2[128];
        if (!put_parse_long(t, tl, &out->ts, m2, sizeof(m2)))
            return fail(msg, msg_size, "bad timestamp");
        out->has_ts = true;
    }
    return true;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

bool influx_field_point(const struct influx_line *l, size_t fi, const char *sep,
                        enum influx_precision prec, int64_t now_ms, char *metric_buf,
                        size_t metric_size, struct put_point *out, struct put_str *value, char *msg,
                        size_t msg_size)
{
    const struct influx_field *f = &l->field[fi];
    size_t sl = strlen(sep);
    size_t need = l->measurement.len + sl + f->key.len;
    if (need >= metric_size) {
        snprintf(msg, msg_size, "metric name too long");
        return false;
    }
    memcpy(metric_buf, l->measurement.p, l->measurement.len);
    memcpy(metric_buf + l->measurement.len, sep, sl);
    memcpy(metric_buf + l->measurement.len + sl, f->key.p, f->key.len);
    metric_buf[need] = '\0';
    out->metric = (struct put_str){metric_buf, need};
    out->ntags = l->ntags;
    for (size_t k = 0; k < l->ntags; k++) {
        out->tagk[k] = l->tagk[k];
        out->tagv[k] = l->tagv[k];
    }
    out->ms = prec <= INFLUX_MS || !l->has_ts;
    int64_t ts = l->ts;
    static const int64_t mul[] = {0, 0, 1, 1000, 60000, 3600000};
    if (!l->has_ts)
        out->ts_ms = now_ms;
    else if (prec == INFLUX_NS)
        out->ts_ms = floor_div(ts, 1000000);
    else if (prec == INFLUX_US)
        out->ts_ms = floor_div(ts, 1000);
    else if (ts > INT64_MAX / mul[prec] || ts < INT64_MIN / mul[prec]) {
        snprintf(msg, msg_size, "timestamp out of range");
        return false;
    } else
        out->ts_ms = ts * mul[prec];
    *value = f->text;
    return true;
}
