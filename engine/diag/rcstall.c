/* rcstall.c: where a stuck collective stopped: each rank's progress per
 * channel from its ledger record of that collective (in-flight, or
 * completed: the pass hands over its edges), orphan steps (raw events)
 * placed on the channels no record covers, then the rank that stopped
 * forwarding, named with its step, peer and channels. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcint.h"
#include "order.h"

/* ---- progress from the ledger ---------------------------------------------- */

void nsc_rc_stall_edge(rc_pass *p, int32_t rank, const nsc_json *e)
{
    uint64_t ch = nsc_diag_num(e, "channel");
    if (ch >= RC_MAX_CHANNELS)
        return;
    rc_prog *g = &p->prog[nsc_rc_pidx(rank, (unsigned)ch, nsc_diag_num(e, "is_send") != 0)];
    int32_t steps = (int32_t)nsc_diag_num(e, "steps");
    g->done = g->seen ? g->done + steps : steps - 1;
    g->seen = 1;
    g->peer = (int32_t)nsc_diag_num_or(e, "peer", -1);
}

/* A channel's direction is incomplete on a rank that completed fewer steps
 * than another rank did there: every rank of a ring moves as many. */
static void mark_behind(rc_pass *p, unsigned nch)
{
    for (unsigned ch = 0; ch < nch; ch++)
        for (unsigned dir = 0; dir < 2; dir++) {
            int32_t most = -1;
            for (int64_t r = 0; r < p->nranks; r++) {
                const rc_prog *g = &p->prog[nsc_rc_pidx(r, ch, dir)];
                most = g->seen && g->done > most ? g->done : most;
            }
            for (int64_t r = 0; r < p->nranks; r++) {
                rc_prog *g = &p->prog[nsc_rc_pidx(r, ch, dir)];
                g->incomplete = g->seen && g->done < most;
            }
        }
}

/* Orphan steps (their ProxyOp not stored: still open in a live job) go to
 * the channels of their rank and direction that no stored ProxyOp covers, in
 * the order the ProxyOps were created (NCCL posts channels in order). */
static int by_rank_op(const void *a, const void *b)
{
    const rc_orphan *x = a, *y = b;
    return NSC_ORDER(NSC_CMP(x->rank, y->rank), NSC_CMP(x->is_send, y->is_send), NSC_CMP(x->op, y->op));
}

void nsc_rc_place_orphans(rc_pass *p)
{
    uint32_t nch = p->l->stuck_nch < RC_MAX_CHANNELS ? p->l->stuck_nch : RC_MAX_CHANNELS;
    if (!p->norph)
        return;
    qsort(p->orph, p->norph, sizeof *p->orph, by_rank_op);
    for (size_t i = 0; i < p->norph;) {
        const rc_orphan *o = &p->orph[i];
        uint32_t ch = 0;
        size_t j = i;
        for (; j < p->norph && p->orph[j].rank == o->rank && p->orph[j].is_send == o->is_send; j++) {
            while (ch < nch && p->prog[nsc_rc_pidx(o->rank, ch, o->is_send)].seen)
                ch++;
            if (ch == nch)
                continue;
            rc_prog *g = &p->prog[nsc_rc_pidx(o->rank, ch, o->is_send)];
            g->seen = 1;
            g->done = p->orph[j].done;
            g->peer = p->last_peer[nsc_rc_pidx(o->rank, ch, o->is_send)];
        }
        i = j;
    }
}

/* ---- where a stuck collective stopped -------------------------------------- */

/* On an incomplete channel, the rank that completed receiving at least as
 * many steps as it completed sending holds data it never forwarded: every
 * other rank forwards each step it receives (sent = received + 1). */
static int32_t stall_on(const rc_pass *p, unsigned ch, int32_t *step)
{
    for (int64_t r = 0; r < p->nranks; r++) {
        const rc_prog *s = &p->prog[nsc_rc_pidx(r, ch, 1)], *v = &p->prog[nsc_rc_pidx(r, ch, 0)];
        if (s->seen && v->seen && s->incomplete && v->done >= s->done) {
            *step = s->done + 1;
            return (int32_t)r;
        }
    }
    return -1;
}

/* With several ranks per node only the legs between nodes have proxy events.
 * Following the ring across nodes every sender completed more steps than the
 * sender into its node, except past the rank that stopped: the first sender
 * after it completed fewer. That sender is named (the one that stopped, or
 * one of the ranks before it on its node). */
static int32_t stall_across_nodes(const rc_pass *p, unsigned ch, int32_t *step)
{
    for (int64_t r = 0; r < p->nranks; r++) {
        const rc_prog *s = &p->prog[nsc_rc_pidx(r, ch, 1)];
        if (!s->seen || !s->incomplete)
            continue;
        const char *h = nsc_rc_host_of(p, (int32_t)r);
        for (int64_t u = 0; u < p->nranks; u++) {
            const rc_prog *in = &p->prog[nsc_rc_pidx(u, ch, 1)];
            if (u == r || !in->seen || in->peer < 0 || strcmp(nsc_rc_host_of(p, in->peer), h) != 0 ||
                strcmp(nsc_rc_host_of(p, (int32_t)u), h) == 0)
                continue;
            if (s->done < in->done) {
                *step = s->done + 1;
                return (int32_t)r;
            }
        }
    }
    return -1;
}

void nsc_rc_check_stall(nsc_findings *f, const char *comm, rc_pass *p)
{
    const nsc_rc_late *l = p->l;
    uint32_t nch = l->stuck_nch < RC_MAX_CHANNELS ? l->stuck_nch : RC_MAX_CHANNELS;
    int32_t culprit = -1, step = -1;
    unsigned ch0 = 0, ch1 = 0;
    int node_only = 0;
    mark_behind(p, nch);
    for (unsigned ch = 0; ch < nch; ch++) {
        int32_t s, r = stall_on(p, ch, &s);
        if (r < 0 && (r = stall_across_nodes(p, ch, &s)) >= 0 && culprit < 0)
            node_only = !p->prog[nsc_rc_pidx(r, ch, 0)].seen;
        if (r < 0)
            continue;
        if (culprit < 0)
            culprit = r, step = s, ch0 = ch1 = ch;
        else if (r == culprit && s == step && ch == ch1 + 1)
            ch1 = ch;
    }
    if (culprit < 0)
        return;
    int32_t peer = p->prog[nsc_rc_pidx(culprit, ch0, 1)].peer;
    char chans[32];
    if (ch0 == ch1)
        snprintf(chans, sizeof chans, "channel %u", ch0);
    else
        snprintf(chans, sizeof chans, "channels %u-%u", ch0, ch1);
    nsc_problem *x = nsc_diag_add(f, NSC_SEV_STALL, "stall", comm, l->stuck_seq, culprit,
                                  "stall: rank %d (%s) stopped sending step %d to rank %d (%s) on %s of %s "
                                  "seq %" PRIu64 "%s%s%s; the other %" PRId64 " ranks wait behind it",
                                  culprit, nsc_rc_host_of(p, culprit), step, peer, nsc_rc_host_of(p, peer), chans,
                                  l->stuck_func, l->stuck_seq, node_only ? " (or a rank before it on " : "",
                                  node_only ? nsc_rc_host_of(p, culprit) : "",
                                  node_only ? ", whose legs inside the node have no proxy events)" : "",
                                  p->nranks - 1);
    if (!x)
        return;
    x->peer = peer;
    x->channel = ch0;
    x->step = step;
    nsc_diag_began_ns(x, f, l->stuck_start);
    snprintf(x->hosts[0], sizeof x->hosts[0], "%s", nsc_rc_host_of(p, culprit));
    snprintf(x->hosts[1], sizeof x->hosts[1], "%s", nsc_rc_host_of(p, peer));
    snprintf(x->figures, sizeof x->figures,
             "\"channels\":[%u,%u],\"last_sent_step\":%d,\"last_received_step\":%d", ch0, ch1,
             p->prog[nsc_rc_pidx(culprit, ch0, 1)].done, p->prog[nsc_rc_pidx(culprit, ch0, 0)].done);
}

