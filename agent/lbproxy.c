/* lbproxy.c: the ledger builder's network legs (see lbuild.h, lbuild_int.h).
 *
 * Owns the ProxyOps and ProxySteps of the open collectives, folded into
 * their collective's edges: the steps wait folded under their ProxyOp's id
 * until it comes, and the steps' states (nsc_lbuild_state and
 * nsc_lbuild_alias in lbuild.c put them) in a table by step id until their
 * step stops.
 */
#include "lbuild_int.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* Room for one more in an array of at most max: the caller counted and
 * the oldest goes. 0, or -1 without memory (counted). */
static int make_room(nsc_lbuild *lb, void *arrp, size_t *n, size_t *cap, size_t elem, size_t max)
{
    if (*n >= max) {
        void *arr;
        memcpy(&arr, arrp, sizeof arr);
        nsc_lb_remove_at(arr, n, 0, elem);
    }
    if (nsc_grow(arrp, *n, cap, elem, 8)) {
        lb->st.unattached[NSC_LB_NOMEM]++;
        return -1;
    }
    return 0;
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

void nsc_lb_proxy_op(nsc_lbuild *lb, lproc *lp, open_coll *c, const nsc_event *ev)
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
        nsc_lb_remove_at(lp->ops, &lp->nops, (size_t)(acc - lp->ops), sizeof *lp->ops);
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

step_acc *nsc_lb_step_of(lproc *lp, uint64_t step_id)
{
    for (size_t i = lp->capsteps ? step_home(lp, step_id) : 0; lp->capsteps && lp->steps[i].step_id;
         i = (i + 1) & (lp->capsteps - 1))
        if (lp->steps[i].step_id == step_id)
            return &lp->steps[i];
    return NULL;
}

/* Free s's slot, moving back the entries after it that probed past it. */
void nsc_lb_step_del(lproc *lp, step_acc *s)
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
step_acc *nsc_lb_step_add(nsc_lbuild *lb, lproc *lp, uint64_t id)
{
    size_t max = nsc_lb_steps_max(lb);
    if (lp->nsteps >= max) {
        step_acc *victim = &lp->steps[step_home(lp, id)];
        while (!victim->step_id)
            victim = &lp->steps[(size_t)(victim - lp->steps + 1) & (lp->capsteps - 1)];
        lb->st.unattached[NSC_LB_NO_STEP]++;
        nsc_lb_step_del(lp, victim);
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
        open_coll *c = nsc_lb_coll_of(lp, acc->coll_id);
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

void nsc_lb_proxy_step(nsc_lbuild *lb, lproc *lp, const nsc_event *ev)
{
    op_acc *acc = op_of(lp, ev->parent);
    if (!acc && !(acc = op_new(lb, lp, ev->parent)))
        return;
    step_acc *s = nsc_lb_step_of(lp, ev->id);
    /* A step flushed open at finalize never completed: it says where its
     * ProxyOp stopped (last_step, last_state), not how long a step takes. */
    int open = (ev->flags & NSC_EVF_OPEN) != 0;
    nsc_ledger_edge one = {.last_step = ev->d.proxy_step.step, .steps = !open, .last_state = s ? s->state : 0};
    if (open) {
        if (s)
            nsc_lb_step_del(lp, s);
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
        nsc_lb_step_del(lp, s);
    }
    fold_step(lb, lp, acc, &one, !s && (lp->sends & SENDS_STATES) && !(ev->flags & NSC_EVF_FOREIGN));
    lp->sends |= SENDS_STEPS;
    acc->pxn |= (ev->flags & NSC_EVF_FOREIGN) != 0;
}
