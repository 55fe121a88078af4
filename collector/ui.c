/* ui.c: the web view's files, served from the binary (see ui.h). */
#include "ui.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <string.h>

#include "auth.h"
#include "reply.h"

static const char *content_type(const char *name)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

static const nsc_ui_asset *find(const char *name)
{
    for (const nsc_ui_asset *a = nsc_ui_assets; a->name; a++)
        if (strcmp(a->name, name) == 0)
            return a;
    return NULL;
}

static void reply(struct evhttp_request *req, int code, const char *reason, const char *type, const void *data,
                 size_t len)
{
    struct evkeyvalq *hd = evhttp_request_get_output_headers(req);
    struct evbuffer *b = evbuffer_new();
    if (!b || evbuffer_add(b, data, len)) {
        if (b)
            evbuffer_free(b);
        return nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
    }
    evhttp_add_header(hd, "Content-Type", type);
    /* the pages load their own origin's files and API only; no other site */
    evhttp_add_header(hd, "Content-Security-Policy",
                      "default-src 'self'; img-src 'self' data: blob:; object-src 'none'; base-uri 'none'; "
                      "frame-ancestors 'none'");
    evhttp_add_header(hd, "X-Content-Type-Options", "nosniff");
    /* a ?token= in the address must not leave in a Referer header */
    evhttp_add_header(hd, "Referrer-Policy", "no-referrer");
    /* the files change with the binary: always ask again */
    evhttp_add_header(hd, "Cache-Control", "no-cache");
    evhttp_send_reply(req, code, reason, b);
    evbuffer_free(b);
}

static void unauthorized(struct evhttp_request *req)
{
    static const char page[] =
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>ncclscope: token needed</title></head>"
        "<body><h1>401: the collector needs its bearer token</h1>"
        "<p>Open this page once with <code>?token=TOKEN</code> appended (the first line of the collector's "
        "token file, percent-encoded): the collector then sets a session cookie and the token leaves the "
        "address bar. See docs/ui.md.</p></body></html>\n";
    evhttp_add_header(evhttp_request_get_output_headers(req), "WWW-Authenticate", "Bearer");
    reply(req, 401, "Unauthorized", "text/html; charset=utf-8", page, sizeof page - 1);
}

int nsc_ui_path(const char *path)
{
    return strncmp(path, "/ui", 3) == 0 && (path[3] == 0 || path[3] == '/');
}

void nsc_ui_serve(struct evhttp_request *req, const char *path, const char *qs, const char *token)
{
    if (!nsc_auth_login(req, qs, token) && !nsc_auth_ok(req, token))
        return unauthorized(req);
    if (path[3] == 0) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Location", "/ui/");
        return reply(req, 301, "Moved Permanently", "text/plain", "", 0);
    }
    const char *name = path[4] ? path + 4 : "index.html";
    const nsc_ui_asset *a = find(name);
    if (!a)
        return nsc_http_json_error(req, HTTP_NOTFOUND, "Not Found", "no such file in the web view");
    reply(req, HTTP_OK, "OK", content_type(a->name), a->data, a->len);
}
