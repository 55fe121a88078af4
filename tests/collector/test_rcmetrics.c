/* test_rcmetrics.c: when the root-cause metrics analyse a done job again
 * (collector/rcmetrics.h, nsc_rcmetrics_changed). */
#include <criterion/criterion.h>

#include "rcmetrics.h"

/* Another collector's share of the job reached the store after the
 * analysis: the status lists the same processes, the store's version moved. */
Test(rcmetrics, done_job_again_when_the_store_holds_more)
{
    nsc_rcm_view then = {.procs = 4, .version_ok = 1, .version = 7}, now = then;
    now.version = 8;
    cr_assert_eq(nsc_rcmetrics_changed(&then, &now), 1);
}

Test(rcmetrics, done_job_kept_while_nothing_changed)
{
    nsc_rcm_view then = {.procs = 4, .version_ok = 1, .version = 7}, now = then;
    cr_assert_eq(nsc_rcmetrics_changed(&then, &now), 0);
}

Test(rcmetrics, done_job_again_when_its_processes_change)
{
    nsc_rcm_view then = {.procs = 2, .version_ok = 1, .version = 7}, now = then;
    now.procs = 4;
    cr_assert_eq(nsc_rcmetrics_changed(&then, &now), 1);
}

/* A version that could not be read proves nothing unchanged. */
Test(rcmetrics, done_job_again_when_the_version_is_unknown)
{
    nsc_rcm_view then = {.procs = 4, .version_ok = 1, .version = 7}, now = {.procs = 4};
    cr_assert_eq(nsc_rcmetrics_changed(&then, &now), 1);
    cr_assert_eq(nsc_rcmetrics_changed(&now, &then), 1);
}

/* A pass that reads each communicator's last 8 seqs (rootcause_window_seqs):
 * what an earlier pass found and this one could not see again stays. */
static nsc_problem problem(int severity, uint64_t seq)
{
    nsc_problem p = {.severity = severity, .seq = seq, .rank = 1, .peer = -1, .channel = -1, .step = -1};
    return p;
}

Test(rcmetrics, verdict_below_the_window_is_carried)
{
    nsc_problem p = problem(NSC_SEV_MISMATCH, 3);
    cr_assert_eq(nsc_rcmetrics_carried(&p, 20, 8), 1);
}

/* Inside the window the pass judged it again: gone means gone. */
Test(rcmetrics, verdict_inside_the_window_is_not_carried)
{
    nsc_problem p = problem(NSC_SEV_MISSING, 13);
    cr_assert_eq(nsc_rcmetrics_carried(&p, 20, 8), 0);
    p.seq = 12;
    cr_assert_eq(nsc_rcmetrics_carried(&p, 20, 8), 1);
}

/* Late ranks and links are judged over the window's seqs (seq 0): carried
 * once the window cut the communicator, never while it reads it whole. */
Test(rcmetrics, judged_over_seqs_carried_only_when_the_window_cut)
{
    nsc_problem late = problem(NSC_SEV_LATE, 0), link = problem(NSC_SEV_SLOW_LINK, 0);
    cr_assert_eq(nsc_rcmetrics_carried(&late, 20, 8), 1);
    cr_assert_eq(nsc_rcmetrics_carried(&link, 20, 8), 1);
    cr_assert_eq(nsc_rcmetrics_carried(&late, 5, 8), 0);
    cr_assert_eq(nsc_rcmetrics_carried(&late, 20, 0), 0);
}

/* What the live state says (a lag, a hang, a death) is read whole at every
 * pass: one that ended is not kept. */
Test(rcmetrics, live_state_verdicts_are_never_carried)
{
    int live[] = {NSC_SEV_LAGGING, NSC_SEV_HUNG, NSC_SEV_DEAD, NSC_SEV_NEVER_JOINED, NSC_SEV_DROPPED,
                  NSC_SEV_P2P_UNMATCHED};
    for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
        nsc_problem p = problem(live[i], 3);
        cr_assert_eq(nsc_rcmetrics_carried(&p, 20, 8), 0, "severity %d", live[i]);
    }
}
