/* headlog_format.h - the record payload of the head log (schema/headlog.h) and its released-mark
 * file. Records are framed, checksummed and numbered by the write-ahead log (storage/engine/
 * wal_format.h); this is what one record carries: one packed batch of points.
 *
 * Record payload (varints are LEB128, storage/coding.h):
 *   offset size  field
 *   0      1     version (HEADLOG_VERSION); readers reject others
 *   1      var   nseries: series defined in this record
 *          ...   nseries times: 1 byte tlen (1..255), tlen bytes TSUID; the i-th is series id i
 *          var   npoints
 *          ...   npoints times: var series id (< nseries), var ts_ms, 1 byte kind
 *                (type << 1 | ms; type 0 int, 1 float, 2 double), then the value: int = zig-zag
 *                varint; float and double = 8 bytes, the IEEE double's bits little-endian
 *   the payload ends exactly after the last point (anything after is corruption).
 * Series ids are local to a record, so releasing old segments never leaves an id undefined.
 *
 * Delete record (a delete=true query dropped whole hours of one series from the head):
 *   0      1     HEADLOG_DELETE
 *   1      1     tlen (1..255), then tlen bytes TSUID
 *          var   zig-zag from_s, var zig-zag to_s: base hours in [from_s, to_s) are dropped
 *   nothing after. Replayed in sequence order: points of earlier records in those hours are
 *   dropped, points of later records are kept. Release is a prefix of sequence numbers, so a
 *   delete record is released only with every record before it.
 *
 * Released-mark file `released` (replaced by temp file + fsync + rename + directory fsync):
 *   0 4 magic "CTHL", 4 1 version (HEADLOG_VERSION), 5 8 seq (big-endian): every record with a
 *   sequence number <= seq is in the store; 13 4 CRC32C (big-endian) of bytes 0..13. */
#ifndef CT_SCHEMA_HEADLOG_FORMAT_H
#define CT_SCHEMA_HEADLOG_FORMAT_H

#define HEADLOG_VERSION       1
#define HEADLOG_DELETE        0x44 /* 'D': a delete record (first byte) */
#define HEADLOG_MARK_MAGIC    "CTHL"
#define HEADLOG_MARK_LEN      17
#define HEADLOG_MARK_FILE     "released"
#define HEADLOG_SEGMENT_BYTES (64u << 20)

#endif
