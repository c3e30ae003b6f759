/* tsdb_fixture.c - see tsdb_fixture.h. */
#include "tests/lib/tsdb_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "query/qjson.h"
#include "schema/rowkey.h"
#include "tests/lib/ctest.h"

struct tsdb_fixture *tsdb_fixture_open(unsigned salt_buckets)
{
    struct tsdb_fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = f->dir;
    struct ct_err err = {0};
    int rc = wc_open(&o, &f->s, &err);
    if (rc == CT_EUNSUPPORTED) {
        ctest_rmdir(f->dir);
        free(f);
        return NULL;
    }
    if (rc != CT_OK)
        fail_msg("open %s: %s", f->dir, err.msg);
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.layout.salt_width = salt_buckets ? 1 : 0; /* explicit: the default is salted */
    if (salt_buckets)
        c.layout.salt_buckets = salt_buckets;
    if (tsdb_open(f->s, &c, &f->t, &err) != CT_OK)
        fail_msg("tsdb_open: %s", err.msg);
    return f;
}

void tsdb_fixture_close(struct tsdb_fixture *f)
{
    if (!f)
        return;
    tsdb_close(f->t);
    wc_close(f->s);
    ctest_rmdir(f->dir);
    free(f);
}

void tsdb_fixture_put(struct tsdb *t, const char *metric, const char *const *k,
                      const char *const *v, size_t n, struct dpcodec_point p)
{
    uint8_t tsuid[ROWKEY_MAX_TSUID];
    size_t len;
    struct ct_err err = {0};
    struct tsdb_batch *b = NULL;
    if (tsdb_series_resolve(t, metric, k, v, n, tsuid, sizeof(tsuid), &len, &err) != CT_OK ||
        tsdb_batch_new(4, &b, &err) != CT_OK ||
        tsdb_batch_add(b, tsdb_layout(t), tsuid, len, &p, &err) != CT_OK ||
        tsdb_batch_write(t, b, WC_DURABILITY_SKIP_WAL, &err) != CT_OK)
        fail_msg("put %s: %s", metric, err.msg);
    tsdb_batch_free(b);
}

int tsdb_fixture_sink(void *arg, const char *d, size_t n)
{
    struct tsdb_fixture_buf *b = arg;
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        assert_non_null(b->data);
    }
    memcpy(b->data + b->len, d, n);
    b->len += n;
    b->data[b->len] = 0;
    return CT_OK;
}

int tsdb_fixture_run(struct tsdb *t, struct qspec *q, const struct qexec_options *o, char **json,
                     enum qexec_status *st, struct ct_err *err)
{
    struct tsdb_fixture_buf b = {0};
    struct qjson *j = qjson_new(tsdb_fixture_sink, &b, 64);
    assert_non_null(j);
    int rc = qexec_run(t, q, o, j, st, NULL, err);
    if (rc == CT_OK)
        assert_int_equal(qjson_flush(j), CT_OK);
    qjson_free(j);
    qspec_free(q);
    if (rc != CT_OK) {
        assert_int_equal(b.len, 0); /* errors never follow partial output */
        free(b.data);
        *json = NULL;
        return rc;
    }
    *json = b.data ? b.data : strdup("");
    return CT_OK;
}
