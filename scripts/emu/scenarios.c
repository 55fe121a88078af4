/* scenarios.c: the call sequences NCCL makes for each scenario (train's in
 * train.c), and the scenario table.
 *
 * Every scenario is built from emu_group_call(), which replays what NCCL does for
 * one ncclGroupStart/End (or one implicit group) on a set of communicators, in
 * the order the recorded real trace shows: GroupApi start, GroupStartApiStop,
 * CollApi/P2pApi start+stop for every call, GroupEndApiStart, then per
 * communicator in reverse order KernelLaunch, Group > Coll/P2p (start all, stop
 * all), then GroupApi stop; the proxy thread then emits the children.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "busbw.h"
#include "emu.h"

/* Element size from the project's one datatype table; a name it does not
 * know (a replayed log's) is taken as 4 bytes, NCCL's most common. */
static size_t dtype_size(const char *name)
{
    unsigned size = nsc_dtype_size(name);
    return size ? size : 4;
}

uint64_t emu_comm_hash(const emu_opts *o, int which)
{
    return emu_splitmix(o->seed ^ (0x6e63636cull + (uint64_t)which));
}

static size_t op_count(const emu_opts *o, const emu_op_desc *op)
{
    return op->count ? op->count : o->count;
}

static const char *op_dtype(const emu_opts *o, const emu_op_desc *op)
{
    return op->dtype ? op->dtype : o->dtype;
}

/* What a rank called, as the ranks must agree on it (a mismatch differs);
 * a send and its receive agree on count and datatype. */
static uint64_t op_sig(const emu_opts *o, const emu_op_desc *op)
{
    uint64_t func = op->p2p ? EMU_F_COUNT : (uint64_t)op->func;
    uint64_t h = emu_splitmix(func * 0x100000001b3ull ^ op_count(o, op));
    const char *d = op_dtype(o, op);
    for (; *d; d++)
        h = emu_splitmix(h ^ (uint64_t)(unsigned char)*d);
    return h;
}

static void *fake_ptr(const emu_rank *r, unsigned what)
{
    return (void *)(uintptr_t)(0x7f0000000000ull + ((uint64_t)r->global_rank << 32) + ((uint64_t)what << 24));
}

static uint32_t new_coll_rec(emu_rank *r, const emu_op_desc *op, uint64_t seq, uint64_t api_start,
                             const emu_group_flags *f)
{
    emu_acct *a = r->acct;
    if (a->ncoll >= r->w->acct.coll_cap)
        return UINT32_MAX;
    emu_coll_rec *c = &r->colls[a->ncoll];
    *c = (emu_coll_rec){.seq = seq, .func = op->func, .peer = op->p2p ? op->peer : -1, .api_start_ns = api_start,
                        .step = f->step, .jitter_ns = f->jitter_ns,
                        .faults = emu_fault_origins(r, op->p2p ? op->peer : -1, op->func == EMU_F_SEND, f->step) &
                                  ~(f->later_in_step ? (uint32_t)EMU_FAULT_HOST_LATE : 0u)};
    return a->ncoll++;
}

/* The counter of op's seq: NCCL numbers a collective per function; a
 * Send/Recv, which NCCL does not number, is counted per peer and function,
 * the order in which NCCL matches a Send with its peer's Recv. */
static uint64_t *seq_of(emu_rank *r, const emu_op_desc *op)
{
    if (op->p2p && op->peer >= 0 && op->peer < r->ci.nranks)
        return &r->p2p_seq[2 * op->peer + (op->func == EMU_F_SEND)];
    return &r->next_seq[op->func];
}

/* The Coll or P2p event of one op on rank r, with NCCL's parents for the
 * version. seqNumber advances per enqueue; for a graph replay only when NCCL
 * would count it (profiler loaded, a Group or API handle, KernelCh in the
 * operation's mask), else every replay repeats the captured number. */
static void *start_op(emu_rank *r, const emu_op_desc *op, void *api_h, void *group_h, uint32_t mask,
                      bool replayed, uint32_t *index, uint64_t api_start, const emu_group_flags *f)
{
    const emu_opts *o = r->w->o;
    emu_ev ev = {.type = op->p2p ? NSC_T_P2P : NSC_T_COLL, .mask = mask};
    ev.parent = r->w->pl.version >= 5 ? api_h : group_h;
    uint64_t *next = seq_of(r, op), seq = *next;
    if (op->p2p || !replayed ||
        (r->profiled && (group_h || api_h) && (mask & (1u << NSC_T_KERNEL_CH))))
        (*next)++;
    size_t count = op_count(o, op);
    const char *dtype = op_dtype(o, op);
    size_t bytes = count * dtype_size(dtype);
    if (op->p2p) {
        ev.d.p2p.func = emu_func_names[op->func];
        ev.d.p2p.dtype = dtype;
        ev.d.p2p.buff = fake_ptr(r, 1);
        ev.d.p2p.count = count;
        ev.d.p2p.peer = op->peer;
        ev.d.p2p.nch = (uint8_t)o->channels;
        ev.d.p2p.parent_group = group_h;
        ev.d.p2p.user_tag = seq + 1;
    } else {
        ev.d.coll.seq = seq;
        ev.d.coll.func = emu_func_names[op->func];
        ev.d.coll.dtype = dtype;
        ev.d.coll.algo = o->algo;
        ev.d.coll.proto = o->proto;
        ev.d.coll.variant = "Default";
        ev.d.coll.send = fake_ptr(r, 2);
        ev.d.coll.recv = fake_ptr(r, 3);
        ev.d.coll.count = count;
        ev.d.coll.traffic = bytes;
        ev.d.coll.nch = (uint8_t)o->channels;
        ev.d.coll.nwarps = 16;
        ev.d.coll.parent_group = group_h;
        ev.d.coll.user_tag = seq + 1;
    }
    *index = new_coll_rec(r, op, seq, api_start, f);
    uint64_t t = emu_clock_stamp_ns();
    void *h = emu_start(r, &ev);
    if (*index != UINT32_MAX)
        r->colls[*index].start_ns = t;
    return h;
}

static void *start_api(emu_rank *r, const emu_op_desc *op, void *group_api, uint32_t mask, bool graph)
{
    emu_ev ev = {.type = op->p2p ? NSC_T_P2P_API : NSC_T_COLL_API, .mask = mask, .parent = group_api};
    ev.d.api.func = emu_func_names[op->func];
    ev.d.api.dtype = op_dtype(r->w->o, op);
    ev.d.api.count = op_count(r->w->o, op);
    ev.d.api.stream = r->stream;
    ev.d.api.graph = graph;
    ev.d.api.user_tag = *seq_of(r, op) + 1;
    return emu_start(r, &ev);
}

#define MAX_OPS 64

void emu_sleep_us(long us)
{
    if (us <= 0)
        return;
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

/* A host-side delay of us: with the model, a wait that long from the host's
 * own time (a machine's pause before it is not added), else a sleep. */
static void host_delay_us(const emu_opts *o, long us)
{
    if (us > 0 && emu_model_on(o))
        emu_timeline_wait(emu_clock_stamp_ns() + (uint64_t)us * 1000u);
    else
        emu_sleep_us(us);
}

/* After each iteration: the process of global rank 0 tells --progress FILE
 * how many it has issued (written aside and renamed, so a reader never sees
 * a partial number), then the --pace-us pause (with the model, a wait for
 * that long from the host's own time, so the pause shows in its stamps).
 * Lets a test act mid-job at a point the job really reached instead of
 * after a guessed delay. */
void emu_iteration_done(const emu_opts *o, emu_rank **rs, int done)
{
    if (o->progress && rs[0]->global_rank == 0) {
        char tmp[PATH_MAX];
        snprintf(tmp, sizeof tmp, "%s.tmp", o->progress);
        FILE *f = fopen(tmp, "w");
        if (f == NULL || fprintf(f, "%d\n", done) < 0 || fclose(f) != 0 || rename(tmp, o->progress) != 0)
            emu_die("--progress %s: %s", o->progress, strerror(errno));
    }
    host_delay_us(o, o->pace_us);
}

/* What NCCL's hostStreamPlanTask does for one plan (after the kernel launch,
 * or from the CUDA host callback at every launch of a captured graph): Group
 * start, the Coll/P2p starts, the proxy ops uploaded to the proxy thread, the
 * Coll/P2p stops, Group stop. */
static void plan_task(emu_rank *r, const emu_op_desc *ops, int nops, void *const *api, uint32_t mask,
                      uint64_t api_start, bool replayed, emu_group_flags f)
{
    emu_ev gr = {.type = NSC_T_GROUP, .mask = mask};
    void *g = emu_start(r, &gr);
    void *h[MAX_OPS];
    uint32_t idx[MAX_OPS];
    for (int j = 0; j < nops; j++)
        h[j] = start_op(r, &ops[j], api[j], g, mask, replayed, &idx[j], api_start, &f);
    emu_op posted[MAX_OPS];
    for (int j = 0; j < nops; j++) {
        const emu_opts *o = r->w->o;
        posted[j] = (emu_op){.coll_h = h[j], .coll_index = idx[j], .p2p = ops[j].p2p,
                             .nch = o->channels, .peer = ops[j].p2p ? ops[j].peer : -1,
                             .is_send = ops[j].func == EMU_F_SEND,
                             .bytes = op_count(o, &ops[j]) * dtype_size(op_dtype(o, &ops[j])),
                             .mask = emu_quirk_task_mask(ops[j].func, mask),
                             .hang = f.hang, .func = ops[j].func, .enq_ns = f.stuck ? EMU_NEVER : emu_clock_stamp_ns(),
                             .sig = op_sig(o, &ops[j]), .with_prev = j > 0 && ops[j].p2p && ops[j - 1].p2p,
                             .step = f.step};
    }
    if (emu_model_on(r->w->o))
        emu_timeline_host_publish(r, posted, (size_t)nops);
    r->host_may_publish = false; /* the next group's start depends on this one's end */
    emu_proxy_post(r, posted, (size_t)nops);
    for (int j = 0; j < nops; j++) /* what emu_host_sync waits for */
        if (!posted[j].p2p) {
            r->host_colls++;
            *r->host_last = posted[j];
        }
    r->host_last_p2p = posted[nops - 1].p2p;
    for (int j = 0; j < nops; j++) {
        emu_stop(r, ops[j].p2p ? NSC_T_P2P : NSC_T_COLL, h[j]);
        if (idx[j] != UINT32_MAX)
            r->colls[idx[j]].stop_ns = emu_clock_stamp_ns();
    }
    emu_stop(r, NSC_T_GROUP, g);
}

/* One CE sync (ncclMemOpSync): NCCL reads the live mask; the sync flag
 * alternates and the CE sequence advances whether or not it is profiled. */
static void ce_sync(emu_rank *r, void *ce_h)
{
    emu_ev ev = {.type = NSC_T_CE_SYNC, .mask = emu_mask_now(), .parent = ce_h};
    ev.d.ce_sync.complete = r->ce_complete;
    ev.d.ce_sync.nranks = r->ci.nranks;
    emu_stop(r, NSC_T_CE_SYNC, ce_h ? emu_start(r, &ev) : NULL);
    r->ce_seq++;
    r->ce_complete = !r->ce_complete;
}

/* A collective on the copy engine (ncclLaunchCeColl, intra-node AllGather):
 * CeColl > {CeSync, CeBatch of the nranks copies, CeSync}. No KernelLaunch,
 * Group or Coll: the plan has no kernel and no task events. */
static void ce_coll(emu_rank *r, const emu_op_desc *op, void *api_h)
{
    const emu_opts *o = r->w->o;
    size_t bytes = o->count * dtype_size(o->dtype);
    emu_ev ev = {.type = NSC_T_CE_COLL, .mask = emu_mask_now(), .parent = api_h};
    ev.d.ce_coll.seq = r->ce_seq;
    ev.d.ce_coll.ce_seq = r->ce_seq;
    ev.d.ce_coll.func = emu_func_names[op->func];
    ev.d.ce_coll.dtype = o->dtype;
    ev.d.ce_coll.sync = "UC";
    ev.d.ce_coll.send = fake_ptr(r, 2);
    ev.d.ce_coll.recv = fake_ptr(r, 3);
    ev.d.ce_coll.count = o->count;
    ev.d.ce_coll.stream = r->stream;
    ev.d.ce_coll.user_tag = r->next_seq[op->func] + 1;
    void *h = emu_start(r, &ev);
    ce_sync(r, h);
    emu_ev b = {.type = NSC_T_CE_BATCH, .mask = emu_mask_now(), .parent = h};
    b.d.ce_batch.nops = r->ci.nranks;
    b.d.ce_batch.bytes = (size_t)r->ci.nranks * bytes;
    emu_stop(r, NSC_T_CE_BATCH, h ? emu_start(r, &b) : NULL);
    ce_sync(r, h);
    emu_stop(r, NSC_T_CE_COLL, h);
}

/* One group on `n` communicators driven by this thread, nops ops each. The
 * mask is sampled once, at GroupApi start, for the whole operation. A graph
 * capture stops after the kernel launches: the plans' task events run at
 * each replay; the API handles and the mask go to `api_out`/`mask_out`. */
void emu_group_call(emu_rank **rs, int n, const emu_op_desc *ops, int nops, emu_group_flags f,
                    void **api_out, uint32_t *mask_out)
{
    emu_rank *r0 = rs[0];
    uint32_t mask = emu_mask_now();
    emu_ev gev = {.type = NSC_T_GROUP_API, .mask = mask};
    gev.d.group_api.graph = f.graph;
    gev.d.group_api.depth = f.explicit_group ? 2 : 1;
    uint64_t api_start = emu_clock_stamp_ns();
    void *ga = emu_start(r0, &gev);
    /* Implicit groups too: NCCL records both states at the outermost depth
     * (the first task appended, the group's end), whatever that depth is. */
    emu_state(r0, NSC_T_GROUP_API, ga, NSC_S_GROUP_START_API_STOP, 0, 0);
    void *api[MAX_OPS * 8];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < nops; j++) {
            void *h = start_api(rs[i], &ops[j], ga, mask, f.graph);
            emu_stop(rs[i], ops[j].p2p ? NSC_T_P2P_API : NSC_T_COLL_API, h);
            api[i * nops + j] = h;
        }
    emu_state(r0, NSC_T_GROUP_API, ga, NSC_S_GROUP_END_API_START, 0, 0);
    if (f.kill_mid) {
        for (int i = 0; i < n; i++)
            emu_proxy_drain(rs[i]); /* so every counted call is complete */
        emu_sleep_us(r0->w->o->kill_delay_ms * 1000L);
        kill(getpid(), SIGKILL);
    }
    for (int i = n - 1; i >= 0; i--) {
        emu_rank *r = rs[i];
        if (r->w->o->ce && !ops[0].p2p) {
            for (int j = 0; j < nops; j++)
                ce_coll(r, &ops[j], api[i * nops + j]);
            continue;
        }
        emu_ev kl = {.type = NSC_T_KERNEL_LAUNCH, .mask = mask, .parent = ga};
        kl.d.launch.stream = r->stream;
        emu_stop(r, NSC_T_KERNEL_LAUNCH, emu_start(r, &kl));
        if (!f.graph)
            plan_task(r, ops, nops, &api[i * nops], mask, api_start, false, f);
    }
    emu_stop(r0, NSC_T_GROUP_API, ga);
    if (api_out)
        memcpy(api_out, api, (size_t)(n * nops) * sizeof *api);
    if (mask_out)
        *mask_out = mask;
}



/* A training step's host waits for its GPU once per iteration (the loss,
 * the data loader): so a late rank stays as late as its delay instead of
 * the others' hosts running ever further ahead. Only with the model: without
 * it the device takes no time. The host sleeps until its device's modelled
 * end, which it computes from the wire (timeline.c) rather than waiting for
 * its proxy thread to have made every event: a proxy behind the model then
 * takes its work in batches instead of one collective per context switch.
 * With the clock floor the host does not sleep for an end less than the
 * horizon ahead: its thread's clock is raised to the end, so its next events
 * (and the summary's times of them) read as if it had slept. Without it, an
 * end less than the proxy's slack ahead is not slept for, as the proxy makes
 * events that close together at once: the next collective's device start is
 * the end all the same (emu_model_ready), only its API events are that much
 * early. */
void emu_host_sync(const emu_opts *o, emu_rank **rs, int n)
{
    uint64_t until = 0;
    for (int i = 0; emu_model_on(o) && i < n; i++) {
        uint64_t end = emu_timeline_host_end(rs[i], true);
        until = end != EMU_NEVER && end > until ? end : until;
    }
    emu_timeline_wait(until);
}

/* --mismatch: the rank's collective number K calls another count, datatype
 * or function than its peers. */
void emu_mismatch(const emu_opts *o, const emu_rank *r, int it, emu_op_desc *op)
{
    const emu_model *m = &o->model;
    if (r->global_rank != m->mismatch_rank || it != m->mismatch_coll)
        return;
    if (strcmp(m->mismatch_what, "count") == 0)
        op->count = 2 * o->count;
    else if (strcmp(m->mismatch_what, "dtype") == 0)
        op->dtype = strcmp(o->dtype, "ncclFloat16") ? "ncclFloat16" : "ncclFloat32";
    else
        op->func = op->func == EMU_F_ALLGATHER ? EMU_F_ALLREDUCE : EMU_F_ALLGATHER;
}

/* The straggler arrives late at every collective the fault acts in: it
 * waits before issuing, with the model for that long from its own time (a
 * machine's pause before the wait is not added to it). */
void emu_straggle(const emu_opts *o, emu_rank **rs, int n, int step)
{
    for (int i = 0; i < n && emu_fault_on(o, step); i++)
        if (rs[i]->global_rank == o->slow_rank) {
            host_delay_us(o, o->slow_us);
            return;
        }
}

static int collective_ops(const emu_opts *o, emu_op_desc *ops)
{
    int n = o->ops < 1 ? 1 : (o->ops > MAX_OPS ? MAX_OPS : o->ops);
    for (int j = 0; j < n; j++)
        ops[j] = (emu_op_desc){.func = emu_func_index(o->func), .peer = -1};
    if (o->also_func && n < MAX_OPS)
        ops[n++] = (emu_op_desc){.func = emu_func_index(o->also_func), .peer = -1};
    return n;
}

/* Iterations of collectives; hang and kill cut them short as configured. */
static int run_iterations(emu_world *w, emu_rank **rs, int n, int iters, bool explicit_group)
{
    const emu_opts *o = w->o;
    emu_op_desc ops[MAX_OPS];
    int nops = collective_ops(o, ops);
    for (int it = 0; it < iters; it++) {
        bool hang_now = o->hang_rank >= 0 && it == o->hang_after;
        if (hang_now && rs[0]->global_rank == o->hang_rank)
            break; /* this rank stops issuing collectives */
        emu_host_sync(o, rs, n);
        emu_straggle(o, rs, n, it);
        emu_group_flags f = {.explicit_group = explicit_group || nops > 1, .hang = hang_now,
                         .kill_mid = o->kill_rank == rs[0]->global_rank && it == o->kill_after, .step = it};
        emu_op_desc called[MAX_OPS];
        memcpy(called, ops, sizeof called);
        emu_mismatch(o, rs[0], it, &called[0]);
        emu_group_call(rs, n, called, nops, f, NULL, NULL);
        if (hang_now)
            break;
        emu_iteration_done(o, rs, it + 1);
    }
    if (o->hang_rank >= 0)
        emu_sleep_us(o->hang_ms * 1000L);
    return 0;
}

static int sc_coll(emu_world *w, emu_rank **rs, int n)
{
    return run_iterations(w, rs, n, w->o->iters, false);
}

static int sc_grouped(emu_world *w, emu_rank **rs, int n)
{
    return run_iterations(w, rs, n, w->o->iters, true);
}

/* --hang-rank stops that rank's sends and receives at iteration
 * --hang-after: its neighbours' Recv from it and Send to it find no other
 * side (until it exits, --hang-ms later). */
static int sc_p2p(emu_world *w, emu_rank **rs, int n)
{
    for (int it = 0; it < w->o->iters; it++) {
        if (w->o->hang_rank >= 0 && it == w->o->hang_after && rs[0]->global_rank == w->o->hang_rank)
            break;
        emu_host_sync(w->o, rs, n);
        for (int i = 0; i < n; i++) {
            int me = rs[i]->ci.rank, nr = rs[i]->ci.nranks;
            emu_op_desc ops[2] = {{.func = EMU_F_SEND, .p2p = true, .peer = (me + 1) % nr},
                              {.func = EMU_F_RECV, .p2p = true, .peer = (me + nr - 1) % nr}};
            emu_group_call(&rs[i], 1, ops, 2, (emu_group_flags){.explicit_group = true, .step = it}, NULL, NULL);
        }
        emu_iteration_done(w->o, rs, it + 1);
    }
    if (w->o->hang_rank >= 0)
        emu_sleep_us(w->o->hang_ms * 1000L);
    return 0;
}

/* ncclAlltoAll as NCCL (2.28 on) runs it on the kernel path: one implicit
 * group of a Send to and a Recv from every rank, itself included, each
 * reported as its own P2pApi and P2p event ("Send", "Recv"); the func
 * "AlltoAll" names only the copy-engine path. Its sends and receives meet
 * on the wire, so it lasts until the last peer came. */
static int sc_alltoall(emu_world *w, emu_rank **rs, int n)
{
    for (int it = 0; it < w->o->iters; it++) {
        emu_host_sync(w->o, rs, n);
        emu_straggle(w->o, rs, n, it);
        for (int i = 0; i < n; i++) {
            int nr = rs[i]->ci.nranks;
            emu_op_desc ops[MAX_OPS];
            if (2 * nr > MAX_OPS)
                emu_die("alltoall: at most %d ranks", MAX_OPS / 2);
            for (int q = 0; q < nr; q++) {
                ops[2 * q] = (emu_op_desc){.func = EMU_F_SEND, .p2p = true, .peer = q};
                ops[2 * q + 1] = (emu_op_desc){.func = EMU_F_RECV, .p2p = true, .peer = q};
            }
            emu_group_call(&rs[i], 1, ops, 2 * nr, (emu_group_flags){.step = it}, NULL, NULL);
        }
        emu_iteration_done(w->o, rs, it + 1);
    }
    return 0;
}

/* A captured graph's replays, as CUDA runs them: NCCL's host callback on a
 * thread of CUDA's own, not the one that called NCCL. */
typedef struct graph_replays {
    emu_world *w;
    emu_rank **rs;
    int n, nops;
    const emu_op_desc *ops;
    void *const *api;
    uint32_t mask;
} graph_replays;

static void *replay_all(void *arg)
{
    const graph_replays *g = arg;
    for (int it = 0; it < g->w->o->iters; it++) {
        emu_host_sync(g->w->o, g->rs, g->n);
        uint64_t launch = emu_clock_stamp_ns();
        for (int i = 0; i < g->n; i++)
            plan_task(g->rs[i], g->ops, g->nops, &g->api[i * g->nops], g->mask, launch, true,
                      (emu_group_flags){.step = it});
        emu_iteration_done(g->w->o, g->rs, it + 1);
    }
    return NULL;
}

/* Capture once: GroupApi, CollApi (graphCaptured) and the kernel launches;
 * the plans are persistent. Each replay runs NCCL's host callback per rank:
 * Group, Coll (parentObj: the CollApi handle of the capture, long stopped;
 * the captured mask) and the proxy ops, with their children. */
static int sc_graph(emu_world *w, emu_rank **rs, int n)
{
    emu_op_desc ops[MAX_OPS];
    int nops = collective_ops(w->o, ops);
    void *api[MAX_OPS * 8];
    graph_replays g = {.w = w, .rs = rs, .n = n, .nops = nops, .ops = ops, .api = api};
    emu_group_call(rs, n, ops, nops, (emu_group_flags){.explicit_group = true, .graph = true}, api, &g.mask);
    pthread_t cb;
    int err = pthread_create(&cb, NULL, replay_all, &g);
    if (err)
        emu_die("graph replays: pthread_create: %s", strerror(err));
    pthread_join(cb, NULL);
    return 0;
}

/* Half the iterations on the parent communicator, then ncclCommSplit by
 * color = rank % 2 into children with new hashes, the rest on the child. */
static int sc_split(emu_world *w, emu_rank **rs, int n)
{
    int half = w->o->iters / 2;
    run_iterations(w, rs, n, half, false);
    emu_rank *kids = calloc((size_t)n, sizeof *kids);
    emu_rank **kp = calloc((size_t)n, sizeof *kp);
    if (!kids || !kp)
        emu_die("out of memory");
    for (int i = 0; i < n; i++) {
        const emu_comm_info *p = &rs[i]->ci;
        int color = p->rank % 2;
        emu_comm_info ci = {.comm_id = emu_comm_hash(w->o, 1 + color), .name = color ? "split-odd" : "split-even",
                            .nnodes = p->nnodes, .nranks = (p->nranks - color + 1) / 2, .rank = p->rank / 2};
        if (emu_rank_open(w, &kids[i], &ci, rs[i]->global_rank, rs[i]->node))
            return -1;
        kids[i].world_base = color;
        kids[i].world_stride = 2;
        kids[i].wire_comm = w->o->comms + color;
        emu_proxy_start(&kids[i]);
        kp[i] = &kids[i];
    }
    run_iterations(w, kp, n, w->o->iters - half, false);
    for (int i = 0; i < n; i++)
        emu_rank_close(&kids[i]);
    free(kids);
    free(kp);
    return 0;
}

const emu_scenario emu_scenarios[] = {
    {"coll", "one GPU per thread: --iters x --ops collectives (implicit groups when --ops 1)", false, sc_coll, 0},
    {"multigpu", "several GPUs per thread: one thread drives all ranks of a node in one ncclGroup", true, sc_coll, 0},
    {"grouped", "grouped operations: --ops collectives per ncclGroup (one GroupApi, KernelLaunch, Group)", false, sc_grouped, 0},
    {"p2p", "send to rank+1 and receive from rank-1 in one group per iteration", false, sc_p2p, 0},
    {"alltoall", "ncclAlltoAll: a Send to and a Recv from every rank in one implicit group (<= 32 ranks)", false,
     sc_alltoall, 0},
    {"ring", "coll with --algo RING (ProxyOp/ProxyStep between nodes)", false, sc_coll, 0},
    {"tree", "coll with --algo TREE (ProxyOp/ProxyStep up and down a tree of nodes)", false, sc_coll, 0},
    {"pxn", "coll whose ProxyOps are started by the next local rank's process (needs processes)", false, sc_coll, 0},
    {"graph", "CUDA-graph capture once (graphCaptured), then --iters replays", false, sc_graph, 0},
    {"split", "half the iterations, ncclCommSplit by rank parity, the rest on the child", false, sc_split, 1},
    {"hang", "rank --hang-rank stops after --hang-after iterations; the others hang in it", false, sc_coll, 0},
    {"kill", "rank --kill-rank's process is killed (SIGKILL) inside iteration --kill-after", false, sc_coll, 0},
    {"train", "3D-parallel training: --tp x --pp x --dp ranks, 1F1B over --microbatches, one communicator per group",
     false, emu_sc_train, EMU_TRAIN_GROUPS},
};
const int emu_nscenarios = (int)(sizeof emu_scenarios / sizeof emu_scenarios[0]);

const emu_scenario *emu_scenario_find(const char *name)
{
    for (int i = 0; i < emu_nscenarios; i++)
        if (strcmp(emu_scenarios[i].name, name) == 0)
            return &emu_scenarios[i];
    return NULL;
}
