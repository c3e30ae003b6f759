/* cmd_create_tables.c - `ctsdb create-tables`: creates the tsdb, tsdb-uid and tsdb-meta tables
 * with OpenTSDB's families and the given storage settings; the data table is pre-split at every
 * salt bucket (src/create_table.sh's job in OpenTSDB). Options: tools/tool_opts.h, plus
 * shorthands for the table-creation keys. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void create_tables_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb create-tables [options]\n\n"
            "Creates the tables tsdb (family t), tsdb-uid (families id, name) and tsdb-meta\n"
            "(family name) where they are missing. With salting (the default: 1 "
            "byte, " TSDB_DEFAULT_SALT_BUCKETS " buckets)\n"
            "the data table gets one region per salt bucket (times regions_per_bucket).\n"
            "The tables of an existing store keep the key layout they were created with.\n\n"
            "options:\n"
            "  --config FILE            configuration file (key = value, as the TSD's)\n"
            "  --data DIR               data directory (default ./data)\n"
            "  --tsd.storage.backend=bigtable  the tables on Bigtable (project, instance,\n"
            "                           endpoints: the tsd.storage.bigtable.* keys, or the\n"
            "                           emulator at BIGTABLE_EMULATOR_HOST); with that variable\n"
            "                           set, the backend must be given (embedded or bigtable)\n"
            "  --KEY=VALUE              any configuration key (docs/tsd.md), e.g.\n"
            "                           --tsd.storage.ctsdb.ttl=86400; --set KEY=VALUE: the same\n"
            "  --salt-width N           tsd.storage.salt.width (0 = OpenTSDB's unsalted keys)\n"
            "  --salt-buckets N         tsd.storage.salt.buckets\n"
            "  --regions-per-bucket N   tsd.storage.ctsdb.regions_per_bucket\n"
            "  --ttl SECONDS            tsd.storage.ctsdb.ttl (0 = forever)\n"
            "  --min-versions N         tsd.storage.ctsdb.min_versions\n"
            "  --compression C          tsd.storage.ctsdb.compression: NONE, SNAPPY or GZ\n"
            "  --bloom B                tsd.storage.ctsdb.bloom: NONE, ROW or ROWCOL\n"
            "  -h, --help               this text\n");
}

static int create_tables_run(int argc, char **argv)
{
    /* the shorthands: each sets one key of the one key table */
    static const struct option longs[] = {
        {"salt-width", required_argument, 0, 'w'},
        {"salt-buckets", required_argument, 0, 'b'},
        {"regions-per-bucket", required_argument, 0, 'r'},
        {"ttl", required_argument, 0, 't'},
        {"min-versions", required_argument, 0, 'm'},
        {"compression", required_argument, 0, 'c'},
        {"bloom", required_argument, 0, 'f'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    static const struct {
        int opt;
        const char *key;
    } keys[] = {{'w', "tsd.storage.salt.width"},
                {'b', "tsd.storage.salt.buckets"},
                {'r', "tsd.storage.ctsdb.regions_per_bucket"},
                {'t', "tsd.storage.ctsdb.ttl"},
                {'m', "tsd.storage.ctsdb.min_versions"},
                {'c', "tsd.storage.ctsdb.compression"},
                {'f', "tsd.storage.ctsdb.bloom"}};
    struct tool_opts to;
    int opt, rc = tool_opts_init(&to, "create-tables", create_tables_usage, &argc, argv);
    if (rc >= 0)
        return rc;
    struct tsdb_config *c = &to.config;
    while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        const char *key = NULL;
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (keys[i].opt == opt)
                key = keys[i].key;
        if (!key) {
            if ((rc = tool_opts_handle(&to, opt, argv)) >= 0)
                return rc;
            continue;
        }
        struct ct_err err = {0};
        if (tsdb_config_set(c, key, optarg, &err) != CT_OK) {
            fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "ctsdb create-tables: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    const char *data = to.data;
    struct ct_err err = {0};
    if (tsdb_config_check(c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
        return 2;
    }
    /* BIGTABLE_EMULATOR_HOST says the user works with the emulator: creating ./data instead
     * would look like success and leave the emulator without tables, so an unset backend is
     * refused there; --tsd.storage.backend=embedded (or --data DIR) says the embedded store
     * was meant */
    if (tool_opts_emulator_ignored(&to) && !to.data_set) {
        fprintf(stderr,
                "ctsdb create-tables: BIGTABLE_EMULATOR_HOST is set but tsd.storage.backend is "
                "not: give --tsd.storage.backend=bigtable to create the tables on the emulator, "
                "or --tsd.storage.backend=embedded (or --data DIR) for the embedded store in "
                "%s\n",
                data);
        return 2;
    }
    char where[768];
    tool_opts_describe(&to, where, sizeof(where));
    struct wc_store *s = NULL;
    if (wc_open(&to.wo, &s, &err) != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: cannot open %s: %s\n", where, err.msg);
        return 1;
    }
    printf("store: %s\n", where);
    int created = 0;
    rc = tsdb_create_tables(s, c, &created, &err);
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
        wc_close(s);
        return 1;
    }
    const char *names[3] = {c->data_table, c->uid_table, c->meta_table};
    for (int i = 0; i < 3; i++) {
        struct wc_region_info *ri = NULL;
        size_t n = 0;
        if (wc_table_regions(s, names[i], &ri, &n, &err) == CT_OK) {
            printf("%s: %zu region%s\n", names[i], n, n == 1 ? "" : "s");
            wc_region_info_free(ri, n);
        } else {
            printf("%s\n", names[i]);
        }
    }
    struct rowkey_layout l;
    if (tsdb_layout_stored(s, c->meta_table, &l, &err) == CT_OK)
        printf("key layout: salt_width=%u salt_buckets=%u uid widths %u/%u/%u\n", l.salt_width,
               l.salt_buckets, l.metric_width, l.tagk_width, l.tagv_width);
    printf("%d table%s created, %d already existed\n", created, created == 1 ? "" : "s",
           3 - created);
    wc_close(s);
    return 0;
}

const struct tool_command tool_cmd_create_tables = {
    "create-tables", "create the tsdb, tsdb-uid and tsdb-meta tables", create_tables_run};
