/* fixture.h - store and table setup shared by the storage unit tests: open a store, create a
 * table of named families, open a table, each failing the running cmocka test with the error's
 * message (so a test body holds only what it is about). */
#ifndef CT_FIXTURE_H
#define CT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/wc.h"

/* Opens the store described by o; returns it, closed by the caller with wc_close(). Fails the
 * test ("open <data_dir>: <why>") if it cannot. */
struct wc_store *fixture_store_open(const struct wc_options *o);

/* Creates table `name` with the families fams[0..nf) (nf <= 8), each as wc_family_desc_init
 * makes it but keeping `versions` versions (0: the default), and no split points. Fails the test
 * ("create <name>: <why>") if it cannot. */
void fixture_table_create(struct wc_store *s, const char *name, const char *const *fams, size_t nf,
                          uint32_t versions);

/* Opens table `name`; returns it, closed by the caller with wc_table_close(). Fails the test
 * ("open <name>: <why>") if it cannot. */
struct wc_table *fixture_table_open(struct wc_store *s, const char *name);

/* The store's statistics (wc_store_stats). Fails the test ("stats: <why>") if it cannot. */
struct wc_store_stats fixture_store_stats(struct wc_store *s);

/* The store of the random-history read tests: a fresh temporary directory (*dir, for
 * fixture_history_close), the clock pinned at 1,000 s (CTSDB_NOW_MS) so TTLs are deterministic,
 * and a 256 KiB block cache so blocks are evicted and read again. */
struct wc_store *fixture_history_open(char **dir);
void fixture_history_close(struct wc_store *s, char *dir);

/* The random-history table: family "f" (3 versions, MIN_VERSIONS 1, TTL 600 s, bloom `f_bloom`,
 * FAST_DIFF blocks) and "g" (1 version), 1 KiB blocks, compactions only on request, two regions
 * split at `split`. Returns it open. */
struct wc_table *fixture_history_table(struct wc_store *s, const char *name, const char *split,
                                       enum wc_bloom f_bloom);

/* Writes n random mutations to rows sprintf(row_fmt, rnd % nrows) (row_fmt takes one int): puts
 * over the families, qualifiers "", "a", "ab", "b" and 12 timestamps from 350,000 ms, and about
 * one in four a delete marker of every kind (a whole-row delete at most every row_delete_every
 * mutations). Values name the round and the mutation. */
void fixture_history_write(struct wc_table *t, uint64_t *seed, int round, int n, int nrows,
                           const char *row_fmt, int row_delete_every);

/* The read option sets both random-history tests use: v = 0 defaults, 1 three versions, 2 an
 * explicit column list (f:ab, all of g) with two versions, 3 a time range with three versions,
 * 4 a qualifier prefix with three versions. Returns false (o left at defaults) for other v;
 * cols (room 2) must outlive o. */
bool fixture_history_options(int v, struct wc_scan_options *o, struct wc_column *cols);

/* xorshift64*: the tests' deterministic random numbers (state must start non-zero). */
uint64_t fixture_rnd(uint64_t *state);

/* A row filter that keeps every row: sends a read down the scanner path. */
enum wc_row_decision fixture_pass_all(void *arg, const uint8_t *row, size_t len);

/* Appends a row's cells to out as text ("row|fam:qual@ts/type=value", space-separated, nothing
 * for an empty row), truncated to size; comparing these texts compares reads cell for cell. */
void fixture_fmt_row(char *out, size_t size, const struct wc_row *r);

#endif
