/* live_snap.c: the live state as a snapshot (live.h): a compact binary
 * serialization that another collector decodes into its own time base.
 *
 * Layout (big-endian, bytes.h): magic, version, the writer's wall clock,
 * totals and table sizes, then jobs, agents, processes and communicators
 * with their functions and seen ranks. Times are stored as ages before the
 * snapshot's `now` (time 0, "never", as NEVER); the reader places them at
 * its own monotonic `now` minus the wall-clock time since the snapshot was
 * written. A process's contexts,
 * strings and pending Colls are not stored: they serve ingest, not reads.
 * The decoder checks every count, index and length against the input and
 * the live state's limits before it allocates. */
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "live_int.h"

#define SNAP_MAGIC 0x4e53434cu  /* "NSCL" */
#define SNAP_VERSION 4u  /* 2: a process's finish time; 3: its self-cost guard; 4: a communicator's figures' source */
#define RANKS_MAX (1 << 20)     /* ranks of a communicator, as nsc_live_rank in live.c */
/* Rank slots (each communicator's nranks, or more) of one snapshot in all:
 * a few bytes of input must not make the reader allocate gigabytes. */
#define SLOTS_MAX (1 << 19)
/* Communicators of one snapshot: each takes 66 KB in memory (its functions'
 * rings of first-seen times) for 190 bytes of input at least. */
#define COMMS_MAX 4096
/* The fewest bytes each item takes, so a count cannot exceed its input. */
#define HIST_BYTES ((NSC_LIVE_HIST_BOUNDS + 3) * 8)
#define MIN_AGENT (1 + 1 + 8)
#define MIN_PROC (3 + 4 + 8 + 3 + 8 + 8 + NSC_T_COUNT * 16 + 16)
#define MIN_COMM (4 + 8 + 4 + 1 + 8 + 8 + HIST_BYTES + 8 + 8 + 4 + 1 + 4)
#define MIN_RANK (4 + 4 + 1 + 4 + 4)

typedef struct obuf {
    uint8_t *p;
    size_t len, cap;
    int failed;
} obuf;

static uint8_t *room(obuf *b, size_t n)
{
    if (b->failed)
        return NULL;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n)
            cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return NULL;
        }
        b->p = p, b->cap = cap;
    }
    uint8_t *at = b->p + b->len;
    b->len += n;
    return at;
}

static void put8(obuf *b, uint8_t v)
{
    uint8_t *at = room(b, 1);
    if (at)
        *at = v;
}

static void put32(obuf *b, uint32_t v)
{
    uint8_t *at = room(b, 4);
    if (at)
        nsc_put_be32(at, v);
}

static void put64(obuf *b, uint64_t v)
{
    uint8_t *at = room(b, 8);
    if (at)
        nsc_put_be64(at, v);
}

/* A fixed char array (cap bytes, NUL-terminated by snprintf). */
static void put_text(obuf *b, const char *s, size_t cap)
{
    size_t n = strnlen(s, cap - 1);
    put8(b, (uint8_t)n);
    uint8_t *at = room(b, n);
    if (at)
        memcpy(at, s, n);
}

#define NEVER UINT64_MAX  /* the age of time 0: not happened (a death, an event) */

/* How long before now t was (0 for a time after it). */
static void put_age(obuf *b, uint64_t now, uint64_t t)
{
    put64(b, t == 0 ? NEVER : now > t ? now - t : 0);
}

static void put_hist(obuf *b, const nsc_live_hist *h)
{
    for (int i = 0; i <= NSC_LIVE_HIST_BOUNDS; i++)
        put64(b, h->buckets[i]);
    put64(b, h->count);
    put64(b, nsc_double_bits(h->sum_s));
}

static void put_proc(obuf *b, const proc_st *p, uint64_t now)
{
    put_text(b, p->host, sizeof p->host);
    put_text(b, p->job, sizeof p->job);
    put_text(b, p->agent, sizeof p->agent);
    put32(b, p->pid);
    put_age(b, now, p->last_ns);
    put8(b, (uint8_t)p->died);
    put8(b, (uint8_t)p->reason);
    put8(b, (uint8_t)p->finished);
    put_age(b, now, p->died_ns);
    put_age(b, now, p->finished_ns);
    for (int t = 0; t < NSC_T_COUNT; t++) {
        put64(b, p->counters.emitted[t]);
        put64(b, p->counters.dropped[t]);
    }
    put64(b, p->counters.states_emitted);
    put64(b, p->counters.states_dropped);
    put64(b, p->counters.cost_ns);
    put64(b, p->counters.coll_ns);
    put64(b, p->counters.shed_mask);
    put64(b, p->counters.shed_changes);
    put64(b, p->counters.shed_events);
    put_age(b, now, p->shed_ns);
}

static void put_func(obuf *b, const func_st *f, uint64_t now)
{
    uint32_t used = 0;
    for (int i = 0; i < SEEN_RING; i++)
        used += f->ring_seq[i] != 0;
    put_text(b, f->name, sizeof f->name);
    put64(b, f->max_seq);
    put_hist(b, &f->duration);
    put32(b, used);
    for (uint32_t i = 0; i < SEEN_RING; i++)
        if (f->ring_seq[i]) {
            put64(b, f->ring_seq[i] - 1);
            put_age(b, now, f->ring_ns[i]);
        }
}

static void put_rank(obuf *b, const rank_st *r, int32_t index, int nf, uint64_t now)
{
    uint32_t has = 0;
    for (int f = 0; f < nf; f++)
        has |= (uint32_t)(r->has[f] != 0) << f;
    put32(b, (uint32_t)index);
    put32(b, r->proc);
    put_text(b, r->host, sizeof r->host);
    put32(b, r->pid);
    put32(b, has);
    for (int f = 0; f < nf; f++)
        if (r->has[f]) {
            put64(b, r->p[f].seq);
            put64(b, r->p[f].coll_id);
            put_age(b, now, r->p[f].since_ns);
            put8(b, (uint8_t)r->p[f].done);
        }
}

static void put_comm(obuf *b, const comm_st *c, uint64_t now)
{
    uint32_t seen = 0;
    for (int32_t k = 0; k < c->nalloc; k++)
        seen += c->ranks[k].seen != 0;
    put32(b, c->job);
    put64(b, c->id);
    put32(b, (uint32_t)c->nranks);
    put_text(b, c->name, sizeof c->name);
    put64(b, c->events);
    put_age(b, now, c->last_ns);
    put_hist(b, &c->arrival);
    put64(b, nsc_double_bits(c->rate));
    put64(b, nsc_double_bits(c->bw_avg));
    put8(b, (uint8_t)(c->from_ledger != 0));
    put32(b, (uint32_t)c->nalloc);
    put8(b, (uint8_t)c->nf);
    for (int f = 0; f < c->nf; f++)
        put_func(b, &c->f[f], now);
    put32(b, seen);
    for (int32_t k = 0; k < c->nalloc; k++)
        if (c->ranks[k].seen)
            put_rank(b, &c->ranks[k], k, c->nf, now);
}

int nsc_live_snapshot(const nsc_live *l, uint64_t now, uint64_t wall_ns, uint8_t **out, size_t *len)
{
    obuf b = {0};
    put32(&b, SNAP_MAGIC);
    put32(&b, SNAP_VERSION);
    put64(&b, wall_ns);
    put64(&b, l->events);
    put32(&b, (uint32_t)l->njobs);
    put32(&b, (uint32_t)l->nagents);
    put32(&b, (uint32_t)l->nprocs);
    put32(&b, (uint32_t)l->ncomms);
    for (size_t i = 0; i < l->njobs; i++)
        put_text(&b, l->jobs[i].name, sizeof l->jobs->name);
    for (size_t i = 0; i < l->nagents; i++) {
        put_text(&b, l->agents[i].id, sizeof l->agents[i].id);
        put_text(&b, l->agents[i].host, sizeof l->agents[i].host);
        put_age(&b, now, l->agents[i].last_ns);
    }
    for (size_t i = 0; i < l->nprocs; i++)
        put_proc(&b, &l->procs[i], now);
    for (size_t i = 0; i < l->ncomms; i++)
        put_comm(&b, &l->comms[i], now);
    if (b.failed) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *len = b.len;
    return 0;
}

/* ---- decoding ---- */

typedef struct reader {
    nsc_rbuf r;
    uint64_t shift;   /* reader's now minus the wall time since the snapshot */
    const char *why;  /* first failure */
} reader;

static int bad(reader *rd, const char *why)
{
    if (!rd->why)
        rd->why = why;
    return -1;
}

static uint8_t get8(reader *rd)
{
    const uint8_t *p = nsc_rtake(&rd->r, 1);
    return p ? *p : 0;
}

static void get_text(reader *rd, char *dst, size_t cap)
{
    size_t n = get8(rd);
    const uint8_t *p = n < cap ? nsc_rtake(&rd->r, n) : NULL;
    if (n >= cap)
        bad(rd, "a name is too long");
    if (!p)
        n = 0;
    memcpy(dst, p ? (const char *)p : "", n);
    dst[n] = 0;
}

/* An age into the reader's time base (0 if before its clock's start, or never). */
static uint64_t get_time(reader *rd)
{
    uint64_t age = nsc_r64(&rd->r);
    return age != NEVER && age < rd->shift ? rd->shift - age : 0;
}

static void get_hist(reader *rd, nsc_live_hist *h)
{
    for (int i = 0; i <= NSC_LIVE_HIST_BOUNDS; i++)
        h->buckets[i] = nsc_r64(&rd->r);
    h->count = nsc_r64(&rd->r);
    h->sum_s = nsc_rdbl(&rd->r);
}

/* A count of items of at least min_bytes each: no more than the input holds. */
static size_t get_count(reader *rd, size_t min_bytes)
{
    uint32_t n = nsc_r32(&rd->r);
    if ((size_t)(rd->r.end - rd->r.p) / min_bytes < n) {
        bad(rd, "a count is larger than the snapshot");
        return 0;
    }
    return n;
}

static void get_proc(reader *rd, proc_st *p)
{
    get_text(rd, p->host, sizeof p->host);
    get_text(rd, p->job, sizeof p->job);
    get_text(rd, p->agent, sizeof p->agent);
    p->pid = nsc_r32(&rd->r);
    p->last_ns = get_time(rd);
    p->died = get8(rd) != 0;
    p->reason = get8(rd);
    p->finished = get8(rd) != 0;
    p->died_ns = get_time(rd);
    p->finished_ns = get_time(rd);
    for (int t = 0; t < NSC_T_COUNT; t++) {
        p->counters.emitted[t] = nsc_r64(&rd->r);
        p->counters.dropped[t] = nsc_r64(&rd->r);
    }
    p->counters.states_emitted = nsc_r64(&rd->r);
    p->counters.states_dropped = nsc_r64(&rd->r);
    p->counters.cost_ns = nsc_r64(&rd->r);
    p->counters.coll_ns = nsc_r64(&rd->r);
    p->counters.shed_mask = nsc_r64(&rd->r);
    p->counters.shed_changes = nsc_r64(&rd->r);
    p->counters.shed_events = nsc_r64(&rd->r);
    p->shed_ns = get_time(rd);
}

static int get_func(reader *rd, func_st *f)
{
    get_text(rd, f->name, sizeof f->name);
    f->max_seq = nsc_r64(&rd->r);
    get_hist(rd, &f->duration);
    uint32_t used = nsc_r32(&rd->r);
    if (used > SEEN_RING)
        return bad(rd, "a function's ring is too long");
    for (uint32_t i = 0; i < used && !rd->r.bad; i++) {
        uint64_t seq = nsc_r64(&rd->r), at = get_time(rd);
        if (seq == UINT64_MAX)
            return bad(rd, "a ring entry's seq is out of range");
        f->ring_seq[seq % SEEN_RING] = seq + 1;
        f->ring_ns[seq % SEEN_RING] = at;
    }
    return 0;
}

static int get_rank(reader *rd, comm_st *c, size_t nprocs)
{
    uint32_t k = nsc_r32(&rd->r), proc = nsc_r32(&rd->r);
    if (rd->r.bad || k >= (uint32_t)c->nalloc || proc > nprocs || c->ranks[k].seen)
        return bad(rd, "a rank's index or process is out of range");
    rank_st *r = &c->ranks[k];
    r->seen = 1;
    r->proc = proc;
    get_text(rd, r->host, sizeof r->host);
    r->pid = nsc_r32(&rd->r);
    uint32_t has = nsc_r32(&rd->r);
    if (has >> c->nf)
        return bad(rd, "a rank has progress of an unknown function");
    for (int f = 0; f < c->nf; f++)
        if (has >> f & 1) {
            r->has[f] = 1;
            r->p[f].seq = nsc_r64(&rd->r);
            r->p[f].coll_id = nsc_r64(&rd->r);
            r->p[f].since_ns = get_time(rd);
            r->p[f].done = get8(rd) != 0;
            r->p[f].known_ns = rd->shift;
        }
    return 0;
}

static int get_comm(reader *rd, comm_st *c, size_t njobs, size_t nprocs, size_t *slots)
{
    c->job = nsc_r32(&rd->r);
    c->id = nsc_r64(&rd->r);
    c->nranks = (int32_t)nsc_r32(&rd->r);
    get_text(rd, c->name, sizeof c->name);
    c->events = nsc_r64(&rd->r);
    c->tick_events = c->events;
    c->last_ns = get_time(rd);
    get_hist(rd, &c->arrival);
    c->rate = nsc_rdbl(&rd->r);
    c->bw_avg = nsc_rdbl(&rd->r);
    c->from_ledger = get8(rd) != 0;
    uint32_t nalloc = nsc_r32(&rd->r);
    c->nf = get8(rd);
    if (rd->r.bad || c->job >= njobs || c->nranks < 0 || c->nranks > RANKS_MAX || nalloc > RANKS_MAX ||
        c->nf > MAX_FUNCS)
        return bad(rd, "a communicator's job, ranks or functions are out of range");
    *slots += nalloc > (uint32_t)c->nranks ? nalloc : (uint32_t)c->nranks;
    if (*slots > SLOTS_MAX)
        return bad(rd, "more ranks than a snapshot may hold");
    if (c->nf && !(c->f = calloc((size_t)c->nf, sizeof *c->f)))
        return bad(rd, "out of memory");
    c->fcap = (size_t)c->nf;
    for (int f = 0; f < c->nf; f++)
        if (get_func(rd, &c->f[f]))
            return -1;
    size_t seen = get_count(rd, MIN_RANK);
    if (rd->why || seen > nalloc)
        return bad(rd, "a communicator has more ranks seen than ranks");
    if (nalloc && !(c->ranks = calloc(nalloc, sizeof *c->ranks)))
        return bad(rd, "out of memory");
    c->nalloc = (int32_t)nalloc;
    for (size_t i = 0; i < seen && !rd->r.bad; i++)
        if (get_rank(rd, c, nprocs))
            return -1;
    return 0;
}

/* The tables' sizes, then room for them (zeroed). */
static int get_tables(reader *rd, nsc_live *l)
{
    l->events = nsc_r64(&rd->r);
    size_t nj = get_count(rd, 1), na = get_count(rd, MIN_AGENT), np = get_count(rd, MIN_PROC),
           nc = get_count(rd, MIN_COMM);
    if (rd->why || rd->r.bad)
        return bad(rd, "the header is cut short");
    if (nc > COMMS_MAX)
        return bad(rd, "more communicators than a snapshot may hold");
    if ((nj && !(l->jobs = calloc(nj, sizeof *l->jobs))) || (na && !(l->agents = calloc(na, sizeof *l->agents))) ||
        (np && !(l->procs = calloc(np, sizeof *l->procs))) || (nc && !(l->comms = calloc(nc, sizeof *l->comms))))
        return bad(rd, "out of memory");
    l->jobs_cap = l->njobs = nj, l->agents_cap = l->nagents = na;
    l->procs_cap = l->nprocs = np, l->comms_cap = l->ncomms = nc;
    return 0;
}

static int get_all(reader *rd, nsc_live *l)
{
    if (get_tables(rd, l))
        return -1;
    for (size_t i = 0; i < l->njobs; i++)
        get_text(rd, l->jobs[i].name, sizeof l->jobs->name);
    for (size_t i = 0; i < l->nagents; i++) {
        get_text(rd, l->agents[i].id, sizeof l->agents[i].id);
        get_text(rd, l->agents[i].host, sizeof l->agents[i].host);
        l->agents[i].last_ns = get_time(rd);
    }
    for (size_t i = 0; i < l->nprocs; i++)
        get_proc(rd, &l->procs[i]);
    size_t slots = 0;
    for (size_t i = 0; i < l->ncomms && !rd->why; i++)
        if (get_comm(rd, &l->comms[i], l->njobs, l->nprocs, &slots))
            return -1;
    if (rd->why || rd->r.bad)
        return bad(rd, "cut short");
    return rd->r.p != rd->r.end ? bad(rd, "bytes after its end") : 0;
}

int nsc_live_from_snapshot(const void *buf, size_t len, const nsc_live_cfg *cfg, uint64_t now,
                           uint64_t wall_now_ns, nsc_live **out, const char **why)
{
    reader rd = {.r = {buf, (const uint8_t *)buf + len, 0}};
    *out = NULL;
    *why = NULL;
    uint32_t magic = nsc_r32(&rd.r), version = nsc_r32(&rd.r);
    uint64_t wall = nsc_r64(&rd.r);
    if (rd.r.bad || magic != SNAP_MAGIC || version != SNAP_VERSION) {
        *why = rd.r.bad ? "cut short" : magic != SNAP_MAGIC ? "not a live snapshot" : "an unknown version";
        return -1;
    }
    /* A snapshot from the future (another host's clock ahead) counts as now. */
    uint64_t since = wall_now_ns > wall ? wall_now_ns - wall : 0;
    rd.shift = now > since ? now - since : 0;
    nsc_live *l = nsc_live_new(cfg);
    if (!l) {
        *why = "out of memory";
        return -1;
    }
    if (get_all(&rd, l)) {
        *why = rd.why;
        nsc_live_free(l);
        return -1;
    }
    l->tick_ns = now;
    *out = l;
    return 0;
}
