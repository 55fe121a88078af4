/* ingest.c: the ROUTER socket, probes, decoding, acks (see ingest.h). */
#include "ingest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "curve.h"
#include "fetch.h"
#include "item.h"
#include "logsafe.h"
#include "writer.h"

#define BURST 256  /* messages per loop turn before the acks get a turn */
#define MONITOR_ENDPOINT "inproc://nsc-ingest-monitor"
#define HANDSHAKE_FAILED                                                                   \
    (ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | \
     ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)

/* One sender's batches inside the collector: from decoding until the
 * writer releases them (acknowledged or not). The ingest thread assigns
 * slots; a slot at zero is free for another routing id. */
typedef struct peer {
    uint8_t ident[256];
    size_t len;
    atomic_uint_fast64_t inflight;
} peer;

struct nsc_ingest {
    nsc_collector *c;
    void *router, *pair, *monitor;
    pthread_t thread;
    nsc_dec_limits lim;
    peer *peers;      /* cfg.max_agents */
    size_t npeers;    /* slots ever used */
    uint64_t log_ns, log_suppressed;
    uint64_t hs_log_ns, hs_suppressed;  /* rate limit of handshake failure messages */
};

static void reject(nsc_ingest *in, const char *agent, unsigned reason)
{
    nsc_stats_reject(&in->c->stats, agent, reason);
    uint64_t now = nsc_mono_ns();
    if (now - in->log_ns < 1000000000ull && in->log_ns) {
        in->log_suppressed++;
        return;
    }
    char id[NSC_LOGSAFE_ID];
    fprintf(stderr, "ncclscope-collector: rejected a message from agent '%s': %s (%llu more not logged)\n",
            nsc_logsafe(id, sizeof id, agent), nsc_rej_name(reason), (unsigned long long)in->log_suppressed);
    in->log_ns = now;
    in->log_suppressed = 0;
}

static void count_failure(atomic_uint_fast64_t *send_failures)
{
    atomic_fetch_add_explicit(send_failures, 1, memory_order_relaxed);
}

static void to_writer(nsc_ingest *in, nsc_item *it)
{
    atomic_fetch_add_explicit(&in->c->stats.queue_depth, 1, memory_order_relaxed);
    if (zmq_send(in->pair, &it, sizeof it, 0) != (int)sizeof it) {
        atomic_fetch_sub_explicit(&in->c->stats.queue_depth, 1, memory_order_relaxed);
        count_failure(&in->c->stats.send_failures);
        nsc_item_free(it);
    }
}

/* Send one message to the agent of routing id; a failure is counted. */
static int send_to(nsc_ingest *in, const zmq_msg_t *id, const uint8_t *buf, size_t n)
{
    if (zmq_send(in->router, zmq_msg_data((zmq_msg_t *)id), zmq_msg_size((zmq_msg_t *)id), ZMQ_SNDMORE) >= 0 &&
        zmq_send(in->router, buf, n, 0) >= 0)
        return 0;
    count_failure(&in->c->stats.send_failures);
    return -1;
}

/* The UDP clock port, offered before the answer so that the probes its
 * answer sends already take the faster way (uclock.h). */
static void offer_udp(nsc_ingest *in, const zmq_msg_t *id, const char *agent)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_udp u = {.port = (uint32_t)in->c->udp_port};
    memcpy(u.agent, agent, sizeof u.agent);
    send_to(in, id, buf, nsc_a2c_encode_udp(&u, buf));
}

static void answer_probe(nsc_ingest *in, const zmq_msg_t *id, nsc_a2c_probe *p, uint64_t t2)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    if (in->c->udp_port)
        offer_udp(in, id, p->agent);
    p->t2 = t2;
    p->t3 = nsc_mono_ns();
    size_t n = nsc_a2c_encode_probe(p, buf);
    if (send_to(in, id, buf, n) == 0)
        atomic_fetch_add_explicit(&in->c->stats.probes, 1, memory_order_relaxed);
}

/* Tell the agent that batch seq will never be stored, so that it stops
 * sending it (an ack that never comes would have it sent again forever). */
static void answer_reject(nsc_ingest *in, const zmq_msg_t *id, const char *agent, uint64_t seq, unsigned reason)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_reject r = {.seq = seq};
    snprintf(r.agent, sizeof r.agent, "%s", agent);
    snprintf(r.reason, sizeof r.reason, "%s", nsc_rej_name(reason));
    send_to(in, id, buf, nsc_a2c_encode_reject(&r, buf));
}

static void take_sample(nsc_ingest *in, const nsc_a2c_probe *p, uint64_t t)
{
    nsc_item *it = calloc(1, sizeof *it);
    if (!it)
        return;
    it->kind = NSC_ITEM_SAMPLE;
    it->sample = *p;
    it->recv_ns = t;
    to_writer(in, it);
}

/* The routing id's in-flight count, a free slot taken for a new one; NULL
 * when max_agents senders have batches in flight. */
static atomic_uint_fast64_t *peer_of(nsc_ingest *in, const uint8_t *ident, size_t len)
{
    peer *free_slot = NULL;
    for (size_t i = 0; i < in->npeers; i++) {
        peer *p = &in->peers[i];
        if (p->len == len && memcmp(p->ident, ident, len) == 0)
            return &p->inflight;
        if (!free_slot && atomic_load_explicit(&p->inflight, memory_order_relaxed) == 0)
            free_slot = p;
    }
    if (!free_slot && in->npeers < in->c->cfg.max_agents)
        free_slot = &in->peers[in->npeers++];
    if (!free_slot)
        return NULL;
    memcpy(free_slot->ident, ident, len);
    free_slot->len = len;
    return &free_slot->inflight;
}

/* The batch counts against its sender's credit: 0, or -1 when the sender
 * has credit batches in the collector already (it ignored the credit, or
 * resent before they were released): refused, not acknowledged, so a
 * well-behaved agent sends it again later. */
static int take_credit(nsc_ingest *in, nsc_item *it)
{
    atomic_uint_fast64_t *n = peer_of(in, it->ident, it->ident_len);
    if (!n || atomic_load_explicit(n, memory_order_relaxed) >= in->c->cfg.credit)
        return -1;
    atomic_fetch_add_explicit(n, 1, memory_order_relaxed);
    it->inflight = n;
    return 0;
}

static void take_batch(nsc_ingest *in, zmq_msg_t *id, zmq_msg_t *body, uint64_t t)
{
    unsigned reason;
    char agent[64];
    uint64_t seq, applied = 0, unplaced = 0;
    int named = nsc_a2c_batch_name(zmq_msg_data(body), zmq_msg_size(body), agent, &seq) == NSC_WIRE_OK;
    nsc_item *it = nsc_item_batch(body, &in->lim, (int32_t)in->c->cfg.max_ranks, &reason, agent, &applied,
                                  &unplaced);
    if (!it) {
        reject(in, agent, reason);
        /* out of memory is ours, not the batch's: no answer, it comes again */
        if (named && reason != NSC_REJ_A2C - NSC_WIRE_NOMEM && reason != NSC_REJ_SECTION - NSC_WIRE_NOMEM)
            answer_reject(in, id, agent, seq, reason);
        return;
    }
    if (zmq_msg_size(id) > sizeof it->ident) {
        reject(in, agent, NSC_REJ_MULTIPART);
        nsc_item_free(it);
        return;
    }
    it->ident_len = zmq_msg_size(id);
    memcpy(it->ident, zmq_msg_data(id), it->ident_len);
    if (take_credit(in, it)) {
        reject(in, agent, NSC_REJ_CREDIT);
        nsc_item_free(it);
        return;
    }
    it->recv_ns = t;
    nsc_cfetch_agent(in->c->fetch, it);
    atomic_fetch_add_explicit(&in->c->stats.aliases_applied, applied, memory_order_relaxed);
    atomic_fetch_add_explicit(&in->c->stats.aliases_unplaced, unplaced, memory_order_relaxed);
    to_writer(in, it);
}

static void emit_detail(void *arg, nsc_item *it)
{
    nsc_ingest *in = arg;
    it->recv_ns = nsc_mono_ns();
    to_writer(in, it);
}

/* A chunk of detail an agent was asked for: its batches to the writer. */
static void take_detail(nsc_ingest *in, zmq_msg_t *body)
{
    nsc_stats *s = &in->c->stats;
    uint64_t bad = 0;
    int n = nsc_cfetch_take(in->c->fetch, zmq_msg_data(body), zmq_msg_size(body), &in->lim,
                            (int32_t)in->c->cfg.max_ranks, emit_detail, in, &bad);
    if (n < 0) {
        reject(in, "unknown", NSC_REJ_A2C - n);
        bad++;
    } else {
        atomic_fetch_add_explicit(&s->detail_chunks, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->detail_pieces, (uint64_t)n, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&s->detail_bad, bad, memory_order_relaxed);
}

/* One message from an agent: [routing id, body]. */
static void take_message(nsc_ingest *in, zmq_msg_t *id, zmq_msg_t *body, uint64_t t)
{
    const uint8_t *p = zmq_msg_data(body);
    size_t len = zmq_msg_size(body);
    int kind = nsc_a2c_kind(p, len);
    nsc_a2c_probe pr;
    char agent[64] = "unknown";
    int rc;
    switch (kind) {
    case NSC_A2C_BATCH:
        take_batch(in, id, body, t);
        return;
    case NSC_A2C_DETAIL:
        take_detail(in, body);
        return;
    case NSC_A2C_PROBE:
    case NSC_A2C_SAMPLE:
        if ((rc = nsc_a2c_decode_probe(p, len, &pr)))
            reject(in, agent, NSC_REJ_A2C - rc);
        else if (pr.kind != kind)
            reject(in, pr.agent, NSC_REJ_KIND);
        else if (kind == NSC_A2C_PROBE)
            answer_probe(in, id, &pr, t);
        else
            take_sample(in, &pr, t);
        return;
    default:
        reject(in, agent, kind < 0 ? NSC_REJ_A2C - kind : NSC_REJ_KIND);
    }
}

/* Read one whole message: 0 with id and body, 1 for a message of another
 * shape (read, rejected), -1 when nothing is waiting. */
static int read_agent(nsc_ingest *in, zmq_msg_t *id, zmq_msg_t *body)
{
    if (zmq_msg_recv(id, in->router, ZMQ_DONTWAIT) < 0)
        return -1;
    int parts = 1, more = zmq_msg_more(id);
    if (more) {
        zmq_msg_recv(body, in->router, 0);
        more = zmq_msg_more(body);
        parts++;
    }
    while (more) {  /* extra parts are read and dropped */
        zmq_msg_t extra;
        zmq_msg_init(&extra);
        zmq_msg_recv(&extra, in->router, 0);
        more = zmq_msg_more(&extra);
        zmq_msg_close(&extra);
        parts++;
    }
    atomic_fetch_add_explicit(&in->c->stats.messages, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&in->c->stats.bytes, zmq_msg_size(body), memory_order_relaxed);
    if (parts == 2)
        return 0;
    reject(in, "unknown", NSC_REJ_MULTIPART);
    return 1;
}

static void drain_agents(nsc_ingest *in)
{
    int rc = 0;
    for (int i = 0; i < BURST && rc >= 0; i++) {
        zmq_msg_t id, body;
        zmq_msg_init(&id);
        zmq_msg_init(&body);
        rc = read_agent(in, &id, &body);
        if (rc == 0)
            take_message(in, &id, &body, nsc_mono_ns());
        zmq_msg_close(&id);
        zmq_msg_close(&body);
    }
}

/* Read and drop what is left of a message on s after part m (closed here). */
static void drop_rest(void *s, zmq_msg_t *m)
{
    int more = zmq_msg_more(m);
    zmq_msg_close(m);
    while (more) {
        zmq_msg_init(m);
        more = zmq_msg_recv(m, s, 0) >= 0 && zmq_msg_more(m);
        zmq_msg_close(m);
    }
}

int nsc_ingest_pass_ack(void *from, void *to, atomic_uint_fast64_t *send_failures)
{
    zmq_msg_t m;
    zmq_msg_init(&m);
    if (zmq_msg_recv(&m, from, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&m);
        return -1;
    }
    if (!zmq_msg_more(&m)) {
        zmq_msg_close(&m);
        return 1;
    }
    /* a sent part belongs to ZeroMQ; one that failed is still ours */
    for (int more = 1; more;) {
        if (zmq_msg_send(&m, to, ZMQ_SNDMORE) < 0) {
            count_failure(send_failures);
            drop_rest(from, &m);
            return 0;
        }
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, from, 0) < 0) {
            zmq_msg_close(&m);
            return 0;
        }
        more = zmq_msg_more(&m);
    }
    if (zmq_msg_send(&m, to, 0) < 0) {
        count_failure(send_failures);
        zmq_msg_close(&m);
    }
    return 0;
}

/* Acks from the writer to the agents; 1 when the writer said "done". */
static int pass_acks(nsc_ingest *in)
{
    int rc;
    while ((rc = nsc_ingest_pass_ack(in->pair, in->router, &in->c->stats.send_failures)) == 0)
        ;
    return rc == 1;
}

/* One socket monitor event: [u16 event, u32 value][peer or endpoint address].
 * Handshake failures (a CURVE peer with a wrong server key, a plain peer on a
 * CURVE socket, a garbled greeting) are counted and logged once a second. */
static void take_monitor_event(nsc_ingest *in)
{
    uint8_t head[6];
    char addr[256] = "";
    int n = zmq_recv(in->monitor, head, sizeof head, ZMQ_DONTWAIT);
    if (n < 0)
        return;
    int more = 0;
    size_t more_len = sizeof more;
    zmq_getsockopt(in->monitor, ZMQ_RCVMORE, &more, &more_len);
    if (more) {
        int a = zmq_recv(in->monitor, addr, sizeof addr - 1, 0);
        addr[a > 0 ? (a < (int)sizeof addr ? a : (int)sizeof addr - 1) : 0] = 0;
    }
    uint16_t event;
    uint32_t value;
    memcpy(&event, head, sizeof event);
    memcpy(&value, head + 2, sizeof value);
    if (n != (int)sizeof head || !(event & HANDSHAKE_FAILED))
        return;
    atomic_fetch_add_explicit(&in->c->stats.handshake_failures, 1, memory_order_relaxed);
    uint64_t now = nsc_mono_ns();
    if (in->hs_log_ns && now - in->hs_log_ns < 1000000000ull) {
        in->hs_suppressed++;
        return;
    }
    fprintf(stderr, "ncclscope-collector: a peer's handshake on %s failed (%s, code 0x%x%s): "
                    "nothing from it is accepted (%llu more not logged)\n",
            addr[0] ? addr : "the agents' socket",
            event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? "protocol/CURVE error"
            : event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH   ? "refused by authentication"
                                                         : "no detail",
            value, in->c->cfg.curve_secret_file[0] ? ", is its collector_key this collector's?" : "",
            (unsigned long long)in->hs_suppressed);
    in->hs_log_ns = now;
    in->hs_suppressed = 0;
}

static void *run(void *arg)
{
    nsc_ingest *in = arg;
    int stopping = 0;
    zmq_pollitem_t pi[3] = {{in->router, 0, ZMQ_POLLIN, 0}, {in->pair, 0, ZMQ_POLLIN, 0},
                            {in->monitor, 0, ZMQ_POLLIN, 0}};
    for (;;) {
        if (!stopping && atomic_load(&in->c->stop)) {
            nsc_item *none = NULL;
            stopping = zmq_send(in->pair, &none, sizeof none, 0) == (int)sizeof none;
            if (!stopping)  /* tried again next turn: the writer must hear it */
                count_failure(&in->c->stats.send_failures);
            pi[0].events = 0;  /* stop accepting */
        }
        if (zmq_poll(pi, 3, 100) < 0)
            continue;
        if (pi[2].revents & ZMQ_POLLIN)
            take_monitor_event(in);
        if (pi[1].revents & ZMQ_POLLIN && pass_acks(in))
            break;
        if (pi[0].revents & ZMQ_POLLIN)
            drain_agents(in);
        atomic_fetch_add_explicit(&in->c->stats.detail_fetches, nsc_cfetch_send(in->c->fetch, in->router),
                                  memory_order_relaxed);
    }
    return NULL;
}

static int bound_port(void *sock)
{
    char ep[256];
    size_t n = sizeof ep;
    if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, ep, &n))
        return -1;
    const char *colon = strrchr(ep, ':');
    return colon ? atoi(colon + 1) : -1;
}

/* CURVE server with the secret key of curve_secret_file, if set. */
static int setup_curve(nsc_collector *c, void *router)
{
    if (!c->cfg.curve_secret_file[0])
        return 0;
    nsc_curve_pair pair;
    char err[NSC_CURVE_ERR_MAX];
    int on = 1;
    if (nsc_curve_load_secret(c->cfg.curve_secret_file, &pair, err)) {
        fprintf(stderr, "ncclscope-collector: curve_secret_file: %s\n", err);
        return -1;
    }
    int rc = zmq_setsockopt(router, ZMQ_CURVE_SERVER, &on, sizeof on) ||
             zmq_setsockopt(router, ZMQ_CURVE_SECRETKEY, pair.secret_key, NSC_CURVE_KEY_LEN);
    if (rc)
        fprintf(stderr, "ncclscope-collector: CURVE: %s\n", zmq_strerror(zmq_errno()));
    else
        fprintf(stderr, "ncclscope-collector: CURVE on, server public key %s\n", pair.public_key);
    memset(&pair, 0, sizeof pair);
    return rc ? -1 : 0;
}

/* The ROUTER's handshake failures come to in->monitor. */
static int setup_monitor(nsc_ingest *in)
{
    in->monitor = zmq_socket(in->c->zctx, ZMQ_PAIR);
    return !in->monitor || zmq_socket_monitor(in->router, MONITOR_ENDPOINT, HANDSHAKE_FAILED) ||
                   zmq_connect(in->monitor, MONITOR_ENDPOINT)
               ? -1
               : 0;
}

static void close_sockets(nsc_ingest *in)
{
    if (in->router)
        zmq_socket_monitor(in->router, NULL, 0);
    if (in->monitor)
        zmq_close(in->monitor);
    if (in->router)
        zmq_close(in->router);
    if (in->pair)
        zmq_close(in->pair);
}

int nsc_ingest_start(nsc_collector *c, nsc_ingest **out)
{
    nsc_ingest *in = calloc(1, sizeof *in);
    if (!in)
        return -1;
    in->c = c;
    if (!(in->peers = calloc(c->cfg.max_agents, sizeof *in->peers))) {
        free(in);
        return -1;
    }
    in->lim.max_msg = (size_t)c->cfg.max_msg_mb << 20;
    int64_t maxmsg = (int64_t)in->lim.max_msg;
    int linger = 2000, hwm = 0;
    in->router = zmq_socket(c->zctx, ZMQ_ROUTER);
    in->pair = zmq_socket(c->zctx, ZMQ_PAIR);
    if (!in->router || !in->pair || setup_curve(c, in->router) || setup_monitor(in) ||
        zmq_setsockopt(in->router, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg) ||
        zmq_setsockopt(in->router, ZMQ_LINGER, &linger, sizeof linger) ||
        zmq_setsockopt(in->pair, ZMQ_SNDHWM, &hwm, sizeof hwm) ||
        zmq_setsockopt(in->pair, ZMQ_RCVHWM, &hwm, sizeof hwm) ||
        zmq_bind(in->router, c->cfg.listen) || zmq_connect(in->pair, NSC_WRITER_ENDPOINT) ||
        (c->zmq_port = bound_port(in->router)) < 0 || pthread_create(&in->thread, NULL, run, in)) {
        fprintf(stderr, "ncclscope-collector: listen %s: %s\n", c->cfg.listen, zmq_strerror(zmq_errno()));
        close_sockets(in);
        free(in->peers);
        free(in);
        return -1;
    }
    *out = in;
    return 0;
}

void nsc_ingest_join(nsc_ingest *in)
{
    pthread_join(in->thread, NULL);
    close_sockets(in);
    free(in->peers);
    free(in);
}
