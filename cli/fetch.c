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

static nsc_src *source(nsc_cli_ctx *c)
{
    if (!c->src && nsc_src_open(&c->src_opts, &c->src, c->err, sizeof c->err) != 0)
        return NULL;
    return c->src;
}

/* A fetch whose body went to a reader: -1 is the source's error (c->err set),
 * nonzero is the reader's (its message in why). */
static int fetched(nsc_cli_ctx *c, int rc, const char *why)
{
    if (rc == 0)
        return NSC_EXIT_OK;
    if (rc != -1 && why && why[0])
        snprintf(c->err, sizeof c->err, "%s", why);
    return NSC_EXIT_FAIL;
}

int nsc_cli_fetch_doc(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_doc *d)
{
    memset(d, 0, sizeof *d);
    nsc_src *s = source(c);
    if (!s)
        return NSC_EXIT_FAIL;
    int rc = nsc_src_get(s, endpoint, qs, 0, nsc_doc_feed, d, c->err, sizeof c->err);
    if (fetched(c, rc, d->err) != NSC_EXIT_OK)
        return NSC_EXIT_FAIL;
    if (nsc_doc_parse(d) != 0) {
        snprintf(c->err, sizeof c->err, "%s from %s", d->err, nsc_src_name(s));
        return NSC_EXIT_FAIL;
    }
    return NSC_EXIT_OK;
}

int nsc_cli_fetch_ndjson(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                         void *arg)
{
    nsc_src *s = source(c);
    if (!s)
        return NSC_EXIT_FAIL;
    nsc_ndjson r;
    nsc_ndjson_init(&r, fn, arg);
    int rc = nsc_src_get(s, endpoint, qs, 0, nsc_ndjson_feed, &r, c->err, sizeof c->err);
    if (rc == 0 && nsc_ndjson_end(&r) != 0)
        rc = 1;
    rc = fetched(c, rc, r.err);
    nsc_ndjson_free(&r);
    return rc;
}

/* Paged NDJSON (timeline, collectives): header, records, and an end line
 * carrying next_cursor. Later pages' headers are dropped; a page without its
 * end line means the source's stream was cut, which is an error. */
typedef struct pager {
    nsc_ndjson_fn fn;
    void *arg;
    int pages, ended;
    char cursor[512];
} pager;

static int page_line(void *arg, const nsc_json *v, const char *line, size_t len)
{
    pager *p = arg;
    const char *kind = nsc_json_str(nsc_json_get(v, "kind"));
    if (kind && strcmp(kind, "end") == 0) {
        p->ended = 1;
        const char *next = nsc_json_str(nsc_json_get(v, "next_cursor"));
        snprintf(p->cursor, sizeof p->cursor, "%s", next ? next : "");
        if (next)
            return 0;
        return p->fn(p->arg, v, line, len);
    }
    if (kind && strcmp(kind, "header") == 0 && p->pages > 0)
        return 0;
    return p->fn(p->arg, v, line, len);
}

int nsc_cli_fetch_pages(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_ndjson_fn fn,
                        void *arg)
{
    pager p = {.fn = fn, .arg = arg};
    char q[3072];
    int rc;
    do {
        snprintf(q, sizeof q, "%s", qs);
        if (!nsc_cli_has(c->args, "limit") && nsc_qs_add(q, sizeof q, "limit", "1000000") != 0)
            return NSC_EXIT_FAIL;
        if (p.cursor[0] && nsc_qs_add(q, sizeof q, "cursor", p.cursor) != 0) {
            snprintf(c->err, sizeof c->err, "cursor too long");
            return NSC_EXIT_FAIL;
        }
        p.ended = 0;
        p.cursor[0] = 0;
        rc = nsc_cli_fetch_ndjson(c, endpoint, q, page_line, &p);
        if (rc == NSC_EXIT_OK && !p.ended) {
            snprintf(c->err, sizeof c->err, "%s from %s ended early (no end line): the source failed mid-way",
                     endpoint, nsc_src_name(c->src));
            rc = NSC_EXIT_FAIL;
        }
        p.pages++;
    } while (rc == NSC_EXIT_OK && p.cursor[0] && !nsc_cli_has(c->args, "limit"));
    /* On stderr, so that what a script reads stays the records alone. */
    if (rc == NSC_EXIT_OK && p.cursor[0])
        fprintf(stderr, "ncclscope: stopped at --limit %s: the window holds more (raise --limit or narrow --t0/--t1)\n",
                nsc_cli_get(c->args, "limit"));
    return rc;
}

static int to_stdout(void *arg, const char *data, size_t len)
{
    (void)arg;
    return fwrite(data, 1, len, stdout) == len ? 0 : 1;
}

int nsc_cli_fetch_raw(nsc_cli_ctx *c, const char *endpoint, const char *qs)
{
    nsc_src *s = source(c);
    if (!s)
        return NSC_EXIT_FAIL;
    int rc = nsc_src_get(s, endpoint, qs, 0, to_stdout, NULL, c->err, sizeof c->err);
    return fetched(c, rc, "writing to stdout failed");
}

int nsc_cli_fetch_sse(nsc_cli_ctx *c, const char *endpoint, const char *qs, nsc_sse_fn fn, void *arg)
{
    nsc_src *s = source(c);
    if (!s)
        return NSC_EXIT_FAIL;
    nsc_sse r;
    nsc_sse_init(&r, fn, arg);
    int rc = nsc_src_get(s, endpoint, qs, 1, nsc_sse_feed, &r, c->err, sizeof c->err);
    nsc_sse_free(&r);
    return fetched(c, rc, NULL);
}

int nsc_cli_print_line(void *arg, const nsc_json *v, const char *line, size_t len)
{
    (void)arg, (void)v;
    return fwrite(line, 1, len, stdout) == len && putchar('\n') != EOF ? 0 : 1;
}
