/* test_proto_prom.c - Prometheus remote write / read, protocol side (tsd/proto_prom.h): the
 * reversible name escape under different allow_specialchars settings, the label mapping and its
 * refusals, value classes (stale marker), snappy framing (bad and oversized bodies), protobuf
 * decoding of good and bad WriteRequests, matchers, and the ReadResponse builder round trip. */
#include <math.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/coding.h"
#include "tests/lib/ctest.h"
#include "tsd/proto_prom.h"

static char msg[1024];

static void roundtrip(const char *s, const char *special, const char *want_escaped)
{
    char esc[1024], back[1024];
    size_t n = prom_escape(s, strlen(s), special, esc, sizeof(esc));
    assert_int_equal(n, strlen(esc));
    if (want_escaped)
        assert_string_equal(esc, want_escaped);
    /* every escaped byte is one OpenTSDB takes under the same setting */
    size_t bad;
    if (n > 0)
        assert_true(put_name_valid(esc, n, special, &bad));
    assert_null(strchr(esc, ' '));
    assert_null(strchr(esc, '='));
    assert_null(strchr(esc, '|'));
    size_t m = prom_unescape(esc, n, back);
    assert_int_equal(m, strlen(s));
    assert_string_equal(back, s);
}

static void test_prom_escape_roundtrip(void **state)
{
    (void)state;
    roundtrip("go_gc_duration_seconds", "", "go_gc_duration_seconds");
    roundtrip("localhost:9090", "", "localhost/3A9090");
    roundtrip("localhost:9090", ":", "localhost:9090");
    roundtrip("/api/v1/query", "", "/2Fapi/2Fv1/2Fquery");
    roundtrip("/api/v1/query", "/", "/2Fapi/2Fv1/2Fquery"); /* '/' is the escape: always */
    roundtrip("a b=c|d", " =|", "a/20b/3Dc/7Cd");            /* never let through */
    roundtrip("/2F literally", "", "/2F2F/20literally");
    roundtrip("caf\xc3\xa9", "", "caf/C3/A9");
    roundtrip("", "", "");
    /* a stored name with '/' not from the escape reads back as it is */
    char back[64];
    prom_unescape("sys/cpu/zz/4", 12, back);
    assert_string_equal(back, "sys/cpu/zz/4");
    prom_unescape("a/3a", 4, back); /* lower-case hex is not an escape */
    assert_string_equal(back, "a/3a");
    /* truncation reports the full length */
    char small[4];
    assert_int_equal(prom_escape("a:b", 3, "", small, sizeof(small)), 5);
    assert_string_equal(small, "a/3");
}

static void test_prom_default_tag_setting(void **state)
{
    (void)state;
    char k[32], v[32];
    assert_true(prom_default_tag_parse("__prom=none", k, sizeof(k), v, sizeof(v), msg, 256));
    assert_string_equal(k, "__prom");
    assert_string_equal(v, "none");
    assert_false(prom_default_tag_parse("novalue", k, sizeof(k), v, sizeof(v), msg, 256));
    assert_false(prom_default_tag_parse("=x", k, sizeof(k), v, sizeof(v), msg, 256));
    assert_false(prom_default_tag_parse("a=", k, sizeof(k), v, sizeof(v), msg, 256));
    assert_false(prom_default_tag_parse("a b=c", k, sizeof(k), v, sizeof(v), msg, 256));
    assert_false(prom_default_tag_parse("a=b=c", k, sizeof(k), v, sizeof(v), msg, 256));
}

static Prometheus__Label lab[8];
static Prometheus__Label *labp[8];
static Prometheus__TimeSeries series;

static void set_labels(size_t n, const char *const *kv)
{
    prometheus__time_series__init(&series);
    for (size_t i = 0; i < n; i++) {
        prometheus__label__init(&lab[i]);
        lab[i].name = (char *)kv[2 * i];
        lab[i].value = (char *)kv[2 * i + 1];
        labp[i] = &lab[i];
    }
    series.n_labels = n;
    series.labels = labp;
}

static void test_prom_map_series(void **state)
{
    (void)state;
    const struct prom_map map = {"", "__prom", "none"};
    struct put_point *p = malloc(sizeof(*p));
    char *buf = NULL;
    size_t cap = 0;
    const char *kv[] = {"job", "node", "__name__", "up:sum", "instance", "h:9100", "empty", ""};
    set_labels(4, kv);
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 0);
    assert_int_equal(p->metric.len, 8);
    assert_memory_equal(p->metric.p, "up/3Asum", 8);
    assert_int_equal(p->ntags, 2); /* the empty-valued label is absent */
    assert_memory_equal(p->tagk[0].p, "job", 3);
    assert_memory_equal(p->tagv[1].p, "h/3A9100", 8);

    /* only __name__: the default tag */
    set_labels(1, (const char *[]){"__name__", "scalar_thing"});
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 0);
    assert_int_equal(p->ntags, 1);
    assert_memory_equal(p->tagk[0].p, "__prom", 6);
    assert_memory_equal(p->tagv[0].p, "none", 4);

    /* refusals */
    set_labels(1, (const char *[]){"job", "x"});
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "__name__"));
    set_labels(1, (const char *[]){"__name__", ""});
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 400);
    set_labels(2, (const char *[]){"__name__", "m", "", "v"});
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 400);
    set_labels(3, (const char *[]){"__name__", "m", "a", "1", "a", "2"});
    assert_int_equal(prom_map_series(&map, &series, &buf, &cap, p, msg, sizeof(msg)), 400);
    assert_non_null(strstr(msg, "twice"));
    free(buf);
    free(p);
}

static void test_prom_values(void **state)
{
    (void)state;
    double stale;
    uint64_t bits = 0x7ff0000000000002ULL;
    memcpy(&stale, &bits, sizeof(stale));
    assert_int_equal(prom_value_class(stale), PROM_VALUE_STALE);
    assert_int_equal(prom_value_class(NAN), PROM_VALUE_NAN);
    assert_int_equal(prom_value_class(-INFINITY), PROM_VALUE_INF);
    assert_int_equal(prom_value_class(1.5), PROM_VALUE_OK);
    char t[40];
    prom_value_text(42.0, t, sizeof(t));
    assert_string_equal(t, "42");
    prom_value_text(-0.0, t, sizeof(t));
    assert_string_equal(t, "-0");
    prom_value_text(0.1, t, sizeof(t));
    assert_true(strtod(t, NULL) == 0.1);
    prom_value_text(1e300, t, sizeof(t));
    assert_true(strtod(t, NULL) == 1e300);
    /* put's checks take every text made here back to the same double */
    const struct put_rules rules = {8, ""};
    static struct put_point pp;
    const double vals[] = {0.1, 1e300, -2.5e-300, 9007199254740993.0, 123456.0, 3.0e15};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        prom_value_text(vals[i], t, sizeof(t));
        memset(&pp, 0, sizeof(pp));
        pp.metric = (struct put_str){"m", 1};
        pp.ts_ms = 1700000000123;
        pp.ntags = 1;
        pp.tagk[0] = (struct put_str){"a", 1};
        pp.tagv[0] = (struct put_str){"b", 1};
        assert_int_equal(put_check_point(&pp, (struct put_str){t, strlen(t)}, &rules, msg,
                                         sizeof(msg)),
                         PUT_OK);
        double got = pp.value.kind == PUT_INT ? (double)pp.value.i : pp.value.d;
        assert_true(got == vals[i]);
    }
}

/* prom_value_put types every finite double as put types prom_value_text's text of it: edges of
 * the integer form (2^53, 1e17, -0) and many doubles of random bits. */
static void test_prom_value_put_equals_the_text_path(void **state)
{
    (void)state;
    const struct put_rules rules = {8, ""};
    static struct put_point pp;
    char t[40];
    double edge[] = {0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 9007199254740992.0, 9007199254740994.0,
                     -9007199254740994.0, 12345678901234568.0, 99999999999999984.0, 1e17, -1e17,
                     1e16, 3.4028234663852886e38, 1e-300, 4.9e-324, 1.5e300};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < 20000 + sizeof(edge) / sizeof(edge[0]); i++) {
        double v;
        if (i < sizeof(edge) / sizeof(edge[0])) {
            v = edge[i];
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            uint64_t bits = x;
            if (i % 3 == 0) /* integral values of every size too */
                v = (double)(int64_t)(x >> (x % 64));
            else
                memcpy(&v, &bits, sizeof(v));
        }
        if (prom_value_class(v) != PROM_VALUE_OK)
            continue;
        prom_value_text(v, t, sizeof(t));
        memset(&pp, 0, sizeof(pp));
        pp.metric = (struct put_str){"m", 1};
        pp.ts_ms = 1700000000123;
        pp.ntags = 1;
        pp.tagk[0] = (struct put_str){"a", 1};
        pp.tagv[0] = (struct put_str){"b", 1};
        assert_int_equal(put_check_point(&pp, (struct put_str){t, strlen(t)}, &rules, msg,
                                         sizeof(msg)),
                         PUT_OK);
        struct put_value pv = prom_value_put(v);
        assert_int_equal(pv.kind, pp.value.kind);
        if (pv.kind == PUT_INT)
            assert_int_equal(pv.i, pp.value.i);
        else
            assert_memory_equal(&pv.d, &pp.value.d, sizeof(double));
    }
}

/* Packs and compresses a WriteRequest of one series with n samples. */
static char *make_write(size_t nsamples, size_t *len)
{
    const char *kv[] = {"__name__", "http_requests_total", "code", "200"};
    set_labels(2, kv);
    Prometheus__Sample *s = calloc(nsamples ? nsamples : 1, sizeof(*s));
    Prometheus__Sample **sp = calloc(nsamples ? nsamples : 1, sizeof(*sp));
    for (size_t i = 0; i < nsamples; i++) {
        prometheus__sample__init(&s[i]);
        s[i].value = (double)i;
        s[i].timestamp = 1700000000000 + (int64_t)i * 15000;
        sp[i] = &s[i];
    }
    series.n_samples = nsamples;
    series.samples = sp;
    Prometheus__TimeSeries *tsp = &series;
    Prometheus__WriteRequest wr;
    prometheus__write_request__init(&wr);
    wr.n_timeseries = 1;
    wr.timeseries = &tsp;
    size_t n = prometheus__write_request__get_packed_size(&wr);
    uint8_t *raw = malloc(n);
    prometheus__write_request__pack(&wr, raw);
    char *out;
    assert_true(prom_snappy_encode(raw, n, &out, len));
    free(raw);
    free(s);
    free(sp);
    return out;
}

static void test_prom_write_decode(void **state)
{
    (void)state;
    size_t len, rl;
    char *body = make_write(100, &len);
    char *raw;
    assert_int_equal(prom_snappy_decode(body, len, 1 << 20, &raw, &rl, msg, sizeof(msg)), 0);
    Prometheus__WriteRequest *wr = prometheus__write_request__unpack(NULL, rl, (uint8_t *)raw);
    assert_non_null(wr);
    assert_int_equal(wr->n_timeseries, 1);
    assert_int_equal(wr->timeseries[0]->n_samples, 100);
    assert_int_equal(wr->timeseries[0]->samples[99]->timestamp, 1700000000000 + 99 * 15000);
    assert_string_equal(wr->timeseries[0]->labels[1]->value, "200");
    prometheus__write_request__free_unpacked(wr, NULL);
    /* the same through the arena (as the handler unpacks), twice on one arena */
    struct prom_arena arena;
    prom_arena_init(&arena);
    for (int round = 0; round < 2; round++) {
        wr = prometheus__write_request__unpack(&arena.alloc, rl, (uint8_t *)raw);
        assert_non_null(wr);
        assert_int_equal(wr->timeseries[0]->n_samples, 100);
        assert_true(wr->timeseries[0]->samples[42]->value == 42.0);
        assert_string_equal(wr->timeseries[0]->labels[0]->value, "http_requests_total");
        prom_arena_clear(&arena);
    }

    /* bad protobuf: cut short (a truncated varint / length) */
    assert_null(prometheus__write_request__unpack(NULL, rl - 3, (uint8_t *)raw));
    /* bad protobuf: wrong wire type for field 1 */
    const uint8_t junk[] = {0x09, 1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x7f};
    assert_null(prometheus__write_request__unpack(NULL, sizeof(junk), junk));
    free(raw);

    /* oversized: the decoded length is checked before decoding */
    assert_int_equal(prom_snappy_decode(body, len, 100, &raw, &rl, msg, sizeof(msg)), 413);
    assert_null(raw);
    assert_non_null(strstr(msg, "max_decoded_bytes"));
    /* not snappy */
    const char text[] = "{\"metric\":\"m\"}";
    assert_int_equal(prom_snappy_decode(text, sizeof(text) - 1, 1 << 20, &raw, &rl, msg,
                                        sizeof(msg)),
                     400);
    /* snappy cut short */
    assert_int_equal(prom_snappy_decode(body, len / 2, 1 << 20, &raw, &rl, msg, sizeof(msg)), 400);
    /* a body whose stated length is over the limit but that is not snappy: 400, not 413 */
    const char big_text[] = "\xff\xff\x7f{\"metric\":\"m\"}";
    assert_int_equal(prom_snappy_decode(big_text, sizeof(big_text) - 1, 100, &raw, &rl, msg,
                                        sizeof(msg)),
                     400);
    assert_null(raw);
    /* a stated length beyond the data (one pass: snappy_uncompress refuses it) */
    size_t hl = 0, n = 0;
    for (int shift = 0; hl < len; shift += 7) {
        n |= (size_t)((unsigned char)body[hl] & 0x7f) << shift;
        if (!((unsigned char)body[hl++] & 0x80))
            break;
    }
    char *longer = malloc(len + 10);
    assert_non_null(longer);
    size_t ll = 0, v = n + 1;
    for (; v >= 0x80; v >>= 7)
        longer[ll++] = (char)(0x80 | (v & 0x7f));
    longer[ll++] = (char)v;
    memcpy(longer + ll, body + hl, len - hl);
    size_t check;
    assert_int_equal(snappy_uncompressed_length(longer, ll + len - hl, &check), SNAPPY_OK);
    assert_int_equal(check, n + 1);
    assert_int_equal(prom_snappy_decode(longer, ll + len - hl, 1 << 20, &raw, &rl, msg,
                                        sizeof(msg)),
                     400);
    assert_null(raw);
    free(longer);
    free(body);
}

/* The write path's lazy view decodes the same bytes: the labels kept encoded, each one decoding
 * with Label's descriptor to what the full WriteRequest holds. */
/* The write path's reused scratch: one decode buffer and one arena for request after request.
 * prom_snappy_decode_into keeps a buffer that fits and replaces one that does not; a failed
 * decode leaves the buffer with the caller. prom_arena_reset keeps only the first 256 KiB block:
 * an unpack that took several blocks (and one that failed half way, its partial message left in
 * the arena) leaves nothing behind (ASan's leak check), and the next unpack on the arena is
 * whole. */
static void test_prom_scratch_reuse(void **state)
{
    (void)state;
    size_t len, small_len, rl;
    char *body = make_write(8000, &len), *small = make_write(10, &small_len);
    char *buf = NULL;
    size_t cap = 0;
    assert_int_equal(
        prom_snappy_decode_into(small, small_len, 1 << 24, &buf, &cap, &rl, msg, sizeof(msg)), 0);
    assert_non_null(buf);
    assert_int_equal(cap, rl);
    size_t small_rl = rl;
    /* larger: a new buffer */
    assert_int_equal(prom_snappy_decode_into(body, len, 1 << 24, &buf, &cap, &rl, msg, sizeof(msg)),
                     0);
    assert_true(rl > small_rl);
    assert_int_equal(cap, rl);
    char *big = buf;
    /* smaller again: the same buffer, the right length */
    assert_int_equal(
        prom_snappy_decode_into(small, small_len, 1 << 24, &buf, &cap, &rl, msg, sizeof(msg)), 0);
    assert_ptr_equal(buf, big);
    assert_int_equal(rl, small_rl);
    /* a failure (not snappy; over the limit) keeps the buffer the caller's */
    assert_int_equal(prom_snappy_decode_into("xyz", 3, 1 << 24, &buf, &cap, &rl, msg, sizeof(msg)),
                     400);
    assert_int_equal(prom_snappy_decode_into(body, len, 100, &buf, &cap, &rl, msg, sizeof(msg)),
                     413);
    assert_ptr_equal(buf, big);

    assert_int_equal(prom_snappy_decode_into(body, len, 1 << 24, &buf, &cap, &rl, msg, sizeof(msg)),
                     0);
    struct prom_arena arena;
    prom_arena_init(&arena);
    prom_arena_reset(&arena); /* an empty arena resets to empty */
    assert_non_null(prom_arena_get(&arena, 0));
    prom_arena_reset(&arena);
    for (int round = 0; round < 3; round++) {
        /* 8,000 samples as messages: more than one 256 KiB block */
        Prometheus__WriteRequest *wr =
            prometheus__write_request__unpack(&arena.alloc, rl, (uint8_t *)buf);
        assert_non_null(wr);
        assert_int_equal(wr->timeseries[0]->n_samples, 8000);
        assert_true(wr->timeseries[0]->samples[7999]->value == 7999.0);
        prom_arena_reset(&arena);
        /* cut short inside the samples: fails after allocating most of them */
        assert_null(prometheus__write_request__unpack(&arena.alloc, rl - 3, (uint8_t *)buf));
        prom_arena_reset(&arena);
        /* the kept block is used again: the first allocation after a reset is its start */
        char *a1 = prom_arena_get(&arena, 10);
        prom_arena_reset(&arena);
        assert_ptr_equal(prom_arena_get(&arena, 10), a1);
        prom_arena_reset(&arena);
    }
    /* one allocation larger than a block: its own block, not kept */
    assert_non_null(prom_arena_get(&arena, (size_t)1 << 20));
    prom_arena_reset(&arena);
    prom_arena_clear(&arena);
    free(buf);
    free(body);
    free(small);
}

static void test_prom_write_lazy_view(void **state)
{
    (void)state;
    size_t len, rl;
    char *body = make_write(10, &len);
    char *raw;
    assert_int_equal(prom_snappy_decode(body, len, 1 << 20, &raw, &rl, msg, sizeof(msg)), 0);
    Prometheus__WriteRequest *full = prometheus__write_request__unpack(NULL, rl, (uint8_t *)raw);
    struct prom_arena arena;
    prom_arena_init(&arena);
    Prometheus__WriteRequestLazy *lz =
        prometheus__write_request_lazy__unpack(&arena.alloc, rl, (uint8_t *)raw);
    assert_non_null(full);
    assert_non_null(lz);
    assert_int_equal(lz->n_timeseries, full->n_timeseries);
    const Prometheus__TimeSeriesLazy *ts = lz->timeseries[0];
    assert_int_equal(ts->n_labels, full->timeseries[0]->n_labels);
    assert_int_equal(ts->n_samples, 10);
    assert_true(ts->samples[7]->value == full->timeseries[0]->samples[7]->value);
    for (size_t i = 0; i < ts->n_labels; i++) {
        Prometheus__Label *l =
            prometheus__label__unpack(&arena.alloc, ts->labels[i].len, ts->labels[i].data);
        assert_non_null(l);
        assert_string_equal(l->name, full->timeseries[0]->labels[i]->name);
        assert_string_equal(l->value, full->timeseries[0]->labels[i]->value);
    }
    /* a label's bytes that are not a Label do not decode */
    const uint8_t bad[] = {0x0a, 0x7f};
    assert_null(prometheus__label__unpack(&arena.alloc, sizeof(bad), bad));
    prometheus__write_request__free_unpacked(full, NULL);
    prom_arena_clear(&arena);
    free(raw);
    free(body);
}

/* Protobuf wire bytes built by hand, to make shapes protobuf-c's packer does not. */
struct wire {
    uint8_t b[1024];
    size_t n;
};

static void w_byte(struct wire *w, uint8_t c)
{
    w->b[w->n++] = c;
}

static void w_varint(struct wire *w, uint64_t v)
{
    w->n += coding_put_varint64(w->b + w->n, v);
}

/* A length-delimited field: tag, length, bytes; long_len writes the length as a 2-byte varint
 * even when one byte would do (legal, not canonical). */
static void w_field(struct wire *w, uint8_t tag, const void *p, size_t n, bool long_len)
{
    w_byte(w, tag);
    if (long_len && n < 128) {
        w_byte(w, (uint8_t)(n | 0x80));
        w_byte(w, 0);
    } else {
        w_varint(w, n);
    }
    memcpy(w->b + w->n, p, n);
    w->n += n;
}

static void w_label(struct wire *w, const char *k, const char *v, bool long_len)
{
    struct wire l = {.n = 0};
    w_field(&l, 0x0a, k, strlen(k), false);
    w_field(&l, 0x12, v, strlen(v), false);
    w_field(w, 0x0a, l.b, l.n, long_len);
}

/* A Sample: value then timestamp (or the other way round), each left out when 0. */
static void w_sample(struct wire *w, double v, int64_t ts, bool ts_first)
{
    struct wire s = {.n = 0};
    uint8_t le[8];
    uint64_t bits;
    memcpy(&bits, &v, 8);
    coding_put_le64(le, bits);
    for (int i = 0; i < 2; i++) {
        if ((i == 0) != ts_first && bits) {
            w_byte(&s, 0x09);
            memcpy(s.b + s.n, le, 8);
            s.n += 8;
        } else if ((i == 0) == ts_first && ts) {
            w_byte(&s, 0x10);
            w_varint(&s, (uint64_t)ts);
        }
    }
    w_field(w, 0x12, s.b, s.n, false);
}

/* Decodes body both ways; returns whether the direct scan read it in place (its keys point into
 * the body), after checking both give the same status and, when 0, the same series. */
static bool decode_both(const struct wire *body, int want_status, size_t want_series)
{
    struct prom_arena a1, a2;
    prom_arena_init(&a1);
    prom_arena_init(&a2);
    struct prom_series_in *s1 = NULL, *s2 = NULL;
    size_t n1 = 0, n2 = 0;
    int st1 = prom_write_decode(&a1, body->b, body->n, &s1, &n1);
    int st2 = prom_write_unpack(&a2, body->b, body->n, &s2, &n2);
    assert_int_equal(st1, want_status);
    assert_int_equal(st2, want_status);
    bool in_place = false;
    if (st1 == 0) {
        assert_int_equal(n1, want_series);
        assert_int_equal(n2, want_series);
        for (size_t i = 0; i < n1; i++) {
            assert_true(prom_series_in_equal(&s1[i], &s2[i]));
            const uint8_t *k = (const uint8_t *)s1[i].key;
            if (s1[i].n_labels && k >= body->b && k < body->b + body->n)
                in_place = true;
        }
    }
    prom_arena_clear(&a1);
    prom_arena_clear(&a2);
    return in_place;
}

/* prom_write_decode reads the usual shape in place and every other body through protobuf-c,
 * with the same series either way; bodies protobuf-c refuses are refused. */
static void test_prom_write_scan_equals_unpack(void **state)
{
    (void)state;
    /* the usual shape: 3 series of 3 labels and 1-2 samples; a negative timestamp (10 bytes) */
    struct wire body = {.n = 0};
    for (int i = 0; i < 3; i++) {
        struct wire ts = {.n = 0};
        char host[16];
        snprintf(host, sizeof(host), "web%02d", i);
        w_label(&ts, "__name__", "cpu_user", false);
        w_label(&ts, "host", host, false);
        w_label(&ts, "dc", "lhr", false);
        w_sample(&ts, 1.25 * i, 1700000000000 + i, false);
        if (i == 2)
            w_sample(&ts, -3.5, -5, false);
        w_field(&body, 0x0a, ts.b, ts.n, false);
    }
    assert_true(decode_both(&body, 0, 3));
    struct prom_arena a;
    prom_arena_init(&a);
    struct prom_series_in *s;
    size_t n;
    assert_int_equal(prom_write_decode(&a, body.b, body.n, &s, &n), 0);
    assert_int_equal(s[2].n_samples, 2);
    assert_true(s[2].samples[1].value == -3.5);
    assert_int_equal(s[2].samples[1].timestamp, -5);
    assert_int_equal(s[1].n_labels, 3);
    Prometheus__TimeSeries *dec;
    assert_int_equal(prom_series_labels(&a, &s[1], &dec), 0);
    assert_string_equal(dec->labels[1]->name, "host");
    assert_string_equal(dec->labels[1]->value, "web01");
    prom_arena_clear(&a);

    /* in place too: a value and a timestamp of 0 (left out), no label, non-canonical lengths */
    struct wire z = {.n = 0}, zs = {.n = 0};
    w_label(&zs, "__name__", "up", true);
    w_sample(&zs, 0.0, 0, false);
    w_field(&z, 0x0a, zs.b, zs.n, true);
    struct wire nol = {.n = 0};
    w_sample(&nol, 2.0, 1700000000000, false);
    w_field(&z, 0x0a, nol.b, nol.n, false);
    assert_true(decode_both(&z, 0, 2));

    /* other shapes, through protobuf-c, same series: the timestamp before the value; a label
     * after a sample; an unknown field (an exemplar, 3); a field of the request but series */
    struct wire o1 = {.n = 0}, t1 = {.n = 0};
    w_label(&t1, "__name__", "m", false);
    w_sample(&t1, 7.0, 1700000000001, true);
    w_field(&o1, 0x0a, t1.b, t1.n, false);
    assert_false(decode_both(&o1, 0, 1));
    struct wire o2 = {.n = 0}, t2 = {.n = 0};
    w_label(&t2, "__name__", "m", false);
    w_sample(&t2, 7.0, 1700000000001, false);
    w_label(&t2, "host", "a", false);
    w_field(&o2, 0x0a, t2.b, t2.n, false);
    assert_false(decode_both(&o2, 0, 1));
    struct wire o3 = {.n = 0}, t3 = {.n = 0};
    w_label(&t3, "__name__", "m", false);
    w_sample(&t3, 7.0, 1700000000001, false);
    w_field(&t3, 0x1a, "\x0a\x00", 2, false);
    w_field(&o3, 0x0a, t3.b, t3.n, false);
    assert_false(decode_both(&o3, 0, 1));
    struct wire o4 = o1;
    w_field(&o4, 0x1a, "x", 1, false); /* WriteRequest.metadata = 3 */
    assert_false(decode_both(&o4, 0, 1));

    /* refused both ways: cut short; a length past the end; the value with another wire type */
    struct wire bad = body;
    bad.n -= 3;
    decode_both(&bad, 400, 0);
    struct wire b2 = {.n = 0};
    w_byte(&b2, 0x0a);
    w_byte(&b2, 0x7f);
    decode_both(&b2, 400, 0);
    struct wire b3 = {.n = 0}, t4 = {.n = 0};
    w_label(&t4, "__name__", "m", false);
    w_field(&t4, 0x12, "\x08\x01", 2, false); /* Sample.value as a varint */
    w_field(&b3, 0x0a, t4.b, t4.n, false);
    decode_both(&b3, 400, 0);
    /* empty: no series */
    struct wire e = {.n = 0};
    decode_both(&e, 0, 0);
}

/* The series cache: a hit gives back the names stored under the same key bytes, a different
 * key (one byte changed, or labels split differently) misses, and filling it past its bound
 * drops everything and keeps working. */
static void test_prom_series_cache(void **state)
{
    (void)state;
    struct prom_series_cache *c = prom_series_cache_new(64 << 10);
    assert_non_null(c);
    struct prom_arena arena;
    prom_arena_init(&arena);
    /* keys in struct prom_series_in's form: each label's tag byte, length and bytes; the same
     * label bytes split as "abc" + "def" are another key (the lengths are part of it), and one
     * byte changed is another */
    static const char k[] = "\x0a\x05\x0a\x01" "a\x12\x00" "\x0a\x04" "abcd" "\x0a\x02" "ef";
    static const char k2[] = "\x0a\x05\x0a\x01" "a\x12\x00" "\x0a\x03" "abc" "\x0a\x03" "def";
    static const char k3[] = "\x0a\x05\x0a\x01" "a\x12\x00" "\x0a\x04" "abcd" "\x0a\x02" "eg";
    size_t kl = sizeof(k) - 1, kl2 = sizeof(k2) - 1, kl3 = sizeof(k3) - 1;
    uint64_t h = prom_series_cache_hash(c, k, kl), h2 = prom_series_cache_hash(c, k2, kl2),
             h3 = prom_series_cache_hash(c, k3, kl3);

    struct put_point p, q;
    memset(&p, 0, sizeof(p));
    p.metric = (struct put_str){"cpu", 3};
    p.ntags = 2;
    p.tagk[0] = (struct put_str){"host", 4};
    p.tagv[0] = (struct put_str){"web01", 5};
    p.tagk[1] = (struct put_str){"dc", 2};
    p.tagv[1] = (struct put_str){"x/2Fy", 5};
    assert_null(prom_series_cache_get(c, k, kl, h, &arena));
    prom_series_cache_put(c, k, kl, h, &p, 0x0123456789abcdefULL);
    assert_int_equal(prom_series_cache_count(c), 1);
    const char *names = prom_series_cache_get(c, k, kl, h, &arena);
    assert_non_null(names);
    memset(&q, 0, sizeof(q));
    prom_series_names_load(names, &q);
    assert_int_equal(q.metric.len, 3);
    assert_memory_equal(q.metric.p, "cpu", 3);
    assert_int_equal(q.ntags, 2);
    assert_memory_equal(q.tagk[0].p, "host", 4);
    assert_memory_equal(q.tagv[0].p, "web01", 5);
    assert_int_equal(q.tagk[1].len, 2);
    assert_memory_equal(q.tagv[1].p, "x/2Fy", 5);
    /* every span has its stored length and ends in a NUL */
    assert_int_equal(q.tagk[0].len, 4);
    assert_int_equal(q.tagv[0].len, 5);
    assert_memory_equal(q.tagk[1].p, "dc", 2);
    assert_int_equal(q.tagv[1].len, 5);
    assert_int_equal(q.metric.p[3], '\0');
    assert_int_equal(q.tagk[0].p[4], '\0');
    assert_int_equal(q.tagv[1].p[5], '\0');
    /* the names as one string (ingest's series key) and the aux value put with them */
    const char *ik;
    size_t ikl;
    assert_true(prom_series_names_key(names, &ik, &ikl) == 0x0123456789abcdefULL);
    assert_int_equal(ikl, 24);
    assert_memory_equal(ik, "cpu\0host\0web01\0dc\0x/2Fy\0", 24);
    assert_ptr_equal(ik, q.metric.p);
    assert_null(prom_series_cache_get(c, k2, kl2, h2, &arena));
    assert_null(prom_series_cache_get(c, k3, kl3, h3, &arena));
    /* a present key is not added twice (nor its aux changed) */
    prom_series_cache_put(c, k, kl, h, &p, 7);
    assert_int_equal(prom_series_cache_count(c), 1);
    names = prom_series_cache_get(c, k, kl, h, &arena);
    assert_true(prom_series_names_key(names, &ik, &ikl) == 0x0123456789abcdefULL);

    /* fill well past 64 KiB: entries are dropped all at once, never beyond the bound */
    size_t max_count = 0;
    for (int i = 0; i < 5000; i++) {
        char buf[32];
        int n = snprintf(buf, sizeof(buf), "series-%d", i);
        const char *kk = buf;
        size_t l = (size_t)n;
        uint64_t hh = prom_series_cache_hash(c, kk, l);
        p.metric = (struct put_str){buf, (size_t)n};
        prom_series_cache_put(c, kk, l, hh, &p, (uint64_t)i);
        names = prom_series_cache_get(c, kk, l, hh, &arena);
        assert_non_null(names);
        prom_series_names_load(names, &q);
        assert_int_equal(q.metric.len, (size_t)n);
        assert_memory_equal(q.metric.p, buf, (size_t)n);
        assert_int_equal(q.ntags, 2);
        assert_true(prom_series_names_key(names, &ik, &ikl) == (uint64_t)i);
        size_t cnt = prom_series_cache_count(c);
        if (cnt > max_count)
            max_count = cnt;
    }
    assert_true(max_count > 100);
    assert_true(prom_series_cache_count(c) < max_count); /* it was cleared at least once */
    prom_arena_clear(&arena);
    prom_series_cache_free(c);
    prom_series_cache_free(NULL);
}

/* Threads sharing one small cache (it is emptied again and again): lookups run together under
 * the read lock, inserts alone; a hit always returns the names and aux value put for its key. */
struct sc_thread {
    struct prom_series_cache *c;
    int id;
    int hits, bad;
};

static void *sc_thread_main(void *arg)
{
    struct sc_thread *x = arg;
    struct prom_arena arena;
    prom_arena_init(&arena);
    for (int it = 0; it < 20000; it++) {
        /* mostly 200 hot keys (they fit), one op in five a cold one (the cache fills up) */
        int i = it % 5 == 4 ? 200 + (x->id * 7919 + it * 31) % 1300 : (x->id * 13 + it * 7) % 200;
        char key[32], metric[32];
        int kn = snprintf(key, sizeof(key), "series-%d", i);
        int mn = snprintf(metric, sizeof(metric), "m%d", i);
        const char *k = key;
        size_t l = (size_t)kn;
        uint64_t h = prom_series_cache_hash(x->c, k, l);
        const char *names = prom_series_cache_get(x->c, k, l, h, &arena);
        if (names) {
            struct put_point q;
            memset(&q, 0, sizeof(q));
            prom_series_names_load(names, &q);
            const char *ik;
            size_t ikl;
            x->hits++;
            if (q.metric.len != (size_t)mn || memcmp(q.metric.p, metric, (size_t)mn) ||
                q.ntags != 1 || q.tagv[0].len != (size_t)kn ||
                memcmp(q.tagv[0].p, key, (size_t)kn) ||
                prom_series_names_key(names, &ik, &ikl) != (uint64_t)i)
                x->bad++;
        } else {
            struct put_point p;
            memset(&p, 0, sizeof(p));
            p.metric = (struct put_str){metric, (size_t)mn};
            p.ntags = 1;
            p.tagk[0] = (struct put_str){"k", 1};
            p.tagv[0] = (struct put_str){key, (size_t)kn};
            prom_series_cache_put(x->c, k, l, h, &p, (uint64_t)i);
        }
        if (it % 64 == 63)
            prom_arena_reset(&arena);
    }
    prom_arena_clear(&arena);
    return NULL;
}

static void test_prom_series_cache_threads(void **state)
{
    (void)state;
    struct prom_series_cache *c = prom_series_cache_new(64 << 10);
    assert_non_null(c);
    struct sc_thread x[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        x[i] = (struct sc_thread){.c = c, .id = i};
        assert_int_equal(pthread_create(&th[i], NULL, sc_thread_main, &x[i]), 0);
    }
    int hits = 0;
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(x[i].bad, 0);
        hits += x[i].hits;
    }
    assert_true(hits > 1000); /* lookups did find entries (and ran while others inserted) */
    assert_true(prom_series_cache_count(c) < 1500); /* the 1,500 keys never fitted at once */
    prom_series_cache_free(c);
}

static void test_prom_matchers(void **state)
{
    (void)state;
    Prometheus__LabelMatcher lm[4], *lmp[4];
    const struct {
        int type;
        const char *name, *value;
    } spec[] = {{0, "__name__", "up"}, {1, "job", "x"}, {2, "instance", "h.*:9[0-9]+"},
                {3, "env", "prod|stage"}};
    for (int i = 0; i < 4; i++) {
        prometheus__label_matcher__init(&lm[i]);
        lm[i].type = spec[i].type;
        lm[i].name = (char *)spec[i].name;
        lm[i].value = (char *)spec[i].value;
        lmp[i] = &lm[i];
    }
    Prometheus__Query q;
    prometheus__query__init(&q);
    q.n_matchers = 4;
    q.matchers = lmp;
    struct prom_matchers *m = prom_matchers_new(&q, msg, sizeof(msg));
    assert_non_null(m);
    assert_string_equal(prom_matchers_metric(m), "up");
    const char *n1[] = {"__name__", "instance", "job"};
    const char *v1[] = {"up", "host:9100", "node"};
    assert_true(prom_matchers_match(m, n1, v1, 3));
    const char *v2[] = {"up", "host:9100", "x"}; /* NEQ fails */
    assert_false(prom_matchers_match(m, n1, v2, 3));
    const char *v3[] = {"up", "xhost:9100", "node"}; /* RE is anchored */
    assert_false(prom_matchers_match(m, n1, v3, 3));
    const char *n4[] = {"__name__", "instance", "env"};
    const char *v4[] = {"up", "h:90", "prod"}; /* NRE */
    assert_false(prom_matchers_match(m, n4, v4, 3));
    const char *v5[] = {"up", "h:90", "production"}; /* NRE anchored: matches */
    assert_true(prom_matchers_match(m, n4, v5, 3));
    const char *v6[] = {"upx", "h:90", "dev"};
    assert_false(prom_matchers_match(m, n4, v6, 3));
    prom_matchers_free(m);

    /* absent label = "": job!="" needs it, env=~"" wants it absent */
    lm[1].type = 1;
    lm[1].value = (char *)"";
    q.n_matchers = 2;
    m = prom_matchers_new(&q, msg, sizeof(msg));
    const char *n7[] = {"__name__"};
    const char *v7[] = {"up"};
    assert_false(prom_matchers_match(m, n7, v7, 1));
    prom_matchers_free(m);

    /* a bad expression, and no __name__ */
    lm[2].value = (char *)"(unclosed";
    q.n_matchers = 3;
    assert_null(prom_matchers_new(&q, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "instance"));
    q.n_matchers = 1;
    q.matchers = &lmp[1];
    m = prom_matchers_new(&q, msg, sizeof(msg));
    assert_null(prom_matchers_metric(m));
    prom_matchers_free(m);
}

static void test_prom_read_response_roundtrip(void **state)
{
    (void)state;
    struct prom_read_builder *rb = prom_rb_new(2);
    const char *n[] = {"job", "__name__", "instance"};
    const char *v[] = {"node", "up", "h:1"};
    assert_true(prom_rb_series(rb, 1, n, v, 3));
    for (int i = 0; i < 1000; i++)
        assert_true(prom_rb_sample(rb, 1700000000000 + i, i * 0.5));
    assert_true(prom_rb_series(rb, 1, n, v, 1));
    assert_true(prom_rb_sample(rb, 5, 1));
    prom_rb_drop_series(rb); /* gone again */
    assert_true(prom_rb_series(rb, 0, n + 1, v + 1, 1));
    assert_true(prom_rb_sample(rb, 7, -3));
    assert_int_equal(prom_rb_samples(rb), 1001);
    char *out;
    size_t len;
    assert_true(prom_rb_finish(rb, &out, &len));
    prom_rb_free(rb);
    char *raw;
    size_t rl;
    assert_int_equal(prom_snappy_decode(out, len, 1 << 24, &raw, &rl, msg, sizeof(msg)), 0);
    Prometheus__ReadResponse *r = prometheus__read_response__unpack(NULL, rl, (uint8_t *)raw);
    assert_non_null(r);
    assert_int_equal(r->n_results, 2);
    assert_int_equal(r->results[0]->n_timeseries, 1);
    assert_int_equal(r->results[0]->timeseries[0]->samples[0]->timestamp, 7);
    assert_int_equal(r->results[1]->n_timeseries, 1);
    Prometheus__TimeSeries *ts = r->results[1]->timeseries[0];
    /* labels sorted by name */
    assert_string_equal(ts->labels[0]->name, "__name__");
    assert_string_equal(ts->labels[1]->name, "instance");
    assert_string_equal(ts->labels[2]->name, "job");
    assert_int_equal(ts->n_samples, 1000);
    assert_true(ts->samples[999]->value == 999 * 0.5);
    assert_int_equal(ts->samples[999]->timestamp, 1700000000999);
    prometheus__read_response__free_unpacked(r, NULL);
    free(raw);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prom_escape_roundtrip),
        cmocka_unit_test(test_prom_default_tag_setting),
        cmocka_unit_test(test_prom_map_series),
        cmocka_unit_test(test_prom_values),
        cmocka_unit_test(test_prom_value_put_equals_the_text_path),
        cmocka_unit_test(test_prom_write_decode),
        cmocka_unit_test(test_prom_scratch_reuse),
        cmocka_unit_test(test_prom_write_lazy_view),
        cmocka_unit_test(test_prom_write_scan_equals_unpack),
        cmocka_unit_test(test_prom_series_cache),
        cmocka_unit_test(test_prom_series_cache_threads),
        cmocka_unit_test(test_prom_matchers),
        cmocka_unit_test(test_prom_read_response_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
