/* cmd_restore.c - `ctsdb restore NAME`: puts every table of snapshot NAME back as it was when
 * the snapshot was taken (wc_snapshot_restore): each table is disabled, restored, and enabled
 * again (tables that were disabled stay disabled; a table the snapshot holds that no longer
 * exists is created enabled). Offline only: the store is opened directly, so a running TSD's
 * lock refuses it (stop the TSD first). Options as `ctsdb import` takes them. Tables not in the
 * snapshot are not touched. Exit status 0 restored, 1 refused or failed, 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/wc.h"
#include "tools/tool.h"
#include "tools/tool_offline.h"
#include "tsd/conf.h"
#include "tsd/store.h"

#define RESTORE_MAX_TABLES 256

static void restore_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb restore [--data DIR] [--config FILE] [--key=value ...] NAME\n\n"
            "Restores every table of snapshot NAME (see `ctsdb snapshot`, or a table snapshot\n"
            "taken in `ctsdb shell`) in the store in DIR (default ./data): the tables get back\n"
            "the cells, families and regions they had when the snapshot was taken; writes made\n"
            "since are gone. The TSD must be stopped. Tables not in the snapshot are kept.\n");
}

static void restore_busy(const char *name)
{
    (void)name;
    fprintf(stderr, "ctsdb restore: stop the TSD running on it first\n");
}

struct restore_find {
    const char *name;
    bool found;
};

static int restore_find_fn(void *arg, const struct wc_snapshot_info *info)
{
    struct restore_find *f = arg;
    if (strcmp(f->name, info->name) != 0)
        return 0;
    f->found = true;
    return 1;
}

struct restore_tables {
    char *names[RESTORE_MAX_TABLES];
    bool enabled[RESTORE_MAX_TABLES];
    size_t n;
};

static int restore_collect(void *arg, const char *name)
{
    struct restore_tables *t = arg;
    if (t->n == RESTORE_MAX_TABLES)
        return 1;
    t->names[t->n] = strdup(name);
    if (!t->names[t->n])
        return 1;
    t->n++;
    return 0;
}

static int restore_run(int argc, char **argv)
{
    struct restore_tables tabs = {0};
    struct ct_err err = {0};
    struct tool_offline o;
    int status = tool_offline_open(&o, "restore", argc, argv, restore_usage, restore_busy);
    if (status >= 0)
        goto out;
    status = 1;
    const char *name = o.name;
    struct wc_store *s = tsdstore_wc(o.store);
    struct restore_find f = {name, false};
    if (wc_snapshot_list(s, restore_find_fn, &f, &err) != CT_OK) {
        fprintf(stderr, "ctsdb restore: %s\n", err.msg);
        goto out;
    }
    if (!f.found) {
        fprintf(stderr, "ctsdb restore: Snapshot '%s' doesn't exist\n", name);
        goto out;
    }
    /* the tables enabled now are disabled for the restore and enabled again after it */
    if (wc_table_list(s, restore_collect, &tabs, &err) != CT_OK) {
        fprintf(stderr, "ctsdb restore: %s\n", err.msg);
        goto out;
    }
    for (size_t i = 0; i < tabs.n; i++) {
        struct wc_table_desc *d;
        if (wc_table_describe(s, tabs.names[i], &d, &err) != CT_OK) {
            fprintf(stderr, "ctsdb restore: %s\n", err.msg);
            goto reenable;
        }
        tabs.enabled[i] = d->enabled;
        wc_table_desc_free(d);
        if (tabs.enabled[i] && wc_table_disable(s, tabs.names[i], &err) != CT_OK) {
            fprintf(stderr, "ctsdb restore: %s\n", err.msg);
            tabs.enabled[i] = false;
            goto reenable;
        }
    }
    if (wc_snapshot_restore(s, name, &err) != CT_OK) {
        fprintf(stderr, "ctsdb restore: %s\n", err.msg);
        goto reenable;
    }
    status = 0;
reenable:
    for (size_t i = 0; i < tabs.n; i++) {
        struct ct_err e2 = {0};
        if (tabs.enabled[i] && wc_table_enable(s, tabs.names[i], &e2) != CT_OK) {
            fprintf(stderr, "ctsdb restore: %s\n", e2.msg);
            status = 1;
        }
    }
    /* a table the snapshot created (it no longer existed) is left disabled by the restore */
    if (status == 0) {
        struct restore_tables now = {0};
        if (wc_table_list(s, restore_collect, &now, &err) == CT_OK)
            for (size_t i = 0; i < now.n; i++) {
                struct wc_table_desc *d;
                if (wc_table_describe(s, now.names[i], &d, &err) != CT_OK)
                    continue;
                bool known = false;
                for (size_t k = 0; k < tabs.n && !known; k++)
                    known = !strcmp(tabs.names[k], now.names[i]);
                if (!known && !d->enabled && wc_table_enable(s, now.names[i], &err) != CT_OK)
                    fprintf(stderr, "ctsdb restore: %s\n", err.msg);
                wc_table_desc_free(d);
            }
        for (size_t i = 0; i < now.n; i++)
            free(now.names[i]);
        printf("snapshot %s restored in %s\n", name, conf_get_str(o.conf, "tsd.storage.directory"));
    }
out:
    for (size_t i = 0; i < tabs.n; i++)
        free(tabs.names[i]);
    tool_offline_close(&o);
    return status;
}

const struct tool_command tool_cmd_restore = {"restore", "restore a snapshot (the TSD stopped)",
                                              restore_run};
