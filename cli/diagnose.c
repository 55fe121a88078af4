/* diagnose.c: `ncclscope diagnose`, `links` and `hosts`: the analysis of
 * engine/diag/ (diag.h) on the verb's source, printed as text, or as its
 * JSON document with --json (the collector's /api/v1/{diagnose,links,hosts}
 * give the same).
 *
 * diagnose: a one-line verdict naming the job and the first problem's cause
 * and place, then the other problems; exits 1 when it found a problem. links: every network
 * link of a communicator with its step time, bandwidth and state. hosts:
 * per host, across the collector's jobs, how often diagnose placed a cause
 * there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "table.h"
#include "units.h"

int nsc_verb_diagnose(nsc_cli_ctx *c)
{
    char qs[2048];
    nsc_diag_src s;
    int rc = nsc_cli_query(c, qs, sizeof qs);
    if (rc || (rc = nsc_cli_diag_src(c, &s)))
        return rc;
    nsc_findings *f = calloc(1, sizeof *f);
    if (!f) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return NSC_EXIT_FAIL;
    }
    f->src = &s;
    f->only = nsc_cli_get(c->args, "comm");
    rc = nsc_cli_diag_rc(c, &s, nsc_diag_find(nsc_cli_get(c->args, "job"), NULL, f));
    if (rc == NSC_EXIT_OK && c->json) {
        nsc_diag_write_json(f, stdout);
    } else if (rc == NSC_EXIT_OK) {
        char verdict[400];
        nsc_diag_verdict(f, verdict, sizeof verdict);
        printf("job %s: %s%s%s\n", f->job, nsc_paint_on(c->color, f->n ? NSC_PAINT_BAD : NSC_PAINT_GOOD), verdict,
               nsc_paint_off(c->color));
        /* The verdict states the first problem; the others follow it. */
        for (size_t i = 1; i < f->n; i++)
            printf("  also [%s] comm %s: %s\n", f->p[i].kind, f->p[i].comm, f->p[i].text);
        if (f->dropped)
            printf("  ... and %zu more\n", f->dropped);
    }
    if (rc == NSC_EXIT_OK)
        rc = f->n ? NSC_EXIT_FAIL : NSC_EXIT_OK;
    free(f);
    return rc;
}

static void print_links(const nsc_diag_links *l, int raw, int color)
{
    printf("job %s, comm %s\n", l->job, l->comm);
    printf("%-6s %-12s %-6s %-12s %3s %7s %10s %10s %6s %s\n", "FROM", "HOST", "TO", "HOST", "CH", "STEPS",
           raw ? "STEP_NS" : "STEP", raw ? "GBPS" : "BANDWIDTH", "xREF", "STATE");
    for (size_t i = 0; i < l->n; i++) {
        const nsc_diag_link *k = &l->link[i];
        char step[32], bw[32];
        if (raw) {
            snprintf(step, sizeof step, "%" PRIu64, k->step_ns);
            snprintf(bw, sizeof bw, "%.3f", nsc_diag_link_gbps(k));
        } else {
            nsc_fmt_unit(&(nsc_units){0}, NSC_UNIT_NS, (double)k->step_ns, step, sizeof step);
            nsc_fmt_unit(&(nsc_units){0}, NSC_UNIT_GBPS, nsc_diag_link_gbps(k), bw, sizeof bw);
        }
        nsc_paint p = k->state == NSC_LINK_SLOW ? NSC_PAINT_BAD : k->state == NSC_LINK_OK ? NSC_PAINT_GOOD : NSC_PAINT_DOUBT;
        printf("%-6d %-12s %-6d %-12s %3u %7zu %10s %10s %6.2f %s%s%s\n", k->src, k->src_host, k->dst, k->dst_host,
               k->channel, k->steps, step, bw, nsc_diag_link_ratio(l, k), nsc_paint_on(color, p),
               nsc_diag_link_state_names[k->state], nsc_paint_off(color));
    }
}

int nsc_verb_links(nsc_cli_ctx *c)
{
    nsc_diag_src s;
    nsc_diag_links l;
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    rc = nsc_cli_diag_rc(c, &s, nsc_diag_links_get(&s, nsc_cli_get(c->args, "job"), nsc_cli_get(c->args, "comm"), &l));
    if (rc == NSC_EXIT_OK && c->json)
        nsc_diag_links_write_json(&l, stdout);
    else if (rc == NSC_EXIT_OK)
        print_links(&l, c->units.raw, c->color);
    nsc_diag_links_free(&l);
    return rc;
}

static void print_hosts(const nsc_diag_hosts *t)
{
    static const nsc_col cols[] = {{"", "HOST"},     {"", "LATE"},    {"", "SLOW LINK"}, {"", "SLOW NIC"},
                                   {"", "STALL"},    {"", "DEAD"},    {"", "DROPPED"},   {"", "OTHER"},
                                   {"", "TOTAL"}};
    static const nsc_units counts = {0};
    nsc_table *tb = nsc_table_new(cols, 9, &counts);
    for (size_t i = 0; tb && i < t->n; i++) {
        char v[9][64];
        const char *cells[9];
        snprintf(v[0], sizeof v[0], "%s", t->h[i].host);
        for (int k = 0; k < NSC_HOST_NCOLS; k++)
            snprintf(v[k + 1], sizeof v[0], "%" PRIu64, t->h[i].n[k]);
        snprintf(v[8], sizeof v[0], "%" PRIu64, t->h[i].total);
        for (int k = 0; k < 9; k++)
            cells[k] = v[k];
        nsc_table_add(tb, cells);
    }
    printf("%" PRIu64 " %s analysed\n", t->jobs, nsc_noun(t->jobs, "job", "jobs"));
    if (tb)
        nsc_table_print(tb, stdout);
    nsc_table_free(tb);
}

int nsc_verb_hosts(nsc_cli_ctx *c)
{
    nsc_diag_src s;
    nsc_diag_hosts t;
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    rc = nsc_cli_diag_rc(c, &s, nsc_diag_hosts_get(&s, &t));
    if (rc == NSC_EXIT_OK && c->json)
        nsc_diag_hosts_write_json(&t, stdout);
    else if (rc == NSC_EXIT_OK)
        print_hosts(&t);
    nsc_diag_hosts_free(&t);
    return rc;
}
