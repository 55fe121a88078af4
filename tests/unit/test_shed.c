/* Unit tests for the self-cost guard's policy (common/shed.c): the budget's
 * parsing, the shedding order, and the hysteresis that restores types. */
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
        cost += SEC / 50;  /* 2 % of the period's collective time */
        coll += SEC;
        cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
        want |= 1u << first[i];
        cr_assert_eq(s.mask, want, "step %u", i);
    }
    cr_assert_eq(s.changes, 4);
    for (unsigned i = 4; i < nsc_shed_order_len + 2; i++) {
        cost += SEC / 50;
        coll += SEC;
        nsc_shed_step(&s, cost, coll);
    }
    cr_assert_eq(s.depth, nsc_shed_order_len, "stops at the end of the order");
    cr_assert_eq(s.mask & (1u << NSC_T_GROUP | 1u << NSC_T_COLL | 1u << NSC_T_P2P), 0,
                 "the collectives themselves are never shed");
}

Test(shed, restores_the_last_shed_only_under_half_the_budget)
{
    nsc_shed s = {.budget_ppm = 10000};
    uint64_t cost = SEC / 50, coll = SEC;
    nsc_shed_step(&s, cost, coll);
    cost += SEC / 50, coll += SEC;
    nsc_shed_step(&s, cost, coll);
    cr_assert_eq(s.mask, 1u << NSC_T_PROXY_STEP | 1u << NSC_T_NET_PLUGIN);
    cost += SEC / 125, coll += SEC;  /* 0.8 %: under budget, over half of it */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0);
    cr_assert_eq(s.depth, 2);
    cost += SEC / 250, coll += SEC;  /* 0.4 % */
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
    cr_assert_eq(s.mask, 1u << NSC_T_PROXY_STEP, "NetPlugin, shed last, comes back first");
    cost += SEC / 250, coll += SEC;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 1);
    cr_assert_eq(s.mask, 0);
    cr_assert_eq(s.changes, 4);
    cost += SEC / 250, coll += SEC;
    cr_assert_eq(nsc_shed_step(&s, cost, coll), 0, "nothing left to restore");
}

Test(shed, off_never_sheds)
{
    nsc_shed s = {0};
    cr_assert_eq(nsc_shed_step(&s, SEC, SEC), 0);
    cr_assert_eq(s.mask, 0);
}
