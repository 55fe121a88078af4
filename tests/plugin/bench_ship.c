/* bench_ship.c: nsc-bench-ship RATE SECONDS [THREADS]
 *
 * Shipper throughput into a live receiver. THREADS producer threads (default
 * 1) record KernelLaunch events (start + stop) paced to RATE events/s in total
 * for SECONDS; an in-process ZeroMQ PULL receiver decodes every batch with the
 * codec. Prints events received, dropped (the plugin's own counters), the
 * achieved rate, and resident memory growth against NCCLSCOPE_BUFFER_MB.
 * A benchmark: built, not run by ctest (docs/benchmarks.md, "## Plugin").
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "../../plugin/nccl/profiler.h"
#include "wire.h"

static atomic_int stopping;
static uint64_t received;
static nsc_counters last;
static const ncclProfiler_v5_t *api;
static void *ctx;
static double rate_per_thread, seconds;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static void *receiver(void *sock)
{
    zmq_msg_t msg;
    zmq_msg_init(&msg);
    while (!atomic_load(&stopping) || zmq_msg_recv(&msg, sock, ZMQ_DONTWAIT) >= 0) {
        if (zmq_msg_size(&msg) == 0 && zmq_msg_recv(&msg, sock, 0) < 0)
            continue;
        nsc_batch b;
        if (nsc_batch_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), NULL, &b) == 0) {
            received += b.nevents;
            if (b.has_counters)
                last = b.counters;
            nsc_batch_release(&b);
        }
        zmq_msg_close(&msg);
        zmq_msg_init(&msg);
    }
    zmq_msg_close(&msg);
    return NULL;
}

/* Paced in bursts of 64 events, so pacing costs no syscall per event. */
static void *producer(void *arg)
{
    (void)arg;
    uint64_t t0 = now_ns(), total = (uint64_t)(rate_per_thread * seconds);
    double ns_per_event = 1e9 / rate_per_thread;
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileKernelLaunch};
    for (uint64_t i = 0; i < total; i++) {
        if (i % 64 == 0)
            while ((double)(now_ns() - t0) < (double)i * ns_per_event)
                ;
        void *h;
        api->startEvent(ctx, &h, &d);
        api->stopEvent(h);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s RATE SECONDS [THREADS]\n", argv[0]);
        return 2;
    }
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    rate_per_thread = atof(argv[1]) / threads;
    seconds = atof(argv[2]);
    char ep[128];
    snprintf(ep, sizeof ep, "ipc:///tmp/nsc-bench-%d.sock", (int)getpid());
    setenv("NCCLSCOPE_ENDPOINT", ep, 1);
    void *zctx = zmq_ctx_new(), *sock = zmq_socket(zctx, ZMQ_PULL);
    int timeout = 100, hwm = 1000;
    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
    if (zmq_bind(sock, ep) != 0)
        return 1;
    pthread_t rt;
    pthread_create(&rt, NULL, receiver, sock);
    long rss0 = rss_kb();
    void *dl = dlopen(NSC_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    api = dl ? dlsym(dl, "ncclProfiler_v5") : NULL;
    int mask;
    if (!api || api->init(&ctx, 1, &mask, "bench", 1, 1, 0, NULL) != 0)
        return 1;
    long rss_init = rss_kb();
    uint64_t t0 = now_ns();
    pthread_t pt[64];
    for (int i = 0; i < threads && i < 64; i++)
        pthread_create(&pt[i], NULL, producer, NULL);
    for (int i = 0; i < threads && i < 64; i++)
        pthread_join(pt[i], NULL);
    double elapsed = (double)(now_ns() - t0) * 1e-9;
    long rss_peak = rss_kb();
    api->finalize(ctx);
    dlclose(dl);
    atomic_store(&stopping, 1);
    pthread_join(rt, NULL);
    uint64_t emitted = 0, dropped = 0;
    for (int t = 0; t < NSC_T_COUNT; t++) {
        emitted += last.emitted[t];
        dropped += last.dropped[t];
    }
    const char *mb = getenv("NCCLSCOPE_BUFFER_MB");
    printf("threads %d target %.0f ev/s achieved %.0f ev/s emitted %llu received %llu "
           "dropped %llu rss_growth_mb %.1f (after init %.1f) buffer_mb %s\n",
           threads, atof(argv[1]), (double)emitted / elapsed, (unsigned long long)emitted,
           (unsigned long long)received, (unsigned long long)dropped,
           (double)(rss_peak - rss0) / 1024, (double)(rss_init - rss0) / 1024, mb ? mb : "64");
    zmq_close(sock);
    zmq_ctx_term(zctx);
    return dropped == 0 && received == emitted ? 0 : 1;
}
