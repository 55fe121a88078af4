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

static void put_rec(char *buf, size_t cap, const char *comm, unsigned seq, int rank, uint64_t api, uint64_t gpu,
                    uint64_t end)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n,
             "{\"kind\":\"record\",\"comm_id\":\"%s\",\"seq\":%u,\"rank\":%d,\"func\":\"AllReduce\",\"peer\":-1,"
             "\"api_ns\":%llu,\"done_ns\":%llu,\"gpu_start_ns\":%llu,\"gpu_end_ns\":%llu,\"state\":\"completed\"}\n",
             comm, seq, rank, (unsigned long long)api, (unsigned long long)end, (unsigned long long)gpu,
             (unsigned long long)end);
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

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    const page *p = arg;
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
    nsc_diag_src src;
    nsc_json_doc status;
    nsc_findings *f;
} fixture;

static void setup(fixture *x)
{
    pages(&x->pg);
    x->src = (nsc_diag_src){.get = serve, .arg = &x->pg, .name = "canned"};
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

static void follow(fixture *x)
{
    nsc_rc_follow *w = nsc_rc_follow_new();
    cr_assert_not_null(w);
    cr_assert_eq(nsc_rc_follow_comm(x->f, w, "0xa", 2, ""), NSC_DIAG_OK, "%s", x->src.err);
    cr_assert_eq(nsc_rc_follow_comm(x->f, w, "0xb", 2, ""), NSC_DIAG_OK, "%s", x->src.err);
    cr_assert_eq(nsc_rc_follow_run(x->f, w), NSC_DIAG_OK, "%s", x->src.err);
    nsc_rc_follow_free(w);
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
