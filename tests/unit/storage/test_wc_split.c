/* test_wc_split.c - the split-key algorithms of docs/storage-contract.md, "Split-key
 * algorithms": every vector of its tables, the general form (other bounds, widening), midpoints,
 * and sanity over n = 2..32 (sorted, unique, right widths). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"

static int split_test_cmp(struct wc_bytes a, struct wc_bytes b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.data, b.data, n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* Hex text of raw bytes, lowercase, no separators. */
static void split_test_hex(struct wc_bytes b, char *out)
{
    for (size_t i = 0; i < b.len; i++)
        sprintf(out + 2 * i, "%02x", b.data[i]);
    out[2 * b.len] = 0;
}

static void split_test_expect_hex(unsigned n, const char *const *want)
{
    struct ct_err err = {0};
    struct wc_bytes *keys = NULL;
    assert_int_equal(wc_split_keys(WC_SPLIT_HEXSTRING, n, &keys, &err), CT_OK);
    for (unsigned i = 0; i + 1 < n; i++) {
        assert_int_equal(keys[i].len, 8);
        char got[9];
        memcpy(got, keys[i].data, 8);
        got[8] = 0;
        assert_string_equal(got, want[i]);
    }
    wc_split_keys_free(keys, n - 1);
}

static void split_test_expect_uniform(unsigned n, const char *const *want)
{
    struct ct_err err = {0};
    struct wc_bytes *keys = NULL;
    assert_int_equal(wc_split_keys(WC_SPLIT_UNIFORM, n, &keys, &err), CT_OK);
    for (unsigned i = 0; i + 1 < n; i++) {
        assert_int_equal(keys[i].len, 8);
        char got[17];
        split_test_hex(keys[i], got);
        assert_string_equal(got, want[i]);
    }
    wc_split_keys_free(keys, n - 1);
}

static void test_hexstring_split_matches_spec_table(void **state)
{
    (void)state;
    const char *const n2[] = {"80000000"};
    const char *const n3[] = {"55555555", "aaaaaaaa"};
    const char *const n4[] = {"40000000", "80000000", "c0000000"};
    const char *const n5[] = {"33333333", "66666666", "99999999", "cccccccc"};
    const char *const n9[] = {"1c71c71c", "38e38e38", "55555554", "71c71c70",
                              "8e38e38c", "aaaaaaa8", "c71c71c4", "e38e38e0"};
    const char *const n10[] = {"19999999", "33333332", "4ccccccb", "66666664", "7ffffffd",
                               "99999996", "b333332f", "ccccccc8", "e6666661"};
    const char *const n16[] = {"10000000", "20000000", "30000000", "40000000", "50000000",
                               "60000000", "70000000", "80000000", "90000000", "a0000000",
                               "b0000000", "c0000000", "d0000000", "e0000000", "f0000000"};
    split_test_expect_hex(2, n2);
    split_test_expect_hex(3, n3);
    split_test_expect_hex(4, n4);
    split_test_expect_hex(5, n5);
    split_test_expect_hex(9, n9);
    split_test_expect_hex(10, n10);
    split_test_expect_hex(16, n16);
}

static void test_uniform_split_matches_spec_table(void **state)
{
    (void)state;
    const char *const n2[] = {"8000000000000000"};
    const char *const n3[] = {"5555555555555555", "aaaaaaaaaaaaaaaa"};
    const char *const n4[] = {"4000000000000000", "8000000000000000", "c000000000000000"};
    const char *const n9[] = {"1c71c71c71c71c71", "38e38e38e38e38e2", "5555555555555553",
                              "71c71c71c71c71c4", "8e38e38e38e38e35", "aaaaaaaaaaaaaaa6",
                              "c71c71c71c71c717", "e38e38e38e38e388"};
    const char *const n10[] = {"1999999999999999", "3333333333333332", "4ccccccccccccccb",
                               "6666666666666664", "7ffffffffffffffd", "9999999999999996",
                               "b33333333333332f", "ccccccccccccccc8", "e666666666666661"};
    split_test_expect_uniform(2, n2);
    split_test_expect_uniform(3, n3);
    split_test_expect_uniform(4, n4);
    split_test_expect_uniform(9, n9);
    split_test_expect_uniform(10, n10);
}

static void test_split_keys_are_sorted_unique_and_fixed_width_for_2_to_32(void **state)
{
    (void)state;
    struct ct_err err = {0};
    for (unsigned n = 2; n <= 32; n++) {
        for (int algo = 0; algo < 2; algo++) {
            struct wc_bytes *keys = NULL;
            assert_int_equal(wc_split_keys((enum wc_split_algo)algo, n, &keys, &err), CT_OK);
            for (unsigned i = 0; i + 1 < n; i++) {
                assert_int_equal(keys[i].len, 8);
                if (algo == WC_SPLIT_HEXSTRING)
                    for (size_t k = 0; k < 8; k++)
                        assert_non_null(strchr("0123456789abcdef", keys[i].data[k]));
                if (i)
                    assert_true(split_test_cmp(keys[i - 1], keys[i]) < 0);
            }
            /* step = floor(range / n): the first key is exactly the step, the last region is
             * the largest (it takes the remainder) */
            if (algo == WC_SPLIT_UNIFORM) {
                unsigned long long step = 0;
                for (int k = 0; k < 8; k++)
                    step = step << 8 | keys[0].data[k];
                unsigned long long want = (unsigned long long)((((unsigned __int128)1) << 64) / n);
                assert_true(step == want);
            } else {
                char buf[9];
                memcpy(buf, keys[0].data, 8);
                buf[8] = 0;
                assert_true(strtoull(buf, NULL, 16) == (1ull << 32) / n);
            }
            wc_split_keys_free(keys, n - 1);
        }
    }
}

static void test_split_rejects_fewer_than_two_regions(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_bytes *keys = NULL;
    assert_int_equal(wc_split_keys(WC_SPLIT_HEXSTRING, 1, &keys, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "at least 2"));
    assert_int_equal(wc_split_keys(WC_SPLIT_UNIFORM, 0, &keys, &err), CT_EINVAL);
    assert_null(keys);
}

static void test_hexstring_general_form_uses_given_bounds(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_bytes *keys = NULL;
    /* range 0x00..0xff = 256 over 4 regions: step 64 */
    assert_int_equal(wc_split_keys_range(WC_SPLIT_HEXSTRING, wc_bytes_str("00"), wc_bytes_str("ff"),
                                         4, &keys, &err),
                     CT_OK);
    assert_memory_equal(keys[0].data, "40", 2);
    assert_memory_equal(keys[1].data, "80", 2);
    assert_memory_equal(keys[2].data, "c0", 2);
    wc_split_keys_free(keys, 3);
    /* a shorter first bound is padded on the left to the longer width */
    assert_int_equal(wc_split_keys_range(WC_SPLIT_HEXSTRING, wc_bytes_str("1"),
                                         wc_bytes_str("0010"), 3, &keys, &err),
                     CT_OK);
    assert_int_equal(keys[0].len, 4);
    assert_memory_equal(keys[0].data, "0006", 4); /* range 16, step 5 */
    assert_memory_equal(keys[1].data, "000b", 4);
    wc_split_keys_free(keys, 2);
    /* range 3 cannot hold 4 regions; non-hex and reversed bounds are rejected */
    assert_int_equal(wc_split_keys_range(WC_SPLIT_HEXSTRING, wc_bytes_str("0"), wc_bytes_str("2"),
                                         4, &keys, &err),
                     CT_EINVAL);
    assert_non_null(strstr(err.msg, "smaller than"));
    assert_int_equal(wc_split_keys_range(WC_SPLIT_HEXSTRING, wc_bytes_str("zz"), wc_bytes_str("ff"),
                                         2, &keys, &err),
                     CT_EINVAL);
    assert_non_null(strstr(err.msg, "hexadecimal"));
    assert_int_equal(wc_split_keys_range(WC_SPLIT_HEXSTRING, wc_bytes_str("ff"), wc_bytes_str("10"),
                                         2, &keys, &err),
                     CT_EINVAL);
}

static void test_uniform_general_form_pads_and_widens(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_bytes *keys = NULL;
    char hex[64];
    /* "a".."b" inclusive is a range of 2: enough for 2 regions without widening */
    assert_int_equal(
        wc_split_keys_range(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_str("b"), 2, &keys, &err),
        CT_OK);
    split_test_hex(keys[0], hex);
    assert_string_equal(hex, "62");
    wc_split_keys_free(keys, 1);
    /* but not for 3: widened by one zero byte, range 0x6100..0x6200 = 257, step 85 */
    assert_int_equal(
        wc_split_keys_range(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_str("b"), 3, &keys, &err),
        CT_OK);
    split_test_hex(keys[0], hex);
    assert_string_equal(hex, "6155");
    split_test_hex(keys[1], hex);
    assert_string_equal(hex, "61aa");
    wc_split_keys_free(keys, 2);
    /* the shorter bound is padded on the right: "a" vs "az" -> 0x6100 .. 0x617a */
    assert_int_equal(wc_split_keys_range(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_str("az"), 3,
                                         &keys, &err),
                     CT_OK);
    split_test_hex(keys[0], hex);
    assert_string_equal(hex, "6129"); /* range 123, step 41 = 0x29 */
    split_test_hex(keys[1], hex);
    assert_string_equal(hex, "6152");
    wc_split_keys_free(keys, 2);
    /* equal after padding ("a" and "a\0") is not a range */
    assert_int_equal(wc_split_keys_range(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_of("a\0", 2),
                                         2, &keys, &err),
                     CT_EINVAL);
}

static void test_midpoints_split_one_region(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct wc_bytes mid;
    char hex[64];
    assert_int_equal(wc_split_midpoint(WC_SPLIT_HEXSTRING, wc_bytes_of(NULL, 0),
                                       wc_bytes_of(NULL, 0), &mid, &err),
                     CT_OK);
    assert_int_equal(mid.len, 8);
    assert_memory_equal(mid.data, "7fffffff", 8);
    free((void *)mid.data);
    assert_int_equal(wc_split_midpoint(WC_SPLIT_HEXSTRING, wc_bytes_str("80000000"),
                                       wc_bytes_of(NULL, 0), &mid, &err),
                     CT_OK);
    assert_memory_equal(mid.data, "bfffffff", 8);
    free((void *)mid.data);
    assert_int_equal(wc_split_midpoint(WC_SPLIT_HEXSTRING, wc_bytes_str("00000001"),
                                       wc_bytes_str("00000002"), &mid, &err),
                     CT_EINVAL);
    assert_int_equal(
        wc_split_midpoint(WC_SPLIT_UNIFORM, wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0), &mid, &err),
        CT_OK);
    split_test_hex(mid, hex);
    assert_string_equal(hex, "7fffffffffffffff");
    free((void *)mid.data);
    assert_int_equal(
        wc_split_midpoint(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_str("c"), &mid, &err),
        CT_OK);
    split_test_hex(mid, hex);
    assert_string_equal(hex, "62");
    free((void *)mid.data);
    assert_int_equal(
        wc_split_midpoint(WC_SPLIT_UNIFORM, wc_bytes_str("a"), wc_bytes_str("b"), &mid, &err),
        CT_OK);
    split_test_hex(mid, hex);
    assert_string_equal(hex, "6180");
    free((void *)mid.data);
    assert_int_equal(
        wc_split_midpoint(WC_SPLIT_UNIFORM, wc_bytes_str("b"), wc_bytes_str("a"), &mid, &err),
        CT_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hexstring_split_matches_spec_table),
        cmocka_unit_test(test_uniform_split_matches_spec_table),
        cmocka_unit_test(test_split_keys_are_sorted_unique_and_fixed_width_for_2_to_32),
        cmocka_unit_test(test_split_rejects_fewer_than_two_regions),
        cmocka_unit_test(test_hexstring_general_form_uses_given_bounds),
        cmocka_unit_test(test_uniform_general_form_pads_and_widens),
        cmocka_unit_test(test_midpoints_split_one_region),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
