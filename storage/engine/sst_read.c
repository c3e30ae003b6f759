/* sst_read.c - the block file reader and iterator (sst.h); the format is in sst_format.h.
 *
 * An open file keeps its footer, metadata, index and bloom bits in memory; data blocks are read
 * on demand, checked (CRC32C), decompressed and DECODED once into an array of entries with
 * their full keys (struct sst_block), which is what the block cache holds. Iterators therefore
 * move in either direction in O(1) within a block and binary-search it for seeks; the restart
 * points of the format are validated but not needed for that.
 *
 * Invariants: (1) an sst_block is immutable once built and shared through the cache's refcount
 * (or owned by one iterator when the family does not cache); (2) every offset and length taken
 * from the file is bounds-checked before use: damage gives CT_ECORRUPT naming the file and the
 * offset, never a crash; (3) an iterator holds a file reference, so the file outlives it;
 * (4) it->valid implies it->blk is loaded, it->bi is its block number and 0 <= it->i < blk->n;
 * (5) besides its block an iterator holds at most one more cache reference, the read-ahead's
 * (it->ahead_h, for block it->ahead_bi != it->bi), which loading that block adopts and any other
 * load or sst_iter_free releases; a block is CRC-checked once per load from the file, never
 * again while cached, and the read-ahead loads nothing (it only looks up cached blocks).
 * Threading: struct sst is immutable after sst_open() except its atomic refcount, obsolete flag
 * and cache options (sst_set_read_options: each block fetch reads them once, so a change between
 * two fetches is safe); pread() on the shared descriptor needs no lock. An iterator belongs to one thread. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zlib.h>

#include "storage/coding.h"
#include "storage/crc32c.h"
#include "storage/engine/block_cache.h"
#include "storage/engine/bloom.h"
#include "storage/engine/eio.h"
#include "storage/engine/sst.h"
#include "storage/engine/sst_format.h"

#define SST_MAX_BLOCK_BYTES  (1u << 30)
#define SST_STACK_READ_BYTES (16u << 10)

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
    /* the whole file mapped read-only (NULL: blocks are read with pread): a block is checked
     * and decoded from the mapping without a copy, and an uncompressed block's values stay
     * there (the page cache), so the cached decoded block holds only entries and keys */
    const uint8_t *map;
    struct block_cache *cache;
    /* the family's BLOCKCACHE and IN_MEMORY: atomic, an alter changes them on open files */
    atomic_bool ro_blockcache;
    atomic_bool ro_in_memory;
    struct sst_meta meta;
    bool deltas; /* data blocks store ts and seq as deltas (sst_format.h, version 2) */
    uint32_t nblocks;
    struct sst_index_entry *idx;
    /* the index search compares 8 row bytes first: those after the prefix every row of the
     * file shares (idx_lcp bytes, the common prefix of the first and last row), big-endian and
     * zero-padded, of each block's first and last cell */
    uint32_t idx_lcp;
    const uint8_t *idx_pre; /* the idx_lcp shared bytes: idx_pre_inline when they fit */
    uint8_t idx_pre_inline[32];
    uint64_t *idx_first_k;
    uint64_t *idx_last_k;
    uint8_t *idx_raw;
    uint8_t *bloom_raw;
    const uint8_t *bloom_bits;
    uint32_t bloom_nbits;
    uint8_t bloom_probes;
    uint8_t bloom_kind;
};

/* Bytes [skip, skip + 8) of a row as a big-endian integer, zero-padded: rows that share their
 * first `skip` bytes and whose windows differ compare as the windows do. */
static inline uint64_t sst_row_window(const uint8_t *row, uint32_t len, uint32_t skip)
{
    uint8_t b[8] = {0};
    if (len > skip)
        memcpy(b, row + skip, len - skip < 8 ? len - skip : 8);
    return coding_get_be64(b);
}

/* The target's window for a search over rows that all start with the l-byte prefix p (a file's
 * index, or one block): a target that does not start with it is below (0) or above (UINT64_MAX)
 * all of them; ties fall back to cell_compare, so the extremes need not be exact. */
static inline uint64_t sst_prefix_window(uint32_t l, const uint8_t *p, const struct cell *t)
{
    size_t n = t->row_len < l ? t->row_len : l;
    int c = cell_bytes_cmp(t->row, n, p, n); /* inline: no libc call per seek */
    if (c == 0 && t->row_len >= l)
        return sst_row_window(t->row, t->row_len, l);
    return c < 0 || (c == 0 && t->row_len < l) ? 0 : UINT64_MAX;
}

static inline uint64_t sst_target_window(const struct sst *f, const struct cell *t)
{
    return sst_prefix_window(f->idx_lcp, f->idx_pre, t);
}

static inline uint64_t sst_block_target_window(const struct sst_block *b, const struct cell *t)
{
    return sst_prefix_window(b->lcp, b->pre, t);
}

/* ---- blocks --------------------------------------------------------------------------------- */

static void sst_block_free(void *p)
{
    free(p); /* one allocation: header, entries, keys and contents */
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
    free(s->parsed);
    s->in = s->out = s->parsed = NULL;
    s->in_cap = s->out_cap = s->parsed_cap = 0;
}

/* Reads and checks the block at [off, off+len) + trailer; *out points at its (decompressed)
 * contents of *outlen bytes inside the scratch buffers, valid until the scratch is reused. */
static int sst_read_raw(const struct sst *f, uint64_t off, uint64_t len, const char *what,
                        struct sst_scratch *sc, const uint8_t **out, size_t *outlen,
                        struct ct_err *err)
{
    if (len > SST_MAX_BLOCK_BYTES || off < SST_HEADER_BYTES ||
        off + len + SST_BLOCK_TRAILER_BYTES > f->file_size - SST_FOOTER_BYTES)
        return ct_err_set(err, CT_ECORRUPT,
                          "corrupt %s block at offset %llu in %s: length %llu out of bounds", what,
                          (unsigned long long)off, f->path, (unsigned long long)len);
    const uint8_t *buf;
    if (f->map) {
        int rc = eio_mapped_read(f->fd, len + SST_BLOCK_TRAILER_BYTES, off, f->path, err);
        if (rc != CT_OK)
            return rc;
        buf = f->map + off;
    } else {
        if (!sst_scratch_fit(&sc->in, &sc->in_cap, len + SST_BLOCK_TRAILER_BYTES))
            return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
        int rc = eio_pread_all(f->fd, sc->in, len + SST_BLOCK_TRAILER_BYTES, off, f->path, err);
        if (rc != CT_OK)
            return rc;
        buf = sc->in;
    }
    uint32_t want = coding_get_be32(buf + len + 1);
    if (crc32c_mask(crc32c_value(buf, len + 1)) != want)
        return ct_err_set(err, CT_ECORRUPT,
                          "corrupt %s block at offset %llu in %s: checksum mismatch", what,
                          (unsigned long long)off, f->path);
    uint8_t type = buf[len];
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
        } else if (p == sc.out) {
            *out = sc.out;
            sc.out = NULL;
        } else if ((*out = malloc(*outlen ? *outlen : 1)) != NULL) { /* in the mapping */
            memcpy(*out, p, *outlen);
        } else {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
        }
    }
    sst_scratch_free(&sc);
    return rc;
}

/* Decodes data-block contents into a new block (one allocation holding a copy of raw). */
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
    if (end - p >= CODING_VARINT64_MAX) { /* timestamps, seqs: no bounds check per byte */
        uint64_t r = 0;
        for (size_t i = 0; i < CODING_VARINT64_MAX; i++) {
            uint64_t b = p[i];
            r |= (b & 0x7f) << (7 * i);
            if (b < 0x80) {
                *v = r;
                return i + 1;
            }
        }
        return 0;
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

#define SST_DECODE_STACK 256 /* entries parsed once and kept on the stack (a 4 KiB block: ~35) */
/* at most this many more kept in the iterator's scratch (~1 MiB; a 64 KiB block of a TSD's hour
 * rows holds ~600 entries): larger blocks parse their later entries twice */
#define SST_DECODE_EXT_MAX 18000

/* Decodes data-block contents into a new block: one allocation holding the entries, the keys
 * and a copy of raw, or, when `stable` (raw lies in the file's mapping, which outlives every
 * block of the file), no copy: the values are read from the mapping. Entries past the first
 * SST_DECODE_STACK are kept in sc->parsed between the two passes when it can hold as many as
 * the restart array allows (SST_RESTART_INTERVAL a restart; at least 7 bytes an entry; at most
 * SST_DECODE_EXT_MAX), else parsed again. */
static int sst_block_decode(const struct sst *f, uint64_t off, const uint8_t *raw, size_t rawlen,
                            bool stable, struct sst_scratch *sc, struct sst_block **out,
                            struct ct_err *err)
{
    const char *why = NULL;
    struct sst_parsed ps[SST_DECODE_STACK];
    if (rawlen < 4) {
        why = "too short";
        goto bad;
    }
    uint32_t nr = coding_get_be32(raw + rawlen - 4);
    if (nr == 0 || (uint64_t)nr * 4 + 4 > rawlen) {
        why = "bad restart count";
        goto bad;
    }
    size_t limit = rawlen - 4 - (size_t)nr * 4;
    struct sst_parsed *ext = NULL; /* entries SST_DECODE_STACK.. (NULL: parsed again) */
    size_t ext_n = (size_t)nr * SST_RESTART_INTERVAL;
    if (ext_n > limit / 7 + 1)
        ext_n = limit / 7 + 1;
    if (ext_n > SST_DECODE_STACK && ext_n - SST_DECODE_STACK <= SST_DECODE_EXT_MAX) {
        ext_n -= SST_DECODE_STACK;
        if (sst_scratch_fit(&sc->parsed, &sc->parsed_cap, ext_n * sizeof(*ext)))
            ext = (struct sst_parsed *)(void *)sc->parsed;
    }
    /* pass 1: validate, count entries and key bytes */
    size_t p = 0, count = 0, keybytes = 0, prevlen = 0;
    while (p < limit) {
        struct sst_parsed e;
        if (!sst_parse_entry(raw, &p, limit, &e)) {
            why = "truncated entry or bad lengths";
            goto bad;
        }
        if (e.shared > prevlen || e.row_len > e.shared + e.unshared ||
            e.row_len > WC_MAX_ROW_BYTES) {
            why = "bad entry lengths";
            goto bad;
        }
        if (count < SST_DECODE_STACK)
            ps[count] = e;
        else if (ext && count - SST_DECODE_STACK < ext_n)
            ext[count - SST_DECODE_STACK] = e;
        else
            ext = NULL; /* more entries than restarts allow: parse them again */
        prevlen = e.shared + e.unshared;
        keybytes += prevlen;
        count++;
    }
    if (count == 0) {
        why = "no entries";
        goto bad;
    }
    for (uint32_t r = 0; r < nr; r++)
        if (coding_get_be32(raw + limit + 4 * r) >= limit) {
            why = "bad restart offset";
            goto bad;
        }
    size_t esz = count * sizeof(struct sst_dentry), wsz = count * sizeof(uint64_t);
    size_t total = sizeof(struct sst_block) + wsz + esz + keybytes + (stable ? 0 : rawlen) + 1;
    struct sst_block *b = malloc(total);
    if (!b)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading %s", f->path);
    b->n = (uint32_t)count;
    b->wk = (uint64_t *)(b + 1);
    b->e = (struct sst_dentry *)(b->wk + count);
    b->keys = (uint8_t *)b->e + esz;
    b->keybytes = keybytes;
    b->mapped = stable;
    if (stable) {
        b->raw = raw;
    } else {
        uint8_t *copy = b->keys + keybytes;
        memcpy(copy, raw, rawlen);
        b->raw = copy;
        raw = copy;
    }
    b->charge = total;
    /* pass 2: fill (already validated; re-parse only past the stack array) */
    p = 0;
    size_t ko = 0, prev_off = 0, prev_row_len = 0;
    for (size_t i = 0; i < count; i++) {
        struct sst_parsed e;
        if (i < SST_DECODE_STACK) {
            e = ps[i];
        } else if (ext) {
            e = ext[i - SST_DECODE_STACK];
        } else {
            p = i == SST_DECODE_STACK ? ps[i - 1].suffix + ps[i - 1].unshared + ps[i - 1].vlen : p;
            if (!sst_parse_entry(raw, &p, limit, &e)) {
                free(b);
                why = "entry changed while decoding"; /* cannot happen: raw is our copy */
                goto bad;
            }
        }
        struct sst_dentry *d = &b->e[i];
        if (e.shared)
            memmove(b->keys + ko, b->keys + prev_off, e.shared);
        memcpy(b->keys + ko + e.shared, raw + e.suffix, e.unshared);
        d->key_off = (uint32_t)ko;
        d->key_len = (uint32_t)(e.shared + e.unshared);
        d->row_len = (uint32_t)e.row_len;
        d->val_off = (uint32_t)(e.suffix + e.unshared);
        d->val_len = (uint32_t)e.vlen;
        d->type = e.type;
        /* exact both ways (sst.h): a shared prefix covering the row says equal; a shorter one
         * (a restart point, or another row) is settled by the row bytes after it, once here
         * instead of by every reader at every row end */
        d->same_row = i > 0 && e.row_len == prev_row_len &&
                      (e.shared >= e.row_len ||
                       cell_bytes_eq(b->keys + ko + e.shared, e.row_len - e.shared,
                                     b->keys + prev_off + e.shared, e.row_len - e.shared));
        if (f->deltas && i > 0) {
            d->ts = (int64_t)((uint64_t)b->e[i - 1].ts + (uint64_t)coding_unzigzag(e.zts));
            d->seq = b->e[i - 1].seq + (uint64_t)coding_unzigzag(e.seq);
        } else {
            d->ts = coding_unzigzag(e.zts);
            d->seq = e.seq;
        }
        prev_row_len = e.row_len;
        prev_off = ko;
        ko += d->key_len;
    }
    const struct sst_dentry *d0 = &b->e[0], *dn = &b->e[count - 1];
    uint32_t l = 0;
    while (l < d0->row_len && l < dn->row_len &&
           b->keys[d0->key_off + l] == b->keys[dn->key_off + l])
        l++;
    b->lcp = l;
    if (l <= sizeof(b->pre_inline)) {
        memcpy(b->pre_inline, b->keys + d0->key_off, l);
        b->pre = b->pre_inline;
    } else {
        b->pre = b->keys + d0->key_off;
    }
    for (size_t i = 0; i < count; i++)
        b->wk[i] = sst_row_window(b->keys + b->e[i].key_off, b->e[i].row_len, l);
    *out = b;
    return CT_OK;
bad:
    return ct_err_set(err, CT_ECORRUPT, "corrupt data block at offset %llu in %s: %s",
                      (unsigned long long)off, f->path, why);
}

/* Gets data block bi: from the cache or the file. *h is the cache reference (NULL: the caller
 * owns *out and frees it with sst_block_free). */
static int sst_get_block(struct sst *f, uint32_t bi, bool fill, struct sst_scratch *sc,
                         struct sst_block **out, struct block_cache_handle **h, struct ct_err *err)
{
    const struct sst_index_entry *ie = &f->idx[bi];
    bool use_cache = f->cache && atomic_load_explicit(&f->ro_blockcache, memory_order_relaxed);
    if (use_cache) {
        struct block_cache_handle *ch = block_cache_lookup(f->cache, f->file_id, ie->off);
        if (ch) {
            *out = block_cache_value(ch);
            *h = ch;
            return CT_OK;
        }
    }
    const uint8_t *raw = NULL;
    size_t rawlen = 0;
    /* small blocks are read into the stack: a short-lived iterator (one per get) then makes
     * one allocation per block, the block itself */
    uint8_t stack_in[SST_STACK_READ_BYTES];
    struct sst_scratch local = {0}, *use = sc;
    if (!f->map && !sc->in && (size_t)ie->len + SST_BLOCK_TRAILER_BYTES <= sizeof stack_in) {
        local.in = stack_in;
        local.in_cap = sizeof stack_in;
        local.out = sc->out;
        local.out_cap = sc->out_cap;
        use = &local;
    }
    int rc = sst_read_raw(f, ie->off, ie->len, "data", use, &raw, &rawlen, err);
    if (use == &local) { /* adopt a decompression buffer it may have grown */
        sc->out = local.out;
        sc->out_cap = local.out_cap;
    }
    if (rc != CT_OK)
        return rc;
    struct sst_block *b = NULL;
    bool stable = f->map && raw >= f->map && raw < f->map + f->file_size;
    if ((rc = sst_block_decode(f, ie->off, raw, rawlen, stable, sc, &b, err)) != CT_OK)
        return rc;
    if (!use_cache || !fill) {
        *out = b;
        *h = NULL;
        return CT_OK;
    }
    struct block_cache_handle *ch = block_cache_insert(
        f->cache, f->file_id, ie->off, b, b->charge,
        atomic_load_explicit(&f->ro_in_memory, memory_order_relaxed), sst_block_free);
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
        if (cell_compare(&e->first, &e->last) > 0 ||
            (i > 0 && cell_compare(&f->idx[i - 1].last, &e->first) >= 0))
            goto bad;
    }
    if (p != end)
        goto bad;
    f->nblocks = (uint32_t)count;
    if (count) {
        const struct cell *a = &f->idx[0].first, *z = &f->idx[count - 1].last;
        uint32_t l = 0;
        while (l < a->row_len && l < z->row_len && a->row[l] == z->row[l])
            l++;
        f->idx_lcp = l;
        if (l <= sizeof(f->idx_pre_inline)) {
            memcpy(f->idx_pre_inline, a->row, l);
            f->idx_pre = f->idx_pre_inline;
        } else {
            f->idx_pre = a->row;
        }
        for (uint64_t i = 0; i < count; i++) {
            const struct sst_index_entry *e = &f->idx[i];
            f->idx_first_k[i] = sst_row_window(e->first.row, e->first.row_len, l);
            f->idx_last_k[i] = sst_row_window(e->last.row, e->last.row_len, l);
        }
    }
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
    x->identity = crc32c_value(m, ml); /* sst_open() extends it with the footer */
    if (ml < SST_META_FIXED_BYTES + 4)
        goto bad;
    x->cells = coding_get_be64(m);
    x->delete_markers = coding_get_be64(m + 8);
    x->min_ts_ms = (int64_t)coding_get_be64(m + 16);
    x->max_ts_ms = (int64_t)coding_get_be64(m + 24);
    x->max_seq = coding_get_be64(m + 32);
    uint32_t nblocks = coding_get_be32(m + 40);
    if (m[48] > SST_COMPRESS_ZLIB || m[49] > SST_BLOOM_ROWCOL || m[50] > WC_ENCODING_ROW_INDEX_V1)
        goto bad;
    x->data_blocks = nblocks;
    x->blocksize = coding_get_be32(m + 44);
    x->compression = (enum wc_compression)m[48];
    x->bloom = (enum wc_bloom)m[49];
    x->encoding = (enum wc_block_encoding)m[50];
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
    if (f->map)
        munmap((void *)(uintptr_t)f->map, f->file_size);
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
    atomic_init(&f->ro_blockcache, o ? o->blockcache : true);
    atomic_init(&f->ro_in_memory, o ? o->in_memory : false);
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
    if (ft[40] < 1 || ft[40] > SST_VERSION) {
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
    /* map the file for reading; without a mapping (address space exhausted, or a cache that
     * reads with pread: block_cache_pread) blocks are read with pread. The file is immutable
     * and sized above, so the mapping covers every byte the bounds checks allow. */
    void *mp = cache && block_cache_pread(cache)
                   ? MAP_FAILED
                   : mmap(NULL, f->file_size, PROT_READ, MAP_SHARED, f->fd, 0);
    if (mp != MAP_FAILED)
        f->map = mp;
    uint8_t hd[SST_HEADER_BYTES];
    if ((rc = eio_pread_all(f->fd, hd, sizeof hd, 0, path, err)) != CT_OK)
        goto fail;
    if (coding_get_be32(hd) != SST_MAGIC || hd[4] != ft[40]) {
        rc = ct_err_set(err, CT_ECORRUPT, "corrupt header at offset 0 in %s", path);
        goto fail;
    }
    if ((rc = sst_load_index(f, coding_get_be64(ft), coding_get_be32(ft + 8), err)) != CT_OK ||
        (rc = sst_load_bloom(f, coding_get_be64(ft + 12), coding_get_be32(ft + 20), err)) !=
            CT_OK ||
        (rc = sst_load_meta(f, coding_get_be64(ft + 24), coding_get_be32(ft + 32), err)) != CT_OK)
        goto fail;
    f->deltas = ft[40] >= SST_VERSION_DELTAS && sst_encoding_deltas(f->meta.encoding);
    f->meta.identity = crc32c_extend(f->meta.identity, ft, sizeof ft);
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

void sst_set_read_options(struct sst *f, const struct sst_read_options *o)
{
    atomic_store(&f->ro_blockcache, o->blockcache);
    atomic_store(&f->ro_in_memory, o->in_memory);
}

const struct sst_meta *sst_get_meta(const struct sst *f)
{
    return &f->meta;
}

bool sst_may_contain_row_hash(const struct sst *f, uint64_t row_hash)
{
    if (!f->bloom_bits)
        return true;
    return bloom_may_contain(f->bloom_bits, f->bloom_nbits, f->bloom_probes, row_hash);
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

static int sst_iter_load(struct sst_iter *it, int64_t bi, struct ct_err *err);

size_t sst_middle_row(struct sst *f, uint8_t *buf)
{
    if (f->nblocks == 0)
        return 0;
    /* The cell at the middle of the data by bytes: the block holding the middle byte, and in it
     * the entry as far in as that byte is. (HBase's midkey, the middle block's first key, is
     * fine for thousands of blocks but not for a few: of two blocks, the second's first row can
     * be 90% of the way in, and a file of one block has only its own first row.) */
    const struct sst_index_entry *last = &f->idx[f->nblocks - 1];
    uint64_t lo = f->idx[0].off, hi = last->off + last->len + SST_BLOCK_TRAILER_BYTES;
    uint64_t target = lo + (hi - lo) / 2;
    uint32_t b = 0;
    while (b + 1 < f->nblocks && f->idx[b + 1].off <= target)
        b++;
    const struct sst_index_entry *ie = &f->idx[b];
    uint64_t into = target - ie->off, span = (uint64_t)ie->len + SST_BLOCK_TRAILER_BYTES;
    struct sst_iter *it;
    struct ct_err err;
    if (sst_iter_new(f, &it, &err) != CT_OK)
        return 0;
    sst_iter_set_fill_cache(it, false);
    size_t n = 0;
    if (sst_iter_load(it, b, &err) == CT_OK) {
        uint64_t cnt = it->blk->n;
        uint64_t i = into >= span ? cnt - 1 : into * cnt / span;
        struct cell c;
        sst_entry_cell(it->blk, (uint32_t)i, &c);
        memcpy(buf, c.row, c.row_len);
        n = c.row_len;
    }
    sst_iter_free(it);
    return n;
}

/* ---- iterator ------------------------------------------------------------------------------- */

/* Freed iterators kept per thread (up to SST_SPARE_ITERS) with their read buffers for the next
 * sst_iter_new: a Get or a seek creates one per file it reads (callgrind: calloc and free were
 * ~1,800 instructions per seekrandom op). Freed at thread exit through sst_spare_key. */
#define SST_SPARE_ITERS 16
static _Thread_local struct sst_iter *sst_spare[SST_SPARE_ITERS];
static _Thread_local unsigned sst_nspare;
static pthread_key_t sst_spare_key;
static pthread_once_t sst_spare_once = PTHREAD_ONCE_INIT;
static bool sst_spare_ok;

static void sst_spare_free(void *unused)
{
    (void)unused;
    while (sst_nspare) {
        struct sst_iter *it = sst_spare[--sst_nspare];
        sst_scratch_free(&it->scratch);
        free(it);
    }
}

static void sst_spare_init(void)
{
    sst_spare_ok = pthread_key_create(&sst_spare_key, sst_spare_free) == 0;
}

int sst_iter_new(struct sst *f, struct sst_iter **out, struct ct_err *err)
{
    struct sst_iter *it;
    if (sst_nspare) {
        it = sst_spare[--sst_nspare];
        memset(it, 0, offsetof(struct sst_iter, scratch)); /* the buffers (last) are kept */
    } else {
        it = calloc(1, sizeof(*it));
    }
    if (!it)
        return ct_err_set(err, CT_ENOMEM, "out of memory creating an iterator over %s", f->path);
    sst_ref(f);
    it->f = f;
    it->bi = -1;
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

static void sst_iter_drop_ahead(struct sst_iter *it)
{
    if (it->ahead_h)
        block_cache_release(it->f->cache, it->ahead_h);
    it->ahead_h = NULL;
}

void sst_iter_free(struct sst_iter *it)
{
    if (!it)
        return;
    sst_iter_drop_block(it);
    sst_iter_drop_ahead(it);
    sst_unref(it->f);
    it->f = NULL;
    if (sst_nspare < SST_SPARE_ITERS && it->scratch.in_cap + it->scratch.out_cap + it->scratch.parsed_cap <= (256u << 10)) {
        pthread_once(&sst_spare_once, sst_spare_init);
        /* the key's destructor frees the spares when the thread exits */
        if (sst_spare_ok && (sst_nspare || pthread_setspecific(sst_spare_key, (void *)1) == 0)) {
            sst_spare[sst_nspare++] = it;
            return;
        }
    }
    sst_scratch_free(&it->scratch);
    free(it);
}

static int sst_iter_load(struct sst_iter *it, int64_t bi, struct ct_err *err)
{
    if (it->blk && it->bi == bi)
        return CT_OK;
    sst_iter_drop_block(it);
    it->valid = false;
    it->run = 0;
    it->ahead_cached = false;
    if (it->ahead_h) {
        if (it->ahead_bi == bi) { /* looked up by the read-ahead */
            it->blk = block_cache_value(it->ahead_h);
            it->h = it->ahead_h;
            it->ahead_h = NULL;
            it->bi = bi;
            return CT_OK;
        }
        sst_iter_drop_ahead(it);
    }
    struct sst_block *b = NULL;
    struct block_cache_handle *h = NULL;
    int rc = sst_get_block(it->f, (uint32_t)bi, !it->no_fill, &it->scratch, &b, &h, err);
    if (rc != CT_OK)
        return rc;
    it->blk = b;
    it->h = h;
    it->bi = bi;
    return CT_OK;
}

/* Loads block bi and stands on its first cell (last == false) or its last cell. */
static int sst_iter_enter(struct sst_iter *it, int64_t bi, bool last, struct ct_err *err)
{
    int rc = sst_iter_load(it, bi, err);
    if (rc != CT_OK)
        return rc;
    it->i = last ? (int64_t)it->blk->n - 1 : 0;
    it->valid = true;
    return CT_OK;
}

int sst_iter_seek_first(struct sst_iter *it, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    it->valid = false;
    if (it->f->nblocks == 0)
        return CT_OK;
    return sst_iter_enter(it, 0, false, err);
}

int sst_iter_seek_last(struct sst_iter *it, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    it->valid = false;
    if (it->f->nblocks == 0)
        return CT_OK;
    return sst_iter_enter(it, it->f->nblocks - 1, true, err);
}

/* Whether target lies within [first, last] cell of the loaded block: then both the first cell
 * >= target and the last cell <= target are in it, and the index need not be searched (scans
 * that seek row by row, reversed ones above all, stay in one block for many seeks). */
static bool sst_iter_block_covers(const struct sst_iter *it, const struct cell *target)
{
    if (!it->blk)
        return false;
    struct cell c;
    sst_entry_cell(it->blk, 0, &c);
    if (cell_compare(&c, target) > 0)
        return false;
    sst_entry_cell(it->blk, it->blk->n - 1, &c);
    return cell_compare(&c, target) >= 0;
}

/* Index order of block key (prefix k, cell c) against the target (prefix tk). */
static inline int sst_idx_cmp(uint64_t k, const struct cell *c, uint64_t tk,
                              const struct cell *target)
{
    if (k != tk)
        return k < tk ? -1 : 1;
    return cell_compare(c, target);
}

/* Seeks near the current entry: scans at most SST_NEAR_STEPS entries of the loaded block from
 * it->i towards the answer (the first cell >= target, or with `prev` the last cell <= target).
 * True with the iterator positioned if the answer is inside the block and found that way;
 * false (iterator untouched) if the caller must search. Scans that seek row by row - reversed
 * scans above all, and skipped rows - find their answer within a few entries. */
#define SST_NEAR_STEPS 8

static inline int sst_entry_cmp(const struct sst_block *b, int64_t i, const struct cell *t)
{
    struct cell c;
    sst_entry_cell(b, (uint32_t)i, &c);
    return cell_compare(&c, t);
}

/* Order of entry i of b against the target (window tw): the windows, then whole cells on a tie. */
static inline int sst_wk_cmp(const struct sst_block *b, uint32_t i, uint64_t tw,
                             const struct cell *target)
{
    if (b->wk[i] != tw)
        return b->wk[i] < tw ? -1 : 1;
    return sst_entry_cmp(b, i, target);
}

static bool sst_iter_seek_near(struct sst_iter *it, const struct cell *target, bool prev)
{
    if (!it->valid)
        return false;
    const struct sst_block *b = it->blk;
    int64_t n = b->n, i = it->i;
    int c = sst_entry_cmp(b, i, target);
    if (!prev) {
        if (c >= 0) { /* answer at or before i: the first j <= i with cell(j - 1) < target */
            for (int s = 0; s < SST_NEAR_STEPS && i > 0; s++, i--)
                if (sst_entry_cmp(b, i - 1, target) < 0) {
                    it->i = i;
                    return true;
                }
            return false;
        }
        for (int s = 0; s < SST_NEAR_STEPS && i + 1 < n; s++) /* answer after i */
            if (sst_entry_cmp(b, ++i, target) >= 0) {
                it->i = i;
                return true;
            }
        return false;
    }
    if (c <= 0) { /* answer at or after i: the last j >= i with cell(j + 1) > target */
        for (int s = 0; s < SST_NEAR_STEPS && i + 1 < n; s++, i++)
            if (sst_entry_cmp(b, i + 1, target) > 0) {
                it->i = i;
                return true;
            }
        return false;
    }
    for (int s = 0; s < SST_NEAR_STEPS && i > 0; s++) /* answer before i */
        if (sst_entry_cmp(b, --i, target) <= 0) {
            it->i = i;
            return true;
        }
    return false;
}

int sst_iter_seek(struct sst_iter *it, const struct cell *target, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    const struct sst *f = it->f;
    if (sst_iter_seek_near(it, target, false))
        return CT_OK;
    it->valid = false;
    uint32_t lo = 0, hi = f->nblocks;
    if (sst_iter_block_covers(it, target)) {
        lo = (uint32_t)it->bi;
        goto in_block;
    }
    /* first block whose last cell >= target */
    uint64_t tk = sst_target_window(f, target);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sst_idx_cmp(f->idx_last_k[mid], &f->idx[mid].last, tk, target) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == f->nblocks)
        return CT_OK;
in_block:;
    int rc = sst_iter_load(it, lo, err);
    if (rc != CT_OK)
        return rc;
    const struct sst_block *b = it->blk;
    uint32_t l = 0, h = b->n;
    uint64_t tw = sst_block_target_window(b, target);
    while (l < h) {
        uint32_t mid = l + (h - l) / 2;
        if (sst_wk_cmp(b, mid, tw, target) < 0)
            l = mid + 1;
        else
            h = mid;
    }
    if (l == b->n) { /* index and block disagree: only a damaged file does this */
        it->valid = true;
        it->i = b->n - 1;
        return sst_iter_next(it, err);
    }
    it->i = l;
    it->valid = true;
    return CT_OK;
}

int sst_iter_seek_for_prev(struct sst_iter *it, const struct cell *target, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    const struct sst *f = it->f;
    if (sst_iter_seek_near(it, target, true))
        return CT_OK;
    it->valid = false;
    uint32_t lo = 0, hi = f->nblocks;
    if (sst_iter_block_covers(it, target)) {
        lo = (uint32_t)it->bi + 1;
        goto in_block;
    }
    /* last block whose first cell <= target */
    uint64_t tk = sst_target_window(f, target);
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sst_idx_cmp(f->idx_first_k[mid], &f->idx[mid].first, tk, target) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return CT_OK;
in_block:;
    int rc = sst_iter_load(it, lo - 1, err);
    if (rc != CT_OK)
        return rc;
    const struct sst_block *b = it->blk;
    uint32_t l = 0, h = b->n; /* first entry > target */
    uint64_t tw = sst_block_target_window(b, target);
    while (l < h) {
        uint32_t mid = l + (h - l) / 2;
        if (sst_wk_cmp(b, mid, tw, target) <= 0)
            l = mid + 1;
        else
            h = mid;
    }
    if (l == 0) { /* index and block disagree: only a damaged file does this */
        it->valid = true;
        it->i = 0;
        return sst_iter_prev(it, err);
    }
    it->i = l - 1;
    it->valid = true;
    return CT_OK;
}

int sst_iter_next(struct sst_iter *it, struct ct_err *err)
{
    if (!it->valid)
        return CT_OK;
    if (++it->i < it->blk->n)
        return CT_OK;
    it->valid = false;
    if (it->bi + 1 >= (int64_t)it->f->nblocks)
        return CT_OK;
    return sst_iter_enter(it, it->bi + 1, false, err);
}

int sst_iter_prev(struct sst_iter *it, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    if (!it->valid)
        return CT_OK;
    if (--it->i >= 0)
        return CT_OK;
    it->valid = false;
    if (it->bi == 0)
        return CT_OK;
    return sst_iter_enter(it, it->bi - 1, true, err);
}

bool sst_iter_valid(const struct sst_iter *it)
{
    return it->valid;
}

void sst_iter_cell(const struct sst_iter *it, struct cell *out)
{
    sst_entry_cell(it->blk, (uint32_t)it->i, out);
}

/* Read-ahead steps, by the number of cells stepped through in the loaded block (see struct
 * sst_iter): the next block's cache slot, then its cache entry, then the lookup itself (the
 * reference is kept in ahead_h) with a prefetch of the block header, then its entry and key
 * arrays, 8 lines per step (a 4 KiB block of the benchmark decodes to ~32 lines; prefetching
 * only the first few left a miss per entry line in readseq's profile). Only for cached, filling iterators that read on: a compaction's iterator (no fill) and
 * a block not in the cache are left to sst_iter_load. */

static __attribute__((noinline)) void sst_iter_read_ahead(struct sst_iter *it)
{
    struct sst *f = it->f;
    if (!f->cache || !atomic_load_explicit(&f->ro_blockcache, memory_order_relaxed) ||
        it->no_fill || it->bi + 1 >= (int64_t)f->nblocks)
        return;
    uint64_t off = f->idx[it->bi + 1].off;
    switch (it->run / SST_AHEAD_STEP) {
    case 1:
        block_cache_prefetch(f->cache, f->file_id, off, false);
        break;
    case 2:
        it->ahead_cached = block_cache_prefetch(f->cache, f->file_id, off, true);
        break;
    case 3:
        if (it->ahead_h) /* cannot be for this block: load releases or adopts it */
            sst_iter_drop_ahead(it);
        if (!it->ahead_cached)
            break;
        it->ahead_h = block_cache_lookup(f->cache, f->file_id, off);
        if (it->ahead_h) {
            it->ahead_bi = it->bi + 1;
            const uint8_t *b = block_cache_value(it->ahead_h);
            __builtin_prefetch(b);
            __builtin_prefetch(b + 64);
        }
        break;
    default:               /* the entries and keys, 8 lines per step until they are all asked for */
        if (it->ahead_h) { /* entries and keys are one range: keys follow the entries */
            const struct sst_block *b = block_cache_value(it->ahead_h);
            const uint8_t *p = (const uint8_t *)b->e + (it->run / SST_AHEAD_STEP - 4) * 8 * 64;
            const uint8_t *end = b->keys + b->keybytes;
            for (unsigned l = 0; l < 8 && p < end; l++, p += 64)
                __builtin_prefetch(p);
        }
        break;
    }
}

int sst_iter_next_cell(struct sst_iter *it, struct cell *out, bool *valid, bool *same_row,
                       struct ct_err *err)
{
    if (it->valid && it->i + 1 < it->blk->n) { /* within the block */
        sst_entry_cell(it->blk, (uint32_t)++it->i, out);
        *valid = true;
        *same_row = it->blk->e[it->i].same_row;
        if (++it->run % SST_AHEAD_STEP == 0 && it->run <= SST_AHEAD_LAST &&
            it->bi + 1 < (int64_t)it->f->nblocks)
            sst_iter_read_ahead(it);
        return CT_OK;
    }
    int rc = sst_iter_next(it, err);
    *valid = it->valid;
    *same_row = false; /* a new block: the caller compares rows */
    if (rc == CT_OK && it->valid)
        sst_entry_cell(it->blk, (uint32_t)it->i, out);
    return rc;
}

void sst_iter_tell(const struct sst_iter *it, struct sst_pos *out)
{
    out->bi = it->bi;
    out->i = it->i;
}

int sst_iter_prev_of(struct sst_iter *it, const struct sst_pos *p, struct ct_err *err)
{
    it->run = 0; /* no read-ahead before a run of forward steps */
    it->valid = false;
    if (p->bi < 0 || p->bi >= (int64_t)it->f->nblocks)
        return CT_OK;
    if (p->i > 0) { /* in the same block: one step back */
        int rc = sst_iter_load(it, p->bi, err);
        if (rc != CT_OK)
            return rc;
        if (p->i - 1 >= (int64_t)it->blk->n)
            return CT_OK; /* not a position of this file */
        it->i = p->i - 1;
        it->valid = true;
        return CT_OK;
    }
    if (p->bi == 0)
        return CT_OK;
    return sst_iter_enter(it, p->bi - 1, true, err);
}

int sst_iter_row_start(struct sst_iter *it, struct ct_err *err)
{
    /* a reversed scan's rewind: the forward steps from here read this one row, and the scan
     * then steps back to an earlier row, so no read-ahead of the next block (it was fetched for
     * nothing, and split the row's run of puts every 4 cells over the block's first 32) */
    it->run = SST_AHEAD_LAST + 1;
    if (!it->valid)
        return CT_OK;
    for (;;) {
        const struct sst_block *b = it->blk;
        const struct sst_dentry *d = &b->e[it->i];
        const uint8_t *row = b->keys + d->key_off;
        uint32_t rl = d->row_len;
        int64_t i = it->i;
        while (i > 0 && b->e[i].same_row) /* within the block: the exact flags */
            i--;
        it->i = i;
        if (i > 0 || it->bi == 0)
            return CT_OK;
        /* the row may begin in an earlier block: its last cell decides */
        const struct sst_index_entry *pe = &it->f->idx[it->bi - 1];
        if (!cell_bytes_eq(pe->last.row, pe->last.row_len, row, rl))
            return CT_OK;
        int rc = sst_iter_enter(it, it->bi - 1, true, err);
        if (rc != CT_OK)
            return rc;
    }
}

bool sst_iter_value_pinned(const struct sst_iter *it)
{
    return it->blk->mapped;
}

void sst_iter_set_fill_cache(struct sst_iter *it, bool fill)
{
    it->no_fill = !fill;
}
