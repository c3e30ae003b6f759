/* test_auth.c - the TSD's write/admin protection (tsd/auth.h): the address and CIDR
 * allow-list matcher, peer strings, the constant-time token compare, Authorization headers,
 * the route classes, and the verdicts the daemon derives from its configuration. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/auth.h"
#include "tsd/conf.h"

static struct auth_addr addr(const char *s)
{
    struct auth_addr a;
    assert_int_equal(auth_addr_parse(s, &a), CT_OK);
    return a;
}

static bool acl_has(const struct auth_acl *acl, const char *s)
{
    struct auth_addr a = addr(s);
    return auth_acl_match(acl, &a);
}

static void test_auth_acl_matches_addresses_and_cidrs(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct auth_acl *acl = NULL;
    assert_int_equal(auth_acl_parse("127.0.0.1/32,10.0.0.0/8,::1", &acl, &err), CT_OK);
    assert_int_equal(auth_acl_count(acl), 3);
    assert_true(acl_has(acl, "127.0.0.1"));
    assert_true(acl_has(acl, "10.0.0.0"));
    assert_true(acl_has(acl, "10.255.255.255"));
    assert_true(acl_has(acl, "::1"));
    assert_false(acl_has(acl, "127.0.0.2"));
    assert_false(acl_has(acl, "11.0.0.0"));
    assert_false(acl_has(acl, "9.255.255.255"));
    assert_false(acl_has(acl, "192.168.1.1"));
    assert_false(acl_has(acl, "::2"));
    /* a dual-stack socket shows IPv4 clients as IPv4-mapped IPv6 addresses */
    assert_true(acl_has(acl, "::ffff:10.1.2.3"));
    assert_true(acl_has(acl, "::ffff:127.0.0.1"));
    assert_false(acl_has(acl, "::ffff:11.1.2.3"));
    /* an unknown address matches nothing */
    struct auth_addr none = {0};
    assert_false(auth_acl_match(acl, &none));
    auth_acl_free(acl);
}

static void test_auth_acl_prefixes_at_odd_bit_boundaries(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct auth_acl *acl = NULL;
    assert_int_equal(auth_acl_parse("  fe80::/10 192.168.4.0/22,,172.16.0.0/12 ", &acl, &err),
                     CT_OK);
    assert_int_equal(auth_acl_count(acl), 3);
    assert_true(acl_has(acl, "fe80::1"));
    assert_true(acl_has(acl, "febf:ffff::1"));
    assert_false(acl_has(acl, "fec0::1"));
    assert_true(acl_has(acl, "192.168.4.1"));
    assert_true(acl_has(acl, "192.168.7.255"));
    assert_false(acl_has(acl, "192.168.8.0"));
    assert_false(acl_has(acl, "192.168.3.255"));
    assert_true(acl_has(acl, "172.31.255.255"));
    assert_false(acl_has(acl, "172.32.0.0"));
    auth_acl_free(acl);

    /* /0 covers a whole family, and only that family */
    assert_int_equal(auth_acl_parse("0.0.0.0/0", &acl, &err), CT_OK);
    assert_true(acl_has(acl, "1.2.3.4"));
    assert_true(acl_has(acl, "::ffff:1.2.3.4"));
    assert_false(acl_has(acl, "2001:db8::1"));
    auth_acl_free(acl);

    /* an IPv4-mapped entry with an IPv6 prefix length */
    assert_int_equal(auth_acl_parse("::ffff:10.0.0.0/104", &acl, &err), CT_OK);
    assert_true(acl_has(acl, "10.9.9.9"));
    assert_false(acl_has(acl, "11.0.0.0"));
    auth_acl_free(acl);

    /* an empty list parses to no entries and matches nothing */
    assert_int_equal(auth_acl_parse(" , ", &acl, &err), CT_OK);
    assert_int_equal(auth_acl_count(acl), 0);
    assert_false(acl_has(acl, "127.0.0.1"));
    auth_acl_free(acl);
}

static void test_auth_acl_rejects_bad_entries_naming_them(void **state)
{
    (void)state;
    static const struct {
        const char *list, *msg;
    } bad[] = {
        {"10.0.0.1/8", "bad allow-list entry '10.0.0.1/8': address bits set beyond the /8"},
        {"10.0.0.0/33", "bad allow-list entry '10.0.0.0/33': prefix longer than 32 bits"},
        {"::1/129",
         "bad allow-list entry '::1/129': the prefix length must be a number from 0 to 128"},
        {"127.0.0.1,host.example", "'host.example': not an IPv4 or IPv6 address"},
        {"10.0.0.0/", "'10.0.0.0/': the prefix length must be a number from 0 to 128"},
        {"10.0.0.0/x", "'10.0.0.0/x': the prefix length must be a number from 0 to 128"},
        {"10.0.0.0/-1", "'10.0.0.0/-1': the prefix length must be a number from 0 to 128"},
        {"::ffff:10.0.0.0/64", "an IPv4-mapped prefix must be >= 96"},
        {"1.2.3", "'1.2.3': not an IPv4 or IPv6 address"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct ct_err err = {0};
        struct auth_acl *acl = NULL;
        assert_int_equal(auth_acl_parse(bad[i].list, &acl, &err), CT_EINVAL);
        assert_null(acl);
        if (!strstr(err.msg, bad[i].msg))
            fail_msg("%s: got '%s'", bad[i].list, err.msg);
    }
}

static void test_auth_peer_strings_and_loopback(void **state)
{
    (void)state;
    struct auth_addr a;
    assert_int_equal(auth_addr_from_peer("127.0.0.1:4242", &a), CT_OK);
    assert_int_equal(a.family, 4);
    assert_int_equal(a.bytes[0], 127);
    assert_int_equal(a.bytes[3], 1);
    assert_true(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("::1:5555", &a), CT_OK);
    assert_int_equal(a.family, 6);
    assert_true(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("[2001:db8::7]:80", &a), CT_OK);
    assert_int_equal(a.family, 6);
    assert_false(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("::ffff:127.3.4.5:80", &a), CT_OK);
    assert_int_equal(a.family, 4);
    assert_true(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("10.0.0.1:1", &a), CT_OK);
    assert_false(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("?:0", &a), CT_EINVAL);
    assert_int_equal(a.family, 0);
    assert_false(auth_addr_is_loopback(&a));
    assert_int_equal(auth_addr_from_peer("", &a), CT_EINVAL);
    assert_int_equal(auth_addr_parse("::2", &a), CT_OK);
    assert_false(auth_addr_is_loopback(&a));
}

static void test_auth_token_equal_needs_every_byte_and_the_length(void **state)
{
    (void)state;
    const char *want = "s3cret-token";
    size_t n = strlen(want);
    assert_true(auth_token_equal(want, n, "s3cret-token", n));
    assert_false(auth_token_equal(want, n, "s3cret-tokeN", n));
    assert_false(auth_token_equal(want, n, "X3cret-token", n));
    assert_false(auth_token_equal(want, n, "s3cret-toke", n - 1));
    assert_false(auth_token_equal(want, n, "s3cret-token!", n + 1));
    /* a received token that only shares a prefix of NULs past its end does not match */
    char padded[32] = "s3cret-token";
    assert_false(auth_token_equal(want, n, padded, n + 3));
    assert_false(auth_token_equal(want, n, "", 0));
    assert_false(auth_token_equal("", 0, "", 0));
}

static void test_auth_header_credential_bearer_and_basic(void **state)
{
    (void)state;
    char out[64];
    size_t len = 0;
    assert_true(auth_header_credential("Bearer abc.DEF-123", out, sizeof(out), &len));
    assert_string_equal(out, "abc.DEF-123");
    assert_int_equal(len, 11);
    assert_true(auth_header_credential("  bearer   tok  ", out, sizeof(out), &len));
    assert_string_equal(out, "tok");
    /* base64("grafana:s3cret") */
    assert_true(auth_header_credential("Basic Z3JhZmFuYTpzM2NyZXQ=", out, sizeof(out), &len));
    assert_string_equal(out, "s3cret");
    assert_int_equal(len, 6);
    /* base64(":tok") - empty user name */
    assert_true(auth_header_credential("BASIC OnRvaw==", out, sizeof(out), &len));
    assert_string_equal(out, "tok");
    /* base64("u:a:b") - the password may hold a colon; padding is optional */
    assert_true(auth_header_credential("Basic dTphOmI", out, sizeof(out), &len));
    assert_string_equal(out, "a:b");
    /* base64("user") has no colon; base64("user:") has an empty password */
    assert_false(auth_header_credential("Basic dXNlcg==", out, sizeof(out), &len));
    assert_false(auth_header_credential("Basic dXNlcjo=", out, sizeof(out), &len));
    assert_false(auth_header_credential("Basic !!!!", out, sizeof(out), &len));
    assert_false(auth_header_credential("Bearer", out, sizeof(out), &len));
    assert_false(auth_header_credential("Bearer    ", out, sizeof(out), &len));
    assert_false(auth_header_credential("Digest abc", out, sizeof(out), &len));
    assert_false(auth_header_credential("", out, sizeof(out), &len));
    assert_false(auth_header_credential("Bearer 0123456789", out, 8, &len));
}

static void test_auth_routes_are_classified_by_path_and_method(void **state)
{
    (void)state;
    assert_int_equal(auth_http_classify("/api/put", HTTP_POST, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/query", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/query", HTTP_POST, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/query", HTTP_DELETE, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/query/last", HTTP_POST, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/suggest", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/version", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/stats", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/config", HTTP_POST, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/index.html", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/annotation", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/annotation", HTTP_POST, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/annotations", HTTP_DELETE, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/annotation/bulk", HTTP_PUT, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/uid/assign", HTTP_GET, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/uid/uidmeta", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/uid/uidmeta", HTTP_POST, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/uid/tsmeta", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/uid/tsmeta", HTTP_GET, true), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/uid/tsmeta", HTTP_DELETE, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/dropcaches", HTTP_GET, false), AUTH_ADMIN);
    assert_int_equal(auth_http_classify("/diediedie", HTTP_GET, false), AUTH_ADMIN);
    assert_int_equal(auth_http_classify("/api/tree/branch", HTTP_POST, false), AUTH_WRITE);
    assert_int_equal(auth_http_classify("/api/tree/branch", HTTP_GET, false), AUTH_READ);
    assert_int_equal(auth_http_classify("/api/putx", HTTP_POST, false), AUTH_READ);
}

/* A conf with the given key=value pairs (NULL-terminated). */
static struct auth *auth_with(const char *const *kv, int want_rc, struct ct_err *err)
{
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, err), CT_OK);
    for (size_t i = 0; kv && kv[i]; i += 2)
        assert_int_equal(conf_set(c, kv[i], kv[i + 1], NULL, err), CT_OK);
    struct auth *a = NULL;
    assert_int_equal(auth_new(c, &a, err), want_rc);
    conf_free(c);
    return a;
}

static void test_auth_default_is_open_except_admin(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct auth *a = auth_with(NULL, CT_OK, &err);
    assert_non_null(a);
    assert_false(auth_token_required(a));
    struct auth_addr local = addr("127.0.0.1"), remote = addr("192.0.2.9");
    assert_int_equal(auth_check(a, AUTH_READ, &remote, NULL, 0, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &remote, NULL, 0, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &local, "junk", 4, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &local, NULL, 0, false), AUTH_ADMIN_DISABLED);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &remote, NULL, 0, false), AUTH_ADMIN_DISABLED);
    char line[256];
    auth_describe(a, line, sizeof(line));
    assert_non_null(strstr(line, "writes need a token: no"));
    assert_non_null(strstr(line, "(tsd.core.enable_admin): false"));
    auth_free(a);
    /* loopback: admin from local clients only */
    static const char *const kv[] = {"tsd.core.enable_admin", "loopback", NULL};
    a = auth_with(kv, CT_OK, &err);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &local, NULL, 0, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &remote, NULL, 0, false), AUTH_ADMIN_NOT_LOCAL);
    auth_free(a);
}

static void test_auth_token_allow_list_and_admin_verdicts(void **state)
{
    (void)state;
    struct ct_err err = {0};
    static const char *const kv[] = {"tsd.core.auth.token",
                                     "t0ken",
                                     "tsd.core.auth.allow",
                                     "10.0.0.0/8, ::1",
                                     "tsd.core.enable_admin",
                                     "true",
                                     NULL};
    struct auth *a = auth_with(kv, CT_OK, &err);
    assert_true(auth_token_required(a));
    struct auth_addr in = addr("10.1.1.1"), out = addr("127.0.0.1"), v6 = addr("::1");
    assert_int_equal(auth_check(a, AUTH_READ, &out, NULL, 0, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &in, NULL, 0, false), AUTH_NO_TOKEN);
    assert_int_equal(auth_check(a, AUTH_WRITE, &in, "t0keN", 5, false), AUTH_BAD_TOKEN);
    assert_int_equal(auth_check(a, AUTH_WRITE, &in, "t0ken", 5, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &in, NULL, 0, true), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &v6, "t0ken", 5, false), AUTH_OK);
    /* the address is checked before the token: a good token from outside is refused */
    assert_int_equal(auth_check(a, AUTH_WRITE, &out, "t0ken", 5, false), AUTH_ADDR_REFUSED);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &in, "t0ken", 5, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &in, NULL, 0, false), AUTH_NO_TOKEN);
    auth_free(a);

    static const char *const off[] = {"tsd.core.enable_admin", "false", NULL};
    a = auth_with(off, CT_OK, &err);
    assert_int_equal(auth_check(a, AUTH_ADMIN, &out, NULL, 0, false), AUTH_ADMIN_DISABLED);
    assert_int_equal(auth_check(a, AUTH_WRITE, &out, NULL, 0, false), AUTH_OK);
    char why[256];
    auth_verdict_reason(AUTH_ADMIN_DISABLED, "127.0.0.1", why, sizeof(why));
    assert_string_equal(why, "admin actions are disabled (tsd.core.enable_admin=false)");
    auth_verdict_reason(AUTH_ADDR_REFUSED, "127.0.0.1", why, sizeof(why));
    assert_string_equal(why, "client address 127.0.0.1 is not in tsd.core.auth.allow");
    auth_free(a);
}

static void test_auth_settings_errors_name_the_key(void **state)
{
    (void)state;
    struct ct_err err = {0};
    static const char *const both[] = {"tsd.core.auth.token", "a", "tsd.core.auth.token_file",
                                       "/nonexistent", NULL};
    assert_null(auth_with(both, CT_EINVAL, &err));
    assert_string_equal(err.msg, "set tsd.core.auth.token or tsd.core.auth.token_file, not both");
    static const char *const spaced[] = {"tsd.core.auth.token", "two words", NULL};
    assert_null(auth_with(spaced, CT_EINVAL, &err));
    assert_non_null(strstr(err.msg, "tsd.core.auth.token: the token must be printable ASCII"));
    static const char *const badacl[] = {"tsd.core.auth.allow", "10.0.0.0/8,nope", NULL};
    assert_null(auth_with(badacl, CT_EINVAL, &err));
    assert_string_equal(err.msg,
                        "tsd.core.auth.allow: bad allow-list entry 'nope': not an IPv4 or IPv6 "
                        "address");
    static const char *const nofile[] = {"tsd.core.auth.token_file", "/nonexistent/tok", NULL};
    assert_null(auth_with(nofile, CT_EINVAL, &err));
    assert_non_null(strstr(err.msg, "cannot open /nonexistent/tok: No such file or directory"));
    /* enable_admin takes false, loopback or true */
    struct conf *c = NULL;
    assert_int_equal(conf_new(&c, &err), CT_OK);
    assert_int_equal(conf_set(c, "tsd.core.enable_admin", "maybe", NULL, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "expected one of false|loopback|true"));
    conf_free(c);
}

static void test_auth_token_file_is_read_and_trimmed(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[512];
    snprintf(path, sizeof(path), "%s/token", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("from-a-file\n", f);
    fclose(f);
    struct ct_err err = {0};
    const char *kv[] = {"tsd.core.auth.token_file", path, NULL};
    struct auth *a = auth_with(kv, CT_OK, &err);
    assert_true(auth_token_required(a));
    struct auth_addr p = addr("127.0.0.1");
    assert_int_equal(auth_check(a, AUTH_WRITE, &p, "from-a-file", 11, false), AUTH_OK);
    assert_int_equal(auth_check(a, AUTH_WRITE, &p, "from-a-file\n", 12, false), AUTH_BAD_TOKEN);
    auth_free(a);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("\n  \n", f);
    fclose(f);
    assert_null(auth_with(kv, CT_EINVAL, &err));
    assert_non_null(strstr(err.msg, "is empty"));
    ctest_rmdir(dir);
}

static void test_auth_telnet_session_logs_in_once(void **state)
{
    (void)state;
    struct ct_err err = {0};
    static const char *const kv[] = {"tsd.core.auth.token", "t0ken", "tsd.core.enable_admin",
                                     "loopback", NULL};
    struct auth *a = auth_with(kv, CT_OK, &err);
    struct auth_session s;
    memset(&s, 0, sizeof(s));
    char why[512];
    assert_false(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_WRITE, why, sizeof(why)));
    assert_non_null(strstr(why, "unauthorized: a token is required"));
    assert_true(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_READ, why, sizeof(why)));
    assert_string_equal(auth_telnet_login(a, &s, " wrong", 6), "AUTH_FAIL");
    assert_false(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_WRITE, why, sizeof(why)));
    assert_string_equal(auth_telnet_login(a, &s, " t0ken\r", 7), "AUTH_SUCCESS.");
    assert_true(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_WRITE, why, sizeof(why)));
    assert_true(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_ADMIN, why, sizeof(why)));
    /* a failed attempt later logs the connection out again */
    assert_string_equal(auth_telnet_login(a, &s, " t0ke", 5), "AUTH_FAIL");
    assert_false(auth_telnet_permit(a, &s, "127.0.0.1:999", AUTH_WRITE, why, sizeof(why)));
    /* admin from a remote peer under enable_admin=loopback */
    struct auth_session r;
    memset(&r, 0, sizeof(r));
    assert_string_equal(auth_telnet_login(a, &r, " t0ken", 6), "AUTH_SUCCESS.");
    assert_true(auth_telnet_permit(a, &r, "192.0.2.1:5", AUTH_WRITE, why, sizeof(why)));
    assert_false(auth_telnet_permit(a, &r, "192.0.2.1:5", AUTH_ADMIN, why, sizeof(why)));
    assert_non_null(strstr(why, "forbidden: admin actions are allowed from loopback clients only, "
                                "not from 192.0.2.1"));
    auth_free(a);

    /* with no token configured every login succeeds and writes are open */
    a = auth_with(NULL, CT_OK, &err);
    memset(&s, 0, sizeof(s));
    assert_true(auth_telnet_permit(a, &s, "192.0.2.1:5", AUTH_WRITE, why, sizeof(why)));
    assert_string_equal(auth_telnet_login(a, &s, " anything", 9), "AUTH_SUCCESS.");
    auth_free(a);
}

static void test_auth_only_the_token_key_is_secret(void **state)
{
    (void)state;
    assert_true(auth_conf_key_secret("tsd.core.auth.token"));
    assert_false(auth_conf_key_secret("tsd.core.auth.token_file"));
    assert_false(auth_conf_key_secret("tsd.core.auth.allow"));
    assert_false(auth_conf_key_secret("tsd.network.port"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auth_acl_matches_addresses_and_cidrs),
        cmocka_unit_test(test_auth_acl_prefixes_at_odd_bit_boundaries),
        cmocka_unit_test(test_auth_acl_rejects_bad_entries_naming_them),
        cmocka_unit_test(test_auth_peer_strings_and_loopback),
        cmocka_unit_test(test_auth_token_equal_needs_every_byte_and_the_length),
        cmocka_unit_test(test_auth_header_credential_bearer_and_basic),
        cmocka_unit_test(test_auth_routes_are_classified_by_path_and_method),
        cmocka_unit_test(test_auth_default_is_open_except_admin),
        cmocka_unit_test(test_auth_token_allow_list_and_admin_verdicts),
        cmocka_unit_test(test_auth_settings_errors_name_the_key),
        cmocka_unit_test(test_auth_token_file_is_read_and_trimmed),
        cmocka_unit_test(test_auth_telnet_session_logs_in_once),
        cmocka_unit_test(test_auth_only_the_token_key_is_secret),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
