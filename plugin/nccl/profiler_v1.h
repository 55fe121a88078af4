/* profiler_v1.h: NCCL profiler ABI v1 (NCCL 2.23): func, datatype, algo and
 * proto are small enums, not strings. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V1_H
#define NCCLSCOPE_NCCL_PROFILER_V1_H

#include "profiler_common.h"

typedef struct {
    uint8_t type;
    void *parentObj;
    int rank;
    union {
        struct {
            const char *name;
            uint64_t commHash;
            uint64_t seqNumber;
            uint8_t func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            uint8_t datatype;
            uint32_t op;
            size_t trafficBytes;
            uint8_t nMaxChannels;
            uint8_t nWarps;
            uint8_t algo;
            uint8_t proto;
            int isCollnet;
            int isNvls;
        } coll;
        struct {
            const char *name;
            uint64_t commHash;
            uint8_t func;
            void *buff;
            uint8_t datatype;
            size_t count;
            int peer;
        } p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
    };
} ncclProfilerEventDescr_v1_t;

/* v1 to v3 share this 16-byte state argument union. */
typedef union {
    struct {
        size_t transSize;
        int steps;
    } proxyOp;
    struct {
        int appendedProxyOps;
    } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v1_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v1_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v1_t;

NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, parentObj, 8);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, rank, 16);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.name, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.commHash, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.seqNumber, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.func, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.sendBuff, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.recvBuff, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.count, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.root, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.datatype, 84);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.op, 88);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.trafficBytes, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.nMaxChannels, 104);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.nWarps, 105);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.algo, 106);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.proto, 107);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.isCollnet, 108);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, coll.isNvls, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.pid, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.channelId, 28);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.peer, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.nSteps, 36);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.chunkSize, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyOp.isSend, 44);
NCCL_ABI_AT(ncclProfilerEventDescr_v1_t, proxyStep.step, 24);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v1_t, 120);
NCCL_ABI_AT(ncclProfilerEventStateArgs_v1_t, proxyOp.steps, 8);
NCCL_ABI_SIZE(ncclProfilerEventStateArgs_v1_t, 16);
NCCL_ABI_SIZE(ncclProfiler_v1_t, 48);

#endif
