/* profiler_v5.h: NCCL profiler ABI v5 (NCCL 2.28): 8-byte type field, the API
 * events (GroupApi, CollApi, P2pApi, KernelLaunch); a Coll's parentObj is its
 * CollApi and the legacy Group moves to parentGroup; init takes commId first. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V5_H
#define NCCLSCOPE_NCCL_PROFILER_V5_H

#include "profiler_v4.h"

/* The union members v5 and v6 share; v6 only adds the copy-engine events. */
/* API-event members that v5, v6 and v7 share unchanged. */
typedef struct {
    bool graphCaptured;
    int groupDepth;
} ncclProfilerGroupApiDescr_v5_t;

typedef struct {
    void *stream;
} ncclProfilerKernelLaunchDescr_v5_t;

typedef struct {
    const char *func;
    size_t count;
    const char *datatype;
    int root;
    void *stream;
    bool graphCaptured;
} ncclProfilerCollApiDescr_v5_t;

typedef struct {
    const char *func;
    size_t count;
    const char *datatype;
    void *stream;
    bool graphCaptured;
} ncclProfilerP2pApiDescr_v5_t;

typedef struct {
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
} ncclProfilerCollDescr_v5_t;

typedef struct {
    const char *func;
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t nChannels;
    void *parentGroup;
} ncclProfilerP2pDescr_v5_t;

/* The union members v5 and v6 share; v6 only adds the copy-engine events. */
#define NCCL_PROFILER_V5_UNION_MEMBERS \
    ncclProfilerGroupApiDescr_v5_t groupApi;     \
    ncclProfilerCollApiDescr_v5_t collApi;       \
    ncclProfilerP2pApiDescr_v5_t p2pApi;         \
    ncclProfilerKernelLaunchDescr_v5_t kernelLaunch; \
    ncclProfilerCollDescr_v5_t coll;             \
    ncclProfilerP2pDescr_v5_t p2p;               \
    ncclProfilerProxyOpDescr_t proxyOp;          \
    ncclProfilerProxyStepDescr_t proxyStep;      \
    ncclProfilerKernelChDescr_v4_t kernelCh;     \
    ncclProfilerNetPluginDescr_t netPlugin;

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
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

typedef struct {
    const char *name;
    NCCL_PROFILER_V5_INIT;
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v5_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* Offsets shared by the v5, v6 and v7 descriptors. */
#define NCCL_ABI_CHECK_V5_COMMON(T)                                                      \
    NCCL_ABI_AT(T, parentObj, 8);                                                        \
    NCCL_ABI_AT(T, rank, 16);                                                            \
    NCCL_ABI_AT(T, groupApi.graphCaptured, 24);                                          \
    NCCL_ABI_AT(T, groupApi.groupDepth, 28);                                             \
    NCCL_ABI_AT(T, collApi.func, 24);                                                    \
    NCCL_ABI_AT(T, collApi.count, 32);                                                   \
    NCCL_ABI_AT(T, collApi.datatype, 40);                                                \
    NCCL_ABI_AT(T, collApi.root, 48);                                                    \
    NCCL_ABI_AT(T, collApi.stream, 56);                                                  \
    NCCL_ABI_AT(T, collApi.graphCaptured, 64);                                           \
    NCCL_ABI_AT(T, p2pApi.func, 24);                                                     \
    NCCL_ABI_AT(T, p2pApi.count, 32);                                                    \
    NCCL_ABI_AT(T, p2pApi.datatype, 40);                                                 \
    NCCL_ABI_AT(T, p2pApi.stream, 48);                                                   \
    NCCL_ABI_AT(T, p2pApi.graphCaptured, 56);                                            \
    NCCL_ABI_AT(T, kernelLaunch.stream, 24);                                             \
    NCCL_ABI_AT(T, coll.seqNumber, 24);                                                  \
    NCCL_ABI_AT(T, coll.func, 32);                                                       \
    NCCL_ABI_AT(T, coll.sendBuff, 40);                                                   \
    NCCL_ABI_AT(T, coll.recvBuff, 48);                                                   \
    NCCL_ABI_AT(T, coll.count, 56);                                                      \
    NCCL_ABI_AT(T, coll.root, 64);                                                       \
    NCCL_ABI_AT(T, coll.datatype, 72);                                                   \
    NCCL_ABI_AT(T, coll.nChannels, 80);                                                  \
    NCCL_ABI_AT(T, coll.nWarps, 81);                                                     \
    NCCL_ABI_AT(T, coll.algo, 88);                                                       \
    NCCL_ABI_AT(T, coll.proto, 96);                                                      \
    NCCL_ABI_AT(T, coll.parentGroup, 104);                                               \
    NCCL_ABI_AT(T, p2p.func, 24);                                                        \
    NCCL_ABI_AT(T, p2p.buff, 32);                                                        \
    NCCL_ABI_AT(T, p2p.datatype, 40);                                                    \
    NCCL_ABI_AT(T, p2p.count, 48);                                                       \
    NCCL_ABI_AT(T, p2p.peer, 56);                                                        \
    NCCL_ABI_AT(T, p2p.nChannels, 60);                                                   \
    NCCL_ABI_AT(T, p2p.parentGroup, 64);                                                 \
    NCCL_ABI_AT(T, proxyOp.pid, 24);                                                     \
    NCCL_ABI_AT(T, proxyOp.channelId, 28);                                               \
    NCCL_ABI_AT(T, proxyOp.peer, 32);                                                    \
    NCCL_ABI_AT(T, proxyOp.nSteps, 36);                                                  \
    NCCL_ABI_AT(T, proxyOp.chunkSize, 40);                                               \
    NCCL_ABI_AT(T, proxyOp.isSend, 44);                                                  \
    NCCL_ABI_AT(T, proxyStep.step, 24);                                                  \
    NCCL_ABI_AT(T, kernelCh.channelId, 24);                                              \
    NCCL_ABI_AT(T, kernelCh.pTimer, 32);                                                 \
    NCCL_ABI_AT(T, netPlugin.id, 24);                                                    \
    NCCL_ABI_AT(T, netPlugin.data, 32)

NCCL_ABI_CHECK_V5_COMMON(ncclProfilerEventDescr_v5_t);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v5_t, 112);
NCCL_ABI_SIZE(ncclProfiler_v5_t, 48);

#endif
