/* cmd_index.c - `ctsdb index rebuild|status|drop`: the tag index (schema/tagidx.h) of a store.
 * rebuild is the one-shot build for series written before the index existed or by writers that
 * do not keep it (the shell, OpenTSDB on a shared Bigtable): every series of the data table gets
 * its entries, then the index is marked complete and queries use it. drop unmarks it (queries
 * stop using it; entries stay and a rebuild reuses them). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "schema/tagidx.h"
#include "schema/tsdb.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void index_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb index [--config FILE] [--data DIR] [--KEY=VALUE]... rebuild|status|drop\n\n"
            "The tag index in tsdb-meta, which /api/query reads to scan only the series whose\n"
            "tags a filter pins (docs/query.md).\n"
            "  rebuild   put the entries of every series of the data table, then mark the index\n"
            "            complete (prints the number of series)\n"
            "  status    print `complete` or `incomplete` (exit status 0 either way)\n"
            "  drop      mark the index incomplete: queries stop using it until a rebuild\n\n"
            "options:\n"
            "  --config FILE     configuration file (key = value, as the TSD's)\n"
            "  --data DIR        data directory (default ./data)\n"
            "  --KEY=VALUE       any configuration key (docs/tsd.md); --set KEY=VALUE: the same\n"
            "  -h, --help        this text\n");
}

static int index_run(int argc, char **argv)
{
    struct tool_opts to;
    int st = tool_opts_init(&to, "index", index_usage, &argc, argv);
    if (st < 0)
        st = tool_opts_parse(&to, argc, argv, "h");
    if (st >= 0)
        return st;
    if (optind + 1 != argc || (strcmp(argv[optind], "rebuild") && strcmp(argv[optind], "status") &&
                               strcmp(argv[optind], "drop"))) {
        fprintf(stderr, "ctsdb index: expected one of rebuild, status, drop\n");
        index_usage(stderr);
        return 2;
    }
    const char *what = argv[optind];
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    if (tool_opts_open(&to, &s, &t) != 0)
        return 1;
    struct ct_err err = {0};
    int rc, status = 0;
    if (!strcmp(what, "rebuild")) {
        uint64_t n = 0;
        rc = tagidx_rebuild(t, &n, &err);
        if (rc == CT_OK)
            printf("indexed %llu series\n", (unsigned long long)n);
    } else if (!strcmp(what, "status")) {
        bool c = false;
        rc = tagidx_complete(t, &c, &err);
        if (rc == CT_OK)
            printf("%s\n", c ? "complete" : "incomplete");
    } else {
        rc = tagidx_unmark(t, &err);
    }
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb index %s: %s\n", what, err.msg);
        status = 1;
    }
    tsdb_close(t);
    wc_close(s);
    return status;
}

const struct tool_command tool_cmd_index = {"index", "rebuild or inspect the tag index",
                                            index_run};
