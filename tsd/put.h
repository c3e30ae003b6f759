/* put.h - parsing and validating one datapoint the way OpenTSDB 2.4 does (docs/opentsdb-compat.md,
 * "Tokenizing" and "`put` and its checks"): the telnet `put` line, and the shared checks the HTTP
 * /api/put body and `ctsdb import` apply to each point.
 *
 * Nothing here allocates: a parsed point's strings point into the caller's line, and error
 * messages go into a caller's buffer. The order of checks, and the texts of the errors, are
 * OpenTSDB's ("`put` and its checks"), so a client sees the same first error for the same bad
 * line. */
#ifndef CT_TSD_PUT_H
#define CT_TSD_PUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Hard cap on tags kept while parsing, above tsd.storage.max_tags (1..64) so that the "Too many
 * tags" error can count them (a 1024-byte line cannot hold more than 256). */
#define PUT_MAX_TAGS 256

/* A borrowed string: a span of the caller's text. */
struct put_str {
    const char *p;
    size_t len;
};

enum put_kind {
    PUT_INT = 0,    /* stored as the smallest of 1/2/4/8 bytes */
    PUT_FLOAT = 1,  /* 4-byte IEEE float: the double equals its float rounding */
    PUT_DOUBLE = 2, /* 8-byte IEEE double */
};

struct put_value {
    enum put_kind kind;
    int64_t i; /* PUT_INT */
    double d;  /* PUT_FLOAT, PUT_DOUBLE */
};

/* One parsed datapoint, held by value; strings borrowed from the parsed text. */
struct put_point {
    struct put_str metric;
    int64_t ts_ms; /* always milliseconds */
    bool ms;       /* given in milliseconds (stored with a millisecond qualifier) */
    struct put_value value;
    size_t ntags;
    struct put_str tagk[PUT_MAX_TAGS];
    struct put_str tagv[PUT_MAX_TAGS];
};

/* p's series key: the metric, then each tag key and value in p's order, each followed by a
 * NUL. put_point_key_len gives its length; put_point_key_write writes it at w (that many bytes)
 * and returns the end. The ingest pipeline's records and the remote write's series cache hold
 * names in this form. */
size_t put_point_key_len(const struct put_point *p);
char *put_point_key_write(char *w, const struct put_point *p);

/* The settings the checks depend on. */
struct put_rules {
    int max_tags;              /* tsd.storage.max_tags */
    const char *special_chars; /* tsd.core.tag.allow_specialchars; NULL = "" */
};

/* Outcome classes: which OpenTSDB exception family the error belongs to. The telnet reply is
 * "put: " + the message for both (the message already carries "illegal argument: " or
 * "invalid value: "); HTTP uses the class to choose "Unable to parse value to a number". */
enum put_status {
    PUT_OK = 0,
    PUT_EARG = 1,    /* IllegalArgumentException */
    PUT_ENUMBER = 2, /* NumberFormatException */
};

/* Parses a telnet put line (without the line terminator; a trailing '\r' is ignored), whose
 * first token is "put". On PUT_OK fills *out; otherwise writes the reply text, e.g.
 * "put: illegal argument: empty metric name", NUL-terminated, into msg (msg_size > 0). */
enum put_status put_parse_line(const char *line, size_t len, const struct put_rules *rules,
                               struct put_point *out, char *msg, size_t msg_size);

/* What put_parse_line_memo keeps of the last lines of one stream of put lines (a telnet
 * connection), for the next ones: collectors send a host's metrics together, with the same tags
 * text and often the same timestamp.
 * - The timestamp text last parsed without error, when it has 8 to 16 bytes (as its first and
 *   last 8 bytes, which cover it), and its value.
 * - The tags text last split without error: the text, its split (tag i's key is
 *   text[k, k + klen), its value the vlen bytes after the '=' that follows), whether every byte
 *   of its tag names and values is a put_str_plain one, and the tags' part of the series key
 *   (put_point_key_write's bytes after the metric's NUL). A text longer than PUT_MEMO_TEXT bytes
 *   or with more than PUT_MEMO_TAGS tags (after repeats are dropped) is not kept.
 * A text the parser refuses is never kept (its error is found again for each line). Both are
 * functions of their text alone, so a token that is the memo's byte for byte gets exactly what a
 * fresh parse gives; every check after them (timestamp > 0, value, timestamp range, tag count
 * against the rules, names) runs for every line. Caller's storage, held by value (about 650
 * bytes); zero-initialised it holds nothing. */
#define PUT_MEMO_TEXT 256
#define PUT_MEMO_TAGS 16
struct put_memo {
    uint64_t ts_head, ts_tail; /* the timestamp text's first and last 8 bytes */
    int64_t ts;                /* its value */
    uint8_t ts_len;            /* its length; 0: none kept */
    bool plain;
    bool last;         /* the last put_parse_line_memo on it returned PUT_OK with these tags */
    uint16_t text_len; /* the tags text's length; 0: none kept */
    uint16_t key_len;
    uint16_t ntags;
    struct {
        uint16_t k, klen, vlen;
    } tag[PUT_MEMO_TAGS];
    char text[PUT_MEMO_TEXT];
    char key[PUT_MEMO_TEXT + 1]; /* "k\0v\0" per tag: at most the text's length + 1 */
};

/* put_parse_line with a memo (NULL: none): a line whose tags text is memo's takes its split from
 * memo (tag strings still point into the line); another whose split succeeds and fits replaces
 * memo's content. The same results, points and messages as put_parse_line. Sets memo->last. */
enum put_status put_parse_line_memo(const char *line, size_t len, const struct put_rules *rules,
                                    struct put_memo *memo, struct put_point *out, char *msg,
                                    size_t msg_size);

/* For p just returned PUT_OK by put_parse_line_memo on m with m->last set: writes p's series key,
 * the bytes put_point_key_write writes, at w (room for p->metric.len + 1 + m->key_len bytes)
 * from the metric and m's key part; returns its length (put_point_key_len(p)). */
size_t put_memo_key_write(const struct put_memo *m, const struct put_point *p, char *w);

/* The checks after parsing, shared by every input path, in OpenTSDB's order: value typing
 * (value text -> integer / float / double, NaN and infinity refused), timestamp range, tag
 * count, then metric/tag character rules. `value` is the value's text. On failure writes the
 * message WITHOUT the "put: " prefix (e.g. "illegal argument: Need at least one tag
 * (metric=m, tags={})") into msg. On PUT_OK sets p->value. */
enum put_status put_check_point(struct put_point *p, struct put_str value,
                                const struct put_rules *rules, char *msg, size_t msg_size);

/* True if every byte of s is one that every metric and tag name may use (ASCII letters, digits,
 * '-', '_', '.', '/'): such a name passes the name rules whatever the special characters. */
bool put_str_plain(struct put_str s);

/* put_check_point for a caller that knows the names: names_plain is put_str_plain of the
 * metric and of every tag name and value, all true (the name rules need not run), else false.
 * The same checks, order and messages. */
enum put_status put_check_point_names(struct put_point *p, struct put_str value,
                                      const struct put_rules *rules, bool names_plain, char *msg,
                                      size_t msg_size);

/* The series part of the checks (tag count, then metric and tag names), run once for points
 * that share metric and tags: status and, on failure, the message put_check_point would give
 * for it (without the "put: " prefix). */
struct put_names {
    enum put_status status;
    char msg[1024];
};
void put_check_names(const struct put_point *p, const struct put_rules *rules,
                     struct put_names *out);

/* put_check_point for a value already typed by a binary protocol (an int64 as PUT_INT, a double
 * as PUT_FLOAT when it equals its float rounding, else PUT_DOUBLE), with the name checks done
 * once by put_check_names on a point of the same metric and tags: the same checks in the same
 * order (NaN/Infinity, timestamp range, then the names' result), the same messages, no value
 * text. p->ts_ms is the timestamp as given (seconds or milliseconds); on PUT_OK sets p->value,
 * p->ts_ms (milliseconds) and p->ms. */
enum put_status put_check_typed(struct put_point *p, struct put_value v,
                                const struct put_names *names, char *msg, size_t msg_size);

/* OpenTSDB's strict long parser (Tags.parseLong): optional sign, decimal digits, at most 19
 * digits. On failure writes the NumberFormatException message ("Invalid character 'x' in 1x",
 * "Empty string", "Just a sign, no value: +", "Value too long: ...", "Overflow in ...") and
 * returns false. */
bool put_parse_long(const char *s, size_t len, int64_t *out, char *msg, size_t msg_size);

/* True if s is a legal metric / tag name character sequence ("`put` and its checks", check 9); on
 * false, *bad_at is the byte offset of the first illegal character. */
bool put_name_valid(const char *s, size_t len, const char *special_chars, size_t *bad_at);

#endif
