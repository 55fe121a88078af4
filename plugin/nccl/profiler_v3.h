/* profiler_v3.h: NCCL profiler ABI v3 (NCCL 2.26): adds KernelCh (channel only)
 * and NetPlugin events; drops trafficBytes. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V3_H
#define NCCLSCOPE_NCCL_PROFILER_V3_H

#include "profiler_v2.h"

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint8_t)
    union {
        struct {
            NCCL_PROFILER_COLL_V2_CALL_MEMBERS
            NCCL_PROFILER_COLL_V2_LAUNCH_MEMBERS
        } coll;
        ncclProfilerP2pDescr_v2_t p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
        struct {
            uint8_t channelId;
        } kernelCh;
        ncclProfilerNetPluginDescr_t netPlugin;
    };
} ncclProfilerEventDescr_v3_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v3_t;

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V1_INIT, ncclProfilerEventDescr_v3_t,
                            ncclProfilerEventStateArgs_v3_t) ncclProfiler_v3_t;

NCCL_ABI_CHECK_HEAD(ncclProfilerEventDescr_v3_t);
NCCL_ABI_CHECK_V2_NAMES(ncclProfilerEventDescr_v3_t);
NCCL_ABI_CHECK_V2_LAUNCH(ncclProfilerEventDescr_v3_t, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v3_t, kernelCh.channelId, 24);
NCCL_ABI_CHECK_NET_PLUGIN(ncclProfilerEventDescr_v3_t);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v3_t, 120);
NCCL_ABI_SIZE(ncclProfiler_v3_t, 48);

#endif
