/* fetch.c: the verbs' way to their data: query strings and fetches (see cli.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

/* API parameters a verb may pass on: option name -> parameter name. */
static const struct {
    const char *opt, *param;
} params[] = {{"job", "job"},   {"comm", "comm"}, {"rank", "rank"},   {"func", "func"},
              {"seq", "seq"},   {"limit", "limit"}, {"t0", "t0_ns"}, {"t1", "t1_ns"},
              {"type", "type"}};

int nsc_cli_query(nsc_cli_ctx *c, char *qs, size_t cap)
{
    qs[0] = 0;
    unsigned long long t0 = 0, t1 = 0, n = 0;
    int rc;
    if ((rc = nsc_cli_u64_opt(c, "t0", &t0)) || (rc = nsc_cli_u64_opt(c, "t1", &t1)) ||
        (rc = nsc_cli_u64_opt(c, "limit", &n)))
        return rc;
    if (nsc_cli_has(c->args, "t0") && nsc_cli_has(c->args, "t1") && t0 > t1) {
        snprintf(c->err, sizeof c->err, "bad time range: --t0 %llu is after --t1 %llu", t0, t1);
        return NSC_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        const char *v = nsc_cli_get(c->args, params[i].opt);
        if (v && nsc_qs_add(qs, cap, params[i].param, v) != 0) {
            snprintf(c->err, sizeof c->err, "query too long");
            return NSC_EXIT_USAGE;
        }
    }
    return NSC_EXIT_OK;
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

int nsc_cli_fetch_pages(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                        void *arg)
{
    nsc_diag_src s;
    int rc = nsc_cli_diag_src(c, &s);
    if (rc)
        return rc;
    return nsc_cli_diag_rc(c, &s, nsc_diag_fetch_pages(&s, endpoint, qs, nsc_cli_get(c->args, "limit"), fn, arg));
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
