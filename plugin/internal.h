/* internal.h: what the plugin's files share (never installed, never exported).
 *
 * The plugin is split by concern: plugin.c translates NCCL's per-version
 * descriptors, hotpath.c records events, slots.c owns handles, tbuf.c the
 * per-thread record rings, intern.c strings, ctxreg.c communicator contexts,
 * shipper.c the background sender (batch.c its backlog, drain.c what goes
 * in a batch), config.c the environment, life.c the
 * init/finalize/fork/unload life cycle, log.c messages, chain.c the other
 * profiler plugin NCCLSCOPE_CHAIN names, cost.c the self-cost guard's
 * sampler. Every symbol here is hidden
 * (-fvisibility=hidden); only the ncclProfiler_vN structs leave the library.
 */
#ifndef NCCLSCOPE_PLUGIN_INTERNAL_H
#define NCCLSCOPE_PLUGIN_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "event.h"
#include "mono.h"
#include "nccl/profiler_common.h"
#include "shed.h"
#include "wire.h"

#define NSC_LIKELY(x) __builtin_expect(!!(x), 1)
#define NSC_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The hot path's entries (plugin.c) have all they call inlined into them,
 * across files at link time, so that a fast lane (hotpath.c) is one function
 * that saves no register; what is NSC_OUT_OF_LINE stays a call: the rare
 * paths, which would otherwise swell each entry and its frame. */
#define NSC_ENTRY __attribute__((flatten))
#define NSC_OUT_OF_LINE __attribute__((noinline))
/* A step of the shipper's per-record loop that GCC would leave a call. */
#define NSC_INLINE __attribute__((always_inline)) inline

/* ---- config.c ---------------------------------------------------------- */

typedef struct nsc_config {
    uint32_t mask;            /* NCCLSCOPE_EVENT_MASK */
    char endpoint[512];       /* ipc://$NCCLSCOPE_RUNDIR/agent.sock or NCCLSCOPE_ENDPOINT */
    uint64_t buffer_bytes;    /* NCCLSCOPE_BUFFER_MB */
    uint32_t max_threads;     /* NCCLSCOPE_THREADS */
    uint32_t heartbeat_ms;    /* NCCLSCOPE_HEARTBEAT_MS */
    uint32_t flush_ms;        /* NCCLSCOPE_FLUSH_MS */
    char chain[512];          /* NCCLSCOPE_CHAIN: another profiler plugin ("" none) */
    uint32_t state_hold_ms;   /* NCCLSCOPE_STATE_HOLD_MS */
    uint32_t budget_ppm;      /* NCCLSCOPE_BUDGET_PCT in millionths; 0: no guard */
    int counter;              /* NCCLSCOPE_CLOCK: the CPU's counter where steady (1) */
    nsc_proc proc;            /* host, job, local rank, gpu (pid filled by life.c) */
} nsc_config;

#define NSC_DEFAULT_MASK                                                                  \
    ((1u << NSC_T_GROUP) | (1u << NSC_T_COLL) | (1u << NSC_T_P2P) |                      \
     (1u << NSC_T_PROXY_OP) | (1u << NSC_T_PROXY_STEP) | (1u << NSC_T_KERNEL_CH) |       \
     (1u << NSC_T_GROUP_API) | (1u << NSC_T_COLL_API) | (1u << NSC_T_P2P_API) |          \
     (1u << NSC_T_KERNEL_LAUNCH) | (1u << NSC_T_CE_COLL))

/* Fill *cfg from the environment. Returns 0, or -1 with a message in err. */
int nsc_config_load(nsc_config *cfg, char *err, size_t errlen);

/* ---- log.c ---------------------------------------------------------------- */

enum { NSC_LOG_WARN = 2, NSC_LOG_INFO = 3 };
void nsc_log_set(ncclDebugLogger_t fn);
void nsc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- tbuf.c: per-thread record queues over one pool of chunks ------------ */

enum { NSC_REC_EVENT = 1, NSC_REC_STATE = 2, NSC_REC_COMPLETION = 3 };

/* A record as the shipper takes it from a queue (nsc_cell_rec): a state or
 * a completion copied out of its cell, an event (two cells) left where it is
 * and encoded from there: the cells are the shipper's until it takes them. */
typedef struct nsc_rec {
    uint32_t kind;
    uint32_t type;  /* completions: the completed event's type */
    union {
        nsc_event *ev;
        nsc_state_rec st;
        nsc_completion done;
    } u;
} nsc_rec;

/* Counters one thread writes alone (relaxed loads/stores: no lock prefix);
 * the shipper sums them. */
typedef struct nsc_tcounters {
    _Atomic uint64_t emitted[NSC_T_COUNT];
    _Atomic uint64_t dropped[NSC_T_COUNT];
    _Atomic uint64_t states_emitted, states_dropped, bad_handles;
    _Atomic uint64_t completions_emitted[NSC_T_COUNT];
    _Atomic uint64_t completions_dropped[NSC_T_COUNT];
    _Atomic uint64_t cost_ns, coll_ns, shed_events; /* the self-cost guard's (cost in
                                                     * nsc_cost_clock's units, coll nsc_tick's) */
    _Atomic uint64_t cost_outliers;
    _Atomic uint64_t chain_errors, orphans;
} nsc_tcounters;

enum { NSC_TB_FREE = 0, NSC_TB_OWNED = 1, NSC_TB_ORPHAN = 2 };

/* In a queue a record is one cache line (a cell) or two: an event is its
 * nsc_event as it is, two cells; a state or a completion, the common kinds,
 * one cell, its fields in the order below. The byte where an event has its
 * type tells them apart: a real type, or one of the marks past every type.
 * A record that would cross a chunk's end starts the next chunk; the cells
 * it leaves are marked as padding. */
typedef union nsc_cell {
    struct {
        uint64_t id, ts_ns, arg;
        uint32_t tid;
        uint8_t state;
    } st;
    struct {
        uint64_t id, ts_ns;
        uint8_t type; /* the completed event's */
    } done;
    _Alignas(64) uint8_t b[64];
} nsc_cell;

#define NSC_CELL_MARK offsetof(nsc_event, type)
enum { NSC_CELL_PAD = 0xfd, NSC_CELL_COMPLETION = 0xfe, NSC_CELL_STATE = 0xff };
#define NSC_EVENT_CELLS ((uint32_t)(sizeof(nsc_event) / sizeof(nsc_cell)))
_Static_assert(sizeof(nsc_cell) == 64 && sizeof(nsc_event) % sizeof(nsc_cell) == 0,
               "an event is whole cells");
_Static_assert((int)NSC_T_COUNT < (int)NSC_CELL_PAD, "a type is never a cell's mark");
_Static_assert(sizeof(((nsc_cell *)0)->st) <= NSC_CELL_MARK &&
                   sizeof(((nsc_cell *)0)->done) <= NSC_CELL_MARK,
               "a state's or a completion's fields end before the mark");

#define NSC_CHUNK_CELLS 512u /* cells per chunk: 32 KiB, 256 states or 128 events */
#define NSC_CHUNK_NONE UINT32_MAX

/* A chunk's links: to the next chunk of the same thread's queue (written by
 * the producer before it publishes a record there), and on the free list. */
typedef struct nsc_chunk {
    _Atomic uint32_t next;
    _Atomic uint32_t free_next;
} nsc_chunk;

/* A thread's queue: the chunks it filled, in order, from the one the shipper
 * reads (rchunk) to the one the owner writes (wchunk). Single producer (the
 * owner), single consumer (the shipper); head and tail count cells. */
typedef struct nsc_tbuf {
    _Atomic uint32_t state;  /* NSC_TB_*: claimed by CAS, released at thread exit */
    uint32_t index;          /* position in the pool: its slots are index*S.. */
    uint32_t tid;            /* owner's kernel thread id, cached at claim */
    uint32_t cursor;         /* next slot to try (owner only) */
    uint32_t cost_left;      /* the cost sampler's (cost.c; owner only): calls to the next sample, */
    uint32_t cost_gap;       /* the calls that sample stands for, */
    uint32_t cost_rng;       /* its random state (xorshift32, never 0), */
    uint32_t cost_med;       /* its running median, in its ticks */
    nsc_cell *wpos;          /* the next cell to write in wchunk (owner only) */
    uint32_t wleft;          /* cells left there (owner only) */
    uint32_t wchunk;         /* NSC_CHUNK_NONE until the first record */
    nsc_tcounters c;
    _Alignas(64) _Atomic uint64_t head; /* cells published by the owner */
    _Atomic uint32_t first;             /* the queue's first chunk (owner, once) */
    _Alignas(64) uint64_t tail;         /* cells taken (shipper only) */
    uint64_t rbase;                     /* cell number where rchunk starts */
    uint32_t rchunk;                    /* NSC_CHUNK_NONE before the first */
} nsc_tbuf;

/* The thread buffers, the chunks and the slots, allocated at the first init. */
typedef struct nsc_pool {
    nsc_tbuf *tbufs;
    uint32_t ntbufs;
    nsc_cell *cells;      /* nchunks * NSC_CHUNK_CELLS */
    nsc_chunk *chunks;
    uint32_t nchunks;
    struct nsc_slot *slots;
    uint32_t nslots;      /* ntbufs * NSC_SLOTS_PER_THREAD */
    _Atomic uint64_t claimed; /* tbufs below this were ever claimed: slots past theirs are unused */
    nsc_tcounters shared; /* threads without a buffer, shipper losses (atomic adds) */
    /* free chunks: (tag << 32) | index, the tag bumped by every change (ABA) */
    _Alignas(64) _Atomic uint64_t free_top;
} nsc_pool;

extern nsc_pool nsc_g_pool;
extern _Atomic uint32_t nsc_g_epoch; /* bumped when every thread must reclaim */

int nsc_pool_create(uint64_t bytes, uint32_t max_threads);
void nsc_pool_destroy(void);
void nsc_pool_reset(int zero_counters);     /* all buffers free and empty */

/* The calling thread's buffer, claimed on first use; NULL if the pool is full. */
nsc_tbuf *nsc_tbuf_self(void);
/* The buffer the calling thread holds already; NULL where nsc_tbuf_self
 * would claim one (it never calls: the hot path's fast lane). */
nsc_tbuf *nsc_tbuf_held(void);
/* The owner's chunk has no room for a record: the rest is padding, and a
 * free chunk is taken (one CAS); NULL when none is free. */
nsc_cell *nsc_tbuf_grow(nsc_tbuf *tb);
/* Room for a record of n cells; NULL when the pool is out of chunks and the
 * caller counts the drop. */
static inline nsc_cell *nsc_tbuf_reserve(nsc_tbuf *tb, uint32_t n)
{
    if (NSC_UNLIKELY(tb->wleft < n))
        return nsc_tbuf_grow(tb);
    return tb->wpos;
}
/* Is there room for n cells in the owner's chunk without taking another? */
static inline int nsc_tbuf_room(const nsc_tbuf *tb, uint32_t n)
{
    return tb->wleft >= n;
}
/* Publish the n cells reserved (head counts cells). */
static inline void nsc_tbuf_commit(nsc_tbuf *tb, uint32_t n)
{
    tb->wpos += n;
    tb->wleft -= n;
    uint64_t head = atomic_load_explicit(&tb->head, memory_order_relaxed);
    atomic_store_explicit(&tb->head, head + n, memory_order_release);
}
/* The state a state's cell holds. */
static inline nsc_state_rec nsc_cell_state(const nsc_cell *c)
{
    return (nsc_state_rec){.id = c->st.id, .ts_ns = c->st.ts_ns, .arg = c->st.arg,
                           .tid = c->st.tid, .state = c->st.state};
}
/* The record in cell c (not padding) into *out; its cells. */
static inline uint32_t nsc_cell_rec(nsc_cell *c, nsc_rec *out)
{
    switch (c->b[NSC_CELL_MARK]) {
    case NSC_CELL_STATE:
        out->kind = NSC_REC_STATE;
        out->type = 0;
        out->u.st = nsc_cell_state(c);
        return 1;
    case NSC_CELL_COMPLETION:
        out->kind = NSC_REC_COMPLETION;
        out->type = c->done.type;
        out->u.done = (nsc_completion){.id = c->done.id, .ts_ns = c->done.ts_ns};
        return 1;
    default:
        out->kind = NSC_REC_EVENT;
        out->type = 0;
        out->u.ev = (nsc_event *)c; /* written there by nsc_event_put's memcpy */
        return NSC_EVENT_CELLS;
    }
}
/* nsc_tbuf_peek at a chunk's end, padding or an empty queue. */
nsc_cell *nsc_tbuf_peek_on(nsc_tbuf *tb, uint64_t head);
/* Shipper side: the first cell of the oldest record not taken, of those
 * published up to head (loaded with acquire); NULL when none. A chunk it
 * has left is returned to the pool. Inline where the record is inside the
 * chunk being read, as nearly all are: a call per record was a tenth of the
 * shipper's instructions. */
static inline nsc_cell *nsc_tbuf_peek(nsc_tbuf *tb, uint64_t head)
{
    uint64_t at = tb->tail - tb->rbase;
    if (NSC_LIKELY(tb->tail != head && tb->rchunk != NSC_CHUNK_NONE && at < NSC_CHUNK_CELLS)) {
        nsc_cell *c = nsc_g_pool.cells + (size_t)tb->rchunk * NSC_CHUNK_CELLS + at;
        if (NSC_LIKELY(c->b[NSC_CELL_MARK] != NSC_CELL_PAD))
            return c;
    }
    return nsc_tbuf_peek_on(tb, head);
}
static inline void nsc_tbuf_take(nsc_tbuf *tb, uint32_t n)
{
    tb->tail += n;
}
/* Shipper side, for an orphan drained up to head: its chunk back, buffer free. */
void nsc_tbuf_recycle(nsc_tbuf *tb);
static inline void nsc_count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}
static inline void nsc_count_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}
/* Counting for a thread without a buffer: shared, so a real atomic add. */
static inline void nsc_count_shared(_Atomic uint64_t *c)
{
    atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}
/* Raise *cell to at least v; the value it holds then. */
static inline uint64_t nsc_atomic_max(_Atomic uint64_t *cell, uint64_t v)
{
    uint64_t cur = atomic_load_explicit(cell, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak_explicit(cell, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed))
        ;
    return cur < v ? v : cur;
}
void nsc_counters_sum(nsc_counters *out);
int nsc_tbuf_key_create(void);
void nsc_tbuf_key_delete(void);
/* What a fork child's first claim runs before it claims (life.c's
 * nsc_life_adopt): set at load, so the queues need not know the life cycle. */
void nsc_tbuf_on_fork(void (*adopt)(void));

/* An event of type counted as emitted and dropped: tb's counters, or the
 * shared ones for a thread without a buffer. */
static inline void nsc_count_drop(nsc_tbuf *tb, int type)
{
    if (tb) {
        nsc_count(&tb->c.emitted[type]);
        nsc_count(&tb->c.dropped[type]);
    } else {
        nsc_count_shared(&nsc_g_pool.shared.emitted[type]);
        nsc_count_shared(&nsc_g_pool.shared.dropped[type]);
    }
}

/* A state already counted as emitted that is lost with its event. */
static inline void nsc_count_state_drop(nsc_tbuf *tb)
{
    if (tb)
        nsc_count(&tb->c.states_dropped);
    else
        nsc_count_shared(&nsc_g_pool.shared.states_dropped);
}

/* A finished event into the cells c that tb's owner reserved, counted. */
static inline void nsc_event_put(nsc_tbuf *tb, nsc_cell *c, const nsc_event *ev)
{
    memcpy(c, ev, sizeof *ev);
    nsc_tbuf_commit(tb, NSC_EVENT_CELLS);
    nsc_count(&tb->c.emitted[ev->type]);
}

/* Append a finished event to tb's queue (counted as emitted, or dropped).
 * Inline: the hot path's stop and the slots' reclaim both append, and the
 * stop must not pay a call for it. */
static inline void nsc_event_emit(nsc_tbuf *tb, const nsc_event *ev)
{
    nsc_cell *c = tb ? nsc_tbuf_reserve(tb, NSC_EVENT_CELLS) : NULL;
    if (NSC_UNLIKELY(!c)) {
        nsc_count_drop(tb, ev->type);
        if (ev->type == NSC_T_KERNEL_CH && ev->d.kernel_ch.ptimer_stop_ns)
            nsc_count_state_drop(tb);
        return;
    }
    nsc_event_put(tb, c, ev);
}

/* ---- slots.c: handles ----------------------------------------------------- */

#define NSC_SLOT_BITS 20
#define NSC_SLOTS_PER_THREAD 1024u
#define NSC_MAX_THREADS ((1u << NSC_SLOT_BITS) / NSC_SLOTS_PER_THREAD)

/* A slot's word: generation in the high 32 bits; flags and the count of live
 * completion children in the low 32. One CAS changes both, so a child can never
 * attach to a slot that was reused under it. */
#define NSC_W_LIVE (1u << 31)
#define NSC_W_STOPPED (1u << 30)
#define NSC_W_HAD_CHILD (1u << 29)
#define NSC_W_REFS 0x00ffffffu

typedef struct nsc_slot {
    _Atomic uint64_t word;
    _Atomic uint64_t last_child_ns; /* latest child stop (parents only) */
    uint32_t parent_slot;           /* child attached to this slot + 1; 0: none */
    uint32_t quiet;                 /* only the chained plugin asked for it: not recorded */
    _Atomic uintptr_t chained;      /* the chained plugin's handle of this event, or 0 */
    _Atomic uint64_t coll_until;    /* Coll: counted as collective time up to here */
    nsc_event ev;                   /* filled at start, completed at stop */
} nsc_slot;

static inline uint64_t nsc_slot_id(uint32_t index, uint64_t word)
{
    return ((word >> 32) << NSC_SLOT_BITS) | index;
}

/* Claim a slot in tb's range, its id in *id; NULL when all are busy. */
nsc_slot *nsc_slot_alloc(nsc_tbuf *tb, uint64_t *id);
/* The slot id names if its generation matches (its word in *word); NULL for
 * anything else. Never touches memory outside the slot table. Inline: every
 * stop and state decodes a handle. */
static inline nsc_slot *nsc_slot_find(uint64_t id, uint32_t *index, uint64_t *word)
{
    uint64_t index64 = id & ((1u << NSC_SLOT_BITS) - 1);
    if (NSC_UNLIKELY(index64 >= nsc_g_pool.nslots || (id >> 52) != 0))
        return NULL;
    nsc_slot *s = &nsc_g_pool.slots[index64];
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    if (NSC_UNLIKELY((uint32_t)(w >> 32) != (uint32_t)(id >> NSC_SLOT_BITS) || !(w & NSC_W_LIVE)))
        return NULL;
    *index = (uint32_t)index64;
    *word = w;
    return s;
}
/* Decode a handle NCCL gave back: the slot if live, not stopped and of the
 * same generation, else NULL. */
static inline nsc_slot *nsc_slot_lookup(uint64_t id, uint32_t *index)
{
    uint64_t index64 = id & ((1u << NSC_SLOT_BITS) - 1);
    if (NSC_UNLIKELY(index64 >= nsc_g_pool.nslots))
        return NULL;
    nsc_slot *s = &nsc_g_pool.slots[index64];
    uint64_t w = atomic_load_explicit(&s->word, memory_order_acquire);
    /* generation, live and not stopped in one compare (the word's bits from
     * NSC_W_STOPPED up); an id with bits past the generation never matches */
    _Static_assert(NSC_W_STOPPED == 1u << 30 && NSC_W_LIVE == 1u << 31, "the word's layout");
    if (NSC_UNLIKELY(w >> 30 != ((id >> NSC_SLOT_BITS) << 2 | 2)))
        return NULL;
    *index = (uint32_t)index64;
    return s;
}
void nsc_slot_free(nsc_slot *s);
/* The chained plugin's handle of event id, also after its stop; 0 when the
 * slot was reused, the id is not ours, or the other has no such event. */
uintptr_t nsc_slot_chained(uint64_t id);
/* The self-cost guard's collective time: a Coll lasts from its start to its
 * stop or its last child's stop, whichever is later; each of those extends
 * it to t (any thread; the caller holds the slot). */
void nsc_slot_coll_extend(nsc_tbuf *tb, nsc_slot *s, uint64_t t);
/* Parent bookkeeping for completion inference. */
int nsc_slot_attach(uint64_t parent_id, uint32_t *parent_index);
/* A child stopped at now; 0: a child whose own stop time is not recorded,
 * the clock then read only if it is the last one out. */
void nsc_slot_detach(nsc_tbuf *tb, uint32_t parent_index, uint64_t now);
void nsc_slot_parent_stopped(nsc_tbuf *tb, nsc_slot *s, uint32_t index);
nsc_slot *nsc_slot_lookup_parent(uint64_t id);
void nsc_slot_flush_ctx(nsc_tbuf *tb, uint16_t ctx);
/* Every live slot freed, its generation kept (its handles become stale). */
void nsc_slot_release_all(void);

/* ---- intern.c ------------------------------------------------------------ */

#define NSC_INTERN_BITS 12
#define NSC_INTERN_CAP (1u << NSC_INTERN_BITS)

/* Keys of the intern table (pointer values); entry i has id i + 1. */
extern _Atomic uintptr_t nsc_intern_keys[NSC_INTERN_CAP];

static inline uint32_t nsc_intern_hash(uintptr_t p)
{
    return (uint32_t)(((uint64_t)p * 0x9e3779b97f4a7c15ull) >> (64 - NSC_INTERN_BITS));
}

/* Probing and first sight of a pointer; nsc_intern is the hot path's door. */
nsc_str nsc_intern_slow(const char *s);

/* A known name is found at its home position: one multiply, one load. */
static inline nsc_str nsc_intern(const char *s)
{
    if (NSC_UNLIKELY(!s))
        return 0;
    uint32_t h = nsc_intern_hash((uintptr_t)s);
    if (NSC_LIKELY(atomic_load_explicit(&nsc_intern_keys[h], memory_order_acquire) ==
                            (uintptr_t)s))
        return (nsc_str)(h + 1);
    return nsc_intern_slow(s);
}
/* Shipper side: text of id once it is complete (waits out a racing writer). */
const char *nsc_intern_text(nsc_str id);

/* ---- ctxreg.c ------------------------------------------------------------ */

#define NSC_MAX_CTX 4096u

/* A context's definition is published, never changed in place: defs[0] at
 * init, defs[1] when v3 learns the communicator; each is written once, before
 * def_version (1 or 2, the one to read) is stored with release. */
typedef struct nsc_pctx {
    _Alignas(256) uint16_t index; /* a power of two apart: the lookup shifts */
    void *chain_ctx;              /* the chained plugin's context; valid if chain_ok */
    int chain_ok;                 /* its init succeeded for this communicator */
    _Atomic uint32_t learned;     /* v3: claimed by the one thread that fills defs[1] */
    uint32_t finalized;           /* under the life lock */
    _Atomic uint32_t def_version;
    nsc_ctx_def defs[2];
} nsc_pctx;

_Static_assert((sizeof(nsc_pctx) & (sizeof(nsc_pctx) - 1)) == 0,
               "a context's size is a power of two");

nsc_pctx *nsc_ctx_create(uint64_t comm_id, const char *name, int nnodes, int nranks,
                         int rank, int api_version);
/* Is p a live context this process created? Checked without dereferencing
 * anything but our own table. */
nsc_pctx *nsc_ctx_lookup(const void *p);
nsc_pctx *nsc_ctx_at(uint16_t index);
void nsc_ctx_learn_comm(nsc_pctx *c, uint64_t comm_id, const char *name, int rank);
/* The current definition (immutable once published) and its version. */
uint32_t nsc_ctx_def_get(const nsc_pctx *c, const nsc_ctx_def **def);

/* ---- clock.c: the CPU's counter and its conversion ------------------------- */

/* Set once at the first init, before any thread records: nsc_tick reads the
 * CPU's counter (1) or CLOCK_MONOTONIC (0). */
extern int nsc_g_counter;

static inline uint64_t nsc_counter(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return nsc_mono_ns();
#endif
}

static inline uint64_t nsc_tick(void)
{
    return NSC_LIKELY(nsc_g_counter) ? nsc_counter() : nsc_mono_ns();
}

/* A calibration pair further than this from the line: the counter jumped. */
#define NSC_CLOCK_JUMP_NS 100000u
/* nsc_clock_start's two first pairs are this far apart: a first slope. */
#define NSC_CLOCK_FIRST_SPAN_NS 2000000

/* The slope spans at most this many pairs back (1.28 s at the shipper's
 * 10 ms): CLOCK_MONOTONIC's rate changes as NTP corrects it, and a slope
 * averaged since the last jump would lag the rate of the moment. */
#define NSC_CLOCK_WINDOW 128u

/* Counts are converted on the line up to 1/NSC_CLOCK_REACH of its span past
 * its latest pair, no further (clock.c). */
#define NSC_CLOCK_REACH 4u

/* Counts to CLOCK_MONOTONIC ns (the shipper's, one owner). */
typedef struct nsc_clock {
    uint64_t t[NSC_CLOCK_WINDOW], m[NSC_CLOCK_WINDOW]; /* the latest pairs since the
                                                         * last jump, pair k at k % window */
    uint64_t t1, m1;      /* the latest pair: the line's origin */
    uint64_t bracket1;    /* the latest pair's bracket */
    double ns_per_tick;   /* the slope from the window's oldest pair to the latest; 0: none yet */
    uint64_t reach;       /* counts past t1 the line converts: a quarter of those the
                           * slope was measured over (kept by a jump, as the slope) */
    uint64_t err_ns;      /* the latest pair's distance from the line, plus its bracket */
    uint64_t max_err_ns;  /* the largest err_ns so far */
    uint64_t jumps;       /* jumps detected */
    uint32_t pairs;       /* pairs since the last jump (the first is the anchor) */
} nsc_clock;

/* Does a /proc/cpuinfo flags line say the TSC is invariant? */
int nsc_clock_invariant(const char *flags);
/* Decide nsc_g_counter for this machine (reads /proc/cpuinfo); its value. */
int nsc_clock_select(void);
/* Fold the pair (tick, mono +- bracket_ns) into c; 1 when it showed a jump
 * (it is then the new anchor), else 0. The test hook for injected counts. */
int nsc_clock_pair(nsc_clock *c, uint64_t tick, uint64_t mono, uint64_t bracket_ns);
/* A pair now: the counter between two CLOCK_MONOTONIC reads, the narrowest
 * of a few tries, into *tick and *mid (the reads' middle); its half width. */
uint64_t nsc_clock_read(uint64_t *tick, uint64_t *mid);
/* Take a pair now (nsc_clock_read) and fold it into c, as nsc_clock_pair. */
int nsc_clock_calibrate(nsc_clock *c);
/* A fresh c with a first slope (two pairs NSC_CLOCK_FIRST_SPAN_NS apart). */
void nsc_clock_start(nsc_clock *c);
uint64_t nsc_clock_ns(const nsc_clock *c, uint64_t tick);
/* Is tick near enough past the latest pair for the line to convert it? */
int nsc_clock_reaches(const nsc_clock *c, uint64_t tick);
/* A record's times (nsc_tick's counts; 0: none, left 0) in CLOCK_MONOTONIC
 * ns, in place, all on one line: a pair is taken first where the line does
 * not reach the latest of them. 1 when that pair showed a jump. */
int nsc_clock_rec_ns(nsc_clock *c, nsc_rec *r);
/* The bound the converted times carry: the largest error measured so far. */
uint64_t nsc_clock_bound(const nsc_clock *c);

/* ---- hotpath.c, cost.c ---------------------------------------------------- */

/* What a version's descriptor translates into before it is recorded. */
typedef struct nsc_start {
    int type;
    uint64_t parent;       /* parentObj as a number */
    int32_t rank;
    pid_t proxy_pid;       /* ProxyOp only, else 0 */
} nsc_start;

/* Begin an event: returns the slot's event to fill (or NULL when dropped),
 * writing the handle into *handle. */
nsc_event *nsc_event_begin(void *context, void **handle, const nsc_start *st);
/* nsc_event_parent (after nsc_chain_active) where a chained plugin is loaded. */
uint64_t nsc_event_parent_chained(uint64_t parent);
void nsc_event_stop(void *handle);
void nsc_event_state(void *handle, int state, uint64_t arg);

/* The self-cost guard: the types shed now (1 << type), set by the shipper
 * from the cost it measures (common/shed.c), read on every start. */
extern _Atomic uint32_t nsc_g_shed;

/* About one call in NSC_COST_EVERY is timed, from its entry (nsc_cost_begin,
 * which counts every call) to its end (nsc_cost_end), and stands for the
 * calls since the one timed before: the cost of the others is estimated
 * without a clock read of their own. The gaps are random, uniform in
 * [1, 2 * NSC_COST_EVERY - 1]: NCCL's calls come in a fixed pattern per
 * collective, and a fixed gap would time the same call of it every time. The
 * clock is the CPU's counter where it is steady, whatever clock stamps the
 * events (nsc_g_cost_counter), else CLOCK_MONOTONIC. */
#define NSC_COST_EVERY 64u
/* A sample is wall time: one longer than NSC_COST_OUTLIER times the thread's
 * running median, that bound kept within [NSC_COST_SAMPLE_MIN_NS,
 * NSC_COST_SAMPLE_MAX_NS], was the thread interrupted or descheduled, not
 * the plugin's work, and would count 64 times over. It is counted as the
 * median and in cost_outliers. */
#define NSC_COST_OUTLIER 16u
#define NSC_COST_SAMPLE_MIN_NS 1000u
#define NSC_COST_SAMPLE_MAX_NS 10000u
/* The median moves by 1/NSC_COST_MEDIAN_STEP of itself per sample. */
#define NSC_COST_MEDIAN_STEP 8u
/* Set once at the first init: samples read the CPU's counter (1) or
 * CLOCK_MONOTONIC (0). */
extern int nsc_g_cost_counter;
/* The bounds in the samples' units, and the sampler's own part of every
 * sample (nsc_cost_calibrate, by the shipper at its start). */
extern _Atomic uint64_t nsc_g_cost_min, nsc_g_cost_max, nsc_g_cost_overhead;
/* Set the three; ns_per_tick converts the counter (ignored on CLOCK_MONOTONIC). */
void nsc_cost_calibrate(double ns_per_tick);
static inline uint64_t nsc_cost_clock(void)
{
    return NSC_LIKELY(nsc_g_cost_counter) ? nsc_counter() : nsc_mono_ns();
}
/* The sampler's clock where the caller knows it is the counter (counter 1:
 * the hot path's lanes, where nsc_g_counter is set, which implies
 * nsc_g_cost_counter): a read that calls nothing. */
static inline uint64_t nsc_cost_read(int counter)
{
    return counter ? nsc_counter() : nsc_cost_clock();
}
/* A call's entry: its sample's start (| 1: never 0), or 0 when it is not
 * sampled. */
static inline uint64_t nsc_cost_start(nsc_tbuf *tb, int counter)
{
    if (NSC_UNLIKELY(tb && --tb->cost_left == 0))
        return nsc_cost_read(counter) | 1;
    return 0;
}
static inline uint64_t nsc_cost_begin(nsc_tbuf *tb)
{
    return nsc_cost_start(tb, 0);
}
/* A claimed buffer's sampler, its random gaps seeded from seed. */
void nsc_cost_seed(nsc_tbuf *tb, uint32_t seed);
/* Fold one sample of ticks into tb's cost: the sampler's overhead taken
 * off, the median's bound applied, weighed by its gap; the next gap drawn. */
void nsc_cost_fold(nsc_tbuf *tb, uint64_t ticks);
static inline void nsc_cost_stop(nsc_tbuf *tb, uint64_t since, int counter)
{
    if (NSC_UNLIKELY(since))
        nsc_cost_fold(tb, nsc_cost_read(counter) - since);
}
static inline void nsc_cost_end(nsc_tbuf *tb, uint64_t since)
{
    nsc_cost_stop(tb, since, 0);
}

/* ---- chain.c: the other profiler plugin (NCCLSCOPE_CHAIN) ----------------- */

/* Set once the chained plugin is loaded; read first on every call. */
extern _Atomic int nsc_g_chain_on;
/* Our own activation mask (cfg.mask), for events NCCL sends for the other. */
extern uint32_t nsc_g_mask;

static inline int nsc_chain_active(void)
{
    return atomic_load_explicit(&nsc_g_chain_on, memory_order_relaxed);
}
/* A parent handle as we record it: 0 for an event only the chained plugin
 * asked for (NCCL passes NULL for a type not in the mask); without a chained
 * plugin, the handle itself, inline. */
static inline uint64_t nsc_event_parent(uint64_t parent)
{
    return NSC_LIKELY(!nsc_chain_active()) || !parent ? parent : nsc_event_parent_chained(parent);
}
/* Load the plugin at path as NCCL would serving api; errors are logged once. */
void nsc_chain_load(const char *path, int api);
void nsc_chain_unload(void);
/* Its init for our context c; *mask becomes the union of both masks. The
 * other's mask starts as NCCL's was before our first init (nccl_mask). */
void nsc_chain_init(nsc_pctx *c, int *mask, int nccl_mask, uint64_t comm_id, const char *name,
                    int nnodes, int nranks, int rank, ncclDebugLogger_t logfn);
void nsc_chain_finalize(nsc_pctx *c);
/* Forward a start whose descriptor is of version api (our handle already
 * made); stop and state of the event behind our handle. */
void nsc_chain_start(int api, void *context, void *handle, const void *descr);
void nsc_chain_stop(void *handle);
void nsc_chain_state(void *handle, int state, const void *args, size_t args_size);

/* ---- shipper.c ----------------------------------------------------------- */

/* Start the shipper thread and its ZeroMQ context (backlog allocated once). */
int nsc_shipper_start(const nsc_config *cfg);
/* Stop it: drain every queue, send until flush_ms, account for what could not
 * be kept, close the socket and terminate the context. */
void nsc_shipper_stop(void);
int nsc_shipper_running(void);
/* In a fork child (atfork handler): drop the parent's context, socket and
 * thread without touching them. */
void nsc_shipper_forget(void);
/* In a fork child that calls in: the parent's batches, sequence and
 * definitions are not ours. */
void nsc_shipper_reset_stream(void);
void nsc_shipper_release(void); /* unload: free the backlog */

#define NSC_MS 1000000ull

/* The shipper's state: the shipper thread's (shipper.c, batch.c, drain.c),
 * but for its start, stop and the fork handlers. */
typedef struct nsc_shipper {
    nsc_config cfg;
    void *zctx;
    void *sock;
    void *ack;      /* SUB on the agent's ack endpoint; NULL: none (not ipc) */
    pthread_t thread;
    int running;
    _Atomic int stop;
    /* backlog: batches by seq, each in one of nbatches BATCH_CAP buffers
     * (ring[seq % nbatches]); [acked, head) were sent and wait for their
     * acknowledgement, [head, tail) wait to be sent; the one at tail is being
     * encoded while `open`. Free buffers are a stack: the one released last
     * is taken next, still resident and in cache, where a ring would walk
     * the whole backlog's pages (a page fault per 4 KiB written) */
    uint8_t *mem;
    struct { uint32_t buf, len; } *ring;
    uint32_t *spare, nspare;
    uint64_t nbatches, acked, head, tail;
    uint64_t stream;            /* this stream's id, random and non-zero */
    int acks;                   /* the agent acknowledges (its ack endpoint was seen) */
    uint64_t acks_probed;       /* when its endpoint was last looked for */
    uint64_t resend_instance, resend_next;  /* the last resend done */
    uint64_t ack_last, ack_since;  /* acked as last seen, and since when it has not moved */
    uint64_t acks_read;            /* when pass() last read acknowledgements */
    nsc_enc enc;
    int open;
    uint64_t open_since, last_begin;
    long idle_ns;  /* the next nap when there is nothing at all to do */
    uint64_t seq;
    uint64_t last_ok, failing_since, defs_reset, last_progress;
    uint32_t drain_from;
    nsc_shed shed;
    uint64_t shed_at;  /* when the guard was last stepped */
    nsc_clock clock;   /* the counter to ns: nsc_tick's where it reads it, the guard's samples */
    uint64_t calibrated_at;
    uint8_t str_sent[NSC_INTERN_CAP + 1];
    uint32_t ctx_sent[NSC_MAX_CTX];
} nsc_shipper;
extern nsc_shipper nsc_ship;

/* ---- batch.c ------------------------------------------------------------- */

#define NSC_SHIP_BATCH_CAP (64u << 10) /* bytes of one batch's buffer */

uint8_t *nsc_ship_batch_buf(uint64_t seq);
void nsc_ship_release_upto(uint64_t next); /* batches before next acknowledged */
void nsc_ship_spares_reset(void);          /* every buffer free */
int nsc_ship_backlog_full(void);
/* Open a batch at the backlog's tail: 0, or -1 when no buffer is free. */
int nsc_ship_batch_begin(uint64_t now, uint64_t base_ns, int final);
void nsc_ship_batch_finish(void); /* the counters end it; it waits to be sent */
void nsc_ship_rec_ns(nsc_rec *r);  /* its times from counts to CLOCK_MONOTONIC ns */
void nsc_ship_calibrate(uint64_t now);
void nsc_ship_counters_sum(nsc_counters *c);

/* ---- drain.c ------------------------------------------------------------- */

/* Definitions go again before the records that need them. */
void nsc_ship_reset_defs(uint64_t now);

/* One pass over the threads' queues into batches: the records taken. */
size_t nsc_ship_drain(uint64_t now);
/* Ship the states held state_hold_ms (all: every one); -1 when the backlog is full. */
int nsc_ship_release_held(uint64_t now, int all);
/* Count as dropped what the queues and the hold still have (final stop). */
void nsc_ship_count_leftovers(void);
/* The communicators not yet sent, in a batch of their own. */
void nsc_ship_announce(uint64_t now);

/* ---- hold.c -------------------------------------------------------------- */

/* The shipper's held states (shipper thread only). A walk over an id's
 * states: for (it = nsc_hold_first(nsc_hold_find(id)); it; )
 * st = nsc_hold_at(it, &it). */
int nsc_hold_init(uint32_t cap);     /* cap a power of two, else -1 */
void nsc_hold_release(void);
void nsc_hold_reset(void);            /* forget every held state */
size_t nsc_hold_count(void);
int nsc_hold_full(void);
void nsc_hold_put(const nsc_state_rec *st, uint64_t now); /* not when full */
const nsc_state_rec *nsc_hold_oldest(uint64_t *held_ns);  /* NULL: none */
void nsc_hold_pop(uint64_t id);                           /* id's first leaves */
uint32_t nsc_hold_find(uint64_t id); /* id's entry, until the hold changes; 0: none held */
uint64_t nsc_hold_first(uint32_t entry);                  /* a walk; 0 for entry 0 */
const nsc_state_rec *nsc_hold_at(uint64_t it, uint64_t *next);
void nsc_hold_drop(uint32_t entry);                       /* its states shipped */

/* ---- life.c -------------------------------------------------------------- */

extern uint32_t nsc_g_pid;
/* Set in a fork child until it first calls in (then nsc_life_adopt runs). */
extern _Atomic int nsc_g_forked;
void nsc_life_adopt(void);
ncclResult_t nsc_life_init(void **context, int *mask, uint64_t comm_id, const char *name,
                           int nnodes, int nranks, int rank, ncclDebugLogger_t logfn,
                           int api_version);
ncclResult_t nsc_life_finalize(void *context);

#endif
