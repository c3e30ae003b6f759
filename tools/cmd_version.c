/* cmd_version.c - `ctsdb version`: the version and build information. */
#include <stdio.h>
#include <string.h>

#include "tools/tool.h"
#include "tsd/build_info.h"

static int version_run(int argc, char **argv)
{
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: ctsdb version\n\nPrints the version, the git revision and how it was "
               "built.\n");
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "ctsdb version: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    printf("ctsdb %s built at revision %s (%s, branch %s)\n", CTSDB_VERSION, CTSDB_GIT_FULL,
           CTSDB_REPO_STATUS, CTSDB_GIT_BRANCH);
    char date[64];
    printf("Built on %s by %s with %s%s\n", build_info_date(date, sizeof(date)), CTSDB_BUILD_USER,
           "gcc " __VERSION__,
#ifdef CTSDB_WITH_BIGTABLE
           ", bigtable backend"
#else
           ""
#endif
    );
    return 0;
}

const struct tool_command tool_cmd_version = {"version", "print the version and build information",
                                              version_run};
