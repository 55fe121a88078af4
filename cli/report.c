/* report.c: the verbs that show one JSON answer to a person: status, watch,
 * comms, collectives, topology, stats, diagnose.
 *
 * With --json the answer is printed unchanged. Otherwise it is rendered:
 * scalar members as "name: value" lines, arrays of objects as tables (the
 * columns are the members of the first element), nested objects as sections.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "table.h"

#define MAX_COLS 14

static int is_scalar(const nsc_json *v) { return v->kind != NSC_JSON_ARRAY && v->kind != NSC_JSON_OBJECT; }

static void render_table(const nsc_json *arr)
{
    const nsc_json *first = nsc_json_first(arr);
    nsc_col cols[MAX_COLS];
    size_t n = 0;
    for (const nsc_json *m = nsc_json_first(first); m && n < MAX_COLS; m = nsc_json_next(first, m))
        if (is_scalar(m))
            cols[n++] = (nsc_col){m->key, m->key};
    nsc_table *t = nsc_table_new(cols, n);
    if (!t)
        return;
    for (const nsc_json *e = first; e; e = nsc_json_next(arr, e))
        if (e->kind == NSC_JSON_OBJECT)
            nsc_table_add_json(t, e);
    nsc_table_print(t, stdout);
    nsc_table_free(t);
}

static void render(const nsc_json *v, int indent)
{
    char cell[128];
    if (v->kind == NSC_JSON_ARRAY) {
        const nsc_json *first = nsc_json_first(v);
        if (!first)
            printf("%*s(none)\n", indent, "");
        else if (first->kind == NSC_JSON_OBJECT)
            render_table(v);
        else {
            printf("%*s", indent, "");
            for (const nsc_json *e = first; e; e = nsc_json_next(v, e)) {
                nsc_json_cell(e, cell, sizeof cell);
                printf("%s%s", cell, nsc_json_next(v, e) ? ", " : "\n");
            }
        }
        return;
    }
    if (v->kind != NSC_JSON_OBJECT) {
        nsc_json_cell(v, cell, sizeof cell);
        printf("%*s%s\n", indent, "", cell);
        return;
    }
    for (const nsc_json *m = nsc_json_first(v); m; m = nsc_json_next(v, m))
        if (is_scalar(m)) {
            nsc_json_cell(m, cell, sizeof cell);
            printf("%*s%s: %s\n", indent, "", m->key, cell);
        }
    for (const nsc_json *m = nsc_json_first(v); m; m = nsc_json_next(v, m))
        if (!is_scalar(m)) {
            printf("\n%*s%s:\n", indent, "", m->key);
            render(m, indent + 2);
        }
}

/* Fetch an endpoint with the verb's parameters and show it. */
static int show(nsc_cli_ctx *c, const char *endpoint)
{
    char qs[2048];
    int rc = nsc_cli_query(c, qs, sizeof qs);
    if (rc)
        return rc;
    if (c->json)
        return nsc_cli_fetch_raw(c, endpoint, qs);
    nsc_doc d;
    rc = nsc_cli_fetch_doc(c, endpoint, qs, &d);
    if (rc == NSC_EXIT_OK)
        render(nsc_json_root(&d.doc), 0);
    nsc_doc_free(&d);
    return rc;
}

int nsc_verb_status(nsc_cli_ctx *c) { return show(c, "status"); }
int nsc_verb_comms(nsc_cli_ctx *c) { return show(c, "comms"); }
int nsc_verb_collectives(nsc_cli_ctx *c) { return show(c, "collectives"); }
int nsc_verb_topology(nsc_cli_ctx *c) { return show(c, "topology"); }
int nsc_verb_stats(nsc_cli_ctx *c) { return show(c, "stats"); }

/* ---- watch ---- */

typedef struct watching {
    nsc_cli_ctx *c;
    int tty;
    unsigned long long left;  /* summaries still to show; 0: no limit */
} watching;

static int on_event(void *arg, const char *event, const char *data)
{
    watching *w = arg;
    if (strcmp(event, "summary") != 0)
        return 0;
    if (w->c->json) {
        printf("%s\n", data);
    } else {
        nsc_json_doc doc;
        nsc_json_error e;
        if (nsc_json_parse(data, strlen(data), NULL, &doc, &e) != 0) {
            snprintf(w->c->err, sizeof w->c->err, "bad JSON in a live summary: %s at byte %zu", e.msg,
                     e.offset);
            return 1;
        }
        if (w->tty)
            fputs("\033[H\033[J", stdout);
        render(nsc_json_root(&doc), 0);
        if (!w->tty)
            putchar('\n');
        nsc_json_free(&doc);
    }
    fflush(stdout);
    return w->left && --w->left == 0 ? 2 : 0;
}

int nsc_verb_watch(nsc_cli_ctx *c)
{
    char qs[2048];
    watching w = {c, isatty(STDOUT_FILENO), 0};
    int rc = nsc_cli_u64_opt(c, "count", &w.left);
    if (rc || (rc = nsc_cli_query(c, qs, sizeof qs)))
        return rc;
    rc = nsc_cli_fetch_sse(c, "live", qs, on_event, &w);
    return rc == NSC_EXIT_FAIL && w.left == 0 && !c->err[0] ? NSC_EXIT_OK : rc;
}
