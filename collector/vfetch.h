/* vfetch.h: raw detail fetched around every verdict (detail = on-demand).
 *
 * Owns the fetches verdicts ask for. Each pass of the root-cause metrics
 * (rcmetrics.h) hands over the problems diagnose found for a job; each new
 * verdict among them (a hang: hung, in_flight, missing or lagging; stall;
 * a straggler: gpu_late or host_late; slow_link, slow_nic; new as
 * rcmetrics.c defines it, once for the webhook and the fetches) asks the job's agents for the job's
 * detail from detail_span_ms before the verdict, widened by the pass
 * interval (it may be that old when found), to detail_span_ms after it,
 * once that time has come (fetch.h; the whole job's, so every batch's
 * pieces come whole, the ranks involved among them). Only the root-cause
 * thread calls it, so a verdict never waits for a fetch and ingest never
 * waits for a verdict; the counters are read by /metrics.
 */
#ifndef NCCLSCOPE_COLLECTOR_VFETCH_H
#define NCCLSCOPE_COLLECTOR_VFETCH_H

#include <event2/buffer.h>

#include "cstate.h"
#include "diag.h"

typedef struct nsc_vfetch nsc_vfetch;

nsc_vfetch *nsc_vfetch_new(nsc_collector *c);
void nsc_vfetch_free(nsc_vfetch *v);
/* job's new problems fresh[0..n) of the pass at now. */
void nsc_vfetch_verdicts(nsc_vfetch *v, const char *job, const nsc_problem *const *fresh, size_t n, uint64_t now);
/* Ask for the fetches whose time has come. */
void nsc_vfetch_run(nsc_vfetch *v, uint64_t now);
void nsc_vfetch_render(nsc_vfetch *v, struct evbuffer *out);

#endif
