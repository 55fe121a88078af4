/* live.c: the live state's tables (live.h, live_int.h): built from the
 * agents' sections and lifecycle records, aged by ticks and evicted; the
 * store's side (progress taken, rebuild at start) is live_store.c's. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "grow.h"
#include "live_int.h"

nsc_live *nsc_live_new(const nsc_live_cfg *cfg)
{
    nsc_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->cfg.heartbeat_timeout_ns = cfg && cfg->heartbeat_timeout_ns ? cfg->heartbeat_timeout_ns : 15000000000ull;
    l->cfg.lag_ns = cfg && cfg->lag_ns ? cfg->lag_ns : 10000000000ull;
    l->cfg.evict_ns = cfg ? cfg->evict_ns : 0;
    l->cfg.max_jobs = cfg && cfg->max_jobs ? cfg->max_jobs : 1024;
    l->cfg.max_comms_per_job = cfg && cfg->max_comms_per_job ? cfg->max_comms_per_job : 16384;
    l->cfg.max_procs_per_job = cfg && cfg->max_procs_per_job ? cfg->max_procs_per_job : 16384;
    l->cfg.max_procs_per_agent = cfg && cfg->max_procs_per_agent ? cfg->max_procs_per_agent : 4096;
    l->cfg.open_colls = cfg && cfg->open_colls ? cfg->open_colls : 256;
    return l;
}

const char *nsc_live_limit_name(int lim)
{
    static const char *const names[NSC_LIVE_LIMITS] = {"jobs", "comms_per_job", "procs_per_job",
                                                        "procs_per_agent"};
    return lim >= 0 && lim < NSC_LIVE_LIMITS ? names[lim] : "unknown";
}

static void free_comm(comm_st *c)
{
    nsc_live_ledger_free(c);
    free(c->ranks);
    free(c->f);
}

static void free_proc(proc_st *p)
{
    free(p->ctx);
    free(p->str);
}

void nsc_live_free(nsc_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ncomms; i++)
        free_comm(&l->comms[i]);
    for (size_t i = 0; i < l->nprocs; i++)
        free_proc(&l->procs[i]);
    free(l->jobs);
    free(l->comms);
    free(l->procs);
    free(l->agents);
    free(l->dirty);
    free(l);
}

long nsc_live_job(nsc_live *l, const char *job)
{
    for (size_t i = 0; i < l->njobs; i++)
        if (strcmp(l->jobs[i].name, job) == 0)
            return (long)i;
    if (nsc_grow(&l->jobs, l->njobs, &l->jobs_cap, sizeof *l->jobs, 8))
        return -1;
    l->jobs[l->njobs] = (job_st){.sent_ns = 0};
    snprintf(l->jobs[l->njobs].name, sizeof l->jobs->name, "%s", job);
    return (long)l->njobs++;
}

long nsc_live_comm(nsc_live *l, uint32_t job, uint64_t id, int32_t nranks)
{
    for (size_t i = 0; i < l->ncomms; i++)
        if (l->comms[i].job == job && l->comms[i].id == id)
            return (long)i;
    if (nsc_grow(&l->comms, l->ncomms, &l->comms_cap, sizeof *l->comms, 8))
        return -1;
    comm_st *c = &l->comms[l->ncomms];
    memset(c, 0, sizeof *c);
    c->job = job;
    c->id = id;
    c->nranks = nranks;
    return (long)l->ncomms++;
}

/* Ranks are allocated as they are seen (doubling, up to nranks): a claimed
 * nranks costs nothing until its ranks report. */
rank_st *nsc_live_rank(comm_st *c, int32_t rank)
{
    if (rank < 0 || rank >= (1 << 20))
        return NULL;
    if (rank >= c->nalloc) {
        int32_t n = c->nalloc * 2 < c->nranks ? c->nalloc * 2 : c->nranks;
        n = n > rank ? n : rank + 1;
        rank_st *r = realloc(c->ranks, (size_t)n * sizeof *r);
        if (!r)
            return NULL;
        memset(r + c->nalloc, 0, (size_t)(n - c->nalloc) * sizeof *r);
        c->ranks = r;
        c->nalloc = n;
    }
    return &c->ranks[rank];
}

long nsc_live_proc(nsc_live *l, const char *host, uint32_t pid)
{
    for (size_t i = 0; i < l->nprocs; i++)
        if (l->procs[i].pid == pid && strcmp(l->procs[i].host, host) == 0)
            return (long)i;
    if (nsc_grow(&l->procs, l->nprocs, &l->procs_cap, sizeof *l->procs, 8))
        return -1;
    proc_st *p = &l->procs[l->nprocs];
    memset(p, 0, sizeof *p);
    snprintf(p->host, sizeof p->host, "%s", host);
    p->pid = pid;
    return (long)l->nprocs++;
}

int nsc_live_agent_seen(nsc_live *l, const char *agent, const char *host, uint64_t now)
{
    size_t i = 0;
    while (i < l->nagents && strcmp(l->agents[i].id, agent) != 0)
        i++;
    if (i == l->nagents) {
        if (nsc_grow(&l->agents, l->nagents, &l->agents_cap, sizeof *l->agents, 8))
            return -1;
        memset(&l->agents[i], 0, sizeof *l->agents);
        snprintf(l->agents[i].id, sizeof l->agents[i].id, "%s", agent);
        l->nagents++;
    }
    snprintf(l->agents[i].host, sizeof l->agents[i].host, "%s", host);
    l->agents[i].last_ns = now;
    return 0;
}

int nsc_live_func(comm_st *c, const char *name)
{
    for (int i = 0; i < c->nf; i++)
        if (strcmp(c->f[i].name, name) == 0)
            return i;
    if (c->nf == MAX_FUNCS || nsc_grow(&c->f, (size_t)c->nf, &c->fcap, sizeof *c->f, 2))
        return -1;
    memset(&c->f[c->nf], 0, sizeof *c->f);
    snprintf(c->f[c->nf].name, sizeof c->f[c->nf].name, "%.31s", name);
    return c->nf++;
}

static const char *str_text(const proc_st *p, uint16_t id)
{
    for (size_t i = 0; i < p->nstr; i++)
        if (p->str[i].id == id)
            return p->str[i].text;
    return "?";
}

const ctx_map *nsc_live_ctx_of(const proc_st *p, uint16_t index)
{
    for (size_t i = 0; i < p->nctx; i++)
        if (p->ctx[i].index == index)
            return &p->ctx[i];
    return NULL;
}

int nsc_live_mark_dirty(nsc_live *l, uint32_t comm, int32_t rank, int func)
{
    for (size_t i = 0; i < l->ndirty; i++)
        if (l->dirty[i].comm == comm && l->dirty[i].rank == rank && l->dirty[i].func == func)
            return 0;
    if (nsc_grow(&l->dirty, l->ndirty, &l->dirty_cap, sizeof *l->dirty, 64))
        return -1;
    l->dirty[l->ndirty++] = (dirty){comm, rank, func};
    return 0;
}

const double nsc_live_hist_le[NSC_LIVE_HIST_BOUNDS] = {
    1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 1, 3, 10};

void nsc_live_observe(nsc_live_hist *h, double s)
{
    int b = 0;
    while (b < NSC_LIVE_HIST_BOUNDS && s > nsc_live_hist_le[b])
        b++;
    h->buckets[b]++;
    h->count++;
    h->sum_s += s;
}

/* The rank moved to collective seq of func (seen at now). */
int nsc_live_advance(nsc_live *l, uint32_t ci, int32_t rank, const char *func, uint64_t seq,
                   uint64_t now, rank_st **rout, int *fout)
{
    comm_st *c = &l->comms[ci];
    rank_st *r = nsc_live_rank(c, rank);
    int f = nsc_live_func(c, func);
    *fout = f;
    if (!r || f < 0)
        return r ? 0 : -1;
    func_st *fs = &c->f[f];
    uint64_t *slot = &fs->ring_seq[seq % SEEN_RING];
    /* First to arrive, or so late that seq has left the ring: then when the
     * first rank arrived is unknown and the arrival is not observed. */
    int first = *slot != seq + 1, unknown = first && seq + SEEN_RING <= fs->max_seq;
    if (first) {  /* stored +1 so zero means empty */
        *slot = seq + 1;
        fs->ring_ns[seq % SEEN_RING] = now;
    }
    if (seq > fs->max_seq)
        fs->max_seq = seq;
    r->seen = 1;
    if ((!r->has[f] || seq > r->p[f].seq) && !unknown)
        nsc_live_observe(&c->arrival, now > fs->ring_ns[seq % SEEN_RING]
                                 ? (double)(now - fs->ring_ns[seq % SEEN_RING]) / 1e9 : 0);
    if (!r->has[f] || seq >= r->p[f].seq) {
        r->has[f] = 1;
        r->p[f] = (prog){.seq = seq, .since_ns = now};
        *rout = r;
        return nsc_live_mark_dirty(l, ci, rank, f);
    }
    return 0;
}

/* A limit hit: counted, and 1 + lim for the caller to say who hit it. */
static int refuse(nsc_live *l, int lim)
{
    l->refused[lim]++;
    return 1 + lim;
}

/* The job's index, added within max_jobs: 0, -1 (memory) or a refusal. */
int nsc_live_admit_job(nsc_live *l, const char *job, long *out)
{
    for (size_t i = 0; i < l->njobs; i++)
        if (strcmp(l->jobs[i].name, job) == 0) {
            *out = (long)i;
            return 0;
        }
    if (l->njobs >= l->cfg.max_jobs)
        return refuse(l, NSC_LIVE_LIM_JOBS);
    return (*out = nsc_live_job(l, job)) < 0 ? -1 : 0;
}

/* The communicator's index, added within max_comms_per_job. */
int nsc_live_admit_comm(nsc_live *l, uint32_t job, uint64_t id, int32_t nranks, long *out)
{
    size_t of_job = 0;
    for (size_t i = 0; i < l->ncomms; i++) {
        if (l->comms[i].job == job && l->comms[i].id == id) {
            *out = (long)i;
            return 0;
        }
        of_job += l->comms[i].job == job;
    }
    if (of_job >= l->cfg.max_comms_per_job)
        return refuse(l, NSC_LIVE_LIM_COMMS_PER_JOB);
    return (*out = nsc_live_comm(l, job, id, nranks)) < 0 ? -1 : 0;
}

/* The process's index, added within the per-job and per-agent limits (the
 * count only for a new one: finding is the per-section path). */
int nsc_live_admit_proc(nsc_live *l, const char *host, uint32_t pid, const char *job, const char *agent,
                      long *out)
{
    for (size_t i = 0; i < l->nprocs; i++)
        if (l->procs[i].pid == pid && strcmp(l->procs[i].host, host) == 0) {
            *out = (long)i;
            return 0;
        }
    size_t of_job = 0, of_agent = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        of_job += strcmp(l->procs[i].job, job) == 0;
        of_agent += strcmp(l->procs[i].agent, agent) == 0;
    }
    if (of_job >= l->cfg.max_procs_per_job)
        return refuse(l, NSC_LIVE_LIM_PROCS_PER_JOB);
    if (of_agent >= l->cfg.max_procs_per_agent)
        return refuse(l, NSC_LIVE_LIM_PROCS_PER_AGENT);
    if ((*out = nsc_live_proc(l, host, pid)) < 0)
        return -1;
    snprintf(l->procs[*out].job, sizeof l->procs[*out].job, "%s", job);
    snprintf(l->procs[*out].agent, sizeof l->procs[*out].agent, "%s", agent);
    return 0;
}

/* The section's contexts and strings. A communicator over its job's limit
 * is left out (its events are not tracked): the first refusal is returned
 * after the other definitions are taken. */
static int take_defs(proc_st *p, nsc_live *l, uint32_t job, const nsc_batch *b)
{
    int refused = 0;
    for (size_t i = 0; i < b->nctxs; i++) {
        const nsc_ctx_def *d = &b->ctxs[i];
        long ci;
        int rc = nsc_live_admit_comm(l, job, d->comm_id, d->nranks, &ci);
        if (rc > 0) {
            refused = refused ? refused : rc;
            continue;
        }
        if (rc || (!nsc_live_ctx_of(p, d->index) && nsc_grow(&p->ctx, p->nctx, &p->ctx_cap, sizeof *p->ctx, 8)))
            return -1;
        comm_st *c = &l->comms[ci];
        c->nranks = d->nranks;
        snprintf(c->name, sizeof c->name, "%s", d->name);
        rank_st *r = nsc_live_rank(c, d->rank);
        if (!r)
            return -1;
        r->seen = 1;
        r->proc = (uint32_t)(p - l->procs) + 1;
        r->pid = p->pid;
        snprintf(r->host, sizeof r->host, "%s", p->host);
        ctx_map *m = (ctx_map *)nsc_live_ctx_of(p, d->index);
        if (!m)
            m = &p->ctx[p->nctx++];
        *m = (ctx_map){d->index, (uint32_t)ci, d->rank};
    }
    for (size_t i = 0; i < b->nstrs; i++) {
        str_map *s = (str_map *)NULL;
        for (size_t k = 0; k < p->nstr && !s; k++)
            if (p->str[k].id == b->strs[i].id)
                s = &p->str[k];
        if (!s) {
            if (nsc_grow(&p->str, p->nstr, &p->str_cap, sizeof *p->str, 8))
                return -1;
            s = &p->str[p->nstr++];
        }
        s->id = b->strs[i].id;
        snprintf(s->text, sizeof s->text, "%.31s", b->strs[i].text);
    }
    return refused;
}

/* Remember a Coll until its completion, overwriting the oldest. */
static void remember(proc_st *p, const nsc_event *ev, const ctx_map *m, int f, unsigned tsize)
{
    p->pend[p->pend_next++ % PENDING] = (pending){.id = ev->id, .start_ns = ev->start_ns,
        .count = ev->d.coll.count, .comm = m->comm, .rank = m->rank, .func = f, .tsize = tsize, .used = 1};
}

static pending *pending_take(proc_st *p, uint64_t id)
{
    for (unsigned i = 0; i < PENDING; i++) {
        pending *q = &p->pend[(p->pend_next - 1 - i) % PENDING];  /* newest first */
        if (q->used && q->id == id) {
            q->used = 0;
            return q;
        }
    }
    return NULL;
}

/* The completion at ts_ns of the Coll q: a duration, a bandwidth sample
 * (none for an unknown datatype; neither once its communicator has ledger
 * records), and done if it is its rank's latest (a
 * change the store keeps: a job that ends hung keeps its verdict). 0, or -1
 * (memory). */
static int complete(nsc_live *l, const pending *q, uint64_t ts_ns)
{
    comm_st *c = &l->comms[q->comm];
    rank_st *r = q->rank < c->nalloc ? &c->ranks[q->rank] : NULL;
    if (r && r->has[q->func] && r->p[q->func].coll_id == q->id && !r->p[q->func].done) {
        r->p[q->func].done = 1;
        if (nsc_live_mark_dirty(l, q->comm, q->rank, q->func))
            return -1;
    }
    if (ts_ns <= q->start_ns || c->from_ledger)  /* the ledger's figures are its figures */
        return 0;
    func_st *fs = &c->f[q->func];
    nsc_live_observe(&fs->duration, (double)(ts_ns - q->start_ns) / 1e9);
    if (!q->tsize)
        return 0;
    nsc_busbw bw = nsc_busbw_rule(fs->name, c->nranks, q->count, q->tsize);
    c->bw_sum += (double)bw.bytes / (double)(ts_ns - q->start_ns) * bw.factor;
    c->bw_n++;
    return 0;
}

static int take_completions(nsc_live *l, proc_st *p, const nsc_batch *b)
{
    for (size_t i = 0; i < b->ncompletions; i++) {
        const pending *q = pending_take(p, b->completions[i].id);
        if (q && complete(l, q, b->completions[i].ts_ns))
            return -1;
    }
    return 0;
}

int nsc_live_section(nsc_live *l, const char *agent, const nsc_batch *b, uint64_t now)
{
    long job, pi;
    l->events += b->nevents;  /* stored, tracked or not */
    int refused = nsc_live_admit_job(l, b->hdr.proc.job, &job);
    if (refused)
        return refused;
    l->jobs[job].sent_ns = now;
    if ((refused = nsc_live_admit_proc(l, b->hdr.proc.host, b->hdr.proc.pid, b->hdr.proc.job, agent, &pi)))
        return refused;
    proc_st *p = &l->procs[pi];
    snprintf(p->job, sizeof p->job, "%s", b->hdr.proc.job);
    snprintf(p->agent, sizeof p->agent, "%s", agent);
    p->last_ns = now;
    if (b->has_counters) {
        if (b->counters.shed_mask != p->counters.shed_mask)
            p->shed_ns = now;
        p->counters = b->counters;
    }
    if ((refused = take_defs(p, l, (uint32_t)job, b)) < 0)
        return -1;
    /* Datatype names are looked up when the id changes: looking one up per
     * Coll cost more than the rest of the section. */
    uint16_t dt = 0;
    unsigned dt_size = 0;
    int has_dt = 0;
    const ctx_map *last = NULL;
    for (size_t i = 0; i < b->nevents; i++) {
        const nsc_event *ev = &b->events[i];
        if (!last || last->index != ev->ctx)
            last = nsc_live_ctx_of(p, ev->ctx);
        if (!last)
            continue;
        l->comms[last->comm].events++;
        l->comms[last->comm].last_ns = now;
        if (ev->type != NSC_T_COLL)
            continue;
        rank_st *r = NULL;
        int f = -1;
        if (nsc_live_advance(l, last->comm, last->rank, str_text(p, ev->d.coll.func), ev->d.coll.seq, now, &r, &f))
            return -1;
        if (!has_dt || dt != ev->d.coll.datatype) {
            dt = ev->d.coll.datatype, has_dt = 1;
            dt_size = nsc_dtype_size(str_text(p, dt));
        }
        if (f >= 0)
            remember(p, ev, last, f, dt_size);
        if (r)
            r->p[f].coll_id = ev->id;
    }
    return take_completions(l, p, b) ? -1 : refused;
}

int nsc_live_life(nsc_live *l, const char *agent, const char *host, const nsc_a2c_life *life,
                  uint64_t now)
{
    long job, pi;
    int refused = nsc_live_admit_job(l, life->job, &job);
    if (!refused)
        refused = nsc_live_admit_proc(l, host, life->pid, life->job, agent, &pi);
    if (refused)
        return refused;
    proc_st *p = &l->procs[pi];
    snprintf(p->job, sizeof p->job, "%s", life->job);
    snprintf(p->agent, sizeof p->agent, "%s", agent);
    if (life->event == NSC_A2C_FINISHED) {
        p->finished = 1;
        p->finished_ns = now;
        return 0;
    }
    if (life->event == NSC_A2C_STARTED)
        p->finished = 0, p->finished_ns = 0;
    p->died = life->event == NSC_A2C_DIED;
    p->reason = life->reason;
    p->died_ns = p->died ? now : 0;
    if (!p->died)
        p->last_ns = now;
    return 0;
}

void nsc_live_tick(nsc_live *l, uint64_t now)
{
    double dt = l->tick_ns && now > l->tick_ns ? (double)(now - l->tick_ns) / 1e9 : 0;
    for (size_t i = 0; i < l->ncomms; i++) {
        comm_st *c = &l->comms[i];
        c->rate = dt > 0 ? (double)(c->events - c->tick_events) / dt : 0;
        c->tick_events = c->events;
        c->bw_avg = c->bw_n ? c->bw_sum / (double)c->bw_n : 0;
        c->bw_sum = 0;
        c->bw_n = 0;
    }
    l->tick_ns = now;
}

/* ---- eviction ---- */

/* When the job last showed life (its sections, refused or not, its
 * processes' deaths and events), and whether one of its processes may
 * still run: alive as status judges it. */
static uint64_t job_last_ns(const nsc_live *l, uint32_t job, uint64_t now, int *running)
{
    uint64_t last = l->jobs[job].sent_ns;
    *running = 0;
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        if (strcmp(p->job, l->jobs[job].name) != 0)
            continue;
        last = p->last_ns > last ? p->last_ns : last;
        last = p->died_ns > last ? p->died_ns : last;
        *running |= nsc_live_proc_alive(l, p, now);
    }
    for (size_t i = 0; i < l->ncomms; i++)
        if (l->comms[i].job == job && l->comms[i].last_ns > last)
            last = l->comms[i].last_ns;
    return last;
}

/* Keep the elements whose keep[i] is set, in order; keep[i] becomes the
 * element's new index + 1 (0: dropped, after free_one released it). */
static size_t compact(void *arr, size_t n, size_t elem, uint32_t *keep, void (*free_one)(void *))
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char *e = (char *)arr + i * elem;
        if (!keep[i]) {
            if (free_one)
                free_one(e);
            continue;
        }
        if (k != i)
            memcpy((char *)arr + k * elem, e, elem);
        keep[i] = (uint32_t)++k;
    }
    return k;
}

static void free_comm_v(void *c) { free_comm(c); }
static void free_proc_v(void *p) { free_proc(p); }

/* Drop the jobs not kept (keep_job per job), their communicators and
 * processes, and renumber what refers to the rest. */
static void drop_jobs(nsc_live *l, uint32_t *keep_job, uint32_t *keep_comm, uint32_t *keep_proc)
{
    for (size_t i = 0; i < l->ncomms; i++)
        keep_comm[i] = keep_job[l->comms[i].job];
    for (size_t i = 0; i < l->nprocs; i++) {
        keep_proc[i] = 1;
        for (size_t j = 0; j < l->njobs; j++)
            if (!keep_job[j] && strcmp(l->procs[i].job, l->jobs[j].name) == 0)
                keep_proc[i] = 0;
    }
    l->njobs = compact(l->jobs, l->njobs, sizeof *l->jobs, keep_job, NULL);
    size_t ncomms = compact(l->comms, l->ncomms, sizeof *l->comms, keep_comm, free_comm_v);
    size_t nprocs = compact(l->procs, l->nprocs, sizeof *l->procs, keep_proc, free_proc_v);
    for (size_t i = 0; i < ncomms; i++) {
        comm_st *c = &l->comms[i];
        c->job = keep_job[c->job] - 1;
        for (int32_t k = 0; k < c->nalloc; k++)
            c->ranks[k].proc = c->ranks[k].proc ? keep_proc[c->ranks[k].proc - 1] : 0;
    }
    for (size_t i = 0; i < nprocs; i++) {  /* contexts in a dropped one (a job renamed) go too */
        proc_st *p = &l->procs[i];
        size_t nc = 0;
        for (size_t k = 0; k < p->nctx; k++)
            if (keep_comm[p->ctx[k].comm]) {
                p->ctx[nc] = p->ctx[k];
                p->ctx[nc++].comm = keep_comm[p->ctx[k].comm] - 1;
            }
        p->nctx = nc;
        for (unsigned k = 0; k < PENDING; k++) {
            p->pend[k].used = p->pend[k].used && keep_comm[p->pend[k].comm];
            p->pend[k].comm = p->pend[k].used ? keep_comm[p->pend[k].comm] - 1 : 0;
        }
    }
    size_t nd = 0;
    for (size_t i = 0; i < l->ndirty; i++)
        if (keep_comm[l->dirty[i].comm]) {
            l->dirty[nd] = l->dirty[i];
            l->dirty[nd++].comm = keep_comm[l->dirty[i].comm] - 1;
        }
    l->ndirty = nd, l->ncomms = ncomms, l->nprocs = nprocs;
}

size_t nsc_live_evict(nsc_live *l, uint64_t now)
{
    if (!l->cfg.evict_ns || !l->njobs)
        return 0;
    size_t evicted = 0;
    uint32_t *keep_job = calloc(l->njobs, sizeof *keep_job);
    uint32_t *keep_comm = calloc(l->ncomms + 1, sizeof *keep_comm);
    uint32_t *keep_proc = calloc(l->nprocs + 1, sizeof *keep_proc);
    if (keep_job && keep_comm && keep_proc) {  /* out of memory: nothing evicted, tried again later */
        for (size_t j = 0; j < l->njobs; j++) {
            int running;
            uint64_t last = job_last_ns(l, (uint32_t)j, now, &running);
            keep_job[j] = running || now < last + l->cfg.evict_ns;
            evicted += !keep_job[j];
        }
        if (evicted)
            drop_jobs(l, keep_job, keep_comm, keep_proc);
    }
    free(keep_job), free(keep_comm), free(keep_proc);
    size_t na = 0;
    for (size_t i = 0; i < l->nagents; i++)
        if (now < l->agents[i].last_ns + l->cfg.evict_ns + l->cfg.heartbeat_timeout_ns)
            l->agents[na++] = l->agents[i];
    l->nagents = na;
    l->evicted_jobs += evicted;
    return evicted;
}

void nsc_live_set_wall(nsc_live *l, int64_t off)
{
    l->wall_ns = off;
    l->has_wall = 1;
}

int nsc_live_wall(const nsc_live *l, int64_t *off)
{
    *off = l->wall_ns;
    return l->has_wall ? 0 : -1;
}
