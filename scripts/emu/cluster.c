/* cluster.c: a simulated cluster on one machine.
 *
 * The launcher re-executes this program (/proc/self/exe, hidden --_worker) once
 * per rank (or once per node when ranks are threads or a thread drives all GPUs
 * of a node), each with its node's environment: NCCLSCOPE_RUNDIR,
 * NCCLSCOPE_HOSTNAME and LD_PRELOAD of libnsc-clockshim.so when the node's
 * clock is skewed (with the offset, drift and epoch) or the time model is on
 * (the threads' clock floor). Workers write what they
 * emit into a shared accounting file per process; the launcher waits for all of
 * them (some may be killed) and writes the summary.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu.h"

/* Collectives and p2p ops per rank: --ops per iteration (a p2p group: 2,
 * an alltoall: a send and a receive per rank). */
uint32_t emu_coll_cap(const emu_opts *o)
{
    int per_iter = o->ops > 2 ? o->ops : 2;
    if (strcmp(o->scenario, "alltoall") == 0)
        per_iter = 2 * o->nodes * o->ranks_per_node;
    if (strcmp(o->scenario, "train") == 0) /* a middle stage: 2 AllReduces or 2 p2p ops per microbatch and pass */
        per_iter = 4 * o->microbatches + 2;
    return (uint32_t)((o->iters + 1) * per_iter + 8);
}

/* Two GPU timer samples per KernelCh and per KernelPhase (three per channel):
 * at most 8 per channel of each collective. Linear in --iters, so a long
 * benchmark job's accounting file stays small. */
uint32_t emu_sample_cap(const emu_opts *o)
{
    return emu_coll_cap(o) * (uint32_t)o->channels * 8;
}

static int ranks_per_proc(const emu_opts *o)
{
    const emu_scenario *sc = emu_scenario_find(o->scenario);
    return o->threads || sc->one_thread_per_node ? o->ranks_per_node : 1;
}

static void mkdir_p(const char *path)
{
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0700);
            *p = '/';
        }
    mkdir(tmp, 0700);
}

static void set_env_fmt(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_env_fmt(const char *name, const char *fmt, ...)
{
    char v[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v, sizeof v, fmt, ap);
    va_end(ap);
    setenv(name, v, 1);
}

/* The clock shim: a skewed node's clock, and with the time model the
 * threads' clock floor (clock.c). A skewed node must have it; the build makes
 * it with the emulator. Missing, the floor falls back to clock.c's slack:
 * events up to 20 us early, network steps measured short. */
static void preload_shim(bool needed)
{
    char exe[512], shim[600];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    snprintf(shim, sizeof shim, "%s/../lib/libnsc-clockshim.so", dirname(exe));
    if (!needed && access(shim, R_OK) != 0)
        return;
    const char *old = getenv("LD_PRELOAD");
    set_env_fmt("LD_PRELOAD", "%s%s%s", shim, old && *old ? ":" : "", old ? old : "");
    /* the shim moves CLOCK_MONOTONIC only: the plugin must stamp with it */
    setenv("NCCLSCOPE_CLOCK", "monotonic", 1);
}

/* In the child, before exec: the node's identity and clock. */
static void node_environment(const emu_opts *o, int node, uint64_t epoch)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/node%d", o->rundir_base, node);
    mkdir_p(dir);
    setenv("NCCLSCOPE_RUNDIR", dir, 1);
    set_env_fmt("NCCLSCOPE_HOSTNAME", "%s%d", o->host_prefix, node);
    set_env_fmt("NCCLSCOPE_EMU_EPOCH_NS", "%llu", (unsigned long long)epoch);
    const emu_node_clock *c = &o->node_clock[node];
    bool skewed = c->offset_ns != 0 || c->drift_ppm != 0 || c->step_ns != 0;
    if (skewed || emu_model_on(o))
        preload_shim(skewed);
    if (!skewed)
        return;
    set_env_fmt("NCCLSCOPE_TEST_CLOCK_OFFSET_NS", "%lld", (long long)c->offset_ns);
    set_env_fmt("NCCLSCOPE_TEST_CLOCK_DRIFT_PPM", "%.6f", c->drift_ppm);
    set_env_fmt("NCCLSCOPE_TEST_CLOCK_EPOCH_NS", "%llu", (unsigned long long)epoch);
    set_env_fmt("NCCLSCOPE_TEST_CLOCK_STEP_AT_NS", "%lld", (long long)c->step_at_ns);
    set_env_fmt("NCCLSCOPE_TEST_CLOCK_STEP_NS", "%lld", (long long)c->step_ns);
}

/* PXN: rank g's ProxyOps go to the next local rank's process. */
static int pxn_origin_of(const emu_opts *o, int g)
{
    int m = o->ranks_per_node, node = g / m;
    return node * m + (g % m + m - 1) % m;
}

static pid_t spawn(const emu_opts *o, int argc, char **argv, int proc, const char *acct, const char *start,
                   uint64_t epoch, int (*pipes)[2], int nranks)
{
    int per = ranks_per_proc(o), first = proc * per, node = first / o->ranks_per_node;
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    int wfd = -1, rfd = -1;
    if (pipes) {
        wfd = pipes[first][1];
        rfd = pipes[pxn_origin_of(o, first)][0];
        for (int g = 0; g < nranks; g++)
            for (int e = 0; e < 2; e++)
                if (pipes[g][e] != wfd && pipes[g][e] != rfd)
                    close(pipes[g][e]);
    }
    node_environment(o, node, epoch);
    char spec[1200];
    snprintf(spec, sizeof spec, "%d,%d,%d,%d,%d,%s,%s", node, first, per, wfd, rfd, start, acct);
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (!args)
        _exit(127);
    for (int i = 0; i < argc; i++)
        args[i] = argv[i];
    args[argc] = "--_worker";
    args[argc + 1] = spec;
    execv("/proc/self/exe", args);
    fprintf(stderr, "ncclscope-emu: exec failed: %s\n", strerror(errno));
    _exit(127);
}

/* Wait for every worker in the order they end; the ranks of one that died
 * are marked gone on the wire, so their peers stop waiting for them (a
 * process that exits marks its own when it closes its ranks). */
static void reap(const emu_opts *o, emu_proc_result *procs, int nprocs, emu_wire *wire)
{
    int per = ranks_per_proc(o), nranks = o->nodes * o->ranks_per_node;
    for (int left = nprocs; left > 0;) {
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            break;
        for (int p = 0; p < nprocs; p++) {
            if (procs[p].pid != pid)
                continue;
            procs[p].status = st;
            left--;
            for (int c = 0; WIFSIGNALED(st) && c < (int)(emu_wire_slots(o) / (uint32_t)nranks); c++)
                for (int g = p * per; g < (p + 1) * per; g++)
                    emu_wire_gone(wire, (uint32_t)(c * nranks + g));
        }
    }
}

int emu_cluster_run(const emu_opts *o, int argc, char **argv)
{
    int nranks = o->nodes * o->ranks_per_node, per = ranks_per_proc(o), nprocs = nranks / per;
    int comms = o->comms + emu_scenario_find(o->scenario)->child_comms;
    char tmpl[] = "/tmp/ncclscope-emu-acct.XXXXXX";
    if (!mkdtemp(tmpl))
        emu_die("cannot create a temporary folder: %s", strerror(errno));
    emu_proc_result *procs = calloc((size_t)nprocs, sizeof *procs);
    int (*pipes)[2] = NULL;
    if (!procs)
        emu_die("out of memory");
    if (strcmp(o->scenario, "pxn") == 0) {
        pipes = calloc((size_t)nranks, sizeof *pipes);
        for (int g = 0; pipes && g < nranks; g++)
            if (pipe(pipes[g]))
                emu_die("pipe: %s", strerror(errno));
    }
    char start[sizeof tmpl + 8], wire[sizeof tmpl + 8];
    snprintf(start, sizeof start, "%s/start", tmpl);
    snprintf(wire, sizeof wire, "%s/wire", tmpl);
    if (emu_start_create(start) || emu_wire_create(wire, emu_wire_slots(o)))
        emu_die("cannot create %s", start);
    emu_wire *wmap = emu_wire_map(wire);
    if (!wmap)
        emu_die("cannot map %s", wire);
    uint64_t epoch = emu_epoch_ns();
    for (int p = 0; p < nprocs; p++) {
        emu_proc_result *r = &procs[p];
        snprintf(r->acct_path, sizeof r->acct_path, "%s/proc%d", tmpl, p);
        if (emu_acct_create(r->acct_path, (uint32_t)(per * comms), emu_coll_cap(o),
                            emu_sample_cap(o)))
            emu_die("cannot create %s", r->acct_path);
        r->node = p * per / o->ranks_per_node;
        r->pid = spawn(o, argc, argv, p, r->acct_path, start, epoch, pipes, nranks);
        if (r->pid < 0)
            emu_die("fork: %s", strerror(errno));
    }
    for (int g = 0; pipes && g < nranks; g++) {
        close(pipes[g][0]);
        close(pipes[g][1]);
    }
    free(pipes);
    reap(o, procs, nprocs, wmap);
    emu_wire_unmap(wmap);
    int failed = 0;
    for (int p = 0; p < nprocs; p++) {
        bool killed_on_purpose = WIFSIGNALED(procs[p].status) && o->kill_rank >= 0 &&
                                 o->kill_rank / per == p;
        if (!killed_on_purpose && !(WIFEXITED(procs[p].status) && WEXITSTATUS(procs[p].status) == 0))
            failed++;
    }
    int rc = emu_summary_write(o, o->summary, procs, nprocs, epoch) || failed ? 1 : 0;
    for (int p = 0; p < nprocs; p++)
        unlink(procs[p].acct_path);
    unlink(start);
    unlink(wire);
    rmdir(tmpl);
    free(procs);
    if (failed)
        fprintf(stderr, "ncclscope-emu: %d worker process(es) failed\n", failed);
    return rc;
}

/* ---- the worker ---- */

typedef struct driver {
    emu_world *w;
    const emu_scenario *sc;
    const char *start;  /* the job's start barrier (start.c) */
    int first, count, node;
    int rc;
} driver;

uint64_t emu_cluster_comm_hash(const emu_opts *o, int c)
{
    return emu_comm_hash(o, c ? 16 + c : 0); /* 1 and 2: the split's children */
}

/* Open this thread's ranks in every communicator (--comms), run the scenario
 * on each communicator in turn, close them. */
static void *drive(void *arg)
{
    driver *d = arg;
    const emu_opts *o = d->w->o;
    size_t n = (size_t)d->count * (size_t)o->comms;
    emu_rank *ranks = calloc(n, sizeof *ranks);
    emu_rank **rp = calloc(n, sizeof *rp);
    char (*names)[16] = calloc((size_t)o->comms, sizeof *names);
    if (!ranks || !rp || !names)
        emu_die("out of memory");
    int nranks = o->nodes * o->ranks_per_node;
    for (int c = 0; c < o->comms; c++) {
        snprintf(names[c], sizeof names[c], c ? "comm%d" : "world", c);
        for (int i = 0; i < d->count; i++) {
            emu_comm_info ci = {.comm_id = emu_cluster_comm_hash(o, c), .name = names[c],
                                .nnodes = o->nodes, .nranks = nranks, .rank = d->first + i};
            emu_rank *r = &ranks[c * d->count + i];
            if (emu_rank_open(d->w, r, &ci, d->first + i, d->node))
                emu_die("cannot open rank %d", d->first + i);
            r->wire_comm = c;
            emu_proxy_start(r);
            rp[c * d->count + i] = r;
        }
    }
    if (emu_pxn_serve_start(d->w, rp[0]))
        emu_die("cannot start the PXN thread");
    if (!o->unsynced_init)
        emu_start_wait(d->start, d->count, nranks);
    for (int c = 0; c < o->comms; c++)
        d->rc |= d->sc->run(d->w, &rp[c * d->count], d->count);
    for (size_t i = 0; i < n; i++)
        emu_proxy_join(&ranks[i]);
    emu_pxn_serve_join(d->w);
    for (size_t i = 0; i < n; i++)
        emu_rank_close(&ranks[i]);
    free(ranks);
    free(rp);
    free(names);
    return NULL;
}

int emu_worker_main(const emu_opts *o)
{
    int node, first, count, wfd, rfd, used = 0;
    char start[512];
    if (sscanf(o->worker, "%d,%d,%d,%d,%d,%511[^,],%n", &node, &first, &count, &wfd, &rfd, start, &used) != 6 ||
        !used)
        emu_die("bad worker spec");
    emu_world w = {.o = o, .plugin_spec = o->plugin ? o->plugin : getenv("NCCL_PROFILER_PLUGIN")};
    pthread_mutex_init(&w.lock, NULL);
    w.epoch_ns = emu_epoch_ns();
    if (emu_acct_map(o->worker + used, &w.acct))
        emu_die("cannot map %s", o->worker + used);
    if (emu_pxn_setup(&w, wfd, rfd))
        emu_die("out of memory");
    if (emu_model_on(o)) {
        char wire[512];
        snprintf(wire, sizeof wire, "%s", start);
        char *slash = strrchr(wire, '/');
        snprintf(slash ? slash + 1 : wire, sizeof wire - (size_t)(slash ? slash + 1 - wire : 0), "wire");
        if (!(w.wire = emu_wire_map(wire)))
            emu_die("cannot map %s", wire);
    }
    const emu_scenario *sc = emu_scenario_find(o->scenario);
    int threads = sc->one_thread_per_node ? 1 : count;
    driver *d = calloc((size_t)threads, sizeof *d);
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    if (!d || !t)
        emu_die("out of memory");
    int per_thread = count / threads;
    for (int i = 0; i < threads; i++) {
        d[i] = (driver){&w, sc, start, first + i * per_thread, per_thread, node, 0};
        if (threads == 1)
            drive(&d[i]);
        else if (pthread_create(&t[i], NULL, drive, &d[i]))
            emu_die("cannot start a rank thread");
    }
    int rc = 0;
    for (int i = 0; i < threads; i++) {
        if (threads > 1)
            pthread_join(t[i], NULL);
        rc |= d[i].rc;
    }
    free(d);
    free(t);
    emu_wire_unmap(w.wire);
    emu_acct_unmap(&w.acct);
    pthread_mutex_destroy(&w.lock);
    return rc ? 1 : 0;
}
