/* dfind.c: adding a problem to the findings, and reading the numbers the
 * analyses' JSON documents carry (dfind.h).
 *
 * Below every analysis (diagnose.c, rootcause.c and rc*.c, statusdoc.c):
 * they all call these and none of these calls them back.
 */
#include "dfind.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "qs.h"
#include "utc.h"

nsc_problem *nsc_diag_add(nsc_findings *f, int severity, const char *kind, const char *comm, uint64_t seq,
                          int64_t rank, const char *fmt, ...)
{
    char text[sizeof f->p[0].text];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < f->n; i++) /* one problem seen from two collectives (a mismatch) */
        if (strcmp(f->p[i].text, text) == 0 && strcmp(f->p[i].kind, kind) == 0 && strcmp(f->p[i].comm, comm) == 0)
            return NULL;
    if (f->n == NSC_DIAG_MAX_PROBLEMS) {
        f->dropped++;
        return NULL;
    }
    nsc_problem *p = &f->p[f->n];
    memset(p, 0, sizeof *p);
    p->order = f->n++;
    p->severity = severity;
    p->seq = seq;
    p->rank = rank;
    p->peer = p->channel = p->step = -1;
    snprintf(p->kind, sizeof p->kind, "%s", kind);
    snprintf(p->comm, sizeof p->comm, "%s", comm);
    memcpy(p->text, text, sizeof text);
    return p;
}

void nsc_diag_began_ns(nsc_problem *p, const nsc_findings *f, uint64_t t_ns)
{
    if (p && f->has_wall && t_ns)
        nsc_utc_iso((int64_t)t_ns + f->wall_ns, p->began, sizeof p->began);
}

int nsc_diag_qs_seqs(char *out, size_t cap, const char *q, const char *seqs)
{
    if ((size_t)snprintf(out, cap, "%s", q) >= cap)
        return -1;
    return seqs[0] ? nsc_qs_add(out, cap, "seq", seqs) : 0;
}

uint64_t nsc_diag_num(const nsc_json *o, const char *key)
{
    uint64_t v = 0;
    nsc_json_u64(nsc_json_get(o, key), &v);
    return v;
}

int64_t nsc_diag_num_or(const nsc_json *o, const char *key, int64_t none)
{
    int64_t v;
    return nsc_json_i64(nsc_json_get(o, key), &v) == 0 ? v : none;
}

void nsc_diag_compact(nsc_findings *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->p[i].kind[0])
            f->p[n++] = f->p[i];
    f->n = n;
}
