/* test_sst.c - block files: round trips with every compression, bloom kind and tiny to huge
 * block sizes; cells larger than a block; seek / seek_for_prev / next / prev checked
 * exhaustively against a sorted array; damage (flipped bytes in data and index blocks,
 * truncation, unknown version) reported as CT_ECORRUPT naming the file; the cache path and the
 * forward read-ahead (exact cells across seeks, each block looked up once). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/eio.h"
#include "storage/engine/sst.h"
#include "storage/engine/sst_format.h"
#include "tests/lib/ctest.h"

struct tcell {
    uint8_t row[16];
    uint8_t qual[8];
    uint32_t row_len, qual_len, value_len;
    uint8_t *value;
    int64_t ts;
    uint8_t type;
    uint64_t seq;
};

static struct cell as_cell(const struct tcell *t)
{
    struct cell c = {.row = t->row,
                     .row_len = t->row_len,
                     .qual = t->qual,
                     .qual_len = t->qual_len,
                     .value = t->value,
                     .value_len = t->value_len,
                     .ts_ms = t->ts,
                     .type = t->type,
                     .seq = t->seq};
    return c;
}

/* rows*quals*versions cells in cell order; every 7th a delete marker; values of varying size */
static struct tcell *make_cells(size_t rows, size_t quals, size_t versions, size_t *n)
{
    size_t total = rows * quals * versions, k = 0;
    struct tcell *v = calloc(total, sizeof(*v));
    assert_non_null(v);
    uint64_t seq = 1;
    for (size_t r = 0; r < rows; r++)
        for (size_t q = 0; q < quals; q++)
            for (size_t ver = 0; ver < versions; ver++) {
                struct tcell *t = &v[k++];
                t->row_len = (uint32_t)snprintf((char *)t->row, sizeof t->row, "row%06zu", r * 3);
                t->qual_len = (uint32_t)snprintf((char *)t->qual, sizeof t->qual, "q%zu", q);
                t->ts = 1000000 - (int64_t)ver * 10;
                t->type = k % 7 == 0 ? 8 : 4;
                t->seq = seq++;
                t->value_len = (uint32_t)((k * 37) % 150);
                t->value = malloc(t->value_len + 1);
                assert_non_null(t->value);
                for (uint32_t i = 0; i < t->value_len; i++)
                    t->value[i] = (uint8_t)(k + i);
            }
    *n = total;
    return v;
}

static void free_cells(struct tcell *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].value);
    free(v);
}

static void write_file(const char *path, const struct tcell *v, size_t n,
                       const struct sst_writer_options *o, struct sst_meta *meta)
{
    struct ct_err err = {0};
    struct sst_writer *w = NULL;
    assert_int_equal(sst_writer_open(path, o, &w, &err), CT_OK);
    for (size_t i = 0; i < n; i++) {
        struct cell c = as_cell(&v[i]);
        assert_int_equal(sst_writer_add(w, &c, &err), CT_OK);
    }
    assert_int_equal(sst_writer_finish(w, meta, &err), CT_OK);
}

static bool same_row_of(const struct tcell *a, const struct tcell *b)
{
    struct cell x = as_cell(a), y = as_cell(b);
    return x.row_len == y.row_len && memcmp(x.row, y.row, x.row_len) == 0;
}

static void assert_cell_eq(const struct cell *c, const struct tcell *t)
{
    struct cell e = as_cell(t);
    assert_int_equal(cell_compare(c, &e), 0);
    assert_int_equal(c->value_len, t->value_len);
    if (t->value_len)
        assert_memory_equal(c->value, t->value, t->value_len);
}

static void check_scan_both_ways(struct sst *f, const struct tcell *v, size_t n)
{
    struct ct_err err = {0};
    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
    size_t i = 0;
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
    for (; sst_iter_valid(it); i++) {
        struct cell c;
        sst_iter_cell(it, &c);
        assert_true(i < n);
        assert_cell_eq(&c, &v[i]);
        assert_int_equal(sst_iter_next(it, &err), CT_OK);
    }
    assert_int_equal(i, n);
    assert_int_equal(sst_iter_seek_last(it, &err), CT_OK);
    for (i = n; sst_iter_valid(it); i--) {
        struct cell c;
        sst_iter_cell(it, &c);
        assert_true(i > 0);
        assert_cell_eq(&c, &v[i - 1]);
        assert_int_equal(sst_iter_prev(it, &err), CT_OK);
    }
    assert_int_equal(i, 0);
    sst_iter_free(it);
}

/* Cells whose timestamps and sequence numbers jump as far as they can (0 .. 2^63-2, both
 * directions between neighbours), for the DIFF / FAST_DIFF deltas. */
static struct tcell *make_extreme_cells(size_t *n)
{
    const int64_t ts[] = {INT64_MAX - 1, INT64_MAX - 2, 1700000000000, 1, 0};
    const uint64_t seqs[] = {UINT64_C(1) << 62, 3, (UINT64_C(1) << 62) + 5, 1, 9};
    size_t total = 4 * 2 * 5, k = 0;
    struct tcell *v = calloc(total, sizeof(*v));
    assert_non_null(v);
    for (size_t r = 0; r < 4; r++)
        for (size_t q = 0; q < 2; q++)
            for (size_t t = 0; t < 5; t++) {
                struct tcell *c = &v[k++];
                c->row_len = (uint32_t)snprintf((char *)c->row, sizeof c->row, "r%zu", r);
                c->qual_len = (uint32_t)snprintf((char *)c->qual, sizeof c->qual, "q%zu", q);
                c->ts = ts[t];
                c->type = 4;
                c->seq = seqs[(t + r) % 5];
                c->value_len = 3;
                c->value = malloc(3);
                assert_non_null(c->value);
                memcpy(c->value, "abc", 3);
            }
    *n = total;
    return v;
}

static void check_seeks(struct sst *f, const struct tcell *v, size_t n)
{
    struct ct_err err = {0};
    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
    for (size_t i = 0; i < n; i += 3) {
        struct cell want = as_cell(&v[i]), c;
        assert_int_equal(sst_iter_seek(it, &want, &err), CT_OK);
        assert_true(sst_iter_valid(it));
        sst_iter_cell(it, &c);
        assert_cell_eq(&c, &v[i]);
        assert_int_equal(sst_iter_seek_for_prev(it, &want, &err), CT_OK);
        assert_true(sst_iter_valid(it));
        sst_iter_cell(it, &c);
        assert_cell_eq(&c, &v[i]);
    }
    sst_iter_free(it);
}

static void test_sst_every_data_block_encoding_round_trips_and_diff_is_smaller(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0, ne = 0;
    struct tcell *v = make_cells(60, 5, 3, &n);
    struct tcell *x = make_extreme_cells(&ne);
    uint64_t bytes[5] = {0};
    for (int enc = WC_ENCODING_NONE; enc <= WC_ENCODING_ROW_INDEX_V1; enc++)
        for (int blk = 0; blk < 2; blk++) {
            const uint32_t bs = blk ? 4096 : 64;
            for (int set = 0; set < 2; set++) {
                char path[600];
                snprintf(path, sizeof path, "%s/e%d_%d_%d.sst", dir, enc, blk, set);
                struct sst_writer_options o = {.blocksize = bs,
                                               .encoding = (enum wc_block_encoding)enc,
                                               .bloom = WC_BLOOM_ROW,
                                               .expected_cells = n};
                write_file(path, set ? x : v, set ? ne : n, &o, NULL);
                struct ct_err err = {0};
                struct sst *f = NULL;
                assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
                assert_int_equal(sst_get_meta(f)->encoding, enc);
                check_scan_both_ways(f, set ? x : v, set ? ne : n);
                check_seeks(f, set ? x : v, set ? ne : n);
                if (blk && !set)
                    bytes[enc] = sst_get_meta(f)->file_bytes;
                sst_unref(f);
            }
        }
    /* timestamps 10 ms apart and consecutive sequence numbers: one-byte deltas */
    assert_true(bytes[WC_ENCODING_DIFF] + n < bytes[WC_ENCODING_NONE]);
    assert_int_equal(bytes[WC_ENCODING_FAST_DIFF], bytes[WC_ENCODING_DIFF]);
    assert_int_equal(bytes[WC_ENCODING_PREFIX], bytes[WC_ENCODING_NONE]);
    free_cells(v, n);
    free_cells(x, ne);
    ctest_rmdir(dir);
}

/* Rewrites a block file as version 1 with the given encoding byte (header, footer and meta, with
 * their checksums): what an older build wrote. */
static void make_version1(const char *path, uint8_t encoding)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    uint8_t ft[SST_FOOTER_BYTES], one = 1;
    off_t foff = sb.st_size - SST_FOOTER_BYTES;
    assert_int_equal(pread(fd, ft, sizeof ft, foff), (ssize_t)sizeof ft);
    uint64_t moff = coding_get_be64(ft + 24);
    uint32_t mlen = coding_get_be32(ft + 32);
    uint8_t *m = malloc(mlen + SST_BLOCK_TRAILER_BYTES);
    assert_non_null(m);
    assert_int_equal(pread(fd, m, mlen + SST_BLOCK_TRAILER_BYTES, (off_t)moff),
                     (ssize_t)(mlen + SST_BLOCK_TRAILER_BYTES));
    m[50] = encoding;
    coding_put_be32(m + mlen + 1, crc32c_mask(crc32c_value(m, mlen + 1)));
    assert_int_equal(pwrite(fd, m, mlen + SST_BLOCK_TRAILER_BYTES, (off_t)moff),
                     (ssize_t)(mlen + SST_BLOCK_TRAILER_BYTES));
    free(m);
    ft[40] = 1;
    coding_put_be32(ft + 36, crc32c_mask(crc32c_extend(crc32c_value(ft, 36), ft + 40, 8)));
    assert_int_equal(pwrite(fd, ft, sizeof ft, foff), (ssize_t)sizeof ft);
    assert_int_equal(pwrite(fd, &one, 1, 4), 1);
    close(fd);
}

static void test_sst_version1_files_are_read_without_deltas_whatever_their_encoding(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(20, 3, 3, &n);
    char path[600];
    snprintf(path, sizeof path, "%s/v1.sst", dir);
    struct sst_writer_options o = {.blocksize = 1024, .encoding = WC_ENCODING_NONE};
    write_file(path, v, n, &o, NULL);
    make_version1(path, WC_ENCODING_FAST_DIFF);
    struct ct_err err = {0};
    struct sst *f = NULL;
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
    assert_int_equal(sst_get_meta(f)->encoding, WC_ENCODING_FAST_DIFF);
    check_scan_both_ways(f, v, n);
    check_seeks(f, v, n);
    sst_unref(f);
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_round_trips_every_compression_bloom_and_blocksize(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(60, 5, 3, &n);
    const uint32_t sizes[] = {64, 1024, 4096, 65536, 16777216};
    const enum wc_compression comps[] = {WC_COMPRESSION_NONE, WC_COMPRESSION_SNAPPY,
                                         WC_COMPRESSION_GZ};
    struct block_cache *cache = NULL;
    struct ct_err err = {0};
    assert_int_equal(block_cache_new(1 << 20, &cache, &err), CT_OK);
    int id = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t c = 0; c < 3; c++) {
            char path[600];
            snprintf(path, sizeof path, "%s/f%d.sst", dir, id);
            struct sst_writer_options o = {.blocksize = sizes[s],
                                           .compression = comps[c],
                                           .bloom = (enum wc_bloom)(id % 3),
                                           .expected_cells = n};
            struct sst_meta meta;
            write_file(path, v, n, &o, &meta);
            assert_int_equal(meta.cells, n);
            assert_int_equal(meta.max_seq, n);
            assert_true(meta.min_ts_ms == 1000000 - 20);
            assert_true(meta.max_ts_ms == 1000000);
            assert_int_equal(meta.delete_markers, n / 7);
            struct stat sb;
            assert_int_equal(stat(path, &sb), 0);
            assert_int_equal(meta.file_bytes, (uint64_t)sb.st_size);
            struct sst *f = NULL;
            struct sst_read_options ro = {.blockcache = id % 2 == 0};
            assert_int_equal(sst_open(path, (uint64_t)id, cache, &ro, &f, &err), CT_OK);
            const struct sst_meta *m = sst_get_meta(f);
            assert_int_equal(m->cells, n);
            assert_int_equal(m->first_row_len, v[0].row_len);
            assert_memory_equal(m->first_row, v[0].row, v[0].row_len);
            assert_memory_equal(m->last_row, v[n - 1].row, v[n - 1].row_len);
            check_scan_both_ways(f, v, n);
            for (size_t i = 0; i < n; i += 11)
                assert_true(sst_may_contain_row(f, v[i].row, v[i].row_len));
            for (size_t i = 0; i < n; i += 11)
                assert_true(
                    sst_may_contain_rowcol(f, v[i].row, v[i].row_len, v[i].qual, v[i].qual_len));
            uint8_t mid[WC_MAX_ROW_BYTES];
            size_t ml = sst_middle_row(f, mid);
            assert_true(ml > 0);
            sst_unref(f);
            id++;
        }
    struct block_cache_stats st;
    block_cache_get_stats(cache, &st);
    assert_true(st.misses > 0);
    block_cache_free(cache);
    free_cells(v, n);
    ctest_rmdir(dir);
}

static size_t ref_lower_bound(const struct tcell *v, size_t n, const struct cell *t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        struct cell c = as_cell(&v[mid]);
        if (cell_compare(&c, t) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t ref_upper_bound(const struct tcell *v, size_t n, const struct cell *t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        struct cell c = as_cell(&v[mid]);
        if (cell_compare(&c, t) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void check_seek(struct sst_iter *it, const struct tcell *v, size_t n, const struct cell *t)
{
    struct ct_err err = {0};
    size_t lb = ref_lower_bound(v, n, t);
    assert_int_equal(sst_iter_seek(it, t, &err), CT_OK);
    if (lb == n) {
        assert_false(sst_iter_valid(it));
    } else {
        assert_true(sst_iter_valid(it));
        struct cell c;
        sst_iter_cell(it, &c);
        assert_cell_eq(&c, &v[lb]);
        /* a few steps either way from here */
        for (size_t k = 1; k <= 3; k++) {
            assert_int_equal(sst_iter_next(it, &err), CT_OK);
            if (lb + k >= n) {
                assert_false(sst_iter_valid(it));
                break;
            }
            sst_iter_cell(it, &c);
            assert_cell_eq(&c, &v[lb + k]);
        }
    }
    size_t ub = ref_upper_bound(v, n, t);
    assert_int_equal(sst_iter_seek_for_prev(it, t, &err), CT_OK);
    if (ub == 0) {
        assert_false(sst_iter_valid(it));
    } else {
        assert_true(sst_iter_valid(it));
        struct cell c;
        sst_iter_cell(it, &c);
        assert_cell_eq(&c, &v[ub - 1]);
        for (size_t k = 1; k <= 3; k++) {
            assert_int_equal(sst_iter_prev(it, &err), CT_OK);
            if (ub - 1 < k) {
                assert_false(sst_iter_valid(it));
                break;
            }
            sst_iter_cell(it, &c);
            assert_cell_eq(&c, &v[ub - 1 - k]);
        }
    }
}

static void test_sst_seek_and_seek_for_prev_match_sorted_array_exhaustively(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(40, 4, 3, &n);
    struct ct_err err = {0};
    const uint32_t sizes[] = {64, 700, 65536};
    for (size_t s = 0; s < 3; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/s%zu.sst", dir, s);
        struct sst_writer_options o = {.blocksize = sizes[s],
                                       .compression = (enum wc_compression)(s % 3),
                                       .bloom = WC_BLOOM_ROW};
        write_file(path, v, n, &o, NULL);
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
        struct sst_iter *it = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        sst_unref(f); /* the iterator keeps it alive */
        for (size_t i = 0; i < n; i++) {
            struct cell t = as_cell(&v[i]);
            check_seek(it, v, n, &t); /* exact */
            t.ts_ms += 5;             /* between versions: newer than v[i] */
            check_seek(it, v, n, &t);
            t.ts_ms -= 10;
            check_seek(it, v, n, &t);
            t.ts_ms += 5;
            t.seq += 1; /* same key, newer seq: sorts just before */
            check_seek(it, v, n, &t);
            t.seq -= 2;
            check_seek(it, v, n, &t);
        }
        /* rows between, before and after */
        for (size_t r = 0; r <= 130; r++) {
            uint8_t row[16];
            int rl = snprintf((char *)row, sizeof row, "row%06zu", r);
            struct cell t = {.row = row,
                             .row_len = (uint32_t)rl,
                             .ts_ms = INT64_MAX,
                             .type = 255,
                             .seq = UINT64_MAX};
            check_seek(it, v, n, &t);
            t.ts_ms = INT64_MIN;
            t.type = 0;
            t.seq = 0;
            t.qual = (const uint8_t *)"\xff";
            t.qual_len = 1;
            check_seek(it, v, n, &t);
        }
        struct cell lo = {.row = (const uint8_t *)"", .row_len = 0, .ts_ms = INT64_MAX};
        check_seek(it, v, n, &lo);
        struct cell hi = {.row = (const uint8_t *)"zzz", .row_len = 3};
        check_seek(it, v, n, &hi);
        sst_iter_free(it);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

static int tcell_cmp(const void *a, const void *b)
{
    struct cell x = as_cell(a), y = as_cell(b);
    return cell_compare(&x, &y);
}

/* Rows that stress the 8-byte row windows of the index and in-block searches: zero and 0xff
 * bytes, rows that are prefixes of others ("a" < "a\0" < "a\0\0"), rows shorter and longer
 * than a block's common prefix, and a 12-byte shared prefix. Every cell, every row start and
 * every row end is sought both ways, from a fresh iterator and from a positioned one, in
 * several block sizes; answers are checked against the sorted array. */
static void test_sst_seeks_with_prefix_rows_and_zero_bytes_match_sorted_array(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    static const uint8_t alpha[4] = {0x00, 0x01, 'a', 0xff};
    size_t cap = 2 * (1 + 4 + 16 + 64) * 2, n = 0;
    struct tcell *v = calloc(cap, sizeof(*v));
    assert_non_null(v);
    uint64_t seq = 1;
    for (int pre = 0; pre < 2; pre++)
        for (int len = 0; len <= 3; len++)
            for (int code = 0; code < (1 << (2 * len)); code++) {
                uint8_t row[16];
                size_t rl = 0;
                if (pre)
                    for (; rl < 12; rl++)
                        row[rl] = 'p';
                for (int k = 0; k < len; k++)
                    row[rl++] = alpha[(code >> (2 * k)) & 3];
                if (rl == 0)
                    continue;
                for (int ver = 0; ver < 1 + (code % 2); ver++) {
                    struct tcell *t = &v[n++];
                    memcpy(t->row, row, rl);
                    t->row_len = (uint32_t)rl;
                    t->qual[0] = 'q';
                    t->qual_len = 1;
                    t->ts = 5000 - ver * 10;
                    t->type = 4;
                    t->seq = seq++;
                    t->value_len = 3;
                    t->value = malloc(3);
                    assert_non_null(t->value);
                    memcpy(t->value, "val", 3);
                }
            }
    qsort(v, n, sizeof(*v), tcell_cmp);
    struct ct_err err = {0};
    const uint32_t sizes[] = {64, 300, 4096};
    for (size_t s = 0; s < 3; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/p%zu.sst", dir, s);
        struct sst_writer_options o = {.blocksize = sizes[s], .bloom = WC_BLOOM_ROW};
        write_file(path, v, n, &o, NULL);
        struct block_cache *bc = NULL;
        assert_int_equal(block_cache_new(1u << 20, &bc, &err), CT_OK);
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, bc, NULL, &f, &err), CT_OK);
        struct sst_iter *it = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        for (size_t i = 0; i < n; i++) {
            struct cell t = as_cell(&v[i]);
            struct cell starts[3] = {t, t, t};
            starts[1].qual_len = 0; /* the row's first possible cell */
            starts[1].ts_ms = INT64_MAX;
            starts[1].type = 255;
            starts[1].seq = UINT64_MAX;
            starts[2].qual = (const uint8_t *)"\xff\xff"; /* after the row's cells */
            starts[2].qual_len = 2;
            for (int k = 0; k < 3; k++) {
                check_seek(it, v, n, &starts[k]);
                struct sst_iter *fresh = NULL;
                assert_int_equal(sst_iter_new(f, &fresh, &err), CT_OK);
                check_seek(fresh, v, n, &starts[k]);
                sst_iter_free(fresh);
            }
        }
        sst_iter_free(it);
        sst_unref(f);
        block_cache_free(bc);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

/* sst_iter_row_start and sst_iter_prev_of (reversed scans) against the sorted array, from every
 * cell, with rows spanning several blocks (64-byte blocks) and not (64 KiB). */
static void test_sst_row_start_and_prev_of_match_sorted_array(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(30, 4, 3, &n);
    struct ct_err err = {0};
    const uint32_t sizes[] = {64, 700, 65536};
    for (size_t s = 0; s < 3; s++) {
        char path[600];
        snprintf(path, sizeof path, "%s/r%zu.sst", dir, s);
        struct sst_writer_options o = {.blocksize = sizes[s], .bloom = WC_BLOOM_ROW};
        write_file(path, v, n, &o, NULL);
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
        struct sst_iter *it = NULL, *other = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        assert_int_equal(sst_iter_new(f, &other, &err), CT_OK);
        for (size_t i = 0; i < n; i++) {
            struct cell t = as_cell(&v[i]), c;
            assert_int_equal(sst_iter_seek(it, &t, &err), CT_OK);
            assert_true(sst_iter_valid(it));
            struct sst_pos pos;
            sst_iter_tell(it, &pos);
            /* the cell before i, reached from another iterator somewhere else */
            assert_int_equal(sst_iter_seek_last(other, &err), CT_OK);
            assert_int_equal(sst_iter_prev_of(other, &pos, &err), CT_OK);
            if (i == 0) {
                assert_false(sst_iter_valid(other));
            } else {
                assert_true(sst_iter_valid(other));
                sst_iter_cell(other, &c);
                assert_cell_eq(&c, &v[i - 1]);
            }
            /* the first cell of i's row */
            size_t first = i;
            while (first > 0 && v[first - 1].row_len == v[i].row_len &&
                   memcmp(v[first - 1].row, v[i].row, v[i].row_len) == 0)
                first--;
            assert_int_equal(sst_iter_row_start(it, &err), CT_OK);
            assert_true(sst_iter_valid(it));
            sst_iter_cell(it, &c);
            assert_cell_eq(&c, &v[first]);
            assert_int_equal(sst_iter_next(it, &err), CT_OK); /* and on from there */
            if (first + 1 < n) {
                sst_iter_cell(it, &c);
                assert_cell_eq(&c, &v[first + 1]);
            }
        }
        sst_iter_free(it);
        sst_iter_free(other);
        sst_unref(f);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

/* An iterator told not to fill the cache reads every cell right and leaves the cache empty, but
 * still uses blocks already cached; a normal iterator fills it. */
static void test_sst_iterator_without_cache_fill_leaves_the_cache_alone(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(40, 4, 3, &n);
    struct ct_err err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/nf.sst", dir);
    struct sst_writer_options o = {.blocksize = 700, .bloom = WC_BLOOM_ROW};
    write_file(path, v, n, &o, NULL);
    struct block_cache *bc = NULL;
    assert_int_equal(block_cache_new(4u << 20, &bc, &err), CT_OK);
    struct sst *f = NULL;
    assert_int_equal(sst_open(path, 1, bc, NULL, &f, &err), CT_OK);
    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
    sst_iter_set_fill_cache(it, false);
    size_t i = 0;
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
    for (; sst_iter_valid(it); i++) {
        struct cell c;
        sst_iter_cell(it, &c);
        assert_cell_eq(&c, &v[i]);
        assert_int_equal(sst_iter_next(it, &err), CT_OK);
    }
    assert_int_equal(i, n);
    struct block_cache_stats st;
    block_cache_get_stats(bc, &st);
    assert_int_equal(st.bytes, 0);
    check_scan_both_ways(f, v, n); /* a normal iterator fills it */
    block_cache_get_stats(bc, &st);
    assert_true(st.bytes > 0);
    uint64_t hits = st.hits;
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK); /* and the other one hits */
    block_cache_get_stats(bc, &st);
    assert_true(st.hits > hits);
    sst_iter_free(it);
    sst_unref(f);
    block_cache_free(bc);
    free_cells(v, n);
    ctest_rmdir(dir);
}

/* Forward walks with sst_iter_next_cell look the next block up in the cache before reaching it
 * (read-ahead) and adopt that reference on entering it: every cell must still be exactly the
 * sorted array's, whatever moves come between (seeks to other blocks or back into the same one
 * drop or keep the looked-up block), with a cache big enough to hit and one so small that the
 * looked-up blocks are evicted while held. */
static void test_sst_next_cell_read_ahead_keeps_every_move_exact(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    size_t n = 0;
    struct tcell *v = make_cells(500, 2, 2, &n); /* 2,000 cells, ~50 per 4 KiB block */
    struct ct_err err = {0};
    char path[600];
    snprintf(path, sizeof path, "%s/ra.sst", dir);
    struct sst_writer_options o = {.blocksize = 4096, .bloom = WC_BLOOM_ROW};
    write_file(path, v, n, &o, NULL);
    const size_t caps[] = {8u << 20, 6000};
    for (size_t ci = 0; ci < 2; ci++) {
        struct block_cache *bc = NULL;
        assert_int_equal(block_cache_new(caps[ci], &bc, &err), CT_OK);
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, bc, NULL, &f, &err), CT_OK);
        struct sst_iter *it = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        for (int pass = 0; pass < 2; pass++) { /* the second pass of the big cache hits */
            struct block_cache_stats st0, st1;
            block_cache_get_stats(bc, &st0);
            assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
            size_t i = 0, nsame = 0;
            bool valid = sst_iter_valid(it);
            while (valid) {
                struct cell c;
                sst_iter_cell(it, &c);
                assert_true(i < n);
                assert_cell_eq(&c, &v[i]);
                bool same = false;
                int64_t bi = it->bi;
                assert_int_equal(sst_iter_next_cell(it, &c, &valid, &same, &err), CT_OK);
                i++;
                if (valid)
                    assert_cell_eq(&c, &v[i]);
                if (valid && same) /* "same row" is never said of a new row */
                    assert_true(same_row_of(&v[i - 1], &v[i]));
                /* inside a block the flag is exact both ways, at restart points too (scan.c's
                 * row ends and sst_iter_row_start rely on it) */
                if (valid && it->bi == bi)
                    assert_int_equal(same, same_row_of(&v[i - 1], &v[i]));
                nsame += same;
            }
            assert_int_equal(i, n);
            /* 4 cells a row: every step inside a row is known without a row compare but those
             * into a new block (~50 cells a block) */
            assert_true(nsame >= n * 3 / 4 - n / 40);
            block_cache_get_stats(bc, &st1);
            if (ci == 0 && pass == 1) {
                /* every block was looked up exactly once: by the read-ahead or by the load,
                 * never by both (an adopted block is not looked up again) */
                assert_int_equal(st1.misses, st0.misses);
                assert_int_equal(st1.hits - st0.hits, st0.misses);
            }
        }
        if (ci == 0) {
            /* the read-ahead happens inside the first block, before the walk reaches the second */
            struct block_cache_stats a, b;
            assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
            block_cache_get_stats(bc, &a);
            bool valid = true;
            struct cell c;
            bool same;
            for (int k = 0; k < 24; k++)
                assert_int_equal(sst_iter_next_cell(it, &c, &valid, &same, &err), CT_OK);
            assert_cell_eq(&c, &v[24]);
            block_cache_get_stats(bc, &b);
            assert_int_equal(b.hits, a.hits + 1);
        }
        /* random seeks between runs of next_cell, forward and back, near and far */
        uint64_t rnd = 12345 + ci;
        for (int round = 0; round < 400; round++) {
            rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(rnd >> 33) % n;
            struct cell t = as_cell(&v[at]);
            assert_int_equal(sst_iter_seek(it, &t, &err), CT_OK);
            assert_true(sst_iter_valid(it));
            size_t steps = (size_t)(rnd >> 20) % 120, i = at;
            bool valid = true;
            for (size_t k = 0; k < steps && valid; k++) {
                struct cell c;
                bool same = false;
                assert_int_equal(sst_iter_next_cell(it, &c, &valid, &same, &err), CT_OK);
                i++;
                assert_int_equal(valid, i < n);
                if (valid)
                    assert_cell_eq(&c, &v[i]);
                if (valid && same)
                    assert_true(same_row_of(&v[i - 1], &v[i]));
            }
        }
        sst_iter_free(it);
        sst_unref(f);
        block_cache_free(bc);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_cell_larger_than_block_gets_its_own_block(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/big.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(5, 1, 1, &n);
    free(v[2].value);
    v[2].value_len = 300000;
    v[2].value = malloc(v[2].value_len);
    for (uint32_t i = 0; i < v[2].value_len; i++)
        v[2].value[i] = (uint8_t)(i * 7);
    for (int c = 0; c < 3; c++) {
        struct sst_writer_options o = {.blocksize = 1024, .compression = (enum wc_compression)c};
        unlink(path);
        write_file(path, v, n, &o, NULL);
        struct ct_err err = {0};
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
        check_scan_both_ways(f, v, n);
        sst_unref(f);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_empty_file_has_no_cells(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/empty.sst", dir);
    struct sst_writer_options o = {.blocksize = 4096, .bloom = WC_BLOOM_ROW};
    struct sst_meta meta;
    write_file(path, NULL, 0, &o, &meta);
    assert_int_equal(meta.cells, 0);
    struct ct_err err = {0};
    struct sst *f = NULL;
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
    assert_false(sst_iter_valid(it));
    assert_int_equal(sst_iter_seek_last(it, &err), CT_OK);
    assert_false(sst_iter_valid(it));
    uint8_t buf[WC_MAX_ROW_BYTES];
    assert_int_equal(sst_middle_row(f, buf), 0);
    assert_false(sst_may_contain_row(f, (const uint8_t *)"x", 1));
    sst_iter_free(it);
    sst_unref(f);
    ctest_rmdir(dir);
}

static void test_sst_writer_rejects_out_of_order_cells(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/x.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(3, 1, 1, &n);
    struct ct_err err = {0};
    struct sst_writer *w = NULL;
    struct sst_writer_options o = {.blocksize = 4096};
    assert_int_equal(sst_writer_open(path, &o, &w, &err), CT_OK);
    struct cell c1 = as_cell(&v[1]), c0 = as_cell(&v[0]);
    assert_int_equal(sst_writer_add(w, &c1, &err), CT_OK);
    assert_int_equal(sst_writer_add(w, &c0, &err), CT_EINVAL);
    assert_non_null(strstr(err.msg, "out of order"));
    assert_int_equal(sst_writer_add(w, &c1, &err), CT_EINVAL); /* duplicates too */
    sst_writer_abort(w);
    assert_int_equal(access(path, F_OK), -1);
    /* an existing file is not overwritten */
    write_file(path, v, n, &o, NULL);
    assert_int_equal(sst_writer_open(path, &o, &w, &err), CT_EEXIST);
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x41;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static void test_sst_flipped_data_byte_is_corruption_naming_file_and_offset(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/d.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(50, 2, 1, &n);
    for (int c = 0; c < 3; c++) {
        unlink(path);
        struct sst_writer_options o = {.blocksize = 1024, .compression = (enum wc_compression)c};
        write_file(path, v, n, &o, NULL);
        flip_byte(path, SST_HEADER_BYTES + 20);
        struct ct_err err = {0};
        struct sst *f = NULL;
        assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_OK);
        struct sst_iter *it = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        assert_int_equal(sst_iter_seek_first(it, &err), CT_ECORRUPT);
        assert_non_null(strstr(err.msg, path));
        assert_non_null(strstr(err.msg, "offset 8"));
        assert_non_null(strstr(err.msg, "checksum"));
        /* the other blocks still read */
        struct cell t = as_cell(&v[n - 1]);
        assert_int_equal(sst_iter_seek(it, &t, &err), CT_OK);
        assert_true(sst_iter_valid(it));
        sst_iter_free(it);
        sst_unref(f);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_damaged_index_footer_or_truncation_fails_open(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/i.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(50, 2, 1, &n);
    struct sst_writer_options o = {.blocksize = 1024, .bloom = WC_BLOOM_ROW};
    struct ct_err err = {0};
    struct sst *f = NULL;

    /* index: its offset is in the footer */
    write_file(path, v, n, &o, NULL);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    int fd = open(path, O_RDONLY);
    uint8_t ft[SST_FOOTER_BYTES];
    assert_int_equal(pread(fd, ft, sizeof ft, sb.st_size - SST_FOOTER_BYTES), SST_FOOTER_BYTES);
    close(fd);
    uint64_t index_off = 0;
    for (int i = 0; i < 8; i++)
        index_off = index_off << 8 | ft[i];
    flip_byte(path, (off_t)index_off + 3);
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "index block"));
    char offs[64];
    snprintf(offs, sizeof offs, "offset %llu", (unsigned long long)index_off);
    assert_non_null(strstr(err.msg, offs));

    /* footer */
    unlink(path);
    write_file(path, v, n, &o, NULL);
    flip_byte(path, sb.st_size - SST_FOOTER_BYTES + 2);
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "footer"));
    assert_non_null(strstr(err.msg, path));

    /* truncated: the footer is gone */
    unlink(path);
    write_file(path, v, n, &o, NULL);
    assert_int_equal(truncate(path, sb.st_size - 100), 0);
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(truncate(path, 10), 0);
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "too short"));
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_unknown_version_is_rejected_by_name(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/v.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(5, 1, 1, &n);
    struct sst_writer_options o = {.blocksize = 1024};
    write_file(path, v, n, &o, NULL);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    int fd = open(path, O_RDWR);
    uint8_t ver = 7;
    assert_int_equal(pwrite(fd, &ver, 1, sb.st_size - SST_FOOTER_BYTES + 40), 1);
    close(fd);
    struct ct_err err = {0};
    struct sst *f = NULL;
    assert_int_equal(sst_open(path, 1, NULL, NULL, &f, &err), CT_ECORRUPT);
    assert_non_null(strstr(err.msg, "unsupported block file version 7"));
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "reads <= 2"));
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_cached_blocks_survive_clear_and_obsolete_file_is_deleted(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/c.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(100, 2, 1, &n);
    struct sst_writer_options o = {.blocksize = 1024, .compression = WC_COMPRESSION_SNAPPY};
    write_file(path, v, n, &o, NULL);
    struct ct_err err = {0};
    struct block_cache *cache = NULL;
    assert_int_equal(block_cache_new(8 << 20, &cache, &err), CT_OK);
    struct sst *f = NULL;
    struct sst_read_options ro = {.blockcache = true};
    assert_int_equal(sst_open(path, 42, cache, &ro, &f, &err), CT_OK);
    check_scan_both_ways(f, v, n);
    struct block_cache_stats st;
    block_cache_get_stats(cache, &st);
    assert_true(st.bytes > 0);
    uint64_t misses = st.misses;
    check_scan_both_ways(f, v, n);
    block_cache_get_stats(cache, &st);
    assert_int_equal(st.misses, misses); /* every block came from the cache */
    assert_true(st.hits > 0);

    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK);
    block_cache_clear(cache);
    block_cache_get_stats(cache, &st);
    assert_int_equal(st.bytes, 0);
    struct cell c;
    sst_iter_cell(it, &c); /* still valid: the iterator holds the block */
    assert_cell_eq(&c, &v[0]);
    sst_mark_obsolete(f);
    sst_unref(f);
    assert_int_equal(access(path, F_OK), 0); /* the iterator still holds it */
    sst_iter_free(it);
    assert_int_equal(access(path, F_OK), -1);
    block_cache_free(cache);
    free_cells(v, n);
    ctest_rmdir(dir);
}

/* Flips random bytes anywhere in the file (every compression and bloom kind): opening and
 * reading either fail with CT_ECORRUPT naming the file, or return exactly the original cells
 * (only the header's reserved bytes are not checksummed). Never a crash: the sanitizer build
 * checks the bounds. */
static void test_sst_random_damage_never_crashes(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/r.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(30, 3, 2, &n);
    unsigned seed = 7;
    for (int round = 0; round < 150; round++) {
        unlink(path);
        struct sst_writer_options o = {.blocksize = 512,
                                       .compression = (enum wc_compression)(round % 3),
                                       .bloom = (enum wc_bloom)(round % 3)};
        write_file(path, v, n, &o, NULL);
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        int flips = 1 + rand_r(&seed) % 3;
        for (int k = 0; k < flips; k++)
            flip_byte(path, (off_t)((unsigned)rand_r(&seed) % (unsigned)sb.st_size));
        struct ct_err err = {0};
        struct sst *f = NULL;
        int rc = sst_open(path, 1, NULL, NULL, &f, &err);
        if (rc != CT_OK) {
            assert_int_equal(rc, CT_ECORRUPT);
            assert_non_null(strstr(err.msg, path));
            continue;
        }
        struct sst_iter *it = NULL;
        assert_int_equal(sst_iter_new(f, &it, &err), CT_OK);
        size_t seen = 0;
        rc = sst_iter_seek_first(it, &err);
        while (rc == CT_OK && sst_iter_valid(it)) {
            struct cell c;
            sst_iter_cell(it, &c);
            assert_true(seen < n);
            assert_cell_eq(&c, &v[seen]);
            seen++;
            rc = sst_iter_next(it, &err);
        }
        if (rc != CT_OK) {
            assert_int_equal(rc, CT_ECORRUPT);
            assert_non_null(strstr(err.msg, path));
        }
        sst_iter_free(it);
        sst_unref(f);
    }
    free_cells(v, n);
    ctest_rmdir(dir);
}

static void test_sst_write_and_read_errors_name_the_file(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/e.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(200, 2, 1, &n);
    struct ct_err err = {0};
    struct sst_writer *w = NULL;
    struct sst_writer_options o = {.blocksize = 1024};
    /* ENOSPC on the first write of the file: reported by add or finish, file removed */
    struct eio_fault f = {
        .op = EIO_OP_WRITE, .nth = 1, .errnum = ENOSPC, .repeat = true, .path_substr = "e.sst"};
    eio_fault_set(&f);
    assert_int_equal(sst_writer_open(path, &o, &w, &err), CT_OK);
    int rc = CT_OK;
    for (size_t i = 0; i < n && rc == CT_OK; i++) {
        struct cell c = as_cell(&v[i]);
        rc = sst_writer_add(w, &c, &err);
    }
    if (rc == CT_OK)
        rc = sst_writer_finish(w, NULL, &err);
    else
        sst_writer_abort(w);
    eio_fault_clear();
    assert_int_equal(rc, CT_EIO);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "No space left on device"));
    assert_int_equal(access(path, F_OK), -1);

    /* EIO reading a data block */
    write_file(path, v, n, &o, NULL);
    struct sst *file = NULL;
    assert_int_equal(sst_open(path, 1, NULL, NULL, &file, &err), CT_OK);
    struct sst_iter *it = NULL;
    assert_int_equal(sst_iter_new(file, &it, &err), CT_OK);
    struct eio_fault rf = {.op = EIO_OP_READ, .nth = 1, .errnum = EIO};
    eio_fault_set(&rf);
    assert_int_equal(sst_iter_seek_first(it, &err), CT_EIO);
    eio_fault_clear();
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "offset 8"));
    assert_int_equal(sst_iter_seek_first(it, &err), CT_OK); /* reads are not sticky */
    assert_true(sst_iter_valid(it));
    sst_iter_free(it);
    sst_unref(file);
    free_cells(v, n);
    ctest_rmdir(dir);
}

struct reader_arg {
    struct sst *f;
    const struct tcell *v;
    size_t n;
    unsigned seed;
    int failures;
};

static void *reader_main(void *p)
{
    struct reader_arg *a = p;
    struct ct_err err = {0};
    struct sst_iter *it = NULL;
    if (sst_iter_new(a->f, &it, &err) != CT_OK) {
        a->failures++;
        return NULL;
    }
    for (int k = 0; k < 3000; k++) {
        size_t i = (size_t)rand_r(&a->seed) % a->n;
        struct cell t = as_cell(&a->v[i]), c;
        if (sst_iter_seek(it, &t, &err) != CT_OK || !sst_iter_valid(it)) {
            a->failures++;
            continue;
        }
        sst_iter_cell(it, &c);
        if (cell_compare(&c, &t) != 0 || c.value_len != a->v[i].value_len ||
            (c.value_len && memcmp(c.value, a->v[i].value, c.value_len) != 0))
            a->failures++;
        if (sst_iter_prev(it, &err) != CT_OK)
            a->failures++;
        if (i > 0 && (!sst_iter_valid(it) || (sst_iter_cell(it, &c), c.seq != a->v[i - 1].seq)))
            a->failures++;
    }
    sst_iter_free(it);
    return NULL;
}

static void test_sst_concurrent_readers_share_a_small_cache(void **state)
{
    (void)state;
    char *dir = ctest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/m.sst", dir);
    size_t n = 0;
    struct tcell *v = make_cells(200, 4, 2, &n);
    struct sst_writer_options o = {.blocksize = 1024, .compression = WC_COMPRESSION_SNAPPY};
    write_file(path, v, n, &o, NULL);
    struct ct_err err = {0};
    struct block_cache *cache = NULL;
    assert_int_equal(block_cache_new(16 << 10, &cache, &err), CT_OK); /* a few blocks only */
    struct sst *f = NULL;
    struct sst_read_options ro = {.blockcache = true};
    assert_int_equal(sst_open(path, 9, cache, &ro, &f, &err), CT_OK);
    pthread_t th[4];
    struct reader_arg a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (struct reader_arg){f, v, n, (unsigned)i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, reader_main, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].failures, 0);
    }
    struct block_cache_stats st;
    block_cache_get_stats(cache, &st);
    assert_true(st.evictions > 0);
    assert_true(st.bytes <= st.capacity_bytes);
    sst_unref(f);
    block_cache_free(cache);
    free_cells(v, n);
    ctest_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sst_round_trips_every_compression_bloom_and_blocksize),
        cmocka_unit_test(test_sst_every_data_block_encoding_round_trips_and_diff_is_smaller),
        cmocka_unit_test(test_sst_version1_files_are_read_without_deltas_whatever_their_encoding),
        cmocka_unit_test(test_sst_seek_and_seek_for_prev_match_sorted_array_exhaustively),
        cmocka_unit_test(test_sst_seeks_with_prefix_rows_and_zero_bytes_match_sorted_array),
        cmocka_unit_test(test_sst_row_start_and_prev_of_match_sorted_array),
        cmocka_unit_test(test_sst_iterator_without_cache_fill_leaves_the_cache_alone),
        cmocka_unit_test(test_sst_next_cell_read_ahead_keeps_every_move_exact),
        cmocka_unit_test(test_sst_cell_larger_than_block_gets_its_own_block),
        cmocka_unit_test(test_sst_empty_file_has_no_cells),
        cmocka_unit_test(test_sst_writer_rejects_out_of_order_cells),
        cmocka_unit_test(test_sst_flipped_data_byte_is_corruption_naming_file_and_offset),
        cmocka_unit_test(test_sst_damaged_index_footer_or_truncation_fails_open),
        cmocka_unit_test(test_sst_unknown_version_is_rejected_by_name),
        cmocka_unit_test(test_sst_cached_blocks_survive_clear_and_obsolete_file_is_deleted),
        cmocka_unit_test(test_sst_concurrent_readers_share_a_small_cache),
        cmocka_unit_test(test_sst_random_damage_never_crashes),
        cmocka_unit_test(test_sst_write_and_read_errors_name_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
