/* The store's ledger: the value format's round trip and its refusal of
 * damaged values, the upsert rule (in-flight replaced, completed kept),
 * window reads in (seq, rank) order, retention, malformed records refused
 * and counted beside good ones, and exact counts when a transaction is
 * replayed after the map grew. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ledger_pack.h"
#include "storeutil.h"

#define COMM 0x5f65f7aca7835f1ull

static const nsc_str_def strs[] = {{1, "AllReduce"}, {2, "ncclFloat32"}, {3, "Ring"}, {4, "Simple"}};

/* A completed record of (seq, rank) with plausible times and e edges. */
static nsc_ledger_rec rec(uint64_t seq, int32_t rank, nsc_ledger_edge *edges, uint32_t e)
{
    uint64_t t = 1000000000ull + seq * 1250000ull + (uint64_t)rank * 777;
    nsc_ledger_rec r = {.comm_id = COMM, .seq = seq, .rank = rank, .func = 1, .datatype = 2,
                        .algo = 3, .proto = 4, .count = 1 << 20, .bytes = 4 << 20, .root = -1,
                        .peer = -1, .nchannels = 2, .api_ns = t, .enqueue_ns = t + 900,
                        .launch_ns = t + 5100 + seq % 7, .done_ns = t + 81000 + seq * 3 % 500,
                        .gpu_start_ns = t + 9000, .gpu_end_ns = t + 79000 - seq % 11,
                        .gpu_spread_ns = 1200, .gpu_err_ns = 1800, .nchannels_done = 2};
    for (uint32_t i = 0; i < e; i++)
        edges[i] = (nsc_ledger_edge){.peer = (rank + 1) % 8, .channel = (uint8_t)i, .is_send = 1,
                                     .last_step = -1, .steps = 8, .bytes = 1 << 19,
                                     .step_sum_ns = 60000 + seq, .step_max_ns = 9000,
                                     .wait_recv_ns = 3000 + i};
    r.nedges = e;
    r.edges = e ? edges : NULL;
    return r;
}

static nsc_ledger_batch batch_of(nsc_ledger_rec *recs, uint32_t n)
{
    return (nsc_ledger_batch){.pid = 42, .nstrs = 4, .nrecs = n, .strs = strs, .recs = recs};
}

/* Field by field: the structs have padding. */
#define EQ_FIELD(a, kind, m, ...) cr_assert_eq((a)->m, b->m, "seq %lu rank %d: " #m, (unsigned long)a->seq, a->rank);
#define EQ_EDGE_FIELD(a, kind, m, ...) cr_assert_eq(ea->m, eb->m, "edge " #m);

static void eq_rec(const nsc_ledger_rec *a, const nsc_ledger_rec *b)
{
    NSC_FIELDS_LEDGER(EQ_FIELD, a)
    cr_assert_eq(a->nedges, b->nedges);
    for (uint32_t i = 0; i < a->nedges; i++) {
        const nsc_ledger_edge *ea = &a->edges[i], *eb = &b->edges[i];
        NSC_FIELDS_LEDGER_EDGE(EQ_EDGE_FIELD, _)
    }
}

/* ---- the value format ---------------------------------------------------- */

Test(ledger_pack, round_trip_and_compact)
{
    nsc_ledger_edge edges[32][4];
    nsc_ledger_rec recs[32];
    const nsc_ledger_rec *p[32];
    for (int i = 0; i < 32; i++) {
        recs[i] = rec(64 + (uint64_t)i, 3, edges[i], (uint32_t)(i % 5 == 4 ? 0 : i % 4));
        p[i] = &recs[i];
    }
    recs[7].flags = NSC_LEDGER_INFLIGHT;
    recs[7].done_ns = 0;
    recs[9].api_ns = 0;
    nsc_ledger_key k = {1, COMM, 2, 3};
    uint8_t *buf = malloc(nsc_lpack_bound(p, 32));
    size_t len = nsc_lpack_encode(&k, p, 32, buf);
    nsc_lpack l = {0};
    cr_assert_eq(nsc_lpack_decode(&k, buf, len, &l), 0);
    cr_assert_eq(l.n, 32);
    for (int i = 0; i < 32; i++)
        eq_rec(&l.recs[i], &recs[i]);
    /* without edges, a regular collective costs a few bytes a time */
    nsc_ledger_rec plain[32];
    for (int i = 0; i < 32; i++)
        plain[i] = rec(64 + (uint64_t)i, 3, NULL, 0), p[i] = &plain[i];
    len = nsc_lpack_encode(&k, p, 32, buf);
    cr_expect_leq(len / 32, 24, "%zu bytes a record", len / 32);
    nsc_lpack_free(&l);
    free(buf);
}

/* A steady collective (the next seq, the same interval, the same edge count)
 * costs one byte, its bitmap: nothing for its seq or its edge count. */
Test(ledger_pack, steady_records_cost_their_bitmap)
{
    nsc_ledger_rec recs[32];
    const nsc_ledger_rec *p[32];
    for (int i = 0; i < 32; i++) {
        recs[i] = rec(64 + (uint64_t)i, 3, NULL, 0);
        recs[i].launch_ns = recs[i].api_ns + 5100;
        recs[i].done_ns = recs[i].api_ns + 81000;
        recs[i].gpu_end_ns = recs[i].api_ns + 79000;
        p[i] = &recs[i];
    }
    nsc_ledger_key k = {1, COMM, 2, 3};
    uint8_t buf[4096];
    /* the fourth record on: the second sets the chain's interval, the third
     * the bitmap without the API call's bit */
    size_t three = nsc_lpack_encode(&k, p, 3, buf), all = nsc_lpack_encode(&k, p, 32, buf);
    cr_expect_eq(all - three, 29, "%zu bytes for 29 steady records", all - three);
    nsc_lpack l = {0};
    cr_assert_eq(nsc_lpack_decode(&k, buf, all, &l), 0);
    cr_assert_eq(l.n, 32);
    for (int i = 0; i < 32; i++)
        eq_rec(&l.recs[i], &recs[i]);
    nsc_lpack_free(&l);
}

/* The bytes of the second of two records with e edges each, the second's
 * edges alike but for their channel, far from the first's. */
static size_t second_record_bytes(uint32_t e)
{
    nsc_ledger_edge edges[2][4];
    nsc_ledger_rec recs[2] = {rec(64, 3, edges[0], e), rec(65, 3, edges[1], e)};
    const nsc_ledger_rec *p[2] = {&recs[0], &recs[1]};
    for (uint32_t i = 0; i < e; i++) {
        edges[1][i].step_sum_ns = 900000 + i;
        edges[1][i].step_max_ns = 700000 + i;
        edges[1][i].wait_recv_ns = 800000 + i;
    }
    nsc_ledger_key k = {1, COMM, 2, 3};
    uint8_t buf[4096];
    size_t one = nsc_lpack_encode(&k, p, 1, buf), two = nsc_lpack_encode(&k, p, 2, buf);
    nsc_lpack l = {0};
    cr_assert_eq(nsc_lpack_decode(&k, buf, two, &l), 0);
    for (int i = 0; i < 2; i++)
        eq_rec(&l.recs[i], &recs[i]);
    nsc_lpack_free(&l);
    return two - one;
}

/* A collective's channels move alike while its times jump from the one
 * before: an edge after the first is told against the edge before it, so
 * three alike edges cost their bitmap and a byte per changed field. */
Test(ledger_pack, alike_channels_told_against_each_other)
{
    size_t extra = second_record_bytes(4) - second_record_bytes(1);
    cr_expect_leq(extra, 3 * (2 + 3), "%zu bytes for three alike edges", extra);
}

/* Records appended to a value are told on from its last: the same bytes as
 * the value told at once; a seq's records stay together, and a value that
 * is full takes none. */
Test(ledger_pack, appended_as_told_at_once)
{
    nsc_ledger_edge edges[40][3];
    nsc_ledger_rec recs[40];
    const nsc_ledger_rec *p[40];
    for (int i = 0; i < 40; i++) {
        recs[i] = rec(64 + (uint64_t)i / 2, 3, edges[i], (uint32_t)(i % 3));
        recs[i].peer = i % 2;  /* two records a seq */
        p[i] = &recs[i];
    }
    nsc_ledger_key k = {1, COMM, 64, 3};
    uint8_t once[8192], part[8192], out[16384];
    size_t all = nsc_lpack_encode(&k, p, 40, once), taken;
    size_t first = nsc_lpack_encode(&k, p, 10, part);
    nsc_lpack l = {0};
    cr_assert_eq(nsc_lpack_decode(&k, part, first, &l), 0);
    nsc_lpack_end end = nsc_lpack_ending(&l), after;
    size_t len = nsc_lpack_append_fit(part, first, &end, p + 10, 30, SIZE_MAX, out, &taken, &after);
    cr_assert_eq(taken, 30);
    cr_assert_eq(after.n, 40);
    cr_assert_eq(after.last, p[39]);
    cr_assert_eq(len, all);
    cr_assert_arr_eq(out, once, all);
    /* room for a few more: whole seqs only */
    len = nsc_lpack_append_fit(part, first, &end, p + 10, 30, first + 40, out, &taken, &after);
    cr_assert_eq(taken % 2, 0, "%zu records taken", taken);
    cr_assert_lt(taken, 30);
    cr_assert_leq(len, first + 40);
    size_t full = nsc_lpack_append_fit(part, first, &end, p + 10, 30, first, once, &taken, &after);
    cr_assert_eq(taken, 0);
    cr_assert_eq(full, first);
    nsc_lpack_clear(&l);
    cr_assert_eq(nsc_lpack_decode(&k, out, len, &l), 0);
    cr_assert_eq(l.n, 10 + taken);
    for (size_t i = 0; i < l.n; i++)
        eq_rec(&l.recs[i], &recs[i]);
    nsc_lpack_free(&l);
}

Test(ledger_pack, damaged_values_refused)
{
    nsc_ledger_edge edges[8][3];
    nsc_ledger_rec recs[8];
    const nsc_ledger_rec *p[8];
    for (int i = 0; i < 8; i++)
        recs[i] = rec(32 + (uint64_t)i, 0, edges[i], 3), p[i] = &recs[i];
    nsc_ledger_key k = {1, COMM, 1, 0};
    uint8_t buf[4096], bad[4096];
    size_t len = nsc_lpack_encode(&k, p, 8, buf);
    nsc_lpack l = {0};
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_neq(nsc_lpack_decode(&k, buf, cut, &l), 0, "cut at %zu", cut);
    cr_assert_eq(l.n, 0);
    /* records out of order, or one seq twice */
    const nsc_ledger_rec *twice[2] = {p[3], p[3]}, *backwards[2] = {p[4], p[3]};
    size_t tl = nsc_lpack_encode(&k, twice, 2, bad);
    cr_assert_eq(nsc_lpack_decode(&k, bad, tl, &l), NSC_STORE_ECORRUPT);
    tl = nsc_lpack_encode(&k, backwards, 2, bad);
    cr_assert_eq(nsc_lpack_decode(&k, bad, tl, &l), NSC_STORE_ECORRUPT);
    /* a zeroed edge is its bitmap alone, the value's last two bytes: the
     * first edge told against an edge before it, or a bit past that one */
    nsc_ledger_edge zero = {0};
    nsc_ledger_rec one = *p[0];
    one.nedges = 1, one.edges = &zero;
    const nsc_ledger_rec *op = &one;
    tl = nsc_lpack_encode(&k, &op, 1, bad);
    cr_assert_eq(nsc_lpack_decode(&k, bad, tl, &l), 0);
    nsc_lpack_clear(&l);
    for (uint8_t bit = 0x40; bit; bit <<= 1) {
        bad[tl - 1] ^= bit;
        cr_assert_eq(nsc_lpack_decode(&k, bad, tl, &l), NSC_STORE_ECORRUPT, "bit %#x", bit);
        bad[tl - 1] ^= bit;
    }
    /* a seq before the key's first */
    nsc_ledger_rec far = *p[0];
    far.seq = k.first - 1;
    const nsc_ledger_rec *fp = &far;
    tl = nsc_lpack_encode(&k, &fp, 1, bad);
    cr_assert_eq(nsc_lpack_decode(&k, bad, tl, &l), NSC_STORE_ECORRUPT);
    memcpy(bad, buf, len);
    bad[0] = 99;
    cr_assert_eq(nsc_lpack_decode(&k, bad, len, &l), NSC_STORE_ECORRUPT);
    /* any byte changed: refused, or decoded to records from the key's first seq */
    for (size_t i = 1; i < len; i++) {
        memcpy(bad, buf, len);
        bad[i] ^= 0x5a;
        nsc_lpack_clear(&l);
        if (nsc_lpack_decode(&k, bad, len, &l) == 0)
            for (size_t j = 0; j < l.n; j++)
                cr_assert_geq(l.recs[j].seq, k.first);
    }
    nsc_lpack_free(&l);
}

/* ---- the store ----------------------------------------------------------- */

static nsc_proc proc;

static nsc_store_ledger_counts put_commit(nsc_store *st, uint64_t now, nsc_ledger_rec *recs, uint32_t n)
{
    nsc_ledger_batch b = batch_of(recs, n);
    nsc_store_ledger l = {&proc, &b, {0}};
    cr_assert_eq(nsc_store_begin(st, now), 0);
    int rc = nsc_store_put_ledger(st, &l);
    cr_assert_eq(rc, 0, "put: %s", nsc_store_strerror(rc));
    rc = nsc_store_commit(st);
    cr_assert_eq(rc, 0, "commit: %s", nsc_store_strerror(rc));
    return l.counts;
}

typedef struct got {
    nsc_ledger_rec recs[4096];
    size_t n;
} got;

static int collect(void *arg, const nsc_ledger_rec *r)
{
    got *g = arg;
    cr_assert_lt(g->n, 4096);
    g->recs[g->n] = *r;
    g->recs[g->n++].edges = NULL;
    return 0;
}

static got *read_window(nsc_store *st, uint64_t seq_lo, uint64_t seq_hi, int32_t rank_lo, int32_t rank_hi)
{
    static got g;
    nsc_store_reader *rd;
    uint32_t job;
    g.n = 0;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_job_id(rd, "job", &job), 0);
    nsc_store_ledger_q q = {job, COMM, seq_lo, seq_hi, rank_lo, rank_hi};
    cr_assert_eq(nsc_store_ledger_read(rd, &q, collect, &g), 0);
    nsc_store_read_end(rd);
    return &g;
}

static char *dir;
static nsc_store *st;

static void setup(void)
{
    proc = nsc_test_proc("job", "node0", 42, 0);
    st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
}

static void teardown(void)
{
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

Test(ledger_store, upsert_rules, .init = setup, .fini = teardown)
{
    nsc_ledger_rec r[2] = {rec(5, 1, NULL, 0), rec(6, 1, NULL, 0)};
    r[0].flags = NSC_LEDGER_INFLIGHT;
    r[0].done_ns = 0;
    nsc_store_ledger_counts c = put_commit(st, 10, r, 2);
    cr_assert_eq(c.stored, 2);
    cr_assert_eq(c.replaced + c.stale + c.rejected, 0);
    /* a later in-flight snapshot replaces the earlier one */
    r[0].dropped = 3;
    c = put_commit(st, 11, r, 1);
    cr_assert_eq(c.replaced, 1);
    cr_assert_eq(read_window(st, 5, 5, 1, 1)->recs[0].dropped, 3);
    /* the completed record replaces it */
    nsc_ledger_rec done = rec(5, 1, NULL, 0);
    c = put_commit(st, 12, &done, 1);
    cr_assert_eq(c.replaced, 1);
    /* an in-flight record that comes later never replaces a completed one */
    c = put_commit(st, 13, r, 1);
    cr_assert_eq(c.stale, 1);
    cr_assert_eq(c.stored + c.replaced, 0);
    got *g = read_window(st, 0, 100, 0, 100);
    cr_assert_eq(g->n, 2);
    eq_rec(&g->recs[0], &done);
    /* in one batch too: completed then in-flight keeps the completed */
    nsc_ledger_rec both[2] = {rec(9, 1, NULL, 0), rec(9, 1, NULL, 0)};
    both[1].flags = NSC_LEDGER_INFLIGHT;
    c = put_commit(st, 14, both, 2);
    cr_assert_eq(c.stored, 1);
    cr_assert_eq(c.stale, 1);
    g = read_window(st, 9, 9, 1, 1);
    cr_assert_eq(g->n, 1);
    cr_assert_eq(g->recs[0].flags, 0);
    cr_assert_eq(nsc_test_stats(st).ledger_records, 3);
}

Test(ledger_store, window_in_seq_rank_order, .init = setup, .fini = teardown)
{
    static nsc_ledger_edge edges[8 * 100][2];
    static nsc_ledger_rec r[8 * 100];
    uint32_t n = 0;
    /* ranks put in reverse, seqs across chunk boundaries */
    for (int rank = 7; rank >= 0; rank--)
        for (uint64_t seq = 0; seq < 100; seq++, n++)
            r[n] = rec(seq, rank, edges[n], (uint32_t)(seq % 3));
    nsc_store_ledger_counts c = put_commit(st, 1, r, n);
    cr_assert_eq(c.stored, 800);
    got *g = read_window(st, 30, 70, 2, 5);
    cr_assert_eq(g->n, 41 * 4);
    for (size_t i = 0; i < g->n; i++) {
        cr_assert_eq(g->recs[i].seq, 30 + i / 4);
        cr_assert_eq(g->recs[i].rank, 2 + (int)(i % 4));
        cr_assert_eq(g->recs[i].nedges, g->recs[i].seq % 3);
    }
    cr_assert_eq(read_window(st, 99, UINT64_MAX, INT32_MIN, INT32_MAX)->n, 8);
    cr_assert_eq(read_window(st, 100, 1000, 0, 7)->n, 0);
    cr_assert_eq(read_window(st, 0, 99, 8, 9)->n, 0);
    nsc_store_stats s = nsc_test_stats(st);
    cr_assert_eq(s.ledger_records, 800);
    cr_assert_gt(s.ledger_bytes, 0);
}

Test(ledger_store, malformed_records_counted_rest_stored, .init = setup, .fini = teardown)
{
    nsc_ledger_rec r[5] = {rec(1, 0, NULL, 0), rec(2, 0, NULL, 0), rec(3, 0, NULL, 0), rec(4, 0, NULL, 0),
                           rec(5, 0, NULL, 0)};
    r[1].rank = -2;
    r[2].func = 9; /* a string the process never defined */
    r[3].flags = 1u << 20;
    nsc_store_ledger_counts c = put_commit(st, 1, r, 5);
    cr_assert_eq(c.rejected, 3);
    cr_assert_eq(c.stored, 2);
    got *g = read_window(st, 0, 10, -10, 10);
    cr_assert_eq(g->n, 2);
    cr_assert_eq(g->recs[0].seq, 1);
    cr_assert_eq(g->recs[1].seq, 5);
}

/* An agent started after the process defined its contexts and strings
 * sends comm_id 0 with the context index, and string ids it does not
 * define: the process's own definitions (from its event batches) name them. */
Test(ledger_store, resolved_through_the_process_definitions, .init = setup, .fini = teardown)
{
    nsc_ctx_def ctx = nsc_test_ctx(7, COMM, 3, 8);
    nsc_store_batch events = {.proc = &proc, .ctxs = &ctx, .nctxs = 1, .strs = strs, .nstrs = 4};
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_put(st, &events), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_ledger_rec r[2] = {rec(40, -1, NULL, 0), rec(41, -1, NULL, 0)};
    r[0].comm_id = r[1].comm_id = 0;
    r[0].ctx = 7;
    r[1].ctx = 8; /* never defined */
    nsc_ledger_batch b = {.pid = 42, .nrecs = 2, .recs = r};  /* no strings of its own */
    nsc_store_ledger l = {&proc, &b, {0}};
    cr_assert_eq(nsc_store_begin(st, 2), 0);
    cr_assert_eq(nsc_store_put_ledger(st, &l), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    cr_assert_eq(l.counts.stored, 1);
    cr_assert_eq(l.counts.rejected, 1);
    got *g = read_window(st, 0, 100, 0, 100);
    cr_assert_eq(g->n, 1);
    cr_assert_eq(g->recs[0].rank, 3);
    cr_assert_eq(g->recs[0].comm_id, COMM);
    nsc_store_reader *rd;
    char text[64];
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_str(rd, g->recs[0].func, text, sizeof text), 0);
    nsc_store_read_end(rd);
    cr_assert_str_eq(text, "AllReduce");
}

Test(ledger_store, find_proc, .init = setup, .fini = teardown)
{
    nsc_store_batch b = {.proc = &proc};
    nsc_proc later = nsc_test_proc("job2", "node0", 42, 1), p;
    nsc_store_batch b2 = {.proc = &later};
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    cr_assert_eq(nsc_store_put(st, &b), 0);
    cr_assert_eq(nsc_store_put(st, &b2), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_reader *rd;
    cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
    cr_assert_eq(nsc_store_find_proc(rd, "node0", 42, &p), 0);
    cr_assert_str_eq(p.job, "job2");  /* the pid came back in a later job */
    cr_assert_str_eq(p.host, "node0");
    cr_assert_eq(nsc_store_find_proc(rd, "node0", 43, &p), NSC_STORE_ENOTFOUND);
    cr_assert_eq(nsc_store_find_proc(rd, "node", 42, &p), NSC_STORE_ENOTFOUND);
    nsc_store_read_end(rd);
}

Test(ledger_store, retention_by_age, .init = setup, .fini = teardown)
{
    nsc_store_close(st);
    nsc_store_opts o = {.retain_age_ns = 1000};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    nsc_ledger_rec old[2] = {rec(1, 0, NULL, 0), rec(40, 0, NULL, 0)}, young = rec(80, 1, NULL, 0);
    put_commit(st, 100, old, 2);
    put_commit(st, 5000, &young, 1);
    /* a value is as old as its first write: a later record does not make it young */
    nsc_ledger_rec late = rec(80, 0, NULL, 0);
    put_commit(st, 5000, &late, 1);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 5500, &deleted), 0);
    cr_assert_eq(deleted, 1);
    got *g = read_window(st, 0, 1000, 0, 1);
    cr_assert_eq(g->n, 1);
    cr_assert_eq(g->recs[0].seq, 80);
    cr_assert_eq(nsc_test_stats(st).ledger_records, 1);
}

Test(ledger_store, counts_exact_when_replayed, .init = setup, .fini = teardown)
{
    nsc_store_close(st);
    nsc_store_opts o = {.initial_map = 64 << 10};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    static nsc_ledger_edge edges[4000][4];
    static nsc_ledger_rec r[4000];
    for (uint32_t i = 0; i < 4000; i++)
        r[i] = rec(i / 8, (int32_t)(i % 8), edges[i], 4);
    nsc_store_ledger_counts c = put_commit(st, 1, r, 4000);
    cr_assert_eq(c.stored, 4000);
    cr_assert_eq(c.replaced, 0);
    cr_assert_eq(nsc_test_stats(st).ledger_records, 4000);
}

/* The writer appends to a value it wrote without reading it, as long as
 * the stored bytes are the ones it wrote: here a rewrite of the value's
 * last record to the same length, aborted, leaves the stored value
 * different from the one last written, and the next record must be told
 * against the stored one. */
Test(ledger_store, appended_to_the_stored_value_not_the_aborted_one, .init = setup, .fini = teardown)
{
    nsc_ledger_rec r[11];
    for (int i = 0; i < 11; i++)
        r[i] = rec((uint64_t)i, 1, NULL, 0);
    r[9].count += 1;  /* a one-byte difference, as the rewrite's */
    put_commit(st, 10, r, 10);
    nsc_ledger_rec rewrite = r[9];
    rewrite.count -= 2;
    nsc_ledger_batch b = batch_of(&rewrite, 1);
    nsc_store_ledger l = {&proc, &b, {0}};
    cr_assert_eq(nsc_store_begin(st, 11), 0);
    cr_assert_eq(nsc_store_put_ledger(st, &l), 0);
    cr_assert_eq(l.counts.replaced, 1);
    nsc_store_abort(st);
    put_commit(st, 12, &r[10], 1);
    got *g = read_window(st, 0, 100, 1, 1);
    cr_assert_eq(g->n, 11);
    for (size_t i = 0; i < g->n; i++)
        eq_rec(&g->recs[i], &r[i]);
}

/* Records come a few at a time per rank, as an agent sends them: each
 * rank's newest value fills to one page and the next starts, so the pages
 * hold the values' bytes, not half of it; every record reads back in
 * (seq, rank) order across the values' seams. */
Test(ledger_store, values_fill_their_pages, .init = setup, .fini = teardown)
{
    enum { RANKS = 8, SEQS = 3000, PER_PUT = 6 };
    static nsc_ledger_edge edges[RANKS * PER_PUT][2];
    nsc_ledger_rec r[RANKS * PER_PUT];
    for (uint64_t s0 = 0; s0 < SEQS; s0 += PER_PUT) {
        uint32_t n = 0;
        for (int32_t rank = 0; rank < RANKS; rank++)
            for (uint64_t seq = s0; seq < s0 + PER_PUT; seq++, n++) {
                r[n] = rec(seq, rank, edges[n], rank % 2 ? 0 : 2);
                r[n].gpu_spread_ns = (uint32_t)(seq * 7919 % 4099);  /* a few bytes that do not repeat */
            }
        put_commit(st, 1 + s0, r, n);
    }
    nsc_store_stats s = nsc_test_stats(st);
    cr_assert_eq(s.ledger_records, RANKS * SEQS);
    /* each rank's newest value may be part full: a page each at most */
    cr_expect_leq(s.ledger_live_bytes, s.ledger_bytes + s.ledger_bytes / 16 + (RANKS + 2) * 4096,
                  "%lu B of pages for %lu B of values", (unsigned long)s.ledger_live_bytes,
                  (unsigned long)s.ledger_bytes);
    got *g = read_window(st, 37, 800, 2, 6);
    cr_assert_eq(g->n, (800 - 37 + 1) * 5);
    for (size_t i = 0; i < g->n; i++) {
        cr_assert_eq(g->recs[i].seq, 37 + i / 5);
        cr_assert_eq(g->recs[i].rank, 2 + (int)(i % 5));
        cr_assert_eq(g->recs[i].nedges, g->recs[i].rank % 2 ? 0 : 2);
    }
    /* a late record of a full value replaces its own, found by a one-seq window */
    nsc_ledger_rec late = rec(100, 3, NULL, 0);
    late.dropped = 9;
    cr_assert_eq(put_commit(st, 5000, &late, 1).replaced, 1);
    g = read_window(st, 100, 100, 0, INT32_MAX);
    cr_assert_eq(g->n, RANKS);
    cr_assert_eq(g->recs[3].dropped, 9);
    cr_assert_eq(nsc_test_stats(st).ledger_records, RANKS * SEQS);
}

/* The longest value of the ledger database in dir, its store closed. */
static size_t longest_value(const char *dir)
{
    nsc_raw_db r;
    MDB_cursor *cur;
    MDB_val k, v;
    size_t most = 0;
    cr_assert_eq(nsc_raw_open(dir, "ledger", &r), 0);
    cr_assert_eq(mdb_cursor_open(r.txn, r.dbi, &cur), 0);
    while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
        most = v.mv_size > most ? v.mv_size : most;
    mdb_cursor_close(cur);
    cr_assert_eq(nsc_raw_close(&r), 0);
    return most;
}

/* A rank's seqs from two ranges (two jobs' agents, a wrapped count): the
 * earlier range's value is not the rank's last, and it fills to a page like
 * the last does, then starts the next, below the later range. */
Test(ledger_store, values_of_an_earlier_range_fill_a_page_too, .init = setup, .fini = teardown)
{
    nsc_ledger_rec far = rec(1000000, 0, NULL, 0), r[8];
    put_commit(st, 1, &far, 1);
    for (uint64_t s0 = 0; s0 < 2000; s0 += 8) {
        for (int i = 0; i < 8; i++)
            r[i] = rec(s0 + (uint64_t)i, 0, NULL, 0), r[i].gpu_spread_ns = (uint32_t)((s0 + (uint64_t)i) * 7919 % 4099);
        put_commit(st, 2 + s0, r, 8);
    }
    got *g = read_window(st, 0, UINT64_MAX, 0, 0);
    cr_assert_eq(g->n, 2001);
    cr_assert_eq(g->recs[2000].seq, 1000000);
    nsc_store_close(st);
    cr_expect_leq(longest_value(dir), 4096 - 16);
    nsc_store_opts o = {0};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
}
