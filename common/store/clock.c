/* clock.c: probe filtering, robust piecewise offset+drift fit, serialization. */
#include "clock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"

#define RTT_SLACK_NS 20000.0  /* candidates: round trip <= 2 * segment minimum + slack */
#define RTT_WEIGHT_NS 10000.0 /* a point this much slower than the fastest counts half */
#define RESID_FLOOR_NS 2000.0 /* residual rejection never cuts tighter than this */
#define UNKNOWN_DRIFT 1e-4    /* drift error of a line fitted from one point: 100 ppm */
#define MAX_DRIFT 1e-2        /* serialized drifts beyond 1% are corrupt */
#define MODEL_MAGIC 0x4e53434bu /* "NSCK" */
#define MODEL_VERSION 2u    /* 2 added disagree_ns; 1 is still read */

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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
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
    /* With equal weights this is the textbook sqrt(ss / (n - 2) / sxx). */
    *slope_se = n > 2 && sxx > 0 ? sqrt(ss / (n - 2) / sxx) : UNKNOWN_DRIFT;
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

static void fit_open(nsc_clock_model *m)
{
    nsc_clock_seg *s = &m->segs[m->nsegs - 1];
    const nsc_clock_seg *prior = m->nsegs > 1 ? s - 1 : NULL;
    uint64_t rtt_min = UINT64_MAX;
    for (size_t i = 0; i < m->npts; i++)
        if (m->pts[i].rtt_ns < rtt_min)
            rtt_min = m->pts[i].rtt_ns;
    gate g = {2.0 * (double)rtt_min + RTT_SLACK_NS, NULL, 0, (double)rtt_min};
    size_t n = 0;
    uint64_t first = 0, last = 0;
    for (size_t i = 0; i < m->npts; i++)
        if (admits(&g, s, &m->pts[i])) {
            first = n++ ? first : m->pts[i].host_ns;
            last = m->pts[i].host_ns;
        }
    line l = {0, prior ? prior->drift : 0}, rejection_line;
    double drift_err;
    if (n < 2 || (prior && last - first < m->cfg.prior_span_ns)) {
        /* Too short to tell drift: a step or a split does not change the
         * oscillator, so the predecessor's drift is the best estimate. */
        l.off = median_offset(m, s, &g, l.drift);
        drift_err = prior ? prior->drift_err : UNKNOWN_DRIFT;
    } else {
        double se;
        fit_robust(m, s, &g, &rejection_line, &l, &se);
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
    s->err_ns = (double)rtt_min / 2 + 3 * sqrt(ss / (double)n);
    s->drift_err = drift_err;
    s->first_ns = first;
    s->last_ns = last;
    s->npoints = (uint32_t)m->npts;
}

/* ---- points and segments ---------------------------------------------- */

/* Start a segment over the points now in m->pts. */
static int open_segment(nsc_clock_model *m, uint64_t start_ns)
{
    if (m->nsegs == m->segs_cap) {
        size_t cap = m->segs_cap ? 2 * m->segs_cap : 8;
        nsc_clock_seg *segs = realloc(m->segs, cap * sizeof *segs);
        if (!segs)
            return NSC_CLOCK_ENOMEM;
        m->segs = segs;
        m->segs_cap = cap;
    }
    nsc_clock_seg *s = &m->segs[m->nsegs++];
    memset(s, 0, sizeof *s);
    s->start_ns = start_ns;
    s->anchor_host = m->pts[0].host_ns;
    s->anchor_off = m->pts[0].off_ns;
    fit_open(m);
    return NSC_CLOCK_OK;
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

/* Where a confirmed step's segment starts: at the first probe that
 * disagreed with the old line since the last one that agreed (a step falls
 * between two probes, not between two windows), else at its first point. */
static uint64_t step_start(const nsc_clock_model *m)
{
    uint64_t first = m->pts[0].host_ns, d = m->disagree_ns;
    return d && d < first && d > m->segs[m->nsegs - 1].start_ns ? d : first;
}

static int accept_point(nsc_clock_model *m, const nsc_clock_point *p)
{
    if (m->nsegs == 0) {
        m->pts[0] = *p;
        m->npts = 1;
        return open_segment(m, p->host_ns);
    }
    const nsc_clock_seg *s = &m->segs[m->nsegs - 1];
    line l = {s->off_ns, s->drift};
    if (fabs(resid(s, p, &l)) <= (double)p->rtt_ns / 2 + (double)m->cfg.step_ns) {
        m->npending = 0;
        if (m->npts == m->cfg.seg_max_points)
            return split_segment(m, p);
        m->pts[m->npts++] = *p;
        fit_open(m);
        return NSC_CLOCK_OK;
    }
    /* Disagrees with the line: an outlier, or the first sign of a step. A
     * step is confirmed when step_confirm points in a row agree with each
     * other; the new segment starts at the first of them. */
    if (m->npending &&
        fabs((double)wrap_diff((uint64_t)p->off_ns, (uint64_t)m->pending[0].off_ns)) >
            (double)m->cfg.step_ns)
        m->npending = 0;
    m->pending[m->npending++] = *p;
    if (m->npending < m->cfg.step_confirm)
        return NSC_CLOCK_OK;
    memcpy(m->pts, m->pending, m->npending * sizeof *m->pts);
    m->npts = m->npending;
    m->npending = 0;
    uint64_t start = step_start(m);
    m->disagree_ns = 0;
    return open_segment(m, start);
}

static uint64_t last_point_ns(const nsc_clock_model *m)
{
    if (m->npending)
        return m->pending[m->npending - 1].host_ns;
    return m->npts ? m->pts[m->npts - 1].host_ns : 0;
}

int nsc_clock_flush(nsc_clock_model *m)
{
    if (!m->has_win)
        return NSC_CLOCK_OK;
    m->has_win = 0;
    nsc_clock_point p = m->win;
    /* Points are placed at the exchange's midpoint; a slow exchange can put it
     * past the next window's, so keep points strictly ordered. */
    uint64_t last = last_point_ns(m);
    if ((m->nsegs || m->npending) && p.host_ns <= last)
        p.host_ns = last + 1;
    return accept_point(m, &p);
}

/* Every probe, not only a window's best, is compared with the open line, so
 * a step is placed to within one probe interval. A slow probe that agrees
 * proves nothing (its offset is uncertain by half its round trip, which may
 * hide the step), so only a fast one clears the mark. */
static void track_disagreement(nsc_clock_model *m, const nsc_clock_point *p)
{
    if (m->nsegs == 0)
        return;
    const nsc_clock_seg *s = &m->segs[m->nsegs - 1];
    line l = {s->off_ns, s->drift};
    double slack = (double)p->rtt_ns / 2 + (double)m->cfg.step_ns;
    if (fabs(resid(s, p, &l)) > slack)
        m->disagree_ns = m->disagree_ns ? m->disagree_ns : p->host_ns;
    else if ((double)p->rtt_ns <= 2.0 * (double)m->cfg.step_ns)
        m->disagree_ns = 0;
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
    track_disagreement(m, &p);
    uint64_t idx = s->t1 / m->cfg.window_ns;
    if (m->has_win && idx != m->win_index) {
        int rc = nsc_clock_flush(m);
        if (rc)
            return rc;
    }
    if (!m->has_win || p.rtt_ns < m->win.rtt_ns)
        m->win = p;
    m->win_index = idx;
    m->has_win = 1;
    return NSC_CLOCK_OK;
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
        *err_ns = (uint64_t)ceil(s->err_ns + s->drift_err * outside);
    }
    return NSC_CLOCK_OK;
}

/* ---- serialization ---------------------------------------------------- */

#define HDR_BYTES_V1 (4 + 4 + 3 * 8 + 2 * 4 + 4 * 4 + 3 * 8 + 8 + 8)
#define HDR_BYTES (HDR_BYTES_V1 + 8)
#define SEG_BYTES (9 * 8 + 4)
#define POINT_BYTES (3 * 8)

size_t nsc_clock_serialized_size(const nsc_clock_model *m)
{
    return HDR_BYTES + m->nsegs * SEG_BYTES + (m->npts + m->npending) * POINT_BYTES;
}

static void write_point(nsc_wbuf *w, const nsc_clock_point *p)
{
    nsc_w64(w, p->host_ns);
    nsc_w64(w, (uint64_t)p->off_ns);
    nsc_w64(w, p->rtt_ns);
}

static nsc_clock_point read_point(nsc_rbuf *r)
{
    nsc_clock_point p;
    p.host_ns = nsc_r64(r);
    p.off_ns = (int64_t)nsc_r64(r);
    p.rtt_ns = nsc_r64(r);
    return p;
}

void nsc_clock_serialize(const nsc_clock_model *m, uint8_t *buf)
{
    nsc_wbuf w = {buf};
    nsc_w32(&w, MODEL_MAGIC);
    nsc_w32(&w, MODEL_VERSION);
    nsc_w64(&w, m->cfg.window_ns);
    nsc_w64(&w, m->cfg.step_ns);
    nsc_w64(&w, m->cfg.prior_span_ns);
    nsc_w32(&w, m->cfg.step_confirm);
    nsc_w32(&w, m->cfg.seg_max_points);
    nsc_w32(&w, (uint32_t)m->nsegs);
    nsc_w32(&w, (uint32_t)m->npts);
    nsc_w32(&w, (uint32_t)m->npending);
    nsc_w32(&w, (uint32_t)m->has_win);
    write_point(&w, &m->win);
    nsc_w64(&w, m->win_index);
    nsc_w64(&w, m->last_t1);
    nsc_w64(&w, m->disagree_ns);
    for (size_t i = 0; i < m->nsegs; i++) {
        const nsc_clock_seg *s = &m->segs[i];
        nsc_w64(&w, s->start_ns);
        nsc_w64(&w, s->anchor_host);
        nsc_w64(&w, (uint64_t)s->anchor_off);
        nsc_wdbl(&w, s->off_ns);
        nsc_wdbl(&w, s->drift);
        nsc_wdbl(&w, s->err_ns);
        nsc_wdbl(&w, s->drift_err);
        nsc_w64(&w, s->first_ns);
        nsc_w64(&w, s->last_ns);
        nsc_w32(&w, s->npoints);
    }
    for (size_t i = 0; i < m->npts; i++)
        write_point(&w, &m->pts[i]);
    for (size_t i = 0; i < m->npending; i++)
        write_point(&w, &m->pending[i]);
}

static int seg_valid(const nsc_clock_seg *s, const nsc_clock_seg *prev)
{
    return isfinite(s->off_ns) && isfinite(s->drift) && fabs(s->drift) <= MAX_DRIFT &&
           isfinite(s->err_ns) && s->err_ns >= 0 && isfinite(s->drift_err) &&
           s->drift_err >= 0 && s->first_ns <= s->last_ns &&
           (!prev || s->start_ns > prev->start_ns);
}

static int read_segments(nsc_clock_model *m, nsc_rbuf *r, size_t nsegs)
{
    m->segs = calloc(nsegs ? nsegs : 1, sizeof *m->segs);
    if (!m->segs)
        return NSC_CLOCK_ENOMEM;
    m->segs_cap = nsegs ? nsegs : 1;
    for (size_t i = 0; i < nsegs; i++) {
        nsc_clock_seg *s = &m->segs[i];
        s->start_ns = nsc_r64(r);
        s->anchor_host = nsc_r64(r);
        s->anchor_off = (int64_t)nsc_r64(r);
        s->off_ns = nsc_rdbl(r);
        s->drift = nsc_rdbl(r);
        s->err_ns = nsc_rdbl(r);
        s->drift_err = nsc_rdbl(r);
        s->first_ns = nsc_r64(r);
        s->last_ns = nsc_r64(r);
        s->npoints = nsc_r32(r);
        if (!seg_valid(s, i ? s - 1 : NULL))
            return NSC_CLOCK_EVALUE;
        m->nsegs = i + 1;
    }
    return NSC_CLOCK_OK;
}

/* Points must be strictly increasing in host time, across both arrays. */
static int read_points(nsc_rbuf *r, nsc_clock_point *dst, size_t n, uint64_t *last, int *any)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = read_point(r);
        if (*any && dst[i].host_ns <= *last)
            return NSC_CLOCK_EVALUE;
        *last = dst[i].host_ns;
        *any = 1;
    }
    return NSC_CLOCK_OK;
}

static int read_model(nsc_clock_model *m, nsc_rbuf *r, size_t len)
{
    if (len < HDR_BYTES_V1)
        return NSC_CLOCK_ETRUNC;
    if (nsc_r32(r) != MODEL_MAGIC)
        return NSC_CLOCK_EMAGIC;
    uint32_t version = nsc_r32(r);
    if (version != 1 && version != MODEL_VERSION)
        return NSC_CLOCK_EVERSION;
    nsc_clock_cfg cfg;
    cfg.window_ns = nsc_r64(r);
    cfg.step_ns = nsc_r64(r);
    cfg.prior_span_ns = nsc_r64(r);
    cfg.step_confirm = nsc_r32(r);
    cfg.seg_max_points = nsc_r32(r);
    uint64_t nsegs = nsc_r32(r), npts = nsc_r32(r), npending = nsc_r32(r);
    uint32_t has_win = nsc_r32(r);
    int rc = nsc_clock_init(m, &cfg);
    if (rc)
        return rc == NSC_CLOCK_EINVAL ? NSC_CLOCK_EVALUE : rc;
    if (npts > cfg.seg_max_points || npending >= cfg.step_confirm || has_win > 1 ||
        (npts == 0) != (nsegs == 0))
        return NSC_CLOCK_EVALUE;
    uint64_t need = (version == 1 ? HDR_BYTES_V1 : HDR_BYTES) + nsegs * SEG_BYTES +
                    (npts + npending) * POINT_BYTES;
    if (len < need)
        return NSC_CLOCK_ETRUNC;
    if (len > need)
        return NSC_CLOCK_ETRAILING;
    m->win = read_point(r);
    m->has_win = (int)has_win;
    m->win_index = nsc_r64(r);
    m->last_t1 = nsc_r64(r);
    m->disagree_ns = version == 1 ? 0 : nsc_r64(r);
    if ((rc = read_segments(m, r, (size_t)nsegs)))
        return rc;
    uint64_t last = 0;
    int any = 0;
    if ((rc = read_points(r, m->pts, (size_t)npts, &last, &any)) ||
        (rc = read_points(r, m->pending, (size_t)npending, &last, &any)))
        return rc;
    m->npts = (size_t)npts;
    m->npending = (size_t)npending;
    return r->bad ? NSC_CLOCK_ETRUNC : NSC_CLOCK_OK;
}

int nsc_clock_deserialize(nsc_clock_model *m, const void *buf, size_t len)
{
    nsc_rbuf r = {buf, (const uint8_t *)buf + len, 0};
    memset(m, 0, sizeof *m);
    int rc = read_model(m, &r, len);
    if (rc)
        nsc_clock_free(m);
    return rc;
}
