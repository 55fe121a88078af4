/* chrows.c: table definitions and their rows' values (see chrows.h). */
#include "chrows.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "chevents.h"
#include "chledger.h"

#define ORIGIN NSC_CH_ORIGIN_COLUMNS
#define SECTION NSC_CH_SECTION_COLUMNS
#define SECTION_KEY "agent, epoch, batch_seq, section"
#define ORIGIN_KEY SECTION_KEY ", idx"
#define JOB_PART "cityHash64(job) % 16"
#define PROC_SHARD "cityHash64(job, host, pid)"

/* Partitions: 16 buckets of the job name, not time: a row's partition must
 * not depend on when it was inserted, or a batch sent again after midnight
 * would escape ReplacingMergeTree's folding (which works within a partition). */
/* Granules: a timeline window reads whole granules of the tables it picks
 * its sections from by key ranges (chread.c). At ClickHouse's 8,192 rows, a
 * granule of a table with a row per section spans minutes of a job, and one
 * of events several times a window's events of a rank: the rows a window
 * read grew with its job. */
#define SECTION_GRANULE 64
#define EVENT_GRANULE 1024
#define DEFAULT_GRANULE 0 /* ClickHouse's own */
static const nsc_ch_table_def tables[NSC_CH_NTABLES] = {
    /* columns: nsc_ch_event_columns() */
    [NSC_CH_EVENTS] = {"events", NULL,
                       "job, host, pid, ctx, start_ns, " ORIGIN_KEY, JOB_PART, PROC_SHARD, "", EVENT_GRANULE},
    /* A section's states (completions): one row, a field's values in an
     * Array in the section's order (chrows.h). */
    [NSC_CH_STATES] = {"states",
                       NSC_CH_PROC_COLUMNS ", id Array(UInt64), " NSC_CH_NARROW("ts") ", " NSC_CH_NARROW("arg")
                       ", tid Array(UInt32), state Array(UInt8), " SECTION,
                       "job, host, pid, " SECTION_KEY, JOB_PART, PROC_SHARD, "", SECTION_GRANULE},
    [NSC_CH_COMPLETIONS] = {"completions",
                            NSC_CH_PROC_COLUMNS ", id Array(UInt64), " NSC_CH_NARROW("ts") ", " SECTION,
                            "job, host, pid, " SECTION_KEY, JOB_PART, PROC_SHARD, "", SECTION_GRANULE},
    /* A process defines a context or string id once (docs/protocol.md), so
     * the definition itself is its identity. The batch identity rides along,
     * outside the key (equal in every copy: one batch defines an id), so a
     * read can give each definition back to the section that brought it. */
    [NSC_CH_CONTEXTS] = {"contexts",
                         NSC_CH_PROC_COLUMNS ", ctx UInt16, comm_id UInt64, nnodes Int32, "
                         "nranks Int32, rank Int32, api_version Int32, name String, " ORIGIN,
                         "job, host, pid, ctx", JOB_PART, PROC_SHARD, "", DEFAULT_GRANULE},
    [NSC_CH_STRINGS] = {"strings", NSC_CH_PROC_COLUMNS ", id UInt16, text String, " ORIGIN,
                        "job, host, pid, id", JOB_PART, PROC_SHARD, "", DEFAULT_GRANULE},
    /* events has no key on time across processes: a time window finds its
     * sections here, a row per bucket of times a section's records touch,
     * with their range (t_min, t_max: chrows.h), a key range per window. */
    [NSC_CH_EVENT_MARKS] = {"event_marks",
                            NSC_CH_PROC_COLUMNS ", bucket UInt64, t_min UInt64, t_max UInt64, "
                            "p2p_ctxs Array(UInt16), " SECTION,
                            "job, bucket, host, pid, " SECTION_KEY, JOB_PART, PROC_SHARD, "", SECTION_GRANULE},
    [NSC_CH_LIFECYCLE] = {"lifecycle",
                          NSC_CH_PROC_COLUMNS ", event UInt8, reason UInt8, ts_ns UInt64, "
                          "ref_ns UInt64, last_batch_seq UInt64, " ORIGIN,
                          "job, host, pid, " ORIGIN_KEY, JOB_PART, PROC_SHARD, "", DEFAULT_GRANULE},
    [NSC_CH_BATCHES] = {"batches",
                        NSC_CH_PROC_COLUMNS ", events UInt32, states UInt32, "
                        "completions UInt32, local_rank Int32, gpu Int32, " ORIGIN,
                        "job, " ORIGIN_KEY, JOB_PART, PROC_SHARD, "", SECTION_GRANULE},
    /* One row per write of a host's model: the newest (largest wall clock
     * time of the write, ref_ns) wins, also across collector restarts. */
    [NSC_CH_CLOCKS] = {"clocks", "host String, ref_ns UInt64, model String", "host", "", "cityHash64(host)",
                       "ref_ns", DEFAULT_GRANULE},
    /* A rank's last collective per function: the highest seqNumber wins. */
    [NSC_CH_PROGRESS] = {"progress", "job String, comm_id UInt64, rank Int32, func String, seq UInt64, ref_ns UInt64",
                         "job, comm_id, rank, func", JOB_PART, "cityHash64(job, comm_id)", "seq", DEFAULT_GRANULE},
    /* One row per write of a collector's live state (chlive.h): its newest
     * write wins. Written to and read from the first source only. */
    [NSC_CH_LIVE] = {"live", "collector String, wall_ns UInt64, snapshot String", "collector", "",
                     "cityHash64(collector)", "wall_ns", DEFAULT_GRANULE},
    /* When a job's rows were last inserted (wall clock): its newest wins.
     * Retention (chretain.h) deletes a job no insert touched for
     * retain_age_s. */
    [NSC_CH_JOBS] = {"jobs", "job String, wall_ns UInt64", "job", "", "cityHash64(job)", "wall_ns", DEFAULT_GRANULE},
    /* A process's ledger batch of an agent batch, as it travelled (the ledger
     * codec's bytes): read back in the agents' order, a later record
     * replaces an earlier in-flight one as in the LMDB store. */
    [NSC_CH_LEDGER] = {"ledger", NSC_CH_PROC_COLUMNS ", data String, " ORIGIN, "job, host, pid, " ORIGIN_KEY,
                       JOB_PART, PROC_SHARD, "", DEFAULT_GRANULE},
    /* The same records a row each (columns: nsc_ch_ledger_columns()), in
     * the order a query asks for them: a communicator's seqs, then ranks.
     * The batch identity ends the key: an in-flight record and its final
     * one are two rows (a read keeps the later, as the LMDB store does). */
    [NSC_CH_LEDGER_RECS] = {"ledger_recs", NULL, "job, comm_id, seq, rank, host, pid, " ORIGIN_KEY, JOB_PART,
                            PROC_SHARD, "", DEFAULT_GRANULE},
    /* ledger_recs has no key on time: a time window finds its seqs here,
     * a few rows per bucket of seqs (chread.c). A row is the enqueue times'
     * range of a batch's records of one bucket, ctx and rank, and that of
     * those whose kernel ended (nsc_ch_ledger_ended; done_min > done_max:
     * none), which bounds how far back a rank's previous kernel end lies. */
    [NSC_CH_LEDGER_MARKS] = {"ledger_marks",
                             NSC_CH_PROC_COLUMNS ", comm_id UInt64, bucket UInt64, ctx UInt16, rank Int32, "
                             "enq_min UInt64, enq_max UInt64, done_min UInt64, done_max UInt64, " ORIGIN,
                             "job, comm_id, bucket, host, pid, ctx, rank, " ORIGIN_KEY, JOB_PART, PROC_SHARD, "", DEFAULT_GRANULE},
    /* The wall clock of the collectors' time base, as the LMDB store keeps it
     * (nsc_store_wall): one row per record (a record inserted twice folds:
     * same key, same version), read back whole into a query's store. */
    [NSC_CH_WALL] = {"wall", "utc_ns UInt64, ref_ns UInt64, offset_ns Int64", "utc_ns", "", "cityHash64(utc_ns)",
                     "ref_ns", DEFAULT_GRANULE},
};

nsc_ch_table_def nsc_ch_def(nsc_ch_table t)
{
    nsc_ch_table_def d = tables[t];
    if (t == NSC_CH_EVENTS)
        d.columns = nsc_ch_event_columns();
    else if (t == NSC_CH_LEDGER_RECS)
        d.columns = nsc_ch_ledger_columns();
    return d;
}

static void u8(nsc_ch_cols *t, uint8_t v) { nsc_ch_put_uint(t, v, 1); }
static void u16(nsc_ch_cols *t, uint16_t v) { nsc_ch_put_uint(t, v, 2); }
static void u32(nsc_ch_cols *t, uint32_t v) { nsc_ch_put_uint(t, v, 4); }
static void i32(nsc_ch_cols *t, int32_t v) { nsc_ch_put_uint(t, (uint32_t)v, 4); }
static void u64(nsc_ch_cols *t, uint64_t v) { nsc_ch_put_uint(t, v, 8); }

/* max bounds a fixed char array that may lack its NUL. */
static void str(nsc_ch_cols *t, const char *s, size_t max)
{
    nsc_ch_put_text(t, s, strnlen(s, max));
}

/* The Strings a job's row starts and ends with (job, host; agent), as
 * their texts' indexes in t: looked up once per section, not per row. */
typedef struct row_texts {
    uint32_t job, host, agent;
} row_texts;

static uint32_t text_id(nsc_ch_cols *t, const char *s)
{
    return nsc_ch_text_id(t, s, strnlen(s, 64));  /* job, host and agent: char[64] */
}

static row_texts texts_of(nsc_ch_cols *t, const char *job, const char *host, const char *agent)
{
    return (row_texts){text_id(t, job), text_id(t, host), text_id(t, agent)};
}

static void proc_cols(nsc_ch_cols *t, const row_texts *x, uint32_t pid)
{
    nsc_ch_put_uint(t, x->job, 4);
    nsc_ch_put_uint(t, x->host, 4);
    u32(t, pid);
}

const uint8_t *nsc_ch_take_string(const uint8_t **p, const uint8_t *end, size_t *len)
{
    size_t n;
    if (nsc_ch_take_varint(p, end, &n) || (size_t)(end - *p) < n)
        return NULL;
    const uint8_t *s = *p;
    *p += n;
    *len = n;
    return s;
}

static void section_cols(nsc_ch_cols *b, const row_texts *x, const nsc_ch_origin *o)
{
    nsc_ch_put_uint(b, x->agent, 4);
    u64(b, o->epoch);
    u64(b, o->batch_seq);
    u32(b, o->section);
}

static void origin_cols(nsc_ch_cols *b, const row_texts *x, const nsc_ch_origin *o, uint32_t idx)
{
    section_cols(b, x, o);
    u32(b, idx);
    nsc_ch_end_row(b);
}


static void defs_rows(nsc_ch_cols tabs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_store_batch *b)
{
    nsc_ch_cols *t = &tabs[NSC_CH_CONTEXTS];
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    for (size_t i = 0; i < b->nctxs; i++) {
        const nsc_ctx_def *c = &b->ctxs[i];
        proc_cols(t, &x, b->proc->pid);
        u16(t, c->index), u64(t, c->comm_id), i32(t, c->nnodes), i32(t, c->nranks), i32(t, c->rank);
        i32(t, c->api_version);
        str(t, c->name, sizeof c->name);
        origin_cols(t, &x, o, (uint32_t)i);
    }
    t = &tabs[NSC_CH_STRINGS];
    x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    for (size_t i = 0; i < b->nstrs; i++) {
        proc_cols(t, &x, b->proc->pid);
        u16(t, b->strs[i].id);
        str(t, b->strs[i].text, sizeof b->strs[i].text);
        origin_cols(t, &x, o, (uint32_t)i);
    }
}

static void event_rows(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_store_batch *b)
{
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    for (size_t i = 0; i < b->nevents; i++) {
        proc_cols(t, &x, b->proc->pid);
        nsc_ch_event_values(t, &b->events[i]);
        origin_cols(t, &x, o, (uint32_t)i);
    }
}

/* The n records of size `size` at recs: their member at `offset` (width
 * bytes), in order, as the row's next Array. */
static void array_of(nsc_ch_cols *t, const void *recs, size_t n, size_t size, size_t offset, size_t width)
{
    const uint8_t *p = (const uint8_t *)recs + offset;
    for (size_t i = 0; i < n; i++, p += size)
        nsc_ch_put_elem(t, nsc_load_uint(p, width), width);
    nsc_ch_end_array(t);
}

#define ARRAY_OF(t, recs, n, type, member) \
    array_of(t, recs, n, sizeof(type), offsetof(type, member), sizeof(((type *)0)->member))

/* The n records' 64-bit member at `offset` as the three columns of
 * NSC_CH_NARROW: the smallest value, each value's distance from it (4
 * bytes instead of 8: a section's times lie close together), and
 * only where a distance does not fit 32 bits, the values whole instead. */
static void narrow_of(nsc_ch_cols *t, const void *recs, size_t n, size_t size, size_t offset)
{
    const uint8_t *at = (const uint8_t *)recs + offset;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = nsc_load_uint(at + i * size, 8);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    int fits = hi - lo <= UINT32_MAX;
    u64(t, lo);
    for (size_t i = 0; fits && i < n; i++)
        nsc_ch_put_elem(t, nsc_load_uint(at + i * size, 8) - lo, 4);
    nsc_ch_end_array(t);
    for (size_t i = 0; !fits && i < n; i++)
        nsc_ch_put_elem(t, nsc_load_uint(at + i * size, 8), 8);
    nsc_ch_end_array(t);
}

#define NARROW_OF(t, recs, n, type, member) narrow_of(t, recs, n, sizeof(type), offsetof(type, member))

static void state_row(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_store_batch *b)
{
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    proc_cols(t, &x, b->proc->pid);
    ARRAY_OF(t, b->states, b->nstates, nsc_state_rec, id);
    NARROW_OF(t, b->states, b->nstates, nsc_state_rec, ts_ns);
    NARROW_OF(t, b->states, b->nstates, nsc_state_rec, arg);
    ARRAY_OF(t, b->states, b->nstates, nsc_state_rec, tid);
    ARRAY_OF(t, b->states, b->nstates, nsc_state_rec, state);
    section_cols(t, &x, o);
    nsc_ch_end_row(t);
}

static void completion_row(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_store_batch *b)
{
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    proc_cols(t, &x, b->proc->pid);
    ARRAY_OF(t, b->completions, b->ncompletions, nsc_completion, id);
    NARROW_OF(t, b->completions, b->ncompletions, nsc_completion, ts_ns);
    section_cols(t, &x, o);
    nsc_ch_end_row(t);
}

/* The range of the section's record times, as a block's (block_enc.c):
 * 0 when it has no record. */
static int times_of(const nsc_store_batch *b, uint64_t *lo, uint64_t *hi)
{
    *lo = UINT64_MAX, *hi = 0;
    for (size_t i = 0; i < b->nevents; i++) {
        const nsc_event *e = &b->events[i];
        *lo = e->start_ns < *lo ? e->start_ns : *lo;
        uint64_t end = e->stop_ns > e->start_ns ? e->stop_ns : e->start_ns;
        *hi = end > *hi ? end : *hi;
    }
    for (size_t i = 0; i < b->nstates; i++) {
        *lo = b->states[i].ts_ns < *lo ? b->states[i].ts_ns : *lo;
        *hi = b->states[i].ts_ns > *hi ? b->states[i].ts_ns : *hi;
    }
    for (size_t i = 0; i < b->ncompletions; i++) {
        *lo = b->completions[i].ts_ns < *lo ? b->completions[i].ts_ns : *lo;
        *hi = b->completions[i].ts_ns > *hi ? b->completions[i].ts_ns : *hi;
    }
    return b->nevents || b->nstates || b->ncompletions;
}

/* The contexts whose P2p events the section holds, each once, into ctxs
 * (NSC_CH_P2P_CTXS_MAX; a p2p read picks its sections by them); how many.
 * More than fit: NSC_CTX_NONE alone, which every p2p read picks. */
static size_t p2p_ctxs_of(const nsc_store_batch *b, uint16_t *ctxs)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nevents; i++) {
        if (b->events[i].type != NSC_T_P2P)
            continue;
        size_t k = 0;
        while (k < n && ctxs[k] != b->events[i].ctx)
            k++;
        if (k < n)
            continue;
        if (n == NSC_CH_P2P_CTXS_MAX) {
            ctxs[0] = NSC_CTX_NONE;
            return 1;
        }
        ctxs[n++] = b->events[i].ctx;
    }
    return n;
}

static void event_marks(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_store_batch *b)
{
    uint64_t lo, hi;
    uint16_t ctxs[NSC_CH_P2P_CTXS_MAX];
    if (!times_of(b, &lo, &hi))
        return;
    size_t nctxs = p2p_ctxs_of(b, ctxs);
    uint64_t first = lo >> NSC_CH_TIME_BITS, last = hi >> NSC_CH_TIME_BITS;
    if (last - first >= NSC_CH_TIME_SPAN)
        first = last = NSC_CH_TIME_WIDE;
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    for (uint64_t k = first;; k++) {
        proc_cols(t, &x, b->proc->pid);
        u64(t, k), u64(t, lo), u64(t, hi);
        array_of(t, ctxs, nctxs, sizeof *ctxs, 0, sizeof *ctxs);
        section_cols(t, &x, o);
        nsc_ch_end_row(t);
        if (k == last)
            break;
    }
}

void nsc_ch_rows_section(nsc_ch_cols tabs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_store_batch *b)
{
    if (b->nevents)
        event_rows(&tabs[NSC_CH_EVENTS], o, b);
    if (b->nstates)
        state_row(&tabs[NSC_CH_STATES], o, b);
    if (b->ncompletions)
        completion_row(&tabs[NSC_CH_COMPLETIONS], o, b);
    if (b->nctxs || b->nstrs)
        defs_rows(tabs, o, b);
    event_marks(&tabs[NSC_CH_EVENT_MARKS], o, b);
    nsc_ch_cols *t = &tabs[NSC_CH_BATCHES];
    row_texts x = texts_of(t, b->proc->job, b->proc->host, o->agent);
    proc_cols(t, &x, b->proc->pid);
    u32(t, (uint32_t)b->nevents), u32(t, (uint32_t)b->nstates), u32(t, (uint32_t)b->ncompletions);
    i32(t, b->proc->local_rank), i32(t, b->proc->gpu);
    origin_cols(t, &x, o, 0);
}

void nsc_ch_rows_life(nsc_ch_cols *b, const nsc_ch_origin *o, const nsc_store_life *l)
{
    row_texts x = texts_of(b, l->job, l->host, o->agent);
    proc_cols(b, &x, l->pid);
    u8(b, l->event), u8(b, l->reason), u64(b, l->ts_ns), u64(b, l->ref_ns);
    u64(b, l->last_batch_seq);
    origin_cols(b, &x, o, o->section);
}

/* The marks of a ledger batch being gathered: MARKS_MAX at a time (a batch
 * of more groups writes one group in several rows, each its own idx, which
 * the reads' min and max fold). */
#define MARKS_MAX 16

typedef struct mark {
    uint64_t comm_id, bucket, enq_min, enq_max, done_min, done_max;
    uint32_t first;  /* idx: the first record's index in the batch */
    uint16_t ctx;
    int32_t rank;
} mark;

static void put_marks(nsc_ch_cols *t, const row_texts *x, const nsc_ch_origin *o, uint32_t pid, const mark *m,
                      size_t n)
{
    for (size_t i = 0; i < n; i++) {
        proc_cols(t, x, pid);
        u64(t, m[i].comm_id), u64(t, m[i].bucket), u16(t, m[i].ctx), i32(t, m[i].rank);
        u64(t, m[i].enq_min), u64(t, m[i].enq_max), u64(t, m[i].done_min), u64(t, m[i].done_max);
        origin_cols(t, x, o, m[i].first);
    }
}

/* r (index i) into its mark among m[*n], a new one when none is its own. */
static void add_mark(mark *m, size_t *n, const nsc_ledger_rec *r, uint32_t i)
{
    uint64_t bucket = r->seq >> NSC_CH_MARK_BITS;
    size_t k = 0;
    while (k < *n && !(m[k].comm_id == r->comm_id && m[k].bucket == bucket && m[k].ctx == r->ctx &&
                       m[k].rank == r->rank))
        k++;
    if (k == *n)
        m[(*n)++] = (mark){r->comm_id, bucket, UINT64_MAX, 0, UINT64_MAX, 0, i, r->ctx, r->rank};
    mark *g = &m[k];
    g->enq_min = r->enqueue_ns < g->enq_min ? r->enqueue_ns : g->enq_min;
    g->enq_max = r->enqueue_ns > g->enq_max ? r->enqueue_ns : g->enq_max;
    if (nsc_ch_ledger_ended(r)) {
        g->done_min = r->enqueue_ns < g->done_min ? r->enqueue_ns : g->done_min;
        g->done_max = r->enqueue_ns > g->done_max ? r->enqueue_ns : g->done_max;
    }
}

static void ledger_marks(nsc_ch_cols *t, const nsc_ch_origin *o, const nsc_proc *p, const nsc_ledger_batch *b)
{
    row_texts x = texts_of(t, p->job, p->host, o->agent);
    mark m[MARKS_MAX];
    size_t n = 0;
    for (uint32_t i = 0; i < b->nrecs; i++) {
        if (n == MARKS_MAX)
            put_marks(t, &x, o, p->pid, m, n), n = 0;
        add_mark(m, &n, &b->recs[i], i);
    }
    put_marks(t, &x, o, p->pid, m, n);
}

void nsc_ch_rows_ledger(nsc_ch_cols tabs[NSC_CH_NTABLES], const nsc_ch_origin *o, const nsc_proc *p,
                        const void *data, size_t len, const nsc_ledger_batch *b)
{
    nsc_ch_cols *t = &tabs[NSC_CH_LEDGER];
    row_texts x = texts_of(t, p->job, p->host, o->agent);
    proc_cols(t, &x, p->pid);
    nsc_ch_put_text(t, data, len);
    origin_cols(t, &x, o, 0);
    t = &tabs[NSC_CH_LEDGER_RECS];
    x = texts_of(t, p->job, p->host, o->agent);
    for (uint32_t i = 0; i < b->nrecs; i++) {
        proc_cols(t, &x, p->pid);
        nsc_ch_ledger_values(t, &b->recs[i]);
        origin_cols(t, &x, o, i);
    }
    ledger_marks(&tabs[NSC_CH_LEDGER_MARKS], o, p, b);
}

void nsc_ch_rows_clock(nsc_ch_cols *b, const char *host, const nsc_clock_model *m, uint64_t wall_ns)
{
    size_t n = nsc_clock_serialized_size(m);
    str(b, host, 64);
    u64(b, wall_ns);
    uint8_t *model = malloc(n ? n : 1);
    if (model) {
        nsc_clock_serialize(m, model);
        nsc_ch_put_text(b, model, n);
    } else {
        b->failed = 1;
        nsc_ch_put_text(b, "", 0);
    }
    free(model);
    nsc_ch_end_row(b);
}

void nsc_ch_rows_wall(nsc_ch_cols *b, const nsc_store_wall_rec *r)
{
    u64(b, r->utc_ns);
    u64(b, r->ref_ns);
    u64(b, (uint64_t)r->offset_ns);
    nsc_ch_end_row(b);
}

void nsc_ch_rows_progress(nsc_ch_cols *b, const nsc_store_progress *p)
{
    str(b, p->job, sizeof p->job);
    u64(b, p->comm_id);
    i32(b, p->rank);
    str(b, p->func, sizeof p->func);
    u64(b, p->seq);
    u64(b, p->ref_ns);
    nsc_ch_end_row(b);
}

void nsc_ch_rows_job(nsc_ch_cols *t, const char *job, uint64_t wall_ns)
{
    str(t, job, 64);
    u64(t, wall_ns);
    nsc_ch_end_row(t);
}

/* A RowBinary String: its LEB128 length, then its bytes. */
static void row_text(nsc_ch_buf *b, const void *s, size_t len)
{
    nsc_ch_put_varint(b, len);
    uint8_t *at = nsc_ch_room(b, len);
    if (at)
        memcpy(at, s, len);
}

void nsc_ch_rows_live(nsc_ch_buf *b, const char *collector, uint64_t wall_ns, const uint8_t *snap, size_t len)
{
    row_text(b, collector, strnlen(collector, 128));
    uint8_t *at = nsc_ch_room(b, 8);
    if (at)
        nsc_store_uint(at, 8, wall_ns);  /* host order, as every column (little-endian hosts) */
    row_text(b, snap, len);
    b->rows++;
}
