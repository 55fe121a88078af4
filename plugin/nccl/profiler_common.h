/* profiler_common.h: what every version of NCCL's profiler plugin ABI shares.
 *
 * Written from the measured ABI facts (docs/nccl-abi.md), not copied
 * from NCCL. Layout is checked by _Static_asserts in each version's header.
 */
#ifndef NCCLSCOPE_NCCL_PROFILER_COMMON_H
#define NCCLSCOPE_NCCL_PROFILER_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum { ncclSuccess = 0, ncclInternalError = 3, ncclInvalidUsage = 5 } ncclResult_t;

/* NCCL's logger: level, subsystem flags, file, line, printf format. */
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char *file, int line,
                                  const char *fmt, ...);

/* Event type bits of the activation mask. */
enum {
    ncclProfileGroup = 1 << 0,
    ncclProfileColl = 1 << 1,
    ncclProfileP2p = 1 << 2,
    ncclProfileProxyOp = 1 << 3,
    ncclProfileProxyStep = 1 << 4,
    ncclProfileProxyCtrl = 1 << 5,
    ncclProfileKernelCh = 1 << 6,      /* v3 */
    ncclProfileNetPlugin = 1 << 7,     /* v3 */
    ncclProfileGroupApi = 1 << 8,      /* v5 */
    ncclProfileCollApi = 1 << 9,       /* v5 */
    ncclProfileP2pApi = 1 << 10,       /* v5 */
    ncclProfileKernelLaunch = 1 << 11, /* v5 */
    ncclProfileCeColl = 1 << 12,       /* v6 */
    ncclProfileCeSync = 1 << 13,       /* v6 */
    ncclProfileCeBatch = 1 << 14,      /* v6 */
    ncclProfileKernelPhase = 1 << 15   /* v7 */
};

/* recordEventState states: one numbering across all versions (see event.h's
 * nsc_state for the names); passed as a 4-byte enum. */
typedef enum { ncclProfilerStateMax_ = 0x7fffffff } ncclProfilerEventState_t;
_Static_assert(sizeof(ncclProfilerEventState_t) == 4, "state enum is 4 bytes");

/* Descriptor members whose layout is the same in every version that has them. */
typedef struct {
    pid_t pid;
    uint8_t channelId;
    int peer;
    int nSteps;
    int chunkSize;
    int isSend;
} ncclProfilerProxyOpDescr_t;

typedef struct {
    int step;
} ncclProfilerProxyStepDescr_t;

typedef struct {
    int64_t id;
    void *data;
} ncclProfilerNetPluginDescr_t;

/* Net plugin event descriptors reached through netPlugin.data (v1 of each). */
#define NCCL_PROFILER_NET_IB_VER 1
#define NCCL_PROFILER_NET_SOCKET_VER 1
#define NCCL_PROFILER_NET_TYPE_IB (1 << 16)
#define NCCL_PROFILER_NET_TYPE_SOCK (2 << 16)

typedef struct {
    uint8_t type;
    union {
        struct {
            int device;
            uint64_t wr_id;
            int opcode;
            int qpNum;
            size_t length;
        } qp;
    };
} ncclProfilerNetIbDescr_v1_t;

typedef struct {
    uint8_t type;
    union {
        struct {
            int fd;
            int op;
            size_t length;
        } sock;
    };
} ncclProfilerNetSockDescr_v1_t;

/* Net plugins report events through this callback: type 0 start, 1 stop,
 * 2 update, 3 update+stop; pluginId = type bits | version. */
typedef ncclResult_t (*ncclProfilerCallback_t)(void **eHandle, int type, void *pHandle,
                                               int64_t pluginId, void *extData);

/* Check a member's offset against the measured ABI. */
#define NCCL_ABI_AT(T, member, off) \
    _Static_assert(offsetof(T, member) == (off), #T "." #member " at " #off)
#define NCCL_ABI_SIZE(T, size) _Static_assert(sizeof(T) == (size), "sizeof " #T " is " #size)

NCCL_ABI_AT(ncclProfilerNetIbDescr_v1_t, qp.device, 8);
NCCL_ABI_AT(ncclProfilerNetIbDescr_v1_t, qp.wr_id, 16);
NCCL_ABI_AT(ncclProfilerNetIbDescr_v1_t, qp.opcode, 24);
NCCL_ABI_AT(ncclProfilerNetIbDescr_v1_t, qp.qpNum, 28);
NCCL_ABI_AT(ncclProfilerNetIbDescr_v1_t, qp.length, 32);
NCCL_ABI_SIZE(ncclProfilerNetIbDescr_v1_t, 40);
NCCL_ABI_AT(ncclProfilerNetSockDescr_v1_t, sock.fd, 8);
NCCL_ABI_AT(ncclProfilerNetSockDescr_v1_t, sock.op, 12);
NCCL_ABI_AT(ncclProfilerNetSockDescr_v1_t, sock.length, 16);
NCCL_ABI_SIZE(ncclProfilerNetSockDescr_v1_t, 24);

#endif
