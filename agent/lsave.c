/* lsave.c: the ledger builder's state in the spool across a kill (see lsave.h). */
#include "lsave.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int add(nsc_agent *a, uint64_t host, uint32_t pid, void *buf, size_t len)
{
    if (nsc_grow(&a->lsaves, a->nlsaves, &a->caplsaves, sizeof *a->lsaves, 8)) {
        free(buf);
        return -1;
    }
    a->lsaves[a->nlsaves++] = (nsc_spool_lsave){host, pid, buf, len};
    return 0;
}

static int add_state(void *arg, uint64_t host, uint32_t pid, void *buf, size_t len)
{
    return add(arg, host, pid, buf, len);
}

static void unstage(nsc_agent *a)
{
    for (size_t i = 0; i < a->nlsaves; i++)
        free((void *)a->lsaves[i].data);
    a->nlsaves = 0;
}

int nsc_lsave_stage(nsc_agent *a, nsc_spool_held_change *c)
{
    int rc = nsc_lbuild_save(a->lb, add_state, a);
    for (size_t i = 0; rc == 0 && i < a->nlgone; i++)
        rc = add(a, a->lgone[i].host, a->lgone[i].pid, NULL, 0);
    if (rc) {
        unstage(a);
        return -1;
    }
    c->lsave = a->lsaves;
    c->nlsave = a->nlsaves;
    return 0;
}

void nsc_lsave_done(nsc_agent *a, const nsc_spool_held_change *c)
{
    if (c->written) {
        nsc_lbuild_saved(a->lb);
        a->nlgone = 0;
    }
    unstage(a);
}

static int load_one(void *arg, const nsc_spool_lsave *l)
{
    nsc_agent *a = arg;
    void *copy = malloc(l->len ? l->len : 1);
    if (!copy || nsc_grow(&a->lpred, a->nlpred, &a->caplpred, sizeof *a->lpred, 16)) {
        free(copy);
        return -1;
    }
    memcpy(copy, l->data, l->len);
    a->lpred[a->nlpred++] = (nsc_spool_lsave){l->host, l->pid, copy, l->len};
    return 0;
}

int nsc_lsave_load(nsc_agent *a, char err[256])
{
    if (nsc_spool_lsave_foreach(a->spool, load_one, a) == 0)
        return 0;
    snprintf(err, 256, "spool %.200s: cannot take back the ledger builder's state", a->cfg.spool);
    return -1;
}

/* Forget the predecessor's state i. */
static void pred_drop(nsc_agent *a, size_t i)
{
    free((void *)a->lpred[i].data);
    a->lpred[i] = a->lpred[--a->nlpred];
}

void nsc_lsave_heard(nsc_agent *a, const nsc_reg_proc *p)
{
    uint64_t host = nsc_spool_host_hash(p->id.host);
    for (size_t i = 0; i < a->nlpred; i++) {
        const nsc_spool_lsave *l = &a->lpred[i];
        if (l->host != host || l->pid != p->id.pid)
            continue;
        if (nsc_lbuild_restore(a->lb, p, l->data, l->len) == 0)
            a->in.ledger_restored++;
        else
            a->in.ledger_refused++;  /* its next save replaces it */
        pred_drop(a, i);
        return;
    }
}

void nsc_lsave_forget(nsc_agent *a)
{
    while (a->nlpred) {
        const nsc_spool_lsave *l = &a->lpred[a->nlpred - 1];
        if (nsc_grow(&a->lgone, a->nlgone, &a->caplgone, sizeof *a->lgone, 8) == 0)
            a->lgone[a->nlgone++] = (nsc_lbuild_gone){l->host, l->pid};
        pred_drop(a, a->nlpred - 1);
    }
}

void nsc_lsave_free(nsc_agent *a)
{
    nsc_lsave_forget(a);
    unstage(a);
    free(a->lsaves);
    free(a->lpred);
    free(a->lgone);
}
