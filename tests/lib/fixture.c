/* fixture.c - store and table setup for unit tests (see fixture.h). */
#include "tests/lib/fixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/ctest.h"

struct wc_store *fixture_store_open(const struct wc_options *o)
{
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    if (wc_open(o, &s, &err) != CT_OK)
        fail_msg("open %s: %s", o->data_dir ? o->data_dir : "store", err.msg);
    return s;
}

void fixture_table_create(struct wc_store *s, const char *name, const char *const *fams, size_t nf,
                          uint32_t versions)
{
    struct wc_family_desc fd[8];
    assert_true(nf <= 8);
    for (size_t i = 0; i < nf; i++) {
        wc_family_desc_init(&fd[i], fams[i]);
        if (versions)
            fd[i].versions = versions;
    }
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fd;
    d.nfamilies = nf;
    struct ct_err err = {0};
    if (wc_table_create(s, &d, NULL, 0, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
}

struct wc_table *fixture_table_open(struct wc_store *s, const char *name)
{
    struct wc_table *t = NULL;
    struct ct_err err = {0};
    if (wc_table_open(s, name, &t, &err) != CT_OK)
        fail_msg("open %s: %s", name, err.msg);
    return t;
}

struct wc_store_stats fixture_store_stats(struct wc_store *s)
{
    struct wc_store_stats st;
    struct ct_err err = {0};
    if (wc_store_stats(s, &st, &err) != CT_OK)
        fail_msg("stats: %s", err.msg);
    return st;
}

struct wc_store *fixture_history_open(char **dir)
{
    *dir = ctest_mkdtemp();
    setenv("CTSDB_NOW_MS", "1000000", 1);
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = *dir;
    o.block_cache_bytes = 256 << 10;
    return fixture_store_open(&o);
}

void fixture_history_close(struct wc_store *s, char *dir)
{
    wc_close(s);
    ctest_rmdir(dir);
    unsetenv("CTSDB_NOW_MS");
}

uint64_t fixture_rnd(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

enum wc_row_decision fixture_pass_all(void *arg, const uint8_t *row, size_t len)
{
    (void)arg;
    (void)row;
    (void)len;
    return WC_ROW_INCLUDE;
}

void fixture_fmt_row(char *out, size_t size, const struct wc_row *r)
{
    size_t l = strlen(out);
    for (size_t i = 0; i < r->ncells && l + 1 < size; i++) {
        const struct wc_cell *c = &r->cells[i];
        l += (size_t)snprintf(out + l, size - l, "%s%.*s|%.*s:%.*s@%lld/%d=%.*s", l ? " " : "",
                              (int)r->key.len, (const char *)r->key.data, (int)c->family.len,
                              (const char *)c->family.data, (int)c->qualifier.len,
                              (const char *)c->qualifier.data, (long long)c->ts_ms, (int)c->type,
                              (int)c->value.len, (const char *)c->value.data);
        if (l >= size)
            l = size - 1;
    }
}

struct wc_table *fixture_history_table(struct wc_store *s, const char *name, const char *split,
                                       enum wc_bloom f_bloom)
{
    struct wc_family_desc fd[2];
    wc_family_desc_init(&fd[0], "f");
    fd[0].versions = 3;
    fd[0].min_versions = 1;
    fd[0].ttl_s = 600; /* now = 1000 s: cells below ts 400000 are expired */
    fd[0].bloom = f_bloom;
    fd[0].blocksize = 1024;
    fd[0].encoding = WC_ENCODING_FAST_DIFF; /* delta-coded blocks under every history read */
    wc_family_desc_init(&fd[1], "g");
    fd[1].versions = 1;
    fd[1].blocksize = 1024;
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = fd;
    d.nfamilies = 2;
    d.compaction_enabled = false; /* compactions only where the test asks */
    struct wc_bytes sp = wc_bytes_str(split);
    struct ct_err err = {0};
    if (wc_table_create(s, &d, &sp, 1, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
    return fixture_table_open(s, name);
}

void fixture_history_write(struct wc_table *t, uint64_t *seed, int round, int n, int nrows,
                           const char *row_fmt, int row_delete_every)
{
    static const char *quals[] = {"", "a", "ab", "b"};
    static const char *fams[] = {"f", "g"};
    struct ct_err err = {0};
    for (int i = 0; i < n; i++) {
        char row[16], val[32];
        snprintf(row, sizeof row, row_fmt, (int)(fixture_rnd(seed) % (uint64_t)nrows));
        snprintf(val, sizeof val, "v%d.%d", round, i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(fams[fixture_rnd(seed) % 2]),
                                wc_bytes_str(quals[fixture_rnd(seed) % 4]), wc_bytes_str(val),
                                (int64_t)(350000 + fixture_rnd(seed) % 12 * 50000)};
        uint64_t k = fixture_rnd(seed) % 20;
        if (k < 2)
            m.op = WC_OP_DELETE_VERSION;
        else if (k == 2)
            m.op = WC_OP_DELETE_COLUMN;
        else if (k == 3)
            m.op = WC_OP_DELETE_FAMILY;
        else if (k == 4)
            m.op = WC_OP_DELETE_FAMILY_VERSION;
        else if (k == 5 && i % row_delete_every == 0)
            m.op = WC_OP_DELETE_ROW;
        if (m.op == WC_OP_DELETE_FAMILY || m.op == WC_OP_DELETE_FAMILY_VERSION ||
            m.op == WC_OP_DELETE_ROW)
            m.qualifier = wc_bytes_of(NULL, 0);
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        if (wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err) != CT_OK)
            fail_msg("mutate %s: %s", row, err.msg);
    }
}

bool fixture_history_options(int v, struct wc_scan_options *o, struct wc_column *cols)
{
    wc_scan_options_init(o);
    cols[0] = (struct wc_column){wc_bytes_str("f"), wc_bytes_str("ab"), true};
    cols[1] = (struct wc_column){wc_bytes_str("g"), wc_bytes_of(NULL, 0), false};
    switch (v) {
    case 0:
        return true;
    case 1:
        o->max_versions = 3;
        return true;
    case 2:
        o->columns = cols;
        o->ncolumns = 2;
        o->max_versions = 2;
        return true;
    case 3:
        o->tmin_ms = 400000;
        o->tmax_ms = 700000;
        o->max_versions = 3;
        return true;
    case 4:
        o->qualifier_prefix = wc_bytes_str("a");
        o->max_versions = 3;
        return true;
    default:
        return false;
    }
}
