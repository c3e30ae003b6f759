/* uid.h - the UID table (tsdb-uid): names of metrics, tag keys and tag values <-> fixed-width ids,
 * with a bounded in-memory cache.
 *
 * Layout (OpenTSDB's; docs/schema.md, "UIDs (`tsdb-uid`)"): forward row = name, family `id`,
 * qualifier = kind
 * ("metrics", "tagk", "tagv"), value = id (width bytes, big-endian); reverse row = id bytes,
 * family `name`, qualifier = kind, value = name; counter row "\0", family `id`, qualifier = kind,
 * 8-byte big-endian last assigned id.
 *
 * Assignment: atomic increment of the counter, then check-and-put of the reverse row (must be
 * empty), then check-and-put of the forward row (must be empty), so a name never gets two ids and
 * an id never two names, across threads and processes. Threads of one service assigning the
 * same name wait for each other and share one id (no id is wasted, nothing is left behind). A
 * service losing the forward race to another service (another process on the same Bigtable
 * instance) takes the winner's id and deletes its own reverse row; its id stays unused. Only a
 * crash between the two writes leaves an orphaned reverse row (reported by fsck as benign).
 *
 * Threading: every function may be called from many threads at once (the cache is striped and
 * locked). */
#ifndef CT_SCHEMA_UID_H
#define CT_SCHEMA_UID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "storage/wc.h"

enum uid_kind {
    UID_METRIC = 0,
    UID_TAGK = 1,
    UID_TAGV = 2,
};
#define UID_NKINDS      3
#define UID_MAX_NAME    1024 /* longest name accepted, bytes */
#define UID_FAMILY_ID   "id"
#define UID_FAMILY_NAME "name"
/* The generation cell's qualifier, in family id of the counter row "\0" (uid.c (7)). */
#define UID_GENERATION_QUALIFIER "ctsdb.generation"

/* The qualifier of a kind in tsdb-uid: "metrics", "tagk", "tagv". */
const char *uid_kind_qualifier(enum uid_kind k);
/* Parses "metric", "metrics", "tagk" or "tagv" (case-sensitive). CT_EINVAL otherwise. */
CT_MUST_CHECK int uid_kind_parse(const char *s, enum uid_kind *out, struct ct_err *err);

/* Checks a name against OpenTSDB's rules (docs/opentsdb-compat.md, "`put` and its checks", check
 * 9): non-empty, only a-z A-Z 0-9 - _ . /, Unicode letters (UTF-8), or characters of allow_special
 * (NULL = none). `what` is the subject of the message, e.g. "metric name" -> `Invalid metric name
 * ("a b"): illegal character:  `. */
CT_MUST_CHECK int uid_name_check(const char *what, const char *name, size_t len,
                                 const char *allow_special, struct ct_err *err);

struct uid_options {
    unsigned width[UID_NKINDS];  /* bytes per id, 1..8; default 3 */
    bool random_metrics;         /* tsd.core.uid.random_metrics */
    size_t cache_entries;        /* per kind and direction; default 1<<16, 0 = no cache */
    size_t cache_bytes;          /* the cached names of all kinds, malloc's sizes; 0 = unbounded */
    const char *allow_special;   /* extra allowed characters (copied); NULL = none */
    int64_t generation_check_ms; /* the generation check's period (uid.c (8)); 0 = none */
};
void uid_options_init(struct uid_options *o);

struct uid;

/* Opens the UID service on the tsdb-uid table handle t (borrowed until uid_close()). Returns a new
 * handle in *out, freed with uid_close(). */
CT_MUST_CHECK int uid_open(struct wc_table *t, const struct uid_options *o, struct uid **out,
                           struct ct_err *err);
void uid_close(struct uid *u);
unsigned uid_width(const struct uid *u, enum uid_kind k);

/* Looks a name up. CT_NOTFOUND (err: `No such name for 'metrics': 'x'`) if it has no id. */
CT_MUST_CHECK int uid_get_id(struct uid *u, enum uid_kind k, const char *name, size_t len,
                             uint64_t *id, struct ct_err *err);
/* Looks a name up, assigning a new id if it has none (after uid_name_check()). CT_ELIMIT when
 * every id of the width is taken (`All Unique IDs for metrics on 3 bytes are already
 * assigned!`). */
CT_MUST_CHECK int uid_get_or_create_id(struct uid *u, enum uid_kind k, const char *name, size_t len,
                                       uint64_t *id, struct ct_err *err);
/* Assigns a new id; CT_EEXIST with *id = the existing one (err: `Name already exists with UID:
 * 000002`) if the name has one. */
CT_MUST_CHECK int uid_assign_id(struct uid *u, enum uid_kind k, const char *name, size_t len,
                                uint64_t *id, struct ct_err *err);
/* Reverse lookup into buf (cap bytes, NUL-terminated); *len = name length. CT_NOTFOUND (err: `No
 * such unique ID for 'metrics': '000001'`) if unknown; CT_ELIMIT if cap is too small. */
CT_MUST_CHECK int uid_get_name(struct uid *u, enum uid_kind k, uint64_t id, char *buf, size_t cap,
                               size_t *len, struct ct_err *err);

/* Calls fn for names of kind k starting with prefix, in byte order, until max names (0 = no
 * limit) or fn returns non-zero. */
typedef int (*uid_name_fn)(void *arg, enum uid_kind k, const char *name, size_t len, uint64_t id);
CT_MUST_CHECK int uid_suggest(struct uid *u, enum uid_kind k, const char *prefix, size_t max,
                              uid_name_fn fn, void *arg, struct ct_err *err);
/* Calls fn for every forward mapping of every kind (kinds interleaved in name order). */
CT_MUST_CHECK int uid_foreach(struct uid *u, uid_name_fn fn, void *arg, struct ct_err *err);

/* Renames: the id of `old` now names `new` (which must not exist). CT_NOTFOUND if old has no id,
 * CT_EEXIST if new has one. */
CT_MUST_CHECK int uid_rename(struct uid *u, enum uid_kind k, const char *old_name,
                             const char *new_name, struct ct_err *err);
/* Deletes the forward and reverse mappings of a name (data rows are left alone). */
CT_MUST_CHECK int uid_delete(struct uid *u, enum uid_kind k, const char *name, struct ct_err *err);
/* The last assigned id of a kind (0 if none). */
CT_MUST_CHECK int uid_max_id(struct uid *u, enum uid_kind k, uint64_t *out, struct ct_err *err);

/* Calls fn (its return value ignored) after each id this service assigns, whatever asked for it
 * (a write's auto-creation, /api/uid/assign), outside the service's locks, on the assigning
 * thread; a name another service assigned first is not reported. Set it before any assignment
 * (not synchronised); fn NULL removes it. */
void uid_set_assigned_hook(struct uid *u, uid_name_fn fn, void *arg);

/* Drops every cached entry (telnet `dropcaches`). */
void uid_cache_drop(struct uid *u);
/* The generation (uid.c (7)): a random value in the uid table's counter row, written once per
 * table life. uid_generation_init writes it when absent (create-tables; the first assignment
 * does it too) and remembers it. uid_generation_check reads it when generation_check_ms has
 * passed since the last check (always when force): if it differs from the value last seen (or
 * is gone), the table was recreated or emptied: the cache is dropped (both directions, every
 * kind) and *dropped set; a check failing with CT_EIO (the table missing) drops the same way,
 * and one failing with CT_EIO or CT_EUNAVAIL is due again at once. Lookups run the scheduled
 * check themselves; callers keeping their own
 * caches of ids (the TSD's series map) watch uid_drop_count, which every drop moves. */
CT_MUST_CHECK int uid_generation_init(struct uid *u, struct ct_err *err);
CT_MUST_CHECK int uid_generation_check(struct uid *u, bool force, bool *dropped,
                                       struct ct_err *err);
uint64_t uid_generation(struct uid *u); /* the value last seen; 0 = none yet */
uint64_t uid_drop_count(struct uid *u);
struct uid_stats {
    uint64_t cache_hits, cache_misses, assigned;
    uint64_t cache_entries;
    uint64_t cache_name_bytes; /* the service's names (all kinds; uid_options.cache_bytes) */
};
void uid_stats_get(struct uid *u, enum uid_kind k, struct uid_stats *out);

/* Uppercase hex of an id, 2*width chars plus NUL into out (room 17). */
void uid_format_hex(uint64_t id, unsigned width, char *out);
/* Parses hex of exactly 2*width digits (either case). CT_EINVAL otherwise. */
CT_MUST_CHECK int uid_parse_hex(const char *s, unsigned width, uint64_t *out, struct ct_err *err);

#endif
