/* cmd_mkmetric.c - `ctsdb mkmetric NAME...`: assigns metric UIDs (OpenTSDB's `tsdb mkmetric`,
 * i.e. `uid assign metrics`), needed when tsd.core.auto_create_metrics is false. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "schema/tsdb.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void mkmetric_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb mkmetric [--config FILE] [--data DIR] [--KEY=VALUE]... NAME...\n\n"
            "Assigns a UID to each metric name (prints `metrics NAME: [b0, b1, b2]`).\n"
            "A name that already has one is reported and makes the exit status 1.\n\n"
            "options:\n"
            "  --config FILE     configuration file (key = value, as the TSD's)\n"
            "  --data DIR        data directory (default ./data)\n"
            "  --KEY=VALUE       any configuration key (docs/tsd.md), e.g.\n"
            "                    --tsd.core.uid.random_metrics=true; --set KEY=VALUE: the same\n"
            "  -h, --help        this text\n");
}

static int mkmetric_run(int argc, char **argv)
{
    struct tool_opts to;
    int st = tool_opts_init(&to, "mkmetric", mkmetric_usage, &argc, argv);
    if (st < 0)
        st = tool_opts_parse(&to, argc, argv, "h");
    if (st >= 0)
        return st;
    if (optind >= argc) {
        fprintf(stderr, "ctsdb mkmetric: no metric name given\n");
        mkmetric_usage(stderr);
        return 2;
    }
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    if (tool_opts_open(&to, &s, &t) != 0)
        return 1;
    struct ct_err err = {0};
    struct uid *u = tsdb_uid(t);
    int status = 0;
    for (int i = optind; i < argc; i++) {
        uint64_t id;
        if (uid_assign_id(u, UID_METRIC, argv[i], strlen(argv[i]), &id, &err) != CT_OK) {
            fprintf(stderr, "ctsdb mkmetric: metrics '%s': %s\n", argv[i], err.msg);
            status = 1;
            continue;
        }
        unsigned w = uid_width(u, UID_METRIC);
        printf("metrics %s: [", argv[i]);
        for (unsigned b = 0; b < w; b++)
            printf("%s%u", b ? ", " : "", (unsigned)((id >> (8 * (w - 1 - b))) & 0xff));
        printf("]\n");
    }
    tsdb_close(t);
    wc_close(s);
    return status;
}

const struct tool_command tool_cmd_mkmetric = {"mkmetric", "assign UIDs to metric names",
                                               mkmetric_run};
