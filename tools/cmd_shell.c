/* cmd_shell.c - `ctsdb shell`: the HBase-shell-compatible admin shell (docs/shell.md).
 *
 *   ctsdb shell [--config FILE] [--data DIR] [--KEY=VALUE]... [--backend embedded|bigtable]
 *               [--now MS] [-n] [-e 'command']... [SCRIPT]
 *
 * With -e or SCRIPT the commands run as a script; otherwise commands come from stdin, with line
 * editing and history when stdin is a terminal. In a script the first error prints
 * `ERROR: <message>` on stderr and exits 1. --now pins the clock (CTSDB_NOW_MS) before anything
 * else reads it. The shell itself lives in tools/shell_*.c (tools/shell.h). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "storage/clock.h"
#include "tools/shell.h"
#include "tools/tool.h"
#include "tsd/conf.h"
#include "tsd/store.h"

static void shell_usage(FILE *f)
{
    fprintf(f,
            "usage: ctsdb shell [--config FILE] [--data DIR] [--KEY=VALUE]...\n"
            "                   [--backend embedded|bigtable] [--now MS] [-n] [-e 'command']...\n"
            "                   [SCRIPT]\n\n"
            "An HBase-shell-compatible shell over the ctsdb store: create, alter, describe, list,\n"
            "put, get, scan, delete, deleteall, count, incr, get_splits, status, ... ('help').\n\n"
            "  --config FILE  configuration file (key = value, as the TSD's)\n"
            "  --data DIR     data directory of the embedded store (default ./data)\n"
            "  --KEY=VALUE    any configuration key (docs/tsd.md); --set KEY=VALUE: the same\n"
            "  --backend B    embedded or bigtable: sets tsd.storage.backend (default embedded;\n"
            "                 bigtable needs a build with BIGTABLE=1 and BIGTABLE_EMULATOR_HOST\n"
            "                 or credentials; placed by the tsd.storage.bigtable.* keys)\n"
            "  --now MS       pin the clock to MS milliseconds since the epoch (CTSDB_NOW_MS)\n"
            "  -e 'command'   run a command (may be repeated), then exit\n"
            "  -n             read stdin as a script even from a terminal (HBase's -n)\n"
            "  SCRIPT         run the commands of a file ('-' = stdin), then exit\n\n"
            "In a script the first error prints 'ERROR: <message>' on stderr and exits 1.\n");
}

/* Reads a whole file (or stdin for "-") into a new buffer. */
static char *shell_slurp(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    bool failed = buf == NULL;
    while (!failed) {
        if (n == cap) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                failed = true;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            failed = ferror(f) != 0;
            break;
        }
    }
    if (failed) {
        free(buf);
        buf = NULL;
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static void shell_warn(void *arg, const char *msg)
{
    (void)arg;
    fprintf(stderr, "ctsdb shell: warning: %s\n", msg);
}

static int shell_main(int argc, char **argv)
{
    const char *script = NULL, *now = NULL;
    bool noninteractive = false;
    const char **exprs = calloc((size_t)argc, sizeof(*exprs));
    size_t nexprs = 0;
    int status = 2;
    struct ct_err cerr = {0};
    struct conf *c = NULL;
    if (!exprs || conf_new(&c, &cerr) != CT_OK) {
        fprintf(stderr, "ctsdb shell: out of memory\n");
        free(exprs);
        return 1;
    }
    /* the options every subcommand shares (tsd/conf.h): --config, --data, --KEY=VALUE, --set */
    if (conf_take_argv(c, &argc, argv, shell_warn, NULL, &cerr) != CT_OK) {
        fprintf(stderr, "ctsdb shell: %s (see ctsdb shell --help)\n", cerr.msg);
        goto out;
    }
    const char *data_dir = conf_get_str(c, "tsd.storage.directory");
    const char *backend = conf_get_str(c, "tsd.storage.backend");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            shell_usage(stdout);
            status = 0;
            goto out;
        }
        if ((!strcmp(a, "--now") || !strcmp(a, "-e") || !strcmp(a, "--backend")) && i + 1 >= argc) {
            fprintf(stderr, "ctsdb shell: %s needs a value\n", a);
            goto out;
        }
        if (!strcmp(a, "-n") || !strcmp(a, "--noninteractive"))
            noninteractive = true;
        else if (!strcmp(a, "--now"))
            now = argv[++i];
        else if (!strcmp(a, "--backend"))
            backend = argv[++i];
        else if (!strcmp(a, "-e"))
            exprs[nexprs++] = argv[++i];
        else if (!strncmp(a, "--now=", 6))
            now = a + 6;
        else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "ctsdb shell: unknown option '%s' (see ctsdb shell --help)\n", a);
            goto out;
        } else if (!script) {
            script = a;
        } else {
            fprintf(stderr, "ctsdb shell: unexpected argument '%s'\n", a);
            goto out;
        }
    }
    if (now) {
        char *end;
        long long v = strtoll(now, &end, 10);
        if (!*now || *end || v < 0) {
            fprintf(stderr, "ctsdb shell: --now needs milliseconds since the epoch, not '%s'\n",
                    now);
            goto out;
        }
        setenv("CTSDB_NOW_MS", now, 1); /* before anything reads the clock */
        clock_reload();
    }
    struct shell_options o = {0};
    if (!strcmp(backend, "embedded")) {
        o.backend = WC_BACKEND_EMBEDDED;
    } else if (!strcmp(backend, "bigtable")) {
        o.backend = WC_BACKEND_BIGTABLE;
    } else {
        fprintf(stderr, "ctsdb shell: --backend must be embedded or bigtable, not '%s'\n", backend);
        goto out;
    }
    /* --backend is tsd.storage.backend: the store's place (Bigtable project, instance,
     * endpoints, deadline; the directory) then comes from the keys as for every tool. The
     * setting replaces the string `backend` may point to: not read after this. */
    bool unknown = false;
    if (conf_set(c, "tsd.storage.backend",
                 o.backend == WC_BACKEND_BIGTABLE ? "bigtable" : "embedded", &unknown,
                 &cerr) != CT_OK) {
        fprintf(stderr, "ctsdb shell: %s\n", cerr.msg);
        goto out;
    }
    struct wc_options wo;
    tsdstore_wc_options(c, &wo);
    o.store = &wo;
    data_dir = conf_get_str(c, "tsd.storage.directory");
    o.data_dir = data_dir;
    o.out = stdout;
    o.err = stderr;
    o.tty = isatty(STDOUT_FILENO);
    if (o.tty) {
        struct winsize ws;
        o.width = ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col ? ws.ws_col : 80;
    }
    struct shell *sh;
    struct ct_err err = {0};
    if (shell_new(&o, &sh, &err) != CT_OK) {
        fprintf(stderr, "ERROR: %s\n", err.msg);
        status = 1;
        goto out;
    }
    status = 0;
    for (size_t i = 0; i < nexprs && status == 0 && !shell_exit_requested(sh); i++)
        status = shell_run_text(sh, exprs[i], strlen(exprs[i]));
    if (status == 0 && script && !shell_exit_requested(sh)) {
        size_t len;
        char *text = shell_slurp(script, &len);
        if (!text) {
            fprintf(stderr, "ERROR: cannot read script %s\n", script);
            status = 1;
        } else {
            status = shell_run_text(sh, text, len);
            free(text);
        }
    }
    if (nexprs == 0 && !script)
        status = shell_run_stream(sh, stdin, !noninteractive && isatty(STDIN_FILENO));
    fflush(stdout);
    shell_free(sh);
out:
    free(exprs);
    conf_free(c);
    return status;
}

const struct tool_command tool_cmd_shell = {"shell", "HBase-compatible admin shell over the store",
                                            shell_main};
