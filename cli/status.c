/* status.c: `ncclscope status` and `ncclscope watch`: the live state
 * (/api/v1/status, /api/v1/live; docs/collector-http.md) shown to people.
 *
 * status is laid out like NCCL RAS's report: the job's nodes, processes and
 * ranks (one GPU each), communicators grouped by shape (ranks, nodes, ranks
 * per node) with how many are running, finished or incomplete, then the
 * errors: lagging ranks with their operation counts, hung collectives, dead
 * processes with host and pid, ranks never seen, dropped events. watch shows
 * per communicator progress, busBW and events/s from each live summary, with
 * the lagging and dead ranks of the status read alongside it; while the
 * summary counts lagging ranks or hung collectives, also each stuck
 * communicator's first problem and stalls as diagnose places them
 * (diagnose.h), analysed
 * again at most every WATCH_DIAG_S seconds since it reads every collective
 * and the proxy events. The walk over a status document (nsc_status_*) is
 * shared with diagnose.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "diag.h"
#include "mono.h"
#include "order.h"
#include "statusdoc.h"
#include "table.h"

static const char *str_or(const nsc_json *o, const char *key, const char *dflt)
{
    const char *s = nsc_json_str(nsc_json_get(o, key));
    return s ? s : dflt;
}

static uint64_t u64_of(const nsc_json *o, const char *key)
{
    uint64_t v = 0;
    nsc_json_u64(nsc_json_get(o, key), &v);
    return v;
}

static double dbl_of(const nsc_json *o, const char *key)
{
    double v = 0;
    nsc_json_double(nsc_json_get(o, key), &v);
    return v;
}

#define EACH(it, arr) for (const nsc_json *it = nsc_json_first(arr); it; it = nsc_json_next(arr, it))

const char *nsc_status_comm_state(const nsc_json *status, const nsc_json *comm)
{
    if (u64_of(comm, "ranks_seen") < u64_of(comm, "nranks"))
        return "incomplete";
    int behind = 0;
    EACH(r, nsc_json_get(comm, "ranks")) {
        const nsc_json *p = nsc_status_process(status, str_or(r, "host", ""), u64_of(r, "pid"));
        if (p && strcmp(str_or(p, "state", ""), "alive") == 0)
            return "running";
        const char *f;
        uint64_t s, m;
        EACH(c, nsc_json_get(r, "collectives"))
        behind |= nsc_json_get(c, "in_flight") && nsc_json_get(c, "in_flight")->kind == NSC_JSON_TRUE;
        behind |= nsc_status_rank_behind(comm, r, &f, &s, &m);
    }
    return behind ? "incomplete" : "finished";
}

int nsc_status_job_wanted(const nsc_cli_ctx *c, const nsc_json *job)
{
    const char *want = nsc_cli_get(c->args, "job");
    return !want || strcmp(want, str_or(job, "job", "")) == 0;
}

/* ---- status ---- */

#define MAX_NODES 1024
#define MAX_SHAPES 64

typedef struct shape {
    uint64_t nranks, nodes, per_node;
    unsigned comms, running, finished, incomplete;
} shape;

/* Distinct hosts of a communicator's ranks, and the most ranks on one. */
static void comm_shape(const nsc_json *comm, uint64_t *nodes, uint64_t *per_node)
{
    const char *hosts[64];
    uint64_t count[64];
    size_t n = 0;
    *per_node = 0;
    EACH(r, nsc_json_get(comm, "ranks")) {
        const char *h = str_or(r, "host", "?");
        size_t i = 0;
        while (i < n && strcmp(hosts[i], h) != 0)
            i++;
        if (i == n && n < 64) {
            hosts[n] = h;
            count[n++] = 0;
        }
        if (i < n && ++count[i] > *per_node)
            *per_node = count[i];
    }
    *nodes = n;
}

static void print_shapes(const nsc_json *status, const nsc_json *job)
{
    shape sh[MAX_SHAPES];
    size_t n = 0;
    EACH(cm, nsc_json_get(job, "comms")) {
        shape s = {.nranks = u64_of(cm, "nranks")};
        comm_shape(cm, &s.nodes, &s.per_node);
        size_t i = 0;
        while (i < n && !(sh[i].nranks == s.nranks && sh[i].nodes == s.nodes && sh[i].per_node == s.per_node))
            i++;
        if (i == n && n == MAX_SHAPES)
            continue;
        if (i == n)
            sh[n++] = s;
        const char *st = nsc_status_comm_state(status, cm);
        sh[i].comms++;
        sh[i].running += strcmp(st, "running") == 0;
        sh[i].finished += strcmp(st, "finished") == 0;
        sh[i].incomplete += strcmp(st, "incomplete") == 0;
    }
    static const nsc_col cols[] = {{"", "GROUP"}, {"", "COMMS"}, {"", "NRANKS"}, {"", "NODES"},
                                   {"", "RANKS/NODE"}, {"", "RUNNING"}, {"", "FINISHED"}, {"", "INCOMPLETE"}};
    nsc_table *t = nsc_table_new(cols, 8, &(nsc_units){0});
    for (size_t i = 0; t && i < n; i++) {
        char v[8][24];
        const char *cells[8];
        snprintf(v[0], 24, "%zu", i);
        snprintf(v[1], 24, "%u", sh[i].comms);
        snprintf(v[2], 24, "%" PRIu64, sh[i].nranks);
        snprintf(v[3], 24, "%" PRIu64, sh[i].nodes);
        snprintf(v[4], 24, "%" PRIu64, sh[i].per_node);
        snprintf(v[5], 24, "%u", sh[i].running);
        snprintf(v[6], 24, "%u", sh[i].finished);
        snprintf(v[7], 24, "%u", sh[i].incomplete);
        for (int k = 0; k < 8; k++)
            cells[k] = v[k];
        nsc_table_add(t, cells);
    }
    if (t)
        nsc_table_print(t, stdout);
    nsc_table_free(t);
}

/* "AllReduce 9/9, Broadcast 2/3": the lowest last seq of the ranks / the highest. */
static void progress(const nsc_json *comm, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    EACH(f, nsc_json_get(comm, "funcs")) {
        const char *name = str_or(f, "func", "?");
        uint64_t lo = u64_of(f, "max_seq");
        EACH(r, nsc_json_get(comm, "ranks"))
        EACH(c, nsc_json_get(r, "collectives"))
        if (strcmp(str_or(c, "func", ""), name) == 0 && u64_of(c, "seq") < lo)
            lo = u64_of(c, "seq");
        int w = snprintf(buf + n, cap - n, "%s%s %" PRIu64 "/%" PRIu64, n ? ", " : "", name, lo,
                         u64_of(f, "max_seq"));
        if (w < 0 || (size_t)w >= cap - n)
            return;
        n += (size_t)w;
    }
}

/* A member's value for a person, or its exact text with --raw. */
static void cell_of(const nsc_json *o, const char *key, const nsc_units *u, char *buf, size_t cap)
{
    nsc_json_cell(nsc_json_get(o, key), u, buf, cap);
}

static void print_comms(const nsc_units *u, const nsc_json *status, const nsc_json *job, const nsc_json *rates)
{
    static const nsc_col cols[] = {{"", "COMM"}, {"", "NAME"}, {"", "RANKS"}, {"", "STATE"},
                                   {"", "PROGRESS (min/max seq)"}, {"", "EVENTS"}, {"", "EVENTS/S"},
                                   {"", "BUSBW"}};
    nsc_table *t = nsc_table_new(cols, 8, u);
    EACH(cm, nsc_json_get(job, "comms")) {
        char v[8][160];
        const char *cells[8];
        const nsc_json *rate = cm;
        EACH(r, rates)  /* a live summary's newer rates, when given */
        if (strcmp(str_or(r, "comm", ""), str_or(cm, "comm", "-")) == 0)
            rate = r;
        snprintf(v[0], 160, "%s", str_or(cm, "comm", "?"));
        snprintf(v[1], 160, "%s", str_or(cm, "name", "-"));
        snprintf(v[2], 160, "%" PRIu64 "/%" PRIu64, u64_of(cm, "ranks_seen"), u64_of(cm, "nranks"));
        snprintf(v[3], 160, "%s", nsc_status_comm_state(status, cm));
        progress(cm, v[4], 160);
        snprintf(v[5], 160, "%" PRIu64, u64_of(cm, "events_total"));
        cell_of(rate, "events_per_s", u, v[6], 160);
        if (dbl_of(rate, "bus_bw_gbps") > 0)  /* none in the last window (a finished communicator): no figure, not 0 */
            cell_of(rate, "bus_bw_gbps", u, v[7], 160);
        else
            snprintf(v[7], 160, "-");
        for (int k = 0; k < 8; k++)
            cells[k] = v[k];
        if (t)
            nsc_table_add(t, cells);
    }
    if (t)
        nsc_table_print(t, stdout);
    nsc_table_free(t);
}

/* The ranks of host:pid in the job's communicators, as "rank 3 of 0x5f3a". */
static void ranks_of(const nsc_json *job, const char *host, uint64_t pid, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    EACH(cm, nsc_json_get(job, "comms"))
    EACH(r, nsc_json_get(cm, "ranks"))
    if (u64_of(r, "pid") == pid && strcmp(str_or(r, "host", ""), host) == 0 && n + 48 < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%srank %" PRIu64 " of %s", n ? ", " : "", u64_of(r, "rank"),
                              str_or(cm, "comm", "?"));
}

/* Ranks of [0, nranks) absent from the comm's ranks[], as "2,3" (-1 if too many). */
static void missing_ranks(const nsc_json *comm, char *buf, size_t cap)
{
    uint64_t nranks = u64_of(comm, "nranks");
    size_t n = 0;
    buf[0] = 0;
    for (uint64_t k = 0; k < nranks && n + 24 < cap; k++) {
        int seen = 0;
        EACH(r, nsc_json_get(comm, "ranks"))
        seen |= u64_of(r, "rank") == k;
        if (!seen)
            n += (size_t)snprintf(buf + n, cap - n, "%s%" PRIu64, n ? "," : "", k);
    }
}

/* The errors section; returns how many lines it printed. An ended job's
 * verdict comes first when it names a stuck collective; its ranks are then
 * neither lagging nor hung (docs/api.md). */
static unsigned print_errors(const nsc_units *u, const nsc_json *status, const nsc_json *job)
{
    unsigned n = 0;
    char buf[512], span[64];
    if (nsc_json_str(nsc_json_get(job, "verdict_comm"))) {
        printf("  ended    comm %s: %s\n", str_or(job, "verdict_comm", "?"), str_or(job, "verdict", "?"));
        n++;
    }
    EACH(cm, nsc_json_get(job, "comms")) {
        const char *id = str_or(cm, "comm", "?");
        EACH(l, nsc_json_get(cm, "lagging")) {
            cell_of(l, "for_ns", u, span, sizeof span);
            printf("  lagging  comm %s rank %" PRIu64 ": %s seq %" PRIu64 " while others reached %" PRIu64
                   " (%s%s)\n", id, u64_of(l, "rank"), str_or(l, "func", "?"), u64_of(l, "seq"),
                   u64_of(l, "max_seq"), span, u->raw ? " ns" : "");
            n++;
        }
        EACH(h, nsc_json_get(cm, "hangs")) {
            cell_of(h, "for_ns", u, span, sizeof span);
            printf("  hung     comm %s rank %" PRIu64 ": %s seq %" PRIu64 " in flight for %s%s\n", id,
                   u64_of(h, "rank"), str_or(h, "func", "?"), u64_of(h, "seq"), span, u->raw ? " ns" : "");
            n++;
        }
        if (u64_of(cm, "ranks_seen") < u64_of(cm, "nranks")) {
            missing_ranks(cm, buf, sizeof buf);
            printf("  missing  comm %s: %" PRIu64 " of %" PRIu64 " ranks never seen (ranks %s)\n", id,
                   u64_of(cm, "nranks") - u64_of(cm, "ranks_seen"), u64_of(cm, "nranks"), buf);
            n++;
        }
    }
    EACH(p, nsc_json_get(status, "processes")) {
        if (strcmp(str_or(p, "job", ""), str_or(job, "job", "-")) != 0)
            continue;
        const char *host = str_or(p, "host", "?");
        uint64_t pid = u64_of(p, "pid");
        const char *state = str_or(p, "state", "?");
        if (strcmp(state, "alive") != 0 && strcmp(state, "finished") != 0) {
            ranks_of(job, host, pid, buf, sizeof buf);
            printf("  %-8s pid %" PRIu64 " on %s (%s): %s\n", state, pid, host, str_or(p, "reason", "no death record"),
                   buf[0] ? buf : "no rank");
            n++;
        }
        if (u64_of(p, "events_dropped") || u64_of(p, "states_dropped")) {
            printf("  dropped  pid %" PRIu64 " on %s: %" PRIu64 " events and %" PRIu64
                   " states dropped by the plugin\n",
                   pid, host, u64_of(p, "events_dropped"), u64_of(p, "states_dropped"));
            n++;
        }
    }
    return n;
}

/* What the plugins dropped, by event type, when they dropped anything. */
static void print_drops_by_type(const nsc_json *job)
{
    if (!u64_of(job, "events_dropped") && !u64_of(job, "states_dropped"))
        return;
    printf("dropped by type:");
    EACH(t, nsc_json_get(job, "events_dropped_by_type"))
        printf(" %s %s,", t->key ? t->key : "?", t->text);
    printf(" states %" PRIu64 "\n", u64_of(job, "states_dropped"));
}

/* The self-cost guard's line: what the profiler costs the job and, while it
 * sheds, which event types are missing and why. */
static void print_cost(const nsc_json *job)
{
    double pct;
    if (nsc_json_double(nsc_json_get(job, "profiler_cost_pct"), &pct) != 0)
        return;
    printf("profiler cost %.1f %% of collective time", pct);
    const nsc_json *shed = nsc_json_get(job, "shed");
    if (nsc_json_first(shed)) {
        printf("; over its budget, not recording:");
        EACH(t, shed)
            printf(" %s", nsc_json_str(t) ? nsc_json_str(t) : "?");
        printf(" (%" PRIu64 " events)", u64_of(job, "shed_events"));
    }
    printf("\n");
}

static void print_job(const nsc_units *u, const nsc_json *status, const nsc_json *job)
{
    const char *name = str_or(job, "job", "?");
    const char *hosts[MAX_NODES];
    size_t nhosts = 0;
    uint64_t procs = 0, alive = 0, finished = 0, ranks = 0, comms = 0;
    EACH(p, nsc_json_get(status, "processes")) {
        if (strcmp(str_or(p, "job", ""), name) != 0)
            continue;
        procs++;
        alive += strcmp(str_or(p, "state", ""), "alive") == 0;
        finished += strcmp(str_or(p, "state", ""), "finished") == 0;
        size_t i = 0;
        while (i < nhosts && strcmp(hosts[i], str_or(p, "host", "?")) != 0)
            i++;
        if (i == nhosts && nhosts < MAX_NODES)
            hosts[nhosts++] = str_or(p, "host", "?");
    }
    EACH(cm, nsc_json_get(job, "comms")) {
        comms++;
        ranks += u64_of(cm, "ranks_seen");
    }
    uint64_t dropped = u64_of(job, "events_dropped");
    printf("job %s (%s): %zu %s, %" PRIu64 " %s (%" PRIu64 " alive, %" PRIu64 " finished), %" PRIu64 " %s in %" PRIu64
           " %s, %" PRIu64 " %s dropped\n",
           name, str_or(job, "state", "running"), nhosts, nsc_noun(nhosts, "node", "nodes"), procs,
           nsc_noun(procs, "process", "processes"), alive, finished, ranks, nsc_noun(ranks, "rank (GPU)", "ranks (GPUs)"), comms,
           nsc_noun(comms, "communicator", "communicators"), dropped, nsc_noun(dropped, "event", "events"));
    print_drops_by_type(job);
    print_cost(job);
    if (nhosts)
        qsort(hosts, nhosts, sizeof *hosts, nsc_cmp_str);
    printf("nodes: ");
    for (size_t i = 0; i < nhosts; i++)
        printf("%s%s", i ? ", " : "", hosts[i]);
    printf("%s\n\ncommunicators by shape:\n", nhosts ? "" : "none");
    print_shapes(status, job);
    printf("\ncommunicators:\n");
    print_comms(u, status, job, NULL);
    printf("\nerrors:\n");
    if (print_errors(u, status, job) == 0)
        printf("  none\n");
}

/* Returns how many jobs it showed. */
static unsigned render_status(nsc_cli_ctx *c, const nsc_json *status)
{
    printf("events: %" PRIu64 " received; agents:", u64_of(status, "events_total"));
    EACH(a, nsc_json_get(status, "agents"))
    printf(" %s (%s, %s)", str_or(a, "agent", "?"), str_or(a, "host", "?"), str_or(a, "state", "?"));
    printf("\n");
    unsigned shown = 0;
    EACH(j, nsc_json_get(status, "jobs"))
    if (nsc_status_job_wanted(c, j)) {
        printf("\n");
        print_job(&c->units, status, j);
        shown++;
    }
    if (!shown && !nsc_cli_get(c->args, "job"))
        printf("\nno job yet\n");
    return shown;
}

int nsc_verb_status(nsc_cli_ctx *c)
{
    if (c->json)
        return nsc_cli_fetch_raw(c, "status", NULL);
    nsc_doc d;
    int rc = nsc_cli_fetch_doc(c, "status", NULL, &d);
    if (rc == NSC_EXIT_OK && !render_status(c, nsc_json_root(&d.doc)) && nsc_cli_get(c->args, "job")) {
        snprintf(c->err, sizeof c->err, "no job \"%s\" (see ncclscope status)", nsc_cli_get(c->args, "job"));
        rc = NSC_EXIT_FAIL;
    }
    nsc_doc_free(&d);
    return rc;
}

/* ---- watch ---- */

/* The stall analysis reads the job's collectives and proxy events: not at
 * every summary (about one a second), at most once in this many seconds. */
#define WATCH_DIAG_S 5.0
#define WATCH_STUCK_MAX 8

typedef struct watching {
    nsc_cli_ctx *c;
    int tty;
    unsigned long long left;  /* summaries still to show; 0: no limit */
    double diag_at;           /* monotonic seconds of the last analysis; 0: none */
    size_t nstuck;            /* lines of the last analysis, shown until the next */
    char stuck[WATCH_STUCK_MAX][400];
} watching;

static double mono_s(void) { return (double)nsc_mono_ns() / 1e9; }

/* Each communicator's first problem (the list is most severe first), as
 * diagnose's verdict names it, and its stalls when a worse problem comes
 * first: where inside a collective the wait chain ends. */
static void keep_stuck_lines(watching *w, const nsc_findings *f)
{
    w->nstuck = 0;
    for (size_t i = 0; i < f->n && w->nstuck < WATCH_STUCK_MAX; i++) {
        int first = 1;
        for (size_t k = 0; k < i && first; k++)
            first = strcmp(f->p[k].comm, f->p[i].comm) != 0;
        if (first || strcmp(f->p[i].kind, "stall") == 0)
            snprintf(w->stuck[w->nstuck++], sizeof w->stuck[0], "stuck: comm %s: %s", f->p[i].comm, f->p[i].text);
    }
}

/* While the summary reports a stuck communicator, where diagnose places it. */
static void update_stuck(watching *w, const nsc_json *sum)
{
    if (u64_of(sum, "lagging") + u64_of(sum, "hung_collectives") == 0) {
        w->nstuck = 0;
        w->diag_at = 0;
        return;
    }
    double now = mono_s();
    if (w->diag_at > 0 && now - w->diag_at < WATCH_DIAG_S)
        return;
    w->diag_at = now;
    nsc_findings *f = calloc(1, sizeof *f);
    if (!f)
        return;
    nsc_diag_src s;
    f->src = &s;
    if (nsc_cli_diag_src(w->c, &s) == NSC_EXIT_OK &&
        nsc_cli_diag_rc(w->c, &s, nsc_diag_find(nsc_cli_get(w->c->args, "job"), NULL, f)) == NSC_EXIT_OK)
        keep_stuck_lines(w, f);
    else {
        snprintf(w->stuck[0], sizeof w->stuck[0], "stuck: not analysed: %.300s", w->c->err);
        w->nstuck = 1;
    }
    w->c->err[0] = 0;
    free(f);
}

static void render_summary(nsc_cli_ctx *c, const nsc_json *sum, const nsc_json *status)
{
    printf("%.1f events/s, %" PRIu64 " events; processes %" PRIu64 " alive %" PRIu64 " dead %" PRIu64
           " finished; agents %" PRIu64 " alive %" PRIu64 " dead; %" PRIu64 " lagging, %" PRIu64 " hung"
           " collectives\n",
           dbl_of(sum, "events_per_s"), u64_of(sum, "events_total"), u64_of(sum, "processes_alive"),
           u64_of(sum, "processes_dead"), u64_of(sum, "processes_finished"), u64_of(sum, "agents_alive"), u64_of(sum, "agents_dead"),
           u64_of(sum, "lagging"), u64_of(sum, "hung_collectives"));
    if (!status)
        return;
    EACH(j, nsc_json_get(status, "jobs"))
    if (nsc_status_job_wanted(c, j)) {
        printf("job %s (%s):\n", str_or(j, "job", "?"), str_or(j, "state", "running"));
        print_comms(&c->units, status, j, nsc_json_get(sum, "comms"));
        print_errors(&c->units, status, j);
    }
}

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
        /* The summary has rates; progress, lag and deaths come from the status. */
        nsc_doc st;
        int have = nsc_cli_fetch_doc(w->c, "status", NULL, &st) == NSC_EXIT_OK;
        w->c->err[0] = 0;
        if (w->tty)
            fputs("\033[H\033[J", stdout);
        render_summary(w->c, nsc_json_root(&doc), have ? nsc_json_root(&st.doc) : NULL);
        update_stuck(w, nsc_json_root(&doc));
        for (size_t i = 0; i < w->nstuck; i++)
            printf("%s\n", w->stuck[i]);
        if (!w->tty)
            putchar('\n');
        nsc_doc_free(&st);
        nsc_json_free(&doc);
    }
    fflush(stdout);
    return w->left && --w->left == 0 ? 2 : 0;
}

int nsc_verb_watch(nsc_cli_ctx *c)
{
    watching *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(c->err, sizeof c->err, "out of memory");
        return NSC_EXIT_FAIL;
    }
    w->c = c;
    w->tty = isatty(STDOUT_FILENO);
    int rc = nsc_cli_u64_opt(c, "count", &w->left);
    if (!rc)
        rc = nsc_cli_fetch_sse(c, "live", NULL, on_event, w);
    if (rc == NSC_EXIT_FAIL && w->left == 0 && !c->err[0])
        rc = NSC_EXIT_OK;
    free(w);
    return rc;
}
