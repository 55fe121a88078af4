/* qint.h: what the query endpoints share inside nsc_query.
 *
 * Owns the parsed parameters (struct nsc_query), the buffered JSON writer
 * (nsc_q_out) and the per-run context (nsc_q_ctx): the resolved job and communicator,
 * the ranks with their host clock models, and the string dictionary cache.
 * Endpoints are functions of a nsc_q_ctx; query.c parses and dispatches.
 */
#ifndef NCCLSCOPE_QINT_H
#define NCCLSCOPE_QINT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gpuclock.h"
#include "qbase.h"
#include "store.h"

enum nsc_q_endpoint { Q_COMMS, Q_TIMELINE, Q_COLLECTIVES, Q_TOPOLOGY, Q_STATS, Q_P2P, Q_LEDGER, Q_NENDPOINTS };

/* Which parameters were given (bits of nsc_query.has). */
enum { QP_JOB = 1 << 0, QP_COMM = 1 << 1, QP_RANK = 1 << 2, QP_T0 = 1 << 3, QP_T1 = 1 << 4,
       QP_FUNC = 1 << 5, QP_SEQ = 1 << 6, QP_TYPE = 1 << 7, QP_LIMIT = 1 << 8,
       QP_CURSOR = 1 << 9, QP_FORMAT = 1 << 10, QP_STATES = 1 << 11, QP_CLOCK = 1 << 12,
       QP_SETTLE_LAG = 1 << 13 };

#define Q_MAX_RANGES 64

typedef struct nsc_q_range {
    int32_t lo, hi;
} nsc_q_range;

struct nsc_query {
    int endpoint;
    unsigned has;
    char job[64], comm[64], func[64];
    nsc_q_range ranks[Q_MAX_RANGES];
    size_t nranges;
    uint64_t t0, t1;          /* aligned, inclusive; defaults 0 and UINT64_MAX */
    uint64_t seq_lo, seq_hi;  /* defaults 0 and UINT64_MAX */
    uint64_t settle_lag;      /* p2p: settled_ns stays this far behind the latest event read */
    uint32_t types;           /* event type mask */
    uint64_t limit;
    uint64_t cursor[3];       /* the endpoint's resume key (docs/api.md, paging) */
    int compact;              /* format=compact (timeline): one array per event */
    int states;               /* states=0|1 (timeline); default: 1 for json, 0 compact */
    int causal;               /* clock=causal: the hosts' bounds narrowed by causality (qcause.c) */
    char *detail;             /* the collector's detail fetch (nsc_query_set_detail), or NULL */
    const atomic_int *stop;   /* nsc_query_set_stop, or NULL */
};

/* Buffered output; the first failed write latches err. */
typedef struct nsc_q_out {
    nsc_query_write_fn fn;
    void *arg;
    int err;
    size_t len;
    char buf[1 << 16];
} nsc_q_out;

void nsc_q_raw_slow(nsc_q_out *o, const char *s, size_t n);
/* The common case (it fits) inline: a timeline writes tens of pieces per event. */
static inline void nsc_q_raw(nsc_q_out *o, const char *s, size_t n)
{
    if (n <= sizeof o->buf - o->len) {
        memcpy(o->buf + o->len, s, n);
        o->len += n;
    } else {
        nsc_q_raw_slow(o, s, n);
    }
}
/* nsc_q_lit: a string literal only (its size is taken); nsc_q_cs: any C string. */
#define nsc_q_lit(o, s) nsc_q_raw((o), "" s, sizeof(s) - 1)
void nsc_q_cs(nsc_q_out *o, const char *s);
int nsc_q_flush(nsc_q_out *o);                    /* 0 or NSC_QUERY_EWRITE */
/* v in decimal at p, which has room for 20 bytes; returns the length. */
size_t nsc_q_fmt_u64(char *p, uint64_t v);
/* Inline, formatted in place: a timeline writes about twenty per event. */
static inline void nsc_q_u64(nsc_q_out *o, uint64_t v)
{
    if (sizeof o->buf - o->len < 20)
        nsc_q_flush(o); /* after a failed write the output is discarded anyway */
    o->len += nsc_q_fmt_u64(o->buf + o->len, v);
}
void nsc_q_i64(nsc_q_out *o, int64_t v);
void nsc_q_hex(nsc_q_out *o, uint64_t v);         /* "0x..." with quotes */
void nsc_q_str(nsc_q_out *o, const char *s);      /* a JSON string literal */
void nsc_q_num(nsc_q_out *o, double v);           /* 3 decimals; null if not finite */
void nsc_q_opt_u64(nsc_q_out *o, int known, uint64_t v); /* v or null */
/* Whether the record whose resume key is (a, b, c) comes after q's cursor
 * (always, without one): the keys compare in that order. */
int nsc_q_after_cursor(const nsc_query *q, uint64_t a, uint64_t b, uint64_t c);
/* ,"next_cursor": "a.b.c" (what parse_cursor reads) when more, else null. */
void nsc_q_next_cursor(nsc_q_out *o, int more, uint64_t a, uint64_t b, uint64_t c);

/* One rank of the selected communicator. */
typedef struct nsc_q_rank {
    int32_t rank;
    nsc_store_rank info;
    int host;  /* index into nsc_q_ctx.hosts */
} nsc_q_rank;

/* Host times [lo, hi) that the model aligns early: after a backward step,
 * before the segment that follows it starts (nsc_q_gpu_pair skips them). */
typedef struct nsc_q_doubt {
    uint64_t lo, hi;
} nsc_q_doubt;

/* A host and its clock model (identity when it has none). */
typedef struct nsc_q_host {
    char name[64];
    int has_model;
    nsc_clock_model model;
    nsc_q_doubt *doubt;  /* one per backward step of the model, by time */
    size_t ndoubt, doubt_cap;
    /* What the collectives' causality left of the model's error (qcause.c):
     * at host time cause_ref within [cause_lo, cause_hi] ns (aligned -
     * true), wider by cause_drift per ns away from it, in segment cause_seg
     * only. cause: NSC_Q_CAUSE_*. */
    int cause;
    long cause_seg;
    uint64_t cause_ref;
    double cause_lo, cause_hi, cause_drift;
} nsc_q_host;

enum { NSC_Q_CAUSE_NONE, NSC_Q_CAUSE_NARROWED, NSC_Q_CAUSE_CONTRADICTION };

typedef struct nsc_q_strc {
    uint32_t id;
    char text[64];
} nsc_q_strc;

#define Q_STRCACHE 1024

/* A damaged block a query stepped over, and what was wrong with it. */
typedef struct nsc_q_skip {
    nsc_block_key key;
    const char *damage;  /* static text (nsc_store_blocks_damage) */
} nsc_q_skip;

typedef struct nsc_q_ctx {
    const nsc_query *q;
    nsc_store_reader *rd;
    char *err;
    size_t errcap;
    nsc_q_out *out;
    uint32_t job;
    char job_name[64];
    nsc_store_comm comm;   /* the selected communicator (when one is) */
    nsc_q_rank *ranks;         /* its ranks that pass the rank filter, in rank order */
    size_t nranks;
    nsc_q_host *hosts;
    size_t nhosts, hosts_cap;
    nsc_q_strc *strs;          /* direct-mapped cache of the string dictionary */
    nsc_q_skip *skipped;       /* damaged blocks stepped over, each once */
    size_t nskipped, skipped_cap;
    int has_wall, wall_reset;  /* the store's wall clock (nsc_store_wall), read at init */
    int64_t wall_ns;
} nsc_q_ctx;

int nsc_q_ctx_init(nsc_q_ctx *c, const nsc_query *q, nsc_store_reader *rd, nsc_q_out *out, char *err,
                   size_t errcap);
void nsc_q_ctx_free(nsc_q_ctx *c);
/* Set err (printf-style) and return code. */
int nsc_q_fail(nsc_q_ctx *c, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int nsc_q_store_fail(nsc_q_ctx *c, int rc);
/* The comm parameter as an id ("0x" + hex): 0 and *id, or -1 (a name). */
int nsc_q_comm_id(const nsc_query *q, uint64_t *id);
/* Whether the comm parameter names cm; the error for one that names none. */
int nsc_q_comm_matches(const nsc_query *q, const nsc_store_comm *cm);
int nsc_q_comm_missing(nsc_q_ctx *c);
/* Resolve q->job (or the default job) into c->job. */
int nsc_q_resolve_job(nsc_q_ctx *c);
/* Resolve q->comm into c->comm and load its ranks (rank filter applied) with
 * their hosts' clock models. */
int nsc_q_resolve_comm(nsc_q_ctx *c);
int nsc_q_rank_selected(const nsc_query *q, int32_t rank);
/* The rank range that covers the filter's (a store reads it; callers filter). */
void nsc_q_rank_window(const nsc_query *q, int32_t *lo, int32_t *hi);
/* The selected rank of that number (c->ranks is in rank order), or NULL. */
const nsc_q_rank *nsc_q_rank_of(const nsc_q_ctx *c, int32_t rank);
/* Store-wide string id -> text ("" for 0 or unknown). */
const char *nsc_q_text(nsc_q_ctx *c, uint32_t id);
/* The index in c->hosts of host `name`, its model loaded on first sight. */
int nsc_q_host_index(nsc_q_ctx *c, const char *name, int *out);
/* Narrow the hosts' model errors by the causality of the communicator's
 * ledger (every rank's, whatever the filter), asked with clock=causal:
 * qcause.c, run by the dispatcher (query.c) once the communicator is
 * resolved. */
int nsc_q_cause(nsc_q_ctx *c);
/* A time host_ns of host h aligned through its model (*ref, bound *err),
 * moved and its bound narrowed where causality narrowed h's (qctx.c, beside
 * the alignment, so the context never calls back into qcause.c). */
void nsc_q_cause_apply(const nsc_q_host *h, uint64_t host_ns, uint64_t *ref, uint64_t *err);
/* Host time of a rank's host -> aligned time; err_ns gets the bound (0 identity). */
uint64_t nsc_q_align(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t host_ns, uint64_t *err_ns);
/* An approximate inverse, for positioning scans (callers widen by a margin). */
uint64_t nsc_q_unalign(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t aligned_ns);
/* The raw host window that covers aligned [t0, t1] on rank r, widened. */
void nsc_q_raw_window(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t t0, uint64_t t1, uint64_t *h0,
                      uint64_t *h1);
/* Each block of the selected communicator's rank r in the window's raw host
 * range, the first max of them, through fn (nonzero stops: returned), its
 * events decoded and not its states nor completions (a block whose states
 * are damaged is read, not skipped). Returns 0 or an NSC_QUERY_* error. */
typedef int (*nsc_q_block_fn)(nsc_q_ctx *c, const nsc_q_rank *r, const nsc_block *blk, void *arg);
int nsc_q_rank_blocks(nsc_q_ctx *c, const nsc_q_rank *r, size_t max, nsc_q_block_fn fn, void *arg);
/* For a reader of the P2p events that start in the window: the blocks that
 * hold one (the store's p2p index) and a record ending from the window's
 * start on, their P2p events only. */
int nsc_q_rank_p2p_blocks(nsc_q_ctx *c, const nsc_q_rank *r, nsc_q_block_fn fn, void *arg);
/* The next block of it (rank r's blocks), as nsc_store_blocks_next_sel: 0, 1
 * at the end, or a query error with its message (the rank and the store's
 * reason). A damaged block is stepped over and noted in c->skipped (the
 * answer names it: nsc_q_write_skipped); the next one is read instead. */
int nsc_q_next_block(nsc_q_ctx *c, const nsc_q_rank *r, nsc_store_blocks *it, uint32_t types, unsigned parts,
                     nsc_block_key *key, nsc_block *blk);
/* `,"skipped_blocks":[{"comm","rank","start_ns","seq","error"},...]` when a block
 * was skipped (nothing otherwise): a result's last member. */
void nsc_q_write_skipped(nsc_q_ctx *c);
/* nsc_q_align over a range of a rank's host times resolved once (a block's):
 * times inside it convert with one addition when the model allows
 * (nsc_clock_span_of), the others as nsc_q_align does. Same results. */
void nsc_q_align_span(const nsc_q_ctx *c, const nsc_q_rank *r, uint64_t h0, uint64_t h1, nsc_clock_span *sp);
static inline uint64_t nsc_q_align_in(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_clock_span *sp,
                                      uint64_t host_ns, uint64_t *err_ns)
{
    if (!sp->exact || host_ns < sp->h0 || host_ns > sp->h1)
        return nsc_q_align(c, r, host_ns, err_ns);
    if (err_ns)
        *err_ns = sp->err_ns;
    return host_ns + sp->add;
}
/* Rank r's GPU line is fitted against aligned time, not the host's raw
 * clock: the host model already follows the host's steps and drift, so the
 * line is not broken where the host clock steps (docs/collector-clock.md, "GPU
 * pTimer"). nsc_q_gpu_pair adds a KernelCh's pair (ptimer_stop, its observed CPU
 * time aligned through sp, which may be NULL, as for nsc_q_align_in), unless
 * that time is in one of the host's doubt ranges (an early pair would pull
 * the line's lower envelope down); 0 or NSC_QUERY_ESTORE. */
int nsc_q_gpu_pair(nsc_q_ctx *c, const nsc_q_rank *r, nsc_gpuclock *g, const nsc_clock_span *sp,
                   const nsc_event *ev);
/* The KernelCh's pair's CPU time, aligned as nsc_q_gpu_pair aligns it; 0
 * where it makes no pair. A pair nsc_gpuclock_stale finds (on the whole
 * line) is other work's timer: neither of the event's pTimers is its own. */
uint64_t nsc_q_gpu_seen(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_clock_span *sp, const nsc_event *ev);
/* A GPU pTimer of rank r -> aligned time via the rank's line (g); err_ns: the
 * line's bound plus the host model's there. sp (may be NULL) as above. */
int nsc_q_gpu_align(const nsc_q_ctx *c, const nsc_q_rank *r, const nsc_gpuclock *g, const nsc_clock_span *sp,
                    uint64_t ptimer, uint64_t *aligned, uint64_t *err_ns);

/* A communicator's "comm", "name" and "nranks" members (comms lists them). */
void nsc_q_write_comm(nsc_q_out *o, const nsc_store_comm *m);
/* ,"wall_offset_ns" (and ,"wall_clock_reset":true) when the store knows the
 * wall clock of its time base (nsc_store_wall); nothing when it does not. */
void nsc_q_write_wall(nsc_q_ctx *c);
/* ,"<key>":"<UTC ISO-8601>" of aligned time t_ns, from the store's wall
 * clock (common/utc.h): the one place an answer's *_utc is made; null when
 * the time (known == 0) or the wall clock is unknown. */
void nsc_q_write_utc(nsc_q_ctx *c, const char *key, int known, uint64_t t_ns);
/* The header fields every communicator-scoped result starts with: the job,
 * its wall clock, then nsc_q_write_comm. */
void nsc_q_write_comm_head(nsc_q_ctx *c);

int nsc_q_comms(nsc_q_ctx *c);
int nsc_q_topology(nsc_q_ctx *c);
int nsc_q_timeline(nsc_q_ctx *c);
int nsc_q_collectives(nsc_q_ctx *c);
int nsc_q_stats(nsc_q_ctx *c);
int nsc_q_p2p(nsc_q_ctx *c);
int nsc_q_ledger(nsc_q_ctx *c);

#endif
