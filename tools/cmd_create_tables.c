/* cmd_create_tables.c - `ctsdb create-tables`: creates the tsdb, tsdb-uid and tsdb-meta tables
 * with OpenTSDB's families and the given storage settings; the data table is pre-split at every
 * salt bucket (src/create_table.sh's job in OpenTSDB). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/tsdb.h"
#include "storage/wc.h"
#include "tools/tool.h"

static void create_tables_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb create-tables [options]\n\n"
            "Creates the tables tsdb (family t), tsdb-uid (families id, name) and tsdb-meta\n"
            "(family name) where they are missing. With salting the data table gets one region\n"
            "per salt bucket (times --regions-per-bucket).\n\n"
            "options:\n"
            "  --data DIR               data directory (default ./data)\n"
            "  --salt-width N           salt bytes, 0 = no salt (default 0)\n"
            "  --salt-buckets N         salt buckets (default 20)\n"
            "  --regions-per-bucket N   regions per salt bucket (default 1)\n"
            "  --ttl SECONDS            TTL of the data family (default forever)\n"
            "  --min-versions N         MIN_VERSIONS of the data family (default 0)\n"
            "  --compression C          NONE, SNAPPY or GZ (default SNAPPY)\n"
            "  --bloom B                NONE, ROW or ROWCOL (default ROW)\n"
            "  --set KEY=VALUE          any schema config key (tsd.storage.uid.width.metric, ...)\n"
            "  -h, --help               this text\n");
}

static int create_tables_set(struct tsdb_config *c, const char *key, const char *val)
{
    struct ct_err err = {0};
    int rc = tsdb_config_set(c, key, val, &err);
    if (rc == CT_NOTFOUND) {
        fprintf(stderr, "ctsdb create-tables: unknown config key '%s'\n", key);
        return 2;
    }
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
        return 2;
    }
    return 0;
}

static int create_tables_run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"data", required_argument, 0, 'd'},
        {"salt-width", required_argument, 0, 'w'},
        {"salt-buckets", required_argument, 0, 'b'},
        {"regions-per-bucket", required_argument, 0, 'r'},
        {"ttl", required_argument, 0, 't'},
        {"min-versions", required_argument, 0, 'm'},
        {"compression", required_argument, 0, 'c'},
        {"bloom", required_argument, 0, 'f'},
        {"set", required_argument, 0, 's'},
        {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *data = "data";
    struct tsdb_config c;
    tsdb_config_init(&c);
    int opt, rc;
    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        const char *key = NULL;
        switch (opt) {
        case 'd':
            data = optarg;
            continue;
        case 'w':
            key = "tsd.storage.salt.width";
            break;
        case 'b':
            key = "tsd.storage.salt.buckets";
            break;
        case 'r':
            key = "tsd.storage.ctsdb.regions_per_bucket";
            break;
        case 't':
            key = "tsd.storage.ctsdb.ttl";
            break;
        case 'm':
            key = "tsd.storage.ctsdb.min_versions";
            break;
        case 'c':
            key = "tsd.storage.ctsdb.compression";
            break;
        case 'f':
            key = "tsd.storage.ctsdb.bloom";
            break;
        case 's': {
            char *eq = strchr(optarg, '=');
            if (!eq) {
                fprintf(stderr, "ctsdb create-tables: --set needs KEY=VALUE, got '%s'\n", optarg);
                return 2;
            }
            *eq = 0;
            if ((rc = create_tables_set(&c, optarg, eq + 1)) != 0)
                return rc;
            continue;
        }
        case 'h':
            create_tables_usage(stdout);
            return 0;
        default:
            fprintf(stderr, "ctsdb create-tables: unknown or incomplete option '%s'\n",
                    argv[optind - 1]);
            create_tables_usage(stderr);
            return 2;
        }
        if ((rc = create_tables_set(&c, key, optarg)) != 0)
            return rc;
    }
    if (optind < argc) {
        fprintf(stderr, "ctsdb create-tables: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    struct ct_err err = {0};
    if (tsdb_config_check(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
        return 2;
    }
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = data;
    struct wc_store *s = NULL;
    if (wc_open(&o, &s, &err) != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: cannot open %s: %s\n", data, err.msg);
        return 1;
    }
    int created = 0;
    rc = tsdb_create_tables(s, &c, &created, &err);
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb create-tables: %s\n", err.msg);
        wc_close(s);
        return 1;
    }
    const char *names[3] = {c.data_table, c.uid_table, c.meta_table};
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
    printf("%d table%s created, %d already existed\n", created, created == 1 ? "" : "s",
           3 - created);
    wc_close(s);
    return 0;
}

const struct tool_command tool_cmd_create_tables = {
    "create-tables", "create the tsdb, tsdb-uid and tsdb-meta tables", create_tables_run};
