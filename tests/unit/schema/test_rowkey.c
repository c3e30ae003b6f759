/* test_rowkey.c - row keys, TSUIDs, OpenTSDB's salt (Java Arrays.hashCode semantics) and the
 * tag-uid row filter. Vectors are computed by hand from the format description. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "schema/rowkey.h"
#include "tests/lib/ctest.h"

static struct rowkey_layout salted(unsigned width, unsigned buckets)
{
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    l.salt_width = width;
    l.salt_buckets = buckets;
    return l;
}

static void test_java_hash_matches_arrays_hashcode(void **state)
{
    (void)state;
    /* h = 1; h = 31*h + (signed byte), 32-bit wrap. For {0,0,1,0,0,1,0,0,1} the steps are
     * 31, 961, 29792, 923552, 28630112, 887533473, 1743733887, -1778824351 (wrapped),
     * 691019968 (wrapped). */
    const uint8_t a[] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    assert_int_equal(rowkey_java_hash(a, sizeof(a)), 691019968);
    const uint8_t b[] = {0, 0, 1, 0, 0, 1, 0, 0, 2};
    assert_int_equal(rowkey_java_hash(b, sizeof(b)), 691019969);
    /* bytes >= 0x80 are negative in Java */
    const uint8_t c[] = {0xff, 0xfe, 0x80, 0x7f, 0x00, 0x01, 0x91, 0xa2, 0xb3};
    assert_int_equal(rowkey_java_hash(c, sizeof(c)), -170178878);
    assert_int_equal(rowkey_java_hash(NULL, 0), 1);
}

/* The definition, one byte a step: the reference for the four-bytes-a-step hash. */
static int32_t java_hash_bytewise(const uint8_t *p, size_t n)
{
    uint32_t h = 1;
    for (size_t i = 0; i < n; i++)
        h = 31u * h + (uint32_t)(int32_t)(int8_t)p[i];
    return (int32_t)h;
}

static void test_java_hash_equals_the_bytewise_definition_at_every_length(void **state)
{
    (void)state;
    uint8_t buf[64];
    uint32_t x = 12345;
    for (int round = 0; round < 200; round++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            x = x * 1103515245u + 12345u;
            buf[i] = (uint8_t)(x >> 16); /* both signs of byte */
        }
        for (size_t n = 0; n <= sizeof(buf); n++)
            assert_int_equal(rowkey_java_hash(buf, n), java_hash_bytewise(buf, n));
    }
}

static void test_salt_bucket_is_abs_of_java_remainder(void **state)
{
    (void)state;
    struct rowkey_layout l = salted(1, 20);
    const uint8_t a[] = {0, 0, 1, 0, 0, 1, 0, 0, 1};
    assert_int_equal(rowkey_salt_bucket(&l, a, sizeof(a)), 8); /* 691019968 % 20 */
    const uint8_t c[] = {0xff, 0xfe, 0x80, 0x7f, 0x00, 0x01, 0x91, 0xa2, 0xb3};
    assert_int_equal(rowkey_salt_bucket(&l, c, sizeof(c)), 18); /* -170178878 % 20 = -18 */
    const uint8_t d[] = {0, 0, 5, 0, 0, 1, 0, 0, 1, 0, 0, 2, 0, 0, 3};
    assert_int_equal(rowkey_salt_bucket(&l, d, sizeof(d)), 11); /* -1286499451 % 20 = -11 */
    l.salt_buckets = 7;
    assert_int_equal(rowkey_salt_bucket(&l, d, sizeof(d)), 6);
    l.salt_width = 0;
    assert_int_equal(rowkey_salt_bucket(&l, d, sizeof(d)), 0);
    /* the global annotation row (metric 000000) is never salted */
    l = salted(1, 20);
    const uint8_t z[] = {0, 0, 0};
    assert_int_equal(rowkey_salt_bucket(&l, z, sizeof(z)), 0);
}

static void test_salt_bytes_follow_get_salt_bytes(void **state)
{
    (void)state;
    uint8_t out[8];
    struct rowkey_layout l = salted(2, 300);
    rowkey_salt_bytes(&l, 0x0123, out);
    assert_int_equal(out[0], 0x01);
    assert_int_equal(out[1], 0x23);
    /* width 5: Java's int shift by 32 is a shift by 0, so byte 0 repeats the low byte */
    l = salted(5, 300);
    rowkey_salt_bytes(&l, 0x0123, out);
    const uint8_t want[] = {0x23, 0x00, 0x00, 0x01, 0x23};
    assert_memory_equal(out, want, 5);
}

static void test_rowkey_encode_is_byte_exact_and_decodes(void **state)
{
    (void)state;
    struct rowkey_layout l = salted(1, 20);
    struct rowkey_tag tags[2] = {{5, 7}, {2, 9}}; /* unsorted on purpose */
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl;
    struct ct_err err = {0};
    assert_int_equal(rowkey_tsuid_build(&l, 1, tags, 2, tsuid, sizeof(tsuid), &tl, &err), CT_OK);
    const uint8_t want_tsuid[] = {0, 0, 1, 0, 0, 2, 0, 0, 9, 0, 0, 5, 0, 0, 7};
    assert_int_equal(tl, sizeof(want_tsuid));
    assert_memory_equal(tsuid, want_tsuid, tl);
    uint8_t row[ROWKEY_MAX_BYTES];
    size_t rl = rowkey_encode(&l, tsuid, tl, 1356998400 + 1234, row); /* 2013-01-01 00:20:34 */
    assert_int_equal(rl, 1 + 3 + 4 + 12);
    uint32_t bucket = rowkey_salt_bucket(&l, tsuid, tl);
    const uint8_t want_row[] = {
        (uint8_t)bucket, 0, 0, 1, 0x50, 0xE2, 0x27, 0x00, 0, 0, 2, 0, 0, 9, 0, 0, 5, 0, 0, 7};
    assert_memory_equal(row, want_row, rl);
    struct rowkey_parts p;
    assert_int_equal(rowkey_decode(&l, row, rl, &p, &err), CT_OK);
    assert_int_equal(p.salt, bucket);
    assert_int_equal(p.metric, 1);
    assert_int_equal(p.base_s, 1356998400);
    assert_int_equal(p.ntags, 2);
    assert_int_equal(rowkey_parts_tag(&l, &p, 1).tagk, 5);
    assert_int_equal(rowkey_parts_tag(&l, &p, 1).tagv, 7);
    uint8_t back[ROWKEY_MAX_TSUID];
    assert_int_equal(rowkey_tsuid_of(&l, row, rl, back, sizeof(back)), tl);
    assert_memory_equal(back, tsuid, tl);
    assert_true(rowkey_salt_ok(&l, row, rl));
    row[0] ^= 1;
    assert_false(rowkey_salt_ok(&l, row, rl));
    assert_int_equal(rowkey_decode(&l, row, rl - 1, &p, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "does not fit"));
}

/* A writer keeps a series' salt bucket and encodes its keys with it: the same bytes as the
 * general encoder, whatever the layout. */
static void test_rowkey_encode_salted_with_the_series_bucket_is_rowkey_encode(void **state)
{
    (void)state;
    const unsigned widths[] = {0, 1, 2, 4, 8};
    for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
        struct rowkey_layout l = salted(widths[w], widths[w] == 1 ? 200 : 1000003);
        for (uint64_t m = 1; m < 300; m += 7) {
            struct rowkey_tag tags[2] = {{m % 5 + 1, m * 3}, {m % 5 + 9, m + 1}};
            uint8_t tsuid[ROWKEY_MAX_TSUID], a[ROWKEY_MAX_BYTES], b[ROWKEY_MAX_BYTES];
            size_t tl;
            struct ct_err err = {0};
            assert_int_equal(rowkey_tsuid_build(&l, m, tags, 2, tsuid, sizeof(tsuid), &tl, &err),
                             CT_OK);
            uint32_t bucket = rowkey_salt_bucket(&l, tsuid, tl);
            size_t al = rowkey_encode(&l, tsuid, tl, 1356998400 + (int64_t)m * 977, a);
            size_t bl =
                rowkey_encode_salted(&l, bucket, tsuid, tl, 1356998400 + (int64_t)m * 977, b);
            assert_int_equal(al, bl);
            assert_memory_equal(a, b, al);
            if (widths[w] > 0) { /* and the salt is what it was given */
                rowkey_encode_salted(&l, bucket + 1, tsuid, tl, 1356998400, b);
                assert_memory_not_equal(a, b, widths[w]);
            }
        }
    }
}

static void test_tsuid_build_rejects_bad_input(void **state)
{
    (void)state;
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    uint8_t out[ROWKEY_MAX_TSUID];
    size_t n;
    struct ct_err err = {0};
    struct rowkey_tag dup[2] = {{3, 1}, {3, 2}};
    assert_int_equal(rowkey_tsuid_build(&l, 1, dup, 2, out, sizeof(out), &n, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate"));
    assert_int_equal(rowkey_tsuid_build(&l, 1, dup, 0, out, sizeof(out), &n, &err), CT_EINVAL);
    struct rowkey_tag wide[1] = {{1u << 24, 1}};
    assert_int_equal(rowkey_tsuid_build(&l, 1, wide, 1, out, sizeof(out), &n, &err), CT_EINVAL);
    struct rowkey_tag ok[1] = {{1, 1}};
    assert_int_equal(rowkey_tsuid_build(&l, 1, ok, 1, out, 8, &n, &err), CT_ELIMIT);
    l.salt_width = 9;
    assert_int_equal(rowkey_layout_check(&l, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "salt.width"));
}

static void test_base_hour_and_scan_bounds(void **state)
{
    (void)state;
    assert_int_equal(rowkey_base_hour_s(1356998400 + 3599), 1356998400);
    assert_int_equal(rowkey_base_hour_s(1356998400 + 3600), 1356998400 + 3600);
    struct rowkey_layout l = salted(1, 4);
    uint8_t a[16], b[16];
    assert_int_equal(rowkey_scan_start(&l, 3, 1, 1356998400 + 10, a), 8);
    assert_int_equal(rowkey_scan_stop(&l, 3, 1, 1356998400 + 10, b), 8);
    const uint8_t wa[] = {3, 0, 0, 1, 0x50, 0xE2, 0x27, 0x00};
    const uint8_t wb[] = {3, 0, 0, 1, 0x50, 0xE2, 0x35, 0x10};
    assert_memory_equal(a, wa, 8);
    assert_memory_equal(b, wb, 8);
    /* the reversed window over two hours: lower is the first hour's key (every row of it is
     * above), upper the second hour's key then 0xFF bytes (every row of it is at or below) */
    uint8_t up[ROWKEY_MAX_BYTES + ROWKEY_MAX_TSUID], lo[ROWKEY_MAX_BYTES];
    size_t ul = 0, ll = 0;
    rowkey_scan_window_reversed(&l, 3, 1, 1356998400 + 10, 1356998400 + 3600 + 5, up, &ul, lo, &ll);
    assert_int_equal(ll, 8);
    assert_memory_equal(lo, wa, 8);
    assert_int_equal(ul, 8 + ROWKEY_MAX_TSUID);
    assert_memory_equal(up, wb, 8);
    for (size_t i = 8; i < ul; i++)
        assert_int_equal(up[i], 0xFF);
}

static size_t make_row(const struct rowkey_layout *l, uint64_t metric, struct rowkey_tag *t,
                       size_t n, uint8_t *row)
{
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t tl;
    struct ct_err err = {0};
    assert_int_equal(rowkey_tsuid_build(l, metric, t, n, tsuid, sizeof(tsuid), &tl, &err), CT_OK);
    return rowkey_encode(l, tsuid, tl, 1356998400, row);
}

static void test_row_filter_clauses(void **state)
{
    (void)state;
    struct rowkey_layout l = salted(1, 20);
    struct rowkey_filter *f;
    struct ct_err err = {0};
    assert_int_equal(rowkey_filter_new(&l, &f, &err), CT_OK);
    rowkey_filter_set_metric(f, 1);
    uint64_t hosts[] = {10, 11};
    assert_int_equal(rowkey_filter_add(f, 1, hosts, 2, false, &err), CT_OK); /* host in {10,11} */
    uint64_t dc[] = {20};
    assert_int_equal(rowkey_filter_add(f, 2, dc, 1, true, &err), CT_OK);   /* dc != 20 */
    assert_int_equal(rowkey_filter_add(f, 3, NULL, 0, true, &err), CT_OK); /* no tag 3 */
    uint8_t row[ROWKEY_MAX_BYTES];
    struct rowkey_tag t1[] = {{1, 10}, {2, 21}};
    size_t n = make_row(&l, 1, t1, 2, row);
    assert_true(rowkey_filter_match(f, row, n));
    assert_int_equal(rowkey_filter_fn(f, row, n), WC_ROW_INCLUDE);
    struct rowkey_tag t2[] = {{1, 12}, {2, 21}};
    n = make_row(&l, 1, t2, 2, row);
    assert_int_equal(rowkey_filter_fn(f, row, n), WC_ROW_SKIP);
    struct rowkey_tag t3[] = {{1, 11}, {2, 20}};
    n = make_row(&l, 1, t3, 2, row);
    assert_false(rowkey_filter_match(f, row, n));
    struct rowkey_tag t4[] = {{1, 11}}; /* dc missing: a value filter needs the tag */
    n = make_row(&l, 1, t4, 1, row);
    assert_false(rowkey_filter_match(f, row, n));
    struct rowkey_tag t5[] = {{1, 11}, {2, 21}, {3, 1}};
    n = make_row(&l, 1, t5, 3, row);
    assert_false(rowkey_filter_match(f, row, n));
    n = make_row(&l, 2, t1, 2, row); /* other metric */
    assert_false(rowkey_filter_match(f, row, n));
    rowkey_filter_free(f);
}

/* Past the filter's inline clauses (8): 20 single-value clauses and two of several values,
 * grown while single values live inside the moved clauses; every clause must still hold. */
static void test_row_filter_with_many_clauses(void **state)
{
    (void)state;
    struct rowkey_layout l = salted(1, 20);
    struct rowkey_filter *f;
    struct ct_err err = {0};
    assert_int_equal(rowkey_filter_new(&l, &f, &err), CT_OK);
    rowkey_filter_set_metric(f, 1);
    struct rowkey_tag tags[22];
    for (uint64_t k = 1; k <= 22; k++) {
        uint64_t v[3] = {100 + k, 200 + k, 300 + k};
        size_t nv = k % 11 == 0 ? 3 : 1; /* tags 11 and 22 take three values */
        assert_int_equal(rowkey_filter_add(f, k, v, nv, false, &err), CT_OK);
        tags[k - 1] = (struct rowkey_tag){k, nv == 3 ? 300 + k : 100 + k};
    }
    uint8_t row[ROWKEY_MAX_BYTES];
    size_t n = make_row(&l, 1, tags, 22, row);
    assert_true(rowkey_filter_match(f, row, n));
    for (size_t k = 0; k < 22; k++) { /* any one value off: no match */
        uint64_t keep = tags[k].tagv;
        tags[k].tagv = 999;
        n = make_row(&l, 1, tags, 22, row);
        assert_false(rowkey_filter_match(f, row, n));
        tags[k].tagv = keep;
    }
    n = make_row(&l, 1, tags, 21, row); /* tag 22 missing */
    assert_false(rowkey_filter_match(f, row, n));
    rowkey_filter_free(f);
}

/* rowkey_filter_match against the clauses read plainly (each clause: the key's pair of its tag
 * key, then the value among its list), over random layouts (uid widths 1..4 and 8, salted or
 * not), random clauses (exists, absent, 1 value, a few, more than 8: the binary search, negated
 * lists, two clauses on one key) and random keys (the listed values or others, missing tags,
 * another metric, a length that does not fit). */
struct ref_clause {
    uint64_t tagk;
    uint64_t v[20];
    size_t n;
    bool exclude;
};

static bool ref_match(const struct rowkey_layout *l, uint64_t metric, const struct ref_clause *c,
                      size_t nc, const uint8_t *row, size_t len)
{
    size_t head = l->salt_width + l->metric_width + ROWKEY_TIMESTAMP_BYTES;
    size_t pair = l->tagk_width + l->tagv_width;
    if (len < head || (len - head) % pair)
        return false;
    if (rowkey_get_uid(row + l->salt_width, l->metric_width) != metric)
        return false;
    for (size_t i = 0; i < nc; i++) {
        bool found = false, in = false;
        for (size_t t = head; t < len; t += pair)
            if (rowkey_get_uid(row + t, l->tagk_width) == c[i].tagk) {
                found = true;
                uint64_t v = rowkey_get_uid(row + t + l->tagk_width, l->tagv_width);
                for (size_t j = 0; j < c[i].n; j++)
                    in |= c[i].v[j] == v;
            }
        if (c[i].n == 0 ? found == c[i].exclude : !found || in == c[i].exclude)
            return false;
    }
    return true;
}

static void test_row_filter_matches_the_plain_reading(void **state)
{
    (void)state;
    srand(11);
    const unsigned widths[] = {1, 2, 3, 4, 8};
    size_t matched = 0, tried = 0;
    for (int round = 0; round < 300; round++) {
        struct rowkey_layout l = salted(round % 2, 20);
        l.metric_width = widths[rand() % 5];
        l.tagk_width = widths[rand() % 5];
        l.tagv_width = widths[rand() % 5];
        struct rowkey_filter *f;
        struct ct_err err = {0};
        assert_int_equal(rowkey_filter_new(&l, &f, &err), CT_OK);
        rowkey_filter_set_metric(f, 5);
        struct ref_clause c[4];
        size_t nc = (size_t)rand() % 5;
        for (size_t i = 0; i < nc; i++) {
            c[i].tagk = 1 + (uint64_t)(rand() % 6);
            size_t kind = (size_t)rand() % 4;
            c[i].n = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 2 + rand() % 6 : 9 + rand() % 11;
            for (size_t j = 0; j < c[i].n; j++)
                c[i].v[j] = 1 + (uint64_t)(rand() % 30);
            c[i].exclude = rand() % 3 == 0;
            assert_int_equal(rowkey_filter_add(f, c[i].tagk, c[i].v, c[i].n, c[i].exclude, &err),
                             CT_OK);
        }
        for (int k = 0; k < 200; k++) {
            struct rowkey_tag t[8];
            size_t nt = 0;
            for (uint64_t tk = 1; tk <= 7; tk++) /* sorted tag keys, some missing */
                if (rand() % 4)
                    t[nt++] = (struct rowkey_tag){tk, 1 + (uint64_t)(rand() % 30)};
            if (nt == 0)
                t[nt++] = (struct rowkey_tag){2, 7};
            uint8_t row[ROWKEY_MAX_BYTES];
            uint64_t metric = rand() % 8 ? 5 : 6;
            size_t n = make_row(&l, metric, t, nt, row);
            if (rand() % 16 == 0)
                n--; /* a length that does not fit */
            bool want = ref_match(&l, 5, c, nc, row, n);
            assert_int_equal(rowkey_filter_match(f, row, n), want);
            matched += want;
            tried++;
        }
        rowkey_filter_free(f);
    }
    assert_true(matched > tried / 10 && matched < tried * 9 / 10); /* both answers common */
}

/* A key lies in [start, stop) (stop_len 0: no upper bound). */
static bool key_in(const uint8_t *k, size_t kl, const uint8_t *a, size_t al, const uint8_t *b,
                   size_t bl)
{
    size_t m = kl < al ? kl : al;
    int c = memcmp(k, a, m);
    if (c < 0 || (c == 0 && kl < al))
        return false;
    if (bl == 0)
        return true;
    m = kl < bl ? kl : bl;
    c = memcmp(k, b, m);
    return c < 0 || (c == 0 && kl < bl);
}

static void test_lead_ranges_hold_every_row_the_filter_accepts(void **state)
{
    (void)state;
    struct rowkey_layout l;
    rowkey_layout_init(&l);
    struct ct_err err = {0};
    struct rowkey_filter *f;
    assert_int_equal(rowkey_filter_new(&l, &f, &err), CT_OK);
    rowkey_filter_set_metric(f, 7);
    uint64_t k1[] = {3, 2}, k2[] = {1}, k4[] = {2, 4};
    assert_int_equal(rowkey_filter_add(f, 1, k1, 2, false, &err), CT_OK);
    assert_int_equal(rowkey_filter_add(f, 2, k2, 1, false, &err), CT_OK);
    assert_int_equal(rowkey_filter_add(f, 4, k4, 2, false, &err), CT_OK);
    const uint64_t *vals[ROWKEY_MAX_TAGS];
    size_t nvals[ROWKEY_MAX_TAGS];
    assert_int_equal(rowkey_filter_lead(f, 64, vals, nvals), 2); /* uid 3 is not pinned */
    assert_int_equal(nvals[0], 2);
    assert_int_equal(vals[0][0], 2); /* sorted */
    assert_int_equal(nvals[1], 1);
    assert_int_equal(rowkey_filter_lead(f, 1, vals, nvals), 0); /* two ranges are too many */
    /* every row over tag uids 1..4 (each present or not) with values 1..4 */
    int accepted = 0;
    for (unsigned mask = 1; mask < 16; mask++) {
        for (unsigned code = 0; code < 256; code++) {
            struct rowkey_tag t[4];
            size_t n = 0;
            for (unsigned k = 0; k < 4; k++)
                if (mask >> k & 1)
                    t[n++] = (struct rowkey_tag){k + 1, 1 + (code >> (2 * k) & 3)};
            uint8_t row[ROWKEY_MAX_BYTES];
            size_t rl = make_row(&l, 7, t, n, row);
            if (!rowkey_filter_match(f, row, rl))
                continue;
            accepted++;
            int in = 0;
            for (size_t a = 0; a < nvals[0]; a++) {
                uint64_t v[2] = {vals[0][a], vals[1][0]};
                uint8_t lo[ROWKEY_MAX_BYTES], hi[ROWKEY_MAX_BYTES];
                size_t hl = 0, ll = rowkey_lead_range(&l, 0, 7, 1356998400 + 59, v, 2, lo, hi, &hl);
                in += key_in(row, rl, lo, ll, hi, hl);
                /* the same hour's other metric and the next hour are outside */
                size_t ol = rowkey_lead_range(&l, 0, 7, 1356998400 + 3600, v, 2, lo, hi, &hl);
                assert_false(key_in(row, rl, lo, ol, hi, hl));
            }
            assert_int_equal(in, 1);
        }
    }
    assert_true(accepted > 0);
    /* an excluding clause, or none on uid 1, pins nothing */
    struct rowkey_filter *g;
    assert_int_equal(rowkey_filter_new(&l, &g, &err), CT_OK);
    assert_int_equal(rowkey_filter_add(g, 1, k1, 2, true, &err), CT_OK);
    assert_int_equal(rowkey_filter_add(g, 2, k2, 1, false, &err), CT_OK);
    assert_int_equal(rowkey_filter_lead(g, 64, vals, nvals), 0);
    rowkey_filter_free(g);
    /* a prefix ending in 0xFF bytes: the range ends at the next possible prefix */
    uint64_t big[1] = {0xFFFFFF};
    uint8_t lo[ROWKEY_MAX_BYTES], hi[ROWKEY_MAX_BYTES];
    size_t hl = 0, ll = rowkey_lead_range(&l, 0, 7, 1356998400, big, 1, lo, hi, &hl);
    assert_int_equal(ll, 3 + 4 + 6);
    assert_int_equal(hl, 3 + 4 + 3); /* [metric][hour][00 00 02] */
    assert_int_equal(hi[hl - 1], 0x02);
    /* every hour's ranges in one ascending, disjoint list (a multi-range scan's) */
    struct wc_row_range *rr = NULL;
    size_t nr = 0;
    assert_int_equal(rowkey_lead_ranges(&l, 0, 7, 1356998400 + 59, 1356998400 + 3 * 3600 - 1, vals,
                                        nvals, 2, &rr, &nr, &err),
                     CT_OK);
    assert_int_equal(nr, 3 * nvals[0] * nvals[1]);
    for (size_t i = 0; i < nr; i++) {
        uint64_t v[2] = {vals[0][i % nvals[0]], vals[1][0]};
        size_t ll2 = rowkey_lead_range(&l, 0, 7, 1356998400 + (int64_t)(i / nvals[0]) * 3600, v, 2,
                                       lo, hi, &hl);
        assert_int_equal(rr[i].start.len, ll2);
        assert_memory_equal(rr[i].start.data, lo, ll2);
        assert_int_equal(rr[i].stop.len, hl);
        assert_memory_equal(rr[i].stop.data, hi, hl);
        if (i) { /* the previous stop <= this start */
            const struct wc_row_range *p = &rr[i - 1];
            int c = memcmp(p->stop.data, rr[i].start.data, hl < ll2 ? hl : ll2);
            assert_true(c < 0 || (c == 0 && p->stop.len <= rr[i].start.len));
        }
    }
    free(rr);
    assert_int_equal(
        rowkey_lead_ranges(&l, 0, 7, 1356998400 + 3600, 1356998400, vals, nvals, 2, &rr, &nr, &err),
        CT_OK);
    assert_int_equal(nr, 0);
    assert_null(rr);
    size_t many[2] = {1024, 1024};
    assert_int_equal(rowkey_lead_ranges(&l, 0, 7, 0, 3600, vals, many, 2, &rr, &nr, &err),
                     CT_EINVAL);
    rowkey_filter_free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_java_hash_matches_arrays_hashcode),
        cmocka_unit_test(test_java_hash_equals_the_bytewise_definition_at_every_length),
        cmocka_unit_test(test_salt_bucket_is_abs_of_java_remainder),
        cmocka_unit_test(test_salt_bytes_follow_get_salt_bytes),
        cmocka_unit_test(test_rowkey_encode_is_byte_exact_and_decodes),
        cmocka_unit_test(test_rowkey_encode_salted_with_the_series_bucket_is_rowkey_encode),
        cmocka_unit_test(test_tsuid_build_rejects_bad_input),
        cmocka_unit_test(test_base_hour_and_scan_bounds),
        cmocka_unit_test(test_row_filter_clauses),
        cmocka_unit_test(test_row_filter_with_many_clauses),
        cmocka_unit_test(test_row_filter_matches_the_plain_reading),
        cmocka_unit_test(test_lead_ranges_hold_every_row_the_filter_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
