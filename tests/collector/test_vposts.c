/* test_vposts.c: which verdicts a collector posts to the webhook, pass by
 * pass (collector/vposts.h, docs/alerts.md "Webhook"), on the sequences of
 * clickhouse_verdict_kill: two collectors, a hang at rank 1, the announcer
 * killed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "vposts.h"

#define S 1000000000ull
#define SETTLE (3 * S)
#define WALL0 1800000000000000000ll

/* A hang's verdict: rank `rank` missing from collective 3. */
static nsc_problem missing(int64_t rank)
{
    nsc_problem p;
    memset(&p, 0, sizeof p);
    p.severity = NSC_SEV_MISSING;
    snprintf(p.kind, sizeof p.kind, "missing");
    snprintf(p.comm, sizeof p.comm, "0x1234");
    p.seq = 3;
    p.rank = rank, p.peer = -1, p.channel = -1, p.step = -1;
    return p;
}

typedef struct posted {
    int64_t rank[16];
    size_t n;
} posted;

static int on_post(void *arg, const nsc_problem *p, int64_t found_ns)
{
    posted *got = arg;
    cr_assert_geq(found_ns, WALL0);
    cr_assert_lt(got->n, 16);
    got->rank[got->n++] = p->rank;
    return 0;
}

/* One pass at t_ns over the verdicts p[0..n). */
static void pass(nsc_vposts *v, uint64_t t_ns, const nsc_problem *p, size_t n, int announces, posted *got)
{
    const nsc_problem *fresh[8];
    size_t nfresh;
    cr_assert_eq(nsc_vposts_pass(v, p, n, S + t_ns, WALL0 + (int64_t)t_ns, SETTLE, announces, fresh, &nfresh,
                                 on_post, got),
                 0);
}

/* b finds the hang while a announces the job; a is killed before it posts,
 * and the hang ends before a's snapshot ages out: b, taking the job over,
 * posts the verdict it held, once. */
Test(vposts, heir_posts_a_held_verdict_gone_by_the_take_over)
{
    nsc_vposts v = {0};
    posted got = {0};
    nsc_problem hang = missing(1);
    for (uint64_t t = 0; t <= 4 * S; t += S / 2)
        pass(&v, t, &hang, 1, 0, &got);
    pass(&v, 5 * S, NULL, 0, 0, &got);
    pass(&v, 20 * S, NULL, 0, 1, &got);
    pass(&v, 21 * S, NULL, 0, 1, &got);
    cr_assert_eq(got.n, 1, "posted %zu verdicts", got.n);
    cr_assert_eq(got.rank[0], 1);
    nsc_vposts_free(&v);
}

/* The announcer's view lacks rank 0's share at first (its records on their
 * way): rank 0 seems missing too, then the view completes. Only the right
 * verdict is posted, once, after it held for the settle time. */
Test(vposts, a_partial_views_verdict_is_not_posted)
{
    nsc_vposts v = {0};
    posted got = {0};
    nsc_problem partial = missing(0), hang = missing(1);
    pass(&v, 0, &partial, 1, 1, &got);
    pass(&v, S, &partial, 1, 1, &got);
    for (uint64_t t = 2 * S; t < 5 * S; t += S / 2)
        pass(&v, t, &hang, 1, 1, &got);
    cr_assert_eq(got.n, 0, "posted before the settle time: rank %lld", got.n ? (long long)got.rank[0] : -1ll);
    cr_assert_eq(nsc_vposts_due(&v, SETTLE), S + 5 * S);
    for (uint64_t t = 5 * S; t < 30 * S; t += S / 2)
        pass(&v, t, &hang, 1, 1, &got);
    cr_assert_eq(got.n, 1, "posted %zu verdicts", got.n);
    cr_assert_eq(got.rank[0], 1);
    cr_assert_eq(nsc_vposts_due(&v, SETTLE), 0);
    nsc_vposts_free(&v);
}

/* clickhouse_verdict_kill's failure: b held the hang while a announced;
 * at the take-over pass b's view was partial (rank 0 missing too), then
 * complete again. The partial verdict is not posted, the hang is. */
Test(vposts, take_over_on_a_partial_view)
{
    nsc_vposts v = {0};
    posted got = {0};
    nsc_problem partial = missing(0), hang = missing(1);
    for (uint64_t t = 0; t <= 4 * S; t += S / 2)
        pass(&v, t, &hang, 1, 0, &got);
    pass(&v, 15 * S, &partial, 1, 1, &got);
    for (uint64_t t = 16 * S; t <= 25 * S; t += S / 2)
        pass(&v, t, &hang, 1, 1, &got);
    cr_assert_eq(got.n, 1, "posted %zu verdicts", got.n);
    cr_assert_eq(got.rank[0], 1);
    nsc_vposts_free(&v);
}

/* A verdict that goes and comes back, and many passes: posted once. */
Test(vposts, posted_once)
{
    nsc_vposts v = {0};
    posted got = {0};
    nsc_problem hang = missing(1);
    for (uint64_t t = 0; t <= 10 * S; t += S / 2)
        pass(&v, t, &hang, 1, 1, &got);
    pass(&v, 11 * S, NULL, 0, 1, &got);
    for (uint64_t t = 12 * S; t <= 20 * S; t += S / 2)
        pass(&v, t, &hang, 1, 1, &got);
    cr_assert_eq(got.n, 1, "posted %zu verdicts", got.n);
    nsc_vposts_free(&v);
}

/* A collector that never announces the job posts nothing. */
Test(vposts, not_the_announcer)
{
    nsc_vposts v = {0};
    posted got = {0};
    nsc_problem hang = missing(1);
    for (uint64_t t = 0; t <= 10 * S; t += S / 2)
        pass(&v, t, &hang, 1, 0, &got);
    cr_assert_eq(got.n, 0);
    nsc_vposts_free(&v);
}
