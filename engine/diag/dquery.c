/* dquery.c: the query endpoints answered in-process from a store reader,
 * the way a source's get does (diag.h): the collector's analysis and the
 * CLI's --db mode read the store through it. */
#include <stdio.h>

#include "diag.h"

typedef struct relay {
    nsc_diag_body_fn fn;
    void *arg;
    int rc;  /* the body callback's nonzero return */
} relay;

static int relay_write(void *arg, const void *data, size_t len)
{
    relay *r = arg;
    r->rc = r->fn(r->arg, data, len);
    return r->rc;
}

/* A query's result as a get callback returns it (diag.h). */
static int as_get(int rc, const relay *r)
{
    if (rc == NSC_QUERY_EWRITE && r && r->rc)
        return r->rc;
    return rc == NSC_QUERY_EPARAM ? NSC_DIAG_USAGE : rc ? -1 : 0;
}

int nsc_diag_query_parse(const char *endpoint, const char *qs, nsc_query **q, char *err, size_t errcap, int *code)
{
    if (qs && qs[0] == '&')
        qs++;
    *code = nsc_query_parse(endpoint, qs, q, err, errcap);
    return as_get(*code, NULL);
}

int nsc_diag_query_run(nsc_store_reader *rd, const nsc_query *q, nsc_diag_body_fn fn, void *arg, char *err,
                       size_t errcap, int *code)
{
    relay r = {fn, arg, 0};
    *code = nsc_query_run(q, rd, relay_write, &r, err, errcap);
    return as_get(*code, &r);
}

int nsc_diag_query_get(nsc_store_reader *rd, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *arg,
                       char *err, size_t errcap, int *code)
{
    nsc_query *q;
    int rc = nsc_diag_query_parse(endpoint, qs, &q, err, errcap, code);
    if (rc == 0) {
        rc = nsc_diag_query_run(rd, q, fn, arg, err, errcap, code);
        nsc_query_free(q);
    }
    return rc;
}
