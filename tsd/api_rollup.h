/* api_rollup.h - the telnet `rollup` command (OpenTSDB 2.4's RollupDataPointRpc, telnet side):
 * `rollup <interval>-<aggregator> <metric> <timestamp> <value> <tagk=tagv>...`, stored exactly as
 * POST /api/rollup stores the same point (api_rollup.c): the series resolved (names created as
 * auto-create allows), the value in the interval's rollup table under the aggregator's qualifier
 * at the interval's start.
 *
 * Lines are parsed and checked on the event loop into a batch (no store access there) and written
 * together by the telnet side writer (tsd/telnet.c), one store write per batch; as with puts a
 * stored line is acknowledged by the reply to a later line, a refused one answered by its own
 * line ("rollup: illegal argument: ...", "rollup: invalid value: ...", "rollup: unknown metric:
 * ...", "rollup: HBase error: ..."). */
#ifndef CT_TSD_API_ROLLUP_H
#define CT_TSD_API_ROLLUP_H

#include <stddef.h>
#include <stdint.h>

struct tsd;

/* Outcome of a telnet `rollup` line on the loop, for the stats (OpenTSDB's counters). */
enum rollup_line_status {
    ROLLUP_LINE_OK = 0,
    ROLLUP_LINE_EARG = 1,    /* "rollup: illegal argument: ..." */
    ROLLUP_LINE_ENUMBER = 2, /* "rollup: invalid value: ..." */
};

/* Telnet rollup lines parsed and waiting to be written together (one writer at a time). */
struct rollup_batch;
struct rollup_batch *rollup_batch_new(void);     /* NULL when out of memory */
void rollup_batch_free(struct rollup_batch *b);  /* accepts NULL */
void rollup_batch_reset(struct rollup_batch *b); /* empties it for reuse */
size_t rollup_batch_count(const struct rollup_batch *b);
/* After api_rollup_telnet_write(): entry i's owner, and NULL when it was stored, else its reply
 * (no newline; valid until the batch is reset). */
const char *rollup_batch_failure(const struct rollup_batch *b, size_t i, uint64_t *owner);

/* Parses and checks one telnet line (without its terminator; at most TELNET_MAX_LINE bytes) and
 * on success appends it to b for owner (nothing is written yet). On failure writes the reply
 * (no newline) into msg. Rollups off (tsd.rollups.enable) or the TSD read-only: every line is
 * refused. Runs on the event loop (no store access). */
enum rollup_line_status api_rollup_telnet(struct tsd *t, const char *line, size_t len,
                                          struct rollup_batch *b, uint64_t owner, char *msg,
                                          size_t cap);
/* Writes every rollup of b: series resolved, every value in one rollup write; each entry's
 * outcome is then read with rollup_batch_failure(). Blocking: for a writer thread. */
void api_rollup_telnet_write(struct tsd *t, struct rollup_batch *b);

#endif
