/* proto_graphite.c - Graphite plaintext lines and their template mapping (see proto_graphite.h).
 * Invariants: (1) a map owns one copy of the template text, split in place, and every name of
 * its entries points into that copy; (2) graphite_map_line writes only into the caller's buffer
 * and never past buf_size (it fails instead). */
#include "tsd/proto_graphite.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAPHITE_MAX_PARTS  64 /* template parts and path parts kept */
#define GRAPHITE_MAX_FILTER 32 /* filter parts */
#define GRAPHITE_MAX_TAGS   16 /* k=v tags of one entry */

enum gpart_kind {
    GP_SKIP = 0,
    GP_MEASUREMENT = 1,
    GP_FIELD = 2,
    GP_TAG = 3,
};

struct gpart {
    enum gpart_kind kind;
    const char *tag; /* GP_TAG: the tag name */
};

struct gentry {
    size_t nfilter; /* 0 = matches every path */
    const char *filter[GRAPHITE_MAX_FILTER];
    size_t nparts;
    struct gpart parts[GRAPHITE_MAX_PARTS];
    bool greedy; /* the last part takes the remaining path parts */
    size_t ntags;
    const char *tagk[GRAPHITE_MAX_TAGS];
    const char *tagv[GRAPHITE_MAX_TAGS];
};

struct graphite_map {
    char *text; /* (1) */
    size_t n;
    struct gentry *e;
    const char *dk, *dv; /* the default tag */
};

static bool fail(char *msg, size_t msg_size, const char *what, const char *ctx)
{
    snprintf(msg, msg_size, "%s%s%s", what, ctx ? ": " : "", ctx ? ctx : "");
    return false;
}

/* Splits s in place at each c; returns the count (at most max; false if more). */
static bool split(char *s, char c, char **out, size_t max, size_t *n)
{
    *n = 0;
    for (;;) {
        if (*n == max)
            return false;
        out[(*n)++] = s;
        char *p = strchr(s, c);
        if (!p)
            return true;
        *p = '\0';
        s = p + 1;
    }
}

static bool parse_tags(struct gentry *e, char *s, char *msg, size_t msg_size)
{
    char *kv[GRAPHITE_MAX_TAGS];
    size_t n;
    if (!split(s, ',', kv, GRAPHITE_MAX_TAGS, &n))
        return fail(msg, msg_size, "too many tags in a template", NULL);
    for (size_t i = 0; i < n; i++) {
        char *eq = strchr(kv[i], '=');
        if (!eq || eq == kv[i] || eq[1] == '\0')
            return fail(msg, msg_size, "template tag is not k=v", kv[i]);
        *eq = '\0';
        e->tagk[e->ntags] = kv[i];
        e->tagv[e->ntags] = eq + 1;
        e->ntags++;
    }
    return true;
}

static bool parse_template(struct gentry *e, char *s, char *msg, size_t msg_size)
{
    char *parts[GRAPHITE_MAX_PARTS];
    size_t n;
    if (!split(s, '.', parts, GRAPHITE_MAX_PARTS, &n))
        return fail(msg, msg_size, "too many parts in a template", NULL);
    for (size_t i = 0; i < n; i++) {
        char *p = parts[i];
        size_t l = strlen(p);
        if (l > 0 && p[l - 1] == '*') {
            if (i != n - 1)
                return fail(msg, msg_size, "only the last template part may end in '*'", p);
            p[--l] = '\0';
            e->greedy = true;
        }
        struct gpart *g = &e->parts[i];
        if (l == 0)
            g->kind = GP_SKIP;
        else if (!strcmp(p, "measurement"))
            g->kind = GP_MEASUREMENT;
        else if (!strcmp(p, "field"))
            g->kind = GP_FIELD;
        else {
            if (strchr(p, '*') || strchr(p, '='))
                return fail(msg, msg_size, "bad template part", p);
            g->kind = GP_TAG;
            g->tag = p;
        }
    }
    e->nparts = n;
    return true;
}

static bool parse_entry(struct gentry *e, char *s, char *msg, size_t msg_size)
{
    char *w[4];
    size_t n = 0;
    for (char *p = s; *p;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        if (n == 3)
            return fail(msg, msg_size, "a template entry has at most 3 words", s);
        w[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    if (n == 0)
        return fail(msg, msg_size, "empty template entry", NULL);
    /* words: [filter] template [tags]; a last word with '=' is the tags */
    size_t ti = 0;
    if (strchr(w[n - 1], '=')) {
        if (n == 1)
            return fail(msg, msg_size, "a template entry without a template", w[0]);
        if (!parse_tags(e, w[n - 1], msg, msg_size))
            return false;
        n--;
    }
    if (n == 2) {
        char *fp[GRAPHITE_MAX_FILTER];
        if (!split(w[0], '.', fp, GRAPHITE_MAX_FILTER, &e->nfilter))
            return fail(msg, msg_size, "too many parts in a filter", NULL);
        for (size_t i = 0; i < e->nfilter; i++)
            e->filter[i] = fp[i];
        ti = 1;
    } else if (n != 1) {
        return fail(msg, msg_size, "a template entry is [filter ]template[ tags]", NULL);
    }
    return parse_template(e, w[ti], msg, msg_size);
}

struct graphite_map *graphite_map_new(const char *templates, const char *default_tag, char *msg,
                                      size_t msg_size)
{
    struct graphite_map *m = calloc(1, sizeof(*m));
    size_t tl = templates ? strlen(templates) : 0;
    size_t dl = default_tag ? strlen(default_tag) : 0;
    char *text = m ? malloc(tl + dl + 2) : NULL;
    if (!text) {
        free(m);
        fail(msg, msg_size, "out of memory", NULL);
        return NULL;
    }
    m->text = text;
    memcpy(text, templates ? templates : "", tl + 1);
    char *dt = text + tl + 1;
    memcpy(dt, default_tag ? default_tag : "", dl + 1);
    char *eq = strchr(dt, '=');
    if (!eq || eq == dt || eq[1] == '\0' || strchr(eq + 1, '=')) {
        fail(msg, msg_size, "the default tag is not k=v", dt);
        graphite_map_free(m);
        return NULL;
    }
    *eq = '\0';
    m->dk = dt;
    m->dv = eq + 1;
    size_t count = 0;
    for (const char *p = text; *p; p++)
        count += *p == ';';
    m->e = calloc(count + 1, sizeof(*m->e));
    if (!m->e) {
        fail(msg, msg_size, "out of memory", NULL);
        graphite_map_free(m);
        return NULL;
    }
    for (char *s = text; s;) {
        char *semi = strchr(s, ';');
        if (semi)
            *semi = '\0';
        bool blank = s[strspn(s, " \t")] == '\0';
        if (!blank && !parse_entry(&m->e[m->n++], s, msg, msg_size)) {
            graphite_map_free(m);
            return NULL;
        }
        s = semi ? semi + 1 : NULL;
    }
    return m;
}

void graphite_map_free(struct graphite_map *m)
{
    if (!m)
        return;
    free(m->e);
    free(m->text);
    free(m);
}

/* A number as strtod reads it, the whole span. */
static bool number(const char *p, size_t len, double *out)
{
    char t[64];
    if (len == 0 || len >= sizeof(t))
        return false;
    memcpy(t, p, len);
    t[len] = '\0';
    char *end;
    *out = strtod(t, &end);
    return end == t + len;
}

/* The three fields of a line; false if it has not exactly three. */
static bool fields(const char *line, size_t len, struct put_str f[3])
{
    if (len > 0 && line[len - 1] == '\r')
        len--;
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        while (i < len && line[i] == ' ')
            i++;
        if (i == len)
            break;
        if (n == 3)
            return false;
        size_t s = i;
        while (i < len && line[i] != ' ')
            i++;
        f[n++] = (struct put_str){line + s, i - s};
    }
    return n == 3;
}

bool graphite_line_shape(const char *line, size_t len)
{
    struct put_str f[3];
    double d;
    return fields(line, len, f) && number(f[1].p, f[1].len, &d) && number(f[2].p, f[2].len, &d);
}

static bool filter_match(const struct gentry *e, const struct put_str *seg, size_t nseg)
{
    if (e->nfilter > nseg)
        return false;
    for (size_t i = 0; i < e->nfilter; i++) {
        char t[256];
        if (seg[i].len >= sizeof(t))
            return false;
        memcpy(t, seg[i].p, seg[i].len);
        t[seg[i].len] = '\0';
        if (fnmatch(e->filter[i], t, 0) != 0)
            return false;
    }
    return true;
}

/* The output buffer being filled. */
struct gbuf {
    char *p;
    size_t len, cap;
    bool overflow;
};

static const char *gbuf_add(struct gbuf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap) {
        b->overflow = true;
        return "";
    }
    char *at = b->p + b->len;
    memcpy(at, s, n);
    b->len += n;
    return at;
}

/* Appends the path parts [from, to) joined with '.'; returns the start. */
static const char *gbuf_parts(struct gbuf *b, const struct put_str *seg, size_t from, size_t to)
{
    const char *start = b->p + b->len;
    for (size_t i = from; i < to; i++) {
        if (i > from)
            gbuf_add(b, ".", 1);
        gbuf_add(b, seg[i].p, seg[i].len);
    }
    return start;
}

bool graphite_map_line(const struct graphite_map *m, const char *line, size_t len, int64_t now_ms,
                       char *buf, size_t buf_size, struct put_point *out, struct put_str *value,
                       char *msg, size_t msg_size)
{
    struct put_str f[3];
    double v, ts;
    if (!fields(line, len, f) || !number(f[1].p, f[1].len, &v) || !number(f[2].p, f[2].len, &ts))
        return fail(msg, msg_size, "not a Graphite line `path value timestamp`", NULL);
    struct put_str seg[GRAPHITE_MAX_PARTS];
    size_t nseg = 0;
    for (size_t i = 0, s = 0; i <= f[0].len; i++) {
        if (i < f[0].len && f[0].p[i] != '.')
            continue;
        if (i == s)
            return fail(msg, msg_size, "empty part in the path", NULL);
        if (nseg == GRAPHITE_MAX_PARTS)
            return fail(msg, msg_size, "too many parts in the path", NULL);
        seg[nseg++] = (struct put_str){f[0].p + s, i - s};
        s = i + 1;
    }
    const struct gentry *e = NULL;
    for (size_t i = 0; i < m->n && !e; i++)
        if (filter_match(&m->e[i], seg, nseg))
            e = &m->e[i];
    struct gbuf b = {buf, 0, buf_size, false};
    out->ntags = 0;
    if (!e) {
        out->metric = (struct put_str){gbuf_parts(&b, seg, 0, nseg), f[0].len};
    } else {
        /* which path parts each template part takes */
        size_t from[GRAPHITE_MAX_PARTS], to[GRAPHITE_MAX_PARTS];
        size_t np = e->nparts < nseg ? e->nparts : nseg;
        for (size_t i = 0; i < np; i++) {
            from[i] = i;
            to[i] = e->greedy && i == e->nparts - 1 ? nseg : i + 1;
        }
        /* the metric: measurement parts, then field parts, joined with '.' */
        const char *mstart = b.p + b.len;
        size_t mlen0 = b.len;
        bool any = false;
        for (int pass = 0; pass < 2; pass++) {
            enum gpart_kind want = pass == 0 ? GP_MEASUREMENT : GP_FIELD;
            if (pass == 1 && !any)
                break; /* no measurement: the whole path (below) */
            for (size_t i = 0; i < np; i++) {
                if (e->parts[i].kind != want)
                    continue;
                if (any)
                    gbuf_add(&b, ".", 1);
                gbuf_parts(&b, seg, from[i], to[i]);
                any = true;
            }
        }
        if (!any)
            gbuf_parts(&b, seg, 0, nseg);
        out->metric = (struct put_str){mstart, b.len - mlen0};
        /* tags from the path, in the order of their first part */
        for (size_t i = 0; i < np; i++) {
            if (e->parts[i].kind != GP_TAG)
                continue;
            bool seen = false;
            for (size_t j = 0; j < i && !seen; j++)
                seen = e->parts[j].kind == GP_TAG && !strcmp(e->parts[j].tag, e->parts[i].tag);
            if (seen)
                continue;
            if (out->ntags == PUT_MAX_TAGS)
                return fail(msg, msg_size, "too many tags", NULL);
            const char *vstart = b.p + b.len;
            size_t l0 = b.len;
            bool first = true;
            for (size_t j = i; j < np; j++) {
                if (e->parts[j].kind != GP_TAG || strcmp(e->parts[j].tag, e->parts[i].tag))
                    continue;
                if (!first)
                    gbuf_add(&b, ".", 1);
                gbuf_parts(&b, seg, from[j], to[j]);
                first = false;
            }
            const char *k = e->parts[i].tag;
            out->tagk[out->ntags] = (struct put_str){k, strlen(k)};
            out->tagv[out->ntags] = (struct put_str){vstart, b.len - l0};
            out->ntags++;
        }
        /* the entry's own tags, unless the path gave that tag */
        for (size_t i = 0; i < e->ntags; i++) {
            bool have = false;
            for (size_t j = 0; j < out->ntags && !have; j++)
                have = out->tagk[j].len == strlen(e->tagk[i]) &&
                       !memcmp(out->tagk[j].p, e->tagk[i], out->tagk[j].len);
            if (have)
                continue;
            if (out->ntags == PUT_MAX_TAGS)
                return fail(msg, msg_size, "too many tags", NULL);
            out->tagk[out->ntags] = (struct put_str){e->tagk[i], strlen(e->tagk[i])};
            out->tagv[out->ntags] = (struct put_str){e->tagv[i], strlen(e->tagv[i])};
            out->ntags++;
        }
    }
    if (b.overflow)
        return fail(msg, msg_size, "metric and tags too long", NULL);
    if (out->ntags == 0) {
        out->tagk[0] = (struct put_str){m->dk, strlen(m->dk)};
        out->tagv[0] = (struct put_str){m->dv, strlen(m->dv)};
        out->ntags = 1;
    }
    out->ms = false;
    if (ts == -1.0)
        out->ts_ms = now_ms;
    else if (!(ts > -9.2e15 && ts < 9.2e15))
        return fail(msg, msg_size, "timestamp out of range", NULL);
    else
        out->ts_ms = (int64_t)ts * 1000;
    *value = f[1];
    return true;
}
