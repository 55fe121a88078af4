/* test_diagfind.c: the problems of a whole job (engine/diag/diagnose.c,
 * nsc_diag_find), on documents served by a source of canned pages. Two
 * communicators: 0xa stuck, its first collective in flight and 69 more
 * queued behind it on the stream (as a training job's communicators whose
 * ranks' stream another one stopped); 0xb with a mismatch at seq 1, the
 * cause. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"

#define STUCK 70

static char stuck_page[STUCK * 128 + 256];
static char p2p_qs[2048];  /* the query of the last p2p read */

static const char comms_doc[] =
    "{\"job\":\"j\",\"comms\":[{\"comm\":\"0xa\",\"nranks\":2,\"ranks_seen\":2,\"ranks\":[0,1]},"
    "{\"comm\":\"0xb\",\"nranks\":2,\"ranks_seen\":2,\"ranks\":[0,1]}]}";
static const char status_doc[] = "{\"jobs\":[{\"job\":\"j\",\"comms\":[]}],\"processes\":[]}";
static const char mismatch_page[] =
    "{\"kind\":\"header\",\"comm\":\"0xb\"}\n"
    "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":1,\"mismatch\":\"count: rank 0 8, rank 1 16\","
    "\"mismatch_seq\":1,\"mismatch_rank\":1,\"end_ns\":null}\n"
    "{\"kind\":\"end\",\"next_cursor\":null}\n";
static const char empty_page[] = "{\"kind\":\"header\"}\n{\"kind\":\"end\",\"next_cursor\":null}\n";

static void fill_stuck(void)
{
    size_t n = (size_t)snprintf(stuck_page, sizeof stuck_page, "{\"kind\":\"header\",\"comm\":\"0xa\"}\n");
    for (int s = 0; s < STUCK; s++)
        n += (size_t)snprintf(stuck_page + n, sizeof stuck_page - n,
                              "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":%d,\"end_ns\":null}\n", 10 + s);
    snprintf(stuck_page + n, sizeof stuck_page - n, "{\"kind\":\"end\",\"next_cursor\":null}\n");
}

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    (void)arg;
    const char *body = NULL;
    if (strcmp(endpoint, "comms") == 0)
        body = comms_doc;
    else if (strcmp(endpoint, "status") == 0)
        body = status_doc;
    else if (strcmp(endpoint, "collectives") == 0)
        body = strstr(qs, "comm=0xa") ? stuck_page : mismatch_page;
    else if (strcmp(endpoint, "p2p") == 0) {
        snprintf(p2p_qs, sizeof p2p_qs, "%s", qs);
        body = "{\"settled_ns\":5000,\"unmatched\":[]}";
    }
    else if (strcmp(endpoint, "ledger") == 0 || strcmp(endpoint, "timeline") == 0)
        body = empty_page;
    if (!body) {
        snprintf(err, errcap, "no %s here", endpoint);
        return -1;
    }
    return fn(fn_arg, body, strlen(body));
}

Test(diagfind, a_communicators_queued_collectives_are_one_problem_and_the_cause_elsewhere_is_found)
{
    fill_stuck();
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = &src;
    cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 2, "%zu problems, %zu dropped, the first %s", f->n, f->dropped, f->p[0].text);
    cr_assert_str_eq(f->p[0].kind, "mismatch");
    cr_assert_str_eq(f->p[0].comm, "0xb");
    cr_assert_eq(f->p[0].rank, 1);
    cr_assert_str_eq(f->p[1].kind, "in_flight");
    cr_assert_str_eq(f->p[1].comm, "0xa");
    cr_assert_eq(f->p[1].seq, 10);
    cr_assert_str_eq(f->p[1].figures, "\"queued\":69");
    cr_assert_not_null(strstr(f->p[1].text, "69 later collective(s) of the comm queued behind it"), "%s", f->p[1].text);
    free(f);
}

/* The root-cause passes read each communicator's Send/Recv from where the
 * last pass left every pair matched, that point kept p2p_lag_ns behind the
 * latest event; diagnose (no carry) reads them whole. */
Test(diagfind, a_pass_reads_send_recv_from_where_the_last_one_settled)
{
    fill_stuck();
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_rc_carry from = {0};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    for (int pass = 0; pass < 2; pass++) {
        memset(f, 0, sizeof *f);
        f->src = &src;
        f->carry = &from;
        f->p2p_lag_ns = 7000;
        cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src.err);
        cr_assert_eq(strstr(p2p_qs, "t0_ns=5000") != NULL, pass == 1, "pass %d: %s", pass, p2p_qs);
        cr_assert_not_null(strstr(p2p_qs, "settle_lag_ns=7000"), "pass %d: %s", pass, p2p_qs);
    }
    cr_assert_eq(from.n, 2);
    cr_assert_eq(from.v[0].p2p_ns, 5000);
    memset(f, 0, sizeof *f);
    f->src = &src;
    cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src.err);
    cr_assert_null(strstr(p2p_qs, "t0_ns"), "%s", p2p_qs);
    nsc_rc_carry_free(&from);
    free(f);
}

/* A live state behind the store (a peer collector's share of the job, an
 * agent's backlog): rank 1 lags at AllReduce seq 3 by the live state, but
 * AllReduce seq 4, which needs every rank, ended in the store, so rank 1
 * took part in it. Lagging stays for a function the store saw no later end
 * of (Broadcast) and at the ended seq itself. */
static const char lag_comms[] = "{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc\",\"nranks\":2,\"ranks_seen\":2,\"ranks\":[0,1]}]}";
static const char lag_status[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc\",\"hangs\":[],\"lagging\":["
    "{\"rank\":1,\"func\":\"AllReduce\",\"seq\":3,\"max_seq\":9,\"for_ns\":5000000000},"
    "{\"rank\":1,\"func\":\"AllReduce\",\"seq\":4,\"max_seq\":9,\"for_ns\":5000000000},"
    "{\"rank\":0,\"func\":\"Broadcast\",\"seq\":2,\"max_seq\":9,\"for_ns\":5000000000}]}]}],\"processes\":[]}";
static const char lag_page[] =
    "{\"kind\":\"header\",\"comm\":\"0xc\"}\n"
    "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":4,\"end_ns\":100,\"missing_ranks\":[1]}\n"
    "{\"kind\":\"end\",\"next_cursor\":null}\n";

/* arg: the status document. */
static int serve_lag(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                     size_t errcap)
{
    (void)qs;
    const char *body = strcmp(endpoint, "comms") == 0         ? lag_comms
                       : strcmp(endpoint, "status") == 0      ? (const char *)arg
                       : strcmp(endpoint, "collectives") == 0 ? lag_page
                       : strcmp(endpoint, "p2p") == 0         ? "{\"unmatched\":[]}"
                                                              : empty_page;
    (void)err, (void)errcap;
    return fn(fn_arg, body, strlen(body));
}

/* The findings of job j with status as the live state's document; the
 * caller frees them. */
static nsc_findings *find_lagging(nsc_diag_src *src, const char *status)
{
    *src = (nsc_diag_src){.get = serve_lag, .arg = (void *)status, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = src;
    cr_assert_eq(nsc_diag_find("j", NULL, f), NSC_DIAG_OK, "%s", src->err);
    return f;
}

Test(diagfind, a_rank_lagging_by_the_live_state_behind_a_collective_it_ended_in_the_store_is_no_problem)
{
    nsc_diag_src src;
    nsc_findings *f = find_lagging(&src, lag_status);
    cr_assert_eq(f->n, 2, "%zu problems, the first %s", f->n, f->p[0].text);
    for (size_t i = 0; i < f->n; i++)
        cr_assert_str_eq(f->p[i].kind, "lagging");
    cr_assert_not_null(strstr(f->p[0].text, "rank 0 is at Broadcast seq 2"), "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[1].text, "rank 1 is at AllReduce seq 4"), "%s", f->p[1].text);
    free(f);
}

/* The live state ahead of the store: rank 0 ended AllReduce seq 6 by the
 * live state (its latest, not in flight), so rank 1, lagging at seq 4 and
 * 5, was in it too; Broadcast, which rank 0 has in flight, still lags. */
static const char live_status[] =
    "{\"jobs\":[{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc\",\"hangs\":[],\"lagging\":["
    "{\"rank\":1,\"func\":\"AllReduce\",\"seq\":5,\"max_seq\":9,\"for_ns\":5000000000},"
    "{\"rank\":1,\"func\":\"Broadcast\",\"seq\":2,\"max_seq\":9,\"for_ns\":5000000000}],\"ranks\":["
    "{\"rank\":0,\"collectives\":[{\"func\":\"AllReduce\",\"seq\":6,\"in_flight\":false},"
    "{\"func\":\"Broadcast\",\"seq\":9,\"in_flight\":true}]},"
    "{\"rank\":1,\"collectives\":[{\"func\":\"AllReduce\",\"seq\":5,\"in_flight\":false}]}]}]}],"
    "\"processes\":[]}";

Test(diagfind, a_rank_lagging_below_a_collective_another_rank_ended_by_the_live_state_is_no_problem)
{
    nsc_diag_src src;
    nsc_findings *f = find_lagging(&src, live_status);
    cr_assert_eq(f->n, 1, "%zu problems, the first %s", f->n, f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].text, "rank 1 is at Broadcast seq 2"), "%s", f->p[0].text);
    free(f);
}
