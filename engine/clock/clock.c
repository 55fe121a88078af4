/* clock.c: probe filtering, robust piecewise offset+drift fit, queries; the
 * serialized form is clockser.c's. */
#include "clock_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "order.h"

#define RTT_SLACK_NS 20000.0  /* candidates: round trip <= 2 * segment minimum + slack, */
#define RTT_FEWEST 8          /* and at least the fastest this many points */
#define RTT_WEIGHT_NS 10000.0 /* a point this much slower than the fastest counts half */
#define RESID_FLOOR_NS 2000.0 /* residual rejection never cuts tighter than this */
#define UNKNOWN_DRIFT 1e-4    /* drift error of a line fitted from one point: 100 ppm */
#define BOUND_NEAR 16         /* probes each side that bound the line at a time */
#define BOUND_WINDOW_NS 100000000ull /* host times that share one bound (window_bound) */

static const char *const err_text[] = {
    "ok", "impossible probe sample", "probe older than the last accepted one",
    "out of memory", "no clock point fitted yet", "serialized model truncated",
    "not a serialized clock model", "unknown clock model version",
    "serialized model field out of range or order", "bytes after the serialized model"};

const char *nsc_clock_strerror(int err)
{
    int i = -err;
    return i >= 0 && i < (int)(sizeof err_text / sizeof *err_text) ? err_text[i] : "unknown error";
}

void nsc_clock_cfg_default(nsc_clock_cfg *cfg)
{
    cfg->window_ns = 1000000000ull;
    cfg->step_ns = 500000ull;
    cfg->prior_span_ns = 10000000000ull;
    cfg->step_confirm = 3;
    cfg->seg_max_points = 300;
}

static int cfg_valid(const nsc_clock_cfg *c)
{
    return c->window_ns && c->step_ns && c->step_confirm && c->seg_max_points >= 4 &&
           c->seg_max_points <= (1u << 20) && c->step_confirm <= c->seg_max_points;
}

int nsc_clock_init(nsc_clock_model *m, const nsc_clock_cfg *cfg)
{
    memset(m, 0, sizeof *m);
    if (cfg)
        m->cfg = *cfg;
    else
        nsc_clock_cfg_default(&m->cfg);
    if (!cfg_valid(&m->cfg))
        return NSC_CLOCK_EINVAL;
    m->pts = calloc(m->cfg.seg_max_points, sizeof *m->pts);
    m->pending = calloc(m->cfg.step_confirm, sizeof *m->pending);
    m->work = calloc(m->cfg.seg_max_points, sizeof *m->work);
    if (!m->pts || !m->pending || !m->work) {
        nsc_clock_free(m);
        return NSC_CLOCK_ENOMEM;
    }
    return NSC_CLOCK_OK;
}

void nsc_clock_free(nsc_clock_model *m)
{
    free(m->segs);
    free(m->pts);
    free(m->pending);
    free(m->work);
    memset(m, 0, sizeof *m);
}

/* ---- fitting ---------------------------------------------------------- */

typedef struct line {
    double off, drift;  /* relative to the segment's anchor */
} line;

/* Which points a fit uses: round trip under a cut, and optionally a residual
 * from a previous line under a cut. rtt_min: the segment's fastest round trip. */
typedef struct gate {
    double rtt_cut;
    const line *by;
    double resid_cut;
    double rtt_min;
} gate;

static int64_t wrap_diff(uint64_t a, uint64_t b)
{
    return (int64_t)(a - b);
}

static double px(const nsc_clock_seg *s, const nsc_clock_point *p)
{
    return (double)wrap_diff(p->host_ns, s->anchor_host);
}

static double py(const nsc_clock_seg *s, const nsc_clock_point *p)
{
    return (double)wrap_diff((uint64_t)p->off_ns, (uint64_t)s->anchor_off);
}

static double resid(const nsc_clock_seg *s, const nsc_clock_point *p, const line *l)
{
    return py(s, p) - (l->off + l->drift * px(s, p));
}

static int admits(const gate *g, const nsc_clock_seg *s, const nsc_clock_point *p)
{
    if ((double)p->rtt_ns > g->rtt_cut)
        return 0;
    return !g->by || fabs(resid(s, p, g->by)) <= g->resid_cut;
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, nsc_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* How much a point counts in a fit. A slow exchange was slow mostly one way
 * (a thread woke late on one side), so its offset is off by up to half the
 * extra round trip, and the fastest exchanges are the least lopsided:
 * measured on loopback, offsets grow with round trip above the minimum. */
static double weight(const gate *g, const nsc_clock_point *p)
{
    double extra = ((double)p->rtt_ns - g->rtt_min) / RTT_WEIGHT_NS;
    return 1.0 / (1.0 + extra * extra);
}

/* Weighted least squares over the admitted points. Returns how many it used;
 * *slope_se gets the slope's standard error (UNKNOWN_DRIFT when it cannot be
 * told). */
static size_t fit_ls(const nsc_clock_model *m, const nsc_clock_seg *s, const gate *g, line *l,
                     double *slope_se)
{
    double n = 0, sw = 0, mx = 0, my = 0, sxx = 0, sxy = 0, ss = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i])) {
            double w = weight(g, &m->pts[i]);
            n++;
            sw += w;
            mx += w * px(s, &m->pts[i]);
            my += w * py(s, &m->pts[i]);
        }
    if (n == 0)
        return 0;
    mx /= sw;
    my /= sw;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i])) {
            double w = weight(g, &m->pts[i]), dx = px(s, &m->pts[i]) - mx;
            sxx += w * dx * dx;
            sxy += w * dx * (py(s, &m->pts[i]) - my);
        }
    l->drift = sxx > 0 ? sxy / sxx : 0;
    l->off = my - l->drift * mx;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i])) {
            double r = resid(s, &m->pts[i], l);
            ss += weight(g, &m->pts[i]) * r * r;
        }
    /* With equal weights this is the textbook sqrt(ss / (n - 2) / sxx). A
     * point's offset is never known better than RESID_FLOOR_NS: three probes
     * that happen to fall on a line over 10 ms do not make a drift exact
     * (measured: 1425 ppm, "exact", from the first probes of a job). */
    double var = n > 2 ? fmax(ss / (n - 2), RESID_FLOOR_NS * RESID_FLOOR_NS) : 0;
    *slope_se = n > 2 && sxx > 0 ? sqrt(var / sxx) : UNKNOWN_DRIFT;
    return (size_t)n;
}

/* Offset with the drift held fixed: the median is immune to outliers. */
static double median_offset(const nsc_clock_model *m, const nsc_clock_seg *s, const gate *g,
                            double drift)
{
    size_t k = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i]))
            m->work[k++] = py(s, &m->pts[i]) - drift * px(s, &m->pts[i]);
    return median(m->work, k);
}

/* Fit a line, then drop points whose residual is far beyond the typical one
 * (4 robust sigmas) and fit again. On success *g gates by *first, the first
 * line, which the caller owns. */
static void fit_robust(const nsc_clock_model *m, const nsc_clock_seg *s, gate *g, line *first,
                       line *l, double *slope_se)
{
    fit_ls(m, s, g, l, slope_se);
    size_t k = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i]))
            m->work[k++] = fabs(resid(s, &m->pts[i], l));
    *first = *l;
    gate strict = {g->rtt_cut, first, fmax(4 * 1.4826 * median(m->work, k), RESID_FLOOR_NS),
                   g->rtt_min};
    line refit;
    double se;
    if (fit_ls(m, s, &strict, &refit, &se) >= 2) {
        *l = refit;
        *slope_se = se;
        *g = strict;
    }
}

/* The drift of a young segment: its own estimate and its predecessor's are
 * two independent measurements of one oscillator (a step moves the offset,
 * not the frequency), combined by inverse variance. Right after a step the
 * young line's own slope, from a few probes over a fraction of a second, is
 * noise, and the predecessor's dominates; as the segment grows its own takes
 * over. Returns the combined drift's standard error. */
static double combine_drift(const nsc_clock_seg *prior, double own, double own_se, double *drift)
{
    double prior_se = fmax(prior->drift_err / 3, 1e-9);
    double wp = 1 / (prior_se * prior_se), wo = own_se > 0 ? 1 / (own_se * own_se) : 0;
    *drift = (prior->drift * wp + own * wo) / (wp + wo);
    return 1 / sqrt(wp + wo);
}

/* The offset that goes with a drift held fixed: weighted like the fit. */
static double offset_for(const nsc_clock_model *m, const nsc_clock_seg *s, const gate *g,
                         double drift)
{
    double sw = 0, sy = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(g, s, &m->pts[i])) {
            double w = weight(g, &m->pts[i]);
            sw += w;
            sy += w * (py(s, &m->pts[i]) - drift * px(s, &m->pts[i]));
        }
    return sy / sw;
}

/* Which round trips are fitted. Window minima are alike, and twice the
 * fastest admits them; a young segment's every probe is not: one lucky fast
 * exchange among a job's first probes would leave it the only candidate (a
 * line of one point, drift 0, measured), so the fastest few always are. */
static double rtt_cut(const nsc_clock_model *m, uint64_t rtt_min)
{
    for (size_t i = 0; i < m->npts; i++)
        m->work[i] = (double)m->pts[i].rtt_ns;
    qsort(m->work, m->npts, sizeof *m->work, nsc_cmp_double);
    double kth = m->work[m->npts < RTT_FEWEST ? m->npts - 1 : RTT_FEWEST - 1];
    return fmax(2.0 * (double)rtt_min + RTT_SLACK_NS, kth);
}

/* The line's error bound over the segment's span. Each probe says where the
 * offset was when it ran: within half its round trip of its own offset (each
 * way took no less than nothing). At host time h the line's error therefore
 * lies in the intersection of every probe's interval, each widened by the
 * line's drift error over its distance to h: the fastest probe near h bounds
 * it, and a probe quick one way and one quick the other way bound it tighter
 * still. The bound is the worst over the probes' times and the middles
 * between them (the near probes only: farther ones are widened out), or -1
 * where the intervals do not meet (the probes disagree with the line's
 * drift error: no bound from them). */
static double probes_bound(const nsc_clock_model *m, const nsc_clock_seg *s, const line *l, double drift_err)
{
    double worst = 0;
    for (size_t j = 0; j + 1 < 2 * m->npts; j++) {
        size_t a = j / 2, b = (j + 1) / 2;
        double h = 0.5 * (px(s, &m->pts[a]) + px(s, &m->pts[b])), lo = -INFINITY, hi = INFINITY;
        size_t from = a > BOUND_NEAR ? a - BOUND_NEAR : 0, to = b + BOUND_NEAR < m->npts ? b + BOUND_NEAR + 1 : m->npts;
        for (size_t i = from; i < to; i++) {
            const nsc_clock_point *p = &m->pts[i];
            double r = resid(s, p, l), w = (double)p->rtt_ns / 2 + drift_err * fabs(h - px(s, p));
            lo = fmax(lo, r - w);
            hi = fmin(hi, r + w);
        }
        if (lo > hi)
            return -1;
        worst = fmax(worst, fmax(-lo, hi));
    }
    return worst;
}

static void fit_open(nsc_clock_model *m)
{
    nsc_clock_seg *s = &m->segs[m->nsegs - 1];
    const nsc_clock_seg *prior = m->nsegs > 1 ? s - 1 : NULL;
    uint64_t rtt_min = UINT64_MAX;
    for (size_t i = 0; i < m->npts; i++)
        if (m->pts[i].rtt_ns < rtt_min)
            rtt_min = m->pts[i].rtt_ns;
    gate g = {rtt_cut(m, rtt_min), NULL, 0, (double)rtt_min};
    line l = {0, prior ? prior->drift : 0}, rejection_line;
    double drift_err = prior ? prior->drift_err : UNKNOWN_DRIFT, se;
    size_t n = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(&g, s, &m->pts[i])) {
            first = n++ ? first : m->pts[i].host_ns;
            last = m->pts[i].host_ns;
        }
    gate fitted = g;
    if (n >= 2)
        fit_robust(m, s, &fitted, &rejection_line, &l, &se);
    if (n < 2 || se >= UNKNOWN_DRIFT) {
        /* No slope to speak of (points a few ms apart): the predecessor's
         * drift, or none. */
        l.drift = prior ? prior->drift : 0;
        l.off = median_offset(m, s, &g, l.drift);
    } else {
        g = fitted;
        if (prior && last - first < m->cfg.prior_span_ns) {
            se = combine_drift(prior, l.drift, se, &l.drift);
            l.off = offset_for(m, s, &g, l.drift);
        }
        drift_err = 3 * se;
    }
    double ss = 0;
    n = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(&g, s, &m->pts[i])) {
            double r = resid(s, &m->pts[i], &l);
            ss += r * r;
            first = n++ ? first : m->pts[i].host_ns;
            last = m->pts[i].host_ns;
        }
    s->off_ns = l.off;
    s->drift = l.drift;
    double probes = probes_bound(m, s, &l, drift_err);
    s->err_ns = probes >= 0 ? probes : (double)rtt_min / 2 + 3 * sqrt(ss / (double)n);
    s->drift_err = drift_err;
    s->first_ns = first;
    s->last_ns = last;
    s->npoints = (uint32_t)m->npts;
}

/* ---- points and segments ---------------------------------------------- */

/* Start a segment over the points now in m->pts. */
static int open_segment(nsc_clock_model *m, uint64_t start_ns)
{
    if (nsc_grow(&m->segs, m->nsegs, &m->segs_cap, sizeof *m->segs, 8))
        return NSC_CLOCK_ENOMEM;
    nsc_clock_seg *s = &m->segs[m->nsegs++];
    memset(s, 0, sizeof *s);
    s->start_ns = start_ns;
    s->anchor_host = m->pts[0].host_ns;
    s->anchor_off = m->pts[0].off_ns;
    fit_open(m);
    return NSC_CLOCK_OK;
}

static uint64_t window_of(const nsc_clock_model *m, const nsc_clock_point *p)
{
    return p->host_ns / m->cfg.window_ns;
}

/* Keep only the fastest probe of each window before window `upto`; the
 * probes of later windows stay. */
static void thin(nsc_clock_model *m, uint64_t upto)
{
    size_t out = 0;
    for (size_t i = 0; i < m->npts;) {
        uint64_t w = window_of(m, &m->pts[i]);
        if (w >= upto) {
            m->pts[out++] = m->pts[i++];
            continue;
        }
        size_t best = i;
        for (; i < m->npts && window_of(m, &m->pts[i]) == w; i++)
            best = m->pts[i].rtt_ns < m->pts[best].rtt_ns ? i : best;
        m->pts[out++] = m->pts[best];
    }
    m->npts = out;
}

static int mature(const nsc_clock_model *m)
{
    return m->npts && m->pts[m->npts - 1].host_ns - m->pts[0].host_ns >= m->cfg.prior_span_ns;
}

/* The open segment is full: close it and continue with its last quarter of
 * points, so the new line starts where the old one ended. */
static int split_segment(nsc_clock_model *m, const nsc_clock_point *p)
{
    size_t keep = m->cfg.seg_max_points / 4;
    memmove(m->pts, m->pts + m->npts - keep, keep * sizeof *m->pts);
    m->pts[keep] = *p;
    m->npts = keep + 1;
    return open_segment(m, p->host_ns);
}

/* A probe on the open line becomes a point. A young segment keeps every
 * probe: its line must come from a fraction of a second of data, and one
 * point per window would leave it two or three. A mature segment keeps the
 * fastest probe of each finished window (one point per window, bounded
 * memory); a full segment is thinned the same way, then split. */
static int add_point(nsc_clock_model *m, const nsc_clock_point *p)
{
    if (m->npts == m->cfg.seg_max_points)
        thin(m, UINT64_MAX);
    if (m->npts == m->cfg.seg_max_points)
        return split_segment(m, p);
    m->pts[m->npts++] = *p;
    if (mature(m))
        thin(m, window_of(m, p));
    fit_open(m);
    return NSC_CLOCK_OK;
}

/* Disagrees with the open line by more than its own uncertainty: an
 * outlier, or the first sign of a step. A step is confirmed when step_confirm
 * probes in a row agree with each other; its segment starts at the first of
 * them, which is within a probe interval of the step. */
static int add_disagreeing(nsc_clock_model *m, const nsc_clock_point *p)
{
    if (m->npending) {
        const nsc_clock_point *q = &m->pending[0];
        double slack = (double)m->cfg.step_ns + (double)(p->rtt_ns + q->rtt_ns) / 2;
        if (fabs((double)wrap_diff((uint64_t)p->off_ns, (uint64_t)q->off_ns)) > slack)
            m->npending = 0;
    }
    m->pending[m->npending++] = *p;
    if (m->npending < m->cfg.step_confirm)
        return NSC_CLOCK_OK;
    memcpy(m->pts, m->pending, m->npending * sizeof *m->pts);
    m->npts = m->npending;
    m->npending = 0;
    return open_segment(m, m->pts[0].host_ns);
}

/* Every probe is judged against the open line, so a step is confirmed a few
 * probe intervals after it and no probe from before it reaches the new
 * segment. The line's own error bound counts too: a young line from a few
 * probes, extrapolated, is not evidence of a step. A slow probe that agrees proves nothing (its offset is uncertain
 * by half its round trip, which may hide the step), so only a fast one
 * clears the suspicion. */
static int accept_probe(nsc_clock_model *m, const nsc_clock_point *p)
{
    if (m->nsegs == 0) {
        m->pts[0] = *p;
        m->npts = 1;
        return open_segment(m, p->host_ns);
    }
    const nsc_clock_seg *s = &m->segs[m->nsegs - 1];
    line l = {s->off_ns, s->drift};
    uint64_t ref, line_err;
    nsc_clock_host_to_ref(m, p->host_ns, &ref, &line_err);
    double slack = (double)p->rtt_ns / 2 + (double)m->cfg.step_ns + (double)line_err;
    if (fabs(resid(s, p, &l)) > slack)
        return add_disagreeing(m, p);
    if ((double)p->rtt_ns <= 2.0 * (double)m->cfg.step_ns)
        m->npending = 0;
    return add_point(m, p);
}

static uint64_t last_point_ns(const nsc_clock_model *m)
{
    if (m->npending)
        return m->pending[m->npending - 1].host_ns;
    return m->npts ? m->pts[m->npts - 1].host_ns : 0;
}

int nsc_clock_accept_ordered(nsc_clock_model *m, nsc_clock_point p)
{
    uint64_t last = last_point_ns(m);
    if ((m->nsegs || m->npending) && p.host_ns <= last)
        p.host_ns = last + 1;
    return accept_probe(m, &p);
}

int nsc_clock_flush(nsc_clock_model *m)
{
    if (m->npts && mature(m)) {
        thin(m, UINT64_MAX);
        fit_open(m);
    }
    return NSC_CLOCK_OK;
}

int nsc_clock_add(nsc_clock_model *m, const nsc_clock_sample *s)
{
    if (s->t4 < s->t1 || s->t3 < s->t2 || s->t4 - s->t1 < s->t3 - s->t2)
        return NSC_CLOCK_EINVAL;
    if (s->t1 < m->last_t1)
        return NSC_CLOCK_EORDER;
    m->last_t1 = s->t1;
    uint64_t rtt = (s->t4 - s->t1) - (s->t3 - s->t2);
    /* offset = ((t2 - t1) + (t3 - t4)) / 2 = (t2 - t1) - rtt / 2, without overflow */
    nsc_clock_point p = {s->t1 + (s->t4 - s->t1) / 2,
                         wrap_diff(s->t2, s->t1) - (int64_t)(rtt / 2), rtt};
    return nsc_clock_accept_ordered(m, p);
}

/* ---- queries ---------------------------------------------------------- */

long nsc_clock_segment_for(const nsc_clock_model *m, uint64_t host_ns)
{
    if (m->nsegs == 0)
        return -1;
    size_t lo = 0, hi = m->nsegs;  /* first segment with start > host_ns */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->segs[mid].start_ns <= host_ns)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? (long)lo - 1 : 0;
}

/* The open segment's probes bound its line at every host time of the
 * BOUND_WINDOW_NS window holding host_ns (within the segment's span), each
 * probe's interval widened to the window's end farther from it: the bound
 * where the time is, not the segment's worst, and the same for the whole
 * window (a block's times share it). -1 where the intervals do not meet. */
static double window_bound(const nsc_clock_model *m, const nsc_clock_seg *s, uint64_t host_ns)
{
    uint64_t w0 = host_ns - host_ns % BOUND_WINDOW_NS, w1 = w0 + (BOUND_WINDOW_NS - 1);
    double a = (double)wrap_diff(w0 > s->first_ns ? w0 : s->first_ns, s->anchor_host);
    double b = (double)wrap_diff(w1 < s->last_ns && w1 > w0 ? w1 : s->last_ns, s->anchor_host);
    size_t in = 0, out = m->npts;
    while (in < out) { /* the first point at or after a */
        size_t mid = in + (out - in) / 2;
        if (px(s, &m->pts[mid]) < a)
            in = mid + 1;
        else
            out = mid;
    }
    while (out < m->npts && px(s, &m->pts[out]) <= b)
        out++;
    line l = {s->off_ns, s->drift};
    double lo = -INFINITY, hi = INFINITY;
    for (size_t i = in > BOUND_NEAR ? in - BOUND_NEAR : 0; i < m->npts && i < out + BOUND_NEAR; i++) {
        const nsc_clock_point *p = &m->pts[i];
        double x = px(s, p), r = resid(s, p, &l);
        double w = (double)p->rtt_ns / 2 + s->drift_err * fmax(fabs(a - x), fabs(b - x));
        lo = fmax(lo, r - w);
        hi = fmin(hi, r + w);
    }
    return lo > hi ? -1 : fmax(-lo, hi);
}

/* Whether segment i has its points (the open one): window_bound applies
 * inside its span. */
static int has_points(const nsc_clock_model *m, long i)
{
    return (size_t)i + 1 == m->nsegs && m->npts;
}

int nsc_clock_host_to_ref(const nsc_clock_model *m, uint64_t host_ns, uint64_t *ref_ns,
                          uint64_t *err_ns)
{
    long i = nsc_clock_segment_for(m, host_ns);
    if (i < 0)
        return NSC_CLOCK_EEMPTY;
    const nsc_clock_seg *s = &m->segs[i];
    double off = s->off_ns + s->drift * (double)wrap_diff(host_ns, s->anchor_host);
    *ref_ns = host_ns + (uint64_t)s->anchor_off + (uint64_t)(int64_t)llround(off);
    if (err_ns) {
        double outside = host_ns < s->first_ns  ? (double)(s->first_ns - host_ns)
                         : host_ns > s->last_ns ? (double)(host_ns - s->last_ns)
                                                : 0;
        double near = has_points(m, i) && !outside ? window_bound(m, s, host_ns) : -1;
        *err_ns = (uint64_t)ceil(near >= 0 ? near : s->err_ns + s->drift_err * outside);
    }
    return NSC_CLOCK_OK;
}

uint64_t nsc_clock_invert(uint64_t (*fwd)(const void *arg, uint64_t host_ns), const void *arg, uint64_t ref_ns)
{
    uint64_t h = ref_ns;
    for (int i = 0; i < 2; i++) {
        int64_t off = (int64_t)(fwd(arg, h) - h);
        h = off > 0 && (uint64_t)off > ref_ns ? 0 : ref_ns - (uint64_t)off;
    }
    return h;
}

uint64_t nsc_clock_model_fwd(const void *m, uint64_t host_ns)
{
    uint64_t ref;
    return nsc_clock_host_to_ref(m, host_ns, &ref, NULL) ? host_ns : ref;
}

/* ---- a range resolved once -------------------------------------------- */

/* Inside one segment the rounded offset is monotone in host time (a line,
 * then rounding, which keeps the order), and so is the error bound on either
 * side of [first_ns, last_ns] (it grows with the distance to it). So when the
 * offset is the same at both ends of the range, and the bound is the same at
 * both ends and at its lowest point in the range, both are the same for
 * every time in it. Inside the open segment's span the bound is its
 * window's: a range there is resolved once when it lies in one window. */
void nsc_clock_span_of(const nsc_clock_model *m, uint64_t h0, uint64_t h1, nsc_clock_span *sp)
{
    memset(sp, 0, sizeof *sp);
    sp->h0 = h0;
    sp->h1 = h1;
    long i = nsc_clock_segment_for(m, h0);
    if (i < 0 || h1 < h0 || nsc_clock_segment_for(m, h1) != i)
        return;
    const nsc_clock_seg *s = &m->segs[i];
    if (wrap_diff(h1, s->anchor_host) < wrap_diff(h0, s->anchor_host))
        return; /* the line's argument wraps inside the range */
    if (has_points(m, i) && h0 <= s->last_ns && h1 >= s->first_ns &&
        (h0 < s->first_ns || h1 > s->last_ns || h0 / BOUND_WINDOW_NS != h1 / BOUND_WINDOW_NS))
        return;
    uint64_t low = h0 >= s->first_ns ? h0 : s->first_ns < h1 ? s->first_ns : h1;
    uint64_t r0, r1, rl, e0, e1, el;
    nsc_clock_host_to_ref(m, h0, &r0, &e0);
    nsc_clock_host_to_ref(m, h1, &r1, &e1);
    nsc_clock_host_to_ref(m, low, &rl, &el);
    /* An offset near the range of llround could have been clamped. */
    int64_t rounded = (int64_t)(r0 - h0 - (uint64_t)s->anchor_off);
    if (r0 - h0 != r1 - h1 || e0 != e1 || e0 != el || rounded > INT64_MAX / 2 ||
        rounded < -(INT64_MAX / 2))
        return;
    sp->add = r0 - h0;
    sp->err_ns = e0;
    sp->exact = 1;
}
