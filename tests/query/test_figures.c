/* test_figures.c: each figure's definition (engine/query/figures.c) on
 * hand-made per-rank records: the demo's impossible figures (a kernel that
 * starts before its enqueue, a ring AllReduce rank whose kernel ends before
 * another rank's starts, skew above duration, a busBW over a window shorter
 * than its bound) come out corrected within their bounds or marked uncertain;
 * a per-rank busBW above what its transport allows is capped within its
 * bound, else uncertain; a last rank is late of its own or by inheritance; the straggler is the rank
 * late of its own at more than half of its collectives.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "figures.h"

#define US 1000ull
#define T0 (1000000 * US)
#define MIB (1ull << 20)
#define E (T0 - 100 * US) /* an enqueue well before the kernels */

static const nsc_busbw ar4 = {4 * MIB, 1.5}; /* AllReduce, 4 ranks */

/* Rank r enqueued at enq, its kernel from ks to ke (all kernels ended, one
 * channel), each GPU time within err. */
static cl_rec rec(int32_t r, uint64_t enq, uint64_t ks, uint64_t ke, uint64_t err)
{
    return (cl_rec){.rank = r, .r = (uint32_t)r, .nchannels = 1, .nkch = 1, .has_kernel = 1,
                    .enq = enq, .kstart = ks, .kend = ke, .kstart_err = err, .kend_err = err};
}

static cl_group group_of(cl_rec *x, size_t n, const char *func)
{
    cl_group g = {.n = n};
    uint64_t scratch[3 * 8];
    cr_assert_leq(n, 8);
    nsc_fig_group(&g, x, func, 1, ar4, scratch);
    return g;
}

Test(figures, kernel_start_before_enqueue_within_bound_is_moved_after_it)
{
    cl_rec x[1] = {rec(0, T0, T0 - 30 * US, T0 + 500 * US, 50 * US)};
    cl_group g = group_of(x, 1, "AllReduce");
    /* the truth is in [enq, ks + err]: the nearest possible time, the
     * bound to the other end */
    cr_assert_eq(x[0].kstart, T0);
    cr_assert_eq(x[0].kstart_err, 20 * US);
    /* a possible estimate stays, its bound to the farther end */
    cl_rec y[1] = {rec(0, T0, T0 + 30 * US, T0 + 500 * US, 50 * US)};
    group_of(y, 1, "AllReduce");
    cr_assert_eq(y[0].kstart, T0 + 30 * US);
    cr_assert_eq(y[0].kstart_err, 50 * US);
    cr_assert_null(g.uncertain);
}

Test(figures, kernel_start_before_enqueue_beyond_bound_is_uncertain)
{
    cl_rec x[2] = {rec(0, T0, T0 - 300 * US, T0 + 500 * US, 50 * US),
                   rec(1, T0, T0 + 10 * US, T0 + 500 * US, 50 * US)};
    cl_group g = group_of(x, 2, "AllReduce");
    cr_assert_eq(x[0].kstart, T0 - 300 * US, "left as measured");
    cr_assert_not_null(x[0].uncertain);
    cr_assert_str_eq(g.uncertain, x[0].uncertain);
    nsc_fig_rank f;
    nsc_fig_rank_of(&g, &x[0], &f);
    cr_assert_not_null(f.uncertain);
}

/* The demo's seq 30: every other rank's kernel ends before rank 3's starts. */
Test(figures, ring_end_before_last_start_within_bounds_is_narrowed)
{
    cl_rec x[4];
    for (int r = 0; r < 3; r++)
        x[r] = rec(r, T0, T0 + 10 * US, T0 + 400 * US, 100 * US);
    x[3] = rec(3, T0, T0 + 450 * US, T0 + 462 * US, 100 * US);
    cl_group g = group_of(x, 4, "AllReduce");
    for (int r = 0; r < 4; r++)
        cr_assert_geq(x[r].kend, x[3].kstart, "rank %d ends before rank 3 starts", r);
    cr_assert_leq(g.skew, g.dur + g.skew_err + g.dur_err);
    cr_assert_null(g.uncertain);
    /* the bounds narrowed, not widened */
    cr_assert_lt(x[3].kstart_err, 100 * US);
    cr_assert_lt(x[0].kend_err, 100 * US);
}

Test(figures, ring_end_before_last_start_beyond_bounds_is_uncertain)
{
    cl_rec x[2] = {rec(0, T0, T0 + 10 * US, T0 + 100 * US, 5 * US),
                   rec(1, T0, T0 + 300 * US, T0 + 400 * US, 5 * US)};
    cl_group g = group_of(x, 2, "AllReduce");
    cr_assert_not_null(g.uncertain);
    cr_assert_not_null(x[0].uncertain);
    cr_assert_eq(x[0].kend, T0 + 100 * US, "left as measured");
}

Test(figures, broadcast_rank_may_end_before_another_starts)
{
    cl_rec x[2] = {rec(0, T0, T0 + 10 * US, T0 + 100 * US, 5 * US),
                   rec(1, T0, T0 + 300 * US, T0 + 400 * US, 5 * US)};
    cl_group g = group_of(x, 2, "Broadcast");
    cr_assert_null(g.uncertain);
    cr_assert_eq(x[0].kend, T0 + 100 * US);
}

/* Host arrival (no kernel times): the skew is the enqueues' and duration
 * runs from the first enqueue, which contains the skew. */
Test(figures, host_arrival_skew_within_duration)
{
    cl_rec x[2] = {{.rank = 0, .enq = T0, .has_done = 1, .done = T0 + 900 * US},
                   {.rank = 1, .r = 1, .enq = T0 + 600 * US, .has_done = 1, .done = T0 + 800 * US}};
    cl_group g = group_of(x, 2, "AllReduce");
    cr_assert_not(g.gpu_arrival);
    cr_assert_eq(g.skew, 600 * US);
    cr_assert_eq(g.dur, 900 * US);
    cr_assert_eq(g.last_rank, 1);
    cr_assert_null(g.uncertain);
}

/* Per-rank busBW counts from the last arrival: an early rank's wait is not
 * time its data moved. */
Test(figures, rank_busbw_from_last_arrival)
{
    cl_rec x[2] = {rec(0, E, T0, T0 + 1000 * US, 1 * US), rec(1, E, T0 + 600 * US, T0 + 1000 * US, 1 * US)};
    cl_group g = group_of(x, 2, "AllReduce");
    nsc_fig_rank f0, f1;
    nsc_fig_rank_of(&g, &x[0], &f0);
    nsc_fig_rank_of(&g, &x[1], &f1);
    cr_assert_eq(f0.wait_ns, 600 * US);
    cr_assert_eq(f0.own_ns, 1000 * US);
    cr_assert_eq(f0.move_ns, 400 * US);
    cr_assert_eq(f1.move_ns, 400 * US);
    cr_assert_float_eq(f0.busbw, f1.busbw, 1e-9, "both moved data over the same time");
    cr_assert_float_eq(f0.busbw, 4.0 * MIB * 1.5 / (400 * US), 1e-9);
    cr_assert_null(f0.uncertain);
    /* the collective's busBW: nccl-tests', over the slowest rank's own time */
    cr_assert_float_eq(g.busbw, 4.0 * MIB * 1.5 / (1000 * US), 1e-9);
}

/* The demo's rank 5: a 12 us kernel whose times are known within 90 us
 * reads 621 GB/s; its window is within its bound, so it is uncertain. */
Test(figures, rank_busbw_over_a_window_within_its_bound_is_uncertain)
{
    cl_rec x[2] = {rec(0, E, T0, T0 + 4012 * US, 90 * US), rec(1, E, T0 + 4000 * US, T0 + 4012 * US, 90 * US)};
    cl_group g = group_of(x, 2, "AllReduce");
    nsc_fig_rank f;
    nsc_fig_rank_of(&g, &x[1], &f);
    cr_assert_eq(f.move_ns, 12 * US);
    cr_assert_not_null(f.uncertain);
    cr_assert_null(g.uncertain, "the collective's own duration is well beyond its bound");
}

/* The cap (busbw.h): a rank's NVLink on one host; across hosts its host's
 * NICs, one per rank there at most. */
Test(figures, transport_cap)
{
    cr_assert_float_eq(nsc_busbw_cap(0, 4), NSC_NVLINK_MAX_GBPS, 1e-9);
    cr_assert_float_eq(nsc_busbw_cap(1, 4), 4 * NSC_NET_MAX_GBPS, 1e-9);
    cr_assert_float_eq(nsc_busbw_cap(1, 64), NSC_NVLINK_MAX_GBPS, 1e-9, "NVLink still caps a rank");
    cr_assert_float_eq(nsc_busbw_cap(1, 0), NSC_NVLINK_MAX_GBPS, 1e-9, "ranks per host unknown");
}

/* Two ranks on two hosts, one NIC each (100 GB/s): 4 MiB x 1.5 takes
 * 62.9 us at least. Rank 1 moved it in `move` us after rank 0's start, each
 * GPU time within err. */
static nsc_fig_rank capped(uint64_t move, uint64_t err)
{
    cl_rec x[2] = {rec(0, E, T0, T0 + 1000 * US, err), rec(1, E, T0 + 1000 * US - move * US, T0 + 1000 * US, err)};
    for (int r = 0; r < 2; r++)
        x[r].cap_gbps = nsc_busbw_cap(1, 1);
    cl_group g = group_of(x, 2, "AllReduce");
    nsc_fig_rank f;
    nsc_fig_rank_of(&g, &x[1], &f);
    return f;
}

Test(figures, rank_busbw_above_the_transport_within_bound_is_capped)
{
    nsc_fig_rank f = capped(50, 10 * US);
    cr_assert_leq(f.busbw, NSC_NET_MAX_GBPS, "%.1f GB/s over one 100 GB/s NIC", f.busbw);
    cr_assert_float_eq(f.busbw, NSC_NET_MAX_GBPS, 1e-3);
    cr_assert_null(f.uncertain, "%s", f.uncertain);
}

/* Every kernel 30 us for 4 MiB x 1.5 over one NIC each: the collective's
 * busBW too is above the transport beyond its bound. */
Test(figures, collective_busbw_above_the_transport)
{
    cl_rec x[2] = {rec(0, E, T0, T0 + 30 * US, 1 * US), rec(1, E, T0, T0 + 30 * US, 1 * US)};
    for (int r = 0; r < 2; r++)
        x[r].cap_gbps = nsc_busbw_cap(1, 1);
    cl_group g = group_of(x, 2, "AllReduce");
    cr_assert_gt(g.busbw, NSC_NET_MAX_GBPS);
    cr_assert_not_null(g.uncertain);
    cr_assert(strstr(g.uncertain, "transport"), "%s", g.uncertain);
    /* 50 us known within 20 us: as long as the NIC needs, 100 GB/s */
    cl_rec y[2] = {rec(0, E, T0, T0 + 50 * US, 10 * US), rec(1, E, T0, T0 + 50 * US, 10 * US)};
    for (int r = 0; r < 2; r++)
        y[r].cap_gbps = nsc_busbw_cap(1, 1);
    g = group_of(y, 2, "AllReduce");
    cr_assert_float_eq(g.busbw, NSC_NET_MAX_GBPS, 1e-3);
    cr_assert_null(g.uncertain, "%s", g.uncertain);
}

Test(figures, rank_busbw_above_the_transport_beyond_bound_is_uncertain)
{
    nsc_fig_rank f = capped(30, 1 * US);
    cr_assert_eq(f.move_ns, 30 * US, "left as measured");
    cr_assert_gt(f.busbw, NSC_NET_MAX_GBPS);
    cr_assert_not_null(f.uncertain);
    cr_assert(strstr(f.uncertain, "transport"), "%s", f.uncertain);
    nsc_fig_rank ok = capped(200, 1 * US);
    cr_assert_null(ok.uncertain, "31 GB/s is possible");
}

/* Four ranks whose previous collective ended at prev[r], enqueued at
 * enq[r], their kernels starting at start[r] and all ending at T0 + 5 ms. */
static cl_group late_group(cl_rec *x, const uint64_t *prev, const uint64_t *enq, const uint64_t *start)
{
    for (int r = 0; r < 4; r++) {
        x[r] = rec(r, enq[r], start[r], T0 + 5000 * US, 1 * US);
        x[r].prev_end = prev[r];
        x[r].has_prev = 1;
    }
    return group_of(x, 4, "AllReduce");
}

/* Rank 3's host enqueued 2 ms after the others were ready: its own. */
Test(figures, late_of_its_own)
{
    cl_rec x[4];
    const uint64_t prev[4] = {T0 - 1000 * US, T0 - 1000 * US, T0 - 1000 * US, T0 - 1000 * US};
    const uint64_t enq[4] = {T0 - 900 * US, T0 - 900 * US, T0 - 900 * US, T0 + 2000 * US};
    const uint64_t start[4] = {T0, T0, T0, T0 + 2100 * US};
    cl_group g = late_group(x, prev, enq, start);
    cr_assert_eq(g.last_rank, 3);
    cr_assert_eq(g.late, 2100 * US);
    cr_assert_eq(g.late_host, 2100 * US, "its host's gap beyond the others', up to its lateness");
    cr_assert_eq(g.late_gpu, 0);
    cr_assert(g.late_own);
}

/* Rank 3's previous collective ended late (a slow link into it): it
 * enqueued and started at once after, so its lateness is inherited. */
Test(figures, late_by_inheritance_is_not_its_own)
{
    cl_rec x[4];
    const uint64_t prev[4] = {T0 - 1000 * US, T0 - 1000 * US, T0 - 1000 * US, T0 + 2000 * US};
    const uint64_t enq[4] = {T0 - 900 * US, T0 - 900 * US, T0 - 900 * US, T0 + 2050 * US};
    const uint64_t start[4] = {T0, T0, T0, T0 + 2100 * US};
    cl_group g = late_group(x, prev, enq, start);
    cr_assert_eq(g.last_rank, 3);
    cr_assert_eq(g.late, 2100 * US);
    cr_assert_eq(g.late_host + g.late_gpu, 0);
    cr_assert_not(g.late_own);
}

Test(figures, straggler_late_of_its_own_at_more_than_half)
{
    uint64_t own[4] = {0, 2, 0, 9}, seen[4] = {12, 12, 12, 12};
    cr_assert_eq(nsc_fig_straggler(own, seen, 4), 3);
    uint64_t seen18[4] = {18, 18, 18, 18};
    cr_assert_eq(nsc_fig_straggler(own, seen18, 4), -1, "9 of 18 is not more than half");
    uint64_t few[2] = {7, 0}, seen_few[2] = {7, 7};
    cr_assert_eq(nsc_fig_straggler(few, seen_few, 2), -1, "fewer than NSC_FIG_STRAGGLER_MIN");
}

/* Lagging counts from when another rank went past the rank's seq, or from
 * when it got there if that was later; hung needs another rank to have
 * completed the collective or gone past it. */
Test(figures, lagging_and_hung)
{
    uint64_t d = 0, lag = 10;
    cr_expect_not(nsc_fig_lagging(5, 5, 0, 0, 100, lag, &d), "at the front");
    cr_expect(nsc_fig_lagging(4, 5, 10, 50, 61, lag, &d));
    cr_expect_eq(d, 11);
    cr_expect_not(nsc_fig_lagging(4, 5, 55, 50, 65, lag, &d), "from its own arrival, later");
    cr_expect_eq(d, 10);
    cr_expect_not(nsc_fig_lagging(4, 5, 0, 0, 0, lag, &d), "a clock behind: no lag");
    cr_expect_eq(d, 0);
    cr_expect(nsc_fig_hung(5, 0, 10, 6, 0, 21, lag), "another rank went past");
    cr_expect(nsc_fig_hung(5, 0, 10, 5, 1, 21, lag), "another rank completed it");
    cr_expect_not(nsc_fig_hung(5, 0, 10, 5, 0, 100, lag), "every rank inside it");
    cr_expect_not(nsc_fig_hung(5, 0, 10, 6, 0, 20, lag), "not past lag_ns yet");
    cr_expect_not(nsc_fig_hung(5, 1, 10, 6, 0, 100, lag), "it completed");
}
