/* sst_format.h - the on-disk format of block files ("store files"), written by sst_write.c and
 * read by sst_read.c. All fixed-width integers are big-endian; "varint" is coding.h's LEB128;
 * "zz" is a zig-zag varint (coding_zigzag).
 *
 * File layout:
 *   header      SST_HEADER_BYTES: magic be32 SST_MAGIC ("CTSF"), version u8, 3 reserved zeros
 *   data blocks back to back from offset SST_HEADER_BYTES
 *   index block
 *   bloom block (absent - length 0 - when the filter kind is NONE)
 *   meta block
 *   footer      SST_FOOTER_BYTES at the end of the file
 *
 * Every block on disk is  payload[len] | type u8 | crc be32,  where type is the compression
 * (SST_COMPRESS_*) and crc = crc32c_mask(crc32c(payload | type)). A "handle" is the offset of
 * the payload and len (the trailer's SST_BLOCK_TRAILER_BYTES follow it).
 *   SST_COMPRESS_NONE   payload = contents
 *   SST_COMPRESS_SNAPPY payload = snappy raw format of the contents
 *   SST_COMPRESS_ZLIB   payload = varint contents length | zlib stream (RFC 1950)
 * Only data blocks are ever compressed.
 *
 * Data block contents: entries, then restart offsets (be32 each, offset of an entry whose key is
 * stored whole), then the restart count (be32). Cells are in cell_compare() order. The "key" of
 * an entry is row | qualifier; each entry stores it as a suffix after the bytes shared with the
 * previous entry's key (shared = 0 at restart points, every SST_RESTART_INTERVAL entries):
 *   varint shared | varint unshared | varint row_len | varint value_len | zz ts_ms | u8 type |
 *   varint seq | key suffix[unshared] | value[value_len]
 * (qualifier length = shared + unshared - row_len). In files of version 2 whose encoding (meta
 * byte 50) is DIFF or FAST_DIFF, every entry but a block's first stores `zz ts_ms` as the zig-zag
 * of (ts - previous entry's ts) and `varint seq` as the zig-zag of (seq - previous seq), both
 * computed in wrapping 64-bit unsigned arithmetic; other encodings (NONE, PREFIX, ROW_INDEX_V1)
 * store them whole, as every version-1 file does. A block holds at least one entry; it is
 * closed once its contents reach BLOCKSIZE, so a cell larger than BLOCKSIZE gets its own block.
 *
 * Index block contents: varint count, then per data block in file order:
 *   varint offset | varint len | first cell key | last cell key
 * where a cell key is  varint row_len | varint qual_len | row | qual | zz ts_ms | u8 type |
 * varint seq.  The first/last keys let both directions binary-search the index.
 *
 * Bloom block contents: u8 kind (SST_BLOOM_ROW / SST_BLOOM_ROWCOL) | u8 probes | 2 reserved |
 * be32 nbits | bits[nbits / 8]. Keys (bloom.h hashes): ROW - each distinct row; ROWCOL - each
 * distinct row AND each distinct row+qualifier (so a ROWCOL file still answers row probes).
 *
 * Meta block contents (SST_META_FIXED_BYTES, then the rows):
 *   0  be64 cells          8  be64 delete markers   16 be64 min ts_ms (two's complement)
 *   24 be64 max ts_ms      32 be64 max seq          40 be32 data blocks
 *   44 be32 blocksize      48 u8 compression        49 u8 bloom kind   50 u8 encoding
 *   51 u8 reserved
 *   then be16 first row len, first row, be16 last row len, last row
 *
 * Footer (SST_FOOTER_BYTES = 48):
 *   0  be64 index offset   8  be32 index len
 *   12 be64 bloom offset   20 be32 bloom len
 *   24 be64 meta offset    32 be32 meta len
 *   36 be32 crc = crc32c_mask(crc32c(footer[0..36) | footer[40..48)))
 *   40 u8 version          41 3 reserved zeros       44 be32 magic SST_MAGIC
 * The version and magic sit at fixed places at the end so a reader can name a version it does
 * not know before it trusts anything else.
 *
 * Version history: 1 - initial; 2 - DIFF / FAST_DIFF blocks store timestamp and sequence deltas
 * (a reader takes version 1 files as they are: their blocks are never delta-encoded, whatever
 * their encoding byte). Codes (compression, bloom kinds, cell types) are never renumbered. */
#ifndef CT_ENGINE_SST_FORMAT_H
#define CT_ENGINE_SST_FORMAT_H

#define SST_MAGIC               0x43545346u /* "CTSF" */
#define SST_VERSION             2           /* written; readers take 1..SST_VERSION */
#define SST_VERSION_DELTAS      2           /* the first version with DIFF / FAST_DIFF deltas */
#define SST_HEADER_BYTES        8
#define SST_FOOTER_BYTES        48
#define SST_BLOCK_TRAILER_BYTES 5
#define SST_RESTART_INTERVAL    16
#define SST_META_FIXED_BYTES    52

#define SST_COMPRESS_NONE   0
#define SST_COMPRESS_SNAPPY 1
#define SST_COMPRESS_ZLIB   2

/* Whether blocks written with this DATA_BLOCK_ENCODING store deltas (from version 2 on). */
#define sst_encoding_deltas(enc) ((enc) == WC_ENCODING_DIFF || (enc) == WC_ENCODING_FAST_DIFF)

#define SST_BLOOM_NONE   0
#define SST_BLOOM_ROW    1
#define SST_BLOOM_ROWCOL 2

#endif
