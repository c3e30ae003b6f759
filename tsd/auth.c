/* auth.c - the TSD's optional write/admin protection (see auth.h and docs/security.md).
 *
 * Invariants: (1) an auth is immutable after auth_new(), so every thread reads it without a
 * lock; (2) the token is never logged, never shown by /api/config (auth_conf_key_secret) and
 * compared only through auth_token_equal(), whose running time depends on the expected
 * token's length alone; (3) allow-list entries are stored masked (no bits below the prefix),
 * so a match is a masked compare of the first `bits` bits; (4) READ requests are never
 * refused, whatever the settings; (5) with no token, no allow-list and enable_admin=true or
 * a loopback client, every check returns AUTH_OK (OpenTSDB's open default).
 *
 * Routes that write are listed in auth_routes[] below: a new write or admin endpoint must be
 * added there, or it is treated as a read. */
#include "tsd/auth.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "storage/coding.h"
#include "tsd/conf.h"
#include "tsd/tlog.h"
#include "tsd/tsd.h"
#include "tsd/tsd_int.h"

#define AUTH_MAX_TOKEN 1024

/* ---- addresses ----------------------------------------------------------------------------- */

static const uint8_t auth_v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

int auth_addr_parse(const char *s, struct auth_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (!s || !*s)
        return CT_EINVAL;
    if (strchr(s, ':')) {
        struct in6_addr a6;
        if (inet_pton(AF_INET6, s, &a6) != 1)
            return CT_EINVAL;
        if (!memcmp(a6.s6_addr, auth_v4_mapped_prefix, 12)) {
            out->family = 4;
            memcpy(out->bytes, a6.s6_addr + 12, 4);
        } else {
            out->family = 6;
            memcpy(out->bytes, a6.s6_addr, 16);
        }
        return CT_OK;
    }
    struct in_addr a4;
    if (inet_pton(AF_INET, s, &a4) != 1)
        return CT_EINVAL;
    out->family = 4;
    memcpy(out->bytes, &a4.s_addr, 4); /* network order: bytes[0] is the first octet */
    return CT_OK;
}

int auth_addr_from_peer(const char *peer, struct auth_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (!peer)
        return CT_EINVAL;
    const char *colon = strrchr(peer, ':');
    size_t n = colon ? (size_t)(colon - peer) : strlen(peer);
    char host[64];
    if (n == 0 || n >= sizeof(host))
        return CT_EINVAL;
    memcpy(host, peer, n);
    host[n] = '\0';
    if (host[0] == '[' && host[n - 1] == ']') { /* tolerate "[::1]:port" */
        memmove(host, host + 1, n - 2);
        host[n - 2] = '\0';
    }
    return auth_addr_parse(host, out);
}

bool auth_addr_is_loopback(const struct auth_addr *a)
{
    if (a->family == 4)
        return a->bytes[0] == 127;
    if (a->family == 6) {
        static const uint8_t one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        return !memcmp(a->bytes, one, 16);
    }
    return false;
}

/* ---- the allow-list ------------------------------------------------------------------------ */

struct auth_acl_entry {
    struct auth_addr addr; /* masked to bits (3) */
    int bits;
};

struct auth_acl {
    struct auth_acl_entry *entries;
    size_t n, cap;
};

/* True if the first `bits` bits of a and b are equal. */
static bool auth_prefix_equal(const uint8_t *a, const uint8_t *b, int bits)
{
    int full = bits / 8, rest = bits % 8;
    if (full > 0 && memcmp(a, b, (size_t)full) != 0)
        return false;
    if (rest == 0)
        return true;
    uint8_t mask = (uint8_t)(0xff << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

static int auth_acl_add(struct auth_acl *acl, const char *entry, struct ct_err *err)
{
    char buf[128];
    size_t n = strlen(entry);
    if (n >= sizeof(buf))
        return ct_err_set(err, CT_EINVAL, "bad allow-list entry '%.64s...': too long", entry);
    memcpy(buf, entry, n + 1);
    int bits = -1;
    char *slash = strchr(buf, '/');
    if (slash) {
        *slash = '\0';
        char *end;
        errno = 0;
        long v = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || *end != '\0' || errno != 0 || v < 0 || v > 128 ||
            !isdigit((unsigned char)slash[1]))
            return ct_err_set(
                err, CT_EINVAL,
                "bad allow-list entry '%s': the prefix length must be a number from 0 to 128",
                entry);
        bits = (int)v;
    }
    struct auth_acl_entry e;
    if (auth_addr_parse(buf, &e.addr) != CT_OK)
        return ct_err_set(err, CT_EINVAL, "bad allow-list entry '%s': not an IPv4 or IPv6 address",
                          entry);
    /* An IPv4-mapped entry keeps its IPv6 prefix length semantics: ::ffff:10.0.0.0/104 is
     * 10.0.0.0/8. */
    bool mapped = e.addr.family == 4 && strchr(buf, ':') != NULL;
    int maxbits = e.addr.family == 4 ? 32 : 128;
    if (bits < 0)
        bits = mapped ? 128 : maxbits;
    if (mapped) {
        if (bits < 96)
            return ct_err_set(err, CT_EINVAL,
                              "bad allow-list entry '%s': an IPv4-mapped prefix must be >= 96",
                              entry);
        bits -= 96;
    }
    if (bits > maxbits)
        return ct_err_set(err, CT_EINVAL, "bad allow-list entry '%s': prefix longer than %d bits",
                          entry, maxbits);
    struct auth_addr masked = e.addr;
    memset(masked.bytes, 0, sizeof(masked.bytes));
    for (int i = 0; i < bits; i++)
        if (e.addr.bytes[i / 8] & (0x80 >> (i % 8)))
            masked.bytes[i / 8] |= (uint8_t)(0x80 >> (i % 8));
    if (memcmp(masked.bytes, e.addr.bytes, sizeof(masked.bytes)) != 0)
        return ct_err_set(err, CT_EINVAL,
                          "bad allow-list entry '%s': address bits set beyond the /%d prefix",
                          entry, bits + (mapped ? 96 : 0));
    e.bits = bits;
    if (acl->n == acl->cap) {
        size_t ncap = acl->cap ? acl->cap * 2 : 8;
        struct auth_acl_entry *ne = realloc(acl->entries, ncap * sizeof(*ne));
        if (!ne)
            return ct_err_set(err, CT_ENOMEM, "out of memory parsing the allow-list");
        acl->entries = ne;
        acl->cap = ncap;
    }
    acl->entries[acl->n++] = e;
    return CT_OK;
}

int auth_acl_parse(const char *list, struct auth_acl **out, struct ct_err *err)
{
    struct auth_acl *acl = calloc(1, sizeof(*acl));
    if (!acl)
        return ct_err_set(err, CT_ENOMEM, "out of memory parsing the allow-list");
    const char *p = list ? list : "";
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p))
            p++;
        const char *e = p;
        while (*e && *e != ',' && !isspace((unsigned char)*e))
            e++;
        if (e == p)
            break;
        char entry[160];
        size_t n = (size_t)(e - p);
        if (n >= sizeof(entry)) {
            auth_acl_free(acl);
            return ct_err_set(err, CT_EINVAL, "bad allow-list entry '%.64s...': too long", p);
        }
        memcpy(entry, p, n);
        entry[n] = '\0';
        int rc = auth_acl_add(acl, entry, err);
        if (rc != CT_OK) {
            auth_acl_free(acl);
            return rc;
        }
        p = e;
    }
    *out = acl;
    return CT_OK;
}

void auth_acl_free(struct auth_acl *acl)
{
    if (!acl)
        return;
    free(acl->entries);
    free(acl);
}

size_t auth_acl_count(const struct auth_acl *acl)
{
    return acl ? acl->n : 0;
}

bool auth_acl_match(const struct auth_acl *acl, const struct auth_addr *a)
{
    if (!acl || a->family == 0)
        return false;
    for (size_t i = 0; i < acl->n; i++) {
        const struct auth_acl_entry *e = &acl->entries[i];
        if (e->addr.family == a->family && auth_prefix_equal(e->addr.bytes, a->bytes, e->bits))
            return true;
    }
    return false;
}

/* ---- tokens ------------------------------------------------------------------------------- */

bool auth_token_equal(const char *want, size_t want_len, const char *got, size_t got_len)
{
    if (want_len == 0 || got_len == 0)
        return false;
    /* (2): one pass over the expected token whatever `got` holds; the length difference is
     * folded into the same accumulator. */
    volatile unsigned char diff = (unsigned char)(want_len != got_len);
    for (size_t i = 0; i < want_len; i++) {
        unsigned char g = i < got_len ? (unsigned char)got[i] : 0;
        diff |= (unsigned char)(g ^ (unsigned char)want[i]);
    }
    return diff == 0;
}

bool auth_header_credential(const char *value, char *out, size_t cap, size_t *len)
{
    if (!value || cap == 0)
        return false;
    while (*value == ' ' || *value == '\t')
        value++;
    const char *sp = value;
    while (*sp && *sp != ' ' && *sp != '\t')
        sp++;
    size_t scheme = (size_t)(sp - value);
    const char *arg = sp;
    while (*arg == ' ' || *arg == '\t')
        arg++;
    size_t alen = strlen(arg);
    while (alen > 0 && (arg[alen - 1] == ' ' || arg[alen - 1] == '\t'))
        alen--;
    if (alen == 0)
        return false;
    if (scheme == 6 && !strncasecmp(value, "Bearer", 6)) {
        if (alen >= cap)
            return false;
        memcpy(out, arg, alen);
        out[alen] = '\0';
        *len = alen;
        return true;
    }
    if (scheme == 5 && !strncasecmp(value, "Basic", 5)) {
        unsigned char dec[AUTH_MAX_TOKEN * 2 + 8];
        long n = coding_base64_decode(arg, alen, dec, sizeof(dec));
        if (n < 0)
            return false;
        const unsigned char *colon = memchr(dec, ':', (size_t)n);
        if (!colon)
            return false;
        size_t plen = (size_t)n - (size_t)(colon + 1 - dec);
        if (plen == 0 || plen >= cap || memchr(colon + 1, '\0', plen))
            return false;
        memcpy(out, colon + 1, plen);
        out[plen] = '\0';
        *len = plen;
        return true;
    }
    return false;
}

/* ---- settings ------------------------------------------------------------------------------- */

struct auth {
    char *token; /* NULL = no token required */
    size_t token_len;
    struct auth_acl *allow; /* NULL = no allow-list */
    enum auth_admin_mode admin;
};

static int auth_token_check(const char *key, const char *tok, size_t len, struct ct_err *err)
{
    if (len > AUTH_MAX_TOKEN)
        return ct_err_set(err, CT_EINVAL, "%s: the token is longer than %d bytes", key,
                          AUTH_MAX_TOKEN);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f)
            return ct_err_set(err, CT_EINVAL,
                              "%s: the token must be printable ASCII without spaces (byte %zu)",
                              key, i);
    return CT_OK;
}

static int auth_read_token_file(const char *path, char **out, size_t *len, struct ct_err *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ct_err_errno(err, CT_EINVAL, errno, "tsd.core.auth.token_file: cannot open %s",
                            path);
    char buf[AUTH_MAX_TOKEN + 2];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad)
        return ct_err_set(err, CT_EINVAL, "tsd.core.auth.token_file: cannot read %s", path);
    buf[n] = '\0';
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        buf[--n] = '\0';
    if (n == 0)
        return ct_err_set(err, CT_EINVAL, "tsd.core.auth.token_file: %s is empty", path);
    int rc = auth_token_check("tsd.core.auth.token_file", buf, n, err);
    if (rc != CT_OK)
        return rc;
    *out = strdup(buf);
    memset(buf, 0, sizeof(buf));
    if (!*out)
        return ct_err_set(err, CT_ENOMEM, "out of memory reading the token");
    *len = n;
    return CT_OK;
}

int auth_new(const struct conf *c, struct auth **out, struct ct_err *err)
{
    struct auth *a = calloc(1, sizeof(*a));
    if (!a)
        return ct_err_set(err, CT_ENOMEM, "out of memory for the auth settings");
    int rc = CT_OK;
    const char *tok = conf_get_str(c, "tsd.core.auth.token");
    const char *file = conf_get_str(c, "tsd.core.auth.token_file");
    if (*tok && *file) {
        rc = ct_err_set(err, CT_EINVAL,
                        "set tsd.core.auth.token or tsd.core.auth.token_file, not both");
        goto fail;
    }
    if (*tok) {
        a->token_len = strlen(tok);
        if ((rc = auth_token_check("tsd.core.auth.token", tok, a->token_len, err)) != CT_OK)
            goto fail;
        a->token = strdup(tok);
        if (!a->token) {
            rc = ct_err_set(err, CT_ENOMEM, "out of memory for the auth settings");
            goto fail;
        }
    } else if (*file) {
        if ((rc = auth_read_token_file(file, &a->token, &a->token_len, err)) != CT_OK)
            goto fail;
    }
    const char *allow = conf_get_str(c, "tsd.core.auth.allow");
    struct auth_acl *acl = NULL;
    if ((rc = auth_acl_parse(allow, &acl, err)) != CT_OK) {
        ct_err_prefix(err, "tsd.core.auth.allow");
        goto fail;
    }
    if (acl->n == 0)
        auth_acl_free(acl);
    else
        a->allow = acl;
    const char *adm = conf_get_str(c, "tsd.core.enable_admin");
    if (!strcmp(adm, "true"))
        a->admin = AUTH_ADMIN_ON;
    else if (!strcmp(adm, "false"))
        a->admin = AUTH_ADMIN_OFF;
    else
        a->admin = AUTH_ADMIN_LOOPBACK;
    *out = a;
    return CT_OK;
fail:
    auth_free(a);
    return rc;
}

void auth_free(struct auth *a)
{
    if (!a)
        return;
    if (a->token) {
        volatile char *p = a->token;
        for (size_t i = 0; i < a->token_len; i++)
            p[i] = 0;
        free(a->token);
    }
    auth_acl_free(a->allow);
    free(a);
}

bool auth_token_required(const struct auth *a)
{
    return a && a->token != NULL;
}

void auth_describe(const struct auth *a, char *out, size_t cap)
{
    static const char *const modes[] = {"false", "loopback", "true"};
    snprintf(out, cap,
             "writes need a token: %s; write allow-list: %s (%zu entries); "
             "admin actions (tsd.core.enable_admin): %s",
             a->token ? "yes" : "no", a->allow ? "yes" : "no (any address)",
             auth_acl_count(a->allow), modes[a->admin]);
}

enum auth_verdict auth_check(const struct auth *a, enum auth_class cls,
                             const struct auth_addr *peer, const char *token, size_t token_len,
                             bool token_ok)
{
    if (cls == AUTH_READ) /* (4) */
        return AUTH_OK;
    if (cls == AUTH_ADMIN) {
        if (a->admin == AUTH_ADMIN_OFF)
            return AUTH_ADMIN_DISABLED;
        if (a->admin == AUTH_ADMIN_LOOPBACK && !auth_addr_is_loopback(peer))
            return AUTH_ADMIN_NOT_LOCAL;
    }
    if (a->allow && !auth_acl_match(a->allow, peer))
        return AUTH_ADDR_REFUSED;
    if (a->token && !token_ok) {
        if (!token)
            return AUTH_NO_TOKEN;
        if (!auth_token_equal(a->token, a->token_len, token, token_len))
            return AUTH_BAD_TOKEN;
    }
    return AUTH_OK;
}

void auth_verdict_reason(enum auth_verdict v, const char *peer_host, char *out, size_t cap)
{
    const char *host = peer_host && *peer_host ? peer_host : "unknown";
    switch (v) {
    case AUTH_OK:
        snprintf(out, cap, "allowed");
        break;
    case AUTH_NO_TOKEN:
        snprintf(out, cap,
                 "a token is required (tsd.core.auth.token is set): send it with "
                 "'Authorization: Bearer <token>' (HTTP) or 'auth <token>' (telnet)");
        break;
    case AUTH_BAD_TOKEN:
        snprintf(out, cap, "the token sent does not match tsd.core.auth.token");
        break;
    case AUTH_ADDR_REFUSED:
        snprintf(out, cap, "client address %s is not in tsd.core.auth.allow", host);
        break;
    case AUTH_ADMIN_DISABLED:
        snprintf(out, cap, "admin actions are disabled (tsd.core.enable_admin=false)");
        break;
    case AUTH_ADMIN_NOT_LOCAL:
        snprintf(out, cap,
                 "admin actions are allowed from loopback clients only, not from %s "
                 "(tsd.core.enable_admin=loopback; set it to true to allow them)",
                 host);
        break;
    }
}

bool auth_conf_key_secret(const char *key)
{
    return !strcmp(key, "tsd.core.auth.token");
}

/* ---- routes ----------------------------------------------------------------------------------- */

enum auth_rule {
    AUTH_RULE_WRITE,            /* every method writes */
    AUTH_RULE_WRITE_UNLESS_GET, /* GET (and HEAD) read, other methods write */
    AUTH_RULE_ADMIN,
    AUTH_RULE_TSMETA, /* like WRITE_UNLESS_GET, and GET with create=true writes */
    AUTH_RULE_QUERY,  /* DELETE deletes data */
};

struct auth_route {
    const char *path;
    bool prefix; /* path ends in '/' and covers everything under it */
    enum auth_rule rule;
};

/* Every endpoint that writes or administers, OpenTSDB 2.4's included even where ctsdb has no
 * route yet, so a route added later is protected from the start. */
static const struct auth_route auth_routes[] = {
    {"/api/put", false, AUTH_RULE_WRITE},
    {"/write", false, AUTH_RULE_WRITE}, /* InfluxDB line protocol (api_influx.c) */
    {"/api/write", false, AUTH_RULE_WRITE}, /* Prometheus remote write (/api/v1/write) */
    {"/api/rollup", false, AUTH_RULE_WRITE},
    {"/api/histogram", false, AUTH_RULE_WRITE},
    {"/api/annotation", false, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/annotation/", true, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/annotations", false, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/annotations/", true, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/uid/assign", false, AUTH_RULE_WRITE},
    {"/api/uid/rename", false, AUTH_RULE_WRITE},
    {"/api/uid/uidmeta", false, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/uid/tsmeta", false, AUTH_RULE_TSMETA},
    {"/api/tree", false, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/tree/", true, AUTH_RULE_WRITE_UNLESS_GET},
    {"/api/query", false, AUTH_RULE_QUERY},
    {"/api/dropcaches", false, AUTH_RULE_ADMIN},
    {"/api/admin/snapshot", false, AUTH_RULE_ADMIN},
    {"/diediedie", false, AUTH_RULE_ADMIN},
    {"/api/diediedie", false, AUTH_RULE_ADMIN},
};

enum auth_class auth_http_classify(const char *path, enum http_method m, bool tsmeta_create)
{
    bool read_method = m == HTTP_GET || m == HTTP_HEAD || m == HTTP_OPTIONS;
    for (size_t i = 0; i < sizeof(auth_routes) / sizeof(auth_routes[0]); i++) {
        const struct auth_route *e = &auth_routes[i];
        if (e->prefix ? strncmp(path, e->path, strlen(e->path)) != 0 : strcmp(path, e->path) != 0)
            continue;
        switch (e->rule) {
        case AUTH_RULE_WRITE:
            return AUTH_WRITE;
        case AUTH_RULE_WRITE_UNLESS_GET:
            return read_method ? AUTH_READ : AUTH_WRITE;
        case AUTH_RULE_ADMIN:
            return AUTH_ADMIN;
        case AUTH_RULE_TSMETA:
            return read_method && !tsmeta_create ? AUTH_READ : AUTH_WRITE;
        case AUTH_RULE_QUERY:
            return m == HTTP_DELETE ? AUTH_WRITE : AUTH_READ;
        }
    }
    return AUTH_READ;
}

/* ---- HTTP glue -------------------------------------------------------------------------------- */

bool auth_http_permit_as(struct http_req *r, enum auth_class cls)
{
    const struct auth *a = http_req_tsd(r)->auth;
    if (!a || cls == AUTH_READ)
        return true;
    if (!a->token && !a->allow && (cls == AUTH_WRITE || a->admin == AUTH_ADMIN_ON))
        return true; /* (5): nothing to check */
    struct auth_addr peer;
    if (auth_addr_from_peer(http_req_peer(r), &peer) != CT_OK)
        memset(&peer, 0, sizeof(peer)); /* unknown: matches no allow-list entry */
    char tok[AUTH_MAX_TOKEN + 1];
    size_t tlen = 0;
    const char *hdr = http_req_header(r, "Authorization");
    bool have = hdr && auth_header_credential(hdr, tok, sizeof(tok), &tlen);
    enum auth_verdict v = auth_check(a, cls, &peer, have ? tok : NULL, tlen, false);
    memset(tok, 0, sizeof(tok));
    if (v == AUTH_OK)
        return true;
    char host[CT_ERR_MSG_MAX];
    snprintf(host, sizeof(host), "%s", http_req_peer(r));
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    char why[CT_ERR_MSG_MAX];
    auth_verdict_reason(v, host, why, sizeof(why));
    tlog_warn("auth: refused %s %s from %s: %s", http_req_method_name(r), http_req_path(r),
              http_req_peer(r), why);
    if (v == AUTH_NO_TOKEN || v == AUTH_BAD_TOKEN) {
        http_reply_header(r, "WWW-Authenticate", "Bearer realm=\"ctsdb\"");
        http_reply_error(r, 401, "Unauthorized", why);
    } else {
        http_reply_error(r, 403, "Forbidden", why);
    }
    return false;
}

bool auth_http_permit(struct http_req *r)
{
    const char *path = http_req_path(r);
    bool create = !strcmp(path, "/api/uid/tsmeta") && http_req_flag(r, "create");
    return auth_http_permit_as(r, auth_http_classify(path, http_req_method(r), create));
}

/* ---- telnet glue ------------------------------------------------------------------------------ */

bool auth_telnet_permit(const struct auth *a, struct auth_session *s, const char *peer,
                        enum auth_class cls, char *why, size_t cap)
{
    if (!a || cls == AUTH_READ)
        return true;
    if (!a->token && !a->allow && (cls == AUTH_WRITE || a->admin == AUTH_ADMIN_ON))
        return true; /* (5) */
    if (s->addr == 0)
        s->addr = auth_addr_from_peer(peer, &s->peer) == CT_OK ? 1 : 2;
    enum auth_verdict v = auth_check(a, cls, &s->peer, NULL, 0, s->token_ok);
    if (v == AUTH_OK)
        return true;
    char host[CT_ERR_MSG_MAX];
    snprintf(host, sizeof(host), "%s", peer ? peer : "");
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    char reason[CT_ERR_MSG_MAX];
    auth_verdict_reason(v, host, reason, sizeof(reason));
    bool unauth = v == AUTH_NO_TOKEN || v == AUTH_BAD_TOKEN || v == AUTH_ADDR_REFUSED;
    snprintf(why, cap, "%s: %s", unauth ? "unauthorized" : "forbidden", reason);
    return false;
}

const char *auth_telnet_login(const struct auth *a, struct auth_session *s, const char *arg,
                              size_t len)
{
    while (len > 0 && (*arg == ' ' || *arg == '\t')) {
        arg++;
        len--;
    }
    while (len > 0 && (arg[len - 1] == ' ' || arg[len - 1] == '\t' || arg[len - 1] == '\r'))
        len--;
    if (!a || !a->token) {
        s->token_ok = true;
        return "AUTH_SUCCESS.";
    }
    s->token_ok = auth_token_equal(a->token, a->token_len, arg, len);
    return s->token_ok ? "AUTH_SUCCESS." : "AUTH_FAIL";
}
