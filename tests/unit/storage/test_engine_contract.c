/* test_engine_contract.c - runs the backend-neutral wc.h contract suite (tests/lib/wc_contract.c)
 * against the embedded engine: every test gets a fresh data directory, run a first time with a
 * large memstore (everything in memory), a second time with a 1-byte one (every write queues a
 * flush to block files, so reads merge memstores and files), and a third time so with block
 * files read with pread through the cache instead of mapped (wc_options.pread_block_files). */
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/wc_contract.h"

struct dirs {
    char *paths[64];
    size_t n;
    size_t flush_bytes;
    bool pread; /* wc_options.pread_block_files */
};

static int open_engine(struct wc_store **out, void *arg)
{
    struct dirs *d = arg;
    if (d->n == sizeof(d->paths) / sizeof(d->paths[0]))
        return -1;
    char *dir = ctest_mkdtemp();
    d->paths[d->n++] = dir;
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.memstore_flush_bytes = d->flush_bytes;
    o.block_cache_bytes = 1 << 20;
    o.wal_segment_bytes = 1 << 20;
    o.pread_block_files = d->pread;
    struct ct_err err;
    return wc_open(&o, out, &err) == CT_OK ? 0 : -1;
}

int main(void)
{
    struct dirs mem = {.flush_bytes = 64u << 20};
    int failed = wc_contract_run("embedded, memstore", open_engine, &mem);
    for (size_t i = 0; i < mem.n; i++)
        ctest_rmdir(mem.paths[i]);
    struct dirs small = {.flush_bytes = 1};
    failed += wc_contract_run("embedded, tiny memstore", open_engine, &small);
    for (size_t i = 0; i < small.n; i++)
        ctest_rmdir(small.paths[i]);
    struct dirs pread = {.flush_bytes = 1, .pread = true};
    failed += wc_contract_run("embedded, tiny memstore, block files read with pread", open_engine,
                              &pread);
    for (size_t i = 0; i < pread.n; i++)
        ctest_rmdir(pread.paths[i]);
    return failed;
}
