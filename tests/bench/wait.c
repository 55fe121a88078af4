/* wait.c: nsc-bench-wait, waits until Prometheus metrics reach given values.
 *
 *   nsc-bench-wait [--every-ms N] [--timeout-s S] [--rss PID:FILE]
 *                  http://HOST:PORT/PATH NAME=VALUE... [http://... NAME=VALUE...]...
 *
 * Polls every endpoint every N ms (default 2) until each named metric of it
 * equals its value, then prints the wall-clock time it saw that (seconds, as
 * `date +%s.%N` would) and exits 0; exit 1 with the last values on timeout
 * (default 120 s), 2 on bad arguments. With --rss it also writes PID's
 * resident and anonymous KiB (/proc/PID/smaps_rollup) to FILE every 20 ms.
 *
 * Benchmarks wait with it instead of a shell loop of curl: on a 2-core
 * machine a curl process every 10 ms costs a third of a core, which the
 * pipeline being measured then lacks. One poll here is one loopback
 * connection, a few tens of microseconds.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONDS 16

typedef struct cond {
    const char *url;  /* http://HOST:PORT/PATH */
    char name[128];
    char want[32];
    char got[32];
} cond;

static double now_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* GET url into buf (NUL-terminated body and headers); 0 or -1. */
static int http_get(const char *url, char *buf, size_t cap)
{
    char host[64], path[256] = "/";
    unsigned port;
    if (sscanf(url, "http://%63[^:]:%u%255s", host, &port, path) < 2)
        return -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    int ok = inet_pton(AF_INET, host, &sa.sin_addr) == 1 &&
             connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0;
    char req[384];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", path, host);
    ok = ok && write(fd, req, (size_t)n) == n;
    size_t len = 0;
    ssize_t r = 0;
    while (ok && len + 1 < cap && (r = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    close(fd);
    buf[len] = 0;
    return ok && r >= 0 ? 0 : -1;
}

/* Copy the value of metric name (a line "name value") into out. */
static void metric_value(const char *text, const char *name, char out[32])
{
    size_t n = strlen(name);
    snprintf(out, 32, "-");
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, name, n) == 0 && p[n] == ' ') {
            sscanf(p + n + 1, "%31s", out);
            return;
        }
}

/* Poll every condition's endpoint once (each endpoint once); 1 when all hold. */
static int all_hold(cond *c, int nc)
{
    static char body[1 << 20];
    int held = 1;
    for (int i = 0; i < nc; i++) {
        if (i == 0 || c[i].url != c[i - 1].url)
            if (http_get(c[i].url, body, sizeof body))
                body[0] = 0;
        metric_value(body, c[i].name, c[i].got);
        held &= strcmp(c[i].got, c[i].want) == 0;
    }
    return held;
}

static void sample_rss(int pid, FILE *out)
{
    char path[64], line[256];
    long rss = -1, anon = -1;
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "Rss: %ld", &rss);
        sscanf(line, "Anonymous: %ld", &anon);
    }
    fclose(f);
    if (rss >= 0)
        fprintf(out, "%ld %ld\n", rss, anon);
}

static int usage(void)
{
    fprintf(stderr, "usage: nsc-bench-wait [--every-ms N] [--timeout-s S] [--rss PID:FILE] "
                    "http://HOST:PORT/PATH NAME=VALUE... [http://... NAME=VALUE...]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    cond c[MAX_CONDS];
    int nc = 0, every_ms = 2, rss_pid = 0;
    double timeout = 120;
    const char *url = NULL, *rss_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *eq = strchr(a, '=');
        char *end = NULL;
        if (i + 1 < argc && strcmp(a, "--every-ms") == 0) {
            every_ms = atoi(argv[++i]);
        } else if (i + 1 < argc && strcmp(a, "--timeout-s") == 0) {
            timeout = atof(argv[++i]);
        } else if (i + 1 < argc && strcmp(a, "--rss") == 0) {
            rss_pid = (int)strtol(argv[++i], &end, 10);
            if (rss_pid <= 0 || *end != ':' || !end[1])
                return usage();
            rss_file = end + 1;
        } else if (strncmp(a, "http://", 7) == 0) {
            url = a;
        } else if (url && eq && nc < MAX_CONDS && eq - a < 128 && strlen(eq + 1) < 32) {
            c[nc].url = url;
            snprintf(c[nc].name, sizeof c[nc].name, "%.*s", (int)(eq - a), a);
            snprintf(c[nc].want, sizeof c[nc].want, "%s", eq + 1);
            nc++;
        } else {
            return usage();
        }
    }
    if (nc == 0 || every_ms <= 0 || timeout <= 0)
        return usage();
    FILE *rss = rss_pid ? fopen(rss_file, "w") : NULL;
    if (rss_pid && !rss) {
        fprintf(stderr, "nsc-bench-wait: %s: %s\n", rss_file, strerror(errno));
        return 2;
    }
    double t0 = now_s(CLOCK_MONOTONIC), next_rss = t0;
    int held;
    while (!(held = all_hold(c, nc)) && now_s(CLOCK_MONOTONIC) - t0 < timeout) {
        if (rss && now_s(CLOCK_MONOTONIC) >= next_rss) {
            sample_rss(rss_pid, rss);
            next_rss += 0.02;
        }
        nanosleep(&(struct timespec){0, every_ms * 1000000L}, NULL);
    }
    double done = now_s(CLOCK_REALTIME);
    if (rss)
        fclose(rss);
    if (!held) {
        for (int i = 0; i < nc; i++)
            fprintf(stderr, "nsc-bench-wait: %s %s = %s, want %s\n", c[i].url, c[i].name, c[i].got,
                    c[i].want);
        return 1;
    }
    printf("%.6f\n", done);
    return 0;
}
