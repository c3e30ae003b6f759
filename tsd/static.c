/* static.c - serves the dashboard files under the static root (tsd.http.staticroot, default
 * web/) for paths outside /api.
 *
 * Invariants: (1) nothing outside the root is ever read: the decoded path may not contain a
 * "." or ".." segment, a backslash or a NUL, and the file's resolved real path (symlinks
 * followed) must lie under the root's real path; (2) only regular files are served; (3) replies
 * carry a content type from the extension, Last-Modified and an ETag (size-mtime), and
 * If-None-Match gets 304; index.html is served for "/" and for directories. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tsd/http_int.h"
#include "tsd/routes.h"
#include "tsd/tsd_int.h"

#define STATIC_MAX_FILE (16u << 20)

static const char *static_type(const char *path)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=UTF-8"},
        {".htm", "text/html; charset=UTF-8"},
        {".js", "application/javascript; charset=UTF-8"},
        {".mjs", "application/javascript; charset=UTF-8"},
        {".css", "text/css; charset=UTF-8"},
        {".json", "application/json; charset=UTF-8"},
        {".map", "application/json; charset=UTF-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".jpg", "image/jpeg"},
        {".jpeg", "image/jpeg"},
        {".gif", "image/gif"},
        {".ico", "image/x-icon"},
        {".txt", "text/plain; charset=UTF-8"},
        {".woff", "font/woff"},
        {".woff2", "font/woff2"},
        {".wasm", "application/wasm"},
    };
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
            if (!strcasecmp(dot, types[i].ext))
                return types[i].type;
    return "application/octet-stream";
}

static void static_not_found(struct http_req *r)
{
    if (http_req_param(r, "json")) { /* OpenTSDB's pages answer ?json in JSON */
        static const char json[] = "{\"err\":\"Page Not Found\"}";
        http_reply_raw(r, 404, "application/json; charset=UTF-8", json, sizeof(json) - 1);
        return;
    }
    static const char page[] =
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>Page Not Found</title></head>"
        "<body><h2>Page Not Found</h2><p>The requested page was not found on this server."
        "</p></body></html>\n";
    http_reply_raw(r, 404, "text/html; charset=UTF-8", page, sizeof(page) - 1);
}

/* True if the decoded path is safe to join under the root. */
static bool static_path_ok(const char *p)
{
    if (p[0] != '/' || strchr(p, '\\'))
        return false;
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        const char *e = strchr(s, '/');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        if ((l == 1 && s[0] == '.') || (l == 2 && s[0] == '.' && s[1] == '.'))
            return false;
        s += l;
    }
    return true;
}

void static_serve(struct http_req *r)
{
    struct tsd *t = http_req_tsd(r);
    const char *path = r->path;
    if (!static_path_ok(path)) {
        static_not_found(r);
        return;
    }
    char root[PATH_MAX], want[PATH_MAX * 2], real[PATH_MAX];
    if (!realpath(t->static_root, root)) {
        static_not_found(r);
        return;
    }
    snprintf(want, sizeof(want), "%s%s", root, path);
    struct stat st;
    if (stat(want, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t l = strlen(want);
        snprintf(want + l, sizeof(want) - l, "%sindex.html", l && want[l - 1] == '/' ? "" : "/");
    }
    if (!realpath(want, real)) {
        static_not_found(r);
        return;
    }
    size_t rl = strlen(root);
    if (strncmp(real, root, rl) != 0 || (real[rl] != '/' && real[rl] != '\0')) {
        static_not_found(r);
        return;
    }
    int fd = open(real, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        static_not_found(r);
        return;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > STATIC_MAX_FILE) {
        close(fd);
        static_not_found(r);
        return;
    }
    char etag[64], lm[64];
    snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtime);
    struct tm tm;
    gmtime_r(&st.st_mtime, &tm);
    strftime(lm, sizeof(lm), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    http_reply_header(r, "ETag", etag);
    http_reply_header(r, "Last-Modified", lm);
    bool html = strstr(static_type(real), "text/html") != NULL;
    http_reply_header(r, "Cache-Control", html ? "no-cache" : "public, max-age=300");
    const char *inm = http_req_header(r, "If-None-Match");
    if (inm && !strcmp(inm, etag)) {
        close(fd);
        http_reply_status(r, 304);
        return;
    }
    size_t size = (size_t)st.st_size;
    char *buf = malloc(size ? size : 1);
    if (!buf) {
        close(fd);
        http_reply_error(r, 500, "out of memory reading a static file", NULL);
        return;
    }
    size_t got = 0;
    while (got < size) {
        ssize_t n = read(fd, buf + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != size) {
        free(buf);
        http_reply_error(r, 500, "cannot read static file", NULL);
        return;
    }
    http_reply_raw(r, 200, static_type(real), buf, size);
    free(buf);
}
