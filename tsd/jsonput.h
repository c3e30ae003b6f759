/* jsonput.h - a zero-allocation reader for /api/put bodies: one datapoint object or an array of
 * them (docs/opentsdb-compat.md, "`/api/put`"), handing each point's fields to a callback as spans
 * of the body.
 *
 * cJSON would allocate several nodes per datapoint and loses the text of numbers, which decides
 * integer versus float storage (`42` vs `42.0`), so put bodies are read here: strict RFC 8259
 * syntax, strings unescaped into a caller's scratch buffer (never longer than the body), other
 * values as their source text. Unknown fields are skipped. */
#ifndef CT_TSD_JSONPUT_H
#define CT_TSD_JSONPUT_H

#include <stdbool.h>
#include <stddef.h>

#include "tsd/put.h"

/* The fields of one datapoint object. Spans point into the body or the scratch buffer and are
 * valid during the callback only. */
struct jsonput_point {
    struct put_str metric;    /* p NULL if absent or null */
    struct put_str timestamp; /* text of the number, or of the string */
    bool timestamp_is_string;
    struct put_str value; /* text of the number or string; p NULL if absent or null */
    bool tags_present;
    bool not_object;  /* the array element is not an object */
    bool tags_repeat; /* the tags are the previous point's (the same text): a caller may reuse
                         what it found of them; false does not say they differ */
    size_t ntags;
    struct put_str tagk[PUT_MAX_TAGS];
    struct put_str tagv[PUT_MAX_TAGS];
    bool too_many_tags; /* more than PUT_MAX_TAGS: the rest were dropped */
    const char *src;    /* the object's text in the body (for echoing it in errors) */
    size_t src_len;
};

/* Called per datapoint in body order, index from 0; non-zero stops the walk. */
typedef int (*jsonput_fn)(void *arg, size_t index, struct jsonput_point *p);

/* Checks the whole body's syntax first (jsonput_check: nothing is reported for a malformed body),
 * then calls fn per point with *point (the caller's storage, reused for every point). scratch
 * must hold len + 1 bytes. Returns 0 and *npoints on success; -1 with msg for malformed JSON or a
 * top level that is neither an object nor an array; the value fn returned if it stopped the
 * walk. */
int jsonput_parse(const char *body, size_t len, char *scratch, struct jsonput_point *point,
                  jsonput_fn fn, void *arg, size_t *npoints, char *msg, size_t msg_size);

/* jsonput_parse in one pass: the syntax is checked while the points are read, and fn gets each
 * point as soon as it is read, so fn may see points of a body that turns out malformed (the
 * result is then -1 with the message jsonput_parse gives, once fn has seen the points before
 * the error). Otherwise the same calls, results and messages as jsonput_parse. A caller that
 * must act on a point for good before the walk ends (hand it to a writer) runs jsonput_check
 * first. */
int jsonput_read(const char *body, size_t len, char *scratch, struct jsonput_point *point,
                 jsonput_fn fn, void *arg, size_t *npoints, char *msg, size_t msg_size);

/* jsonput_parse's check alone, without scratch or callback: 0, or -1 with the message
 * jsonput_parse gives for the body. */
int jsonput_check(const char *body, size_t len, char *msg, size_t msg_size);

/* The two syntax checks jsonput_check() runs, exposed for tests: the quick one accepts a subset
 * of JSON (no escapes or control characters in strings, nesting below 32) and returns true only
 * for a body the full one accepts; false means "not known", and the full check decides (and
 * words the error). */
bool jsonput_syntax_quick(const char *body, size_t len);
bool jsonput_syntax_full(const char *body, size_t len);

/* For tests: off, the readers read every point the general way, without the fast path for the
 * common shape of a point (they must read the same). On by default; not thread-safe. */
void jsonput_set_fast_path(bool on);

#endif
