/* tbuf.c: the pool of per-thread record queues and handle slots.
 *
 * The pool is allocated once per load, at the first init; NCCL's threads claim
 * a buffer lock-free (one CAS) on their first call and keep it in thread-local
 * storage, tagged with the pool epoch so that a reset (re-init after the last
 * finalize, fork) makes every thread claim again. A thread that exits hands its
 * buffer to the shipper (pthread key destructor), which drains it and frees it.
 *
 * Records live in fixed-size chunks taken from one free list shared by the
 * process, so the memory follows the load: a busy thread holds as many chunks
 * as the shipper is behind, an idle one holds one or none. Each thread's queue
 * is a chain of chunks, single-producer (its thread) single-consumer (the
 * shipper); the owner takes a chunk with one CAS when its chunk is full (a
 * drop when none is free), the shipper returns a chunk when it has read past
 * it. The free list is a stack of chunk indices whose top carries a tag bumped
 * by every change, so a pop that raced with pop + push (ABA) fails its CAS.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

nsc_pool nsc_g_pool;
_Atomic uint32_t nsc_g_epoch;

static pthread_key_t exit_key;
static int exit_key_valid;
static void (*_Atomic adopt)(void);  /* nsc_tbuf_on_fork: set by a load, read by any thread */

/* initial-exec: one TLS access per call without a __tls_get_addr call; the
 * struct is small enough for the static TLS surplus that dlopen may use. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    uint32_t epoch;
    uint32_t tid;
    nsc_tbuf *tb;
} self;

/* ---- chunks ---------------------------------------------------------------- */

/* Half the budget is for thread buffers, slots and chunks (the other half is
 * the shipper's backlog). At least one chunk more than threads: then while a
 * thread waits for a chunk, another one is free or is a chunk some thread has
 * left, which the shipper returns once it has read it. */
static uint32_t chunk_count(uint64_t bytes, uint32_t threads)
{
    uint64_t fixed =
        (uint64_t)threads * (sizeof(nsc_tbuf) + NSC_SLOTS_PER_THREAD * sizeof(nsc_slot));
    uint64_t per_chunk = NSC_CHUNK_CELLS * sizeof(nsc_cell) + sizeof(nsc_chunk);
    uint64_t n = bytes / 2 > fixed ? (bytes / 2 - fixed) / per_chunk : 0;
    return n > threads ? (uint32_t)n : threads + 1;
}

static nsc_cell *chunk_cells(uint32_t chunk)
{
    return nsc_g_pool.cells + (size_t)chunk * NSC_CHUNK_CELLS;
}

static uint64_t next_top(uint64_t top, uint32_t index)
{
    return (((top >> 32) + 1) << 32) | index;
}

static uint32_t chunk_pop(void)
{
    nsc_pool *p = &nsc_g_pool;
    uint64_t top = atomic_load_explicit(&p->free_top, memory_order_acquire);
    for (;;) {
        uint32_t index = (uint32_t)top;
        if (index == NSC_CHUNK_NONE)
            return NSC_CHUNK_NONE;
        /* may read a chunk another thread just popped: then the CAS fails */
        uint32_t next = atomic_load_explicit(&p->chunks[index].free_next, memory_order_relaxed);
        if (atomic_compare_exchange_weak_explicit(&p->free_top, &top, next_top(top, next),
                                                  memory_order_acquire, memory_order_acquire))
            return index;
    }
}

static void chunk_push(uint32_t index)
{
    nsc_pool *p = &nsc_g_pool;
    uint64_t top = atomic_load_explicit(&p->free_top, memory_order_relaxed);
    do
        atomic_store_explicit(&p->chunks[index].free_next, (uint32_t)top,
                              memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&p->free_top, &top, next_top(top, index),
                                                  memory_order_release,
                                                  memory_order_relaxed));
}

/* Every chunk free, in index order (only while nothing records or ships). */
static void chunks_reset(void)
{
    nsc_pool *p = &nsc_g_pool;
    for (uint32_t i = 0; i < p->nchunks; i++) {
        uint32_t next = i + 1 < p->nchunks ? i + 1 : NSC_CHUNK_NONE;
        atomic_store_explicit(&p->chunks[i].free_next, next, memory_order_relaxed);
    }
    uint64_t top = atomic_load_explicit(&p->free_top, memory_order_relaxed);
    atomic_store_explicit(&p->free_top, next_top(top, 0), memory_order_release);
}

/* ---- pool ------------------------------------------------------------------- */

static void tbuf_empty(nsc_tbuf *tb)
{
    tb->wpos = NULL;
    tb->wleft = 0;
    tb->wchunk = tb->rchunk = NSC_CHUNK_NONE;
    atomic_store_explicit(&tb->first, NSC_CHUNK_NONE, memory_order_relaxed);
    atomic_store_explicit(&tb->head, 0, memory_order_relaxed);
    tb->tail = tb->rbase = 0;
}

int nsc_pool_create(uint64_t bytes, uint32_t threads)
{
    nsc_pool *p = &nsc_g_pool;
    p->nchunks = chunk_count(bytes, threads);
    p->ntbufs = threads;
    p->nslots = threads * NSC_SLOTS_PER_THREAD;
    /* pages this large come from mmap, resident only when first written: a
     * chunk when first taken (the free list hands out the most recently
     * returned first); cells start at a cache line */
    p->tbufs = aligned_alloc(64, sizeof(nsc_tbuf) * threads);
    p->cells = aligned_alloc(64, (size_t)p->nchunks * NSC_CHUNK_CELLS * sizeof(nsc_cell));
    p->chunks = calloc(p->nchunks, sizeof(nsc_chunk));
    p->slots = calloc(p->nslots, sizeof(nsc_slot));
    if (!p->tbufs || !p->cells || !p->chunks || !p->slots) {
        free(p->tbufs);
        free(p->cells);
        free(p->chunks);
        free(p->slots);
        memset(p, 0, sizeof *p);
        return -1;
    }
    memset(p->tbufs, 0, sizeof(nsc_tbuf) * threads);
    for (uint32_t i = 0; i < threads; i++) {
        p->tbufs[i].index = i;
        tbuf_empty(&p->tbufs[i]);
    }
    chunks_reset();
    atomic_fetch_add(&nsc_g_epoch, 1);
    return 0;
}

void nsc_pool_destroy(void)
{
    nsc_pool *p = &nsc_g_pool;
    if (!p->tbufs)
        return;
    atomic_fetch_add(&nsc_g_epoch, 1);
    free(p->cells);
    free(p->chunks);
    free(p->tbufs);
    free(p->slots);
    memset(p, 0, sizeof *p);
}

static void counters_zero(nsc_tcounters *c)
{
    for (int t = 0; t < NSC_T_COUNT; t++) {
        atomic_store_explicit(&c->emitted[t], 0, memory_order_relaxed);
        atomic_store_explicit(&c->dropped[t], 0, memory_order_relaxed);
    }
    for (int t = 0; t < NSC_T_COUNT; t++) {
        atomic_store_explicit(&c->completions_emitted[t], 0, memory_order_relaxed);
        atomic_store_explicit(&c->completions_dropped[t], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&c->states_emitted, 0, memory_order_relaxed);
    atomic_store_explicit(&c->states_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&c->bad_handles, 0, memory_order_relaxed);
    atomic_store_explicit(&c->chain_errors, 0, memory_order_relaxed);
    atomic_store_explicit(&c->orphans, 0, memory_order_relaxed);
}

/* Every buffer free and empty; only while no thread records (no communicator
 * is live, or in a fork child where the other threads do not exist). */
void nsc_pool_reset(int zero_counters)
{
    nsc_pool *p = &nsc_g_pool;
    for (uint32_t i = 0; i < p->ntbufs; i++) {
        nsc_tbuf *tb = &p->tbufs[i];
        atomic_store(&tb->state, NSC_TB_FREE);
        tbuf_empty(tb);
        if (zero_counters)
            counters_zero(&tb->c);
    }
    if (zero_counters)
        counters_zero(&p->shared);
    chunks_reset();
    atomic_fetch_add(&nsc_g_epoch, 1);
}

/* Thread exit: hand the buffer to the shipper, unless a reset already took it. */
static void on_thread_exit(void *arg)
{
    nsc_tbuf *tb = arg;
    if (self.epoch != atomic_load(&nsc_g_epoch) || tb->tid != self.tid)
        return;
    uint32_t owned = NSC_TB_OWNED;
    atomic_compare_exchange_strong(&tb->state, &owned, NSC_TB_ORPHAN);
}

int nsc_tbuf_key_create(void)
{
    if (exit_key_valid)
        return 0;
    if (pthread_key_create(&exit_key, on_thread_exit) != 0)
        return -1;
    exit_key_valid = 1;
    return 0;
}

/* Before unload: no destructor may run into unmapped code afterwards. */
void nsc_tbuf_key_delete(void)
{
    if (exit_key_valid)
        pthread_key_delete(exit_key);
    exit_key_valid = 0;
}

void nsc_tbuf_on_fork(void (*fn)(void))
{
    atomic_store_explicit(&adopt, fn, memory_order_relaxed);
}

static nsc_tbuf *claim(void)
{
    /* A fork child's first call: it becomes a profiled process of its own
     * (which bumps the epoch), here and not on the hot path. */
    if (NSC_UNLIKELY(atomic_load_explicit(&nsc_g_forked, memory_order_acquire)))
        atomic_load_explicit(&adopt, memory_order_relaxed)();
    nsc_pool *p = &nsc_g_pool;
    self.epoch = atomic_load_explicit(&nsc_g_epoch, memory_order_acquire);
    self.tb = NULL;
    self.tid = (uint32_t)gettid(); /* not cached across claims: fork changes it */
    for (uint32_t i = 0; i < p->ntbufs; i++) {
        nsc_tbuf *tb = &p->tbufs[i];
        uint32_t expect = NSC_TB_FREE;
        if (atomic_load_explicit(&tb->state, memory_order_relaxed) == NSC_TB_FREE &&
            atomic_compare_exchange_strong(&tb->state, &expect, NSC_TB_OWNED)) {
            tb->tid = self.tid;
            nsc_cost_seed(tb, self.tid);
            self.tb = tb;
            nsc_atomic_max(&p->claimed, i + 1);
            if (exit_key_valid)
                pthread_setspecific(exit_key, tb);
            break;
        }
    }
    return self.tb;
}

nsc_tbuf *nsc_tbuf_held(void)
{
    uint32_t epoch = atomic_load_explicit(&nsc_g_epoch, memory_order_acquire);
    return NSC_LIKELY(self.epoch == epoch) ? self.tb : NULL;
}

nsc_tbuf *nsc_tbuf_self(void)
{
    uint32_t epoch = atomic_load_explicit(&nsc_g_epoch, memory_order_acquire);
    if (NSC_LIKELY(self.epoch == epoch))
        return self.tb;
    return nsc_g_pool.tbufs ? claim() : NULL;
}

/* Where the chunk after `chunk` in tb's queue is named (NONE: the first). */
static _Atomic uint32_t *link_after(nsc_tbuf *tb, uint32_t chunk)
{
    return chunk == NSC_CHUNK_NONE ? &tb->first : &nsc_g_pool.chunks[chunk].next;
}

/* The owner moves to a new chunk, linked after its full one; the link is
 * published with the record (nsc_tbuf_commit's release of head). The cells
 * left in the old one are padding, published at once. */
nsc_cell *nsc_tbuf_grow(nsc_tbuf *tb)
{
    if (tb->wleft) {
        tb->wpos->b[NSC_CELL_MARK] = NSC_CELL_PAD;
        nsc_tbuf_commit(tb, tb->wleft);
    }
    uint32_t chunk = chunk_pop();
    if (chunk == NSC_CHUNK_NONE)
        return NULL;
    atomic_store_explicit(link_after(tb, chunk), NSC_CHUNK_NONE, memory_order_relaxed);
    atomic_store_explicit(link_after(tb, tb->wchunk), chunk, memory_order_relaxed);
    tb->wchunk = chunk;
    tb->wpos = chunk_cells(chunk);
    tb->wleft = NSC_CHUNK_CELLS;
    return tb->wpos;
}

/* Owners fill every chunk before taking the next, so the shipper leaves a
 * chunk after NSC_CHUNK_CELLS cells, and only when a record after them is
 * published (the link is then visible): the chunk is no one's any more.
 * Padding is taken on the way. */
nsc_cell *nsc_tbuf_peek_on(nsc_tbuf *tb, uint64_t head)
{
    for (;;) {
        if (tb->tail == head)
            return NULL;
        if (tb->rchunk == NSC_CHUNK_NONE || tb->tail - tb->rbase == NSC_CHUNK_CELLS) {
            uint32_t next = atomic_load_explicit(link_after(tb, tb->rchunk), memory_order_relaxed);
            if (tb->rchunk != NSC_CHUNK_NONE)
                chunk_push(tb->rchunk);
            tb->rchunk = next;
            tb->rbase = tb->tail;
        }
        nsc_cell *c = chunk_cells(tb->rchunk) + (tb->tail - tb->rbase);
        if (c->b[NSC_CELL_MARK] != NSC_CELL_PAD)
            return c;
        tb->tail = tb->rbase + NSC_CHUNK_CELLS;
    }
}

/* Drained to its head, an orphan holds at most the chunk its owner wrote last. */
void nsc_tbuf_recycle(nsc_tbuf *tb)
{
    if (tb->wchunk != NSC_CHUNK_NONE)
        chunk_push(tb->wchunk);
    tbuf_empty(tb);
    atomic_store_explicit(&tb->state, NSC_TB_FREE, memory_order_release);
}

static void counters_add(nsc_counters *out, nsc_tcounters *c)
{
    for (int t = 0; t < NSC_T_COUNT; t++) {
        out->emitted[t] += atomic_load_explicit(&c->emitted[t], memory_order_relaxed);
        out->dropped[t] += atomic_load_explicit(&c->dropped[t], memory_order_relaxed);
        out->completions_emitted[t] +=
            atomic_load_explicit(&c->completions_emitted[t], memory_order_relaxed);
        out->completions_dropped[t] +=
            atomic_load_explicit(&c->completions_dropped[t], memory_order_relaxed);
    }
    out->states_emitted += atomic_load_explicit(&c->states_emitted, memory_order_relaxed);
    out->states_dropped += atomic_load_explicit(&c->states_dropped, memory_order_relaxed);
    out->bad_handles += atomic_load_explicit(&c->bad_handles, memory_order_relaxed);
    out->cost_ns += atomic_load_explicit(&c->cost_ns, memory_order_relaxed);
    out->cost_outliers += atomic_load_explicit(&c->cost_outliers, memory_order_relaxed);
    out->coll_ns += atomic_load_explicit(&c->coll_ns, memory_order_relaxed);
    out->shed_events += atomic_load_explicit(&c->shed_events, memory_order_relaxed);
    out->chain_errors += atomic_load_explicit(&c->chain_errors, memory_order_relaxed);
    out->orphans += atomic_load_explicit(&c->orphans, memory_order_relaxed);
}

/* The process's cumulative counters: every buffer's plus the buffer-less ones. */
void nsc_counters_sum(nsc_counters *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < nsc_g_pool.ntbufs; i++)
        counters_add(out, &nsc_g_pool.tbufs[i].c);
    counters_add(out, &nsc_g_pool.shared);
}
