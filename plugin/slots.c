/* slots.c: event handles.
 *
 * A handle given to NCCL is the event id itself, (generation << 20) | slot
 * index, never a pointer: decoding is a range check and one compare with the
 * slot's word, so a stale, reused or foreign handle is recognised without
 * touching memory outside our table. Each thread allocates from its own range
 * of slots (no sharing on the hot path); any thread may free.
 *
 * Coll and P2p slots also count their live ProxyOp/KernelCh children: NCCL's
 * stopEvent on a Coll only means "enqueued", so the Coll's slot outlives its
 * stop until the last child stops, which is its completion. A stopped parent
 * with no live child lingers: later children may still attach, and the
 * allocator may reuse it (one CAS decides which of the two wins).
 */
#include <string.h>

#include "internal.h"

#define ALLOC_PROBES 32u
#define GEN(w) ((uint32_t)((w) >> 32))

static int word_allocatable(uint64_t w)
{
    return !(w & NSC_W_LIVE) || ((w & NSC_W_STOPPED) && !(w & NSC_W_REFS));
}

/* A ProxyStep that NCCL never stopped (NVIDIA/nccl#1658: start and stop
 * counts differ) would hold its slot until finalize; once its ProxyOp has
 * stopped, nothing stops it any more. Such a slot may be taken again, its
 * event emitted as open. NCCL starts and stops a step on its proxy thread,
 * the only one that allocates in that thread's range. */
static int abandoned_step(const nsc_slot *s, uint64_t w)
{
    uint32_t parent;
    return (w & NSC_W_LIVE) && !(w & NSC_W_STOPPED) && s->ev.type == NSC_T_PROXY_STEP &&
           s->ev.parent && !nsc_slot_lookup(s->ev.parent, &parent);
}

/* A free slot (not live) is the owner's alone: every other writer of a word
 * (attach, detach, a parent's stop, finalize's flush) acts only on a live
 * one, so a plain store claims it, with no locked instruction. A stopped
 * parent that lingers takes the CAS: a child may attach to it meanwhile. */
static int claim(nsc_slot *s, uint64_t w, uint64_t nw)
{
    if (!(w & NSC_W_LIVE)) {
        atomic_store_explicit(&s->word, nw, memory_order_relaxed);
        return 1;
    }
    return atomic_compare_exchange_strong_explicit(&s->word, &w, nw, memory_order_acquire,
                                                   memory_order_relaxed);
}

/* Claim the slot of an abandoned step: its event, as it was before the CAS,
 * is emitted as open. Out of line: the copy is two cache lines that a
 * common claim must not pay for, nor the stack room. */
static NSC_OUT_OF_LINE int claim_abandoned(nsc_tbuf *tb, nsc_slot *s, uint64_t w, uint64_t nw)
{
    nsc_event ev = s->ev;
    uint32_t quiet = s->quiet;
    if (!claim(s, w, nw))
        return 0;
    if (!quiet) {
        ev.stop_ns = nsc_tick();
        ev.flags |= NSC_EVF_OPEN;
        nsc_event_emit(tb, &ev);
    }
    return 1;
}

/* The word that claims a slot whose word was w: the next generation, live. */
static uint64_t claim_word(uint64_t w)
{
    uint32_t gen = GEN(w) + 1;
    return ((uint64_t)(gen ? gen : 1) << 32) | NSC_W_LIVE;
}

/* Slot i of tb's range, just claimed with word nw, made ready. */
static nsc_slot *claimed(nsc_tbuf *tb, nsc_slot *s, uint32_t i, uint64_t nw, uint64_t *id)
{
    atomic_store_explicit(&s->last_child_ns, 0, memory_order_relaxed);
    s->parent_slot = 0;
    s->quiet = 0;
    atomic_store_explicit(&s->chained, 0, memory_order_release);
    *id = nsc_slot_id(tb->index * NSC_SLOTS_PER_THREAD + i, nw);
    return s;
}

/* Probing from the cursor, abandoned steps taken too. */
static NSC_OUT_OF_LINE nsc_slot *alloc_probing(nsc_tbuf *tb, uint64_t *id)
{
    nsc_slot *base = nsc_g_pool.slots + (size_t)tb->index * NSC_SLOTS_PER_THREAD;
    for (uint32_t probe = 0; probe < ALLOC_PROBES; probe++) {
        uint32_t i = tb->cursor++ & (NSC_SLOTS_PER_THREAD - 1);
        nsc_slot *s = &base[i];
        uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
        uint64_t nw = claim_word(w);
        if (word_allocatable(w) ? claim(s, w, nw)
                                : abandoned_step(s, w) && claim_abandoned(tb, s, w, nw))
            return claimed(tb, s, i, nw, id);
    }
    return NULL;
}

/* The slot at the cursor is nearly always free or a stopped parent that no
 * child holds: taken here, small enough to inline into the start. */
nsc_slot *nsc_slot_alloc(nsc_tbuf *tb, uint64_t *id)
{
    uint32_t i = tb->cursor & (NSC_SLOTS_PER_THREAD - 1);
    nsc_slot *s = nsc_g_pool.slots + (size_t)tb->index * NSC_SLOTS_PER_THREAD + i;
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uint64_t nw = claim_word(w);
    if (NSC_LIKELY(word_allocatable(w)) && claim(s, w, nw)) {
        tb->cursor++;
        return claimed(tb, s, i, nw, id);
    }
    return alloc_probing(tb, id);
}

/* A started event whose slot is ours, even if already stopped (a parent). */
nsc_slot *nsc_slot_lookup_parent(uint64_t id)
{
    uint32_t index;
    uint64_t w;
    return nsc_slot_find(id, &index, &w);
}

/* A stopped event's slot keeps its generation, and the chained handle, until
 * it is reused; a reuse changes the generation before it writes the handle
 * (release), so a handle read between two matching generations is the event's. */
uintptr_t nsc_slot_chained(uint64_t id)
{
    uint64_t index = id & ((1u << NSC_SLOT_BITS) - 1);
    if (index >= nsc_g_pool.nslots || (id >> 52) != 0)
        return 0;
    nsc_slot *s = &nsc_g_pool.slots[index];
    uint32_t gen = (uint32_t)(id >> NSC_SLOT_BITS);
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uintptr_t h = atomic_load_explicit(&s->chained, memory_order_acquire);
    uint64_t again = atomic_load_explicit(&s->word, memory_order_relaxed);
    return GEN(w) == gen && GEN(again) == gen ? h : 0;
}

void nsc_slot_free(nsc_slot *s)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_relaxed);
    atomic_store_explicit(&s->word, w & ~(uint64_t)0xffffffffu, memory_order_release);
}

int nsc_slot_attach(uint64_t parent_id, uint32_t *parent_index)
{
    uint64_t w;
    nsc_slot *s = nsc_slot_find(parent_id, parent_index, &w);
    if (!s)
        return -1;
    uint64_t nw;
    do {
        if (GEN(w) != (uint32_t)(parent_id >> NSC_SLOT_BITS) || !(w & NSC_W_LIVE) ||
            (w & NSC_W_REFS) == NSC_W_REFS)
            return -1;
        nw = (w + 1) | NSC_W_HAD_CHILD;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, nw, memory_order_acq_rel,
                                                    memory_order_acquire));
    return 0;
}

/* Completions are counted per type like events: emitted, and dropped when
 * the thread's ring is full (or the thread has no buffer). */
static void emit_completion(nsc_tbuf *tb, uint8_t type, uint64_t id, uint64_t ts)
{
    nsc_cell *c = tb ? nsc_tbuf_reserve(tb, 1) : NULL;
    if (NSC_UNLIKELY(!c)) {
        nsc_tcounters *c = tb ? &tb->c : &nsc_g_pool.shared;
        void (*add)(_Atomic uint64_t *) = tb ? nsc_count : nsc_count_shared;
        add(&c->completions_emitted[type]);
        add(&c->completions_dropped[type]);
        return;
    }
    c->done.id = id;
    c->done.ts_ns = ts;
    c->done.type = type;
    c->b[NSC_CELL_MARK] = NSC_CELL_COMPLETION;
    nsc_tbuf_commit(tb, 1);
    nsc_count(&tb->c.completions_emitted[type]);
}

void nsc_slot_coll_extend(nsc_tbuf *tb, nsc_slot *s, uint64_t t)
{
    uint64_t prev = atomic_load_explicit(&s->coll_until, memory_order_relaxed);
    do {
        if (prev >= t)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&s->coll_until, &prev, t, memory_order_relaxed,
                                                    memory_order_relaxed));
    uint64_t from = prev > s->ev.start_ns ? prev : s->ev.start_ns;
    if (t <= from)
        return;
    if (tb)
        nsc_count_add(&tb->c.coll_ns, t - from);
    else
        atomic_fetch_add_explicit(&nsc_g_pool.shared.coll_ns, t - from, memory_order_relaxed);
}

void nsc_slot_detach(nsc_tbuf *tb, uint32_t parent_index, uint64_t now)
{
    nsc_slot *s = &nsc_g_pool.slots[parent_index];
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uint64_t nw, last = 0;
    uint8_t type = s->ev.type; /* our reference keeps the slot ours until the CAS */
    do {
        if (!(w & NSC_W_LIVE) || !(w & NSC_W_REFS))
            return;
        /* The last child out stops latest: only it needs the time. */
        if (!now && (w & NSC_W_REFS) == 1)
            now = nsc_tick();
        if (now) {
            if (type == NSC_T_COLL)
                nsc_slot_coll_extend(tb, s, now);
            /* Read the latest child stop before our decrement can free the slot. */
            last = nsc_atomic_max(&s->last_child_ns, now);
        }
        nw = w - 1;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, nw, memory_order_acq_rel,
                                                    memory_order_acquire));
    if (!(nw & NSC_W_REFS) && (nw & NSC_W_STOPPED))
        emit_completion(tb, type, nsc_slot_id(parent_index, nw), last);
}

void nsc_slot_parent_stopped(nsc_tbuf *tb, nsc_slot *s, uint32_t index)
{
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    uint64_t nw, last;
    do {
        last = atomic_load_explicit(&s->last_child_ns, memory_order_relaxed);
        nw = w | NSC_W_STOPPED;
    } while (!atomic_compare_exchange_weak_explicit(&s->word, &w, nw, memory_order_acq_rel,
                                                    memory_order_acquire));
    /* Every child already stopped before the enqueue returned. */
    if (!(nw & NSC_W_REFS) && (nw & NSC_W_HAD_CHILD))
        emit_completion(tb, s->ev.type, nsc_slot_id(index, nw), last);
}

/* Only the ranges of threads that ever held a buffer can hold an event: the
 * rest of the table was never written, and reading it would fault its pages in. */
static uint32_t used_slots(void)
{
    return (uint32_t)atomic_load(&nsc_g_pool.claimed) * NSC_SLOTS_PER_THREAD;
}

/* Finalize of a communicator: its events that never stopped are emitted with
 * NSC_EVF_OPEN, and parents still waiting for children are released. Only
 * events of ctx are touched; NCCL sends none for it any more. */
void nsc_slot_flush_ctx(nsc_tbuf *tb, uint16_t ctx)
{
    uint64_t now = nsc_tick();
    uint32_t n = used_slots();
    for (uint32_t i = 0; i < n; i++) {
        nsc_slot *s = &nsc_g_pool.slots[i];
        uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
        if (!(w & NSC_W_LIVE) || s->ev.ctx != ctx || word_allocatable(w))
            continue;
        nsc_event ev = s->ev;
        uint32_t quiet = s->quiet;
        if (!atomic_compare_exchange_strong(&s->word, &w, w & ~(uint64_t)0xffffffffu) ||
            (w & NSC_W_STOPPED) || quiet)
            continue;
        ev.stop_ns = now;
        ev.flags |= NSC_EVF_OPEN;
        nsc_event_emit(tb, &ev);
    }
}

/* A fork child that calls in: the events open at the fork are the parent's,
 * to be reported by the parent, not again by the child. */
void nsc_slot_release_all(void)
{
    uint32_t n = used_slots();
    for (uint32_t i = 0; i < n; i++) {
        nsc_slot *s = &nsc_g_pool.slots[i];
        if (atomic_load_explicit(&s->word, memory_order_relaxed) & NSC_W_LIVE)
            nsc_slot_free(s);
    }
}
