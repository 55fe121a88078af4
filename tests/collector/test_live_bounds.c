/* test_live_bounds.c: what a peer can make the live state (engine/live)
 * hold is bounded (issue 29): ranks are allocated as seen, not as claimed;
 * jobs, communicators per job and processes per job and per agent stop at
 * their limits, counted; ended jobs are evicted with their communicators and
 * processes while the others keep working; a state rebuilt from a store
 * counts the store's committed events. Reads the tables (live_int.h) to see
 * what is allocated. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live_int.h"
#include "livefeed.h"
#include "storeutil.h"

#define S 1000000000ull
#define T0 (100 * S)

static nsc_test_feed feed_of(const char *job, const char *agent, uint32_t pid, uint64_t comm, int rank, int nranks)
{
    return (nsc_test_feed){.agent = agent, .job = job, .host = "h1", .func = "AllReduce", .pid = pid,
                           .rank = rank, .nranks = nranks, .comm = comm};
}

Test(live_bounds, a_claimed_nranks_costs_only_the_ranks_seen)
{
    nsc_live *l = nsc_live_new(NULL);
    cr_assert_not_null(l);
    nsc_test_feed f = feed_of("j", "a", 1, 0xbad, 3, 1000000);
    cr_assert_eq(nsc_test_feed_colls(l, &f, 0, 0, 0, T0), 0);
    cr_assert_eq(l->ncomms, 1);
    cr_assert_eq(l->comms[0].nranks, 1000000);
    cr_assert_leq(l->comms[0].nalloc, 4, "%d ranks allocated for rank 3", l->comms[0].nalloc);
    cr_assert_leq(l->comms[0].fcap, 2, "%zu functions allocated for one", l->comms[0].fcap);
    f.rank = 1000;
    f.pid = 2;
    cr_assert_eq(nsc_test_feed_colls(l, &f, 0, 0, 0, T0), 0);
    cr_assert_leq(l->comms[0].nalloc, 1001 * 2);
    nsc_live_free(l);
}

/* One section defining n communicators of job j. */
static int defs(nsc_live *l, size_t n)
{
    nsc_ctx_def *d = calloc(n, sizeof *d);
    cr_assert_not_null(d);
    for (size_t i = 0; i < n; i++)
        d[i] = nsc_test_ctx((uint16_t)i, 0x1000 + i, 0, 8);
    nsc_batch b;
    memset(&b, 0, sizeof b);
    b.hdr.proc = nsc_test_proc("j", "h1", 7, 0);
    b.ctxs = d, b.nctxs = n;
    int rc = nsc_live_section(l, "a", &b, T0);
    free(d);
    return rc;
}

Test(live_bounds, communicators_per_job_stop_at_the_limit)
{
    nsc_live_cfg cfg = {.max_comms_per_job = 1000};
    nsc_live *l = nsc_live_new(&cfg);
    cr_assert_eq(defs(l, 5000), 1 + NSC_LIVE_LIM_COMMS_PER_JOB);
    nsc_live_counts c;
    nsc_live_counts_get(l, T0, &c);
    cr_assert_eq(c.comms, 1000);
    cr_assert_eq(c.refused[NSC_LIVE_LIM_COMMS_PER_JOB], 4000);
    cr_assert_eq(l->procs[0].nctx, 1000);
    nsc_live_free(l);
}

Test(live_bounds, processes_and_jobs_stop_at_their_limits)
{
    nsc_live_cfg cfg = {.max_procs_per_job = 10, .max_procs_per_agent = 15, .max_jobs = 2};
    nsc_live *l = nsc_live_new(&cfg);
    int refused = 0;
    for (uint32_t p = 0; p < 50; p++) {  /* job j1: 10 of 50 */
        nsc_test_feed f = feed_of("j1", "a", p + 1, 1, (int)p, 50);
        refused += nsc_test_feed_colls(l, &f, 0, 0, 0, T0) != 0;
    }
    cr_assert_eq(refused, 40);
    for (uint32_t p = 0; p < 10; p++) {  /* job j2, same agent: 5 more for the agent */
        nsc_test_feed f = feed_of("j2", "a", 100 + p, 2, (int)p, 10);
        nsc_test_feed_colls(l, &f, 0, 0, 0, T0);
    }
    nsc_test_feed other = feed_of("j3", "b", 500, 3, 0, 1);
    cr_assert_neq(nsc_test_feed_colls(l, &other, 0, 0, 0, T0), 0);  /* a third job */
    nsc_live_counts c;
    nsc_live_counts_get(l, T0, &c);
    cr_assert_eq(c.procs_alive, 15);
    cr_assert_eq(c.jobs, 2);
    cr_assert_eq(c.refused[NSC_LIVE_LIM_PROCS_PER_JOB], 40);
    cr_assert_eq(c.refused[NSC_LIVE_LIM_PROCS_PER_AGENT], 5);
    cr_assert_eq(c.refused[NSC_LIVE_LIM_JOBS], 1);
    cr_assert_eq(c.events, 61, "every event is counted, tracked or not");
    nsc_live_free(l);
}

Test(live_bounds, ended_jobs_are_evicted_the_others_keep_working)
{
    nsc_live_cfg cfg = {.heartbeat_timeout_ns = 5 * S, .evict_ns = 60 * S};
    nsc_live *l = nsc_live_new(&cfg);
    for (uint32_t p = 0; p < 4; p++) {  /* "old" first: its tables come before "kept"'s */
        nsc_test_feed f = feed_of("old", "a", p + 1, 0x01d, (int)p, 4);
        cr_assert_eq(nsc_test_feed_colls(l, &f, 0, 2, 0, T0), 0);
        nsc_test_feed k = feed_of("kept", "a", 100 + p, 0x4e, (int)p, 4);
        cr_assert_eq(nsc_test_feed_colls(l, &k, 0, 2, 1, T0), 0);
    }
    nsc_a2c_life fin = {.event = NSC_A2C_FINISHED, .job = "old"};
    for (uint32_t p = 0; p < 4; p++) {
        fin.pid = p + 1;
        cr_assert_eq(nsc_live_life(l, "a", "h1", &fin, T0 + S), 0);
    }
    cr_assert_eq(nsc_live_evict(l, T0 + 30 * S), 0, "too early");
    for (uint32_t p = 0; p < 4; p++) {  /* "kept" runs on */
        nsc_test_feed k = feed_of("kept", "a", 100 + p, 0x4e, (int)p, 4);
        cr_assert_eq(nsc_test_feed_colls(l, &k, 3, 3, 0, T0 + 62 * S), 0);
    }
    cr_assert_eq(nsc_live_evict(l, T0 + 62 * S), 1);
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + 62 * S, &c);
    cr_assert_eq(c.jobs, 1);
    cr_assert_eq(c.comms, 1);
    cr_assert_eq(c.procs_alive, 4);
    cr_assert_eq(c.evicted_jobs, 1);
    cr_assert_str_eq(l->jobs[0].name, "kept");
    cr_assert_eq(l->comms[0].job, 0);
    for (int32_t k = 0; k < 4; k++)  /* the ranks' processes renumbered */
        cr_assert_eq(l->procs[l->comms[0].ranks[k].proc - 1].pid, 100 + (uint32_t)k);
    for (uint32_t p = 0; p < 4; p++) {  /* contexts and pending Colls renumbered: the next section lands */
        nsc_test_feed k = feed_of("kept", "a", 100 + p, 0x4e, (int)p, 4);
        cr_assert_eq(nsc_test_feed_colls(l, &k, 4, 4, 0, T0 + 63 * S), 0);
    }
    cr_assert_eq(l->comms[0].f[0].max_seq, 4);
    cr_assert_eq(l->comms[0].f[0].duration.count, 4 * 4, "seqs 0, 1, 3 and 4 of 4 ranks completed");
    free(nsc_test_live_status(l, T0 + 63 * S, NULL));
    cr_assert_eq(nsc_live_evict(l, T0 + 200 * S), 1, "silent past the heartbeat: ended");
    nsc_live_free(l);
}

/* A job at its process limit whose agent still sends for other processes
 * (each refused) has not ended: its tracked processes' silence alone must
 * not evict it, which would admit as many others in their place. */
Test(live_bounds, a_job_sending_only_refused_processes_is_not_evicted)
{
    nsc_live_cfg cfg = {.max_procs_per_job = 4, .heartbeat_timeout_ns = 5 * S, .evict_ns = 5 * S};
    nsc_live *l = nsc_live_new(&cfg);
    for (uint32_t p = 0; p < 4; p++) {
        nsc_test_feed f = feed_of("full", "a", p + 1, 0xf, (int)p, 4);
        cr_assert_eq(nsc_test_feed_colls(l, &f, 0, 0, 0, T0), 0);
    }
    for (uint32_t t = 1; t <= 20; t++) {  /* 20 s of sections, each of a new process */
        nsc_test_feed f = feed_of("full", "a", 100 + t, 0xf, 0, 4);
        cr_assert_neq(nsc_test_feed_colls(l, &f, 0, 0, 0, T0 + t * S), 0, "refused");
        cr_assert_eq(nsc_live_evict(l, T0 + t * S), 0, "evicted at %u s while it sends", t);
    }
    nsc_live_counts c;
    nsc_live_counts_get(l, T0 + 20 * S, &c);
    cr_assert_eq(c.refused[NSC_LIVE_LIM_PROCS_PER_JOB], 20, "none admitted in the tracked ones' place");
    cr_assert_eq(nsc_live_evict(l, T0 + 24 * S), 0, "too early");
    cr_assert_eq(nsc_live_evict(l, T0 + 26 * S), 1, "silent evict_ns after its last section: ended");
    nsc_live_free(l);
}

static int put_prog(void *arg, const nsc_store_progress *p) { return nsc_store_put_progress(arg, p); }

Test(live_bounds, rebuilt_state_counts_the_committed_events_and_evicts)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    nsc_live *l = nsc_live_new(NULL);
    nsc_proc proc = nsc_test_proc("done", "h1", 1, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, 0xd, 0, 1);
    nsc_event ev[3] = {{.id = 1, .type = NSC_T_COLL}, {.id = 2, .type = NSC_T_COLL}, {.id = 3, .type = NSC_T_COLL}};
    nsc_store_batch sb = {.proc = &proc, .ctxs = &ctx, .nctxs = 1, .events = ev, .nevents = 3};
    nsc_test_feed f = feed_of("done", "a", 1, 0xd, 0, 1);
    cr_assert_eq(nsc_test_feed_colls(l, &f, 0, 0, 0, T0), 0);
    cr_assert_eq(nsc_store_begin(st, T0), 0);
    cr_assert_eq(nsc_store_put(st, &sb), 0);
    cr_assert_eq(nsc_live_take_progress(l, put_prog, st), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_reader *rd;
    nsc_live *back;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_live_from_store(rd, NULL, T0 + 1000 * S, &back), 0);
    nsc_live_counts c;
    nsc_live_counts_get(back, T0 + 1000 * S, &c);
    cr_assert_eq(c.events, 3, "status counts the store's %" PRIu64 " events", c.events);
    cr_assert_eq(c.jobs, 1, "no eviction without evict_ns (the CLI's --db)");
    nsc_live_free(back);
    nsc_live_cfg cfg = {.evict_ns = 60 * S};
    cr_assert_eq(nsc_live_from_store(rd, &cfg, T0 + 1000 * S, &back), 0);
    nsc_live_counts_get(back, T0 + 1000 * S, &c);
    cr_assert_eq(c.jobs, 0, "a collector's rebuild evicts what ended long ago");
    cr_assert_eq(c.events, 3);
    nsc_store_read_end(rd);
    nsc_live_free(back);
    nsc_live_free(l);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
