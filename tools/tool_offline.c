/* tool_offline.c - see tool_offline.h. */
#include "tools/tool_offline.h"

#include <stdbool.h>

#include "storage/wc.h"
#include "tsd/conf.h"
#include "tsd/store.h"
#include "tsd/tlog.h"

static void offline_warn(void *arg, const char *msg)
{
    fprintf(stderr, "ctsdb %s: warning: %s\n", (const char *)arg, msg);
}

int tool_offline_open(struct tool_offline *o, const char *cmd, int argc, char **argv,
                      void (*usage)(FILE *out), void (*busy)(const char *name))
{
    *o = (struct tool_offline){cmd, NULL, NULL, NULL};
    struct ct_err err = {0};
    if (conf_new(&o->conf, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", cmd, err.msg);
        return 1;
    }
    int ops[2], nops = 0;
    bool help = false;
    if (conf_apply_argv(o->conf, argc, argv, ops, 2, &nops, &help, offline_warn, (void *)cmd,
                        &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s (see ctsdb %s --help)\n", cmd, err.msg, cmd);
        return 2;
    }
    if (help) {
        usage(stdout);
        return 0;
    }
    if (nops != 1) {
        fprintf(stderr, "ctsdb %s: give one snapshot name (see ctsdb %s --help)\n", cmd, cmd);
        return 2;
    }
    const char *name = argv[ops[0]];
    if (wc_snapshot_name_check(name, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", cmd, err.msg);
        return 2;
    }
    tlog_set_level(TLOG_WARN);
    int rc = tsdstore_open(o->conf, TSDSTORE_EXISTING, &o->store, &err);
    if (rc != CT_OK) {
        o->store = NULL;
        fprintf(stderr, "ctsdb %s: %s\n", cmd, err.msg);
        if (rc == CT_EBUSY && busy)
            busy(name);
        return 1;
    }
    o->name = name;
    return -1;
}

void tool_offline_close(struct tool_offline *o)
{
    tsdstore_close(o->store);
    conf_free(o->conf);
    o->store = NULL;
    o->conf = NULL;
}
