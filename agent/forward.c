/* forward.c: the spool's way to the collector (see forward.h). */
#include "forward.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "a2c.h"
#include "endpoints.h"
#include "udpprobe.h"

#define MAX_ACKS_PER_RUN 4096
#define CLOCK_SAMPLES 16     /* the offset reported is the min-RTT one of these */
#define FAST_PROBES 5        /* probes at a tenth of the interval after start */
#define FOLLOW_UPS 4         /* probes on the warm path after each scheduled one */
#define HEARTBEAT_MS 1000    /* ZMTP heartbeats find a peer that vanished silently */
#define STALE_PROBE_NS 10000000000ull

typedef struct flight {
    uint64_t seq, sent_ns, bytes;
    int acked;
} flight;

typedef struct clock_sample {
    int64_t offset_ns;
    uint64_t rtt_ns;
} clock_sample;

struct nsc_fwd {
    nsc_fwd_cfg cfg;
    char agent[64], host[64];
    nsc_spool *spool;
    nsc_endpoints eps;
    uint32_t cur;              /* the endpoint in use */
    unsigned links;            /* sockets opened so far: names their monitors */
    uint64_t down_since;       /* when the connection in use was last lost (or tried first) */
    int asked;                 /* a batch or probe went since the collector in use last spoke */
    uint64_t asked_ns;         /* the first of them */
    void *zctx, *sock, *mon;   /* own context: its I/O thread never delays ingest */
    flight *ring;              /* batches sent since the last rewind, in sequence order */
    uint32_t head, n, cap, unacked;
    uint64_t unacked_bytes;    /* bytes of the unacknowledged batches: ZeroMQ holds copies */
    uint64_t next_send;        /* sending resumes at the first spooled seq >= this */
    uint64_t high_sent;        /* highest seq ever sent + 1: lower sends are resends */
    uint64_t now;              /* of the current run */
    uint64_t bad_seq;          /* the batch send_one found corrupt */
    int bad_err;               /* and why (nsc_wire_err) */
    uint64_t *acks;            /* acknowledged seqs waiting for deletion */
    size_t nacks;
    uint64_t probe_id, next_probe_ns;
    uint64_t lead_id;          /* the probe whose answer sends a follow-up */
    uint32_t follow_left;      /* follow-ups the scheduled probe has still to send */
    uint64_t scheduled;        /* probes sent on the interval (follow-ups not counted) */
    uint64_t awaited_ns;       /* when the newest probe went; 0: answered (or none) */
    int answers_late;          /* the last answer came after probe_spin_ns: no waiting awake */
    nsc_udpp *udp;             /* the collector's UDP clock port, offered (NULL: probes over ZeroMQ) */
    int udp_off;               /* it failed: offers are ignored until the next connection */
    clock_sample recent[CLOCK_SAMPLES];
    uint32_t nrecent, at;
    nsc_fwd_stats st;
};

static int set_opts(const nsc_fwd *f, void *sock)
{
    int one = 1, zero = 0, hb = HEARTBEAT_MS, hbt = (int)(f->cfg.ack_timeout_ns / 1000000u);
    int64_t maxmsg = NSC_A2C_FETCH_MAX;
    struct { int opt; const void *v; size_t len; } o[] = {
        {ZMQ_IMMEDIATE, &one, sizeof one},   /* queue only to a live connection: nothing waits in a dead pipe */
        {ZMQ_LINGER, &zero, sizeof zero},    /* unacknowledged batches are in the spool anyway */
        {ZMQ_RECONNECT_IVL, &f->cfg.reconnect_ms, sizeof(int)},
        {ZMQ_RECONNECT_IVL_MAX, &f->cfg.reconnect_max_ms, sizeof(int)},
        {ZMQ_HEARTBEAT_IVL, &hb, sizeof hb},
        {ZMQ_HEARTBEAT_TIMEOUT, &hbt, sizeof hbt},
        {ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg},  /* the collector sends acks, probes and fetches only */
    };
    for (size_t i = 0; i < sizeof o / sizeof o[0]; i++)
        if (zmq_setsockopt(sock, o[i].opt, o[i].v, o[i].len) != 0)
            return -1;
    if (f->cfg.server_key && (zmq_setsockopt(sock, ZMQ_CURVE_SERVERKEY, f->cfg.server_key, NSC_CURVE_KEY_LEN) ||
                              zmq_setsockopt(sock, ZMQ_CURVE_PUBLICKEY, f->cfg.client->public_key, NSC_CURVE_KEY_LEN) ||
                              zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, f->cfg.client->secret_key, NSC_CURVE_KEY_LEN)))
        return -1;
    return 0;
}

/* Stop monitoring and close the link's sockets (either may be NULL). */
static void close_link(void *sock, void *mon)
{
    if (sock) {
        zmq_socket_monitor(sock, NULL, 0);
        zmq_close(sock);
    }
    if (mon) {
        int zero = 0;
        zmq_setsockopt(mon, ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(mon);
    }
}

/* A fresh DEALER with its options and monitor in place of the current ones
 * (kept if this fails), connected to endpoint cur. Each link's monitor has
 * its own inproc name, so no event of an old link reaches a new one (with no
 * endpoint yet, a name not resolved, it stays unconnected). Returns 0, or -1
 * with err; a failed connect leaves the new link unconnected. */
static int open_link(nsc_fwd *f, char err[256])
{
    char ep[80];
    snprintf(ep, sizeof ep, "inproc://nsc-fwd-monitor-%p-%u", (void *)f, ++f->links);
    int events = ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    void *sock = zmq_socket(f->zctx, ZMQ_DEALER), *mon = NULL;
    if (!sock || set_opts(f, sock) != 0 || zmq_socket_monitor(sock, ep, events) != 0 ||
        !(mon = zmq_socket(f->zctx, ZMQ_PAIR)) || zmq_connect(mon, ep) != 0) {
        snprintf(err, 256, "collector socket: %s", zmq_strerror(errno));
        close_link(sock, mon);
        return -1;
    }
    close_link(f->sock, f->mon);
    f->sock = sock;
    f->mon = mon;
    if (f->eps.n && zmq_connect(sock, f->eps.ep[f->cur]) != 0) {
        snprintf(err, 256, "collector '%.160s': %s", f->eps.ep[f->cur], zmq_strerror(errno));
        return -1;
    }
    return 0;
}

/* Credit before the first ack: the window within the ring. */
static uint64_t first_credit(const nsc_fwd *f)
{
    return f->cfg.window < f->cap ? (f->cfg.window ? f->cfg.window : 1) : f->cap;
}

nsc_fwd *nsc_fwd_new(const nsc_fwd_cfg *cfg, nsc_spool *spool, char err[256])
{
    nsc_fwd *f = calloc(1, sizeof *f);
    uint32_t cap = cfg->max_inflight ? cfg->max_inflight : 1;
    if (!f || !(f->ring = calloc(cap, sizeof *f->ring)) || !(f->acks = malloc(MAX_ACKS_PER_RUN * sizeof *f->acks))) {
        snprintf(err, 256, "out of memory");
        nsc_fwd_free(f);
        return NULL;
    }
    f->cfg = *cfg;
    f->cap = cap;
    f->spool = spool;
    snprintf(f->agent, sizeof f->agent, "%s", cfg->agent_id);
    snprintf(f->host, sizeof f->host, "%s", cfg->host);
    f->cfg.agent_id = f->agent;
    f->cfg.host = f->host;
    f->st.credit = first_credit(f);
    f->down_since = cfg->now();
    if (nsc_endpoints_parse(cfg->endpoint, &f->eps, err) != 0) {
        nsc_fwd_free(f);
        return NULL;
    }
    if (!(f->zctx = zmq_ctx_new())) {
        snprintf(err, 256, "collector socket: %s", zmq_strerror(errno));
        nsc_fwd_free(f);
        return NULL;
    }
    if (open_link(f, err) != 0) {
        nsc_fwd_free(f);
        return NULL;
    }
    return f;
}

void nsc_fwd_free(nsc_fwd *f)
{
    if (!f)
        return;
    nsc_udpp_close(f->udp);
    close_link(f->sock, f->mon);
    if (f->zctx)
        zmq_ctx_term(f->zctx);
    free(f->ring);
    free(f->acks);
    free(f);
}

void *nsc_fwd_socket(const nsc_fwd *f) { return f->sock; }
void *nsc_fwd_monitor(const nsc_fwd *f) { return f->mon; }
int nsc_fwd_udp_fd(const nsc_fwd *f) { return f->udp ? nsc_udpp_fd(f->udp) : -1; }
const char *nsc_fwd_endpoint(const nsc_fwd *f) { return f->eps.n ? f->eps.ep[f->cur] : f->cfg.endpoint; }

static flight *at(nsc_fwd *f, uint32_t i) { return &f->ring[(f->head + i) % f->cap]; }

/* Forget what was sent: the next send starts again at the oldest spooled batch. */
static void rewind_all(nsc_fwd *f, uint64_t *reason)
{
    (*reason)++;
    f->head = f->n = f->unacked = 0;
    f->unacked_bytes = 0;
    f->next_send = 0;
}

/* Delete what was acknowledged, in one transaction. */
static void delete_acked(nsc_fwd *f)
{
    if (f->nacks == 0)
        return;
    uint64_t deleted = 0;
    nsc_spool_tally gone = {0, 0};
    if (nsc_spool_delete(f->spool, f->acks, f->nacks, &deleted, &gone) != 0) {
        f->st.delete_errors++;  /* they stay spooled; a rewind sends them again and they are acked again */
    } else {
        f->st.batches_acked += deleted;
        f->st.events_acked += gone.events;
        f->st.acks_duplicate += f->nacks - deleted;
    }
    f->nacks = 0;
}

/* Batch seq is answered (acknowledged or rejected): it leaves the flight. */
static void land(nsc_fwd *f, uint64_t seq)
{
    for (uint32_t i = 0; i < f->n; i++) {
        flight *fl = at(f, i);
        if (fl->seq == seq && !fl->acked) {
            fl->acked = 1;
            f->unacked--;
            f->unacked_bytes -= fl->bytes;
            break;
        }
    }
    while (f->n && at(f, 0)->acked) {
        f->head = (f->head + 1) % f->cap;
        f->n--;
    }
}

static void take_ack(nsc_fwd *f, const nsc_a2c_ack *a)
{
    land(f, a->seq);
    f->st.credit = a->credit == 0 ? 1 : a->credit < f->cap ? a->credit : f->cap;
    if (f->nacks == MAX_ACKS_PER_RUN)
        delete_acked(f);
    f->acks[f->nacks++] = a->seq;
}

/* Keep the sample and report the min-RTT one of the recent samples. */
static void keep_sample(nsc_fwd *f, const nsc_a2c_probe *p)
{
    /* Differences of two clocks taken modulo 2^64 read as signed: any real offset fits. */
    clock_sample s = {((int64_t)(p->t2 - p->t1) + (int64_t)(p->t3 - p->t4)) / 2, (p->t4 - p->t1) - (p->t3 - p->t2)};
    f->recent[f->at] = s;
    f->at = (f->at + 1) % CLOCK_SAMPLES;
    if (f->nrecent < CLOCK_SAMPLES)
        f->nrecent++;
    clock_sample best = f->recent[0];
    for (uint32_t i = 1; i < f->nrecent; i++)
        if (f->recent[i].rtt_ns < best.rtt_ns)
            best = f->recent[i];
    f->st.have_clock = 1;
    f->st.offset_ns = best.offset_ns;
    f->st.rtt_ns = best.rtt_ns;
}

static int send_probe(nsc_fwd *f, int scheduled);

/* An answered probe, read at t4: report the sample to the collector. The
 * answer to a scheduled probe sends a follow-up at once: on an idle machine
 * (a VM's idle vCPU above all) the scheduled probe wakes the threads and CPUs
 * on its way out, but its answer finds them awake, which skews its offset by
 * half the difference; the follow-up travels both ways on the warm path, and
 * its lower round trip makes it the sample the models prefer. */
static void take_answer(nsc_fwd *f, nsc_a2c_probe *p, uint64_t t4)
{
    p->t4 = t4;
    if (p->id == 0 || p->id > f->probe_id || strcmp(p->host, f->host) != 0 || p->t1 > p->t4 ||
        p->t4 - p->t1 > STALE_PROBE_NS || p->t3 < p->t2 || p->t3 - p->t2 > p->t4 - p->t1) {
        f->st.bad_messages++;
        return;
    }
    if (p->id == f->probe_id)
        f->awaited_ns = 0;
    f->answers_late = p->t4 - p->t1 >= f->cfg.probe_spin_ns;
    p->kind = NSC_A2C_SAMPLE;
    uint8_t buf[NSC_A2C_SMALL_MAX];
    size_t len = nsc_a2c_encode_probe(p, buf);
    if (zmq_send(f->sock, buf, len, ZMQ_DONTWAIT) == (int)len)
        f->st.samples++;
    keep_sample(f, p);
    if (p->id == f->lead_id) {
        f->lead_id = 0;
        if (f->follow_left && send_probe(f, 0) == 0 && --f->follow_left)
            f->lead_id = f->probe_id;
    }
}

/* Follow-ups go over ZeroMQ again until the next offer (udp_off 0) or the
 * next connection (udp_off 1: the UDP way failed). */
static void drop_udp(nsc_fwd *f, int off)
{
    nsc_udpp_close(f->udp);
    f->udp = NULL;
    f->udp_off = off;
    f->st.udp_active = 0;
}

/* The collector's UDP clock port: follow-ups take it from now on. Not with
 * CURVE (a datagram is not authenticated), nor after it failed. */
static void take_offer(nsc_fwd *f, uint32_t port)
{
    if (f->cfg.server_key || f->udp_off || (f->udp && nsc_udpp_port(f->udp) == port))
        return;
    drop_udp(f, 0);
    if (!(f->udp = nsc_udpp_open(f->eps.ep[f->cur], port, &f->st.udp)))
        f->udp_off = 1;  /* a name, not an address: ZeroMQ it stays */
    f->st.udp_active = f->udp != NULL;
}

/* The UDP way lost NSC_UDPP_LOST_MAX probes in a row (a firewall, a
 * collector gone): back to the ZeroMQ probes. */
static void fall_back(nsc_fwd *f)
{
    drop_udp(f, 1);
    f->st.udp_fallbacks++;
    if (f->cfg.log)
        fprintf(f->cfg.log, "ncclscope-agent: collector %s: %d clock probes in a row unanswered on its UDP port; "
                            "probing over ZeroMQ until the next connection\n", f->eps.ep[f->cur], NSC_UDPP_LOST_MAX);
}

static void take_udp_answers(nsc_fwd *f)
{
    nsc_udpp_answer a;
    while (f->udp && nsc_udpp_recv(f->udp, f->cfg.now, &a)) {
        nsc_a2c_probe p = {.kind = NSC_A2C_PROBE, .id = a.id, .t1 = a.t1, .t2 = a.t2, .t3 = a.t3};
        memcpy(p.agent, f->agent, sizeof p.agent);
        memcpy(p.host, f->host, sizeof p.host);
        take_answer(f, &p, a.t4);
    }
}

/* Move batch seq to the spool's quarantine: it is never sent again, and what
 * it held is counted there. Logged once (the batch leaves the spool). Returns
 * 0, or -1 when the spool could not move it (it stays; tried again later). */
static int quarantine(nsc_fwd *f, uint64_t seq, const char *why, const char *detail)
{
    size_t len = 0;
    nsc_spool_tally t = {0, 0};
    int rc = nsc_spool_quarantine(f->spool, seq, &len, &t);
    if (rc == 0 && f->cfg.log)
        fprintf(f->cfg.log,
                "ncclscope-agent: spooled batch %" PRIu64 " (epoch %016" PRIx64 ", %zu bytes, %" PRIu64
                " events, %" PRIu64 " records) %s (%s): moved to the spool's quarantine, not sent again\n",
                seq, nsc_spool_epoch(f->spool), len, t.events, t.records, why, detail);
    return rc < 0 ? -1 : 0;
}

/* The collector will never store batch r->seq: it leaves the flight like an
 * acknowledged one, and the spool for its quarantine. */
static void take_reject(nsc_fwd *f, const nsc_a2c_reject *r)
{
    land(f, r->seq);
    f->st.rejected++;
    quarantine(f, r->seq, "rejected by the collector", r->reason);
}

static void take_message(nsc_fwd *f, const void *buf, size_t len, uint64_t read_ns)
{
    nsc_a2c_ack ack;
    nsc_a2c_reject rej;
    nsc_a2c_probe probe;
    nsc_a2c_fetch fetch;
    nsc_a2c_udp udp;
    int kind = nsc_a2c_kind(buf, len);
    if (kind == NSC_A2C_ACK && nsc_a2c_decode_ack(buf, len, &ack) == 0 && strcmp(ack.agent, f->agent) == 0) {
        f->asked = 0;
        take_ack(f, &ack);
    } else if (kind == NSC_A2C_REJECT && nsc_a2c_decode_reject(buf, len, &rej) == 0 &&
               strcmp(rej.agent, f->agent) == 0) {
        f->asked = 0;
        take_reject(f, &rej);
    } else if (kind == NSC_A2C_PROBE && nsc_a2c_decode_probe(buf, len, &probe) == 0 &&
               strcmp(probe.agent, f->agent) == 0) {
        f->asked = 0;
        take_answer(f, &probe, read_ns);
    } else if (kind == NSC_A2C_UDP && nsc_a2c_decode_udp(buf, len, &udp) == 0 && strcmp(udp.agent, f->agent) == 0)
        take_offer(f, udp.port);
    else if (kind == NSC_A2C_FETCH && f->cfg.fetch && nsc_a2c_decode_fetch(buf, len, &fetch) == 0 &&
             strcmp(fetch.agent, f->agent) == 0)
        nsc_fetch_take(f->cfg.fetch, &fetch, f->sock);
    else
        f->st.bad_messages++;
}

static void take_input(nsc_fwd *f)
{
    uint8_t buf[NSC_A2C_FETCH_MAX];
    take_udp_answers(f);
    for (;;) {
        int n = zmq_recv(f->sock, buf, sizeof buf, ZMQ_DONTWAIT);
        if (n < 0)
            break;
        uint64_t read_ns = f->cfg.now();  /* an answer's t4: before decoding it */
        int more = 0;
        size_t ml = sizeof more;
        zmq_getsockopt(f->sock, ZMQ_RCVMORE, &more, &ml);
        if (more) {  /* the collector sends single-part messages: skip the rest */
            f->st.bad_messages++;
            while (more && zmq_recv(f->sock, buf, sizeof buf, ZMQ_DONTWAIT) >= 0)
                zmq_getsockopt(f->sock, ZMQ_RCVMORE, &more, &ml);
            continue;
        }
        if (n > (int)sizeof buf)
            f->st.bad_messages++;
        else
            take_message(f, buf, (size_t)n, read_ns);
    }
    delete_acked(f);
}

/* Connection events: (re)connected means everything unacknowledged goes again. */
static void take_events(nsc_fwd *f)
{
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, f->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        uint16_t ev = 0;
        if (zmq_msg_size(&m) >= 2)
            memcpy(&ev, zmq_msg_data(&m), sizeof ev);
        while (zmq_msg_more(&m) && zmq_msg_recv(&m, f->mon, ZMQ_DONTWAIT) >= 0)
            ;  /* the endpoint frame */
        zmq_msg_close(&m);
        if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
            drop_udp(f, 0);  /* maybe another collector behind the address: it offers its port */
            f->st.connected = 1;
            f->st.connects++;
            f->asked = 0;
            rewind_all(f, &f->st.rewinds_connect);
            if (f->cfg.fetch)
                nsc_fetch_reset(f->cfg.fetch);
        } else if (ev == ZMQ_EVENT_DISCONNECTED) {
            f->st.disconnects += f->st.connected;
            if (f->st.connected)
                f->down_since = f->now;
            f->st.connected = 0;
        } else {
            f->st.handshake_failures++;
        }
    }
}

/* Room for one more batch: within the credit, the ring, and the byte bound
 * (one batch may always go, however large). */
static int may_send(const nsc_fwd *f)
{
    return f->unacked < f->st.credit && f->n < f->cap &&
           (f->unacked == 0 || f->unacked_bytes < f->cfg.max_inflight_bytes);
}

/* Something that asks for an answer went to the collector. */
static void asked(nsc_fwd *f)
{
    if (!f->asked)
        f->asked_ns = f->now;
    f->asked = 1;
}

/* Send e if the window allows; 1: stop here, 2: stop, e is corrupt (a byte
 * of it changed since it was spooled: its CRC does not match). */
static int send_one(void *arg, const nsc_spool_entry *e)
{
    nsc_fwd *f = arg;
    if (!may_send(f))
        return 1;
    if ((f->bad_err = nsc_a2c_batch_check(e->msg, e->len)) == NSC_WIRE_NOMEM)
        return 1;  /* ours, not the batch's: checked again next run */
    if (f->bad_err != NSC_WIRE_OK) {
        f->bad_seq = e->seq;
        return 2;
    }
    if (zmq_send(f->sock, e->msg, e->len, ZMQ_DONTWAIT) != (int)e->len)
        return 1;  /* no live connection or a full queue: try again next run */
    *at(f, f->n++) = (flight){e->seq, f->now, e->len, 0};
    f->unacked++;
    f->unacked_bytes += e->len;
    f->next_send = e->seq + 1;
    asked(f);
    f->st.batches_sent++;
    f->st.events_sent += e->tally.events;
    f->st.bytes_sent += e->len;
    if (e->seq < f->high_sent)
        f->st.batches_resent++;
    else
        f->high_sent = e->seq + 1;
    return 0;
}

/* Probe over ZeroMQ: its answer, read by the agent's loop, is the
 * collector's word that it lives (dead()). */
static int send_zmq_probe(nsc_fwd *f, uint64_t *t1)
{
    nsc_a2c_probe p = {.kind = NSC_A2C_PROBE, .id = f->probe_id + 1};
    memcpy(p.agent, f->agent, sizeof p.agent);
    memcpy(p.host, f->host, sizeof p.host);
    uint8_t buf[NSC_A2C_SMALL_MAX];
    p.t1 = *t1 = f->cfg.now();
    size_t len = nsc_a2c_encode_probe(&p, buf);
    if (zmq_send(f->sock, buf, len, ZMQ_DONTWAIT) != (int)len)
        return -1;
    asked(f);
    return 0;
}

/* A follow-up over UDP when offered, else (or when that fails) over
 * ZeroMQ. A scheduled probe always takes ZeroMQ: its answer is the
 * collector's heartbeat (dead()), which a UDP answer, from a thread of its
 * own, is not; and it brings the offer again. */
static int send_probe(nsc_fwd *f, int scheduled)
{
    uint64_t t1;
    int rc = -1;
    if (!scheduled && f->udp && (rc = nsc_udpp_send(f->udp, f->probe_id + 1, f->cfg.now, &t1)) != 0 &&
        nsc_udpp_failed(f->udp))
        fall_back(f);
    if (rc != 0 && send_zmq_probe(f, &t1) != 0)
        return -1;
    f->probe_id++;
    f->awaited_ns = t1;
    f->st.probes_sent++;
    return 0;
}

/* The probe the interval asks for; its answer sends the follow-up. */
static void send_scheduled_probe(nsc_fwd *f)
{
    if (send_probe(f, 1) != 0)
        return;
    f->lead_id = f->probe_id;
    f->follow_left = FOLLOW_UPS;
    f->scheduled++;
    f->next_probe_ns = f->now + (f->scheduled < FAST_PROBES ? f->cfg.probe_ns / 10 : f->cfg.probe_ns);
}

/* Why the collector in use is dead (NULL: it is not, or it is the only one
 * and nobody is told). */
static const char *dead(const nsc_fwd *f)
{
    if (f->eps.n == 0 || (f->eps.n < 2 && !f->cfg.lost))
        return NULL;
    if (!f->st.connected)
        return f->now - f->down_since >= f->cfg.failover_ns ? "no connection" : NULL;
    return f->asked && f->now - f->asked_ns >= f->cfg.failover_ns ? "no acknowledgement or answer" : NULL;
}

/* Use endpoint next with a fresh socket and none of the old one's state;
 * *moves counts it (a failover or a rebalance). */
static int move_to(nsc_fwd *f, uint32_t next, uint64_t *moves, char err[256])
{
    f->cur = next;
    f->st.collector_index = f->cur;
    (*moves)++;
    f->st.disconnects += f->st.connected;
    f->st.connected = 0;
    f->st.credit = first_credit(f);
    rewind_all(f, &f->st.rewinds_failover);
    f->nrecent = f->at = 0;
    f->st.have_clock = 0;
    f->lead_id = f->scheduled = f->next_probe_ns = 0;  /* the new collector's clock needs the fast probes */
    drop_udp(f, 0);
    f->asked = 0;
    f->down_since = f->now;
    if (f->cfg.fetch)
        nsc_fetch_reset(f->cfg.fetch);
    return open_link(f, err);
}

/* Give the collector in use up for the next one round the list. */
static void fail_over(nsc_fwd *f, const char *why)
{
    uint32_t from = f->cur;
    char err[256] = "";
    int rc = move_to(f, (f->cur + 1) % f->eps.n, &f->st.failovers, err);
    if (f->cfg.log)
        fprintf(f->cfg.log, "ncclscope-agent: collector %s (%u of %u): %s for %.1f s; moving to %s (%u of %u)%s%s\n",
                f->eps.ep[from], from + 1, f->eps.n, why, (double)f->cfg.failover_ns / 1e9, f->eps.ep[f->cur],
                f->cur + 1, f->eps.n, rc ? ": " : "", err);
}

/* The collector in use is dead: tell cfg.lost (a name is resolved again),
 * then move on, or with nowhere to go wait another failover_ns before
 * telling again. */
static void give_up(nsc_fwd *f, const char *why)
{
    if (f->cfg.lost)
        f->cfg.lost(f->cfg.lost_arg);
    if (f->eps.n >= 2) {
        fail_over(f, why);
        return;
    }
    f->down_since = f->asked_ns = f->now;
}

void nsc_fwd_set_endpoints(nsc_fwd *f, const nsc_endpoints *eps, uint64_t now_ns)
{
    char from[NSC_ENDPOINT_LEN] = "", err[256] = "";
    if (eps->n == 0)
        return;
    if (f->eps.n)
        memcpy(from, f->eps.ep[f->cur], sizeof from);
    uint32_t pick = nsc_endpoints_pick(f->agent, eps);
    int joined = nsc_endpoints_find(&f->eps, eps->ep[pick]) < 0;  /* the pick is new to this agent's list */
    int32_t keep = nsc_endpoints_find(eps, from);
    f->eps.n = eps->n;
    memcpy(f->eps.ep, eps->ep, sizeof eps->ep[0] * eps->n);
    if (keep >= 0 && (keep == (int32_t)pick || !joined)) {
        f->cur = (uint32_t)keep;
        f->st.collector_index = f->cur;
        return;
    }
    f->now = now_ns;
    const char *why = " resolved";
    int rc;
    if (keep >= 0) {  /* still there, but an address that joined outweighs it */
        why = " is still listed, but an address that joined outweighs it for this agent (a rebalance)";
        rc = move_to(f, pick, &f->st.rebalances, err);
    } else if (from[0]) {
        why = " is no longer among the name's addresses";
        rc = move_to(f, pick, &f->st.failovers, err);
    } else {  /* the first list: nothing to give up */
        f->cur = pick;
        f->st.collector_index = f->cur;
        f->down_since = f->now;
        rc = open_link(f, err);
    }
    if (f->cfg.log)
        fprintf(f->cfg.log, "ncclscope-agent: collector %s%s; using %s (%u of %u)%s%s\n", from[0] ? from : f->cfg.endpoint,
                why, f->eps.ep[f->cur], f->cur + 1, f->eps.n, rc ? ": " : "", err);
}

void nsc_fwd_input(nsc_fwd *f, uint64_t now_ns)
{
    f->now = now_ns;
    take_events(f);
    take_input(f);
}

int nsc_fwd_awaits_answer(const nsc_fwd *f, uint64_t now_ns)
{
    return f->awaited_ns && !f->answers_late && now_ns - f->awaited_ns < f->cfg.probe_spin_ns;
}

void nsc_fwd_run(nsc_fwd *f, uint64_t now_ns)
{
    nsc_fwd_input(f, now_ns);
    const char *why = dead(f);
    if (why)
        give_up(f, why);
    if (f->n && now_ns - at(f, 0)->sent_ns > f->cfg.ack_timeout_ns)
        rewind_all(f, &f->st.rewinds_timeout);
    if (f->st.connected && f->cfg.probe_ns && now_ns >= f->next_probe_ns)
        send_scheduled_probe(f);
    if (f->st.connected && f->cfg.fetch)
        nsc_fetch_run(f->cfg.fetch, f->sock);
    /* a corrupt batch stops the pass; moved aside, the pass goes on after it */
    while (f->st.connected && may_send(f) && f->next_send < nsc_spool_next_seq(f->spool) &&
           nsc_spool_foreach(f->spool, f->next_send, send_one, f) == 2 &&
           quarantine(f, f->bad_seq, "is corrupt", nsc_wire_strerror(f->bad_err)) == 0)
        f->st.corrupt++;
    f->st.inflight = f->unacked;
    f->st.inflight_bytes = f->unacked_bytes;
}

void nsc_fwd_stats_get(const nsc_fwd *f, nsc_fwd_stats *st) { *st = f->st; }
