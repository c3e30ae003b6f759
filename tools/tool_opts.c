/* tool_opts.c - see tool_opts.h. */
#include "tools/tool_opts.h"

#include <getopt.h>
#include <string.h>

void tool_opts_init(struct tool_opts *o, const char *cmd, void (*usage)(FILE *out))
{
    o->cmd = cmd;
    o->usage = usage;
    o->data = "data";
    tsdb_config_init(&o->config);
    o->keep_layout = false;
    optind = 1;
    opterr = 0;
}

int tool_opts_handle(struct tool_opts *o, int opt, char **argv)
{
    switch (opt) {
    case 'd':
        o->data = optarg;
        return -1;
    case 's':
        return tool_opts_set(o->cmd, &o->config, optarg, &o->keep_layout) != 0 ? 2 : -1;
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
        {"data", required_argument, 0, 'd'},
        {"set", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    int opt, st;
    while ((opt = getopt_long(argc, argv, shortopts, longs, NULL)) != -1)
        if ((st = tool_opts_handle(o, opt, argv)) >= 0)
            return st;
    return -1;
}

int tool_opts_open(struct tool_opts *o, struct wc_store **s, struct tsdb **t)
{
    struct ct_err err = {0};
    if (tsdb_open_dir(o->data, &o->config, o->keep_layout, s, t, &err) != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", o->cmd, err.msg);
        return 1;
    }
    return 0;
}

int tool_opts_set(const char *cmd, struct tsdb_config *c, char *kv, bool *keep_layout)
{
    char *eq = strchr(kv, '=');
    if (!eq) {
        fprintf(stderr, "ctsdb %s: --set needs KEY=VALUE, got '%s'\n", cmd, kv);
        return 2;
    }
    *eq = 0;
    struct ct_err err = {0};
    int rc = tsdb_config_set(c, kv, eq + 1, &err);
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", cmd, rc == CT_NOTFOUND ? "unknown config key" : err.msg);
        return 2;
    }
    *keep_layout |=
        !strncmp(kv, "tsd.storage.salt.", 17) || !strncmp(kv, "tsd.storage.uid.width.", 22);
    return 0;
}
