/* prefetch.h: fetch before query, for a collector with detail = on-demand.
 *
 * Owns the HTTP requests that wait for their job's raw detail: a query
 * that reads raw events (timeline, export, the web timeline) first asks
 * every agent for its window on the collector's clock (fetch.h converts it
 * to each host's and widens it by the clock model's bound), then waits on
 * the HTTP thread's loop, never blocking it, until the fetch is done (every
 * agent answered and the store took its batches) or detail_wait_ms passed.
 * It then goes on with the fetch's report (what is missing and why,
 * fetch.h), complete or not. A client that leaves while it waits is
 * dropped. Counted in /metrics.
 */
#ifndef NCCLSCOPE_COLLECTOR_PREFETCH_H
#define NCCLSCOPE_COLLECTOR_PREFETCH_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "cstate.h"
#include "hguard.h"

typedef struct nsc_prefetch nsc_prefetch;

/* then answers req knowing report (the fetch's JSON object); drop frees
 * arg when req goes unanswered (the client left, or the server stops). */
typedef struct nsc_prefetch_next {
    void (*then)(void *arg, struct evhttp_request *req, const char *report);
    void (*drop)(void *arg);
    void *arg;
} nsc_prefetch_next;

nsc_prefetch *nsc_prefetch_new(struct event_base *base, nsc_hguard *guard, nsc_collector *c);
/* Pending requests get a 503 and their next.drop. */
void nsc_prefetch_free(nsc_prefetch *p);
/* Fetch job's window [t0, t1] (aligned), then next.then. Returns 0, or -1
 * when the fetch cannot be asked now (next is not taken: the caller
 * answers). */
int nsc_prefetch_start(nsc_prefetch *p, struct evhttp_request *req, const char *job, uint64_t t0, uint64_t t1,
                       const nsc_prefetch_next *next);
void nsc_prefetch_render(const nsc_prefetch *p, struct evbuffer *out);

#endif
