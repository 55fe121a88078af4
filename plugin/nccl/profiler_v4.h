/* profiler_v4.h: NCCL profiler ABI v4 (NCCL 2.27): init learns the communicator
 * (name, hash, nodes, ranks, rank, logger); KernelCh gets pTimer; the state
 * argument union shrinks to 8 bytes. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V4_H
#define NCCLSCOPE_NCCL_PROFILER_V4_H

#include "profiler_common.h"

typedef struct {
    uint8_t channelId;
    uint64_t pTimer;
} ncclProfilerKernelChDescr_v4_t;

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
        } p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
        ncclProfilerKernelChDescr_v4_t kernelCh;
        ncclProfilerNetPluginDescr_t netPlugin;
    };
} ncclProfilerEventDescr_v4_t;

/* v4 to v7 share this 8-byte state argument union. */
typedef union {
    struct {
        size_t transSize;
    } proxyStep;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
    struct {
        void *data;
    } netPlugin;
    struct {
        uint64_t pTimer;
    } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask, const char *commName,
                         uint64_t commHash, int nNodes, int nranks, int rank,
                         ncclDebugLogger_t logfn);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v4_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, parentObj, 8);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, rank, 16);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.seqNumber, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.func, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.count, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.root, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.datatype, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.nChannels, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.nWarps, 81);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.algo, 88);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, coll.proto, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, p2p.count, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, p2p.peer, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, p2p.nChannels, 60);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, proxyOp.pid, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, proxyOp.isSend, 44);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, kernelCh.pTimer, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v4_t, netPlugin.data, 32);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v4_t, 104);
NCCL_ABI_SIZE(ncclProfilerEventStateArgs_v4_t, 8);
NCCL_ABI_SIZE(ncclProfiler_v4_t, 48);

#endif
