/* profiler_v6.h: NCCL profiler ABI v6 (NCCL 2.29): v5 plus the copy-engine
 * events CeColl, CeSync and CeBatch (NCCL sends no CE states to plugins). */
#ifndef NCCLSCOPE_NCCL_PROFILER_V6_H
#define NCCLSCOPE_NCCL_PROFILER_V6_H

#include "profiler_v5.h"

typedef struct {
    bool isComplete;
    int nRanks;
} ncclProfilerCeSyncDescr_v6_t;

typedef struct {
    int numOps;
    size_t totalBytes;
    bool useIntraSync;
} ncclProfilerCeBatchDescr_v6_t;

typedef struct {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        NCCL_PROFILER_V5_UNION_MEMBERS
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
        } ceColl;
        ncclProfilerCeSyncDescr_v6_t ceCollSync;
        ncclProfilerCeBatchDescr_v6_t ceCollBatch;
    };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v6_t;

typedef struct {
    const char *name;
    NCCL_PROFILER_V5_INIT;
    ncclResult_t (*startEvent)(void *context, void **eHandle, ncclProfilerEventDescr_v6_t *eDescr);
    ncclResult_t (*stopEvent)(void *eHandle);
    ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState,
                                     ncclProfilerEventStateArgs_v6_t *eStateArgs);
    ncclResult_t (*finalize)(void *context);
} ncclProfiler_v6_t;

NCCL_ABI_CHECK_V5_COMMON(ncclProfilerEventDescr_v6_t);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.seqNumber, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.func, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.sendBuff, 40);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.recvBuff, 48);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.count, 56);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.root, 64);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.datatype, 72);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.syncStrategy, 80);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.intraBatchSync, 88);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.batchSize, 92);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.numBatches, 96);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.ceSeqNum, 100);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceColl.stream, 104);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceCollSync.isComplete, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceCollSync.nRanks, 28);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceCollBatch.numOps, 24);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceCollBatch.totalBytes, 32);
NCCL_ABI_AT(ncclProfilerEventDescr_v6_t, ceCollBatch.useIntraSync, 40);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v6_t, 112);
NCCL_ABI_SIZE(ncclProfiler_v6_t, 48);

#endif
