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

/* Member lists that several versions' descriptors share, written once here; each
 * version's header puts them into its own structs and checks their offsets with
 * the NCCL_ABI_CHECK_* macros below. */

/* What every descriptor has before its union of per-event members: the event
 * type (TYPE: a byte up to v4, 8 bytes from v5), the parent handle and the rank. */
#define NCCL_PROFILER_DESCR_HEAD(TYPE) \
    TYPE type;                         \
    void *parentObj;                   \
    int rank;

/* A collective call as the application made it (Coll from v2, CeColl). */
#define NCCL_PROFILER_CALL_MEMBERS \
    uint64_t seqNumber;            \
    const char *func;              \
    const void *sendBuff;          \
    void *recvBuff;                \
    size_t count;                  \
    int root;                      \
    const char *datatype;

/* A point-to-point call (P2p from v2). */
#define NCCL_PROFILER_P2P_MEMBERS \
    const char *func;             \
    void *buff;                   \
    const char *datatype;         \
    size_t count;                 \
    int peer;

/* The table a plugin exports: the same six members in every version; only init's
 * signature (given whole as INIT), the descriptor and the state arguments vary. */
#define NCCL_PROFILER_TABLE(INIT, DESCR, STATE_ARGS)                                    \
    struct {                                                                            \
        const char *name;                                                               \
        INIT;                                                                           \
        ncclResult_t (*startEvent)(void *context, void **eHandle, DESCR *eDescr);       \
        ncclResult_t (*stopEvent)(void *eHandle);                                       \
        ncclResult_t (*recordEventState)(void *eHandle, ncclProfilerEventState_t eState, \
                                         STATE_ARGS *eStateArgs);                       \
        ncclResult_t (*finalize)(void *context);                                        \
    }

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

/* Checks shared by the descriptors of several versions, for descriptor type T. */

/* Every version: the parent at 8, the rank at 16, the union at 24 (ProxyOp and
 * ProxyStep keep their layout throughout). */
#define NCCL_ABI_CHECK_HEAD(T)               \
    NCCL_ABI_AT(T, parentObj, 8);            \
    NCCL_ABI_AT(T, rank, 16);                \
    NCCL_ABI_AT(T, proxyOp.pid, 24);         \
    NCCL_ABI_AT(T, proxyOp.channelId, 28);   \
    NCCL_ABI_AT(T, proxyOp.peer, 32);        \
    NCCL_ABI_AT(T, proxyOp.nSteps, 36);      \
    NCCL_ABI_AT(T, proxyOp.chunkSize, 40);   \
    NCCL_ABI_AT(T, proxyOp.isSend, 44);      \
    NCCL_ABI_AT(T, proxyStep.step, 24)

/* NCCL_PROFILER_CALL_MEMBERS in member m of T, the first at base. */
#define NCCL_ABI_CHECK_CALL(T, m, base)        \
    NCCL_ABI_AT(T, m.seqNumber, (base));       \
    NCCL_ABI_AT(T, m.func, (base) + 8);        \
    NCCL_ABI_AT(T, m.sendBuff, (base) + 16);   \
    NCCL_ABI_AT(T, m.recvBuff, (base) + 24);   \
    NCCL_ABI_AT(T, m.count, (base) + 32);      \
    NCCL_ABI_AT(T, m.root, (base) + 40);       \
    NCCL_ABI_AT(T, m.datatype, (base) + 48)

/* NCCL_PROFILER_P2P_MEMBERS in member p2p of T, the first at base. */
#define NCCL_ABI_CHECK_P2P(T, base)             \
    NCCL_ABI_AT(T, p2p.func, (base));           \
    NCCL_ABI_AT(T, p2p.buff, (base) + 8);       \
    NCCL_ABI_AT(T, p2p.datatype, (base) + 16);  \
    NCCL_ABI_AT(T, p2p.count, (base) + 24);     \
    NCCL_ABI_AT(T, p2p.peer, (base) + 32)

/* From v3: the net plugin's event. */
#define NCCL_ABI_CHECK_NET_PLUGIN(T)  \
    NCCL_ABI_AT(T, netPlugin.id, 24); \
    NCCL_ABI_AT(T, netPlugin.data, 32)

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
