/* test_lbuild.c: the agent's ledger builder (agent/lbuild.c) fed decoded
 * events as ingest feeds them: a ring AllReduce on 2 channels, a PXN step,
 * a graph-captured and a copy-engine collective, a step without states,
 * orphans of every kind counted by reason, the bound on open collectives,
 * and an in-flight record re-emitted while it changes, then replaced. */
#include <criterion/criterion.h>
#include <string.h>

#include "lbuild.h"

#define MS 1000000ull
#define T0 (1000 * MS)

static nsc_ledger_rec recs[16];
static nsc_ledger_edge edges[16][8];
static unsigned nrecs;

static void collect(void *arg, nsc_reg_proc *p, const nsc_ledger_rec *r)
{
    (void)arg;
    (void)p;
    cr_assert_lt(nrecs, 16);
    cr_assert_leq(r->nedges, 8);
    recs[nrecs] = *r;
    if (r->nedges)
        memcpy(edges[nrecs], r->edges, r->nedges * sizeof *r->edges);
    recs[nrecs].edges = edges[nrecs];
    nrecs++;
}

static nsc_registry *reg;
static nsc_reg_proc *proc_a, *proc_b;

/* Process pid with communicator context 0 (comm 0xc0ffee, rank 3 of 4) and
 * the strings 1 AllReduce, 2 ncclFloat32, 3 Ring, 4 Simple. */
static nsc_reg_proc *make_proc(uint32_t pid)
{
    static nsc_str_def strs[] = {{1, "AllReduce"}, {2, "ncclFloat32"}, {3, "Ring"}, {4, "Simple"}};
    nsc_ctx_def ctx = {.comm_id = 0xc0ffee, .index = 0, .nnodes = 2, .nranks = 4, .rank = 3};
    nsc_batch_hdr h = {.proc = {.pid = pid, .host = "h1", .job = "j"}};
    unsigned news;
    nsc_reg_proc *p = nsc_reg_get(reg, &h, 1, &news);
    cr_assert_not_null(p);
    nsc_scan s = {.b = {.strs = strs, .nstrs = 4, .ctxs = &ctx, .nctxs = 1}};
    cr_assert_eq(nsc_reg_learn(reg, p, &s), 0);
    return p;
}

static nsc_lbuild *setup(uint32_t max_open)
{
    nrecs = 0;
    reg = nsc_reg_new();
    proc_a = make_proc(100);
    proc_b = make_proc(101);
    nsc_lbuild *lb = nsc_lbuild_new(10 * MS, 20 * MS, max_open, collect, NULL);
    cr_assert_not_null(lb);
    return lb;
}

static void teardown(nsc_lbuild *lb)
{
    nsc_lbuild_free(lb);
    nsc_reg_free(reg);
}

static nsc_event coll(uint64_t id, uint64_t seq, uint64_t t)
{
    nsc_event ev = {.id = id, .parent = id - 1, .start_ns = t, .stop_ns = t + 1000, .type = NSC_T_COLL, .rank = 3};
    ev.d.coll.seq = seq;
    ev.d.coll.count = 1 << 20;
    ev.d.coll.func = 1, ev.d.coll.datatype = 2, ev.d.coll.algo = 3, ev.d.coll.proto = 4;
    ev.d.coll.nchannels = 2;
    ev.d.coll.root = -1;
    return ev;
}

static nsc_event api(uint64_t id, uint64_t t)
{
    return (nsc_event){.id = id, .parent = 1, .start_ns = t, .stop_ns = t + 3000, .type = NSC_T_COLL_API};
}

/* A channel's kernel: GPU timer = host time + 5 s, seen 2 us after it stopped. */
static nsc_event kernel(uint64_t id, uint64_t parent, uint8_t ch, uint64_t gstart, uint64_t gstop)
{
    nsc_event ev = {.id = id, .parent = parent, .start_ns = gstart, .stop_ns = gstop + 2000, .type = NSC_T_KERNEL_CH};
    ev.d.kernel_ch.channel = ch;
    ev.d.kernel_ch.ptimer_start = gstart + 5000 * MS;
    ev.d.kernel_ch.ptimer_stop = gstop + 5000 * MS;
    ev.d.kernel_ch.ptimer_stop_ns = gstop + 2000;
    return ev;
}

static nsc_event op(uint64_t id, uint64_t parent, int32_t peer, uint8_t ch, uint8_t is_send, int32_t nsteps)
{
    nsc_event ev = {.id = id, .parent = parent, .start_ns = T0, .stop_ns = T0 + 100000, .type = NSC_T_PROXY_OP};
    ev.d.proxy_op.peer = peer, ev.d.proxy_op.channel = ch, ev.d.proxy_op.is_send = is_send;
    ev.d.proxy_op.nsteps = nsteps;
    return ev;
}

static nsc_event step(uint64_t id, uint64_t parent, int32_t n, uint64_t start, uint64_t stop)
{
    nsc_event ev = {.id = id, .parent = parent, .start_ns = start, .stop_ns = stop, .type = NSC_T_PROXY_STEP};
    ev.d.proxy_step.step = n;
    return ev;
}

static void state(nsc_lbuild *lb, nsc_reg_proc *p, uint64_t id, unsigned st, uint64_t ts, uint64_t arg)
{
    nsc_state_rec s = {.id = id, .ts_ns = ts, .arg = arg, .state = (uint8_t)st};
    nsc_lbuild_state(lb, p, &s);
}

static void feed(nsc_lbuild *lb, nsc_reg_proc *p, nsc_event ev) { nsc_lbuild_event(lb, p, &ev, T0); }

static void complete(nsc_lbuild *lb, nsc_reg_proc *p, uint64_t id, uint64_t ts)
{
    nsc_completion c = {.id = id, .ts_ns = ts};
    nsc_lbuild_completion(lb, p, &c);
}

static const nsc_ledger_edge *edge(const nsc_ledger_rec *r, int32_t peer, uint8_t ch, uint8_t is_send)
{
    for (uint32_t i = 0; i < r->nedges; i++)
        if (r->edges[i].peer == peer && r->edges[i].channel == ch && r->edges[i].is_send == is_send)
            return &r->edges[i];
    cr_assert_fail("no edge peer %d channel %u send %u", peer, ch, is_send);
    return NULL;
}

static uint64_t unattached(nsc_lbuild *lb, unsigned reason)
{
    nsc_lbuild_stats st;
    nsc_lbuild_stats_get(lb, &st);
    return st.unattached[reason];
}

Test(lbuild, ring_allreduce_on_two_channels)
{
    nsc_lbuild *lb = setup(16);
    /* step 21 of the send op on channel 0: GPU wait 1 us, send wait 4 us, moved 65536 bytes */
    state(lb, proc_a, 21, NSC_S_PROXY_STEP_SEND_GPU_WAIT, T0 + 10000, 0);
    state(lb, proc_a, 21, NSC_S_PROXY_STEP_SEND_WAIT, T0 + 11000, 65536);
    feed(lb, proc_a, coll(10, 5, T0));
    feed(lb, proc_a, api(9, T0 - 2000));
    feed(lb, proc_a, step(21, 20, 0, T0 + 10000, T0 + 15000));
    feed(lb, proc_a, step(22, 20, 1, T0 + 15000, T0 + 17000));
    feed(lb, proc_a, op(20, 10, 0, 0, 1, 2));
    feed(lb, proc_a, op(30, 10, 2, 0, 0, 2));
    feed(lb, proc_a, op(40, 10, 0, 1, 1, 2));
    feed(lb, proc_a, op(50, 10, 2, 1, 0, 2));
    feed(lb, proc_a, kernel(60, 10, 0, T0 + 5000, T0 + 900000));
    feed(lb, proc_a, kernel(61, 10, 1, T0 + 6000, T0 + 901000));
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 0, "not completed yet");
    complete(lb, proc_a, 10, T0 + 950000);
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 1);
    const nsc_ledger_rec *r = &recs[0];
    cr_assert_eq(r->comm_id, 0xc0ffee);
    cr_assert_eq(r->seq, 5);
    cr_assert_eq(r->rank, 3);
    cr_assert_eq(r->func, 1);
    cr_assert_eq(r->count, 1 << 20);
    cr_assert_eq(r->bytes, 4u << 20, "count x 4 bytes, AllReduce's rule");
    cr_assert_eq(r->enqueue_ns, T0);
    cr_assert_eq(r->api_ns, T0 - 2000);
    cr_assert_eq(r->done_ns, T0 + 950000);
    cr_assert_eq(r->nchannels_done, 2);
    cr_assert_eq(r->flags & (NSC_LEDGER_INFLIGHT | NSC_LEDGER_NO_GPU | NSC_LEDGER_NO_NET), 0);
    /* the GPU line sits at most the 2 us polling delay above the truth */
    cr_assert_geq(r->gpu_start_ns + 2000, T0 + 5000);
    cr_assert_leq(r->gpu_start_ns, T0 + 5000 + 2000);
    cr_assert_geq(r->gpu_end_ns + 2000, T0 + 901000);
    cr_assert_eq(r->gpu_spread_ns, 1000);
    cr_assert_eq(r->nedges, 4);
    const nsc_ledger_edge *e = edge(r, 0, 0, 1);
    cr_assert_eq(e->steps, 2);
    cr_assert_eq(e->bytes, 65536);
    cr_assert_eq(e->step_sum_ns, 7000);
    cr_assert_eq(e->step_max_ns, 5000);
    cr_assert_eq(e->wait_gpu_ns, 1000);
    cr_assert_eq(e->wait_send_ns, 4000, "the last state lasts until the step stops");
    cr_assert_eq(e->last_step, 1);
    cr_assert_eq(edge(r, 2, 1, 0)->steps, 2, "steps counted from the ProxyOp without ProxySteps");
    for (unsigned i = 0; i < NSC_LB_NREASONS; i++)
        cr_assert_eq(unattached(lb, i), 0, "reason %s", nsc_lbuild_reason(i));
    teardown(lb);
}

Test(lbuild, pxn_step_keeps_its_states_through_the_alias)
{
    nsc_lbuild *lb = setup(16);
    feed(lb, proc_a, coll(10, 1, T0));
    /* proc_b's proxy ran the step as its id 77; re-attached as proc_a's 1<<63|1 */
    state(lb, proc_b, 77, NSC_S_PROXY_STEP_RECV_WAIT, T0 + 1000, 4096);
    nsc_a2c_alias al = {.proxy_pid = 101, .origin_pid = 100, .proxy_id = 77, .new_id = 1ull << 63 | 1};
    nsc_lbuild_alias(lb, proc_b, proc_a, &al);
    nsc_event s = step(1ull << 63 | 1, 1ull << 63 | 2, 0, T0 + 1000, T0 + 9000);
    s.flags = NSC_EVF_FOREIGN;
    feed(lb, proc_a, s);
    nsc_event o = op(1ull << 63 | 2, 10, 1, 0, 0, 1);
    o.flags = NSC_EVF_FOREIGN;
    feed(lb, proc_a, o);
    complete(lb, proc_a, 10, T0 + 10000);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0 + 100 * MS);
    cr_assert_eq(nrecs, 0, "a PXN process's record waits for its proxies' ProxyOps");
    nsc_event late = op(1ull << 63 | 3, 10, 2, 1, 1, 1);
    late.flags = NSC_EVF_FOREIGN;
    feed(lb, proc_a, late);
    nsc_lbuild_tick(lb, reg, T0 + 110 * MS);
    cr_assert_eq(nrecs, 0);
    nsc_lbuild_tick(lb, reg, T0 + 120 * MS);
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0].nedges, 2, "the ProxyOp that came while it waited is in");
    feed(lb, proc_a, late);
    cr_assert_eq(unattached(lb, NSC_LB_LATE), 1, "one after it was written is counted");
    cr_assert(recs[0].flags & NSC_LEDGER_PXN);
    cr_assert_eq(edge(&recs[0], 1, 0, 0)->wait_recv_ns, 8000);
    cr_assert_eq(edge(&recs[0], 1, 0, 0)->bytes, 4096);
    cr_assert_eq(unattached(lb, NSC_LB_NO_STEP), 0);
    teardown(lb);
}

Test(lbuild, graph_and_copy_engine_collectives)
{
    nsc_lbuild *lb = setup(16);
    nsc_event g = coll(10, 1, T0);
    g.flags = NSC_EVF_GRAPH;
    feed(lb, proc_a, g);
    nsc_event ce = {.id = 20, .start_ns = T0, .type = NSC_T_CE_COLL};
    ce.d.ce_coll.seq = 2, ce.d.ce_coll.count = 256, ce.d.ce_coll.func = 1, ce.d.ce_coll.datatype = 2;
    feed(lb, proc_a, ce);
    complete(lb, proc_a, 10, T0 + 100);
    complete(lb, proc_a, 20, T0 + 200);
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 1, "the Coll waits for its network legs (2 nodes), the copy engine has none");
    cr_assert(recs[0].flags & NSC_LEDGER_CE);
    cr_assert_eq(recs[0].seq, 2);
    cr_assert_eq(recs[0].bytes, 1024);
    nsc_lbuild_tick(lb, reg, T0);
    nsc_lbuild_tick(lb, reg, T0 + 20 * MS);
    cr_assert_eq(nrecs, 2);
    cr_assert(recs[1].flags & NSC_LEDGER_GRAPH);
    cr_assert(recs[1].flags & NSC_LEDGER_NO_GPU, "no KernelCh: no GPU times");
    teardown(lb);
}

/* A collective of a communicator spanning nodes without network legs of its
 * own waits ledger_pxn_wait_ms for re-attached ones (PXN: its proxy's batch
 * may come later); a process whose record waited in vain no longer waits. */
Test(lbuild, network_legs_wait_for_pxn)
{
    nsc_lbuild *lb = setup(16);
    feed(lb, proc_a, coll(10, 1, T0));
    complete(lb, proc_a, 10, T0 + 100);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0);
    cr_assert_eq(nrecs, 0, "waits for its PXN legs");
    nsc_event o = op(1ull << 63 | 5, 10, 2, 0, 1, 4);
    o.flags = NSC_EVF_FOREIGN;
    nsc_lbuild_event(lb, proc_a, &o, T0 + MS);
    nsc_lbuild_tick(lb, reg, T0 + 19 * MS);
    cr_assert_eq(nrecs, 0, "until ledger_pxn_wait_ms after a tick saw it complete");
    nsc_lbuild_tick(lb, reg, T0 + 20 * MS);
    cr_assert_eq(nrecs, 1);
    cr_assert(recs[0].flags & NSC_LEDGER_PXN);
    cr_assert_eq(edge(&recs[0], 2, 0, 1)->steps, 4);
    cr_assert_eq(unattached(lb, NSC_LB_LATE), 0);

    /* proc_b: no legs come; after that its records do not wait */
    feed(lb, proc_b, coll(10, 1, T0));
    complete(lb, proc_b, 10, T0 + 100);
    nsc_lbuild_batch_end(lb, proc_b);
    nsc_lbuild_tick(lb, reg, T0 + 30 * MS);
    nsc_lbuild_tick(lb, reg, T0 + 50 * MS);
    cr_assert_eq(nrecs, 2);
    cr_assert(recs[1].flags & NSC_LEDGER_NO_NET);
    feed(lb, proc_b, coll(11, 2, T0));
    complete(lb, proc_b, 11, T0 + 200);
    nsc_lbuild_batch_end(lb, proc_b);
    cr_assert_eq(nrecs, 3, "learned: its network legs are not re-attached");
    teardown(lb);
}

/* Completed collectives waiting for network legs fill max_open faster than
 * ledger_pxn_wait_ms passes (a process of several ranks run flat out): the
 * oldest is written as it is, not dropped, and a leg coming for it later
 * counts as late. One still running is dropped, counted, as before. */
Test(lbuild, max_open_writes_a_completed_waiting_record)
{
    nsc_lbuild *lb = setup(2);
    for (uint64_t i = 0; i < 3; i++) {
        feed(lb, proc_a, coll(10 + i, i, T0));
        complete(lb, proc_a, 10 + i, T0 + 100);
        nsc_lbuild_batch_end(lb, proc_a);
    }
    cr_assert_eq(nrecs, 1, "the oldest, written early");
    cr_assert_eq(recs[0].seq, 0);
    cr_assert_eq(unattached(lb, NSC_LB_OVERFLOW), 0);
    nsc_lbuild_stats st;
    nsc_lbuild_stats_get(lb, &st);
    cr_assert(st.early == 1 && st.open == 2);
    nsc_event o = op(1ull << 63 | 5, 10, 2, 0, 1, 4);
    o.flags = NSC_EVF_FOREIGN;
    nsc_lbuild_event(lb, proc_a, &o, T0 + MS);
    cr_assert_eq(unattached(lb, NSC_LB_LATE), 1, "its leg came after it was written");
    feed(lb, proc_a, coll(13, 3, T0));  /* 11 is written */
    feed(lb, proc_a, coll(14, 4, T0));  /* 12 is written */
    cr_assert_eq(nrecs, 3);
    cr_assert_eq(unattached(lb, NSC_LB_OVERFLOW), 0);
    feed(lb, proc_a, coll(15, 5, T0));  /* 13 runs still: dropped */
    cr_assert_eq(nrecs, 3);
    cr_assert_eq(unattached(lb, NSC_LB_OVERFLOW), 1);
    teardown(lb);
}

/* A Coll is written when its enqueue ends: its children and completion may
 * come first, even a batch earlier. */
Test(lbuild, children_before_their_coll)
{
    nsc_lbuild *lb = setup(16);
    feed(lb, proc_a, kernel(60, 10, 0, T0 + 5000, T0 + 9000));
    feed(lb, proc_a, op(20, 10, 0, 0, 1, 3));
    complete(lb, proc_a, 10, T0 + 10000);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0 + 60 * MS);
    cr_assert_eq(nrecs, 0, "nothing without its Coll");
    feed(lb, proc_a, coll(10, 4, T0));
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0].seq, 4);
    cr_assert_eq(recs[0].nchannels_done, 1);
    cr_assert_eq(edge(&recs[0], 0, 0, 1)->steps, 3);
    cr_assert_eq(recs[0].done_ns, T0 + 10000);
    cr_assert_eq(unattached(lb, NSC_LB_NO_COLL), 0);
    teardown(lb);
}

/* Send/Recv: seq is the rank's own count per (communicator, peer, func). */
Test(lbuild, p2p_counts_its_own_seq)
{
    nsc_lbuild *lb = setup(16);
    for (uint64_t i = 0; i < 3; i++) {
        nsc_event ev = {.id = 10 + i, .start_ns = T0 + i, .type = NSC_T_P2P, .rank = 3};
        ev.d.p2p.peer = i == 2 ? 1 : 2;
        ev.d.p2p.func = 1, ev.d.p2p.datatype = 2, ev.d.p2p.count = 256;
        feed(lb, proc_a, ev);
        complete(lb, proc_a, 10 + i, T0 + 100 + i);
    }
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 3);
    for (unsigned i = 0; i < 3; i++) {
        cr_assert(recs[i].flags & NSC_LEDGER_P2P);
        cr_assert_eq(recs[i].root, -1);
    }
    cr_assert_eq(recs[0].seq, 0);
    cr_assert_eq(recs[1].seq, 1);
    cr_assert_eq(recs[2].seq, 0, "another peer counts apart");
    cr_assert_eq(recs[2].peer, 1);
    teardown(lb);
}

Test(lbuild, orphans_are_counted_by_reason)
{
    nsc_lbuild *lb = setup(2);
    feed(lb, proc_a, kernel(60, 99, 0, T0, T0 + 10));   /* a collective whose Coll never comes */
    feed(lb, proc_a, op(61, 99, 1, 0, 1, 4));
    complete(lb, proc_a, 98, T0);                       /* and another */
    for (uint64_t i = 0; i < 9; i++)  /* states of 9 steps that never stop: room for 8 */
        state(lb, proc_a, 100 + i, NSC_S_PROXY_STEP_RECV_WAIT, T0, 0);
    cr_assert_eq(unattached(lb, NSC_LB_NO_STEP), 1);
    for (uint64_t i = 0; i < 3; i++)  /* steps of 3 ProxyOps that never stop: room for 2 */
        feed(lb, proc_a, step(200 + i, 300 + i, 0, T0, T0 + 1));
    cr_assert_eq(unattached(lb, NSC_LB_NO_OP), 1);
    cr_assert_eq(unattached(lb, NSC_LB_NO_COLL), 0, "not yet: the Coll may come");
    for (uint64_t i = 0; i < 3; i++)  /* 3 collectives open: room for 2 */
        feed(lb, proc_a, coll(10 + i, i, T0));
    cr_assert_eq(unattached(lb, NSC_LB_NO_COLL), 2, "the two without their Coll went first");
    cr_assert_eq(unattached(lb, NSC_LB_OVERFLOW), 1);
    nsc_lbuild_stats st;
    nsc_lbuild_stats_get(lb, &st);
    cr_assert_eq(st.open, 2);
    nsc_lbuild_forget(lb, proc_a);
    cr_assert_eq(unattached(lb, NSC_LB_GONE), 2);
    nsc_lbuild_stats_get(lb, &st);
    cr_assert_eq(st.open, 0);
    cr_assert_eq(nrecs, 0);
    teardown(lb);
}

Test(lbuild, in_flight_then_completed)
{
    nsc_lbuild *lb = setup(16);
    feed(lb, proc_a, coll(10, 7, T0));
    nsc_lbuild_tick(lb, reg, T0 + 5 * MS);
    cr_assert_eq(nrecs, 0, "before hang_ms");
    nsc_lbuild_tick(lb, reg, T0 + 11 * MS);
    cr_assert_eq(nrecs, 1);
    cr_assert(recs[0].flags & NSC_LEDGER_INFLIGHT);
    nsc_lbuild_tick(lb, reg, T0 + 12 * MS);
    cr_assert_eq(nrecs, 1, "unchanged: not again");
    feed(lb, proc_a, step(21, 20, 3, T0, T0 + 10));
    feed(lb, proc_a, op(20, 10, 0, 0, 1, 4));
    nsc_lbuild_tick(lb, reg, T0 + 13 * MS);
    cr_assert_eq(nrecs, 2);
    cr_assert(recs[1].flags & NSC_LEDGER_INFLIGHT);
    cr_assert_eq(edge(&recs[1], 0, 0, 1)->last_step, 3);
    complete(lb, proc_a, 10, T0 + 14 * MS);
    nsc_lbuild_batch_end(lb, proc_a);
    cr_assert_eq(nrecs, 3);
    cr_assert_eq(recs[2].flags & NSC_LEDGER_INFLIGHT, 0);
    cr_assert_eq(recs[2].seq, 7);
    nsc_lbuild_tick(lb, reg, T0 + 30 * MS);
    cr_assert_eq(nrecs, 3, "completed: no more in-flight records");
    teardown(lb);
}

/* Step n (id) of ProxyOp parent, 5 ns long, with its one state. */
static void sent(nsc_lbuild *lb, uint64_t id, uint64_t parent, int32_t n)
{
    uint64_t t = T0 + (uint64_t)n * 10;
    state(lb, proc_a, id, NSC_S_PROXY_STEP_SEND_WAIT, t, 4096);
    feed(lb, proc_a, step(id, parent, n, t, t + 5));
}

/* A rank stuck in a collective, then shut down (finalize flushes what never
 * stopped, flagged open): its in-flight record comes at the next tick, not
 * hang_ms later, a kernel flushed open is no ended channel, and its stuck
 * edge counts the steps that completed (not the
 * ProxyOp's nSteps; those shipped after the flushed ProxyOp too) and names
 * the step in flight and its state. */
Test(lbuild, a_stuck_process_that_ends_says_where_it_stopped)
{
    nsc_lbuild *lb = setup(16);
    feed(lb, proc_a, coll(10, 7, T0));
    feed(lb, proc_a, kernel(40, 10, 0, T0, T0 + 50));
    nsc_event k1 = kernel(41, 10, 1, T0, T0 + 2 * MS);
    k1.flags |= NSC_EVF_OPEN;
    feed(lb, proc_a, k1);
    for (int32_t i = 0; i < 2; i++)
        sent(lb, 30 + (uint64_t)i, 20, i);
    nsc_event o = op(20, 10, 0, 1, 1, 8);
    o.flags |= NSC_EVF_OPEN;
    feed(lb, proc_a, o);
    /* the proxy thread's last steps shipped after finalize's flush */
    sent(lb, 32, 20, 2);
    state(lb, proc_a, 33, NSC_S_PROXY_STEP_SEND_WAIT, T0 + 40, 4096);
    nsc_event stuck = step(33, 20, 3, T0 + 40, T0 + 2 * MS);
    stuck.flags |= NSC_EVF_OPEN;
    feed(lb, proc_a, stuck);
    nsc_event r = op(22, 10, 2, 1, 0, 8);  /* flushed before any of its steps */
    r.flags |= NSC_EVF_OPEN;
    feed(lb, proc_a, r);
    for (int32_t i = 0; i < 2; i++)
        sent(lb, 50 + (uint64_t)i, 22, i);
    unsigned news;
    nsc_batch_hdr last = {.proc = {.pid = 100, .host = "h1", .job = "j"}, .final = 1};
    cr_assert_not_null(nsc_reg_get(reg, &last, 2, &news));
    nsc_lbuild_tick(lb, reg, T0 + 3 * MS);
    cr_assert_eq(nrecs, 1, "its process ended: the in-flight record before hang_ms");
    cr_assert(recs[0].flags & NSC_LEDGER_INFLIGHT);
    const nsc_ledger_edge *e = edge(&recs[0], 0, 1, 1);
    cr_assert_eq(e->steps, 3, "steps 0-2 completed, not the 8 planned");
    cr_assert_eq(e->last_step, 3);
    cr_assert_eq(e->last_state, NSC_S_PROXY_STEP_SEND_WAIT);
    cr_assert_eq(e->step_sum_ns, 15, "the open step is no step time");
    cr_assert_eq(edge(&recs[0], 2, 1, 0)->steps, 2);
    cr_assert_eq(recs[0].dropped, 0, "steps never started are not lost");
    cr_assert_eq(recs[0].nchannels_done, 1, "channel 1's kernel never ended");
    cr_assert_eq(unattached(lb, NSC_LB_NO_OP) + unattached(lb, NSC_LB_LATE), 0);
    teardown(lb);
}

/* ---- across a kill ---------------------------------------------------------- */

typedef struct saved {
    uint64_t host;
    uint32_t pid;
    void *buf;
    size_t len;
} saved;

static saved saves[4];
static unsigned nsaves;

static int keep(void *arg, uint64_t host, uint32_t pid, void *buf, size_t len)
{
    (void)arg;
    cr_assert_lt(nsaves, 4);
    saves[nsaves++] = (saved){host, pid, buf, len};
    return 0;
}

static void saves_free(void)
{
    for (unsigned i = 0; i < nsaves; i++)
        free(saves[i].buf);
    nsaves = 0;
}

/* A ring collective's first part: what a killed agent folded and stored. */
static void ring_begin(nsc_lbuild *lb, nsc_reg_proc *p)
{
    state(lb, p, 21, NSC_S_PROXY_STEP_SEND_GPU_WAIT, T0 + 10000, 0);
    feed(lb, p, coll(10, 5, T0));
    feed(lb, p, api(9, T0 - 2000));
    feed(lb, p, kernel(60, 10, 0, T0 + 5000, T0 + 900000));
    nsc_lbuild_batch_end(lb, p);
}

/* The rest, sent again to the successor. */
static void ring_end(nsc_lbuild *lb, nsc_reg_proc *p)
{
    state(lb, p, 21, NSC_S_PROXY_STEP_SEND_WAIT, T0 + 11000, 65536);
    feed(lb, p, step(21, 20, 0, T0 + 10000, T0 + 15000));
    feed(lb, p, op(20, 10, 0, 0, 1, 1));
    feed(lb, p, kernel(61, 10, 1, T0 + 6000, T0 + 901000));
    complete(lb, p, 10, T0 + 950000);
    nsc_lbuild_batch_end(lb, p);
}

Test(lbuild, a_successor_goes_on_from_the_saved_state)
{
    nsc_lbuild *lb = setup(16);
    ring_begin(lb, proc_a);
    ring_end(lb, proc_a);
    cr_assert_eq(nrecs, 1);
    nsc_ledger_rec whole = recs[0];
    nsc_ledger_edge whole_edge = edges[0][0];
    teardown(lb);

    lb = setup(16);
    ring_begin(lb, proc_a);
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    cr_assert_eq(nsaves, 1, "only the process that changed");
    cr_assert_eq(saves[0].pid, 100);
    nsc_lbuild_saved(lb);
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    cr_assert_eq(nsaves, 1, "nothing changed since");
    teardown(lb);

    /* The successor's registry gives the process a new key. */
    lb = setup(16);
    cr_assert_eq(nsc_lbuild_restore(lb, proc_b, saves[0].buf, saves[0].len), 0);
    cr_assert_eq(nsc_lbuild_restore(lb, proc_b, saves[0].buf, saves[0].len), -1, "only before anything is fed");
    ring_end(lb, proc_b);
    cr_assert_eq(nrecs, 1);
    cr_assert_eq(recs[0].seq, whole.seq);
    cr_assert_eq(recs[0].api_ns, whole.api_ns);
    cr_assert_eq(recs[0].done_ns, whole.done_ns);
    cr_assert_eq(recs[0].gpu_start_ns, whole.gpu_start_ns);
    cr_assert_eq(recs[0].gpu_end_ns, whole.gpu_end_ns);
    cr_assert_eq(recs[0].nchannels_done, 2);
    cr_assert_eq(recs[0].nedges, 1);
    cr_assert_eq(memcmp(&edges[0][0], &whole_edge, sizeof whole_edge), 0, "the step's states across the kill");
    for (unsigned i = 0; i < NSC_LB_NREASONS; i++)
        cr_assert_eq(unattached(lb, i), 0, "reason %s", nsc_lbuild_reason(i));
    /* Gone, its saved state is deleted at the next save. */
    nsc_lbuild_saved(lb);
    nsc_lbuild_forget(lb, proc_b);
    saves_free();
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    cr_assert_eq(nsaves, 1);
    cr_assert_eq(saves[0].pid, 101);
    cr_assert_null(saves[0].buf);
    teardown(lb);
}

Test(lbuild, a_malformed_saved_state_is_refused)
{
    nsc_lbuild *lb = setup(16);
    ring_begin(lb, proc_a);
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    teardown(lb);
    lb = setup(16);
    uint8_t *bad = malloc(saves[0].len + 1);
    memcpy(bad, saves[0].buf, saves[0].len);
    cr_assert_eq(nsc_lbuild_restore(lb, proc_a, bad, saves[0].len - 1), -1, "truncated");
    cr_assert_eq(nsc_lbuild_restore(lb, proc_a, bad, saves[0].len + 1), -1, "trailing");
    cr_assert_eq(nsc_lbuild_restore(lb, proc_a, bad, 3), -1, "shorter than its header");
    bad[2]++;
    cr_assert_eq(nsc_lbuild_restore(lb, proc_a, bad, saves[0].len), -1, "another layout");
    nsc_lbuild_stats st;
    nsc_lbuild_stats_get(lb, &st);
    cr_assert_eq(st.open, 0, "nothing kept");
    free(bad);
    saves_free();
    /* max_open smaller than what was saved */
    nsc_lbuild *small = nsc_lbuild_new(10 * MS, 20 * MS, 1, collect, NULL);
    ring_begin(lb, proc_a);
    feed(lb, proc_a, coll(70, 6, T0));
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    cr_assert_eq(nsc_lbuild_restore(small, proc_b, saves[0].buf, saves[0].len), -1, "two open, one allowed");
    nsc_lbuild_free(small);
    saves_free();
    teardown(lb);
}

/* dropped: what a record lacks of the types its process sends. */
Test(lbuild, dropped_counts_what_a_process_sends_but_lacks)
{
    nsc_lbuild *lb = setup(16);
    /* proc_a sends KernelChs, ProxySteps and states: one channel's kernel
     * lost, 2 of the op's 3 steps lost, the step that came without states */
    state(lb, proc_a, 99, NSC_S_PROXY_STEP_RECV_WAIT, T0, 0);
    feed(lb, proc_a, coll(10, 1, T0));
    feed(lb, proc_a, kernel(60, 10, 0, T0 + 5000, T0 + 9000));
    feed(lb, proc_a, step(21, 20, 0, T0 + 1000, T0 + 2000));
    feed(lb, proc_a, op(20, 10, 2, 0, 1, 3));
    /* a PXN op whose steps are still held by the resolver: not counted */
    nsc_event pxn_op = op(1ull << 63 | 7, 10, 2, 1, 1, 5);
    pxn_op.flags = NSC_EVF_FOREIGN;
    feed(lb, proc_a, pxn_op);
    complete(lb, proc_a, 10, T0 + 10000);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0);
    nsc_lbuild_tick(lb, reg, T0 + 20 * MS);
    /* proc_b sends none of them: its record lacks nothing */
    feed(lb, proc_b, coll(10, 1, T0));
    feed(lb, proc_b, op(20, 10, 2, 0, 1, 3));
    complete(lb, proc_b, 10, T0 + 10000);
    nsc_lbuild_batch_end(lb, proc_b);
    cr_assert_eq(nrecs, 2);
    cr_assert_eq(recs[0].dropped, 4, "1 channel + 2 steps + 1 step's states, none of the PXN op's");
    cr_assert_eq(recs[1].dropped, 0);
    teardown(lb);
}

/* A replay of a captured graph names the capture's CollApi, seen once: it is
 * graph-captured and has no API call or launch of its own, also after the
 * agent was killed and a successor restored its state. */
static void replay(nsc_lbuild *lb, nsc_reg_proc *p, uint64_t id, uint64_t seq, uint64_t t)
{
    nsc_event r = coll(id, seq, t);
    r.parent = 9;
    feed(lb, p, r);
    complete(lb, p, id, t + 100);
    nsc_lbuild_batch_end(lb, p);
    nsc_lbuild_tick(lb, reg, t);
    nsc_lbuild_tick(lb, reg, t + 20 * MS);
}

Test(lbuild, graph_replays_name_the_captured_call)
{
    nsc_lbuild *lb = setup(16);
    nsc_event capture = api(9, T0 - 5000 * MS);
    capture.flags = NSC_EVF_GRAPH;
    feed(lb, proc_a, capture);
    feed(lb, proc_a, api(11, T0 - 1000));
    replay(lb, proc_a, 10, 0, T0);
    cr_assert_eq(nrecs, 1);
    cr_assert(recs[0].flags & NSC_LEDGER_GRAPH);
    cr_assert_eq(recs[0].api_ns, 0, "the capture's call is not the replay's");
    cr_assert_eq(recs[0].launch_ns, 0);

    nsc_event eager = coll(12, 1, T0 + MS);  /* its CollApi, 11, was not captured */
    feed(lb, proc_a, eager);
    complete(lb, proc_a, 12, T0 + MS + 100);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0 + 30 * MS);
    cr_assert_eq(nrecs, 2);
    cr_assert_eq(recs[1].flags & NSC_LEDGER_GRAPH, 0);
    cr_assert_eq(recs[1].api_ns, T0 - 1000);

    saves_free();
    cr_assert_eq(nsc_lbuild_save(lb, keep, NULL), 0);
    teardown(lb);
    lb = setup(16);
    cr_assert_eq(nsc_lbuild_restore(lb, proc_b, saves[0].buf, saves[0].len), 0);
    replay(lb, proc_b, 14, 2, T0 + 100 * MS);
    cr_assert_eq(nrecs, 1);
    cr_assert(recs[0].flags & NSC_LEDGER_GRAPH, "the captured call survives the kill");
    saves_free();
    teardown(lb);

    /* The replay's thread shipped before the capturing one's: the Coll first. */
    lb = setup(16);
    nsc_event early = coll(10, 0, T0);
    early.parent = 9;
    feed(lb, proc_a, early);
    feed(lb, proc_a, capture);
    complete(lb, proc_a, 10, T0 + 100);
    nsc_lbuild_batch_end(lb, proc_a);
    nsc_lbuild_tick(lb, reg, T0);
    nsc_lbuild_tick(lb, reg, T0 + 20 * MS);
    cr_assert_eq(nrecs, 1);
    cr_assert(recs[0].flags & NSC_LEDGER_GRAPH);
    cr_assert_eq(recs[0].api_ns, 0);
    teardown(lb);
}
