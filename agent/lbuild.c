/* lbuild.c: the agent's ledger builder (see lbuild.h). */
#include "lbuild.h"

#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "gpuclock.h"
#include "grow.h"

/* ProxySteps folded under their ProxyOp's id, before the ProxyOp stops. */
typedef struct op_acc {
    uint64_t op_id;
    nsc_ledger_edge e;  /* peer, channel, is_send unset */
    uint32_t nsteps;    /* ProxySteps folded */
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
    uint64_t api_parent;     /* the Coll's parent (its CollApi, v5+) */
    uint64_t pstart, pstop_min, pstop_max;  /* pTimers of its channels (0: none) */
    uint64_t ripe_ns;        /* agent clock: a tick saw it done (PXN processes wait from then) */
    uint8_t known, done, changed;  /* known: its Coll came; changed: since its last in-flight record */
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

typedef struct lproc {
    uint64_t key;
    uint8_t pxn;              /* it received re-attached PXN events: records wait for them */
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

void nsc_lbuild_free(nsc_lbuild *lb)
{
    if (!lb)
        return;
    for (size_t i = 0; i < lb->nprocs; i++)
        proc_free(&lb->procs[i]);
    free(lb->procs);
    free(lb);
}

static lproc *proc_of(nsc_lbuild *lb, uint64_t key, int create)
{
    for (size_t i = 0; i < lb->nprocs; i++)
        if (lb->procs[i].key == key)
            return &lb->procs[i];
    if (!create || nsc_grow(&lb->procs, lb->nprocs, &lb->capprocs, sizeof *lb->procs, 8)) {
        lb->st.unattached[NSC_LB_NOMEM] += create;
        return NULL;
    }
    lproc *lp = &lb->procs[lb->nprocs++];
    memset(lp, 0, sizeof *lp);
    lp->key = key;
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

/* Its Coll (CeColl, P2p) names the collective; hang_ms counts from now on. */
static void name_coll(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, open_coll *c, const nsc_event *ev,
                      uint64_t now_ns)
{
    c->known = c->changed = 1;
    c->seen_ns = now_ns;
    c->api_parent = ev->parent;
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
    r->bytes = nsc_busbw_rule(nsc_reg_str(p, r->func), nranks, r->count,
                              nsc_dtype_size(nsc_reg_str(p, r->datatype))).bytes;
}

static const api_start *ring_find(const api_start *ring, uint64_t id, int by_parent)
{
    for (unsigned i = 0; id && i < API_RING; i++)
        if ((by_parent ? ring[i].parent : ring[i].id) == id)
            return &ring[i];
    return NULL;
}

/* The API call and the kernel launch: a CollApi stops after its Coll (the
 * call returns after the enqueue), so they are looked up when emitting. */
static void api_times(lproc *lp, open_coll *c)
{
    const api_start *api = ring_find(lp->api, c->api_parent, 0);
    const api_start *launch = api ? ring_find(lp->launch, api->parent, 1) : NULL;
    c->rec.api_ns = api ? api->start_ns : 0;
    c->rec.launch_ns = launch ? launch->start_ns : 0;
}

/* ---- children: KernelCh, ProxyOp, ProxyStep, states ------------------------ */

static void kernel_ch(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev)
{
    const __typeof__(ev->d.kernel_ch) *k = &ev->d.kernel_ch;
    if (k->ptimer_stop && k->ptimer_stop_ns && nsc_gpuclock_add(&lp->gpu, k->ptimer_stop, k->ptimer_stop_ns))
        lb->st.unattached[NSC_LB_NOMEM]++;
    if (k->ptimer_start && (!c->pstart || k->ptimer_start < c->pstart))
        c->pstart = k->ptimer_start;
    if (k->ptimer_stop) {
        if (!c->pstop_min || k->ptimer_stop < c->pstop_min)
            c->pstop_min = k->ptimer_stop;
        if (k->ptimer_stop > c->pstop_max)
            c->pstop_max = k->ptimer_stop;
    }
    c->rec.nchannels_done++;
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

static void proxy_op(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev)
{
    const __typeof__(ev->d.proxy_op) *o = &ev->d.proxy_op;
    op_acc *acc = op_of(lp, ev->id);
    nsc_ledger_edge *e = edge_of(lb, c, o->peer, o->channel, o->is_send);
    if (e) {
        /* A ProxyOp stops when its last step is done: its steps count even
         * when ProxyStep events are off. */
        e->steps += o->nsteps > 0 ? (uint32_t)o->nsteps : 0;
        if (acc)
            fold_edge(e, &acc->e);
    }
    if (ev->flags & NSC_EVF_FOREIGN || (acc && acc->pxn))
        c->rec.flags |= NSC_LEDGER_PXN;
    if (acc)
        remove_at(lp->ops, &lp->nops, (size_t)(acc - lp->ops), sizeof *lp->ops);
}

/* ---- steps of states, by id: a batch's states come before its steps, so
 * thousands may wait at once --------------------------------------------- */

static size_t step_home(const lproc *lp, uint64_t id)
{
    return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (lp->capsteps - 1);
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

static void proxy_step(nsc_lbuild *lb, lproc *lp, const nsc_event *ev)
{
    op_acc *acc = op_of(lp, ev->parent);
    if (!acc) {
        if (lp->nops >= lb->max_open)
            lb->st.unattached[NSC_LB_NO_OP] += lp->ops[0].nsteps;
        if (make_room(lb, &lp->ops, &lp->nops, &lp->capops, sizeof *lp->ops, lb->max_open))
            return;
        acc = &lp->ops[lp->nops++];
        memset(acc, 0, sizeof *acc);
        acc->op_id = ev->parent;
        acc->e.last_step = -1;
    }
    step_acc *s = step_of(lp, ev->id);
    nsc_ledger_edge one = {.last_step = ev->d.proxy_step.step};
    uint64_t dur = ev->stop_ns > ev->start_ns ? ev->stop_ns - ev->start_ns : 0;
    one.step_sum_ns = dur;
    one.step_max_ns = dur > UINT32_MAX ? UINT32_MAX : (uint32_t)dur;
    if (s) {
        int w = nsc_ledger_wait_of(s->state);
        if (w >= 0 && ev->stop_ns > s->at_ns)
            s->wait[w] += ev->stop_ns - s->at_ns;  /* the last state lasts until the step stops */
        one.last_state = s->state;
        one.bytes = s->bytes;
        one.wait_gpu_ns = s->wait[NSC_LEDGER_WAIT_GPU];
        one.wait_peer_ns = s->wait[NSC_LEDGER_WAIT_PEER];
        one.wait_send_ns = s->wait[NSC_LEDGER_WAIT_SEND];
        one.wait_recv_ns = s->wait[NSC_LEDGER_WAIT_RECV];
        one.wait_flush_ns = s->wait[NSC_LEDGER_WAIT_FLUSH];
        step_del(lp, s);
    }
    fold_edge(&acc->e, &one);
    acc->nsteps++;
    acc->pxn |= (ev->flags & NSC_EVF_FOREIGN) != 0;
}

void nsc_lbuild_state(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_state_rec *st)
{
    int w = nsc_ledger_wait_of(st->state);
    if (w < 0)
        return;  /* only a ProxyStep's states are folded */
    lproc *lp = proc_of(lb, p->key, 1);
    if (!lp)
        return;
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
    lproc *lp = proc_of(lb, p->key, 1);
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
        lp->api[lp->api_next++ % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
        return;
    case NSC_T_KERNEL_LAUNCH:
        lp->launch[lp->launch_next++ % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
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
    lproc *from = proc_of(lb, proxy->key, 0);
    step_acc *s = from ? step_of(from, a->proxy_id) : NULL;
    if (!s)
        return;
    step_acc moved = *s;
    step_del(from, s);
    lproc *to = proc_of(lb, origin->key, 1);
    step_acc *t = to ? step_add(lb, to, a->new_id) : NULL;
    if (!t)
        return;
    moved.step_id = a->new_id;
    *t = moved;
}

void nsc_lbuild_completion(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_completion *cm)
{
    lproc *lp = proc_of(lb, p->key, 1);
    open_coll *c = lp ? coll_get(lb, lp, cm->id) : NULL;
    if (!c)
        return;
    c->done = 1;
    c->rec.done_ns = cm->ts_ns;
}

/* ---- emission -------------------------------------------------------------- */

/* GPU times on the host's clock, from the process's GPU line as it is now. */
static void gpu_times(lproc *lp, open_coll *c)
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
    uint64_t err = err_a > err_b ? err_a : err_b, spread = c->pstop_max - c->pstop_min;
    r->gpu_err_ns = err > UINT32_MAX ? UINT32_MAX : (uint32_t)err;
    r->gpu_spread_ns = spread > UINT32_MAX ? UINT32_MAX : (uint32_t)spread;
}

static void emit(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, open_coll *c, int inflight)
{
    gpu_times(lp, c);
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
    emit(lb, p, lp, &lp->colls[i], 0);
    lp->closed[lp->closed_next++ % CLOSED_RING] = lp->colls[i].id;
    coll_drop(lb, lp, i);
}

void nsc_lbuild_batch_end(nsc_lbuild *lb, nsc_reg_proc *p)
{
    lproc *lp = proc_of(lb, p->key, 0);
    if (!lp || lp->pxn)
        return;
    for (size_t i = 0; i < lp->ncolls;) {
        if (lp->colls[i].done && lp->colls[i].known)
            close_coll(lb, p, lp, i);
        else
            i++;
    }
}

/* A PXN process's completed collective, pxn_wait_ns after a tick saw it. */
static int ripe(const nsc_lbuild *lb, open_coll *c, uint64_t now_ns)
{
    if (!c->ripe_ns)
        c->ripe_ns = now_ns;
    return now_ns - c->ripe_ns >= lb->pxn_wait_ns;
}

void nsc_lbuild_tick(nsc_lbuild *lb, nsc_registry *reg, uint64_t now_ns)
{
    for (size_t i = 0; i < lb->nprocs; i++) {
        lproc *lp = &lb->procs[i];
        nsc_reg_proc *p = nsc_reg_by_key(reg, lp->key);
        for (size_t j = 0; p && j < lp->ncolls;) {
            open_coll *c = &lp->colls[j];
            if (c->known && c->done && ripe(lb, c, now_ns)) {
                close_coll(lb, p, lp, j);
                continue;
            }
            if (c->known && !c->done && c->changed && now_ns - c->seen_ns >= lb->hang_ns) {
                emit(lb, p, lp, c, 1);
                c->changed = 0;
            }
            j++;
        }
    }
}

void nsc_lbuild_forget(nsc_lbuild *lb, const nsc_reg_proc *p)
{
    lproc *lp = proc_of(lb, p->key, 0);
    if (!lp)
        return;
    for (size_t i = 0; i < lp->ncolls; i++)
        lb->st.unattached[drop_reason(&lp->colls[i], NSC_LB_GONE)]++;
    lb->st.open -= lp->ncolls;
    proc_free(lp);
    *lp = lb->procs[--lb->nprocs];
}

void nsc_lbuild_stats_get(const nsc_lbuild *lb, nsc_lbuild_stats *st) { *st = lb->st; }
