/* test_live_snap.c: the live state's snapshot and merge (engine/live):
 * a snapshot read back gives the same status, in the reader's time base;
 * a snapshot keeps its rates until a tick; snapshots cut short, with
 * garbage or with bytes after their end are refused with a reason; two
 * collectors' halves of a job merge into what
 * one collector that saw it all reports; a rank known from a peer's old
 * snapshot is not lagging behind a fresher state's ranks; after an agent moved between
 * collectors the entry seen latest wins, in either merge order. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "livefeed.h"
#include "storeutil.h"

#define S 1000000000ull
#define T0 (100 * S)
#define WALL (1700000000ull * S)

static const nsc_live_cfg cfg = {.heartbeat_timeout_ns = 30 * S, .lag_ns = 10 * S};

/* Process 100+rank of agent `agent` sends its Colls seq [from, to] of a
 * 4-rank AllReduce communicator, all completed but the last when open_last. */
static void colls(nsc_live *l, const char *agent, int rank, uint64_t from, uint64_t to, int open_last, uint64_t now)
{
    nsc_test_feed f = {.agent = agent, .job = "jobS", .host = "hs", .func = "AllReduce",
                       .pid = 100 + (uint32_t)rank, .rank = rank, .nranks = 4, .comm = 0x5eed};
    cr_assert_eq(nsc_test_feed_colls(l, &f, from, to, open_last, now), 0);
}

static void died(nsc_live *l, const char *agent, uint32_t pid, uint64_t now)
{
    nsc_a2c_life life = {.event = NSC_A2C_DIED, .reason = NSC_A2C_REASON_EXITED, .pid = pid, .job = "jobS"};
    cr_assert_eq(nsc_live_life(l, agent, "hs", &life, now), 0);
}

static char *status_text(const nsc_live *l, uint64_t now)
{
    char *text = nsc_test_live_status(l, now, NULL);
    cr_assert(text);
    return text;
}

static void snapshot(const nsc_live *l, uint64_t now, uint64_t wall, uint8_t **snap, size_t *len)
{
    cr_assert_eq(nsc_live_snapshot(l, now, wall, snap, len), 0);
    cr_assert_gt(*len, 24);
}

/* Ranks 0-2 went to seq 9, rank 3 is stuck in seq 5: lagging and a hang. */
static nsc_live *job(void)
{
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert(l);
    nsc_live_tick(l, T0);
    for (int r = 0; r < 3; r++)
        colls(l, "agentS", r, 0, 9, 0, T0 + S);
    colls(l, "agentS", 3, 0, 5, 1, T0 + S);
    nsc_live_tick(l, T0 + 2 * S);
    died(l, "agentS", 102, T0 + 3 * S);
    return l;
}

/* Process 100's self-cost guard sheds ProxyStep. */
static void shedding(nsc_live *l)
{
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("jobS", "hs", 100, 0);
    b.has_counters = 1;
    b.counters.cost_ns = 7 * S / 1000;
    b.counters.coll_ns = S;
    b.counters.shed_mask = 1u << NSC_T_PROXY_STEP;
    b.counters.shed_changes = 1;
    b.counters.shed_events = 33;
    cr_assert_eq(nsc_live_section(l, "agentS", &b, T0 + 3 * S), 0);
}

Test(live_snap, read_back_gives_the_same_status)
{
    nsc_live *l = job();
    shedding(l);
    uint8_t *snap;
    size_t len;
    snapshot(l, T0 + 20 * S, WALL, &snap, &len);
    nsc_live *back;
    const char *why;
    /* Read 2 s later by the same clock: every time the same (judged at the
     * snapshot's moment, as its ranks are known as of then). */
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, T0 + 22 * S, WALL + 2 * S, &back, &why), 0, "%s", why);
    char *a = status_text(l, T0 + 20 * S), *b = status_text(back, T0 + 20 * S);
    cr_assert_str_eq(b, a);
    cr_assert(strstr(a, "\"hangs\":1,\"hung_collectives\":1,\"lagging\":1"), "%s", a);
    cr_assert(strstr(a, "\"profiler_cost_pct\":0.700,\"shed\":[\"ProxyStep\"],\"shed_events\":33,"), "%s", a);
    free(b);
    nsc_live_free(back);
    /* Read by a collector whose clock is 1000 s ahead: the same status at its now. */
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, T0 + 1022 * S, WALL + 2 * S, &back, &why), 0, "%s", why);
    nsc_live_counts ca, cb;
    nsc_live_counts_get(l, T0 + 20 * S, &ca);
    nsc_live_counts_get(back, T0 + 1020 * S, &cb);
    cr_assert_eq(memcmp(&ca, &cb, sizeof ca), 0);
    b = status_text(back, T0 + 1020 * S);
    cr_assert(strstr(b, "\"last_seen_ns\":1101000000000"), "last seen 1000 s later in the reader's base: %s", b);
    free(a);
    free(b);
    nsc_live_free(back);
    free(snap);
    nsc_live_free(l);
}

static char *summary_text(const nsc_live *l, uint64_t now)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(nsc_live_summary_json(l, now, f), 0);
    fclose(f);
    return text;
}

/* A snapshot keeps its writer's rates; a tick of the state read closes an
 * empty window (what the collector does to a snapshot it finds stale). */
Test(live_snap, rates_kept_and_cleared_by_a_tick)
{
    nsc_live *l = job(), *back;
    uint8_t *snap;
    size_t len;
    const char *why;
    snapshot(l, T0 + 4 * S, WALL, &snap, &len);
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, T0 + 4 * S, WALL, &back, &why), 0, "%s", why);
    char *a = summary_text(l, T0 + 4 * S), *b = summary_text(back, T0 + 4 * S);
    cr_assert(strstr(a, "\"events_per_s\":18.0,"), "36 events in the 2 s window: %s", a);
    cr_assert_str_eq(b, a);
    free(a), free(b), free(snap);
    nsc_live_tick(back, T0 + 5 * S);
    char *cleared = summary_text(back, T0 + 5 * S);
    cr_assert(strstr(cleared, "\"events_per_s\":0.0,"), "%s", cleared);
    free(cleared);
    nsc_live_free(back), nsc_live_free(l);
}

static void refused(const uint8_t *p, size_t len, const char *reason)
{
    nsc_live *out = (nsc_live *)1;
    const char *why = NULL;
    cr_assert_eq(nsc_live_from_snapshot(p, len, &cfg, T0, WALL, &out, &why), -1, "length %zu", len);
    cr_assert_null(out);
    cr_assert(why && why[0]);
    if (reason)
        cr_assert_str_eq(why, reason, "length %zu", len);
}

Test(live_snap, malformed_snapshots_are_refused)
{
    nsc_live *l = job();
    uint8_t *snap;
    size_t len;
    snapshot(l, T0 + 4 * S, WALL, &snap, &len);
    for (size_t n = 0; n < len; n++)
        refused(snap, n, NULL);
    uint8_t *more = malloc(len + 1);
    memcpy(more, snap, len);
    more[len] = 0;
    refused(more, len + 1, "bytes after its end");
    more[0] ^= 0xff;
    refused(more, len, "not a live snapshot");
    more[0] ^= 0xff;
    more[7] = 9;
    refused(more, len, "an unknown version");
    /* Garbage in every byte after the header: refused or decoded, never
     * past the input (the sanitizers' build checks). */
    unsigned seed = 1;
    for (int round = 0; round < 2000; round++) {
        memcpy(more, snap, len);
        for (int k = 0; k < 4; k++) {
            seed = seed * 1103515245u + 12345u;
            more[16 + (seed >> 8) % (len - 16)] = (uint8_t)(seed >> 3);
        }
        nsc_live *out = NULL;
        const char *why = NULL;
        if (nsc_live_from_snapshot(more, len, &cfg, T0, WALL, &out, &why) == 0) {
            char *t = status_text(out, T0 + 5 * S);
            free(t);
            nsc_live_free(out);
        } else {
            cr_assert(why && why[0]);
        }
    }
    free(more);
    free(snap);
    nsc_live_free(l);
}

/* One collector saw ranks 0-1, the other ranks 2-3: merged, the status of
 * one collector that saw all four. */
Test(live_snap, halves_merge_into_the_whole)
{
    nsc_live *whole = job();
    nsc_live *a = nsc_live_new(&cfg), *b = nsc_live_new(&cfg), *m = nsc_live_new(&cfg);
    cr_assert(a && b && m);
    nsc_live_tick(a, T0), nsc_live_tick(b, T0);
    for (int r = 0; r < 2; r++)
        colls(a, "agentS", r, 0, 9, 0, T0 + S);
    colls(b, "agentS", 2, 0, 9, 0, T0 + S);
    colls(b, "agentS", 3, 0, 5, 1, T0 + S);
    nsc_live_tick(a, T0 + 2 * S), nsc_live_tick(b, T0 + 2 * S);
    died(b, "agentS", 102, T0 + 3 * S);
    cr_assert_eq(nsc_live_merge(m, a), 0);
    cr_assert_eq(nsc_live_merge(m, b), 0);
    char *want = status_text(whole, T0 + 20 * S), *got = status_text(m, T0 + 20 * S);
    cr_assert_str_eq(got, want);
    free(want);
    free(got);
    nsc_live_free(whole), nsc_live_free(a), nsc_live_free(b), nsc_live_free(m);
}

/* Agent and process 100 moved from collector a to b (a failover): b's newer
 * entries win, rank 0's further progress wins, in either merge order. */
Test(live_snap, after_a_move_the_latest_wins_either_way)
{
    nsc_live *a = nsc_live_new(&cfg), *b = nsc_live_new(&cfg);
    colls(a, "agentA", 0, 0, 3, 0, T0 + S);
    colls(a, "agentA", 1, 0, 7, 0, T0 + S);
    colls(b, "agentB", 0, 4, 9, 1, T0 + 5 * S);
    char *text[2];
    for (int order = 0; order < 2; order++) {
        nsc_live *m = nsc_live_new(&cfg);
        cr_assert_eq(nsc_live_merge(m, order ? b : a), 0);
        cr_assert_eq(nsc_live_merge(m, order ? a : b), 0);
        nsc_live_counts c;
        nsc_live_counts_get(m, T0 + 6 * S, &c);
        cr_assert_eq(c.procs_alive, 2);
        cr_assert_eq(c.agents_alive, 2);
        cr_assert_eq(c.events, 4 + 8 + 6);
        text[order] = status_text(m, T0 + 6 * S);
        cr_assert(strstr(text[order], "{\"host\":\"hs\",\"pid\":100,\"job\":\"jobS\",\"agent\":\"agentB\",\"state\":\"alive\","
                                      "\"reason\":null,\"last_seen_ns\":105000000000"),
                  "%s", text[order]);
        cr_assert(strstr(text[order], "{\"rank\":0,\"host\":\"hs\",\"pid\":100,\"state\":\"alive\",\"process\":\"alive\",\"collectives\":"
                                      "[{\"func\":\"AllReduce\",\"seq\":9,\"in_flight\":true"),
                  "%s", text[order]);
        cr_assert(strstr(text[order], "\"max_seq\":9"), "%s", text[order]);
        nsc_live_free(m);
    }
    free(text[0]);
    free(text[1]);
    nsc_live_free(a), nsc_live_free(b);
}

/* Collector b's snapshot of rank 3 at seq 5 is 15 s old when a merges it;
 * a's ranks went past seq 5 after that snapshot: nothing says rank 3 did
 * not follow, so it is not lagging. A rank already behind for the lag when
 * the snapshot was taken is. */
Test(live_snap, a_peers_old_snapshot_adds_no_lagging_rank)
{
    nsc_live *a = nsc_live_new(&cfg), *b = nsc_live_new(&cfg);
    cr_assert(a && b);
    colls(b, "agentB", 3, 0, 5, 0, T0 + S);
    colls(b, "agentB", 2, 0, 1, 0, T0 + S);
    uint8_t *snap;
    size_t len;
    snapshot(b, T0 + 2 * S, WALL, &snap, &len);
    for (int r = 0; r < 2; r++)
        colls(a, "agentA", r, 0, 30, 0, T0 + 5 * S);
    nsc_live *peer, *m = nsc_live_new(&cfg);
    const char *why;
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, T0 + 17 * S, WALL + 15 * S, &peer, &why), 0, "%s", why);
    cr_assert_eq(nsc_live_merge(m, a), 0);
    cr_assert_eq(nsc_live_merge(m, peer), 0);
    nsc_live_counts c;
    nsc_live_counts_get(m, T0 + 17 * S, &c);
    cr_assert_eq(c.lagging, 0, "%" PRIu64 " lagging", c.lagging);
    char *text = status_text(m, T0 + 17 * S);
    cr_assert(strstr(text, "\"lagging\":[]"), "%s", text);
    free(text);
    free(snap);
    nsc_live_free(peer);
    nsc_live_free(m);
    /* rank 2 stopped at seq 1 while rank 3 went on to 5 before b's
     * snapshot 12 s later: lagging by then */
    colls(b, "agentB", 3, 6, 20, 0, T0 + 13 * S);
    snapshot(b, T0 + 14 * S, WALL, &snap, &len);
    m = nsc_live_new(&cfg);
    cr_assert_eq(nsc_live_from_snapshot(snap, len, &cfg, T0 + 17 * S, WALL + 3 * S, &peer, &why), 0, "%s", why);
    cr_assert_eq(nsc_live_merge(m, a), 0);
    cr_assert_eq(nsc_live_merge(m, peer), 0);
    nsc_live_counts_get(m, T0 + 17 * S, &c);
    cr_assert_eq(c.lagging, 1, "%" PRIu64 " lagging", c.lagging);
    free(snap);
    nsc_live_free(peer), nsc_live_free(m), nsc_live_free(a), nsc_live_free(b);
}
