/* http.h: the agent's operations endpoint (libevent HTTP).
 *
 * Owns the evhttp server on cfg.http: GET /healthz (JSON) and GET /metrics
 * (Prometheus text format 0.0.4). The bound address is also written to
 * <rundir>/agent.http, so a port chosen by the kernel (port 0) can be found.
 */
#ifndef NCCLSCOPE_AGENT_HTTP_H
#define NCCLSCOPE_AGENT_HTTP_H

#include "agent.h"

int nsc_http_start(nsc_agent *a, char err[256]);
void nsc_http_stop(nsc_agent *a);

#endif
