/* pxn.c: the PXN resolver (see pxn.h).
 *
 * Two bounded tables share one structure: candidates (origin key, event id)
 * and moved foreign events (proxy key, proxy id). Remembering is the hot path
 * (every Coll/P2p of every process), looking up is rare (foreign events
 * only), so a put is one sequential write into a ring whose newest entry
 * overwrites the oldest, and the index is built lazily: a lookup first adds
 * the entries put since the previous lookup to an open-addressing table of
 * keys, each slot holding the newest entry of its key, each entry linking to
 * the previous one of the same key (reused handles). An entry is alive while
 * the ring still holds it; dead links and slots are recognised by sequence
 * number, and the index is rebuilt from the live entries when dead slots
 * fill half of it. Held events wait in a FIFO array.
 */
#include "pxn.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t proc, id, start_ns;
    uint64_t prev;  /* sequence + 1 of the previous entry of (proc, id); 0: none */
    int32_t rank;
    uint16_t ctx;
} entry;

/* Where a moved event went; kept beside the moved table's entries only, so a
 * candidate costs 40 bytes. */
typedef struct dest {
    uint64_t origin_key, new_id;
    uint32_t origin_pid;
} dest;

typedef struct slot {
    uint64_t proc, id, head;  /* head: sequence + 1 of the key's newest entry; 0: empty slot */
} slot;

typedef struct table {
    entry *e;            /* entry of sequence s at e[s % cap] while s + cap >= added */
    dest *d;             /* moved table: d[s % cap] goes with e[s % cap]; else NULL */
    slot *slots;
    uint32_t cap, next;  /* next == added % cap */
    uint64_t mask;       /* slots - 1; slots >= 4 cap */
    uint64_t added;      /* entries ever put */
    uint64_t indexed;    /* sequences below this are in the slots (or dead) */
    uint64_t used;       /* occupied slots, live or dead */
} table;

typedef struct held {
    uint64_t proxy_key, since_ns;
    uint64_t hid;    /* names it in the spool */
    uint32_t proxy_pid;
    uint8_t saved;   /* the spool has it */
    nsc_event ev;
} held;

struct nsc_pxn {
    nsc_pxn_cfg cfg;
    nsc_pxn_sink sink;
    table cand, moved;
    held *q;
    uint32_t nq;
    uint64_t *gone;  /* hids of saved events no longer held, since the last save */
    uint32_t ngone;  /* each saved event goes once: at most pending_cap */
    uint64_t last_id, last_hid;  /* the last new id and hid given */
    nsc_pxn_stats st;
};

static uint64_t slot_of(const table *t, uint64_t proc, uint64_t id)
{
    uint64_t h = (proc * 0x9e3779b97f4a7c15ull) ^ (id * 0xc2b2ae3d27d4eb4full);
    return (h ^ (h >> 29)) & t->mask;
}

static int table_init(table *t, uint32_t cap, int with_dest)
{
    uint64_t ns = 1;
    while (ns < 4 * (uint64_t)cap)
        ns <<= 1;
    /* Never touched unless a lookup happens: calloc'd pages stay unmapped. */
    t->e = calloc(cap, sizeof *t->e);
    t->slots = calloc(ns, sizeof *t->slots);
    if (!t->e || !t->slots || (with_dest && !(t->d = calloc(cap, sizeof *t->d))))
        return -1;
    t->cap = cap;
    t->mask = ns - 1;
    return 0;
}

static void table_free(table *t)
{
    free(t->e);
    free(t->d);
    free(t->slots);
}

static uint64_t oldest_alive(const table *t) { return t->added > t->cap ? t->added - t->cap : 0; }

/* The entry to fill next (it overwrites the oldest). */
static entry *table_put(table *t)
{
    entry *e = &t->e[t->next];
    t->next = t->next + 1 == t->cap ? 0 : t->next + 1;  /* added % cap, without a division */
    t->added++;
    return e;
}

static void index_one(table *t, uint64_t seq)
{
    entry *e = &t->e[seq % t->cap];
    slot *s = &t->slots[slot_of(t, e->proc, e->id)];
    while (s->head && (s->proc != e->proc || s->id != e->id))
        s = &t->slots[(s - t->slots + 1) & t->mask];
    if (!s->head) {
        s->proc = e->proc;
        s->id = e->id;
        t->used++;
    }
    e->prev = s->head;  /* a dead head ends the chain: the alive check stops there */
    s->head = seq + 1;
}

/* Index every live entry put since the last lookup; rebuild when dead slots
 * would fill more than half the table (live keys are at most cap). */
static void index_catch_up(table *t)
{
    uint64_t oldest = oldest_alive(t);
    if (t->indexed < oldest)
        t->indexed = oldest;
    if (t->used + (t->added - t->indexed) > (t->mask + 1) / 2) {
        memset(t->slots, 0, (t->mask + 1) * sizeof *t->slots);
        t->used = 0;
        t->indexed = oldest;
    }
    for (; t->indexed < t->added; t->indexed++)
        index_one(t, t->indexed);
}

/* The live entry (proc, id) with the latest start in [t_ns - window, t_ns]. */
static const entry *table_find(table *t, uint64_t proc, uint64_t id, uint64_t t_ns, uint64_t window)
{
    index_catch_up(t);
    const slot *s = &t->slots[slot_of(t, proc, id)];
    while (s->head && (s->proc != proc || s->id != id))
        s = &t->slots[(s - t->slots + 1) & t->mask];
    const entry *best = NULL;
    uint64_t oldest = oldest_alive(t);
    for (uint64_t seq = s->head; seq && seq - 1 >= oldest;) {
        const entry *e = &t->e[(seq - 1) % t->cap];
        if (e->start_ns <= t_ns && t_ns - e->start_ns <= window && (!best || e->start_ns > best->start_ns))
            best = e;
        seq = e->prev;
    }
    return best;
}

nsc_pxn *nsc_pxn_new(const nsc_pxn_cfg *cfg, const nsc_pxn_sink *sink)
{
    nsc_pxn *x = calloc(1, sizeof *x);
    if (!x)
        return NULL;
    x->cfg = *cfg;
    x->sink = *sink;
    x->q = calloc(cfg->pending_cap ? cfg->pending_cap : 1, sizeof *x->q);
    x->gone = calloc(cfg->pending_cap ? cfg->pending_cap : 1, sizeof *x->gone);
    if (!x->q || !x->gone || cfg->recent_cap == 0 || table_init(&x->cand, cfg->recent_cap, 0) ||
        table_init(&x->moved, cfg->recent_cap, 1)) {
        nsc_pxn_free(x);
        return NULL;
    }
    return x;
}

void nsc_pxn_free(nsc_pxn *x)
{
    if (!x)
        return;
    table_free(&x->cand);
    table_free(&x->moved);
    free(x->q);
    free(x->gone);
    free(x);
}

void nsc_pxn_note(nsc_pxn *x, uint64_t key, const nsc_event *ev)
{
    if (ev->type != NSC_T_COLL && ev->type != NSC_T_P2P)
        return;
    entry *e = table_put(&x->cand);
    e->proc = key;
    e->id = ev->id;
    e->start_ns = ev->start_ns;
    e->rank = ev->rank;
    e->ctx = ev->ctx;
}

/* A moved entry; origin_key 0: looked up by origin_pid when a child meets it. */
static void put_moved(nsc_pxn *x, uint64_t proxy_key, const nsc_event *ev, uint64_t origin_key,
                      uint32_t origin_pid, uint64_t new_id)
{
    entry *m = table_put(&x->moved);
    *m = (entry){.proc = proxy_key, .id = ev->id, .start_ns = ev->start_ns, .rank = ev->rank, .ctx = ev->ctx};
    x->moved.d[m - x->moved.e] = (dest){.origin_key = origin_key, .new_id = new_id, .origin_pid = origin_pid};
}

/* Try to resolve one foreign event; returns 1 when it was emitted resolved. */
static int try_resolve(nsc_pxn *x, const held *h)
{
    const nsc_event *ev = &h->ev;
    uint64_t origin_key, parent;
    uint32_t origin_pid = ev->origin_pid;
    int32_t rank;
    uint16_t ctx;
    if (ev->parent != 0) {  /* a child of our own foreign event */
        const entry *m = table_find(&x->moved, h->proxy_key, ev->parent, ev->start_ns, x->cfg.window_ns);
        if (!m)
            return 0;
        const dest *d = &x->moved.d[m - x->moved.e];
        origin_key = d->origin_key ? d->origin_key : x->sink.origin(x->sink.arg, h->proxy_key, d->origin_pid);
        if (!origin_key)
            return 0;  /* a predecessor's, its origin not heard yet */
        origin_pid = d->origin_pid;
        parent = d->new_id;
        rank = m->rank;
        ctx = m->ctx;
    } else {
        origin_key = x->sink.origin(x->sink.arg, h->proxy_key, ev->origin_pid);
        const entry *c = origin_key ? table_find(&x->cand, origin_key, ev->origin_parent, ev->start_ns,
                                                 x->cfg.window_ns)
                                    : NULL;
        if (!c)
            return 0;
        parent = c->id;
        rank = c->rank;
        ctx = c->ctx;
    }
    nsc_event out = *ev;
    out.id = NSC_PXN_NEW_ID_BIT | ++x->last_id;
    out.parent = parent;
    out.rank = rank;
    out.ctx = ctx;
    out.flags = (uint8_t)((ev->flags | NSC_EVF_FOREIGN) & ~NSC_EVF_UNRESOLVED);
    out.origin_pid = h->proxy_pid;
    put_moved(x, h->proxy_key, &(nsc_event){.id = ev->id, .start_ns = ev->start_ns, .rank = rank, .ctx = ctx},
              origin_key, origin_pid, out.id);
    nsc_a2c_alias a = {.proxy_pid = h->proxy_pid, .proxy_id = ev->id, .origin_pid = origin_pid,
                       .new_id = out.id};
    x->st.resolved++;
    x->sink.emit(x->sink.arg, origin_key, &out, &a);
    return 1;
}

/* h leaves the queue: the spool forgets it with the next save. */
static void leave(nsc_pxn *x, const held *h)
{
    if (h->saved)
        x->gone[x->ngone++] = h->hid;
}

static void give_up(nsc_pxn *x, const held *h)
{
    nsc_event out = h->ev;
    out.flags |= NSC_EVF_UNRESOLVED;
    x->st.unresolved++;
    x->sink.emit(x->sink.arg, h->proxy_key, &out, NULL);
}

/* Resolve h now, or queue it (a full queue gives it up, counted). */
static void hold(nsc_pxn *x, const held *h)
{
    if (try_resolve(x, h)) {
        leave(x, h);
        return;
    }
    if (x->nq == x->cfg.pending_cap) {
        x->st.overflow++;
        leave(x, h);
        give_up(x, h);
        return;
    }
    x->q[x->nq++] = *h;
}

void nsc_pxn_submit(nsc_pxn *x, uint64_t proxy_key, uint32_t proxy_pid, const nsc_event *ev, uint64_t now_ns)
{
    hold(x, &(held){.proxy_key = proxy_key, .since_ns = now_ns, .hid = ++x->last_hid, .proxy_pid = proxy_pid,
                    .ev = *ev});
}

int nsc_pxn_restore(nsc_pxn *x, uint64_t hid, uint64_t proxy_key, uint32_t proxy_pid, const nsc_event *ev,
                    uint64_t now_ns)
{
    if (x->ngone >= (x->cfg.pending_cap ? x->cfg.pending_cap : 1))
        return -1;  /* it might go too: no room to say so */
    if (hid > x->last_hid)
        x->last_hid = hid;
    x->st.restored++;
    hold(x, &(held){.proxy_key = proxy_key, .since_ns = now_ns, .hid = hid, .proxy_pid = proxy_pid, .saved = 1,
                    .ev = *ev});
    return 0;
}

/* One pass over the held events; returns how many resolved. */
static uint32_t retry(nsc_pxn *x, uint64_t now_ns, int expire)
{
    uint32_t kept = 0, done = 0;
    for (uint32_t i = 0; i < x->nq; i++) {
        const held *h = &x->q[i];
        if (try_resolve(x, h)) {
            leave(x, h);
            done++;
        } else if (expire && now_ns - h->since_ns >= x->cfg.hold_ns) {
            x->st.expired++;
            leave(x, h);
            give_up(x, h);
        } else {
            x->q[kept++] = *h;
        }
    }
    x->nq = kept;
    return done;
}

void nsc_pxn_tick(nsc_pxn *x, uint64_t now_ns)
{
    /* Children stop (and arrive) before their foreign parent: once a pass
     * resolved something, another pass may resolve their children. */
    while (x->nq && retry(x, now_ns, 0) > 0)
        ;
    retry(x, now_ns, 1);
}

void nsc_pxn_drain(nsc_pxn *x)
{
    while (x->nq && retry(x, 0, 0) > 0)
        ;
    for (uint32_t i = 0; i < x->nq; i++) {
        leave(x, &x->q[i]);
        give_up(x, &x->q[i]);
    }
    x->nq = 0;
}

void nsc_pxn_unsaved(const nsc_pxn *x, nsc_pxn_held_fn *fn, void *arg)
{
    for (uint32_t i = 0; i < x->nq; i++)
        if (!x->q[i].saved)
            fn(arg, x->q[i].hid, x->q[i].proxy_key, &x->q[i].ev);
}

const uint64_t *nsc_pxn_gone(const nsc_pxn *x, size_t *n)
{
    *n = x->ngone;
    return x->gone;
}

uint64_t nsc_pxn_last_id(const nsc_pxn *x) { return x->last_id; }

void nsc_pxn_set_last_id(nsc_pxn *x, uint64_t id) { x->last_id = id; }

static uint64_t entries_since(const table *t, uint64_t from, nsc_pxn_entry_fn *fn, void *arg)
{
    for (uint64_t seq = from > oldest_alive(t) ? from : oldest_alive(t); seq < t->added; seq++) {
        const entry *e = &t->e[seq % t->cap];
        const dest *d = t->d ? &t->d[seq % t->cap] : NULL;
        nsc_event ev = {.id = e->id, .start_ns = e->start_ns, .rank = e->rank, .ctx = e->ctx, .type = NSC_T_COLL};
        fn(arg, e->proc, &ev, d ? d->origin_pid : 0, d ? d->new_id : 0);
    }
    return t->added;
}

uint64_t nsc_pxn_candidates(const nsc_pxn *x, uint64_t from, nsc_pxn_entry_fn *fn, void *arg)
{
    return entries_since(&x->cand, from, fn, arg);
}

uint64_t nsc_pxn_moved_since(const nsc_pxn *x, uint64_t from, nsc_pxn_entry_fn *fn, void *arg)
{
    return entries_since(&x->moved, from, fn, arg);
}

void nsc_pxn_moved(nsc_pxn *x, uint64_t proxy_key, const nsc_event *ev, uint32_t origin_pid, uint64_t new_id)
{
    put_moved(x, proxy_key, ev, 0, origin_pid, new_id);
}

void nsc_pxn_saved(nsc_pxn *x)
{
    for (uint32_t i = 0; i < x->nq; i++)
        x->q[i].saved = 1;
    x->ngone = 0;
}

void nsc_pxn_stats_get(const nsc_pxn *x, nsc_pxn_stats *st)
{
    *st = x->st;
    st->pending = x->nq;
}
