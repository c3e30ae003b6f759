/* dpcodec.h - datapoint cells of the data table (family `t`): OpenTSDB's qualifier and value
 * encodings, compacted cells, append cells, annotations, and ctsdb's compressed hour cell.
 *
 * Layouts (byte tables in schema/dpcodec_format.h and docs/schema.md):
 *   single cell    qualifier 2 bytes (seconds) or 4 bytes (milliseconds), value 1..8 bytes;
 *   compacted cell qualifier = concatenated point qualifiers sorted by time, value =
 *                  concatenated values + 1 meta byte (0x00, or 0x01 when s and ms are mixed);
 *   append cell    qualifier 0x05 0x00 0x00, value = repeated (qualifier, value) records;
 *   annotation     qualifier 0x01 + 2-byte (s) or 4-byte (ms) offset, value = JSON;
 *   compressed     qualifier 0x07 'C' 'T' + 8-byte hash of the cell's timestamps (11 bytes),
 *                  value = version byte + block-packed delta / decimal / XOR encoded points
 *                  (ctsdb only). The hash makes two merged cells of one row differ unless they
 *                  hold exactly the same timestamps (then the newer one rightly masks the
 *                  older, like OpenTSDB's compacted qualifiers), so a late point merged by a
 *                  later compaction never hides the cell merged before it.
 * Odd-length qualifiers other than appends and ctsdb's compressed cell (annotations 0x01,
 * histograms 0x06, anything unknown) are not datapoints and readers skip them.
 *
 * Allocation: the single-cell, compacted-cell and append paths never allocate. Reading a
 * compressed cell through the iterator takes one buffer per cell (freed by dpcodec_iter_end());
 * the columnar reader (dpcodec_row_decode_cols) reuses its buffers from row to row. Encoding a
 * compressed cell keeps per-thread state (one deflate stream, one scratch buffer grown to the
 * largest row up to 4 MiB; freed when the thread exits), so a row allocates nothing once warm;
 * dpcodec_compact() allocates its result (one block per row, never per datapoint). */
#ifndef CT_SCHEMA_DPCODEC_H
#define CT_SCHEMA_DPCODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "storage/ct_err.h"
#include "storage/wc.h"

/* Qualifier flags nibble (OpenTSDB Const.FLAGS_MASK etc.). */
#define DPCODEC_FLAG_FLOAT        0x08
#define DPCODEC_LENGTH_MASK       0x07
#define DPCODEC_FLAGS_MASK        0x0F
#define DPCODEC_MS_PREFIX         0xF0
#define DPCODEC_ANNOTATION_PREFIX 0x01
#define DPCODEC_APPEND_PREFIX     0x05
#define DPCODEC_HISTOGRAM_PREFIX  0x06
#define DPCODEC_MS_MIXED_COMPACT  0x01
/* ctsdb's compressed hour cell qualifier: this 3-byte prefix + 8 bytes (odd length, so OpenTSDB
 * readers skip it). */
#define DPCODEC_CQ                                                                                 \
    "\x07"                                                                                         \
    "CT"
#define DPCODEC_CQ_PREFIX_LEN 3
#define DPCODEC_CQ_LEN        11
#define DPCODEC_APPEND_Q      "\x05\x00\x00"
#define DPCODEC_APPEND_Q_LEN  3
/* Most bytes one point takes as a single cell: 4-byte qualifier, 8-byte value. */
#define DPCODEC_MAX_QUALIFIER 4
#define DPCODEC_MAX_VALUE     8

/* How a value is stored. The stored width is part of a point's identity in OpenTSDB's format. */
enum dpcodec_type {
    DPCODEC_INT = 0,    /* int64, stored in the smallest of 1/2/4/8 bytes */
    DPCODEC_FLOAT = 1,  /* IEEE single (4 bytes) */
    DPCODEC_DOUBLE = 2, /* IEEE double (8 bytes) */
};

/* One datapoint, held by value. */
struct dpcodec_point {
    int64_t ts_ms;
    enum dpcodec_type type;
    bool ms;            /* written with a millisecond qualifier */
    int64_t i;          /* when type == DPCODEC_INT */
    double f;           /* when type is FLOAT or DOUBLE (a FLOAT holds a float-exact double) */
    int64_t cell_ts_ms; /* decoding: write time of the cell it came from; ignored on encode */
};

/* Builds a point from an integer. */
struct dpcodec_point dpcodec_point_int(int64_t ts_ms, bool ms, int64_t v);
/* Builds a point from a double with OpenTSDB's rule: FLOAT if (float)v == v, else DOUBLE. */
struct dpcodec_point dpcodec_point_real(int64_t ts_ms, bool ms, double v);
/* True if two points carry the same value (same type and bits). */
bool dpcodec_point_same_value(const struct dpcodec_point *a, const struct dpcodec_point *b);

/* ---- single cells ----------------------------------------------------------------------- */

/* Encodes p as one OpenTSDB cell of the row whose base hour is base_s: qualifier into q (room
 * DPCODEC_MAX_QUALIFIER), value into v (room DPCODEC_MAX_VALUE). CT_EINVAL if p is not inside
 * [base_s, base_s + 3600). */
CT_MUST_CHECK int dpcodec_encode(int64_t base_s, const struct dpcodec_point *p, uint8_t *q,
                                 size_t *qlen, uint8_t *v, size_t *vlen, struct ct_err *err);
/* Length in bytes of the value a qualifier's flags announce. */
static inline size_t dpcodec_flags_value_len(uint8_t flags)
{
    return (size_t)(flags & DPCODEC_LENGTH_MASK) + 1;
}

/* What a qualifier is. */
enum dpcodec_qkind {
    DPCODEC_Q_POINT = 0,      /* 2 or 4 bytes: one point */
    DPCODEC_Q_COMPACTED = 1,  /* even length > 4 or several units: compacted cell */
    DPCODEC_Q_APPEND = 2,     /* 0x05 0x00 0x00 */
    DPCODEC_Q_COMPRESSED = 3, /* ctsdb's compressed cell */
    DPCODEC_Q_ANNOTATION = 4, /* 0x01 + 2 or 4 bytes */
    DPCODEC_Q_OTHER = 5,      /* histogram or unknown odd-length: skipped */
};
enum dpcodec_qkind dpcodec_qualifier_kind(const uint8_t *q, size_t qlen);
/* dpcodec_qualifier_kind(q, qlen) == DPCODEC_Q_ANNOTATION, inline (for loops over every cell):
 * no other kind has an odd length of 3 or 5 starting with 0x01 (the append qualifier starts
 * with 0x05, the compressed one is 11 bytes). */
static inline bool dpcodec_is_annotation_q(const uint8_t *q, size_t qlen)
{
    return (qlen == 3 || qlen == 5) && q[0] == DPCODEC_ANNOTATION_PREFIX;
}

/* ---- decoding every layout -------------------------------------------------------------- */

/* Iterates the points of one cell of any layout (held by value, fields private). The cell's
 * bytes are borrowed until the iteration ends. Non-datapoint cells yield nothing. */
struct dpcodec_iter {
    int64_t base_ms;
    const uint8_t *q, *qend, *v, *vend;
    int kind;
    bool started, failed;
    /* compressed-cell state: the whole cell is decoded into scratch on the first call */
    uint8_t cflags;
    uint64_t n, i;
    const uint8_t *desc; /* descriptor bytes or NULL */
    int64_t *cts;        /* n timestamps, ms */
    uint64_t *cval;      /* n values: int64 or IEEE double bits */
    uint8_t *scratch;    /* owned (dpcodec_iter_end) */
};
/* Starts iterating a cell of the row whose base hour is base_s. */
void dpcodec_iter_init(struct dpcodec_iter *it, int64_t base_s, const uint8_t *q, size_t qlen,
                       const uint8_t *v, size_t vlen);
/* The next point: CT_OK, CT_NOTFOUND at the end, CT_ECORRUPT (err says where) on a malformed
 * cell. */
CT_MUST_CHECK int dpcodec_iter_next(struct dpcodec_iter *it, struct dpcodec_point *p,
                                    struct ct_err *err);
/* Frees what the iterator holds (a compressed cell's decoded points); accepts a finished or
 * unstarted iterator. */
void dpcodec_iter_end(struct dpcodec_iter *it);

/* Decodes every datapoint of a row's cells (all layouts), sorted by time, into out (cap points).
 * Duplicate timestamps keep the point of the newest cell (highest cell ts, then the later cell);
 * *dups counts the dropped ones (NULL allowed). *n gets the number of points; if it exceeds cap,
 * returns CT_ELIMIT with *n = the count needed and out holds garbage. CT_ECORRUPT on a malformed
 * cell. Allocation-free except for compressed cells (one buffer per cell while it is read). */
CT_MUST_CHECK int dpcodec_row_decode(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                                     struct dpcodec_point *out, size_t cap, size_t *n, size_t *dups,
                                     struct ct_err *err);

/* The newest datapoint of a row folded in cell by cell, for a reader that needs only that point
 * (the last-point query): after adding a row's cells in order, dpcodec_newest_get() gives the
 * point dpcodec_row_decode() would put last (the same duplicate rule: the newest cell's point,
 * and between cells of one write time the later one), and a cell it would reject fails here with
 * the same code and message. Cells may be borrowed only for the call (a scan's cell filter).
 * Allocation-free except while a compressed cell is read (its buffer is freed before the call
 * returns). A plain seconds cell (2-byte qualifier, value of the flags' length) is only checked
 * and its value bytes kept; the value of the one that ends up newest is decoded by get. Fields
 * private except ncells. */
struct dpcodec_newest {
    bool have;              /* a datapoint was seen */
    struct dpcodec_point p; /* the newest so far: ts_ms and cell_ts_ms, the rest unless pending */
    size_t ncells;          /* cells added so far (the index in error messages) */
    bool pending;           /* p's value is still pv/pq's raw bytes */
    uint8_t pq[2], pv[8], pvl;
    int64_t base_ms;
};
void dpcodec_newest_init(struct dpcodec_newest *n);
/* Whether a point at ts from a cell written at cell_ts replaces n's newest: dpcodec_collect()
 * would sort it after the newest so far and keep it among its duplicates (a later time, or the
 * same time from a cell written at the same time or later: the sort is stable and the
 * de-duplication keeps the last of equal times). */
static inline bool dpcodec_newest_wins(const struct dpcodec_newest *n, int64_t ts, int64_t cell_ts)
{
    return !n->have || ts > n->p.ts_ms || (ts == n->p.ts_ms && cell_ts >= n->p.cell_ts_ms);
}
/* dpcodec_newest_add() for any cell (the inline function below takes plain seconds cells). */
CT_MUST_CHECK int dpcodec_newest_add_cell(struct dpcodec_newest *n, int64_t base_s,
                                          const struct wc_cell *cell, struct ct_err *err);
/* Adds the next cell of the row whose base hour is base_s: CT_OK, or CT_ECORRUPT as
 * dpcodec_row_decode() (err prefixed "cell N of the row"). Inline for a plain seconds cell (a
 * 2-byte qualifier within the hour and a value as long as its flags say: an int of 1, 2, 4 or
 * 8 bytes or a float of 4 or 8, flags 0, 1, 3, 7, 11, 15, which dpcodec_point_cell() accepts as
 * it is): only its time is compared and, if it is the newest so far, its bytes kept. */
CT_MUST_CHECK static inline int dpcodec_newest_add(struct dpcodec_newest *n, int64_t base_s,
                                                   const struct wc_cell *cell, struct ct_err *err)
{
    const uint8_t *q = cell->qualifier.data, *v = cell->value.data;
    size_t vl = cell->value.len;
    if (cell->qualifier.len != 2 || (q[0] & DPCODEC_MS_PREFIX) == DPCODEC_MS_PREFIX)
        return dpcodec_newest_add_cell(n, base_s, cell, err);
    unsigned u = (unsigned)q[0] << 8 | q[1], flags = u & DPCODEC_FLAGS_MASK;
    if ((u >> 4) >= 3600 || vl != (flags & DPCODEC_LENGTH_MASK) + 1u || !((0x888Bu >> flags) & 1u))
        return dpcodec_newest_add_cell(n, base_s, cell, err);
    n->ncells++;
    int64_t ts = (base_s + (int64_t)(u >> 4)) * 1000;
    if (!dpcodec_newest_wins(n, ts, cell->ts_ms))
        return CT_OK;
    n->have = n->pending = true;
    n->p.ts_ms = ts;
    n->p.cell_ts_ms = cell->ts_ms;
    n->base_ms = base_s * 1000;
    n->pq[0] = q[0];
    n->pq[1] = q[1];
    n->pvl = (uint8_t)vl;
    switch (vl) { /* fixed-size moves, no memcpy call */
    case 1:
        n->pv[0] = v[0];
        break;
    case 2:
        memcpy(n->pv, v, 2);
        break;
    case 4:
        memcpy(n->pv, v, 4);
        break;
    default:
        memcpy(n->pv, v, 8);
        break;
    }
    return CT_OK;
}
/* The newest point of the cells added (with cell_ts_ms); false if none held a datapoint. */
bool dpcodec_newest_get(struct dpcodec_newest *n, struct dpcodec_point *out);

/* ---- columnar row decoding (the query path) ----------------------------------------------- */

/* A row's points as columns, with only what a query needs of a point: its time and its value as
 * an integer or a double (the stored width, the ms flag and the cell time are dropped). The
 * struct is reusable across rows: buffers grow to the largest row and are kept until
 * dpcodec_cols_free(), so decoding a row allocates nothing once warm (a deflated compressed cell
 * reuses one inflate state). Fields other than ts, val, is_int and n are private. */
struct dpcodec_cols {
    int64_t *ts;     /* ms, ascending, one point per timestamp */
    uint64_t *val;   /* is_int[i]: the int64 (two's complement); else the IEEE double's bits */
    uint8_t *is_int; /* 1 = integer, 0 = float or double */
    size_t n;
    int kinds; /* DPCODEC_COLS_INTS | DPCODEC_COLS_REALS: which kinds of value the row holds */
    /* Set lazy_ts to let a row of regular timestamps (a compressed cell whose times are
     * ts_first + i * ts_step, ascending) leave ts unwritten: ts_regular then tells so, and
     * dpcodec_cols_fill_ts() writes them when needed. ts_regular is false otherwise. */
    bool lazy_ts;
    bool ts_regular;
    int64_t ts_first, ts_step;
    /* true: no value is NaN (a compressed cell of decimals: every value m / 10^e); false when
     * not known */
    bool no_nan;
    /* private */
    size_t cap;
    struct dpcodec_point *pts; /* the general path's buffer */
    size_t pcap;
    uint8_t *zbuf; /* an inflated payload */
    size_t zcap;
    void *zs; /* z_stream, or NULL */
};
#define DPCODEC_COLS_INTS  1
#define DPCODEC_COLS_REALS 2
void dpcodec_cols_init(struct dpcodec_cols *c);
void dpcodec_cols_free(struct dpcodec_cols *c); /* then c may be reused after init */
/* Writes the timestamps of a ts_regular row into ts (and clears ts_regular). */
void dpcodec_cols_fill_ts(struct dpcodec_cols *c);
/* Decodes every datapoint of a row into c (replacing what it held) exactly as
 * dpcodec_row_decode() does: sorted, duplicates resolved the same way, the same errors. A row
 * whose datapoint cells are one compressed cell, up to 16 compressed cells over disjoint time
 * spans, or single points in time order, is decoded straight into the columns; other rows go
 * through dpcodec_row_decode(). */
CT_MUST_CHECK int dpcodec_row_decode_cols(int64_t base_s, const struct wc_cell *cells,
                                          size_t ncells, struct dpcodec_cols *c, size_t *dups,
                                          struct ct_err *err);
/* Point i's value as a double (integers converted). */
static inline double dpcodec_cols_double(const struct dpcodec_cols *c, size_t i)
{
    if (c->is_int[i])
        return (double)(int64_t)c->val[i];
    double d;
    memcpy(&d, &c->val[i], sizeof(d));
    return d;
}

/* Annotations: the qualifier of an annotation starting at start_ms (ms qualifier iff ms), and
 * the start time of an annotation qualifier (CT_EINVAL if it is not one). */
size_t dpcodec_annotation_qualifier(int64_t base_s, int64_t start_ms, bool ms, uint8_t *q);
CT_MUST_CHECK int dpcodec_annotation_time(int64_t base_s, const uint8_t *q, size_t qlen,
                                          int64_t *start_ms, struct ct_err *err);

/* ---- writing hours: compacted and compressed cells -------------------------------------- */

enum dpcodec_format {
    DPCODEC_FORMAT_COMPRESSED = 0, /* ctsdb's compressed cell (default on the embedded store) */
    DPCODEC_FORMAT_OPENTSDB = 1,   /* OpenTSDB's compacted cell */
};

/* Encodes n points (sorted by time, unique timestamps, all inside the hour base_s) as one
 * OpenTSDB compacted cell: qualifier into q (room 4*n), value into v (room 8*n + 1). */
CT_MUST_CHECK int dpcodec_compacted_encode(int64_t base_s, const struct dpcodec_point *pts,
                                           size_t n, uint8_t *q, size_t *qlen, uint8_t *v,
                                           size_t *vlen, struct ct_err *err);
/* Upper bound of a compressed cell's value for n points. */
size_t dpcodec_compressed_bound(size_t n);
/* The qualifier of a compressed cell holding pts[0..n): DPCODEC_CQ + FNV-1a 64 of the timestamps
 * (big-endian), DPCODEC_CQ_LEN bytes into q. */
void dpcodec_compressed_qualifier(const struct dpcodec_point *pts, size_t n, uint8_t *q);
/* Encodes n points (sorted, unique timestamps, inside the hour) as ctsdb's compressed cell value
 * into v (room dpcodec_compressed_bound(n)); see dpcodec_compressed_qualifier(). Lossless: decoding
 * gives back every timestamp, type, ms flag and value bit for bit. Uses this thread's encoder
 * state (or a temporary buffer for rows above its limit); CT_ENOMEM if memory cannot be had.
 * Thread-safe: threads never share that state. */
CT_MUST_CHECK int dpcodec_compressed_encode(int64_t base_s, const struct dpcodec_point *pts,
                                            size_t n, uint8_t *v, size_t *vlen, struct ct_err *err);

/* Tests and benchmarks: false makes the radix decode take its plain loops even where the CPU
 * has AVX2 (so both paths are checked on any machine); true (the default) lets CPUID choose. */
void dpcodec_set_simd(bool allowed);

/* The result of compacting one row: the cells to write in its place, in wc.h cell order. */
struct dpcodec_compacted {
    struct wc_cell *cells; /* row/family unset (caller fills); qualifier/value point into mem */
    size_t ncells;
    size_t npoints;    /* datapoints in the merged cell */
    size_t duplicates; /* duplicate timestamps resolved (dropped) */
    void *mem;         /* owned; freed by dpcodec_compacted_free() */
};
void dpcodec_compacted_free(struct dpcodec_compacted *c);

/* Merges every datapoint cell of a row (all layouts) into one cell of `format` and keeps the
 * other cells (annotations, histograms, unknown) as they are. Duplicate timestamps: identical
 * values are merged silently; different values are CT_ECONFLICT (err names the timestamp)
 * unless fix_duplicates, which keeps the newest cell's value. Returns CT_NOTFOUND (out empty)
 * when there is nothing to gain: no datapoint cell, already exactly one merged cell of this
 * format, or (OpenTSDB format) a lone single cell. Returns a new result in *out, freed with dpcodec_compacted_free(). */
CT_MUST_CHECK int dpcodec_compact(int64_t base_s, const struct wc_cell *cells, size_t ncells,
                                  enum dpcodec_format format, bool fix_duplicates,
                                  struct dpcodec_compacted *out, struct ct_err *err);

#endif
