/* conf.h - the TSD's configuration: OpenTSDB-style `key = value` settings with OpenTSDB's key
 * names (spec opentsdb-compat.md §4.5), ctsdb's defaults, typed validation and overrides.
 *
 * A conf holds every known key (with its default) plus any unknown key that was set (kept, so
 * /api/config shows it, and warned about). Values are validated when set: a bad value is an
 * error naming the key, the value and what was expected. The daemon builds one conf in main()
 * before any thread starts and publishes it with conf_set_global(); after that it is read-only
 * and any thread may read it through conf_global() (STYLE §5). */
#ifndef CT_TSD_CONF_H
#define CT_TSD_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * does not act on (marked so in the key table). */
void conf_report_unsupported(const struct conf *c, conf_warn_fn warn, void *arg);

/* Calls fn for every key (known and set-unknown) in byte order of the key, with its current
 * value; fn returning non-zero stops the walk and that value is returned. */
typedef int (*conf_each_fn)(void *arg, const char *key, const char *value);
int conf_each(const struct conf *c, conf_each_fn fn, void *arg);

/* Applies command-line settings in OpenTSDB-tool style: first every `--config FILE` (or
 * `--config=FILE`), then, in order, `--port N`, `--bind ADDR`, `--data DIR`, `--staticroot DIR`,
 * `--log-level L` (also as `--opt=value`) and `--<key>=<value>` for any key. Arguments not
 * starting with "--" are operands: their indexes go to operands[] (at most max_operands, in
 * order; *noperands set). `--help`/`-h` sets *help and stops. A bad value or option is CT_EINVAL
 * with the reason. Unknown keys are kept and reported through warn. */
CT_MUST_CHECK int conf_apply_argv(struct conf *c, int argc, char **argv, int *operands,
                                  int max_operands, int *noperands, bool *help, conf_warn_fn warn,
                                  void *warn_arg, struct ct_err *err);

/* The process-wide configuration of the daemon (STYLE §5): set once in main() before threads
 * start; read-only afterwards. conf_global() returns NULL before conf_set_global(). */
void conf_set_global(const struct conf *c);
const struct conf *conf_global(void);

#endif
