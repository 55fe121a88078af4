/* test_p2p.c: the p2p endpoint on a store written through the real writer
 * with known pairs: rank 0 sends 3 times to rank 1, which posts 4 Recvs
 * from 0 (the 4th Send never came), stored out of start order; rank 1 sends
 * twice to rank 2, whose second Recv is half the size; rank 2 sends once to
 * rank 0, which never receives it. A read from the settled_ns of any
 * earlier read pairs as the whole job does. The read decodes the blocks that
 * hold a P2p event and no other. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "qfixture.h"
#include "qjson.h"
#include "query.h"
#include "storeutil.h"

#define COMM 0x55ull
#define RANKS 3
#define T0 1000000000000ull

enum { S_SEND = 1, S_RECV, S_FLOAT32, S_ALLREDUCE, NSTRS = 4 };

typedef struct op {
    int rank, peer, recv;
    uint64_t start, count;
} op;

static const op ops[] = {
    {0, 1, 0, T0, 256},        {0, 1, 0, T0 + 1000, 256}, {0, 1, 0, T0 + 2000, 256},
    /* rank 1's Recvs by id run backwards in time: matching goes by start */
    {1, 0, 1, T0 + 3300, 256}, {1, 0, 1, T0 + 2300, 256}, {1, 0, 1, T0 + 1300, 256},
    {1, 0, 1, T0 + 300, 256},  {1, 2, 0, T0 + 5000, 256}, {1, 2, 0, T0 + 6000, 256},
    {2, 1, 1, T0 + 4900, 256}, {2, 1, 1, T0 + 5900, 128}, {2, 0, 0, T0 + 8000, 64},
};
#define NOPS (sizeof ops / sizeof *ops)

/* The operations v[0..n) in one commit, their event ids from id0. */
static void put_ops(nsc_store *st, const op *v, size_t n, uint64_t id0)
{
    static const char *const text[NSTRS] = {"Send", "Recv", "ncclFloat32", "AllReduce"};
    nsc_str_def sd[NSTRS];
    for (int i = 0; i < NSTRS; i++) {
        memset(&sd[i], 0, sizeof sd[i]);
        sd[i].id = (nsc_str)(i + 1);
        snprintf(sd[i].text, sizeof sd[i].text, "%s", text[i]);
    }
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    for (int r = 0; r < RANKS; r++) {
        nsc_event ev[16];
        size_t k = 0;
        for (size_t i = 0; i < n && k < sizeof ev / sizeof *ev; i++) {
            if (v[i].rank != r)
                continue;
            nsc_event *e = &ev[k++];
            memset(e, 0, sizeof *e);
            e->id = id0 + i;
            e->start_ns = v[i].start;
            e->stop_ns = v[i].start + 50;
            e->rank = r;
            if (v[i].peer < 0) { /* a collective */
                e->type = NSC_T_COLL;
                e->d.coll.func = S_ALLREDUCE;
                e->d.coll.seq = i;
                continue;
            }
            e->type = NSC_T_P2P;
            e->d.p2p.func = v[i].recv ? S_RECV : S_SEND;
            e->d.p2p.datatype = S_FLOAT32;
            e->d.p2p.peer = v[i].peer;
            e->d.p2p.count = v[i].count;
        }
        if (!k)
            continue;
        nsc_proc p = nsc_test_proc("pairs", "h", 600 + (uint32_t)r, r);
        nsc_ctx_def ctx = nsc_test_ctx(0, COMM, r, RANKS);
        nsc_store_batch b = {&p, &ctx, 1, sd, NSTRS, ev, k, NULL, 0, NULL, 0};
        cr_assert_eq(nsc_store_put(st, &b), 0);
    }
    cr_assert_eq(nsc_store_commit(st), 0);
}

static void fill(nsc_store *st)
{
    put_ops(st, ops, NOPS, 10);
}

/* The pair object of direction from -> to. */
static const nsc_json *pair(const nsc_json *root, int from, int to)
{
    const nsc_json *pairs = nsc_json_get(root, "pairs");
    for (uint32_t i = 0; i < pairs->count; i++) {
        const nsc_json *p = nsc_json_at(pairs, i);
        if (qj_i64(p, "from") == from && qj_i64(p, "to") == to)
            return p;
    }
    cr_assert_fail("no pair %d -> %d", from, to);
    return NULL;
}

/* The p2p document of qs into d, res holding its text. */
static const nsc_json *p2p_doc(nsc_store *st, const char *qs, qf_result *res, nsc_json_doc *d)
{
    nsc_json_error e;
    *res = qf_run(st, "p2p", qs);
    cr_assert_eq(res->rc, 0, "%s", res->err);
    cr_assert_eq(nsc_json_parse(res->text, res->len, NULL, d, &e), 0, "%s: %s", e.msg, res->text);
    return nsc_json_root(d);
}

Test(p2p, pairs_matched_in_order_with_the_missing_send_reported)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    fill(st);
    qf_result res;
    nsc_json_doc d;
    const nsc_json *o = p2p_doc(st, "comm=0x55", &res, &d);
    cr_assert_eq(qj_i64(o, "sends"), 6);
    cr_assert_eq(qj_i64(o, "recvs"), 6);
    cr_assert_eq(qj_i64(o, "matched"), 5);
    cr_assert_eq(qj_i64(o, "unmatched_sends"), 1);
    cr_assert_eq(qj_i64(o, "unmatched_recvs"), 1);
    cr_assert_eq(qj_i64(o, "size_mismatches"), 1);
    cr_assert_eq(nsc_json_get(o, "pairs")->count, 3);

    const nsc_json *p = pair(o, 0, 1);
    cr_assert_eq(qj_i64(p, "matched"), 3);
    cr_assert_eq(qj_i64(p, "unmatched_recvs"), 1);
    cr_assert_eq(qj_i64(p, "unmatched_sends"), 0);
    cr_assert_eq(qj_i64(p, "wait_ns_mean"), 300);
    cr_assert_eq(qj_i64(p, "wait_ns_max"), 300);
    cr_assert_eq(qj_i64(p, "bytes"), 3 * 1024);
    p = pair(o, 1, 2);
    cr_assert_eq(qj_i64(p, "matched"), 2);
    cr_assert_eq(qj_i64(p, "size_mismatches"), 1);
    cr_assert_eq(qj_i64(p, "wait_ns_mean"), -100, "a Recv posted before its Send waits a negative time");
    p = pair(o, 2, 0);
    cr_assert_eq(qj_i64(p, "matched"), 0);
    cr_assert_eq(qj_i64(p, "unmatched_sends"), 1);
    cr_assert_eq(nsc_json_get(p, "wait_ns_mean")->kind, NSC_JSON_NULL);

    const nsc_json *un = nsc_json_get(o, "unmatched");
    cr_assert_eq(un->count, 2);
    const nsc_json *recv = nsc_json_at(un, 0), *send = nsc_json_at(un, 1);
    cr_assert_str_eq(nsc_json_str(nsc_json_get(recv, "func")), "Recv");
    cr_assert_eq(qj_i64(recv, "rank"), 1);
    cr_assert_eq(qj_i64(recv, "peer"), 0);
    cr_assert_eq(qj_i64(recv, "nth"), 3);
    cr_assert_eq(qj_i64(recv, "start_ns"), (int64_t)(T0 + 3300), "the last Recv in time is the one left over");
    cr_assert_str_eq(nsc_json_str(nsc_json_get(send, "func")), "Send");
    cr_assert_eq(qj_i64(send, "rank"), 2);
    cr_assert_eq(qj_i64(send, "peer"), 0);
    cr_assert_eq(qj_i64(send, "bytes"), 256);
    nsc_json_free(&d);
    qf_result_free(&res);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* The start_ns of every unmatched operation of a p2p read from t0 (0:
 * whole) into starts, with the settled_ns it gives (lag: its settle_lag_ns);
 * returns their count. */
static size_t unmatched_lag(nsc_store *st, uint64_t t0, uint64_t t1, uint64_t lag, uint64_t *starts, size_t cap,
                            uint64_t *settled)
{
    char qs[160];
    size_t n = 0;
    snprintf(qs, sizeof qs, "comm=0x55&t0_ns=%llu&t1_ns=%llu&settle_lag_ns=%llu", (unsigned long long)t0,
             (unsigned long long)t1, (unsigned long long)lag);
    qf_result res;
    nsc_json_doc d;
    const nsc_json *o = p2p_doc(st, qs, &res, &d), *un = nsc_json_get(o, "unmatched");
    cr_assert_not_null(nsc_json_get(o, "settled_ns"), "%s", res.text);
    *settled = (uint64_t)qj_i64(o, "settled_ns");
    for (uint32_t i = 0; i < un->count && n < cap; i++)
        starts[n++] = (uint64_t)qj_i64(nsc_json_at(un, i), "start_ns");
    nsc_json_free(&d);
    qf_result_free(&res);
    return n;
}

static size_t unmatched_from(nsc_store *st, uint64_t t0, uint64_t t1, uint64_t *starts, size_t cap,
                             uint64_t *settled)
{
    return unmatched_lag(st, t0, t1, 0, starts, cap, settled);
}

/* Reads that end where a pair is half seen (rank 0's Send at +1000 before
 * its Recv at +1300, rank 1's Send at +5000 after its Recv) settle before
 * it: a read from there reports what the whole job does, no Recv of a cut
 * pair as unmatched. The last Recv from 0 and the Send to 0 stay reported. */
Test(p2p, a_read_from_settled_ns_pairs_as_the_whole_job)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    fill(st);
    uint64_t whole[8], from[8], settled, unused;
    size_t n = unmatched_from(st, 0, UINT64_MAX, whole, 8, &settled);
    cr_assert_eq(n, 2);
    cr_assert_eq(settled, T0 + 2000, "rank 0 has no operation after +2000");
    static const uint64_t ends[] = {T0 + 1200, T0 + 4950, UINT64_MAX};
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        unmatched_from(st, 0, ends[i], from, 8, &settled);
        cr_assert_leq(settled, ends[i]);
        size_t m = unmatched_from(st, settled, UINT64_MAX, from, 8, &unused);
        cr_assert_eq(m, n, "from %llu", (unsigned long long)(settled - T0));
        cr_assert_arr_eq(from, whole, n * sizeof *whole, "from %llu", (unsigned long long)(settled - T0));
    }
    n = unmatched_from(st, T0 + 1100, UINT64_MAX, from, 8, &unused);
    cr_assert_eq(n, 3, "a read that cuts a pair reports its Recv as unmatched");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Rank 0's second Send to 1 (+1000) is stored after its later records
 * (its record came when it ended): a pass that settled before it came
 * reads from a point before it, so the pass after reports what the whole
 * job does, no Recv unmatched (with no lag the point is +2100 and the Recv
 * there is reported). Once the latest event is the lag past the pairs, the
 * point moves past them, and a Send never received after it is reported. */
#define LAG 5000
Test(p2p, a_record_stored_after_its_ranks_later_ones_is_read_after_settling)
{
    static const op early[] = {
        {0, 1, 0, T0, 256},        {0, 1, 0, T0 + 2000, 256}, {1, 0, 1, T0 + 100, 256},
        {1, 0, 1, T0 + 1100, 256}, {1, 0, 1, T0 + 2100, 256}, {1, 0, 0, T0 + 3000, 256},
        {0, 1, 1, T0 + 3050, 256}, {1, 0, 0, T0 + 4000, 256}, {0, 1, 1, T0 + 4050, 256},
    };
    static const op late[] = {{0, 1, 0, T0 + 1000, 256}};
    static const op later[] = {
        {1, 0, 0, T0 + 20000, 256}, {0, 1, 1, T0 + 20050, 256}, {0, 1, 0, T0 + 21000, 256},
    };
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    put_ops(st, early, sizeof early / sizeof *early, 100);
    uint64_t un[8], settled, next;
    cr_assert_eq(unmatched_lag(st, 0, UINT64_MAX, LAG, un, 8, &settled), 1, "the late Send's Recv, for now");
    put_ops(st, late, 1, 200);
    cr_assert_eq(unmatched_lag(st, settled, UINT64_MAX, LAG, un, 8, &next), 0,
                 "the late Send pairs with its Recv, as in the whole job");
    cr_assert_lt(settled, T0, "within the lag of the latest event (+4050) nothing settles");
    put_ops(st, later, sizeof later / sizeof *later, 300);
    cr_assert_eq(unmatched_lag(st, settled, UINT64_MAX, LAG, un, 8, &next), 1);
    cr_assert_eq(un[0], T0 + 21000, "the Send never received");
    cr_assert_eq(next, T0 + 21000 - LAG, "the pairs more than the lag behind the latest event settle");
    cr_assert_eq(unmatched_lag(st, next, UINT64_MAX, LAG, un, 8, &settled), 1);
    cr_assert_eq(un[0], T0 + 21000, "still reported from the new point");
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* One AllReduce per rank every microsecond from `from` on, each in a block of
 * its own (a commit each): n blocks per rank. */
static void put_colls(nsc_store *st, uint64_t from, size_t n)
{
    for (size_t k = 0; k < n; k++) {
        op c[RANKS];
        for (int r = 0; r < RANKS; r++)
            c[r] = (op){r, -1, 0, from + k * 1000, 1};
        put_ops(st, c, RANKS, 1000 + k * RANKS);
    }
}

/* A ring's store (its communicator has no Send/Recv): the p2p read decodes
 * no block (before, the last of each rank, for where each reported last;
 * before that, all of them: a root-cause pass that read it every time cost
 * as much as the job was long), and its settled point stays at its start,
 * from where the next read decodes none again. */
Test(p2p, a_communicator_without_p2p_decodes_no_block)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    put_colls(st, T0, 20);
    qf_result res;
    nsc_json_doc d;
    const nsc_json *o = p2p_doc(st, "comm=0x55&settle_lag_ns=0&t0_ns=5", &res, &d);
    cr_assert_eq(qj_i64(o, "sends"), 0);
    cr_assert_eq(nsc_json_get(o, "unmatched")->count, 0);
    cr_assert_eq(qj_i64(o, "settled_ns"), 5, "no operation: the window's start");
    cr_assert_eq(res.blocks, 0, "%llu blocks decoded of %d", (unsigned long long)res.blocks, 20 * RANKS);
    nsc_json_free(&d);
    qf_result_free(&res);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Ranks 0 and 1 pair a Send and a Recv, then run collectives: the settled
 * point counts operations alone (the collectives are never decoded), so it
 * holds at the Send, rank 0's latest operation, and a read from there finds
 * the pair again. Rank 2, with no operation, holds nothing. */
Test(p2p, the_settled_point_counts_operations_alone)
{
    static const op pair_ops[] = {{0, 1, 0, T0, 256}, {1, 0, 1, T0 + 100, 256}};
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    put_ops(st, pair_ops, 2, 100);
    put_colls(st, T0 + 10000, 3);
    uint64_t un[4], settled, next;
    cr_assert_eq(unmatched_lag(st, 0, UINT64_MAX, 0, un, 4, &settled), 0);
    cr_assert_eq(settled, T0, "rank 0's latest operation");
    cr_assert_eq(unmatched_lag(st, settled, UINT64_MAX, 0, un, 4, &next), 0, "the pair again");
    cr_assert_eq(next, T0);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

/* Retention deletes a block and its p2p index entry together: the read
 * after it finds no operation (before, the entry outlived its block and
 * the read failed on a corrupt index). */
Test(p2p, retention_deletes_the_blocks_index_entries_with_them)
{
    char *dir;
    nsc_store *st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    fill(st);
    nsc_store_close(st);
    nsc_store_opts o = {.retain_age_ns = 1000};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    uint64_t deleted;
    cr_assert_eq(nsc_store_retain(st, 1000000, &deleted), 0);
    cr_assert_gt(deleted, 0);
    qf_result res;
    nsc_json_doc d;
    const nsc_json *left = p2p_doc(st, "comm=0x55", &res, &d);
    cr_assert_eq(qj_i64(left, "sends") + qj_i64(left, "recvs"), 0, "%s", res.text);
    nsc_json_free(&d);
    qf_result_free(&res);
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}
