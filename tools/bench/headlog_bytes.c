/* headlog_bytes.c - where the bytes of a head log (schema/headlog.h) go, and the cost of its
 * encoder and replay on a real record stream.
 *
 *   headlog_bytes DIR              a census of the log in DIR (a copy of <data>/head): records,
 *                                  points, and the payload's bytes by part (record headers, the
 *                                  series tables by code kind; version 2: point headers, series
 *                                  ids, values by kind; version 3: the bit stream's parts, in
 *                                  bits / 8), per point; other versions count as whole payloads
 *   headlog_bytes --recode DIR OUT appends the points of every batch record of DIR again, record
 *                                  by record in the same order and with the same series ids,
 *                                  to a new log in OUT with this build's encoder (headlog_append_
 *                                  ids), and prints its bytes per point: the current format's size
 *                                  on the same records (run under `perf stat -e instructions` or
 *                                  callgrind for the encoder's cost)
 *   headlog_bytes --replay DIR     replays the log in DIR into a fresh head (headlog_load_read_
 *                                  only) and prints the points read (the replay's cost)
 *   headlog_bytes --compare A B    replays both logs into heads and checks that every series holds
 *                                  the same points (time, type, ms flag, value bits) in both: a
 *                                  recoded log against its original
 * Only version 2 records can be recoded (the census and --replay read any version). Reads the
 * segments directly (storage/engine/wal.h); the released mark is ignored by the census and the
 * recode, honoured by --replay. Not built by `make all`: `make bench` builds it
 * (tools/bench/bench.mk) as build/<mode>/tools/bench/headlog_bytes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schema/headlog.h"
#include "schema/headlog_format.h"
#include "storage/coding.h"
#include "storage/engine/wal.h"

enum {
    HB_HDR,      /* version byte, back, npoints, plen */
    HB_TNSERIES, /* the table's nseries varint */
    HB_TNEW,     /* new entries: code + tlen byte */
    HB_TNEWTSUID,
    HB_TDELTA, /* one entry by id delta */
    HB_TRUN,   /* run codes */
    HB_PHDR,   /* point headers (time delta, flags) */
    HB_PID,    /* series ids of points (not next) */
    HB_VINT,
    HB_VDEC,
    HB_VFLOAT,
    HB_VDOUBLE,
    HB_OTHER, /* other versions and delete records, whole */
    /* version 3, in bits (printed / 8) */
    HB3_COUNT, /* point counts of series */
    HB3_FLAG,  /* every point's first bit */
    HB3_DOD,   /* coded points: the time's delta of delta */
    HB3_KIND,  /* coded points: same kind (1 bit) or a new one (9) */
    HB3_WIDTH, /* coded points: width flag and new widths */
    HB3_VINT,  /* value bits */
    HB3_VDEC,
    HB3_VXOR,
    HB3_PAD, /* the last byte's unused bits */
    HB_N
};
static const char *const hb_names[HB_N] = {
    "record header",         "table: nseries",     "table: new entry codes", "table: new TSUIDs",
    "table: id deltas",      "table: run codes",   "point headers",          "point series ids",
    "values: int",           "values: decimal",    "values: float",          "values: double",
    "other records (whole)", "v3: series counts",  "v3: point flags",        "v3: time dod (coded)",
    "v3: kind (coded)",      "v3: widths (coded)", "v3: values int",         "v3: values decimal",
    "v3: values xor",        "v3: pad bits"};

/* TSUIDs in order (each up to 255 bytes). */
struct hb_series {
    uint8_t (*t)[256];
    uint8_t *tl;
    size_t n, cap;
};

/* Appends a TSUID to s (a head_each_series callback too). */
static int hb_collect(void *arg, const uint8_t *tsuid, size_t tlen)
{
    struct hb_series *s = arg;
    if (s->n == s->cap) {
        size_t nc = s->cap ? 2 * s->cap : 4096;
        void *a = realloc(s->t, nc * 256), *b = a ? realloc(s->tl, nc) : NULL;
        if (a)
            s->t = a;
        if (!b)
            return CT_ENOMEM;
        s->tl = b;
        s->cap = nc;
    }
    memcpy(s->t[s->n], tsuid, tlen);
    s->tl[s->n++] = (uint8_t)tlen;
    return CT_OK;
}

struct hb {
    uint64_t bytes[HB_N], count[HB_N];
    uint64_t records, batch_records, dicts, points, payload, framed, table_entries, run_entries;
    uint64_t hdr_bytes_hist[4];
    struct hb_series dict; /* the version 2 dictionary (TSUIDs by id) for --recode */
    struct hb_st {
        int64_t ts, dt;
        uint64_t v;
        uint8_t w, kind;
    } * st;
    size_t nst, stcap;
    uint64_t coded, kind_changes, width_changes;
    struct headlog *out;
    uint64_t recoded;
    int bad;
};

static int hb_fail(struct hb *h, uint64_t seq, const char *why)
{
    fprintf(stderr, "headlog_bytes: record %" PRIu64 ": %s\n", seq, why);
    h->bad = 1;
    return CT_ECORRUPT;
}

static size_t hb_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    return coding_get_varint64(p, end, v);
}

/* A record's series table at *pp (the same codes in versions 2 and 3), its bytes counted by
 * kind: nseries dictionary ids into ids. A new entry is added as a TSUID (version 2, whose
 * TSUIDs --recode needs) or as a series state starting at base (version 3). */
static int hb_table(struct hb *h, uint64_t seq, const uint8_t **pp, const uint8_t *end,
                    uint64_t nseries, bool v3, int64_t base, uint32_t *ids)
{
    const uint8_t *p = *pp;
    size_t k;
    int64_t prev = -1;
    for (uint64_t s = 0; s < nseries;) {
        uint64_t code;
        if (!(k = hb_varint(p, end, &code)))
            return hb_fail(h, seq, "table");
        p += k;
        if ((code & 3) == 2) {
            uint64_t nrun = (code >> 2) + 2;
            h->bytes[HB_TRUN] += k;
            h->count[HB_TRUN]++;
            h->run_entries += nrun;
            for (uint64_t j = 0; j < nrun && s < nseries; j++)
                ids[s++] = (uint32_t)++prev;
            continue;
        }
        if (code & 1) {
            if (p >= end || (size_t)(end - p) < 1u + p[0])
                return hb_fail(h, seq, "truncated series");
            h->bytes[HB_TNEW] += k + 1;
            h->count[HB_TNEW]++;
            h->bytes[HB_TNEWTSUID] += p[0];
            if (!v3) {
                if (hb_collect(&h->dict, p + 1, p[0]) != CT_OK)
                    return CT_ENOMEM;
                prev = (int64_t)h->dict.n - 1;
            } else {
                if (h->nst == h->stcap) {
                    size_t nc = h->stcap ? 2 * h->stcap : 4096;
                    void *ns = realloc(h->st, nc * sizeof(*h->st));
                    if (!ns)
                        return CT_ENOMEM;
                    h->st = ns;
                    h->stcap = nc;
                }
                h->st[h->nst] = (struct hb_st){.ts = base};
                prev = (int64_t)h->nst++;
            }
            p += 1 + p[0];
        } else {
            h->bytes[HB_TDELTA] += k;
            h->count[HB_TDELTA]++;
            prev = prev + 1 + coding_unzigzag(code >> 2);
        }
        if (prev < 0 || (size_t)prev >= (v3 ? h->nst : h->dict.n))
            return hb_fail(h, seq, "undefined series id");
        ids[s++] = (uint32_t)prev;
    }
    *pp = p;
    return CT_OK;
}

static int hb_v2(struct hb *h, uint64_t seq, const uint8_t *p0, const uint8_t *end,
                 struct ct_err *err)
{
    const uint8_t *p = p0 + 1;
    uint64_t back, npoints, plen, nseries;
    size_t k;
    if (!(k = hb_varint(p, end, &back)))
        return hb_fail(h, seq, "back");
    p += k;
    if (!(k = hb_varint(p, end, &npoints)))
        return hb_fail(h, seq, "npoints");
    p += k;
    if (!(k = hb_varint(p, end, &plen)) || plen > (size_t)(end - p - k))
        return hb_fail(h, seq, "plen");
    p += k;
    h->bytes[HB_HDR] += (uint64_t)(p - p0);
    h->count[HB_HDR]++;
    if (back == 0) {
        h->dicts++;
        h->dict.n = 0;
    }
    const uint8_t *pts = p, *pend = p + plen;
    p = pend;
    if (!(k = hb_varint(p, end, &nseries)))
        return hb_fail(h, seq, "nseries");
    p += k;
    h->bytes[HB_TNSERIES] += k;
    uint32_t *ids = malloc((nseries ? nseries : 1) * sizeof(*ids));
    if (!ids)
        return CT_ENOMEM;
    int rc = hb_table(h, seq, &p, end, nseries, false, 0, ids);
    if (rc != CT_OK) {
        free(ids);
        return rc;
    }
    h->table_entries += nseries;
    /* the points */
    struct head_point *hp = h->out ? malloc((npoints ? npoints : 1) * sizeof(*hp)) : NULL;
    uint32_t *lid = h->out ? malloc((npoints ? npoints : 1) * sizeof(*lid)) : NULL;
    if (h->out && (!hp || !lid)) {
        free(ids);
        free(hp);
        free(lid);
        return CT_ENOMEM;
    }
    int64_t prev_id = -1, prev_ts = 0;
    for (uint64_t i = 0; i < npoints; i++) {
        uint64_t hdr, v = 0;
        if (!(k = hb_varint(pts, pend, &hdr)))
            return hb_fail(h, seq, "point header");
        pts += k;
        h->bytes[HB_PHDR] += k;
        h->hdr_bytes_hist[k < 4 ? k : 3]++;
        if (!(hdr & 32)) {
            if (!(k = hb_varint(pts, pend, &v)))
                return hb_fail(h, seq, "point id");
            pts += k;
            h->bytes[HB_PID] += k;
            h->count[HB_PID]++;
        }
        prev_id = prev_id + 1 + coding_unzigzag(v);
        prev_ts += coding_unzigzag(hdr >> 6);
        unsigned type = (hdr >> 1) & 3, vmode = (hdr >> 3) & 3;
        struct dpcodec_point pt = {.ts_ms = prev_ts, .type = type, .ms = (hdr & 1) != 0};
        const uint8_t *v0 = pts;
        int kind;
        if (type == DPCODEC_INT) {
            pts += hb_varint(pts, pend, &v);
            pt.i = coding_unzigzag(v);
            kind = HB_VINT;
        } else if (vmode == 2) {
            pts += hb_varint(pts, pend, &v);
            int64_t m = coding_unzigzag(v >> 4);
            static const double p10[10] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
            pt.f = (double)m / p10[v & 15];
            kind = HB_VDEC;
        } else if (vmode == 1) {
            uint32_t fb = coding_get_le32(pts);
            float f;
            memcpy(&f, &fb, 4);
            pt.f = f;
            pts += 4;
            kind = HB_VFLOAT;
        } else {
            v = coding_get_le64(pts);
            memcpy(&pt.f, &v, 8);
            pts += 8;
            kind = HB_VDOUBLE;
        }
        h->bytes[kind] += (uint64_t)(pts - v0);
        h->count[kind]++;
        if (hp) {
            uint32_t id = ids[prev_id];
            hp[i] = (struct head_point){.tsuid = h->dict.t[id], .tlen = h->dict.tl[id], .p = pt};
            lid[i] = (uint32_t)prev_id;
        }
    }
    h->points += npoints;
    free(ids);
    if (h->out) {
        rc = headlog_append_ids(h->out, hp, lid, npoints, WAL_SYNC_ASYNC, err);
        h->recoded += npoints;
        free(hp);
        free(lid);
    }
    return rc;
}

/* A version 3 bit reader (headlog_format.h), counting what it reads. */
struct hb_br {
    const uint8_t *p, *end;
    uint64_t acc;
    unsigned nb;
    int bad;
};

static uint64_t hb_get(struct hb_br *r, unsigned len)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < len; i++) {
        if (!r->nb) {
            if (r->p == r->end) {
                r->bad = 1;
                return 0;
            }
            r->acc = *r->p++;
            r->nb = 8;
        }
        v |= (r->acc & 1) << i;
        r->acc >>= 1;
        r->nb--;
    }
    return v;
}

static int hb_v3(struct hb *h, uint64_t seq, const uint8_t *p0, const uint8_t *end)
{
    const uint8_t *p = p0 + 1;
    uint64_t back, npoints, base, nseries;
    size_t k;
    if (!(k = hb_varint(p, end, &back)))
        return hb_fail(h, seq, "back");
    p += k;
    if (!(k = hb_varint(p, end, &npoints)))
        return hb_fail(h, seq, "npoints");
    p += k;
    if (!(k = hb_varint(p, end, &base)))
        return hb_fail(h, seq, "base");
    p += k;
    h->bytes[HB_HDR] += (uint64_t)(p - p0);
    h->count[HB_HDR]++;
    if (back == 0) {
        h->dicts++;
        h->nst = 0;
    }
    if (!(k = hb_varint(p, end, &nseries)))
        return hb_fail(h, seq, "nseries");
    p += k;
    h->bytes[HB_TNSERIES] += k;
    uint32_t *ids = malloc((nseries ? nseries : 1) * sizeof(*ids));
    if (!ids)
        return CT_ENOMEM;
    int rc = hb_table(h, seq, &p, end, nseries, true, (int64_t)base, ids);
    if (rc != CT_OK) {
        free(ids);
        return rc;
    }
    h->table_entries += nseries;
    struct hb_br r = {.p = p, .end = end};
    static const unsigned dod_bits[5] = {0, 7, 14, 24, 64};
    for (uint64_t s = 0; s < nseries && !r.bad; s++) {
        uint64_t cnt = 1;
        if (npoints != nseries) {
            unsigned z = 0;
            while (!r.bad && !hb_get(&r, 1))
                z++;
            cnt = (1ULL << z) | hb_get(&r, z);
            h->bytes[HB3_COUNT] += 2 * z + 1;
        }
        struct hb_st *st = &h->st[ids[s]];
        for (uint64_t j = 0; j < cnt && !r.bad; j++) {
            uint64_t x, zz, prevv = st->v, kind = st->kind, dt = (uint64_t)st->dt;
            bool coded = hb_get(&r, 1);
            h->bytes[HB3_FLAG]++;
            unsigned vk = (kind & 3) == 0 ? HB3_VINT : (kind & 8) ? HB3_VXOR : HB3_VDEC;
            if (coded) {
                h->coded++;
                unsigned ones = 0;
                while (ones < 4 && hb_get(&r, 1))
                    ones++;
                zz = hb_get(&r, dod_bits[ones]);
                h->bytes[HB3_DOD] += ones + (ones < 4) + dod_bits[ones];
                dt += (uint64_t)coding_unzigzag(zz);
                h->bytes[HB3_KIND]++;
                if (hb_get(&r, 1)) {
                    kind = hb_get(&r, 8);
                    h->bytes[HB3_KIND] += 8;
                    h->kind_changes++;
                    prevv = 0;
                }
                vk = (kind & 3) == 0 ? HB3_VINT : (kind & 8) ? HB3_VXOR : HB3_VDEC;
            }
            if (kind & 8) {
                uint64_t v = 0;
                unsigned bits = 1;
                if (hb_get(&r, 1)) {
                    uint64_t lead = hb_get(&r, 12), len = (lead >> 6) + 1;
                    lead &= 63;
                    v = hb_get(&r, (unsigned)len) << (64 - lead - len);
                    bits += 12 + (unsigned)len;
                }
                h->bytes[vk] += bits;
                x = prevv ^ v;
            } else {
                unsigned wd = st->w;
                if (coded) {
                    h->bytes[HB3_WIDTH]++;
                    if (hb_get(&r, 1)) {
                        uint64_t c = hb_get(&r, 6);
                        wd = c == 63 ? 64 : (unsigned)c;
                        h->bytes[HB3_WIDTH] += 6;
                        h->width_changes++;
                    }
                }
                zz = hb_get(&r, wd);
                h->bytes[vk] += wd;
                x = prevv + (uint64_t)coding_unzigzag(zz);
                st->w = (uint8_t)wd;
            }
            h->count[vk]++;
            st->ts += (int64_t)dt;
            st->dt = (int64_t)dt;
            st->v = x;
            st->kind = (uint8_t)kind;
        }
    }
    free(ids);
    if (r.bad)
        return hb_fail(h, seq, "truncated points");
    h->bytes[HB3_PAD] += r.nb;
    h->points += npoints;
    return CT_OK;
}

static int hb_record(void *arg, uint64_t seq, const uint8_t *p, size_t len, struct ct_err *err)
{
    struct hb *h = arg;
    h->records++;
    h->payload += len;
    h->framed += len + 16;
    if (len >= 1 && p[0] == 2) {
        h->batch_records++;
        return hb_v2(h, seq, p, p + len, err);
    }
    if (len >= 1 && p[0] == 3 && !h->out) {
        h->batch_records++;
        return hb_v3(h, seq, p, p + len);
    }
    h->bytes[HB_OTHER] += len;
    h->count[HB_OTHER]++;
    if (h->out && len >= 1 && p[0] != HEADLOG_DELETE)
        return hb_fail(h, seq, "only version 2 batch records can be recoded");
    return CT_OK;
}

static int hb_compare(const char *a, const char *b)
{
    struct ct_err err = {0};
    struct head *ha = NULL, *hb = NULL;
    uint64_t na = 0, nb = 0;
    if (headlog_load_read_only(a, &ha, &na, &err) != CT_OK ||
        headlog_load_read_only(b, &hb, &nb, &err) != CT_OK || !ha || !hb) {
        fprintf(stderr, "headlog_bytes: %s\n", err.msg);
        return 1;
    }
    size_t sa, ca, sb, cb;
    uint64_t pa, pb;
    head_counts(ha, &sa, &ca, &pa);
    head_counts(hb, &sb, &cb, &pb);
    struct hb_series s = {0};
    if (head_each_series(ha, NULL, 0, INT64_MIN, INT64_MAX, hb_collect, &s) != CT_OK)
        return 1;
    uint8_t *bufa = NULL, *bufb = NULL;
    size_t capa = 0, capb = 0, diff = 0;
    uint64_t seen = 0;
    for (size_t i = 0; i < s.n; i++) {
        size_t la = 0, lb = 0, npa, npb;
        if (head_copy(ha, s.t[i], s.tl[i], INT64_MIN, INT64_MAX, &bufa, &capa, &la, &npa, &err) !=
                CT_OK ||
            head_copy(hb, s.t[i], s.tl[i], INT64_MIN, INT64_MAX, &bufb, &capb, &lb, &npb, &err) !=
                CT_OK)
            return 1;
        struct head_iter ia, ib;
        head_iter_init(&ia, bufa, la, INT64_MIN, INT64_MAX);
        head_iter_init(&ib, bufb, lb, INT64_MIN, INT64_MAX);
        struct dpcodec_point x, y;
        for (;;) {
            bool gx = head_iter_next(&ia, &x), gy = head_iter_next(&ib, &y);
            if (!gx || !gy) {
                diff += gx != gy;
                break;
            }
            seen++;
            if (x.ts_ms != y.ts_ms || x.type != y.type || x.ms != y.ms ||
                (x.type == DPCODEC_INT ? x.i != y.i : memcmp(&x.f, &y.f, 8) != 0))
                diff++;
        }
    }
    printf("%s: %zu series, %" PRIu64 " points replayed; %s: %zu series, %" PRIu64
           " points replayed; %" PRIu64 " points compared, %zu differences\n",
           a, sa, na, b, sb, nb, seen, diff);
    free(bufa);
    free(bufb);
    head_free(ha);
    head_free(hb);
    return diff || sa != sb || na != nb || pa != pb;
}

int main(int argc, char **argv)
{
    struct ct_err err = {0};
    if (argc == 4 && !strcmp(argv[1], "--compare"))
        return hb_compare(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "--replay")) {
        struct head *hd = NULL;
        uint64_t np = 0;
        if (headlog_load_read_only(argv[2], &hd, &np, &err) != CT_OK) {
            fprintf(stderr, "headlog_bytes: %s\n", err.msg);
            return 1;
        }
        printf("replayed %" PRIu64 " points\n", np);
        head_free(hd);
        return 0;
    }
    const char *dir = argc == 2                                   ? argv[1]
                      : argc == 4 && !strcmp(argv[1], "--recode") ? argv[2]
                                                                  : NULL;
    if (!dir) {
        fprintf(stderr,
                "usage: headlog_bytes DIR | --recode DIR OUT | --replay DIR | --compare A B\n");
        return 2;
    }
    struct hb h = {0};
    if (argc == 4 && headlog_open(argv[3], &h.out, &err) != CT_OK) {
        fprintf(stderr, "headlog_bytes: %s\n", err.msg);
        return 1;
    }
    struct head *empty = NULL;
    if (h.out && (head_new(&empty, &err) != CT_OK ||
                  headlog_replay(h.out, empty, NULL, NULL, NULL, &err) != CT_OK)) {
        fprintf(stderr, "headlog_bytes: %s (OUT must be a new directory)\n", err.msg);
        return 1;
    }
    struct wal *w = NULL;
    struct wal_options o = {.segment_bytes = HEADLOG_SEGMENT_BYTES};
    if (wal_open_read_only(dir, &o, &w, &err) != CT_OK ||
        wal_replay(w, hb_record, &h, &err) != CT_OK) {
        fprintf(stderr, "headlog_bytes: %s\n", err.msg);
        return 1;
    }
    wal_close(w);
    if (h.out) {
        struct headlog_stats st;
        headlog_get_stats(h.out, &st);
        headlog_close(h.out);
        head_free(empty);
        printf("recoded %" PRIu64 " records, %" PRIu64 " points: %" PRIu64
               " payload bytes, %.3f B/pt (framed +16 B a record: %.3f)\n",
               st.records, st.points, st.bytes,
               (double)st.bytes / (double)(st.points ? st.points : 1),
               (double)(st.bytes + 16 * st.records) / (double)(st.points ? st.points : 1));
        free(h.dict.t);
        free(h.dict.tl);
        return h.bad;
    }
    double np = (double)(h.points ? h.points : 1);
    printf("%s: %" PRIu64 " records (%" PRIu64 " batch records of version 2 or 3, %" PRIu64
           " dictionaries), %" PRIu64 " points, %.1f points and %.1f table entries a record\n",
           dir, h.records, h.batch_records, h.dicts, h.points,
           np / (double)(h.batch_records ? h.batch_records : 1),
           (double)h.table_entries / (double)(h.batch_records ? h.batch_records : 1));
    printf("payload %" PRIu64 " bytes = %.3f B/pt; framed (+16 B a record) %.3f B/pt\n", h.payload,
           (double)h.payload / np, (double)h.framed / np);
    printf("%-24s %14s %12s %8s %10s\n", "part", "bytes", "count", "B/pt", "B/count");
    for (int i = 0; i < HB_N; i++) {
        double b = i >= HB3_COUNT ? (double)h.bytes[i] / 8 : (double)h.bytes[i]; /* bits */
        if (h.bytes[i] || h.count[i])
            printf("%-24s %14.0f %12" PRIu64 " %8.3f %10.2f\n", hb_names[i], b, h.count[i], b / np,
                   h.count[i] ? b / (double)h.count[i] : 0.0);
    }
    if (h.coded)
        printf("version 3: %" PRIu64 " points coded in full (%.1f%%), %" PRIu64
               " kind changes, %" PRIu64 " width changes\n",
               h.coded, 100.0 * (double)h.coded / np, h.kind_changes, h.width_changes);
    printf("table entries %" PRIu64 ": in runs %" PRIu64 ", by delta %" PRIu64 ", new %" PRIu64
           "; point headers of 1/2/3+ bytes: %" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n",
           h.table_entries, h.run_entries, h.count[HB_TDELTA], h.count[HB_TNEW],
           h.hdr_bytes_hist[1], h.hdr_bytes_hist[2], h.hdr_bytes_hist[3]);
    free(h.st);
    free(h.dict.t);
    free(h.dict.tl);
    return h.bad;
}
