/* crc32c.h - CRC-32C (Castagnoli), the checksum of every block, log record and catalog file.
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table otherwise; both give the same
 * value. crc32c_mask() is stored instead of the raw CRC so that a CRC over data that embeds CRCs
 * stays well distributed (LevelDB's convention). */
#ifndef CT_CRC32C_H
#define CT_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends `crc` (0 to start) over data[0..len). */
uint32_t crc32c_extend(uint32_t crc, const void *data, size_t len);
static inline uint32_t crc32c_value(const void *data, size_t len)
{
    return crc32c_extend(0, data, len);
}
static inline uint32_t crc32c_mask(uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
static inline uint32_t crc32c_unmask(uint32_t masked)
{
    uint32_t rot = masked - 0xa282ead8u;
    return (rot >> 17) | (rot << 15);
}

#endif
