/* ui.h: the web view (docs/ui.md), served by the HTTP thread at /ui/.
 *
 * Owns the routes /ui and /ui/<file>: the files of collector/ui/, built into
 * the binary by embed_ui.cmake (no file is read at run time, nothing is
 * fetched from another site: the Content-Security-Policy allows this origin
 * only), each sent with the Content-Type of its extension. The pages read the
 * JSON API from the browser; the bearer token reaches them as auth.h says
 * (a ?token= on any /ui/ page sets the session cookie). A request without it
 * gets a 401 page that says how to pass it.
 */
#ifndef NCCLSCOPE_COLLECTOR_UI_H
#define NCCLSCOPE_COLLECTOR_UI_H

#include <stddef.h>

struct evhttp_request;

/* One embedded file: its path under collector/ui/ and its bytes. */
typedef struct nsc_ui_asset {
    const char *name;
    const unsigned char *data;
    size_t len;
} nsc_ui_asset;

/* Every embedded file, ended by a {NULL} entry (generated: ui_assets.c). */
extern const nsc_ui_asset nsc_ui_assets[];

/* 1 if path is the web view's: /ui or under /ui/. */
int nsc_ui_path(const char *path);
/* Answer a GET of a web view path: the file, a redirect from /ui to /ui/,
 * 401 without the token (token: the configured one, "" for none), 404. */
void nsc_ui_serve(struct evhttp_request *req, const char *path, const char *qs, const char *token);

#endif
