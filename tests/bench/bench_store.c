/* bench_store: collector store ingest rate, stored bytes per event and clock
 * alignment error. Not run by ctest; docs/benchmarks.md has the numbers.
 *
 *   bench_store [DIR] [EVENTS]   (DIR: where stores are created, default /tmp)
 *
 * Ingest: decoded batches of the realistic mix (tests/collector/mix.h) for 8
 * ranks, 8 batches per durable commit, timed from begin to commit returned;
 * the median of 5 runs per setting, each into a fresh store. The baseline in
 * the same run is the same store with compression off. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpuclock.h"
#include "mix.h"
#include "sim.h"
#include "storeutil.h"
#include "order.h"

#define RANKS 8
#define COLLS_PER_BATCH 50
#define BATCHES_PER_COMMIT 8
#define RUNS 5

typedef struct workload {
    nsc_mix *batches;        /* nbatches pre-generated batches */
    nsc_proc procs[RANKS];
    nsc_ctx_def ctxs[RANKS];
    nsc_str_def strs[NSC_MIX_NSTRS];
    size_t nbatches;
    uint64_t events, records;
} workload;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, nsc_cmp_double);
    return v[n / 2];
}

static int make_workload(workload *w, uint64_t target_events)
{
    size_t per_batch = COLLS_PER_BATCH * NSC_MIX_EVENTS_PER_COLL;
    w->nbatches = (size_t)(target_events / per_batch) + 1;
    w->batches = calloc(w->nbatches, sizeof *w->batches);
    if (!w->batches)
        return -1;
    nsc_mix_strs(w->strs);
    for (int r = 0; r < RANKS; r++) {
        char host[16];
        snprintf(host, sizeof host, "node%d", r / 4);
        w->procs[r] = nsc_test_proc("bench", host, 100 + (uint32_t)r, r % 4);
        w->ctxs[r] = nsc_test_ctx(0, 0xabcdef, r, RANKS);
    }
    for (size_t b = 0; b < w->nbatches; b++) {
        nsc_mix *m = &w->batches[b];
        if (nsc_mix_init(m, 1000 + b, COLLS_PER_BATCH))
            return -1;
        m->seq = (b / RANKS) * COLLS_PER_BATCH;
        for (int c = 0; c < COLLS_PER_BATCH; c++)
            nsc_mix_collective(m, 0, (int32_t)(b % RANKS));
        w->events += m->nevents;
        w->records += m->nevents + m->nstates + m->ncompletions;
    }
    return 0;
}

/* CPU time per event as well as the rate: on a machine shared with other
 * jobs the CPU time moves much less than the wall-clock rate. */
typedef struct result {
    double events_per_s, records_per_s, cpu_ns_per_event;
    double live_per_event, block_per_event;
} result;

static int ingest_once(const workload *w, const char *base, int level, result *out)
{
    char dir[256];
    snprintf(dir, sizeof dir, "%s/nsc_bench_XXXXXX", base);
    if (!mkdtemp(dir))
        return -1;
    nsc_store_opts o = {0};
    o.zstd_level = level;
    o.initial_map = 1u << 30;
    nsc_store *st;
    if (nsc_store_open(dir, &o, &st))
        return -1;
    nsc_store_batch *bs = calloc(BATCHES_PER_COMMIT, sizeof *bs);
    double t0 = now_s(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    for (size_t b = 0; b < w->nbatches; b += BATCHES_PER_COMMIT) {
        if (nsc_store_begin(st, (uint64_t)b))
            return -1;
        for (size_t k = 0; k < BATCHES_PER_COMMIT && b + k < w->nbatches; k++) {
            size_t r = (b + k) % RANKS;
            bs[k] = nsc_mix_batch(&w->batches[b + k], &w->procs[r], &w->ctxs[r], 1, w->strs,
                                  NSC_MIX_NSTRS);
            if (nsc_store_put(st, &bs[k]))
                return -1;
        }
        if (nsc_store_commit(st))
            return -1;
    }
    double dt = now_s() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    nsc_store_reader *rd;
    nsc_store_stats s;
    if (nsc_store_read_begin(st, &rd) || nsc_store_stats_get(rd, &s))
        return -1;
    nsc_store_read_end(rd);
    out->events_per_s = (double)w->events / dt;
    out->records_per_s = (double)w->records / dt;
    out->cpu_ns_per_event = cpu * 1e9 / (double)w->events;
    out->live_per_event = (double)s.live_bytes / (double)s.events;
    out->block_per_event = (double)s.block_bytes / (double)s.events;
    free(bs);
    nsc_store_close(st);
    nsc_tmp_store_remove(strdup(dir));
    return 0;
}

static int bench_ingest(const workload *w, const char *base, int level, const char *label)
{
    double eps[RUNS], rps[RUNS], cpu[RUNS];
    result r = {0};
    for (int i = 0; i < RUNS; i++) {
        if (ingest_once(w, base, level, &r)) {
            fprintf(stderr, "ingest failed (%s)\n", label);
            return -1;
        }
        eps[i] = r.events_per_s;
        rps[i] = r.records_per_s;
        cpu[i] = r.cpu_ns_per_event;
    }
    printf("%-22s %6.2f M events/s  %6.2f M records/s  %5.0f CPU ns/event  %6.2f B/event stored "
           "(pages)  %6.2f B/event (block values)\n",
           label, median(eps, RUNS) / 1e6, median(rps, RUNS) / 1e6, median(cpu, RUNS),
           r.live_per_event, r.block_per_event);
    return 0;
}

static void bench_clocks(void)
{
    static double cpu[8 * 2000], gpu[8 * 2000];
    size_t n = 0;
    nsc_sim_rng r = {1};
    for (int host = 0; host < 8; host++) {
        nsc_sim_host h = nsc_sim_host_random(&r);
        nsc_sim_gpu g = nsc_sim_gpu_random(&r);
        nsc_clock_model m;
        nsc_gpuclock gc;
        nsc_clock_init(&m, NULL);
        nsc_gpuclock_init(&gc);
        nsc_sim_feed(&m, &h, &nsc_sim_lan, &r, 100e6, 120e9);
        for (double t = 0; t < 120e9; t += 10e6)
            nsc_gpuclock_add(&gc, nsc_sim_ptimer(&g, t),
                             nsc_sim_host_time(&h, t + nsc_sim_range(&r, 0, 50000)));
        for (int q = 0; q < 2000; q++, n++) {
            double t = nsc_sim_range(&r, 0.5e9, 119.5e9);
            uint64_t ref, cpu_ns, ref_g;
            nsc_clock_host_to_ref(&m, nsc_sim_host_time(&h, t), &ref, NULL);
            cpu[n] = fabs((double)(int64_t)(ref - nsc_sim_ref_time(&h, t)));
            nsc_gpuclock_to_cpu(&gc, nsc_sim_ptimer(&g, t), &cpu_ns, NULL);
            nsc_clock_host_to_ref(&m, cpu_ns, &ref_g, NULL);
            gpu[n] = fabs((double)(int64_t)(ref_g - nsc_sim_ref_time(&h, t)));
        }
        nsc_clock_free(&m);
        nsc_gpuclock_free(&gc);
    }
    printf("clock alignment, 8 hosts x 2000 queries: CPU p50 %.0f ns p99 %.0f ns max %.0f ns; "
           "GPU->reference p50 %.0f ns p99 %.0f ns max %.0f ns\n",
           nsc_sim_quantile(cpu, n, 0.5), nsc_sim_quantile(cpu, n, 0.99),
           nsc_sim_quantile(cpu, n, 1.0), nsc_sim_quantile(gpu, n, 0.5),
           nsc_sim_quantile(gpu, n, 0.99), nsc_sim_quantile(gpu, n, 1.0));
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : "/tmp";
    uint64_t target = argc > 2 ? strtoull(argv[2], NULL, 10) : 2000000;
    workload w;
    memset(&w, 0, sizeof w);
    if (make_workload(&w, target)) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("workload: %llu events, %llu records (events + states + completions), %zu batches, "
           "%d batches per commit\n",
           (unsigned long long)w.events, (unsigned long long)w.records, w.nbatches,
           BATCHES_PER_COMMIT);
    int rc = bench_ingest(&w, base, -1, "baseline: uncompressed") ||
             bench_ingest(&w, base, 1, "zstd level 1") ||
             bench_ingest(&w, base, 3, "zstd level 3 (default)");
    bench_clocks();
    for (size_t b = 0; b < w.nbatches; b++)
        nsc_mix_free(&w.batches[b]);
    free(w.batches);
    return rc ? 1 : 0;
}
