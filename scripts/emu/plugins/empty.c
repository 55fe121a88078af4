/* empty.c: libnccl-profiler-empty.so, the baseline plugin: every call returns
 * success and does nothing. Exports ncclProfiler_v1 ... ncclProfiler_v7, so
 * the emulator's --api picks any version. startEvent hands out one non-NULL
 * handle: NCCL never stops or gives states to a NULL handle, and a baseline
 * must make the same calls as a real plugin. */
#include "../../../plugin/nccl/profiler.h"

static ncclResult_t init_v1(void **ctx, int *mask)
{
    (void)mask;
    *ctx = 0;
    return ncclSuccess;
}

static ncclResult_t init_v4(void **ctx, int *mask, const char *name, uint64_t hash, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log)
{
    (void)mask, (void)name, (void)hash, (void)nnodes, (void)nranks, (void)rank, (void)log;
    *ctx = 0;
    return ncclSuccess;
}

static ncclResult_t init_v5(void **ctx, uint64_t id, int *mask, const char *name, int nnodes,
                            int nranks, int rank, ncclDebugLogger_t log)
{
    (void)id, (void)mask, (void)name, (void)nnodes, (void)nranks, (void)rank, (void)log;
    *ctx = 0;
    return ncclSuccess;
}

static ncclResult_t stop_event(void *h)
{
    (void)h;
    return ncclSuccess;
}

static ncclResult_t state_v1(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v1_t *a)
{
    (void)h, (void)s, (void)a;
    return ncclSuccess;
}

static ncclResult_t state_v4(void *h, ncclProfilerEventState_t s, ncclProfilerEventStateArgs_v4_t *a)
{
    (void)h, (void)s, (void)a;
    return ncclSuccess;
}

static ncclResult_t finalize(void *ctx)
{
    (void)ctx;
    return ncclSuccess;
}

static char the_handle;

/* startEvent differs only in its descriptor type. */
#define EMPTY_START(N)                                                                      \
    static ncclResult_t start_v##N(void *ctx, void **h, ncclProfilerEventDescr_v##N##_t *d) \
    {                                                                                       \
        (void)ctx, (void)d;                                                                 \
        *h = &the_handle;                                                                   \
        return ncclSuccess;                                                                 \
    }
EMPTY_START(1)
EMPTY_START(2)
EMPTY_START(3)
EMPTY_START(4)
EMPTY_START(5)
EMPTY_START(6)
EMPTY_START(7)

#define EXPORT __attribute__((visibility("default")))
EXPORT const ncclProfiler_v1_t ncclProfiler_v1 = {"empty", init_v1, start_v1, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v2_t ncclProfiler_v2 = {"empty", init_v1, start_v2, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v3_t ncclProfiler_v3 = {"empty", init_v1, start_v3, stop_event, state_v1, finalize};
EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"empty", init_v4, start_v4, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"empty", init_v5, start_v5, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v6_t ncclProfiler_v6 = {"empty", init_v5, start_v6, stop_event, state_v4, finalize};
EXPORT const ncclProfiler_v7_t ncclProfiler_v7 = {"empty", init_v5, start_v7, stop_event, state_v4, finalize};
