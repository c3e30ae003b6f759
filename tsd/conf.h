/* conf.h - the configuration of the TSD and of every `ctsdb` tool: OpenTSDB-style `key = value`
 * settings with OpenTSDB's key names (docs/opentsdb-compat.md, "Configuration keys"), ctsdb's
 * defaults, typed validation and overrides.
 *
 * One table of keys: the TSD's own (tsd/conf.c) and the schema's (tsdb_config_keys(), owned and
 * declared by schema/tsdb.c), each with type, default, range, owner and meaning
 * (storage/ct_cfg.h). conf_tsdb_config() hands the schema's keys to the schema unchanged.
 *
 * A conf holds every known key (with its default) plus any unknown key that was set (kept, so
 * /api/config shows it, and warned about). Values are validated when set: a bad value is an
 * error naming the key, the value and what was expected. The daemon builds one conf in main()
 * before any thread starts and passes it down; after that it is read-only, so any thread may read
 * it. There is no process-wide conf. */
#ifndef CT_TSD_CONF_H
#define CT_TSD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "schema/tsdb.h"
#include "storage/ct_cfg.h"
#include "storage/ct_err.h"

struct conf; /* opaque */

/* Returns a new conf holding every known key at its default, freed with conf_free(). */
CT_MUST_CHECK int conf_new(struct conf **out, struct ct_err *err);
void conf_free(struct conf *c); /* accepts NULL */

/* Reads an OpenTSDB-style file: one `key = value` (or `key=value`) per line, `#` and `!`
 * comment lines and blank lines ignored, surrounding whitespace trimmed. Every value goes
 * through conf_set(); the first bad value fails the load with the file and line number in err.
 * Unknown keys are kept and reported through the warn callback (may be NULL). */
typedef void (*conf_warn_fn)(void *arg, const char *msg);
CT_MUST_CHECK int conf_load_file(struct conf *c, const char *path, conf_warn_fn warn, void *arg,
                                 struct ct_err *err);

/* Sets one key. Known keys are validated (integer ranges, booleans true/false/yes/no/1/0,
 * enumerations); a bad value is CT_EINVAL naming key and value. An unknown key is stored as a
 * string and *unknown (if non-NULL) is set true. Key and value are copied. */
CT_MUST_CHECK int conf_set(struct conf *c, const char *key, const char *value, bool *unknown,
                           struct ct_err *err);

/* The value of a key as a string, or NULL if the key is neither known nor set. The result is
 * valid until the key is set again or the conf is freed. */
const char *conf_get(const struct conf *c, const char *key);
/* Typed reads of known keys. A key of the wrong type or unknown is a programming error
 * (assert). Strings never return NULL (an unset string is ""). */
int64_t conf_get_int(const struct conf *c, const char *key);
bool conf_get_bool(const struct conf *c, const char *key);
const char *conf_get_str(const struct conf *c, const char *key);
/* Whether a known key was set (conf_set, a file or the command line), even to its default:
 * derived settings (tsd/membudget.h) leave such keys alone. */
bool conf_is_set(const struct conf *c, const char *key);
/* Calls warn for each key set away from its default that ctsdb accepts for compatibility but
 * does not act on (owner NULL in the key table). */
void conf_report_unsupported(const struct conf *c, conf_warn_fn warn, void *arg);

/* Calls fn for every key (known and set-unknown) in byte order of the key, with its current
 * value; fn returning non-zero stops the walk and that value is returned. */
typedef int (*conf_each_fn)(void *arg, const char *key, const char *value);
int conf_each(const struct conf *c, conf_each_fn fn, void *arg);
/* Calls fn for every known key's descriptor (the TSD's and the schema's) in byte order of the
 * key; fn returning non-zero stops the walk and that value is returned. The descriptors are
 * static. */
typedef int (*conf_key_fn)(void *arg, const struct ct_cfg_key *k);
int conf_each_key(const struct conf *c, conf_key_fn fn, void *arg);

/* Fills tc for the schema: tsdb_config_init(), then every schema key that was set (file,
 * command line or code) through tsdb_config_set(); keys left at their default stay so, and
 * tc->layout_given is true only when a key-layout key was set (see tsdb_open). Strings in tc
 * borrow c's values: valid until those keys are set again or c is freed. */
CT_MUST_CHECK int conf_tsdb_config(const struct conf *c, struct tsdb_config *tc,
                                   struct ct_err *err);

/* The command-line options every `ctsdb` subcommand shares, taken out of argv: first every
 * `--config FILE` (or `--config=FILE`) is loaded, in order; then, in order, `--data DIR` (the key
 * tsd.storage.directory), `--set KEY=VALUE` (an alias kept for older scripts) and `--KEY=VALUE`
 * for any key (KEY holds a '.'; unknown keys are kept and reported through warn) are applied.
 * Every other argument stays, in order, from argv[1] on; *argc is updated and argv[*argc] set to
 * NULL. Nothing after a `--` argument is taken. A bad value, file or option is CT_EINVAL (or the
 * file's error) with the reason. */
CT_MUST_CHECK int conf_take_argv(struct conf *c, int *argc, char **argv, conf_warn_fn warn,
                                 void *warn_arg, struct ct_err *err);

/* The TSD's and import's whole command line: conf_take_argv() (on a copy: argv is unchanged),
 * then `--port N`, `--bind ADDR`, `--staticroot DIR`, `--log-level L` (also as `--opt=value`)
 * and `--name=value` (kept as an unknown key). Arguments not starting with "--" are operands:
 * their indexes in argv go to operands[] (at most max_operands, in order; *noperands set).
 * `--help`/`-h` sets *help and stops. A bad value or option is CT_EINVAL with the reason. */
CT_MUST_CHECK int conf_apply_argv(struct conf *c, int argc, char **argv, int *operands,
                                  int max_operands, int *noperands, bool *help, conf_warn_fn warn,
                                  void *warn_arg, struct ct_err *err);

#endif
