/* launches.c: see launches.h. */
#include "launches.h"

#include <unistd.h>

void h_launches(const ncclProfiler_v5_t *p, void *ctx, int n)
{
    for (int i = 0; i < n; i++) {
        ncclProfilerEventDescr_v5_t d = {.type = ncclProfileKernelLaunch};
        void *h;
        p->startEvent(ctx, &h, &d);
        p->stopEvent(h);
    }
}

pid_t h_fork_calling_child(const ncclProfiler_v5_t *p, void *ctx, ncclDebugLogger_t log)
{
    pid_t child = fork();
    if (child != 0)
        return child;
    void *ctx2;
    int mask;
    h_launches(p, ctx, 20);
    int ok = p->init(&ctx2, 2, &mask, "y", 1, 1, 0, log) == ncclSuccess;
    h_launches(p, ctx2, 30);
    p->finalize(ctx2);
    p->finalize(ctx);
    _exit(ok ? 0 : 1);
}
