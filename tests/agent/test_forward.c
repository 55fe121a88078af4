/* Unit tests for the forwarder (agent/forward.c) with a real spool and a real
 * ROUTER socket on loopback that speaks the collector's side of the protocol
 * (docs/protocol.md): batches leave in sequence order within the credit, only
 * acknowledged ones leave the spool, a reconnection, an ack timeout and a
 * restart re-send what is unacknowledged, malformed input is counted, a
 * corrupt or rejected batch goes to the quarantine once and is not sent again,
 * a probe answer becomes a sample (over ZeroMQ, or over the collector's UDP
 * clock port once offered, falling back when it does not answer), and a detail fetch is answered from a
 * real detail ring in bounded chunks, saying what the ring holds. The full pipeline with the real collector is
 * tests/e2e. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

#include "a2c.h"
#include "forward.h"
#include "mono.h"
#include "uprobe.h"

static char dir[64], ep[64];
static void *zctx, *router;
static nsc_spool *spool;
static FILE *fwd_log;  /* what a forwarder logs, for the tests that read it */
static nsc_fetch *fwd_fetch;  /* what answers the fetches of the next forwarder made (NULL: none) */

static void bind_router(void)
{
    int zero = 0;
    router = zmq_socket(zctx, ZMQ_ROUTER);
    zmq_setsockopt(router, ZMQ_LINGER, &zero, sizeof zero);
    cr_assert_eq(zmq_bind(router, ep[0] ? ep : "tcp://127.0.0.1:*"), 0, "bind %s: %s", ep, zmq_strerror(errno));
    size_t len = sizeof ep;
    zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, ep, &len);
}

static void setup(void)
{
    char err[128];
    strcpy(dir, "/tmp/nsc-fwd-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cr_assert_eq(nsc_spool_open(&spool, dir, 1 << 30, err), 0, "%s", err);
    zctx = zmq_ctx_new();
    cr_assert_not_null(fwd_log = tmpfile());
    ep[0] = 0;
    fwd_fetch = NULL;
    bind_router();
}

static void teardown(void)
{
    char cmd[128];
    zmq_close(router);
    zmq_ctx_term(zctx);
    nsc_spool_close(spool);
    fclose(fwd_log);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(forward, .init = setup, .fini = teardown, .timeout = 60);

/* Spool n batches with one opaque section of `pad` bytes (none if 0), byte
 * `flip` of each changed (SIZE_MAX: none) after it was encoded; events in the
 * tally: seq + 1. */
static void spool_flipped(unsigned n, uint32_t pad, size_t flip)
{
    static uint8_t filler[1 << 20], buf[(1 << 20) + 256];
    for (unsigned i = 0; i < n; i++) {
        nsc_a2c_section sec = {filler, pad};
        nsc_a2c_batch b = {.seq = nsc_spool_next_seq(spool), .sent_ns = 1, .nsections = pad ? 1 : 0,
                           .sections = &sec};
        strcpy(b.agent, "a1");
        strcpy(b.host, "h1");
        size_t len = nsc_a2c_encode_batch(&b, buf);
        if (flip < len)
            buf[flip] ^= 0x10;
        nsc_spool_tally t = {b.seq + 1, b.seq + 1};
        cr_assert_eq(nsc_spool_put(spool, buf, len, &t, NULL, 0), 0);
    }
}

static void spool_sized(unsigned n, uint32_t pad) { spool_flipped(n, pad, SIZE_MAX); }

static void spool_batches(unsigned n) { spool_sized(n, 0); }

/* A forwarder to the endpoints of list, which it gives up after failover_ms,
 * probing every probe_ms (0: no probes). */
static nsc_fwd *new_fwd_to(const char *list, uint32_t window, uint64_t ack_timeout_ms, uint64_t failover_ms,
                           uint64_t probe_ms)
{
    char err[256];
    nsc_fwd_cfg c = {.endpoint = list, .agent_id = "a1", .host = "h1", .window = window, .max_inflight = 16, .max_inflight_bytes = 1 << 20,
                     .ack_timeout_ns = ack_timeout_ms * 1000000ull, .probe_ns = probe_ms * 1000000ull, .reconnect_ms = 20,
                     .reconnect_max_ms = 100, .failover_ns = failover_ms * 1000000ull, .log = fwd_log, .now = nsc_mono_ns,
                     .fetch = fwd_fetch};
    nsc_fwd *f = nsc_fwd_new(&c, spool, err);
    cr_assert_not_null(f, "%s", err);
    return f;
}

static nsc_fwd *new_fwd(uint32_t window, uint64_t ack_timeout_ms) { return new_fwd_to(ep, window, ack_timeout_ms, 0, 0); }

/* What the collector side received. */
typedef struct got {
    char peer[256];
    size_t peerlen;
    uint64_t seqs[256];
    unsigned n;
    nsc_a2c_probe probes[16], samples[16];
    nsc_a2c_probe newest;  /* the last probe that came, past the first 16 too */
    unsigned nprobes, nsamples;
    unsigned chunks, lasts, most_pieces;  /* detail chunks, those that end an answer, the most pieces in one */
    uint64_t pieces, other_pid, held_from, held_to, chunk_id, next_chunk;
} got;

/* A detail chunk: its pieces (whose bytes are their pid) counted, chunks in order. */
static void take_detail(got *g, const uint8_t *msg, size_t n)
{
    nsc_a2c_detail d;
    cr_assert_eq(nsc_a2c_decode_detail(msg, n, NULL, &d), 0);
    cr_assert_eq(d.chunk, g->next_chunk, "chunks in order");
    cr_assert_eq(d.epoch, 5);
    g->next_chunk = d.last ? 0 : d.chunk + 1;
    g->chunks++;
    g->lasts += d.last;
    g->chunk_id = d.id;
    g->pieces += d.npieces;
    g->most_pieces = d.npieces > g->most_pieces ? d.npieces : g->most_pieces;
    for (uint32_t i = 0; i < d.npieces; i++)
        g->other_pid += d.pieces[i].len == 0 || d.pieces[i].data[0] != 1;
    g->held_from = d.held_from_ns;
    g->held_to = d.held_to_ns;
    nsc_a2c_detail_release(&d);
}

static void take(got *g)
{
    static uint8_t id[256], msg[(1 << 20) + 256];
    int idn;
    while ((idn = zmq_recv(router, id, sizeof id, ZMQ_DONTWAIT)) >= 0) {
        int n = zmq_recv(router, msg, sizeof msg, 0);
        cr_assert_geq(n, 0);
        memcpy(g->peer, id, (size_t)idn);
        g->peerlen = (size_t)idn;
        int kind = nsc_a2c_kind(msg, (size_t)n);
        if (kind == NSC_A2C_BATCH) {
            nsc_a2c_batch b;
            cr_assert_eq(nsc_a2c_decode_batch(msg, (size_t)n, NULL, &b), 0);
            cr_assert_lt(g->n, 256);
            g->seqs[g->n++] = b.seq;
            nsc_a2c_batch_release(&b);
        } else if (kind == NSC_A2C_DETAIL) {
            take_detail(g, msg, (size_t)n);
        } else {
            nsc_a2c_probe p;
            cr_assert_eq(nsc_a2c_decode_probe(msg, (size_t)n, &p), 0, "kind %d", kind);
            if (p.kind == NSC_A2C_PROBE)
                g->newest = p;
            if (p.kind == NSC_A2C_PROBE && g->nprobes < 16)
                g->probes[g->nprobes++] = p;
            else if (p.kind == NSC_A2C_SAMPLE && g->nsamples < 16)
                g->samples[g->nsamples++] = p;
        }
    }
}

/* Run the forwarder and collect what arrives for ms milliseconds, or until
 * `until` batches have arrived (0: the whole time). */
static void pump(nsc_fwd *f, got *g, unsigned ms, unsigned until)
{
    uint64_t end = nsc_mono_ns() + ms * 1000000ull;
    while (nsc_mono_ns() < end && (until == 0 || g->n < until)) {
        zmq_pollitem_t it[3] = {{nsc_fwd_socket(f), 0, ZMQ_POLLIN, 0}, {nsc_fwd_monitor(f), 0, ZMQ_POLLIN, 0},
                                {router, 0, ZMQ_POLLIN, 0}};
        zmq_poll(it, 3, 5);
        nsc_fwd_run(f, nsc_mono_ns());
        take(g);
    }
}

static void reply(const got *g, const uint8_t *msg, size_t len)
{
    cr_assert_eq(zmq_send(router, g->peer, g->peerlen, ZMQ_SNDMORE), (int)g->peerlen);
    cr_assert_eq(zmq_send(router, msg, len, 0), (int)len);
}

static void ack(const got *g, const char *agent, uint64_t seq, uint32_t credit)
{
    nsc_a2c_ack a = {.seq = seq, .credit = credit};
    snprintf(a.agent, sizeof a.agent, "%s", agent);
    uint8_t buf[NSC_A2C_SMALL_MAX];
    reply(g, buf, nsc_a2c_encode_ack(&a, buf));
}

static nsc_fwd_stats stats(const nsc_fwd *f)
{
    nsc_fwd_stats st;
    nsc_fwd_stats_get(f, &st);
    return st;
}

static uint64_t spooled(void)
{
    nsc_spool_stats st;
    nsc_spool_stats_get(spool, &st);
    return st.entries;
}

Test(forward, in_order_within_credit_deleted_on_ack)
{
    spool_batches(20);
    nsc_fwd *f = new_fwd(4, 10000);
    got g = {0};
    pump(f, &g, 3000, 4);
    pump(f, &g, 100, 0);
    cr_assert_eq(g.n, 4, "the initial window is 4, got %u", g.n);
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(g.seqs[i], i);
    cr_assert_eq(stats(f).connected, 1);
    cr_assert_eq(stats(f).inflight, 4);

    /* Out of order acks; credit 2 with 2 still unacknowledged: nothing new. */
    ack(&g, "a1", 1, 2);
    ack(&g, "a1", 0, 2);
    pump(f, &g, 100, 0);
    cr_assert_eq(g.n, 4);
    cr_assert_eq(spooled(), 18, "acknowledged batches leave the spool");
    cr_assert_eq(stats(f).batches_acked, 2);
    cr_assert_eq(stats(f).events_acked, 1 + 2);

    /* Ack 2 with credit 8: 3 is still out, so 4..10 go. */
    ack(&g, "a1", 2, 8);
    pump(f, &g, 3000, 11);
    pump(f, &g, 100, 0);
    cr_assert_eq(g.n, 11, "got %u", g.n);
    for (unsigned i = 0; i < g.n; i++)
        cr_assert_eq(g.seqs[i], i, "in sequence order");
    for (uint64_t s = 3; s < 20; s++) {
        ack(&g, "a1", s, 16);
        pump(f, &g, 20, 0);
    }
    pump(f, &g, 200, 0);
    cr_assert_eq(spooled(), 0);
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.batches_sent, 20);
    cr_assert_eq(st.batches_acked, 20);
    cr_assert_eq(st.events_acked, 20 * 21 / 2);
    cr_assert_eq(st.batches_resent, 0);
    cr_assert_eq(st.inflight, 0);
    nsc_fwd_free(f);
}

Test(forward, reconnect_resends_unacknowledged)
{
    spool_batches(6);
    nsc_fwd *f = new_fwd(4, 60000);
    got g = {0};
    pump(f, &g, 3000, 4);
    ack(&g, "a1", 0, 4);
    pump(f, &g, 100, 5);
    cr_assert_eq(g.n, 5);
    /* The collector goes away and comes back on the same port. */
    zmq_close(router);
    pump(f, &g, 200, 0);
    cr_assert_eq(stats(f).connected, 0);
    bind_router();
    got again = {0};
    pump(f, &again, 5000, 4);
    cr_assert_eq(again.n, 4, "what was in flight is sent again");
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(again.seqs[i], i + 1, "from the oldest unacknowledged");
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.connects, 2);
    cr_assert_eq(st.disconnects, 1);
    cr_assert_geq(st.rewinds_connect, 2);
    cr_assert_eq(st.batches_resent, 4);
    nsc_fwd_free(f);
}

Test(forward, silence_past_the_timeout_resends)
{
    spool_batches(3);
    nsc_fwd *f = new_fwd(8, 300);
    got g = {0};
    pump(f, &g, 3000, 3);
    cr_assert_eq(g.n, 3);
    pump(f, &g, 3000, 6);
    cr_assert_eq(g.n, 6, "no ack for 300 ms: sent again");
    cr_assert_eq(g.seqs[3], 0);
    cr_assert_geq(stats(f).rewinds_timeout, 1);
    /* Late acks of the first copies and acks of the second: each batch deleted once. */
    for (uint64_t s = 0; s < 3; s++) {
        ack(&g, "a1", s, 8);
        ack(&g, "a1", s, 8);
    }
    pump(f, &g, 200, 0);
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(spooled(), 0);
    cr_assert_eq(st.batches_acked, 3);
    cr_assert_eq(st.acks_duplicate, 3);
    nsc_fwd_free(f);
}

Test(forward, restart_resends_the_spool)
{
    spool_batches(5);
    nsc_fwd *f = new_fwd(8, 60000);
    got g = {0};
    pump(f, &g, 3000, 5);
    ack(&g, "a1", 0, 8);
    ack(&g, "a1", 3, 8);
    pump(f, &g, 200, 0);
    nsc_fwd_free(f);
    f = new_fwd(8, 60000);  /* a restarted agent: same spool, nothing known about flights */
    got again = {0};
    pump(f, &again, 3000, 3);
    pump(f, &again, 100, 0);
    cr_assert_eq(again.n, 3);
    cr_assert_eq(again.seqs[0], 1);
    cr_assert_eq(again.seqs[1], 2);
    cr_assert_eq(again.seqs[2], 4);
    nsc_fwd_free(f);
}

Test(forward, malformed_and_foreign_input_counted)
{
    spool_batches(2);
    nsc_fwd *f = new_fwd(8, 60000);
    got g = {0};
    pump(f, &g, 3000, 2);
    static const uint8_t garbage[] = {0xc1, 0x00, 0x01};
    reply(&g, garbage, sizeof garbage);
    uint8_t buf[NSC_A2C_SMALL_MAX];
    nsc_a2c_ack a = {.seq = 0, .credit = 4};
    strcpy(a.agent, "a1");
    size_t len = nsc_a2c_encode_ack(&a, buf);
    reply(&g, buf, len - 1);          /* truncated */
    ack(&g, "someone-else", 0, 4);    /* not ours */
    cr_assert_eq(zmq_send(router, g.peer, g.peerlen, ZMQ_SNDMORE), (int)g.peerlen);
    cr_assert_eq(zmq_send(router, buf, len, ZMQ_SNDMORE), (int)len);
    cr_assert_eq(zmq_send(router, buf, len, 0), (int)len);  /* two parts */
    ack(&g, "a1", 1, 4);
    pump(f, &g, 300, 0);
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.bad_messages, 4);
    cr_assert_eq(st.batches_acked, 1, "the valid ack still counts");
    cr_assert_eq(spooled(), 1);
    nsc_fwd_free(f);
}

/* How many lines of the forwarder's log contain text. */
static unsigned logged(const char *text)
{
    char line[512];
    unsigned n = 0;
    fflush(fwd_log);
    rewind(fwd_log);
    while (fgets(line, sizeof line, fwd_log))
        n += strstr(line, text) != NULL;
    return n;
}

static nsc_spool_stats spool_stats(void)
{
    nsc_spool_stats st;
    nsc_spool_stats_get(spool, &st);
    return st;
}

/* Batches 1 and 3 changed in the spool, one in a value (a byte of the section)
 * and one in the framing (the array header): neither is sent; both are moved
 * to the quarantine, logged once by seq, counted; the others are delivered,
 * and an ack timeout later nothing is sent again. */
Test(forward, corrupt_batch_quarantined_the_rest_delivered)
{
    spool_sized(1, 64);
    spool_flipped(1, 64, 80);  /* inside the section's bytes */
    spool_sized(1, 64);
    spool_flipped(1, 64, 0);   /* the array header */
    spool_sized(1, 64);
    nsc_fwd *f = new_fwd(8, 300);
    got g = {0};
    pump(f, &g, 3000, 3);
    pump(f, &g, 100, 0);
    cr_assert_eq(g.n, 3, "got %u", g.n);
    cr_assert_eq(g.seqs[0], 0);
    cr_assert_eq(g.seqs[1], 2);
    cr_assert_eq(g.seqs[2], 4);
    for (unsigned i = 0; i < 3; i++)
        ack(&g, "a1", g.seqs[i], 8);
    pump(f, &g, 1000, 0);
    cr_assert_eq(g.n, 3, "nothing sent again");
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.corrupt, 2);
    cr_assert_eq(st.batches_acked, 3);
    nsc_spool_stats sp = spool_stats();
    cr_assert_eq(sp.entries, 0);
    cr_assert_eq(sp.quarantined_entries, 2);
    cr_assert_eq(sp.quarantined_events, 2 + 4, "the tallies of seqs 1 and 3");
    cr_assert_eq(logged("spooled batch 1 "), 1);
    cr_assert_eq(logged("spooled batch 3 "), 1);
    cr_assert_eq(logged("is corrupt ("), 2);
    cr_assert_eq(logged("is corrupt (the message's checksum does not match its bytes)"), 1, "the flip in a value");
    nsc_fwd_free(f);
}

/* A batch the collector rejects is not sent again at the next ack timeout
 * (no ack will ever come): it goes to the quarantine, logged with the
 * collector's reason. */
Test(forward, rejected_batch_quarantined_not_resent)
{
    spool_batches(3);
    nsc_fwd *f = new_fwd(8, 300);
    got g = {0};
    pump(f, &g, 3000, 3);
    nsc_a2c_reject r = {.agent = "a1", .seq = 1, .reason = "section_bad_value"};
    uint8_t buf[NSC_A2C_SMALL_MAX];
    reply(&g, buf, nsc_a2c_encode_reject(&r, buf));
    ack(&g, "a1", 0, 8);
    ack(&g, "a1", 2, 8);
    pump(f, &g, 1000, 0);
    cr_assert_eq(g.n, 3, "sent again: %u sends", g.n);
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.rejected, 1);
    cr_assert_eq(st.rewinds_timeout, 0);
    cr_assert_eq(st.inflight, 0);
    nsc_spool_stats sp = spool_stats();
    cr_assert_eq(sp.entries, 0);
    cr_assert_eq(sp.quarantined_entries, 1);
    cr_assert_eq(sp.quarantined_events, 2);
    cr_assert_eq(logged("spooled batch 1 "), 1);
    cr_assert_eq(logged("rejected by the collector (section_bad_value)"), 1);
    /* the same rejection again (a batch sent twice): nothing more */
    reply(&g, buf, nsc_a2c_encode_reject(&r, buf));
    pump(f, &g, 200, 0);
    cr_assert_eq(spool_stats().quarantined_entries, 1);
    cr_assert_eq(logged("spooled batch 1 "), 1);
    nsc_fwd_free(f);
}

Test(forward, probe_answer_becomes_a_sample)
{
    char err[256];
    nsc_fwd_cfg c = {.endpoint = ep, .agent_id = "a1", .host = "h1", .window = 4, .max_inflight = 16, .max_inflight_bytes = 1 << 20,
                     .ack_timeout_ns = 60000000000ull, .probe_ns = 100000000ull, .reconnect_ms = 20,
                     .reconnect_max_ms = 100, .now = nsc_mono_ns};
    nsc_fwd *f = nsc_fwd_new(&c, spool, err);
    cr_assert_not_null(f, "%s", err);
    got g = {0};
    for (uint64_t end = nsc_mono_ns() + 3000000000ull; g.nprobes < 3 && nsc_mono_ns() < end;)
        pump(f, &g, 10, 0);
    cr_assert_geq(g.nprobes, 3, "the first probes come fast");
    const int64_t offset = 5000000000;  /* the collector's clock is 5 s ahead */
    for (unsigned i = 0; i < 3; i++) {
        nsc_a2c_probe p = g.probes[i];
        cr_assert_str_eq(p.host, "h1");
        cr_assert_eq(p.t4, 0);
        p.t2 = nsc_mono_ns() + offset;
        p.t3 = p.t2 + 1000;
        uint8_t buf[NSC_A2C_SMALL_MAX];
        reply(&g, buf, nsc_a2c_encode_probe(&p, buf));
    }
    for (uint64_t end = nsc_mono_ns() + 3000000000ull; g.nsamples < 3 && nsc_mono_ns() < end;)
        pump(f, &g, 10, 0);
    cr_assert_eq(g.nsamples, 3);
    for (unsigned i = 0; i < 3; i++) {
        const nsc_a2c_probe *s = &g.samples[i];
        cr_assert_eq(s->id, g.probes[i].id);
        cr_assert_eq(s->t1, g.probes[i].t1);
        cr_assert_geq(s->t4, s->t1);
        cr_assert_neq(s->t2, 0);
    }
    nsc_fwd_stats st = stats(f);
    cr_assert(st.have_clock);
    cr_assert_lt(st.rtt_ns, 2000000000ull);
    int64_t err_ns = st.offset_ns - offset;
    cr_assert(err_ns > -2000000000 && err_ns < 2000000000, "offset %lld", (long long)st.offset_ns);
    cr_assert_eq(st.bad_messages, 0);
    nsc_fwd_free(f);
}

/* Answer probe p with the collector's clock 5 s ahead. */
static void answer_probe(const got *g, nsc_a2c_probe p)
{
    p.t2 = nsc_mono_ns() + 5000000000ull;
    p.t3 = p.t2 + 1000;
    uint8_t buf[NSC_A2C_SMALL_MAX];
    reply(g, buf, nsc_a2c_encode_probe(&p, buf));
}

static void answer(got *g, unsigned i) { answer_probe(g, g->probes[i]); }

/* The answer to a scheduled probe sends a follow-up at once (the warm path),
 * and each follow-up's answer the next, four in all; the last one's answer
 * sends nothing until the interval comes round. */
Test(forward, scheduled_probe_answer_sends_four_follow_ups)
{
    char err[256];
    nsc_fwd_cfg c = {.endpoint = ep, .agent_id = "a1", .host = "h1", .window = 4, .max_inflight = 16, .max_inflight_bytes = 1 << 20,
                     .ack_timeout_ns = 60000000000ull, .probe_ns = 20000000000ull, .reconnect_ms = 20,
                     .reconnect_max_ms = 100, .now = nsc_mono_ns};
    nsc_fwd *f = nsc_fwd_new(&c, spool, err);
    cr_assert_not_null(f, "%s", err);
    got g = {0};
    for (uint64_t end = nsc_mono_ns() + 3000000000ull; g.nprobes < 1 && nsc_mono_ns() < end;)
        pump(f, &g, 10, 0);
    cr_assert_eq(g.nprobes, 1, "the first probe goes at once");
    for (unsigned i = 0; i < 4; i++) {
        answer(&g, i);
        pump(f, &g, 300, 0);
        cr_assert_eq(g.nprobes, i + 2, "answer %u sends follow-up %u", i, i + 1);
        cr_assert_eq(g.probes[i + 1].id, g.probes[i].id + 1);
    }
    answer(&g, 4);
    pump(f, &g, 300, 0);
    cr_assert_eq(g.nsamples, 5);
    cr_assert_eq(g.nprobes, 5, "the last follow-up's answer sends nothing (the next probe is 2 s away)");
    nsc_fwd_free(f);
}

static uint64_t fake_ns;  /* the clock of a forwarder made with .now = fake_now */
static uint64_t fake_now(void) { return fake_ns; }

/* Wait (5 s at most) until the forwarder's socket has input. */
static void wait_readable(nsc_fwd *f)
{
    zmq_pollitem_t it = {nsc_fwd_socket(f), 0, ZMQ_POLLIN, 0};
    cr_assert_eq(zmq_poll(&it, 1, 5000), 1, "the answer arrives");
}

/* While the newest probe is unanswered, and for probe_spin_ns at most, the
 * loop is asked not to sleep, unless the last answer came later than that.
 * nsc_fwd_input alone takes an answer, stamped (t4) with the time it is
 * read, and sends the burst's next probe; the last answer ends the wait. */
Test(forward, awaits_answer_until_answered_or_spin_over)
{
    char err[256];
    fake_ns = 1000000000ull;
    nsc_fwd_cfg c = {.endpoint = ep, .agent_id = "a1", .host = "h1", .window = 4, .max_inflight = 16, .max_inflight_bytes = 1 << 20,
                     .ack_timeout_ns = 60000000000ull, .probe_ns = 20000000000ull, .probe_spin_ns = 1000000,
                     .reconnect_ms = 20, .reconnect_max_ms = 100, .now = fake_now};
    nsc_fwd *f = nsc_fwd_new(&c, spool, err);
    cr_assert_not_null(f, "%s", err);
    got g = {0};
    cr_assert_not(nsc_fwd_awaits_answer(f, fake_ns), "no probe yet");
    for (uint64_t end = nsc_mono_ns() + 3000000000ull; g.nprobes < 1 && nsc_mono_ns() < end;)
        pump(f, &g, 10, 0);
    cr_assert_eq(g.nprobes, 1);
    cr_assert(nsc_fwd_awaits_answer(f, fake_ns + 999999));
    cr_assert_not(nsc_fwd_awaits_answer(f, fake_ns + 1000000), "probe_spin_ns at most");
    for (unsigned i = 0; i < 5; i++) {
        answer(&g, i);
        wait_readable(f);
        uint64_t late = i == 1 ? 1000000 : 7000;  /* answer 1 comes after probe_spin_ns */
        fake_ns += late;
        nsc_fwd_input(f, nsc_mono_ns());
        unsigned probes = i < 4 ? i + 2 : 5;
        zmq_pollitem_t it = {router, 0, ZMQ_POLLIN, 0};
        for (uint64_t end = nsc_mono_ns() + 5000000000ull;
             (g.nsamples < i + 1 || g.nprobes < probes) && nsc_mono_ns() < end; zmq_poll(&it, 1, 10))
            take(&g);
        cr_assert_eq(g.nsamples, i + 1);
        cr_assert_eq(g.samples[i].t4, g.probes[i].t1 + late, "t4 is when the answer was read");
        cr_assert_eq(g.nprobes, probes, "the burst's next probe goes from nsc_fwd_input");
        cr_assert_eq(nsc_fwd_awaits_answer(f, fake_ns), i < 4 && i != 1, "answer %u", i);
    }
    nsc_fwd_free(f);
}

/* 400 KiB batches under a 1 MiB byte bound: three go (the third starts below
 * the bound), the rest wait for acks although the credit would allow more. */
Test(forward, bytes_in_flight_bounded)
{
    spool_sized(6, 400 << 10);
    nsc_fwd *f = new_fwd(8, 60000);
    got g = {0};
    pump(f, &g, 3000, 3);
    pump(f, &g, 200, 0);
    cr_assert_eq(g.n, 3, "got %u", g.n);
    cr_assert_geq(stats(f).inflight_bytes, 3 * (400 << 10));
    ack(&g, "a1", 0, 8);
    pump(f, &g, 3000, 4);
    pump(f, &g, 200, 0);
    cr_assert_eq(g.n, 4, "one ack, one more batch: got %u", g.n);
    nsc_fwd_free(f);
}

/* A second collector: router becomes a new ROUTER on another port (*b), the
 * first is returned in *a, and list holds "FIRST,SECOND"; ep is the second's. */
static void two_collectors(void **a, void **b, char list[160], char first[64])
{
    *a = router;
    strcpy(first, ep);
    ep[0] = 0;
    bind_router();
    *b = router;
    snprintf(list, 160, "%s,%s", first, ep);
}

/* Two collectors: the first goes silent with batches unacknowledged, the
 * forwarder moves to the second and sends them again there; the second goes
 * away, the forwarder moves round the list back to the first. */
Test(forward, dead_collector_fails_over_to_the_next)
{
    char list[160], epa[64];
    void *a, *b;
    two_collectors(&a, &b, list, epa);
    spool_batches(6);
    router = a;
    nsc_fwd *f = new_fwd_to(list, 4, 60000, 300, 0);
    got g = {0};
    pump(f, &g, 3000, 4);
    ack(&g, "a1", 0, 4);
    pump(f, &g, 3000, 5);
    cr_assert_eq(g.n, 5);
    cr_assert_eq(stats(f).collector_index, 0);
    cr_assert_str_eq(nsc_fwd_endpoint(f), epa);

    router = b;
    got gb = {0};
    pump(f, &gb, 5000, 4);
    cr_assert_eq(gb.n, 4, "the unacknowledged batches go to the next collector within the first window, got %u", gb.n);
    for (unsigned i = 0; i < 4; i++)
        cr_assert_eq(gb.seqs[i], i + 1, "from the oldest unacknowledged");
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.failovers, 1);
    cr_assert_eq(st.collector_index, 1);
    cr_assert_str_eq(nsc_fwd_endpoint(f), ep);
    for (uint64_t s = 1; s < 5; s++)
        ack(&gb, "a1", s, 4);
    pump(f, &gb, 3000, 5);
    cr_assert_eq(gb.n, 5);
    cr_assert_eq(gb.seqs[4], 5);
    ack(&gb, "a1", 5, 4);
    pump(f, &gb, 200, 0);
    cr_assert_eq(spooled(), 0);

    zmq_close(b);
    router = a;
    spool_batches(2);
    got ga = {0};
    pump(f, &ga, 5000, 2);
    cr_assert_eq(ga.n, 2, "no connection to the second: back to the first, got %u", ga.n);
    cr_assert_eq(ga.seqs[0], 6);
    cr_assert_eq(stats(f).failovers, 2);
    cr_assert_eq(stats(f).collector_index, 0);
    cr_assert_geq(stats(f).rewinds_failover, 2);
    nsc_fwd_free(f);
}

/* Idle and connected, a collector that answers no probe is dead as well: the
 * forwarder moves, no sooner than failover_ms, and drops the clock samples. */
Test(forward, unanswered_probes_fail_over)
{
    char list[160], epa[64];
    void *a, *b;
    two_collectors(&a, &b, list, epa);
    router = a;
    uint64_t start = nsc_mono_ns();
    nsc_fwd *f = new_fwd_to(list, 4, 60000, 400, 50);
    got g = {0};
    while (stats(f).failovers == 0 && nsc_mono_ns() - start < 5000000000ull)
        pump(f, &g, 10, 0);
    cr_assert_eq(stats(f).failovers, 1);
    cr_assert_geq(nsc_mono_ns() - start, 400000000ull, "moved before failover_ms had passed");
    cr_assert_geq(g.nprobes, 1, "the first collector was probed");
    cr_assert_eq(g.n, 0);
    cr_assert_eq(stats(f).collector_index, 1);
    cr_assert_eq(stats(f).have_clock, 0);
    nsc_fwd_free(f);
    zmq_close(b);
}

/* One endpoint is never given up, however long it is away. */
Test(forward, single_collector_is_never_given_up)
{
    spool_batches(2);
    nsc_fwd *f = new_fwd_to(ep, 4, 60000, 1, 0);
    got g = {0};
    pump(f, &g, 3000, 2);
    zmq_close(router);
    pump(f, &g, 200, 0);
    bind_router();
    got again = {0};
    pump(f, &again, 5000, 2);
    cr_assert_eq(again.n, 2);
    cr_assert_eq(stats(f).failovers, 0);
    cr_assert_eq(stats(f).collector_index, 0);
    nsc_fwd_free(f);
}

Test(forward, bad_endpoint_list_refused)
{
    char err[256];
    nsc_fwd_cfg c = {.endpoint = "tcp://127.0.0.1:1,,tcp://127.0.0.1:2", .agent_id = "a1", .host = "h1", .window = 1,
                     .max_inflight = 1, .ack_timeout_ns = 1000000000ull, .reconnect_ms = 20, .reconnect_max_ms = 100,
                     .now = nsc_mono_ns};
    cr_assert_null(nsc_fwd_new(&c, spool, err));
    cr_assert(strstr(err, "entry 2 is empty"), "%s", err);
}

static unsigned lost_calls;
static void count_lost(void *arg)
{
    (void)arg;
    lost_calls++;
}

/* The endpoints a name resolved to (nsc_fwd_set_endpoints), n of them. */
static nsc_endpoints *name_list(const char *e0, const char *e1, const char *e2)
{
    static nsc_endpoints l;
    const char *e[3] = {e0, e1, e2};
    l.n = 0;
    for (int i = 0; i < 3; i++)
        if (e[i])
            strcpy(l.ep[l.n++], e[i]);
    return &l;
}

/* An agent id whose pick in the name list {x, y} is the one at want. */
static void id_picking(const char *x, const char *y, uint32_t want, char id[16])
{
    for (int i = 0; i < 1000; i++) {
        snprintf(id, 16, "r%d", i);
        if (nsc_endpoints_pick(id, name_list(x, y, NULL)) == want)
            return;
    }
    cr_assert_fail("no id picks %u of {%s, %s}", want, x, y);
}

/* An address that joins a name's list and outweighs the one in use for the
 * agent takes it: a rebalance (counted apart from failovers; everything
 * unacknowledged sent there, the old link closed). An agent whose pick is
 * still the one in use stays, connection kept. */
Test(forward, name_rebalance)
{
    char list[160], epa[64], epb[64], err[256], mover[16], stayer[16];
    void *a, *b;
    two_collectors(&a, &b, list, epa);
    strcpy(epb, ep);
    id_picking(epa, epb, 1, mover);
    id_picking(epa, epb, 0, stayer);
    spool_batches(3);
    const char *ids[2] = {mover, stayer};
    for (int k = 0; k < 2; k++) {
        nsc_fwd_cfg c = {.endpoint = "dns+tcp://collectors.invalid:7760", .agent_id = ids[k], .host = "h1",
                         .window = 4, .max_inflight = 16, .max_inflight_bytes = 1 << 20,
                         .ack_timeout_ns = 60000000000ull, .reconnect_ms = 20, .reconnect_max_ms = 100,
                         .failover_ns = 2000000000ull, .now = nsc_mono_ns};
        nsc_fwd *f = nsc_fwd_new(&c, spool, err);
        cr_assert_not_null(f, "%s", err);
        got g = {0}, g2 = {0};
        router = a;
        uint64_t t = nsc_mono_ns();
        nsc_fwd_set_endpoints(f, name_list(epa, NULL, NULL), t);
        nsc_fwd_run(f, t);
        pump(f, &g, 3000, 3);
        cr_assert_eq(g.n, 3, "%s: the only address gets the spool, got %u", ids[k], g.n);
        nsc_fwd_set_endpoints(f, name_list(epa, epb, NULL), nsc_mono_ns());
        router = k == 0 ? b : a;
        pump(f, &g2, k == 0 ? 3000 : 300, k == 0 ? 3 : 0);
        if (k == 0) {
            cr_assert_eq(g2.n, 3, "b joined and outweighs a: the unacknowledged batches go to b, got %u", g2.n);
            cr_assert_str_eq(nsc_fwd_endpoint(f), epb);
            cr_assert_eq(stats(f).rebalances, 1);
            cr_assert_eq(stats(f).failovers, 0, "a rebalance is not a failover");
            cr_assert_eq(stats(f).collector_index, 1);
        } else {
            cr_assert_str_eq(nsc_fwd_endpoint(f), epa, "a still outweighs b: kept");
            cr_assert_eq(g2.n, 0, "nothing sent again");
            cr_assert_eq(stats(f).rebalances, 0);
            cr_assert_eq(stats(f).connects, 1, "the connection was kept");
        }
        nsc_fwd_free(f);
    }
    router = a;
    zmq_close(b);
}

/* A dns+tcp:// name: nothing connects before its first list; the forwarder
 * starts at the address its agent id picks; a changed list that still holds
 * it keeps it (same connection); one without it moves to the picked one of the
 * new list and sends everything unacknowledged there; a dead collector with
 * no other address asks for the name again, every failover_ms. */
Test(forward, name_addresses_kept_or_moved)
{
    char list[160], epa[64], epb[64], err[256];
    void *a, *b;
    two_collectors(&a, &b, list, epa);
    strcpy(epb, ep);
    spool_batches(3);
    nsc_fwd_cfg c = {.endpoint = "dns+tcp://collectors.invalid:7760", .agent_id = "a1", .host = "h1", .window = 4,
                     .max_inflight = 16, .max_inflight_bytes = 1 << 20, .ack_timeout_ns = 60000000000ull,
                     .reconnect_ms = 20, .reconnect_max_ms = 100, .failover_ns = 2000000000ull, .now = nsc_mono_ns,
                     .lost = count_lost};
    nsc_fwd *f = nsc_fwd_new(&c, spool, err);
    cr_assert_not_null(f, "%s", err);
    got g = {0};
    router = a;
    pump(f, &g, 300, 0);
    cr_assert_eq(stats(f).connects, 0, "no address, no connection");
    cr_assert_str_eq(nsc_fwd_endpoint(f), "dns+tcp://collectors.invalid:7760");

    uint32_t first = nsc_endpoints_pick("a1", name_list(epa, epb, NULL));
    void *used = first ? b : a, *other = first ? a : b;
    const char *used_ep = first ? epb : epa, *other_ep = first ? epa : epb;
    uint64_t t = nsc_mono_ns();  /* as the agent's loop: its clock read before the list came */
    nsc_fwd_set_endpoints(f, name_list(epa, epb, NULL), t);
    nsc_fwd_run(f, t);
    cr_assert_eq(stats(f).failovers, 0, "a fresh link is not dead");
    router = used;
    pump(f, &g, 3000, 3);
    cr_assert_eq(g.n, 3, "the picked address gets the spool, got %u", g.n);
    cr_assert_str_eq(nsc_fwd_endpoint(f), used_ep);
    cr_assert_eq(stats(f).failovers, 0);

    char extra[64];  /* a third address that joins and does not outweigh the one in use */
    for (int port = 1; port < 1000; port++) {
        snprintf(extra, sizeof extra, "tcp://127.0.0.1:%d", port);
        if (nsc_endpoints_pick("a1", name_list(extra, other_ep, used_ep)) == 2)
            break;
    }
    nsc_fwd_set_endpoints(f, name_list(extra, other_ep, used_ep), nsc_mono_ns());
    pump(f, &g, 300, 0);
    cr_assert_str_eq(nsc_fwd_endpoint(f), used_ep, "still listed and still the pick: kept");
    cr_assert_eq(stats(f).rebalances, 0);
    cr_assert_eq(stats(f).collector_index, 2);
    cr_assert_eq(stats(f).connects, 1, "the connection was kept");
    cr_assert_eq(g.n, 3, "nothing sent again");

    nsc_fwd_set_endpoints(f, name_list(other_ep, NULL, NULL), nsc_mono_ns());
    router = other;
    got g2 = {0};
    pump(f, &g2, 3000, 3);
    cr_assert_eq(g2.n, 3, "gone from the list: the unacknowledged batches go to the other, got %u", g2.n);
    cr_assert_eq(stats(f).failovers, 1);
    cr_assert_str_eq(nsc_fwd_endpoint(f), other_ep);

    for (uint64_t s = 0; s < 3; s++)
        ack(&g2, "a1", s, 4);
    pump(f, &g2, 200, 0);
    cr_assert_eq(spooled(), 0);
    lost_calls = 0;
    zmq_close(other);
    uint64_t start = nsc_mono_ns();
    while (lost_calls < 2 && nsc_mono_ns() - start < 20000000000ull)
        pump(f, &g2, 10, 0);
    cr_assert_eq(lost_calls, 2, "a dead only address asks for the name again each failover_ms");
    cr_assert_geq(nsc_mono_ns() - start, 4000000000ull, "asked sooner than failover_ms");
    cr_assert_eq(stats(f).failovers, 1, "nowhere to move");
    nsc_fwd_free(f);
    router = used;
}

/* Run the forwarder until `lasts` answers have ended (bounded). */
static void pump_answers(nsc_fwd *f, got *g, unsigned lasts)
{
    uint64_t end = nsc_mono_ns() + 10000000000ull;
    while (g->lasts < lasts && nsc_mono_ns() < end)
        pump(f, g, 5, 0);
    cr_assert_eq(g->lasts, lasts);
}

/* Fetch q from a forwarder whose fetches ring answers (NULL: no ring);
 * what came back. The spool holds a batch: the collector side learns the
 * agent's routing id from it. */
static got ask(nsc_ring *ring, const nsc_a2c_fetch *q)
{
    uint8_t buf[NSC_A2C_FETCH_MAX];
    cr_assert_not_null(fwd_fetch = nsc_fetch_new(ring, "a1", "h1", 5, 64 << 10));
    nsc_fwd *f = new_fwd(4, 60000);
    got g = {0};
    pump(f, &g, 3000, 1);
    reply(&g, buf, nsc_a2c_encode_fetch(q, buf));
    pump_answers(f, &g, 1);
    nsc_fetch_stats fs;
    nsc_fetch_stats_get(fwd_fetch, &fs);
    cr_assert_eq(fs.answered, 1);
    cr_assert_eq(fs.queued, 0);
    nsc_fwd_free(f);
    nsc_fetch_free(fwd_fetch);
    fwd_fetch = NULL;
    return g;
}

/* 40 raw sections of len bytes of job1 into ring at now_ns, received in
 * [1000 i, 1000 i + 999], from pids 1 .. npids in turn; each section's
 * bytes are its pid. */
static void fill_ring(nsc_ring *ring, uint32_t len, uint32_t npids, uint64_t now_ns)
{
    static uint8_t body[2][20 << 10];
    memset(body[0], 1, sizeof body[0]);
    memset(body[1], 2, sizeof body[1]);
    for (uint64_t i = 0; i < 40; i++) {
        nsc_ring_piece p = {.m = {.seq = i, .from_ns = 1000 * i, .to_ns = 1000 * i + 999,
                                  .pid = (uint32_t)(1 + i % npids), .job = "job1"},
                            .data = body[i % npids], .len = len};
        nsc_ring_put(ring, &p, 1, now_ns);
    }
}

/* 40 raw sections of 20 KiB, pids 1 and 2 in turn, received in [1000 i,
 * 1000 i + 999]; asked for pid 1's: 20 come back, in chunks of about 64 KiB,
 * numbered in order, the last one marked, each telling what the ring holds.
 * A window before the ring's oldest section gets an empty answer that says
 * what is held; so does a fetch to an agent without a ring. */
Test(forward, detail_fetch_answered_in_bounded_chunks)
{
    char err[128], rdir[96];
    nsc_ring *ring;
    snprintf(rdir, sizeof rdir, "%s/detail", dir);
    cr_assert_eq(nsc_ring_open(&ring, rdir, 64 << 20, 0, err), 0, "%s", err);
    fill_ring(ring, 20 << 10, 2, 0);
    spool_batches(1);
    nsc_a2c_fetch q = {.agent = "a1", .id = 7, .job = "job1", .to_ns = UINT64_MAX, .npids = 1, .pids = {1}};
    got g = ask(ring, &q);
    cr_assert_eq(g.chunk_id, 7);
    cr_assert_eq(g.pieces, 20);
    cr_assert_eq(g.other_pid, 0);
    cr_assert_geq(g.chunks, 5, "20 x 20 KiB in chunks of about 64 KiB: %u", g.chunks);
    cr_assert_leq(g.most_pieces, 4);
    cr_assert_eq(g.held_from, 0);
    cr_assert_eq(g.held_to, 39999);
    /* a ring that keeps 10 us: at 39999, sections 29 .. 39 are held; a
     * window before them gets nothing, and what is held */
    nsc_ring_close(ring);
    cr_assert_eq(nsc_ring_open(&ring, rdir, 64 << 20, 10000, err), 0, "%s", err);
    fill_ring(ring, 16, 1, 39999);
    q = (nsc_a2c_fetch){.agent = "a1", .id = 8, .job = "job1", .from_ns = 100, .to_ns = 20000};
    g = ask(ring, &q);
    cr_assert_eq(g.chunk_id, 8);
    cr_assert_eq(g.pieces, 0);
    cr_assert_eq(g.held_from, 29000);
    cr_assert_eq(g.held_to, 39999);
    nsc_ring_close(ring);
    /* no ring (detail = all): one empty last chunk, nothing held */
    g = ask(NULL, &q);
    cr_assert_eq(g.chunks, 1);
    cr_assert_eq(g.pieces, 0);
    cr_assert_eq(g.held_from, 0);
    cr_assert_eq(g.held_to, 0);
}

/* A UDP socket on 127.0.0.1 that plays the collector's clock port. */
static int clock_port(uint32_t *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    cr_assert_geq(fd, 0);
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* The collector's offer of its clock port, then its answer to probe p. */
static void offer_and_answer(const got *g, uint32_t port, nsc_a2c_probe p)
{
    nsc_a2c_udp u = {.agent = "a1", .port = port};
    uint8_t buf[NSC_A2C_SMALL_MAX];
    reply(g, buf, nsc_a2c_encode_udp(&u, buf));
    answer_probe(g, p);
}

/* The next probe on the clock port (5 s at most, the forwarder running);
 * *from gets the forwarder's address. */
static nsc_uprobe udp_request(nsc_fwd *f, got *g, int fd, struct sockaddr_in *from)
{
    uint8_t buf[NSC_UPROBE_LEN + 1];
    socklen_t len = sizeof *from;
    for (uint64_t end = nsc_mono_ns() + 5000000000ull; nsc_mono_ns() < end; pump(f, g, 5, 0)) {
        ssize_t n = recvfrom(fd, buf, sizeof buf, MSG_DONTWAIT, (struct sockaddr *)from, &len);
        if (n < 0)
            continue;
        nsc_uprobe p;
        cr_assert_eq(nsc_uprobe_decode(buf, (size_t)n, NSC_UPROBE_REQUEST, &p), NSC_UPROBE_OK);
        return p;
    }
    cr_assert_fail("no probe came on the clock port");
    return (nsc_uprobe){0};
}

/* Answer a clock-port probe p to `to`, the collector's clock 5 s ahead. */
static void udp_answer(int fd, const struct sockaddr_in *to, nsc_uprobe p)
{
    uint8_t buf[NSC_UPROBE_LEN];
    p.kind = NSC_UPROBE_ANSWER;
    p.t2 = nsc_mono_ns() + 5000000000ull;
    p.t3 = p.t2 + 1000;
    nsc_uprobe_encode(&p, buf);
    cr_assert_eq(sendto(fd, buf, sizeof buf, 0, (const struct sockaddr *)to, sizeof *to), (ssize_t)sizeof buf);
}

static void pump_samples(nsc_fwd *f, got *g, unsigned n)
{
    for (uint64_t end = nsc_mono_ns() + 5000000000ull; g->nsamples < n && nsc_mono_ns() < end;)
        pump(f, g, 5, 0);
    cr_assert_eq(g->nsamples, n);
}

/* Offered the collector's clock port, the forwarder probes there: only the
 * answer to the newest probe (its id and token) becomes a sample, reported
 * over ZeroMQ; a malformed datagram, an answer with another token or id, and
 * a repeated answer to an older probe are dropped and counted. */
Test(forward, udp_probes_answers_matched_by_id)
{
    uint32_t port;
    int fd = clock_port(&port);
    struct sockaddr_in agent;
    nsc_fwd *f = new_fwd_to(ep, 4, 60000, 0, 60000);  /* the next scheduled probe 6 s away */
    got g = {0};
    for (uint64_t end = nsc_mono_ns() + 3000000000ull; g.nprobes < 1 && nsc_mono_ns() < end;)
        pump(f, &g, 10, 0);
    cr_assert_eq(g.nprobes, 1, "the first probe goes over ZeroMQ");
    offer_and_answer(&g, port, g.probes[0]);
    nsc_uprobe r1 = udp_request(f, &g, fd, &agent);
    cr_assert_eq(r1.id, g.probes[0].id + 1, "the follow-up goes to the clock port");
    cr_assert(stats(f).udp_active);
    cr_assert_geq(nsc_fwd_udp_fd(f), 0);
    uint8_t junk[NSC_UPROBE_LEN - 1] = {0};
    cr_assert_eq(sendto(fd, junk, sizeof junk, 0, (struct sockaddr *)&agent, sizeof agent), (ssize_t)sizeof junk);
    udp_answer(fd, &agent, (nsc_uprobe){.id = r1.id, .token = r1.token ^ 1});
    udp_answer(fd, &agent, (nsc_uprobe){.id = r1.id + 5, .token = r1.token});
    udp_answer(fd, &agent, r1);
    pump_samples(f, &g, 2);
    cr_assert_eq(g.samples[1].id, r1.id);
    cr_assert_str_eq(g.samples[1].host, "h1");
    cr_assert_gt(g.samples[1].t2, g.samples[1].t1);
    cr_assert_geq(g.samples[1].t4, g.samples[1].t1);
    nsc_uprobe r2 = udp_request(f, &g, fd, &agent);
    cr_assert_eq(r2.id, r1.id + 1, "its answer sends the next follow-up");
    cr_assert_neq(r2.token, r1.token);
    udp_answer(fd, &agent, r1);
    udp_answer(fd, &agent, r2);
    pump_samples(f, &g, 3);
    cr_assert_eq(g.samples[2].id, r2.id);
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.udp.answered, 2);
    cr_assert_eq(st.udp.malformed, 1);
    cr_assert_eq(st.udp.foreign, 2);
    cr_assert_eq(st.udp.late, 1);
    cr_assert_eq(st.udp.lost, 0);
    cr_assert_eq(g.nprobes, 1, "no probe over ZeroMQ since the offer");
    cr_assert_eq(st.probes_sent, 1 + st.udp.sent);
    nsc_fwd_free(f);
    close(fd);
}

/* Offered a clock port where nothing answers (a firewall, a port closed),
 * the forwarder loses its follow-ups there (the scheduled probes stay on
 * ZeroMQ), NSC_UDPP_LOST_MAX in a row, says so once, and sends its
 * follow-ups over ZeroMQ again; further offers are ignored until the next
 * connection. */
Test(forward, udp_port_closed_falls_back_to_zeromq)
{
    uint32_t port;
    close(clock_port(&port));  /* nothing listens there now */
    nsc_fwd *f = new_fwd_to(ep, 4, 60000, 0, 1000);  /* scheduled probes 100 ms apart */
    got g = {0};
    uint64_t answered = 0;
    for (uint64_t end = nsc_mono_ns() + 10000000000ull; stats(f).udp_fallbacks == 0 && nsc_mono_ns() < end;) {
        pump(f, &g, 5, 0);
        if (g.newest.id > answered)  /* its answer sends a follow-up to the port */
            offer_and_answer(&g, port, g.newest), answered = g.newest.id;
    }
    nsc_fwd_stats st = stats(f);
    cr_assert_eq(st.udp_fallbacks, 1);
    cr_assert_geq(st.udp.lost, NSC_UDPP_LOST_MAX);
    cr_assert_eq(st.udp.answered, 0);
    cr_assert_not(st.udp_active);
    cr_assert_eq(nsc_fwd_udp_fd(f), -1);
    cr_assert_eq(logged("unanswered on its UDP port"), 1);
    for (uint64_t end = nsc_mono_ns() + 5000000000ull; g.newest.id < stats(f).probes_sent && nsc_mono_ns() < end;)
        pump(f, &g, 5, 0);
    cr_assert_eq(g.newest.id, stats(f).probes_sent, "the follow-up that found the link failed went over ZeroMQ");
    uint64_t udp_sent = st.udp.sent, follow_up = g.newest.id + 1;
    offer_and_answer(&g, port, g.newest);
    for (uint64_t end = nsc_mono_ns() + 5000000000ull; g.newest.id < follow_up && nsc_mono_ns() < end;)
        pump(f, &g, 5, 0);
    st = stats(f);
    cr_assert_geq(g.newest.id, follow_up, "its answer's follow-up went over ZeroMQ");
    cr_assert_eq(st.udp.sent, udp_sent, "the offer after the fallback is ignored");
    cr_assert_not(st.udp_active);
    cr_assert_eq(st.udp_fallbacks, 1);
    nsc_fwd_free(f);
}
