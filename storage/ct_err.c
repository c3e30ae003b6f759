/* ct_err.c - formatting for struct ct_err. Never allocates; a message longer than the buffer
 * (ct_err.h) is cut and ends in "...". */
#include "storage/ct_err.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Marks a message that filled the whole buffer (the formatted text was longer) as cut. */
static void err_mark_cut(struct ct_err *err)
{
    memcpy(err->msg + sizeof(err->msg) - 4, "...", 4);
}

int ct_err_set(struct ct_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(err->msg))
        err_mark_cut(err);
    err->code = code;
    return code;
}

int ct_err_errno(struct ct_err *err, int code, int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof(err->msg))
        n += snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(errnum));
    if (n >= (int)sizeof(err->msg))
        err_mark_cut(err);
    err->code = code;
    return code;
}

int ct_err_prefix(struct ct_err *err, const char *fmt, ...)
{
    char ctx[sizeof(err->msg)];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(ctx, sizeof(ctx) - 2, fmt, ap);
    va_end(ap);
    if (n < 0)
        return err->code;
    size_t clen = strlen(ctx);
    size_t cap = sizeof(err->msg) - 1;
    size_t shift = clen + 2 < cap ? clen + 2 : cap;
    size_t keep = strnlen(err->msg, cap);
    bool cut = (size_t)n > clen || keep > cap - shift;
    if (keep > cap - shift)
        keep = cap - shift;
    memmove(err->msg + shift, err->msg, keep);
    err->msg[shift + keep] = '\0';
    memcpy(err->msg, ctx, shift - 2 < clen ? shift - 2 : clen);
    if (shift >= 2) {
        err->msg[shift - 2] = ':';
        err->msg[shift - 1] = ' ';
    }
    if (cut && shift + keep == cap)
        err_mark_cut(err);
    return err->code;
}

void ct_err_clear(struct ct_err *err)
{
    err->code = CT_OK;
    err->msg[0] = '\0';
}

const char *ct_err_name(int code)
{
    switch (code) {
    case CT_OK:
        return "ok";
    case CT_NOTFOUND:
        return "not found";
    case CT_EINVAL:
        return "invalid argument";
    case CT_ENOMEM:
        return "out of memory";
    case CT_EIO:
        return "i/o error";
    case CT_ECORRUPT:
        return "corruption";
    case CT_EEXIST:
        return "already exists";
    case CT_EBUSY:
        return "busy";
    case CT_ECONFLICT:
        return "conflict";
    case CT_ETIMEOUT:
        return "timeout";
    case CT_ECLOSED:
        return "closed";
    case CT_EUNSUPPORTED:
        return "unsupported";
    case CT_ELIMIT:
        return "limit exceeded";
    case CT_EUNAVAIL:
        return "backend unavailable";
    default:
        return "unknown error";
    }
}
