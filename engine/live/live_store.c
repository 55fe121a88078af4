/* live_store.c: the live state against the store (live.h): the progress
 * changed since it was last taken, for the collector to persist, and the
 * tables rebuilt from what a store holds (a collector starting, the CLI's
 * --db mode). */
#include <stdio.h>
#include <stdlib.h>

#include "live_int.h"

int nsc_live_take_progress(nsc_live *l, nsc_live_progress_fn fn, void *arg)
{
    int rc = 0;
    size_t i = 0;
    for (; i < l->ndirty && !rc; i++) {
        const dirty *d = &l->dirty[i];
        const comm_st *c = &l->comms[d->comm];
        const prog *p = &c->ranks[d->rank].p[d->func];
        nsc_store_progress sp = {.comm_id = c->id, .rank = d->rank, .seq = p->seq, .ref_ns = p->since_ns,
                                 .done = (uint8_t)p->done};
        snprintf(sp.job, sizeof sp.job, "%s", l->jobs[c->job].name);
        snprintf(sp.func, sizeof sp.func, "%s", c->f[d->func].name);
        rc = fn(arg, &sp);
    }
    if (!rc)
        l->ndirty = 0;
    return rc;
}

typedef struct rebuild {
    nsc_live *l;
    nsc_store_reader *rd;
} rebuild;

/* One stored communicator as the collector knew it from its definitions:
 * its name, size and ranks with their processes, whether or not it ran a
 * collective (a Send/Recv-only one has no progress record). */
static int from_comm(rebuild *rb, uint32_t job, uint32_t jid, const nsc_store_comm *sc)
{
    nsc_live *l = rb->l;
    long ci;
    int rc = nsc_live_admit_comm(l, job, sc->comm_id, sc->nranks, &ci);
    if (rc)
        return rc < 0 ? -1 : 0;  /* over the limit: not rebuilt */
    comm_st *c = &l->comms[ci];
    snprintf(c->name, sizeof c->name, "%s", sc->name);
    nsc_store_rank_entry *re;
    size_t n;
    rc = nsc_store_comm_ranks(rb->rd, jid, sc->comm_id, &re, &n);
    for (size_t i = 0; !rc && i < n; i++) {
        rank_st *r = nsc_live_rank(c, re[i].rank);
        long pi = r ? nsc_live_proc(l, re[i].info.host, re[i].info.pid) : -1;
        if (pi < 0) {
            rc = -1;
            break;
        }
        snprintf(l->procs[pi].job, sizeof l->procs[pi].job, "%s", l->jobs[job].name);
        r->seen = 1;
        r->proc = (uint32_t)pi + 1;
        r->pid = re[i].info.pid;
        snprintf(r->host, sizeof r->host, "%s", re[i].info.host);
    }
    free(re);
    return rc;
}

static int from_comms(rebuild *rb)
{
    nsc_store_job *jobs;
    size_t nj;
    int rc = nsc_store_jobs(rb->rd, &jobs, &nj);
    if (rc)
        return rc;
    for (size_t j = 0; !rc && j < nj; j++) {
        long job;
        nsc_store_comm *cs = NULL;
        size_t n = 0;
        int admitted = nsc_live_admit_job(rb->l, jobs[j].name, &job);
        if (admitted)  /* over the limit: not rebuilt */
            rc = admitted < 0 ? -1 : 0;
        else
            rc = nsc_store_comms(rb->rd, jobs[j].id, &cs, &n);
        for (size_t i = 0; !rc && i < n; i++)
            rc = from_comm(rb, (uint32_t)job, jobs[j].id, &cs[i]);
        free(cs);
    }
    free(jobs);
    return rc;
}

/* A rank's last collective (its communicator came from from_comms). */
static int from_progress(void *arg, const nsc_store_progress *sp)
{
    rebuild *rb = arg;
    nsc_live *l = rb->l;
    long job, ci;
    int rc = nsc_live_admit_job(l, sp->job, &job);
    if (rc || (rc = nsc_live_admit_comm(l, (uint32_t)job, sp->comm_id, 0, &ci)))
        return rc < 0 ? -1 : 0;  /* over a limit: not rebuilt */
    rank_st *r = NULL;
    int f = -1;
    if (nsc_live_advance(l, (uint32_t)ci, sp->rank, sp->func, sp->seq, sp->ref_ns, &r, &f))
        return -1;
    if (r)
        r->p[f].done = sp->done;
    r = nsc_live_rank(&l->comms[ci], sp->rank);
    if (r && r->proc && l->procs[r->proc - 1].last_ns < sp->ref_ns)
        l->procs[r->proc - 1].last_ns = sp->ref_ns;
    return 0;
}

static int from_life(void *arg, const nsc_store_life *sl)
{
    rebuild *rb = arg;
    nsc_a2c_life life = {.event = sl->event, .reason = sl->reason, .pid = sl->pid,
                         .ts_ns = sl->ts_ns, .last_batch_seq = sl->last_batch_seq};
    snprintf(life.job, sizeof life.job, "%s", sl->job);
    return nsc_live_life(rb->l, sl->agent, sl->host, &life, sl->ref_ns) < 0 ||
           nsc_live_agent_seen(rb->l, sl->agent, sl->host, sl->ref_ns);
}

/* A stored collective in flight is trusted only where the job ended: in a
 * running job its completion may come after the restart, unmatched (the Coll
 * it completes is forgotten), so every collective there counts as done. */
static int trust_done(nsc_live *l, uint64_t now)
{
    uint64_t *end = nsc_live_job_ends(l, now);
    if (!end)
        return -1;
    for (size_t i = 0; i < l->ncomms; i++)
        for (int32_t k = 0; !end[l->comms[i].job] && k < l->comms[i].nalloc; k++)
            for (int f = 0; f < MAX_FUNCS; f++)
                l->comms[i].ranks[k].p[f].done = 1;
    free(end);
    return 0;
}

int nsc_live_from_store(nsc_store_reader *rd, const nsc_live_cfg *cfg, uint64_t now,
                        nsc_live **out)
{
    nsc_live *l = nsc_live_new(cfg);
    if (!l)
        return NSC_STORE_ENOMEM;
    rebuild rb = {l, rd};
    nsc_store_stats st;
    int rc = nsc_store_stats_get(rd, &st);
    l->events = st.events;
    if (!rc)
        rc = from_comms(&rb);
    if (!rc)
        rc = nsc_store_progresses(rd, from_progress, &rb);
    if (!rc)
        rc = nsc_store_lives(rd, from_life, &rb);
    l->ndirty = 0;
    int reset;
    if (!rc)  /* before the verdicts, which name wall-clock times */
        l->has_wall = nsc_store_wall(rd, &l->wall_ns, &reset) == 0;
    if (!rc && trust_done(l, now))
        rc = NSC_STORE_ENOMEM;
    if (rc) {
        nsc_live_free(l);
        return rc;
    }
    l->tick_ns = now;
    nsc_live_evict(l, now);
    *out = l;
    return 0;
}
