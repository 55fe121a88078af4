/* hotpath.c: what NCCL's threads run on every startEvent, stopEvent and
 * recordEventState, whatever the API version.
 *
 * No lock, no allocation, no syscall but the clock where it is CLOCK_MONOTONIC
 * (times are the CPU's counter where it is steady: clock.c, converted by the
 * shipper). A slot is claimed in the
 * thread's own range, the descriptor is translated into it (plugin.c), and at
 * stop the finished event is copied into the thread's queue for the shipper.
 * Every event and state NCCL hands us is counted as emitted, and as dropped
 * when it cannot be kept, so the receiver can account for every one.
 *
 * The self-cost guard lives here too: every call is counted for the sampler
 * (cost.c) and every Coll's time is counted (the shipper compares them), and
 * a start of a type the guard sheds is counted and dropped at once.
 *
 * Each entry has a fast lane for the common case (lane_open) and a general
 * path for every case; docs/plugin-internals.md, "Hot path".
 */

#include "internal.h"

_Atomic uint32_t nsc_g_shed;

/* One more in the counter at offset off of nsc_tcounters: the thread's own,
 * or the shared one for a thread without a buffer. */
static void count_at(nsc_tbuf *tb, size_t off)
{
    if (tb)
        nsc_count((_Atomic uint64_t *)((char *)&tb->c + off));
    else
        nsc_count_shared((_Atomic uint64_t *)((char *)&nsc_g_pool.shared + off));
}

static void count_bad_handle(nsc_tbuf *tb) { count_at(tb, offsetof(nsc_tcounters, bad_handles)); }

/* A child of a foreign ProxyOp (ProxyStep, NetPlugin in a PXN proxy) links to
 * our own ProxyOp slot and inherits its origin; anything else foreign keeps
 * the raw parent address for the agent. */
static void mark_foreign(nsc_event *ev, const void *context, const nsc_start *st)
{
    ev->flags |= NSC_EVF_FOREIGN;
    ev->ctx = NSC_CTX_NONE;
    ev->origin_ctx = (uint64_t)(uintptr_t)context;
    if (ev->type != NSC_T_PROXY_OP) {
        nsc_slot *p = nsc_slot_lookup_parent(st->parent);
        if (p && (p->ev.flags & NSC_EVF_FOREIGN) && p->ev.origin_ctx == ev->origin_ctx) {
            ev->parent = st->parent;
            ev->origin_pid = p->ev.origin_pid;
            return;
        }
    }
    ev->origin_pid = (uint32_t)st->proxy_pid;
    ev->origin_parent = st->parent;
}

/* Started for another process (PXN): a context not from our table, a ProxyOp
 * for another pid, or a step under a foreign ProxyOp or step. The last catches
 * a foreign context that equals one of ours: the plugin's table sits at the
 * same address in every rank's process where load addresses are not
 * randomised (ASLR off, qemu-user), so the address alone cannot tell. */
static inline int is_foreign(const nsc_pctx *c, const nsc_start *st)
{
    const uint32_t proxy = 1u << NSC_T_PROXY_OP | 1u << NSC_T_PROXY_STEP | 1u << NSC_T_NET_PLUGIN;
    if (!c)
        return 1;
    if (NSC_LIKELY(!(proxy >> st->type & 1)))
        return 0;
    if (st->type == NSC_T_PROXY_OP)
        return (uint32_t)st->proxy_pid != nsc_g_pid;
    const nsc_slot *p = nsc_slot_lookup_parent(st->parent);
    return p && (p->ev.flags & NSC_EVF_FOREIGN);
}

/* NCCL up to the fix of NVIDIA/nccl#2300 gives the API events of every rank
 * rank 0 (it never sets their descriptor's rank): the communicator's rank,
 * known from init, is the event's. v3's init knows no rank (-1): kept as 0. */
static int32_t comm_rank(const nsc_pctx *c)
{
    const nsc_ctx_def *def;
    nsc_ctx_def_get(c, &def);
    return def->rank > 0 ? def->rank : 0;
}

uint64_t nsc_event_parent_chained(uint64_t parent)
{
    const nsc_slot *p = nsc_slot_lookup_parent(parent);
    return p && p->quiet ? 0 : parent;
}

/* A type the guard sheds is counted and not recorded. KernelCh keeps a quiet
 * slot all the same: attached to its Coll or P2p, it still says when that
 * completed (slots.c), which the guard's collective time and the live views
 * need; so does ProxyOp where KernelCh is not recorded, else the kernel
 * channels alone say it. Others keep one only for the chained plugin's handle. */
static void count_shed(nsc_tbuf *tb) { count_at(tb, offsetof(nsc_tcounters, shed_events)); }

static int completes_parent(int type)
{
    return type == NSC_T_KERNEL_CH ||
           (type == NSC_T_PROXY_OP && !(nsc_g_mask >> NSC_T_KERNEL_CH & 1));
}

/* NVIDIA/nccl#1544's children under a NULL parent (docs/nccl-abi.md, "Known
 * NCCL bugs"): counted when the parents' types are recorded, since a parent
 * NCCL was not asked for is NULL by right. */
static void note_orphan(nsc_tbuf *tb, const nsc_start *st)
{
    const uint32_t parents = 1u << NSC_T_COLL | 1u << NSC_T_P2P;
    if (!st->parent && (st->type == NSC_T_PROXY_OP || st->type == NSC_T_KERNEL_CH) &&
        (nsc_g_mask & parents) == parents)
        count_at(tb, offsetof(nsc_tcounters, orphans));
}

/* quiet: a slot only for the chained plugin's handle; shedding: a quiet slot
 * for a shed child that completes its parent (see count_shed). Inlined in
 * both starts (the lane's and the general one): in the lane both are 0 and
 * their branches fold away. */
static inline __attribute__((always_inline)) nsc_event *
begin(nsc_tbuf *tb, uint64_t now, void *context, void **handle, const nsc_start *st, int quiet,
      int shedding)
{
    uint64_t id;
    nsc_slot *s = tb ? nsc_slot_alloc(tb, &id) : NULL;
    if (NSC_UNLIKELY(!s)) {
        *handle = NULL;
        if (!quiet && !shedding)
            nsc_count_drop(tb, st->type);
        return NULL;
    }
    nsc_event *ev = &s->ev;
    /* Every member before the payload stored once, the payload zeroed: a
     * copy of a whole zero event first would store the head twice. */
    ev->id = id;
    ev->parent = 0;
    ev->start_ns = now;
    ev->stop_ns = 0;
    ev->tid = tb->tid;
    ev->rank = st->rank;
    ev->ctx = 0;
    ev->type = (uint8_t)st->type;
    ev->flags = 0;
    ev->origin_pid = 0;
    ev->origin_parent = 0;
    ev->origin_ctx = 0;
    memset(&ev->d, 0, sizeof ev->d);
    atomic_store_explicit(&s->coll_until, 0, memory_order_relaxed);
    *handle = (void *)(uintptr_t)id;
    nsc_pctx *c = nsc_ctx_lookup(context);
    int foreign = is_foreign(c, st);
    if (NSC_UNLIKELY(quiet)) {
        /* Kept only to pair the chained plugin's handle: nothing to record
         * (the parent for slots.c's abandoned steps). Its communicator's
         * finalize frees it if NCCL never stops it; a foreign one waits for
         * the last finalize. */
        s->quiet = 1;
        ev->parent = st->parent;
        ev->ctx = foreign ? NSC_CTX_NONE : c->index;
        return NULL;
    }
    if (NSC_UNLIKELY(foreign)) {
        mark_foreign(ev, context, st);
    } else {
        ev->ctx = c->index;
        if (NSC_UNLIKELY(ev->rank == 0) && st->type >= NSC_T_GROUP_API &&
            st->type <= NSC_T_KERNEL_LAUNCH)
            ev->rank = comm_rank(c);
        ev->parent = nsc_event_parent(st->parent);
        uint32_t parent_index;
        const uint32_t children = 1u << NSC_T_PROXY_OP | 1u << NSC_T_KERNEL_CH;
        if ((children >> st->type & 1) && ev->parent &&
            nsc_slot_attach(ev->parent, &parent_index) == 0)
            s->parent_slot = parent_index + 1;
    }
    s->quiet = (uint32_t)shedding;
    return shedding ? NULL : ev;
}

/* The general start, for every case: a thread's first call or one without a
 * buffer, events on CLOCK_MONOTONIC, a chained plugin, a type the guard
 * sheds. */
static NSC_OUT_OF_LINE nsc_event *begin_any(void *context, void **handle, const nsc_start *st)
{
    *handle = NULL;
    if (NSC_UNLIKELY((unsigned)st->type >= NSC_T_COUNT))
        return NULL;
    nsc_tbuf *tb = nsc_tbuf_self();
    uint64_t since = nsc_cost_begin(tb);
    int quiet = NSC_UNLIKELY(nsc_chain_active()) && !(nsc_g_mask >> st->type & 1);
    int shedding = 0;
    if (NSC_UNLIKELY(atomic_load_explicit(&nsc_g_shed, memory_order_relaxed) >> st->type & 1) &&
        !quiet) {
        count_shed(tb);
        shedding = completes_parent(st->type);
        if (!shedding && !nsc_chain_active()) {
            nsc_cost_end(tb, since);
            return NULL;
        }
        quiet = !shedding;
    }
    if (NSC_UNLIKELY(!st->parent))
        note_orphan(tb, st);
    /* a shed child's start time is never read: no clock */
    uint64_t now = shedding ? 0 : nsc_tick();
    nsc_event *ev = begin(tb, now, context, handle, st, quiet, shedding);
    nsc_cost_end(tb, since);
    return ev;
}

/* The fast lanes of every call: the thread holds its buffer, the clock is
 * the counter, and the record fits in the chunk. Anything else goes the
 * general way (begin_any, stop_any, state_any), which checks it all again.
 * The lanes of stop and state call nothing but the sampler's fold (about one
 * call in NSC_COST_EVERY, at their end), so they save hardly a register; the
 * sampler times the lanes themselves, as most calls take them. */
static inline int lane_open(nsc_tbuf *tb, uint32_t cells)
{
    return NSC_LIKELY(tb && nsc_g_counter && nsc_tbuf_room(tb, cells));
}

/* A start without a chained plugin, of a type the guard does not shed. */
nsc_event *nsc_event_begin(void *context, void **handle, const nsc_start *st)
{
    nsc_tbuf *tb = nsc_tbuf_held();
    if (!lane_open(tb, 0) ||
        NSC_UNLIKELY((unsigned)st->type >= NSC_T_COUNT || nsc_chain_active() ||
                     atomic_load_explicit(&nsc_g_shed, memory_order_relaxed) >> st->type & 1))
        return begin_any(context, handle, st);
    uint64_t since = nsc_cost_start(tb, 1);
    if (NSC_UNLIKELY(!st->parent))
        note_orphan(tb, st);
    nsc_event *ev = begin(tb, nsc_counter(), context, handle, st, 0, 0);
    nsc_cost_stop(tb, since, 1);
    return ev;
}

static void stop(nsc_tbuf *tb, void *handle)
{
    uint32_t index;
    nsc_slot *s = nsc_slot_lookup((uint64_t)(uintptr_t)handle, &index);
    if (NSC_UNLIKELY(!s)) {
        count_bad_handle(tb);
        return;
    }
    /* a shed child's own stop time is never read (see nsc_slot_detach) */
    uint64_t now = s->quiet && s->parent_slot ? 0 : nsc_tick();
    s->ev.stop_ns = now;
    if (s->ev.type == NSC_T_COLL)
        nsc_slot_coll_extend(tb, s, now);
    if (NSC_LIKELY(!s->quiet))
        nsc_event_emit(tb, &s->ev);
    if (s->parent_slot)
        nsc_slot_detach(tb, s->parent_slot - 1, now);
    if (s->ev.type == NSC_T_COLL || s->ev.type == NSC_T_P2P)
        nsc_slot_parent_stopped(tb, s, index);
    else
        nsc_slot_free(s);
}

/* The general stop, for every case. */
static NSC_OUT_OF_LINE void stop_any(void *handle)
{
    if (!handle)
        return;
    nsc_tbuf *tb = nsc_tbuf_self();
    uint64_t since = nsc_cost_begin(tb);
    stop(tb, handle);
    nsc_cost_end(tb, since);
}

/* A recorded event's stop; a child (it has a parent slot) goes the general
 * way, for its parent's detach. */
void nsc_event_stop(void *handle)
{
    nsc_tbuf *tb = nsc_tbuf_held();
    uint32_t index;
    nsc_slot *s;
    if (!lane_open(tb, NSC_EVENT_CELLS) ||
        NSC_UNLIKELY(!(s = nsc_slot_lookup((uint64_t)(uintptr_t)handle, &index)) || s->quiet ||
                     s->parent_slot)) {
        stop_any(handle);
        return;
    }
    uint64_t since = nsc_cost_start(tb, 1);
    uint64_t now = nsc_counter();
    uint8_t type = s->ev.type;
    s->ev.stop_ns = now;
    if (type == NSC_T_COLL)
        nsc_slot_coll_extend(tb, s, now);
    nsc_event_put(tb, tb->wpos, &s->ev);
    if (type == NSC_T_COLL || type == NSC_T_P2P)
        nsc_slot_parent_stopped(tb, s, index);
    else
        nsc_slot_free(s);
    nsc_cost_stop(tb, since, 1);
}

/* A state's cell at c, reserved in tb's chunk, published. */
static inline void put_state(nsc_tbuf *tb, nsc_cell *c, void *handle, int state, uint64_t arg,
                             uint64_t now)
{
    c->st.id = (uint64_t)(uintptr_t)handle;
    c->st.ts_ns = now;
    c->st.arg = arg;
    c->st.tid = tb->tid;
    c->st.state = (uint8_t)state;
    c->b[NSC_CELL_MARK] = NSC_CELL_STATE;
    nsc_tbuf_commit(tb, 1);
}

/* The clock is read once the state is known to be recorded: a shed child's
 * states (quiet slots) cost a lookup. */
static void record_state(nsc_tbuf *tb, void *handle, int state, uint64_t arg)
{
    uint32_t index;
    nsc_slot *s = nsc_slot_lookup((uint64_t)(uintptr_t)handle, &index);
    if (NSC_UNLIKELY(!s || (unsigned)state >= NSC_S_COUNT)) {
        count_bad_handle(tb);
        return;
    }
    if (NSC_UNLIKELY(s->quiet))
        return;
    if (!tb) {
        nsc_count_shared(&nsc_g_pool.shared.states_emitted);
        nsc_count_shared(&nsc_g_pool.shared.states_dropped);
        return;
    }
    uint64_t now = nsc_tick();
    nsc_count(&tb->c.states_emitted);
    /* KernelChStop travels inside its KernelCh event (ptimer_stop). */
    if (state == NSC_S_KERNEL_CH_STOP && s->ev.type == NSC_T_KERNEL_CH) {
        s->ev.d.kernel_ch.ptimer_stop = arg;
        s->ev.d.kernel_ch.ptimer_stop_ns = now;
        return;
    }
    nsc_cell *c = nsc_tbuf_reserve(tb, 1);
    if (NSC_UNLIKELY(!c)) {
        nsc_count(&tb->c.states_dropped);
        return;
    }
    put_state(tb, c, handle, state, arg, now);
}

/* The general state, for every case. */
static NSC_OUT_OF_LINE void state_any(void *handle, int state, uint64_t arg)
{
    if (!handle)
        return;
    nsc_tbuf *tb = nsc_tbuf_self();
    uint64_t since = nsc_cost_begin(tb);
    record_state(tb, handle, state, arg);
    nsc_cost_end(tb, since);
}

/* A recorded event's state; KernelChStop goes the general way, as it may
 * fold into its event. */
void nsc_event_state(void *handle, int state, uint64_t arg)
{
    nsc_tbuf *tb = nsc_tbuf_held();
    uint32_t index;
    const nsc_slot *s;
    if (!lane_open(tb, 1) || NSC_UNLIKELY((unsigned)state >= NSC_S_COUNT) ||
        state == NSC_S_KERNEL_CH_STOP ||
        NSC_UNLIKELY(!(s = nsc_slot_lookup((uint64_t)(uintptr_t)handle, &index)) || s->quiet)) {
        state_any(handle, state, arg);
        return;
    }
    uint64_t since = nsc_cost_start(tb, 1);
    nsc_count(&tb->c.states_emitted);
    put_state(tb, tb->wpos, handle, state, arg, nsc_counter());
    nsc_cost_stop(tb, since, 1);
}
