/* source.h: where the CLI's answers come from.
 *
 * Owns the choice between a collector's HTTP API (--collector URL, bearer
 * token) and a store directory read in-process (--db DIR), behind one call:
 * "GET this endpoint with this query string and hand me the body". Both give
 * the same JSON bytes, so every verb renders from JSON in one code path.
 * Errors come back as one line fit to print after "ncclscope: ", and as
 * NSC_DIAG_USAGE (-2) when an option's value is at fault (a bad URL, a path
 * that is no store, a parameter the collector answered 400 to), else -1.
 */
#ifndef NCCLSCOPE_CLI_SOURCE_H
#define NCCLSCOPE_CLI_SOURCE_H

#include <stddef.h>

#include "http.h"
#include "qs.h"

typedef struct nsc_src nsc_src;

typedef struct nsc_src_opts {
    const char *collector;   /* URL; NULL: NCCLSCOPE_COLLECTOR, then the default */
    const char *db;          /* store directory; wins over collector */
    const char *token_file;  /* NULL: NCCLSCOPE_TOKEN (the token itself) */
    const char *ca_file;     /* https: CA certificates (PEM); NULL: NCCLSCOPE_CA_FILE, then the system's */
    int timeout_ms;
} nsc_src_opts;

#define NSC_DEFAULT_COLLECTOR "http://127.0.0.1:7761"

int nsc_src_open(const nsc_src_opts *o, nsc_src **out, char *err, size_t errcap);
void nsc_src_close(nsc_src *s);
/* Describes the source for messages: the URL or "store DIR". */
const char *nsc_src_name(const nsc_src *s);

/* GET /api/v1/<endpoint>?<qs> (qs may be NULL). The body goes to fn as it
 * arrives; fn returns nonzero to stop (that value is returned; the caller
 * knows why). -2: a parameter refused (HTTP 400); -1: the request failed, err says why in one line, e.g.
 * "cannot reach collector at http://...: Connection refused" or the
 * collector's own {"error": ...} message. stream: no timeout (watch). */
int nsc_src_get(nsc_src *s, const char *endpoint, const char *qs, int stream, nsc_http_body_fn fn,
                void *arg, char *err, size_t errcap);

#endif
