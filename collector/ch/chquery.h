/* chquery.h: the query endpoints of a collector that stores into ClickHouse.
 *
 * Owns what one request reads: the jobs its queries name (or the only job
 * ClickHouse holds, for a query naming none), each held in the query cache
 * (chcache.h: a private LMDB store per job, loaded from ClickHouse unless
 * kept and unchanged) for the whole request, so every query of an analysis
 * that reads it whole reads the same data (a query with a scope reads its
 * own rows, loaded for it); they are read by the same code as the LMDB
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
/* Hold what q reads of its job (the only job when it names none) and make
 * it s->st: a ledger query's or a raw-event query's scope where it has one
 * (nsc_query_ledger_scope, nsc_query_event_scope), else the whole job,
 * unless held already, with its ledger where q reads it. 0 or an
 * NSC_QUERY_* error with err. */
int nsc_chjobs_hold(nsc_chjobs *s, const nsc_query *q, char *err, size_t errcap);
/* The query that read st ended: a scoped store is let go at once (no other
 * query reads it); a whole job stays held for the request's next ones. */
void nsc_chjobs_done(nsc_chjobs *s, const nsc_store *st);
/* Let go of every job held. */
void nsc_chjobs_release(nsc_chjobs *s);

/* Answer req with q (taken) read from ClickHouse, from the job q names. */
void nsc_chquery_start(nsc_chback *b, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q);

#endif
