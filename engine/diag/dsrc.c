/* dsrc.c: the analysis's way to its data: documents, NDJSON and pages
 * fetched through a source's get callback (see diag.h). */
#include <stdio.h>
#include <string.h>

#include "diag.h"
#include "qs.h"

/* A fetch whose body went to a reader: negative is the source's error
 * (s->err set), positive is the reader's (its message in why). */
static int fetched(nsc_diag_src *s, int rc, const char *why)
{
    if (rc == 0 || rc == NSC_DIAG_USAGE)
        return rc;
    if (rc != -1 && why && why[0])
        snprintf(s->err, sizeof s->err, "%s", why);
    return NSC_DIAG_FAIL;
}

int nsc_diag_fetch_doc(nsc_diag_src *s, const char *endpoint, const char *qs, nsc_doc *d)
{
    memset(d, 0, sizeof *d);
    int rc = s->get(s->arg, endpoint, qs, nsc_doc_feed, d, s->err, sizeof s->err);
    if ((rc = fetched(s, rc, d->err)) != NSC_DIAG_OK)
        return rc;
    if (nsc_doc_parse(d) != 0) {
        snprintf(s->err, sizeof s->err, "%s from %s", d->err, s->name);
        return NSC_DIAG_FAIL;
    }
    return NSC_DIAG_OK;
}

int nsc_diag_fetch_ndjson(nsc_diag_src *s, const char *endpoint, const char *qs, nsc_ndjson_fn fn, void *arg)
{
    nsc_ndjson r;
    nsc_ndjson_init(&r, fn, arg);
    int rc = s->get(s->arg, endpoint, qs, nsc_ndjson_feed, &r, s->err, sizeof s->err);
    if (rc == 0 && nsc_ndjson_end(&r) != 0)
        rc = 1;
    rc = fetched(s, rc, r.err);
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

int nsc_diag_fetch_pages(nsc_diag_src *s, const char *endpoint, const char *qs, const char *limit,
                         nsc_ndjson_fn fn, void *arg)
{
    pager p = {.fn = fn, .arg = arg};
    char q[3072];
    int rc;
    do {
        snprintf(q, sizeof q, "%s", qs);
        if (!limit && nsc_qs_add(q, sizeof q, "limit", "1000000") != 0)
            return NSC_DIAG_FAIL;
        if (p.cursor[0] && nsc_qs_add(q, sizeof q, "cursor", p.cursor) != 0) {
            snprintf(s->err, sizeof s->err, "cursor too long");
            return NSC_DIAG_FAIL;
        }
        p.ended = 0;
        p.cursor[0] = 0;
        rc = nsc_diag_fetch_ndjson(s, endpoint, q, page_line, &p);
        if (rc == NSC_DIAG_OK && !p.ended) {
            snprintf(s->err, sizeof s->err, "%s from %s ended early (no end line): the source failed mid-way",
                     endpoint, s->name);
            rc = NSC_DIAG_FAIL;
        }
        p.pages++;
    } while (rc == NSC_DIAG_OK && p.cursor[0] && !limit);
    /* On stderr, so that what a script reads stays the records alone. */
    if (rc == NSC_DIAG_OK && p.cursor[0])
        fprintf(stderr, "ncclscope: stopped at --limit %s: the window holds more (raise --limit or narrow --t0/--t1)\n",
                limit);
    return rc;
}
