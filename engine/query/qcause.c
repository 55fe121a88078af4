/* qcause.c: the hosts' clock bounds narrowed by the communicator's own
 * causality (docs/collector-clock.md, "Clock model"; the solve: engine/clock/clockcause.h).
 *
 * Where every rank needs every other rank's data (nsc_fig_needs_all: an
 * AllReduce, AllGather, ReduceScatter or AlltoAll, whatever the algorithm:
 * ring, tree, NVLS or CollNet all combine every rank's input into every
 * rank's output), no rank's kernel ends before any rank's kernel started.
 * Across two hosts that bounds the difference of their models' errors from
 * one side; both sides, over many collectives, with each model's probe
 * interval, leave each host's error a narrower interval. Each host's
 * interval is solved at one host time (the middle of its records), each
 * observation widened by the models' drift errors over its distance from
 * there, in that time's segment only. A collective whose times break the
 * rule beyond their bounds proves that timers of the communicator can be
 * wrong by more than their bounds (a kernel start stamped late), and so can
 * the others' by less, undetected: like observations that together
 * contradict the probes, it narrows nothing, and the hosts read
 * "contradiction".
 *
 * The aligned time then moves to the middle of what is left and its bound is
 * half its width (nsc_q_cause_apply): every endpoint that aligns through the
 * communicator's hosts sees the same narrowing, whatever its rank filter or
 * time window.
 */
#include <math.h>
#include <stdlib.h>

#include "clockcause.h"
#include "figures.h"
#include "grow.h"
#include "order.h"
#include "qint.h"

/* The communicator's first records only (in seq order): the same for every
 * query, and a bounded read (about 4 MB) however long the job. */
#define CAUSE_MAX_RECORDS 65536
#define STOP 1

/* One rank's record of a collective, as causality reads it. */
typedef struct obs {
    uint64_t seq;
    uint32_t func;
    int host;
    uint64_t raw;          /* its host time (the kernel start's) */
    uint64_t start, end;   /* aligned through the model alone */
    double gpu_err, err;   /* the GPU times' conversion bound, and the model's */
} obs;

typedef struct gather {
    nsc_q_ctx *c;
    nsc_q_rank *ranks;     /* every rank of the communicator */
    size_t nranks;
    obs *v;
    size_t n, cap;
} gather;

static const nsc_q_rank *any_rank(const gather *g, int32_t rank)
{
    for (size_t i = 0; i < g->nranks; i++)
        if (g->ranks[i].rank == rank)
            return &g->ranks[i];
    return NULL;
}

static int take(void *arg, const nsc_ledger_rec *l)
{
    gather *g = arg;
    const nsc_q_rank *r = any_rank(g, l->rank);
    const uint32_t unusable = NSC_LEDGER_INFLIGHT | NSC_LEDGER_NO_GPU | NSC_LEDGER_GPU_STALE | NSC_LEDGER_P2P;
    if (!r || (l->flags & unusable) || !l->gpu_start_ns || !l->gpu_end_ns || !l->count ||
        !g->c->hosts[r->host].has_model)
        return 0;
    if (g->n == CAUSE_MAX_RECORDS)
        return STOP;
    if (nsc_grow(&g->v, g->n, &g->cap, sizeof *g->v, 256))
        return NSC_QUERY_ESTORE;
    obs *o = &g->v[g->n++];
    uint64_t err;
    *o = (obs){.seq = l->seq, .func = l->func, .host = r->host, .raw = l->gpu_start_ns,
               .gpu_err = l->gpu_err_ns};
    o->start = nsc_q_align(g->c, r, l->gpu_start_ns, &err);
    o->end = nsc_q_align(g->c, r, l->gpu_end_ns, NULL);
    o->err = (double)err;
    return 0;
}

static int by_coll(const void *a, const void *b)
{
    const obs *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->seq, y->seq), NSC_CMP(x->func, y->func), NSC_CMP(x->host, y->host));
}

/* Each host's time of reference: the middle of its records' times. */
typedef struct ref {
    uint64_t lo, hi, at;
    long seg;
    double drift, bound;
    int seen;
} ref;

static double drift_of(const nsc_q_host *h, long seg)
{
    return h->model.segs[seg].drift_err;
}

/* An observation's own widening on its host: the drift error over its
 * distance from the reference; -1 where it is in another segment. */
static double widening(const nsc_q_ctx *c, const ref *rf, const obs *o)
{
    const ref *x = &rf[o->host];
    if (nsc_clock_segment_for(&c->hosts[o->host].model, o->raw) != x->seg)
        return -1;
    return x->drift * (double)(o->raw > x->at ? o->raw - x->at : x->at - o->raw);
}

/* A host's part of one collective: its earliest possible kernel end and
 * latest possible start, each an aligned time with its slack. */
typedef struct part {
    int host;
    uint64_t end, start;
    double end_slack, start_slack;
} part;

/* One collective's records v[0 .. n), sorted by host, into one part per
 * host (p, room for n); how many. Records in another segment than their
 * host's reference give nothing. */
static size_t parts_of(const nsc_q_ctx *c, const ref *rf, const obs *v, size_t n, part *p)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double w = widening(c, rf, &v[i]), slack = v[i].gpu_err + w;
        if (w < 0)
            continue;
        if (!k || p[k - 1].host != v[i].host)
            p[k++] = (part){v[i].host, v[i].end, v[i].start, slack, slack};
        part *x = &p[k - 1];
        if ((double)(int64_t)(v[i].end - x->end) + slack < x->end_slack)
            x->end = v[i].end, x->end_slack = slack;
        if ((double)(int64_t)(v[i].start - x->start) - slack > -x->start_slack)
            x->start = v[i].start, x->start_slack = slack;
    }
    return k;
}

/* Every host's earliest possible end is after every other host's latest
 * possible start. -1 where the collective's own times break that beyond
 * their bounds. */
static int observe(const nsc_q_ctx *c, const ref *rf, const obs *v, size_t n, part *p, nsc_clock_cause *cc)
{
    double lo_start = -INFINITY, hi_end = INFINITY;
    uint64_t base = v[0].start;
    for (size_t i = 0; i < n; i++) {
        lo_start = fmax(lo_start, (double)(int64_t)(v[i].start - base) - v[i].gpu_err - v[i].err);
        hi_end = fmin(hi_end, (double)(int64_t)(v[i].end - base) + v[i].gpu_err + v[i].err);
    }
    if (lo_start > hi_end)
        return -1;
    size_t k = parts_of(c, rf, v, n, p);
    for (size_t a = 0; a < k; a++)
        for (size_t b = 0; b < k; b++)
            if (a != b)
                nsc_clock_cause_after(cc, (size_t)p[a].host, p[a].end, (size_t)p[b].host, p[b].start,
                                      p[a].end_slack + p[b].start_slack);
    return 0;
}

/* Every host's reference time, segment, drift error and probe bound. */
static void references(nsc_q_ctx *c, const gather *g, ref *rf, nsc_clock_cause *cc)
{
    for (size_t i = 0; i < g->n; i++) {
        ref *x = &rf[g->v[i].host];
        x->lo = x->seen && x->lo < g->v[i].raw ? x->lo : g->v[i].raw;
        x->hi = x->seen && x->hi > g->v[i].raw ? x->hi : g->v[i].raw;
        x->seen = 1;
    }
    for (size_t h = 0; h < c->nhosts; h++) {
        ref *x = &rf[h];
        if (!x->seen)
            continue;
        const nsc_q_host *qh = &c->hosts[h];
        x->at = x->lo + (x->hi - x->lo) / 2;
        x->seg = nsc_clock_segment_for(&qh->model, x->at);
        x->drift = drift_of(qh, x->seg);
        uint64_t aligned, err;
        nsc_clock_host_to_ref(&qh->model, x->at, &aligned, &err);
        x->bound = (double)err;
        nsc_clock_cause_bound(cc, h, x->bound);
    }
}

static int solve(nsc_q_ctx *c, gather *g)
{
    nsc_clock_cause cc;
    int rc = nsc_clock_cause_init(&cc, c->nhosts);
    if (rc == NSC_CLOCK_CAUSE_EHOSTS)
        return 0; /* too many hosts to narrow: the probes' bounds stand */
    ref *rf = calloc(c->nhosts ? c->nhosts : 1, sizeof *rf);
    part *p = malloc(g->n * sizeof *p);
    if (rc || !rf || !p) {
        free(rf);
        free(p);
        nsc_clock_cause_free(&cc);
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    }
    references(c, g, rf, &cc);
    qsort(g->v, g->n, sizeof *g->v, by_coll);
    int broken = 0;
    for (size_t i = 0; i < g->n;) {
        size_t j = i + 1;
        while (j < g->n && g->v[j].seq == g->v[i].seq && g->v[j].func == g->v[i].func)
            j++;
        if (nsc_fig_needs_all(nsc_q_text(c, g->v[i].func)))
            broken |= observe(c, rf, g->v + i, j - i, p, &cc) < 0;
        i = j;
    }
    int contradiction = broken || (cc.nobs && nsc_clock_cause_solve(&cc) == NSC_CLOCK_CAUSE_ECONTRADICT);
    for (size_t h = 0; (cc.nobs || broken) && h < c->nhosts; h++) {
        nsc_q_host *qh = &c->hosts[h];
        const ref *x = &rf[h];
        if (!x->seen)
            continue;
        int narrower = cc.lo[h] > -x->bound || cc.hi[h] < x->bound;
        qh->cause = contradiction ? NSC_Q_CAUSE_CONTRADICTION : narrower ? NSC_Q_CAUSE_NARROWED : NSC_Q_CAUSE_NONE;
        qh->cause_seg = x->seg;
        qh->cause_ref = x->at;
        qh->cause_lo = cc.lo[h];
        qh->cause_hi = cc.hi[h];
        qh->cause_drift = x->drift;
    }
    free(rf);
    free(p);
    nsc_clock_cause_free(&cc);
    return 0;
}

int nsc_q_cause(nsc_q_ctx *c)
{
    nsc_store_rank_entry *all;
    size_t n;
    int rc = nsc_store_comm_ranks(c->rd, c->job, c->comm.comm_id, &all, &n);
    if (rc)
        return nsc_q_store_fail(c, rc);
    gather g = {.c = c, .ranks = calloc(n ? n : 1, sizeof *g.ranks), .nranks = n};
    for (size_t i = 0; !rc && g.ranks && i < n; i++) {
        g.ranks[i] = (nsc_q_rank){.rank = all[i].rank, .info = all[i].info};
        rc = nsc_q_host_index(c, all[i].info.host, &g.ranks[i].host);
    }
    free(all);
    if (!g.ranks)
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    nsc_store_ledger_q lq = {c->job, c->comm.comm_id, 0, UINT64_MAX, INT32_MIN, INT32_MAX};
    if (!rc && (rc = nsc_store_ledger_read(c->rd, &lq, take, &g)) && rc != STOP)
        rc = rc == NSC_QUERY_ESTORE ? nsc_q_fail(c, rc, "out of memory") : nsc_q_store_fail(c, rc);
    rc = rc == STOP ? 0 : rc;
    if (!rc && g.n)
        rc = solve(c, &g);
    free(g.v);
    free(g.ranks);
    return rc;
}

