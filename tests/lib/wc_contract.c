/* wc_contract.c - the backend-neutral contract suite (see wc_contract.h). Expected results
 * are written as strings: a row is "row: f:q@ts=value ...", rows joined by " | ", so every
 * assertion shows the whole answer on failure. */
#include "tests/lib/wc_contract.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/clock.h"
#include "storage/coding.h"
#include "tests/lib/ctest.h"

static struct {
    wc_contract_open_fn open;
    void *arg;
    unsigned counter;
} g;

struct cctx {
    struct wc_store *s;
    struct wc_table *t;
    char name[64];
    char names[4][96]; /* extra tables to drop */
    size_t nnames;
    char saved_now[64];
    bool had_now;
};

/* ---- helpers ------------------------------------------------------------------------------ */

static int cc_setup(void **state)
{
    struct cctx *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    assert_int_equal(g.open(&c->s, g.arg), 0);
    snprintf(c->name, sizeof(c->name), "ctc_%u_%ld", ++g.counter, (long)getpid());
    const char *now = getenv("CTSDB_NOW_MS");
    c->had_now = now != NULL;
    if (now)
        snprintf(c->saved_now, sizeof(c->saved_now), "%s", now);
    *state = c;
    return 0;
}

static void cc_drop(struct wc_store *s, const char *name)
{
    struct ct_err err;
    if (wc_table_exists(s, name, &err) != CT_OK)
        return;
    if (wc_table_disable(s, name, &err) != CT_OK) { /* may already be disabled */
    }
    if (wc_table_drop(s, name, &err) != CT_OK)
        fprintf(stderr, "contract: cannot drop %s: %s\n", name, err.msg);
}

static int cc_teardown(void **state)
{
    struct cctx *c = *state;
    wc_table_close(c->t);
    cc_drop(c->s, c->name);
    for (size_t i = 0; i < c->nnames; i++)
        cc_drop(c->s, c->names[i]);
    wc_close(c->s);
    if (c->had_now)
        setenv("CTSDB_NOW_MS", c->saved_now, 1);
    else
        unsetenv("CTSDB_NOW_MS");
    clock_reload();
    free(c);
    return 0;
}

static void pin_now(int64_t ms)
{
    char b[32];
    snprintf(b, sizeof(b), "%lld", (long long)ms);
    setenv("CTSDB_NOW_MS", b, 1);
    clock_reload();
}

/* Creates c->name with families given as "name[:versions[:min_versions[:ttl_s]]]" and opens
 * it. */
static void mk_table_split(struct cctx *c, const char *const *fams, size_t nf,
                           const char *const *splits, size_t ns)
{
    struct wc_family_desc fd[8];
    assert_true(nf <= 8);
    for (size_t i = 0; i < nf; i++) {
        char name[64];
        unsigned v = 1, mv = 0;
        long long ttl = WC_TTL_FOREVER;
        snprintf(name, sizeof(name), "%s", fams[i]);
        char *colon = strchr(name, ':');
        if (colon) {
            *colon = 0;
            sscanf(colon + 1, "%u:%u:%lld", &v, &mv, &ttl);
        }
        wc_family_desc_init(&fd[i], name);
        fd[i].versions = v;
        fd[i].min_versions = mv;
        fd[i].ttl_s = ttl;
    }
    struct wc_table_desc d;
    wc_table_desc_init(&d, c->name);
    d.families = fd;
    d.nfamilies = nf;
    struct wc_bytes sp[16];
    for (size_t i = 0; i < ns; i++)
        sp[i] = wc_bytes_str(splits[i]);
    struct ct_err err;
    int rc = wc_table_create(c->s, &d, sp, ns, &err);
    if (rc != CT_OK)
        fail_msg("create %s: %s", c->name, err.msg);
    rc = wc_table_open(c->s, c->name, &c->t, &err);
    if (rc != CT_OK)
        fail_msg("open %s: %s", c->name, err.msg);
}

static void mk_table(struct cctx *c, const char *const *fams, size_t nf)
{
    mk_table_split(c, fams, nf, NULL, 0);
}

#define FAMS(...)                                                                                  \
    (const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *)

static void put_ts(struct cctx *c, const char *row, const char *fam, const char *qual,
                   const char *val, int64_t ts)
{
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str(fam), wc_bytes_str(qual), wc_bytes_str(val),
                            ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err;
    int rc = wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err);
    if (rc != CT_OK)
        fail_msg("put %s %s:%s: %s", row, fam, qual, err.msg);
}

static void del(struct cctx *c, const char *row, enum wc_mutation_op op, const char *fam,
                const char *qual, int64_t ts)
{
    struct wc_mutation m = {op, wc_bytes_str(fam ? fam : ""), wc_bytes_str(qual ? qual : ""),
                            wc_bytes_of(NULL, 0), ts};
    struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
    struct ct_err err;
    int rc = wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err);
    if (rc != CT_OK)
        fail_msg("delete %s: %s", row, err.msg);
}

static void append_bytes(char *out, size_t size, struct wc_bytes b)
{
    size_t l = strlen(out);
    for (size_t i = 0; i < b.len && l + 5 < size; i++) {
        uint8_t ch = b.data[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out[l++] = (char)ch;
        else
            l += (size_t)snprintf(out + l, size - l, "\\x%02X", ch);
    }
    out[l] = 0;
}

static void fmt_row(char *out, size_t size, const struct wc_row *r)
{
    if (*out)
        strncat(out, " | ", size - strlen(out) - 1);
    append_bytes(out, size, r->key);
    strncat(out, ":", size - strlen(out) - 1);
    for (size_t i = 0; i < r->ncells; i++) {
        const struct wc_cell *c = &r->cells[i];
        strncat(out, " ", size - strlen(out) - 1);
        append_bytes(out, size, c->family);
        strncat(out, ":", size - strlen(out) - 1);
        append_bytes(out, size, c->qualifier);
        size_t l = strlen(out);
        snprintf(out + l, size - l, "@%lld=", (long long)c->ts_ms);
        append_bytes(out, size, c->value);
    }
}

static char g_out[8192];

/* Appends r's key to out, after a comma unless out is empty. */
static void fmt_key(char *out, size_t size, const struct wc_row *r)
{
    if (*out)
        strncat(out, ",", size - strlen(out) - 1);
    append_bytes(out, size, r->key);
}

/* Scans with o, rendering each row into g_out with fmt; returns g_out. */
static const char *scan_render(struct cctx *c, const struct wc_scan_options *o,
                               void (*fmt)(char *out, size_t size, const struct wc_row *r))
{
    struct wc_scanner *sc;
    struct ct_err err;
    g_out[0] = 0;
    int rc = wc_scanner_open(c->t, o, &sc, &err);
    if (rc != CT_OK)
        fail_msg("scanner open: %s", err.msg);
    struct wc_row r;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK)
        fmt(g_out, sizeof(g_out), &r);
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND)
        fail_msg("scanner next: %s", err.msg);
    return g_out;
}

/* Scans with o; returns the formatted rows (a static buffer). */
static const char *scan_str(struct cctx *c, const struct wc_scan_options *o)
{
    return scan_render(c, o, fmt_row);
}

/* Row keys only: "a,b,c". */
static const char *scan_keys(struct cctx *c, const struct wc_scan_options *o)
{
    return scan_render(c, o, fmt_key);
}

static const char *get_str(struct cctx *c, const char *row, const struct wc_scan_options *o)
{
    struct wc_scan_options def;
    if (!o) {
        wc_scan_options_init(&def);
        o = &def;
    }
    struct wc_result res;
    struct ct_err err;
    int rc = wc_get(c->t, wc_bytes_str(row), o, &res, &err);
    if (rc != CT_OK)
        fail_msg("get %s: %s", row, err.msg);
    g_out[0] = 0;
    if (res.row.ncells)
        fmt_row(g_out, sizeof(g_out), &res.row);
    wc_result_release(&res);
    return g_out;
}

/* ---- data tests --------------------------------------------------------------------------- */

static void test_put_then_get_returns_cells_in_spec_order(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("g", "f"));
    put_ts(c, "r1", "g", "b", "gb", 10);
    put_ts(c, "r1", "f", "z", "fz", 10);
    put_ts(c, "r1", "f", "a", "fa", 20);
    put_ts(c, "r1", "f", "", "empty", 5);
    assert_string_equal(get_str(c, "r1", NULL), "r1: f:@5=empty f:a@20=fa f:z@10=fz g:b@10=gb");
    assert_string_equal(get_str(c, "r2", NULL), "");
}

static void test_put_without_timestamp_uses_pinned_clock(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    pin_now(1700000000123LL);
    put_ts(c, "r", "f", "q", "v", WC_TS_LATEST);
    assert_string_equal(get_str(c, "r", NULL), "r: f:q@1700000000123=v");
}

static void test_binary_keys_and_values_round_trip(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    uint8_t row[] = {0, 0xff, 'r'}, qual[] = {0x80, 0}, val[] = {0, 1, 2, 0xfe};
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_of(qual, 2), wc_bytes_of(val, 4),
                            7};
    struct wc_row_mutation rm = {wc_bytes_of(row, 3), &m, 1};
    struct ct_err err;
    assert_int_equal(wc_mutate_row(c->t, &rm, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(scan_str(c, &o), "\\x00\\xFFr: f:\\x80\\x00@7=\\x00\\x01\\x02\\xFE");
}

static void test_unknown_family_fails_and_writes_nothing(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    struct wc_mutation m[2] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"), 1},
        {WC_OP_PUT, wc_bytes_str("nope"), wc_bytes_str("q"), wc_bytes_str("v"), 1},
    };
    struct wc_row_mutation rm = {wc_bytes_str("r"), m, 2};
    struct ct_err err;
    assert_true(wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err) < 0);
    assert_string_equal(get_str(c, "r", NULL), "");
    /* reading an unknown family is an error too */
    struct wc_column col = {wc_bytes_str("nope"), wc_bytes_of(NULL, 0), false};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.columns = &col;
    o.ncolumns = 1;
    struct wc_scanner *sc;
    assert_true(wc_scanner_open(c->t, &o, &sc, &err) < 0);
}

static void fill_rows(struct cctx *c, const char *rows)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", rows);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        put_ts(c, tok, "f", "q", tok, 1);
}

static void test_scan_forward_and_reversed_reverse_only_rows(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b,c,d");
    put_ts(c, "b", "f", "a", "1", 2);
    put_ts(c, "b", "f", "z", "2", 3);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(scan_keys(c, &o), "a,b,c,d");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "d,c,b,a");
    o.start_row = o.stop_row = wc_bytes_str("b");
    o.stop_row = wc_bytes_str("a");
    /* cells inside a row keep forward order in a reversed scan */
    assert_string_equal(scan_str(c, &o), "b: f:a@2=1 f:q@1=b f:z@3=2");
}

static void test_scan_bounds_both_directions(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b,c,d,e");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_str("b");
    o.stop_row = wc_bytes_str("d");
    assert_string_equal(scan_keys(c, &o), "b,c");
    o.stop_row = wc_bytes_str("b");
    assert_string_equal(scan_keys(c, &o), ""); /* [k, k) is empty */
    o.start_row = wc_bytes_str("bb");
    o.stop_row = wc_bytes_of(NULL, 0);
    assert_string_equal(scan_keys(c, &o), "c,d,e");
    o.reversed = true;
    o.start_row = wc_bytes_str("d");
    o.stop_row = wc_bytes_str("b");
    assert_string_equal(scan_keys(c, &o), "d,c"); /* start inclusive, stop exclusive */
    o.start_row = wc_bytes_str("cc");             /* missing start: largest row below it */
    o.stop_row = wc_bytes_of(NULL, 0);
    assert_string_equal(scan_keys(c, &o), "c,b,a");
    o.start_row = wc_bytes_str("a");
    o.stop_row = wc_bytes_str("c");
    assert_string_equal(scan_keys(c, &o), ""); /* reversed with start < stop */
    o.start_row = wc_bytes_of(NULL, 0);
    o.stop_row = wc_bytes_str("c");
    assert_string_equal(scan_keys(c, &o), "e,d");
}

static void test_row_prefix_in_both_directions_and_with_bounds(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,ab,abc,abd,ac,b");
    put_ts(c, "a\xff", "f", "q", "x", 1);
    put_ts(c, "a\xff\xff", "f", "q", "x", 1);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.row_prefix = wc_bytes_str("ab");
    assert_string_equal(scan_keys(c, &o), "ab,abc,abd");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "abd,abc,ab");
    o.reversed = false;
    o.start_row = wc_bytes_str("abc");
    assert_string_equal(scan_keys(c, &o), "abc,abd");
    o.start_row = wc_bytes_of(NULL, 0);
    o.row_prefix = wc_bytes_str("a\xff");
    assert_string_equal(scan_keys(c, &o), "a\\xFF,a\\xFF\\xFF");
}

static void test_versions_are_capped_by_family_and_request(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:3"));
    for (int ts = 1; ts <= 5; ts++) {
        char v[16];
        snprintf(v, sizeof(v), "v%d", ts);
        put_ts(c, "r", "f", "q", v, ts);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(get_str(c, "r", &o), "r: f:q@5=v5");
    o.max_versions = 2;
    assert_string_equal(get_str(c, "r", &o), "r: f:q@5=v5 f:q@4=v4");
    o.max_versions = 10;
    assert_string_equal(get_str(c, "r", &o), "r: f:q@5=v5 f:q@4=v4 f:q@3=v3");
}

static void test_overwrite_at_same_timestamp_keeps_newest_write(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:3"));
    put_ts(c, "r", "f", "q", "old", 7);
    put_ts(c, "r", "f", "q", "new", 7);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 3;
    assert_string_equal(get_str(c, "r", &o), "r: f:q@7=new");
}

static void test_time_range_counts_versions_within_range(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5"));
    put_ts(c, "r", "f", "q", "a", 100);
    put_ts(c, "r", "f", "q", "b", 200);
    put_ts(c, "r", "f", "q", "c", 300);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.tmin_ms = 0;
    o.tmax_ms = 300; /* [0, 300): newest below 300 */
    assert_string_equal(get_str(c, "r", &o), "r: f:q@200=b");
    o.tmin_ms = 200;
    o.tmax_ms = 201; /* TIMESTAMP => 200 */
    assert_string_equal(get_str(c, "r", &o), "r: f:q@200=b");
    o.tmin_ms = 150;
    o.tmax_ms = WC_TS_LATEST;
    o.max_versions = 5;
    assert_string_equal(get_str(c, "r", &o), "r: f:q@300=c f:q@200=b");
    o.tmin_ms = 301;
    assert_string_equal(get_str(c, "r", &o), "");
}

static void test_ttl_expiry_is_strict_at_the_boundary(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5:0:10"));
    int64_t now = 1000000;
    pin_now(now);
    put_ts(c, "r", "f", "live", "x", now - 10000);    /* == now - TTL: still live */
    put_ts(c, "r", "f", "dead", "y", now - 10001);    /* one ms older: expired */
    put_ts(c, "r", "f", "future", "z", now + 500000); /* never expires early */
    assert_string_equal(get_str(c, "r", NULL), "r: f:future@1500000=z f:live@990000=x");
    pin_now(now + 1);
    assert_string_equal(get_str(c, "r", NULL), "r: f:future@1500000=z");
}

static void test_columns_selection_and_qualifier_filters(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f", "g"));
    const char *qs[] = {"a", "ab", "abc", "b", "c"};
    for (size_t i = 0; i < 5; i++)
        put_ts(c, "r", "f", qs[i], qs[i], 1);
    put_ts(c, "r", "g", "x", "gx", 1);
    struct wc_column cols[3] = {
        {wc_bytes_str("f"), wc_bytes_str("b"), true},
        {wc_bytes_str("f"), wc_bytes_str("a"), true},
        {wc_bytes_str("g"), wc_bytes_of(NULL, 0), false},
    };
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.columns = cols;
    o.ncolumns = 3;
    assert_string_equal(get_str(c, "r", &o), "r: f:a@1=a f:b@1=b g:x@1=gx");
    o.ncolumns = 0;
    o.columns = NULL;
    o.qualifier_prefix = wc_bytes_str("ab");
    assert_string_equal(get_str(c, "r", &o), "r: f:ab@1=ab f:abc@1=abc");
    o.qualifier_prefix = wc_bytes_of(NULL, 0);
    o.has_qualifier_range = true;
    o.qualifier_min = wc_bytes_str("ab");
    o.qualifier_min_inclusive = true;
    o.qualifier_max = wc_bytes_str("c");
    o.qualifier_max_inclusive = false;
    assert_string_equal(get_str(c, "r", &o), "r: f:ab@1=ab f:abc@1=abc f:b@1=b");
    o.qualifier_min_inclusive = false;
    o.qualifier_max_inclusive = true;
    assert_string_equal(get_str(c, "r", &o), "r: f:abc@1=abc f:b@1=b f:c@1=c");
}

struct rf_arg {
    int calls;
};

static enum wc_row_decision rf_skip_b_stop_d(void *arg, const uint8_t *row, size_t len)
{
    struct rf_arg *a = arg;
    a->calls++;
    if (len == 1 && row[0] == 'b')
        return WC_ROW_SKIP;
    if (len == 1 && row[0] == 'd')
        return WC_ROW_STOP;
    return WC_ROW_INCLUDE;
}

static void test_row_filter_skips_and_stops(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b,c,d,e");
    struct rf_arg a = {0};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.row_filter = rf_skip_b_stop_d;
    o.row_filter_arg = &a;
    assert_string_equal(scan_keys(c, &o), "a,c");
    assert_int_equal(a.calls, 4);
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "e");
}

/* The cell filter of the test below: keeps the cells whose value starts with 'k', counts every
 * call and checks each cell's row key against the row the scan is on. */
struct cf_arg {
    int calls;
    char rows[64];
};

static bool cf_keep_k(void *arg, const struct wc_cell *cell)
{
    struct cf_arg *a = arg;
    a->calls++;
    size_t n = strlen(a->rows);
    if (n + 2 < sizeof(a->rows) && (n == 0 || a->rows[n - 1] != (char)cell->row.data[0])) {
        a->rows[n] = (char)cell->row.data[0]; /* rows seen, in order, once each */
        a->rows[n + 1] = 0;
    }
    return cell->value.len > 0 && cell->value.data[0] == 'k';
}

/* A cell filter sees every cell the read would return (after versions and the time range), in
 * order, and only the cells it keeps come back; a row left with none is not returned and not
 * counted by limit_rows; gets honour it too. Rows of 40 cells, in a flushed file where the
 * backend has one and in memory, so that the engine's run-of-puts path is filtered too. */
static void test_cell_filter_keeps_and_leaves_out_cells(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:3"));
    /* rows a, c: every 3rd cell kept; row b: none kept; row d: a second version of q00 (kept
     * only as the newest) */
    for (int r = 0; r < 3; r++)
        for (int i = 0; i < 40; i++) {
            char row[2] = {(char)("abc"[r]), 0}, q[16], v[16];
            snprintf(q, sizeof(q), "q%02d", i);
            snprintf(v, sizeof(v), "%c%d", r != 1 && i % 3 == 0 ? 'k' : 'x', i);
            put_ts(c, row, "f", q, v, 5);
        }
    struct ct_err err;
    assert_int_equal(wc_table_flush(c->s, c->name, &err), CT_OK);
    put_ts(c, "d", "f", "q00", "kold", 1);
    put_ts(c, "d", "f", "q00", "xnew", 2);
    put_ts(c, "d", "f", "q01", "knew", 2);
    struct cf_arg a = {0};
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.cell_filter = cf_keep_k;
    o.cell_filter_arg = &a;
    const char *want = "a: f:q00@5=k0 f:q03@5=k3 f:q06@5=k6 f:q09@5=k9 f:q12@5=k12 f:q15@5=k15 "
                       "f:q18@5=k18 f:q21@5=k21 f:q24@5=k24 f:q27@5=k27 f:q30@5=k30 f:q33@5=k33 "
                       "f:q36@5=k36 f:q39@5=k39";
    const char *wantc = "c: f:q00@5=k0 f:q03@5=k3 f:q06@5=k6 f:q09@5=k9 f:q12@5=k12 "
                        "f:q15@5=k15 f:q18@5=k18 f:q21@5=k21 f:q24@5=k24 f:q27@5=k27 "
                        "f:q30@5=k30 f:q33@5=k33 f:q36@5=k36 f:q39@5=k39";
    char both[2048];
    snprintf(both, sizeof(both), "%s | %s | d: f:q01@2=knew", want, wantc);
    assert_string_equal(scan_str(c, &o), both);
    assert_int_equal(a.calls, 40 * 3 + 2); /* d's older q00 is not a cell the read returns */
    assert_string_equal(a.rows, "abcd");
    a = (struct cf_arg){0};
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "d,c,a");
    assert_string_equal(a.rows, "dcba");
    o.reversed = false;
    o.limit_rows = 2; /* b, left with no cell, does not count */
    assert_string_equal(scan_keys(c, &o), "a,c");
    o.limit_rows = 0;
    o.max_versions = 2; /* now the older q00 of d is one the read returns: kept */
    assert_string_equal(get_str(c, "d", &o), "d: f:q00@1=kold f:q01@2=knew");
    o.max_versions = 1;
    assert_string_equal(get_str(c, "b", &o), "");
    assert_string_equal(get_str(c, "a", &o), want);
    o.batch_cells = 5; /* chunks of the kept cells */
    o.start_row = wc_bytes_str("c");
    assert_string_equal(scan_keys(c, &o), "c,c,c,d");
}

static void test_limit_and_batch_cells(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b,c,d");
    put_ts(c, "b", "f", "q2", "x", 1);
    put_ts(c, "b", "f", "q3", "y", 1);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.limit_rows = 2;
    assert_string_equal(scan_keys(c, &o), "a,b");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "d,c");
    o.reversed = false;
    o.limit_rows = 0;
    o.batch_cells = 2;
    o.start_row = wc_bytes_str("b");
    o.stop_row = wc_bytes_str("c");
    /* a wide row comes back as several chunks of the same row */
    assert_string_equal(scan_str(c, &o), "b: f:q@1=b f:q2@1=x | b: f:q3@1=y");
}

static void test_increment_counts_and_rejects_other_widths(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    struct ct_err err;
    int64_t v = 0;
    assert_int_equal(wc_increment(c->t, wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("n"), 5,
                                  WC_DURABILITY_USE_DEFAULT, &v, &err),
                     CT_OK);
    assert_int_equal(v, 5);
    assert_int_equal(wc_increment(c->t, wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("n"), -7,
                                  WC_DURABILITY_USE_DEFAULT, &v, &err),
                     CT_OK);
    assert_int_equal(v, -2);
    struct wc_result res;
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_int_equal(wc_get(c->t, wc_bytes_str("r"), &o, &res, &err), CT_OK);
    assert_int_equal(res.row.ncells, 1);
    assert_int_equal(res.row.cells[0].value.len, 8);
    assert_int_equal((int64_t)coding_get_be64(res.row.cells[0].value.data), -2);
    wc_result_release(&res);
    put_ts(c, "r", "f", "s", "abc", 1);
    assert_int_equal(wc_increment(c->t, wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("s"), 1,
                                  WC_DURABILITY_USE_DEFAULT, &v, &err),
                     CT_EINVAL);
}

static void test_check_and_mutate_applies_only_on_match(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    struct ct_err err;
    bool applied = true;
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("one"),
                            10};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    /* expected absent: applies */
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("f"),
                                         wc_bytes_str("q"), NULL, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_true(applied);
    /* expected absent again: the column now has a value, so not applied */
    m.value = wc_bytes_str("two");
    m.ts_ms = 20;
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("f"),
                                         wc_bytes_str("q"), NULL, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_false(applied);
    struct wc_bytes wrong = wc_bytes_str("uno");
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("f"),
                                         wc_bytes_str("q"), &wrong, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_false(applied);
    struct wc_bytes right = wc_bytes_str("one");
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("f"),
                                         wc_bytes_str("q"), &right, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_true(applied);
    assert_string_equal(get_str(c, "r", NULL), "r: f:q@20=two");
}

static void test_batch_applies_every_row(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f", "g"));
    struct wc_mutation m1[2] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str("1"), 5},
        {WC_OP_PUT, wc_bytes_str("g"), wc_bytes_str("b"), wc_bytes_str("2"), 5},
    };
    struct wc_mutation m2 = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str("3"), 6};
    struct wc_row_mutation rows[3] = {
        {wc_bytes_str("r2"), m1, 2},
        {wc_bytes_str("r1"), &m2, 1},
        {wc_bytes_str("r3"), &m2, 1},
    };
    struct ct_err err;
    assert_int_equal(wc_mutate_batch(c->t, rows, 3, WC_DURABILITY_SYNC_WAL, &err), CT_OK);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(scan_str(c, &o), "r1: f:a@6=3 | r2: f:a@5=1 g:b@5=2 | r3: f:a@6=3");
}

static void test_durability_levels_all_acknowledge(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    enum wc_durability ds[] = {WC_DURABILITY_USE_DEFAULT, WC_DURABILITY_SKIP_WAL,
                               WC_DURABILITY_ASYNC_WAL, WC_DURABILITY_SYNC_WAL,
                               WC_DURABILITY_FSYNC_WAL};
    for (size_t i = 0; i < 5; i++) {
        char row[8];
        snprintf(row, sizeof(row), "r%zu", i);
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"),
                                1};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        struct ct_err err;
        assert_int_equal(wc_mutate_row(c->t, &rm, ds[i], &err), CT_OK);
    }
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(scan_keys(c, &o), "r0,r1,r2,r3,r4");
}

static void test_neutral_deletes(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5", "g"));
    for (int ts = 1; ts <= 3; ts++) {
        put_ts(c, "r", "f", "a", "x", ts);
        put_ts(c, "r", "f", "b", "y", ts);
    }
    put_ts(c, "r", "g", "c", "z", 1);
    put_ts(c, "s", "f", "a", "x", 1);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", 2);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@3=x f:a@1=x f:b@3=y f:b@2=y f:b@1=y g:c@1=z");
    del(c, "r", WC_OP_DELETE_COLUMN, "f", "b", 2);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@3=x f:a@1=x f:b@3=y g:c@1=z");
    del(c, "r", WC_OP_DELETE_FAMILY, "f", NULL, 3);
    assert_string_equal(get_str(c, "r", &o), "r: g:c@1=z");
    del(c, "r", WC_OP_DELETE_ROW, NULL, NULL, 10);
    assert_string_equal(get_str(c, "r", &o), "");
    assert_string_equal(get_str(c, "s", &o), "s: f:a@1=x");
}

static void test_delete_latest_removes_the_newest_visible_version(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5"));
    for (int ts = 1; ts <= 3; ts++)
        put_ts(c, "r", "f", "a", ts == 3 ? "new" : "old", ts);
    put_ts(c, "r", "f", "b", "y", 7);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", WC_TS_LATEST);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@2=old f:a@1=old f:b@7=y");
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", WC_TS_LATEST);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@1=old f:b@7=y");
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", WC_TS_LATEST);
    assert_string_equal(get_str(c, "r", &o), "r: f:b@7=y");
    /* nothing left in the column, and a row that does not exist: no error, nothing changes */
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", WC_TS_LATEST);
    del(c, "nothing", WC_OP_DELETE_VERSION, "f", "a", WC_TS_LATEST);
    assert_string_equal(get_str(c, "r", &o), "r: f:b@7=y");
    assert_string_equal(get_str(c, "nothing", &o), "");
}

static void test_delete_one_version_with_a_timestamp_removes_exactly_it(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5"));
    for (int ts = 1000; ts <= 1002; ts++)
        put_ts(c, "r", "f", "a", "x", ts);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    /* exactly 1001 ms: neither neighbour one millisecond away */
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", 1001);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@1002=x f:a@1000=x");
    del(c, "r", WC_OP_DELETE_VERSION, "f", "a", 999); /* nothing there */
    assert_string_equal(get_str(c, "r", &o), "r: f:a@1002=x f:a@1000=x");
}

static void test_delete_family_version_removes_every_column_at_exactly_ts(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5", "g"));
    for (int ts = 1; ts <= 3; ts++)
        put_ts(c, "r", "f", "a", "x", ts);
    put_ts(c, "r", "f", "b", "y", 2);
    put_ts(c, "r", "f", "", "e", 2); /* the empty qualifier */
    put_ts(c, "r", "f", "c", "z", 3);
    put_ts(c, "r", "g", "x", "w", 2);
    put_ts(c, "s", "f", "a", "x", 2);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    del(c, "r", WC_OP_DELETE_FAMILY_VERSION, "f", NULL, 2);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@3=x f:a@1=x f:c@3=z g:x@2=w");
    assert_string_equal(get_str(c, "s", &o), "s: f:a@2=x");
    del(c, "r", WC_OP_DELETE_FAMILY_VERSION, "f", NULL, 5); /* nothing at 5 */
    assert_string_equal(get_str(c, "r", &o), "r: f:a@3=x f:a@1=x f:c@3=z g:x@2=w");
}

static void test_family_and_row_deletes_with_a_timestamp_spare_newer_cells(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5", "g:5"));
    put_ts(c, "r", "f", "a", "1", 5);
    put_ts(c, "r", "f", "a", "2", 15);
    put_ts(c, "r", "f", "b", "3", 10);
    put_ts(c, "r", "g", "c", "4", 5);
    put_ts(c, "r", "g", "c", "5", 25);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    del(c, "r", WC_OP_DELETE_FAMILY, "f", NULL, 10); /* <= 10, the boundary included */
    assert_string_equal(get_str(c, "r", &o), "r: f:a@15=2 g:c@25=5 g:c@5=4");
    del(c, "r", WC_OP_DELETE_ROW, NULL, NULL, 20);
    assert_string_equal(get_str(c, "r", &o), "r: g:c@25=5");
    /* without a timestamp: "now", so a cell in the future survives */
    pin_now(1000);
    put_ts(c, "t", "f", "a", "past", 999);
    put_ts(c, "t", "f", "a", "future", 5000);
    put_ts(c, "t", "g", "c", "past", 1000);
    del(c, "t", WC_OP_DELETE_ROW, NULL, NULL, WC_TS_LATEST);
    assert_string_equal(get_str(c, "t", &o), "t: f:a@5000=future");
    put_ts(c, "u", "f", "a", "past", 10);
    put_ts(c, "u", "f", "b", "future", 2000);
    put_ts(c, "u", "g", "c", "past", 10);
    del(c, "u", WC_OP_DELETE_FAMILY, "f", NULL, WC_TS_LATEST);
    assert_string_equal(get_str(c, "u", &o), "u: f:b@2000=future g:c@10=past");
}

static void test_deletes_mask_the_puts_of_their_own_row_mutation(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5", "g"));
    put_ts(c, "r", "f", "old", "o", 3);
    struct wc_mutation m[6] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str("masked"), 5},
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_str("newer"), 20},
        {WC_OP_DELETE_FAMILY, wc_bytes_str("f"), wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0), 10},
        /* a delete listed before the put still masks it */
        {WC_OP_DELETE_VERSION, wc_bytes_str("g"), wc_bytes_str("b"), wc_bytes_of(NULL, 0), 7},
        {WC_OP_PUT, wc_bytes_str("g"), wc_bytes_str("b"), wc_bytes_str("masked"), 7},
        {WC_OP_PUT, wc_bytes_str("g"), wc_bytes_str("b"), wc_bytes_str("kept"), 8},
    };
    struct wc_row_mutation rm = {wc_bytes_str("r"), m, 6};
    struct ct_err err;
    assert_int_equal(wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    assert_string_equal(get_str(c, "r", &o), "r: f:a@20=newer g:b@8=kept");
    /* a column delete and a family-version delete in one mutation with puts */
    struct wc_mutation m2[4] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("c"), wc_bytes_str("masked"), 4},
        {WC_OP_DELETE_COLUMN, wc_bytes_str("f"), wc_bytes_str("c"), wc_bytes_of(NULL, 0), 4},
        {WC_OP_DELETE_FAMILY_VERSION, wc_bytes_str("f"), wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0),
         20},
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("d"), wc_bytes_str("masked"), 20},
    };
    struct wc_row_mutation rm2 = {wc_bytes_str("r"), m2, 4};
    assert_int_equal(wc_mutate_row(c->t, &rm2, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    assert_string_equal(get_str(c, "r", &o), "r: g:b@8=kept");
}

static void test_check_and_mutate_with_read_dependent_deletes(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5", "g"));
    put_ts(c, "r", "g", "lock", "held", 1);
    put_ts(c, "r", "f", "a", "x", 10);
    put_ts(c, "r", "f", "b", "y", 10);
    put_ts(c, "r", "f", "a", "z", 11);
    struct wc_mutation m[2] = {
        {WC_OP_DELETE_FAMILY_VERSION, wc_bytes_str("f"), wc_bytes_of(NULL, 0), wc_bytes_of(NULL, 0),
         10},
        {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("a"), wc_bytes_of(NULL, 0),
         WC_TS_LATEST},
    };
    struct wc_row_mutation rm = {wc_bytes_str("r"), m, 2};
    struct ct_err err;
    bool applied = true;
    struct wc_bytes wrong = wc_bytes_str("free");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("g"),
                                         wc_bytes_str("lock"), &wrong, &rm,
                                         WC_DURABILITY_USE_DEFAULT, &applied, &err),
                     CT_OK);
    assert_false(applied);
    assert_string_equal(get_str(c, "r", &o), "r: f:a@11=z f:a@10=x f:b@10=y g:lock@1=held");
    /* expected absent, but the column has a value: not applied either */
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("g"),
                                         wc_bytes_str("lock"), NULL, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_false(applied);
    struct wc_bytes right = wc_bytes_str("held");
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("g"),
                                         wc_bytes_str("lock"), &right, &rm,
                                         WC_DURABILITY_USE_DEFAULT, &applied, &err),
                     CT_OK);
    assert_true(applied);
    assert_string_equal(get_str(c, "r", &o), "r: g:lock@1=held");
    /* expected absent and the column is empty: applies */
    put_ts(c, "s", "f", "a", "x", 10);
    rm.row = wc_bytes_str("s");
    assert_int_equal(wc_check_and_mutate(c->t, wc_bytes_str("s"), wc_bytes_str("g"),
                                         wc_bytes_str("lock"), NULL, &rm, WC_DURABILITY_USE_DEFAULT,
                                         &applied, &err),
                     CT_OK);
    assert_true(applied);
    assert_string_equal(get_str(c, "s", &o), "");
}

static void test_batch_mixes_plain_rows_and_read_dependent_deletes(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f:5"));
    put_ts(c, "b", "f", "a", "x", 1);
    put_ts(c, "b", "f", "a", "y", 2);
    put_ts(c, "c", "f", "a", "x", 3);
    put_ts(c, "c", "f", "b", "x", 3);
    struct wc_mutation put1 = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("1"),
                               5};
    struct wc_mutation latest = {WC_OP_DELETE_VERSION, wc_bytes_str("f"), wc_bytes_str("a"),
                                 wc_bytes_of(NULL, 0), WC_TS_LATEST};
    struct wc_mutation fv = {WC_OP_DELETE_FAMILY_VERSION, wc_bytes_str("f"), wc_bytes_of(NULL, 0),
                             wc_bytes_of(NULL, 0), 3};
    struct wc_row_mutation rows[4] = {
        {wc_bytes_str("a"), &put1, 1},
        {wc_bytes_str("b"), &latest, 1},
        {wc_bytes_str("c"), &fv, 1},
        {wc_bytes_str("d"), &put1, 1},
    };
    struct ct_err err;
    assert_int_equal(wc_mutate_batch(c->t, rows, 4, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.max_versions = 5;
    assert_string_equal(scan_str(c, &o), "a: f:q@5=1 | b: f:a@1=x | d: f:q@5=1");
}

static void test_cell_over_the_size_limit_is_refused_and_writes_nothing(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    size_t big_len = (10u << 20) + 1; /* docs/storage-contract.md, "Data model": 10 MiB */
    uint8_t *big = calloc(1, big_len);
    assert_non_null(big);
    struct wc_mutation m[2] = {
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("small"), wc_bytes_str("v"), 1},
        {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("big"), wc_bytes_of(big, big_len), 1},
    };
    struct wc_row_mutation rm = {wc_bytes_str("r"), m, 2};
    struct ct_err err;
    assert_int_equal(wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EINVAL);
    free(big);
    assert_string_equal(get_str(c, "r", NULL), "");
}

static void test_readonly_table_refuses_every_write(void **state)
{
    struct cctx *c = *state;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, c->name);
    d.families = &fd;
    d.nfamilies = 1;
    d.readonly = true;
    struct ct_err err;
    assert_int_equal(wc_table_create(c->s, &d, NULL, 0, &err), CT_OK);
    assert_int_equal(wc_table_open(c->s, c->name, &c->t, &err), CT_OK);
    struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"), wc_bytes_str("v"), 1};
    struct wc_row_mutation rm = {wc_bytes_str("r"), &m, 1};
    assert_int_equal(wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_EINVAL);
    int64_t v;
    assert_true(wc_increment(c->t, wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("n"), 1,
                             WC_DURABILITY_USE_DEFAULT, &v, &err) < 0);
    bool applied = true;
    assert_true(wc_check_and_mutate(c->t, wc_bytes_str("r"), wc_bytes_str("f"), wc_bytes_str("q"),
                                    NULL, &rm, WC_DURABILITY_USE_DEFAULT, &applied, &err) < 0);
    assert_string_equal(get_str(c, "r", NULL), ""); /* reads still work */
    d.readonly = false;
    assert_int_equal(wc_table_alter(c->s, &d, &err), CT_OK);
    assert_int_equal(wc_mutate_row(c->t, &rm, WC_DURABILITY_USE_DEFAULT, &err), CT_OK);
    assert_string_equal(get_str(c, "r", NULL), "r: f:q@1=v");
}

static void test_pre_split_table_scans_across_regions(void **state)
{
    struct cctx *c = *state;
    mk_table_split(c, FAMS("f"), (const char *const[]){"m", "c", "t"}, 3);
    fill_rows(c, "a,b,c,d,m,n,s,t,z");
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    assert_string_equal(scan_keys(c, &o), "a,b,c,d,m,n,s,t,z");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "z,t,s,n,m,d,c,b,a");
    o.start_row = wc_bytes_str("n");
    o.stop_row = wc_bytes_str("b");
    assert_string_equal(scan_keys(c, &o), "n,m,d,c");
    o.reversed = false;
    o.start_row = wc_bytes_str("bb");
    o.stop_row = wc_bytes_str("t");
    o.limit_rows = 4;
    assert_string_equal(scan_keys(c, &o), "c,d,m,n");
    assert_string_equal(get_str(c, "m", NULL), "m: f:q@1=m");
}

/* ---- multi-range scans (wc_scan_options.ranges) ------------------------------------------- */

/* Ranges as "start..stop;start..stop" (empty side = open), into rr (at most 8). */
static size_t parse_ranges(const char *spec, char buf[8][2][16], struct wc_row_range *rr)
{
    size_t n = 0;
    const char *p = spec;
    while (*p && n < 8) {
        const char *dots = strstr(p, "..");
        assert_non_null(dots);
        const char *end = strchr(dots, ';');
        size_t sl = (size_t)(dots - p), tl = end ? (size_t)(end - dots - 2) : strlen(dots + 2);
        assert_true(sl < 16 && tl < 16);
        memcpy(buf[n][0], p, sl);
        buf[n][0][sl] = 0;
        memcpy(buf[n][1], dots + 2, tl);
        buf[n][1][tl] = 0;
        rr[n].start = wc_bytes_str(buf[n][0]);
        rr[n].stop = wc_bytes_str(buf[n][1]);
        n++;
        p = end ? end + 1 : dots + 2 + tl;
    }
    return n;
}

/* The model: the keys of a plain full scan that lie in one of the ranges, in the scan's
 * direction, cut at limit (0 = none). */
static void model_keys(struct cctx *c, const struct wc_row_range *rr, size_t n, bool reversed,
                       uint64_t limit, char *out, size_t size)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.reversed = reversed;
    char all[4096];
    snprintf(all, sizeof(all), "%s", scan_keys(c, &o));
    out[0] = 0;
    uint64_t kept = 0;
    for (char *k = strtok(all, ","); k && (!limit || kept < limit); k = strtok(NULL, ",")) {
        struct wc_bytes kb = wc_bytes_str(k);
        bool in = false;
        for (size_t i = 0; i < n && !in; i++) {
            size_t l1 = rr[i].start.len < kb.len ? rr[i].start.len : kb.len;
            int c1 = memcmp(rr[i].start.data, kb.data, l1);
            bool ge_start = c1 < 0 || (c1 == 0 && rr[i].start.len <= kb.len);
            size_t l2 = rr[i].stop.len < kb.len ? rr[i].stop.len : kb.len;
            int c2 = memcmp(kb.data, rr[i].stop.data, l2);
            bool lt_stop = !rr[i].stop.len || c2 < 0 || (c2 == 0 && kb.len < rr[i].stop.len);
            in = ge_start && lt_stop;
        }
        if (!in)
            continue;
        if (*out)
            strncat(out, ",", size - strlen(out) - 1);
        strncat(out, k, size - strlen(out) - 1);
        kept++;
    }
}

/* Range sets over the rows of a table pre-split at c, m and t: ranges inside one region, across
 * region boundaries, adjacent ones, empty ones ([k, k)), ones holding no row, open first start
 * and open last stop. */
static const char *const range_sets[] = {
    "a..b",
    "b..n",
    "..c;d..m;s..",
    "a..c;c..d;d..e;n..t",
    "bb..bb;c..c;e..f;g..h",
    "..",
    "a..a;b..d;dd..dd;dz..n;nn..s;t..zz",
    "m..m\x01;z..",
};

static void test_multi_range_scans_match_the_model_in_both_directions(void **state)
{
    struct cctx *c = *state;
    mk_table_split(c, FAMS("f"), (const char *const[]){"m", "c", "t"}, 3);
    fill_rows(c, "a,b,ba,c,d,m,m\x01,n,s,t,u,z");
    for (size_t i = 0; i < sizeof(range_sets) / sizeof(range_sets[0]); i++) {
        char buf[8][2][16];
        struct wc_row_range rr[8];
        size_t n = parse_ranges(range_sets[i], buf, rr);
        for (int rev = 0; rev < 2; rev++) {
            for (uint64_t limit = 0; limit < 4; limit += 3) {
                char want[1024];
                model_keys(c, rr, n, rev, limit, want, sizeof(want));
                struct wc_scan_options o;
                wc_scan_options_init(&o);
                o.ranges = rr;
                o.nranges = n;
                o.reversed = rev;
                o.limit_rows = limit;
                const char *got = scan_keys(c, &o);
                if (strcmp(got, want) != 0)
                    fail_msg("ranges %s reversed %d limit %u: got \"%s\", want \"%s\"",
                             range_sets[i], rev, (unsigned)limit, got, want);
            }
        }
    }
    /* the answers the model gives, spelled out once */
    char buf[8][2][16];
    struct wc_row_range rr[8];
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.ranges = rr;
    o.nranges = parse_ranges("..c;d..m;s..", buf, rr);
    assert_string_equal(scan_keys(c, &o), "a,b,ba,d,s,t,u,z");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "z,u,t,s,d,ba,b,a");
    o.nranges = parse_ranges("bb..bb;c..c;e..f;g..h", buf, rr);
    assert_string_equal(scan_keys(c, &o), ""); /* empty ranges, ranges without rows */
}

static void test_multi_range_scans_with_filter_limit_and_batches(void **state)
{
    struct cctx *c = *state;
    mk_table_split(c, FAMS("f"), (const char *const[]){"c"}, 1);
    fill_rows(c, "a,b,c,d,e,f");
    put_ts(c, "e", "f", "q2", "x", 1);
    put_ts(c, "e", "f", "q3", "y", 1);
    char buf[8][2][16];
    struct wc_row_range rr[8];
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.ranges = rr;
    o.nranges = parse_ranges("a..c;d..f", buf, rr);
    /* the row filter sees every candidate row of every range; STOP ends the whole scan */
    struct rf_arg a = {0};
    o.row_filter = rf_skip_b_stop_d;
    o.row_filter_arg = &a;
    assert_string_equal(scan_keys(c, &o), "a");
    assert_int_equal(a.calls, 3);
    o.reversed = true;
    a.calls = 0;
    assert_string_equal(scan_keys(c, &o), "e");
    assert_int_equal(a.calls, 2);
    o.nranges = parse_ranges("b..c;e..f", buf, rr); /* SKIP in the first range, row of the next */
    o.reversed = false;
    assert_string_equal(scan_keys(c, &o), "e");
    o.row_filter = NULL;
    /* limit_rows counts across the ranges */
    o.nranges = parse_ranges("a..b;c..d;e..", buf, rr);
    o.limit_rows = 3;
    assert_string_equal(scan_keys(c, &o), "a,c,e");
    o.limit_rows = 2;
    assert_string_equal(scan_keys(c, &o), "a,c");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "f,e");
    o.limit_rows = 0;
    /* a wide row comes back in chunks; the next range's rows follow */
    o.batch_cells = 2;
    o.reversed = false;
    o.nranges = parse_ranges("a..b;e..f", buf, rr);
    assert_string_equal(scan_str(c, &o), "a: f:q@1=a | e: f:q@1=e f:q2@1=x | e: f:q3@1=y");
    o.reversed = true;
    assert_string_equal(scan_str(c, &o), "e: f:q@1=e f:q2@1=x | e: f:q3@1=y | a: f:q@1=a");
}

/* Range bounds longer than Bigtable's 4 KiB row keys (the Bigtable backend clips them to the
 * same row sets): two ranges split at a 5,000-byte key "bxx..x", one from a 6,000-byte key, and
 * a range lying wholly between two long keys that share their first 4 KiB (no stored row can be
 * in it). Rows a, b, bx, c, d, e; both directions. */
static void test_multi_range_scans_with_bounds_longer_than_4kib(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b,bx,c,d,e");
    static uint8_t k5[5000], k6a[6000], k6b[6000];
    k5[0] = 'b';
    memset(k5 + 1, 'x', sizeof(k5) - 1); /* above "bx", below "c" */
    k6a[0] = 'c';
    memset(k6a + 1, 'y', sizeof(k6a) - 1); /* above "c", below "d" */
    memcpy(k6b, k6a, sizeof(k6b));
    k6b[5999] = 'z'; /* shares k6a's first 5,999 bytes */
    struct wc_row_range rr[4] = {
        {wc_bytes_str("a"), wc_bytes_of(k5, sizeof(k5))},
        {wc_bytes_of(k5, sizeof(k5)), wc_bytes_of(k6a, sizeof(k6a))},
        {wc_bytes_of(k6a, sizeof(k6a)), wc_bytes_of(k6b, sizeof(k6b))},
        {wc_bytes_of(k6b, sizeof(k6b)), wc_bytes_str("e")},
    };
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.ranges = rr;
    o.nranges = 4;
    assert_string_equal(scan_keys(c, &o), "a,b,bx,c,d");
    o.reversed = true;
    assert_string_equal(scan_keys(c, &o), "d,c,bx,b,a");
    o.nranges = 1; /* [a, k5) alone: bx is below k5 */
    assert_string_equal(scan_keys(c, &o), "bx,b,a");
    o.ranges = rr + 2; /* [k6a, k6b) alone: nothing stored can lie there */
    o.reversed = false;
    assert_string_equal(scan_keys(c, &o), "");
}

static void test_multi_range_scans_refuse_bad_ranges(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("f"));
    fill_rows(c, "a,b");
    static const char *const bad[] = {
        "b..a",      /* start above stop */
        "c..d;a..b", /* out of order */
        "a..c;b..d", /* overlapping */
        "a..;c..d",  /* an open stop before the last range */
        "a..b;..c",  /* an open start after the first range */
        "a..b;c..e;d..f",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char buf[8][2][16];
        struct wc_row_range rr[8];
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.ranges = rr;
        o.nranges = parse_ranges(bad[i], buf, rr);
        struct wc_scanner *sc = NULL;
        struct ct_err err = {0};
        if (wc_scanner_open(c->t, &o, &sc, &err) != CT_EINVAL)
            fail_msg("ranges %s were accepted", bad[i]);
        assert_null(sc);
        assert_non_null(strstr(err.msg, "row range"));
    }
    char buf[8][2][16];
    struct wc_row_range rr[8];
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.ranges = rr;
    o.nranges = parse_ranges("a..b", buf, rr);
    struct wc_bytes k = wc_bytes_str("a");
    for (int which = 0; which < 3; which++) { /* with start_row, stop_row or row_prefix */
        o.start_row = which == 0 ? k : wc_bytes_of(NULL, 0);
        o.stop_row = which == 1 ? k : wc_bytes_of(NULL, 0);
        o.row_prefix = which == 2 ? k : wc_bytes_of(NULL, 0);
        struct wc_scanner *sc = NULL;
        struct ct_err err = {0};
        assert_int_equal(wc_scanner_open(c->t, &o, &sc, &err), CT_EINVAL);
        assert_non_null(strstr(err.msg, "cannot be combined"));
    }
    o.start_row = o.stop_row = o.row_prefix = wc_bytes_of(NULL, 0);
    o.ranges = NULL; /* a count without an array */
    struct wc_scanner *sc = NULL;
    struct ct_err err = {0};
    assert_int_equal(wc_scanner_open(c->t, &o, &sc, &err), CT_EINVAL);
    /* a get ignores the ranges as it ignores the other row bounds */
    o.ranges = rr;
    o.start_row = k;
    assert_string_equal(get_str(c, "b", &o), "b: f:q@1=b");
}

/* ---- administration ----------------------------------------------------------------------- */

static int collect_name(void *arg, const char *name)
{
    char *out = arg;
    if (*out)
        strcat(out, ",");
    strcat(out, name);
    return 0;
}

static void test_table_admin_lifecycle(void **state)
{
    struct cctx *c = *state;
    mk_table(c, FAMS("b:3:1:18000", "a"));
    struct ct_err err;
    char full[80];
    snprintf(full, sizeof(full), "default:%s", c->name);
    assert_int_equal(wc_table_exists(c->s, c->name, &err), CT_OK);
    assert_int_equal(wc_table_exists(c->s, "ctc_no_such_table", &err), CT_NOTFOUND);
    struct wc_table_desc *d;
    assert_int_equal(wc_table_describe(c->s, c->name, &d, &err), CT_OK);
    assert_string_equal(d->name, full);
    assert_int_equal(d->nfamilies, 2);
    assert_string_equal(d->families[0].name, "a");
    assert_string_equal(d->families[1].name, "b");
    assert_int_equal(d->families[1].versions, 3);
    assert_int_equal(d->families[1].min_versions, 1);
    assert_int_equal(d->families[1].ttl_s, 18000);
    assert_true(d->enabled);
    wc_table_desc_free(d);
    char names[4096] = "";
    assert_int_equal(wc_table_list(c->s, collect_name, names, &err), CT_OK);
    assert_non_null(strstr(names, full));

    /* create twice */
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "a");
    struct wc_table_desc nd;
    wc_table_desc_init(&nd, c->name);
    nd.families = &fd;
    nd.nfamilies = 1;
    assert_int_equal(wc_table_create(c->s, &nd, NULL, 0, &err), CT_EEXIST);

    put_ts(c, "r", "a", "q", "v", 1);
    /* drop needs a disabled table; reads of a disabled table fail */
    assert_true(wc_table_drop(c->s, c->name, &err) < 0);
    assert_int_equal(wc_table_disable(c->s, c->name, &err), CT_OK);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result res;
    assert_true(wc_get(c->t, wc_bytes_str("r"), &o, &res, &err) < 0);
    assert_int_equal(wc_table_describe(c->s, c->name, &d, &err), CT_OK);
    assert_false(d->enabled);
    wc_table_desc_free(d);
    assert_int_equal(wc_table_enable(c->s, c->name, &err), CT_OK);
    assert_string_equal(get_str(c, "r", NULL), "r: a:q@1=v");

    /* alter: add a family, change VERSIONS */
    struct wc_family_desc af[3];
    wc_family_desc_init(&af[0], "a");
    af[0].versions = 4;
    wc_family_desc_init(&af[1], "b");
    af[1].versions = 3;
    af[1].min_versions = 1;
    af[1].ttl_s = 18000;
    wc_family_desc_init(&af[2], "c");
    struct wc_table_desc ad;
    wc_table_desc_init(&ad, c->name);
    ad.families = af;
    ad.nfamilies = 3;
    assert_int_equal(wc_table_alter(c->s, &ad, &err), CT_OK);
    assert_int_equal(wc_table_describe(c->s, c->name, &d, &err), CT_OK);
    assert_int_equal(d->nfamilies, 3);
    assert_int_equal(d->families[0].versions, 4);
    assert_string_equal(d->families[2].name, "c");
    wc_table_desc_free(d);
    put_ts(c, "r", "c", "q", "new", 2);
    assert_string_equal(get_str(c, "r", NULL), "r: a:q@1=v c:q@2=new");

    /* truncate keeps families, removes rows, leaves the table enabled */
    assert_int_equal(wc_table_truncate(c->s, c->name, false, &err), CT_OK);
    assert_string_equal(get_str(c, "r", NULL), "");
    put_ts(c, "r2", "c", "q", "x", 3);
    assert_string_equal(get_str(c, "r2", NULL), "r2: c:q@3=x");

    wc_table_close(c->t);
    c->t = NULL;
    assert_int_equal(wc_table_disable(c->s, c->name, &err), CT_OK);
    assert_int_equal(wc_table_drop(c->s, c->name, &err), CT_OK);
    assert_int_equal(wc_table_exists(c->s, c->name, &err), CT_NOTFOUND);
}

static void test_namespaces(void **state)
{
    struct cctx *c = *state;
    struct ct_err err;
    char ns[48];
    snprintf(ns, sizeof(ns), "ctcns%u_%ld", g.counter, (long)getpid());
    assert_int_equal(wc_namespace_exists(c->s, "default", &err), CT_OK);
    assert_int_equal(wc_namespace_exists(c->s, "hbase", &err), CT_OK);
    assert_int_equal(wc_namespace_exists(c->s, ns, &err), CT_NOTFOUND);
    assert_int_equal(wc_namespace_create(c->s, ns, &err), CT_OK);
    assert_int_equal(wc_namespace_create(c->s, ns, &err), CT_EEXIST);
    char names[4096] = "";
    assert_int_equal(wc_namespace_list(c->s, collect_name, names, &err), CT_OK);
    assert_non_null(strstr(names, ns));
    assert_non_null(strstr(names, "default"));
    /* a table in it: the namespace cannot be dropped */
    snprintf(c->names[0], sizeof(c->names[0]), "%s:t", ns);
    c->nnames = 1;
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, c->names[0]);
    d.families = &fd;
    d.nfamilies = 1;
    assert_int_equal(wc_table_create(c->s, &d, NULL, 0, &err), CT_OK);
    assert_true(wc_namespace_drop(c->s, ns, &err) < 0);
    cc_drop(c->s, c->names[0]);
    c->nnames = 0;
    assert_int_equal(wc_namespace_drop(c->s, ns, &err), CT_OK);
    assert_int_equal(wc_namespace_exists(c->s, ns, &err), CT_NOTFOUND);
    assert_true(wc_namespace_drop(c->s, "default", &err) < 0);
}

static void test_namespace_configuration_round_trips(void **state)
{
    struct cctx *c = *state;
    struct ct_err err;
    char ns[48];
    snprintf(ns, sizeof(ns), "ctccf%u_%ld", g.counter, (long)getpid());
    const char *kv[] = {"owner", "ops", "quota", "10 \"GB\""};
    assert_int_equal(wc_namespace_create_config(c->s, ns, kv, 2, &err), CT_OK);
    assert_int_equal(wc_namespace_create_config(c->s, ns, kv, 2, &err), CT_EEXIST);
    char **got = NULL;
    size_t n = 0;
    assert_int_equal(wc_namespace_get_config(c->s, ns, &got, &n, &err), CT_OK);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < 4; i++)
        assert_string_equal(got[i], kv[i]);
    wc_namespace_config_free(got, n);
    /* no configuration: none returned; an unknown namespace: CT_NOTFOUND */
    assert_int_equal(wc_namespace_get_config(c->s, "default", &got, &n, &err), CT_OK);
    assert_int_equal(n, 0);
    assert_null(got);
    char other[64];
    snprintf(other, sizeof(other), "%sx", ns);
    assert_int_equal(wc_namespace_get_config(c->s, other, &got, &n, &err), CT_NOTFOUND);
    assert_int_equal(wc_namespace_create(c->s, other, &err), CT_OK);
    assert_int_equal(wc_namespace_get_config(c->s, other, &got, &n, &err), CT_OK);
    assert_int_equal(n, 0);
    assert_int_equal(wc_namespace_drop(c->s, other, &err), CT_OK);
    assert_int_equal(wc_namespace_drop(c->s, ns, &err), CT_OK);
    assert_int_equal(wc_namespace_get_config(c->s, ns, &got, &n, &err), CT_NOTFOUND);
}

int wc_contract_run(const char *backend_label, wc_contract_open_fn open_store, void *arg)
{
    g.open = open_store;
    g.arg = arg;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_put_then_get_returns_cells_in_spec_order, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_put_without_timestamp_uses_pinned_clock, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_binary_keys_and_values_round_trip, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_family_fails_and_writes_nothing, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_scan_forward_and_reversed_reverse_only_rows, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_scan_bounds_both_directions, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_row_prefix_in_both_directions_and_with_bounds,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_versions_are_capped_by_family_and_request, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_overwrite_at_same_timestamp_keeps_newest_write,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_time_range_counts_versions_within_range, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_ttl_expiry_is_strict_at_the_boundary, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_columns_selection_and_qualifier_filters, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_row_filter_skips_and_stops, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_cell_filter_keeps_and_leaves_out_cells, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_limit_and_batch_cells, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_increment_counts_and_rejects_other_widths, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_check_and_mutate_applies_only_on_match, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_batch_applies_every_row, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_durability_levels_all_acknowledge, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_neutral_deletes, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_delete_latest_removes_the_newest_visible_version,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_delete_one_version_with_a_timestamp_removes_exactly_it,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(
            test_delete_family_version_removes_every_column_at_exactly_ts, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(
            test_family_and_row_deletes_with_a_timestamp_spare_newer_cells, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_deletes_mask_the_puts_of_their_own_row_mutation,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_check_and_mutate_with_read_dependent_deletes, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_batch_mixes_plain_rows_and_read_dependent_deletes,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_cell_over_the_size_limit_is_refused_and_writes_nothing,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_readonly_table_refuses_every_write, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_pre_split_table_scans_across_regions, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_multi_range_scans_match_the_model_in_both_directions,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_multi_range_scans_with_filter_limit_and_batches,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_multi_range_scans_with_bounds_longer_than_4kib,
                                        cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_multi_range_scans_refuse_bad_ranges, cc_setup,
                                        cc_teardown),
        cmocka_unit_test_setup_teardown(test_table_admin_lifecycle, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_namespaces, cc_setup, cc_teardown),
        cmocka_unit_test_setup_teardown(test_namespace_configuration_round_trips, cc_setup,
                                        cc_teardown),
    };
    char group[128];
    snprintf(group, sizeof(group), "wc contract (%s)", backend_label);
    return _cmocka_run_group_tests(group, tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
