/* The LMDB store: put and scan round trips, the collective index, comms and
 * ranks, map growth from a tiny map, retention by age and by size, the
 * collective index's runs (gaps, functions, overlaps, retention, corrupt
 * entries) and the schema check, clock
 * models beside the data, readers beside the writer, a cache store's commits
 * without fsync, and crash consistency
 * under kill -9 (NSC_CRASH_ROUNDS rounds, default 5; 20 for the full run). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <lmdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mix.h"
#include "sim.h"
#include "store_int.h"
#include "storeutil.h"

#define COMM_A 0xaaaa000000000001ull
#define COMM_B 0xbbbb000000000002ull

/* A store with that initial map and retention age (0: the defaults). */
static nsc_store *open_with(const char *dir, size_t initial_map, uint64_t retain_age_ns)
{
    nsc_store_opts o = {0};
    o.initial_map = initial_map;
    o.retain_age_ns = retain_age_ns;
    nsc_store *st;
    int rc = nsc_store_open(dir, &o, &st);
    cr_assert_eq(rc, 0, "open: %s", nsc_store_strerror(rc));
    return st;
}

static nsc_store *open_store(const char *dir, size_t initial_map)
{
    return open_with(dir, initial_map, 0);
}

static void commit_batch(nsc_store *st, uint64_t now, const nsc_store_batch *b)
{
    cr_assert_eq(nsc_store_begin(st, now), 0);
    int rc = nsc_store_put(st, b);
    cr_assert_eq(rc, 0, "put: %s", nsc_store_strerror(rc));
    rc = nsc_store_commit(st);
    cr_assert_eq(rc, 0, "commit: %s", nsc_store_strerror(rc));
}

static nsc_store_stats stats_of(nsc_store *st)
{
    nsc_store_reader *rd;
    nsc_store_stats s;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_stats_get(rd, &s), 0);
    nsc_store_read_end(rd);
    return s;
}

typedef struct collected {
    size_t n;
    uint64_t min_id, max_id;
    uint64_t t0, t1;
    int outside;       /* events returned that do not overlap the window */
    nsc_event *copy;   /* when non-NULL, events copied here (room for cap) */
    size_t cap;
    uint32_t states;   /* states seen in the blocks visited */
} collected;

static int collect(void *arg, const nsc_block_key *k, const nsc_block *blk, const nsc_event *ev)
{
    (void)k;
    collected *c = arg;
    if (c->copy && c->n < c->cap)
        c->copy[c->n] = *ev;
    if (ev == blk->events)
        c->states += blk->hdr.nstates;
    c->n++;
    c->min_id = c->n == 1 || ev->id < c->min_id ? ev->id : c->min_id;
    c->max_id = ev->id > c->max_id ? ev->id : c->max_id;
    c->outside += ev->start_ns > c->t1 || ev->stop_ns < c->t0;
    return 0;
}

static collected scan_all(nsc_store *st, uint32_t job, uint64_t comm, int32_t rank,
                          uint64_t t0, uint64_t t1)
{
    nsc_store_reader *rd;
    collected c = {0};
    c.t0 = t0, c.t1 = t1;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    int rc = nsc_store_scan(rd, job, comm, rank, t0, t1, collect, &c);
    cr_assert_eq(rc, 0, "scan: %s", nsc_store_strerror(rc));
    nsc_store_read_end(rd);
    return c;
}

static uint32_t job_id(nsc_store *st, const char *job)
{
    nsc_store_reader *rd;
    uint32_t id = 0;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, job, &id), 0);
    nsc_store_read_end(rd);
    return id;
}

Test(store, put_scan_round_trip)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    /* Another process interns "RING" first, so store-wide ids differ from ours. */
    nsc_proc other = nsc_test_proc("job1", "nodeX", 7, 0);
    nsc_str_def ring = {9, "RING"};
    nsc_store_batch first = {&other, NULL, 0, &ring, 1, NULL, 0, NULL, 0, NULL, 0};
    commit_batch(st, 1, &first);

    nsc_proc p = nsc_test_proc("job1", "node0", 100, 0);
    nsc_ctx_def ctxs[2] = {nsc_test_ctx(0, COMM_A, 0, 2), nsc_test_ctx(1, COMM_B, 3, 4)};
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 1, 9), 0); /* room for the two extra records */
    for (int i = 0; i < 4; i++)
        cr_assert_eq(nsc_mix_collective(&m, 0, 0), 0);
    size_t ctx0_events = m.nevents;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(nsc_mix_collective(&m, 1, 3), 0);
    /* A ProxyCtrl (no communicator) and a state whose event is in no batch. */
    nsc_event ctrl = {.id = 999999, .start_ns = m.now_ns, .stop_ns = m.now_ns + 10,
                      .ctx = NSC_CTX_NONE, .type = NSC_T_PROXY_CTRL, .rank = -1};
    m.events[m.nevents++] = ctrl;
    m.states[m.nstates++] = (nsc_state_rec){888888, m.now_ns, 5, 1, NSC_S_PROXY_CTRL_ACTIVE};
    nsc_store_batch b = nsc_mix_batch(&m, &p, ctxs, 2, strs, NSC_MIX_NSTRS);
    commit_batch(st, 2, &b);

    uint32_t job = job_id(st, "job1");
    static nsc_event got[1000];
    collected a = scan_all(st, job, COMM_A, 0, 0, UINT64_MAX);
    cr_assert_eq(a.n, ctx0_events);
    collected bb = scan_all(st, job, COMM_B, 3, 0, UINT64_MAX);
    cr_assert_eq(bb.n, m.nevents - 1 - ctx0_events);
    cr_assert_eq(a.states + bb.states, m.nstates - 1, "states travel with their events: %u + %u of %zu", a.states, bb.states, m.nstates - 1);

    /* Stored events equal the input, with strings made store-wide. */
    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    collected full = {0};
    full.copy = got, full.cap = 1000, full.t1 = UINT64_MAX;
    cr_assert_eq(nsc_store_scan(rd, job, COMM_A, 0, 0, UINT64_MAX, collect, &full), 0);
    size_t colls = 0;
    for (size_t i = 0; i < full.n; i++) {
        const nsc_event *in = NULL;
        for (size_t j = 0; j < ctx0_events && !in; j++)
            in = m.events[j].id == got[i].id ? &m.events[j] : NULL;
        cr_assert_not_null(in);
        if (in->type != NSC_T_COLL) {
            cr_assert_eq(memcmp(in, &got[i], sizeof *in), 0);
            continue;
        }
        char text[64];
        cr_assert_eq(nsc_store_str(rd, got[i].d.coll.func, text, sizeof text), 0);
        cr_assert_str_eq(text, "AllReduce");
        cr_assert_eq(nsc_store_str(rd, got[i].d.coll.algo, text, sizeof text), 0);
        cr_assert_str_eq(text, "RING");
        cr_assert_eq(got[i].d.coll.algo, 1, "RING was interned first");
        cr_assert_eq(got[i].d.coll.seq, in->d.coll.seq);
        colls++;
    }
    cr_assert_eq(colls, 4);

    /* The process's own blocks hold the ProxyCtrl and the orphan state. */
    nsc_store_rank ri;
    cr_assert_eq(nsc_store_rank_info(rd, job, COMM_A, 0, &ri), 0);
    collected pc = {0};
    pc.t1 = UINT64_MAX;
    cr_assert_eq(nsc_store_scan(rd, job, NSC_STORE_PROC_COMM, (int32_t)ri.proc_id, 0,
                                UINT64_MAX, collect, &pc), 0);
    cr_assert_eq(pc.n, 1);
    cr_assert_eq(pc.min_id, 999999);
    cr_assert_eq(pc.states, 1);
    nsc_store_stats s;
    cr_assert_eq(nsc_store_stats_get(rd, &s), 0);
    cr_assert_eq(s.events, m.nevents);
    cr_assert_eq(s.states, m.nstates);
    cr_assert_eq(s.completions, m.ncompletions);
    cr_assert_eq(s.unknown_ctx, 0);
    nsc_store_read_end(rd);

    /* A narrow window returns exactly the overlapping events. */
    uint64_t t0 = m.events[ctx0_events / 2].start_ns, t1 = t0 + 50000;
    size_t expect = 0;
    for (size_t j = 0; j < ctx0_events; j++)
        expect += m.events[j].start_ns <= t1 && m.events[j].stop_ns >= t0;
    collected w = scan_all(st, job, COMM_A, 0, t0, t1);
    cr_assert_eq(w.n, expect);
    cr_assert_eq(w.outside, 0);
    cr_assert_gt(expect, 0);

    nsc_mix_free(&m);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Every event and state of (job, comm, rank)'s blocks, in stored order. */
typedef struct stored {
    nsc_event ev[600];
    nsc_state_rec st[1600];
    size_t nev, nst;
} stored;

static void read_blocks(nsc_store *st, uint64_t comm, int32_t rank, stored *out)
{
    nsc_store_reader *rd;
    nsc_store_blocks *it;
    nsc_block_key k;
    nsc_block b;
    out->nev = out->nst = 0;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    uint32_t job;
    cr_assert_eq(nsc_store_job_id(rd, "job1", &job), 0);
    if (comm == NSC_STORE_PROC_COMM) {
        nsc_store_rank ri;
        cr_assert_eq(nsc_store_rank_info(rd, job, COMM_A, 0, &ri), 0);
        rank = (int32_t)ri.proc_id;
    }
    cr_assert_eq(nsc_store_blocks_open(rd, job, comm, rank, 0, UINT64_MAX, &it), 0);
    while (nsc_store_blocks_next(it, &k, &b) == 0) {
        cr_assert_leq(out->nev + b.hdr.nevents, 600);
        cr_assert_leq(out->nst + b.hdr.nstates, 1600);
        memcpy(out->ev + out->nev, b.events, b.hdr.nevents * sizeof *b.events);
        memcpy(out->st + out->nst, b.states, b.hdr.nstates * sizeof *b.states);
        out->nev += b.hdr.nevents;
        out->nst += b.hdr.nstates;
        nsc_block_release(&b);
    }
    nsc_store_blocks_close(it);
    nsc_store_read_end(rd);
}

/* A state whose event is not in its batch is stored in the process's group,
 * where no query joins it to the event: each one is counted, exactly, and
 * the count survives a reopen. Here a ProxyStep's first two states come a
 * batch before the step (the split issue 30 found), its last one with it;
 * a second step has all its states with it. */
Test(store, unattached_states_counted)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    nsc_proc p = nsc_test_proc("job1", "node0", 100, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM_A, 0, 2);
    nsc_event steps[2] = {{.id = 7, .start_ns = 1000, .stop_ns = 1900, .ctx = 0, .type = NSC_T_PROXY_STEP},
                          {.id = 8, .start_ns = 2000, .stop_ns = 2900, .ctx = 0, .type = NSC_T_PROXY_STEP}};
    nsc_state_rec early[2] = {{7, 1100, 0, 1, NSC_S_PROXY_STEP_SEND_GPU_WAIT},
                              {7, 1200, 0, 1, NSC_S_PROXY_STEP_SEND_PEER_WAIT}};
    nsc_state_rec with[4] = {{7, 1300, 4096, 1, NSC_S_PROXY_STEP_SEND_WAIT},
                             {8, 2100, 0, 1, NSC_S_PROXY_STEP_SEND_GPU_WAIT},
                             {8, 2200, 0, 1, NSC_S_PROXY_STEP_SEND_PEER_WAIT},
                             {8, 2300, 4096, 1, NSC_S_PROXY_STEP_SEND_WAIT}};
    nsc_store_batch first = {&p, &ctx, 1, NULL, 0, NULL, 0, early, 2, NULL, 0};
    nsc_store_batch second = {&p, &ctx, 1, NULL, 0, steps, 2, with, 4, NULL, 0};
    commit_batch(st, 1, &first);
    commit_batch(st, 2, &second);

    nsc_store_stats s = stats_of(st);
    cr_assert_eq(s.states, 6);
    cr_assert_eq(s.unattached_states, 2, "unattached: %" PRIu64, s.unattached_states);
    static stored rank, proc;
    read_blocks(st, COMM_A, 0, &rank);
    read_blocks(st, NSC_STORE_PROC_COMM, 0, &proc);
    cr_assert_eq(rank.nev, 2);
    cr_assert_eq(rank.nst, 4, "the states that came with their step are beside it");
    cr_assert_eq(proc.nst, 2, "the early ones are in the process's group");

    nsc_store_close(st);
    st = open_store(dir, 0);
    cr_assert_eq(stats_of(st).unattached_states, 2);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Two ranks' collectives interleaved in one batch, a state whose event is in
 * no batch, spread ids (times `stride`); stored into two stores, once in the
 * mix's order and once reversed: every group's blocks must hold the same
 * records in the same stored order either way. */
static void check_batch_order_independent(uint64_t stride)
{
    nsc_proc p = nsc_test_proc("job1", "node0", 100, 0);
    nsc_ctx_def ctxs[2] = {nsc_test_ctx(0, COMM_A, 0, 2), nsc_test_ctx(1, COMM_B, 3, 4)};
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 5, 6), 0);
    for (int i = 0; i < 6; i++)
        cr_assert_eq(nsc_mix_collective(&m, (uint16_t)(i % 2), i % 2 ? 3 : 0), 0);
    for (size_t i = 0; i < m.nevents; i++)
        m.events[i].id *= stride;
    for (size_t i = 0; i < m.nstates; i++)
        m.states[i].id *= stride;
    for (size_t i = 0; i < m.ncompletions; i++)
        m.completions[i].id *= stride;
    m.states[7].id = UINT64_MAX - 5;  /* an orphan past every event's id: the process's */
    char *dir[2] = {nsc_tmp_store_dir(), nsc_tmp_store_dir()};
    nsc_store *st[2] = {open_store(dir[0], 0), open_store(dir[1], 0)};
    nsc_store_batch b = nsc_mix_batch(&m, &p, ctxs, 2, strs, NSC_MIX_NSTRS);
    commit_batch(st[0], 1, &b);
    for (size_t i = 0, j = m.nevents - 1; i < j; i++, j--) {
        nsc_event t = m.events[i];
        m.events[i] = m.events[j], m.events[j] = t;
    }
    for (size_t i = 0, j = m.nstates - 1; i < j; i++, j--) {
        nsc_state_rec t = m.states[i];
        m.states[i] = m.states[j], m.states[j] = t;
    }
    commit_batch(st[1], 1, &b);
    static stored got[2];
    const struct { uint64_t comm; int32_t rank; } groups[] = {
        {COMM_A, 0}, {COMM_B, 3}, {NSC_STORE_PROC_COMM, 0}};
    size_t events = 0, states = 0;
    for (size_t g = 0; g < sizeof groups / sizeof *groups; g++) {
        for (int s = 0; s < 2; s++)
            read_blocks(st[s], groups[g].comm, groups[g].rank, &got[s]);
        cr_assert_eq(got[0].nev, got[1].nev);
        cr_assert_eq(got[0].nst, got[1].nst);
        cr_assert_eq(memcmp(got[0].ev, got[1].ev, got[0].nev * sizeof *got[0].ev), 0);
        cr_assert_eq(memcmp(got[0].st, got[1].st, got[0].nst * sizeof *got[0].st), 0);
        for (size_t i = 1; i < got[0].nev; i++)
            cr_assert_lt(got[0].ev[i - 1].id, got[0].ev[i].id, "stored by id");
        if (groups[g].comm == NSC_STORE_PROC_COMM)
            cr_assert_eq(got[0].nst, 1, "the orphan state");
        events += got[0].nev;
        states += got[0].nst;
    }
    cr_assert_eq(events, m.nevents);
    cr_assert_eq(states, m.nstates);
    for (int s = 0; s < 2; s++) {
        nsc_store_close(st[s]);
        nsc_tmp_store_remove(dir[s]);
    }
    nsc_mix_free(&m);
}

Test(store, blocks_independent_of_batch_order_dense_ids) { check_batch_order_independent(1); }
Test(store, blocks_independent_of_batch_order_sparse_ids) { check_batch_order_independent(100000); }

/* Four ranks of COMM_A on four hosts, ncoll collectives each, one batch per rank. */
static void put_ranks(nsc_store *st, int ncoll, uint64_t now)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    for (int r = 0; r < 4; r++) {
        char host[16];
        snprintf(host, sizeof host, "node%d", r);
        nsc_proc p = nsc_test_proc("jobc", host, 1000 + (uint32_t)r, r);
        nsc_ctx_def c = nsc_test_ctx(0, COMM_A, r, 4);
        nsc_mix m;
        cr_assert_eq(nsc_mix_init(&m, 10 + (uint64_t)r, (size_t)ncoll), 0);
        for (int i = 0; i < ncoll; i++)
            cr_assert_eq(nsc_mix_collective(&m, 0, r), 0);
        nsc_store_batch b = nsc_mix_batch(&m, &p, &c, 1, strs, NSC_MIX_NSTRS);
        commit_batch(st, now, &b);
        nsc_mix_free(&m);
    }
}

Test(store, collective_index_comms_and_ranks)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    put_ranks(st, 10, 1);
    uint32_t job = job_id(st, "jobc");
    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    nsc_store_coll_hit hits[8];
    size_t n;
    cr_assert_eq(nsc_store_find_coll(rd, job, COMM_A, "AllReduce", 7, hits, 8, &n), 0);
    cr_assert_eq(n, 4);
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(hits[i].rank, (int32_t)i, "rank order");
        cr_assert_eq(hits[i].event.type, NSC_T_COLL);
        cr_assert_eq(hits[i].event.d.coll.seq, 7);
        cr_assert_eq(hits[i].event.rank, (int32_t)i);
    }
    cr_assert_eq(nsc_store_find_coll(rd, job, COMM_A, "AllReduce", 10, hits, 8, &n), 0);
    cr_assert_eq(n, 0, "no collective 10");
    cr_assert_eq(nsc_store_find_coll(rd, job, COMM_A, "Broadcast", 1, hits, 8, &n), 0);
    cr_assert_eq(n, 0);
    cr_assert_eq(nsc_store_find_coll(rd, job, COMM_A, "AllReduce", 3, hits, 2, &n), 0);
    cr_assert_eq(n, 2, "capped at max");

    nsc_store_comm *comms;
    cr_assert_eq(nsc_store_comms(rd, job, &comms, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_eq(comms[0].comm_id, COMM_A);
    cr_assert_eq(comms[0].nranks, 4);
    cr_assert_str_eq(comms[0].name, "comm-aaaa000000000001");
    free(comms);
    cr_assert_eq(nsc_store_comms(rd, job + 1, &comms, &n), 0);
    cr_assert_eq(n, 0);
    free(comms);

    nsc_store_rank ri;
    cr_assert_eq(nsc_store_rank_info(rd, job, COMM_A, 2, &ri), 0);
    cr_assert_str_eq(ri.host, "node2");
    cr_assert_eq(ri.pid, 1002);
    cr_assert_eq(ri.gpu, 2);
    cr_assert_eq(nsc_store_rank_info(rd, job, COMM_A, 4, &ri), NSC_STORE_ENOTFOUND);
    nsc_store_read_end(rd);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(store, map_grows_from_64k)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 64 << 10);
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_proc p = nsc_test_proc("grow", "node0", 1, 0);
    nsc_ctx_def c = nsc_test_ctx(0, COMM_A, 0, 1);
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 4, 5), 0);
    size_t total = 0;
    for (int batch = 0; batch < 60; batch++) {
        nsc_mix_clear(&m);
        for (int i = 0; i < 5; i++)
            cr_assert_eq(nsc_mix_collective(&m, 0, 0), 0);
        nsc_store_batch b = nsc_mix_batch(&m, &p, &c, 1, strs, NSC_MIX_NSTRS);
        commit_batch(st, (uint64_t)batch, &b);
        total += m.nevents;
    }
    nsc_store_stats s = nsc_test_stats(st);
    cr_assert_geq(s.map_bytes, 1 << 20, "map grew from 64 KiB to %llu", (unsigned long long)s.map_bytes);
    cr_assert_eq(s.events, total);
    cr_assert_eq(scan_all(st, job_id(st, "grow"), COMM_A, 0, 0, UINT64_MAX).n, total);
    nsc_mix_free(&m);
    nsc_store_close(st);
    /* Reopening with a tiny map adopts the file's size. */
    st = open_store(dir, 64 << 10);
    cr_assert_eq(nsc_test_stats(st).events, total);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Batch i holds collectives [5i, 5i+5) of one rank, committed at time i s. */
static void put_numbered(nsc_store *st, int first, int count)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_proc p = nsc_test_proc("ret", "node0", 1, 0);
    nsc_ctx_def c = nsc_test_ctx(0, COMM_B, 0, 1);
    nsc_mix m;
    cr_assert_eq(nsc_mix_init(&m, 6, 5), 0);
    for (int i = first; i < first + count; i++) {
        nsc_mix_clear(&m);
        m.seq = 5 * (uint64_t)i;
        for (int k = 0; k < 5; k++)
            cr_assert_eq(nsc_mix_collective(&m, 0, 0), 0);
        nsc_store_batch b = nsc_mix_batch(&m, &p, &c, 1, strs, NSC_MIX_NSTRS);
        commit_batch(st, (uint64_t)i * 1000000000ull, &b);
    }
    nsc_mix_free(&m);
}

/* Which numbered batches are present, checking the index agrees with the blocks. */
static void present_batches(nsc_store *st, int count, int *present)
{
    nsc_store_reader *rd;
    uint32_t job;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, "ret", &job), 0);
    for (int i = 0; i < count; i++) {
        present[i] = 0;
        for (int k = 0; k < 5; k++) {
            nsc_store_coll_hit hit;
            size_t n;
            int rc = nsc_store_find_coll(rd, job, COMM_B, "AllReduce", 5 * (uint64_t)i + (uint64_t)k,
                                         &hit, 1, &n);
            cr_assert_eq(rc, 0, "index entry of batch %d is dangling: %s", i, nsc_store_strerror(rc));
            cr_assert(k == 0 || (int)n == present[i], "batch %d partly indexed", i);
            present[i] = (int)n;
        }
    }
    nsc_store_read_end(rd);
}

Test(store, retention_by_age_deletes_oldest_with_index)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_with(dir, 0, 4500000000ull);
    put_numbered(st, 0, 10);
    nsc_store_stats before = nsc_test_stats(st);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 10000000000ull, &deleted), 0);
    cr_assert_eq(deleted, 6, "commits at 0..5 s are older than 10 s - 4.5 s");
    int present[10];
    present_batches(st, 10, present);
    for (int i = 0; i < 10; i++)
        cr_assert_eq(present[i], i >= 6, "batch %d", i);
    nsc_store_stats after = nsc_test_stats(st);
    cr_assert_eq(after.events, before.events * 4 / 10);
    cr_assert_eq(after.blocks, 4);
    cr_assert_eq(scan_all(st, job_id(st, "ret"), COMM_B, 0, 0, UINT64_MAX).n, after.events);
    cr_assert_eq(nsc_store_retain(st, 10000000000ull, &deleted), 0);
    cr_assert_eq(deleted, 0, "idempotent");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(store, retention_by_size_deletes_oldest_first)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    put_numbered(st, 0, 40);
    uint64_t live = nsc_test_stats(st).live_bytes;
    nsc_store_close(st);
    nsc_store_opts o = {0};
    o.retain_bytes = live / 2;
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 0, &deleted), 0);
    cr_assert_gt(deleted, 0);
    cr_assert_lt(deleted, 40);
    cr_assert_leq(nsc_test_stats(st).live_bytes, live / 2);
    int present[40];
    present_batches(st, 40, present);
    for (int i = 0; i < 40; i++)
        cr_assert_eq(present[i], i >= (int)deleted, "the oldest go first: batch %d", i);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(store, clock_model_persists)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 64 << 10);
    nsc_sim_rng r = {3};
    nsc_sim_host h = nsc_sim_host_random(&r);
    nsc_clock_model m, back;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    cr_assert_eq(nsc_sim_feed(&m, &h, &nsc_sim_lan, &r, 100e6, 30e9), 0);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_put_clock(st, "node7", &m), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_close(st);
    st = open_store(dir, 0);
    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_get_clock(rd, "node8", &back), NSC_STORE_ENOTFOUND);
    cr_assert_eq(nsc_store_get_clock(rd, "node7", &back), 0);
    nsc_store_read_end(rd);
    for (int i = 0; i < 100; i++) {
        uint64_t host = nsc_sim_host_time(&h, nsc_sim_range(&r, 0, 30e9)), a, b;
        cr_assert_eq(nsc_clock_host_to_ref(&m, host, &a, NULL), 0);
        cr_assert_eq(nsc_clock_host_to_ref(&back, host, &b, NULL), 0);
        cr_assert_eq(a, b);
    }
    nsc_clock_free(&m);
    nsc_clock_free(&back);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* The LMDB flags the store's environment was opened with. */
static unsigned env_flags(nsc_store *st)
{
    unsigned flags = 0;
    cr_assert_eq(mdb_env_get_flags(st->env.mdb, &flags), 0);
    return flags;
}

/* The query cache's stores (no_sync) skip fsync at commit; every other store
 * keeps it, or an acknowledged batch could be lost at power failure. */
Test(store, no_sync_reaches_the_environment_only_when_asked)
{
    const unsigned nosync = MDB_NOSYNC | MDB_NOMETASYNC;
    char *dir = nsc_tmp_store_dir();
    nsc_store_opts o = {.no_sync = 1};
    nsc_store *st;
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    cr_assert_eq(env_flags(st) & nosync, nosync);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_close(st);
    st = open_store(dir, 0);
    cr_assert_eq(env_flags(st) & nosync, 0);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(store, reader_snapshot_beside_writer)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    put_numbered(st, 0, 1);
    nsc_store_reader *old;
    nsc_store_stats s;
    cr_assert_eq(nsc_store_read_begin(st, &old), 0);
    put_numbered(st, 1, 2);  /* commits while the reader is open */
    cr_assert_eq(nsc_store_stats_get(old, &s), 0);
    cr_assert_eq(s.blocks, 1, "the open reader keeps its snapshot");
    nsc_store_read_end(old);
    cr_assert_eq(nsc_test_stats(st).blocks, 3);
    cr_assert_eq(nsc_store_put(st, NULL), NSC_STORE_ESTATE, "put without begin");
    nsc_store_close(st);

    nsc_store_opts ro = {0};
    ro.read_only = 1;
    cr_assert_eq(nsc_store_open(dir, &ro, &st), 0);
    cr_assert_eq(nsc_test_stats(st).blocks, 3);
    cr_assert_eq(nsc_store_begin(st, 0), NSC_STORE_ESTATE, "read-only");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
    cr_assert_neq(nsc_store_open("/nonexistent/nsc", &ro, &st), 0);
}

/* ---- the collective index: runs of seqNumbers ------------------------------ */

enum { AR = NSC_MIX_STR_ALLREDUCE, BC = NSC_MIX_NSTRS + 1 };

typedef struct coll_spec {
    nsc_str func;
    uint64_t seq;
} coll_spec;

/* One batch of rank's Colls (job "jobr", COMM_A, a process per rank) in the
 * order given, with count = marker; ids (if given) gets their event ids. */
static void put_colls(nsc_store *st, uint64_t now, int32_t rank, uint64_t marker,
                      const coll_spec *c, size_t n, uint64_t *ids)
{
    static uint64_t next_id = 1, t = 1000000;
    nsc_str_def strs[NSC_MIX_NSTRS + 1];
    nsc_mix_strs(strs);
    strs[NSC_MIX_NSTRS] = (nsc_str_def){BC, "Broadcast"};
    char host[16];
    snprintf(host, sizeof host, "node%d", rank);
    nsc_proc p = nsc_test_proc("jobr", host, 2000 + (uint32_t)rank, rank);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM_A, rank, 4);
    nsc_event *ev = calloc(n, sizeof *ev);
    cr_assert_not_null(ev);
    for (size_t i = 0; i < n; i++, t += 1000) {
        ev[i] = (nsc_event){.id = next_id++, .start_ns = t, .stop_ns = t + 500, .ctx = 0,
                            .type = NSC_T_COLL, .rank = rank};
        ev[i].d.coll.func = c[i].func;
        ev[i].d.coll.seq = c[i].seq;
        ev[i].d.coll.count = marker;
        if (ids)
            ids[i] = ev[i].id;
    }
    nsc_store_batch b = {&p, &ctx, 1, strs, NSC_MIX_NSTRS + 1, ev, n, NULL, 0, NULL, 0};
    commit_batch(st, now, &b);
    free(ev);
}

/* Rank's AllReduce seqNumbers [first, last] in one batch. */
static void put_ar_range(nsc_store *st, uint64_t now, int32_t rank, uint64_t marker,
                         uint64_t first, uint64_t last)
{
    coll_spec c[64];
    cr_assert_lt(last - first, 64);
    for (uint64_t s = first; s <= last; s++)
        c[s - first] = (coll_spec){AR, s};
    put_colls(st, now, rank, marker, c, (size_t)(last - first + 1), NULL);
}

static int find_rc(nsc_store *st, const char *func, uint64_t seq, nsc_store_coll_hit *hits,
                   size_t max, size_t *n)
{
    nsc_store_reader *rd;
    uint32_t job;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, "jobr", &job), 0);
    int rc = nsc_store_find_coll(rd, job, COMM_A, func, seq, hits, max, n);
    nsc_store_read_end(rd);
    return rc;
}

/* The hits of (func, seq) across ranks, each checked to be that collective. */
static size_t find(nsc_store *st, const char *func, uint64_t seq, nsc_store_coll_hit *hits,
                   size_t max)
{
    size_t n;
    int rc = find_rc(st, func, seq, hits, max, &n);
    cr_assert_eq(rc, 0, "%s %llu: %s", func, (unsigned long long)seq, nsc_store_strerror(rc));
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(hits[i].event.type, NSC_T_COLL);
        cr_assert_eq(hits[i].event.d.coll.seq, seq);
        cr_assert_eq(hits[i].event.rank, hits[i].rank);
        cr_assert(i == 0 || hits[i - 1].rank < hits[i].rank, "rank order");
    }
    return n;
}

/* The one rank's marker (count) of (func, seq); 0 when not found. */
static uint64_t marker_of(nsc_store *st, const char *func, uint64_t seq)
{
    nsc_store_coll_hit hit[2];
    size_t n = find(st, func, seq, hit, 2);
    cr_assert_leq(n, 1);
    return n ? hit[0].event.d.coll.count : 0;
}

static size_t coll_entries(const char *dir)
{
    nsc_raw_db r;
    cr_assert_eq(nsc_raw_open(dir, "colls", &r), 0);
    MDB_stat s;
    cr_assert_eq(mdb_stat(r.txn, r.dbi, &s), 0);
    cr_assert_eq(nsc_raw_close(&r), 0);
    return s.ms_entries;
}

Test(store, coll_index_runs_gaps_and_functions)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    /* Runs: AllReduce 0-3 (a Broadcast between), 5-7 (after a gap);
     * Broadcast 0-2, then 1 again: the later one wins, 0 and 2 stay. */
    const coll_spec c[] = {{AR, 0}, {AR, 1}, {AR, 2}, {BC, 0}, {AR, 3}, {BC, 1},
                           {AR, 5}, {AR, 6}, {AR, 7}, {BC, 2}, {BC, 1}};
    uint64_t ids[11];
    put_colls(st, 1, 0, 1, c, 11, ids);
    const struct { const char *func; uint64_t seq; int at; } want[] = {
        {"AllReduce", 0, 0},  {"AllReduce", 1, 1},  {"AllReduce", 2, 2},  {"AllReduce", 3, 4},
        {"AllReduce", 4, -1}, {"AllReduce", 5, 6},  {"AllReduce", 6, 7},  {"AllReduce", 7, 8},
        {"AllReduce", 8, -1}, {"Broadcast", 0, 3},  {"Broadcast", 1, 10}, {"Broadcast", 2, 9},
        {"Broadcast", 3, -1}, {"AllGather", 0, -1}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
        nsc_store_coll_hit hit[2];
        size_t n = find(st, want[i].func, want[i].seq, hit, 2);
        cr_assert_eq(n, want[i].at >= 0, "%s %llu", want[i].func,
                     (unsigned long long)want[i].seq);
        if (n) {
            cr_assert_eq(hit[0].event.id, ids[want[i].at], "%s %llu", want[i].func,
                         (unsigned long long)want[i].seq);
            cr_assert_eq(hit[0].position, (uint32_t)want[i].at, "stored by id, as put");
        }
    }
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 5, "one entry per run (and per piece of a trimmed run)");
    nsc_tmp_store_remove(dir);
}

Test(store, coll_index_later_block_wins_and_survives_retention)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_with(dir, 0, 2000000000ull);
    put_ar_range(st, 1000000000ull, 0, 1, 0, 9);
    put_ar_range(st, 2000000000ull, 0, 2, 4, 6);   /* inside block 1's run */
    put_ar_range(st, 3000000000ull, 0, 3, 8, 12);  /* over block 1's tail */
    const uint64_t before[14] = {1, 1, 1, 1, 2, 2, 2, 1, 3, 3, 3, 3, 3, 0};
    for (uint64_t s = 0; s < 14; s++)
        cr_assert_eq(marker_of(st, "AllReduce", s), before[s], "seq %llu", (unsigned long long)s);
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 4, "0-3 and 7 of block 1, 4-6, 8-12");

    /* Deleting block 1 takes what is left of its run, nothing of the others. */
    st = open_with(dir, 0, 2000000000ull);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 3500000000ull, &deleted), 0);
    cr_assert_eq(deleted, 1);
    const uint64_t after[14] = {0, 0, 0, 0, 2, 2, 2, 0, 3, 3, 3, 3, 3, 0};
    for (uint64_t s = 0; s < 14; s++)
        cr_assert_eq(marker_of(st, "AllReduce", s), after[s], "seq %llu", (unsigned long long)s);

    /* A block over all of them replaces them; deleting theirs leaves it whole. */
    put_ar_range(st, 4000000000ull, 0, 4, 0, 20);
    cr_assert_eq(nsc_store_retain(st, 5500000000ull, &deleted), 0);
    cr_assert_eq(deleted, 2);
    for (uint64_t s = 0; s <= 21; s++)
        cr_assert_eq(marker_of(st, "AllReduce", s), s <= 20 ? 4 : 0);
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 1);
    nsc_tmp_store_remove(dir);
}

Test(store, coll_index_retention_deletes_only_the_blocks_runs)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_with(dir, 0, 2000000000ull);
    coll_spec c[13];
    for (uint64_t s = 0; s < 10; s++)
        c[s] = (coll_spec){AR, s};
    for (uint64_t s = 0; s < 3; s++)
        c[10 + s] = (coll_spec){BC, s};
    put_colls(st, 1000000000ull, 0, 1, c, 13, NULL);
    put_ar_range(st, 3000000000ull, 1, 2, 0, 9);
    put_ar_range(st, 3000000000ull, 0, 3, 10, 19);
    nsc_store_coll_hit hits[4];
    cr_assert_eq(find(st, "AllReduce", 5, hits, 4), 2);
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 4);

    st = open_with(dir, 0, 2000000000ull);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 4500000000ull, &deleted), 0);
    cr_assert_eq(deleted, 1);
    cr_assert_eq(find(st, "AllReduce", 5, hits, 4), 1);
    cr_assert_eq(hits[0].rank, 1, "rank 1's block stays");
    cr_assert_eq(find(st, "AllReduce", 15, hits, 4), 1);
    cr_assert_eq(hits[0].rank, 0, "rank 0's later block stays");
    cr_assert_eq(find(st, "Broadcast", 1, hits, 4), 0);
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 2);
    nsc_tmp_store_remove(dir);
}

Test(store, coll_index_ranks_runs_span_many_blocks)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    /* Ranks 0 and 1 in every block of 10 collectives, rank 3 in every other. */
    for (uint64_t b = 0; b < 30; b++)
        for (int32_t r = 0; r < 4; r++)
            if (r < 2 || (r == 3 && b % 2 == 0))
                put_ar_range(st, b, r, b + 1, 10 * b, 10 * b + 9);
    for (uint64_t s = 0; s < 301; s++) {
        nsc_store_coll_hit hits[4];
        size_t n = find(st, "AllReduce", s, hits, 4), want = s == 300 ? 0 : s / 10 % 2 ? 2 : 3;
        cr_assert_eq(n, want, "seq %llu", (unsigned long long)s);
        for (size_t i = 0; i < n; i++) {
            cr_assert_eq(hits[i].rank, i < 2 ? (int32_t)i : 3);
            cr_assert_eq(hits[i].event.d.coll.count, s / 10 + 1, "its block");
        }
    }
    nsc_store_close(st);
    cr_assert_eq(coll_entries(dir), 75, "one per block");
    nsc_tmp_store_remove(dir);
}

Test(store, coll_index_corrupt_entry_is_reported)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    put_ar_range(st, 1, 0, 1, 0, 9);
    put_ar_range(st, 1, 1, 1, 0, 9);
    nsc_store_reader *rd;
    nsc_coll_key k = {0, COMM_A, 0, 0, 9};
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, "jobr", &k.job), 0);
    cr_assert_eq(nsc_store_str_id(rd, "AllReduce", &k.func), 0);
    nsc_store_read_end(rd);
    nsc_store_close(st);
    uint8_t key[NSC_KEY_COLL_LEN], good[NSC_COLL_VAL_LEN];
    nsc_key_coll(key, &k);
    nsc_raw_db r;
    cr_assert_eq(nsc_raw_open(dir, "colls", &r), 0);
    MDB_val mk = {sizeof key, key}, mv;
    cr_assert_eq(mdb_get(r.txn, r.dbi, &mk, &mv), 0);
    cr_assert_eq(mv.mv_size, sizeof good);
    memcpy(good, mv.mv_data, sizeof good);
    cr_assert_eq(nsc_raw_close(&r), 0);
    nsc_coll_val v;
    cr_assert_eq(nsc_coll_val_parse(good, sizeof good, &v), 0);
    cr_assert_eq(v.seq_first, 0);

    /* Each damage alone, then the good entry back. */
    enum { SHORT_VALUE, BAD_KEY, FIRST_PAST_LAST, POSITION_PAST_SEQ, POSITION_PAST_END,
           NO_BLOCK, NCASES };
    for (int c = 0; c < NCASES; c++) {
        uint8_t bad[NSC_COLL_VAL_LEN], badkey[NSC_KEY_COLL_LEN - 1];
        nsc_coll_val w = v;
        w.seq_first = c == FIRST_PAST_LAST ? 10 : w.seq_first;
        w.position = c == POSITION_PAST_SEQ ? 7 : c == POSITION_PAST_END ? 1000 : w.position;
        w.block[NSC_KEY_BLOCK_LEN - 1] ^= c == NO_BLOCK ? 0xff : 0;
        nsc_coll_val_put(bad, &w);
        memcpy(badkey, key, sizeof badkey);  /* sorts before the good key */
        if (c == BAD_KEY)
            cr_assert_eq(nsc_raw_put(dir, "colls", badkey, sizeof badkey, good, sizeof good, 0), 0);
        else
            cr_assert_eq(nsc_raw_put(dir, "colls", key, sizeof key, bad, c == SHORT_VALUE ? 32 : sizeof bad, 0), 0);
        st = open_store(dir, 0);
        nsc_store_coll_hit hits[4];
        size_t n;
        cr_assert_eq(find_rc(st, "AllReduce", 5, hits, 4, &n), NSC_STORE_ECORRUPT, "case %d", c);
        nsc_store_close(st);
        if (c == BAD_KEY)
            cr_assert_eq(nsc_raw_put(dir, "colls", badkey, sizeof badkey, NULL, 0, 1), 0);
        else
            cr_assert_eq(nsc_raw_put(dir, "colls", key, sizeof key, good, sizeof good, 0), 0);
    }
    st = open_store(dir, 0);
    nsc_store_coll_hit hits[4];
    cr_assert_eq(find(st, "AllReduce", 5, hits, 4), 2, "whole again");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(store, other_schema_is_refused)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    nsc_store_close(st);
    uint8_t v1[4] = {0, 0, 0, 1};  /* schema 1: one collective index entry per Coll */
    cr_assert_eq(nsc_raw_put(dir, "meta", "schema", 6, v1, sizeof v1, 0), 0);
    nsc_store_opts o = {0};
    cr_assert_eq(nsc_store_open(dir, &o, &st), NSC_STORE_ESCHEMA);
    o.read_only = 1;
    cr_assert_eq(nsc_store_open(dir, &o, &st), NSC_STORE_ESCHEMA);
    cr_assert_str_eq(nsc_store_strerror(NSC_STORE_ESCHEMA),
                     "store holds another schema version (another ncclscope release wrote it; "
                     "use a new directory)");
    nsc_tmp_store_remove(dir);
}

/* Schema 3 held the ledger's values of version 1, schema 4 its values by
 * chunk of seqs, which this build does not read; schema 5 no p2p index,
 * without which its Send/Recv reads would find none. */
Test(store, schemas_3_to_5_are_refused)
{
    for (uint8_t v = 3; v <= 5; v++) {
        char *dir = nsc_tmp_store_dir();
        nsc_store *st = open_store(dir, 0);
        nsc_store_close(st);
        uint8_t old[4] = {0, 0, 0, v};
        cr_assert_eq(nsc_raw_put(dir, "meta", "schema", 6, old, sizeof old, 0), 0);
        nsc_store_opts o = {0};
        cr_assert_eq(nsc_store_open(dir, &o, &st), NSC_STORE_ESCHEMA, "schema %u", v);
        nsc_tmp_store_remove(dir);
    }
}

/* ---- crash consistency ---------------------------------------------------- */

/* Writes numbered batches from `first` until killed; reports each batch whose
 * commit returned on fd. */
static void crash_child(const char *dir, int first, int fd)
{
    nsc_store_opts o = {0};
    o.initial_map = 64 << 10;  /* map growth happens under the kills too */
    nsc_store *st;
    if (nsc_store_open(dir, &o, &st))
        _exit(2);
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_proc p = nsc_test_proc("ret", "node0", 1, 0);
    nsc_ctx_def c = nsc_test_ctx(0, COMM_B, 0, 1);
    nsc_mix m;
    if (nsc_mix_init(&m, 6, 5))
        _exit(2);
    for (int i = first;; i++) {
        nsc_mix_clear(&m);
        m.seq = 5 * (uint64_t)i;
        for (int k = 0; k < 5; k++)
            nsc_mix_collective(&m, 0, 0);
        nsc_store_batch b = nsc_mix_batch(&m, &p, &c, 1, strs, NSC_MIX_NSTRS);
        if (nsc_store_begin(st, (uint64_t)i) || nsc_store_put(st, &b) || nsc_store_commit(st))
            _exit(3);
        if (write(fd, &i, sizeof i) != sizeof i)
            _exit(4);
    }
}

static int crash_rounds(void)
{
    const char *env = getenv("NSC_CRASH_ROUNDS");
    int n = env ? atoi(env) : 5;
    return n > 0 ? n : 5;
}

Test(store, kill9_keeps_every_acknowledged_batch, .timeout = 240)
{
    char *dir = nsc_tmp_store_dir();
    nsc_sim_rng r = {(uint64_t)time(NULL)};
    int next = 0, rounds = crash_rounds();
    static int present[1 << 16];
    for (int round = 0; round < rounds; round++) {
        int fds[2];
        cr_assert_eq(pipe(fds), 0);
        pid_t pid = fork();
        cr_assert_neq(pid, -1);
        if (pid == 0) {
            close(fds[0]);
            crash_child(dir, next, fds[1]);
        }
        close(fds[1]);
        struct timespec nap = {0, (long)nsc_sim_range(&r, 20e6, 200e6)};
        nanosleep(&nap, NULL);
        kill(pid, SIGKILL);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status), "child ended by itself: status %d", status);
        int acked = next - 1, i;
        while (read(fds[0], &i, sizeof i) == sizeof i)
            acked = i;
        close(fds[0]);
        cr_assert_lt(acked + 2, 1 << 16);

        /* Reopen: every acknowledged batch is there, whole, with its index;
         * nothing after the first missing batch is. */
        nsc_store *st = open_store(dir, 0);
        present_batches(st, acked + 2, present);
        int have = 0;
        while (have < acked + 2 && present[have])
            have++;
        cr_assert_geq(have, acked + 1, "round %d: acked up to %d, present up to %d", round,
                      acked, have - 1);
        for (int k = have; k < acked + 2; k++)
            cr_assert_eq(present[k], 0);
        nsc_store_stats s = nsc_test_stats(st);
        cr_assert_eq(s.blocks, (uint64_t)have, "one block per batch");
        cr_assert_eq(scan_all(st, job_id(st, "ret"), COMM_B, 0, 0, UINT64_MAX).n, s.events);
        nsc_store_close(st);
        next = have;
    }
    nsc_tmp_store_remove(dir);
}

/* A reader of the records that start from t on steps over the blocks whose
 * records all end before t (nsc_store_blocks_skip_before), undecoded, where
 * open reaches max_span back: here a long event's block (its max_span) is
 * read, a short one that ended before t is not, the one after t is. */
Test(store, blocks_that_end_before_t_are_skipped)
{
    char *dir = nsc_tmp_store_dir();
    nsc_store *st = open_store(dir, 0);
    nsc_proc p = nsc_test_proc("job1", "node0", 100, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM_A, 0, 2);
    static const nsc_event evs[3] = {{.id = 1, .start_ns = 1000, .stop_ns = 1000000000, .type = NSC_T_COLL},
                                     {.id = 2, .start_ns = 2000, .stop_ns = 3000, .type = NSC_T_COLL},
                                     {.id = 3, .start_ns = 5000000, .stop_ns = 5000100, .type = NSC_T_COLL}};
    for (int i = 0; i < 3; i++) {
        nsc_store_batch b = {&p, &ctx, 1, NULL, 0, &evs[i], 1, NULL, 0, NULL, 0};
        commit_batch(st, 1 + (uint64_t)i, &b);
    }
    nsc_store_reader *rd;
    nsc_store_blocks *it;
    nsc_block_key k;
    nsc_block blk;
    uint32_t job;
    uint64_t ids[3] = {0}, n = 0;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, "job1", &job), 0);
    cr_assert_eq(nsc_store_blocks_open(rd, job, COMM_A, 0, 4000000, UINT64_MAX, &it), 0);
    while (nsc_store_blocks_skip_before(it, 4000000) == 0 && nsc_store_blocks_next(it, &k, &blk) == 0) {
        cr_assert_lt(n, 3);
        ids[n++] = blk.events[0].id;
        nsc_block_release(&blk);
    }
    nsc_store_blocks_close(it);
    nsc_store_read_end(rd);
    cr_assert_eq(n, 2, "read %" PRIu64 " blocks", n);
    cr_assert_eq(ids[0], 1);
    cr_assert_eq(ids[1], 3);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
