/* sst_write.c - the block file writer (sst.h); the format is in sst_format.h.
 *
 * Invariants: (1) cells arrive in strictly increasing cell_compare() order (checked: an
 * out-of-order cell is CT_EINVAL and leaves the writer usable only for abort); (2) the current
 * data block `blk` always holds at least one entry when it is closed, and its first entry is a
 * restart point; (3) `lastkey` holds row|qual of the last cell added, `first` the encoded cell
 * key of the current block's first cell; (4) `out` holds file bytes not yet written, which start
 * at file offset `file_off`. Per-cell work appends into these reused buffers: no malloc per cell
 * (buffers grow geometrically).
 * Threading: a writer belongs to one thread. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <snappy-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/bloom.h"
#include "storage/engine/eio.h"
#include "storage/engine/sst.h"
#include "storage/engine/sst_format.h"

#define SST_OUT_FLUSH_BYTES (1u << 20)
#define SST_DEFAULT_BLOCK   65536u

struct sst_writer {
    char path[PATH_MAX];
    int fd;
    struct sst_writer_options o;
    uint8_t *out;
    size_t out_len, out_cap;
    uint64_t file_off;

    uint8_t *blk;
    size_t blk_len, blk_cap;
    uint32_t *restarts;
    size_t nrestarts, restarts_cap;
    uint32_t blk_entries;

    uint8_t *first;
    size_t first_len, first_cap;
    uint8_t *lastkey;
    size_t lastkey_len, lastkey_cap;
    uint32_t last_row_len;
    int64_t last_ts;
    uint8_t last_type;
    uint64_t last_seq;
    bool have_last;

    uint8_t *idx;
    size_t idx_len, idx_cap;
    uint64_t nblocks;

    uint8_t *cbuf;
    size_t cbuf_cap;

    uint64_t *hashes;
    size_t nhashes, hashes_cap;

    struct sst_meta meta;
    bool failed;
};

static int sw_reserve(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return CT_OK;
    size_t n = *cap ? *cap : 4096;
    while (n < need)
        n *= 2;
    uint8_t *q = realloc(*p, n);
    if (!q)
        return CT_ENOMEM;
    *p = q;
    *cap = n;
    return CT_OK;
}

static int sw_nomem(struct sst_writer *w, struct ct_err *err)
{
    w->failed = true;
    return ct_err_set(err, CT_ENOMEM, "out of memory writing block file %s", w->path);
}

static int sw_flush_out(struct sst_writer *w, struct ct_err *err)
{
    if (w->out_len == 0)
        return CT_OK;
    int rc = eio_write_all(w->fd, w->out, w->out_len, w->path, err);
    if (rc != CT_OK) {
        w->failed = true;
        return rc;
    }
    w->file_off += w->out_len;
    w->out_len = 0;
    return CT_OK;
}

/* Appends payload | type | crc to the file; *off gets the payload's offset. */
static int sw_emit_block(struct sst_writer *w, const uint8_t *payload, size_t len, uint8_t type,
                         uint64_t *off, struct ct_err *err)
{
    if (len > UINT32_MAX)
        return ct_err_set(err, CT_ELIMIT, "block of %zu bytes too large for %s", len, w->path);
    if (sw_reserve(&w->out, &w->out_cap, w->out_len + len + SST_BLOCK_TRAILER_BYTES) != CT_OK)
        return sw_nomem(w, err);
    *off = w->file_off + w->out_len;
    uint8_t *p = w->out + w->out_len;
    memcpy(p, payload, len);
    p[len] = type;
    coding_put_be32(p + len + 1, crc32c_mask(crc32c_value(p, len + 1)));
    w->out_len += len + SST_BLOCK_TRAILER_BYTES;
    if (w->out_len >= SST_OUT_FLUSH_BYTES)
        return sw_flush_out(w, err);
    return CT_OK;
}

/* Encodes a cell key (index format) at p, which has room; returns the bytes written. */
static size_t sw_put_cell_key(uint8_t *p, const uint8_t *key, uint32_t row_len, size_t key_len,
                              int64_t ts, uint8_t type, uint64_t seq)
{
    size_t n = coding_put_varint64(p, row_len);
    n += coding_put_varint64(p + n, key_len - row_len);
    memcpy(p + n, key, key_len);
    n += key_len;
    n += coding_put_varint64(p + n, coding_zigzag(ts));
    p[n++] = type;
    n += coding_put_varint64(p + n, seq);
    return n;
}

int sst_writer_open(const char *path, const struct sst_writer_options *o, struct sst_writer **out,
                    struct ct_err *err)
{
    struct sst_writer *w = calloc(1, sizeof(*w));
    if (!w)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating block file %s", path);
    if ((size_t)snprintf(w->path, sizeof w->path, "%s", path) >= sizeof w->path) {
        free(w);
        return ct_err_set(err, CT_EINVAL, "path too long: %s", path);
    }
    w->o = *o;
    if (w->o.blocksize == 0)
        w->o.blocksize = SST_DEFAULT_BLOCK;
    if (w->o.compression > WC_COMPRESSION_GZ || w->o.bloom > WC_BLOOM_ROWCOL) {
        free(w);
        return ct_err_set(err, CT_EINVAL, "bad compression or bloom setting for %s", path);
    }
    w->meta.min_ts_ms = INT64_MAX;
    w->meta.max_ts_ms = INT64_MIN;
    if (w->o.bloom != WC_BLOOM_NONE && w->o.expected_cells) {
        size_t want = w->o.expected_cells < (1u << 20) ? w->o.expected_cells : (1u << 20);
        w->hashes = malloc(want * sizeof(uint64_t));
        w->hashes_cap = w->hashes ? want : 0;
    }
    w->fd = eio_open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (w->fd < 0) {
        int e = errno;
        free(w->hashes);
        free(w);
        return ct_err_errno(err, e == EEXIST ? CT_EEXIST : CT_EIO, e, "cannot create block file %s",
                            path);
    }
    if (sw_reserve(&w->out, &w->out_cap, SST_OUT_FLUSH_BYTES + 64) != CT_OK) {
        sst_writer_abort(w);
        return ct_err_set(err, CT_ENOMEM, "out of memory creating block file %s", path);
    }
    coding_put_be32(w->out, SST_MAGIC);
    w->out[4] = SST_VERSION;
    w->out[5] = w->out[6] = w->out[7] = 0;
    w->out_len = SST_HEADER_BYTES;
    *out = w;
    return CT_OK;
}

static int sw_add_hash(struct sst_writer *w, uint64_t h, struct ct_err *err)
{
    if (w->nhashes == w->hashes_cap) {
        size_t n = w->hashes_cap ? w->hashes_cap * 2 : 1024;
        uint64_t *q = realloc(w->hashes, n * sizeof(*q));
        if (!q)
            return sw_nomem(w, err);
        w->hashes = q;
        w->hashes_cap = n;
    }
    w->hashes[w->nhashes++] = h;
    return CT_OK;
}

static int sw_finish_block(struct sst_writer *w, struct ct_err *err)
{
    size_t need = w->blk_len + 4 * w->nrestarts + 4;
    if (sw_reserve(&w->blk, &w->blk_cap, need) != CT_OK)
        return sw_nomem(w, err);
    for (size_t i = 0; i < w->nrestarts; i++) {
        coding_put_be32(w->blk + w->blk_len, w->restarts[i]);
        w->blk_len += 4;
    }
    coding_put_be32(w->blk + w->blk_len, (uint32_t)w->nrestarts);
    w->blk_len += 4;

    const uint8_t *payload = w->blk;
    size_t plen = w->blk_len;
    uint8_t type = SST_COMPRESS_NONE;
    if (w->o.compression == WC_COMPRESSION_SNAPPY) {
        size_t clen = snappy_max_compressed_length(w->blk_len);
        if (sw_reserve(&w->cbuf, &w->cbuf_cap, clen) != CT_OK)
            return sw_nomem(w, err);
        if (snappy_compress((const char *)w->blk, w->blk_len, (char *)w->cbuf, &clen) ==
                SNAPPY_OK &&
            clen < w->blk_len - w->blk_len / 8) {
            payload = w->cbuf;
            plen = clen;
            type = SST_COMPRESS_SNAPPY;
        }
    } else if (w->o.compression == WC_COMPRESSION_GZ) {
        uLongf clen = compressBound((uLong)w->blk_len);
        if (sw_reserve(&w->cbuf, &w->cbuf_cap, clen + CODING_VARINT64_MAX) != CT_OK)
            return sw_nomem(w, err);
        size_t h = coding_put_varint64(w->cbuf, w->blk_len);
        if (compress2(w->cbuf + h, &clen, w->blk, (uLong)w->blk_len, Z_DEFAULT_COMPRESSION) ==
                Z_OK &&
            h + clen < w->blk_len - w->blk_len / 8) {
            payload = w->cbuf;
            plen = h + clen;
            type = SST_COMPRESS_ZLIB;
        }
    }
    uint64_t off = 0;
    int rc = sw_emit_block(w, payload, plen, type, &off, err);
    if (rc != CT_OK)
        return rc;

    /* index entry: offset, len, first key, last key */
    size_t room =
        2 * CODING_VARINT64_MAX + w->first_len + w->lastkey_len + 5 * CODING_VARINT64_MAX + 1;
    if (sw_reserve(&w->idx, &w->idx_cap, w->idx_len + room) != CT_OK)
        return sw_nomem(w, err);
    uint8_t *p = w->idx + w->idx_len;
    size_t n = coding_put_varint64(p, off);
    n += coding_put_varint64(p + n, plen);
    memcpy(p + n, w->first, w->first_len);
    n += w->first_len;
    n += sw_put_cell_key(p + n, w->lastkey, w->last_row_len, w->lastkey_len, w->last_ts,
                         w->last_type, w->last_seq);
    w->idx_len += n;
    w->nblocks++;
    w->blk_len = 0;
    w->nrestarts = 0;
    w->blk_entries = 0;
    return CT_OK;
}

int sst_writer_add(struct sst_writer *w, const struct cell *c, struct ct_err *err)
{
    if (w->failed)
        return ct_err_set(err, CT_EINVAL, "block file writer for %s already failed", w->path);
    if (c->row_len > WC_MAX_ROW_BYTES)
        return ct_err_set(err, CT_EINVAL, "row of %u bytes too long for %s", c->row_len, w->path);
    size_t key_len = (size_t)c->row_len + c->qual_len;
    if (w->have_last) {
        struct cell last = {.row = w->lastkey,
                            .row_len = w->last_row_len,
                            .qual = w->lastkey + w->last_row_len,
                            .qual_len = (uint32_t)(w->lastkey_len - w->last_row_len),
                            .ts_ms = w->last_ts,
                            .type = w->last_type,
                            .seq = w->last_seq};
        if (cell_compare(c, &last) <= 0) {
            w->failed = true;
            return ct_err_set(err, CT_EINVAL, "cells out of order writing %s (cell %llu)", w->path,
                              (unsigned long long)w->meta.cells);
        }
    }
    bool row_changed =
        !w->have_last || cell_bytes_cmp(c->row, c->row_len, w->lastkey, w->last_row_len) != 0;
    bool col_changed =
        row_changed || cell_bytes_cmp(c->qual, c->qual_len, w->lastkey + w->last_row_len,
                                      w->lastkey_len - w->last_row_len) != 0;
    if (w->o.bloom != WC_BLOOM_NONE && row_changed &&
        sw_add_hash(w, bloom_hash_row(c->row, c->row_len), err) != CT_OK)
        return err->code;
    if (w->o.bloom == WC_BLOOM_ROWCOL && col_changed &&
        sw_add_hash(w, bloom_hash_rowcol(c->row, c->row_len, c->qual, c->qual_len), err) != CT_OK)
        return err->code;

    size_t shared = 0;
    bool restart = w->blk_entries % SST_RESTART_INTERVAL == 0;
    if (!restart) {
        size_t lim = key_len < w->lastkey_len ? key_len : w->lastkey_len;
        while (shared < lim) {
            uint8_t b = shared < c->row_len ? c->row[shared] : c->qual[shared - c->row_len];
            if (b != w->lastkey[shared])
                break;
            shared++;
        }
    }
    size_t unshared = key_len - shared;
    size_t need = w->blk_len + 7 * CODING_VARINT64_MAX + 1 + unshared + c->value_len;
    if (sw_reserve(&w->blk, &w->blk_cap, need) != CT_OK)
        return sw_nomem(w, err);
    if (restart) {
        if (w->nrestarts == w->restarts_cap) {
            size_t n = w->restarts_cap ? w->restarts_cap * 2 : 64;
            uint32_t *q = realloc(w->restarts, n * sizeof(*q));
            if (!q)
                return sw_nomem(w, err);
            w->restarts = q;
            w->restarts_cap = n;
        }
        w->restarts[w->nrestarts++] = (uint32_t)w->blk_len;
    }
    if (w->blk_entries == 0) {
        if (sw_reserve(&w->first, &w->first_cap, key_len + 5 * CODING_VARINT64_MAX + 1) != CT_OK)
            return sw_nomem(w, err);
        size_t n = coding_put_varint64(w->first, c->row_len);
        n += coding_put_varint64(w->first + n, c->qual_len);
        memcpy(w->first + n, c->row, c->row_len);
        n += c->row_len;
        if (c->qual_len)
            memcpy(w->first + n, c->qual, c->qual_len);
        n += c->qual_len;
        n += coding_put_varint64(w->first + n, coding_zigzag(c->ts_ms));
        w->first[n++] = c->type;
        n += coding_put_varint64(w->first + n, c->seq);
        w->first_len = n;
    }
    uint8_t *p = w->blk + w->blk_len;
    size_t n = coding_put_varint64(p, shared);
    n += coding_put_varint64(p + n, unshared);
    n += coding_put_varint64(p + n, c->row_len);
    n += coding_put_varint64(p + n, c->value_len);
    if (w->blk_entries > 0 && sst_encoding_deltas(w->o.encoding)) {
        /* DIFF / FAST_DIFF: timestamp and sequence as deltas from the previous entry (wrapping
         * unsigned arithmetic, so any two int64 timestamps round-trip) */
        n += coding_put_varint64(
            p + n, coding_zigzag((int64_t)((uint64_t)c->ts_ms - (uint64_t)w->last_ts)));
        p[n++] = c->type;
        n += coding_put_varint64(p + n, coding_zigzag((int64_t)(c->seq - w->last_seq)));
    } else {
        n += coding_put_varint64(p + n, coding_zigzag(c->ts_ms));
        p[n++] = c->type;
        n += coding_put_varint64(p + n, c->seq);
    }
    for (size_t i = shared; i < key_len; i++)
        p[n++] = i < c->row_len ? c->row[i] : c->qual[i - c->row_len];
    if (c->value_len)
        memcpy(p + n, c->value, c->value_len);
    n += c->value_len;
    w->blk_len += n;
    w->blk_entries++;

    /* remember the last key */
    if (sw_reserve(&w->lastkey, &w->lastkey_cap, key_len + 1) != CT_OK)
        return sw_nomem(w, err);
    if (shared < c->row_len)
        memcpy(w->lastkey + shared, c->row + shared, c->row_len - shared);
    size_t qstart = shared > c->row_len ? shared - c->row_len : 0;
    if (c->qual_len > qstart)
        memcpy(w->lastkey + c->row_len + qstart, c->qual + qstart, c->qual_len - qstart);
    w->lastkey_len = key_len;
    w->last_row_len = c->row_len;
    w->last_ts = c->ts_ms;
    w->last_type = c->type;
    w->last_seq = c->seq;
    w->have_last = true;

    struct sst_meta *m = &w->meta;
    if (m->cells == 0) {
        memcpy(m->first_row, c->row, c->row_len);
        m->first_row_len = c->row_len;
    }
    m->cells++;
    if (c->type != WC_TYPE_PUT)
        m->delete_markers++;
    if (c->ts_ms < m->min_ts_ms)
        m->min_ts_ms = c->ts_ms;
    if (c->ts_ms > m->max_ts_ms)
        m->max_ts_ms = c->ts_ms;
    if (c->seq > m->max_seq)
        m->max_seq = c->seq;

    if (w->blk_len + 4 * w->nrestarts + 4 >= w->o.blocksize)
        return sw_finish_block(w, err);
    return CT_OK;
}

static void sw_free(struct sst_writer *w)
{
    free(w->out);
    free(w->blk);
    free(w->restarts);
    free(w->first);
    free(w->lastkey);
    free(w->idx);
    free(w->cbuf);
    free(w->hashes);
    free(w);
}

void sst_writer_abort(struct sst_writer *w)
{
    if (!w)
        return;
    if (w->fd >= 0) {
        eio_close(w->fd);
        if (eio_unlink(w->path) != 0) { /* best effort: the file is garbage either way */
        }
    }
    sw_free(w);
}

static int sw_finish(struct sst_writer *w, struct sst_meta *meta, struct ct_err *err)
{
    int rc;
    if (w->failed)
        return ct_err_set(err, CT_EINVAL, "block file writer for %s already failed", w->path);
    if (w->blk_entries && (rc = sw_finish_block(w, err)) != CT_OK)
        return rc;
    uint64_t index_off, bloom_off = 0, meta_off;
    size_t index_len, bloom_len = 0, meta_len;

    /* index */
    uint8_t cnt[CODING_VARINT64_MAX];
    size_t cn = coding_put_varint64(cnt, w->nblocks);
    if (sw_reserve(&w->idx, &w->idx_cap, w->idx_len + cn) != CT_OK)
        return sw_nomem(w, err);
    memmove(w->idx + cn, w->idx, w->idx_len);
    memcpy(w->idx, cnt, cn);
    w->idx_len += cn;
    index_len = w->idx_len;
    if ((rc = sw_emit_block(w, w->idx, w->idx_len, SST_COMPRESS_NONE, &index_off, err)) != CT_OK)
        return rc;

    /* bloom */
    if (w->o.bloom != WC_BLOOM_NONE) {
        uint32_t nbits = bloom_bits_for(w->nhashes);
        size_t blen = 8 + nbits / 8;
        uint8_t *b = calloc(1, blen);
        if (!b)
            return sw_nomem(w, err);
        b[0] = w->o.bloom == WC_BLOOM_ROW ? SST_BLOOM_ROW : SST_BLOOM_ROWCOL;
        b[1] = BLOOM_PROBES;
        coding_put_be32(b + 4, nbits);
        for (size_t i = 0; i < w->nhashes; i++)
            bloom_add(b + 8, nbits, BLOOM_PROBES, w->hashes[i]);
        rc = sw_emit_block(w, b, blen, SST_COMPRESS_NONE, &bloom_off, err);
        free(b);
        if (rc != CT_OK)
            return rc;
        bloom_len = blen;
    }

    /* meta */
    struct sst_meta *m = &w->meta;
    if (m->cells == 0) {
        m->min_ts_ms = 0;
        m->max_ts_ms = 0;
    } else {
        memcpy(m->last_row, w->lastkey, w->last_row_len);
        m->last_row_len = w->last_row_len;
    }
    size_t mlen = SST_META_FIXED_BYTES + 2 + m->first_row_len + 2 + m->last_row_len;
    uint8_t *mb = malloc(mlen);
    if (!mb)
        return sw_nomem(w, err);
    coding_put_be64(mb, m->cells);
    coding_put_be64(mb + 8, m->delete_markers);
    coding_put_be64(mb + 16, (uint64_t)m->min_ts_ms);
    coding_put_be64(mb + 24, (uint64_t)m->max_ts_ms);
    coding_put_be64(mb + 32, m->max_seq);
    m->data_blocks = (uint32_t)w->nblocks;
    m->blocksize = w->o.blocksize;
    m->compression = w->o.compression;
    m->bloom = w->o.bloom;
    m->encoding = w->o.encoding;
    coding_put_be32(mb + 40, (uint32_t)w->nblocks);
    coding_put_be32(mb + 44, w->o.blocksize);
    mb[48] = (uint8_t)w->o.compression;
    mb[49] = (uint8_t)w->o.bloom;
    mb[50] = (uint8_t)w->o.encoding;
    mb[51] = 0;
    size_t o = SST_META_FIXED_BYTES;
    coding_put_be16(mb + o, (uint16_t)m->first_row_len);
    o += 2;
    memcpy(mb + o, m->first_row, m->first_row_len);
    o += m->first_row_len;
    coding_put_be16(mb + o, (uint16_t)m->last_row_len);
    o += 2;
    memcpy(mb + o, m->last_row, m->last_row_len);
    o += m->last_row_len;
    meta_len = o;
    assert(meta_len == mlen);
    rc = sw_emit_block(w, mb, meta_len, SST_COMPRESS_NONE, &meta_off, err);
    free(mb);
    if (rc != CT_OK)
        return rc;

    /* footer */
    uint8_t f[SST_FOOTER_BYTES] = {0};
    coding_put_be64(f, index_off);
    coding_put_be32(f + 8, (uint32_t)index_len);
    coding_put_be64(f + 12, bloom_off);
    coding_put_be32(f + 20, (uint32_t)bloom_len);
    coding_put_be64(f + 24, meta_off);
    coding_put_be32(f + 32, (uint32_t)meta_len);
    f[40] = SST_VERSION;
    coding_put_be32(f + 44, SST_MAGIC);
    coding_put_be32(f + 36, crc32c_mask(crc32c_extend(crc32c_value(f, 36), f + 40, 8)));
    if (sw_reserve(&w->out, &w->out_cap, w->out_len + sizeof f) != CT_OK)
        return sw_nomem(w, err);
    memcpy(w->out + w->out_len, f, sizeof f);
    w->out_len += sizeof f;
    if ((rc = sw_flush_out(w, err)) != CT_OK)
        return rc;
    if ((rc = eio_sync(w->fd, true, w->path, err)) != CT_OK)
        return rc;
    int fd = w->fd;
    w->fd = -1;
    if (eio_close(fd) != 0) {
        w->fd = -2; /* closed: abort only unlinks */
        return ct_err_errno(err, CT_EIO, errno, "cannot close %s", w->path);
    }
    m->file_bytes = w->file_off;
    if (meta)
        *meta = *m;
    return CT_OK;
}

int sst_writer_finish(struct sst_writer *w, struct sst_meta *meta, struct ct_err *err)
{
    int rc = sw_finish(w, meta, err);
    if (rc != CT_OK) {
        if (w->fd == -2 || w->fd == -1) {
            if (eio_unlink(w->path) != 0) { /* best effort */
            }
            w->fd = -1;
        }
        sst_writer_abort(w);
        return rc;
    }
    sw_free(w);
    return CT_OK;
}
