/* nccl_version_lib.c: a library that answers ncclGetVersion as libnccl.so or
 * librccl.so does (built as both, each with its version: NSC_LIB_VERSION),
 * for test_plugin_abi to load RTLD_LOCAL, as Python loads PyTorch's NCCL. */
#include "../../plugin/nccl/profiler_common.h"

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int *version);

ncclResult_t ncclGetVersion(int *version)
{
    *version = NSC_LIB_VERSION;
    return ncclSuccess;
}
