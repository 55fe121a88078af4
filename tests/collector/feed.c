/* feed.c: nsc-feed, a load generator and checker for ncclscope-collector.
 *
 * Acts as N agents, each a real ZeroMQ DEALER: builds sections with the wire
 * encoder (the realistic mix of mix.h, P processes per agent, one section per
 * process) and a2c batches, sends them with a credit window, counts the acks
 * and can send everything again (duplicates) or send garbage first (and
 * print the collector's rejections of the batches it can name:
 * garbage_rejected=REASON,...).
 *
 *   nsc-feed --endpoint EP [--agents N] [--procs P] [--batches B] [--colls C]
 *            [--first S] [--resend K] [--garbage] [--window W] [--timeout-ms T]
 *            [--ack-log FILE] [--pool M] [--prefix NAME] [--distinct] [--ledger L]
 *            [--ledger-alone K] [--ledger-open K]
 *   nsc-feed --direct DB [--agents N] [--procs P] [--batches B] [--colls C] [--ledger L]
 *   nsc-feed --check DB --agents N --prefix NAME --first S --batches B
 *            [--procs P] [--colls C] [--ack-log FILE] [--ledger L]
 *
 * Direct mode is the benchmark's baseline: the same pre-encoded sections
 * decoded and put into a store with no network and no collector, 64 batches
 * per commit. Send mode prints key=value lines (batches, acked, dup_acked, events,
 * seconds, events_per_s, and middle_events_per_s: the rate from a tenth of
 * the batches acknowledged to nine tenths) and exits 0 when every batch of every agent was
 * acknowledged within the timeout, else 1. Check mode opens the store read
 * only and exits 0 when each agent's committed sequences are exactly
 * [first, first+batches) (or cover every seq of the ack log), and the store's
 * event count is exactly that many batches' events: each batch stored once.
 * --distinct (send mode): each agent its own sections (its own host name
 * and collectives) instead of every agent the same pool: a store that
 * sorts records across batches (ClickHouse's tables) then has no copies
 * side by side to compress, as with real agents; with --pool at least
 * --batches, no section repeats at all.
 *
 * --ledger L: each batch also carries L ledger records per process
 * (nsc_mix_ledger; agent i's seqs start at i << 32, so no two agents' records
 * share a key), and check mode wants exactly that many ledger records
 * stored. Direct mode with --ledger puts the ledger records alone, as a
 * collector with on-demand detail gets them, and prints
 * ledger_records_per_s and ledger_bytes_per_record. --ledger-alone K: the
 * last K batches of each agent carry their ledger records without the
 * sections (a process's in-flight records after its events stopped).
 * --ledger-open K: only the records of every K-th seq have a kernel that
 * ended on every channel (the others' started, none ended), so a record's
 * previous kernel end lies up to K records back.
 *
 *   nsc-feed --endpoint EP --hostile MODE [--count N] [--timeout-ms T]
 *
 * Hostile mode is one agent ("hostile") making the collector hold what a
 * peer can claim, then printing sent=, acked=, rejected= (answers of each kind) and exiting 0 (the script
 * reads the collector's counters): nranks, a batch whose context claims
 * 1,000,000 ranks; comms, a batch with N communicator definitions; procs,
 * N processes of job "hostile" (256 sections a batch, within the credit);
 * hosts, N clock samples, each of another host; credit, N batches of 256
 * sections sent at once, ignoring the credit; detail, two detail chunks
 * nobody asked for, one cut short and one whose piece is no plugin batch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "a2c.h"
#include "mix.h"
#include "mono.h"
#include "store.h"
#include "storeutil.h"
#include "wire.h"

typedef struct opts {
    const char *endpoint, *check, *ack_log, *prefix, *direct, *hostile;
    uint64_t count;
    unsigned agents, procs, colls, window, pool;
    uint64_t batches, first, resend, timeout_ms;
    unsigned ledger, ledger_alone, ledger_open;
    int garbage, distinct;
} opts;

typedef struct agent {
    void *sock;
    char id[64];
    uint64_t next;        /* next seq to send */
    uint64_t end;         /* one past the last seq to send */
    uint64_t inflight, credit;
    uint8_t *acked;       /* per seq of the current pass */
    uint64_t nacked;
    unsigned group;       /* its sections in the pool (--distinct), else 0 */
    unsigned index;
} agent;

/* Pre-encoded sections: pool entries of procs sections each, reused across
 * seqs; one such group per agent with --distinct. */
typedef struct pool {
    nsc_a2c_section *secs;  /* pool * procs */
    uint8_t **bufs;
    uint64_t events_per_batch;
} pool;

static double now_s(void) { return (double)nsc_mono_ns() * 1e-9; }

static int encode_section(nsc_mix *m, const nsc_proc *proc, const nsc_ctx_def *ctx,
                          const nsc_str_def *strs, uint64_t seq, nsc_a2c_section *out,
                          uint8_t **buf)
{
    size_t cap = NSC_WIRE_REC_MAX * (m->nevents + m->nstates + m->ncompletions + NSC_MIX_NSTRS + 3);
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = seq, .base_ns = m->events[0].start_ns,
                       .sent_ns = m->now_ns, .proc = *proc};
    nsc_enc e;
    if (!(*buf = malloc(cap)) || nsc_enc_begin(&e, *buf, cap, &h))
        return -1;
    int rc = nsc_enc_ctx(&e, ctx);
    for (int i = 0; !rc && i < NSC_MIX_NSTRS; i++)
        rc = nsc_enc_str(&e, &strs[i]);
    for (size_t i = 0; !rc && i < m->nevents; i++)
        rc = nsc_enc_event(&e, &m->events[i]);
    for (size_t i = 0; !rc && i < m->nstates; i++)
        rc = nsc_enc_state(&e, &m->states[i]);
    for (size_t i = 0; !rc && i < m->ncompletions; i++)
        rc = nsc_enc_completion(&e, &m->completions[i]);
    out->data = *buf;
    out->len = (uint32_t)nsc_enc_finish(&e);
    return rc;
}

static unsigned groups(const opts *o) { return o->distinct ? o->agents : 1; }

/* Group g's sections: pool entries of procs sections. */
static int build_group(const opts *o, pool *p, unsigned g)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    char host[32];
    snprintf(host, sizeof host, o->distinct ? "feedhost%u" : "feedhost", g);
    for (unsigned pr = 0; pr < o->procs; pr++) {
        nsc_mix m;
        if (nsc_mix_init(&m, 7 + pr + 100 * g, o->colls))
            return -1;
        nsc_proc proc = nsc_test_proc("feed", host, 1000 + pr, (int)pr);
        nsc_ctx_def ctx = nsc_test_ctx(0, 0xfeed, (int)pr, (int)o->procs);
        for (unsigned k = 0; k < o->pool; k++) {
            nsc_mix_clear(&m);
            for (unsigned c = 0; c < o->colls; c++)
                nsc_mix_collective(&m, 0, (int32_t)pr);
            if (pr == 0 && k == 0)
                p->events_per_batch = m.nevents * o->procs;
            size_t at = ((size_t)g * o->pool + k) * o->procs + pr;
            if (encode_section(&m, &proc, &ctx, strs, k, &p->secs[at], &p->bufs[at]))
                return -1;
        }
        nsc_mix_free(&m);
    }
    return 0;
}

static int build_pool(const opts *o, pool *p)
{
    size_t n = (size_t)groups(o) * o->pool * o->procs;
    p->secs = calloc(n, sizeof *p->secs);
    p->bufs = calloc(n, sizeof *p->bufs);
    if (!p->secs || !p->bufs)
        return -1;
    for (unsigned g = 0; g < groups(o); g++)
        if (build_group(o, p, g))
            return -1;
    return 0;
}

static void free_pool(const opts *o, pool *p)
{
    for (size_t i = 0; p->bufs && i < (size_t)groups(o) * o->pool * o->procs; i++)
        free(p->bufs[i]);
    free(p->bufs);
    free(p->secs);
}

/* --ledger: the ledger batch of agent a's process pr in its batch seq. */
static nsc_ledger_batch ledger_of(const opts *o, unsigned a, unsigned pr, uint64_t seq, nsc_ledger_rec *recs,
                                  const nsc_str_def *strs)
{
    for (unsigned i = 0; i < o->ledger; i++) {
        nsc_mix_ledger(&recs[i], 0xfeed, ((uint64_t)a << 32) + seq * o->ledger + i, (int32_t)pr);
        if (o->ledger_open && recs[i].seq % o->ledger_open)
            recs[i].nchannels_done = 0, recs[i].gpu_end_ns = 0;
    }
    return (nsc_ledger_batch){.pid = 1000 + pr, .nstrs = NSC_MIX_NSTRS, .nrecs = o->ledger, .strs = strs,
                              .recs = recs};
}

/* The bytes a batch's ledgers take at most. */
static size_t ledger_cap(const opts *o)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_ledger_rec *recs = calloc(o->ledger ? o->ledger : 1, sizeof *recs);
    nsc_mix_strs(strs);
    nsc_ledger_batch b = ledger_of(o, 0, 0, 0, recs, strs);
    size_t n = o->ledger ? (nsc_ledger_bound(&b) + 16) * o->procs : 0;
    free(recs);
    return n;
}

/* --ledger: the ledger sections of agent a's batch seq, encoded into out. */
static int encode_ledgers(const opts *o, unsigned a, uint64_t seq, nsc_a2c_section *secs, uint8_t *out)
{
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_ledger_rec *recs = calloc(o->ledger, sizeof *recs);
    if (!recs)
        return -1;
    nsc_mix_strs(strs);
    for (unsigned pr = 0; pr < o->procs; pr++) {
        nsc_ledger_batch b = ledger_of(o, a, pr, seq, recs, strs);
        secs[pr] = (nsc_a2c_section){out, (uint32_t)nsc_ledger_encode(&b, out)};
        out += secs[pr].len;
    }
    free(recs);
    return 0;
}

static int send_batch(agent *a, const opts *o, const pool *p, uint64_t seq, uint8_t *buf)
{
    nsc_a2c_section *lsecs = o->ledger ? calloc(o->procs, sizeof *lsecs) : NULL;
    uint8_t *lbuf = o->ledger ? malloc(ledger_cap(o)) : NULL;
    nsc_a2c_batch b = {.seq = seq, .sent_ns = seq, .nsections = o->procs,
                       .sections = &p->secs[((size_t)a->group * o->pool + seq % o->pool) * o->procs]};
    if (o->ledger && (!lsecs || !lbuf || encode_ledgers(o, a->index, seq, lsecs, lbuf))) {
        free(lsecs), free(lbuf);
        return -1;
    }
    b.nledgers = o->ledger ? o->procs : 0;
    b.ledgers = lsecs;
    if (seq + o->ledger_alone >= o->first + o->batches)
        b.nsections = 0;
    snprintf(b.agent, sizeof b.agent, "%s", a->id);
    snprintf(b.host, sizeof b.host, "%s", a->id);
    size_t n = nsc_a2c_encode_batch(&b, buf);
    free(lsecs), free(lbuf);
    return zmq_send(a->sock, buf, n, 0) == (int)n ? 0 : -1;
}

/* Acks waiting on a's socket; returns acks of new seqs. */
static void take_acks(agent *a, const opts *o, FILE *log, uint64_t *dups)
{
    uint8_t buf[NSC_A2C_SMALL_MAX];
    int n;
    while ((n = zmq_recv(a->sock, buf, sizeof buf, ZMQ_DONTWAIT)) >= 0) {
        nsc_a2c_ack ack;
        if (n > (int)sizeof buf || nsc_a2c_decode_ack(buf, (size_t)n, &ack) ||
            ack.seq < o->first || ack.seq >= a->end)
            continue;
        a->credit = ack.credit;
        if (a->inflight)
            a->inflight--;
        uint8_t *seen = &a->acked[ack.seq - o->first];
        if (*seen) {
            (*dups)++;
            continue;
        }
        *seen = 1;
        a->nacked++;
        if (log) {
            fprintf(log, "%s %llu\n", a->id, (unsigned long long)ack.seq);
            fflush(log);
        }
    }
}

/* The pass's middle: when the acknowledged batches first reached a tenth
 * and nine tenths of the pass, and how many they were then. Its rate leaves
 * out the pipeline's fill and the last insert's wait for its timer, which a
 * stream that never ends does not have. */
typedef struct middle {
    double t[2];
    uint64_t got[2];
} middle;

static void note_middle(middle *m, uint64_t got, uint64_t want)
{
    for (int i = 0; i < 2; i++)
        if (!m->got[i] && got * 10 >= want * (i ? 9 : 1)) {
            m->t[i] = now_s();
            m->got[i] = got;
        }
}

/* One pass over [from, end) for every agent; 0 when all were acknowledged.
 * mid (or NULL) gets the pass's middle. */
static int run_pass(agent *ag, const opts *o, const pool *p, uint64_t from, uint8_t *buf, FILE *log,
                    uint64_t *dups, middle *mid)
{
    double deadline = now_s() + (double)o->timeout_ms / 1000;
    uint64_t want = 0;
    for (unsigned i = 0; i < o->agents; i++) {
        ag[i].next = from;
        ag[i].inflight = 0;
        ag[i].credit = o->window;
        ag[i].nacked = 0;
        memset(ag[i].acked, 0, ag[i].end - o->first);
        for (uint64_t s = o->first; s < from; s++)
            ag[i].acked[s - o->first] = 1;  /* not sent in this pass */
        want += ag[i].end - from;
    }
    uint64_t got = 0;
    zmq_pollitem_t *pi = calloc(o->agents, sizeof *pi);
    while (got < want && now_s() < deadline) {
        for (unsigned i = 0; i < o->agents; i++) {
            agent *a = &ag[i];
            while (a->next < a->end && a->inflight < a->credit) {
                if (send_batch(a, o, p, a->next, buf))
                    break;
                a->next++;
                a->inflight++;
            }
            pi[i] = (zmq_pollitem_t){a->sock, 0, ZMQ_POLLIN, 0};
        }
        zmq_poll(pi, o->agents, 50);
        got = 0;
        for (unsigned i = 0; i < o->agents; i++) {
            take_acks(&ag[i], o, log, dups);
            got += ag[i].nacked;
        }
        if (mid)
            note_middle(mid, got, want);
    }
    free(pi);
    return got == want ? 0 : -1;
}

#define NSC_FEED_FORGED "x\"} 1\nncclscope_injected_total 42\n"

#define GARBAGE_NAMED 3  /* garbage batches whose head names them: each rejected */

/* The collector's answers to the garbage batches it could name, printed. */
static void take_rejections(void *s)
{
    int wait_ms = 10000;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &wait_ms, sizeof wait_ms);
    printf("garbage_rejected=");
    for (int got = 0; got < GARBAGE_NAMED;) {
        uint8_t small[NSC_A2C_SMALL_MAX];
        nsc_a2c_reject r;
        int n = zmq_recv(s, small, sizeof small, 0);
        if (n < 0)
            break;
        if (n <= (int)sizeof small && nsc_a2c_decode_reject(small, (size_t)n, &r) == 0 && r.seq == 1 &&
            strcmp(r.agent, "garbage") == 0)
            printf("%s%s", got++ ? "," : "", r.reason);
    }
    printf("\n");
}

/* Malformed messages of every kind, on socket s (then the run must still work). */
static void send_garbage(void *s, const opts *o, const pool *p, uint8_t *buf)
{
    nsc_a2c_batch b = {.seq = 1, .nsections = o->procs, .sections = p->secs};
    snprintf(b.agent, sizeof b.agent, "garbage");
    snprintf(b.host, sizeof b.host, "garbage");
    size_t n = nsc_a2c_encode_batch(&b, buf);
    static const uint8_t junk[] = {0xc1, 0xff, 0x00, 0x13, 0x37};
    zmq_send(s, junk, sizeof junk, 0);              /* not msgpack */
    zmq_send(s, "", 0, 0);                          /* empty */
    zmq_send(s, buf, n / 2, 0);                     /* truncated batch */
    zmq_send(s, buf, 7, 0);                         /* truncated early */
    zmq_send(s, buf, 1, ZMQ_SNDMORE);               /* multipart */
    zmq_send(s, buf, n, 0);
    buf[2] = NSC_A2C_BATCH_VERSION + 1;  /* a newer agent's: not answered, it waits for an upgrade */
    zmq_send(s, buf, n, 0);
    buf[2] = NSC_A2C_BATCH_VERSION;
    nsc_a2c_ack ack = {.agent = "garbage", .seq = 3, .credit = 1};
    uint8_t small[NSC_A2C_SMALL_MAX];
    zmq_send(s, small, nsc_a2c_encode_ack(&ack, small), 0);  /* an ack: wrong direction */
    /* a batch whose first section is cut short: the frame is fine, the section not */
    nsc_a2c_section bad = {p->secs[0].data, p->secs[0].len - 3};
    b.nsections = 1;
    b.sections = &bad;
    zmq_send(s, buf, nsc_a2c_encode_batch(&b, buf), 0);
    /* a whole batch with one bit of a value changed: only its CRC tells */
    b.sections = p->secs;
    n = nsc_a2c_encode_batch(&b, buf);
    buf[n / 2] ^= 1;
    zmq_send(s, buf, n, 0);
    /* the cut-short batch again from an agent, and a clock sample of a host,
     * whose names try to end their label and forge a metric and a log line */
    b.sections = &bad;
    snprintf(b.agent, sizeof b.agent, "%s", NSC_FEED_FORGED);
    zmq_send(s, buf, nsc_a2c_encode_batch(&b, buf), 0);
    nsc_a2c_probe smp = {.kind = NSC_A2C_SAMPLE, .id = 1, .t1 = 1000, .t2 = 5000, .t3 = 5000, .t4 = 1100};
    snprintf(smp.agent, sizeof smp.agent, "%s", NSC_FEED_FORGED);
    snprintf(smp.host, sizeof smp.host, "%s", NSC_FEED_FORGED);
    zmq_send(s, small, nsc_a2c_encode_probe(&smp, small), 0);
    take_rejections(s);
}

static void *dealer(void *ctx, const char *endpoint)
{
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0, hwm = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
    if (zmq_connect(s, endpoint)) {
        fprintf(stderr, "nsc-feed: connect %s: %s\n", endpoint, zmq_strerror(zmq_errno()));
        exit(2);
    }
    return s;
}

static int send_mode(const opts *o)
{
    pool p = {0};
    if (build_pool(o, &p)) {
        fprintf(stderr, "nsc-feed: cannot build the workload\n");
        return 2;
    }
    size_t cap = 1024, most = 0;  /* a batch's bytes at most: its sections' */
    for (size_t i = 0; i < (size_t)groups(o) * o->pool * o->procs; i++)
        most = p.secs[i].len > most ? p.secs[i].len : most;
    cap += (most + 16) * o->procs + ledger_cap(o);
    void *ctx = zmq_ctx_new();
    uint8_t *buf = malloc(cap * 2);
    agent *ag = calloc(o->agents, sizeof *ag);
    FILE *log = o->ack_log ? fopen(o->ack_log, "a") : NULL;
    if (!buf || !ag || (o->ack_log && !log))
        return 2;
    if (o->garbage) {
        void *g = dealer(ctx, o->endpoint);
        int linger = 2000;  /* let the garbage leave before the socket closes */
        zmq_setsockopt(g, ZMQ_LINGER, &linger, sizeof linger);
        send_garbage(g, o, &p, buf);
        zmq_close(g);
    }
    for (unsigned i = 0; i < o->agents; i++) {
        snprintf(ag[i].id, sizeof ag[i].id, "%s%u", o->prefix, i);
        ag[i].group = o->distinct ? i : 0;
        ag[i].index = i;
        ag[i].sock = dealer(ctx, o->endpoint);
        ag[i].end = o->first + o->batches;
        ag[i].acked = calloc(o->batches ? o->batches : 1, 1);
    }
    uint64_t dups = 0, rdups = 0;
    middle mid = {0};
    double t0 = now_s();
    int rc = run_pass(ag, o, &p, o->first, buf, log, &dups, &mid);
    double dt = now_s() - t0;
    if (!rc && o->resend)  /* the first K again: all must be acknowledged again */
        rc = run_pass(ag, o, &p, o->batches > o->resend ? o->first + o->batches - o->resend : o->first,
                      buf, NULL, &rdups, NULL);
    uint64_t total = (uint64_t)o->agents * o->batches;
    double mid_s = mid.t[1] - mid.t[0];
    printf("batches=%llu\nevents=%llu\nseconds=%.3f\nevents_per_s=%.0f\nmiddle_events_per_s=%.0f\n"
           "resent_acked=%s\nstray_dups=%llu\n",
           (unsigned long long)total, (unsigned long long)(total * p.events_per_batch), dt,
           (double)(total * p.events_per_batch) / dt,
           mid_s > 0 ? (double)((mid.got[1] - mid.got[0]) * p.events_per_batch) / mid_s : 0.0,
           o->resend ? (rc ? "no" : "yes") : "n/a", (unsigned long long)dups);
    for (unsigned i = 0; i < o->agents; i++) {
        zmq_close(ag[i].sock);
        free(ag[i].acked);
    }
    zmq_ctx_term(ctx);
    if (log)
        fclose(log);
    free(ag);
    free(buf);
    free_pool(o, &p);
    return rc ? 1 : 0;
}

typedef struct check_ctx {
    const opts *o;
    uint64_t batches;    /* committed, all agents */
    int bad;
    char (*ids)[64];
    nsc_store_seq_range *one;  /* per agent: the single range, {0,0} if none */
} check_ctx;

static int check_agent(void *arg, const char *agent, uint64_t epoch, const nsc_store_seq_range *r, size_t n)
{
    (void)epoch;  /* the feed's agents send epoch 0 */
    check_ctx *c = arg;
    for (unsigned i = 0; i < c->o->agents; i++) {
        if (strcmp(c->ids[i], agent) != 0)
            continue;
        for (size_t k = 0; k < n; k++)
            c->batches += r[k].hi - r[k].lo;
        if (n == 1)
            c->one[i] = r[0];
        else
            c->bad = 1;  /* the feed sends dense sequences: one range */
        return 0;
    }
    return 0;
}

/* Every "agent seq" line of the ack log must be committed. */
static int check_log(const opts *o, const check_ctx *c)
{
    FILE *f = fopen(o->ack_log, "r");
    if (!f)
        return -1;
    char id[64];
    unsigned long long seq;
    int bad = 0, lines = 0;
    while (fscanf(f, "%63s %llu", id, &seq) == 2) {
        unsigned i = 0;
        while (i < o->agents && strcmp(c->ids[i], id) != 0)
            i++;
        lines++;
        if (i == o->agents || seq < c->one[i].lo || seq >= c->one[i].hi) {
            fprintf(stderr, "nsc-feed: acknowledged %s %llu is not in the store\n", id, seq);
            bad = 1;
        }
    }
    fclose(f);
    printf("acks_checked=%d\n", lines);
    return bad ? -1 : 0;
}

static int check_store(const opts *o, check_ctx *c, const pool *p);

static int check_mode(const opts *o)
{
    pool p = {0};
    check_ctx c = {o, 0, 0, calloc(o->agents, 64), calloc(o->agents, sizeof *c.one)};
    int rc = build_pool(o, &p) || !c.ids || !c.one ? 2 : check_store(o, &c, &p);
    free(c.ids);
    free(c.one);
    free_pool(o, &p);
    return rc;
}

static int check_store(const opts *o, check_ctx *c_, const pool *pp)
{
    check_ctx c = *c_;
    const pool p = *pp;
    nsc_store_opts so = {.read_only = 1};
    nsc_store *st;
    nsc_store_reader *rd;
    nsc_store_stats s;
    for (unsigned i = 0; i < o->agents; i++)
        snprintf(c.ids[i], 64, "%s%u", o->prefix, i);
    int rc = nsc_store_open(o->check, &so, &st);
    if (rc || (rc = nsc_store_read_begin(st, &rd))) {
        fprintf(stderr, "nsc-feed: store %s: %s\n", o->check, nsc_store_strerror(rc));
        return 1;
    }
    rc = nsc_store_stats_get(rd, &s) || nsc_store_agents(rd, check_agent, &c);
    nsc_store_read_end(rd);
    nsc_store_close(st);
    printf("committed_batches=%llu\nstored_events=%llu\nstored_ledger_records=%llu\n",
           (unsigned long long)c.batches, (unsigned long long)s.events, (unsigned long long)s.ledger_records);
    if (!rc && s.ledger_records != c.batches * o->procs * o->ledger) {
        fprintf(stderr, "nsc-feed: store holds %llu ledger records, %llu batches committed make %llu\n",
                (unsigned long long)s.ledger_records, (unsigned long long)c.batches,
                (unsigned long long)(c.batches * o->procs * o->ledger));
        return 1;
    }
    if (rc || c.bad || s.events != c.batches * p.events_per_batch) {
        fprintf(stderr, "nsc-feed: store holds %llu events, %llu batches committed make %llu\n",
                (unsigned long long)s.events, (unsigned long long)c.batches,
                (unsigned long long)(c.batches * p.events_per_batch));
        return 1;
    }
    if (o->ack_log)
        return check_log(o, &c) ? 1 : 0;
    for (unsigned i = 0; i < o->agents; i++)
        if (c.one[i].lo != o->first || c.one[i].hi != o->first + o->batches) {
            fprintf(stderr, "nsc-feed: agent %s has [%llu, %llu), want [%llu, %llu)\n", c.ids[i],
                    (unsigned long long)c.one[i].lo, (unsigned long long)c.one[i].hi,
                    (unsigned long long)o->first, (unsigned long long)(o->first + o->batches));
            return 1;
        }
    return 0;
}

static int direct_mode(const opts *o)
{
    pool p = {0};
    nsc_store *st;
    nsc_store_opts so = {.initial_map = 1u << 30};
    enum { GROUP = 64 };
    nsc_batch *b = calloc((size_t)GROUP * o->procs, sizeof *b);
    nsc_store_batch *sb = calloc((size_t)GROUP * o->procs, sizeof *sb);
    if (!b || !sb || build_pool(o, &p) || nsc_store_open(o->direct, &so, &st))
        return 2;
    uint64_t total = (uint64_t)o->agents * o->batches, done = 0;
    double t0 = now_s();
    while (done < total) {
        size_t n = 0;
        if (nsc_store_begin(st, done))
            return 1;
        for (; n < GROUP && done < total; n++, done++)
            for (unsigned k = 0; k < o->procs; k++) {
                const nsc_a2c_section *sec = &p.secs[(done % o->pool) * o->procs + k];
                nsc_batch *d = &b[n * o->procs + k];
                if (nsc_batch_decode(sec->data, sec->len, NULL, d))
                    return 1;
                sb[n * o->procs + k] = (nsc_store_batch){&d->hdr.proc, d->ctxs, d->nctxs, d->strs, d->nstrs,
                                                         d->events, d->nevents, d->states, d->nstates,
                                                         d->completions, d->ncompletions};
                if (nsc_store_put(st, &sb[n * o->procs + k]))
                    return 1;
            }
        if (nsc_store_commit(st))
            return 1;
        for (size_t i = 0; i < n * o->procs; i++)
            nsc_batch_release(&b[i]);
    }
    double dt = now_s() - t0;
    printf("batches=%llu\nevents=%llu\nseconds=%.3f\nevents_per_s=%.0f\n", (unsigned long long)total,
           (unsigned long long)(total * p.events_per_batch), dt, (double)(total * p.events_per_batch) / dt);
    nsc_store_close(st);
    free(b);
    free(sb);
    free_pool(o, &p);
    return 0;
}

/* Direct mode with --ledger: the ledger records alone, pre-encoded, then
 * decoded and put 64 batches a commit; bytes per record from the store's
 * live pages. */
static int direct_ledger(const opts *o)
{
    enum { GROUP = 64 };
    nsc_store *st;
    nsc_store_opts so = {.initial_map = 1u << 30};
    size_t per = ledger_cap(o), nb = (size_t)o->agents * o->batches;
    uint8_t *bufs = malloc(nb * per);
    nsc_a2c_section *secs = calloc(nb * o->procs, sizeof *secs);
    nsc_ledger_batch *lb = calloc((size_t)GROUP * o->procs, sizeof *lb);
    nsc_store_ledger *sl = calloc((size_t)GROUP * o->procs, sizeof *sl);
    nsc_proc *procs = calloc(o->procs, sizeof *procs);
    if (!bufs || !secs || !lb || !sl || !procs || nsc_store_open(o->direct, &so, &st))
        return 2;
    for (unsigned pr = 0; pr < o->procs; pr++)
        procs[pr] = nsc_test_proc("feed", "feedhost", 1000 + pr, (int)pr);
    for (size_t i = 0; i < nb; i++)
        if (encode_ledgers(o, (unsigned)(i % o->agents), i / o->agents, &secs[i * o->procs], bufs + i * per))
            return 2;
    double t0 = now_s();
    for (size_t done = 0; done < nb;) {
        size_t n = 0;
        if (nsc_store_begin(st, done))
            return 1;
        for (size_t g = 0; g < GROUP && done < nb; g++, done++)
            for (unsigned k = 0; k < o->procs; k++, n++) {
                const nsc_a2c_section *sec = &secs[done * o->procs + k];
                if (nsc_ledger_decode(sec->data, sec->len, NULL, &lb[n]))
                    return 1;
                sl[n] = (nsc_store_ledger){&procs[k], &lb[n], {0}};
                if (nsc_store_put_ledger(st, &sl[n]))
                    return 1;
            }
        if (nsc_store_commit(st))
            return 1;
        for (size_t i = 0; i < n; i++)
            nsc_ledger_release(&lb[i]);
    }
    double dt = now_s() - t0;
    nsc_store_reader *rd;
    nsc_store_stats s = {0};
    if (nsc_store_read_begin(st, &rd) == 0) {
        nsc_store_stats_get(rd, &s);
        nsc_store_read_end(rd);
    }
    uint64_t recs = (uint64_t)nb * o->procs * o->ledger;
    printf("ledger_records=%llu\nstored_ledger_records=%llu\nseconds=%.3f\nledger_records_per_s=%.0f\n"
           "ledger_value_bytes_per_record=%.1f\nledger_bytes_per_record=%.1f\n",
           (unsigned long long)recs, (unsigned long long)s.ledger_records, dt, (double)recs / dt,
           (double)s.ledger_bytes / (double)recs, (double)s.live_bytes / (double)recs);
    nsc_store_close(st);
    free(bufs), free(secs), free(lb), free(sl), free(procs);
    return s.ledger_records == recs ? 0 : 1;
}

/* ---- hostile mode ---- */

/* A section of process pid of job "hostile": n context definitions (comm
 * ids comm0.., ranks as given) and one AllReduce on the first (the rank's
 * progress, which the store keeps). */
static size_t hostile_section(uint32_t pid, uint64_t comm0, size_t n, int rank, int nranks, uint8_t *buf,
                              size_t cap)
{
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .proc = nsc_test_proc("hostile", "hostilehost", pid, 0)};
    nsc_str_def strs[NSC_MIX_NSTRS];
    nsc_mix_strs(strs);
    nsc_event ev = {.id = 1, .type = NSC_T_COLL, .rank = rank, .start_ns = 1000, .stop_ns = 2000,
                    .d.coll = {.func = NSC_MIX_STR_ALLREDUCE, .datatype = NSC_MIX_STR_FLOAT, .count = 1}};
    nsc_enc e;
    int rc = nsc_enc_begin(&e, buf, cap, &h);
    for (size_t i = 0; !rc && i < n; i++) {
        nsc_ctx_def d = nsc_test_ctx((uint16_t)i, comm0 + i, rank, nranks);
        rc = nsc_enc_ctx(&e, &d);
    }
    for (int i = 0; !rc && i < NSC_MIX_NSTRS; i++)
        rc = nsc_enc_str(&e, &strs[i]);
    return rc || nsc_enc_event(&e, &ev) ? 0 : nsc_enc_finish(&e);
}

/* Send batch seq of the sections, then read acks while credit are unacked. */
/* What the collector answered a hostile sender: acks and rejections. */
typedef struct replies {
    uint64_t unanswered, acked, rejected;
} replies;

/* One answer, if one comes within wait_ms. */
static void take_reply(void *s, int wait_ms, replies *r)
{
    zmq_pollitem_t pi = {s, 0, ZMQ_POLLIN, 0};
    uint8_t msg[NSC_A2C_SMALL_MAX];
    int n = zmq_poll(&pi, 1, wait_ms) == 1 ? zmq_recv(s, msg, sizeof msg, 0) : -1;
    if (n < 0)
        return;
    int kind = nsc_a2c_kind(msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg);
    r->unanswered--;
    r->acked += kind == NSC_A2C_ACK;
    r->rejected += kind == NSC_A2C_REJECT;
}

static int hostile_send(void *s, uint64_t seq, const nsc_a2c_section *secs, uint32_t n, uint8_t *buf, replies *r,
                        const opts *o)
{
    nsc_a2c_batch b = {.agent = "hostile", .host = "hostilehost", .seq = seq, .nsections = n, .sections = secs};
    size_t len = nsc_a2c_encode_batch(&b, buf);
    if (zmq_send(s, buf, len, 0) != (int)len)
        return -1;
    double deadline = now_s() + (double)o->timeout_ms / 1000;
    for (r->unanswered++; r->unanswered >= o->window && now_s() < deadline;)
        take_reply(s, 50, r);
    return 0;
}

/* Sections of processes [from, from + per) of n (each rank of one n-rank
 * communicator) into secs, encoded in sec; how many. */
static uint32_t hostile_procs(nsc_a2c_section *secs, uint8_t *sec, size_t from, size_t per, size_t n)
{
    size_t one = NSC_WIRE_REC_MAX * (NSC_MIX_NSTRS + 4);
    uint32_t k = 0;
    for (size_t p = from; k < per && p < n; k++, p++)
        secs[k] = (nsc_a2c_section){sec + k * one,
                                    (uint32_t)hostile_section((uint32_t)p + 1, 0xc0, 1, (int)p, (int)n, sec + k * one, one)};
    return k;
}

static int hostile_mode(const opts *o)
{
    size_t n = o->count, per = 256, cap = NSC_WIRE_REC_MAX * (n + (NSC_MIX_NSTRS + 4) * per + 2);
    uint8_t *sec = malloc(cap), *buf = malloc(2 * cap);
    nsc_a2c_section *secs = calloc(per, sizeof *secs);
    void *ctx = zmq_ctx_new(), *s = dealer(ctx, o->endpoint);
    uint64_t sent = 0;
    replies r = {0, 0, 0};
    int rc = sec && buf && secs ? 0 : -1;
    if (!rc && strcmp(o->hostile, "nranks") == 0) {
        secs[0] = (nsc_a2c_section){sec, (uint32_t)hostile_section(1, 0xbad, 1, 0, 1000000, sec, cap)};
        rc = hostile_send(s, sent++, secs, 1, buf, &r, o);
    } else if (!rc && strcmp(o->hostile, "comms") == 0) {
        secs[0] = (nsc_a2c_section){sec, (uint32_t)hostile_section(1, 0x1000, n, 0, 8, sec, cap)};
        rc = hostile_send(s, sent++, secs, 1, buf, &r, o);
    } else if (!rc && strcmp(o->hostile, "procs") == 0) {
        for (size_t p = 0; !rc && p < n; p += per, sent++) {
            uint32_t k = hostile_procs(secs, sec, p, per, n);
            rc = hostile_send(s, sent, secs, k, buf, &r, o);
        }
    } else if (!rc && strcmp(o->hostile, "hosts") == 0) {
        for (; !rc && sent < n; sent++) {
            nsc_a2c_probe pr = {.kind = NSC_A2C_SAMPLE, .agent = "hostile", .id = sent,
                                .t1 = 1000, .t2 = 1500, .t3 = 1600, .t4 = 2000};
            snprintf(pr.host, sizeof pr.host, "host%llu", (unsigned long long)sent);
            size_t len = nsc_a2c_encode_probe(&pr, buf);
            rc = zmq_send(s, buf, len, 0) == (int)len ? 0 : -1;
        }
    } else if (!rc && strcmp(o->hostile, "detail") == 0) {
        static const uint8_t junk[] = {0x93, 0x01, 0x02};
        nsc_a2c_piece piece = {1, junk, sizeof junk};
        nsc_a2c_detail d = {.agent = "hostile", .host = "hostilehost", .id = 1, .last = 1, .npieces = 1,
                            .pieces = &piece};
        size_t len = nsc_a2c_encode_detail(&d, buf);
        rc = zmq_send(s, buf, len - 1, 0) == (int)len - 1 && zmq_send(s, buf, len, 0) == (int)len ? 0 : -1;
        sent = 2;
    } else if (!rc && strcmp(o->hostile, "credit") == 0) {
        opts all = *o;
        all.window = UINT32_MAX;  /* never waits for an ack while sending */
        uint32_t k = hostile_procs(secs, sec, 0, per, per);
        for (; !rc && sent < n; sent++)
            rc = hostile_send(s, sent, secs, k, buf, &r, &all);
    } else {
        rc = -1;
    }
    /* what is still unacknowledged gets the timeout to be */
    for (double deadline = now_s() + (double)o->timeout_ms / 1000; !rc && r.unanswered && now_s() < deadline;)
        take_reply(s, 50, &r);
    printf("sent=%llu\nacked=%llu\nrejected=%llu\n", (unsigned long long)sent, (unsigned long long)r.acked,
           (unsigned long long)r.rejected);
    int linger = 2000;  /* what was sent leaves before the socket closes */
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(s);
    zmq_ctx_term(ctx);
    free(sec), free(buf), free(secs);
    return rc ? 2 : 0;
}

static int parse(opts *o, int argc, char **argv)
{
    *o = (opts){.agents = 4, .procs = 2, .colls = 10, .window = 32, .pool = 16, .batches = 100,
                .timeout_ms = 30000, .prefix = "feed", .count = 1};
    for (int i = 1; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(k, "--garbage") == 0 || strcmp(k, "--distinct") == 0) {
            *(k[2] == 'g' ? &o->garbage : &o->distinct) = 1;
            continue;
        }
        if (!v)
            return -1;
        i++;
        unsigned long long n = strtoull(v, NULL, 10);
        if (strcmp(k, "--endpoint") == 0) o->endpoint = v;
        else if (strcmp(k, "--check") == 0) o->check = v;
        else if (strcmp(k, "--direct") == 0) o->direct = v;
        else if (strcmp(k, "--ack-log") == 0) o->ack_log = v;
        else if (strcmp(k, "--prefix") == 0) o->prefix = v;
        else if (strcmp(k, "--agents") == 0) o->agents = (unsigned)n;
        else if (strcmp(k, "--procs") == 0) o->procs = (unsigned)n;
        else if (strcmp(k, "--colls") == 0) o->colls = (unsigned)n;
        else if (strcmp(k, "--window") == 0) o->window = (unsigned)n;
        else if (strcmp(k, "--pool") == 0) o->pool = (unsigned)n;
        else if (strcmp(k, "--batches") == 0) o->batches = n;
        else if (strcmp(k, "--first") == 0) o->first = n;
        else if (strcmp(k, "--resend") == 0) o->resend = n;
        else if (strcmp(k, "--timeout-ms") == 0) o->timeout_ms = n;
        else if (strcmp(k, "--hostile") == 0) o->hostile = v;
        else if (strcmp(k, "--count") == 0) o->count = n;
        else if (strcmp(k, "--ledger") == 0) o->ledger = (unsigned)n;
        else if (strcmp(k, "--ledger-alone") == 0) o->ledger_alone = (unsigned)n;
        else if (strcmp(k, "--ledger-open") == 0) o->ledger_open = (unsigned)n;
        else return -1;
    }
    if (o->distinct && !o->endpoint)
        return -1;  /* check and direct modes know one pool */
    return (o->endpoint || o->check || o->direct) && o->agents && o->procs && o->colls && o->window && o->pool ? 0 : -1;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse(&o, argc, argv)) {
        fprintf(stderr, "usage: nsc-feed --endpoint EP | --check DB | --direct DB [options] (see tests/collector/feed.c)\n");
        return 2;
    }
    return o.check ? check_mode(&o) : o.direct && o.ledger ? direct_ledger(&o) : o.direct ? direct_mode(&o)
           : o.hostile ? hostile_mode(&o) : send_mode(&o);
}
