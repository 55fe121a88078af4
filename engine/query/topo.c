/* topo.c: communicators of a job and how they relate (comms), and one
 * communicator's placement and channel rings (topology). */
#include "qint.h"
#include "grow.h"
#include "order.h"
#include "commlabel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPO_BLOCKS 16  /* blocks per rank read for ProxyOp peers */
#define TOPO_SEQS 16    /* collectives read for the ledger's send edges */

/* ---- comms ----------------------------------------------------------------- */

typedef struct cm_info {
    nsc_store_comm comm;
    nsc_store_rank_entry *ranks;
    size_t n;
} cm_info;

static int has_proc(const cm_info *m, uint32_t proc)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->ranks[i].info.proc_id == proc)
            return 1;
    return 0;
}

/* Processes of a found in b: 0 none, 1 some, 2 all. */
static int procs_in(const cm_info *a, const cm_info *b)
{
    size_t in = 0;
    for (size_t i = 0; i < a->n; i++)
        in += has_proc(b, a->ranks[i].info.proc_id);
    return in == 0 ? 0 : in == a->n ? 2 : 1;
}

static size_t count_hosts(const cm_info *m)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t k = 0;
        while (k < i && strcmp(m->ranks[k].info.host, m->ranks[i].info.host) != 0)
            k++;
        n += k == i;
    }
    return n;
}

/* The label of look[i] among the job's communicators (commlabel.h). */
static void write_label(nsc_q_out *o, const nsc_comm_look *look, size_t n, size_t i)
{
    char label[NSC_COMM_LABEL_MAX];
    nsc_comm_label(look, n, i, label, sizeof label);
    nsc_q_lit(o, ",\"label\":");
    nsc_q_str(o, label);
}

/* m's hosts by name (a person reads them as a list); -1 out of memory. */
static int write_hosts(nsc_q_out *o, const cm_info *m, size_t *nhosts)
{
    const char **names = malloc((m->n ? m->n : 1) * sizeof *names);
    if (!names)
        return -1;
    *nhosts = 0;
    for (size_t i = 0; i < m->n; i++) {
        size_t k = 0;
        while (k < i && strcmp(m->ranks[k].info.host, m->ranks[i].info.host) != 0)
            k++;
        if (k == i)
            names[(*nhosts)++] = m->ranks[i].info.host;
    }
    if (*nhosts)
        qsort(names, *nhosts, sizeof *names, nsc_cmp_str);
    nsc_q_lit(o, ",\"hosts\":[");
    for (size_t i = 0; i < *nhosts; i++) {
        nsc_q_cs(o, i ? "," : "");
        nsc_q_str(o, names[i]);
    }
    nsc_q_lit(o, "]");
    free(names);
    return 0;
}

/* all[i], the nth communicator written (all[] for how they relate); -1 out
 * of memory. */
static int write_comm(nsc_q_ctx *c, const cm_info *all, const nsc_comm_look *look, size_t n, size_t i, size_t nth)
{
    nsc_q_out *o = c->out;
    const cm_info *m = &all[i];
    nsc_q_cs(o, nth ? ",{" : "{");
    nsc_q_write_comm(o, &m->comm);
    write_label(o, look, n, i);
    nsc_q_lit(o, ",\"ranks_seen\":");
    nsc_q_u64(o, m->n);
    nsc_q_lit(o, ",\"ranks\":[");
    size_t procs = 0;
    for (size_t k = 0; k < m->n; k++) {
        nsc_q_cs(o, k ? "," : "");
        nsc_q_i64(o, m->ranks[k].rank);
        size_t j = 0;
        while (j < k && m->ranks[j].info.proc_id != m->ranks[k].info.proc_id)
            j++;
        procs += j == k;
    }
    nsc_q_lit(o, "]");
    size_t nhosts;
    if (write_hosts(o, m, &nhosts))
        return -1;
    nsc_q_lit(o, ",\"nnodes\":");
    nsc_q_u64(o, nhosts);
    nsc_q_lit(o, ",\"procs\":");
    nsc_q_u64(o, procs);
    for (int pass = 0; pass < 2; pass++) {
        nsc_q_cs(o, pass ? ",\"shares_procs_with\":[" : ",\"split_of\":[");
        int first = 1;
        for (size_t k = 0; k < n; k++) {
            if (k == i || !m->n)
                continue;
            int in = procs_in(m, &all[k]);
            int hit = pass ? in > 0 : in == 2 && all[k].comm.nranks > m->comm.nranks;
            if (!hit)
                continue;
            nsc_q_cs(o, first ? "" : ",");
            nsc_q_hex(o, all[k].comm.comm_id);
            first = 0;
        }
        nsc_q_lit(o, "]");
    }
    nsc_q_lit(o, "}");
    return 0;
}

int nsc_q_comms(nsc_q_ctx *c)
{
    nsc_store_comm *comms;
    size_t n;
    int rc = nsc_store_comms(c->rd, c->job, &comms, &n);
    if (rc)
        return nsc_q_store_fail(c, rc);
    size_t shown = 0;
    for (size_t i = 0; i < n; i++)
        shown += !(c->q->has & QP_COMM) || nsc_q_comm_matches(c->q, &comms[i]);
    if (!shown && (c->q->has & QP_COMM)) {
        free(comms);
        return nsc_q_comm_missing(c);
    }
    cm_info *all = calloc(n ? n : 1, sizeof *all);
    nsc_comm_look *look = malloc((n ? n : 1) * sizeof *look);
    if (!all || !look)
        rc = nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        all[i].comm = comms[i];
        if ((rc = nsc_store_comm_ranks(c->rd, c->job, comms[i].comm_id, &all[i].ranks, &all[i].n)))
            rc = nsc_q_store_fail(c, rc);
        else
            look[i] = (nsc_comm_look){comms[i].comm_id, all[i].comm.name, comms[i].nranks, count_hosts(&all[i])};
    }
    if (!rc) {
        nsc_q_out *o = c->out;
        nsc_q_lit(o, "{\"job\":");
        nsc_q_str(o, c->job_name);
        nsc_q_write_wall(c);
        nsc_q_lit(o, ",\"comms\":[");
        for (size_t i = 0, nth = 0; !rc && i < n; i++)
            if ((!(c->q->has & QP_COMM) || nsc_q_comm_matches(c->q, &comms[i])) && write_comm(c, all, look, n, i, nth++))
                rc = nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
        nsc_q_lit(o, "]}\n");
        rc = rc ? rc : o->err;
    }
    for (size_t i = 0; all && i < n; i++)
        free(all[i].ranks);
    free(all);
    free(look);
    free(comms);
    return rc;
}

/* ---- topology ---------------------------------------------------------------- */

typedef struct tp_peer {
    uint8_t channel;
    int32_t rank, peer;
} tp_peer;

typedef struct tp_set {
    tp_peer *v;
    size_t n, cap;
} tp_set;

static int add_peer(nsc_q_ctx *c, tp_set *s, tp_peer p)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].channel == p.channel && s->v[i].rank == p.rank && s->v[i].peer == p.peer)
            return 0;
    if (nsc_grow(&s->v, s->n, &s->cap, sizeof *s->v, 64))
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    s->v[s->n++] = p;
    return 0;
}

/* Send peers of one block of rank r (its first TOPO_BLOCKS are read). */
static int block_peers(nsc_q_ctx *c, const nsc_q_rank *r, const nsc_block *blk, void *arg)
{
    int rc = 0;
    for (uint32_t i = 0; !rc && i < blk->hdr.nevents; i++) {
        const nsc_event *ev = &blk->events[i];
        if (ev->type == NSC_T_PROXY_OP && ev->d.proxy_op.is_send)
            rc = add_peer(c, arg, (tp_peer){ev->d.proxy_op.channel, r->rank, ev->d.proxy_op.peer});
    }
    return rc;
}

typedef struct tp_ledger {
    nsc_q_ctx *c;
    tp_set *s;
    uint64_t seq;   /* the collective being read */
    size_t seqs;    /* collectives read */
} tp_ledger;

/* Send peers of one ledger record: its send edges. The records come in seq
 * order: those of the first TOPO_SEQS collectives are read. */
static int ledger_peers(void *arg, const nsc_ledger_rec *x)
{
    tp_ledger *u = arg;
    if (!nsc_q_rank_selected(u->c->q, x->rank))
        return 0;
    if (!u->seqs || x->seq != u->seq) {
        if (u->seqs == TOPO_SEQS)
            return 1;
        u->seq = x->seq;
        u->seqs++;
    }
    int rc = 0;
    for (uint32_t i = 0; !rc && i < x->nedges; i++)
        if (x->edges[i].is_send)
            rc = add_peer(u->c, u->s, (tp_peer){x->edges[i].channel, x->rank, x->edges[i].peer});
    return rc;
}

/* Send peers from the ledger's edges, else (a store written before the
 * ledger, or records without network detail) from the raw ProxyOps: with
 * detail = on-demand the store holds no ProxyOp. */
static int send_peers(nsc_q_ctx *c, tp_set *s)
{
    tp_ledger u = {.c = c, .s = s};
    nsc_store_ledger_q lq = {c->job, c->comm.comm_id, 0, UINT64_MAX, 0, 0};
    nsc_q_rank_window(c->q, &lq.rank_lo, &lq.rank_hi);
    int rc = nsc_store_ledger_read(c->rd, &lq, ledger_peers, &u);
    if (rc && rc != 1)
        return rc == NSC_QUERY_ESTORE ? rc : nsc_q_store_fail(c, rc);
    if (s->n)
        return 0;
    rc = 0;
    for (size_t r = 0; !rc && r < c->nranks; r++)
        rc = nsc_q_rank_blocks(c, &c->ranks[r], TOPO_BLOCKS, block_peers, s);
    return rc;
}

static int by_channel(const void *a, const void *b)
{
    const tp_peer *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->channel, y->channel), NSC_CMP(x->rank, y->rank), NSC_CMP(x->peer, y->peer));
}

/* The ring of one channel: follow each rank's only send peer from the lowest
 * rank. Written as null when a rank has several send peers (not a ring). */
static void write_ring(nsc_q_ctx *c, const tp_peer *p, size_t n)
{
    nsc_q_out *o = c->out;
    for (size_t i = 1; i < n; i++)
        if (p[i].rank == p[i - 1].rank) {
            nsc_q_lit(o, ",\"ring\":null,\"complete\":false");
            return;
        }
    nsc_q_lit(o, ",\"ring\":[");
    int32_t at = p[0].rank;
    size_t len = 0;
    int complete = 0;
    while (len <= n) {
        nsc_q_cs(o, len ? "," : "");
        nsc_q_i64(o, at);
        len++;
        size_t k = 0;
        while (k < n && p[k].rank != at)
            k++;
        if (k == n)
            break;
        at = p[k].peer;
        if (at == p[0].rank) {
            complete = len == (size_t)c->comm.nranks;
            break;
        }
    }
    nsc_q_cs(o, complete ? "],\"complete\":true" : "],\"complete\":false");
}

static void write_channels(nsc_q_ctx *c, tp_set *s)
{
    nsc_q_out *o = c->out;
    if (s->n)  /* qsort wants an array even for none (UBSan) */
        qsort(s->v, s->n, sizeof *s->v, by_channel);
    nsc_q_lit(o, ",\"channels\":[");
    for (size_t i = 0; i < s->n;) {
        size_t j = i;
        while (j < s->n && s->v[j].channel == s->v[i].channel)
            j++;
        nsc_q_cs(o, i ? ",{\"channel\":" : "{\"channel\":");
        nsc_q_u64(o, s->v[i].channel);
        write_ring(c, s->v + i, j - i);
        nsc_q_lit(o, ",\"send_peers\":[");
        for (size_t k = i; k < j; k++) {
            nsc_q_cs(o, k > i ? ",[" : "[");
            nsc_q_i64(o, s->v[k].rank);
            nsc_q_lit(o, ",");
            nsc_q_i64(o, s->v[k].peer);
            nsc_q_lit(o, "]");
        }
        nsc_q_lit(o, "]}");
        i = j;
    }
    nsc_q_lit(o, "]");
}

static int by_host_name(const void *a, const void *b)
{
    return strcmp((*(const nsc_q_host *const *)a)->name, (*(const nsc_q_host *const *)b)->name);
}

/* The nodes by name, each with its ranks; -1 out of memory. */
static int write_nodes(nsc_q_ctx *c)
{
    nsc_q_out *o = c->out;
    const nsc_q_host **byname = malloc((c->nhosts ? c->nhosts : 1) * sizeof *byname);
    if (!byname)
        return -1;
    for (size_t h = 0; h < c->nhosts; h++)
        byname[h] = &c->hosts[h];
    if (c->nhosts)
        qsort(byname, c->nhosts, sizeof *byname, by_host_name);
    nsc_q_lit(o, ",\"nodes\":[");
    for (size_t i = 0; i < c->nhosts; i++) {
        const nsc_q_host *h = byname[i];
        nsc_q_cs(o, i ? ",{\"host\":" : "{\"host\":");
        nsc_q_str(o, h->name);
        nsc_q_cs(o, h->has_model ? ",\"clock\":\"model\",\"ranks\":[" : ",\"clock\":\"identity\",\"ranks\":[");
        int first = 1;
        for (size_t r = 0; r < c->nranks; r++)
            if (c->ranks[r].host == (int)(h - c->hosts)) {
                nsc_q_cs(o, first ? "" : ",");
                nsc_q_i64(o, c->ranks[r].rank);
                first = 0;
            }
        nsc_q_lit(o, "]}");
    }
    nsc_q_lit(o, "]");
    free(byname);
    return 0;
}

int nsc_q_topology(nsc_q_ctx *c)
{
    nsc_q_out *o = c->out;
    tp_set peers = {0};
    int rc = send_peers(c, &peers);
    if (!rc) {
        nsc_q_lit(o, "{");
        nsc_q_write_comm_head(c);
        nsc_q_lit(o, ",\"ranks\":[");
        for (size_t i = 0; i < c->nranks; i++) {
            const nsc_q_rank *r = &c->ranks[i];
            nsc_q_cs(o, i ? ",{\"rank\":" : "{\"rank\":");
            nsc_q_i64(o, r->rank);
            nsc_q_lit(o, ",\"host\":");
            nsc_q_str(o, r->info.host);
            nsc_q_lit(o, ",\"pid\":");
            nsc_q_u64(o, r->info.pid);
            nsc_q_lit(o, ",\"gpu\":");
            nsc_q_i64(o, r->info.gpu);
            nsc_q_lit(o, ",\"local_rank\":");
            nsc_q_i64(o, r->info.local_rank);
            nsc_q_lit(o, "}");
        }
        nsc_q_lit(o, "]");
        if (write_nodes(c))
            rc = nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
        write_channels(c, &peers);
        nsc_q_write_skipped(c);
        nsc_q_lit(o, "}\n");
        rc = rc ? rc : o->err;
    }
    free(peers.v);
    return rc;
}
