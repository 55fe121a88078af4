/* figures.c: the figures of a matched collective, each defined once
 * (figures.h; docs/api.md, "Figures").
 *
 * A GPU time is an estimate with a bound (the clock model's gpu_err_ns): the
 * truth lies in [t - err, t + err]. Causality narrows that interval: a
 * kernel starts after its enqueue on the same host, and where every rank's
 * data is needed no rank's kernel ends before the last rank's kernel
 * started. A time whose interval a rule narrows stays where it was if the
 * rule allows it, else moves to the nearest time the rule allows; one whose
 * interval the rule empties is left as measured and its figures are marked
 * uncertain with the rule it breaks.
 */
#include "figures.h"

#include <math.h>
#include <stdlib.h>
#include <strings.h>

#include "order.h"

static const char U_ENQ[] = "kernel start before its enqueue beyond the bound";
static const char U_RING[] = "a kernel ends before the last rank's kernel starts, beyond the bounds";
static const char U_SKEW[] = "skew larger than duration beyond the bounds";
static const char U_DUR[] = "duration within its error bound";
static const char U_MOVE[] = "data-moving time within its error bound";
static const char U_CAP[] = "busBW above what its transport allows, beyond the bounds";
const char nsc_fig_u_stale[] = "a KernelCh timer of other work (NCCL's work counter behind), not used";

int nsc_fig_needs_all(const char *func)
{
    static const char *const all[] = {"AllReduce", "AllGather", "ReduceScatter", "AlltoAll"};
    for (size_t i = 0; func && i < sizeof all / sizeof all[0]; i++)
        if (strcasecmp(func, all[i]) == 0)
            return 1;
    return 0;
}

void nsc_fig_rec_of_ledger(cl_rec *x, const nsc_ledger_rec *l, nsc_fig_align_fn align, const void *arg)
{
    *x = (cl_rec){.func = l->func, .datatype = l->datatype, .algo = l->algo, .proto = l->proto, .seq = l->seq,
                  .count = l->count, .rank = l->rank, .root = l->root, .nchannels = l->nchannels,
                  .flags = l->flags & NSC_LEDGER_GRAPH ? NSC_EVF_GRAPH : 0};
    x->enq = align(arg, l->enqueue_ns, &x->enq_err);
    x->enq_end = x->enq;  /* the ledger keeps when the enqueue started only */
    if (!(l->flags & NSC_LEDGER_NO_GPU) && l->gpu_start_ns) {
        x->kstart = align(arg, l->gpu_start_ns, &x->kstart_err);
        x->kstart_err += l->gpu_err_ns;  /* the agent's GPU-to-host conversion */
        x->has_kernel = 1;
        x->nkch = l->nchannels_done;
        if (l->gpu_end_ns) {
            x->kend = align(arg, l->gpu_end_ns, &x->kend_err);
            x->kend_err += l->gpu_err_ns;
        }
    }
    if (l->flags & NSC_LEDGER_GPU_STALE)
        x->uncertain = nsc_fig_u_stale; /* the agent left those timers out; its host times stay */
    if (l->done_ns && !(l->flags & NSC_LEDGER_INFLIGHT)) {
        uint64_t err;
        x->done = align(arg, l->done_ns, &err), x->has_done = 1;
    }
}

/* [v - e, v + e] within [lo, hi] into [*a, *b]; whether anything is left. */
static int within(uint64_t v, uint64_t e, uint64_t lo, uint64_t hi, uint64_t *a, uint64_t *b)
{
    *a = v > e ? v - e : 0;
    *b = v < UINT64_MAX - e ? v + e : UINT64_MAX;
    *a = *a > lo ? *a : lo;
    *b = *b < hi ? *b : hi;
    return *a <= *b;
}

/* Narrow [*v - *e, *v + *e] to [lo, hi] and put the estimate at the
 * possible time nearest `at`; the bound reaches the farther end of what is
 * left. -1 (and no change) when nothing is left. */
static int place(uint64_t *v, uint64_t *e, uint64_t lo, uint64_t hi, uint64_t at)
{
    uint64_t a, b;
    if (!within(*v, *e, lo, hi, &a, &b))
        return -1;
    *v = at < a ? a : at > b ? b : at;
    *e = *v - a > b - *v ? *v - a : b - *v;
    return 0;
}

/* place() where the estimate stays if it is possible (it is still the
 * likeliest time), else moves to the nearest possible time. */
static int clip(uint64_t *v, uint64_t *e, uint64_t lo, uint64_t hi)
{
    return place(v, e, lo, hi, *v);
}

static uint64_t enq_lo(const cl_rec *x)
{
    return x->enq > x->enq_err ? x->enq - x->enq_err : 0;
}

static void mark(cl_rec *x, const char *why)
{
    if (!x->uncertain)
        x->uncertain = why;
}

/* The kernel starts after its enqueue: not before the earliest time the
 * enqueue can have been. */
static void after_enqueue(cl_rec *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (x[i].has_kernel && clip(&x[i].kstart, &x[i].kstart_err, enq_lo(&x[i]), UINT64_MAX))
            mark(&x[i], U_ENQ);
}

/* No kernel ends before every kernel started: each start is at most the
 * earliest possible end, each end at least the latest possible start, and
 * where the estimates themselves break the rule (the first end before the
 * last start) the starts after and the ends before their middle (or the
 * nearest time every start and end can be) meet there.
 * A collective whose times break the rule beyond their bounds narrows none
 * of them (the rule's inputs are wrong): its breaking ranks are marked. */
static void after_last_start(cl_rec *x, size_t n)
{
    uint64_t lo_start = 0, hi_end = UINT64_MAX, last = 0, first = UINT64_MAX;
    for (size_t i = 0; i < n; i++) {
        uint64_t lo = x[i].kstart > x[i].kstart_err ? x[i].kstart - x[i].kstart_err : 0;
        lo_start = lo > lo_start ? lo : lo_start;
        last = x[i].kstart > last ? x[i].kstart : last;
        if (nsc_q_cl_kernel_done(&x[i]) && x[i].kend + x[i].kend_err < hi_end)
            hi_end = x[i].kend + x[i].kend_err;
        if (nsc_q_cl_kernel_done(&x[i]) && x[i].kend < first)
            first = x[i].kend;
    }
    uint64_t meet = first < last ? first + (last - first) / 2 : 0;
    if (meet) /* where every start and end can be */
        meet = meet < lo_start ? lo_start : meet > hi_end ? hi_end : meet;
    int broken = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a, b;
        if (!within(x[i].kstart, x[i].kstart_err, enq_lo(&x[i]), hi_end, &a, &b) ||
            (nsc_q_cl_kernel_done(&x[i]) && !within(x[i].kend, x[i].kend_err, lo_start, UINT64_MAX, &a, &b)))
            mark(&x[i], U_RING), broken = 1;
    }
    for (size_t i = 0; i < n && !broken; i++) {
        place(&x[i].kstart, &x[i].kstart_err, enq_lo(&x[i]), hi_end,
              meet && x[i].kstart > meet ? meet : x[i].kstart);
        if (nsc_q_cl_kernel_done(&x[i]))
            place(&x[i].kend, &x[i].kend_err, lo_start, UINT64_MAX, meet && x[i].kend < meet ? meet : x[i].kend);
    }
}

/* Arrival: where the rank's kernel started when every rank has kernel times
 * (its host may enqueue far ahead of its GPU), else its enqueue. The last
 * arrival is what the others wait for; skew is last - first arrival. */
static void arrivals(cl_group *g, cl_rec *x)
{
    uint64_t first = UINT64_MAX, first_err = 0, last_err = 0;
    g->start = UINT64_MAX;
    g->last_arrival = 0;
    for (size_t i = 0; i < g->n; i++) {
        x[i].arrival = g->gpu_arrival ? x[i].kstart : x[i].enq;
        uint64_t err = g->gpu_arrival ? x[i].kstart_err : 0;
        if (x[i].enq < g->start)
            g->start = x[i].enq;
        if (x[i].arrival < first)
            first = x[i].arrival, first_err = err;
        if (x[i].arrival >= g->last_arrival)
            g->last_arrival = x[i].arrival, g->last_rank = x[i].rank, last_err = err;
    }
    g->skew = g->last_arrival - first;
    g->last_err = last_err;
    g->skew_err = first_err + last_err;
}

/* Duration: the slowest rank's own kernel time (as nccl-tests and Inspector
 * time a rank) when every rank has one, else first enqueue to last end. */
static void duration(cl_group *g, const cl_rec *x)
{
    uint64_t kend = 0;
    int has_kend = 0, all_done = 1;
    for (size_t i = 0; i < g->n; i++) {
        const cl_rec *y = &x[i];
        int done = nsc_q_cl_kernel_done(y);
        if (y->has_done && (!g->has_end || y->done > g->end))
            g->end = y->done, g->has_end = 1;
        if (done && (!has_kend || y->kend > kend))
            kend = y->kend, has_kend = 1;
        all_done &= done;
        if (done && y->kend - y->kstart >= g->dur)
            g->dur = y->kend - y->kstart, g->dur_err = y->kstart_err + y->kend_err;
    }
    if (!g->has_end && has_kend && all_done)
        g->end = kend, g->has_end = 1;
    g->has_dur = g->gpu_arrival ? g->has_end && all_done : g->has_end && g->end >= g->start;
    if (!g->gpu_arrival && g->has_dur)
        g->dur = g->end - g->start, g->dur_err = 0;
}

static uint64_t median_of(uint64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, nsc_cmp_u64);
    return n ? v[n / 2] : 0;
}

/* A rank's gaps before a collective: its host's, from its previous kernel
 * end to its enqueue, and its GPU's, from both to its arrival; 0 without a
 * previous end. */
static void gaps(const cl_rec *x, uint64_t *host, uint64_t *gpu)
{
    *host = *gpu = 0;
    if (!x->has_prev)
        return;
    uint64_t ready = x->enq > x->prev_end ? x->enq : x->prev_end;
    *host = x->enq > x->prev_end ? x->enq - x->prev_end : 0;
    *gpu = x->arrival > ready ? x->arrival - ready : 0;
}

/* The last rank's lateness against the others' median arrival, split into
 * what its host and its GPU took beyond the others' median gaps and the
 * rest, inherited (figures.h). */
static void lateness(cl_group *g, const cl_rec *x, uint64_t *scratch)
{
    uint64_t *arr = scratch, *hg = scratch + g->n, *gg = scratch + 2 * g->n;
    const cl_rec *last = NULL;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        if (!last && x[i].rank == g->last_rank) {
            last = &x[i];
            continue;
        }
        arr[n] = x[i].arrival;
        gaps(&x[i], &hg[n], &gg[n]);
        n++;
    }
    uint64_t ref = median_of(arr, n);
    if (!last || !n || last->arrival <= ref)
        return;
    g->late = last->arrival - ref;
    g->late_host = g->late;
    if (g->gpu_arrival) {
        uint64_t h, gp, mh = median_of(hg, n), mg = median_of(gg, n);
        gaps(last, &h, &gp);
        g->late_gpu = gp > mg ? gp - mg : 0;
        g->late_gpu = g->late_gpu < g->late ? g->late_gpu : g->late;
        g->late_host = h > mh ? h - mh : 0;
        g->late_host = g->late_host < g->late - g->late_gpu ? g->late_host : g->late - g->late_gpu;
    }
    uint64_t own = g->late_host + g->late_gpu;
    g->late_own = own >= NSC_FIG_LATE_MIN_NS && own >= g->late - own;
}

/* Data took at least min_ns to move at its transport's speed: a time *ns
 * shorter within its bound (err) is made that long; -1 when it is shorter
 * beyond it (left as measured). */
static int at_least(uint64_t *ns, uint64_t err, double min_ns)
{
    if ((double)*ns >= min_ns)
        return 0;
    if ((double)(*ns + err) < min_ns)
        return -1;
    *ns = (uint64_t)ceil(min_ns);
    return 0;
}

/* The least of its ranks' transport caps; 0: none known. */
static double group_cap(const cl_rec *x, size_t n)
{
    double cap = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i].cap_gbps > 0 && (cap == 0 || x[i].cap_gbps < cap))
            cap = x[i].cap_gbps;
    return cap;
}

void nsc_fig_group(cl_group *g, cl_rec *x, const char *func, int all_ranks, nsc_busbw bw, uint64_t *scratch)
{
    g->all_ranks = all_ranks;
    g->gpu_arrival = 1;
    for (size_t i = 0; i < g->n; i++)
        g->gpu_arrival &= x[i].has_kernel;
    int ring = g->gpu_arrival && all_ranks && g->n > 1 && nsc_fig_needs_all(func);
    after_enqueue(x, g->n);
    if (ring)
        after_last_start(x, g->n);
    arrivals(g, x);
    duration(g, x);
    lateness(g, x, scratch);
    for (size_t i = 0; i < g->n && !g->uncertain; i++)
        g->uncertain = x[i].uncertain;
    if (!g->uncertain && ring && g->has_dur && g->skew > g->dur + g->skew_err + g->dur_err)
        g->uncertain = U_SKEW;
    if (!g->uncertain && g->has_dur && g->dur <= g->dur_err)
        g->uncertain = U_DUR;
    g->bytes = bw.bytes;
    g->factor = bw.factor;
    double cap = group_cap(x, g->n);
    if (g->has_dur && g->dur && g->bytes && cap > 0 &&
        at_least(&g->dur, g->dur_err, (double)g->bytes * bw.factor / cap) && !g->uncertain)
        g->uncertain = U_CAP;
    g->algbw = g->busbw = NAN;
    if (g->has_dur && g->dur && g->bytes) {
        g->algbw = (double)g->bytes / (double)g->dur;
        g->busbw = g->algbw * bw.factor;
    }
}

/* A rank's busBW counts from when its data could move: not before the last
 * rank arrived (a rank that arrived early spends the skew waiting), to its
 * kernel's end, and never faster than its transport allows. */
void nsc_fig_rank_of(const cl_group *g, const cl_rec *x, nsc_fig_rank *out)
{
    out->wait_ns = g->last_arrival - x->arrival;
    out->has_own = nsc_q_cl_kernel_done(x) && x->kend > x->kstart;
    out->own_ns = out->has_own ? x->kend - x->kstart : 0;
    out->own_err_ns = out->has_own ? x->kstart_err + x->kend_err : 0;
    uint64_t from = x->kstart > g->last_arrival ? x->kstart : g->last_arrival;
    uint64_t from_err = x->kstart > g->last_arrival ? x->kstart_err : g->last_err;
    out->move_ns = out->has_own && g->gpu_arrival && x->kend > from ? x->kend - from : 0;
    out->uncertain = x->uncertain;
    out->cap_gbps = x->cap_gbps;
    if (out->move_ns && g->bytes && x->cap_gbps > 0 &&
        at_least(&out->move_ns, from_err + x->kend_err, (double)g->bytes * g->factor / x->cap_gbps) &&
        !out->uncertain)
        out->uncertain = U_CAP;
    out->busbw = out->move_ns && g->bytes ? (double)g->bytes * g->factor / (double)out->move_ns : NAN;
    if (!out->uncertain && out->has_own && g->gpu_arrival && out->move_ns <= from_err + x->kend_err)
        out->uncertain = U_MOVE;
}

int nsc_fig_complete(const cl_group *g)
{
    return g->n > 1 && g->all_ranks && g->has_end && !g->what[0];
}

int64_t nsc_fig_straggler(const uint64_t *own, const uint64_t *seen, size_t n)
{
    size_t best = n;
    for (size_t r = 0; r < n; r++)
        if (own[r] && (best == n || own[r] > own[best]))
            best = r;
    return best < n && own[best] >= NSC_FIG_STRAGGLER_MIN && 2 * own[best] > seen[best] ? (int64_t)best : -1;
}
