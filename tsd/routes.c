/* routes.c - request dispatch over the route table of routes.def (see routes.h for the order of
 * checks). CORS per tsd.http.request.cors_domains (docs/opentsdb-compat.md, "General rules"). With
 * tsd.core.enable_api or enable_ui false, every /api path or every other path answers 404: OpenTSDB
 * leaves those handlers out.
 * Invariant: every request leaves routes_dispatch() answered or deferred. */
#include "tsd/routes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tsd/auth.h"
#include "tsd/http_int.h"
#include "tsd/tsd_int.h"

struct routes_entry {
    const char *path;
    unsigned methods;
    routes_handler_fn fn;
    bool prefix;
};

static const struct routes_entry routes_table[] = {
#define ROUTE(path, methods, fn)        {path, (methods), fn, false},
#define ROUTE_PREFIX(path, methods, fn) {path, (methods), fn, true},
#include "tsd/routes.def"
#undef ROUTE
#undef ROUTE_PREFIX
};
#define ROUTES_N (sizeof(routes_table) / sizeof(routes_table[0]))

static const struct routes_entry *routes_lookup(const char *path)
{
    const struct routes_entry *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < ROUTES_N; i++) {
        const struct routes_entry *e = &routes_table[i];
        if (!e->prefix) {
            if (!strcmp(e->path, path))
                return e;
            continue;
        }
        size_t l = strlen(e->path);
        if (!strncmp(e->path, path, l) && l > best_len) {
            best = e;
            best_len = l;
        }
    }
    return best;
}

/* OpenTSDB routes /api/<endpoint>/<anything> to the endpoint (/api/version/query answers the
 * version): a path under /api with no route of its own takes the route of its longest parent
 * that has an exact one, and is cut to that parent in place, so that every later check (auth
 * classes, handlers) sees the route's own path. NULL (path unchanged) when no parent has one. */
static const struct routes_entry *routes_lookup_parent(char *path)
{
    for (char *p = path + strlen(path) - 1; p > path + 4; p--) { /* past "/api/" */
        if (*p != '/')
            continue;
        *p = '\0';
        const struct routes_entry *e = routes_lookup(path);
        if (e && !e->prefix)
            return e;
        *p = '/';
    }
    return NULL;
}

/* True if origin is allowed by the CORS list. */
static bool routes_cors_allowed(const struct tsd *t, const char *origin)
{
    if (t->cors_any)
        return true;
    size_t ol = strlen(origin);
    const char *p = t->cors_domains;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t l = comma ? (size_t)(comma - p) : strlen(p);
        if (l == ol && !strncasecmp(p, origin, l))
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

/* OpenTSDB's 405 for a method the endpoint does not take. */
static void method_not_allowed(struct http_req *r)
{
    char details[128]; /* OPTIONS without CORS: OpenTSDB's CORS check answers, in its words */
    snprintf(details, sizeof(details), "The HTTP method [%s] is not permitted%s",
             http_req_method_name(r), r->wire_method == HTTP_OPTIONS ? "" : " for this endpoint");
    http_reply_error(r, 405, "Method not allowed", details);
}

void routes_dispatch(struct http_req *r)
{
    struct tsd *t = r->conn->tsd;
    const char *origin = http_req_header(r, "Origin");
    if (t->cors_enabled && origin) {
        if (!routes_cors_allowed(t, origin)) {
            /* sized to the Origin header, so the domain arrives whole however long */
            static const char fmt[] = "The domain [%s] is not permitted access";
            size_t n = sizeof(fmt) + strlen(origin);
            char *why = malloc(n);
            if (why)
                snprintf(why, n, fmt, origin);
            http_reply_error(r, 200, "CORS domain not allowed",
                             why ? why : "The domain is not permitted access");
            free(why);
            return;
        }
        http_reply_header(r, "Access-Control-Allow-Origin", origin);
        http_reply_header(r, "Access-Control-Allow-Methods", "GET, POST, PUT, DELETE");
        http_reply_header(r, "Access-Control-Allow-Headers", t->cors_headers);
    }
    if (r->early_status && r->wire_method != HTTP_OPTIONS) { /* http_int.h */
        http_reply_error(r, r->early_status, r->early_msg, r->early_details);
        return;
    }
    if (r->wire_method == HTTP_OPTIONS) {
        if (t->cors_enabled && origin) { /* no Origin: 405 as in OpenTSDB ("General rules") */
            http_reply_status(r, 200);
            return;
        }
    }
    if (r->wire_method == 0 || r->wire_method == HTTP_OPTIONS) {
        method_not_allowed(r);
        return;
    }
    bool api = !strncmp(r->path, "/api", 4) && (r->path[4] == '/' || r->path[4] == '\0');
    if (api ? !t->enable_api : !t->enable_ui) { /* tsd.core.enable_api / enable_ui = false */
        http_reply_error(r, 404, "Endpoint not found", NULL);
        return;
    }
    const struct routes_entry *e = routes_lookup(r->path);
    if (!e && api)
        e = routes_lookup_parent(r->path);
    if (!e) {
        if (api) {
            http_reply_error(r, 404, "Endpoint not found", NULL);
            return;
        }
        if (r->method != HTTP_GET && r->method != HTTP_HEAD) {
            method_not_allowed(r);
            return;
        }
        static_serve(r);
        return;
    }
    unsigned m = r->method == HTTP_HEAD ? HTTP_GET : r->method;
    if (!(e->methods & m)) {
        method_not_allowed(r);
        return;
    }
    if (!auth_http_permit(r)) /* writes and admin actions (tsd/auth.h); it has replied */
        return;
    e->fn(r);
}
