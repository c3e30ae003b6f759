/* cmd_uid.c - `ctsdb uid`: look up, grep, assign, rename and delete UIDs in tsdb-uid, like
 * OpenTSDB's `tsdb uid`. Output lines have OpenTSDB's shape: `<kind> <name>: [b0, b1, b2]`. */
#include <getopt.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/tsdb.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void uid_cli_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb uid [--config FILE] [--data DIR] [--KEY=VALUE]... <command> [args]\n\n"
            "commands:\n"
            "  grep [metrics|tagk|tagv] REGEX     names matching a POSIX extended regex\n"
            "  assign metrics|tagk|tagv NAME...   assign new UIDs to names\n"
            "  rename metrics|tagk|tagv OLD NEW   give OLD's UID the name NEW\n"
            "  delete metrics|tagk|tagv NAME      remove a name's forward and reverse mapping\n"
            "  [metrics|tagk|tagv] NAME|UID        look a name or a hex UID up\n\n"
            "options:\n"
            "  --config FILE     configuration file (key = value, as the TSD's)\n"
            "  --data DIR        data directory (default ./data)\n"
            "  --KEY=VALUE       any configuration key (docs/tsd.md), e.g.\n"
            "                    --tsd.storage.uid.width.metric=4; --set KEY=VALUE: the same\n"
            "  -h, --help        this text\n");
}

static void uid_cli_print(enum uid_kind k, const char *name, size_t len, uint64_t id,
                          unsigned width)
{
    printf("%s %.*s: [", uid_kind_qualifier(k), (int)len, name);
    for (unsigned i = 0; i < width; i++)
        printf("%s%u", i ? ", " : "", (unsigned)((id >> (8 * (width - 1 - i))) & 0xff));
    printf("]\n");
}

struct uid_cli_grep {
    regex_t re;
    struct uid *u;
    size_t found;
};

static int uid_cli_grep_one(void *arg, enum uid_kind k, const char *name, size_t len, uint64_t id)
{
    struct uid_cli_grep *g = arg;
    char buf[UID_MAX_NAME + 1];
    if (len > UID_MAX_NAME)
        return 0;
    memcpy(buf, name, len);
    buf[len] = 0;
    if (regexec(&g->re, buf, 0, NULL, 0) == 0) {
        uid_cli_print(k, name, len, id, uid_width(g->u, k));
        g->found++;
    }
    return 0;
}

static int uid_cli_kind(const char *s, enum uid_kind *k)
{
    struct ct_err err = {0};
    return uid_kind_parse(s, k, &err) == CT_OK;
}

static bool uid_cli_is_hex(const char *s, unsigned width)
{
    if (strlen(s) != 2 * (size_t)width)
        return false;
    for (const char *p = s; *p; p++)
        if (!strchr("0123456789abcdefABCDEF", *p))
            return false;
    return true;
}

/* Looks a name or hex UID up in one kind; returns 1 found, 0 not, -1 error. */
static int uid_cli_lookup(struct uid *u, enum uid_kind k, const char *what, bool quiet)
{
    struct ct_err err = {0};
    uint64_t id;
    int rc = uid_get_id(u, k, what, strlen(what), &id, &err);
    if (rc == CT_OK) {
        uid_cli_print(k, what, strlen(what), id, uid_width(u, k));
        return 1;
    }
    if (rc != CT_NOTFOUND) {
        fprintf(stderr, "ctsdb uid: %s\n", err.msg);
        return -1;
    }
    if (uid_cli_is_hex(what, uid_width(u, k)) &&
        uid_parse_hex(what, uid_width(u, k), &id, &err) == CT_OK) {
        char name[UID_MAX_NAME + 1];
        size_t len;
        rc = uid_get_name(u, k, id, name, sizeof(name), &len, &err);
        if (rc == CT_OK) {
            uid_cli_print(k, name, len, id, uid_width(u, k));
            return 1;
        }
        if (rc != CT_NOTFOUND) {
            fprintf(stderr, "ctsdb uid: %s\n", err.msg);
            return -1;
        }
    }
    if (!quiet)
        fprintf(stderr, "ctsdb uid: %s\n", err.msg);
    return 0;
}

static int uid_cli_command(struct tsdb *t, int argc, char **argv)
{
    struct uid *u = tsdb_uid(t);
    struct ct_err err = {0};
    const char *cmd = argv[0];
    enum uid_kind k;
    if (!strcmp(cmd, "grep")) {
        const char *kind = argc == 3 ? argv[1] : NULL, *re = argv[argc - 1];
        if (argc < 2 || argc > 3 || (kind && !uid_cli_kind(kind, &k))) {
            fprintf(stderr, "ctsdb uid: usage: grep [metrics|tagk|tagv] REGEX\n");
            return 2;
        }
        struct uid_cli_grep g = {.u = u};
        int rerr = regcomp(&g.re, re, REG_EXTENDED | REG_NOSUB);
        if (rerr) {
            char msg[128];
            regerror(rerr, &g.re, msg, sizeof(msg));
            fprintf(stderr, "ctsdb uid: bad regular expression '%s': %s\n", re, msg);
            return 2;
        }
        int rc = kind ? uid_suggest(u, k, "", 0, uid_cli_grep_one, &g, &err)
                      : uid_foreach(u, uid_cli_grep_one, &g, &err);
        regfree(&g.re);
        if (rc != CT_OK) {
            fprintf(stderr, "ctsdb uid: %s\n", err.msg);
            return 1;
        }
        return g.found ? 0 : 1;
    }
    if (!strcmp(cmd, "assign")) {
        if (argc < 3 || !uid_cli_kind(argv[1], &k)) {
            fprintf(stderr, "ctsdb uid: usage: assign metrics|tagk|tagv NAME...\n");
            return 2;
        }
        int status = 0;
        for (int i = 2; i < argc; i++) {
            uint64_t id;
            int rc = uid_assign_id(u, k, argv[i], strlen(argv[i]), &id, &err);
            if (rc == CT_OK) {
                uid_cli_print(k, argv[i], strlen(argv[i]), id, uid_width(u, k));
            } else {
                fprintf(stderr, "ctsdb uid: %s '%s': %s\n", uid_kind_qualifier(k), argv[i],
                        err.msg);
                status = 1;
            }
        }
        return status;
    }
    if (!strcmp(cmd, "rename")) {
        if (argc != 4 || !uid_cli_kind(argv[1], &k)) {
            fprintf(stderr, "ctsdb uid: usage: rename metrics|tagk|tagv OLD NEW\n");
            return 2;
        }
        if (uid_rename(u, k, argv[2], argv[3], &err) != CT_OK) {
            fprintf(stderr, "ctsdb uid: %s\n", err.msg);
            return 1;
        }
        return uid_cli_lookup(u, k, argv[3], false) == 1 ? 0 : 1;
    }
    if (!strcmp(cmd, "delete")) {
        if (argc != 3 || !uid_cli_kind(argv[1], &k)) {
            fprintf(stderr, "ctsdb uid: usage: delete metrics|tagk|tagv NAME\n");
            return 2;
        }
        if (uid_delete(u, k, argv[2], &err) != CT_OK) {
            fprintf(stderr, "ctsdb uid: %s\n", err.msg);
            return 1;
        }
        printf("deleted %s %s\n", uid_kind_qualifier(k), argv[2]);
        return 0;
    }
    /* lookups: [kind] NAME|UID... */
    int first = 0, found = 0;
    bool kinded = uid_cli_kind(argv[0], &k);
    if (kinded)
        first = 1;
    if (first >= argc) {
        fprintf(stderr, "ctsdb uid: usage: [metrics|tagk|tagv] NAME|UID\n");
        return 2;
    }
    for (int i = first; i < argc; i++) {
        int got = 0;
        for (int kk = 0; kk < UID_NKINDS; kk++) {
            if (kinded && kk != (int)k)
                continue;
            int r = uid_cli_lookup(u, (enum uid_kind)kk, argv[i], !kinded);
            if (r < 0)
                return 1;
            got += r;
        }
        if (!got && !kinded)
            fprintf(stderr, "ctsdb uid: no uid or name '%s' in any kind\n", argv[i]);
        found += got > 0;
    }
    return found == argc - first ? 0 : 1;
}

static int uid_cli_run(int argc, char **argv)
{
    struct tool_opts to;
    int st = tool_opts_init(&to, "uid", uid_cli_usage, &argc, argv);
    if (st < 0)
        st = tool_opts_parse(&to, argc, argv, "+h");
    if (st >= 0)
        return st;
    if (optind >= argc) {
        uid_cli_usage(stderr);
        return 2;
    }
    const char *cmd = argv[optind];
    to.config.read_only = strcmp(cmd, "assign") && strcmp(cmd, "rename") && strcmp(cmd, "delete");
    struct wc_store *s = NULL;
    struct tsdb *t = NULL;
    if (tool_opts_open(&to, &s, &t) != 0)
        return 1;
    int rc = uid_cli_command(t, argc - optind, argv + optind);
    tsdb_close(t);
    wc_close(s);
    return rc;
}

const struct tool_command tool_cmd_uid = {"uid", "look up, grep, assign, rename or delete UIDs",
                                          uid_cli_run};
