/* test_qmeta.c - the metadata endpoints' logic on a real embedded store in a temporary directory:
 * /api/uid/rename (OpenTSDB's replies and error texts, the rename visible to lookups and
 * queries) and /api/uid/tsmeta writes (create with m= and create=true, POST merge, PUT replace,
 * 304 without changes, DELETE, GET by tsuid and by m=, the tsdb-meta cells as OpenTSDB stores
 * them). Skipped when this build has no embedded engine. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "query/qmeta.h"
#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/tsdb_fixture.h"

static void put(struct tsdb *t, const char *metric, const char *host, const char *dc, int64_t ts_s,
                int64_t v)
{
    const char *k[2] = {"host", "dc"}, *vals[2] = {host, dc};
    tsdb_fixture_put(t, metric, k, vals, 2, dpcodec_point_int(ts_s * 1000, false, v));
}

static int setup(void **state)
{
    struct tsdb_fixture *f = tsdb_fixture_open(0);
    if (!f) {
        *state = NULL;
        return 0;
    }
    /* UIDs in order: sys.cpu=1 sys.mem=2; host=1 dc=2; a=1 x=2 b=3 */
    put(f->t, "sys.cpu", "a", "x", 1356998400, 1);
    put(f->t, "sys.cpu", "b", "x", 1356998400, 2);
    put(f->t, "sys.mem", "a", "x", 1356998400, 3);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    tsdb_fixture_close(*state);
    return 0;
}

/* Runs fn on the JSON request text; returns the reply (or "" for none) and sets *status. On an
 * error return the result is "ERR <message>". */
typedef int (*meta_fn)(struct tsdb *t, enum qmeta_method m, const cJSON *req, cJSON **out,
                       int *status, struct ct_err *err);

static int rename_fn(struct tsdb *t, enum qmeta_method m, const cJSON *req, cJSON **out,
                     int *status, struct ct_err *err)
{
    (void)m;
    return qmeta_uid_rename(t, req, out, status, err);
}

static char *call(struct tsdb_fixture *f, meta_fn fn, enum qmeta_method m, const char *req_json,
                  int *status)
{
    cJSON *req = cJSON_Parse(req_json);
    assert_non_null(req);
    cJSON *out = NULL;
    struct ct_err err = {0};
    *status = 0;
    int rc = fn(f->t, m, req, &out, status, &err);
    cJSON_Delete(req);
    char *s;
    if (rc != CT_OK) {
        assert_null(out);
        s = malloc(strlen(err.msg) + 8);
        sprintf(s, "ERR %s", err.msg);
        return s;
    }
    if (!out)
        return strdup("");
    s = cJSON_PrintUnformatted(out);
    cJSON_Delete(out);
    return s;
}

static void expect(struct tsdb_fixture *f, meta_fn fn, enum qmeta_method m, const char *req,
                   int want_status, const char *want)
{
    int status;
    char *got = call(f, fn, m, req, &status);
    if (status != want_status || strcmp(got, want))
        fail_msg("%s: got %d [%s], want %d [%s]", req, status, got, want_status, want);
    free(got);
}

static void test_qmeta_uid_rename_answers_as_opentsdb(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    expect(f, rename_fn, QMETA_POST, "{\"metric\":\"sys.cpu\",\"name\":\"sys.cpu2\"}", 200,
           "{\"result\":\"true\"}");
    /* the id kept its data: the new name resolves to UID 1, the old one is gone */
    uint64_t id = 0;
    struct ct_err err = {0};
    assert_int_equal(uid_get_id(tsdb_uid(f->t), UID_METRIC, "sys.cpu2", 8, &id, &err), CT_OK);
    assert_int_equal(id, 1);
    assert_int_equal(uid_get_id(tsdb_uid(f->t), UID_METRIC, "sys.cpu", 7, &id, &err), CT_NOTFOUND);
    char name[64];
    size_t nl;
    assert_int_equal(uid_get_name(tsdb_uid(f->t), UID_METRIC, 1, name, sizeof(name), &nl, &err),
                     CT_OK);
    assert_string_equal(name, "sys.cpu2");
    expect(f, rename_fn, QMETA_GET, "{\"tagv\":\"b\",\"name\":\"web02\"}", 200,
           "{\"result\":\"true\"}");
    expect(f, rename_fn, QMETA_GET, "{\"tagk\":\"host\",\"name\":\"hostname\"}", 200,
           "{\"result\":\"true\"}");
    static const struct {
        const char *req;
        int status;
        const char *want;
    } bad[] = {
        {"{\"metric\":\"nope\",\"name\":\"x\"}", 400,
         "{\"result\":\"false\",\"error\":\"Name(\\\"nope\\\") does not exist\"}"},
        {"{\"metric\":\"sys.cpu2\",\"name\":\"sys.mem\"}", 400,
         "{\"result\":\"false\",\"error\":\"When trying rename(\\\"sys.cpu2\\\", \\\"sys.mem\\\") "
         "on UniqueId(tsdb-uid, metrics, 3): new name already assigned ID=[0, 0, 2]\"}"},
        {"{\"tagv\":\"a\",\"name\":\"bad name\"}", 400,
         "{\"result\":\"false\",\"error\":\"Invalid tagv (\\\"bad name\\\"): illegal character: "
         " \"}"},
        {"{\"metric\":\"sys.cpu2\"}", 400, "ERR Missing necessary values to rename UID"},
        {"{\"name\":\"x\"}", 400, "ERR Missing necessary values to rename UID"},
        {"{\"metric\":\"\",\"name\":\"x\"}", 400, "ERR Missing necessary values to rename UID"},
        {"{\"foo\":\"a\",\"name\":\"x\"}", 400,
         "{\"result\":\"false\",\"error\":\"Unknown type name\"}"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect(f, rename_fn, QMETA_POST, bad[i].req, bad[i].status, bad[i].want);
}

static const char *const TS_A = "000001000001000001000002000002"; /* sys.cpu{host=a,dc=x} */
static const char *const TS_B = "000001000001000003000002000002"; /* sys.cpu{host=b,dc=x} */

/* The meta table cells of a TSUID: "<ts_meta JSON>|<counter or ->". */
static char *cells(struct tsdb_fixture *f, const char *hex)
{
    uint8_t row[32];
    size_t n = strlen(hex) / 2;
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        row[i] = (uint8_t)v;
    }
    struct wc_scan_options so;
    wc_scan_options_init(&so);
    struct wc_result res;
    struct ct_err err = {0};
    assert_int_equal(wc_get(tsdb_meta_table(f->t), wc_bytes_of(row, n), &so, &res, &err), CT_OK);
    char meta[1024] = "-", ctr[32] = "-";
    for (size_t i = 0; i < res.row.ncells; i++) {
        const struct wc_cell *c = &res.row.cells[i];
        if (c->qualifier.len == 7 && !memcmp(c->qualifier.data, "ts_meta", 7))
            snprintf(meta, sizeof(meta), "%.*s", (int)c->value.len, (const char *)c->value.data);
        else if (c->qualifier.len == 6 && !memcmp(c->qualifier.data, "ts_ctr", 6) &&
                 c->value.len == 8) {
            long long x = 0;
            for (int k = 0; k < 8; k++)
                x = (x << 8) | c->value.data[k];
            snprintf(ctr, sizeof(ctr), "%lld", x);
        }
    }
    wc_result_release(&res);
    char *s = malloc(strlen(meta) + strlen(ctr) + 2);
    sprintf(s, "%s|%s", meta, ctr);
    return s;
}

static const char *field_str(const char *json, const char *key)
{
    static char buf[256];
    cJSON *o = cJSON_Parse(json);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    char *p = v ? cJSON_PrintUnformatted(v) : strdup("(absent)");
    snprintf(buf, sizeof(buf), "%s", p);
    free(p);
    cJSON_Delete(o);
    return buf;
}

static void test_qmeta_tsmeta_create_update_delete(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    int st;
    char req[512], *got;
    /* nothing stored yet: GET 404, POST by tsuid 400, by m without create 400 */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_GET, req, 404, "ERR Could not find Timeseries meta data");
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"description\":\"d\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 400, "ERR Requested TSMeta did not exist");
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 304, "");
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"min\":\"low\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 400, "ERR Unable to parse 'min' value");
    expect(f, qmeta_tsmeta, QMETA_POST, "{\"m\":\"sys.cpu{host=a,dc=x}\",\"description\":\"d\"}",
           400, "ERR Could not find TSMeta, specify \"create=true\" to create a new one.");
    expect(f, qmeta_tsmeta, QMETA_POST,
           "{\"m\":\"sys.cpu{host=zz,dc=x}\",\"create\":\"true\",\"notes\":\"n\"}", 404,
           "ERR Unable to find one or more UIDs");
    expect(f, qmeta_tsmeta, QMETA_POST, "{\"description\":\"d\"}", 400,
           "ERR Missing parameter <code>m</code>");
    /* create: the fields given, a zero counter, the OpenTSDB storage JSON */
    got = call(f, qmeta_tsmeta, QMETA_POST,
               "{\"m\":\"sys.cpu{dc=x,host=a}\",\"create\":\"true\",\"description\":\"CPU\","
               "\"units\":\"%\",\"max\":100,\"custom\":{\"owner\":\"ops\"}}",
               &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "tsuid"), "\"000001000001000001000002000002\"");
    assert_string_equal(field_str(got, "description"), "\"CPU\"");
    assert_string_equal(field_str(got, "units"), "\"%\"");
    assert_non_null(strstr(got, "\"max\":100.0,\"min\":\"NaN\",")); /* Java doubles */
    assert_string_equal(field_str(got, "min"), "\"NaN\"");
    assert_string_equal(field_str(got, "custom"), "{\"owner\":\"ops\"}");
    assert_string_equal(field_str(got, "totalDatapoints"), "0");
    assert_non_null(strstr(got, "\"metric\":{\"uid\":\"000001\",\"type\":\"METRIC\",\"name\":"
                                "\"sys.cpu\""));
    assert_non_null(strstr(got, "\"tags\":[{\"uid\":\"000001\",\"type\":\"TAGK\",\"name\":"
                                "\"host\""));
    free(got);
    got = cells(f, TS_A);
    assert_string_equal(got, "{\"tsuid\":\"000001000001000001000002000002\",\"displayName\":\"\","
                             "\"description\":\"CPU\",\"notes\":\"\",\"created\":0,\"custom\":{"
                             "\"owner\":\"ops\"},\"units\":\"%\",\"dataType\":\"\",\"retention\":"
                             "0,\"max\":100.0,\"min\":\"NaN\"}|0");
    free(got);
    /* POST merges: only the given field changes */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"notes\":\"n1\",\"retention\":\"7\"}", TS_A);
    got = call(f, qmeta_tsmeta, QMETA_POST, req, &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "notes"), "\"n1\"");
    assert_string_equal(field_str(got, "description"), "\"CPU\"");
    assert_string_equal(field_str(got, "retention"), "7");
    free(got);
    /* no changes: 304 without a body */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 304, "");
    /* PUT replaces: fields not given go back to their defaults */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"displayName\":\"cpu a\"}", TS_A);
    got = call(f, qmeta_tsmeta, QMETA_PUT, req, &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "displayName"), "\"cpu a\"");
    assert_string_equal(field_str(got, "description"), "\"\"");
    assert_string_equal(field_str(got, "custom"), "null");
    assert_string_equal(field_str(got, "max"), "\"NaN\"");
    free(got);
    /* GET answers what was written */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\"}", TS_A);
    got = call(f, qmeta_tsmeta, QMETA_GET, req, &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "displayName"), "\"cpu a\"");
    free(got);
    /* bad values */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"retention\":\"x\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 400, "ERR Unable to parse 'retention' value");
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\",\"max\":\"high\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_POST, req, 400, "ERR Unable to parse 'max' value");
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"tsuid\":\"00zz\"}", 400, "ERR Invalid TSUID: 00zz");
    /* a second series, then GET by m lists the stored metas that have the tags */
    snprintf(req, sizeof(req), "{\"m\":\"sys.cpu{host=b,dc=x}\",\"create\":\"true\"}");
    got = call(f, qmeta_tsmeta, QMETA_POST, req, &st);
    assert_int_equal(st, 200);
    free(got);
    got = call(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.cpu\"}", &st);
    assert_int_equal(st, 200);
    cJSON *list = cJSON_Parse(got);
    assert_int_equal(cJSON_GetArraySize(list), 2);
    assert_string_equal(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(list, 1), "tsuid")->valuestring, TS_B);
    cJSON_Delete(list);
    free(got);
    got = call(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.cpu{host=b}\"}", &st);
    list = cJSON_Parse(got);
    assert_int_equal(cJSON_GetArraySize(list), 1);
    cJSON_Delete(list);
    free(got);
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.mem\"}", 200, "[]");
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"nope\"}", 404,
           "ERR Unable to find one of the UIDs");
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.cpu{rack=r1}\"}", 404,
           "ERR Unable to find one of the UIDs");
    /* DELETE drops ts_meta, keeps the counter; then GET is 404 again */
    snprintf(req, sizeof(req), "{\"tsuid\":\"%s\"}", TS_A);
    expect(f, qmeta_tsmeta, QMETA_DELETE, req, 204, "");
    expect(f, qmeta_tsmeta, QMETA_GET, req, 404, "ERR Could not find Timeseries meta data");
    got = cells(f, TS_A);
    assert_string_equal(got, "-|0");
    free(got);
    expect(f, qmeta_tsmeta, QMETA_DELETE, "{}", 400, "ERR Unable to delete TSMeta information");
}

/* The counter cell (written by OpenTSDB's realtime tracking) is reported as totalDatapoints and
 * its write time as lastReceived. */
static void test_qmeta_tsmeta_reports_the_counter(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    int st;
    char *got = call(f, qmeta_tsmeta, QMETA_POST,
                     "{\"m\":\"sys.mem{host=a,dc=x}\",\"create\":\"true\"}", &st);
    assert_int_equal(st, 200);
    free(got);
    uint8_t row[15] = {0, 0, 2, 0, 0, 1, 0, 0, 1, 0, 0, 2, 0, 0, 2};
    int64_t n = 0;
    struct ct_err err = {0};
    assert_int_equal(wc_increment(tsdb_meta_table(f->t), wc_bytes_of(row, 15), wc_bytes_str("name"),
                                  wc_bytes_str("ts_ctr"), 42, WC_DURABILITY_USE_DEFAULT, &n, &err),
                     CT_OK);
    got = call(f, qmeta_tsmeta, QMETA_GET, "{\"tsuid\":\"000002000001000001000002000002\"}", &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "totalDatapoints"), "42");
    assert_true(atof(field_str(got, "lastReceived")) > 1.5e9);
    free(got);
    /* a UID deleted under a stored TSMeta: 404 for the TSUID and for the metric's list */
    assert_int_equal(uid_delete(tsdb_uid(f->t), UID_TAGV, "x", &err), CT_OK);
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"tsuid\":\"000002000001000001000002000002\"}", 404,
           "ERR Unable to find one of the UIDs");
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.mem\"}", 404,
           "ERR Unable to find one of the UIDs");
}

static int uidmeta_fn(struct tsdb *t, enum qmeta_method m, const cJSON *req, cJSON **out,
                      int *status, struct ct_err *err)
{
    return qmeta_uidmeta(t, m, req, 1357000000000LL, out, status, err);
}

/* UIDMeta writes answer as UniqueIdRpc does: 304 without changes, 404 `Could not find the
 * requested UID`, the query-string name display_name, OpenTSDB's parameter messages. */
static void test_qmeta_uidmeta_answers_as_opentsdb(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    int st;
    char *got = call(f, uidmeta_fn, QMETA_POST,
                     "{\"uid\":\"000001\",\"type\":\"metric\",\"display_name\":\"CPU\"}", &st);
    assert_int_equal(st, 200);
    assert_string_equal(field_str(got, "displayName"), "\"CPU\"");
    assert_string_equal(field_str(got, "created"), "1357000000");
    free(got);
    expect(f, uidmeta_fn, QMETA_POST, "{\"uid\":\"000001\",\"type\":\"metric\"}", 304, "");
    expect(f, uidmeta_fn, QMETA_GET, "{\"uid\":\"0000FF\",\"type\":\"metric\"}", 404,
           "ERR Could not find the requested UID");
    expect(f, uidmeta_fn, QMETA_POST, "{\"uid\":\"0000FF\",\"type\":\"tagk\",\"notes\":\"n\"}", 404,
           "ERR Could not find the requested UID");
    expect(f, uidmeta_fn, QMETA_GET, "{\"uid\":\"000001\",\"type\":\"host\"}", 400,
           "ERR Invalid type requested: host");
    expect(f, uidmeta_fn, QMETA_GET, "{\"type\":\"metric\"}", 400,
           "ERR Missing parameter <code>uid</code>");
    expect(f, uidmeta_fn, QMETA_GET, "{\"uid\":\"000001\"}", 400,
           "ERR Missing parameter <code>type</code>");
    expect(f, uidmeta_fn, QMETA_POST, "{\"type\":\"metric\"}", 400, "ERR Missing UID");
    expect(f, uidmeta_fn, QMETA_DELETE, "{\"uid\":\"000001\",\"type\":\"metric\"}", 204, "");
}

/* Requests of the wrong shape are 400s with a message, never a crash or a write. */
static void test_qmeta_bad_shapes_are_refused(void **state)
{
    TSDB_FIXTURE_SKIP_IF_NONE(state);
    struct tsdb_fixture *f = *state;
    static const struct {
        meta_fn fn;
        enum qmeta_method m;
        const char *req, *want;
    } bad[] = {
        {rename_fn, QMETA_POST, "[\"metric\",\"a\"]", "ERR Missing necessary values to rename UID"},
        {rename_fn, QMETA_POST, "{\"metric\":1,\"name\":\"x\"}",
         "ERR Missing necessary values to rename UID"},
        {qmeta_tsmeta, QMETA_POST, "[1,2]", "ERR Unable to parse the given JSON"},
        {qmeta_tsmeta, QMETA_GET, "{\"tsuid\":12}", "ERR Missing parameter <code>m</code>"},
        {qmeta_tsmeta, QMETA_GET, "{\"tsuid\":\"000001\"}", "ERR Invalid TSUID: 000001"},
        {qmeta_tsmeta, QMETA_POST,
         "{\"m\":\"sys.cpu{host=a,dc=x}\",\"create\":\"true\",\"custom\":{\"k\":1}}",
         "ERR Unable to parse the given JSON: 'custom' must be an object of strings"},
        {qmeta_tsmeta, QMETA_POST,
         "{\"m\":\"sys.cpu{host=a,dc=x}\",\"create\":\"true\",\"units\":[\"%\"]}",
         "ERR Unable to parse the given JSON: 'units' must be a string"},
        {qmeta_tsmeta, QMETA_POST, "{\"m\":\"sys.cpu{host=a\",\"create\":\"true\"}",
         "ERR Missing '}' at the end of: sys.cpu{host=a"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect(f, bad[i].fn, bad[i].m, bad[i].req, 400, bad[i].want);
    /* nothing was created by the refused requests */
    expect(f, qmeta_tsmeta, QMETA_GET, "{\"m\":\"sys.cpu\"}", 200, "[]");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qmeta_uid_rename_answers_as_opentsdb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_tsmeta_create_update_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_tsmeta_reports_the_counter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_uidmeta_answers_as_opentsdb, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qmeta_bad_shapes_are_refused, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
