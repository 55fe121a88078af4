/* plugin.c: the exported ncclProfiler_v3 .. ncclProfiler_v7 structs and the
 * translation of each version's descriptor into the version-neutral nsc_event.
 * Every init first asks abi.c whether this NCCL's struct of that name is ours.
 *
 * All versions share one implementation (hotpath.c, life.c); this file only
 * knows where each version keeps its fields. Nothing a descriptor points to is
 * dereferenced here except NCCL's name strings, which the interning table
 * copies once (intern.c); PXN pointers are kept as numbers.
 */
#include "abi.h"
#include "internal.h"
#include "nccl/profiler.h"

#define PTR(p) ((uint64_t)(uintptr_t)(p))

/* The exported data symbol: NCCL's struct of version V followed, inside the
 * same object, by zeroed pointers (abi.h), so a NCCL whose struct of that
 * name has more members reads NULL for them. */
#define NSC_EXPORT(V, ...)                                                                   \
    __attribute__((visibility("default"))) const struct {                                   \
        ncclProfiler_##V##_t api;                                                            \
        const void *zero[NSC_ABI_PAD_PTRS];                                                  \
    } ncclProfiler_##V = {.api = {__VA_ARGS__}}

/* Every version's init: refused where abi.c knows this NCCL's layout of the
 * symbol differs (NCCL then unloads the plugin), before anything is set up. */
static ncclResult_t init_as(int api, void **context, int *mask, uint64_t comm_id,
                            const char *name, int nnodes, int nranks, int rank,
                            ncclDebugLogger_t logfn)
{
    if (nsc_abi_admit(api, logfn) != 0)
        return ncclInternalError;
    return nsc_life_init(context, mask, comm_id, name, nnodes, nranks, rank, logfn, api);
}

/* NCCL's type is one bit of the activation mask; ours is that bit's index. */
static int type_index(uint64_t bit)
{
    return bit && !(bit & (bit - 1)) && bit < (1u << NSC_T_COUNT) ? __builtin_ctzll(bit) : -1;
}

static void learn_comm(const nsc_event *ev, uint64_t comm_hash, const char *name)
{
    nsc_pctx *c = nsc_ctx_at(ev->ctx);
    if (c && !atomic_load_explicit(&c->learned, memory_order_relaxed))
        nsc_ctx_learn_comm(c, comm_hash, name, ev->rank);
}

/* The fields event_fields.h marks NSC_NCCL(name): ev->d.<s>.<member> from
 * (D)-><nccl>.<name>, for a type in any version that has it. Strings are
 * interned (in struct order, so ids come out as they always did); pointers
 * (stream, data, parentGroup) are kept as numbers. */
#define PUT_FIELDS(ev, D, list, s, nccl) list(PUT_ROW, ((ev)->d.s, (D)->nccl))
#define PUT_ROW(a, kind, m, wire, store, json, nccl) PUT_IF(nccl, a, kind, m)
#define PUT_IF(...) PUT_IF_(__VA_ARGS__)
#define PUT_IF_(has, name, a, kind, m) PUT_IF_##has(name, a, kind, m)
#define PUT_IF_1(name, a, kind, m) PUT_DST a.m = FROM_##kind(PUT_SRC a.name);
#define PUT_IF_0(name, a, kind, m)
#define PUT_DST(dst, src) dst
#define PUT_SRC(dst, src) src
#define FROM_STR(x) nsc_intern(x)
#define FROM_U64(x) PTR(x)
#define FROM_U8(x) (x)
#define FROM_U32(x) (x)
#define FROM_I32(x) (x)
#define FROM_I64(x) (x)
#define FROM_PID(x) (x)

/* Types laid out alike in every version from v3 (D is the descriptor). */
#define PUT_CHILD_CASES(ev, D)                                                               \
    case NSC_T_PROXY_OP:                                                                     \
        PUT_FIELDS(ev, D, NSC_FIELDS_PROXY_OP, proxy_op, proxyOp);                           \
        break;                                                                               \
    case NSC_T_PROXY_STEP:                                                                   \
        PUT_FIELDS(ev, D, NSC_FIELDS_PROXY_STEP, proxy_step, proxyStep);                     \
        break;                                                                               \
    case NSC_T_NET_PLUGIN:                                                                   \
        PUT_FIELDS(ev, D, NSC_FIELDS_NET_PLUGIN, net_plugin, netPlugin);                     \
        break

/* Coll and P2p from v4 on (v5+ add parentGroup, v7 more: see their callers). */
#define PUT_COLL_V4(ev, D)                                                                   \
    do {                                                                                     \
        PUT_FIELDS(ev, D, NSC_FIELDS_COLL, coll, coll);                                      \
        (ev)->d.coll.nchannels = (D)->coll.nChannels;                                        \
    } while (0)

#define PUT_P2P_V4(ev, D)                                                                    \
    do {                                                                                     \
        PUT_FIELDS(ev, D, NSC_FIELDS_P2P, p2p, p2p);                                         \
        (ev)->d.p2p.nchannels = (D)->p2p.nChannels;                                          \
    } while (0)

/* KernelCh from v4 on (with pTimer), and the child types. */
#define PUT_KERNEL_CH_V4_CASES(ev, D)                                                        \
    case NSC_T_KERNEL_CH:                                                                    \
        PUT_FIELDS(ev, D, NSC_FIELDS_KERNEL_CH, kernel_ch, kernelCh);                        \
        (ev)->d.kernel_ch.ptimer_start = (D)->kernelCh.pTimer;                               \
        break;                                                                               \
        PUT_CHILD_CASES(ev, D)

/* The v5 union members, shared by v5, v6 and v7 under the same names. */
#define PUT_V5_CASES(ev, D)                                                                  \
    case NSC_T_GROUP_API:                                                                    \
        PUT_FIELDS(ev, D, NSC_FIELDS_GROUP_API, group_api, groupApi);                        \
        (ev)->flags |= (D)->groupApi.graphCaptured ? NSC_EVF_GRAPH : 0;                      \
        break;                                                                               \
    case NSC_T_COLL_API:                                                                     \
        PUT_FIELDS(ev, D, NSC_FIELDS_COLL_API, coll_api, collApi);                           \
        (ev)->flags |= (D)->collApi.graphCaptured ? NSC_EVF_GRAPH : 0;                       \
        break;                                                                               \
    case NSC_T_P2P_API:                                                                      \
        PUT_FIELDS(ev, D, NSC_FIELDS_P2P_API, coll_api, p2pApi);                             \
        (ev)->flags |= (D)->p2pApi.graphCaptured ? NSC_EVF_GRAPH : 0;                        \
        break;                                                                               \
    case NSC_T_KERNEL_LAUNCH:                                                                \
        PUT_FIELDS(ev, D, NSC_FIELDS_KERNEL_LAUNCH, kernel_launch, kernelLaunch);            \
        break;                                                                               \
    case NSC_T_COLL:                                                                         \
        PUT_COLL_V4(ev, D);                                                                  \
        (ev)->d.coll.parent_group = nsc_event_parent(PTR((D)->coll.parentGroup));            \
        break;                                                                               \
    case NSC_T_P2P:                                                                          \
        PUT_P2P_V4(ev, D);                                                                   \
        (ev)->d.p2p.parent_group = nsc_event_parent(PTR((D)->p2p.parentGroup));              \
        break;                                                                               \
        PUT_KERNEL_CH_V4_CASES(ev, D)

/* v6 and v7 copy-engine events. */
#define PUT_CE_CASES(ev, D)                                                                  \
    case NSC_T_CE_COLL:                                                                      \
        PUT_FIELDS(ev, D, NSC_FIELDS_CE_COLL, ce_coll, ceColl);                              \
        break;                                                                               \
    case NSC_T_CE_SYNC:                                                                      \
        PUT_FIELDS(ev, D, NSC_FIELDS_CE_SYNC, ce_sync, ceCollSync);                          \
        break;                                                                               \
    case NSC_T_CE_BATCH:                                                                     \
        PUT_FIELDS(ev, D, NSC_FIELDS_CE_BATCH, ce_batch, ceCollBatch);                       \
        break

/* Begin the event a descriptor describes; NULL when dropped or not an event. */
#define BEGIN(context, eHandle, D)                                                           \
    nsc_event_begin((context), (eHandle),                                                    \
                    &(nsc_start){.type = type_index((D)->type),                              \
                                 .parent = PTR((D)->parentObj),                              \
                                 .rank = (D)->rank,                                          \
                                 .proxy_pid = (D)->type == ncclProfileProxyOp                \
                                                  ? (D)->proxyOp.pid                         \
                                                  : 0})

/* The state argument's meaning depends on the state; v4+ union (8 bytes). */
static uint64_t state_arg_v4(int state, const ncclProfilerEventStateArgs_v4_t *a)
{
    if (!a)
        return 0;
    switch (state) {
    case NSC_S_PROXY_STEP_SEND_GPU_WAIT ... NSC_S_PROXY_STEP_RECV_GPU_WAIT:
    case NSC_S_PROXY_STEP_SEND_PEER_WAIT:
        return a->proxyStep.transSize;
    case NSC_S_PROXY_CTRL_APPEND_END:
        return (uint64_t)a->proxyCtrl.appendedProxyOps;
    case NSC_S_NET_PLUGIN_UPDATE:
        return PTR(a->netPlugin.data);
    case NSC_S_KERNEL_CH_STOP:
    case NSC_S_KERNEL_PHASE_STOP:
        return a->kernelCh.pTimer;
    default:
        return 0;
    }
}

/* v1..v3 state arguments (16 bytes). */
static uint64_t state_arg_v3(int state, const ncclProfilerEventStateArgs_v3_t *a)
{
    if (!a)
        return 0;
    if (state >= NSC_S_PROXY_OP_SEND_POSTED && state <= NSC_S_PROXY_STEP_RECV_GPU_WAIT)
        return a->proxyOp.transSize;
    if (state == NSC_S_PROXY_CTRL_APPEND_END)
        return (uint64_t)a->proxyCtrl.appendedProxyOps;
    return 0;
}

NSC_ENTRY static ncclResult_t stop_event(void *eHandle)
{
    if (NSC_UNLIKELY(nsc_chain_active()))
        nsc_chain_stop(eHandle);
    nsc_event_stop(eHandle);
    return ncclSuccess;
}

static ncclResult_t finalize(void *context)
{
    return nsc_life_finalize(context);
}

/* One start per version: begin the event, hand the descriptor to the chained
 * plugin, copy the fields of its type from the descriptor (CASES), then what
 * else that version adds (MORE). */
#define START_ON(V, CASES, MORE)                                                             \
    NSC_ENTRY static ncclResult_t start_v##V(void *context, void **eHandle,                  \
                                             ncclProfilerEventDescr_v##V##_t *D)             \
    {                                                                                        \
        nsc_event *ev = BEGIN(context, eHandle, D);                                          \
        if (NSC_UNLIKELY(nsc_chain_active()))                                                \
            nsc_chain_start(V, context, *eHandle, D);                                        \
        if (!ev)                                                                             \
            return ncclSuccess;                                                              \
        switch (ev->type) {                                                                  \
            CASES(ev, D);                                                                    \
        }                                                                                    \
        MORE(ev, D);                                                                         \
        return ncclSuccess;                                                                  \
    }
#define NO_MORE(ev, D) (void)0

/* ---- v3 ------------------------------------------------------------------------------ */

static ncclResult_t init_v3(void **context, int *mask)
{
    return init_as(3, context, mask, 0, NULL, -1, -1, -1, NULL);
}

/* v3's init has no communicator: Coll and P2p name it. */
#define PUT_V3_CASES(ev, D)                                                                  \
    case NSC_T_COLL:                                                                         \
        learn_comm(ev, (D)->coll.commHash, (D)->coll.name);                                  \
        PUT_FIELDS(ev, D, NSC_FIELDS_COLL, coll, coll);                                      \
        (ev)->d.coll.nchannels = (D)->coll.nMaxChannels;                                     \
        break;                                                                               \
    case NSC_T_P2P:                                                                          \
        learn_comm(ev, (D)->p2p.commHash, (D)->p2p.name);                                    \
        PUT_FIELDS(ev, D, NSC_FIELDS_P2P, p2p, p2p);                                         \
        break;                                                                               \
    case NSC_T_KERNEL_CH:                                                                    \
        PUT_FIELDS(ev, D, NSC_FIELDS_KERNEL_CH, kernel_ch, kernelCh);                        \
        break;                                                                               \
        PUT_CHILD_CASES(ev, D)
START_ON(3, PUT_V3_CASES, NO_MORE)

NSC_ENTRY static ncclResult_t state_v3(void *eHandle, ncclProfilerEventState_t state,
                                       ncclProfilerEventStateArgs_v3_t *args)
{
    if (NSC_UNLIKELY(nsc_chain_active()))
        nsc_chain_state(eHandle, (int)state, args, sizeof *args);
    nsc_event_state(eHandle, (int)state, state_arg_v3((int)state, args));
    return ncclSuccess;
}

NSC_EXPORT(v3, "ncclscope", init_v3, start_v3, stop_event, state_v3, finalize);

/* ---- v4 ------------------------------------------------------------------------------ */

static ncclResult_t init_v4(void **context, int *mask, const char *commName, uint64_t commHash,
                            int nNodes, int nranks, int rank, ncclDebugLogger_t logfn)
{
    return init_as(4, context, mask, commHash, commName, nNodes, nranks, rank, logfn);
}

#define PUT_V4_CASES(ev, D)                                                                  \
    case NSC_T_COLL:                                                                         \
        PUT_COLL_V4(ev, D);                                                                  \
        break;                                                                               \
    case NSC_T_P2P:                                                                          \
        PUT_P2P_V4(ev, D);                                                                   \
        break;                                                                               \
        PUT_KERNEL_CH_V4_CASES(ev, D)
START_ON(4, PUT_V4_CASES, NO_MORE)

NSC_ENTRY static ncclResult_t state_v4(void *eHandle, ncclProfilerEventState_t state,
                                       ncclProfilerEventStateArgs_v4_t *args)
{
    if (NSC_UNLIKELY(nsc_chain_active()))
        nsc_chain_state(eHandle, (int)state, args, sizeof *args);
    nsc_event_state(eHandle, (int)state, state_arg_v4((int)state, args));
    return ncclSuccess;
}

NSC_EXPORT(v4, "ncclscope", init_v4, start_v4, stop_event, state_v4, finalize);

/* ---- v5, v6, v7 ------------------------------------------------------------------------ */

/* v5, v6 and v7 share init's signature (the id first). */
#define INIT_V5_ON(V)                                                                        \
    static ncclResult_t init_v##V(void **context, uint64_t commId, int *mask,               \
                                  const char *commName, int nNodes, int nranks, int rank,   \
                                  ncclDebugLogger_t logfn)                                  \
    {                                                                                        \
        return init_as(V, context, mask, commId, commName, nNodes, nranks, rank, logfn);    \
    }
INIT_V5_ON(5)
INIT_V5_ON(6)
INIT_V5_ON(7)

#define PUT_V6_CASES(ev, D)                                                                  \
    PUT_V5_CASES(ev, D);                                                                     \
    PUT_CE_CASES(ev, D)
#define PUT_V7_CASES(ev, D)                                                                  \
    PUT_V6_CASES(ev, D);                                                                     \
    case NSC_T_KERNEL_PHASE:                                                                 \
        PUT_FIELDS(ev, D, NSC_FIELDS_KERNEL_PHASE, kernel_phase, kernelPhase);               \
        break

/* v7's additions to the v5 members (userTag: not in every v7, abi.c). */
static void put_v7_more(nsc_event *ev, const ncclProfilerEventDescr_v7_t *D)
{
    bool tag = nsc_abi_user_tag();
    if (ev->type == NSC_T_COLL) {
        ev->d.coll.kernel_variant = nsc_intern(D->coll.kernelVariant);
        ev->d.coll.user_tag = tag ? D->coll.userTag : 0;
        ev->flags |= D->coll.isSymColl ? NSC_EVF_SYM : 0;
    } else if (ev->type == NSC_T_P2P) {
        ev->d.p2p.user_tag = tag ? D->p2p.userTag : 0;
    } else if (ev->type == NSC_T_COLL_API) {
        ev->d.coll_api.user_tag = tag ? D->collApi.userTag : 0;
    } else if (ev->type == NSC_T_P2P_API) {
        ev->d.coll_api.user_tag = tag ? D->p2pApi.userTag : 0;
    } else if (ev->type == NSC_T_CE_COLL) {
        ev->d.ce_coll.user_tag = tag ? D->ceColl.userTag : 0;
    }
}

START_ON(5, PUT_V5_CASES, NO_MORE)
START_ON(6, PUT_V6_CASES, NO_MORE)
START_ON(7, PUT_V7_CASES, put_v7_more)

NSC_EXPORT(v5, "ncclscope", init_v5, start_v5, stop_event, state_v4, finalize);
NSC_EXPORT(v6, "ncclscope", init_v6, start_v6, stop_event, state_v4, finalize);
NSC_EXPORT(v7, "ncclscope", init_v7, start_v7, stop_event, state_v4, finalize);
