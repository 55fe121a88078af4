/* ncclenum.c: see ncclenum.h. */
#include "ncclenum.h"

#include <stddef.h>
#include <string.h>

static const char *const funcs[] = {"Broadcast", "Reduce",   "AllGather", "ReduceScatter",
                                    "AllReduce", "SendRecv", "Send",      "Recv", NULL};
static const char *const dtypes[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",    "ncclUint32",
                                     "ncclInt64",   "ncclUint64",  "ncclFloat16",  "ncclFloat32",
                                     "ncclFloat64", "ncclBfloat16", NULL};
static const char *const algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
                                    "NVLS", "NVLS_TREE", NULL};
static const char *const protos[] = {"LL", "LL128", "SIMPLE", NULL};

uint8_t nsc_nccl_enum(nsc_nccl_enum_kind kind, const char *name)
{
    static const char *const *const tables[] = {funcs, dtypes, algos, protos};
    const char *const *t = tables[kind];
    for (uint8_t i = 0; name && t[i]; i++)
        if (strcmp(t[i], name) == 0)
            return i;
    return 0;
}
