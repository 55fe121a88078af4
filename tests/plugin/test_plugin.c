/* test_plugin.c: the plugin driven directly (dlopen, ncclProfiler_vN calls),
 * against the in-process receiver: counts, parent links, completion, strings,
 * per-version translation, stale handles, PXN, drops with no agent. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "mono.h"

#define COMM_ID 0xc0ffee0012345678ull

typedef struct v5_run {
    const ncclProfiler_v5_t *p;
    void *ctx;
    void *dl;
} v5_run;

static void *start5(v5_run *r, uint64_t type, void *parent, ncclProfilerEventDescr_v5_t *d)
{
    d->type = type;
    d->parentObj = parent;
    d->rank = 1;
    void *h = NULL;
    cr_assert_eq(r->p->startEvent(r->ctx, &h, d), ncclSuccess);
    return h;
}

static void state5(v5_run *r, void *h, int state, uint64_t arg)
{
    ncclProfilerEventStateArgs_v5_t a = {.kernelCh = {arg}};
    cr_assert_eq(r->p->recordEventState(h, (ncclProfilerEventState_t)state, &a), ncclSuccess);
}

/* One AllReduce as NCCL 2.28 reports it: API events, the Coll (stopped when
 * enqueued), then its proxy ops, steps and a kernel channel, which the proxy
 * thread starts in one progress pass. Returns the Coll handle. */
static void *one_allreduce(v5_run *r, uint64_t seq)
{
    ncclProfilerEventDescr_v5_t d = {0};
    d.groupApi.groupDepth = 1;
    void *group = start5(r, ncclProfileGroupApi, NULL, &d);
    memset(&d, 0, sizeof d);
    d.collApi.func = "AllReduce";
    d.collApi.count = 1024;
    d.collApi.datatype = "float";
    void *api = start5(r, ncclProfileCollApi, group, &d);
    memset(&d, 0, sizeof d);
    d.coll.seqNumber = seq;
    d.coll.func = "AllReduce";
    d.coll.count = 1024;
    d.coll.datatype = "float";
    d.coll.algo = "Ring";
    d.coll.proto = "Simple";
    d.coll.nChannels = 2;
    d.coll.parentGroup = group;
    void *coll = start5(r, ncclProfileColl, api, &d);
    memset(&d, 0, sizeof d);
    void *launch = start5(r, ncclProfileKernelLaunch, group, &d);
    r->p->stopEvent(launch);
    r->p->stopEvent(api);
    state5(r, group, 24 /* GroupEndApiStart */, 0);
    r->p->stopEvent(group);
    r->p->stopEvent(coll); /* enqueued: children come later, together */
    void *ops[2], *steps[2];
    for (int ch = 0; ch < 2; ch++) {
        memset(&d, 0, sizeof d);
        d.proxyOp.pid = getpid();
        d.proxyOp.channelId = (uint8_t)ch;
        d.proxyOp.nSteps = 1;
        d.proxyOp.isSend = 1;
        ops[ch] = start5(r, ncclProfileProxyOp, coll, &d);
        memset(&d, 0, sizeof d);
        steps[ch] = start5(r, ncclProfileProxyStep, ops[ch], &d);
    }
    memset(&d, 0, sizeof d);
    d.kernelCh.channelId = 0;
    d.kernelCh.pTimer = 1000;
    void *kch = start5(r, ncclProfileKernelCh, coll, &d);
    for (int ch = 0; ch < 2; ch++) {
        ncclProfilerEventStateArgs_v5_t a = {.proxyStep = {4096}};
        r->p->recordEventState(steps[ch], (ncclProfilerEventState_t)9 /* SendWait */, &a);
        r->p->stopEvent(steps[ch]);
        r->p->stopEvent(ops[ch]);
    }
    state5(r, kch, 22 /* KernelChStop */, 2000);
    r->p->stopEvent(kch);
    return coll;
}

/* A receiver, and the plugin loaded at v5 as rank 1 of 2 of "world". */
static void open_v5(v5_run *r)
{
    h_env();
    h_recv_start();
    r->p = h_load(5, &r->dl);
    cr_assert_not_null(r->p, "%s", dlerror());
    int mask = 0;
    cr_assert_eq(r->p->init(&r->ctx, COMM_ID, &mask, "world", 1, 2, 1, h_logger), ncclSuccess);
    cr_assert_eq(mask, 0xffff);
}

/* Finalize, unload the plugin and stop the receiver: what it got. */
static nsc_recv *close_v5(v5_run *r, nsc_recv_totals *t)
{
    r->p->finalize(r->ctx);
    dlclose(r->dl);
    return h_recv_stop(t);
}

static int is_seq(const nsc_event *ev, void *arg)
{
    return ev->d.coll.seq == *(uint64_t *)arg;
}

Test(plugin, v5_counts_links_completion_strings)
{
    v5_run r;
    open_v5(&r);
    for (uint64_t s = 0; s < 3; s++)
        one_allreduce(&r, s);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);

    cr_assert_eq(t.bad_batches, 0);
    cr_assert_eq(t.events[NSC_T_GROUP_API], 3);
    cr_assert_eq(t.events[NSC_T_COLL_API], 3);
    cr_assert_eq(t.events[NSC_T_COLL], 3);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], 3);
    cr_assert_eq(t.events[NSC_T_PROXY_OP], 6);
    cr_assert_eq(t.events[NSC_T_PROXY_STEP], 6);
    cr_assert_eq(t.events[NSC_T_KERNEL_CH], 3);
    cr_assert_eq(t.states[NSC_S_PROXY_STEP_SEND_WAIT], 6);
    cr_assert_eq(t.states[NSC_S_KERNEL_CH_STOP], 3);
    cr_assert_eq(t.states[NSC_S_GROUP_END_API_START], 3);
    cr_assert_eq(t.completions, 3);
    cr_assert_eq(t.links, 3 * 8);
    cr_assert_eq(t.links_resolved, t.links);
    cr_assert_eq(t.states_unmatched, 0);
    /* the plugin's own accounting agrees, nothing dropped */
    cr_assert_eq(h_sum(t.counters.emitted, NSC_T_COUNT), 27);
    cr_assert_eq(h_sum(t.counters.dropped, NSC_T_COUNT), 0);
    cr_assert_eq(t.counters.states_emitted, 12);
    cr_assert_eq(nsc_recv_nranks(rc), 1);
    const nsc_recv_rank *rk = nsc_recv_rank_at(rc, 0);
    cr_assert_eq(rk->comm_id, COMM_ID);
    cr_assert_eq(rk->rank, 1);
    cr_assert_eq(rk->events[NSC_T_COLL], 3);

    uint64_t seq = 2;
    const nsc_event *coll = nsc_recv_find(rc, NSC_T_COLL, is_seq, &seq);
    cr_assert_not_null(coll);
    uint32_t pid = nsc_recv_event_pid(rc, coll);
    cr_assert_eq(pid, (uint32_t)getpid());
    cr_assert_str_eq(nsc_recv_str(rc, pid, coll->d.coll.func), "AllReduce");
    cr_assert_str_eq(nsc_recv_str(rc, pid, coll->d.coll.algo), "Ring");
    cr_assert_str_eq(nsc_recv_str(rc, pid, coll->d.coll.proto), "Simple");
    cr_assert_str_eq(nsc_recv_str(rc, pid, coll->d.coll.datatype), "float");
    cr_assert_eq(coll->d.coll.count, 1024);
    cr_assert_eq(coll->d.coll.nchannels, 2);
    cr_assert_neq(coll->d.coll.parent_group, 0);
    const nsc_completion *done = nsc_recv_completion(rc, coll->id);
    cr_assert_not_null(done);
    cr_assert_geq(done->ts_ns, coll->stop_ns);
    const nsc_event *kch = nsc_recv_find(rc, NSC_T_KERNEL_CH, NULL, NULL);
    cr_assert_eq(kch->d.kernel_ch.ptimer_start, 1000);
    cr_assert_eq(kch->d.kernel_ch.ptimer_stop, 2000);
    cr_assert_geq(kch->d.kernel_ch.ptimer_stop_ns, kch->start_ns);
    nsc_recv_free(rc);
}

/* Completion: the latest child stop, however children and the Coll's own
 * stop interleave; no children: no completion. */
Test(plugin, completion_inference)
{
    v5_run r;
    open_v5(&r);
    ncclProfilerEventDescr_v5_t d = {0};
    d.coll.seqNumber = 1;
    void *a = start5(&r, ncclProfileColl, NULL, &d);
    memset(&d, 0, sizeof d);
    d.proxyOp.pid = getpid();
    void *op = start5(&r, ncclProfileProxyOp, a, &d);
    r.p->stopEvent(op); /* child stops before the Coll is even enqueued */
    r.p->stopEvent(a);
    memset(&d, 0, sizeof d);
    d.coll.seqNumber = 2;
    void *b = start5(&r, ncclProfileColl, NULL, &d);
    r.p->stopEvent(b); /* never gets children */
    memset(&d, 0, sizeof d);
    d.proxyOp.pid = getpid();
    void *late = start5(&r, ncclProfileProxyOp, a, &d); /* after a's completion */
    r.p->stopEvent(late);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    uint64_t s1 = 1, s2 = 2;
    const nsc_event *ea = nsc_recv_find(rc, NSC_T_COLL, is_seq, &s1);
    const nsc_event *eb = nsc_recv_find(rc, NSC_T_COLL, is_seq, &s2);
    const nsc_event *eo = nsc_recv_find(rc, NSC_T_PROXY_OP, NULL, NULL);
    cr_assert(ea && eb && eo);
    const nsc_completion *ca = nsc_recv_completion(rc, ea->id);
    cr_assert_not_null(ca);
    /* The same count, but converted in its own record: a calibration pair
     * taken between the two (a's stop needed one) moves it within the bound. */
    uint64_t apart = ca->ts_ns > eo->stop_ns ? ca->ts_ns - eo->stop_ns : eo->stop_ns - ca->ts_ns;
    cr_assert_leq(apart, t.clock_err_ns, "completion %llu, child stop %llu, bound %llu",
                  (unsigned long long)ca->ts_ns, (unsigned long long)eo->stop_ns,
                  (unsigned long long)t.clock_err_ns);
    cr_assert_null(nsc_recv_completion(rc, eb->id));
    /* the late child re-completes a, later: the latest completion wins */
    cr_assert_eq(t.completions, 2);
    cr_assert_eq(t.events[NSC_T_PROXY_OP], 2);
    nsc_recv_free(rc);
}

/* A state travels in its event's batch (issue 30): here a batch goes out
 * between a ProxyCtrl's first state and its stop, carrying another event. */
Test(plugin, states_travel_with_their_event)
{
    v5_run r;
    open_v5(&r);
    ncclProfilerEventDescr_v5_t d = {0};
    void *ctrl = start5(&r, ncclProfileProxyCtrl, NULL, &d);
    state5(&r, ctrl, 14 /* ProxyCtrlActive */, 0);
    void *other = start5(&r, ncclProfileProxyCtrl, NULL, &d);
    r.p->stopEvent(other);
    cr_assert_eq(h_recv_wait_events(1), 0, "the other event never came");
    state5(&r, ctrl, 15 /* ProxyCtrlSleep */, 0);
    r.p->stopEvent(ctrl);
    nsc_recv_totals t;
    nsc_recv *rv = close_v5(&r, &t);
    cr_assert_eq(t.states[14] + t.states[15], 2);
    cr_assert_eq(t.states_apart, 0, "%llu states in a batch without their event",
                 (unsigned long long)t.states_apart);
    cr_assert_eq(t.states_unmatched, 0);
    nsc_recv_free(rv);
}

/* The hold is bounded: a state whose event stays open (a stuck step) goes
 * out alone after NCCLSCOPE_STATE_HOLD_MS, while the event is still open. */
Test(plugin, held_state_of_open_event_ships_after_hold)
{
    setenv("NCCLSCOPE_STATE_HOLD_MS", "20", 1);
    v5_run r;
    open_v5(&r);
    ncclProfilerEventDescr_v5_t d = {0};
    void *ctrl = start5(&r, ncclProfileProxyCtrl, NULL, &d);
    state5(&r, ctrl, 14 /* ProxyCtrlActive */, 0);
    cr_assert_eq(h_recv_wait_states(1), 0, "the state of the open event never came");
    r.p->stopEvent(ctrl);
    nsc_recv_totals t;
    nsc_recv *rv = close_v5(&r, &t);
    cr_assert_eq(t.states[14], 1);
    cr_assert_eq(t.states_apart, 1, "shipped alone");
    cr_assert_eq(t.counters.states_dropped, 0);
    nsc_recv_free(rv);
}

Test(plugin, stale_and_garbage_handles_are_counted_not_followed)
{
    v5_run r;
    open_v5(&r);
    ncclProfilerEventDescr_v5_t d = {0};
    void *h = start5(&r, ncclProfileKernelLaunch, NULL, &d);
    r.p->stopEvent(h);
    r.p->stopEvent(h);                                    /* stale */
    state5(&r, h, 9, 0);                                  /* stale */
    r.p->stopEvent((void *)(uintptr_t)0xdeadbeef00000000ull); /* out of range */
    r.p->stopEvent((void *)((uintptr_t)h ^ (1ull << 30))); /* wrong generation */
    r.p->stopEvent(NULL);                                 /* NCCL passes NULL on */
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], 1);
    cr_assert_eq(t.counters.bad_handles, 4);
    nsc_recv_free(rc);
}

/* PXN: a proxy thread starts ProxyOps for another process, with that process's
 * context and parent addresses. Here they point at a PROT_NONE page: any
 * dereference would fault. One ProxyOp also carries our own context and a
 * live handle of ours as parent but another pid: still foreign, not linked. */
Test(plugin, pxn_foreign_pointers_are_kept_never_followed)
{
    v5_run r;
    open_v5(&r);
    char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(page, MAP_FAILED);
    void *fctx = page + 128, *fparent = page + 256;
    pid_t origin = getpid() + 1;
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileProxyOp, .parentObj = fparent};
    d.proxyOp.pid = origin;
    d.proxyOp.channelId = 3;
    void *op = NULL, *step = NULL;
    cr_assert_eq(r.p->startEvent(fctx, &op, &d), ncclSuccess);
    memset(&d, 0, sizeof d);
    d.type = ncclProfileProxyStep;
    d.parentObj = op;
    d.proxyStep.step = 4;
    r.p->startEvent(fctx, &step, &d);
    ncclProfilerEventStateArgs_v5_t a = {.proxyStep = {64}};
    r.p->recordEventState(step, (ncclProfilerEventState_t)10, &a);
    r.p->stopEvent(step);
    r.p->stopEvent(op);

    memset(&d, 0, sizeof d);
    void *coll = start5(&r, ncclProfileColl, NULL, &d);
    r.p->stopEvent(coll);
    memset(&d, 0, sizeof d);
    d.proxyOp.pid = origin;
    void *op2 = start5(&r, ncclProfileProxyOp, coll, &d); /* our ctx, their pid */
    r.p->stopEvent(op2);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    cr_assert_eq(t.foreign[NSC_T_PROXY_OP], 2);
    cr_assert_eq(t.foreign[NSC_T_PROXY_STEP], 1);
    cr_assert_eq(t.states[NSC_S_PROXY_STEP_RECV_WAIT], 1);
    cr_assert_eq(t.states_unmatched, 0);
    cr_assert_eq(t.completions, 0, "a foreign child never completes a local Coll");
    int ch = 3;
    const nsc_event *eo = nsc_recv_find(rc, NSC_T_PROXY_OP, NULL, NULL);
    cr_assert_eq(eo->d.proxy_op.channel, ch);
    cr_assert(eo->flags & NSC_EVF_FOREIGN);
    cr_assert_eq(eo->origin_pid, (uint32_t)origin);
    cr_assert_eq(eo->origin_parent, (uint64_t)(uintptr_t)fparent);
    cr_assert_eq(eo->origin_ctx, (uint64_t)(uintptr_t)fctx);
    cr_assert_eq(eo->parent, 0);
    cr_assert_eq(eo->ctx, NSC_CTX_NONE);
    const nsc_event *es = nsc_recv_find(rc, NSC_T_PROXY_STEP, NULL, NULL);
    cr_assert(es->flags & NSC_EVF_FOREIGN);
    cr_assert_eq(es->parent, eo->id, "a step links to our own foreign ProxyOp");
    cr_assert_eq(es->origin_pid, (uint32_t)origin);
    munmap(page, 4096);
    nsc_recv_free(rc);
}

typedef struct worker_arg {
    v5_run *r;
    int n;
} worker_arg;

static void *worker(void *p)
{
    worker_arg *w = p;
    for (int i = 0; i < w->n; i++)
        one_allreduce(w->r, (uint64_t)i);
    return NULL;
}

Test(plugin, threads_record_concurrently_and_exactly)
{
    v5_run r;
    open_v5(&r);
    enum { THREADS = 4, ITERS = 2000 };
    pthread_t th[THREADS];
    worker_arg w = {&r, ITERS};
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, &w);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    /* A tight loop outruns any shipper: whatever was dropped is counted. */
    uint64_t n = THREADS * ITERS;
    const nsc_counters *c = &t.counters;
    cr_assert_eq(c->emitted[NSC_T_COLL], n);
    cr_assert_eq(c->emitted[NSC_T_PROXY_STEP], 2 * n);
    for (int ty = 0; ty < NSC_T_COUNT; ty++)
        cr_assert_eq(t.events[ty] + c->dropped[ty], c->emitted[ty], "type %d", ty);
    cr_assert_eq(c->states_emitted, 4 * n);
    cr_assert_eq(h_sum(t.states, NSC_S_COUNT) + c->states_dropped, c->states_emitted);
    cr_assert_leq(t.completions, n);
    if (h_sum(c->dropped, NSC_T_COUNT) == 0)
        cr_assert_eq(t.links_resolved, t.links);
    nsc_recv_free(rc);
}

/* Times arrive as CLOCK_MONOTONIC ns whatever the hot path read (the CPU's
 * counter where it is steady, converted by the shipper): every Coll between
 * the clock reads around the run, give or take a microsecond. */
Test(plugin, times_are_monotonic_ns)
{
    v5_run r;
    open_v5(&r);
    h_window w = {.from = nsc_mono_ns()};
    for (uint64_t i = 0; i < 20; i++)
        one_allreduce(&r, i);
    w.to = nsc_mono_ns();
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    nsc_recv_find(rc, NSC_T_COLL, h_in_window, &w);
    cr_assert_eq(w.in, 20);
    cr_assert_eq(w.out, 0);
    nsc_recv_free(rc);
}

/* The shipper thread's minor page faults so far (/proc: its stat's 10th field). */
static long shipper_faults(void)
{
    char path[300], comm[32], stat[512];
    DIR *dir = opendir("/proc/self/task");
    cr_assert_not_null(dir);
    long faults = -1;
    for (struct dirent *t; faults < 0 && (t = readdir(dir));) {
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
        FILE *f = fopen(path, "r");
        int ours = f && fgets(comm, sizeof comm, f) && strcmp(comm, "ncclscope-ship\n") == 0;
        if (f)
            fclose(f);
        if (!ours)
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", t->d_name);
        f = fopen(path, "r");
        cr_assert_not_null(f);
        cr_assert_not_null(fgets(stat, sizeof stat, f));
        fclose(f);
        sscanf(strrchr(stat, ')'), ") %*c %*d %*d %*d %*d %*d %*u %ld", &faults);
    }
    closedir(dir);
    cr_assert_geq(faults, 0, "no shipper thread");
    return faults;
}

/* Sent batches' buffers are used again at once: a stream of batches (here
 * heartbeats, each into a fresh batch) touches the same few pages, not a new
 * page of the 32 MiB backlog for each, which would cost the ranks a page
 * fault per 4 KiB shipped. Counted on the shipper thread alone (a sanitizer's
 * allocator hands the receiver fresh pages for its own reasons). */
Test(plugin, backlog_reuses_sent_buffers)
{
    setenv("NCCLSCOPE_HEARTBEAT_MS", "10", 1);
    v5_run r;
    open_v5(&r);
    one_allreduce(&r, 0);
    cr_assert_eq(h_recv_wait_batches(4), 0);
    long before = shipper_faults();
    cr_assert_eq(h_recv_wait_batches(4 + 48), 0);
    long faults = shipper_faults() - before;
    cr_assert_lt(faults, 24, "%ld page faults over 48 batches (a fresh page each: 48)", faults);
    nsc_recv_totals t;
    nsc_recv_free(close_v5(&r, &t));
}

/* A record never straddles two chunks: 511 states fill all but the last cell
 * of the thread's first chunk (512 cells), so the step's event (two cells)
 * starts the next chunk and the cell left is padding, which the shipper
 * skips; the records after it are read as they were written. */
Test(plugin, records_skip_a_chunks_padding)
{
    v5_run r;
    open_v5(&r);
    ncclProfilerEventDescr_v5_t d = {0};
    void *step = start5(&r, ncclProfileProxyStep, NULL, &d);
    for (int i = 0; i < 511; i++)
        state5(&r, step, 9 /* SendWait */, (uint64_t)i);
    r.p->stopEvent(step);
    memset(&d, 0, sizeof d);
    void *after = start5(&r, ncclProfileProxyStep, NULL, &d);
    state5(&r, after, 9, 7);
    r.p->stopEvent(after);
    nsc_recv_totals t;
    nsc_recv_free(close_v5(&r, &t));
    cr_assert_eq(t.events[NSC_T_PROXY_STEP], 2);
    cr_assert_eq(t.states[9], 512);
    cr_assert_eq(t.states_apart + t.states_unmatched + t.bad_batches, 0);
    cr_assert_eq(h_sum(t.counters.dropped, NSC_T_COUNT) + t.counters.states_dropped, 0);
}

/* The self-cost guard's collective time, event by event: each Coll from its
 * start to its stop or its completion (last child's stop), whichever is later. */
typedef struct coll_span {
    const nsc_recv *rc;
    uint64_t ns, n;
} coll_span;

static int add_span(const nsc_event *ev, void *arg)
{
    coll_span *c = arg;
    const nsc_completion *done = nsc_recv_completion(c->rc, ev->id);
    uint64_t end = done && done->ts_ns > ev->stop_ns ? done->ts_ns : ev->stop_ns;
    c->ns += end - ev->start_ns;
    c->n++;
    return 0;
}

/* The sampler: about one call in 64 timed, so there is some cost once 127
 * calls were made (the longest gap); the collective
 * time is the Colls' spans: exactly on CLOCK_MONOTONIC, and within a ns per
 * Coll and 10 ppm (the counter's slope between calibrations) where the
 * counter's counts are converted, the sum at once and the spans each; in a
 * run's first milliseconds the shipper takes a pair wherever its line does
 * not reach a count (clock.c), so a span's two ends, two records (the
 * Coll's start and its completion), may lie on two lines, each within the
 * stated bound of CLOCK_MONOTONIC. */
Test(plugin, guard_samples_its_cost_and_times_collectives)
{
    v5_run r;
    open_v5(&r);
    enum { N = 40 }; /* 9 starts, 9 stops and 3 states each */
    for (uint64_t i = 0; i < N; i++)
        one_allreduce(&r, i);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    const nsc_counters *c = &t.counters;
    cr_assert_gt(c->cost_ns, 0);
    coll_span span = {rc, 0, 0};
    nsc_recv_find(rc, NSC_T_COLL, add_span, &span);
    cr_assert_eq(span.n, N);
    uint64_t off = c->coll_ns > span.ns ? c->coll_ns - span.ns : span.ns - c->coll_ns;
    cr_assert_leq(off, N * (1 + 2 * NSC_CLOCK_BOUND_NS) + span.ns / 100000, "%llu vs %llu",
                  (unsigned long long)c->coll_ns,
                  (unsigned long long)span.ns);
    cr_assert_eq(c->shed_mask | c->shed_changes | c->shed_events, 0, "no budget, nothing shed");
    nsc_recv_free(rc);
}

/* A budget no plugin meets (0.0001 %): the guard sheds ProxyStep first (its
 * starts get no handle), counts every start it did not record, and says so
 * in the counters. ProxyOp and KernelCh, shed later, still complete their
 * Coll. Every start is an event received or one counted as shed. */
/* AllReduces at a budget of 0.0001 % until a start of type gets no handle:
 * their number; *starts counts every start made. */
static uint64_t allreduce_until_shed(v5_run *r, uint64_t type, uint64_t *starts)
{
    uint64_t n = 0;
    ncclProfilerEventDescr_v5_t d = {0};
    for (;; n++) {
        cr_assert_lt(n, 3000000, "the guard never shed type bit %llu", (unsigned long long)type);
        one_allreduce(r, n);
        *starts += 9;
        memset(&d, 0, sizeof d);
        void *h = start5(r, type, NULL, &d);
        ++*starts;
        if (!h)
            return n;
        r->p->stopEvent(h);
        if (n % 64 == 63)
            usleep(1000); /* the shipper's turn */
    }
}

static void open_over_budget(v5_run *r)
{
    setenv("NCCLSCOPE_BUDGET_PCT", "0.0001", 1);
    setenv("NCCLSCOPE_HEARTBEAT_MS", "10", 1);
    open_v5(r);
}

Test(plugin, guard_sheds_in_order_and_accounts_for_every_start)
{
    v5_run r;
    open_over_budget(&r);
    uint64_t starts = 0, n = allreduce_until_shed(&r, ncclProfileProxyStep, &starts);
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    const nsc_counters *c = &t.counters;
    cr_assert(c->shed_mask & 1u << NSC_T_PROXY_STEP);
    cr_assert_geq(c->shed_changes, 1);
    cr_assert_geq(c->shed_events, 1);
    cr_assert_eq(h_sum(c->dropped, NSC_T_COUNT), 0);
    cr_assert_eq(h_sum(t.events, NSC_T_COUNT) + c->shed_events, starts);
    cr_assert_eq(t.completions, n + 1, "every Coll completed, shed children or not");
    nsc_recv_free(rc);
}


/* At the end of the order, with everything shed, only the collectives stay:
 * Group (last in the order) gets no handle, nor does a ProxyOp, since the
 * kernel channels, kept in quiet slots, say when the Coll completed; every
 * Coll still completes, and every start is an event or counted as shed. */
Test(plugin, guard_at_full_depth_keeps_only_the_collectives)
{
    v5_run r;
    open_over_budget(&r);
    uint64_t starts = 0, n = allreduce_until_shed(&r, ncclProfileGroup, &starts);
    ncclProfilerEventDescr_v5_t d = {0};
    d.coll.func = "AllReduce";
    void *coll = start5(&r, ncclProfileColl, NULL, &d);
    cr_assert_not_null(coll, "Coll is never shed");
    memset(&d, 0, sizeof d);
    d.proxyOp.pid = getpid();
    cr_assert_null(start5(&r, ncclProfileProxyOp, coll, &d), "a shed ProxyOp keeps no slot");
    memset(&d, 0, sizeof d);
    void *kch = start5(&r, ncclProfileKernelCh, coll, &d);
    cr_assert_not_null(kch, "a shed KernelCh keeps a quiet slot");
    r.p->stopEvent(coll);
    uint64_t before = nsc_mono_ns();
    r.p->stopEvent(kch); /* the last child out reads the clock for it */
    uint64_t after = nsc_mono_ns();
    starts += 3;
    nsc_recv_totals t;
    nsc_recv *rc = close_v5(&r, &t);
    const nsc_counters *c = &t.counters;
    cr_assert(c->shed_mask & 1u << NSC_T_GROUP);
    cr_assert_eq(c->shed_mask & (1u << NSC_T_COLL | 1u << NSC_T_P2P), 0);
    cr_assert_eq(h_sum(t.events, NSC_T_COUNT) + c->shed_events, starts);
    cr_assert_eq(t.completions, n + 2, "every Coll completed, the last by its kernel channel");
    const nsc_completion *done = nsc_recv_completion(rc, (uint64_t)(uintptr_t)coll);
    cr_assert_not_null(done);
    /* 10 us: the counter's conversion, far less than a missing time */
    cr_assert(done->ts_ns + 10000 >= before && done->ts_ns <= after + 10000, "%llu not in [%llu, %llu]",
              (unsigned long long)done->ts_ns, (unsigned long long)before, (unsigned long long)after);
    nsc_recv_free(rc);
}
