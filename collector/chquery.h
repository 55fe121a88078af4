/* chquery.h: the query endpoints of a collector that stores into ClickHouse.
 *
 * Owns the query's own LMDB store: a private folder under the db
 * directory's tmp/ (made per query, removed when it ends; what a killed
 * collector left there is removed when the next one starts), into which the
 * jobs a query reads are loaded from ClickHouse (chread.h), then read by
 * the same code as the LMDB collector's (common/query, common/diag), so the
 * JSON is the same by construction. Each query runs in a query worker
 * (qstream.h): ingest, the HTTP thread and /healthz never wait for it.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHQUERY_H
#define NCCLSCOPE_COLLECTOR_CHQUERY_H

#include <event2/http.h>
#include <limits.h>

#include "collector.h"
#include "qstream.h"
#include "query.h"

#define NSC_CHQUERY_JOBS_MAX 256

/* A query's own store and the jobs loaded into it. */
typedef struct nsc_chscratch {
    nsc_collector *c;
    char dir[PATH_MAX];
    nsc_store *st;
    char (*jobs)[64];
    size_t njobs, jobs_cap;
    int default_loaded;  /* the job of a query naming none */
} nsc_chscratch;

/* Make the folder and open its store: 0, or NSC_QUERY_ESTORE with err. */
int nsc_chscratch_open(nsc_chscratch *s, nsc_collector *c, char *err, size_t errcap);
/* Load the job named by the query string qs ("job=..."; may be NULL or
 * start with '&'), or the default job when it names none, unless loaded
 * already: 0 or an NSC_QUERY_* error with err. */
int nsc_chscratch_load_qs(nsc_chscratch *s, const char *qs, char *err, size_t errcap);
/* Close the store and remove the folder. */
void nsc_chscratch_close(nsc_chscratch *s);

/* Remove what queries of an earlier run left in the db directory's tmp/. */
void nsc_chquery_sweep(nsc_collector *c);

/* Answer req with q (taken) read from ClickHouse; qs: the request's query string. */
void nsc_chquery_start(nsc_collector *c, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q,
                       const char *qs);

#endif
