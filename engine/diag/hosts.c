/* hosts.c: the fleet view (diag.h). Per host, across every job of the
 * status, how often it was the place of a cause that diagnose found (the
 * same analysis, run once per job): late rank (host_late, gpu_late), either
 * end of a slow link, a slow NIC, the rank that stalled, a dead process,
 * dropped events. Problems without a cause class of these (mismatch,
 * missing, lagging, ...) count as other. At most NSC_DIAG_HOSTS_MAX hosts.
 * The collector's root-cause metrics (rcmetrics.c) tally with it too.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"

#define NSC_DIAG_HOSTS_MAX 4096

const char *const nsc_diag_host_cols[NSC_HOST_NCOLS] = {"late", "slow_link", "slow_nic", "stall",
                                                        "dead", "dropped",   "other"};

int nsc_diag_host_col(const char *kind)
{
    static const struct { const char *kind; int col; } map[] = {
        {"host_late", NSC_HOST_LATE}, {"gpu_late", NSC_HOST_LATE}, {"slow_link", NSC_HOST_SLOW_LINK},
        {"slow_nic", NSC_HOST_SLOW_NIC}, {"stall", NSC_HOST_STALL}, {"dead", NSC_HOST_DEAD},
        {"dropped", NSC_HOST_DROPPED}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].kind, kind) == 0)
            return map[i].col;
    return NSC_HOST_OTHER;
}

void nsc_diag_hosts_add(nsc_diag_hosts *t, const char *host, int col)
{
    size_t i = 0;
    while (i < t->n && strcmp(t->h[i].host, host) != 0)
        i++;
    if (i == t->n) {
        if (t->n == NSC_DIAG_HOSTS_MAX)
            return;
        memset(&t->h[i], 0, sizeof t->h[i]);
        snprintf(t->h[i].host, sizeof t->h[i].host, "%s", host);
        t->n++;
    }
    if (col < 0)
        return;
    t->h[i].n[col]++;
    t->h[i].total++;
}

/* A slow link counts at both its ends; every other cause at its place. */
void nsc_diag_hosts_count(nsc_diag_hosts *t, const nsc_problem *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int col = nsc_diag_host_col(p[i].kind);
        int ends = col == NSC_HOST_SLOW_LINK ? 2 : 1;
        for (int e = 0; e < ends; e++)
            if (p[i].hosts[e][0])
                nsc_diag_hosts_add(t, p[i].hosts[e], col);
    }
}

/* Most causes first, then by name, so the same store gives the same table. */
static int by_total(const void *a, const void *b)
{
    const nsc_diag_host *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return strcmp(x->host, y->host);
}

void nsc_diag_hosts_sort(nsc_diag_hosts *t) { qsort(t->h, t->n, sizeof t->h[0], by_total); }

int nsc_diag_hosts_new(nsc_diag_hosts *t)
{
    memset(t, 0, sizeof *t);
    t->h = calloc(NSC_DIAG_HOSTS_MAX, sizeof *t->h);
    return t->h ? NSC_DIAG_OK : NSC_DIAG_FAIL;
}

/* diagnose's analysis of each job the status lists. */
static int tally_jobs(nsc_diag_src *s, const nsc_json *status, nsc_diag_hosts *t, nsc_findings *f)
{
    const nsc_json *jobs = nsc_json_get(status, "jobs");
    for (const nsc_json *j = nsc_json_first(jobs); j; j = nsc_json_next(jobs, j)) {
        const char *name = nsc_json_str(nsc_json_get(j, "job"));
        if (!name)
            continue;
        memset(f, 0, sizeof *f);
        f->src = s;
        int rc = nsc_diag_find(name, status, f);
        if (rc != NSC_DIAG_OK)
            return rc;
        nsc_diag_hosts_count(t, f->p, f->n);
        t->jobs++;
    }
    return NSC_DIAG_OK;
}

int nsc_diag_hosts_get(nsc_diag_src *s, nsc_diag_hosts *t)
{
    int rc = nsc_diag_hosts_new(t);
    nsc_findings *f = calloc(1, sizeof *f);
    nsc_doc st = {0};
    if (rc != NSC_DIAG_OK || !f) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    } else if ((rc = nsc_diag_fetch_doc(s, "status", "", &st)) == NSC_DIAG_OK &&
             (rc = tally_jobs(s, nsc_json_root(&st.doc), t, f)) == NSC_DIAG_OK)
        nsc_diag_hosts_sort(t);
    nsc_doc_free(&st);
    free(f);
    return rc;
}

void nsc_diag_hosts_free(nsc_diag_hosts *t)
{
    free(t->h);
    memset(t, 0, sizeof *t);
}

void nsc_diag_hosts_write_json(const nsc_diag_hosts *t, FILE *out)
{
    fprintf(out, "{\"jobs\":%" PRIu64 ",\"hosts\":[", t->jobs);
    for (size_t i = 0; i < t->n; i++) {
        fprintf(out, "%s{\"host\":", i ? "," : "");
        nsc_json_write_str(out, t->h[i].host);
        for (int k = 0; k < NSC_HOST_NCOLS; k++)
            fprintf(out, ",\"%s\":%" PRIu64, nsc_diag_host_cols[k], t->h[i].n[k]);
        fprintf(out, ",\"total\":%" PRIu64 "}", t->h[i].total);
    }
    fputs("]}\n", out);
}
