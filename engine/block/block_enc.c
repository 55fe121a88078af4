/* block_enc.c: encoding a block.
 *
 * Owns the encoder: it buffers the records of one block, sorts them into the
 * canonical stored order when they did not come in it, writes each field as
 * a column of zigzag varint differences and compresses the columns with
 * zstd (block.h; the format is block_int.h).
 */
#include "block_int.h"
#include "grow.h"
#include "order.h"

#include <stdlib.h>
#include <zstd.h>

static void map_strs(nsc_event *ev, nsc_block_str_map map, void *arg)
{
    if (ev->type >= NSC_T_COUNT)
        return;
    const type_fields *t = &payload_fields[ev->type];
    for (unsigned i = 0; i < t->n; i++)
        if (t->f[i].flags & F_STR)
            store(ev, &t->f[i], map(arg, (nsc_str)load(ev, &t->f[i])));
}

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
    return nsc_grow_to(&c->p, c->len + more, &c->cap, 1, 256) ? NSC_BLOCK_ENOMEM : 0;
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
        o = nsc_put_varint(o, nsc_zigzag(v - (f->rel == NO_REL ? prev[t] : load_u64(&ev[i], f->rel))));
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
        o = nsc_put_varint(o, nsc_zigzag(v - prev));
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
    return NSC_ORDER(NSC_CMP(x->id, y->id), NSC_CMP(x->ts, y->ts), NSC_CMP(x->idx, y->idx));
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
        o = nsc_put_varint(o, e->col[i].len);
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
    nsc_blk_write_hdr(e->out.p, codec, (uint32_t)e->raw.len, &e->hdr);
    *out = e->out.p;
    *len = NSC_BLOCK_HDR_LEN + body;
    if (hdr)
        *hdr = e->hdr;
    return 0;
}
