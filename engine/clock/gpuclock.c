/* gpuclock.c: lower-envelope fit of GPU pTimer against host CPU time. */
#include "gpuclock.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "grow.h"

#define GPU_MAGIC 0x4e534347u /* "NSCG" */
#define GPU_VERSION 1u
#define GPU_HDR_BYTES (4 + 4 + 8 + 8 + 8 + 8 + 4)
/* The lag of the pairs the line rests on is unobservable; a proxy thread's
 * poll is not tighter than about a microsecond, so no bound is smaller. */
#define GPU_ERR_FLOOR_NS 1000.0
/* No GPU timer runs faster or slower than the host's clock by more than
 * this (crystals: tens of ppm; the emulator's skews go to 1000 ppm). It is
 * what bounds the true slope where the pairs do not. */
#define GPU_DRIFT_MAX 1e-3

static const char *const err_text[] = {
    "ok", "out of memory", "no pTimer pair yet", "serialized GPU clock truncated",
    "not a serialized GPU clock", "serialized GPU clock hull out of order or not convex",
    "bytes after the serialized GPU clock"};

const char *nsc_gpuclock_strerror(int err)
{
    int i = -err;
    return i >= 0 && i < (int)(sizeof err_text / sizeof *err_text) ? err_text[i] : "unknown error";
}

void nsc_gpuclock_init(nsc_gpuclock *g)
{
    memset(g, 0, sizeof *g);
}

void nsc_gpuclock_free(nsc_gpuclock *g)
{
    free(g->hull);
    memset(g, 0, sizeof *g);
}

/* > 0 when o -> a -> b turns counter-clockwise (a stays on the lower hull). */
static long double cross(const nsc_gpu_vertex *o, const nsc_gpu_vertex *a, const nsc_gpu_vertex *b)
{
    return (long double)(a->x - o->x) * (long double)(b->y - o->y) -
           (long double)(a->y - o->y) * (long double)(b->x - o->x);
}

/* Monotone chain over the sorted vertices, in place. */
static void rebuild_hull(nsc_gpuclock *g)
{
    size_t k = 0;
    for (size_t i = 0; i < g->nhull; i++) {
        while (k >= 2 && cross(&g->hull[k - 2], &g->hull[k - 1], &g->hull[i]) <= 0)
            k--;
        g->hull[k++] = g->hull[i];
    }
    g->nhull = k;
}

static void insert_vertex(nsc_gpuclock *g, nsc_gpu_vertex v)
{
    size_t i = 0;
    while (i < g->nhull && g->hull[i].x < v.x)
        i++;
    if (i < g->nhull && g->hull[i].x == v.x) {
        if (v.y >= g->hull[i].y)
            return;
        g->hull[i].y = v.y;
    } else {
        memmove(&g->hull[i + 1], &g->hull[i], (g->nhull - i) * sizeof *g->hull);
        g->hull[i] = v;
        g->nhull++;
    }
    rebuild_hull(g);
}

int nsc_gpuclock_stale(const nsc_gpuclock *g, uint64_t ptimer, uint64_t cpu_ns)
{
    uint64_t fit, err;
    if (!ptimer || !cpu_ns || g->npairs == 0 || nsc_gpuclock_to_cpu(g, ptimer, &fit, &err) != NSC_GPUCLOCK_OK)
        return 0;
    return cpu_ns > fit && cpu_ns - fit > err + NSC_GPUCLOCK_LAG_MAX_NS;
}

int nsc_gpuclock_kch_stale(const nsc_gpuclock *g, uint64_t ptimer_start, uint64_t seen_start, uint64_t ptimer_stop,
                           uint64_t seen_stop)
{
    return nsc_gpuclock_stale(g, ptimer_start, seen_start) || nsc_gpuclock_stale(g, ptimer_stop, seen_stop);
}

int nsc_gpuclock_add(nsc_gpuclock *g, uint64_t ptimer, uint64_t cpu_ns)
{
    if (nsc_gpuclock_stale(g, ptimer, cpu_ns))
        return NSC_GPUCLOCK_STALE;
    if (nsc_grow(&g->hull, g->nhull, &g->cap, sizeof *g->hull, 16))
        return NSC_GPUCLOCK_ENOMEM;
    if (g->npairs == 0) {
        g->anchor_ptimer = ptimer;
        g->anchor_cpu = cpu_ns;
    }
    int64_t x = (int64_t)(ptimer - g->anchor_ptimer);
    nsc_gpu_vertex v = {x, (int64_t)(cpu_ns - g->anchor_cpu) - x};
    g->npairs++;
    g->sum_x += (double)x;
    if (g->nhull == 0 || v.x > g->hull[g->nhull - 1].x) {
        while (g->nhull >= 2 && cross(&g->hull[g->nhull - 2], &g->hull[g->nhull - 1], &v) <= 0)
            g->nhull--;
        g->hull[g->nhull++] = v;
    } else {
        insert_vertex(g, v);
    }
    return NSC_GPUCLOCK_OK;
}

/* The fitted edge: the hull edge over the pairs' mean x, its slope held to
 * what a timer can drift. Returns its index (the edge joins hull[e] and
 * hull[e + 1]; e == 0 and nhull == 1: flat). */
static size_t fitted_edge(const nsc_gpuclock *g, double *slope)
{
    double mean = g->sum_x / (double)g->npairs;
    size_t e = 0;
    while (e + 2 < g->nhull && (double)g->hull[e + 1].x < mean)
        e++;
    *slope = g->nhull < 2 ? 0
                          : (double)(g->hull[e + 1].y - g->hull[e].y) /
                                (double)(g->hull[e + 1].x - g->hull[e].x);
    /* Pairs microseconds apart fit slopes no timer has; the truth is nearer. */
    *slope = fmax(-GPU_DRIFT_MAX, fmin(GPU_DRIFT_MAX, *slope));
    return e;
}

double nsc_gpuclock_drift(const nsc_gpuclock *g)
{
    double slope = 0;
    if (g->npairs)
        fitted_edge(g, &slope);
    return slope;
}

static double line_at(const nsc_gpu_vertex *v, double slope, double x)
{
    return (double)v->y + slope * (x - (double)v->x);
}

/* The hull (the tightest upper bound on the truth the pairs give) at x,
 * which lies within the pairs' span. */
static double hull_at(const nsc_gpuclock *g, double x)
{
    if (g->nhull < 2)
        return (double)g->hull[0].y;
    size_t i = 0;
    while (i + 2 < g->nhull && (double)g->hull[i + 1].x < x)
        i++;
    const nsc_gpu_vertex *a = &g->hull[i], *b = &g->hull[i + 1];
    return line_at(a, (double)(b->y - a->y) / (double)(b->x - a->x), x);
}

/* Error bound: how far the neighbouring vertices sit from the fitted line
 * (how sharply the envelope is pinned; below it only where the slope was
 * held), plus how far the envelope bends away
 * from the line at the point of the pairs' span nearest x (drift the line
 * does not follow), plus, outside the span where nothing pins the line,
 * the slope's freedom over the distance: a few pairs close together (one
 * collective's channels) fit any slope, the truth's is within GPU_DRIFT_MAX. */
static double error_at(const nsc_gpuclock *g, size_t e, double slope, double x)
{
    const nsc_gpu_vertex *base = &g->hull[e];
    double pin = 0;
    int n = 0;
    if (e > 0) {
        pin += fabs((double)g->hull[e - 1].y - line_at(base, slope, (double)g->hull[e - 1].x));
        n++;
    }
    if (e + 2 < g->nhull) {
        pin += fabs((double)g->hull[e + 2].y - line_at(base, slope, (double)g->hull[e + 2].x));
        n++;
    }
    double in = fmax((double)g->hull[0].x, fmin((double)g->hull[g->nhull - 1].x, x));
    return GPU_ERR_FLOOR_NS + (n ? pin / n : 0) + fabs(hull_at(g, in) - line_at(base, slope, in)) +
           (fabs(slope) + GPU_DRIFT_MAX) * fabs(x - in);
}

int nsc_gpuclock_to_cpu(const nsc_gpuclock *g, uint64_t ptimer, uint64_t *cpu_ns,
                        uint64_t *err_ns)
{
    if (g->npairs == 0)
        return NSC_GPUCLOCK_EEMPTY;
    double slope;
    size_t e = fitted_edge(g, &slope);
    int64_t x = (int64_t)(ptimer - g->anchor_ptimer);
    double y = line_at(&g->hull[e], slope, (double)x);
    *cpu_ns = g->anchor_cpu + (uint64_t)x + (uint64_t)(int64_t)llround(y);
    if (err_ns)
        *err_ns = (uint64_t)ceil(error_at(g, e, slope, (double)x));
    return NSC_GPUCLOCK_OK;
}

size_t nsc_gpuclock_serialized_size(const nsc_gpuclock *g)
{
    return GPU_HDR_BYTES + g->nhull * 16;
}

void nsc_gpuclock_serialize(const nsc_gpuclock *g, uint8_t *buf)
{
    nsc_wbuf w = {buf};
    nsc_w32(&w, GPU_MAGIC);
    nsc_w32(&w, GPU_VERSION);
    nsc_w64(&w, g->anchor_ptimer);
    nsc_w64(&w, g->anchor_cpu);
    nsc_w64(&w, g->npairs);
    nsc_wdbl(&w, g->sum_x);
    nsc_w32(&w, (uint32_t)g->nhull);
    for (size_t i = 0; i < g->nhull; i++) {
        nsc_w64(&w, (uint64_t)g->hull[i].x);
        nsc_w64(&w, (uint64_t)g->hull[i].y);
    }
}

static int read_gpuclock(nsc_gpuclock *g, nsc_rbuf *r, size_t len)
{
    if (len < GPU_HDR_BYTES)
        return NSC_GPUCLOCK_ETRUNC;
    if (nsc_r32(r) != GPU_MAGIC || nsc_r32(r) != GPU_VERSION)
        return NSC_GPUCLOCK_EMAGIC;
    g->anchor_ptimer = nsc_r64(r);
    g->anchor_cpu = nsc_r64(r);
    g->npairs = nsc_r64(r);
    g->sum_x = nsc_rdbl(r);
    uint64_t n = nsc_r32(r);
    if (len < GPU_HDR_BYTES + n * 16)
        return NSC_GPUCLOCK_ETRUNC;
    if (len > GPU_HDR_BYTES + n * 16)
        return NSC_GPUCLOCK_ETRAILING;
    if (!isfinite(g->sum_x) || n > g->npairs || (n == 0) != (g->npairs == 0))
        return NSC_GPUCLOCK_EVALUE;
    g->hull = calloc(n ? n : 1, sizeof *g->hull);
    if (!g->hull)
        return NSC_GPUCLOCK_ENOMEM;
    g->cap = n ? n : 1;
    for (size_t i = 0; i < n; i++) {
        nsc_gpu_vertex *v = &g->hull[i];
        v->x = (int64_t)nsc_r64(r);
        v->y = (int64_t)nsc_r64(r);
        if ((i >= 1 && v->x <= v[-1].x) || (i >= 2 && cross(v - 2, v - 1, v) <= 0))
            return NSC_GPUCLOCK_EVALUE;
        g->nhull = i + 1;
    }
    return NSC_GPUCLOCK_OK;
}

int nsc_gpuclock_deserialize(nsc_gpuclock *g, const void *buf, size_t len)
{
    nsc_rbuf r = {buf, (const uint8_t *)buf + len, 0};
    nsc_gpuclock_init(g);
    int rc = read_gpuclock(g, &r, len);
    if (rc)
        nsc_gpuclock_free(g);
    return rc;
}
