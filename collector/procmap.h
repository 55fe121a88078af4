/* procmap.h: the processes the writer has seen, by (agent, pid).
 *
 * Owns what places a ledger batch (docs/protocol-ledger.md, "The ledger") whose
 * process has no section in its agent batch: an in-flight record of a hung
 * process, a record held for its PXN proxies, come in a later batch than
 * the process's events. The writer learns every process of every batch it
 * takes (its sections, its lifecycle records), here, and looks the ledger's
 * process up by the agent that sent it and its pid. Bounded: a fixed table,
 * a newer process taking the slot of an older one it collides with (that
 * one's next ledger-only batch is then refused and counted, never placed
 * wrong: a slot holds the agent and pid it answers for). Writer thread only.
 */
#ifndef NCCLSCOPE_COLLECTOR_PROCMAP_H
#define NCCLSCOPE_COLLECTOR_PROCMAP_H

#include <stdint.h>

#include "event.h"

#define NSC_PROCMAP_SLOTS 8192

typedef struct nsc_procmap nsc_procmap;

nsc_procmap *nsc_procmap_new(void);
void nsc_procmap_free(nsc_procmap *m);
void nsc_procmap_put(nsc_procmap *m, const char *agent, const nsc_proc *p);
/* 0 and *out, or -1: not seen (or its slot taken since). */
int nsc_procmap_get(const nsc_procmap *m, const char *agent, uint32_t pid, nsc_proc *out);

#endif
