/* hold.c: the states the shipper holds until their event is shipped.
 *
 * A state is recorded while its event is open, and the event is written to
 * its thread's queue only at stopEvent, so a batch boundary between the two
 * (the shipper's, or the agent's spool flush, which cuts between batches)
 * would leave the states in a batch without their event, where no receiver
 * can attach them. The shipper therefore holds each state here and ships it
 * with its event, in the same batch; a state whose event has not come within
 * NCCLSCOPE_STATE_HOLD_MS (a stuck step: its states still tell where it
 * stopped), or the oldest when the table is full, is shipped alone.
 *
 * Held states sit in a ring in the order they came (so the oldest leaves
 * first); an open-addressing table maps an event id to the ring positions of
 * its first and last state, the states of one id chained in order. Only the
 * shipper thread touches it.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

typedef struct held {
    nsc_state_rec st;
    uint64_t held_ns;
    uint64_t next;  /* ring position + 1 of the next state of the same id; 0: none */
    int live;       /* 0 once shipped with its event */
} held;

typedef struct idx {
    uint64_t id;  /* 0: empty (event ids are never 0) */
    uint64_t first, last;  /* ring positions */
} idx;

/* An entry sits at most `reach` entries past its home: a probe or a deletion
 * looks no further. Ids of live events differ in their slot index, so entries
 * nearly always sit at home (reach 0) and a deletion is one store; it grows
 * with a collision and is 0 again once the table is empty. */
static struct {
    held *ring;
    idx *table;
    uint32_t cap, tcap;  /* ring and table sizes, powers of two; tcap >= 2 cap */
    uint32_t used, reach;  /* table entries in use; the farthest from home */
    uint64_t head, tail; /* ring positions: [head, tail) may hold live states */
} h;

/* A power of two: a ring position is masked, not divided (a 64-bit
 * division, several per state, was a third of the hold's time). */
int nsc_hold_init(uint32_t cap)
{
    if (h.ring)
        return 0;
    if (cap == 0 || (cap & (cap - 1)))
        return -1;
    h.cap = cap;
    for (h.tcap = 16; h.tcap < 2 * cap; h.tcap *= 2)
        ;
    h.ring = calloc(cap, sizeof *h.ring);
    h.table = calloc(h.tcap, sizeof *h.table);
    if (!h.ring || !h.table) {
        nsc_hold_release();
        return -1;
    }
    return 0;
}

void nsc_hold_release(void)
{
    free(h.ring);
    free(h.table);
    memset(&h, 0, sizeof h);
}

void nsc_hold_reset(void)
{
    if (h.table)
        memset(h.table, 0, h.tcap * sizeof *h.table);
    h.head = h.tail = 0;
    h.used = h.reach = 0;
}

static held *at(uint64_t pos) { return &h.ring[pos & (h.cap - 1)]; }

/* An id's home: the low bits of its slot index (slots.c). A thread takes
 * its slots in turn, so the events it has open sit in neighbouring entries,
 * a few to a cache line; a multiplicative hash scattered them over the
 * table, a cache miss for nearly every state held. */
static uint32_t slot_of(uint64_t id)
{
    return (uint32_t)id & (h.tcap - 1);
}

static idx *find(uint64_t id)
{
    uint32_t s = slot_of(id);
    for (uint32_t d = 0; d <= h.reach && h.table[s].id; d++, s = (s + 1) & (h.tcap - 1))
        if (h.table[s].id == id)
            return &h.table[s];
    return NULL;
}

/* Remove an entry, moving later ones of its probe run back into the gap.
 * Past `reach` from the gap no entry's home is at or before it. */
static NSC_INLINE void unindex(idx *e)
{
    uint32_t gap = (uint32_t)(e - h.table);
    for (uint32_t s = (gap + 1) & (h.tcap - 1);
         h.table[s].id && ((s - gap) & (h.tcap - 1)) <= h.reach; s = (s + 1) & (h.tcap - 1)) {
        uint32_t home = slot_of(h.table[s].id);
        /* s may fill the gap if its home is not in (gap, s] (cyclically) */
        if (((s - home) & (h.tcap - 1)) >= ((s - gap) & (h.tcap - 1))) {
            h.table[gap] = h.table[s];
            gap = s;
        }
    }
    h.table[gap].id = 0;
    if (--h.used == 0)
        h.reach = 0;
}

static void skip_shipped(void)
{
    while (h.head < h.tail && !at(h.head)->live)
        h.head++;
}

size_t nsc_hold_count(void) { return h.tail - h.head; }

int nsc_hold_full(void) { return h.tail - h.head >= h.cap; }

void nsc_hold_put(const nsc_state_rec *st, uint64_t now)
{
    uint64_t pos = h.tail++;
    held *e0 = at(pos);
    /* member by member: a compound literal zeroes the padding too, stores
     * as many again on every state */
    e0->st = *st;
    e0->held_ns = now;
    e0->next = 0;
    e0->live = 1;
    idx *e = find(st->id);
    if (e) {
        at(e->last)->next = pos + 1;
        e->last = pos;
        return;
    }
    uint32_t home = slot_of(st->id), s = home;
    while (h.table[s].id)
        s = (s + 1) & (h.tcap - 1);
    h.table[s] = (idx){st->id, pos, pos};
    h.used++;
    if (((s - home) & (h.tcap - 1)) > h.reach)
        h.reach = (s - home) & (h.tcap - 1);
}

const nsc_state_rec *nsc_hold_oldest(uint64_t *held_ns)
{
    if (h.head == h.tail)
        return NULL;
    *held_ns = at(h.head)->held_ns;
    return &at(h.head)->st;
}

/* The first held state of id leaves; the oldest held state is the first of
 * its id's. */
void nsc_hold_pop(uint64_t id)
{
    idx *e = find(id);
    held *o = at(e->first);
    o->live = 0;
    if (o->next)
        e->first = o->next - 1;
    else
        unindex(e);
    skip_shipped();
}

/* An entry is its table index + 1: the table moves entries only when the
 * hold changes, so the caller may use it until then. */
uint32_t nsc_hold_find(uint64_t id)
{
    const idx *e = h.head < h.tail ? find(id) : NULL;
    return e ? (uint32_t)(e - h.table) + 1 : 0;
}

uint64_t nsc_hold_first(uint32_t entry)
{
    return entry ? h.table[entry - 1].first + 1 : 0;
}

const nsc_state_rec *nsc_hold_at(uint64_t it, uint64_t *next)
{
    *next = at(it - 1)->next;
    return &at(it - 1)->st;
}

void nsc_hold_drop(uint32_t entry)
{
    idx *e = &h.table[entry - 1];
    for (uint64_t it = e->first + 1; it; it = at(it - 1)->next)
        at(it - 1)->live = 0;
    unindex(e);
    skip_shipped();
}
