/* stream.h: turning a response body, arriving in pieces, into JSON values.
 *
 * Owns three readers that take body bytes through nsc_http_body_fn-shaped
 * feed functions: NDJSON (one value per line, parsed as each line completes,
 * flat objects by flat.h's scanner, the rest by the generic reader; memory
 * bounded by the longest line), a whole document (collected, then
 * parsed once: for small answers like comms or status), and server-sent
 * events (event name and data per blank-line-terminated block).
 *
 * Feed functions return 0 to go on and 1 to stop: a reader's own error (with
 * its err set) or its callback's nonzero return, passed through. So an HTTP
 * transfer's -1 always means a transport error.
 */
#ifndef NCCLSCOPE_STREAM_H
#define NCCLSCOPE_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "flat.h"
#include "json.h"

#define NSC_STREAM_MAX_LINE (4u << 20)

typedef struct nsc_linebuf {
    char *buf;
    size_t len, cap;
    uint64_t lines;
} nsc_linebuf;

/* NDJSON: fn gets each value and its line's text (no '\n', not NUL-terminated);
 * its nonzero return stops the stream. */
typedef int (*nsc_ndjson_fn)(void *arg, const nsc_json *value, const char *line, size_t len);
typedef struct nsc_ndjson {
    nsc_linebuf lb;
    nsc_flat flat;  /* scratch of the fast path, reused for every line */
    nsc_ndjson_fn fn;
    void *arg;
    char err[160];  /* set when feed/end return -1 */
} nsc_ndjson;
void nsc_ndjson_init(nsc_ndjson *r, nsc_ndjson_fn fn, void *arg);
int nsc_ndjson_feed(void *r, const char *data, size_t len);
int nsc_ndjson_end(nsc_ndjson *r);  /* a last line without '\n' */
void nsc_ndjson_free(nsc_ndjson *r);

/* A whole document, at most NSC_STREAM_MAX_DOC bytes. */
#define NSC_STREAM_MAX_DOC (64u << 20)
typedef struct nsc_doc {
    char *buf;
    size_t len, cap;
    nsc_json_doc doc;
    int parsed;
    char err[160];
} nsc_doc;
int nsc_doc_feed(void *d, const char *data, size_t len);
int nsc_doc_parse(nsc_doc *d);  /* 0: d->doc holds it; -1: d->err */
void nsc_doc_free(nsc_doc *d);

/* Server-sent events: fn(arg, event name or "message", data). */
typedef int (*nsc_sse_fn)(void *arg, const char *event, const char *data);
typedef struct nsc_sse {
    nsc_linebuf lb;
    char event[64];
    char *data;
    size_t dlen, dcap;
    nsc_sse_fn fn;
    void *arg;
} nsc_sse;
void nsc_sse_init(nsc_sse *s, nsc_sse_fn fn, void *arg);
int nsc_sse_feed(void *s, const char *data, size_t len);
void nsc_sse_free(nsc_sse *s);

#endif
