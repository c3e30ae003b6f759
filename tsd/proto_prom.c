/* proto_prom.c - Prometheus remote write / read, protocol side (see proto_prom.h).
 * The read builder owns every string and array of its ReadResponse (malloc'd, freed by
 * prom_rb_free); the protobuf-c structs are filled by hand and packed once at the end. */
#include "tsd/proto_prom.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "storage/coding.h"
#include "storage/hash.h"

/* ---- names ------------------------------------------------------------------------------ */

/* The bytes every name keeps as they are: letters, digits, '-', '_', '.'. */
static const bool prom_keep_base[256] = {
    ['-'] = 1, ['.'] = 1, ['_'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1,
    ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1,
    ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1,
    ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1,
    ['T'] = 1, ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1,
    ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1,
    ['j'] = 1, ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1,
    ['r'] = 1, ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1,
    ['z'] = 1,
};

static bool prom_keep(unsigned char c, const char *special)
{
    if (prom_keep_base[c])
        return true;
    if (c == '/' || c == ' ' || c == '=' || c == '|' || c == 0 || c >= 0x80 || !special)
        return false;
    return strchr(special, c) != NULL;
}

size_t prom_escape(const char *s, size_t len, const char *special, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    if (cap > 3 * len) {
        /* room for the longest result: no bound check per byte (the series mapping's case) */
        for (size_t i = 0; i < len; i++) {
            unsigned char c = u[i];
            if (prom_keep_base[c] || prom_keep(c, special)) {
                out[n++] = (char)c;
            } else {
                out[n++] = '/';
                out[n++] = hex[c >> 4];
                out[n++] = hex[c & 15];
            }
        }
        out[n] = '\0';
        return n;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = u[i];
        char e[3] = {(char)c, 0, 0};
        size_t el = 1;
        if (!prom_keep(c, special)) {
            e[0] = '/';
            e[1] = hex[c >> 4];
            e[2] = hex[c & 15];
            el = 3;
        }
        for (size_t k = 0; k < el; k++, n++)
            if (n + 1 < cap)
                out[n] = e[k];
    }
    if (cap > 0)
        out[n < cap ? n : cap - 1] = '\0';
    return n;
}

static int prom_hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t prom_unescape(const char *s, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '/' && i + 2 < len) {
            int hi = prom_hexval(s[i + 1]), lo = prom_hexval(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                out[n++] = (char)(hi << 4 | lo);
                i += 2;
                continue;
            }
        }
        out[n++] = s[i];
    }
    out[n] = '\0';
    return n;
}

bool prom_default_tag_parse(const char *s, char *key, size_t key_cap, char *value,
                            size_t value_cap, char *msg, size_t msg_size)
{
    const char *eq = s ? strchr(s, '=') : NULL;
    size_t kl = eq ? (size_t)(eq - s) : 0, vl = eq ? strlen(eq + 1) : 0;
    size_t bad;
    if (!eq || kl == 0 || vl == 0 || kl >= key_cap || vl >= value_cap) {
        snprintf(msg, msg_size, "tsd.prometheus.default_tag: expected key=value, got '%s'",
                 s ? s : "");
        return false;
    }
    if (!put_name_valid(s, kl, NULL, &bad) || !put_name_valid(eq + 1, vl, NULL, &bad) ||
        memchr(eq + 1, '=', vl)) {
        snprintf(msg, msg_size,
                 "tsd.prometheus.default_tag: '%s' is not a legal OpenTSDB tag (letters, digits, "
                 "- _ . /)",
                 s);
        return false;
    }
    memcpy(key, s, kl);
    key[kl] = '\0';
    memcpy(value, eq + 1, vl);
    value[vl] = '\0';
    return true;
}

/* ---- arena ------------------------------------------------------------------------------ */

struct prom_arena_block {
    struct prom_arena_block *next;
    size_t cap; /* bytes of data */
    max_align_t data[];
};

#define PROM_ARENA_BLOCK ((size_t)256 << 10)

/* A new block for a request of size bytes (rounded); the rest of the previous block is left. */
static void *prom_arena_grow(struct prom_arena *a, size_t size)
{
    size_t cap = size > PROM_ARENA_BLOCK ? size : PROM_ARENA_BLOCK;
    struct prom_arena_block *b = malloc(sizeof(*b) + cap);
    if (!b)
        return NULL;
    b->cap = cap;
    b->next = a->head;
    a->head = b;
    a->cur = (char *)b->data + size;
    a->end = (char *)b->data + cap;
    return b->data;
}

/* Called by protobuf-c for every message, array and string it unpacks: the common case is a
 * bump of cur. */
static void *prom_arena_alloc(void *arg, size_t size)
{
    struct prom_arena *a = arg;
    size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    if ((uintptr_t)a->end - (uintptr_t)a->cur < size) /* both NULL before the first block */
        return prom_arena_grow(a, size);
    void *p = a->cur;
    a->cur += size;
    return p;
}

static void prom_arena_nofree(void *arg, void *p)
{
    (void)arg;
    (void)p; /* freed with the arena */
}

void prom_arena_init(struct prom_arena *a)
{
    a->alloc.alloc = prom_arena_alloc;
    a->alloc.free = prom_arena_nofree;
    a->alloc.allocator_data = a;
    a->head = NULL;
    a->cur = a->end = NULL;
}

void *prom_arena_get(struct prom_arena *a, size_t n)
{
    return prom_arena_alloc(a, n ? n : 1);
}

void prom_arena_clear(struct prom_arena *a)
{
    while (a->head) {
        struct prom_arena_block *n = a->head->next;
        free(a->head);
        a->head = n;
    }
    a->cur = a->end = NULL;
}

void prom_arena_reset(struct prom_arena *a)
{
    struct prom_arena_block *keep = NULL;
    while (a->head) {
        struct prom_arena_block *n = a->head->next;
        if (!n && a->head->cap == PROM_ARENA_BLOCK) /* the first block, of the usual size */
            keep = a->head;
        else
            free(a->head);
        a->head = n;
    }
    a->head = keep;
    a->cur = keep ? (char *)keep->data : NULL;
    a->end = keep ? (char *)keep->data + keep->cap : NULL;
}

/* ---- snappy ----------------------------------------------------------------------------- */

int prom_snappy_decode(const char *body, size_t len, size_t max_decoded, char **out,
                       size_t *out_len, char *msg, size_t msg_size)
{
    size_t cap = 0;
    *out = NULL;
    int st = prom_snappy_decode_into(body, len, max_decoded, out, &cap, out_len, msg, msg_size);
    if (st != 0) {
        free(*out);
        *out = NULL;
    }
    return st;
}

int prom_snappy_decode_into(const char *body, size_t len, size_t max_decoded, char **buf,
                            size_t *cap, size_t *out_len, char *msg, size_t msg_size)
{
    size_t n;
    *out_len = 0;
    /* One pass over the body: snappy_uncompress refuses data that is not valid (bounded by the
     * output length it is given), so the body is validated separately only when its stated
     * length is over the limit - to answer 400, not 413, for a body that is not snappy at all. */
    if (snappy_uncompressed_length(body, len, &n) != SNAPPY_OK ||
        (n > max_decoded && snappy_validate_compressed_buffer(body, len) != SNAPPY_OK)) {
        snprintf(msg, msg_size, "body is not snappy (block format) compressed data");
        return 400;
    }
    if (n > max_decoded) {
        snprintf(msg, msg_size,
                 "decoded body of %zu bytes is larger than tsd.prometheus.max_decoded_bytes (%zu)",
                 n, max_decoded);
        return 413;
    }
    if (!*buf || *cap < n) {
        char *b = malloc(n ? n : 1);
        if (!b) {
            snprintf(msg, msg_size, "out of memory");
            return 500;
        }
        free(*buf);
        *buf = b;
        *cap = n ? n : 1;
    }
    size_t got = n;
    if (snappy_uncompress(body, len, *buf, &got) != SNAPPY_OK || got != n) {
        snprintf(msg, msg_size, "body is not snappy (block format) compressed data");
        return 400;
    }
    *out_len = n;
    return 0;
}

bool prom_snappy_encode(const void *in, size_t len, char **out, size_t *out_len)
{
    size_t cap = snappy_max_compressed_length(len);
    char *b = malloc(cap ? cap : 1);
    if (!b)
        return false;
    if (snappy_compress(in, len, b, &cap) != SNAPPY_OK) {
        free(b);
        return false;
    }
    *out = b;
    *out_len = cap;
    return true;
}

/* ---- the write mapping ------------------------------------------------------------------ */

int prom_map_series(const struct prom_map *m, const Prometheus__TimeSeries *ts, char **buf,
                    size_t *cap, struct put_point *p, char *msg, size_t msg_size)
{
    size_t need = 1;
    const Prometheus__Label *name = NULL;
    for (size_t i = 0; i < ts->n_labels; i++) {
        const Prometheus__Label *l = ts->labels[i];
        if (!l->name || !*l->name) {
            snprintf(msg, msg_size, "a label has an empty name");
            return 400;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(ts->labels[j]->name, l->name)) {
                snprintf(msg, msg_size, "label '%s' given twice", l->name);
                return 400;
            }
        if (!strcmp(l->name, "__name__"))
            name = l;
        need += 3 * (strlen(l->name) + strlen(l->value ? l->value : "")) + 2;
    }
    if (!name || !name->value || !*name->value) {
        snprintf(msg, msg_size, "a series has no __name__ label");
        return 400;
    }
    if (ts->n_labels - 1 > PUT_MAX_TAGS) {
        snprintf(msg, msg_size, "a series has %zu labels besides __name__ (at most %d)",
                 ts->n_labels - 1, PUT_MAX_TAGS);
        return 400;
    }
    if (need > *cap) {
        char *nb = realloc(*buf, need);
        if (!nb) {
            snprintf(msg, msg_size, "out of memory");
            return 500;
        }
        *buf = nb;
        *cap = need;
    }
    char *w = *buf;
    size_t used = 0;
#define PROM_PUT(dst, s)                                                                       \
    do {                                                                                       \
        size_t l_ = prom_escape((s), strlen(s), m->special, w + used, *cap - used);            \
        (dst).p = w + used;                                                                    \
        (dst).len = l_;                                                                        \
        used += l_ + 1;                                                                        \
    } while (0)
    PROM_PUT(p->metric, name->value);
    p->ntags = 0;
    for (size_t i = 0; i < ts->n_labels; i++) {
        const Prometheus__Label *l = ts->labels[i];
        if (l == name || !l->value || !*l->value)
            continue; /* an empty value is an absent label in Prometheus */
        PROM_PUT(p->tagk[p->ntags], l->name);
        PROM_PUT(p->tagv[p->ntags], l->value);
        p->ntags++;
    }
#undef PROM_PUT
    if (p->ntags == 0) {
        p->tagk[0] = (struct put_str){m->default_key, strlen(m->default_key)};
        p->tagv[0] = (struct put_str){m->default_value, strlen(m->default_value)};
        p->ntags = 1;
    }
    return 0;
}

/* ---- decoding a write request ----------------------------------------------------------- */

/* The tags of the fields the usual shape has (field number << 3 | wire type). */
#define PROM_TAG_SERIES 0x0a    /* WriteRequest.timeseries = 1, length-delimited */
#define PROM_TAG_LABELS 0x0a    /* TimeSeries.labels = 1, length-delimited */
#define PROM_TAG_SAMPLES 0x12   /* TimeSeries.samples = 2, length-delimited */
#define PROM_TAG_VALUE 0x09     /* Sample.value = 1, 64-bit */
#define PROM_TAG_TIMESTAMP 0x10 /* Sample.timestamp = 2, varint */

/* Bytes of key (wire form) for these labels; 1 when there are none. */
static size_t prom_key_size(const ProtobufCBinaryData *labels, size_t n_labels)
{
    uint8_t tmp[CODING_VARINT64_MAX];
    size_t need = 0;
    for (size_t i = 0; i < n_labels; i++)
        need += 1 + coding_put_varint64(tmp, labels[i].len) + labels[i].len;
    return need ? need : 1;
}

/* Writes the key of these labels (prom_key_size bytes) at w. */
static void prom_key_write(uint8_t *w, const ProtobufCBinaryData *labels, size_t n_labels)
{
    if (n_labels == 0)
        *w = 0; /* a series without labels: one byte, never the wire form of a label */
    for (size_t i = 0; i < n_labels; i++) {
        *w++ = PROM_TAG_LABELS;
        w += coding_put_varint64(w, labels[i].len);
        if (labels[i].len) /* (protobuf-c leaves an empty one's data NULL) */
            memcpy(w, labels[i].data, labels[i].len);
        w += labels[i].len;
    }
}

/* Reads a length prefix at *p as protobuf-c reads one (a varint of at most 5 bytes) and checks
 * that so many bytes follow before end; false otherwise. */
static inline bool prom_len(const uint8_t **p, const uint8_t *end, size_t *len)
{
    const uint8_t *q = *p;
    uint64_t v;
    size_t n = 1;
    if (q < end && *q < 0x80) /* one byte: the usual case */
        v = *q;
    else if ((n = coding_get_varint64(q, end, &v)) == 0 || n > 5)
        return false;
    if (v > (uint64_t)(end - q) - n)
        return false;
    *p = q + n;
    *len = (size_t)v;
    return true;
}

/* Counts the length-delimited fields of tag `tag` that [p, end) consists of; false when any
 * byte is not part of one. */
static bool prom_count_fields(const uint8_t *p, const uint8_t *end, uint8_t tag, size_t *count)
{
    size_t n = 0, len = 0;
    while (p < end) {
        if (*p++ != tag || !prom_len(&p, end, &len))
            return false;
        p += len;
        n++;
    }
    *count = n;
    return true;
}

/* The bytes of the length-delimited field at *p (already checked: by prom_count_fields, or a
 * key's label), *len of them; *p moves past it. */
static const uint8_t *prom_field(const uint8_t **p, const uint8_t *end, size_t *len)
{
    (*p)++; /* its tag */
    prom_len(p, end, len);
    const uint8_t *f = *p;
    *p += *len;
    return f;
}

/* One Sample's bytes [p, end) in the usual shape: the value (if not 0) then the timestamp (if not
 * 0), each at most once. False for anything else. */
static bool prom_scan_sample(const uint8_t *p, const uint8_t *end, struct prom_sample_in *out)
{
    uint64_t bits = 0, ts = 0;
    if (p < end && *p == PROM_TAG_VALUE) {
        if (end - p < 9)
            return false;
        bits = coding_get_le64(p + 1);
        p += 9;
    }
    if (p < end && *p == PROM_TAG_TIMESTAMP) {
        size_t n = coding_get_varint64(p + 1, end, &ts);
        if (n == 0)
            return false;
        p += 1 + n;
    }
    memcpy(&out->value, &bits, sizeof(out->value));
    out->timestamp = (int64_t)ts;
    return p == end;
}

/* One TimeSeries' bytes [p, end) in the usual shape: every label, then every sample. False for
 * anything else, and when out of memory (the caller then unpacks with protobuf-c). */
static bool prom_scan_series(struct prom_arena *a, const uint8_t *p, const uint8_t *end,
                             struct prom_series_in *out)
{
    const uint8_t *k = p;
    size_t len = 0, nl = 0, ns = 0;
    while (p < end && *p == PROM_TAG_LABELS) {
        p++;
        if (!prom_len(&p, end, &len))
            return false;
        p += len;
        nl++;
    }
    out->key = nl ? (const char *)k : "";
    out->key_len = nl ? (size_t)(p - k) : 1;
    out->n_labels = nl;
    if (!prom_count_fields(p, end, PROM_TAG_SAMPLES, &ns))
        return false;
    struct prom_sample_in *sm = prom_arena_alloc(a, (ns ? ns : 1) * sizeof(*sm));
    if (!sm)
        return false;
    for (size_t i = 0; i < ns; i++) {
        const uint8_t *f = prom_field(&p, end, &len);
        if (!prom_scan_sample(f, f + len, &sm[i]))
            return false;
    }
    out->samples = sm;
    out->n_samples = ns;
    return true;
}

/* The whole body in the usual shape; false for anything else or when out of memory. */
static bool prom_scan_write(struct prom_arena *a, const uint8_t *buf, size_t len,
                            struct prom_series_in **series, size_t *n)
{
    const uint8_t *p = buf, *end = buf + len;
    size_t nts = 0, l = 0;
    if (!prom_count_fields(p, end, PROM_TAG_SERIES, &nts))
        return false;
    struct prom_series_in *s = prom_arena_alloc(a, (nts ? nts : 1) * sizeof(*s));
    if (!s)
        return false;
    for (size_t i = 0; i < nts; i++) {
        const uint8_t *f = prom_field(&p, end, &l);
        if (!prom_scan_series(a, f, f + l, &s[i]))
            return false;
    }
    *series = s;
    *n = nts;
    return true;
}

int prom_write_unpack(struct prom_arena *a, const uint8_t *buf, size_t len,
                             struct prom_series_in **series, size_t *n)
{
    Prometheus__WriteRequestLazy *wr = prometheus__write_request_lazy__unpack(&a->alloc, len, buf);
    if (!wr)
        return 400; /* (or out of memory: protobuf-c does not tell) */
    size_t nts = wr->n_timeseries;
    struct prom_series_in *s = prom_arena_alloc(a, (nts ? nts : 1) * sizeof(*s));
    if (!s)
        return 500;
    for (size_t i = 0; i < nts; i++) {
        const Prometheus__TimeSeriesLazy *ts = wr->timeseries[i];
        size_t kl = prom_key_size(ts->labels, ts->n_labels);
        uint8_t *key = prom_arena_alloc(a, kl);
        struct prom_sample_in *sm =
            prom_arena_alloc(a, (ts->n_samples ? ts->n_samples : 1) * sizeof(*sm));
        if (!key || !sm)
            return 500;
        prom_key_write(key, ts->labels, ts->n_labels);
        for (size_t j = 0; j < ts->n_samples; j++) {
            sm[j].value = ts->samples[j]->value;
            sm[j].timestamp = ts->samples[j]->timestamp;
        }
        s[i] = (struct prom_series_in){(const char *)key, kl, ts->n_labels, sm, ts->n_samples};
    }
    *series = s;
    *n = nts;
    return 0;
}

int prom_write_decode(struct prom_arena *a, const uint8_t *buf, size_t len,
                      struct prom_series_in **series, size_t *n)
{
    if (prom_scan_write(a, buf, len, series, n))
        return 0;
    return prom_write_unpack(a, buf, len, series, n);
}

bool prom_series_in_equal(const struct prom_series_in *x, const struct prom_series_in *y)
{
    if (x->n_labels != y->n_labels || x->n_samples != y->n_samples)
        return false;
    const uint8_t *px = (const uint8_t *)x->key, *ex = px + x->key_len;
    const uint8_t *py = (const uint8_t *)y->key, *ey = py + y->key_len;
    for (size_t i = 0; i < x->n_labels; i++) {
        size_t lx = 0, ly = 0;
        const uint8_t *fx = prom_field(&px, ex, &lx), *fy = prom_field(&py, ey, &ly);
        if (lx != ly || (lx && memcmp(fx, fy, lx)))
            return false;
    }
    for (size_t i = 0; i < x->n_samples; i++)
        if (memcmp(&x->samples[i].value, &y->samples[i].value, sizeof(double)) ||
            x->samples[i].timestamp != y->samples[i].timestamp)
            return false;
    return true;
}

int prom_series_labels(struct prom_arena *a, const struct prom_series_in *s,
                       Prometheus__TimeSeries **out)
{
    Prometheus__TimeSeries *d = prom_arena_alloc(a, sizeof(*d));
    Prometheus__Label **labels =
        prom_arena_alloc(a, (s->n_labels ? s->n_labels : 1) * sizeof(*labels));
    if (!d || !labels)
        return 500;
    prometheus__time_series__init(d);
    const uint8_t *p = (const uint8_t *)s->key, *end = p + s->key_len;
    for (size_t i = 0; i < s->n_labels; i++) {
        size_t len = 0;
        const uint8_t *f = prom_field(&p, end, &len); /* a key holds whole labels */
        if (!(labels[i] = prometheus__label__unpack(&a->alloc, len, f)))
            return 400;
    }
    d->n_labels = s->n_labels;
    d->labels = labels;
    *out = d;
    return 0;
}

/* ---- series cache ----------------------------------------------------------------------- */

/* Entries are appended to one byte area: u32 key length, u16 name count (1 + 2 x ntags),
 * u16 names length, u64 aux (the caller's, e.g. the hash of the names), the key, then the names
 * part: each name's length (u16, in order), then the names, each NUL-terminated (metric, k1, v1,
 * k2, v2...: ingest's series key); padded to 8 bytes. The names length counts the whole names
 * part (lengths and names). The table (open addressing, linear probing,
 * at most half full) holds per slot the hash and 1 + the entry's offset (0: empty). */
struct prom_sc_slot {
    uint64_t hash;
    uint64_t off1;
};
struct prom_series_cache {
    /* read-held for lookups (the workers' 500 or so a request do not wait for each other),
     * write-held for inserts; writers preferred, so that a stream of lookups cannot keep a new
     * series out */
    pthread_rwlock_t mu;
    uint64_t seed;
    size_t nslots, count; /* [mu] count */
    struct prom_sc_slot *slots; /* [mu] */
    char *area;                 /* [mu] */
    size_t area_cap, used;      /* [mu] used */
};

#define PROM_SC_HEAD 16

struct prom_series_cache *prom_series_cache_new(size_t max_bytes)
{
    if (max_bytes < ((size_t)64 << 10))
        max_bytes = (size_t)64 << 10;
    struct prom_series_cache *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    /* an entry is ~200 bytes at typical label sizes: one slot per 64 bytes of area keeps the
     * table at most ~1/3 full (at most half: enforced on insert); the table takes 1/5 */
    size_t area = max_bytes / 5 * 4;
    size_t nslots = 1024;
    while (nslots * 2 * sizeof(struct prom_sc_slot) <= max_bytes / 5)
        nslots *= 2;
    c->slots = calloc(nslots, sizeof(*c->slots));
    c->area = malloc(area);
    if (!c->slots || !c->area) {
        free(c->slots);
        free(c->area);
        free(c);
        return NULL;
    }
    c->nslots = nslots;
    c->area_cap = area;
    if (getrandom(&c->seed, sizeof(c->seed), GRND_NONBLOCK) != (ssize_t)sizeof(c->seed)) {
        struct timespec ts; /* no entropy yet (early boot): the clock still varies per run */
        clock_gettime(CLOCK_REALTIME, &ts);
        c->seed = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_sec ^
                  (uint64_t)(uintptr_t)c;
    }
    pthread_rwlockattr_t ra;
    pthread_rwlockattr_init(&ra);
    pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
    pthread_rwlock_init(&c->mu, &ra);
    pthread_rwlockattr_destroy(&ra);
    return c;
}

void prom_series_cache_free(struct prom_series_cache *c)
{
    if (!c)
        return;
    pthread_rwlock_destroy(&c->mu);
    free(c->slots);
    free(c->area);
    free(c);
}

uint64_t prom_series_cache_hash(const struct prom_series_cache *c, const char *key, size_t len)
{
    return hash_bytes(key, len, c->seed);
}

/* REQUIRES: c->mu held. The entry of key, or NULL. */
static const char *prom_sc_find(const struct prom_series_cache *c, const char *key,
                                size_t key_len, uint64_t hash)
{
    for (size_t i = hash & (c->nslots - 1);; i = (i + 1) & (c->nslots - 1)) {
        const struct prom_sc_slot *s = &c->slots[i];
        if (!s->off1)
            return NULL;
        if (s->hash != hash)
            continue;
        const char *e = c->area + s->off1 - 1;
        uint32_t kl;
        memcpy(&kl, e, 4);
        if (kl == key_len && !memcmp(e + PROM_SC_HEAD, key, key_len))
            return e;
    }
}

const char *prom_series_cache_get(struct prom_series_cache *c, const char *key, size_t key_len,
                                  uint64_t hash, struct prom_arena *a)
{
    char *blk = NULL;
    pthread_rwlock_rdlock(&c->mu);
    const char *e = prom_sc_find(c, key, key_len, hash);
    if (e) {
        uint16_t nl;
        memcpy(&nl, e + 6, 2);
        /* the block: aux (8 bytes), the name count and the names length (2 + 2, as in the
         * entry), then the names part */
        if ((blk = prom_arena_alloc(a, 12 + (size_t)nl)) != NULL) {
            memcpy(blk, e + 8, 8);
            memcpy(blk + 8, e + 4, 4);
            memcpy(blk + 12, e + PROM_SC_HEAD + key_len, nl);
        }
    }
    pthread_rwlock_unlock(&c->mu);
    return blk;
}

void prom_series_names_load(const char *names, struct put_point *p)
{
    uint16_t nn, len;
    memcpy(&nn, names + 8, 2);
    const char *lens = names + 12;
    const char *r = lens + 2 * (size_t)nn; /* the lengths are stored: no strlen */
    memcpy(&len, lens, 2);
    p->metric = (struct put_str){r, len};
    r += len + 1;
    p->ntags = (size_t)(nn - 1) / 2;
    for (size_t i = 0; i < p->ntags; i++) {
        memcpy(&len, lens + 2 + 4 * i, 2);
        p->tagk[i] = (struct put_str){r, len};
        r += len + 1;
        memcpy(&len, lens + 4 + 4 * i, 2);
        p->tagv[i] = (struct put_str){r, len};
        r += len + 1;
    }
}

uint64_t prom_series_names_key(const char *names, const char **key, size_t *len)
{
    uint16_t nn, nl;
    uint64_t aux;
    memcpy(&aux, names, 8);
    memcpy(&nn, names + 8, 2);
    memcpy(&nl, names + 10, 2);
    *key = names + 12 + 2 * (size_t)nn;
    *len = (size_t)nl - 2 * (size_t)nn;
    return aux;
}

void prom_series_cache_put(struct prom_series_cache *c, const char *key, size_t key_len,
                           uint64_t hash, const struct put_point *p, uint64_t aux)
{
    /* the names' lengths (2 bytes each) and the names: at most UINT16_MAX, so is each name's */
    size_t nl = 2 * (1 + 2 * p->ntags) + put_point_key_len(p);
    size_t need = (PROM_SC_HEAD + key_len + nl + 7) & ~(size_t)7;
    if (nl > UINT16_MAX || key_len > UINT32_MAX || need > c->area_cap / 4)
        return; /* too large to be worth keeping */
    pthread_rwlock_wrlock(&c->mu);
    if (prom_sc_find(c, key, key_len, hash)) {
        pthread_rwlock_unlock(&c->mu);
        return;
    }
    if (c->used + need > c->area_cap || (c->count + 1) * 2 > c->nslots) {
        memset(c->slots, 0, c->nslots * sizeof(*c->slots)); /* full: start again */
        c->used = 0;
        c->count = 0;
    }
    char *e = c->area + c->used;
    uint32_t kl = (uint32_t)key_len;
    uint16_t nn = (uint16_t)(1 + 2 * p->ntags), nl16 = (uint16_t)nl;
    memcpy(e, &kl, 4);
    memcpy(e + 4, &nn, 2);
    memcpy(e + 6, &nl16, 2);
    memcpy(e + 8, &aux, 8);
    memcpy(e + PROM_SC_HEAD, key, key_len);
    char *lens = e + PROM_SC_HEAD + key_len;
    uint16_t l16 = (uint16_t)p->metric.len;
    memcpy(lens, &l16, 2);
    for (size_t i = 0; i < p->ntags; i++) {
        l16 = (uint16_t)p->tagk[i].len;
        memcpy(lens + 2 + 4 * i, &l16, 2);
        l16 = (uint16_t)p->tagv[i].len;
        memcpy(lens + 4 + 4 * i, &l16, 2);
    }
    put_point_key_write(lens + 2 * (size_t)nn, p);
    size_t i = hash & (c->nslots - 1);
    while (c->slots[i].off1)
        i = (i + 1) & (c->nslots - 1);
    c->slots[i] = (struct prom_sc_slot){hash, c->used + 1};
    c->used += need;
    c->count++;
    pthread_rwlock_unlock(&c->mu);
}

size_t prom_series_cache_count(struct prom_series_cache *c)
{
    pthread_rwlock_rdlock(&c->mu);
    size_t n = c->count;
    pthread_rwlock_unlock(&c->mu);
    return n;
}

enum prom_value_class prom_value_class(double v)
{
    if (isnan(v)) {
        uint64_t bits;
        memcpy(&bits, &v, sizeof(bits));
        return bits == 0x7ff0000000000002ULL ? PROM_VALUE_STALE : PROM_VALUE_NAN;
    }
    return isinf(v) ? PROM_VALUE_INF : PROM_VALUE_OK;
}

void prom_value_text(double v, char *out, size_t cap)
{
    if (v == floor(v) && fabs(v) <= 9007199254740992.0 && !(v == 0 && signbit(v)))
        snprintf(out, cap, "%lld", (long long)v);
    else
        snprintf(out, cap, "%.17g", v);
}

struct put_value prom_value_put(double v)
{
    struct put_value pv = {0};
    if (v == floor(v) && fabs(v) < 1e17) {
        pv.kind = PUT_INT;
        pv.i = (int64_t)v;
    } else {
        pv.kind = (double)(float)v == v ? PUT_FLOAT : PUT_DOUBLE;
        pv.d = v;
    }
    return pv;
}

/* ---- matchers --------------------------------------------------------------------------- */

struct prom_matcher {
    int type; /* PROMETHEUS__LABEL_MATCHER__TYPE__* */
    char *name, *value;
    pcre2_code *re;
};

struct prom_matchers {
    struct prom_matcher *m;
    size_t n;
    pcre2_match_data *md;
};

void prom_matchers_free(struct prom_matchers *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->m[i].name);
        free(m->m[i].value);
        pcre2_code_free(m->m[i].re);
    }
    free(m->m);
    pcre2_match_data_free(m->md);
    free(m);
}

struct prom_matchers *prom_matchers_new(const Prometheus__Query *q, char *msg, size_t msg_size)
{
    struct prom_matchers *m = calloc(1, sizeof(*m));
    if (!m || !(m->m = calloc(q->n_matchers ? q->n_matchers : 1, sizeof(*m->m))) ||
        !(m->md = pcre2_match_data_create(1, NULL))) {
        snprintf(msg, msg_size, "out of memory");
        prom_matchers_free(m);
        return NULL;
    }
    for (size_t i = 0; i < q->n_matchers; i++) {
        const Prometheus__LabelMatcher *lm = q->matchers[i];
        struct prom_matcher *x = &m->m[m->n++];
        x->type = (int)lm->type;
        x->name = strdup(lm->name ? lm->name : "");
        x->value = strdup(lm->value ? lm->value : "");
        if (!x->name || !x->value) {
            snprintf(msg, msg_size, "out of memory");
            goto fail;
        }
        if (x->type < 0 || x->type > 3) {
            snprintf(msg, msg_size, "unknown matcher type %d", x->type);
            goto fail;
        }
        if (x->type == PROMETHEUS__LABEL_MATCHER__TYPE__RE ||
            x->type == PROMETHEUS__LABEL_MATCHER__TYPE__NRE) {
            size_t pl = strlen(x->value) + 8;
            char *pat = malloc(pl);
            if (!pat) {
                snprintf(msg, msg_size, "out of memory");
                goto fail;
            }
            snprintf(pat, pl, "^(?:%s)$", x->value);
            int ec;
            PCRE2_SIZE eo;
            x->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED,
                                  PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &ec, &eo, NULL);
            free(pat);
            if (!x->re) {
                char e[128];
                pcre2_get_error_message(ec, (PCRE2_UCHAR *)e, sizeof(e));
                snprintf(msg, msg_size, "bad regular expression for label '%s': %s", x->name,
                         e);
                goto fail;
            }
        }
    }
    return m;
fail:
    prom_matchers_free(m);
    return NULL;
}

const char *prom_matchers_metric(const struct prom_matchers *m)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->m[i].type == PROMETHEUS__LABEL_MATCHER__TYPE__EQ &&
            !strcmp(m->m[i].name, "__name__") && m->m[i].value[0])
            return m->m[i].value;
    return NULL;
}

bool prom_matchers_match(const struct prom_matchers *m, const char *const *name,
                         const char *const *value, size_t n)
{
    for (size_t i = 0; i < m->n; i++) {
        const struct prom_matcher *x = &m->m[i];
        const char *v = "";
        for (size_t k = 0; k < n; k++)
            if (!strcmp(name[k], x->name)) {
                v = value[k];
                break;
            }
        bool ok;
        switch (x->type) {
        case PROMETHEUS__LABEL_MATCHER__TYPE__EQ:
            ok = !strcmp(v, x->value);
            break;
        case PROMETHEUS__LABEL_MATCHER__TYPE__NEQ:
            ok = strcmp(v, x->value) != 0;
            break;
        default:
            ok = pcre2_match(x->re, (PCRE2_SPTR)v, strlen(v), 0, 0, m->md, NULL) >= 0;
            if (x->type == PROMETHEUS__LABEL_MATCHER__TYPE__NRE)
                ok = !ok;
            break;
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- the read response ------------------------------------------------------------------ */

struct prom_read_builder {
    Prometheus__ReadResponse resp;
    size_t *cap_series; /* per result: capacity of its timeseries array */
    Prometheus__TimeSeries *cur;
    size_t cur_q;
    size_t cap_samples; /* of cur */
    uint64_t samples;
};

struct prom_read_builder *prom_rb_new(size_t nqueries)
{
    struct prom_read_builder *rb = calloc(1, sizeof(*rb));
    if (!rb)
        return NULL;
    prometheus__read_response__init(&rb->resp);
    rb->resp.results = calloc(nqueries ? nqueries : 1, sizeof(*rb->resp.results));
    rb->cap_series = calloc(nqueries ? nqueries : 1, sizeof(*rb->cap_series));
    if (!rb->resp.results || !rb->cap_series) {
        prom_rb_free(rb);
        return NULL;
    }
    for (size_t i = 0; i < nqueries; i++) {
        Prometheus__QueryResult *qr = calloc(1, sizeof(*qr));
        if (!qr) {
            prom_rb_free(rb);
            return NULL;
        }
        prometheus__query_result__init(qr);
        rb->resp.results[rb->resp.n_results++] = qr;
    }
    return rb;
}

static void prom_series_free(Prometheus__TimeSeries *ts)
{
    for (size_t i = 0; i < ts->n_labels; i++) {
        free(ts->labels[i]->name);
        free(ts->labels[i]->value);
        free(ts->labels[i]);
    }
    free(ts->labels);
    if (ts->n_samples)
        free(ts->samples[0]); /* one array holds every sample (see prom_rb_sample) */
    free(ts->samples);
    free(ts);
}

void prom_rb_free(struct prom_read_builder *rb)
{
    if (!rb)
        return;
    for (size_t q = 0; q < rb->resp.n_results; q++) {
        Prometheus__QueryResult *qr = rb->resp.results[q];
        for (size_t i = 0; i < qr->n_timeseries; i++)
            prom_series_free(qr->timeseries[i]);
        free(qr->timeseries);
        free(qr);
    }
    free(rb->resp.results);
    free(rb->cap_series);
    free(rb);
}

static int prom_label_cmp(const void *a, const void *b)
{
    const Prometheus__Label *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

bool prom_rb_series(struct prom_read_builder *rb, size_t qi, const char *const *name,
                    const char *const *value, size_t n)
{
    Prometheus__QueryResult *qr = rb->resp.results[qi];
    if (qr->n_timeseries == rb->cap_series[qi]) {
        size_t nc = rb->cap_series[qi] ? rb->cap_series[qi] * 2 : 16;
        Prometheus__TimeSeries **ns = realloc(qr->timeseries, nc * sizeof(*ns));
        if (!ns)
            return false;
        qr->timeseries = ns;
        rb->cap_series[qi] = nc;
    }
    Prometheus__TimeSeries *ts = calloc(1, sizeof(*ts));
    if (!ts)
        return false;
    prometheus__time_series__init(ts);
    ts->labels = calloc(n ? n : 1, sizeof(*ts->labels));
    if (!ts->labels) {
        free(ts);
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        Prometheus__Label *l = calloc(1, sizeof(*l));
        if (!l) {
            prom_series_free(ts);
            return false;
        }
        prometheus__label__init(l);
        l->name = strdup(name[i]);
        l->value = strdup(value[i]);
        ts->labels[ts->n_labels++] = l;
        if (!l->name || !l->value) {
            prom_series_free(ts);
            return false;
        }
    }
    qsort(ts->labels, ts->n_labels, sizeof(*ts->labels), prom_label_cmp);
    qr->timeseries[qr->n_timeseries++] = ts;
    rb->cur = ts;
    rb->cur_q = qi;
    rb->cap_samples = 0;
    return true;
}

/* Samples of a series live in one array (samples[0] is its start); samples[i] points into it
 * and is re-pointed when the array moves. */
bool prom_rb_sample(struct prom_read_builder *rb, int64_t ts_ms, double v)
{
    Prometheus__TimeSeries *ts = rb->cur;
    if (!ts)
        return false;
    if (ts->n_samples == rb->cap_samples) {
        size_t nc = rb->cap_samples ? rb->cap_samples * 2 : 64;
        Prometheus__Sample *old = ts->n_samples ? ts->samples[0] : NULL;
        Prometheus__Sample *arr = realloc(old, nc * sizeof(*arr));
        if (!arr)
            return false;
        Prometheus__Sample **ptrs = realloc(ts->samples, nc * sizeof(*ptrs));
        if (!ptrs) {
            /* keep the structure consistent: the (moved) array is still samples[0..n) */
            if (ts->n_samples == 0)
                free(arr);
            for (size_t i = 0; i < ts->n_samples; i++)
                ts->samples[i] = &arr[i];
            return false;
        }
        ts->samples = ptrs;
        for (size_t i = 0; i < ts->n_samples; i++)
            ts->samples[i] = &arr[i];
        if (ts->n_samples == 0)
            ts->samples[0] = arr; /* the sample below makes n_samples 1 before any return */
        rb->cap_samples = nc;
    }
    Prometheus__Sample *arr = ts->samples[0];
    Prometheus__Sample *s = &arr[ts->n_samples];
    prometheus__sample__init(s);
    s->timestamp = ts_ms;
    s->value = v;
    ts->samples[ts->n_samples++] = s;
    rb->samples++;
    return true;
}

void prom_rb_drop_series(struct prom_read_builder *rb)
{
    if (!rb->cur)
        return;
    Prometheus__QueryResult *qr = rb->resp.results[rb->cur_q];
    if (qr->n_timeseries > 0 && qr->timeseries[qr->n_timeseries - 1] == rb->cur) {
        rb->samples -= rb->cur->n_samples;
        prom_series_free(rb->cur);
        qr->n_timeseries--;
    }
    rb->cur = NULL;
}

uint64_t prom_rb_samples(const struct prom_read_builder *rb)
{
    return rb->samples;
}

bool prom_rb_finish(struct prom_read_builder *rb, char **out, size_t *out_len)
{
    size_t n = prometheus__read_response__get_packed_size(&rb->resp);
    uint8_t *raw = malloc(n ? n : 1);
    if (!raw)
        return false;
    prometheus__read_response__pack(&rb->resp, raw);
    bool ok = prom_snappy_encode(raw, n, out, out_len);
    free(raw);
    return ok;
}
