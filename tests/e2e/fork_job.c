/* fork_job.c: a profiled process that forks, as PyTorch does when its
 * DataLoader starts workers after NCCL is initialised (tests/e2e/fork.sh).
 *
 *   nsc-e2e-fork-job PLUGIN --idle N --child-ms MS [--calling] --go FILE --pids FILE
 *
 * Loads the real plugin (ncclProfiler_v5) like NCCL, inits a communicator,
 * records 100 KernelLaunch events and starts a Coll, waits for the go file
 * (the caller creates it once the agent has those events: the parent's
 * shipper then has nothing to send, see the note in fork.sh), then forks N idle
 * children that only sleep MS and exit (half with exit(), which runs the
 * plugin's destructor, half with _exit(), as Python's workers do) and, with
 * --calling, one child that inits a communicator of its own and records 50
 * events. After the children it records 100 more, stops the Coll and
 * finalizes. FILE gets {"parent": PID, "idle": [PID...], "calling": PID|null}.
 * Exit status 0 only if every child exited 0.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../plugin/launches.h"

enum { MAX_IDLE = 64 };

static void idle_child(int i, int ms)
{
    usleep((useconds_t)ms * 1000);
    if (i % 2)
        _exit(0);
    exit(0);
}

static void calling_child(const ncclProfiler_v5_t *p)
{
    void *ctx;
    int mask;
    if (p->init(&ctx, 0xf0c4, &mask, "fork-child", 1, 1, 0, NULL) != ncclSuccess)
        _exit(3);
    h_launches(p, ctx, 50);
    p->finalize(ctx);
    exit(0); /* the communicator inherited from the parent is still live */
}

static int write_pids(const char *path, const pid_t *idle, int n, pid_t calling)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "{\"parent\": %d, \"idle\": [", (int)getpid());
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%d", i ? ", " : "", (int)idle[i]);
    if (calling > 0)
        fprintf(f, "], \"calling\": %d}\n", (int)calling);
    else
        fprintf(f, "], \"calling\": null}\n");
    return fclose(f);
}

static int wait_for(const char *path)
{
    for (int ms = 0; ms < 60000; ms += 5) {
        if (access(path, F_OK) == 0)
            return 0;
        usleep(5000);
    }
    fprintf(stderr, "fork-job: no %s after 60 s\n", path);
    return -1;
}

static int reap(pid_t pid)
{
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "fork-job: child %d failed (status 0x%x)\n", (int)pid, status);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int nidle = 0, child_ms = 0, calling = 0;
    const char *pids_path = NULL, *go_path = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--idle") && i + 1 < argc)
            nidle = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--child-ms") && i + 1 < argc)
            child_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--calling"))
            calling = 1;
        else if (!strcmp(argv[i], "--pids") && i + 1 < argc)
            pids_path = argv[++i];
        else if (!strcmp(argv[i], "--go") && i + 1 < argc)
            go_path = argv[++i];
    }
    if (argc < 2 || !pids_path || !go_path || nidle < 0 || nidle > MAX_IDLE) {
        fprintf(stderr,
                "usage: %s PLUGIN --idle N --child-ms MS [--calling] --go FILE --pids FILE\n",
                argv[0]);
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const ncclProfiler_v5_t *p = dl ? dlsym(dl, "ncclProfiler_v5") : NULL;
    void *ctx, *coll;
    int mask;
    if (!p || p->init(&ctx, 0xf0c3, &mask, "fork-parent", 1, 1, 0, NULL) != ncclSuccess) {
        fprintf(stderr, "fork-job: cannot load or init %s: %s\n", argv[1], dlerror());
        return 1;
    }
    h_launches(p, ctx, 100);
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileColl, .rank = 0};
    p->startEvent(ctx, &coll, &d);
    if (wait_for(go_path) != 0)
        return 1;
    pid_t idle[MAX_IDLE], caller = 0;
    for (int i = 0; i < nidle; i++)
        if ((idle[i] = fork()) == 0)
            idle_child(i, child_ms);
    if (calling && (caller = fork()) == 0)
        calling_child(p);
    int failed = 0;
    for (int i = 0; i < nidle; i++)
        failed |= idle[i] < 0 || reap(idle[i]);
    if (calling)
        failed |= caller < 0 || reap(caller);
    h_launches(p, ctx, 100);
    p->stopEvent(coll);
    p->finalize(ctx);
    dlclose(dl);
    return failed || write_pids(pids_path, idle, nidle, calling ? caller : 0) != 0;
}
