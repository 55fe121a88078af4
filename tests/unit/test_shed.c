/* Unit tests for the self-cost guard's policy (common/shed.c): the budget's
 * parsing, the shedding order, how far it sheds at once, its window, and the
 * hysteresis that restores types. */
#include <criterion/criterion.h>

#include "event.h"
#include "shed.h"

#define SEC 1000000000ull

Test(shed, parses_percentages_and_off)
{
    uint32_t ppm = 7;
    cr_assert_eq(nsc_shed_parse("1", &ppm), 0);
    cr_assert_eq(ppm, 10000);
    cr_assert_eq(nsc_shed_parse("0.5", &ppm), 0);
    cr_assert_eq(ppm, 5000);
    cr_assert_eq(nsc_shed_parse("off", &ppm), 0);
    cr_assert_eq(ppm, 0);
    cr_assert_eq(nsc_shed_parse("0", &ppm), 0);
    cr_assert_eq(ppm, 0);
    cr_assert_eq(nsc_shed_parse("", &ppm), -1);
    cr_assert_eq(nsc_shed_parse("1%", &ppm), -1);
    cr_assert_eq(nsc_shed_parse("-1", &ppm), -1);
    cr_assert_eq(nsc_shed_parse("101", &ppm), -1);
    cr_assert_eq(nsc_shed_parse("nan", &ppm), -1);
}

Test(shed, sheds_in_the_documented_order_while_over_budget)
{
    nsc_shed s = {.budget_ppm = 10000};  /* 1 % */
    uint64_t cost = 0, coll = 0;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0, "no collective time: no verdict");
    const uint8_t first[] = {NSC_T_PROXY_STEP, NSC_T_NET_PLUGIN, NSC_T_KERNEL_PHASE, NSC_T_KERNEL_CH};
    uint32_t want = 0;
    for (unsigned i = 0; i < 4; i++) {
        cost += 13 * SEC / 1000;  /* 1.3 % of the period's collective time: one type */
        coll += SEC;
        cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
        want |= 1u << first[i];
        cr_assert_eq(s.mask, want, "step %u", i);
    }
    cr_assert_eq(s.changes, 4);
    for (unsigned i = 4; i < nsc_shed_order_len + 2; i++) {
        cost += 13 * SEC / 1000;
        coll += SEC;
        nsc_shed_step(&s, cost, coll);
    }
    cr_assert_eq(s.depth, nsc_shed_order_len, "stops at the end of the order");
    cr_assert_eq(s.mask & (1u << NSC_T_COLL | 1u << NSC_T_P2P), 0,
                 "the collectives themselves are never shed");
    cr_assert_eq(nsc_shed_order[nsc_shed_order_len - 1], NSC_T_GROUP, "Group last");
}

Test(shed, restores_the_last_shed_only_under_half_the_budget)
{
    nsc_shed s = {.budget_ppm = 10000};
    uint64_t cost = 13 * SEC / 1000, coll = SEC;
    nsc_shed_step(&s, cost, coll);
    cost += SEC / 125, coll += 3 * SEC;  /* 0.27 %: the job 0.53 %, over half the budget */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0);
    cr_assert_eq(s.depth, 1);
    cost += SEC / 250, coll += 4 * SEC;  /* 0.1 %: the job 0.31 % */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
    cr_assert_eq(s.mask, 0, "ProxyStep back");
    cr_assert_eq(s.changes, 2);
    cost += SEC / 1000, coll += SEC;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0, "nothing left to restore");
}

/* The whole job's share is what the budget bounds: after 2 s at 3 %, windows
 * at 0.4 % shed on while the job is over 1 % and bring nothing back until it
 * is under half of it. */
Test(shed, restores_only_when_the_whole_job_has_room)
{
    nsc_shed s = {.budget_ppm = 10000};
    uint64_t cost = 0, coll = 0;
    for (int i = 0; i < 2; i++) {
        cost += 3 * SEC / 100, coll += SEC;
        nsc_shed_step(&s, cost, coll);
    }
    uint32_t most = s.depth;
    int back = 0;
    for (int i = 0; i < 80 && !back; i++) {
        cost += SEC / 250, coll += SEC;
        uint32_t depth = s.depth;
        nsc_shed_step(&s, cost, coll);
        most = s.depth > most ? s.depth : most;
        back = s.depth < depth;
        cr_assert(!back || cost * 200 < coll, "restored at a job share of %.2f %%", 100.0 * cost / coll);
        cr_assert(s.depth <= depth || cost * 100 > coll, "shed at a job share of %.2f %%", 100.0 * cost / coll);
    }
    cr_assert(back, "never restored");
    cr_assert_eq(s.depth, most - 1);
}

/* Far over budget, a type per factor 1.4 of the overshoot in one verdict. */
Test(shed, sheds_more_at_once_the_further_over)
{
    nsc_shed s = {.budget_ppm = 10000};
    cr_assert_eq(nsc_shed_step(&s, 5 * SEC / 100, SEC), 1);  /* 5 %: 5, 3.6, 2.6, 1.8, 1.3 over 1 */
    cr_assert_eq(s.depth, 5);
    cr_assert_eq(s.changes, 1);
}

/* A heartbeat period holds too few collectives for a verdict: the periods'
 * times add up until NSC_SHED_WINDOW_NS of collective time came, after a
 * first verdict on NSC_SHED_FIRST_WINDOW_NS. */
Test(shed, decides_on_a_window_of_collective_time)
{
    nsc_shed s = {.budget_ppm = 10000};
    const uint64_t period = NSC_SHED_WINDOW_NS / 5;
    uint64_t cost = 0, coll = NSC_SHED_FIRST_WINDOW_NS - 1;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0);
    cr_assert_eq(s.last_coll, 0, "no first verdict yet");
    coll++;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0, "a first verdict: nothing to shed");
    cr_assert_eq(s.last_coll, coll);
    for (int i = 0; i < 4; i++) {
        cost += period / 10, coll += period;  /* 10 % */
        cr_assert_eq(nsc_shed_step(&s, cost, coll), 0, "period %d", i);
    }
    cost += period / 200, coll += period;  /* the window: (4 x 10 + 0.5) / 5 = 8.1 % */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
    cr_assert_eq(s.depth, 7, "8.1, 5.8, 4.1, 3.0, 2.1, 1.5, 1.08 over 1");
}

Test(shed, off_never_sheds)
{
    nsc_shed s = {0};
    cr_assert_eq(nsc_shed_step(&s, SEC, SEC), 0);
    cr_assert_eq(s.mask, 0);
}

/* The ramp before shedding is paid back: after a window at 4 %, windows at
 * 0.8 % (under budget) go on shedding while the job's share is over 1 %. */
Test(shed, sheds_while_the_whole_job_is_over_budget)
{
    nsc_shed s = {.budget_ppm = 10000};
    uint64_t cost = 4 * SEC / 100, coll = SEC;
    nsc_shed_step(&s, cost, coll);
    uint32_t depth = s.depth;
    cost += SEC / 125, coll += SEC;  /* the job: 2.4 % */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
    cr_assert_eq(s.depth, depth + 3, "2.4, 1.7, 1.2 over 1");
}
