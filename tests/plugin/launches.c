/* launches.c: see launches.h. */
#include "launches.h"

void h_launches(const ncclProfiler_v5_t *p, void *ctx, int n)
{
    for (int i = 0; i < n; i++) {
        ncclProfilerEventDescr_v5_t d = {.type = ncclProfileKernelLaunch};
        void *h;
        p->startEvent(ctx, &h, &d);
        p->stopEvent(h);
    }
}
