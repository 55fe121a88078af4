/* diagnose.c: `ncclscope diagnose`: what someone debugging a stuck or slow
 * job needs first.
 *
 * Reads the communicators (comms), per communicator the collectives matched
 * across ranks (collectives), and the live state (status), and looks for, most
 * severe first: collectives whose count or datatype differ across ranks at one
 * seq (mismatch); processes dead or silent while their ranks are behind the
 * others (dead); collectives some ranks never arrived at (missing); ranks
 * behind the others for longer than the collector's lag threshold (lagging);
 * collectives in flight that long (hung); ranks that never joined
 * (never_joined); collectives all ranks entered that never ended (in_flight);
 * a rank that arrived last most of the time (straggler); events the plugins
 * dropped (dropped). Problems are ordered by severity, then
 * communicator id, seq and rank, so the same store gives the same report.
 * Prints a one-line verdict naming the first problem's rank, then the
 * evidence; exits 1 when it found a problem. --json: one object.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_PROBLEMS 64

enum severity { SEV_DROPPED, SEV_STRAGGLER, SEV_IN_FLIGHT, SEV_NEVER_JOINED, SEV_HUNG, SEV_LAGGING, SEV_MISSING, SEV_DEAD,
                SEV_MISMATCH };

typedef struct problem {
    int severity;
    char kind[24];
    char comm[24];
    uint64_t seq;   /* position: the collective's seq (0 if none) */
    int64_t rank;   /* the rank named (-1 if none) */
    size_t order;   /* found in this order: the last tie-break */
    char text[256];
} problem;

typedef struct findings {
    nsc_cli_ctx *c;
    const char *only;  /* --comm: an id or a name */
    const char *comm;
    problem p[MAX_PROBLEMS];
    size_t n, dropped;
    uint64_t collectives;
} findings;

/* A straggler arrives last at more than half of at least this many collectives
 * (by chance a rank of n is last at 1/n of them). */
#define STRAGGLER_MIN_COLLS 8

static void add(findings *f, int severity, const char *kind, const char *comm, uint64_t seq, int64_t rank,
                const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void add(findings *f, int severity, const char *kind, const char *comm, uint64_t seq, int64_t rank,
                const char *fmt, ...)
{
    if (f->n == MAX_PROBLEMS) {
        f->dropped++;
        return;
    }
    problem *p = &f->p[f->n];
    p->order = f->n++;
    p->severity = severity;
    p->seq = seq;
    p->rank = rank;
    snprintf(p->kind, sizeof p->kind, "%s", kind);
    snprintf(p->comm, sizeof p->comm, "%s", comm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->text, sizeof p->text, fmt, ap);
    va_end(ap);
}

static void rank_list(const nsc_json *arr, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (const nsc_json *r = nsc_json_first(arr); r && n + 16 < cap; r = nsc_json_next(arr, r))
        n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "," : "", r->text);
}

static int on_collective(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)line, (void)len;
    findings *f = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (!kind || strcmp(kind, "collective") != 0)
        return 0;
    f->collectives++;
    const char *func = nsc_json_str(nsc_json_get(v, "func"));
    uint64_t seq = 0;
    nsc_json_u64(nsc_json_get(v, "seq"), &seq);
    const char *mismatch = nsc_json_str(nsc_json_get(v, "mismatch"));
    const nsc_json *missing = nsc_json_get(v, "missing_ranks");
    char ranks[128];
    if (mismatch)
        add(f, SEV_MISMATCH, "mismatch", f->comm, seq, -1, "%s seq %" PRIu64 ": ranks disagree: %s", func ? func : "?", seq,
            mismatch);
    if (missing && missing->kind == NSC_JSON_ARRAY && missing->count > 0) {
        rank_list(missing, ranks, sizeof ranks);
        int64_t first = -1;
        nsc_json_i64(nsc_json_first(missing), &first);
        add(f, SEV_MISSING, "missing", f->comm, seq, first, "%s seq %" PRIu64 ": rank%s %s never arrived (hung or dead)",
            func ? func : "?", seq, missing->count > 1 ? "s" : "", ranks);
    } else if (nsc_json_get(v, "end_ns") && nsc_json_get(v, "end_ns")->kind == NSC_JSON_NULL) {
        add(f, SEV_IN_FLIGHT, "in_flight", f->comm, seq, -1, "%s seq %" PRIu64 ": all ranks arrived, never completed",
            func ? func : "?", seq);
    }
    return 0;
}

/* The lowest rank of [0, nranks) not in the array of ranks seen. */
static int64_t first_absent(const nsc_json *seen, int64_t nranks)
{
    for (int64_t k = 0; k < nranks; k++) {
        int found = 0;
        for (const nsc_json *r = nsc_json_first(seen); r && !found; r = nsc_json_next(seen, r)) {
            int64_t v;
            found = nsc_json_i64(r, &v) == 0 && v == k;
        }
        if (!found)
            return k;
    }
    return -1;
}

/* The stats query ranks the ranks by how often they arrived last; the first
 * is a straggler if that was more than half of its collectives. */
static int check_straggler(findings *f, const char *comm, const char *q)
{
    nsc_doc d;
    int rc = nsc_cli_fetch_doc(f->c, "stats", q, &d);
    const nsc_json *top = rc == NSC_EXIT_OK ? nsc_json_first(nsc_json_get(nsc_json_root(&d.doc), "stragglers")) : NULL;
    int64_t rank;
    uint64_t last, n;
    if (top && nsc_json_i64(nsc_json_get(top, "rank"), &rank) == 0 &&
        nsc_json_u64(nsc_json_get(top, "last_arrivals"), &last) == 0 &&
        nsc_json_u64(nsc_json_get(top, "collectives"), &n) == 0 && n >= STRAGGLER_MIN_COLLS && 2 * last > n)
        add(f, SEV_STRAGGLER, "straggler", comm, 0, rank,
            "rank %" PRId64 " arrived last at %" PRIu64 " of %" PRIu64 " collectives: the others wait for it", rank,
            last, n);
    nsc_doc_free(&d);
    return rc;
}

static int check_comm(findings *f, const nsc_json *comm, const char *qs)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    int64_t nranks = 0, seen = 0;
    if (!id)
        return NSC_EXIT_OK;
    if (nsc_json_i64(nsc_json_get(comm, "nranks"), &nranks) == 0 &&
        nsc_json_i64(nsc_json_get(comm, "ranks_seen"), &seen) == 0 && seen < nranks) {
        int64_t first = first_absent(nsc_json_get(comm, "ranks"), nranks);
        add(f, SEV_NEVER_JOINED, "never_joined", id, 0, first,
            "%" PRId64 " of %" PRId64 " ranks never joined, the first rank %" PRId64, nranks - seen, nranks, first);
    }
    char q[2048];
    snprintf(q, sizeof q, "%s", qs);
    if (nsc_qs_add(q, sizeof q, "comm", id) != 0)
        return NSC_EXIT_FAIL;
    f->comm = id;
    int rc = nsc_cli_fetch_pages(f->c, "collectives", q, on_collective, f);
    return rc == NSC_EXIT_OK ? check_straggler(f, id, q) : rc;
}

/* Severity, then position (communicator, seq, rank), then the order found. */
static int by_severity(const void *a, const void *b)
{
    const problem *x = a, *y = b;
    int c = y->severity - x->severity;
    if (!c)
        c = strcmp(x->comm, y->comm);
    if (!c)
        c = (x->seq > y->seq) - (x->seq < y->seq);
    if (!c)
        c = (x->rank > y->rank) - (x->rank < y->rank);
    return c ? c : (x->order > y->order) - (x->order < y->order);
}

static uint64_t num(const nsc_json *o, const char *key)
{
    uint64_t v = 0;
    nsc_json_u64(nsc_json_get(o, key), &v);
    return v;
}

static int comm_wanted(const char *only, const nsc_json *comm)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    const char *name = nsc_json_str(nsc_json_get(comm, "name"));
    return !only || (id && strcmp(only, id) == 0) || (name && strcmp(only, name) == 0);
}

/* Dead or silent processes whose ranks stopped behind the others. */
static void check_deaths(findings *f, const nsc_json *status, const nsc_json *comm)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    const nsc_json *ranks = nsc_json_get(comm, "ranks");
    for (const nsc_json *r = nsc_json_first(ranks); r; r = nsc_json_next(ranks, r)) {
        const char *host = nsc_json_str(nsc_json_get(r, "host"));
        const nsc_json *p = host ? nsc_status_process(status, host, num(r, "pid")) : NULL;
        const char *state = p ? nsc_json_str(nsc_json_get(p, "state")) : NULL;
        const char *func, *reason = p ? nsc_json_str(nsc_json_get(p, "reason")) : NULL;
        uint64_t seq, max;
        if (!state || strcmp(state, "alive") == 0 || strcmp(state, "finished") == 0 ||
            !nsc_status_rank_behind(comm, r, &func, &seq, &max))
            continue;
        add(f, SEV_DEAD, "dead", id ? id : "?", seq, (int64_t)num(r, "rank"),
            "rank %" PRIu64 " (pid %" PRIu64 " on %s) is %s%s%s at %s seq %" PRIu64 ", the others reached %" PRIu64,
            num(r, "rank"), num(r, "pid"), host, state, reason ? ": " : "", reason ? reason : "", func, seq, max);
    }
}

/* What the live state knows: deaths, lag and hangs by time, drops. */
static void check_status(findings *f, const nsc_json *status, const char *job)
{
    const nsc_json *jobs = nsc_json_get(status, "jobs");
    for (const nsc_json *j = nsc_json_first(jobs); j; j = nsc_json_next(jobs, j)) {
        const char *name = nsc_json_str(nsc_json_get(j, "job"));
        if (!name || strcmp(name, job) != 0)
            continue;
        const nsc_json *comms = nsc_json_get(j, "comms");
        for (const nsc_json *c = nsc_json_first(comms); c; c = nsc_json_next(comms, c)) {
            const char *id = nsc_json_str(nsc_json_get(c, "comm"));
            if (!id || !comm_wanted(f->only, c))
                continue;
            check_deaths(f, status, c);
            const nsc_json *lag = nsc_json_get(c, "lagging"), *hangs = nsc_json_get(c, "hangs");
            for (const nsc_json *l = nsc_json_first(lag); l; l = nsc_json_next(lag, l))
                add(f, SEV_LAGGING, "lagging", id, num(l, "seq"), (int64_t)num(l, "rank"),
                    "rank %" PRIu64 " is at %s seq %" PRIu64 ", the others reached %" PRIu64 " (for %.1f s)",
                    num(l, "rank"), nsc_json_str(nsc_json_get(l, "func")), num(l, "seq"), num(l, "max_seq"),
                    (double)num(l, "for_ns") / 1e9);
            for (const nsc_json *h = nsc_json_first(hangs); h; h = nsc_json_next(hangs, h))
                add(f, SEV_HUNG, "hung", id, num(h, "seq"), (int64_t)num(h, "rank"),
                    "rank %" PRIu64 ": %s seq %" PRIu64 " in flight for %.1f s", num(h, "rank"),
                    nsc_json_str(nsc_json_get(h, "func")), num(h, "seq"), (double)num(h, "for_ns") / 1e9);
        }
        const nsc_json *procs = nsc_json_get(status, "processes");
        for (const nsc_json *p = nsc_json_first(procs); p; p = nsc_json_next(procs, p)) {
            const char *pj = nsc_json_str(nsc_json_get(p, "job"));
            if (pj && strcmp(pj, job) == 0 && (num(p, "events_dropped") || num(p, "states_dropped")))
                add(f, SEV_DROPPED, "dropped", "-", 0, -1,
                    "pid %" PRIu64 " on %s dropped %" PRIu64 " events and %" PRIu64 " states", num(p, "pid"),
                    nsc_json_str(nsc_json_get(p, "host")), num(p, "events_dropped"), num(p, "states_dropped"));
        }
    }
}

static void report(const findings *f, const char *verdict)
{
    if (f->c->json) {
        printf("{\"verdict\":");
        nsc_json_write_str(stdout, verdict);
        printf(",\"collectives_checked\":%" PRIu64 ",\"problems\":[", f->collectives);
        for (size_t i = 0; i < f->n; i++) {
            printf("%s{\"kind\":\"%s\",\"comm\":", i ? "," : "", f->p[i].kind);
            nsc_json_write_str(stdout, f->p[i].comm);
            if (f->p[i].rank >= 0)
                printf(",\"rank\":%" PRId64, f->p[i].rank);
            else
                printf(",\"rank\":null");
            printf(",\"seq\":%" PRIu64, f->p[i].seq);
            printf(",\"evidence\":");
            nsc_json_write_str(stdout, f->p[i].text);
            printf("}");
        }
        printf("],\"problems_not_shown\":%zu}\n", f->dropped);
        return;
    }
    printf("%s\n", verdict);
    for (size_t i = 0; i < f->n; i++)
        printf("  [%s] comm %s: %s\n", f->p[i].kind, f->p[i].comm, f->p[i].text);
    if (f->dropped)
        printf("  ... and %zu more\n", f->dropped);
}

int nsc_verb_diagnose(nsc_cli_ctx *c)
{
    char qs[2048], job_qs[512] = "";
    int rc = nsc_cli_query(c, qs, sizeof qs);
    if (rc)
        return rc;
    const char *job = nsc_cli_get(c->args, "job");
    if (job && nsc_qs_add(job_qs, sizeof job_qs, "job", job) != 0)
        return NSC_EXIT_USAGE;
    nsc_doc d;
    if ((rc = nsc_cli_fetch_doc(c, "comms", job_qs, &d)) != NSC_EXIT_OK) {
        nsc_doc_free(&d);
        return rc;
    }
    findings *f = calloc(1, sizeof *f);
    if (!f) {
        nsc_doc_free(&d);
        snprintf(c->err, sizeof c->err, "out of memory");
        return NSC_EXIT_FAIL;
    }
    f->c = c;
    f->only = nsc_cli_get(c->args, "comm");
    const nsc_json *comms = nsc_json_get(nsc_json_root(&d.doc), "comms");
    for (const nsc_json *m = comms ? nsc_json_first(comms) : NULL; m && rc == NSC_EXIT_OK;
         m = nsc_json_next(comms, m))
        if (comm_wanted(f->only, m))
            rc = check_comm(f, m, job_qs);
    const char *name = job ? job : nsc_json_str(nsc_json_get(nsc_json_root(&d.doc), "job"));
    nsc_doc st = {0};
    if (rc == NSC_EXIT_OK && (rc = nsc_cli_fetch_doc(c, "status", NULL, &st)) == NSC_EXIT_OK && name)
        check_status(f, nsc_json_root(&st.doc), name);
    nsc_doc_free(&st);
    if (rc == NSC_EXIT_OK) {
        qsort(f->p, f->n, sizeof f->p[0], by_severity);
        char verdict[400];
        if (f->n == 0)
            snprintf(verdict, sizeof verdict, "OK: no problem found in %" PRIu64 " collectives",
                     f->collectives);
        else
            snprintf(verdict, sizeof verdict, "PROBLEM: comm %s: %s", f->p[0].comm, f->p[0].text);
        report(f, verdict);
        rc = f->n ? NSC_EXIT_FAIL : NSC_EXIT_OK;
    }
    free(f);
    nsc_doc_free(&d);
    return rc;
}
