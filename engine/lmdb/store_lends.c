/* store_lends.c: the ledger writer's memory of where the values it wrote
 * end.
 *
 * Owns, for each value key (job, comm, rank, first seq) in one of a fixed
 * number of slots, the value last written there: its key, its bytes, and
 * where it ends (its record count, last record and the chain after it), so
 * appending to it needs none of its records decoded. Keyed by value, not
 * rank: a rank's records of several seq ranges (a late agent's, a
 * restarted process's) each append to their own value. It is trusted only while the
 * stored value is byte for byte the one remembered, so an aborted or
 * replayed transaction, retention, a restart or another writer costs a
 * decode, never a value told against the wrong record. A slot taken by
 * another rank is overwritten: the cost of a collision is a decode.
 */
#include "store_int.h"

#include <stdlib.h>

#include "grow.h"

/* Slots: the open values of a collector's ranks of all its jobs'
 * communicators; each holds at most a page of bytes. */
#define LENDS_SLOTS 4096

struct nsc_st_lend {
    nsc_ledger_key key;
    nsc_lpack_end end;      /* end.last is rec */
    nsc_ledger_rec rec;
    nsc_ledger_edge *edges; /* rec's */
    size_t edges_cap;
    uint8_t *val;
    size_t len, val_cap;
};

static size_t slot_of(const nsc_ledger_key *k)
{
    uint64_t h = (k->comm ^ ((uint64_t)k->job << 32) ^ k->first) * 0x9e3779b97f4a7c15ull ^
                 (uint64_t)(uint32_t)k->rank * 0xc2b2ae3d27d4eb4full;
    return (size_t)(h >> 40) % LENDS_SLOTS;
}

const nsc_lpack_end *nsc_st_lends_find(nsc_st_lends *c, const nsc_ledger_key *k, const void *val, size_t len)
{
    const nsc_st_lend *s = c->slots ? c->slots[slot_of(k)] : NULL;
    if (!s || s->len != len || s->key.job != k->job || s->key.comm != k->comm || s->key.rank != k->rank ||
        s->key.first != k->first || memcmp(s->val, val, len) != 0)
        return NULL;
    return &s->end;
}

void nsc_st_lends_keep(nsc_st_lends *c, const nsc_ledger_key *k, const void *val, size_t len,
                       const nsc_lpack_end *end)
{
    nsc_st_lend **at;
    if (!end->last || (!c->slots && !(c->slots = calloc(LENDS_SLOTS, sizeof *c->slots))))
        return;
    at = &c->slots[slot_of(k)];
    if (!*at && !(*at = calloc(1, sizeof **at)))
        return;
    nsc_st_lend *s = *at;
    s->len = 0;  /* forgotten unless every part fits */
    if (nsc_grow_to(&s->val, len, &s->val_cap, 1, 4096) ||
        nsc_grow_to(&s->edges, end->last->nedges, &s->edges_cap, sizeof *s->edges, 16))
        return;
    s->key = *k;
    s->end = *end;
    s->rec = *end->last;
    s->rec.edges = s->rec.nedges ? memcpy(s->edges, end->last->edges, s->rec.nedges * sizeof *s->edges) : NULL;
    s->end.last = &s->rec;
    memcpy(s->val, val, len);
    s->len = len;
}

void nsc_st_lends_free(nsc_st_lends *c)
{
    for (size_t i = 0; c->slots && i < LENDS_SLOTS; i++)
        if (c->slots[i]) {
            free(c->slots[i]->val);
            free(c->slots[i]->edges);
            free(c->slots[i]);
        }
    free(c->slots);
    c->slots = NULL;
}
