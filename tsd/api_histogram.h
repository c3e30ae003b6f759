/* api_histogram.h - the histogram write path shared by POST /api/histogram and the telnet
 * `histogram` command (OpenTSDB 2.4's HistogramDataPointRpc, both sides): the codec id
 * tsd.core.histograms.config enables, and the telnet line's parsing and store.
 *
 * Invariant: both sides store a histogram the same way (series resolution, SimpleHistogram
 * encoding with the configured codec id, one 0x06 cell written at the table's durability
 * before the call returns), so a point written over telnet reads back exactly as the same
 * point written over HTTP. */
#ifndef CT_TSD_API_HISTOGRAM_H
#define CT_TSD_API_HISTOGRAM_H

#include <stddef.h>

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

/* Parses and stores one telnet line `histogram <metric> <ts> [<id>] <value> <tagk=tagv>...`
 * (without its terminator; at most TELNET_MAX_LINE bytes), where value is the bucket form
 * `lo,hi=count:...[:u=N][:o=N]` or, after a codec id, the base64 of the codec bytes. Runs the
 * write synchronously. On failure writes OpenTSDB's reply (no newline) into msg. */
enum histo_line_status api_histogram_telnet(struct tsd *td, const char *line, size_t len, char *msg,
                                            size_t cap);

#endif
