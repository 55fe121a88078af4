/* profiler_v7.h: NCCL profiler ABI v7 (NCCL 2.31): userTag on API, P2p, Coll and
 * CeColl events; Coll gains kernelVariant and isSymColl; new KernelPhase event
 * (KernelPhaseStop reuses kernelCh.pTimer in the state arguments). */
#ifndef NCCLSCOPE_NCCL_PROFILER_V7_H
#define NCCLSCOPE_NCCL_PROFILER_V7_H

#include "profiler_v6.h"

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        ncclProfilerGroupApiDescr_v5_t groupApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            int root;
            void *stream;
            bool graphCaptured;
            uint64_t userTag;
        } collApi;
        struct {
            const char *func;
            size_t count;
            const char *datatype;
            void *stream;
            bool graphCaptured;
            uint64_t userTag;
        } p2pApi;
        ncclProfilerKernelLaunchDescr_v5_t kernelLaunch;
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
            void *parentGroup;
            const char *kernelVariant;
            bool isSymColl;
            uint64_t userTag;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
            uint64_t userTag;
        } p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
        ncclProfilerKernelChDescr_v4_t kernelCh;
        ncclProfilerNetPluginDescr_t netPlugin;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            const char *syncStrategy;
            bool intraBatchSync;
            uint32_t batchSize;
            uint32_t numBatches;
            uint32_t ceSeqNum;
            void *stream;
            uint64_t userTag;
        } ceColl;
        ncclProfilerCeSyncDescr_v6_t ceCollSync;
        ncclProfilerCeBatchDescr_v6_t ceCollBatch;
        struct {
            uint8_t channelId;
            uint8_t phaseId; /* 0 initial sync, 1 compute, 2 final sync */
            const char *phaseName;
            uint64_t pTimer;
        } kernelPhase;
    };
} ncclProfilerEventDescr_v7_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v7_t;

typedef struct {
    const char *name;
    NCCL_PROFILER_V5_INIT;
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v7_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v7_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v7_t;

NCCL_ABI_CHECK_V5_COMMON(ncclProfilerEventDescr_v7_t);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, collApi.userTag, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, p2pApi.userTag, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, p2p.userTag, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.kernelVariant, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.isSymColl, 120);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.userTag, 128);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, ceColl.syncStrategy, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, ceColl.stream, 104);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, ceColl.userTag, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, ceCollBatch.totalBytes, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.channelId, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.phaseId, 25);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.phaseName, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.pTimer, 40);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v7_t, 136);
NCCL_ABI_SIZE(ncclProfiler_v7_t, 48);

#endif
