/* test_rcfollow.c: late ranks followed across communicators (engine/diag,
 * rcfollow.c), on ledgers served by a source of canned pages. Two
 * communicators share process P0: in "tp" (P0, P1) P1's GPU starts 4 ms
 * after everyone at every collective; in "dp" (P0, P2) P0 arrives 4 ms late
 * because its tp collective ended late on it, its own gap 0.1 ms. And a
 * pipeline's second stage: two "pp" communicators (P0 -> P2, P1 -> P3), then
 * "tp" (P2, P3), where P2's host posts its Recv 4 ms after its sender's Send. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"

#define COLLS 8
#define MS 1000000ull
#define BASE (1000 * MS)

/* The ledger pages of communicators 0xa, 0xb and 0xc, and the live state. */
typedef struct page {
    char comm[3][16384];
    const char *status;
} page;

static void put_rec(char *buf, const char *func, unsigned seq, int rank, int peer, uint64_t api, uint64_t gpu,
                    uint64_t end)
{
    size_t n = strlen(buf);
    snprintf(buf + n, sizeof ((page *)0)->comm[0] - n,
             "{\"kind\":\"record\",\"seq\":%u,\"rank\":%d,\"func\":\"%s\",\"peer\":%d,"
             "\"api_ns\":%llu,\"done_ns\":%llu,\"gpu_start_ns\":%llu,\"gpu_end_ns\":%llu,\"state\":\"completed\"}\n",
             seq, rank, func, peer, (unsigned long long)api, (unsigned long long)end, (unsigned long long)gpu,
             (unsigned long long)end);
}

static void put_coll(char *buf, unsigned seq, int rank, uint64_t api, uint64_t gpu, uint64_t end)
{
    put_rec(buf, "AllReduce", seq, rank, -1, api, gpu, end);
}

static void pages_begin(page *p, const char *status)
{
    for (int c = 0; c < 3; c++)
        snprintf(p->comm[c], sizeof p->comm[c], "{\"kind\":\"header\",\"comm\":\"0x%c\",\"nranks\":2}\n", 'a' + c);
    p->status = status;
}

static void pages_end(page *p)
{
    for (int c = 0; c < 3; c++)
        strcat(p->comm[c], "{\"kind\":\"end\",\"next_cursor\":null}\n");
}

/* Collective i starts at BASE + 100 ms x i: tp ends 5 ms in, dp 6 ms in. */
static void pages(page *p)
{
    pages_begin(p, "{\"jobs\":[{\"job\":\"j\",\"comms\":["
                   "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h0\",\"pid\":11}]},"
                   "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h1\",\"pid\":12}]}]}]}");
    for (unsigned i = 0; i < COLLS; i++) {
        uint64_t t = BASE + 100 * MS * i;
        put_coll(p->comm[0], i, 0, t, t, t + 5 * MS);
        put_coll(p->comm[0], i, 1, t, t + 4 * MS, t + 5 * MS);
        put_coll(p->comm[1], i, 0, t + 5 * MS + MS / 10, t + 5 * MS + MS / 10, t + 6 * MS);
        put_coll(p->comm[1], i, 1, t + MS, t + MS, t + 6 * MS);
    }
    pages_end(p);
}

/* Step i at BASE + 100 ms x i: P0 and P1 send at once; P2 receives 4 ms
 * later (its host late), P3 at once; then tp (0xa: P2, P3), each 0.1 ms
 * after its Recv ended, ends 5 ms in. */
static void pages_pipeline(page *p)
{
    pages_begin(p, "{\"jobs\":[{\"job\":\"j\",\"comms\":["
                   "{\"comm\":\"0xa\",\"ranks\":[{\"rank\":0,\"host\":\"h1\",\"pid\":12},{\"rank\":1,\"host\":\"h1\",\"pid\":13}]},"
                   "{\"comm\":\"0xb\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":10},{\"rank\":1,\"host\":\"h1\",\"pid\":12}]},"
                   "{\"comm\":\"0xc\",\"ranks\":[{\"rank\":0,\"host\":\"h0\",\"pid\":11},{\"rank\":1,\"host\":\"h1\",\"pid\":13}]}]}]}");
    for (unsigned i = 0; i < COLLS; i++) {
        uint64_t t = BASE + 100 * MS * i, late = 4 * MS;
        put_rec(p->comm[1], "Send", i, 0, 1, t, t, t + late + MS / 5);
        put_rec(p->comm[1], "Recv", i, 1, 0, t + late, t + late, t + late + MS / 5);
        put_rec(p->comm[2], "Send", i, 0, 1, t, t, t + MS / 5);
        put_rec(p->comm[2], "Recv", i, 1, 0, t, t, t + MS / 5);
        put_coll(p->comm[0], i, 0, t + late + 3 * MS / 10, t + late + 3 * MS / 10, t + 5 * MS);
        put_coll(p->comm[0], i, 1, t + 3 * MS / 10, t + 3 * MS / 10, t + 5 * MS);
    }
    pages_end(p);
}

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    const page *p = arg;
    const char *comm = strstr(qs, "comm=0x");
    if (strcmp(endpoint, "ledger") != 0 || !comm || comm[7] < 'a' || comm[7] > 'c') {
        snprintf(err, errcap, "no %s here", endpoint);
        return -1;
    }
    const char *body = p->comm[comm[7] - 'a'];
    return fn(fn_arg, body, strlen(body));
}

typedef struct fixture {
    page pg;
    nsc_diag_src src;
    nsc_json_doc status;
    nsc_findings *f;
} fixture;

static void setup_with(fixture *x, void (*fill)(page *))
{
    fill(&x->pg);
    x->src = (nsc_diag_src){.get = serve, .arg = &x->pg, .name = "canned"};
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(x->pg.status, strlen(x->pg.status), NULL, &x->status, &e), 0);
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

static void setup(fixture *x)
{
    setup_with(x, pages);
}

/* The communicators 0xa .. up to ncomms of them followed. */
static void follow_comms(fixture *x, int ncomms)
{
    nsc_rc_follow *w = nsc_rc_follow_new();
    cr_assert_not_null(w);
    for (int c = 0; c < ncomms; c++) {
        char id[8];
        snprintf(id, sizeof id, "0x%c", 'a' + c);
        cr_assert_eq(nsc_rc_follow_comm(x->f, w, id, 2, ""), NSC_DIAG_OK, "%s", x->src.err);
    }
    cr_assert_eq(nsc_rc_follow_run(x->f, w), NSC_DIAG_OK, "%s", x->src.err);
    nsc_rc_follow_free(w);
}

static void follow(fixture *x)
{
    follow_comms(x, 2);
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

Test(rcfollow, a_rank_that_only_inherits_a_delay_is_no_cause)
{
    fixture x;
    setup(&x);
    late(x.f, "host_late", "0xb", 0);
    follow(&x);
    cr_assert_eq(x.f->n, 0, "%zu problems, the first %s", x.f->n, x.f->p[0].text);
    teardown(&x);
}

Test(rcfollow, a_stage_late_before_its_recv_is_late_of_its_own_at_the_collective_after)
{
    fixture x;
    setup_with(&x, pages_pipeline);
    late(x.f, "host_late", "0xa", 0);
    follow_comms(&x, 3);
    cr_assert_eq(x.f->n, 1, "%zu problems", x.f->n);
    const nsc_problem *p = &x.f->p[0];
    cr_assert_str_eq(p->kind, "host_late");
    cr_assert_str_eq(p->comm, "0xa");
    cr_assert_eq(p->rank, 0);
    cr_assert_not_null(strstr(p->figures, "\"world_rank\":0,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":0,"), "%s", p->figures);
    teardown(&x);
}
