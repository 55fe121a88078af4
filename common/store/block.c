/* block.c: columnar, delta+zigzag+varint, zstd-compressed event blocks. */
#include "block.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "bytes.h"

#define BLOCK_MAGIC 0x4e534201u /* "NSB", version 1 */
#define BLOCK_MAGIC_MASK 0xffffff00u
#define CODEC_RAW 0u
#define CODEC_ZSTD 1u

/* ---- field tables ------------------------------------------------------ */

enum { F_SIGNED = 1, F_STR = 2 };
#define NO_REL 0xffffu

/* One stored field: where it lives in its record, and what its value is
 * encoded against (rel: another uint64 field of the same record, else the
 * same field of the previous record of the same type). */
typedef struct field {
    uint16_t off;
    uint8_t size;
    uint8_t flags;
    uint16_t rel;
} field;

#define MEMBER_SIZE(T, m) ((uint8_t)sizeof(((T *)0)->m))
#define EF(m, fl) {offsetof(nsc_event, m), MEMBER_SIZE(nsc_event, m), fl, NO_REL}
#define EFR(m, fl, r) {offsetof(nsc_event, m), MEMBER_SIZE(nsc_event, m), fl, offsetof(nsc_event, r)}

#define NCOMMON 11
static const field common_fields[NCOMMON] = {
    EF(id, 0), EF(parent, 0), EF(start_ns, 0), EFR(stop_ns, 0, start_ns), EF(tid, 0),
    EF(rank, F_SIGNED), EF(ctx, 0), EF(flags, 0), EF(origin_pid, 0), EF(origin_parent, 0),
    EF(origin_ctx, 0)};

/* The common fields and the type fill every byte before the payload union
 * (the decoder relies on it: it zeroes only the union). */
_Static_assert(8 * 4 + 4 + 4 + 2 + 1 + 1 + 4 + 8 + 8 == offsetof(nsc_event, d),
               "nsc_event has padding before its payload");

#define NPAYLOAD 14
typedef struct type_fields {
    uint8_t n;
    field f[NPAYLOAD];
} type_fields;

static const type_fields payload_fields[NSC_T_COUNT] = {
    [NSC_T_COLL] = {14, {EF(d.coll.seq, 0), EF(d.coll.count, 0), EF(d.coll.user_tag, 0),
                         EF(d.coll.traffic_bytes, 0), EF(d.coll.parent_group, 0),
                         EF(d.coll.root, F_SIGNED), EF(d.coll.func, F_STR),
                         EF(d.coll.datatype, F_STR), EF(d.coll.algo, F_STR),
                         EF(d.coll.proto, F_STR), EF(d.coll.kernel_variant, F_STR),
                         EF(d.coll.nchannels, 0), EF(d.coll.nwarps, 0), EF(d.coll.op, 0)}},
    [NSC_T_P2P] = {7, {EF(d.p2p.count, 0), EF(d.p2p.user_tag, 0), EF(d.p2p.parent_group, 0),
                       EF(d.p2p.peer, F_SIGNED), EF(d.p2p.func, F_STR),
                       EF(d.p2p.datatype, F_STR), EF(d.p2p.nchannels, 0)}},
    [NSC_T_PROXY_OP] = {6, {EF(d.proxy_op.peer, F_SIGNED), EF(d.proxy_op.nsteps, F_SIGNED),
                            EF(d.proxy_op.chunk_size, F_SIGNED), EF(d.proxy_op.pid, 0),
                            EF(d.proxy_op.channel, 0), EF(d.proxy_op.is_send, 0)}},
    [NSC_T_PROXY_STEP] = {1, {EF(d.proxy_step.step, F_SIGNED)}},
    [NSC_T_KERNEL_CH] = {4, {EFR(d.kernel_ch.ptimer_start, 0, start_ns),
                             EFR(d.kernel_ch.ptimer_stop, 0, d.kernel_ch.ptimer_start),
                             EFR(d.kernel_ch.ptimer_stop_ns, 0, stop_ns),
                             EF(d.kernel_ch.channel, 0)}},
    [NSC_T_NET_PLUGIN] = {2, {EF(d.net_plugin.plugin_id, F_SIGNED), EF(d.net_plugin.data, 0)}},
    [NSC_T_GROUP_API] = {1, {EF(d.group_api.depth, 0)}},
    [NSC_T_COLL_API] = {6, {EF(d.coll_api.func, F_STR), EF(d.coll_api.datatype, F_STR),
                            EF(d.coll_api.root, F_SIGNED), EF(d.coll_api.count, 0),
                            EF(d.coll_api.stream, 0), EF(d.coll_api.user_tag, 0)}},
    [NSC_T_P2P_API] = {6, {EF(d.coll_api.func, F_STR), EF(d.coll_api.datatype, F_STR),
                           EF(d.coll_api.root, F_SIGNED), EF(d.coll_api.count, 0),
                           EF(d.coll_api.stream, 0), EF(d.coll_api.user_tag, 0)}},
    [NSC_T_KERNEL_LAUNCH] = {1, {EF(d.kernel_launch.stream, 0)}},
    [NSC_T_CE_COLL] = {12, {EF(d.ce_coll.seq, 0), EF(d.ce_coll.count, 0), EF(d.ce_coll.stream, 0),
                            EF(d.ce_coll.user_tag, 0), EF(d.ce_coll.root, F_SIGNED),
                            EF(d.ce_coll.batch_size, 0), EF(d.ce_coll.num_batches, 0),
                            EF(d.ce_coll.ce_seq, 0), EF(d.ce_coll.func, F_STR),
                            EF(d.ce_coll.datatype, F_STR), EF(d.ce_coll.sync_strategy, F_STR),
                            EF(d.ce_coll.intra_batch_sync, 0)}},
    [NSC_T_CE_SYNC] = {2, {EF(d.ce_sync.nranks, F_SIGNED), EF(d.ce_sync.is_complete, 0)}},
    [NSC_T_CE_BATCH] = {3, {EF(d.ce_batch.total_bytes, 0), EF(d.ce_batch.num_ops, F_SIGNED),
                            EF(d.ce_batch.use_intra_sync, 0)}},
    [NSC_T_KERNEL_PHASE] = {4, {EFR(d.kernel_phase.ptimer, 0, start_ns),
                                EF(d.kernel_phase.phase_name, F_STR),
                                EF(d.kernel_phase.channel, 0), EF(d.kernel_phase.phase_id, 0)}},
};

#define NSTATE 5
static const field state_fields[NSTATE] = {
    {offsetof(nsc_state_rec, id), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, ts_ns), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, arg), 8, 0, NO_REL},
    {offsetof(nsc_state_rec, tid), 4, 0, NO_REL},
    {offsetof(nsc_state_rec, state), 1, 0, NO_REL}};

#define NCOMPL 2
static const field compl_fields[NCOMPL] = {
    {offsetof(nsc_completion, id), 8, 0, NO_REL},
    {offsetof(nsc_completion, ts_ns), 8, 0, NO_REL}};

/* Columns: event type, common fields, payload slots, state fields, completion fields. */
enum {
    C_TYPE = 0,
    C_COMMON = 1,
    C_PAYLOAD = C_COMMON + NCOMMON,
    C_STATE = C_PAYLOAD + NPAYLOAD,
    C_COMPL = C_STATE + NSTATE,
    NCOLS = C_COMPL + NCOMPL
};
#define EVENT_MIN_BYTES (1 + NCOMMON) /* every event writes at least one byte per column */

static inline uint64_t load(const void *rec, const field *f)
{
    const uint8_t *p = (const uint8_t *)rec + f->off;
    switch (f->size) {
    case 1: { uint8_t v; memcpy(&v, p, 1); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int8_t)v : v; }
    case 2: { uint16_t v; memcpy(&v, p, 2); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int16_t)v : v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int32_t)v : v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

static void store(void *rec, const field *f, uint64_t v)
{
    uint8_t *p = (uint8_t *)rec + f->off;
    uint8_t b = (uint8_t)v;
    uint16_t h = (uint16_t)v;
    uint32_t w = (uint32_t)v;
    switch (f->size) {
    case 1: memcpy(p, &b, 1); break;
    case 2: memcpy(p, &h, 2); break;
    case 4: memcpy(p, &w, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

static inline uint64_t load_u64(const void *rec, uint16_t off)
{
    uint64_t v;
    memcpy(&v, (const uint8_t *)rec + off, 8);
    return v;
}

static void map_strs(nsc_event *ev, nsc_block_str_map map, void *arg)
{
    if (ev->type >= NSC_T_COUNT)
        return;
    const type_fields *t = &payload_fields[ev->type];
    for (unsigned i = 0; i < t->n; i++)
        if (t->f[i].flags & F_STR)
            store(ev, &t->f[i], map(arg, (nsc_str)load(ev, &t->f[i])));
}

static const char *const err_text[] = {
    "ok", "block shorter than its header", "not an event block", "unknown block version",
    "unknown block codec", "block record counts or sizes over the limits",
    "block payload does not decompress to its declared size",
    "block column table does not match the payload",
    "block column ends inside a value", "block column has bytes after its records",
    "block holds an unknown event type or state", "out of memory"};

const char *nsc_block_strerror(int err)
{
    int i = -err;
    return i >= 0 && i < (int)(sizeof err_text / sizeof *err_text) ? err_text[i] : "unknown error";
}

/* ---- encoding ---------------------------------------------------------- */

typedef struct colbuf {
    uint8_t *p;
    size_t len, cap;
} colbuf;

/* Records are buffered and stored in a canonical order (events by id, states
 * by event id then time, completions by id): ids then grow by small steps and
 * a step's states sit together, which makes the deltas small. */
struct nsc_block_enc {
    colbuf col[NCOLS];
    nsc_block_hdr hdr;
    int any_time;
    colbuf events, states, completions;  /* the buffered records */
    /* Each kind's last buffered (id, time), and whether the kind was added
     * in stored order so far: then it is encoded from its buffer, unsorted. */
    uint64_t last_id[3], last_ts[3];
    int in_order[3];
    colbuf order, counts;                /* sort keys; the counting sort's table */
    colbuf sorted, plain;                /* events; states or completions: reordered */
    const nsc_event *stored;             /* the events in stored order */
    colbuf raw, out;
    nsc_block_str_map map;
    void *map_arg;
    ZSTD_CCtx *zc;
    int level;
};

enum { K_EVENTS, K_STATES, K_COMPL };

static int reserve(colbuf *c, size_t more)
{
    if (c->len + more <= c->cap)
        return 0;
    size_t cap = c->cap ? c->cap : 256;
    while (cap < c->len + more)
        cap *= 2;
    uint8_t *p = realloc(c->p, cap);
    if (!p)
        return NSC_BLOCK_ENOMEM;
    c->p = p;
    c->cap = cap;
    return 0;
}

/* Writes at o, returns the end. Most values are small deltas: one byte, taken
 * without the loop. The write pointer stays local so that byte stores (which
 * may alias anything) do not force a colbuf's fields to be reloaded. */
static inline uint8_t *put_varint(uint8_t *o, uint64_t v)
{
    if (v < 0x80) {
        *o = (uint8_t)v;
        return o + 1;
    }
    do {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    } while (v >= 0x80);
    *o++ = (uint8_t)v;
    return o;
}

static uint64_t zigzag(uint64_t d)
{
    return (d << 1) ^ (uint64_t)((int64_t)d >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
    return (z >> 1) ^ (0 - (z & 1));
}

/* Encoding runs column by column, like decoding: the loop body is the same
 * for a whole column and each column is reserved once. c must have room for
 * ten bytes per record. */

/* One column of the events in stored order; by_type[t] is the field that
 * events of type t store in it (NULL: they store nothing there). A value is
 * relative to the same field of the previous event of its type, or to the
 * field rel of its own event. */
static void encode_event_column(colbuf *c, const nsc_event *ev, uint32_t n,
                                const field *const by_type[NSC_T_COUNT], uint64_t prev[NSC_T_COUNT])
{
    if (n == 0)
        return;  /* the column may have no buffer yet */
    uint8_t *o = c->p + c->len;
    for (uint32_t i = 0; i < n; i++) {
        unsigned t = ev[i].type;
        const field *f = by_type[t];
        if (!f)
            continue;
        uint64_t v = load(&ev[i], f);
        o = put_varint(o, zigzag(v - (f->rel == NO_REL ? prev[t] : load_u64(&ev[i], f->rel))));
        prev[t] = v;
    }
    c->len = (size_t)(o - c->p);
}

/* One column of n records of `size` bytes (states, completions): each value
 * relative to the same field of the previous record. */
static void encode_plain_column(colbuf *c, const uint8_t *rec, size_t size, uint32_t n,
                                const field *f)
{
    uint64_t prev = 0;
    if (n == 0)
        return;  /* the column may have no buffer yet */
    uint8_t *o = c->p + c->len;
    for (uint32_t i = 0; i < n; i++, rec += size) {
        uint64_t v = load(rec, f);
        o = put_varint(o, zigzag(v - prev));
        prev = v;
    }
    c->len = (size_t)(o - c->p);
}

int nsc_block_enc_new(int level, nsc_block_enc **out)
{
    nsc_block_enc *e = calloc(1, sizeof *e);
    if (!e)
        return NSC_BLOCK_ENOMEM;
    e->level = level;
    if (level > 0 && !(e->zc = ZSTD_createCCtx())) {
        free(e);
        return NSC_BLOCK_ENOMEM;
    }
    *out = e;
    return 0;
}

void nsc_block_enc_free(nsc_block_enc *e)
{
    if (!e)
        return;
    for (int i = 0; i < NCOLS; i++)
        free(e->col[i].p);
    free(e->events.p);
    free(e->states.p);
    free(e->completions.p);
    free(e->order.p);
    free(e->counts.p);
    free(e->sorted.p);
    free(e->plain.p);
    free(e->raw.p);
    free(e->out.p);
    ZSTD_freeCCtx(e->zc);
    free(e);
}

void nsc_block_begin(nsc_block_enc *e, uint32_t proc)
{
    for (int i = 0; i < NCOLS; i++)
        e->col[i].len = 0;
    e->events.len = e->states.len = e->completions.len = 0;
    for (int k = 0; k < 3; k++) {
        e->last_id[k] = e->last_ts[k] = 0;
        e->in_order[k] = 1;
    }
    memset(&e->hdr, 0, sizeof e->hdr);
    e->hdr.proc = proc;
    e->any_time = 0;
}

static void widen(nsc_block_enc *e, uint64_t lo, uint64_t hi)
{
    if (!e->any_time || lo < e->hdr.t_min)
        e->hdr.t_min = lo;
    if (!e->any_time || hi > e->hdr.t_max)
        e->hdr.t_max = hi;
    e->any_time = 1;
}

void nsc_block_set_str_map(nsc_block_enc *e, nsc_block_str_map map, void *arg)
{
    e->map = map;
    e->map_arg = arg;
}

/* Room for one more record of kind k at the end of c (NULL: out of memory),
 * noting whether the kind is still in stored order (by id, then time; equal
 * keys keep the order they came in). The caller copies the record: its size
 * known there, the copy is a few vector moves, not a `rep movs`. */
static void *next_slot(nsc_block_enc *e, int k, colbuf *c, size_t size, uint64_t id,
                       uint64_t ts)
{
    if (reserve(c, size))
        return NULL;
    void *slot = c->p + c->len;
    c->len += size;
    if (id < e->last_id[k] || (id == e->last_id[k] && ts < e->last_ts[k]))
        e->in_order[k] = 0;
    e->last_id[k] = id;
    e->last_ts[k] = ts;
    return slot;
}

int nsc_block_add_event(nsc_block_enc *e, const nsc_event *ev)
{
    if (ev->type >= NSC_T_COUNT)
        return NSC_BLOCK_ETYPE;
    if (e->hdr.nevents == NSC_BLOCK_MAX_RECORDS)
        return NSC_BLOCK_ELIMIT;
    nsc_event *copy = next_slot(e, K_EVENTS, &e->events, sizeof *ev, ev->id, ev->start_ns);
    if (!copy)
        return NSC_BLOCK_ENOMEM;
    memcpy(copy, ev, sizeof *ev);
    if (e->map)
        map_strs(copy, e->map, e->map_arg);
    e->hdr.nevents++;
    widen(e, ev->start_ns, ev->stop_ns > ev->start_ns ? ev->stop_ns : ev->start_ns);
    return 0;
}

int nsc_block_add_state(nsc_block_enc *e, const nsc_state_rec *s)
{
    if (s->state >= NSC_S_COUNT)
        return NSC_BLOCK_ETYPE;
    if (e->hdr.nstates == NSC_BLOCK_MAX_RECORDS)
        return NSC_BLOCK_ELIMIT;
    nsc_state_rec *copy = next_slot(e, K_STATES, &e->states, sizeof *s, s->id, s->ts_ns);
    if (!copy)
        return NSC_BLOCK_ENOMEM;
    memcpy(copy, s, sizeof *s);
    e->hdr.nstates++;
    widen(e, s->ts_ns, s->ts_ns);
    return 0;
}

int nsc_block_add_completion(nsc_block_enc *e, const nsc_completion *c)
{
    if (e->hdr.ncompletions == NSC_BLOCK_MAX_RECORDS)
        return NSC_BLOCK_ELIMIT;
    nsc_completion *copy = next_slot(e, K_COMPL, &e->completions, sizeof *c, c->id, c->ts_ns);
    if (!copy)
        return NSC_BLOCK_ENOMEM;
    memcpy(copy, c, sizeof *c);
    e->hdr.ncompletions++;
    widen(e, c->ts_ns, c->ts_ns);
    return 0;
}

/* Sorting small (key, index) pairs, not the records themselves, keeps the
 * canonical order cheap. */
typedef struct sort_key {
    uint64_t id, ts;
    uint32_t idx;
} sort_key;

/* A counting sort's table may have this many slots per record (plus a few
 * thousand): the ids of a block's records span a narrow range, since a
 * process numbers its events one after another. Sparser ids are compared. */
#define COUNT_SLOTS_PER_RECORD 4
#define COUNT_SLOTS_MIN 4096
/* Records of one id (an event's states) are ordered by insertion up to this
 * many; there are rarely more than a handful. */
#define RUN_INSERTION_MAX 32

static int cmp_keys(const void *a, const void *b)
{
    const sort_key *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* The records of one id, in index order, into (time, index) order. */
static void order_run(sort_key *r, uint32_t n)
{
    if (n > RUN_INSERTION_MAX) {
        qsort(r, n, sizeof *r, cmp_keys);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        sort_key x = r[i];
        uint32_t j = i;
        for (; j > 0 && r[j - 1].ts > x.ts; j--)
            r[j] = r[j - 1];
        r[j] = x;
    }
}

/* k sorted into out as cmp_keys orders them, every id in [lo, lo + span):
 * a stable counting sort on the id keeps each id's records in index order,
 * then each id's run is put in time order. */
static int counting_sort(nsc_block_enc *e, const sort_key *k, sort_key *out, uint32_t n,
                         uint64_t lo, size_t span)
{
    e->counts.len = 0;
    if (reserve(&e->counts, span * sizeof(uint32_t)))
        return NSC_BLOCK_ENOMEM;
    uint32_t *at = (uint32_t *)e->counts.p;
    memset(at, 0, span * sizeof *at);
    for (uint32_t i = 0; i < n; i++)
        at[k[i].id - lo]++;
    for (size_t s = 0, sum = 0; s < span; s++) {
        uint32_t c = at[s];
        at[s] = (uint32_t)sum;
        sum += c;
    }
    for (uint32_t i = 0; i < n; i++)
        out[at[k[i].id - lo]++] = k[i];
    for (uint32_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && out[j].id == out[i].id; j++)
            ;
        order_run(out + i, j - i);
    }
    return 0;
}

/* (id, time, index) of n records of `size` bytes, sorted; NULL when out of
 * memory. */
static const sort_key *sorted_keys(nsc_block_enc *e, const uint8_t *recs, uint32_t n,
                                   size_t size, size_t ts_off)
{
    e->order.len = 0;
    if (reserve(&e->order, 2 * (size_t)n * sizeof(sort_key) + 1))
        return NULL;
    sort_key *k = (sort_key *)e->order.p;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (uint32_t i = 0; i < n; i++) {
        memcpy(&k[i].id, recs + i * size, 8);
        memcpy(&k[i].ts, recs + i * size + ts_off, 8);
        k[i].idx = i;
        lo = k[i].id < lo ? k[i].id : lo;
        hi = k[i].id > hi ? k[i].id : hi;
    }
    if (n < 2)
        return k;
    if (hi - lo >= (uint64_t)n * COUNT_SLOTS_PER_RECORD + COUNT_SLOTS_MIN) {
        qsort(k, n, sizeof *k, cmp_keys);
        return k;
    }
    return counting_sort(e, k, k + n, n, lo, (size_t)(hi - lo) + 1) ? NULL : k + n;
}

/* *out = the n buffered records of kind `kind`, `size` bytes each, in their
 * stored order (by id, then time): the buffer itself when they came in that
 * order, else dst, where they are copied sorted. */
static int in_stored_order(nsc_block_enc *e, int kind, const colbuf *recs, uint32_t n,
                           size_t size, size_t ts_off, colbuf *dst, const uint8_t **out)
{
    *out = recs->p;
    if (e->in_order[kind])
        return 0;
    const sort_key *k = sorted_keys(e, recs->p, n, size, ts_off);
    dst->len = 0;
    if (!k || reserve(dst, (size_t)n * size + 1))
        return NSC_BLOCK_ENOMEM;
    /* Word by word: a memcpy of a size known only at run time costs more
     * than these records (16 to 128 bytes) take to copy. */
    uint64_t *to = (uint64_t *)dst->p;
    for (uint32_t i = 0; i < n; i++)
        for (size_t w = 0, from = k[i].idx * size; w < size; w += 8, from += 8)
            memcpy(to++, recs->p + from, 8);
    dst->len = (size_t)n * size;
    *out = dst->p;
    return 0;
}

#define ENCODE_TILE 256 /* events: 32 KiB */

static int encode_events(nsc_block_enc *e)
{
    uint32_t n = e->hdr.nevents;
    const uint8_t *recs;
    if (in_stored_order(e, K_EVENTS, &e->events, n, sizeof(nsc_event),
                        offsetof(nsc_event, start_ns), &e->sorted, &recs) ||
        reserve(&e->col[C_TYPE], n))
        return NSC_BLOCK_ENOMEM;
    const nsc_event *ev = (const nsc_event *)recs;
    e->stored = ev;
    for (uint32_t i = 0; i < n; i++)
        e->col[C_TYPE].p[e->col[C_TYPE].len++] = ev[i].type;
    /* The common columns, then the payload slots: C_COMMON + i for both. */
    const field *by_type[NCOMMON + NPAYLOAD][NSC_T_COUNT];
    uint64_t prev[NCOMMON + NPAYLOAD][NSC_T_COUNT] = {{0}};
    for (unsigned i = 0; i < NCOMMON + NPAYLOAD; i++) {
        for (unsigned t = 0; t < NSC_T_COUNT; t++) {
            unsigned slot = i - NCOMMON;
            by_type[i][t] = i < NCOMMON                  ? &common_fields[i]
                            : slot < payload_fields[t].n ? &payload_fields[t].f[slot]
                                                         : NULL;
        }
        if (reserve(&e->col[C_COMMON + i], (size_t)n * 10))
            return NSC_BLOCK_ENOMEM;
    }
    /* Tile by tile, every column: a tile of records stays in the L1 cache
     * for all the column passes instead of coming from L2 or memory again
     * for each of them (a block holds up to tens of thousands of records). */
    for (uint32_t at = 0; at < n; at += ENCODE_TILE) {
        uint32_t k = n - at < ENCODE_TILE ? n - at : ENCODE_TILE;
        for (unsigned i = 0; i < NCOMMON + NPAYLOAD; i++)
            encode_event_column(&e->col[C_COMMON + i], ev + at, k, by_type[i], prev[i]);
    }
    return 0;
}

/* States or completions: n records of `size` bytes, nf fields from column first. */
static int encode_plain(nsc_block_enc *e, int kind, const colbuf *recs, uint32_t n, size_t size,
                        size_t ts_off, const field *f, unsigned nf, int first)
{
    const uint8_t *rec;
    if (in_stored_order(e, kind, recs, n, size, ts_off, &e->plain, &rec))
        return NSC_BLOCK_ENOMEM;
    for (unsigned i = 0; i < nf; i++) {
        if (reserve(&e->col[first + i], (size_t)n * 10))
            return NSC_BLOCK_ENOMEM;
        encode_plain_column(&e->col[first + i], rec, size, n, &f[i]);
    }
    return 0;
}

/* Sort the buffered records into their stored order and write the columns. */
static int encode_columns(nsc_block_enc *e)
{
    _Static_assert(offsetof(nsc_event, id) == 0 && offsetof(nsc_state_rec, id) == 0 &&
                       offsetof(nsc_completion, id) == 0,
                   "records start with their (event) id");
    _Static_assert(sizeof(nsc_event) % 8 == 0 && sizeof(nsc_state_rec) % 8 == 0 &&
                       sizeof(nsc_completion) % 8 == 0,
                   "records are copied in 8-byte words");
    int rc = encode_events(e);
    if (!rc)
        rc = encode_plain(e, K_STATES, &e->states, e->hdr.nstates, sizeof(nsc_state_rec),
                          offsetof(nsc_state_rec, ts_ns), state_fields, NSTATE, C_STATE);
    if (!rc)
        rc = encode_plain(e, K_COMPL, &e->completions, e->hdr.ncompletions, sizeof(nsc_completion),
                          offsetof(nsc_completion, ts_ns), compl_fields, NCOMPL, C_COMPL);
    return rc;
}

const nsc_event *nsc_block_events(const nsc_block_enc *e, size_t *n)
{
    *n = e->hdr.nevents;
    return e->stored;
}

static void write_hdr(uint8_t *p, uint32_t codec, uint32_t raw_len, const nsc_block_hdr *h)
{
    nsc_put_be32(p, BLOCK_MAGIC);
    nsc_put_be32(p + 4, codec);
    nsc_put_be32(p + 8, h->proc);
    nsc_put_be32(p + 12, h->nevents);
    nsc_put_be32(p + 16, h->nstates);
    nsc_put_be32(p + 20, h->ncompletions);
    nsc_put_be32(p + 24, raw_len);
    nsc_put_be64(p + 28, h->t_min);
    nsc_put_be64(p + 36, h->t_max);
}

/* raw = the column lengths as varints, then the columns. */
static int build_raw(nsc_block_enc *e)
{
    size_t total = NCOLS * 10;
    for (int i = 0; i < NCOLS; i++)
        total += e->col[i].len;
    e->raw.len = 0;
    if (reserve(&e->raw, total))
        return NSC_BLOCK_ENOMEM;
    uint8_t *o = e->raw.p;
    for (int i = 0; i < NCOLS; i++)
        o = put_varint(o, e->col[i].len);
    e->raw.len = (size_t)(o - e->raw.p);
    for (int i = 0; i < NCOLS; i++)
        if (e->col[i].len) {
            memcpy(e->raw.p + e->raw.len, e->col[i].p, e->col[i].len);
            e->raw.len += e->col[i].len;
        }
    return e->raw.len > UINT32_MAX ? NSC_BLOCK_ELIMIT : 0;
}

int nsc_block_finish(nsc_block_enc *e, const uint8_t **out, size_t *len, nsc_block_hdr *hdr)
{
    int rc = encode_columns(e);
    if (rc == 0)
        rc = build_raw(e);
    if (rc)
        return rc;
    size_t bound = ZSTD_compressBound(e->raw.len);
    e->out.len = 0;
    if (reserve(&e->out, NSC_BLOCK_HDR_LEN + (bound > e->raw.len ? bound : e->raw.len)))
        return NSC_BLOCK_ENOMEM;
    uint32_t codec = CODEC_RAW;
    size_t body = e->raw.len;
    if (e->level > 0) {
        size_t z = ZSTD_compressCCtx(e->zc, e->out.p + NSC_BLOCK_HDR_LEN, bound, e->raw.p,
                                     e->raw.len, e->level);
        if (!ZSTD_isError(z) && z < e->raw.len) {
            codec = CODEC_ZSTD;
            body = z;
        }
    }
    if (codec == CODEC_RAW)
        memcpy(e->out.p + NSC_BLOCK_HDR_LEN, e->raw.p, e->raw.len);
    write_hdr(e->out.p, codec, (uint32_t)e->raw.len, &e->hdr);
    *out = e->out.p;
    *len = NSC_BLOCK_HDR_LEN + body;
    if (hdr)
        *hdr = e->hdr;
    return 0;
}

/* ---- decoding ---------------------------------------------------------- */

/* Decoding runs column by column: one field of every record before the next
 * field, so the loop body is the same for a whole column, a column nobody
 * asked for is never read, and no record is copied to serve as the base of
 * the next one (the bases live in a small per-type array). */

typedef struct colrd {
    const uint8_t *p, *end;
} colrd;

static int get_varint_checked(colrd *c, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p == c->end)
            return NSC_BLOCK_ETRUNC;
        uint8_t b = *c->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return NSC_BLOCK_ETRUNC;  /* more than 10 bytes: not a varint */
}

/* Ten bytes left in the column hold any varint: no check per byte then. */
static inline int get_varint(colrd *c, uint64_t *v)
{
    if (c->end - c->p < 10)
        return get_varint_checked(c, v);
    const uint8_t *p = c->p;
    uint64_t b = *p++, x = b & 0x7f;
    for (int shift = 7; b & 0x80; shift += 7) {
        if (shift == 70)
            return NSC_BLOCK_ETRUNC;
        b = *p++;
        x |= (b & 0x7f) << shift;
    }
    c->p = p;
    *v = x;
    return 0;
}

/* Skip k varints, eight bytes at a time while the k-th ends further on: the
 * values of a run of events nobody asked for. As strict as decoding them: run
 * counts the continuation bytes since the last value ended (at most nine). */
static int skip_varints(colrd *c, uint32_t k)
{
    const uint64_t high = 0x8080808080808080u;
    const uint8_t *p = c->p;
    unsigned run = 0;
    while (k && c->end - p >= 8) {
        uint64_t w = 0;
        for (unsigned i = 0; i < 8; i++)  /* little-endian: byte i is bits 8i.. */
            w |= (uint64_t)p[i] << 8 * i;
        uint64_t ends = ~w & high;  /* the high bit of each byte that ends a value */
        uint32_t nends = (uint32_t)(((ends >> 7) * 0x0101010101010101u) >> 56);
        if (nends >= k)
            break;  /* the k-th value ends in this word: byte by byte */
        if (!ends) {
            if ((run += 8) > 9)
                return NSC_BLOCK_ETRUNC;
        } else {
            if (run + (unsigned)__builtin_ctzll(ends) / 8 > 9)
                return NSC_BLOCK_ETRUNC;
            run = (unsigned)__builtin_clzll(ends) / 8;
        }
        k -= nends;
        p += 8;
    }
    for (; k; p++) {
        if (p == c->end)
            return NSC_BLOCK_ETRUNC;
        if (!(*p & 0x80))
            run = 0, k--;
        else if (++run > 9)
            return NSC_BLOCK_ETRUNC;
    }
    c->p = p;
    return 0;
}

/* Store v into f of rec; returns the value as load() reads it back. */
static inline uint64_t put_field(void *rec, const field *f, uint64_t v)
{
    store(rec, f, v);
    switch (f->size) {
    case 1: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
    case 2: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
    case 4: return f->flags & F_SIGNED ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
    default: return v;
    }
}

/* The stored events and which of them the caller keeps. */
typedef struct ev_cols {
    const uint8_t *types;  /* the type column, one byte per stored event */
    uint32_t n;            /* stored events */
    uint32_t want;         /* type mask of the events kept */
    nsc_event *out;        /* the kept events, in stored order */
} ev_cols;

/* How many events from i on are not kept. */
static uint32_t run_not_kept(const ev_cols *d, uint32_t i)
{
    uint32_t j = i;
    while (j < d->n && !(d->want >> d->types[j] & 1))
        j++;
    return j - i;
}

/* One common field's column. Values of events not kept are skipped a run at
 * a time. */
static int decode_common_column(const ev_cols *d, colrd *c, const field *f)
{
    uint64_t prev[NSC_T_COUNT] = {0};
    nsc_event *ev = d->out;
    for (uint32_t i = 0; i < d->n; i++) {
        uint32_t skip = run_not_kept(d, i);
        if (skip && skip_varints(c, skip))
            return NSC_BLOCK_ETRUNC;
        if ((i += skip) == d->n)
            break;
        unsigned t = d->types[i];
        uint64_t z;
        if (get_varint(c, &z))
            return NSC_BLOCK_ETRUNC;
        uint64_t base = f->rel == NO_REL ? prev[t] : load_u64(ev, f->rel);
        prev[t] = put_field(ev, f, base + unzigzag(z));
        ev++;
    }
    return c->p == c->end ? 0 : NSC_BLOCK_ETRAILING;
}

/* Skip the payload values of the n events from i on (none kept) in the first
 * nslots slots: each slot holds a value per event whose type has it. */
static int skip_payload(const ev_cols *d, uint32_t i, uint32_t n, colrd *slots, unsigned nslots)
{
    uint32_t per_type[NSC_T_COUNT] = {0}, per_slot[NPAYLOAD] = {0};
    for (uint32_t k = i; k < i + n; k++)
        per_type[d->types[k]]++;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        for (unsigned j = 0; per_type[t] && j < payload_fields[t].n && j < nslots; j++)
            per_slot[j] += per_type[t];
    for (unsigned j = 0; j < nslots; j++)
        if (per_slot[j] && skip_varints(&slots[j], per_slot[j]))
            return NSC_BLOCK_ETRUNC;
    return 0;
}

/* The payload slots, event by event: an event reads only the slots its type
 * has (most events have one or two of the fourteen). Only the slots a kept
 * type has are read (and checked). */
static int decode_payload(const ev_cols *d, colrd *slots)
{
    uint64_t prev[NSC_T_COUNT][NPAYLOAD];
    memset(prev, 0, sizeof prev);
    unsigned nslots = 0;
    for (unsigned t = 0; t < NSC_T_COUNT; t++)
        if (d->want >> t & 1 && payload_fields[t].n > nslots)
            nslots = payload_fields[t].n;
    nsc_event *ev = d->out;
    for (uint32_t i = 0; i < d->n; i++) {
        uint32_t skip = run_not_kept(d, i);
        if (skip && skip_payload(d, i, skip, slots, nslots))
            return NSC_BLOCK_ETRUNC;
        if ((i += skip) == d->n)
            break;
        unsigned t = d->types[i];
        const type_fields *tf = &payload_fields[t];
        for (unsigned j = 0; j < tf->n; j++) {
            const field *f = &tf->f[j];
            uint64_t z;
            if (get_varint(&slots[j], &z))
                return NSC_BLOCK_ETRUNC;
            uint64_t base = f->rel == NO_REL ? prev[t][j] : load_u64(ev, f->rel);
            prev[t][j] = put_field(ev, f, base + unzigzag(z));
        }
        ev++;
    }
    for (unsigned j = 0; j < nslots; j++)
        if (slots[j].p != slots[j].end)
            return NSC_BLOCK_ETRAILING;
    return 0;
}

/* One column of n records of `size` bytes (states, completions): each value
 * is relative to the same field of the previous record. */
static int decode_plain_column(colrd *c, void *recs, size_t size, uint32_t n, const field *f)
{
    uint64_t prev = 0;
    uint8_t *rec = recs;
    for (uint32_t i = 0; i < n; i++, rec += size) {
        uint64_t z;
        if (get_varint(c, &z))
            return NSC_BLOCK_ETRUNC;
        prev = put_field(rec, f, prev + unzigzag(z));
    }
    return c->p == c->end ? 0 : NSC_BLOCK_ETRAILING;
}

int nsc_block_read_hdr(const void *buf, size_t len, nsc_block_hdr *h)
{
    const uint8_t *p = buf;
    if (len < NSC_BLOCK_HDR_LEN)
        return NSC_BLOCK_ESHORT;
    uint32_t magic = nsc_get_be32(p);
    if ((magic & BLOCK_MAGIC_MASK) != (BLOCK_MAGIC & BLOCK_MAGIC_MASK))
        return NSC_BLOCK_EMAGIC;
    if (magic != BLOCK_MAGIC)
        return NSC_BLOCK_EVERSION;
    if (nsc_get_be32(p + 4) > CODEC_ZSTD)
        return NSC_BLOCK_ECODEC;
    h->proc = nsc_get_be32(p + 8);
    h->nevents = nsc_get_be32(p + 12);
    h->nstates = nsc_get_be32(p + 16);
    h->ncompletions = nsc_get_be32(p + 20);
    h->t_min = nsc_get_be64(p + 28);
    h->t_max = nsc_get_be64(p + 36);
    if (h->nevents > NSC_BLOCK_MAX_RECORDS || h->nstates > NSC_BLOCK_MAX_RECORDS ||
        h->ncompletions > NSC_BLOCK_MAX_RECORDS)
        return NSC_BLOCK_ELIMIT;
    return 0;
}

/* What decoding reuses from one block to the next: the zstd context (its
 * tables cost more to set up than a small block costs to decompress) and the
 * buffer the columns are decompressed into. */
struct nsc_block_dec {
    ZSTD_DCtx *zd;  /* NULL: a one-shot decode, zstd makes its own */
    uint8_t *raw;
    size_t cap;
};

int nsc_block_dec_new(nsc_block_dec **out)
{
    nsc_block_dec *d = calloc(1, sizeof *d);
    if (!d || !(d->zd = ZSTD_createDCtx())) {
        free(d);
        return NSC_BLOCK_ENOMEM;
    }
    *out = d;
    return 0;
}

void nsc_block_dec_free(nsc_block_dec *d)
{
    if (!d)
        return;
    ZSTD_freeDCtx(d->zd);
    free(d->raw);
    free(d);
}

/* The payload's raw column bytes, decompressed into d->raw when needed. */
static int payload(nsc_block_dec *d, const uint8_t *buf, size_t len, const nsc_block_hdr *h,
                   const uint8_t **raw, size_t *raw_len)
{
    uint64_t n = nsc_get_be32(buf + 24);
    uint64_t least = NCOLS + (uint64_t)h->nevents * EVENT_MIN_BYTES +
                     (uint64_t)h->nstates * NSTATE + (uint64_t)h->ncompletions * NCOMPL;
    uint64_t most = NCOLS * 10 +
                    ((uint64_t)h->nevents * (1 + NCOMMON + NPAYLOAD) +
                     (uint64_t)h->nstates * NSTATE + (uint64_t)h->ncompletions * NCOMPL) * 10;
    if (n < least || n > most)
        return NSC_BLOCK_ELIMIT;
    const uint8_t *body = buf + NSC_BLOCK_HDR_LEN;
    size_t body_len = len - NSC_BLOCK_HDR_LEN;
    *raw_len = (size_t)n;
    if (nsc_get_be32(buf + 4) == CODEC_RAW) {
        if (body_len != n)
            return NSC_BLOCK_ECOLUMN;
        *raw = body;
        return 0;
    }
    if (ZSTD_getFrameContentSize(body, body_len) != n)
        return NSC_BLOCK_EDECOMPRESS;
    if (n > d->cap) {
        uint8_t *p = realloc(d->raw, (size_t)n);
        if (!p)
            return NSC_BLOCK_ENOMEM;
        d->raw = p;
        d->cap = (size_t)n;
    }
    size_t got = d->zd ? ZSTD_decompressDCtx(d->zd, d->raw, (size_t)n, body, body_len)
                       : ZSTD_decompress(d->raw, (size_t)n, body, body_len);
    if (ZSTD_isError(got) || got != n)
        return NSC_BLOCK_EDECOMPRESS;
    *raw = d->raw;
    return 0;
}

/* Split raw into its columns; their lengths must add up to the rest exactly. */
static int split_columns(const uint8_t *raw, size_t raw_len, colrd *cols)
{
    colrd table = {raw, raw + raw_len};
    uint64_t lens[NCOLS], sum = 0;
    for (int i = 0; i < NCOLS; i++) {
        if (get_varint(&table, &lens[i]) || lens[i] > raw_len)
            return NSC_BLOCK_ECOLUMN;
        sum += lens[i];
    }
    if (sum != (uint64_t)(table.end - table.p))
        return NSC_BLOCK_ECOLUMN;
    const uint8_t *p = table.p;
    for (int i = 0; i < NCOLS; i++) {
        cols[i].p = p;
        cols[i].end = p + lens[i];
        p += lens[i];
    }
    return 0;
}

/* The type column: exactly one known type per stored event. */
static int check_types(const colrd *c, uint32_t n)
{
    if ((size_t)(c->end - c->p) < n)
        return NSC_BLOCK_ETRUNC;
    if ((size_t)(c->end - c->p) > n)
        return NSC_BLOCK_ETRAILING;
    for (uint32_t i = 0; i < n; i++)
        if (c->p[i] >= NSC_T_COUNT)
            return NSC_BLOCK_ETYPE;
    return 0;
}

static int is_time(const field *f)
{
    return f->off == offsetof(nsc_event, start_ns) || f->off == offsetof(nsc_event, stop_ns);
}

static int decode_events(colrd *cols, const ev_cols *d, unsigned parts)
{
    int rc = 0;
    /* The common columns and the type write every byte before the payload
     * union; only the union needs zeroing (a type fills part of it), or the
     * whole event when only the times of the common fields are decoded. */
    int times_only = parts & NSC_BLOCK_TIMES_ONLY;
    for (uint32_t i = 0, k = 0; i < d->n; i++)
        if (d->want >> d->types[i] & 1) {
            if (times_only)
                memset(&d->out[k], 0, sizeof *d->out);
            else
                memset(&d->out[k].d, 0, sizeof d->out->d);
            d->out[k++].type = d->types[i];
        }
    for (unsigned i = 0; !rc && i < NCOMMON; i++)
        if (!times_only || is_time(&common_fields[i]))
            rc = decode_common_column(d, &cols[C_COMMON + i], &common_fields[i]);
    return rc ? rc : decode_payload(d, &cols[C_PAYLOAD]);
}

static int decode_states(colrd *cols, nsc_block *b)
{
    int rc = 0;
    for (unsigned i = 0; !rc && i < NSTATE; i++)
        rc = decode_plain_column(&cols[C_STATE + i], b->states, sizeof *b->states,
                                 b->hdr.nstates, &state_fields[i]);
    for (uint32_t i = 0; !rc && i < b->hdr.nstates; i++)
        if (b->states[i].state >= NSC_S_COUNT)
            rc = NSC_BLOCK_ETYPE;
    return rc;
}

static int decode_completions(colrd *cols, nsc_block *b)
{
    int rc = 0;
    for (unsigned i = 0; !rc && i < NCOMPL; i++)
        rc = decode_plain_column(&cols[C_COMPL + i], b->completions, sizeof *b->completions,
                                 b->hdr.ncompletions, &compl_fields[i]);
    return rc;
}

static int decode(nsc_block_dec *dec, const uint8_t *buf, size_t len, uint32_t types,
                  unsigned parts, nsc_block *b)
{
    const uint8_t *raw;
    size_t raw_len;
    colrd cols[NCOLS];
    int rc = nsc_block_read_hdr(buf, len, &b->hdr);
    if (rc || (rc = payload(dec, buf, len, &b->hdr, &raw, &raw_len)) ||
        (rc = split_columns(raw, raw_len, cols)) ||
        (rc = check_types(&cols[C_TYPE], b->hdr.nevents)))
        return rc;
    ev_cols d = {cols[C_TYPE].p, b->hdr.nevents, types & NSC_MASK_ALL, NULL};
    b->hdr.nevents = 0;
    for (uint32_t i = 0; i < d.n; i++)
        b->hdr.nevents += d.want >> d.types[i] & 1;
    if (!(parts & NSC_BLOCK_STATES))
        b->hdr.nstates = 0;
    if (!(parts & NSC_BLOCK_COMPLETIONS))
        b->hdr.ncompletions = 0;
    size_t ev_bytes = b->hdr.nevents * sizeof *b->events;
    size_t st_bytes = b->hdr.nstates * sizeof *b->states;
    size_t co_bytes = b->hdr.ncompletions * sizeof *b->completions;
    if (!(b->mem = malloc(ev_bytes + st_bytes + co_bytes + 1)))
        return NSC_BLOCK_ENOMEM;
    memset((uint8_t *)b->mem + ev_bytes, 0, st_bytes); /* state records have padding */
    b->events = d.out = b->mem;
    b->states = (nsc_state_rec *)((uint8_t *)b->mem + ev_bytes);
    b->completions = (nsc_completion *)((uint8_t *)b->mem + ev_bytes + st_bytes);
    if (b->hdr.nevents && (rc = decode_events(cols, &d, parts)))
        return rc;
    if ((parts & NSC_BLOCK_STATES) && (rc = decode_states(cols, b)))
        return rc;
    return parts & NSC_BLOCK_COMPLETIONS ? decode_completions(cols, b) : 0;
}

int nsc_block_decode_with(nsc_block_dec *dec, const void *buf, size_t len, uint32_t types,
                          unsigned parts, nsc_block *out)
{
    memset(out, 0, sizeof *out);
    int rc = decode(dec, buf, len, types, parts, out);
    if (rc)
        nsc_block_release(out);
    return rc;
}

int nsc_block_decode_sel(const void *buf, size_t len, uint32_t types, unsigned parts,
                         nsc_block *out)
{
    nsc_block_dec once = {0};
    int rc = nsc_block_decode_with(&once, buf, len, types, parts, out);
    free(once.raw);
    return rc;
}

int nsc_block_decode(const void *buf, size_t len, nsc_block *out)
{
    return nsc_block_decode_sel(buf, len, NSC_MASK_ALL, NSC_BLOCK_STATES | NSC_BLOCK_COMPLETIONS,
                                out);
}

void nsc_block_release(nsc_block *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}
