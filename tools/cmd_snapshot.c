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
#include "tools/tool_offline.h"
#include "tsd/conf.h"
#include "tsd/store.h"

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

static void snapshot_busy(const char *name)
{
    fprintf(stderr,
            "ctsdb snapshot: a TSD runs on it: take the snapshot through it "
            "(POST /api/admin/snapshot?name=%s)\n",
            name);
}

static int snapshot_run(int argc, char **argv)
{
    struct tool_offline o;
    int status = tool_offline_open(&o, "snapshot", argc, argv, snapshot_usage, snapshot_busy);
    if (status >= 0)
        goto out;
    status = 1;
    struct ct_err err = {0};
    if (wc_snapshot_create(tsdstore_wc(o.store), o.name, NULL, &err) != CT_OK) {
        fprintf(stderr, "ctsdb snapshot: %s\n", err.msg);
        goto out;
    }
    printf("snapshot %s taken of %s\n", o.name, conf_get_str(o.conf, "tsd.storage.directory"));
    status = 0;
out:
    tool_offline_close(&o);
    return status;
}

const struct tool_command tool_cmd_snapshot = {"snapshot", "take a snapshot of the whole store",
                                               snapshot_run};
