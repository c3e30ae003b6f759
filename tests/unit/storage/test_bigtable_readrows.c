/* test_bigtable_readrows.c - the Bigtable ReadRows chunk merger (storage/bigtable/bt_merge.h)
 * against the 48 public conformance vectors vendored in tests/vectors/bigtable/readrows.json
 * (origin and licence: tests/vectors/README.md), plus the reversed-order and restart rules the
 * vectors do not cover.
 *
 * The vectors are found inside the repository: <root>/tests/vectors, where <root> is derived
 * from this program's path (<root>/build/<flavour>/tests/unit/storage/<name>) or is the working
 * directory. */
#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "storage/bigtable/bt_merge.h"
#include "tests/lib/ctest.h"

static char *read_file_or_null(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static char *load_vectors(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    char roots[3][PATH_MAX];
    int nroots = 0;
    if (n > 0) {
        exe[n] = 0;
        for (int up = 0; up < 6; up++) { /* strip name, storage, unit, tests, flavour, build */
            char *slash = strrchr(exe, '/');
            if (slash)
                *slash = 0;
        }
        snprintf(roots[nroots++], PATH_MAX, "%s", exe);
    }
    if (getcwd(roots[nroots], PATH_MAX))
        nroots++;
    for (int i = 0; i < nroots; i++) {
        char path[PATH_MAX * 4]; /* roots[i] as the compiler bounds it, plus the suffix */
        snprintf(path, sizeof(path), "%s/tests/vectors/bigtable/readrows.json", roots[i]);
        char *s = read_file_or_null(path);
        if (s)
            return s;
    }
    fail_msg("tests/vectors/bigtable/readrows.json not found in the repository");
    return NULL;
}

/* Decodes standard base64 into a new buffer (*len bytes). */
static uint8_t *b64_decode(const char *s, size_t *len)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = strlen(s);
    uint8_t *out = malloc(n + 1);
    assert_non_null(out);
    uint32_t acc = 0;
    int bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n && s[i] != '='; i++) {
        const char *p = strchr(tab, s[i]);
        assert_non_null(p);
        acc = acc << 6 | (uint32_t)(p - tab);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
        }
    }
    *len = o;
    return out;
}

struct owned {
    uint8_t *p[4];
    int n;
};

static struct wc_bytes b64_field(const cJSON *obj, const char *name, bool *present,
                                 struct owned *own)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (present)
        *present = f != NULL;
    if (!cJSON_IsString(f))
        return wc_bytes_of(NULL, 0);
    size_t len;
    uint8_t *b = b64_decode(f->valuestring, &len);
    own->p[own->n++] = b;
    return wc_bytes_of(b, len);
}

static const char *str_field(const cJSON *obj, const char *name)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(f) ? f->valuestring : "";
}

static int64_t ts_field(const cJSON *obj)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(obj, "timestampMicros");
    if (cJSON_IsString(f))
        return strtoll(f->valuestring, NULL, 10);
    if (cJSON_IsNumber(f))
        return (int64_t)f->valuedouble;
    return 0;
}

/* Formats one assembled or expected cell as a line, so a mismatch prints both sides. */
static void cell_line(char *out, size_t size, const char *row, size_t rowlen, const char *fam,
                      size_t famlen, const char *qual, size_t quallen, int64_t ts, const char *val,
                      size_t vallen, const char *label, size_t labellen)
{
    snprintf(out, size, "%.*s|%.*s|%.*s|%lld|%.*s|%.*s", (int)rowlen, row, (int)famlen, fam,
             (int)quallen, qual, (long long)ts, (int)vallen, val, (int)labellen, label);
}

static int run_case(const cJSON *tc, char *why, size_t whylen)
{
    const char *desc = str_field(tc, "description");
    struct ct_err err = {0};
    struct bt_merge *m = NULL;
    assert_int_equal(bt_merge_new(false, &m, &err), CT_OK);
    /* the expected cells and whether the stream must be rejected */
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(tc, "results");
    bool want_error = false;
    char expected[64][256];
    int nexp = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(r, "error"))) {
            want_error = true;
            continue;
        }
        assert_true(nexp < 64);
        const char *row = str_field(r, "rowKey"), *fam = str_field(r, "familyName");
        const char *qual = str_field(r, "qualifier"), *val = str_field(r, "value");
        const char *label = str_field(r, "label");
        cell_line(expected[nexp++], 256, row, strlen(row), fam, strlen(fam), qual, strlen(qual),
                  ts_field(r), val, strlen(val), label, strlen(label));
    }
    char got[64][256];
    int ngot = 0;
    bool got_error = false;
    const cJSON *chunks = cJSON_GetObjectItemCaseSensitive(tc, "chunks");
    const cJSON *ch;
    cJSON_ArrayForEach(ch, chunks)
    {
        struct owned own = {.n = 0};
        struct bt_chunk c;
        memset(&c, 0, sizeof(c));
        c.row_key = b64_field(ch, "rowKey", NULL, &own);
        const cJSON *fam = cJSON_GetObjectItemCaseSensitive(ch, "familyName");
        c.has_family = fam != NULL;
        if (cJSON_IsString(fam))
            c.family = wc_bytes_str(fam->valuestring);
        c.qualifier = b64_field(ch, "qualifier", &c.has_qualifier, &own);
        c.ts_us = ts_field(ch);
        const cJSON *labels = cJSON_GetObjectItemCaseSensitive(ch, "labels");
        c.nlabels = (size_t)cJSON_GetArraySize(labels);
        if (c.nlabels)
            c.label = wc_bytes_str(cJSON_GetArrayItem(labels, 0)->valuestring);
        c.value = b64_field(ch, "value", NULL, &own);
        const cJSON *vs = cJSON_GetObjectItemCaseSensitive(ch, "valueSize");
        c.value_size = cJSON_IsNumber(vs) ? vs->valueint : 0;
        c.reset_row = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ch, "resetRow"));
        c.commit_row = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ch, "commitRow"));
        int rc = bt_merge_feed(m, &c, &err);
        for (int i = 0; i < own.n; i++)
            free(own.p[i]);
        if (rc != CT_OK) {
            assert_int_equal(rc, CT_ECORRUPT);
            got_error = true;
            break;
        }
        struct wc_bytes key;
        const struct bt_cell *cells;
        size_t n;
        while (bt_merge_pop(m, &key, &cells, &n) == CT_OK)
            for (size_t i = 0; i < n && ngot < 64; i++)
                cell_line(got[ngot++], 256, (const char *)key.data, key.len,
                          (const char *)cells[i].family.data, cells[i].family.len,
                          (const char *)cells[i].qualifier.data, cells[i].qualifier.len,
                          cells[i].ts_us, (const char *)cells[i].value.data, cells[i].value.len,
                          (const char *)cells[i].label.data, cells[i].label.len);
    }
    if (!got_error && bt_merge_finish(m, &err) != CT_OK)
        got_error = true;
    bt_merge_free(m);
    if (got_error != want_error) {
        snprintf(why, whylen, "%s: error %s expected, got %s (%s)", desc, want_error ? "" : "not",
                 got_error ? "one" : "none", err.msg);
        return 1;
    }
    if (ngot != nexp) {
        snprintf(why, whylen, "%s: %d cells expected, got %d", desc, nexp, ngot);
        return 1;
    }
    for (int i = 0; i < nexp; i++)
        if (strcmp(expected[i], got[i]) != 0) {
            snprintf(why, whylen, "%s: cell %d expected [%s] got [%s]", desc, i, expected[i],
                     got[i]);
            return 1;
        }
    return 0;
}

static void test_merger_passes_all_conformance_vectors(void **state)
{
    (void)state;
    char *text = load_vectors();
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    const cJSON *tests = cJSON_GetObjectItemCaseSensitive(root, "readRowsTests");
    assert_int_equal(cJSON_GetArraySize(tests), 48);
    int failures = 0, ran = 0;
    const cJSON *tc;
    cJSON_ArrayForEach(tc, tests)
    {
        char why[1024];
        ran++;
        if (run_case(tc, why, sizeof(why))) {
            print_error("FAIL %s\n", why);
            failures++;
        }
    }
    cJSON_Delete(root);
    free(text);
    assert_int_equal(ran, 48);
    assert_int_equal(failures, 0);
}

static struct bt_chunk full_chunk(const char *row, const char *val, bool commit)
{
    struct bt_chunk c;
    memset(&c, 0, sizeof(c));
    c.row_key = wc_bytes_str(row);
    c.has_family = c.has_qualifier = true;
    c.family = wc_bytes_str("f");
    c.qualifier = wc_bytes_str("q");
    c.ts_us = 1000;
    c.value = wc_bytes_str(val);
    c.commit_row = commit;
    return c;
}

static void test_merger_reversed_requires_decreasing_keys(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct bt_merge *m;
    assert_int_equal(bt_merge_new(true, &m, &err), CT_OK);
    struct bt_chunk c = full_chunk("r3", "v", true);
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_OK);
    c = full_chunk("r1", "v", true);
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_OK);
    assert_int_equal(bt_merge_pending(m), 2);
    c = full_chunk("r2", "v", true);
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "out of order"));
    bt_merge_free(m);
}

static void test_merger_restart_drops_partial_row_and_keeps_order(void **state)
{
    (void)state;
    struct ct_err err = {0};
    struct bt_merge *m;
    assert_int_equal(bt_merge_new(false, &m, &err), CT_OK);
    struct bt_chunk c = full_chunk("a", "1", true);
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_OK);
    assert_true(bt_merge_idle(m));
    c = full_chunk("b", "2", false); /* the stream breaks inside row b */
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_OK);
    assert_false(bt_merge_idle(m));
    bt_merge_restart(m);
    assert_true(bt_merge_idle(m));
    assert_int_equal(bt_merge_last_key(m).len, 1);
    assert_memory_equal(bt_merge_last_key(m).data, "a", 1);
    c = full_chunk("b", "2", true); /* re-sent after "a" */
    assert_int_equal(bt_merge_feed(m, &c, &err), CT_OK);
    struct wc_bytes key;
    const struct bt_cell *cells;
    size_t n;
    assert_int_equal(bt_merge_pop(m, &key, &cells, &n), CT_OK);
    assert_memory_equal(key.data, "a", 1);
    assert_int_equal(bt_merge_pop(m, &key, &cells, &n), CT_OK);
    assert_memory_equal(key.data, "b", 1);
    assert_int_equal(n, 1);
    assert_memory_equal(cells[0].value.data, "2", 1);
    assert_int_equal(bt_merge_pop(m, &key, &cells, &n), CT_NOTFOUND);
    assert_true(bt_merge_committed(m) == 2);
    bt_merge_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merger_passes_all_conformance_vectors),
        cmocka_unit_test(test_merger_reversed_requires_decreasing_keys),
        cmocka_unit_test(test_merger_restart_drops_partial_row_and_keeps_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
