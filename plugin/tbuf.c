/* tbuf.c: the pool of per-thread record rings and handle slots.
 *
 * The pool is allocated once per load, at the first init; NCCL's threads claim
 * a buffer lock-free (one CAS) on their first call and keep it in thread-local
 * storage, tagged with the pool epoch so that a reset (re-init after the last
 * finalize, fork) makes every thread claim again. A thread that exits hands its
 * buffer to the shipper (pthread key destructor), which drains it and frees it.
 * Each ring is single-producer (its thread) single-consumer (the shipper).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define MIN_RECS 256u

nsc_pool nsc_g_pool;
_Atomic uint32_t nsc_g_epoch;

static pthread_key_t exit_key;
static int exit_key_valid;

/* initial-exec: one TLS access per call without a __tls_get_addr call; the
 * struct is small enough for the static TLS surplus that dlopen may use. */
static __thread __attribute__((tls_model("initial-exec"))) struct {
    uint32_t epoch;
    uint32_t tid;
    nsc_tbuf *tb;
} self;

/* Records per thread: half the budget is for thread buffers (the other half is
 * the shipper's backlog); each buffer also holds its slots. */
static uint64_t recs_per_thread(uint64_t bytes, uint32_t threads)
{
    uint64_t per_thread = bytes / 2 / threads;
    uint64_t slot_bytes = (uint64_t)NSC_SLOTS_PER_THREAD * sizeof(nsc_slot);
    uint64_t n = per_thread > slot_bytes ? (per_thread - slot_bytes) / sizeof(nsc_rec) : 0;
    uint64_t p = MIN_RECS;
    while (p * 2 <= n)
        p *= 2;
    return p;
}

size_t nsc_pool_bytes(uint64_t bytes, uint32_t threads)
{
    uint64_t recs = recs_per_thread(bytes, threads);
    return (size_t)threads * (sizeof(nsc_tbuf) + recs * sizeof(nsc_rec) +
                              NSC_SLOTS_PER_THREAD * sizeof(nsc_slot));
}

int nsc_pool_create(uint64_t bytes, uint32_t threads)
{
    nsc_pool *p = &nsc_g_pool;
    p->nrecs = recs_per_thread(bytes, threads);
    p->ntbufs = threads;
    p->nslots = threads * NSC_SLOTS_PER_THREAD;
    /* calloc'ed pages become resident only when a thread first writes them. */
    p->tbufs = aligned_alloc(64, sizeof(nsc_tbuf) * threads);
    nsc_rec *recs = calloc((size_t)threads * p->nrecs, sizeof(nsc_rec));
    p->slots = calloc(p->nslots, sizeof(nsc_slot));
    if (!p->tbufs || !recs || !p->slots) {
        free(p->tbufs);
        free(recs);
        free(p->slots);
        memset(p, 0, sizeof *p);
        return -1;
    }
    memset(p->tbufs, 0, sizeof(nsc_tbuf) * threads);
    for (uint32_t i = 0; i < threads; i++) {
        p->tbufs[i].index = i;
        p->tbufs[i].recs = recs + (size_t)i * p->nrecs;
        p->tbufs[i].nrecs = p->nrecs;
    }
    atomic_fetch_add(&nsc_g_epoch, 1);
    return 0;
}

void nsc_pool_destroy(void)
{
    nsc_pool *p = &nsc_g_pool;
    if (!p->tbufs)
        return;
    atomic_fetch_add(&nsc_g_epoch, 1);
    free(p->tbufs[0].recs);
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
    atomic_store_explicit(&c->states_emitted, 0, memory_order_relaxed);
    atomic_store_explicit(&c->states_dropped, 0, memory_order_relaxed);
    atomic_store_explicit(&c->bad_handles, 0, memory_order_relaxed);
}

/* Every buffer free and empty; only while no thread records (no communicator
 * is live, or in a fork child where the other threads do not exist). */
void nsc_pool_reset(int zero_counters)
{
    nsc_pool *p = &nsc_g_pool;
    for (uint32_t i = 0; i < p->ntbufs; i++) {
        nsc_tbuf *tb = &p->tbufs[i];
        atomic_store(&tb->state, NSC_TB_FREE);
        atomic_store(&tb->head, 0);
        atomic_store(&tb->tail, 0);
        tb->cached_tail = 0;
        if (zero_counters)
            counters_zero(&tb->c);
    }
    if (zero_counters)
        counters_zero(&p->shared);
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

static nsc_tbuf *claim(uint32_t epoch)
{
    nsc_pool *p = &nsc_g_pool;
    self.epoch = epoch;
    self.tb = NULL;
    self.tid = (uint32_t)gettid(); /* not cached across claims: fork changes it */
    for (uint32_t i = 0; i < p->ntbufs; i++) {
        nsc_tbuf *tb = &p->tbufs[i];
        uint32_t expect = NSC_TB_FREE;
        if (atomic_load_explicit(&tb->state, memory_order_relaxed) == NSC_TB_FREE &&
            atomic_compare_exchange_strong(&tb->state, &expect, NSC_TB_OWNED)) {
            tb->tid = self.tid;
            self.tb = tb;
            if (exit_key_valid)
                pthread_setspecific(exit_key, tb);
            break;
        }
    }
    return self.tb;
}

nsc_tbuf *nsc_tbuf_self(void)
{
    uint32_t epoch = atomic_load_explicit(&nsc_g_epoch, memory_order_acquire);
    if (NSC_LIKELY(self.epoch == epoch))
        return self.tb;
    return nsc_g_pool.tbufs ? claim(epoch) : NULL;
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
}

/* The process's cumulative counters: every buffer's plus the buffer-less ones. */
void nsc_counters_sum(nsc_counters *out)
{
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < nsc_g_pool.ntbufs; i++)
        counters_add(out, &nsc_g_pool.tbufs[i].c);
    counters_add(out, &nsc_g_pool.shared);
}
