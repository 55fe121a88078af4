/* storeutil.c: see storeutil.h. */
#include "storeutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *nsc_tmp_store_dir(void)
{
    char *dir = strdup("/tmp/nsc_store_XXXXXX");
    if (dir && !mkdtemp(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

nsc_store *nsc_tmp_store_open(char **dir)
{
    nsc_store *st;
    *dir = nsc_tmp_store_dir();
    if (!*dir)
        return NULL;
    if (nsc_store_open(*dir, NULL, &st) != 0) {
        nsc_tmp_store_remove(*dir);
        *dir = NULL;
        return NULL;
    }
    return st;
}

void nsc_tmp_store_remove(char *dir)
{
    static const char *const files[] = {"data.mdb", "lock.mdb"};
    char path[256];
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
    free(dir);
}

int nsc_raw_open(const char *dir, const char *db, nsc_raw_db *r)
{
    int rc = mdb_env_create(&r->env);
    if (rc)
        return rc;
    if ((rc = mdb_env_set_maxdbs(r->env, 16)) || (rc = mdb_env_open(r->env, dir, 0, 0640)) ||
        (rc = mdb_txn_begin(r->env, NULL, 0, &r->txn))) {
        mdb_env_close(r->env);
        return rc;
    }
    if ((rc = mdb_dbi_open(r->txn, db, 0, &r->dbi))) {
        mdb_txn_abort(r->txn);
        mdb_env_close(r->env);
    }
    return rc;
}

int nsc_raw_close(nsc_raw_db *r)
{
    int rc = mdb_txn_commit(r->txn);
    mdb_env_close(r->env);
    return rc;
}

int nsc_raw_put(const char *dir, const char *db, const void *k, size_t kl, const void *v, size_t vl, int del)
{
    nsc_raw_db r;
    int rc = nsc_raw_open(dir, db, &r);
    if (rc)
        return rc;
    MDB_val key = {kl, (void *)k}, val = {vl, (void *)v};
    rc = del ? mdb_del(r.txn, r.dbi, &key, NULL) : mdb_put(r.txn, r.dbi, &key, &val, 0);
    if (rc) {
        mdb_txn_abort(r.txn);
        mdb_env_close(r.env);
        return rc;
    }
    return nsc_raw_close(&r);
}

nsc_proc nsc_test_proc(const char *job, const char *host, uint32_t pid, int gpu)
{
    nsc_proc p;
    memset(&p, 0, sizeof p);
    p.pid = pid;
    p.gpu = gpu;
    p.local_rank = gpu;
    snprintf(p.job, sizeof p.job, "%s", job);
    snprintf(p.host, sizeof p.host, "%s", host);
    return p;
}

nsc_ctx_def nsc_test_ctx(uint16_t index, uint64_t comm, int rank, int nranks)
{
    nsc_ctx_def c;
    memset(&c, 0, sizeof c);
    c.index = index;
    c.comm_id = comm;
    c.rank = rank;
    c.nranks = nranks;
    c.api_version = 7;
    snprintf(c.name, sizeof c.name, "comm-%llx", (unsigned long long)comm);
    return c;
}

nsc_store_batch nsc_mix_batch(const nsc_mix *m, const nsc_proc *proc, const nsc_ctx_def *ctxs,
                              size_t nctxs, const nsc_str_def *strs, size_t nstrs)
{
    nsc_store_batch b = {proc, ctxs, nctxs, strs, nstrs, m->events, m->nevents,
                         m->states, m->nstates, m->completions, m->ncompletions};
    return b;
}

nsc_store_stats nsc_test_stats(nsc_store *st)
{
    nsc_store_reader *rd;
    nsc_store_stats s;
    if (nsc_store_read_begin(st, &rd))
        abort();
    int rc = nsc_store_stats_get(rd, &s);
    nsc_store_read_end(rd);
    if (rc)
        abort();
    return s;
}
