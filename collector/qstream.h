/* qstream.h: query responses streamed to HTTP clients with bounded memory.
 *
 * Owns the running queries of /api/v1/{comms,timeline,...} and of the
 * analysis (diagapi.h's diagnose, links, hosts): each runs in its
 * own worker thread on its own store read transaction and writes into a
 * buffer the HTTP thread drains. The worker waits while NSC_QSTREAM_HIGH bytes
 * wait in that buffer, and the HTTP thread hands the connection one chunk at
 * a time, the next only once the last was written to the socket, so a slow
 * client holds at most about twice NSC_QSTREAM_HIGH per query. A result
 * that ends before NSC_QSTREAM_CHUNK bytes is sent whole (Content-Length, or
 * a JSON error with its status); a longer one goes out chunked and, if the
 * query fails part way, ends early (no final {"kind":"end"} line). A client
 * that disconnects stops its query. At most NSC_QSTREAM_MAX run at once;
 * more get 503.
 *
 * A worker holds a store reader for its whole query, and growing the map
 * waits for every reader (and, meanwhile, so do ingest and every new reader).
 * So a worker never waits on its client unboundedly: blocked on a full
 * buffer, it looks every NSC_QSTREAM_POLL_MS and cuts the stream off (logged,
 * counted, the reply ends without its final line) as soon as the map must
 * grow, or once the client has taken nothing for the stall time
 * (http_write_timeout_ms; the HTTP guard, hguard.h, cuts a connection whose
 * client stops reading after it too, which frees the stream's slot).
 */
#ifndef NCCLSCOPE_COLLECTOR_QSTREAM_H
#define NCCLSCOPE_COLLECTOR_QSTREAM_H

#include <event2/event.h>
#include <event2/http.h>

#include "hguard.h"
#include "query.h"
#include "store.h"

#define NSC_QSTREAM_HIGH (4u << 20)
#define NSC_QSTREAM_CHUNK (64u << 10)
#define NSC_QSTREAM_MAX 8
#define NSC_QSTREAM_POLL_MS 50

typedef struct nsc_qstreams nsc_qstreams;

/* What a worker runs: run writes the result through fn (whose nonzero
 * return stops it) and returns 0 or an NSC_QUERY_* error with err set. rd
 * is a read transaction the worker holds for the whole run, or NULL when
 * own_reads is set: a job of many queries reads each in a transaction of
 * its own, so the map can grow between them. */
typedef struct nsc_qjob {
    const char *name;          /* for the log */
    const char *content_type;
    int own_reads;
    int (*run)(void *arg, nsc_store_reader *rd, nsc_query_write_fn fn, void *fn_arg, char *err, size_t errcap);
    void (*free)(void *arg);   /* frees arg once the stream is done */
    void *arg;
} nsc_qjob;

/* st: the store a query without own_reads reads (NULL: every query holds
 * its own, nothing here grows a map); guard: the HTTP server's (close
 * callbacks go through it); stall_ms: the cut-off time of a client that
 * takes nothing. */
nsc_qstreams *nsc_qstreams_new(struct event_base *base, nsc_store *st, nsc_hguard *guard, uint64_t stall_ms);
/* Answer req with the result of q (taken: freed when done). */
void nsc_qstream_start(nsc_qstreams *s, struct evhttp_request *req, nsc_query *q);
/* Answer req with what job writes (job->arg taken: freed when done). */
void nsc_qstream_start_job(nsc_qstreams *s, struct evhttp_request *req, const nsc_qjob *job);
/* Append the streams' gauges and cut-off counters (Prometheus text). */
void nsc_qstreams_render(nsc_qstreams *s, struct evbuffer *out);
/* Stop every query (their clients get what was sent so far) and free. */
void nsc_qstreams_free(nsc_qstreams *s);

#endif
