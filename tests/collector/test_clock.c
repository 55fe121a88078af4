/* Clock alignment: the host model against synthetic probes with known offset,
 * drift, jitter, asymmetric spikes and steps; the GPU pTimer fit against a
 * polling CPU observer; both serializations, including malformed input. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "gpuclock.h"
#include "sim.h"

#define NS_PER_S 1e9
#define QUERIES 2000


/* Alignment errors of random queries in [from, to) (reference ns elapsed),
 * skipping [skip_from, skip_to). Returns the p99; *covered gets the share of
 * queries whose error is within the model's own bound. */
static double p99_error(const nsc_clock_model *m, const nsc_sim_host *h, nsc_sim_rng *r,
                        double from, double to, double skip_from, double skip_to,
                        double *covered)
{
    static double err[QUERIES];
    size_t n = 0, within = 0;
    while (n < QUERIES) {
        double t = nsc_sim_range(r, from, to);
        if (t >= skip_from && t < skip_to)
            continue;
        uint64_t ref, bound;
        cr_assert_eq(nsc_clock_host_to_ref(m, nsc_sim_host_time(h, t), &ref, &bound), 0);
        err[n] = fabs((double)(int64_t)(ref - nsc_sim_ref_time(h, t)));
        within += err[n] <= (double)bound;
        n++;
    }
    *covered = (double)within / QUERIES;
    return nsc_sim_quantile(err, n, 0.99);
}

Test(clock, cpu_p99_across_hosts)
{
    nsc_sim_rng r = {1};
    for (int host = 0; host < 8; host++) {
        nsc_sim_host h = nsc_sim_host_random(&r);
        nsc_clock_model m;
        cr_assert_eq(nsc_clock_init(&m, NULL), 0);
        cr_assert_eq(nsc_sim_feed(&m, &h, &nsc_sim_lan, &r, 100e6, 120 * NS_PER_S), 0);
        double covered, p99 = p99_error(&m, &h, &r, 0.5e9, 119e9, 0, 0, &covered);
        cr_assert_leq(p99, 10000, "host %d drift %.1f ppm: p99 %.0f ns", host, h.drift * 1e6, p99);
        cr_assert_geq(covered, 0.99, "host %d: bound covers only %.3f", host, covered);
        cr_assert_eq(m.nsegs, 1);
        nsc_clock_free(&m);
    }
}

/* One sample per window: spikes reach the fit and must be rejected there;
 * short segments exercise the splits. */
Test(clock, outliers_rejected_by_fit)
{
    nsc_sim_rng r = {2};
    nsc_sim_net spiky = nsc_sim_lan;
    spiky.outlier_rate = 0.10;
    nsc_clock_cfg cfg;
    nsc_clock_cfg_default(&cfg);
    cfg.window_ns = 100000000;
    cfg.seg_max_points = 100;
    for (int host = 0; host < 4; host++) {
        nsc_sim_host h = nsc_sim_host_random(&r);
        nsc_clock_model m;
        cr_assert_eq(nsc_clock_init(&m, &cfg), 0);
        cr_assert_eq(nsc_sim_feed(&m, &h, &spiky, &r, 100e6, 60 * NS_PER_S), 0);
        cr_assert_geq(m.nsegs, 7, "600 points in segments of 100 with overlap");
        double covered, p99 = p99_error(&m, &h, &r, 0.5e9, 59.5e9, 0, 0, &covered);
        cr_assert_leq(p99, 10000, "host %d: p99 %.0f ns", host, p99);
        cr_assert_geq(covered, 0.99);
        nsc_clock_free(&m);
    }
}

static void build_stepped(nsc_clock_model *m, nsc_sim_host *h, int64_t step, uint64_t seed)
{
    nsc_sim_rng r = {seed};
    *h = nsc_sim_host_random(&r);
    h->step_ns = step;
    h->step_at = 60.05 * NS_PER_S;
    cr_assert_eq(nsc_clock_init(m, NULL), 0);
    cr_assert_eq(nsc_sim_feed(m, h, &nsc_sim_lan, &r, 100e6, 120 * NS_PER_S), 0);
}

Test(clock, step_starts_new_segment)
{
    const int64_t steps[] = {3000000, -3000000, 800000};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
        nsc_clock_model m;
        nsc_sim_host h;
        build_stepped(&m, &h, steps[i], 10 + i);
        cr_assert_eq(m.nsegs, 2, "step %ld: %zu segments", (long)steps[i], m.nsegs);
        /* The new line starts at the first probe after the step (probes come
         * every 100 ms), not at the first window's point after it. */
        uint64_t at = nsc_sim_host_time(&h, h.step_at);
        cr_assert(m.segs[1].start_ns >= at && m.segs[1].start_ns < at + 101000000ull,
                  "step %ld: segment starts %.3f ms after it", (long)steps[i],
                  ((double)m.segs[1].start_ns - (double)at) / 1e6);
        /* Away from the probe interval in which the step happened, both lines are exact. */
        nsc_sim_rng r = {99};
        double covered,
            p99 = p99_error(&m, &h, &r, 0.5e9, 119e9, h.step_at, h.step_at + 0.101e9, &covered);
        cr_assert_leq(p99, 10000, "step %ld: p99 %.0f ns", (long)steps[i], p99);
        cr_assert_geq(covered, 0.99);
        nsc_clock_free(&m);
    }
}

Test(clock, segment_boundary_is_exact)
{
    nsc_clock_model m;
    nsc_sim_host h;
    build_stepped(&m, &h, 3000000, 20);
    uint64_t b = m.segs[1].start_ns, before, at, err;
    cr_assert_eq(nsc_clock_segment_for(&m, b), 1);
    cr_assert_eq(nsc_clock_segment_for(&m, b - 1), 0);
    cr_assert_eq(nsc_clock_segment_for(&m, m.segs[0].start_ns - 1), 0, "before all: first");
    cr_assert_eq(nsc_clock_segment_for(&m, UINT64_MAX), 1, "after all: last");
    cr_assert_eq(nsc_clock_host_to_ref(&m, b - 1, &before, &err), 0);
    cr_assert_eq(nsc_clock_host_to_ref(&m, b, &at, &err), 0);
    /* One host ns later, the offset has moved by the step (host jumped ahead
     * by 3 ms, so the offset ref - host fell by 3 ms). */
    double jump = (double)(int64_t)(at - before) - 1;
    cr_assert(fabs(jump + 3000000) < 20000, "jump at the boundary %.0f ns", jump);
    /* Inside the new segment, the line is the segment's own. */
    const nsc_clock_seg *s = &m.segs[1];
    int64_t off = s->anchor_off + llround(s->off_ns + s->drift * (double)(int64_t)(b - s->anchor_host));
    cr_assert_eq(at, b + (uint64_t)off);
    nsc_clock_free(&m);
}

Test(clock, rejects_bad_samples)
{
    nsc_clock_model m;
    uint64_t ref;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    cr_assert_eq(nsc_clock_host_to_ref(&m, 5, &ref, NULL), NSC_CLOCK_EEMPTY);
    nsc_clock_sample back = {100, 1000, 1010, 90};
    nsc_clock_sample service_longer = {100, 1000, 1200, 150};
    nsc_clock_sample ok = {100, 1000, 1010, 160}, older = {99, 1000, 1010, 160};
    cr_assert_eq(nsc_clock_add(&m, &back), NSC_CLOCK_EINVAL);
    cr_assert_eq(nsc_clock_add(&m, &service_longer), NSC_CLOCK_EINVAL);
    cr_assert_eq(nsc_clock_add(&m, &ok), 0);
    cr_assert_eq(nsc_clock_add(&m, &older), NSC_CLOCK_EORDER);
    cr_assert_eq(nsc_clock_flush(&m), 0);
    cr_assert_eq(nsc_clock_host_to_ref(&m, 130, &ref, NULL), 0);
    cr_assert_eq(ref, 1005 + 0, "offset = ((1000-100)+(1010-160))/2 = 875, at 130 -> 1005");
    nsc_clock_free(&m);
    nsc_clock_cfg bad;
    nsc_clock_cfg_default(&bad);
    bad.window_ns = 0;
    cr_assert_eq(nsc_clock_init(&m, &bad), NSC_CLOCK_EINVAL);
}

/* From host time h0 to 4.9 s: every bound holds the true offset off, and
 * before tight_until it is at most tight. */
static void bounds_hold(const nsc_clock_model *m, uint64_t off, uint64_t h0, uint64_t tight_until, uint64_t tight)
{
    for (uint64_t h = h0; h < 4900000000; h += 37000000) {
        uint64_t ref, err;
        cr_assert_eq(nsc_clock_host_to_ref(m, h, &ref, &err), 0);
        int64_t miss = (int64_t)(ref - (h + off));
        cr_assert_leq((uint64_t)llabs(miss), err, "at %" PRIu64 ": %" PRId64 " ns off, bound %" PRIu64, h, miss, err);
        if (h < tight_until)
            cr_assert_leq(err, tight, "at %" PRIu64 ": bound %" PRIu64, h, err);
    }
}

/* Every probe bounds the offset within half its round trip: 60 us round
 * trips, alternately quick out (5 us, 55 us back) and quick back, read the
 * offset 25 us off either way. Each bounds it to [-5, 55] or [-55, 5] us:
 * together to 5 us, where the round trip's half and the offsets' scatter
 * (30 + 3 x 25 us) bounded it to 105 us. */
Test(clock, bound_from_probes_quick_either_way)
{
    const uint64_t off = 7000000, us = 1000;
    nsc_clock_model m;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    for (uint64_t i = 0; i < 40; i++) {
        uint64_t t1 = 1000000000 + i * 100000000, out = i % 2 ? 5 * us : 55 * us;
        uint64_t t2 = t1 + off + out, t3 = t2 + 2 * us;
        nsc_clock_sample s = {t1, t2, t3, t3 - off + 60 * us - out};
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
    }
    cr_assert_eq(nsc_clock_flush(&m), 0);
    bounds_hold(&m, off, 1000000000, UINT64_MAX, 10 * us);
    nsc_clock_free(&m);
}

/* The probes bound the line where they ran: 2 s of quick probes (10 us
 * round trips), then 2 s of slow ones (200 us). A time among the quick ones
 * is bound by them (where the segment's worst, 100 us, bounded it), a time
 * among the slow ones by the slow ones and the drift error to the quick. */
Test(clock, bound_from_the_probes_near_the_time)
{
    const uint64_t off = 7000000, us = 1000;
    nsc_clock_model m;
    cr_assert_eq(nsc_clock_init(&m, NULL), 0);
    for (uint64_t i = 0; i < 40; i++) {
        uint64_t t1 = 1000000000 + i * 100000000, half = i < 20 ? 5 * us : 100 * us;
        nsc_clock_sample s = {t1, t1 + off + half, t1 + off + half + us, t1 + 2 * half + us};
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
    }
    cr_assert_eq(nsc_clock_flush(&m), 0);
    bounds_hold(&m, off, 1010000000, 2900000000, 15 * us);
    nsc_clock_free(&m);
}

static uint8_t *serialize(const nsc_clock_model *m, size_t *len)
{
    *len = nsc_clock_serialized_size(m);
    uint8_t *buf = malloc(*len + 1);
    cr_assert_not_null(buf);
    nsc_clock_serialize(m, buf);
    return buf;
}

Test(clock, serialize_round_trip)
{
    nsc_clock_model m, back;
    nsc_sim_host h;
    build_stepped(&m, &h, 3000000, 30);
    nsc_clock_sample s;
    nsc_sim_rng r = {31};
    nsc_sim_probe(&h, &nsc_sim_lan, &r, 121 * NS_PER_S, &s);
    cr_assert_eq(nsc_clock_add(&m, &s), 0, "leave an open window in the state");
    size_t len, len2;
    uint8_t *buf = serialize(&m, &len);
    cr_assert_eq(nsc_clock_deserialize(&back, buf, len), 0);
    uint8_t *again = serialize(&back, &len2);
    cr_assert_eq(len2, len);
    cr_assert_eq(memcmp(buf, again, len), 0);
    /* Both continue identically. */
    for (double t = 122 * NS_PER_S; t < 200 * NS_PER_S; t += 100e6) {
        nsc_sim_probe(&h, &nsc_sim_lan, &r, t, &s);
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
        cr_assert_eq(nsc_clock_add(&back, &s), 0);
    }
    for (int i = 0; i < 1000; i++) {
        uint64_t host = nsc_sim_host_time(&h, nsc_sim_range(&r, 0, 200 * NS_PER_S));
        uint64_t a, b, ea, eb;
        cr_assert_eq(nsc_clock_host_to_ref(&m, host, &a, &ea), 0);
        cr_assert_eq(nsc_clock_host_to_ref(&back, host, &b, &eb), 0);
        cr_assert_eq(a, b);
        cr_assert_eq(ea, eb);
    }
    free(buf);
    free(again);
    nsc_clock_free(&m);
    nsc_clock_free(&back);
}

static int deserialize_copy(const uint8_t *src, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    cr_assert_not_null(copy);
    memcpy(copy, src, len);
    nsc_clock_model m;
    int rc = nsc_clock_deserialize(&m, copy, len);
    if (rc == 0)
        nsc_clock_free(&m);
    free(copy);
    return rc;
}

/* Offsets inside the serialized form (see clock.c): header fields, then segments. */
#define OFF_VERSION 4
#define OFF_NSEGS 40
#define OFF_NPTS 44
#define OFF_NPENDING 48
#define OFF_SEG0 60
#define OFF_SEG_DRIFT (3 * 8 + 8)
#define SEG_SIZE 76

Test(clock, malformed_model_rejected)
{
    nsc_clock_model m;
    nsc_sim_host h;
    build_stepped(&m, &h, 3000000, 40);
    size_t len;
    uint8_t *buf = serialize(&m, &len);
    for (size_t cut = 0; cut < len; cut++)
        cr_assert_eq(deserialize_copy(buf, cut), NSC_CLOCK_ETRUNC, "cut at %zu", cut);
    buf[len] = 0;
    cr_assert_eq(deserialize_copy(buf, len + 1), NSC_CLOCK_ETRAILING);

    uint8_t *bad = malloc(len);
    cr_assert_not_null(bad);
#define MUTATE(stmt, expect)                                 \
    do {                                                     \
        memcpy(bad, buf, len);                               \
        stmt;                                                \
        cr_assert_eq(deserialize_copy(bad, len), expect, #stmt); \
    } while (0)
    MUTATE(bad[0] ^= 0xff, NSC_CLOCK_EMAGIC);
    MUTATE(bad[OFF_VERSION + 3] = 9, NSC_CLOCK_EVERSION);
    MUTATE(bad[OFF_NSEGS] = 0xff, NSC_CLOCK_ETRUNC);       /* 4 G segments: no allocation */
    MUTATE(bad[OFF_NPTS + 1] = 0xff, NSC_CLOCK_EVALUE);    /* more points than a segment holds */
    MUTATE(memset(bad + OFF_SEG0 + OFF_SEG_DRIFT, 0xff, 8), NSC_CLOCK_EVALUE);    /* NaN drift */
    MUTATE(memset(bad + OFF_SEG0 + SEG_SIZE, 0, 8), NSC_CLOCK_EVALUE);  /* segment 1 before 0 */
#undef MUTATE
    free(bad);
    free(buf);
    nsc_clock_free(&m);
}

/* A model written by version 1 or 2 (an open window's best probe in the
 * header, version 2 also where a suspected step started) is still read, and
 * that probe is judged as it is loaded: the same model as adding it now. */
static uint8_t *put_be(uint8_t *p, uint64_t v, int bytes)
{
    for (int i = bytes - 1; i >= 0; i--, v >>= 8)
        p[i] = (uint8_t)v;
    return p + bytes;
}

static uint8_t *legacy_image(const nsc_clock_model *m, const nsc_clock_sample *win, uint32_t version,
                             size_t *len)
{
    size_t cur;
    uint8_t *buf = serialize(m, &cur);
    size_t extra = 4 + 24 + 8 + (version == 2 ? 8 : 0);
    uint8_t *old = calloc(1, cur + extra);
    cr_assert_not_null(old);
    uint64_t rtt = (win->t4 - win->t1) - (win->t3 - win->t2);
    memcpy(old, buf, OFF_NPENDING + 4);
    old[OFF_VERSION + 3] = (uint8_t)version;
    uint8_t *at = old + OFF_NPENDING + 4;
    at = put_be(at, 1, 4); /* has_win */
    at = put_be(at, win->t1 + (win->t4 - win->t1) / 2, 8);
    at = put_be(at, win->t2 - win->t1 - rtt / 2, 8);
    at = put_be(at, rtt, 8);
    put_be(at + 8, win->t1, 8); /* last_t1, after the window's index */
    memcpy(old + OFF_SEG0 + extra, buf + OFF_SEG0, cur - OFF_SEG0);
    free(buf);
    *len = cur + extra;
    return old;
}

Test(clock, legacy_models_read)
{
    for (uint32_t version = 1; version <= 2; version++) {
        nsc_clock_model m, back;
        nsc_sim_host h;
        build_stepped(&m, &h, 3000000, 50);
        nsc_sim_rng r = {51};
        nsc_clock_sample s;
        nsc_sim_probe(&h, &nsc_sim_lan, &r, 120.5 * NS_PER_S, &s);
        size_t len;
        uint8_t *buf = legacy_image(&m, &s, version, &len);
        cr_assert_eq(nsc_clock_deserialize(&back, buf, len), 0, "version %u", version);
        cr_assert_eq(nsc_clock_add(&m, &s), 0);
        cr_assert_eq(back.nsegs, m.nsegs);
        cr_assert_eq(back.npts, m.npts);
        cr_assert_eq(back.last_t1, m.last_t1);
        for (uint64_t host = m.segs[0].start_ns; host < m.last_t1; host += 1000000007ull) {
            uint64_t a, b;
            cr_assert_eq(nsc_clock_host_to_ref(&m, host, &a, NULL), 0);
            cr_assert_eq(nsc_clock_host_to_ref(&back, host, &b, NULL), 0);
            cr_assert_eq(a, b);
        }
        nsc_clock_free(&back);
        cr_assert_eq(nsc_clock_deserialize(&back, buf, len - 1), NSC_CLOCK_ETRUNC);
        buf[OFF_NPENDING + 4] = 2;
        cr_assert_eq(nsc_clock_deserialize(&back, buf, len), NSC_CLOCK_EVALUE, "has_win 2");
        free(buf);
        nsc_clock_free(&m);
    }
}

/* ---- steps in a short job, as measured end to end --------------------- */

/* Loopback on a loaded machine (tests/e2e/clock.sh): round trips of 45 us at
 * best, about 150 us typically, a few of milliseconds; probes every 20 ms. */
static const nsc_sim_net loaded_loopback = {20000, 50000, 0.03, 200000, 5000000};

/* Probes every 20 ms, the first 5 every 2 ms (as the agent sends them). A
 * backward step makes the host read the same times again: those probes are
 * refused (host time went back), as the collector refuses them. */
static void feed_stepping(nsc_clock_model *m, const nsc_sim_host *h, nsc_sim_rng *r, double span_ns)
{
    for (double t = 0; t < span_ns; t += t < 10e6 ? 2e6 : 20e6) {
        nsc_clock_sample s;
        nsc_sim_probe(h, &loaded_loopback, r, t, &s);
        int rc = nsc_clock_add(m, &s), replay = h->step_ns < 0 && t >= h->step_at &&
                                                t < h->step_at - (double)h->step_ns + 10e6;
        cr_assert(rc == 0 || (rc == NSC_CLOCK_EORDER && replay), "probe at %.3f s: %s", t / 1e9,
                  nsc_clock_strerror(rc));
    }
    cr_assert_eq(nsc_clock_flush(m), 0);
}

/* A job of 6 s with a step 1.5 s or 2.5 s in: the segment before the step
 * has a second or so of probes, the one after it a few seconds, and both
 * lines must still be right. One point per 1 s window gave the first one or
 * two points (a drift of 0 or of whatever two points said, e.g. -1000 ppm)
 * and the second carried it: p99 errors of 100 us to 47 ms. */
Test(clock, step_in_short_job)
{
    const struct { double drift, at_s; int64_t step; } cases[] = {
        {100e-6, 1.5, 50000000}, {-100e-6, 2.5, -20000000}, {100e-6, 0.9, 3000000}};
    for (int seed = 0; seed < 16; seed++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            nsc_sim_rng r = {70 + (uint64_t)seed};
            nsc_sim_host h = nsc_sim_host_random(&r);
            h.drift = cases[c].drift;
            h.step_at = cases[c].at_s * NS_PER_S + nsc_sim_range(&r, 0, 20e6);
            h.step_ns = cases[c].step;
            nsc_clock_model m;
            cr_assert_eq(nsc_clock_init(&m, NULL), 0);
            feed_stepping(&m, &h, &r, 6 * NS_PER_S);
            cr_assert_eq(m.nsegs, 2, "seed %d case %zu: %zu segments", seed, c, m.nsegs);
            uint64_t at = nsc_sim_host_time(&h, h.step_at);
            double late = (double)(int64_t)(m.segs[1].start_ns - at);
            /* Within two probe intervals, and after a backward step also the
             * host times it made the clock read twice (probes refused). */
            double replay = h.step_ns < 0 ? (double)-h.step_ns : 0;
            cr_assert(late >= 0 && late < 40e6 + replay, "seed %d case %zu: segment starts %.3f ms after the step",
                      seed, c, late / 1e6);
            for (size_t i = 0; i < 2; i++)
                cr_assert(fabs(m.segs[i].drift + h.drift) < 20e-6,
                          "seed %d case %zu: segment %zu drift %.3f ppm, true %.3f", seed, c, i,
                          m.segs[i].drift * 1e6, -h.drift * 1e6);
            double covered, p99 = p99_error(&m, &h, &r, 0.1e9, 5.9e9, h.step_at, h.step_at + 41e6,
                                            &covered);
            cr_assert_leq(p99, 25000, "seed %d case %zu: p99 %.0f ns", seed, c, p99);
            nsc_clock_free(&m);
        }
}

/* ---- GPU pTimer ------------------------------------------------------ */

static void feed_gpu(nsc_gpuclock *g, const nsc_sim_host *h, const nsc_sim_gpu *gpu,
                     nsc_sim_rng *r, double span_ns)
{
    uint64_t held_p = 0, held_c = 0;
    int holding = 0;
    for (double t = 0; t < span_ns; t += 10e6) {
        double lag = nsc_sim_range(r, 0, 50000);
        uint64_t p = nsc_sim_ptimer(gpu, t), c = nsc_sim_host_time(h, t + lag);
        /* One pair in ten arrives after its successor (channels interleave). */
        if (!holding && nsc_sim_uniform(r) < 0.1) {
            held_p = p, held_c = c, holding = 1;
            continue;
        }
        cr_assert_eq(nsc_gpuclock_add(g, p, c), 0);
        if (holding) {
            cr_assert_eq(nsc_gpuclock_add(g, held_p, held_c), 0);
            holding = 0;
        }
    }
}

Test(gpuclock, p99_with_polling_lag)
{
    nsc_sim_rng r = {50};
    static double err[QUERIES], err_ref[QUERIES];
    for (int rank = 0; rank < 8; rank++) {
        nsc_sim_host h = nsc_sim_host_random(&r);
        nsc_sim_gpu gpu = nsc_sim_gpu_random(&r);
        nsc_gpuclock g;
        nsc_clock_model m;
        nsc_gpuclock_init(&g);
        feed_gpu(&g, &h, &gpu, &r, 60 * NS_PER_S);
        cr_assert_lt(g.nhull, 200, "only hull vertices are kept: %zu", g.nhull);
        cr_assert_eq(nsc_clock_init(&m, NULL), 0);
        cr_assert_eq(nsc_sim_feed(&m, &h, &nsc_sim_lan, &r, 100e6, 60 * NS_PER_S), 0);
        size_t within = 0;
        for (size_t i = 0; i < QUERIES; i++) {
            double t = nsc_sim_range(&r, 0.5e9, 59.5e9);
            uint64_t cpu, bound, ref;
            cr_assert_eq(nsc_gpuclock_to_cpu(&g, nsc_sim_ptimer(&gpu, t), &cpu, &bound), 0);
            err[i] = fabs((double)(int64_t)(cpu - nsc_sim_host_time(&h, t)));
            within += err[i] <= (double)bound;
            cr_assert_eq(nsc_clock_host_to_ref(&m, cpu, &ref, NULL), 0);
            err_ref[i] = fabs((double)(int64_t)(ref - nsc_sim_ref_time(&h, t)));
        }
        double p99 = nsc_sim_quantile(err, QUERIES, 0.99);
        double p99_ref = nsc_sim_quantile(err_ref, QUERIES, 0.99);
        cr_assert_leq(p99, 20000, "rank %d: GPU->CPU p99 %.0f ns", rank, p99);
        cr_assert_leq(p99_ref, 20000, "rank %d: GPU->reference p99 %.0f ns", rank, p99_ref);
        cr_assert_geq((double)within / QUERIES, 0.99, "rank %d: bound covers %zu", rank, within);
        cr_assert(fabs(nsc_gpuclock_drift(&g) - ((1 + h.drift) / (1 + gpu.drift) - 1)) < 1e-6);
        nsc_gpuclock_free(&g);
        nsc_clock_free(&m);
    }
}

Test(gpuclock, empty_and_single_pair)
{
    nsc_gpuclock g;
    uint64_t cpu, err;
    nsc_gpuclock_init(&g);
    cr_assert_eq(nsc_gpuclock_to_cpu(&g, 1, &cpu, &err), NSC_GPUCLOCK_EEMPTY);
    cr_assert_eq(nsc_gpuclock_add(&g, 1000, 5000), 0);
    cr_assert_eq(nsc_gpuclock_to_cpu(&g, 1500, &cpu, &err), 0);
    cr_assert_eq(cpu, 5500);
    cr_assert_eq(nsc_gpuclock_drift(&g), 0);
    nsc_gpuclock_free(&g);
}

/* One collective's pairs: two channels' stops 2 us apart, the second
 * observed 1 us later than the first, fit a slope of 0.5. Its kernel start,
 * 50 ms before, lies far from the pairs: the bound must widen with the
 * slope's uncertainty over that distance, not stay at the floor, and no
 * more than a timer's drift allows (not 0.5 x 50 ms). */
Test(gpuclock, few_pairs_bound_holds_far_from_them)
{
    const uint64_t offset = 5000, p0 = 1000000000;
    nsc_gpuclock g;
    uint64_t cpu, err;
    nsc_gpuclock_init(&g);
    cr_assert_eq(nsc_gpuclock_add(&g, p0, p0 + offset), 0);
    cr_assert_eq(nsc_gpuclock_add(&g, p0 + 2000, p0 + 2000 + offset + 1000), 0);
    const uint64_t starts[] = {p0 - 50000000, p0 - 1000000, p0 + 2000 + 50000000};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        cr_assert_eq(nsc_gpuclock_to_cpu(&g, starts[i], &cpu, &err), 0);
        double off = fabs((double)(int64_t)(cpu - (starts[i] + offset)));
        cr_assert_leq(off, (double)err, "pTimer %" PRIu64 ": %.0f ns off, bound %" PRIu64, starts[i], off, err);
        cr_assert_leq(err, 110000, "pTimer %" PRIu64 ": bound %" PRIu64 " ns, beyond any timer's drift", starts[i],
                      err);
    }
    nsc_gpuclock_free(&g);
}

/* NCCL 2.29's drifting KernelCh (docs/nccl-abi.md): once its work counter
 * fell k tasks behind, a KernelCh's timers are those of the task k back,
 * seen now. Such a pair is refused, moves neither the line nor the pairs'
 * mean, and is found stale on the line again; one seen late by a poll is
 * taken. */
Test(gpuclock, other_work_timers_are_refused)
{
    const uint64_t offset = 7000, p0 = 1000000000, task = 3000000;
    nsc_gpuclock g;
    uint64_t before, after, err;
    nsc_gpuclock_init(&g);
    for (uint64_t i = 0; i < 10; i++)
        cr_assert_eq(nsc_gpuclock_add(&g, p0 + i * task, p0 + i * task + offset + 800 * (i % 3)), 0);
    cr_assert_eq(nsc_gpuclock_to_cpu(&g, p0 + 30 * task, &before, &err), 0);
    double sum_x = g.sum_x;
    for (uint64_t i = 10; i < 20; i++) { /* the task before's stop, seen at this one's */
        uint64_t seen = p0 + i * task + offset;
        cr_assert_eq(nsc_gpuclock_add(&g, p0 + (i - 1) * task, seen), NSC_GPUCLOCK_STALE, "task %" PRIu64, i);
        cr_assert(nsc_gpuclock_stale(&g, p0 + (i - 1) * task, seen));
    }
    cr_assert_eq(g.npairs, 10);
    cr_assert_eq(g.sum_x, sum_x);
    cr_assert_eq(nsc_gpuclock_to_cpu(&g, p0 + 30 * task, &after, &err), 0);
    cr_assert_eq(after, before);
    cr_assert_eq(nsc_gpuclock_add(&g, p0 + 20 * task, p0 + 20 * task + offset + 200000), 0, "a poll 200 us late");
    cr_assert_not(nsc_gpuclock_stale(&g, 0, p0), "a 0 timer is missing, not stale");
    nsc_gpuclock_free(&g);
}

static nsc_gpuclock sample_gpuclock(void)
{
    nsc_sim_rng r = {60};
    nsc_sim_host h = nsc_sim_host_random(&r);
    nsc_sim_gpu gpu = {123456789, 30e-6};
    nsc_gpuclock g;
    nsc_gpuclock_init(&g);
    feed_gpu(&g, &h, &gpu, &r, 5 * NS_PER_S);
    return g;
}

Test(gpuclock, serialize_round_trip_and_malformed)
{
    nsc_gpuclock g = sample_gpuclock(), back;
    cr_assert_geq(g.nhull, 3);
    size_t len = nsc_gpuclock_serialized_size(&g);
    uint8_t *buf = malloc(len + 1), *copy = malloc(len + 1);
    cr_assert(buf && copy);
    nsc_gpuclock_serialize(&g, buf);
    cr_assert_eq(nsc_gpuclock_deserialize(&back, buf, len), 0);
    for (uint64_t p = 100000000; p < 6000000000ull; p += 77777777) {
        uint64_t a, b, ea, eb;
        cr_assert_eq(nsc_gpuclock_to_cpu(&g, p, &a, &ea), 0);
        cr_assert_eq(nsc_gpuclock_to_cpu(&back, p, &b, &eb), 0);
        cr_assert_eq(a, b);
        cr_assert_eq(ea, eb);
    }
    nsc_gpuclock_free(&back);
    for (size_t cut = 0; cut < len; cut++) {
        memcpy(copy, buf, cut);
        cr_assert_eq(nsc_gpuclock_deserialize(&back, copy, cut), NSC_GPUCLOCK_ETRUNC);
    }
    memcpy(copy, buf, len);
    copy[len] = 0;
    cr_assert_eq(nsc_gpuclock_deserialize(&back, copy, len + 1), NSC_GPUCLOCK_ETRAILING);
    memcpy(copy, buf, len);
    copy[0] = 'X';
    cr_assert_eq(nsc_gpuclock_deserialize(&back, copy, len), NSC_GPUCLOCK_EMAGIC);
    /* Lift the middle vertex of the first three far up: the hull is not convex. */
    memcpy(copy, buf, len);
    size_t vertex1_y = 4 + 4 + 8 + 8 + 8 + 8 + 4 + 16 + 8;
    copy[vertex1_y] = 0x10;
    cr_assert_eq(nsc_gpuclock_deserialize(&back, copy, len), NSC_GPUCLOCK_EVALUE);
    free(buf);
    free(copy);
    nsc_gpuclock_free(&g);
}
