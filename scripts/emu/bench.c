/* bench.c: --bench, plugin calls as fast as the emulator can make them.
 *
 * Each thread inits its own communicator and loops startEvent (a pre-built
 * Coll descriptor) / recordEventState / stopEvent through the chosen
 * version's function table, so the emulator adds one indirect call per plugin
 * call. Reports the median over --reps of ns per call and calls per second,
 * and of the calling threads' CPU time per call: on a shared machine a thread
 * descheduled mid-rep inflates the wall time, not its CPU time.
 */
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "mono.h"

typedef struct bench_thread {
    const emu_plugin *pl;
    void *ctx;
    emu_descr d;
    emu_state_args args;
    long iters;
    pthread_barrier_t *go;
    uint64_t ns, cpu_ns;
} bench_thread;

/* One loop per version, so each call has its exact prototype. */
#define BENCH_LOOP(T, DT, AT)                                                          \
    do {                                                                               \
        const T *api = b->pl->api;                                                     \
        for (long i = 0; i < b->iters; i++) {                                          \
            void *h = NULL;                                                            \
            api->startEvent(b->ctx, &h, (DT *)&b->d);                                  \
            api->recordEventState(h, (ncclProfilerEventState_t)NSC_S_PROXY_STEP_SEND_WAIT, \
                                  (AT *)&b->args);                                     \
            api->stopEvent(h);                                                         \
        }                                                                              \
    } while (0)

static void *bench_main(void *arg)
{
    bench_thread *b = arg;
    pthread_barrier_wait(b->go);
    uint64_t c0 = nsc_thread_cpu_ns(), t0 = emu_true_ns();
    switch (b->pl->version) {
    case 1: BENCH_LOOP(ncclProfiler_v1_t, ncclProfilerEventDescr_v1_t, ncclProfilerEventStateArgs_v1_t); break;
    case 2: BENCH_LOOP(ncclProfiler_v2_t, ncclProfilerEventDescr_v2_t, ncclProfilerEventStateArgs_v2_t); break;
    case 3: BENCH_LOOP(ncclProfiler_v3_t, ncclProfilerEventDescr_v3_t, ncclProfilerEventStateArgs_v3_t); break;
    case 4: BENCH_LOOP(ncclProfiler_v4_t, ncclProfilerEventDescr_v4_t, ncclProfilerEventStateArgs_v4_t); break;
    case 5: BENCH_LOOP(ncclProfiler_v5_t, ncclProfilerEventDescr_v5_t, ncclProfilerEventStateArgs_v5_t); break;
    case 6: BENCH_LOOP(ncclProfiler_v6_t, ncclProfilerEventDescr_v6_t, ncclProfilerEventStateArgs_v6_t); break;
    default: BENCH_LOOP(ncclProfiler_v7_t, ncclProfilerEventDescr_v7_t, ncclProfilerEventStateArgs_v7_t); break;
    }
    b->ns = emu_true_ns() - t0;
    b->cpu_ns = nsc_thread_cpu_ns() - c0;
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int emu_bench_run(const emu_opts *o)
{
    emu_plugin pl = {0};
    const char *spec = o->plugin ? o->plugin : getenv("NCCL_PROFILER_PLUGIN");
    int nt = o->bench_threads;
    bench_thread *b = calloc((size_t)nt, sizeof *b);
    pthread_t *t = calloc((size_t)nt, sizeof *t);
    double *per_call = calloc((size_t)o->bench_reps, sizeof *per_call);
    double *cpu_per_call = calloc((size_t)o->bench_reps, sizeof *cpu_per_call);
    if (!b || !t || !per_call || !cpu_per_call)
        emu_die("out of memory");
    emu_ev ev = {.type = NSC_T_COLL, .comm_name = "bench"};
    ev.d.coll.func = "AllReduce";
    ev.d.coll.dtype = "ncclFloat32";
    ev.d.coll.algo = "RING";
    ev.d.coll.proto = "SIMPLE";
    ev.d.coll.count = o->count;
    ev.d.coll.nch = (uint8_t)o->channels;
    for (int i = 0; i < nt; i++) {
        emu_comm_info ci = {.comm_id = emu_comm_hash(o, i), .name = "bench", .nnodes = 1, .nranks = nt, .rank = i};
        if (emu_plugin_acquire(&pl, spec, o->api) != 0)
            emu_die("--bench needs a plugin that loads");
        if (emu_plugin_init(&pl, &b[i].ctx, &ci) != 0)
            emu_die("the plugin's init failed");
        b[i].pl = &pl;
        b[i].iters = o->bench_iters;
        ev.rank = i;
        ev.comm_id = ci.comm_id;
        emu_descr_build(pl.version, &ev, &b[i].d);
        emu_state_args_build(pl.version, NSC_S_PROXY_STEP_SEND_WAIT, 4096, 1, &b[i].args);
    }
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, (unsigned)nt);
    double best_rate = 0;
    for (int rep = 0; rep < o->bench_reps; rep++) {
        for (int i = 0; i < nt; i++) {
            b[i].go = &go;
            if (pthread_create(&t[i], NULL, bench_main, &b[i]))
                emu_die("cannot start a thread");
        }
        uint64_t slowest = 0, sum = 0, cpu_sum = 0;
        for (int i = 0; i < nt; i++) {
            pthread_join(t[i], NULL);
            slowest = b[i].ns > slowest ? b[i].ns : slowest;
            sum += b[i].ns;
            cpu_sum += b[i].cpu_ns;
        }
        double calls = 3.0 * (double)o->bench_iters;
        per_call[rep] = (double)sum / nt / calls;
        cpu_per_call[rep] = (double)cpu_sum / nt / calls;
        double rate = calls * nt / ((double)slowest / 1e9);
        best_rate = rate > best_rate ? rate : best_rate;
    }
    pthread_barrier_destroy(&go);
    qsort(per_call, (size_t)o->bench_reps, sizeof *per_call, cmp_double);
    qsort(cpu_per_call, (size_t)o->bench_reps, sizeof *cpu_per_call, cmp_double);
    double med = per_call[o->bench_reps / 2];
    printf("plugin %s (%s) api v%d threads %d iters %ld reps %d\n", pl.path, emu_plugin_name(&pl),
           pl.version, nt, o->bench_iters, o->bench_reps);
    printf("ns_per_call_median %.2f  calls_per_s_median %.0f  (per thread %.0f)  best_total_calls_per_s %.0f\n",
           med, 1e9 / med * nt, 1e9 / med, best_rate);
    printf("cpu_ns_per_call_median %.2f  (calling threads' CPU time, min %.2f)\n",
           cpu_per_call[o->bench_reps / 2], cpu_per_call[0]);
    for (int i = 0; i < nt; i++) {
        emu_plugin_finalize(&pl, b[i].ctx);
        emu_plugin_release(&pl);
    }
    free(b);
    free(t);
    free(per_call);
    free(cpu_per_call);
    return 0;
}
