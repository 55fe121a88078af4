/* rcmetrics.h: the root-cause families of the collector's /metrics.
 *
 * Owns a thread that every cfg.rootcause_interval_ms (and, once new ledger
 * records were stored, as soon as cfg.rootcause_trigger_ms after the last
 * pass) runs diagnose's analysis (engine/diag/, in-process like /api/v1/diagnose) on each job of
 * the live state, and the families it renders from the results
 * (docs/collector-http.md, "Root-cause metrics"): per host and cause class the
 * problems placed there (ncclscope_host_causes{host,cause}), per host pair
 * the jobs with a slow link between them (ncclscope_link_slow_jobs{src_host,
 * dst_host}), and the pass's own figures. A job none of whose processes is
 * alive is analysed once and its result kept while the live state lists it;
 * a running one again at every pass. At most cfg.metrics_max_hosts hosts
 * (and as many host pairs), those with the most causes, are exported; the
 * rest are counted in ncclscope_collector_metrics_hosts_omitted. The scrape
 * only copies the text the last pass rendered. With webhook_url, each
 * verdict (a problem's kind and place) a job's pass finds that no earlier
 * pass of the job found goes to the webhook (webhook.h), once.
 * only copies the text the last pass rendered. With detail = on-demand it
 * also hands each job's problems to the verdicts' fetches (vfetch.h).
 */
#ifndef NCCLSCOPE_COLLECTOR_RCMETRICS_H
#define NCCLSCOPE_COLLECTOR_RCMETRICS_H

#include <event2/buffer.h>

#include "cstate.h"

typedef struct nsc_rcmetrics nsc_rcmetrics;

/* Start the thread (interval 0: no thread, nothing rendered); it ends once
 * c->stop is set. Returns 0 or -1. */
int nsc_rcmetrics_start(nsc_collector *c, nsc_rcmetrics **out);
void nsc_rcmetrics_render(nsc_rcmetrics *m, struct evbuffer *b);
/* Join the thread (after c->stop) and free. */
void nsc_rcmetrics_join(nsc_rcmetrics *m);

#endif
