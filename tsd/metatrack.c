/* metatrack.c - realtime meta tracking (metatrack.h).
 * Invariants: (1) nothing here fails a write: every store error is logged (rate-limited) and
 * counted; (2) a TSMeta is only ever created with a check-and-put against absence
 * (qmeta_tsmeta_store_new), so one stored by /api/uid/tsmeta or another TSD is never replaced;
 * (3) the counter only grows by the points written (wc_increment is atomic across threads and,
 * on either backend, across TSDs).
 * Memory: nothing per series is kept here; the series a write concerns are listed by the store's
 * writers (tsd/store.c, the touch lists, bounded by one group of points) and counted in
 * /api/stats as tsd.memory.meta_bytes (docs/tsd.md, "Memory limit"). */
#include "tsd/metatrack.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "query/qmeta.h"
#include "schema/meta.h"
#include "storage/clock.h"
#include "storage/wc.h"
#include "tsd/tlog.h"

enum metatrack_mode {
    MT_MARK,       /* tracking alone: ts_ctr = 1 */
    MT_STORE_META, /* + realtime_ts: TSMeta when missing */
    MT_INCREMENT,  /* + incrementing: counter += points, TSMeta on the first */
};

struct metatrack {
    struct tsdb *t;
    enum metatrack_mode mode;
};

static _Atomic uint64_t metatrack_failed;

uint64_t metatrack_failures(void)
{
    return atomic_load(&metatrack_failed);
}

static int64_t now_s(void)
{
    return (int64_t)time(NULL);
}

static void metatrack_fail(const char *what, const struct ct_err *err)
{
    static struct tlog_limit lim = TLOG_LIMIT_INIT(10000);
    atomic_fetch_add(&metatrack_failed, 1);
    tlog_limited(&lim, (int64_t)(clock_mono_ns() / 1000000), TLOG_WARN,
                 "realtime meta: %s failed: %s", what, err->msg);
}

/* The UID service's hook (enable_realtime_uid): UIDMeta.storeNew of the new id. */
static int metatrack_uid_assigned(void *arg, enum uid_kind k, const char *name, size_t len,
                                  uint64_t id)
{
    struct ct_err err = {0};
    if (qmeta_uidmeta_store_new(arg, k, id, name, len, now_s(), &err) != CT_OK)
        metatrack_fail("writing a UIDMeta", &err);
    return 0;
}

int metatrack_open(const struct conf *c, struct tsdb *t, bool read_only, struct metatrack **out,
                   struct ct_err *err)
{
    *out = NULL;
    if (read_only)
        return CT_OK;
    if (conf_get_bool(c, "tsd.core.meta.enable_realtime_uid"))
        uid_set_assigned_hook(tsdb_uid(t), metatrack_uid_assigned, t);
    if (!conf_get_bool(c, "tsd.core.meta.enable_tsuid_tracking"))
        return CT_OK;
    struct metatrack *m = calloc(1, sizeof(*m));
    if (!m)
        return ct_err_set(err, CT_ENOMEM, "out of memory for meta tracking");
    m->t = t;
    if (!conf_get_bool(c, "tsd.core.meta.enable_realtime_ts"))
        m->mode = MT_MARK;
    else if (conf_get_bool(c, "tsd.core.meta.enable_tsuid_incrementing"))
        m->mode = MT_INCREMENT;
    else
        m->mode = MT_STORE_META;
    *out = m;
    return CT_OK;
}

void metatrack_close(struct metatrack *m)
{
    free(m);
}

void metatrack_series(struct metatrack *m, const uint8_t *ts, size_t tl, uint64_t points,
                      bool fresh)
{
    struct ct_err err = {0};
    bool created;
    switch (m->mode) {
    case MT_MARK:
        if (meta_ts_counter_set(m->t, ts, tl, 1, &err) != CT_OK)
            metatrack_fail("marking a series", &err);
        break;
    case MT_STORE_META:
        if (fresh && qmeta_tsmeta_store_new(m->t, ts, tl, now_s(), &created, &err) != CT_OK)
            metatrack_fail("writing a TSMeta", &err);
        break;
    case MT_INCREMENT: {
        int64_t v;
        if (meta_ts_counter_add(m->t, ts, tl, (int64_t)points, &v, &err) != CT_OK) {
            metatrack_fail("raising a series' counter", &err);
        } else if (v == (int64_t)points &&
                   qmeta_tsmeta_store_new(m->t, ts, tl, now_s(), &created, &err) != CT_OK) {
            metatrack_fail("writing a TSMeta", &err);
        }
        break;
    }
    }
}
