/* headlog_format.h - the record payload of the head log (schema/headlog.h) and its released-mark
 * file. Records are framed, checksummed and numbered by the write-ahead log (storage/engine/
 * wal_format.h); this is what one record carries: one packed batch of points, or a delete.
 * Varints are LEB128 (storage/coding.h); zz() is zig-zag.
 *
 * Batch record, version 2 (HEADLOG_VERSION, written):
 *   offset size  field
 *   0      1     HEADLOG_VERSION
 *   1      var   back: this record's sequence number minus that of the record that started its
 *                series dictionary (0: this record starts a new, empty dictionary)
 *          var   npoints
 *          var   plen: bytes of the points section
 *          plen  points section, npoints times:
 *                  var zz(ts_ms - previous point's ts_ms) << 6 | next << 5 | vmode << 3 |
 *                      type << 1 | ms (the first point's previous ts_ms is 0; type 0 int,
 *                      1 float, 2 double; next 1: the local id is the previous point's + 1)
 *                  unless next: var zz(local id - (previous point's local id + 1)); the first
 *                      point's previous id is -1; local ids index this record's series table
 *                  the value: int (vmode 0): var zz(v); float and double by vmode:
 *                      0 - 8 bytes, the IEEE double's bits little-endian;
 *                      1 - 4 bytes, an IEEE float (little-endian) that widens to the double;
 *                      2 - var zz(m) << 4 | k: the double m / 10^k (k <= HEADLOG_DEC_MAX,
 *                          |m| < 2^53), exactly, bit for bit; vmode 3 is corrupt
 *          var   nseries: the record's series table, local ids 0..nseries-1 in order, by
 *                codes (the previous entry's dictionary id starts at -1):
 *                  var code: odd (only 1) - a new dictionary entry, followed by 1 byte tlen
 *                      (1..255) and the TSUID; it takes the dictionary's next id;
 *                  code & 3 == 0 - zz(id - (previous entry's id + 1)) << 2: one entry defined by
 *                      this or an earlier record of the dictionary;
 *                  code & 3 == 2 - (r - 2) << 2: r >= 2 entries, the previous entry's id + 1,
 *                      + 2, ... + r (a writer sending its series in one order makes long runs)
 *   the payload ends exactly after the table (anything after is corruption).
 *
 * Series dictionaries: the writer keeps one dictionary (TSUID -> id) from the record that starts
 * it to the next such record; records of one dictionary are consecutive in sequence order and
 * in the log's byte order (the writer encodes and hands records to the engine log under one
 * lock). A new dictionary starts with the first record after the log is opened, a record
 * holding the first point of an hour the log did not hold, after a failed append, after a
 * release of the whole log, and when the dictionary reaches HEADLOG_DICT_MAX_SERIES entries or
 * HEADLOG_DICT_MAX_BYTES of TSUIDs. Release deletes only segments whose records all precede the
 * start of the dictionary of the oldest unreleased record, so an unreleased record's dictionary
 * is always in the log; replay reads released records' tables (not their points) to rebuild it.
 * A released record whose dictionary's start was deleted is skipped.
 *
 * Batch record, version 1 (read only: logs written before version 2):
 *   0      1     1
 *   1      var   nseries, then nseries times: 1 byte tlen (1..255), tlen bytes TSUID (id i)
 *          var   npoints, then npoints times: var series id (< nseries), var ts_ms, 1 byte
 *                kind (type << 1 | ms), then the value: int = var zz(v); float and double =
 *                8 bytes, the IEEE double's bits little-endian
 *   the payload ends exactly after the last point. Series ids are local to the record.
 *
 * Delete record (a delete=true query dropped whole hours of one series from the head):
 *   0      1     HEADLOG_DELETE
 *   1      1     tlen (1..255), then tlen bytes TSUID
 *          var   zig-zag from_s, var zig-zag to_s: base hours in [from_s, to_s) are dropped
 *   nothing after. Replayed in sequence order: points of earlier records in those hours are
 *   dropped, points of later records are kept. Release is a prefix of sequence numbers, so a
 *   delete record is released only with every record before it. It does not touch the series
 *   dictionary.
 *
 * Released-mark file `released` (replaced by temp file + fsync + rename + directory fsync):
 *   0 4 magic "CTHL", 4 1 version (HEADLOG_MARK_VERSION), 5 8 seq (big-endian): every record
 *   with a sequence number <= seq is in the store; 13 4 CRC32C (big-endian) of bytes 0..13. */
#ifndef CT_SCHEMA_HEADLOG_FORMAT_H
#define CT_SCHEMA_HEADLOG_FORMAT_H

#define HEADLOG_VERSION         2
#define HEADLOG_VERSION_1       1
#define HEADLOG_DELETE          0x44        /* 'D': a delete record (first byte) */
#define HEADLOG_DEC_MAX         9           /* greatest decimal exponent of vmode 2 */
#define HEADLOG_MAX_TS_MS       (1LL << 53) /* points after this time are refused (CT_EINVAL) */
#define HEADLOG_DICT_MAX_SERIES (1u << 22)
#define HEADLOG_DICT_MAX_BYTES  (256u << 20)
#define HEADLOG_MARK_MAGIC      "CTHL"
#define HEADLOG_MARK_VERSION    1
#define HEADLOG_MARK_LEN        17
#define HEADLOG_MARK_FILE       "released"
#define HEADLOG_SEGMENT_BYTES   (64u << 20)

#endif
