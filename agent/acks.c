/* acks.c: acknowledgements to the plugins and the order of their streams (see acks.h). */
#include "acks.h"

#include <stdio.h>
#include <stdlib.h>
#include <zmq.h>

#include "sockfile.h"

int nsc_acks_open(nsc_agent *a, char err[256])
{
    int linger = 0;
    if ((a->ackpub = zmq_socket(a->zctx, ZMQ_PUB)) &&
        zmq_setsockopt(a->ackpub, ZMQ_LINGER, &linger, sizeof linger) != 0) {
        snprintf(err, 256, "agent.sock.ack: %s", zmq_strerror(zmq_errno()));
        return -1;
    }
    return nsc_sockfile_bind(&a->cfg, a->ackpub, "agent.sock.ack", err);
}

void nsc_acks_close(nsc_agent *a)
{
    if (a->ackpub)
        zmq_close(a->ackpub);
    a->ackpub = NULL;
    free(a->unheard);
    a->unheard = NULL;
    a->nunheard = 0;
}

int nsc_acks_unheard_load(nsc_agent *a, char err[256])
{
    if (nsc_spool_streams(a->spool, &a->unheard, &a->nunheard) != 0) {
        snprintf(err, 256, "spool %.200s: cannot read the stream marks", a->cfg.spool);
        return -1;
    }
    return 0;
}

/* A stream this agent process had not heard yet sent a batch. */
static void heard(nsc_agent *a, uint64_t stream)
{
    for (size_t i = 0; i < a->nunheard; i++)
        if (a->unheard[i] == stream) {
            a->unheard[i] = a->unheard[--a->nunheard];
            return;
        }
}

void nsc_acks_unheard_forget(nsc_agent *a)
{
    for (size_t i = 0; i < a->nunheard; i++)
        nsc_spool_stream_forget(a->spool, a->unheard[i]);
    a->in.streams_forgotten += a->nunheard;
    free(a->unheard);
    a->unheard = NULL;
    a->nunheard = 0;
}

/* PUB never blocks: a message for a plugin whose queue is full is dropped,
 * and the next acknowledgement of its stream says the same and more. */
static void publish(nsc_agent *a, uint64_t stream, uint64_t next, uint8_t kind)
{
    uint8_t msg[NSC_ACK_LEN];
    nsc_ack_encode(&(nsc_ack){.stream = stream, .next = next, .instance = a->start_ns, .kind = kind}, msg);
    if (zmq_send(a->ackpub, msg, sizeof msg, ZMQ_DONTWAIT) == (int)sizeof msg)
        a->in.acks_sent++;
}

int nsc_acks_admit(nsc_agent *a, const nsc_batch_hdr *h)
{
    if (!h->stream)
        return 1;
    nsc_reg_proc *p = nsc_reg_find(a->reg, h->proc.host, h->proc.pid);
    int known = p && p->stream == h->stream;
    if (!known)
        heard(a, h->stream);
    uint64_t next = known ? p->next_seq : nsc_spool_stream_next(a->spool, h->stream);
    if (next < h->acked)
        next = h->acked;  /* acknowledged as stored by an agent before (another spool) */
    if (h->seq == next)
        return 1;
    if (h->seq < next) {
        /* Sent again for want of an acknowledgement (one published before
         * the plugin's SUB connected is lost): repeat it if stored. */
        a->in.duplicates++;
        uint64_t stored = nsc_spool_stream_next(a->spool, h->stream);
        if (stored > h->seq)
            publish(a, h->stream, stored, NSC_ACK_STORED);
        return 0;
    }
    a->in.out_of_order++;
    publish(a, h->stream, next, NSC_ACK_RESEND);
    return 0;
}

void nsc_acks_took(nsc_agent *a, nsc_reg_proc *p, const nsc_batch_hdr *h)
{
    if (!h->stream)
        return;
    p->stream = h->stream;
    p->next_seq = h->seq + 1;
    if (nsc_out_mark(a->out, p, h->base_ns) != 0)
        a->in.nomem++;
}

void nsc_acks_stored(void *agent, const nsc_spool_mark *marks, size_t n)
{
    for (size_t i = 0; i < n; i++)
        publish(agent, marks[i].stream, marks[i].next, NSC_ACK_STORED);
}
