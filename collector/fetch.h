/* fetch.h: the collector's detail fetches (detail = on-demand agents).
 *
 * Owns the fetches asked over HTTP and not yet sent, the agents' routing
 * ids (learnt from their batches), and the turning of an agent's detail
 * chunks into batch items for the writer. A fetch goes to every agent
 * heard, for a whole job and every type (so each batch's pieces come whole,
 * docs/protocol.md). A chunk's pieces of one batch seq become one batch item
 * named (agent, detail epoch, seq), the detail epoch being the agent's
 * epoch mixed with the job and its top bit set: the writer's dedupe then
 * stores a window fetched twice once, apart from the agent's own batches,
 * and acknowledges nothing. The HTTP thread asks; the ingest thread does
 * the rest.
 */
#ifndef NCCLSCOPE_COLLECTOR_FETCH_H
#define NCCLSCOPE_COLLECTOR_FETCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "item.h"

typedef struct nsc_cfetch nsc_cfetch;

nsc_cfetch *nsc_cfetch_new(size_t max_agents);
void nsc_cfetch_free(nsc_cfetch *f);
/* Any thread: queue a fetch of job's window [from_ns, to_ns] (agent clock)
 * to every agent. Returns its id, or 0 when the queue is full. */
uint64_t nsc_cfetch_ask(nsc_cfetch *f, const char *job, uint64_t from_ns, uint64_t to_ns);
/* Ingest thread: agent speaks from routing id ident. */
void nsc_cfetch_agent(nsc_cfetch *f, const char *agent, const uint8_t *ident, size_t len);
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
