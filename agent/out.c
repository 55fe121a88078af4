/* out.c: the open agent-to-collector batch (see out.h). */
#include "out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

#define SECTION_START 4096

typedef struct section {
    nsc_enc enc;
    uint8_t *buf;
    uint64_t events, records;
    nsc_spool_mark mark;  /* the process's plugin stream, taken up to mark.next (0: none) */
} section;

struct nsc_out {
    char agent[64], host[64];
    nsc_spool *spool;
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
    for (uint32_t i = 0; i < o->nsec; i++)
        free(o->sec[i].buf);
    o->nsec = o->nlife = o->nprogress = o->nalias = 0;
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
    if (!(s->buf = malloc(SECTION_START)))
        return NULL;
    nsc_batch_hdr h = {.version = NSC_WIRE_VERSION, .seq = p->last_seq, .base_ns = base_ns,
                       .sent_ns = base_ns, .proc = p->id};
    if (nsc_enc_begin(&s->enc, s->buf, SECTION_START, &h) != NSC_WIRE_OK) {
        free(s->buf);
        return NULL;
    }
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

int nsc_out_add(nsc_out *o, nsc_reg_proc *p, unsigned tag, const void *rec, uint64_t base_ns)
{
    section *s = open_section(o, p, base_ns);
    if (!s) {
        o->st.nomem++;
        return -1;
    }
    size_t before = s->enc.len;
    int rc;
    while ((rc = enc_one(&s->enc, tag, rec)) == NSC_WIRE_FULL) {  /* double until it fits */
        uint8_t *b = realloc(s->buf, s->enc.cap * 2);
        if (!b) {
            o->st.nomem++;
            return -1;
        }
        s->buf = s->enc.buf = b;
        s->enc.cap *= 2;
    }
    if (rc != NSC_WIRE_OK)
        return -1;  /* a value the codec refuses cannot come from a decoded batch */
    s->records++;
    s->events += (tag == OUT_SPLICE ? ((const nsc_splice *)rec)->tag : tag) < NSC_T_COUNT;
    o->waiting += s->enc.len - before;
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

size_t nsc_out_waiting(const nsc_out *o)
{
    return o->nsec || o->nlife || o->nalias ? o->waiting + 1 : 0;
}

int nsc_out_flush(nsc_out *o, uint64_t now_ns)
{
    if (o->nsec == 0 && o->nlife == 0 && o->nalias == 0)
        return 0;
    nsc_a2c_section *secs = calloc(o->nsec ? o->nsec : 1, sizeof *secs);
    nsc_spool_mark *marks = calloc(o->nsec ? o->nsec : 1, sizeof *marks);
    if (!secs || !marks) {
        free(secs);
        free(marks);
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
                       .aliases = o->alias};
    memcpy(b.agent, o->agent, sizeof b.agent);
    memcpy(b.host, o->host, sizeof b.host);
    uint8_t *msg = malloc(nsc_a2c_batch_bound(&b));
    if (!msg) {
        free(secs);
        free(marks);
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
    if (o->stored && nmarks)
        o->stored(o->stored_arg, marks, nmarks);
    free(msg);
    free(secs);
    free(marks);
    reset(o);
    return rc;
}

void nsc_out_stats_get(const nsc_out *o, nsc_out_stats *st) { *st = o->st; }
