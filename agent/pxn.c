/* pxn.c: the PXN resolver (see pxn.h).
 *
 * Two bounded tables share one structure, a ring of entries with hash chains:
 * candidates (origin key, event id) and moved foreign events (proxy key, proxy
 * id). A new entry overwrites the oldest, so memory is fixed and old handles
 * are forgotten in age order. Held events wait in a FIFO array.
 */
#include "pxn.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    uint64_t proc, id, start_ns;
    uint64_t origin_key, new_id;  /* moved events: where they went */
    uint32_t origin_pid;
    int32_t rank;
    uint16_t ctx;
    int32_t next;                 /* hash chain, -1 ends */
    uint8_t used;
} entry;

typedef struct table {
    entry *e;
    int32_t *heads;
    uint32_t cap, mask, oldest;
} table;

typedef struct held {
    uint64_t proxy_key, since_ns;
    uint32_t proxy_pid;
    nsc_event ev;
} held;

struct nsc_pxn {
    nsc_pxn_cfg cfg;
    nsc_pxn_sink sink;
    table cand, moved;
    held *q;
    uint32_t nq;
    uint64_t next_id;
    nsc_pxn_stats st;
};

static uint32_t bucket(const table *t, uint64_t proc, uint64_t id)
{
    uint64_t h = (proc * 0x9e3779b97f4a7c15ull) ^ (id * 0xc2b2ae3d27d4eb4full);
    return (uint32_t)(h >> 32) & t->mask;
}

static int table_init(table *t, uint32_t cap)
{
    uint32_t nb = 1;
    while (nb < cap)
        nb <<= 1;
    t->e = calloc(cap, sizeof *t->e);
    t->heads = malloc((size_t)nb * sizeof *t->heads);
    if (!t->e || !t->heads)
        return -1;
    memset(t->heads, 0xff, (size_t)nb * sizeof *t->heads);
    t->cap = cap;
    t->mask = nb - 1;
    return 0;
}

static void table_unlink(table *t, uint32_t i)
{
    int32_t *p = &t->heads[bucket(t, t->e[i].proc, t->e[i].id)];
    while (*p >= 0 && *p != (int32_t)i)
        p = &t->e[*p].next;
    if (*p == (int32_t)i)
        *p = t->e[i].next;
}

static void table_put(table *t, const entry *src)
{
    uint32_t i = t->oldest;
    t->oldest = (i + 1) % t->cap;
    if (t->e[i].used)
        table_unlink(t, i);
    uint32_t b = bucket(t, src->proc, src->id);
    t->e[i] = *src;
    t->e[i].used = 1;
    t->e[i].next = t->heads[b];
    t->heads[b] = (int32_t)i;
}

/* The entry (proc, id) with the latest start in [t_ns - window, t_ns]. */
static const entry *table_find(const table *t, uint64_t proc, uint64_t id, uint64_t t_ns, uint64_t window)
{
    const entry *best = NULL;
    for (int32_t i = t->heads[bucket(t, proc, id)]; i >= 0; i = t->e[i].next) {
        const entry *e = &t->e[i];
        if (e->proc != proc || e->id != id || e->start_ns > t_ns || t_ns - e->start_ns > window)
            continue;
        if (!best || e->start_ns > best->start_ns)
            best = e;
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
    if (!x->q || cfg->recent_cap == 0 || table_init(&x->cand, cfg->recent_cap) ||
        table_init(&x->moved, cfg->recent_cap)) {
        nsc_pxn_free(x);
        return NULL;
    }
    return x;
}

void nsc_pxn_free(nsc_pxn *x)
{
    if (!x)
        return;
    free(x->cand.e);
    free(x->cand.heads);
    free(x->moved.e);
    free(x->moved.heads);
    free(x->q);
    free(x);
}

void nsc_pxn_note(nsc_pxn *x, uint64_t key, const nsc_event *ev)
{
    if (ev->type != NSC_T_COLL && ev->type != NSC_T_P2P)
        return;
    entry e = {.proc = key, .id = ev->id, .start_ns = ev->start_ns, .rank = ev->rank, .ctx = ev->ctx};
    table_put(&x->cand, &e);
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
        origin_key = m->origin_key;
        origin_pid = m->origin_pid;
        parent = m->new_id;
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
    out.id = NSC_PXN_NEW_ID_BIT | ++x->next_id;
    out.parent = parent;
    out.rank = rank;
    out.ctx = ctx;
    out.flags = (uint8_t)((ev->flags | NSC_EVF_FOREIGN) & ~NSC_EVF_UNRESOLVED);
    out.origin_pid = h->proxy_pid;
    entry m = {.proc = h->proxy_key, .id = ev->id, .start_ns = ev->start_ns, .origin_key = origin_key,
               .new_id = out.id, .origin_pid = origin_pid, .rank = rank, .ctx = ctx};
    table_put(&x->moved, &m);
    nsc_a2c_alias a = {.proxy_pid = h->proxy_pid, .proxy_id = ev->id, .origin_pid = origin_pid,
                       .new_id = out.id};
    x->st.resolved++;
    x->sink.emit(x->sink.arg, origin_key, &out, &a);
    return 1;
}

static void give_up(nsc_pxn *x, const held *h)
{
    nsc_event out = h->ev;
    out.flags |= NSC_EVF_UNRESOLVED;
    x->st.unresolved++;
    x->sink.emit(x->sink.arg, h->proxy_key, &out, NULL);
}

void nsc_pxn_submit(nsc_pxn *x, uint64_t proxy_key, uint32_t proxy_pid, const nsc_event *ev, uint64_t now_ns)
{
    held h = {.proxy_key = proxy_key, .since_ns = now_ns, .proxy_pid = proxy_pid, .ev = *ev};
    if (try_resolve(x, &h))
        return;
    if (x->nq == x->cfg.pending_cap) {
        x->st.overflow++;
        give_up(x, &h);
        return;
    }
    x->q[x->nq++] = h;
}

/* One pass over the held events; returns how many resolved. */
static uint32_t retry(nsc_pxn *x, uint64_t now_ns, int expire)
{
    uint32_t kept = 0, done = 0;
    for (uint32_t i = 0; i < x->nq; i++) {
        const held *h = &x->q[i];
        if (try_resolve(x, h)) {
            done++;
        } else if (expire && now_ns - h->since_ns >= x->cfg.hold_ns) {
            x->st.expired++;
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
    for (uint32_t i = 0; i < x->nq; i++)
        give_up(x, &x->q[i]);
    x->nq = 0;
}

void nsc_pxn_stats_get(const nsc_pxn *x, nsc_pxn_stats *st)
{
    *st = x->st;
    st->pending = x->nq;
}
