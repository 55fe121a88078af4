/* lbuild_int.h: the ledger builder's internals, shared by its files only:
 * lbuild.c (processes, collectives, their naming and emission), lbproxy.c
 * (ProxyOps, ProxySteps and the steps' states) and lbsave.c (the state as
 * bytes across a kill). Owns the builder's types; nothing outside the
 * builder includes it (lbuild.h is its interface).
 */
#ifndef NCCLSCOPE_AGENT_LBUILD_INT_H
#define NCCLSCOPE_AGENT_LBUILD_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpuclock.h"
#include "lbuild.h"

/* ProxySteps folded under their ProxyOp's id, before the ProxyOp stops. */
typedef struct op_acc {
    uint64_t op_id;
    uint64_t coll_id;   /* its collective, once its ProxyOp came flushed open; 0 before */
    nsc_ledger_edge e;  /* peer, channel, is_send set once coll_id is */
    uint32_t nsteps;    /* ProxySteps folded */
    uint32_t stateless; /* of those, steps without a state (states on, theirs lost) */
    uint8_t pxn;
} op_acc;

/* A ProxyStep's states, before the step stops: the open state and the
 * time spent in the states it left. */
typedef struct step_acc {
    uint64_t step_id;
    uint64_t at_ns, bytes;
    uint64_t wait[NSC_LEDGER_WAIT_COUNT];
    uint8_t state;
} step_acc;

typedef struct open_coll {
    uint64_t id;
    uint64_t seen_ns;        /* agent clock: for hang_ms */
    uint64_t api_parent;     /* the Coll's parent (its CollApi or P2pApi, v5+) */
    uint64_t group_api;      /* its API call's parent, the GroupApi, once that call is known */
    uint64_t pstart, pstop_min, pstop_max;  /* pTimers of its channels (0: none) */
    uint64_t ripe_ns;        /* agent clock: a tick saw it done (PXN processes wait from then) */
    uint8_t known, done, changed;  /* known: its Coll came; changed: since its last in-flight record */
    uint8_t net;             /* a collective of a communicator spanning nodes: it has network legs */
    nsc_ledger_rec rec;
    nsc_ledger_edge *edges;
    size_t capedges;
} open_coll;

/* A CollApi (a Coll's parent, v5+) or a KernelLaunch (a child of the
 * GroupApi that is the CollApi's parent): its start, for the records. */
typedef struct api_start {
    uint64_t id, parent, start_ns;
} api_start;
#define API_RING 64

/* The next seq of a Send/Recv: the rank's own count per (communicator,
 * peer, func), as the emulator and the collector count them. */
typedef struct p2p_count {
    uint16_t ctx;
    nsc_str func;
    int32_t peer;
    uint64_t next;
} p2p_count;

#define CLOSED_RING 256

/* The most graph-captured API calls a process keeps (lproc.graph_apis): a
 * CUDA graph's replays name the CollApi or P2pApi of its capture, which is
 * seen once and may be hours old by then. */
#define GRAPH_APIS_MAX 65536

/* What a process sends (lproc.sends): one of each seen. */
enum { SENDS_KERNEL_CH = 1, SENDS_STEPS = 2, SENDS_STATES = 4 };

typedef struct lproc {
    uint64_t key;
    uint64_t host;            /* nsc_spool_host_hash of its host, with pid its name in the spool */
    uint32_t pid;
    uint8_t pxn;              /* it received re-attached PXN events: records wait for them */
    uint8_t own_net;          /* a record of it waited ledger_pxn_wait_ms for network legs and none came */
    uint8_t sends;            /* SENDS_* of what it sent: the types on in its mask, so what lacks was lost */
    uint8_t dirty;            /* changed since its state was last saved */
    uint64_t closed[CLOSED_RING];  /* the ids of the latest records written, round robin */
    unsigned closed_next;
    p2p_count *p2p;
    size_t np2p, capp2p;
    nsc_gpuclock gpu;
    open_coll *colls;
    size_t ncolls, capcolls;
    op_acc *ops;
    size_t nops, capops;
    step_acc *steps;          /* open addressing by step id (0: free), capsteps a power of 2 */
    size_t nsteps, capsteps;
    api_start api[API_RING], launch[API_RING];  /* the latest ones, round robin */
    unsigned api_next, launch_next;
    uint64_t *graph_apis;     /* ids of its graph-captured CollApi and P2pApi calls, sorted */
    size_t ngraph, capgraph;
} lproc;

struct nsc_lbuild {
    uint64_t hang_ns, pxn_wait_ns;
    uint32_t max_open;
    nsc_lbuild_emit_fn *emit;
    void *arg;
    lproc *procs;
    size_t nprocs, capprocs;
    nsc_lbuild_gone *gone;    /* processes forgotten since the last save */
    size_t ngone, capgone;
    nsc_lbuild_stats st;
};

/* The most steps of states a process keeps (lbuild.h). */
static inline size_t nsc_lb_steps_max(const nsc_lbuild *lb) { return 4 * (size_t)lb->max_open; }

static inline open_coll *nsc_lb_coll_of(lproc *lp, uint64_t id)
{
    for (size_t i = 0; i < lp->ncolls; i++)
        if (lp->colls[i].id == id)
            return &lp->colls[i];
    return NULL;
}

/* Remove element i of an array of *n, keeping the order (oldest first). */
static inline void nsc_lb_remove_at(void *arr, size_t *n, size_t i, size_t elem)
{
    uint8_t *a = arr;
    memmove(a + i * elem, a + (i + 1) * elem, (*n - i - 1) * elem);
    (*n)--;
}

/* lbuild.c */
lproc *nsc_lb_proc_of(nsc_lbuild *lb, const nsc_reg_proc *p, int create);
void nsc_lb_proc_remove(nsc_lbuild *lb, lproc *lp);

/* lbproxy.c */
void nsc_lb_proxy_op(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev);
void nsc_lb_proxy_step(nsc_lbuild *lb, lproc *lp, const nsc_event *ev);
step_acc *nsc_lb_step_of(lproc *lp, uint64_t step_id);
step_acc *nsc_lb_step_add(nsc_lbuild *lb, lproc *lp, uint64_t id);
void nsc_lb_step_del(lproc *lp, step_acc *s);

#endif
