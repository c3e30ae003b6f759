/* wal_format.h - the on-disk format of write-ahead log segments (written and read by wal.c).
 *
 * A log is a directory of segments named wal-<20-digit decimal number>.log, numbered upwards;
 * replay reads them in number order. All integers are big-endian.
 *
 * Segment header (WAL_SEGMENT_HEADER_BYTES = 16):
 *   offset size field
 *   0      4    magic    WAL_MAGIC ("CTWL")
 *   4      1    version  WAL_VERSION (readers reject versions they do not know)
 *   5      3    reserved zero
 *   8      8    segment number (equals the number in the file name)
 *
 * Then records, back to back, until the end of the file (WAL_RECORD_HEADER_BYTES = 16 + payload):
 *   0      4    crc      crc32c_mask(crc32c(bytes 4 .. 16+len)): covers length, seq and payload
 *   4      4    len      payload length (<= WAL_MAX_RECORD_BYTES)
 *   8      8    seq      the batch's first sequence number (opaque to the log)
 *   16     len  payload  opaque bytes (the engine's encoded batch)
 *
 * A record never spans segments. Crash consistency: the writer only appends, so a crash leaves
 * at most a torn (incomplete or checksum-failing) tail in the segment being written, which is
 * the last one; replay truncates that tail. A mapped writer (wal_open_mapped) extends the file
 * ahead of its records, so a crash may also leave zeros after the last record: an all-zero tail
 * is the end of a segment's records wherever it is (a zero record header never passes the
 * CRC). A bad record anywhere else is corruption.
 *
 * Version history: 1 - initial. */
#ifndef CT_ENGINE_WAL_FORMAT_H
#define CT_ENGINE_WAL_FORMAT_H

#define WAL_MAGIC                0x4354574cu /* "CTWL" */
#define WAL_VERSION              1
#define WAL_SEGMENT_HEADER_BYTES 16
#define WAL_RECORD_HEADER_BYTES  16
#define WAL_MAX_RECORD_BYTES     (256u << 20)
#define WAL_SEGMENT_PREFIX       "wal-"
#define WAL_SEGMENT_SUFFIX       ".log"

#endif
