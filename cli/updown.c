/* updown.c: `ncclscope up` and `ncclscope down`: a local collector and agent.
 *
 * up starts ncclscope-collector (store in <run dir>/store, its bound ports
 * written to <run dir>/collector.ports) and, once its /healthz answers,
 * ncclscope-agent (socket in the run dir, spool in <run dir>/spool,
 * forwarding to the collector's port), found next to this program, else in
 * PATH, as daemons in their own sessions with logs and pid files in the run
 * directory. Port 0 lets the kernel pick (tests). down sends SIGTERM to each process named in a pid file (after
 * checking the pid still runs that program), waits for it to exit, and
 * removes the pid file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "rundir.h"

#define DIR_CAP 400   /* run directory */
#define PATH_CAP 512  /* a file in it, or a program */

static const char *const daemons[] = {"ncclscope-collector", "ncclscope-agent"};

static void run_dir(nsc_cli_ctx *c, char *dir, size_t cap)
{
    const char *d = nsc_cli_get(c->args, "run-dir");
    if (!d)
        d = getenv("NCCLSCOPE_RUNDIR");
    if (d && *d)
        snprintf(dir, cap, "%s", d);
    else if (nsc_rundir_default(dir, cap, geteuid()) != 0)
        snprintf(dir, cap, "%s", NSC_RUNDIR_SYSTEM);
}

/* The program next to ours, else the first in PATH. */
static int find_program(const char *name, char *path, size_t cap)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(path, cap, "%.*s/%s", (int)(cap - 64), self, name);
            if (access(path, X_OK) == 0)
                return 0;
        }
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        snprintf(path, cap, "%.*s/%s", (int)len, p, name);
        if (len && access(path, X_OK) == 0)
            return 0;
        p = colon ? colon + 1 : NULL;
    }
    return -1;
}

static void pid_path(const char *dir, const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s.pid", dir, name);
}

/* The pid in name's pid file if that process still runs the program; 0 if none. */
static pid_t running(const char *dir, const char *name)
{
    char path[PATH_CAP], exe[PATH_CAP], link[64];
    pid_path(dir, name, path, sizeof path);
    FILE *f = fopen(path, "r");
    long pid = 0;
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1 || pid <= 0)
        pid = 0;
    fclose(f);
    snprintf(link, sizeof link, "/proc/%ld/exe", pid);
    ssize_t n = pid ? readlink(link, exe, sizeof exe - 1) : -1;
    if (n <= 0)
        return 0;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    return strcmp(base ? base + 1 : exe, name) == 0 ? (pid_t)pid : 0;
}

/* Start one daemon: its own session, output to DIR/NAME.log, pid file. */
static pid_t start(nsc_cli_ctx *c, const char *dir, const char *name, char *const argv[])
{
    char log[PATH_CAP], pidf[PATH_CAP];
    snprintf(log, sizeof log, "%s/%s.log", dir, name);
    pid_path(dir, name, pidf, sizeof pidf);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(c->err, sizeof c->err, "cannot start %s: %s", name, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setsid();
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && null >= 0) {
            dup2(null, 0);
            dup2(fd, 1);
            dup2(fd, 2);
            execv(argv[0], argv);
        }
        _exit(127);
    }
    FILE *f = fopen(pidf, "w");
    if (!f || fprintf(f, "%ld\n", (long)pid) < 0 || fclose(f) != 0) {
        snprintf(c->err, sizeof c->err, "cannot write %.300s: %s", pidf, strerror(errno));
        kill(pid, SIGTERM);
        return -1;
    }
    return pid;
}

/* Our child has not exited (it may not have reached exec yet). */
static int child_runs(pid_t pid) { return waitpid(pid, NULL, WNOHANG) == 0; }

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int discard(void *arg, const char *data, size_t len)
{
    (void)arg, (void)data, (void)len;
    return 0;
}

/* The collector's bound ports from its --port-file ("zmq P", "http P"
 * lines), waiting for it to appear; -1 when the collector exits or time runs out. */
static int wait_ports(nsc_cli_ctx *c, const char *dir, pid_t pid, unsigned long long secs, unsigned *zmq,
                      unsigned *http)
{
    char path[PATH_CAP], key[16];
    snprintf(path, sizeof path, "%s/collector.ports", dir);
    for (unsigned long long t = 0; t <= secs * 10; t++) {
        FILE *f = fopen(path, "r");
        unsigned port;
        *zmq = *http = 0;
        while (f && fscanf(f, "%15s %u", key, &port) == 2)
            *(strcmp(key, "zmq") == 0 ? zmq : strcmp(key, "http") == 0 ? http : &port) = port;
        if (f)
            fclose(f);
        if (*zmq && *http)
            return 0;
        if (!child_runs(pid))
            break;
        sleep_ms(100);
    }
    snprintf(c->err, sizeof c->err, "ncclscope-collector did not start; see %.300s/ncclscope-collector.log", dir);
    return -1;
}

/* Poll GET /healthz until it answers 200, the collector exits, or time runs out. */
static int wait_healthy(nsc_cli_ctx *c, const char *url_text, const char *dir, pid_t pid, unsigned long long secs)
{
    nsc_http_url url;
    if (nsc_http_parse_url(url_text, &url, c->err, sizeof c->err) != 0)
        return -1;
    nsc_http_req req = {&url, "/healthz", NULL, 1000, NULL};
    for (unsigned long long waited = 0; waited <= secs * 10; waited++) {
        int status = 0;
        char body[256], why[256];
        if (nsc_http_get(&req, &status, discard, NULL, body, sizeof body, why, sizeof why) == 0 &&
            status == 200)
            return 0;
        if (!child_runs(pid)) {
            snprintf(c->err, sizeof c->err, "ncclscope-collector exited; see %.300s/ncclscope-collector.log",
                     dir);
            return -1;
        }
        sleep_ms(100);
    }
    snprintf(c->err, sizeof c->err, "collector at %.100s not healthy after %llu s; see %.300s/ncclscope-collector.log",
             url_text, secs, dir);
    return -1;
}

/* A port option: 0 lets the kernel pick one. */
static int port_opt(nsc_cli_ctx *c, const char *name, unsigned long long *port)
{
    int rc = nsc_cli_u64_opt(c, name, port);
    if (rc == NSC_EXIT_OK && *port > 65535) {
        snprintf(c->err, sizeof c->err, "--%s wants 0..65535 (0: any free port)", name);
        rc = NSC_EXIT_USAGE;
    }
    return rc;
}

int nsc_verb_up(nsc_cli_ctx *c)
{
    char dir[DIR_CAP], prog[2][PATH_CAP], store[PATH_CAP], ports[PATH_CAP], spool[PATH_CAP];
    char listen[64], http[64], url[96], endpoint[64], agent_http[64];
    unsigned long long port = 7761, zmq_port = 7760, agent_port = 7762, wait = 10;
    unsigned zmq_bound, http_bound;
    int rc = port_opt(c, "port", &port);
    if (rc || (rc = port_opt(c, "zmq-port", &zmq_port)) || (rc = port_opt(c, "agent-port", &agent_port)) ||
        (rc = nsc_cli_u64_opt(c, "wait", &wait)))
        return rc;
    run_dir(c, dir, sizeof dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
        snprintf(c->err, sizeof c->err, "cannot create %.300s: %s", dir, strerror(errno));
        return NSC_EXIT_FAIL;
    }
    for (int i = 0; i < 2; i++) {
        if (running(dir, daemons[i])) {
            snprintf(c->err, sizeof c->err, "%s already runs (pid file in %.300s); ncclscope down first",
                     daemons[i], dir);
            return NSC_EXIT_FAIL;
        }
        if (find_program(daemons[i], prog[i], sizeof prog[i]) != 0) {
            snprintf(c->err, sizeof c->err, "%s not found next to ncclscope or in PATH", daemons[i]);
            return NSC_EXIT_FAIL;
        }
    }
    snprintf(store, sizeof store, "%s/store", dir);
    snprintf(spool, sizeof spool, "%s/spool", dir);
    snprintf(ports, sizeof ports, "%s/collector.ports", dir);
    snprintf(listen, sizeof listen, "tcp://127.0.0.1:%llu", zmq_port);
    snprintf(http, sizeof http, "127.0.0.1:%llu", port);
    snprintf(agent_http, sizeof agent_http, "127.0.0.1:%llu", agent_port);
    unlink(ports);
    char *collector_argv[] = {prog[0], "--db", store, "--listen", listen, "--http", http,
                              "--port-file", ports, NULL};
    pid_t collector = start(c, dir, daemons[0], collector_argv);
    if (collector < 0 || wait_ports(c, dir, collector, wait, &zmq_bound, &http_bound) != 0)
        return NSC_EXIT_FAIL;
    snprintf(url, sizeof url, "http://127.0.0.1:%u", http_bound);
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%u", zmq_bound);
    char *agent_argv[] = {prog[1], "--rundir", dir, "--spool", spool, "--collector", endpoint,
                          "--http", agent_http, NULL};
    pid_t agent = -1;
    if (wait_healthy(c, url, dir, collector, wait) != 0 || (agent = start(c, dir, daemons[1], agent_argv)) < 0)
        return NSC_EXIT_FAIL;
    printf("collector %s (pid %ld, agents connect to %s), agent (pid %ld), run dir %s\n"
           "plugins: NCCL_PROFILER_PLUGIN=ncclscope NCCLSCOPE_RUNDIR=%s\n"
           "query:   NCCLSCOPE_COLLECTOR=%s ncclscope status\n",
           url, (long)collector, endpoint, (long)agent, dir, dir, url);
    return NSC_EXIT_OK;
}

int nsc_verb_down(nsc_cli_ctx *c)
{
    char dir[DIR_CAP], pidf[PATH_CAP];
    unsigned long long wait = 10;
    int rc = nsc_cli_u64_opt(c, "wait", &wait);
    if (rc)
        return rc;
    run_dir(c, dir, sizeof dir);
    int stopped = 0;
    rc = NSC_EXIT_OK;
    for (int i = 1; i >= 0; i--) {  /* the agent first, so it can hand its spool over */
        pid_path(dir, daemons[i], pidf, sizeof pidf);
        pid_t pid = running(dir, daemons[i]);
        if (pid && kill(pid, SIGTERM) == 0) {
            unsigned long long t = 0;
            while (kill(pid, 0) == 0 && t++ < wait * 10) {
                waitpid(pid, NULL, WNOHANG);
                sleep_ms(100);
            }
            if (kill(pid, 0) == 0) {
                snprintf(c->err, sizeof c->err, "%s (pid %ld) still runs %llu s after SIGTERM", daemons[i],
                         (long)pid, wait);
                rc = NSC_EXIT_FAIL;
                continue;
            }
            printf("stopped %s (pid %ld)\n", daemons[i], (long)pid);
            stopped++;
        }
        unlink(pidf);
    }
    if (rc == NSC_EXIT_OK && stopped == 0)
        printf("nothing running in %s\n", dir);
    return rc;
}
