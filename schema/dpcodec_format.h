/* dpcodec_format.h - byte layouts of the datapoint cells in family `t` (shared by the writer and
 * the reader in dpcodec.c; restated in docs/schema.md).
 *
 * OpenTSDB 2.4 layouts (not ours to version; reproduced byte for byte):
 *   qualifier, seconds (2 bytes, big-endian):      offset_s << 4 | flags         offset 0..3599
 *   qualifier, milliseconds (4 bytes, big-endian): 0xF0000000 | offset_ms << 6 | flags
 *   flags: bit 3 = float, bits 0-2 = value length - 1 (0,1,3,7)
 *   value: int two's complement big-endian on 1/2/4/8 bytes; float IEEE-754 big-endian on 4/8
 *   compacted: qualifier = q1 q2 ... (time order), value = v1 v2 ... meta (0x00 | 0x01 mixed)
 *   append:    qualifier 05 00 00, value = (q v)*
 *   annotation: qualifier 01 + offset_s (2 bytes) or 01 + offset_ms (4 bytes); value JSON
 *
 * ctsdb compressed hour cell, qualifier 07 43 54 ("\x07CT"), value:
 *   off size  field
 *   0   1     version = DPCODEC_CVERSION (1); readers reject others
 *   1   1     venc: value encoding (enum below)
 *   2   1     flags: bit0 timestamps stored in seconds (else ms); bit1 payload is raw-deflated;
 *             bit2 per-point descriptor bytes present; bit3 every point has an ms qualifier;
 *             bits4-5 the uniform type (0 int, 1 float, 2 double) when bit2 is clear
 *   3   var   n: number of points (varint, >= 1)
 *   .   var   raw payload length (varint), only if bit1
 *   .   ...   payload (raw, or raw DEFLATE of it), to the end of the value
 * payload:
 *   [n descriptor bytes: type | ms << 2]   only if flags bit2
 *   [1 byte decimal exponent e]            only if venc is DECIMAL_*: value = m / 10^e
 *   varint ts_len, then ts_len bytes of timestamps: varint o0, then zigzag varints of
 *       (o1 - o0), then delta-of-delta (oi - oi-1) - (oi-1 - oi-2); o = offset from the base
 *       hour in the unit of flags bit0
 *   values to the end:
 *     INT_DELTA / DECIMAL_DELTA: zigzag varint v0, then zigzag varints of vi - vi-1
 *     INT_DOD / DECIMAL_DOD:     zigzag varint v0, zigzag v1 - v0, then delta-of-delta
 *     XOR: Gorilla bit stream (MSB first) of the IEEE double bits: 64 bits of the first value;
 *          then per value '0' = same, '10' = meaningful bits inside the previous window, '11' +
 *          5 bits leading zeros + 6 bits (length - 1) + the bits
 *     RAW: per point by its descriptor: int zigzag varint of the value; float 4 bytes BE; double
 *          8 bytes BE
 * Integers of the decimal encodings are m; the decoder computes (double)m / 10^e (then rounds to
 * float for type float) and the encoder uses it only when that reproduces every value bit for
 * bit. */
#ifndef CT_SCHEMA_DPCODEC_FORMAT_H
#define CT_SCHEMA_DPCODEC_FORMAT_H

#define DPCODEC_CVERSION 1

enum dpcodec_venc {
    DPCODEC_VENC_INT_DELTA = 0,
    DPCODEC_VENC_INT_DOD = 1,
    DPCODEC_VENC_DECIMAL_DELTA = 2,
    DPCODEC_VENC_DECIMAL_DOD = 3,
    DPCODEC_VENC_XOR = 4,
    DPCODEC_VENC_RAW = 5,
};

#define DPCODEC_CF_SECONDS 0x01
#define DPCODEC_CF_DEFLATED 0x02
#define DPCODEC_CF_DESCRIPTORS 0x04
#define DPCODEC_CF_ALL_MS 0x08
#define DPCODEC_CF_TYPE_SHIFT 4

#define DPCODEC_MAX_EXP10 15

#endif
