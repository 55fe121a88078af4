/* live.c: live state (see live.h). Tables are small arrays searched
 * linearly: a collector sees hundreds of processes and communicators, and the
 * per-section work touches a process's few contexts and its Coll events. */
#include "live.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "busbw.h"
#include "grow.h"
#include "json.h"

#define SEEN_RING 256  /* first-seen times of the latest seqNumbers per (comm, func) */
#define MAX_FUNCS NSC_LIVE_MAX_FUNCS
#define PENDING 128    /* Colls per process awaiting their completion (oldest forgotten) */

typedef struct prog {        /* one rank's last collective of one function */
    uint64_t seq, coll_id;
    uint64_t since_ns;       /* collector time it was seen */
    int done;                /* completion seen */
} prog;

typedef struct rank_st {
    int seen;
    uint32_t proc;           /* index + 1 into processes; 0 unknown */
    char host[64];
    uint32_t pid;
    prog p[MAX_FUNCS];       /* by the communicator's func index */
    int has[MAX_FUNCS];
} rank_st;

typedef struct func_st {
    char name[32];
    uint64_t max_seq;
    uint64_t ring_seq[SEEN_RING], ring_ns[SEEN_RING];  /* first time a seq was seen */
    nsc_live_hist duration;
} func_st;

typedef struct comm_st {
    uint32_t job;
    uint64_t id;
    int32_t nranks;
    char name[64];
    rank_st *ranks;
    int32_t nalloc;
    func_st f[MAX_FUNCS];
    int nf;
    uint64_t events, tick_events;
    uint64_t last_ns;        /* collector time of its latest event */
    nsc_live_hist arrival;
    double rate, bw_sum, bw_avg;
    uint64_t bw_n;
} comm_st;

typedef struct ctx_map {
    uint16_t index;
    uint32_t comm;           /* index into comms */
    int32_t rank;
} ctx_map;

typedef struct pending {   /* a Coll whose completion has not come yet */
    uint64_t id, start_ns, count;  /* its host start and element count */
    uint32_t comm;
    int32_t rank;
    int func;
    unsigned tsize;
    int used;
} pending;

typedef struct str_map {
    uint16_t id;
    char text[32];
} str_map;

typedef struct proc_st {
    char host[64], job[64], agent[64];
    uint32_t pid;
    uint64_t last_ns;
    int died, reason;
    int finished;  /* its plugin shut down cleanly (NSC_A2C_FINISHED) */
    uint64_t died_ns;
    ctx_map *ctx;
    size_t nctx, ctx_cap;
    str_map *str;
    size_t nstr, str_cap;
    nsc_counters counters; /* the latest the plugin sent: cumulative, so replaced */
    pending pend[PENDING]; /* a ring; completions come in the same or a later section */
    unsigned pend_next;
} proc_st;

typedef struct agent_st {
    char id[64], host[64];
    uint64_t last_ns;
} agent_st;

typedef struct dirty {
    uint32_t comm;
    int32_t rank;
    int func;
} dirty;

struct nsc_live {
    nsc_live_cfg cfg;
    char (*jobs)[64];
    size_t njobs, jobs_cap;
    comm_st *comms;
    size_t ncomms, comms_cap;
    proc_st *procs;
    size_t nprocs, procs_cap;
    agent_st *agents;
    size_t nagents, agents_cap;
    dirty *dirty;
    size_t ndirty, dirty_cap;
    uint64_t tick_ns, events;
};

nsc_live *nsc_live_new(const nsc_live_cfg *cfg)
{
    nsc_live *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->cfg.heartbeat_timeout_ns = cfg && cfg->heartbeat_timeout_ns ? cfg->heartbeat_timeout_ns : 15000000000ull;
    l->cfg.lag_ns = cfg && cfg->lag_ns ? cfg->lag_ns : 10000000000ull;
    return l;
}

void nsc_live_free(nsc_live *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->ncomms; i++)
        free(l->comms[i].ranks);
    for (size_t i = 0; i < l->nprocs; i++) {
        free(l->procs[i].ctx);
        free(l->procs[i].str);
    }
    free(l->jobs);
    free(l->comms);
    free(l->procs);
    free(l->agents);
    free(l->dirty);
    free(l);
}

static long job_index(nsc_live *l, const char *job)
{
    for (size_t i = 0; i < l->njobs; i++)
        if (strcmp(l->jobs[i], job) == 0)
            return (long)i;
    if (nsc_grow(&l->jobs, l->njobs, &l->jobs_cap, sizeof *l->jobs, 8))
        return -1;
    snprintf(l->jobs[l->njobs], sizeof *l->jobs, "%s", job);
    return (long)l->njobs++;
}

static long comm_index(nsc_live *l, uint32_t job, uint64_t id, int32_t nranks)
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

static rank_st *rank_of(comm_st *c, int32_t rank)
{
    if (rank < 0 || rank >= (1 << 20))
        return NULL;
    if (rank >= c->nalloc) {
        int32_t n = c->nranks > rank ? c->nranks : rank + 1;
        rank_st *r = realloc(c->ranks, (size_t)n * sizeof *r);
        if (!r)
            return NULL;
        memset(r + c->nalloc, 0, (size_t)(n - c->nalloc) * sizeof *r);
        c->ranks = r;
        c->nalloc = n;
    }
    return &c->ranks[rank];
}

static long proc_index(nsc_live *l, const char *host, uint32_t pid)
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

static int func_index(comm_st *c, const char *name)
{
    for (int i = 0; i < c->nf; i++)
        if (strcmp(c->f[i].name, name) == 0)
            return i;
    if (c->nf == MAX_FUNCS)
        return -1;
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

static const ctx_map *ctx_of(const proc_st *p, uint16_t index)
{
    for (size_t i = 0; i < p->nctx; i++)
        if (p->ctx[i].index == index)
            return &p->ctx[i];
    return NULL;
}

static int mark_dirty(nsc_live *l, uint32_t comm, int32_t rank, int func)
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

static void observe(nsc_live_hist *h, double s)
{
    int b = 0;
    while (b < NSC_LIVE_HIST_BOUNDS && s > nsc_live_hist_le[b])
        b++;
    h->buckets[b]++;
    h->count++;
    h->sum_s += s;
}

/* The rank moved to collective seq of func (seen at now). */
static int advance(nsc_live *l, uint32_t ci, int32_t rank, const char *func, uint64_t seq,
                   uint64_t now, rank_st **rout, int *fout)
{
    comm_st *c = &l->comms[ci];
    rank_st *r = rank_of(c, rank);
    int f = func_index(c, func);
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
        observe(&c->arrival, now > fs->ring_ns[seq % SEEN_RING]
                                 ? (double)(now - fs->ring_ns[seq % SEEN_RING]) / 1e9 : 0);
    if (!r->has[f] || seq >= r->p[f].seq) {
        r->has[f] = 1;
        r->p[f] = (prog){.seq = seq, .since_ns = now};
        *rout = r;
        return mark_dirty(l, ci, rank, f);
    }
    return 0;
}

static int take_defs(proc_st *p, nsc_live *l, const nsc_batch *b)
{
    long job = job_index(l, b->hdr.proc.job);
    if (job < 0)
        return -1;
    for (size_t i = 0; i < b->nctxs; i++) {
        const nsc_ctx_def *d = &b->ctxs[i];
        long ci = comm_index(l, (uint32_t)job, d->comm_id, d->nranks);
        if (ci < 0 || (!ctx_of(p, d->index) && nsc_grow(&p->ctx, p->nctx, &p->ctx_cap, sizeof *p->ctx, 8)))
            return -1;
        comm_st *c = &l->comms[ci];
        c->nranks = d->nranks;
        snprintf(c->name, sizeof c->name, "%s", d->name);
        rank_st *r = rank_of(c, d->rank);
        if (!r)
            return -1;
        r->seen = 1;
        r->proc = (uint32_t)(p - l->procs) + 1;
        r->pid = p->pid;
        snprintf(r->host, sizeof r->host, "%s", p->host);
        ctx_map *m = (ctx_map *)ctx_of(p, d->index);
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
    return 0;
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
 * (none for an unknown datatype), and done if it is its rank's latest. */
static void complete(nsc_live *l, const pending *q, uint64_t ts_ns)
{
    comm_st *c = &l->comms[q->comm];
    rank_st *r = q->rank < c->nalloc ? &c->ranks[q->rank] : NULL;
    if (r && r->has[q->func] && r->p[q->func].coll_id == q->id)
        r->p[q->func].done = 1;
    if (ts_ns <= q->start_ns)
        return;
    func_st *fs = &c->f[q->func];
    observe(&fs->duration, (double)(ts_ns - q->start_ns) / 1e9);
    if (!q->tsize)
        return;
    nsc_busbw bw = nsc_busbw_rule(fs->name, c->nranks, q->count, q->tsize);
    c->bw_sum += (double)bw.bytes / (double)(ts_ns - q->start_ns) * bw.factor;
    c->bw_n++;
}

static void take_completions(nsc_live *l, proc_st *p, const nsc_batch *b)
{
    for (size_t i = 0; i < b->ncompletions; i++) {
        const pending *q = pending_take(p, b->completions[i].id);
        if (q)
            complete(l, q, b->completions[i].ts_ns);
    }
}

int nsc_live_section(nsc_live *l, const char *agent, const nsc_batch *b, uint64_t now)
{
    long pi = proc_index(l, b->hdr.proc.host, b->hdr.proc.pid);
    if (pi < 0)
        return -1;
    proc_st *p = &l->procs[pi];
    snprintf(p->job, sizeof p->job, "%s", b->hdr.proc.job);
    snprintf(p->agent, sizeof p->agent, "%s", agent);
    p->last_ns = now;
    if (b->has_counters)
        p->counters = b->counters;
    if (take_defs(p, l, b))
        return -1;
    /* Datatype names are looked up when the id changes: looking one up per
     * Coll cost more than the rest of the section. */
    uint16_t dt = 0;
    unsigned dt_size = 0;
    int has_dt = 0;
    l->events += b->nevents;
    const ctx_map *last = NULL;
    for (size_t i = 0; i < b->nevents; i++) {
        const nsc_event *ev = &b->events[i];
        if (!last || last->index != ev->ctx)
            last = ctx_of(p, ev->ctx);
        if (!last)
            continue;
        l->comms[last->comm].events++;
        l->comms[last->comm].last_ns = now;
        if (ev->type != NSC_T_COLL)
            continue;
        rank_st *r = NULL;
        int f = -1;
        if (advance(l, last->comm, last->rank, str_text(p, ev->d.coll.func), ev->d.coll.seq, now, &r, &f))
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
    take_completions(l, p, b);
    return 0;
}

int nsc_live_life(nsc_live *l, const char *agent, const char *host, const nsc_a2c_life *life,
                  uint64_t now)
{
    long pi = proc_index(l, host, life->pid);
    if (pi < 0)
        return -1;
    proc_st *p = &l->procs[pi];
    snprintf(p->job, sizeof p->job, "%s", life->job);
    snprintf(p->agent, sizeof p->agent, "%s", agent);
    if (life->event == NSC_A2C_FINISHED) {
        p->finished = 1;
        return 0;
    }
    if (life->event == NSC_A2C_STARTED)
        p->finished = 0;
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

/* ---- judgements ---- */

static int proc_alive(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return !p->died && now - p->last_ns <= l->cfg.heartbeat_timeout_ns;
}

/* When some rank first went past seq (collector time), or 0 if unknown. */
static uint64_t passed_at(const func_st *fs, uint64_t seq)
{
    uint64_t next = seq + 1;
    return fs->ring_seq[next % SEEN_RING] == next + 1 ? fs->ring_ns[next % SEEN_RING] : 0;
}

/* Lagging (RAS): behind the communicator's furthest rank for longer than lag_ns. */
static int lagging(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now,
                   uint64_t *for_ns)
{
    if (!r->has[f] || r->p[f].seq >= c->f[f].max_seq)
        return 0;
    uint64_t since = passed_at(&c->f[f], r->p[f].seq);
    if (since < r->p[f].since_ns)
        since = r->p[f].since_ns;
    *for_ns = now - since;
    return *for_ns > l->cfg.lag_ns;
}

/* Hung: its last collective is in flight past lag_ns while another rank
 * completed it or went past it. */
static int hung(const nsc_live *l, const comm_st *c, const rank_st *r, int f, uint64_t now)
{
    if (!r->has[f] || r->p[f].done || now - r->p[f].since_ns <= l->cfg.lag_ns)
        return 0;
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *o = &c->ranks[k];
        if (o != r && o->has[f] &&
            (o->p[f].seq > r->p[f].seq || (o->p[f].seq == r->p[f].seq && o->p[f].done)))
            return 1;
    }
    return 0;
}

void nsc_live_counts_get(const nsc_live *l, uint64_t now, nsc_live_counts *out)
{
    memset(out, 0, sizeof *out);
    out->events = l->events;
    out->comms = l->ncomms;
    for (size_t i = 0; i < l->nprocs; i++)
        l->procs[i].finished ? out->procs_finished++
        : proc_alive(l, &l->procs[i], now) ? out->procs_alive++ : out->procs_dead++;
    for (size_t i = 0; i < l->nagents; i++)
        now - l->agents[i].last_ns <= l->cfg.heartbeat_timeout_ns ? out->agents_alive++ : out->agents_dead++;
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        for (int32_t k = 0; k < c->nalloc; k++)
            for (int f = 0; f < c->nf; f++) {
                uint64_t d;
                out->lagging += (uint64_t)lagging(l, c, &c->ranks[k], f, now, &d);
                out->hangs += (uint64_t)hung(l, c, &c->ranks[k], f, now);
            }
    }
}

/* ---- metrics ---- */

/* Lag, lagging, hangs and in-flight of one communicator. */
static void comm_judged(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    o->lag_rank = -1;
    for (int32_t k = 0; k < c->nalloc; k++) {
        const rank_st *r = &c->ranks[k];
        o->ranks_seen += r->seen;
        for (int f = 0; f < c->nf; f++) {
            uint64_t d = 0;
            o->lagging += (uint32_t)lagging(l, c, r, f, now, &d);
            o->hung += (uint32_t)hung(l, c, r, f, now);
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
}

static void comm_stat(const nsc_live *l, const comm_st *c, uint64_t now, nsc_live_comm_stat *o)
{
    memset(o, 0, sizeof *o);
    snprintf(o->job, sizeof o->job, "%s", l->jobs[c->job]);
    snprintf(o->name, sizeof o->name, "%s", c->name);
    o->id = c->id;
    o->nranks = c->nranks;
    o->events = c->events;
    o->bus_bw = c->bw_avg * 1e9;  /* bytes per ns */
    o->arrival = c->arrival;
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
    *out = malloc(want * sizeof **out);
    if (!order || !*out) {
        free(order);
        free(*out);
        *out = NULL;
        return -1;
    }
    for (size_t i = 0; i < l->ncomms; i++)
        order[i] = (recent){l->comms[i].last_ns, i};
    qsort(order, l->ncomms, sizeof *order, most_recent_first);
    for (; *n < want; (*n)++)
        comm_stat(l, &l->comms[order[*n].index], now, &(*out)[*n]);
    free(order);
    return 0;
}

/* ---- JSON ---- */

static const char *reason_name(int reason)
{
    return reason == NSC_A2C_REASON_EXITED ? "exited" : reason == NSC_A2C_REASON_SILENT ? "silent" : "unknown";
}

static const char *proc_state(const nsc_live *l, const proc_st *p, uint64_t now)
{
    return p->finished ? "finished" : p->died ? "dead" : proc_alive(l, p, now) ? "alive" : "silent";
}

static uint64_t per_type_sum(const uint64_t v[NSC_T_COUNT])
{
    uint64_t n = 0;
    for (int t = 0; t < NSC_T_COUNT; t++)
        n += v[t];
    return n;
}

/* A job's drops, as its processes last counted them: events (in total and by
 * type, the types with none left out) and states, which are not events. */
static void json_job_drops(const nsc_live *l, const char *job, FILE *o)
{
    uint64_t by_type[NSC_T_COUNT] = {0}, states = 0;
    for (size_t i = 0; i < l->nprocs; i++)
        if (strcmp(l->procs[i].job, job) == 0) {
            for (int t = 0; t < NSC_T_COUNT; t++)
                by_type[t] += l->procs[i].counters.dropped[t];
            states += l->procs[i].counters.states_dropped;
        }
    fprintf(o, ",\"events_dropped\":%" PRIu64 ",\"states_dropped\":%" PRIu64 ",\"events_dropped_by_type\":{",
            per_type_sum(by_type), states);
    int n = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (by_type[t])
            fprintf(o, "%s\"%s\":%" PRIu64, n++ ? "," : "", nsc_type_name(t), by_type[t]);
    fputc('}', o);
}

static void json_procs(const nsc_live *l, uint64_t now, FILE *o)
{
    fputs("\"processes\":[", o);
    for (size_t i = 0; i < l->nprocs; i++) {
        const proc_st *p = &l->procs[i];
        fprintf(o, "%s{\"host\":", i ? "," : "");
        nsc_json_write_str(o, p->host);
        fprintf(o, ",\"pid\":%" PRIu32 ",\"job\":", p->pid);
        nsc_json_write_str(o, p->job);
        fputs(",\"agent\":", o);
        nsc_json_write_str(o, p->agent);
        fprintf(o, ",\"state\":\"%s\",\"reason\":", proc_state(l, p, now));
        if (p->died)
            fprintf(o, "\"%s\"", reason_name(p->reason));
        else
            fputs("null", o);
        const nsc_counters *c = &p->counters;
        fprintf(o, ",\"last_seen_ns\":%" PRIu64 ",\"events_emitted\":%" PRIu64 ",\"events_dropped\":%" PRIu64
                   ",\"states_emitted\":%" PRIu64 ",\"states_dropped\":%" PRIu64 "}",
                p->last_ns, per_type_sum(c->emitted), per_type_sum(c->dropped), c->states_emitted,
                c->states_dropped);
    }
    fputs("]", o);
}

static void json_agents(const nsc_live *l, uint64_t now, FILE *o)
{
    fputs("\"agents\":[", o);
    for (size_t i = 0; i < l->nagents; i++) {
        const agent_st *a = &l->agents[i];
        fprintf(o, "%s{\"agent\":", i ? "," : "");
        nsc_json_write_str(o, a->id);
        fputs(",\"host\":", o);
        nsc_json_write_str(o, a->host);
        fprintf(o, ",\"state\":\"%s\",\"last_seen_ns\":%" PRIu64 "}",
                now - a->last_ns <= l->cfg.heartbeat_timeout_ns ? "alive" : "dead", a->last_ns);
    }
    fputs("]", o);
}

static void json_rank(const nsc_live *l, const comm_st *c, int32_t k, uint64_t now, FILE *o, int first)
{
    const rank_st *r = &c->ranks[k];
    const proc_st *p = r->proc ? &l->procs[r->proc - 1] : NULL;
    fprintf(o, "%s{\"rank\":%d,\"host\":", first ? "" : ",", k);
    nsc_json_write_str(o, r->host);
    fprintf(o, ",\"pid\":%" PRIu32 ",\"state\":\"%s\",\"collectives\":[", r->pid,
            p ? proc_state(l, p, now) : "unknown");
    int n = 0;
    for (int f = 0; f < c->nf; f++) {
        if (!r->has[f])
            continue;
        uint64_t lag = 0;
        int lg = lagging(l, c, r, f, now, &lag);
        fprintf(o, "%s{\"func\":\"%s\",\"seq\":%" PRIu64 ",\"in_flight\":%s,\"for_ns\":%" PRIu64
                   ",\"lagging\":%s,\"hung\":%s}",
                n++ ? "," : "", c->f[f].name, r->p[f].seq, r->p[f].done ? "false" : "true",
                now - r->p[f].since_ns, lg ? "true" : "false", hung(l, c, r, f, now) ? "true" : "false");
    }
    fputs("]}", o);
}

static void json_comm(const nsc_live *l, const comm_st *c, uint64_t now, FILE *o)
{
    int32_t seen = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        seen += c->ranks[k].seen;
    fprintf(o, "{\"comm\":\"0x%" PRIx64 "\",\"name\":", c->id);
    nsc_json_write_str(o, c->name);
    fprintf(o, ",\"nranks\":%d,\"ranks_seen\":%d,\"events_total\":%" PRIu64
               ",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f,\"funcs\":[",
            c->nranks, seen, c->events, c->rate, c->bw_avg);
    for (int f = 0; f < c->nf; f++)
        fprintf(o, "%s{\"func\":\"%s\",\"max_seq\":%" PRIu64 "}", f ? "," : "", c->f[f].name, c->f[f].max_seq);
    fputs("],\"lagging\":[", o);
    int n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++) {
            uint64_t lag;
            if (lagging(l, c, &c->ranks[k], f, now, &lag))
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"max_seq\":%" PRIu64 ",\"for_ns\":%" PRIu64 "}",
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, c->f[f].max_seq, lag);
        }
    fputs("],\"hangs\":[", o);
    n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        for (int f = 0; f < c->nf; f++)
            if (hung(l, c, &c->ranks[k], f, now))
                fprintf(o, "%s{\"rank\":%d,\"func\":\"%s\",\"seq\":%" PRIu64 ",\"for_ns\":%" PRIu64 "}",
                        n++ ? "," : "", k, c->f[f].name, c->ranks[k].p[f].seq, now - c->ranks[k].p[f].since_ns);
    fputs("],\"ranks\":[", o);
    n = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        if (c->ranks[k].seen)
            json_rank(l, c, k, now, o, n++ == 0);
    fputs("]}", o);
}

int nsc_live_status_json(const nsc_live *l, uint64_t now, FILE *o)
{
    nsc_live_counts cn;
    nsc_live_counts_get(l, now, &cn);
    fprintf(o, "{\"now_ns\":%" PRIu64 ",\"events_total\":%" PRIu64 ",\"hangs\":%" PRIu64
               ",\"lagging\":%" PRIu64 ",",
            now, l->events, cn.hangs, cn.lagging);
    json_agents(l, now, o);
    fputc(',', o);
    json_procs(l, now, o);
    fputs(",\"jobs\":[", o);
    for (size_t j = 0; j < l->njobs; j++) {
        fprintf(o, "%s{\"job\":", j ? "," : "");
        nsc_json_write_str(o, l->jobs[j]);
        json_job_drops(l, l->jobs[j], o);
        fputs(",\"comms\":[", o);
        int n = 0;
        for (size_t i = 0; i < l->ncomms; i++)
            if (l->comms[i].job == j) {
                if (n++)
                    fputc(',', o);
                json_comm(l, &l->comms[i], now, o);
            }
        fputs("]}", o);
    }
    fputs("]}\n", o);
    return ferror(o) ? -1 : 0;
}

int nsc_live_summary_json(const nsc_live *l, uint64_t now, FILE *o)
{
    nsc_live_counts cn;
    nsc_live_counts_get(l, now, &cn);
    double rate = 0;
    for (size_t i = 0; i < l->ncomms; i++)
        rate += l->comms[i].rate;
    fprintf(o, "{\"now_ns\":%" PRIu64 ",\"events_total\":%" PRIu64 ",\"events_per_s\":%.1f"
               ",\"processes_alive\":%" PRIu64 ",\"processes_dead\":%" PRIu64
               ",\"processes_finished\":%" PRIu64 ",\"agents_alive\":%" PRIu64
               ",\"agents_dead\":%" PRIu64 ",\"hangs\":%" PRIu64 ",\"lagging\":%" PRIu64 ",\"comms\":[",
            now, l->events, rate, cn.procs_alive, cn.procs_dead, cn.procs_finished, cn.agents_alive,
            cn.agents_dead,
            cn.hangs, cn.lagging);
    for (size_t i = 0; i < l->ncomms; i++) {
        const comm_st *c = &l->comms[i];
        fprintf(o, "%s{\"job\":", i ? "," : "");
        nsc_json_write_str(o, l->jobs[c->job]);
        fprintf(o, ",\"comm\":\"0x%" PRIx64 "\",\"events_per_s\":%.1f,\"bus_bw_gbps\":%.3f}", c->id,
                c->rate, c->bw_avg);
    }
    fputs("]}", o);
    return ferror(o) ? -1 : 0;
}

/* ---- persistence ---- */

int nsc_live_take_progress(nsc_live *l, nsc_live_progress_fn fn, void *arg)
{
    int rc = 0;
    size_t i = 0;
    for (; i < l->ndirty && !rc; i++) {
        const dirty *d = &l->dirty[i];
        const comm_st *c = &l->comms[d->comm];
        const prog *p = &c->ranks[d->rank].p[d->func];
        nsc_store_progress sp = {.comm_id = c->id, .rank = d->rank, .seq = p->seq, .ref_ns = p->since_ns};
        snprintf(sp.job, sizeof sp.job, "%s", l->jobs[c->job]);
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

static int from_progress(void *arg, const nsc_store_progress *sp)
{
    rebuild *rb = arg;
    nsc_live *l = rb->l;
    long job = job_index(l, sp->job);
    uint32_t jid;
    int32_t nranks = 0;
    nsc_store_comm *cs = NULL;
    size_t n = 0;
    if (job < 0)
        return -1;
    if (nsc_store_job_id(rb->rd, sp->job, &jid) == 0 && nsc_store_comms(rb->rd, jid, &cs, &n) == 0)
        for (size_t i = 0; i < n; i++)
            nranks = cs[i].comm_id == sp->comm_id ? cs[i].nranks : nranks;
    free(cs);
    long ci = comm_index(l, (uint32_t)job, sp->comm_id, nranks);
    rank_st *r = NULL;
    int f = -1;
    if (ci < 0 || advance(l, (uint32_t)ci, sp->rank, sp->func, sp->seq, sp->ref_ns, &r, &f))
        return -1;
    nsc_store_rank ri;
    r = rank_of(&l->comms[ci], sp->rank);
    if (r && nsc_store_rank_info(rb->rd, jid, sp->comm_id, sp->rank, &ri) == 0) {
        long pi = proc_index(l, ri.host, ri.pid);
        if (pi < 0)
            return -1;
        snprintf(l->procs[pi].job, sizeof l->procs[pi].job, "%s", sp->job);
        if (l->procs[pi].last_ns < sp->ref_ns)
            l->procs[pi].last_ns = sp->ref_ns;
        r->proc = (uint32_t)pi + 1;
        r->pid = ri.pid;
        snprintf(r->host, sizeof r->host, "%s", ri.host);
    }
    return 0;
}

static int from_life(void *arg, const nsc_store_life *sl)
{
    rebuild *rb = arg;
    nsc_a2c_life life = {.event = sl->event, .reason = sl->reason, .pid = sl->pid,
                         .ts_ns = sl->ts_ns, .last_batch_seq = sl->last_batch_seq};
    snprintf(life.job, sizeof life.job, "%s", sl->job);
    return nsc_live_life(rb->l, sl->agent, sl->host, &life, sl->ref_ns) ||
           nsc_live_agent_seen(rb->l, sl->agent, sl->host, sl->ref_ns);
}

int nsc_live_from_store(nsc_store_reader *rd, const nsc_live_cfg *cfg, uint64_t now,
                        nsc_live **out)
{
    nsc_live *l = nsc_live_new(cfg);
    if (!l)
        return NSC_STORE_ENOMEM;
    rebuild rb = {l, rd};
    int rc = nsc_store_progresses(rd, from_progress, &rb);
    if (!rc)
        rc = nsc_store_lives(rd, from_life, &rb);
    l->ndirty = 0;
    /* A stored in-flight state is unknown: count every stored collective as done. */
    for (size_t i = 0; i < l->ncomms; i++)
        for (int32_t k = 0; k < l->comms[i].nalloc; k++)
            for (int f = 0; f < MAX_FUNCS; f++)
                l->comms[i].ranks[k].p[f].done = 1;
    if (rc) {
        nsc_live_free(l);
        return rc;
    }
    l->tick_ns = now;
    *out = l;
    return 0;
}
