/* The collectives' causality narrows the hosts' clock bounds when asked
 * (clock=causal; qcause.c):
 * two hosts on one true clock, each with a model whose probes were
 * lopsided opposite ways (host a's replies slow, b's requests), so a's
 * model reads 20 us early and b's 20 us late, each within its bound of
 * 20 us. Ring AllReduces whose kernels on both hosts start and end close
 * together narrow both, every endpoint's GPU times then hold the truth
 * within a few us; the same ledger with a collective whose times contradict
 * the probes (within each collective's bounds, not across them), or one
 * that breaks causality beyond its own bounds, narrows nothing and says so. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "qfixture.h"
#include "query.h"
#include "qjson.h"
#include "storeutil.h"

#define COMM 0x77ull
#define T0 5000000000000ull /* true time of the first collective */
#define COLLS 8
#define GPU_ERR 500

static const nsc_str_def strs[] = {{1, "AllReduce"}, {2, "ncclFloat32"}, {3, "RING"}, {4, "SIMPLE"}};

/* Probes every 100 ms for 30 s: requests take out ns, replies back ns. */
static void put_clock(nsc_store *st, const char *host, uint64_t out, uint64_t back)
{
    nsc_clock_model m;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    for (uint64_t i = 0; i < 300; i++) {
        uint64_t t1 = T0 - 15000000000ull + i * 100000000ull;
        nsc_clock_sample s = {t1, t1 + out, t1 + out + 1000, t1 + out + 1000 + back};
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
    }
    cr_assert_eq(nsc_clock_flush(&m), 0);
    cr_assert_eq(nsc_store_put_clock(st, host, &m), 0);
    nsc_clock_free(&m);
}

/* Rank `rank` on host, its kernels from start + k to end + k at collective k
 * (true times: the hosts' clocks are the truth). */
static void put_rank(nsc_store *st, const char *host, int rank, const uint64_t *start, const uint64_t *end)
{
    nsc_proc proc = nsc_test_proc("job", host, 10 + (uint32_t)rank, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, COMM, rank, 2);
    nsc_store_batch events = {.proc = &proc, .ctxs = &ctx, .nctxs = 1, .strs = strs, .nstrs = 4};
    nsc_ledger_rec r[COLLS];
    for (uint64_t k = 0; k < COLLS; k++) {
        uint64_t t = T0 + k * 1000000;
        r[k] = (nsc_ledger_rec){.comm_id = COMM, .seq = k, .rank = rank, .func = 1, .datatype = 2, .algo = 3,
                                .proto = 4, .count = 1024, .bytes = 4096, .root = -1, .peer = -1,
                                .nchannels = 1, .api_ns = t - 50000, .enqueue_ns = t - 40000,
                                .launch_ns = t - 30000, .done_ns = t + end[k] + 5000,
                                .gpu_start_ns = t + start[k], .gpu_end_ns = t + end[k],
                                .gpu_err_ns = GPU_ERR, .nchannels_done = 1};
    }
    nsc_ledger_batch b = {.pid = proc.pid, .nstrs = 4, .nrecs = COLLS, .strs = strs, .recs = r};
    nsc_store_ledger l = {&proc, &b, {0}};
    cr_assert_eq(nsc_store_put(st, &events), 0);
    cr_assert_eq(nsc_store_put_ledger(st, &l), 0);
}

static char *dir;
static nsc_store *st;

/* Both ranks' kernels start within 1 us and end 2-3 us after; at seq
 * `odd`, a's kernel starts at a_start and b's ends at b_end, true (a_start
 * 0: none). */
static void fill(uint64_t odd, uint64_t a_start, uint64_t b_end)
{
    uint64_t sa[COLLS], ea[COLLS], sb[COLLS], eb[COLLS];
    for (int k = 0; k < COLLS; k++) {
        sa[k] = 1000, ea[k] = 3000 + (uint64_t)k % 2 * 500;
        sb[k] = 1000 + (uint64_t)k % 3 * 300, eb[k] = 3500;
    }
    if (a_start) {
        sa[odd] = a_start;
        ea[odd] = a_start + 5000;
        eb[odd] = b_end;
    }
    st = nsc_tmp_store_open(&dir);
    cr_assert_not_null(st);
    cr_assert_eq(nsc_store_begin(st, 1), 0);
    put_rank(st, "a", 0, sa, ea);
    put_rank(st, "b", 1, sb, eb);
    put_clock(st, "a", 0, 40000);
    put_clock(st, "b", 40000, 0);
    cr_assert_eq(nsc_store_commit(st), 0);
}

static void teardown(void)
{
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

#define CAUSAL "job=job&comm=0x77&clock=causal"

/* Rank 0's kernel starts in the collectives read with query string qs (but
 * at skip_seq): each within its bound of the truth. The largest bound of
 * any rank. */
static uint64_t check_collectives(const char *qs, uint64_t skip_seq)
{
    qf_result r = qf_run(st, "collectives", qs);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    uint64_t worst = 0;
    size_t n = 0;
    for (char *line = r.text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        cr_assert_not_null(nl);
        nsc_json_doc d;
        nsc_json_error e;
        cr_assert_eq(nsc_json_parse(line, (size_t)(nl - line), NULL, &d, &e), 0, "%s", e.msg);
        const nsc_json *c = nsc_json_root(&d), *ranks = nsc_json_get(c, "ranks");
        if (strcmp(qj_str(c, "kind"), "collective") != 0) {
            nsc_json_free(&d);
            continue;
        }
        uint64_t seq = qj_u64(c, "seq");
        for (const nsc_json *rk = nsc_json_first(ranks); rk; rk = nsc_json_next(ranks, rk), n++) {
            uint64_t v = qj_u64(rk, "kernel_start_ns"), err = qj_u64(rk, "kernel_start_err_ns");
            uint64_t truth = T0 + seq * 1000000 + 1000;
            if (seq != skip_seq && qj_i64(rk, "rank") == 0)
                cr_assert_leq(v > truth ? v - truth : truth - v, err, "seq %lu: %lu +- %lu misses %lu",
                              (unsigned long)seq, (unsigned long)v, (unsigned long)err, (unsigned long)truth);
            worst = err > worst ? err : worst;
        }
        nsc_json_free(&d);
    }
    cr_assert_eq(n, 2 * COLLS);
    qf_result_free(&r);
    return worst;
}

static const char *cause_of_timeline(const char *qs)
{
    qf_result r = qf_run(st, "timeline", qs);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    static char cause[32];
    const char *p = strstr(r.text, "\"clock_cause\":\"");
    snprintf(cause, sizeof cause, "%s", p ? p + 15 : "none\"");
    *strchr(cause, '"') = 0;
    qf_result_free(&r);
    return cause;
}

Test(query_clock_cause, narrowed_around_the_truth, .fini = teardown)
{
    fill(0, 0, 0);
    uint64_t worst = check_collectives(CAUSAL, UINT64_MAX);
    /* the probes alone: 20 us and the GPU's 0.5 */
    cr_assert_leq(worst, 5000, "largest bound %lu ns", (unsigned long)worst);
    cr_assert_str_eq(cause_of_timeline(CAUSAL), "narrowed");
}

Test(query_clock_cause, probes_alone_unless_asked, .fini = teardown)
{
    fill(0, 0, 0);
    cr_assert_geq(check_collectives("job=job&comm=0x77&clock=model", UINT64_MAX), 20000);
    cr_assert_geq(check_collectives("job=job&comm=0x77", UINT64_MAX), 20000);
    cr_assert_str_eq(cause_of_timeline("job=job&comm=0x77"), "none");
    qf_result r = qf_run(st, "timeline", "job=job&comm=0x77&clock=exact");
    cr_assert_eq(r.rc, NSC_QUERY_EPARAM);
    qf_result_free(&r);
}

Test(query_clock_cause, contradiction_narrows_nothing, .fini = teardown)
{
    /* seq 3: b's kernel ends 30 us before a's starts, true time; within
     * that collective's own bounds (20 us each side), but with the others
     * it leaves the hosts no possible offset */
    fill(3, 40000, 10000);
    uint64_t worst = check_collectives(CAUSAL, 3);
    cr_assert_geq(worst, 20000, "largest bound %lu ns", (unsigned long)worst);
    cr_assert_str_eq(cause_of_timeline(CAUSAL), "contradiction");
}

Test(query_clock_cause, collective_beyond_its_bounds_narrows_nothing, .fini = teardown)
{
    /* seq 3: b's kernel ends 110 us before a's starts, beyond that
     * collective's own bounds: the communicator's timers can be that wrong,
     * and the others' a little, undetected */
    fill(3, 150000, 40000);
    uint64_t worst = check_collectives(CAUSAL, 3);
    cr_assert_geq(worst, 20000, "largest bound %lu ns", (unsigned long)worst);
    cr_assert_str_eq(cause_of_timeline(CAUSAL), "contradiction");
}
