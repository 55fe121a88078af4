/* clockser.c: the clock model's serialized form (clock.h): written for the
 * collector to persist, and read back checked field by field (versions 1 to
 * 3), so that a corrupt or truncated model is an error, never a model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "clock_int.h"

#define MAX_DRIFT 1e-2        /* serialized drifts beyond 1% are corrupt */
#define MODEL_MAGIC 0x4e53434bu /* "NSCK" */
#define MODEL_VERSION 3u    /* 3 dropped the open window (every probe is judged
                             * at once); 1 and 2 are still read */

#define HDR_BYTES (4 + 4 + 3 * 8 + 2 * 4 + 3 * 4 + 8)
#define WINDOW_BYTES (4 + 3 * 8 + 8) /* versions 1 and 2: has_win, win, win_index */
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
    nsc_w64(&w, m->last_t1);
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

static size_t header_bytes(uint32_t version)
{
    return HDR_BYTES + (version < 3 ? WINDOW_BYTES : 0) + (version == 2 ? 8 : 0);
}

/* Versions 1 and 2 held the best probe of an open window: it is judged now,
 * as if it had just come. */
static int read_model(nsc_clock_model *m, nsc_rbuf *r, size_t len)
{
    if (len < HDR_BYTES)
        return NSC_CLOCK_ETRUNC;
    if (nsc_r32(r) != MODEL_MAGIC)
        return NSC_CLOCK_EMAGIC;
    uint32_t version = nsc_r32(r);
    if (version < 1 || version > MODEL_VERSION)
        return NSC_CLOCK_EVERSION;
    nsc_clock_cfg cfg;
    cfg.window_ns = nsc_r64(r);
    cfg.step_ns = nsc_r64(r);
    cfg.prior_span_ns = nsc_r64(r);
    cfg.step_confirm = nsc_r32(r);
    cfg.seg_max_points = nsc_r32(r);
    uint64_t nsegs = nsc_r32(r), npts = nsc_r32(r), npending = nsc_r32(r);
    uint32_t has_win = version < 3 ? nsc_r32(r) : 0;
    int rc = nsc_clock_init(m, &cfg);
    if (rc)
        return rc == NSC_CLOCK_EINVAL ? NSC_CLOCK_EVALUE : rc;
    if (npts > cfg.seg_max_points || npending >= cfg.step_confirm || has_win > 1 ||
        (npts == 0) != (nsegs == 0))
        return NSC_CLOCK_EVALUE;
    uint64_t need = header_bytes(version) + nsegs * SEG_BYTES + (npts + npending) * POINT_BYTES;
    if (len < need)
        return NSC_CLOCK_ETRUNC;
    if (len > need)
        return NSC_CLOCK_ETRAILING;
    nsc_clock_point win = {0};
    if (version < 3) {
        win = read_point(r);
        nsc_r64(r); /* the window's index: implied by the probe's time */
    }
    m->last_t1 = nsc_r64(r);
    if (version == 2)
        nsc_r64(r); /* where a suspected step started: now pending[0] */
    if ((rc = read_segments(m, r, (size_t)nsegs)))
        return rc;
    uint64_t last = 0;
    int any = 0;
    if ((rc = read_points(r, m->pts, (size_t)npts, &last, &any)) ||
        (rc = read_points(r, m->pending, (size_t)npending, &last, &any)))
        return rc;
    m->npts = (size_t)npts;
    m->npending = (size_t)npending;
    if (r->bad)
        return NSC_CLOCK_ETRUNC;
    return has_win ? nsc_clock_accept_ordered(m, win) : NSC_CLOCK_OK;
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
