/* test_ingest_ack.c: the ingest thread's relay of the writer's acks to the
 * agents (nsc_ingest_pass_ack) over real ZeroMQ sockets: a send that fails
 * is counted, its parts are closed (under ASan a part left open leaks) and
 * the next message still arrives whole. */
#include <criterion/criterion.h>
#include <string.h>
#include <zmq.h>

#include "ingest.h"

typedef struct rig {
    void *ctx, *writer, *from, *router, *agent;
} rig;

/* Writer PAIR -> from PAIR; router ROUTER (unroutable sends fail) <- agent DEALER "agent-1". */
static rig rig_up(void)
{
    rig r = {.ctx = zmq_ctx_new()};
    int on = 1, linger = 0, wait_ms = 10000;
    cr_assert(r.ctx);
    r.writer = zmq_socket(r.ctx, ZMQ_PAIR);
    r.from = zmq_socket(r.ctx, ZMQ_PAIR);
    r.router = zmq_socket(r.ctx, ZMQ_ROUTER);
    r.agent = zmq_socket(r.ctx, ZMQ_DEALER);
    cr_assert(r.writer && r.from && r.router && r.agent);
    void *all[] = {r.writer, r.from, r.router, r.agent};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(zmq_setsockopt(all[i], ZMQ_LINGER, &linger, sizeof linger), 0);
        cr_assert_eq(zmq_setsockopt(all[i], ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms), 0);
    }
    cr_assert_eq(zmq_setsockopt(r.router, ZMQ_ROUTER_MANDATORY, &on, sizeof on), 0);
    cr_assert_eq(zmq_setsockopt(r.agent, ZMQ_ROUTING_ID, "agent-1", 7), 0);
    cr_assert_eq(zmq_bind(r.from, "inproc://acks"), 0);
    cr_assert_eq(zmq_connect(r.writer, "inproc://acks"), 0);
    cr_assert_eq(zmq_bind(r.router, "inproc://agents"), 0);
    cr_assert_eq(zmq_connect(r.agent, "inproc://agents"), 0);
    /* the router knows agent-1 once it has heard from it */
    char buf[16];
    cr_assert_eq(zmq_send(r.agent, "hello", 5, 0), 5);
    cr_assert_eq(zmq_recv(r.router, buf, sizeof buf, 0), 7);
    cr_assert_eq(zmq_recv(r.router, buf, sizeof buf, 0), 5);
    return r;
}

static void rig_down(rig *r)
{
    void *all[] = {r->writer, r->from, r->router, r->agent};
    for (int i = 0; i < 4; i++)
        zmq_close(all[i]);
    zmq_ctx_term(r->ctx);
}

static void writer_says(rig *r, const void *id, size_t idlen, const void *body, size_t len)
{
    cr_assert_eq(zmq_send(r->writer, id, idlen, ZMQ_SNDMORE), (int)idlen);
    cr_assert_eq(zmq_send(r->writer, body, len, 0), (int)len);
}

Test(ingest_ack, failed_send_counted_closed_and_next_message_whole)
{
    rig r = rig_up();
    atomic_uint_fast64_t failures = 0;
    /* Parts over 33 bytes live on the heap: a leaked one shows under ASan. */
    char gone[64], body[100], got[128];
    memset(gone, 'x', sizeof gone);
    memset(body, 'a', sizeof body);
    writer_says(&r, gone, sizeof gone, body, sizeof body);
    cr_assert_eq(nsc_ingest_pass_ack(r.from, r.router, &failures), 0);
    cr_assert_eq(atomic_load(&failures), 1, "an ack to an agent that is gone");

    memset(body, 'b', sizeof body);
    writer_says(&r, "agent-1", 7, body, sizeof body);
    cr_assert_eq(nsc_ingest_pass_ack(r.from, r.router, &failures), 0);
    cr_assert_eq(atomic_load(&failures), 1);
    cr_assert_eq(zmq_recv(r.agent, got, sizeof got, 0), (int)sizeof body);
    cr_assert_eq(memcmp(got, body, sizeof body), 0);
    int more = 1;
    size_t ml = sizeof more;
    cr_assert_eq(zmq_getsockopt(r.agent, ZMQ_RCVMORE, &more, &ml), 0);
    cr_assert_eq(more, 0, "one part: the body alone");

    cr_assert_eq(nsc_ingest_pass_ack(r.from, r.router, &failures), -1, "nothing waiting");
    cr_assert_eq(zmq_send(r.writer, "done", 4, 0), 4);
    cr_assert_eq(nsc_ingest_pass_ack(r.from, r.router, &failures), 1);
    rig_down(&r);
}
