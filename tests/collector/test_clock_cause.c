/* The host models' errors narrowed by causality (common/store/clockcause.h):
 * two hosts whose probes err opposite ways are narrowed around their truth
 * by observations from both sides; a third host is narrowed through the
 * others; observations that contradict the probes are reported and narrow
 * nothing; too many hosts are refused. */
#include <criterion/criterion.h>
#include <math.h>

#include "clockcause.h"

#define US 1000.0
#define T 5000000000ull

/* n hosts, each with the probe interval +-bound. */
static void hosts(nsc_clock_cause *cc, size_t n, double bound)
{
    cr_assert_eq(nsc_clock_cause_init(cc, n), 0);
    for (size_t h = 0; h < n; h++)
        nsc_clock_cause_bound(cc, h, bound);
}

/* An event at true time t on a host whose model errs by err, read aligned. */
static uint64_t aligned(uint64_t t, double err)
{
    return (uint64_t)((double)t + err);
}

Test(clock_cause, opposite_errors_narrowed_around_the_truth)
{
    nsc_clock_cause cc;
    hosts(&cc, 2, 30 * US);
    double e0 = 20 * US, e1 = -20 * US;
    /* host 0's kernel ends 2 us after host 1's starts, and host 1's 3 us
     * after host 0's: each time within 0.5 us */
    nsc_clock_cause_after(&cc, 0, aligned(T + 2000, e0), 1, aligned(T, e1), 1 * US);
    nsc_clock_cause_after(&cc, 1, aligned(T + 3000, e1), 0, aligned(T, e0), 1 * US);
    cr_assert_eq(nsc_clock_cause_solve(&cc), 0);
    cr_assert(cc.lo[0] <= e0 && e0 <= cc.hi[0], "host 0: %.0f not in [%.0f, %.0f]", e0, cc.lo[0], cc.hi[0]);
    cr_assert(cc.lo[1] <= e1 && e1 <= cc.hi[1], "host 1: %.0f not in [%.0f, %.0f]", e1, cc.lo[1], cc.hi[1]);
    /* e0 - e1 within [36, 43] us, each within +-30: e0 >= 6, e1 <= -6 */
    cr_assert_float_eq(cc.lo[0], 6 * US, 1);
    cr_assert_float_eq(cc.hi[0], 30 * US, 1);
    cr_assert_float_eq(cc.lo[1], -30 * US, 1);
    cr_assert_float_eq(cc.hi[1], -6 * US, 1);
    nsc_clock_cause_free(&cc);
}

Test(clock_cause, loose_observations_keep_the_probes_bounds)
{
    nsc_clock_cause cc;
    hosts(&cc, 2, 30 * US);
    nsc_clock_cause_bound(&cc, 1, 25 * US);
    /* ends a millisecond after the other's start: says nothing new */
    nsc_clock_cause_after(&cc, 0, T + 1000000, 1, T, 0);
    nsc_clock_cause_after(&cc, 1, T + 1000000, 0, T, 0);
    cr_assert_eq(nsc_clock_cause_solve(&cc), 0);
    cr_assert_float_eq(cc.lo[0], -30 * US, 1e-9);
    cr_assert_float_eq(cc.hi[1], 25 * US, 1e-9);
    nsc_clock_cause_free(&cc);
}

Test(clock_cause, narrowed_through_another_host)
{
    nsc_clock_cause cc;
    hosts(&cc, 3, 30 * US);
    /* e0 - e1 <= -50 and e1 - e2 <= -5: e0 - e2 <= -55, so e0 <= -25 and
     * e2 >= 25, though hosts 0 and 2 never met */
    nsc_clock_cause_after(&cc, 0, T, 1, T + 50000, 0);
    nsc_clock_cause_after(&cc, 1, T, 2, T + 5000, 0);
    cr_assert_eq(nsc_clock_cause_solve(&cc), 0);
    cr_assert_float_eq(cc.hi[0], -25 * US, 1);
    cr_assert_float_eq(cc.lo[2], 25 * US, 1);
    nsc_clock_cause_free(&cc);
}

Test(clock_cause, contradiction_reported_and_nothing_narrowed)
{
    nsc_clock_cause cc;
    hosts(&cc, 2, 30 * US);
    /* e0 - e1 <= -70: beyond what +-30 each allows */
    nsc_clock_cause_after(&cc, 0, T, 1, T + 70000, 0);
    cr_assert_eq(nsc_clock_cause_solve(&cc), NSC_CLOCK_CAUSE_ECONTRADICT);
    cr_assert_float_eq(cc.lo[0], -30 * US, 1e-9);
    cr_assert_float_eq(cc.hi[0], 30 * US, 1e-9);
    cr_assert_float_eq(cc.lo[1], -30 * US, 1e-9);
    cr_assert_float_eq(cc.hi[1], 30 * US, 1e-9);
    nsc_clock_cause_free(&cc);
}

Test(clock_cause, too_many_hosts_refused)
{
    nsc_clock_cause cc;
    cr_assert_eq(nsc_clock_cause_init(&cc, NSC_CLOCK_CAUSE_MAX_HOSTS + 1), NSC_CLOCK_CAUSE_EHOSTS);
    nsc_clock_cause_free(&cc);
}
