/* fixture.h - store and table setup shared by the storage unit tests: open a store, create a
 * table of named families, open a table, each failing the running cmocka test with the error's
 * message (so a test body holds only what it is about). */
#ifndef CT_FIXTURE_H
#define CT_FIXTURE_H

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

/* The store of the random-history read tests: a fresh temporary directory (*dir, for
 * fixture_history_close), the clock pinned at 1,000 s (CTSDB_NOW_MS) so TTLs are deterministic,
 * and a 256 KiB block cache so blocks are evicted and read again. */
struct wc_store *fixture_history_open(char **dir);
void fixture_history_close(struct wc_store *s, char *dir);

/* xorshift64*: the tests' deterministic random numbers (state must start non-zero). */
uint64_t fixture_rnd(uint64_t *state);

/* A row filter that keeps every row: sends a read down the scanner path. */
enum wc_row_decision fixture_pass_all(void *arg, const uint8_t *row, size_t len);

/* Appends a row's cells to out as text ("row|fam:qual@ts/type=value", space-separated, nothing
 * for an empty row), truncated to size; comparing these texts compares reads cell for cell. */
void fixture_fmt_row(char *out, size_t size, const struct wc_row *r);

#endif
