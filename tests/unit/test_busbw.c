/* test_busbw.c: the one datatype table and bus-bandwidth rule (common/busbw),
 * by the names NCCL's profiler really passes (ncclDatatypeToString and
 * ncclFuncToString), with nccl-tests' numbers worked out by hand. */
#include <criterion/criterion.h>

#include "busbw.h"

Test(busbw, nccl_datatype_spellings)
{
    static const struct {
        const char *name;
        unsigned size;
    } nccl[] = {{"ncclInt8", 1},        {"ncclUint8", 1},       {"ncclInt32", 4},
                {"ncclUint32", 4},      {"ncclInt64", 8},       {"ncclUint64", 8},
                {"ncclFloat16", 2},     {"ncclFloat32", 4},     {"ncclFloat64", 8},
                {"ncclBfloat16", 2},    {"ncclFloat8e4m3", 1},  {"ncclFloat8e5m2", 1}};
    for (size_t i = 0; i < sizeof nccl / sizeof nccl[0]; i++)
        cr_assert_eq(nsc_dtype_size(nccl[i].name), nccl[i].size, "%s", nccl[i].name);
}

Test(busbw, aliases_short_names_unknown)
{
    cr_assert_eq(nsc_dtype_size("ncclFloat"), 4);
    cr_assert_eq(nsc_dtype_size("ncclHalf"), 2);
    cr_assert_eq(nsc_dtype_size("ncclDouble"), 8);
    cr_assert_eq(nsc_dtype_size("ncclChar"), 1);
    cr_assert_eq(nsc_dtype_size("float32"), 4);
    cr_assert_eq(nsc_dtype_size("bfloat16"), 2);
    cr_assert_eq(nsc_dtype_size("Unknown"), 0);  /* what NCCL passes for ncclUint8 */
    cr_assert_eq(nsc_dtype_size("ncclFloat8"), 0);
    cr_assert_eq(nsc_dtype_size(""), 0);
    cr_assert_eq(nsc_dtype_size(NULL), 0);
}

/* 1 MiElement of ncclFloat32 over 8 ranks. */
#define COUNT (1u << 20)
#define FP32 4u

Test(busbw, nccl_tests_rule_per_collective)
{
    static const struct {
        const char *func;
        uint64_t bytes;
        double factor;
    } want[] = {{"AllReduce", 4ull << 20, 2.0 * 7 / 8},   {"AllGather", 32ull << 20, 7.0 / 8},
                {"ReduceScatter", 32ull << 20, 7.0 / 8}, {"AlltoAll", 32ull << 20, 7.0 / 8},
                {"Gather", 32ull << 20, 7.0 / 8},        {"Scatter", 32ull << 20, 7.0 / 8},
                {"Broadcast", 4ull << 20, 1},            {"Reduce", 4ull << 20, 1},
                {"SendRecv", 4ull << 20, 1},             {"Send", 4ull << 20, 1},
                {"Recv", 4ull << 20, 1}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        nsc_busbw bw = nsc_busbw_rule(want[i].func, 8, COUNT, nsc_dtype_size("ncclFloat32"));
        cr_assert_eq(bw.bytes, want[i].bytes, "%s", want[i].func);
        cr_assert_float_eq(bw.factor, want[i].factor, 1e-12, "%s", want[i].func);
    }
}

Test(busbw, func_case_rank_edge_unknown_type)
{
    nsc_busbw a = nsc_busbw_rule("AllToAll", 4, COUNT, FP32);  /* the spelling of our older data */
    cr_assert_eq(a.bytes, 16ull << 20);
    cr_assert_float_eq(a.factor, 0.75, 1e-12);
    nsc_busbw one = nsc_busbw_rule("AllReduce", 1, COUNT, FP32);  /* nccl-tests: no bus traffic */
    cr_assert_eq(one.bytes, 4ull << 20);
    cr_assert_float_eq(one.factor, 0, 1e-12);
    nsc_busbw none = nsc_busbw_rule("AllGather", 0, COUNT, FP32);  /* nranks unknown: 1 */
    cr_assert_eq(none.bytes, 4ull << 20);
    cr_assert_eq(nsc_busbw_rule("AllReduce", 8, COUNT, 0).bytes, 0);
    cr_assert_eq(nsc_busbw_rule(NULL, 8, COUNT, FP32).bytes, 4ull << 20);
}
