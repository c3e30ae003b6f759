/* catalog_format.h - the engine's catalog file `<data_dir>/CATALOG`: namespaces, table
 * descriptors, the region map and every region's block files. Written whole by catalog.c on
 * every change through eio_write_file_atomic() (CATALOG.tmp, fsync, rename, fsync of the
 * directory), so a reader sees the old or the new catalog, never a mix. It is the manifest: a
 * block file not listed here is not served (moved to quarantine/ at open); a listed one must
 * exist and be the file recorded (size and identity), or the store does not open.
 *
 *   offset  size  field
 *   0       8     magic "CTSDBCAT"
 *   8       1     version (CATALOG_FORMAT_VERSION)
 *   9       8     payload length N, big-endian
 *   17      N     payload
 *   17+N    4     crc32c_mask(crc32c(payload)), big-endian
 *
 *   payload  := next_file_id next_region_id next_table_id last_seq wal_floor wal_next
 *               nns:varint (namespace:str)*  ntables:varint table*
 *   namespace:= name, or name NUL (key NUL value NUL)* NUL   (its configuration pairs; a
 *               reader that stops at the first NUL sees the name, so the version stays 1)
 *   table    := id:varint name:str enabled:u8 max_filesize:varint memstore_flushsize:varint
 *               durability:u8 readonly:u8 compaction_enabled:u8
 *               nfams:varint family* nregions:varint region*
 *   family   := name:str versions:varint min_versions:varint ttl_s:varint keep_deleted:u8
 *               bloom:u8 blocksize:varint blockcache:u8 in_memory:u8 compression:u8 encoding:u8
 *   region   := id:varint start:str end:str store*          (one store per family, same order)
 *   store    := flushed_upto:varint nfiles:varint file*   (oldest first)
 *   file     := file_id:varint size_bytes:varint identity:varint
 *   str      := len:varint bytes
 *
 * wal_floor: every log segment numbered wal_floor .. wal_next-1 exists (it was created before
 * this catalog was written and holds records not yet in block files, or was not released yet);
 * the store deletes a segment numbered >= wal_floor only after a catalog with a larger
 * wal_floor is durable. wal_next: the number the next new segment gets (segment numbers grow
 * over the store's life, the log emptied or not). identity: sst_meta.identity of the file (a
 * crc32c over its footer and meta block), checked with size_bytes at open.
 * Version 1 (before session 6) had neither wal_floor/wal_next nor size_bytes/identity; it is
 * read as written (no checks) and rewritten as version 2 at the first read-write open.
 * Numbers without a type are varints (coding.h). Block file `id` lives at
 * `<data_dir>/sst/<id as 16 hex digits>.sst`. Enumeration codes are wc.h's and never change.
 * A file id may be listed by several regions of one table (daughters of a split share their
 * parent's files until a compaction rewrites them); it is deleted when no region lists it. */
#ifndef CT_ENGINE_CATALOG_FORMAT_H
#define CT_ENGINE_CATALOG_FORMAT_H

#define CATALOG_MAGIC          "CTSDBCAT"
#define CATALOG_FORMAT_VERSION 2
#define CATALOG_HEADER_BYTES   17
#define CATALOG_FILE           "CATALOG"

#endif
