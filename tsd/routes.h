/* routes.h - the HTTP route table: which handler answers which path and methods.
 *
 * The table itself is tsd/routes.def, one line per route:
 *     ROUTE("/api/put", HTTP_POST, api_put_handle)
 *     ROUTE_PREFIX("/api/uid/", HTTP_GET | HTTP_POST, api_uid_handle)
 * ROUTE matches the normalised path exactly (http.h: `/api/v1/x` == `/api/x`, trailing slash
 * removed); ROUTE_PREFIX matches every path that starts with its prefix (which ends in '/'),
 * and the handler reads the rest from http_req_path(). Exact routes win over prefix routes,
 * longer prefixes over shorter. Including this header declares every handler of the table as
 * `void fn(struct http_req *r)`, so a handler's file includes routes.h and defines it: adding
 * a route is one line in routes.def and the handler in its own tsd/api_*.c.
 *
 * Dispatch (routes.c), in order: OPTIONS with CORS enabled -> 200 preflight (disabled -> 405);
 * a method outside GET/POST/PUT/DELETE/OPTIONS/HEAD -> 405; a path under /api with no route ->
 * 404 {"error":{"code":404,"message":"Endpoint not found"}}; a route without that method ->
 * 405 "Method not allowed" with OpenTSDB's details; any other path -> the static file server
 * (web/, tsd.http.staticroot). HEAD is served as GET without a body. */
#ifndef CT_TSD_ROUTES_H
#define CT_TSD_ROUTES_H

#include <stdbool.h>

#include "tsd/http.h"

typedef void (*routes_handler_fn)(struct http_req *r);

#define ROUTE(path, methods, fn)        void fn(struct http_req *r);
#define ROUTE_PREFIX(path, methods, fn) void fn(struct http_req *r);
#include "tsd/routes.def"
#undef ROUTE
#undef ROUTE_PREFIX

/* Handles one complete request on the event-loop thread: CORS, method checks, route lookup,
 * 404/405 replies, static files. */
void routes_dispatch(struct http_req *r);

/* Serves a file under the static root (tsd/static.c); exported for routes.c. */
void static_serve(struct http_req *r);

#endif
