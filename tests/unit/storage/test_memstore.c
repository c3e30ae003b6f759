/* test_memstore.c - the memstore skiplist: cell order of docs/storage-contract.md, "Cell order"
 * (with seq), seeks in both directions, readers iterating while a writer inserts, sequential
 * inserts through the writer's finger mixed with inserts in the middle, and the writer's row hints
 * (a cell after the greatest of its row linked without a search) under random rows, columns and
 * versions, and backward searches from the iterator's last search path against a reference. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/engine/memstore.h"
#include "storage/wc.h"
#include "tests/lib/ctest.h"

static struct cell mk(const char *row, const char *qual, int64_t ts, uint8_t type, uint64_t seq,
                      const char *val)
{
    struct cell c = {(const uint8_t *)row,
                     (const uint8_t *)qual,
                     (const uint8_t *)val,
                     (uint32_t)strlen(row),
                     (uint32_t)strlen(qual),
                     (uint32_t)strlen(val),
                     type,
                     ts,
                     seq};
    return c;
}

static void test_memstore_iterates_in_spec_order(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 0, &err), CT_OK);
    /* inserted shuffled; expected order listed below */
    struct cell in[] = {
        mk("b", "q", 5, WC_TYPE_PUT, 1, "b5"),     mk("a", "q", 5, WC_TYPE_PUT, 2, "a5"),
        mk("a", "", 1, WC_TYPE_PUT, 3, "a-empty"), mk("a", "q", 9, WC_TYPE_PUT, 4, "a9"),
        mk("a", "q", 5, WC_TYPE_DELETE, 5, ""),    mk("a", "q", 5, WC_TYPE_PUT, 6, "a5-newer"),
        mk("ab", "a", 1, WC_TYPE_PUT, 7, "ab"),    mk("a", "q", 5, WC_TYPE_DELETE_COLUMN, 8, ""),
    };
    const char *want[] = {"a-empty", "a9", "", "", "a5-newer", "a5", "ab", "b5"};
    const uint8_t want_type[] = {WC_TYPE_PUT, WC_TYPE_PUT, WC_TYPE_DELETE_COLUMN, WC_TYPE_DELETE,
                                 WC_TYPE_PUT, WC_TYPE_PUT, WC_TYPE_PUT,           WC_TYPE_PUT};
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        assert_int_equal(memstore_add(m, &in[i], &err), CT_OK);
    assert_int_equal(memstore_count(m), 8);
    assert_int_equal(memstore_min_seq(m), 1);
    assert_int_equal(memstore_max_seq(m), 8);
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    size_t n = 0;
    for (memstore_iter_seek_first(&it); memstore_iter_valid(&it); memstore_iter_next(&it), n++) {
        const struct cell *c = memstore_iter_cell(&it);
        assert_true(n < 8);
        assert_int_equal(c->value_len, strlen(want[n]));
        assert_memory_equal(c->value, want[n], c->value_len);
        assert_int_equal(c->type, want_type[n]);
    }
    assert_int_equal(n, 8);
    /* backwards gives the reverse */
    n = 8;
    for (memstore_iter_seek_last(&it); memstore_iter_valid(&it); memstore_iter_prev(&it)) {
        n--;
        assert_int_equal(memstore_iter_cell(&it)->value_len, strlen(want[n]));
    }
    assert_int_equal(n, 0);
    /* seek: first >= target; seek_for_prev: last <= target */
    struct cell t = mk("a", "q", 6, WC_TYPE_PUT, 0, "");
    memstore_iter_seek(&it, &t);
    assert_true(memstore_iter_valid(&it));
    assert_int_equal(memstore_iter_cell(&it)->type, WC_TYPE_DELETE_COLUMN);
    memstore_iter_seek_for_prev(&it, &t);
    assert_int_equal(memstore_iter_cell(&it)->ts_ms, 9);
    struct cell exact = in[3];
    memstore_iter_seek_for_prev(&it, &exact);
    assert_int_equal(memstore_iter_cell(&it)->seq, 4);
    struct cell before = mk("A", "", 0, WC_TYPE_PUT, 0, "");
    memstore_iter_seek_for_prev(&it, &before);
    assert_false(memstore_iter_valid(&it));
    struct cell after = mk("c", "", 0, WC_TYPE_PUT, 0, "");
    memstore_iter_seek(&it, &after);
    assert_false(memstore_iter_valid(&it));
    memstore_unref(m);
}

static void test_memstore_copies_cell_bytes_and_counts_size(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 0, &err), CT_OK);
    assert_int_equal(memstore_bytes(m), 0);
    char row[8] = "row", val[600000];
    memset(val, 'v', sizeof(val));
    struct cell c = mk(row, "q", 1, WC_TYPE_PUT, 1, "");
    c.value = (const uint8_t *)val;
    c.value_len = sizeof(val); /* bigger than an arena chunk */
    assert_int_equal(memstore_add(m, &c, &err), CT_OK);
    row[0] = 'X';
    val[0] = 'X';
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    memstore_iter_seek_first(&it);
    assert_memory_equal(memstore_iter_cell(&it)->row, "row", 3);
    assert_int_equal(memstore_iter_cell(&it)->value[0], 'v');
    assert_true(memstore_bytes(m) >= sizeof(val));
    memstore_unref(m);
}

static void test_memstore_row_bloom_has_no_false_negatives(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 64 * 1024, &err), CT_OK);
    char row[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(row, sizeof(row), "row-%d", i * 2);
        struct cell c = mk(row, "q", 1, WC_TYPE_PUT, (uint64_t)i + 1, "v");
        assert_int_equal(memstore_add(m, &c, &err), CT_OK);
        assert_int_equal(memstore_add(m, &c, &err), CT_OK); /* same row again */
    }
    int fp = 0;
    for (int i = 0; i < 4000; i++) {
        snprintf(row, sizeof(row), "row-%d", i);
        bool may = memstore_may_contain_row(m, (const uint8_t *)row, strlen(row));
        if (i % 2 == 0)
            assert_true(may);
        else
            fp += may;
    }
    assert_true(fp < 200); /* ~32 bits per row: a few percent at most */
    memstore_unref(m);
    struct memstore *nb;
    assert_int_equal(memstore_new(&nb, 0, &err), CT_OK);
    assert_true(memstore_may_contain_row(nb, (const uint8_t *)"x", 1)); /* no filter */
    memstore_unref(nb);
}

#define N_WRITES 20000

struct race {
    struct memstore *m;
    atomic_int done;
    atomic_long seen_max;
    int bad;
};

static void *reader(void *arg)
{
    struct race *r = arg;
    struct memstore_iter it;
    memstore_iter_init(&it, r->m);
    while (!atomic_load(&r->done)) {
        struct cell prev = {0};
        bool have = false;
        long n = 0;
        for (memstore_iter_seek_first(&it); memstore_iter_valid(&it); memstore_iter_next(&it)) {
            const struct cell *c = memstore_iter_cell(&it);
            if (have && cell_compare(&prev, c) >= 0)
                r->bad++;
            /* a linked cell is complete: its value names its row */
            if (c->value_len != c->row_len || memcmp(c->value, c->row, c->row_len) != 0)
                r->bad++;
            prev = *c;
            have = true;
            n++;
        }
        if (n > atomic_load(&r->seen_max))
            atomic_store(&r->seen_max, n);
    }
    return NULL;
}

static void test_memstore_readers_run_while_a_writer_inserts(void **state)
{
    (void)state;
    struct ct_err err;
    struct race r = {0};
    assert_int_equal(memstore_new(&r.m, 4096, &err), CT_OK);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, reader, &r), 0);
    uint32_t x = 12345;
    for (int i = 0; i < N_WRITES; i++) {
        x = x * 1103515245u + 12345u;
        char row[16];
        snprintf(row, sizeof(row), "r%08u", x % 1000000u);
        struct cell c = mk(row, "q", i, WC_TYPE_PUT, (uint64_t)i + 1, row);
        assert_int_equal(memstore_add(r.m, &c, &err), CT_OK);
    }
    atomic_store(&r.done, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(r.bad, 0);
    assert_int_equal(memstore_count(r.m), N_WRITES);
    memstore_unref(r.m);
}

/* Sequential inserts take the writer's finger (no search); mixing them with inserts in the
 * middle, newer versions of the last cell and rows longer than the 16-byte integer prefix must
 * keep the order, every seek and both directions exact. */
static void test_memstore_sequential_and_mixed_inserts_keep_order(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 4096, &err), CT_OK);
    enum {
        N = 3000
    };
    static char rows[N][40];
    uint64_t seq = 1;
    /* even keys ascending (appends), every 7th followed by a newer version of itself, then the
     * odd keys (inserts in the middle), then more appends past the end */
    for (int i = 0; i < N; i += 2) {
        snprintf(rows[i], sizeof rows[i], "prefix-longer-than-16-%08d", i);
        struct cell c = mk(rows[i], "q", 10, WC_TYPE_PUT, seq++, "v");
        assert_int_equal(memstore_add(m, &c, &err), CT_OK);
        if (i % 7 == 0) {
            struct cell c2 = mk(rows[i], "q", 5, WC_TYPE_PUT, seq++, "old"); /* sorts after */
            assert_int_equal(memstore_add(m, &c2, &err), CT_OK);
        }
    }
    for (int i = 1; i < N; i += 2) {
        snprintf(rows[i], sizeof rows[i], "prefix-longer-than-16-%08d", i);
        struct cell c = mk(rows[i], "q", 10, WC_TYPE_PUT, seq++, "v");
        assert_int_equal(memstore_add(m, &c, &err), CT_OK);
    }
    char tail[N / 2][40];
    for (int i = 0; i < N / 2; i++) {
        snprintf(tail[i], sizeof tail[i], "z%06d", i);
        struct cell c = mk(tail[i], "q", 10, WC_TYPE_PUT, seq++, "t");
        assert_int_equal(memstore_add(m, &c, &err), CT_OK);
    }
    size_t want = N + (N / 2 + 6) / 7 + N / 2;
    assert_int_equal(memstore_count(m), want);
    assert_true(memstore_links_ordered(m));
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    size_t n = 0;
    const struct cell *prev = NULL;
    for (memstore_iter_seek_first(&it); memstore_iter_valid(&it); memstore_iter_next(&it), n++) {
        const struct cell *c = memstore_iter_cell(&it);
        if (prev)
            assert_true(cell_compare(prev, c) < 0);
        prev = c;
    }
    assert_int_equal(n, want);
    n = 0;
    for (memstore_iter_seek_last(&it); memstore_iter_valid(&it); memstore_iter_prev(&it))
        n++;
    assert_int_equal(n, want);
    for (int i = 0; i < N; i++) {
        struct cell t = mk(rows[i], "q", 10, WC_TYPE_PUT, UINT64_MAX, "");
        memstore_iter_seek(&it, &t);
        assert_true(memstore_iter_valid(&it));
        const struct cell *c = memstore_iter_cell(&it);
        assert_int_equal(c->row_len, strlen(rows[i]));
        assert_memory_equal(c->row, rows[i], c->row_len);
        assert_int_equal(c->ts_ms, 10);
    }
    for (int i = 0; i < N / 2; i++) {
        struct cell t = mk(tail[i], "q", 10, WC_TYPE_PUT, 0, "");
        memstore_iter_seek_for_prev(&it, &t);
        assert_true(memstore_iter_valid(&it));
        assert_memory_equal(memstore_iter_cell(&it)->row, tail[i], strlen(tail[i]));
    }
    memstore_unref(m);
}

/* The time-series pattern: rounds over the same rows in ascending order, each round adding one
 * column after the row's earlier ones (every insert lands just after the previous insert's row,
 * found from the writer's finger), with random inserts between rounds (searched from the head,
 * moving the finger backwards). The order, the count and a seek to every cell stay exact. */
static void test_memstore_rounds_of_sorted_inserts_keep_order(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 4096, &err), CT_OK);
    enum {
        ROWS = 400,
        ROUNDS = 24,
        RANDOM = 50
    };
    static char rows[ROWS][48], quals[ROUNDS + 1][16];
    for (int i = 0; i < ROWS; i++)
        snprintf(rows[i], sizeof rows[i], "salt%02d-metric-hour-host%06d", i * 7 / ROWS, i * 13);
    for (int k = 0; k <= ROUNDS; k++)
        snprintf(quals[k], sizeof quals[k], "q%03d", k);
    uint64_t seq = 1;
    unsigned r = 12345;
    size_t want = 0;
    for (int k = 0; k < ROUNDS; k++) {
        for (int i = 0; i < ROWS; i++) { /* rows[] is in key order */
            struct cell c = mk(rows[i], quals[k], 100, WC_TYPE_PUT, seq++, "v");
            assert_int_equal(memstore_add(m, &c, &err), CT_OK);
            want++;
        }
        for (int j = 0; j < RANDOM; j++) { /* a newer version somewhere */
            r = r * 1103515245u + 12345u;
            struct cell c =
                mk(rows[(r >> 8) % ROWS], quals[k], 100 + k + 1, WC_TYPE_PUT, seq++, "n");
            assert_int_equal(memstore_add(m, &c, &err), CT_OK);
            want++;
        }
    }
    assert_int_equal(memstore_count(m), want);
    assert_true(memstore_links_ordered(m)); /* every level, not only the one readers walk */
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    size_t n = 0;
    const struct cell *prev = NULL;
    for (memstore_iter_seek_first(&it); memstore_iter_valid(&it); memstore_iter_next(&it), n++) {
        const struct cell *c = memstore_iter_cell(&it);
        if (prev)
            assert_true(cell_compare(prev, c) < 0);
        prev = c;
    }
    assert_int_equal(n, want);
    for (int i = 0; i < ROWS; i++) {
        for (int k = 0; k < ROUNDS; k++) {
            struct cell t = mk(rows[i], quals[k], 100, WC_TYPE_PUT, 0, "");
            memstore_iter_seek_for_prev(&it, &t); /* the oldest version: ts 100 */
            assert_true(memstore_iter_valid(&it));
            const struct cell *c = memstore_iter_cell(&it);
            assert_int_equal(c->ts_ms, 100);
            assert_memory_equal(c->row, rows[i], strlen(rows[i]));
            assert_memory_equal(c->qual, quals[k], strlen(quals[k]));
        }
    }
    memstore_unref(m);
}

/* qsort comparator over cells (the reference order). */
static int ref_cell_cmp(const void *a, const void *b)
{
    return cell_compare((const struct cell *)a, (const struct cell *)b);
}

/* The row hints (memstore.c invariant (6)): random inserts over rows built to defeat every shortcut
 * - rows shorter than 16 bytes, rows sharing their first 16 bytes and differing only after them,
 * rows that are prefixes of other rows (a hint of one must never serve the other), more rows
 * than the hint table has slots at first (collisions, growth) - with columns appended after a
 * row's greatest (the hinted path), older columns and other versions of existing columns
 * inserted below it, and new rows in between. The memstore must list exactly the reference
 * order, on every level. */
static void test_memstore_row_hints_keep_exact_order(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 1u << 14, &err), CT_OK);
    enum {
        ROWS = 24000,
        OPS = 200000
    };
    static char rows[ROWS][48];
    static int next_col[ROWS];
    static char quals[OPS][12];
    static struct cell ref[OPS];
    for (int i = 0; i < ROWS; i++) {
        switch (i % 4) {
        case 0: /* under 16 bytes */
            snprintf(rows[i], sizeof rows[i], "s%05d", i);
            break;
        case 1: /* the same first 16 bytes as every row of cases 1-3 */
            snprintf(rows[i], sizeof rows[i], "same-16-byte-pfx%06d", i);
            break;
        case 2: /* row i-1 and one more byte */
            snprintf(rows[i], sizeof rows[i], "same-16-byte-pfx%06dx", i - 1);
            break;
        default: /* the first 16 bytes alone: a prefix of all of them */
            snprintf(rows[i], sizeof rows[i], "same-16-byte-pfx");
            break;
        }
    }
    unsigned r = 777;
    int live = 100; /* rows in use so far; more join over time (new rows in the middle) */
    size_t n = 0;
    uint64_t seq = 1;
    int row = 0, burst = 0;
    for (int op = 0; op < OPS; op++) {
        r = r * 1103515245u + 12345u;
        unsigned pick = (r >> 8) % 100;
        if (pick < 15 && live < ROWS)
            live++;
        r = r * 1103515245u + 12345u;
        if (burst-- <= 0) { /* 1-3 cells in a row on one row: a wrong entry is used at once */
            row = (int)((r >> 8) % (unsigned)live);
            burst = (int)(r % 3);
        }
        int col;
        int64_t ts = 100;
        if (pick < 75 || next_col[row] == 0) { /* the row's next column: after its greatest */
            col = next_col[row]++;
        } else if (pick < 90) { /* an older column, below the greatest */
            col = (int)((r >> 4) % (unsigned)next_col[row]);
            ts = 50 + (int64_t)(r % 40);
        } else { /* another version of the greatest column */
            col = next_col[row] - 1;
            ts = 90 + (int64_t)(r % 20);
        }
        snprintf(quals[op], sizeof quals[op], "x%06d", col);
        struct cell c = mk(rows[row], quals[op], ts, WC_TYPE_PUT, seq++, "v");
        assert_int_equal(memstore_add(m, &c, &err), CT_OK);
        ref[n++] = c;
    }
    qsort(ref, n, sizeof(ref[0]), ref_cell_cmp);
    assert_int_equal(memstore_count(m), n);
    assert_true(memstore_links_ordered(m));
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    size_t k = 0;
    for (memstore_iter_seek_first(&it); memstore_iter_valid(&it); memstore_iter_next(&it), k++) {
        assert_true(k < n);
        const struct cell *c = memstore_iter_cell(&it);
        assert_int_equal(cell_compare(c, &ref[k]), 0);
        assert_int_equal(c->seq, ref[k].seq);
    }
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i += 97) { /* seeks land on the exact cell */
        memstore_iter_seek(&it, &ref[i]);
        assert_true(memstore_iter_valid(&it));
        assert_int_equal(memstore_iter_cell(&it)->seq, ref[i].seq);
    }
    memstore_unref(m);
}

/* The row hints and the writer's finger together (memstore.c (5), (6)): an insert through a
 * hint that lands BEFORE the finger's node must not leave the finger wrong at the levels it
 * links. Per step: a new row just above row R (searched: it becomes the finger's node), the
 * next column of R (a hinted insert before it), then a new row just above the first (searched
 * from the finger). Every level must stay ordered. */
static void test_memstore_row_hints_keep_the_finger_valid(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 0, &err), CT_OK);
    enum {
        ROWS = 500,
        STEPS = 20000
    };
    static char rows[ROWS][32], xrow[STEPS][40], yrow[STEPS][40], quals[64][16];
    static int ncol[ROWS];
    for (int k = 0; k < 64; k++)
        snprintf(quals[k], sizeof quals[k], "q%03d", k);
    uint64_t seq = 1;
    size_t want = 0;
    for (int i = 0; i < ROWS; i++) { /* rows with a few columns each (some nodes tall) */
        snprintf(rows[i], sizeof rows[i], "row-%06d", i * 10);
        for (ncol[i] = 0; ncol[i] < 6; ncol[i]++, want++) {
            struct cell c = mk(rows[i], quals[ncol[i]], 1, WC_TYPE_PUT, seq++, "v");
            assert_int_equal(memstore_add(m, &c, &err), CT_OK);
        }
    }
    unsigned r = 99;
    for (int s = 0; s < STEPS; s++) {
        r = r * 1103515245u + 12345u;
        int i = (int)((r >> 8) % ROWS);
        if (ncol[i] == 64)
            continue;
        snprintf(xrow[s], sizeof xrow[s], "row-%06d-x%06d", i * 10, s);  /* above row i */
        snprintf(yrow[s], sizeof yrow[s], "row-%06d-x%06dy", i * 10, s); /* just above that */
        struct cell x = mk(xrow[s], "q", 1, WC_TYPE_PUT, seq++, "x");
        struct cell a = mk(rows[i], quals[ncol[i]++], 1, WC_TYPE_PUT, seq++, "a");
        struct cell y = mk(yrow[s], "q", 1, WC_TYPE_PUT, seq++, "y");
        assert_int_equal(memstore_add(m, &x, &err), CT_OK);
        assert_int_equal(memstore_add(m, &a, &err), CT_OK);
        assert_int_equal(memstore_add(m, &y, &err), CT_OK);
        want += 3;
    }
    assert_int_equal(memstore_count(m), want);
    assert_true(memstore_links_ordered(m));
    memstore_unref(m);
}

/* The inline byte comparison of cell.h agrees in sign with memcmp plus the length rule on keys
 * of every length 0..80 (word loop, overlapping last word, byte loop,
 * memcmp past 64 bytes), with the first difference at every position and in either direction;
 * cell_bytes_eq agrees with it. */
/* The first cell any row's cells can have (sorts before all of them). */
static void row_start(struct cell *c, const uint8_t *row, uint32_t len)
{
    *c = mk("", "", INT64_MAX, 255, UINT64_MAX, "");
    c->row = row;
    c->row_len = len;
}

/* Index of the first reference cell >= t (n if none). */
static size_t ref_lower(const struct cell *ref, size_t n, const struct cell *t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cell_compare(&ref[mid], t) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The iterator's search path as a finger (memstore_iter_seek_for_prev, _prev, _seek_near search
 * from the path of the previous backward search): random walks mixing the reversed-scan pattern
 * (step back before a row, then to that row's first cell) with jumps far left and far right,
 * plain seeks and steps that leave the path behind, and inserts between rounds (nodes linked
 * after a path was stored, some at levels above it). Every position must be the reference's:
 * a finger used where it is no longer a predecessor at its level lands on a wrong cell. */
static void test_memstore_backward_searches_from_the_path_land_exactly(void **state)
{
    (void)state;
    struct ct_err err;
    struct memstore *m;
    assert_int_equal(memstore_new(&m, 1u << 12, &err), CT_OK);
    enum {
        ROWS = 3000,
        MAXC = 12000
    };
    static char rows[ROWS][24];
    static char quals[MAXC][8];
    static struct cell ref[MAXC];
    static const char *qs[] = {"", "a", "b", "bb"};
    for (int i = 0; i < ROWS; i++) /* odd rows never get cells: targets between rows */
        snprintf(rows[i], sizeof rows[i], i % 3 ? "r%05d" : "same-16-byte-pfx%05d", i);
    unsigned r = 4242;
    size_t n = 0;
    uint64_t seq = 1;
    struct memstore_iter it;
    memstore_iter_init(&it, m);
    size_t checks = 0;
    for (int round = 0; round < 6; round++) {
        for (int k = 0; k < 2000 && n < MAXC; k++) {
            r = r * 1103515245u + 12345u;
            int row = (int)((r >> 8) % ROWS) & ~1;
            snprintf(quals[n], sizeof quals[n], "%s", qs[(r >> 3) % 4]);
            struct cell c =
                mk(rows[row], quals[n], 100 + (int64_t)(r % 5), WC_TYPE_PUT, seq++, "v");
            assert_int_equal(memstore_add(m, &c, &err), CT_OK);
            ref[n++] = c;
        }
        qsort(ref, n, sizeof(ref[0]), ref_cell_cmp);
        size_t pos = n; /* the reference index the iterator is on (n = not valid) */
        for (int op = 0; op < 20000; op++) {
            r = r * 1103515245u + 12345u;
            unsigned kind = (r >> 8) % 10;
            struct cell t;
            if (kind < 3 &&
                pos < n) { /* the reversed-scan pattern: before this row, then its start */
                row_start(&t, ref[pos].row, ref[pos].row_len);
                memstore_iter_seek_for_prev(&it, &t);
                size_t lo = ref_lower(ref, n, &t);
                pos = lo == 0 ? n : lo - 1;
                if (pos < n) {
                    assert_true(memstore_iter_valid(&it));
                    assert_int_equal(memstore_iter_cell(&it)->seq, ref[pos].seq);
                    row_start(&t, ref[pos].row, ref[pos].row_len);
                    memstore_iter_seek_near(&it, &t);
                    pos = ref_lower(ref, n, &t);
                }
            } else if (kind < 7) { /* anywhere: a row (with or without cells), a column, a time */
                int row = (int)((r >> 4) % ROWS);
                r = r * 1103515245u + 12345u;
                t = mk(rows[row], qs[(r >> 5) % 4], 99 + (int64_t)(r % 7), WC_TYPE_PUT,
                       (r >> 9) % (seq + 1), "");
                if (kind == 3) {
                    memstore_iter_seek_for_prev(&it, &t);
                    size_t lo = ref_lower(ref, n, &t);
                    pos = lo < n && cell_compare(&ref[lo], &t) == 0 ? lo : lo == 0 ? n : lo - 1;
                } else if (kind == 4) {
                    memstore_iter_seek_near(&it, &t);
                    pos = ref_lower(ref, n, &t);
                } else if (kind == 5) {
                    memstore_iter_seek(&it, &t); /* forward: leaves the path where it was */
                    pos = ref_lower(ref, n, &t);
                } else {
                    memstore_iter_seek_for_prev(&it, &t);
                    size_t lo = ref_lower(ref, n, &t);
                    pos = lo < n && cell_compare(&ref[lo], &t) == 0 ? lo : lo == 0 ? n : lo - 1;
                }
            } else if (kind < 9 && pos < n) {
                memstore_iter_prev(&it);
                pos = pos == 0 ? n : pos - 1;
            } else if (pos < n) {
                memstore_iter_next(&it);
                pos++;
            }
            if (pos < n) {
                assert_true(memstore_iter_valid(&it));
                assert_int_equal(memstore_iter_cell(&it)->seq, ref[pos].seq);
                checks++;
            } else {
                assert_false(memstore_iter_valid(&it));
            }
        }
    }
    assert_true(checks > 50000);
    memstore_unref(m);
}

static int ref_bytes_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    size_t n = alen < blen ? alen : blen;
    int c = n ? memcmp(a, b, n) : 0;
    if (c)
        return c < 0 ? -1 : 1;
    return alen < blen ? -1 : alen > blen;
}

static void test_cell_bytes_cmp_matches_memcmp(void **state)
{
    (void)state;
    uint8_t a[80], b[80];
    unsigned r = 7;
    for (size_t alen = 0; alen <= 80; alen++) {
        for (size_t blen = alen > 3 ? alen - 3 : 0; blen <= alen + 3 && blen <= 80; blen++) {
            size_t n = alen < blen ? alen : blen;
            for (size_t diff = 0; diff <= n; diff++) { /* diff == n: equal common prefix */
                for (size_t i = 0; i < 80; i++) {
                    r = r * 1103515245u + 12345u;
                    a[i] = b[i] = (uint8_t)(r >> 16);
                }
                if (diff < n)
                    b[diff] = (uint8_t)(a[diff] ^ (1u << (r % 8))); /* high or low bit */
                int got = cell_bytes_cmp(a, alen, b, blen);
                int want = ref_bytes_cmp(a, alen, b, blen);
                if ((got > 0) - (got < 0) != want)
                    fail_msg("alen %zu blen %zu diff %zu: got %d want %d", alen, blen, diff, got,
                             want);
                assert_int_equal(-((got > 0) - (got < 0)),
                                 ref_bytes_cmp(b, blen, a, alen)); /* antisymmetric */
                assert_int_equal(cell_bytes_eq(a, alen, b, blen) != 0, want == 0);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_memstore_iterates_in_spec_order),
        cmocka_unit_test(test_memstore_copies_cell_bytes_and_counts_size),
        cmocka_unit_test(test_memstore_readers_run_while_a_writer_inserts),
        cmocka_unit_test(test_memstore_row_bloom_has_no_false_negatives),
        cmocka_unit_test(test_memstore_sequential_and_mixed_inserts_keep_order),
        cmocka_unit_test(test_memstore_rounds_of_sorted_inserts_keep_order),
        cmocka_unit_test(test_memstore_row_hints_keep_exact_order),
        cmocka_unit_test(test_memstore_row_hints_keep_the_finger_valid),
        cmocka_unit_test(test_memstore_backward_searches_from_the_path_land_exactly),
        cmocka_unit_test(test_cell_bytes_cmp_matches_memcmp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
