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

#endif
