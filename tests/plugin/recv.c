/* recv.c: the test receiver's core (see recv.h). */
#include "recv.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct str_ent {
    nsc_str id;
    char text[64];
} str_ent;

typedef struct stream {
    uint32_t pid;
    uint64_t next_seq;
    char host[64], job[64];
    nsc_counters counters;
    uint64_t links_unresolved; /* parent ids not found in this stream */
    nsc_ctx_def *ctx;
    size_t nctx;
    str_ent *strs;
    size_t nstrs;
} stream;

typedef struct rec_ev {
    nsc_event ev;
    uint32_t stream;
} rec_ev;

typedef struct rec_ref { /* a state or completion: what it refers to */
    uint64_t id;
    uint32_t stream;
    uint8_t state;       /* states only */
    nsc_completion done; /* completions only */
} rec_ref;

#define VEC(T) struct { T *v; size_t n, cap; }
#define VEC_PUSH(vec, x)                                                                   \
    do {                                                                                   \
        if ((vec).n == (vec).cap) {                                                        \
            (vec).cap = (vec).cap ? (vec).cap * 2 : 64;                                    \
            (vec).v = realloc((vec).v, (vec).cap * sizeof *(vec).v);                       \
            if (!(vec).v)                                                                  \
                abort();                                                                   \
        }                                                                                  \
        (vec).v[(vec).n++] = (x);                                                          \
    } while (0)

struct nsc_recv {
    VEC(stream) streams;
    VEC(rec_ev) events;
    VEC(rec_ref) states;
    VEC(rec_ref) completions;
    VEC(nsc_recv_rank) ranks;
    uint64_t batches, bad_batches, states_apart;
    uint64_t clock_err_ns;
    uint64_t *ids;  /* scratch: a batch's event ids, sorted */
    size_t ids_cap;
    size_t *index; /* hash of (stream, id) -> events position + 1 */
    size_t index_cap;
};

nsc_recv *nsc_recv_new(void)
{
    nsc_recv *r = calloc(1, sizeof *r);
    if (!r)
        abort();
    return r;
}

void nsc_recv_free(nsc_recv *r)
{
    for (size_t i = 0; i < r->streams.n; i++) {
        free(r->streams.v[i].ctx);
        free(r->streams.v[i].strs);
    }
    free(r->streams.v);
    free(r->events.v);
    free(r->states.v);
    free(r->completions.v);
    free(r->ranks.v);
    free(r->index);
    free(r->ids);
    free(r);
}

/* The stream a batch belongs to: the pid's latest, or a new one at seq 0. */
static uint32_t stream_of(nsc_recv *r, const nsc_batch_hdr *h)
{
    for (size_t i = r->streams.n; i-- > 0;) {
        stream *s = &r->streams.v[i];
        if (s->pid == h->proc.pid && h->seq != 0) {
            s->next_seq = h->seq + 1;
            return (uint32_t)i;
        }
        if (s->pid == h->proc.pid)
            break;
    }
    stream s = {.pid = h->proc.pid, .next_seq = h->seq + 1};
    memcpy(s.host, h->proc.host, sizeof s.host);
    memcpy(s.job, h->proc.job, sizeof s.job);
    VEC_PUSH(r->streams, s);
    return (uint32_t)(r->streams.n - 1);
}

static void add_defs(stream *s, const nsc_batch *b)
{
    for (size_t i = 0; i < b->nctxs; i++) {
        size_t k = 0;
        while (k < s->nctx && s->ctx[k].index != b->ctxs[i].index)
            k++;
        if (k == s->nctx) {
            s->ctx = realloc(s->ctx, (s->nctx + 1) * sizeof *s->ctx);
            if (!s->ctx)
                abort();
            s->nctx++;
        }
        s->ctx[k] = b->ctxs[i];
    }
    for (size_t i = 0; i < b->nstrs; i++) {
        size_t k = 0;
        while (k < s->nstrs && s->strs[k].id != b->strs[i].id)
            k++;
        if (k == s->nstrs) {
            s->strs = realloc(s->strs, (s->nstrs + 1) * sizeof *s->strs);
            if (!s->strs)
                abort();
            s->nstrs++;
        }
        s->strs[k].id = b->strs[i].id;
        memcpy(s->strs[k].text, b->strs[i].text, sizeof s->strs[k].text);
    }
}

/* Counters are cumulative: keep the largest (the latest) per stream. */
static void take_counters(stream *s, const nsc_counters *c)
{
    uint64_t old = 0, new = 0;
    for (int t = 0; t < NSC_T_COUNT; t++) {
        old += s->counters.emitted[t];
        new += c->emitted[t];
    }
    if (new + c->states_emitted + c->bad_handles >=
        old + s->counters.states_emitted + s->counters.bad_handles)
        s->counters = *c;
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* States whose event is not in their batch: no receiver can join them. */
static void count_apart(nsc_recv *r, const nsc_batch *b)
{
    if (!b->nevents) {
        r->states_apart += b->nstates;
        return;
    }
    if (b->nevents > r->ids_cap) {
        r->ids_cap = b->nevents;
        r->ids = realloc(r->ids, r->ids_cap * sizeof *r->ids);
        if (!r->ids)
            abort();
    }
    for (size_t i = 0; i < b->nevents; i++)
        r->ids[i] = b->events[i].id;
    qsort(r->ids, b->nevents, sizeof *r->ids, by_u64);
    for (size_t i = 0; i < b->nstates; i++)
        r->states_apart += !bsearch(&b->states[i].id, r->ids, b->nevents, sizeof *r->ids, by_u64);
}

int nsc_recv_batch(nsc_recv *r, const void *buf, size_t len)
{
    nsc_batch b;
    int rc = nsc_batch_decode(buf, len, NULL, &b);
    if (rc != 0) {
        r->bad_batches++;
        return rc;
    }
    r->batches++;
    if (b.hdr.clock_err_ns > r->clock_err_ns)
        r->clock_err_ns = b.hdr.clock_err_ns;
    uint32_t si = stream_of(r, &b.hdr);
    stream *s = &r->streams.v[si];
    add_defs(s, &b);
    if (b.has_counters)
        take_counters(s, &b.counters);
    count_apart(r, &b);
    for (size_t i = 0; i < b.nevents; i++)
        VEC_PUSH(r->events, ((rec_ev){.ev = b.events[i], .stream = si}));
    for (size_t i = 0; i < b.nstates; i++)
        VEC_PUSH(r->states,
                 ((rec_ref){.id = b.states[i].id, .stream = si, .state = b.states[i].state}));
    for (size_t i = 0; i < b.ncompletions; i++)
        VEC_PUSH(r->completions,
                 ((rec_ref){.id = b.completions[i].id, .stream = si, .done = b.completions[i]}));
    nsc_batch_release(&b);
    return 0;
}

size_t nsc_recv_nevents(const nsc_recv *r)
{
    return r->events.n;
}

size_t nsc_recv_nstates(const nsc_recv *r)
{
    return r->states.n;
}

/* ---- resolution ------------------------------------------------------------ */

static size_t hash_key(uint32_t stream, uint64_t id, size_t cap)
{
    uint64_t k = (id ^ ((uint64_t)stream << 52)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(k >> 20) & (cap - 1);
}

/* Ids are unique within a stream while live; a later event with the same id
 * (slot reuse) replaces the earlier one in the index. */
static void build_index(nsc_recv *r)
{
    free(r->index);
    r->index_cap = 64;
    while (r->index_cap < r->events.n * 2)
        r->index_cap *= 2;
    r->index = calloc(r->index_cap, sizeof *r->index);
    if (!r->index)
        abort();
    for (size_t i = 0; i < r->events.n; i++) {
        const rec_ev *e = &r->events.v[i];
        size_t h = hash_key(e->stream, e->ev.id, r->index_cap);
        while (r->index[h]) {
            const rec_ev *o = &r->events.v[r->index[h] - 1];
            if (o->stream == e->stream && o->ev.id == e->ev.id)
                break;
            h = (h + 1) & (r->index_cap - 1);
        }
        r->index[h] = i + 1;
    }
}

static const rec_ev *lookup(const nsc_recv *r, uint32_t stream, uint64_t id)
{
    for (size_t h = hash_key(stream, id, r->index_cap); r->index[h];
         h = (h + 1) & (r->index_cap - 1)) {
        const rec_ev *o = &r->events.v[r->index[h] - 1];
        if (o->stream == stream && o->ev.id == id)
            return o;
    }
    return NULL;
}

static nsc_recv_rank *rank_of(nsc_recv *r, const rec_ev *e)
{
    if (e->ev.flags & NSC_EVF_FOREIGN)
        return NULL;
    const stream *s = &r->streams.v[e->stream];
    uint64_t comm = 0;
    for (size_t k = 0; k < s->nctx; k++)
        if (s->ctx[k].index == e->ev.ctx)
            comm = s->ctx[k].comm_id;
    for (size_t i = 0; i < r->ranks.n; i++)
        if (r->ranks.v[i].comm_id == comm && r->ranks.v[i].rank == e->ev.rank)
            return &r->ranks.v[i];
    VEC_PUSH(r->ranks, ((nsc_recv_rank){.comm_id = comm, .rank = e->ev.rank}));
    return &r->ranks.v[r->ranks.n - 1];
}

static void count_event(nsc_recv *r, const rec_ev *e, nsc_recv_totals *t)
{
    const nsc_event *ev = &e->ev;
    nsc_recv_rank *rk = rank_of(r, e);
    int folded = ev->type == NSC_T_KERNEL_CH && ev->d.kernel_ch.ptimer_stop_ns;
    t->events[ev->type]++;
    t->states[NSC_S_KERNEL_CH_STOP] += folded;
    t->open_events += !!(ev->flags & NSC_EVF_OPEN);
    if (ev->flags & NSC_EVF_FOREIGN)
        t->foreign[ev->type]++;
    if (rk) {
        rk->events[ev->type]++;
        rk->open_events += !!(ev->flags & NSC_EVF_OPEN);
        rk->states[NSC_S_KERNEL_CH_STOP] += folded;
    }
    if (ev->parent) {
        bool found = lookup(r, e->stream, ev->parent) != NULL;
        t->links++;
        t->links_resolved += found;
        r->streams.v[e->stream].links_unresolved += !found;
    }
}

void nsc_recv_finish(nsc_recv *r, nsc_recv_totals *t)
{
    memset(t, 0, sizeof *t);
    r->ranks.n = 0;
    for (size_t i = 0; i < r->streams.n; i++)
        r->streams.v[i].links_unresolved = 0;
    build_index(r);
    t->batches = r->batches;
    t->bad_batches = r->bad_batches;
    t->states_apart = r->states_apart;
    t->clock_err_ns = r->clock_err_ns;
    t->streams = r->streams.n;
    for (size_t i = 0; i < r->events.n; i++)
        count_event(r, &r->events.v[i], t);
    for (size_t i = 0; i < r->states.n; i++) {
        const rec_ref *s = &r->states.v[i];
        const rec_ev *e = lookup(r, s->stream, s->id);
        nsc_recv_rank *rk = e ? rank_of(r, e) : NULL;
        t->states[s->state]++;
        t->states_unmatched += !e;
        if (rk)
            rk->states[s->state]++;
    }
    for (size_t i = 0; i < r->completions.n; i++) {
        const rec_ref *c = &r->completions.v[i];
        const rec_ev *e = lookup(r, c->stream, c->id);
        nsc_recv_rank *rk = e ? rank_of(r, e) : NULL;
        t->completions++;
        if (rk)
            rk->completions++;
    }
    for (size_t i = 0; i < r->streams.n; i++) {
        const nsc_counters *c = &r->streams.v[i].counters;
        for (int k = 0; k < NSC_T_COUNT; k++) {
            t->counters.emitted[k] += c->emitted[k];
            t->counters.dropped[k] += c->dropped[k];
            t->counters.completions_emitted[k] += c->completions_emitted[k];
            t->counters.completions_dropped[k] += c->completions_dropped[k];
        }
        t->counters.states_emitted += c->states_emitted;
        t->counters.states_dropped += c->states_dropped;
        t->counters.bad_handles += c->bad_handles;
        t->counters.cost_ns += c->cost_ns;
        t->counters.coll_ns += c->coll_ns;
        t->counters.shed_mask |= c->shed_mask;
        t->counters.shed_changes += c->shed_changes;
        t->counters.shed_events += c->shed_events;
    }
}

size_t nsc_recv_nranks(const nsc_recv *r)
{
    return r->ranks.n;
}

const nsc_recv_rank *nsc_recv_rank_at(const nsc_recv *r, size_t i)
{
    return i < r->ranks.n ? &r->ranks.v[i] : NULL;
}

const nsc_event *nsc_recv_find(const nsc_recv *r, int type,
                               int (*pred)(const nsc_event *, void *), void *arg)
{
    for (size_t i = 0; i < r->events.n; i++)
        if (r->events.v[i].ev.type == type && (!pred || pred(&r->events.v[i].ev, arg)))
            return &r->events.v[i].ev;
    return NULL;
}

const nsc_completion *nsc_recv_completion(const nsc_recv *r, uint64_t id)
{
    for (size_t i = 0; i < r->completions.n; i++)
        if (r->completions.v[i].id == id)
            return &r->completions.v[i].done;
    return NULL;
}

uint32_t nsc_recv_event_pid(const nsc_recv *r, const nsc_event *ev)
{
    const rec_ev *e = (const rec_ev *)((const char *)ev - offsetof(rec_ev, ev));
    return r->streams.v[e->stream].pid;
}

const char *nsc_recv_str(const nsc_recv *r, uint32_t pid, nsc_str id)
{
    for (size_t i = r->streams.n; i-- > 0;) {
        const stream *s = &r->streams.v[i];
        for (size_t k = 0; s->pid == pid && k < s->nstrs; k++)
            if (s->strs[k].id == id)
                return s->strs[k].text;
    }
    return NULL;
}

/* ---- JSON ------------------------------------------------------------------- */

/* {"Name": n, ...} for the non-zero entries of v. */
static void json_named(FILE *out, const uint64_t *v, int n, const char *(*name)(unsigned))
{
    fputc('{', out);
    const char *sep = "";
    for (int i = 0; i < n; i++) {
        if (!v[i])
            continue;
        fprintf(out, "%s\"%s\":%llu", sep, name((unsigned)i), (unsigned long long)v[i]);
        sep = ",";
    }
    fputc('}', out);
}

void nsc_recv_json(const nsc_recv *r, const nsc_recv_totals *t, FILE *out)
{
    fprintf(out, "{\"batches\":%llu,\"bad_batches\":%llu,\"streams\":%llu,\"events\":",
            (unsigned long long)t->batches, (unsigned long long)t->bad_batches,
            (unsigned long long)t->streams);
    json_named(out, t->events, NSC_T_COUNT, nsc_type_name);
    fputs(",\"foreign\":", out);
    json_named(out, t->foreign, NSC_T_COUNT, nsc_type_name);
    fputs(",\"states\":", out);
    json_named(out, t->states, NSC_S_COUNT, nsc_state_name);
    fprintf(out,
            ",\"completions\":%llu,\"open_events\":%llu,\"links\":%llu,\"links_resolved\":%llu,"
            "\"states_unmatched\":%llu,\"states_apart\":%llu,\"counters\":{\"emitted\":",
            (unsigned long long)t->completions, (unsigned long long)t->open_events,
            (unsigned long long)t->links, (unsigned long long)t->links_resolved,
            (unsigned long long)t->states_unmatched, (unsigned long long)t->states_apart);
    json_named(out, t->counters.emitted, NSC_T_COUNT, nsc_type_name);
    fputs(",\"dropped\":", out);
    json_named(out, t->counters.dropped, NSC_T_COUNT, nsc_type_name);
    fputs(",\"completions_emitted\":", out);
    json_named(out, t->counters.completions_emitted, NSC_T_COUNT, nsc_type_name);
    fputs(",\"completions_dropped\":", out);
    json_named(out, t->counters.completions_dropped, NSC_T_COUNT, nsc_type_name);
    fprintf(out, ",\"states_emitted\":%llu,\"states_dropped\":%llu,\"bad_handles\":%llu},",
            (unsigned long long)t->counters.states_emitted,
            (unsigned long long)t->counters.states_dropped,
            (unsigned long long)t->counters.bad_handles);
    fputs("\"processes\":[", out);
    for (size_t i = 0; i < r->streams.n; i++) {
        const stream *s = &r->streams.v[i];
        fprintf(out,
                "%s{\"pid\":%u,\"host\":\"%.64s\",\"job\":\"%.64s\",\"batches_seq\":%llu,"
                "\"links_unresolved\":%llu}",
                i ? "," : "", s->pid, s->host, s->job, (unsigned long long)s->next_seq,
                (unsigned long long)s->links_unresolved);
    }
    fputs("],\"ranks\":[", out);
    for (size_t i = 0; i < r->ranks.n; i++) {
        const nsc_recv_rank *rk = &r->ranks.v[i];
        fprintf(out,
                "%s{\"comm_id\":%llu,\"rank\":%d,\"completions\":%llu,\"open_events\":%llu,"
                "\"events\":",
                i ? "," : "", (unsigned long long)rk->comm_id, rk->rank,
                (unsigned long long)rk->completions, (unsigned long long)rk->open_events);
        json_named(out, rk->events, NSC_T_COUNT, nsc_type_name);
        fputs(",\"states\":", out);
        json_named(out, rk->states, NSC_S_COUNT, nsc_state_name);
        fputc('}', out);
    }
    fputs("]}\n", out);
}
