/* http.h: the collector's HTTP API (libevent evhttp, one thread).
 *
 * Owns GET /healthz, /metrics (Prometheus: the collector's own figures and,
 * from jobmetrics.h, each communicator's), /api/v1/status (live state),
 * /api/v1/live (server-sent events: one "summary" per live interval; clients
 * that disconnect are dropped) and the query endpoints
 * /api/v1/{comms,timeline,collectives,topology,stats}, which nsc_query runs
 * against a store read transaction in a worker thread (qstream.h streams the
 * result), the analysis's /api/v1/{diagnose,links,hosts} (diagapi.h), in
 * such a worker too, and the web view under /ui/ (ui.h). Who may read:
 * auth.h. Errors are JSON {"error": "..."} (reply.h): 400 for
 * bad parameters, 401 without the bearer token (when one is configured), 404
 * for unknown paths, jobs or comms, 405 for methods other than GET.
 */
#ifndef NCCLSCOPE_COLLECTOR_HTTP_H
#define NCCLSCOPE_COLLECTOR_HTTP_H

#include "cstate.h"

typedef struct nsc_http nsc_http;

/* Bind cfg.http (c->http_port gets the port; "off": *out NULL) and start the
 * thread. It exits once c->stop is set. */
int nsc_http_start(nsc_collector *c, nsc_http **out);
void nsc_http_join(nsc_http *h);

#endif
