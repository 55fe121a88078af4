/* profiler_v2.h: NCCL profiler ABI v2 (NCCL 2.24): strings for func, datatype,
 * algo and proto; trafficBytes; no KernelCh or NetPlugin events yet. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V2_H
#define NCCLSCOPE_NCCL_PROFILER_V2_H

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
            size_t trafficBytes;
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
    };
} ncclProfilerEventDescr_v2_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

typedef struct {
    const char *name;
    ncclResult_t (*init)(void **context, int *eActivationMask);
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v2_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v2_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v2_t;

NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.name, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.commHash, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.seqNumber, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.func, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.sendBuff, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.recvBuff, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.count, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.root, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.datatype, 88);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.trafficBytes, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.nMaxChannels, 104);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.nWarps, 105);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.algo, 112);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.proto, 120);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, p2p.func, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, p2p.buff, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, p2p.datatype, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, p2p.count, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, p2p.peer, 72);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v2_t, 128);
NCCL_ABI_SIZE(ncclProfiler_v2_t, 48);

#endif
