/* cmd_snapshot.c - `ctsdb snapshot NAME`: takes a snapshot of every table of the store (the
 * embedded engine's wc_snapshot_create with no table: hard links of the block files and a frozen
 * copy of the catalog in DIR/snapshots/NAME/, see docs/engine.md). Options as `ctsdb import`
 * takes them (tsd/conf.h: --data DIR, --config FILE, --key=value). The store is opened directly,
 * so the TSD must not be running on it: its lock refuses the open, and the message says to take
 * the snapshot through the running TSD (POST /api/admin/snapshot?name=NAME). Exit status 0 taken,
 * 1 refused or failed, 2 usage. */
#include <stdio.h>
#include <stdlib.h>

#include "storage/wc.h"
#include "tools/tool.h"
#include "tsd/conf.h"
#include "tsd/store.h"
#include "tsd/tlog.h"

static void snapshot_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb snapshot [--data DIR] [--config FILE] [--key=value ...] NAME\n\n"
            "Takes snapshot NAME of every table of the store in DIR (default ./data): hard links\n"
            "of the block files and a frozen copy of the catalog in DIR/snapshots/NAME/. Restore\n"
            "it with `ctsdb restore NAME`; list and delete snapshots with `ctsdb shell`\n"
            "(list_snapshots, delete_snapshot). While a TSD runs on DIR, take the snapshot\n"
            "through it: POST /api/admin/snapshot?name=NAME (an admin action).\n");
}

static void snapshot_warn(void *arg, const char *msg)
{
    (void)arg;
    fprintf(stderr, "ctsdb snapshot: warning: %s\n", msg);
}

static int snapshot_run(int argc, char **argv)
{
    struct ct_err err = {0};
    struct conf *c = NULL;
    if (conf_new(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s\n", err.msg);
        return 1;
    }
    int ops[2], nops = 0, status = 2;
    bool help = false;
    struct tsdstore *st = NULL;
    if (conf_apply_argv(c, argc, argv, ops, 2, &nops, &help, snapshot_warn, NULL, &err) != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s (see ctsdb snapshot --help)\n", err.msg);
        goto out;
    }
    if (help) {
        snapshot_usage(stdout);
        status = 0;
        goto out;
    }
    if (nops != 1) {
        fprintf(stderr, "ctsdb snapshot: give one snapshot name (see ctsdb snapshot --help)\n");
        goto out;
    }
    const char *name = argv[ops[0]];
    if (wc_snapshot_name_check(name, &err) != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s\n", err.msg);
        goto out;
    }
    status = 1;
    tlog_set_level(TLOG_WARN);
    int rc = tsdstore_open(c, false, &st, &err);
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s\n", err.msg);
        if (rc == CT_EBUSY)
            fprintf(stderr,
                    "ctsdb snapshot: a TSD runs on it: take the snapshot through it "
                    "(POST /api/admin/snapshot?name=%s)\n",
                    name);
        goto out;
    }
    if (wc_snapshot_create(tsdstore_wc(st), name, NULL, &err) != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s\n", err.msg);
        goto out;
    }
    printf("snapshot %s taken of %s\n", name, conf_get_str(c, "tsd.storage.directory"));
    status = 0;
out:
    tsdstore_close(st);
    conf_free(c);
    return status;
}

const struct tool_command tool_cmd_snapshot = {"snapshot", "take a snapshot of the whole store",
                                               snapshot_run};
