/* diagapi.h: the collector's /api/v1/{diagnose,links,hosts,topology}: the
 * analysis of engine/diag/ run in-process, so each answers exactly what
 * `ncclscope diagnose --json`, `links --json`, `hosts --json` and
 * `topology --json` print (topology: the query's document with its edges
 * judged by the links analysis); and /api/v1/export, the window's trace as
 * `ncclscope export` writes it (common/export.h), for the web view's
 * download.
 *
 * Owns the endpoints' parameters (diagnose: job, comm; links: job, comm;
 * hosts: none; topology: job, comm, t0_ns, t1_ns; export: job, comm, t0_ns,
 * t1_ns, format; anything else is a 400) and the analysis's source inside
 * the collector: each query it makes runs in-process in a store read
 * transaction of its own (so the map may grow between them, as between the
 * CLI's requests) of the store that holds the job it names (the store's
 * reads_*, cstore.h: with ClickHouse the job loaded into a store of its
 * own); status is the live state's, written under its lock. Each runs in a
 * query worker (qstream.h), so it never holds up ingest, the HTTP thread or
 * /healthz. Errors as the other queries': 404 for an unknown
 * job or communicator, 400 for bad parameters.
 */
#ifndef NCCLSCOPE_COLLECTOR_DIAGAPI_H
#define NCCLSCOPE_COLLECTOR_DIAGAPI_H

#include <event2/buffer.h>
#include <event2/http.h>

#include "cstate.h"
#include "diag.h"
#include "qstream.h"

/* The analysis's source inside the collector (queries in-process, status
 * from the live state); code: the last failed query's NSC_QUERY_* (0 none);
 * blocks: the raw event blocks its queries decoded. The queries read the
 * stores reads holds (the store's reads_*, cstore.h) until
 * nsc_diagapi_src_release. */
typedef struct nsc_diagapi_src {
    nsc_diag_src src;
    nsc_collector *c;
    void *reads;
    int code;
    uint64_t blocks;
} nsc_diagapi_src;
void nsc_diagapi_src_init(nsc_diagapi_src *s, nsc_collector *c);
void nsc_diagapi_src_release(nsc_diagapi_src *s);

/* What diagnose requests that name a job carry from one to the next (diag.h,
 * nsc_rc_carry) for the last DIAGAPI_CARRIES jobs asked about: a poll of a
 * running job reads what came since the last one's settled point and
 * answers as the whole job's analysis would (its Send/Recv pairs are read
 * whole). NULL without memory (then none is carried). Render: the count of
 * requests that went on from a carry. */
typedef struct nsc_diagapi_carries nsc_diagapi_carries;
nsc_diagapi_carries *nsc_diagapi_carries_new(void);
void nsc_diagapi_carries_render(nsc_diagapi_carries *k, struct evbuffer *b);
void nsc_diagapi_carries_free(nsc_diagapi_carries *k);

/* 1 if name is one of the analysis's endpoints ("diagnose", ...). */
int nsc_diagapi_is(const char *name);
/* One request's parameters, parsed once: endpoint name's from query string
 * qstr (may be NULL). NULL when they are bad (req is answered: 400) or
 * memory ran out (500). */
typedef struct nsc_diagapi_req nsc_diagapi_req;
nsc_diagapi_req *nsc_diagapi_parse(nsc_collector *c, struct evhttp_request *req, const char *name, const char *qstr);
/* The job and window an export reads, for a fetch of its detail first:
 * 0, or -1 when r is no export, names no job or a window bound that is no
 * whole number (the export says so when it runs). */
int nsc_diagapi_window(const nsc_diagapi_req *r, const char **job, uint64_t *t0, uint64_t *t1);
/* Answer req from r, which it takes. */
void nsc_diagapi_run(nsc_qstreams *qs, struct evhttp_request *req, nsc_diagapi_req *r);
void nsc_diagapi_free(nsc_diagapi_req *r);

#endif
