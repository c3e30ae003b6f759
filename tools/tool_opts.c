/* tool_opts.c - see tool_opts.h. */
#include "tools/tool_opts.h"

#include <stdio.h>
#include <string.h>

int tool_opts_set(const char *cmd, struct tsdb_config *c, char *kv, bool *keep_layout)
{
    char *eq = strchr(kv, '=');
    if (!eq) {
        fprintf(stderr, "ctsdb %s: --set needs KEY=VALUE, got '%s'\n", cmd, kv);
        return 2;
    }
    *eq = 0;
    struct ct_err err = {0};
    int rc = tsdb_config_set(c, kv, eq + 1, &err);
    if (rc != CT_OK) {
        fprintf(stderr, "ctsdb %s: %s\n", cmd, rc == CT_NOTFOUND ? "unknown config key" : err.msg);
        return 2;
    }
    *keep_layout |=
        !strncmp(kv, "tsd.storage.salt.", 17) || !strncmp(kv, "tsd.storage.uid.width.", 22);
    return 0;
}
