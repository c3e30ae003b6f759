/* test_engine_semantics.c - what the embedded engine returns, straight from the rules and examples
 * of docs/storage-contract.md ("What a read returns", "Deletes", "Flush and compaction retention"):
 * versions counted within the time range, strict TTL expiry, MIN_VERSIONS, every delete marker
 * (masking puts written later, revealed older versions, markers newer than the time range),
 * KEEP_DELETED_CELLS, raw scans, and how flushes and compactions change results. Each
 * scenario is a list of steps on a fresh table and one read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/clock.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"

/* the scenario table leaves unused step fields out */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

struct step {
    char op; /* p put, d delete version, l delete latest, c delete column, f delete family,
              * v delete family version, r delete row, F flush, M major compact */
    const char *qual;
    int64_t ts;
    const char *val;
};

struct scenario {
    const char *name;
    uint32_t versions, min_versions;
    int64_t ttl_s;
    enum wc_keep_deleted kdc;
    int64_t now;
    struct step steps[16];
    uint32_t read_versions;
    int64_t tmin, tmax; /* tmax 0 = open */
    bool raw;
    const char *want;
};

#define END                                                                                        \
    {                                                                                              \
        0, NULL, 0, NULL                                                                           \
    }
#define FOREVER WC_TTL_FOREVER

static const struct scenario scenarios[] = {
    {"versions are counted within the time range (\"What a read returns\")",
     1,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 100, "a"}, {'p', "q", 200, "b"}, {'p', "q", 300, "c"}, END},
     1,
     0,
     300,
     false,
     "q@200=b"},
    {"a time-range read before a flush sees versions beyond VERSIONS",
     1,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "a"}, {'p', "q", 2, "b"}, END},
     1,
     0,
     2,
     false,
     "q@1=a"},
    {"after a flush versions beyond VERSIONS are gone (retention)",
     1,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "a"}, {'p', "q", 2, "b"}, {'F'}, END},
     1,
     0,
     2,
     false,
     ""},
    {"expiry is strict: ts == now - TTL is live",
     5,
     0,
     10,
     0,
     1000000,
     {{'p', "a", 990000, "live"}, {'p', "b", 989999, "dead"}, END},
     5,
     0,
     0,
     false,
     "a@990000=live"},
    {"future timestamps never expire early",
     5,
     0,
     10,
     0,
     1000000,
     {{'p', "a", 5000000, "f"}, END},
     1,
     0,
     0,
     false,
     "a@5000000=f"},
    {"MIN_VERSIONS keeps the newest versions however old",
     3,
     2,
     10,
     0,
     100000000,
     {{'p', "q", 100, "a"}, {'p', "q", 200, "b"}, {'p', "q", 300, "c"}, END},
     3,
     0,
     0,
     false,
     "q@300=c q@200=b"},
    {"expired versions beyond MIN_VERSIONS are hidden",
     3,
     1,
     10,
     0,
     1000000,
     {{'p', "q", 500, "old"}, {'p', "q", 400, "older"}, {'p', "q", 995000, "live"}, END},
     3,
     0,
     0,
     false,
     "q@995000=live"},
    {"MIN_VERSIONS survives a flush",
     3,
     1,
     10,
     0,
     100000000,
     {{'p', "q", 100, "a"}, {'p', "q", 200, "b"}, {'F'}, END},
     3,
     0,
     0,
     false,
     "q@200=b"},
    {"deletes and versions: deleting the newest reveals an older version",
     2,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"}, {'p', "q", 2, "2"}, {'p', "q", 3, "3"}, {'d', "q", 3}, END},
     2,
     0,
     0,
     false,
     "q@2=2 q@1=1"},
    {"deletes and versions: flushed before the delete, version 1 is gone",
     2,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"}, {'p', "q", 2, "2"}, {'p', "q", 3, "3"}, {'F'}, {'d', "q", 3}, END},
     2,
     0,
     0,
     false,
     "q@2=2"},
    {"deletes mask puts written later",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'c', "q", 10}, {'p', "q", 5, "late"}, {'p', "q", 10, "late2"}, {'p', "q", 11, "newer"}, END},
     3,
     0,
     0,
     false,
     "q@11=newer"},
    {"deletes mask puts written later, across a flush",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'c', "q", 10}, {'F'}, {'p', "q", 5, "late"}, {'F'}, END},
     3,
     0,
     0,
     false,
     ""},
    {"a major compaction removes the marker: a later put is visible",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'c', "q", 10}, {'p', "q", 5, "masked"}, {'F'}, {'M'}, {'p', "q", 5, "after"}, END},
     3,
     0,
     0,
     false,
     "q@5=after"},
    {"a delete version masks exactly its timestamp",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"}, {'p', "q", 2, "2"}, {'p', "q", 3, "3"}, {'d', "q", 2}, END},
     3,
     0,
     0,
     false,
     "q@3=3 q@1=1"},
    {"a delete version masks a put at that timestamp written later",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "a"}, {'d', "q", 5}, {'p', "q", 5, "b"}, END},
     3,
     0,
     0,
     false,
     ""},
    {"delete latest hits the newest visible version only",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"}, {'p', "q", 2, "2"}, {'l', "q"}, END},
     3,
     0,
     0,
     false,
     "q@1=1"},
    {"delete latest twice walks down the versions",
     3,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"}, {'p', "q", 2, "2"}, {'p', "q", 3, "3"}, {'l', "q"}, {'l', "q"}, END},
     3,
     0,
     0,
     false,
     "q@1=1"},
    {"a delete column masks every version <= ts, never newer",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 1, "1"},
      {'p', "q", 2, "2"},
      {'p', "q", 3, "3"},
      {'c', "q", 2},
      {'p', "r", 1, "r"},
      END},
     5,
     0,
     0,
     false,
     "q@3=3 r@1=r"},
    {"a delete family masks all columns <= ts",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "", 4, "e"},
      {'p', "a", 5, "a5"},
      {'p', "b", 3, "b3"},
      {'p', "b", 6, "b6"},
      {'f', NULL, 5},
      END},
     5,
     0,
     0,
     false,
     "b@6=b6"},
    {"empty-qualifier puts newer than a family delete survive",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'f', NULL, 5}, {'p', "", 6, "e6"}, {'p', "", 5, "e5"}, END},
     5,
     0,
     0,
     false,
     "@6=e6"},
    {"a delete family version masks one timestamp of every column",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "a", 5, "a5"},
      {'p', "a", 6, "a6"},
      {'p', "b", 5, "b5"},
      {'p', "b", 4, "b4"},
      {'v', NULL, 5},
      END},
     5,
     0,
     0,
     false,
     "a@6=a6 b@4=b4"},
    {"a row delete masks every family <= ts",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "a", 5, "a5"}, {'p', "b", 9, "b9"}, {'r', NULL, 8}, END},
     5,
     0,
     0,
     false,
     "b@9=b9"},
    {"markers newer than the time range still apply",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, END},
     5,
     0,
     8,
     false,
     ""},
    {"KEEP_DELETED_CELLS: a time range ending at the marker sees deleted cells",
     5,
     0,
     FOREVER,
     WC_KEEP_DELETED_TRUE,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, END},
     5,
     0,
     10,
     false,
     "q@5=5"},
    {"KEEP_DELETED_CELLS: a full read applies the marker",
     5,
     0,
     FOREVER,
     WC_KEEP_DELETED_TRUE,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, END},
     5,
     0,
     0,
     false,
     ""},
    {"KEEP_DELETED_CELLS: a major compaction keeps deleted cells",
     5,
     0,
     FOREVER,
     WC_KEEP_DELETED_TRUE,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, {'F'}, {'M'}, END},
     5,
     0,
     10,
     false,
     "q@5=5"},
    {"KEEP_DELETED_CELLS TTL: a live marker behaves as TRUE",
     3,
     1,
     10,
     WC_KEEP_DELETED_TTL,
     1000000,
     {{'p', "q", 995000, "v"}, {'c', "q", 996000}, END},
     3,
     0,
     996000,
     false,
     "q@995000=v"},
    {"KEEP_DELETED_CELLS TTL: an expired marker behaves as FALSE",
     3,
     1,
     10,
     WC_KEEP_DELETED_TTL,
     1000000,
     {{'p', "q", 500, "v"}, {'c', "q", 600}, END},
     3,
     0,
     600,
     false,
     ""},
    {"KEEP_DELETED_CELLS: a major compaction drops a marker with nothing older",
     5,
     0,
     FOREVER,
     WC_KEEP_DELETED_TRUE,
     0,
     {{'p', "q", 20, "20"}, {'c', "q", 10}, {'d', "r", 7}, {'F'}, {'M'}, END},
     5,
     0,
     0,
     true,
     "q@20=20"},
    {"KEEP_DELETED_CELLS: a major compaction keeps a marker over deleted cells",
     5,
     0,
     FOREVER,
     WC_KEEP_DELETED_TRUE,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, {'f', NULL, 3}, {'F'}, {'M'}, END},
     5,
     0,
     0,
     true,
     "q@10(c) q@5=5"},
    {"raw reads return markers and masked cells",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, {'p', "q", 12, "12"}, END},
     5,
     0,
     0,
     true,
     "q@12=12 q@10(c) q@5=5"},
    {"a flush keeps markers, so masked puts stay masked",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "5"}, {'c', "q", 10}, {'F'}, END},
     5,
     0,
     0,
     true,
     "q@10(c)"},
    {"a flush keeps markers for puts in older files",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "5"}, {'F'}, {'c', "q", 10}, {'F'}, END},
     5,
     0,
     0,
     false,
     ""},
    {"a major compaction drops markers and what they mask",
     5,
     0,
     FOREVER,
     0,
     0,
     {{'p', "q", 5, "5"}, {'F'}, {'c', "q", 10}, {'p', "q", 11, "11"}, {'F'}, {'M'}, END},
     5,
     0,
     0,
     true,
     "q@11=11"},
    {"expired cells are dropped by a major compaction",
     5,
     0,
     10,
     0,
     1000000,
     {{'p', "q", 5, "old"}, {'p', "q", 995000, "new"}, {'F'}, {'M'}, END},
     5,
     0,
     0,
     true,
     "q@995000=new"},
};

static char *g_dir;
static struct wc_store *g_store;

static int setup(void **state)
{
    (void)state;
    g_dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = g_dir;
    o.block_cache_bytes = 1 << 20;
    struct ct_err err;
    if (wc_open(&o, &g_store, &err) != CT_OK) {
        fprintf(stderr, "open: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    wc_close(g_store);
    ctest_rmdir(g_dir);
    unsetenv("CTSDB_NOW_MS");
    clock_reload();
    return 0;
}

static void fmt(char *out, size_t size, const struct wc_row *r)
{
    for (size_t i = 0; i < r->ncells; i++) {
        const struct wc_cell *c = &r->cells[i];
        size_t l = strlen(out);
        if (c->type == WC_TYPE_PUT)
            snprintf(out + l, size - l, "%s%.*s@%lld=%.*s", l ? " " : "", (int)c->qualifier.len,
                     (const char *)c->qualifier.data, (long long)c->ts_ms, (int)c->value.len,
                     (const char *)c->value.data);
        else
            snprintf(out + l, size - l, "%s%.*s@%lld(%c)", l ? " " : "", (int)c->qualifier.len,
                     (const char *)c->qualifier.data, (long long)c->ts_ms,
                     c->type == WC_TYPE_DELETE_COLUMN   ? 'c'
                     : c->type == WC_TYPE_DELETE        ? 'd'
                     : c->type == WC_TYPE_DELETE_FAMILY ? 'f'
                                                        : 'v');
    }
}

static void run_scenario(size_t idx, const struct scenario *sc, bool reversed)
{
    struct ct_err err;
    char name[64], now[32];
    snprintf(name, sizeof(name), "sem%zu%s", idx, reversed ? "r" : "");
    snprintf(now, sizeof(now), "%lld", (long long)(sc->now ? sc->now : 1000000000000LL));
    setenv("CTSDB_NOW_MS", now, 1);
    clock_reload();
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.versions = sc->versions;
    fd.min_versions = sc->min_versions;
    fd.ttl_s = sc->ttl_s;
    fd.keep_deleted = sc->kdc;
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false; /* only the scenario's own steps compact */
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, name, &t, &err), CT_OK);
    /* neighbour rows so that a reversed scan has to walk past them */
    const char *rows[] = {"a", "row", "z"};
    for (size_t k = 0; k < 3; k += 2) {
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("x"), wc_bytes_str("n"),
                                1};
        struct wc_row_mutation rm = {wc_bytes_str(rows[k]), &m, 1};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
    }
    for (const struct step *s = sc->steps; s->op; s++) {
        if (s->op == 'F') {
            assert_int_equal(wc_table_flush(g_store, name, &err), CT_OK);
            continue;
        }
        if (s->op == 'M') {
            assert_int_equal(wc_table_compact(g_store, name, NULL, true, &err), CT_OK);
            continue;
        }
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str(s->qual ? s->qual : ""),
                                wc_bytes_str(s->val ? s->val : ""), s->ts};
        switch (s->op) {
        case 'd':
            m.op = WC_OP_DELETE_VERSION;
            break;
        case 'l':
            m.op = WC_OP_DELETE_VERSION;
            m.ts_ms = WC_TS_LATEST;
            break;
        case 'c':
            m.op = WC_OP_DELETE_COLUMN;
            break;
        case 'f':
            m.op = WC_OP_DELETE_FAMILY;
            break;
        case 'v':
            m.op = WC_OP_DELETE_FAMILY_VERSION;
            break;
        case 'r':
            m.op = WC_OP_DELETE_ROW;
            break;
        }
        struct wc_row_mutation rm = {wc_bytes_str("row"), &m, 1};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = sc->read_versions;
    o.tmin_ms = sc->tmin;
    if (sc->tmax)
        o.tmax_ms = sc->tmax;
    o.raw = sc->raw;
    o.reversed = reversed;
    if (reversed) {
        o.start_row = wc_bytes_str("row");
        o.stop_row = wc_bytes_str("a");
    } else {
        o.start_row = wc_bytes_str("row");
        o.stop_row = wc_bytes_str("row\x01");
    }
    struct wc_scanner *scn;
    assert_int_equal(wc_scanner_open(t, &o, &scn, &err), CT_OK);
    char got[1024] = "";
    struct wc_row r;
    int rc;
    while ((rc = wc_scanner_next(scn, &r, &err)) == CT_OK)
        fmt(got, sizeof(got), &r);
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(scn);
    if (strcmp(got, sc->want) != 0)
        fail_msg("scenario \"%s\"%s: got \"%s\", want \"%s\"", sc->name,
                 reversed ? " (reversed)" : "", got, sc->want);
    wc_table_close(t);
}

static void test_scenarios_forward(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        run_scenario(i, &scenarios[i], false);
}

static void test_scenarios_reversed(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        run_scenario(i, &scenarios[i], true);
}

/* Reads merge memstores and several files in both directions and agree with a model. */
static void test_merging_memstore_and_files_both_directions(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd[2];
    wc_family_desc_init(&fd[0], "a");
    wc_family_desc_init(&fd[1], "b");
    fd[0].versions = 3;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "merge");
    d.families = fd;
    d.nfamilies = 2;
    d.compaction_enabled = false;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "merge", &t, &err), CT_OK);
    /* 200 rows, written in 4 rounds with a flush between: each row's versions are spread over
     * three files and the memstore */
    for (int round = 0; round < 4; round++) {
        for (int i = round; i < 200; i += 1 + round) {
            char row[16], val[16];
            snprintf(row, sizeof(row), "r%03d", i);
            snprintf(val, sizeof(val), "v%d", round);
            struct wc_mutation m[2] = {
                {WC_OP_PUT, wc_bytes_str("a"), wc_bytes_str("q"), wc_bytes_str(val), 10 + round},
                {WC_OP_PUT, wc_bytes_str("b"), wc_bytes_str("x"), wc_bytes_str(val), 10},
            };
            struct wc_row_mutation rm = {wc_bytes_str(row), m, 2};
            assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
        }
        if (round < 3)
            assert_int_equal(wc_table_flush(g_store, "merge", &err), CT_OK);
    }
    for (int rev = 0; rev < 2; rev++) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.reversed = rev;
        o.max_versions = 3;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row r;
        int n = 0, prev = rev ? 200 : -1;
        while (wc_scanner_next(sc, &r, &err) == CT_OK) {
            int i = atoi((const char *)r.key.data + 1);
            assert_true(rev ? i < prev : i > prev);
            prev = i;
            /* expected versions of a:q: the rounds that wrote row i, newest first, at most 3 */
            int want[4], nw = 0;
            for (int round = 3; round >= 0; round--)
                if (i >= round && (i - round) % (1 + round) == 0 && nw < 3)
                    want[nw++] = round;
            assert_int_equal(r.ncells, (size_t)nw + 1);
            for (int k = 0; k < nw; k++) {
                assert_memory_equal(r.cells[k].family.data, "a", 1);
                assert_int_equal(r.cells[k].ts_ms, 10 + want[k]);
            }
            /* b:x written at the same ts each round: only the newest write shows */
            char val[16];
            snprintf(val, sizeof(val), "v%d", want[0]);
            assert_memory_equal(r.cells[nw].family.data, "b", 1);
            assert_int_equal(r.cells[nw].value.len, strlen(val));
            assert_memory_equal(r.cells[nw].value.data, val, strlen(val));
            n++;
        }
        wc_scanner_close(sc);
        assert_int_equal(n, 200);
    }
    wc_table_close(t);
}

/* A scanner keeps its snapshot while writes, flushes and compactions go on. */
static void test_scanner_sees_a_fixed_snapshot(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "snap");
    d.families = &fd;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "snap", &t, &err), CT_OK);
    for (int i = 0; i < 50; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%02d", i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                wc_bytes_str("old"), 1};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    for (int i = 0; i < 50; i++) {
        char row[16];
        snprintf(row, sizeof(row), "r%02d", i);
        struct wc_mutation m[2] = {
            {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("new"), 2},
            {WC_OP_DELETE_ROW, wc_bytes_str(""), wc_bytes_str(""), wc_bytes_str(""), 1},
        };
        struct wc_row_mutation rm = {wc_bytes_str(row), m, 2};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SKIP_WAL, &err), CT_OK);
        if (i == 25) {
            assert_int_equal(wc_table_flush(g_store, "snap", &err), CT_OK);
            assert_int_equal(wc_table_compact(g_store, "snap", NULL, true, &err), CT_OK);
        }
    }
    struct wc_row r;
    int n = 0;
    while (wc_scanner_next(sc, &r, &err) == CT_OK) {
        assert_int_equal(r.ncells, 1);
        assert_memory_equal(r.cells[0].value.data, "old", 3);
        n++;
    }
    assert_int_equal(n, 50);
    wc_scanner_close(sc);
    wc_table_close(t);
}

/* With ROWCOL blooms a Get of one column still sees a family marker in another file. */
static void test_rowcol_bloom_never_hides_family_markers(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.bloom = WC_BLOOM_ROWCOL;
    struct wc_table_desc d;
    wc_table_desc_init(&d, "rowcol");
    d.families = &fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "rowcol", &t, &err), CT_OK);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"), 5};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    assert_int_equal(wc_table_flush(g_store, "rowcol", &err), CT_OK);
    m.op = WC_OP_DELETE_FAMILY;
    m.ts_ms = 10;
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    assert_int_equal(wc_table_flush(g_store, "rowcol", &err), CT_OK);
    struct wc_column col = {wc_bytes_str("f"), wc_bytes_str("q"), true};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_result res;
    assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 0);
    wc_result_release(&res);
    /* other rows are still found through the bloom filter */
    m.op = WC_OP_PUT;
    m.ts_ms = 20;
    assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    assert_int_equal(wc_table_flush(g_store, "rowcol", &err), CT_OK);
    assert_int_equal(wc_get(t, wc_bytes_str("r"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    assert_int_equal(res.row.cells[0].ts_ms, 20);
    wc_result_release(&res);
    wc_table_close(t);
}

/* Row keys up to the 32767-byte limit, in memstores and files, both directions. */
static void test_long_row_keys(void **state)
{
    (void)state;
    struct ct_err err;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "longrows");
    d.families = &fd;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(g_store, &d, NULL, 0, &err), CT_OK);
    struct wc_table *t;
    assert_int_equal(wc_table_open(g_store, "longrows", &t, &err), CT_OK);
    static uint8_t rows[3][WC_MAX_ROW_BYTES];
    size_t lens[3] = {200, 5000, WC_MAX_ROW_BYTES};
    for (int i = 0; i < 3; i++) {
        memset(rows[i], 'a' + i, lens[i]);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"),
                                1};
        struct wc_row_mutation rm = {wc_bytes_of(rows[i], lens[i]), &m, 1};
        assert_int_equal(wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
        if (i == 1)
            assert_int_equal(wc_table_flush(g_store, "longrows", &err), CT_OK);
    }
    for (int rev = 0; rev < 2; rev++) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.reversed = rev;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row r;
        for (int k = 0; k < 3; k++) {
            int i = rev ? 2 - k : k;
            assert_int_equal(wc_scanner_next(sc, &r, &err), CT_OK);
            assert_int_equal(r.key.len, lens[i]);
            assert_memory_equal(r.key.data, rows[i], lens[i]);
            assert_int_equal(r.cells[0].row.len, lens[i]);
        }
        assert_int_equal(wc_scanner_next(sc, &r, &err), CT_NOTFOUND);
        wc_scanner_close(sc);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result res;
    assert_int_equal(wc_get(t, wc_bytes_of(rows[2], lens[2]), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    wc_result_release(&res);
    wc_table_close(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios_forward),
        cmocka_unit_test(test_scenarios_reversed),
        cmocka_unit_test(test_merging_memstore_and_files_both_directions),
        cmocka_unit_test(test_scanner_sees_a_fixed_snapshot),
        cmocka_unit_test(test_rowcol_bloom_never_hides_family_markers),
        cmocka_unit_test(test_long_row_keys),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
