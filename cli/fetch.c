/* fetch.c: the verbs' way to their data: query strings and fetches (see cli.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "mono.h"

int nsc_cli_u64_opt(nsc_cli_ctx *c, const char *name, unsigned long long *v)
{
    const char *s = nsc_cli_get(c->args, name);
    if (!s)
        return NSC_EXIT_OK;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        snprintf(c->err, sizeof c->err, "--%s wants a non-negative number, got '%s'", name, s);
        return NSC_EXIT_USAGE;
    }
    *v = x;
    return NSC_EXIT_OK;
}

/* API parameters a verb may pass on: option name -> parameter name (the
 * window's bounds are the time options below). */
static const struct {
    const char *opt, *param;
} params[] = {{"job", "job"},   {"comm", "comm"},   {"rank", "rank"}, {"func", "func"},
              {"seq", "seq"},   {"limit", "limit"}, {"type", "type"}, {"clock", "clock"}};

/* The source's wall clock for the job and communicator asked about: its
 * comms answer's wall_offset_ns. */
static int wall_offset(nsc_cli_ctx *c, int64_t *off)
{
    char qs[512] = "";
    const char *job = nsc_cli_get(c->args, "job"), *comm = nsc_cli_get(c->args, "comm");
    if ((job && nsc_qs_add(qs, sizeof qs, "job", job)) || (comm && nsc_qs_add(qs, sizeof qs, "comm", comm))) {
        snprintf(c->err, sizeof c->err, "query too long");
        return NSC_EXIT_USAGE;
    }
    nsc_doc d;
    int rc = nsc_cli_fetch_doc(c, "comms", qs, &d);
    if (rc == NSC_EXIT_OK && nsc_json_i64(nsc_json_get(nsc_json_root(&d.doc), "wall_offset_ns"), off) != 0) {
        snprintf(c->err, sizeof c->err,
                 "%s does not know the wall clock of its times (a store of an older collector): "
                 "give --t0/--t1 on the collector's clock",
                 nsc_src_name(c->src));
        rc = NSC_EXIT_FAIL;
    }
    nsc_doc_free(&d);
    return rc;
}

/* One bound of the window, in ns on the collector's clock. --t0/--t1: a
 * time on that clock (ns, or with a unit: "1216.28s") or a UTC time;
 * --since/--until (ago): a length of time before now, or a UTC time. */
static int time_opt(nsc_cli_ctx *c, const char *name, int ago, int *given, uint64_t *ns)
{
    const char *v = nsc_cli_get(c->args, name);
    uint64_t span = 0;
    int64_t utc = 0, off;
    *given = v != NULL;
    if (!v || (!ago && nsc_parse_span(v, ns) == 0))
        return NSC_EXIT_OK;
    int is_utc = nsc_parse_utc(v, &utc) == 0;
    if (!is_utc && (!ago || nsc_parse_span(v, &span) != 0)) {
        snprintf(c->err, sizeof c->err, "--%s wants %s or a UTC time like 2026-11-28T17:30:00Z, got '%s'", name,
                 ago ? "a length of time before now (90s, 5m, 2h)" : "a time on the collector's clock (ns, or 1216.5s)",
                 v);
        return NSC_EXIT_USAGE;
    }
    int rc = wall_offset(c, &off);
    if (rc)
        return rc;
    if (!is_utc)
        utc = (int64_t)nsc_wall_ns() - (int64_t)span;
    *ns = utc > off ? (uint64_t)(utc - off) : 0;
    return NSC_EXIT_OK;
}

static int add_bound(nsc_cli_ctx *c, char *qs, size_t cap, const char *param, uint64_t ns)
{
    char num[24];
    snprintf(num, sizeof num, "%" PRIu64, ns);
    if (nsc_qs_add(qs, cap, param, num) == 0)
        return NSC_EXIT_OK;
    snprintf(c->err, sizeof c->err, "query too long");
    return NSC_EXIT_USAGE;
}

/* The window's bounds: one of --t0 and --since, one of --t1 and --until. */
static int window(nsc_cli_ctx *c, char *qs, size_t cap)
{
    uint64_t t0 = 0, t1 = 0, since = 0, until = 0;
    int has_t0, has_t1, has_since, has_until, rc;
    if ((rc = time_opt(c, "t0", 0, &has_t0, &t0)) || (rc = time_opt(c, "t1", 0, &has_t1, &t1)) ||
        (rc = time_opt(c, "since", 1, &has_since, &since)) || (rc = time_opt(c, "until", 1, &has_until, &until)))
        return rc;
    if ((has_t0 && has_since) || (has_t1 && has_until)) {
        snprintf(c->err, sizeof c->err, "give --t0 or --since, and --t1 or --until, not both");
        return NSC_EXIT_USAGE;
    }
    const char *from = has_since ? "since" : "t0", *to = has_until ? "until" : "t1";
    t0 = has_since ? since : t0;
    t1 = has_until ? until : t1;
    has_t0 |= has_since;
    has_t1 |= has_until;
    if (has_t0 && has_t1 && t0 > t1) {
        snprintf(c->err, sizeof c->err, "bad time range: --%s %s is after --%s %s", from, nsc_cli_get(c->args, from),
                 to, nsc_cli_get(c->args, to));
        return NSC_EXIT_USAGE;
    }
    if (has_t0 && (rc = add_bound(c, qs, cap, "t0_ns", t0)))
        return rc;
    return has_t1 ? add_bound(c, qs, cap, "t1_ns", t1) : NSC_EXIT_OK;
}

int nsc_cli_query(nsc_cli_ctx *c, char *qs, size_t cap)
{
    qs[0] = 0;
    unsigned long long n = 0;
    int rc = nsc_cli_u64_opt(c, "limit", &n);
    if (rc)
        return rc;
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        const char *v = nsc_cli_get(c->args, params[i].opt);
        if (v && nsc_qs_add(qs, cap, params[i].param, v) != 0) {
            snprintf(c->err, sizeof c->err, "query too long");
            return NSC_EXIT_USAGE;
        }
    }
    return window(c, qs, cap);
}

/* The source, opened on first use: NSC_EXIT_OK, or the exit code of why not. */
static int source(nsc_cli_ctx *c)
{
    int rc = c->src ? 0 : nsc_src_open(&c->src_opts, &c->src, c->err, sizeof c->err);
    return rc == 0 ? NSC_EXIT_OK : rc == NSC_DIAG_USAGE ? NSC_EXIT_USAGE : NSC_EXIT_FAIL;
}

static int src_get(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
                   size_t errcap)
{
    return nsc_src_get(arg, endpoint, qs, 0, fn, fn_arg, err, errcap);
}

int nsc_cli_diag_src(nsc_cli_ctx *c, nsc_diag_src *d)
{
    memset(d, 0, sizeof *d);
    int rc = source(c);
    if (rc)
        return rc;
    d->get = src_get;
    d->arg = c->src;
    d->name = nsc_src_name(c->src);
    return NSC_EXIT_OK;
}

int nsc_cli_diag_rc(nsc_cli_ctx *c, const nsc_diag_src *d, int rc)
{
    if (rc == NSC_DIAG_OK)
        return NSC_EXIT_OK;
    snprintf(c->err, sizeof c->err, "%s", d->err);
    return rc == NSC_DIAG_USAGE ? NSC_EXIT_USAGE : NSC_EXIT_FAIL;
}

int nsc_cli_fetch_doc(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_doc *d)
{
    nsc_diag_src s;
    memset(d, 0, sizeof *d);
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    return nsc_cli_diag_rc(c, &s, nsc_diag_fetch_doc(&s, endpoint, qs, d));
}

int nsc_cli_fetch_ndjson(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                         void *arg)
{
    nsc_diag_src s;
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    return nsc_cli_diag_rc(c, &s, nsc_diag_fetch_ndjson(&s, endpoint, qs, fn, arg));
}

typedef struct noting {
    nsc_ndjson_fn fn;
    void *arg;
} noting;

/* A header whose detail fetch came back incomplete (a collector with detail
 * = on-demand, docs/api.md) is said on stderr, agent by agent: the view
 * shows only what was held. Every record then goes on to fn. */
static int note_detail(void *arg, const nsc_json *v, const char *line, size_t len)
{
    const noting *n = arg;
    const nsc_json *d = nsc_json_get(v, "detail"), *c = nsc_json_get(d, "complete");
    const nsc_json *m = c && c->kind == NSC_JSON_FALSE ? nsc_json_get(d, "missing") : NULL;
    for (const nsc_json *e = m ? nsc_json_first(m) : NULL; e; e = nsc_json_next(m, e)) {
        uint64_t from, to;
        fprintf(stderr, "ncclscope: detail of agent %s (host %s) missing: %s",
                nsc_json_str_or(e, "agent", "?"), nsc_json_str_or(e, "host", "?"), nsc_json_str_or(e, "reason", "?"));
        if (nsc_json_u64(nsc_json_get(e, "held_from_ns"), &from) == 0 &&
            nsc_json_u64(nsc_json_get(e, "held_to_ns"), &to) == 0 && (from || to))
            fprintf(stderr, "; its ring holds %" PRIu64 " .. %" PRIu64 " ns", from, to);
        fputc('\n', stderr);
    }
    return n->fn(n->arg, v, line, len);
}

int nsc_cli_fetch_pages(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                        void *arg)
{
    nsc_diag_src s;
    noting n = {fn, arg};
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    return nsc_cli_diag_rc(c, &s, nsc_diag_fetch_pages(&s, endpoint, qs, nsc_cli_get(c->args, "limit"), note_detail, &n));
}

/* A fetch whose body went to stdout or a reader: negative is the source's
 * error (c->err set), positive is the reader's (its message in why). */
static int fetched(nsc_cli_ctx *c, int rc, const char *why)
{
    if (rc == 0)
        return NSC_EXIT_OK;
    if (rc == NSC_DIAG_USAGE)
        return NSC_EXIT_USAGE;
    if (rc > 0 && why && why[0])
        snprintf(c->err, sizeof c->err, "%s", why);
    return NSC_EXIT_FAIL;
}

static int to_stdout(void *arg, const char *data, size_t len)
{
    (void)arg;
    return fwrite(data, 1, len, stdout) == len ? 0 : 1;
}

int nsc_cli_fetch_raw(nsc_cli_ctx *c, const char *endpoint, const char *qs)
{
    int rc = source(c);
    if (rc)
        return rc;
    rc = nsc_src_get(c->src, endpoint, qs, 0, to_stdout, NULL, c->err, sizeof c->err);
    return fetched(c, rc, "writing to stdout failed");
}

int nsc_cli_fetch_sse(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_sse_fn fn, void *arg)
{
    int rc = source(c);
    if (rc)
        return rc;
    nsc_sse r;
    nsc_sse_init(&r, fn, arg);
    rc = nsc_src_get(c->src, endpoint, qs, 1, nsc_sse_feed, &r, c->err, sizeof c->err);
    nsc_sse_free(&r);
    return fetched(c, rc, NULL);
}

int nsc_cli_print_line(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)arg, (void)v;
    return fwrite(line, 1, len, stdout) == len && putchar('\n') != EOF ? 0 : 1;
}
