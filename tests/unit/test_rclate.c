/* test_rclate.c: a late rank's onset (common/diag, rclate.c), on collective
 * records as the collectives endpoint writes them and an empty ledger from a
 * source of canned pages. Four ranks; rank 2's host is 4 ms late from seq 0
 * on, but a loaded machine's pauses hide it: at seqs 1 and 2 rank 1 is
 * later still (rank 2 still 3 ms behind the others), at seq 3 rank 3; and
 * an intermittent fault's onset and period with a pause before or among
 * its collectives, and a host late once a training step. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"

#define NRANKS 4
#define COLLS 12
#define MS 1000000ull

static const char empty_ledger[] = "{\"kind\":\"end\",\"next_cursor\":null}\n";

static int serve(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                 size_t errcap)
{
    (void)arg, (void)qs;
    if (strcmp(endpoint, "ledger") != 0) {
        snprintf(err, errcap, "no %s here", endpoint);
        return -1;
    }
    return fn(fn_arg, empty_ledger, strlen(empty_ledger));
}

/* Collective seq at t: each rank's arrival (ms after t), the last one's
 * lateness split as the endpoint splits it (own: its host's). */
static void add_coll(nsc_rc_late *l, unsigned seq, const double *arrive_ms, int own)
{
    uint64_t t = (1000 + 100 * seq) * MS, first = UINT64_MAX, second = 0;
    int last = 0;
    for (int r = 0; r < NRANKS; r++) {
        uint64_t a = t + (uint64_t)(arrive_ms[r] * MS);
        first = a < first ? a : first;
        last = arrive_ms[r] > arrive_ms[last] ? r : last;
    }
    for (int r = 0; r < NRANKS; r++)
        if (r != last && t + (uint64_t)(arrive_ms[r] * MS) > second)
            second = t + (uint64_t)(arrive_ms[r] * MS);
    uint64_t late = t + (uint64_t)(arrive_ms[last] * MS) - second;
    char buf[4096];
    size_t n = (size_t)snprintf(buf, sizeof buf,
                                "{\"kind\":\"collective\",\"seq\":%u,\"nranks\":%d,\"ranks_seen\":%d,\"missing_ranks\":[],"
                                "\"start_ns\":%llu,\"end_ns\":%llu,\"last_rank\":%d,\"late_ns\":%llu,"
                                "\"late_host_ns\":%llu,\"late_gpu_ns\":0,\"late_of_its_own\":%s,\"mismatch\":null,"
                                "\"ranks\":[",
                                seq, NRANKS, NRANKS, (unsigned long long)first, (unsigned long long)(t + 50 * MS),
                                last, (unsigned long long)late, (unsigned long long)(own ? late : 0),
                                own ? "true" : "false");
    for (int r = 0; r < NRANKS; r++) {
        uint64_t a = t + (uint64_t)(arrive_ms[r] * MS), last_at = t + (uint64_t)(arrive_ms[last] * MS);
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s{\"rank\":%d,\"arrival_ns\":%llu,\"wait_ns\":%llu}",
                              r ? "," : "", r, (unsigned long long)a, (unsigned long long)(last_at - a));
    }
    snprintf(buf + n, sizeof buf - n, "]}");
    nsc_json_doc d;
    nsc_json_error e;
    cr_assert_eq(nsc_json_parse(buf, strlen(buf), NULL, &d, &e), 0, "%s", buf);
    nsc_rc_late_add(l, nsc_json_root(&d));
    nsc_json_free(&d);
}

Test(rclate, a_late_rank_behind_a_later_one_keeps_its_onset)
{
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = &src;
    nsc_rc_late *l = nsc_rc_late_new(NRANKS);
    cr_assert_not_null(l);
    add_coll(l, 0, (double[]){0.6, 0, 9.4, 0.7}, 0); /* its first: no previous gap to split by */
    add_coll(l, 1, (double[]){0, 15.9, 2.8, 0.1}, 1);
    add_coll(l, 2, (double[]){0, 5.6, 3.8, 0}, 1);
    add_coll(l, 3, (double[]){14.0, 0.8, 4.8, 14.1}, 0);
    for (unsigned seq = 4; seq < COLLS; seq++)
        add_coll(l, seq, (double[]){0, 0.2, 4.1, 0}, 1);
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    const nsc_problem *p = &f->p[0];
    cr_assert_str_eq(p->kind, "host_late");
    cr_assert_eq(p->rank, 2);
    cr_assert_eq(p->seq, 0, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":0,"), "%s", p->figures);
    nsc_rc_late_free(l);
    free(f);
}

/* Rank 3's host 3 ms late in 1 collective of 10 from seq 5 on, and a
 * loaded machine's pause made it 1.5 ms late at seq 2: out of step with
 * the fault's, not its onset. */
Test(rclate, a_pause_out_of_step_before_an_intermittent_fault_is_not_its_onset)
{
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = &src;
    nsc_rc_late *l = nsc_rc_late_new(NRANKS);
    cr_assert_not_null(l);
    for (unsigned seq = 0; seq < 50; seq++) {
        double late = seq == 2 ? 1.5 : seq % 10 == 5 ? 3.0 : 0.1;
        add_coll(l, seq, (double[]){0, 0.05 * (seq % 3), 0.02, late}, late > 1);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    const nsc_problem *p = &f->p[0];
    cr_assert_eq(p->rank, 3, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":5,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"every\":10,"), "%s", p->figures);
    nsc_rc_late_free(l);
    free(f);
}

/* Rank 3's host late in 1 collective of 10 from seq 15 on, and a pause made
 * it late at seq 18, between two of the fault's: neither its onset nor a
 * shorter period. */
Test(rclate, a_pause_between_an_intermittent_fault_s_keeps_its_onset_and_period)
{
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = &src;
    nsc_rc_late *l = nsc_rc_late_new(NRANKS);
    cr_assert_not_null(l);
    for (unsigned seq = 0; seq < 50; seq++) {
        double late = seq == 18 ? 1.5 : seq >= 15 && seq % 10 == 5 ? 3.0 : 0.1;
        add_coll(l, seq, (double[]){0, 0.05 * (seq % 3), 0.02, late}, late > 1);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    const nsc_problem *p = &f->p[0];
    cr_assert_eq(p->rank, 3, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":15,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"every\":10,"), "%s", p->figures);
    nsc_rc_late_free(l);
    free(f);
}

/* A training job's late host: at the first of a step's 16 tensor-parallel
 * collectives, 8 steps. */
Test(rclate, a_host_late_once_a_training_step_is_late)
{
    nsc_diag_src src = {.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = &src;
    nsc_rc_late *l = nsc_rc_late_new(NRANKS);
    cr_assert_not_null(l);
    for (unsigned seq = 0; seq < 128; seq++) {
        double late = seq % 16 == 0 ? 4.0 : 0.1;
        add_coll(l, seq, (double[]){0, 0.05 * (seq % 3), late, 0.02}, late > 1);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    const nsc_problem *p = &f->p[0];
    cr_assert_eq(p->rank, 2, "%s", p->text);
    cr_assert_not_null(strstr(p->figures, "\"onset_seq\":0,"), "%s", p->figures);
    cr_assert_not_null(strstr(p->figures, "\"every\":16,"), "%s", p->figures);
    nsc_rc_late_free(l);
    free(f);
}
