/* profiler_v5.h: NCCL profiler ABI v5 (NCCL 2.28): 8-byte type field, the API
 * events (GroupApi, CollApi, P2pApi, KernelLaunch); a Coll's parentObj is its
 * CollApi and the legacy Group moves to parentGroup; init takes commId first. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V5_H
#define NCCLSCOPE_NCCL_PROFILER_V5_H

#include "profiler_v4.h"

/* API-event members that v5, v6 and v7 share unchanged. */
typedef struct {
    bool graphCaptured;
    int groupDepth;
} ncclProfilerGroupApiDescr_v5_t;

typedef struct {
    void *stream;
} ncclProfilerKernelLaunchDescr_v5_t;

/* Members of v5's CollApi, P2pApi, Coll and P2p; v7 appends its own to each. */
#define NCCL_PROFILER_COLL_API_V5_MEMBERS \
    const char *func;                     \
    size_t count;                         \
    const char *datatype;                 \
    int root;                             \
    void *stream;                         \
    bool graphCaptured;

#define NCCL_PROFILER_P2P_API_V5_MEMBERS \
    const char *func;                    \
    size_t count;                        \
    const char *datatype;                \
    void *stream;                        \
    bool graphCaptured;

#define NCCL_PROFILER_COLL_V5_MEMBERS \
    NCCL_PROFILER_COLL_V4_MEMBERS     \
    void *parentGroup;

#define NCCL_PROFILER_P2P_V5_MEMBERS \
    NCCL_PROFILER_P2P_MEMBERS        \
    uint8_t nChannels;               \
    void *parentGroup;

/* The union members v5 and v6 share; v6 only adds the copy-engine events. */
#define NCCL_PROFILER_V5_UNION_MEMBERS                   \
    ncclProfilerGroupApiDescr_v5_t groupApi;             \
    struct {                                             \
        NCCL_PROFILER_COLL_API_V5_MEMBERS                \
    } collApi;                                           \
    struct {                                             \
        NCCL_PROFILER_P2P_API_V5_MEMBERS                 \
    } p2pApi;                                            \
    ncclProfilerKernelLaunchDescr_v5_t kernelLaunch;     \
    struct {                                             \
        NCCL_PROFILER_COLL_V5_MEMBERS                    \
    } coll;                                              \
    struct {                                             \
        NCCL_PROFILER_P2P_V5_MEMBERS                     \
    } p2p;                                               \
    ncclProfilerProxyOpDescr_t proxyOp;                  \
    ncclProfilerProxyStepDescr_t proxyStep;              \
    ncclProfilerKernelChDescr_v4_t kernelCh;             \
    ncclProfilerNetPluginDescr_t netPlugin;

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint64_t)
    union {
        NCCL_PROFILER_V5_UNION_MEMBERS
    };
} ncclProfilerEventDescr_v5_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v5_t;

/* init for v5, v6 and v7. */
#define NCCL_PROFILER_V5_INIT                                                            \
    ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,          \
                         const char *commName, int nNodes, int nranks, int rank,         \
                         ncclDebugLogger_t logfn)

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V5_INIT, ncclProfilerEventDescr_v5_t,
                            ncclProfilerEventStateArgs_v5_t) ncclProfiler_v5_t;

/* Offsets shared by the v5, v6 and v7 descriptors. */
#define NCCL_ABI_CHECK_V5(T)                         \
    NCCL_ABI_CHECK_V4(T);                            \
    NCCL_ABI_AT(T, groupApi.graphCaptured, 24);      \
    NCCL_ABI_AT(T, groupApi.groupDepth, 28);         \
    NCCL_ABI_AT(T, collApi.func, 24);                \
    NCCL_ABI_AT(T, collApi.count, 32);               \
    NCCL_ABI_AT(T, collApi.datatype, 40);            \
    NCCL_ABI_AT(T, collApi.root, 48);                \
    NCCL_ABI_AT(T, collApi.stream, 56);              \
    NCCL_ABI_AT(T, collApi.graphCaptured, 64);       \
    NCCL_ABI_AT(T, p2pApi.func, 24);                 \
    NCCL_ABI_AT(T, p2pApi.count, 32);                \
    NCCL_ABI_AT(T, p2pApi.datatype, 40);             \
    NCCL_ABI_AT(T, p2pApi.stream, 48);               \
    NCCL_ABI_AT(T, p2pApi.graphCaptured, 56);        \
    NCCL_ABI_AT(T, kernelLaunch.stream, 24);         \
    NCCL_ABI_AT(T, coll.parentGroup, 104);           \
    NCCL_ABI_AT(T, p2p.parentGroup, 64)

NCCL_ABI_CHECK_V5(ncclProfilerEventDescr_v5_t);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v5_t, 112);
NCCL_ABI_SIZE(ncclProfiler_v5_t, 48);

#endif
