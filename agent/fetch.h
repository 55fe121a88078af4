/* fetch.h: the agent's answers to the collector's detail fetches.
 *
 * Owns the queue of fetches the collector sent (docs/protocol-a2c.md, "Detail
 * fetch") and the one being answered: its place in the detail ring and the
 * chunk that waits to be sent. Each run sends at most one chunk, of about
 * chunk_bytes, after looking at a bounded number of ring pieces, so
 * answering never holds the agent's loop (ingest) for long; a chunk the
 * socket does not take now is sent again next run. Without a ring (detail
 * = all) every fetch is answered by one empty last chunk that holds nothing.
 */
#ifndef NCCLSCOPE_AGENT_FETCH_H
#define NCCLSCOPE_AGENT_FETCH_H

#include <stddef.h>
#include <stdint.h>

#include "a2c.h"
#include "ring.h"

typedef struct nsc_fetch nsc_fetch;

typedef struct nsc_fetch_stats {
    uint64_t fetches;              /* taken into the queue */
    uint64_t answered;             /* last chunk sent */
    uint64_t refused;              /* queue full: answered by an empty last chunk at once */
    uint64_t chunks, pieces, bytes;  /* sent */
    uint64_t send_retries;         /* chunks the socket did not take at once */
    uint64_t queued;               /* waiting now, the one under way included */
} nsc_fetch_stats;

/* ring may be NULL (detail = all). */
nsc_fetch *nsc_fetch_new(nsc_ring *ring, const char *agent, const char *host, uint64_t epoch, size_t chunk_bytes);
void nsc_fetch_free(nsc_fetch *f);
void nsc_fetch_take(nsc_fetch *f, const nsc_a2c_fetch *q, void *sock);
/* Send at most one chunk on sock (a DEALER to the collector). */
void nsc_fetch_run(nsc_fetch *f, void *sock);
/* The connection changed: what was asked on it is forgotten (the
 * collector asks again). */
void nsc_fetch_reset(nsc_fetch *f);
void nsc_fetch_stats_get(const nsc_fetch *f, nsc_fetch_stats *st);

#endif
