/* bt_gc.h - the mapping between a column family's VERSIONS / TTL / MIN_VERSIONS and a Bigtable
 * garbage-collection rule (docs/bigtable.md, "Garbage-collection rules"):
 *
 *   VERSIONS=N                           max_num_versions(N)
 *   VERSIONS=N, TTL=T                    union(max_num_versions(N), max_age(T))
 *   VERSIONS=N, TTL=T, MIN_VERSIONS=M>0  union(max_num_versions(N),
 *                                              intersection(max_age(T), max_num_versions(M)))
 *   no limits (VERSIONS >= BT_GC_UNLIMITED_VERSIONS, TTL FOREVER)   no rule
 *
 * Bigtable collects lazily, so the backend also applies these limits when it reads; the rule only
 * saves space. Internal to storage/bigtable/. */
#ifndef CT_BT_GC_H
#define CT_BT_GC_H

#include <stddef.h>

#include "storage/bigtable/bigtable.pb-c.h"
#include "storage/ct_err.h"
#include "storage/wc.h"

/* VERSIONS at or above this count as "keep every version". */
#define BT_GC_UNLIMITED_VERSIONS 2147483647u

/* Storage for one rule tree, held by the caller while the rule is used. */
struct bt_gc_mem {
    Btpb__GcRule top;
    Btpb__GcRule versions;
    Btpb__GcRule age;
    Btpb__GcRule min_versions;
    Btpb__GcRule inter_rule;
    Btpb__GcRule *union_rules[2];
    Btpb__GcRule *inter_rules[2];
    Btpb__GcRule__Union un;
    Btpb__GcRule__Intersection inter;
    Btpb__Duration ttl;
};

/* Builds f's rule inside mem and returns it, or NULL when f sets no limit. */
Btpb__GcRule *bt_gc_rule_build(const struct wc_family_desc *f, struct bt_gc_mem *mem);
/* Reads versions, min_versions and ttl_s back from a rule (NULL = no rule: unlimited versions,
 * FOREVER). Rules of other shapes are read as the tightest VERSIONS and TTL they contain;
 * CT_EINVAL if a number is out of range. Other attributes of f are left alone. */
CT_MUST_CHECK int bt_gc_rule_parse(const Btpb__GcRule *r, struct wc_family_desc *f,
                                   struct ct_err *err);
/* Writes a rule as text, e.g. "union(max_versions(3),max_age(18000s))", "none" for NULL. */
void bt_gc_rule_format(const Btpb__GcRule *r, char *out, size_t size);

#endif
