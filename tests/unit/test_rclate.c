/* test_rclate.c: a late rank's onset (engine/diag, rclate.c), on collective
 * records as the collectives endpoint writes them and an empty ledger from a
 * source of canned pages. Four ranks; rank 2's host is 4 ms late from seq 0
 * on, but a loaded machine's pauses hide it: at seqs 1 and 2 rank 1 is
 * later still (rank 2 still 3 ms behind the others), at seq 3 rank 3; and
 * an intermittent fault's onset and period with a pause before or among
 * its collectives, and a host late once a training step or at 1 step in
 * 10. */
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
 * lateness split as the endpoint splits it: host_ms its host's (-1: all of
 * it where own, else none). */
static void add_coll_split(nsc_rc_late *l, unsigned seq, const double *arrive_ms, int own, double host_ms)
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
                                last, (unsigned long long)late,
                                (unsigned long long)(host_ms >= 0 ? (uint64_t)(host_ms * MS) : own ? late : 0),
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

static void add_coll(nsc_rc_late *l, unsigned seq, const double *arrive_ms, int own)
{
    add_coll_split(l, seq, arrive_ms, own, -1);
}

/* Empty findings reading from src (canned pages), and a late-rank pass of
 * NRANKS ranks. */
static nsc_findings *fresh(nsc_diag_src *src, nsc_rc_late **l)
{
    *src = (nsc_diag_src){.get = serve, .name = "canned"};
    nsc_findings *f = calloc(1, sizeof *f);
    cr_assert_not_null(f);
    f->src = src;
    *l = nsc_rc_late_new(NRANKS);
    cr_assert_not_null(*l);
    return f;
}

Test(rclate, a_late_rank_behind_a_later_one_keeps_its_onset)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
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

/* Rank 3's host late by late_ms(seq) (its own where 1 ms or more, the
 * others near 0) at n collectives: the one problem found, which must name
 * it, with the onset and period wanted. */
static void late_rank_3(unsigned n, double (*late_ms)(unsigned), unsigned onset, unsigned every)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < n; seq++) {
        double late = late_ms(seq);
        add_coll(l, seq, (double[]){0, 0.05 * (seq % 3), 0.02, late}, late > 1);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    const nsc_problem *p = &f->p[0];
    char want[64];
    cr_assert_eq(p->rank, 3, "%s", p->text);
    snprintf(want, sizeof want, "\"onset_seq\":%u,", onset);
    cr_assert_not_null(strstr(p->figures, want), "%s", p->figures);
    snprintf(want, sizeof want, "\"every\":%u,", every);
    cr_assert_not_null(strstr(p->figures, want), "%s", p->figures);
    nsc_rc_late_free(l);
    free(f);
}

/* 3 ms late in 1 collective of 10 from seq 5 on, and a loaded machine's
 * pause made it 1.5 ms late at seq 2: out of step with the fault's, not
 * its onset. */
static double pause_before(unsigned seq)
{
    return seq == 2 ? 1.5 : seq % 10 == 5 ? 3.0 : 0.1;
}

Test(rclate, a_pause_out_of_step_before_an_intermittent_fault_is_not_its_onset)
{
    late_rank_3(50, pause_before, 5, 10);
}

/* The same from seq 15 on, and a pause at seq 18, between two of the
 * fault's: neither its onset nor a shorter period. */
static double pause_between(unsigned seq)
{
    return seq == 18 ? 1.5 : seq >= 15 && seq % 10 == 5 ? 3.0 : 0.1;
}

Test(rclate, a_pause_between_an_intermittent_fault_s_keeps_its_onset_and_period)
{
    late_rank_3(50, pause_between, 15, 10);
}

/* A training job's host late at 1 step in 10 (1 tensor-parallel collective
 * in 160) from seq 32 on, 6 times; the job's start, its processes coming in
 * one by one, made it late at seqs 0 and 2 as well: late since seq 32, 1 in
 * 160. Before, a rank late at fewer than 1 in 20 was never late. */
static double one_step_in_ten(unsigned seq)
{
    return seq == 0 || seq == 2 ? 20.0 : seq % 160 == 32 ? 4.0 : 0.1;
}

Test(rclate, a_host_late_at_one_training_step_in_ten_is_late_since_its_onset)
{
    late_rank_3(960, one_step_in_ten, 32, 160);
}

/* A training job's late host: 4 ms at the first of a step's 16
 * tensor-parallel collectives, 8 steps. */
static double once_a_step(unsigned seq)
{
    return seq % 16 == 0 ? 4.0 : 0.1;
}

Test(rclate, a_host_late_once_a_training_step_is_late)
{
    late_rank_3(128, once_a_step, 0, 16);
}

/* A training job's tensor-parallel group over 40 steps of 16 collectives:
 * at each seq, arrive(seq, ms) sets the ranks' arrivals (the others near 0)
 * and says whether the last one is late of its own; the problem found
 * names want_rank, on a beat of 16, or none when it is negative. */
static void train_tp(int (*arrive)(unsigned, double *), int want_rank)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < 40 * 16; seq++) {
        double ms[NRANKS] = {0, 0.05 * (seq % 3), 0.02, 0.1};
        int own = arrive(seq, ms);
        add_coll(l, seq, ms, own);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    if (want_rank < 0) {
        cr_assert_eq(f->n, 0, "%s", f->n ? f->p[0].text : "");
    } else {
        cr_assert_eq(f->n, 1, "%zu", f->n);
        cr_assert_eq(f->p[0].rank, want_rank, "%s", f->p[0].text);
        cr_assert_not_null(strstr(f->p[0].figures, "\"every\":16,"), "%s", f->p[0].figures);
    }
    nsc_rc_late_free(l);
    free(f);
}

/* A loaded machine's pauses, as rootcause.sh's t_host runs saw them: 1 to
 * 3 ms at a collective in 9 or so, the rank moving, and 30 ms at a step's
 * start in 5 (the step's first collective is seq % 16 == 0). */
static int pauses(unsigned seq, double *ms)
{
    if (seq % 16 == 0 && (seq / 16) % 5 == 2) {
        ms[(seq / 16) % NRANKS] = 30.0;
        return 1;
    }
    if (seq % 9 == 4) {
        ms[(seq / 9) % NRANKS] = 1.0 + (seq % 3);
        return 1;
    }
    return 0;
}

/* Rank 1's host 4 ms late at each step's start, behind a paused rank at
 * a fifth of them, on time at every seventh: late, though affected at 1 in
 * 26 of its collectives and the others as often. */
static int host_late_a_step(unsigned seq, double *ms)
{
    int own = pauses(seq, ms);
    if (seq % 16 == 0 && (seq / 16) % 7 != 3 && ms[1] < 4.0) {
        ms[1] = 4.0;
        own |= ms[0] < 4.0 && ms[2] < 4.0 && ms[3] < 4.0;
    }
    return own;
}

Test(rclate, a_host_late_at_each_step_s_first_among_as_many_pauses_is_late)
{
    train_tp(host_late_a_step, 1);
}

/* No fault: rank 0 paused 2 ms at 5 of each 8 steps' starts as well. */
static int paused_at_step_starts(unsigned seq, double *ms)
{
    int own = pauses(seq, ms);
    if (seq % 16 == 0 && (seq / 16) % 8 < 5 && ms[0] < 2.0) {
        ms[0] = 2.0;
        own |= ms[1] < 2.0 && ms[2] < 2.0 && ms[3] < 2.0;
    }
    return own;
}

Test(rclate, pauses_at_most_step_starts_are_no_late_rank)
{
    train_tp(paused_at_step_starts, -1);
}

/* No fault: rank 2's process slowed throughout, 2 ms behind rank 1 (later
 * still, not of its own) at 3 of each 4 collectives, last of its own at 1
 * in 40: on every second collective, but off it as often. */
static int slowed_throughout(unsigned seq, double *ms)
{
    if (seq % 40 == 0) {
        ms[2] = 2.0;
        return 1;
    }
    if (seq % 4 != 3)
        ms[2] = 2.0, ms[1] = 5.0;
    return 0;
}

Test(rclate, a_process_slowed_on_and_off_any_beat_is_no_late_rank)
{
    train_tp(slowed_throughout, -1);
}

/* A loaded machine's pauses of one process, as rootcause.sh's jitter run
 * saw them: rank 3's host 1.3 to 6.8 ms late of its own at seqs 5, 6, 8
 * and 9 of 12, on time at the others after the first: 4 in 7 since then,
 * no fault's persistence (one in every collective, or on a beat). */
/* Rank 3's host late by late_ms[seq] (its own where 1 ms or more, the
 * others near 0) at each of COLLS collectives: no problem found. */
static void no_late_rank(const double *late_ms)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < COLLS; seq++)
        add_coll(l, seq, (double[]){0, 0.05 * (seq % 3), 0.02, late_ms[seq]}, late_ms[seq] > 1);
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 0, "%s", f->n ? f->p[0].text : "");
    nsc_rc_late_free(l);
    free(f);
}

Test(rclate, pauses_at_4_of_7_collectives_are_no_late_rank)
{
    no_late_rank((double[COLLS]){0, 0, 0, 0, 0, 2.5, 1.3, 0, 6.8, 2.3, 0.1, 0.2});
}

/* A host 3 ms late from seq 6 on, at seq 8 behind rank 1, paused 8 ms:
 * late at all of its 6 collectives since, one of them hidden. */
Test(rclate, a_late_host_from_mid_job_hidden_once_is_late)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < COLLS; seq++)
        add_coll(l, seq, (double[]){0, seq == 8 ? 8.0 : 0.05, 0.02, seq >= 6 ? 3.0 : 0.1}, seq >= 6 && seq != 8);
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    cr_assert_eq(f->p[0].rank, 3, "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"onset_seq\":6,"), "%s", f->p[0].figures);
    nsc_rc_late_free(l);
    free(f);
}

/* 3 ms late in 1 collective of 3 from seq 0 over 24, as rootcause.sh's
 * host_every3 run saw it on a loaded machine: pauses of its own at seqs 7
 * and 14 split two gaps, at 8, 13 and 19 it was late by what it carried
 * (not of its own), at 2 and 15 behind rank 1. Still 1 in 3 from seq 0. */
static double every3_loaded(unsigned seq)
{
    static const double late[24] = {7.1, 0, 0.3, 1.7, 0.3, 0, 3.1, 8.7, 1.3, 3.2, 0, 0,
                                    2.8, 2.8, 38.6, 0.2, 0, 0.9, 20.5, 16.4, 0, 3.2, 0, 0.1};
    return seq == 8 || seq == 13 || seq == 19 ? -late[seq] : late[seq];
}

Test(rclate, an_intermittent_host_paused_between_keeps_its_period)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < 24; seq++) {
        double late = every3_loaded(seq), at = late < 0 ? -late : late;
        double r1 = seq == 2 || seq == 15 ? 6.0 : 0.05;
        add_coll(l, seq, (double[]){0, r1, 0.02, seq == 2 || seq == 15 ? 3.0 : at}, late > 1 && seq);
    }
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    cr_assert_eq(f->p[0].rank, 3, "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"onset_seq\":0,"), "%s", f->p[0].figures);
    cr_assert_not_null(strstr(f->p[0].figures, "\"every\":3,"), "%s", f->p[0].figures);
    nsc_rc_late_free(l);
    free(f);
}

/* Rank 1's host 4 ms late at each step's start, and late of its own 2 ms
 * at the step's eighth collective in 3 steps of 4 as well (rootcause.sh's
 * t_two: a slow GPU in the other pipeline stage): the gaps between its
 * affected collectives are 7, 9 and 16, their median 9; it keeps the
 * step's beat, and is late on it. */
static int host_late_a_step_and_between(unsigned seq, double *ms)
{
    if (seq % 16 == 0)
        ms[1] = 4.0;
    else if (seq % 16 == 7 && (seq / 16) % 4 != 0)
        ms[1] = 2.0;
    return seq % 16 == 0 || ms[1] >= 2.0;
}

Test(rclate, a_host_late_on_a_beat_and_off_it_now_and_then_is_late_on_the_beat)
{
    train_tp(host_late_a_step_and_between, 1);
}

/* Rank 3's host 4 ms late of its own at each of 12 collectives, and last
 * at 12 more, 5 ms late, not of its own, 3 ms of it its host's (as the
 * endpoint split it behind another fault): its host's share is its 3.9 ms
 * beyond the others at each collective late of its own, the rest inherited. */
Test(rclate, a_late_rank_s_host_share_counts_where_it_was_late_of_its_own)
{
    nsc_diag_src src;
    nsc_rc_late *l;
    nsc_findings *f = fresh(&src, &l);
    for (unsigned seq = 0; seq < 24; seq++)
        add_coll_split(l, seq, (double[]){0, 0.1, 0.05, seq % 2 ? 5.0 : 4.0}, seq % 2 == 0, seq % 2 ? 3.0 : -1);
    cr_assert_eq(nsc_rc_comm(f, l, "0xc", ""), NSC_DIAG_OK, "%s", src.err);
    cr_assert_eq(f->n, 1);
    cr_assert_eq(f->p[0].rank, 3, "%s", f->p[0].text);
    cr_assert_not_null(strstr(f->p[0].figures, "\"late_of_its_own\":12,"), "%s", f->p[0].figures);
    cr_assert_not_null(strstr(f->p[0].figures, "\"host_late_ns\":46800000,"), "%s", f->p[0].figures);
    nsc_rc_late_free(l);
    free(f);
}

/* 3 ms late at every collective from seq 6 on, and a loaded machine's
 * pauses made it 1.5 ms late at seqs 0 and 2: two close together before
 * the run are not its onset (it was seq 0). */
static double two_pauses_before(unsigned seq)
{
    return seq == 0 || seq == 2 ? 1.5 : seq >= 6 ? 3.0 : 0.1;
}

Test(rclate, two_pauses_before_a_fault_from_mid_job_are_not_its_onset)
{
    late_rank_3(24, two_pauses_before, 6, 1);
}
