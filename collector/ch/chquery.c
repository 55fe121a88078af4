/* chquery.c: queries answered from ClickHouse (see chquery.h). */
#include "chquery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chcache.h"
#include "chread.h"
#include "grow.h"
#include "reply.h"

void nsc_chjobs_init(nsc_chjobs *s, nsc_chback *b)
{
    memset(s, 0, sizeof *s);
    s->b = b;
}

void nsc_chjobs_release(nsc_chjobs *s)
{
    for (size_t i = 0; i < s->nheld; i++)
        nsc_chcache_let_go(s->b->cache, s->held[i]);
    free(s->held);
    nsc_chjobs_init(s, s->b);
}

/* Hold job (once per request; with scope, only what it asks for; without
 * ledger, a store with or without it) and make its store the current one.
 * A whole job held already serves any query of it; a scoped store serves
 * only its own query (nsc_chjobs_done lets it go). */
static int hold(nsc_chjobs *s, const char *job, const nsc_query_scope *scope, int ledger, char *err, size_t errcap)
{
    for (size_t i = 0; i < s->nheld; i++)
        if (!nsc_chcache_scoped(s->held[i]) && strcmp(nsc_chcache_name(s->held[i]), job) == 0 &&
            nsc_chcache_has_ledger(s->held[i]) >= ledger) {
            s->st = nsc_chcache_store(s->held[i]);
            return 0;
        }
    if (s->nheld == NSC_CHQUERY_JOBS_MAX || nsc_grow(&s->held, s->nheld, &s->held_cap, sizeof *s->held, 4)) {
        snprintf(err, errcap, "too many jobs in one query");
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_chcache_hold(s->b->cache, job, scope, ledger, &s->held[s->nheld], err, errcap);
    if (!rc)
        s->st = nsc_chcache_store(s->held[s->nheld++]);
    return rc;
}

/* The only job ClickHouse holds ("" for none), asked once per request. */
static int only_job(nsc_chjobs *s, char *err, size_t errcap)
{
    char tmp[PATH_MAX];
    if (s->only_known)
        return 0;
    if (nsc_chcache_tmpdir(s->b->cache, tmp, sizeof tmp)) {
        snprintf(err, errcap, "cannot make %s/tmp", s->b->c->cfg.db);
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_chread_only_job(s->b->ch, tmp, s->only, sizeof s->only, err, errcap);
    s->only_known = rc == 0;
    return rc;
}

/* Hold job, or the only job when job is NULL, with its ledger or not. */
static int load(nsc_chjobs *s, const char *job, int ledger, char *err, size_t errcap)
{
    int rc = job ? 0 : only_job(s, err, errcap);
    return rc ? rc : hold(s, job ? job : s->only, NULL, ledger, err, errcap);
}

int nsc_chjobs_hold(nsc_chjobs *s, const nsc_query *q, char *err, size_t errcap)
{
    nsc_query_scope scope;
    if (nsc_query_ledger_scope(q, &scope) == 0)
        return hold(s, scope.job, &scope, 1, err, errcap);
    if (nsc_query_event_scope(q, &scope) == 0)
        return hold(s, scope.job, &scope, 0, err, errcap);
    return load(s, nsc_query_job(q), nsc_query_reads_ledger(q), err, errcap);
}

void nsc_chjobs_done(nsc_chjobs *s, const nsc_store *st)
{
    for (size_t i = 0; i < s->nheld; i++)
        if (nsc_chcache_scoped(s->held[i]) && nsc_chcache_store(s->held[i]) == st) {
            nsc_chcache_let_go(s->b->cache, s->held[i]);
            s->held[i] = s->held[--s->nheld];
            return;
        }
}

/* ---- the query endpoints ---- */

typedef struct chquery_job {
    nsc_chback *b;
    nsc_query *q;
} chquery_job;

static int run(void *arg, nsc_store_reader *unused, nsc_query_write_fn fn, void *fn_arg, char *err, size_t errcap)
{
    (void)unused;  /* NULL: the query reads its own store */
    chquery_job *j = arg;
    nsc_chjobs s;
    nsc_store_reader *rd;
    nsc_chjobs_init(&s, j->b);
    int rc = nsc_chjobs_hold(&s, j->q, err, errcap);
    if (!rc) {
        int src = nsc_store_read_begin(s.st, &rd);
        if (src) {
            snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(src));
            rc = NSC_QUERY_ESTORE;
        } else {
            rc = nsc_query_run(j->q, rd, fn, fn_arg, err, errcap);
            nsc_store_read_end(rd);
        }
    }
    nsc_chjobs_release(&s);
    return rc;
}

static void job_free(void *arg)
{
    chquery_job *j = arg;
    nsc_query_free(j->q);
    free(j);
}

void nsc_chquery_start(nsc_chback *b, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q)
{
    chquery_job *j = calloc(1, sizeof *j);
    if (!j) {
        nsc_query_free(q);
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        return;
    }
    j->b = b;
    j->q = q;
    nsc_qjob job = {nsc_query_name(q), nsc_query_content_type(q), 1, run, job_free, j};
    nsc_qstream_start_job(set, req, &job);
}
