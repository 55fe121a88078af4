/* lbuild.c: the agent's ledger builder (see lbuild.h, lbuild_int.h).
 *
 * Owns the builder's processes and their open collectives: opening one by
 * whichever record comes first, naming it from its Coll, its API call and
 * kernel launch, its KernelChs, its completion, and writing its record
 * (completed or in flight). ProxyOps and steps are folded in lbproxy.c, the
 * state saved and restored in lbsave.c.
 */
#include "lbuild_int.h"

#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "gpuclock.h"
#include "grow.h"
#include "spool.h"

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
    free(lp->graph_apis);
    nsc_gpuclock_free(&lp->gpu);
}

void nsc_lb_proc_remove(nsc_lbuild *lb, lproc *lp)
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
lproc *nsc_lb_proc_of(nsc_lbuild *lb, const nsc_reg_proc *p, int create)
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

/* A collective dropped unfinished counts by what was known of it. */
static unsigned drop_reason(const open_coll *c, unsigned known_reason)
{
    return c->known ? known_reason : NSC_LB_NO_COLL;
}

static void coll_drop(nsc_lbuild *lb, lproc *lp, size_t i)
{
    free(lp->colls[i].edges);
    nsc_lb_remove_at(lp->colls, &lp->ncolls, i, sizeof *lp->colls);
    lb->st.open--;
}

/* ---- identity: Coll, CeColl, CollApi ------------------------------------- */

static void close_coll(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, size_t i);

/* The collective of id, opened by whichever of its records comes first.
 * Past max_open the oldest gives way: one that completed and only waits for
 * network legs another process may send (waits()) is written as it is (a
 * leg coming later counts as late), else it is dropped, counted. A process
 * of several ranks run flat out completes more collectives than max_open
 * within ledger_pxn_wait_ms, and before, its ranks without a network leg
 * lost most of their records. */
static open_coll *coll_get(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, uint64_t id)
{
    open_coll *c = nsc_lb_coll_of(lp, id);
    if (c)
        return c;
    for (unsigned i = 0; i < CLOSED_RING; i++)
        if (lp->closed[i] == id) {
            lb->st.unattached[NSC_LB_LATE]++;
            return NULL;
        }
    if (lp->ncolls >= lb->max_open) {
        if (lp->colls[0].known && lp->colls[0].done) {
            lb->st.early++;
            close_coll(lb, p, lp, 0);
        } else {
            lb->st.unattached[drop_reason(&lp->colls[0], NSC_LB_OVERFLOW)]++;
            coll_drop(lb, lp, 0);
        }
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

/* An API call or kernel launch (e) for the open collectives it belongs to;
 * graph: the call was captured in a CUDA graph. */
static void api_came(lproc *lp, const api_start *e, int launch, int graph)
{
    for (size_t i = 0; i < lp->ncolls; i++) {
        open_coll *c = &lp->colls[i];
        if (!launch && c->known && c->api_parent == e->id && graph) {
            /* a replay come before its capture's call: not its own call */
            c->rec.flags |= NSC_LEDGER_GRAPH;
            c->api_parent = 0;
            continue;
        }
        if (!launch && c->known && c->api_parent == e->id && !c->rec.api_ns)
            c->rec.api_ns = e->start_ns, c->group_api = e->parent;
        else if (launch && c->group_api && c->group_api == e->parent && !c->rec.launch_ns)
            c->rec.launch_ns = e->start_ns;
    }
}

/* ---- CUDA graphs ------------------------------------------------------------ */

/* Where id is, or would go, in lp's sorted graph-captured API ids. */
static size_t graph_api_at(const lproc *lp, uint64_t id)
{
    size_t lo = 0, hi = lp->ngraph;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (lp->graph_apis[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int graph_api_found(const lproc *lp, size_t at, uint64_t id)
{
    return at < lp->ngraph && lp->graph_apis[at] == id;
}

static int graph_api_has(const lproc *lp, uint64_t id) { return graph_api_found(lp, graph_api_at(lp, id), id); }

/* A call captured in a graph: kept for the replays' Colls, which name it
 * (beyond GRAPH_APIS_MAX, or without memory, its replays go unmarked). */
static void graph_api_add(nsc_lbuild *lb, lproc *lp, uint64_t id)
{
    size_t at = graph_api_at(lp, id);
    if (graph_api_found(lp, at, id))
        return;
    if (lp->ngraph >= GRAPH_APIS_MAX ||
        nsc_grow(&lp->graph_apis, lp->ngraph, &lp->capgraph, sizeof *lp->graph_apis, 16)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return;
    }
    memmove(&lp->graph_apis[at + 1], &lp->graph_apis[at], (lp->ngraph - at) * sizeof *lp->graph_apis);
    lp->graph_apis[at] = id;
    lp->ngraph++;
    lp->dirty = 1;
}

/* Its Coll (CeColl, P2p) names the collective; hang_ms counts from now on. */
static void name_coll(nsc_lbuild *lb, nsc_reg_proc *p, lproc *lp, open_coll *c, const nsc_event *ev,
                      uint64_t now_ns)
{
    c->known = c->changed = 1;
    c->seen_ns = now_ns;
    nsc_ledger_rec *r = &c->rec;
    /* A replay of a captured graph: its API call and launch were the
     * capture's, long before; it has none of its own. */
    if (graph_api_has(lp, ev->parent))
        r->flags |= NSC_LEDGER_GRAPH;
    else
        c->api_parent = ev->parent;
    api_times(lp, c);
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

/* ---- children: KernelCh, states (ProxyOp, ProxyStep: lbproxy.c) ----------- */

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

void nsc_lbuild_state(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_state_rec *st)
{
    int w = nsc_ledger_wait_of(st->state);
    if (w < 0)
        return;  /* only a ProxyStep's states are folded */
    lproc *lp = nsc_lb_proc_of(lb, p, 1);
    if (!lp)
        return;
    lp->sends |= SENDS_STATES;
    step_acc *s = nsc_lb_step_of(lp, st->id);
    if (!s) {
        if (!(s = nsc_lb_step_add(lb, lp, st->id)))
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
    lproc *lp = nsc_lb_proc_of(lb, p, 1);
    if (!lp)
        return;
    lp->pxn |= (ev->flags & NSC_EVF_FOREIGN) != 0;
    switch (ev->type) {
    case NSC_T_COLL:
    case NSC_T_CE_COLL:
    case NSC_T_P2P: {
        open_coll *c = coll_get(lb, p, lp, ev->id);
        if (c && !c->known)
            name_coll(lb, p, lp, c, ev, now_ns);
        return;
    }
    case NSC_T_COLL_API:
    case NSC_T_P2P_API: {
        int graph = (ev->flags & NSC_EVF_GRAPH) != 0;
        if (graph)
            graph_api_add(lb, lp, ev->id);
        lp->api[lp->api_next % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
        api_came(lp, &lp->api[lp->api_next++ % API_RING], 0, graph);
        return;
    }
    case NSC_T_KERNEL_LAUNCH:
        lp->launch[lp->launch_next % API_RING] = (api_start){ev->id, ev->parent, ev->start_ns};
        api_came(lp, &lp->launch[lp->launch_next++ % API_RING], 1, 0);
        return;
    case NSC_T_PROXY_STEP:
        nsc_lb_proxy_step(lb, lp, ev);
        return;
    case NSC_T_KERNEL_CH:
    case NSC_T_PROXY_OP: break;
    default: return;
    }
    open_coll *c = coll_get(lb, p, lp, ev->parent);
    if (!c)
        return;
    if (ev->type == NSC_T_KERNEL_CH)
        kernel_ch(lb, lp, c, ev);
    else
        nsc_lb_proxy_op(lb, lp, c, ev);
    c->changed = 1;
}

void nsc_lbuild_alias(nsc_lbuild *lb, nsc_reg_proc *proxy, nsc_reg_proc *origin, const nsc_a2c_alias *a)
{
    lproc *from = nsc_lb_proc_of(lb, proxy, 0);
    step_acc *s = from ? nsc_lb_step_of(from, a->proxy_id) : NULL;
    if (!s)
        return;
    step_acc moved = *s;
    nsc_lb_step_del(from, s);
    from->dirty = 1;
    lproc *to = nsc_lb_proc_of(lb, origin, 1);
    step_acc *t = to ? nsc_lb_step_add(lb, to, a->new_id) : NULL;
    if (!t)
        return;
    moved.step_id = a->new_id;
    *t = moved;
}

void nsc_lbuild_completion(nsc_lbuild *lb, nsc_reg_proc *p, const nsc_completion *cm)
{
    lproc *lp = nsc_lb_proc_of(lb, p, 1);
    open_coll *c = lp ? coll_get(lb, p, lp, cm->id) : NULL;
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
    lproc *lp = nsc_lb_proc_of(lb, p, 0);
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
    lproc *lp = nsc_lb_proc_of(lb, p, 0);
    if (!lp)
        return;
    for (size_t i = 0; i < lp->ncolls; i++)
        lb->st.unattached[drop_reason(&lp->colls[i], NSC_LB_GONE)]++;
    /* Its saved state goes at the next save (without memory it stays, and
     * a successor drops it when the process is not heard in linger_ms). */
    if (nsc_grow(&lb->gone, lb->ngone, &lb->capgone, sizeof *lb->gone, 8) == 0)
        lb->gone[lb->ngone++] = (nsc_lbuild_gone){lp->host, lp->pid};
    nsc_lb_proc_remove(lb, lp);
}

void nsc_lbuild_stats_get(const nsc_lbuild *lb, nsc_lbuild_stats *st) { *st = lb->st; }
