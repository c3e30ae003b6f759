/* cmd_fsck.c - `ctsdb fsck [--fix] [--quarantine]`: checks the data directory's files byte by
 * byte (cmd_fsck_files.c: catalog, block files, log segments; --quarantine sets damaged ones
 * aside), then the data and UID tables like OpenTSDB's `tsdb fsck` and `tsdb uid fsck`, and
 * repairs what can be repaired without guessing.
 *
 * Data table, every row: a key that does not decode (bad row); a salt that is not the series'
 * bucket (wrong salt: --fix moves the row); metric or tag UIDs with no name (orphan row:
 * --delete-orphans deletes it); datapoint cells that do not decode (bad cell: --fix deletes it);
 * duplicate timestamps (identical ones are merged by --fix; conflicting ones need --fix and are
 * resolved keeping the latest write, as tsd.storage.fix_duplicates does). UID table: forward
 * mappings without their reverse (--fix writes it), reverse mappings whose name maps nowhere
 * (orphaned: --fix deletes the reverse cell), ids beyond the kind's counter (--fix raises the
 * counter). A reverse mapping whose name maps to another id is what an assignment that lost the
 * forward race and crashed before removing its reverse row leaves (schema/uid.c (6)): the id was
 * never handed out, so it is reported as a benign warning, not a problem (as OpenTSDB's uid fsck
 * does), and --fix removes it.
 * Repairs of one row are atomic (one row mutation); a moved row is written before the old one is
 * deleted, so a crash in between leaves a duplicate row, never a lost one. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "schema/tsdb.h"
#include "storage/coding.h"
#include "tools/cmd_fsck_files.h"
#include "tools/tool.h"
#include "tools/tool_opts.h"

static void fsck_usage(FILE *out)
{
    fprintf(out,
            "usage: ctsdb fsck [options]\n\n"
            "First checks every file of the data directory (the catalog, every block of every\n"
            "block file, every log record) and names each damaged file. Then checks every row\n"
            "of the data table and every mapping of the UID table and reports bad row keys,\n"
            "rows in the wrong salt bucket, rows with unknown UIDs, undecodable cells,\n"
            "duplicate timestamps and inconsistent or orphaned UIDs. Reverse UIDs left over\n"
            "from a lost assignment race (the name maps to another id) are benign warnings.\n"
            "Exit status 0 when nothing is wrong (or everything found was fixed), 1 otherwise.\n\n"
            "options:\n"
            "  --config FILE       configuration file (key = value, as the TSD's)\n"
            "  --data DIR          data directory (default ./data)\n"
            "  --quarantine        set damaged files aside in DIR/quarantine/ so that the store\n"
            "                      opens again (a block file's cells are lost; a log segment is\n"
            "                      cut at its last good record); the catalog is only reported\n"
            "  --fix               repair: set damaged, missing or foreign files aside as\n"
            "                      --quarantine does (moved, never deleted; every other\n"
            "                      file's cells kept), move wrongly salted rows, delete\n"
            "                      undecodable cells, merge duplicates (latest write wins),\n"
            "                      fix UID mappings, remove race leftovers\n"
            "  --delete-orphans    with --fix: delete rows whose UIDs have no name\n"
            "  --KEY=VALUE         any configuration key (docs/tsd.md); --set KEY=VALUE: the same\n"
            "  -h, --help          this text\n");
}

struct fsck {
    struct tsdb *t;
    bool fix, delete_orphans;
    enum dpcodec_format format;
    size_t rows, cells, points;
    size_t bad_rows, wrong_salt, orphan_rows, bad_cells, dup_rows, conflict_rows;
    size_t uid_forward_only, uid_orphan_reverse, uid_inconsistent, uid_counter_low;
    size_t uid_lost_race, uid_lost_race_removed; /* benign: not problems */
    size_t fixed;
    uint64_t max_seen[UID_NKINDS];
};

static void fsck_hex(const uint8_t *p, size_t n, char *buf, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n && o + 3 < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%02X", p[i]);
    buf[o] = 0;
}

static int fsck_apply(struct fsck *f, const struct wc_row_mutation *rm, struct wc_table *t)
{
    struct ct_err err = {0};
    if (wc_mutate_row(t, rm, WC_DURABILITY_USE_DEFAULT, &err) != CT_OK) {
        fprintf(stderr, "ctsdb fsck: repair failed: %s\n", err.msg);
        return -1;
    }
    f->fixed++;
    return 0;
}

static bool fsck_uid_known(struct fsck *f, enum uid_kind k, uint64_t id)
{
    char name[UID_MAX_NAME + 1];
    size_t len;
    struct ct_err err = {0};
    return uid_get_name(tsdb_uid(f->t), k, id, name, sizeof(name), &len, &err) == CT_OK;
}

/* Moves a row to its right salt: copies every cell to the right key, then deletes the old row. */
static void fsck_move_row(struct fsck *f, const struct wc_row *row)
{
    const struct rowkey_layout *l = tsdb_layout(f->t);
    uint8_t tsuid[ROWKEY_MAX_TSUID], key[ROWKEY_MAX_BYTES];
    size_t tl = rowkey_tsuid_of(l, row->key.data, row->key.len, tsuid, sizeof(tsuid));
    struct rowkey_parts p;
    struct ct_err err = {0};
    if (!tl || rowkey_decode(l, row->key.data, row->key.len, &p, &err) != CT_OK)
        return;
    size_t kl = rowkey_encode(l, tsuid, tl, p.base_s, key);
    struct wc_mutation *m = calloc(row->ncells ? row->ncells : 1, sizeof(*m));
    if (!m)
        return;
    int64_t newest = 0;
    for (size_t i = 0; i < row->ncells; i++) {
        m[i].op = WC_OP_PUT;
        m[i].family = row->cells[i].family;
        m[i].qualifier = row->cells[i].qualifier;
        m[i].value = row->cells[i].value;
        m[i].ts_ms = row->cells[i].ts_ms;
        if (row->cells[i].ts_ms > newest)
            newest = row->cells[i].ts_ms;
    }
    struct wc_row_mutation put = {wc_bytes_of(key, kl), m, row->ncells};
    if (fsck_apply(f, &put, tsdb_data_table(f->t)) == 0) {
        struct wc_mutation d = {WC_OP_DELETE_ROW, {0}, {0}, {0}, newest};
        struct wc_row_mutation del = {row->key, &d, 1};
        if (fsck_apply(f, &del, tsdb_data_table(f->t)) == 0)
            f->fixed--; /* one repair, two mutations */
    }
    free(m);
}

static void fsck_delete_row(struct fsck *f, const struct wc_row *row)
{
    int64_t newest = 0;
    for (size_t i = 0; i < row->ncells; i++)
        if (row->cells[i].ts_ms > newest)
            newest = row->cells[i].ts_ms;
    struct wc_mutation d = {WC_OP_DELETE_ROW, {0}, {0}, {0}, newest};
    struct wc_row_mutation del = {row->key, &d, 1};
    fsck_apply(f, &del, tsdb_data_table(f->t));
}

static void fsck_row(struct fsck *f, const struct wc_row *row)
{
    const struct rowkey_layout *l = tsdb_layout(f->t);
    char hex[2 * ROWKEY_MAX_BYTES + 1];
    struct ct_err err = {0};
    struct rowkey_parts p;
    f->rows++;
    f->cells += row->ncells;
    fsck_hex(row->key.data, row->key.len, hex, sizeof(hex));
    if (rowkey_decode(l, row->key.data, row->key.len, &p, &err) != CT_OK) {
        f->bad_rows++;
        printf("bad row key %s: %s%s\n", hex, err.msg, f->fix ? " (deleted)" : "");
        if (f->fix)
            fsck_delete_row(f, row);
        return;
    }
    bool global = p.metric == 0 && p.ntags == 0;
    if (!global && !rowkey_salt_ok(l, row->key.data, row->key.len)) {
        f->wrong_salt++;
        printf("row %s is in salt bucket %u, its series belongs elsewhere%s\n", hex, p.salt,
               f->fix ? " (moved)" : "");
        if (f->fix) {
            fsck_move_row(f, row);
            return;
        }
    }
    if (!global) {
        bool orphan = !fsck_uid_known(f, UID_METRIC, p.metric);
        for (size_t i = 0; i < p.ntags && !orphan; i++) {
            struct rowkey_tag tg = rowkey_parts_tag(l, &p, i);
            orphan = !fsck_uid_known(f, UID_TAGK, tg.tagk) || !fsck_uid_known(f, UID_TAGV, tg.tagv);
        }
        if (orphan) {
            f->orphan_rows++;
            bool del = f->fix && f->delete_orphans;
            printf("row %s has a metric or tag UID with no name%s\n", hex, del ? " (deleted)" : "");
            if (del) {
                fsck_delete_row(f, row);
                return;
            }
        }
    }
    /* cells: decode each datapoint cell on its own to find the bad ones */
    size_t bad = 0;
    struct wc_cell *good = calloc(row->ncells ? row->ncells : 1, sizeof(*good));
    struct wc_mutation *dels = calloc(row->ncells + 1, sizeof(*dels));
    if (!good || !dels) {
        free(good);
        free(dels);
        fprintf(stderr, "ctsdb fsck: out of memory\n");
        return;
    }
    size_t ngood = 0, ndata = 0;
    for (size_t c = 0; c < row->ncells; c++) {
        const struct wc_cell *cell = &row->cells[c];
        enum dpcodec_qkind k = dpcodec_qualifier_kind(cell->qualifier.data, cell->qualifier.len);
        struct dpcodec_iter it;
        dpcodec_iter_init(&it, p.base_s, cell->qualifier.data, cell->qualifier.len,
                          cell->value.data, cell->value.len);
        struct dpcodec_point pt;
        int rc;
        size_t n = 0;
        while ((rc = dpcodec_iter_next(&it, &pt, &err)) == CT_OK)
            n++;
        dpcodec_iter_end(&it);
        if (rc != CT_NOTFOUND) {
            char qh[64];
            fsck_hex(cell->qualifier.data, cell->qualifier.len, qh, sizeof(qh));
            printf("row %s cell %s: %s%s\n", hex, qh, err.msg, f->fix ? " (deleted)" : "");
            dels[bad].op = WC_OP_DELETE_COLUMN;
            dels[bad].family = cell->family;
            dels[bad].qualifier = cell->qualifier;
            dels[bad].ts_ms = cell->ts_ms;
            bad++;
            continue;
        }
        f->points += n;
        if (k != DPCODEC_Q_ANNOTATION && k != DPCODEC_Q_OTHER)
            ndata++;
        good[ngood++] = *cell;
    }
    f->bad_cells += bad;
    if (bad && f->fix) {
        struct wc_row_mutation rm = {row->key, dels, bad};
        fsck_apply(f, &rm, tsdb_data_table(f->t));
    }
    /* duplicates among the decodable cells */
    if (ndata > 1) {
        struct dpcodec_compacted out;
        int rc = dpcodec_compact(p.base_s, good, ngood, f->format, false, &out, &err);
        bool conflict = rc == CT_ECONFLICT;
        size_t dups = rc == CT_OK ? out.duplicates : 0;
        if (rc == CT_OK)
            dpcodec_compacted_free(&out);
        if (conflict) {
            rc = dpcodec_compact(p.base_s, good, ngood, f->format, true, &out, &err);
            if (rc == CT_OK)
                dups = out.duplicates;
        }
        if (conflict || dups) {
            if (conflict)
                f->conflict_rows++;
            else
                f->dup_rows++;
            printf("row %s has %zu duplicate timestamp(s)%s%s\n", hex, dups,
                   conflict ? " with different values" : "",
                   f->fix ? " (merged, latest write kept)" : "");
            if (f->fix && rc == CT_OK) {
                /* one atomic row mutation: drop every datapoint cell, write the merged one */
                struct wc_mutation *ms = NULL;
                size_t nm = 0;
                if (tsdb_merge_mutations(good, ngood, &out, &ms, &nm, &err) == CT_OK) {
                    struct wc_row_mutation rm = {row->key, ms, nm};
                    fsck_apply(f, &rm, tsdb_data_table(f->t));
                    free(ms);
                } else {
                    fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
                }
            }
            if (rc == CT_OK)
                dpcodec_compacted_free(&out);
        }
    }
    free(good);
    free(dels);
}

static int fsck_data(struct fsck *f)
{
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct wc_column col = {wc_bytes_str(TSDB_DATA_FAMILY), {0}, false};
    o.columns = &col;
    o.ncolumns = 1;
    struct ct_err err = {0};
    struct wc_scanner *sc;
    if (wc_scanner_open(tsdb_data_table(f->t), &o, &sc, &err) != CT_OK) {
        fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
        return -1;
    }
    struct wc_row row;
    int rc;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK)
        fsck_row(f, &row);
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND) {
        fprintf(stderr, "ctsdb fsck: scanning the data table: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int fsck_kind_of(const struct wc_bytes *q)
{
    for (int k = 0; k < UID_NKINDS; k++) {
        const char *s = uid_kind_qualifier((enum uid_kind)k);
        if (q->len == strlen(s) && !memcmp(q->data, s, q->len))
            return k;
    }
    return -1;
}

/* One pass over tsdb-uid: forward cells (family id) and reverse cells (family name). */
static int fsck_uids(struct fsck *f)
{
    struct wc_table *t = tsdb_uid_table(f->t);
    struct uid *u = tsdb_uid(f->t);
    struct wc_scan_options o;
    wc_scan_options_init(&o);
    struct ct_err err = {0};
    struct wc_scanner *sc;
    if (wc_scanner_open(t, &o, &sc, &err) != CT_OK) {
        fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
        return -1;
    }
    struct wc_row row;
    int rc;
    while ((rc = wc_scanner_next(sc, &row, &err)) == CT_OK) {
        bool counter = row.key.len == 1 && row.key.data[0] == 0;
        for (size_t i = 0; i < row.ncells; i++) {
            const struct wc_cell *c = &row.cells[i];
            int k = fsck_kind_of(&c->qualifier);
            if (k < 0 || counter)
                continue;
            unsigned w = uid_width(u, (enum uid_kind)k);
            const char *kq = uid_kind_qualifier((enum uid_kind)k);
            bool is_id = c->family.len == 2 && !memcmp(c->family.data, "id", 2);
            if (is_id) {
                /* forward: name -> id; the reverse must say the same name */
                if (c->value.len != w) {
                    printf("uid %s '%.*s' has a %zu-byte id (width %u)\n", kq, (int)row.key.len,
                           (const char *)row.key.data, c->value.len, w);
                    f->uid_inconsistent++;
                    continue;
                }
                uint64_t id = rowkey_get_uid(c->value.data, w);
                if (id > f->max_seen[k])
                    f->max_seen[k] = id;
                struct wc_scan_options g;
                wc_scan_options_init(&g);
                struct wc_column col = {wc_bytes_str("name"), c->qualifier, true};
                g.columns = &col;
                g.ncolumns = 1;
                struct wc_result r;
                if (wc_get(t, c->value, &g, &r, &err) != CT_OK) {
                    fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
                    continue;
                }
                bool same = r.row.ncells && r.row.cells[0].value.len == row.key.len &&
                            !memcmp(r.row.cells[0].value.data, row.key.data, row.key.len);
                bool missing = r.row.ncells == 0;
                wc_result_release(&r);
                if (same)
                    continue;
                char hex[17];
                uid_format_hex(id, w, hex);
                if (missing) {
                    f->uid_forward_only++;
                    printf("uid %s '%.*s' -> %s has no reverse mapping%s\n", kq, (int)row.key.len,
                           (const char *)row.key.data, hex, f->fix ? " (written)" : "");
                    if (f->fix) {
                        struct wc_mutation m = {WC_OP_PUT, wc_bytes_str("name"), c->qualifier,
                                                row.key, WC_TS_LATEST};
                        struct wc_row_mutation rm = {c->value, &m, 1};
                        fsck_apply(f, &rm, t);
                    }
                } else {
                    f->uid_inconsistent++;
                    printf("uid %s '%.*s' -> %s but %s names another %s\n", kq, (int)row.key.len,
                           (const char *)row.key.data, hex, hex, kq);
                }
            } else if (c->family.len == 4 && !memcmp(c->family.data, "name", 4)) {
                /* reverse: id -> name; the forward must map the name back to this id */
                if (row.key.len != w)
                    continue; /* meta cells such as metrics_meta live in other rows */
                uint64_t id = rowkey_get_uid(row.key.data, w), fid;
                if (id > f->max_seen[k])
                    f->max_seen[k] = id;
                char hex[17];
                uid_format_hex(id, w, hex);
                int lr = uid_get_id(u, (enum uid_kind)k, (const char *)c->value.data, c->value.len,
                                    &fid, &err);
                if (lr == CT_OK && fid == id)
                    continue;
                if (lr != CT_OK && lr != CT_NOTFOUND) {
                    fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
                    continue;
                }
                bool lost_race = lr == CT_OK;
                if (lost_race) {
                    char fhex[17];
                    uid_format_hex(fid, w, fhex);
                    f->uid_lost_race++;
                    printf("warning: uid %s %s -> '%.*s' is left over from a lost assignment "
                           "race (the name maps to %s): benign%s\n",
                           kq, hex, (int)c->value.len, (const char *)c->value.data, fhex,
                           f->fix ? " (removed)" : "");
                } else {
                    f->uid_orphan_reverse++;
                    printf("uid %s %s -> '%.*s' is orphaned (the name maps nowhere)%s\n", kq, hex,
                           (int)c->value.len, (const char *)c->value.data,
                           f->fix ? " (deleted)" : "");
                }
                if (f->fix) {
                    struct wc_mutation m = {
                        WC_OP_DELETE_COLUMN, c->family, c->qualifier, {0}, c->ts_ms};
                    struct wc_row_mutation rm = {row.key, &m, 1};
                    size_t before = f->fixed;
                    fsck_apply(f, &rm, t);
                    if (lost_race && f->fixed > before) {
                        f->fixed = before; /* not a problem, so not counted as a repair */
                        f->uid_lost_race_removed++;
                    }
                }
            }
        }
    }
    wc_scanner_close(sc);
    if (rc != CT_NOTFOUND) {
        fprintf(stderr, "ctsdb fsck: scanning the uid table: %s\n", err.msg);
        return -1;
    }
    for (int k = 0; k < UID_NKINDS; k++) {
        uint64_t max;
        if (uid_max_id(u, (enum uid_kind)k, &max, &err) != CT_OK) {
            fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
            continue;
        }
        if (f->max_seen[k] <= max)
            continue;
        f->uid_counter_low++;
        printf("uid counter of %s is %llu but id %llu is in use%s\n",
               uid_kind_qualifier((enum uid_kind)k), (unsigned long long)max,
               (unsigned long long)f->max_seen[k], f->fix ? " (raised)" : "");
        if (f->fix) {
            int64_t nv;
            uint8_t zero = 0;
            if (wc_increment(t, wc_bytes_of(&zero, 1), wc_bytes_str("id"),
                             wc_bytes_str(uid_kind_qualifier((enum uid_kind)k)),
                             (int64_t)(f->max_seen[k] - max), WC_DURABILITY_USE_DEFAULT, &nv,
                             &err) == CT_OK)
                f->fixed++;
            else
                fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
        }
    }
    return 0;
}

static void fsck_store_log(void *arg, const char *msg)
{
    (void)arg;
    printf("fsck: store: %s\n", msg);
}

/* After --quarantine moved block files away: one read-write open with
 * wc_options.quarantine_damaged drops them from the catalog (and replays the log), so that the
 * TSD and the table checks below open the store again. */
static int fsck_drop_quarantined(const char *dir)
{
    struct wc_options o;
    wc_options_init(&o);
    o.data_dir = dir;
    o.create_if_missing = false;
    o.quarantine_damaged = true;
    o.major_compaction_period_ms = 0;
    o.log_fn = fsck_store_log;
    struct wc_store *s = NULL;
    struct ct_err err = {0};
    if (wc_open(&o, &s, &err) != CT_OK) {
        fprintf(stderr, "ctsdb fsck: %s\n", err.msg);
        return -1;
    }
    wc_close(s);
    return 0;
}

static int fsck_run(int argc, char **argv)
{
    static const struct option longs[] = {
        {"fix", no_argument, 0, 'f'},
        {"delete-orphans", no_argument, 0, 'o'},
        {"help", no_argument, 0, 'h'},
        {"quarantine", no_argument, 0, 'q'},
        {0, 0, 0, 0},
    };
    bool quarantine = false;
    struct tool_opts to;
    int st = tool_opts_init(&to, "fsck", fsck_usage, &argc, argv);
    if (st >= 0)
        return st;
    struct fsck f;
    memset(&f, 0, sizeof(f));
    int opt;
    while ((opt = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        if (opt == 'f')
            f.fix = true;
        else if (opt == 'q')
            quarantine = true;
        else if (opt == 'o')
            f.delete_orphans = true;
        else if ((st = tool_opts_handle(&to, opt, argv)) >= 0)
            return st;
    }
    if (optind < argc) {
        fprintf(stderr, "ctsdb fsck: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (f.delete_orphans && !f.fix) {
        fprintf(stderr, "ctsdb fsck: --delete-orphans needs --fix\n");
        return 2;
    }
    /* --fix sets damaged files aside too (never deletes): moved to quarantine/, dropped from
     * the catalog with every other file's cells kept */
    if (f.fix)
        quarantine = true;
    /* Bigtable has no files of ours: the table checks below are the whole check */
    struct fsck_files_result fr = {0};
    if (!to.bigtable) {
        /* the file pass runs under the store's lock too (shared: the same rule as every read-only
         * open), so fsck never reads or quarantines the files of a running TSD; released before the
         * store itself is opened below */
        char lockpath[4200];
        snprintf(lockpath, sizeof(lockpath), "%s/LOCK", to.data);
        int lock_fd = open(lockpath, O_RDONLY | O_CLOEXEC);
        if (lock_fd >= 0 && flock(lock_fd, LOCK_SH | LOCK_NB) != 0) {
            fprintf(stderr, "ctsdb fsck: data directory %s is in use by another process (%s): %s\n",
                    to.data, lockpath, strerror(errno));
            close(lock_fd);
            return 1;
        }
        int frc = fsck_files_check(to.data, quarantine, &fr);
        if (lock_fd >= 0)
            close(lock_fd);
        if (frc != 0)
            return 1;
        if ((fr.quarantined || f.fix) && fsck_drop_quarantined(to.data) != 0)
            return 1;
    }
    to.config.read_only = !f.fix;
    struct wc_store *s = NULL;
    if (tool_opts_open(&to, &s, &f.t) != 0)
        return 1;
    f.format = tsdb_get_config(f.t)->format;
    int rc = fsck_data(&f);
    if (rc == 0)
        rc = fsck_uids(&f);
    size_t problems = f.bad_rows + f.wrong_salt + f.orphan_rows + f.bad_cells + f.dup_rows +
                      f.conflict_rows + f.uid_forward_only + f.uid_orphan_reverse +
                      f.uid_inconsistent + f.uid_counter_low;
    printf("fsck: %zu rows, %zu cells, %zu points checked\n", f.rows, f.cells, f.points);
    printf("fsck: %zu bad row keys, %zu wrongly salted rows, %zu orphan rows, %zu bad cells, "
           "%zu rows with duplicates, %zu rows with conflicting duplicates\n",
           f.bad_rows, f.wrong_salt, f.orphan_rows, f.bad_cells, f.dup_rows, f.conflict_rows);
    printf("fsck: uids: %zu without reverse, %zu orphaned reverse, %zu inconsistent, %zu low "
           "counters\n",
           f.uid_forward_only, f.uid_orphan_reverse, f.uid_inconsistent, f.uid_counter_low);
    if (f.uid_lost_race)
        printf("fsck: %zu benign warning%s: reverse uids left over from lost assignment races "
               "(%zu removed)\n",
               f.uid_lost_race, f.uid_lost_race == 1 ? "" : "s", f.uid_lost_race_removed);
    if (rc != 0)
        printf("fsck: stopped at damaged or unreadable data (the error above names it); the "
               "counts cover what was read before it\n");
    printf("fsck: %zu problem%s found, %zu fixed\n", problems + (rc != 0),
           problems + (rc != 0) == 1 ? "" : "s", f.fixed);
    tsdb_close(f.t);
    wc_close(s);
    if (rc != 0 || fr.damaged > fr.quarantined)
        return 1;
    /* success when nothing is wrong, or when --fix repaired everything it reported (orphan rows
     * are only repaired with --delete-orphans, inconsistent uids never automatically) */
    size_t unfixable = f.uid_inconsistent + (f.delete_orphans ? 0 : f.orphan_rows);
    return problems == 0 || (f.fix && unfixable == 0) ? 0 : 1;
}

const struct tool_command tool_cmd_fsck = {"fsck", "check (and --fix) the data and UID tables",
                                           fsck_run};
