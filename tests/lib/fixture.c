/* fixture.c - store and table setup for unit tests (see fixture.h). */
#include "tests/lib/fixture.h"

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
