/* jobmetrics.h: the per-communicator families of the collector's /metrics.
 *
 * Owns the Prometheus names, types, help texts and labels of what the live
 * state knows about each NCCL communicator (docs/collector-http.md, "Job
 * metrics"): its ranks, events, collectives per function, their durations
 * (a histogram), bus bandwidth, lag, lagging and hung ranks and collectives
 * in flight. Labels are nccl_job (the job's id; Prometheus keeps `job` for
 * the scrape job), comm (commHash in hex) and func; the communicator's name
 * is on ncclscope_comm_info only. At most cfg.metrics_max_comms
 * communicators, the most recently active, are exported, so the series are
 * bounded; the rest are counted in ncclscope_collector_metrics_comms_omitted.
 * Also the live state's own bounds: jobs held and evicted, and what its
 * limits refused.
 */
#ifndef NCCLSCOPE_COLLECTOR_JOBMETRICS_H
#define NCCLSCOPE_COLLECTOR_JOBMETRICS_H

#include <event2/buffer.h>
#include <stddef.h>

#include "cstate.h"

/* Append the families to b. The live lock is held only to copy the figures. */
void nsc_jobmetrics_render(nsc_collector *c, struct evbuffer *b);

#endif
