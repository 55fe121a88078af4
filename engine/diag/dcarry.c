/* dcarry.c: what a root-cause pass or a polled diagnose carries from one
 * read of a job to the next (diag.h, nsc_rc_carry): per communicator, the
 * settled point the next read starts from and the tallies of what went
 * below it (late ranks, links' step times, the collectives count), so that
 * a read of what came since answers as the whole job's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dint.h"
#include "grow.h"
#include "statusdoc.h"

typedef nsc_findings findings;

void nsc_rc_carry_free(nsc_rc_carry *s)
{
    for (size_t i = 0; i < s->n; i++) {
        nsc_rc_late_free(s->v[i].late);
        nsc_rc_links_free(s->v[i].links);
    }
    free(s->v);
    *s = (nsc_rc_carry){0};
}

/* The mark of comm in s, added empty when new; NULL without memory. */
struct nsc_rc_mark *nsc_diag_carry_mark(nsc_rc_carry *s, const char *comm)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->v[i].comm, comm) == 0)
            return &s->v[i];
    if (nsc_grow(&s->v, s->n, &s->cap, sizeof *s->v, 8))
        return NULL;
    struct nsc_rc_mark *m = &s->v[s->n++];
    *m = (struct nsc_rc_mark){0};
    snprintf(m->comm, sizeof m->comm, "%s", comm);
    return m;
}

/* With f->mark: the first seq of communicator id the pass reads, the
 * settled point of the last pass when above the window's start lo, but
 * never above the live state's top + 1 (its top went back) and not for a
 * communicator it does not list. */
uint64_t nsc_diag_from_settled(const findings *f, const char *id, uint64_t lo)
{
    uint64_t top = f->mark && f->status ? nsc_status_comm_max_seq(f->status, f->job, id) : 0;
    if (!top)
        return lo;
    uint64_t at = f->mark->settled < top + 1 ? f->mark->settled : top + 1;
    return at > lo ? at : lo;
}

/* Collectives that went below the pass's first seq, into a carried tally. */
typedef struct left {
    nsc_rc_late *late;
    uint64_t *collectives;
    uint64_t first_seq;  /* the ones before it only give the next its previous */
} left;

static int on_left(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    const left *l = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (kind && strcmp(kind, "collective") == 0 && nsc_diag_num(v, "seq") >= l->first_seq) {
        nsc_rc_late_add(l->late, v);
        (*l->collectives)++;
    }
    return 0;
}

/* The seqs [lo, hi] of q into out, read from lo - 1: a rank's lateness at a
 * collective is split by the end of its previous one (docs/api-figures.md,
 * "Figures"), which a read from lo would not hold for lo. */
int nsc_diag_with_previous(char *out, size_t cap, const char *q, uint64_t lo, uint64_t hi)
{
    char seqs[48];
    snprintf(seqs, sizeof seqs, "%" PRIu64 "-%" PRIu64, lo ? lo - 1 : 0, hi);
    return nsc_diag_qs_seqs(out, cap, q, seqs);
}

/* Forget what m carried of the late ranks and links: the next pass
 * tallies again from the communicator's start. */
static void drop_late(struct nsc_rc_mark *m)
{
    nsc_rc_late_free(m->late);
    nsc_rc_links_free(m->links);
    m->late = NULL;
    m->links = NULL;
    m->below = 0;
    m->collectives = 0;
}

/* With f->mark: the collectives and ledger records that went below the
 * pass's first seq since the last pass (it settled, or left the window),
 * seqs [below, lo) of query q, added to what the mark carried, and the
 * pass's own tally (f->late) starts from it, so that a late rank's figures
 * are the whole job's (its links' are, in nsc_rc_comm). A pass that starts
 * below what was carried (the live state's top went back) or a failed read
 * starts over. */
int nsc_diag_carry_late(findings *f, const char *q, uint64_t lo, int64_t nranks)
{
    struct nsc_rc_mark *m = f->mark;
    char cq[2048], span[48];
    if (!m || !f->late)
        return NSC_DIAG_OK;
    if (lo < m->below)
        drop_late(m);
    if (lo > m->below) {
        snprintf(span, sizeof span, "%" PRIu64 "-%" PRIu64, m->below, lo - 1);
        if (nsc_diag_with_previous(cq, sizeof cq, q, m->below, lo - 1) != 0) {
            snprintf(f->src->err, sizeof f->src->err, "query string too long");
            return NSC_DIAG_FAIL;
        }
        if (!m->late && !(m->late = nsc_rc_late_new(nranks))) {
            snprintf(f->src->err, sizeof f->src->err, "out of memory");
            return NSC_DIAG_FAIL;
        }
        left l = {m->late, &m->collectives, m->below};
        int rc = nsc_diag_fetch_pages(f->src, "collectives", cq, NULL, on_left, &l);
        if (rc == NSC_DIAG_OK)
            rc = nsc_rc_links_fold(f, &m->links, nranks, q, span);
        if (rc != NSC_DIAG_OK) {
            drop_late(m);
            return rc;
        }
        m->below = lo;
    }
    if (m->late && nsc_rc_late_copy(f->late, m->late) != 0)
        drop_late(m);
    f->collectives += m->collectives;
    return NSC_DIAG_OK;
}
