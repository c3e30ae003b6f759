/* sst.h - immutable sorted block files ("store files") of one region and family, and the block
 * cache they share. The format is described in sst_format.h beside the writer.
 *
 * A file holds cells (cell.h) in cell_compare() order: data blocks of about BLOCKSIZE bytes
 * (prefix-compressed keys, optional snappy/zlib compression, CRC32C per block), a block index, a
 * bloom filter (NONE, ROW or ROWCOL), metadata (cell count, min/max timestamp, max sequence,
 * first/last row, delete-marker count) and a footer with magic and format version.
 *
 * Threading: a writer is used by one thread. An open file (struct sst) is immutable and shared by
 * any number of threads and iterators; it is reference-counted. The block cache is thread-safe. */
#ifndef CT_ENGINE_SST_H
#define CT_ENGINE_SST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "storage/engine/cell.h"
#include "storage/wc.h"

/* ---- block cache: one LRU shared by all files of a store ----------------------------- */

struct block_cache;

/* Returns a new cache of capacity_bytes (0 = caching disabled), freed with block_cache_free().
 * Sections as HBase's LRU: single-access 25%, multi-access 50%, in-memory 25%. */
CT_MUST_CHECK int block_cache_new(size_t capacity_bytes, struct block_cache **out,
                                  struct ct_err *err);
void block_cache_free(struct block_cache *c); /* accepts NULL; no file may still use it */

struct block_cache_stats {
    uint64_t hits;
    uint64_t misses;
    uint64_t bytes;
    uint64_t capacity_bytes;
    uint64_t evictions;
    uint64_t in_memory_bytes; /* the part of bytes in the in-memory section (IN_MEMORY families) */
};
void block_cache_get_stats(struct block_cache *c, struct block_cache_stats *out);
/* Drops every cached block (e.g. `dropcaches`). */
void block_cache_clear(struct block_cache *c);
/* Whether files opened with this cache read their blocks with pread (through the cache) instead
 * of mapping them (wc_options.pread_block_files): mapped pages count in the process's RSS and
 * grow with the data read. Set before any file is opened with the cache; default false. */
void block_cache_set_pread(struct block_cache *c, bool on);
bool block_cache_pread(const struct block_cache *c);

/* ---- writing ------------------------------------------------------------------------- */

struct sst_writer_options {
    uint32_t blocksize;              /* target uncompressed data-block size */
    enum wc_compression compression; /* NONE, SNAPPY, GZ */
    enum wc_bloom bloom;             /* NONE, ROW, ROWCOL */
    enum wc_block_encoding encoding; /* recorded; PREFIX-style key encoding is always used */
    uint64_t expected_cells;         /* sizes the bloom filter (1% false positives) */
};

/* File-level metadata, filled by sst_writer_finish() and kept by an open file. */
struct sst_meta {
    uint64_t cells;
    uint64_t delete_markers;
    int64_t min_ts_ms;
    int64_t max_ts_ms;
    uint64_t max_seq;
    uint64_t file_bytes;
    /* the file's identity checksum: crc32c over its footer and its meta block as stored (both
     * carry their own CRCs, the meta block the file's max sequence and first/last rows), set by
     * sst_open(); with file_bytes it is what the catalog records to tell a file from another
     * (0 from sst_writer_finish) */
    uint32_t identity;
    uint8_t first_row[WC_MAX_ROW_BYTES]; /* valid when cells > 0 */
    uint32_t first_row_len;
    uint8_t last_row[WC_MAX_ROW_BYTES];
    uint32_t last_row_len;
    /* the family settings the file was written with (its meta block): an `alter` changes what
     * later flushes and compactions write, never an existing file */
    uint32_t data_blocks;
    uint32_t blocksize;
    enum wc_compression compression;
    enum wc_bloom bloom;
    enum wc_block_encoding encoding;
};

struct sst_writer;

/* Creates `path` (must not exist) and returns a new writer in *out. The caller writes to a
 * temporary name and renames after sst_writer_finish(). */
CT_MUST_CHECK int sst_writer_open(const char *path, const struct sst_writer_options *o,
                                  struct sst_writer **out, struct ct_err *err);
/* Appends a cell; cells must come in strictly increasing cell_compare() order. Copies the bytes. */
CT_MUST_CHECK int sst_writer_add(struct sst_writer *w, const struct cell *c, struct ct_err *err);
/* Writes index, bloom, metadata and footer, fsyncs and closes the file, fills *meta (may be NULL)
 * and frees the writer, on success and on error alike. */
CT_MUST_CHECK int sst_writer_finish(struct sst_writer *w, struct sst_meta *meta,
                                    struct ct_err *err);
/* Abandons the writer: closes and unlinks the file, frees the writer. Accepts NULL. */
void sst_writer_abort(struct sst_writer *w);

/* ---- reading ------------------------------------------------------------------------- */

struct sst;

struct sst_read_options {
    bool blockcache; /* data blocks enter the cache (index and bloom always stay in memory) */
    bool in_memory;  /* cached blocks go to the in-memory section */
};

/* Opens a finished file: checks footer, magic, version and the metadata CRCs (CT_ECORRUPT naming
 * the path and offset otherwise), loads index and bloom. `file_id` must be unique within the
 * cache. Returns a new file with one reference, dropped with sst_unref(). Borrows `cache`
 * (may be NULL) for the life of the file. */
CT_MUST_CHECK int sst_open(const char *path, uint64_t file_id, struct block_cache *cache,
                           const struct sst_read_options *o, struct sst **out, struct ct_err *err);
void sst_ref(struct sst *f);
/* Drops a reference; the last one closes the file, and unlinks it if sst_mark_obsolete() was
 * called. Accepts NULL. */
void sst_unref(struct sst *f);
/* Asks for the file to be deleted once no reference remains (after a compaction replaced it). */
void sst_mark_obsolete(struct sst *f);
const struct sst_meta *sst_get_meta(const struct sst *f);
/* Changes how the file's data blocks use the cache from now on (an `alter` of BLOCKCACHE or
 * IN_MEMORY applies to open files at once, as HBase's region reopen does). Blocks already cached
 * stay until evicted; with blockcache false they are no longer looked up. Thread-safe. */
void sst_set_read_options(struct sst *f, const struct sst_read_options *o);
/* Bloom checks: false means the file certainly holds no cell of that row (row+qualifier).
 * With a ROW filter sst_may_contain_rowcol() checks the row only; with NONE both return true. */
bool sst_may_contain_row(const struct sst *f, const uint8_t *row, size_t len);
/* The same with the row's bloom_hash_row() computed by the caller (once for many files). */
bool sst_may_contain_row_hash(const struct sst *f, uint64_t row_hash);
bool sst_may_contain_rowcol(const struct sst *f, const uint8_t *row, size_t row_len,
                            const uint8_t *qual, size_t qual_len);
/* The file's middle row (for splits): the row of the cell at the middle of its data by bytes
 * (reads that one block). Copies into buf (WC_MAX_ROW_BYTES) and returns its length, 0 if the
 * file is empty or the block cannot be read. */
size_t sst_middle_row(struct sst *f, uint8_t *buf);

/* An iterator over one file, in either direction. Holds a reference to the file. */
struct sst_iter;

/* Returns a new iterator (not positioned) in *out, freed with sst_iter_free(). */
CT_MUST_CHECK int sst_iter_new(struct sst *f, struct sst_iter **out, struct ct_err *err);
void sst_iter_free(struct sst_iter *it); /* accepts NULL */
/* Positioning. Each returns CT_OK (check sst_iter_valid()), or an error (a block failed its CRC
 * or could not be read: CT_ECORRUPT / CT_EIO naming file and offset). */
CT_MUST_CHECK int sst_iter_seek_first(struct sst_iter *it, struct ct_err *err);
CT_MUST_CHECK int sst_iter_seek_last(struct sst_iter *it, struct ct_err *err);
/* First cell >= target. */
CT_MUST_CHECK int sst_iter_seek(struct sst_iter *it, const struct cell *target, struct ct_err *err);
/* Last cell <= target. */
CT_MUST_CHECK int sst_iter_seek_for_prev(struct sst_iter *it, const struct cell *target,
                                         struct ct_err *err);
CT_MUST_CHECK int sst_iter_next(struct sst_iter *it, struct ct_err *err);
CT_MUST_CHECK int sst_iter_prev(struct sst_iter *it, struct ct_err *err);
bool sst_iter_valid(const struct sst_iter *it);
/* The current cell; its bytes are valid until the iterator moves or is freed. */
void sst_iter_cell(const struct sst_iter *it, struct cell *out);
/* Blocks this iterator reads from the file are not put into the block cache (hits are still
 * used): for compactions, which read each block once and would otherwise evict what readers
 * use (HBase's compaction scanners do not cache blocks either). */
void sst_iter_set_fill_cache(struct sst_iter *it, bool fill);
/* Whether the current cell's value lies in the file's read-only mapping (an uncompressed block
 * of a mapped file): then its bytes stay valid while the file is referenced, not only until the
 * iterator moves (REQUIRES valid). */
bool sst_iter_value_pinned(const struct sst_iter *it);
/* A position of an iterator, to come back to (reversed scans step back from the first cell of
 * the row they read last). Only meaningful for the file it was taken from. */
struct sst_pos {
    int64_t bi, i;
};
/* The current position (REQUIRES valid). */
void sst_iter_tell(const struct sst_iter *it, struct sst_pos *out);
/* Positions the iterator on the cell just before position p (not valid if p is the file's first
 * cell). Errors as for the other moves. */
CT_MUST_CHECK int sst_iter_prev_of(struct sst_iter *it, const struct sst_pos *p,
                                   struct ct_err *err);
/* Moves back to the first cell of the current cell's row (REQUIRES valid): the same as
 * sst_iter_seek() to the row's smallest possible cell, by comparing rows only. For a reversed
 * scan's row read: the forward steps after it do no read-ahead of the next block. */
CT_MUST_CHECK int sst_iter_row_start(struct sst_iter *it, struct ct_err *err);
/* sst_iter_next(), then *valid = sst_iter_valid() and, if valid, the new current cell in *out:
 * one call per cell for merging readers. *same_row: true only if the new cell is known to be on
 * the previous cell's row (same block, row bytes shared with the previous entry); false says
 * nothing (compare the rows). */
CT_MUST_CHECK int sst_iter_next_cell(struct sst_iter *it, struct cell *out, bool *valid,
                                     bool *same_row, struct ct_err *err);

/* ---- iterator internals (sst_read.c), visible for the inline per-cell step below ---------- */

/* Read-ahead steps (sst_iter_read_ahead in sst_read.c): every SST_AHEAD_STEP cells of a block,
 * until SST_AHEAD_LAST cells into it. */
#define SST_AHEAD_STEP 4
#define SST_AHEAD_LAST (8 * SST_AHEAD_STEP)

/* A decoded data block's entry. */
struct sst_dentry {
    uint32_t key_off; /* into blk->keys: row | qual */
    uint32_t key_len;
    uint32_t val_off; /* into blk->raw */
    uint32_t val_len;
    uint32_t row_len;
    uint8_t type;
    /* 1: this entry's row is the previous entry's; 0: another row, or the block's first entry
     * (exact: settled when the block is decoded, by the shared prefix or, where that is shorter
     * than the row, by comparing the rest of the rows). Lets a reader stepping through a block
     * know whether it is still on the row without comparing rows, and a reversed scan find a
     * row's first cell in the block by the flags alone (in the padding before ts: no size
     * cost). */
    uint8_t same_row;
    int64_t ts;
    uint64_t seq;
};

/* A decoded data block (immutable once built; shared through the block cache). */
struct sst_block {
    uint32_t n;
    bool mapped; /* raw is the file's mapping: values stay valid while the file is referenced */
    /* the in-block search compares 8 row bytes first, as the index search does: the bytes after
     * the prefix the block's first and last row share (lcp bytes), big-endian, one word per
     * entry in a dense array, so a binary search reads a few lines of wk and the entries
     * only on ties (profiled: the entry loads were most of sst_iter_seek's time) */
    uint32_t lcp;
    const uint8_t *pre; /* the lcp shared bytes: `pre_inline` when they fit (no extra miss) */
    uint8_t pre_inline[16];
    uint64_t *wk;
    struct sst_dentry *e;
    uint8_t *keys;
    size_t keybytes;    /* of keys */
    const uint8_t *raw; /* decompressed contents (a copy, or the file's mapping): values */
    size_t charge;
};

/* Reusable buffers for reading blocks: `in` receives the bytes read, `out` the decompressed
 * contents, `parsed` the entries a decode parses past the first 256 (kept on the stack), so that
 * a large block's entries are parsed once, not twice. Owned by an iterator, so loading a data
 * block costs one malloc (the block). */
struct sst_scratch {
    uint8_t *in;
    size_t in_cap;
    uint8_t *out;
    size_t out_cap;
    uint8_t *parsed;
    size_t parsed_cap;
};

struct sst_iter {
    struct sst *f;
    struct sst_block *blk;
    struct block_cache_handle *h; /* NULL: blk is owned by the iterator */
    int64_t bi;
    int64_t i;
    bool valid;
    bool no_fill; /* blocks read from the file are owned, not cached */
    /* Forward read-ahead (sst_iter_read_ahead): while sst_iter_next_cell walks a block, the next
     * block's cache slot, cache entry, and (once looked up) its header, entries and keys are
     * prefetched a few cells apart, so that entering it does not stall on a chain of
     * misses (profiled readseq: the cache lookup and the first touch of each block were ~25% of
     * its time). ahead_h is that looked-up block's reference (NULL: none), for block ahead_bi;
     * sst_iter_load adopts it or releases it. `run` counts sst_iter_next_cell steps since the
     * block was loaded or the iterator was positioned, so that seeks reading a cell or two and
     * reversed scans (which read each row forward after stepping back) never look ahead. */
    struct block_cache_handle *ahead_h;
    int64_t ahead_bi;
    uint32_t run;
    bool ahead_cached;          /* the next block was in the cache when its entry was prefetched */
    struct sst_scratch scratch; /* last: sst_iter_new keeps it in a reused iterator */
};

/* Entry i of block b as a cell (pointing into the block). */
static inline void sst_entry_cell(const struct sst_block *b, uint32_t i, struct cell *c)
{
    const struct sst_dentry *d = &b->e[i];
    c->row = b->keys + d->key_off;
    c->row_len = d->row_len;
    c->qual = c->row + d->row_len;
    c->qual_len = d->key_len - d->row_len;
    c->value = b->raw + d->val_off;
    c->value_len = d->val_len;
    c->type = d->type;
    c->ts_ms = d->ts;
    c->seq = d->seq;
}

/* sst_iter_next_cell(), with the common case inline: the next cell of the same block when no
 * read-ahead step is due (scans of rows of many small cells call it once per cell). */
static inline __attribute__((always_inline)) int sst_iter_next_cell_inl(struct sst_iter *it,
                                                                        struct cell *out,
                                                                        bool *valid, bool *same_row,
                                                                        struct ct_err *err)
{
    if (it->valid && it->i + 1 < it->blk->n &&
        (it->run >= SST_AHEAD_LAST || (it->run + 1) % SST_AHEAD_STEP != 0)) {
        it->run++;
        sst_entry_cell(it->blk, (uint32_t)++it->i, out);
        *valid = true;
        *same_row = it->blk->e[it->i].same_row;
        return CT_OK;
    }
    return sst_iter_next_cell(it, out, valid, same_row, err);
}

#endif
