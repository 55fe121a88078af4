/* a2c.c: the agent-to-collector message codec (see a2c.h and docs/protocol.md).
 *
 * Every message is a msgpack array [kind, version, agent, ...]. The batch
 * decoder walks the message twice with the same function: once to validate
 * and count, once (after its single allocation) to fill.
 */
#include "a2c.h"

#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

#define BATCH_FIELDS 12
#define BATCH_V3_FIELDS 11 /* no ledgers */
#define BATCH_V2_FIELDS 10 /* no ledgers, no CRC */
#define BATCH_V1_FIELDS 9  /* no CRC, no epoch */
#define CRC_BYTES 5        /* the CRC: always msgpack uint32, 0xce and 4 bytes big-endian */
#define MP_UINT32 0xce
#define LIFE_FIELDS 8
#define PROGRESS_FIELDS 4
#define ALIAS_FIELDS 4
#define ACK_FIELDS 5
#define REJECT_FIELDS 5
#define PROBE_FIELDS 9
#define UDP_FIELDS 4
#define FETCH_FIELDS 9
#define DETAIL_FIELDS 11
#define PIECE_FIELDS 2
#define UINT_MAX_BYTES 9
#define TEXT_MAX_BYTES 65

/* ---- encoder ------------------------------------------------------------- */

static uint8_t *put_head(uint8_t *p, uint32_t nfields, unsigned kind, unsigned version, const char *agent)
{
    p = nsc_mp_put_array(p, nfields);
    p = nsc_mp_put_uint(p, kind);
    p = nsc_mp_put_uint(p, version);
    return nsc_mp_put_text(p, agent);
}

size_t nsc_a2c_batch_bound(const nsc_a2c_batch *b)
{
    size_t n = 5 * 5 + 2 * TEXT_MAX_BYTES + 5 * UINT_MAX_BYTES + CRC_BYTES;
    for (uint32_t i = 0; i < b->nsections; i++)
        n += 5 + (size_t)b->sections[i].len;
    for (uint32_t i = 0; i < b->nledgers; i++)
        n += 5 + (size_t)b->ledgers[i].len;
    for (uint32_t i = 0; i < b->nlife; i++)
        n += 10 + 4 * UINT_MAX_BYTES + 2 * TEXT_MAX_BYTES +
             (size_t)b->life[i].nprogress * (1 + 3 * UINT_MAX_BYTES + TEXT_MAX_BYTES);
    return n + (size_t)b->naliases * (1 + 4 * UINT_MAX_BYTES);
}

static uint8_t *put_life(uint8_t *p, const nsc_a2c_life *l)
{
    p = nsc_mp_put_array(p, LIFE_FIELDS);
    p = nsc_mp_put_uint(p, l->event);
    p = nsc_mp_put_uint(p, l->reason);
    p = nsc_mp_put_uint(p, l->pid);
    p = nsc_mp_put_uint(p, l->ts_ns);
    p = nsc_mp_put_uint(p, l->last_batch_seq);
    p = nsc_mp_put_text(p, l->job);
    p = nsc_mp_put_text(p, l->host);
    p = nsc_mp_put_array(p, l->nprogress);
    for (uint32_t i = 0; i < l->nprogress; i++) {
        const nsc_a2c_progress *g = &l->progress[i];
        p = nsc_mp_put_array(p, PROGRESS_FIELDS);
        p = nsc_mp_put_uint(p, g->comm_id);
        p = nsc_mp_put_int(p, g->rank);
        p = nsc_mp_put_text(p, g->func);
        p = nsc_mp_put_uint(p, g->seq);
    }
    return p;
}

static uint8_t *put_bins(uint8_t *p, const nsc_a2c_section *s, uint32_t n)
{
    p = nsc_mp_put_array(p, n);
    for (uint32_t i = 0; i < n; i++)
        p = nsc_mp_put_bin(p, s[i].data, s[i].len);
    return p;
}

size_t nsc_a2c_encode_batch(const nsc_a2c_batch *b, uint8_t *out)
{
    uint8_t *p = put_head(out, BATCH_FIELDS, NSC_A2C_BATCH, NSC_A2C_BATCH_VERSION, b->agent);
    p = nsc_mp_put_uint(p, b->epoch);
    p = nsc_mp_put_uint(p, b->seq);
    p = nsc_mp_put_text(p, b->host);
    p = nsc_mp_put_uint(p, b->sent_ns);
    p = put_bins(p, b->sections, b->nsections);
    p = nsc_mp_put_array(p, b->nlife);
    for (uint32_t i = 0; i < b->nlife; i++)
        p = put_life(p, &b->life[i]);
    p = nsc_mp_put_array(p, b->naliases);
    for (uint32_t i = 0; i < b->naliases; i++) {
        const nsc_a2c_alias *a = &b->aliases[i];
        p = nsc_mp_put_array(p, ALIAS_FIELDS);
        p = nsc_mp_put_uint(p, a->proxy_pid);
        p = nsc_mp_put_uint(p, a->proxy_id);
        p = nsc_mp_put_uint(p, a->origin_pid);
        p = nsc_mp_put_uint(p, a->new_id);
    }
    p = put_bins(p, b->ledgers, b->nledgers);
    uint32_t crc = nsc_crc32c(0, out, (size_t)(p - out));
    *p++ = MP_UINT32;
    for (int shift = 24; shift >= 0; shift -= 8)
        *p++ = (uint8_t)(crc >> shift);
    return (size_t)(p - out);
}

size_t nsc_a2c_encode_ack(const nsc_a2c_ack *a, uint8_t out[NSC_A2C_SMALL_MAX])
{
    uint8_t *p = put_head(out, ACK_FIELDS, NSC_A2C_ACK, NSC_A2C_VERSION, a->agent);
    p = nsc_mp_put_uint(p, a->seq);
    p = nsc_mp_put_uint(p, a->credit);
    return (size_t)(p - out);
}

size_t nsc_a2c_encode_reject(const nsc_a2c_reject *r, uint8_t out[NSC_A2C_SMALL_MAX])
{
    uint8_t *p = put_head(out, REJECT_FIELDS, NSC_A2C_REJECT, NSC_A2C_VERSION, r->agent);
    p = nsc_mp_put_uint(p, r->seq);
    p = nsc_mp_put_text(p, r->reason);
    return (size_t)(p - out);
}

size_t nsc_a2c_encode_probe(const nsc_a2c_probe *pr, uint8_t out[NSC_A2C_SMALL_MAX])
{
    uint8_t *p = put_head(out, PROBE_FIELDS, pr->kind, NSC_A2C_VERSION, pr->agent);
    p = nsc_mp_put_text(p, pr->host);
    p = nsc_mp_put_uint(p, pr->id);
    p = nsc_mp_put_uint(p, pr->t1);
    p = nsc_mp_put_uint(p, pr->t2);
    p = nsc_mp_put_uint(p, pr->t3);
    p = nsc_mp_put_uint(p, pr->t4);
    return (size_t)(p - out);
}

size_t nsc_a2c_encode_udp(const nsc_a2c_udp *u, uint8_t out[NSC_A2C_SMALL_MAX])
{
    uint8_t *p = put_head(out, UDP_FIELDS, NSC_A2C_UDP, NSC_A2C_VERSION, u->agent);
    p = nsc_mp_put_uint(p, u->port);
    return (size_t)(p - out);
}

size_t nsc_a2c_encode_fetch(const nsc_a2c_fetch *f, uint8_t out[NSC_A2C_FETCH_MAX])
{
    uint32_t n = f->npids < NSC_A2C_FETCH_PIDS ? f->npids : NSC_A2C_FETCH_PIDS;
    uint8_t *p = put_head(out, FETCH_FIELDS, NSC_A2C_FETCH, NSC_A2C_VERSION, f->agent);
    p = nsc_mp_put_uint(p, f->id);
    p = nsc_mp_put_text(p, f->job);
    p = nsc_mp_put_uint(p, f->from_ns);
    p = nsc_mp_put_uint(p, f->to_ns);
    p = nsc_mp_put_uint(p, f->types);
    p = nsc_mp_put_array(p, n);
    for (uint32_t i = 0; i < n; i++)
        p = nsc_mp_put_uint(p, f->pids[i]);
    return (size_t)(p - out);
}

size_t nsc_a2c_detail_bound(const nsc_a2c_detail *d)
{
    size_t n = 5 * 3 + 2 * TEXT_MAX_BYTES + 6 * UINT_MAX_BYTES;
    for (uint32_t i = 0; i < d->npieces; i++)
        n += 1 + UINT_MAX_BYTES + 5 + (size_t)d->pieces[i].len;
    return n;
}

size_t nsc_a2c_encode_detail(const nsc_a2c_detail *d, uint8_t *out)
{
    uint8_t *p = put_head(out, DETAIL_FIELDS, NSC_A2C_DETAIL, NSC_A2C_VERSION, d->agent);
    p = nsc_mp_put_text(p, d->host);
    p = nsc_mp_put_uint(p, d->epoch);
    p = nsc_mp_put_uint(p, d->id);
    p = nsc_mp_put_uint(p, d->chunk);
    p = nsc_mp_put_uint(p, d->last);
    p = nsc_mp_put_uint(p, d->held_from_ns);
    p = nsc_mp_put_uint(p, d->held_to_ns);
    p = nsc_mp_put_array(p, d->npieces);
    for (uint32_t i = 0; i < d->npieces; i++) {
        p = nsc_mp_put_array(p, PIECE_FIELDS);
        p = nsc_mp_put_uint(p, d->pieces[i].seq);
        p = nsc_mp_put_bin(p, d->pieces[i].data, d->pieces[i].len);
    }
    return (size_t)(p - out);
}

/* ---- decoder ------------------------------------------------------------- */

static void cursor_init(nsc_mp_cursor *c, const void *buf, size_t len, const nsc_dec_limits *lim)
{
    c->p = buf;
    c->end = c->p + len;
    c->max_len = lim && lim->max_msg ? lim->max_msg : NSC_WIRE_MAX_MSG;
    c->max_elems = lim && lim->max_records ? lim->max_records : 1u << 20;
}

static int check_len(size_t len, const nsc_dec_limits *lim)
{
    if (len == 0)
        return NSC_WIRE_EMPTY;
    size_t max = lim && lim->max_msg ? lim->max_msg : NSC_WIRE_MAX_MSG;
    return len > max ? NSC_WIRE_TOO_LARGE : NSC_WIRE_OK;
}

/* An array of exactly n elements. */
static int rd_fixed(nsc_mp_cursor *c, uint32_t n)
{
    uint32_t got;
    int rc = nsc_mp_rd_array(c, &got);
    if (rc == NSC_WIRE_OK && got != n)
        rc = NSC_WIRE_BAD_RECORD;
    return rc;
}

#define TRY(x) do { int rc_ = (x); if (rc_ != NSC_WIRE_OK) return rc_; } while (0)

/* A cursor over a whole message, with the default limits (not a batch's). */
static int open_cursor(nsc_mp_cursor *c, const void *buf, size_t len)
{
    TRY(check_len(len, NULL));
    cursor_init(c, buf, len, NULL);
    return NSC_WIRE_OK;
}

/* [kind, version, agent, ...]: checks the kind, the version (one of
 * versions[0..nversions)) and that version's element count (nfields[i]), reads
 * the agent; *version says which version it is. */
static int rd_head(nsc_mp_cursor *c, unsigned kind, const uint32_t *versions, const uint32_t *nfields,
                   unsigned nversions, uint32_t *version, char agent[64])
{
    uint32_t n;
    uint64_t k, v;
    TRY(nsc_mp_rd_array(c, &n));
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &k));
    if (k != kind)
        return NSC_WIRE_BAD_RECORD;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &v));
    unsigned i = 0;
    while (i < nversions && versions[i] != v)
        i++;
    if (i == nversions)
        return NSC_WIRE_BAD_VERSION;
    if (n != nfields[i])
        return NSC_WIRE_BAD_RECORD;
    *version = (uint32_t)v;
    return nsc_mp_rd_text(c, agent);
}

/* An ack, probe, sample or rejection: a cursor over buf past its head
 * (version 1 only). */
static int open_small(nsc_mp_cursor *c, const void *buf, size_t len, uint32_t nfields, unsigned kind,
                      char agent[64])
{
    static const uint32_t v1 = NSC_A2C_VERSION;
    uint32_t version;
    TRY(open_cursor(c, buf, len));
    return rd_head(c, kind, &v1, &nfields, 1, &version, agent);
}

/* A small message ends with its last field. */
static int at_end(const nsc_mp_cursor *c) { return c->p == c->end ? NSC_WIRE_OK : NSC_WIRE_TRAILING; }

static int rd_u32(nsc_mp_cursor *c, uint32_t *v)
{
    uint64_t x;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &x));
    *v = (uint32_t)x;
    return NSC_WIRE_OK;
}

static int rd_u8(nsc_mp_cursor *c, uint8_t *v)
{
    uint64_t x;
    TRY(nsc_mp_rd_uint(c, UINT8_MAX, &x));
    *v = (uint8_t)x;
    return NSC_WIRE_OK;
}

/* Sizes the fill pass needs; the count pass computes them (and where a
 * version 3 batch's CRC begins). */
typedef struct tally {
    uint32_t nsections, nlife, nprogress, naliases, nledgers;
    const uint8_t *crc_at;
} tally;

/* Arrays to fill, or all NULL for the counting pass. */
typedef struct fill {
    nsc_a2c_section *sections, *ledgers;
    nsc_a2c_life *life;
    nsc_a2c_progress *progress;
    nsc_a2c_alias *aliases;
} fill;

static int rd_progress(nsc_mp_cursor *c, nsc_a2c_progress *g)
{
    int64_t rank;
    TRY(rd_fixed(c, PROGRESS_FIELDS));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &g->comm_id));
    TRY(nsc_mp_rd_sint(c, INT32_MIN, INT32_MAX, &rank));
    g->rank = (int32_t)rank;
    TRY(nsc_mp_rd_text(c, g->func));
    return nsc_mp_rd_uint(c, UINT64_MAX, &g->seq);
}

static int rd_life(nsc_mp_cursor *c, nsc_a2c_life *l, const fill *f, tally *t)
{
    uint32_t n;
    TRY(rd_fixed(c, LIFE_FIELDS));
    TRY(rd_u8(c, &l->event));
    if (l->event < NSC_A2C_STARTED || l->event > NSC_A2C_FINISHED)
        return NSC_WIRE_BAD_VALUE;
    TRY(rd_u8(c, &l->reason));
    if (l->reason > NSC_A2C_REASON_SILENT)
        return NSC_WIRE_BAD_VALUE;
    TRY(rd_u32(c, &l->pid));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &l->ts_ns));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &l->last_batch_seq));
    TRY(nsc_mp_rd_text(c, l->job));
    TRY(nsc_mp_rd_text(c, l->host));
    TRY(nsc_mp_rd_array(c, &n));
    l->nprogress = n;
    l->progress = f->progress ? f->progress + t->nprogress : NULL;
    for (uint32_t i = 0; i < n; i++) {
        nsc_a2c_progress scratch, *g = f->progress ? f->progress + t->nprogress : &scratch;
        TRY(rd_progress(c, g));
        t->nprogress++;
    }
    return NSC_WIRE_OK;
}

static int rd_alias(nsc_mp_cursor *c, nsc_a2c_alias *a)
{
    TRY(rd_fixed(c, ALIAS_FIELDS));
    TRY(rd_u32(c, &a->proxy_pid));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &a->proxy_id));
    TRY(rd_u32(c, &a->origin_pid));
    return nsc_mp_rd_uint(c, UINT64_MAX, &a->new_id);
}

/* A batch's head, up to its seq; *version says which version it is. */
static int rd_batch_head(nsc_mp_cursor *c, nsc_a2c_batch *b, uint32_t *version)
{
    static const uint32_t versions[] = {NSC_A2C_BATCH_VERSION, 3, 2, 1},
                          nfields[] = {BATCH_FIELDS, BATCH_V3_FIELDS, BATCH_V2_FIELDS, BATCH_V1_FIELDS};
    TRY(rd_head(c, NSC_A2C_BATCH, versions, nfields, 4, version, b->agent));
    b->epoch = 0;
    if (*version >= 2)
        TRY(nsc_mp_rd_uint(c, UINT64_MAX, &b->epoch));
    return nsc_mp_rd_uint(c, UINT64_MAX, &b->seq);
}

/* An array of bins (sections, ledgers) into s, or counted only. */
static int rd_bins(nsc_mp_cursor *c, nsc_a2c_section *s, uint32_t *count)
{
    uint32_t n;
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++, (*count)++) {
        nsc_a2c_section scratch, *to = s ? &s[i] : &scratch;
        TRY(nsc_mp_rd_bin(c, &to->data, &to->len));
    }
    return NSC_WIRE_OK;
}

/* The CRC that ends a version 3 or 4 batch: its position goes to t->crc_at. */
static int rd_crc(nsc_mp_cursor *c, nsc_a2c_batch *b, tally *t)
{
    uint64_t crc;
    t->crc_at = c->p;
    if (c->p < c->end && *c->p != MP_UINT32)
        return NSC_WIRE_BAD_TYPE;
    TRY(nsc_mp_rd_uint(c, UINT32_MAX, &crc));
    b->crc = (uint32_t)crc;
    return NSC_WIRE_OK;
}

static int rd_batch(nsc_mp_cursor *c, nsc_a2c_batch *b, const fill *f, tally *t)
{
    uint32_t n, version;
    TRY(rd_batch_head(c, b, &version));
    TRY(nsc_mp_rd_text(c, b->host));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &b->sent_ns));
    TRY(rd_bins(c, f->sections, &t->nsections));
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++, t->nlife++) {
        nsc_a2c_life scratch, *l = f->life ? &f->life[i] : &scratch;
        TRY(rd_life(c, l, f, t));
    }
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++, t->naliases++) {
        nsc_a2c_alias scratch, *a = f->aliases ? &f->aliases[i] : &scratch;
        TRY(rd_alias(c, a));
    }
    if (version >= 4)
        TRY(rd_bins(c, f->ledgers, &t->nledgers));
    b->crc = 0;
    if (version >= 3)
        TRY(rd_crc(c, b, t));
    return c->p == c->end ? NSC_WIRE_OK : NSC_WIRE_TRAILING;
}

int nsc_a2c_decode_batch(const void *buf, size_t len, const nsc_dec_limits *lim,
                         nsc_a2c_batch *out)
{
    nsc_mp_cursor c;
    nsc_a2c_batch b;
    tally t = {0};
    fill f = {0};
    memset(out, 0, sizeof *out);
    memset(&b, 0, sizeof b);
    TRY(check_len(len, lim));
    cursor_init(&c, buf, len, lim);
    TRY(rd_batch(&c, &b, &f, &t));
    if (t.crc_at && nsc_crc32c(0, buf, (size_t)(t.crc_at - (const uint8_t *)buf)) != b.crc)
        return NSC_WIRE_BAD_CHECKSUM;
    size_t sz = (t.nsections + t.nledgers) * sizeof *f.sections + t.nlife * sizeof *f.life +
                t.nprogress * sizeof *f.progress + t.naliases * sizeof *f.aliases;
    uint8_t *mem = calloc(1, sz ? sz : 1);
    if (!mem)
        return NSC_WIRE_NOMEM;
    f.life = (nsc_a2c_life *)mem;
    f.progress = (nsc_a2c_progress *)(f.life + t.nlife);
    f.aliases = (nsc_a2c_alias *)(f.progress + t.nprogress);
    f.sections = (nsc_a2c_section *)(f.aliases + t.naliases);
    f.ledgers = f.sections + t.nsections;
    cursor_init(&c, buf, len, lim);
    memset(&t, 0, sizeof t);
    if (rd_batch(&c, &b, &f, &t) != NSC_WIRE_OK) {
        free(mem);  /* unreachable unless buf changed under us */
        return NSC_WIRE_BAD_RECORD;
    }
    b.sections = f.sections;
    b.life = f.life;
    b.aliases = f.aliases;
    b.ledgers = f.ledgers;
    b.nledgers = t.nledgers;
    b.nsections = t.nsections;
    b.nlife = t.nlife;
    b.naliases = t.naliases;
    b.mem = mem;
    *out = b;
    return NSC_WIRE_OK;
}

void nsc_a2c_batch_release(nsc_a2c_batch *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}

int nsc_a2c_batch_name(const void *buf, size_t len, char agent[64], uint64_t *seq)
{
    nsc_mp_cursor c;
    nsc_a2c_batch b;
    uint32_t version;
    int rc = open_cursor(&c, buf, len);
    if (rc == NSC_WIRE_OK)
        rc = rd_batch_head(&c, &b, &version);
    strcpy(agent, rc == NSC_WIRE_OK ? b.agent : "unknown");
    *seq = rc == NSC_WIRE_OK ? b.seq : 0;
    return rc;
}

int nsc_a2c_batch_check(const void *buf, size_t len)
{
    nsc_mp_cursor c;
    nsc_a2c_batch b;
    uint32_t version;
    TRY(open_cursor(&c, buf, len));
    TRY(rd_batch_head(&c, &b, &version));
    if (version < 3) {
        int rc = nsc_a2c_decode_batch(buf, len, NULL, &b);
        nsc_a2c_batch_release(&b);
        return rc;
    }
    if (len < CRC_BYTES)
        return NSC_WIRE_TRUNCATED;
    const uint8_t *crc = (const uint8_t *)buf + len - CRC_BYTES;
    if (crc[0] != MP_UINT32)
        return NSC_WIRE_BAD_CHECKSUM;
    uint32_t want = (uint32_t)crc[1] << 24 | (uint32_t)crc[2] << 16 | (uint32_t)crc[3] << 8 | crc[4];
    return nsc_crc32c(0, buf, len - CRC_BYTES) == want ? NSC_WIRE_OK : NSC_WIRE_BAD_CHECKSUM;
}

int nsc_a2c_kind(const void *buf, size_t len)
{
    nsc_mp_cursor c;
    uint32_t n;
    uint64_t kind;
    TRY(open_cursor(&c, buf, len));
    TRY(nsc_mp_rd_array(&c, &n));
    TRY(nsc_mp_rd_uint(&c, UINT32_MAX, &kind));
    if (kind < NSC_A2C_BATCH || kind > NSC_A2C_UDP)
        return NSC_WIRE_BAD_RECORD;
    return (int)kind;
}

int nsc_a2c_decode_ack(const void *buf, size_t len, nsc_a2c_ack *out)
{
    nsc_mp_cursor c;
    nsc_a2c_ack a;
    memset(out, 0, sizeof *out);
    TRY(open_small(&c, buf, len, ACK_FIELDS, NSC_A2C_ACK, a.agent));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &a.seq));
    TRY(rd_u32(&c, &a.credit));
    TRY(at_end(&c));
    *out = a;
    return NSC_WIRE_OK;
}

int nsc_a2c_decode_reject(const void *buf, size_t len, nsc_a2c_reject *out)
{
    nsc_mp_cursor c;
    nsc_a2c_reject r;
    memset(out, 0, sizeof *out);
    TRY(open_small(&c, buf, len, REJECT_FIELDS, NSC_A2C_REJECT, r.agent));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &r.seq));
    TRY(nsc_mp_rd_text(&c, r.reason));
    TRY(at_end(&c));
    *out = r;
    return NSC_WIRE_OK;
}

int nsc_a2c_decode_probe(const void *buf, size_t len, nsc_a2c_probe *out)
{
    nsc_mp_cursor c;
    nsc_a2c_probe p;
    memset(&p, 0, sizeof p);
    memset(out, 0, sizeof *out);
    int kind = nsc_a2c_kind(buf, len);
    if (kind != NSC_A2C_PROBE && kind != NSC_A2C_SAMPLE)
        return kind < 0 ? kind : NSC_WIRE_BAD_RECORD;
    p.kind = (uint8_t)kind;
    TRY(open_small(&c, buf, len, PROBE_FIELDS, p.kind, p.agent));
    TRY(nsc_mp_rd_text(&c, p.host));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &p.id));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &p.t1));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &p.t2));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &p.t3));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &p.t4));
    TRY(at_end(&c));
    *out = p;
    return NSC_WIRE_OK;
}

int nsc_a2c_decode_udp(const void *buf, size_t len, nsc_a2c_udp *out)
{
    nsc_mp_cursor c;
    nsc_a2c_udp u;
    memset(out, 0, sizeof *out);
    TRY(open_small(&c, buf, len, UDP_FIELDS, NSC_A2C_UDP, u.agent));
    TRY(rd_u32(&c, &u.port));
    TRY(at_end(&c));
    if (u.port == 0 || u.port > 65535)
        return NSC_WIRE_BAD_VALUE;
    *out = u;
    return NSC_WIRE_OK;
}

int nsc_a2c_decode_fetch(const void *buf, size_t len, nsc_a2c_fetch *out)
{
    nsc_mp_cursor c;
    nsc_a2c_fetch f;
    uint32_t n;
    memset(&f, 0, sizeof f);
    memset(out, 0, sizeof *out);
    TRY(open_small(&c, buf, len, FETCH_FIELDS, NSC_A2C_FETCH, f.agent));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &f.id));
    TRY(nsc_mp_rd_text(&c, f.job));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &f.from_ns));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &f.to_ns));
    TRY(nsc_mp_rd_uint(&c, UINT64_MAX, &f.types));
    TRY(nsc_mp_rd_array(&c, &n));
    if (n > NSC_A2C_FETCH_PIDS || f.from_ns > f.to_ns)
        return NSC_WIRE_BAD_VALUE;
    for (f.npids = 0; f.npids < n; f.npids++)
        TRY(rd_u32(&c, &f.pids[f.npids]));
    TRY(at_end(&c));
    *out = f;
    return NSC_WIRE_OK;
}

/* A detail chunk into d; its pieces into pieces, or (NULL) counted only. */
static int rd_detail(nsc_mp_cursor *c, nsc_a2c_detail *d, nsc_a2c_piece *pieces)
{
    static const uint32_t v1 = NSC_A2C_VERSION, nfields = DETAIL_FIELDS;
    uint32_t version, n;
    TRY(rd_head(c, NSC_A2C_DETAIL, &v1, &nfields, 1, &version, d->agent));
    TRY(nsc_mp_rd_text(c, d->host));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &d->epoch));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &d->id));
    TRY(rd_u32(c, &d->chunk));
    TRY(rd_u8(c, &d->last));
    if (d->last > 1)
        return NSC_WIRE_BAD_VALUE;
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &d->held_from_ns));
    TRY(nsc_mp_rd_uint(c, UINT64_MAX, &d->held_to_ns));
    if (d->held_from_ns > d->held_to_ns)
        return NSC_WIRE_BAD_VALUE;
    TRY(nsc_mp_rd_array(c, &n));
    for (uint32_t i = 0; i < n; i++) {
        nsc_a2c_piece scratch, *to = pieces ? &pieces[i] : &scratch;
        TRY(rd_fixed(c, PIECE_FIELDS));
        TRY(nsc_mp_rd_uint(c, UINT64_MAX, &to->seq));
        TRY(nsc_mp_rd_bin(c, &to->data, &to->len));
    }
    d->npieces = n;
    return at_end(c);
}

int nsc_a2c_decode_detail(const void *buf, size_t len, const nsc_dec_limits *lim, nsc_a2c_detail *out)
{
    nsc_mp_cursor c;
    nsc_a2c_detail d;
    memset(&d, 0, sizeof d);
    memset(out, 0, sizeof *out);
    TRY(check_len(len, lim));
    cursor_init(&c, buf, len, lim);
    TRY(rd_detail(&c, &d, NULL));
    nsc_a2c_piece *pieces = calloc(d.npieces ? d.npieces : 1, sizeof *pieces);
    if (!pieces)
        return NSC_WIRE_NOMEM;
    cursor_init(&c, buf, len, lim);
    if (rd_detail(&c, &d, pieces) != NSC_WIRE_OK) {
        free(pieces);  /* unreachable unless buf changed under us */
        return NSC_WIRE_BAD_RECORD;
    }
    d.pieces = pieces;
    d.mem = pieces;
    *out = d;
    return NSC_WIRE_OK;
}

void nsc_a2c_detail_release(nsc_a2c_detail *d)
{
    free(d->mem);
    memset(d, 0, sizeof *d);
}
