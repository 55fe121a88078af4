/* timeline.c: the events of a communicator in an aligned time window, as
 * NDJSON ordered by aligned start time across ranks.
 *
 * A k-way merge with memory bounded by the blocks that overlap in time, not
 * by the result: one heap holds, per rank, a sentinel for its next undecoded
 * block (keyed by the block's start, which no record in it precedes) and the
 * head event of each decoded block (its events sorted by start). A block is
 * decoded only when its sentinel reaches the top, so every event that could
 * come first is in the heap before one is written. The order is exact while
 * the host's clock model is monotone (it is, except across a clock step).
 */
#include "qint.h"
#include "grow.h"

#include <stdlib.h>
#include <string.h>

typedef struct tl_block {
    nsc_block blk;
    uint32_t *order;      /* event positions sorted by (start, id) */
    uint32_t *states_at;  /* per position: index of the event's first state */
    uint32_t *compl_at;   /* per position: its completion's index, or UINT32_MAX */
    uint32_t n, pos;
    nsc_clock_span span;  /* the clock over the block's times, resolved once */
} tl_block;

/* A sort key: start time relative to the block's earliest, and position. */
typedef struct tl_key {
    uint64_t t;
    uint32_t pos;
} tl_key;

typedef struct tl_item {
    uint64_t t;         /* aligned time */
    uint32_t is_event;  /* sentinels (0) first at equal times */
    int32_t rank;
    uint64_t id;
    uint32_t r;         /* index into c->ranks */
    tl_block *b;        /* NULL: sentinel */
} tl_item;

typedef struct tl_rank {
    nsc_store_blocks *it;
    nsc_gpuclock g;
} tl_rank;

typedef struct tl {
    nsc_q_ctx *c;
    tl_rank *ranks;
    tl_item *heap;
    size_t nheap, cap;
    uint64_t emitted;
    int more;           /* a page ended with events left */
    unsigned parts;     /* what blocks decode besides events (NSC_BLOCK_*) */
    tl_key *keys, *tmp; /* sort scratch, kcap long */
    size_t kcap;
    uint32_t count[8][256]; /* radix sort: per byte of the key, its histogram */
    uint64_t last[3];   /* key of the last event written */
} tl;

static int item_less(const tl_item *a, const tl_item *b)
{
    if (a->t != b->t)
        return a->t < b->t;
    if (a->is_event != b->is_event)
        return a->is_event < b->is_event;
    if (a->rank != b->rank)
        return a->rank < b->rank;
    return a->id < b->id;
}

static int heap_push(tl *s, tl_item it)
{
    if (nsc_grow(&s->heap, s->nheap, &s->cap, sizeof *s->heap, 64))
        return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
    size_t i = s->nheap++;
    while (i && item_less(&it, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = it;
    return 0;
}

/* Put it at slot i (vacated) and move it down to where it belongs. */
static void heap_sift_down(tl *s, size_t i, tl_item it)
{
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= s->nheap)
            break;
        if (k + 1 < s->nheap && item_less(&s->heap[k + 1], &s->heap[k]))
            k++;
        if (!item_less(&s->heap[k], &it))
            break;
        s->heap[i] = s->heap[k];
        i = k;
    }
    s->heap[i] = it;
}

static void heap_pop(tl *s)
{
    if (--s->nheap)
        heap_sift_down(s, 0, s->heap[s->nheap]);
}

static void block_free(tl_block *b)
{
    nsc_block_release(&b->blk);
    free(b->order);
    free(b);
}

/* One stable pass of the radix sort: by the byte at shift. */
static void radix_pass(const tl_key *from, tl_key *to, size_t n, const uint32_t count[256],
                       unsigned shift)
{
    size_t at[256], sum = 0;
    for (unsigned d = 0; d < 256; d++) {
        at[d] = sum;
        sum += count[d];
    }
    for (size_t i = 0; i < n; i++)
        to[at[from[i].t >> shift & 0xff]++] = from[i];
}

/* b->order: positions by (start, id). Blocks store events by id, so a stable
 * sort by start alone breaks ties by id. Events are mostly near their start
 * order already: nothing is sorted when they are in it, else an LSD radix
 * sort runs over the bytes of (start - earliest) that differ. */
static int sort_block(tl *s, tl_block *b)
{
    const nsc_event *ev = b->blk.events;
    uint64_t lo = UINT64_MAX;
    int sorted = 1;
    for (uint32_t i = 0; i < b->n; i++) {
        b->order[i] = i;
        lo = ev[i].start_ns < lo ? ev[i].start_ns : lo;
        sorted &= i == 0 || ev[i].start_ns >= ev[i - 1].start_ns;
    }
    if (sorted)
        return 0;
    if (b->n > s->kcap) {
        free(s->keys);
        free(s->tmp);
        s->keys = malloc(b->n * sizeof *s->keys);
        s->tmp = malloc(b->n * sizeof *s->tmp);
        s->kcap = s->keys && s->tmp ? b->n : 0;
        if (!s->kcap)
            return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
    }
    uint32_t (*count)[256] = s->count;
    memset(s->count, 0, sizeof s->count);
    for (uint32_t i = 0; i < b->n; i++) {
        uint64_t t = ev[i].start_ns - lo;
        s->keys[i] = (tl_key){t, i};
        for (unsigned d = 0; d < 8; d++)
            count[d][t >> 8 * d & 0xff]++;
    }
    tl_key *from = s->keys, *to = s->tmp;
    for (unsigned d = 0; d < 8; d++) {
        if (count[d][from[0].t >> 8 * d & 0xff] == b->n)
            continue; /* every key has this byte */
        radix_pass(from, to, b->n, count[d], 8 * d);
        tl_key *x = from;
        from = to, to = x;
    }
    for (uint32_t i = 0; i < b->n; i++)
        b->order[i] = from[i].pos;
    return 0;
}

/* Where each event's states and completion are: events, states and
 * completions are all stored by event id, so one pass pairs them. */
static void index_block(tl_block *b)
{
    const nsc_block *k = &b->blk;
    uint32_t si = 0, ci = 0;
    for (uint32_t i = 0; i < b->n; i++) {
        uint64_t id = k->events[i].id;
        while (si < k->hdr.nstates && k->states[si].id < id)
            si++;
        while (ci < k->hdr.ncompletions && k->completions[ci].id < id)
            ci++;
        b->states_at[i] = si;
        b->compl_at[i] = ci < k->hdr.ncompletions && k->completions[ci].id == id ? ci : UINT32_MAX;
    }
}

/* Push the sentinel of rank r's next block, if any. */
static int push_sentinel(tl *s, uint32_t r)
{
    nsc_block_key key;
    int rc = nsc_store_blocks_peek(s->ranks[r].it, &key);
    if (rc == 1)
        return 0;
    if (rc)
        return nsc_q_store_fail(s->c, rc);
    const nsc_q_rank *qr = &s->c->ranks[r];
    return heap_push(s, (tl_item){nsc_q_align(s->c, qr, key.start_ns, NULL), 0, qr->rank, 0, r, NULL});
}

/* The heap item of block b's next event; 0 when b has none left. */
static int head_of(const tl *s, const tl_block *b, uint32_t r, tl_item *it)
{
    if (b->pos == b->n)
        return 0;
    const nsc_event *ev = &b->blk.events[b->order[b->pos]];
    const nsc_q_rank *qr = &s->c->ranks[r];
    *it = (tl_item){nsc_q_align_in(s->c, qr, &b->span, ev->start_ns, NULL), 1, qr->rank, ev->id, r,
                    (tl_block *)b};
    return 1;
}

/* Decode rank r's next block and queue its events that pass the filters. */
static int open_block(tl *s, uint32_t r)
{
    tl_block *b = calloc(1, sizeof *b);
    if (!b)
        return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
    nsc_block_key key;
    int rc = nsc_q_next_block(s->c, &s->c->ranks[r], s->ranks[r].it, s->c->q->types, s->parts, &key, &b->blk);
    if (rc) {
        free(b);
        return rc == 1 ? 0 : rc;
    }
    b->n = b->blk.hdr.nevents;
    b->order = malloc((3 * (size_t)b->n + 1) * sizeof *b->order);
    if (!b->order) {
        block_free(b);
        return nsc_q_fail(s->c, NSC_QUERY_ESTORE, "out of memory");
    }
    b->states_at = b->order + b->n;
    b->compl_at = b->states_at + b->n;
    nsc_q_align_span(s->c, &s->c->ranks[r], b->blk.hdr.t_min, b->blk.hdr.t_max, &b->span);
    index_block(b);
    if ((rc = sort_block(s, b))) {
        block_free(b);
        return rc;
    }
    tl_item head;
    if ((rc = push_sentinel(s, r)) || !head_of(s, b, r, &head) || (rc = heap_push(s, head)))
        block_free(b);
    return rc;
}

/* ---- one event as JSON ---------------------------------------------------- */

/* One writer serves three outputs, so the fields of a type are listed once:
 * JSON objects ("key":value), compact arrays (value), and the compact
 * header's column names ("key"). */
enum { W_JSON, W_COMPACT, W_NAMES };

typedef struct tl_w {
    nsc_q_ctx *c;
    int mode;
    const nsc_clock_span *sp;  /* the clock over the event's block (nsc_q_align_in) */
} tl_w;

/* key is ,"k": as a literal: JSON writes it, NAMES writes ,"k", COMPACT a comma. */
static inline int put_key(const tl_w *w, const char *key, size_t klen)
{
    if (w->mode == W_COMPACT)
        nsc_q_lit(w->c->out, ",");
    else
        nsc_q_raw(w->c->out, key, w->mode == W_NAMES ? klen - 1 : klen);
    return w->mode != W_NAMES;
}
static inline void kv_u64(const tl_w *w, const char *key, size_t klen, uint64_t v)
{
    if (put_key(w, key, klen))
        nsc_q_u64(w->c->out, v);
}
static inline void kv_i64(const tl_w *w, const char *key, size_t klen, int64_t v)
{
    if (put_key(w, key, klen))
        nsc_q_i64(w->c->out, v);
}
static inline void kv_opt(const tl_w *w, const char *key, size_t klen, int known, uint64_t v)
{
    if (put_key(w, key, klen))
        nsc_q_opt_u64(w->c->out, known, v);
}
#define KU(w, k, v) kv_u64((w), ",\"" k "\":", sizeof(k) + 3, (v))
#define KI(w, k, v) kv_i64((w), ",\"" k "\":", sizeof(k) + 3, (v))
#define KO(w, k, known, v) kv_opt((w), ",\"" k "\":", sizeof(k) + 3, (known), (v))

/* The descriptor fields of each type, in JSON order, from event_fields.h. */
typedef struct tl_field {
    const char *key;  /* ,"name": */
    uint8_t klen;
    uint8_t val;      /* NSC_VAL_* */
    uint8_t size;
    uint16_t off;     /* in nsc_event */
} tl_field;

typedef struct tl_fields {
    const tl_field *f;
    uint8_t n;
} tl_fields;

#define JSON_ROW(a, kind, m, wire, store, json, nccl)                                         \
    NSC_AT(json, 0, {",\"" #m "\":", sizeof(#m) + 3, NSC_VAL_##kind,                          \
                     sizeof(((nsc_event *)0)->a.m), offsetof(nsc_event, a.m)})
#define JSON_TYPE_FIELDS(type, s, list)                                                       \
    enum { njson_##type = 0 list(NSC_ROW_JSON_COUNT, ~) };                                     \
    _Static_assert(NSC_DENSE(0 list(NSC_ROW_JSON_BITS, ~), njson_##type),                     \
                   #type ": JSON positions are 0..n-1, each once");                            \
    static const tl_field type##_json[] = {list(JSON_ROW, d.s)};
NSC_EVENT_TYPES(JSON_TYPE_FIELDS)
#define JSON_TYPE(type, s, list) [type] = {type##_json, njson_##type},
static const tl_fields json_fields[NSC_T_COUNT] = {NSC_EVENT_TYPES(JSON_TYPE)};

static void write_field(const tl_w *w, const nsc_event *ev, const tl_field *f)
{
    if (!put_key(w, f->key, f->klen))
        return;
    const uint8_t *p = (const uint8_t *)ev + f->off;
    uint64_t u = 0;
    int64_t i = 0;
    switch (f->size) {
    case 1: { uint8_t v; memcpy(&v, p, 1); u = v; i = (int8_t)v; break; }
    case 2: { uint16_t v; memcpy(&v, p, 2); u = v; i = (int16_t)v; break; }
    case 4: { uint32_t v; memcpy(&v, p, 4); u = v; i = (int32_t)v; break; }
    default: { memcpy(&u, p, 8); i = (int64_t)u; break; }
    }
    if (f->val == NSC_VAL_SIGNED)
        nsc_q_i64(w->c->out, i);
    else if (f->val == NSC_VAL_STR)
        nsc_q_str(w->c->out, nsc_q_text(w->c, (uint32_t)u));
    else
        nsc_q_u64(w->c->out, u);
}

/* KernelCh's times on the GPU line, after its descriptor fields. */
static void write_gpu(const tl_w *w, const nsc_q_rank *r, const nsc_gpuclock *g, const nsc_event *ev)
{
    uint64_t a0 = 0, a1 = 0, e0 = 0, e1 = 0;
    int k0 = 0, k1 = 0;
    if (w->mode != W_NAMES &&
        !nsc_gpuclock_kch_stale(g, ev->d.kernel_ch.ptimer_start, nsc_q_align_in(w->c, r, w->sp, ev->start_ns, NULL),
                                ev->d.kernel_ch.ptimer_stop, nsc_q_gpu_seen(w->c, r, w->sp, ev))) {
        k0 = nsc_q_gpu_align(w->c, r, g, w->sp, ev->d.kernel_ch.ptimer_start, &a0, &e0) == 0;
        k1 = nsc_q_gpu_align(w->c, r, g, w->sp, ev->d.kernel_ch.ptimer_stop, &a1, &e1) == 0;
    }
    KO(w, "gpu_start_ns", k0, a0);
    KO(w, "gpu_stop_ns", k1, a1);
    KO(w, "gpu_err_ns", k0 || k1, e0 > e1 ? e0 : e1);
}

/* complete_ns of a Coll or P2p: completion ci of blk (UINT32_MAX: none). */
static void write_completion(const tl_w *w, const nsc_q_rank *r, const nsc_block *blk, uint32_t ci)
{
    int known = ci != UINT32_MAX;
    KO(w, "complete_ns", known, known ? nsc_q_align_in(w->c, r, w->sp, blk->completions[ci].ts_ns, NULL) : 0);
}

/* The type's descriptor fields, then what the timeline derives: ci is the
 * event's completion in blk (write_completion). */
static void write_fields(const tl_w *w, const nsc_q_rank *r, const nsc_gpuclock *g,
                         const nsc_block *blk, const nsc_event *ev, uint32_t ci)
{
    const tl_fields *t = &json_fields[ev->type];
    for (unsigned i = 0; i < t->n; i++)
        write_field(w, ev, &t->f[i]);
    if (ev->type == NSC_T_COLL || ev->type == NSC_T_P2P)
        write_completion(w, r, blk, ci);
    else if (ev->type == NSC_T_KERNEL_CH)
        write_gpu(w, r, g, ev);
}

static const char *const flag_names[] = {"foreign", "graph", "open", "sym", "collnet", "nvls",
                                         "unresolved"};
#define NFLAGS (sizeof flag_names / sizeof flag_names[0])

static void write_flags(nsc_q_out *o, unsigned flags)
{
    nsc_q_lit(o, ",\"flags\":[");
    int first = 1;
    for (unsigned i = 0; i < NFLAGS; i++)
        if (flags & (1u << i)) {
            if (!first)
                nsc_q_lit(o, ",");
            nsc_q_str(o, flag_names[i]);
            first = 0;
        }
    nsc_q_lit(o, "]");
}

/* The event's states, from index first of blk (they are stored by (event id,
 * time)): JSON objects, or compact [state, ts_ns, arg] triples. */
static void write_states(const tl_w *w, const nsc_q_rank *r, const nsc_block *blk, uint32_t first,
                         uint64_t id)
{
    nsc_q_out *o = w->c->out;
    nsc_q_cs(o, w->mode == W_JSON ? ",\"states\":[" : ",[");
    for (size_t i = first; i < blk->hdr.nstates && blk->states[i].id == id; i++) {
        const nsc_state_rec *st = &blk->states[i];
        uint64_t ts = nsc_q_align_in(w->c, r, w->sp, st->ts_ns, NULL);
        if (w->mode == W_COMPACT) {
            nsc_q_cs(o, i == first ? "[" : ",[");
            nsc_q_u64(o, st->state);
            nsc_q_lit(o, ",");
            nsc_q_u64(o, ts);
            nsc_q_lit(o, ",");
            nsc_q_u64(o, st->arg);
            nsc_q_lit(o, "]");
            continue;
        }
        nsc_q_cs(o, i == first ? "{\"state\":" : ",{\"state\":");
        const char *name = nsc_state_name(st->state);
        nsc_q_str(o, name ? name : "");
        KU(w, "ts_ns", ts);
        KU(w, "arg", st->arg);
        nsc_q_lit(o, "}");
    }
    nsc_q_lit(o, "]");
}

/* The event at position p of block b. */
static void write_event(const tl_w *w, const nsc_q_rank *r, const nsc_gpuclock *g,
                        const tl_block *b, uint32_t p, uint64_t start, uint64_t stop, uint64_t err)
{
    const nsc_event *ev = &b->blk.events[p];
    nsc_q_out *o = w->c->out;
    if (w->mode == W_COMPACT) {
        nsc_q_lit(o, "[");
        nsc_q_u64(o, ev->type);
        KI(w, "rank", r->rank);
    } else {
        const char *type = nsc_type_name(ev->type);
        nsc_q_lit(o, "{\"kind\":\"event\",\"type\":");
        nsc_q_str(o, type ? type : "");
        KI(w, "rank", r->rank);
        KU(w, "pid", r->info.pid);
    }
    KU(w, "tid", ev->tid);
    KU(w, "id", ev->id);
    KU(w, "parent", ev->parent);
    KU(w, "start_ns", start);
    KU(w, "stop_ns", stop);
    if (w->mode == W_JSON) {
        KU(w, "raw_start_ns", ev->start_ns);
        KU(w, "raw_stop_ns", ev->stop_ns);
    }
    KU(w, "err_ns", err);
    if (w->mode == W_COMPACT) {
        KU(w, "flags", ev->flags);
        KU(w, "origin_pid", ev->flags & NSC_EVF_FOREIGN ? ev->origin_pid : 0);
    } else {
        write_flags(o, ev->flags);
        if (ev->flags & NSC_EVF_FOREIGN)
            KU(w, "origin_pid", ev->origin_pid);
    }
    write_fields(w, r, g, &b->blk, ev, b->compl_at[p]);
    if (w->c->q->states)
        write_states(w, r, &b->blk, b->states_at[p], ev->id);
    nsc_q_cs(o, w->mode == W_COMPACT ? "]\n" : "}\n");
}

/* ---- the run ---------------------------------------------------------------- */

/* Emit the event at the top of the heap if it passes the window and cursor. */
static int take_event(tl *s, const tl_item *top)
{
    nsc_q_ctx *c = s->c;
    const nsc_q_rank *r = &c->ranks[top->r];
    uint32_t p = top->b->order[top->b->pos];
    const nsc_event *ev = &top->b->blk.events[p];
    uint64_t err, start = top->t;
    uint64_t stop = nsc_q_align_in(c, r, &top->b->span,
                                   ev->stop_ns > ev->start_ns ? ev->stop_ns : ev->start_ns, &err);
    if (start > c->q->t1 || stop < c->q->t0 || !nsc_q_after_cursor(c->q, start, r->rank, ev->id))
        return 0;
    if (s->emitted == c->q->limit) {
        s->more = 1;
        return 0;
    }
    tl_w w = {c, c->q->compact ? W_COMPACT : W_JSON, &top->b->span};
    write_event(&w, r, &s->ranks[top->r].g, top->b, p, start, stop, err);
    s->emitted++;
    s->last[0] = start, s->last[1] = (uint64_t)(int64_t)r->rank, s->last[2] = ev->id;
    return c->out->err;
}

static int merge(tl *s)
{
    int rc = 0;
    for (uint32_t r = 0; !rc && r < s->c->nranks; r++)
        rc = push_sentinel(s, r);
    while (!rc && !s->more && s->nheap) {
        /* past the window: nothing later can enter it */
        if (s->heap[0].t > s->c->q->t1)
            break;
        tl_item top = s->heap[0], next;
        if (!top.b) {
            heap_pop(s);
            rc = open_block(s, top.r);
            continue;
        }
        if ((rc = take_event(s, &top)))
            break; /* the block stays in the heap, which is freed at the end */
        top.b->pos++;
        if (head_of(s, top.b, top.r, &next)) {
            heap_sift_down(s, 0, next);
        } else {
            heap_pop(s);
            block_free(top.b);
        }
    }
    return rc;
}

/* The GPU line of each rank, fitted from its KernelCh (pTimer, aligned CPU)
 * pairs of the blocks that reach into the window: the whole window whatever
 * the cursor, so a page's GPU times are those of the unpaged read (docs/api.md,
 * "Paging and memory"). A block that ends before it is passed over: the
 * blocks walked start as far back as the store's longest block, so its pairs
 * would make a window's GPU times depend on that block, anywhere in the job
 * (and a load of the window's sections alone, docs/clickhouse-read.md, answer
 * otherwise). */
static int fit_gpu(nsc_q_ctx *c, tl_rank *tr, uint32_t r)
{
    uint64_t h0, h1;
    nsc_q_raw_window(c, &c->ranks[r], c->q->t0, c->q->t1, &h0, &h1);
    nsc_store_blocks *it;
    int rc = nsc_store_blocks_open(c->rd, c->job, c->comm.comm_id, c->ranks[r].rank, h0, h1, &it);
    if (rc)
        return nsc_q_store_fail(c, rc);
    nsc_block_key key;
    nsc_block blk;
    /* KernelCh events alone, their times and payload: the others' values are
     * skipped a run at a time, the other common columns not read. */
    while (!rc && (rc = nsc_q_next_block(c, &c->ranks[r], it, 1u << NSC_T_KERNEL_CH, NSC_BLOCK_TIMES_ONLY,
                                         &key, &blk)) == 0) {
        nsc_clock_span sp;
        nsc_q_align_span(c, &c->ranks[r], blk.hdr.t_min, blk.hdr.t_max, &sp);
        for (uint32_t i = 0; !rc && blk.hdr.t_max >= h0 && i < blk.hdr.nevents; i++)
            rc = nsc_q_gpu_pair(c, &c->ranks[r], &tr->g, &sp, &blk.events[i]);
        nsc_block_release(&blk);
    }
    nsc_store_blocks_close(it);
    return rc == 1 ? 0 : rc;
}

/* Per requested type, the names of its compact event's values: the common
 * ones, its fields (those of its JSON object, in the same order), states. */
static void write_columns(nsc_q_ctx *c)
{
    nsc_q_out *o = c->out;
    tl_w w = {c, W_NAMES, NULL};
    nsc_q_lit(o, ",\"columns\":{");
    int first = 1;
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        if (!(c->q->types >> t & 1))
            continue;
        nsc_q_cs(o, first ? "\"" : ",\"");
        nsc_q_u64(o, t);
        nsc_q_lit(o, "\":[\"type\",\"rank\",\"tid\",\"id\",\"parent\",\"start_ns\",\"stop_ns\","
                     "\"err_ns\",\"flags\",\"origin_pid\"");
        nsc_event ev = {.type = (uint8_t)t};
        write_fields(&w, NULL, NULL, NULL, &ev, UINT32_MAX);
        nsc_q_cs(o, c->q->states ? ",\"states\"]" : "]");
        first = 0;
    }
    nsc_q_lit(o, "},\"types\":[");
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        nsc_q_cs(o, t ? "," : "");
        nsc_q_str(o, nsc_type_name(t) ? nsc_type_name(t) : "");
    }
    nsc_q_lit(o, "],\"flag_bits\":[");
    for (unsigned i = 0; i < NFLAGS; i++) {
        nsc_q_cs(o, i ? "," : "");
        nsc_q_str(o, flag_names[i]);
    }
    nsc_q_lit(o, "],\"states\":[");
    for (unsigned i = 0; i < NSC_S_COUNT; i++) {
        nsc_q_cs(o, i ? "," : "");
        nsc_q_str(o, nsc_state_name(i) ? nsc_state_name(i) : "");
    }
    nsc_q_lit(o, "]");
}

static void write_header(tl *s)
{
    nsc_q_ctx *c = s->c;
    nsc_q_out *o = c->out;
    tl_w w = {c, W_JSON, NULL};
    nsc_q_lit(o, "{\"kind\":\"header\",");
    nsc_q_write_comm_head(c);
    nsc_q_lit(o, ",\"t0_ns\":");
    nsc_q_opt_u64(o, c->q->has & QP_T0, c->q->t0);
    nsc_q_lit(o, ",\"t1_ns\":");
    nsc_q_opt_u64(o, c->q->has & QP_T1, c->q->t1);
    nsc_q_write_utc(c, "t0_utc", c->q->has & QP_T0, c->q->t0);
    nsc_q_write_utc(c, "t1_utc", c->q->has & QP_T1, c->q->t1);
    nsc_q_lit(o, ",\"ranks\":[");
    for (size_t i = 0; i < c->nranks; i++) {
        const nsc_q_rank *r = &c->ranks[i];
        const nsc_q_host *h = &c->hosts[r->host];
        nsc_q_cs(o, i ? ",{\"rank\":" : "{\"rank\":");
        nsc_q_i64(o, r->rank);
        nsc_q_lit(o, ",\"host\":");
        nsc_q_str(o, r->info.host);
        KU(&w, "pid", r->info.pid);
        KI(&w, "gpu", r->info.gpu);
        KI(&w, "local_rank", r->info.local_rank);
        nsc_q_cs(o, h->has_model ? ",\"clock\":\"model\"" : ",\"clock\":\"identity\"");
        nsc_q_cs(o, h->cause == NSC_Q_CAUSE_NARROWED        ? ",\"clock_cause\":\"narrowed\""
                    : h->cause == NSC_Q_CAUSE_CONTRADICTION ? ",\"clock_cause\":\"contradiction\""
                                                            : "");
        nsc_q_cs(o, s->ranks[i].g.npairs ? ",\"gpu_clock\":\"fitted\"}" : ",\"gpu_clock\":\"none\"}");
    }
    nsc_q_lit(o, "]");
    if (c->q->detail) {
        nsc_q_lit(o, ",\"detail\":");
        nsc_q_cs(o, c->q->detail);
    }
    if (c->q->compact) {
        nsc_q_cs(o, c->q->states ? ",\"format\":\"compact\",\"with_states\":true"
                                 : ",\"format\":\"compact\",\"with_states\":false");
        write_columns(c);
    }
    nsc_q_lit(o, "}\n");
}

static int run(tl *s)
{
    nsc_q_ctx *c = s->c;
    int rc = 0;
    for (uint32_t r = 0; !rc && r < c->nranks; r++) {
        tl_rank *tr = &s->ranks[r];
        uint64_t from = c->q->has & QP_CURSOR && c->q->cursor[0] > c->q->t0 ? c->q->cursor[0]
                                                                             : c->q->t0, h0, h1;
        nsc_q_raw_window(c, &c->ranks[r], from, c->q->t1, &h0, &h1);
        if (c->q->types & (1u << NSC_T_KERNEL_CH))
            rc = fit_gpu(c, tr, r);
        if (!rc && (rc = nsc_store_blocks_open(c->rd, c->job, c->comm.comm_id, c->ranks[r].rank,
                                               h0, h1, &tr->it)))
            rc = nsc_q_store_fail(c, rc);
    }
    if (rc)
        return rc;
    write_header(s);
    if ((rc = merge(s)))
        return rc;
    nsc_q_out *o = c->out;
    nsc_q_lit(o, "{\"kind\":\"end\",\"events\":");
    nsc_q_u64(o, s->emitted);
    nsc_q_next_cursor(o, s->more, s->last[0], s->last[1], s->last[2]);
    nsc_q_write_skipped(c);
    nsc_q_lit(o, "}\n");
    return o->err;
}

int nsc_q_timeline(nsc_q_ctx *c)
{
    /* Completions are written for Coll and P2p; states only when asked for. */
    unsigned parts = c->q->types & (1u << NSC_T_COLL | 1u << NSC_T_P2P) ? NSC_BLOCK_COMPLETIONS : 0;
    tl s = {.c = c, .parts = parts | (c->q->states ? NSC_BLOCK_STATES : 0)};
    s.ranks = calloc(c->nranks ? c->nranks : 1, sizeof *s.ranks);
    if (!s.ranks)
        return nsc_q_fail(c, NSC_QUERY_ESTORE, "out of memory");
    for (size_t r = 0; r < c->nranks; r++)
        nsc_gpuclock_init(&s.ranks[r].g);
    int rc = run(&s);
    for (size_t i = 0; i < s.nheap; i++)
        if (s.heap[i].b)
            block_free(s.heap[i].b);
    for (size_t r = 0; r < c->nranks; r++) {
        nsc_store_blocks_close(s.ranks[r].it);
        nsc_gpuclock_free(&s.ranks[r].g);
    }
    free(s.heap);
    free(s.keys);
    free(s.tmp);
    free(s.ranks);
    return rc;
}
