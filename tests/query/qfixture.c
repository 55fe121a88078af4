/* qfixture.c: see qfixture.h. */
#include "qfixture.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "query.h"
#include "storeutil.h"

enum { S_ALLREDUCE = 1, S_FLOAT32, S_RING, S_SIMPLE, S_FLOAT16, NSTRS = 5 };

static int64_t host_off(int rank)
{
    return rank >= 2 ? QF_OFF1 : 0;
}

uint64_t qf_enqueue(int rank, uint64_t seq)
{
    return QF_T0 + seq * QF_PERIOD + (rank == QF_LATE_RANK ? QF_SKEW : 0) + (uint64_t)rank * 10;
}

/* A host clock model with a constant offset off (probes every 100 ms, 30 s). */
static int put_clock(nsc_store *st, const char *host, int64_t off, uint64_t h0)
{
    nsc_clock_model m;
    if (nsc_clock_init(&m, NULL))
        return -1;
    int rc = 0;
    for (uint64_t i = 0; !rc && i < 300; i++) {
        uint64_t t1 = h0 + i * 100000000ull;
        nsc_clock_sample s = {t1, (uint64_t)((int64_t)t1 + off) + 10000,
                              (uint64_t)((int64_t)t1 + off) + 11000, t1 + 21000};
        rc = nsc_clock_add(&m, &s);
    }
    rc = rc ? rc : nsc_clock_flush(&m);
    rc = rc ? rc : nsc_store_put_clock(st, host, &m);
    nsc_clock_free(&m);
    return rc;
}

static void strs(nsc_str_def out[NSTRS])
{
    static const char *const text[NSTRS] = {"AllReduce", "ncclFloat32", "RING", "SIMPLE",
                                            "ncclFloat16"};
    for (int i = 0; i < NSTRS; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].id = (nsc_str)(i + 1);
        snprintf(out[i].text, sizeof out[i].text, "%s", text[i]);
    }
}

/* One rank's records: per collective a Coll, a KernelCh and a send ProxyOp
 * per channel (ring 0->1->2->3 on channel 0, reversed on channel 1). */
static int put_rank(nsc_store *st, int rank)
{
    nsc_event ev[QF_COLLS * QF_EVENTS_PER_COLL];
    nsc_completion done[QF_COLLS];
    size_t n = 0;
    int64_t off = host_off(rank);
    uint64_t id = 1;
    for (uint64_t seq = 0; seq < QF_COLLS; seq++) {
        uint64_t t = (uint64_t)((int64_t)qf_enqueue(rank, seq) - off);
        nsc_event *c = &ev[n++];
        memset(c, 0, sizeof *c);
        c->id = id++;
        c->start_ns = t;
        c->stop_ns = t + 2000;
        c->tid = 77;
        c->rank = rank;
        c->type = NSC_T_COLL;
        c->d.coll.seq = seq;
        c->d.coll.count = 1024;
        c->d.coll.root = -1;
        c->d.coll.func = S_ALLREDUCE;
        c->d.coll.datatype = seq == 3 && rank == 3 ? S_FLOAT16 : S_FLOAT32;
        c->d.coll.algo = S_RING;
        c->d.coll.proto = S_SIMPLE;
        c->d.coll.nchannels = QF_CHANNELS;
        uint64_t coll_id = c->id;
        for (int ch = 0; ch < QF_CHANNELS; ch++) {
            nsc_event *k = &ev[n++];
            memset(k, 0, sizeof *k);
            k->id = id++;
            k->parent = coll_id;
            k->start_ns = t + 3000;
            k->stop_ns = t + 50000;
            k->rank = rank;
            k->type = NSC_T_KERNEL_CH;
            k->d.kernel_ch.channel = (uint8_t)ch;
            nsc_event *p = &ev[n++];
            memset(p, 0, sizeof *p);
            p->id = id++;
            p->parent = coll_id;
            p->start_ns = t + 4000;
            p->stop_ns = t + 40000;
            p->rank = rank;
            p->type = NSC_T_PROXY_OP;
            p->d.proxy_op.channel = (uint8_t)ch;
            p->d.proxy_op.is_send = 1;
            p->d.proxy_op.peer = ch == 0 ? (rank + 1) % QF_RANKS : (rank + QF_RANKS - 1) % QF_RANKS;
        }
        /* every rank completes QF_DONE after the first arrival of the collective */
        done[seq] = (nsc_completion){coll_id,
                                     (uint64_t)((int64_t)(qf_enqueue(0, seq) + QF_DONE) - off)};
    }
    nsc_proc proc = nsc_test_proc("jobA", rank < 2 ? "h0" : "h1", 100 + (uint32_t)rank, rank % 2);
    nsc_ctx_def ctx[2] = {nsc_test_ctx(0, QF_COMM, rank, QF_RANKS),
                          nsc_test_ctx(1, QF_SUB, rank, 2)};
    snprintf(ctx[0].name, sizeof ctx[0].name, "world");
    nsc_str_def sd[NSTRS];
    strs(sd);
    /* ranks 0 and 1: completions in a later batch (stored in the process blocks) */
    int split = rank < 2;
    nsc_store_batch b = {&proc, ctx, rank < 2 ? 2 : 1, sd, NSTRS, ev, n, NULL, 0,
                         done, split ? 0 : QF_COLLS};
    int rc = nsc_store_put(st, &b);
    if (!rc && split) {
        nsc_store_batch late = {&proc, NULL, 0, NULL, 0, NULL, 0, NULL, 0, done, QF_COLLS};
        rc = nsc_store_put(st, &late);
    }
    return rc;
}

int qf_fill(const char *dir)
{
    nsc_store *st;
    int rc = nsc_store_open(dir, NULL, &st);
    if (rc)
        return rc;
    nsc_proc old = nsc_test_proc("old", "h9", 9, 0);
    nsc_ctx_def octx = nsc_test_ctx(0, 0x99, 0, 1);
    nsc_store_batch ob = {&old, &octx, 1, NULL, 0, NULL, 0, NULL, 0, NULL, 0};
    if ((rc = nsc_store_begin(st, 1)) || (rc = nsc_store_put(st, &ob)) ||
        (rc = nsc_store_commit(st)))
        goto out;
    if ((rc = nsc_store_begin(st, 2)))
        goto out;
    for (int r = 0; r < QF_RANKS && !rc; r++)
        rc = put_rank(st, r);
    rc = rc ? rc : put_clock(st, "h1", QF_OFF1, QF_T0 - (uint64_t)QF_OFF1 - 1000000000ull);
    rc = rc ? rc : nsc_store_commit(st);
out:
    nsc_store_close(st);
    return rc;
}

static int collect(void *arg, const void *data, size_t len)
{
    qf_result *r = arg;
    char *t = realloc(r->text, r->len + len + 1);
    if (!t)
        return 1;
    memcpy(t + r->len, data, len);
    r->text = t;
    r->len += len;
    t[r->len] = 0;
    return 0;
}

qf_result qf_run(nsc_store *st, const char *name, const char *qs)
{
    qf_result r;
    memset(&r, 0, sizeof r);
    r.text = calloc(1, 1);
    nsc_query *q;
    r.rc = nsc_query_parse(name, qs, &q, r.err, sizeof r.err);
    if (r.rc)
        return r;
    nsc_store_reader *rd;
    r.rc = nsc_store_read_begin(st, &rd);
    if (!r.rc) {
        r.rc = nsc_query_run(q, rd, collect, &r, r.err, sizeof r.err);
        r.blocks = nsc_store_read_blocks_decoded(rd);
        nsc_store_read_end(rd);
    }
    nsc_query_free(q);
    return r;
}

void qf_result_free(qf_result *r)
{
    free(r->text);
    r->text = NULL;
}
