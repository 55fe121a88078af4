/* test_clock_span.c: nsc_clock_span_of, the clock resolved once per block
 * that the timeline converts with, against nsc_clock_host_to_ref time by
 * time: across segment starts, rounding steps of the offset, the edges of a
 * segment's fitted range (where the error bound starts to grow), drifts of
 * either sign, and the open segment's bound, one per window of host time. */
#include <criterion/criterion.h>
#include <string.h>

#include "clock.h"
#include "sim.h"

#define T0 1000000000000ull /* 1000 s of host time */

/* Three segments: drifting up, drifting down with a half-ns offset (ties of
 * the rounding), flat; each fitted over part of its span. */
static nsc_clock_seg segs[] = {
    {0, T0, 777000, 0.3, 1e-4, 40.2, 1e-5, T0, T0 + 200000, 10},
    {T0 + 300000, T0 + 300000, -5000000, 0.5, -3e-5, 12.0, 2e-6, T0 + 310000, T0 + 400000, 10},
    {T0 + 450000, T0 + 450000, 123, 0.0, 0.0, 7.5, 1e-5, T0 + 600000, T0 + 650000, 10},
};

static nsc_clock_model model(void)
{
    nsc_clock_model m;
    memset(&m, 0, sizeof m); /* the conversions read the segments only */
    m.segs = segs;
    m.nsegs = sizeof segs / sizeof segs[0];
    return m;
}

/* Every time of an exact span converts as nsc_clock_host_to_ref does. */
static void check_span(const nsc_clock_model *m, uint64_t h0, uint64_t h1, int *exact)
{
    nsc_clock_span sp;
    nsc_clock_span_of(m, h0, h1, &sp);
    cr_assert_eq(sp.h0, h0);
    cr_assert_eq(sp.h1, h1);
    *exact = sp.exact;
    if (!sp.exact)
        return;
    for (uint64_t h = h0;; h++) {
        uint64_t ref, err;
        cr_assert_eq(nsc_clock_host_to_ref(m, h, &ref, &err), 0);
        cr_assert_eq(h + sp.add, ref, "span [%llu, %llu] at %llu", (unsigned long long)h0,
                     (unsigned long long)h1, (unsigned long long)h);
        cr_assert_eq(sp.err_ns, err, "span [%llu, %llu] at %llu", (unsigned long long)h0,
                     (unsigned long long)h1, (unsigned long long)h);
        if (h == h1)
            break;
    }
}

Test(clock_span, matches_per_time_conversion)
{
    nsc_clock_model m = model();
    nsc_sim_rng rng = {7};
    int exact, nexact = 0, ninexact = 0;
    for (int i = 0; i < 400; i++) {
        /* around the segments, with a bias towards their edges */
        uint64_t h0 = T0 - 50000 + nsc_sim_next(&rng) % 700000;
        if (i % 3 == 0) {
            const nsc_clock_seg *s = &segs[i / 3 % 3];
            uint64_t edge = i % 2 ? s->last_ns : s->start_ns;
            h0 = edge - 3000 + nsc_sim_next(&rng) % 6000;
        }
        uint64_t len = nsc_sim_next(&rng) % (i % 4 ? 4000 : 40000);
        check_span(&m, h0, h0 + len, &exact);
        nexact += exact;
        ninexact += !exact;
    }
    /* Both outcomes happen, so both paths are exercised. */
    cr_assert_gt(nexact, 100);
    cr_assert_gt(ninexact, 50);
}

Test(clock_span, not_exact_where_a_value_changes)
{
    nsc_clock_model m = model();
    int exact;
    /* across a segment start (a different line) */
    check_span(&m, segs[1].start_ns - 1, segs[1].start_ns, &exact);
    cr_assert_eq(exact, 0);
    /* across a step of the rounded offset: 100 ppm moves it 1 ns per 10 us */
    uint64_t h = T0 + 1000, ref0, ref;
    cr_assert_eq(nsc_clock_host_to_ref(&m, h, &ref0, NULL), 0);
    do {
        cr_assert_eq(nsc_clock_host_to_ref(&m, ++h, &ref, NULL), 0);
    } while (ref - h == ref0 - (T0 + 1000));
    check_span(&m, h - 1, h, &exact);
    cr_assert_eq(exact, 0);
    check_span(&m, h - 5000, h - 1, &exact);
    cr_assert_eq(exact, 1);
    /* the error bound grows past the fitted range, though the offset holds */
    check_span(&m, segs[2].last_ns - 10, segs[2].last_ns + 100000, &exact);
    cr_assert_eq(exact, 0);
    /* ... on both sides by as much: equal at the ends, lower between them */
    check_span(&m, segs[2].first_ns - 100000, segs[2].last_ns + 100000, &exact);
    cr_assert_eq(exact, 0);
    /* the flat segment inside its fitted range: one addition throughout */
    check_span(&m, segs[2].first_ns, segs[2].last_ns, &exact);
    cr_assert_eq(exact, 1);
    /* an empty model and a reversed range */
    nsc_clock_model empty;
    memset(&empty, 0, sizeof empty);
    check_span(&empty, T0, T0 + 10, &exact);
    cr_assert_eq(exact, 0);
    check_span(&m, T0 + 10, T0, &exact);
    cr_assert_eq(exact, 0);
}

/* The open segment keeps its probes, which bound each window of host time
 * apart: a range in one window is resolved once, one across two is not. */
Test(clock_span, open_segment_bound_by_window)
{
    nsc_clock_model m;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    const uint64_t off = 5000000, window = 100000000;
    for (uint64_t i = 0; i < 150; i++) { /* 3 s of probes every 20 ms, round trips 20 to 69 us */
        uint64_t t1 = T0 + i * 20000000, half = 10000 + i * 7919 % 50 * 500;
        nsc_clock_sample s = {t1, t1 + off + half, t1 + off + half + 1000, t1 + 2 * half + 1000};
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
    }
    cr_assert_eq(nsc_clock_flush(&m), 0);
    nsc_sim_rng rng = {11};
    int exact, nexact = 0, ninexact = 0;
    for (int i = 0; i < 300; i++) {
        uint64_t h0 = (T0 / window + 1 + nsc_sim_next(&rng) % 25) * window - 3000 + nsc_sim_next(&rng) % 6000;
        check_span(&m, h0, h0 + nsc_sim_next(&rng) % 6000, &exact);
        nexact += exact;
        ninexact += !exact;
    }
    cr_assert_gt(nexact, 50);
    cr_assert_gt(ninexact, 50);
    nsc_clock_free(&m);
}
