/* test_live.c: the live state (engine/live) with exact expected results:
 * ranks seen, progress, in-flight, lag (RAS rule), hangs, bandwidth, rates,
 * deaths, the JSON documents, the figures of /metrics (histograms of
 * durations and arrivals, the communicator limit) and the rebuild from a store. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "live.h"
#include "livefeed.h"
#include "storeutil.h"

#define S 1000000000ull
#define T0 (100 * S)

/* One section of process 100+rank: the ctx and strings, `func` Coll events
 * of `dtype` (NCCL's names) for seqs [from, to], and completions for those
 * below `done_below`. Each Coll: 1e6 elements, start at seq * 10 ms,
 * complete 1 ms later. */
static void section_of(nsc_live *l, int rank, const char *func, const char *dtype, uint64_t from,
                       uint64_t to, uint64_t done_below, uint64_t now)
{
    nsc_event ev[16];
    nsc_completion cp[16];
    nsc_ctx_def ctx = nsc_test_ctx(0, 0xabc, rank, 4);
    nsc_str_def strs[2] = {{.id = 1}, {.id = 2}};
    snprintf(strs[0].text, sizeof strs[0].text, "%s", func);
    snprintf(strs[1].text, sizeof strs[1].text, "%s", dtype);
    nsc_batch b;
    memset(&b, 0, sizeof b);
    memset(ev, 0, sizeof ev);
    b.hdr.proc = nsc_test_proc("job1", "h1", 100 + (uint32_t)rank, rank);
    b.ctxs = &ctx;
    b.nctxs = 1;
    b.strs = strs;
    b.nstrs = 2;
    for (uint64_t s = from; s <= to; s++) {
        nsc_event *e = &ev[b.nevents++];
        e->id = s + 1;
        e->type = NSC_T_COLL;
        e->ctx = 0;
        e->rank = rank;
        e->start_ns = s * 10000000ull;
        e->stop_ns = e->start_ns + 1000;
        e->d.coll.seq = s;
        e->d.coll.func = 1;
        e->d.coll.datatype = 2;
        e->d.coll.count = 1000000;
        if (s < done_below)
            cp[b.ncompletions++] = (nsc_completion){s + 1, e->start_ns + 1000000};
    }
    b.events = ev;
    b.completions = cp;
    cr_assert_eq(nsc_live_section(l, "agent1", &b, now), 0);
}

/* AllReduce of ncclFloat32: 4e6 B in 1 ms, 4 GB/s. */
static void section(nsc_live *l, int rank, uint64_t from, uint64_t to, uint64_t done_below, uint64_t now)
{
    section_of(l, rank, "AllReduce", "ncclFloat32", from, to, done_below, now);
}

/* An empty live state (lag_ns 10 s), ticked at T0. */
static nsc_live *live_at_t0(void)
{
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert(l);
    nsc_live_tick(l, T0);
    return l;
}

static nsc_live *scenario(void)
{
    nsc_live *l = live_at_t0();
    for (int r = 0; r < 3; r++)
        section(l, r, 0, 5, 6, T0 + S);
    section(l, 3, 0, 3, 3, T0 + S);  /* rank 3: seq 3 enqueued, never completes */
    nsc_live_tick(l, T0 + 2 * S);
    cr_assert_eq(nsc_live_agent_seen(l, "agent1", "h1", T0 + 20 * S), 0);
    nsc_a2c_life died = {.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .pid = 102, .job = "job1"};
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &died, T0 + 15 * S), 0);
    return l;
}

Test(live, counts_lag_hang_death)
{
    nsc_live *l = scenario();
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + 5 * S, &c);  /* below the 10 s threshold: nothing yet */
    cr_assert_eq(c.events, 22);
    cr_assert_eq(c.comms, 1);
    cr_assert_eq(c.hangs, 0);
    cr_assert_eq(c.lagging, 0);
    nsc_live_counts_get(l, T0 + 20 * S, &c);
    cr_assert_eq(c.procs_alive, 3);
    cr_assert_eq(c.procs_dead, 1);
    cr_assert_eq(c.agents_alive, 1);
    cr_assert_eq(c.hangs, 1);
    cr_assert_eq(c.lagging, 1);
    nsc_live_counts_get(l, T0 + 60 * S, &c);  /* heartbeat timeout: all silent */
    cr_assert_eq(c.procs_alive, 0);
    cr_assert_eq(c.agents_alive, 0);
    cr_assert_eq(c.agents_dead, 1);
    nsc_live_free(l);
}

/* A process whose plugin shut down cleanly is finished, not dead, whether it
 * then exits or stays silent; loading the plugin again makes it alive. */
Test(live, finished_is_not_dead)
{
    nsc_live *l = scenario();
    nsc_a2c_life fin = {.event = NSC_A2C_FINISHED, .pid = 100, .job = "job1"};
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &fin, T0 + 16 * S), 0);
    fin.pid = 101;
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &fin, T0 + 16 * S), 0);
    nsc_a2c_life exited = {.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .pid = 100, .job = "job1"};
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &exited, T0 + 17 * S), 0);
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + 60 * S, &c);
    cr_assert_eq(c.procs_finished, 2);
    cr_assert_eq(c.procs_dead, 2, "102 died, 103 went silent");
    cr_assert_eq(c.procs_alive, 0);
    nsc_a2c_life again = {.event = NSC_A2C_STARTED, .pid = 101, .job = "job1"};
    cr_assert_eq(nsc_live_life(l, "agent1", "h1", &again, T0 + 18 * S), 0);
    nsc_live_counts_get(l, T0 + 19 * S, &c);
    cr_assert_eq(c.procs_finished, 1);
    cr_assert_eq(c.procs_alive, 2, "101 again, and 103");
    nsc_live_free(l);
}

static nsc_json_doc status_doc(const nsc_live *l, uint64_t now)
{
    nsc_json_doc doc;
    const char *why;
    cr_assert_eq(nsc_test_live_status_doc(l, now, &doc, &why), 0, "%s", why);
    return doc;
}

static uint64_t u64_at(const nsc_json *obj, const char *key)
{
    uint64_t v;
    cr_assert_eq(nsc_json_u64(nsc_json_get(obj, key), &v), 0, "%s", key);
    return v;
}

/* Process 100+rank's completions of seqs [from, to], alone in a section. */
static void completions(nsc_live *l, int rank, uint64_t from, uint64_t to, uint64_t now)
{
    nsc_completion cp[16];
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("job1", "h1", 100 + (uint32_t)rank, rank);
    for (uint64_t s = from; s <= to; s++)
        cp[b.ncompletions++] = (nsc_completion){s + 1, s * 10000000ull + 1000000};
    b.completions = cp;
    cr_assert_eq(nsc_live_section(l, "agent1", &b, now), 0);
}

static double bus_bw_of_comm(const nsc_live *l, uint64_t now)
{
    nsc_json_doc doc = status_doc(l, now);
    const nsc_json *job = nsc_json_at(nsc_json_get(nsc_json_root(&doc), "jobs"), 0);
    const nsc_json *comm = nsc_json_at(nsc_json_get(job, "comms"), 0);
    double bw;
    cr_assert_eq(nsc_json_double(nsc_json_get(comm, "bus_bw_gbps"), &bw), 0);
    nsc_json_free(&doc);
    return bw;
}

/* The bus bandwidth of `func` over 4 ranks, each completion one section
 * after its Coll (as a real agent's batching often does). */
static double bus_bw(const char *func, const char *dtype)
{
    nsc_live *l = live_at_t0();
    for (int r = 0; r < 4; r++) {
        section_of(l, r, func, dtype, 0, 2, 0, T0 + S);
        completions(l, r, 0, 2, T0 + S);
    }
    nsc_live_tick(l, T0 + 2 * S);
    double bw = bus_bw_of_comm(l, T0 + 2 * S);
    nsc_live_free(l);
    return bw;
}

/* NCCL's own spellings: the datatype sizes the bytes, AlltoAll (NCCL's case)
 * moves count x size to each of the n ranks like AllGather, and a datatype
 * NCCL could not name gives no bandwidth rather than a wrong one. */
Test(live, bus_bw_by_nccl_names)
{
    cr_assert_float_eq(bus_bw("AllReduce", "ncclFloat32"), 6.0, 1e-9);      /* 4 GB/s x 2*3/4 */
    cr_assert_float_eq(bus_bw("AllReduce", "ncclBfloat16"), 3.0, 1e-9);     /* 2 GB/s x 2*3/4 */
    cr_assert_float_eq(bus_bw("AllReduce", "ncclFloat64"), 12.0, 1e-9);
    cr_assert_float_eq(bus_bw("AllGather", "ncclFloat8e4m3"), 3.0, 1e-9);  /* 4e6 B: 4 GB/s x 3/4 */
    cr_assert_float_eq(bus_bw("AlltoAll", "ncclBfloat16"), 6.0, 1e-9);     /* 8e6 B: 8 GB/s x 3/4 */
    cr_assert_float_eq(bus_bw("Broadcast", "ncclInt64"), 8.0, 1e-9);
    cr_assert_float_eq(bus_bw("AllReduce", "Unknown"), 0.0, 1e-9);
}

Test(live, status_json)
{
    nsc_live *l = scenario();
    nsc_json_doc doc = status_doc(l, T0 + 20 * S);
    const nsc_json *root = nsc_json_root(&doc);
    cr_assert_eq(u64_at(root, "hangs"), 1);
    cr_assert_eq(u64_at(root, "hung_collectives"), 1);  /* seq 3: seq 5 the others completed */
    cr_assert_eq(u64_at(root, "events_total"), 22);
    const nsc_json *job = nsc_json_at(nsc_json_get(root, "jobs"), 0);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(job, "job")), "job1");
    const nsc_json *comm = nsc_json_at(nsc_json_get(job, "comms"), 0);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(comm, "comm")), "0xabc");
    cr_assert_eq(u64_at(comm, "nranks"), 4);
    cr_assert_eq(u64_at(comm, "ranks_seen"), 4);
    double rate, bw;
    cr_assert_eq(nsc_json_double(nsc_json_get(comm, "events_per_s"), &rate), 0);
    cr_assert_eq(nsc_json_double(nsc_json_get(comm, "bus_bw_gbps"), &bw), 0);
    cr_assert_float_eq(rate, 11.0, 1e-9);  /* 22 events over the 2 s window */
    cr_assert_float_eq(bw, 6.0, 1e-9);     /* 4e6 B in 1 ms = 4 GB/s, x 2*3/4 */
    const nsc_json *hang = nsc_json_at(nsc_json_get(comm, "hangs"), 0);
    cr_assert_eq(u64_at(hang, "rank"), 3);
    cr_assert_eq(u64_at(hang, "seq"), 3);
    cr_assert_eq(u64_at(hang, "for_ns"), 19 * S);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(hang, "func")), "AllReduce");
    const nsc_json *lag = nsc_json_at(nsc_json_get(comm, "lagging"), 0);
    cr_assert_eq(u64_at(lag, "rank"), 3);
    cr_assert_eq(u64_at(lag, "max_seq"), 5);
    cr_assert_null(nsc_json_at(nsc_json_get(comm, "lagging"), 1));
    const nsc_json *procs = nsc_json_get(root, "processes");
    int dead = 0;
    for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p))
        if (strcmp(nsc_json_str(nsc_json_get(p, "state")), "dead") == 0) {
            dead++;
            cr_assert_eq(u64_at(p, "pid"), 102);
            cr_assert_str_eq(nsc_json_str(nsc_json_get(p, "reason")), "exited");
        }
    cr_assert_eq(dead, 1);
    nsc_json_free(&doc);
    nsc_live_free(l);
}

/* Issue 30's "0 hung" Overview: rank 3 never reaches seq 5, ranks 0-2 wait
 * inside it. No rank is hung (none completed it), rank 3 lags, and seq 5 is
 * the one hung collective every view counts and lists (docs/api-figures.md "Hung"):
 * the status's total and list, the summary and the per-communicator figure. */
Test(live, hung_collective_lagging_ranks_never_reached)
{
    nsc_live *l = live_at_t0();
    for (int r = 0; r < 3; r++)
        section(l, r, 0, 5, 5, T0 + S);
    section(l, 3, 0, 4, 5, T0 + S);
    nsc_json_doc doc = status_doc(l, T0 + 20 * S);
    const nsc_json *root = nsc_json_root(&doc);
    cr_assert_eq(u64_at(root, "hangs"), 0);
    cr_assert_eq(u64_at(root, "hung_collectives"), 1);
    const nsc_json *comm = nsc_json_at(nsc_json_get(nsc_json_at(nsc_json_get(root, "jobs"), 0), "comms"), 0);
    const nsc_json *hc = nsc_json_get(comm, "hung_collectives");
    cr_assert_eq(hc->count, 1);
    const nsc_json *g = nsc_json_at(hc, 0);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(g, "func")), "AllReduce");
    cr_assert_eq(u64_at(g, "seq"), 5);
    cr_assert_eq(nsc_json_get(g, "inside")->count, 3);
    const nsc_json *behind = nsc_json_get(g, "behind");
    cr_assert_eq(behind->count, 1);
    cr_assert_eq(u64_at(nsc_json_at(behind, 0), "rank"), 3);
    cr_assert_eq(u64_at(nsc_json_at(behind, 0), "seq"), 4);
    nsc_json_free(&doc);
    nsc_live_counts cn;
    nsc_live_counts_get(l, T0 + 20 * S, &cn);
    cr_assert_eq(cn.hung_colls, 1);
    nsc_live_comm_stat *st;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 20 * S, 16, &st, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(st->hung_colls, 1);
    cr_assert_eq(st->hung, 0);
    free(st);
    nsc_live_free(l);
}

/* A counters-only batch from process 100+rank of job2: cumulative counters. */
static void counters(nsc_live *l, int rank, uint64_t coll_dropped, uint64_t step_dropped, uint64_t states_dropped)
{
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("job2", "h2", 100 + (uint32_t)rank, rank);
    b.has_counters = 1;
    b.counters.emitted[NSC_T_COLL] = 50;
    b.counters.emitted[NSC_T_PROXY_STEP] = 500;
    b.counters.dropped[NSC_T_COLL] = coll_dropped;
    b.counters.dropped[NSC_T_PROXY_STEP] = step_dropped;
    b.counters.states_emitted = 900;
    b.counters.states_dropped = states_dropped;
    cr_assert_eq(nsc_live_section(l, "agent2", &b, T0), 0);
}

/* The plugins' counters are cumulative: each batch replaces what its process
 * sent before (never added up); states dropped are reported apart from
 * events, and a job's event drops by type. */
Test(live, drops_are_the_latest_counters)
{
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert(l);
    counters(l, 0, 1, 10, 100);
    counters(l, 0, 2, 20, 200); /* the same process, later */
    counters(l, 1, 0, 7, 30);
    nsc_json_doc doc = status_doc(l, T0);
    const nsc_json *root = nsc_json_root(&doc);
    const nsc_json *job = nsc_json_at(nsc_json_get(root, "jobs"), 0);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(job, "job")), "job2");
    cr_assert_eq(u64_at(job, "events_dropped"), 29);
    cr_assert_eq(u64_at(job, "states_dropped"), 230);
    const nsc_json *by_type = nsc_json_get(job, "events_dropped_by_type");
    cr_assert_eq(u64_at(by_type, "Coll"), 2);
    cr_assert_eq(u64_at(by_type, "ProxyStep"), 27);
    cr_assert_null(nsc_json_get(by_type, "Group"), "a type with no drop is left out");
    const nsc_json *p0 = nsc_json_at(nsc_json_get(root, "processes"), 0);
    cr_assert_eq(u64_at(p0, "pid"), 100);
    cr_assert_eq(u64_at(p0, "events_emitted"), 550);
    cr_assert_eq(u64_at(p0, "events_dropped"), 22);
    cr_assert_eq(u64_at(p0, "states_emitted"), 900);
    cr_assert_eq(u64_at(p0, "states_dropped"), 200);
    nsc_json_free(&doc);
    nsc_live_free(l);
}

/* The self-cost guard (NCCLSCOPE_BUDGET_PCT) of process 100+rank of job3:
 * its cumulative cost and collective time, and the types it sheds. */
static void guard(nsc_live *l, int rank, uint64_t cost_ns, uint64_t coll_ns, uint64_t shed_mask, uint64_t now)
{
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("job3", "h3", 100 + (uint32_t)rank, rank);
    b.has_counters = 1;
    b.counters.cost_ns = cost_ns;
    b.counters.coll_ns = coll_ns;
    b.counters.shed_mask = shed_mask;
    b.counters.shed_changes = shed_mask ? 1 : 0;
    b.counters.shed_events = shed_mask ? 1000 : 0;
    cr_assert_eq(nsc_live_section(l, "agent3", &b, now), 0);
}

/* A job's profiler cost is its processes' cost over their collective time;
 * what any of them sheds is named, with when the collector saw it start. */
Test(live, profiler_cost_and_what_is_shed)
{
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert(l);
    guard(l, 0, 2 * S / 1000, S, 0, T0);
    guard(l, 1, 6 * S / 1000, S, 0, T0);
    nsc_json_doc doc = status_doc(l, T0);
    const nsc_json *job = nsc_json_at(nsc_json_get(nsc_json_root(&doc), "jobs"), 0);
    double pct;
    cr_assert_eq(nsc_json_double(nsc_json_get(job, "profiler_cost_pct"), &pct), 0);
    cr_assert_float_eq(pct, 0.4, 1e-9, "8 ms of 2 s: 0.4 %%");
    cr_assert_null(nsc_json_first(nsc_json_get(job, "shed")), "nothing shed");
    nsc_json_free(&doc);

    guard(l, 1, 8 * S / 1000, 2 * S, 1u << NSC_T_PROXY_STEP | 1u << NSC_T_NET_PLUGIN, T0 + S);
    guard(l, 1, 9 * S / 1000, 3 * S, 1u << NSC_T_PROXY_STEP | 1u << NSC_T_NET_PLUGIN, T0 + 2 * S);
    doc = status_doc(l, T0 + 2 * S);
    job = nsc_json_at(nsc_json_get(nsc_json_root(&doc), "jobs"), 0);
    const nsc_json *shed = nsc_json_get(job, "shed");
    cr_assert_str_eq(nsc_json_str(nsc_json_at(shed, 0)), "ProxyStep");
    cr_assert_str_eq(nsc_json_str(nsc_json_at(shed, 1)), "NetPlugin");
    cr_assert_null(nsc_json_at(shed, 2));
    cr_assert_eq(u64_at(job, "shed_events"), 1000);
    cr_assert_eq(u64_at(job, "shed_since_ns"), T0 + S, "the first batch that said so");
    const nsc_json *p1 = nsc_json_at(nsc_json_get(nsc_json_root(&doc), "processes"), 1);
    cr_assert_eq(u64_at(p1, "profiler_cost_ns"), 9 * S / 1000);
    cr_assert_eq(u64_at(p1, "collective_ns"), 3 * S);
    cr_assert_eq(u64_at(p1, "shed_changes"), 1);
    nsc_json_free(&doc);
    nsc_live_free(l);
}

static int put_prog(void *arg, const nsc_store_progress *p)
{
    return nsc_store_put_progress(arg, p);
}

Test(live, rebuilt_from_store)
{
    nsc_live *l = scenario();
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, T0), 0);
    nsc_proc procs[4];
    nsc_ctx_def ctxs[4];
    nsc_store_batch sb[4];
    for (int r = 0; r < 4; r++) {
        procs[r] = nsc_test_proc("job1", "h1", 100 + (uint32_t)r, r);
        ctxs[r] = nsc_test_ctx(0, 0xabc, r, 4);
        sb[r] = (nsc_store_batch){.proc = &procs[r], .ctxs = &ctxs[r], .nctxs = 1};
        cr_assert_eq(nsc_store_put(st, &sb[r]), 0);
    }
    cr_assert_eq(nsc_live_take_progress(l, put_prog, st), 0);
    nsc_store_life died = {.host = "h1", .job = "job1", .agent = "agent1", .pid = 102,
                           .event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .ref_ns = T0 + 15 * S};
    cr_assert_eq(nsc_store_put_life(st, &died), 0);
    cr_assert_eq(nsc_store_commit(st), 0);

    nsc_store_reader *rd;
    nsc_live *back;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};
    cr_assert_eq(nsc_live_from_store(rd, &cfg, T0 + 20 * S, &back), 0);
    nsc_store_read_end(rd);
    nsc_live_counts c;
    nsc_live_counts_get(back, T0 + 20 * S, &c);
    cr_assert_eq(c.comms, 1);
    cr_assert_eq(c.lagging, 1);   /* rank 3 at 3, the others at 5, since T0+1s */
    cr_assert_eq(c.hangs, 0);     /* in-flight state is not stored */
    cr_assert_eq(c.procs_alive, 3);
    cr_assert_eq(c.procs_dead, 1);
    nsc_json_doc doc = status_doc(back, T0 + 20 * S);
    const nsc_json *comm = nsc_json_at(nsc_json_get(nsc_json_at(nsc_json_get(nsc_json_root(&doc), "jobs"), 0), "comms"), 0);
    cr_assert_eq(u64_at(comm, "nranks"), 4);
    cr_assert_eq(u64_at(comm, "ranks_seen"), 4);
    nsc_json_free(&doc);
    nsc_live_free(back);
    nsc_live_free(l);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

static int count_life(void *arg, const nsc_store_life *l)
{
    (void)l;
    ++*(int *)arg;
    return 0;
}

/* One agent message can say that a process started, finished and exited: its
 * records share the message's receive time, and the store keeps all three, so
 * the state rebuilt from it is the live one (finished, not dead). */
Test(live, lifecycle_of_one_message_rebuilt_in_order)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, T0), 0);
    const uint8_t events[] = {NSC_A2C_STARTED, NSC_A2C_FINISHED, NSC_A2C_DIED};
    nsc_live *l = nsc_live_new(&(nsc_live_cfg){.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S});
    cr_assert_not_null(l);
    for (int i = 0; i < 3; i++) {
        nsc_store_life sl = {.host = "h1", .job = "job1", .agent = "agent1", .pid = 7, .event = events[i],
                             .reason = events[i] == NSC_A2C_DIED ? NSC_A2C_REASON_EXITED : NSC_A2C_REASON_NONE,
                             .ref_ns = T0 + S};
        cr_assert_eq(nsc_store_put_life(st, &sl), 0);
        nsc_a2c_life life = {.event = sl.event, .reason = sl.reason, .pid = 7, .job = "job1"};
        cr_assert_eq(nsc_live_life(l, "agent1", "h1", &life, T0 + S), 0);
    }
    cr_assert_eq(nsc_store_commit(st), 0);

    nsc_store_reader *rd;
    nsc_live *back;
    int stored = 0;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_lives(rd, count_life, &stored), 0);
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};
    cr_assert_eq(nsc_live_from_store(rd, &cfg, T0 + 2 * S, &back), 0);
    nsc_store_read_end(rd);
    cr_assert_eq(stored, 3);
    nsc_live_counts live, rebuilt;
    nsc_live_counts_get(l, T0 + 2 * S, &live);
    nsc_live_counts_get(back, T0 + 2 * S, &rebuilt);
    cr_assert_eq(live.procs_finished, 1);
    cr_assert_eq(rebuilt.procs_finished, 1, "rebuilt: %" PRIu64 " finished, %" PRIu64 " dead", rebuilt.procs_finished,
                 rebuilt.procs_dead);
    cr_assert_eq(rebuilt.procs_dead, live.procs_dead);
    nsc_live_free(back);
    nsc_live_free(l);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* /metrics figures of the scenario: every completion timed (1 ms each, the
 * le=0.001 bucket), every arrival counted (all in one section: no delay),
 * rank 3 behind since T0 + 1 s with seq 3 in flight. */
Test(live, comm_stats)
{
    nsc_live *l = scenario();
    nsc_live_comm_stat *s;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 5 * S, 16, &s, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(omitted, 0);
    cr_assert_str_eq(s->job, "job1");
    cr_assert_eq(s->id, 0xabc);
    cr_assert_eq(s->nranks, 4);
    cr_assert_eq(s->ranks_seen, 4);
    cr_assert_eq(s->events, 22);
    cr_assert_float_eq(s->bus_bw, 6e9, 1e-3);  /* 4e6 B in 1 ms, x 2*3/4 */
    cr_assert_eq(s->nf, 1);
    cr_assert_str_eq(s->f[0].name, "AllReduce");
    cr_assert_eq(s->f[0].collectives, 6);
    cr_assert_float_eq(nsc_live_hist_le[4], 1e-3, 0);
    for (int b = 0; b <= NSC_LIVE_HIST_BOUNDS; b++)
        cr_assert_eq(s->f[0].duration.buckets[b], b == 4 ? 21u : 0u, "bucket %d", b);
    cr_assert_eq(s->f[0].duration.count, 21);  /* ranks 0-2: 6 each, rank 3: 3 */
    cr_assert_float_eq(s->f[0].duration.sum_s, 0.021, 1e-12);
    cr_assert_eq(s->arrival.count, 22);  /* every rank's every seqNumber */
    cr_assert_eq(s->arrival.buckets[0], 22);
    cr_assert_float_eq(s->lag_s, 4.0, 1e-9);  /* seq 4 first seen at T0 + 1 s */
    cr_assert_eq(s->lag_rank, 3);
    cr_assert_eq(s->in_flight, 1);
    cr_assert_float_eq(s->in_flight_max_s, 4.0, 1e-9);
    cr_assert_eq(s->lagging, 0);
    cr_assert_eq(s->hung, 0);
    free(s);
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 20 * S, 16, &s, &n, &omitted), 0);
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + 20 * S, &c);  /* past the threshold: as status counts */
    cr_assert_eq(s->lagging, c.lagging);
    cr_assert_eq(s->hung, c.hangs);
    cr_assert_eq(s->lagging, 1);
    free(s);
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 5 * S, 0, &s, &n, &omitted), 0);
    cr_assert_eq(n, 0);
    cr_assert_null(s);
    cr_assert_eq(omitted, 1);
    nsc_live_free(l);
}

/* One AllReduce (seq) of `rank` of 2 in communicator `comm`, process 200 + rank,
 * completed 2 ms after it started. */
static void coll_in(nsc_live *l, uint64_t comm, int rank, uint64_t seq, uint64_t now)
{
    nsc_ctx_def ctx = nsc_test_ctx(0, comm, rank, 2);
    nsc_str_def strs[2] = {{.id = 1, .text = "AllReduce"}, {.id = 2, .text = "ncclFloat32"}};
    nsc_event ev = {.id = 1 + seq, .type = NSC_T_COLL, .rank = rank, .start_ns = seq * S};
    ev.d.coll.seq = seq;
    ev.d.coll.func = 1;
    ev.d.coll.datatype = 2;
    ev.d.coll.count = 1000;
    nsc_completion cp = {ev.id, ev.start_ns + 2000000};
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("job2", "h2", 200 + (uint32_t)rank, rank);
    b.ctxs = &ctx;
    b.nctxs = 1;
    b.strs = strs;
    b.nstrs = 2;
    b.events = &ev;
    b.nevents = 1;
    b.completions = &cp;
    b.ncompletions = 1;
    cr_assert_eq(nsc_live_section(l, "agent2", &b, now), 0);
}

/* Rank 1 reaches each collective 2 s after rank 0 (the le=3 bucket); the
 * communicator with the latest events comes first, and the limit leaves the
 * others out. */
Test(live, comm_stats_arrivals_and_limit)
{
    nsc_live *l = nsc_live_new(NULL);
    cr_assert(l);
    for (uint64_t q = 0; q < 3; q++) {
        coll_in(l, 0x1, 0, q, T0 + 10 * q * S);
        coll_in(l, 0x1, 1, q, T0 + (10 * q + 2) * S);
    }
    coll_in(l, 0x2, 0, 0, T0 + 100 * S);
    nsc_live_comm_stat *s;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 100 * S, 16, &s, &n, &omitted), 0);
    cr_assert_eq(n, 2);
    cr_assert_eq(s[0].id, 0x2, "the most recent first");
    cr_assert_eq(s[1].id, 0x1);
    const nsc_live_hist *a = &s[1].arrival;
    cr_assert_eq(a->count, 6);
    cr_assert_eq(a->buckets[0], 3, "rank 0 first each time");
    cr_assert_float_eq(nsc_live_hist_le[11], 3.0, 0);
    cr_assert_eq(a->buckets[11], 3, "rank 1, 2 s late");
    cr_assert_float_eq(a->sum_s, 6.0, 1e-9);
    cr_assert_eq(s[1].f[0].duration.buckets[5], 6, "2 ms each: le=0.003");
    cr_assert_eq(s[1].in_flight, 0);
    cr_assert_eq(s[1].lag_rank, -1);
    free(s);
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 100 * S, 1, &s, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(s[0].id, 0x2);
    cr_assert_eq(omitted, 1);
    free(s);
    nsc_live_free(l);
}

/* A rank that reaches a collective after it left the 256-seqNumber ring of
 * first arrivals: when the first rank got there is unknown, so its arrival
 * is not observed (rather than observed as on time). */
Test(live, arrival_beyond_the_ring_is_not_observed)
{
    nsc_live *l = nsc_live_new(NULL);
    cr_assert(l);
    for (uint64_t q = 0; q < 300; q++)
        coll_in(l, 0x1, 0, q, T0);
    coll_in(l, 0x1, 1, 0, T0 + 5 * S);   /* seq 0: 300 behind */
    coll_in(l, 0x1, 1, 299, T0 + 6 * S); /* seq 299: in the ring, 6 s late */
    nsc_live_comm_stat *s;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, T0 + 6 * S, 16, &s, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(s->arrival.count, 301, "rank 0's 300 and rank 1's seq 299");
    cr_assert_eq(s->arrival.buckets[12], 1, "6 s: the le=10 bucket");
    cr_assert_float_eq(s->arrival.sum_s, 6.0, 1e-9);
    free(s);
    nsc_live_free(l);
}
