/* sst_read.c - the block file reader and iterator (sst.h); the format is in sst_format.h.
 *
 * An open file keeps its footer, metadata, index and bloom bits in memory; data blocks are read
 * on demand, checked (CRC32C), decompressed and VALIDATED once (every entry parses inside the
 * block, every restart offset is an entry whose key is stored whole), and that contents buffer
 * is what the block cache holds: no decoded copy, so a cached block costs its own size. An
 * iterator walks a block as LevelDB's does: seeks binary-search the restart points (whose keys
 * are stored whole and are compared in place) and then step forward, rebuilding the current key
 * (row | qualifier) in the iterator's own buffer from the shared prefix and the entry's suffix;
 * prev() re-walks at most one restart interval. The block index is searched through dense
 * arrays of the first 8 row bytes of every block's first and last key (one cache line holds 8
 * blocks), so a seek compares whole keys only where those prefixes tie.
 *
 * Invariants: (1) an sst_block is immutable once read and shared through the cache's refcount
 * (or owned by one iterator when the family does not cache); (2) every offset and length taken
 * from the file is bounds-checked before use: damage gives CT_ECORRUPT naming the file and the
 * offset, never a crash - a block is validated before anyone walks it, and the walk still
 * bounds-checks every entry; (3) an iterator holds a file reference, so the file outlives it;
 * (4) it->valid implies it->blk is loaded, it->bi is its block number, it->pos is the offset
 * of an entry of it (reached by walking forward from a restart point), it->key holds that
 * entry's whole key and restarts[it->ri] <= it->pos < restarts[it->ri + 1] (or the block end).
 * Threading: struct sst is immutable after sst_open() except its atomic refcount and obsolete
 * flag; pread() on the shared descriptor needs no lock. An iterator belongs to one thread. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <snappy-c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/block_cache.h"
#include "storage/engine/bloom.h"
#include "storage/engine/eio.h"
#include "storage/engine/sst.h"
#include "storage/engine/sst_format.h"

#define SST_MAX_BLOCK_BYTES (1u << 30)

/* A data block's contents, validated: entries in [0, limit), then nrestarts be32 offsets. One
 * allocation (header, then the contents). */
struct sst_block {
    uint32_t limit;
    uint32_t nrestarts;
    size_t charge;
    uint8_t *data;
};

struct sst_index_entry {
    uint64_t off;
    uint32_t len;
    struct cell first;
    struct cell last;
};

struct sst {
    atomic_int refs;
    atomic_bool obsolete;
    char path[PATH_MAX];
    int fd;
    uint64_t file_id;
    uint64_t file_size;
    struct block_cache *cache;
    struct sst_read_options ro;
    struct sst_meta meta;
    uint32_t nblocks;
    struct sst_index_entry *idx;
    uint64_t *idx_first_k; /* first 8 row bytes (big-endian, zero-padded) of each block's first */
    uint64_t *idx_last_k;  /* ... and last cell: the index search compares these first */
    uint8_t *idx_raw;
    uint8_t *bloom_raw;
    const uint8_t *bloom_bits;
    uint32_t bloom_nbits;
    uint8_t bloom_probes;
    uint8_t bloom_kind;
};

/* Reusable buffers for reading compressed blocks: `in` receives the bytes read, `out` the
 * decompressed contents (index, bloom and meta blocks at open). */
struct sst_scratch {
    uint8_t *in;
    size_t in_cap;
    uint8_t *out;
    size_t out_cap;
};

#define SST_KEY_INLINE 64

struct sst_iter {
    struct sst *f;
    struct sst_block *blk;
    struct block_cache_handle *h; /* NULL: blk is owned by the iterator */
    int64_t bi;
    bool valid;
    uint32_t pos;  /* the current entry */
    uint32_t next; /* the entry after it (== blk->limit at the last one) */
    uint32_t ri;   /* restart interval holding pos */
    /* the current entry, decoded */
    uint32_t row_len;
    uint32_t val_off;
    uint32_t val_len;
    uint8_t type;
    int64_t ts;
    uint64_t seq;
    uint8_t *key; /* row | qualifier; key_inline or the heap */
    size_t key_len;
    size_t key_cap;
    struct sst_scratch scratch;
    uint8_t key_inline[SST_KEY_INLINE];
};

/* The first 8 bytes of a row as a big-endian integer (zero-padded): rows whose prefixes differ
 * compare as the prefixes do. */
static inline uint64_t sst_row_prefix(const uint8_t *row, uint32_t len)
{
    uint8_t b[8] = {0};
    memcpy(b, row, len < 8 ? len : 8);
    return coding_get_be64(b);
}
/* ---- blocks --------------------------------------------------------------------------------- */

static void sst_block_free(void *p)
{
    free(p); /* one allocation: header and contents */
}

static bool sst_scratch_fit(uint8_t **p, size_t *cap, size_t need)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 8192;
    while (n < need)
        n *= 2;
    uint8_t *q = malloc(n);
    if (!q)
        return false;
    free(*p);
    *p = q;
    *cap = n;
    return true;
}

static void sst_scratch_free(struct sst_scratch *s)
{
    free(s->in);
    free(s->out);
    s->in = s->out = NULL;
    s->in_cap = s->out_cap = 0;
}

/* Decompresses block contents buf[0, len) of compression `type` (already read and checked)
 * into the scratch's `out` buffer; *out and *outlen are buf itself for SST_COMPRESS_NONE. */
static int sst_decompress(const struct sst *f, uint64_t off, const char *what, uint8_t type,
                          const uint8_t *buf, size_t len, struct sst_scratch *sc,
                          const uint8_t **out, size_t *outlen, struct ct_err *err)
{
    if (type == SST_COMPRESS_NONE) {
        *out = buf;
        *outlen = len;
        return CT_OK;
    }
    size_t dlen = 0;
    const char *why = NULL;
    bool nomem = false;
    if (type == SST_COMPRESS_SNAPPY) {
        if (snappy_uncompressed_length((const char *)buf, len, &dlen) != SNAPPY_OK ||
            dlen > SST_MAX_BLOCK_BYTES)
            why = "bad snappy header";
        else if (!sst_scratch_fit(&sc->out, &sc->out_cap, dlen ? dlen : 1))
            nomem = true;
        else if (snappy_uncompress((const char *)buf, len, (char *)sc->out, &dlen) != SNAPPY_OK)
            why = "snappy decompression failed";
    } else if (type == SST_COMPRESS_ZLIB) {
        uint64_t ulen = 0;
        size_t h = coding_get_varint64(buf, buf + len, &ulen);
        uLongf zl = (uLongf)ulen;
        if (!h || ulen > SST_MAX_BLOCK_BYTES)
            why = "bad zlib length";
        else if (!sst_scratch_fit(&sc->out, &sc->out_cap, ulen ? ulen : 1))
            nomem = true;
        else if (uncompress(sc->out, &zl, buf + h, (uLong)(len - h)) != Z_OK || zl != ulen)
            why = "zlib decompression failed";
        dlen = (size_t)ulen;
    } else {
        why = "unknown compression type";
    }
    if (nomem)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
    if (why)
        return ct_err_set(err, CT_ECORRUPT, "corrupt %s block at offset %llu in %s: %s", what,
                          (unsigned long long)off, f->path, why);
    *out = sc->out;
    *outlen = dlen;
    return CT_OK;
}

/* Checks that [off, off+len) + trailer lies inside the file's block area. */
static int sst_check_handle(const struct sst *f, uint64_t off, uint64_t len, const char *what,
                            struct ct_err *err)
{
    if (len > SST_MAX_BLOCK_BYTES || off < SST_HEADER_BYTES ||
        off + len + SST_BLOCK_TRAILER_BYTES > f->file_size - SST_FOOTER_BYTES)
        return ct_err_set(err, CT_ECORRUPT,
                          "corrupt %s block at offset %llu in %s: length %llu out of bounds", what,
                          (unsigned long long)off, f->path, (unsigned long long)len);
    return CT_OK;
}

/* Reads block [off, off+len) + trailer into buf (len + SST_BLOCK_TRAILER_BYTES bytes) and
 * checks its CRC. */
static int sst_read_checked(const struct sst *f, uint64_t off, uint64_t len, const char *what,
                            uint8_t *buf, struct ct_err *err)
{
    int rc = eio_pread_all(f->fd, buf, len + SST_BLOCK_TRAILER_BYTES, off, f->path, err);
    if (rc != CT_OK)
        return rc;
    if (crc32c_mask(crc32c_value(buf, len + 1)) != coding_get_be32(buf + len + 1))
        return ct_err_set(err, CT_ECORRUPT, "corrupt %s block at offset %llu in %s: checksum mismatch",
                          what, (unsigned long long)off, f->path);
    return CT_OK;
}

/* Reads and checks the block at [off, off+len) + trailer; *out points at its (decompressed)
 * contents of *outlen bytes inside the scratch buffers, valid until the scratch is reused. */
static int sst_read_raw(const struct sst *f, uint64_t off, uint64_t len, const char *what,
                        struct sst_scratch *sc, const uint8_t **out, size_t *outlen,
                        struct ct_err *err)
{
    int rc = sst_check_handle(f, off, len, what, err);
    if (rc != CT_OK)
        return rc;
    if (!sst_scratch_fit(&sc->in, &sc->in_cap, len + SST_BLOCK_TRAILER_BYTES))
        return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
    if ((rc = sst_read_checked(f, off, len, what, sc->in, err)) != CT_OK)
        return rc;
    return sst_decompress(f, off, what, sc->in[len], sc->in, len, sc, out, outlen, err);
}

/* Like sst_read_raw() but returns a new buffer (freed with free()) for blocks kept for the
 * life of the file: index, bloom, meta. */
static int sst_read_owned(const struct sst *f, uint64_t off, uint64_t len, const char *what,
                          uint8_t **out, size_t *outlen, struct ct_err *err)
{
    struct sst_scratch sc = {0};
    const uint8_t *p = NULL;
    int rc = sst_read_raw(f, off, len, what, &sc, &p, outlen, err);
    if (rc == CT_OK) {
        /* hand over whichever scratch buffer holds the contents */
        if (p == sc.in) {
            *out = sc.in;
            sc.in = NULL;
        } else {
            *out = sc.out;
            sc.out = NULL;
        }
    }
    sst_scratch_free(&sc);
    return rc;
}

/* One entry's header as parsed from a data block. */
struct sst_parsed {
    uint64_t shared, unshared, row_len, vlen, zts, seq;
    uint32_t suffix; /* offset of the key suffix in the block */
    uint8_t type;
};

static inline size_t sst_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p < end && *p < 0x80) { /* most fields fit one byte */
        *v = *p;
        return 1;
    }
    return coding_get_varint64(p, end, v);
}

/* Parses the entry at *pos (bounds-checked against limit); false if it is malformed. */
static inline bool sst_parse_entry(const uint8_t *raw, size_t *pos, size_t limit,
                                   struct sst_parsed *e)
{
    const uint8_t *end = raw + limit;
    size_t p = *pos, n;
    if (!(n = sst_varint(raw + p, end, &e->shared)))
        return false;
    p += n;
    if (!(n = sst_varint(raw + p, end, &e->unshared)))
        return false;
    p += n;
    if (!(n = sst_varint(raw + p, end, &e->row_len)))
        return false;
    p += n;
    if (!(n = sst_varint(raw + p, end, &e->vlen)))
        return false;
    p += n;
    if (!(n = sst_varint(raw + p, end, &e->zts)))
        return false;
    p += n;
    if (p >= limit)
        return false;
    e->type = raw[p++];
    if (!(n = sst_varint(raw + p, end, &e->seq)))
        return false;
    p += n;
    if (e->unshared > limit - p || e->vlen > limit - p - e->unshared)
        return false;
    e->suffix = (uint32_t)p;
    *pos = p + e->unshared + e->vlen;
    return true;
}

static inline uint32_t sst_restart(const struct sst_block *b, uint32_t r)
{
    return coding_get_be32(b->data + b->limit + 4 * (size_t)r);
}

/* Validates data-block contents: every entry parses inside the entry area with consistent
 * lengths, and the restart offsets are exactly ascending entry starts whose keys are stored
 * whole (the first entry among them). NULL if sound, else why not. */
static const char *sst_block_check(const uint8_t *d, size_t n, uint32_t *limit_out,
                                   uint32_t *nr_out)
{
    if (n < 4)
        return "too short";
    uint32_t nr = coding_get_be32(d + n - 4);
    if (nr == 0 || (uint64_t)nr * 4 + 4 > n)
        return "bad restart count";
    size_t limit = n - 4 - (size_t)nr * 4;
    const uint8_t *rs = d + limit;
    size_t p = 0, prevlen = 0, count = 0;
    uint32_t r = 0, next_restart = coding_get_be32(rs);
    while (p < limit) {
        if (r < nr && next_restart < p)
            return "bad restart offset"; /* not at an entry start */
        bool at_restart = r < nr && next_restart == p;
        if (!at_restart && p == 0)
            return "bad restart offset"; /* the first entry is always one */
        struct sst_parsed e;
        if (!sst_parse_entry(d, &p, limit, &e))
            return "truncated entry or bad lengths";
        if (e.shared > prevlen || e.row_len > e.shared + e.unshared ||
            e.row_len > WC_MAX_ROW_BYTES)
            return "bad entry lengths";
        if (at_restart) {
            if (e.shared)
                return "bad restart entry";
            if (++r < nr)
                next_restart = coding_get_be32(rs + 4 * (size_t)r);
        }
        prevlen = e.shared + e.unshared;
        count++;
    }
    if (count == 0)
        return "no entries";
    if (r != nr)
        return "bad restart offset";
    if (limit > UINT32_MAX)
        return "too large";
    *limit_out = (uint32_t)limit;
    *nr_out = nr;
    return NULL;
}

/* A new block of `len` content bytes (uninitialised), or NULL. */
static struct sst_block *sst_block_alloc(size_t len)
{
    struct sst_block *b = malloc(sizeof(*b) + (len ? len : 1));
    if (!b)
        return NULL;
    b->data = (uint8_t *)(b + 1);
    b->charge = sizeof(*b) + len;
    return b;
}

/* Reads, checks, decompresses and validates data block bi into a new block. Uncompressed
 * blocks are read straight into it (no copy). */
static int sst_read_block(const struct sst *f, uint32_t bi, struct sst_scratch *sc,
                          struct sst_block **out, struct ct_err *err)
{
    const struct sst_index_entry *ie = &f->idx[bi];
    uint64_t off = ie->off, len = ie->len;
    int rc = sst_check_handle(f, off, len, "data", err);
    if (rc != CT_OK)
        return rc;
    struct sst_block *b = sst_block_alloc(len + SST_BLOCK_TRAILER_BYTES);
    if (!b)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
    if ((rc = sst_read_checked(f, off, len, "data", b->data, err)) != CT_OK) {
        free(b);
        return rc;
    }
    size_t n = len;
    b->charge = sizeof(*b) + len;
    if (b->data[len] != SST_COMPRESS_NONE) {
        const uint8_t *d = NULL;
        rc = sst_decompress(f, off, "data", b->data[len], b->data, len, sc, &d, &n, err);
        free(b);
        if (rc != CT_OK)
            return rc;
        if (!(b = sst_block_alloc(n)))
            return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
        memcpy(b->data, d, n);
    }
    const char *why = sst_block_check(b->data, n, &b->limit, &b->nrestarts);
    if (why) {
        free(b);
        return ct_err_set(err, CT_ECORRUPT, "corrupt data block at offset %llu in %s: %s",
                          (unsigned long long)off, f->path, why);
    }
    *out = b;
    return CT_OK;
}

/* Gets data block bi: from the cache or the file. *h is the cache reference (NULL: the caller
 * owns *out and frees it with sst_block_free). */
static int sst_get_block(struct sst *f, uint32_t bi, struct sst_scratch *sc, struct sst_block **out,
                         struct block_cache_handle **h, struct ct_err *err)
{
    const struct sst_index_entry *ie = &f->idx[bi];
    bool use_cache = f->cache && f->ro.blockcache;
    if (use_cache) {
        struct block_cache_handle *ch = block_cache_lookup(f->cache, f->file_id, ie->off);
        if (ch) {
            *out = block_cache_value(ch);
            *h = ch;
            return CT_OK;
        }
    }
    struct sst_block *b = NULL;
    int rc = sst_read_block(f, bi, sc, &b, err);
    if (rc != CT_OK)
        return rc;
    if (!use_cache) {
        *out = b;
        *h = NULL;
        return CT_OK;
    }
    struct block_cache_handle *ch = block_cache_insert(f->cache, f->file_id, ie->off, b, b->charge,
                                                       f->ro.in_memory, sst_block_free);
    if (!ch)
        return ct_err_set(err, CT_ENOMEM, "out of memory caching a block of %s", f->path);
    *out = b;
    *h = ch;
    return CT_OK;
}

/* ---- open ----------------------------------------------------------------------------------- */

static size_t sst_get_cell_key(const uint8_t *p, const uint8_t *end, struct cell *c)
{
    const uint8_t *s = p;
    uint64_t rl, ql, zts, seq;
    size_t n;
    if (!(n = coding_get_varint64(p, end, &rl)))
        return 0;
    p += n;
    if (!(n = coding_get_varint64(p, end, &ql)))
        return 0;
    p += n;
    if (rl > WC_MAX_ROW_BYTES || ql > (uint64_t)(end - p) || rl + ql > (uint64_t)(end - p))
        return 0;
    c->row = p;
    c->row_len = (uint32_t)rl;
    c->qual = p + rl;
    c->qual_len = (uint32_t)ql;
    p += rl + ql;
    if (!(n = coding_get_varint64(p, end, &zts)))
        return 0;
    p += n;
    if (p >= end)
        return 0;
    c->type = *p++;
    if (!(n = coding_get_varint64(p, end, &seq)))
        return 0;
    p += n;
    c->ts_ms = coding_unzigzag(zts);
    c->seq = seq;
    c->value = NULL;
    c->value_len = 0;
    return (size_t)(p - s);
}

static int sst_load_index(struct sst *f, uint64_t off, uint64_t len, struct ct_err *err)
{
    size_t rl = 0;
    int rc = sst_read_owned(f, off, len, "index", &f->idx_raw, &rl, err);
    if (rc != CT_OK)
        return rc;
    const uint8_t *p = f->idx_raw, *end = f->idx_raw + rl;
    uint64_t count = 0;
    size_t n = coding_get_varint64(p, end, &count);
    if (!n || count > rl)
        goto bad;
    p += n;
    f->idx = calloc(count ? count : 1, sizeof(*f->idx));
    f->idx_first_k = calloc(count ? count : 1, sizeof(*f->idx_first_k));
    f->idx_last_k = calloc(count ? count : 1, sizeof(*f->idx_last_k));
    if (!f->idx || !f->idx_first_k || !f->idx_last_k)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening %s", f->path);
    for (uint64_t i = 0; i < count; i++) {
        struct sst_index_entry *e = &f->idx[i];
        uint64_t boff, blen;
        if (!(n = coding_get_varint64(p, end, &boff)))
            goto bad;
        p += n;
        if (!(n = coding_get_varint64(p, end, &blen)))
            goto bad;
        p += n;
        if (blen > UINT32_MAX)
            goto bad;
        e->off = boff;
        e->len = (uint32_t)blen;
        if (!(n = sst_get_cell_key(p, end, &e->first)))
            goto bad;
        p += n;
        if (!(n = sst_get_cell_key(p, end, &e->last)))
            goto bad;
        p += n;
        f->idx_first_k[i] = sst_row_prefix(e->first.row, e->first.row_len);
        f->idx_last_k[i] = sst_row_prefix(e->last.row, e->last.row_len);
        if (cell_compare(&e->first, &e->last) > 0 ||
            (i > 0 && cell_compare(&f->idx[i - 1].last, &e->first) >= 0))
            goto bad;
    }
    if (p != end)
        goto bad;
    f->nblocks = (uint32_t)count;
    return CT_OK;
bad:
    return ct_err_set(err, CT_ECORRUPT, "corrupt index block at offset %llu in %s",
                      (unsigned long long)off, f->path);
}

static int sst_load_meta(struct sst *f, uint64_t off, uint64_t len, struct ct_err *err)
{
    uint8_t *m = NULL;
    size_t ml = 0;
    int rc = sst_read_owned(f, off, len, "meta", &m, &ml, err);
    if (rc != CT_OK)
        return rc;
    struct sst_meta *x = &f->meta;
    if (ml < SST_META_FIXED_BYTES + 4)
        goto bad;
    x->cells = coding_get_be64(m);
    x->delete_markers = coding_get_be64(m + 8);
    x->min_ts_ms = (int64_t)coding_get_be64(m + 16);
    x->max_ts_ms = (int64_t)coding_get_be64(m + 24);
    x->max_seq = coding_get_be64(m + 32);
    uint32_t nblocks = coding_get_be32(m + 40);
    if (m[48] > SST_COMPRESS_ZLIB || m[49] > SST_BLOOM_ROWCOL)
        goto bad;
    size_t o = SST_META_FIXED_BYTES;
    uint32_t fl = coding_get_be16(m + o);
    o += 2;
    if (fl > WC_MAX_ROW_BYTES || o + fl + 2 > ml)
        goto bad;
    memcpy(x->first_row, m + o, fl);
    x->first_row_len = fl;
    o += fl;
    uint32_t ll = coding_get_be16(m + o);
    o += 2;
    if (ll > WC_MAX_ROW_BYTES || o + ll != ml)
        goto bad;
    memcpy(x->last_row, m + o, ll);
    x->last_row_len = ll;
    x->file_bytes = f->file_size;
    free(m);
    if (nblocks != f->nblocks)
        return ct_err_set(err, CT_ECORRUPT,
                          "corrupt meta block at offset %llu in %s: %u data "
                          "blocks, index lists %u",
                          (unsigned long long)off, f->path, nblocks, f->nblocks);
    return CT_OK;
bad:
    free(m);
    return ct_err_set(err, CT_ECORRUPT, "corrupt meta block at offset %llu in %s",
                      (unsigned long long)off, f->path);
}

static int sst_load_bloom(struct sst *f, uint64_t off, uint64_t len, struct ct_err *err)
{
    if (len == 0)
        return CT_OK;
    size_t bl = 0;
    int rc = sst_read_owned(f, off, len, "bloom", &f->bloom_raw, &bl, err);
    if (rc != CT_OK)
        return rc;
    const uint8_t *b = f->bloom_raw;
    uint32_t nbits = bl >= 8 ? coding_get_be32(b + 4) : 0;
    if (bl < 8 || (b[0] != SST_BLOOM_ROW && b[0] != SST_BLOOM_ROWCOL) || b[1] == 0 || b[1] > 30 ||
        nbits == 0 || nbits % 8 != 0 || (size_t)nbits / 8 != bl - 8)
        return ct_err_set(err, CT_ECORRUPT, "corrupt bloom block at offset %llu in %s",
                          (unsigned long long)off, f->path);
    f->bloom_kind = b[0];
    f->bloom_probes = b[1];
    f->bloom_nbits = nbits;
    f->bloom_bits = b + 8;
    return CT_OK;
}

static void sst_free(struct sst *f)
{
    if (f->fd >= 0)
        eio_close(f->fd);
    free(f->idx);
    free(f->idx_first_k);
    free(f->idx_last_k);
    free(f->idx_raw);
    free(f->bloom_raw);
    free(f);
}

int sst_open(const char *path, uint64_t file_id, struct block_cache *cache,
             const struct sst_read_options *o, struct sst **out, struct ct_err *err)
{
    struct sst *f = calloc(1, sizeof(*f));
    if (!f)
        return ct_err_set(err, CT_ENOMEM, "out of memory opening %s", path);
    f->fd = -1;
    if ((size_t)snprintf(f->path, sizeof f->path, "%s", path) >= sizeof f->path) {
        free(f);
        return ct_err_set(err, CT_EINVAL, "path too long: %s", path);
    }
    atomic_init(&f->refs, 1);
    atomic_init(&f->obsolete, false);
    f->file_id = file_id;
    f->cache = cache;
    if (o)
        f->ro = *o;
    else
        f->ro.blockcache = true;
    int rc;
    f->fd = eio_open(path, O_RDONLY, 0);
    if (f->fd < 0) {
        int e = errno;
        rc = ct_err_errno(err, e == ENOENT ? CT_NOTFOUND : CT_EIO, e, "cannot open block file %s",
                          path);
        goto fail;
    }
    struct stat st;
    if (fstat(f->fd, &st) != 0) {
        rc = ct_err_errno(err, CT_EIO, errno, "cannot stat %s", path);
        goto fail;
    }
    f->file_size = (uint64_t)st.st_size;
    if (f->file_size < SST_HEADER_BYTES + SST_FOOTER_BYTES) {
        rc = ct_err_set(err, CT_ECORRUPT, "%s is too short (%llu bytes) to be a block file", path,
                        (unsigned long long)f->file_size);
        goto fail;
    }
    uint8_t ft[SST_FOOTER_BYTES];
    uint64_t foff = f->file_size - SST_FOOTER_BYTES;
    if ((rc = eio_pread_all(f->fd, ft, sizeof ft, foff, path, err)) != CT_OK)
        goto fail;
    if (coding_get_be32(ft + 44) != SST_MAGIC) {
        rc = ct_err_set(err, CT_ECORRUPT,
                        "%s is not a block file (bad magic in the footer at "
                        "offset %llu)",
                        path, (unsigned long long)foff);
        goto fail;
    }
    if (ft[40] != SST_VERSION) {
        rc = ct_err_set(err, CT_ECORRUPT,
                        "unsupported block file version %u in %s (this build reads <= %u)", ft[40],
                        path, SST_VERSION);
        goto fail;
    }
    if (crc32c_mask(crc32c_extend(crc32c_value(ft, 36), ft + 40, 8)) != coding_get_be32(ft + 36)) {
        rc = ct_err_set(err, CT_ECORRUPT, "corrupt footer at offset %llu in %s: checksum mismatch",
                        (unsigned long long)foff, path);
        goto fail;
    }
    uint8_t hd[SST_HEADER_BYTES];
    if ((rc = eio_pread_all(f->fd, hd, sizeof hd, 0, path, err)) != CT_OK)
        goto fail;
    if (coding_get_be32(hd) != SST_MAGIC || hd[4] != SST_VERSION) {
        rc = ct_err_set(err, CT_ECORRUPT, "corrupt header at offset 0 in %s", path);
        goto fail;
    }
    if ((rc = sst_load_index(f, coding_get_be64(ft), coding_get_be32(ft + 8), err)) != CT_OK ||
        (rc = sst_load_bloom(f, coding_get_be64(ft + 12), coding_get_be32(ft + 20), err)) !=
            CT_OK ||
        (rc = sst_load_meta(f, coding_get_be64(ft + 24), coding_get_be32(ft + 32), err)) != CT_OK)
        goto fail;
    *out = f;
    return CT_OK;
fail:
    sst_free(f);
    return rc;
}

void sst_ref(struct sst *f)
{
    atomic_fetch_add(&f->refs, 1);
}

void sst_unref(struct sst *f)
{
    if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
        return;
    if (f->cache)
        block_cache_erase_file(f->cache, f->file_id);
    if (atomic_load(&f->obsolete) && eio_unlink(f->path) != 0) {
        /* best effort: a leftover obsolete file is not referenced by the catalog */
    }
    sst_free(f);
}

void sst_mark_obsolete(struct sst *f)
{
    atomic_store(&f->obsolete, true);
}

const struct sst_meta *sst_get_meta(const struct sst *f)
{
    return &f->meta;
}

const char *sst_path(const struct sst *f)
{
    return f->path;
}

bool sst_may_contain_row(const struct sst *f, const uint8_t *row, size_t len)
{
    if (!f->bloom_bits)
        return true;
    return bloom_may_contain(f->bloom_bits, f->bloom_nbits, f->bloom_probes,
                             bloom_hash_row(row, len));
}

bool sst_may_contain_rowcol(const struct sst *f, const uint8_t *row, size_t row_len,
                            const uint8_t *qual, size_t qual_len)
{
    if (!f->bloom_bits)
        return true;
    if (f->bloom_kind != SST_BLOOM_ROWCOL)
        return sst_may_contain_row(f, row, row_len);
    return bloom_may_contain(f->bloom_bits, f->bloom_nbits, f->bloom_probes,
                             bloom_hash_rowcol(row, row_len, qual, qual_len));
}

size_t sst_middle_row(const struct sst *f, uint8_t *buf)
{
    if (f->nblocks == 0)
        return 0;
    const struct cell *c = &f->idx[f->nblocks / 2].first;
    memcpy(buf, c->row, c->row_len);
    return c->row_len;
}
/* ---- iterator ------------------------------------------------------------------------------- */

int sst_iter_new(struct sst *f, struct sst_iter **out, struct ct_err *err)
{
    struct sst_iter *it = calloc(1, sizeof(*it));
    if (!it)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating an iterator over %s", f->path);
    sst_ref(f);
    it->f = f;
    it->bi = -1;
    it->key = it->key_inline;
    it->key_cap = sizeof(it->key_inline);
    *out = it;
    return CT_OK;
}

static void sst_iter_drop_block(struct sst_iter *it)
{
    if (it->h)
        block_cache_release(it->f->cache, it->h);
    else
        sst_block_free(it->blk);
    it->h = NULL;
    it->blk = NULL;
    it->bi = -1;
}

void sst_iter_free(struct sst_iter *it)
{
    if (!it)
        return;
    sst_iter_drop_block(it);
    sst_scratch_free(&it->scratch);
    if (it->key != it->key_inline)
        free(it->key);
    sst_unref(it->f);
    free(it);
}

static int sst_iter_load(struct sst_iter *it, int64_t bi, struct ct_err *err)
{
    if (it->blk && it->bi == bi)
        return CT_OK;
    sst_iter_drop_block(it);
    it->valid = false;
    struct sst_block *b = NULL;
    struct block_cache_handle *h = NULL;
    int rc = sst_get_block(it->f, (uint32_t)bi, &it->scratch, &b, &h, err);
    if (rc != CT_OK)
        return rc;
    it->blk = b;
    it->h = h;
    it->bi = bi;
    return CT_OK;
}

static int sst_iter_bad(const struct sst_iter *it, uint32_t off, struct ct_err *err)
{
    /* a validated block walked from a restart point never gets here */
    return ct_err_set(err, CT_ECORRUPT, "corrupt data block at offset %llu in %s: entry at %u",
                      (unsigned long long)it->f->idx[it->bi].off, it->f->path, off);
}

/* Decodes the entry at `off` of the loaded block into the iterator; it->key holds the previous
 * entry's key (nothing is needed from it when the entry is a restart point). */
static int sst_iter_decode(struct sst_iter *it, uint32_t off, struct ct_err *err)
{
    const struct sst_block *b = it->blk;
    size_t p = off;
    struct sst_parsed e;
    if (!sst_parse_entry(b->data, &p, b->limit, &e) || e.shared > it->key_len)
        return sst_iter_bad(it, off, err);
    size_t klen = e.shared + e.unshared;
    if (klen > it->key_cap) {
        size_t cap = klen > 2 * it->key_cap ? klen : 2 * it->key_cap;
        uint8_t *nk = malloc(cap);
        if (!nk)
            return ct_err_set(err, CT_ENOMEM, "out of memory for a %zu-byte key in %s", klen,
                              it->f->path);
        memcpy(nk, it->key, e.shared);
        if (it->key != it->key_inline)
            free(it->key);
        it->key = nk;
        it->key_cap = cap;
    }
    memcpy(it->key + e.shared, b->data + e.suffix, e.unshared);
    it->key_len = klen;
    it->row_len = (uint32_t)e.row_len;
    it->val_off = e.suffix + (uint32_t)e.unshared;
    it->val_len = (uint32_t)e.vlen;
    it->type = e.type;
    it->ts = coding_unzigzag(e.zts);
    it->seq = e.seq;
    it->pos = off;
    it->next = (uint32_t)p;
    return CT_OK;
}

/* Positions on restart point r of the loaded block. */
static int sst_iter_restart(struct sst_iter *it, uint32_t r, struct ct_err *err)
{
    it->key_len = 0;
    it->ri = r;
    return sst_iter_decode(it, sst_restart(it->blk, r), err);
}

/* Moves to the next entry of the loaded block (REQUIRES it->next < blk->limit). */
static int sst_iter_step(struct sst_iter *it, struct ct_err *err)
{
    uint32_t off = it->next;
    int rc = sst_iter_decode(it, off, err);
    if (rc == CT_OK && it->ri + 1 < it->blk->nrestarts && sst_restart(it->blk, it->ri + 1) == off)
        it->ri++;
    return rc;
}

/* Walks from restart r to the entry at `pos`. */
static int sst_iter_goto(struct sst_iter *it, uint32_t r, uint32_t pos, struct ct_err *err)
{
    int rc = sst_iter_restart(it, r, err);
    while (rc == CT_OK && it->pos < pos && it->next < it->blk->limit)
        rc = sst_iter_step(it, err);
    return rc;
}

/* Positions on the last entry of the loaded block. */
static int sst_iter_block_last(struct sst_iter *it, struct ct_err *err)
{
    int rc = sst_iter_restart(it, it->blk->nrestarts - 1, err);
    while (rc == CT_OK && it->next < it->blk->limit)
        rc = sst_iter_step(it, err);
    return rc;
}

/* The cell at restart point r, in place (its key is stored whole). */
static bool sst_restart_cell(const struct sst_block *b, uint32_t r, struct cell *c)
{
    size_t p = sst_restart(b, r);
    struct sst_parsed e;
    if (!sst_parse_entry(b->data, &p, b->limit, &e) || e.shared || e.row_len > e.unshared)
        return false;
    c->row = b->data + e.suffix;
    c->row_len = (uint32_t)e.row_len;
    c->qual = c->row + e.row_len;
    c->qual_len = (uint32_t)(e.unshared - e.row_len);
    c->value = c->row + e.unshared;
    c->value_len = (uint32_t)e.vlen;
    c->type = e.type;
    c->ts_ms = coding_unzigzag(e.zts);
    c->seq = e.seq;
    return true;
}

static inline void sst_iter_cur(const struct sst_iter *it, struct cell *c)
{
    c->row = it->key;
    c->row_len = it->row_len;
    c->qual = it->key + it->row_len;
    c->qual_len = (uint32_t)(it->key_len - it->row_len);
    c->value = it->blk->data + it->val_off;
    c->value_len = it->val_len;
    c->type = it->type;
    c->ts_ms = it->ts;
    c->seq = it->seq;
}

int sst_iter_seek_first(struct sst_iter *it, struct ct_err *err)
{
    it->valid = false;
    if (it->f->nblocks == 0)
        return CT_OK;
    int rc = sst_iter_load(it, 0, err);
    if (rc == CT_OK)
        rc = sst_iter_restart(it, 0, err);
    if (rc != CT_OK)
        return rc;
    it->valid = true;
    return CT_OK;
}

int sst_iter_seek_last(struct sst_iter *it, struct ct_err *err)
{
    it->valid = false;
    if (it->f->nblocks == 0)
        return CT_OK;
    int rc = sst_iter_load(it, it->f->nblocks - 1, err);
    if (rc == CT_OK)
        rc = sst_iter_block_last(it, err);
    if (rc != CT_OK)
        return rc;
    it->valid = true;
    return CT_OK;
}

/* Whether target lies within [first, last] cell of the loaded block (as the index records
 * them): then both the first cell >= target and the last cell <= target are in it, and the
 * index need not be searched (scans that seek row by row stay in one block for many seeks). */
static bool sst_iter_block_covers(const struct sst_iter *it, const struct cell *target)
{
    if (!it->blk)
        return false;
    const struct sst_index_entry *ie = &it->f->idx[it->bi];
    return cell_compare(&ie->first, target) <= 0 && cell_compare(&ie->last, target) >= 0;
}

/* Index order of block key (prefix k, cell c) against the target (prefix tk). */
static inline int sst_idx_cmp(uint64_t k, const struct cell *c, uint64_t tk,
                              const struct cell *target)
{
    if (k != tk)
        return k < tk ? -1 : 1;
    return cell_compare(c, target);
}

int sst_iter_seek(struct sst_iter *it, const struct cell *target, struct ct_err *err)
{
    const struct sst *f = it->f;
    uint32_t lo = 0, hi = f->nblocks;
    int rc;
    if (sst_iter_block_covers(it, target)) {
        /* moving forward inside the block: step on from the current entry unless the next
         * restart point is still below the target */
        if (it->valid) {
            struct cell c;
            sst_iter_cur(it, &c);
            if (cell_compare(&c, target) < 0 &&
                (it->ri + 1 >= it->blk->nrestarts ||
                 (sst_restart_cell(it->blk, it->ri + 1, &c) && cell_compare(&c, target) >= 0)))
                goto walk;
        }
        lo = (uint32_t)it->bi;
        goto in_block;
    }
    it->valid = false;
    /* first block whose last cell >= target */
    uint64_t tk = sst_row_prefix(target->row, target->row_len);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sst_idx_cmp(f->idx_last_k[mid], &f->idx[mid].last, tk, target) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == f->nblocks)
        return CT_OK;
in_block:
    it->valid = false;
    if ((rc = sst_iter_load(it, lo, err)) != CT_OK)
        return rc;
    {
        /* last restart point whose key < target */
        const struct sst_block *b = it->blk;
        uint32_t l = 0, h = b->nrestarts - 1;
        while (l < h) {
            uint32_t mid = l + (h - l + 1) / 2;
            struct cell c;
            if (!sst_restart_cell(b, mid, &c))
                return sst_iter_bad(it, sst_restart(b, mid), err);
            if (cell_compare(&c, target) < 0)
                l = mid;
            else
                h = mid - 1;
        }
        if ((rc = sst_iter_restart(it, l, err)) != CT_OK)
            return rc;
    }
walk:
    it->valid = true;
    for (;;) {
        struct cell c;
        sst_iter_cur(it, &c);
        if (cell_compare(&c, target) >= 0)
            return CT_OK;
        if (it->next >= it->blk->limit) /* index and block disagree: a damaged file */
            return sst_iter_next(it, err);
        if ((rc = sst_iter_step(it, err)) != CT_OK) {
            it->valid = false;
            return rc;
        }
    }
}

int sst_iter_seek_for_prev(struct sst_iter *it, const struct cell *target, struct ct_err *err)
{
    const struct sst *f = it->f;
    it->valid = false;
    uint32_t lo = 0, hi = f->nblocks;
    int rc;
    if (sst_iter_block_covers(it, target)) {
        lo = (uint32_t)it->bi + 1;
        goto in_block;
    }
    /* last block whose first cell <= target */
    uint64_t tk = sst_row_prefix(target->row, target->row_len);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sst_idx_cmp(f->idx_first_k[mid], &f->idx[mid].first, tk, target) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return CT_OK;
in_block:
    if ((rc = sst_iter_load(it, lo - 1, err)) != CT_OK)
        return rc;
    const struct sst_block *b = it->blk;
    struct cell c;
    if (!sst_restart_cell(b, 0, &c))
        return sst_iter_bad(it, 0, err);
    if (cell_compare(&c, target) > 0) { /* index and block disagree: a damaged file */
        if ((rc = sst_iter_restart(it, 0, err)) != CT_OK)
            return rc;
        it->valid = true;
        return sst_iter_prev(it, err);
    }
    /* last restart point whose key <= target, then forward while the next entry is <= target */
    uint32_t l = 0, h = b->nrestarts - 1;
    while (l < h) {
        uint32_t mid = l + (h - l + 1) / 2;
        if (!sst_restart_cell(b, mid, &c))
            return sst_iter_bad(it, sst_restart(b, mid), err);
        if (cell_compare(&c, target) <= 0)
            l = mid;
        else
            h = mid - 1;
    }
    if ((rc = sst_iter_restart(it, l, err)) != CT_OK)
        return rc;
    while (it->next < b->limit) {
        uint32_t r = it->ri, pos = it->pos;
        if ((rc = sst_iter_step(it, err)) != CT_OK)
            return rc;
        sst_iter_cur(it, &c);
        if (cell_compare(&c, target) > 0) { /* one too far: walk back to pos */
            if ((rc = sst_iter_goto(it, r, pos, err)) != CT_OK)
                return rc;
            break;
        }
    }
    it->valid = true;
    return CT_OK;
}

int sst_iter_next(struct sst_iter *it, struct ct_err *err)
{
    if (!it->valid)
        return CT_OK;
    int rc;
    if (it->next < it->blk->limit) {
        if ((rc = sst_iter_step(it, err)) != CT_OK)
            it->valid = false;
        return rc;
    }
    it->valid = false;
    if (it->bi + 1 >= (int64_t)it->f->nblocks)
        return CT_OK;
    if ((rc = sst_iter_load(it, it->bi + 1, err)) != CT_OK ||
        (rc = sst_iter_restart(it, 0, err)) != CT_OK)
        return rc;
    it->valid = true;
    return CT_OK;
}

int sst_iter_prev(struct sst_iter *it, struct ct_err *err)
{
    if (!it->valid)
        return CT_OK;
    int rc;
    if (it->pos > 0) {
        /* re-walk the restart interval holding the previous entry */
        uint32_t pos = it->pos, r = it->ri;
        if (sst_restart(it->blk, r) == pos)
            r--; /* pos > 0 is a restart point, so r > 0 */
        if ((rc = sst_iter_restart(it, r, err)) == CT_OK)
            while (rc == CT_OK && it->next < pos)
                rc = sst_iter_step(it, err);
        if (rc == CT_OK && it->next != pos)
            rc = sst_iter_bad(it, pos, err);
        if (rc != CT_OK)
            it->valid = false;
        return rc;
    }
    it->valid = false;
    if (it->bi == 0)
        return CT_OK;
    if ((rc = sst_iter_load(it, it->bi - 1, err)) != CT_OK ||
        (rc = sst_iter_block_last(it, err)) != CT_OK)
        return rc;
    it->valid = true;
    return CT_OK;
}

bool sst_iter_valid(const struct sst_iter *it)
{
    return it->valid;
}

void sst_iter_cell(const struct sst_iter *it, struct cell *out)
{
    sst_iter_cur(it, out);
}
