/* profiler_v7.h: NCCL profiler ABI v7 (NCCL 2.31): userTag on API, P2p, Coll and
 * CeColl events; Coll gains kernelVariant and isSymColl; new KernelPhase event
 * (KernelPhaseStop reuses kernelCh.pTimer in the state arguments). */
#ifndef NCCLSCOPE_NCCL_PROFILER_V7_H
#define NCCLSCOPE_NCCL_PROFILER_V7_H

#include "profiler_v6.h"

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint64_t)
    union {
        ncclProfilerGroupApiDescr_v5_t groupApi;
        struct {
            NCCL_PROFILER_COLL_API_V5_MEMBERS
            uint64_t userTag;
        } collApi;
        struct {
            NCCL_PROFILER_P2P_API_V5_MEMBERS
            uint64_t userTag;
        } p2pApi;
        ncclProfilerKernelLaunchDescr_v5_t kernelLaunch;
        struct {
            NCCL_PROFILER_COLL_V5_MEMBERS
            const char *kernelVariant;
            bool isSymColl;
            uint64_t userTag;
        } coll;
        struct {
            NCCL_PROFILER_P2P_V5_MEMBERS
            uint64_t userTag;
        } p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
        ncclProfilerKernelChDescr_v4_t kernelCh;
        ncclProfilerNetPluginDescr_t netPlugin;
        struct {
            NCCL_PROFILER_CE_COLL_V6_MEMBERS
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

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V5_INIT, ncclProfilerEventDescr_v7_t,
                            ncclProfilerEventStateArgs_v7_t) ncclProfiler_v7_t;

NCCL_ABI_CHECK_V5(ncclProfilerEventDescr_v7_t);
NCCL_ABI_CHECK_CE_V6(ncclProfilerEventDescr_v7_t);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, collApi.userTag, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, p2pApi.userTag, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, p2p.userTag, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.kernelVariant, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.isSymColl, 120);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, coll.userTag, 128);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, ceColl.userTag, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.channelId, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.phaseId, 25);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.phaseName, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v7_t, kernelPhase.pTimer, 40);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v7_t, 136);
NCCL_ABI_SIZE(ncclProfiler_v7_t, 48);

#endif
