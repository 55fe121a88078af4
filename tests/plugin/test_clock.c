/* test_clock.c: the CPU's counter as a clock (plugin/clock.c). The model is
 * fed counts through nsc_clock_pair (the test hook): a steady counter is
 * converted exactly, a counter that jumps forward or back is caught and the
 * line re-anchored; ten minutes of a slewed CLOCK_MONOTONIC stay within
 * 100 ns; the line converts no further than a quarter of its span past its
 * latest pair. Then the real counter, where this machine has one,
 * against CLOCK_MONOTONIC: every conversion within the bound the model
 * carries, and that bound within 100 ns; a run's first records within
 * 100 ns too; an event's times all on one line. */
#include <criterion/criterion.h>
#include <time.h>

#include "internal.h"

#define GHZ3(ns) ((ns) * 3) /* a 3 GHz counter */
#define MS 1000000ull

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

Test(clock, invariance_from_flags)
{
    cr_assert(nsc_clock_invariant("flags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n"));
    cr_assert(!nsc_clock_invariant("flags\t\t: fpu tsc constant_tsc rdtscp\n"));
    cr_assert(!nsc_clock_invariant("flags\t\t: fpu tsc nonstop_tsc\n"));
    cr_assert(!nsc_clock_invariant("flags\t\t: constant_tsc_x nonstop_tsc\n"));
    cr_assert(nsc_clock_invariant("flags: nonstop_tsc constant_tsc"));
}

/* Pairs 10 ms apart from a counter at 3 ticks per ns, offset by 12345. */
static void feed(nsc_clock *c, uint64_t from_ms, uint64_t to_ms, uint64_t offset)
{
    for (uint64_t ms = from_ms; ms < to_ms; ms += 10)
        cr_assert_eq(nsc_clock_pair(c, offset + GHZ3(ms * MS), ms * MS, 20), 0);
}

Test(clock, steady_counter_converts_exactly)
{
    nsc_clock c = {0};
    feed(&c, 1000, 2000, 12345);
    cr_assert_eq(c.jumps, 0);
    for (uint64_t ns = 1990 * MS; ns < 2000 * MS; ns += 777)
        cr_assert_leq(absdiff(nsc_clock_ns(&c, 12345 + GHZ3(ns)), ns), 1, "at %lu", ns);
    cr_assert_leq(c.err_ns, 21);
}

/* A migration to a CPU whose counter is a second ahead, then one behind. */
Test(clock, jump_is_detected_and_pairs_retaken)
{
    nsc_clock c = {0};
    feed(&c, 1000, 1500, 0);
    uint64_t ahead = GHZ3(1000 * MS);
    cr_assert_eq(nsc_clock_pair(&c, ahead + GHZ3(1500 * MS), 1500 * MS, 20), 1);
    cr_assert_eq(c.jumps, 1);
    cr_assert_eq(c.pairs, 1);
    feed(&c, 1510, 1600, ahead);
    cr_assert_leq(absdiff(nsc_clock_ns(&c, ahead + GHZ3(1595 * MS)), 1595 * MS), 1);
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1600 * MS) - 1000, 1600 * MS, 20), 1);
    cr_assert_eq(c.jumps, 2);
    feed(&c, 1610, 1700, -(uint64_t)1000);
    cr_assert_leq(absdiff(nsc_clock_ns(&c, GHZ3(1695 * MS) - 1000), 1695 * MS), 1);
}

/* The bound sent with the batches: a pair off the line (CLOCK_MONOTONIC
 * moved under the counter, less than a jump) raises it to what was
 * measured, and neither a pair on the line nor a jump's new anchor lowers
 * it: times converted before stay as uncertain as they were. */
Test(clock, bound_is_the_largest_error_measured)
{
    nsc_clock c = {0};
    feed(&c, 1000, 1500, 0);
    cr_assert_leq(nsc_clock_bound(&c), 21);
    const uint64_t off = NSC_CLOCK_JUMP_NS / 2;
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1500 * MS), 1500 * MS + off, 20), 0);
    cr_assert_geq(nsc_clock_bound(&c), off + 20);
    uint64_t bound = nsc_clock_bound(&c);
    feed(&c, 1510, 1600, (uint64_t)-GHZ3(off));
    cr_assert_eq(nsc_clock_bound(&c), bound);
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1600 * MS), 1700 * MS, 20), 1);
    cr_assert_eq(nsc_clock_bound(&c), bound);
}

/* A line through pairs 2 ms apart reaches 0.5 ms past the latest; one
 * through pairs 10 ms apart, 2.5 ms. A jump's new anchor keeps the slope
 * and so its reach; a line with no slope reaches nothing. */
Test(clock, reach_is_a_quarter_of_the_span)
{
    nsc_clock c = {0};
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1000 * MS), 1000 * MS, 20), 0);
    cr_assert(!nsc_clock_reaches(&c, GHZ3(1000 * MS)));
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1002 * MS), 1002 * MS, 20), 0);
    cr_assert(nsc_clock_reaches(&c, GHZ3(1002 * MS + MS / 2)));
    cr_assert(!nsc_clock_reaches(&c, GHZ3(1002 * MS + MS / 2) + 1));
    cr_assert(nsc_clock_reaches(&c, GHZ3(1000 * MS)), "a past count is between pairs");
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1012 * MS), 1012 * MS, 20), 0);
    cr_assert(nsc_clock_reaches(&c, GHZ3(1012 * MS) + GHZ3(3 * MS)));
    cr_assert(!nsc_clock_reaches(&c, GHZ3(1012 * MS) + GHZ3(3 * MS) + 1));
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(2012 * MS), 1022 * MS, 20), 1);
    cr_assert(nsc_clock_reaches(&c, GHZ3(2012 * MS) + GHZ3(3 * MS)));
    cr_assert(!nsc_clock_reaches(&c, GHZ3(2012 * MS) + GHZ3(3 * MS) + 1));
}

/* A line through pairs 2 ms apart whose second is 30 ns off in a 30 ns
 * bracket (a slope 15 ppm off), met by an exact pair 10 ms on: 180 ns off
 * there, where it converts nothing (its reach is 0.5 ms). At its reach it
 * was 37.5 ns off: that is the error measured, give or take the brackets. */
Test(clock, pair_beyond_reach_is_measured_at_the_reach)
{
    nsc_clock c = {0};
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1000 * MS), 1000 * MS, 20), 0);
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1002 * MS), 1002 * MS + 30, 30), 0);
    cr_assert_eq(nsc_clock_pair(&c, GHZ3(1012 * MS), 1012 * MS, 20), 0);
    cr_assert_geq(c.err_ns, 38, "err %lu ns", c.err_ns);
    cr_assert_leq(c.err_ns, 40, "err %lu ns", c.err_ns);
}

/* Before a slope is known, a second pair behind the first cannot be on a line. */
Test(clock, backwards_before_a_slope)
{
    nsc_clock c = {0};
    cr_assert_eq(nsc_clock_pair(&c, 5000, 1000, 10), 0);
    cr_assert_eq(nsc_clock_pair(&c, 4000, 2000, 10), 1);
    cr_assert_eq(c.ns_per_tick, 0);
    cr_assert_eq(nsc_clock_pair(&c, 7000, 3000, 10), 0);
    cr_assert_eq(c.ns_per_tick, 1000.0 / 3000.0);
}

/* Ten minutes of pairs every 10 ms, faked: a 3 GHz counter against a
 * CLOCK_MONOTONIC that NTP speeds up steadily from its rate to 30 ppm faster
 * (a frequency correction ramped in), each pair's middle up to 15 ns off in
 * a 30 ns bracket. Converted 5 ms after each pair, a time is within the
 * model's bound plus half a bracket, and the bound within 100 ns. A slope
 * averaged since the first pair would lag the rate by 15 ppm at the end:
 * 150 ns at the next pair. */
static uint64_t slewed_ns(uint64_t ns)
{
    const double ramp_s = 600;
    double s = (double)ns / 1e9;
    return ns + (uint64_t)(30e-6 * s * s / (2 * ramp_s) * 1e9);
}

Test(clock, slewed_monotonic_within_100ns_over_10_minutes)
{
    nsc_clock c = {0};
    uint64_t worst = 0, noise = 1;
    for (uint64_t ms = 0; ms < 600000; ms += 10) {
        uint64_t ns = 1000 * MS + ms * MS;
        noise = noise * 6364136223846793005ull + 1442695040888963407ull;
        int64_t off = (int64_t)(noise >> 33) % 31 - 15;
        cr_assert_eq(nsc_clock_pair(&c, GHZ3(ns), slewed_ns(ns) + (uint64_t)off, 16), 0, "at %lu ms", ms);
        if (c.pairs < 5)
            continue;
        uint64_t at = ns + 5 * MS;
        uint64_t err = absdiff(nsc_clock_ns(&c, GHZ3(at)), slewed_ns(at));
        if (err > worst)
            worst = err;
        cr_assert_leq(err, c.max_err_ns + 16, "at %lu ms: %lu ns, bound %lu", ms, err, c.max_err_ns);
    }
    cr_log_info("worst %lu ns, max_err %lu ns", worst, c.max_err_ns);
    cr_assert_leq(c.max_err_ns, NSC_CLOCK_BOUND_NS, "max_err %lu ns", c.max_err_ns);
}

/* The real counter over NSC_TEST_CLOCK_MS (default 2000) with a pair every
 * 10 ms, as the shipper takes them, and converted as it converts (a pair
 * first where the line does not reach): a counter read bracketed by two clock
 * reads converts to within the model's bound so far plus that bracket (the
 * unserialised counter read may fall anywhere in it), and the bound stays
 * within 100 ns. Checked once the model has measured its distance from a few
 * pairs (from the fifth). A descheduled bracket is a wide one and says
 * nothing: only narrow ones are checked. */
Test(clock, real_counter_within_bound)
{
    if (!nsc_clock_select())
        cr_skip_test("no invariant counter on this machine");
    const char *env = getenv("NSC_TEST_CLOCK_MS");
    uint64_t span = (env ? strtoull(env, NULL, 10) : 2000) * MS;
    nsc_clock c;
    nsc_clock_start(&c);
    uint64_t end = nsc_mono_ns() + span, checked = 0, worst = 0;
    while (nsc_mono_ns() < end) {
        nsc_clock_calibrate(&c);
        uint64_t pair_at = nsc_mono_ns();
        while (nsc_mono_ns() - pair_at < 10 * MS) {
            uint64_t a = nsc_mono_ns(), t = nsc_counter(), b = nsc_mono_ns();
            if (b - a > 200 || c.pairs < 5)
                continue;
            nsc_rec r = {.kind = NSC_REC_COMPLETION, .u.done.ts_ns = t};
            cr_assert_eq(nsc_clock_rec_ns(&c, &r), 0);
            uint64_t off = absdiff(r.u.done.ts_ns, a + (b - a) / 2);
            uint64_t allowed = c.max_err_ns + (b - a) + 1;
            if (off > worst)
                worst = off;
            cr_assert_leq(off, allowed, "off %lu, bound %lu", off, allowed);
            checked++;
        }
    }
    cr_assert_gt(checked, 0);
    cr_assert_eq(c.jumps, 0);
    cr_log_info("checked %lu, worst %lu ns, max_err %lu ns", checked, worst, c.max_err_ns);
    cr_assert_leq(c.max_err_ns, NSC_CLOCK_BOUND_NS, "max_err %lu ns", c.max_err_ns);
}

/* A run's first records as the shipper converts them (plugin/batch.c): each
 * a counter read between two CLOCK_MONOTONIC reads, converted a millisecond
 * later by nsc_clock_rec_ns (as a completion's time), a pair every 10 ms
 * besides; each is within 100 ns of its bracket. The run starts as nsc_clock_start does, two pairs
 * 2 ms apart, but taken as on a loaded machine: each pair's middle SKEW_NS
 * off the counter read, one early, the other late (its bracket says so), a
 * slope 30 ppm off. Extrapolated from there, a record 10 ms on would be
 * 300 ns off; NR_RUNS runs, the skews' signs alternating. */
#define NR_RUNS 12
#define RUN_NS (30 * MS)
#define SKEW_NS 30
#define RECS 4096

typedef struct bracket {
    uint64_t a, t, b;
} bracket;

static bracket read_bracket(void)
{
    bracket r;
    r.a = nsc_mono_ns();
    r.t = nsc_counter();
    r.b = nsc_mono_ns();
    return r;
}

/* A pair as nsc_clock_calibrate takes it, its middle then put skew ns off
 * the counter read, the bracket widened to cover it. */
static void skewed_pair(nsc_clock *c, int64_t skew)
{
    uint64_t tick, mid, half = nsc_clock_read(&tick, &mid);
    nsc_clock_pair(c, tick, mid + (uint64_t)skew, half + (uint64_t)(skew < 0 ? -skew : skew));
}

/* The worst distance from its bracket of the records r[from..to), converted. */
static uint64_t convert_worst(nsc_clock *c, const bracket *r, size_t from, size_t to)
{
    uint64_t worst = 0;
    for (size_t i = from; i < to; i++) {
        nsc_rec rec = {.kind = NSC_REC_COMPLETION, .u.done.ts_ns = r[i].t};
        cr_assert_eq(nsc_clock_rec_ns(c, &rec), 0);
        uint64_t ns = rec.u.done.ts_ns;
        uint64_t off = ns < r[i].a ? r[i].a - ns : ns > r[i].b ? ns - r[i].b : 0;
        if (off > worst)
            worst = off;
    }
    return worst;
}

static uint64_t first_records_worst(int64_t skew, bracket *rec)
{
    nsc_clock c;
    memset(&c, 0, sizeof c);
    skewed_pair(&c, skew);
    struct timespec ts = {0, NSC_CLOCK_FIRST_SPAN_NS};
    nanosleep(&ts, NULL);
    skewed_pair(&c, -skew);
    uint64_t begin = nsc_mono_ns(), drained_at = begin, calibrated_at = begin, worst = 0;
    size_t n = 0, drained = 0;
    for (uint64_t now = begin; now - begin < RUN_NS; now = nsc_mono_ns()) {
        if (n < RECS && (n == 0 || now - rec[n - 1].b >= RUN_NS / RECS))
            rec[n++] = read_bracket();
        if (now - drained_at >= MS) {
            uint64_t w = convert_worst(&c, rec, drained, n);
            worst = w > worst ? w : worst;
            drained = n;
            drained_at = now;
        }
        if (now - calibrated_at >= 10 * MS) {
            nsc_clock_calibrate(&c);
            calibrated_at = now;
        }
    }
    uint64_t w = convert_worst(&c, rec, drained, n);
    return w > worst ? w : worst;
}

Test(clock, first_records_within_100ns)
{
    if (!nsc_clock_select())
        cr_skip_test("no invariant counter on this machine");
    static bracket rec[RECS];
    uint64_t worst = 0;
    for (int run = 0; run < NR_RUNS; run++) {
        uint64_t w = first_records_worst(run % 2 ? SKEW_NS : -SKEW_NS, rec);
        cr_log_info("run %d: worst %lu ns", run, w);
        worst = w > worst ? w : worst;
    }
    cr_assert_leq(worst, NSC_CLOCK_BOUND_NS, "worst %lu ns", worst);
}

/* An event's times as the shipper converts them (nsc_clock_rec_ns) where the
 * line reaches its start but not its latest count: a run's first line (its
 * reach 0.5 ms) through two pairs OFF_LINE_NS off CLOCK_MONOTONIC, the first
 * behind, the latest ahead (a slope 300 ppm steep; their brackets say so).
 * The pair taken for the latest count makes another line. Converted on two
 * lines, a span would carry their difference (hundreds of ns) and a stop one
 * count after its start would come before it; on one, each time is its count
 * on the line taken last, and none comes before the start. A
 * KernelCh's latest count may be its pTimer stop, and an open one has no
 * stop (0, left so). */
#define OFF_LINE_NS 300

static void line_ahead(nsc_clock *c)
{
    memset(c, 0, sizeof *c);
    skewed_pair(c, -OFF_LINE_NS);
    struct timespec ts = {0, NSC_CLOCK_FIRST_SPAN_NS};
    nanosleep(&ts, NULL);
    skewed_pair(c, OFF_LINE_NS);
}

/* ev's times, at the given counts, converted: a pair taken, no jump. */
static void convert_event(nsc_clock *c, nsc_event *ev)
{
    nsc_rec r = {.kind = NSC_REC_EVENT, .u.ev = ev};
    uint32_t pairs = c->pairs;
    cr_assert_eq(nsc_clock_rec_ns(c, &r), 0);
    cr_assert_eq(c->pairs, pairs + 1, "a pair taken for the latest count");
}

/* a and b are counts ta and tb converted on the line c has now, b not before a. */
static void assert_one_line(const nsc_clock *c, uint64_t a, uint64_t b, uint64_t ta, uint64_t tb)
{
    cr_assert_geq(b, a, "%lu ns before", a - b);
    cr_assert_eq(a, nsc_clock_ns(c, ta), "%ld ns off the line", (long)(a - nsc_clock_ns(c, ta)));
    cr_assert_eq(b, nsc_clock_ns(c, tb), "%ld ns off the line", (long)(b - nsc_clock_ns(c, tb)));
}

Test(clock, event_times_on_one_line)
{
    if (!nsc_clock_select())
        cr_skip_test("no invariant counter on this machine");
    nsc_clock c;
    line_ahead(&c);
    uint64_t t0 = c.t1 + c.reach;
    nsc_event coll = {.type = NSC_T_COLL, .start_ns = t0, .stop_ns = t0 + 1};
    convert_event(&c, &coll);
    assert_one_line(&c, coll.start_ns, coll.stop_ns, t0, t0 + 1);

    line_ahead(&c);
    t0 = c.t1;
    uint64_t t1 = c.t1 + c.reach, t2 = t1 + 1;
    nsc_event kch = {.type = NSC_T_KERNEL_CH, .start_ns = t0, .stop_ns = t1};
    kch.d.kernel_ch.ptimer_stop_ns = t2;
    convert_event(&c, &kch);
    assert_one_line(&c, kch.start_ns, kch.stop_ns, t0, t1);
    assert_one_line(&c, kch.start_ns, kch.d.kernel_ch.ptimer_stop_ns, t0, t2);

    line_ahead(&c);
    t0 = c.t1;
    t1 = c.t1 + c.reach + 1;
    nsc_event open = {.type = NSC_T_KERNEL_CH, .start_ns = t0};
    open.d.kernel_ch.ptimer_stop_ns = t1;
    convert_event(&c, &open);
    cr_assert_eq(open.stop_ns, 0);
    assert_one_line(&c, open.start_ns, open.d.kernel_ch.ptimer_stop_ns, t0, t1);
}
