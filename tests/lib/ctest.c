/* ctest.c - helpers for unit tests (see ctest.h). */
#include "tests/lib/ctest.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *ctest_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char tmpl[4096];
    snprintf(tmpl, sizeof(tmpl), "%s/ctsdb-test-XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(tmpl);
    assert_non_null(dir);
    char *copy = strdup(dir);
    assert_non_null(copy);
    return copy;
}

static int ctest_rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void ctest_rmdir(char *path)
{
    if (!path)
        return;
    nftw(path, ctest_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(path);
}
