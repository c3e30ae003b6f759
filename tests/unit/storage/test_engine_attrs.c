/* test_engine_attrs.c - family storage attributes of the embedded engine (docs/storage-contract.md,
 * "Family attributes") and how an `alter` applies them: COMPRESSION, BLOCKSIZE, BLOOMFILTER and
 * DATA_BLOCK_ENCODING reach the files flushed or compacted afterwards and never change a file
 * already written (each file records the settings it was written with, read back from its meta
 * block); BLOCKCACHE and IN_MEMORY decide whether a family's data blocks enter the shared cache and
 * in which section, and an alter of them applies to the open files at once (HBase reopens the
 * regions). Results never change. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/engine/engine_int.h"
#include "storage/engine/sst.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define NROWS       300
#define VALUE_BYTES 100

static struct wc_store *open_store(const char *dir)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 8u << 20;
    o.major_compaction_period_ms = 0;
    return fixture_store_open(&o);
}

static void create(struct wc_store *s, const char *name, const struct wc_family_desc *fd)
{
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = (struct wc_family_desc *)fd;
    d.nfamilies = 1;
    d.compaction_enabled = false; /* compactions only on request: files stay as written */
    struct ct_err err;
    if (wc_table_create(s, &d, NULL, 0, &err) != CT_OK)
        fail_msg("create %s: %s", name, err.msg);
}

static void alter(struct wc_store *s, const char *name, const struct wc_family_desc *fd)
{
    struct wc_table_desc d;
    wc_table_desc_init(&d, name);
    d.families = (struct wc_family_desc *)fd;
    d.nfamilies = 1;
    d.compaction_enabled = false;
    struct ct_err err;
    if (wc_table_alter(s, &d, &err) != CT_OK)
        fail_msg("alter %s: %s", name, err.msg);
}

/* Writes rows [from, to) with one compressible VALUE_BYTES value each ('a' + row % 26 repeated). */
static void put_rows(struct wc_table *t, int from, int to)
{
    for (int i = from; i < to; i++) {
        char row[24], val[VALUE_BYTES];
        snprintf(row, sizeof(row), "row%05d", i);
        memset(val, 'a' + i % 26, sizeof(val));
        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                wc_bytes_of(val, sizeof(val)), 1000};
        struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
        struct ct_err err;
        if (wc_mutate_row(t, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
            fail_msg("put %s: %s", row, err.msg);
    }
}

/* Scans the table (both directions) and checks it holds exactly rows [0, n) with their values;
 * also reads a few rows with gets. */
static void check_rows(struct wc_table *t, int n)
{
    for (int dir = 0; dir < 2; dir++) {
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        o.reversed = dir == 1;
        struct wc_scanner *sc;
        struct ct_err err;
        assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
        struct wc_row r;
        int k = 0, rc;
        while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
            int i = dir ? n - 1 - k : k;
            char row[24];
            snprintf(row, sizeof(row), "row%05d", i);
            assert_int_equal(r.key.len, strlen(row));
            assert_memory_equal(r.key.data, row, r.key.len);
            assert_int_equal(r.ncells, 1);
            assert_int_equal(r.cells[0].value.len, VALUE_BYTES);
            assert_int_equal(r.cells[0].value.data[VALUE_BYTES - 1], 'a' + i % 26);
            k++;
        }
        assert_int_equal(rc, CT_NOTFOUND);
        assert_int_equal(k, n);
        wc_scanner_close(sc);
    }
    for (int i = 0; i < n; i += 37) {
        char row[24];
        snprintf(row, sizeof(row), "row%05d", i);
        struct wc_scan_options o;
        wc_scan_options_init(&o);
        struct wc_result res;
        struct ct_err err;
        assert_int_equal(wc_get(t, wc_bytes_str(row), &o, &res, &err), CT_OK);
        assert_int_equal(res.row.ncells, 1);
        assert_int_equal(res.row.cells[0].value.data[0], 'a' + i % 26);
        wc_result_release(&res);
    }
}

/* The block files of the data directory: their names and the meta each was written with. */
struct file_list {
    char names[16][NAME_MAX + 1];
    struct sst_meta meta[16];
    size_t n;
};

static void list_files(const char *dir, struct file_list *out)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/sst", dir);
    DIR *d = opendir(p);
    assert_non_null(d);
    out->n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".sst") != 0)
            continue;
        assert_true(out->n < 16);
        snprintf(out->names[out->n], sizeof(out->names[0]), "%s", e->d_name);
        char path[sizeof(p) + NAME_MAX + 2];
        snprintf(path, sizeof(path), "%s/%s", p, e->d_name);
        struct sst *f;
        struct ct_err err;
        if (sst_open(path, 1, NULL, NULL, &f, &err) != CT_OK)
            fail_msg("open %s: %s", path, err.msg);
        out->meta[out->n] = *sst_get_meta(f);
        sst_unref(f);
        out->n++;
    }
    closedir(d);
}

static const struct sst_meta *find_file(const struct file_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->names[i], name) == 0)
            return &l->meta[i];
    return NULL;
}

static void test_alter_storage_settings_reach_only_files_written_afterwards(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f"); /* 64 KiB blocks, NONE, ROW, NONE */
    create(s, "at", &fd);
    struct wc_table *t = fixture_table_open(s, "at");
    struct ct_err err;
    put_rows(t, 0, NROWS);
    assert_int_equal(wc_table_flush(s, "at", &err), CT_OK);
    struct file_list a;
    list_files(dir, &a);
    assert_int_equal(a.n, 1);
    const struct sst_meta *fa = &a.meta[0];
    assert_int_equal(fa->compression, WC_COMPRESSION_NONE);
    assert_int_equal(fa->bloom, WC_BLOOM_ROW);
    assert_int_equal(fa->encoding, WC_ENCODING_NONE);
    assert_int_equal(fa->blocksize, 65536);
    assert_int_equal(fa->data_blocks, 1); /* ~36 KB of cells in one 64 KiB block */
    assert_int_equal(fa->cells, NROWS);

    fd.compression = WC_COMPRESSION_SNAPPY;
    fd.blocksize = 1024;
    fd.bloom = WC_BLOOM_ROWCOL;
    fd.encoding = WC_ENCODING_FAST_DIFF;
    alter(s, "at", &fd);
    /* the existing file is not rewritten by the alter */
    struct file_list a2;
    list_files(dir, &a2);
    assert_int_equal(a2.n, 1);
    assert_string_equal(a2.names[0], a.names[0]);
    assert_int_equal(a2.meta[0].compression, WC_COMPRESSION_NONE);
    assert_int_equal(a2.meta[0].blocksize, 65536);
    assert_int_equal(a2.meta[0].file_bytes, fa->file_bytes);
    check_rows(t, NROWS);

    /* a flush afterwards writes with the new settings; the old file stays readable as it is */
    put_rows(t, NROWS, 2 * NROWS);
    assert_int_equal(wc_table_flush(s, "at", &err), CT_OK);
    struct file_list b;
    list_files(dir, &b);
    assert_int_equal(b.n, 2);
    const struct sst_meta *old = find_file(&b, a.names[0]), *nw = NULL;
    assert_non_null(old);
    assert_int_equal(old->compression, WC_COMPRESSION_NONE);
    for (size_t i = 0; i < b.n; i++)
        if (strcmp(b.names[i], a.names[0]) != 0)
            nw = &b.meta[i];
    assert_non_null(nw);
    assert_int_equal(nw->compression, WC_COMPRESSION_SNAPPY);
    assert_int_equal(nw->bloom, WC_BLOOM_ROWCOL);
    assert_int_equal(nw->encoding, WC_ENCODING_FAST_DIFF);
    assert_int_equal(nw->blocksize, 1024);
    assert_true(nw->data_blocks >= 20); /* ~36 KB of cells in 1 KiB blocks */
    assert_int_equal(nw->cells, NROWS);
    /* the same number of cells of runs of one byte: snappy makes the file much smaller */
    assert_true(nw->file_bytes * 2 < old->file_bytes);
    check_rows(t, 2 * NROWS);

    /* a major compaction rewrites everything with the new settings */
    assert_int_equal(wc_table_compact(s, "at", NULL, true, &err), CT_OK);
    struct file_list c;
    list_files(dir, &c);
    assert_int_equal(c.n, 1);
    assert_null(find_file(&c, a.names[0]));
    assert_int_equal(c.meta[0].compression, WC_COMPRESSION_SNAPPY);
    assert_int_equal(c.meta[0].bloom, WC_BLOOM_ROWCOL);
    assert_int_equal(c.meta[0].blocksize, 1024);
    assert_int_equal(c.meta[0].cells, 2 * NROWS);
    check_rows(t, 2 * NROWS);

    /* GZ the same way, and everything survives a reopen */
    fd.compression = WC_COMPRESSION_GZ;
    fd.bloom = WC_BLOOM_NONE;
    alter(s, "at", &fd);
    assert_int_equal(wc_table_compact(s, "at", NULL, true, &err), CT_OK);
    list_files(dir, &c);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.meta[0].compression, WC_COMPRESSION_GZ);
    assert_int_equal(c.meta[0].bloom, WC_BLOOM_NONE);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir);
    t = fixture_table_open(s, "at");
    check_rows(t, 2 * NROWS);
    struct wc_table_desc *d;
    assert_int_equal(wc_table_describe(s, "at", &d, &err), CT_OK);
    assert_int_equal(d->families[0].compression, WC_COMPRESSION_GZ);
    assert_int_equal(d->families[0].blocksize, 1024);
    assert_int_equal(d->families[0].encoding, WC_ENCODING_FAST_DIFF);
    wc_table_desc_free(d);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static struct block_cache_stats cache_after_scan(struct wc_store *s, struct wc_table *t, int n)
{
    block_cache_clear(estore_of(s)->cache);
    check_rows(t, n);
    struct block_cache_stats st;
    block_cache_get_stats(estore_of(s)->cache, &st);
    return st;
}

static void test_blockcache_and_in_memory_decide_caching_and_alter_applies_at_once(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir);
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    fd.blocksize = 1024;
    fd.blockcache = false;
    create(s, "bc", &fd);
    struct wc_table *t = fixture_table_open(s, "bc");
    struct ct_err err;
    put_rows(t, 0, NROWS);
    assert_int_equal(wc_table_flush(s, "bc", &err), CT_OK);

    /* BLOCKCACHE false: reading every block caches none of them */
    struct block_cache_stats st = cache_after_scan(s, t, NROWS);
    assert_int_equal(st.bytes, 0);

    /* alter to BLOCKCACHE true, IN_MEMORY true: the same (open, not rewritten) file now fills the
     * cache, in the in-memory section */
    fd.blockcache = true;
    fd.in_memory = true;
    alter(s, "bc", &fd);
    st = cache_after_scan(s, t, NROWS);
    assert_true(st.bytes > 0);
    assert_int_equal(st.in_memory_bytes, st.bytes);

    /* IN_MEMORY false: cached as ordinary blocks */
    fd.in_memory = false;
    alter(s, "bc", &fd);
    st = cache_after_scan(s, t, NROWS);
    assert_true(st.bytes > 0);
    assert_int_equal(st.in_memory_bytes, 0);

    /* back to BLOCKCACHE false: nothing enters the cache any more */
    fd.blockcache = false;
    alter(s, "bc", &fd);
    st = cache_after_scan(s, t, NROWS);
    assert_int_equal(st.bytes, 0);

    /* files written or opened later get the family's current options too */
    fd.blockcache = true;
    fd.in_memory = true;
    alter(s, "bc", &fd);
    put_rows(t, NROWS, 2 * NROWS);
    assert_int_equal(wc_table_flush(s, "bc", &err), CT_OK);
    st = cache_after_scan(s, t, 2 * NROWS);
    assert_true(st.bytes > 0);
    assert_int_equal(st.in_memory_bytes, st.bytes);
    wc_table_close(t);
    wc_close(s);
    s = open_store(dir);
    t = fixture_table_open(s, "bc");
    st = cache_after_scan(s, t, 2 * NROWS);
    assert_true(st.bytes > 0);
    assert_int_equal(st.in_memory_bytes, st.bytes);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alter_storage_settings_reach_only_files_written_afterwards),
        cmocka_unit_test(test_blockcache_and_in_memory_decide_caching_and_alter_applies_at_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
