/* report.c: the verbs that show one query answer to a person: comms,
 * collectives, topology, stats, p2p, ledger.
 *
 * With --json the answer is printed unchanged. Otherwise it is rendered:
 * scalar members as "name: value" lines, arrays of objects as tables (the
 * columns are the members of the first element), nested objects as sections.
 * collectives and ledger are paged NDJSON: one table row per record.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "table.h"

#define MAX_COLS 14

static int is_scalar(const nsc_json *v) { return v->kind != NSC_JSON_ARRAY && v->kind != NSC_JSON_OBJECT; }

static void render_table(const nsc_json *arr, const nsc_units *u)
{
    const nsc_json *first = nsc_json_first(arr);
    nsc_col cols[MAX_COLS];
    size_t n = 0;
    for (const nsc_json *m = nsc_json_first(first); m && n < MAX_COLS; m = nsc_json_next(first, m))
        if (is_scalar(m))
            cols[n++] = (nsc_col){m->key, NULL};
    nsc_table *t = nsc_table_new(cols, n, u);
    if (!t)
        return;
    for (const nsc_json *e = first; e; e = nsc_json_next(arr, e))
        if (e->kind == NSC_JSON_OBJECT)
            nsc_table_add_json(t, e);
    nsc_table_print(t, stdout);
    nsc_table_free(t);
}

static void render(const nsc_json *v, int indent, const nsc_units *u)
{
    char cell[128];
    if (v->kind == NSC_JSON_ARRAY) {
        const nsc_json *first = nsc_json_first(v);
        if (!first)
            printf("%*s(none)\n", indent, "");
        else if (first->kind == NSC_JSON_OBJECT)
            render_table(v, u);
        else {
            printf("%*s", indent, "");
            for (const nsc_json *e = first; e; e = nsc_json_next(v, e)) {
                nsc_json_cell(e, u, cell, sizeof cell);
                printf("%s%s", cell, nsc_json_next(v, e) ? ", " : "\n");
            }
        }
        return;
    }
    if (v->kind != NSC_JSON_OBJECT) {
        nsc_json_cell(v, u, cell, sizeof cell);
        printf("%*s%s\n", indent, "", cell);
        return;
    }
    for (const nsc_json *m = nsc_json_first(v); m; m = nsc_json_next(v, m))
        if (is_scalar(m) && strcmp(m->key, "wall_offset_ns") != 0) {  /* shown as UTC times, not itself */
            nsc_json_cell(m, u, cell, sizeof cell);
            printf("%*s%s: %s\n", indent, "", m->key, cell);
        }
    for (const nsc_json *m = nsc_json_first(v); m; m = nsc_json_next(v, m))
        if (!is_scalar(m)) {
            printf("\n%*s%s:\n", indent, "", m->key);
            render(m, indent + 2, u);
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
    if (rc == NSC_EXIT_OK) {
        nsc_units_wall(&c->units, nsc_json_root(&d.doc));
        render(nsc_json_root(&d.doc), 0, &c->units);
    }
    nsc_doc_free(&d);
    return rc;
}

static const nsc_col coll_cols[] = {
    {"seq", NULL},        {"func", NULL},        {"bytes", NULL},         {"ranks_seen", "RANKS"},
    {"duration_ns", NULL}, {"skew_ns", NULL},    {"last_rank", "LAST"},   {"busbw_gbps", NULL},
    {"duration_err_ns", NULL}, {"skew_err_ns", NULL}, {"uncertain", NULL},
    {"algo", NULL},       {"proto", NULL},       {"graph_captured", "GRAPH"}, {"mismatch", NULL},
    {"start_ns", NULL}};

static const nsc_col ledger_cols[] = {
    {"seq", NULL},          {"rank", NULL},         {"func", NULL},          {"state", NULL},
    {"bytes", NULL},        {"enqueue_ns", NULL},   {"gpu_start_ns", NULL},  {"gpu_end_ns", NULL},
    {"done_ns", NULL},      {"gpu_bound_ns", "GPU_BOUND"}, {"dropped", NULL}};

typedef struct page_view {
    nsc_cli_ctx *c;
    nsc_table *t;
    const char *kind;  /* the records that are rows */
} page_view;

static int page_row(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    page_view *pv = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (kind && strcmp(kind, pv->kind) == 0)
        return nsc_table_add_json(pv->t, v) ? NSC_EXIT_FAIL : 0;
    if (kind && strcmp(kind, "header") == 0) {
        uint64_t nranks = 0;
        nsc_json_u64(nsc_json_get(v, "nranks"), &nranks);
        nsc_units_wall(&pv->c->units, v);
        printf("job %s, comm %s (%s), %" PRIu64 " ranks\n", nsc_json_str_or(v, "job", "?"),
               nsc_json_str_or(v, "comm", "?"), nsc_json_str_or(v, "name", ""), nranks);
    }
    return 0;
}

/* A paged endpoint's records of one kind (what, for people) as a table,
 * ordered by --sort and cut at --top, or (--json) its answer as is. */
static int show_pages(nsc_cli_ctx *c, const char *endpoint, const char *kind, const char *what, const nsc_col *cols,
                      size_t ncols)
{
    char qs[2048];
    int rc = nsc_cli_query(c, qs, sizeof qs);
    if (rc)
        return rc;
    unsigned long long top = 0;
    const char *sort = nsc_cli_get(c->args, "sort");
    if ((rc = nsc_cli_u64_opt(c, "top", &top)))
        return rc;
    if (c->json && (sort || top)) {
        snprintf(c->err, sizeof c->err, "--sort and --top order the table; --json gives every record as is");
        return NSC_EXIT_USAGE;
    }
    if (c->json)
        return nsc_cli_fetch_raw(c, endpoint, qs);
    nsc_table *t = nsc_table_new(cols, ncols, &c->units);
    if (!t)
        return NSC_EXIT_FAIL;
    char names[256];
    if (nsc_table_order(t, sort, (size_t)top, names, sizeof names) != 0) {
        snprintf(c->err, sizeof c->err, "--sort wants one of %s (got '%s')", names, sort);
        nsc_table_free(t);
        return NSC_EXIT_USAGE;
    }
    page_view pv = {c, t, kind};
    rc = nsc_cli_fetch_pages(c, endpoint, qs, page_row, &pv);
    if (rc == NSC_EXIT_OK) {
        if (nsc_table_rows(t)) {
            nsc_table_print(t, stdout);
        } else {
            snprintf(c->err, sizeof c->err, "no %s matched", what);
            rc = NSC_EXIT_FAIL;
        }
    }
    nsc_table_free(t);
    return rc;
}

int nsc_verb_collectives(nsc_cli_ctx *c)
{
    return show_pages(c, "collectives", "collective", "collectives", coll_cols, sizeof coll_cols / sizeof coll_cols[0]);
}

int nsc_verb_ledger(nsc_cli_ctx *c)
{
    return show_pages(c, "ledger", "record", "ledger records", ledger_cols, sizeof ledger_cols / sizeof ledger_cols[0]);
}

int nsc_verb_comms(nsc_cli_ctx *c) { return show(c, "comms"); }
/* An id the store may not know (-1): the number, or "unknown". */
static const char *known(const nsc_json *v, char *buf, size_t cap)
{
    int64_t x;
    if (!v || nsc_json_i64(v, &x) != 0 || x < 0)
        return "unknown";
    snprintf(buf, cap, "%" PRId64, x);
    return buf;
}

/* One channel's ring in order, closed when complete; else the legs seen,
 * saying that the ring's order within a node is not known (ProxyOps trace
 * the network legs only). */
static void print_ring(const nsc_json *ch)
{
    const nsc_json *ring = nsc_json_get(ch, "ring"), *peers = nsc_json_get(ch, "send_peers");
    int complete = nsc_json_get(ch, "complete") && nsc_json_get(ch, "complete")->kind == NSC_JSON_TRUE;
    char buf[32];
    printf("  channel %s: ", known(nsc_json_get(ch, "channel"), buf, sizeof buf));
    if (complete) {
        for (const nsc_json *r = nsc_json_first(ring); r; r = nsc_json_next(ring, r))
            printf("%s -> ", known(r, buf, sizeof buf));
        printf("%s (ring)\n", known(nsc_json_first(ring), buf, sizeof buf));
        return;
    }
    for (const nsc_json *p = nsc_json_first(peers); p; p = nsc_json_next(peers, p)) {
        printf("%s%s", p == nsc_json_first(peers) ? "" : ", ", known(nsc_json_at(p, 0), buf, sizeof buf));
        printf(" -> %s", known(nsc_json_at(p, 1), buf, sizeof buf));
    }
    printf(" (network legs only: the ring within each node is unknown, ProxyOps trace only the network legs)\n");
}

/* The topology as people draw it: ranks per node with GPU and local rank,
 * each channel's ring, and the edges with transport and health. */
static void render_topology(const nsc_json *t, const nsc_units *u)
{
    const nsc_json *ranks = nsc_json_get(t, "ranks"), *nodes = nsc_json_get(t, "nodes");
    const nsc_json *channels = nsc_json_get(t, "channels"), *edges = nsc_json_get(t, "edges");
    char a[32], b[32];
    const nsc_json *nranks = nsc_json_get(t, "nranks");
    int64_t nr = 0;
    nsc_json_i64(nranks, &nr);
    unsigned nnodes = nodes ? nodes->count : 0;
    printf("job %s, comm %s (%s), %s %s on %u %s\n", nsc_json_str_or(t, "job", "?"), nsc_json_str_or(t, "comm", "?"),
           nsc_json_str_or(t, "name", "?"), known(nranks, a, sizeof a),
           nsc_noun((uint64_t)nr, "rank", "ranks"), nnodes, nsc_noun(nnodes, "node", "nodes"));
    for (const nsc_json *n = nsc_json_first(nodes); n; n = nsc_json_next(nodes, n)) {
        const nsc_json *in = nsc_json_get(n, "ranks");
        unsigned nin = in ? in->count : 0;
        printf("\n%s: %u %s (clock: %s)\n", nsc_json_str_or(n, "host", "?"), nin, nsc_noun(nin, "rank", "ranks"),
               nsc_json_str_or(n, "clock", "?"));
        for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
            if (strcmp(nsc_json_str_or(r, "host", "?"), nsc_json_str_or(n, "host", "?")) != 0)
                continue;
            printf("  rank %-4s GPU %-8s", known(nsc_json_get(r, "rank"), a, sizeof a), known(nsc_json_get(r, "gpu"), b, sizeof b));
            printf(" local rank %-8s", known(nsc_json_get(r, "local_rank"), a, sizeof a));
            printf(" pid %s\n", known(nsc_json_get(r, "pid"), b, sizeof b));
        }
    }
    printf("\nchannels:\n");
    if (!channels || !channels->count)
        printf("  rings unknown: no ProxyOp seen (within a node NCCL's proxy traces no leg; or the event mask left "
               "ProxyOps out)\n");
    for (const nsc_json *ch = nsc_json_first(channels); ch; ch = nsc_json_next(channels, ch))
        print_ring(ch);
    printf("\nedges:\n");
    render(edges ? edges : channels, 0, u);
}

/* topology: the query's document with its edges' transport and health
 * (engine/diag/topology.c), as JSON or drawn for people. */
int nsc_verb_topology(nsc_cli_ctx *c)
{
    nsc_diag_src s;
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return NSC_EXIT_FAIL;
    }
    rc = nsc_cli_diag_rc(c, &s, nsc_diag_topology_write(&s, nsc_cli_get(c->args, "job"), nsc_cli_get(c->args, "comm"),
                                                         "", f));
    if (fclose(f) && rc == NSC_EXIT_OK) {
        snprintf(c->err, sizeof c->err, "out of memory");
        rc = NSC_EXIT_FAIL;
    }
    nsc_json_doc d;
    nsc_json_error e;
    if (rc == NSC_EXIT_OK && c->json) {
        fwrite(text, 1, len, stdout);
    } else if (rc == NSC_EXIT_OK && nsc_json_parse(text, len, NULL, &d, &e) == 0) {
        render_topology(nsc_json_root(&d), &c->units);
        nsc_json_free(&d);
    } else if (rc == NSC_EXIT_OK) {
        snprintf(c->err, sizeof c->err, "topology: bad JSON at byte %zu: %s", e.offset, e.msg);
        rc = NSC_EXIT_FAIL;
    }
    free(text);
    return rc;
}
int nsc_verb_stats(nsc_cli_ctx *c) { return show(c, "stats"); }
int nsc_verb_p2p(nsc_cli_ctx *c) { return show(c, "p2p"); }
