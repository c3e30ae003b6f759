/* tool_opts.c - see tool_opts.h. The configuration is built in a struct conf (tsd/conf.h, the
 * one key table) and freed before tool_opts_init returns: what the tool keeps (the schema's
 * settings, the data directory) is copied into struct tool_opts, so no tool has to free it. */
#include "tools/tool_opts.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "tsd/conf.h"
#include "tsd/store.h"

static void tool_opts_warn(void *arg, const char *msg)
{
    const struct tool_opts *o = arg;
    fprintf(stderr, "ctsdb %s: warning: %s\n", o->cmd, msg);
}

/* Copies s into buf (cap bytes); false if it does not fit. */
static bool tool_opts_copy(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (n >= cap)
        return false;
    memcpy(buf, s, n + 1);
    return true;
}

int tool_opts_init(struct tool_opts *o, const char *cmd, void (*usage)(FILE *out), int *argc,
                   char **argv)
{
    memset(o, 0, sizeof(*o));
    o->cmd = cmd;
    o->usage = usage;
    optind = 1;
    opterr = 0;
    struct ct_err err = {0};
    struct conf *c = NULL;
    if (conf_new(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", cmd, err.msg);
        return 1;
    }
    int st = 2;
    if (conf_take_argv(c, argc, argv, tool_opts_warn, o, &err) != CT_OK ||
        conf_tsdb_config(c, &o->config, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s (see ctsdb %s --help)\n", cmd, err.msg, cmd);
        goto out;
    }
    const char *dir = conf_get_str(c, "tsd.storage.directory");
    const char **tables[3] = {&o->config.data_table, &o->config.uid_table, &o->config.meta_table};
    for (int i = 0; i < 3; i++) {
        if (!tool_opts_copy(o->table_buf[i], sizeof(o->table_buf[i]), *tables[i])) {
            fprintf(stderr, "ctsdb %s: table name '%s' is too long\n", cmd, *tables[i]);
            goto out;
        }
        *tables[i] = o->table_buf[i];
    }
    if (!tool_opts_copy(o->data_buf, sizeof(o->data_buf), dir) ||
        !tool_opts_copy(o->special_buf, sizeof(o->special_buf),
                        o->config.allow_special ? o->config.allow_special : "")) {
        fprintf(stderr, "ctsdb %s: the data directory or allow_specialchars is too long\n", cmd);
        goto out;
    }
    o->data = o->data_buf;
    o->data_set = conf_is_set(c, "tsd.storage.directory");
    o->config.allow_special = o->special_buf;
    o->backend_set = conf_is_set(c, "tsd.storage.backend");
    tsdstore_wc_options(c, &o->wo);
    o->bigtable = o->wo.backend == WC_BACKEND_BIGTABLE;
    o->wo.data_dir = o->data;
    const char **bt[5] = {&o->wo.bt_project, &o->wo.bt_instance, &o->wo.bt_data_endpoint,
                          &o->wo.bt_admin_endpoint, &o->wo.bt_credentials};
    for (int i = 0; i < 5; i++) {
        if (!*bt[i])
            continue;
        if (!tool_opts_copy(o->bt_buf[i], sizeof(o->bt_buf[i]), *bt[i])) {
            fprintf(stderr, "ctsdb %s: a tsd.storage.bigtable setting is too long\n", cmd);
            goto out;
        }
        *bt[i] = o->bt_buf[i];
    }
    st = -1;
out:
    conf_free(c);
    return st;
}

int tool_opts_handle(struct tool_opts *o, int opt, char **argv)
{
    switch (opt) {
    case 'h':
        o->usage(stdout);
        return 0;
    default:
        fprintf(stderr, "ctsdb %s: unknown or incomplete option '%s'\n", o->cmd, argv[optind - 1]);
        o->usage(stderr);
        return 2;
    }
}

int tool_opts_parse(struct tool_opts *o, int argc, char **argv, const char *shortopts)
{
    static const struct option longs[] = {
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int opt, st;
    while ((opt = getopt_long(argc, argv, shortopts, longs, NULL)) != -1)
        if ((st = tool_opts_handle(o, opt, argv)) >= 0)
            return st;
    return -1;
}

bool tool_opts_emulator_ignored(const struct tool_opts *o)
{
    const char *emu = getenv("BIGTABLE_EMULATOR_HOST");
    return emu && *emu && !o->bigtable && !o->backend_set;
}

void tool_opts_describe(const struct tool_opts *o, char *buf, size_t cap)
{
    tsdstore_describe(&o->wo, buf, cap);
}

int tool_opts_open(struct tool_opts *o, struct wc_store **s, struct tsdb **t)
{
    struct ct_err err = {0};
    if (tool_opts_emulator_ignored(o))
        fprintf(stderr,
                "ctsdb %s: warning: BIGTABLE_EMULATOR_HOST is set but tsd.storage.backend is not: "
                "using the embedded store in %s (give --tsd.storage.backend=bigtable for the "
                "emulator)\n",
                o->cmd, o->data);
    if (!o->bigtable) {
        if (tsdb_open_dir(o->data, &o->config, s, t, &err) != CT_OK) {
            fprintf(stderr, "ctsdb %s: %s\n", o->cmd, err.msg);
            return 1;
        }
        return 0;
    }
    struct wc_store *st = NULL;
    if (wc_open(&o->wo, &st, &err) != CT_OK) {
        char where[768];
        tool_opts_describe(o, where, sizeof(where));
        fprintf(stderr, "ctsdb %s: cannot open %s: %s\n", o->cmd, where, err.msg);
        return 1;
    }
    o->config.create_tables = false;
    if (tsdb_open(st, &o->config, t, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", o->cmd, err.msg);
        wc_close(st);
        return 1;
    }
    *s = st;
    return 0;
}
