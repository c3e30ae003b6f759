/* test_uid.c - the UID service on a real store: assignment and lookups in both directions,
 * OpenTSDB's name rules and messages, widths and exhaustion, random metric ids, rename, delete,
 * suggest, the bounded cache, and a race of concurrent assigners (no name gets two ids, no id
 * two names). Skipped when the embedded engine is not in this build. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "schema/tsdb.h"
#include "schema/uid.h"
#include "tests/lib/ctest.h"

struct fixture {
    char *dir;
    struct wc_store *s;
    struct tsdb *t;
};

static int open_tsdb(struct fixture *f, const struct tsdb_config *c)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = f->dir;
    struct ct_err err = {0};
    int rc = wc_open(&o, &f->s, &err);
    if (rc == CT_EUNSUPPORTED)
        return rc;
    assert_int_equal(rc, CT_OK);
    rc = tsdb_open(f->s, c, &f->t, &err);
    if (rc != CT_OK)
        fail_msg("tsdb_open: %s", err.msg);
    return CT_OK;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    f->dir = ctest_mkdtemp();
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    tsdb_close(f->t);
    wc_close(f->s);
    ctest_rmdir(f->dir);
    free(f);
    return 0;
}

static struct uid *uid_of(void **state, const struct tsdb_config *c)
{
    struct fixture *f = *state;
    struct tsdb_config d;
    if (!c) {
        tsdb_config_init(&d);
        c = &d;
    }
    if (open_tsdb(f, c) == CT_EUNSUPPORTED)
        skip();
    return tsdb_uid(f->t);
}

static void test_uid_name_rules_follow_opentsdb(void **state)
{
    (void)state;
    struct ct_err err = {0};
    assert_int_equal(uid_name_check("metric name", "sys.cpu-0_a/b", 13, NULL, &err), CT_OK);
    assert_int_equal(uid_name_check("metric name", "caf\xc3\xa9", 5, NULL, &err), CT_OK);
    assert_int_equal(uid_name_check("metric name", "\xe6\x97\xa5\xe6\x9c\xac", 6, NULL, &err),
                     CT_OK);
    assert_int_equal(uid_name_check("metric name", "a b", 3, NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Invalid metric name (\"a b\"): illegal character:  ");
    assert_int_equal(uid_name_check("metric name", "a:b", 3, NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Invalid metric name (\"a:b\"): illegal character: :");
    assert_int_equal(uid_name_check("metric name", "a:b", 3, ":", &err), CT_OK);
    assert_int_equal(uid_name_check("tag value", "", 0, NULL, &err), CT_EINVAL);
    assert_string_equal(err.msg, "Invalid tag value: empty string");
    assert_int_equal(uid_name_check("metric name", "a\xff", 2, NULL, &err), CT_EINVAL);
    assert_int_equal(uid_name_check("metric name", "\xe2\x82\xac", 3, NULL, &err), CT_EINVAL);
}

static void test_uid_hex_forms(void **state)
{
    (void)state;
    char hex[17];
    uid_format_hex(0x0a0b0c, 3, hex);
    assert_string_equal(hex, "0A0B0C");
    uint64_t id;
    struct ct_err err = {0};
    assert_int_equal(uid_parse_hex("0a0B0c", 3, &id, &err), CT_OK);
    assert_int_equal(id, 0x0a0b0c);
    assert_int_equal(uid_parse_hex("0A0B", 3, &id, &err), CT_EINVAL);
    assert_int_equal(uid_parse_hex("0A0B0G", 3, &id, &err), CT_EINVAL);
}

static void test_uid_assign_lookup_and_reverse(void **state)
{
    struct uid *u = uid_of(state, NULL);
    struct ct_err err = {0};
    uint64_t a, b, c;
    assert_int_equal(uid_get_id(u, UID_METRIC, "sys.cpu", 7, &a, &err), CT_NOTFOUND);
    assert_string_equal(err.msg, "No such name for 'metrics': 'sys.cpu'");
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "sys.cpu", 7, &a, &err), CT_OK);
    assert_int_equal(a, 1);
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "sys.mem", 7, &b, &err), CT_OK);
    assert_int_equal(b, 2);
    assert_int_equal(uid_get_or_create_id(u, UID_TAGK, "host", 4, &c, &err), CT_OK);
    assert_int_equal(c, 1); /* every kind counts on its own */
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "sys.cpu", 7, &a, &err), CT_OK);
    assert_int_equal(a, 1);
    assert_int_equal(uid_assign_id(u, UID_METRIC, "sys.cpu", 7, &a, &err), CT_EEXIST);
    assert_string_equal(err.msg, "Name already exists with UID: 000001");
    char name[64];
    size_t len;
    assert_int_equal(uid_get_name(u, UID_METRIC, 2, name, sizeof(name), &len, &err), CT_OK);
    assert_string_equal(name, "sys.mem");
    assert_int_equal(uid_get_name(u, UID_METRIC, 9, name, sizeof(name), &len, &err), CT_NOTFOUND);
    assert_string_equal(err.msg, "No such unique ID for 'metrics': '000009'");
    uint64_t max;
    assert_int_equal(uid_max_id(u, UID_METRIC, &max, &err), CT_OK);
    assert_int_equal(max, 2);
    assert_int_equal(uid_get_or_create_id(u, UID_TAGV, "a b", 3, &a, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "illegal character"));
    /* the cache served the repeated lookups */
    struct uid_stats st;
    uid_stats_get(u, UID_METRIC, &st);
    assert_true(st.cache_hits > 0);
    assert_int_equal(st.assigned, 2);
    assert_int_equal(st.cache_entries, 2); /* sys.cpu and sys.mem by name */
    uid_cache_drop(u);
    uid_stats_get(u, UID_METRIC, &st);
    assert_int_equal(st.cache_entries, 0);
    assert_int_equal(uid_get_id(u, UID_METRIC, "sys.mem", 7, &b, &err), CT_OK);
    assert_int_equal(b, 2);
    uid_stats_get(u, UID_METRIC, &st);
    assert_int_equal(st.cache_entries, 1);
    /* a delete forgets the name */
    assert_int_equal(uid_delete(u, UID_METRIC, "sys.mem", &err), CT_OK);
    uid_stats_get(u, UID_METRIC, &st);
    assert_int_equal(st.cache_entries, 0);
}

static void test_uid_width_exhaustion_is_reported(void **state)
{
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.layout.tagv_width = 1;
    struct uid *u = uid_of(state, &c);
    struct ct_err err = {0};
    uint64_t id;
    char name[16];
    for (int i = 1; i <= 255; i++) {
        snprintf(name, sizeof(name), "v%d", i);
        assert_int_equal(uid_get_or_create_id(u, UID_TAGV, name, strlen(name), &id, &err), CT_OK);
        assert_int_equal(id, (uint64_t)i);
    }
    assert_int_equal(uid_get_or_create_id(u, UID_TAGV, "one-more", 8, &id, &err), CT_ELIMIT);
    assert_string_equal(err.msg, "All Unique IDs for tagv on 1 bytes are already assigned!");
}

static void test_uid_random_metrics_are_unique(void **state)
{
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.random_metrics = true;
    c.layout.metric_width = 1; /* a small space forces collisions and retries */
    struct uid *u = uid_of(state, &c);
    struct ct_err err = {0};
    bool seen[256] = {false};
    char name[16];
    int assigned = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t id;
        snprintf(name, sizeof(name), "m%d", i);
        int rc = uid_get_or_create_id(u, UID_METRIC, name, strlen(name), &id, &err);
        if (rc == CT_ECONFLICT)
            continue; /* no free id found in the allowed tries: reported, never reused */
        assert_int_equal(rc, CT_OK);
        assert_true(id >= 1 && id <= 255);
        assert_false(seen[id]);
        seen[id] = true;
        assigned++;
    }
    assert_true(assigned > 50);
}

struct suggest_acc {
    char names[8][32];
    int n;
};

static int suggest_collect(void *arg, enum uid_kind k, const char *name, size_t len, uint64_t id)
{
    (void)k;
    (void)id;
    struct suggest_acc *a = arg;
    if (a->n < 8)
        snprintf(a->names[a->n++], 32, "%.*s", (int)len, name);
    return 0;
}

static void test_uid_suggest_rename_delete(void **state)
{
    struct uid *u = uid_of(state, NULL);
    struct ct_err err = {0};
    uint64_t id;
    const char *names[] = {"sys.cpu.user", "sys.cpu.sys", "sys.mem", "app.req"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(uid_get_or_create_id(u, UID_METRIC, names[i], strlen(names[i]), &id, &err),
                         CT_OK);
    assert_int_equal(uid_get_or_create_id(u, UID_TAGK, "sys.tagk", 8, &id, &err), CT_OK);
    struct suggest_acc a = {0};
    assert_int_equal(uid_suggest(u, UID_METRIC, "sys.cpu", 0, suggest_collect, &a, &err), CT_OK);
    assert_int_equal(a.n, 2);
    assert_string_equal(a.names[0], "sys.cpu.sys"); /* byte order */
    assert_string_equal(a.names[1], "sys.cpu.user");
    memset(&a, 0, sizeof(a));
    assert_int_equal(uid_suggest(u, UID_METRIC, "", 3, suggest_collect, &a, &err), CT_OK);
    assert_int_equal(a.n, 3);
    assert_string_equal(a.names[0], "app.req");
    /* rename keeps the id */
    uint64_t old;
    assert_int_equal(uid_get_id(u, UID_METRIC, "sys.mem", 7, &old, &err), CT_OK);
    assert_int_equal(uid_rename(u, UID_METRIC, "sys.mem", "sys.memory", &err), CT_OK);
    assert_int_equal(uid_get_id(u, UID_METRIC, "sys.mem", 7, &id, &err), CT_NOTFOUND);
    assert_int_equal(uid_get_id(u, UID_METRIC, "sys.memory", 10, &id, &err), CT_OK);
    assert_int_equal(id, old);
    char name[64];
    size_t len;
    assert_int_equal(uid_get_name(u, UID_METRIC, old, name, sizeof(name), &len, &err), CT_OK);
    assert_string_equal(name, "sys.memory");
    assert_int_equal(uid_rename(u, UID_METRIC, "sys.memory", "app.req", &err), CT_EEXIST);
    assert_int_equal(uid_rename(u, UID_METRIC, "nope", "x", &err), CT_NOTFOUND);
    /* delete removes both directions */
    assert_int_equal(uid_delete(u, UID_METRIC, "app.req", &err), CT_OK);
    assert_int_equal(uid_get_id(u, UID_METRIC, "app.req", 7, &id, &err), CT_NOTFOUND);
    assert_int_equal(uid_delete(u, UID_METRIC, "app.req", &err), CT_NOTFOUND);
}

/* ---- the race ---------------------------------------------------------------------------- */

#define RACE_THREADS 4
#define RACE_NAMES   60

struct race {
    struct uid *u;
    uint64_t ids[RACE_THREADS][RACE_NAMES];
    int failures;
    pthread_mutex_t mu;
};

struct race_arg {
    struct race *r;
    int thread;
};

static void *race_worker(void *p)
{
    struct race_arg *a = p;
    struct ct_err err = {0};
    char name[32];
    for (int i = 0; i < RACE_NAMES; i++) {
        /* every thread walks the same names, starting at different places */
        int n = (i + a->thread * 17) % RACE_NAMES;
        snprintf(name, sizeof(name), "race.metric.%d", n);
        uint64_t id;
        if (uid_get_or_create_id(a->r->u, UID_METRIC, name, strlen(name), &id, &err) != CT_OK) {
            pthread_mutex_lock(&a->r->mu);
            a->r->failures++;
            pthread_mutex_unlock(&a->r->mu);
            continue;
        }
        a->r->ids[a->thread][n] = id;
    }
    return NULL;
}

/* tsd.storage.ctsdb.uid_cache_bytes: 2,000 200-byte tag values (cached both ways, ~464 KiB of
 * names) through a service bounded at 64 KiB: the names never pass the bound after a call, the
 * cache still holds some (it keeps working), and every name still resolves (from the table). */
static void test_uid_cache_names_bounded_in_bytes(void **state)
{
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.uid_cache_bytes = 64 << 10;
    struct uid *u = uid_of(state, &c);
    struct ct_err err = {0};
    char name[256];
    uint64_t id, peak = 0;
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(name, sizeof(name), "v%05d-", i);
        memset(name + n, 'x', 200 - (size_t)n);
        assert_int_equal(uid_get_or_create_id(u, UID_TAGV, name, 200, &id, &err), CT_OK);
        char back[256];
        size_t len;
        assert_int_equal(uid_get_name(u, UID_TAGV, id, back, sizeof(back), &len, &err), CT_OK);
        assert_int_equal(len, 200);
        struct uid_stats st;
        uid_stats_get(u, UID_TAGV, &st);
        assert_true(st.cache_name_bytes <= 64 << 10);
        if (st.cache_name_bytes > peak)
            peak = st.cache_name_bytes;
    }
    assert_true(peak > 32 << 10); /* the bound is used, not the cache switched off */
    for (int i = 0; i < 2000; i += 97) {
        int n = snprintf(name, sizeof(name), "v%05d-", i);
        memset(name + n, 'x', 200 - (size_t)n);
        uint64_t again;
        assert_int_equal(uid_get_id(u, UID_TAGV, name, 200, &again, &err), CT_OK);
        assert_int_equal(again, (uint64_t)i + 1);
    }
    uid_cache_drop(u);
    struct uid_stats st;
    uid_stats_get(u, UID_TAGV, &st);
    assert_int_equal(st.cache_name_bytes, 0); /* every name's cost given back */
}

static void test_uid_concurrent_assigners_never_split_a_name_or_an_id(void **state)
{
    struct fixture *f = *state;
    struct tsdb_config c;
    tsdb_config_init(&c);
    c.uid_cache_entries = 0; /* every call goes to the store */
    if (open_tsdb(f, &c) == CT_EUNSUPPORTED)
        skip();
    /* one uid service per thread, as separate TSD processes would have */
    struct uid *us[RACE_THREADS];
    struct ct_err err = {0};
    struct uid_options o;
    uid_options_init(&o);
    o.cache_entries = 0;
    for (int i = 0; i < RACE_THREADS; i++)
        assert_int_equal(uid_open(tsdb_uid_table(f->t), &o, &us[i], &err), CT_OK);
    pthread_t th[RACE_THREADS];
    struct race_arg args[RACE_THREADS];
    /* each thread has its own service and its own result table */
    struct race views[RACE_THREADS];
    memset(views, 0, sizeof(views));
    for (int i = 0; i < RACE_THREADS; i++) {
        views[i].u = us[i];
        pthread_mutex_init(&views[i].mu, NULL);
        args[i].r = &views[i];
        args[i].thread = i;
        assert_int_equal(pthread_create(&th[i], NULL, race_worker, &args[i]), 0);
    }
    for (int i = 0; i < RACE_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < RACE_THREADS; i++)
        assert_int_equal(views[i].failures, 0);
    /* no name got two ids: every thread saw the same id for each name */
    for (int n = 0; n < RACE_NAMES; n++)
        for (int i = 1; i < RACE_THREADS; i++)
            assert_true(views[i].ids[i][n] == views[0].ids[0][n]);
    /* no id names two names: ids are distinct, and the reverse rows agree */
    for (int n = 0; n < RACE_NAMES; n++) {
        for (int m = n + 1; m < RACE_NAMES; m++)
            assert_true(views[0].ids[0][n] != views[0].ids[0][m]);
        char name[64], want[32];
        size_t len;
        snprintf(want, sizeof(want), "race.metric.%d", n);
        assert_int_equal(
            uid_get_name(us[0], UID_METRIC, views[0].ids[0][n], name, sizeof(name), &len, &err),
            CT_OK);
        assert_string_equal(name, want);
    }
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_mutex_destroy(&views[i].mu);
        uid_close(us[i]);
    }
}

/* Writes the uid table's cells as a recreated table's new life would hold them: generation g,
 * name -> id and id -> name (width 3). */
static void put_uid_cells(struct wc_table *t, uint64_t g, const char *name, uint32_t id)
{
    struct ct_err err = {0};
    uint8_t gv[8], zero = 0, idb[3] = {(uint8_t)(id >> 16), (uint8_t)(id >> 8), (uint8_t)id};
    for (int i = 0; i < 8; i++)
        gv[i] = (uint8_t)(g >> (56 - 8 * i));
    struct wc_mutation gm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_ID),
                             wc_bytes_str(UID_GENERATION_QUALIFIER), wc_bytes_of(gv, 8),
                             WC_TS_LATEST};
    struct wc_row_mutation grm = {wc_bytes_of(&zero, 1), &gm, 1};
    assert_int_equal(wc_mutate_row(t, &grm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    struct wc_mutation fm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_ID), wc_bytes_str("metrics"),
                             wc_bytes_of(idb, 3), WC_TS_LATEST};
    struct wc_row_mutation frm = {wc_bytes_str(name), &fm, 1};
    assert_int_equal(wc_mutate_row(t, &frm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    struct wc_mutation rm = {WC_OP_PUT, wc_bytes_str(UID_FAMILY_NAME), wc_bytes_str("metrics"),
                             wc_bytes_str(name), WC_TS_LATEST};
    struct wc_row_mutation rrm = {wc_bytes_of(idb, 3), &rm, 1};
    assert_int_equal(wc_mutate_row(t, &rrm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
}

/* (7) on the embedded store: create-tables writes a generation, the first assignment adopts it;
 * a changed generation (the table's new life reusing id 1 for another name) drops the cache on
 * a forced check and on the scheduled one, and the stale mapping is never answered again. */
static void test_uid_generation_change_drops_the_cache(void **state)
{
    struct uid *u = uid_of(state, NULL);
    struct fixture *f = *state;
    struct wc_table *t = tsdb_uid_table(f->t);
    struct ct_err err = {0};
    uint64_t id;
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "m.a", 3, &id, &err), CT_OK);
    assert_int_equal(id, 1);
    uint64_t g0 = uid_generation(u);
    assert_true(g0 != 0); /* written by create-tables (tsdb_open), adopted at the assignment */
    bool dropped = true;
    assert_int_equal(uid_generation_check(u, true, &dropped, &err), CT_OK);
    assert_false(dropped);
    uint64_t drops = uid_drop_count(u);

    /* the table's new life: id 1 now names m.b, m.a is unknown */
    put_uid_cells(t, g0 + 1, "m.b", 1);
    struct wc_mutation dm = {WC_OP_DELETE_ROW, {0}, {0}, {0}, WC_TS_LATEST};
    struct wc_row_mutation drm = {wc_bytes_str("m.a"), &dm, 1};
    assert_int_equal(wc_mutate_row(t, &drm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    char name[64];
    size_t len;
    /* before a check the cache still answers the former life (the stale window) */
    assert_int_equal(uid_get_name(u, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_memory_equal(name, "m.a", 3);
    assert_int_equal(uid_generation_check(u, true, &dropped, &err), CT_OK);
    assert_true(dropped);
    assert_int_equal(uid_drop_count(u), drops + 1);
    assert_int_equal(uid_generation(u), g0 + 1);
    assert_int_equal(uid_get_name(u, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(name, "m.b", 3);
    assert_int_equal(uid_get_id(u, UID_METRIC, "m.a", 3, &id, &err), CT_NOTFOUND);

    /* the scheduled check: a service checking every millisecond notices on its next lookup */
    struct uid_options o;
    uid_options_init(&o);
    o.generation_check_ms = 1;
    struct uid *s;
    assert_int_equal(uid_open(t, &o, &s, &err), CT_OK);
    assert_int_equal(uid_get_name(s, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_memory_equal(name, "m.b", 3);
    put_uid_cells(t, g0 + 2, "m.c", 1);
    struct timespec ts = {0, 5 * 1000 * 1000};
    nanosleep(&ts, NULL);
    assert_int_equal(uid_get_name(s, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_memory_equal(name, "m.c", 3);
    assert_int_equal(uid_generation(s), g0 + 2);
    uid_close(s);
}

/* (8) the check after an assignment conflict: a service that never checks on a schedule draws
 * an id whose reverse row the table's new life already holds; the conflict makes it read the
 * generation, drop its caches and draw again, so its stale mapping of id 1 is gone. */
static void test_uid_assignment_conflict_checks_the_generation(void **state)
{
    struct uid *u = uid_of(state, NULL);
    struct fixture *f = *state;
    struct wc_table *t = tsdb_uid_table(f->t);
    struct ct_err err = {0};
    uint64_t id;
    assert_int_equal(uid_get_or_create_id(u, UID_METRIC, "m.a", 3, &id, &err), CT_OK);
    assert_int_equal(id, 1);
    uint64_t g0 = uid_generation(u);
    struct uid_options o;
    uid_options_init(&o);
    o.generation_check_ms = 0; /* no scheduled check: only a conflict can notice */
    struct uid *s;
    assert_int_equal(uid_open(t, &o, &s, &err), CT_OK);
    assert_int_equal(uid_get_or_create_id(s, UID_METRIC, "m.y", 3, &id, &err), CT_OK);
    assert_int_equal(id, 2);
    assert_int_equal(uid_generation(s), g0); /* adopted at its first assignment */
    char name[64];
    size_t len;
    assert_int_equal(uid_get_name(s, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_memory_equal(name, "m.a", 3); /* cached */
    uint64_t drops = uid_drop_count(s);

    /* the table's new life: id 1 names m.c, id 3 (the counter's next) is taken by m.b */
    put_uid_cells(t, g0 + 1, "m.c", 1);
    put_uid_cells(t, g0 + 1, "m.b", 3);
    assert_int_equal(uid_get_or_create_id(s, UID_METRIC, "m.x", 3, &id, &err), CT_OK);
    assert_int_equal(id, 4); /* 3 was taken: drawn again */
    assert_int_equal(uid_drop_count(s), drops + 1);
    assert_int_equal(uid_generation(s), g0 + 1);
    assert_int_equal(uid_get_name(s, UID_METRIC, 1, name, sizeof(name), &len, &err), CT_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(name, "m.c", 3);
    uid_close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uid_name_rules_follow_opentsdb),
        cmocka_unit_test_setup_teardown(test_uid_generation_change_drops_the_cache, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_uid_assignment_conflict_checks_the_generation, setup,
                                        teardown),
        cmocka_unit_test(test_uid_hex_forms),
        cmocka_unit_test_setup_teardown(test_uid_assign_lookup_and_reverse, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uid_width_exhaustion_is_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uid_random_metrics_are_unique, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uid_suggest_rename_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uid_cache_names_bounded_in_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_uid_concurrent_assigners_never_split_a_name_or_an_id,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
