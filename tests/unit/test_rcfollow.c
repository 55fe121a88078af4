/* test_rcfollow.c: late ranks followed across communicators (engine/diag,
 * rcfollow.c), on ledgers served by a source of canned pages. Two
 * communicators share process P0: in "tp" (P0, P1) P1's GPU starts 4 ms
 * after everyone at every collective; in "dp" (P0, P2) P0 arrives 4 ms late
 * because its tp collective ended late on it, its own gap 0.1 ms. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"

#define COLLS 8
#define MS 1000000ull
#define BASE (1000 * MS)

typedef struct page {
    char tp[16384], dp[16384];
} page;

/* A completed ledger record of func (peer -1 for a collective). */
static void put_op(char *buf, size_t cap, const char *comm, const char *func, int peer, unsigned seq, int rank,
                   uint64_t api, uint64_t gpu, uint64_t end)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n,
             "{\"kind\":\"record\",\"comm_id\":\"%s\",\"seq\":%u,\"rank\":%d,\"func\":\"%s\",\"peer\":%d,"
             "\"api_ns\":%llu,\"done_ns\":%llu,\"gpu_start_ns\":%llu,\"gpu_end_ns\":%llu,\"state\":\"completed\"}\n",
             comm, seq, rank, func, peer, (unsigned long long)api, (unsigned long long)end, (unsigned long long)gpu,
             (unsigned long long)end);
}

static void put_rec(char *buf, size_t cap, const char *comm, unsigned seq, int rank, uint64_t api, uint64_t gpu,
                    uint64_t end)
{
    put_op(buf, cap, comm, "AllReduce", -1, seq, rank, api, gpu, end);
}

/* Collective i starts at BASE + 100 ms x i: tp ends 5 ms in, dp 6 ms in. */
static void pages(page *p)
{
    snprintf(p->tp, sizeof p->tp, "{\"kind\":\"header\",\"comm\":\"0xa\",\"nranks\":2}\n");
    snprintf(p->dp, sizeof p->dp, "{\"kind\":\"header\",\"comm\":\"0xb\",\"nranks\":2}\n");
    for (unsigned i = 0; i < COLLS; i++) {
        uint64_t t = BASE + 100 * MS * i;
        put_rec(p->tp, sizeof p->tp, "0xa", i, 0, t, t, t + 5 * MS);
        put_rec(p->tp, sizeof p->tp, "0xa", i, 1, t, t + 4 * MS, t + 5 * MS);
        put_rec(p->dp, sizeof p->dp, "0xb", i, 0, t + 5 * MS + MS / 10, t + 5 * MS + MS / 10, t + 6 * MS);
        put_rec(p->dp, sizeof p->dp, "0xb", i, 1, t + MS, t + MS, t + 6 * MS);
    }
    strcat(p->tp, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    strcat(p->dp, "{\"kind\":\"end\",\"next_cursor\":null}\n");
}

/* The ledger pages served: "tp"'s and "dp"'s. */
typedef struct bodies {
    const char *tp, *dp;
} bodies;

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    const bodies *p = arg;
    if (strcmp(endpoint, "ledger") != 0) {
        snprintf(err, errcap, "no %s here", endpoint);
        return -1;
    }
    const char *body = strstr(qs, "comm=0xa") ? p->tp : p->dp;
    return fn(fn_arg, body, strlen(body));
}

static const char status_text[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":["
    "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h0\",\"pid\":11}]},"
    "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h1\",\"pid\":12}]}]}]}";

typedef struct fixture {
    page pg;
    bodies b;
    nsc_diag_src src;
    nsc_json_doc status;
    nsc_findings *f;
} fixture;

static void setup(fixture *x)
{
    pages(&x->pg);
    x->b = (bodies){x->pg.tp, x->pg.dp};
    x->src = (nsc_diag_src){.get = serve, .arg = &x->b, .name = "canned"};
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(status_text, strlen(status_text), NULL, &x->status, &e), 0);
    x->f = calloc(1, sizeof *x->f);
    cr_assert_not_null(x->f);
    x->f->src = &x->src;
    x->f->status = nsc_json_root(&x->status);
    snprintf(x->f->job, sizeof x->f->job, "j");
}

/* A late-rank problem as a communicator's analysis (rclate.c) leaves it. */
static void late(nsc_findings *f, const char *kind, const char *comm, int64_t rank)
{
    nsc_problem *p = nsc_diag_add(f, NSC_SEV_LATE, kind, comm, 0, rank, "%s in %s", kind, comm);
    cr_assert_not_null(p);
    snprintf(p->hosts[0], sizeof p->hosts[0], "h0");
    snprintf(p->figures, sizeof p->figures,
             "\"late_of_its_own\":%d,\"onset_seq\":0,\"onset_ns\":%llu,\"every\":1,\"own_cost_ns\":%llu", COLLS,
             (unsigned long long)BASE, (unsigned long long)(COLLS * 4 * MS));
}

/* "0xa" and "0xb" followed, from src. */
static void follow_ab(nsc_findings *f, const nsc_diag_src *src)
{
    nsc_rc_follow *w = nsc_rc_follow_new();
    cr_assert_not_null(w);
    cr_assert_eq(nsc_rc_follow_comm(f, w, "0xa", 2, ""), NSC_DIAG_OK, "%s", src->err);
    cr_assert_eq(nsc_rc_follow_comm(f, w, "0xb", 2, ""), NSC_DIAG_OK, "%s", src->err);
    cr_assert_eq(nsc_rc_follow_run(f, w), NSC_DIAG_OK, "%s", src->err);
    nsc_rc_follow_free(w);
}

static void follow(fixture *x)
{
    follow_ab(x->f, &x->src);
}

static void teardown(fixture *x)
{
    free(x->f);
    nsc_json_free(&x->status);
}

Test(rcfollow, the_origin_is_named_and_who_inherits_its_delay_is_affected)
{
    fixture x;
    setup(&x);
    late(x.f, "gpu_late", "0xa", 1);
    late(x.f, "host_late", "0xb", 0);
    follow(&x);
    cr_assert_eq(x.f->n, 1, "%zu problems, the first %s", x.f->n, x.f->p[0].text);
    const nsc_problem *p = &x.f->p[0];
    cr_assert_str_eq(p->kind, "gpu_late");
    cr_assert_str_eq(p->comm, "0xa");
    cr_assert_eq(p->rank, 1);
    cr_assert_eq(p->seq, 0);
    cr_assert_not_null(strstr(p->figures, "\"world_rank\":1,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":0,\"onset_ns\":1000000000,\"every\":1,"), "%s",
                       p->figures);
    cr_assert_not_null(strstr(p->figures, "\"affected\":[{\"comm\":\"0xb\",\"rank\":0,\"world_rank\":0}]"), "%s",
                       p->figures);
    cr_assert_not_null(strstr(p->figures, "\"comms_of_its_own\":[\"0xa\"]"), "%s", p->figures);
    cr_assert_not_null(strstr(p->text, "1 late rank(s) in 1 comm(s) only inherit it"), "%s", p->text);
    teardown(&x);
}

/* Two problems of one process in one communicator (a slow GPU and the
 * host's pauses, as rclate.c and rcbeats.c may each leave one) list that
 * communicator once and count it once. */
Test(rcfollow, a_communicator_with_two_problems_of_the_origin_is_listed_once)
{
    fixture x;
    setup(&x);
    late(x.f, "gpu_late", "0xa", 1);
    late(x.f, "host_late", "0xa", 1);
    late(x.f, "host_late", "0xb", 0);
    follow(&x);
    cr_assert_eq(x.f->n, 1, "%zu problems, the first %s", x.f->n, x.f->p[0].text);
    const nsc_problem *p = &x.f->p[0];
    cr_assert_not_null(strstr(p->figures, "\"comms_of_its_own\":[\"0xa\"]"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"comms_late\":1"), "%s", p->figures);
    cr_assert_not_null(strstr(p->text, "in 1 comm(s):"), "%s", p->text);
    teardown(&x);
}

Test(rcfollow, a_rank_that_only_inherits_a_delay_is_no_cause)
{
    fixture x;
    setup(&x);
    late(x.f, "host_late", "0xb", 0);
    follow(&x);
    cr_assert_eq(x.f->n, 0, "%zu problems, the first %s", x.f->n, x.f->p[0].text);
    teardown(&x);
}

/* A training job's late host on a beat: in "tp" (P0, P1) 16 collectives a
 * step over STEPS steps, P1's host 4 ms late at each step's first; before
 * each of the step's others P1 runs a "dp" collective with P2 that P2
 * makes end 1.5 ms late, so that P1 arrives last there too, not of its own
 * (late at 16 of each 16, of its own at 1); at the first HIDDEN steps P2 made
 * it 6 ms late before its host's 4 ms as well (its own time 4 ms beyond
 * P0's, but not half its lateness); and a loaded machine paused P1's host
 * 1.3 ms at seq 56 and 3 ms (of its own) at seqs 58 to 60, and 36 ms
 * beyond its 4 at seq `pause` (0: none), a step's first. */
#define STEPS 34
#define PER_STEP 16
#define HIDDEN 4

static const char beat_status[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":["
    "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h0\",\"pid\":11}]},"
    "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":11},{\"rank\":1,\"host\":\"h1\",\"pid\":12}]}]}]}";

/* The pages, each of cap bytes, the caller frees. */
static void beat_pages(char **tp, char **dp, size_t cap, unsigned pause)
{
    char *tpage = *tp = calloc(1, cap), *dpage = *dp = calloc(1, cap);
    cr_assert(tpage && dpage);
    snprintf(tpage, cap, "{\"kind\":\"header\",\"comm\":\"0xa\",\"nranks\":2}\n");
    snprintf(dpage, cap, "{\"kind\":\"header\",\"comm\":\"0xb\",\"nranks\":2}\n");
    uint64_t t = BASE, us = MS / 1000;
    unsigned dseq = 0;
    for (unsigned seq = 0; seq < STEPS * PER_STEP; seq++) {
        uint64_t p1 = t + (seq == pause ? 40 : 4) * MS; /* a step's first: P1's host late */
        if (seq % PER_STEP || seq < HIDDEN * PER_STEP) {
            uint64_t dend = t + (seq % PER_STEP ? 1500 : 6000) * us;
            put_rec(dpage, cap, "0xb", dseq, 0, t - 100 * us, t - 100 * us, dend);
            put_rec(dpage, cap, "0xb", dseq++, 1, dend - 500 * us, dend - 500 * us, dend);
            p1 = dend + (seq % PER_STEP == 0 ? 4 * MS : seq == 56 ? 1300 * us : seq >= 58 && seq <= 60 ? 3 * MS : 50 * us);
        }
        put_rec(tpage, cap, "0xa", seq, 0, t + 200 * us, t + 200 * us, p1 + 500 * us);
        put_rec(tpage, cap, "0xa", seq, 1, p1, p1, p1 + 500 * us);
        t = p1 + 600 * us;
    }
    strcat(tpage, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    strcat(dpage, "{\"kind\":\"end\",\"next_cursor\":null}\n");
}

/* Empty findings of job "j" reading from src, with the live state
 * status_text parsed into *status (the caller frees both). */
static nsc_findings *findings(nsc_diag_src *src, const char *status_text, nsc_json_doc *status)
{
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(status_text, strlen(status_text), NULL, status, &e), 0);
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = src, f->status = nsc_json_root(status);
    snprintf(f->job, sizeof f->job, "j");
    return f;
}

/* A slow GPU seen through another rank's pauses: in "0xa" (P0, P1) P1's
 * GPU starts 4 ms after P0 at each of SCATTER_COLLS collectives; after
 * each, P0 enters "0xb" (P0, P2) 0.1 ms after that end, so it arrives 5.1
 * ms after P2 there, all of it inherited, but at one in four of them, in
 * gaps of 5 and 3, a loaded machine paused it 6 ms more first (late of its
 * own there, as its own time is half its lateness and more). Its
 * communicator's analysis named it late on a beat of 4 from seq 0, where
 * no pause ever came (as a 64-rank training job's ranks far from the slow
 * GPU were named, 1 in 4, with 0 to 12 of 23 to 32 beats kept). */
#define SCATTER_COLLS 64

static void scatter_pages(char *a, char *b, size_t cap)
{
    snprintf(a, cap, "{\"kind\":\"header\",\"comm\":\"0xa\",\"nranks\":2}\n");
    snprintf(b, cap, "{\"kind\":\"header\",\"comm\":\"0xb\",\"nranks\":2}\n");
    uint64_t t = BASE, us = MS / 1000;
    for (unsigned i = 0; i < SCATTER_COLLS; i++) {
        put_rec(a, cap, "0xa", i, 0, t, t, t + 5 * MS);
        put_rec(a, cap, "0xa", i, 1, t, t + 4 * MS, t + 5 * MS);
        uint64_t p0 = t + 5100 * us + (i % 8 == 1 || i % 8 == 6 ? 6 * MS : 0);
        put_rec(b, cap, "0xb", i, 0, p0, p0, p0 + MS);
        put_rec(b, cap, "0xb", i, 1, t, t, p0 + MS);
        t = p0 + MS + 100 * us;
    }
    strcat(a, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    strcat(b, "{\"kind\":\"end\",\"next_cursor\":null}\n");
}

/* ... P0's beat is not kept: its problem is no cause, P0 is listed as
 * affected by P1's slow GPU. */
Test(rcfollow, a_rank_late_off_the_beat_it_was_named_on_only_inherits)
{
    const size_t cap = 1 << 16;
    char *a = calloc(1, cap), *b = calloc(1, cap);
    cr_assert(a && b);
    scatter_pages(a, b, cap);
    bodies pg = {a, b};
    nsc_diag_src src = {.get = serve, .arg = &pg, .name = "canned"};
    nsc_json_doc status;
    nsc_findings *f = findings(&src, status_text, &status);
    const char *const kinds[2] = {"gpu_late", "host_late"}, *const comms[2] = {"0xa", "0xb"};
    for (int k = 0; k < 2; k++) {
        nsc_problem *p = nsc_diag_add(f, NSC_SEV_LATE, kinds[k], comms[k], 0, 1 - k, "%s in %s", kinds[k], comms[k]);
        cr_assert_not_null(p);
        snprintf(p->hosts[0], sizeof p->hosts[0], "h0");
        snprintf(p->figures, sizeof p->figures,
                 "\"late_of_its_own\":%d,\"collectives\":%d,\"onset_seq\":0,\"onset_ns\":%llu,\"every\":%d,"
                 "\"own_cost_ns\":%llu",
                 k ? SCATTER_COLLS / 4 : SCATTER_COLLS, SCATTER_COLLS, (unsigned long long)BASE, k ? 4 : 1,
                 (unsigned long long)(SCATTER_COLLS * 4 * MS));
    }
    follow_ab(f, &src);
    cr_assert_eq(f->n, 1, "%zu problems, the second %s", f->n, f->p[f->n > 1].text);
    cr_assert_str_eq(f->p[0].kind, "gpu_late");
    cr_assert_eq(f->p[0].rank, 1);
    cr_assert_not_null(strstr(f->p[0].figures, "\"affected\":[{\"comm\":\"0xb\",\"rank\":0,"), "%s",
                       f->p[0].figures);
    free(f);
    nsc_json_free(&status);
    free(a);
    free(b);
}

/* One beat run: the pages (beat_pages) followed after rclate.c's problem
 * of rank 1 in "0xa", of kind and figures, was added; one verdict left. */
typedef struct beat_run {
    char *tp, *dp;
    bodies pg;
    nsc_diag_src src;
    nsc_json_doc status;
    nsc_findings *f;
} beat_run;

static const nsc_problem *beat_follow(beat_run *b, unsigned pause, const char *kind, const char *figures)
{
    beat_pages(&b->tp, &b->dp, 1 << 20, pause);
    b->pg = (bodies){b->tp, b->dp};
    b->src = (nsc_diag_src){.get = serve, .arg = &b->pg, .name = "canned"};
    b->f = findings(&b->src, beat_status, &b->status);
    nsc_problem *p = nsc_diag_add(b->f, NSC_SEV_LATE, kind, "0xa", 0, 1, "%s in 0xa", kind);
    cr_assert_not_null(p);
    snprintf(p->hosts[0], sizeof p->hosts[0], "h0");
    snprintf(p->figures, sizeof p->figures, "%s", figures);
    follow_ab(b->f, &b->src);
    cr_assert_eq(b->f->n, 1, "%zu problems", b->f->n);
    return &b->f->p[0];
}

static void beat_free(beat_run *b)
{
    free(b->f);
    nsc_json_free(&b->status);
    free(b->tp);
    free(b->dp);
}

/* rclate.c found P1 late on a beat of 16 from seq 64 (its first steps'
 * lateness split wrongly by the communicator alone): the verdict stands,
 * late of its own at 30 of 34 steps though at 1 in 16 of its late
 * collectives, its onset moved back from seq 64 (not from the pauses'
 * run, off the beat) to seq 0 by whole steps. */
Test(rcfollow, a_host_late_on_a_beat_stands_and_its_onset_goes_back_by_beats)
{
    char fig[256];
    snprintf(fig, sizeof fig,
             "\"late_of_its_own\":33,\"collectives\":%d,\"onset_seq\":64,\"onset_ns\":%llu,\"every\":16,"
             "\"own_cost_ns\":%llu",
             STEPS * PER_STEP, (unsigned long long)BASE, (unsigned long long)(33 * 4 * MS));
    beat_run b;
    const nsc_problem *p = beat_follow(&b, 0, "host_late", fig);
    cr_assert_eq(p->rank, 1);
    cr_assert_eq(p->seq, 0, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"every\":16,"), "%s", p->figures);
    beat_free(&b);
}

/* ... and the verdict carries only its beat's cost: P1 late of its own at
 * the first collective of steps HIDDEN to STEPS - 1, its host's gap there
 * 4.1 ms, 3.8 ms beyond P0's, P0 waiting 3.8 ms; not the 3 ms pauses off
 * the beat (seqs 58 to 60), nor the lateness "0xb" handed it; at step 20,
 * paused 36 ms more, at most twice the median: 7.6 ms. */
Test(rcfollow, an_intermittent_verdict_carries_only_its_beat_s_cost)
{
    char fig[256], want[160];
    snprintf(fig, sizeof fig,
             "\"late_of_its_own\":33,\"collectives\":%d,\"host_late_ns\":%llu,\"onset_seq\":64,\"onset_ns\":%llu,"
             "\"every\":16,\"own_cost_ns\":%llu",
             STEPS * PER_STEP, (unsigned long long)(33 * 6 * MS), (unsigned long long)BASE,
             (unsigned long long)(33 * 4 * MS));
    beat_run b;
    const nsc_problem *p = beat_follow(&b, 20 * PER_STEP, "host_late", fig);
    const unsigned own = STEPS - HIDDEN;
    snprintf(want, sizeof want, "\"late_of_its_own\":%u,\"host_late_ns\":%llu,\"gpu_late_ns\":0,\"own_cost_ns\":%llu,",
             own, (unsigned long long)((own + 1) * 3800 * MS / 1000), (unsigned long long)((own + 1) * 3800 * MS / 1000));
    cr_assert_not_null(strstr(p->figures, want), "want %s in %s", want, p->figures);
    cr_assert_not_null(strstr(p->text, "the others waited 3.93 ms per late collective"), "%s", p->text);
    beat_free(&b);
}

/* ... and its kind is its beat's: named a GPU late by its communicator's
 * sums, its own time on the beat is its host's gap. */
Test(rcfollow, an_intermittent_verdict_s_kind_is_its_beat_s)
{
    char fig[128];
    snprintf(fig, sizeof fig, "\"late_of_its_own\":33,\"collectives\":%d,\"onset_seq\":64,\"every\":16",
             STEPS * PER_STEP);
    beat_run b;
    const nsc_problem *p = beat_follow(&b, 0, "gpu_late", fig);
    cr_assert_str_eq(p->kind, "host_late", "%s", p->text);
    cr_assert_not_null(strstr(p->text, "host late: rank 1"), "%s", p->text);
    beat_free(&b);
}

/* A pipeline's second stage whose host is late before each step's first
 * Recv, as a loaded emulator played it (rootcause.sh's t_host with a rank
 * of 32 or more): P1 posts its Recv 4 ms after its last step's end in "0xb"
 * (its first record at step 0),
 * and P0 posts the Send 10 ms into the step, after its own work in "0xc":
 * P1 is never later than its peer, nor last anywhere; its host's gap at
 * each step's Recv is 4 ms beyond P0's at the Send (the Recv's kernel
 * starts with the Send: its peer's time, not its GPU's). Then the backward
 * pair, each side 1.9 ms after its last end. Step s starts at BASE + 20 ms
 * x s. */
#define P2P_STEPS 40

static const char p2p_status[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":["
    "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h1\",\"pid\":11}]},"
    "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h1\",\"pid\":11},{\"rank\":1,\"host\":\"h1\",\"pid\":12}]},"
    "{\"comm\":\"0xc\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h0\",\"pid\":13}]}]}]}";

/* Canned ledgers of up to 8 communicators: each one's id, size and page. */
typedef struct canned {
    int n;
    const char *id[8];
    int64_t nranks[8];
    char *body[8];
} canned;

#define CANNED_CAP (1 << 20)

static int serve_canned(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg,
                        char *err, size_t errcap)
{
    const canned *c = arg;
    char want[32];
    for (int i = 0; i < c->n && strcmp(endpoint, "ledger") == 0; i++)
        if (snprintf(want, sizeof want, "comm=%s", c->id[i]) > 0 && strstr(qs, want))
            return fn(fn_arg, c->body[i], strlen(c->body[i]));
    snprintf(err, errcap, "no %s for %s here", endpoint, qs);
    return -1;
}

/* Communicator i's page begun: its header. */
static void canned_add(canned *c, const char *id, int64_t nranks)
{
    int i = c->n++;
    c->id[i] = id, c->nranks[i] = nranks;
    cr_assert_not_null(c->body[i] = calloc(1, CANNED_CAP));
    snprintf(c->body[i], CANNED_CAP, "{\"kind\":\"header\",\"comm\":\"%s\",\"nranks\":%lld}\n", id,
             (long long)nranks);
}

/* The pages ended and followed with the live state status, after pre
 * (NULL: none) added the problems a communicator's analysis found; the
 * pages freed, the findings returned, which the caller frees. */
static nsc_findings *canned_follow(canned *c, const char *status_text, void (*pre)(nsc_findings *))
{
    for (int i = 0; i < c->n; i++)
        strcat(c->body[i], "{\"kind\":\"end\",\"next_cursor\":null}\n");
    nsc_diag_src src = {.get = serve_canned, .arg = c, .name = "canned"};
    nsc_json_doc status;
    nsc_findings *f = findings(&src, status_text, &status);
    if (pre)
        pre(f);
    nsc_rc_follow *w = nsc_rc_follow_new();
    cr_assert_not_null(w);
    for (int i = 0; i < c->n; i++)
        cr_assert_eq(nsc_rc_follow_comm(f, w, c->id[i], c->nranks[i], ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(nsc_rc_follow_run(f, w), NSC_DIAG_OK, "%s", src.err);
    nsc_rc_follow_free(w);
    nsc_json_free(&status);
    for (int i = 0; i < c->n; i++)
        free(c->body[i]);
    return f;
}

/* Step s's reductions (step s at BASE + 20 ms x s): rank r0 of
 * c->id[stage0] from 9.5 to 9.9 ms, rank r1 of c->id[stage1] from 18 to
 * 20 ms, its end stamped `stamp` later. */
static void put_reduces(canned *c, int stage0, int r0, int stage1, int r1, unsigned s, uint64_t stamp)
{
    uint64_t t = BASE + 20 * MS * s, us = MS / 1000;
    put_rec(c->body[stage0], CANNED_CAP, c->id[stage0], s, r0, t + 9500 * us, t + 9500 * us, t + 9900 * us);
    put_rec(c->body[stage1], CANNED_CAP, c->id[stage1], s, r1, t + 18 * MS, t + 18 * MS, t + 20 * MS + stamp);
}

/* ... and of the two-rank pipeline c->id[pipe], whose rank 0 is that rank
 * r0 and rank 1 that rank r1: rank 1 posts the Recv recv_ns into the step,
 * rank 0 the Send at 10 ms; then the backward pair at 12 ms. */
static void put_step(canned *c, int pipe, int stage0, int r0, int stage1, int r1, unsigned s, uint64_t recv_ns,
                     uint64_t stamp)
{
    uint64_t t = BASE + 20 * MS * s, us = MS / 1000;
    char *b = c->body[pipe];
    const char *id = c->id[pipe];
    put_reduces(c, stage0, r0, stage1, r1, s, stamp);
    put_op(b, CANNED_CAP, id, "Recv", 0, s, 1, t + recv_ns, t + 10 * MS, t + 10100 * us);
    put_op(b, CANNED_CAP, id, "Send", 1, s, 0, t + 10 * MS, t + 10 * MS, t + 10100 * us);
    put_op(b, CANNED_CAP, id, "Recv", 1, s, 0, t + 12 * MS, t + 12 * MS, t + 12100 * us);
    put_op(b, CANNED_CAP, id, "Send", 0, s, 1, t + 12 * MS, t + 12 * MS, t + 12100 * us);
}

/* The pages above followed, after pre (NULL: none) added the problems a
 * communicator's analysis found; the findings, which the caller frees.
 * Stage 1's reduction at step `stamped` (-1: none) has its end stamped 5 ms
 * late, after the next step's Recv was posted (a loaded emulator's proxy
 * thread, held back). */
static nsc_findings *p2p_follow(void (*pre)(nsc_findings *), int stamped)
{
    canned c = {0};
    canned_add(&c, "0xa", 2);
    canned_add(&c, "0xb", 2);
    canned_add(&c, "0xc", 2);
    for (unsigned s = 0; s < P2P_STEPS; s++) {
        uint64_t stamp = (int)s == stamped ? 5 * MS : 0;
        put_step(&c, 0, 2, 0, 1, 0, s, 4 * MS, stamp);
        put_reduces(&c, 2, 1, 1, 1, s, stamp);
    }
    return canned_follow(&c, p2p_status, pre);
}

/* f's one problem: the host of rank 1 of pipeline comm on host late
 * before its Recv since seq 0. */
static const nsc_problem *only_recv_late(const nsc_findings *f, const char *comm, const char *host)
{
    cr_assert_eq(f->n, 1, "%zu problems, the first %s", f->n, f->p[0].text);
    const nsc_problem *p = &f->p[0];
    cr_assert_str_eq(p->kind, "host_late");
    cr_assert_str_eq(p->comm, comm);
    cr_assert_eq(p->rank, 1);
    cr_assert_str_eq(p->hosts[0], host);
    cr_assert_eq(p->seq, 0, "%s", p->text);
    return p;
}

Test(rcfollow, a_stage_late_before_its_recv_is_late_of_its_own_there)
{
    nsc_findings *f = p2p_follow(NULL, -1);
    /* since step 0's Recv, P1's first record (no earlier end to measure
     * from), a beat before the first it was seen late at */
    const nsc_problem *p = only_recv_late(f, "0xa", "h1");
    cr_assert_not_null(strstr(p->figures, "\"late_of_its_own\":39,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":0,\"onset_ns\":1004000000,\"every\":2,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"world_rank\":1,"), "%s", p->figures);
    free(f);
}

/* ... and with step 0's reduction stamped late its gap at step 1's Recv
 * reads 0 (rootcause.sh's t_host at a load of 100): the onset goes back
 * over that beat to step 0's Recv all the same. */
Test(rcfollow, a_stage_s_onset_goes_back_over_a_recv_whose_gap_a_late_stamp_hid)
{
    nsc_findings *f = p2p_follow(NULL, 0);
    const nsc_problem *p = only_recv_late(f, "0xa", "h1");
    cr_assert_not_null(strstr(p->figures, "\"late_of_its_own\":38,"), "%s", p->figures);
    free(f);
}

/* P1's GPU late in "0xb", a problem that stands there (rootcause.sh's t_two:
 * a slow GPU in the second stage holds its host at each switch to the
 * pipeline's communicator, its gap before its Send/Recv as long). */
static void p1_gpu_late(nsc_findings *f)
{
    late(f, "gpu_late", "0xb", 0);
}

/* ... its Send/Recv add no problem: the verdict is its GPU's, in "0xb" alone. */
Test(rcfollow, a_process_late_in_a_collective_s_problem_is_not_judged_by_its_send_recv)
{
    nsc_findings *f = p2p_follow(p1_gpu_late, -1);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    cr_assert_str_eq(f->p[0].kind, "gpu_late", "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"comms_of_its_own\":[\"0xb\"]"), "%s", f->p[0].figures);
    free(f);
}

/* A host late at each step's start from the job's start, as rootcause.sh's
 * t_host run saw it: in "0xa" P1 4 ms late at the first of each step's 16
 * collectives, 30 steps, but at step 0 P0 started 40 ms later still (P1's
 * first record: no earlier end to measure its own time from). rclate.c
 * found it on the beat from seq 16; the onset goes back to seq 0. */
Test(rcfollow, a_beat_s_onset_goes_back_to_the_process_s_first_record)
{
    page pg;
    char *tp = calloc(1, 1 << 20);
    cr_assert_not_null(tp);
    snprintf(tp, 1 << 20, "{\"kind\":\"header\",\"comm\":\"0xa\",\"nranks\":2}\n");
    snprintf(pg.dp, sizeof pg.dp, "{\"kind\":\"header\",\"comm\":\"0xb\",\"nranks\":2}\n");
    uint64_t cur = BASE, us = MS / 1000;
    for (unsigned seq = 0; seq < 30 * 16; seq++) {
        uint64_t p0 = cur + 100 * us, p1 = p0;
        if (seq % 16 == 0)
            p0 = cur + (seq ? 200 * us : 40 * MS), p1 = cur + 4 * MS;
        uint64_t end = (p0 > p1 ? p0 : p1) + 300 * us;
        put_rec(tp, 1 << 20, "0xa", seq, 0, p0, p0, end);
        put_rec(tp, 1 << 20, "0xa", seq, 1, p1, p1, end);
        cur = end;
    }
    put_rec(pg.dp, sizeof pg.dp, "0xb", 0, 0, cur, cur, cur + MS);
    put_rec(pg.dp, sizeof pg.dp, "0xb", 0, 1, cur, cur, cur + MS);
    strcat(tp, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    strcat(pg.dp, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    bodies b = {tp, pg.dp};
    nsc_diag_src src = {.get = serve, .arg = &b, .name = "canned"};
    nsc_json_doc status;
    nsc_findings *f = findings(&src, status_text, &status);
    nsc_problem *p = nsc_diag_add(f, NSC_SEV_LATE, "host_late", "0xa", 0, 1, "host_late in 0xa");
    cr_assert_not_null(p);
    snprintf(p->figures, sizeof p->figures,
             "\"late_of_its_own\":29,\"collectives\":480,\"onset_seq\":16,\"onset_ns\":%llu,\"every\":16,"
             "\"own_cost_ns\":%llu",
             (unsigned long long)BASE, (unsigned long long)(29 * 4 * MS));
    follow_ab(f, &src);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    cr_assert_eq(f->p[0].seq, 0, "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"every\":16,"), "%s", f->p[0].figures);
    free(f);
    free(tp);
    nsc_json_free(&status);
}

/* Four pipelines "0xa" to "0xd" (the data-parallel replicas of a two-stage
 * job, as rootcause.sh's t_host run on a load of 160 played it): stage 0 on
 * h0, stage 1 on h6 (pipelines 0 and 1) and h7 (2 and 3); each stage's
 * ranks reduce together in "0xe" and "0xf". Each step stage 0 posts its
 * Send 0.1 ms after its reduction ends, stage 1 its Recv 2 to 2.9 ms after
 * the previous step's end (the whole stage's hosts paused as they wake,
 * some more than others, in turn), then the backward pair 1.9 ms after
 * each side's last end. Stage 1's gap is beyond its peer's at every Recv,
 * never 1 ms beyond its replicas'. late >= 0: that pipeline's stage-1 host
 * is 4 ms later still at each step, or with `period` N at 1 step in N (from
 * step 3). */
static nsc_findings *replica_follow(int late, unsigned period)
{
    static const char *const pipe_ids[4] = {"0xa", "0xb", "0xc", "0xd"};
    char status[2048];
    size_t n = (size_t)snprintf(status, sizeof status, "{\"jobs\":[{\"job\":\"j\",\"comms\":[");
    for (int k = 0; k < 6; k++) {
        const char *id = k < 4 ? pipe_ids[k] : k == 4 ? "0xe" : "0xf";
        n += (size_t)snprintf(status + n, sizeof status - n, "%s{\"comm\":\"%s\",\"ranks\":[", k ? "," : "", id);
        for (int r = 0; r < (k < 4 ? 2 : 4); r++) {
            int pipe = k < 4 ? k : r, stage = k < 4 ? r : k - 4;
            n += (size_t)snprintf(status + n, sizeof status - n, "%s{\"rank\":%d,\"host\":\"h%d\",\"pid\":%d}",
                                  r ? "," : "", r, stage ? 6 + pipe / 2 : 0, 10 * (stage + 1) + pipe);
        }
        n += (size_t)snprintf(status + n, sizeof status - n, "]}");
    }
    snprintf(status + n, sizeof status - n, "]}]}");
    canned c = {0};
    for (int k = 0; k < 4; k++)
        canned_add(&c, pipe_ids[k], 2);
    canned_add(&c, "0xe", 4);
    canned_add(&c, "0xf", 4);
    for (unsigned s = 0; s < P2P_STEPS; s++)
        for (int k = 0; k < 4; k++)
            put_step(&c, k, 4, k, 5, k, s,
                     (2000 + 300 * ((k + s) % 4) + (k == late && s % period == 3 % period ? 4000 : 0)) * MS / 1000, 0);
    return canned_follow(&c, status, NULL);
}

Test(rcfollow, a_stage_paused_with_its_replicas_is_not_late_before_its_recv)
{
    nsc_findings *f = replica_follow(-1, 1);
    cr_assert_eq(f->n, 0, "%zu problems, the first %s", f->n, f->p[0].text);
    free(f);
}

/* ... and a stage-1 host late against every replica is. */
Test(rcfollow, a_stage_late_against_its_replicas_is_late_before_its_recv)
{
    nsc_findings *f = replica_follow(3, 1);
    only_recv_late(f, "0xd", "h7");
    free(f);
}

/* ... and at 1 step in 10, from step 3's Recv: 4 times in 40 steps, too
 * seldom for a beat (1 in 20 of its Send/Recv), late of its own there since
 * then all the same (rclate.c's rule for a rank late now and then). */
Test(rcfollow, a_stage_late_at_one_step_in_ten_is_late_before_its_recv_since_then)
{
    nsc_findings *f = replica_follow(3, 10);
    cr_assert_eq(f->n, 1, "%zu problems, the first %s", f->n, f->p[0].text);
    const nsc_problem *p = &f->p[0];
    cr_assert_str_eq(p->kind, "host_late");
    cr_assert_str_eq(p->comm, "0xd");
    cr_assert_eq(p->rank, 1);
    cr_assert_str_eq(p->hosts[0], "h7");
    cr_assert_eq(p->seq, 3, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"every\":20,"), "%s", p->figures);
    free(f);
}

/* A host late at each step's start hidden at every other step by a rank
 * later still, as rootcause.sh's t_two run saw it with the host handing
 * groups to its proxies: in "0xa" (P0, P1, P2) P1's host enqueues the
 * first of each step's 16 collectives 4 ms after its last end, over
 * HIDDEN_STEPS steps; at odd steps P2 enters 7 ms in, after its collective
 * in "0xb" (P2, P3), where P3 came 6.5 ms late (P2 inherits it, its own
 * time 0.1 ms). With `paused`, a loaded machine paused P1 3 ms before the
 * 9th collective of each step too (last, late of its own there: the gaps
 * between its own late ones 8, and 16 around the hidden). With gpu_mask,
 * P1's host is never late, its GPU starts 3 ms after its enqueue instead at
 * its collectives k of each step whose bit k % 8 is set, from step gpu_from
 * on; before it, a loaded machine paused its host 1.5 ms at the fourth of
 * each step. */
#define HIDDEN_STEPS 30

static const char hidden_status[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":["
    "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h0\",\"pid\":11},"
    "{\"rank\":2,\"host\":\"h1\",\"pid\":12}]},"
    "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h1\",\"pid\":12},{\"rank\":1,\"host\":\"h1\",\"pid\":13}]}]}]}";

/* rclate.c's problem of P1 in "0xa", on a beat of 16 from seq 16. */
static void p1_beat_late(nsc_findings *f)
{
    nsc_problem *p = nsc_diag_add(f, NSC_SEV_LATE, "host_late", "0xa", 16, 1, "host_late in 0xa");
    cr_assert_not_null(p);
    snprintf(p->hosts[0], sizeof p->hosts[0], "h0");
    snprintf(p->figures, sizeof p->figures,
             "\"late_of_its_own\":%d,\"collectives\":%d,\"onset_seq\":16,\"onset_ns\":%llu,\"every\":16",
             HIDDEN_STEPS, HIDDEN_STEPS * PER_STEP, (unsigned long long)BASE);
}

static nsc_findings *hidden_follow(int paused, unsigned gpu_mask, unsigned gpu_from, void (*pre)(nsc_findings *))
{
    canned c = {0};
    canned_add(&c, "0xa", 3);
    canned_add(&c, "0xb", 2);
    uint64_t t = BASE, us = MS / 1000;
    for (unsigned s = 0; s < HIDDEN_STEPS; s++) {
        uint64_t late = s % 2 ? 6500 * us : 0, dend = t + late + 500 * us;
        put_rec(c.body[1], CANNED_CAP, "0xb", s, 0, t, t, dend);
        put_rec(c.body[1], CANNED_CAP, "0xb", s, 1, t + late, t + late, dend);
        for (unsigned k = 0; k < PER_STEP; k++) {
            uint64_t p1 = t + (k == 0 && !gpu_mask ? 4 * MS : paused && k == 8 ? 3 * MS
                                                           : s < gpu_from && k == 3 ? 1500 * us : 50 * us);
            uint64_t g1 = p1 + (s >= gpu_from && gpu_mask >> k % 8 & 1 ? 3 * MS : 0);
            uint64_t p2 = k == 0 ? dend + 100 * us : t + 50 * us, end = (g1 > p2 ? g1 : p2) + 500 * us;
            put_rec(c.body[0], CANNED_CAP, "0xa", s * PER_STEP + k, 0, t + 50 * us, t + 50 * us, end);
            put_rec(c.body[0], CANNED_CAP, "0xa", s * PER_STEP + k, 1, p1, g1, end);
            put_rec(c.body[0], CANNED_CAP, "0xa", s * PER_STEP + k, 2, p2, p2, end);
            t = end;
        }
        t += 100 * us;
    }
    return canned_follow(&c, hidden_status, pre);
}

/* ... P1 is named late on its beat, though last at half of it: from its
 * first record, 1 in 16, its host's 3.95 ms beyond the others' at each
 * step's start, the others' waits where it was last. */
Test(rcfollow, a_host_late_on_a_beat_behind_a_rank_later_still_is_named)
{
    nsc_findings *f = hidden_follow(0, 0, 0, NULL);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    const nsc_problem *p = &f->p[0];
    cr_assert_str_eq(p->kind, "host_late", "%s", p->text);
    cr_assert_str_eq(p->comm, "0xa");
    cr_assert_eq(p->rank, 1);
    cr_assert_eq(p->seq, 0, "%s", p->text);
    /* its first record's gap 0; the others waited 3.95 + 3.4 ms at the
     * even steps' */
    char want[160];
    snprintf(want, sizeof want, "\"late_of_its_own\":%d,\"host_late_ns\":%llu,\"gpu_late_ns\":0,\"own_cost_ns\":%llu,",
             HIDDEN_STEPS, (unsigned long long)((HIDDEN_STEPS - 1) * 3950 * MS / 1000),
             (unsigned long long)(HIDDEN_STEPS / 2 * 7350 * MS / 1000));
    cr_assert_not_null(strstr(p->figures, want), "want %s in %s", want, p->figures);
    cr_assert_not_null(strstr(p->figures, "\"every\":16,"), "%s", p->figures);
    free(f);
}

/* ... and a verdict on that beat keeps it, though its last arrivals late
 * of their own on the timeline come 1 in 8 (the pauses between), and
 * counts it where it was hidden too. */
Test(rcfollow, a_verdict_on_a_beat_keeps_it_over_the_pauses_between)
{
    nsc_findings *f = hidden_follow(1, 0, 0, p1_beat_late);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    cr_assert_not_null(strstr(f->p[0].figures, "\"every\":16,"), "%s", f->p[0].figures);
    char want[64];
    snprintf(want, sizeof want, "\"late_of_its_own\":%d,", HIDDEN_STEPS);
    cr_assert_not_null(strstr(f->p[0].figures, want), "want %s in %s", want, f->p[0].figures);
    free(f);
}

/* ... a GPU late at 5 of each 8 collectives, which no communicator's
 * analysis named (as when ranks later still hide it at the others), is
 * named on the timeline, at every collective. */
Test(rcfollow, a_gpu_late_throughout_is_named_on_the_timeline)
{
    nsc_findings *f = hidden_follow(0, 0x1f, 0, NULL);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    cr_assert_str_eq(f->p[0].kind, "gpu_late", "%s", f->p[0].text);
    cr_assert_str_eq(f->p[0].comm, "0xa");
    cr_assert_eq(f->p[0].rank, 1);
    cr_assert_not_null(strstr(f->p[0].figures, "\"every\":1,"), "%s", f->p[0].figures);
    free(f);
}

/* ... and one late so from step 4 on, its host paused once a step before,
 * is named from where it became late: seq 64 (counted from the first
 * pause, it was late at too few to be named at all). */
Test(rcfollow, a_gpu_late_throughout_from_mid_job_is_named_from_then)
{
    nsc_findings *f = hidden_follow(0, 0x1f, 4, NULL);
    cr_assert_eq(f->n, 1, "%zu problems", f->n);
    cr_assert_str_eq(f->p[0].kind, "gpu_late", "%s", f->p[0].text);
    cr_assert_eq(f->p[0].rank, 1);
    cr_assert_eq(f->p[0].seq, 4 * PER_STEP, "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"onset_seq\":64,"), "%s", f->p[0].figures);
    free(f);
}

/* ... but a GPU late on a beat of 2 is no host late on that beat. */
Test(rcfollow, a_gpu_late_on_a_beat_is_no_host_late_on_it)
{
    nsc_findings *f = hidden_follow(0, 0x55, 0, NULL);
    cr_assert_eq(f->n, 0, "%zu problems, the first %s", f->n, f->p[0].text);
    free(f);
}
