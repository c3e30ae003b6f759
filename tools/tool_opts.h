/* tool_opts.h - option handling shared by the `ctsdb` tools that open a store through the
 * schema layer (uid, mkmetric, scan, fsck). */
#ifndef CT_TOOL_OPTS_H
#define CT_TOOL_OPTS_H

#include <stdbool.h>

#include "schema/tsdb.h"

/* Applies one `--set KEY=VALUE` argument (kv is modified: the '=' is cut) to c. On error prints
 * "ctsdb <cmd>: <why>" to stderr and returns 2 (the usage exit status); else returns 0 and sets
 * *keep_layout when the key is part of the row-key layout (salt, uid widths), which the tools
 * must then honour instead of the layout recorded in the store. */
int tool_opts_set(const char *cmd, struct tsdb_config *c, char *kv, bool *keep_layout);

#endif
