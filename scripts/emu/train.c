/* train.c: the train scenario, a 3D-parallel training job (Megatron's
 * layout and 1F1B): each rank's tp, pp and dp communicators split off the
 * world one, the microbatches' forward and backward with their pipeline
 * p2p, then the gradient reduction; built from scenarios.c's groups. */
#include <stdlib.h>
#include <string.h>

#include "emu.h"

static const char *const train_names[EMU_TRAIN_GROUPS] = {"tp", "pp", "dp"};

/* One rank of the job: its three communicators, split off the world one;
 * the communicator its stream ran last, and whether that never ended; its
 * jitter draws so far. */
typedef struct trainer {
    const emu_opts *o;
    emu_rank c[EMU_TRAIN_GROUPS];
    emu_rank *last;
    bool stuck;
    uint64_t draws;
    int step;
    int last_step[EMU_TRAIN_GROUPS]; /* the step of its latest group on each communicator */
} trainer;

/* Megatron's order (tp fastest, then dp, then pp): global rank
 * g = t + tp * (d + dp * p). Each group is linear in the global rank: its
 * first member, the stride, its size, the rank's index and the group's id. */
static void train_group(const emu_opts *o, int g, int kind, int *base, int *stride, int *size, int *me, int *id)
{
    int t = g % o->tp, d = g / o->tp % o->dp, p = g / (o->tp * o->dp);
    if (kind == EMU_TRAIN_TP)
        *base = g - t, *stride = 1, *size = o->tp, *me = t, *id = d + o->dp * p;
    else if (kind == EMU_TRAIN_DP)
        *base = t + o->tp * o->dp * p, *stride = o->tp, *size = o->dp, *me = d, *id = t + o->tp * p;
    else
        *base = t + o->tp * d, *stride = o->tp * o->dp, *size = o->pp, *me = p, *id = t + o->tp * d;
}

/* ncclCommSplit(world, color = the group's id, key = the rank's index), as
 * torch.distributed's new_group does: a new hash per group, a new init. */
static int train_split(emu_world *w, emu_rank *world, trainer *tr)
{
    const emu_opts *o = w->o;
    for (int kind = 0; kind < EMU_TRAIN_GROUPS; kind++) {
        int base, stride, size, me, id, nodes = 0, last_node = -1;
        train_group(o, world->global_rank, kind, &base, &stride, &size, &me, &id);
        for (int k = 0; k < size; k++) { /* members ascend, so do their nodes */
            int node = (base + stride * k) / o->ranks_per_node;
            nodes += node != last_node;
            last_node = node;
        }
        /* NCCL derives the child's id from the parent's hash, how many
         * splits the parent made before and the color. */
        uint64_t split = emu_splitmix((uint64_t)(kind + 1) << 32 | (uint64_t)id);
        emu_comm_info ci = {.comm_id = emu_splitmix(world->ci.comm_id ^ split),
                            .name = train_names[kind], .nnodes = nodes, .nranks = size, .rank = me};
        emu_rank *r = &tr->c[kind];
        if (emu_rank_open(w, r, &ci, world->global_rank, world->node))
            return -1;
        r->world_base = base;
        r->world_stride = stride;
        r->wire_comm = o->comms + kind;
        emu_proxy_start(r);
    }
    return 0;
}

/* One group on communicator `kind`. The rank's communicators share its
 * stream, so the device starts it after whatever another communicator ran
 * last: the host waits for that end, which it works out from the wire
 * without waiting for its proxy threads (NCCL's host waits for none per
 * group), then for its jitter. Once that never ends (a stall, a hang, a
 * mismatch), nothing later on the stream starts, whichever communicator it
 * is on. */
static void train_call(trainer *tr, int kind, const emu_op_desc *ops, int nops, bool explicit_group)
{
    emu_rank *r = &tr->c[kind];
    if (r->ci.nranks < 2)
        return; /* a group of one: frameworks skip its collectives */
    if (tr->last && tr->last != r && emu_model_on(tr->o) && !tr->stuck) {
        uint64_t end = emu_timeline_host_end(tr->last, false);
        tr->stuck = end == EMU_NEVER;
        emu_timeline_wait(tr->stuck ? 0 : end);
    }
    tr->last = r;
    emu_group_flags f = {.explicit_group = explicit_group, .step = tr->step, .stuck = tr->stuck,
                         .later_in_step = tr->last_step[kind] == tr->step};
    tr->last_step[kind] = tr->step;
    if (tr->o->jitter_us && emu_model_on(tr->o)) {
        uint64_t x = emu_splitmix(tr->o->seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)r->global_rank << 40) ^ tr->draws++);
        f.jitter_ns = emu_model_us(tr->o, (double)(x % ((uint64_t)tr->o->jitter_us + 1)));
        emu_timeline_wait(emu_clock_stamp_ns() + f.jitter_ns);
    }
    emu_group_call(&r, 1, ops, nops, f, NULL, NULL);
}

/* Forward or backward of one microbatch on this stage: its layer's two
 * tensor-parallel AllReduces (attention, MLP), each after its GPU work. */
static void train_compute(trainer *tr)
{
    emu_op_desc ar = {.func = EMU_F_ALLREDUCE, .peer = -1};
    train_call(tr, EMU_TRAIN_TP, &ar, 1, false);
    train_call(tr, EMU_TRAIN_TP, &ar, 1, false);
}

/* Pipeline p2p in one batched group (Megatron's batch_isend_irecv): a send
 * to and/or a receive from the stage `send_to` / `recv_from` (-1: none). */
static void train_p2p(trainer *tr, int send_to, int recv_from)
{
    emu_op_desc ops[2];
    int n = 0;
    if (send_to >= 0)
        ops[n++] = (emu_op_desc){.func = EMU_F_SEND, .p2p = true, .peer = send_to};
    if (recv_from >= 0)
        ops[n++] = (emu_op_desc){.func = EMU_F_RECV, .p2p = true, .peer = recv_from};
    if (n)
        train_call(tr, EMU_TRAIN_PP, ops, n, true);
}

/* One step of 1F1B without interleaving (Megatron's
 * forward_backward_pipelining_without_interleaving): warm-up forwards, the
 * steady one-forward-one-backward with the paired p2p groups, cool-down
 * backwards; then the data-parallel gradient reduction. */
static void train_step(trainer *tr)
{
    const emu_opts *o = tr->o;
    int p = tr->c[EMU_TRAIN_PP].ci.rank, np = o->pp, m = o->microbatches;
    int prev = p > 0 ? p - 1 : -1, next = p < np - 1 ? p + 1 : -1;
    int warmup = np - p - 1 < m ? np - p - 1 : m, steady = m - warmup;
    for (int i = 0; i < warmup; i++) {
        train_p2p(tr, -1, prev);
        train_compute(tr);
        train_p2p(tr, next, -1);
    }
    if (steady > 0)
        train_p2p(tr, -1, prev);
    for (int i = 0; i < steady; i++) {
        train_compute(tr);
        train_p2p(tr, next, next);
        train_compute(tr);
        train_p2p(tr, prev, i == steady - 1 ? -1 : prev);
    }
    for (int i = 0; i < warmup; i++) {
        train_p2p(tr, -1, next);
        train_compute(tr);
        train_p2p(tr, prev, -1);
    }
    emu_op_desc grads[2] = {{.func = EMU_F_REDUCESCATTER, .peer = -1}, {.func = EMU_F_ALLGATHER, .peer = -1}};
    bool sharded = strcmp(o->func, "ReduceScatter") == 0; /* the distributed optimizer */
    if (!sharded)
        grads[0].func = EMU_F_ALLREDUCE;
    emu_mismatch(o, &tr->c[EMU_TRAIN_DP], tr->step, &grads[0]);
    for (int i = 0; i < (sharded ? 2 : 1); i++)
        train_call(tr, EMU_TRAIN_DP, &grads[i], 1, false);
}

/* --iters steps, each after the host waited for all its GPU's work (the
 * loss, the optimizer step), and so for each of its proxy threads (a
 * stream sync, emu_host_sync); a late host (--slow-rank) is late at the
 * start of each step the fault acts in. */
static int train_run(trainer *tr)
{
    const emu_opts *o = tr->o;
    for (tr->step = 0; tr->step < o->iters; tr->step++) {
        if (o->hang_rank == tr->c[0].global_rank && tr->step == o->hang_after)
            break;
        emu_rank *comms[EMU_TRAIN_GROUPS] = {&tr->c[0], &tr->c[1], &tr->c[2]};
        emu_host_sync(o, comms, EMU_TRAIN_GROUPS);
        emu_rank *self = &tr->c[0];
        emu_straggle(o, &self, 1, tr->step);
        train_step(tr);
        emu_iteration_done(o, (emu_rank *[]){self}, tr->step + 1);
    }
    if (o->hang_rank >= 0)
        emu_sleep_us(o->hang_ms * 1000L);
    return 0;
}

int emu_sc_train(emu_world *w, emu_rank **rs, int n)
{
    trainer *tr = calloc((size_t)n, sizeof *tr);
    if (!tr)
        emu_die("out of memory");
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        tr[i].o = w->o;
        for (int kind = 0; kind < EMU_TRAIN_GROUPS; kind++)
            tr[i].last_step[kind] = -1;
        rc = train_split(w, rs[i], &tr[i]);
    }
    for (int i = 0; i < n && !rc; i++)
        rc = train_run(&tr[i]);
    for (int i = 0; i < n; i++)
        for (int kind = 0; kind < EMU_TRAIN_GROUPS; kind++)
            if (tr[i].c[kind].w)
                emu_rank_close(&tr[i].c[kind]);
    free(tr);
    return rc;
}
