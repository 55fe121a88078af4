/* held.c: what the PXN resolver holds and knows, kept in the spool across a kill (see held.h). */
#include "held.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "lsave.h"

typedef struct adds {
    nsc_agent *a;
    nsc_spool_held *v;
    size_t n, cap;
    int nomem;
} adds;

static void add_one(void *arg, uint64_t hid, uint64_t proxy_key, const nsc_event *ev)
{
    adds *l = arg;
    const nsc_reg_proc *p = nsc_reg_by_key(l->a->reg, proxy_key);
    if (!p)
        return;  /* reaped while it waited: emitting it counts it lost */
    if (nsc_grow(&l->v, l->n, &l->cap, sizeof *l->v, 16)) {
        l->nomem = 1;
        return;
    }
    nsc_spool_held *h = &l->v[l->n++];
    memset(h, 0, sizeof *h);  /* padding too: the record goes to disk */
    h->id = hid;
    h->proxy = p->id;
    h->ev = *ev;
}

typedef struct cands {
    nsc_agent *a;
    nsc_spool_cand *v;
    size_t n, cap;
    int nomem;
} cands;

static void cand_one(void *arg, uint64_t key, const nsc_event *ev, uint32_t origin_pid, uint64_t new_id)
{
    cands *l = arg;
    const nsc_reg_proc *p = nsc_reg_by_key(l->a->reg, key);
    if (!p)
        return;  /* reaped: nothing can re-attach to it any more */
    if (nsc_grow(&l->v, l->n, &l->cap, sizeof *l->v, 64)) {
        l->nomem = 1;
        return;
    }
    nsc_spool_cand *c = &l->v[l->n++];
    memset(c, 0, sizeof *c);  /* padding too: the record goes to disk */
    c->id = ev->id;
    c->start_ns = ev->start_ns;
    c->host = nsc_spool_host_hash(p->id.host);
    c->new_id = new_id;
    c->pid = p->id.pid;
    c->origin_pid = origin_pid;
    c->rank = ev->rank;
    c->ctx = ev->ctx;
}

int nsc_held_stage(nsc_agent *a, nsc_held_save *sv)
{
    adds l = {.a = a};
    cands cl = {.a = a};
    memset(sv, 0, sizeof *sv);
    nsc_pxn_unsaved(a->pxn, add_one, &l);
    /* Without PXN traffic no foreign event needs them: a job without it
     * pays nothing (the first save after one comes has them all). */
    if (a->in.foreign || a->pxn_before) {
        sv->cands_next = nsc_pxn_candidates(a->pxn, a->cands_saved, cand_one, &cl);
        sv->moved_next = nsc_pxn_moved_since(a->pxn, a->moved_saved, cand_one, &cl);
    } else {
        sv->cands_next = a->cands_saved;
        sv->moved_next = a->moved_saved;
    }
    if (l.nomem || cl.nomem) {
        free(l.v);
        free(cl.v);
        return -1;
    }
    sv->cand = cl.v;
    sv->c.cand = cl.v;
    sv->c.ncand = cl.n;
    sv->c.cand_keep = 2 * a->cfg.pxn_recent;  /* candidates and moved events */
    sv->add = l.v;
    sv->c.add = l.v;
    sv->c.nadd = l.n;
    sv->c.del = nsc_pxn_gone(a->pxn, &sv->c.ndel);
    sv->c.last_id = nsc_pxn_last_id(a->pxn);
    nsc_spool_held_stage(a->spool, &sv->c);
    return 0;
}

void nsc_held_done(nsc_agent *a, nsc_held_save *sv)
{
    nsc_spool_held_stage(a->spool, NULL);
    if (sv->c.written) {
        nsc_pxn_saved(a->pxn);
        a->cands_saved = sv->cands_next;
        a->moved_saved = sv->moved_next;
    }
    free(sv->add);
    free(sv->cand);
    sv->add = NULL;
    sv->cand = NULL;
}

typedef struct loading {
    nsc_agent *a;
    nsc_held_flush_fn flush;
} loading;

static int load_one(void *arg, const nsc_spool_held *h)
{
    const loading *ld = arg;
    nsc_agent *a = ld->a;
    uint64_t now = nsc_mono_ns();
    nsc_batch_hdr hdr = {.version = NSC_WIRE_VERSION, .proc = h->proxy};
    unsigned news;
    nsc_reg_proc *p = nsc_reg_get(a->reg, &hdr, now, &news);
    if (!p)
        return -1;
    if (news & NSC_REG_STARTED) {
        if (nsc_out_life(a->out, p, NSC_A2C_STARTED, now) != 0)
            a->in.nomem++;
        nsc_held_heard(a, p);
        nsc_lsave_heard(a, p);
    }
    if (nsc_pxn_restore(a->pxn, h->id, p->key, p->id.pid, &h->ev, now) == 0)
        return 0;
    /* The ids of the events given up are full: store those events and
     * forget their ids, then there is room. */
    ld->flush(a, now);
    return nsc_pxn_restore(a->pxn, h->id, p->key, p->id.pid, &h->ev, now);
}

static int load_cand(void *arg, const nsc_spool_cand *c)
{
    nsc_agent *a = arg;
    if (nsc_grow(&a->cands, a->ncands, &a->capcands, sizeof *a->cands, 1024))
        return -1;
    a->cands[a->ncands++] = *c;
    return 0;
}

/* By start, so that the newest survive in the resolver's bounded tables
 * (the oldest go first); copies (saved again by each successor) next to
 * each other. */
static int by_start(const void *x, const void *y)
{
    const nsc_spool_cand *c = x, *d = y;
    return c->start_ns != d->start_ns ? (c->start_ns < d->start_ns ? -1 : 1) : memcmp(c, d, sizeof *c);
}

/* The predecessors' entries once each, oldest start first. */
static void sort_cands(nsc_agent *a)
{
    size_t kept = 0;
    if (a->ncands > 1)
        qsort(a->cands, a->ncands, sizeof *a->cands, by_start);
    for (size_t i = 0; i < a->ncands; i++)
        if (kept == 0 || by_start(&a->cands[kept - 1], &a->cands[i]) != 0)
            a->cands[kept++] = a->cands[i];
    a->ncands = kept;
}

int nsc_held_load(nsc_agent *a, nsc_held_flush_fn flush, char err[256])
{
    loading ld = {a, flush};
    nsc_pxn_set_last_id(a->pxn, nsc_spool_pxn_last_id(a->spool));
    /* Candidates first: a held event may re-attach as soon as its origin is heard. */
    if (nsc_spool_cands_foreach(a->spool, load_cand, a) != 0) {
        snprintf(err, 256, "spool %.200s: cannot take back the PXN candidates", a->cfg.spool);
        return -1;
    }
    sort_cands(a);
    a->pxn_before = a->ncands > 0;
    if (nsc_spool_held_foreach(a->spool, load_one, &ld) != 0) {
        snprintf(err, 256, "spool %.200s: cannot take back the held PXN events", a->cfg.spool);
        return -1;
    }
    flush(a, nsc_mono_ns());  /* the events given up, the processes started */
    return 0;
}

void nsc_held_heard(nsc_agent *a, const nsc_reg_proc *p)
{
    uint64_t host = nsc_spool_host_hash(p->id.host);
    size_t kept = 0;
    for (size_t i = 0; i < a->ncands; i++) {
        const nsc_spool_cand *c = &a->cands[i];
        if (c->pid != p->id.pid || c->host != host) {
            a->cands[kept++] = *c;  /* in order: the oldest are forgotten first */
            continue;
        }
        nsc_event ev = {.id = c->id, .start_ns = c->start_ns, .rank = c->rank, .ctx = c->ctx, .type = NSC_T_COLL};
        if (c->new_id)
            nsc_pxn_moved(a->pxn, p->key, &ev, c->origin_pid, c->new_id);
        else
            nsc_pxn_note(a->pxn, p->key, &ev);
    }
    a->ncands = kept;
}

void nsc_held_forget(nsc_agent *a)
{
    free(a->cands);
    a->cands = NULL;
    a->ncands = a->capcands = 0;
}
