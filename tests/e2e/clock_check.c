/* clock_check.c: nsc-e2e-clock-check EMU.json DB JOB [options]
 *
 * Measures clock alignment end to end against the truth the emulator knows.
 * Every event of the job is read the way a user gets it: the query layer's
 * timeline (engine/query, the code behind /api/v1/timeline), which gives each
 * event's raw host times and its aligned times, and each KernelCh's pTimers
 * and their aligned GPU times. The truth:
 *   - a raw host time r was read on a node whose clock is skew(t) (skew.h,
 *     parameters from the summary's node_clocks and epoch_ns), so its true
 *     time is skew^-1(r);
 *   - a pTimer p was read from a GPU clock skew_gpu(t) (the summary's
 *     per-rank gpu), so its true time is skew_gpu^-1(p);
 *   - true time is the emulator machine's CLOCK_MONOTONIC, and the collector's
 *     reference clock is that same clock (the collector runs unshimmed on the
 *     same machine): the error is aligned - true, with no offset between them.
 * It prints n, p50, p99 and max of |error| per host and kind (cpu: event
 * start and stop; gpu: KernelCh pTimers) and the median signed error (bias),
 * and checks the bounds it is given.
 *
 * Each GPU time also carries the query layer's own bound: a KernelCh's
 * gpu_err_ns in the timeline, and each rank's kernel_start_err_ns and
 * kernel_end_err_ns in the collectives (after causality narrowed them:
 * docs/api-figures.md, "Figures"), whose truth is its KernelChs' earliest start and
 * latest stop. It prints how many bounds hold the truth and the median and
 * largest bound; --check-bounds fails when one does not. Counted apart: a
 * rank whose figures the collectives mark uncertain (its times break
 * causality beyond their bounds: not shown as facts), and a collective whose
 * truth itself breaks the causality the bounds are narrowed with (the
 * emulator stamps a kernel's start when its thread runs, which a loaded
 * machine can delay past another rank's end, or its enqueue's stamp past
 * the kernel's).
 *
 * A host whose clock steps (@AT_MS:STEP_NS) has a window after the step in
 * which alignment cannot be right: until the agent's first probe after the
 * step (--step-window-ns), plus, for a backward step, the host times that
 * the step made the clock read twice (an ambiguous raw time has two true
 * times; those are counted, not measured). Times in the window are reported
 * apart. --expect-step checks that the host's stored model has a segment that
 * starts within that window.
 *
 * --clock causal reads every query with clock=causal (the hosts' bounds
 * narrowed by the communicator's causality: docs/api.md, "Alignment").
 *
 * Exit: 0 all checks hold, 1 a check failed, 2 bad use or unreadable input.
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_util.h"
#include "clock.h"
#include "figures.h"
#include "query.h"
#include "skew.h"
#include "grow.h"
#include "order.h"

enum { K_CPU, K_GPU, K_WINDOW, K_COUNT };
static const char *const kind_name[K_COUNT] = {"cpu", "gpu", "step_window"};

typedef struct errs {
    double *v;  /* aligned - true, ns */
    size_t n, cap;
} errs;

typedef struct host {
    char name[64];
    emu_skew_fn k;
    errs e[K_COUNT];
    uint64_t ambiguous;
} host;

typedef struct gpu_truth {
    uint64_t comm;
    int64_t rank;
    emu_skew_fn k;
} gpu_truth;

/* A rank's collective (its Coll id) and the truth of its enqueue and
 * kernel times (0: not seen). */
typedef struct coll_truth {
    int64_t rank;
    uint64_t id, enq, start, stop;
    uint64_t seq;   /* its Coll's, with func: how a collective's rank names it */
    char func[32];
} coll_truth;

/* GPU-time bounds: each one's size, and how many missed the truth, by
 * what the time is (enum below). */
enum { T_FACT, T_UNCERTAIN, T_ACAUSAL, T_COUNT };
static const char *const truth_name[T_COUNT] = {"outside", "outside_uncertain", "outside_acausal_truth"};
typedef struct bounds {
    errs size;
    uint64_t outside[T_COUNT];
} bounds;

enum { B_TIMELINE, B_COLLS, B_COUNT };
static const char *const bound_name[B_COUNT] = {"timeline", "collectives"};

typedef struct rank_host {
    int64_t rank;
    host *h;
} rank_host;

typedef struct checker {
    host *hosts;
    size_t nhosts;
    gpu_truth *gpus;
    size_t ngpus;
    rank_host *ranks;  /* of the communicator being read */
    size_t nranks;
    uint64_t comm;
    uint64_t window_ns;
    coll_truth *colls;  /* of the communicator being read */
    size_t ncolls, colls_cap;
    bounds b[B_COUNT];
    const char *clock;
    int failures;
} checker;

typedef struct opts {
    double max_cpu_p99, max_gpu_p99;  /* ns; < 0: not checked */
    uint64_t window_ns;
    int expect_step, check_bounds;
    const char *clock;  /* the queries' clock parameter (model, causal) */
} opts;

__attribute__((format(printf, 2, 3))) static void fail(checker *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("clock-check: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    c->failures++;
}

static int errs_add(errs *e, double v)
{
    if (nsc_grow(&e->v, e->n, &e->cap, sizeof *e->v, 1024))
        return -1;
    e->v[e->n++] = v;
    return 0;
}

/* The q-quantile of v sorted (nearest rank). */
static double quantile(const double *v, size_t n, double q)
{
    size_t i = (size_t)ceil(q * (double)n);
    return v[i ? i - 1 : 0];
}

static int64_t jint(const nsc_json *obj, const char *key)
{
    int64_t v = 0;
    nsc_json_i64(nsc_json_get(obj, key), &v);
    return v;
}

/* ---- the truth, from the summary ---- */

static int load_truth(checker *c, const nsc_json *emu)
{
    uint64_t epoch = (uint64_t)jint(emu, "epoch_ns");
    const nsc_json *ncs = nsc_json_get(emu, "node_clocks");
    for (const nsc_json *n = nsc_json_first(ncs); n; n = nsc_json_next(ncs, n)) {
        host *h = realloc(c->hosts, (c->nhosts + 1) * sizeof *h);
        if (!h)
            return -1;
        c->hosts = h;
        h = &c->hosts[c->nhosts++];
        memset(h, 0, sizeof *h);
        const char *name = nsc_json_str(nsc_json_get(n, "host"));
        snprintf(h->name, sizeof h->name, "%s", name ? name : "");
        h->k = (emu_skew_fn){jint(n, "offset_ns"), jint(n, "drift_ppb"), epoch,
                             jint(n, "step_at_ns"), jint(n, "step_ns")};
    }
    const nsc_json *rs = nsc_json_get(emu, "ranks");
    for (const nsc_json *r = nsc_json_first(rs); r; r = nsc_json_next(rs, r)) {
        gpu_truth *g = realloc(c->gpus, (c->ngpus + 1) * sizeof *g);
        if (!g)
            return -1;
        c->gpus = g;
        g = &c->gpus[c->ngpus++];
        const nsc_json *gj = nsc_json_get(r, "gpu");
        nsc_json_u64(nsc_json_get(r, "comm_id"), &g->comm);
        g->rank = jint(r, "rank");
        g->k = (emu_skew_fn){jint(gj, "offset_ns"), jint(gj, "drift_ppb"),
                             (uint64_t)jint(gj, "epoch_ns"), 0, 0};
    }
    return c->nhosts ? 0 : -1;
}

static host *host_named(checker *c, const char *name)
{
    for (size_t i = 0; i < c->nhosts; i++)
        if (strcmp(c->hosts[i].name, name) == 0)
            return &c->hosts[i];
    return NULL;
}

static const gpu_truth *gpu_of(const checker *c, int64_t rank)
{
    for (size_t i = 0; i < c->ngpus; i++)
        if (c->gpus[i].comm == c->comm && c->gpus[i].rank == rank)
            return &c->gpus[i];
    return NULL;
}

/* True times in [step, step + window) of a stepping host. */
static int in_step_window(const checker *c, const host *h, uint64_t t)
{
    if (!h->k.step_ns)
        return 0;
    uint64_t at = h->k.epoch_ns + (uint64_t)h->k.step_at_ns;
    uint64_t back = h->k.step_ns < 0 ? (uint64_t)-h->k.step_ns : 0;
    return t >= at && t - at < c->window_ns + back;
}

/* ---- one timeline event ---- */

static void measure(checker *c, host *h, int kind, uint64_t truth, uint64_t aligned)
{
    if (in_step_window(c, h, truth))
        kind = K_WINDOW;
    if (errs_add(&h->e[kind], (double)(int64_t)(aligned - truth)))
        fail(c, "out of memory");
}

/* The true time of an event's host time (0 when it has none or it is ambiguous). */
static uint64_t cpu_time(checker *c, host *h, const nsc_json *ev, const char *raw_key, const char *key)
{
    uint64_t raw, aligned, t[2];
    if (nsc_json_u64(nsc_json_get(ev, raw_key), &raw) || raw == 0 ||
        nsc_json_u64(nsc_json_get(ev, key), &aligned))
        return 0;
    int n = emu_skew_invert(&h->k, raw, t);
    if (n == 0)
        fail(c, "%s: raw time %" PRIu64 " is one its clock never reads", h->name, raw);
    else if (n == 2)
        h->ambiguous++;
    else
        measure(c, h, K_CPU, t[0], aligned);
    return n == 1 ? t[0] : 0;
}

/* Whether [aligned - err, aligned + err] holds truth, counted in b. */
static void bound_of(checker *c, int b, uint64_t truth, uint64_t aligned, uint64_t err, int what)
{
    if (errs_add(&c->b[b].size, (double)err))
        fail(c, "out of memory");
    c->b[b].outside[what] += (aligned > truth ? aligned - truth : truth - aligned) > err;
}

/* The true time of a KernelCh's GPU time (0 when it has none). */
static uint64_t gpu_time(checker *c, host *h, const gpu_truth *g, const nsc_json *ev, const char *pt_key,
                         const char *key)
{
    uint64_t ptimer, aligned, err;
    if (nsc_json_u64(nsc_json_get(ev, pt_key), &ptimer) || ptimer == 0 ||
        nsc_json_u64(nsc_json_get(ev, key), &aligned))
        return 0;
    uint64_t t = (uint64_t)emu_skew_line_invert(&g->k, ptimer);
    measure(c, h, K_GPU, t, aligned);
    if (nsc_json_u64(nsc_json_get(ev, "gpu_err_ns"), &err) == 0)
        bound_of(c, B_TIMELINE, t, aligned, err, T_FACT);
    return t;
}

static coll_truth *coll_of(checker *c, int64_t rank, uint64_t id)
{
    for (size_t i = c->ncolls; i-- > 0;)  /* a KernelCh follows its Coll: search from the end */
        if (c->colls[i].rank == rank && c->colls[i].id == id)
            return &c->colls[i];
    return NULL;
}

static coll_truth *coll_at(checker *c, int64_t rank, uint64_t id)
{
    coll_truth *x = coll_of(c, rank, id);
    if (x)
        return x;
    if (nsc_grow(&c->colls, c->ncolls, &c->colls_cap, sizeof *c->colls, 1024)) {
        fail(c, "out of memory");
        return NULL;
    }
    x = &c->colls[c->ncolls++];
    *x = (coll_truth){.rank = rank, .id = id};
    return x;
}

/* The truth of a Coll's kernel: its KernelChs' earliest start, latest stop. */
static void kernel_truth(checker *c, int64_t rank, uint64_t parent, uint64_t t0, uint64_t t1)
{
    coll_truth *x = coll_at(c, rank, parent);
    if (!x)
        return;
    if (t0 && (!x->start || t0 < x->start))
        x->start = t0;
    if (t1 > x->stop)
        x->stop = t1;
}

static host *rank_host_of(const checker *c, int64_t rank)
{
    for (size_t i = 0; i < c->nranks; i++)
        if (c->ranks[i].rank == rank)
            return c->ranks[i].h;
    return NULL;
}

static void take_event(checker *c, const nsc_json *ev)
{
    int64_t rank = jint(ev, "rank");
    host *h = rank_host_of(c, rank);
    if (!h) {
        fail(c, "comm %" PRIx64 ": an event of rank %" PRId64 ", which the header did not name", c->comm, rank);
        return;
    }
    uint64_t enq = cpu_time(c, h, ev, "raw_start_ns", "start_ns"), id;
    cpu_time(c, h, ev, "raw_stop_ns", "stop_ns");
    const char *type = nsc_json_str(nsc_json_get(ev, "type"));
    if (type && strcmp(type, "Coll") == 0 && nsc_json_u64(nsc_json_get(ev, "id"), &id) == 0) {
        coll_truth *x = coll_at(c, rank, id);
        const char *func = nsc_json_str(nsc_json_get(ev, "func"));
        if (x) {
            x->enq = enq;
            nsc_json_u64(nsc_json_get(ev, "seq"), &x->seq);
            snprintf(x->func, sizeof x->func, "%s", func ? func : "");
        }
    }
    if (!type || strcmp(type, "KernelCh") != 0)
        return;
    const gpu_truth *g = gpu_of(c, rank);
    if (!g) {
        fail(c, "comm %" PRIx64 " rank %" PRId64 ": no GPU clock in the summary", c->comm, rank);
        return;
    }
    uint64_t t0 = gpu_time(c, h, g, ev, "ptimer_start", "gpu_start_ns");
    uint64_t t1 = gpu_time(c, h, g, ev, "ptimer_stop", "gpu_stop_ns");
    uint64_t parent;
    if (nsc_json_u64(nsc_json_get(ev, "parent"), &parent) == 0 && parent)
        kernel_truth(c, rank, parent, t0, t1);
}

/* A collective's rank's truth, by (rank, func, seq): from the ledger, its
 * id is not its Coll's. */
static const coll_truth *truth_of(checker *c, const nsc_json *coll, const nsc_json *r)
{
    const char *func = nsc_json_str(nsc_json_get(coll, "func"));
    uint64_t seq;
    if (!func || nsc_json_u64(nsc_json_get(coll, "seq"), &seq))
        return NULL;
    int64_t rank = jint(r, "rank");
    for (size_t i = 0; i < c->ncolls; i++)
        if (c->colls[i].rank == rank && c->colls[i].seq == seq && strcmp(c->colls[i].func, func) == 0)
            return &c->colls[i];
    return NULL;
}

/* Whether the collective's truth keeps the causality its figures are
 * narrowed with (figures.h): each kernel starts after its enqueue and, where
 * every rank's data is needed, no kernel ends before every kernel started. */
static int truth_causal(checker *c, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks");
    uint64_t last_start = 0, first_stop = UINT64_MAX;
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        const coll_truth *x = truth_of(c, coll, r);
        if (!x || !x->start)
            continue;
        if (x->enq && x->start < x->enq)
            return 0;
        last_start = x->start > last_start ? x->start : last_start;
        if (x->stop && x->stop < first_stop)
            first_stop = x->stop;
    }
    return !nsc_fig_needs_all(nsc_json_str(nsc_json_get(coll, "func"))) ||
           jint(coll, "ranks_seen") < jint(coll, "nranks") || first_stop >= last_start;
}

/* A collective's kernel times against the truth of its KernelChs. */
static void take_coll(checker *c, const nsc_json *coll)
{
    const nsc_json *ranks = nsc_json_get(coll, "ranks");
    int causal = truth_causal(c, coll);
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        uint64_t v, err;
        const coll_truth *x = truth_of(c, coll, r);
        if (!x)
            continue;
        const nsc_json *u = nsc_json_get(r, "uncertain");
        int unc = u && u->kind == NSC_JSON_TRUE ? T_UNCERTAIN : causal ? T_FACT : T_ACAUSAL;
        if (x->start && nsc_json_u64(nsc_json_get(r, "kernel_start_ns"), &v) == 0 &&
            nsc_json_u64(nsc_json_get(r, "kernel_start_err_ns"), &err) == 0)
            bound_of(c, B_COLLS, x->start, v, err, unc);
        if (x->stop && nsc_json_u64(nsc_json_get(r, "kernel_end_ns"), &v) == 0 &&
            nsc_json_u64(nsc_json_get(r, "kernel_end_err_ns"), &err) == 0)
            bound_of(c, B_COLLS, x->stop, v, err, unc);
    }
}

static void take_header(checker *c, const nsc_json *hd)
{
    const nsc_json *rs = nsc_json_get(hd, "ranks");
    c->nranks = 0;
    for (const nsc_json *r = nsc_json_first(rs); r; r = nsc_json_next(rs, r)) {
        const char *name = nsc_json_str(nsc_json_get(r, "host"));
        const char *clock = nsc_json_str(nsc_json_get(r, "clock"));
        host *h = name ? host_named(c, name) : NULL;
        if (!h) {
            fail(c, "comm %" PRIx64 ": host %s is not a node of the summary", c->comm, name ? name : "?");
            continue;
        }
        if (!clock || strcmp(clock, "model") != 0)
            fail(c, "comm %" PRIx64 ": host %s has no clock model", c->comm, h->name);
        rank_host *p = realloc(c->ranks, (c->nranks + 1) * sizeof *p);
        if (!p) {
            fail(c, "out of memory");
            return;
        }
        c->ranks = p;
        c->ranks[c->nranks++] = (rank_host){jint(r, "rank"), h};
    }
}

/* ---- the timeline, page by page ---- */

typedef struct text {
    char *p;
    size_t n, cap;
} text;

static int append(void *arg, const void *data, size_t len)
{
    text *t = arg;
    if (t->n + len + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 1 << 20;
        while (cap < t->n + len + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p)
            return -1;
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->n, data, len);
    t->n += len;
    return 0;
}

/* Take every line of one page; *cursor gets the next page's cursor ("" at the end). */
static void take_page(checker *c, const text *t, char *cursor, size_t cap)
{
    cursor[0] = 0;
    for (size_t at = 0; at < t->n;) {
        const char *nl = memchr(t->p + at, '\n', t->n - at);
        size_t len = nl ? (size_t)(nl - (t->p + at)) : t->n - at;
        nsc_json_doc d;
        nsc_json_error err;
        if (nsc_json_parse(t->p + at, len, NULL, &d, &err) != 0) {
            fail(c, "timeline line at %zu: %s", at, err.msg);
            return;
        }
        const nsc_json *root = nsc_json_root(&d);
        const char *kind = nsc_json_str(nsc_json_get(root, "kind"));
        const char *next = nsc_json_str(nsc_json_get(root, "next_cursor"));
        if (kind && strcmp(kind, "header") == 0)
            take_header(c, root);
        else if (kind && strcmp(kind, "event") == 0)
            take_event(c, root);
        else if (kind && strcmp(kind, "collective") == 0)
            take_coll(c, root);
        else if (kind && strcmp(kind, "end") == 0 && next)
            snprintf(cursor, cap, "%s", next);
        nsc_json_free(&d);
        at += len + 1;
    }
}

/* Every page of an endpoint's answer (timeline, collectives) for comm. */
static void read_pages(checker *c, e2e_store *s, const char *endpoint, const char *job, uint64_t comm,
                       const char *more)
{
    char qs[512], cursor[128] = "", err[256];
    do {
        int n = snprintf(qs, sizeof qs, "job=%s&comm=0x%016" PRIx64 "%s&limit=100000&clock=%s%s%s", job, comm,
                         more, c->clock, cursor[0] ? "&cursor=" : "", cursor);
        nsc_query *q;
        if (n >= (int)sizeof qs || nsc_query_parse(endpoint, qs, &q, err, sizeof err)) {
            fail(c, "%s query %s: %s", endpoint, qs, err);
            return;
        }
        text t = {0};
        int rc = nsc_query_run(q, s->rd, append, &t, err, sizeof err);
        nsc_query_free(q);
        if (rc)
            fail(c, "%s of comm %" PRIx64 ": %s", endpoint, comm, err);
        else
            take_page(c, &t, cursor, sizeof cursor);
        free(t.p);
        if (rc)
            return;
    } while (cursor[0]);
}

static void read_comm(checker *c, e2e_store *s, const char *job, uint64_t comm)
{
    c->comm = comm;
    c->ncolls = 0;
    read_pages(c, s, "timeline", job, comm, "&states=0");
    read_pages(c, s, "collectives", job, comm, "");
}

/* ---- results ---- */

/* The stored model of a stepping host has a segment starting in the window. */
static void check_step(checker *c, e2e_store *s, const host *h)
{
    nsc_clock_model m;
    int rc = nsc_store_get_clock(s->rd, h->name, &m);
    if (rc) {
        fail(c, "%s: no stored clock model: %s", h->name, nsc_store_strerror(rc));
        return;
    }
    uint64_t at = h->k.epoch_ns + (uint64_t)h->k.step_at_ns;
    emu_skew_fn before = h->k;
    before.step_ns = 0;
    uint64_t lo = emu_skew_apply(&before, at), hi = emu_skew_apply(&h->k, at);
    if (lo > hi) {
        uint64_t x = lo;
        lo = hi;
        hi = x;
    }
    hi += c->window_ns;
    int found = 0;
    for (size_t i = 1; i < m.nsegs; i++) {
        found |= m.segs[i].start_ns >= lo && m.segs[i].start_ns <= hi;
        printf("clock-check: host=%s segment=%zu starts %+.3f ms from the step, drift %.3f ppm\n",
               h->name, i, ((double)m.segs[i].start_ns - (double)lo) / 1e6, m.segs[i].drift * 1e6);
    }
    if (!found)
        fail(c, "%s: the model (%zu segments) has no segment starting within the step's window", h->name,
             m.nsegs);
    nsc_clock_free(&m);
}

static void report(checker *c, const opts *o)
{
    for (size_t i = 0; i < c->nhosts; i++) {
        host *h = &c->hosts[i];
        for (int k = 0; k < K_COUNT; k++) {
            errs *e = &h->e[k];
            if (e->n == 0) {
                if (k != K_WINDOW)
                    fail(c, "%s: no %s time measured", h->name, kind_name[k]);
                continue;
            }
            qsort(e->v, e->n, sizeof *e->v, nsc_cmp_double);
            double bias = quantile(e->v, e->n, 0.5);
            for (size_t i = 0; i < e->n; i++)
                e->v[i] = fabs(e->v[i]);
            qsort(e->v, e->n, sizeof *e->v, nsc_cmp_double);
            double p99 = quantile(e->v, e->n, 0.99), bound = k == K_CPU ? o->max_cpu_p99 : o->max_gpu_p99;
            printf("clock-check: host=%s kind=%s n=%zu p50_ns=%.0f p99_ns=%.0f max_ns=%.0f bias_ns=%.0f\n",
                   h->name, kind_name[k], e->n, quantile(e->v, e->n, 0.5), p99, e->v[e->n - 1], bias);
            if (k != K_WINDOW && bound >= 0 && p99 > bound)
                fail(c, "%s: %s p99 error %.0f ns is above %.0f ns", h->name, kind_name[k], p99, bound);
        }
        if (h->ambiguous)
            printf("clock-check: host=%s ambiguous=%" PRIu64 " (read twice by a backward step)\n", h->name,
                   h->ambiguous);
    }
    for (int b = 0; b < B_COUNT; b++) {
        errs *e = &c->b[b].size;
        if (!e->n) {
            if (o->check_bounds)
                fail(c, "no GPU time with a bound in the %s", bound_name[b]);
            continue;
        }
        qsort(e->v, e->n, sizeof *e->v, nsc_cmp_double);
        printf("clock-check: bounds=%s n=%zu", bound_name[b], e->n);
        for (int t = 0; t < T_COUNT; t++)
            printf(" %s=%" PRIu64, truth_name[t], c->b[b].outside[t]);
        printf(" p50_ns=%.0f max_ns=%.0f\n", quantile(e->v, e->n, 0.5), e->v[e->n - 1]);
        if (o->check_bounds && c->b[b].outside[T_FACT])
            fail(c, "%s: %" PRIu64 " of %zu GPU times' bounds do not hold the truth", bound_name[b],
                 c->b[b].outside[T_FACT], e->n);
    }
}

static void checker_free(checker *c)
{
    for (size_t i = 0; i < c->nhosts; i++)
        for (int k = 0; k < K_COUNT; k++)
            free(c->hosts[i].e[k].v);
    free(c->hosts);
    free(c->gpus);
    free(c->ranks);
    free(c->colls);
    for (int b = 0; b < B_COUNT; b++)
        free(c->b[b].size.v);
}

static int run(checker *c, const opts *o, const nsc_json *emu, const char *db, const char *job)
{
    if (load_truth(c, emu)) {
        fprintf(stderr, "clock-check: the summary has no node clocks\n");
        return 2;
    }
    e2e_store s;
    if (e2e_store_open("clock-check", db, job, &s))
        return 2;
    nsc_store_comm *comms;
    size_t n;
    int rc = nsc_store_comms(s.rd, s.job, &comms, &n);
    if (rc)
        fail(c, "comms: %s", nsc_store_strerror(rc));
    for (size_t i = 0; !rc && i < n; i++)
        read_comm(c, &s, job, comms[i].comm_id);
    if (!rc)
        free(comms);
    for (size_t i = 0; o->expect_step && i < c->nhosts; i++)
        if (c->hosts[i].k.step_ns)
            check_step(c, &s, &c->hosts[i]);
    e2e_store_close(&s);
    report(c, o);
    return c->failures ? 1 : 0;
}

static void usage(FILE *f)
{
    fputs("usage: nsc-e2e-clock-check EMU.json DB JOB [options]\n"
          "Compares every aligned time of the job's timeline with the emulator's truth.\n"
          "  --max-cpu-p99-ns N   fail if a host's CPU-time p99 error is above N\n"
          "  --max-gpu-p99-ns N   fail if a host's GPU-time p99 error is above N\n"
          "  --step-window-ns N   after a clock step, times within N (plus a backward step's\n"
          "                       size) are reported apart (default 1000000000)\n"
          "  --expect-step        a stepping host's model must have a segment starting there\n"
          "  --check-bounds       every GPU time's own bound (timeline, collectives) must hold its truth\n"
          "  --clock model|causal the queries' clock parameter (default model; docs/api.md)\n",
          f);
}

static int parse_opts(int argc, char **argv, opts *o)
{
    static const struct option lo[] = {{"max-cpu-p99-ns", 1, 0, 'c'}, {"max-gpu-p99-ns", 1, 0, 'g'},
                                       {"step-window-ns", 1, 0, 'w'}, {"expect-step", 0, 0, 's'},
                                       {"check-bounds", 0, 0, 'b'}, {"clock", 1, 0, 'k'},
                                       {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    *o = (opts){-1, -1, 1000000000ull, 0, 0, "model"};
    int ch;
    while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        if (ch == 'k') {
            o->clock = optarg;
            continue;
        }
        char *end = NULL;
        double v = optarg ? strtod(optarg, &end) : 0;
        if (optarg && (*end || v < 0)) {
            fprintf(stderr, "clock-check: '%s' is not a non-negative number\n", optarg);
            return 2;
        }
        switch (ch) {
        case 'c': o->max_cpu_p99 = v; break;
        case 'g': o->max_gpu_p99 = v; break;
        case 'w': o->window_ns = (uint64_t)v; break;
        case 's': o->expect_step = 1; break;
        case 'b': o->check_bounds = 1; break;
        case 'h': usage(stdout); exit(0);
        default: usage(stderr); return 2;
        }
    }
    if (argc - optind != 3) {
        usage(stderr);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o))
        return 2;
    nsc_json_doc emu;
    if (e2e_load_json("clock-check", argv[optind], &emu))
        return 2;
    checker c = {.window_ns = o.window_ns, .clock = o.clock};
    int rc = run(&c, &o, nsc_json_root(&emu), argv[optind + 1], argv[optind + 2]);
    checker_free(&c);
    nsc_json_free(&emu);
    return rc;
}
