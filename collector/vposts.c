/* vposts.c: the verdicts a collector posts (see vposts.h). */
#include "vposts.h"

#include <stdlib.h>
#include <string.h>

#include "grow.h"

/* What makes a verdict the same one at the next pass: its kind and place,
 * not its figures or text (durations that grow while it lasts). */
typedef struct verdict_key {
    char kind[24], comm[24];
    int64_t rank, peer, channel;
    char hosts[2][64];
} verdict_key;

struct nsc_vpost {
    verdict_key k;
    nsc_problem last;     /* as the last pass that held it found it */
    uint64_t since_ns;    /* held by every pass since (monotonic), if holding */
    int64_t found_ns;     /* ... the wall clock then */
    int held, holding;    /* held by this pass; by every pass since since_ns */
    int settled, posted;
};

static verdict_key key_of(const nsc_problem *p)
{
    verdict_key k;
    memset(&k, 0, sizeof k);
    memcpy(k.kind, p->kind, sizeof k.kind);
    memcpy(k.comm, p->comm, sizeof k.comm);
    memcpy(k.hosts, p->hosts, sizeof k.hosts);
    k.rank = p->rank, k.peer = p->peer, k.channel = p->channel;
    return k;
}

int nsc_vposts_same(const nsc_problem *a, const nsc_problem *b)
{
    verdict_key x = key_of(a), y = key_of(b);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* p's verdict: its index in v, added (*fresh set) if new; -1 out of memory. */
static ptrdiff_t find(nsc_vposts *v, const nsc_problem *p, int *fresh)
{
    verdict_key k = key_of(p);
    size_t j = 0;
    while (j < v->n && memcmp(&v->v[j].k, &k, sizeof k))
        j++;
    *fresh = j == v->n;
    if (*fresh) {
        if (nsc_grow(&v->v, v->n, &v->cap, sizeof *v->v, 8))
            return -1;
        v->v[v->n++] = (nsc_vpost){.k = k};
    }
    return (ptrdiff_t)j;
}

/* The pass's problems: each one's verdict held, its run of passes begun if
 * it was not holding. */
static int hold(nsc_vposts *v, const nsc_problem *p, size_t n, uint64_t now_ns, int64_t wall_ns,
                const nsc_problem **fresh, size_t *nfresh)
{
    int rc = 0;
    for (size_t i = 0; i < v->n; i++)
        v->v[i].held = 0;
    for (size_t i = 0; i < n; i++) {
        int is_new;
        ptrdiff_t j = find(v, &p[i], &is_new);
        if (j < 0) {
            rc = -1;
            continue;
        }
        nsc_vpost *e = &v->v[j];
        e->last = p[i];
        e->held = 1;
        if (!e->holding)
            e->holding = 1, e->since_ns = now_ns, e->found_ns = wall_ns;
        if (is_new)
            fresh[(*nfresh)++] = &p[i];
    }
    return rc;
}

int nsc_vposts_pass(nsc_vposts *v, const nsc_problem *p, size_t n, uint64_t now_ns, int64_t wall_ns, uint64_t settle_ns,
                    int announces, const nsc_problem **fresh, size_t *nfresh, nsc_vposts_post_fn post, void *arg)
{
    *nfresh = 0;
    int rc = hold(v, p, n, now_ns, wall_ns, fresh, nfresh);
    for (size_t i = 0; i < v->n; i++) {
        nsc_vpost *e = &v->v[i];
        /* gone before it settled: a partial view's, replaced by the right one */
        e->holding &= e->held;
        e->settled |= e->holding && now_ns - e->since_ns >= settle_ns;
        if (announces && e->settled && !e->posted)
            e->posted = post(arg, &e->last, e->found_ns) == 0;
    }
    return rc;
}

uint64_t nsc_vposts_due(const nsc_vposts *v, uint64_t settle_ns)
{
    uint64_t due = 0;
    for (size_t i = 0; i < v->n; i++) {
        const nsc_vpost *e = &v->v[i];
        if (e->holding && !e->settled && (!due || e->since_ns + settle_ns < due))
            due = e->since_ns + settle_ns;
    }
    return due;
}

void nsc_vposts_free(nsc_vposts *v)
{
    free(v->v);
    memset(v, 0, sizeof *v);
}
