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
 * ctsdb compressed hour cell, qualifier 07 43 54 ("\x07CT") + 8 bytes: FNV-1a 64 (offset basis
 * 14695981039346656037, prime 1099511628211) over the little-endian bytes of every point's
 * timestamp in ms, written big-endian (11 bytes in all); value:
 *   off size  field
 *   0   1     version: 1, or 2 when an integer stream holds a patched block (0x83, below) or
 *             flags bit7 is set (a version-1 cell has neither, so builds that read only
 *             version 1 refuse a cell they cannot read by its version); readers reject others
 *   1   1     venc: bits 0-1 = order k of the integer streams (0 values, 1 deltas, 2 deltas of
 *             deltas), bits 2-7 = value kind (0 INT, 1 DECIMAL, 2 XOR, 3 RAW, 4 BITS)
 *   2   1     flags: bit0 timestamps stored in seconds (else ms); bit1 payload is raw-deflated;
 *             bit2 per-point descriptor bytes present; bit3 every point has an ms qualifier;
 *             bits4-5 the uniform type (0 int, 1 float, 2 double) when bit2 and bit6 are clear;
 *             bit6 real points typed by OpenTSDB's rule (float iff (float)v == v, else double;
 *             no descriptors; DECIMAL values then decode as doubles); bit7 (version 2 only;
 *             ignored in version 1) the timestamps are evenly spaced, o_i = o_0 + i * (o_1 -
 *             o_0), and their stream is its two heads alone (n >= 2), without residual blocks
 *   3   var   n: number of points (varint, 1 ..= 3600000)
 *   .   var   raw payload length (varint), only if bit1
 *   .   ...   payload (raw, or a raw DEFLATE stream of it), to the end of the value
 * payload:
 *   [n descriptor bytes: type | ms << 2]   only if flags bit2
 *   [1 byte decimal exponent e, 0..15]     only for DECIMAL: value = m / 10^e
 *   timestamps: an integer stream of order 2 over o_i = (ts_i - base) / unit
 *   values: INT: an integer stream of order k over the values; DECIMAL: the same over m_i;
 *     XOR: Gorilla bit stream (MSB first) of the IEEE double bits: 64 bits of the first value,
 *          then per value '0' = same as previous; '10' + the bits inside the previous window;
 *          '11' + 5 bits leading zeros + 6 bits (length - 1) + the bits (a new window);
 *     BITS: an integer stream of order k over the IEEE double bits read as signed 64-bit ints;
 *     RAW: per point by its descriptor: int zigzag varint; float 4 bytes BE; double 8 bytes BE.
 * integer stream of order k over x_0..x_n-1: the first min(k, n) "heads" as zigzag varints
 *   (x_0, then x_1 - x_0 for k = 2), then the n - k residuals (k = 0: x_i; k = 1: x_i - x_i-1;
 *   k = 2: (x_i - x_i-1) - (x_i-1 - x_i-2)), all in 64-bit two's complement wrap-around, packed
 *   in blocks of up to DPCODEC_BLOCK residuals: 1 byte width w (0..64), zigzag varint of the
 *   block minimum, then ceil(count * w / 8) bytes holding each (residual - minimum) on w bits,
 *   MSB first; or a varint block: 1 byte 0x80, zigzag varint of the minimum, then each
 *   (residual - minimum) as an unsigned varint (the encoder tries both kinds of payload, raw and
 *   deflated, and keeps the smallest); or a Rice block: 1 byte 0x81, 1 byte k (0..63), zigzag
 *   varint of the block median c, then per residual u = zigzag(residual - c) as Rice code: u >> k
 *   one-bits, a zero-bit, then the low k bits of u, MSB first, padded to a byte at the block's
 *   end (chosen per block when smaller than the bit-packed form); or a radix block: 1 byte 0x82,
 *   zigzag varint of the minimum, varint R (2 <= R < 2^63: range + 1), then the number
 *   N = sum of d_j * R^j over the block's digits d_j = residual_j - minimum, written big-endian
 *   in exactly bitlen(R^count - 1) bits, right-aligned in ceil(bits / 8) bytes (zero padding
 *   first): uniform residuals then cost log2(R) bits each instead of a whole bit width; or a
 *   patched block: 1 byte 0x83, 1 byte w (0..64), zigzag varint base, zigzag varint slope s,
 *   1 byte e (0..count: exceptions), ceil(count * w / 8) bytes holding each entry's low w bits
 *   of d_j = residual_j - base - s * j on w bits, MSB first, then e bytes: the exceptions'
 *   positions j (strictly increasing, < count), then e zigzag varints: their high parts
 *   d_j >> w (arithmetic; 0 when w = 64); residual_j = base + s * j + (high << w | low), all
 *   wrap-around: a few outliers (a level's jumps) no longer set the whole block's width, and a
 *   line (a counter's rate, a slow wave) no longer costs the differences' wider noise.
 * The decimal kind is chosen only when (double)m / 10^e (rounded to float for float points)
 * reproduces every value bit for bit, so the format is lossless by construction. */
#ifndef CT_SCHEMA_DPCODEC_FORMAT_H
#define CT_SCHEMA_DPCODEC_FORMAT_H

#define DPCODEC_CVERSION         1 /* a cell without patched blocks (every build reads it) */
#define DPCODEC_CVERSION_PATCHED 2 /* a cell whose integer streams hold patched blocks */

enum dpcodec_vkind {
    DPCODEC_VK_INT = 0,
    DPCODEC_VK_DECIMAL = 1,
    DPCODEC_VK_XOR = 2,
    DPCODEC_VK_RAW = 3,
    DPCODEC_VK_BITS = 4,
};
#define DPCODEC_VENC(kind, order) ((uint8_t)((kind) << 2 | (order)))
#define DPCODEC_BLOCK             128
#define DPCODEC_VARINT_BLOCK      0x80 /* block "width" byte of a varint block */
#define DPCODEC_RICE_BLOCK        0x81 /* block "width" byte of a Rice-coded block */
#define DPCODEC_RADIX_BLOCK       0x82 /* block "width" byte of a radix block */
#define DPCODEC_PATCHED_BLOCK     0x83 /* block "width" byte of a patched block */

#define DPCODEC_CF_SECONDS     0x01
#define DPCODEC_CF_DEFLATED    0x02
#define DPCODEC_CF_DESCRIPTORS 0x04
#define DPCODEC_CF_ALL_MS      0x08
#define DPCODEC_CF_TYPE_SHIFT  4
#define DPCODEC_CF_RULE_TYPES  0x40
#define DPCODEC_CF_REGULAR     0x80 /* version 2: the timestamp stream is its two heads alone */

#define DPCODEC_MAX_EXP10 15

#endif
