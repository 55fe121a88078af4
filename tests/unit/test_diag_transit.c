/* test_diag_transit.c: diagnose (engine/diag/diagnose.c) on a running job
 * whose newest records are partly stored: a collective that needs every
 * rank and ended on a rank had every rank in it, so the ranks missing from
 * it are records on their way, not a problem; one that never ended with a
 * rank missing is. Documents as the endpoints write them, from a source of
 * canned pages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "dint.h"

static const char comms[] =
    "{\"job\":\"j\",\"comms\":[{\"comm\":\"0xc0\",\"nranks\":4,\"ranks_seen\":4,\"ranks\":["
    "{\"rank\":0,\"host\":\"h0\",\"pid\":1},{\"rank\":1,\"host\":\"h0\",\"pid\":2},"
    "{\"rank\":2,\"host\":\"h1\",\"pid\":3},{\"rank\":3,\"host\":\"h1\",\"pid\":4}]}]}";

/* Seq 7 ended on ranks 0-2 (rank 3's record not stored yet); seq 8: ranks
 * 0-2 in flight, rank 3 never came. */
static const char colls[] =
    "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":7,\"nranks\":4,\"ranks_seen\":3,\"missing_ranks\":[3],"
    "\"mismatch\":null,\"start_ns\":1000,\"end_ns\":5000,\"ranks\":[]}\n"
    "{\"kind\":\"collective\",\"func\":\"AllReduce\",\"seq\":8,\"nranks\":4,\"ranks_seen\":3,\"missing_ranks\":[3],"
    "\"mismatch\":null,\"start_ns\":9000,\"end_ns\":null,\"ranks\":[]}\n"
    "{\"kind\":\"end\",\"next_cursor\":null}\n";

static const char *ended_func = "AllReduce";

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    (void)arg, (void)qs, (void)err, (void)errcap;
    char page[2048];
    if (strcmp(endpoint, "comms") == 0)
        snprintf(page, sizeof page, "%s", comms);
    else if (strcmp(endpoint, "collectives") == 0)
        snprintf(page, sizeof page, "%.*s%s%s", (int)(strstr(colls, "AllReduce") - colls), colls, ended_func,
                 strstr(colls, "AllReduce") + strlen("AllReduce"));
    else if (strcmp(endpoint, "p2p") == 0)
        snprintf(page, sizeof page, "{\"unmatched\":[]}");
    else
        snprintf(page, sizeof page, "{\"kind\":\"end\",\"next_cursor\":null}\n");
    return fn(fn_arg, page, strlen(page));
}

/* The missing problems' seqs, in order, into seqs; how many. */
static size_t missing_seqs(uint64_t *seqs, size_t cap)
{
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_json_doc st;
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse("{}", 2, NULL, &st, &e), 0);
    static nsc_findings f;
    memset(&f, 0, sizeof f);
    f.src = &src;
    cr_assert_eq(nsc_diag_find("j", nsc_json_root(&st), &f), NSC_DIAG_OK, "%s", src.err);
    size_t n = 0;
    for (size_t i = 0; i < f.n; i++)
        if (strcmp(f.p[i].kind, "missing") == 0 && n < cap)
            seqs[n++] = f.p[i].seq;
    nsc_json_free(&st);
    return n;
}

Test(diag_transit, ranks_missing_from_a_collective_that_ended_are_on_their_way)
{
    uint64_t seqs[4];
    cr_assert_eq(missing_seqs(seqs, 4), 1);
    cr_assert_eq(seqs[0], 8, "missing at seq %llu", (unsigned long long)seqs[0]);
}

/* A collective that does not need every rank (a Broadcast from rank 0 can
 * end on rank 1 before rank 3 called it): a rank missing from it is one. */
Test(diag_transit, a_collective_that_needs_not_every_rank_keeps_its_missing_ranks)
{
    uint64_t seqs[4];
    ended_func = "Broadcast";
    cr_assert_eq(missing_seqs(seqs, 4), 2);
    cr_assert_eq(seqs[0], 7);
    ended_func = "AllReduce";
}
