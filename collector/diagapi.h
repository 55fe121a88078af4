/* diagapi.h: the collector's /api/v1/{diagnose,links,hosts}: the analysis
 * of common/diag/ run in-process, so each answers exactly what
 * `ncclscope diagnose --json`, `links --json` and `hosts --json` print.
 *
 * Owns the endpoints' parameters (diagnose: job, comm; links: job, comm;
 * hosts: none; anything else is a 400) and the analysis's source inside
 * the collector: each query it makes runs in-process in a store read
 * transaction of its own (so the map may grow between them, as between the
 * CLI's requests), status is the live state's, written under its lock. Each
 * runs in a query worker (qstream.h), so it never holds up ingest, the
 * HTTP thread or /healthz. Errors as the other queries': 404 for an unknown
 * job or communicator, 400 for bad parameters.
 */
#ifndef NCCLSCOPE_COLLECTOR_DIAGAPI_H
#define NCCLSCOPE_COLLECTOR_DIAGAPI_H

#include <event2/http.h>

#include "collector.h"
#include "qstream.h"

/* 1 if name is one of the analysis's endpoints ("diagnose", ...). */
int nsc_diagapi_is(const char *name);
/* Answer req for endpoint name with query string qs (may be NULL). */
void nsc_diagapi_start(nsc_collector *c, nsc_qstreams *qs, struct evhttp_request *req, const char *name,
                       const char *qstr);

#endif
