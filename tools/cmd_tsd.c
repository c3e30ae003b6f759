/* cmd_tsd.c - `ctsdb tsd`: runs the daemon. Builds the configuration (defaults, then --config
 * FILE, then command-line overrides in order: conf_apply_argv), sets the log level, and calls
 * tsd_run(). With tsd.core.memory_limit_bytes set, splits it first (tsd/membudget.h) and
 * refuses to start when the explicit settings do not fit. Exit status: 0 after a clean
 * shutdown, 1 on a runtime failure (cannot bind, store fails to open), 2 on a usage or
 * configuration error (a memory limit that is too small included). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"
#include "tsd/conf.h"
#include "tsd/membudget.h"
#include "tsd/tlog.h"
#include "tsd/tsd.h"

static void tsd_cmd_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb tsd [--config FILE] [--port N] [--bind ADDR] [--data DIR]\n"
            "                 [--staticroot DIR] [--log-level L] [--key=value ...]\n"
            "       ctsdb tsd --print-config-keys[=schema]\n\n"
            "Runs the TSD: telnet `put` lines and the HTTP API on one port (default 4242),\n"
            "writing to the embedded store in DIR (default ./data). Settings use OpenTSDB's key\n"
            "names (see docs/tsd.md); --key=value sets any of them, e.g.\n"
            "--tsd.core.auto_create_metrics=false. Command-line options override the config\n"
            "file (--set KEY=VALUE is the same as --KEY=VALUE). Stops cleanly on SIGTERM or\n"
            "SIGINT. --print-config-keys prints every key (type, default, range, owner,\n"
            "meaning) as a markdown table; =schema only the schema's.\n");
}

/* --print-config-keys: the one key table as the markdown table of docs/tsd.md (every key) or
 * docs/schema.md (owner "schema", only the schema's keys); tests/integration/test_conf_keys.sh
 * checks that the docs hold exactly this. */
struct tsd_cmd_keys {
    bool schema_only;
};

static void tsd_cmd_md(const char *s)
{
    for (; *s; s++) { /* a '|' would end the cell */
        if (*s == '|')
            fputs("\\|", stdout);
        else
            putchar(*s);
    }
}

static int tsd_cmd_print_key(void *arg, const struct ct_cfg_key *k)
{
    const struct tsd_cmd_keys *x = arg;
    bool schema = k->owner && !strncmp(k->owner, "schema/", 7);
    if (x->schema_only && !schema)
        return 0;
    static const char *const types[] = {"string", "integer", "boolean", "enum"};
    printf("| `%s` | %s | ", k->key, types[k->type]);
    if (*k->def)
        printf("`%s`", k->def);
    else
        printf("\"\"");
    printf(" | ");
    if (k->type == CT_CFG_INT) {
        printf("%lld..%lld", (long long)k->min, (long long)k->max);
    } else if (k->type == CT_CFG_ENUM) {
        for (const char *p = k->choices; *p; p++) {
            if (*p == '|')
                fputs(", ", stdout);
            else
                putchar(*p);
        }
    }
    printf(" | %s | ", k->owner ? k->owner : "none: accepted, no effect");
    tsd_cmd_md(k->meaning);
    printf(" |\n");
    return 0;
}

static int tsd_cmd_print_keys(const struct conf *c, bool schema_only)
{
    struct tsd_cmd_keys x = {schema_only};
    printf("| key | type | default | range | owner | meaning |\n");
    printf("| --- | --- | --- | --- | --- | --- |\n");
    return conf_each_key(c, tsd_cmd_print_key, &x);
}

static void tsd_cmd_warn(void *arg, const char *msg)
{
    (void)arg;
    tlog_warn("%s", msg);
}

static int tsd_cmd_run(int argc, char **argv)
{
    struct ct_err err = {0};
    struct conf *c = NULL;
    if (conf_new(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        return 1;
    }
    int status = 2, operands[1], nops = 0;
    bool help = false;
    if (argc == 2 && (!strcmp(argv[1], "--print-config-keys") ||
                      !strcmp(argv[1], "--print-config-keys=schema"))) {
        status = tsd_cmd_print_keys(c, argv[1][19] == '=');
        goto out;
    }
    if (conf_apply_argv(c, argc, argv, operands, 0, &nops, &help, tsd_cmd_warn, NULL, &err) !=
        CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s (see ctsdb tsd --help)\n", err.msg);
        goto out;
    }
    if (help) {
        tsd_cmd_usage(stdout);
        status = 0;
        goto out;
    }
    if (tlog_set_level_name(conf_get_str(c, "tsd.logging.level"), &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        goto out;
    }
    struct membudget mb;
    if (membudget_apply(c, &mb, &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        goto out;
    }
    membudget_tune_allocator(&mb);
    if (mb.limit) {
        char line[768];
        membudget_describe(&mb, line, sizeof(line));
        tlog_info("memory: %s", line);
    }
    if (tsd_run(c, &err) != CT_OK) {
        tlog_error("%s", err.msg);
        status = 1;
        goto out;
    }
    status = 0;
out:
    conf_free(c);
    return status;
}

const struct tool_command tool_cmd_tsd = {"tsd", "run the TSD daemon (telnet and HTTP on one port)",
                                          tsd_cmd_run};
