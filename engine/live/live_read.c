/* live_read.c: reading the live state (live.h, live_int.h): the one
 * definition of a process alive or dead and a job ended (docs/api.md), a
 * rank lagging or hung judged by figures.c's definitions, the counts and
 * each communicator's metrics; the
 * status and summary JSON documents are live_json.c's. Every view (status,
 * watch, diagnose, the web view, /metrics) reads these judgements, never its
 * own. */
#include <stdlib.h>
#include <string.h>

#include "figures.h"
#include "live_int.h"

/* ---- judgements ---- */

int nsc_live_proc_alive(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return !p->finished && !p->died && now - p->last_ns <= l->cfg.heartbeat_timeout_ns;
}

uint64_t nsc_live_proc_end(const proc_st *p)
{
    return p->finished && p->finished_ns ? p->finished_ns : p->died ? p->died_ns : p->last_ns;
}

#define ALIVE UINT64_MAX  /* a job's end while one of its processes is alive */

uint64_t *nsc_live_job_ends(const nsc_live *l, uint64_t now)
{
    uint64_t *end = calloc(l->njobs ? l->njobs : 1, sizeof *end);
    if (!end)
        return NULL;
    size_t j = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        if (j >= l->njobs || strcmp(l->jobs[j].name, p->job) != 0)  /* a job's processes mostly come together */
            for (j = 0; j < l->njobs && strcmp(l->jobs[j].name, p->job) != 0; j++)
                ;
        if (j == l->njobs || end[j] == ALIVE)
            continue;
        uint64_t e = nsc_live_proc_alive(l, p, now) ? ALIVE : nsc_live_proc_end(p);
        end[j] = e == ALIVE ? ALIVE : e > now ? now : e > end[j] ? e : end[j];
    }
    for (j = 0; j < l->njobs; j++)
        end[j] = end[j] == ALIVE ? 0 : end[j];
    return end;
}

/* When some rank first went past seq (collector time), or 0 if unknown. */
static uint64_t passed_at(const func_st *fs, uint64_t seq)
{
    uint64_t next = seq + 1;
    return fs->ring_seq[next % SEEN_RING] == next + 1 ? fs->ring_ns[next % SEEN_RING] : 0;
}

/* Judged when the rank's progress was last known: from another collector's
 * old snapshot, the others going past its seq since then says nothing of
 * whether it followed them. */
int nsc_live_lagging(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now,
                   uint64_t *for_ns)
{
    uint64_t known = r->p[f].known_ns, at = known && known < now ? known : now;
    return r->has[f] && nsc_fig_lagging(r->p[f].seq, c->f[f].max_seq, r->p[f].since_ns,
                                        passed_at(&c->f[f], r->p[f].seq), at, l->cfg.lag_ns, for_ns);
}

void nsc_live_front_of(const comm_st *c, front *fr)
{
    memset(fr, 0, sizeof *fr);
    for (int32_t k = 0; k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++) {
            const rank_st *r = &c->ranks[k];
            if (!r->has[f] || r->p[f].seq < fr->seq[f])
                continue;
            if (r->p[f].seq > fr->seq[f])
                fr->seq[f] = r->p[f].seq, fr->done[f] = 0;
            fr->done[f] += (uint32_t)r->p[f].done;
        }
}

int nsc_live_hung(const nsc_live *l, const front *fr, const rank_st *r, int f, uint64_t now)
{
    return r->has[f] && nsc_fig_hung(r->p[f].seq, r->p[f].done, r->p[f].since_ns, fr->seq[f], fr->done[f], now,
                                     l->cfg.lag_ns);
}

/* The collective a rank is stuck at in function f: the one it is hung in,
 * or, lagging, the one the others are in (the function's furthest seq). */
static int stuck_at(const nsc_live *l, const comm_st *c, const front *fr, const rank_st *r, int f, uint64_t now,
                    uint64_t *seq)
{
    uint64_t d;
    if (nsc_live_hung(l, fr, r, f, now))
        *seq = r->p[f].seq;
    else if (nsc_live_lagging(l, c, r, f, now, &d))
        *seq = c->f[f].max_seq;
    else
        return 0;
    return 1;
}

int nsc_live_hung_coll_below(const nsc_live *l, const comm_st *c, const front *fr, int f, uint64_t now,
                           uint64_t below, uint64_t *seq)
{
    int found = 0;
    uint64_t s;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (stuck_at(l, c, fr, &c->ranks[k], f, now, &s) && s < below && (!found || s > *seq))
            *seq = s, found = 1;
    return found;
}

static uint32_t hung_colls(const nsc_live *l, const comm_st *c, const front *fr, uint64_t now)
{
    uint32_t n = 0;
    for (int f = 0; f < c->nf; f++)
        for (uint64_t s = UINT64_MAX; nsc_live_hung_coll_below(l, c, fr, f, now, s, &s);)
            n++;
    return n;
}

void nsc_live_counts_get(const nsc_live *l, uint64_t now, nsc_live_counts *out)
{
    memset(out, 0, sizeof *out);
    out->events = l->events;
    out->comms = l->ncomms;
    out->jobs = l->njobs;
    out->evicted_jobs = l->evicted_jobs;
    memcpy(out->refused, l->refused, sizeof out->refused);
    out->ledger_dropped = l->ledger_dropped;
    for (size_t i = 0; i < l->nprocs; i++)
        l->procs[i].finished ? out->procs_finished++
        : nsc_live_proc_alive(l, &l->procs[i], now) ? out->procs_alive++ : out->procs_dead++;
    for (size_t i = 0; i < l->nagents; i++)
        now - l->agents[i].last_ns <= l->cfg.heartbeat_timeout_ns ? out->agents_alive++ : out->agents_dead++;
    /* Out of memory: every job judged as running, as before jobs could end. */
    uint64_t *ends = nsc_live_job_ends(l, now);
    for (size_t j = 0; ends && j < l->njobs; j++)
        out->jobs_ended += ends[j] != 0;
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        if (ends && ends[c->job])
            continue;
        front fr;
        nsc_live_front_of(c, &fr);
        for (int32_t k = 0; k < c->nalloc; k++)
            for (int f = 0; f < c->nf; f++) {
                uint64_t d;
                out->lagging += (uint64_t)nsc_live_lagging(l, c, &c->ranks[k], f, now, &d);
                out->hangs += (uint64_t)nsc_live_hung(l, &fr, &c->ranks[k], f, now);
            }
        out->hung_colls += hung_colls(l, c, &fr, now);
    }
    free(ends);
}

/* ---- metrics ---- */

/* Lag, lagging, hangs and in-flight of one communicator of a running job. */
static void comm_judged(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    front fr;
    nsc_live_front_of(c, &fr);
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *r = &c->ranks[k];
        for (int f = 0; f < c->nf; f++) {
            uint64_t d = 0;
            o->lagging += (uint32_t)nsc_live_lagging(l, c, r, f, now, &d);
            o->hung += (uint32_t)nsc_live_hung(l, &fr, r, f, now);
            if (d && (double)d / 1e9 > o->lag_s) {
                o->lag_s = (double)d / 1e9;
                o->lag_rank = k;
            }
            if (r->has[f] && !r->p[f].done) {
                double age = (double)(now - r->p[f].since_ns) / 1e9;
                o->in_flight++;
                o->in_flight_max_s = age > o->in_flight_max_s ? age : o->in_flight_max_s;
            }
        }
    }
    o->hung_colls = hung_colls(l, c, &fr, now);
}

/* ended: its job's end, 0 while it runs (its lag and hangs then stay 0). */
static void comm_stat(const nsc_live *l, const comm_st *c, uint64_t now, uint64_t ended, nsc_live_comm_stat *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->job, sizeof o->job, "%s", l->jobs[c->job].name);
    snprintf(o->name, sizeof o->name, "%s", c->name);
    o->id = c->id;
    o->nranks = c->nranks;
    o->events = c->events;
    o->bus_bw = c->bw_avg * 1e9;  /* bytes per ns */
    o->arrival = c->arrival;
    o->lag_rank = -1;
    for (int32_t k = 0; k < c->nalloc; k++)
        o->ranks_seen += c->ranks[k].seen;
    if (!ended)
        comm_judged(l, c, now, o);
    o->nf = c->nf;
    for (int f = 0; f < c->nf; f++) {
        const func_st *fs = &c->f[f];
        nsc_live_func_stat *of = &o->f[f];
        snprintf(of->name, sizeof of->name, "%s", fs->name);
        of->collectives = fs->max_seq + 1;
        of->duration = fs->duration;
    }
}

typedef struct recent {
    uint64_t last_ns;
    size_t index;
} recent;

static int most_recent_first(const void *a, const void *b)
{
    const recent *x = a, *y = b;
    return x->last_ns != y->last_ns ? (x->last_ns < y->last_ns ? 1 : -1) : (x->index > y->index) - (x->index < y->index);
}

int nsc_live_comm_stats(const nsc_live *l, uint64_t now, size_t max, nsc_live_comm_stat **out,
                        size_t *n, size_t *omitted)
{
    size_t want = max < l->ncomms ? max : l->ncomms;
    *out = NULL;
    *n = 0;
    *omitted = l->ncomms - want;
    if (!want)
        return 0;
    recent *order = malloc(l->ncomms * sizeof *order);
    uint64_t *ends = nsc_live_job_ends(l, now);
    *out = malloc(want * sizeof **out);
    if (!order || !ends || !*out) {
        free(order);
        free(ends);
        free(*out);
        *out = NULL;
        return -1;
    }
    for (size_t i = 0; i < l->ncomms; i++)
        order[i] = (recent){l->comms[i].last_ns, i};
    qsort(order, l->ncomms, sizeof *order, most_recent_first);
    for (; *n < want; (*n)++) {
        const comm_st *c = &l->comms[order[*n].index];
        comm_stat(l, c, now, ends[c->job], &(*out)[*n]);
    }
    free(order);
    free(ends);
    return 0;
}
