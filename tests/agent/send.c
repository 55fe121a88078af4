/* send.c: nsc-agent-send, a well-behaved rank and a misbehaving one at once.
 *
 *   nsc-agent-send ENDPOINT BATCHES EVENTS MAX_BATCH_KB REPEAT
 *
 * One PUSH socket sends BATCHES valid batches of EVENTS Coll events each (this
 * process's pid; definitions in the first). A second PUSH socket, between them,
 * sends REPEAT rounds of bad messages, one of each reject reason the agent
 * names: empty, bad_type, truncated, too_large (MAX_BATCH_KB + 1 byte),
 * multipart, bad_version, trailing. Sends block, so nothing is dropped here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

#include "wire.h"

static uint8_t batch[1 << 20];

static size_t make_batch(uint64_t seq, unsigned events)
{
    nsc_enc e;
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = seq, .base_ns = 1000000, .proc = {.pid = (uint32_t)getpid(), .local_rank = 0, .gpu = -1}};
    strcpy(h.proc.host, "sender");
    strcpy(h.proc.job, "garbage-test");
    if (nsc_enc_begin(&e, batch, sizeof batch, &h))
        exit(1);
    if (seq == 0) {
        nsc_str_def s = {.id = 1, .text = "AllReduce"};
        nsc_ctx_def c = {.comm_id = 0x1234, .index = 0, .nnodes = 1, .nranks = 1, .rank = 0, .api_version = 5};
        nsc_enc_str(&e, &s);
        nsc_enc_ctx(&e, &c);
    }
    for (unsigned i = 0; i < events; i++) {
        uint64_t n = seq * events + i;
        nsc_event ev = {.id = n + 1, .start_ns = 1000000 + n * 100, .stop_ns = 1000000 + n * 100 + 50,
                        .tid = (uint32_t)getpid(), .type = NSC_T_COLL, .d.coll = {.seq = n, .func = 1}};
        if (nsc_enc_event(&e, &ev))
            exit(1);
    }
    return nsc_enc_finish(&e);
}

static void send_or_die(void *s, const void *p, size_t n, int flags)
{
    if (zmq_send(s, p, n, flags) != (int)n) {
        fprintf(stderr, "nsc-agent-send: %s\n", zmq_strerror(zmq_errno()));
        exit(1);
    }
}

static void send_garbage(void *bad, size_t max_batch)
{
    static uint8_t big[(8u << 20) + 1];
    size_t n = make_batch(1, 4);
    send_or_die(bad, "", 0, 0);                          /* empty */
    send_or_die(bad, "\xc1\x00", 2, 0);                  /* bad_type */
    send_or_die(bad, batch, n / 2, 0);                   /* truncated */
    memcpy(big, batch, n);
    send_or_die(bad, big, max_batch + 1, 0);             /* too_large */
    send_or_die(bad, batch, n, ZMQ_SNDMORE);             /* multipart: two valid parts */
    send_or_die(bad, batch, n, 0);
    batch[n] = 0;
    send_or_die(bad, batch, n + 1, 0);                   /* trailing */
    batch[4] = 2;                                        /* [array, map, "v"(2 bytes), v] */
    send_or_die(bad, batch, n, 0);                       /* bad_version */
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: nsc-agent-send ENDPOINT BATCHES EVENTS MAX_BATCH_KB REPEAT\n");
        return 2;
    }
    unsigned batches = (unsigned)atoi(argv[2]), events = (unsigned)atoi(argv[3]), repeat = (unsigned)atoi(argv[5]);
    size_t max_batch = (size_t)atoi(argv[4]) * 1024;
    if (max_batch + 1 > (8u << 20) + 1 || events * 64 > sizeof batch) {
        fprintf(stderr, "nsc-agent-send: sizes out of range\n");
        return 2;
    }
    void *ctx = zmq_ctx_new(), *good = zmq_socket(ctx, ZMQ_PUSH), *bad = zmq_socket(ctx, ZMQ_PUSH);
    if (zmq_connect(good, argv[1]) || zmq_connect(bad, argv[1]))
        return 1;
    for (unsigned i = 0; i < batches || i < repeat; i++) {
        if (i < batches)
            send_or_die(good, batch, make_batch(i, events), 0);
        if (i < repeat)
            send_garbage(bad, max_batch);
    }
    zmq_close(good);
    zmq_close(bad);
    zmq_ctx_term(ctx);  /* waits until everything was delivered */
    return 0;
}
