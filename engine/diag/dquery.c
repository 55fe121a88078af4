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

int nsc_diag_query_get(nsc_store_reader *rd, const char *endpoint, const char *qs, const atomic_int *stop,
                       nsc_diag_body_fn fn, void *arg, char *err, size_t errcap, int *code)
{
    nsc_query *q;
    relay r = {fn, arg, 0};
    if (qs && qs[0] == '&')
        qs++;
    int rc = nsc_query_parse(endpoint, qs, &q, err, errcap);
    if (rc == 0) {
        nsc_query_set_stop(q, stop);
        rc = nsc_query_run(q, rd, relay_write, &r, err, errcap);
        nsc_query_free(q);
    }
    *code = rc;
    if (rc == NSC_QUERY_EWRITE && r.rc)
        return r.rc;
    return rc == NSC_QUERY_EPARAM ? NSC_DIAG_USAGE : rc ? -1 : 0;
}
