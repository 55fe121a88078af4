/* lbsave.c: the ledger builder's state as bytes (see lbuild.h, lbuild_int.h).
 *
 * Owns nsc_lbuild_save's and nsc_lbuild_restore's layout: what a process's
 * open collectives, ProxyOps, steps, Send/Recv counts, GPU line and
 * graph-captured API calls become in
 * the spool (lsave.c stores them) and how they come back after a kill.
 */
#include "lbuild_int.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* A process's state saved: this header, then its collectives (each followed
 * by its edges), ProxyOps, steps, Send/Recv counts, graph-captured API ids
 * and GPU line. The structs
 * go as they are in memory, pointers cleared: the spool is this host's, and
 * one of another build's layout (other sizes) is refused, never guessed at. */
typedef struct saved_hdr {
    uint16_t sz_hdr, sz_coll, sz_edge, sz_op, sz_step, sz_p2p;
    uint32_t ncolls, nedges, nops, nsteps, np2p, ngraph, gpu_len;
    uint32_t closed_next, api_next, launch_next;
    uint8_t pxn, own_net, sends;
    uint64_t closed[CLOSED_RING];
    api_start api[API_RING], launch[API_RING];
} saved_hdr;

static void layout(saved_hdr *h)
{
    h->sz_hdr = sizeof(saved_hdr), h->sz_coll = sizeof(open_coll), h->sz_edge = sizeof(nsc_ledger_edge);
    h->sz_op = sizeof(op_acc), h->sz_step = sizeof(step_acc), h->sz_p2p = sizeof(p2p_count);
}

static size_t saved_len(const saved_hdr *h)
{
    return sizeof *h + (size_t)h->ncolls * sizeof(open_coll) + (size_t)h->nedges * sizeof(nsc_ledger_edge) +
           (size_t)h->nops * sizeof(op_acc) + (size_t)h->nsteps * sizeof(step_acc) +
           (size_t)h->np2p * sizeof(p2p_count) + (size_t)h->ngraph * sizeof(uint64_t) + h->gpu_len;
}

static uint8_t *put(uint8_t *at, const void *v, size_t len)
{
    if (len)
        memcpy(at, v, len);
    return at + len;
}

/* lp's state as bytes (malloc'd), or NULL without memory. */
static uint8_t *save_proc(const lproc *lp, size_t *len)
{
    saved_hdr h;
    memset(&h, 0, sizeof h);  /* padding too: it goes to disk */
    layout(&h);
    h.ncolls = (uint32_t)lp->ncolls, h.nops = (uint32_t)lp->nops, h.nsteps = (uint32_t)lp->nsteps;
    h.np2p = (uint32_t)lp->np2p, h.ngraph = (uint32_t)lp->ngraph, h.gpu_len = (uint32_t)nsc_gpuclock_serialized_size(&lp->gpu);
    for (size_t i = 0; i < lp->ncolls; i++)
        h.nedges += lp->colls[i].rec.nedges;
    h.closed_next = lp->closed_next, h.api_next = lp->api_next, h.launch_next = lp->launch_next;
    h.pxn = lp->pxn, h.own_net = lp->own_net, h.sends = lp->sends;
    memcpy(h.closed, lp->closed, sizeof h.closed);
    memcpy(h.api, lp->api, sizeof h.api);
    memcpy(h.launch, lp->launch, sizeof h.launch);
    uint8_t *buf = malloc(*len = saved_len(&h)), *at = buf;
    if (!buf)
        return NULL;
    at = put(at, &h, sizeof h);
    for (size_t i = 0; i < lp->ncolls; i++) {
        open_coll c = lp->colls[i];
        c.edges = NULL, c.capedges = 0, c.rec.edges = NULL;
        at = put(at, &c, sizeof c);
        at = put(at, lp->colls[i].edges, c.rec.nedges * sizeof *c.edges);
    }
    at = put(at, lp->ops, lp->nops * sizeof *lp->ops);
    for (size_t i = 0; i < lp->capsteps; i++)
        if (lp->steps[i].step_id)
            at = put(at, &lp->steps[i], sizeof lp->steps[i]);
    at = put(at, lp->p2p, lp->np2p * sizeof *lp->p2p);
    at = put(at, lp->graph_apis, lp->ngraph * sizeof *lp->graph_apis);
    nsc_gpuclock_serialize(&lp->gpu, at);
    return buf;
}

int nsc_lbuild_save(nsc_lbuild *lb, nsc_lbuild_save_fn *fn, void *arg)
{
    for (size_t i = 0; i < lb->nprocs; i++) {
        const lproc *lp = &lb->procs[i];
        size_t len;
        uint8_t *buf = lp->dirty ? save_proc(lp, &len) : NULL;
        if (lp->dirty && (!buf || fn(arg, lp->host, lp->pid, buf, len) != 0))
            return -1;
    }
    for (size_t i = 0; i < lb->ngone; i++)
        if (fn(arg, lb->gone[i].host, lb->gone[i].pid, NULL, 0) != 0)
            return -1;
    return 0;
}

void nsc_lbuild_saved(nsc_lbuild *lb)
{
    for (size_t i = 0; i < lb->nprocs; i++)
        lb->procs[i].dirty = 0;
    lb->ngone = 0;
}

/* Take len bytes at *at into to. */
static void take(void *to, const uint8_t **at, size_t len)
{
    if (len)
        memcpy(to, *at, len);
    *at += len;
}

/* The saved collectives into lp, each with its edges; 0 or -1. */
static int restore_colls(nsc_lbuild *lb, lproc *lp, const saved_hdr *h, const uint8_t **at)
{
    uint64_t nedges = 0;
    for (uint32_t i = 0; i < h->ncolls; i++) {
        open_coll *c = &lp->colls[lp->ncolls];
        take(c, at, sizeof *c);
        c->edges = NULL, c->capedges = 0;
        nedges += c->rec.nedges;
        if (nedges > h->nedges || (c->rec.nedges && !(c->edges = malloc(c->rec.nedges * sizeof *c->edges))))
            return -1;
        c->capedges = c->rec.nedges;
        take(c->edges, at, c->rec.nedges * sizeof *c->edges);
        lp->ncolls++;
        lb->st.open++;
    }
    return nedges == h->nedges ? 0 : -1;
}

static int restore_proc(nsc_lbuild *lb, lproc *lp, const saved_hdr *h, const uint8_t *at)
{
    if (nsc_grow_to(&lp->colls, h->ncolls, &lp->capcolls, sizeof *lp->colls, 8) ||
        nsc_grow_to(&lp->ops, h->nops, &lp->capops, sizeof *lp->ops, 8) ||
        nsc_grow_to(&lp->p2p, h->np2p, &lp->capp2p, sizeof *lp->p2p, 8) ||
        nsc_grow_to(&lp->graph_apis, h->ngraph, &lp->capgraph, sizeof *lp->graph_apis, 16) ||
        restore_colls(lb, lp, h, &at))
        return -1;
    take(lp->ops, &at, h->nops * sizeof *lp->ops);
    lp->nops = h->nops;
    for (uint32_t i = 0; i < h->nsteps; i++) {
        step_acc s;
        take(&s, &at, sizeof s);
        step_acc *t = s.step_id && !nsc_lb_step_of(lp, s.step_id) ? nsc_lb_step_add(lb, lp, s.step_id) : NULL;
        if (!t)
            return -1;
        *t = s;
    }
    take(lp->p2p, &at, h->np2p * sizeof *lp->p2p);
    lp->np2p = h->np2p;
    take(lp->graph_apis, &at, h->ngraph * sizeof *lp->graph_apis);
    lp->ngraph = h->ngraph;
    nsc_gpuclock_free(&lp->gpu);
    return nsc_gpuclock_deserialize(&lp->gpu, at, h->gpu_len) == NSC_GPUCLOCK_OK ? 0 : -1;
}

int nsc_lbuild_restore(nsc_lbuild *lb, const nsc_reg_proc *p, const void *buf, size_t len)
{
    saved_hdr h, want;
    memset(&want, 0, sizeof want);
    layout(&want);
    if (len < sizeof h)
        return -1;
    memcpy(&h, buf, sizeof h);
    if (memcmp(&h, &want, offsetof(saved_hdr, ncolls)) != 0 || h.ncolls > lb->max_open ||
        h.nops > lb->max_open || h.nsteps > nsc_lb_steps_max(lb) || h.ngraph > GRAPH_APIS_MAX || saved_len(&h) != len || nsc_lb_proc_of(lb, p, 0))
        return -1;
    lproc *lp = nsc_lb_proc_of(lb, p, 1);
    if (!lp)
        return -1;
    lp->pxn = h.pxn, lp->own_net = h.own_net, lp->sends = h.sends;
    lp->closed_next = h.closed_next, lp->api_next = h.api_next, lp->launch_next = h.launch_next;
    memcpy(lp->closed, h.closed, sizeof lp->closed);
    memcpy(lp->api, h.api, sizeof lp->api);
    memcpy(lp->launch, h.launch, sizeof lp->launch);
    if (restore_proc(lb, lp, &h, (const uint8_t *)buf + sizeof h) == 0)
        return 0;
    nsc_lb_proc_remove(lb, lp);
    return -1;
}
