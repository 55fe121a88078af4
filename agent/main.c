/* main.c: ncclscope-agent: start-up, the loop, timers and clean shutdown.
 *
 * One thread: wait up to 10 ms for the ipc socket or the collector, take a
 * bounded burst of messages, serve HTTP without blocking, then run what is
 * due: the PXN resolver's retries, liveness checks, reaping (and, linger_ms
 * after the start, the marks and candidates of streams and processes not
 * heard since), spool flushes,
 * and the forwarder (acks, sends within the credit, probes; a dns+tcp://
 * collector's addresses come from the resolver's thread). SIGTERM and
 * SIGINT end the loop; what is still queued on the socket is taken, held
 * foreign events are given up (flagged), everything goes to the spool, the
 * forwarder gets up to drain_ms to have it acknowledged, exit 0.
 * `--gen-keys PREFIX` writes a CURVE keypair and exits.
 */
#include <errno.h>
#include <event2/event.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <zmq.h>

#include "agent.h"
#include "acks.h"
#include "held.h"
#include "lsave.h"
#include "http.h"
#include "ingest.h"
#include "rundir.h"

#define MS 1000000ull
#define TICK_NS (50 * MS)
#define CHECK_NS (200 * MS)
#define SHUTDOWN_BURSTS 1000
#define DETAIL_CHUNK (256u << 10)  /* about this many bytes of raw sections per fetch chunk */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
    (void)sig;
    stop_requested = 1;
}

static void on_death(void *arg, nsc_reg_proc *p)
{
    nsc_agent *a = arg;
    if (nsc_out_life(a->out, p, NSC_A2C_DIED, p->death_ns) != 0)
        a->in.nomem++;
}

/* A process that exited sends no more batches: its stream's mark goes. One
 * only silent may come back and resend: its mark stays. */
static void on_reap(void *arg, nsc_reg_proc *p)
{
    nsc_agent *a = arg;
    if (p->stream && p->reason == NSC_A2C_REASON_EXITED)
        nsc_spool_stream_forget(a->spool, p->stream);
    nsc_lbuild_forget(a->lb, p);
}

typedef struct timers {
    uint64_t tick, check, flush;
    int unheard_due;  /* the start's unheard streams are still to be forgotten */
} timers;

static void run_due(nsc_agent *a, timers *t, uint64_t now)
{
    if (now - t->tick >= TICK_NS) {
        t->tick = now;
        nsc_pxn_tick(a->pxn, now);
        nsc_lbuild_tick(a->lb, a->reg, now);
    }
    if (now - t->check >= CHECK_NS) {
        t->check = now;
        nsc_reg_check(a->reg, now, a->cfg.heartbeat_timeout_ms * MS, on_death, a);
        nsc_reg_reap(a->reg, now, a->cfg.linger_ms * MS, on_reap, a);
        if (t->unheard_due && now - a->start_ns >= a->cfg.linger_ms * MS) {
            t->unheard_due = 0;
            nsc_acks_unheard_forget(a);
            nsc_held_forget(a);
            nsc_lsave_forget(a);
        }
    }
    size_t waiting = nsc_out_waiting(a->out);
    if (waiting >= a->cfg.flush_kb * 1024 || (waiting && now - t->flush >= a->cfg.flush_ms * MS)) {
        t->flush = now;
        nsc_ingest_flush(a, now);
    }
}

/* The forwarder's collector died: its name may have other addresses now. */
static void resolve_again(void *arg)
{
    nsc_resolver_kick(arg);
}

/* With a dns+tcp:// collector: its resolver thread. */
static int start_resolver(nsc_agent *a, char err[256])
{
    if (nsc_endpoints_parse(a->cfg.collector, &a->res_list, err) != 0)
        return -1;
    if (!a->res_list.dns_name[0])
        return 0;
    a->res = nsc_resolver_new(&a->res_list, a->cfg.dns_refresh_ms * MS, stderr, err);
    return a->res ? 0 : -1;
}

static int start_forward(nsc_agent *a, char err[256])
{
    if (!a->cfg.collector[0])
        return 0;
    if (start_resolver(a, err) != 0)
        return -1;
    int curve = a->cfg.collector_key[0] != 0;
    if (curve && (nsc_curve_load_public(a->cfg.collector_key, a->collector_pub, err) != 0 ||
                  nsc_curve_load_secret(a->cfg.curve_key, &a->curve, err) != 0))
        return -1;
    nsc_fwd_cfg fc = {.endpoint = a->cfg.collector, .agent_id = a->cfg.agent_id, .host = a->cfg.host,
                      .server_key = curve ? a->collector_pub : NULL, .client = curve ? &a->curve : NULL,
                      .window = (uint32_t)a->cfg.window, .max_inflight = (uint32_t)a->cfg.max_inflight,
                      .max_inflight_bytes = a->cfg.max_inflight_mb << 20,
                      .ack_timeout_ns = a->cfg.ack_timeout_ms * MS, .probe_ns = a->cfg.probe_ms * MS,
                      .probe_spin_ns = a->cfg.probe_spin_us * 1000,
                      .reconnect_ms = (int)a->cfg.reconnect_ms, .reconnect_max_ms = (int)a->cfg.reconnect_max_ms,
                      .failover_ns = a->cfg.failover_ms * MS, .log = stderr, .now = nsc_mono_ns,
                      .lost = a->res ? resolve_again : NULL, .lost_arg = a->res, .fetch = a->fetch};
    a->fwd = nsc_fwd_new(&fc, a->spool, err);
    return a->fwd ? 0 : -1;
}

/* The directory at path, made with mode where it is missing, must be this
 * user's alone: the agent (often root) writes files there that a link
 * planted by another user would redirect. */
static int private_dir(const char *what, const char *path, mode_t mode, char *err, size_t cap)
{
    char why[400];
    if (mkdir(path, mode) != 0 && errno != EEXIST) {
        snprintf(err, cap, "%s %.200s: %s", what, path, strerror(errno));
        return -1;
    }
    if (nsc_rundir_private(path, geteuid(), why, sizeof why) != 0) {
        snprintf(err, cap, "refusing %s %.400s", what, why);
        return -1;
    }
    return 0;
}

/* detail = on-demand: the ring in <spool>/detail, which the out batch
 * feeds; either way the fetch answers (with nothing held without a ring). */
static int open_detail(nsc_agent *a, char err[512])
{
    char dir[PATH_MAX + 8], why[128];
    if (a->cfg.on_demand) {
        snprintf(dir, sizeof dir, "%s/detail", a->cfg.spool);
        if (nsc_ring_open(&a->ring, dir, a->cfg.detail_ring_mb << 20, a->cfg.detail_ring_s * 1000 * MS, why) != 0) {
            snprintf(err, 512, "%s", why);
            return -1;
        }
    }
    a->fetch = nsc_fetch_new(a->ring, a->cfg.agent_id, a->cfg.host, nsc_spool_epoch(a->spool), DETAIL_CHUNK);
    if (!a->fetch) {
        snprintf(err, 512, "out of memory");
        return -1;
    }
    return 0;
}

static int setup(nsc_agent *a)
{
    char err[512];
    nsc_pxn_cfg pc = {.window_ns = a->cfg.pxn_window_ms * MS, .hold_ns = a->cfg.pxn_hold_ms * MS,
                      .recent_cap = (uint32_t)a->cfg.pxn_recent, .pending_cap = (uint32_t)a->cfg.pxn_pending};
    nsc_pxn_sink sink = nsc_ingest_pxn_sink(a);
    a->start_ns = nsc_mono_ns();
    if (private_dir("rundir", a->cfg.rundir, 0755, err, sizeof err) != 0 ||
        private_dir("spool", a->cfg.spool, 0750, err, sizeof err) != 0)
        goto fail;
    if (nsc_spool_open(&a->spool, a->cfg.spool, a->cfg.spool_max_mb << 20, err) != 0 || open_detail(a, err) != 0)
        goto fail;
    if (!(a->reg = nsc_reg_new()) || !(a->pxn = nsc_pxn_new(&pc, &sink)) ||
        !(a->out = nsc_out_new(a->cfg.agent_id, a->cfg.host, a->spool, nsc_acks_stored, a)) ||
        !(a->lb = nsc_ingest_lbuild_new(a))) {
        snprintf(err, sizeof err, "out of memory");
        goto fail;
    }
    if (a->ring)
        nsc_out_set_ring(a->out, a->ring, nsc_mono_ns());
    /* What a killed predecessor held: taken back before anything new comes. */
    if (nsc_ingest_open(a, err) != 0 || nsc_lsave_load(a, err) != 0 || nsc_held_load(a, nsc_ingest_flush, err) != 0 ||
        nsc_acks_unheard_load(a, err) != 0 ||
        start_forward(a, err) != 0 || nsc_http_start(a, err) != 0)
        goto fail;
    return 0;
fail:
    fprintf(stderr, "ncclscope-agent: %s\n", err);
    return -1;
}

static void teardown(nsc_agent *a)
{
    nsc_http_stop(a);
    nsc_resolver_free(a->res);
    nsc_fwd_free(a->fwd);
    nsc_ingest_close(a);
    nsc_lbuild_free(a->lb);
    nsc_out_free(a->out);
    nsc_held_forget(a);
    nsc_lsave_free(a);
    nsc_pxn_free(a->pxn);
    nsc_reg_free(a->reg);
    nsc_fetch_free(a->fetch);
    nsc_ring_close(a->ring);
    nsc_spool_close(a->spool);
}

/* Wait up to ms for the ipc socket (when listen) or the collector. With ms
 * 0 (an answer is due) and nothing there, the CPU is yielded: awake, but the
 * threads that carry the answer (ZeroMQ's I/O threads, a collector on this
 * machine) may need it. */
static void wait_input(nsc_agent *a, int listen, long ms)
{
    zmq_pollitem_t it[4] = {{a->pull, 0, listen ? ZMQ_POLLIN : 0, 0}};
    int n = 1;
    if (a->fwd) {
        it[n++] = (zmq_pollitem_t){nsc_fwd_socket(a->fwd), 0, ZMQ_POLLIN, 0};
        it[n++] = (zmq_pollitem_t){nsc_fwd_monitor(a->fwd), 0, ZMQ_POLLIN, 0};
        if (nsc_fwd_udp_fd(a->fwd) >= 0)
            it[n++] = (zmq_pollitem_t){NULL, nsc_fwd_udp_fd(a->fwd), ZMQ_POLLIN, 0};
    }
    if (zmq_poll(it, n, ms) == 0 && ms == 0)
        sched_yield();
}

/* The forwarder gets a name's addresses when they change. */
static void run_forward(nsc_agent *a, uint64_t now)
{
    if (a->res && nsc_resolver_take(a->res, &a->res_gen, &a->res_list))
        nsc_fwd_set_endpoints(a->fwd, &a->res_list, now);
    nsc_fwd_run(a->fwd, now);
}

/* After the last flush: give the collector drain_ms to acknowledge the spool
 * (what is left stays spooled for the next start). */
static void drain_forward(nsc_agent *a)
{
    uint64_t end = nsc_mono_ns() + a->cfg.drain_ms * MS;
    nsc_spool_stats sp;
    nsc_fwd_stats fs;
    for (;;) {
        run_forward(a, nsc_mono_ns());
        nsc_spool_stats_get(a->spool, &sp);
        nsc_fwd_stats_get(a->fwd, &fs);
        if (sp.entries == 0 || !fs.connected || nsc_mono_ns() >= end)
            return;
        wait_input(a, 0, 10);
    }
}

static void loop(nsc_agent *a)
{
    timers t = {.unheard_due = 1};
    t.tick = t.check = t.flush = nsc_mono_ns();
    nsc_hstall_open(&a->stall);
    while (!stop_requested) {
        wait_input(a, 1, a->fwd && nsc_fwd_awaits_answer(a->fwd, nsc_mono_ns()) ? 0 : 10);
        nsc_hstall_mark m = nsc_hstall_begin(&a->stall);  /* a turn's work delays /healthz */
        if (a->fwd)
            nsc_fwd_input(a->fwd, nsc_mono_ns());
        nsc_ingest_drain(a, (unsigned)a->cfg.burst);
        if (a->base)
            event_base_loop(a->base, EVLOOP_NONBLOCK);
        uint64_t now = nsc_mono_ns();
        run_due(a, &t, now);
        if (a->fwd)
            run_forward(a, now);
        nsc_hstall_stretch(&a->stall, m);
        nsc_hstall_turn(&a->stall, m);
    }
    nsc_hstall_close(&a->stall);
    /* Take what is already queued, then give up on held foreign events. */
    for (int i = 0; i < SHUTDOWN_BURSTS && nsc_ingest_drain(a, (unsigned)a->cfg.burst) > 0; i++)
        ;
    nsc_pxn_drain(a->pxn);
    nsc_lbuild_finish(a->lb, a->reg);
    nsc_ingest_flush(a, nsc_mono_ns());
    if (a->fwd)
        drain_forward(a);
}

/* ncclscope-agent --gen-keys PREFIX */
static int gen_keys(const char *prefix)
{
    nsc_curve_pair kp;
    char err[NSC_CURVE_ERR_MAX];
    if (nsc_curve_generate(prefix, &kp, err) != 0) {
        fprintf(stderr, "ncclscope-agent: %s\n", err);
        return 1;
    }
    printf("%s.pub: public key %s\n%s.key: secret key (mode 0600)\n", prefix, kp.public_key, prefix);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--gen-keys") == 0) {
        if (argc != 3) {
            fprintf(stderr, "ncclscope-agent: usage: ncclscope-agent --gen-keys PREFIX\n");
            return 2;
        }
        return gen_keys(argv[2]);
    }
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
    fprintf(stderr, "ncclscope-agent: %s listening on ipc://%s/agent.sock, spool %s (epoch %016" PRIx64 "), collector %s%s\n",
            a.cfg.agent_id, a.cfg.rundir, a.cfg.spool, nsc_spool_epoch(a.spool), a.fwd ? a.cfg.collector : "none (spool only)",
            a.cfg.collector_key[0] ? " (CURVE)" : "");
    loop(&a);
    teardown(&a);
    return 0;
}
