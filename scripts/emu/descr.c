/* descr.c: version-neutral events -> the descriptor and state arguments of
 * each profiler API version, through our ABI headers (plugin/nccl/).
 *
 * v1 carries func, datatype, algorithm and protocol as NCCL's enum values
 * (ncclFunc_t, ncclDataType_t, NCCL_ALGO_*, NCCL_PROTO_*), v2-v3 also carry the
 * communicator's name and hash, v5+ the API parents; see docs/emulator.md.
 */
#include <string.h>

#include "emu.h"
#include "ncclenum.h"

bool emu_version_has_type(int version, unsigned type)
{
    switch (type) {
    case NSC_T_GROUP: case NSC_T_COLL: case NSC_T_P2P:
    case NSC_T_PROXY_OP: case NSC_T_PROXY_STEP: case NSC_T_PROXY_CTRL:
        return true;
    case NSC_T_KERNEL_CH: case NSC_T_NET_PLUGIN:
        return version >= 3;
    case NSC_T_GROUP_API: case NSC_T_COLL_API: case NSC_T_P2P_API: case NSC_T_KERNEL_LAUNCH:
        return version >= 5;
    case NSC_T_CE_COLL: case NSC_T_CE_SYNC: case NSC_T_CE_BATCH:
        return version >= 6;
    case NSC_T_KERNEL_PHASE:
        return version >= 7;
    default:
        return false;
    }
}

/* ProxyOp and ProxyStep have one layout (at @24) in every version. */
#define FILL_PROXY(DST, ev)                                                   \
    do {                                                                    \
        if ((ev)->type == NSC_T_PROXY_OP) {                                 \
            (DST)->proxyOp.pid = (ev)->d.proxy_op.pid;                        \
            (DST)->proxyOp.channelId = (ev)->d.proxy_op.ch;                   \
            (DST)->proxyOp.peer = (ev)->d.proxy_op.peer;                      \
            (DST)->proxyOp.nSteps = (ev)->d.proxy_op.nsteps;                  \
            (DST)->proxyOp.chunkSize = (ev)->d.proxy_op.chunk;                \
            (DST)->proxyOp.isSend = (ev)->d.proxy_op.is_send;                 \
        } else if ((ev)->type == NSC_T_PROXY_STEP) {                        \
            (DST)->proxyStep.step = (ev)->d.proxy_step.step;                  \
        }                                                                   \
    } while (0)

static void build_v1(const emu_ev *ev, ncclProfilerEventDescr_v1_t *d)
{
    if (ev->type == NSC_T_COLL) {
        const char *algo = ev->d.coll.algo;
        d->coll.name = ev->comm_name;
        d->coll.commHash = ev->comm_id;
        d->coll.seqNumber = ev->d.coll.seq;
        d->coll.func = nsc_nccl_enum(NSC_NCCL_FUNC, ev->d.coll.func);
        d->coll.sendBuff = ev->d.coll.send;
        d->coll.recvBuff = ev->d.coll.recv;
        d->coll.count = ev->d.coll.count;
        d->coll.root = ev->d.coll.root;
        d->coll.datatype = nsc_nccl_enum(NSC_NCCL_DTYPE, ev->d.coll.dtype);
        d->coll.op = 0; /* ncclSum */
        d->coll.trafficBytes = ev->d.coll.traffic;
        d->coll.nMaxChannels = ev->d.coll.nch;
        d->coll.nWarps = ev->d.coll.nwarps;
        d->coll.algo = nsc_nccl_enum(NSC_NCCL_ALGO, algo);
        d->coll.proto = nsc_nccl_enum(NSC_NCCL_PROTO, ev->d.coll.proto);
        d->coll.isCollnet = algo && strncmp(algo, "COLLNET", 7) == 0;
        d->coll.isNvls = algo && strncmp(algo, "NVLS", 4) == 0;
    } else if (ev->type == NSC_T_P2P) {
        d->p2p.name = ev->comm_name;
        d->p2p.commHash = ev->comm_id;
        d->p2p.func = nsc_nccl_enum(NSC_NCCL_FUNC, ev->d.p2p.func);
        d->p2p.buff = ev->d.p2p.buff;
        d->p2p.datatype = nsc_nccl_enum(NSC_NCCL_DTYPE, ev->d.p2p.dtype);
        d->p2p.count = ev->d.p2p.count;
        d->p2p.peer = ev->d.p2p.peer;
    } else
        FILL_PROXY(d, ev);
}

/* The Coll members every version from v2 has (the channel count's name differs). */
#define FILL_COLL(DST, ev)                                                    \
    do {                                                                    \
        (DST)->coll.seqNumber = (ev)->d.coll.seq;                             \
        (DST)->coll.func = (ev)->d.coll.func;                                 \
        (DST)->coll.sendBuff = (ev)->d.coll.send;                             \
        (DST)->coll.recvBuff = (ev)->d.coll.recv;                             \
        (DST)->coll.count = (ev)->d.coll.count;                               \
        (DST)->coll.root = (ev)->d.coll.root;                                 \
        (DST)->coll.datatype = (ev)->d.coll.dtype;                            \
        (DST)->coll.nWarps = (ev)->d.coll.nwarps;                             \
        (DST)->coll.algo = (ev)->d.coll.algo;                                 \
        (DST)->coll.proto = (ev)->d.coll.proto;                               \
    } while (0)

/* The P2p members every version from v2 has. */
#define FILL_P2P(DST, ev)                                                     \
    do {                                                                    \
        (DST)->p2p.func = (ev)->d.p2p.func;                                   \
        (DST)->p2p.buff = (ev)->d.p2p.buff;                                   \
        (DST)->p2p.datatype = (ev)->d.p2p.dtype;                              \
        (DST)->p2p.count = (ev)->d.p2p.count;                                 \
        (DST)->p2p.peer = (ev)->d.p2p.peer;                                   \
    } while (0)

/* v2 and v3 differ only in trafficBytes (v2) and KernelCh/NetPlugin (v3). */
#define FILL_V23_COLL_P2P(DST, ev)                                            \
    do {                                                                    \
        if ((ev)->type == NSC_T_COLL) {                                     \
            (DST)->coll.name = (ev)->comm_name;                               \
            (DST)->coll.commHash = (ev)->comm_id;                             \
            (DST)->coll.nMaxChannels = (ev)->d.coll.nch;                      \
            FILL_COLL(DST, ev);                                               \
        } else if ((ev)->type == NSC_T_P2P) {                               \
            (DST)->p2p.name = (ev)->comm_name;                                \
            (DST)->p2p.commHash = (ev)->comm_id;                              \
            FILL_P2P(DST, ev);                                                \
        } else                                                              \
            FILL_PROXY(DST, ev);                                              \
    } while (0)

/* NetPlugin (v3 and later): the net plugin's id and its own descriptor. */
#define FILL_NET(DST, ev)                                                     \
    do {                                                                    \
        if ((ev)->type == NSC_T_NET_PLUGIN) {                               \
            (DST)->netPlugin.id = (ev)->d.net_plugin.id;                      \
            (DST)->netPlugin.data = (ev)->d.net_plugin.data;                  \
        }                                                                   \
    } while (0)

/* Coll/P2p/KernelCh/NetPlugin of v4 and later (v5+ add parentGroup). */
#define FILL_V4_COMMON(DST, ev)                                               \
    do {                                                                    \
        if ((ev)->type == NSC_T_COLL) {                                     \
            (DST)->coll.nChannels = (ev)->d.coll.nch;                         \
            FILL_COLL(DST, ev);                                               \
        } else if ((ev)->type == NSC_T_P2P) {                               \
            (DST)->p2p.nChannels = (ev)->d.p2p.nch;                           \
            FILL_P2P(DST, ev);                                                \
        } else if ((ev)->type == NSC_T_KERNEL_CH) {                         \
            (DST)->kernelCh.channelId = (ev)->d.kernel_ch.ch;                 \
            (DST)->kernelCh.pTimer = (ev)->d.kernel_ch.ptimer;                \
        } else {                                                            \
            FILL_PROXY(DST, ev);                                              \
            FILL_NET(DST, ev);                                                \
        }                                                                   \
    } while (0)

/* The API events and parentGroup of v5 and later. */
#define FILL_V5_API(DST, ev)                                                  \
    do {                                                                    \
        FILL_V4_COMMON(DST, ev);                                              \
        if ((ev)->type == NSC_T_COLL)                                       \
            (DST)->coll.parentGroup = (ev)->d.coll.parent_group;              \
        else if ((ev)->type == NSC_T_P2P)                                   \
            (DST)->p2p.parentGroup = (ev)->d.p2p.parent_group;                \
        else if ((ev)->type == NSC_T_GROUP_API) {                           \
            (DST)->groupApi.graphCaptured = (ev)->d.group_api.graph;          \
            (DST)->groupApi.groupDepth = (ev)->d.group_api.depth;             \
        } else if ((ev)->type == NSC_T_COLL_API) {                          \
            (DST)->collApi.func = (ev)->d.api.func;                           \
            (DST)->collApi.count = (ev)->d.api.count;                         \
            (DST)->collApi.datatype = (ev)->d.api.dtype;                      \
            (DST)->collApi.root = (ev)->d.api.root;                           \
            (DST)->collApi.stream = (ev)->d.api.stream;                       \
            (DST)->collApi.graphCaptured = (ev)->d.api.graph;                 \
        } else if ((ev)->type == NSC_T_P2P_API) {                           \
            (DST)->p2pApi.func = (ev)->d.api.func;                            \
            (DST)->p2pApi.count = (ev)->d.api.count;                          \
            (DST)->p2pApi.datatype = (ev)->d.api.dtype;                       \
            (DST)->p2pApi.stream = (ev)->d.api.stream;                        \
            (DST)->p2pApi.graphCaptured = (ev)->d.api.graph;                  \
        } else if ((ev)->type == NSC_T_KERNEL_LAUNCH)                       \
            (DST)->kernelLaunch.stream = (ev)->d.launch.stream;               \
    } while (0)

/* The copy-engine events of v6 and later. */
#define FILL_CE(DST, ev)                                                      \
    do {                                                                    \
        if ((ev)->type == NSC_T_CE_COLL) {                                  \
            (DST)->ceColl.seqNumber = (ev)->d.ce_coll.seq;                    \
            (DST)->ceColl.func = (ev)->d.ce_coll.func;                        \
            (DST)->ceColl.sendBuff = (ev)->d.ce_coll.send;                    \
            (DST)->ceColl.recvBuff = (ev)->d.ce_coll.recv;                    \
            (DST)->ceColl.count = (ev)->d.ce_coll.count;                      \
            (DST)->ceColl.root = (ev)->d.ce_coll.root;                        \
            (DST)->ceColl.datatype = (ev)->d.ce_coll.dtype;                   \
            (DST)->ceColl.syncStrategy = (ev)->d.ce_coll.sync;                \
            (DST)->ceColl.ceSeqNum = (ev)->d.ce_coll.ce_seq;                  \
            (DST)->ceColl.stream = (ev)->d.ce_coll.stream;                    \
        } else if ((ev)->type == NSC_T_CE_SYNC) {                           \
            (DST)->ceCollSync.isComplete = (ev)->d.ce_sync.complete;          \
            (DST)->ceCollSync.nRanks = (ev)->d.ce_sync.nranks;                \
        } else if ((ev)->type == NSC_T_CE_BATCH) {                          \
            (DST)->ceCollBatch.numOps = (ev)->d.ce_batch.nops;                \
            (DST)->ceCollBatch.totalBytes = (ev)->d.ce_batch.bytes;           \
            (DST)->ceCollBatch.useIntraSync = (ev)->d.ce_batch.intra_sync;    \
        }                                                                   \
    } while (0)

static void build_v7(const emu_ev *ev, ncclProfilerEventDescr_v7_t *d)
{
    FILL_V5_API(d, ev);
    FILL_CE(d, ev);
    if (ev->type == NSC_T_CE_COLL)
        d->ceColl.userTag = ev->d.ce_coll.user_tag;
    else if (ev->type == NSC_T_KERNEL_PHASE) {
        d->kernelPhase.channelId = ev->d.kernel_phase.ch;
        d->kernelPhase.phaseId = ev->d.kernel_phase.phase;
        d->kernelPhase.phaseName = ev->d.kernel_phase.name;
        d->kernelPhase.pTimer = ev->d.kernel_phase.ptimer;
    } else if (ev->type == NSC_T_COLL) {
        d->coll.kernelVariant = ev->d.coll.variant;
        d->coll.isSymColl = ev->d.coll.sym;
        d->coll.userTag = ev->d.coll.user_tag;
    } else if (ev->type == NSC_T_P2P)
        d->p2p.userTag = ev->d.p2p.user_tag;
    else if (ev->type == NSC_T_COLL_API)
        d->collApi.userTag = ev->d.api.user_tag;
    else if (ev->type == NSC_T_P2P_API)
        d->p2pApi.userTag = ev->d.api.user_tag;
}

int emu_descr_build(int version, const emu_ev *ev, emu_descr *out)
{
    if (!emu_version_has_type(version, ev->type))
        return -1;
    /* A copy, not memset: the compiler makes 136 bytes a few vector moves
     * where memset became `rep stos`, dear for so few bytes at every start. */
    static const emu_descr zero;
    *out = zero;
    /* Header: type is uint8_t up to v4 and uint64_t from v5; parentObj @8, rank @16. */
    if (version <= 4) {
        out->v4.type = (uint8_t)(1u << ev->type);
        out->v4.parentObj = ev->parent;
        out->v4.rank = ev->rank;
    } else {
        out->v5.type = 1ull << ev->type;
        out->v5.parentObj = ev->parent;
        out->v5.rank = ev->rank;
    }
    switch (version) {
    case 1: build_v1(ev, &out->v1); break;
    case 2:
        FILL_V23_COLL_P2P(&out->v2, ev);
        if (ev->type == NSC_T_COLL)
            out->v2.coll.trafficBytes = ev->d.coll.traffic;
        break;
    case 3:
        FILL_V23_COLL_P2P(&out->v3, ev);
        if (ev->type == NSC_T_KERNEL_CH)
            out->v3.kernelCh.channelId = ev->d.kernel_ch.ch;
        FILL_NET(&out->v3, ev);
        break;
    case 4: FILL_V4_COMMON(&out->v4, ev); break;
    case 5: FILL_V5_API(&out->v5, ev); break;
    case 6:
        FILL_V5_API(&out->v6, ev);
        FILL_CE(&out->v6, ev);
        break;
    default: build_v7(ev, &out->v7); break;
    }
    return 0;
}

void emu_state_args_build(int version, int state, uint64_t arg, int steps, emu_state_args *out)
{
    memset(out, 0, sizeof *out);
    if (version <= 3) {
        if (state == NSC_S_PROXY_CTRL_APPEND_END)
            out->v1.proxyCtrl.appendedProxyOps = (int)arg;
        else {
            out->v1.proxyOp.transSize = arg;
            out->v1.proxyOp.steps = steps;
        }
        return;
    }
    if (state == NSC_S_PROXY_CTRL_APPEND_END)
        out->v4.proxyCtrl.appendedProxyOps = (int)arg;
    else if (state == NSC_S_KERNEL_CH_STOP || state == NSC_S_KERNEL_PHASE_STOP)
        out->v4.kernelCh.pTimer = arg;
    else if (state == NSC_S_NET_PLUGIN_UPDATE)
        out->v4.netPlugin.data = (void *)(uintptr_t)arg;
    else
        out->v4.proxyStep.transSize = arg;
}
