/* test_rclinks.c: the links analysis's judgement of one link (engine/diag,
 * rclinks.c): a link is slow when its typical step is slow throughout, not
 * when a pause of a loaded host made a run of its steps late. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "rcint.h"

#define STEPS 40
#define NLINKS 6

/* A ring of 3 ranks on 2 channels, every step of every link healthy_ns. */
static rc_pass ring(uint64_t healthy_ns)
{
    rc_pass p = {.nranks = 3, .nlinks = NLINKS, .links_cap = NLINKS};
    p.links = calloc(NLINKS, sizeof *p.links);
    cr_assert_not_null(p.links);
    for (int i = 0; i < NLINKS; i++) {
        rc_link *k = &p.links[i];
        k->src = i % 3, k->dst = (i + 1) % 3, k->channel = (uint8_t)(i / 3);
        k->ns = malloc(STEPS * sizeof *k->ns);
        cr_assert_not_null(k->ns);
        k->n = k->cap = STEPS;
        for (size_t s = 0; s < STEPS; s++)
            k->ns[s] = healthy_ns;
    }
    return p;
}

static void ring_free(rc_pass *p)
{
    for (size_t i = 0; i < p->nlinks; i++)
        free(p->links[i].ns);
    free(p->links);
}

static void set_steps(rc_link *k, size_t from, size_t to, uint64_t ns)
{
    for (size_t s = from; s < to; s++)
        k->ns[s] = ns;
}

Test(rclinks, a_link_slow_throughout_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[0], 0, STEPS, 80000);
    uint64_t limit, ref = nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(ref, 20000);
    cr_assert_eq(p.links[0].state, NSC_LINK_SLOW);
    for (size_t i = 1; i < NLINKS; i++)
        cr_assert_eq(p.links[i].state, NSC_LINK_OK, "link %zu", i);
    ring_free(&p);
}

/* Eight steps of 1 ms in a row: 8 ms late in all, 3x on the whole link after
 * trimming, but in one run of its steps only. */
Test(rclinks, a_pause_in_one_run_of_steps_is_not_a_slow_link)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[2], 10, 18, 1000000);
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_geq(p.links[2].typical, limit, "slow on the whole: the case the runs are for");
    for (size_t i = 0; i < NLINKS; i++)
        cr_assert_eq(p.links[i].state, NSC_LINK_OK, "link %zu", i);
    ring_free(&p);
}

Test(rclinks, a_link_slow_from_the_first_quarter_on_is_slow)
{
    rc_pass p = ring(20000);
    set_steps(&p.links[4], STEPS / 4, STEPS, 90000);
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(p.links[4].state, NSC_LINK_SLOW);
    ring_free(&p);
}

/* A late proxy reports a slow link's steps in bursts: three of four almost
 * at once, the fourth with all their time. Slow in every run by its sum. */
Test(rclinks, a_slow_link_reported_in_bursts_is_slow)
{
    rc_pass p = ring(20000);
    for (size_t s = 0; s < STEPS; s++)
        p.links[1].ns[s] = s % 4 == 3 ? 640000 : 1000;
    uint64_t limit;
    nsc_rc_link_reference(&p, &limit);
    cr_assert_eq(p.links[1].state, NSC_LINK_SLOW);
    ring_free(&p);
}
