/* test_cost.c: the self-cost guard's sampler (plugin/cost.c) on samples fed
 * by hand: the clock's own overhead taken off, a sample far beyond the
 * thread's median (the thread not running) counted as the median and
 * counted, gaps that make the estimate right for calls that come in a fixed
 * pattern, and a calibration that measures a plausible overhead. */
#include <criterion/criterion.h>
#include <string.h>

#include "internal.h"

/* A thread's sampler as tbuf.c's claim leaves it, with fixed bounds: 1000
 * ticks to 10000, an overhead of 10. */
static void fresh(nsc_tbuf *tb, uint32_t seed)
{
    memset(tb, 0, sizeof *tb);
    nsc_cost_seed(tb, seed);
    atomic_store(&nsc_g_cost_min, 1000);
    atomic_store(&nsc_g_cost_max, 10000);
    atomic_store(&nsc_g_cost_overhead, 10);
}

static uint64_t cost(const nsc_tbuf *tb) { return atomic_load(&tb->c.cost_ns); }

Test(cost, overhead_is_taken_off_and_the_gap_weighs_the_sample)
{
    nsc_tbuf tb;
    fresh(&tb, 7);
    uint32_t gap = tb.cost_gap;
    cr_assert(gap >= 1 && gap < 2 * NSC_COST_EVERY, "%u", gap);
    nsc_cost_fold(&tb, 110);
    cr_assert_eq(cost(&tb), 100ull * gap);
    uint64_t before = cost(&tb);
    gap = tb.cost_gap;
    nsc_cost_fold(&tb, 5); /* under the overhead: nothing, never negative */
    cr_assert_eq(cost(&tb), before);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 0);
}

/* Around a median of 100: a sample of 1300 is in bounds, one just over 16
 * medians is not, nor one of 50000 (over the 10000 cap: the thread
 * descheduled); both count as the median, and are counted. */
Test(cost, samples_beyond_sixteen_medians_count_as_the_median)
{
    nsc_tbuf tb;
    fresh(&tb, 11);
    for (int i = 0; i < 200; i++)
        nsc_cost_fold(&tb, 110);
    cr_assert(tb.cost_med >= 85 && tb.cost_med <= 115, "median %u", tb.cost_med);
    uint32_t med = tb.cost_med;
    uint64_t before = cost(&tb), gap = tb.cost_gap;
    nsc_cost_fold(&tb, 1310);
    cr_assert_eq(cost(&tb), before + 1300 * gap, "in bounds: counted as it is");
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 0);
    med = tb.cost_med;
    before = cost(&tb), gap = tb.cost_gap;
    nsc_cost_fold(&tb, 16 * (uint64_t)med + 10 + 1);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 1);
    cr_assert_eq(cost(&tb), before + med * gap, "an outlier counts as the median");
    before = cost(&tb), gap = tb.cost_gap;
    nsc_cost_fold(&tb, 50000);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 2);
    cr_assert_eq(cost(&tb), before + tb.cost_med * gap);
}

/* Cheap calls (a median of 5) still keep samples up to the 1000-tick floor:
 * the bound never cuts a real slow call of a few hundred. Before any median,
 * only the cap applies. */
Test(cost, the_bound_has_a_floor_and_a_cap)
{
    nsc_tbuf tb;
    fresh(&tb, 13);
    nsc_cost_fold(&tb, 9010);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 0, "no median yet: up to the cap");
    fresh(&tb, 13);
    for (int i = 0; i < 200; i++)
        nsc_cost_fold(&tb, 15);
    nsc_cost_fold(&tb, 1010);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 0, "16 medians are under the floor");
    nsc_cost_fold(&tb, 1012);
    cr_assert_eq(atomic_load(&tb.c.cost_outliers), 1);
}

/* NCCL's calls repeat per collective: here one call in 32 costs 800 ticks
 * and the others nothing. A fixed gap of 64 would time the same call of the
 * pattern every time (an estimate of 0 or twice the truth); random gaps
 * estimate it within 10 %, and time each about one call in 64. */
Test(cost, random_gaps_see_through_a_periodic_pattern)
{
    nsc_tbuf tb;
    fresh(&tb, 17);
    atomic_store(&nsc_g_cost_overhead, 0);
    enum { CALLS = 32 * 100000 };
    uint64_t samples = 0;
    for (uint32_t i = 0; i < CALLS; i++)
        if (nsc_cost_begin(&tb)) {
            nsc_cost_fold(&tb, i % 32 == 0 ? 800 : 0);
            samples++;
        }
    uint64_t truth = 800ull * (CALLS / 32);
    double err = ((double)cost(&tb) - (double)truth) / (double)truth;
    cr_assert(err > -0.1 && err < 0.1, "estimate %llu, truth %llu", (unsigned long long)cost(&tb),
              (unsigned long long)truth);
    cr_assert(samples > CALLS / 70 && samples < CALLS / 58, "%llu samples", (unsigned long long)samples);
}

/* The calibration: an overhead that is a small part of the floor (back-to-back
 * reads of a clock take nanoseconds, not a microsecond), bounds in order. */
Test(cost, calibration_measures_the_clock_overhead)
{
    nsc_g_cost_counter = nsc_clock_select();
    nsc_clock c;
    if (nsc_g_cost_counter)
        nsc_clock_start(&c);
    nsc_cost_calibrate(nsc_g_cost_counter ? c.ns_per_tick : 0);
    cr_assert_lt(atomic_load(&nsc_g_cost_overhead), atomic_load(&nsc_g_cost_min));
    cr_assert_lt(atomic_load(&nsc_g_cost_min), atomic_load(&nsc_g_cost_max));
}
