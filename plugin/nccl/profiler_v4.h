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

/* Coll from v4 on (v5 and v7 add members at its end). */
#define NCCL_PROFILER_COLL_V4_MEMBERS \
    NCCL_PROFILER_CALL_MEMBERS        \
    uint8_t nChannels;                \
    uint8_t nWarps;                   \
    const char *algo;                 \
    const char *proto;

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint8_t)
    union {
        struct {
            NCCL_PROFILER_COLL_V4_MEMBERS
        } coll;
        struct {
            NCCL_PROFILER_P2P_MEMBERS
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

typedef NCCL_PROFILER_TABLE(ncclResult_t (*init)(void **context, int *eActivationMask,
                                                 const char *commName, uint64_t commHash,
                                                 int nNodes, int nranks, int rank,
                                                 ncclDebugLogger_t logfn),
                            ncclProfilerEventDescr_v4_t,
                            ncclProfilerEventStateArgs_v4_t) ncclProfiler_v4_t;

/* The members v4 to v7 share, at the same offsets. */
#define NCCL_ABI_CHECK_V4(T)                   \
    NCCL_ABI_CHECK_HEAD(T);                    \
    NCCL_ABI_CHECK_CALL(T, coll, 24);          \
    NCCL_ABI_AT(T, coll.nChannels, 80);        \
    NCCL_ABI_AT(T, coll.nWarps, 81);           \
    NCCL_ABI_AT(T, coll.algo, 88);             \
    NCCL_ABI_AT(T, coll.proto, 96);            \
    NCCL_ABI_CHECK_P2P(T, 24);                 \
    NCCL_ABI_AT(T, p2p.nChannels, 60);         \
    NCCL_ABI_AT(T, kernelCh.channelId, 24);    \
    NCCL_ABI_AT(T, kernelCh.pTimer, 32);       \
    NCCL_ABI_CHECK_NET_PLUGIN(T)

NCCL_ABI_CHECK_V4(ncclProfilerEventDescr_v4_t);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v4_t, 104);
NCCL_ABI_SIZE(ncclProfilerEventStateArgs_v4_t, 8);
NCCL_ABI_SIZE(ncclProfiler_v4_t, 48);

#endif
