/* ct_cfg.h - how a configuration key is declared and how its values are checked: the one
 * descriptor and the one set of value parsers every layer's key table uses (schema's in
 * schema/tsdb.c, the TSD's in tsd/conf.c), so a key's type, default and range are stated once.
 *
 * A table is a `static const struct ct_cfg_key[]` sorted by key. Values are strings (as in an
 * OpenTSDB config file); ct_cfg_check() says whether a string is valid for the key, and the
 * typed parsers turn a checked value into a number or a boolean. Nothing here allocates. */
#ifndef CT_CFG_H
#define CT_CFG_H

#include <stdbool.h>
#include <stdint.h>

#include "storage/ct_err.h"

enum ct_cfg_type {
    CT_CFG_STR = 0,
    CT_CFG_INT = 1,  /* decimal, within [min, max] */
    CT_CFG_BOOL = 2, /* true/false, yes/no, on/off, 1/0 (any case) */
    CT_CFG_ENUM = 3, /* one of `choices` ('|'-separated), compared ignoring case */
};

/* One key. `owner` names the source file that acts on the key (documentation, and checked by
 * tests/integration/test_conf_keys.sh); NULL marks an OpenTSDB key accepted with no effect. */
struct ct_cfg_key {
    const char *key;
    enum ct_cfg_type type;
    const char *def;
    int64_t min, max;    /* CT_CFG_INT only */
    const char *choices; /* CT_CFG_ENUM only */
    const char *owner;
    const char *meaning; /* one line, for --print-config-keys and the docs */
};

/* CT_OK if v is a valid value of k, else CT_EINVAL naming value, key and what was expected:
 * `bad value '80x' for tsd.network.port: expected an integer`. */
CT_MUST_CHECK int ct_cfg_check(const struct ct_cfg_key *k, const char *v, struct ct_err *err);
/* 0 and *out on success, -1 if v is not a decimal integer / a boolean word. */
int ct_cfg_parse_int(const char *v, int64_t *out);
int ct_cfg_parse_bool(const char *v, bool *out);
/* Whether v is one of the '|'-separated choices (ignoring case). */
bool ct_cfg_enum_has(const char *choices, const char *v);
/* True if table[0..n) is strictly sorted by key (for asserts). */
bool ct_cfg_sorted(const struct ct_cfg_key *table, unsigned long n);

#endif
