/* http.h: a blocking HTTP(S) client for the collector's API, on libcurl.
 *
 * Owns one GET: URL parsing (http:// or https://host[:port][/base]), the
 * request (optional bearer token; TLS verified against the system's CAs or a
 * CA file, as the collector's ClickHouse client does, collector/ch/chconn.c),
 * the status, and the body handed to the caller piece by piece as it arrives
 * so a large result is never held in memory. Every wait is bounded by a
 * timeout except while streaming an endless body (server-sent events), where
 * the caller asks for none. docs/security.md says how to put TLS in front of
 * a collector.
 */
#ifndef NCCLSCOPE_CLI_HTTP_H
#define NCCLSCOPE_CLI_HTTP_H

#include <stddef.h>

typedef struct nsc_http_url {
    int tls;         /* https:// */
    char host[256];
    char port[8];
    char base[256];  /* path prefix without trailing '/', may be "" */
} nsc_http_url;

/* Returns 0, or -1 with a reason in err. */
int nsc_http_parse_url(const char *url, nsc_http_url *out, char *err, size_t errcap);

/* Body callback: nonzero stops the transfer (nsc_http_get returns it). */
typedef int (*nsc_http_body_fn)(void *arg, const char *data, size_t len);

typedef struct nsc_http_req {
    const nsc_http_url *url;
    const char *path;        /* appended to url->base; includes the query string */
    const char *token;       /* bearer token or NULL */
    int timeout_ms;          /* per wait; <= 0: wait forever (streams) */
    const char *ca_file;     /* CA certificates (PEM) for https; NULL: the system's */
} nsc_http_req;

/* GET. *status gets the HTTP status. A 2xx body goes to fn; any other body is
 * collected (up to errbody_cap-1 bytes, NUL-terminated) into errbody so the
 * caller can show the server's message. Returns 0 after the whole body, the
 * callback's nonzero value, or -1 with a one-line reason in err
 * ("Connection refused", "timed out", a certificate that does not verify). */
int nsc_http_get(const nsc_http_req *req, int *status, nsc_http_body_fn fn, void *arg,
                 char *errbody, size_t errbody_cap, char *err, size_t errcap);

#endif
