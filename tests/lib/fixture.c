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
