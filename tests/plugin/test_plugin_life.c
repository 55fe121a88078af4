/* test_plugin_life.c: the plugin's life cycle: no agent, agent arriving late,
 * an agent bound but slow to accept, many dlopen/dlclose cycles, fork in the
 * middle of a run and after dlclose, idle fork children. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "launches.h"
#include "mono.h"

/* The plugin loaded at v5 with one communicator ("x", id 1) initialised. */
static const ncclProfiler_v5_t *load_comm(void **dl, void **ctx)
{
    const ncclProfiler_v5_t *p = h_load(5, dl);
    cr_assert_not_null(p, "%s", dlerror());
    int mask;
    cr_assert_eq(p->init(ctx, 1, &mask, "x", 1, 1, 0, h_logger), ncclSuccess);
    return p;
}

/* Finalize ctx, unload the plugin and stop the receiver: what it got. */
static nsc_recv *finish(const ncclProfiler_v5_t *p, void *dl, void *ctx, nsc_recv_totals *t)
{
    p->finalize(ctx);
    dlclose(dl);
    return h_recv_stop(t);
}

static pid_t fork_calling_child(const ncclProfiler_v5_t *p, void *ctx)
{
    pid_t child = h_fork_calling_child(p, ctx, h_logger);
    cr_assert_geq(child, 0);
    return child;
}

static void expect_exit(pid_t child, int code)
{
    int status;
    cr_assert_eq(waitpid(child, &status, 0), child);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == code, "child %d: status 0x%x",
              (int)child, status);
}

static double now_s(void) { return (double)nsc_mono_ns() * 1e-9; }

/* No agent at all: nothing blocks; finalize gives up after the stall bound. */
Test(life, no_agent_never_blocks)
{
    h_env();
    setenv("NCCLSCOPE_BUFFER_MB", "1", 1);
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = load_comm(&dl, &ctx);
    double t0 = now_s();
    h_launches(p, ctx, 200000);
    p->finalize(ctx);
    dlclose(dl);
    cr_assert_lt(now_s() - t0, 10.0, "the job must not wait for an absent agent");
}

/* An agent bound to the endpoint but slow to accept (a listen backlog it has
 * not reached): here a bare unix socket that never accepts, replaced by the
 * receiver 0.6 s into the last finalize. The flush waits on for its budget
 * (NCCLSCOPE_FLUSH_MS), not only the 200 ms an absent agent gets, and
 * delivers everything. */
static void *agent_catches_up(void *raw)
{
    usleep(600000);
    close(*(int *)raw);
    h_recv_start();
    return NULL;
}

Test(life, slow_agent_gets_the_flush_budget)
{
    const char *ep = h_env();
    setenv("NCCLSCOPE_FLUSH_MS", "10000", 1);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", ep + strlen("ipc://"));
    int raw = socket(AF_UNIX, SOCK_STREAM, 0);
    cr_assert_geq(raw, 0);
    cr_assert_eq(bind(raw, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(raw, 1), 0);
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = load_comm(&dl, &ctx);
    h_launches(p, ctx, 1000);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, agent_catches_up, &raw), 0);
    p->finalize(ctx);
    pthread_join(t, NULL);
    dlclose(dl);
    nsc_recv_totals tot;
    nsc_recv *rc = h_recv_stop(&tot);
    cr_assert_eq(tot.events[NSC_T_KERNEL_LAUNCH], 1000);
    nsc_recv_free(rc);
}

/* The agent comes up late: what the plugin dropped meanwhile is counted
 * exactly, and received + dropped == emitted once it is back. The launch the
 * full backlog held back was read again at every drain meanwhile, in its
 * queue's cells: its times are still converted once (CLOCK_MONOTONIC ns). */
Test(life, late_agent_gets_exact_drop_counts)
{
    h_env();
    setenv("NCCLSCOPE_BUFFER_MB", "1", 1);
    setenv("NCCLSCOPE_THREADS", "1", 1);
    h_window w = {.from = nsc_mono_ns()};
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = load_comm(&dl, &ctx);
    enum { N = 200000 };
    h_launches(p, ctx, N);
    h_recv_start();
    /* the shipper reconnected: the last launches meet the draining backlog */
    cr_assert_eq(h_recv_wait_events(1), 0, "the plugin never reached the late agent");
    h_launches(p, ctx, 1000);
    nsc_recv_totals t;
    nsc_recv *rc = finish(p, dl, ctx, &t);
    w.to = nsc_mono_ns();
    uint64_t got = t.events[NSC_T_KERNEL_LAUNCH];
    uint64_t dropped = t.counters.dropped[NSC_T_KERNEL_LAUNCH];
    cr_assert_eq(t.counters.emitted[NSC_T_KERNEL_LAUNCH], N + 1000);
    cr_assert_gt(dropped, 0);
    cr_assert_gt(got, 1000);
    cr_assert_eq(got + dropped, N + 1000, "received %llu + dropped %llu",
                 (unsigned long long)got, (unsigned long long)dropped);
    nsc_recv_find(rc, NSC_T_KERNEL_LAUNCH, h_in_window, &w);
    cr_assert_eq(w.out, 0, "%llu launches out of the run's time", (unsigned long long)w.out);
    nsc_recv_free(rc);
}

/* NCCL loads the plugin per communicator and unloads it at refcount zero. */
Test(life, hundred_dlopen_dlclose_cycles)
{
    h_env();
    h_recv_start();
    enum { CYCLES = 100, COMMS = 2, EVENTS = 50 };
    for (int c = 0; c < CYCLES; c++) {
        void *dl, *ctx[COMMS];
        const ncclProfiler_v5_t *p = h_load(5, &dl);
        cr_assert_not_null(p, "%s", dlerror());
        int mask;
        for (int k = 0; k < COMMS; k++)
            cr_assert_eq(p->init(&ctx[k], 100 + k, &mask, "c", 1, 2, k, h_logger), ncclSuccess);
        for (int k = 0; k < COMMS; k++)
            h_launches(p, ctx[k], EVENTS);
        for (int k = 0; k < COMMS; k++)
            p->finalize(ctx[k]);
        cr_assert_eq(dlclose(dl), 0);
    }
    nsc_recv_totals t;
    nsc_recv *rc = h_recv_stop(&t);
    cr_assert_eq(t.streams, CYCLES);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], CYCLES * COMMS * EVENTS);
    cr_assert_eq(t.counters.emitted[NSC_T_KERNEL_LAUNCH], CYCLES * COMMS * EVENTS);
    cr_assert_eq(nsc_recv_nranks(rc), COMMS);
    nsc_recv_free(rc);
}

/* glibc drops a DSO's atfork handlers at dlclose: forking afterwards must not
 * call into the unmapped plugin. */
Test(life, fork_after_dlclose)
{
    h_env();
    setenv("NCCLSCOPE_FLUSH_MS", "0", 1);
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = load_comm(&dl, &ctx);
    h_launches(p, ctx, 10);
    p->finalize(ctx);
    cr_assert_eq(dlclose(dl), 0);
    pid_t child = fork();
    if (child == 0)
        _exit(7);
    expect_exit(child, 7);
}

/* A child that calls in allocates (its ZeroMQ context, threads). Under ASan
 * (clang 14's runtime takes no allocator lock around fork) that can wait
 * forever on a lock one of the parent's threads held at the fork, so these
 * tests fork while the parent's shipper has nothing to send: the receiver
 * has everything recorded so far, and the next heartbeat is a second away. */

/* The parent of such a test: a receiver, the plugin with one communicator and
 * 300 launches, all of them received. */
static const ncclProfiler_v5_t *parent_before_fork(void **dl, void **ctx)
{
    h_env();
    h_recv_start();
    const ncclProfiler_v5_t *p = load_comm(dl, ctx);
    h_launches(p, *ctx, 300);
    cr_assert_eq(h_recv_wait_events(300), 0);
    return p;
}

/* fork() in the middle of a run: the child starts a stream of its own (new
 * pid, its own counters, no inherited socket) and keeps profiling, also on the
 * communicator it inherited; the parent goes on undisturbed. */
Test(life, fork_mid_run)
{
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = parent_before_fork(&dl, &ctx);
    pid_t child = fork_calling_child(p, ctx);
    h_launches(p, ctx, 100);
    expect_exit(child, 0);
    nsc_recv_totals t;
    nsc_recv *rc = finish(p, dl, ctx, &t);
    cr_assert_eq(t.streams, 2);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], 300 + 100 + 20 + 30);
    /* counters restart in the child: the sum over both streams is exact */
    cr_assert_eq(t.counters.emitted[NSC_T_KERNEL_LAUNCH], 300 + 100 + 20 + 30);
    cr_assert_eq(nsc_recv_nranks(rc), 2);
    nsc_recv_free(rc);
}

/* Threads of the calling process (entries of /proc/self/task). */
static int thread_count(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* A DataLoader worker: forked from a profiled process, never calls NCCL. It
 * must start nothing (no shipper thread, no ZeroMQ thread, no heartbeat), so
 * the receiver sees the parent's stream only, however long the child lives. */
Test(life, idle_fork_children_stay_inert)
{
    h_env();
    setenv("NCCLSCOPE_HEARTBEAT_MS", "20", 1);
    h_recv_start();
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = load_comm(&dl, &ctx);
    h_launches(p, ctx, 100);
    enum { CHILDREN = 3 };
    pid_t kids[CHILDREN];
    for (int i = 0; i < CHILDREN; i++) {
        kids[i] = fork();
        cr_assert_geq(kids[i], 0);
        if (kids[i] == 0) {
            usleep(300000); /* fifteen heartbeat periods */
            _exit(thread_count() == 1 ? 0 : 10 + thread_count());
        }
    }
    h_launches(p, ctx, 50);
    for (int i = 0; i < CHILDREN; i++) {
        int status;
        cr_assert_eq(waitpid(kids[i], &status, 0), kids[i]);
        cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "child %d: exit %d (10 + its thread count)", i, WEXITSTATUS(status));
    }
    nsc_recv_totals t;
    nsc_recv *rc = finish(p, dl, ctx, &t);
    cr_assert_eq(t.streams, 1, "%llu streams: idle children were shipping",
                 (unsigned long long)t.streams);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], 150);
    nsc_recv_free(rc);
}

/* A child that does call in ships only its own: not the records the parent
 * made just before the fork (most likely still in its thread's queue, the
 * shipper napping), nor the parent's Coll still open at the fork when the
 * child finalizes the inherited communicator. */
Test(life, fork_child_ships_only_its_own)
{
    void *dl, *ctx;
    const ncclProfiler_v5_t *p = parent_before_fork(&dl, &ctx);
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileColl, .rank = 0};
    void *open_coll;
    p->startEvent(ctx, &open_coll, &d);
    cr_assert_not_null(open_coll);
    h_launches(p, ctx, 200);
    pid_t child = fork_calling_child(p, ctx);
    expect_exit(child, 0);
    h_launches(p, ctx, 100);
    p->stopEvent(open_coll);
    nsc_recv_totals t;
    nsc_recv *rc = finish(p, dl, ctx, &t);
    enum { PARENT = 300 + 200 + 100, CHILD = 20 + 30 };
    cr_assert_eq(t.streams, 2);
    cr_assert_eq(t.events[NSC_T_KERNEL_LAUNCH], PARENT + CHILD, "%llu KernelLaunch",
                 (unsigned long long)t.events[NSC_T_KERNEL_LAUNCH]);
    cr_assert_eq(t.counters.emitted[NSC_T_KERNEL_LAUNCH], PARENT + CHILD);
    cr_assert_eq(t.events[NSC_T_COLL], 1, "the parent's open Coll came %llu times",
                 (unsigned long long)t.events[NSC_T_COLL]);
    cr_assert_eq(t.open_events, 0);
    nsc_recv_free(rc);
}
