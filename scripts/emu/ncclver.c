/* ncclver.c: the emulated NCCL's ncclGetVersion, exported from the program
 * (exports.list) as libnccl exports it, so a plugin can ask which NCCL it
 * runs in. NCCLSCOPE_EMU_NCCL_VERSION=X.Y.Z picks the answer (inherited by
 * the emulator's worker processes); unset, the emulator is NCCL 2.31.2, the
 * release that looks for every API version it can call.
 */
#include <stdio.h>
#include <stdlib.h>

#include "emu.h"

#define EMU_NCCL_DEFAULT 23102

__attribute__((visibility("default"))) ncclResult_t ncclGetVersion(int *version);

ncclResult_t ncclGetVersion(int *version)
{
    const char *v = getenv("NCCLSCOPE_EMU_NCCL_VERSION");
    int x, y, z;
    char end;
    if (!version)
        return ncclInvalidUsage;
    if (!v || !*v) {
        *version = EMU_NCCL_DEFAULT;
        return ncclSuccess;
    }
    if (sscanf(v, "%d.%d.%d%c", &x, &y, &z, &end) != 3 || x * 100 + y < 209 || y > 99 || z < 0 ||
        z > 99) {
        fprintf(stderr, "ncclscope-emu: NCCLSCOPE_EMU_NCCL_VERSION=%s is not X.Y.Z (>= 2.9.0)\n", v);
        return ncclInvalidUsage;
    }
    *version = x * 10000 + y * 100 + z;
    return ncclSuccess;
}
