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

#define BATCH_CAP (64u << 10)
#define COUNTERS_RESERVE 4096u /* room kept for the counters that end a batch */
#define MIN_BACKLOG 4u
#define IDLE_SLEEP_NS 1000000L
#define IDLE_SLEEP_MAX_NS 16000000L
#define BATCH_MAX_AGE_NS 20000000ull
#define GAP_NS 500000000ull
#define DEFS_REPEAT_NS 10000000000ull
#define STALL_NS 200000000ull
#define CALIBRATE_NS 10000000ull /* a calibration pair for nsc_tick's counts */
#define SNDHWM 8
#define ACK_PROBE_NS 50000000ull
#define ACK_RETRY_NS 200000000ull
#define ACK_POLL_NS 1000000ull /* acknowledgements are read this often while draining */
#define MS 1000000ull
#define HOLD_CAP 4096u /* states held for their events (hold.c) */

static struct {
    nsc_config cfg;
    void *zctx;
    void *sock;
    void *ack;      /* SUB on the agent's ack endpoint; NULL: none (not ipc) */
    pthread_t thread;
    int running;
    _Atomic int stop;
    /* backlog: batches by seq, each in one of nbatches BATCH_CAP buffers
     * (ring[seq % nbatches]); [acked, head) were sent and wait for their
     * acknowledgement, [head, tail) wait to be sent; the one at tail is being
     * encoded while `open`. Free buffers are a stack: the one released last
     * is taken next, still resident and in cache, where a ring would walk
     * the whole backlog's pages (a page fault per 4 KiB written) */
    uint8_t *mem;
    struct { uint32_t buf, len; } *ring;
    uint32_t *spare, nspare;
    uint64_t nbatches, acked, head, tail;
    uint64_t stream;            /* this stream's id, random and non-zero */
    int acks;                   /* the agent acknowledges (its ack endpoint was seen) */
    uint64_t acks_probed;       /* when its endpoint was last looked for */
    uint64_t resend_instance, resend_next;  /* the last resend done */
    uint64_t ack_last, ack_since;  /* acked as last seen, and since when it has not moved */
    uint64_t acks_read;            /* when pass() last read acknowledgements */
    nsc_enc enc;
    int open;
    uint64_t open_since, last_begin;
    long idle_ns;  /* the next nap when there is nothing at all to do */
    uint64_t seq;
    uint64_t last_ok, failing_since, defs_reset, last_progress;
    uint32_t drain_from;
    nsc_shed shed;
    uint64_t shed_at;  /* when the guard was last stepped */
    nsc_clock clock;   /* the counter to ns: nsc_tick's where it reads it, the guard's samples */
    uint64_t calibrated_at;
    uint8_t str_sent[NSC_INTERN_CAP + 1];
    uint32_t ctx_sent[NSC_MAX_CTX];
} sh;

static void reset_defs(uint64_t now)
{
    memset(sh.str_sent, 0, sizeof sh.str_sent);
    memset(sh.ctx_sent, 0, sizeof sh.ctx_sent);
    sh.defs_reset = now;
}

/* ---- backlog --------------------------------------------------------------- */

static uint8_t *batch_buf(uint64_t seq)
{
    return sh.mem + (size_t)sh.ring[seq % sh.nbatches].buf * BATCH_CAP;
}

/* Batches before next are acknowledged: their buffers are free. */
static void release_upto(uint64_t next)
{
    for (; sh.acked < next; sh.acked++)
        sh.spare[sh.nspare++] = sh.ring[sh.acked % sh.nbatches].buf;
}

/* Every buffer free, buffer 0 on top. */
static void spares_reset(void)
{
    for (sh.nspare = 0; sh.nspare < sh.nbatches; sh.nspare++)
        sh.spare[sh.nspare] = (uint32_t)(sh.nbatches - 1 - sh.nspare);
}

static int backlog_full(void)
{
    /* one buffer stays free for the last counters of a final stop */
    return sh.tail - sh.acked + 1 >= sh.nbatches;
}

static int batch_begin(uint64_t now, uint64_t base_ns, int final)
{
    if (sh.tail - sh.acked >= sh.nbatches)
        return -1;
    nsc_batch_hdr hdr = {.version = NSC_WIRE_VERSION, .seq = sh.seq, .stream = sh.stream,
                         .base_ns = base_ns, .sent_ns = now, .proc = sh.cfg.proc,
                         .final = (uint8_t)final,
                         .clock_err_ns = nsc_g_counter ? nsc_clock_bound(&sh.clock) : 0};
    hdr.proc.pid = nsc_g_pid;
    /* at most tail - acked buffers are taken: one is spare */
    uint32_t buf = sh.spare[sh.nspare - 1];
    if (nsc_enc_begin(&sh.enc, sh.mem + (size_t)buf * BATCH_CAP, BATCH_CAP, &hdr) != 0 ||
        nsc_enc_reserve(&sh.enc, COUNTERS_RESERVE) != 0)
        return -1;
    sh.nspare--;
    sh.ring[sh.tail % sh.nbatches].buf = buf;
    sh.seq++;
    sh.open = 1;
    sh.open_since = sh.last_begin = now;
    return 0;
}

/* ---- the counter's times ------------------------------------------------------ */

static uint64_t ticks_ns(uint64_t ticks)
{
    return nsc_g_counter ? (uint64_t)((double)ticks * sh.clock.ns_per_tick) : ticks;
}

static uint64_t cost_ticks_ns(uint64_t ticks)
{
    return nsc_g_cost_counter ? (uint64_t)((double)ticks * sh.clock.ns_per_tick) : ticks;
}

static uint64_t time_ns(uint64_t tick)
{
    return nsc_g_counter && tick ? nsc_clock_ns(&sh.clock, tick) : tick;
}

/* A record as it is shipped: its times in CLOCK_MONOTONIC ns (converted in
 * the shipper's own copy). */
static void rec_ns(nsc_rec *r)
{
    if (!nsc_g_counter)
        return;
    if (r->kind == NSC_REC_EVENT) {
        r->u.ev.start_ns = time_ns(r->u.ev.start_ns);
        r->u.ev.stop_ns = time_ns(r->u.ev.stop_ns);
        if (r->u.ev.type == NSC_T_KERNEL_CH)
            r->u.ev.d.kernel_ch.ptimer_stop_ns = time_ns(r->u.ev.d.kernel_ch.ptimer_stop_ns);
    } else if (r->kind == NSC_REC_STATE) {
        r->u.st.ts_ns = time_ns(r->u.st.ts_ns);
    } else {
        r->u.done.ts_ns = time_ns(r->u.done.ts_ns);
    }
}

/* A pair every CALIBRATE_NS: the line follows CLOCK_MONOTONIC's slewing. */
static void calibrate(uint64_t now)
{
    if (!nsc_g_counter || now - sh.calibrated_at < CALIBRATE_NS)
        return;
    sh.calibrated_at = now;
    if (nsc_clock_calibrate(&sh.clock))
        nsc_log(NSC_LOG_INFO, "ncclscope: the CPU's counter jumped; calibrating anew");
}

/* The process's counters, the guard's times in ns. */
static void counters_sum(nsc_counters *c)
{
    nsc_counters_sum(c);
    c->cost_ns = cost_ticks_ns(c->cost_ns);
    c->coll_ns = ticks_ns(c->coll_ns);
}

static void batch_finish(void)
{
    nsc_counters c;
    counters_sum(&c);
    c.shed_mask = sh.shed.mask;
    c.shed_changes = sh.shed.changes;
    nsc_enc_counters(&sh.enc, &c); /* fits: the reserve is for it */
    sh.ring[sh.tail % sh.nbatches].len = (uint32_t)nsc_enc_finish(&sh.enc);
    sh.tail++;
    sh.open = 0;
}

/* Does the agent acknowledge? Its ack endpoint's socket file exists (it binds
 * it before the batch endpoint). Once seen, for the life of the process: a
 * batch released unacknowledged could be lost uncounted. */
static void probe_acks(uint64_t now)
{
    if (sh.acks || !sh.ack || now - sh.acks_probed < ACK_PROBE_NS)
        return;
    sh.acks_probed = now;
    char path[sizeof sh.cfg.endpoint + 8];
    struct stat st;
    snprintf(path, sizeof path, "%.*s.ack", (int)(sizeof sh.cfg.endpoint - 1),
             sh.cfg.endpoint + strlen("ipc://"));
    sh.acks = stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void send_backlog(uint64_t now)
{
    if (sh.head < sh.tail)
        probe_acks(now);
    while (sh.head < sh.tail && sh.sock) {
        uint8_t *buf = batch_buf(sh.head);
        nsc_wire_set_acked(buf, sh.acked);
        if (zmq_send(sh.sock, buf, sh.ring[sh.head % sh.nbatches].len, ZMQ_DONTWAIT) < 0) {
            if (!sh.failing_since)
                sh.failing_since = now;
            sh.acks_probed = 0;  /* an agent coming back may be a newer one */
            return;
        }
        if (sh.failing_since && now - sh.failing_since >= GAP_NS)
            reset_defs(now);
        sh.failing_since = 0;
        sh.last_ok = sh.last_progress = now;
        sh.head++;
        if (!sh.acks)
            release_upto(sh.head);
    }
}

/* One acknowledgement: STORED releases what the agent has in its spool; a
 * RESEND (the agent lacks `next`: a predecessor was killed holding it) sends
 * again from there, once per agent instance and point, as the batches
 * already on their way after the gap bring the same request again. */
static void take_ack(const nsc_ack *a, uint64_t now)
{
    if (a->stream != sh.stream)
        return;
    if (a->kind == NSC_ACK_STORED) {
        release_upto(a->next < sh.tail ? a->next : sh.tail);
        if (sh.head < sh.acked)
            sh.head = sh.acked;
        return;
    }
    if (a->next < sh.acked || a->next >= sh.head ||
        (a->instance == sh.resend_instance && a->next == sh.resend_next))
        return;
    sh.resend_instance = a->instance;
    sh.resend_next = sh.head = a->next;
    reset_defs(now);  /* the new agent knows no definition sent before `next` */
}

/* An acknowledgement published before this process's SUB was connected is
 * lost, and no later batch may bring another (a backlog full of batches
 * waiting for it sends none): once everything is sent and acked has not
 * moved for ACK_RETRY_NS, the last batch goes again (the agent answers a
 * batch it stored with its mark, which covers the ones before it; one it
 * lacks, with a resend request). */
static void retry_acks(uint64_t now)
{
    if (sh.acked != sh.ack_last || sh.head != sh.tail || sh.acked == sh.tail) {
        sh.ack_last = sh.acked;
        sh.ack_since = now;
    } else if (now - sh.ack_since >= ACK_RETRY_NS) {
        sh.head = sh.tail - 1;
        sh.ack_since = now;
    }
}

static void take_acks(uint64_t now)
{
    uint8_t buf[NSC_ACK_LEN + 1];
    nsc_ack a;
    for (int n; sh.ack && (n = zmq_recv(sh.ack, buf, sizeof buf, ZMQ_DONTWAIT)) >= 0;)
        if (nsc_ack_decode(buf, (size_t)n, &a) == NSC_WIRE_OK)
            take_ack(&a, now);
}

/* ---- encoding ---------------------------------------------------------------- */

static int enc_str(nsc_str id)
{
    if (id == 0 || sh.str_sent[id])
        return 0;
    nsc_str_def def = {.id = id};
    const char *text = nsc_intern_text(id);
    memcpy(def.text, text ? text : "?", text ? strlen(text) + 1 : 2);
    int rc = nsc_enc_str(&sh.enc, &def);
    if (rc == 0)
        sh.str_sent[id] = 1;
    return rc;
}

static int enc_ctx(uint16_t index)
{
    nsc_pctx *c = index == NSC_CTX_NONE ? NULL : nsc_ctx_at(index);
    if (!c)
        return 0;
    const nsc_ctx_def *def;
    uint32_t version = nsc_ctx_def_get(c, &def);
    if (sh.ctx_sent[index] == version)
        return 0;
    int rc = nsc_enc_ctx(&sh.enc, def);
    if (rc == 0)
        sh.ctx_sent[index] = version;
    return rc;
}

/* The strings an event refers to: its STR fields (event_fields.h), in the
 * order of its struct. */
#define STR_ROW(a, kind, m, wire, store, json, nccl)                                          \
    if (NSC_VAL_##kind == NSC_VAL_STR)                                                        \
        out[n++] = (nsc_str)ev->a.m;
#define STR_TYPE(type, s, list)                                                              \
    case type:                                                                               \
        list(STR_ROW, d.s) break;
#define STR_COUNT(a, kind, m, wire, store, json, nccl) +(NSC_VAL_##kind == NSC_VAL_STR)
#define STR_FITS(type, s, list)                                                              \
    _Static_assert(0 list(STR_COUNT, ~) <= EVENT_STRS_MAX, #type ": more strings than room");
#define EVENT_STRS_MAX 5
NSC_EVENT_TYPES(STR_FITS)

static size_t event_strs(const nsc_event *ev, nsc_str out[EVENT_STRS_MAX])
{
    size_t n = 0;
    switch (ev->type) {
        NSC_EVENT_TYPES(STR_TYPE)
    }
    return n;
}

/* The definitions an event needs, before it in the stream. */
static int enc_defs(const nsc_event *ev)
{
    nsc_str strs[EVENT_STRS_MAX];
    size_t n = event_strs(ev, strs);
    int rc = enc_ctx(ev->ctx);
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = enc_str(strs[i]);
    return rc;
}

static int enc_event(const nsc_event *ev)
{
    int rc = enc_defs(ev);
    return rc ? rc : nsc_enc_event(&sh.enc, ev);
}

/* The states held for ev (the first at it), then ev. */
static int enc_group(const nsc_event *ev, uint64_t it)
{
    int rc = 0;
    while (it && rc == 0)
        rc = nsc_enc_state(&sh.enc, nsc_hold_at(it, &it));
    return rc ? rc : nsc_enc_event(&sh.enc, ev);
}

static int enc_record(const nsc_rec *r)
{
    switch (r->kind) {
    case NSC_REC_EVENT:
        return enc_event(&r->u.ev);
    case NSC_REC_STATE:
        return nsc_enc_state(&sh.enc, &r->u.st);
    default:
        return nsc_enc_completion(&sh.enc, &r->u.done);
    }
}

static uint64_t rec_time(const nsc_rec *r)
{
    return r->kind == NSC_REC_EVENT ? r->u.ev.start_ns
           : r->kind == NSC_REC_STATE ? r->u.st.ts_ns
                                      : r->u.done.ts_ns;
}

/* ---- draining ------------------------------------------------------------------ */

/* Encode one record, opening and finishing batches as needed. Returns 0, or
 * -1 when the backlog has no room (the record stays in its queue). */
static int ship_now(const nsc_rec *r, uint64_t now)
{
    for (;;) {
        if (!sh.open && (backlog_full() || batch_begin(now, rec_time(r), 0) != 0))
            return -1;
        uint32_t before = sh.enc.nrecords;
        if (enc_record(r) == 0)
            return 0;
        if (before == 0 && sh.enc.nrecords == 0)
            return 0; /* cannot fit even an empty batch: impossible by sizes */
        batch_finish();
        if (backlog_full())
            return -1;
    }
}

/* The oldest held state goes alone: its event did not come in time. */
static int release_oldest(uint64_t now)
{
    uint64_t held_ns;
    nsc_rec r = {.kind = NSC_REC_STATE, .u.st = *nsc_hold_oldest(&held_ns)};
    if (ship_now(&r, now) != 0)
        return -1;
    nsc_hold_pop(r.u.st.id);
    return 0;
}

/* Every state held state_hold_ms or longer (all of them: every one). */
static int release_held(uint64_t now, int all)
{
    uint64_t held_ns;
    while (nsc_hold_oldest(&held_ns) && (all || now - held_ns >= sh.cfg.state_hold_ms * MS))
        if (release_oldest(now) != 0)
            return -1;
    return 0;
}

/* An event with the states held for it, in one batch. Its definitions may
 * close the batch before (they stay there, ahead of it). A group larger
 * than an empty batch goes apart, the states first. */
static int ship_group(const nsc_event *ev, uint64_t first, uint64_t now)
{
    for (;;) {
        int fresh = !sh.open;
        if (fresh && (backlog_full() || batch_begin(now, ev->start_ns, 0) != 0))
            return -1;
        if (enc_defs(ev) == 0) {
            nsc_enc mark = sh.enc;
            if (enc_group(ev, first) == 0) {
                nsc_hold_drop(ev->id);
                return 0;
            }
            sh.enc = mark;
            if (fresh)
                break;
        }
        batch_finish();
        if (backlog_full())
            return -1;
    }
    for (uint64_t it, next; (it = nsc_hold_first(ev->id)); nsc_hold_pop(ev->id)) {
        nsc_rec r = {.kind = NSC_REC_STATE, .u.st = *nsc_hold_at(it, &next)};
        if (ship_now(&r, now) != 0)
            return -1;
    }
    nsc_rec r = {.kind = NSC_REC_EVENT, .u.ev = *ev};
    return ship_now(&r, now);
}

/* A state waits (hold.c) for its event, which it then travels with. */
static int ship_record(const nsc_rec *r, uint64_t now)
{
    if (r->kind == NSC_REC_STATE && sh.cfg.state_hold_ms) {
        if (nsc_hold_full() && release_oldest(now) != 0)
            return -1;
        nsc_hold_put(&r->u.st, now);
        return 0;
    }
    uint64_t first = r->kind == NSC_REC_EVENT ? nsc_hold_first(r->u.ev.id) : 0;
    if (first)
        return ship_group(&r->u.ev, first, now);
    return ship_now(r, now);
}

/* An orphan's state is read before its head: what its owner published before
 * it exited is then all there. */
static size_t drain_tbuf(nsc_tbuf *tb, uint64_t now, int *blocked)
{
    int orphan = atomic_load_explicit(&tb->state, memory_order_acquire) == NSC_TB_ORPHAN;
    uint64_t head = atomic_load_explicit(&tb->head, memory_order_acquire);
    size_t n = 0;
    nsc_rec r;
    for (uint32_t cells; (cells = nsc_tbuf_peek(tb, head, &r)); nsc_tbuf_take(tb, cells), n++) {
        rec_ns(&r);
        if (ship_record(&r, now) != 0) {
            *blocked = 1;
            return n;
        }
    }
    if (orphan)
        nsc_tbuf_recycle(tb);
    return n;
}

static size_t drain(uint64_t now)
{
    size_t n = 0;
    int blocked = 0;
    uint32_t count = nsc_g_pool.ntbufs;
    for (uint32_t k = 0; k < count && !blocked; k++)
        n += drain_tbuf(&nsc_g_pool.tbufs[(sh.drain_from + k) % count], now, &blocked);
    sh.drain_from++;
    return n;
}

/* Final stop with a full backlog: what is left in the queues is lost; count it
 * so that emitted == shipped + dropped still holds at the receiver. */
static void count_leftovers(void)
{
    nsc_tcounters *c = &nsc_g_pool.shared;
    for (uint32_t i = 0; i < nsc_g_pool.ntbufs; i++) {
        nsc_tbuf *tb = &nsc_g_pool.tbufs[i];
        uint64_t head = atomic_load_explicit(&tb->head, memory_order_acquire);
        nsc_rec r;
        for (uint32_t cells; (cells = nsc_tbuf_peek(tb, head, &r)); nsc_tbuf_take(tb, cells)) {
            if (r.kind == NSC_REC_EVENT) {
                nsc_count_shared(&c->dropped[r.u.ev.type]);
                if (r.u.ev.type == NSC_T_KERNEL_CH && r.u.ev.d.kernel_ch.ptimer_stop_ns)
                    nsc_count_shared(&c->states_dropped);
            } else if (r.kind == NSC_REC_STATE) {
                nsc_count_shared(&c->states_dropped);
            } else {
                nsc_count_shared(&c->completions_dropped[r.type]);
            }
        }
    }
    uint64_t held_ns;
    for (const nsc_state_rec *st; (st = nsc_hold_oldest(&held_ns)); nsc_hold_pop(st->id))
        nsc_count_shared(&c->states_dropped);
}

/* ---- the thread ------------------------------------------------------------------- */

static void nap(long ns)
{
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
}

static void heartbeat(uint64_t now)
{
    /* not into the buffer kept for the final counters, even when every batch
     * is sent and waits for its acknowledgement */
    if (sh.open || sh.head != sh.tail || backlog_full() || now - sh.last_begin < sh.cfg.heartbeat_ms * MS)
        return;
    if (batch_begin(now, now, 0) == 0)
        batch_finish();
}

/* A communicator this process joined goes out as soon as the shipper sees
 * it, in a batch of its own, not with its first event: a rank killed before
 * its first batch would otherwise leave no trace, and diagnose could only
 * say it never joined, not that its process died (its agent's liveness
 * watch knows the process from this batch on). A v3 context, which knows
 * its communicator only from its first Coll or P2p, waits for that. */
static void announce(uint64_t now)
{
    int any = 0;
    for (uint16_t i = 0; nsc_ctx_at(i); i++) {
        const nsc_ctx_def *def;
        uint32_t version = nsc_ctx_def_get(nsc_ctx_at(i), &def);
        if (sh.ctx_sent[i] == version || def->rank < 0)
            continue;
        if (!sh.open && (backlog_full() || batch_begin(now, now, 0) != 0))
            return;
        if (enc_ctx(i) != 0)
            break;  /* the batch is full: the rest next pass */
        any = 1;
    }
    if (any)
        batch_finish();
}

/* The guard's period is the heartbeat's: long enough to hold collectives. */
static void guard(uint64_t now)
{
    if (!sh.shed.budget_ppm || now - sh.shed_at < sh.cfg.heartbeat_ms * MS)
        return;
    sh.shed_at = now;
    nsc_counters c;
    counters_sum(&c);
    if (nsc_shed_step(&sh.shed, c.cost_ns, c.coll_ns)) {
        atomic_store_explicit(&nsc_g_shed, sh.shed.mask, memory_order_relaxed);
        nsc_log(NSC_LOG_INFO, "NCCLSCOPE_BUDGET_PCT: shedding event mask now 0x%x", sh.shed.mask);
    }
}

static void pass(uint64_t now)
{
    calibrate(now);
    guard(now);
    if (now - sh.defs_reset >= DEFS_REPEAT_NS)
        reset_defs(now);
    announce(now);
    /* A receive that finds nothing costs ZeroMQ a poll() and a getpid(): once
     * a millisecond, not on each of the passes that drain a busy rank. */
    if (now - sh.acks_read >= ACK_POLL_NS || backlog_full()) {
        sh.acks_read = now;
        take_acks(now);
    }
    retry_acks(now);
    send_backlog(now);
    size_t n = drain(now);
    release_held(now, 0);
    if (sh.open && now - sh.open_since >= BATCH_MAX_AGE_NS)
        batch_finish();
    heartbeat(now);
    send_backlog(now);
    /* A slow agent that still takes batches is served at full pace, or a
     * backlog could never catch up after it stalled. */
    int sending = sh.head != sh.tail && now - sh.last_ok < STALL_NS;
    if (n > 0 || sh.open || sending) {
        sh.idle_ns = IDLE_SLEEP_NS;
        if (n == 0)
            nap(IDLE_SLEEP_NS);
        return;
    }
    /* Nothing recorded, and nothing to send or an agent that took nothing
     * for STALL_NS (absent or stopped): back off, so that idle ranks do not
     * wake a thousand times a second each. The chunk pool holds what a
     * burst records meanwhile. */
    nap(sh.idle_ns);
    sh.idle_ns = sh.idle_ns * 2 < IDLE_SLEEP_MAX_NS ? sh.idle_ns * 2 : IDLE_SLEEP_MAX_NS;
}

/* Drain everything there is, account for what cannot be kept and end with a
 * counters-only batch in the reserved buffer. */
static void drain_all(void)
{
    uint64_t now = nsc_mono_ns();
    while (drain(now) > 0)
        ;
    release_held(now, 1);
    if (sh.open)
        batch_finish();
    count_leftovers();
    if (batch_begin(now, now, 1) == 0)
        batch_finish();
}

/* Is an agent bound to our ipc endpoint? Its socket file exists. It may then
 * be only slow to accept (a thousand ranks connecting at once, their
 * connections pending in its listen backlog): no progress then does not mean
 * it is absent. */
static int agent_bound(void)
{
    const char *path = sh.cfg.endpoint + strlen("ipc://");
    struct stat st;
    return strncmp(sh.cfg.endpoint, "ipc://", strlen("ipc://")) == 0 && stat(path, &st) == 0 &&
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
    sh.last_progress = nsc_mono_ns();
    int bound = deadline > sh.last_progress && agent_bound();
    for (uint64_t now = sh.last_progress;; now = nsc_mono_ns()) {
        take_acks(now);
        retry_acks(now);
        send_backlog(now);
        if (sh.acked == sh.tail || now >= deadline || (!bound && now - sh.last_progress >= STALL_NS))
            break;
        zmq_pollitem_t it = {sh.ack, 0, ZMQ_POLLIN, 0};
        uint64_t wait = deadline - now < ACK_RETRY_NS ? deadline - now : ACK_RETRY_NS;
        if (sh.head == sh.tail && sh.ack)
            zmq_poll(&it, 1, (long)(wait / MS) + 1);
        else
            nap(IDLE_SLEEP_NS);
    }
}

static void *ship_main(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&sh.stop, memory_order_acquire))
        pass(nsc_mono_ns());
    uint64_t deadline = nsc_mono_ns() + sh.cfg.flush_ms * MS;
    drain_all();
    flush(deadline);
    uint64_t now = nsc_mono_ns();
    if (sh.acked < sh.tail) {
        char why[80] = "agent unreachable";
        if (agent_bound())
            snprintf(why, sizeof why, "agent too slow: not %s within NCCLSCOPE_FLUSH_MS=%u",
                     sh.head < sh.tail ? "taken" : "acknowledged", sh.cfg.flush_ms);
        nsc_log(NSC_LOG_WARN, "ncclscope: %llu batches not delivered to %s (%s)",
                (unsigned long long)(sh.tail - sh.acked), sh.cfg.endpoint, why);
    }
    int linger = (int)(deadline > now ? (deadline - now) / MS : 0);
    zmq_setsockopt(sh.sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(sh.sock);
    sh.sock = NULL;
    if (sh.ack)
        zmq_close(sh.ack);
    sh.ack = NULL;
    return NULL;
}

/* The SUB for acknowledgements on <endpoint>.ack (ipc only: an agent), its
 * subscription this stream's id. Without it the shipper releases batches once
 * sent, as to an agent that does not acknowledge. */
static void open_acks(void)
{
    char ep[sizeof sh.cfg.endpoint + 8];
    uint8_t topic[8];
    int linger = 0;
    if (strncmp(sh.cfg.endpoint, "ipc://", strlen("ipc://")) != 0 ||
        !(sh.ack = zmq_socket(sh.zctx, ZMQ_SUB)))
        return;
    for (int i = 0; i < 8; i++)
        topic[i] = (uint8_t)(sh.stream >> (56 - 8 * i));
    snprintf(ep, sizeof ep, "%s.ack", sh.cfg.endpoint);
    if (zmq_setsockopt(sh.ack, ZMQ_LINGER, &linger, sizeof linger) != 0 ||
        zmq_setsockopt(sh.ack, ZMQ_SUBSCRIBE, topic, sizeof topic) != 0 || zmq_connect(sh.ack, ep) != 0) {
        zmq_close(sh.ack);
        sh.ack = NULL;
    }
}

static int open_socket(void)
{
    int hwm = SNDHWM, one = 1;
    sh.sock = zmq_socket(sh.zctx, ZMQ_PUSH);
    if (!sh.sock)
        return -1;
    zmq_setsockopt(sh.sock, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(sh.sock, ZMQ_IMMEDIATE, &one, sizeof one);
    if (zmq_connect(sh.sock, sh.cfg.endpoint) != 0) {
        nsc_log(NSC_LOG_WARN, "ncclscope: cannot connect to %s: %s", sh.cfg.endpoint,
                zmq_strerror(errno));
        zmq_close(sh.sock);
        sh.sock = NULL;
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
    if (sh.mem)
        return 0;
    /* ZeroMQ copies each batch it accepts and holds up to SNDHWM of them (and
     * one being written): that is part of this half of the budget too */
    uint64_t half = bytes / 2 / BATCH_CAP;
    sh.nbatches = half > SNDHWM + 1 ? half - SNDHWM - 1 : 0;
    if (sh.nbatches < MIN_BACKLOG)
        sh.nbatches = MIN_BACKLOG;
    sh.mem = malloc(sh.nbatches * BATCH_CAP);
    sh.ring = calloc(sh.nbatches, sizeof *sh.ring);
    sh.spare = calloc(sh.nbatches, sizeof *sh.spare);
    if (!sh.mem || !sh.ring || !sh.spare || nsc_hold_init(HOLD_CAP) != 0) {
        nsc_shipper_release();
        return -1;
    }
    spares_reset();
    return 0;
}

int nsc_shipper_start(const nsc_config *cfg)
{
    if (sh.running)
        return 0;
    sh.cfg = *cfg;
    sh.shed.budget_ppm = cfg->budget_ppm;
    if (backlog_alloc(cfg->buffer_bytes) != 0)
        return -1;
    if (!sh.stream)
        sh.stream = new_stream();
    sh.zctx = zmq_ctx_new();
    if (!sh.zctx)
        return -1;
    int blocky = 0;
    zmq_ctx_set(sh.zctx, ZMQ_BLOCKY, blocky);
    if (open_socket() != 0) {
        zmq_ctx_term(sh.zctx);
        sh.zctx = NULL;
        return -1;
    }
    atomic_store(&sh.stop, 0);
    sh.idle_ns = IDLE_SLEEP_NS;
    if (nsc_g_cost_counter)
        nsc_clock_start(&sh.clock); /* recalibrated only where it stamps events */
    nsc_cost_calibrate(sh.clock.ns_per_tick);
    sh.last_begin = sh.defs_reset = sh.calibrated_at = nsc_mono_ns();
    /* Signals belong to the application's threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&sh.thread, NULL, ship_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        zmq_close(sh.sock);
        sh.sock = NULL;
        if (sh.ack)
            zmq_close(sh.ack);
        sh.ack = NULL;
        zmq_ctx_term(sh.zctx);
        sh.zctx = NULL;
        return -1;
    }
    pthread_setname_np(sh.thread, "ncclscope-ship");
    sh.running = 1;
    return 0;
}

void nsc_shipper_stop(void)
{
    if (!sh.running)
        return;
    atomic_store_explicit(&sh.stop, 1, memory_order_release);
    pthread_join(sh.thread, NULL);
    zmq_ctx_term(sh.zctx);
    sh.zctx = NULL;
    sh.running = 0;
}

int nsc_shipper_running(void)
{
    return sh.running;
}

/* Plain stores only: this runs in an atfork child handler. The parent's
 * context and socket are not ours to close (terminating the context would
 * wait forever for I/O threads that do not exist here), and its thread was
 * not copied. */
void nsc_shipper_forget(void)
{
    sh.zctx = NULL;
    sh.sock = sh.ack = NULL;
    sh.running = 0;
}

void nsc_shipper_reset_stream(void)
{
    sh.acked = sh.head = sh.tail = 0;
    if (sh.spare)
        spares_reset();
    sh.open = 0;
    sh.seq = 0;
    sh.stream = 0;  /* a new one at start: the parent's acknowledgements are not ours */
    sh.acks = 0;
    sh.failing_since = 0;
    reset_defs(0);
    nsc_hold_reset();
}

void nsc_shipper_release(void)
{
    nsc_hold_release();
    free(sh.mem);
    free(sh.ring);
    free(sh.spare);
    sh.mem = NULL;
    sh.ring = NULL;
    sh.spare = NULL;
    sh.nspare = 0;
    sh.nbatches = 0;
}
