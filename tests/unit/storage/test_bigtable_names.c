/* test_bigtable_names.c - pure helpers of the Bigtable backend: the "ns:qual" <-> table id
 * mapping (no two ctsdb names share an id, and every id maps back), the family regex escaping,
 * and which gRPC failures may be retried. */
#include <string.h>

#include "storage/bigtable/bt_int.h"
#include "tests/lib/ctest.h"

static void expect_id(const char *full, const char *want_id)
{
    char id[128], back[WC_MAX_TABLE_NAME];
    struct ct_err err = {0};
    assert_int_equal(bt_table_id(full, id, sizeof(id), &err), CT_OK);
    assert_string_equal(id, want_id);
    assert_true(bt_table_full_name(id, back, sizeof(back)));
    assert_string_equal(back, full);
}

static void test_table_ids_are_unique_and_map_back(void **state)
{
    (void)state;
    expect_id("default:tsdb", "tsdb");
    expect_id("default:tsdb-uid", "tsdb-uid");
    expect_id("default:a.b", "default.a.b"); /* must not collide with a:b */
    expect_id("a:b", "a.b");
    expect_id("ns_1:t.x-y", "ns_1.t.x-y");
    expect_id("hbase:ctsdb_meta", "hbase.ctsdb_meta");
    char back[WC_MAX_TABLE_NAME];
    assert_false(bt_table_full_name("-bad", back, sizeof(back))); /* not a ctsdb name */
}

static void test_table_id_longer_than_bigtable_allows_is_a_clear_error(void **state)
{
    (void)state;
    char id[128];
    struct ct_err err = {0};
    const char *name = "ns:a_table_name_that_is_far_too_long_for_a_bigtable_id";
    assert_int_equal(bt_table_id(name, id, sizeof(id), &err), CT_ELIMIT);
    assert_non_null(strstr(err.msg, "50"));
}

static void test_family_regex_is_anchored_and_escaped(void **state)
{
    (void)state;
    char re[64];
    bt_family_regex("t", re, sizeof(re));
    assert_string_equal(re, "^t$");
    bt_family_regex("a.b+c", re, sizeof(re));
    assert_string_equal(re, "^a\\.b\\+c$");
}

static void test_only_transient_failures_are_retryable(void **state)
{
    (void)state;
    assert_true(bt_rpc_retryable(BT_GRPC_UNAVAILABLE, NULL));
    assert_true(bt_rpc_retryable(BT_GRPC_ABORTED, NULL));
    assert_true(bt_rpc_retryable(BT_GRPC_DEADLINE_EXCEEDED, NULL));
    assert_true(bt_rpc_retryable(BT_GRPC_INTERNAL, "Received RST_STREAM with error code 2"));
    assert_false(bt_rpc_retryable(BT_GRPC_INTERNAL, "something else"));
    assert_false(bt_rpc_retryable(BT_GRPC_INVALID_ARGUMENT, NULL));
    assert_false(bt_rpc_retryable(BT_GRPC_NOT_FOUND, NULL));
    assert_int_equal(bt_rpc_code(BT_GRPC_NOT_FOUND), CT_NOTFOUND);
    assert_int_equal(bt_rpc_code(BT_GRPC_ALREADY_EXISTS), CT_EEXIST);
    assert_int_equal(bt_rpc_code(BT_GRPC_FAILED_PRECONDITION), CT_EINVAL);
    assert_int_equal(bt_rpc_code(BT_GRPC_UNAVAILABLE), CT_EUNAVAIL); /* 503 at the HTTP layer */
    assert_string_equal(bt_rpc_code_name(BT_GRPC_UNAVAILABLE), "UNAVAILABLE");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_ids_are_unique_and_map_back),
        cmocka_unit_test(test_table_id_longer_than_bigtable_allows_is_a_clear_error),
        cmocka_unit_test(test_family_regex_is_anchored_and_escaped),
        cmocka_unit_test(test_only_transient_failures_are_retryable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
