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
