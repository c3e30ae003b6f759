/* test_bigtable_contract.c - the backend-neutral wc.h contract suite (tests/lib/wc_contract.c)
 * against the Bigtable backend on Google's Bigtable emulator, started and stopped by this program
 * (test_bigtable_emu.h). Without the emulator it reports one skipped test, or fails when
 * CI=true. */
#include <stdio.h>

#include "storage/wc.h"
#include "tests/lib/ctest.h"
#include "tests/lib/wc_contract.h"
#include "tests/unit/storage/test_bigtable_emu.h"

static int open_contract_store(struct wc_store **out, void *arg)
{
    (void)arg;
    struct wc_options o;
    wc_options_init(&o);
    o.backend = WC_BACKEND_BIGTABLE;
    o.bt_deadline_ms = 10000;
    struct ct_err err;
    if (wc_open(&o, out, &err) != CT_OK) {
        fprintf(stderr, "contract: cannot open the bigtable store: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static void test_contract_needs_the_emulator(void **state)
{
    (void)state;
    skip();
}

int main(void)
{
    if (emulator_start(NULL) != 0) {
        emulator_stop(NULL);
        fprintf(stderr, "[  FAILED  ] 1 test(s): the bigtable emulator could not be started\n");
        return 1;
    }
    int failed;
    if (emu_missing) {
        const struct CMUnitTest skipped[] = {cmocka_unit_test(test_contract_needs_the_emulator)};
        failed =
            cmocka_run_group_tests_name("wc contract (bigtable emulator)", skipped, NULL, NULL);
    } else {
        failed = wc_contract_run("bigtable emulator", open_contract_store, NULL);
    }
    emulator_stop(NULL);
    return failed;
}
