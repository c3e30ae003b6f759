/* wc_contract.h - the backend-neutral contract suite of storage/wc.h: the behaviours of
 * docs/storage-contract.md that every backend must show (puts, gets, scans in both
 * directions, bounds and prefixes, versions, time ranges, TTL with a pinned clock, column
 * selection and filters, limits and chunks, increments, check-and-mutate, batches, neutral
 * deletes, table and namespace administration, pre-split tables). What "Where the Bigtable backend
 * differs" says Bigtable cannot do (delete markers masking later puts, revealed older versions,
 * KEEP_DELETED_CELLS, raw scans, compaction hooks) is left to the embedded engine's own tests.
 *
 * Each test opens a store with open_store(), creates its own uniquely named tables (prefix
 * "ctc_"), drops them at the end and closes the store with wc_close(). Tests pin the clock by
 * setting CTSDB_NOW_MS and restore it afterwards. */
#ifndef CT_TESTS_WC_CONTRACT_H
#define CT_TESTS_WC_CONTRACT_H

#include "storage/wc.h"

/* Opens a store for one test (a fresh or reusable one): 0 on success. */
typedef int (*wc_contract_open_fn)(struct wc_store **out, void *arg);

/* Runs the suite as a cmocka group named "wc contract (<backend_label>)". Returns the number of
 * failed tests (cmocka_run_group_tests' result). Not reentrant: one run at a time. */
int wc_contract_run(const char *backend_label, wc_contract_open_fn open_store, void *arg);

#endif
