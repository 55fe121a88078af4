/* bench_live_snap: the cost of sharing the live state through ClickHouse
 * (docs/clickhouse-live.md). Not run by
 * ctest; docs/benchmarks.md ("ClickHouse store") has the numbers.
 *
 *   bench_live_snap [PROCS] [PEERS] [REPS]   (defaults 256, 3, 21)
 *
 * One collector's live state: PROCS processes of one job, one rank each, in
 * a world communicator of PROCS ranks and communicators of 8 ranks, each
 * rank past 300 AllReduce and 300 AllGather (every function's ring of
 * first-seen times full). Measured, median of REPS, CPU time of this
 * single-threaded run: writing its snapshot (and its bytes), reading one
 * back, a status request's merge of the own state with PEERS decoded
 * snapshots and the status JSON of that view; the baseline is the status
 * JSON of the own state alone, what a request costs without sharing. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "livefeed.h"

#define S 1000000000ull
#define SEQS 300
#define GROUP 8

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Rank r's Colls of func in communicator comm (nranks), SEQS of them. */
static int feed(nsc_live *l, int r, int rank, int nranks, uint64_t comm, const char *func)
{
    nsc_test_feed f = {.agent = "agent", .job = "bench", .host = "node", .func = func,
                       .pid = 1000 + (uint32_t)r, .rank = rank, .nranks = nranks, .comm = comm};
    f.host = r % 2 ? "node-b" : "node-a";
    for (uint64_t s = 0; s < SEQS; s += 30)
        if (nsc_test_feed_colls(l, &f, s, s + 29, 0, 10 * S + s))
            return -1;
    return 0;
}

static nsc_live *state(int procs)
{
    nsc_live *l = nsc_live_new(NULL);
    for (int r = 0; l && r < procs; r++)
        if (feed(l, r, r, procs, 0x10000, "AllReduce") || feed(l, r, r, procs, 0x10000, "AllGather") ||
            feed(l, r, r % GROUP, GROUP, 0x20000 + (uint64_t)(r / GROUP), "AllReduce") ||
            feed(l, r, r % GROUP, GROUP, 0x20000 + (uint64_t)(r / GROUP), "AllGather")) {
            nsc_live_free(l);
            return NULL;
        }
    if (l)
        nsc_live_tick(l, 11 * S);
    return l;
}

typedef struct times {
    double write, read, merge, status, own_status;
} times;

static int once(const nsc_live *own, int peers, times *t, size_t *bytes)
{
    FILE *sink = fopen("/dev/null", "w");
    uint8_t *snap = NULL;
    size_t len = 0;
    nsc_live *got[16] = {0}, *view = nsc_live_new(NULL);
    const char *why;
    double t0 = cpu_s();
    int rc = !sink || !view || nsc_live_snapshot(own, 20 * S, 1700000000ull * S, &snap, &len);
    double t1 = cpu_s();
    for (int p = 0; !rc && p < peers; p++)
        rc = nsc_live_from_snapshot(snap, len, NULL, 20 * S, 1700000000ull * S, &got[p], &why);
    double t2 = cpu_s();
    rc = rc || nsc_live_merge(view, own);
    for (int p = 0; !rc && p < peers; p++)
        rc = nsc_live_merge(view, got[p]);
    double t3 = cpu_s();
    rc = rc || nsc_live_status_json(view, 21 * S, sink);
    double t4 = cpu_s();
    rc = rc || nsc_live_status_json(own, 21 * S, sink);
    double t5 = cpu_s();
    *t = (times){t1 - t0, (t2 - t1) / (peers ? peers : 1), t3 - t2, t4 - t3, t5 - t4};
    *bytes = len;
    for (int p = 0; p < peers; p++)
        nsc_live_free(got[p]);
    nsc_live_free(view);
    free(snap);
    if (sink)
        fclose(sink);
    return rc;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int procs = argc > 1 ? atoi(argv[1]) : 256, peers = argc > 2 ? atoi(argv[2]) : 3,
        reps = argc > 3 ? atoi(argv[3]) : 21;
    if (procs < GROUP || peers < 0 || peers > 16 || reps < 1 || reps > 1000) {
        fprintf(stderr, "usage: bench_live_snap [PROCS >= 8] [PEERS 0..16] [REPS 1..1000]\n");
        return 2;
    }
    nsc_live *own = state(procs);
    double *v[5];
    for (int k = 0; k < 5; k++)
        v[k] = malloc((size_t)reps * sizeof *v[k]);
    size_t bytes = 0;
    for (int i = 0; own && i < reps; i++) {
        times t;
        if (once(own, peers, &t, &bytes)) {
            fprintf(stderr, "bench_live_snap: a step failed\n");
            return 1;
        }
        v[0][i] = t.write, v[1][i] = t.read, v[2][i] = t.merge, v[3][i] = t.status, v[4][i] = t.own_status;
    }
    if (!own) {
        fprintf(stderr, "bench_live_snap: cannot build the state\n");
        return 1;
    }
    printf("live state: %d processes, %d communicators, 2 functions x %d seqs; snapshot %zu bytes\n", procs,
           1 + procs / GROUP, SEQS, bytes);
    printf("CPU ms (median of %d): write %.3f, read %.3f, merge of own + %d peers %.3f, status of the view %.3f; "
           "baseline status of the own state %.3f\n",
           reps, median(v[0], reps) * 1e3, median(v[1], reps) * 1e3, peers, median(v[2], reps) * 1e3,
           median(v[3], reps) * 1e3, median(v[4], reps) * 1e3);
    for (int k = 0; k < 5; k++)
        free(v[k]);
    nsc_live_free(own);
    return 0;
}
