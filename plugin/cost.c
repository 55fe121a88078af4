/* cost.c: the self-cost guard's sampler: what one timed call adds to the
 * plugin's estimated cost (docs/plugin.md, "Self-cost guard").
 *
 * The hot path times about one call in NSC_COST_EVERY, at random gaps
 * (internal.h: nsc_cost_begin, nsc_cost_end); each sample stands for the
 * calls of its gap. A sample is wall time on the sampler's clock, so it also
 * holds what is not the plugin's work: the latency of the clock read that
 * ends it, and any time the thread was not running. This file takes the first
 * off every sample and keeps the second out by a bound on each thread's
 * running median.
 */
#include <stdlib.h>

#include "internal.h"

_Atomic uint64_t nsc_g_cost_min, nsc_g_cost_max, nsc_g_cost_overhead;

/* Reads of the sampler's clock, back to back, whose median is its overhead. */
#define COST_CAL_READS 63

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A sample spans the latency of its second clock read, which the calls it
 * stands for do not pay: the median of back-to-back reads, taken off. */
void nsc_cost_calibrate(double ns_per_tick)
{
    uint64_t d[COST_CAL_READS];
    for (int i = 0; i < COST_CAL_READS; i++) {
        uint64_t t = nsc_cost_clock();
        d[i] = nsc_cost_clock() - t;
    }
    qsort(d, COST_CAL_READS, sizeof d[0], cmp_u64);
    atomic_store(&nsc_g_cost_overhead, d[COST_CAL_READS / 2]);
    double per_ns = nsc_g_cost_counter ? 1.0 / ns_per_tick : 1.0;
    atomic_store(&nsc_g_cost_min, (uint64_t)(NSC_COST_SAMPLE_MIN_NS * per_ns));
    atomic_store(&nsc_g_cost_max, (uint64_t)(NSC_COST_SAMPLE_MAX_NS * per_ns));
}

/* The bound on a sample of tb's: 16 medians, within [min, max] (before a
 * median, max). */
static uint64_t bound(const nsc_tbuf *tb)
{
    uint64_t lo = atomic_load_explicit(&nsc_g_cost_min, memory_order_relaxed);
    uint64_t hi = atomic_load_explicit(&nsc_g_cost_max, memory_order_relaxed);
    uint64_t b = tb->cost_med ? (uint64_t)tb->cost_med * NSC_COST_OUTLIER : hi;
    return b < lo ? lo : b > hi ? hi : b;
}

static void next_gap(nsc_tbuf *tb)
{
    uint32_t x = tb->cost_rng;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    tb->cost_rng = x;
    tb->cost_left = tb->cost_gap = 1 + x % (2 * NSC_COST_EVERY - 1);
}

void nsc_cost_seed(nsc_tbuf *tb, uint32_t seed)
{
    tb->cost_rng = seed * 2654435761u | 1;
    tb->cost_med = 0;
    next_gap(tb);
}

NSC_OUT_OF_LINE void nsc_cost_fold(nsc_tbuf *tb, uint64_t ticks)
{
    uint64_t over = atomic_load_explicit(&nsc_g_cost_overhead, memory_order_relaxed);
    ticks = ticks > over ? ticks - over : 0;
    uint32_t med = tb->cost_med;
    if (ticks > bound(tb)) {
        nsc_count(&tb->c.cost_outliers);
        ticks = med;
    } else if (!med || ticks > med) {
        /* in bounds, so the median stays under nsc_g_cost_max */
        tb->cost_med = med ? med + med / NSC_COST_MEDIAN_STEP + 1 : (uint32_t)ticks | 1;
    } else if (ticks < med) {
        tb->cost_med = med - med / NSC_COST_MEDIAN_STEP;
    }
    nsc_count_add(&tb->c.cost_ns, ticks * tb->cost_gap);
    next_gap(tb);
}
