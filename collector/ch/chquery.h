/* chquery.h: the query endpoints of a collector that stores into ClickHouse.
 *
 * Owns what one request reads: the jobs its queries name (or the only job
 * ClickHouse holds, for a query naming none), each held in the query cache
 * (chcache.h: a private LMDB store per job, loaded from ClickHouse unless
 * kept and unchanged) for the whole request, so every query of an analysis
 * reads the same data; they are read by the same code as the LMDB
 * collector's (engine/query, engine/diag), so the JSON is the same by
 * construction. Each request runs in a query worker (qstream.h): ingest,
 * the HTTP thread and /healthz never wait for it.
 */
#ifndef NCCLSCOPE_COLLECTOR_CHQUERY_H
#define NCCLSCOPE_COLLECTOR_CHQUERY_H

#include <event2/http.h>
#include <limits.h>

#include "chparts.h"
#include "cstate.h"
#include "qstream.h"
#include "query.h"

#define NSC_CHQUERY_JOBS_MAX 256

/* The jobs one request holds, and the store of the one its last query named. */
typedef struct nsc_chjobs {
    nsc_chback *b;
    struct nsc_chcache_job **held;
    size_t nheld, held_cap;
    nsc_store *st;
    char only[64];     /* the job of a query naming none, once known */
    int only_known;
} nsc_chjobs;

void nsc_chjobs_init(nsc_chjobs *s, nsc_chback *b);
/* Hold job, or the only job when job is NULL, unless held already, and
 * make it s->st: 0 or an NSC_QUERY_* error with err. */
int nsc_chjobs_load(nsc_chjobs *s, const char *job, char *err, size_t errcap);
/* Let go of every job held. */
void nsc_chjobs_release(nsc_chjobs *s);

/* Answer req with q (taken) read from ClickHouse, from the job q names. */
void nsc_chquery_start(nsc_chback *b, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q);

#endif
