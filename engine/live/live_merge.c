/* live_merge.c: one live state merged into another (nsc_live_merge, live.h),
 * the one place of the rules by which several collectors' states make one
 * answer (docs/clickhouse-live.md).
 *
 * Agents and processes are matched by identity (agent id; host and pid) and
 * the entry seen latest wins; a process that died or finished in either
 * stays so. Communicators are matched by (job, id): events, rates and
 * histograms add up, each rank keeps the further progress per function (a
 * higher seq, then a completion), the highest seq seen is the maximum. A
 * batch taken by two collectors (an agent's move after a failover) counts
 * in both states' events: event totals are what the collectors received. */
#include <string.h>

#include "live_int.h"

static int merge_agent(nsc_live *d, const agent_st *a)
{
    for (size_t i = 0; i < d->nagents; i++)
        if (strcmp(d->agents[i].id, a->id) == 0)
            return a->last_ns > d->agents[i].last_ns ? nsc_live_agent_seen(d, a->id, a->host, a->last_ns) : 0;
    return nsc_live_agent_seen(d, a->id, a->host, a->last_ns);
}

/* When a process was last heard of: a message, or its death. */
static uint64_t heard(const proc_st *p)
{
    return p->died_ns > p->last_ns ? p->died_ns : p->last_ns;
}

static int merge_proc(nsc_live *d, const proc_st *s)
{
    size_t before = d->nprocs;
    long i = nsc_live_proc(d, s->host, s->pid);
    if (i < 0)
        return -1;
    proc_st *p = &d->procs[i];
    int finished = p->finished || s->finished;
    if ((size_t)i == before || heard(s) > heard(p)) {
        snprintf(p->job, sizeof p->job, "%s", s->job);
        snprintf(p->agent, sizeof p->agent, "%s", s->agent);
        p->last_ns = s->last_ns;
        p->counters = s->counters;
        p->shed_ns = s->shed_ns;
        if (s->died || (size_t)i == before) {
            p->died = s->died, p->reason = s->reason, p->died_ns = s->died_ns;
        }
    } else if (s->died && !p->died) {
        p->died = 1, p->reason = s->reason, p->died_ns = s->died_ns;
    }
    p->finished = finished;
    p->finished_ns = s->finished_ns > p->finished_ns ? s->finished_ns : p->finished_ns;
    return 0;
}

static void hist_add(nsc_live_hist *h, const nsc_live_hist *s)
{
    for (int i = 0; i <= NSC_LIVE_HIST_BOUNDS; i++)
        h->buckets[i] += s->buckets[i];
    h->count += s->count;
    h->sum_s += s->sum_s;
}

/* The higher seq seen; for one seq, the first time it was seen. */
static void merge_func(func_st *f, const func_st *s)
{
    if (s->max_seq > f->max_seq)
        f->max_seq = s->max_seq;
    hist_add(&f->duration, &s->duration);
    for (int i = 0; i < SEEN_RING; i++)
        if (s->ring_seq[i] > f->ring_seq[i] || (s->ring_seq[i] && s->ring_seq[i] == f->ring_seq[i] &&
                                                s->ring_ns[i] < f->ring_ns[i])) {
            f->ring_seq[i] = s->ring_seq[i];
            f->ring_ns[i] = s->ring_ns[i];
        }
}

/* s is further than p: a later collective, or the same one completed (or,
 * equal in both, seen earlier). */
static int further(const prog *s, const prog *p)
{
    return s->seq != p->seq ? s->seq > p->seq : s->done != p->done ? s->done : s->since_ns < p->since_ns;
}

static int merge_rank(nsc_live *d, comm_st *c, int32_t k, const rank_st *s, const int *fmap)
{
    rank_st *r = nsc_live_rank(c, k);
    if (!r)
        return -1;
    r->seen = 1;
    if (!r->proc && s->proc) {
        long pi = nsc_live_proc(d, s->host, s->pid);
        if (pi < 0)
            return -1;
        r->proc = (uint32_t)pi + 1;
    }
    if (!r->host[0]) {
        snprintf(r->host, sizeof r->host, "%s", s->host);
        r->pid = s->pid;
    }
    for (int f = 0; f < MAX_FUNCS; f++)
        if (s->has[f] && fmap[f] >= 0 && (!r->has[fmap[f]] || further(&s->p[f], &r->p[fmap[f]]))) {
            r->has[fmap[f]] = 1;
            r->p[fmap[f]] = s->p[f];
        }
    return 0;
}

static int merge_comm(nsc_live *d, const nsc_live *from, const comm_st *s)
{
    long j = nsc_live_job(d, from->jobs[s->job].name), ci = j < 0 ? -1 : nsc_live_comm(d, (uint32_t)j, s->id, s->nranks);
    if (ci < 0)
        return -1;
    comm_st *c = &d->comms[ci];
    if (s->nranks > c->nranks)
        c->nranks = s->nranks;
    if (!c->name[0])
        snprintf(c->name, sizeof c->name, "%s", s->name);
    c->events += s->events;
    c->tick_events += s->tick_events;
    c->last_ns = s->last_ns > c->last_ns ? s->last_ns : c->last_ns;
    c->from_ledger |= s->from_ledger;
    hist_add(&c->arrival, &s->arrival);
    c->rate += s->rate;
    /* a mean over each collector's completions: the mean of the means */
    c->bw_avg = c->bw_avg > 0 && s->bw_avg > 0 ? (c->bw_avg + s->bw_avg) / 2 : c->bw_avg + s->bw_avg;
    int fmap[MAX_FUNCS];
    for (int f = 0; f < MAX_FUNCS; f++) {
        fmap[f] = f < s->nf ? nsc_live_func(c, s->f[f].name) : -1;
        if (fmap[f] >= 0)
            merge_func(&c->f[fmap[f]], &s->f[f]);
    }
    for (int32_t k = 0; k < s->nalloc; k++)
        if (s->ranks[k].seen && merge_rank(d, c, k, &s->ranks[k], fmap))
            return -1;
    return 0;
}

int nsc_live_merge(nsc_live *into, const nsc_live *from)
{
    for (size_t i = 0; i < from->njobs; i++)
        if (nsc_live_job(into, from->jobs[i].name) < 0)
            return -1;
    for (size_t i = 0; i < from->nagents; i++)
        if (merge_agent(into, &from->agents[i]))
            return -1;
    for (size_t i = 0; i < from->nprocs; i++)
        if (merge_proc(into, &from->procs[i]))
            return -1;
    for (size_t i = 0; i < from->ncomms; i++)
        if (merge_comm(into, from, &from->comms[i]))
            return -1;
    into->events += from->events;
    if (!into->has_wall && from->has_wall)  /* one time base: one wall clock */
        nsc_live_set_wall(into, from->wall_ns);
    return 0;
}
