/* out.c: the open agent-to-collector batch (see out.h). */
#include "out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define SECTION_START 4096

/* With a detail ring, a section is two: what the collector gets (string
 * and context definitions, counters) and the raw part for the ring (events,
 * states, completions), each a complete wire batch under the same header,
 * so a fetched raw part decodes with the definitions the collector holds. */
typedef struct section {
    nsc_enc enc, raw;
    uint8_t *buf, *rawbuf;
    uint64_t events, records;
    uint64_t raw_records, types;  /* in the raw part; bit (1 << event type) per type */
    uint32_t pid;
    char job[64];
    nsc_spool_mark mark;  /* the process's plugin stream, taken up to mark.next (0: none) */
} section;

/* One process's ledger records since the last flush; a record's edges
 * follow its predecessors' in edges (pointers are set at flush). */
typedef struct ledger_sec {
    uint64_t key;
    uint32_t pid;
    nsc_ledger_rec *recs;
    nsc_ledger_edge *edges;
    nsc_str_def *strs;
    size_t nrecs, caprecs, nedges, capedges, nstrs, capstrs;
} ledger_sec;

struct nsc_out {
    char agent[64], host[64];
    nsc_spool *spool;
    nsc_ring *ring;           /* detail = on-demand; NULL: everything goes to the spool */
    uint64_t last_flush_ns;   /* a raw part's records arrived after this */
    nsc_out_stored_fn *stored;
    void *stored_arg;
    section *sec;
    uint32_t nsec;
    size_t capsec;
    uint64_t gen;             /* changes at every flush: stale proc->out_slot */
    nsc_a2c_life *life;
    nsc_a2c_progress *progress;
    uint32_t nlife, nprogress;
    size_t caplife, capprogress;
    nsc_a2c_alias *alias;
    uint32_t nalias;
    size_t capalias;
    ledger_sec *led;
    uint32_t nled;
    size_t capled;
    size_t waiting;
    nsc_out_stats st;
};

nsc_out *nsc_out_new(const char *agent_id, const char *host, nsc_spool *spool, nsc_out_stored_fn *stored,
                     void *stored_arg)
{
    nsc_out *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    snprintf(o->agent, sizeof o->agent, "%s", agent_id);
    snprintf(o->host, sizeof o->host, "%s", host);
    o->spool = spool;
    o->stored = stored;
    o->stored_arg = stored_arg;
    o->gen = 1;
    return o;
}

static void reset(nsc_out *o)
{
    for (uint32_t i = 0; i < o->nsec; i++) {
        free(o->sec[i].buf);
        free(o->sec[i].rawbuf);
    }
    for (uint32_t i = 0; i < o->nled; i++) {
        free(o->led[i].recs);
        free(o->led[i].edges);
        free(o->led[i].strs);
    }
    o->nsec = o->nlife = o->nprogress = o->nalias = o->nled = 0;
    o->waiting = 0;
    o->gen++;
}

void nsc_out_free(nsc_out *o)
{
    if (!o)
        return;
    reset(o);
    free(o->sec);
    free(o->life);
    free(o->progress);
    free(o->alias);
    free(o->led);
    free(o);
}

static section *open_section(nsc_out *o, nsc_reg_proc *p, uint64_t base_ns)
{
    if (p->out_gen == o->gen)
        return &o->sec[p->out_slot];
    if (nsc_grow(&o->sec, o->nsec, &o->capsec, sizeof *o->sec, 16))
        return NULL;
    section *s = &o->sec[o->nsec];
    memset(s, 0, sizeof *s);
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = p->last_seq, .base_ns = base_ns,
                       .sent_ns = base_ns, .proc = p->id};
    if (!(s->buf = malloc(SECTION_START)) || nsc_enc_begin(&s->enc, s->buf, SECTION_START, &h) != NSC_WIRE_OK ||
        (o->ring && (!(s->rawbuf = malloc(SECTION_START)) ||
                     nsc_enc_begin(&s->raw, s->rawbuf, SECTION_START, &h) != NSC_WIRE_OK))) {
        free(s->buf);
        free(s->rawbuf);
        return NULL;
    }
    s->pid = p->id.pid;
    memcpy(s->job, p->id.job, sizeof s->job);
    p->out_gen = o->gen;
    p->out_slot = o->nsec++;
    return s;
}

/* One record: a decoded one (rec, its tag) or, for OUT_SPLICE, the next
 * record of the batch the splice reads. */
enum { OUT_SPLICE = NSC_WIRE_TAG_COUNT };

static int enc_one(nsc_enc *e, unsigned tag, const void *rec)
{
    switch (tag) {
    case OUT_SPLICE: return nsc_splice_copy((nsc_splice *)rec, e);
    case NSC_WIRE_TAG_STATE: return nsc_enc_state(e, rec);
    case NSC_WIRE_TAG_COMPLETION: return nsc_enc_completion(e, rec);
    case NSC_WIRE_TAG_STR: return nsc_enc_str(e, rec);
    case NSC_WIRE_TAG_CTX: return nsc_enc_ctx(e, rec);
    case NSC_WIRE_TAG_COUNTERS: return nsc_enc_counters(e, rec);
    default: return nsc_enc_event(e, rec);
    }
}

/* Whether a record of this tag is raw detail (kept in the ring on demand). */
static int is_raw(int tag)
{
    return tag >= 0 && (tag < NSC_T_COUNT || tag == NSC_WIRE_TAG_STATE || tag == NSC_WIRE_TAG_COMPLETION);
}

int nsc_out_add(nsc_out *o, nsc_reg_proc *p, unsigned tag, const void *rec, uint64_t base_ns)
{
    section *s = open_section(o, p, base_ns);
    if (!s) {
        o->st.nomem++;
        return -1;
    }
    int rtag = tag == OUT_SPLICE ? nsc_splice_tag(rec) : (int)tag;
    int raw = o->ring && is_raw(rtag);
    nsc_enc *e = raw ? &s->raw : &s->enc;
    uint8_t **buf = raw ? &s->rawbuf : &s->buf;
    size_t before = e->len;
    int rc;
    while ((rc = enc_one(e, tag, rec)) == NSC_WIRE_FULL) {  /* double until it fits */
        uint8_t *b = realloc(*buf, e->cap * 2);
        if (!b) {
            o->st.nomem++;
            return -1;
        }
        *buf = e->buf = b;
        e->cap *= 2;
    }
    if (rc != NSC_WIRE_OK)
        return -1;  /* a value the codec refuses cannot come from a decoded batch */
    if (raw) {
        s->raw_records++;
        s->types |= rtag < NSC_T_COUNT ? 1ull << rtag : 0;
    } else {
        s->records++;
        s->events += rtag < NSC_T_COUNT;
    }
    o->waiting += e->len - before;
    return 0;
}

int nsc_out_splice(nsc_out *o, nsc_reg_proc *p, nsc_splice *sp, uint64_t base_ns)
{
    return nsc_out_add(o, p, OUT_SPLICE, sp, base_ns);
}

int nsc_out_mark(nsc_out *o, nsc_reg_proc *p, uint64_t base_ns)
{
    section *s = open_section(o, p, base_ns);
    if (!s) {
        o->st.nomem++;
        return -1;
    }
    s->mark = (nsc_spool_mark){p->stream, p->next_seq};
    return 0;
}

int nsc_out_life(nsc_out *o, const nsc_reg_proc *p, uint8_t event, uint64_t ts_ns)
{
    if (nsc_grow(&o->life, o->nlife, &o->caplife, sizeof *o->life, 16) ||
        nsc_grow_to(&o->progress, (size_t)o->nprogress + p->nprogress, &o->capprogress,
                    sizeof *o->progress, 16)) {
        o->st.nomem++;
        return -1;
    }
    nsc_a2c_life *l = &o->life[o->nlife++];
    memset(l, 0, sizeof *l);
    l->event = event;
    l->reason = event == NSC_A2C_DIED ? p->reason : NSC_A2C_REASON_NONE;
    l->pid = p->id.pid;
    l->ts_ns = ts_ns;
    l->last_batch_seq = p->last_seq;
    memcpy(l->job, p->id.job, sizeof l->job);
    memcpy(l->host, p->id.host, sizeof l->host);
    l->nprogress = p->nprogress;
    if (p->nprogress)
        memcpy(o->progress + o->nprogress, p->progress, p->nprogress * sizeof *p->progress);
    o->nprogress += p->nprogress;  /* pointers are set at flush: the array may move */
    o->waiting += 64;
    return 0;
}

int nsc_out_alias(nsc_out *o, const nsc_a2c_alias *a)
{
    if (nsc_grow(&o->alias, o->nalias, &o->capalias, sizeof *o->alias, 16)) {
        o->st.nomem++;
        return -1;
    }
    o->alias[o->nalias++] = *a;
    o->waiting += 16;
    return 0;
}

static ledger_sec *ledger_sec_of(nsc_out *o, const nsc_reg_proc *p)
{
    for (uint32_t i = 0; i < o->nled; i++)
        if (o->led[i].key == p->key)
            return &o->led[i];
    if (nsc_grow(&o->led, o->nled, &o->capled, sizeof *o->led, 8))
        return NULL;
    ledger_sec *l = &o->led[o->nled++];
    memset(l, 0, sizeof *l);
    l->key = p->key;
    l->pid = p->id.pid;
    return l;
}

/* The text of string id s of p in l's strings, once; an id whose text this
 * agent never saw (defined before it started) is the process's (protocol.md). */
static int ledger_str(ledger_sec *l, const nsc_reg_proc *p, nsc_str s)
{
    if (s == 0 || !nsc_reg_str(p, s)[0])
        return 0;
    for (size_t i = 0; i < l->nstrs; i++)
        if (l->strs[i].id == s)
            return 0;
    if (nsc_grow(&l->strs, l->nstrs, &l->capstrs, sizeof *l->strs, 8))
        return -1;
    nsc_str_def *d = &l->strs[l->nstrs++];
    d->id = s;
    snprintf(d->text, sizeof d->text, "%s", nsc_reg_str(p, s));
    return 0;
}

int nsc_out_ledger(nsc_out *o, const nsc_reg_proc *p, const nsc_ledger_rec *r)
{
    ledger_sec *l = ledger_sec_of(o, p);
    if (!l || nsc_grow(&l->recs, l->nrecs, &l->caprecs, sizeof *l->recs, 16) ||
        nsc_grow_to(&l->edges, l->nedges + r->nedges, &l->capedges, sizeof *l->edges, 16) ||
        ledger_str(l, p, r->func) || ledger_str(l, p, r->datatype) || ledger_str(l, p, r->algo) ||
        ledger_str(l, p, r->proto)) {
        o->st.nomem++;
        return -1;
    }
    l->recs[l->nrecs] = *r;
    l->recs[l->nrecs++].edges = NULL;
    if (r->nedges)
        memcpy(l->edges + l->nedges, r->edges, r->nedges * sizeof *r->edges);
    l->nedges += r->nedges;
    o->waiting += 64 + 32 * (size_t)r->nedges;
    return 0;
}

size_t nsc_out_waiting(const nsc_out *o)
{
    return o->nsec || o->nlife || o->nalias || o->nled ? o->waiting + 1 : 0;
}

/* Each process's ledger records encoded into one buffer: ledgers[i] points
 * into *buf (the caller frees it). 0, or -1 without memory. */
static int encode_ledgers(nsc_out *o, nsc_a2c_section *ledgers, uint8_t **buf)
{
    size_t cap = 0, at = 0;
    nsc_ledger_batch *lb = calloc(o->nled ? o->nled : 1, sizeof *lb);
    if (!lb)
        return -1;
    for (uint32_t i = 0; i < o->nled; i++) {
        ledger_sec *l = &o->led[i];
        for (size_t j = 0, e = 0; j < l->nrecs; e += l->recs[j++].nedges)
            l->recs[j].edges = l->recs[j].nedges ? l->edges + e : NULL;
        lb[i] = (nsc_ledger_batch){.pid = l->pid, .nstrs = (uint32_t)l->nstrs, .nrecs = (uint32_t)l->nrecs,
                                   .strs = l->strs, .recs = l->recs};
        cap += nsc_ledger_bound(&lb[i]);
    }
    *buf = malloc(cap ? cap : 1);
    for (uint32_t i = 0; *buf && i < o->nled; i++) {
        size_t n = nsc_ledger_encode(&lb[i], *buf + at);
        ledgers[i] = (nsc_a2c_section){*buf + at, (uint32_t)n};
        at += n;
        o->st.ledger_records += lb[i].nrecs;
        o->st.ledger_bytes += n;
    }
    free(lb);
    return *buf ? 0 : -1;
}

/* The raw parts of the sections of batch seq, into the ring. A batch the
 * spool refused leaves its raw parts out too (its seq names the next batch),
 * counted as lost. */
static void keep_raw(nsc_out *o, uint64_t seq, int stored, uint64_t now_ns)
{
    nsc_ring_piece *pieces = calloc(o->nsec ? o->nsec : 1, sizeof *pieces);
    size_t n = 0;
    for (uint32_t i = 0; i < o->nsec; i++) {
        section *s = &o->sec[i];
        if (s->raw_records == 0)
            continue;
        if (!stored || !pieces) {
            o->st.raw_lost += s->raw_records;
            continue;
        }
        pieces[n] = (nsc_ring_piece){.m = {.seq = seq, .from_ns = o->last_flush_ns, .to_ns = now_ns,
                                           .types = s->types, .pid = s->pid},
                                     .data = s->rawbuf, .len = (uint32_t)nsc_enc_finish(&s->raw)};
        memcpy(pieces[n].m.job, s->job, sizeof s->job);
        o->st.raw_records += s->raw_records;
        n++;
    }
    if (n)
        nsc_ring_put(o->ring, pieces, n, now_ns);
    free(pieces);
    o->last_flush_ns = now_ns;
}

int nsc_out_flush(nsc_out *o, uint64_t now_ns)
{
    if (o->nsec == 0 && o->nlife == 0 && o->nalias == 0 && o->nled == 0)
        return 0;
    nsc_a2c_section *secs = calloc(o->nsec ? o->nsec : 1, sizeof *secs);
    nsc_a2c_section *ledgers = calloc(o->nled ? o->nled : 1, sizeof *ledgers);
    nsc_spool_mark *marks = calloc(o->nsec ? o->nsec : 1, sizeof *marks);
    uint8_t *ledger_buf = NULL;
    if (!secs || !ledgers || !marks || encode_ledgers(o, ledgers, &ledger_buf) != 0) {
        free(secs);
        free(ledgers);
        free(marks);
        free(ledger_buf);
        return -1;
    }
    nsc_spool_tally t = {0, o->nlife + o->nalias};
    size_t nmarks = 0;
    for (uint32_t i = 0; i < o->nsec; i++) {
        secs[i].len = (uint32_t)nsc_enc_finish(&o->sec[i].enc);
        secs[i].data = o->sec[i].buf;
        t.events += o->sec[i].events;
        t.records += o->sec[i].records;
        if (o->sec[i].mark.stream)
            marks[nmarks++] = o->sec[i].mark;
    }
    for (uint32_t i = 0, at = 0; i < o->nlife; at += o->life[i].nprogress, i++)
        o->life[i].progress = o->life[i].nprogress ? o->progress + at : NULL;
    nsc_a2c_batch b = {.epoch = nsc_spool_epoch(o->spool), .seq = nsc_spool_next_seq(o->spool), .sent_ns = now_ns, .nsections = o->nsec,
                       .nlife = o->nlife, .naliases = o->nalias, .sections = secs, .life = o->life,
                       .aliases = o->alias, .nledgers = o->nled, .ledgers = ledgers};
    memcpy(b.agent, o->agent, sizeof b.agent);
    memcpy(b.host, o->host, sizeof b.host);
    uint8_t *msg = malloc(nsc_a2c_batch_bound(&b));
    if (!msg) {
        free(secs);
        free(ledgers);
        free(marks);
        free(ledger_buf);
        return -1;
    }
    size_t len = nsc_a2c_encode_batch(&b, msg);
    int rc = nsc_spool_put(o->spool, msg, len, &t, marks, nmarks);
    if (rc == 0) {
        o->st.batches++;
        o->st.events += t.events;
        o->st.records += t.records;
        o->st.bytes += len;
    }
    if (o->ring)
        keep_raw(o, b.seq, rc == 0, now_ns);
    if (o->stored && nmarks)
        o->stored(o->stored_arg, marks, nmarks);
    free(msg);
    free(secs);
    free(ledgers);
    free(marks);
    free(ledger_buf);
    reset(o);
    return rc;
}

void nsc_out_stats_get(const nsc_out *o, nsc_out_stats *st) { *st = o->st; }

void nsc_out_set_ring(nsc_out *o, nsc_ring *ring, uint64_t now_ns)
{
    o->ring = ring;
    o->last_flush_ns = now_ns;
}
