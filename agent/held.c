/* held.c: the PXN resolver's held events in the spool (see held.h). */
#include "held.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "ingest.h"

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

int nsc_held_stage(nsc_agent *a, nsc_held_save *sv)
{
    adds l = {.a = a};
    memset(sv, 0, sizeof *sv);
    nsc_pxn_unsaved(a->pxn, add_one, &l);
    if (l.nomem) {
        free(l.v);
        return -1;
    }
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
    if (sv->c.written)
        nsc_pxn_saved(a->pxn);
    free(sv->add);
    sv->add = NULL;
}

static int load_one(void *arg, const nsc_spool_held *h)
{
    nsc_agent *a = arg;
    uint64_t now = nsc_mono_ns();
    nsc_batch_hdr hdr = {.version = NSC_WIRE_VERSION, .proc = h->proxy};
    unsigned news;
    nsc_reg_proc *p = nsc_reg_get(a->reg, &hdr, now, &news);
    if (!p)
        return -1;
    if ((news & NSC_REG_STARTED) && nsc_out_life(a->out, p, NSC_A2C_STARTED, now) != 0)
        a->in.nomem++;
    if (nsc_pxn_restore(a->pxn, h->id, p->key, p->id.pid, &h->ev, now) == 0)
        return 0;
    /* The ids of the events given up are full: store those events and
     * forget their ids, then there is room. */
    nsc_ingest_flush(a, now);
    return nsc_pxn_restore(a->pxn, h->id, p->key, p->id.pid, &h->ev, now);
}

int nsc_held_load(nsc_agent *a, char err[256])
{
    nsc_pxn_set_last_id(a->pxn, nsc_spool_pxn_last_id(a->spool));
    if (nsc_spool_held_foreach(a->spool, load_one, a) != 0) {
        snprintf(err, 256, "spool %.200s: cannot take back the held PXN events", a->cfg.spool);
        return -1;
    }
    nsc_ingest_flush(a, nsc_mono_ns());  /* the events given up, the processes started */
    return 0;
}
