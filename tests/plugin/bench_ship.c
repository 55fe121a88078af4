/* bench_ship.c: nsc-bench-ship [--plugin SO] [--agent BIN [--pause-agent MS]]
 *                              RATE SECONDS [THREADS]
 *
 * Shipper throughput into a live receiver. THREADS producer threads (default
 * 1) record KernelLaunch events (start + stop) paced to RATE events/s in total
 * for SECONDS. The receiver is either an in-process ZeroMQ PULL socket that
 * decodes every batch with the codec (default: it also reads the plugin's
 * drop counters from the stream), or with --agent a real ncclscope-agent
 * started on a temporary rundir and spool, whose /metrics events_in_total is
 * compared with the events the producers recorded. Prints events received,
 * dropped, events per message, the achieved rate, and resident memory growth
 * against NCCLSCOPE_BUFFER_MB. --plugin loads another build of the plugin (a baseline).
 * --pause-agent MS stops the agent (SIGSTOP) once, for MS ms, a second into
 * the run: an agent descheduled that long on purpose, so that what is measured
 * is the buffers' time depth rather than the machine's load. The plugin warns
 * on stderr about batches its final flush could not deliver.
 * A benchmark: built, not run by ctest (docs/benchmarks.md, "## Plugin").
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include "../../plugin/nccl/profiler.h"
#include "mono.h"
#include "wire.h"

static atomic_int stopping;
static uint64_t received, messages;
static nsc_counters last;
static const ncclProfiler_v5_t *api;
static void *ctx;
static double rate_per_thread, seconds;
static _Atomic uint64_t recorded;
static pid_t agent = -1;
static long pause_ms;

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
            messages++;
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

/* CPU seconds (user + system) of /proc/PATH/stat: a process or a thread. */
static double cpu_s(const char *path)
{
    char buf[1024];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                     &st) != 2)
        return 0;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

/* CPU seconds of this process's thread named name (the plugin's shipper). */
static double thread_cpu_s(const char *name)
{
    char path[300], comm[32];
    double cpu = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        int ok = f && fgets(comm, sizeof comm, f);
        if (f)
            fclose(f);
        if (ok && strncmp(comm, name, strlen(name)) == 0) {
            snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
            cpu = cpu_s(path);
        }
    }
    if (d)
        closedir(d);
    return cpu;
}

/* Paced in bursts of 64 events, so pacing costs no syscall per event. */
static void *producer(void *arg)
{
    (void)arg;
    uint64_t t0 = nsc_mono_ns(), total = (uint64_t)(rate_per_thread * seconds);
    double ns_per_event = 1e9 / rate_per_thread;
    ncclProfilerEventDescr_v5_t d = {.type = ncclProfileKernelLaunch};
    for (uint64_t i = 0; i < total; i++) {
        if (i % 64 == 0)
            while ((double)(nsc_mono_ns() - t0) < (double)i * ns_per_event)
                ;
        void *h;
        api->startEvent(ctx, &h, &d);
        api->stopEvent(h);
    }
    atomic_fetch_add(&recorded, total);
    return NULL;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* Stop the agent once, for pause_ms, a second into the run. */
static void *pauser(void *arg)
{
    (void)arg;
    sleep_ms(1000);
    kill(agent, SIGSTOP);
    sleep_ms(pause_ms);
    kill(agent, SIGCONT);
    return NULL;
}

/* ---- the real agent ------------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

/* Start BIN on a fresh rundir; the plugin finds it through NCCLSCOPE_RUNDIR.
 * Returns its pid once it serves HTTP (ADDR:PORT in http), or -1. */
static pid_t agent_start(const char *bin, char *dir, char *http, size_t httplen)
{
    if (!mkdtemp(dir))
        return -1;
    pid_t pid = fork();
    if (pid == 0) {
        execl(bin, bin, "--rundir", dir, "--http", "127.0.0.1:0", (char *)NULL);
        _exit(127);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/agent.http", dir);
    for (int i = 0; pid > 0 && i < 500; i++) {
        FILE *f = fopen(path, "r");
        int ok = f && fgets(http, (int)httplen, f);
        if (f)
            fclose(f);
        if (ok) {
            http[strcspn(http, "\r\n")] = '\0';
            setenv("NCCLSCOPE_RUNDIR", dir, 1);
            unsetenv("NCCLSCOPE_ENDPOINT");
            return pid;
        }
        usleep(10000);
    }
    return -1;
}

/* The agent's metric NAME (a counter) from GET /metrics, or -1. */
static long long agent_metric(const char *http, const char *name)
{
    char host[64];
    int port;
    if (sscanf(http, "%63[^:]:%d", host, &port) != 2)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || inet_pton(AF_INET, host, &sa.sin_addr) != 1 ||
        connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    static const char req[] = "GET /metrics HTTP/1.0\r\n\r\n";
    static char resp[1 << 16];
    size_t len = 0;
    ssize_t n = write(fd, req, sizeof req - 1);
    while (n > 0 && len < sizeof resp - 1 && (n = read(fd, resp + len, sizeof resp - 1 - len)) > 0)
        len += (size_t)n;
    close(fd);
    resp[len] = '\0';
    char key[96];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *m = strstr(resp, key);
    return m ? atoll(m + strlen(key)) : -1;
}

/* What the agent received, once it stopped growing (or reached want). */
static uint64_t agent_settle(const char *http, uint64_t want)
{
    long long last = -1;
    for (int still = 0, i = 0; i < 200 && still < 5; i++) {
        long long got = agent_metric(http, "ncclscope_agent_events_in_total");
        still = got == last ? still + 1 : 0;
        last = got;
        if (got >= 0 && (uint64_t)got >= want)
            break;
        usleep(100000);
    }
    return last > 0 ? (uint64_t)last : 0;
}

static void agent_stop(pid_t pid, const char *dir)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--plugin SO] [--agent AGENT_BIN [--pause-agent MS]] RATE SECONDS [THREADS]\n",
            prog);
    return 2;
}

int main(int argc, char **argv)
{
    const char *plugin = NSC_PLUGIN_PATH, *agent_bin = NULL;
    int a = 1;
    for (; a + 1 < argc && strncmp(argv[a], "--", 2) == 0; a += 2) {
        if (strcmp(argv[a], "--plugin") == 0)
            plugin = argv[a + 1];
        else if (strcmp(argv[a], "--agent") == 0)
            agent_bin = argv[a + 1];
        else if (strcmp(argv[a], "--pause-agent") == 0)
            pause_ms = atol(argv[a + 1]);
        else
            return usage(argv[0]);
    }
    if (argc - a < 2)
        return usage(argv[0]);
    int threads = argc - a > 2 ? atoi(argv[a + 2]) : 1;
    if (threads < 1 || threads > 64 || pause_ms < 0 || pause_ms > 60000 || (pause_ms && !agent_bin))
        return usage(argv[0]);
    rate_per_thread = atof(argv[a]) / threads;
    seconds = atof(argv[a + 1]);
    char dir[] = "/tmp/nsc-bench-agent-XXXXXX", http[128] = "";
    void *zctx = NULL, *sock = NULL;
    pthread_t rt, pt_pause;
    if (agent_bin) {
        agent = agent_start(agent_bin, dir, http, sizeof http);
        if (agent < 0) {
            fprintf(stderr, "%s: agent %s did not start\n", argv[0], agent_bin);
            return 1;
        }
    } else {
        char ep[128];
        snprintf(ep, sizeof ep, "ipc:///tmp/nsc-bench-%d.sock", (int)getpid());
        setenv("NCCLSCOPE_ENDPOINT", ep, 1);
        zctx = zmq_ctx_new();
        sock = zmq_socket(zctx, ZMQ_PULL);
        int timeout = 100, hwm = 1000;
        zmq_setsockopt(sock, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
        zmq_setsockopt(sock, ZMQ_RCVHWM, &hwm, sizeof hwm);
        if (zmq_bind(sock, ep) != 0)
            return 1;
        pthread_create(&rt, NULL, receiver, sock);
    }
    long rss0 = rss_kb();
    void *dl = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
    api = dl ? dlsym(dl, "ncclProfiler_v5") : NULL;
    int mask;
    if (!api || api->init(&ctx, 1, &mask, "bench", 1, 1, 0, NULL) != 0) {
        fprintf(stderr, "%s: cannot load %s\n", argv[0], plugin);
        return 1;
    }
    long rss_init = rss_kb();
    uint64_t t0 = nsc_mono_ns();
    pthread_t pt[64];
    if (pause_ms)
        pthread_create(&pt_pause, NULL, pauser, NULL);
    for (int i = 0; i < threads; i++)
        pthread_create(&pt[i], NULL, producer, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(pt[i], NULL);
    if (pause_ms)
        pthread_join(pt_pause, NULL);
    double elapsed = (double)(nsc_mono_ns() - t0) * 1e-9;
    long rss_peak = rss_kb();
    double ship_cpu = thread_cpu_s("ncclscope-ship");
    api->finalize(ctx);
    dlclose(dl);
    uint64_t emitted = 0, dropped = 0;
    double agent_cpu = 0;
    if (agent_bin) {
        emitted = atomic_load(&recorded);
        received = agent_settle(http, emitted);
        long long m = agent_metric(http, "ncclscope_agent_messages_in_total");
        messages = m > 0 ? (uint64_t)m : 0;
        dropped = emitted - received;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)agent);
        agent_cpu = cpu_s(path);
        agent_stop(agent, dir);
    } else {
        atomic_store(&stopping, 1);
        pthread_join(rt, NULL);
        for (int t = 0; t < NSC_T_COUNT; t++) {
            emitted += last.emitted[t];
            dropped += last.dropped[t];
        }
        zmq_close(sock);
        zmq_ctx_term(zctx);
    }
    const char *mb = getenv("NCCLSCOPE_BUFFER_MB");
    printf("%s threads %d target %.0f ev/s achieved %.0f ev/s emitted %llu received %llu "
           "dropped %llu rss_growth_mb %.1f (after init %.1f) buffer_mb %s cpu_ns_per_event "
           "shipper %.0f agent %.0f events_per_message %.0f\n",
           agent_bin ? "agent" : "in-process", threads, atof(argv[a]),
           (double)emitted / elapsed, (unsigned long long)emitted,
           (unsigned long long)received, (unsigned long long)dropped,
           (double)(rss_peak - rss0) / 1024, (double)(rss_init - rss0) / 1024, mb ? mb : "64",
           ship_cpu * 1e9 / (double)(emitted ? emitted : 1),
           agent_cpu * 1e9 / (double)(emitted ? emitted : 1),
           (double)received / (double)(messages ? messages : 1));
    return dropped == 0 && received == emitted ? 0 : 1;
}
