/* lbuild.c: the agent's ledger builder (see lbuild.h). */
#include "lbuild.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "gpuclock.h"
#include "grow.h"
#include "spool.h"

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

static const char *const reasons[NSC_LB_NREASONS] = {
    [NSC_LB_NO_COLL] = "no_collective", [NSC_LB_NO_OP] = "no_proxy_op", [NSC_LB_NO_STEP] = "no_proxy_step",
    [NSC_LB_OVERFLOW] = "max_open", [NSC_LB_GONE] = "process_gone",
    [NSC_LB_NOMEM] = "nomem", [NSC_LB_LATE] = "late",
};

const char *nsc_lbuild_reason(unsigned r) { return r < NSC_LB_NREASONS ? reasons[r] : NULL; }

nsc_lbuild *nsc_lbuild_new(uint64_t hang_ns, uint64_t pxn_wait_ns, uint32_t max_open, nsc_lbuild_emit_fn *emit,
                           void *arg)
{
    nsc_lbuild *lb = calloc(1, sizeof *lb);
    if (!lb)
        return NULL;
    lb->hang_ns = hang_ns;
    lb->pxn_wait_ns = pxn_wait_ns;
    lb->max_open = max_open ? max_open : 1;
    lb->emit = emit;
    lb->arg = arg;
    return lb;
}

static void proc_free(lproc *lp)
{
    for (size_t i = 0; i < lp->ncolls; i++)
        free(lp->colls[i].edges);
    free(lp->colls);
    free(lp->ops);
    free(lp->steps);
    free(lp->p2p);
    nsc_gpuclock_free(&lp->gpu);
}

static void proc_remove(nsc_lbuild *lb, lproc *lp)
{
    lb->st.open -= lp->ncolls;
    proc_free(lp);
    *lp = lb->procs[--lb->nprocs];
}

void nsc_lbuild_free(nsc_lbuild *lb)
{
    if (!lb)
        return;
    for (size_t i = 0; i < lb->nprocs; i++)
        proc_free(&lb->procs[i]);
    free(lb->procs);
    free(lb->gone);
    free(lb);
}

/* p's state; one made (and marked changed: the caller feeds it) when create. */
static lproc *proc_of(nsc_lbuild *lb, const nsc_reg_proc *p, int create)
{
    for (size_t i = 0; i < lb->nprocs; i++)
        if (lb->procs[i].key == p->key) {
            lb->procs[i].dirty |= (uint8_t)create;
            return &lb->procs[i];
        }
    if (!create || nsc_grow(&lb->procs, lb->nprocs, &lb->capprocs, sizeof *lb->procs, 8)) {
        lb->st.unattached[NSC_LB_NOMEM] += create;
        return NULL;
    }
    lproc *lp = &lb->procs[lb->nprocs++];
    memset(lp, 0, sizeof *lp);
    lp->key = p->key;
    lp->host = nsc_spool_host_hash(p->id.host);
    lp->pid = p->id.pid;
    lp->dirty = 1;
    nsc_gpuclock_init(&lp->gpu);
    return lp;
}

static open_coll *coll_of(lproc *lp, uint64_t id)
{
    for (size_t i = 0; i < lp->ncolls; i++)
        if (lp->colls[i].id == id)
            return &lp->colls[i];
    return NULL;
}

/* Remove element i of an array of *n, keeping the order (oldest first). */
static void remove_at(void *arr, size_t *n, size_t i, size_t elem)
{
    uint8_t *a = arr;
    memmove(a + i * elem, a + (i + 1) * elem, (*n - i - 1) * elem);
    (*n)--;
}

/* A collective dropped unfinished counts by what was known of it. */
static unsigned drop_reason(const open_coll *c, unsigned known_reason)
{
    return c->known ? known_reason : NSC_LB_NO_COLL;
}

static void coll_drop(nsc_lbuild *lb, lproc *lp, size_t i)
{
    free(lp->colls[i].edges);
    remove_at(lp->colls, &lp->ncolls, i, sizeof *lp->colls);
    lb->st.open--;
}

/* Room for one more in an array of at most max: the caller counted and
 * the oldest goes. 0, or -1 without memory (counted). */
static int make_room(nsc_lbuild *lb, void *arrp, size_t *n, size_t *cap, size_t elem, size_t max)
{
    if (*n >= max) {
        void *arr;
        memcpy(&arr, arrp, sizeof arr);
        remove_at(arr, n, 0, elem);
    }
    if (nsc_grow(arrp, *n, cap, elem, 8)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return -1;
    }
    return 0;
}

static size_t steps_max(const nsc_lbuild *lb) { return 4 * (size_t)lb->max_open; }

/* ---- identity: Coll, CeColl, CollApi ------------------------------------- */

/* The collective of id, opened by whichever of its records comes first. */
static open_coll *coll_get(nsc_lbuild *lb, lproc *lp, uint64_t id)
{
    open_coll *c = coll_of(lp, id);
    if (c)
        return c;
    for (unsigned i = 0; i < CLOSED_RING; i++)
        if (lp->closed[i] == id) {
            lb->st.unattached[NSC_LB_LATE]++;
            return NULL;
        }
    if (lp->ncolls >= lb->max_open) {
        lb->st.unattached[drop_reason(&lp->colls[0], NSC_LB_OVERFLOW)]++;
        coll_drop(lb, lp, 0);
    }
    if (nsc_grow(&lp->colls, lp->ncolls, &lp->capcolls, sizeof *lp->colls, 8)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return NULL;
    }
    c = &lp->colls[lp->ncolls++];
    lb->st.open++;
    memset(c, 0, sizeof *c);
    c->id = id;
    return c;
}

/* The seq of a Send/Recv, or UINT64_MAX without memory (counted). */
static uint64_t p2p_seq(nsc_lbuild *lb, lproc *lp, const nsc_event *ev)
{
    for (size_t i = 0; i < lp->np2p; i++) {
        p2p_count *k = &lp->p2p[i];
        if (k->ctx == ev->ctx && k->func == ev->d.p2p.func && k->peer == ev->d.p2p.peer)
            return k->next++;
    }
    if (nsc_grow(&lp->p2p, lp->np2p, &lp->capp2p, sizeof *lp->p2p, 8)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return UINT64_MAX;
    }
    lp->p2p[lp->np2p++] = (p2p_count){ev->ctx, ev->d.p2p.func, ev->d.p2p.peer, 1};
    return 0;
}

static const api_start *ring_find(const api_start *ring, uint64_t id, int by_parent)
{
    for (unsigned i = 0; id && i < API_RING; i++)
        if ((by_parent ? ring[i].parent : ring[i].id) == id)
            return &ring[i];
    return NULL;
}

/* The API call (CollApi, P2pApi) and the kernel launch of c: taken from the
 * latest ones seen when c is named or written, and given to the open
 * collectives when they come later (a CollApi stops after its Coll, the call
 * returning after the enqueue; a group of many calls overruns the latest). */
static void api_times(lproc *lp, open_coll *c)
{
    const api_start *api = c->rec.api_ns ? NULL : ring_find(lp->api, c->api_parent, 0);
    if (api)
        c->rec.api_ns = api->start_ns, c->group_api = api->parent;
    const api_start *launch = c->rec.launch_ns ? NULL : ring_find(lp->launch, c->group_api, 1);
    if (launch)
        c->rec.launch_ns = launch->start_ns;
}

/* An API call or kernel launch (e) for the open collectives it belongs to. */
static void api_came(lproc *lp, const api_start *e, int launch)
{
    for (size_t i = 0; i < lp->ncolls; i++) {
        open_coll *c = &lp->colls[i];
        if (!launch && c->known && c->api_parent == e->id && !c->rec.api_ns)
            c->rec.api_ns = e->start_ns, c->group_api = e->parent;
        else if (launch && c->group_api && c->group_api == e->parent && !c->rec.launch_ns)
            c->rec.launch_ns = e->start_ns;
    }
}

/* Its Coll (CeColl, P2p) names the collective; hang_ms counts from now on. */
static void name_coll(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, open_coll *c, const nsc_event *ev,
                      uint64_t now_ns)
{
    c->known = c->changed = 1;
    c->seen_ns = now_ns;
    c->api_parent = ev->parent;
    api_times(lp, c);
    nsc_ledger_rec *r = &c->rec;
    r->enqueue_ns = ev->start_ns;
    r->root = r->peer = -1;
    r->rank = ev->rank;
    r->ctx = ev->ctx;  /* comm_id stays 0 where this agent never saw the context defined */
    if (ev->ctx < p->nctxs && p->ctxs[ev->ctx].defined) {
        r->comm_id = p->ctxs[ev->ctx].def.comm_id;
        r->rank = p->ctxs[ev->ctx].def.rank;
    }
    r->flags |= ev->flags & NSC_EVF_GRAPH ? NSC_LEDGER_GRAPH : 0;
    if (ev->type == NSC_T_P2P) {
        r->flags |= NSC_LEDGER_P2P;
        r->seq = p2p_seq(lb, lp, ev), r->peer = ev->d.p2p.peer, r->count = ev->d.p2p.count;
        r->func = ev->d.p2p.func, r->datatype = ev->d.p2p.datatype, r->nchannels = ev->d.p2p.nchannels;
        r->user_tag = ev->d.p2p.user_tag;
    } else if (ev->type == NSC_T_CE_COLL) {
        r->flags |= NSC_LEDGER_CE;
        r->seq = ev->d.ce_coll.seq, r->count = ev->d.ce_coll.count, r->root = ev->d.ce_coll.root;
        r->func = ev->d.ce_coll.func, r->datatype = ev->d.ce_coll.datatype;
        r->user_tag = ev->d.ce_coll.user_tag;
    } else {
        r->seq = ev->d.coll.seq, r->count = ev->d.coll.count, r->root = ev->d.coll.root;
        r->func = ev->d.coll.func, r->datatype = ev->d.coll.datatype, r->algo = ev->d.coll.algo;
        r->proto = ev->d.coll.proto, r->nchannels = ev->d.coll.nchannels, r->user_tag = ev->d.coll.user_tag;
    }
    int32_t nranks = ev->ctx < p->nctxs ? p->ctxs[ev->ctx].def.nranks : 1;
    c->net = ev->type == NSC_T_COLL && ev->ctx < p->nctxs && p->ctxs[ev->ctx].def.nnodes > 1;
    r->bytes = nsc_busbw_rule(nsc_reg_str(p, r->func), nranks, r->count,
                              nsc_dtype_size(nsc_reg_str(p, r->datatype))).bytes;
}

/* ---- children: KernelCh, ProxyOp, ProxyStep, states ------------------------ */

static void kernel_ch(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev)
{
    const __typeof__(ev->d.kernel_ch) *k = &ev->d.kernel_ch;
    lp->sends |= SENDS_KERNEL_CH;
    if (!(ev->flags & NSC_EVF_OPEN))
        c->rec.nchannels_done++;  /* one flushed open at finalize never ended */
    int rc = nsc_gpuclock_stale(&lp->gpu, k->ptimer_start, ev->start_ns) ? NSC_GPUCLOCK_STALE
             : k->ptimer_stop && k->ptimer_stop_ns ? nsc_gpuclock_add(&lp->gpu, k->ptimer_stop, k->ptimer_stop_ns)
                                                   : 0;
    if (rc == NSC_GPUCLOCK_STALE) { /* both timers came from one slot, another task's */
        lb->st.stale_timers++;
        c->rec.flags |= NSC_LEDGER_GPU_STALE;
        return;
    }
    if (rc)
        lb->st.unattached[NSC_LB_NOMEM]++;
    if (k->ptimer_start && (!c->pstart || k->ptimer_start < c->pstart))
        c->pstart = k->ptimer_start;
    if (ev->flags & NSC_EVF_OPEN)
        return;
    if (k->ptimer_stop) {
        if (!c->pstop_min || k->ptimer_stop < c->pstop_min)
            c->pstop_min = k->ptimer_stop;
        if (k->ptimer_stop > c->pstop_max)
            c->pstop_max = k->ptimer_stop;
    }
}

static nsc_ledger_edge *edge_of(nsc_lbuild *lb, open_coll *c, int32_t peer, uint8_t channel, uint8_t is_send)
{
    for (uint32_t i = 0; i < c->rec.nedges; i++)
        if (c->edges[i].peer == peer && c->edges[i].channel == channel && c->edges[i].is_send == is_send)
            return &c->edges[i];
    if (nsc_grow(&c->edges, c->rec.nedges, &c->capedges, sizeof *c->edges, 4)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return NULL;
    }
    nsc_ledger_edge *e = &c->edges[c->rec.nedges++];
    memset(e, 0, sizeof *e);
    e->peer = peer, e->channel = channel, e->is_send = is_send, e->last_step = -1;
    return e;
}

/* Fold what `from` says about some steps into `to`. */
static void fold_edge(nsc_ledger_edge *to, const nsc_ledger_edge *from)
{
    to->bytes += from->bytes;
    to->step_sum_ns += from->step_sum_ns;
    if (from->step_max_ns > to->step_max_ns)
        to->step_max_ns = from->step_max_ns;
    to->wait_gpu_ns += from->wait_gpu_ns;
    to->wait_peer_ns += from->wait_peer_ns;
    to->wait_send_ns += from->wait_send_ns;
    to->wait_recv_ns += from->wait_recv_ns;
    to->wait_flush_ns += from->wait_flush_ns;
    if (from->last_step >= to->last_step) {
        to->last_step = from->last_step;
        to->last_state = from->last_state;
    }
}

static op_acc *op_of(lproc *lp, uint64_t op_id)
{
    for (size_t i = 0; i < lp->nops; i++)
        if (lp->ops[i].op_id == op_id)
            return &lp->ops[i];
    return NULL;
}

/* Room for the steps of a ProxyOp not seen yet (the oldest such goes past
 * max_open, its steps counted); NULL without memory (counted). */
static op_acc *op_new(nsc_lbuild *lb, lproc *lp, uint64_t op_id)
{
    if (lp->nops >= lb->max_open && !lp->ops[0].coll_id)
        lb->st.unattached[NSC_LB_NO_OP] += lp->ops[0].nsteps;
    if (make_room(lb, &lp->ops, &lp->nops, &lp->capops, sizeof *lp->ops, lb->max_open))
        return NULL;
    op_acc *acc = &lp->ops[lp->nops++];
    memset(acc, 0, sizeof *acc);
    acc->op_id = op_id;
    acc->e.last_step = -1;
    return acc;
}

static void proxy_op(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev)
{
    const __typeof__(ev->d.proxy_op) *o = &ev->d.proxy_op;
    op_acc *acc = op_of(lp, ev->id);
    nsc_ledger_edge *e = edge_of(lb, c, o->peer, o->channel, o->is_send);
    uint32_t nsteps = o->nsteps > 0 ? (uint32_t)o->nsteps : 0, folded = acc ? acc->nsteps : 0;
    int open = (ev->flags & NSC_EVF_OPEN) != 0;
    if (e) {
        /* A ProxyOp stops when its last step is done: its steps count even
         * when ProxyStep events are off. One never stopped (flushed open at
         * finalize: stuck) completed only the steps that stopped. */
        e->steps += open ? (acc ? acc->e.steps : 0) : nsteps;
        if (acc)
            fold_edge(e, &acc->e);
    }
    /* Its steps came before it (same thread): those that did not were lost.
     * Not so for a PXN one: its steps come through the resolver, in any
     * order; nor for an open one, whose later steps never started. */
    if (!(ev->flags & NSC_EVF_FOREIGN) && !open && lp->sends & SENDS_STEPS && nsteps > folded)
        c->rec.dropped += nsteps - folded;
    c->rec.dropped += acc ? acc->stateless : 0;
    if (ev->flags & NSC_EVF_FOREIGN || (acc && acc->pxn))
        c->rec.flags |= NSC_LEDGER_PXN;
    /* Finalize flushes it on its own thread while the proxy's thread may
     * still ship its steps: those go to the record (fold_step). */
    if (open && (acc || (acc = op_new(lb, lp, ev->id)))) {
        acc->coll_id = c->id;
        acc->e = (nsc_ledger_edge){.peer = o->peer, .channel = o->channel, .is_send = o->is_send, .last_step = -1};
        acc->stateless = 0;
    } else if (acc) {
        remove_at(lp->ops, &lp->nops, (size_t)(acc - lp->ops), sizeof *lp->ops);
    }
}

/* ---- steps of states, by id: a batch's states come before its steps, so
 * thousands may wait at once --------------------------------------------- */

/* An id's low bits: a process's event ids count up in them (the plugin's
 * slot index), so the steps of one ProxyOp, whose states arrive in the order
 * they were made, sit in neighbouring slots instead of one cache miss each. */
static size_t step_home(const lproc *lp, uint64_t id)
{
    return (size_t)id & (lp->capsteps - 1);
}

static step_acc *step_of(lproc *lp, uint64_t step_id)
{
    for (size_t i = lp->capsteps ? step_home(lp, step_id) : 0; lp->capsteps && lp->steps[i].step_id;
         i = (i + 1) & (lp->capsteps - 1))
        if (lp->steps[i].step_id == step_id)
            return &lp->steps[i];
    return NULL;
}

/* Free s's slot, moving back the entries after it that probed past it. */
static void step_del(lproc *lp, step_acc *s)
{
    size_t mask = lp->capsteps - 1, hole = (size_t)(s - lp->steps);
    for (size_t i = (hole + 1) & mask; lp->steps[i].step_id; i = (i + 1) & mask) {
        size_t home = step_home(lp, lp->steps[i].step_id);
        if (((i - home) & mask) >= ((i - hole) & mask)) {
            lp->steps[hole] = lp->steps[i];
            hole = i;
        }
    }
    lp->steps[hole].step_id = 0;
    lp->nsteps--;
}

/* Twice the room, the entries placed again. */
static int step_grow(lproc *lp)
{
    size_t cap = lp->capsteps ? 2 * lp->capsteps : 64;
    step_acc *old = lp->steps, *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    size_t oldcap = lp->capsteps;
    lp->steps = slots, lp->capsteps = cap, lp->nsteps = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].step_id) {
            size_t j = step_home(lp, old[i].step_id);
            while (slots[j].step_id)
                j = (j + 1) & (cap - 1);
            slots[j] = old[i];
            lp->nsteps++;
        }
    free(old);
    return 0;
}

/* A free slot for id: past max entries one goes (counted: its step never
 * came). NULL without memory (counted). */
static step_acc *step_add(nsc_lbuild *lb, lproc *lp, uint64_t id)
{
    size_t max = steps_max(lb);
    if (lp->nsteps >= max) {
        step_acc *victim = &lp->steps[step_home(lp, id)];
        while (!victim->step_id)
            victim = &lp->steps[(size_t)(victim - lp->steps + 1) & (lp->capsteps - 1)];
        lb->st.unattached[NSC_LB_NO_STEP]++;
        step_del(lp, victim);
    }
    if ((lp->nsteps + 1) * 2 > lp->capsteps && step_grow(lp)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return NULL;
    }
    size_t i = step_home(lp, id);
    while (lp->steps[i].step_id)
        i = (i + 1) & (lp->capsteps - 1);
    step_acc *s = &lp->steps[i];
    memset(s, 0, sizeof *s);
    s->step_id = id;
    lp->nsteps++;
    return s;
}

/* One step into its ProxyOp's edge, or, once that ProxyOp came flushed
 * open, into its record's (which changes: a new in-flight record).
 * stateless: a step whose states were lost. */
static void fold_step(nsc_lbuild *lb, lproc *lp, op_acc *acc, const nsc_ledger_edge *one, int stateless)
{
    nsc_ledger_edge *to = &acc->e;
    acc->nsteps++;
    if (acc->coll_id) {
        open_coll *c = coll_of(lp, acc->coll_id);
        if (!c) {
            lb->st.unattached[NSC_LB_LATE]++;
            return;
        }
        c->changed = 1;
        c->rec.dropped += (uint32_t)stateless;
        if (!(to = edge_of(lb, c, acc->e.peer, acc->e.channel, acc->e.is_send)))
            return;
    } else {
        acc->stateless += (uint32_t)stateless;
    }
    to->steps += one->steps;
    fold_edge(to, one);
}

static void proxy_step(nsc_lbuild *lb, lproc *lp, const nsc_event *ev)
{
    op_acc *acc = op_of(lp, ev->parent);
    if (!acc && !(acc = op_new(lb, lp, ev->parent)))
        return;
    step_acc *s = step_of(lp, ev->id);
    /* A step flushed open at finalize never completed: it says where its
     * ProxyOp stopped (last_step, last_state), not how long a step takes. */
    int open = (ev->flags & NSC_EVF_OPEN) != 0;
    nsc_ledger_edge one = {.last_step = ev->d.proxy_step.step, .steps = !open, .last_state = s ? s->state : 0};
    if (open) {
        if (s)
            step_del(lp, s);
        fold_step(lb, lp, acc, &one, 0);
        return;
    }
    uint64_t dur = ev->stop_ns > ev->start_ns ? ev->stop_ns - ev->start_ns : 0;
    one.step_sum_ns = dur;
    one.step_max_ns = dur > UINT32_MAX ? UINT32_MAX : (uint32_t)dur;
    if (s) {
        int w = nsc_ledger_wait_of(s->state);
        if (w >= 0 && ev->stop_ns > s->at_ns)
            s->wait[w] += ev->stop_ns - s->at_ns;  /* the last state lasts until the step stops */
        one.bytes = s->bytes;
        one.wait_gpu_ns = s->wait[NSC_LEDGER_WAIT_GPU];
        one.wait_peer_ns = s->wait[NSC_LEDGER_WAIT_PEER];
        one.wait_send_ns = s->wait[NSC_LEDGER_WAIT_SEND];
        one.wait_recv_ns = s->wait[NSC_LEDGER_WAIT_RECV];
        one.wait_flush_ns = s->wait[NSC_LEDGER_WAIT_FLUSH];
        step_del(lp, s);
    }
    fold_step(lb, lp, acc, &one, !s && (lp->sends & SENDS_STATES) && !(ev->flags & NSC_EVF_FOREIGN));
    lp->sends |= SENDS_STEPS;
    acc->pxn |= (ev->flags & NSC_EVF_FOREIGN) != 0;
}

void nsc_lbuild_state(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_state_rec *st)
{
    int w = nsc_ledger_wait_of(st->state);
    if (w < 0)
        return;  /* only a ProxyStep's states are folded */
    lproc *lp = proc_of(lb, p, 1);
    if (!lp)
        return;
    lp->sends |= SENDS_STATES;
    step_acc *s = step_of(lp, st->id);
    if (!s) {
        if (!(s = step_add(lb, lp, st->id)))
            return;
    } else {
        int was = nsc_ledger_wait_of(s->state);
        if (was >= 0 && st->ts_ns > s->at_ns)
            s->wait[was] += st->ts_ns - s->at_ns;
    }
    s->state = st->state;
    s->at_ns = st->ts_ns;
    if (st->arg > s->bytes)
        s->bytes = st->arg;  /* transSize, where the state carries it */
}

void nsc_lbuild_event(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_event *ev, uint64_t now_ns)
{
    lproc *lp = proc_of(lb, p, 1);
    if (!lp)
        return;
    lp->pxn |= (ev->flags & NSC_EVF_FOREIGN) != 0;
    switch (ev->type) {
    case NSC_T_COLL:
    case NSC_T_CE_COLL:
    case NSC_T_P2P: {
        open_coll *c = coll_get(lb, lp, ev->id);
        if (c && !c->known)
            name_coll(lb, p, lp, c, ev, now_ns);
        return;
    }
    case NSC_T_COLL_API:
    case NSC_T_P2P_API:
        lp->api[lp->api_next % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
        api_came(lp, &lp->api[lp->api_next++ % API_RING], 0);
        return;
    case NSC_T_KERNEL_LAUNCH:
        lp->launch[lp->launch_next % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
        api_came(lp, &lp->launch[lp->launch_next++ % API_RING], 1);
        return;
    case NSC_T_PROXY_STEP:
        proxy_step(lb, lp, ev);
        return;
    case NSC_T_KERNEL_CH:
    case NSC_T_PROXY_OP: break;
    default: return;
    }
    open_coll *c = coll_get(lb, lp, ev->parent);
    if (!c)
        return;
    if (ev->type == NSC_T_KERNEL_CH)
        kernel_ch(lb, lp, c, ev);
    else
        proxy_op(lb, lp, c, ev);
    c->changed = 1;
}

void nsc_lbuild_alias(nsc_lbuild *lb, nsc_reg_proc *proxy, nsc_reg_proc *origin, const nsc_a2c_alias *a)
{
    lproc *from = proc_of(lb, proxy, 0);
    step_acc *s = from ? step_of(from, a->proxy_id) : NULL;
    if (!s)
        return;
    step_acc moved = *s;
    step_del(from, s);
    from->dirty = 1;
    lproc *to = proc_of(lb, origin, 1);
    step_acc *t = to ? step_add(lb, to, a->new_id) : NULL;
    if (!t)
        return;
    moved.step_id = a->new_id;
    *t = moved;
}

void nsc_lbuild_completion(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_completion *cm)
{
    lproc *lp = proc_of(lb, p, 1);
    open_coll *c = lp ? coll_get(lb, lp, cm->id) : NULL;
    if (!c)
        return;
    c->done = 1;
    c->rec.done_ns = cm->ts_ns;
}

/* ---- emission -------------------------------------------------------------- */

/* GPU times on the host's clock, from the process's GPU line as it is now.
 * The line is fitted to host times the plugin converted from its counter:
 * their conversion bound (host_err_ns) is part of the GPU times' bound. */
static void gpu_times(lproc *lp, open_coll *c, uint64_t host_err_ns)
{
    nsc_ledger_rec *r = &c->rec;
    uint64_t err_a = 0, err_b = 0;
    r->gpu_start_ns = r->gpu_end_ns = 0;
    if (!c->pstart || !c->pstop_max ||
        nsc_gpuclock_to_cpu(&lp->gpu, c->pstart, &r->gpu_start_ns, &err_a) != NSC_GPUCLOCK_OK ||
        nsc_gpuclock_to_cpu(&lp->gpu, c->pstop_max, &r->gpu_end_ns, &err_b) != NSC_GPUCLOCK_OK) {
        r->gpu_start_ns = r->gpu_end_ns = 0;
        r->flags |= NSC_LEDGER_NO_GPU;
        return;
    }
    r->flags &= ~(uint32_t)NSC_LEDGER_NO_GPU;
    uint64_t err = (err_a > err_b ? err_a : err_b) + host_err_ns, spread = c->pstop_max - c->pstop_min;
    r->gpu_err_ns = err > UINT32_MAX ? UINT32_MAX : (uint32_t)err;
    r->gpu_spread_ns = spread > UINT32_MAX ? UINT32_MAX : (uint32_t)spread;
}

static void emit(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, open_coll *c, int inflight)
{
    gpu_times(lp, c, p->clock_err_ns);
    api_times(lp, c);
    c->rec.flags &= ~(uint32_t)NSC_LEDGER_INFLIGHT;
    c->rec.flags |= inflight ? NSC_LEDGER_INFLIGHT : 0;
    if (c->rec.nedges == 0)
        c->rec.flags |= NSC_LEDGER_NO_NET;
    else
        c->rec.flags &= ~(uint32_t)NSC_LEDGER_NO_NET;
    c->rec.edges = c->edges;
    lb->emit(lb->arg, p, &c->rec);
    if (inflight)
        lb->st.inflight++;
    else
        lb->st.records++;
}

/* Write c's record and forget it; its id is remembered to count what
 * still comes for it. */
static void close_coll(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, size_t i)
{
    nsc_ledger_rec *r = &lp->colls[i].rec;
    /* Every channel's kernel ended when it completed: the KernelChs missing were lost. */
    if (lp->sends & SENDS_KERNEL_CH && r->nchannels > r->nchannels_done)
        r->dropped += (uint32_t)(r->nchannels - r->nchannels_done);
    emit(lb, p, lp, &lp->colls[i], 0);
    lp->closed[lp->closed_next++ % CLOSED_RING] = lp->colls[i].id;
    lp->dirty = 1;
    coll_drop(lb, lp, i);
}

/* Whether c's record waits for ProxyOps that come re-attached (PXN): those
 * of a process known to get them; or, on a communicator spanning nodes, the
 * network legs of a collective without one of its own (its proxy, another
 * process, may send them a whole batch later), until a record of the process
 * waited in vain (no legs on this node's rings, or ProxyOps off). */
static int waits(const lproc *lp, const open_coll *c)
{
    return lp->pxn || (c->net && c->rec.nedges == 0 && !lp->own_net);
}

void nsc_lbuild_batch_end(nsc_lbuild *lb, nsc_reg_proc *p)
{
    lproc *lp = proc_of(lb, p, 0);
    for (size_t i = 0; lp && i < lp->ncolls;) {
        if (lp->colls[i].done && lp->colls[i].known && !waits(lp, &lp->colls[i]))
            close_coll(lb, p, lp, i);
        else
            i++;
    }
}

/* A completed collective that waits (waits()), pxn_wait_ns after a tick saw it. */
static int ripe(const nsc_lbuild *lb, open_coll *c, uint64_t now_ns)
{
    if (!c->ripe_ns)
        c->ripe_ns = now_ns;
    return now_ns - c->ripe_ns >= lb->pxn_wait_ns;
}

/* A process whose plugin said its last word, or that died: what it left
 * open can no longer complete, so its in-flight record need not wait for
 * hang_ms (the process may be forgotten before). */
static int ended(const nsc_reg_proc *p) { return p->finished || !p->alive; }

void nsc_lbuild_tick(nsc_lbuild *lb, nsc_registry *reg, uint64_t now_ns)
{
    for (size_t i = 0; i < lb->nprocs; i++) {
        lproc *lp = &lb->procs[i];
        nsc_reg_proc *p = nsc_reg_by_key(reg, lp->key);
        for (size_t j = 0; p && j < lp->ncolls;) {
            open_coll *c = &lp->colls[j];
            if (c->known && c->done && (!waits(lp, c) || ripe(lb, c, now_ns))) {
                lp->own_net |= waits(lp, c) && !lp->pxn;
                close_coll(lb, p, lp, j);
                continue;
            }
            if (c->known && !c->done && c->changed && (now_ns - c->seen_ns >= lb->hang_ns || ended(p))) {
                emit(lb, p, lp, c, 1);
                c->changed = 0;
            }
            j++;
        }
    }
}

void nsc_lbuild_finish(nsc_lbuild *lb, nsc_registry *reg)
{
    for (size_t i = 0; i < lb->nprocs; i++) {
        lproc *lp = &lb->procs[i];
        nsc_reg_proc *p = nsc_reg_by_key(reg, lp->key);
        for (size_t j = 0; p && j < lp->ncolls;) {
            if (lp->colls[j].known && lp->colls[j].done)
                close_coll(lb, p, lp, j);
            else
                j++;
        }
    }
}

void nsc_lbuild_forget(nsc_lbuild *lb, const nsc_reg_proc *p)
{
    lproc *lp = proc_of(lb, p, 0);
    if (!lp)
        return;
    for (size_t i = 0; i < lp->ncolls; i++)
        lb->st.unattached[drop_reason(&lp->colls[i], NSC_LB_GONE)]++;
    /* Its saved state goes at the next save (without memory it stays, and
     * a successor drops it when the process is not heard in linger_ms). */
    if (nsc_grow(&lb->gone, lb->ngone, &lb->capgone, sizeof *lb->gone, 8) == 0)
        lb->gone[lb->ngone++] = (nsc_lbuild_gone){lp->host, lp->pid};
    proc_remove(lb, lp);
}

void nsc_lbuild_stats_get(const nsc_lbuild *lb, nsc_lbuild_stats *st) { *st = lb->st; }

/* ---- across a kill ----------------------------------------------------------
 * A process's state saved: this header, then its collectives (each followed
 * by its edges), ProxyOps, steps, Send/Recv counts and GPU line. The structs
 * go as they are in memory, pointers cleared: the spool is this host's, and
 * one of another build's layout (other sizes) is refused, never guessed at. */
typedef struct saved_hdr {
    uint16_t sz_hdr, sz_coll, sz_edge, sz_op, sz_step, sz_p2p;
    uint32_t ncolls, nedges, nops, nsteps, np2p, gpu_len;
    uint32_t closed_next, api_next, launch_next;
    uint8_t pxn, own_net, sends;
    uint64_t closed[CLOSED_RING];
    api_start api[API_RING], launch[API_RING];
} saved_hdr;

static void layout(saved_hdr *h)
{
    h->sz_hdr = sizeof(saved_hdr), h->sz_coll = sizeof(open_coll), h->sz_edge = sizeof(nsc_ledger_edge);
    h->sz_op = sizeof(op_acc), h->sz_step = sizeof(step_acc), h->sz_p2p = sizeof(p2p_count);
}

static size_t saved_len(const saved_hdr *h)
{
    return sizeof *h + (size_t)h->ncolls * sizeof(open_coll) + (size_t)h->nedges * sizeof(nsc_ledger_edge) +
           (size_t)h->nops * sizeof(op_acc) + (size_t)h->nsteps * sizeof(step_acc) +
           (size_t)h->np2p * sizeof(p2p_count) + h->gpu_len;
}

static uint8_t *put(uint8_t *at, const void *v, size_t len)
{
    if (len)
        memcpy(at, v, len);
    return at + len;
}

/* lp's state as bytes (malloc'd), or NULL without memory. */
static uint8_t *save_proc(const lproc *lp, size_t *len)
{
    saved_hdr h;
    memset(&h, 0, sizeof h);  /* padding too: it goes to disk */
    layout(&h);
    h.ncolls = (uint32_t)lp->ncolls, h.nops = (uint32_t)lp->nops, h.nsteps = (uint32_t)lp->nsteps;
    h.np2p = (uint32_t)lp->np2p, h.gpu_len = (uint32_t)nsc_gpuclock_serialized_size(&lp->gpu);
    for (size_t i = 0; i < lp->ncolls; i++)
        h.nedges += lp->colls[i].rec.nedges;
    h.closed_next = lp->closed_next, h.api_next = lp->api_next, h.launch_next = lp->launch_next;
    h.pxn = lp->pxn, h.own_net = lp->own_net, h.sends = lp->sends;
    memcpy(h.closed, lp->closed, sizeof h.closed);
    memcpy(h.api, lp->api, sizeof h.api);
    memcpy(h.launch, lp->launch, sizeof h.launch);
    uint8_t *buf = malloc(*len = saved_len(&h)), *at = buf;
    if (!buf)
        return NULL;
    at = put(at, &h, sizeof h);
    for (size_t i = 0; i < lp->ncolls; i++) {
        open_coll c = lp->colls[i];
        c.edges = NULL, c.capedges = 0, c.rec.edges = NULL;
        at = put(at, &c, sizeof c);
        at = put(at, lp->colls[i].edges, c.rec.nedges * sizeof *c.edges);
    }
    at = put(at, lp->ops, lp->nops * sizeof *lp->ops);
    for (size_t i = 0; i < lp->capsteps; i++)
        if (lp->steps[i].step_id)
            at = put(at, &lp->steps[i], sizeof lp->steps[i]);
    at = put(at, lp->p2p, lp->np2p * sizeof *lp->p2p);
    nsc_gpuclock_serialize(&lp->gpu, at);
    return buf;
}

int nsc_lbuild_save(nsc_lbuild *lb, nsc_lbuild_save_fn *fn, void *arg)
{
    for (size_t i = 0; i < lb->nprocs; i++) {
        const lproc *lp = &lb->procs[i];
        size_t len;
        uint8_t *buf = lp->dirty ? save_proc(lp, &len) : NULL;
        if (lp->dirty && (!buf || fn(arg, lp->host, lp->pid, buf, len) != 0))
            return -1;
    }
    for (size_t i = 0; i < lb->ngone; i++)
        if (fn(arg, lb->gone[i].host, lb->gone[i].pid, NULL, 0) != 0)
            return -1;
    return 0;
}

void nsc_lbuild_saved(nsc_lbuild *lb)
{
    for (size_t i = 0; i < lb->nprocs; i++)
        lb->procs[i].dirty = 0;
    lb->ngone = 0;
}

/* Take len bytes at *at into to. */
static void take(void *to, const uint8_t **at, size_t len)
{
    if (len)
        memcpy(to, *at, len);
    *at += len;
}

/* The saved collectives into lp, each with its edges; 0 or -1. */
static int restore_colls(nsc_lbuild *lb, lproc *lp, const saved_hdr *h, const uint8_t **at)
{
    uint64_t nedges = 0;
    for (uint32_t i = 0; i < h->ncolls; i++) {
        open_coll *c = &lp->colls[lp->ncolls];
        take(c, at, sizeof *c);
        c->edges = NULL, c->capedges = 0;
        nedges += c->rec.nedges;
        if (nedges > h->nedges || (c->rec.nedges && !(c->edges = malloc(c->rec.nedges * sizeof *c->edges))))
            return -1;
        c->capedges = c->rec.nedges;
        take(c->edges, at, c->rec.nedges * sizeof *c->edges);
        lp->ncolls++;
        lb->st.open++;
    }
    return nedges == h->nedges ? 0 : -1;
}

static int restore_proc(nsc_lbuild *lb, lproc *lp, const saved_hdr *h, const uint8_t *at)
{
    if (nsc_grow_to(&lp->colls, h->ncolls, &lp->capcolls, sizeof *lp->colls, 8) ||
        nsc_grow_to(&lp->ops, h->nops, &lp->capops, sizeof *lp->ops, 8) ||
        nsc_grow_to(&lp->p2p, h->np2p, &lp->capp2p, sizeof *lp->p2p, 8) || restore_colls(lb, lp, h, &at))
        return -1;
    take(lp->ops, &at, h->nops * sizeof *lp->ops);
    lp->nops = h->nops;
    for (uint32_t i = 0; i < h->nsteps; i++) {
        step_acc s;
        take(&s, &at, sizeof s);
        step_acc *t = s.step_id && !step_of(lp, s.step_id) ? step_add(lb, lp, s.step_id) : NULL;
        if (!t)
            return -1;
        *t = s;
    }
    take(lp->p2p, &at, h->np2p * sizeof *lp->p2p);
    lp->np2p = h->np2p;
    nsc_gpuclock_free(&lp->gpu);
    return nsc_gpuclock_deserialize(&lp->gpu, at, h->gpu_len) == NSC_GPUCLOCK_OK ? 0 : -1;
}

int nsc_lbuild_restore(nsc_lbuild *lb, const nsc_reg_proc *p, const void *buf, size_t len)
{
    saved_hdr h, want;
    memset(&want, 0, sizeof want);
    layout(&want);
    if (len < sizeof h)
        return -1;
    memcpy(&h, buf, sizeof h);
    if (memcmp(&h, &want, offsetof(saved_hdr, ncolls)) != 0 || h.ncolls > lb->max_open ||
        h.nops > lb->max_open || h.nsteps > steps_max(lb) || saved_len(&h) != len || proc_of(lb, p, 0))
        return -1;
    lproc *lp = proc_of(lb, p, 1);
    if (!lp)
        return -1;
    lp->pxn = h.pxn, lp->own_net = h.own_net, lp->sends = h.sends;
    lp->closed_next = h.closed_next, lp->api_next = h.api_next, lp->launch_next = h.launch_next;
    memcpy(lp->closed, h.closed, sizeof lp->closed);
    memcpy(lp->api, h.api, sizeof lp->api);
    memcpy(lp->launch, h.launch, sizeof lp->launch);
    if (restore_proc(lb, lp, &h, (const uint8_t *)buf + sizeof h) == 0)
        return 0;
    proc_remove(lb, lp);
    return -1;
}
