/* busbw.h: what an NCCL operation moves, in nccl-tests' terms.
 *
 * Owns the project's one table of NCCL datatype sizes and of NCCL's
 * collective function names (by the names NCCL's
 * profiler passes: "ncclFloat32", "ncclBfloat16", "ncclFloat8e4m3", ...) and
 * its one bus-bandwidth rule, used by the live state, the collectives query
 * and the CLI alike so that `status`, `watch` and `collectives` agree.
 */
#ifndef NCCLSCOPE_BUSBW_H
#define NCCLSCOPE_BUSBW_H

#include <stdint.h>

/* Bytes of one element of the datatype `name`; 0 if unknown or NULL.
 * NCCL's spelling ("ncclFloat32"), its enum aliases ("ncclFloat", "ncclHalf")
 * and the same names without the "nccl" prefix, in any case, are accepted. */
unsigned nsc_dtype_size(const char *name);

/* One operation's bandwidth model: `bytes` as nccl-tests counts them and the
 * factor that turns algorithm bandwidth (bytes / duration) into bus bandwidth. */
typedef struct nsc_busbw {
    uint64_t bytes;
    double factor;
} nsc_busbw;

/* nccl-tests' rule for `func` (NCCL's name, any case) over `nranks` ranks
 * (< 1: taken as 1) moving `count` elements of `size` bytes: bytes = count x
 * size, x nranks for AllGather, ReduceScatter, AlltoAll, Gather and Scatter
 * (whose count is per rank or per peer); factor 2(n-1)/n for AllReduce,
 * (n-1)/n for those five, 1 otherwise. A size of 0 (datatype unknown) gives
 * 0 bytes: callers report no bandwidth rather than a wrong one. */
nsc_busbw nsc_busbw_rule(const char *func, int32_t nranks, uint64_t count, unsigned size);

/* The most a transport moves, GB/s (bytes per ns) per direction: one NIC
 * (800 Gb/s) and one GPU's NVLink (NVLink 5). A figure above what its
 * transport allows was measured wrong (docs/api-figures.md, "Figures"). */
#define NSC_NET_MAX_GBPS 100.0
#define NSC_NVLINK_MAX_GBPS 900.0

/* The most a rank's busBW can be: its NVLink within one host; across hosts
 * also its host's NICs, at most one per rank of the communicator there
 * (host_ranks; 0: unknown, no such limit). */
double nsc_busbw_cap(int multi_host, uint32_t host_ranks);

/* Whether `func` (any case) is a function NCCL's profiler names in a
 * collective event; NSC_FUNC_NAMES lists them for messages. */
int nsc_func_known(const char *func);
#define NSC_FUNC_NAMES "AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AlltoAll, Gather, Scatter"

#endif
