/* shipper.c: the one background thread per process that drains the threads'
 * record queues, encodes batches with the common codec and sends them to the
 * node agent over ZeroMQ PUSH, never blocking, and keeps each one until the
 * agent acknowledges it as stored.
 *
 * Batches are encoded straight into a bounded backlog (NCCLSCOPE_BUFFER_MB/2,
 * less what ZeroMQ's send queue may hold) and leave it in order when
 * zmq_send(ZMQ_DONTWAIT) accepts them. While the agent is absent or slow the
 * backlog fills; then the shipper stops draining, the chunks run out, and
 * NCCL's threads drop and count per type. Every batch ends
 * with the cumulative counters, and a counters-only batch goes out every
 * heartbeat period when nothing else did, so drops reach the agent once it is
 * back. Definitions (strings, contexts) precede the first record that needs
 * them in the stream; batches are never discarded, so a definition cannot be
 * lost to a drop. They are repeated after a send gap and every DEFS_REPEAT_NS,
 * for an agent that restarted. Only this thread touches the sockets. A state
 * waits (hold.c) for its event and goes in the event's batch.
 *
 * Acknowledgements (docs/protocol.md) come on a SUB socket from the agent's
 * <endpoint>.ack, filtered by this stream's random id. An agent killed with
 * batches in ZeroMQ's queues or in its memory loses them; the restarted one
 * finds the gap in the stream and asks for a resend from the first batch it
 * lacks, and the backlog still holds every batch from the oldest
 * unacknowledged one. The backlog filling with unacknowledged batches is the
 * case above: NCCL's threads drop and count, so nothing goes uncounted. An
 * agent without the ack endpoint (older) takes batches as before: released
 * once sent.
 *
 * Once per heartbeat period the shipper also steps the self-cost guard
 * (common/shed.c) with the cost NCCL's threads sampled, and publishes the
 * types to shed in nsc_g_shed; the counters carry both to the receiver.
 *
 * Owns the thread, its sockets, sending the backlog and the
 * acknowledgements; batch.c owns the backlog's batches, drain.c what goes in
 * them.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <zmq.h>

#include "internal.h"
#include "shed.h"
#include "wire.h"

#define MIN_BACKLOG 4u
#define IDLE_SLEEP_NS 1000000L
#define IDLE_SLEEP_MAX_NS 16000000L
#define FLUSH_SLEEP_MAX_NS 64000000L
#define BATCH_MAX_AGE_NS 20000000ull
#define GAP_NS 500000000ull
#define DEFS_REPEAT_NS 10000000000ull
#define STALL_NS 200000000ull
#define SNDHWM 8
#define ACK_PROBE_NS 50000000ull
#define ACK_RETRY_NS 200000000ull
#define ACK_POLL_NS 1000000ull /* acknowledgements are read this often while draining */
#define NSC_MS 1000000ull
#define HOLD_CAP 4096u /* states held for their events (hold.c) */

nsc_shipper nsc_ship;

/* Does the agent acknowledge? Its ack endpoint's socket file exists (it binds
 * it before the batch endpoint). Once seen, for the life of the process: a
 * batch released unacknowledged could be lost uncounted. */
static void probe_acks(uint64_t now)
{
    if (nsc_ship.acks || !nsc_ship.ack || now - nsc_ship.acks_probed < ACK_PROBE_NS)
        return;
    nsc_ship.acks_probed = now;
    char path[sizeof nsc_ship.cfg.endpoint + 8];
    struct stat st;
    snprintf(path, sizeof path, "%.*s.ack", (int)(sizeof nsc_ship.cfg.endpoint - 1),
             nsc_ship.cfg.endpoint + strlen("ipc://"));
    nsc_ship.acks = stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void send_backlog(uint64_t now)
{
    if (nsc_ship.head < nsc_ship.tail)
        probe_acks(now);
    while (nsc_ship.head < nsc_ship.tail && nsc_ship.sock) {
        uint8_t *buf = nsc_ship_batch_buf(nsc_ship.head);
        nsc_wire_set_acked(buf, nsc_ship.acked);
        if (zmq_send(nsc_ship.sock, buf, nsc_ship.ring[nsc_ship.head % nsc_ship.nbatches].len, ZMQ_DONTWAIT) < 0) {
            if (!nsc_ship.failing_since)
                nsc_ship.failing_since = now;
            nsc_ship.acks_probed = 0;  /* an agent coming back may be a newer one */
            return;
        }
        if (nsc_ship.failing_since && now - nsc_ship.failing_since >= GAP_NS)
            nsc_ship_reset_defs(now);
        nsc_ship.failing_since = 0;
        nsc_ship.last_ok = nsc_ship.last_progress = now;
        nsc_ship.head++;
        if (!nsc_ship.acks)
            nsc_ship_release_upto(nsc_ship.head);
    }
}

/* One acknowledgement: STORED releases what the agent has in its spool; a
 * RESEND (the agent lacks `next`: a predecessor was killed holding it) sends
 * again from there, once per agent instance and point, as the batches
 * already on their way after the gap bring the same request again. */
static void take_ack(const nsc_ack *a, uint64_t now)
{
    if (a->stream != nsc_ship.stream)
        return;
    if (a->kind == NSC_ACK_STORED) {
        nsc_ship_release_upto(a->next < nsc_ship.tail ? a->next : nsc_ship.tail);
        if (nsc_ship.head < nsc_ship.acked)
            nsc_ship.head = nsc_ship.acked;
        return;
    }
    if (a->next < nsc_ship.acked || a->next >= nsc_ship.head ||
        (a->instance == nsc_ship.resend_instance && a->next == nsc_ship.resend_next))
        return;
    nsc_ship.resend_instance = a->instance;
    nsc_ship.resend_next = nsc_ship.head = a->next;
    nsc_ship_reset_defs(now);  /* the new agent knows no definition sent before `next` */
}

/* An acknowledgement published before this process's SUB was connected is
 * lost, and no later batch may bring another (a backlog full of batches
 * waiting for it sends none): once everything is sent and acked has not
 * moved for ACK_RETRY_NS, the last batch goes again (the agent answers a
 * batch it stored with its mark, which covers the ones before it; one it
 * lacks, with a resend request). */
static void retry_acks(uint64_t now)
{
    if (nsc_ship.acked != nsc_ship.ack_last || nsc_ship.head != nsc_ship.tail || nsc_ship.acked == nsc_ship.tail) {
        nsc_ship.ack_last = nsc_ship.acked;
        nsc_ship.ack_since = now;
    } else if (now - nsc_ship.ack_since >= ACK_RETRY_NS) {
        nsc_ship.head = nsc_ship.tail - 1;
        nsc_ship.ack_since = now;
    }
}

static void take_acks(uint64_t now)
{
    uint8_t buf[NSC_ACK_LEN + 1];
    nsc_ack a;
    for (int n; nsc_ship.ack && (n = zmq_recv(nsc_ship.ack, buf, sizeof buf, ZMQ_DONTWAIT)) >= 0;)
        if (nsc_ack_decode(buf, (size_t)n, &a) == NSC_WIRE_OK)
            take_ack(&a, now);
}

/* ---- the thread ------------------------------------------------------------------- */

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

/* The next sleep of a back-off: twice ns, at most max. */
static long doubled(long ns, long max)
{
    return ns * 2 < max ? ns * 2 : max;
}

static void heartbeat(uint64_t now)
{
    /* not into the buffer kept for the final counters, even when every batch
     * is sent and waits for its acknowledgement */
    if (nsc_ship.open || nsc_ship.head != nsc_ship.tail || nsc_ship_backlog_full() ||
        now - nsc_ship.last_begin < nsc_ship.cfg.heartbeat_ms * NSC_MS)
        return;
    if (nsc_ship_batch_begin(now, now, 0) == 0)
        nsc_ship_batch_finish();
}

/* The guard's period is the heartbeat's: long enough to hold collectives. */
static void guard(uint64_t now)
{
    if (!nsc_ship.shed.budget_ppm || now - nsc_ship.shed_at < nsc_ship.cfg.heartbeat_ms * NSC_MS)
        return;
    nsc_ship.shed_at = now;
    nsc_counters c;
    nsc_ship_counters_sum(&c);
    if (nsc_shed_step(&nsc_ship.shed, c.cost_ns, c.coll_ns)) {
        atomic_store_explicit(&nsc_g_shed, nsc_ship.shed.mask, memory_order_relaxed);
        nsc_log(NSC_LOG_INFO, "NCCLSCOPE_BUDGET_PCT: shedding event mask now 0x%x", nsc_ship.shed.mask);
    }
}

static void pass(uint64_t now)
{
    nsc_ship_calibrate(now);
    guard(now);
    if (now - nsc_ship.defs_reset >= DEFS_REPEAT_NS)
        nsc_ship_reset_defs(now);
    nsc_ship_announce(now);
    /* A receive that finds nothing costs ZeroMQ a poll() and a getpid(): once
     * a millisecond, not on each of the passes that drain a busy rank. */
    if (now - nsc_ship.acks_read >= ACK_POLL_NS || nsc_ship_backlog_full()) {
        nsc_ship.acks_read = now;
        take_acks(now);
    }
    retry_acks(now);
    send_backlog(now);
    size_t n = nsc_ship_drain(now);
    nsc_ship_release_held(now, 0);
    if (nsc_ship.open && now - nsc_ship.open_since >= BATCH_MAX_AGE_NS)
        nsc_ship_batch_finish();
    heartbeat(now);
    send_backlog(now);
    /* A slow agent that still takes batches is served at full pace, or a
     * backlog could never catch up after it stalled. */
    int sending = nsc_ship.head != nsc_ship.tail && now - nsc_ship.last_ok < STALL_NS;
    if (n > 0 || nsc_ship.open || sending) {
        nsc_ship.idle_ns = IDLE_SLEEP_NS;
        if (n == 0)
            nap(IDLE_SLEEP_NS);
        return;
    }
    /* Nothing recorded, and nothing to send or an agent that took nothing
     * for STALL_NS (absent or stopped): back off, so that idle ranks do not
     * wake a thousand times a second each. The chunk pool holds what a
     * burst records meanwhile. */
    nap(nsc_ship.idle_ns);
    nsc_ship.idle_ns = doubled(nsc_ship.idle_ns, IDLE_SLEEP_MAX_NS);
}

/* Drain everything there is, account for what cannot be kept and end with a
 * counters-only batch in the reserved buffer. */
static void drain_all(void)
{
    uint64_t now = nsc_mono_ns();
    while (nsc_ship_drain(now) > 0)
        ;
    nsc_ship_release_held(now, 1);
    if (nsc_ship.open)
        nsc_ship_batch_finish();
    nsc_ship_count_leftovers();
    if (nsc_ship_batch_begin(now, now, 1) == 0)
        nsc_ship_batch_finish();
}

/* Is an agent bound to our ipc endpoint? Its socket file exists. It may then
 * be only slow to accept (a thousand ranks connecting at once, their
 * connections pending in its listen backlog): no progress then does not mean
 * it is absent. */
static int agent_bound(void)
{
    const char *path = nsc_ship.cfg.endpoint + strlen("ipc://");
    struct stat st;
    return strncmp(nsc_ship.cfg.endpoint, "ipc://", strlen("ipc://")) == 0 && stat(path, &st) == 0 &&
           S_ISSOCK(st.st_mode);
}

/* Send what the backlog holds until all of it is acknowledged (or sent, to
 * an agent that does not acknowledge), the deadline passes, or the agent
 * accepted nothing for STALL_NS and is not bound to the endpoint (it is
 * absent: don't hold NCCL up). With everything sent, the wait for the
 * acknowledgements sleeps on their socket: a thousand ranks exiting at once
 * must not take the agent's CPU by polling; a lost acknowledgement is asked
 * again (retry_acks). */
static void flush(uint64_t deadline)
{
    nsc_ship.last_progress = nsc_mono_ns();
    int bound = deadline > nsc_ship.last_progress && agent_bound();
    long sleep_ns = IDLE_SLEEP_NS;
    for (uint64_t now = nsc_ship.last_progress;; now = nsc_mono_ns()) {
        uint64_t progress = nsc_ship.last_progress;
        take_acks(now);
        retry_acks(now);
        send_backlog(now);
        if (nsc_ship.acked == nsc_ship.tail || now >= deadline || (!bound && now - nsc_ship.last_progress >= STALL_NS))
            break;
        zmq_pollitem_t it = {nsc_ship.ack, 0, ZMQ_POLLIN, 0};
        uint64_t wait = deadline - now < ACK_RETRY_NS ? deadline - now : ACK_RETRY_NS;
        if (nsc_ship.head == nsc_ship.tail && nsc_ship.ack) {
            zmq_poll(&it, 1, (long)(wait / NSC_MS) + 1);
            continue;
        }
        /* An agent that takes nothing (a thousand ranks ending at once, most
         * still waiting for their connection) is asked less and less often:
         * ranks retrying every millisecond would take the CPU it needs. */
        sleep_ns = nsc_ship.last_progress != progress ? IDLE_SLEEP_NS : doubled(sleep_ns, FLUSH_SLEEP_MAX_NS);
        nap(sleep_ns);
    }
}

static void *ship_main(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&nsc_ship.stop, memory_order_acquire))
        pass(nsc_mono_ns());
    uint64_t deadline = nsc_mono_ns() + nsc_ship.cfg.flush_ms * NSC_MS;
    drain_all();
    flush(deadline);
    uint64_t now = nsc_mono_ns();
    if (nsc_ship.acked < nsc_ship.tail) {
        char why[80] = "agent unreachable";
        if (agent_bound())
            snprintf(why, sizeof why, "agent too slow: not %s within NCCLSCOPE_FLUSH_MS=%u",
                     nsc_ship.head < nsc_ship.tail ? "taken" : "acknowledged", nsc_ship.cfg.flush_ms);
        nsc_log(NSC_LOG_WARN, "ncclscope: %llu batches not delivered to %s (%s)",
                (unsigned long long)(nsc_ship.tail - nsc_ship.acked), nsc_ship.cfg.endpoint, why);
    }
    int linger = (int)(deadline > now ? (deadline - now) / NSC_MS : 0);
    zmq_setsockopt(nsc_ship.sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(nsc_ship.sock);
    nsc_ship.sock = NULL;
    if (nsc_ship.ack)
        zmq_close(nsc_ship.ack);
    nsc_ship.ack = NULL;
    return NULL;
}

/* The SUB for acknowledgements on <endpoint>.ack (ipc only: an agent), its
 * subscription this stream's id. Without it the shipper releases batches once
 * sent, as to an agent that does not acknowledge. */
static void open_acks(void)
{
    char ep[sizeof nsc_ship.cfg.endpoint + 8];
    uint8_t topic[8];
    int linger = 0;
    if (strncmp(nsc_ship.cfg.endpoint, "ipc://", strlen("ipc://")) != 0 ||
        !(nsc_ship.ack = zmq_socket(nsc_ship.zctx, ZMQ_SUB)))
        return;
    for (int i = 0; i < 8; i++)
        topic[i] = (uint8_t)(nsc_ship.stream >> (56 - 8 * i));
    snprintf(ep, sizeof ep, "%s.ack", nsc_ship.cfg.endpoint);
    if (zmq_setsockopt(nsc_ship.ack, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(nsc_ship.ack, ZMQ_SUBSCRIBE, topic, sizeof topic) != 0 || zmq_connect(nsc_ship.ack, ep) != 0) {
        zmq_close(nsc_ship.ack);
        nsc_ship.ack = NULL;
    }
}

static int open_socket(void)
{
    int hwm = SNDHWM, one = 1;
    nsc_ship.sock = zmq_socket(nsc_ship.zctx, ZMQ_PUSH);
    if (!nsc_ship.sock)
        return -1;
    zmq_setsockopt(nsc_ship.sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(nsc_ship.sock, ZMQ_IMMEDIATE, &one, sizeof one);
    if (zmq_connect(nsc_ship.sock, nsc_ship.cfg.endpoint) != 0) {
        nsc_log(NSC_LOG_WARN, "ncclscope: cannot connect to %s: %s", nsc_ship.cfg.endpoint,
                zmq_strerror(errno));
        zmq_close(nsc_ship.sock);
        nsc_ship.sock = NULL;
        return -1;
    }
    open_acks();
    return 0;
}

/* A stream id: random, never 0 (0 says "no acknowledgements"). Without
 * getrandom, the time and pid: unique enough among one agent's processes. */
static uint64_t new_stream(void)
{
    uint64_t id = 0;
    if (getrandom(&id, sizeof id, GRND_NONBLOCK) != (ssize_t)sizeof id)
        id = nsc_mono_ns() * 0x9e3779b97f4a7c15ull ^ nsc_g_pid;
    return id ? id : 1;
}

static int backlog_alloc(uint64_t bytes)
{
    if (nsc_ship.mem)
        return 0;
    /* ZeroMQ copies each batch it accepts and holds up to SNDHWM of them (and
     * one being written): that is part of this half of the budget too */
    uint64_t half = bytes / 2 / NSC_SHIP_BATCH_CAP;
    nsc_ship.nbatches = half > SNDHWM + 1 ? half - SNDHWM - 1 : 0;
    if (nsc_ship.nbatches < MIN_BACKLOG)
        nsc_ship.nbatches = MIN_BACKLOG;
    nsc_ship.mem = malloc(nsc_ship.nbatches * NSC_SHIP_BATCH_CAP);
    nsc_ship.ring = calloc(nsc_ship.nbatches, sizeof *nsc_ship.ring);
    nsc_ship.spare = calloc(nsc_ship.nbatches, sizeof *nsc_ship.spare);
    if (!nsc_ship.mem || !nsc_ship.ring || !nsc_ship.spare || nsc_hold_init(HOLD_CAP) != 0) {
        nsc_shipper_release();
        return -1;
    }
    nsc_ship_spares_reset();
    return 0;
}

int nsc_shipper_start(const nsc_config *cfg)
{
    if (nsc_ship.running)
        return 0;
    nsc_ship.cfg = *cfg;
    nsc_ship.shed.budget_ppm = cfg->budget_ppm;
    if (backlog_alloc(cfg->buffer_bytes) != 0)
        return -1;
    if (!nsc_ship.stream)
        nsc_ship.stream = new_stream();
    nsc_ship.zctx = zmq_ctx_new();
    if (!nsc_ship.zctx)
        return -1;
    int blocky = 0;
    zmq_ctx_set(nsc_ship.zctx, ZMQ_BLOCKY, blocky);
    if (open_socket() != 0) {
        zmq_ctx_term(nsc_ship.zctx);
        nsc_ship.zctx = NULL;
        return -1;
    }
    atomic_store(&nsc_ship.stop, 0);
    nsc_ship.idle_ns = IDLE_SLEEP_NS;
    if (nsc_g_cost_counter)
        nsc_clock_start(&nsc_ship.clock); /* recalibrated only where it stamps events */
    nsc_cost_calibrate(nsc_ship.clock.ns_per_tick);
    nsc_ship.last_begin = nsc_ship.defs_reset = nsc_ship.calibrated_at = nsc_mono_ns();
    /* Signals belong to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&nsc_ship.thread, NULL, ship_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        zmq_close(nsc_ship.sock);
        nsc_ship.sock = NULL;
        if (nsc_ship.ack)
            zmq_close(nsc_ship.ack);
        nsc_ship.ack = NULL;
        zmq_ctx_term(nsc_ship.zctx);
        nsc_ship.zctx = NULL;
        return -1;
    }
    pthread_setname_np(nsc_ship.thread, "ncclscope-ship");
    nsc_ship.running = 1;
    return 0;
}

void nsc_shipper_stop(void)
{
    if (!nsc_ship.running)
        return;
    atomic_store_explicit(&nsc_ship.stop, 1, memory_order_release);
    pthread_join(nsc_ship.thread, NULL);
    zmq_ctx_term(nsc_ship.zctx);
    nsc_ship.zctx = NULL;
    nsc_ship.running = 0;
}

int nsc_shipper_running(void)
{
    return nsc_ship.running;
}

/* Plain stores only: this runs in an atfork child handler. The parent's
 * context and socket are not ours to close (terminating the context would
 * wait forever for I/O threads that do not exist here), and its thread was
 * not copied. */
void nsc_shipper_forget(void)
{
    nsc_ship.zctx = NULL;
    nsc_ship.sock = nsc_ship.ack = NULL;
    nsc_ship.running = 0;
}

void nsc_shipper_reset_stream(void)
{
    nsc_ship.acked = nsc_ship.head = nsc_ship.tail = 0;
    if (nsc_ship.spare)
        nsc_ship_spares_reset();
    nsc_ship.open = 0;
    nsc_ship.seq = 0;
    nsc_ship.stream = 0;  /* a new one at start: the parent's acknowledgements are not ours */
    nsc_ship.acks = 0;
    nsc_ship.failing_since = 0;
    nsc_ship_reset_defs(0);
    nsc_hold_reset();
}

void nsc_shipper_release(void)
{
    nsc_hold_release();
    free(nsc_ship.mem);
    free(nsc_ship.ring);
    free(nsc_ship.spare);
    nsc_ship.mem = NULL;
    nsc_ship.ring = NULL;
    nsc_ship.spare = NULL;
    nsc_ship.nspare = 0;
    nsc_ship.nbatches = 0;
}
