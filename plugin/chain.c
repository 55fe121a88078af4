/* chain.c: another profiler plugin beside ours (NCCLSCOPE_CHAIN).
 *
 * NCCL loads one profiler plugin. With NCCLSCOPE_CHAIN set, ours loads the
 * other by NCCL's rules (dlopen, then the newest ncclProfiler_vN it exports up
 * to the version NCCL called us with) and hands it every call: our context
 * keeps its context, our slot its handle (a type only it asked for gets a
 * quiet slot, hotpath.c), so its parents are its own handles. NCCL's mask is
 * the union of both; each plugin sees only the types it asked for.
 *
 * A descriptor goes down from NCCL's version to the other's: the union
 * members of v4..v7 are prefixes of one another; v3 and older name the
 * communicator in Coll and P2p, v2 has no KernelCh or NetPlugin, v1 carries
 * enums. A type the other's version lacks is not forwarded.
 *
 * The other plugin never stops ours: an init error leaves that communicator
 * unchained, a call's error is logged once and the calls go on. Loading and
 * init run under life.c's lock; the forwarding adds no lock, allocation or
 * syscall to the hot path (but for that one warning, on the first error).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "nccl/profiler.h"
#include "ncclenum.h"

#define PTR(p) ((uint64_t)(uintptr_t)(p))

_Atomic int nsc_g_chain_on;
uint32_t nsc_g_mask;

static void *lib;          /* the other plugin, dlopen'ed */
static const void *table;  /* its ncclProfiler_v<version> */
static int version;
static const char *name;
static int their_mask;     /* what it wrote in init (or later: it may, as into NCCL's) */
static int mask_seeded;    /* their_mask has NCCL's initial value */
static _Atomic int warned;

/* Types each API version defines (the bits of NCCL's mask). */
static uint32_t version_types(int v)
{
    static const uint32_t types[8] = {0, 0x3f, 0x3f, 0xff, 0xff, 0xfff, 0x7fff, 0xffff};
    return types[v];
}

/* Call member M of the other's table (of version V) with the arguments that
 * follow; CALL_UP_TO_3 and CALL_FROM_5 for init, whose arguments differ. */
#define CALL_V(V, rc, M, ...)                                                                \
    case V:                                                                                  \
        rc = ((const ncclProfiler_v##V##_t *)table)->M(__VA_ARGS__);                         \
        break
#define CALL_UP_TO_3(rc, M, ...)                                                             \
    CALL_V(1, rc, M, __VA_ARGS__);                                                           \
    CALL_V(2, rc, M, __VA_ARGS__);                                                           \
    CALL_V(3, rc, M, __VA_ARGS__)
#define CALL_FROM_5(rc, M, ...)                                                              \
    CALL_V(5, rc, M, __VA_ARGS__);                                                           \
    CALL_V(6, rc, M, __VA_ARGS__);                                                           \
    CALL_V(7, rc, M, __VA_ARGS__)
#define CALL(rc, M, ...)                                                                     \
    switch (version) {                                                                       \
        CALL_UP_TO_3(rc, M, __VA_ARGS__);                                                    \
        CALL_V(4, rc, M, __VA_ARGS__);                                                       \
        CALL_FROM_5(rc, M, __VA_ARGS__);                                                     \
    default:                                                                                 \
        rc = ncclInternalError;                                                              \
    }

static void failed(const char *call, ncclResult_t rc)
{
    nsc_count_shared(&nsc_g_pool.shared.chain_errors);
    if (atomic_load_explicit(&warned, memory_order_relaxed) || atomic_exchange(&warned, 1))
        return;
    nsc_log(NSC_LOG_WARN, "ncclscope: chained plugin %s: %s returned %d; ncclscope goes on "
            "(further errors of the chained plugin are not logged)", name, call, (int)rc);
}

/* ---- loading ----------------------------------------------------------------------------- */

/* Whether sym lies in our own library (NCCLSCOPE_CHAIN naming ourselves). */
static int is_ours(const void *sym)
{
    Dl_info a, b;
    return dladdr(sym, &a) && dladdr((const void *)&nsc_g_chain_on, &b) &&
           a.dli_fbase == b.dli_fbase;
}

void nsc_chain_load(const char *path, int api)
{
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        nsc_log(NSC_LOG_WARN, "ncclscope: NCCLSCOPE_CHAIN=%s: %s; nothing chained", path,
                dlerror());
        return;
    }
    int newest = api < 7 ? api : 7;
    for (int v = newest; v >= 1 && !table; v--) {
        char sym[32];
        snprintf(sym, sizeof sym, "ncclProfiler_v%d", v);
        table = dlsym(lib, sym);
        version = v;
    }
    if (!table)
        nsc_log(NSC_LOG_WARN, "ncclscope: NCCLSCOPE_CHAIN=%s: no ncclProfiler_v1..v%d in it; "
                "nothing chained", path, newest);
    else if (is_ours(table))
        nsc_log(NSC_LOG_WARN, "ncclscope: NCCLSCOPE_CHAIN=%s: that is ncclscope itself; "
                "nothing chained", path);
    if (!table || is_ours(table)) {
        nsc_chain_unload();
        return;
    }
    const char *n = ((const ncclProfiler_v1_t *)table)->name;
    name = n ? n : "(unnamed)";
    nsc_log(NSC_LOG_INFO, "ncclscope: chained %s (%s) through ncclProfiler_v%d", name, path,
            version);
    atomic_store(&nsc_g_chain_on, 1);
}

void nsc_chain_unload(void)
{
    atomic_store(&nsc_g_chain_on, 0);
    if (lib)
        dlclose(lib);
    lib = NULL;
    table = NULL;
    their_mask = 0;
    mask_seeded = 0;
    atomic_store(&warned, 0);
}

/* ---- init and finalize -------------------------------------------------------------------- */

void nsc_chain_init(nsc_pctx *c, int *mask, int nccl_mask, uint64_t comm_id,
                    const char *comm_name, int nnodes, int nranks, int rank,
                    ncclDebugLogger_t logfn)
{
    /* NCCL's mask is one per process: the other sees it as NCCL left it
     * (NCCL_PROFILE_EVENT_MASK), then as it wrote it itself. */
    if (!mask_seeded)
        their_mask = nccl_mask;
    mask_seeded = 1;
    void *ctx = NULL;
    ncclResult_t rc;
    switch (version) {
        CALL_UP_TO_3(rc, init, &ctx, &their_mask);
        CALL_V(4, rc, init, &ctx, &their_mask, comm_name, comm_id, nnodes, nranks, rank, logfn);
        CALL_FROM_5(rc, init, &ctx, comm_id, &their_mask, comm_name, nnodes, nranks, rank, logfn);
    default:
        rc = ncclInternalError;
    }
    if (rc != ncclSuccess) {
        failed("init", rc);
        return;
    }
    c->chain_ctx = ctx;
    c->chain_ok = 1;
    if (mask)
        *mask |= their_mask & (int)version_types(version);
}

void nsc_chain_finalize(nsc_pctx *c)
{
    if (!c->chain_ok)
        return;
    c->chain_ok = 0;
    ncclResult_t rc;
    CALL(rc, finalize, c->chain_ctx)
    if (rc != ncclSuccess)
        failed("finalize", rc);
}

/* ---- descriptors -------------------------------------------------------------------------- */

/* Every version's descriptor: type, parentObj at 8, rank at 16, union at 24. */
#define AT_PARENT offsetof(ncclProfilerEventDescr_v7_t, parentObj)
#define AT_RANK offsetof(ncclProfilerEventDescr_v7_t, rank)
#define AT_UNION offsetof(ncclProfilerEventDescr_v7_t, proxyOp)
#define AT_PROXY_PID offsetof(ncclProfilerEventDescr_v7_t, proxyOp.pid)
/* From v5, a Coll's and a P2p's Group. */
#define AT_COLL_GROUP offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup)
#define AT_P2P_GROUP offsetof(ncclProfilerEventDescr_v5_t, p2p.parentGroup)

/* Bytes of type T's union member in v4..v7: each is a prefix of the next. */
#define MSZ(V, m) sizeof(((ncclProfilerEventDescr_v##V##_t *)0)->m)
#define V4_SIZES(V)                                                                          \
    [NSC_T_COLL] = MSZ(V, coll), [NSC_T_P2P] = MSZ(V, p2p),                                  \
    [NSC_T_PROXY_OP] = MSZ(V, proxyOp), [NSC_T_PROXY_STEP] = MSZ(V, proxyStep),             \
    [NSC_T_KERNEL_CH] = MSZ(V, kernelCh), [NSC_T_NET_PLUGIN] = MSZ(V, netPlugin)
#define V5_SIZES(V)                                                                          \
    V4_SIZES(V), [NSC_T_GROUP_API] = MSZ(V, groupApi), [NSC_T_COLL_API] = MSZ(V, collApi),   \
    [NSC_T_P2P_API] = MSZ(V, p2pApi), [NSC_T_KERNEL_LAUNCH] = MSZ(V, kernelLaunch)
#define V6_SIZES(V)                                                                          \
    V5_SIZES(V), [NSC_T_CE_COLL] = MSZ(V, ceColl), [NSC_T_CE_SYNC] = MSZ(V, ceCollSync),     \
    [NSC_T_CE_BATCH] = MSZ(V, ceCollBatch)
static const uint8_t sizes[8][NSC_T_COUNT] = {
    [4] = {V4_SIZES(4)},
    [5] = {V5_SIZES(5)},
    [6] = {V6_SIZES(6)},
    [7] = {V6_SIZES(7), [NSC_T_KERNEL_PHASE] = MSZ(7, kernelPhase)},
};

/* v4..v7 down to v4..v7: the head, then the shorter union member. From v5 a
 * Coll's or P2p's parent is its API event and the Group is parentGroup; v4's
 * parent is the Group. */
static void down_v4(int from, const void *src, int t, int to, nsc_any_descr *out)
{
    /* A constant-size copy: a few vector stores, where a memset of a
     * variable size is a call. */
    static const nsc_any_descr zero;
    *out = zero;
    if (to == 4)
        out->v4.type = (uint8_t)(1u << t);
    else
        out->v5.type = 1ull << t;
    memcpy(&out->v4.parentObj, (const char *)src + AT_PARENT, sizeof(void *));
    memcpy(&out->v4.rank, (const char *)src + AT_RANK, sizeof(int));
    size_t n = sizes[from][t] < sizes[to][t] ? sizes[from][t] : sizes[to][t];
    memcpy((char *)out + AT_UNION, (const char *)src + AT_UNION, n);
    if (to == 4 && from >= 5 && t == NSC_T_COLL)
        memcpy(&out->v4.parentObj, (const char *)src + AT_COLL_GROUP, sizeof(void *));
    else if (to == 4 && from >= 5 && t == NSC_T_P2P)
        memcpy(&out->v4.parentObj, (const char *)src + AT_P2P_GROUP, sizeof(void *));
}

/* A zeroed descriptor d with s's type, parent and rank (v1..v4: a byte type). */
#define COPY_HEAD(d, s)                                                                      \
    do {                                                                                     \
        memset((d), 0, sizeof *(d));                                                         \
        (d)->type = (s)->type;                                                               \
        (d)->parentObj = (s)->parentObj;                                                     \
        (d)->rank = (s)->rank;                                                               \
    } while (0)

/* v4 to v3: Coll and P2p name their communicator (ours, from init). */
static void down_v3(const ncclProfilerEventDescr_v4_t *s, int t, const nsc_pctx *c,
                    ncclProfilerEventDescr_v3_t *d)
{
    const nsc_ctx_def *def = NULL;
    if (c)
        nsc_ctx_def_get(c, &def);
    COPY_HEAD(d, s);
    if (t == NSC_T_COLL) {
        d->coll.name = def ? def->name : NULL;
        d->coll.commHash = def ? def->comm_id : 0;
        memcpy(&d->coll.seqNumber, &s->coll.seqNumber,
               offsetof(ncclProfilerEventDescr_v4_t, coll.nChannels) -
                   offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber));
        d->coll.nMaxChannels = s->coll.nChannels;
        d->coll.nWarps = s->coll.nWarps;
        d->coll.algo = s->coll.algo;
        d->coll.proto = s->coll.proto;
    } else if (t == NSC_T_P2P) {
        d->p2p.name = def ? def->name : NULL;
        d->p2p.commHash = def ? def->comm_id : 0;
        d->p2p.func = s->p2p.func;
        d->p2p.buff = s->p2p.buff;
        d->p2p.datatype = s->p2p.datatype;
        d->p2p.count = s->p2p.count;
        d->p2p.peer = s->p2p.peer;
    } else if (t == NSC_T_KERNEL_CH) {
        d->kernelCh.channelId = s->kernelCh.channelId;
    } else if (t == NSC_T_PROXY_OP || t == NSC_T_PROXY_STEP || t == NSC_T_NET_PLUGIN) {
        memcpy((char *)d + AT_UNION, (const char *)s + AT_UNION, sizes[4][t]);
    }
}

/* v3 to v2: trafficBytes (unknown since v3) is 0; the launch members move. */
static void down_v2(const ncclProfilerEventDescr_v3_t *s, int t, ncclProfilerEventDescr_v2_t *d)
{
    COPY_HEAD(d, s);
    if (t == NSC_T_COLL) {
        memcpy(&d->coll, &s->coll,
               offsetof(ncclProfilerEventDescr_v3_t, coll.nMaxChannels) - AT_UNION);
        d->coll.nMaxChannels = s->coll.nMaxChannels;
        d->coll.nWarps = s->coll.nWarps;
        d->coll.algo = s->coll.algo;
        d->coll.proto = s->coll.proto;
    } else if (t == NSC_T_P2P) {
        d->p2p = s->p2p;
    } else if (t == NSC_T_PROXY_OP) {
        d->proxyOp = s->proxyOp;
    } else if (t == NSC_T_PROXY_STEP) {
        d->proxyStep = s->proxyStep;
    }
}

/* v2 to v1: func, datatype, algo and proto as NCCL's enums. */
static void down_v1(const ncclProfilerEventDescr_v2_t *s, int t, ncclProfilerEventDescr_v1_t *d)
{
    COPY_HEAD(d, s);
    if (t == NSC_T_COLL) {
        d->coll.name = s->coll.name;
        d->coll.commHash = s->coll.commHash;
        d->coll.seqNumber = s->coll.seqNumber;
        d->coll.func = nsc_nccl_enum(NSC_NCCL_FUNC, s->coll.func);
        d->coll.sendBuff = s->coll.sendBuff;
        d->coll.recvBuff = s->coll.recvBuff;
        d->coll.count = s->coll.count;
        d->coll.root = s->coll.root;
        d->coll.datatype = nsc_nccl_enum(NSC_NCCL_DTYPE, s->coll.datatype);
        d->coll.trafficBytes = s->coll.trafficBytes;
        d->coll.nMaxChannels = s->coll.nMaxChannels;
        d->coll.nWarps = s->coll.nWarps;
        d->coll.algo = nsc_nccl_enum(NSC_NCCL_ALGO, s->coll.algo);
        d->coll.proto = nsc_nccl_enum(NSC_NCCL_PROTO, s->coll.proto);
        d->coll.isCollnet = s->coll.algo && strncmp(s->coll.algo, "COLLNET", 7) == 0;
        d->coll.isNvls = s->coll.algo && strncmp(s->coll.algo, "NVLS", 4) == 0;
    } else if (t == NSC_T_P2P) {
        d->p2p.name = s->p2p.name;
        d->p2p.commHash = s->p2p.commHash;
        d->p2p.func = nsc_nccl_enum(NSC_NCCL_FUNC, s->p2p.func);
        d->p2p.buff = s->p2p.buff;
        d->p2p.datatype = nsc_nccl_enum(NSC_NCCL_DTYPE, s->p2p.datatype);
        d->p2p.count = s->p2p.count;
        d->p2p.peer = s->p2p.peer;
    } else if (t == NSC_T_PROXY_OP) {
        d->proxyOp = s->proxyOp;
    } else if (t == NSC_T_PROXY_STEP) {
        d->proxyStep = s->proxyStep;
    }
}

/* The descriptor of version `from` as the other's version has it; parents
 * still ours. */
static void convert(int from, const void *src, int t, const nsc_pctx *c, nsc_any_descr *out)
{
    if (version >= 4) {
        down_v4(from, src, t, version, out);
        return;
    }
    ncclProfilerEventDescr_v3_t v3;
    if (from >= 4) {
        nsc_any_descr v4;
        down_v4(from, src, t, 4, &v4);
        down_v3(&v4.v4, t, c, version == 3 ? &out->v3 : &v3);
    } else {
        memcpy(version == 3 ? &out->v3 : &v3, src, sizeof v3);
    }
    if (version == 3)
        return;
    ncclProfilerEventDescr_v2_t v2;
    down_v2(&v3, t, version == 2 ? &out->v2 : &v2);
    if (version == 1)
        down_v1(&v2, t, &out->v1);
}

/* ---- calls -------------------------------------------------------------------------------- */

/* The other's handle paired with ours, for a live (started) event. */
static void *their_handle(void *ours)
{
    uint32_t index;
    nsc_slot *s = ours ? nsc_slot_lookup(PTR(ours), &index) : NULL;
    return s ? (void *)atomic_load_explicit(&s->chained, memory_order_acquire) : NULL;
}

/* A parent as the other knows it: its handle of our event, stopped or not
 * (NULL where it did not ask for that type, as NCCL passes then). A parent we
 * cannot pair (a reused slot) is NULL too: the other never sees a handle it
 * did not make. */
static void *their_parent(void *ours)
{
    return ours ? (void *)nsc_slot_chained(PTR(ours)) : NULL;
}

NSC_OUT_OF_LINE void nsc_chain_start(int from, void *context, void *handle, const void *descr)
{
    uint32_t index;
    nsc_slot *s = handle ? nsc_slot_lookup(PTR(handle), &index) : NULL;
    if (!s)
        return;
    int t = s->ev.type;
    uint32_t want = (uint32_t)__atomic_load_n(&their_mask, __ATOMIC_RELAXED);
    if (!(want & version_types(version) & (1u << t)))
        return;
    /* A PXN ProxyOp comes with another process's context and parent: the
     * context goes on untouched (the other cannot read it either, and tells
     * it from its own as under NCCL; with load addresses not randomised it may
     * equal one of ours), the parent cannot be paired. */
    pid_t pid;
    memcpy(&pid, (const char *)descr + AT_PROXY_PID, sizeof pid);
    int foreign = t == NSC_T_PROXY_OP && (uint32_t)pid != nsc_g_pid;
    const nsc_pctx *c = foreign ? NULL : nsc_ctx_lookup(context);
    if (c && !c->chain_ok)
        return;
    void *ctx = c ? c->chain_ctx : context;
    nsc_any_descr d;
    convert(from, descr, t, c, &d);
    d.v1.parentObj = foreign ? NULL : their_parent(d.v1.parentObj);
    if (version >= 5 && t == NSC_T_COLL)
        d.v5.coll.parentGroup = their_parent(d.v5.coll.parentGroup);
    else if (version >= 5 && t == NSC_T_P2P)
        d.v5.p2p.parentGroup = their_parent(d.v5.p2p.parentGroup);
    void *h = NULL;
    ncclResult_t rc;
    CALL(rc, startEvent, ctx, &h, (void *)&d)
    if (NSC_UNLIKELY(rc != ncclSuccess))
        failed("startEvent", rc);
    atomic_store_explicit(&s->chained, (uintptr_t)h, memory_order_release);
}

NSC_OUT_OF_LINE void nsc_chain_stop(void *handle)
{
    void *h = their_handle(handle);
    if (!h)
        return;
    ncclResult_t rc;
    CALL(rc, stopEvent, h)
    if (NSC_UNLIKELY(rc != ncclSuccess))
        failed("stopEvent", rc);
}

/* The state arguments' first 8 bytes mean the same in every version (a size,
 * a count, a pointer or a timer); v1..v3 have 8 more (ProxyOp steps). */
NSC_OUT_OF_LINE void nsc_chain_state(void *handle, int state, const void *args, size_t args_size)
{
    void *h = their_handle(handle);
    if (!h)
        return;
    ncclProfilerEventStateArgs_v3_t a;
    memset(&a, 0, sizeof a);
    if (args)
        memcpy(&a, args, args_size < sizeof a ? args_size : sizeof a);
    ncclProfilerEventStateArgs_v4_t a4;
    memcpy(&a4, &a, sizeof a4);
    ncclResult_t rc;
    if (version <= 3)
        CALL(rc, recordEventState, h, (ncclProfilerEventState_t)state, args ? (void *)&a : NULL)
    else
        CALL(rc, recordEventState, h, (ncclProfilerEventState_t)state, args ? (void *)&a4 : NULL)
    if (NSC_UNLIKELY(rc != ncclSuccess))
        failed("recordEventState", rc);
}
