/* main.c: ncclscope-agent: start-up, the loop, timers and clean shutdown.
 *
 * One thread: wait up to 10 ms for the ipc socket, take a bounded burst of
 * messages, serve HTTP without blocking, then run what is due: the PXN
 * resolver's retries, liveness checks, reaping, and spool flushes. SIGTERM
 * and SIGINT end the loop; what is still queued on the socket is taken, held
 * foreign events are given up (flagged), everything goes to the spool, exit 0.
 */
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "agent.h"
#include "http.h"
#include "ingest.h"

#define MS 1000000ull
#define TICK_NS (50 * MS)
#define CHECK_NS (200 * MS)
#define SHUTDOWN_BURSTS 1000

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

uint64_t nsc_agent_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_death(void *arg, nsc_reg_proc *p)
{
    nsc_agent *a = arg;
    if (nsc_out_life(a->out, p, NSC_A2C_DIED, p->death_ns) != 0)
        a->in.nomem++;
}

typedef struct timers {
    uint64_t tick, check, flush;
} timers;

static void flush(nsc_agent *a, uint64_t now)
{
    if (nsc_out_flush(a->out, now) < 0)
        a->in.nomem++;
}

static void run_due(nsc_agent *a, timers *t, uint64_t now)
{
    if (now - t->tick >= TICK_NS) {
        t->tick = now;
        nsc_pxn_tick(a->pxn, now);
    }
    if (now - t->check >= CHECK_NS) {
        t->check = now;
        nsc_reg_check(a->reg, now, a->cfg.heartbeat_timeout_ms * MS, on_death, a);
        nsc_reg_reap(a->reg, now, a->cfg.linger_ms * MS);
    }
    size_t waiting = nsc_out_waiting(a->out);
    if (waiting >= a->cfg.flush_kb * 1024 || (waiting && now - t->flush >= a->cfg.flush_ms * MS)) {
        t->flush = now;
        flush(a, now);
    }
}

static int setup(nsc_agent *a)
{
    char err[256];
    nsc_pxn_cfg pc = {.window_ns = a->cfg.pxn_window_ms * MS, .hold_ns = a->cfg.pxn_hold_ms * MS,
                      .recent_cap = (uint32_t)a->cfg.pxn_recent, .pending_cap = (uint32_t)a->cfg.pxn_pending};
    nsc_pxn_sink sink = nsc_ingest_pxn_sink(a);
    a->start_ns = nsc_agent_now();
    if (mkdir(a->cfg.rundir, 0755) != 0 && errno != EEXIST) {
        snprintf(err, sizeof err, "rundir %.200s: %s", a->cfg.rundir, strerror(errno));
        goto fail;
    }
    if (nsc_spool_open(&a->spool, a->cfg.spool, a->cfg.spool_max_mb << 20, err) != 0)
        goto fail;
    if (!(a->reg = nsc_reg_new()) || !(a->pxn = nsc_pxn_new(&pc, &sink)) ||
        !(a->out = nsc_out_new(a->cfg.agent_id, a->cfg.host, a->spool))) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (nsc_ingest_open(a, err) != 0 || nsc_http_start(a, err) != 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "ncclscope-agent: %s\n", err);
    return -1;
}

static void teardown(nsc_agent *a)
{
    nsc_http_stop(a);
    nsc_ingest_close(a);
    nsc_out_free(a->out);
    nsc_pxn_free(a->pxn);
    nsc_reg_free(a->reg);
    nsc_spool_close(a->spool);
}

static void loop(nsc_agent *a)
{
    timers t = {0};
    t.tick = t.check = t.flush = nsc_agent_now();
    while (!stop_requested) {
        zmq_pollitem_t it = {a->pull, 0, ZMQ_POLLIN, 0};
        zmq_poll(&it, 1, 10);
        nsc_ingest_drain(a, (unsigned)a->cfg.burst);
        if (a->base)
            event_base_loop(a->base, EVLOOP_NONBLOCK);
        run_due(a, &t, nsc_agent_now());
    }
    /* Take what is already queued, then give up on held foreign events. */
    for (int i = 0; i < SHUTDOWN_BURSTS && nsc_ingest_drain(a, (unsigned)a->cfg.burst) > 0; i++)
        ;
    nsc_pxn_drain(a->pxn);
    flush(a, nsc_agent_now());
}

int main(int argc, char **argv)
{
    nsc_agent a;
    memset(&a, 0, sizeof a);
    int rc = nsc_agent_cfg_load(&a.cfg, argc, argv, stderr);
    if (rc != 0)
        return rc > 0 ? 0 : 2;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (setup(&a) != 0) {
        teardown(&a);
        return 1;
    }
    fprintf(stderr, "ncclscope-agent: %s listening on ipc://%s/agent.sock, spool %s\n", a.cfg.agent_id,
            a.cfg.rundir, a.cfg.spool);
    loop(&a);
    teardown(&a);
    return 0;
}
