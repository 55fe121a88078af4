/* stream.c: NDJSON, whole-document and server-sent-event readers (see stream.h). */
#include "stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n, size_t max)
{
    if (*len + n > max)
        return -1;
    if (nsc_grow_to(buf, *len + n + 1, cap, 1, 4096))
        return -1;
    if (n)
        memcpy(*buf + *len, p, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

typedef int (*line_fn)(void *arg, char *line, size_t len);

/* Split bytes into lines (without '\n'); a line that arrives whole in data is
 * passed in place, only a line cut between pieces is copied. */
static int split_lines(nsc_linebuf *lb, const char *data, size_t len, line_fn fn, void *arg)
{
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (!nl || lb->len > 0) {
            if (append(&lb->buf, &lb->len, &lb->cap, data, n, NSC_STREAM_MAX_LINE) != 0)
                return -2;
        }
        if (!nl)
            return 0;
        int rc;
        lb->lines++;
        if (lb->len > 0) {
            rc = fn(arg, lb->buf, lb->len);
            lb->len = 0;
        } else {
            rc = fn(arg, (char *)data, n);
        }
        if (rc)
            return rc;
        data += n + 1;
        len -= n + 1;
    }
    return 0;
}

/* ---- NDJSON ---- */

void nsc_ndjson_init(nsc_ndjson *r, nsc_ndjson_fn fn, void *arg)
{
    memset(r, 0, sizeof *r);
    r->fn = fn;
    r->arg = arg;
}

static int ndjson_line(void *arg, char *line, size_t len)
{
    nsc_ndjson *r = arg;
    while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
        len--;
    if (len == 0)
        return 0;
    const nsc_json *flat;
    int scanned = nsc_flat_scan(&r->flat, line, len, &flat);
    if (scanned == NSC_FLAT_OK)
        return r->fn(r->arg, flat, line, len);
    if (scanned == NSC_FLAT_NOMEM) {
        snprintf(r->err, sizeof r->err, "out of memory reading line %llu of the response",
                 (unsigned long long)r->lb.lines);
        return 1;
    }
    nsc_json_doc doc;
    nsc_json_error e;
    if (nsc_json_parse(line, len, NULL, &doc, &e) != 0) {
        snprintf(r->err, sizeof r->err, "bad JSON in line %llu of the response: %s at byte %zu",
                 (unsigned long long)r->lb.lines, e.msg, e.offset);
        return 1;
    }
    int rc = r->fn(r->arg, nsc_json_root(&doc), line, len);
    nsc_json_free(&doc);
    return rc;
}

int nsc_ndjson_feed(void *arg, const char *data, size_t len)
{
    nsc_ndjson *r = arg;
    int rc = split_lines(&r->lb, data, len, ndjson_line, r);
    if (rc == -2) {
        snprintf(r->err, sizeof r->err, "a response line is longer than %u bytes", NSC_STREAM_MAX_LINE);
        rc = 1;
    }
    return rc;
}

int nsc_ndjson_end(nsc_ndjson *r)
{
    if (r->lb.len == 0)
        return 0;
    r->lb.lines++;
    size_t n = r->lb.len;
    r->lb.len = 0;
    return ndjson_line(r, r->lb.buf, n);
}

void nsc_ndjson_free(nsc_ndjson *r)
{
    free(r->lb.buf);
    nsc_flat_free(&r->flat);
}

/* ---- whole document ---- */

int nsc_doc_feed(void *arg, const char *data, size_t len)
{
    nsc_doc *d = arg;
    if (append(&d->buf, &d->len, &d->cap, data, len, NSC_STREAM_MAX_DOC) != 0) {
        snprintf(d->err, sizeof d->err, "response larger than %u bytes or out of memory",
                 NSC_STREAM_MAX_DOC);
        return 1;
    }
    return 0;
}

int nsc_doc_parse(nsc_doc *d)
{
    nsc_json_error e;
    if (nsc_json_parse(d->buf ? d->buf : "", d->len, NULL, &d->doc, &e) != 0) {
        snprintf(d->err, sizeof d->err, "bad JSON in the response: %s at byte %zu", e.msg, e.offset);
        return -1;
    }
    d->parsed = 1;
    return 0;
}

void nsc_doc_free(nsc_doc *d)
{
    if (d->parsed)
        nsc_json_free(&d->doc);
    free(d->buf);
    memset(d, 0, sizeof *d);
}

/* ---- server-sent events ---- */

void nsc_sse_init(nsc_sse *s, nsc_sse_fn fn, void *arg)
{
    memset(s, 0, sizeof *s);
    s->fn = fn;
    s->arg = arg;
}

static int sse_line(void *arg, char *line, size_t len)
{
    nsc_sse *s = arg;
    if (len && line[len - 1] == '\r')
        len--;
    if (len == 0) {  /* end of an event */
        int rc = 0;
        if (s->dlen > 0) {
            s->data[s->dlen - 1] = 0;  /* the last '\n' */
            rc = s->fn(s->arg, s->event[0] ? s->event : "message", s->data);
        }
        s->dlen = 0;
        s->event[0] = 0;
        return rc;
    }
    if (line[0] == ':')
        return 0;  /* comment (keep-alive) */
    const char *colon = memchr(line, ':', len);
    size_t nl = colon ? (size_t)(colon - line) : len;
    const char *v = colon ? colon + 1 : line + len;
    if (v < line + len && *v == ' ')
        v++;
    size_t vl = (size_t)(line + len - v);
    if (nl == 5 && memcmp(line, "event", 5) == 0)
        snprintf(s->event, sizeof s->event, "%.*s", (int)vl, v);
    else if (nl == 4 && memcmp(line, "data", 4) == 0) {
        if (append(&s->data, &s->dlen, &s->dcap, v, vl, NSC_STREAM_MAX_LINE) != 0 ||
            append(&s->data, &s->dlen, &s->dcap, "\n", 1, NSC_STREAM_MAX_LINE) != 0)
            return 1;
    }
    return 0;
}

int nsc_sse_feed(void *arg, const char *data, size_t len)
{
    nsc_sse *s = arg;
    int rc = split_lines(&s->lb, data, len, sse_line, s);
    return rc == -2 ? 1 : rc;
}

void nsc_sse_free(nsc_sse *s)
{
    free(s->lb.buf);
    free(s->data);
}
