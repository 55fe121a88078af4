/* profiler_v3.h: NCCL profiler ABI v3 (NCCL 2.26): adds KernelCh (channel only)
 * and NetPlugin events; drops trafficBytes. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V3_H
#define NCCLSCOPE_NCCL_PROFILER_V3_H

#include "profiler_v1.h"

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
        } p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
        struct {
            uint8_t channelId;
        } kernelCh;
        ncclProfilerNetPluginDescr_t netPlugin;
    };
} ncclProfilerEventDescr_v3_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v3_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v3_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v3_t;

NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.name, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.commHash, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.seqNumber, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.func, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.sendBuff, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.recvBuff, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.count, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.root, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.datatype, 88);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.nMaxChannels, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.nWarps, 97);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.algo, 104);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, coll.proto, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.name, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.commHash, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.func, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.buff, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.datatype, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.count, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, p2p.peer, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, proxyOp.pid, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, proxyOp.isSend, 44);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, kernelCh.channelId, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, netPlugin.id, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, netPlugin.data, 32);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v3_t, 120);
NCCL_ABI_SIZE(ncclProfiler_v3_t, 48);

#endif
