/* ledger.c: the ledger record's byte format (see ledger.h and
 * docs/protocol-ledger.md, "The ledger").
 *
 * A batch is [version, pid, strings, records]. A record is a msgpack array
 * [present, value..., edges] and an edge [present, value...]: bit i of
 * `present` says whether field i of the list (NSC_FIELDS_LEDGER or
 * NSC_FIELDS_LEDGER_EDGE) follows. A field that is absent equals the same
 * field of the previous record (edge) of the batch, or, for a TIME, is 0
 * (unknown). A field that is present is a signed delta from that previous
 * value; a TIME is a signed delta from the batch's previous non-zero time,
 * so a record's times chain and the next record's first time follows its
 * last. Records of one communicator and size repeat everything but their seq
 * and times, which therefore is most of what travels.
 *
 * The decoder walks the message twice with one function: once to validate
 * and count, once (after its single allocation) to fill.
 */
#include "ledger.h"

#include <stdlib.h>
#include <string.h>

#define LEDGER_VERSION 1
#define BATCH_FIELDS 4
#define STR_FIELDS 2
#define UINT_MAX_BYTES 9
#define TEXT_MAX_BYTES 65
#define ARRAY_MAX_BYTES 5

/* How a field's value is coded. */
enum { C_UINT, C_INT, C_STR, C_TIME };
#define C_OF_U8 C_UINT
#define C_OF_U16 C_UINT
#define C_OF_U32 C_UINT
#define C_OF_U64 C_UINT
#define C_OF_I32 C_INT
#define C_OF_STR C_STR
#define C_OF_TIME C_TIME

typedef struct field {
    uint16_t off;
    uint8_t size, code;
} field;

#define FIELD(type, kind, m, ...) {offsetof(type, m), sizeof(NSC_CTYPE_##kind), C_OF_##kind},
static const field rec_fields[] = {NSC_FIELDS_LEDGER(FIELD, nsc_ledger_rec)};
static const field edge_fields[] = {NSC_FIELDS_LEDGER_EDGE(FIELD, nsc_ledger_edge)};
#undef FIELD
#define NREC_FIELDS (sizeof rec_fields / sizeof rec_fields[0])
#define NEDGE_FIELDS (sizeof edge_fields / sizeof edge_fields[0])
_Static_assert(NREC_FIELDS <= 32 && NEDGE_FIELDS <= 32, "a field's presence is a bit of a uint32");

int nsc_ledger_wait_of(unsigned state)
{
    switch (state) {
    case NSC_S_PROXY_STEP_SEND_GPU_WAIT:
    case NSC_S_PROXY_STEP_RECV_GPU_WAIT: return NSC_LEDGER_WAIT_GPU;
    case NSC_S_PROXY_STEP_SEND_PEER_WAIT: return NSC_LEDGER_WAIT_PEER;
    case NSC_S_PROXY_STEP_SEND_WAIT: return NSC_LEDGER_WAIT_SEND;
    case NSC_S_PROXY_STEP_RECV_WAIT: return NSC_LEDGER_WAIT_RECV;
    case NSC_S_PROXY_STEP_RECV_FLUSH_WAIT: return NSC_LEDGER_WAIT_FLUSH;
    default: return -1;
    }
}

/* A field's value, signed ones sign-extended. */
static uint64_t load(const void *obj, const field *f)
{
    const uint8_t *p = (const uint8_t *)obj + f->off;
    switch (f->size) {
    case 1: return *p;
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return f->code == C_INT ? (uint64_t)(int64_t)(int32_t)v : v;
    }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
    }
}

/* Store v, or BAD_VALUE when the field's type cannot hold it. */
static int store(void *obj, const field *f, uint64_t v)
{
    uint8_t *p = (uint8_t *)obj + f->off;
    if (f->code == C_INT) {
        if ((int64_t)v < INT32_MIN || (int64_t)v > INT32_MAX)
            return NSC_WIRE_BAD_VALUE;
        int32_t s = (int32_t)(int64_t)v;
        memcpy(p, &s, 4);
        return NSC_WIRE_OK;
    }
    if (f->size < 8 && v >> (8 * f->size))
        return NSC_WIRE_BAD_VALUE;
    switch (f->size) {
    case 1: *p = (uint8_t)v; break;
    case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
    case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
    return NSC_WIRE_OK;
}

/* ---- encoder ------------------------------------------------------------- */

static unsigned popcount(uint32_t v) { return (unsigned)__builtin_popcount(v); }

/* Which fields of cur differ from prev (TIME: which are known). */
static uint32_t present(const field *tab, unsigned n, const void *cur, const void *prev)
{
    uint32_t bits = 0;
    for (unsigned i = 0; i < n; i++) {
        uint64_t v = load(cur, &tab[i]);
        if (tab[i].code == C_TIME ? v != 0 : v != load(prev, &tab[i]))
            bits |= 1u << i;
    }
    return bits;
}

/* [present, value...] without the closing array's header: the caller writes
 * it (a record's has one more element, its edges). */
static uint8_t *put_fields(uint8_t *p, const field *tab, unsigned n, uint32_t bits, const void *cur,
                           const void *prev, uint64_t *tcur)
{
    p = nsc_mp_put_uint(p, bits);
    for (unsigned i = 0; i < n; i++) {
        if (!(bits & 1u << i))
            continue;
        uint64_t v = load(cur, &tab[i]);
        uint64_t base = tab[i].code == C_TIME ? *tcur : load(prev, &tab[i]);
        if (tab[i].code == C_TIME)
            *tcur = v;
        p = nsc_mp_put_int(p, (int64_t)(v - base));
    }
    return p;
}

size_t nsc_ledger_bound(const nsc_ledger_batch *b)
{
    size_t n = 1 + 2 * UINT_MAX_BYTES + 2 * ARRAY_MAX_BYTES +
               (size_t)b->nstrs * (1 + UINT_MAX_BYTES + TEXT_MAX_BYTES);
    for (uint32_t i = 0; i < b->nrecs; i++)
        n += 2 * ARRAY_MAX_BYTES + (1 + NREC_FIELDS) * UINT_MAX_BYTES +
             (size_t)b->recs[i].nedges * (ARRAY_MAX_BYTES + (1 + NEDGE_FIELDS) * UINT_MAX_BYTES);
    return n;
}

size_t nsc_ledger_encode(const nsc_ledger_batch *b, uint8_t *out)
{
    static const nsc_ledger_rec rec0;
    static const nsc_ledger_edge edge0;
    const nsc_ledger_rec *prev = &rec0;
    const nsc_ledger_edge *eprev = &edge0;
    uint64_t tcur = 0;
    uint8_t *p = nsc_mp_put_array(out, BATCH_FIELDS);
    p = nsc_mp_put_uint(p, LEDGER_VERSION);
    p = nsc_mp_put_uint(p, b->pid);
    p = nsc_mp_put_array(p, b->nstrs);
    for (uint32_t i = 0; i < b->nstrs; i++) {
        p = nsc_mp_put_array(p, STR_FIELDS);
        p = nsc_mp_put_uint(p, b->strs[i].id);
        p = nsc_mp_put_text(p, b->strs[i].text);
    }
    p = nsc_mp_put_array(p, b->nrecs);
    for (uint32_t i = 0; i < b->nrecs; i++) {
        const nsc_ledger_rec *r = &b->recs[i];
        uint32_t bits = present(rec_fields, NREC_FIELDS, r, prev);
        p = nsc_mp_put_array(p, 2 + popcount(bits));
        p = put_fields(p, rec_fields, NREC_FIELDS, bits, r, prev, &tcur);
        p = nsc_mp_put_array(p, r->nedges);
        for (uint32_t j = 0; j < r->nedges; j++) {
            const nsc_ledger_edge *e = &r->edges[j];
            bits = present(edge_fields, NEDGE_FIELDS, e, eprev);
            p = nsc_mp_put_array(p, 1 + popcount(bits));
            p = put_fields(p, edge_fields, NEDGE_FIELDS, bits, e, eprev, &tcur);
            eprev = e;
        }
        prev = r;
    }
    return (size_t)(p - out);
}

/* ---- decoder ------------------------------------------------------------- */

#define TRY(x) do { int rc_ = (x); if (rc_ != NSC_WIRE_OK) return rc_; } while (0)

/* What the decoder carries from record to record; the string ids a batch
 * defines, so that none is defined twice. */
typedef struct walk {
    nsc_ledger_rec prev;
    nsc_ledger_edge eprev;
    uint64_t tcur;
    uint32_t nstrs, nrecs, nedges;
    uint64_t defined[(UINT16_MAX + 1) / 64];
} walk;

/* Where the fill pass writes; all NULL in the counting pass. */
typedef struct fill {
    nsc_str_def *strs;
    nsc_ledger_rec *recs;
    nsc_ledger_edge *edges;
} fill;

static int rd_str_def(nsc_mp_cursor *c, walk *w, nsc_str_def *s)
{
    uint32_t n;
    uint64_t id;
    TRY(nsc_mp_rd_array(c, &n));
    if (n != STR_FIELDS)
        return NSC_WIRE_BAD_RECORD;
    TRY(nsc_mp_rd_uint(c, UINT16_MAX, &id));
    uint64_t bit = 1ull << (id % 64);
    if (id == 0 || (w->defined[id / 64] & bit))
        return NSC_WIRE_BAD_VALUE;
    w->defined[id / 64] |= bit;
    s->id = (nsc_str)id;
    return nsc_mp_rd_text(c, s->text);
}

/* The fields of an array of `n` elements whose first is `present` and
 * `extra` more follow the fields; *cur starts as a copy of prev. */
static int rd_fields(nsc_mp_cursor *c, const field *tab, unsigned nf, uint32_t n,
                     unsigned extra, void *cur, uint64_t *tcur)
{
    uint64_t bits;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &bits));
    if (bits >> nf || n != 1 + extra + popcount((uint32_t)bits))
        return NSC_WIRE_BAD_RECORD;
    for (unsigned i = 0; i < nf; i++) {
        uint64_t v = 0;
        if (bits & 1u << i) {
            int64_t d;
            TRY(nsc_mp_rd_sint(c, INT64_MIN, INT64_MAX, &d));
            v = (tab[i].code == C_TIME ? *tcur : load(cur, &tab[i])) + (uint64_t)d;
            if (tab[i].code == C_TIME && v == 0)
                return NSC_WIRE_BAD_VALUE;  /* a known time is never 0 */
        } else if (tab[i].code != C_TIME) {
            continue;
        }
        if (tab[i].code == C_TIME && v)
            *tcur = v;
        TRY(store(cur, &tab[i], v));
    }
    return NSC_WIRE_OK;
}

static int rd_edge(nsc_mp_cursor *c, walk *w, const fill *f)
{
    uint32_t n;
    TRY(nsc_mp_rd_array(c, &n));
    TRY(rd_fields(c, edge_fields, NEDGE_FIELDS, n, 0, &w->eprev, &w->tcur));
    if (f->edges)
        f->edges[w->nedges] = w->eprev;
    w->nedges++;
    return NSC_WIRE_OK;
}

static int rd_rec(nsc_mp_cursor *c, walk *w, const fill *f)
{
    uint32_t n, nedges;
    nsc_ledger_rec *r = &w->prev;
    TRY(nsc_mp_rd_array(c, &n));
    TRY(rd_fields(c, rec_fields, NREC_FIELDS, n, 1, r, &w->tcur));
    TRY(nsc_mp_rd_array(c, &nedges));
    r->nedges = nedges;
    r->edges = f->edges ? f->edges + w->nedges : NULL;
    for (uint32_t i = 0; i < nedges; i++)
        TRY(rd_edge(c, w, f));
    if (f->recs)
        f->recs[w->nrecs] = *r;
    w->nrecs++;
    return NSC_WIRE_OK;
}

static int rd_batch(nsc_mp_cursor *c, walk *w, const fill *f, uint32_t *pid)
{
    uint32_t n;
    uint64_t v;
    memset(w, 0, sizeof *w);
    TRY(nsc_mp_rd_array(c, &n));
    if (n != BATCH_FIELDS)
        return NSC_WIRE_BAD_RECORD;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &v));
    if (v != LEDGER_VERSION)
        return NSC_WIRE_BAD_VERSION;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &v));
    *pid = (uint32_t)v;
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++, w->nstrs++) {
        nsc_str_def scratch;
        TRY(rd_str_def(c, w, f->strs ? &f->strs[i] : &scratch));
    }
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++)
        TRY(rd_rec(c, w, f));
    return c->p == c->end ? NSC_WIRE_OK : NSC_WIRE_TRAILING;
}

static void cursor_init(nsc_mp_cursor *c, const void *buf, size_t len, const nsc_dec_limits *lim)
{
    c->p = buf;
    c->end = c->p + len;
    c->max_len = lim && lim->max_msg ? lim->max_msg : NSC_WIRE_MAX_MSG;
    c->max_elems = lim && lim->max_records ? lim->max_records : 1u << 20;
}

int nsc_ledger_decode(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_ledger_batch *out)
{
    nsc_mp_cursor c;
    fill f = {0};
    uint32_t pid;
    memset(out, 0, sizeof *out);
    if (len == 0)
        return NSC_WIRE_EMPTY;
    if (len > (lim && lim->max_msg ? lim->max_msg : NSC_WIRE_MAX_MSG))
        return NSC_WIRE_TOO_LARGE;
    walk w;
    cursor_init(&c, buf, len, lim);
    int rc = rd_batch(&c, &w, &f, &pid);
    uint32_t nstrs = w.nstrs, nrecs = w.nrecs, nedges = w.nedges;
    uint8_t *mem = NULL;
    if (rc == NSC_WIRE_OK) {
        size_t sz = nstrs * sizeof *f.strs + nrecs * sizeof *f.recs + nedges * sizeof *f.edges;
        mem = calloc(1, sz ? sz : 1);
        rc = mem ? NSC_WIRE_OK : NSC_WIRE_NOMEM;
    }
    if (rc == NSC_WIRE_OK) {
        f.recs = (nsc_ledger_rec *)mem;
        f.edges = (nsc_ledger_edge *)(f.recs + nrecs);
        f.strs = (nsc_str_def *)(f.edges + nedges);
        cursor_init(&c, buf, len, lim);
        if (rd_batch(&c, &w, &f, &pid) != NSC_WIRE_OK)
            rc = NSC_WIRE_BAD_RECORD;  /* unreachable unless buf changed under us */
    }
    if (rc != NSC_WIRE_OK) {
        free(mem);
        return rc;
    }
    *out = (nsc_ledger_batch){.pid = pid, .nstrs = nstrs, .nrecs = nrecs, .strs = f.strs,
                              .recs = f.recs, .mem = mem};
    return NSC_WIRE_OK;
}

void nsc_ledger_release(nsc_ledger_batch *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}
