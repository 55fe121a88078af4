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

#endif
