/* bench_codec.c: wire codec throughput and size on a realistic record mix.
 *
 * Builds a stream like a busy rank's (per collective: GroupApi, CollApi, Coll,
 * KernelCh per channel, ProxyOp per channel and direction, ProxySteps with
 * their states, a completion), encodes it into ~64 KiB batches and decodes
 * them back. Prints the median of several repetitions for encode and decode,
 * bytes per event per type, and two baselines measured in the same run:
 * memcpy of the raw structs into 64 KiB buffers (encode) and msgpack-c's
 * generic unpacker on the same batches (decode, no validation, no structs).
 * The agent's stage is timed three ways: decode and re-encode every record
 * into a 1 MiB section (its first path), decode and splice (its second),
 * scan (check every record, decode only what the agent reads) and splice
 * (its path now). The CRC-32C of the same bytes (what an a2c batch's check
 * costs the agent before each send and the collector before it stores) is
 * timed beside them.
 *
 * Usage: bench_codec [collectives] [repetitions]
 */
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "crc32c.h"
#include "wire.h"
#include "order.h"

#define BATCH_BYTES (64 * 1024)
#define SECTION_BYTES (1024 * 1024) /* the agent's default flush_kb */
#define CHANNELS 4
#define STEPS 4  /* ProxySteps per ProxyOp */

typedef struct rec {
    unsigned tag;  /* event type, or NSC_WIRE_TAG_STATE / _COMPLETION */
    union {
        nsc_event ev;
        nsc_state_rec st;
        nsc_completion done;
    } u;
} rec;

typedef struct stream {
    rec *recs;
    size_t n, cap, nevents;
    uint64_t next_id, now;
    uint32_t pid;
} stream;

static rec *push(stream *s, unsigned tag)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 4096;
        s->recs = realloc(s->recs, s->cap * sizeof *s->recs);
        if (!s->recs) {
            perror("realloc");
            exit(1);
        }
    }
    rec *r = &s->recs[s->n++];
    memset(r, 0, sizeof *r);
    r->tag = tag;
    return r;
}

static nsc_event *push_event(stream *s, unsigned type, uint64_t parent, uint64_t dur, uint32_t tid)
{
    nsc_event *ev = &push(s, type)->u.ev;
    ev->type = (uint8_t)type;
    ev->id = s->next_id++;
    ev->parent = parent;
    ev->start_ns = s->now;
    ev->stop_ns = s->now + dur;
    ev->tid = tid;
    ev->rank = 5;
    ev->ctx = 1;
    s->now += 700;
    s->nevents++;
    return ev;
}

static void push_state(stream *s, uint64_t id, unsigned state, uint64_t arg, uint32_t tid)
{
    nsc_state_rec *st = &push(s, NSC_WIRE_TAG_STATE)->u.st;
    st->id = id;
    st->ts_ns = s->now;
    st->arg = arg;
    st->tid = tid;
    st->state = (uint8_t)state;
    s->now += 300;
}

/* One AllReduce of 32 Mi floats on a 4-channel ring, as a v5+ plugin sees it. */
static void push_collective(stream *s, uint64_t seq)
{
    uint32_t main_tid = s->pid, proxy_tid = s->pid + 3;
    nsc_event *g = push_event(s, NSC_T_GROUP_API, 0, 2000, main_tid);
    g->d.group_api.depth = 1;
    nsc_event *api = push_event(s, NSC_T_COLL_API, g->id, 9000, main_tid);
    api->d.coll_api.func = 1;
    api->d.coll_api.datatype = 2;
    api->d.coll_api.count = 33554432;
    api->d.coll_api.stream = 0x7f3a5c001000ull;
    nsc_event *coll = push_event(s, NSC_T_COLL, api->id, 8500, main_tid);
    coll->d.coll.seq = seq;
    coll->d.coll.count = 33554432;
    coll->d.coll.parent_group = g->id - 1;
    coll->d.coll.func = 1;
    coll->d.coll.datatype = 2;
    coll->d.coll.algo = 3;
    coll->d.coll.proto = 4;
    coll->d.coll.nchannels = CHANNELS;
    coll->d.coll.nwarps = 16;
    uint64_t coll_id = coll->id;
    for (unsigned ch = 0; ch < CHANNELS; ch++) {
        nsc_event *k = push_event(s, NSC_T_KERNEL_CH, coll_id, 250000, proxy_tid);
        k->d.kernel_ch.channel = (uint8_t)ch;
        k->d.kernel_ch.ptimer_start = 1712345678000000000ull + s->now;
        k->d.kernel_ch.ptimer_stop = k->d.kernel_ch.ptimer_start + 249000;
        k->d.kernel_ch.ptimer_stop_ns = s->now + 250000;
        for (unsigned send = 0; send < 2; send++) {
            nsc_event *op = push_event(s, NSC_T_PROXY_OP, coll_id, 240000, proxy_tid);
            op->d.proxy_op.peer = send ? 6 : 4;
            op->d.proxy_op.nsteps = STEPS;
            op->d.proxy_op.chunk_size = 524288;
            op->d.proxy_op.op_pid = s->pid;
            op->d.proxy_op.channel = (uint8_t)ch;
            op->d.proxy_op.is_send = (uint8_t)send;
            uint64_t op_id = op->id;
            for (int step = 0; step < STEPS; step++) {
                nsc_event *ps = push_event(s, NSC_T_PROXY_STEP, op_id, 30000, proxy_tid);
                ps->d.proxy_step.step = step;
                unsigned a = send ? NSC_S_PROXY_STEP_SEND_GPU_WAIT : NSC_S_PROXY_STEP_RECV_WAIT;
                unsigned b = send ? NSC_S_PROXY_STEP_SEND_WAIT : NSC_S_PROXY_STEP_RECV_GPU_WAIT;
                push_state(s, ps->id, a, 0, proxy_tid);
                push_state(s, ps->id, b, 524288, proxy_tid);
            }
        }
    }
    push(s, NSC_WIRE_TAG_COMPLETION)->u.done = (nsc_completion){coll_id, s->now};
}

static int encode_rec(nsc_enc *e, const rec *r)
{
    switch (r->tag) {
    case NSC_WIRE_TAG_STATE: return nsc_enc_state(e, &r->u.st);
    case NSC_WIRE_TAG_COMPLETION: return nsc_enc_completion(e, &r->u.done);
    default: return nsc_enc_event(e, &r->u.ev);
    }
}

static uint64_t rec_time(const rec *r)
{
    switch (r->tag) {
    case NSC_WIRE_TAG_STATE: return r->u.st.ts_ns;
    case NSC_WIRE_TAG_COMPLETION: return r->u.done.ts_ns;
    default: return r->u.ev.start_ns;
    }
}

typedef struct batches {
    uint8_t *mem;      /* back to back */
    size_t *off, *len;
    size_t n, bytes;
} batches;

/* Encode the whole stream into batches of at most BATCH_BYTES; bytes_per_tag
 * (optional) accumulates each record's encoded size by tag. */
static void encode_all(const stream *s, batches *out, uint64_t *bytes_per_tag)
{
    nsc_batch_hdr h = {.proc = {.pid = s->pid, .local_rank = 1, .gpu = 1}};
    strcpy(h.proc.job, "bench");
    strcpy(h.proc.host, "node-001");
    nsc_enc e;
    out->n = out->bytes = 0;
    size_t i = 0;
    while (i < s->n) {
        h.seq = out->n;
        h.base_ns = rec_time(&s->recs[i]);
        h.sent_ns = s->recs[i].u.ev.start_ns;
        uint8_t *buf = out->mem + out->bytes;
        if (nsc_enc_begin(&e, buf, BATCH_BYTES, &h) != NSC_WIRE_OK)
            abort();
        for (; i < s->n; i++) {
            size_t before = e.len;
            if (encode_rec(&e, &s->recs[i]) != NSC_WIRE_OK)
                break;
            if (bytes_per_tag)
                bytes_per_tag[s->recs[i].tag] += e.len - before;
        }
        out->off[out->n] = out->bytes;
        out->len[out->n++] = nsc_enc_finish(&e);
        out->bytes += e.len;
    }
}

static size_t decode_all(const batches *b)
{
    size_t nevents = 0;
    for (size_t i = 0; i < b->n; i++) {
        nsc_batch d;
        int rc = nsc_batch_decode(b->mem + b->off[i], b->len[i], NULL, &d);
        if (rc != NSC_WIRE_OK) {
            fprintf(stderr, "decode: %s\n", nsc_wire_strerror(rc));
            exit(1);
        }
        nevents += d.nevents;
        nsc_batch_release(&d);
    }
    return nevents;
}

/* The agent's codec stage: each batch decoded or scanned (validated), then
 * its records appended to a section with another time base, by re-encoding
 * the decoded structs or by splicing the received bytes (agent/ingest.c). */
enum { RE_ENCODE, DECODE_SPLICE, SCAN_SPLICE };
typedef struct section {
    nsc_enc e;
    uint8_t *buf;
    size_t sections;
} section;

static void section_open(section *sec)
{
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .base_ns = 1, .proc = {.pid = 1}};
    if (nsc_enc_begin(&sec->e, sec->buf, SECTION_BYTES, &h) != NSC_WIRE_OK)
        abort();
    sec->sections++;
}

static int reencode_one(nsc_enc *e, const nsc_batch *d, size_t k)
{
    size_t n1 = d->nstrs, n2 = n1 + d->nctxs, n3 = n2 + d->nevents, n4 = n3 + d->nstates;
    return k < n1   ? nsc_enc_str(e, &d->strs[k])
           : k < n2 ? nsc_enc_ctx(e, &d->ctxs[k - n1])
           : k < n3 ? nsc_enc_event(e, &d->events[k - n2])
           : k < n4 ? nsc_enc_state(e, &d->states[k - n3])
                    : nsc_enc_completion(e, &d->completions[k - n4]);
}

/* Validate one batch the way mode's path does; returns its record count. */
static size_t agent_check(const uint8_t *msg, size_t len, int mode, nsc_batch *d, nsc_scan *scan)
{
    memset(d, 0, sizeof *d);
    if (mode == SCAN_SPLICE) {
        if (nsc_batch_scan(msg, len, NULL, scan) != NSC_WIRE_OK)
            abort();
        return scan->b.nstrs + scan->b.nctxs + scan->nevents + scan->nstates + scan->ncompletions;
    }
    if (nsc_batch_decode(msg, len, NULL, d) != NSC_WIRE_OK)
        abort();
    return d->nstrs + d->nctxs + d->nevents + d->nstates + d->ncompletions;
}

static void agent_stage(const batches *b, section *sec, int mode, nsc_scan *scan)
{
    for (size_t i = 0; i < b->n; i++) {
        nsc_batch d;
        nsc_splice sp;
        const uint8_t *msg = b->mem + b->off[i];
        size_t n = agent_check(msg, b->len[i], mode, &d, scan);
        if (nsc_splice_begin(&sp, msg, b->len[i]) != NSC_WIRE_OK)
            abort();
        for (size_t k = 0; k < n; k++) {
            int rc;
            while ((rc = mode == RE_ENCODE ? reencode_one(&sec->e, &d, k) : nsc_splice_copy(&sp, &sec->e)) ==
                   NSC_WIRE_FULL)
                section_open(sec);
            if (rc != NSC_WIRE_OK)
                abort();
        }
        nsc_batch_release(&d);
    }
}

static size_t rec_size(const rec *r)
{
    switch (r->tag) {
    case NSC_WIRE_TAG_STATE: return sizeof r->u.st;
    case NSC_WIRE_TAG_COMPLETION: return sizeof r->u.done;
    default: return sizeof r->u.ev;
    }
}

/* The cheapest possible "encoding": raw structs copied into 64 KiB buffers. */
static size_t memcpy_all(const stream *s, uint8_t *buf)
{
    size_t len = 0, nbuf = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t n = rec_size(&s->recs[i]);
        if (len + n > BATCH_BYTES) {
            len = 0;
            nbuf++;
        }
        memcpy(buf + len, &s->recs[i].u, n);
        len += n;
    }
    return nbuf + 1;
}

static size_t msgpack_c_unpack_all(const batches *b)
{
    size_t objects = 0;
    msgpack_unpacked u;
    msgpack_unpacked_init(&u);
    for (size_t i = 0; i < b->n; i++) {
        size_t off = 0;
        if (msgpack_unpack_next(&u, (const char *)b->mem + b->off[i], b->len[i], &off) !=
            MSGPACK_UNPACK_SUCCESS)
            abort();
        objects += u.data.via.array.ptr[1].via.array.size;
    }
    msgpack_unpacked_destroy(&u);
    return objects;
}

/* The CRC-32C of every batch (their xor, so that nothing is optimized away). */
static uint32_t crc_all(const batches *b)
{
    uint32_t x = 0;
    for (size_t i = 0; i < b->n; i++)
        x ^= nsc_crc32c(0, b->mem + b->off[i], b->len[i]);
    return x;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, nsc_cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

enum { ENCODE, DECODE, MEMCPY, MSGPACK_C, AGENT_ENCODE, AGENT_SPLICE, AGENT_SCAN, CRC32C, NPHASES };
static const char *const phase_names[NPHASES] = {
    "encode (nsc_enc_*)", "decode (nsc_batch_decode)",
    "baseline: memcpy of raw structs", "baseline: msgpack-c unpack, no validation",
    "agent: decode + re-encode into a section", "agent: decode + splice into a section",
    "agent: scan + splice into a section", "crc32c of the batches (a2c check)"};

int main(int argc, char **argv)
{
    size_t ncoll = argc > 1 ? strtoul(argv[1], NULL, 10) : 5000;
    int reps = argc > 2 ? atoi(argv[2]) : 7;
    if (ncoll == 0 || reps < 1 || reps > 100) {
        fprintf(stderr, "usage: bench_codec [collectives] [repetitions<=100]\n");
        return 2;
    }
    stream s = {.next_id = 1, .now = 10000000000000ull, .pid = 2400000};
    for (size_t c = 0; c < ncoll; c++)
        push_collective(&s, 999000 + c);

    size_t max_batches = s.n * NSC_WIRE_REC_MAX / (BATCH_BYTES / 2) + 2;
    batches b = {.mem = malloc(max_batches * BATCH_BYTES), .off = malloc(max_batches * sizeof(size_t)),
                 .len = malloc(max_batches * sizeof(size_t))};
    uint8_t *raw = malloc(BATCH_BYTES);
    section sec = {.buf = malloc(SECTION_BYTES)};
    nsc_scan scan = {.keep_types = 1u << NSC_T_COLL | 1u << NSC_T_P2P, .keep_flags = NSC_EVF_FOREIGN};
    uint64_t bytes_per_tag[NSC_WIRE_TAG_COUNT] = {0};
    if (!b.mem || !b.off || !b.len || !raw || !sec.buf)
        return 1;
    section_open(&sec);
    encode_all(&s, &b, bytes_per_tag);  /* warm-up and size accounting */

    double t[NPHASES][100];
    for (int r = 0; r < reps; r++) {
        double t0 = now_s();
        encode_all(&s, &b, NULL);
        double t1 = now_s();
        if (decode_all(&b) != s.nevents)
            abort();
        double t2 = now_s();
        if (memcpy_all(&s, raw) == 0)
            abort();
        double t3 = now_s();
        if (msgpack_c_unpack_all(&b) != s.n)
            abort();
        double t4 = now_s();
        agent_stage(&b, &sec, RE_ENCODE, &scan);
        double t5 = now_s();
        agent_stage(&b, &sec, DECODE_SPLICE, &scan);
        double t6 = now_s();
        agent_stage(&b, &sec, SCAN_SPLICE, &scan);
        double t7 = now_s();
        volatile uint32_t crc = crc_all(&b);
        (void)crc;
        t[CRC32C][r] = now_s() - t7;
        t[AGENT_ENCODE][r] = t5 - t4;
        t[AGENT_SPLICE][r] = t6 - t5;
        t[AGENT_SCAN][r] = t7 - t6;
        t[ENCODE][r] = t1 - t0;
        t[DECODE][r] = t2 - t1;
        t[MEMCPY][r] = t3 - t2;
        t[MSGPACK_C][r] = t4 - t3;
    }

    printf("records %zu (events %zu, states and completions %zu), batches %zu, %.1f KiB/batch\n",
           s.n, s.nevents, s.n - s.nevents, b.n, (double)b.bytes / (double)b.n / 1024);
    printf("bytes per record: %.2f overall (headers included)\n", (double)b.bytes / (double)s.n);
    printf("\n%-44s %12s %12s %10s\n", "phase (median of reps)", "Mevents/s", "Mrecords/s", "MB/s");
    for (int p = 0; p < NPHASES; p++) {
        double m = median(t[p], reps);
        printf("%-44s %12.2f %12.2f %10.1f\n", phase_names[p], (double)s.nevents / m / 1e6,
               (double)s.n / m / 1e6, (double)b.bytes / m / 1e6);
    }
    size_t count[NSC_WIRE_TAG_COUNT] = {0};
    for (size_t i = 0; i < s.n; i++)
        count[s.recs[i].tag]++;
    printf("\n%-16s %10s %14s\n", "record", "count", "bytes/record");
    for (unsigned tag = 0; tag < NSC_WIRE_TAG_COUNT; tag++) {
        if (!count[tag])
            continue;
        const char *name = tag < NSC_T_COUNT ? nsc_type_name(tag)
                           : tag == NSC_WIRE_TAG_STATE ? "state" : "completion";
        printf("%-16s %10zu %14.2f\n", name, count[tag], (double)bytes_per_tag[tag] / (double)count[tag]);
    }
    printf("\nbytes per Coll: %.2f\n", (double)bytes_per_tag[NSC_T_COLL] / (double)count[NSC_T_COLL]);
    nsc_scan_free(&scan);
    free(raw);
    free(sec.buf);
    free(b.mem);
    free(b.off);
    free(b.len);
    free(s.recs);
    return 0;
}
