/* chquery.c: queries answered from ClickHouse (see chquery.h). */
#include "chquery.h"

#include <dirent.h>
#include <errno.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chread.h"
#include "grow.h"
#include "http.h"

#define PREFIX "query-"

/* <db>/tmp, made if missing. */
static int tmp_root(const nsc_collector *c, char *out, size_t cap)
{
    if ((size_t)snprintf(out, cap, "%s/tmp", c->cfg.db) >= cap)
        return -1;
    return mkdir(out, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Remove a folder of plain files (a query's store). */
static void remove_dir(const char *path)
{
    DIR *d = opendir(path);
    char file[PATH_MAX + 256];
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
            (size_t)snprintf(file, sizeof file, "%s/%s", path, e->d_name) < sizeof file)
            unlink(file);
    if (d)
        closedir(d);
    rmdir(path);
}

void nsc_chquery_sweep(nsc_collector *c)
{
    char root[PATH_MAX], path[PATH_MAX + 256];
    DIR *d = tmp_root(c, root, sizeof root) ? NULL : opendir(root);
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) == 0 &&
            (size_t)snprintf(path, sizeof path, "%s/%s", root, e->d_name) < sizeof path)
            remove_dir(path);
    if (d)
        closedir(d);
}

int nsc_chscratch_open(nsc_chscratch *s, nsc_collector *c, char *err, size_t errcap)
{
    memset(s, 0, sizeof *s);
    s->c = c;
    char root[PATH_MAX];
    nsc_store_opts o = {.zstd_level = -1};  /* read once, soon removed: not worth compressing */
    if (tmp_root(c, root, sizeof root) ||
        (size_t)snprintf(s->dir, sizeof s->dir, "%s/" PREFIX "XXXXXX", root) >= sizeof s->dir || !mkdtemp(s->dir)) {
        snprintf(err, errcap, "cannot make a folder for the query under %s/tmp", c->cfg.db);
        s->dir[0] = 0;
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_store_open(s->dir, &o, &s->st);
    if (rc) {
        snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(rc));
        nsc_chscratch_close(s);
        return NSC_QUERY_ESTORE;
    }
    return 0;
}

void nsc_chscratch_close(nsc_chscratch *s)
{
    if (s->st)
        nsc_store_close(s->st);
    if (s->dir[0])
        remove_dir(s->dir);
    free(s->jobs);
    memset(s, 0, sizeof *s);
}

static int loaded(const nsc_chscratch *s, const char *job)
{
    for (size_t i = 0; i < s->njobs; i++)
        if (strcmp(s->jobs[i], job) == 0)
            return 1;
    return 0;
}

static int load(nsc_chscratch *s, const char *job, char *err, size_t errcap)
{
    if (!job[0] || loaded(s, job))
        return 0;
    if (s->njobs == NSC_CHQUERY_JOBS_MAX || nsc_grow(&s->jobs, s->njobs, &s->jobs_cap, sizeof *s->jobs, 4)) {
        snprintf(err, errcap, "too many jobs in one query");
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_chread_job(s->c->ch, job, s->dir, s->st, err, errcap);
    if (!rc)
        snprintf(s->jobs[s->njobs++], sizeof *s->jobs, "%s", job);
    return rc;
}

int nsc_chscratch_load_qs(nsc_chscratch *s, const char *qs, char *err, size_t errcap)
{
    struct evkeyvalq kv;
    TAILQ_INIT(&kv);
    if (qs && qs[0] == '&')
        qs++;
    if (qs && evhttp_parse_query_str(qs, &kv) != 0) {
        snprintf(err, errcap, "malformed query string");
        return NSC_QUERY_EPARAM;
    }
    const char *named = evhttp_find_header(&kv, "job");
    char job[64];
    int rc = 0;
    if (named) {
        rc = load(s, named, err, errcap);
    } else if (!s->default_loaded) {
        rc = nsc_chread_only_job(s->c->ch, s->dir, job, sizeof job, err, errcap);
        if (!rc && !(rc = load(s, job, err, errcap)))
            s->default_loaded = 1;
    }
    evhttp_clear_headers(&kv);
    return rc;
}

/* ---- the query endpoints ---- */

typedef struct chquery_job {
    nsc_collector *c;
    nsc_query *q;
    char *qs;
} chquery_job;

static int run(void *arg, nsc_store_reader *unused, nsc_query_write_fn fn, void *fn_arg, char *err, size_t errcap)
{
    (void)unused;  /* NULL: the query reads its own store */
    chquery_job *j = arg;
    nsc_chscratch s;
    nsc_store_reader *rd;
    int rc = nsc_chscratch_open(&s, j->c, err, errcap);
    if (rc)
        return rc;
    if (!(rc = nsc_chscratch_load_qs(&s, j->qs, err, errcap))) {
        int src = nsc_store_read_begin(s.st, &rd);
        if (src) {
            snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(src));
            rc = NSC_QUERY_ESTORE;
        } else {
            rc = nsc_query_run(j->q, rd, fn, fn_arg, err, errcap);
            nsc_store_read_end(rd);
        }
    }
    nsc_chscratch_close(&s);
    return rc;
}

static void job_free(void *arg)
{
    chquery_job *j = arg;
    nsc_query_free(j->q);
    free(j->qs);
    free(j);
}

void nsc_chquery_start(nsc_collector *c, nsc_qstreams *set, struct evhttp_request *req, nsc_query *q,
                       const char *qs)
{
    chquery_job *j = calloc(1, sizeof *j);
    if (!j || !(j->qs = strdup(qs ? qs : ""))) {
        free(j);
        nsc_query_free(q);
        nsc_http_json_error(req, HTTP_INTERNAL, "Internal Server Error", "out of memory");
        return;
    }
    j->c = c;
    j->q = q;
    nsc_qjob job = {nsc_query_name(q), nsc_query_content_type(q), 1, run, job_free, j};
    nsc_qstream_start_job(set, req, &job);
}
