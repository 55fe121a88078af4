/* mix.c: the realistic record mix (see mix.h). */
#include "mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int nsc_mix_init(nsc_mix *m, uint64_t seed, size_t max_colls)
{
    memset(m, 0, sizeof *m);
    m->rng.s = seed;
    m->now_ns = 5000000000000ull + nsc_sim_next(&m->rng) % 1000000000ull;
    m->next_id = 1;
    m->cap_colls = max_colls;
    m->events = calloc(max_colls * NSC_MIX_EVENTS_PER_COLL, sizeof *m->events);
    m->states = calloc(max_colls * NSC_MIX_STATES_PER_COLL, sizeof *m->states);
    m->completions = calloc(max_colls, sizeof *m->completions);
    if (!m->events || !m->states || !m->completions) {
        nsc_mix_free(m);
        return -1;
    }
    return 0;
}

void nsc_mix_free(nsc_mix *m)
{
    free(m->events);
    free(m->states);
    free(m->completions);
    memset(m, 0, sizeof *m);
}

void nsc_mix_clear(nsc_mix *m)
{
    m->nevents = m->nstates = m->ncompletions = 0;
}

static uint64_t span(nsc_mix *m, double lo, double hi)
{
    return (uint64_t)nsc_sim_range(&m->rng, lo, hi);
}

static nsc_event *new_event(nsc_mix *m, uint8_t type, uint16_t ctx, int32_t rank,
                            uint64_t parent, uint64_t start, uint64_t dur, uint32_t tid)
{
    nsc_event *e = &m->events[m->nevents++];
    memset(e, 0, sizeof *e);
    e->id = m->next_id++;
    e->parent = parent;
    e->start_ns = start;
    e->stop_ns = start + dur;
    e->tid = tid;
    e->rank = rank;
    e->ctx = ctx;
    e->type = type;
    return e;
}

static void new_state(nsc_mix *m, uint64_t id, uint64_t ts, uint8_t state, uint64_t arg)
{
    nsc_state_rec *s = &m->states[m->nstates++];
    memset(s, 0, sizeof *s);
    s->id = id;
    s->ts_ns = ts;
    s->arg = arg;
    s->tid = 2001;
    s->state = state;
}

/* One ProxyOp with its steps and states; returns when its last step stopped. */
static uint64_t proxy_op(nsc_mix *m, const nsc_event *coll, int ch, int is_send)
{
    static const uint8_t send_states[3] = {NSC_S_PROXY_STEP_SEND_GPU_WAIT,
                                           NSC_S_PROXY_STEP_SEND_PEER_WAIT,
                                           NSC_S_PROXY_STEP_SEND_WAIT};
    static const uint8_t recv_states[3] = {NSC_S_PROXY_STEP_RECV_WAIT,
                                           NSC_S_PROXY_STEP_RECV_FLUSH_WAIT,
                                           NSC_S_PROXY_STEP_RECV_GPU_WAIT};
    const uint8_t *states = is_send ? send_states : recv_states;
    uint64_t t = coll->start_ns + span(m, 8000, 30000);
    nsc_event *op = new_event(m, NSC_T_PROXY_OP, coll->ctx, coll->rank, coll->id, t, 0, 2001);
    op->d.proxy_op.peer = coll->rank + (is_send ? 1 : -1);
    op->d.proxy_op.nsteps = NSC_MIX_STEPS;
    op->d.proxy_op.chunk_size = 524288;
    op->d.proxy_op.op_pid = 4242;
    op->d.proxy_op.channel = (uint8_t)ch;
    op->d.proxy_op.is_send = (uint8_t)is_send;
    new_state(m, op->id, t + span(m, 200, 2000), NSC_S_PROXY_OP_IN_PROGRESS, 0);
    uint64_t op_id = op->id;
    for (int s = 0; s < NSC_MIX_STEPS; s++) {
        t += span(m, 500, 5000);
        uint64_t dur = span(m, 10000, 40000);
        nsc_event *step = new_event(m, NSC_T_PROXY_STEP, coll->ctx, coll->rank, op_id, t, dur, 2001);
        step->d.proxy_step.step = s;
        uint64_t a = t + span(m, 100, dur / 3), b = a + span(m, 100, dur / 3);
        new_state(m, step->id, a, states[0], 0);
        new_state(m, step->id, b, states[1], 0);
        new_state(m, step->id, t + dur, states[2], 524288);
        t += dur;
    }
    op = &m->events[m->nevents - NSC_MIX_STEPS - 1];
    op->stop_ns = t + span(m, 200, 3000);
    return op->stop_ns;
}

static int by_stop(const void *a, const void *b)
{
    const nsc_event *x = a, *y = b;
    return (x->stop_ns > y->stop_ns) - (x->stop_ns < y->stop_ns);
}

static int by_ts(const void *a, const void *b)
{
    const nsc_state_rec *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

int nsc_mix_collective(nsc_mix *m, uint16_t ctx, int32_t rank)
{
    if (m->ncompletions == m->cap_colls)
        return -1;
    size_t first_ev = m->nevents, first_st = m->nstates;
    nsc_event *coll = new_event(m, NSC_T_COLL, ctx, rank, 0, m->now_ns, span(m, 3000, 9000), 1000);
    coll->d.coll.seq = m->seq++;
    coll->d.coll.count = 1u << 20;
    coll->d.coll.traffic_bytes = 4u << 20;
    coll->d.coll.root = -1;
    coll->d.coll.func = NSC_MIX_STR_ALLREDUCE;
    coll->d.coll.datatype = NSC_MIX_STR_FLOAT;
    coll->d.coll.algo = NSC_MIX_STR_RING;
    coll->d.coll.proto = NSC_MIX_STR_SIMPLE;
    coll->d.coll.nchannels = NSC_MIX_CHANNELS;
    coll->d.coll.nwarps = 16;
    nsc_event c = *coll;
    uint64_t end = c.stop_ns;
    for (int ch = 0; ch < NSC_MIX_CHANNELS; ch++) {
        uint64_t start = c.start_ns + span(m, 5000, 15000), dur = span(m, 100000, 400000);
        nsc_event *k = new_event(m, NSC_T_KERNEL_CH, ctx, rank, c.id, start, dur, 1000);
        k->d.kernel_ch.channel = (uint8_t)ch;
        k->d.kernel_ch.ptimer_start = start + 1700000000000000000ull;
        k->d.kernel_ch.ptimer_stop = k->d.kernel_ch.ptimer_start + dur - span(m, 0, 2000);
        k->d.kernel_ch.ptimer_stop_ns = k->stop_ns + span(m, 0, 50000);
        for (int send = 0; send < 2; send++) {
            uint64_t op_end = proxy_op(m, &c, ch, send);
            end = op_end > end ? op_end : end;
        }
    }
    m->completions[m->ncompletions++] = (nsc_completion){c.id, end + span(m, 500, 5000)};
    qsort(m->events + first_ev, m->nevents - first_ev, sizeof *m->events, by_stop);
    qsort(m->states + first_st, m->nstates - first_st, sizeof *m->states, by_ts);
    m->now_ns = end + span(m, 5000, 50000);
    return 0;
}

void nsc_mix_strs(nsc_str_def out[NSC_MIX_NSTRS])
{
    static const char *const text[NSC_MIX_NSTRS] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE"};
    for (int i = 0; i < NSC_MIX_NSTRS; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].id = (nsc_str)(i + 1);
        snprintf(out[i].text, sizeof out[i].text, "%s", text[i]);
    }
}

void nsc_mix_ledger(nsc_ledger_rec *out, uint64_t comm, uint64_t seq, int32_t rank)
{
    uint64_t h = (seq * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)rank * 0xc2b2ae3d27d4eb4full);
    uint64_t jit = (h ^ (h >> 31)) % 4000, t = 1000000000ull + seq * 1100000ull + (uint64_t)rank * 900 + jit;
    *out = (nsc_ledger_rec){.comm_id = comm, .seq = seq, .rank = rank, .flags = NSC_LEDGER_NO_NET,
                            .func = NSC_MIX_STR_ALLREDUCE, .datatype = NSC_MIX_STR_FLOAT,
                            .algo = NSC_MIX_STR_RING, .proto = NSC_MIX_STR_SIMPLE, .count = 1 << 20,
                            .bytes = 4 << 20, .root = -1, .peer = -1, .nchannels = NSC_MIX_CHANNELS,
                            .api_ns = t, .enqueue_ns = t + 700 + jit / 8, .launch_ns = t + 4200 + jit / 4,
                            .done_ns = t + 520000 + jit, .gpu_start_ns = t + 9000 + jit / 2,
                            .gpu_end_ns = t + 505000 + jit, .gpu_spread_ns = 1500 + (uint32_t)(jit / 16),
                            .gpu_err_ns = 1800, .nchannels_done = NSC_MIX_CHANNELS};
}
