/* hash.c - growing and emptying the hash-set of hash.h (lookups are inline there).
 * Invariants: those of hash.h; a failed growth leaves the old table in place. */
#include "storage/hash.h"

#include <stdlib.h>

int hashset_grow(struct hashset *s, size_t first_cap, hashset_hash_fn hash_of, void *arg,
                 struct ct_err *err)
{
    size_t nc = s->cap ? s->cap * 2 : first_cap;
    while ((s->n + 1) * 2 > nc)
        nc *= 2;
    size_t *ns = calloc(nc, sizeof(*ns));
    if (!ns)
        return ct_err_set(err, CT_ENOMEM, "out of memory growing a hash set to %zu slots", nc);
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->slot[i])
            continue;
        size_t k = (size_t)hash_of(arg, s->slot[i] - 1) & (nc - 1);
        while (ns[k])
            k = (k + 1) & (nc - 1);
        ns[k] = s->slot[i];
    }
    free(s->slot);
    s->slot = ns;
    s->cap = nc;
    return CT_OK;
}

void hashset_clear(struct hashset *s)
{
    if (s->cap)
        memset(s->slot, 0, s->cap * sizeof(*s->slot));
    s->n = 0;
}

void hashset_destroy(struct hashset *s)
{
    free(s->slot);
    s->slot = NULL;
    s->cap = 0;
    s->n = 0;
}
