/* test_emu_train.c: the train scenario against NCCL's rules, read back from
 * the record plugin and the summary: every rank splits tp, pp and dp
 * communicators off world (one hash per group, every member in it once),
 * collectives run in implicit groups and pipeline p2p in explicit ones,
 * every Send has its Recv, seqNumbers are dense and alike on every member;
 * and the ground truth of a fault that starts mid-job and comes back. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "mono.h"
#include "test_emu_util.h"

#define TRAIN_JOB "--scenario train --nodes 2 --ranks-per-node 4 --tp 2 --pp 2 --dp 2 --microbatches 3"

/* What a communicator context of one process is. */
typedef struct comm_ctx {
    uint64_t pid, ctx, comm_id;
    int rank, nranks;
    const char *name;
} comm_ctx;

/* A started event, as later starts name it as their parent. */
typedef struct started {
    uint64_t pid, handle;
    const char *type;
    int depth;
} started;

typedef struct trace {
    comm_ctx *ctx;
    size_t nctx;
    started *ev;
    size_t nev;
} trace;

static const comm_ctx *ctx_of(const trace *t, uint64_t pid, uint64_t ctx)
{
    for (size_t i = 0; i < t->nctx; i++)
        if (t->ctx[i].pid == pid && t->ctx[i].ctx == ctx)
            return &t->ctx[i];
    cr_assert_fail("no init for context %#llx of pid %llu", (unsigned long long)ctx, (unsigned long long)pid);
    return NULL;
}

/* The latest start of that handle in that process: handles are reused. */
static const started *parent_of(const trace *t, uint64_t pid, uint64_t handle)
{
    for (size_t i = t->nev; i-- > 0;)
        if (t->ev[i].pid == pid && t->ev[i].handle == handle)
            return &t->ev[i];
    cr_assert_fail("parent %#llx of pid %llu was never started", (unsigned long long)handle,
                   (unsigned long long)pid);
    return NULL;
}

/* p2p[comm][a][b][send]: how many ops rank a of comm posted with peer b. */
#define MAXC 16
typedef struct p2p_count {
    uint64_t comm_id;
    unsigned n[2][2][2];
} p2p_count;

static p2p_count *p2p_slot(p2p_count *c, size_t *nc, uint64_t comm_id)
{
    for (size_t i = 0; i < *nc; i++)
        if (c[i].comm_id == comm_id)
            return &c[i];
    cr_assert_lt(*nc, MAXC);
    c[*nc] = (p2p_count){.comm_id = comm_id};
    return &c[(*nc)++];
}

Test(emu_train, call_sequence_follows_ncclcommsplit_group_and_p2p_rules, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 2"), 0);
    jlines l = {0};
    jlines_read_dir(dir, &l);
    trace t = {calloc(l.n, sizeof(comm_ctx)), 0, calloc(l.n, sizeof(started)), 0};
    p2p_count p2p[MAXC];
    size_t np2p = 0;
    unsigned inits_by_name[4] = {0};
    for (size_t i = 0; i < l.n; i++) {
        const nsc_json *e = nsc_json_root(&l.docs[i]);
        uint64_t pid = jnum(e, "pid");
        if (strcmp(jstr(e, "call"), "init") == 0) {
            /* world first, then tp, pp, dp split off it, in that order */
            static const char *const order[] = {"world", "tp", "pp", "dp"};
            unsigned before = 0;
            for (size_t k = 0; k < t.nctx; k++)
                before += t.ctx[k].pid == pid;
            cr_assert_lt(before, 4);
            cr_assert_str_eq(jstr(e, "comm_name"), order[before]);
            inits_by_name[before]++;
            t.ctx[t.nctx++] = (comm_ctx){pid, jhex(e, "ctx"), jnum(e, "comm_id"), (int)jnum(e, "rank"),
                                         (int)jnum(e, "nranks"), order[before]};
            continue;
        }
        if (strcmp(jstr(e, "call"), "start") != 0)
            continue;
        const char *type = jstr(e, "type");
        started s = {pid, jhex(e, "handle"), type, (int)jnum(e, "groupDepth")};
        if (strcmp(type, "CollApi") == 0 || strcmp(type, "P2pApi") == 0) {
            /* collectives in implicit groups, pipeline p2p batched in explicit ones */
            const started *g = parent_of(&t, pid, jhex(e, "parent"));
            cr_assert_str_eq(g->type, "GroupApi");
            cr_assert_eq(g->depth, type[0] == 'P' ? 2 : 1, "%s in a group of depth %d", type, g->depth);
        }
        const comm_ctx *c = jhex(e, "ctx") ? ctx_of(&t, pid, jhex(e, "ctx")) : NULL;
        if (strcmp(type, "Coll") == 0)
            cr_assert(strcmp(c->name, "tp") == 0 || strcmp(c->name, "dp") == 0, "a collective on %s", c->name);
        if (strcmp(type, "P2p") == 0) {
            cr_assert_str_eq(c->name, "pp");
            int peer = (int)jnum(e, "peer");
            cr_assert(peer != c->rank && peer < c->nranks);
            p2p_slot(p2p, &np2p, c->comm_id)->n[c->rank][peer][strcmp(jstr(e, "func"), "Send") == 0]++;
        }
        t.ev[t.nev++] = s;
    }
    for (int k = 0; k < 4; k++)
        cr_assert_eq(inits_by_name[k], 8, "every rank inits %s", k ? "its groups" : "world");
    /* Each group's hash is its members' only: tp and dp of 2 ranks, 4 groups each. */
    for (size_t i = 0; i < t.nctx; i++) {
        unsigned members = 0, rank_bits = 0;
        for (size_t k = 0; k < t.nctx; k++)
            if (t.ctx[k].comm_id == t.ctx[i].comm_id) {
                members++;
                rank_bits |= 1u << t.ctx[k].rank;
                cr_assert_str_eq(t.ctx[k].name, t.ctx[i].name);
            }
        cr_assert_eq(members, (unsigned)t.ctx[i].nranks);
        cr_assert_eq(rank_bits, (1u << t.ctx[i].nranks) - 1);
        cr_assert_eq(t.ctx[i].nranks, strcmp(t.ctx[i].name, "world") ? 2 : 8);
    }
    /* Every Send from a to b has its Recv at b from a: 2 steps x 3 microbatches
     * of activations forward and gradients back. */
    cr_assert_eq(np2p, 4);
    for (size_t i = 0; i < np2p; i++)
        for (int a = 0; a < 2; a++) {
            cr_assert_eq(p2p[i].n[a][1 - a][1], 6);
            cr_assert_eq(p2p[i].n[a][1 - a][1], p2p[i].n[1 - a][a][0]);
        }
    free(t.ctx);
    free(t.ev);
    jlines_free(&l);
}

/* A func's seqNumbers on one rank: 0..n-1, in order; returns n. */
static uint64_t dense(const nsc_json *seqs)
{
    uint64_t n = 0;
    for (const nsc_json *s = nsc_json_first(seqs); s; s = nsc_json_next(seqs, s), n++) {
        uint64_t v = 1;
        cr_assert_eq(nsc_json_u64(s, &v), 0);
        cr_assert_eq(v, n);
    }
    return n;
}

Test(emu_train, seq_numbers_are_dense_and_alike_on_every_member, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 3 --func ReduceScatter"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    cr_assert_eq(ranks->count, 32, "8 ranks x world, tp, pp, dp");
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *seq = nsc_json_get(rk, "seq");
        for (const nsc_json *f = nsc_json_first(seq); f; f = nsc_json_next(seq, f))
            dense(f);
        for (const nsc_json *o = nsc_json_first(ranks); o; o = nsc_json_next(ranks, o))
            if (jnum(o, "comm_id") == jnum(rk, "comm_id") && nsc_json_get(seq, "AllReduce"))
                cr_assert_eq(nsc_json_get(nsc_json_get(o, "seq"), "AllReduce")->count,
                             nsc_json_get(seq, "AllReduce")->count);
        /* the distributed optimizer's ReduceScatter and AllGather, once per step on dp */
        if (nsc_json_get(seq, "ReduceScatter"))
            cr_assert_eq(dense(nsc_json_get(seq, "AllGather")), 3);
        /* tp: 2 AllReduces per forward and per backward of each microbatch */
        if (jnum(rk, "nranks") == 2 && !nsc_json_get(seq, "Send") && !nsc_json_get(seq, "ReduceScatter"))
            cr_assert_eq(nsc_json_get(seq, "AllReduce")->count, 3 * 3 * 2 * 2);
    }
    nsc_json_free(&sum);
}

/* A slow GPU from step 2 on, in every 3rd step: the truth names the steps it
 * acted in and its onset, and the GPU's work took that much longer there. */
Test(emu_train, fault_onset_and_intermittency_are_in_the_ground_truth, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 6 --slow-gpu 5:400 --fault-from 2 --fault-every 3"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *root = nsc_json_root(&sum);
    const nsc_json *fault = nsc_json_at(nsc_json_get(root, "faults"), 0);
    cr_assert_str_eq(jstr(fault, "kind"), "slow_gpu");
    cr_assert_eq(jnum(fault, "from"), 2);
    cr_assert_eq(jnum(fault, "every"), 3);
    const nsc_json *truth = nsc_json_get(root, "fault_truth");
    cr_assert_eq(truth->count, 1);
    const nsc_json *hit = nsc_json_at(truth, 0);
    cr_assert_str_eq(jstr(hit, "kind"), "slow_gpu");
    cr_assert_eq(jnum(nsc_json_get(hit, "onset"), "step"), 2);
    const nsc_json *colls = nsc_json_get(hit, "collectives");
    unsigned in_step[6] = {0};
    for (const nsc_json *c = nsc_json_first(colls); c; c = nsc_json_next(colls, c))
        in_step[jnum(c, "step")]++;
    for (int s = 0; s < 6; s++)
        cr_assert_eq(in_step[s] > 0, s == 2 || s == 5, "step %d: %u collectives", s, in_step[s]);
    /* rank 5 (stage 1): every op of a faulted step starts its device 400 us
     * after it was enqueued at the earliest, and the truth lists each once. */
    const nsc_json *ranks = nsc_json_get(root, "ranks");
    uint64_t pid = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        if (jnum(rk, "nranks") == 8 && jnum(rk, "rank") == 5)
            pid = jnum(rk, "pid");
    unsigned faulted = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        for (const nsc_json *c = nsc_json_first(cs); jnum(rk, "pid") == pid && c; c = nsc_json_next(cs, c)) {
            if (jnum(c, "step") % 3 != 2)
                continue;
            faulted++;
            cr_assert_geq(jnum(c, "ready_ns") - jnum(c, "api_start_ns"), 400000);
        }
    }
    cr_assert_eq(faulted, colls->count);
    nsc_json_free(&sum);
}

/* The train job with args, its summary in *sum (the caller frees): its
 * fault_truth's one entry, of that kind. */
static const nsc_json *only_truth(nsc_json_doc *sum, const char *args, const char *kind)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "%s%s", TRAIN_JOB, args);
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, cmd), 0);
    *sum = summary_read(dir);
    const nsc_json *truth = nsc_json_get(nsc_json_root(sum), "fault_truth");
    cr_assert_eq(truth->count, 1);
    cr_assert_str_eq(jstr(nsc_json_at(truth, 0), "kind"), kind);
    return nsc_json_at(truth, 0);
}

/* A late host is late once a step, before its first op: the truth lists,
 * per step, the first op of rank 5 (stage 1) on each of its communicators
 * (tp, pp, dp), the ones its wait delays, not every op of the step. */
Test(emu_train, a_late_host_s_truth_is_its_first_op_per_communicator_and_step, .timeout = 60)
{
    nsc_json_doc sum;
    const nsc_json *colls = nsc_json_get(only_truth(&sum, " --iters 2 --slow-rank 5 --slow-us 100", "host_late"),
                                         "collectives");
    cr_assert_eq(colls->count, 6, "%u collectives, want 3 communicators x 2 steps", colls->count);
    for (const nsc_json *c = nsc_json_first(colls); c; c = nsc_json_next(colls, c))
        for (const nsc_json *d = nsc_json_first(colls); d != c; d = nsc_json_next(colls, d))
            cr_assert(jnum(c, "comm_id") != jnum(d, "comm_id") || jnum(c, "step") != jnum(d, "step"),
                      "two of step %llu on one communicator", (unsigned long long)jnum(c, "step"));
    nsc_json_free(&sum);
}

Test(emu_train, sizes_that_do_not_fit_the_job_are_refused)
{
    const char *dir = tmpdir_new();
    int rc = run_emu(dir, NULL, "--scenario train --nodes 2 --ranks-per-node 4 --tp 3 2>/dev/null");
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    rc = run_emu(dir, NULL, "--scenario train --nodes 2 --ranks-per-node 2 --tp 4 --pp 1 --dp 1 2>/dev/null");
    cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "a tensor-parallel group across nodes");
}

/* Every rank's jitter draws, in the order of its collectives, over the
 * summary's rank entries (the same order in every run: the launcher's
 * processes, each one's communicators as it opened them). */
static size_t jitters(const char *dir, uint64_t *out, size_t cap)
{
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    size_t n = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        for (const nsc_json *c = nsc_json_first(cs); c && n < cap; c = nsc_json_next(cs, c))
            out[n++] = jnum(c, "jitter_ns") << 8 | jnum(rk, "nranks");
    }
    nsc_json_free(&sum);
    return n;
}

/* The jitter is seeded: the same seed draws the same, another seed other
 * draws; each in [0, --jitter-us]. */
Test(emu_train, jitter_is_per_rank_seeded_and_bounded, .timeout = 60)
{
    static uint64_t a[4096], b[4096], c[4096];
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 2 --jitter-us 50 --seed 7"), 0);
    size_t na = jitters(dir, a, 4096);
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 2 --jitter-us 50 --seed 7"), 0);
    size_t nb = jitters(dir, b, 4096);
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 2 --jitter-us 50 --seed 8"), 0);
    size_t nc = jitters(dir, c, 4096);
    cr_assert(na > 100 && na == nb && na == nc, "%zu, %zu, %zu collectives", na, nb, nc);
    size_t same = 0, nonzero = 0;
    for (size_t i = 0; i < na; i++) {
        cr_assert_leq(a[i] >> 8, 50000);
        nonzero += a[i] >> 8 != 0;
        same += a[i] == c[i];
    }
    cr_assert_arr_eq(a, b, na * sizeof *a, "the same seed draws the same jitter");
    cr_assert_gt(nonzero, na / 2);
    cr_assert_lt(same, na / 4, "another seed draws other jitter (%zu of %zu alike)", same, na);
}

/* A slow link node0 -> node1 in steps 1 and 3: its truth lists only the
 * pipeline p2p that crosses it that way (activations forward from stage 0
 * on node 0 to stage 1 on node 1), not the gradients coming back. */
Test(emu_train, a_slow_link_touches_only_what_crosses_it, .timeout = 60)
{
    nsc_json_doc sum;
    const nsc_json *hit = only_truth(&sum, " --iters 4 --slow-link 0:1:3 --fault-from 1 --fault-every 2", "slow_link");
    cr_assert_eq(jnum(nsc_json_get(hit, "onset"), "step"), 1);
    const nsc_json *colls = nsc_json_get(hit, "collectives");
    /* 4 pipelines x 3 microbatches x 2 steps, a Send and its Recv each */
    cr_assert_eq(colls->count, 4 * 3 * 2 * 2);
    for (const nsc_json *c = nsc_json_first(colls); c; c = nsc_json_next(colls, c)) {
        cr_assert(jnum(c, "step") == 1 || jnum(c, "step") == 3);
        cr_assert(strcmp(jstr(c, "func"), "Send") == 0 || strcmp(jstr(c, "func"), "Recv") == 0);
    }
    nsc_json_free(&sum);
}

/* Rank 5 stops sending in its 5th tensor-parallel AllReduce: its stream
 * never gets past it, so nothing later on any of its communicators starts,
 * its peers wait for it, and the whole job stops: every rank of every
 * group has an op that never ends. */
Test(emu_train, a_stall_holds_the_rank_s_stream_then_the_job, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 3 --stall 5:4:0:1"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    unsigned held = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        bool never = false;
        for (const nsc_json *c = nsc_json_first(cs); c; c = nsc_json_next(cs, c))
            never |= jnum(c, "end_ns") == 0;
        held += never;
    }
    cr_assert_eq(held, 24, "%u of the 24 tp, pp and dp rank entries hold an op that never ends", held);
    nsc_json_free(&sum);
}

/* --stall's COMM: rank 5 stops sending in its data-parallel collective 1
 * (step 1's gradient AllReduce), not in the first collective of that seq
 * on its stream (its second tensor-parallel AllReduce, in step 0): its
 * tensor-parallel AllReduces of steps 0 and 1 (3 microbatches x forward
 * and backward x 2 each) all end, its data-parallel one of step 1 never,
 * and the ground truth says in which communicator. */
Test(emu_train, a_stall_acts_in_the_communicator_named, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, TRAIN_JOB " --iters 3 --stall 5:1:0:1:dp"), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *root = nsc_json_root(&sum), *ranks = nsc_json_get(root, "ranks");
    uint64_t pid = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        pid = jnum(rk, "nranks") == 8 && jnum(rk, "rank") == 5 ? jnum(rk, "pid") : pid;
    unsigned most_ended = 0, dp_held = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        unsigned ended = 0, allreduce = 0;
        bool held = false;
        for (const nsc_json *c = nsc_json_first(cs); c && jnum(rk, "pid") == pid; c = nsc_json_next(cs, c)) {
            bool ar = strcmp(jstr(c, "func"), "AllReduce") == 0;
            allreduce += ar;
            ended += ar && jnum(c, "end_ns") != 0;
            held |= ar && jnum(c, "seq") == 1 && jnum(c, "end_ns") == 0;
        }
        most_ended = ended > most_ended ? ended : most_ended;
        dp_held += held && allreduce <= 3; /* the data-parallel entry: one AllReduce a step */
    }
    cr_assert_eq(most_ended, 24, "rank 5's tensor-parallel AllReduces that ended: %u", most_ended);
    cr_assert_eq(dp_held, 1, "rank 5's data-parallel AllReduce 1 never ends");
    const nsc_json *fault = nsc_json_first(nsc_json_get(root, "faults"));
    cr_assert_str_eq(jstr(fault, "comm"), "dp");
    nsc_json_free(&sum);
}

/* One op of a rank's stream, from its summary entry on any communicator. */
typedef struct stream_op {
    uint64_t ready, end, step;
} stream_op;

static int by_ready(const void *a, const void *b)
{
    const stream_op *x = a, *y = b;
    return x->ready < y->ready ? -1 : x->ready > y->ready;
}

/* Every op of process pid's stream (its tp, pp and dp entries), by start. */
static size_t stream_of(const nsc_json *ranks, uint64_t pid, stream_op *ops, size_t cap)
{
    size_t n = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        for (const nsc_json *c = nsc_json_first(cs); jnum(rk, "pid") == pid && c; c = nsc_json_next(cs, c)) {
            cr_assert_lt(n, cap);
            ops[n++] = (stream_op){jnum(c, "ready_ns"), jnum(c, "end_ns"), jnum(c, "step")};
        }
    }
    qsort(ops, n, sizeof *ops, by_ready);
    return n;
}

/* Runs a train job with args and hands each world rank's stream (every op
 * of its process, by start) to check. */
typedef void (*stream_check)(const stream_op *ops, size_t n, uint64_t pid, void *arg);

static void each_world_stream(const char *args, stream_check check, void *arg)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, NULL, args), 0);
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    for (const nsc_json *world = nsc_json_first(ranks); world; world = nsc_json_next(ranks, world)) {
        if (jnum(world, "nranks") != 8)
            continue;
        stream_op ops[256];
        size_t n = stream_of(ranks, jnum(world, "pid"), ops, 256);
        check(ops, n, jnum(world, "pid"), arg);
    }
    nsc_json_free(&sum);
}

/* The rank's communicators share its stream, whichever thread worked out
 * when each op ends (the host meets its pipeline peers on the wire itself
 * after a p2p group it published): an op starts only after every op the
 * rank ran before it ended, p2p groups (their ops start together) too. */
static void one_op_after_the_other(const stream_op *ops, size_t n, uint64_t pid, void *arg)
{
    unsigned *checked = arg;
    uint64_t free_at = 0, run_end = 0; /* the device is free after every earlier run */
    for (size_t i = 0; i < n; i++, (*checked)++) {
        cr_assert_gt(ops[i].end, 0, "every op ends");
        free_at = i && ops[i].ready != ops[i - 1].ready ? run_end : free_at;
        cr_assert_geq(ops[i].ready, free_at, "pid %llu op %zu starts %llu ns before the device is free",
                      (unsigned long long)pid, i, (unsigned long long)(free_at - ops[i].ready));
        run_end = ops[i].end > run_end ? ops[i].end : run_end;
    }
}

Test(emu_train, the_rank_s_stream_runs_one_op_after_the_other, .timeout = 60)
{
    unsigned checked = 0;
    each_world_stream(TRAIN_JOB " --iters 3 --count 1048576", one_op_after_the_other, &checked);
    cr_assert_gt(checked, 100);
}

/* A step's first op starts where the data-parallel op that ended the step
 * before left the stream: the host's sync at the step's start and the
 * switch of communicator after it wait for the same end. Before, the
 * second worked that end out again from the op's own end and slept until
 * then, so every step began at least that op's duration (16 ms here) less
 * 1 ms late. A loaded machine makes hosts late by themselves, a few ms at a
 * time: a quarter of the steps on time is enough. */
/* [0] step boundaries seen, [1] those where the step began on time. */
static void steps_on_time(const stream_op *ops, size_t n, uint64_t pid, void *arg)
{
    unsigned *count = arg;
    (void)pid;
    for (size_t i = 1; i < n; i++) {
        if (ops[i].step == ops[i - 1].step)
            continue;
        count[0]++;
        count[1] += ops[i].ready - ops[i - 1].end < 8000000;
    }
}

Test(emu_train, a_step_starts_when_the_step_before_ended, .timeout = 60)
{
    unsigned count[2] = {0, 0};
    each_world_stream(TRAIN_JOB " --iters 3 --count 4194304 --link-gbps 1", steps_on_time, count);
    cr_assert_eq(count[0], 16, "8 ranks, 2 step boundaries each: %u", count[0]);
    cr_assert_geq(4 * count[1], count[0], "%u of %u steps began less than 8 ms after the step before ended", count[1],
                  count[0]);
}

/* A loaded machine's pause is no part of the job: rank 1's tensor-parallel
 * proxy (its process's only communicator where it is rank 1), held 500 ms
 * at its first KernelCh in step 0, still makes every event at its modelled
 * time, and so do the ranks that wait for it (their hosts at the next
 * step's sync, their proxies on the wire): each collective is made at its
 * modelled end exactly, though real time was 400 ms or more past it
 * (behind_ns). Before due times (emu_clock_due) the held one and those
 * queued behind it were 200 ms late or more, and the job went on from real
 * time; with the trail fixed at the wait, not at the first read, and proxy
 * threads waking on real time, up to 23 ms under ASan. */
Test(emu_train, a_held_proxy_changes_no_stamp, .timeout = 60)
{
    const char *dir = tmpdir_new();
    uint64_t t0 = nsc_mono_ns();
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_TEST_RECORD_HOLD=1:1:500:KernelCh", TRAIN_JOB " --iters 2"), 0);
    cr_assert_geq(nsc_mono_ns() - t0, 500000000, "the proxy was held");
    nsc_json_doc sum = summary_read(dir);
    const nsc_json *ranks = nsc_json_get(nsc_json_root(&sum), "ranks");
    unsigned made = 0;
    uint64_t behind = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *cs = nsc_json_get(rk, "collectives");
        for (const nsc_json *c = nsc_json_first(cs); c; c = nsc_json_next(cs, c), made++) {
            cr_assert_eq(jnum(c, "complete_ns"), jnum(c, "end_ns"), "a %s of step %llu made %.3f ms after its modelled end",
                         jstr(c, "func"), (unsigned long long)jnum(c, "step"),
                         (double)(jnum(c, "complete_ns") - jnum(c, "end_ns")) / 1e6);
            behind = jnum(c, "behind_ns") > behind ? jnum(c, "behind_ns") : behind;
        }
    }
    cr_assert_gt(made, 0);
    cr_assert_geq(behind, 400000000, "made at most %.1f ms behind real time: the hold was not in the job", behind / 1e6);
    nsc_json_free(&sum);
}
