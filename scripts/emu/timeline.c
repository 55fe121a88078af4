/* timeline.c: a rank's device timeline, played on its proxy thread.
 *
 * Owns what happens to one collective or p2p op after the host enqueued it:
 * the device starts it when its previous work is done (model.c), the
 * KernelCh events open there; the rank publishes that start on the wire and
 * reads every peer's; the cost model gives each network step its times; then
 * every event (ProxyOp, ProxyStep with its states, NetPlugin, KernelPhase,
 * KernelCh stop) is made when its time comes, the legs of all channels
 * merged in time order, as NCCL's proxy progresses its ops round-robin. The
 * plugin reads the clock itself: with the clock shim's floor (clock.c) each
 * event is made up to a horizon ahead of real time, the thread's clock
 * raised to the event's time, so the plugin stamps it with exactly that
 * time and the thread sleeps only for events beyond the horizon; without
 * it the thread sleeps until each time (events closer than the kernel's
 * timer slack are made together). Without the model (--time-scale 0) every
 * time is "now": the same calls, in leg order.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"

#define MAX_QPS 8

enum { LEG_SEND, LEG_RECV, LEG_KCH };

typedef struct leg {
    emu_rank *r;
    void *ctx;
    bool foreign;
    int kind;
    emu_ev ev;            /* the ProxyOp, or the KernelCh's mask and parent */
    void *op_h, *step_h, *np_h[MAX_QPS];
    emu_ev step_ev;
    int n, step, phase;
    emu_step_t *t;        /* per step; NULL: no model */
    size_t bytes;
    void *kch;            /* LEG_KCH: its KernelCh, channel, span */
    int ch;
    uint64_t k1;          /* when the channel ends */
    emu_coll_rec *rec;
    const emu_op *op;     /* whose leg (an op's legs are timed together) */
    uint64_t due;         /* run_legs: its next action's time */
    bool over;
} leg;

/* The GPU timer `lag_ns` before `stamp`, the time of the proxy's call, and
 * its sample. The call is stamped with the modelled time (emu_timeline_wait:
 * exactly with the clock floor, else give or take the sleep's precision). */
static uint64_t gpu_before(emu_rank *r, uint64_t stamp, uint64_t lag_ns)
{
    uint64_t t = stamp - lag_ns;
    uint64_t timer = emu_gpu_time(&r->acct->gpu, t);
    emu_acct *a = r->acct;
    if (a->nsamples < r->w->acct.sample_cap)
        r->samples[a->nsamples++] = (emu_sample){timer, t};
    return timer;
}

static uint64_t gpu_at(emu_rank *r, uint64_t lag_ns)
{
    return gpu_before(r, emu_clock_stamp_ns(), lag_ns);
}

/* ---- one leg's actions ---- */

/* What NCCL's IB net plugin hands the profiler callback as extData for one
 * queue pair of a request (ncclProfilerNetIbDescr_v1_t: 40 bytes). */
typedef struct emu_ib_descr {
    uint8_t type; /* ncclProfileQp */
    struct { int device; uint64_t wr_id; int opcode; int qp_num; size_t length; } qp;
} emu_ib_descr;

#define EMU_NET_TYPE_IB (1ll << 16)
#define EMU_NET_IB_VERSION 1
#define EMU_IBV_WR_RDMA_WRITE_WITH_IMM 1

/* The net plugin's callback starts one event per queue pair when the
 * request is posted (parent: the ProxyStep) and stops it at completion. The
 * descriptor lives in the net plugin's memory, in the proxy's process. */
static void net_plugin_start(leg *l)
{
    static __thread emu_ib_descr descr[MAX_QPS];
    int nqp = l->r->w->o->net_qps;
    bool send = l->kind == LEG_SEND;
    for (int q = 0; q < nqp; q++) {
        descr[q] = (emu_ib_descr){.type = 1,
                                  .qp = {.device = 0, .wr_id = (uint64_t)l->step,
                                         .opcode = send ? EMU_IBV_WR_RDMA_WRITE_WITH_IMM : 0,
                                         .qp_num = 0x100 + q, .length = send ? l->bytes / (size_t)nqp : 0}};
        emu_ev ev = {.type = NSC_T_NET_PLUGIN, .mask = l->step_ev.mask, .parent = l->step_h,
                     .rank = l->step_ev.rank, .comm_id = l->step_ev.comm_id, .comm_name = l->step_ev.comm_name};
        ev.d.net_plugin.id = EMU_NET_TYPE_IB | EMU_NET_IB_VERSION;
        ev.d.net_plugin.data = &descr[q];
        l->np_h[q] = emu_start_on(l->r, l->ctx, &ev, l->foreign);
    }
}

static void net_plugin_stop(leg *l)
{
    for (int q = 0; q < l->r->w->o->net_qps; q++)
        emu_stop_on(l->r, NSC_T_NET_PLUGIN, l->np_h[q], l->foreign);
}

static void step_state(leg *l, int state)
{
    emu_state_on(l->r, NSC_T_PROXY_STEP, l->step_h, state, l->bytes, 0, l->foreign);
}

static void step_stop(leg *l)
{
    if (emu_quirk_step_stops(l->step, l->n))
        emu_stop_on(l->r, NSC_T_PROXY_STEP, l->step_h, l->foreign);
    else
        emu_abandon_on(l->r, l->step_h, l->foreign);
}

/* v1-v3 report the op's progress as ProxyOp states at its end. */
static void op_finish(leg *l)
{
    static const int v1_send[] = {NSC_S_PROXY_OP_SEND_POSTED, NSC_S_PROXY_OP_SEND_REM_FIFO_WAIT,
                                  NSC_S_PROXY_OP_SEND_TRANSMITTED, NSC_S_PROXY_OP_SEND_DONE};
    static const int v1_recv[] = {NSC_S_PROXY_OP_RECV_POSTED, NSC_S_PROXY_OP_RECV_RECEIVED,
                                  NSC_S_PROXY_OP_RECV_TRANSMITTED, NSC_S_PROXY_OP_RECV_DONE};
    if (l->r->w->pl.version <= 3)
        for (int i = 0; i < 4; i++)
            emu_state_on(l->r, NSC_T_PROXY_OP, l->op_h, l->kind == LEG_SEND ? v1_send[i] : v1_recv[i],
                         (uint64_t)l->n * l->bytes, l->n, l->foreign);
    emu_stop_on(l->r, NSC_T_PROXY_OP, l->op_h, l->foreign);
}

static void step_begin(leg *l)
{
    if (l->step == 0) {
        l->op_h = emu_start_on(l->r, l->ctx, &l->ev, l->foreign);
        if (l->r->w->pl.version >= 4)
            emu_state_on(l->r, NSC_T_PROXY_OP, l->op_h, NSC_S_PROXY_OP_IN_PROGRESS, 0, 0, l->foreign);
    }
    l->step_ev = (emu_ev){.type = NSC_T_PROXY_STEP, .mask = l->ev.mask, .parent = l->op_h, .rank = l->ev.rank,
                          .comm_id = l->ev.comm_id, .comm_name = l->ev.comm_name};
    l->step_ev.d.proxy_step.step = l->step;
    l->step_h = emu_start_on(l->r, l->ctx, &l->step_ev, l->foreign);
}

/* Send: posted (GPUWait) / data ready (PeerWait, v4+) / peer ready (SendWait,
 * the request posted) / done. Receive: posted (RecvWait, request posted) /
 * arrived (FlushWait, GPUWait) / done. */
static void send_phase(leg *l)
{
    switch (l->phase) {
    case 0: step_begin(l); step_state(l, NSC_S_PROXY_STEP_SEND_GPU_WAIT); break;
    case 1:
        if (l->r->w->pl.version >= 4)
            step_state(l, NSC_S_PROXY_STEP_SEND_PEER_WAIT);
        break;
    case 2: step_state(l, NSC_S_PROXY_STEP_SEND_WAIT); net_plugin_start(l); break;
    default:
        net_plugin_stop(l);
        step_stop(l);
        break;
    }
}

static void recv_phase(leg *l)
{
    switch (l->phase) {
    case 0: step_begin(l); step_state(l, NSC_S_PROXY_STEP_RECV_WAIT); net_plugin_start(l); break;
    case 1:
        net_plugin_stop(l);
        step_state(l, NSC_S_PROXY_STEP_RECV_FLUSH_WAIT);
        step_state(l, NSC_S_PROXY_STEP_RECV_GPU_WAIT);
        break;
    default: step_stop(l); break;
    }
}

/* v7: the kernel's phases on one channel, with their GPU timers, at its end. */
static void kch_finish(leg *l)
{
    static const char *const names[] = {"initial_sync", "compute", "final_sync"};
    emu_rank *r = l->r;
    for (int p = 0; r->w->o->kernel_phases && p < 3; p++) {
        emu_ev ev = {.type = NSC_T_KERNEL_PHASE, .mask = l->ev.mask, .parent = l->kch};
        ev.d.kernel_phase.ch = (uint8_t)l->ch;
        ev.d.kernel_phase.phase = (uint8_t)p;
        ev.d.kernel_phase.name = names[p];
        ev.d.kernel_phase.ptimer = gpu_at(r, 1200);
        void *h = emu_start(r, &ev);
        emu_state(r, NSC_T_KERNEL_PHASE, h, NSC_S_KERNEL_PHASE_STOP,
                  gpu_at(r, 1000), 0);
        emu_stop(r, NSC_T_KERNEL_PHASE, h);
    }
    /* The pair a GPU line is fitted to: the plugin's time of this call stays
     * the pTimer's plus 0.8 us, as the clock checks assume, with the stamp
     * held for the call. Unheld, on a proxy behind real time (a loaded
     * machine) the plugin reads the clock again, later by that thread's own
     * delay, and runs of pairs 1-1.1 us late put an agent's GPU line past the
     * 1 us floor of its bound (agent_e2e_ledger_kill, 1 run in 140). */
    uint64_t stamp = emu_clock_stamp_ns();
    uint64_t timer = emu_quirk_kch_stop(l->ch, emu_quirk_kch_timer(r, l->op, l->ch, true, gpu_before(r, stamp, 800)));
    emu_clock_hold(stamp);
    emu_state(r, NSC_T_KERNEL_CH, l->kch, NSC_S_KERNEL_CH_STOP, timer, 0);
    emu_clock_hold(0);
    emu_stop(r, NSC_T_KERNEL_CH, l->kch);
    if (l->rec) {
        uint64_t made = emu_clock_stamp_ns(), real = emu_true_ns();
        l->rec->complete_ns = made;
        l->rec->behind_ns = real > made ? real - made : 0;
    }
}

static int phases_of(const leg *l)
{
    return l->kind == LEG_SEND ? 4 : 3;
}

/* When the leg's next action is due: 0 without the model, EMU_NEVER if never. */
static uint64_t next_time(const leg *l)
{
    if (l->kind == LEG_KCH)
        return l->k1;
    if (!l->t)
        return 0;
    if (l->step == l->n)
        return l->n ? l->t[l->n - 1].done : 0;
    const emu_step_t *s = &l->t[l->step];
    if (l->kind == LEG_SEND)
        return (uint64_t[]){s->post, s->data, s->peer, s->done}[l->phase];
    return (uint64_t[]){s->post, s->data, s->done}[l->phase];
}

static void do_next(leg *l)
{
    if (l->kind == LEG_KCH) {
        kch_finish(l);
        l->over = true;
        return;
    }
    if (l->step == l->n) {
        if (l->n == 0)
            l->op_h = emu_start_on(l->r, l->ctx, &l->ev, l->foreign);
        op_finish(l);
        l->over = true;
        return;
    }
    (l->kind == LEG_SEND ? send_phase : recv_phase)(l);
    if (++l->phase == phases_of(l))
        l->phase = 0, l->step++;
}

/* Every leg's actions in time order (ties: leg order), each when due; a leg
 * whose next action never comes stays where it is, its events open. */
static uint64_t due_of(const leg *l)
{
    return l->over ? EMU_NEVER : next_time(l);
}

static void run_legs(leg *legs, int n)
{
    for (int i = 0; i < n; i++)
        legs[i].due = due_of(&legs[i]);
    for (;;) {
        int best = -1;
        uint64_t bt = EMU_NEVER;
        for (int i = 0; i < n; i++)
            if (legs[i].due < bt)
                bt = legs[i].due, best = i;
        if (best < 0)
            return;
        emu_timeline_wait_event(bt);
        do_next(&legs[best]);
        legs[best].due = due_of(&legs[best]);
    }
}

/* ---- building an op's legs ---- */

typedef struct op_plan {
    leg *legs;
    int nlegs, cap_legs;
} op_plan;

static leg *add_leg(op_plan *p, emu_rank *r, int kind)
{
    if (p->nlegs == p->cap_legs) {
        p->cap_legs = p->cap_legs ? 2 * p->cap_legs : 16;
        p->legs = realloc(p->legs, (size_t)p->cap_legs * sizeof *p->legs);
        if (!p->legs)
            emu_die("out of memory");
    }
    leg *l = &p->legs[p->nlegs++];
    *l = (leg){.r = r, .ctx = r->ctx, .kind = kind};
    return l;
}

static void proxy_op_event(emu_ev *ev, const emu_rank *r, const emu_op *op, int ch, int peer, bool send, int n)
{
    *ev = (emu_ev){.type = NSC_T_PROXY_OP, .mask = op->mask, .parent = op->coll_h, .rank = r->ci.rank,
                   .comm_id = r->ci.comm_id, .comm_name = r->ci.name};
    ev->d.proxy_op.pid = (pid_t)r->acct->pid;
    ev->d.proxy_op.ch = (uint8_t)ch;
    ev->d.proxy_op.peer = peer;
    ev->d.proxy_op.nsteps = n;
    ev->d.proxy_op.chunk = r->w->o->chunk_size;
    ev->d.proxy_op.is_send = send;
}

/* The network legs of channel ch: to other nodes only (NVLink and shared
 * memory transfers have no proxy). Each gets its step count. */
static int net_peers(const emu_rank *r, const emu_op *op, int *peers, bool *send)
{
    int s[4], v[4], ns = 0, nr = 0;
    if (op->p2p) {
        if (emu_node_of(r, op->peer) == r->node)
            return 0;
        peers[0] = op->peer;
        send[0] = op->is_send;
        return 1;
    }
    emu_net_peers(r, strcmp(r->w->o->algo, "TREE") == 0, s, &ns, v, &nr);
    for (int i = 0; i < ns + nr; i++) {
        peers[i] = i < ns ? s[i] : v[i - ns];
        send[i] = i < ns;
    }
    return ns + nr;
}

static int leg_steps(const emu_rank *r, const emu_op *op, bool send, size_t *bytes)
{
    int loops, per_loop, nsend, nrecv;
    emu_model_shape(r, op, &loops, &per_loop, bytes);
    if (op->p2p) {
        *bytes = (size_t)r->w->o->chunk_size;
        size_t n = (op->bytes / (size_t)op->nch + *bytes) / *bytes;
        return (int)(n > 1024 ? 1024 : n);
    }
    if (strcmp(r->w->o->algo, "TREE") == 0)
        return emu_model_tree_steps(r, op);
    emu_model_leg_steps(r, op, &nsend, &nrecv);
    return send ? nsend : nrecv;
}

/* Legs of every channel: network legs here (or sent to the PXN process
 * once timed), then the channel's KernelCh. */
static void plan_legs(op_plan *p, emu_rank *r, const emu_op *op, void **kch, emu_coll_rec *rec, bool pxn)
{
    for (int ch = 0; ch < op->nch; ch++) {
        int peers[8];
        bool send[8];
        int np = pxn ? 0 : net_peers(r, op, peers, send);
        for (int i = 0; i < np; i++) {
            leg *l = add_leg(p, r, send[i] ? LEG_SEND : LEG_RECV);
            l->n = leg_steps(r, op, send[i], &l->bytes);
            l->ch = ch;
            l->op = op;
            proxy_op_event(&l->ev, r, op, ch, peers[i], send[i], l->n);
        }
        leg *k = add_leg(p, r, LEG_KCH);
        k->ev.mask = op->mask;
        k->kch = kch[ch];
        k->ch = ch;
        k->op = op;
        k->rec = rec;
    }
}

/* One op of a run (ops that start together: one, or a group's p2p ops). */
typedef struct op_state {
    emu_op *op;
    emu_coll_rec *rec;
    uint32_t k;           /* the collective's number on the wire */
    void *kch[64];
    emu_step_t *times;    /* its legs' steps, then a ring's send and receive */
    size_t used;
    uint64_t end;
    bool never_ends;      /* no model and a hang, or too many channels */
} op_state;

/* Each rank's start of collective k into out[] (but `self`'s, which the
 * caller knows), and whether all called the same. */
bool emu_timeline_gather(emu_rank *r, const emu_op *op, uint32_t k, uint64_t *out, int self)
{
    bool agree = true;
    emu_wire_wait_all(r->w->wire, emu_wire_slot(r, 0), k, r->ci.nranks);
    for (int q = 0; q < r->ci.nranks; q++) {
        uint64_t sig = op->sig;
        if (q != self && emu_wire_read(r->w->wire, emu_wire_slot(r, q), k, &out[q], &sig))
            out[q] = EMU_NEVER;
        agree &= sig == op->sig;
    }
    return agree;
}

/* A send and its receive move the data once both started (the receiver's
 * buffer posted, the sender's data there): when, or EMU_NEVER if the peer
 * never comes or called another count or datatype. */
uint64_t emu_timeline_p2p_meet(emu_rank *r, const emu_op *op, uint64_t ready)
{
    if (!r->w->wire)
        return ready;
    emu_wire_p2p peer = {.peer = r->ci.rank, .nth = op->nth, .send = !op->is_send};
    if (emu_wire_p2p_read(r->w->wire, emu_wire_slot(r, op->peer), &peer) || peer.sig != op->sig)
        return EMU_NEVER;
    return peer.ready > ready ? peer.ready : ready;
}

/* A p2p op's end on each of its channels, which share the link. */
uint64_t emu_timeline_p2p_end(const emu_rank *r, const emu_op *op, uint64_t meet)
{
    if (meet == EMU_NEVER)
        return EMU_NEVER;
    return meet + emu_model_transfer(r, op, op->is_send ? r->ci.rank : op->peer, op->is_send ? op->peer : r->ci.rank,
                                     op->bytes / (size_t)op->nch, op->nch);
}

/* The channels never end: no model and a hang, or too many channels. */
bool emu_timeline_never_ends(bool model, const emu_op *op)
{
    return (!model && op->hang) || op->nch > 64;
}

/* Times of s's legs on channel ch; returns the channel's end. `same`: the
 * schedule in steps and its end are another channel's, the same as this one's. */
static uint64_t time_channel(op_plan *p, emu_rank *r, op_state *s, int ch, uint64_t ready, uint64_t meet,
                             bool agree, emu_step_t *steps, const uint64_t *same)
{
    const emu_op *op = s->op;
    uint64_t end;
    if (op->p2p)
        end = emu_timeline_p2p_end(r, op, meet);
    else if (!agree)
        end = EMU_NEVER;
    else if (same)
        end = *same;
    else
        end = emu_model_channel(r, op, s->k, ch, r->peer_ready, steps);
    for (int i = 0; i < p->nlegs; i++) {
        leg *l = &p->legs[i];
        if (l->op != op || l->ch != ch)
            continue;
        if (l->kind == LEG_KCH) {
            l->k1 = end;
            continue;
        }
        l->t = &s->times[s->used];
        s->used += (size_t)l->n;
        if (!op->p2p && agree)
            memcpy(l->t, emu_model_leg(r, op, steps, l->ev.d.proxy_op.peer, l->kind == LEG_SEND),
                   (size_t)l->n * sizeof *l->t);
        else
            emu_model_uniform(l->t, l->n, op->p2p ? meet : ready, end);
    }
    return end;
}

static void pxn_post(emu_rank *r, const emu_op *op, int ch, uint64_t t0, uint64_t t1, bool last)
{
    int peers[8];
    bool send[8];
    int np = net_peers(r, op, peers, send);
    for (int i = 0; i < np; i++) {
        size_t bytes;
        int n = leg_steps(r, op, send[i], &bytes);
        emu_pxn_msg m = {.kind = 0, .origin_pid = r->acct->pid, .rank = r->ci.rank,
                         .nranks = r->ci.nranks, .comm_id = r->ci.comm_id, .origin_ctx = (uintptr_t)r->ctx,
                         .origin_coll = (uintptr_t)op->coll_h, .ch = ch, .peer = peers[i], .nsteps = n,
                         .is_send = send[i], .chunk = r->w->o->chunk_size, .coll_index = op->coll_index,
                         .mask = op->mask, .t0 = t0, .t1 = t1, .step_bytes = bytes,
                         .last = last && i == np - 1};
        emu_pxn_send(r->w, &m);
    }
}

static void start_kernels(emu_rank *r, emu_op *op, void **kch)
{
    emu_quirk_kch_work(r, op);
    for (int c = 0; c < op->nch; c++) {
        emu_ev ev = {.type = NSC_T_KERNEL_CH, .mask = op->mask, .parent = op->coll_h};
        ev.d.kernel_ch.ch = (uint8_t)c;
        ev.d.kernel_ch.ptimer = emu_quirk_kch_timer(r, op, c, false, gpu_at(r, 1500));
        kch[c] = emu_start(r, &ev);
    }
}

/* Publish what the peers need of s: a collective's start and signature,
 * or a p2p op's entry. */
static void publish(emu_rank *r, op_state *s, uint64_t ready)
{
    emu_op *op = s->op;
    if (!op->p2p) {
        s->k = r->wire_next++;
        if (r->w->wire && !op->pub_ready)
            emu_wire_publish(r->w->wire, emu_wire_slot(r, r->ci.rank), s->k, ready, op->sig, emu_wire_slot(r, 0),
                             r->ci.nranks);
        return;
    }
    emu_wire_p2p mine = {.peer = op->peer, .nth = op->nth, .send = op->is_send, .ready = ready, .sig = op->sig};
    if (r->w->wire && !op->pub_ready)
        emu_wire_p2p_publish(r->w->wire, emu_wire_slot(r, r->ci.rank), &mine);
}

/* Time s once the peers told their starts; its legs' times go in s->times. */
static uint64_t time_op(op_plan *p, emu_rank *r, op_state *s, uint64_t ready, bool pxn)
{
    const emu_op *op = s->op;
    r->peer_ready[r->ci.rank] = ready;
    bool agree = op->p2p || !r->w->wire || emu_timeline_gather(r, op, s->k, r->peer_ready, r->ci.rank);
    uint64_t meet = op->p2p ? emu_timeline_p2p_meet(r, op, ready) : ready;
    size_t cells = 0;
    for (int i = 0; i < p->nlegs; i++)
        if (p->legs[i].op == op)
            cells += (size_t)p->legs[i].n;
    s->times = malloc((cells + emu_model_cells(r, op) + 1) * sizeof *s->times);
    if (!s->times)
        emu_die("out of memory");
    uint64_t end = ready, first = 0;
    bool alike = !op->p2p && emu_model_same_channels(r, s->k);
    for (int ch = 0; ch < op->nch; ch++) {
        uint64_t e = time_channel(p, r, s, ch, ready, meet, agree, s->times + cells, ch && alike ? &first : NULL);
        first = ch ? first : e;
        end = e > end ? e : end;
        if (pxn)
            pxn_post(r, op, ch, ready, e, ch == op->nch - 1);
    }
    if (!op->p2p) {
        r->proxy_end = end;
        __atomic_store_n(&r->proxy_timed, s->k + 1, __ATOMIC_RELEASE);
    }
    return end;
}

/* The legs of a run's ops posted at its start: each first step waits there. */
static void post_first_steps(op_plan *p, uint64_t ready, bool model)
{
    for (int i = 0; i < p->nlegs; i++) {
        leg *l = &p->legs[i];
        if (l->kind == LEG_KCH || !l->n)
            continue;
        emu_step_t first = {ready, ready, ready, ready};
        l->t = model ? &first : NULL;
        do_next(l);
        l->t = NULL;
    }
}

/* Collective k's events are made: its host may go on (timeline_host.c). */
static void played(emu_rank *r, uint32_t k)
{
    __atomic_store_n(&r->proxy_played, k + 1, __ATOMIC_SEQ_CST);
    uint32_t awaited = __atomic_load_n(&r->host_waits_played, __ATOMIC_SEQ_CST);
    if (awaited && k + 1 >= awaited) /* not for an earlier one: the host would only wait again */
        emu_futex_wake(&r->proxy_played, false);
}

/* A run of ops on the device: one collective, or the p2p ops of one group,
 * which NCCL's kernel runs together. They start when the device is free;
 * each tells its peers, is timed, and all legs play together. */
static void timeline_run(emu_rank *r, emu_op *ops, size_t n)
{
    bool model = emu_model_on(r->w->o), pxn = emu_pxn_active(r->w);
    op_state *st = calloc(n, sizeof *st);
    if (!st)
        emu_die("out of memory");
    uint64_t ready = !model ? 0 : ops[0].pub_ready ? ops[0].pub_ready : emu_model_ready(r, &ops[0], r->dev_free);
    for (size_t i = 0; i < n; i++) {
        st[i].op = &ops[i];
        st[i].rec = ops[i].coll_index < r->acct->ncoll ? &r->colls[ops[i].coll_index] : NULL;
        if (model)
            publish(r, &st[i], ready);
    }
    if (model && r->w->wire && ops[0].p2p && !ops[0].pub_ready) /* a run's p2p ops: one group's */
        emu_wire_p2p_wake(r->w->wire, emu_wire_slot(r, r->ci.rank));
    op_plan p = {0};
    if (ready != EMU_NEVER) { /* else the previous work never ended: these never start */
        emu_timeline_wait_event(ready);
        for (size_t i = 0; i < n; i++) {
            start_kernels(r, st[i].op, st[i].kch);
            if (st[i].rec)
                st[i].rec->ready_ns = ready ? ready : emu_true_ns();
            st[i].never_ends = emu_timeline_never_ends(model, &ops[i]);
            if (!st[i].never_ends)
                plan_legs(&p, r, st[i].op, st[i].kch, st[i].rec, pxn);
        }
        post_first_steps(&p, ready, model);
    }
    uint64_t end = 0;
    bool timed = false; /* else the device stays where it was */
    for (size_t i = 0; ready != EMU_NEVER && i < n; i++) {
        if (st[i].never_ends)
            continue;
        if (model)
            st[i].end = time_op(&p, r, &st[i], ready, pxn);
        else
            for (int ch = 0; pxn && ch < ops[i].nch; ch++)
                pxn_post(r, &ops[i], ch, 0, 0, ch == ops[i].nch - 1);
        end = st[i].end > end ? st[i].end : end;
        timed = true;
    }
    run_legs(p.legs, p.nlegs);
    for (size_t i = 0; model && i < n; i++)
        if (!ops[i].p2p)
            played(r, st[i].k);
    if (timed)
        r->dev_free = end;
    for (size_t i = 0; timed && i < n; i++)
        if (!st[i].never_ends && st[i].rec)
            st[i].rec->end_ns = st[i].end == EMU_NEVER ? 0 : st[i].end ? st[i].end : emu_true_ns();
    for (size_t i = 0; i < n; i++)
        free(st[i].times);
    free(st);
    free(p.legs);
}

void emu_timeline_batch(emu_rank *r, emu_op *ops, size_t n)
{
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && ops[j].with_prev; j++)
            ;
        timeline_run(r, &ops[i], j - i);
    }
}

void emu_timeline_foreign(emu_rank *r, const emu_leg_req *req, int n)
{
    op_plan p = {0};
    emu_step_t *times = NULL;
    size_t total = 0;
    for (int i = 0; i < n; i++)
        total += (size_t)req[i].ev.d.proxy_op.nsteps;
    if (n && req[0].t0 && !(times = malloc((total + 1) * sizeof *times)))
        emu_die("out of memory");
    for (int i = 0, at = 0; i < n; i++) {
        leg *l = add_leg(&p, r, req[i].ev.d.proxy_op.is_send ? LEG_SEND : LEG_RECV);
        l->ctx = req[i].ctx;
        l->foreign = true;
        l->ev = req[i].ev;
        l->n = req[i].ev.d.proxy_op.nsteps;
        l->bytes = req[i].step_bytes;
        if (times) {
            l->t = &times[at];
            emu_model_uniform(l->t, l->n, req[i].t0, req[i].t1);
            at += l->n;
        }
    }
    run_legs(p.legs, p.nlegs);
    free(p.legs);
    free(times);
}
