/* ctest.h - what every cmocka unit test includes: cmocka (with the headers cmocka 1.1 needs
 * first) and small helpers for temporary directories. */
#ifndef CT_CTEST_H
#define CT_CTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Creates a fresh directory under $TMPDIR (or /tmp) named ctsdb-test-XXXXXX; returns a new
 * string freed with ctest_rmdir(). Fails the test if it cannot. */
char *ctest_mkdtemp(void);
/* Removes the directory tree (rm -rf) and frees the path; accepts NULL. */
void ctest_rmdir(char *path);

#endif
