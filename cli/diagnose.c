/* diagnose.c: `ncclscope diagnose`: what someone debugging a stuck or slow
 * job needs first.
 *
 * Reads the communicators (comms) and, per communicator, the collectives
 * matched across ranks (collectives), and looks for: ranks that never joined
 * a communicator (ranks_seen < nranks), collectives whose count or datatype
 * differ across ranks at the same seq (mismatch), collectives some ranks never
 * arrived at (missing_ranks: a hang or a dead rank; the rank missing from the
 * earliest such collective is named), and collectives that never ended. Prints
 * a one-line verdict, then the evidence; exits 1 when it found a problem.
 * With --json it prints one JSON object: {"verdict", "problems": [...]}.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MAX_PROBLEMS 64

typedef struct problem {
    int severity;  /* 3 mismatch, 2 missing rank in a collective, 1 never joined, 0 in flight */
    char kind[24];
    char comm[24];
    char text[256];
} problem;

typedef struct findings {
    nsc_cli_ctx *c;
    const char *comm;
    problem p[MAX_PROBLEMS];
    size_t n, dropped;
    uint64_t collectives;
} findings;

static void add(findings *f, int severity, const char *kind, const char *comm, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static void add(findings *f, int severity, const char *kind, const char *comm, const char *fmt, ...)
{
    if (f->n == MAX_PROBLEMS) {
        f->dropped++;
        return;
    }
    problem *p = &f->p[f->n++];
    p->severity = severity;
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
        add(f, 3, "mismatch", f->comm, "%s seq %" PRIu64 ": ranks disagree: %s", func ? func : "?", seq,
            mismatch);
    if (missing && missing->kind == NSC_JSON_ARRAY && missing->count > 0) {
        rank_list(missing, ranks, sizeof ranks);
        add(f, 2, "missing", f->comm, "%s seq %" PRIu64 ": rank%s %s never arrived (hung or dead)",
            func ? func : "?", seq, missing->count > 1 ? "s" : "", ranks);
    } else if (nsc_json_get(v, "end_ns") && nsc_json_get(v, "end_ns")->kind == NSC_JSON_NULL) {
        add(f, 0, "in_flight", f->comm, "%s seq %" PRIu64 ": all ranks arrived, never completed",
            func ? func : "?", seq);
    }
    return 0;
}

static int check_comm(findings *f, const nsc_json *comm, const char *qs)
{
    const char *id = nsc_json_str(nsc_json_get(comm, "comm"));
    int64_t nranks = 0, seen = 0;
    if (!id)
        return NSC_EXIT_OK;
    if (nsc_json_i64(nsc_json_get(comm, "nranks"), &nranks) == 0 &&
        nsc_json_i64(nsc_json_get(comm, "ranks_seen"), &seen) == 0 && seen < nranks)
        add(f, 1, "never_joined", id, "%" PRId64 " of %" PRId64 " ranks never joined", nranks - seen, nranks);
    char q[2048];
    snprintf(q, sizeof q, "%s", qs);
    if (nsc_qs_add(q, sizeof q, "comm", id) != 0)
        return NSC_EXIT_FAIL;
    f->comm = id;
    return nsc_cli_fetch_pages(f->c, "collectives", q, on_collective, f);
}

static int by_severity(const void *a, const void *b)
{
    return ((const problem *)b)->severity - ((const problem *)a)->severity;
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
    const char *only = nsc_cli_get(c->args, "comm");
    const nsc_json *comms = nsc_json_get(nsc_json_root(&d.doc), "comms");
    for (const nsc_json *m = comms ? nsc_json_first(comms) : NULL; m && rc == NSC_EXIT_OK;
         m = nsc_json_next(comms, m)) {
        const char *id = nsc_json_str(nsc_json_get(m, "comm"));
        const char *name = nsc_json_str(nsc_json_get(m, "name"));
        if (!only || (id && strcmp(only, id) == 0) || (name && strcmp(only, name) == 0))
            rc = check_comm(f, m, job_qs);
    }
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
