/* proto_prom.h - Prometheus remote write / remote read, the protocol side (docs/prometheus.md):
 * snappy (block format) framing, the protobuf messages (tsd/prom_remote.proto, compiled by
 * protoc-c), the reversible mapping between Prometheus labels and OpenTSDB names, label matchers,
 * and the ReadResponse builder. No store access and no HTTP here: tsd/api_prom.c glues this to
 * the ingest pipeline and the query layer.
 *
 * Mapping (both directions, docs/prometheus.md "Mapping"):
 *   __name__ -> metric; every other label with a non-empty value -> a tag;
 *   a series with no label but __name__ gets the default tag (tsd.prometheus.default_tag), which
 *   the read side drops again when it is a series' only tag;
 *   names are escaped byte by byte: ASCII letters, digits, '-', '_', '.' and the bytes of
 *   tsd.core.tag.allow_specialchars stay; every other byte, and always '/', ' ', '=', '|', becomes
 *   '/' followed by two upper-case hex digits. Unescaping turns "/XX" (XX upper-case hex) back
 *   into the byte and leaves any other '/' as it is, so unescape(escape(s)) == s for every s and
 *   every setting of allow_specialchars.
 * Invariants: an escaped name holds only bytes OpenTSDB accepts under the setting it was made
 * with, never ' ', '=' or '|' (the query layer's "k=v k2=v2" tag text and literal_or lists stay
 * unambiguous). */
#ifndef CT_TSD_PROTO_PROM_H
#define CT_TSD_PROTO_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tsd/prom_remote.pb-c.h"
#include "tsd/put.h"

/* Escapes s[0..len) into out (cap bytes, NUL-terminated when cap > 0). Returns the escaped
 * length (without the NUL), which may exceed cap - 1: then out holds a truncated prefix. At most
 * 3 * len bytes. special: extra characters allowed (NULL = none). */
size_t prom_escape(const char *s, size_t len, const char *special, char *out, size_t cap);
/* Unescapes s[0..len) into out (at least len + 1 bytes; NUL-terminated). Returns the length. */
size_t prom_unescape(const char *s, size_t len, char *out);

/* Parses the default tag setting "key=value" (both non-empty, legal OpenTSDB names with no
 * special characters). Returns false with msg on a bad setting. */
bool prom_default_tag_parse(const char *s, char *key, size_t key_cap, char *value,
                            size_t value_cap, char *msg, size_t msg_size);

/* A bump allocator for unpacking one message (protobuf-c allocates every submessage and string
 * separately; a WriteRequest of 2,000 series is some 30,000 allocations): blocks of at least
 * 256 KiB, freed all at once by prom_arena_clear. Unpack with &a->alloc and never call
 * *_free_unpacked on the result. One thread at a time. */
struct prom_arena_block;
struct prom_arena {
    ProtobufCAllocator alloc;
    struct prom_arena_block *head;
    char *cur, *end; /* the free part of head's block (both NULL before the first block) */
};
void prom_arena_init(struct prom_arena *a);
void prom_arena_clear(struct prom_arena *a); /* frees every block; the arena stays usable */
/* Empties the arena for the next message: every allocation made is void, as after
 * prom_arena_clear, but the first block is kept (when of the usual 256 KiB) to be used again -
 * the arena of a reused scratch holds at most that much between requests. */
void prom_arena_reset(struct prom_arena *a);
/* n bytes (max_align_t-aligned) from the arena, valid until prom_arena_clear; NULL when out of
 * memory. */
void *prom_arena_get(struct prom_arena *a, size_t n);

/* The settings of the write mapping. */
struct prom_map {
    const char *special;     /* tsd.core.tag.allow_specialchars */
    const char *default_key; /* tsd.prometheus.default_tag, split */
    const char *default_value;
};

/* Decodes a snappy block-format body into a new buffer *out (*out_len bytes; free()). Returns 0,
 * 400 (not snappy), 413 (decoded size above max_decoded) or 500 (out of memory), with msg. */
int prom_snappy_decode(const char *body, size_t len, size_t max_decoded, char **out,
                       size_t *out_len, char *msg, size_t msg_size);
/* As prom_snappy_decode, into *buf (*cap bytes; NULL and 0 at first), replaced by a larger
 * malloc'd buffer when the decoded body does not fit (*cap updated; free() it when done). On
 * failure *buf still belongs to the caller (possibly replaced) and holds nothing. */
int prom_snappy_decode_into(const char *body, size_t len, size_t max_decoded, char **buf,
                            size_t *cap, size_t *out_len, char *msg, size_t msg_size);
/* Compresses in into a new buffer *out (free()). Returns false when out of memory. */
bool prom_snappy_encode(const void *in, size_t len, char **out, size_t *out_len);

/* Maps one series' labels to p->metric and p->tags (escaped, in *buf, grown with realloc; the
 * spans in p stay valid until *buf changes). p's value and timestamp are not touched. Returns 0,
 * or 400 with msg: no __name__ (or an empty one), a label with an empty name, a label twice,
 * more than PUT_MAX_TAGS labels; 500 when out of memory. */
int prom_map_series(const struct prom_map *m, const Prometheus__TimeSeries *ts, char **buf,
                    size_t *cap, struct put_point *p, char *msg, size_t msg_size);

/* A WriteRequest as the write path reads it: per series, its labels still encoded, as one key,
 * and its samples. */
struct prom_sample_in {
    double value;
    int64_t timestamp; /* ms */
};
struct prom_series_in {
    /* The series cache's key: its labels in wire form (each one the byte 0x0a, its length as a
     * varint, then its encoded Label message), in the order sent; the single byte 0 when the
     * series has none. */
    const char *key;
    size_t key_len;
    size_t n_labels;
    const struct prom_sample_in *samples;
    size_t n_samples;
};
/* Decodes a WriteRequest (buf, len bytes) into *series (*n of them). A body of the usual shape
 * (only WriteRequest.timeseries; in each series its labels first, then its samples; each sample
 * its value then its timestamp, as Prometheus and the Go/Python libraries write them) is read in
 * place: the keys point into buf. Any other body goes through protobuf-c's unpack of
 * WriteRequestLazy, with the same result for every body both read. Everything else is in arena
 * a (valid until its reset, and while buf is). Labels are not decoded here (prom_series_labels).
 * Returns 0, 400 (not a WriteRequest protobuf-c reads) or 500 (out of memory). */
int prom_write_decode(struct prom_arena *a, const uint8_t *buf, size_t len,
                      struct prom_series_in **series, size_t *n);
/* As prom_write_decode, every body through protobuf-c (its general path; the tests and the fuzz
 * target compare the two). Keys made here hold canonical varint lengths. */
int prom_write_unpack(struct prom_arena *a, const uint8_t *buf, size_t len,
                      struct prom_series_in **series, size_t *n);
/* Whether x and y hold the same labels (bytes) and samples (bits), whatever their keys' length
 * varints. */
bool prom_series_in_equal(const struct prom_series_in *x, const struct prom_series_in *y);
/* Decodes the labels of s (its key) into a TimeSeries of Label messages, in arena a (no
 * samples). Returns 0, 400 (a label that is not a Label message) or 500 (out of memory). */
int prom_series_labels(struct prom_arena *a, const struct prom_series_in *s,
                       Prometheus__TimeSeries **out);

/* The series cache of the write path: the encoded Label messages of a series (its key: struct
 * prom_series_in's) -> the names prom_map_series made of
 * them, for series whose mapping and name checks (put_check_names) passed. A hit skips decoding
 * the labels, mapping and checking them; the mapping depends only on the key and on settings
 * fixed for the daemon's life (tsd.core.tag.allow_specialchars, tsd.prometheus.default_tag, put's
 * rules), so an entry never goes stale. Bounded: at most max_bytes of entries and table; when an
 * entry does not fit, every entry is dropped (the next requests fill it again). Thread-safe (one
 * reader-writer lock, read-held for a lookup and write-held for an insert, never across calls;
 * writers preferred). Keys are hashed with a random
 * seed per cache (clients choose them). */
struct prom_series_cache;
/* Returns a new cache of at most max_bytes (at least 64 KiB), freed with
 * prom_series_cache_free(), or NULL when out of memory. */
struct prom_series_cache *prom_series_cache_new(size_t max_bytes);
void prom_series_cache_free(struct prom_series_cache *c); /* accepts NULL */
/* The hash of a key in this cache (its random seed). */
uint64_t prom_series_cache_hash(const struct prom_series_cache *c, const char *key, size_t len);
/* Looks key up; on a hit copies its names into a new block of arena a (valid until
 * prom_arena_clear) and returns it, for prom_series_names_load. NULL on a miss (or when out of
 * memory). */
const char *prom_series_cache_get(struct prom_series_cache *c, const char *key, size_t key_len,
                                  uint64_t hash, struct prom_arena *a);
/* Sets p->metric, p->ntags, p->tagk and p->tagv to spans of a block prom_series_cache_get
 * returned (valid while the block is). */
void prom_series_names_load(const char *names, struct put_point *p);
/* The names of such a block as one string: the metric, then each tag key and value, each
 * followed by a NUL (ingest's series key: tsd/ingest.h ingest_batch_add_key), in *key (*len
 * bytes, NULs included); returns the aux value the entry was put with. */
uint64_t prom_series_names_key(const char *names, const char **key, size_t *len);
/* Adds key -> p's metric and tags (copied) and aux (the caller's: the write path keeps the
 * ingest hash of the names there). A key already present is left as it is. */
void prom_series_cache_put(struct prom_series_cache *c, const char *key, size_t key_len,
                           uint64_t hash, const struct put_point *p, uint64_t aux);
/* Entries held now (for tests). */
size_t prom_series_cache_count(struct prom_series_cache *c);

/* What a sample's value is. */
enum prom_value_class {
    PROM_VALUE_OK = 0,
    PROM_VALUE_STALE = 1, /* Prometheus' staleness marker, the NaN with bits 0x7ff0000000000002 */
    PROM_VALUE_NAN = 2,   /* any other NaN */
    PROM_VALUE_INF = 3,   /* +Inf or -Inf */
};
enum prom_value_class prom_value_class(double v);
/* The value as put's value text (for put_check_point): an integer when v is integral, not -0 and
 * |v| <= 2^53, else "%.17g" (which reads back to the same double). v must be PROM_VALUE_OK. */
void prom_value_text(double v, char *out, size_t cap);
/* The value as put would type prom_value_text's text, without the text (for put_check_typed):
 * PUT_INT when v is integral and |v| < 1e17 (the texts without '.' or exponent; -0 is 0), else
 * PUT_FLOAT when v equals its float rounding, else PUT_DOUBLE. v must be PROM_VALUE_OK. */
struct put_value prom_value_put(double v);

/* Label matchers of one remote read query, compiled. */
struct prom_matchers;
/* Compiles q's matchers (RE/NRE anchored at both ends as Prometheus does, with PCRE2). Returns
 * NULL with msg on a bad regular expression, an unknown type or out of memory. */
struct prom_matchers *prom_matchers_new(const Prometheus__Query *q, char *msg, size_t msg_size);
void prom_matchers_free(struct prom_matchers *m);
/* The value of the __name__ EQ matcher (the metric to read), or NULL if there is none. */
const char *prom_matchers_metric(const struct prom_matchers *m);
/* Whether a series with these labels (unescaped; name[i] = value[i], __name__ included) matches
 * every matcher; a label the series lacks has the value "" (Prometheus' rule). */
bool prom_matchers_match(const struct prom_matchers *m, const char *const *name,
                         const char *const *value, size_t n);

/* Builds a ReadResponse (samples form) query result by query, series by series. */
struct prom_read_builder;
struct prom_read_builder *prom_rb_new(size_t nqueries);
void prom_rb_free(struct prom_read_builder *rb);
/* Starts a series in result qi with these labels (copied; sorted by name here). Returns false
 * when out of memory. */
bool prom_rb_series(struct prom_read_builder *rb, size_t qi, const char *const *name,
                    const char *const *value, size_t n);
/* Appends a sample to the series started last. Returns false when out of memory. */
bool prom_rb_sample(struct prom_read_builder *rb, int64_t ts_ms, double v);
/* Drops the series started last (it matched no matcher or has no samples). */
void prom_rb_drop_series(struct prom_read_builder *rb);
/* Samples added so far. */
uint64_t prom_rb_samples(const struct prom_read_builder *rb);
/* Packs the response and compresses it with snappy into a new buffer (free()). */
bool prom_rb_finish(struct prom_read_builder *rb, char **out, size_t *out_len);

#endif
