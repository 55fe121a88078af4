/* profiler_v2.h: NCCL profiler ABI v2 (NCCL 2.24): strings for func, datatype,
 * algo and proto; trafficBytes; no KernelCh or NetPlugin events yet. */
#ifndef NCCLSCOPE_NCCL_PROFILER_V2_H
#define NCCLSCOPE_NCCL_PROFILER_V2_H

#include "profiler_v1.h"

/* Coll of v2 and v3 is these with trafficBytes between them (v2 only). */
#define NCCL_PROFILER_COLL_V2_CALL_MEMBERS \
    const char *name;                      \
    uint64_t commHash;                     \
    NCCL_PROFILER_CALL_MEMBERS

#define NCCL_PROFILER_COLL_V2_LAUNCH_MEMBERS \
    uint8_t nMaxChannels;                    \
    uint8_t nWarps;                          \
    const char *algo;                        \
    const char *proto;

/* P2p of v2 and v3. */
typedef struct {
    const char *name;
    uint64_t commHash;
    NCCL_PROFILER_P2P_MEMBERS
} ncclProfilerP2pDescr_v2_t;

typedef struct {
    NCCL_PROFILER_DESCR_HEAD(uint8_t)
    union {
        struct {
            NCCL_PROFILER_COLL_V2_CALL_MEMBERS
            size_t trafficBytes;
            NCCL_PROFILER_COLL_V2_LAUNCH_MEMBERS
        } coll;
        ncclProfilerP2pDescr_v2_t p2p;
        ncclProfilerProxyOpDescr_t proxyOp;
        ncclProfilerProxyStepDescr_t proxyStep;
    };
} ncclProfilerEventDescr_v2_t;

typedef ncclProfilerEventStateArgs_v1_t ncclProfilerEventStateArgs_v2_t;

typedef NCCL_PROFILER_TABLE(NCCL_PROFILER_V1_INIT, ncclProfilerEventDescr_v2_t,
                            ncclProfilerEventStateArgs_v2_t) ncclProfiler_v2_t;

/* NCCL_PROFILER_COLL_V2_LAUNCH_MEMBERS, the first at base (v2 104, v3 96). */
#define NCCL_ABI_CHECK_V2_LAUNCH(T, base)           \
    NCCL_ABI_AT(T, coll.nMaxChannels, (base));      \
    NCCL_ABI_AT(T, coll.nWarps, (base) + 1);        \
    NCCL_ABI_AT(T, coll.algo, (base) + 8);          \
    NCCL_ABI_AT(T, coll.proto, (base) + 16)

/* The name and commHash before the call members (24, 32) hold for v3 too. */
#define NCCL_ABI_CHECK_V2_NAMES(T)      \
    NCCL_ABI_AT(T, coll.name, 24);      \
    NCCL_ABI_AT(T, coll.commHash, 32);  \
    NCCL_ABI_AT(T, p2p.name, 24);       \
    NCCL_ABI_AT(T, p2p.commHash, 32);   \
    NCCL_ABI_CHECK_CALL(T, coll, 40);   \
    NCCL_ABI_CHECK_P2P(T, 40)

NCCL_ABI_CHECK_HEAD(ncclProfilerEventDescr_v2_t);
NCCL_ABI_CHECK_V2_NAMES(ncclProfilerEventDescr_v2_t);
NCCL_ABI_AT(ncclProfilerEventDescr_v2_t, coll.trafficBytes, 96);
NCCL_ABI_CHECK_V2_LAUNCH(ncclProfilerEventDescr_v2_t, 104);
NCCL_ABI_SIZE(ncclProfilerEventDescr_v2_t, 128);
NCCL_ABI_SIZE(ncclProfiler_v2_t, 48);

#endif
