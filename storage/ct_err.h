/* ct_err.h - error codes and the fixed-size error detail buffer used by every layer.
 *
 * A fallible function returns int: CT_OK (0), CT_NOTFOUND (1, a normal outcome) or a negative
 * CT_E* code, and takes `struct ct_err *err` (never NULL) as its last argument. Whoever detects
 * the failure fills err->msg (lower case, naming the file, offset or key and strerror(errno));
 * callers may prepend context with ct_err_prefix() but never overwrite it.
 *
 * Reporting never allocates, so the message lives in a fixed buffer of CT_ERR_MSG_MAX bytes,
 * sized for the longest message the layers compose rather than for the common short one: a
 * cause (a gRPC status: method name, code name and the server's text, a line in practice;
 * or a path and strerror), then the context each caller
 * up the stack prepends (store, table, region, host:port, series: a few hundred bytes in all).
 * tests/unit/storage/test_base.c composes such a chain, 1.5 KiB long, and checks it comes out
 * intact. Should a message still not fit, it is cut at the end (the cause's tail) and ends in
 * "..." so the cut is visible; the prefixes and the start of the cause are kept. */
#ifndef CT_ERR_H
#define CT_ERR_H

#include <stddef.h>

#define CT_MUST_CHECK   __attribute__((warn_unused_result))
#define CT_PRINTF(a, b) __attribute__((format(printf, a, b)))

enum {
    CT_OK = 0,
    CT_NOTFOUND = 1, /* not an error: the key, row, name or file is absent */
    CT_EINVAL = -1,  /* bad argument or bad input from a user */
    CT_ENOMEM = -2,
    CT_EIO = -3,      /* an operating-system call failed */
    CT_ECORRUPT = -4, /* stored bytes fail a check (checksum, magic, bounds) */
    CT_EEXIST = -5,   /* creating something that already exists */
    CT_EBUSY = -6, /* the object is in a state that forbids the operation (disabled, not empty) */
    CT_ECONFLICT = -7, /* a check-and-put or concurrent update lost its race */
    CT_ETIMEOUT = -8,
    CT_ECLOSED = -9,       /* the store or connection is shutting down */
    CT_EUNSUPPORTED = -10, /* the backend cannot do this */
    CT_ELIMIT = -11,       /* a configured size or count limit was exceeded */
    CT_EUNAVAIL = -12,     /* a remote backend is unavailable or did not answer in time */
};

#define CT_ERR_MSG_MAX 2048 /* bytes of struct ct_err.msg, the NUL included */

struct ct_err {
    int code;
    char msg[CT_ERR_MSG_MAX];
};

/* Sets err->code = code and formats the message; returns code so callers can write
 * `return ct_err_set(err, CT_EINVAL, "bad %s", x);`. */
int ct_err_set(struct ct_err *err, int code, const char *fmt, ...) CT_PRINTF(3, 4);
/* Like ct_err_set, appending ": strerror(errnum)". */
int ct_err_errno(struct ct_err *err, int code, int errnum, const char *fmt, ...) CT_PRINTF(4, 5);
/* Prepends "<context>: " to the current message; keeps the code. Returns err->code. */
int ct_err_prefix(struct ct_err *err, const char *fmt, ...) CT_PRINTF(2, 3);
/* Resets err to CT_OK with an empty message. */
void ct_err_clear(struct ct_err *err);
/* A short name for a code ("invalid argument", "i/o error", ...). */
const char *ct_err_name(int code);

#endif
