/* vfeed.c: nsc-vfeed, a ring job's node agents as timed ledger traffic
 * (bench_verdict.sh's 1,024-rank source).
 *
 * Plays in real time what the node agents of a job of NODES x RPN ranks
 * send their collectors when the agents keep raw events on the node
 * (detail = on-demand, docs/agent-forwarding.md): per agent (one per
 * node, host nodeN, to collector N mod the number given), every 50 ms
 * flush an a2c batch with, per process that sent anything (or once a
 * heartbeat second), its section (the wire batch header, the context and
 * string definitions in the first, the counters), its ledger batch of the
 * records written since the last flush (vjob.c: completed once the rank's
 * part ended, in flight hang_ms after a stuck one's enqueue), and a
 * process's STARTED (first batch) and FINISHED (its plugin's final batch)
 * life records; the agent's credit and acks (window 4, at most
 * max_inflight in flight, the agent's max_inflight, default 32; the rest
 * waits as in a spool); clock probes every second (the
 * first five at a tenth of it) with four follow-ups, and the samples; a
 * detail fetch answered as an agent whose ring holds nothing. Encoded by the
 * real codecs (common/wire.c, ledger.c, a2c.c).
 *
 *   nsc-vfeed --collectors EP[,EP...] --nodes N --rpn R --job NAME
 *             [--fault hang|stall|host_late|slow_link|none] [--place P]
 *             [--from K] [--iters I] [--pace-ms 20] [--hang-ms 2000]
 *             [--hold-ms 15000] [--max-inflight 32] [--summary FILE]
 *
 * A stuck job (hang, stall) is held hold_ms after its stuck collective's
 * first call, a running one ends after its last collective. Then it waits
 * (30 s at most) for every batch's ack and prints key=value lines: batches,
 * records, acked, rejected, fetches, backlog_max (batches waiting for credit
 * at most, on any agent), ack_lag_max_ms and ack_lag_mean_ms (a batch's flush
 * to its ack). Exit 0 when every batch was acknowledged, 1 if not, 2 for
 * bad arguments. The summary (the emulator's fields, vjob.c) is written
 * before the job starts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "a2c.h"
#include "grow.h"
#include "mix.h"
#include "mono.h"
#include "vjob.h"

#define MS 1000000ull
#define FLUSH_NS (50 * MS)
#define HEARTBEAT_NS (1000 * MS)
#define PROBE_NS (1000 * MS)
#define FOLLOW_UPS 4
#define WINDOW 4
#define START_NS (300 * MS)    /* connections and first probes before the job */
#define DRAIN_NS (30000 * MS)

typedef struct opts {
    const char *collectors, *job, *summary;
    int nodes, rpn, kind, place;
    uint64_t from, iters, pace_ms, hang_ms, hold_ms, max_inflight;
} opts;

typedef struct vproc {
    int rank;
    uint64_t next_k;     /* its next collective whose record is not written */
    uint64_t wire_seq;   /* its plugin's batch sequence */
    uint64_t last_ns;    /* its last section */
    int started, finished;
} vproc;

/* A batch the agent made: encoded, freed once acknowledged. */
typedef struct vbatch {
    uint8_t *buf;
    size_t len;
    uint64_t made_ns;
} vbatch;

typedef struct vagent {
    void *sock;
    char id[64];
    uint64_t epoch;
    vbatch *q;           /* by seq */
    size_t nbatches, cap;
    uint64_t sent, nacked;
    uint32_t credit;
    int got_ack;
    uint64_t flush_at, probe_at, probe_id, lead_id, scheduled;
    uint32_t follow_left;
    vproc *procs;
} vagent;

typedef struct stats {
    uint64_t records, rejected, fetches, backlog_max, lag_max, lag_sum;
} stats;

static int parse(opts *o, int argc, char **argv)
{
    *o = (opts){.kind = NSC_VJ_NONE, .from = 6, .iters = 500, .pace_ms = 20, .hang_ms = 2000, .hold_ms = 15000,
              .max_inflight = 32};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        char *end;
        unsigned long long n = strtoull(v, &end, 10);
        int num = *v && !*end;
        if (strcmp(k, "--collectors") == 0) o->collectors = v;
        else if (strcmp(k, "--job") == 0) o->job = v;
        else if (strcmp(k, "--summary") == 0) o->summary = v;
        else if (strcmp(k, "--fault") == 0 && nsc_vj_kind(v) >= 0) o->kind = nsc_vj_kind(v);
        else if (!num || n > 1000000000ull) return -1;
        else if (strcmp(k, "--nodes") == 0) o->nodes = (int)n;
        else if (strcmp(k, "--rpn") == 0) o->rpn = (int)n;
        else if (strcmp(k, "--place") == 0) o->place = (int)n;
        else if (strcmp(k, "--from") == 0) o->from = n;
        else if (strcmp(k, "--iters") == 0) o->iters = n;
        else if (strcmp(k, "--pace-ms") == 0) o->pace_ms = n;
        else if (strcmp(k, "--hang-ms") == 0) o->hang_ms = n;
        else if (strcmp(k, "--hold-ms") == 0) o->hold_ms = n;
        else if (strcmp(k, "--max-inflight") == 0) o->max_inflight = n;
        else return -1;
    }
    return argc % 2 == 1 && o->collectors && o->job && strlen(o->job) < 64 && o->nodes > 0 && o->rpn > 0 &&
           o->pace_ms && o->max_inflight ? 0 : -1;
}

/* ---- one process's part of a batch -------------------------------------------- */

/* Its section: the header, definitions in its first, its counters. */
static int encode_section(const opts *o, const nsc_vjob *j, vproc *p, uint64_t now, int final, uint8_t *out,
                          size_t cap, uint32_t *len)
{
    uint64_t seq = p->wire_seq++;
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = seq, .stream = 0x5eed0000ull + (uint64_t)p->rank + 1,
                       .acked = seq, .base_ns = now, .sent_ns = now, .final = (uint8_t)final,
                       .proc = {.pid = nsc_vj_pid(p->rank), .local_rank = p->rank % j->rpn, .gpu = p->rank % j->rpn}};
    snprintf(h.proc.job, sizeof h.proc.job, "%s", o->job);
    snprintf(h.proc.host, sizeof h.proc.host, "node%d", p->rank / j->rpn);
    nsc_counters c = {0};
    c.emitted[NSC_T_COLL] = c.completions_emitted[NSC_T_COLL] = p->next_k;
    nsc_enc e;
    int rc = nsc_enc_begin(&e, out, cap, &h);
    if (!rc && !p->started) {
        nsc_ctx_def ctx = {.comm_id = NSC_VJ_COMM, .index = 0, .nnodes = j->nodes, .nranks = j->nranks,
                           .rank = p->rank, .api_version = 7};
        snprintf(ctx.name, sizeof ctx.name, "world");
        nsc_str_def strs[NSC_MIX_NSTRS];
        nsc_mix_strs(strs);
        rc = nsc_enc_ctx(&e, &ctx);
        for (int i = 0; !rc && i < NSC_MIX_NSTRS; i++)
            rc = nsc_enc_str(&e, &strs[i]);
    }
    if (!rc)
        rc = nsc_enc_counters(&e, &c);
    *len = (uint32_t)nsc_enc_finish(&e);
    return rc;
}

/* Its records due by now (at most MAX_RECS), as a ledger batch into out
 * (cap bytes); how many, or -1. */
#define MAX_RECS 64
static int encode_records(const nsc_vjob *j, vproc *p, uint64_t now, uint8_t *out, size_t cap, uint32_t *len)
{
    nsc_ledger_rec recs[MAX_RECS];
    nsc_ledger_edge edges[MAX_RECS][NSC_VJ_MAX_EDGES];
    nsc_str_def strs[NSC_MIX_NSTRS];
    uint32_t n = 0;
    for (; n < MAX_RECS && p->next_k < nsc_vj_colls(j) && nsc_vj_due(j, p->rank, p->next_k) <= now; p->next_k++) {
        nsc_vj_record(j, p->rank, p->next_k, &recs[n], edges[n]);
        if (recs[n++].flags & NSC_LEDGER_INFLIGHT) {
            p->next_k = nsc_vj_colls(j);  /* written again only when it changes: this job's never do */
            break;
        }
    }
    nsc_mix_strs(strs);
    nsc_ledger_batch b = {.pid = nsc_vj_pid(p->rank), .nstrs = NSC_MIX_NSTRS, .nrecs = n, .strs = strs,
                          .recs = recs};
    if (n && nsc_ledger_bound(&b) > cap)
        return -1;
    *len = n ? (uint32_t)nsc_ledger_encode(&b, out) : 0;
    return (int)n;
}

/* ---- an agent ------------------------------------------------------------------ */

static int queue_batch(vagent *a, uint8_t *buf, size_t len, uint64_t now)
{
    if (nsc_grow(&a->q, a->nbatches, &a->cap, sizeof *a->q, 256))
        return -1;
    a->q[a->nbatches++] = (vbatch){buf, len, now};
    return 0;
}

/* Sizes of a flush's parts: one section and one ledger batch per process. */
#define SECTION_CAP 4096
#define LEDGER_CAP (64 * 1024)

/* The agent's flush at now: a batch of what its processes sent, if any. */
static int flush(const opts *o, const nsc_vjob *j, vagent *a, uint64_t now, int last, stats *st)
{
    int rpn = j->rpn;
    nsc_a2c_section *secs = calloc((size_t)rpn, sizeof *secs), *leds = calloc((size_t)rpn, sizeof *leds);
    nsc_a2c_life *life = calloc((size_t)rpn, sizeof *life);
    uint8_t *mem = malloc((size_t)rpn * (SECTION_CAP + LEDGER_CAP));
    uint32_t nsec = 0, nled = 0, nlife = 0;
    int rc = secs && leds && life && mem ? 0 : -1;
    for (int i = 0; !rc && i < rpn; i++) {
        vproc *p = &a->procs[i];
        uint8_t *sbuf = mem + (size_t)i * (SECTION_CAP + LEDGER_CAP), *lbuf = sbuf + SECTION_CAP;
        if (p->finished)
            continue;
        uint32_t llen;
        int n = encode_records(j, p, now, lbuf, LEDGER_CAP, &llen);
        if (n < 0) {
            rc = -1;
            break;
        }
        st->records += (uint64_t)n;
        if (n)
            leds[nled++] = (nsc_a2c_section){lbuf, llen};
        if (!n && p->started && now - p->last_ns < HEARTBEAT_NS && !last)
            continue;
        if (!p->started || last) {
            nsc_a2c_life *l = &life[nlife++];
            *l = (nsc_a2c_life){.event = last ? NSC_A2C_FINISHED : NSC_A2C_STARTED, .pid = nsc_vj_pid(p->rank),
                                .ts_ns = now, .last_batch_seq = p->wire_seq};
            snprintf(l->job, sizeof l->job, "%s", o->job);
            snprintf(l->host, sizeof l->host, "node%d", p->rank / rpn);
        }
        rc = encode_section(o, j, p, now, last, sbuf, SECTION_CAP, &secs[nsec].len);
        secs[nsec++].data = sbuf;
        p->started = 1;
        p->finished = last;
        p->last_ns = now;
    }
    if (!rc && (nsec || nled)) {
        nsc_a2c_batch b = {.epoch = a->epoch, .seq = a->nbatches, .sent_ns = now, .nsections = nsec, .nlife = nlife,
                           .nledgers = nled, .sections = secs, .ledgers = leds, .life = life};
        snprintf(b.agent, sizeof b.agent, "%s", a->id);
        snprintf(b.host, sizeof b.host, "%s", a->id);
        uint8_t *buf = malloc(nsc_a2c_batch_bound(&b));
        rc = buf ? queue_batch(a, buf, nsc_a2c_encode_batch(&b, buf), now) : -1;
        if (rc)
            free(buf);
    }
    free(secs), free(leds), free(life), free(mem);
    return rc;
}

/* Send what the credit allows. */
static void pump(const opts *o, vagent *a, stats *st)
{
    uint64_t allowed = a->got_ack ? (a->credit < o->max_inflight ? a->credit : o->max_inflight) : WINDOW;
    while (a->sent < a->nbatches && a->sent - a->nacked < allowed &&
           zmq_send(a->sock, a->q[a->sent].buf, a->q[a->sent].len, ZMQ_DONTWAIT) == (int)a->q[a->sent].len)
        a->sent++;
    uint64_t backlog = a->nbatches - a->sent;
    st->backlog_max = backlog > st->backlog_max ? backlog : st->backlog_max;
}

static void send_probe(vagent *a, uint64_t now)
{
    nsc_a2c_probe p = {.kind = NSC_A2C_PROBE, .id = ++a->probe_id, .t1 = now};
    snprintf(p.agent, sizeof p.agent, "%s", a->id);
    snprintf(p.host, sizeof p.host, "%s", a->id);
    uint8_t buf[NSC_A2C_SMALL_MAX];
    zmq_send(a->sock, buf, nsc_a2c_encode_probe(&p, buf), ZMQ_DONTWAIT);
}

/* The scheduled probe: every PROBE_NS, the first five at a tenth of it; its
 * answer starts the follow-ups. */
static void probe_due(vagent *a, uint64_t now)
{
    if (now < a->probe_at)
        return;
    send_probe(a, now);
    a->lead_id = a->probe_id;
    a->follow_left = FOLLOW_UPS;
    a->probe_at = now + (++a->scheduled < 5 ? PROBE_NS / 10 : PROBE_NS);
}

static void take_answer(vagent *a, nsc_a2c_probe *p)
{
    uint64_t now = nsc_mono_ns();
    uint8_t buf[NSC_A2C_SMALL_MAX];
    p->kind = NSC_A2C_SAMPLE;
    p->t4 = now;
    snprintf(p->host, sizeof p->host, "%s", a->id);
    zmq_send(a->sock, buf, nsc_a2c_encode_probe(p, buf), ZMQ_DONTWAIT);
    if (p->id == a->lead_id && a->follow_left) {
        a->follow_left--;
        send_probe(a, now);
        a->lead_id = a->probe_id;
    }
}

static void take_ack(vagent *a, const nsc_a2c_ack *k, stats *st)
{
    if (k->seq >= a->sent || !a->q[k->seq].buf)
        return;
    uint64_t lag = nsc_mono_ns() - a->q[k->seq].made_ns;
    st->lag_max = lag > st->lag_max ? lag : st->lag_max;
    st->lag_sum += lag;
    free(a->q[k->seq].buf);
    a->q[k->seq].buf = NULL;
    a->nacked++;
    a->credit = k->credit;
    a->got_ack = 1;
}

/* A fetch answered as an agent whose ring holds nothing: one empty last chunk. */
static void take_fetch(vagent *a, const nsc_a2c_fetch *f, stats *st)
{
    nsc_a2c_detail d = {.epoch = a->epoch, .id = f->id, .last = 1};
    snprintf(d.agent, sizeof d.agent, "%s", a->id);
    snprintf(d.host, sizeof d.host, "%s", a->id);
    uint8_t buf[512];
    if (nsc_a2c_detail_bound(&d) <= sizeof buf)
        zmq_send(a->sock, buf, nsc_a2c_encode_detail(&d, buf), ZMQ_DONTWAIT);
    st->fetches++;
}

static void take_input(vagent *a, stats *st)
{
    uint8_t buf[NSC_A2C_FETCH_MAX];
    int n;
    while ((n = zmq_recv(a->sock, buf, sizeof buf, ZMQ_DONTWAIT)) >= 0) {
        size_t len = (size_t)n < sizeof buf ? (size_t)n : sizeof buf;
        nsc_a2c_ack ack;
        nsc_a2c_reject rej;
        nsc_a2c_probe probe;
        nsc_a2c_fetch fetch;
        switch (nsc_a2c_kind(buf, len)) {
        case NSC_A2C_ACK:
            if (nsc_a2c_decode_ack(buf, len, &ack) == 0)
                take_ack(a, &ack, st);
            break;
        case NSC_A2C_REJECT:
            if (nsc_a2c_decode_reject(buf, len, &rej) == 0) {
                fprintf(stderr, "nsc-vfeed: %s batch %llu rejected: %s\n", a->id, (unsigned long long)rej.seq,
                        rej.reason);
                st->rejected++;
            }
            break;
        case NSC_A2C_PROBE:
            if (nsc_a2c_decode_probe(buf, len, &probe) == 0)
                take_answer(a, &probe);
            break;
        case NSC_A2C_FETCH:
            if (nsc_a2c_decode_fetch(buf, len, &fetch) == 0)
                take_fetch(a, &fetch, st);
            break;
        }
    }
}

/* ---- the job ------------------------------------------------------------------- */

static void *dealer(void *ctx, const char *endpoint)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    if (!s || zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero) || zmq_setsockopt(s, ZMQ_SNDHWM, &zero, sizeof zero) ||
        zmq_connect(s, endpoint)) {
        fprintf(stderr, "nsc-vfeed: connect %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
        if (s)
            zmq_close(s);
        return NULL;
    }
    return s;
}

/* Agent i's collector: the (i mod n)-th of the comma-separated list. */
static int endpoint_of(const char *list, int i, char *out, size_t cap)
{
    int n = 1;
    for (const char *c = list; *c; c++)
        n += *c == ',';
    const char *s = list;
    for (int k = i % n; k > 0; k--)
        s = strchr(s, ',') + 1;
    size_t len = strcspn(s, ",");
    if (len >= cap)
        return -1;
    memcpy(out, s, len);
    out[len] = 0;
    return 0;
}

static int agents_open(const opts *o, void *ctx, vagent *ag, uint64_t now)
{
    for (int i = 0; i < o->nodes; i++) {
        vagent *a = &ag[i];
        char ep[256];
        snprintf(a->id, sizeof a->id, "node%d", i);
        a->epoch = ((uint64_t)nsc_mono_ns() << 8) ^ (uint64_t)i ^ 0x5eedull;
        a->flush_at = now + FLUSH_NS * (uint64_t)i / (uint64_t)o->nodes;  /* agents flush at their own phases */
        a->probe_at = now;
        if (endpoint_of(o->collectors, i, ep, sizeof ep) || !(a->sock = dealer(ctx, ep)) ||
            !(a->procs = calloc((size_t)o->rpn, sizeof *a->procs)))
            return -1;
        for (int r = 0; r < o->rpn; r++)
            a->procs[r].rank = i * o->rpn + r;
    }
    return 0;
}

/* When the job's traffic ends: a stuck job hold_ms after its stuck
 * collective's first call, a running one after its last record. */
static uint64_t job_end(const opts *o, const nsc_vjob *j)
{
    if (j->kind == NSC_VJ_HANG || j->kind == NSC_VJ_STALL)
        return j->t0 + j->from * j->pace_ns + o->hold_ms * MS;
    uint64_t last = 0;
    for (int r = 0; r < j->nranks; r++) {
        uint64_t t = nsc_vj_due(j, r, j->iters - 1);
        last = t > last ? t : last;
    }
    return last + FLUSH_NS;
}

static int all_acked(const vagent *ag, int n)
{
    for (int i = 0; i < n; i++)
        if (ag[i].nacked < ag[i].nbatches)
            return 0;
    return 1;
}

static int run(const opts *o, nsc_vjob *j, vagent *ag, zmq_pollitem_t *pi, stats *st)
{
    uint64_t end = job_end(o, j), ended = 0;
    for (;;) {
        uint64_t now = nsc_mono_ns(), wake = now + 5 * MS;
        int last = now >= end && !ended;
        for (int i = 0; i < o->nodes; i++) {
            vagent *a = &ag[i];
            if ((!ended && now >= a->flush_at) || last) {
                if (flush(o, j, a, now, last, st))
                    return -1;
                a->flush_at += FLUSH_NS;
            }
            probe_due(a, now);
            pump(o, a, st);
            wake = a->flush_at < wake ? a->flush_at : wake;
            pi[i] = (zmq_pollitem_t){a->sock, 0, ZMQ_POLLIN, 0};
        }
        ended |= last;
        if (ended && (all_acked(ag, o->nodes) || now > end + DRAIN_NS))
            return 0;
        zmq_poll(pi, o->nodes, wake > now ? (long)((wake - now) / MS) : 0);
        for (int i = 0; i < o->nodes; i++)
            take_input(&ag[i], st);
    }
}

static int write_summary(const char *path, const nsc_vjob *j)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return -1;
    int rc = nsc_vj_summary(j, f);
    return fclose(f) || rc || rename(tmp, path) ? -1 : 0;
}

int main(int argc, char **argv)
{
    opts o;
    nsc_vjob j;
    if (parse(&o, argc, argv) ||
        nsc_vj_init(&j, o.nodes, o.rpn, o.iters, nsc_mono_ns() + START_NS, o.pace_ms * MS, o.hang_ms * MS, o.kind,
                    o.place, o.from)) {
        fprintf(stderr, "usage: nsc-vfeed --collectors EP[,EP...] --nodes N --rpn R --job NAME [--fault KIND] "
                        "[--place P] [--from K] [--iters I] [--pace-ms MS] [--hang-ms MS] [--hold-ms MS] "
                        "[--max-inflight N] [--summary FILE] (see tests/bench/vfeed.c)\n");
        return 2;
    }
    if (o.summary && write_summary(o.summary, &j)) {
        fprintf(stderr, "nsc-vfeed: cannot write %s\n", o.summary);
        nsc_vj_free(&j);
        return 1;
    }
    void *ctx = zmq_ctx_new();
    vagent *ag = calloc((size_t)o.nodes, sizeof *ag);
    zmq_pollitem_t *pi = calloc((size_t)o.nodes, sizeof *pi);
    stats st = {0};
    int rc = ctx && ag && pi && agents_open(&o, ctx, ag, nsc_mono_ns()) == 0 ? run(&o, &j, ag, pi, &st) : -1;
    uint64_t batches = 0, acked = 0;
    for (int i = 0; ag && i < o.nodes; i++) {
        batches += ag[i].nbatches;
        acked += ag[i].nacked;
        for (size_t s = 0; s < ag[i].nbatches; s++)
            free(ag[i].q[s].buf);
        free(ag[i].q), free(ag[i].procs);
        if (ag[i].sock)
            zmq_close(ag[i].sock);
    }
    printf("batches=%llu\nrecords=%llu\nacked=%llu\nrejected=%llu\nfetches=%llu\nbacklog_max=%llu\n"
           "ack_lag_max_ms=%.1f\nack_lag_mean_ms=%.1f\n",
           (unsigned long long)batches, (unsigned long long)st.records, (unsigned long long)acked,
           (unsigned long long)st.rejected, (unsigned long long)st.fetches, (unsigned long long)st.backlog_max,
           (double)st.lag_max / 1e6, acked ? (double)st.lag_sum / (double)acked / 1e6 : 0.0);
    free(ag), free(pi);
    if (ctx)
        zmq_ctx_term(ctx);
    nsc_vj_free(&j);
    return rc || acked < batches ? 1 : 0;
}
