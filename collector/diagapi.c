/* diagapi.c: the analysis's endpoints (see diagapi.h). */
#include "diagapi.h"

#include <event2/keyvalq_struct.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "diag.h"
#include "export.h"
#include "livejson.h"
#include "prom.h"
#include "qs.h"
#include "reply.h"

/* The parameters each takes (window: t0_ns, t1_ns; trace: rank, type and
 * format, export's alone). */
static const struct {
    const char *name;
    int job, comm, window, trace;
} endpoints[] = {{"diagnose", 1, 1, 0, 0}, {"links", 1, 1, 0, 0}, {"hosts", 0, 0, 0, 0}, {"topology", 1, 1, 1, 0},
                 {"export", 1, 1, 1, 1}};

struct nsc_diagapi_req {
    nsc_collector *c;
    char endpoint[16];
    char *job, *comm, *t0, *t1, *rank, *type, *format;  /* NULL when not given */
};

static int endpoint_of(const char *name)
{
    for (size_t i = 0; i < sizeof endpoints / sizeof *endpoints; i++)
        if (strcmp(endpoints[i].name, name) == 0)
            return (int)i;
    return -1;
}

int nsc_diagapi_is(const char *name) { return endpoint_of(name) >= 0; }

/* The live state's status document. */
static int live_status(nsc_collector *c, nsc_diag_body_fn fn, void *arg, char *err, size_t errcap)
{
    size_t len;
    char *text = nsc_http_live_json(c, nsc_live_status_json, &len);
    if (!text) {
        snprintf(err, errcap, "out of memory");
        return -1;
    }
    int rc = fn(arg, text, len);
    free(text);
    return rc;
}

/* An analysis reads whole jobs (a root-cause pass, a diagnose) and a
 * stopping collector joins its thread: once it stops, the next query is
 * refused and a running one ends at its next block (nsc_query_set_stop). */
static int stopping(char *err, size_t errcap)
{
    snprintf(err, errcap, "the collector is stopping");
    return -1;
}

/* A query of the analysis, parsed once: its job names the store to read
 * (with ClickHouse, the job loaded into a store of its own). */
static int get(void *arg, const char *endpoint, const char *qs, nsc_diag_body_fn fn, void *fn_arg, char *err,
               size_t errcap)
{
    nsc_diagapi_src *s = arg;
    if (atomic_load(&s->c->stop))
        return stopping(err, errcap);
    if (strcmp(endpoint, "status") == 0)
        return live_status(s->c, fn, fn_arg, err, errcap);
    const nsc_cstore *cs = &s->c->store;
    nsc_query *q;
    nsc_store *st;
    nsc_store_reader *rd;
    int code, rc = nsc_diag_query_parse(endpoint, qs, &q, err, errcap, &code);
    if (rc) {
        s->code = code;
        return rc;
    }
    nsc_query_set_stop(q, &s->c->stop);
    rc = cs->ops->reads_store(cs->h, s->reads, q, &st, err, errcap);
    int src = rc ? 0 : nsc_store_read_begin(st, &rd);
    if (src) {
        snprintf(err, errcap, "%s", nsc_store_strerror(src));
        cs->ops->reads_done(cs->h, s->reads, st);
    }
    if (rc || src) {
        nsc_query_free(q);
        s->code = rc ? rc : NSC_QUERY_ESTORE;
        return -1;
    }
    rc = nsc_diag_query_run(rd, q, fn, fn_arg, err, errcap, &code);
    s->blocks += nsc_store_read_blocks_decoded(rd);
    nsc_store_read_end(rd);
    cs->ops->reads_done(cs->h, s->reads, st);
    nsc_query_free(q);
    if (rc < 0)
        s->code = code;
    return rc < 0 && atomic_load(&s->c->stop) ? stopping(err, errcap) : rc;
}

void nsc_diagapi_src_init(nsc_diagapi_src *s, nsc_collector *c)
{
    memset(s, 0, sizeof *s);
    s->src.get = get;
    s->src.arg = s;
    s->src.name = "the collector";
    s->c = c;
    s->reads = c->store.ops->reads_new(c->store.h);
}

void nsc_diagapi_src_release(nsc_diagapi_src *s)
{
    s->c->store.ops->reads_free(s->c->store.h, s->reads);
}

static int export_line(void *arg, const nsc_json *rec, const char *line, size_t len)
{
    (void)line, (void)len;
    return nsc_export_record(arg, rec) ? 1 : 0;
}

/* The window's timeline as `ncclscope export` writes it (common/export.h):
 * every page of it, through the same writer. */
static int export_trace(nsc_diagapi_req *j, nsc_diag_src *s, FILE *f)
{
    nsc_export_format fmt = NSC_EXPORT_PERFETTO;
    if (j->format && strcmp(j->format, "chrome") == 0)
        fmt = NSC_EXPORT_CHROME;
    else if (j->format && strcmp(j->format, "perfetto") != 0) {
        snprintf(s->err, sizeof s->err, "format: perfetto or chrome, not \"%.64s\"", j->format);
        return NSC_DIAG_USAGE;
    }
    const char *names[] = {"job", "comm", "t0_ns", "t1_ns", "rank", "type"};
    const char *values[] = {j->job, j->comm, j->t0, j->t1, j->rank, j->type};
    char qs[2048] = "";
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (values[i] && nsc_qs_add(qs, sizeof qs, names[i], values[i]) != 0) {
            snprintf(s->err, sizeof s->err, "%s: too long", names[i]);
            return NSC_DIAG_USAGE;
        }
    if (nsc_qs_add(qs, sizeof qs, "states", "0") != 0) {
        snprintf(s->err, sizeof s->err, "parameters too long");
        return NSC_DIAG_USAGE;
    }
    nsc_export *x = nsc_export_new(f, fmt);
    if (!x) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    int rc = nsc_diag_fetch_pages(s, "timeline", qs, NULL, export_line, x);
    nsc_export_totals t;
    if (nsc_export_finish(x, &t) != 0 && rc == NSC_DIAG_OK) {
        snprintf(s->err, sizeof s->err, "writing the trace: out of memory");
        rc = NSC_DIAG_FAIL;
    }
    return rc;
}

#define DIAGAPI_CARRIES 8

struct nsc_diagapi_carries {
    pthread_mutex_t mu;  /* held through a carried analysis: one at a time */
    struct {
        char job[128];
        uint64_t used;   /* tick of its last request, 0 an empty slot */
        nsc_rc_carry carry;
    } v[DIAGAPI_CARRIES];
    uint64_t tick;
    uint64_t carried;    /* requests that went on from a carry */
};

nsc_diagapi_carries *nsc_diagapi_carries_new(void)
{
    nsc_diagapi_carries *k = calloc(1, sizeof *k);
    if (k && pthread_mutex_init(&k->mu, NULL)) {
        free(k);
        return NULL;
    }
    return k;
}

void nsc_diagapi_carries_render(nsc_diagapi_carries *k, struct evbuffer *b)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    uint64_t n = k->carried;
    pthread_mutex_unlock(&k->mu);
    nsc_prom_u64(b, "ncclscope_collector_diagnose_carried_total", "counter",
                 "diagnose requests that read a job from the last one's settled point", n);
}

void nsc_diagapi_carries_free(nsc_diagapi_carries *k)
{
    if (!k)
        return;
    for (size_t i = 0; i < DIAGAPI_CARRIES; i++)
        nsc_rc_carry_free(&k->v[i].carry);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* job's slot (under mu): its own, else the least recently used, emptied. */
static size_t carry_slot(nsc_diagapi_carries *k, const char *job)
{
    size_t at = 0;
    for (size_t i = 0; i < DIAGAPI_CARRIES; i++) {
        if (k->v[i].used && strcmp(k->v[i].job, job) == 0)
            return i;
        if (k->v[i].used < k->v[at].used)
            at = i;
    }
    nsc_rc_carry_free(&k->v[at].carry);
    snprintf(k->v[at].job, sizeof k->v[at].job, "%s", job);
    return at;
}

/* diagnose: with a job named, from what the requests before carried of it;
 * a failed analysis forgets it (it may have carried a part). Send/Recv
 * pairs never settle (p2p_lag_ns): their figures count from the job's
 * start, as the whole job's. */
static int find(nsc_collector *c, const char *job, nsc_findings *fd)
{
    nsc_diagapi_carries *k = c->carries;
    if (!k || !job || strlen(job) >= sizeof k->v[0].job)
        return nsc_diag_find(job, NULL, fd);
    pthread_mutex_lock(&k->mu);
    size_t i = carry_slot(k, job);
    k->carried += k->v[i].carry.n > 0;
    k->v[i].used = ++k->tick;
    fd->carry = &k->v[i].carry;
    fd->p2p_lag_ns = UINT64_MAX;
    int rc = nsc_diag_find(job, NULL, fd);
    if (rc != NSC_DIAG_OK)
        nsc_rc_carry_free(&k->v[i].carry);
    pthread_mutex_unlock(&k->mu);
    return rc;
}

/* The analysis's document, written whole once it is done. */
static int write_doc(nsc_diagapi_req *j, nsc_diag_src *s, FILE *f)
{
    if (strcmp(j->endpoint, "export") == 0)
        return export_trace(j, s, f);
    if (strcmp(j->endpoint, "links") == 0) {
        nsc_diag_links l;
        int rc = nsc_diag_links_get(s, j->job, j->comm, &l);
        if (rc == NSC_DIAG_OK)
            nsc_diag_links_write_json(&l, f);
        nsc_diag_links_free(&l);
        return rc;
    }
    if (strcmp(j->endpoint, "topology") == 0) {
        char window[256] = "";
        if ((j->t0 && nsc_qs_add(window, sizeof window, "t0_ns", j->t0) != 0) ||
            (j->t1 && nsc_qs_add(window, sizeof window, "t1_ns", j->t1) != 0)) {
            snprintf(s->err, sizeof s->err, "t0_ns, t1_ns: too long");
            return NSC_DIAG_USAGE;
        }
        return nsc_diag_topology_write(s, j->job, j->comm, window, f);
    }
    if (strcmp(j->endpoint, "hosts") == 0) {
        nsc_diag_hosts t;
        int rc = nsc_diag_hosts_get(s, &t);
        if (rc == NSC_DIAG_OK)
            nsc_diag_hosts_write_json(&t, f);
        nsc_diag_hosts_free(&t);
        return rc;
    }
    nsc_findings *fd = calloc(1, sizeof *fd);
    if (!fd) {
        snprintf(s->err, sizeof s->err, "out of memory");
        return NSC_DIAG_FAIL;
    }
    fd->src = s;
    fd->only = j->comm;
    int rc = find(j->c, j->job, fd);
    if (rc == NSC_DIAG_OK)
        nsc_diag_write_json(fd, f);
    free(fd);
    return rc;
}

/* An analysis's error as a query's: its query's, else by its kind. */
static int query_err(const nsc_diagapi_src *s, int rc)
{
    if (s->code)
        return s->code;
    return rc == NSC_DIAG_USAGE ? NSC_QUERY_EPARAM : rc == NSC_DIAG_NOTFOUND ? NSC_QUERY_ENOTFOUND : NSC_QUERY_ESTORE;
}

static int run(void *arg, nsc_store_reader *rd, nsc_query_write_fn fn, void *fn_arg, char *err, size_t errcap)
{
    (void)rd;  /* NULL: each query reads in a transaction of its own */
    nsc_diagapi_req *j = arg;
    nsc_diagapi_src ds;
    nsc_diagapi_src_init(&ds, j->c);
    nsc_diag_src *s = &ds.src;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        snprintf(err, errcap, "out of memory");
        nsc_diagapi_src_release(&ds);
        return NSC_QUERY_ESTORE;
    }
    int rc = write_doc(j, s, f);
    nsc_diagapi_src_release(&ds);
    if (fclose(f) && rc == NSC_DIAG_OK) {
        snprintf(s->err, sizeof s->err, "out of memory");
        rc = NSC_DIAG_FAIL;
    }
    if (rc == NSC_DIAG_OK)
        rc = fn(fn_arg, text, len) ? NSC_QUERY_EWRITE : NSC_QUERY_OK;
    else {
        snprintf(err, errcap, "%s", s->err);
        rc = query_err(&ds, rc);
    }
    free(text);
    return rc;
}

static void job_free(void *arg)
{
    nsc_diagapi_req *j = arg;
    free(j->job);
    free(j->comm);
    free(j->t0);
    free(j->t1);
    free(j->rank);
    free(j->type);
    free(j->format);
    free(j);
}

/* The parameters, strictly: each known one at most once. */
static int parse(nsc_diagapi_req *j, int e, const char *qstr, char *err, size_t errcap)
{
    struct evkeyvalq kv;
    TAILQ_INIT(&kv);
    if (qstr && evhttp_parse_query_str(qstr, &kv) != 0) {
        snprintf(err, errcap, "malformed query string");
        return -1;
    }
    int rc = 0;
    for (struct evkeyval *p = kv.tqh_first; p && !rc; p = p->next.tqe_next) {
        char **slot = strcmp(p->key, "job") == 0 && endpoints[e].job         ? &j->job
                      : strcmp(p->key, "comm") == 0 && endpoints[e].comm      ? &j->comm
                      : strcmp(p->key, "t0_ns") == 0 && endpoints[e].window ? &j->t0
                      : strcmp(p->key, "t1_ns") == 0 && endpoints[e].window ? &j->t1
                      : strcmp(p->key, "rank") == 0 && endpoints[e].trace   ? &j->rank
                      : strcmp(p->key, "type") == 0 && endpoints[e].trace   ? &j->type
                      : strcmp(p->key, "format") == 0 && endpoints[e].trace ? &j->format
                                                                            : NULL;
        if (!slot || *slot) {
            snprintf(err, errcap, "%s parameter %.64s for %s", slot ? "repeated" : "unknown", p->key,
                     endpoints[e].name);
            rc = -1;
        } else if (!(*slot = strdup(p->value))) {
            snprintf(err, errcap, "out of memory");
            rc = -1;
        }
    }
    evhttp_clear_headers(&kv);
    return rc;
}

nsc_diagapi_req *nsc_diagapi_parse(nsc_collector *c, struct evhttp_request *req, const char *name, const char *qstr)
{
    int e = endpoint_of(name);
    nsc_diagapi_req *j = calloc(1, sizeof *j);
    char err[256];
    if (!j) {
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        return NULL;
    }
    j->c = c;
    snprintf(j->endpoint, sizeof j->endpoint, "%s", name);
    if (e < 0 || parse(j, e, qstr, err, sizeof err) != 0) {
        job_free(j);
        nsc_http_json_error(req, HTTP_BADREQUEST, "Bad Request", e < 0 ? "no such endpoint" : err);
        return NULL;
    }
    return j;
}

int nsc_diagapi_window(const nsc_diagapi_req *j, const char **job, uint64_t *t0, uint64_t *t1)
{
    if (strcmp(j->endpoint, "export") || !j->job || !j->job[0] || nsc_qs_u64(j->t0, 0, t0) ||
        nsc_qs_u64(j->t1, UINT64_MAX, t1))
        return -1;
    *job = j->job;
    return 0;
}

void nsc_diagapi_run(nsc_qstreams *qs, struct evhttp_request *req, nsc_diagapi_req *j)
{
    /* a Perfetto trace is protobuf bytes; everything else JSON */
    int binary = strcmp(j->endpoint, "export") == 0 && !(j->format && strcmp(j->format, "chrome") == 0);
    nsc_qjob job = {endpoints[endpoint_of(j->endpoint)].name, binary ? "application/octet-stream" : "application/json",
                    1, run, job_free, j};
    nsc_qstream_start_job(qs, req, &job);
}

void nsc_diagapi_free(nsc_diagapi_req *j)
{
    if (j)
        job_free(j);
}
