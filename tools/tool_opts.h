/* tool_opts.h - the command line every `ctsdb` tool that opens the OpenTSDB tables shares (uid,
 * mkmetric, scan, fsck, create-tables, query): the configuration options of conf_take_argv()
 * (`--config FILE`, `--data DIR`, `--KEY=VALUE` for any key of the one key table, `--set
 * KEY=VALUE` as an alias), -h/--help, the messages for a bad option, and opening the store and
 * tsdb tables with what was given. So `ctsdb scan --tsd.storage.salt.width=1` means what it
 * means to the TSD. */
#ifndef CT_TOOL_OPTS_H
#define CT_TOOL_OPTS_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>

#include "schema/tsdb.h"
#include "storage/wc.h"

struct tool_opts {
    const char *cmd;           /* the subcommand, for "ctsdb <cmd>: ..." messages */
    void (*usage)(FILE *out);  /* prints the subcommand's usage text */
    const char *data;          /* tsd.storage.directory (--data DIR); points into data_buf */
    bool data_set;             /* that key was set (by --data, --config or --KEY=VALUE) */
    bool backend_set;          /* tsd.storage.backend was set */
    bool bigtable;             /* tsd.storage.backend = bigtable */
    struct wc_options wo;      /* the store the configuration names (tsdstore_wc_options);
                                * strings point into bt_buf */
    char bt_buf[5][PATH_MAX];  /* project, instance, data and admin endpoints, credentials */
    struct tsdb_config config; /* the schema's keys as set (conf_tsdb_config); strings point
                                * into the buffers below */
    char data_buf[PATH_MAX];
    char table_buf[3][WC_MAX_TABLE_NAME];
    char special_buf[256];
};

/* Fills o for subcommand `cmd` (borrowed, as is `usage`, for o's life): the configuration's
 * defaults, then the options conf_take_argv() takes out of argv (*argc updated; the tool's own
 * options and operands stay, in order), and resets getopt (optind = 1, opterr = 0) for a
 * getopt_long loop over what is left. Returns -1 when parsing goes on, else the exit status the
 * tool returns at once: 2 after a bad option or value (why on stderr), 1 if out of memory.
 * Unknown keys are reported on stderr as warnings. */
int tool_opts_init(struct tool_opts *o, const char *cmd, void (*usage)(FILE *out), int *argc,
                   char **argv);

/* Handles a getopt_long result the tool does not handle itself: 'h' (-h, --help), or an unknown
 * or incomplete option. Returns -1 when parsing goes on, else the exit status the tool returns at
 * once: 0 after --help (usage on stdout), 2 after a bad option (why on stderr, then the usage). */
int tool_opts_handle(struct tool_opts *o, int opt, char **argv);

/* The whole getopt_long loop of a tool without options of its own (short options `shortopts`,
 * e.g. "h", or "+h" to stop at the first operand), after tool_opts_init. Returns -1 when the
 * options are parsed (operands from optind on), else the exit status (see tool_opts_handle). */
int tool_opts_parse(struct tool_opts *o, int argc, char **argv, const char *shortopts);

/* Opens the store the configuration names (the embedded store in o->data, never creating it, or
 * Bigtable with tsd.storage.backend=bigtable) and tsdb on it with o->config (create_tables off,
 * read_only as set; the store's recorded key layout unless a layout key was given). Returns 0
 * with *s and *t to be closed by the caller (tsdb_close, then wc_close), or prints
 * "ctsdb <cmd>: <why>" to stderr and returns 1. Warns on stderr when BIGTABLE_EMULATOR_HOST is
 * set but the backend is the embedded one by default (tool_opts_emulator_ignored). */
int tool_opts_open(struct tool_opts *o, struct wc_store **s, struct tsdb **t);

/* True when BIGTABLE_EMULATOR_HOST is set but the backend is the embedded store because no
 * tsd.storage.backend was given: the user probably meant the emulator. */
bool tool_opts_emulator_ignored(const struct tool_opts *o);

/* Where the store is, for messages (tsdstore_describe). */
void tool_opts_describe(const struct tool_opts *o, char *buf, size_t cap);

#endif
