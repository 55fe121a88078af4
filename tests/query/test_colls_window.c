/* A window's collectives are defined by the window (colls.c): a rank's
 * `id` is its record's own (its seq), whatever window read it, and a store
 * holding only what a time window needs (each rank's records from the
 * window's start on, and its last record before it whose kernel ended, as a
 * ClickHouse load scoped by time puts them: docs/clickhouse-read.md) answers
 * that window as the whole job does, though rank 1's previous kernel end
 * lies 26 records back (its kernels of seqs 5..30 have no GPU times). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qfixture.h"
#include "storeutil.h"

#define COMM 0x77ull
#define T0 5000000000000ull /* seq 0's time */
#define COLLS 40
#define FIRST 31            /* the window's first seq */
#define LATE 3000           /* rank 1 enqueues this much after rank 0 */

static const nsc_str_def strs[] = {{1, "AllReduce"}, {2, "ncclFloat32"}, {3, "RING"}, {4, "SIMPLE"}};

static uint64_t enqueue(int rank, uint64_t k)
{
    return T0 + k * 1000000 + (uint64_t)rank * LATE;
}

/* Rank's records of the seqs keep says, in one batch. */
static void put_rank(nsc_store *st, int rank, int (*keep)(int rank, uint64_t k))
{
    nsc_proc proc = nsc_test_proc("job", rank ? "b" : "a", 10 + (uint32_t)rank, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM, rank, 2);
    nsc_store_batch events = {.proc = &proc, .ctxs = &ctx, .nctxs = 1, .strs = strs, .nstrs = 4};
    nsc_ledger_rec r[COLLS];
    uint32_t n = 0;
    for (uint64_t k = 0; k < COLLS; k++) {
        if (!keep(rank, k))
            continue;
        uint64_t t = enqueue(rank, k);
        int no_gpu = rank == 1 && k >= 5 && k < FIRST;
        r[n++] = (nsc_ledger_rec){.comm_id = COMM, .seq = k, .rank = rank, .func = 1, .datatype = 2, .algo = 3,
                                  .proto = 4, .count = 1024, .bytes = 4096, .root = -1, .peer = -1,
                                  .nchannels = 1, .flags = no_gpu ? NSC_LEDGER_NO_GPU : 0,
                                  .api_ns = t - 1000, .enqueue_ns = t, .launch_ns = t + 1000,
                                  .done_ns = t + 9000, .gpu_start_ns = t + 2000, .gpu_end_ns = t + 8000,
                                  .gpu_err_ns = 100, .nchannels_done = 1};
    }
    nsc_ledger_batch b = {.pid = proc.pid, .nstrs = 4, .nrecs = n, .strs = strs, .recs = r};
    nsc_store_ledger l = {&proc, &b, {0}};
    cr_assert_eq(nsc_store_put(st, &events), 0);
    cr_assert_eq(nsc_store_put_ledger(st, &l), 0);
}

static int every(int rank, uint64_t k)
{
    (void)rank, (void)k;
    return 1;
}

/* From the window's start on, and each rank's last record before it
 * whose kernel ended: rank 0's seq 30, rank 1's seq 4. */
static int window_needs(int rank, uint64_t k)
{
    return k >= FIRST || k == (rank ? 4u : FIRST - 1u);
}

static char *dirs[2];
static nsc_store *stores[2];

static nsc_store *fill(int i, int (*keep)(int, uint64_t))
{
    stores[i] = nsc_tmp_store_open(&dirs[i]);
    cr_assert_not_null(stores[i]);
    cr_assert_eq(nsc_store_begin(stores[i], 1), 0);
    put_rank(stores[i], 0, keep);
    put_rank(stores[i], 1, keep);
    cr_assert_eq(nsc_store_commit(stores[i]), 0);
    return stores[i];
}

static void teardown(void)
{
    for (int i = 0; i < 2; i++) {
        if (stores[i])
            nsc_store_close(stores[i]), nsc_tmp_store_remove(dirs[i]);
        stores[i] = NULL;
    }
}

Test(colls_window, a_ranks_id_is_its_records_seq_in_any_window, .fini = teardown)
{
    nsc_store *st = fill(0, every);
    qf_result r = qf_run(st, "collectives", "job=job&comm=0x77&seq=20-25");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    int n = 0;
    for (const char *p = r.text; (p = strstr(p, "{\"kind\":\"collective\"")) != NULL; p++, n++) {
        unsigned long long seq = strtoull(strstr(p, "\"seq\":") + 6, NULL, 10);
        const char *ids = strstr(p, "\"ranks\":[");
        for (int k = 0; k < 2; k++) {
            ids = strstr(ids + 1, "\"id\":");
            cr_assert_eq(strtoull(ids + 5, NULL, 10), seq, "seq %llu: %.200s", seq, ids);
        }
    }
    cr_assert_eq(n, 6);
    qf_result_free(&r);
}

Test(colls_window, a_time_window_answers_alike_from_what_it_needs_alone, .fini = teardown)
{
    char qs[128];
    snprintf(qs, sizeof qs, "job=job&comm=0x77&t0_ns=%llu", (unsigned long long)enqueue(0, FIRST) - 500000);
    qf_result whole = qf_run(fill(0, every), "collectives", qs);
    qf_result part = qf_run(fill(1, window_needs), "collectives", qs);
    cr_assert_eq(whole.rc, 0, "%s", whole.err);
    cr_assert_eq(part.rc, 0, "%s", part.err);
    cr_assert(strstr(whole.text, "\"kind\":\"end\",\"collectives\":9,") != NULL, "%s", whole.text);
    cr_assert_str_eq(part.text, whole.text);
    qf_result_free(&whole);
    qf_result_free(&part);
}
