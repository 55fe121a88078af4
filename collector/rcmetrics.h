/* rcmetrics.h: the root-cause families of the collector's /metrics.
 *
 * Owns a thread that every cfg.rootcause_interval_ms (and, once new ledger
 * records were stored, as soon as cfg.rootcause_trigger_ms after the last
 * pass) runs diagnose's analysis (engine/diag/, in-process like /api/v1/diagnose) on each job of
 * the live state, and the families it renders from the results
 * (docs/collector-http.md, "Root-cause metrics"): per host and cause class the
 * problems placed there (ncclscope_host_causes{host,cause}), per host pair
 * the jobs with a slow link between them (ncclscope_link_slow_jobs{src_host,
 * dst_host}), and the pass's own figures. A pass reads each communicator's
 * last cfg.rootcause_window_seqs seqs, so that its cost does not grow with
 * the job, and keeps the verdicts it can no longer judge
 * (nsc_rcmetrics_carried). A job none of whose processes is alive is
 * analysed until it settles, and its result then kept while the live state
 * lists it and nothing changed: its processes (always), and within
 * cfg.rootcause_recheck_ms of its end the store's version of it
 * (nsc_rcmetrics_changed); a running one is analysed again at every pass. At most cfg.metrics_max_hosts hosts
 * (and as many host pairs), those with the most causes, are exported; the
 * rest are counted in ncclscope_collector_metrics_hosts_omitted. The scrape
 * only copies the text the last pass rendered. With webhook_url, the
 * verdicts (a problem's kind and place) of the jobs this collector
 * announces go to the webhook (webhook.h) once each, after every pass over
 * cfg.webhook_settle_ms found them (vposts.h; a pass is run when one
 * settles). With detail = on-demand it also hands each new verdict to the
 * verdicts' fetches (vfetch.h).
 */
#ifndef NCCLSCOPE_COLLECTOR_RCMETRICS_H
#define NCCLSCOPE_COLLECTOR_RCMETRICS_H

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#include "cstate.h"
#include "diag.h"

typedef struct nsc_rcmetrics nsc_rcmetrics;

/* What a pass sees of a job none of whose processes is alive: its
 * processes in the status, and the store's version of it (cstore.h;
 * version_ok 0: the store could not tell). */
typedef struct nsc_rcm_view {
    size_t procs;
    int version_ok;
    uint64_t version;
} nsc_rcm_view;

/* 1 when a done job, analysed with what then saw, must be analysed again
 * now: the status lists more or fewer of its processes, or the store holds
 * more of it (another collector's share reached ClickHouse after the
 * analysis, which its live snapshot may tell before its rows are there). */
int nsc_rcmetrics_changed(const nsc_rcm_view *then, const nsc_rcm_view *now);

/* 1 when problem p, found by an earlier pass and not by this one, stays:
 * it came from the job's collectives or ledger (what the live state says
 * is read whole at every pass) and this pass's window of `window` seqs
 * below top, its communicator's highest, no longer reaches it: its seq is
 * below the window, or it was judged over seqs (late ranks, links: seq 0)
 * and the window cut the communicator. */
int nsc_rcmetrics_carried(const nsc_problem *p, uint64_t top, uint64_t window);

/* Start the thread (interval 0: no thread, nothing rendered); it ends once
 * c->stop is set. Returns 0 or -1. */
int nsc_rcmetrics_start(nsc_collector *c, nsc_rcmetrics **out);
void nsc_rcmetrics_render(nsc_rcmetrics *m, struct evbuffer *b);
/* Join the thread (after c->stop) and free. */
void nsc_rcmetrics_join(nsc_rcmetrics *m);

#endif
