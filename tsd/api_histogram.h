/* api_histogram.h - the histogram write path shared by POST /api/histogram and the telnet
 * `histogram` command (OpenTSDB 2.4's HistogramDataPointRpc, both sides): the codec id
 * tsd.core.histograms.config enables, and the telnet lines' parsing (on the event loop) and
 * batched store (on a writer thread).
 *
 * Invariant: both sides store a histogram the same way (series resolution, SimpleHistogram
 * encoding with the configured codec id, its 0x06 cell and the series' tag index entries
 * written at the table's durability before the point is acknowledged: the HTTP answer, or for
 * telnet the reply to a later line), so a point written over telnet reads back exactly as the
 * same point written over HTTP. */
#ifndef CT_TSD_API_HISTOGRAM_H
#define CT_TSD_API_HISTOGRAM_H

#include <stddef.h>
#include <stdint.h>

struct conf;
struct tsd;

/* The id tsd.core.histograms.config gives SimpleHistogramDecoder, or -1 (histograms off). */
int api_histogram_codec_id(const struct conf *c);

/* Outcome of a telnet `histogram` line, for the stats (OpenTSDB's counters). */
enum histo_line_status {
    HISTO_LINE_OK = 0,
    HISTO_LINE_EARG = 1,    /* "histogram: illegal argument: ..." */
    HISTO_LINE_ENUMBER = 2, /* "histogram: invalid value: ..." */
    HISTO_LINE_ESTORE = 3,  /* "histogram: HBase error: ..." (decode or store failed) */
};

/* Telnet histogram lines parsed and waiting to be written together (one writer at a time). */
struct histo_batch;
struct histo_batch *histo_batch_new(void);     /* NULL when out of memory */
void histo_batch_free(struct histo_batch *b);  /* accepts NULL */
void histo_batch_reset(struct histo_batch *b); /* empties it for reuse */
size_t histo_batch_count(const struct histo_batch *b);
/* After api_histogram_telnet_write(): entry i's owner, and NULL when it was stored, else its
 * reply ("histogram: HBase error: ...", no newline; valid until the batch is reset). */
const char *histo_batch_failure(const struct histo_batch *b, size_t i, uint64_t *owner);

/* Parses and checks one telnet line `histogram <metric> <ts> [<id>] <value> <tagk=tagv>...`
 * (without its terminator; at most TELNET_MAX_LINE bytes), where value is the bucket form
 * `lo,hi=count:...[:u=N][:o=N]` or, after a codec id, the base64 of the codec bytes, and on
 * success appends the encoded histogram to b for owner (nothing is written yet). On failure
 * writes OpenTSDB's reply (no newline) into msg. Runs on the event loop (no store access). */
enum histo_line_status api_histogram_telnet(struct tsd *td, const char *line, size_t len,
                                            struct histo_batch *b, uint64_t owner, char *msg,
                                            size_t cap);
/* Writes every histogram of b: each series resolved (names created as auto-create allows),
 * every cell in one store write at the table's durability; each entry's outcome is then read
 * with histo_batch_failure(). Blocking: for a writer thread, not the event loop. */
void api_histogram_telnet_write(struct tsd *td, struct histo_batch *b);

#endif
