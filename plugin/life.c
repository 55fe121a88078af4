/* life.c: init and finalize, fork and unload.
 *
 * The first init of a load reads the configuration and allocates everything
 * the hot path will ever use (pool, slots, backlog). A session runs from the
 * first live communicator to the last finalize: the shipper runs, and the last
 * finalize flushes, joins it and terminates the ZeroMQ context, so the library
 * can be dlclose'd and dlopen'ed again. init and finalize are rare and take a
 * mutex; nothing else does.
 *
 * fork() leaves the parent alone: its shipper runs on. A child (a DataLoader
 * worker, a subprocess) is inert: the atfork child handler only stores (no
 * allocation, no thread, no socket), forgetting the parent's ZeroMQ context
 * and thread, which are not the child's. Only when the child itself calls in
 * (init, or an event's first call on a thread, which takes the claim path
 * anyway) does it become a profiled process of its own: empty buffers and
 * backlog, zero counters, none of the parent's open events, a new stream.
 */
#include <pthread.h>
#include <unistd.h>

#include "internal.h"

uint32_t nsc_g_pid;
_Atomic int nsc_g_forked;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int loaded;       /* config read, pool allocated */
static int atfork_done;  /* glibc unregisters the handlers at dlclose */
static int ncomms;       /* live communicators */
static nsc_config cfg;

/* No init or finalize is half done when the child's copy is taken. */
static void fork_prepare(void)
{
    pthread_mutex_lock(&lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

/* Stores, getpid and the unlock of prepare's lock only: the child of a
 * threaded process may run nothing that allocates or takes a lock before it
 * execs. The epoch bump sends its next event call through the claim path,
 * which adopts. */
static void fork_child(void)
{
    nsc_g_pid = (uint32_t)getpid();
    nsc_shipper_forget();
    atomic_store_explicit(&nsc_g_forked, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&nsc_g_epoch, 1, memory_order_release);
    pthread_mutex_unlock(&lock);
}

/* Under the lock: a fork child's first call makes it a process of its own. */
static void adopt_locked(void)
{
    if (!atomic_load_explicit(&nsc_g_forked, memory_order_relaxed))
        return;
    if (loaded) {
        nsc_pool_reset(1);
        nsc_slot_release_all();
        nsc_shipper_reset_stream();
    }
    if (ncomms > 0 && nsc_shipper_start(&cfg) != 0)
        nsc_log(NSC_LOG_WARN, "ncclscope: shipper did not start in fork child");
    atomic_store_explicit(&nsc_g_forked, 0, memory_order_release);
}

void nsc_life_adopt(void)
{
    pthread_mutex_lock(&lock);
    adopt_locked();
    pthread_mutex_unlock(&lock);
}

static int load(int api)
{
    char err[256];
    if (nsc_config_load(&cfg, err, sizeof err) != 0) {
        nsc_log(NSC_LOG_WARN, "ncclscope: %s; profiling disabled", err);
        return -1;
    }
    nsc_g_pid = (uint32_t)getpid();
    /* the guard's samples time our own calls: the counter wherever it is
     * steady, also where events are stamped with CLOCK_MONOTONIC */
    nsc_g_cost_counter = nsc_clock_select();
    nsc_g_counter = cfg.counter && nsc_g_cost_counter;
    nsc_tbuf_on_fork(nsc_life_adopt);
    if (nsc_pool_create(cfg.buffer_bytes, cfg.max_threads) != 0 || nsc_tbuf_key_create() != 0) {
        nsc_log(NSC_LOG_WARN, "ncclscope: cannot allocate buffers; profiling disabled");
        nsc_pool_destroy();
        return -1;
    }
    if (!atfork_done && pthread_atfork(fork_prepare, fork_parent, fork_child) == 0)
        atfork_done = 1;
    loaded = 1;
    nsc_g_mask = cfg.mask;
    if (cfg.chain[0])
        nsc_chain_load(cfg.chain, api);
    nsc_log(NSC_LOG_INFO,
            "ncclscope: mask 0x%x, endpoint %s, buffer %llu MiB, %u threads, clock %s",
            cfg.mask, cfg.endpoint, (unsigned long long)(cfg.buffer_bytes >> 20),
            cfg.max_threads, nsc_g_counter ? "counter" : "monotonic");
    return 0;
}

ncclResult_t nsc_life_init(void **context, int *mask, uint64_t comm_id, const char *name,
                           int nnodes, int nranks, int rank, ncclDebugLogger_t logfn,
                           int api_version)
{
    pthread_mutex_lock(&lock);
    nsc_log_set(logfn);
    ncclResult_t rc = ncclInternalError;
    nsc_pctx *c = NULL;
    adopt_locked();
    if (!loaded && load(api_version) != 0)
        goto out;
    if (ncomms == 0 && nsc_shipper_start(&cfg) != 0) {
        nsc_log(NSC_LOG_WARN, "ncclscope: cannot start the shipper; profiling disabled");
        goto out;
    }
    c = nsc_ctx_create(comm_id, name, nnodes, nranks, rank, api_version);
    if (!c) {
        nsc_log(NSC_LOG_WARN, "ncclscope: more than %u communicators in this load", NSC_MAX_CTX);
        if (ncomms == 0)
            nsc_shipper_stop();
        goto out;
    }
    ncomms++;
    *context = c;
    int nccl_mask = mask ? *mask : 0;
    if (mask)
        *mask = (int)cfg.mask;
    if (nsc_chain_active())
        nsc_chain_init(c, mask, nccl_mask, comm_id, name, nnodes, nranks, rank, logfn);
    rc = ncclSuccess;
out:
    pthread_mutex_unlock(&lock);
    return rc;
}

ncclResult_t nsc_life_finalize(void *context)
{
    pthread_mutex_lock(&lock);
    nsc_pctx *c = nsc_ctx_lookup(context);
    if (c && !c->finalized) {
        c->finalized = 1;
        /* A fork child that never called in has no events of its own: the
         * open ones are the parent's, and it has no shipper to stop. */
        if (!atomic_load_explicit(&nsc_g_forked, memory_order_relaxed))
            nsc_slot_flush_ctx(nsc_tbuf_self(), c->index);
        nsc_chain_finalize(c);
        if (--ncomms == 0) {
            nsc_shipper_stop();
            nsc_pool_reset(0);
        }
    }
    pthread_mutex_unlock(&lock);
    return ncclSuccess;
}

/* dlclose, or exit. With communicators still live (exit without finalize),
 * NCCL's threads may still call in: flush, but free nothing. */
__attribute__((destructor)) static void unload(void)
{
    pthread_mutex_lock(&lock);
    nsc_shipper_stop();
    if (ncomms == 0) {
        nsc_tbuf_key_delete();
        nsc_pool_destroy();
        nsc_shipper_release();
        nsc_chain_unload();
        loaded = 0;
    }
    pthread_mutex_unlock(&lock);
}
