/* hosts.c: `ncclscope hosts`: the fleet view. Per host, across every job of
 * the collector's status, how often it was the place of a cause that
 * diagnose found (diagnose.h: the same analysis, run once per job): late
 * rank (host_late, gpu_late), either end of a slow link, a slow NIC, the
 * rank that stalled, a dead process, dropped events. Problems without a
 * cause class of these (mismatch, missing, lagging, ...) count as other.
 * The analysis runs here in the CLI, so there is no Prometheus metric of it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose.h"
#include "table.h"

#define HOSTS_MAX 4096

enum { H_LATE, H_SLOW_LINK, H_SLOW_NIC, H_STALL, H_DEAD, H_DROPPED, H_OTHER, H_NCOLS };

static const char *const col_names[H_NCOLS] = {"late", "slow_link", "slow_nic", "stall", "dead", "dropped",
                                               "other"};

typedef struct host_count {
    char host[64];
    uint64_t n[H_NCOLS];
    uint64_t total;
} host_count;

typedef struct tally {
    host_count *h;
    size_t n;
    uint64_t jobs;
} tally;

static int column_of(const char *kind)
{
    static const struct { const char *kind; int col; } map[] = {
        {"host_late", H_LATE}, {"gpu_late", H_LATE}, {"slow_link", H_SLOW_LINK}, {"slow_nic", H_SLOW_NIC},
        {"stall", H_STALL},    {"dead", H_DEAD},     {"dropped", H_DROPPED}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strcmp(map[i].kind, kind) == 0)
            return map[i].col;
    return H_OTHER;
}

static void count(tally *t, const char *host, int col)
{
    size_t i = 0;
    while (i < t->n && strcmp(t->h[i].host, host) != 0)
        i++;
    if (i == t->n) {
        if (t->n == HOSTS_MAX)
            return;
        memset(&t->h[i], 0, sizeof t->h[i]);
        snprintf(t->h[i].host, sizeof t->h[i].host, "%s", host);
        t->n++;
    }
    t->h[i].n[col]++;
    t->h[i].total++;
}

/* A slow link counts at both its ends; every other cause at its place. */
static void count_job(tally *t, const nsc_findings *f)
{
    for (size_t i = 0; i < f->n; i++) {
        const nsc_problem *p = &f->p[i];
        int col = column_of(p->kind);
        int ends = col == H_SLOW_LINK ? 2 : 1;
        for (int e = 0; e < ends; e++)
            if (p->hosts[e][0])
                count(t, p->hosts[e], col);
    }
}

/* Most causes first, then by name, so the same store gives the same table. */
static int by_total(const void *a, const void *b)
{
    const host_count *x = a, *y = b;
    if (x->total != y->total)
        return x->total < y->total ? 1 : -1;
    return strcmp(x->host, y->host);
}

static void print_tally(const nsc_cli_ctx *c, const tally *t)
{
    if (c->json) {
        printf("{\"jobs\":%" PRIu64 ",\"hosts\":[", t->jobs);
        for (size_t i = 0; i < t->n; i++) {
            printf("%s{\"host\":", i ? "," : "");
            nsc_json_write_str(stdout, t->h[i].host);
            for (int k = 0; k < H_NCOLS; k++)
                printf(",\"%s\":%" PRIu64, col_names[k], t->h[i].n[k]);
            printf(",\"total\":%" PRIu64 "}", t->h[i].total);
        }
        printf("]}\n");
        return;
    }
    static const nsc_col cols[] = {{"", "HOST"},     {"", "LATE"},    {"", "SLOW LINK"}, {"", "SLOW NIC"},
                                   {"", "STALL"},    {"", "DEAD"},    {"", "DROPPED"},   {"", "OTHER"},
                                   {"", "TOTAL"}};
    nsc_table *tb = nsc_table_new(cols, 9);
    for (size_t i = 0; tb && i < t->n; i++) {
        char v[9][64];
        const char *cells[9];
        snprintf(v[0], sizeof v[0], "%s", t->h[i].host);
        for (int k = 0; k < H_NCOLS; k++)
            snprintf(v[k + 1], sizeof v[0], "%" PRIu64, t->h[i].n[k]);
        snprintf(v[8], sizeof v[0], "%" PRIu64, t->h[i].total);
        for (int k = 0; k < 9; k++)
            cells[k] = v[k];
        nsc_table_add(tb, cells);
    }
    printf("%" PRIu64 " jobs analysed\n", t->jobs);
    if (tb)
        nsc_table_print(tb, stdout);
    nsc_table_free(tb);
}

/* diagnose's analysis of each job the status lists. */
static int tally_jobs(nsc_cli_ctx *c, const nsc_json *status, tally *t, nsc_findings *f)
{
    const nsc_json *jobs = nsc_json_get(status, "jobs");
    for (const nsc_json *j = nsc_json_first(jobs); j; j = nsc_json_next(jobs, j)) {
        const char *name = nsc_json_str(nsc_json_get(j, "job"));
        if (!name)
            continue;
        memset(f, 0, sizeof *f);
        f->c = c;
        int rc = nsc_diag_find(c, name, status, f);
        if (rc != NSC_EXIT_OK)
            return rc;
        count_job(t, f);
        t->jobs++;
    }
    return NSC_EXIT_OK;
}

int nsc_verb_hosts(nsc_cli_ctx *c)
{
    tally t = {calloc(HOSTS_MAX, sizeof(host_count)), 0, 0};
    nsc_findings *f = calloc(1, sizeof *f);
    nsc_doc st = {0};
    int rc = NSC_EXIT_FAIL;
    if (!t.h || !f)
        snprintf(c->err, sizeof c->err, "out of memory");
    else if ((rc = nsc_cli_fetch_doc(c, "status", NULL, &st)) == NSC_EXIT_OK &&
             (rc = tally_jobs(c, nsc_json_root(&st.doc), &t, f)) == NSC_EXIT_OK) {
        qsort(t.h, t.n, sizeof t.h[0], by_total);
        print_tally(c, &t);
    }
    nsc_doc_free(&st);
    free(f);
    free(t.h);
    return rc;
}
