/* ledger_pack.c: the ledger database's values (format in ledger_pack.h).
 *
 * A value: u8 version, varint record count, then per record the bitmap of
 * its fields whose difference is not 0 (bit i: field i of NSC_FIELDS_LEDGER;
 * bit NF: the edge count differs from the record before's) as a varint of
 * its XOR with the record before's (a run of alike records: one byte), those
 * differences as zigzag varints, the edge count where bit NF says so, and per
 * edge a bitmap (bit i of byte i / 8; bit NFE: told against the edge before
 * it) and the differences of NSC_FIELDS_LEDGER_EDGE against the edge at the
 * same index of the record before (a zeroed one when it had fewer), or
 * against the record's edge before it on the next channel, whichever is
 * shorter: a collective's channels move alike, while from one collective to
 * the next the step and wait times jump. Values are told in `order`
 * (below): each time from the one before it in the record, the first one
 * interval (the record before's own) after the record before's, the seq one
 * after the record before's. Version 2 (store schema 4) added the edge
 * count and the seq's predictions (a byte each per record of a steady
 * collective) and the edges told against the edge before.
 */
#include "ledger_pack.h"

#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "grow.h"
#include "store_err.h"

#define VERSION 2

/* Field positions, and per position whether it is a time. */
#define LP_POS(a, kind, m, ...) LP_##a##_##m,
enum { NSC_FIELDS_LEDGER(LP_POS, R) NF };
enum { NSC_FIELDS_LEDGER_EDGE(LP_POS, E) NFE };
#undef LP_POS
#define NBITS(n) (((n) + 7) / 8)
/* An edge's bitmap: its fields' bits and AFTER_BIT. */
#define AFTER_BIT NFE
#define EDGE_BITS NBITS(NFE + 1)
/* The bitmap's bit past the fields: the record's edge count is told. */
#define EDGES_BIT NF
_Static_assert(NF < 32, "a record's bitmap, with EDGES_BIT, is a uint32");

typedef nsc_lpack_chain chain;
_Static_assert(NF <= NSC_LPACK_FIELDS, "a chain holds every field");

#define LP_IS_TIME_U8 0
#define LP_IS_TIME_U16 0
#define LP_IS_TIME_U32 0
#define LP_IS_TIME_U64 0
#define LP_IS_TIME_I32 0
#define LP_IS_TIME_STR 0
#define LP_IS_TIME_TIME 1
#define LP_NTIME(a, kind, m, ...) +LP_IS_TIME_##kind
enum { NTIMES = 0 NSC_FIELDS_LEDGER(LP_NTIME, _) };
#undef LP_NTIME

/* The order fields are told in: the others as listed, then the times in a
 * collective's life (API call, enqueue, launch, kernel start, kernel end,
 * completion), each told from the one before it, so a record pays for the
 * jitter of each step rather than of its distance to the API call. */
#define LP_NONTIME_U8(m) LP_R_##m,
#define LP_NONTIME_U16(m) LP_R_##m,
#define LP_NONTIME_U32(m) LP_R_##m,
#define LP_NONTIME_U64(m) LP_R_##m,
#define LP_NONTIME_I32(m) LP_R_##m,
#define LP_NONTIME_STR(m) LP_R_##m,
#define LP_NONTIME_TIME(m)
#define LP_NONTIME(a, kind, m, ...) LP_NONTIME_##kind(m)
static const uint8_t order[] = {NSC_FIELDS_LEDGER(LP_NONTIME, _) LP_R_api_ns, LP_R_enqueue_ns, LP_R_launch_ns,
                                LP_R_gpu_start_ns, LP_R_gpu_end_ns, LP_R_done_ns};
#undef LP_NONTIME
_Static_assert(sizeof order == NF && NTIMES == 6, "every field told once, the times in their order");

/* Signed kinds widen with their sign, so a small negative difference stays small. */
#define LP_WIDE_I32(x) (uint64_t)(int64_t)(x)
#define LP_WIDE_U8(x) (uint64_t)(x)
#define LP_WIDE_U16(x) (uint64_t)(x)
#define LP_WIDE_U32(x) (uint64_t)(x)
#define LP_WIDE_U64(x) (uint64_t)(x)
#define LP_WIDE_STR(x) (uint64_t)(x)
#define LP_WIDE_TIME(x) (uint64_t)(x)
#define LP_GET(a, kind, m, ...) v[i++] = LP_WIDE_##kind((a)->m);
#define LP_SET(a, kind, m, ...) (a)->m = (NSC_CTYPE_##kind)v[i++];
/* name_values: a record's (an edge's) fields as uint64s, in list order;
 * name_assign: back. */
#define LP_CONVERT(name, type, LIST, n)                                                           \
    static void name##_values(const type *x, uint64_t v[n])                                       \
    {                                                                                             \
        int i = 0;                                                                                \
        LIST(LP_GET, x)                                                                           \
    }                                                                                             \
    static void name##_assign(type *x, const uint64_t v[n])                                       \
    {                                                                                             \
        int i = 0;                                                                                \
        LIST(LP_SET, x)                                                                           \
    }
LP_CONVERT(rec, nsc_ledger_rec, NSC_FIELDS_LEDGER, NF)
LP_CONVERT(edge, nsc_ledger_edge, NSC_FIELDS_LEDGER_EDGE, NFE)

/* What the field at place k of `order` is predicted to be from the chain:
 * a time at its distance to the latest earlier time of the record known in
 * both (the first, or one with none known: one interval on, the record
 * before's own; an unknown time stays unknown), the seq the next one,
 * anything else as before. */
static uint64_t predict(const chain *ch, const uint64_t cur[NF], size_t k)
{
    int i = order[k];
    if (i == LP_R_seq)
        return ch->prev[i] + 1;
    if (k < NF - NTIMES || ch->prev[i] == 0)
        return ch->prev[i];
    for (size_t j = k; j-- > NF - NTIMES;)
        if (cur[order[j]] && ch->prev[order[j]])
            return ch->prev[i] + (cur[order[j]] - ch->prev[order[j]]);
    return ch->prev[i] + ch->interval;
}

static void chain_next(chain *ch, const uint64_t cur[NF], uint32_t bits, uint32_t nedges)
{
    ch->interval = ch->prev[LP_R_api_ns] && cur[LP_R_api_ns] ? cur[LP_R_api_ns] - ch->prev[LP_R_api_ns] : 0;
    memcpy(ch->prev, cur, NF * sizeof *cur);
    ch->bits = bits;
    ch->nedges = nedges;
}

/* The chain the first record of a value is told against: its seq predicted
 * the key's first (for seq 0 the seq before wraps, and so does the sum). */
static void chain_start(const nsc_ledger_key *k, chain *ch)
{
    nsc_ledger_rec r;
    memset(&r, 0, sizeof r);
    r.comm_id = k->comm;
    r.rank = k->rank;
    r.seq = k->first - 1;
    r.root = r.peer = -1;
    rec_values(&r, ch->prev);
    ch->interval = 0;
    ch->bits = 0;
    ch->nedges = 0;
}

int nsc_lpack_cmp(const nsc_ledger_rec *a, const nsc_ledger_rec *b)
{
    if (a->seq != b->seq)
        return a->seq < b->seq ? -1 : 1;
    if (a->func != b->func)
        return a->func < b->func ? -1 : 1;
    return a->peer < b->peer ? -1 : a->peer > b->peer;
}

#define EDGE_MAX (EDGE_BITS + 10 * NFE)

size_t nsc_lpack_bound(const nsc_ledger_rec *const *recs, size_t n)
{
    size_t len = 1 + 10;
    for (size_t i = 0; i < n; i++)
        len += 5 + 10 * NF + 10 + recs[i]->nedges * EDGE_MAX;
    return len;
}

/* What an edge is told against: the record before's edge at its index
 * (`same`, NULL: a zeroed one), or (after) the edge before it in its record
 * with the next channel. */
static void edge_base(const nsc_ledger_edge *same, const nsc_ledger_edge *before, int after, uint64_t base[NFE])
{
    memset(base, 0, NFE * sizeof *base);
    if (after) {
        edge_values(before, base);
        base[LP_E_channel] = (uint8_t)(before->channel + 1);
    } else if (same) {
        edge_values(same, base);
    }
}

/* The edge cur told against base: bitmap (with AFTER_BIT as after says)
 * of the nonzero deltas, then the deltas. */
static uint8_t *put_edge(uint8_t *o, const uint64_t cur[NFE], const uint64_t base[NFE], int after)
{
    uint8_t *bits = o;
    memset(bits, 0, EDGE_BITS);
    bits[AFTER_BIT / 8] |= (uint8_t)(after << (AFTER_BIT % 8));
    o += EDGE_BITS;
    for (int i = 0; i < NFE; i++)
        if (cur[i] != base[i]) {
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
            o = nsc_put_varint(o, nsc_zigzag(cur[i] - base[i]));
        }
    return o;
}

static uint8_t *put_edges(uint8_t *o, const nsc_ledger_rec *r, const nsc_ledger_rec *prev)
{
    for (uint32_t j = 0; j < r->nedges; j++) {
        const nsc_ledger_edge *same = prev && j < prev->nedges ? &prev->edges[j] : NULL;
        uint64_t cur[NFE], base[NFE];
        uint8_t alt[EDGE_MAX], *end;
        edge_values(&r->edges[j], cur);
        edge_base(same, NULL, 0, base);
        end = put_edge(o, cur, base, 0);
        if (j) {
            edge_base(same, &r->edges[j - 1], 1, base);
            size_t n = (size_t)(put_edge(alt, cur, base, 1) - alt);
            if (n < (size_t)(end - o))
                end = (uint8_t *)memcpy(o, alt, n) + n;
        }
        o = end;
    }
    return o;
}

/* Record r told against the chain (r's seq predicted), then the chain on it. */
static uint8_t *put_rec(uint8_t *o, chain *ch, const nsc_ledger_rec *r, const nsc_ledger_rec *prev)
{
    uint64_t cur[NF], d[NF];
    uint32_t bits = (uint32_t)(r->nedges != ch->nedges) << EDGES_BIT;
    rec_values(r, cur);
    for (size_t k = 0; k < NF; k++) {
        int i = order[k];
        d[i] = nsc_zigzag(cur[i] - predict(ch, cur, k));
        bits |= (uint32_t)(d[i] != 0) << i;
    }
    o = nsc_put_varint(o, bits ^ ch->bits);
    for (size_t k = 0; k < NF; k++)
        if (d[order[k]])
            o = nsc_put_varint(o, d[order[k]]);
    if (bits >> EDGES_BIT & 1)
        o = nsc_put_varint(o, r->nedges);
    o = put_edges(o, r, prev);
    chain_next(ch, cur, bits, r->nedges);
    return o;
}

/* A value's header: its version and record count. */
static size_t put_header(uint8_t *o, size_t n)
{
    *o = VERSION;
    return (size_t)(nsc_put_varint(o + 1, n) - o);
}

/* Records told on from where a value ends (body0 bytes of body after its
 * header) into body: what fits with the header in max bytes, whole seqs,
 * and the value's first seq whatever its size; the bytes written, their
 * count into *taken and where the value then ends into *after. */
static size_t fit(const nsc_lpack_end *from, const nsc_ledger_rec *const *recs, size_t n, size_t body0, size_t max,
                  uint8_t *body, size_t *taken, nsc_lpack_end *after)
{
    uint8_t hdr[11], *o = body;
    size_t cut_n = 0, cut_len = 0;
    chain ch = from->chain;
    int have = 0;
    *after = *from;
    for (size_t j = 0; j <= n; j++) {
        const nsc_ledger_rec *before = j ? recs[j - 1] : from->last;
        if (j == n || !before || recs[j]->seq != before->seq) {  /* a seq's records stay together */
            if (have && from->n + cut_n && put_header(hdr, from->n + j) + body0 + (size_t)(o - body) > max)
                break;
            have = 1;
            cut_n = j;
            cut_len = (size_t)(o - body);
            after->chain = ch;
        }
        if (j < n)
            o = put_rec(o, &ch, recs[j], before);
    }
    after->n = from->n + cut_n;
    after->last = cut_n ? recs[cut_n - 1] : from->last;
    *taken = cut_n;
    return cut_len;
}

/* The value in out: its header for n records before its body (body0 bytes
 * at out + 11, where fit wrote it); its length. */
static size_t close_value(uint8_t *out, size_t n, size_t body0)
{
    uint8_t hdr[11];
    size_t h = put_header(hdr, n);
    memmove(out + h, out + sizeof hdr, body0);
    memcpy(out, hdr, h);
    return h + body0;
}

size_t nsc_lpack_encode_fit(const nsc_ledger_key *k, const nsc_ledger_rec *const *recs, size_t n, size_t max,
                            uint8_t *out, size_t *taken, nsc_lpack_end *after)
{
    nsc_lpack_end start = {0, NULL, {{0}, 0, 0, 0}};
    chain_start(k, &start.chain);
    size_t len = fit(&start, recs, n, 0, max, out + 11, taken, after);
    return close_value(out, after->n, len);
}

size_t nsc_lpack_append_fit(const void *val, size_t len, const nsc_lpack_end *stored,
                            const nsc_ledger_rec *const *recs, size_t n, size_t max, uint8_t *out, size_t *taken,
                            nsc_lpack_end *after)
{
    nsc_rbuf r = {val, (const uint8_t *)val + len, 0};
    nsc_rtake(&r, 1);
    nsc_rvarint(&r);
    size_t body0 = (size_t)(r.end - r.p);
    memcpy(out + 11, r.p, body0);
    size_t more = fit(stored, recs, n, body0, max, out + 11 + body0, taken, after);
    return close_value(out, after->n, body0 + more);
}

size_t nsc_lpack_encode(const nsc_ledger_key *k, const nsc_ledger_rec *const *recs, size_t n,
                        uint8_t *out)
{
    size_t taken;
    nsc_lpack_end after;
    return nsc_lpack_encode_fit(k, recs, n, SIZE_MAX, out, &taken, &after);
}

/* ---- decoding ------------------------------------------------------------ */

/* Read an edge's bitmap into *after and its deltas into d (zero where the
 * bit is clear). */
static void take_deltas(nsc_rbuf *r, uint64_t d[NFE], int *after)
{
    const uint8_t *bits = nsc_rtake(r, EDGE_BITS);
    for (int i = 0; i < NFE; i++)
        d[i] = bits && (bits[i / 8] >> (i % 8) & 1) ? nsc_unzigzag(nsc_rvarint(r)) : 0;
    *after = bits && bits[AFTER_BIT / 8] >> (AFTER_BIT % 8) & 1;
    /* bits past AFTER_BIT would be read by no one: a damaged value */
    if (bits && (AFTER_BIT + 1) % 8 && bits[(AFTER_BIT + 1) / 8] >> ((AFTER_BIT + 1) % 8))
        r->bad = 1;
}

static int room(nsc_lpack *l, size_t recs, size_t edges)
{
    if (nsc_grow_to(&l->recs, l->n + recs, &l->cap, sizeof *l->recs, 64) ||
        nsc_grow_to(&l->edges, l->nedges + edges, &l->edges_cap, sizeof *l->edges, 64))
        return NSC_STORE_ENOMEM;
    return 0;
}

/* The n edges of record r (at the end of l's edges), told against prev's. */
static int take_edges(nsc_rbuf *r, nsc_lpack *l, nsc_ledger_rec *rec, uint64_t n,
                      const nsc_ledger_rec *prev, size_t prev_first)
{
    /* each edge takes its bitmap at least: a count the value cannot hold is damage */
    if (r->bad || n > NSC_LPACK_MAX_EDGES || n * EDGE_BITS > (size_t)(r->end - r->p))
        return NSC_STORE_ECORRUPT;
    if (room(l, 0, n))
        return NSC_STORE_ENOMEM;
    rec->nedges = (uint32_t)n;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t base[NFE], d[NFE];
        int after;
        take_deltas(r, d, &after);
        if (after && !j)  /* no edge before the first */
            return NSC_STORE_ECORRUPT;
        edge_base(prev && j < prev->nedges ? &l->edges[prev_first + j] : NULL,
                  j ? &l->edges[l->nedges - 1] : NULL, after, base);
        for (int i = 0; i < NFE; i++)
            base[i] += d[i];
        nsc_ledger_edge *e = &l->edges[l->nedges++];
        memset(e, 0, sizeof *e);  /* padding too: decoded records compare whole */
        edge_assign(e, base);
    }
    return r->bad ? NSC_STORE_ECORRUPT : 0;
}

static int take_rec(nsc_rbuf *r, const nsc_ledger_key *k, nsc_lpack *l, chain *ch, int first)
{
    uint64_t cur[NF], x = nsc_rvarint(r);
    uint32_t bits = (uint32_t)x ^ ch->bits;
    if (x >> (EDGES_BIT + 1))  /* bits past the last field would be read by no one: a damaged value */
        return NSC_STORE_ECORRUPT;
    for (size_t k = 0; k < NF; k++)  /* in `order`: a time after those it is told from */
        cur[order[k]] = predict(ch, cur, k) + (bits >> order[k] & 1 ? nsc_unzigzag(nsc_rvarint(r)) : 0);
    nsc_ledger_rec *rec = &l->recs[l->n];
    memset(rec, 0, sizeof *rec);
    rec_assign(rec, cur);
    uint64_t nedges = bits >> EDGES_BIT & 1 ? nsc_rvarint(r) : ch->nedges;
    const nsc_ledger_rec *before = first ? NULL : &l->recs[l->n - 1];
    size_t before_first = before ? l->nedges - before->nedges : 0;
    if (r->bad || rec->comm_id != k->comm || rec->rank != k->rank || rec->seq < k->first ||
        (before && nsc_lpack_cmp(before, rec) >= 0))
        return NSC_STORE_ECORRUPT;
    int rc = take_edges(r, l, rec, nedges, before, before_first);
    if (rc)
        return rc;
    l->n++;
    chain_next(ch, cur, bits, rec->nedges);
    return 0;
}

/* Edges were appended in record order: point each record at its own. */
static void link_edges(nsc_lpack *l)
{
    size_t at = 0;
    for (size_t i = 0; i < l->n; i++) {
        l->recs[i].edges = l->recs[i].nedges ? &l->edges[at] : NULL;
        at += l->recs[i].nedges;
    }
}

/* Keep of the records from n0 on (one value's, in seq order) those of seqs
 * lo to hi, and their edges; *beyond lowered to the first seq above hi. */
static void keep_seqs(nsc_lpack *l, size_t n0, size_t e0, uint64_t lo, uint64_t hi, uint64_t *beyond)
{
    size_t a = n0, b, ea = e0, eb;
    for (; a < l->n && l->recs[a].seq < lo; a++)
        ea += l->recs[a].nedges;
    for (b = a, eb = ea; b < l->n && l->recs[b].seq <= hi; b++)
        eb += l->recs[b].nedges;
    if (b < l->n && l->recs[b].seq < *beyond)
        *beyond = l->recs[b].seq;
    if (a > n0)  /* else they stay where they are (recs or edges may be NULL) */
        memmove(l->recs + n0, l->recs + a, (b - a) * sizeof *l->recs);
    if (ea > e0)
        memmove(l->edges + e0, l->edges + ea, (eb - ea) * sizeof *l->edges);
    l->n = n0 + (b - a);
    l->nedges = e0 + (eb - ea);
}

int nsc_lpack_decode_seqs(const nsc_ledger_key *k, const void *val, size_t len, uint64_t lo, uint64_t hi,
                          nsc_lpack *out, uint64_t *beyond)
{
    nsc_rbuf r = {val, (const uint8_t *)val + len, 0};
    const uint8_t *v = nsc_rtake(&r, 1);
    uint64_t n = nsc_rvarint(&r);
    size_t n0 = out->n, e0 = out->nedges;
    chain ch;
    /* a record takes a byte at least: its bitmap */
    if (!v || *v != VERSION || r.bad || n > (size_t)(r.end - r.p))
        return NSC_STORE_ECORRUPT;
    int rc = room(out, n, 0);
    chain_start(k, &ch);
    for (uint64_t i = 0; !rc && i < n; i++)
        rc = take_rec(&r, k, out, &ch, i == 0);
    if (!rc && r.p != r.end)
        rc = NSC_STORE_ECORRUPT;
    if (rc) {
        out->n = n0;
        out->nedges = e0;
    } else {
        out->end = ch;
        keep_seqs(out, n0, e0, lo, hi, beyond);
    }
    link_edges(out);
    return rc;
}

int nsc_lpack_decode(const nsc_ledger_key *k, const void *val, size_t len, nsc_lpack *out)
{
    uint64_t beyond;
    return nsc_lpack_decode_seqs(k, val, len, 0, UINT64_MAX, out, &beyond);
}

nsc_lpack_end nsc_lpack_ending(const nsc_lpack *l)
{
    nsc_lpack_end e = {l->n, l->n ? &l->recs[l->n - 1] : NULL, l->end};
    return e;
}

void nsc_lpack_clear(nsc_lpack *l)
{
    l->n = l->nedges = 0;
}

void nsc_lpack_free(nsc_lpack *l)
{
    free(l->recs);
    free(l->edges);
    memset(l, 0, sizeof *l);
}
