/* test_base.c - the bottom helpers every layer uses: ct_err, coding, crc32c, clock, and the
 * backend-neutral parts of wc.h (defaults, name and descriptor checks, the cell order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/ct_err.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"

static void test_err_prefix_keeps_code_and_detail(void **state)
{
    (void)state;
    struct ct_err err = {0};
    assert_int_equal(ct_err_errno(&err, CT_EIO, 2, "cannot open %s", "x/y"), CT_EIO);
    assert_int_equal(ct_err_prefix(&err, "flush region %d", 7), CT_EIO);
    assert_string_equal(err.msg, "flush region 7: cannot open x/y: No such file or directory");
}

/* A message longer than the buffer is cut at the end, visibly: it fills the buffer and ends in
 * "...", the start kept. */
static void test_err_marks_cut_messages(void **state)
{
    (void)state;
    struct ct_err err = {0};
    char big[CT_ERR_MSG_MAX + 100];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = 0;
    ct_err_set(&err, CT_EINVAL, "%s", big);
    assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
    assert_string_equal(err.msg + sizeof(err.msg) - 4, "...");
    assert_int_equal(err.msg[0], 'a');
    /* a prefix that pushes the tail out keeps the prefix and marks the cut too */
    ct_err_set(&err, CT_EIO, "%.*s", (int)sizeof(err.msg) - 8, big);
    ct_err_prefix(&err, "context");
    assert_memory_equal(err.msg, "context: aaa", 12);
    assert_string_equal(err.msg + sizeof(err.msg) - 4, "...");
    ct_err_errno(&err, CT_EIO, 2, "%.*s", (int)sizeof(err.msg) - 5, big);
    assert_string_equal(err.msg + sizeof(err.msg) - 4, "...");
    /* one that fits is not marked */
    ct_err_set(&err, CT_EIO, "%.*s", (int)sizeof(err.msg) - 1, big);
    assert_int_equal(strlen(err.msg), sizeof(err.msg) - 1);
    assert_int_equal(err.msg[sizeof(err.msg) - 2], 'a');
}

/* A 400-character message composed from a cause and prefixes (what used to be cut at 255,
 * losing the cause and the port) comes out whole. */
static void test_err_keeps_a_400_char_composed_message(void **state)
{
    (void)state;
    struct ct_err err = {0};
    char cause[250];
    memset(cause, 'c', sizeof(cause) - 1);
    cause[sizeof(cause) - 1] = 0;
    ct_err_set(&err, CT_EIO, "/google.bigtable.v2.Bigtable/MutateRows: UNAVAILABLE: %s", cause);
    ct_err_prefix(&err, "writing %d points to table %s", 100, "tsdb");
    ct_err_prefix(&err,
                  "cannot open the store in Bigtable project '%s' instance '%s' on the "
                  "emulator at %s",
                  "ctsdb", "ctsdb", "127.0.0.1:45678");
    char want[1024];
    snprintf(want, sizeof(want),
             "cannot open the store in Bigtable project 'ctsdb' instance 'ctsdb' on the emulator "
             "at 127.0.0.1:45678: writing 100 points to table tsdb: "
             "/google.bigtable.v2.Bigtable/MutateRows: UNAVAILABLE: %s",
             cause);
    assert_true(strlen(want) >= 400);
    assert_string_equal(err.msg, want);
    assert_int_equal(err.code, CT_EIO);
}

/* The longest message the layers compose (ct_err.h): a gRPC status of a long method name, its
 * code name and a 1 KiB server text, under three prefixes naming a store (a 255-character
 * instance id and endpoint), a table and a series; it fits whole, with room to spare. */
static void test_err_keeps_the_longest_composed_message(void **state)
{
    (void)state;
    struct ct_err err = {0};
    char text[1025], inst[256], ep[256], want[CT_ERR_MSG_MAX + 1];
    memset(text, 't', sizeof(text) - 1);
    text[sizeof(text) - 1] = 0;
    memset(inst, 'i', sizeof(inst) - 1);
    inst[sizeof(inst) - 1] = 0;
    memset(ep, 'e', sizeof(ep) - 7);
    memcpy(ep + sizeof(ep) - 7, ":65535", 7);
    ct_err_set(&err, CT_ETIMEOUT, "%s: %s: %s", "/google.bigtable.v2.Bigtable/CheckAndMutateRow",
               "DEADLINE_EXCEEDED", text);
    ct_err_prefix(&err, "series %s", "sys.cpu.user{host=web01,dc=lga}");
    ct_err_prefix(&err, "table %s", "tsdb-uid");
    ct_err_prefix(&err, "Bigtable project 'p' instance '%s' at %s", inst, ep);
    int n = snprintf(want, sizeof(want),
                     "Bigtable project 'p' instance '%s' at %s: table tsdb-uid: series "
                     "sys.cpu.user{host=web01,dc=lga}: "
                     "/google.bigtable.v2.Bigtable/CheckAndMutateRow: DEADLINE_EXCEEDED: %s",
                     inst, ep, text);
    assert_true(n > 1500 && n < CT_ERR_MSG_MAX - 1);
    assert_string_equal(err.msg, want);
}

/* Every length 0..40 at every source offset 0..7 copies exactly n bytes: nothing before or after
 * the destination range is touched, and the bytes equal the source's. */
/* coding_utf8_decode: every code point's encoding decodes to it (checked against a plain
 * encoder here), and each kind of invalid sequence is refused. */
static void test_coding_utf8_decode_accepts_valid_and_refuses_invalid(void **state)
{
    (void)state;
    for (uint32_t c = 0; c <= 0x10FFFF; c += c < 0x3000 ? 1 : 97) {
        if (c >= 0xD800 && c <= 0xDFFF)
            continue;
        unsigned char b[4];
        size_t n;
        if (c < 0x80) {
            b[0] = (unsigned char)c;
            n = 1;
        } else if (c < 0x800) {
            b[0] = (unsigned char)(0xC0 | c >> 6);
            b[1] = (unsigned char)(0x80 | (c & 0x3F));
            n = 2;
        } else if (c < 0x10000) {
            b[0] = (unsigned char)(0xE0 | c >> 12);
            b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c & 0x3F));
            n = 3;
        } else {
            b[0] = (unsigned char)(0xF0 | c >> 18);
            b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
            b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
            b[3] = (unsigned char)(0x80 | (c & 0x3F));
            n = 4;
        }
        uint32_t got = 0xFFFFFFFF;
        assert_int_equal(coding_utf8_decode(b, n, &got), n);
        assert_int_equal(got, c);
        if (n > 1) /* truncated */
            assert_int_equal(coding_utf8_decode(b, n - 1, &got), 0);
    }
    static const struct {
        const char *s;
        size_t n;
    } bad[] = {
        {"\x80", 1},             /* lone continuation byte */
        {"\xC0\x80", 2},         /* overlong NUL */
        {"\xC1\xBF", 2},         /* overlong */
        {"\xE0\x9F\xBF", 3},     /* overlong 3-byte */
        {"\xED\xA0\x80", 3},     /* surrogate U+D800 */
        {"\xED\xBF\xBF", 3},     /* surrogate U+DFFF */
        {"\xF0\x8F\xBF\xBF", 4}, /* overlong 4-byte */
        {"\xF4\x90\x80\x80", 4}, /* past U+10FFFF */
        {"\xF5\x80\x80\x80", 4}, /* bad lead byte */
        {"\xFF", 1},             /* bad lead byte */
        {"\xC3\x28", 2},         /* second byte not a continuation */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        uint32_t got;
        assert_int_equal(coding_utf8_decode((const unsigned char *)bad[i].s, bad[i].n, &got), 0);
    }
}

static void test_coding_copy_short_copies_exactly_n_bytes(void **state)
{
    (void)state;
    uint8_t src[64], dst[64];
    for (size_t i = 0; i < sizeof(src); i++)
        src[i] = (uint8_t)(i * 37 + 11);
    for (size_t off = 0; off < 8; off++) {
        for (size_t n = 0; n <= 40; n++) {
            memset(dst, 0xEE, sizeof(dst));
            coding_copy_short(dst + 8, src + off, n);
            for (size_t i = 0; i < sizeof(dst); i++) {
                if (i >= 8 && i < 8 + n)
                    assert_int_equal(dst[i], src[off + i - 8]);
                else
                    assert_int_equal(dst[i], 0xEE);
            }
        }
    }
}

static void test_coding_round_trips_and_byte_order(void **state)
{
    (void)state;
    uint8_t b[16];
    coding_put_be32(b, 0x01020304u);
    assert_int_equal(b[0], 1);
    assert_int_equal(b[3], 4);
    assert_int_equal(coding_get_be32(b), 0x01020304u);
    coding_put_be64(b, 0x0102030405060708ull);
    assert_true(coding_get_be64(b) == 0x0102030405060708ull);
    coding_put_le64(b, 0x0102030405060708ull);
    assert_int_equal(b[0], 8);
    assert_true(coding_get_le64(b) == 0x0102030405060708ull);
    uint64_t vals[] = {0, 1, 127, 128, 300, 1ull << 35, UINT64_MAX};
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        size_t n = coding_put_varint64(b, vals[i]);
        uint64_t v = 0;
        assert_int_equal(coding_get_varint64(b, b + n, &v), n);
        assert_true(v == vals[i]);
        assert_int_equal(coding_get_varint64(b, b + n - 1, &v), 0); /* truncated */
    }
    assert_true(coding_unzigzag(coding_zigzag(-5)) == -5);
    assert_true(coding_zigzag(-1) == 1);
}

static void test_crc32c_matches_rfc3720_vectors(void **state)
{
    (void)state;
    uint8_t buf[32];
    memset(buf, 0, sizeof(buf));
    assert_int_equal(crc32c_value(buf, 32), 0x8a9136aau);
    memset(buf, 0xff, sizeof(buf));
    assert_int_equal(crc32c_value(buf, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(crc32c_value(buf, 32), 0x46dd794eu);
    assert_int_equal(crc32c_value("123456789", 9), 0xe3069283u);
    /* extending in pieces equals one pass */
    assert_int_equal(crc32c_extend(crc32c_value("12345", 5), "6789", 4), 0xe3069283u);
    assert_int_equal(crc32c_unmask(crc32c_mask(0xdeadbeefu)), 0xdeadbeefu);
    assert_int_not_equal(crc32c_mask(0xdeadbeefu), 0xdeadbeefu);
}

static void test_clock_can_be_pinned(void **state)
{
    (void)state;
    setenv("CTSDB_NOW_MS", "1234567", 1);
    clock_reload();
    assert_true(clock_now_ms() == 1234567);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
    assert_true(clock_now_ms() > 1600000000000LL);
}

/* A deadline ms from now on the real-time clock, normalised, whatever the pinned clock says. */
static void test_clock_realtime_in_is_a_normalised_deadline(void **state)
{
    (void)state;
    setenv("CTSDB_NOW_MS", "1234567", 1);
    clock_reload();
    static const int64_t ms[] = {0, 1, 100, 999, 1000, 1500, 60000};
    for (size_t i = 0; i < sizeof(ms) / sizeof(ms[0]); i++) {
        struct timespec before, after;
        clock_gettime(CLOCK_REALTIME, &before);
        struct timespec d = clock_realtime_in(ms[i]);
        clock_gettime(CLOCK_REALTIME, &after);
        assert_true(d.tv_nsec >= 0 && d.tv_nsec < 1000000000L);
        int64_t dn = (int64_t)d.tv_sec * 1000000000 + d.tv_nsec;
        int64_t bn = (int64_t)before.tv_sec * 1000000000 + before.tv_nsec;
        int64_t an = (int64_t)after.tv_sec * 1000000000 + after.tv_nsec;
        assert_true(dn >= bn + ms[i] * 1000000 && dn <= an + ms[i] * 1000000);
    }
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
}

static void test_table_names_parse_with_default_namespace(void **state)
{
    (void)state;
    struct ct_err err = {0};
    char ns[64], q[64];
    assert_int_equal(wc_table_name_parse("t1", ns, sizeof ns, q, sizeof q, &err), CT_OK);
    assert_string_equal(ns, "default");
    assert_string_equal(q, "t1");
    assert_int_equal(wc_table_name_parse("my_ns:a.b-c", ns, sizeof ns, q, sizeof q, &err), CT_OK);
    assert_string_equal(ns, "my_ns");
    assert_string_equal(q, "a.b-c");
    assert_int_equal(wc_table_name_parse("-x", ns, sizeof ns, q, sizeof q, &err), CT_EINVAL);
    assert_int_equal(wc_table_name_parse("a b", ns, sizeof ns, q, sizeof q, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "illegal character ' '"));
    assert_int_equal(wc_table_name_parse("n-s:t", ns, sizeof ns, q, sizeof q, &err), CT_EINVAL);
}

static void test_family_defaults_and_checks(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "cf");
    assert_int_equal(f.versions, 1);
    assert_true(f.ttl_s == WC_TTL_FOREVER);
    assert_int_equal(f.bloom, WC_BLOOM_ROW);
    assert_int_equal(f.blocksize, 65536);
    assert_true(f.blockcache);
    assert_int_equal(wc_family_desc_check(&f, &err), CT_OK);
    f.min_versions = 2;
    assert_int_equal(wc_family_desc_check(&f, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "MIN_VERSIONS"));
    f.min_versions = 0;
    f.blocksize = 512;
    assert_int_equal(wc_family_desc_check(&f, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "BLOCKSIZE"));
    wc_family_desc_init(&f, "a:b");
    assert_int_equal(wc_family_desc_check(&f, &err), CT_EINVAL);
}

static void test_cell_order_is_spec_order(void **state)
{
    (void)state;
    struct wc_cell a = {
        wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"), 5, WC_TYPE_PUT};
    struct wc_cell b = a;
    b.ts_ms = 4; /* older sorts later */
    assert_true(wc_cell_compare(&a, &b) < 0);
    b = a;
    b.type = WC_TYPE_DELETE_COLUMN; /* marker first at the same ts */
    assert_true(wc_cell_compare(&b, &a) < 0);
    b = a;
    b.qualifier = wc_bytes_str(""); /* empty qualifier first */
    assert_true(wc_cell_compare(&b, &a) < 0);
    b = a;
    b.row = wc_bytes_str("r\x01"); /* shorter row wins on a common prefix */
    assert_true(wc_cell_compare(&a, &b) < 0);
    b = a;
    b.row = wc_bytes_of("\xff", 1); /* unsigned bytes */
    assert_true(wc_cell_compare(&a, &b) < 0);
    assert_int_equal(wc_cell_compare(&a, &a), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_err_prefix_keeps_code_and_detail),
        cmocka_unit_test(test_err_marks_cut_messages),
        cmocka_unit_test(test_err_keeps_a_400_char_composed_message),
        cmocka_unit_test(test_err_keeps_the_longest_composed_message),
        cmocka_unit_test(test_coding_round_trips_and_byte_order),
        cmocka_unit_test(test_coding_copy_short_copies_exactly_n_bytes),
        cmocka_unit_test(test_coding_utf8_decode_accepts_valid_and_refuses_invalid),
        cmocka_unit_test(test_crc32c_matches_rfc3720_vectors),
        cmocka_unit_test(test_clock_can_be_pinned),
        cmocka_unit_test(test_clock_realtime_in_is_a_normalised_deadline),
        cmocka_unit_test(test_table_names_parse_with_default_namespace),
        cmocka_unit_test(test_family_defaults_and_checks),
        cmocka_unit_test(test_cell_order_is_spec_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
