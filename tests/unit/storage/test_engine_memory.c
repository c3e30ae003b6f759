/* test_engine_memory.c - the all-memstores ceiling of the embedded engine
 * (wc_options.memstore_total_bytes): with it set, the largest regions are flushed once all
 * memstores together pass it, although no region reached its own flush size; without it the
 * old ceiling (max(4 x flush size, 256 MiB)) applies and the same writes flush nothing;
 * wc_store_stats().memstore_bytes reports the total the TSD holds its writes on; and with
 * pread_block_files no block file is mapped (mapped pages would count in RSS). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/fixture.h"

#define KIB (1ull << 10)
#define MIB (1ull << 20)

#define NREGIONS 8

static struct wc_store *open_store(const char *dir, size_t flush_bytes, size_t total_bytes)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 1 << 20;
    o.memstore_flush_bytes = flush_bytes;
    o.memstore_total_bytes = total_bytes;
    return fixture_store_open(&o);
}

/* Table "m", one family, NREGIONS regions split at "r1".."r7". */
static struct wc_table *mk_table(struct wc_store *s)
{
    struct wc_family_desc fd;
    wc_family_desc_init(&fd, "f");
    struct wc_table_desc d;
    wc_table_desc_init(&d, "m");
    d.families = &fd;
    d.nfamilies = 1;
    struct wc_bytes sp[NREGIONS - 1];
    char keys[NREGIONS - 1][16];
    for (int i = 0; i < NREGIONS - 1; i++) {
        snprintf(keys[i], sizeof(keys[i]), "r%d", i + 1);
        sp[i] = wc_bytes_str(keys[i]);
    }
    struct ct_err err;
    if (wc_table_create(s, &d, sp, NREGIONS - 1, &err) != CT_OK)
        fail_msg("create m: %s", err.msg);
    return fixture_table_open(s, "m");
}

/* Writes `per_region` bytes of values into every region, 4 KiB a cell. */
static void fill(struct wc_table *t, size_t per_region)
{
    static char val[4096];
    memset(val, 'v', sizeof(val));
    for (int r = 0; r < NREGIONS; r++) {
        for (size_t i = 0; i * sizeof(val) < per_region; i++) {
            char row[32];
            snprintf(row, sizeof(row), "r%d-%06zu", r, i);
            struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("f"), wc_bytes_str("q"),
                                    wc_bytes_of(val, sizeof(val)), 1};
            struct wc_row_mutation rm = {wc_bytes_str(row), &m, 1};
            struct ct_err err;
            if (wc_mutate_row(t, &rm, WC_DURABILITY_ASYNC_WAL, &err) != CT_OK)
                fail_msg("put %s: %s", row, err.msg);
        }
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* 8 regions x 384 KiB = 3 MiB of memstores, each region far under its 4 MiB flush size: a
 * 1 MiB ceiling flushes the largest regions until the total is back under it. */
static void test_configured_ceiling_flushes_regions_under_their_flush_size(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 4 * MIB, 1 * MIB);
    struct wc_table *t = mk_table(s);
    fill(t, 384 * KIB);
    struct wc_store_stats st = fixture_store_stats(s);
    /* at most 20 s (the check runs every 100 ms; flushes of 384 KiB are quick) */
    for (int i = 0; i < 200 && !(st.flushes > 0 && st.memstore_bytes <= 1 * MIB); i++) {
        sleep_ms(100);
        st = fixture_store_stats(s);
    }
    print_message("ceiling 1 MiB: %llu flushes, %llu memstore bytes left\n",
                  (unsigned long long)st.flushes, (unsigned long long)st.memstore_bytes);
    assert_true(st.flushes >= 1);
    assert_true(st.memstore_bytes <= 1 * MIB);
    /* not everything: only the largest regions, until under the ceiling */
    assert_true(st.memstore_bytes > 0);
    /* every row still reads back */
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_scanner *sc;
    struct ct_err err;
    assert_int_equal(wc_scanner_open(t, &o, &sc, &err), CT_OK);
    struct wc_row r;
    int n = 0, rc;
    while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK)
        n++;
    assert_int_equal(rc, CT_NOTFOUND);
    wc_scanner_close(sc);
    assert_int_equal(n, NREGIONS * 96);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* The same writes without a ceiling: the old one (256 MiB) is far away and nothing flushes. */
static void test_without_a_ceiling_the_same_writes_stay_in_memstores(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 4 * MIB, 0);
    struct wc_table *t = mk_table(s);
    fill(t, 384 * KIB);
    sleep_ms(1500); /* past one of the default ceiling's once-a-second checks */
    struct wc_store_stats st = fixture_store_stats(s);
    assert_int_equal(st.flushes, 0);
    assert_true(st.memstore_bytes >= NREGIONS * 384 * KIB);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* wc_store_stats().memstore_bytes is the sum of the regions' memstore_bytes. */
static void test_store_stats_report_all_memstores(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    struct wc_store *s = open_store(dir, 4 * MIB, 0);
    struct wc_table *t = mk_table(s);
    assert_int_equal(fixture_store_stats(s).memstore_bytes, 0);
    fill(t, 64 * KIB);
    struct wc_region_info *ri;
    size_t n;
    struct ct_err err;
    assert_int_equal(wc_table_regions(s, "m", &ri, &n, &err), CT_OK);
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += ri[i].memstore_bytes;
    wc_region_info_free(ri, n);
    assert_true(sum >= NREGIONS * 64 * KIB);
    assert_int_equal(fixture_store_stats(s).memstore_bytes, sum);
    assert_int_equal(wc_table_flush(s, "m", &err), CT_OK);
    assert_int_equal(fixture_store_stats(s).memstore_bytes, 0);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

/* How many lines of /proc/self/maps name a block file under dir. */
static int mapped_block_files(const char *dir)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        fail_msg("cannot read /proc/self/maps");
    char line[8192], want[4200];
    snprintf(want, sizeof(want), "%s/sst/", dir);
    int n = 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, want))
            n++;
    fclose(f);
    return n;
}

/* Block files are mapped by default, and with pread_block_files read through the cache
 * instead (nothing of them mapped), with the same rows read back. */
static void run_block_file_reads(bool pread, int *mapped, int *rows)
{
    char *dir = ctest_mkdtemp();
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.block_cache_bytes = 64 << 10; /* smaller than the data: blocks are read again */
    o.memstore_flush_bytes = 4 * MIB;
    o.pread_block_files = pread;
    struct wc_store *s = fixture_store_open(&o);
    struct wc_table *t = mk_table(s);
    fill(t, 128 * KIB);
    struct ct_err err;
    assert_int_equal(wc_table_flush(s, "m", &err), CT_OK);
    *rows = 0;
    for (int pass = 0; pass < 2; pass++) {
        struct wc_scan_options so;
        wc_scan_options_init(&so);
        so.reversed = pass == 1;
        struct wc_scanner *sc;
        assert_int_equal(wc_scanner_open(t, &so, &sc, &err), CT_OK);
        struct wc_row r;
        int rc;
        while ((rc = wc_scanner_next(sc, &r, &err)) == CT_OK) {
            assert_int_equal(r.cells[0].value.len, 4096);
            (*rows)++;
        }
        assert_int_equal(rc, CT_NOTFOUND);
        wc_scanner_close(sc);
    }
    *mapped = mapped_block_files(dir);
    assert_true(fixture_store_stats(s).cache_misses > 0);
    wc_table_close(t);
    wc_close(s);
    ctest_rmdir(dir);
}

static void test_pread_block_files_maps_nothing_and_reads_the_same(void **state)
{
    (void)state;
    int mapped = 0, rows = 0;
    run_block_file_reads(false, &mapped, &rows);
    assert_true(mapped >= NREGIONS); /* the default: every flushed file mapped */
    assert_int_equal(rows, 2 * NREGIONS * 32);
    run_block_file_reads(true, &mapped, &rows);
    assert_int_equal(mapped, 0);
    assert_int_equal(rows, 2 * NREGIONS * 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_configured_ceiling_flushes_regions_under_their_flush_size),
        cmocka_unit_test(test_without_a_ceiling_the_same_writes_stay_in_memstores),
        cmocka_unit_test(test_store_stats_report_all_memstores),
        cmocka_unit_test(test_pread_block_files_maps_nothing_and_reads_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
