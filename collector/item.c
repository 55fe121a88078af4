/* item.c: decoding a batch message into an item, PXN aliases applied (see item.h).
 *
 * PXN: a proxy process records states of a re-attached event under its own
 * id, in its own section; the batch's alias list says which event of which
 * section that id became. The collector applies the aliases: such states move
 * to the origin's section with the new id, so the store keeps them beside
 * their event and queries join them like any other state. An alias whose
 * origin section is not in the same batch leaves its states where they are
 * (counted as unplaced).
 */
#include "item.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats.h"

void nsc_item_release_credit(nsc_item *it)
{
    if (it->inflight)
        atomic_fetch_sub_explicit(it->inflight, 1, memory_order_relaxed);
    it->inflight = NULL;
}

void nsc_item_free(nsc_item *it)
{
    if (!it)
        return;
    nsc_item_release_credit(it);
    if (it->kind == NSC_ITEM_BATCH) {
        for (uint32_t i = 0; it->secs && i < it->a2c.nsections; i++)
            nsc_batch_release(&it->secs[i]);
        for (uint32_t i = 0; it->ledgers && i < it->a2c.nledgers; i++)
            nsc_ledger_release(&it->ledgers[i]);
        nsc_a2c_batch_release(&it->a2c);
        zmq_msg_close(&it->body);
    }
    free(it->secs);
    free(it->sb);
    free(it->moved);
    free(it->ledgers);
    free(it->sl);
    free(it->lproc);
    free(it);
}

/* The agent id of a message that failed to decode, when its frame gets that far. */
static void peek_agent(const uint8_t *p, size_t len, char agent[64])
{
    nsc_mp_cursor c = {p, p + len, 64, 16};
    uint32_t n;
    uint64_t v;
    if (nsc_mp_rd_array(&c, &n) || n < 3 || nsc_mp_rd_uint(&c, UINT64_MAX, &v) ||
        nsc_mp_rd_uint(&c, UINT64_MAX, &v) || nsc_mp_rd_text(&c, agent))
        strcpy(agent, "unknown");
}

static int section_of(const nsc_item *it, uint32_t pid)
{
    for (uint32_t i = 0; i < it->a2c.nsections; i++)
        if (it->secs[i].hdr.proc.pid == pid)
            return (int)i;
    return -1;
}

static uint64_t alias_hash(uint32_t pid, uint64_t id)
{
    uint64_t h = (id ^ ((uint64_t)pid << 40)) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

typedef struct alias_map {
    uint32_t *slot;  /* alias index + 1; 0 empty */
    size_t mask;
} alias_map;

static int alias_map_build(alias_map *m, const nsc_a2c_batch *b)
{
    size_t cap = 16;
    while (cap < 2 * (size_t)b->naliases)
        cap *= 2;
    m->slot = calloc(cap, sizeof *m->slot);
    m->mask = cap - 1;
    if (!m->slot)
        return -1;
    for (uint32_t i = 0; i < b->naliases; i++) {
        size_t h = alias_hash(b->aliases[i].proxy_pid, b->aliases[i].proxy_id) & m->mask;
        while (m->slot[h])
            h = (h + 1) & m->mask;
        m->slot[h] = i + 1;
    }
    return 0;
}

static const nsc_a2c_alias *alias_find(const alias_map *m, const nsc_a2c_batch *b, uint32_t pid,
                                       uint64_t id)
{
    for (size_t h = alias_hash(pid, id) & m->mask; m->slot[h]; h = (h + 1) & m->mask) {
        const nsc_a2c_alias *a = &b->aliases[m->slot[h] - 1];
        if (a->proxy_pid == pid && a->proxy_id == id)
            return a;
    }
    return NULL;
}

/* Where state j of section s goes: its section (and *id), or -1 to stay put. */
static int alias_target(const nsc_item *it, const alias_map *m, uint32_t s, size_t j, uint64_t *id)
{
    const nsc_a2c_alias *a = alias_find(m, &it->a2c, it->secs[s].hdr.proc.pid, it->secs[s].states[j].id);
    int to = a ? section_of(it, a->origin_pid) : -1;
    if (to >= 0)
        *id = a->new_id;
    return a ? to : -2;
}

/* Rebuild every section's states: kept ones, then those moved in. */
static int apply_aliases(nsc_item *it, uint64_t *applied, uint64_t *unplaced)
{
    uint32_t ns = it->a2c.nsections;
    size_t total = 0, *count = calloc(ns, sizeof *count), *fill = calloc(ns, sizeof *fill);
    alias_map m = {0};
    int rc = -1;
    if (!count || !fill || alias_map_build(&m, &it->a2c))
        goto out;
    for (uint32_t s = 0; s < ns; s++) {
        for (size_t j = 0; j < it->secs[s].nstates; j++) {
            uint64_t id;
            int to = alias_target(it, &m, s, j, &id);
            count[to >= 0 ? (uint32_t)to : s]++;
            *unplaced += to == -1;
            *applied += to >= 0;
        }
        total += it->secs[s].nstates;
    }
    if (!(it->moved = malloc((total ? total : 1) * sizeof *it->moved)))
        goto out;
    for (uint32_t s = 0, at = 0; s < ns; at += count[s], s++) {
        fill[s] = at;
        it->sb[s].states = it->moved + at;
        it->sb[s].nstates = count[s];
    }
    for (uint32_t s = 0; s < ns; s++)
        for (size_t j = 0; j < it->secs[s].nstates; j++) {
            uint64_t id;
            int to = alias_target(it, &m, s, j, &id);
            nsc_state_rec r = it->secs[s].states[j];
            if (to >= 0)
                r.id = id;
            it->moved[fill[to >= 0 ? (uint32_t)to : s]++] = r;
        }
    rc = 0;
out:
    free(m.slot);
    free(count);
    free(fill);
    return rc;
}

static void store_view(nsc_item *it)
{
    for (uint32_t i = 0; i < it->a2c.nsections; i++) {
        const nsc_batch *b = &it->secs[i];
        it->sb[i] = (nsc_store_batch){&b->hdr.proc, b->ctxs, b->nctxs, b->strs, b->nstrs,
                                      b->events, b->nevents, b->states, b->nstates,
                                      b->completions, b->ncompletions};
    }
}

/* The ledger batches decoded, and placed where their process has a section. */
static int take_ledgers(nsc_item *it, const nsc_dec_limits *lim)
{
    uint32_t n = it->a2c.nledgers;
    it->ledgers = calloc(n ? n : 1, sizeof *it->ledgers);
    it->sl = calloc(n ? n : 1, sizeof *it->sl);
    it->lproc = calloc(n ? n : 1, sizeof *it->lproc);
    if (!it->ledgers || !it->sl || !it->lproc)
        return NSC_WIRE_NOMEM;
    for (uint32_t i = 0; i < n; i++) {
        nsc_ledger_batch *b = &it->ledgers[i];
        if (nsc_ledger_decode(it->a2c.ledgers[i].data, it->a2c.ledgers[i].len, lim, b)) {
            memset(b, 0, sizeof *b);
            it->ledger_bad++;
            continue;
        }
        int s = section_of(it, b->pid);
        it->sl[it->nsl] = (nsc_store_ledger){s < 0 ? NULL : &it->lproc[it->nsl], b, {0}};
        if (s >= 0)
            it->lproc[it->nsl] = it->secs[s].hdr.proc;
        it->nsl++;
    }
    return 0;
}

/* Every context of every section claims 1..max_ranks ranks and a rank
 * among them: what the live state and the queries size by is bounded. */
static int ranks_in_range(const nsc_item *it, int32_t max_ranks)
{
    for (uint32_t i = 0; i < it->a2c.nsections; i++)
        for (size_t k = 0; k < it->secs[i].nctxs; k++) {
            const nsc_ctx_def *d = &it->secs[i].ctxs[k];
            if (d->nranks < 1 || d->nranks > max_ranks || d->rank < 0 || d->rank >= d->nranks)
                return 0;
        }
    return 1;
}

nsc_item *nsc_item_batch(zmq_msg_t *body, const nsc_dec_limits *lim, int32_t max_ranks, unsigned *reason,
                         char agent[64], uint64_t *aliases_applied, uint64_t *aliases_unplaced)
{
    nsc_item *it = calloc(1, sizeof *it);
    if (!it) {
        strcpy(agent, "unknown");
        *reason = NSC_REJ_A2C - NSC_WIRE_NOMEM;
        return NULL;
    }
    it->kind = NSC_ITEM_BATCH;
    zmq_msg_init(&it->body);
    zmq_msg_move(&it->body, body);
    const uint8_t *p = zmq_msg_data(&it->body);
    size_t len = zmq_msg_size(&it->body);
    int rc = nsc_a2c_decode_batch(p, len, lim, &it->a2c);
    if (rc) {
        peek_agent(p, len, agent);
        *reason = NSC_REJ_A2C - rc;
        nsc_item_free(it);
        return NULL;
    }
    strcpy(agent, it->a2c.agent);
    uint32_t n = it->a2c.nsections;
    it->secs = calloc(n ? n : 1, sizeof *it->secs);
    it->sb = calloc(n ? n : 1, sizeof *it->sb);
    rc = it->secs && it->sb ? 0 : NSC_WIRE_NOMEM;
    for (uint32_t i = 0; !rc && i < n; i++) {
        rc = nsc_batch_decode(it->a2c.sections[i].data, it->a2c.sections[i].len, lim, &it->secs[i]);
        if (rc)  /* only the sections before i are released with the item */
            it->a2c.nsections = i;
    }
    if (!rc) {
        store_view(it);
        if ((it->a2c.naliases && apply_aliases(it, aliases_applied, aliases_unplaced)) || take_ledgers(it, lim))
            rc = NSC_WIRE_NOMEM;
    }
    if (rc || !ranks_in_range(it, max_ranks)) {
        *reason = rc ? NSC_REJ_SECTION - rc : NSC_REJ_RANKS;
        nsc_item_free(it);
        return NULL;
    }
    return it;
}

void nsc_item_life(const nsc_item *it, uint32_t i, nsc_store_life *sl)
{
    const nsc_a2c_life *l = &it->a2c.life[i];
    *sl = (nsc_store_life){.pid = l->pid, .event = l->event, .reason = l->reason, .ts_ns = l->ts_ns,
                           .ref_ns = it->recv_ns, .last_batch_seq = l->last_batch_seq};
    snprintf(sl->host, sizeof sl->host, "%s", l->host);
    snprintf(sl->job, sizeof sl->job, "%s", l->job);
    snprintf(sl->agent, sizeof sl->agent, "%s", it->a2c.agent);
}
