/* test_emu_time.c: the emulator's timeline against its ground truth: ranks
 * wait for each other, durations follow the cost model, and each fault has
 * its effect where it was injected (docs/emulator-model.md "Time"). The bounds
 * hold on a loaded machine: the modelled times are computed, and the only
 * real-time figure (skew from a host delay) gets generous bounds. */
#include <criterion/criterion.h>
#include <string.h>

#include "test_emu_util.h"

/* Collective i of every rank entry of the summary. */
typedef struct coll_view {
    uint64_t start[16], ready[16], end[16];
    int n;
} coll_view;

static coll_view coll_at(const nsc_json *ranks, uint32_t i)
{
    coll_view v = {0};
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *c = nsc_json_at(nsc_json_get(rk, "collectives"), i);
        cr_assert_not_null(c, "rank %llu has no collective %u", (unsigned long long)jnum(rk, "rank"), i);
        cr_assert_lt(v.n, 16);
        v.start[v.n] = jnum(c, "start_ns");
        v.ready[v.n] = jnum(c, "ready_ns");
        v.end[v.n++] = jnum(c, "end_ns");
    }
    return v;
}

static uint64_t spread(const uint64_t *x, int n)
{
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = x[i] < lo ? x[i] : lo;
        hi = x[i] > hi ? x[i] : hi;
    }
    return hi - lo;
}

static uint64_t most(const uint64_t *x, int n)
{
    uint64_t hi = 0;
    for (int i = 0; i < n; i++)
        hi = x[i] > hi ? x[i] : hi;
    return hi;
}

static nsc_json_doc run_env(const char *env, const char *args)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir, env, args), 0, "%s", args);
    return summary_read(dir);
}

static nsc_json_doc run(const char *args)
{
    return run_env(NULL, args);
}

static const nsc_json *ranks_of(nsc_json_doc *d)
{
    return nsc_json_get(nsc_json_root(d), "ranks");
}

/* A rank 4 ms late on the host every iteration: the others wait inside the
 * collective, so each collective's skew is the delay, not a sum. */
Test(emu_time, host_late_rank_gives_a_steady_skew, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario ring --nodes 2 --ranks-per-node 2 "
                         "--iters 30 --count 262144 --slow-rank 3 --slow-us 4000");
    const nsc_json *ranks = ranks_of(&s);
    /* A loaded machine may wake a waiting host a few ms late, which shrinks
     * or stretches one collective's skew; a skew that adds up (ranks that do
     * not wait for each other) leaves the range for good and passes 40 ms. */
    int steady = 0;
    uint64_t worst = 0;
    for (uint32_t i = 1; i < 30; i++) {
        coll_view v = coll_at(ranks, i);
        uint64_t skew = spread(v.start, v.n);
        steady += skew > 2000000 && skew < 12000000;
        worst = skew > worst ? skew : worst;
        for (int r = 0; r < v.n; r++)
            cr_assert_geq(v.end[r], most(v.ready, v.n), "no rank ends before the last started");
    }
    cr_assert_geq(steady, 26, "%d of 29 collectives have a skew of 2-12 ms for a 4 ms delay", steady);
    cr_assert_lt(worst, 40000000, "a skew of %llu ns for a 4 ms delay", (unsigned long long)worst);
    const nsc_json *f = nsc_json_at(nsc_json_get(nsc_json_root(&s), "faults"), 0);
    cr_assert_str_eq(jstr(f, "kind"), "host_late");
    cr_assert_eq(jnum(f, "rank"), 3);
    cr_assert_eq(jnum(f, "delay_ns"), 4000000);
    nsc_json_free(&s);
}

/* 2 ranks on 2 nodes, 4 MiB AllReduce: the NIC (25 GB/s) carries
 * 2(n-1)/n x 4 MiB per channel pair: about 168 us plus per-step latency. */
static uint64_t ring_duration(const char *extra)
{
    char args[512];
    snprintf(args, sizeof args, "--plugin empty --mask all --scenario ring --nodes 2 --ranks-per-node 1 "
                                "--iters 3 --count 1048576 %s", extra);
    nsc_json_doc s = run(args);
    coll_view v = coll_at(ranks_of(&s), 2);
    uint64_t d = most(v.end, v.n) - most(v.ready, v.n);
    nsc_json_free(&s);
    return d;
}

Test(emu_time, ring_duration_follows_the_cost_model, .timeout = 60)
{
    uint64_t d = ring_duration("");
    double busbw = 4194304.0 / (double)d; /* n = 2: busBW = algBW */
    cr_assert(busbw > 20 && busbw <= 25, "busBW %.2f GB/s on a 25 GB/s NIC", busbw);
    uint64_t slow = ring_duration("--slow-nic 1:4");
    cr_assert(slow > 3 * d && slow < 5 * d, "a NIC at 1/4: %llu vs %llu ns", (unsigned long long)slow,
              (unsigned long long)d);
    uint64_t one_way = ring_duration("--slow-link 0:1:4");
    cr_assert(one_way > 3 * d && one_way < 5 * d, "one direction at 1/4 bounds the ring");
    uint64_t scaled = ring_duration("--time-scale 0.5");
    cr_assert(scaled > d * 4 / 10 && scaled < d * 6 / 10, "time scale 0.5 halves it");
}

/* The plugin stamps a device event with its modelled time: the proxy makes
 * it ahead of real time with its thread's clock floor at that time (the
 * clock shim the launcher preloads), or behind it with its thread's clocks
 * trailing real time from that time on (its due time). So each
 * collective's last KernelChStop reads exactly its modelled end. (Sleeping
 * until each event's time instead, they read tens of us late or early,
 * never exactly; with a due time fixed at the wait, not at the first read
 * after it, 18 of 40 were exact under ASan on a loaded machine, 0 at
 * times.) */
Test(emu_time, device_events_carry_their_modelled_times, .timeout = 60)
{
    const char *dir = tmpdir_new();
    /* KernelCh (and the Coll parents) only: the record plugin writes a line per
     * call, and every event of a 4 MiB ring costs more than the model's 300 us. */
    cr_assert_eq(run_emu(dir, "NCCLSCOPE_TEST_RECORD_MASK=KernelCh",
                         "--mask all --scenario ring --nodes 2 --ranks-per-node 1 --iters 20 --count 1048576 "
                         "--channels 2"),
                 0);
    nsc_json_doc s = summary_read(dir);
    const nsc_json *ranks = ranks_of(&s);
    int exact = 0, colls = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        char path[512];
        snprintf(path, sizeof path, "%s/rec-%llu.jsonl", dir, (unsigned long long)jnum(rk, "pid"));
        jlines rec = {0};
        jlines_read_file(path, &rec);
        uint64_t last = 0;
        int nstops = 0;
        for (size_t i = 0; i < rec.n; i++) {
            const nsc_json *r = nsc_json_root(&rec.docs[i]);
            if (strcmp(jstr(r, "call"), "state") != 0 || strcmp(jstr(r, "name"), "KernelChStop") != 0)
                continue;
            uint64_t ts = jnum(r, "ts");
            last = ts > last ? ts : last;
            if (++nstops % 2) /* two channels per collective */
                continue;
            const nsc_json *c = nsc_json_at(nsc_json_get(rk, "collectives"), (uint32_t)(nstops / 2 - 1));
            cr_assert_not_null(c);
            uint64_t end = jnum(c, "end_ns");
            cr_assert_geq(last, end, "collective %d ends %lld ns before its modelled end", nstops / 2 - 1,
                          (long long)(end - last));
            exact += last == end;
            colls++;
            last = 0;
        }
        cr_assert_eq(nstops, 40, "every channel of every collective stopped");
        jlines_free(&rec);
    }
    cr_assert_eq(colls, 40);
    cr_assert_eq(exact, colls, "%d of %d collectives end exactly at their modelled end", exact, colls);
    nsc_json_free(&s);
}

/* The true time the summary gives a GPU timer value (0: none). */
static uint64_t timer_truth(const nsc_json *rk, uint64_t ptimer)
{
    const nsc_json *samples = nsc_json_get(rk, "kernel_samples");
    uint64_t x, t;
    for (const nsc_json *p = nsc_json_first(samples); p; p = nsc_json_next(samples, p))
        if (nsc_json_u64(nsc_json_at(p, 0), &x) == 0 && x == ptimer && nsc_json_u64(nsc_json_at(p, 1), &t) == 0)
            return t;
    return 0;
}

/* A KernelChStop is stamped 0.8 us after its pTimer's true time, exactly,
 * also when it is made late (behind_ns): the lag an agent's GPU line takes
 * within its 1 us floor. Clock reads slowed to 20 us on the ranks' threads
 * (named after the /proc/self/exe they run) put the proxies behind real
 * time. The stamp is held for the call; before, the plugin read the clock
 * again in it, and a late stop lagged by 0.8 us plus its thread's delay up
 * to that read. */
Test(emu_time, kernel_stops_lag_their_timers_by_the_model_also_late, .timeout = 60)
{
    const char *dir = tmpdir_new();
    cr_assert_eq(run_emu(dir,
                         "NCCLSCOPE_TEST_RECORD_MASK=KernelCh NCCLSCOPE_TEST_CLOCK_SLOW_NS=20000 "
                         "NCCLSCOPE_TEST_CLOCK_SLOW_THREAD=exe",
                         "--mask all --scenario ring --nodes 2 --ranks-per-node 1 --iters 10 --channels 2"),
                 0);
    nsc_json_doc s = summary_read(dir);
    const nsc_json *ranks = ranks_of(&s);
    int stops = 0, late = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        char path[512];
        snprintf(path, sizeof path, "%s/rec-%llu.jsonl", dir, (unsigned long long)jnum(rk, "pid"));
        jlines rec = {0};
        jlines_read_file(path, &rec);
        int own = 0;
        for (size_t i = 0; i < rec.n; i++) {
            const nsc_json *r = nsc_json_root(&rec.docs[i]);
            if (strcmp(jstr(r, "call"), "state") != 0 || strcmp(jstr(r, "name"), "KernelChStop") != 0)
                continue;
            uint64_t ts = jnum(r, "ts"), truth = timer_truth(rk, jnum(r, "pTimer"));
            cr_assert_neq(truth, 0, "pTimer %llu is not in the summary", (unsigned long long)jnum(r, "pTimer"));
            cr_assert_eq(ts - truth, 800, "stop %d stamped %lld ns after its pTimer's true time", stops,
                         (long long)(ts - truth));
            const nsc_json *c = nsc_json_at(nsc_json_get(rk, "collectives"), (uint32_t)(own++ / 2));
            cr_assert_not_null(c);
            late += jnum(c, "behind_ns") > 0;
            stops++;
        }
        jlines_free(&rec);
    }
    cr_assert_eq(stops, 40, "two channels' stops per collective");
    cr_assert_gt(late, 0, "no stop of %d was made behind real time", stops);
    nsc_json_free(&s);
}

/* A proxy thread held back 300 ms (a loaded machine) at rank 1's 20th
 * ProxyStep, in collective 1 (16 a collective), delays the job as NCCL's would: its host waits for it, so the next
 * collectives start from real time and their events carry their modelled
 * times again (each one's end within 100 ms of the model's). Before, the
 * hosts ran on by the model and the held proxy made the queued collectives
 * back to back after it, each stamped 200 ms or more after its end. */
Test(emu_time, held_proxy_delays_the_job, .timeout = 60)
{
    nsc_json_doc s = run_env("NCCLSCOPE_TEST_RECORD_HOLD=1:20:300",
                             "--scenario ring --nodes 2 --ranks-per-node 1 --iters 12 --channels 2 "
                             "--count 4194304 --chunk-size 2097152");
    const nsc_json *ranks = ranks_of(&s);
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        for (uint32_t i = 4; i < 12; i++) {
            const nsc_json *c = nsc_json_at(nsc_json_get(rk, "collectives"), i);
            cr_assert_not_null(c);
            uint64_t late = jnum(c, "complete_ns") - jnum(c, "end_ns");
            cr_assert_lt(late, 100000000, "rank %llu's collective %u made %.1f ms after its modelled end",
                         (unsigned long long)jnum(rk, "rank"), i, (double)late / 1e6);
        }
    nsc_json_free(&s);
}

/* A slow GPU starts its kernels late, with its host on time: the others'
 * collectives end when it arrives. */
Test(emu_time, slow_gpu_starts_late_and_delays_the_others, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario ring --nodes 2 --ranks-per-node 1 --iters 5 "
                         "--slow-gpu 1:20000");
    const nsc_json *ranks = ranks_of(&s);
    for (uint32_t i = 0; i < 5; i++) {
        coll_view v = coll_at(ranks, i);
        cr_assert_geq(v.ready[1], v.start[1] + 3000000, "rank 1's kernel starts 3 ms after its enqueue");
        cr_assert_lt(v.ready[0], v.start[0] + 3000000, "rank 0's does not");
        cr_assert_geq(v.end[0], v.ready[1], "rank 0 ends after rank 1 started");
    }
    nsc_json_free(&s);
}

/* A stall at collective 2, channel 1: that collective and every later one
 * never end, on every rank; the ones before do. */
Test(emu_time, stall_hangs_from_where_it_was_injected, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario ring --nodes 2 --ranks-per-node 2 --iters 4 "
                         "--stall 1:2:1:0");
    const nsc_json *ranks = ranks_of(&s);
    for (uint32_t i = 0; i < 4; i++) {
        coll_view v = coll_at(ranks, i);
        for (int r = 0; r < v.n; r++)
            cr_assert_eq(v.end[r] != 0, i < 2, "collective %u rank %d", i, r);
    }
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        cr_assert_gt(jnum(rk, "open_events"), 0, "the stalled channel stays open");
    nsc_json_free(&s);
}

/* A rank that calls another count at collective 1: no rank completes it. */
Test(emu_time, mismatch_never_completes, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --ranks-per-node 3 --iters 3 --mismatch 2:1:count");
    const nsc_json *ranks = ranks_of(&s);
    coll_view ok = coll_at(ranks, 0), bad = coll_at(ranks, 1);
    for (int r = 0; r < bad.n; r++) {
        cr_assert_neq(ok.end[r], 0);
        cr_assert_eq(bad.end[r], 0, "rank %d completed a mismatched collective", r);
    }
    const nsc_json *f = nsc_json_at(nsc_json_get(nsc_json_root(&s), "faults"), 0);
    cr_assert_str_eq(jstr(f, "kind"), "mismatch");
    cr_assert_str_eq(jstr(f, "what"), "count");
    nsc_json_free(&s);
}

/* A hung rank never calls collective 2: the others start it and never end. */
Test(emu_time, hang_leaves_the_others_waiting_in_the_collective, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario hang --ranks-per-node 3 --iters 4 "
                         "--hang-after 2 --hang-ms 50");
    const nsc_json *ranks = ranks_of(&s);
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *c = nsc_json_get(rk, "collectives");
        bool hung = jnum(rk, "rank") == 2;
        cr_assert_eq(c->count, hung ? 2 : 3);
        cr_assert_neq(jnum(nsc_json_at(c, 1), "end_ns"), 0);
        if (!hung) {
            cr_assert_neq(jnum(nsc_json_at(c, 2), "ready_ns"), 0, "it started");
            cr_assert_eq(jnum(nsc_json_at(c, 2), "end_ns"), 0, "and never ended");
        }
    }
    nsc_json_free(&s);
}

/* A send and its receive meet on the wire: with rank 0's GPU 20 ms late,
 * rank 1's receive from it ends one transfer after rank 0's send started
 * (not one transfer after its own start), and rank 1's send waits for rank
 * 0's receive to be posted. 256 KiB over the 25 GB/s NIC: 4 us + 10.5 us. */
Test(emu_time, recv_completes_after_the_matching_send, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario p2p --nodes 2 --ranks-per-node 1 --iters 4 "
                         "--slow-gpu 0:20000");
    const nsc_json *ranks = ranks_of(&s);
    const nsc_json *c[2] = {0};
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk))
        c[jnum(rk, "rank")] = nsc_json_get(rk, "collectives");
    const uint64_t transfer = 14485;
    for (uint32_t i = 0; i < 4; i++) {
        const nsc_json *send0 = nsc_json_at(c[0], 2 * i), *recv0 = nsc_json_at(c[0], 2 * i + 1);
        const nsc_json *send1 = nsc_json_at(c[1], 2 * i), *recv1 = nsc_json_at(c[1], 2 * i + 1);
        cr_assert_str_eq(jstr(send0, "func"), "Send");
        cr_assert_str_eq(jstr(recv1, "func"), "Recv");
        uint64_t late = jnum(send0, "ready_ns");
        cr_assert_geq(late, jnum(send1, "ready_ns") + 10000000, "iteration %u: rank 0's GPU is late", i);
        cr_assert_geq(jnum(recv1, "end_ns"), late + transfer, "iteration %u: the receive ends after the send", i);
        cr_assert_lt(jnum(recv1, "end_ns"), late + 2 * transfer, "iteration %u: one transfer after it", i);
        cr_assert_geq(jnum(send1, "end_ns"), jnum(recv0, "ready_ns") + transfer, "the send waits for the receiver");
    }
    nsc_json_free(&s);
}

/* ncclAlltoAll as NCCL reports it: per iteration each of the 4 ranks makes a
 * Send to and a Recv from every rank (itself included), P2pApi and P2p
 * events; with rank 1's GPU 20 ms late, every other rank's receive from it
 * ends after rank 1 started (it did not before the wire matched pairs). */
Test(emu_time, alltoall_is_grouped_pairs_that_wait_for_the_late_rank, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario alltoall --nodes 2 --ranks-per-node 2 --iters 3 "
                         "--slow-gpu 1:20000");
    const nsc_json *ranks = ranks_of(&s);
    const nsc_json *c[4] = {0};
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk)) {
        const nsc_json *calls = nsc_json_get(rk, "calls");
        cr_assert_eq(summary_count(calls, "start", "P2p"), 3 * 8);
        cr_assert_eq(summary_count(calls, "start", "P2pApi"), 3 * 8);
        cr_assert_eq(summary_count(calls, "start", "Coll"), 0);
        cr_assert_eq(jnum(rk, "open_events"), 0);
        c[jnum(rk, "rank")] = nsc_json_get(rk, "collectives");
    }
    for (uint32_t it = 0; it < 3; it++) {
        uint64_t late = jnum(nsc_json_at(c[1], 8 * it), "ready_ns");
        for (int q = 0; q < 4; q++) {
            const nsc_json *send = nsc_json_at(c[q], 8 * it + 2), *recv = nsc_json_at(c[q], 8 * it + 3);
            cr_assert_str_eq(jstr(send, "func"), "Send");
            cr_assert_str_eq(jstr(recv, "func"), "Recv");
            if (q != 1) {
                cr_assert_gt(jnum(recv, "end_ns"), late, "iteration %u: rank %d's receive from rank 1", it, q);
                cr_assert_lt(jnum(recv, "ready_ns") + 10000000, late, "rank %d's GPU is on time", q);
            }
        }
    }
    nsc_json_free(&s);
}

/* A 24-rank AlltoAll (48 p2p ops a group, on 2 nodes: 24 network legs,
 * their ProxySteps 72 a group) with rank 5's proxy thread held 2 s (a
 * loaded machine) at a ProxyStep of iteration 2: the other hosts publish
 * their next two groups meanwhile, and the proxy still finds their entries
 * of its group on the wire when it goes on. Before, the wire kept two
 * groups: the proxy waited 120 s for entries overwritten (32-rank AlltoAlls
 * hung about one run in three). */
Test(emu_time, alltoall_proxy_held_two_groups_back_finds_its_peers, .timeout = 60)
{
    nsc_json_doc s = run_env("NCCLSCOPE_TEST_RECORD_HOLD=5:150:2000",
                             "--api 3 --scenario alltoall --nodes 2 --ranks-per-node 12 --channels 1 --iters 5");
    const nsc_json *ranks = ranks_of(&s);
    int n = 0;
    for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk), n++) {
        const nsc_json *c = nsc_json_get(rk, "collectives");
        for (uint32_t i = 0; i < 5 * 48; i++)
            cr_assert_gt(jnum(nsc_json_at(c, i), "end_ns"), 0, "rank %llu's op %u never ended",
                         (unsigned long long)jnum(rk, "rank"), i);
    }
    cr_assert_eq(n, 24);
    nsc_json_free(&s);
}

/* A tree along the tree: 4 nodes (0 the root, 1 and 2 its children, 3 a
 * child of 1), 4 MiB in 2 channels of 17 chunks of 123 KiB, 9.9 us each on
 * the 25 GB/s NIC (two channels share it) plus 4 us per hop. From the last
 * start, the last rank to end needs at least its 17 chunks (168 us) and at
 * most those and two hops up and two down (224 us). A leaf 20 ms late holds
 * every rank: the root broadcasts nothing before it has the leaf's part. */
Test(emu_time, tree_reduces_up_and_broadcasts_down, .timeout = 60)
{
    nsc_json_doc s = run("--plugin empty --mask all --scenario tree --nodes 4 --ranks-per-node 1 --iters 3 "
                         "--count 1048576");
    coll_view v = coll_at(ranks_of(&s), 2);
    uint64_t d = most(v.end, v.n) - most(v.ready, v.n);
    cr_assert(d >= 168000 && d <= 230000, "tree AllReduce %llu ns", (unsigned long long)d);
    nsc_json_free(&s);
    s = run("--plugin empty --mask all --scenario tree --nodes 4 --ranks-per-node 1 --iters 3 --count 1048576 "
            "--slow-gpu 3:20000");
    for (uint32_t i = 0; i < 3; i++) {
        v = coll_at(ranks_of(&s), i);
        cr_assert_lt(v.ready[0] + 10000000, v.ready[3], "collective %u: the leaf is late", i);
        for (int r = 0; r < 3; r++)
            cr_assert_gt(v.end[r], v.ready[3], "collective %u: rank %d waits for the leaf", i, r);
    }
    nsc_json_free(&s);
}
