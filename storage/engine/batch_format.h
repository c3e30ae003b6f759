/* batch_format.h - the engine's payload inside one write-ahead-log record (the record framing,
 * CRC and sequence number are wal_format.h's). Written by write.c, read back by its replay.
 *
 * One record = one wc_mutate_batch() call (all its rows), with every cell resolved: timestamps
 * are concrete, a row delete is one DeleteFamily per family, a delete-latest carries the
 * timestamp it resolved to. The record's sequence number is the seq of its first cell; cell j
 * (counting across rows, from 0) has seq record_seq + j.
 *
 *   payload := version:u8 (= BATCH_FORMAT_VERSION) table_id:varint nrows:varint row*
 *   row     := row_len:varint row:bytes ncells:varint cell*
 *   cell    := type:u8 (enum wc_cell_type code) fam_len:varint fam:bytes
 *              qual_len:varint qual:bytes ts_ms:varint (>= 0) value_len:varint value:bytes
 *
 * Varints are coding.h's LEB128. Families are stored by name so a record replays correctly
 * after families were added or removed (cells of families that no longer exist are skipped). */
#ifndef CT_ENGINE_BATCH_FORMAT_H
#define CT_ENGINE_BATCH_FORMAT_H

#define BATCH_FORMAT_VERSION 1

#endif
