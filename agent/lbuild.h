/* lbuild.h: the agent's ledger builder (named apart from common/ledger.h,
 * the record it builds).
 *
 * Owns the collectives of the node's processes that are still open: fed
 * every event, ProxyStep state and completion the agent routes (ingest.c)
 * and the PXN events the resolver re-attaches, it folds each rank's part of a
 * collective into one ledger record (common/ledger.h) and hands it to the
 * output when the rank's part completed, or, for one not completed after
 * hang_ms, as an in-flight record, again whenever it changed, until the
 * completed one replaces it.
 *
 * Keys, per process: the Coll (CeColl) event id; a KernelCh's and a
 * ProxyOp's parent is that id (they, and the completion, may come before the
 * Coll, which is written when its enqueue ends: the first of them opens the
 * collective, the Coll names it), a ProxyStep's parent its ProxyOp's id (a
 * ProxyOp stops after its steps, so the steps wait folded under that id),
 * a ProxyStep state's id the step's id (states come before their step stops).
 * GPU times are converted to the host's clock with a per-process GPU line
 * (store/gpuclock.h) fed by every KernelCh's (pTimer, host time) pair.
 *
 * Memory is bounded: at most max_open collectives, max_open ProxyOps of folded
 * steps and 4 x max_open steps of states per process; the oldest is dropped
 * past that (a completed collective waiting for PXN legs is written
 * instead). Nothing is guessed: whatever cannot be attached is counted by
 * reason (docs/agent-ingest.md, "The ledger").
 */
#ifndef NCCLSCOPE_AGENT_LBUILD_H
#define NCCLSCOPE_AGENT_LBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "ledger.h"
#include "registry.h"

typedef struct nsc_lbuild nsc_lbuild;

/* Why something was not attached to a record. */
enum {
    NSC_LB_NO_COLL = 0,     /* children or a completion whose Coll never came (dropped) */
    NSC_LB_NO_OP = 1,       /* ProxySteps whose ProxyOp never came (dropped with it) */
    NSC_LB_NO_STEP = 2,     /* ProxyStep states whose step never came (dropped) */
    NSC_LB_OVERFLOW = 3,    /* an open collective dropped: max_open reached */
    NSC_LB_GONE = 4,        /* an open collective of a process the agent forgot */
    NSC_LB_NOMEM = 5,       /* lost to a failed allocation */
    NSC_LB_LATE = 6,        /* a child or completion of a collective already written */
    NSC_LB_NREASONS = 7
};

typedef struct nsc_lbuild_stats {
    uint64_t records;       /* completed records emitted */
    uint64_t inflight;      /* in-flight records emitted */
    uint64_t open;          /* collectives open now */
    uint64_t unattached[NSC_LB_NREASONS];
    uint64_t stale_timers;  /* KernelChs whose timers the GPU line refused as other work's */
    uint64_t early;         /* completed records written before ledger_pxn_wait_ms: max_open reached */
} nsc_lbuild_stats;

/* A record for process p; edges and strings live until the call returns. */
typedef void nsc_lbuild_emit_fn(void *arg, nsc_reg_proc *p, const nsc_ledger_rec *r);

/* pxn_wait_ns: how long a completed collective of a process that receives
 * re-attached PXN events waits for them before its record is written. */
nsc_lbuild *nsc_lbuild_new(uint64_t hang_ns, uint64_t pxn_wait_ns, uint32_t max_open, nsc_lbuild_emit_fn *emit,
                           void *arg);
void nsc_lbuild_free(nsc_lbuild *lb);
/* An event of p (now_ns: the agent's clock, for hang_ms). */
void nsc_lbuild_event(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_event *ev, uint64_t now_ns);
void nsc_lbuild_state(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_state_rec *s);
void nsc_lbuild_completion(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_completion *c);
/* A PXN ProxyStep proxy_pid's process sent as proxy_id is now origin's
 * new_id: its states, which stay keyed by proxy_id, go with it. */
void nsc_lbuild_alias(nsc_lbuild *lb, nsc_reg_proc *proxy, nsc_reg_proc *origin, const nsc_a2c_alias *a);
/* The end of p's batch: the collectives it completed are emitted (those of
 * a process with PXN events at a tick pxn_wait_ns later). */
void nsc_lbuild_batch_end(nsc_lbuild *lb, nsc_reg_proc *p);
/* In-flight records of the collectives open for hang_ns (or of a process
 * that finished or died) that changed since their last one, and the completed ones that waited pxn_wait_ns (the
 * processes found in reg). */
void nsc_lbuild_tick(nsc_lbuild *lb, nsc_registry *reg, uint64_t now_ns);
/* The agent stops: the completed collectives still waiting (PXN) are
 * written now, nothing more comes for them from this agent. */
void nsc_lbuild_finish(nsc_lbuild *lb, nsc_registry *reg);
/* p is gone: its open collectives are dropped (counted). */
void nsc_lbuild_forget(nsc_lbuild *lb, const nsc_reg_proc *p);
void nsc_lbuild_stats_get(const nsc_lbuild *lb, nsc_lbuild_stats *st);
/* ---- across a kill: agent/lsave.c keeps each process's open state in the
 * spool, in the transaction that stores the marks of the batches it folded,
 * so a successor goes on where the killed agent stopped. A process is named
 * by its host's nsc_spool_host_hash and pid: its registry key dies with the
 * agent. */
typedef struct nsc_lbuild_gone {
    uint64_t host;
    uint32_t pid;
} nsc_lbuild_gone;

/* A process's state as bytes (buf malloc'd, fn owns it), or, buf NULL, the
 * end of a process forgotten. 0, or -1 to stop. */
typedef int nsc_lbuild_save_fn(void *arg, uint64_t host, uint32_t pid, void *buf, size_t len);
/* fn for each process changed and each forgotten since the last
 * nsc_lbuild_saved. 0, or -1 without memory or when fn stopped. */
int nsc_lbuild_save(nsc_lbuild *lb, nsc_lbuild_save_fn *fn, void *arg);
/* What the last nsc_lbuild_save gave is in the spool. */
void nsc_lbuild_saved(nsc_lbuild *lb);
/* p's state as a predecessor saved it, before anything of p is fed: 0, or -1
 * when buf is not a state this build wrote, or without memory (nothing kept). */
int nsc_lbuild_restore(nsc_lbuild *lb, const nsc_reg_proc *p, const void *buf, size_t len);
/* Metric label of a reason. */
const char *nsc_lbuild_reason(unsigned reason);

#endif
