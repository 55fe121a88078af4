/* registry.h: the processes the agent has heard from.
 *
 * Owns one entry per process incarnation, found by (host, pid) and by its
 * unique key: identity from the batch headers, the per-process string and
 * context tables the protocol's interning rules ask for, last progress (the
 * last Coll seqNumber per communicator and func), the plugin's latest
 * counters, and liveness: a pidfd (pidfd_open) where the kernel has it, else
 * kill(pid, 0), plus a heartbeat timeout. Dead entries linger so late PXN
 * events can still find their origin, then are freed.
 */
#ifndef NCCLSCOPE_AGENT_REGISTRY_H
#define NCCLSCOPE_AGENT_REGISTRY_H

#include <stdint.h>

#include "a2c.h"
#include "wire.h"

#define NSC_REG_PROGRESS_MAX 64

typedef struct nsc_reg_ctx {
    nsc_ctx_def def;
    uint8_t defined;
} nsc_reg_ctx;

typedef struct nsc_reg_proc {
    uint64_t key;             /* unique per incarnation, from 1 */
    nsc_proc id;              /* pid, host, job, local rank, GPU (latest header) */
    uint64_t first_ns, last_ns, last_seq, batches, events;
    uint64_t stream, next_seq;  /* its plugin's stream id and the seq expected next (0, 0: none) */
    int pidfd;                /* -1: use kill(pid, 0) */
    uint8_t alive, reason;    /* reason: NSC_A2C_REASON_* once dead */
    uint8_t finished;         /* its plugin's final batch came: silence is expected */
    uint64_t death_ns;
    nsc_reg_ctx *ctxs;        /* indexed by context index */
    size_t nctxs;
    char (*strs)[64];         /* indexed by string id */
    size_t nstrs;
    nsc_a2c_progress progress[NSC_REG_PROGRESS_MAX];
    uint32_t nprogress;
    nsc_counters counters;
    uint64_t clock_err_ns;    /* its plugin's clock conversion bound (latest header) */
    uint64_t out_gen;         /* owned by out.c: which open section is ours */
    uint32_t out_slot;
    struct nsc_reg_proc *next_by_id, *next_by_key;
} nsc_reg_proc;

typedef struct nsc_registry nsc_registry;

typedef struct nsc_reg_counts {
    uint64_t alive, dead, started_total, died_total;
} nsc_reg_counts;

nsc_registry *nsc_reg_new(void);
void nsc_reg_free(nsc_registry *r);
/* What a batch changed about its process's lifecycle (nsc_reg_get's *news). */
enum {
    NSC_REG_STARTED = 1,   /* new, revived after silence, or its plugin loaded again after finishing */
    NSC_REG_FINISHED = 2   /* its plugin's final batch: silence from now on is expected */
};
/* The live entry for hdr's (host, pid), created when absent or when the known
 * one is dead (a reused pid); a dead one's own late batch (a later seq) finds
 * the dead entry. The registry alone sets and clears `finished`
 * from the headers; *news (NSC_REG_* bits) says what the caller reports.
 * NULL only without memory. */
nsc_reg_proc *nsc_reg_get(nsc_registry *r, const nsc_batch_hdr *hdr, uint64_t now_ns, unsigned *news);
nsc_reg_proc *nsc_reg_find(nsc_registry *r, const char *host, uint32_t pid);
nsc_reg_proc *nsc_reg_by_key(nsc_registry *r, uint64_t key);
/* Take the definitions, progress (from the Coll events, which the scan must
 * keep) and counters of a batch from p. Returns 0, or
 * -1 when a table could not grow (the definition is lost, counted by caller). */
int nsc_reg_learn(nsc_registry *r, nsc_reg_proc *p, const nsc_scan *s);
/* The text of string id s in p ("" when unknown). */
const char *nsc_reg_str(const nsc_reg_proc *p, nsc_str s);
/* Check liveness; call died(arg, p) once for each process found dead now. */
void nsc_reg_check(nsc_registry *r, uint64_t now_ns, uint64_t silent_ns,
                   void (*died)(void *arg, nsc_reg_proc *p), void *arg);
/* Free dead entries older than linger_ns, calling gone(arg, p) before each. */
void nsc_reg_reap(nsc_registry *r, uint64_t now_ns, uint64_t linger_ns, void (*gone)(void *arg, nsc_reg_proc *p),
                  void *arg);
void nsc_reg_counts_get(const nsc_registry *r, nsc_reg_counts *c);
/* Call fn(arg, p) for each process known, alive or dead and not yet reaped. */
void nsc_reg_each(const nsc_registry *r, void (*fn)(void *arg, const nsc_reg_proc *p), void *arg);

#endif
