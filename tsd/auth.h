/* auth.h - the TSD's security basics: who may write and who may run admin actions.
 *
 * Off by default, like OpenTSDB: with no token and no allow-list every client may read and
 * write. Three settings (docs/security.md):
 *   - tsd.core.auth.token (or tsd.core.auth.token_file): a shared secret. HTTP writes need
 *     `Authorization: Bearer <token>` (or `Authorization: Basic` with the token as password);
 *     a telnet connection sends `auth <token>` once before its writes. Compared in constant
 *     time.
 *   - tsd.core.auth.allow: a comma list of addresses and CIDRs (`127.0.0.1/32,10.0.0.0/8,::1`)
 *     that may write; other clients are refused (403 / one telnet line).
 *   - tsd.core.enable_admin: `false` (the default: admin actions refused), `loopback` (only from
 *     loopback clients) or `true`. Admin = /api/dropcaches, telnet dropcaches, diediedie.
 * Reads (queries, suggest, version, stats, static files) are never restricted.
 *
 * Classes of requests: READ (always allowed), WRITE (token + allow-list), ADMIN (enable_admin +
 * token + allow-list). The check order is: admin enabled, then address, then token.
 *
 * An auth is built once from the configuration in tsd_run() and is read-only afterwards, so
 * any thread may use it. A telnet connection keeps its login state in a struct auth_session
 * held by value (zero it when the connection starts). */
#ifndef CT_TSD_AUTH_H
#define CT_TSD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "storage/ct_err.h"
#include "tsd/http.h"

struct conf;

enum auth_class {
    AUTH_READ = 0,
    AUTH_WRITE = 1,
    AUTH_ADMIN = 2,
};

enum auth_admin_mode {
    AUTH_ADMIN_OFF = 0,
    AUTH_ADMIN_LOOPBACK = 1,
    AUTH_ADMIN_ON = 2,
};

/* The outcome of a check. HTTP status: NO_TOKEN and BAD_TOKEN 401, the others 403. */
enum auth_verdict {
    AUTH_OK = 0,
    AUTH_NO_TOKEN = 1,        /* a token is required and none was sent */
    AUTH_BAD_TOKEN = 2,       /* the token sent does not match */
    AUTH_ADDR_REFUSED = 3,    /* the client's address is not in the allow-list */
    AUTH_ADMIN_DISABLED = 4,  /* tsd.core.enable_admin=false */
    AUTH_ADMIN_NOT_LOCAL = 5, /* tsd.core.enable_admin=loopback and the client is remote */
};

/* ---- addresses and the allow-list ---------------------------------------------------------- */

/* A client address, held by value: IPv4 as family 4 in bytes[0..3], IPv6 as family 6. An
 * IPv4-mapped IPv6 address (::ffff:a.b.c.d) is stored as the IPv4 address. */
struct auth_addr {
    int family; /* 4 or 6; 0 = unknown */
    uint8_t bytes[16];
};

/* Parses a numeric address ("10.1.2.3", "::1", "::ffff:10.1.2.3"). Returns CT_OK or
 * CT_EINVAL (out zeroed). */
CT_MUST_CHECK int auth_addr_parse(const char *s, struct auth_addr *out);
/* Parses the peer string of a connection, "ip:port" (as tsd.c writes it, IPv6 without
 * brackets: "::1:5555"); the port is dropped. */
CT_MUST_CHECK int auth_addr_from_peer(const char *peer, struct auth_addr *out);
/* True for 127.0.0.0/8 and ::1 (and ::ffff:127.x.y.z). */
bool auth_addr_is_loopback(const struct auth_addr *a);

struct auth_acl; /* opaque: a parsed allow-list */

/* Parses a list of entries separated by commas and/or spaces, each an address with an
 * optional /prefix (`10.0.0.0/8`, `::1`, `fe80::/10`; no prefix = the single address). An
 * IPv4 entry also matches the IPv4-mapped IPv6 form. Returns a new acl, freed with
 * auth_acl_free() (an empty list gives an acl with no entries); a bad entry is CT_EINVAL
 * naming it (bits set below the prefix, e.g. 10.0.0.1/8, are an error too). */
CT_MUST_CHECK int auth_acl_parse(const char *list, struct auth_acl **out, struct ct_err *err);
void auth_acl_free(struct auth_acl *acl); /* accepts NULL */
size_t auth_acl_count(const struct auth_acl *acl);
/* True if the address is covered by an entry. An unknown address (family 0) never matches. */
bool auth_acl_match(const struct auth_acl *acl, const struct auth_addr *a);

/* ---- tokens ---------------------------------------------------------------------------------- */

/* Compares a received token with the expected one in time that depends only on want_len
 * (never on where they differ). False if either is empty. */
bool auth_token_equal(const char *want, size_t want_len, const char *got, size_t got_len);
/* Extracts the credential of an Authorization header value: `Bearer <token>` gives the token,
 * `Basic base64(user:password)` gives the password (scheme names case-insensitive). Copies it
 * NUL-terminated into out (cap bytes) and sets *len. False when the header has no usable
 * credential (other scheme, bad base64, too long for out). */
bool auth_header_credential(const char *value, char *out, size_t cap, size_t *len);

/* ---- the daemon's settings and checks ---------------------------------------------------------- */

struct auth; /* opaque */

/* Builds the settings from tsd.core.auth.token, tsd.core.auth.token_file, tsd.core.auth.allow
 * and tsd.core.enable_admin. Returns a new auth, freed with auth_free(); a bad allow-list, an
 * unreadable or empty token file, or both token keys set is CT_EINVAL naming the key. */
CT_MUST_CHECK int auth_new(const struct conf *c, struct auth **out, struct ct_err *err);
void auth_free(struct auth *a); /* accepts NULL */
/* True if writes need a token. */
bool auth_token_required(const struct auth *a);
/* One line describing the settings, for the start-up log (never contains the token). */
void auth_describe(const struct auth *a, char *out, size_t cap);

/* The verdict for a request of class cls from peer, which sent a token (token NULL = none)
 * or, for telnet, has already logged in (token_ok). */
enum auth_verdict auth_check(const struct auth *a, enum auth_class cls,
                             const struct auth_addr *peer, const char *token, size_t token_len,
                             bool token_ok);
/* A sentence saying why a verdict refused (for error details and telnet lines), written to
 * out; peer_host may be NULL. */
void auth_verdict_reason(enum auth_verdict v, const char *peer_host, char *out, size_t cap);

/* The class of an HTTP request by its normalised path and method (after method_override);
 * tsmeta_create: `create=true` was given (GET /api/uid/tsmeta then creates). */
enum auth_class auth_http_classify(const char *path, enum http_method m, bool tsmeta_create);

/* True if a configuration key holds a secret (its value is hidden by /api/config). */
bool auth_conf_key_secret(const char *key);

/* ---- glue for the protocol code --------------------------------------------------------------- */

/* Checks request r by its route (auth_http_classify). Returns true if it may go on; otherwise
 * it has already replied with OpenTSDB's error object (401 with WWW-Authenticate, or 403).
 * Loop thread, before the handler runs. */
bool auth_http_permit(struct http_req *r);
/* The same for an explicit class (e.g. a query that turned out to delete data). */
bool auth_http_permit_as(struct http_req *r, enum auth_class cls);

/* A telnet connection's state; zero it when the connection starts. */
struct auth_session {
    bool token_ok; /* `auth <token>` succeeded */
    uint8_t addr;  /* 0 not looked up yet, 1 parsed, 2 unparseable */
    struct auth_addr peer;
};

/* Checks a telnet command of class cls for the connection whose peer string is peer. Returns
 * true if allowed; otherwise writes the reason ("unauthorized: ...", "forbidden: ...") to why. */
bool auth_telnet_permit(const struct auth *a, struct auth_session *s, const char *peer,
                        enum auth_class cls, char *why, size_t cap);
/* Handles `auth <arg>` (arg is the rest of the line after "auth", len bytes, may start with
 * spaces): returns the reply line without newline, "AUTH_SUCCESS." or "AUTH_FAIL" (OpenTSDB
 * 2.4's words); a failed attempt also clears an earlier login. With no token configured every
 * attempt succeeds. */
const char *auth_telnet_login(const struct auth *a, struct auth_session *s, const char *arg,
                              size_t len);

#endif
