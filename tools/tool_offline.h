/* tool_offline.h - the start the offline snapshot commands share (`ctsdb snapshot NAME`, `ctsdb
 * restore NAME`): the configuration from the command line (conf_apply_argv: --data DIR, --config
 * FILE, --key=value; unknown keys warned about), --help, exactly one snapshot name (checked with
 * wc_snapshot_name_check), then the store opened directly for writing, which the lock of a TSD
 * running on it refuses. Messages are "ctsdb <cmd>: ..." on stderr. */
#ifndef CT_TOOL_OFFLINE_H
#define CT_TOOL_OFFLINE_H

#include <stdio.h>

struct conf;
struct tsdstore;

struct tool_offline {
    const char *cmd;        /* the subcommand, borrowed */
    struct conf *conf;      /* the configuration; NULL until made */
    struct tsdstore *store; /* the open store; NULL until opened */
    const char *name;       /* the snapshot name, borrowed from argv */
};

/* Fills o for subcommand `cmd` (borrowed for o's life, as argv is). Returns -1 when o is ready
 * (conf, store and name set), else the exit status the command returns at once: 0 after --help
 * (usage(stdout)), 2 after a usage error (a bad option, not one name, a bad name), 1 when the
 * store cannot be opened; then busy(name), when not NULL, follows the reason if a TSD holds the
 * store. Whatever it returns, the caller ends o with tool_offline_close(). */
int tool_offline_open(struct tool_offline *o, const char *cmd, int argc, char **argv,
                      void (*usage)(FILE *out), void (*busy)(const char *name));

/* Closes the store and frees the configuration; accepts a partly filled o. */
void tool_offline_close(struct tool_offline *o);

#endif
