/* test_http.c - the HTTP helpers behind tsd/http.h: query-string decoding with presence-only
 * and repeated parameters, path normalisation, jsonp names, and the reply builders (OpenTSDB
 * error objects, jsonp wrapping, pretty printing, one reply per request), and small streamed
 * replies held whole (jsonp included) and retractable for an error status, and the RFC 9112
 * framing rules (header lines, Content-Length and Transfer-Encoding). Requests are built
 * directly on the private struct (tsd/http_int.h); the server itself is covered by the
 * integration tests. */
#include <cjson/cJSON.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"
#include "tsd/http.h"
#include "tsd/http_int.h"

static struct http_conn conn;

static struct http_req *req_new(const char *query)
{
    struct http_req *r = calloc(1, sizeof(*r));
    assert_non_null(r);
    r->conn = &conn;
    r->minor = 1;
    r->reply_body = evbuffer_new();
    r->query = strdup(query);
    r->path = strdup("/api/x");
    assert_int_equal(http_parse_query(r), 0);
    return r;
}

static char *body_of(struct http_req *r)
{
    size_t n = evbuffer_get_length(r->reply_body);
    char *s = malloc(n + 1);
    evbuffer_copyout(r->reply_body, s, n);
    s[n] = '\0';
    return s;
}

static void test_http_query_params_flags_and_repeats(void **state)
{
    (void)state;
    struct http_req *r = req_new("m=sum:a%7Bhost%3Dx%7D&details&m=avg:b&q=a+b&empty=&pretty");
    assert_string_equal(http_req_param(r, "m"), "sum:a{host=x}");
    assert_int_equal(http_req_param_count(r, "m"), 2);
    assert_string_equal(http_req_param_at(r, "m", 1), "avg:b");
    assert_null(http_req_param_at(r, "m", 2));
    assert_string_equal(http_req_param(r, "details"), "");
    assert_true(http_req_flag(r, "details"));
    assert_string_equal(http_req_param(r, "q"), "a b");
    assert_string_equal(http_req_param(r, "empty"), "");
    assert_null(http_req_param(r, "absent"));
    assert_false(http_req_flag(r, "absent"));
    http_req_free(r);
    r = req_new("details=false&summary=0&sync=true");
    assert_false(http_req_flag(r, "details"));
    assert_false(http_req_flag(r, "summary"));
    assert_true(http_req_flag(r, "sync"));
    http_req_free(r);
}

static void test_http_path_normalisation_and_decoding(void **state)
{
    (void)state;
    const char *msg = NULL;
    char det[128];
    char a[] = "/api/v1/query/last/";
    assert_int_equal(http_normalise_path(a, &msg, det, sizeof(det)), 0);
    assert_string_equal(a, "/api/query/last");
    char b[] = "/api/v1";
    assert_int_equal(http_normalise_path(b, &msg, det, sizeof(det)), 0);
    assert_string_equal(b, "/api");
    char c[] = "/";
    assert_int_equal(http_normalise_path(c, &msg, det, sizeof(det)), 0);
    assert_string_equal(c, "/");
    /* OpenTSDB's HttpQuery.getQueryBaseRoute: case, versions it refuses */
    char up[] = "/API/V1/Query/Last";
    assert_int_equal(http_normalise_path(up, &msg, det, sizeof(det)), 0);
    assert_string_equal(up, "/api/query/Last");
    char noapi[] = "/Apiary/V1";
    assert_int_equal(http_normalise_path(noapi, &msg, det, sizeof(det)), 0);
    assert_string_equal(noapi, "/Apiary/V1");
    char ver[] = "/api/version";
    assert_int_equal(http_normalise_path(ver, &msg, det, sizeof(det)), 0);
    assert_string_equal(ver, "/api/version");
    char d[] = "/api/v10/x";
    assert_int_equal(http_normalise_path(d, &msg, det, sizeof(det)), 501);
    assert_string_equal(msg, "Requested API version is greater than the max implemented");
    assert_string_equal(det, "API version [10] is greater than the max [1]");
    char bad[] = "/api/v1a/put";
    assert_int_equal(http_normalise_path(bad, &msg, det, sizeof(det)), 400);
    assert_string_equal(msg, "Invalid API version format supplied");
    assert_string_equal(det, "API version [1a] cannot be parsed to an integer");
    char g[] = "/api/v99999999999/put"; /* past Java's int */
    assert_int_equal(http_normalise_path(g, &msg, det, sizeof(det)), 400);
    char e[] = "/a%2e%2E/b+c";
    assert_true(http_decode(e, false));
    assert_string_equal(e, "/a../b+c");
    char f[] = "/x%00y";
    assert_false(http_decode(f, false));
    assert_true(http_jsonp_ok("cb_1.x$"));
    assert_false(http_jsonp_ok("alert(1)"));
    assert_false(http_jsonp_ok(""));
}

static void test_http_error_object_shape(void **state)
{
    (void)state;
    struct http_req *r = req_new("");
    http_reply_error(r, 405, "Method not allowed",
                     "The HTTP method [DELETE] is not permitted for this endpoint");
    char *s = body_of(r);
    assert_string_equal(s, "{\"error\":{\"code\":405,\"message\":\"Method not allowed\","
                           "\"details\":\"The HTTP method [DELETE] is not permitted for this "
                           "endpoint\"}}");
    assert_int_equal(r->status, 405);
    assert_string_equal(r->content_type, "application/json; charset=UTF-8");
    free(s);
    http_req_free(r);
    r = req_new("");
    http_reply_error(r, 404, "Endpoint not found", NULL);
    s = body_of(r);
    assert_string_equal(s, "{\"error\":{\"code\":404,\"message\":\"Endpoint not found\"}}");
    free(s);
    http_req_free(r);
}

static void test_http_jsonp_and_pretty_and_single_reply(void **state)
{
    (void)state;
    struct http_req *r = req_new("jsonp=cb");
    r->jsonp = http_req_param(r, "jsonp");
    http_reply_json(r, 200, "[1,2]", 5);
    /* a second reply is ignored */
    http_reply_status(r, 204);
    char *s = body_of(r);
    assert_string_equal(s, "cb([1,2])");
    assert_int_equal(r->status, 200);
    free(s);
    http_req_free(r);

    r = req_new("pretty");
    r->pretty = true;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "a", 1);
    http_reply_cjson(r, 200, o);
    s = body_of(r);
    assert_non_null(strchr(s, '\n'));
    assert_non_null(strstr(s, "\"a\":"));
    free(s);
    http_req_free(r);

    r = req_new("");
    http_reply_raw(r, 200, "text/plain", "hi", 2);
    s = body_of(r);
    assert_string_equal(s, "hi");
    assert_string_equal(r->content_type, "text/plain");
    free(s);
    http_req_free(r);
    assert_string_equal(http_status_text(413), "Request Entity Too Large");
}

static void test_http_small_stream_is_held_whole_with_jsonp(void **state)
{
    (void)state;
    struct http_req *r = req_new("jsonp=cb");
    r->jsonp = http_req_param(r, "jsonp");
    http_stream_begin(r, 200, NULL);
    assert_int_equal(http_stream_write(r, "[1,", 3), CT_OK);
    assert_int_equal(http_stream_printf(r, "%d]", 2), CT_OK);
    http_stream_end(r);
    /* nothing went to a socket: the loop sends the body whole */
    assert_true(r->streaming);
    assert_true(r->stream_held);
    assert_true(r->stream_ended);
    char *s = body_of(r);
    assert_string_equal(s, "cb([1,2])");
    assert_int_equal(r->status, 200);
    free(s);
    /* once ended, writes are refused */
    assert_int_equal(http_stream_write(r, "x", 1), CT_ECLOSED);
    http_req_free(r);
}

static void test_http_held_stream_can_be_retracted_for_an_error(void **state)
{
    (void)state;
    struct http_req *r = req_new("");
    http_stream_begin(r, 200, NULL);
    assert_int_equal(http_stream_write(r, "[{\"metric\":", 11), CT_OK);
    assert_true(http_stream_retract(r));
    assert_false(r->streaming);
    http_reply_error(r, 413, "Too many data points", NULL);
    char *s = body_of(r);
    assert_string_equal(s, "{\"error\":{\"code\":413,\"message\":\"Too many data points\"}}");
    assert_int_equal(r->status, 413);
    free(s);
    /* a whole reply is not a stream: nothing to retract */
    assert_false(http_stream_retract(r));
    http_req_free(r);
}

/* Splits a copy of line; returns the status and, when 0, the name and value in kv. */
static int split(const char *line, char *buf, size_t size, struct http_kv *kv, const char **msg)
{
    snprintf(buf, size, "%s", line);
    *msg = NULL;
    return http_header_split(buf, kv, msg);
}

static void test_http_header_lines(void **state)
{
    (void)state;
    char buf[256];
    struct http_kv kv;
    const char *msg;
    assert_int_equal(split("Content-Length:  12 \t", buf, sizeof(buf), &kv, &msg), 0);
    assert_string_equal(kv.name, "Content-Length");
    assert_string_equal(kv.value, "12");
    assert_int_equal(split("X-Empty:", buf, sizeof(buf), &kv, &msg), 0);
    assert_string_equal(kv.value, "");
    assert_int_equal(split("X-A:b:c", buf, sizeof(buf), &kv, &msg), 0);
    assert_string_equal(kv.value, "b:c");
    /* RFC 9112 5.1: no whitespace between the name and the colon */
    assert_int_equal(split("Transfer-Encoding : chunked", buf, sizeof(buf), &kv, &msg), 400);
    assert_non_null(strstr(msg, "Whitespace"));
    assert_int_equal(split("Content-Length\t: 5", buf, sizeof(buf), &kv, &msg), 400);
    /* obs-fold, no colon, an empty or invalid name, a CR in the value */
    assert_int_equal(split(" folded", buf, sizeof(buf), &kv, &msg), 400);
    assert_non_null(strstr(msg, "obs-fold"));
    assert_int_equal(split("\tfolded", buf, sizeof(buf), &kv, &msg), 400);
    assert_int_equal(split("NoColon", buf, sizeof(buf), &kv, &msg), 400);
    assert_int_equal(split(": v", buf, sizeof(buf), &kv, &msg), 400);
    assert_int_equal(split("Bad(Name): v", buf, sizeof(buf), &kv, &msg), 400);
    assert_int_equal(split("X-A: a\rb", buf, sizeof(buf), &kv, &msg), 400);
}

/* A request with the given header lines ("Name: value", split as the server does). */
static struct http_req *req_headers(int minor, const char *const *lines, size_t n, char *bufs)
{
    struct http_req *r = req_new("");
    r->minor = minor;
    for (size_t i = 0; i < n; i++) {
        char *b = bufs + i * 128;
        snprintf(b, 128, "%s", lines[i]);
        const char *msg = NULL;
        assert_int_equal(http_header_split(b, &r->headers[r->nheaders], &msg), 0);
        r->nheaders++;
    }
    return r;
}

/* The framing of a request with these header lines: the status, and chunked / length. */
static int framing(int minor, bool enable_chunked, const char *const *lines, size_t n,
                   bool *chunked, uint64_t *length, const char **msg)
{
    static char bufs[8 * 128];
    assert_true(n <= 8);
    struct http_req *r = req_headers(minor, lines, n, bufs);
    const struct http_framing_limits lim = {enable_chunked, 1000};
    *msg = NULL;
    int st = http_body_framing(r, &lim, chunked, length, msg);
    http_req_free(r);
    return st;
}

#define FRAMING(minor, chunked_on, ...)                                                            \
    framing(minor, chunked_on, (const char *const[]){__VA_ARGS__},                                 \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *), &ch, &len, &msg)

static void test_http_body_framing(void **state)
{
    (void)state;
    bool ch;
    uint64_t len;
    const char *msg;
    /* no body; one length; repeated identical lengths, also as a list, are one (6.3) */
    assert_int_equal(FRAMING(1, false, "Host: x"), 0);
    assert_false(ch);
    assert_int_equal(len, 0);
    assert_int_equal(FRAMING(1, false, "Content-Length: 12"), 0);
    assert_int_equal(len, 12);
    assert_int_equal(FRAMING(1, false, "Content-Length: 7", "Content-Length: 7"), 0);
    assert_int_equal(len, 7);
    assert_int_equal(FRAMING(1, false, "Content-Length: 7 ,7, 7"), 0);
    assert_int_equal(len, 7);
    /* conflicting lengths, in two lines or one list */
    assert_int_equal(FRAMING(1, false, "Content-Length: 2", "Content-Length: 40"), 400);
    assert_non_null(strstr(msg, "Conflicting"));
    assert_int_equal(FRAMING(1, false, "Content-Length: 2, 40"), 400);
    /* invalid values */
    const char *bad[] = {
        "Content-Length: ",     "Content-Length: +2",  "Content-Length: -1",
        "Content-Length: 0x10", "Content-Length: 1 2", "Content-Length: 2,",
        "Content-Length: ,2",   "Content-Length: 2a",  "Content-Length: 99999999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(framing(1, false, &bad[i], 1, &ch, &len, &msg), 400);
        assert_string_equal(msg, "Invalid Content-Length");
    }
    /* over the body limit */
    assert_int_equal(FRAMING(1, false, "Content-Length: 1001"), 413);
    assert_int_equal(FRAMING(1, false, "Content-Length: 1000"), 0);
    /* chunked */
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: chunked"), 0);
    assert_true(ch);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: CHUNKED"), 0);
    assert_true(ch);
    assert_int_equal(FRAMING(1, false, "Transfer-Encoding: chunked"), 400);
    assert_string_equal(msg, "Chunked request not supported.");
    /* Content-Length with Transfer-Encoding, whichever comes first */
    assert_int_equal(FRAMING(1, true, "Content-Length: 5", "Transfer-Encoding: chunked"), 400);
    assert_non_null(strstr(msg, "Both"));
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: chunked", "Content-Length: 5"), 400);
    /* chunked not last, twice, or in HTTP/1.0 */
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: gzip"), 400);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: chunked, gzip"), 400);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: chunked", "Transfer-Encoding: gzip"),
                     400);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: chunked, chunked"), 400);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: identity"), 400);
    assert_int_equal(FRAMING(0, true, "Transfer-Encoding: chunked"), 400);
    assert_non_null(strstr(msg, "HTTP/1.0"));
    /* another coding before chunked: understood framing, unsupported coding */
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: gzip, chunked"), 501);
    assert_int_equal(FRAMING(1, true, "Transfer-Encoding: gzip", "Transfer-Encoding: chunked"),
                     501);
}

int main(void)
{
    pthread_mutex_init(&conn.mu, NULL);
    pthread_cond_init(&conn.cv, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_query_params_flags_and_repeats),
        cmocka_unit_test(test_http_path_normalisation_and_decoding),
        cmocka_unit_test(test_http_error_object_shape),
        cmocka_unit_test(test_http_jsonp_and_pretty_and_single_reply),
        cmocka_unit_test(test_http_small_stream_is_held_whole_with_jsonp),
        cmocka_unit_test(test_http_held_stream_can_be_retracted_for_an_error),
        cmocka_unit_test(test_http_header_lines),
        cmocka_unit_test(test_http_body_framing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
