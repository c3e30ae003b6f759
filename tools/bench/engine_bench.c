/* engine_bench.c - db_bench-style comparison of ctsdb's embedded engine (through storage/wc.h)
 * with LevelDB and RocksDB (through their C APIs), side by side in one run.
 *
 * Conventions of LevelDB's db_bench: 16-byte keys (%016llu of the key number), 100-byte values,
 * N = 1,000,000 operations by default, one key per write. Workloads:
 *   fillseq     N puts in key order into a fresh database
 *   fillrandom  N puts of uniformly random keys into a fresh database
 *   overwrite   N puts of random keys into the database fillrandom left
 *   readrandom  N point reads of random keys (found count reported)
 *   readseq     one forward iteration over everything
 *   readreverse one backward iteration over everything
 *   seekrandom  N iterator seeks to random keys, reading the entry found
 * Settings are the same for every engine: no fsync per write but every write is handed to the
 * OS in the log before the put returns, so it survives kill -9 (LevelDB/RocksDB sync=false with
 * the WAL on: one write(2) per put; ctsdb SYNC_WAL: a copy into the log's MAP_SHARED mapping,
 * i.e. into the same page cache without a system call), no compression,
 * a 10-bits-per-key bloom filter, 4 KiB data blocks (LevelDB's and RocksDB's default; ctsdb's
 * family default is HBase's 64 KiB), one LRU block cache of -c MiB. Write buffer / memstore size:
 * each library's default unless -w is given.
 *
 * Built by tools/bench/bench.mk (never linked into bin/ctsdb); run by tools/bench/run.sh. */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <leveldb/c.h>
#include <rocksdb/c.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "storage/wc.h"

#define KEY_BYTES   16
#define VALUE_BYTES 100
#define VALUE_POOL  (1u << 20)
#define BLOCK_BYTES 4096

struct cfg {
    uint64_t n;
    size_t cache_bytes;
    size_t write_buffer_bytes; /* 0 = library default */
    const char *dir;
    uint64_t seed;
};

struct result {
    const char *bench;
    const char *db;
    double ops_per_s;
    double cpu_ns_per_op; /* CPU time of the benchmarking thread per operation */
    double mb_per_s;
    uint64_t ops;
    uint64_t found;
    bool ok;
};

struct bdb;
struct bdb_ops {
    const char *name;
    int (*open)(struct bdb *b, const char *dir, const struct cfg *c);
    void (*close)(struct bdb *b);
    int (*put)(struct bdb *b, const char *k, const char *v);
    int (*get)(struct bdb *b, const char *k, bool *found);
    int (*scan)(struct bdb *b, bool reverse, uint64_t *n, uint64_t *bytes);
    int (*seek)(struct bdb *b, const char *k, bool *found);
};

struct bdb {
    const struct bdb_ops *ops;
    char errmsg[512];
    /* ctsdb */
    struct wc_store *ws;
    struct wc_table *wt;
    /* leveldb */
    leveldb_t *ldb;
    leveldb_options_t *lopt;
    leveldb_cache_t *lcache;
    leveldb_filterpolicy_t *lfilter;
    leveldb_writeoptions_t *lwo;
    leveldb_readoptions_t *lro;
    /* rocksdb */
    rocksdb_t *rdb;
    rocksdb_options_t *ropt;
    rocksdb_block_based_table_options_t *rbbo;
    rocksdb_cache_t *rcache;
    rocksdb_writeoptions_t *rwo;
    rocksdb_readoptions_t *rro;
};

/* CPU time of the calling thread: what a workload cost the benchmarking thread, without the
 * time it waited for a CPU on a loaded machine (background threads are not counted). */
static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* xorshift64*: deterministic random keys */
static uint64_t rnd_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545f4914f6cdd1dull;
}

/* %016llu without snprintf (which cost ~1000 instructions a key, for every engine alike) */
static void make_key(uint64_t k, char *out)
{
    for (int i = KEY_BYTES - 1; i >= 0; i--) {
        out[i] = (char)('0' + k % 10);
        k /= 10;
    }
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p);
}

static void rm_rf(const char *dir)
{
    if (access(dir, F_OK) == 0 && nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0)
        fprintf(stderr, "engine_bench: cannot remove %s: %s\n", dir, strerror(errno));
}

/* ---- ctsdb ---------------------------------------------------------------------------- */

#define CT_TABLE  "bench"
#define CT_FAMILY "f"
#define CT_QUAL   "q"

static int ct_fail(struct bdb *b, const char *what, const struct ct_err *err)
{
    snprintf(b->errmsg, sizeof b->errmsg, "%.48s: %.400s", what, err->msg);
    return -1;
}

static int ct_open(struct bdb *b, const char *dir, const struct cfg *c)
{
    struct wc_options o;
    wc_options_init(&o);
    o.backend = WC_BACKEND_EMBEDDED;
    o.data_dir = dir;
    o.block_cache_bytes = c->cache_bytes;
    if (c->write_buffer_bytes)
        o.memstore_flush_bytes = c->write_buffer_bytes;
    struct ct_err err = {0};
    if (wc_open(&o, &b->ws, &err) != CT_OK)
        return ct_fail(b, "wc_open", &err);
    if (wc_table_exists(b->ws, CT_TABLE, &err) == CT_NOTFOUND) {
        struct wc_family_desc fam;
        wc_family_desc_init(&fam, CT_FAMILY);
        fam.bloom = WC_BLOOM_ROW;
        fam.compression = WC_COMPRESSION_NONE;
        fam.blocksize = BLOCK_BYTES; /* LevelDB's and RocksDB's default block size */
        struct wc_table_desc d;
        wc_table_desc_init(&d, CT_TABLE);
        d.families = &fam;
        d.nfamilies = 1;
        d.durability = WC_DURABILITY_SYNC_WAL;
        if (wc_table_create(b->ws, &d, NULL, 0, &err) != CT_OK)
            return ct_fail(b, "wc_table_create", &err);
    }
    if (wc_table_open(b->ws, CT_TABLE, &b->wt, &err) != CT_OK)
        return ct_fail(b, "wc_table_open", &err);
    return 0;
}

static void ct_close(struct bdb *b)
{
    wc_table_close(b->wt);
    wc_close(b->ws);
    b->wt = NULL;
    b->ws = NULL;
}

static int ct_put(struct bdb *b, const char *k, const char *v)
{
    struct wc_mutation m = {.op = WC_OP_PUT,
                            .family = wc_bytes_of(CT_FAMILY, 1),
                            .qualifier = wc_bytes_of(CT_QUAL, 1),
                            .value = wc_bytes_of(v, VALUE_BYTES),
                            .ts_ms = WC_TS_LATEST};
    struct wc_row_mutation rm = {.row = wc_bytes_of(k, KEY_BYTES), .mutations = &m, .n = 1};
    struct ct_err err = {0};
    if (wc_mutate_row(b->wt, &rm, WC_DURABILITY_SYNC_WAL, &err) != CT_OK)
        return ct_fail(b, "wc_mutate_row", &err);
    return 0;
}

static int ct_get(struct bdb *b, const char *k, bool *found)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_result r;
    struct ct_err err = {0};
    if (wc_get(b->wt, wc_bytes_of(k, KEY_BYTES), &o, &r, &err) != CT_OK)
        return ct_fail(b, "wc_get", &err);
    *found = r.row.ncells > 0;
    wc_result_release(&r);
    return 0;
}

static int ct_scan(struct bdb *b, bool reverse, uint64_t *n, uint64_t *bytes)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.reversed = reverse;
    struct wc_scanner *sc = NULL;
    struct ct_err err = {0};
    if (wc_scanner_open(b->wt, &o, &sc, &err) != CT_OK)
        return ct_fail(b, "wc_scanner_open", &err);
    struct wc_row row;
    int rc;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK) {
        (*n)++;
        *bytes += row.key.len;
        for (size_t i = 0; i < row.ncells; i++)
            *bytes += row.cells[i].value.len;
    }
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND)
        return ct_fail(b, "wc_scanner_next", &err);
    return 0;
}

static int ct_seek(struct bdb *b, const char *k, bool *found)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    o.start_row = wc_bytes_of(k, KEY_BYTES);
    o.limit_rows = 1;
    struct wc_scanner *sc = NULL;
    struct ct_err err = {0};
    if (wc_scanner_open(b->wt, &o, &sc, &err) != CT_OK)
        return ct_fail(b, "wc_scanner_open", &err);
    struct wc_row row;
    int rc = wc_scanner_next(sc, &row, &err);
    if (rc == CT_OK)
        *found = row.key.len == KEY_BYTES && memcmp(row.key.data, k, KEY_BYTES) == 0;
    else
        *found = false;
    wc_scanner_close(sc);
    if (rc != CT_OK && rc != CT_NOTFOUND)
        return ct_fail(b, "wc_scanner_next", &err);
    return 0;
}

static const struct bdb_ops ct_ops = {"ctsdb", ct_open, ct_close, ct_put, ct_get, ct_scan, ct_seek};

/* ---- leveldb -------------------------------------------------------------------------- */

static int ldb_fail(struct bdb *b, const char *what, char *e)
{
    snprintf(b->errmsg, sizeof b->errmsg, "%s: %s", what, e ? e : "?");
    leveldb_free(e);
    return -1;
}

static int ldb_open(struct bdb *b, const char *dir, const struct cfg *c)
{
    b->lopt = leveldb_options_create();
    leveldb_options_set_create_if_missing(b->lopt, 1);
    b->lcache = leveldb_cache_create_lru(c->cache_bytes);
    leveldb_options_set_cache(b->lopt, b->lcache);
    b->lfilter = leveldb_filterpolicy_create_bloom(10);
    leveldb_options_set_filter_policy(b->lopt, b->lfilter);
    leveldb_options_set_compression(b->lopt, leveldb_no_compression);
    if (c->write_buffer_bytes)
        leveldb_options_set_write_buffer_size(b->lopt, c->write_buffer_bytes);
    b->lwo = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(b->lwo, 0);
    b->lro = leveldb_readoptions_create();
    char *e = NULL;
    b->ldb = leveldb_open(b->lopt, dir, &e);
    if (e)
        return ldb_fail(b, "leveldb_open", e);
    return 0;
}

static void ldb_close(struct bdb *b)
{
    if (b->ldb)
        leveldb_close(b->ldb);
    leveldb_writeoptions_destroy(b->lwo);
    leveldb_readoptions_destroy(b->lro);
    leveldb_options_destroy(b->lopt);
    leveldb_filterpolicy_destroy(b->lfilter);
    leveldb_cache_destroy(b->lcache);
    b->ldb = NULL;
}

static int ldb_put(struct bdb *b, const char *k, const char *v)
{
    char *e = NULL;
    leveldb_put(b->ldb, b->lwo, k, KEY_BYTES, v, VALUE_BYTES, &e);
    return e ? ldb_fail(b, "leveldb_put", e) : 0;
}

static int ldb_get(struct bdb *b, const char *k, bool *found)
{
    char *e = NULL;
    size_t vl = 0;
    char *v = leveldb_get(b->ldb, b->lro, k, KEY_BYTES, &vl, &e);
    if (e)
        return ldb_fail(b, "leveldb_get", e);
    *found = v != NULL;
    leveldb_free(v);
    return 0;
}

static int ldb_scan(struct bdb *b, bool reverse, uint64_t *n, uint64_t *bytes)
{
    leveldb_iterator_t *it = leveldb_create_iterator(b->ldb, b->lro);
    if (reverse)
        leveldb_iter_seek_to_last(it);
    else
        leveldb_iter_seek_to_first(it);
    while (leveldb_iter_valid(it)) {
        size_t kl, vl;
        leveldb_iter_key(it, &kl);
        leveldb_iter_value(it, &vl);
        (*n)++;
        *bytes += kl + vl;
        if (reverse)
            leveldb_iter_prev(it);
        else
            leveldb_iter_next(it);
    }
    leveldb_iter_destroy(it);
    return 0;
}

static int ldb_seek(struct bdb *b, const char *k, bool *found)
{
    leveldb_iterator_t *it = leveldb_create_iterator(b->ldb, b->lro);
    leveldb_iter_seek(it, k, KEY_BYTES);
    *found = false;
    if (leveldb_iter_valid(it)) {
        size_t kl;
        const char *key = leveldb_iter_key(it, &kl);
        *found = kl == KEY_BYTES && memcmp(key, k, KEY_BYTES) == 0;
    }
    leveldb_iter_destroy(it);
    return 0;
}

static const struct bdb_ops ldb_ops = {"leveldb", ldb_open, ldb_close, ldb_put,
                                       ldb_get,   ldb_scan, ldb_seek};

/* ---- rocksdb -------------------------------------------------------------------------- */

static int rdb_fail(struct bdb *b, const char *what, char *e)
{
    snprintf(b->errmsg, sizeof b->errmsg, "%s: %s", what, e ? e : "?");
    rocksdb_free(e);
    return -1;
}

static int rdb_open(struct bdb *b, const char *dir, const struct cfg *c)
{
    b->ropt = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(b->ropt, 1);
    b->rbbo = rocksdb_block_based_options_create();
    b->rcache = rocksdb_cache_create_lru(c->cache_bytes);
    rocksdb_block_based_options_set_block_cache(b->rbbo, b->rcache);
    rocksdb_block_based_options_set_filter_policy(b->rbbo, rocksdb_filterpolicy_create_bloom(10));
    rocksdb_options_set_block_based_table_factory(b->ropt, b->rbbo);
    rocksdb_options_set_compression(b->ropt, rocksdb_no_compression);
    if (c->write_buffer_bytes)
        rocksdb_options_set_write_buffer_size(b->ropt, c->write_buffer_bytes);
    b->rwo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(b->rwo, 0);
    b->rro = rocksdb_readoptions_create();
    char *e = NULL;
    b->rdb = rocksdb_open(b->ropt, dir, &e);
    if (e)
        return rdb_fail(b, "rocksdb_open", e);
    return 0;
}

static void rdb_close(struct bdb *b)
{
    if (b->rdb)
        rocksdb_close(b->rdb);
    rocksdb_writeoptions_destroy(b->rwo);
    rocksdb_readoptions_destroy(b->rro);
    rocksdb_options_destroy(b->ropt);
    rocksdb_block_based_options_destroy(b->rbbo);
    rocksdb_cache_destroy(b->rcache);
    b->rdb = NULL;
}

static int rdb_put(struct bdb *b, const char *k, const char *v)
{
    char *e = NULL;
    rocksdb_put(b->rdb, b->rwo, k, KEY_BYTES, v, VALUE_BYTES, &e);
    return e ? rdb_fail(b, "rocksdb_put", e) : 0;
}

static int rdb_get(struct bdb *b, const char *k, bool *found)
{
    char *e = NULL;
    size_t vl = 0;
    char *v = rocksdb_get(b->rdb, b->rro, k, KEY_BYTES, &vl, &e);
    if (e)
        return rdb_fail(b, "rocksdb_get", e);
    *found = v != NULL;
    rocksdb_free(v);
    return 0;
}

static int rdb_scan(struct bdb *b, bool reverse, uint64_t *n, uint64_t *bytes)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(b->rdb, b->rro);
    if (reverse)
        rocksdb_iter_seek_to_last(it);
    else
        rocksdb_iter_seek_to_first(it);
    while (rocksdb_iter_valid(it)) {
        size_t kl, vl;
        rocksdb_iter_key(it, &kl);
        rocksdb_iter_value(it, &vl);
        (*n)++;
        *bytes += kl + vl;
        if (reverse)
            rocksdb_iter_prev(it);
        else
            rocksdb_iter_next(it);
    }
    rocksdb_iter_destroy(it);
    return 0;
}

static int rdb_seek(struct bdb *b, const char *k, bool *found)
{
    rocksdb_iterator_t *it = rocksdb_create_iterator(b->rdb, b->rro);
    rocksdb_iter_seek(it, k, KEY_BYTES);
    *found = false;
    if (rocksdb_iter_valid(it)) {
        size_t kl;
        const char *key = rocksdb_iter_key(it, &kl);
        *found = kl == KEY_BYTES && memcmp(key, k, KEY_BYTES) == 0;
    }
    rocksdb_iter_destroy(it);
    return 0;
}

static const struct bdb_ops rdb_ops = {"rocksdb", rdb_open, rdb_close, rdb_put,
                                       rdb_get,   rdb_scan, rdb_seek};

/* ---- driver --------------------------------------------------------------------------- */

static const char *all_benches[] = {"fillseq", "fillrandom",  "overwrite", "readrandom",
                                    "readseq", "readreverse", "seekrandom"};
#define NBENCH (sizeof all_benches / sizeof all_benches[0])

static int run_one(struct bdb *b, const char *bench, const struct cfg *c, const char *dir,
                   bool *open, const char *values, struct result *r)
{
    r->bench = bench;
    r->db = b->ops->name;
    bool fresh = strcmp(bench, "fillseq") == 0 || strcmp(bench, "fillrandom") == 0;
    if (fresh || !*open) {
        if (*open)
            b->ops->close(b);
        *open = false;
        if (fresh)
            rm_rf(dir);
        if (b->ops->open(b, dir, c) != 0)
            return -1;
        *open = true;
    }
    uint64_t seed = c->seed;
    char key[KEY_BYTES];
    uint64_t ops = 0, bytes = 0, found = 0;
    double t0 = now_s(), c0 = thread_cpu_s();
    int rc = 0;
    if (strcmp(bench, "fillseq") == 0 || strcmp(bench, "fillrandom") == 0 ||
        strcmp(bench, "overwrite") == 0) {
        bool seq = strcmp(bench, "fillseq") == 0;
        if (strcmp(bench, "overwrite") == 0)
            seed ^= 0x5555;
        for (uint64_t i = 0; i < c->n && rc == 0; i++) {
            make_key(seq ? i : rnd_next(&seed) % c->n, key);
            rc = b->ops->put(b, key, values + (i * 97) % (VALUE_POOL - VALUE_BYTES));
        }
        ops = c->n;
        bytes = ops * (KEY_BYTES + VALUE_BYTES);
    } else if (strcmp(bench, "readrandom") == 0 || strcmp(bench, "seekrandom") == 0) {
        bool get = strcmp(bench, "readrandom") == 0;
        seed ^= 0xaaaa;
        for (uint64_t i = 0; i < c->n && rc == 0; i++) {
            make_key(rnd_next(&seed) % c->n, key);
            bool f = false;
            rc = get ? b->ops->get(b, key, &f) : b->ops->seek(b, key, &f);
            found += f;
        }
        ops = c->n;
        bytes = found * (KEY_BYTES + VALUE_BYTES);
    } else {
        rc = b->ops->scan(b, strcmp(bench, "readreverse") == 0, &ops, &bytes);
        found = ops;
    }
    double dt = now_s() - t0;
    r->cpu_ns_per_op = ops ? (thread_cpu_s() - c0) * 1e9 / (double)ops : 0;
    if (rc != 0)
        return -1;
    r->ops = ops;
    r->found = found;
    r->ops_per_s = dt > 0 ? (double)ops / dt : 0;
    r->mb_per_s = dt > 0 ? (double)bytes / dt / 1048576.0 : 0;
    r->ok = true;
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: engine_bench [-n N] [-b bench,...] [-e engine,...] [-d dir] [-c cache_mb]\n"
            "                    [-w write_buffer_mb] [-s seed] [-k]\n"
            "  -k keeps the databases (<dir>/<engine>) for a later run of read benchmarks\n"
            "  benches: fillseq,fillrandom,overwrite,readrandom,readseq,readreverse,seekrandom\n"
            "  engines: ctsdb,leveldb,rocksdb\n");
}

int main(int argc, char **argv)
{
    struct cfg c = {.n = 1000000, .cache_bytes = 64u << 20, .dir = "build/bench-data", .seed = 301};
    const char *benches = NULL, *engines = "ctsdb,leveldb,rocksdb";
    bool keep = false;
    int opt;
    while ((opt = getopt(argc, argv, "n:b:e:d:c:w:s:kh")) != -1) {
        switch (opt) {
        case 'n':
            c.n = strtoull(optarg, NULL, 10);
            break;
        case 'b':
            benches = optarg;
            break;
        case 'e':
            engines = optarg;
            break;
        case 'd':
            c.dir = optarg;
            break;
        case 'c':
            c.cache_bytes = (size_t)strtoull(optarg, NULL, 10) << 20;
            break;
        case 'w':
            c.write_buffer_bytes = (size_t)strtoull(optarg, NULL, 10) << 20;
            break;
        case 's':
            c.seed = strtoull(optarg, NULL, 10) | 1;
            break;
        case 'k':
            keep = true;
            break;
        default:
            usage();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (c.n == 0) {
        usage();
        return 2;
    }
    const char *list[NBENCH];
    size_t nb = 0;
    char bbuf[512];
    if (benches) {
        snprintf(bbuf, sizeof bbuf, "%s", benches);
        for (char *t = strtok(bbuf, ","); t && nb < NBENCH; t = strtok(NULL, ",")) {
            size_t k;
            for (k = 0; k < NBENCH && strcmp(all_benches[k], t) != 0; k++)
                ;
            if (k == NBENCH) {
                fprintf(stderr, "engine_bench: unknown benchmark %s\n", t);
                return 2;
            }
            list[nb++] = all_benches[k];
        }
    } else {
        for (; nb < NBENCH; nb++)
            list[nb] = all_benches[nb];
    }
    const struct bdb_ops *eng[3];
    size_t ne = 0;
    char ebuf[128];
    snprintf(ebuf, sizeof ebuf, "%s", engines);
    for (char *t = strtok(ebuf, ","); t && ne < 3; t = strtok(NULL, ",")) {
        if (strcmp(t, "ctsdb") == 0)
            eng[ne++] = &ct_ops;
        else if (strcmp(t, "leveldb") == 0)
            eng[ne++] = &ldb_ops;
        else if (strcmp(t, "rocksdb") == 0)
            eng[ne++] = &rdb_ops;
        else {
            fprintf(stderr, "engine_bench: unknown engine %s\n", t);
            return 2;
        }
    }
    if (mkdir(c.dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "engine_bench: cannot create %s: %s\n", c.dir, strerror(errno));
        return 1;
    }
    char *values = malloc(VALUE_POOL);
    if (!values)
        return 1;
    uint64_t vs = 12345;
    for (size_t i = 0; i < VALUE_POOL; i += 8) {
        uint64_t x = rnd_next(&vs);
        memcpy(values + i, &x, 8);
    }
    printf("engine_bench: N=%" PRIu64 ", keys %d B, values %d B, cache %zu MiB, write buffer %s,"
           " 4 KiB blocks, no compression, bloom 10 bits/key, writes to the log without fsync\n",
           c.n, KEY_BYTES, VALUE_BYTES, c.cache_bytes >> 20,
           c.write_buffer_bytes ? "set by -w" : "library default");
    /* Engines take turns per workload (fillseq on each, then fillrandom on each, ...) so that
     * load from other processes on the machine hits them alike. */
    struct result res[3][NBENCH];
    memset(res, 0, sizeof res);
    struct bdb dbs[3];
    bool open[3] = {false, false, false}, dead[3] = {false, false, false};
    char dirs[3][1024];
    memset(dbs, 0, sizeof dbs);
    int status = 0;
    for (size_t e = 0; e < ne; e++) {
        dbs[e].ops = eng[e];
        snprintf(dirs[e], sizeof dirs[e], "%s/%s", c.dir, eng[e]->name);
    }
    for (size_t k = 0; k < nb; k++) {
        for (size_t e = 0; e < ne; e++) {
            if (dead[e])
                continue;
            if (run_one(&dbs[e], list[k], &c, dirs[e], &open[e], values, &res[e][k]) != 0) {
                fprintf(stderr, "engine_bench: %s %s failed: %s\n", eng[e]->name, list[k],
                        dbs[e].errmsg);
                status = 1;
                if (!open[e])
                    dead[e] = true;
                continue;
            }
            fprintf(stderr,
                    "%-8s %-12s %12.0f ops/s %8.1f MB/s (%" PRIu64 " ops, %" PRIu64
                    " found) %8.0f thread-CPU ns/op\n",
                    eng[e]->name, list[k], res[e][k].ops_per_s, res[e][k].mb_per_s, res[e][k].ops,
                    res[e][k].found, res[e][k].cpu_ns_per_op);
        }
    }
    for (size_t e = 0; e < ne; e++) {
        if (open[e])
            dbs[e].ops->close(&dbs[e]);
        if (!keep)
            rm_rf(dirs[e]);
    }
    /* the table */
    printf("\n| benchmark |");
    for (size_t e = 0; e < ne; e++)
        printf(" %s ops/s | %s MB/s |", eng[e]->name, eng[e]->name);
    bool have_ratio = ne >= 2 && eng[0] == &ct_ops && eng[1] == &ldb_ops;
    if (have_ratio)
        printf(" ctsdb / leveldb |");
    printf("\n|---|");
    for (size_t e = 0; e < ne; e++)
        printf("---:|---:|");
    if (have_ratio)
        printf("---:|");
    printf("\n");
    for (size_t k = 0; k < nb; k++) {
        printf("| %s |", list[k]);
        for (size_t e = 0; e < ne; e++) {
            if (res[e][k].ok)
                printf(" %.0f | %.1f |", res[e][k].ops_per_s, res[e][k].mb_per_s);
            else
                printf(" failed | - |");
        }
        if (have_ratio) {
            if (res[0][k].ok && res[1][k].ok && res[1][k].ops_per_s > 0)
                printf(" %.2fx |", res[0][k].ops_per_s / res[1][k].ops_per_s);
            else
                printf(" - |");
        }
        printf("\n");
    }
    free(values);
    return status;
}
