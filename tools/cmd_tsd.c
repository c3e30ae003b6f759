/* cmd_tsd.c - `ctsdb tsd`: runs the daemon. Builds the configuration (defaults, then --config
 * FILE, then command-line overrides in order), sets the log level, and calls tsd_run().
 * Exit status: 0 after a clean shutdown, 1 on a runtime failure, 2 on a usage or configuration
 * error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tool.h"
#include "tsd/conf.h"
#include "tsd/tlog.h"
#include "tsd/tsd.h"

static void tsd_cmd_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb tsd [--config FILE] [--port N] [--bind ADDR] [--data DIR]\n"
            "                 [--staticroot DIR] [--key=value ...]\n\n"
            "Runs the TSD: telnet `put` lines and the HTTP API on one port, writing to the\n"
            "embedded store in DIR (default ./data). Settings use OpenTSDB's key names (see\n"
            "docs/tsd.md); --key=value sets any of them, e.g. --tsd.core.auto_create_metrics=false.\n"
            "Later options override earlier ones and the config file. Stops cleanly on SIGTERM or\n"
            "SIGINT.\n");
}

static void tsd_cmd_warn(void *arg, const char *msg)
{
    (void)arg;
    tlog_warn("%s", msg);
}

static int tsd_cmd_set(struct conf *c, const char *key, const char *value)
{
    struct ct_err err = {0};
    bool unknown = false;
    if (conf_set(c, key, value, &unknown, &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        return -1;
    }
    if (unknown)
        tlog_warn("unknown configuration key %s (kept, unused)", key);
    return 0;
}

static int tsd_cmd_run(int argc, char **argv)
{
    struct ct_err err = {0};
    struct conf *c = NULL;
    if (conf_new(&c, &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        return 1;
    }
    int status = 2;
    /* the config file first, so that command-line options override it wherever they are */
    for (int i = 1; i < argc; i++) {
        const char *file = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            file = argv[++i];
        else if (!strncmp(argv[i], "--config=", 9))
            file = argv[i] + 9;
        if (file && conf_load_file(c, file, tsd_cmd_warn, NULL, &err) != CT_OK) {
            fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
            goto out;
        }
    }
    static const struct {
        const char *opt, *key;
    } aliases[] = {{"--port", "tsd.network.port"},
                   {"--bind", "tsd.network.bind"},
                   {"--data", "tsd.storage.directory"},
                   {"--staticroot", "tsd.http.staticroot"},
                   {"--log-level", "tsd.logging.level"}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            tsd_cmd_usage(stdout);
            status = 0;
            goto out;
        }
        if (!strcmp(a, "--config")) {
            i++;
            continue;
        }
        if (!strncmp(a, "--config=", 9))
            continue;
        bool done = false;
        for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]) && !done; k++) {
            size_t l = strlen(aliases[k].opt);
            if (!strcmp(a, aliases[k].opt)) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "ctsdb tsd: %s needs a value\n", a);
                    goto out;
                }
                if (tsd_cmd_set(c, aliases[k].key, argv[++i]) != 0)
                    goto out;
                done = true;
            } else if (!strncmp(a, aliases[k].opt, l) && a[l] == '=') {
                if (tsd_cmd_set(c, aliases[k].key, a + l + 1) != 0)
                    goto out;
                done = true;
            }
        }
        if (done)
            continue;
        if (!strncmp(a, "--", 2) && strchr(a, '=')) {
            char key[256];
            const char *eq = strchr(a, '=');
            size_t kl = (size_t)(eq - (a + 2));
            if (kl == 0 || kl >= sizeof(key)) {
                fprintf(stderr, "ctsdb tsd: bad option '%s'\n", a);
                goto out;
            }
            memcpy(key, a + 2, kl);
            key[kl] = '\0';
            if (tsd_cmd_set(c, key, eq + 1) != 0)
                goto out;
            continue;
        }
        fprintf(stderr, "ctsdb tsd: unexpected argument '%s' (see ctsdb tsd --help)\n", a);
        goto out;
    }
    if (tlog_set_level_name(conf_get_str(c, "tsd.logging.level"), &err) != CT_OK) {
        fprintf(stderr, "ctsdb tsd: %s\n", err.msg);
        goto out;
    }
    conf_set_global(c);
    if (tsd_run(c, &err) != CT_OK) {
        tlog_error("%s", err.msg);
        status = 1;
        goto out;
    }
    status = 0;
out:
    conf_set_global(NULL);
    conf_free(c);
    return status;
}

const struct tool_command tool_cmd_tsd = {"tsd", "run the TSD daemon (telnet and HTTP on one port)",
                                          tsd_cmd_run};
