/* headlog_format.h - the record payload of the head log (schema/headlog.h) and its released-mark
 * file. Records are framed, checksummed and numbered by the write-ahead log (storage/engine/
 * wal_format.h); this is what one record carries: one packed batch of points, or a delete.
 * Varints are LEB128 (storage/coding.h); zz() is zig-zag.
 *
 * Batch record, version 3 (HEADLOG_VERSION, written):
 *   offset size  field
 *   0      1     HEADLOG_VERSION
 *   1      var   back: this record's sequence number minus that of the record that started its
 *                series dictionary (0: this record starts a new, empty dictionary)
 *          var   npoints
 *          var   base: a time in ms (the writer's: its first point's), where the state of the
 *                series this record adds to the dictionary starts
 *          var   nseries (<= npoints)
 *                the series table, local ids 0..nseries-1 in order, by codes (the previous
 *                entry's dictionary id starts at -1):
 *                  var code: odd (only 1) - a new dictionary entry, followed by 1 byte tlen
 *                      (1..255) and the TSUID; it takes the dictionary's next id, its state
 *                      {ts base, dt 0, v 0, w 0, kind 0};
 *                  code & 3 == 0 - zz(id - (previous entry's id + 1)) << 2: one entry defined by
 *                      this or an earlier record of the dictionary;
 *                  code & 3 == 2 - (r - 2) << 2: r >= 2 entries, the previous entry's id + 1,
 *                      + 2, ... + r (a writer sending its series in one order makes long runs)
 *          rest  the points: a bit stream, each field's bits least significant first, packed
 *                from the low bit of each byte; series by series in table order, a series'
 *                points in the order they were given; the last byte's unused high bits are 0
 *                and the payload ends there. Per series: its point count c (unless npoints ==
 *                nseries: then 1) as b - 1 0-bits, a 1-bit, then c's b - 1 low bits (b = bits of
 *                c); then per point, against the series' state in the dictionary (st: the
 *                previous point's ts, dt = its ts minus the one before, its value v (an int, a
 *                decimal's m or a double's bits), the width w of value deltas, its kind):
 *                  0 - the same step (ts = st.ts + st.dt) and kind as st, and (kind not XOR) a
 *                      delta of width w: w bits of zz(value - st.v); (XOR) an xor value
 *                  1 - coded in full: the time's delta of delta zz(ts - st.ts - st.dt) as 0
 *                      (0), 10 + 7 bits, 110 + 14 bits, 1110 + 24 bits or 1111 + 64 bits; then 0
 *                      (kind st.kind) or 1 + HEADLOG_K_BITS of a new kind; then the value: (XOR) an xor value; else 0 + w bits
 *                      of zz(value - previous), or 1 + 6 bits of a new width w (63: 64) + w bits
 *                  an xor value: 0 (st.v again) or 1 + 6 bits of leading zeros l + 6 bits of
 *                      n - 1 + the n significant bits of (bits XOR st.v) (l + n <= 64)
 *                kind: type (bits 0-1: 0 int, 1 float, 2 double, 3 float or double as the
 *                value implies: float when it widens back from a float, ±inf included, NaN
 *                not), ms (bit 2), XOR (bit 3: the double's bits), k (bits 4-7, <=
 *                HEADLOG_DEC_MAX): a real not XOR is the decimal m / 10^k, exactly, bit for bit,
 *                |m| < 2^53; an int has bits 3-7 0. A new kind of another domain (int; a decimal
 *                of one k, whatever its type and ms; XOR) counts the previous value as 0.
 *                A point updates st (ts, dt, v, kind, and w when a width was written). The
 *                writer uses type 3 whenever it holds, keeps a series' k while its values fit
 *                it (so 23.7 after 23.71 is 2370 at k 2), a width while a delta needs at most it
 *                and at least it - HEADLOG_W_SLACK bits, and writes a double as XOR when no
 *                k <= 9 holds it.
 *   The state is the dictionary's: a record's points decode only after every earlier record
 *   of its dictionary, released ones included (replay decodes their points, without putting
 *   them in the head).
 *
 * Batch record, version 2 (HEADLOG_VERSION_2, read only: logs written before version 3):
 *   offset size  field
 *   0      1     HEADLOG_VERSION_2
 *   1      var   back (as version 3)
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
 *          var   nseries, then the series table (as version 3, without state)
 *   the payload ends exactly after the table (anything after is corruption). A dictionary's
 *   records are all of one version (a version 3 record naming a version 2 dictionary is corrupt).
 *
 * Series dictionaries: the writer keeps one dictionary (TSUID -> id) from the record that starts
 * it to the next such record; records of one dictionary are consecutive in sequence order and
 * in the log's byte order (the writer encodes and hands records to the engine log under one
 * lock). A new dictionary starts with the first record after the log is opened, a record
 * holding the first point of an hour the log did not hold, after a failed append, after a
 * release of the whole log, and when the dictionary reaches HEADLOG_DICT_MAX_SERIES entries or
 * HEADLOG_DICT_MAX_BYTES of TSUIDs. Release deletes only segments whose records all precede the
 * start of the dictionary of the oldest unreleased record, so an unreleased record's dictionary
 * is always in the log; replay reads released records' tables (and, version 3, their points:
 * the series' state) to rebuild it. A released record whose dictionary's start was deleted is
 * skipped. A series' state goes with its dictionary: a failed append, a torn tail and a restart
 * end it with the dictionary, so no record is ever coded against a point that is not in the log.
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

#define HEADLOG_VERSION         3
#define HEADLOG_VERSION_2       2
#define HEADLOG_VERSION_1       1
#define HEADLOG_DELETE          0x44 /* 'D': a delete record (first byte) */
#define HEADLOG_DEC_MAX         9    /* greatest decimal exponent */
#define HEADLOG_K_BITS          8    /* a version 3 point kind's bits */
#define HEADLOG_K_BITS_MODE     8    /* kind: a real as its bits (XOR), not a decimal */
#define HEADLOG_K_REAL          3    /* kind's type: float or double, as the value implies */
#define HEADLOG_K_DEC_SHIFT     4    /* kind: the decimal exponent k's first bit */
#define HEADLOG_K_DEC_MASK      0xf0
#define HEADLOG_W_SLACK         6           /* widest waste of a value delta's kept width */
#define HEADLOG_MAX_TS_MS       (1LL << 53) /* points after this time are refused (CT_EINVAL) */
#define HEADLOG_DICT_MAX_SERIES (1u << 22)
#define HEADLOG_DICT_MAX_BYTES  (256u << 20)
#define HEADLOG_MARK_MAGIC      "CTHL"
#define HEADLOG_MARK_VERSION    1
#define HEADLOG_MARK_LEN        17
#define HEADLOG_MARK_FILE       "released"
#define HEADLOG_SEGMENT_BYTES   (64u << 20)

#endif
