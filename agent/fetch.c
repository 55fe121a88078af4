/* fetch.c: the agent's answers to detail fetches (see fetch.h). */
#include "fetch.h"

#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "grow.h"

#define QUEUE 16
#define MAX_SEEN 4096  /* ring pieces looked at per run */

struct nsc_fetch {
    nsc_ring *ring;
    char agent[64], host[64];
    uint64_t epoch;
    size_t chunk_bytes;
    nsc_a2c_fetch q[QUEUE];  /* q[head] is under way */
    uint32_t head, n;
    uint64_t at;             /* the next ring piece to look at */
    uint32_t chunk;          /* the next chunk's number */
    uint8_t *msg;            /* an encoded chunk not yet taken by the socket */
    size_t msg_len;
    int msg_last;
    /* the chunk being gathered: pieces pointing into data */
    nsc_a2c_piece *pieces;
    size_t npieces, cappieces;
    uint8_t *data;
    size_t ndata, capdata;
    int nomem;
    nsc_fetch_stats st;
};

nsc_fetch *nsc_fetch_new(nsc_ring *ring, const char *agent, const char *host, uint64_t epoch, size_t chunk_bytes)
{
    nsc_fetch *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->ring = ring;
    memcpy(f->agent, agent, strnlen(agent, sizeof f->agent - 1));
    memcpy(f->host, host, strnlen(host, sizeof f->host - 1));
    f->epoch = epoch;
    f->chunk_bytes = chunk_bytes;
    return f;
}

void nsc_fetch_free(nsc_fetch *f)
{
    if (!f)
        return;
    free(f->msg);
    free(f->pieces);
    free(f->data);
    free(f);
}

void nsc_fetch_stats_get(const nsc_fetch *f, nsc_fetch_stats *st)
{
    *st = f->st;
    st->queued = f->n;
}

void nsc_fetch_reset(nsc_fetch *f)
{
    free(f->msg);
    f->msg = NULL;
    f->head = f->n = 0;
    f->at = 0;
    f->chunk = 0;
}

/* A chunk of fetch q without its pieces: what the ring holds now. */
static nsc_a2c_detail head_of(const nsc_fetch *f, const nsc_a2c_fetch *q, uint32_t chunk, int last)
{
    nsc_ring_stats rs = {0};
    if (f->ring)
        nsc_ring_stats_get(f->ring, &rs);
    nsc_a2c_detail d = {.epoch = f->epoch, .id = q->id, .chunk = chunk, .last = (uint8_t)last,
                        .held_from_ns = rs.held_from_ns, .held_to_ns = rs.held_to_ns};
    memcpy(d.agent, f->agent, sizeof d.agent);
    memcpy(d.host, f->host, sizeof d.host);
    return d;
}

/* Encode the gathered pieces as chunk f->chunk of fetch q. */
static int encode(nsc_fetch *f, const nsc_a2c_fetch *q, int last)
{
    nsc_a2c_detail d = head_of(f, q, f->chunk, last);
    d.npieces = (uint32_t)f->npieces;
    d.pieces = f->pieces;
    for (size_t i = 0; i < f->npieces; i++)  /* data may have moved while gathering */
        f->pieces[i].data = f->data + (size_t)f->pieces[i].data;
    f->msg = malloc(nsc_a2c_detail_bound(&d));
    if (!f->msg)
        return -1;
    f->msg_len = nsc_a2c_encode_detail(&d, f->msg);
    f->msg_last = last;
    f->st.chunks++;
    f->st.pieces += f->npieces;
    f->st.bytes += f->msg_len;
    f->chunk++;
    return 0;
}

/* Hand the waiting chunk to the socket; a chunk it does not take waits. */
static void send_msg(nsc_fetch *f, void *sock)
{
    if (zmq_send(sock, f->msg, f->msg_len, ZMQ_DONTWAIT) != (int)f->msg_len) {
        f->st.send_retries++;
        return;
    }
    free(f->msg);
    f->msg = NULL;
    if (!f->msg_last)
        return;
    f->st.answered++;
    f->head = (f->head + 1) % QUEUE;
    f->n--;
    f->at = 0;
    f->chunk = 0;
}

/* A ring piece of the window: copied, since the ring's memory is valid
 * during the scan only. Its data pointer holds an offset until encode. */
static void gather(void *arg, const nsc_ring_meta *m, const uint8_t *data, uint32_t len)
{
    nsc_fetch *f = arg;
    if (nsc_grow(&f->pieces, f->npieces, &f->cappieces, sizeof *f->pieces, 16) ||
        nsc_grow_to(&f->data, f->ndata + len, &f->capdata, 1, 4096)) {
        f->nomem = 1;
        return;
    }
    memcpy(f->data + f->ndata, data, len);
    f->pieces[f->npieces++] = (nsc_a2c_piece){m->seq, (const uint8_t *)(uintptr_t)f->ndata, len};
    f->ndata += len;
}

void nsc_fetch_take(nsc_fetch *f, const nsc_a2c_fetch *q, void *sock)
{
    if (f->n < QUEUE) {
        f->q[(f->head + f->n++) % QUEUE] = *q;
        f->st.fetches++;
        return;
    }
    /* the queue is full: an empty last chunk says so at once (the collector
     * reads what is held and may ask again) */
    uint8_t buf[NSC_A2C_FETCH_MAX];
    nsc_a2c_detail d = head_of(f, q, 0, 1);
    size_t len = nsc_a2c_encode_detail(&d, buf);
    f->st.refused++;
    if (zmq_send(sock, buf, len, ZMQ_DONTWAIT) != (int)len)
        f->st.send_retries++;
}

void nsc_fetch_run(nsc_fetch *f, void *sock)
{
    if (f->msg) {
        send_msg(f, sock);
        return;
    }
    if (f->n == 0)
        return;
    const nsc_a2c_fetch *q = &f->q[f->head];
    nsc_ring_query rq = {.job = q->job, .from_ns = q->from_ns, .to_ns = q->to_ns, .types = q->types,
                         .pids = q->pids, .npids = q->npids};
    uint64_t from = f->at;
    f->npieces = f->ndata = 0;
    f->nomem = 0;
    int more = f->ring ? nsc_ring_scan(f->ring, &rq, &f->at, f->chunk_bytes, MAX_SEEN, gather, f) : 0;
    if (f->nomem) {
        f->at = from;  /* the same pieces are looked at again next run */
        return;
    }
    if (encode(f, q, more <= 0) == 0)
        send_msg(f, sock);
}
