/* chcache.c: jobs read back from ClickHouse, kept between queries (see chcache.h). */
#include "chcache.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chanswer.h"
#include "chread.h"
#include "cstate.h"
#include "fnv.h"
#include "grow.h"
#include "query.h"

#define PREFIX "query-"
#define PRINT_MAX 1024

struct nsc_chcache_job {
    char name[64];
    char print[PRINT_MAX];  /* the job's fingerprint when it was loaded */
    char dir[PATH_MAX];
    nsc_store *st;
    unsigned holders;
    int kept;               /* in the table; else it goes with its last holder */
    int ledger;             /* its store holds the job's ledger */
    int scoped;             /* its store holds what one query reads, not the whole job */
    uint64_t used;          /* the cache's tick of its last hold */
};

struct nsc_chcache {
    nsc_collector *c;
    const nsc_chstore *ch;
    pthread_mutex_t mu;
    nsc_chcache_job **kept;
    size_t n, cap, max_jobs;
    uint64_t tick, loads, hits, scoped;
    uint64_t read;  /* bytes of ClickHouse's answers the loads read */
};

/* <db>/tmp, and <db> itself when missing: on ClickHouse no LMDB store
 * makes it (the same mode as the store's). */
static int tmp_root(const nsc_collector *c, char *out, size_t cap)
{
    if ((mkdir(c->cfg.db, 0750) && errno != EEXIST) || (size_t)snprintf(out, cap, "%s/tmp", c->cfg.db) >= cap)
        return -1;
    return mkdir(out, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

int nsc_chcache_tmpdir(const nsc_chcache *cc, char *out, size_t cap)
{
    return tmp_root(cc->c, out, cap);
}

int nsc_chcache_version(const nsc_chcache *cc, const char *job, uint64_t *out)
{
    char root[PATH_MAX], print[PRINT_MAX], err[256];
    if (tmp_root(cc->c, root, sizeof root) ||
        nsc_chread_print(cc->ch, job, root, print, sizeof print, err, sizeof err))
        return -1;
    *out = nsc_fnv1a(NSC_FNV1A_BASIS, print, strlen(print));
    return 0;
}

/* Remove a folder of plain files (a job's store). */
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

static int starts(const char *name, const char *prefix)
{
    return strncmp(name, prefix, strlen(prefix)) == 0;
}

/* What a collector killed while queries ran left in <db>/tmp: its stores,
 * and an answer's file when the kill came before it was unlinked. */
static void sweep(const nsc_collector *c)
{
    char root[PATH_MAX], path[PATH_MAX + 256];
    DIR *d = tmp_root(c, root, sizeof root) ? NULL : opendir(root);
    for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
        int store = starts(e->d_name, PREFIX), answer = starts(e->d_name, NSC_CHANSWER_PREFIX);
        if ((store || answer) && (size_t)snprintf(path, sizeof path, "%s/%s", root, e->d_name) < sizeof path) {
            if (store)
                remove_dir(path);
            else
                unlink(path);
        }
    }
    if (d)
        closedir(d);
}

nsc_chcache *nsc_chcache_new(nsc_collector *c, const nsc_chstore *ch, size_t max_jobs)
{
    nsc_chcache *cc = calloc(1, sizeof *cc);
    if (!cc)
        return NULL;
    cc->c = c;
    cc->ch = ch;
    cc->max_jobs = max_jobs;
    pthread_mutex_init(&cc->mu, NULL);
    sweep(c);
    return cc;
}

static void destroy(nsc_chcache_job *j)
{
    if (j->st)
        nsc_store_close(j->st);
    if (j->dir[0])
        remove_dir(j->dir);
    free(j);
}

void nsc_chcache_free(nsc_chcache *cc)
{
    if (!cc)
        return;
    for (size_t i = 0; i < cc->n; i++)
        destroy(cc->kept[i]);
    free(cc->kept);
    pthread_mutex_destroy(&cc->mu);
    free(cc);
}

/* A new store in its own folder, job (what scope asks of it, when given,
 * read as how says) loaded into it from ClickHouse. */
static int load(nsc_chcache *cc, const char *root, nsc_chcache_job *j, const nsc_query_scope *scope,
                nsc_chread_holds how, char *err, size_t errcap)
{
    /* Read soon, by this collector only: not worth compressing. Swept and
     * reloaded from ClickHouse after a crash: not worth an fsync per commit. */
    nsc_store_opts o = {.zstd_level = -1, .no_sync = 1};
    if ((size_t)snprintf(j->dir, sizeof j->dir, "%s/" PREFIX "XXXXXX", root) >= sizeof j->dir || !mkdtemp(j->dir)) {
        snprintf(err, errcap, "cannot make a folder for the query under %s", root);
        j->dir[0] = 0;
        return NSC_QUERY_ESTORE;
    }
    int rc = nsc_store_open(j->dir, &o, &j->st);
    if (rc) {
        snprintf(err, errcap, "the query's store: %s", nsc_store_strerror(rc));
        return NSC_QUERY_ESTORE;
    }
    uint64_t read = 0;
    rc = j->name[0] ? nsc_chread_job(cc->ch, j->name, scope, how, j->ledger, j->dir, j->st, &read, err, errcap) : 0;
    pthread_mutex_lock(&cc->mu);
    cc->read += read;
    pthread_mutex_unlock(&cc->mu);
    return rc;
}

/* The kept, unchanged store of j's job holding what j asks for (the
 * ledger, or not), held; NULL when there is none. */
static nsc_chcache_job *hold_kept(nsc_chcache *cc, const nsc_chcache_job *j)
{
    nsc_chcache_job *found = NULL;
    pthread_mutex_lock(&cc->mu);
    for (size_t i = 0; i < cc->n && !found; i++)
        if (strcmp(cc->kept[i]->name, j->name) == 0 && strcmp(cc->kept[i]->print, j->print) == 0 &&
            cc->kept[i]->ledger >= j->ledger)
            found = cc->kept[i];
    if (found) {
        found->holders++;
        found->used = ++cc->tick;
        cc->hits++;
    }
    pthread_mutex_unlock(&cc->mu);
    return found;
}

/* Take kept[i] out of the table; it goes to victims unless held. */
static void unkeep(nsc_chcache *cc, size_t i, nsc_chcache_job **victims, size_t *nv)
{
    nsc_chcache_job *j = cc->kept[i];
    j->kept = 0;
    cc->kept[i] = cc->kept[--cc->n];
    if (j->holders == 0)
        victims[(*nv)++] = j;
}

/* The least recently used store no query holds, or cc->n. */
static size_t idle_lru(const nsc_chcache *cc)
{
    size_t best = cc->n;
    for (size_t i = 0; i < cc->n; i++)
        if (cc->kept[i]->holders == 0 && (best == cc->n || cc->kept[i]->used < cc->kept[best]->used))
            best = i;
    return best;
}

/* j, just loaded and held, replaces the stores of its job and is kept if
 * there is room; the stores it pushes out are destroyed. A kept store of
 * the job could not serve j (hold_kept): older, or without the ledger j
 * holds. */
static void keep(nsc_chcache *cc, nsc_chcache_job *j)
{
    pthread_mutex_lock(&cc->mu);
    nsc_chcache_job **victims = malloc((cc->n + 1) * sizeof *victims);
    size_t nv = 0;
    cc->loads++;
    for (size_t i = cc->n; victims && i-- > 0;)
        if (strcmp(cc->kept[i]->name, j->name) == 0)
            unkeep(cc, i, victims, &nv);
    j->used = ++cc->tick;
    if (victims && cc->max_jobs && !nsc_grow(&cc->kept, cc->n, &cc->cap, sizeof *cc->kept, 4)) {
        cc->kept[cc->n++] = j;
        j->kept = 1;
        for (size_t i; cc->n > cc->max_jobs && (i = idle_lru(cc)) < cc->n;)
            unkeep(cc, i, victims, &nv);
    }
    pthread_mutex_unlock(&cc->mu);
    for (size_t i = 0; i < nv; i++)
        destroy(victims[i]);
    free(victims);
}

/* j loaded with what scope asks of its job alone: never kept (another
 * query asks for other rows), gone with its holder. */
static int hold_scoped(nsc_chcache *cc, const char *root, nsc_chcache_job *j, const nsc_query_scope *scope,
                       nsc_chread_holds how, nsc_chcache_job **out, char *err, size_t errcap)
{
    int rc = load(cc, root, j, scope, how, err, errcap);
    if (rc) {
        destroy(j);
        return rc;
    }
    pthread_mutex_lock(&cc->mu);
    cc->scoped++;
    pthread_mutex_unlock(&cc->mu);
    j->scoped = 1;
    j->holders = 1;
    *out = j;
    return 0;
}

int nsc_chcache_hold(nsc_chcache *cc, const char *job, const nsc_query_scope *scope, int ledger,
                     nsc_chcache_job **out, char *err, size_t errcap)
{
    char root[PATH_MAX];
    nsc_chcache_job *j = calloc(1, sizeof *j);
    if (!j) {
        snprintf(err, errcap, "out of memory");
        return NSC_QUERY_ESTORE;
    }
    if (strlen(job) >= sizeof j->name) {
        snprintf(err, errcap, "job: too long");
        free(j);
        return NSC_QUERY_EPARAM;
    }
    if (tmp_root(cc->c, root, sizeof root)) {
        snprintf(err, errcap, "cannot make %s/tmp", cc->c->cfg.db);
        free(j);
        return NSC_QUERY_ESTORE;
    }
    strcpy(j->name, job);
    j->ledger = ledger || (scope && !scope->events);
    if (scope && scope->events)
        return hold_scoped(cc, root, j, scope, NSC_CHREAD_NONE, out, err, errcap);
    nsc_chread_holds holds = NSC_CHREAD_NONE;
    int rc = scope ? nsc_chread_scope_holds(cc->ch, scope, cc->c->cfg.ch_scope_records, root, &holds, err, errcap) : 0;
    if (!rc && holds != NSC_CHREAD_NONE)
        return hold_scoped(cc, root, j, scope, holds, out, err, errcap);
    if (!rc && job[0])
        rc = nsc_chread_print(cc->ch, job, root, j->print, sizeof j->print, err, errcap);
    if (!rc && (*out = hold_kept(cc, j)) != NULL) {
        free(j);
        return 0;
    }
    if (!rc)
        rc = load(cc, root, j, NULL, NSC_CHREAD_NONE, err, errcap);
    if (rc) {
        destroy(j);
        return rc;
    }
    j->holders = 1;
    keep(cc, j);
    *out = j;
    return 0;
}

nsc_store *nsc_chcache_store(const nsc_chcache_job *j)
{
    return j->st;
}

int nsc_chcache_has_ledger(const nsc_chcache_job *j)
{
    return j->ledger;
}

int nsc_chcache_scoped(const nsc_chcache_job *j)
{
    return j->scoped;
}

const char *nsc_chcache_name(const nsc_chcache_job *j)
{
    return j->name;
}

void nsc_chcache_let_go(nsc_chcache *cc, nsc_chcache_job *j)
{
    pthread_mutex_lock(&cc->mu);
    int gone = --j->holders == 0 && !j->kept;
    pthread_mutex_unlock(&cc->mu);
    if (gone)
        destroy(j);
}

void nsc_chcache_render(nsc_chcache *cc, struct evbuffer *out)
{
    pthread_mutex_lock(&cc->mu);
    uint64_t loads = cc->loads, hits = cc->hits, n = cc->n, scoped = cc->scoped, read = cc->read;
    pthread_mutex_unlock(&cc->mu);
    evbuffer_add_printf(out,
                        "# HELP ncclscope_collector_query_loads_total Jobs read from ClickHouse into a query store\n"
                        "# TYPE ncclscope_collector_query_loads_total counter\n"
                        "ncclscope_collector_query_loads_total %" PRIu64 "\n"
                        "# HELP ncclscope_collector_query_cache_hits_total Queries that read a kept, unchanged job\n"
                        "# TYPE ncclscope_collector_query_cache_hits_total counter\n"
                        "ncclscope_collector_query_cache_hits_total %" PRIu64 "\n"
                        "# HELP ncclscope_collector_query_cache_jobs Jobs kept for the next queries\n"
                        "# TYPE ncclscope_collector_query_cache_jobs gauge\n"
                        "ncclscope_collector_query_cache_jobs %" PRIu64 "\n"
                        "# HELP ncclscope_collector_query_scoped_loads_total Ledger, collectives and stats queries and "
                        "timeline windows answered from the rows they ask for alone (ledger_recs, event_marks), "
                        "not the whole job\n"
                        "# TYPE ncclscope_collector_query_scoped_loads_total counter\n"
                        "ncclscope_collector_query_scoped_loads_total %" PRIu64 "\n"
                        "# HELP ncclscope_collector_query_read_bytes_total Bytes of ClickHouse's answers that the "
                        "query stores' loads read (RowBinary)\n"
                        "# TYPE ncclscope_collector_query_read_bytes_total counter\n"
                        "ncclscope_collector_query_read_bytes_total %" PRIu64 "\n",
                        loads, hits, n, scoped, read);
}
