/* profiler.h: every version of NCCL's profiler plugin ABI, v1 to v7. */
#ifndef NCCLSCOPE_NCCL_PROFILER_H
#define NCCLSCOPE_NCCL_PROFILER_H

#include "profiler_v1.h"
#include "profiler_v2.h"
#include "profiler_v3.h"
#include "profiler_v4.h"
#include "profiler_v5.h"
#include "profiler_v6.h"
#include "profiler_v7.h"

/* Room for a descriptor of any version (v7's, 136 bytes, is the largest). */
typedef union nsc_any_descr {
    ncclProfilerEventDescr_v1_t v1;
    ncclProfilerEventDescr_v2_t v2;
    ncclProfilerEventDescr_v3_t v3;
    ncclProfilerEventDescr_v4_t v4;
    ncclProfilerEventDescr_v5_t v5;
    ncclProfilerEventDescr_v6_t v6;
    ncclProfilerEventDescr_v7_t v7;
} nsc_any_descr;

#endif
