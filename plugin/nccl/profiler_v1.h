/* profiler_v1.h: NCCL profiler ABI v1 (NCCL 2.23): func, datatype, algo and
 * proto are small enums, not strings. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V1_H
#define NCCLSCOPE_NCCL_PROFILER_V1_H

#include "profiler_common.h"

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint8_t)
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

/* init for v1, v2 and v3. */
#define NCCL_PROFILER_V1_INIT ncclResult_t (*init)(void **context, int *eActivationMask)

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V1_INIT, ncclProfilerEventDescr_v1_t,
                            ncclProfilerEventStateArgs_v1_t) ncclProfiler_v1_t;

NCCL_ABI_CHECK_HEAD(ncclProfilerEventDescr_v1_t);
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
NCCL_ABI_SIZE(ncclProfilerEventDescr_v1_t, 120);
NCCL_ABI_AT(ncclProfilerEventStateArgs_v1_t, proxyOp.steps, 8);
NCCL_ABI_SIZE(ncclProfilerEventStateArgs_v1_t, 16);
NCCL_ABI_SIZE(ncclProfiler_v1_t, 48);

#endif
