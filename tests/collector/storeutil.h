/* storeutil.h: temporary store directories and batch builders for store tests
 * and the store benchmark. */
#ifndef NCCLSCOPE_TEST_STOREUTIL_H
#define NCCLSCOPE_TEST_STOREUTIL_H

#include <lmdb.h>

#include "mix.h"
#include "store.h"

/* A fresh empty directory under /tmp (malloc'd path), and its removal. */
char *nsc_tmp_store_dir(void);
void nsc_tmp_store_remove(char *dir);
/* A store with default options in a fresh directory (*dir): the store, or NULL
 * with nothing left behind. */
nsc_store *nsc_tmp_store_open(char **dir);

/* Database db of the closed store at dir, opened directly in a write
 * transaction, to put what the store's own code never would. Each returns 0
 * or an LMDB error; close commits. */
typedef struct nsc_raw_db {
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
} nsc_raw_db;
int nsc_raw_open(const char *dir, const char *db, nsc_raw_db *r);
int nsc_raw_close(nsc_raw_db *r);
/* Put a record (del: delete it) straight into db of the closed store at dir. */
int nsc_raw_put(const char *dir, const char *db, const void *k, size_t kl, const void *v, size_t vl, int del);

/* The store's totals (a reader of their own); aborts when they cannot be read. */
nsc_store_stats nsc_test_stats(nsc_store *st);

nsc_proc nsc_test_proc(const char *job, const char *host, uint32_t pid, int gpu);
nsc_ctx_def nsc_test_ctx(uint16_t index, uint64_t comm, int rank, int nranks);

/* A batch over the mix's current records, with the given identity. */
nsc_store_batch nsc_mix_batch(const nsc_mix *m, const nsc_proc *proc, const nsc_ctx_def *ctxs,
                              size_t nctxs, const nsc_str_def *strs, size_t nstrs);

#endif
