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

/* CeColl of v6; v7 appends userTag. */
#define NCCL_PROFILER_CE_COLL_V6_MEMBERS \
    NCCL_PROFILER_CALL_MEMBERS           \
    const char *syncStrategy;            \
    bool intraBatchSync;                 \
    uint32_t batchSize;                  \
    uint32_t numBatches;                 \
    uint32_t ceSeqNum;                   \
    void *stream;

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint64_t)
    union {
        NCCL_PROFILER_V5_UNION_MEMBERS
        struct {
            NCCL_PROFILER_CE_COLL_V6_MEMBERS
        } ceColl;
        ncclProfilerCeSyncDescr_v6_t ceCollSync;
        ncclProfilerCeBatchDescr_v6_t ceCollBatch;
    };
} ncclProfilerEventDescr_v6_t;

typedef ncclProfilerEventStateArgs_v4_t ncclProfilerEventStateArgs_v6_t;

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V5_INIT, ncclProfilerEventDescr_v6_t,
                            ncclProfilerEventStateArgs_v6_t) ncclProfiler_v6_t;

/* The copy-engine events, the same in v6 and v7. */
#define NCCL_ABI_CHECK_CE_V6(T)                         \
    NCCL_ABI_CHECK_CALL(T, ceColl, 24);                 \
    NCCL_ABI_AT(T, ceColl.syncStrategy, 80);            \
    NCCL_ABI_AT(T, ceColl.intraBatchSync, 88);          \
    NCCL_ABI_AT(T, ceColl.batchSize, 92);               \
    NCCL_ABI_AT(T, ceColl.numBatches, 96);              \
    NCCL_ABI_AT(T, ceColl.ceSeqNum, 100);               \
    NCCL_ABI_AT(T, ceColl.stream, 104);                 \
    NCCL_ABI_AT(T, ceCollSync.isComplete, 24);          \
    NCCL_ABI_AT(T, ceCollSync.nRanks, 28);              \
    NCCL_ABI_AT(T, ceCollBatch.numOps, 24);             \
    NCCL_ABI_AT(T, ceCollBatch.totalBytes, 32);         \
    NCCL_ABI_AT(T, ceCollBatch.useIntraSync, 40)

NCCL_ABI_CHECK_V5(ncclProfilerEventDescr_v6_t);
NCCL_ABI_CHECK_CE_V6(ncclProfilerEventDescr_v6_t);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v6_t, 112);
NCCL_ABI_SIZE(ncclProfiler_v6_t, 48);

#endif
