/* ct_cfg.c - configuration key checks (see ct_cfg.h). Pure functions, no state. */
#include "storage/ct_cfg.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int ct_cfg_parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "yes", "1", "on"};
    static const char *const no[] = {"false", "no", "0", "off"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = true;
            return 0;
        }
        if (!strcasecmp(v, no[i])) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int ct_cfg_parse_int(const char *v, int64_t *out)
{
    char *end;
    errno = 0;
    if (*v == '\0')
        return -1;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = x;
    return 0;
}

bool ct_cfg_enum_has(const char *choices, const char *v)
{
    size_t n = strlen(v);
    const char *p = choices;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncasecmp(p, v, n))
            return true;
        if (!bar)
            break;
        p = bar + 1;
    }
    return false;
}

bool ct_cfg_sorted(const struct ct_cfg_key *table, unsigned long n)
{
    for (unsigned long i = 1; i < n; i++)
        if (strcmp(table[i - 1].key, table[i].key) >= 0)
            return false;
    return true;
}

int ct_cfg_check(const struct ct_cfg_key *k, const char *v, struct ct_err *err)
{
    switch (k->type) {
    case CT_CFG_STR:
        return CT_OK;
    case CT_CFG_BOOL: {
        bool b;
        if (ct_cfg_parse_bool(v, &b) != 0)
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected true or false", v,
                              k->key);
        return CT_OK;
    }
    case CT_CFG_INT: {
        int64_t x;
        if (ct_cfg_parse_int(v, &x) != 0)
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected an integer", v,
                              k->key);
        if (x < k->min || x > k->max)
            return ct_err_set(err, CT_EINVAL,
                              "bad value '%s' for %s: expected an integer from %lld to %lld", v,
                              k->key, (long long)k->min, (long long)k->max);
        return CT_OK;
    }
    case CT_CFG_ENUM:
        if (!ct_cfg_enum_has(k->choices, v))
            return ct_err_set(err, CT_EINVAL, "bad value '%s' for %s: expected one of %s", v,
                              k->key, k->choices);
        return CT_OK;
    }
    return ct_err_set(err, CT_EINVAL, "bad type for %s", k->key);
}
