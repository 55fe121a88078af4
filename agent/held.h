/* held.h: the PXN resolver's held events across an agent's kill.
 *
 * A foreign event the resolver holds came in a batch whose mark the next
 * flush stores and acknowledges: from then on the plugin no longer has it.
 * So every flush saves, in its own transaction, what changed in the held
 * set since the last save (the events held since, the ids of the saved ones
 * resolved or given up, which that flush's batch holds), and a starting
 * agent holds again what its predecessor saved. Emitted = stored + counted
 * then holds through kill -9, PXN events included (docs/agent-ingest.md).
 * What the resolver remembers (parent candidates, moved events: the newest
 * pxn_recent of each) is saved with them, so that an origin or a foreign
 * parent only the predecessor saw still re-attaches:
 * a starting agent gives each process its own back when it first hears from
 * it (its registry key is new), and forgets the rest linger_ms after the start.
 */
#ifndef NCCLSCOPE_AGENT_HELD_H
#define NCCLSCOPE_AGENT_HELD_H

#include "agent.h"

typedef struct nsc_held_save {
    nsc_spool_held_change c;
    nsc_spool_held *add;   /* owned until nsc_held_done */
    nsc_spool_cand *cand;  /* owned until nsc_held_done */
    uint64_t cands_next, moved_next;  /* the resolver's next sequences once saved */
} nsc_held_save;

/* Stage the held set's changes for the next spool put. 0, or -1 without
 * memory (nothing staged: the flush must wait, or the marks would go
 * without the events they vouch for). */
int nsc_held_stage(nsc_agent *a, nsc_held_save *sv);
/* After the flush: unstage; what the spool wrote counts as saved. */
void nsc_held_done(nsc_agent *a, nsc_held_save *sv);
/* Stores what waits in the agent's output as one spool entry
 * (nsc_ingest_flush). */
typedef void (*nsc_held_flush_fn)(nsc_agent *a, uint64_t now_ns);
/* At start: hold again every event the spool keeps, each in its proxy
 * process's registry entry (made, and reported started, if new); flush
 * stores the events given up and the processes started, and makes room
 * when the resolver's ids are full. */
int nsc_held_load(nsc_agent *a, nsc_held_flush_fn flush, char err[256]);
/* p is heard for the first time since the start: its candidates back. */
void nsc_held_heard(nsc_agent *a, const nsc_reg_proc *p);
/* linger_ms after the start: the candidates of processes not heard go. */
void nsc_held_forget(nsc_agent *a);

#endif
