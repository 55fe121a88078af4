/* busbw.c: NCCL datatype sizes and nccl-tests' bus-bandwidth rule (busbw.h). */
#include "busbw.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

/* ncclDataType_t by NCCL's names, the "nccl" prefix left off. The profiler
 * passes the first spelling of each value (ncclDatatypeToString; it has no
 * case for ncclUint8, which reaches a plugin as "Unknown"); the others are
 * the enum's aliases. */
static const struct {
    const char *name;
    unsigned size;
} dtypes[] = {
    {"Int8", 1},        {"Char", 1},        {"Uint8", 1},      {"Int32", 4},   {"Int", 4},
    {"Uint32", 4},      {"Int64", 8},       {"Uint64", 8},     {"Float16", 2}, {"Half", 2},
    {"Float32", 4},     {"Float", 4},       {"Float64", 8},    {"Double", 8},  {"Bfloat16", 2},
    {"Float8e4m3", 1},  {"Float8e5m2", 1},
};

unsigned nsc_dtype_size(const char *name)
{
    if (!name)
        return 0;
    if (strncasecmp(name, "nccl", 4) == 0)
        name += 4;
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcasecmp(name, dtypes[i].name) == 0)
            return dtypes[i].size;
    return 0;
}

/* How nccl-tests sizes and scales each collective (NCCL spells AlltoAll). */
enum { BW_ONE, BW_SPREAD, BW_ALLREDUCE };
static const struct {
    const char *func;
    int rule;
} funcs[] = {
    {"AllReduce", BW_ALLREDUCE}, {"AllGather", BW_SPREAD}, {"ReduceScatter", BW_SPREAD},
    {"AlltoAll", BW_SPREAD},     {"Gather", BW_SPREAD},    {"Scatter", BW_SPREAD},
    {"Broadcast", BW_ONE},       {"Reduce", BW_ONE},
};

int nsc_func_known(const char *func)
{
    for (size_t i = 0; i < sizeof funcs / sizeof funcs[0]; i++)
        if (strcasecmp(func, funcs[i].func) == 0)
            return 1;
    return 0;
}

nsc_busbw nsc_busbw_rule(const char *func, int32_t nranks, uint64_t count, unsigned size)
{
    uint64_t n = nranks > 1 ? (uint64_t)nranks : 1;
    int rule = BW_ONE;
    for (size_t i = 0; func && i < sizeof funcs / sizeof funcs[0]; i++)
        if (strcasecmp(func, funcs[i].func) == 0)
            rule = funcs[i].rule;
    double dn = (double)n;
    nsc_busbw bw = {count * size * (rule == BW_SPREAD ? n : 1), 1};
    if (rule == BW_ALLREDUCE)
        bw.factor = 2 * (dn - 1) / dn;
    else if (rule == BW_SPREAD)
        bw.factor = (dn - 1) / dn;
    return bw;
}

double nsc_busbw_cap(int multi_host, uint32_t host_ranks)
{
    double net = (double)host_ranks * NSC_NET_MAX_GBPS;
    return multi_host && host_ranks && net < NSC_NVLINK_MAX_GBPS ? net : NSC_NVLINK_MAX_GBPS;
}
