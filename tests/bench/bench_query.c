/* bench_query: timeline query latency over a store of ~1 M events. Not run by
 * ctest; docs/benchmarks.md ("Queries") has the numbers.
 *
 *   bench_query [DIR] [EVENTS] [REPS]   (defaults /tmp, 1000000, 7)
 *
 * The store holds the realistic mix (tests/collector/mix.h) of 8 ranks of one
 * communicator on 2 hosts (one with a clock model). Measured, median of REPS:
 * the baseline, nsc_store_scan over every rank counting the same events (the
 * raw read, no order, no JSON), and the timeline query over the whole
 * communicator (aligned, merged across ranks, GPU fit, NDJSON to a sink) in
 * three outputs: the default JSON, compact arrays with states, without; and a
 * first page of 1,000 events, with every type (the GPU fit's pre-pass reads
 * the whole window) and without KernelCh (no pre-pass). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mix.h"
#include "query.h"
#include "storeutil.h"
#include "order.h"

#define RANKS 8
#define COLLS_PER_BATCH 50
#define COMM 0x5eedull
#define NVARIANTS 5

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wall time, and the CPU time of this (single-threaded) run: on a loaded
 * machine the CPU time moves less, so both are printed. */
typedef struct span {
    double wall, cpu;
} span;

static span now(void)
{
    return (span){clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_PROCESS_CPUTIME_ID)};
}

static span since(span t0)
{
    span t = now();
    return (span){t.wall - t0.wall, t.cpu - t0.cpu};
}

static int fill(nsc_store *st, uint64_t events)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    uint64_t per_rank = events / RANKS / NSC_MIX_EVENTS_PER_COLL + 1;
    int rc = nsc_store_begin(st, 1);
    for (int r = 0; !rc && r < RANKS; r++) {
        nsc_mix m;
        if (nsc_mix_init(&m, 42 + (uint64_t)r, COLLS_PER_BATCH))
            return -1;
        nsc_proc p = nsc_test_proc("bench", r < RANKS / 2 ? "hostA" : "hostB", 1000 + (uint32_t)r, r);
        nsc_ctx_def ctx = nsc_test_ctx(0, COMM, r, RANKS);
        for (uint64_t done = 0; !rc && done < per_rank; done += COLLS_PER_BATCH) {
            nsc_mix_clear(&m);
            for (int k = 0; k < COLLS_PER_BATCH; k++)
                nsc_mix_collective(&m, 0, r);
            nsc_store_batch b = nsc_mix_batch(&m, &p, &ctx, 1, strs, NSC_MIX_NSTRS);
            rc = nsc_store_put(st, &b);
            if (!rc && (done / COLLS_PER_BATCH) % 8 == 7)
                rc = nsc_store_commit(st) || nsc_store_begin(st, 1);
        }
        nsc_mix_free(&m);
    }
    nsc_clock_model cm;
    if (!rc && !(rc = nsc_clock_init(&cm, NULL))) {
        for (uint64_t i = 0; !rc && i < 600; i++) {
            uint64_t t1 = 5000000000000ull + i * 100000000ull;
            nsc_clock_sample s = {t1, t1 + 777000 + 10000, t1 + 777000 + 11000, t1 + 21000};
            rc = nsc_clock_add(&cm, &s);
        }
        rc = rc ? rc : nsc_clock_flush(&cm);
        rc = rc ? rc : nsc_store_put_clock(st, "hostB", &cm);
        nsc_clock_free(&cm);
    }
    return rc ? rc : nsc_store_commit(st);
}

static int count_event(void *arg, const nsc_block_key *k, const nsc_block *b, const nsc_event *e)
{
    (void)k, (void)b, (void)e;
    ++*(uint64_t *)arg;
    return 0;
}

static int sink(void *arg, const void *data, size_t len)
{
    (void)data;
    *(uint64_t *)arg += len;
    return 0;
}

int main(int argc, char **argv)
{
    const char *base = argc > 1 ? argv[1] : "/tmp";
    uint64_t events = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
    int reps = argc > 3 ? atoi(argv[3]) : 7;
    if (reps < 1 || reps > 99 || events == 0) {
        fprintf(stderr, "usage: bench_query [DIR] [EVENTS] [REPS 1..99]\n");
        return 2;
    }
    char tmpl[512];
    snprintf(tmpl, sizeof tmpl, "%s/nsc_bench_query_XXXXXX", base);
    char *dir = mkdtemp(tmpl) ? strdup(tmpl) : NULL;
    nsc_store *st;
    if (!dir || nsc_store_open(dir, NULL, &st) || fill(st, events)) {
        fprintf(stderr, "bench_query: cannot build the store in %s\n", base);
        return 1;
    }
    static const char *const variants[NVARIANTS] = {
        "comm=0x5eed&limit=1000000", "comm=0x5eed&limit=1000000&format=compact&states=1",
        "comm=0x5eed&limit=1000000&format=compact", "comm=0x5eed&limit=1000",
        "comm=0x5eed&limit=1000&type=coll,p2p,proxyop,proxystep"};
    nsc_query *q[NVARIANTS];
    char err[256];
    for (int v = 0; v < NVARIANTS; v++)
        if (nsc_query_parse("timeline", variants[v], &q[v], err, sizeof err)) {
            fprintf(stderr, "bench_query: %s\n", err);
            return 1;
        }
    double scan[2][99], tl[NVARIANTS][2][99];
    uint64_t nscan = 0, bytes[NVARIANTS] = {0};
    for (int i = 0; i < reps; i++) {
        nsc_store_reader *rd;
        if (nsc_store_read_begin(st, &rd))
            return 1;
        nscan = 0;
        span t = now();
        for (int r = 0; r < RANKS; r++)
            nsc_store_scan(rd, 1, COMM, r, 0, UINT64_MAX, count_event, &nscan);
        span d = since(t);
        scan[0][i] = d.wall, scan[1][i] = d.cpu;
        int rc = 0;
        for (int v = 0; !rc && v < NVARIANTS; v++) {
            bytes[v] = 0;
            t = now();
            rc = nsc_query_run(q[v], rd, sink, &bytes[v], err, sizeof err);
            d = since(t);
            tl[v][0][i] = d.wall, tl[v][1][i] = d.cpu;
        }
        nsc_store_read_end(rd);
        if (rc) {
            fprintf(stderr, "bench_query: %s\n", err);
            return 1;
        }
    }
    for (int k = 0; k < 2; k++) {
        qsort(scan[k], (size_t)reps, sizeof *scan[k], nsc_cmp_double);
        for (int v = 0; v < NVARIANTS; v++)
            qsort(tl[v][k], (size_t)reps, sizeof *tl[v][k], nsc_cmp_double);
    }
    printf("events %llu, ranks %d, median of %d: wall ms (cpu ms)\n", (unsigned long long)nscan,
           RANKS, reps);
    printf("baseline nsc_store_scan (count only): %8.1f ms (%6.1f)  %6.2f M events/s\n",
           scan[0][reps / 2] * 1e3, scan[1][reps / 2] * 1e3, (double)nscan / scan[0][reps / 2] / 1e6);
    for (int v = 0; v < NVARIANTS; v++) {
        printf("timeline %-50s %8.1f ms (%6.1f)", v ? variants[v] + 12 : "(default JSON)",
               tl[v][0][reps / 2] * 1e3, tl[v][1][reps / 2] * 1e3);
        if (v < 3) /* the whole window */
            printf("  %6.2f M events/s  %6.1f MB (%.0f B/event)", (double)nscan / tl[v][0][reps / 2] / 1e6,
                   (double)bytes[v] / 1e6, (double)bytes[v] / (double)nscan);
        printf("\n");
        nsc_query_free(q[v]);
    }
    nsc_store_close(st);
    nsc_tmp_store_remove(dir);
    return 0;
}
