/* test_query.c: the query endpoints against a store with known answers
 * (qfixture.c), and the parameter parser against malformed input. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "json.h"
#include "mono.h"
#include "qfixture.h"
#include "qjson.h"
#include "query.h"
#include "storeutil.h"
#include "utc.h"

static char *dir;
static nsc_store *st;

static void setup(void)
{
    dir = nsc_tmp_store_dir();
    cr_assert(dir);
    cr_assert_eq(qf_fill(dir), 0);
    nsc_store_opts o = {.read_only = 1};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
}

static void teardown(void)
{
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
}

TestSuite(query, .init = setup, .fini = teardown);

/* Parse one JSON document (a line). */
static nsc_json_doc parse(const char *s, size_t n)
{
    nsc_json_doc d;
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(s, n, NULL, &d, &e), 0, "bad JSON at %zu: %s: %.*s", e.offset,
                 e.msg, (int)n, s);
    return d;
}

/* Split NDJSON into parsed lines; returns the count. */
static size_t lines(const char *text, nsc_json_doc *out, size_t max)
{
    size_t n = 0;
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        cr_assert(nl, "unterminated line");
        cr_assert_lt(n, max);
        out[n++] = parse(p, (size_t)(nl - p));
        p = nl + 1;
    }
    return n;
}

static void free_lines(nsc_json_doc *d, size_t n)
{
    for (size_t i = 0; i < n; i++)
        nsc_json_free(&d[i]);
}

#define MAXL 512

Test(query, collectives_matched_with_skew_last_rank_and_bandwidth)
{
    qf_result r = qf_run(st, "collectives", "comm=0xabc123");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d[MAXL];
    size_t n = lines(r.text, d, MAXL);
    cr_assert_eq(n, 2 + QF_COLLS);
    const nsc_json *h = nsc_json_root(&d[0]);
    cr_assert_str_eq(qj_str(h, "kind"), "header");
    cr_assert_str_eq(qj_str(h, "job"), "jobA"); /* the most recent job */
    for (uint64_t seq = 0; seq < QF_COLLS; seq++) {
        const nsc_json *c = nsc_json_root(&d[1 + seq]);
        cr_assert_str_eq(qj_str(c, "func"), "AllReduce");
        cr_assert_eq(qj_u64(c, "seq"), seq);
        cr_assert_eq(qj_u64(c, "ranks_seen"), QF_RANKS);
        cr_assert_eq(qj_u64(c, "last_rank"), QF_LATE_RANK);
        /* aligned across hosts: rank 2 is on h1 whose clock is off by 1 s */
        cr_assert_eq(qj_u64(c, "skew_ns"), QF_SKEW + QF_LATE_RANK * 10);
        cr_assert_eq(qj_u64(c, "start_ns"), qf_enqueue(0, seq));
        /* every rank's own kernel time (KernelCh 3 us to 50 us after its enqueue) */
        cr_assert_eq(qj_u64(c, "duration_ns"), QF_KERNEL);
        cr_assert_str_eq(qj_str(c, "arrival"), "gpu");
        cr_assert_eq(qj_u64(c, "bytes"), 4096);
        double algbw, busbw;
        cr_assert_eq(nsc_json_double(nsc_json_get(c, "algbw_gbps"), &algbw), 0);
        cr_assert_eq(nsc_json_double(nsc_json_get(c, "busbw_gbps"), &busbw), 0);
        cr_assert_float_eq(algbw, 4096.0 / QF_KERNEL, 1e-3);
        cr_assert_float_eq(busbw, 4096.0 / QF_KERNEL * 1.5, 1e-3);
        const nsc_json *ranks = nsc_json_get(c, "ranks");
        for (int k = 0; k < QF_RANKS; k++) {
            const nsc_json *rk = nsc_json_at(ranks, (uint32_t)k);
            cr_assert_eq(qj_u64(rk, "enqueue_ns"), qf_enqueue(k, seq));
            cr_assert_eq(qj_u64(rk, "complete_ns"), qf_enqueue(0, seq) + QF_DONE, "rank %d", k);
            cr_assert_eq(qj_u64(rk, "kernel_start_ns"),
                         qf_enqueue(k, seq) + 3000);
            /* arrival on the GPU side; each waits for the late rank's arrival */
            cr_assert_eq(qj_u64(rk, "arrival_ns"), qf_enqueue(k, seq) + 3000);
            cr_assert_eq(qj_u64(rk, "wait_ns"), qf_enqueue(QF_LATE_RANK, seq) - qf_enqueue(k, seq));
            cr_assert_eq(qj_u64(rk, "duration_ns"), QF_KERNEL);
            /* two hosts, two ranks on each: at most their NICs */
            double cap;
            cr_assert_eq(nsc_json_double(nsc_json_get(rk, "busbw_cap_gbps"), &cap), 0);
            cr_assert_float_eq(cap, 2 * NSC_NET_MAX_GBPS, 1e-3, "rank %d", k);
        }
        const nsc_json *mm = nsc_json_get(c, "mismatch");
        if (seq == 3)
            cr_assert_str_eq(nsc_json_str(mm), "datatype: rank 0 ncclFloat32, rank 3 ncclFloat16");
        else
            cr_assert_eq(mm->kind, NSC_JSON_NULL);
    }
    const nsc_json *e = nsc_json_root(&d[n - 1]);
    cr_assert_eq(qj_u64(e, "collectives"), QF_COLLS);
    cr_assert_eq(nsc_json_get(e, "next_cursor")->kind, NSC_JSON_NULL);
    free_lines(d, n);
    qf_result_free(&r);
}

Test(query, collectives_filters_and_pages)
{
    qf_result r = qf_run(st, "collectives", "comm=world&seq=1-2&func=allreduce&limit=1");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d[8];
    size_t n = lines(r.text, d, 8);
    cr_assert_eq(n, 3);
    cr_assert_eq(qj_u64(nsc_json_root(&d[1]), "seq"), 1);
    char qs[256];
    snprintf(qs, sizeof qs, "comm=world&seq=1-2&limit=1&cursor=%s",
             qj_str(nsc_json_root(&d[2]), "next_cursor"));
    qf_result r2 = qf_run(st, "collectives", qs);
    cr_assert_eq(r2.rc, 0, "%s", r2.err);
    nsc_json_doc d2[8];
    size_t n2 = lines(r2.text, d2, 8);
    cr_assert_eq(n2, 3);
    cr_assert_eq(qj_u64(nsc_json_root(&d2[1]), "seq"), 2);
    cr_assert_eq(nsc_json_get(nsc_json_root(&d2[2]), "next_cursor")->kind, NSC_JSON_NULL);
    free_lines(d, n);
    for (size_t i = 0; i < n2; i++)
        nsc_json_free(&d2[i]);
    qf_result_free(&r);
    qf_result_free(&r2);
}

Test(query, timeline_is_aligned_ordered_and_pages_without_loss)
{
    qf_result r = qf_run(st, "timeline", "comm=0xABC123");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d[MAXL];
    size_t n = lines(r.text, d, MAXL);
    size_t total = QF_RANKS * QF_COLLS * QF_EVENTS_PER_COLL;
    cr_assert_eq(n, total + 2);
    const nsc_json *h = nsc_json_root(&d[0]);
    cr_assert_str_eq(qj_str(nsc_json_at(nsc_json_get(h, "ranks"), 0), "clock"), "identity");
    cr_assert_str_eq(qj_str(nsc_json_at(nsc_json_get(h, "ranks"), 2), "clock"), "model");
    uint64_t prev = 0;
    for (size_t i = 1; i <= total; i++) {
        const nsc_json *e = nsc_json_root(&d[i]);
        uint64_t t = qj_u64(e, "start_ns");
        cr_assert_geq(t, prev, "line %zu out of order", i);
        prev = t;
        if (strcmp(qj_str(e, "type"), "Coll") == 0) {
            uint64_t rank = qj_u64(e, "rank"), seq = qj_u64(e, "seq");
            cr_assert_eq(t, qf_enqueue((int)rank, seq));
            cr_assert_str_eq(qj_str(e, "datatype"),
                             seq == 3 && rank == 3 ? "ncclFloat16" : "ncclFloat32");
        }
    }
    cr_assert_eq(qj_u64(nsc_json_root(&d[n - 1]), "events"), total);
    /* pages of 7 give the same events in the same order */
    char qs[128] = "comm=world&limit=7";
    size_t seen = 0;
    for (int page = 0; page < 100; page++) {
        qf_result p = qf_run(st, "timeline", qs);
        cr_assert_eq(p.rc, 0, "%s", p.err);
        nsc_json_doc pd[16];
        size_t pn = lines(p.text, pd, 16);
        for (size_t i = 1; i + 1 < pn; i++, seen++) {
            const nsc_json *a = nsc_json_root(&pd[i]), *b = nsc_json_root(&d[1 + seen]);
            cr_assert_eq(qj_u64(a, "id"), qj_u64(b, "id"));
            cr_assert_eq(qj_u64(a, "rank"), qj_u64(b, "rank"));
        }
        const nsc_json *cur = nsc_json_get(nsc_json_root(&pd[pn - 1]), "next_cursor");
        int more = cur->kind == NSC_JSON_STRING;
        if (more)
            snprintf(qs, sizeof qs, "comm=world&limit=7&cursor=%s", cur->text);
        for (size_t i = 0; i < pn; i++)
            nsc_json_free(&pd[i]);
        qf_result_free(&p);
        if (!more)
            break;
    }
    cr_assert_eq(seen, total);
    free_lines(d, n);
    qf_result_free(&r);
}

/* A compact value equals the JSON one: same number or string, or both null. */
static void same_value(const nsc_json *c, const nsc_json *j, const char *name, size_t line)
{
    cr_assert_not_null(j, "line %zu: JSON has no %s", line, name);
    cr_assert_eq(c->kind, j->kind, "line %zu: %s", line, name);
    if (c->kind == NSC_JSON_NUMBER || c->kind == NSC_JSON_STRING)
        cr_assert_str_eq(c->text, j->text, "line %zu: %s", line, name);
}

Test(query, timeline_compact_carries_the_json_values)
{
    qf_result rj = qf_run(st, "timeline", "comm=world");
    qf_result rc = qf_run(st, "timeline", "comm=world&format=compact&states=1");
    cr_assert_eq(rj.rc, 0, "%s", rj.err);
    cr_assert_eq(rc.rc, 0, "%s", rc.err);
    cr_assert_lt(rc.len * 2, rj.len, "compact %zu B, json %zu B", rc.len, rj.len);
    static nsc_json_doc dj[MAXL], dc[MAXL];
    size_t nj = lines(rj.text, dj, MAXL), nc = lines(rc.text, dc, MAXL);
    cr_assert_eq(nj, nc);
    const nsc_json *h = nsc_json_root(&dc[0]);
    cr_assert_str_eq(qj_str(h, "format"), "compact");
    const nsc_json *cols = nsc_json_get(h, "columns"), *types = nsc_json_get(h, "types");
    for (size_t i = 1; i + 1 < nc; i++) {
        const nsc_json *a = nsc_json_root(&dc[i]), *e = nsc_json_root(&dj[i]);
        cr_assert_eq(a->kind, NSC_JSON_ARRAY, "line %zu", i);
        char type[8];
        snprintf(type, sizeof type, "%s", nsc_json_at(a, 0)->text);
        cr_assert_str_eq(nsc_json_str(nsc_json_at(types, (uint32_t)atoi(type))), qj_str(e, "type"));
        const nsc_json *names = nsc_json_get(cols, type);
        cr_assert_eq(names->count, a->count, "line %zu", i);
        for (uint32_t k = 1; k < a->count; k++) {
            const char *name = nsc_json_str(nsc_json_at(names, k));
            const nsc_json *v = nsc_json_at(a, k);
            if (strcmp(name, "states") == 0)
                cr_assert_eq(v->count, nsc_json_get(e, "states")->count, "line %zu", i);
            else if (strcmp(name, "flags") != 0 && strcmp(name, "origin_pid") != 0)
                same_value(v, nsc_json_get(e, name), name, i);
        }
        /* flags: a bit mask where JSON lists names */
        cr_assert_eq(nsc_json_get(e, "flags")->count == 0, strcmp(nsc_json_at(a, 8)->text, "0") == 0,
                     "line %zu", i);
    }
    for (size_t i = 0; i < nc; i++) {
        nsc_json_free(&dj[i]);
        nsc_json_free(&dc[i]);
    }
    qf_result_free(&rj);
    qf_result_free(&rc);
}

Test(query, timeline_window_rank_and_type_filters)
{
    char qs[256];
    /* the window holds collective 1 only (aligned times) */
    snprintf(qs, sizeof qs, "comm=world&rank=2-3&type=coll&t0_ns=%llu&t1_ns=%llu",
             (unsigned long long)(QF_T0 + QF_PERIOD - 100),
             (unsigned long long)(QF_T0 + QF_PERIOD + QF_SKEW + 100));
    qf_result r = qf_run(st, "timeline", qs);
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d[8];
    size_t n = lines(r.text, d, 8);
    cr_assert_eq(n, 4, "%s", r.text);
    cr_assert_eq(qj_u64(nsc_json_root(&d[1]), "rank"), 3); /* rank 2 arrives last */
    cr_assert_eq(qj_u64(nsc_json_root(&d[2]), "rank"), 2);
    free_lines(d, n);
    qf_result_free(&r);
}

Test(query, topology_rings_from_send_peers)
{
    qf_result r = qf_run(st, "topology", "comm=world");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d = parse(r.text, r.len);
    const nsc_json *root = nsc_json_root(&d);
    const nsc_json *chs = nsc_json_get(root, "channels");
    cr_assert_eq(chs->count, 2);
    static const uint64_t want[2][4] = {{0, 1, 2, 3}, {0, 3, 2, 1}};
    for (uint32_t c = 0; c < 2; c++) {
        const nsc_json *ch = nsc_json_at(chs, c);
        cr_assert_eq(nsc_json_get(ch, "complete")->kind, NSC_JSON_TRUE);
        const nsc_json *ring = nsc_json_get(ch, "ring");
        cr_assert_eq(ring->count, 4);
        for (uint32_t i = 0; i < 4; i++) {
            uint64_t v;
            cr_assert_eq(nsc_json_u64(nsc_json_at(ring, i), &v), 0);
            cr_assert_eq(v, want[c][i]);
        }
    }
    const nsc_json *nodes = nsc_json_get(root, "nodes");
    cr_assert_eq(nodes->count, 2);
    cr_assert_str_eq(qj_str(nsc_json_at(nodes, 1), "host"), "h1");
    cr_assert_eq(qj_u64(nsc_json_at(nsc_json_get(root, "ranks"), 3), "pid"), 103);
    nsc_json_free(&d);
    qf_result_free(&r);
}

Test(query, comms_and_split_children)
{
    qf_result r = qf_run(st, "comms", "job=jobA");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d = parse(r.text, r.len);
    const nsc_json *comms = nsc_json_get(nsc_json_root(&d), "comms");
    cr_assert_eq(comms->count, 2);
    const nsc_json *world = nsc_json_at(comms, 0), *sub = nsc_json_at(comms, 1);
    cr_assert_str_eq(qj_str(world, "comm"), "0xabc123");
    cr_assert_eq(qj_u64(world, "nnodes"), 2);
    cr_assert_eq(qj_u64(world, "ranks_seen"), 4);
    cr_assert_eq(nsc_json_get(world, "split_of")->count, 0);
    cr_assert_str_eq(qj_str(world, "label"), "world 4 ranks on 2 hosts");
    cr_assert_str_eq(qj_str(sub, "comm"), "0xfedcba9876543210", "an id of 16 hex digits");
    cr_assert_str_eq(nsc_json_str(nsc_json_at(nsc_json_get(sub, "split_of"), 0)), "0xabc123");
    cr_assert_eq(qj_u64(sub, "nnodes"), 1);
    nsc_json_free(&d);
    qf_result_free(&r);
    r = qf_run(st, "comms", "job=old");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert(strstr(r.text, "\"0x99\""));
    qf_result_free(&r);
}

Test(query, stats_buckets_and_stragglers)
{
    qf_result r = qf_run(st, "stats", "comm=world");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d = parse(r.text, r.len);
    const nsc_json *root = nsc_json_root(&d);
    const nsc_json *b = nsc_json_at(nsc_json_get(root, "buckets"), 0);
    cr_assert_eq(qj_u64(b, "count"), QF_COLLS);
    cr_assert_eq(qj_u64(b, "bytes_min"), 4096);
    cr_assert_eq(qj_u64(b, "latency_p99_ns"), QF_KERNEL);
    /* seq 3's datatype mismatch makes it no complete collective: not counted */
    cr_assert_eq(qj_u64(root, "complete"), QF_COLLS - 1);
    /* 5 us late is not 1 ms of its own, and 3 collectives are too few */
    cr_assert_eq(nsc_json_get(root, "straggler")->kind, NSC_JSON_NULL);
    const nsc_json *s = nsc_json_at(nsc_json_get(root, "stragglers"), 0);
    cr_assert_eq(qj_u64(s, "rank"), QF_LATE_RANK);
    cr_assert_eq(qj_u64(s, "last_arrivals"), QF_COLLS - 1);
    cr_assert_eq(qj_u64(s, "late_of_its_own"), 0);
    cr_assert_eq(nsc_json_get(root, "stragglers")->count, 1);
    nsc_json_free(&d);
    qf_result_free(&r);
}

/* The web view asks for the straggler of the seqs it shows. */
Test(query, stats_of_a_seq_range)
{
    qf_result r = qf_run(st, "stats", "comm=world&seq=1-2");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    nsc_json_doc d = parse(r.text, r.len);
    const nsc_json *root = nsc_json_root(&d);
    cr_assert_eq(qj_u64(root, "collectives"), 2);
    cr_assert_eq(qj_u64(root, "complete"), 2);
    cr_assert_eq(nsc_json_get(root, "stragglers")->count, 1);
    nsc_json_free(&d);
    qf_result_free(&r);
}

Test(query, not_found)
{
    qf_result r = qf_run(st, "timeline", "comm=0x1f");
    cr_assert_eq(r.rc, NSC_QUERY_ENOTFOUND);
    cr_assert_str_eq(r.err, "no communicator 0x1f in any job");
    cr_assert_eq(nsc_query_http_status(r.rc), 404);
    qf_result_free(&r);
    r = qf_run(st, "timeline", "comm=0x99&job=jobA");
    cr_assert_eq(r.rc, NSC_QUERY_ENOTFOUND);
    cr_assert_str_eq(r.err, "no communicator 0x99 in job \"jobA\"");
    qf_result_free(&r);
    r = qf_run(st, "comms", "job=nope");
    cr_assert_eq(r.rc, NSC_QUERY_ENOTFOUND);
    qf_result_free(&r);
}

/* name?qs answers, and its answer holds needle. */
static void expect_has(const char *name, const char *qs, const char *needle)
{
    qf_result r = qf_run(st, name, qs);
    cr_assert_eq(r.rc, 0, "%s?%s: %s", name, qs, r.err);
    cr_assert(strstr(r.text, needle), "%s?%s: no %s in %s", name, qs, needle, r.text);
    qf_result_free(&r);
}

/* A communicator id is looked up in every job, not only the latest. */
Test(query, comm_of_an_older_job_is_found_without_job)
{
    expect_has("topology", "comm=0x99", "\"job\":\"old\"");
}

/* Without comm: the job's only communicator; with several, an error that
 * says how many and where to see them. */
Test(query, only_communicator_is_used_without_comm)
{
    expect_has("topology", "job=old", "\"comm\":\"0x99\"");
    qf_result r = qf_run(st, "stats", "");
    cr_assert_eq(r.rc, NSC_QUERY_EPARAM);
    cr_assert_str_eq(r.err, "comm: required: job \"jobA\" has 2 communicators (see comms)");
    qf_result_free(&r);
}

/* The fixture reopened writable, with one more process and its communicators. */
static void put_comms(const nsc_proc *p, const nsc_ctx_def *ctx, size_t n)
{
    nsc_store_close(st);
    cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
    nsc_store_batch b = {p, ctx, n, NULL, 0, NULL, 0, NULL, 0, NULL, 0};
    cr_assert_eq(nsc_store_begin(st, 3), 0);
    cr_assert_eq(nsc_store_put(st, &b), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
}

/* The same id in two jobs: the answer names both and asks for job. */
Test(query, comm_in_two_jobs_asks_for_job)
{
    nsc_proc twin = nsc_test_proc("twin", "h8", 8, 0);
    nsc_ctx_def ctx = nsc_test_ctx(0, 0x99, 0, 1);
    put_comms(&twin, &ctx, 1);
    qf_result r = qf_run(st, "collectives", "comm=0x99");
    cr_assert_eq(r.rc, NSC_QUERY_EPARAM);
    cr_assert_str_eq(r.err, "comm: 0x99 is in 2 jobs (\"old\", \"twin\"); name one with job (--job)");
    qf_result_free(&r);
    expect_has("collectives", "comm=0x99&job=twin", "\"job\":\"twin\"");
}

/* A wall clock record (utc, ref, offset) put into the store (st closed
 * then, reopened by the caller). */
static void put_wall_record(uint64_t utc_ns, uint64_t ref_ns, int64_t offset_ns)
{
    nsc_store_close(st);
    cr_assert_eq(nsc_store_open(dir, NULL, &st), 0);
    cr_assert_eq(nsc_store_begin(st, ref_ns), 0);
    nsc_store_wall_rec r = {utc_ns, ref_ns, offset_ns};
    cr_assert_eq(nsc_store_put_wall(st, &r), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    nsc_store_close(st);
    st = NULL;
}

/* The wall clock of the time base: none in a store that never recorded it;
 * the collector's offset (CLOCK_REALTIME - its time) once it did, in every
 * answer that carries times; a clock that went back (a reboot) flagged. */
Test(query, wall_clock_offset_in_answers)
{
    qf_result r = qf_run(st, "comms", "");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    cr_assert_null(strstr(r.text, "wall_offset_ns"), "%s", r.text);
    qf_result_free(&r);
    nsc_store_close(st);
    nsc_store_opts o = {.wall_clock = 1};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    uint64_t mono = nsc_mono_ns(), wall = nsc_wall_ns();
    cr_assert_eq(nsc_store_begin(st, mono), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    const char *const ends[] = {"comms", "collectives", "stats", "topology", "p2p"};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        r = qf_run(st, ends[i], i ? "comm=world" : "");
        cr_assert_eq(r.rc, 0, "%s: %s", ends[i], r.err);
        const char *at = strstr(r.text, "\"wall_offset_ns\":");
        cr_assert(at, "%s: %s", ends[i], r.text);
        long long off = strtoll(at + 17, NULL, 10);
        cr_assert(llabs(off - (long long)(wall - mono)) < 1000000000ll, "%s: %lld", ends[i], off);
        cr_assert_null(strstr(r.text, "wall_clock_reset"), "%s", r.text);
        qf_result_free(&r);
    }
    /* the collector's host rebooted: its last record the previous boot's,
     * an hour earlier and two hours into it; a new collector, its clock near 0 */
    put_wall_record(nsc_wall_ns(), 7200000000000ull, (int64_t)(wall - mono) - 3600000000000ll);
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    cr_assert_eq(nsc_store_begin(st, 1000), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    expect_has("comms", "", "\"wall_clock_reset\":true");
}

/* A collector keeps the store's latest offset while its own reading is
 * within the slack (a reading on a millisecond's boundary rounds either
 * way): a restart, or a second collector, adds no record and moves no UTC
 * time. */
Test(query, wall_clock_kept_within_the_slack)
{
    uint64_t mono = nsc_mono_ns(), wall = nsc_wall_ns();
    int64_t stored = ((int64_t)(wall - mono) / 1000000 + 2) * 1000000;
    put_wall_record(wall, mono, stored);
    nsc_store_opts o = {.wall_clock = 1};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    cr_assert_eq(nsc_store_begin(st, nsc_mono_ns()), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    int64_t kept;
    cr_assert_eq(nsc_store_wall_kept(st, &kept), 0);
    cr_assert_eq(kept, stored);
    char want[64];
    snprintf(want, sizeof want, "\"wall_offset_ns\":%" PRId64 ",", stored);
    expect_has("comms", "", want);
}

/* Communicators alike in name, size and hosts get labels that differ. */
Test(query, comms_alike_get_distinct_labels)
{
    nsc_proc p = nsc_test_proc("alike", "h7", 7, 0);
    nsc_ctx_def ctx[2] = {nsc_test_ctx(0, 0x71, 0, 1), nsc_test_ctx(1, 0x72, 0, 1)};
    snprintf(ctx[0].name, sizeof ctx[0].name, "world");
    snprintf(ctx[1].name, sizeof ctx[1].name, "world");
    put_comms(&p, ctx, 2);
    expect_has("comms", "job=alike", "\"label\":\"world 1 rank on 1 host #1\"");
    expect_has("comms", "job=alike", "\"label\":\"world 1 rank on 1 host #2\"");
}

Test(query, bad_parameters_get_one_line_errors)
{
    static const struct {
        const char *name, *qs, *err;
    } cases[] = {
        {"nope", "", "no endpoint \"nope\""},
        {"timeline", "comm=0x", "comm: expected 0x and 1 to 16 hex digits, or a name: \"0x\""},
        {"timeline", "comm=0x12345678901234567", NULL},
        {"timeline", "comm=0xzz", NULL},
        {"timeline", "comm=a&comm=b", "comm: given twice"},
        {"timeline", "comm=a&t0_ns=12x", "t0_ns: not an unsigned integer: \"12x\""},
        {"timeline", "comm=a&t0_ns=-1", NULL},
        {"timeline", "comm=a&t0_ns=18446744073709551616", NULL},
        {"timeline", "comm=a&t0_ns=5&t1_ns=4", "t0_ns: after t1_ns"},
        {"timeline", "comm=a&rank=1,", NULL},
        {"timeline", "comm=a&rank=3-1", NULL},
        {"timeline", "comm=a&rank=2147483648", NULL},
        {"timeline", "comm=a&type=bogus", NULL},
        {"timeline", "comm=a&limit=0", "limit: expected 1 to 1000000: \"0\""},
        {"timeline", "comm=a&limit=1000001", NULL},
        {"timeline", "comm=a&cursor=1.2", "cursor: not a cursor this API wrote: \"1.2\""},
        {"timeline", "comm=a&cursor=1.2.3.4", NULL},
        {"timeline", "comm=a&func=AllReduce", "func: not a parameter of this endpoint"},
        {"p2p", "comm=a&settle_lag_ns=1s", "settle_lag_ns: not an unsigned integer: \"1s\""},
        {"timeline", "comm=a&settle_lag_ns=1", "settle_lag_ns: not a parameter of this endpoint"},
        {"timeline", "comm=a&bogus=1", "bogus: unknown parameter"},
        {"timeline", "comm=a&x", "query: expected name=value"},
        {"timeline", "comm=%zz", NULL},
        {"timeline", "comm=%00", NULL},
        {"timeline", "comm=", NULL},
        {"timeline", "comm=a&format=csv", "format: expected json or compact: \"csv\""},
        {"timeline", "comm=a&states=2", "states: expected 0 or 1: \"2\""},
        {"collectives", "comm=a&format=compact", "format: only json is served: \"compact\""},
        {"collectives", "comm=a&states=1", "states: not a parameter of this endpoint"},
        {"collectives", "comm=a&seq=9-2", "seq: expected N or N-M with N <= M: \"9-2\""},
        {"collectives", "comm=a&seq=1--2", NULL},
        {"comms", "job=", "job: expected 1 to 63 characters: \"\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        nsc_query *q = NULL;
        char err[256] = "";
        int rc = nsc_query_parse(cases[i].name, cases[i].qs, &q, err, sizeof err);
        cr_assert(rc != 0, "accepted %s?%s", cases[i].name, cases[i].qs);
        cr_assert_eq(rc, i == 0 ? NSC_QUERY_EUNKNOWN : NSC_QUERY_EPARAM, "%s", cases[i].qs);
        cr_assert(err[0] && !strchr(err, '\n'), "%s", cases[i].qs);
        if (cases[i].err)
            cr_assert_str_eq(err, cases[i].err, "%s", cases[i].qs);
    }
    nsc_query *q;
    char err[256];
    cr_assert_eq(nsc_query_parse("timeline", "comm=w%6Frld&rank=0,2-3&type=coll,kernelch&t0_ns=1", &q,
                                 err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(nsc_query_content_type(q), "application/x-ndjson");
    cr_assert_str_eq(nsc_query_name(q), "timeline");
    cr_assert_null(nsc_query_job(q));  /* none named: the store's only job */
    nsc_query_free(q);
}

/* The job a query names, decoded once by the parser: a ClickHouse collector
 * holds that job's store (chquery.c) without parsing the string again. */
Test(query, job_named_is_kept_decoded)
{
    nsc_query *q;
    char err[256];
    cr_assert_eq(nsc_query_parse("comms", "&job=run%2B7+b&", &q, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(nsc_query_job(q), "run+7 b");
    nsc_query_free(q);
}

/* Hosts are listed by name, not by the order their ranks came in: rank 0
 * on "hz", rank 1 on "ha". */
Test(query, hosts_and_nodes_by_name)
{
    nsc_proc pz = nsc_test_proc("sorted", "hz", 21, 0), pa = nsc_test_proc("sorted", "ha", 22, 0);
    nsc_ctx_def cz = nsc_test_ctx(0, 0x55, 0, 2), ca = nsc_test_ctx(0, 0x55, 1, 2);
    put_comms(&pz, &cz, 1);
    put_comms(&pa, &ca, 1);
    expect_has("comms", "job=sorted", "\"hosts\":[\"ha\",\"hz\"]");
    expect_has("topology", "job=sorted", "\"nodes\":[{\"host\":\"ha\",\"clock\":\"identity\",\"ranks\":[1]},"
                                         "{\"host\":\"hz\"");
}

/* The UTC strings beside the aligned times: made from the store's wall
 * clock (common/utc.h), null while the store has none. */
Test(query, utc_strings_from_the_wall_clock)
{
    expect_has("collectives", "comm=world", "\"start_utc\":null,\"end_utc\":null");
    expect_has("timeline", "comm=world&t0_ns=5&limit=1", "\"t0_utc\":null,\"t1_utc\":null");
    nsc_store_close(st);
    nsc_store_opts o = {.wall_clock = 1};
    cr_assert_eq(nsc_store_open(dir, &o, &st), 0);
    cr_assert_eq(nsc_store_begin(st, nsc_mono_ns()), 0);
    cr_assert_eq(nsc_store_commit(st), 0);
    qf_result r = qf_run(st, "collectives", "comm=world");
    cr_assert_eq(r.rc, 0, "%s", r.err);
    const char *at = strstr(r.text, "\"wall_offset_ns\":");
    cr_assert(at, "%s", r.text);
    long long off = strtoll(at + 17, NULL, 10);
    nsc_json_doc d[MAXL];
    size_t n = lines(r.text, d, MAXL), seen = 0;
    for (size_t i = 0; i < n; i++) {
        const nsc_json *v = nsc_json_root(&d[i]);
        if (!qj_str(v, "kind") || strcmp(qj_str(v, "kind"), "collective") != 0)
            continue;
        char want[NSC_UTC_MAX];
        nsc_utc_iso((int64_t)qj_u64(v, "start_ns") + off, want, sizeof want);
        cr_assert_str_eq(qj_str(v, "start_utc"), want);
        nsc_utc_iso((int64_t)qj_u64(v, "end_ns") + off, want, sizeof want);
        cr_assert_str_eq(qj_str(v, "end_utc"), want);
        seen++;
    }
    cr_assert_gt(seen, 0);
    free_lines(d, n);
    qf_result_free(&r);
    char want[NSC_UTC_MAX + 16] = "\"t0_utc\":\"";
    nsc_utc_iso(5 + off, want + strlen(want), NSC_UTC_MAX);
    strcat(want, "\",\"t1_utc\":null");
    expect_has("timeline", "comm=world&t0_ns=5&limit=1", want);
}

static int count_bytes(void *arg, const void *data, size_t len)
{
    (void)data;
    *(size_t *)arg += len;
    return 0;
}

/* A reader that must let go at once (a collector that stops joins the
 * thread of a root-cause pass): each scan ends at its next block read once
 * its stop flag is set, before it answered, and says why. */
Test(query, a_scan_ends_once_told_to_stop)
{
    static const char *const scans[] = {"timeline", "collectives", "p2p", "stats"};
    for (int told = 0; told <= 1; told++)
        for (size_t i = 0; i < sizeof scans / sizeof *scans; i++) {
            nsc_query *q;
            nsc_store_reader *rd;
            char err[256] = "";
            size_t bytes = 0;
            atomic_int stop = told;
            cr_assert_eq(nsc_query_parse(scans[i], "job=jobA&comm=0xabc123", &q, err, sizeof err), 0, "%s", err);
            nsc_query_set_stop(q, &stop);
            cr_assert_eq(nsc_store_read_begin(st, &rd), 0);
            int rc = nsc_query_run(q, rd, count_bytes, &bytes, err, sizeof err);
            nsc_store_read_end(rd);
            nsc_query_free(q);
            if (told) {
                cr_assert_eq(rc, NSC_QUERY_EWRITE, "%s: %d", scans[i], rc);
                cr_assert_str_eq(err, "stopped");
                cr_assert_eq(bytes, 0, "%s wrote %zu bytes", scans[i], bytes);
            } else {
                cr_assert_eq(rc, 0, "%s: %s", scans[i], err);
                cr_assert_gt(bytes, 0);
            }
        }
}
