/* live_ledger.c: the live state's figures from the ledger (live.h,
 * nsc_live_ledger).
 *
 * Owns each communicator's open collectives: the ranks' completed ledger
 * records of a (function, seq) gathered until every rank's came, then
 * figured by the one definitions (engine/query/figures.h) into the
 * communicator's duration histogram and bandwidth window, as the
 * collectives endpoint figures them from the store. The ingest path reads
 * no store: a collective is figured from what the writer just stored. A
 * communicator holds cfg.open_colls of them in slots its seqs map to; one
 * still open when a collective open_colls seqs later comes gives way, its
 * records counted (ledger_dropped), as are records of a communicator the
 * state does not know.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "figures.h"
#include "live_int.h"

/* A function's slots start this far from the others' (a prime): two
 * functions' collectives of one seq do not take one slot. */
#define FUNC_STRIDE 7919u

/* Records a collective's figures need scratch for without allocating it. */
#define SCRATCH_RANKS 64

typedef struct open_coll {
    int func;            /* the communicator's function index; -1: a free slot */
    uint64_t seq, count;
    unsigned tsize;      /* the datatype's size; 0: unknown (no bandwidth) */
    cl_rec *recs;        /* the ranks' records so far */
    uint32_t n, cap;     /* cap: the communicator's nranks when recs was allocated */
} open_coll;

void nsc_live_ledger_free(comm_st *c)
{
    for (uint32_t i = 0; i < c->nopen; i++)
        free(c->open[i].recs);
    free(c->open);
    c->open = NULL;
    c->nopen = 0;
}

/* A host time on the collector's clock: off added (nsc_fig_align_fn). */
typedef struct shift {
    uint64_t off, err;
} shift;

static uint64_t shifted(const void *arg, uint64_t host_ns, uint64_t *err)
{
    const shift *s = arg;
    *err = s->err;
    return host_ns + s->off;
}

static const char *batch_str(const nsc_ledger_batch *b, uint32_t id)
{
    for (uint32_t i = 0; i < b->nstrs; i++)
        if (b->strs[i].id == id)
            return b->strs[i].text;
    return "?";
}

/* The record's communicator: by its id among its job's, or by its
 * process's context; -1 when the state does not know it. */
static long comm_of(const nsc_live *l, uint32_t job, const proc_st *p, const nsc_ledger_rec *x)
{
    if (!x->comm_id) {
        const ctx_map *m = nsc_live_ctx_of(p, x->ctx);
        return m ? (long)m->comm : -1;
    }
    for (size_t i = 0; i < l->ncomms; i++)
        if (l->comms[i].job == job && l->comms[i].id == x->comm_id)
            return (long)i;
    return -1;
}

static int by_rank(const void *a, const void *b)
{
    const cl_rec *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Each record's host (its rank's) as the index of the first record of
 * that host; the ranks of a host mostly come together. */
static void host_ids(const comm_st *c, const cl_rec *x, uint32_t n, uint32_t *host)
{
    for (uint32_t i = 0, j; i < n; i++) {
        const char *h = c->ranks[x[i].rank].host;
        if (i && strcmp(h, c->ranks[x[i - 1].rank].host) == 0) {
            host[i] = host[i - 1];
            continue;
        }
        for (j = 0; j < i && strcmp(h, c->ranks[x[j].rank].host) != 0; j++)
            ;
        host[i] = j < i ? host[j] : i;
    }
}

/* Every rank's record came: the collective's figures, each rank's busBW
 * capped by its transport as a query caps it, into the communicator's
 * histogram and bandwidth window. 0, or -1 (memory). */
static int figure(comm_st *c, open_coll *o)
{
    uint64_t small[4 * SCRATCH_RANKS];
    uint64_t *scratch = o->n <= SCRATCH_RANKS ? small : malloc(4 * (size_t)o->n * sizeof *scratch);
    if (!scratch)
        return -1;
    func_st *fs = &c->f[o->func];
    qsort(o->recs, o->n, sizeof *o->recs, by_rank);
    uint32_t *host = (uint32_t *)(scratch + 3 * (size_t)o->n);
    host_ids(c, o->recs, o->n, host);
    nsc_fig_caps(o->recs, o->n, host, o->n >= (uint32_t)c->nranks, scratch);
    cl_group g = {.n = o->n};
    nsc_fig_group(&g, o->recs, fs->name, 1, nsc_busbw_rule(fs->name, c->nranks, o->count, o->tsize), scratch);
    if (scratch != small)
        free(scratch);
    if (g.has_dur)
        nsc_live_observe(&fs->duration, (double)g.dur / 1e9);
    if (g.has_dur && !isnan(g.busbw)) {
        c->bw_sum += g.busbw;
        c->bw_n++;
    }
    return 0;
}

static void clear(open_coll *o)
{
    o->func = -1;
    o->n = 0;
}

/* The slot of (f, seq): the one its seq and function map to, which a
 * collective open there gives way to it (its records counted dropped): the
 * one open_colls seqs before, unless its ranks' records all came since.
 * NULL out of memory. */
static open_coll *slot_of(nsc_live *l, comm_st *c, int f, uint64_t seq)
{
    uint32_t cap = l->cfg.open_colls;
    if (!c->open) {
        if (!(c->open = calloc(cap, sizeof *c->open)))
            return NULL;
        c->nopen = cap;
        for (uint32_t i = 0; i < cap; i++)
            clear(&c->open[i]);
    }
    open_coll *o = &c->open[(seq + (uint64_t)f * FUNC_STRIDE) % cap];
    if (o->func == f && o->seq == seq)
        return o;
    l->ledger_dropped += o->func >= 0 ? o->n : 0;
    clear(o);
    if (o->cap < (uint32_t)c->nranks) {  /* its communicator's nranks is what a slot holds */
        cl_rec *r = realloc(o->recs, (size_t)c->nranks * sizeof *r);
        if (!r)
            return NULL;
        o->recs = r;
        o->cap = (uint32_t)c->nranks;
    }
    o->func = f;
    o->seq = seq;
    return o;
}

/* A rank's completed record of collective f into its slot, figured when
 * it is the last rank's. 0, or -1 (memory). */
static int gather(nsc_live *l, comm_st *c, int f, const nsc_ledger_batch *b, const nsc_ledger_rec *x,
                  const shift *s)
{
    open_coll *o = slot_of(l, c, f, x->seq);
    if (!o)
        return -1;
    for (uint32_t i = 0; i < o->n; i++)
        if (o->recs[i].rank == x->rank) {  /* its record again: the first one counts */
            l->ledger_dropped++;
            return 0;
        }
    nsc_fig_rec_of_ledger(&o->recs[o->n++], x, shifted, s);
    if (o->n == 1) {
        o->count = x->count;
        o->tsize = nsc_dtype_size(batch_str(b, x->datatype));
    }
    if (o->n < o->cap && o->n < (uint32_t)c->nranks)
        return 0;
    int rc = figure(c, o);
    clear(o);
    return rc;
}

/* The communicator's first ledger record: what its raw Colls gave until
 * then (the collectives this record's agent has not yet folded, counted
 * again once it has) is replaced by the ledger's figures. */
static void from_now_on(comm_st *c)
{
    c->from_ledger = 1;
    for (int f = 0; f < c->nf; f++)
        memset(&c->f[f].duration, 0, sizeof c->f[f].duration);
    c->bw_sum = 0;
    c->bw_n = 0;
}

/* One record: its rank's progress, and its collective's figures once every
 * rank's completed record came. 0, or -1 (memory). */
static int take(nsc_live *l, uint32_t job, proc_st *p, const nsc_ledger_batch *b, const nsc_ledger_rec *x,
                const shift *s, uint64_t now)
{
    if (x->flags & NSC_LEDGER_P2P)
        return 0;
    long ci = comm_of(l, job, p, x);
    if (ci < 0 || l->comms[ci].nranks <= 0 || x->rank < 0 || x->rank >= l->comms[ci].nranks) {
        l->ledger_dropped++;
        return 0;
    }
    comm_st *c = &l->comms[ci];
    if (!c->from_ledger)
        from_now_on(c);
    c->last_ns = now;
    int f = nsc_live_func(c, batch_str(b, x->func)), done = !(x->flags & NSC_LEDGER_INFLIGHT);
    rank_st *r = nsc_live_rank(c, x->rank);
    if (!r)
        return -1;
    if (f < 0) {
        l->ledger_dropped++;
        return 0;
    }
    /* A record of the collective the rank's Coll already moved it to says
     * only that it completed: when it was reached stays the Coll's. */
    if ((!r->has[f] || x->seq > r->p[f].seq) &&
        nsc_live_advance(l, (uint32_t)ci, x->rank, batch_str(b, x->func), x->seq, now, &r, &f))
        return -1;
    r = &c->ranks[x->rank];
    if (!r->host[0])  /* its host, for its transport cap, before its process's section named it */
        snprintf(r->host, sizeof r->host, "%s", p->host);
    if (done && r->p[f].seq == x->seq && !r->p[f].done) {
        r->p[f].done = 1;
        if (nsc_live_mark_dirty(l, (uint32_t)ci, x->rank, f))
            return -1;
    }
    return done ? gather(l, c, f, b, x, s) : 0;
}

int nsc_live_ledger(nsc_live *l, const char *agent, const nsc_proc *proc, const nsc_ledger_batch *b, uint64_t off,
                    uint64_t err, uint64_t now)
{
    long job, pi;
    int refused = nsc_live_admit_job(l, proc->job, &job);
    if (!refused)
        refused = nsc_live_admit_proc(l, proc->host, proc->pid, proc->job, agent, &pi);
    if (refused)
        return refused;
    proc_st *p = &l->procs[pi];
    shift s = {off, err};
    for (uint32_t i = 0; i < b->nrecs; i++)
        if (take(l, (uint32_t)job, p, b, &b->recs[i], &s, now))
            return -1;
    return 0;
}
