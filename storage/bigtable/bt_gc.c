/* bt_gc.c - VERSIONS / TTL / MIN_VERSIONS to and from Bigtable GC rules (see bt_gc.h).
 * Invariant: bt_gc_rule_parse(bt_gc_rule_build(f)) gives back f's versions, min_versions and
 * ttl_s for every f that passes wc_family_desc_check() (MIN_VERSIONS only matters with a TTL,
 * so it reads back as 0 without one). */
#include "storage/bigtable/bt_gc.h"

#include <stdio.h>
#include <string.h>

Btpb__GcRule *bt_gc_rule_build(const struct wc_family_desc *f, struct bt_gc_mem *mem)
{
    bool has_versions = f->versions < BT_GC_UNLIMITED_VERSIONS;
    bool has_ttl = f->ttl_s < WC_TTL_FOREVER;
    memset(mem, 0, sizeof(*mem));
    btpb__gc_rule__init(&mem->top);
    btpb__gc_rule__init(&mem->versions);
    btpb__gc_rule__init(&mem->age);
    btpb__gc_rule__init(&mem->min_versions);
    btpb__gc_rule__init(&mem->inter_rule);
    btpb__gc_rule__union__init(&mem->un);
    btpb__gc_rule__intersection__init(&mem->inter);
    btpb__duration__init(&mem->ttl);

    mem->versions.rule_case = BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS;
    mem->versions.max_num_versions = (int32_t)f->versions;
    mem->ttl.seconds = f->ttl_s;
    mem->age.rule_case = BTPB__GC_RULE__RULE_MAX_AGE;
    mem->age.max_age = &mem->ttl;
    if (!has_ttl)
        return has_versions ? &mem->versions : NULL;
    Btpb__GcRule *expiry = &mem->age;
    if (f->min_versions > 0) {
        mem->min_versions.rule_case = BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS;
        mem->min_versions.max_num_versions = (int32_t)f->min_versions;
        mem->inter_rules[0] = &mem->age;
        mem->inter_rules[1] = &mem->min_versions;
        mem->inter.n_rules = 2;
        mem->inter.rules = mem->inter_rules;
        mem->inter_rule.rule_case = BTPB__GC_RULE__RULE_INTERSECTION;
        mem->inter_rule.intersection = &mem->inter;
        expiry = &mem->inter_rule;
    }
    if (!has_versions)
        return expiry;
    mem->union_rules[0] = &mem->versions;
    mem->union_rules[1] = expiry;
    mem->un.n_rules = 2;
    mem->un.rules = mem->union_rules;
    mem->top.rule_case = BTPB__GC_RULE__RULE_UNION;
    mem->top.union_ = &mem->un;
    return &mem->top;
}

/* What a (sub)rule limits. */
struct bt_gc_seen {
    int64_t versions; /* 0 = none */
    int64_t ttl_s;    /* 0 = none */
    int64_t min_versions;
};

static int bt_gc_walk(const Btpb__GcRule *r, bool in_intersection, struct bt_gc_seen *s, int depth,
                      struct ct_err *err)
{
    if (depth > 8)
        return ct_err_set(err, CT_EINVAL, "gc rule nested too deeply");
    switch (r->rule_case) {
    case BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS:
        if (r->max_num_versions < 1)
            return ct_err_set(err, CT_EINVAL, "gc rule keeps %d versions", r->max_num_versions);
        if (in_intersection)
            s->min_versions = r->max_num_versions;
        else if (!s->versions || r->max_num_versions < s->versions)
            s->versions = r->max_num_versions;
        return CT_OK;
    case BTPB__GC_RULE__RULE_MAX_AGE: {
        int64_t t = r->max_age ? r->max_age->seconds + (r->max_age->nanos > 0) : 0;
        if (t <= 0)
            return ct_err_set(err, CT_EINVAL, "gc rule max_age must be positive");
        if (!s->ttl_s || t < s->ttl_s)
            s->ttl_s = t;
        return CT_OK;
    }
    case BTPB__GC_RULE__RULE_UNION:
        for (size_t i = 0; r->union_ && i < r->union_->n_rules; i++) {
            int rc = bt_gc_walk(r->union_->rules[i], in_intersection, s, depth + 1, err);
            if (rc != CT_OK)
                return rc;
        }
        return CT_OK;
    case BTPB__GC_RULE__RULE_INTERSECTION:
        for (size_t i = 0; r->intersection && i < r->intersection->n_rules; i++) {
            int rc = bt_gc_walk(r->intersection->rules[i], true, s, depth + 1, err);
            if (rc != CT_OK)
                return rc;
        }
        return CT_OK;
    default:
        return CT_OK;
    }
}

int bt_gc_rule_parse(const Btpb__GcRule *r, struct wc_family_desc *f, struct ct_err *err)
{
    struct bt_gc_seen s = {0, 0, 0};
    if (r) {
        int rc = bt_gc_walk(r, false, &s, 0, err);
        if (rc != CT_OK)
            return rc;
    }
    f->versions = s.versions ? (uint32_t)s.versions : BT_GC_UNLIMITED_VERSIONS;
    f->ttl_s = s.ttl_s && s.ttl_s < WC_TTL_FOREVER ? s.ttl_s : WC_TTL_FOREVER;
    f->min_versions = s.ttl_s ? (uint32_t)s.min_versions : 0;
    if (f->min_versions > f->versions)
        f->min_versions = f->versions;
    return CT_OK;
}

static size_t bt_gc_fmt(const Btpb__GcRule *r, char *out, size_t size, size_t pos)
{
#define BT_PUT(...)                                                                                \
    do {                                                                                           \
        int n_ =                                                                                   \
            snprintf(out + (pos < size ? pos : size), pos < size ? size - pos : 0, __VA_ARGS__);   \
        pos += n_ > 0 ? (size_t)n_ : 0;                                                            \
    } while (0)
    switch (r->rule_case) {
    case BTPB__GC_RULE__RULE_MAX_NUM_VERSIONS:
        BT_PUT("max_versions(%d)", r->max_num_versions);
        break;
    case BTPB__GC_RULE__RULE_MAX_AGE:
        BT_PUT("max_age(%llds)", (long long)(r->max_age ? r->max_age->seconds : 0));
        break;
    case BTPB__GC_RULE__RULE_UNION:
    case BTPB__GC_RULE__RULE_INTERSECTION: {
        bool u = r->rule_case == BTPB__GC_RULE__RULE_UNION;
        size_t n = u ? (r->union_ ? r->union_->n_rules : 0)
                     : (r->intersection ? r->intersection->n_rules : 0);
        Btpb__GcRule **rules = u ? (r->union_ ? r->union_->rules : NULL)
                                 : (r->intersection ? r->intersection->rules : NULL);
        BT_PUT("%s(", u ? "union" : "intersection");
        for (size_t i = 0; i < n; i++) {
            if (i)
                BT_PUT(",");
            pos = bt_gc_fmt(rules[i], out, size, pos);
        }
        BT_PUT(")");
        break;
    }
    default:
        BT_PUT("?");
    }
#undef BT_PUT
    return pos;
}

void bt_gc_rule_format(const Btpb__GcRule *r, char *out, size_t size)
{
    if (!size)
        return;
    out[0] = 0;
    if (!r) {
        snprintf(out, size, "none");
        return;
    }
    bt_gc_fmt(r, out, size, 0);
}
