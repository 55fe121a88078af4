/* test_live_ledger.c: the live state figured from ledger records
 * (nsc_live_ledger, engine/live/live_ledger.c): a collective's duration and
 * busBW by figures.c's definitions once every rank's record came, the raw
 * Colls' figures replaced by them, and what it cannot figure counted. */
#include <criterion/criterion.h>
#include <string.h>

#include "livefeed.h"
#include "storeutil.h"

#define S 1000000000ull
#define MS 1000000ull
#define T0 (100 * S)
#define COMM 0xabcull

static nsc_str_def strs[2] = {{.id = 1, .text = "AllReduce"}, {.id = 2, .text = "ncclFloat32"}};

/* Process 100+rank of a 2-rank communicator: its context, and `ncoll`
 * AllReduce Colls from seq 0, each completed 0.5 ms after it (livefeed.h). */
static void section(nsc_live *l, int rank, uint64_t ncoll)
{
    nsc_test_feed f = {.agent = "agent1", .job = "job1", .host = "h1", .func = "AllReduce",
                       .pid = 100 + (uint32_t)rank, .rank = rank, .nranks = 2, .comm = COMM};
    cr_assert_eq(nsc_test_feed_colls(l, &f, ncoll ? 0 : 1, ncoll ? ncoll - 1 : 0, 0, T0), 0);
}

/* Rank `rank`'s completed record of AllReduce seq: 1e6 floats, enqueued at
 * seq x 10 ms, its kernel from 1 us after to `kernel_ns` later. */
static nsc_ledger_rec record(int rank, uint64_t seq, uint64_t kernel_ns)
{
    uint64_t t = seq * 10 * MS;
    return (nsc_ledger_rec){.comm_id = COMM, .seq = seq, .rank = rank, .func = 1, .datatype = 2, .count = 1000000,
                            .root = -1, .peer = -1, .nchannels = 1, .nchannels_done = 1, .enqueue_ns = t,
                            .gpu_start_ns = t + 1000, .gpu_end_ns = t + 1000 + kernel_ns,
                            .done_ns = t + 2000 + kernel_ns};
}

static int feed(nsc_live *l, int rank, const nsc_ledger_rec *recs, uint32_t n)
{
    nsc_proc p = nsc_test_proc("job1", "h1", 100 + (uint32_t)rank, rank);
    nsc_ledger_batch b = {.pid = p.pid, .nstrs = 2, .nrecs = n, .strs = strs, .recs = recs};
    return nsc_live_ledger(l, "agent1", &p, &b, 0, 0, T0);
}

static nsc_live *live(uint32_t open_colls)
{
    nsc_live_cfg cfg = {.open_colls = open_colls};
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert(l);
    nsc_live_tick(l, T0);
    return l;
}

static nsc_live_comm_stat stat_of(nsc_live *l)
{
    nsc_live_comm_stat *s, out;
    size_t n, omitted;
    cr_assert_eq(nsc_live_comm_stats(l, T0 + S, 10, &s, &n, &omitted), 0);
    cr_assert_eq(n, 1);
    out = s[0];
    free(s);
    return out;
}

static uint64_t dropped(nsc_live *l)
{
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + S, &c);
    return c.ledger_dropped;
}

/* The duration is the slower rank's kernel (2 ms); busBW 4e6 B x 2(n-1)/n
 * over it: 2 GB/s. The raw Colls' 0.5 ms (host) durations are not counted. */
Test(live_ledger, figured_once_every_rank_came)
{
    nsc_live *l = live(0);
    section(l, 0, 1);
    section(l, 1, 0);
    cr_assert_eq(stat_of(l).f[0].duration.count, 1, "the raw Coll's, before any ledger record");
    nsc_ledger_rec r0 = record(0, 0, 2 * MS), r1 = record(1, 0, MS);
    cr_assert_eq(feed(l, 0, &r0, 1), 0);
    cr_assert_eq(stat_of(l).f[0].duration.count, 0, "one rank's record figures nothing, the raw's replaced");
    cr_assert_eq(feed(l, 1, &r1, 1), 0);
    nsc_live_tick(l, T0 + S);
    nsc_live_comm_stat s = stat_of(l);
    cr_assert_eq(s.f[0].duration.count, 1);
    cr_assert_float_eq(s.f[0].duration.sum_s, 0.002, 1e-12);
    cr_assert_float_eq(s.bus_bw, 2e9, 1e-3);
    section(l, 0, 2);
    section(l, 1, 2);
    cr_assert_eq(stat_of(l).f[0].duration.count, 1, "a raw Coll of a ledger communicator figured");
    cr_assert_eq(dropped(l), 0);
    nsc_live_free(l);
}

/* Without ledger records the raw Colls are the figures: 0.5 ms each. */
Test(live_ledger, raw_colls_without_ledger)
{
    nsc_live *l = live(0);
    section(l, 0, 2);
    cr_assert_eq(stat_of(l).f[0].duration.count, 2);
    cr_assert_float_eq(stat_of(l).f[0].duration.sum_s, 0.001, 1e-12);
    nsc_live_free(l);
}

/* Two collectives open at most, in the slots their seqs map to: seq 3
 * takes seq 1's place, whose record is counted; so are a record again and
 * an unknown communicator's; an in-flight record completes nothing. */
Test(live_ledger, bounded_and_counted)
{
    nsc_live *l = live(2);
    section(l, 0, 0);
    section(l, 1, 0);
    nsc_ledger_rec r[3] = {record(0, 1, MS), record(0, 2, MS), record(0, 3, MS)};
    cr_assert_eq(feed(l, 0, r, 3), 0);
    cr_assert_eq(dropped(l), 1);
    cr_assert_eq(feed(l, 0, &r[2], 1), 0);
    cr_assert_eq(dropped(l), 2, "a rank's record again is counted");
    nsc_ledger_rec late = record(1, 1, MS);  /* its collective gave way: opened again, alone */
    cr_assert_eq(feed(l, 1, &late, 1), 0);
    cr_assert_eq(stat_of(l).f[0].duration.count, 0);
    cr_assert_eq(dropped(l), 3, "seq 3, open in its slot, gave way");
    nsc_ledger_rec fly = record(1, 2, MS), other = record(1, 4, MS);
    fly.flags = NSC_LEDGER_INFLIGHT;
    other.comm_id = 0xdef;
    cr_assert_eq(feed(l, 1, &fly, 1), 0);
    cr_assert_eq(stat_of(l).f[0].duration.count, 0, "an in-flight record completes nothing");
    cr_assert_eq(feed(l, 1, &other, 1), 0);
    cr_assert_eq(dropped(l), 4);
    nsc_ledger_rec done = record(1, 2, 2 * MS);
    cr_assert_eq(feed(l, 1, &done, 1), 0);
    cr_assert_eq(stat_of(l).f[0].duration.count, 1);
    cr_assert_float_eq(stat_of(l).f[0].duration.sum_s, 0.002, 1e-12);
    nsc_live_free(l);
}

/* Two ranks on two hosts: each rank's transport allows one NIC, 100 GB/s.
 * A 10 us kernel reads 400 GB/s; within a 100 us clock bound the live
 * state makes it 40 us, as a query does: 100 GB/s. */
Test(live_ledger, busbw_capped_by_the_transport)
{
    nsc_live *l = live(0);
    for (int rank = 0; rank < 2; rank++) {
        const char *host = rank ? "h2" : "h1";
        nsc_test_feed f = {.agent = "agent1", .job = "job1", .host = host, .func = "AllReduce",
                           .pid = 100 + (uint32_t)rank, .rank = rank, .nranks = 2, .comm = COMM};
        cr_assert_eq(nsc_test_feed_colls(l, &f, 1, 0, 0, T0), 0);  /* its context, no Coll */
        nsc_ledger_rec r = record(rank, 0, 10000);
        nsc_proc p = nsc_test_proc("job1", host, 100 + (uint32_t)rank, rank);
        nsc_ledger_batch b = {.pid = p.pid, .nstrs = 2, .nrecs = 1, .strs = strs, .recs = &r};
        cr_assert_eq(nsc_live_ledger(l, "agent1", &p, &b, 0, 100000, T0), 0);
    }
    nsc_live_tick(l, T0 + S);
    nsc_live_comm_stat s = stat_of(l);
    cr_assert_eq(s.f[0].duration.count, 1);
    cr_assert_float_eq(s.f[0].duration.sum_s, 40e-6, 1e-12);
    cr_assert_float_eq(s.bus_bw, 100e9, 1e-3);
    nsc_live_free(l);
}
