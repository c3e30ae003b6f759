/* test_jsonput.c - the /api/put body reader (tsd/jsonput.h): objects and arrays, number text
 * kept as sent, escapes, skipped fields, malformed bodies reported before any point by
 * jsonput_parse, and the one pass (jsonput_read) giving the same points and the same errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/jsonput.h"

struct seen {
    int n;
    char metric[8][64];
    char value[8][64];
    char ts[8][64];
    size_t ntags[8];
    char tag0[8][64];
    bool not_object[8];
    bool tags_present[8];
};

static void copy(char *dst, struct put_str s)
{
    if (!s.p) {
        strcpy(dst, "<null>");
        return;
    }
    memcpy(dst, s.p, s.len);
    dst[s.len] = '\0';
}

static int on_point(void *arg, size_t index, struct jsonput_point *p)
{
    struct seen *x = arg;
    assert_int_equal(index, (size_t)x->n);
    int i = x->n++;
    copy(x->metric[i], p->metric);
    copy(x->value[i], p->value);
    copy(x->ts[i], p->timestamp);
    x->ntags[i] = p->ntags;
    x->not_object[i] = p->not_object;
    x->tags_present[i] = p->tags_present;
    if (p->ntags) {
        char k[32], v[32];
        copy(k, p->tagk[0]);
        copy(v, p->tagv[0]);
        snprintf(x->tag0[i], sizeof(x->tag0[i]), "%s=%s", k, v);
    }
    return 0;
}

static int run(const char *body, struct seen *x, char *msg)
{
    memset(x, 0, sizeof(*x));
    size_t n = strlen(body), np = 0;
    char *scratch = malloc(n + 1);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    int rc = jsonput_parse(body, n, scratch, pt, on_point, x, &np, msg, 256);
    if (rc == 0)
        assert_int_equal(np, (size_t)x->n);
    free(scratch);
    free(pt);
    return rc;
}

static void test_jsonput_reads_one_object_keeping_number_text(void **state)
{
    (void)state;
    struct seen x;
    char msg[256];
    assert_int_equal(run("{\"metric\":\"sys.cpu\",\"timestamp\":1356998400,\"value\":42.0,"
                         "\"tags\":{\"host\":\"web01\"}}",
                         &x, msg),
                     0);
    assert_int_equal(x.n, 1);
    assert_string_equal(x.metric[0], "sys.cpu");
    assert_string_equal(x.value[0], "42.0");
    assert_string_equal(x.ts[0], "1356998400");
    assert_string_equal(x.tag0[0], "host=web01");
}

static void test_jsonput_reads_arrays_skips_unknown_fields_and_unescapes(void **state)
{
    (void)state;
    struct seen x;
    char msg[256];
    assert_int_equal(run(" [ {\"metric\":\"a\\u00e9\\n\",\"extra\":{\"x\":[1,2,{\"y\":null}]},"
                         "\"timestamp\":\"1356998400\",\"value\":\"7\",\"tags\":{\"k\":\"v\\\"\"}},"
                         "{\"value\":1e3,\"tags\":{}}, 5 ] ",
                         &x, msg),
                     0);
    assert_int_equal(x.n, 3);
    assert_string_equal(x.metric[0], "a\xc3\xa9\n");
    assert_string_equal(x.ts[0], "1356998400");
    assert_string_equal(x.value[0], "7");
    assert_string_equal(x.tag0[0], "k=v\"");
    assert_string_equal(x.metric[1], "<null>");
    assert_string_equal(x.value[1], "1e3");
    assert_true(x.tags_present[1]);
    assert_int_equal(x.ntags[1], 0);
    assert_true(x.not_object[2]);
}

static void test_jsonput_empty_array_has_no_points(void **state)
{
    (void)state;
    struct seen x;
    char msg[256];
    assert_int_equal(run("[]", &x, msg), 0);
    assert_int_equal(x.n, 0);
}

static void test_jsonput_malformed_bodies_report_nothing(void **state)
{
    (void)state;
    struct seen x;
    char msg[256];
    static const char *const bad[] = {
        "{",
        "[{\"metric\":\"a\"},",
        "[{\"metric\":\"a\"}] x",
        "{\"metric\":01}",
        "{\"metric\":\"a\\q\"}",
        "{\"metric\":tru}",
        "42",
        "\"text\"",
        "[{\"metric\":\"a\",\"value\":1.}]",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (run(bad[i], &x, msg) != -1)
            fail_msg("body [%s] was accepted", bad[i]);
        assert_int_equal(x.n, 0);
        assert_true(strlen(msg) > 0);
    }
    /* nesting is bounded */
    char deep[400];
    memset(deep, '[', 200);
    memset(deep + 200, ']', 199);
    deep[399] = '\0';
    assert_int_equal(run(deep, &x, msg), -1);
}

static int count_flags(void *arg, size_t index, struct jsonput_point *p)
{
    (void)index;
    int *flags = arg;
    if (p->too_many_tags)
        (*flags)++;
    return 0;
}

static void test_jsonput_resets_every_field_between_points(void **state)
{
    (void)state;
    /* a point with more than PUT_MAX_TAGS tags, then a normal one, in the same reused struct */
    size_t cap = 64 * 1024;
    char *body = malloc(cap);
    size_t n = (size_t)snprintf(body, cap, "[{\"metric\":\"a\",\"tags\":{");
    for (int i = 0; i < PUT_MAX_TAGS + 5; i++)
        n += (size_t)snprintf(body + n, cap - n, "%s\"k%d\":\"v\"", i ? "," : "", i);
    n += (size_t)snprintf(body + n, cap - n, "}},{\"metric\":\"b\",\"tags\":{\"k\":\"v\"}}]");
    char *scratch = malloc(n + 1);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    memset(pt, 0x5a, sizeof(*pt)); /* garbage, as from malloc */
    int flags = 0;
    size_t np = 0;
    char msg[256];
    assert_int_equal(
        jsonput_parse(body, n, scratch, pt, count_flags, &flags, &np, msg, sizeof(msg)), 0);
    assert_int_equal(np, 2);
    assert_int_equal(flags, 1); /* only the first point */
    free(body);
    free(scratch);
    free(pt);
}

static int on_metric(void *arg, size_t index, struct jsonput_point *p)
{
    (void)index;
    struct put_str *out = arg;
    *out = p->metric;
    return 0;
}

/* The string scanner looks at 8 bytes at a time: every byte value that ends a plain run ('"',
 * '\\', each control character) and every one that does not (UTF-8 bytes included), at every
 * position of the word and past the last whole word, is seen exactly where a byte-by-byte scan
 * sees it: plain strings come back whole, escapes are unescaped, raw control characters fail. */
static void test_jsonput_string_scan_finds_every_stop_byte_at_every_position(void **state)
{
    (void)state;
    char body[128], want[64], msg[256];
    char *scratch = malloc(sizeof body);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    for (int len = 0; len <= 20; len++) {
        for (int at = 0; at <= len; at++) {
            for (int c = 0; c < 256; c++) {
                /* a metric of len bytes whose byte `at` (if < len) is c, the rest plain or
                 * UTF-8; then the closing quote */
                int n = 0;
                for (int i = 0; i < len; i++)
                    want[n++] = i == at ? (char)c : (i % 3 == 2 ? (char)0xC3 : (char)('a' + i));
                int b = snprintf(body, sizeof body, "{\"metric\":\"");
                memcpy(body + b, want, (size_t)n);
                b += n;
                b += snprintf(body + b, sizeof body - (size_t)b, "\",\"value\":1}");
                struct put_str got = {NULL, 0};
                size_t np = 0;
                int rc = jsonput_parse(body, (size_t)b, scratch, pt, on_metric, &got, &np, msg,
                                       sizeof msg);
                bool stop_here = at < len && (c == '"' || c == '\\' || c < 0x20);
                if (!stop_here) {
                    assert_int_equal(rc, 0);
                    assert_int_equal(got.len, (size_t)n);
                    assert_memory_equal(got.p, want, (size_t)n);
                } else if (c < 0x20) {
                    assert_int_equal(rc, -1); /* a raw control character */
                } else if (c == '"') {
                    assert_int_equal(rc, -1); /* the string ends early: the rest is garbage */
                } else {
                    /* a backslash escapes the next byte: 'b', 'f', 'n', 'r', 't' are escapes
                     * (one byte shorter), other letters and UTF-8 are not; before the closing
                     * quote it escapes the quote and the string never ends */
                    char next = at + 1 < len ? want[at + 1] : '"';
                    if (next != '"' && strchr("bfnrt", next)) {
                        assert_int_equal(rc, 0);
                        assert_int_equal(got.len, (size_t)n - 1);
                    } else {
                        assert_int_equal(rc, -1);
                    }
                }
            }
        }
    }
    free(scratch);
    free(pt);
}

static unsigned fz_next(unsigned *r)
{
    *r = *r * 1103515245u + 12345u;
    return *r >> 8;
}

/* Appends a random JSON value (depth-limited) to b at *n (b holds 4096 bytes). */
static void fz_value(char *b, size_t *n, unsigned *r, int depth)
{
    static const char *const atoms[] = {
        "0",          "-1",          "12.5",         "1e9",     "-0.25E-3",
        "true",       "false",       "null",         "\"\"",    "\"sys.cpu\"",
        "\"h\\\"x\"", "\"\\u00e9\"", "\"\xc3\xa9\"", "\"a b\"", "123456789"};
    if (*n > 3000)
        depth = 9;
    unsigned k = fz_next(r) % (depth >= 8 ? 3u : 5u);
    if (k < 3) {
        const char *a = atoms[fz_next(r) % (sizeof atoms / sizeof atoms[0])];
        size_t l = strlen(a);
        memcpy(b + *n, a, l);
        *n += l;
        return;
    }
    bool obj = k == 3;
    b[(*n)++] = obj ? '{' : '[';
    unsigned m = fz_next(r) % 4;
    for (unsigned i = 0; i < m; i++) {
        if (i)
            b[(*n)++] = ',';
        if (fz_next(r) % 4 == 0)
            b[(*n)++] = ' ';
        if (obj) {
            *n += (size_t)sprintf(b + *n, "\"k%u\"%s:", fz_next(r) % 9, fz_next(r) % 3 ? "" : " ");
        }
        fz_value(b, n, r, depth + 1);
    }
    b[(*n)++] = obj ? '}' : ']';
}

/* The quick syntax check never accepts a body the full check rejects (random bodies, and the
 * same bodies with a byte deleted, inserted or replaced by a JSON-significant one), and it
 * accepts the plain bodies clients send, so the full check is the exception. */
static void test_jsonput_quick_syntax_check_implies_the_full_one(void **state)
{
    (void)state;
    static const char sig[] = "{}[]:,\"\\ \t\n-+.eE0123456789tfnulrsa\x01\x7f\xc3";
    unsigned r = 4242;
    char b[4096 + 64];
    size_t quick = 0, full = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = 0;
        if (fz_next(&r) % 8 == 0)
            b[n++] = ' ';
        fz_value(b, &n, &r, 0);
        if (fz_next(&r) % 8 == 0)
            b[n++] = '\n';
        for (int mut = 0; mut < 3; mut++) {
            bool q = jsonput_syntax_quick(b, n), f = jsonput_syntax_full(b, n);
            quick += q;
            full += f;
            if (q && !f)
                fail_msg("quick accepts what full rejects: %.*s", (int)n, b);
            if (n == 0)
                break;
            size_t at = fz_next(&r) % n;
            switch (fz_next(&r) % 3) {
            case 0: /* delete */
                memmove(b + at, b + at + 1, n - at - 1);
                n--;
                break;
            case 1: /* insert */
                memmove(b + at + 1, b + at, n - at);
                b[at] = sig[fz_next(&r) % (sizeof sig - 1)];
                n++;
                break;
            default: /* replace */
                b[at] = sig[fz_next(&r) % (sizeof sig - 1)];
                break;
            }
        }
    }
    assert_true(quick > 1000); /* it does accept */
    assert_true(full > quick); /* and leaves some to the full check */
    const char *plain = "[{\"metric\":\"sys.cpu.user\",\"timestamp\":1356998400,\"value\":42.5,"
                        "\"tags\":{\"host\":\"web01\",\"dc\":\"lga\"}},{\"metric\":\"m\","
                        "\"timestamp\":1356998400123,\"value\":-7,\"tags\":{\"a\":\"b\"}}]";
    assert_true(jsonput_syntax_quick(plain, strlen(plain)));
    const char *pretty = "[\n  {\"metric\": \"m\", \"value\": 1e3, \"tags\": {}}\n]\n";
    assert_true(jsonput_syntax_quick(pretty, strlen(pretty)));
}

/* Every field of each point a reader reports, as text, one line a point; the tags of the
 * previous point, to check tags_repeat. */
struct record {
    char *buf;
    size_t len, cap;
    const char *body;
    char prev_tags[4096];
    size_t repeats;
};

static void rec_str(struct record *x, const char *name, struct put_str s)
{
    if (x->len + s.len + 64 > x->cap) {
        x->cap = (x->len + s.len + 64) * 2;
        x->buf = realloc(x->buf, x->cap);
        assert_non_null(x->buf);
    }
    x->len += (size_t)sprintf(x->buf + x->len, " %s", name);
    if (!s.p) {
        x->len += (size_t)sprintf(x->buf + x->len, "=<null>");
        return;
    }
    x->len += (size_t)sprintf(x->buf + x->len, "[%zu]=", s.len);
    memcpy(x->buf + x->len, s.p, s.len);
    x->len += s.len;
}

static int on_record(void *arg, size_t index, struct jsonput_point *p)
{
    struct record *x = arg;
    char head[128];
    snprintf(head, sizeof head, "#%zu%s%s%s%s src=%zu+%zu", index, p->not_object ? " !obj" : "",
             p->tags_present ? " tags" : "", p->too_many_tags ? " toomany" : "",
             p->timestamp_is_string ? " tss" : "", (size_t)(p->src - x->body), p->src_len);
    rec_str(x, head, (struct put_str){"", 0});
    rec_str(x, "m", p->metric);
    rec_str(x, "t", p->timestamp);
    rec_str(x, "v", p->value);
    size_t tags_at = x->len;
    for (size_t i = 0; i < p->ntags; i++) {
        rec_str(x, "k", p->tagk[i]);
        rec_str(x, "=", p->tagv[i]);
    }
    /* tags_repeat: the same tags as the previous point */
    size_t tl = x->len - tags_at < sizeof x->prev_tags - 1 ? x->len - tags_at : 0;
    if (p->tags_repeat) {
        x->repeats++;
        assert_int_equal(strlen(x->prev_tags), tl);
        assert_memory_equal(x->prev_tags, x->buf + tags_at, tl);
    }
    memcpy(x->prev_tags, x->buf + tags_at, tl);
    x->prev_tags[tl] = '\0';
    rec_str(x, "\n", (struct put_str){"", 0});
    return 0;
}

/* Appends a datapoint-like value to b at *n: the fields in a random order, some missing, some
 * unknown, tags with escapes, nulls, repeats and nested values, random whitespace. */
static void fz_point(char *b, size_t *n, unsigned *r)
{
    static const char *const fields[] = {"\"metric\":\"sys.cpu.user\"",
                                         "\"metric\":\"a\\u00e9\\n\"",
                                         "\"metric\":null",
                                         "\"metric\":42",
                                         "\"timestamp\":1356998400",
                                         "\"timestamp\":\"1356998400\"",
                                         "\"timestamp\":1.5e9",
                                         "\"value\":42.5",
                                         "\"value\":\"7\"",
                                         "\"value\":null",
                                         "\"value\":[1]",
                                         "\"value\":-0.25E-3",
                                         "\"extra\":{\"x\":[1,{\"y\":null}]}",
                                         "\"tags\":[]",
                                         "\"tags\":null",
                                         "\"ta\\u0067s\":{\"k\":\"v\"}",
                                         "\"value\":true"};
    static const char *const tags[] = {
        "\"host\":\"host_12\"", "\"dc\":\"dc_0\"", "\"k\\\"\":\"v\\\\\"",
        "\"host\":\"web02\"",   "\"n\":null",      "\"o\":{\"a\":1}",
        "\"arr\":[]",           "\"e\":\"\"",      "\"\xc3\xa9\":\"\\ud83d\\ude00\""};
    static const char *const ws[] = {"", "", "", " ", "\n\t", "\r "};
    static const char *const vals[] = {"42", "-7", "0.25", "1e3",      "\"12\"", "null",
                                       "01", "1.", "-",    "\"a\\n\"", "[1]",    "true"};
    static const char *const tv[] = {"host_12", "dc_0", "a\\\"b", "", "\\u00e9", "svc_2"};
    if (fz_next(r) % 2 == 0) {
        /* the common shape (jsonput's fast path), compact or with json.dumps' separators (", "
         * and ": "), now and then with a value it does not take */
        bool sp = fz_next(r) % 3 == 0;
        const char *c = sp ? ", " : ",", *col = sp ? ": " : ":";
        *n += (size_t)sprintf(b + *n,
                              "{\"metric\"%s\"%s\"%s\"timestamp\"%s%s%s\"value\"%s%s%s\"tags\"%s{",
                              col, fz_next(r) % 8 ? "sys.cpu.user" : "a\\tb", c, col,
                              fz_next(r) % 4 ? "1356998400" : vals[fz_next(r) % 12], c, col,
                              fz_next(r) % 3 ? "42.5" : vals[fz_next(r) % 12], c, col);
        /* half the time the previous such point's tags again (in either shape) */
        static char last[512];
        if (fz_next(r) % 2 == 0 && last[0]) {
            *n += (size_t)sprintf(b + *n, "%s", last);
            return;
        }
        size_t t0 = *n;
        unsigned t = fz_next(r) % 7;
        for (unsigned k = 0; k < t; k++)
            *n += (size_t)sprintf(b + *n, "%s\"k%u\"%s\"%s\"", k ? c : "", fz_next(r) % 5, col,
                                  tv[fz_next(r) % 6]);
        *n += (size_t)sprintf(b + *n, "}}");
        memcpy(last, b + t0, *n - t0);
        last[*n - t0] = '\0';
        return;
    }
    if (fz_next(r) % 10 == 0) {
        fz_value(b, n, r, 6); /* any value as an element */
        return;
    }
    *n += (size_t)sprintf(b + *n, "{%s", ws[fz_next(r) % 6]);
    unsigned m = fz_next(r) % 6;
    for (unsigned i = 0; i < m; i++) {
        if (i)
            *n += (size_t)sprintf(b + *n, "%s,%s", ws[fz_next(r) % 6], ws[fz_next(r) % 6]);
        if (fz_next(r) % 3 == 0) {
            *n += (size_t)sprintf(b + *n, "\"tags\"%s:%s{", ws[fz_next(r) % 6], ws[fz_next(r) % 6]);
            unsigned t = fz_next(r) % 5;
            for (unsigned k = 0; k < t; k++)
                *n += (size_t)sprintf(b + *n, "%s%s%s", k ? "," : "", ws[fz_next(r) % 6],
                                      tags[fz_next(r) % (sizeof tags / sizeof tags[0])]);
            b[(*n)++] = '}';
        } else {
            *n += (size_t)sprintf(b + *n, "%s",
                                  fields[fz_next(r) % (sizeof fields / sizeof fields[0])]);
        }
    }
    *n += (size_t)sprintf(b + *n, "%s}", ws[fz_next(r) % 6]);
}

/* jsonput_read (one pass) against jsonput_parse (check, then read), and against itself without
 * the fast path for the common shape of a point: random bodies of points (half of them in that
 * shape) and of any values, and the same bodies with bytes deleted, inserted or replaced by
 * JSON-significant ones, give the same result, the same message (offset included) for a
 * malformed body, and the same points for a well-formed one; jsonput_check agrees with
 * jsonput_parse on every body. */
static void test_jsonput_one_pass_reads_and_words_errors_as_two_passes(void **state)
{
    (void)state;
    static const char sig[] = "{}[]:,\"\\ \t\n-+.eE0123456789tfnulrsa\x01\x7f\xc3";
    unsigned r = 777;
    char b[8192];
    char *scratch = malloc(sizeof b + 1);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    struct record x1 = {0}, x2 = {0}, x3 = {0};
    size_t good = 0, bad = 0, points = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = 0;
        if (fz_next(&r) % 8 == 0)
            b[n++] = ' ';
        if (fz_next(&r) % 16 == 0) {
            fz_value(b, &n, &r, 0);
        } else if (fz_next(&r) % 4 == 0) {
            fz_point(b, &n, &r);
        } else {
            b[n++] = '[';
            unsigned np = fz_next(&r) % 5;
            for (unsigned i = 0; i < np && n < 4000; i++) {
                if (i)
                    b[n++] = ',';
                fz_point(b, &n, &r);
            }
            b[n++] = ']';
        }
        if (fz_next(&r) % 8 == 0)
            b[n++] = '\n';
        for (int mut = 0; mut < 3; mut++) {
            char m1[256] = "", m2[256] = "", m3[256] = "";
            size_t n1 = 99, n2 = 99;
            x1.len = x2.len = 0;
            x1.prev_tags[0] = x2.prev_tags[0] = '\0';
            x1.body = x2.body = b;
            int r1 = jsonput_parse(b, n, scratch, pt, on_record, &x1, &n1, m1, sizeof m1);
            int r2 = jsonput_read(b, n, scratch, pt, on_record, &x2, &n2, m2, sizeof m2);
            int r3 = jsonput_check(b, n, m3, sizeof m3);
            if (r1 != r2 || strcmp(m1, m2) != 0 || (r1 == 0 && r3 != 0) ||
                (r1 != 0 && strcmp(m1, m3) != 0))
                fail_msg("body [%.*s]: parse %d [%s], read %d [%s], check %d [%s]", (int)n, b, r1,
                         m1, r2, m2, r3, m3);
            /* the same read without the fast path for the common shape */
            char m4[256] = "";
            size_t n4 = 99;
            x3.len = 0;
            x3.body = b;
            jsonput_set_fast_path(false);
            int r4 = jsonput_read(b, n, scratch, pt, on_record, &x3, &n4, m4, sizeof m4);
            jsonput_set_fast_path(true);
            if (r4 != r2 || strcmp(m4, m2) != 0 || x3.len != x2.len ||
                memcmp(x3.buf, x2.buf, x2.len) != 0)
                fail_msg("body [%.*s]: fast path %d [%s]:\n%.*s---\ngeneral %d [%s]:\n%.*s", (int)n,
                         b, r2, m2, (int)x2.len, x2.buf, r4, m4, (int)x3.len, x3.buf);
            if (r1 == 0) {
                good++;
                points += n1;
                assert_int_equal(n1, n2);
                if (x1.len != x2.len || memcmp(x1.buf, x2.buf, x1.len) != 0)
                    fail_msg("body [%.*s]: points differ:\n%.*s---\n%.*s", (int)n, b, (int)x1.len,
                             x1.buf, (int)x2.len, x2.buf);
            } else {
                bad++;
                assert_int_equal(x1.len, 0); /* the two passes report nothing */
                assert_true(strlen(m2) > 0);
            }
            if (n == 0)
                break;
            size_t at = fz_next(&r) % n;
            switch (fz_next(&r) % 3) {
            case 0: /* delete */
                memmove(b + at, b + at + 1, n - at - 1);
                n--;
                break;
            case 1: /* insert */
                memmove(b + at + 1, b + at, n - at);
                b[at] = sig[fz_next(&r) % (sizeof sig - 1)];
                n++;
                break;
            default: /* replace */
                b[at] = sig[fz_next(&r) % (sizeof sig - 1)];
                break;
            }
        }
    }
    assert_true(good > 5000 && bad > 5000 && points > 10000); /* both kinds, many points */
    assert_true(x2.repeats > 100);                            /* and repeated tags */
    free(x1.buf);
    free(x2.buf);
    free(x3.buf);
    free(scratch);
    free(pt);
}

/* The errors as the two passes have always worded them (message and offset), from the one pass
 * too: the first error of the body, wherever the points before it are. */
static void test_jsonput_one_pass_error_messages(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"{", "expected a field name at offset 1"},
        {"[{\"metric\":\"a\"},", "unexpected end of input at offset 16"},
        {"[{\"metric\":\"a\"}] x", "trailing characters after the JSON value at offset 17"},
        {"{\"metric\":01}", "expected ',' or '}' at offset 11"},
        {"{\"metric\":\"a\\q\"}", "bad escape in string at offset 14"},
        {"{\"metric\":tru}", "unexpected character at offset 10"},
        {"42", "expected a datapoint object or an array of them"},
        {"\"text\"", "expected a datapoint object or an array of them"},
        {"", "unexpected end of input at offset 0"},
        {"  x", "unexpected character at offset 2"},
        {"[{\"metric\":\"a\",\"value\":1.}]", "bad number at offset 23"},
        {"[{\"metric\":\"a\"} {\"metric\":\"b\"}]", "expected ',' or ']' at offset 16"},
        {"[{\"metric\":\"a\",}]", "expected a field name at offset 15"},
        {"[{\"metric\" \"a\"}]", "expected ':' at offset 11"},
        {"[{\"tags\":{\"a\":\"b\",}}]", "expected a field name at offset 18"},
        {"[{\"tags\":{\"a\" 1}}]", "expected ':' at offset 14"},
        {"[{\"tags\":{\"a\":1 \"b\":2}}]", "expected ',' or '}' at offset 16"},
        {"[{\"tags\":{\"a\":\"\x01\"}}]", "control character in string at offset 15"},
        {"[{\"tags\":{\"a\":\"\\ud800x\"}}]", "bad surrogate pair at offset 21"},
        {"[{\"tags\":{\"a\":\"\\u12g4\"}}]", "bad \\u escape at offset 17"},
        {"[{\"m\":\"abc", "unterminated string at offset 10"},
        {"[1,{\"metric\":\"a\"},[}]", "unexpected character at offset 19"},
        {"{\"metric\":\"a\"}}", "trailing characters after the JSON value at offset 14"},
    };
    char *scratch = malloc(64);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *body = cases[i][0];
        size_t n = strlen(body), np = 0;
        char m1[256] = "", m2[256] = "", m3[256] = "";
        struct record x = {0};
        x.body = body;
        assert_int_equal(jsonput_read(body, n, scratch, pt, on_record, &x, &np, m1, sizeof m1), -1);
        assert_int_equal(jsonput_parse(body, n, scratch, pt, on_record, &x, &np, m2, sizeof m2),
                         -1);
        assert_int_equal(jsonput_check(body, n, m3, sizeof m3), -1);
        if (strcmp(m1, cases[i][1]) || strcmp(m2, cases[i][1]) || strcmp(m3, cases[i][1]))
            fail_msg("body [%s]: read [%s] parse [%s] check [%s], want [%s]", body, m1, m2, m3,
                     cases[i][1]);
        free(x.buf);
    }
    /* nesting deeper than the limit, inside a point after a good one */
    char deep[512];
    int n = sprintf(deep, "[{\"metric\":\"a\"},{\"x\":");
    memset(deep + n, '[', 100);
    deep[n + 100] = '\0';
    size_t np = 0;
    char m1[256], m2[256];
    struct record x = {0};
    x.body = deep;
    assert_int_equal(jsonput_read(deep, strlen(deep), scratch, pt, on_record, &x, &np, m1, 256),
                     -1);
    assert_int_equal(jsonput_check(deep, strlen(deep), m2, 256), -1);
    assert_string_equal(m1, m2);
    assert_non_null(strstr(m1, "nesting too deep"));
    assert_non_null(strstr(x.buf, "#0 ")); /* the one pass saw the first point */
    free(x.buf);
    free(scratch);
    free(pt);
}

static int on_repeat(void *arg, size_t index, struct jsonput_point *p)
{
    char *flags = arg;
    flags[index] = p->tags_repeat ? '1' : '0';
    if (p->tags_repeat) {
        /* the spans hold the tags the text says */
        assert_int_equal(p->ntags, 2);
        assert_memory_equal(p->tagk[0].p, "host", 4);
        assert_memory_equal(p->tagv[1].p, "dc_0", 4);
    }
    return 0;
}

/* A point whose tags text is the previous point's is reported as a repeat, with its tags; a
 * point read by the general path (a string value), other tags, or the start of the previous
 * text only is not, nor the point after a general one. */
static void test_jsonput_repeated_tags_are_reported(void **state)
{
    (void)state;
#define P(v, tags) "{\"metric\":\"m\",\"timestamp\":1356998400,\"value\":" v ",\"tags\":{" tags "}}"
#define A          "\"host\":\"web01\",\"dc\":\"dc_0\""
#define B          "\"host\":\"web02\",\"dc\":\"dc_0\""
    const char *body = "[" P("1", A) "," /* 0 */
        P("2", A) ","                    /* 1: a repeat */
        P("\"3\"", A) ","                /* 2: general */
        P("4", A) ","                    /* 3 */
        P("5", A) ","                    /* 4: a repeat */
        P("6", B) ","                    /* 5 */
        P("7", B) ", "                   /* 6: a repeat */
        P("8", "\"host\":\"web02\"") "," /* 7 */
        P("9", B) "]";                   /* 8 */
#undef B
#undef A
#undef P
    char flags[16] = "", msg[256];
    size_t n = strlen(body), np = 0;
    char *scratch = malloc(n + 1);
    struct jsonput_point *pt = malloc(sizeof(*pt));
    assert_int_equal(jsonput_read(body, n, scratch, pt, on_repeat, flags, &np, msg, sizeof msg), 0);
    assert_int_equal(np, 9);
    /* 2: a string value (general path); 3: after a general point; 5: other tags; 6: a repeat
     * of 5 (whitespace between points does not matter); 7: the first tag of the previous
     * text only; 8: after a different point */
    assert_string_equal(flags, "010010100");
    free(scratch);
    free(pt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jsonput_reads_one_object_keeping_number_text),
        cmocka_unit_test(test_jsonput_reads_arrays_skips_unknown_fields_and_unescapes),
        cmocka_unit_test(test_jsonput_empty_array_has_no_points),
        cmocka_unit_test(test_jsonput_malformed_bodies_report_nothing),
        cmocka_unit_test(test_jsonput_resets_every_field_between_points),
        cmocka_unit_test(test_jsonput_string_scan_finds_every_stop_byte_at_every_position),
        cmocka_unit_test(test_jsonput_quick_syntax_check_implies_the_full_one),
        cmocka_unit_test(test_jsonput_one_pass_reads_and_words_errors_as_two_passes),
        cmocka_unit_test(test_jsonput_one_pass_error_messages),
        cmocka_unit_test(test_jsonput_repeated_tags_are_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
