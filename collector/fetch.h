/* fetch.h: the collector's detail fetches (detail = on-demand agents).
 *
 * Owns the fetches asked and not yet forgotten (queued, then sent, each
 * with the agents it went to, which of them answered and its batches still
 * on their way to the store), the agents' routing ids, hosts and last jobs
 * (learnt from their batches), and the turning of an agent's detail chunks
 * into batch items for the writer. A fetch goes to every agent whose
 * batches carried its job lately, for the whole job and every type (so
 * each batch's pieces come whole,
 * docs/protocol.md). Its window is on the agents' clocks, or on the
 * collector's (a query's): then each agent's is that window converted
 * through its host's clock model and widened by the model's bound. A
 * chunk's pieces of one batch seq become one batch item named (agent,
 * detail epoch, seq), the detail epoch being the agent's epoch mixed with
 * the job and its top bit set: the writer's dedupe then stores a window
 * fetched twice once, apart from the agent's own batches, and acknowledges
 * nothing. The item counts against its fetch until the writer frees it, so
 * a fetch is done once every agent it went to sent its last chunk and the
 * store took (or refused) every batch of it. The HTTP thread asks and
 * reads; the ingest thread does the rest.
 */
#ifndef NCCLSCOPE_COLLECTOR_FETCH_H
#define NCCLSCOPE_COLLECTOR_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "item.h"

typedef struct nsc_cfetch nsc_cfetch;

/* A host's offset (collector - host, modulo 2^64) near collector time
 * ref_ns and its bound; -1 when the host has no clock model (its clock is
 * taken as the collector's). */
typedef int nsc_cfetch_clock_fn(void *arg, const char *host, uint64_t ref_ns, uint64_t *off_ns, uint64_t *err_ns);

nsc_cfetch *nsc_cfetch_new(size_t max_agents, nsc_cfetch_clock_fn *clock, void *clock_arg);
void nsc_cfetch_free(nsc_cfetch *f);
/* Any thread: queue a fetch of job's window [from_ns, to_ns] to every
 * agent, on the agents' clocks, or on the collector's when aligned is set
 * (0 and UINT64_MAX stay unbounded). Returns its id, or 0 when 16 wait to
 * be sent or every fetch remembered still has batches on their way. */
uint64_t nsc_cfetch_ask(nsc_cfetch *f, const char *job, uint64_t from_ns, uint64_t to_ns, int aligned);
/* Any thread: 1 once fetch id is done (see above) or forgotten, else 0. */
int nsc_cfetch_done(nsc_cfetch *f, uint64_t id);
/* Any thread: what fetch id brought, as JSON: {"fetch", "complete",
 * "missing": [{agent, host, reason ("no answer", "ring empty", "older than
 * the ring"), and for the last two held_from_ns, held_to_ns: what the ring
 * holds, on the fetch's clock}]}; complete (also in *complete) is true when
 * nothing is missing. 0 or -1 (write error). */
int nsc_cfetch_report_json(nsc_cfetch *f, uint64_t id, FILE *out, int *complete);
/* Ingest thread: a batch came from its agent: its routing id, host and the
 * jobs its sections and process lives name. */
void nsc_cfetch_agent(nsc_cfetch *f, const nsc_item *it);
/* Ingest thread: send what was asked, on the agents' ROUTER. Returns the
 * fetches sent (one per agent). */
unsigned nsc_cfetch_send(nsc_cfetch *f, void *router);

/* Any thread: what each agent's ring held when it last answered, as a JSON
 * array of {agent, host, from_ns, to_ns} (agent clocks; 0 and 0: nothing).
 * 0 or -1 (write error). */
int nsc_cfetch_held_json(nsc_cfetch *f, FILE *out);

typedef void nsc_cfetch_emit_fn(void *arg, nsc_item *it);
/* Ingest thread: a detail chunk; each batch of it goes to emit as an item.
 * Returns the pieces taken, or a negative nsc_wire_err (nothing emitted);
 * a batch that does not decode is counted in *bad and skipped. */
int nsc_cfetch_take(nsc_cfetch *f, const void *buf, size_t len, const nsc_dec_limits *lim, int32_t max_ranks,
                    nsc_cfetch_emit_fn *emit, void *arg, uint64_t *bad);

#endif
