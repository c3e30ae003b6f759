/* tool_opts.h - option handling shared by the `ctsdb` tools that open a store through the
 * schema layer (uid, mkmetric, scan, fsck): --data DIR, --set KEY=VALUE (repeatable), -h/--help,
 * the messages for a bad option, and opening the store and tsdb tables with what was given. */
#ifndef CT_TOOL_OPTS_H
#define CT_TOOL_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "schema/tsdb.h"

struct tool_opts {
    const char *cmd;           /* the subcommand, for "ctsdb <cmd>: ..." messages */
    void (*usage)(FILE *out);  /* prints the subcommand's usage text */
    const char *data;          /* --data DIR; "data" by default */
    struct tsdb_config config; /* the defaults, then every --set in order */
    bool keep_layout;          /* a --set named a row-key layout key (see tool_opts_set) */
};

/* Fills o with the defaults for subcommand `cmd` (borrowed, as is `usage`, for o's life) and
 * resets getopt (optind = 1, opterr = 0) for a fresh getopt_long loop over the tool's argv. */
void tool_opts_init(struct tool_opts *o, const char *cmd, void (*usage)(FILE *out));

/* Handles a getopt_long result the tool does not handle itself: 'd' (--data DIR), 's' (--set
 * KEY=VALUE), 'h' (-h, --help), or an unknown or incomplete option. Returns -1 when parsing goes on, else the exit status the tool
 * returns at once: 0 after --help (usage on stdout), 2 after a bad --set or a bad option (why
 * on stderr, then for a bad option the usage). */
int tool_opts_handle(struct tool_opts *o, int opt, char **argv);

/* The whole getopt_long loop of a tool that takes only --data, --set and --help (short options
 * `shortopts`, e.g. "h", or "+h" to stop at the first operand), after tool_opts_init. Returns -1
 * when the options are parsed (operands from optind on), else the exit status the tool returns
 * at once (see tool_opts_handle). */
int tool_opts_parse(struct tool_opts *o, int argc, char **argv, const char *shortopts);

/* Opens the store and tsdb in o->data with o->config (see tsdb_open_dir). Returns 0 with *s and
 * *t to be closed by the caller (tsdb_close, then wc_close), or prints "ctsdb <cmd>: <why>" to
 * stderr and returns 1 (the tool's exit status). */
int tool_opts_open(struct tool_opts *o, struct wc_store **s, struct tsdb **t);

/* Applies one `--set KEY=VALUE` argument (kv is modified: the '=' is cut) to c. On error prints
 * "ctsdb <cmd>: <why>" to stderr and returns 2 (the usage exit status); else returns 0 and sets
 * *keep_layout when the key is part of the row-key layout (salt, uid widths), which the tools
 * must then honour instead of the layout recorded in the store. */
int tool_opts_set(const char *cmd, struct tsdb_config *c, char *kv, bool *keep_layout);

#endif
