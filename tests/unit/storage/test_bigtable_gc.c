/* test_bigtable_gc.c - the VERSIONS / TTL / MIN_VERSIONS <-> Bigtable GC rule mapping
 * (storage/bigtable/bt_gc.h), including a round trip through the protobuf encoding the admin API
 * carries. */
#include <string.h>

#include "storage/bigtable/bt_gc.h"
#include "tests/lib/ctest.h"

static void rule_text(const struct wc_family_desc *f, char *out, size_t size)
{
    struct bt_gc_mem mem;
    bt_gc_rule_format(bt_gc_rule_build(f, &mem), out, size);
}

static void test_gc_rule_follows_the_spec_mapping(void **state)
{
    (void)state;
    char txt[256];
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt, "max_versions(1)");
    f.versions = 3;
    f.min_versions = 2; /* without a TTL, MIN_VERSIONS changes nothing */
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt, "max_versions(3)");
    f.min_versions = 0;
    f.ttl_s = 18000;
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt, "union(max_versions(3),max_age(18000s))");
    f.min_versions = 1;
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt,
                        "union(max_versions(3),intersection(max_age(18000s),max_versions(1)))");
    f.versions = BT_GC_UNLIMITED_VERSIONS;
    f.min_versions = 0;
    f.ttl_s = WC_TTL_FOREVER;
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt, "none");
    f.ttl_s = 60;
    rule_text(&f, txt, sizeof(txt));
    assert_string_equal(txt, "max_age(60s)");
}

/* Builds the rule, encodes it as the admin API would, decodes and parses it back. */
static void round_trip(uint32_t versions, uint32_t min_versions, int64_t ttl_s)
{
    struct wc_family_desc f, back;
    wc_family_desc_init(&f, "f");
    f.versions = versions;
    f.min_versions = min_versions;
    f.ttl_s = ttl_s;
    struct bt_gc_mem mem;
    Btpb__ColumnFamily cf;
    btpb__column_family__init(&cf);
    cf.gc_rule = bt_gc_rule_build(&f, &mem);
    uint8_t buf[256];
    size_t n = btpb__column_family__get_packed_size(&cf);
    assert_true(n <= sizeof(buf));
    btpb__column_family__pack(&cf, buf);
    Btpb__ColumnFamily *dec = btpb__column_family__unpack(NULL, n, buf);
    assert_non_null(dec);
    wc_family_desc_init(&back, "f");
    struct ct_err err = {0};
    assert_int_equal(bt_gc_rule_parse(dec->gc_rule, &back, &err), CT_OK);
    btpb__column_family__free_unpacked(dec, NULL);
    assert_int_equal(back.versions, versions);
    assert_true(back.ttl_s == ttl_s);
    assert_int_equal(back.min_versions, ttl_s < WC_TTL_FOREVER ? min_versions : 0);
}

static void test_gc_rule_round_trips_through_the_wire_encoding(void **state)
{
    (void)state;
    round_trip(1, 0, WC_TTL_FOREVER);
    round_trip(7, 0, WC_TTL_FOREVER);
    round_trip(7, 3, WC_TTL_FOREVER);
    round_trip(2, 0, 86400);
    round_trip(5, 1, 3600);
    round_trip(5, 5, 1);
    round_trip(BT_GC_UNLIMITED_VERSIONS, 0, WC_TTL_FOREVER);
    round_trip(BT_GC_UNLIMITED_VERSIONS, 0, 120);
}

static void test_gc_rule_parse_reads_foreign_shapes_and_rejects_bad_numbers(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_family_desc f;
    wc_family_desc_init(&f, "f");
    /* a rule another tool made: union(max_versions(4), max_versions(2), max_age(10s)) */
    Btpb__GcRule a, b, c, top;
    Btpb__Duration d;
    btpb__gc_rule__init(&a);
    btpb__gc_rule__init(&b);
    btpb__gc_rule__init(&c);
    btpb__gc_rule__init(&top);
    btpb__duration__init(&d);
    a.rule_case = BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS;
    a.max_num_versions = 4;
    b.rule_case = BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS;
    b.max_num_versions = 2;
    d.seconds = 10;
    c.rule_case = BTPB__GC_RULE__RULE_MAX_AGE;
    c.max_age = &d;
    Btpb__GcRule *rules[3] = {&a, &b, &c};
    Btpb__GcRule__Union u;
    btpb__gc_rule__union__init(&u);
    u.n_rules = 3;
    u.rules = rules;
    top.rule_case = BTPB__GC_RULE__RULE_UNION;
    top.union_ = &u;
    assert_int_equal(bt_gc_rule_parse(&top, &f, &err), CT_OK);
    assert_int_equal(f.versions, 2); /* the tightest */
    assert_true(f.ttl_s == 10);
    a.max_num_versions = 0;
    assert_int_equal(bt_gc_rule_parse(&top, &f, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "versions"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gc_rule_follows_the_spec_mapping),
        cmocka_unit_test(test_gc_rule_round_trips_through_the_wire_encoding),
        cmocka_unit_test(test_gc_rule_parse_reads_foreign_shapes_and_rejects_bad_numbers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
